#!/usr/bin/env bash
# The web server runs unprivileged; only the workers that run host commands are root.
#   scripts/web.sh prepare   as root: make the user `tarn`, give it what the web needs and nothing more
#   scripts/web.sh serve     start gunicorn (as `tarn` when started by root) on TARN_BIND (comma-separated for more than
#                            one), by default the Unix socket
#                            sock/web.sock in the data dir, which the HTTPS front (nginx, scripts/run.sh) sends to
#   scripts/web.sh deliver   start the Celery worker that delivers alerts (e-mail, webhooks to addresses an admin
#                            typed), as `tarn` too: it talks to the outside world, so it never holds the SSH key
# What `tarn` gets: read of the code, the venv and its Python (traverse-only ACLs on directories that hide them,
# e.g. /root for a pyenv Python), read/write of the SQLite database in its own folder (db/) and of uploads/, read of
# the secret key and of Tarn's *public* SSH key and of the vault's public half (to seal an escrowed key). Never a
# private key, which stays 0600 root, and never a write in the data dir itself or a key folder, so it cannot swap
# one (appliance.datadir): logging in to a NAS and opening a sealed key are the workers' job.
set -euo pipefail
cd "$(dirname "$0")/.."
WEB_USER=${TARN_WEB_USER:-tarn}
FRONT_USER=${TARN_FRONT_USER:-tarn-front}  # the HTTPS front's workers (nginx): not the web, which must not read them
SOCK_GROUP=${TARN_SOCK_GROUP:-tarn-sock}   # the web's socket: the web (makes it) and the front (sends to it)
data=${TARN_DATA_DIR:-$PWD/var}
py=.venv/bin/python
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-tarn.settings}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'tarn web: %s\n' "$*" >&2; exit 1; }
as_user() { local user=$1; shift; setpriv --reuid="$user" --regid="$user" --init-groups -- env HOME="$data" "$@"; }
as_web() { as_user "$WEB_USER" "$@"; }

# Each directory on the way to $2 that user $1 cannot enter gets a traverse-only ACL entry for its group.
reach() {
  local user=$1 path=$2 d=""
  local IFS=/
  for part in ${path#/}; do
    d="$d/$part"
    [ -d "$d" ] || break
    if ! as_user "$user" test -x "$d"; then
      command -v setfacl >/dev/null || die "setfacl is missing (apt-get install acl)"
      setfacl -m "g:$user:x" "$d"
      say "Group $user may now pass through $d (x only: it cannot list it)"
    fi
  done
}

system_user() {
  id -u "$1" >/dev/null 2>&1 && return 0
  say "Creating the unprivileged user $1 ($2)"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$1"
}

prepare() {
  [ "$(id -u)" = 0 ] || return 0  # not root: everything runs as this user already
  system_user "$WEB_USER" "the web server"
  # The front's workers hold the TLS key in memory and may be reached from the network: a user of their own, sharing
  # with the web only the group of its socket (a process can read the memory of another of its own user's).
  system_user "$FRONT_USER" "the HTTPS front's workers"
  getent group "$SOCK_GROUP" >/dev/null || groupadd --system "$SOCK_GROUP"
  for user in "$WEB_USER" "$FRONT_USER"; do
    id -nG "$user" | tr ' ' '\n' | grep -qx "$SOCK_GROUP" || usermod -aG "$SOCK_GROUP" "$user"
  done
  # The data dir is root's (2750 root:tarn): the web writes only db/ (SQLite), uploads/ and sock/ (its socket), and
  # reads the secret key, the public keys (ssh/id_ed25519.pub; vault/recipient.txt, to seal an escrowed key) and the
  # backups made here. The front's user passes through it to sock/ and front/ (its temporary files) only.
  "$py" manage.py tarn_layout --group "$WEB_USER" --sock-group "$SOCK_GROUP" --front-group "$FRONT_USER"
  reach "$WEB_USER" "$PWD"
  if ! as_web test -r "$PWD"; then  # Python lists the checkout to import from it (a clone in a 0700 mktemp dir)
    setfacl -m "g:$WEB_USER:rx" "$PWD"
    say "Group $WEB_USER may now read the checkout $PWD"
  fi
  reach "$WEB_USER" "$data"
  reach "$FRONT_USER" "$data"
  reach "$WEB_USER" "$(sed -n 's/^home = //p' .venv/pyvenv.cfg)"
  local err
  err=$(as_web "$py" -c 'import django; django.setup(); from django.db import connection; connection.ensure_connection()' 2>&1) \
    || die "user $WEB_USER cannot start Tarn's web: ${err##*$'\n'}"
}

serve() {
  local binds=() b
  IFS=, read -ra list <<<"${TARN_BIND:-unix:$data/sock/web.sock}"  # several, comma-separated (make perf https)
  for b in "${list[@]}"; do binds+=(-b "$b"); done
  # Behind the front, one queue: each worker takes a connection only while its thread is free (--threads 1
  # --worker-connections 1) and keeps none open after its answer (--keep-alive 0: the front opens one a request, on
  # the socket, and sends the request as it connects). A request waits in the socket's queue for whichever worker is
  # free first, not in one worker's behind what it happened to take, and no two of a worker's requests share its GIL.
  # Against gunicorn's defaults (4 x 2, kept connections) at 50 clients: p95 0.6-0.9x (README, make perf pages).
  # gthread, not sync: its main thread reports to gunicorn while a long answer streams (a file restored from a NAS).
  # Straight to clients (TARN_FRONT=false) gunicorn's defaults stay: a browser opens connections before it sends on
  # them, and each would hold a worker.
  local threads queue=()
  if [ "${TARN_FRONT:-false}" = true ]; then
    threads=${TARN_WEB_THREADS:-1}
    queue=(--worker-connections "$threads" --keep-alive 0)
  else
    threads=${TARN_WEB_THREADS:-2}
  fi
  local web=(.venv/bin/gunicorn tarn.wsgi "${binds[@]}" --workers "${TARN_WEB_WORKERS:-4}"
    --threads "$threads" "${queue[@]}" --access-logfile - --error-logfile - --log-level warning
    --umask 0  # the socket only (gunicorn gives it the web's group): its folder, sock/, decides who may use it
    --no-control-socket)  # gunicorn's runtime control socket: unused, and $HOME/.gunicorn is not the web's to write
  umask 0007
  if [ "$(id -u)" = 0 ]; then exec setpriv --reuid="$WEB_USER" --regid="$WEB_USER" --init-groups -- \
    env HOME="$data" "${web[@]}"; fi
  exec "${web[@]}"
}

deliver() {
  local worker=(.venv/bin/celery -A tarn worker -n "deliver@%h" -Q deliver -c 2 -l warning)
  umask 0007
  if [ "$(id -u)" = 0 ]; then exec setpriv --reuid="$WEB_USER" --regid="$WEB_USER" --init-groups -- \
    env HOME="$data" "${worker[@]}"; fi
  exec "${worker[@]}"
}

case ${1:-} in
  prepare) prepare ;;
  serve) serve ;;
  deliver) deliver ;;
  *) die "usage: scripts/web.sh prepare|serve|deliver" ;;
esac
