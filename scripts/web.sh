#!/usr/bin/env bash
# The web server runs unprivileged; only the workers that run host commands are root.
#   scripts/web.sh prepare   as root: make the user `tarn`, give it what the web needs and nothing more
#   scripts/web.sh serve     start gunicorn (as `tarn` when started by root) on TARN_BIND, by default the Unix socket
#                            run/web.sock in the data dir, which the HTTPS front (nginx, scripts/run.sh) sends to
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
data=${TARN_DATA_DIR:-$PWD/var}
py=.venv/bin/python
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-tarn.settings}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'tarn web: %s\n' "$*" >&2; exit 1; }
as_web() { setpriv --reuid="$WEB_USER" --regid="$WEB_USER" --init-groups -- env HOME="$data" "$@"; }

# Each directory on the way to $1 that $WEB_USER cannot enter gets a traverse-only ACL entry for its group.
reach() {
  local path=$1 d=""
  local IFS=/
  for part in ${path#/}; do
    d="$d/$part"
    [ -d "$d" ] || break
    if ! as_web test -x "$d"; then
      command -v setfacl >/dev/null || die "setfacl is missing (apt-get install acl)"
      setfacl -m "g:$WEB_USER:x" "$d"
      say "Group $WEB_USER may now pass through $d (x only: it cannot list it)"
    fi
  done
}

prepare() {
  [ "$(id -u)" = 0 ] || return 0  # not root: everything runs as this user already
  if ! id -u "$WEB_USER" >/dev/null 2>&1; then
    say "Creating the unprivileged user $WEB_USER for the web server"
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$WEB_USER"
  fi
  # The data dir is root's (2750 root:tarn): the web writes only db/ (SQLite) and uploads/, and reads the secret key,
  # the public keys (ssh/id_ed25519.pub; vault/recipient.txt, to seal an escrowed key) and the backups made here.
  "$py" manage.py tarn_layout --group "$WEB_USER"
  reach "$PWD"
  if ! as_web test -r "$PWD"; then  # Python lists the checkout to import from it (a clone in a 0700 mktemp dir)
    setfacl -m "g:$WEB_USER:rx" "$PWD"
    say "Group $WEB_USER may now read the checkout $PWD"
  fi
  reach "$data"
  reach "$(sed -n 's/^home = //p' .venv/pyvenv.cfg)"
  local err
  err=$(as_web "$py" -c 'import django; django.setup(); from django.db import connection; connection.ensure_connection()' 2>&1) \
    || die "user $WEB_USER cannot start Tarn's web: ${err##*$'\n'}"
}

serve() {
  local bind=${TARN_BIND:-unix:$data/run/web.sock}
  local web=(.venv/bin/gunicorn tarn.wsgi -b "$bind" --workers "${TARN_WEB_WORKERS:-4}"
    --threads "${TARN_WEB_THREADS:-2}" --umask 0007 --access-logfile - --error-logfile - --log-level warning
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
