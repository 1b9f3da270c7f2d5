#!/usr/bin/env bash
# Lint, then every test tier: unit, integration, lab and browser. Under CI=true nothing may be skipped.
# With arguments, one pytest run with them (e.g. scripts/test.sh -m lab -k mtu); without, three runs: the unit and
# integration tiers and the browser tests that need no guest while the lab guest's image and saved state are made
# in the background (cold: ~12 min), then the lab tier (browser tests on the guest included) on that guest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The OS packages first (the lab's among them), so the guest's build starts before the Python and npm packages
# install (~40 s on a fresh clone).
scripts/setup.sh test --os
mkdir -p test-artifacts
prepare=""
if [ $# -eq 0 ] && [ "$(id -u)" = 0 ] && command -v qemu-system-x86_64 >/dev/null; then
  lab/lab.sh prepare >test-artifacts/lab-prepare.log 2>&1 &
  prepare=$!
fi
scripts/setup.sh test
# A throw-away data dir so tests never touch the appliance's own database or keys.
export REDIS_URL=${TARN_TEST_REDIS_URL:-redis://127.0.0.1:6379/15}  # its own Redis db: never the running appliance queues
export TARN_DATA_DIR=${TARN_TEST_DATA_DIR:-$(mktemp -d /tmp/tarn-test.XXXXXX)}

echo "==> ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check . >/dev/null || { .venv/bin/ruff format --diff . | head -40; exit 1; }
echo "==> import contract"
.venv/bin/lint-imports --no-cache

if [ $# -gt 0 ]; then
  echo "==> pytest $*"
  exec .venv/bin/pytest "$@"
fi
started=$SECONDS
echo "==> pytest: unit and integration tiers"
status=0
.venv/bin/pytest -m "not lab and not browser" --durations=10 || status=$?
echo "==> unit and integration tiers: $((SECONDS - started)) s"
echo "==> pytest: the browser tests that need no lab guest (while it is made)"
.venv/bin/pytest -m "browser and not lab" --durations=5 || status=$?
echo "==> (the tiers so far: $((SECONDS - started)) s)"
if [ -n "$prepare" ]; then
  waited=$SECONDS
  wait "$prepare" || { echo "lab prepare failed (the lab tier will say why):"; tail -20 test-artifacts/lab-prepare.log; }
  echo "==> waited $((SECONDS - waited)) s for the lab guest's image and saved state"
fi
echo "==> pytest: the lab tier, and the browser tests on the lab guest"
echo "==> (the tiers so far: $((SECONDS - started)) s)"
.venv/bin/pytest -m lab --durations=50 || status=$?
exit "$status"  # pytest's summary stays the last line
