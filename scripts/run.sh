#!/usr/bin/env bash
# Start Tarn: web server, Celery workers (default, per-host, benchmarks) and beat. Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh run
export DJANGO_SETTINGS_MODULE=tarn.settings
py=.venv/bin/python

bind=${TARN_BIND:-0.0.0.0:8000}
port=${bind##*:}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "tarn: port $port is already in use (another Tarn still running?); set TARN_BIND=host:port to use another" >&2
  exit 1
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
scripts/web.sh prepare  # the web runs as the unprivileged user tarn; the workers below stay root

hostq=$($py manage.py tarn_queues hosts)
benchq=$($py manage.py tarn_queues bench)
celery=(.venv/bin/celery -A tarn)

umask 0007  # what the root workers write in the data dir stays readable by the web's group, and by no one else
trap 'trap - INT TERM EXIT; echo; echo "Stopping Tarn…"; kill -- $(jobs -p) 2>/dev/null; wait' INT TERM EXIT
TARN_BIND=$bind scripts/web.sh serve &
scripts/web.sh deliver &  # alert delivery: unprivileged, as the web
"${celery[@]}" worker -n "default@%h" -Q default -c 2 -l warning &
"${celery[@]}" worker -n "hosts@%h" -Q "$hostq" -c 1 -l warning &
"${celery[@]}" worker -n "bench@%h" -Q "$benchq" -c 1 -l warning &
"${celery[@]}" beat -l warning -s "${TARN_DATA_DIR:-var}/celerybeat-schedule" &

for _ in $(seq 100); do
  .venv/bin/python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null && break
  sleep 0.2
done
addr=$(hostname -I 2>/dev/null | awk '{print $1}')
echo
echo "Tarn is running: http://${addr:-127.0.0.1}:$port/  (also http://127.0.0.1:$port/)  —  Ctrl-C stops it."
wait -n
