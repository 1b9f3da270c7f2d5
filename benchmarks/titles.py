"""What the benchmark operations are called on their pages, and the run or suite page each came from."""

from appliance.titles import Title, operation_titles
from benchmarks.models import Run, Suite

RUN = {"back": "benchmark-run", "back_arg": "run", "back_label": "Back to the run", "rows": {"run": Run}}

operation_titles(
    {
        "benchmarks.run": Title("Benchmark: {run_name}", **RUN),
        "benchmarks.network": Title("Network benchmark: {run_name}", **RUN),
        "benchmarks.cleanup": Title("Clean up after {run_name}", **RUN),
        "benchmarks.suite": Title(
            "Benchmark suite: {suite_name}",
            "benchmark-suite",
            back_arg="suite",
            back_label="Back to the suite",
            rows={"suite": Suite},
        ),
    }
)
