"""Fuzz throughput by runner: 1 worker (in process), 2 local worker processes, Dask LocalCluster of 2.

    python bench/batch_bench.py [--examples 200] [--seed 139763] [--corpus]

Each runner runs the same `verilocc fuzz --examples N --seed S` command (wall time of the
whole command, start-up and cluster start included) and must print the same summary; the
table gives examples per second. `--corpus` also times `verilocc verify DIR` over
../shared/corpus with the same three runners (the same JSON lines required).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
RUNNERS = (("1 worker (in process)", ["--jobs", "1"]), ("2 local processes", ["--jobs", "2"]),
           ("Dask LocalCluster, 2 workers", ["--dask", "--jobs", "2"]))


def timed(command: list[str]) -> tuple[float, bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # start as an installed verilocc starts
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "verilocc", *command], capture_output=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr.decode()}")
    return seconds, done.stdout


def table(title: str, unit: str, count: int, base: list[str], use_corpus: bool = False) -> None:
    print(f"\n{title}\n\n| runner | command | seconds | {unit} per second |\n|---|---|---:|---:|")
    outputs = set()
    for name, extra in RUNNERS:
        seconds, out = timed(base + extra)
        outputs.add(out)
        shown = " ".join(["verilocc", *base, *extra]).replace(str(CORPUS), "../shared/corpus") if use_corpus \
            else " ".join(["verilocc", *base, *extra])
        print(f"| {name} | `{shown}` | {seconds:.1f} | {count / seconds:.2f} |", flush=True)
    if len(outputs) != 1:
        sys.exit("the runners printed different results")
    print("\nevery runner printed the same bytes")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--examples", type=int, default=200)
    p.add_argument("--seed", type=int, default=139763)
    p.add_argument("--corpus", action="store_true", help="also verify ../shared/corpus as a batch")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as save:
        table(f"verilocc fuzz, {args.examples} examples from seed {args.seed}", "examples", args.examples,
              ["fuzz", "--examples", str(args.examples), "--seed", str(args.seed), "--save", save])
    if args.corpus:
        pairs = len(list(CORPUS.rglob("*.post.mir")))
        table(f"verilocc verify over ../shared/corpus ({pairs} pairs)", "pairs", pairs,
              ["verify", str(CORPUS), "--format", "jsonl"], use_corpus=True)


if __name__ == "__main__":
    main()
