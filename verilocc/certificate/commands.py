"""`verilocc recheck`: the command line around `verilocc.certificate.recheck`."""

from __future__ import annotations

import argparse
import sys

from verilocc.errors import EXIT_BAD_INPUT
from verilocc.options import check_timeout


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser(
        "recheck",
        help="re-check a certificate with cvc5 and the independent checker certcheck",
        description="Re-hash the inputs and obligations of a certificate written by `verify --certificate` and "
        "decide every obligation with cvc5; each must be unsat. Then certcheck, which shares no code with verilocc, "
        "re-checks the witnesses against the two MIR files and decides every obligation with z3 and cvc5; it lists "
        "the claims it does not cover. Input paths are read as recorded (relative to the current directory), under "
        "--input-root, or as given by --post/--pre/--assignment. Exit codes: 0 re-checked, 1 a problem (changed or "
        "missing file, extra obligation, sat, unknown or timeout, or certcheck refused), 2 unreadable certificate.",
    )
    r.add_argument("directory", metavar="DIR", help="the certificate directory")
    r.add_argument("--input-root", metavar="DIR", help="resolve the recorded relative input paths under DIR")
    r.add_argument("--post", metavar="ALLOC.mir", help="the allocated program to hash instead of the recorded path")
    r.add_argument("--pre", metavar="PRE.mir", help="the virtual program to hash instead of the recorded path")
    r.add_argument("--assignment", metavar="FILE", help="the assignment to hash instead of the recorded path")
    r.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="cvc5 time limit per obligation (default 60)")
    r.set_defaults(func=cmd_recheck)


def cmd_recheck(args: argparse.Namespace) -> int:
    from rich.console import Console

    from verilocc.certificate.obligation import CertificateError
    from verilocc.certificate.recheck import recheck, render

    check_timeout(args.timeout)
    overrides = {role: p for role, p in (("post", args.post), ("pre", args.pre), ("assignment", args.assignment)) if p}
    try:
        res = recheck(args.directory, input_root=args.input_root, overrides=overrides, timeout_s=args.timeout)
    except CertificateError as e:
        print(f"{args.directory}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    render(res, args.directory, Console(highlight=False, soft_wrap=True))
    return max(0 if res.ok else 1, _certcheck(args, overrides))


def _certcheck(args: argparse.Namespace, overrides: dict[str, str]) -> int:
    """The independent checker (`certcheck`, which shares no code with verilocc) on the same
    certificate: its witnesses against the two MIR files, its obligations with z3 and cvc5."""
    from certcheck.check import Unreadable, check

    roles = {i.get("role") for i in _inputs(args.directory)}
    if roles != {"pre", "post"}:
        print("certcheck: not run: the certificate names no allocated MIR file (an assignment certificate)")
        return 0
    try:
        res = check(args.directory, input_root=args.input_root,
                    overrides={k: v for k, v in overrides.items() if k in ("pre", "post")}, timeout_s=args.timeout)
    except Unreadable as e:
        print(f"certcheck: {' '.join(str(e).split())}")
        return 1
    for line in res.lines:
        print(f"certcheck: {line}")
    print(f"certcheck: {res.verdict} ({res.seconds:.2f} s)")
    return 1 if res.refused else 0


def _inputs(directory: str) -> list[dict[str, object]]:
    import json
    from pathlib import Path

    m = json.loads((Path(directory) / "certificate.json").read_text(encoding="utf-8"))
    return [i for i in m["inputs"] if isinstance(i, dict)]
