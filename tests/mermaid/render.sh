#!/usr/bin/env bash
# Renders every Mermaid graph of `convo-doctor diagnose --format markdown`
# in headless Chromium with the `mermaid` package from npm (render.mjs says
# which reports), failing on any parse or render error, an injection that
# reaches the report raw, or a link or script in an SVG.
#
#   bash tests/mermaid/render.sh            # check; screenshot to a temp file
#   bash tests/mermaid/render.sh --update   # also rewrite docs/img/markdown-report.png
#
# SKIPs (a SKIP line, exit 0) without node/npm or Chromium (CHROMIUM=path
# overrides /usr/bin/chromium), or when npm cannot fetch the pinned packages;
# under CI (CONVO_DOCTOR_CI=1, set by .ci/run, which installs Debian's
# chromium) each of these fails instead. No browser is downloaded:
# playwright-core drives the installed Chromium.
set -euo pipefail
cd "$(dirname "$0")/../.."

skip() {
  if [ "${CONVO_DOCTOR_CI:-}" = 1 ]; then
    echo "FAIL mermaid render: $1 (CI must run it)" >&2
    exit 1
  fi
  echo "SKIP mermaid render: $1"
  exit 0
}
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  skip "node/npm not installed"
fi
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
  skip "chromium not installed"
fi
if ! (cd tests/mermaid && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null); then
  skip "npm could not install tests/mermaid/package-lock.json"
fi
cargo build --quiet
shot=$(mktemp --suffix=.png)
trap 'rm -f "$shot"' EXIT
node tests/mermaid/render.mjs "${CARGO_TARGET_DIR:-target}/debug/convo-doctor" "$chromium" "$shot"
if [ "${1:-}" = "--update" ]; then
  mkdir -p docs/img
  cp "$shot" docs/img/markdown-report.png
  echo "updated docs/img/markdown-report.png"
fi
