"""`verilocc fuzz`: the command line around `verilocc.fuzz`, whose chunks of examples run on
`verilocc.batch`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from verilocc.errors import InputError
from verilocc.options import add_runner_options


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    f = sub.add_parser(
        "fuzz",
        help="property-based fuzzing of the verifier against independent oracles",
        description="Generate random programs, allocate them with a reference allocator, permute and mutate the "
        "allocations, verify each and run it in a concrete interpreter. A VERIFIED allocation whose run differs "
        "(unsound), a correct one not VERIFIED, or a crash is a disagreement. Prints a JSON summary; exit 1 if "
        "there was any disagreement.",
    )
    f.add_argument("--examples", type=int, default=100, metavar="N", help="examples to generate (default 100)")
    f.add_argument("--seed", type=int, default=0, metavar="S", help="first seed (default 0)")
    f.add_argument("--mcpu", metavar="GFX[,GFX]", help="targets (default gfx908,gfx90a,gfx942,gfx1100; also "
                   "gfx950, gfx1200, gfx1030, gfx906, gfx803, gfx700, gfx600)")
    f.add_argument("--minutes", type=float, default=None, metavar="M", help="stop after M minutes")
    f.add_argument("--mutants", type=int, default=3, metavar="K", help="mutation operators tried per example")
    f.add_argument("--save", metavar="DIR", default="tests/fixtures/fuzz/found",
                   help="write each disagreeing pair here, shrunk, as a regression test that "
                   "tests/test_fuzz_regressions.py runs (default tests/fixtures/fuzz/found)")
    f.add_argument("--no-shrink", dest="shrink", action="store_false",
                   help="save disagreeing pairs as found, without deleting instructions first")
    add_runner_options(f, "worker processes (default 1)")
    f.set_defaults(func=cmd_fuzz)


def cmd_fuzz(args: argparse.Namespace) -> int:
    """Generate programs, allocate, mutate, verify and run them; count disagreements."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from verilocc.batch.run import run_chunks
    from verilocc.fuzz.chunks import examples, fuzz_chunk
    from verilocc.fuzz.oracle import Outcome, save_outcome, summarise
    from verilocc.fuzz.profiles import ALL_TARGETS, TARGETS

    targets = [t.strip() for t in (args.mcpu or ",".join(TARGETS)).split(",") if t.strip()]
    for t in targets:
        if t not in ALL_TARGETS:
            raise InputError(f"the fuzzer generates programs for {', '.join(ALL_TARGETS)}, not '{t}'", "--mcpu", 0, 0)
    console = Console(stderr=True, highlight=False)
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    outcomes: list[Outcome] = []
    saved: list[str] = []
    with Progress(TextColumn("fuzz"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[status]}"), console=console, disable=not console.is_terminal) as bar:
        task = bar.add_task("fuzz", total=args.examples, status="")
        work = examples(targets, args.seed, args.examples)
        for outcome in run_chunks(fuzz_chunk, work, (args.mutants,), args, largest=50,
                                  more=lambda: deadline is None or time.monotonic() < deadline):
            outcomes.append(outcome)
            if outcome.disagreements and args.save:
                saved.extend(str(p) for p in save_outcome(outcome, args.save, shrunk=args.shrink))
            bad = sum(len(o.disagreements) for o in outcomes)
            bar.update(task, advance=1, status=f"{bad} disagreement(s)")
    summary = summarise(outcomes)
    summary["targets"] = targets
    summary["seed"] = args.seed
    summary["saved"] = saved
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 1 if summary["disagreements"] else 0
