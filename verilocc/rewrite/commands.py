"""`verilocc materialise`: the command line around `verilocc.rewrite`."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("materialise", help="apply an assignment to a pre-RA MIR file and print the post-RA MIR",
                       description="Rewrite every virtual register of PRE.mir to its assigned physical register, drop "
                       "identity copies and list each block's live-in registers, as llc -start-after=virtregrewriter "
                       "wants them. The output is not verified here: run `verilocc verify OUT --pre PRE.mir`.")
    m.add_argument("pre", metavar="PRE.mir")
    m.add_argument("--assignment", required=True, metavar="FILE")
    m.add_argument("-o", "--output", metavar="FILE", help="output MIR (default stdout)")
    m.set_defaults(func=cmd_materialise)


def cmd_materialise(args: argparse.Namespace) -> int:
    from verilocc.mir.parser import read_module
    from verilocc.mir.printer import print_module
    from verilocc.output import write_output
    from verilocc.rewrite.assignment import materialise, read_assignment
    from verilocc.rewrite.finish import finish_for_llc

    pre = read_module(args.pre)
    asg = read_assignment(args.assignment)
    post, findings = materialise(pre, asg)
    for f in findings:
        print(f"{f.place.file}:{f.place.line}: error: {f.message}", file=sys.stderr)
    if findings:
        return 1
    for pre_fn, post_fn in zip(pre.functions, post.functions):
        finish_for_llc(pre_fn, post_fn, asg.regs)  # block live-ins, as llc -start-after wants them
    write_output(args.output, print_module(post), [args.pre, args.assignment])
    return 0
