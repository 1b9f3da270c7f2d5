#!/usr/bin/env bash
# Lint, then every test tier: unit, integration, lab and browser. Under CI=true nothing may be skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
echo "==> ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check . >/dev/null || { .venv/bin/ruff format --diff . | head -40; exit 1; }
echo "==> import contract"
.venv/bin/lint-imports --no-cache
echo "==> pytest"
mkdir -p test-artifacts
# A throw-away data dir so tests never touch the appliance's own database or keys.
export REDIS_URL=${TARN_TEST_REDIS_URL:-redis://127.0.0.1:6379/15}  # its own Redis db: never the running appliance queues
export TARN_DATA_DIR=${TARN_TEST_DATA_DIR:-$(mktemp -d /tmp/tarn-test.XXXXXX)}
exec .venv/bin/pytest "$@"
