#!/usr/bin/env bash
# Start Tarn: the HTTPS front (nginx), web server, Celery workers (default, per-host, benchmarks) and beat. Ctrl-C
# stops them all. As root the front serves HTTPS on TARN_HTTPS_PORT (443) and a redirect on TARN_HTTP_PORT (80), with
# a certificate made at the first start; TARN_FRONT=false (the default when not root): plain HTTP on TARN_BIND.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh run
export DJANGO_SETTINGS_MODULE=tarn.settings
py=.venv/bin/python

data=${TARN_DATA_DIR:-$PWD/var}
free() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    echo "tarn: port $1 is already in use (another Tarn, or a web server, still running?); $2" >&2
    exit 1
  fi
}
if [ "${TARN_FRONT:-$([ "$(id -u)" = 0 ] && echo true || echo false)}" = true ]; then
  [ "$(id -u)" = 0 ] || { echo "tarn: the HTTPS front (TARN_FRONT=true) starts as root" >&2; exit 1; }
  export TARN_FRONT=true TARN_HTTPS=${TARN_HTTPS:-true}
  https_port=${TARN_HTTPS_PORT:-443} http_port=${TARN_HTTP_PORT:-80}
  free "$https_port" "set TARN_HTTPS_PORT to use another"
  free "$http_port" "set TARN_HTTP_PORT to use another"
  health=http://127.0.0.1:$http_port/healthz
else
  export TARN_FRONT=false
  bind=${TARN_BIND:-0.0.0.0:8000}
  port=${bind##*:}
  free "$port" "set TARN_BIND=host:port to use another"
  health=http://127.0.0.1:$port/healthz
fi
# The data dir's layout first (appliance.datadir): an older install's database moves into db/ before anything opens it.
$py manage.py tarn_layout
$py manage.py migrate --noinput -v0
$py manage.py tarn_admin
# A real OpenZFS to manage without a NAS: TARN_LAB=1 boots (or restores) the lab guest and adds it as host "lab";
# TARN_LAB=2 also the second guest (lab/second.env) as "lab2", both addressed on the replication wire between them.
second() { (set -a; . lab/second.env; set +a; "$@"); }
case "${TARN_LAB:-0}" in
  0) ;;
  1) lab/lab.sh up
     $py manage.py tarn_lab_host "${TARN_LAB_RUN:-/run/tarn-lab}/lab.env" ;;
  2) lab/lab.sh up && second lab/lab.sh up && lab/lab.sh wire && second lab/lab.sh wire
     $py manage.py tarn_lab_host "${TARN_LAB_RUN:-/run/tarn-lab}/lab.env" "$(second sh -c 'echo "$TARN_LAB_RUN"')/lab.env"
     echo "tarn: lab (10.78.0.1) and lab2 (10.78.0.2) are wired: pair them under Replication (see README, The lab)" ;;
  *) echo "tarn: TARN_LAB is 1 (the lab guest) or 2 (two guests, wired for replication)" >&2; exit 1 ;;
esac

$py manage.py tarn_refresh_facts
$py manage.py tarn_identity >/dev/null
scripts/web.sh prepare  # the web runs as the unprivileged user tarn (the front's workers as tarn-front); workers root
fingerprint=""
if [ "$TARN_FRONT" = true ]; then
  # The certificate (made at the first start) and the front's configuration, checked by nginx before it is written.
  front=$($py manage.py tarn_front --user "${TARN_FRONT_USER:-tarn-front}")
  echo "$front"
  fingerprint=$(echo "$front" | sed -n 's/^SHA-256 fingerprint: //p')
fi

hostq=$($py manage.py tarn_queues hosts --hosts "${TARN_WORKER_HOSTS:-*}")
benchq=$($py manage.py tarn_queues bench)
celery=(.venv/bin/celery -A tarn)

umask 0007  # what the root workers write in the data dir stays readable by the web's group, and by no one else
trap 'trap - INT TERM EXIT; echo; echo "Stopping Tarn…"; kill -- $(jobs -p) 2>/dev/null; wait' INT TERM EXIT
if [ "$TARN_FRONT" = true ]; then
  TARN_BIND="unix:$data/sock/web.sock" scripts/web.sh serve &  # its socket only: the front is the way in
  nginx -c "$data/tls/nginx.conf" &  # in the foreground of its own (daemon off), reloaded by Tarn on a new certificate
else
  TARN_BIND=$bind scripts/web.sh serve &
fi
scripts/web.sh deliver &  # alert delivery: unprivileged, as the web
"${celery[@]}" worker -n "default@%h" -Q default -c 2 -l warning &
"${celery[@]}" worker -n "hosts@%h" -Q "$hostq" -c "${TARN_HOST_WORKERS:-3}" -l warning &  # hosts side by side
"${celery[@]}" worker -n "bench@%h" -Q "$benchq" -c 1 -l warning &
"${celery[@]}" beat -l warning -s "${TARN_DATA_DIR:-var}/celerybeat-schedule" &

for _ in $(seq 100); do
  .venv/bin/python -c "import urllib.request; urllib.request.urlopen('$health', timeout=1)" 2>/dev/null && break
  sleep 0.2
done
addr=$(hostname -I 2>/dev/null | awk '{print $1}')
echo
if [ "$TARN_FRONT" = true ]; then
  suffix=$([ "$https_port" = 443 ] && echo "" || echo ":$https_port")
  echo "Tarn is running: https://${addr:-127.0.0.1}$suffix/  (also https://localhost$suffix/)  —  Ctrl-C stops it."
  echo "Its certificate's SHA-256 fingerprint (compare it with what the browser shows before you trust it):"
  echo "  $fingerprint"
else
  echo "Tarn is running: http://${addr:-127.0.0.1}:$port/  (also http://127.0.0.1:$port/)  —  Ctrl-C stops it."
fi
wait -n
