#!/usr/bin/env bash
# Issue 26: the real Codex CLI (pinned) judges again the rollouts kept in
# fixtures/codex/sessions (and their repairs) and fixtures/codex/fuzz, and
# must say what their verdicts.json record: whether it resumes, and which
# lines it resends. `cargo test --test codex` checks convo-doctor against
# those recorded verdicts without npm; this checks the recordings against
# the client. Installs the client from npm into a cache folder. With
# CONVO_DOCTOR_CI=1 a missing npm fails; else it skips.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.171.0
. tests/jsonl_real.sh
real_client codex_real @openai/codex "$VERSION" \
  node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex "codex-cli $VERSION"
"$PY" - "$bin" <<'PY'
import json, os, sys
sys.path.insert(0, "fixtures/codex/gen")
import codexlib as cl
binary = sys.argv[1]
bad = total = 0
def same(want, got):
    # the items of its own it adds (recorded for every case judged since
    # they are counted) must be as many again
    extra = want.get("extra") is None or not got.get("resumed") or want["extra"] == got.get("extra")
    return (want.get("resumed"), want.get("sent")) == (got.get("resumed"), got.get("sent")) and extra
for folder in ("fixtures/codex/sessions", "fixtures/codex/fuzz"):
    doc = json.load(open(os.path.join(folder, "verdicts.json")))
    for name, want in sorted(doc["cases"].items()):
        rollout = want.get("rollout") or doc["rollout"]
        judged = [(name, want)]
        if "repaired" in want:
            judged.append((name + ".repaired", want["repaired"]))
        for case, w in judged:
            data = open(os.path.join(folder, case + ".jsonl"), "rb").read()
            got = cl.judge(binary, data, rollout)
            total += 1
            if not same(w, got):
                bad += 1
                print(f"{folder}/{case}: recorded resumed={w.get('resumed')} sent={w.get('sent')}; "
                      f"the client now resumed={got.get('resumed')} sent={got.get('sent')}", file=sys.stderr)
# the state database cases: whether the client resumes
want = json.load(open("fixtures/codex/sessions/state.json"))["cases"]
import gen
got = gen.state_cases(binary)
for case, w in sorted(want.items()):
    if "resumed" not in w:
        continue  # client-writing-now: below
    total += 1
    if w["resumed"] != got.get(case, {}).get("resumed"):
        bad += 1
        print(f"state/{case}: recorded resumed={w['resumed']}; the client now {got.get(case)}", file=sys.stderr)
# a client writing a thread now holds its lock, and convo-doctor refuses it
doctor = os.path.join(os.environ.get("CARGO_TARGET_DIR") or "target", "debug", "convo-doctor")
if os.path.exists(doctor):
    w = json.load(open("fixtures/codex/sessions/state.json"))["cases"]["client-writing-now"]
    g = gen.lock_case(binary, doctor)
    total += 1
    if g != w:
        bad += 1
        print(f"state/client-writing-now: recorded {w}; now {g}", file=sys.stderr)
elif os.environ.get("CONVO_DOCTOR_CI") == "1":
    print(f"codex_real: {doctor} is missing (cargo build first)", file=sys.stderr)
    bad += 1
print(f"codex_real: {total - bad} of {total} recorded verdicts are what Codex says now")
sys.exit(1 if bad else 0)
PY
# the state database (fixtures/codex/state): the client's lists, doctor,
# resume --last, and convo-doctor's repair of a missing row judged again
doctor=${CARGO_TARGET_DIR:-target}/debug/convo-doctor
[ -x "$doctor" ] || { echo "codex_real: $doctor is missing (cargo build first)" >&2; exit 1; }
"$PY" fixtures/codex/gen/statedb.py --check "$bin" "$doctor"
