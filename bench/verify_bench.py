#!/usr/bin/env python3
"""Benchmark: `verilocc verify` beside `llc -run-pass=none -verify-machineinstrs`, one run.

For each pair (default: the largest corpus kernel, gfx90a/fa_d128_kv4, and a few smaller ones)
this runs both commands in child processes, `--repeat` times each, and prints a table of the
median wall time and the peak resident memory (from wait4) of each, their ratio, and where
verilocc's time goes (seconds per layer, from its own `--timings` JSON).

    python bench/verify_bench.py [--repeat 3] [--llc llc-19] [PAIR ...]

PAIR is `<target>/<kernel>` under ../shared/corpus. Ratios are measured in this one run on
this machine; compare them, not the absolute numbers, across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from verilocc.mir.parser import read_module  # noqa: E402
CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT_PAIRS = ["gfx90a/fa_d128_kv4", "gfx1100/fa_d128_kv4", "gfx942/sgemm_256x128_t16x8", "gfx90a/sgemm_naive"]


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MiB, stdout) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024.0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", nargs="*", default=DEFAULT_PAIRS, metavar="PAIR")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--llc", default="llc-19")
    args = ap.parse_args()
    verilocc = [sys.executable, "-m", "verilocc.cli"]
    llc = shutil.which(args.llc)
    rows = []
    for pair in args.pairs:
        post, pre = CORPUS / f"{pair}.post.mir", CORPUS / f"{pair}.pre.mir"
        if not post.exists():
            print(f"skip {pair}: {post} not found", file=sys.stderr)
            continue
        v_runs = [measure([*verilocc, "verify", str(post), "--pre", str(pre), "--format", "json", "--timings"])
                  for _ in range(args.repeat)]
        doc = json.loads(v_runs[-1][2])
        stats = doc["functions"][0]["stats"]
        l_runs = ([measure([llc, "-mtriple=amdgcn-amd-amdhsa", "-run-pass=none", "-verify-machineinstrs", str(post),
                            "-o", os.devnull]) for _ in range(args.repeat)] if llc else [])
        vw, vm = statistics.median(r[0] for r in v_runs), max(r[1] for r in v_runs)
        lw = statistics.median(r[0] for r in l_runs) if l_runs else float("nan")
        lm = max(r[1] for r in l_runs) if l_runs else float("nan")
        instrs = sum(len(b.instructions) for f in read_module(post).functions for b in f.blocks)
        rows.append((pair, instrs, doc["verdict"], vw, vm, lw, lm, stats))
    header = (f"{'pair':28} {'instrs':>6} {'verdict':9} {'verilocc s':>10} {'MiB':>6} {'llc s':>7} {'MiB':>6} "
              f"{'time x':>7} {'mem x':>6}  {'prepare':>7} {'constr':>7} {'vflow':>7} {'equiv':>7} {'z3':>6}")
    print(header)
    print("-" * len(header))
    for pair, instrs, verdict, vw, vm, lw, lm, st in rows:
        print(f"{pair:28} {instrs:6d} {verdict:9} {vw:10.2f} {vm:6.0f} {lw:7.3f} {lm:6.0f} {vw / lw:7.1f} {vm / lm:6.1f}  "
              f"{st.get('seconds_prepare', 0):7.2f} {st.get('seconds_constraints', 0):7.2f} "
              f"{st.get('seconds_value_flow', 0):7.2f} {st.get('seconds_equivalence', 0):7.2f} "
              f"{st.get('solver_seconds', 0):6.2f}")
    print(f"\nmedian of {args.repeat} runs; verilocc runs all three layers (--pre); llc = {llc or 'not found'};"
          " prepare..equiv = verilocc's own seconds per layer (parse and start-up not included).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
