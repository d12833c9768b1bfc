"""Seconds per proposal: the greedy unconstrained proposal `verilocc eval` times, for some pre
files and models, each decoded `--runs` times in one process on one thread, models taking turns
per file, so that their ratio is measured in one run on the same machine load.

    python bench/model_eval/decode_seconds.py [--model DIR ...] [--runs 3] PRE.mir [PRE.mir ...]

Without `--model`, the shipped model. Prints a Markdown table: file, virtual registers, model,
the seconds of each run and their median.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from verilocc.llm.choices import ChoiceTables
from verilocc.llm import DEFAULT_MODEL
from verilocc.llm.decode import propose_many
from verilocc.llm.lm import load_lm
from verilocc.llm.problem import build_problem, single_function
from verilocc.mir.parser import read_module
from verilocc.verify import function_target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pre", nargs="+", help="pre-allocation MIR files (one function each)")
    ap.add_argument("--model", action="append", help="a model directory (repeatable; default the shipped one)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    import torch

    torch.set_num_threads(1)
    models = {m: load_lm(m) for m in args.model or [str(DEFAULT_MODEL)]}
    print("| file | virtual registers | model | seconds per run | median |")
    print("|---|---:|---|---|---:|")
    for pre in args.pre:
        module = read_module(Path(pre))
        fn = single_function(module)
        problem = build_problem(fn, function_target(fn, None, module.file))
        tables = ChoiceTables(problem)
        for name, lm in models.items():
            runs = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                propose_many(lm, problem, samples=1, constrained=False, tables=tables, greedy_first=True, seed=0)
                runs.append(time.perf_counter() - t0)
            print(f"| {pre} | {len(fn.registers)} | {name} | {' '.join(f'{s:.2f}' for s in runs)} | "
                  f"{statistics.median(runs):.2f} |")


if __name__ == "__main__":
    main()
