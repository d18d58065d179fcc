#!/usr/bin/env python3
"""Time convo-doctor against the `cat` floor of the same files, interleaved.

    bench/floor.py DIR BIN [BIN ...]      (N=9 runs each by default)

Each round runs the floor (`find DIR -type f -exec cat {} + >/dev/null`),
then `BIN diagnose DIR --format json` and the same with `-j1`, for every BIN
(e.g. a build from before a change and one from after), so a change of load
on a shared machine hits them all alike. One unmeasured run of each first
warms the page cache. Prints the fastest wall time of each and its ratio to
the floor's, and the least CPU (user+sys, from the children's rusage).

PTY=1 runs each diagnose under util-linux `script`, so that its stderr is a
terminal and the progress bar (and its counting thread) is drawn, stdout still
going to /dev/null; the times then include `script`'s own start-up.
"""

import os
import resource
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    d, bins = sys.argv[1], sys.argv[2:]
    n = int(os.environ.get("N", 9))
    cmds = {"cat (floor)": f"find '{d}' -type f -exec cat {{}} + >/dev/null"}
    pty = os.environ.get("PTY") == "1"
    for b in bins:
        for label, extra in ((b, ""), (b + " -j1", " -j1")):
            c = f"'{b}' diagnose '{d}' --format json{extra} >/dev/null"
            if pty:
                c = f"script -qec \"{c}\" /dev/null </dev/null >/dev/null"
                label += " (bar)"
            cmds[label] = c
    runs = {k: [] for k in cmds}
    for c in cmds.values():
        subprocess.run(c, shell=True, stderr=subprocess.DEVNULL)
    for _ in range(n):
        for k, c in cmds.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(c, shell=True, stderr=subprocess.DEVNULL)
            wall = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            runs[k].append((wall, cpu))
    floor = min(w for w, _ in runs["cat (floor)"])
    for k, v in runs.items():
        wall, cpu = min(w for w, _ in v), min(c for _, c in v)
        print(f"{k:44s} wall {wall * 1000:7.1f} ms ({wall / floor:.2f}x)  CPU {cpu * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
