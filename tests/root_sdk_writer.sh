#!/usr/bin/env bash
# Issue 12, "a real SDK writer as a non-root owner appending after a root
# repair": a false-root conversation owned by `nobody` (events 0600, as the
# SDK writes them; no events/.eventlog.lock yet) is repaired by root, then the
# real SDK 1.58.2, running as `nobody`, resumes it and appends events (taking
# the event-log lock root's repair created), and the real SDK, again as
# `nobody`, judges the folder: it must load with every event, including the
# repaired one and the appended ones.
#
# Needs root (to act as `nobody`), tmux and /work/venvs/oh-1.58.2 (or
# OH_VENV=/path/to/venv); prints SKIP and exits 0 without them, but fails
# under CI (CONVO_DOCTOR_CI=1). CI runs it after `cargo test` (.ci/run, which
# builds the venv with fixtures/gen/setup_venvs.sh), with the binary cargo
# test built.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OH_VENV:-/work/venvs/oh-1.58.2}
BIN=${CONVO_DOCTOR_BIN:-${CARGO_TARGET_DIR:-target}/debug/convo-doctor}
# SKIP, or under CI (CONVO_DOCTOR_CI=1, set by .ci/run) FAIL
skip() {
  if [ "${CONVO_DOCTOR_CI:-}" = 1 ]; then echo "FAIL root_sdk_writer: $1 (CI must run it)" >&2; exit 1; fi
  echo "SKIP root_sdk_writer: $1"; exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (to act as a second uid)"
[ -x "$VENV/bin/python" ] || skip "no SDK venv at $VENV"
command -v tmux >/dev/null || skip "tmux is not installed (the SDK's terminal tool runs in it)"
[ -x "$BIN" ] || cargo build --quiet
export LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1
NOBODY=65534
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
store="$tmp/store"
mkdir -p "$store"
cp -r fixtures/false-root/. "$store/"
conv=$(find "$store" -mindepth 1 -maxdepth 1 -type d | head -1)
cid=$(basename "$conv")
rm -f "$conv/events/.eventlog.lock"
chmod 600 "$conv"/events/event-*.json
chown -R $NOBODY:$NOBODY "$store"
# The venv's interpreter may live under /root (pyenv), which `nobody` cannot
# traverse: the SDK runs as uid 65534 with CAP_DAC_READ_SEARCH only, which
# lets it read and search anything but grants no write: every write the SDK
# makes (the lock opened O_RDWR, new event files, base_state.json) is checked
# against uid 65534 exactly as for the real owner. Reading is checked without
# any capability below (`plain_nobody`).
# SHELL is set because the terminal tool's tmux starts $SHELL, else the passwd
# shell, which for `nobody` is nologin: the pane dies and so does the server
# (CI runs with SHELL unset; this is how stop 13 failed there).
as_nobody() {
  setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
    --inh-caps=+dac_read_search --ambient-caps=+dac_read_search \
    env HOME="$tmp/home" SHELL=/bin/bash "$@"
}
plain_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
mkdir -p "$tmp/home" && chown $NOBODY:$NOBODY "$tmp/home"

# 1. root repairs it
"$BIN" repair --backup-dir "$tmp/backups" "$store" > "$tmp/repair.out"
grep -q "fixed     \[false-root\]" "$tmp/repair.out" || { cat "$tmp/repair.out"; echo "FAIL: not repaired"; exit 1; }
bad=$(find "$store" ! -user $NOBODY -print)
[ -z "$bad" ] || { echo "FAIL: owner changed: $bad"; exit 1; }
[ "$(stat -c %a "$conv/events/.eventlog.lock")" = 644 ] || { echo "FAIL: lock mode"; exit 1; }
for f in "$conv"/base_state.json "$conv"/events/*; do
  plain_nobody cat "$f" > /dev/null || { echo "FAIL: the owner cannot read $f"; exit 1; }
done
plain_nobody sh -c ': >> "$1"' sh "$conv/events/.eventlog.lock" \
  || { echo "FAIL: the owner cannot open the lock for writing"; exit 1; }

# 2. the SDK, as the owner, resumes the conversation and appends
cat > "$tmp/ops.json" <<JSON
{"seed": "root-sdk-writer", "labels": {}, "ops": [
  {"op": "open", "store": "$store", "cid": "$cid", "agent": "disk", "workspace": "$tmp/home/ws"},
  {"op": "user", "text": "after the root repair"},
  {"op": "agent_msg", "text": "appended by the owner"}
]}
JSON
chmod 644 "$tmp/ops.json"
as_nobody "$VENV/bin/python" fixtures/gen/writer.py "$tmp/ops.json" > "$tmp/writer.out" 2>&1 \
  || { tail -20 "$tmp/writer.out"; echo "FAIL: the SDK as the owner could not append"; exit 1; }
after=$(ls "$conv/events" | grep -c '^event-')
[ "$after" -ge 13 ] || { echo "FAIL: expected at least 13 events, found $after"; exit 1; }

# 3. the SDK, as the owner, judges it: it loads, with every event
as_nobody "$VENV/bin/python" fixtures/gen/judge.py --compact "$conv" > "$tmp/judge.json" 2>"$tmp/judge.err" \
  || { cat "$tmp/judge.err"; echo "FAIL: judge"; exit 1; }
python3 - "$tmp/judge.json" "$after" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert r.get("loads") is True, r
assert r.get("events_on_disk") == n and r.get("log_length") == n, (r.get("events_on_disk"), r.get("log_length"), n)
print(f"root_sdk_writer: OK: the SDK as uid 65534 appended after a root repair and loads all {n} events "
      f"(active branch {len(r.get('active_branch_ids') or [])})")
PY
