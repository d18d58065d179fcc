#!/usr/bin/env bash
# Issue 26: the real Claude Code client (pinned) judges again the damaged
# sessions kept in fixtures/claude/fuzz, and must say what verdicts.json
# records: whether it resumes, and which lines it resends. `cargo test --test
# claude` checks convo-doctor against those recorded verdicts without npm;
# this checks the recordings against the client. Installs the client from
# npm into a cache folder. With CONVO_DOCTOR_CI=1 a missing npm fails; else
# it skips.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=2.1.328
. tests/jsonl_real.sh
real_client claude_real @anthropic-ai/claude-code "$VERSION" \
  node_modules/@anthropic-ai/claude-code-linux-x64/claude "$VERSION (Claude Code)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -a fixtures/claude/fuzz "$work/cases"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "$PY" fixtures/claude/gen/fuzz.py --rejudge "$bin" "$work/cases" >"$work/log" 2>&1 || {
  cat "$work/log" >&2; exit 1; }
"$PY" - fixtures/claude/fuzz/verdicts.json "$work/cases/verdicts.json" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["cases"]
got = json.load(open(sys.argv[2]))["cases"]
bad = [n for n in want if (want[n].get("resumed"), want[n].get("sent")) != (got[n].get("resumed"), got[n].get("sent"))]
for n in bad:
    print(f"{n}: recorded resumed={want[n].get('resumed')} sent={want[n].get('sent')}; "
          f"the client now resumed={got[n].get('resumed')} sent={got[n].get('sent')}", file=sys.stderr)
print(f"claude_real: {len(want) - len(bad)} of {len(want)} recorded verdicts are what Claude Code says now")
sys.exit(1 if bad else 0)
PY
