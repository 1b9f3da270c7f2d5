# Tarn: `make run` sets up and starts the appliance; `make test` sets up and runs every test tier.
.PHONY: run test perf lint setup clean lab lab-stop lab-ssh lab-reset fixtures

run:
	scripts/run.sh

test:
	scripts/test.sh

# `make perf` runs every group; `make perf replication` (or `make perf benchmarks.fio_figures`) runs those named.
ifeq (perf,$(firstword $(MAKECMDGOALS)))
PERF_ARGS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
.PHONY: $(PERF_ARGS)
$(eval $(PERF_ARGS):;@:)
endif

perf:
	scripts/setup.sh test
	TARN_DATA_DIR=$$(mktemp -d /tmp/tarn-perf.XXXXXX) .venv/bin/python -m tests.perf $(PERF_ARGS)

lint:
	scripts/setup.sh test
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/lint-imports --no-cache

setup:
	scripts/setup.sh test

clean:
	rm -rf .venv node_modules test-artifacts .pytest_cache .ruff_cache

# The lab guest: real OpenZFS 2.3, Samba, nfsd, fio, iperf3 in QEMU (see README, "The lab").
lab:
	scripts/setup.sh lab
	lab/lab.sh up

lab-stop:
	lab/lab.sh down

lab-ssh:
	lab/lab.sh ssh

lab-reset:
	lab/lab.sh reset

fixtures:
	scripts/setup.sh test
	TARN_DATA_DIR=$$(mktemp -d /tmp/tarn-fixtures.XXXXXX) .venv/bin/python -m tests.support.capture_fixtures
