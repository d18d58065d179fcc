#!/usr/bin/env bash
# The convo-doctor benchmark: builds --release, generates its inputs by scaling
# the real-SDK fixtures (bench/gen.py), and times whole processes with GNU
# time: convo-doctor against the read floor (`cat` of the same files to
# /dev/null), in the same run, on the same files.
#
#   bench/run.sh            warm page cache (each command run once unmeasured first)
#   bench/run.sh --cold     drop the page cache before every run (needs root)
#   bench/run.sh --generate only generate the inputs
#
# BENCH_DIR (default /var/tmp/convo-doctor-bench) keeps the generated stores
# between runs; they are rebuilt when bench/gen.py or the fixtures change.
# RUNS (default 3): measured runs per command; the fastest is reported.
# ONLY (a grep -E pattern): run only the inputs whose label matches, e.g. ONLY=seed.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_DIR=${BENCH_DIR:-/var/tmp/convo-doctor-bench}
RUNS=${RUNS:-3}
MODE=warm
case "${1:-}" in
  --cold) MODE=cold ;;
  --generate) MODE=generate ;;
  "") ;;
  *) echo "usage: bench/run.sh [--cold|--generate]" >&2; exit 2 ;;
esac

[ -x /usr/bin/time ] || { echo "GNU time is missing: apt-get install time" >&2; exit 2; }
[ -f fixtures/manifest.json ] || { echo "fixtures/ is missing" >&2; exit 2; }

stamp=$(cat bench/gen.py fixtures/manifest.json | sha256sum | cut -c1-16)
gen() { # name, gen.py arguments...
  local name=$1; shift
  if [ "$(cat "$BENCH_DIR/$name.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "generating $name ..." >&2
    rm -rf "${BENCH_DIR:?}/$name"
    python3 bench/gen.py fixtures "$BENCH_DIR/$name" "$@" > "$BENCH_DIR/$name.json"
    echo "$stamp" > "$BENCH_DIR/$name.stamp"
  fi
}
mkdir -p "$BENCH_DIR"
gen seed seed
gen store-1k store 1000 1
gen store-10k store 10000 2
[ "$MODE" = generate ] && exit 0

cargo build --release --quiet
BIN=$PWD/target/release/convo-doctor

drop_caches() {
  sync
  echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || {
    echo "cannot drop the page cache (not root?): use the warm mode" >&2; exit 2; }
}

# measure LABEL CMD...: prints "wall user sys maxrss_kb" of the fastest run.
measure() {
  local out best="" t
  out=$(mktemp)
  [ "$MODE" = warm ] && "${@}" > /dev/null 2>&1 || true
  for _ in $(seq "$RUNS"); do
    [ "$MODE" = cold ] && drop_caches
    /usr/bin/time -v -o "$out" "$@" > /dev/null 2>/dev/null || true
    t=$(awk -F': ' '
      /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
      /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { r = $2 }
      END { printf "%.2f %.2f %.2f %d\n", w, u, s, r }' "$out")
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { split(a, x, " "); split(b, y, " "); exit !(x[1] < y[1]) }'; then
      best=$t
    fi
  done
  rm -f "$out"
  echo "$best"
}

floor() { find "$1" -type f -print0 | xargs -0 cat > /dev/null; }
export -f floor

row() { # label, floor figures, tool figures
  awk -v l="$1" -v f="$2" -v t="$3" 'BEGIN {
    split(f, a, " "); split(t, b, " ");
    printf "| %s | %.2f s | %.2f s (%.2f+%.2f) | %.1f MB | %.2f s | %.2f s (%.2f+%.2f) | %.1f MB | %.2f× |\n",
      l, a[1], a[2] + a[3], a[2], a[3], a[4] / 1024, b[1], b[2] + b[3], b[2], b[3], b[4] / 1024, b[1] / a[1] }'
}

files() { find "$1" -type f | wc -l; }
seed=$(ls -d "$BENCH_DIR"/seed/*/)

echo "machine: $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), $(uname -sr), $(df -T "$BENCH_DIR" | awk 'NR == 2 { print $2 }') under $BENCH_DIR"
echo "page cache: $MODE; fastest of $RUNS runs; convo-doctor $($BIN --version | cut -d' ' -f2) --format jsonl --fail-on never"
echo
echo "| input | files | floor wall | floor CPU (user+sys) | floor peak RSS | convo-doctor wall | CPU (user+sys) | peak RSS | wall ÷ floor |"
echo "|---|---|---|---|---|---|---|---|---|"
for case in "seed (1 conversation, 5,570 events)|$seed|" \
            "seed, -j1|$seed|-j1" \
            "store 1k|$BENCH_DIR/store-1k|" \
            "store 10k|$BENCH_DIR/store-10k|" \
            "store 10k, -j1|$BENCH_DIR/store-10k|-j1"; do
  IFS='|' read -r label dir extra <<< "$case"
  [ -n "${ONLY:-}" ] && ! grep -qE "$ONLY" <<< "$label" && continue
  f=$(measure bash -c "floor '$dir'")
  # shellcheck disable=SC2086
  t=$(measure "$BIN" diagnose "$dir" --format jsonl --fail-on never $extra)
  row "$label | $(files "$dir")" "$f" "$t"
done
