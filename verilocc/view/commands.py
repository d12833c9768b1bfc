"""`verilocc show`: the command line around `verilocc.view.show`."""

from __future__ import annotations

import argparse

from verilocc.options import add_check_options, check_timeout


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "show",
        help="draw an allocation: register occupancy, pressure, resources and findings (HTML page or PNG)",
        description="Verify an allocation (all layers with --pre) and draw it: per function a grid of physical "
        "registers (SGPRs, VCC, VGPRs, AGPRs) against the instructions in layout order, each cell coloured by the "
        "virtual register it holds (without --pre: by the instruction that wrote it), spills and reloads marked; "
        "the pressure curve with the budget and the waves/SIMD thresholds; a resource summary; every finding on "
        "the grid (the overwritten registers red at the overwriting instruction, the reader marked). -o X.html "
        "writes one self-contained page (no network), -o X.png a figure (needs matplotlib: the `view` extra). "
        "Exit codes: 0 written (whatever the verdict), 2 bad input.",
    )
    s.add_argument("alloc", metavar="ALLOC.mir", help="the allocated program (post-RA MIR)")
    s.add_argument("--pre", metavar="PRE.mir", help="the virtual-register program it was allocated from")
    s.add_argument("--function", metavar="NAME", help="only this function")
    s.add_argument("--compare", metavar="OTHER.mir",
                   help="a second allocation of the same kernel (e.g. greedy's and the model's), drawn beside the first")
    s.add_argument("-o", "--output", required=True, metavar="VIEW.html|VIEW.png", help="the page or the figure")
    add_check_options(s)
    s.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from verilocc.verify import Options
    from verilocc.view.show import show

    check_timeout(args.timeout)
    opts = Options(mcpu=args.mcpu, layers=args.layers, timeout_s=args.timeout, seed=args.seed)
    return show(args.alloc, args.pre, args.output, function=args.function, compare=args.compare, opts=opts)
