"""Performance checks run by `make perf` (never inside `make test`): one line per figure."""
