"""`certcheck DIR` / `python -m certcheck DIR`: exit 0 accepted, 1 refused, 2 unreadable input."""

from __future__ import annotations

import argparse
import sys

from certcheck.check import Unreadable, check


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="certcheck", description="Independently check a verilocc certificate: the two "
                                 "MIR files, the witnesses and the SMT-LIB obligations (z3 and cvc5 must both answer "
                                 "unsat). Exit codes: 0 accepted, 1 refused, 2 unreadable input.")
    ap.add_argument("directory", metavar="DIR")
    ap.add_argument("--input-root", metavar="DIR", help="resolve the recorded relative input paths under DIR")
    ap.add_argument("--pre", metavar="PRE.mir", help="the virtual program instead of the recorded path")
    ap.add_argument("--post", metavar="POST.mir", help="the allocated program instead of the recorded path")
    ap.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per obligation and solver")
    ap.add_argument("-q", "--quiet", action="store_true", help="print the verdict only")
    args = ap.parse_args(argv)
    overrides = {k: v for k, v in (("pre", args.pre), ("post", args.post)) if v}
    try:
        res = check(args.directory, input_root=args.input_root, overrides=overrides, timeout_s=args.timeout)
    except Unreadable as e:
        print(" ".join(str(e).split()), file=sys.stderr)
        return 2
    if not args.quiet:
        for line in res.lines:
            print(line)
        for u in res.uncovered:
            print(f"not covered: {u}")
    print(f"{res.verdict} ({res.seconds:.2f} s)")
    return 1 if res.refused else 0


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
