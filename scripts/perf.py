#!/usr/bin/env python3
"""Simulator speed on the golden workloads (tests/golden/compiler/*.hlo): docs/perf.md's table.

    cargo build --release -p cli
    python3 scripts/perf.py [--arch tpu-v4] [--repeat 3] [--systole target/release/systole]

For each workload, timing-only (`run --timing-only`) and functional (`run --random 0`, outputs
checked against the evaluator), both with `--f32-dot-passes 6`: the simulated cycles, the
simulator's own wall time (the `simulated in S s` line, best of --repeat runs), simulated cycles
per host second, and the whole command's wall time (parse, compile, simulate and, functional,
the evaluator's reference run; best of --repeat). Prints a Markdown table. Python standard
library only.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_once(systole, hlo, arch, functional, report):
    args = [systole, "run", str(hlo), "--arch", arch, "--report", report, "--f32-dot-passes", "6"]
    if functional:
        args += ["--random", "0"]
    else:
        args += ["--timing-only"]
    t0 = time.perf_counter()
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    m = re.search(r"simulated in ([0-9.]+) s", p.stderr)
    if p.returncode not in (0, 1) or not m:
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    with open(report) as f:
        cycles = json.load(f)["cycles"]
    status = "ok" if p.returncode == 0 else "outputs differ"
    return (cycles, float(m.group(1)), wall, status), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="tpu-v4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--systole", default=str(ROOT / "target" / "release" / "systole"))
    a = ap.parse_args()
    if not os.path.exists(a.systole):
        sys.exit(f"{a.systole}: not built (cargo build --release -p cli)")
    files = sorted((ROOT / "tests" / "golden" / "compiler").glob("*.hlo"))
    report = os.path.join(tempfile.mkdtemp(), "r.json")
    print(f"| workload | mode | cycles | sim s | Mcycles/s | command s |")
    print(f"|---|---|---:|---:|---:|---:|")
    totals = {False: [0, 0.0], True: [0, 0.0]}
    for hlo in files:
        for functional in (False, True):
            best, err = None, None
            for _ in range(a.repeat):
                r, err = run_once(a.systole, hlo, a.arch, functional, report)
                if r is None:
                    break
                if best is None:
                    best = list(r)
                else:
                    best[1] = min(best[1], r[1])
                    best[2] = min(best[2], r[2])
            mode = "functional" if functional else "timing-only"
            if best is None:
                print(f"| {hlo.stem} | {mode} | error: {err} | | | |")
                continue
            cycles, sim, wall, status = best
            totals[functional][0] += cycles
            totals[functional][1] += sim
            rate = cycles / sim / 1e6 if sim > 0 else float("inf")
            note = "" if status == "ok" else f" ({status})"
            print(f"| {hlo.stem} | {mode}{note} | {cycles} | {sim:.6f} | {rate:.3g} | {wall:.3f} |")
    for functional, (cy, s) in totals.items():
        mode = "functional" if functional else "timing-only"
        print(f"| **all** | {mode} | {cy} | {s:.6f} | {cy / s / 1e6 if s else 0:.3g} | |")


if __name__ == "__main__":
    main()
