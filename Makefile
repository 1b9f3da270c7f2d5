# Tarn: `make run` sets up and starts the appliance; `make test` sets up and runs every test tier.
.PHONY: run test perf lint setup clean

run:
	scripts/run.sh

test:
	scripts/test.sh

perf:
	scripts/setup.sh test
	TARN_DATA_DIR=$$(mktemp -d /tmp/tarn-perf.XXXXXX) .venv/bin/python -m tests.perf

lint:
	scripts/setup.sh test
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

setup:
	scripts/setup.sh test

clean:
	rm -rf .venv node_modules test-artifacts .pytest_cache .ruff_cache
