"""Issue 46's fourth item (`make perf pages`): every page of the top bar, p95 at 50 clients each reloading about once
a second through the HTTPS front (as `make run` serves Tarn), with 1,000,000 audit entries and 100,000 operations in
the database, printed beside the last recorded figure. The pages are the navigation's own
(appliance.context_processors.NAV): a page added there is measured here.

The last figures are tests/perf/pages_last.json; `TARN_PERF_RECORD=1 make perf pages` writes this run's there (commit
it with the README's figures)."""

import json
import os
from pathlib import Path

from tests.perf.audit import fill_history
from tests.perf.foundation import SERVED, admin_session_cookie, tarn_fronted, tree_cpu_seconds, warm, wrk

LAST = Path(__file__).with_name("pages_last.json")
SECONDS = 30  # of load a page, after 20 requests that warm it


def nav_pages() -> list[tuple[str, str]]:
    """(url name, path) of every link of the top bar, in its order."""
    from django.urls import reverse

    from appliance.context_processors import NAV

    return [(name, reverse(name)) for _, links in NAV for _, name in links]


def list_pages():
    cookie = admin_session_cookie()
    seconds, _ = fill_history()
    yield "pages_fill", seconds, "s", "1,000,000 audit entries and 100,000 operations (set-up)"
    last = json.loads(LAST.read_text()) if LAST.exists() else {}
    now, worst = {}, 0.0
    with tarn_fronted() as front:  # as a user gets a page: through the HTTPS front, to the web's shared queue
        base = front["base"]
        for name, path in nav_pages():
            warm(base + path, cookie)
            cpu = tree_cpu_seconds(SERVED[-1])
            p95, rate, errors = wrk(base + path, cookie, clients=50, pause_ms=1000, seconds=SECONDS, together=False)
            cpu_ms = (tree_cpu_seconds(SERVED[-1]) - cpu) * 1000 / max(rate * SECONDS, 1)
            now[name], now[f"{name}:cpu"], worst = round(p95, 1), round(cpu_ms, 1), max(worst, p95)
            before = f"last {last[name]:.0f} ms" if name in last else "no last figure"
            yield f"page_{name}_p95", p95, "ms", f"goal <= 100 ms; {before}; {rate:.0f} req/s, {int(errors)} failed"
            before = f"last {last[name + ':cpu']:.1f} ms" if name + ":cpu" in last else "no last figure"
            yield f"page_{name}_cpu", cpu_ms, "ms", f"the web's CPU a request (gunicorn, its workers); {before}"
    yield "pages_worst_p95", worst, "ms", f"goal <= 100 ms over {len(now) // 2} pages"
    if os.environ.get("TARN_PERF_RECORD") == "1":
        LAST.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")


CHECKS = [list_pages]
