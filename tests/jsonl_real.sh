# Sourced by tests/claude_real.sh and tests/codex_real.sh (issue 26): the
# pinned real client installed from npm into a cache folder, its binary in
# $bin and a Python in $PY. With CONVO_DOCTOR_CI=1 a missing npm fails; else
# the calling script skips (exits 0).
#   real_client NAME PACKAGE VERSION BINARY_BELOW_PREFIX VERSION_LINE
real_client() {
  local name=$1 package=$2 version=$3 below=$4 says=$5
  if ! command -v npm >/dev/null; then
    if [ "${CONVO_DOCTOR_CI:-}" = 1 ]; then echo "$name: npm is missing" >&2; exit 1; fi
    echo "SKIP $name: no npm" >&2; exit 0
  fi
  local cache=${CONVO_DOCTOR_CI_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/convo-doctor-ci}
  . fixtures/jsonl/client.sh
  install_client "$cache/${package##*/}-$version" "$package" "$version" "$below" "$says"
  bin=$BIN
  PY=$(command -v python3 || echo "$(pyenv root)/versions/3.12.1/bin/python")
}
