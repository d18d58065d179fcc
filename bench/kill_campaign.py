#!/usr/bin/env python3
"""Kill `repair` with SIGKILL at random moments and check that nothing is lost.

    bench/kill_campaign.py BIN [--trials 500] [--copies 20] [--seed 1]

The store is `--copies` copies of every folder of fixtures/manifest.json (the
real-SDK fixtures: false roots, index gaps, head lag, meta.json drift,
misparented recovery errors, unknown kinds, truncated events, live leases...).
A reference run repairs one copy to the end (`repair --unsafe-fixes`, so the
quarantine/renumber repairs, which touch many files, are in it too) and times
itself. Each trial copies the store, starts the same repair, kills it with
SIGKILL after a delay drawn uniformly from [0, 1.2 x the reference time], and
then checks, on two copies of what the kill left:

  re-run    `repair --unsafe-fixes` run again to the end leaves every
            conversation exactly as the reference run did (names, bytes,
            modes), except those the killed run left half-made: they carry
            its journal (`.convo-doctor-repair.json`, `interrupted-repair`),
            and the re-run must refuse them and leave them as they are;
  undo      `undo RUN-ID` (when the run got far enough to write a manifest)
            brings back every conversation as it was before the repair: the
            same file names, bytes and modes, no journal left; and a repair
            run after it gives the reference result.

Files convo-doctor itself leaves behind when killed mid-write
(`.convo-doctor-*.tmp`: the SDK lists only `event-*.json`) are counted and
reported, not treated as damage; any other difference is a failure, printed with
its trial's seed so it can be replayed. Writes only under a temporary directory.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TMP_MARK = ".convo-doctor-"
JOURNAL = ".convo-doctor-repair.json"


def tree(d: Path) -> dict:
    """{relative path: (mode, bytes)} of every file, temp leftovers apart."""
    out, temps = {}, []
    for p in sorted(d.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        rel = str(p.relative_to(d))
        if p.name.startswith(TMP_MARK) and p.name.endswith(".tmp"):
            temps.append(rel)
            continue
        out[rel] = (p.stat().st_mode & 0o7777, p.read_bytes())
    return out, temps


def diff(a: dict, b: dict) -> list[str]:
    lines = []
    for k in sorted(set(a) | set(b)):
        if k not in a:
            lines.append(f"+ {k}")
        elif k not in b:
            lines.append(f"- {k}")
        elif a[k] != b[k]:
            what = "mode" if a[k][1] == b[k][1] else "bytes"
            lines.append(f"~ {k} ({what})")
    return lines


def build_store(dst: Path, copies: int) -> None:
    manifest = json.loads((ROOT / "fixtures/manifest.json").read_text())
    names = [f["name"] if isinstance(f, dict) else f for f in manifest.get("fixtures", manifest)]
    for name in names:
        src = ROOT / "fixtures" / name
        if not src.is_dir():
            continue
        for conv in src.iterdir():
            if not conv.is_dir():
                continue
            for i in range(copies):
                shutil.copytree(conv, dst / f"{name}-{i}" / conv.name, symlinks=True)


def run_id(stdout: str) -> str | None:
    for line in stdout.splitlines():
        if "undo with `" in line:
            return line.split("`")[1].split()[-1].strip("'")
    return None


def repair(binary: str, store: Path, backups: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary, "repair", "--unsafe-fixes", "--backup-dir", str(backups), str(store)],
        capture_output=True, text=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    work = Path(tempfile.mkdtemp(prefix="killcampaign-"))
    try:
        pristine = work / "pristine"
        build_store(pristine, a.copies)
        before, _ = tree(pristine)
        ref = work / "ref"
        shutil.copytree(pristine, ref, symlinks=True)
        t0 = time.monotonic()
        r = repair(binary, ref, work / "ref-backups")
        ref_secs = time.monotonic() - t0
        if r.returncode not in (0, 1):
            print(r.stdout, r.stderr, file=sys.stderr)
            return 2
        after, _ = tree(ref)
        changed = len(diff(before, after))
        print(f"store: {len(before)} files; the reference repair changes {changed} paths "
              f"in {ref_secs * 1000:.0f} ms")
        rng = random.Random(a.seed)
        stats = {"killed": 0, "finished": 0, "no-manifest": 0, "undone": 0,
                 "rerun": 0, "journaled": 0, "temps-left": 0, "failures": 0}
        for t in range(a.trials):
            delay = rng.uniform(0, 1.2 * ref_secs)
            d = work / "t"
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(pristine, d / "store", symlinks=True)
            store, backups = d / "store", d / "backups"
            p = subprocess.Popen(
                [binary, "repair", "--unsafe-fixes", "--backup-dir", str(backups), str(store)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            time.sleep(delay)
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                stats["killed"] += 1
            else:
                stats["finished"] += 1
            out, _ = p.communicate()
            left, temps = tree(store)
            if temps:
                stats["temps-left"] += 1
            problems = []
            # re-run to the end, on a copy of what the kill left: a
            # conversation with the journal is refused and left as it is
            conv = lambda rel: "/".join(rel.split("/")[:2])
            journaled = {conv(k) for k in left if k.endswith("/" + JOURNAL)}
            if journaled:
                stats["journaled"] += 1
            expected = {k: v for k, v in after.items() if conv(k) not in journaled}
            expected.update({k: v for k, v in left.items() if conv(k) in journaled})
            rerun = d / "rerun"
            shutil.copytree(store, rerun, symlinks=True)
            r = repair(binary, rerun, d / "rerun-backups")
            got, _ = tree(rerun)
            bad = diff(expected, got)
            if bad:
                problems.append(("re-run differs from the reference", bad))
            else:
                stats["rerun"] += 1
            # undo the killed run (its id: from stdout, else the one run folder)
            rid = run_id(out)
            if rid is None and backups.is_dir():
                runs = [x.name for x in backups.iterdir() if (x / "manifest.json").exists()]
                rid = runs[0] if len(runs) == 1 else None
            if rid is None:
                stats["no-manifest"] += 1
                bad = diff(before, left)
                if bad:
                    problems.append(("changed with no manifest to undo it", bad))
            else:
                u = subprocess.run([binary, "undo", "--backup-dir", str(backups), rid],
                                   capture_output=True, text=True)
                got, _ = tree(store)
                bad = diff(before, got)
                if bad or u.returncode != 0:
                    problems.append((f"undo (exit {u.returncode}) differs from the original",
                                     bad + u.stdout.splitlines()[-5:]))
                else:
                    stats["undone"] += 1
                    repair(binary, store, d / "again-backups")
                    got, _ = tree(store)
                    bad = diff(after, got)
                    if bad:
                        problems.append(("undo, then repair, differs from the reference", bad))
            if problems:
                stats["failures"] += 1
                print(f"trial {t} (seed {a.seed}, delay {delay * 1000:.1f} ms):")
                for what, lines in problems:
                    print(f"  {what}:")
                    for line in lines[:12]:
                        print(f"    {line}")
        print(json.dumps(stats))
        return 1 if stats["failures"] else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
