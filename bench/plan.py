#!/usr/bin/env python3
"""Planning a repair against diagnose and the `cat` floor, on long logs.

    bench/plan.py BIN [N ...]          (default N: 20000 100000 1000000)

For each N, one tree-era conversation of N events (bench/gen.py `long`) with
`compound` damage: the file in the middle missing (an index gap: half the log
is renumbered) and two events cut off (set aside with --unsafe-fixes). Each
round times, interleaved on the same files: the floor (`cat` of every file to
/dev/null), `diagnose --format json`, `repair --dry-run` and
`repair --dry-run --unsafe-fixes` (which also plans the placeholders). One
unmeasured run of each first warms the page cache. Prints the fastest wall
time and least CPU of each, as ratios to the floor and to diagnose: planning
is linear when those ratios stay flat as N grows.

BENCH_DIR (default /var/tmp/convo-doctor-bench) keeps the generated logs;
RUNS (default 3) measured runs per command.
"""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    sizes = [int(a) for a in sys.argv[2:]] or [20000, 100000, 1000000]
    root = Path(os.environ.get("BENCH_DIR", "/var/tmp/convo-doctor-bench"))
    runs = int(os.environ.get("RUNS", 3))
    for n in sizes:
        out = root / f"long-{n}"
        meta = root / f"long-{n}.json"
        if not meta.exists():
            print(f"generating {n} events ...", file=sys.stderr, flush=True)
            subprocess.run(["rm", "-rf", str(out)], check=True)
            info = subprocess.run(
                [sys.executable, str(HERE / "gen.py"), str(HERE.parent / "fixtures"), str(out),
                 "long", str(n), "compound"],
                check=True, capture_output=True, text=True).stdout
            meta.write_text(info)
        conv = json.loads(meta.read_text())["conversation"]
        cmds = {
            "cat (floor)": f"find '{conv}' -type f -exec cat {{}} + >/dev/null",
            "diagnose": f"'{binary}' diagnose '{conv}' --format json",
            "repair --dry-run": f"'{binary}' repair --dry-run --format json '{conv}'",
            "repair --dry-run --unsafe-fixes":
                f"'{binary}' repair --dry-run --unsafe-fixes --format json '{conv}'",
        }
        for c in cmds.values():
            timed(c)
        got = {k: [] for k in cmds}
        for _ in range(runs):
            for k, c in cmds.items():
                got[k].append(timed(c))
        floor = min(w for w, _ in got["cat (floor)"])
        diag = min(w for w, _ in got["diagnose"])
        diag_cpu = min(c for _, c in got["diagnose"])
        print(f"{n} events (gap in the middle, 2 cut off):")
        for k, v in got.items():
            wall, cpu = min(w for w, _ in v), min(c for _, c in v)
            print(f"  {k:34s} wall {wall:8.3f} s ({wall / floor:5.2f}x floor, "
                  f"{wall / diag:5.2f}x diagnose)  CPU {cpu:8.3f} s ({cpu / max(diag_cpu, 1e-9):5.2f}x)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
