#!/usr/bin/env python3
"""convo-doctor against the in-process read floor, one table (issue 27).

    bench/speed.py [BIN ...]             (default: target/release/convo-doctor)

Inputs (made with bench/gen.py under BENCH_DIR, default
/var/tmp/convo-doctor-bench, on first use): `seed` (one conversation, 5,570
events), `store-2k` (2,000 conversations), `long-100k` and `long-1m` (one
tree-era conversation of 99,997 and 999,997 events). SIZES picks some, e.g.
SIZES=seed,long-100k; LONG=300000 replaces long-1m by a log of that size
when the disk is short (about 5 KB of disk per event).

The floor is bench/floor.rs (compiled here with rustc -O): it lists the
folders and opens and reads every file to its end on the same number of
threads, parsing nothing. Each round runs, interleaved on the same files, the
floor and `BIN diagnose DIR --format json --fail-on never`, both with -j J
for each J of JOBS (default: the number of cores, then 1). One unmeasured
run of each warms the page cache; then RUNS rounds (default 5; 3 for the
1,000,000-event log). Several BINs (a build from before a change and one
from after) are interleaved in the same rounds, one row each. Prints the median wall time, the median CPU
(user+sys) and the largest peak RSS of each, read per process from wait4;
and, per event, the bytes of peak memory convo-doctor holds beyond the floor.

`REPAIR=1` also times `repair --dry-run --unsafe-fixes --format json` on the
long logs (nothing is written), as a ratio to diagnose.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(argv):
    """(wall s, cpu s, peak RSS bytes) of one process, stdout and stderr discarded."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = 0
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024


def gen(bench, name, args):
    meta = bench / f"{name}.json"
    if not meta.exists():
        print(f"generating {name} ...", file=sys.stderr, flush=True)
        subprocess.run(["rm", "-rf", str(bench / name)], check=True)
        out = subprocess.run([sys.executable, str(HERE / "gen.py"), str(ROOT / "fixtures"),
                              str(bench / name), *args], check=True, capture_output=True,
                             text=True).stdout
        meta.write_text(out)
    info = json.loads(meta.read_text())
    if "conversation" in info:
        return info["conversation"], info["events"]
    return str(bench / name), info["events"]


def main():
    binaries = sys.argv[1:] or [str(ROOT / "target/release/convo-doctor")]
    bench = Path(os.environ.get("BENCH_DIR", "/var/tmp/convo-doctor-bench"))
    bench.mkdir(parents=True, exist_ok=True)
    long = int(os.environ.get("LONG", 1000000))
    inputs = {
        "seed": ("one conversation, seed shape", ["seed"]),
        "store-2k": ("2,000 conversations", ["store", "2000", "1"]),
        "long-100k": ("one conversation", ["long", "100000"]),
        "long-1m" if long == 1000000 else f"long-{long}": ("one conversation", ["long", str(long)]),
    }
    wanted = os.environ.get("SIZES")
    if wanted:
        inputs = {k: v for k, v in inputs.items() if k in wanted.split(",")}
    ncpu = os.cpu_count() or 1
    jobs = [int(j) for j in os.environ.get("JOBS", f"{ncpu},1").split(",")]
    floor = bench / "read-floor"
    subprocess.run(["rustc", "-O", "--edition", "2021", str(HERE / "floor.rs"), "-o", str(floor)],
                   check=True)
    repair = os.environ.get("REPAIR") == "1"
    print(f"machine: {ncpu} cores, load average {os.getloadavg()[0]:.1f} at start; "
          f"{', '.join(binaries)}; medians")
    print()
    print("| input | events | -j | build | floor wall | floor CPU | floor peak RSS "
          "| diagnose wall | CPU | peak RSS | wall ÷ floor | RSS beyond floor per event |"
          + (" repair --dry-run --unsafe-fixes wall (÷ diagnose) |" if repair else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if repair else ""))
    for name, (label, args) in inputs.items():
        d, events = gen(bench, name, args)
        runs = int(os.environ.get("RUNS", 3 if events > 500000 else 5))
        for j in jobs:
            cmds = {"floor": [str(floor), "-j", str(j), d]}
            for b in binaries:
                cmds[("diagnose", b)] = [b, "diagnose", d, "--format", "json", "--fail-on",
                                         "never", "-j", str(j)]
                if repair and name.startswith("long"):
                    cmds[("repair", b)] = [b, "repair", "--dry-run", "--unsafe-fixes", "--format",
                                           "json", "-j", str(j), d]
            got = {k: [] for k in cmds}
            for c in cmds.values():
                run(c)
            for _ in range(runs):
                for k, c in cmds.items():
                    got[k].append(run(c))
            med = {k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v),
                       max(r for _, _, r in v)) for k, v in got.items()}
            fw, fc, fr = med["floor"]
            for b in binaries:
                dw, dc, dr = med[("diagnose", b)]
                row = (f"| {name} ({label}) | {events:,} | {j} | {Path(b).name} | {fw:.3f} s | "
                       f"{fc:.3f} s | {fr / 2**20:.1f} MiB | {dw:.3f} s | {dc:.3f} s | "
                       f"{dr / 2**20:.1f} MiB | {dw / fw:.2f}× | {(dr - fr) / events:.0f} B |")
                if ("repair", b) in med:
                    rw = med[("repair", b)][0]
                    row += f" {rw:.3f} s ({rw / dw:.2f}×) |"
                print(row, flush=True)


if __name__ == "__main__":
    main()
