#!/usr/bin/env bash
# Installs what Tarn needs on a Debian 12 machine; fast when everything is already there.
# Usage: scripts/setup.sh run|test|lab [--os]   (lab: only what the lab guest needs; test includes it;
#        --os: only the OS packages, so make test can start the lab guest's build before the Python packages)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
only_os=${2:-}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'tarn setup: %s\n' "$*" >&2; exit 1; }

# --- OS packages --------------------------------------------------------------------------------
pkgs=(redis-server redis-tools openssh-client ca-certificates iproute2 make acl smartmontools)  # smartctl: this box as a NAS
pkgs+=(nginx)  # the HTTPS front (make run starts its own, on Tarn's configuration: appliance.tls)
command -v npm >/dev/null || pkgs+=(nodejs npm)
if [ "$mode" = test ]; then
  # chromium for browser tests, a real sshd for the SSH transport tests, wrk for make perf, PostgreSQL.
  pkgs+=(chromium openssh-server fonts-dejavu-core wrk postgresql)
  pkgs+=(dpkg-dev apt-utils)  # the updates lab tests build a Debian repository (dpkg-deb, apt-ftparchive)
fi
if [ "$mode" = test ] || [ "$mode" = lab ] || [ "${TARN_LAB:-0}" != 0 ]; then
  # The lab guest (QEMU, image build) and the clients tests use against it from this machine.
  pkgs+=(qemu-system-x86 qemu-utils mmdebstrap zstd bc smbclient iperf3 iputils-ping python3)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing OS packages (${missing[*]}); run as root or install them with apt-get"
  say "Installing OS packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts its own nginx with a default site on port 80: Tarn's front takes 80 and 443, so that one stops.
  if [[ " ${missing[*]} " == *" nginx "* ]] && [ -d /run/systemd/system ]; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
  fi
fi

[ "$mode" = lab ] || [ "$only_os" = --os ] && exit 0

# --- Python ≥ 3.12 (Django 6 needs it; Debian 12 ships 3.11) -------------------------------------
find_python() {
  local c
  for c in ${TARN_PYTHON:-} python3.13 python3.12 \
           "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3 \
           /usr/local/bin/python3.13 /usr/local/bin/python3.12 python3; do
    [ -n "$c" ] || continue
    command -v "$c" >/dev/null 2>&1 || [ -x "$c" ] || continue
    if "$c" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$c"; return 0
    fi
  done
  return 1
}
req=requirements.txt; [ "$mode" = test ] && req=requirements-dev.txt
reqhash=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-16)
# The test set includes the run set, so either stamp satisfies `make run`.
if [ ! -e ".venv/.installed-$reqhash-$mode" ] && [ ! -e ".venv/.installed-$reqhash-test" ]; then
  py=$(find_python) || die "Python 3.12 or newer is needed (Django 6); Debian 12 ships 3.11. Install one (e.g. pyenv) or set TARN_PYTHON=/path/to/python3.12"
  if ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    say "Creating .venv with $("$py" --version)"
    rm -rf .venv
    "$py" -m venv .venv
  fi
  say "Installing Python packages ($req)"
  .venv/bin/pip install -q --disable-pip-version-check -r "$req"
  rm -f .venv/.installed-*
  touch ".venv/.installed-$reqhash-$mode"
fi

# --- npm packages (htmx, chart.js), served as static files --------------------------------------
lockhash=$(sha256sum package-lock.json | cut -c1-16)
if [ ! -e "node_modules/.tarn-$lockhash" ]; then
  say "Installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  touch "node_modules/.tarn-$lockhash"
fi

# --- pebble: Let's Encrypt's test ACME server, for the ACME tests (built from the Go module proxy) -------------
PEBBLE_VERSION=v2.10.3
if [ "$mode" = test ]; then
  pebble_dir=/usr/local/lib/tarn-test/pebble-$PEBBLE_VERSION
  if [ ! -x "$pebble_dir/pebble" ] || [ ! -x "$pebble_dir/pebble-challtestsrv" ]; then
    go=$(command -v go || echo /usr/local/go/bin/go)
    [ -x "$go" ] || die "Go (1.22 or newer) is needed to build pebble, the ACME tests' CA: install it from go.dev"
    say "Building pebble $PEBBLE_VERSION (Let's Encrypt's test ACME server, for the ACME tests)"
    mkdir -p "$pebble_dir"
    GOBIN="$pebble_dir" GOFLAGS=-mod=mod "$go" install \
      "github.com/letsencrypt/pebble/v2/cmd/pebble@$PEBBLE_VERSION" \
      "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@$PEBBLE_VERSION"
  fi
fi

# --- Redis ----------------------------------------------------------------------------------------
if ! redis-cli -u "${REDIS_URL:-redis://127.0.0.1:6379/0}" ping >/dev/null 2>&1; then
  say "Starting Redis"
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start redis-server || true
  fi
  redis-cli ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' >/dev/null
  for _ in $(seq 50); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli ping >/dev/null 2>&1 || die "Redis did not start"
fi
