#!/usr/bin/env bash
# Issue 19, attack 7: a live standalone SDK must not fall into a repair.
# SDK 1.58.2 counts the event files once and re-syncs only when disk holds
# *more* than it counted; a repair that took an event out and renumbered the
# rest left it appending at its old length, past a gap, and the appended
# event was invisible on the next load. The repair now keeps every index
# where it was: an event the SDK cannot read is set aside in place (a
# placeholder with the same id takes its slot), a missing index is filled
# with a placeholder.
#
# Proven here with the real SDK: a process of SDK 1.58.2, running as the
# conversation's owner (uid 65534), writes a conversation and keeps it open,
# idle (no lock held, no lease: a standalone LocalConversation); meanwhile
# one event file is damaged (truncated, or deleted from the middle) and root
# runs `repair --unsafe-fixes`; then the same SDK process appends, and the
# real SDK (again as the owner) judges the folder: it loads, with every file
# in the log and the appended event on the active branch.
#
# Needs root, tmux and /work/venvs/oh-1.58.2 (or OH_VENV); prints SKIP and
# exits 0 without them, but fails under CI (CONVO_DOCTOR_CI=1). CI runs it
# after `cargo test` (.ci/run, which builds the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OH_VENV:-/work/venvs/oh-1.58.2}
BIN=${CONVO_DOCTOR_BIN:-${CARGO_TARGET_DIR:-target}/debug/convo-doctor}
# SKIP, or under CI (CONVO_DOCTOR_CI=1, set by .ci/run) FAIL
skip() {
  if [ "${CONVO_DOCTOR_CI:-}" = 1 ]; then echo "FAIL root_sdk_live: $1 (CI must run it)" >&2; exit 1; fi
  echo "SKIP root_sdk_live: $1"; exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (to act as a second uid)"
[ -x "$VENV/bin/python" ] || skip "no SDK venv at $VENV"
command -v tmux >/dev/null || skip "tmux is not installed (the SDK's terminal tool runs in it)"
[ -x "$BIN" ] || cargo build --quiet
export LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1
NOBODY=65534
tmp=$(mktemp -d)
writer_pid=
cleanup() { [ -n "$writer_pid" ] && kill "$writer_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
chmod 755 "$tmp"
mkdir -p "$tmp/home" && chown $NOBODY:$NOBODY "$tmp/home"
# as in root_sdk_writer.sh: uid 65534 with CAP_DAC_READ_SEARCH only (the
# venv may sit under /root); every write is checked against uid 65534
as_nobody() {
  setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
    --inh-caps=+dac_read_search --ambient-caps=+dac_read_search \
    env HOME="$tmp/home" SHELL=/bin/bash "$@"
}

# one scenario: DAMAGE is a shell snippet run on the events folder ($ev)
# while the SDK holds the conversation open
scenario() {
  local name=$1 damage=$2
  local store="$tmp/$name/store" cid ready="$tmp/$name/ready" gate="$tmp/$name/gate"
  mkdir -p "$store" && chown -R $NOBODY:$NOBODY "$tmp/$name"
  cid=$(python3 -c "import uuid; print(uuid.uuid5(uuid.NAMESPACE_URL, 'root-sdk-live-$name'))")
  cat > "$tmp/$name/ops.json" <<JSON
{"seed": "root-sdk-live-$name", "labels": {}, "ops": [
  {"op": "open", "store": "$store", "cid": "$cid", "workspace": "$tmp/home/ws-$name"},
  {"op": "user", "text": "list the files"},
  {"op": "terminal", "cmd": "ls", "output": "README.md"},
  {"op": "agent_msg", "text": "there is a README"},
  {"op": "user", "text": "and now?"},
  {"op": "agent_msg", "text": "nothing else"},
  {"op": "wait", "ready": "$ready", "gate": "$gate"},
  {"op": "agent_msg", "text": "appended after the repair"}
]}
JSON
  chmod 644 "$tmp/$name/ops.json"
  as_nobody "$VENV/bin/python" fixtures/gen/writer.py "$tmp/$name/ops.json" > "$tmp/$name/writer.out" 2>&1 &
  writer_pid=$!
  for _ in $(seq 600); do [ -e "$ready" ] && break; sleep 0.2; done
  [ -e "$ready" ] || { tail -20 "$tmp/$name/writer.out"; echo "FAIL $name: the SDK never got ready"; exit 1; }
  local conv; conv="$store/$(python3 -c "import uuid; print(uuid.UUID('$cid').hex)")"
  local ev="$conv/events"
  local before; before=$(ls "$ev" | grep -c '^event-')
  ( cd "$ev" && eval "$damage" )
  "$BIN" repair --unsafe-fixes --backup-dir "$tmp/backups-$name" "$store" > "$tmp/$name/repair.out" 2>&1 \
    || { cat "$tmp/$name/repair.out"; echo "FAIL $name: repair failed"; exit 1; }
  grep -q "  fixed " "$tmp/$name/repair.out" || { cat "$tmp/$name/repair.out"; echo "FAIL $name: nothing fixed"; exit 1; }
  local after_repair; after_repair=$(ls "$ev" | grep -c '^event-')
  [ "$after_repair" = "$before" ] || { ls "$ev"; echo "FAIL $name: the repair moved the count from $before to $after_repair"; exit 1; }
  touch "$gate"
  wait "$writer_pid" || { tail -20 "$tmp/$name/writer.out"; echo "FAIL $name: the SDK could not append"; exit 1; }
  writer_pid=
  local appended
  appended=$(grep '^WRITER-RESULT ' "$tmp/$name/writer.out" | tail -1 | sed 's/^WRITER-RESULT //' \
    | python3 -c "import json,sys; print(json.load(sys.stdin)['log'][-1]['events'][-1][0])")
  as_nobody "$VENV/bin/python" fixtures/gen/judge.py --compact "$conv" > "$tmp/$name/judge.json" 2>"$tmp/$name/judge.err" \
    || { cat "$tmp/$name/judge.err"; echo "FAIL $name: judge"; exit 1; }
  python3 - "$tmp/$name/judge.json" "$appended" "$name" "$before" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); appended, name, before = sys.argv[2], sys.argv[3], int(sys.argv[4])
assert r.get("loads") is True, r
assert r["events_on_disk"] == r["log_length"] == before + 1, (r["events_on_disk"], r["log_length"], before)
assert appended in (r.get("active_branch_ids") or []), ("the appended event is not on the branch", appended, r)
print(f"root_sdk_live {name}: OK: the open SDK 1.58.2 appended after the repair; the folder loads with "
      f"{r['log_length']} events and the appended one ({appended}) on the active branch")
PY
}

# an event the SDK cannot read (cut off mid-write), set aside in place
scenario set-aside 'f=$(ls | grep "^event-00003-"); head -c 40 "$f" > "$f.cut" && cat "$f.cut" > "$f" && rm "$f.cut"'
# an event file gone from the middle of the log: the gap filled in place
scenario gap 'rm "$(ls | grep "^event-00004-")"'
