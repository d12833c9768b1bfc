"""SMT allocation (`verilocc allocate --solver`) against LLVM's greedy allocator, per corpus kernel.

For every ``../shared/corpus/<gfx>/<kernel>.pre.mir`` it runs `solve_function` with a per-kernel
time limit and prints one row: registers LLVM's greedy allocator used (its ``.post.mir``:
VGPR+AGPR, SGPR, waves per SIMD on that target) beside the SMT allocation's, the seconds, and
whether optimality was proved. Greedy's post files may contain spill code; the SMT allocator
cannot spill, so a kernel over budget shows "needs spills". Usage is counted the same way for
both (`verilocc.allocators.optimal.register_usage`).

    .venv/bin/python bench/optimal_vs_greedy.py [--timeout 60] [--only gfx90a/vadd,...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verilocc.allocators.optimal import register_usage, solve_function
from verilocc.mir.parser import read_module
from verilocc.verify import function_target

CORPUS = ROOT.parent / "shared" / "corpus"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per kernel (default 60)")
    ap.add_argument("--objective", choices=("registers", "waves"), default="registers")
    ap.add_argument("--only", default="", help="comma-separated <gfx>/<kernel> names")
    args = ap.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    head = f"{'kernel':34} {'greedy v+a':>10} {'sgpr':>5} {'waves':>5} | {'smt v+a':>8} {'sgpr':>5} {'waves':>5} {'seconds':>8}  result"
    print(head)
    print("-" * len(head))
    for pre_path in sorted(CORPUS.glob("*/*.pre.mir")):
        name = f"{pre_path.parent.name}/{pre_path.name[: -len('.pre.mir')]}"
        if only and name not in only:
            continue
        pre = read_module(pre_path)
        fn = pre.functions[0]
        target = function_target(fn, None, pre.file)
        greedy = register_usage(read_module(pre_path.with_name(pre_path.name.replace(".pre.", ".post."))).functions[0], target)
        got = solve_function(fn, target, objective=args.objective, timeout=args.timeout)
        if got.status in ("optimal", "feasible"):
            u = got.usage
            smt = f"{u['vgpr'] + u['agpr']:>8} {u['sgpr']:>5} {u['waves']:>5}"
            result = "proved optimal" if got.status == "optimal" else "best found (not proved)"
        else:
            smt = f"{'-':>8} {'-':>5} {'-':>5}"
            result = {"infeasible": "needs spills", "unknown": "timeout" if "time" in got.reason or "gave up" in got.reason
                      else "unknown"}.get(got.status, got.status)
            result += f" ({got.reason[:90]})" if result == "unknown" or got.status == "unsupported" else ""
        print(f"{name:34} {greedy['vgpr'] + greedy['agpr']:>10} {greedy['sgpr']:>5} {greedy['waves']:>5} | {smt} "
              f"{got.seconds:>8.1f}  {result}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
