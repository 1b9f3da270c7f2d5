"""What the replication operations are called on their pages, and the task or pair page each came from."""

from appliance.titles import Title, operation_titles
from replication.models import Pair, Task

TASK = {"back": "replication-task", "back_arg": "task", "back_label": "Back to the task", "rows": {"task": Task}}
PAIRS = {"back": "replication-list", "back_label": "Back to Replication", "rows": {"pair": Pair}}

operation_titles(
    {
        "replication.run": Title("Replicate {task_name}", **TASK),
        "replication.failover": Title("Fail over {task_name}", **TASK),
        "replication.task_delete": Title("Delete the task {task_name}", **{**TASK, "back": "replication-list"}),
        "replication.pair": Title("Pair {pair_name}", **PAIRS),
        "replication.unpair": Title("Unpair {pair_name}", **PAIRS),
        "replication.pair_quota": Title("Set the quota of {pair_name}", **PAIRS),
    }
)
