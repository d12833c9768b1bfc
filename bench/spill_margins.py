"""One spill margin per kind of value against one for all, on the spill ladders' programs.

The SMT allocator and the model loop start from the program with spill code that the spill
ladders colour (`verilocc.allocators.optimal.coloured_spill_program`). A colouring that leaves
values without a register asks the spiller for room below the budget; with a margin per kind
(the default) it asks only for the kinds of the values it left out (vector or SGPR), with one
margin (`per_kind=False`) for both; in both forms the bisection that fills the budget once a
program colours runs per kind. This bench runs both, in one run, on corpus kernels whose
pre files are given tight ``"amdgpu-num-sgpr"`` and ``"amdgpu-num-vgpr"`` requests, and prints
per setting the spill instructions of the coloured program (none: no ladder colours one, the
SMT allocator then asks z3), its homes, stack slots and seconds:

    python bench/spill_margins.py                       # the set below, ../shared/corpus
    python bench/spill_margins.py --corpus DIR --markdown bench/results/spill-margins.md
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verilocc.allocators.optimal import coloured_spill_program  # noqa: E402
from verilocc.allocators.problem import allocation_budget  # noqa: E402
from verilocc.allocators.spill import CannotSpill  # noqa: E402
from verilocc.mir.parser import parse_module  # noqa: E402
from verilocc.verify import function_target  # noqa: E402

KERNELS = ("gfx90a/sgemm_64x64_t4x4", "gfx90a/softmax_row", "gfx90a/sgemm_naive", "gfx90a/sgemm_128x64_t8x4",
           "gfx942/sgemm_64x64_t4x4", "gfx1100/sgemm_64x64_t4x4", "gfx1100/softmax_row")
#: ("amdgpu-num-sgpr", "amdgpu-num-vgpr") requests
SETTINGS = ((16, 16), (16, 24), (24, 16), (12, 20))


def run(text: str, name: str, sgprs: int, vgprs: int, per_kind: bool) -> tuple[str, float]:
    attrs = f'"amdgpu-num-sgpr"="{sgprs}" "amdgpu-num-vgpr"="{vgprs}" '
    mod = parse_module(re.sub(r'"target-cpu"=', lambda m: attrs + m.group(0), text, count=1), name)
    fn = mod.functions[0]
    target = function_target(fn, None, mod.file)
    start = time.process_time()
    try:
        got = coloured_spill_program(fn, target, allocation_budget(fn, target), per_kind=per_kind)
    except CannotSpill:
        got = None
    seconds = time.process_time() - start
    if got is None:
        return "none", seconds
    spilled = got[0]
    homes = ", ".join(f"{n} {h}" for h, n in sorted({h: list(spilled.homes.values()).count(h)
                                                     for h in set(spilled.homes.values())}.items()))
    return f"{spilled.inserted} ({homes or 'no homes'}; {len(set(spilled.slots.values()))} slots)", seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    lines = ["| kernel | num-sgpr, num-vgpr | one margin: spill instructions | per kind | CPU s (one / per kind) |",
             "|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    counts = {"better": 0, "same": 0, "worse": 0, "newly coloured": 0, "lost": 0, "neither": 0}
    for kernel in KERNELS:
        text = (args.corpus / f"{kernel}.pre.mir").read_text()
        for sgprs, vgprs in SETTINGS:
            one, t1 = run(text, f"{kernel}.pre.mir", sgprs, vgprs, False)
            kind, t2 = run(text, f"{kernel}.pre.mir", sgprs, vgprs, True)
            a, b = (None if x == "none" else int(x.split()[0]) for x in (one, kind))
            counts["neither" if a is None and b is None else "newly coloured" if a is None else "lost" if b is None
                   else "better" if b < a else "worse" if b > a else "same"] += 1
            line = f"| {kernel} | {sgprs}, {vgprs} | {one} | {kind} | {t1:.1f} / {t2:.1f} |"
            lines.append(line)
            print(line, flush=True)
    summary = ", ".join(f"{k}: {v}" for k, v in counts.items())
    print(summary)
    if args.markdown:
        head = ("<!-- python bench/spill_margins.py --markdown bench/results/spill-margins.md "
                "(docs/allocate.md, \"One margin per kind\") -->\n\n")
        args.markdown.write_text(head + "\n".join(lines) + f"\n\nPer kind against one margin: {summary}.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
