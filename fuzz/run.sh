#!/bin/sh
# Run every fuzz target for N seconds each (default 120) on a stable toolchain.
# Needs cargo-fuzz: cargo install cargo-fuzz
set -eu
cd "$(dirname "$0")"
secs="${1:-120}"
for t in event_reader store_reader json_patcher; do
    mkdir -p "corpus/$t"
    RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none "$t" "corpus/$t" -- \
        -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048
done
