"""The `verilocc` command line: thin argument handling around the library.

Exit codes (DESIGN.md section 3): 0 VERIFIED, 1 REJECTED, 2 bad input, 3 UNKNOWN.
Heavy imports (z3, networkx, torch) happen inside the commands that need them.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from collections.abc import Sequence

from verilocc import __version__, native
from verilocc.errors import InputError
from verilocc.output import write_output

EXIT_BAD_INPUT = 2
EXIT_UNKNOWN = 3

# Optional dependencies: the package a command imports -> the extra that installs it.
OPTIONAL_EXTRAS = {
    "torch": "model", "transformers": "model", "peft": "model", "safetensors": "model", "matplotlib": "view",
    "dask": "cluster", "distributed": "cluster", "selenium": "view",
}


def _layers(text: str) -> tuple[str, ...]:
    from verilocc.findings import LAYERS

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    for n in names:
        if n not in LAYERS:
            raise argparse.ArgumentTypeError(f"unknown layer '{n}' (choose from {', '.join(LAYERS)})")
    return tuple(layer for layer in LAYERS if layer in names)


def cmd_verify(args: argparse.Namespace) -> int:
    if args.manifest or (args.alloc is not None and os.path.isdir(args.alloc)):
        from verilocc.batch.commands import cmd_verify_batch

        return cmd_verify_batch(args)
    for flag, given in (("--jobs", args.jobs != 1), ("--dask", args.dask), ("--scheduler", args.scheduler),
                        ("--chunk", args.chunk is not None), ("--format jsonl", args.format == "jsonl")):
        if given:
            raise InputError(f"{flag} applies to a batch: give a directory of pairs or --manifest FILE", flag, 0, 0)
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise InputError(f"--timeout must be a positive number of seconds, not {args.timeout}", "--timeout", 0, 0)
    if "constraints" not in args.layers and not args.certificate:
        return _verify_pair(args)
    from verilocc.smt.solver import solver_process

    with solver_process():  # z3 is imported in a process of its own meanwhile
        return _verify_pair(args)


def _verify_pair(args: argparse.Namespace) -> int:
    from verilocc.report.render import render_text, to_json, to_sarif
    from verilocc.verify import Options, load_inputs, verify_modules

    # One pair, then the process ends: what the layers build is freed by reference counting
    # (no cycles of note: peak memory is the same), so the cycle collector only costs time.
    gc.disable()
    if args.certificate:
        from verilocc.certificate.write import prepare_directory

        prepare_directory(args.certificate)  # refuse a bad DIR before spending time on the proof
    started = time.perf_counter()
    post, pre, extra = load_inputs(args.alloc, args.pre, args.assignment)
    opts = Options(mcpu=args.mcpu, layers=args.layers, timeout_s=args.timeout, seed=args.seed,
                   certify=bool(args.certificate), fork=True)
    report = verify_modules(post, pre, opts, extra_findings=extra)
    if args.format == "json":
        write_output(args.output, to_json(report, timings=args.timings), [args.alloc, args.pre, args.assignment])
    elif args.format == "sarif":
        write_output(args.output, to_sarif(report), [args.alloc, args.pre, args.assignment])
    elif args.format == "html":
        from verilocc.view.command import report_page

        write_output(args.output, report_page(report, post, pre, args.mcpu), [args.alloc, args.pre, args.assignment])
    else:
        render_text(report, sys.stdout)
    if args.certificate:
        from verilocc.certificate.write import certify

        inputs = {"post": args.alloc, "pre": args.pre, "assignment": args.assignment}
        return certify(args.certificate, report, inputs, seed=args.seed, timeout_s=args.timeout, layers=args.layers,
                       seconds=time.perf_counter() - started)
    global _EXIT_WITHOUT_TEARDOWN
    _EXIT_WITHOUT_TEARDOWN = True
    return report.verdict.exit_code


def cmd_show(args: argparse.Namespace) -> int:
    from verilocc.verify import Options
    from verilocc.view.command import show

    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise InputError(f"--timeout must be a positive number of seconds, not {args.timeout}", "--timeout", 0, 0)
    opts = Options(mcpu=args.mcpu, layers=args.layers, timeout_s=args.timeout, seed=args.seed)
    return show(args.alloc, args.pre, args.output, function=args.function, compare=args.compare, opts=opts)


def cmd_recheck(args: argparse.Namespace) -> int:
    from rich.console import Console

    from verilocc.certificate.obligation import CertificateError
    from verilocc.certificate.recheck import recheck, render

    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise InputError(f"--timeout must be a positive number of seconds, not {args.timeout}", "--timeout", 0, 0)
    overrides = {role: p for role, p in (("post", args.post), ("pre", args.pre), ("assignment", args.assignment)) if p}
    try:
        res = recheck(args.directory, input_root=args.input_root, overrides=overrides, timeout_s=args.timeout)
    except CertificateError as e:
        print(f"{args.directory}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    render(res, args.directory, Console(highlight=False, soft_wrap=True))
    return 0 if res.ok else 1


def cmd_materialise(args: argparse.Namespace) -> int:
    from verilocc.rewrite.assignment import materialise, read_assignment
    from verilocc.rewrite.finish import finish_for_llc
    from verilocc.mir.parser import read_module
    from verilocc.mir.printer import print_module

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


def cmd_allocate(args: argparse.Namespace) -> int:
    """Allocate a pre-RA file with a strategy; write the post-RA MIR only when VERIFIED."""
    from functools import partial
    from pathlib import Path

    from verilocc.allocators.driver import Strategy, allocate_module
    from verilocc.mir.parser import read_module
    from verilocc.mir.printer import print_module

    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise InputError(f"--timeout must be a positive number of seconds, not {args.timeout}", "--timeout", 0, 0)
    if args.waves is not None and args.waves < 1:
        raise InputError(f"--waves must be at least 1, not {args.waves}", "--waves", 0, 0)
    pre = read_module(args.pre)
    for out in (args.output, args.assignment_out):
        if out not in (None, "-") and Path(out).exists() and Path(out).resolve() == Path(args.pre).resolve():
            raise InputError("refusing to write the output over an input file", out, 0, 0)  # before any work
    strategy: Strategy
    if args.solver:
        from verilocc.allocators.optimal import solve_function

        strategy = partial(solve_function, objective=args.objective, timeout=args.timeout, seed=args.seed,
                           waves=args.waves, floor=args.greedy_floor, spill=args.spill)
    else:  # the model loop (DESIGN.md section 6), the default strategy
        from verilocc.llm.commands import cmd_allocate_model

        return cmd_allocate_model(args)
    outcome = allocate_module(pre, strategy, mcpu=args.mcpu)
    log = sys.stderr if args.output in (None, "-") else sys.stdout
    for name in outcome.results:
        print(outcome.summary(name), file=log)
    if not outcome.ok:
        return 1
    write_output(args.output, print_module(outcome.post()), [args.pre])
    if args.assignment_out:
        write_output(args.assignment_out, outcome.assignment_text(), [args.pre, args.output])
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    """Generate programs, allocate, mutate, verify and run them; count disagreements."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from verilocc.batch.commands import run_chunks
    from verilocc.fuzz.chunks import examples, fuzz_chunk
    from verilocc.fuzz.profiles import ALL_TARGETS, TARGETS
    from verilocc.fuzz.oracle import Outcome, save_outcome, summarise

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


def add_runner_options(p: argparse.ArgumentParser, jobs_help: str) -> None:
    """--jobs, --dask, --scheduler and --chunk: where the work of a batch or a fuzz run goes."""
    from verilocc.options import add_cluster_options

    p.add_argument("--jobs", type=int, default=1, metavar="J", help=jobs_help)
    add_cluster_options(p)


def add_check_options(p: argparse.ArgumentParser) -> None:
    """--mcpu, --layers, --timeout and --seed: how an allocation is verified."""
    p.add_argument("--mcpu", metavar="GFX", help="target processor (default: the file's target-cpu)")
    p.add_argument("--layers", type=_layers, default=None, metavar="L1,L2",
                   help="run only these layers: constraints, value-flow, equivalence (a subset never VERIFIES)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="solver timeout per query (default 60)")
    p.add_argument("--seed", type=int, default=0, help="solver random seed (default 0)")


# `verilocc.native.state` as `--version` says it.
_CORE = {"compiled": "compiled", "pure": "interpreted (VERILOCC_PURE=1)",
         "stale": "interpreted: its sources changed since the build (make native)",
         "not built": "interpreted (make native compiles it)"}


class _Version(argparse.Action):
    """`--version`: which verifier core runs is found out only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"verilocc {__version__} (verifier core: {_CORE[native.current()]})")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, for one of the commands defined here, the top level and that
    command alone: the same parse of its arguments, and building every command's options costs
    a short `verify` a tenth of its time."""
    p = argparse.ArgumentParser(
        prog="verilocc",
        description="Verification-first register allocation for AMD GPUs: prove an allocation in LLVM MIR correct, "
        "or explain with a counterexample why it is not.",
    )
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and which verifier core runs, and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    own = {"verify": _verify_parser, "show": _show_parser, "recheck": _recheck_parser, "fuzz": _fuzz_parser,
           "allocate": _allocate_parser, "materialise": _materialise_parser}
    if command in own:
        own[command](sub)
        return p
    for add in own.values():
        add(sub)
    from verilocc.hunt.commands import add_parser as add_hunt_parser
    from verilocc.llm.commands import add_parsers

    add_hunt_parser(sub)
    add_parsers(sub)
    return p


def _verify_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    v = sub.add_parser(
        "verify",
        help="verify an allocated MIR file (against its pre-RA version)",
        description="Verify a register allocation. With --pre, all layers run (constraints in SMT, value flow, "
        "equivalence); without it, only the checks that need no reference. Exit codes: 0 VERIFIED, 1 REJECTED, "
        "2 bad input, 3 UNKNOWN. A batch (a directory: every X.post.mir beside its X.pre.mir, recursively; or "
        "--manifest FILE: one `POST PRE` pair per line, paths relative to the manifest, `#` comments) verifies "
        "every pair, prints one result per pair sorted by name (text or --format jsonl) and a summary table on "
        "stderr, and exits with the worst pair's code: 1 if any pair is REJECTED, else 2 if any is bad input, "
        "else 3 if any is UNKNOWN, else 0.",
    )
    v.add_argument("alloc", metavar="ALLOC.mir|DIR", nargs="?",
                   help="the allocated program (post-RA MIR), or a directory of pairs to verify as a batch")
    v.add_argument("--manifest", metavar="FILE", help="verify the pairs this file lists (`POST PRE` per line) as a batch")
    v.add_argument("--pre", metavar="PRE.mir", help="the virtual-register program it was allocated from")
    v.add_argument("--assignment", metavar="FILE", help="verify an assignment (`%%N -> $reg` lines) applied to --pre")
    v.add_argument("--format", choices=("text", "json", "sarif", "html", "jsonl"), default="text",
                   help="output format (default text); html: the register-occupancy page of `verilocc show` with the "
                   "verdict and every finding on it; a batch writes text or jsonl (one JSON object per pair)")
    v.add_argument("-o", "--output", metavar="FILE",
                   help="write JSON/SARIF/HTML (a batch: its results) here instead of stdout")
    add_check_options(v)
    v.add_argument("--timings", action="store_true",
                   help="add seconds per layer to the JSON stats (a batch: seconds per pair to each JSON line)")
    v.add_argument("--certificate", metavar="DIR",
                   help="if VERIFIED, write the proof obligations (SMT-LIB) and a manifest with input hashes to DIR "
                   "(new, empty, or a previous certificate; otherwise exit 2); other verdicts write nothing; exit 3 "
                   "if a VERIFIED proof cannot be written; check it with `verilocc recheck DIR`")
    add_runner_options(v, "a batch: worker processes (default 1)")
    v.set_defaults(func=cmd_verify)


def _show_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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


def _recheck_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    r = sub.add_parser(
        "recheck",
        help="re-check a certificate with cvc5, independently of verilocc's proof",
        description="Re-hash the inputs and obligations of a certificate written by `verify --certificate` and "
        "decide every obligation with cvc5; each must be unsat. Input paths are read as recorded (relative to the "
        "current directory), under --input-root, or as given by --post/--pre/--assignment. Exit codes: 0 re-checked, "
        "1 a problem (changed or missing file, extra obligation, sat, unknown or timeout), 2 unreadable certificate.",
    )
    r.add_argument("directory", metavar="DIR", help="the certificate directory")
    r.add_argument("--input-root", metavar="DIR", help="resolve the recorded relative input paths under DIR")
    r.add_argument("--post", metavar="ALLOC.mir", help="the allocated program to hash instead of the recorded path")
    r.add_argument("--pre", metavar="PRE.mir", help="the virtual program to hash instead of the recorded path")
    r.add_argument("--assignment", metavar="FILE", help="the assignment to hash instead of the recorded path")
    r.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="cvc5 time limit per obligation (default 60)")
    r.set_defaults(func=cmd_recheck)


def _fuzz_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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


def _allocate_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    a = sub.add_parser(
        "allocate", help="allocate registers of a pre-RA MIR file and write the VERIFIED post-RA MIR",
        description="Allocate every virtual register of PRE.mir with a strategy, verify the result with all layers "
        "and write it only when VERIFIED. Default: the model loop (a language model proposes, counterexamples go "
        "back into the prompt; --model, --samples, --rounds, --constrained, --repair). --solver: an SMT allocator (z3) "
        "that minimises registers or maximises occupancy. A function whose values do not fit its budget gets spill "
        "code first (stack slots, AGPRs on gfx90a/gfx942/gfx950, SGPRs in VGPR lanes or stack slots). Each function gets a "
        "summary line. Exit codes: 0 allocated and VERIFIED, 1 no verified allocation (timeout, unsupported, "
        "infeasible), 2 bad input.")
    a.add_argument("pre", metavar="PRE.mir", help="the virtual-register program (llc -stop-before=greedy)")
    a.add_argument("--solver", action="store_true", help="allocate with the SMT solver")
    a.add_argument("--objective", choices=("registers", "waves"), default="registers",
                   help="registers: fewest VGPR+AGPR, then SGPRs (default); waves: most waves per SIMD first")
    a.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="solver time per function (default 60)")
    a.add_argument("--seed", type=int, default=0, help="solver random seed (default 0)")
    a.add_argument("--waves", type=int, default=None, metavar="N",
                   help="allocate for N waves per SIMD: the registers that occupancy allows are the budget, spilling "
                   "what does not fit (default: the budget the function's attributes ask for, as llc)")
    a.add_argument("--greedy-floor", action=argparse.BooleanOptionalAction, default=True,
                   help="occupancy first: never fewer waves per SIMD than LLVM's greedy allocator reaches (the "
                   "solver and the model loop's repair step); a line says when an allocation stays below what the "
                   "register pressure allows (default on)")
    a.add_argument("--spill", action=argparse.BooleanOptionalAction, default=True,
                   help="write spill code when the values do not fit the budget (default on)")
    a.add_argument("--mcpu", metavar="GFX", help="target processor (default: the file's target-cpu)")
    a.add_argument("-o", "--output", metavar="ALLOC.mir", help="post-RA MIR (default stdout)")
    a.add_argument("--assignment-out", metavar="FILE", help="also write the assignment (`%%N -> $reg` lines)")
    from verilocc.llm.commands import add_allocate_options

    add_allocate_options(a)
    a.set_defaults(func=cmd_allocate)


def _materialise_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    m = sub.add_parser("materialise", help="apply an assignment to a pre-RA MIR file and print the post-RA MIR",
                       description="Rewrite every virtual register of PRE.mir to its assigned physical register, drop "
                       "identity copies and list each block's live-in registers, as llc -start-after=virtregrewriter "
                       "wants them. The output is not verified here: run `verilocc verify OUT --pre PRE.mir`.")
    m.add_argument("pre", metavar="PRE.mir")
    m.add_argument("--assignment", required=True, metavar="FILE")
    m.add_argument("-o", "--output", metavar="FILE", help="output MIR (default stdout)")
    m.set_defaults(func=cmd_materialise)


# Set by a command whose every output is written and closed when it returns (one pair's
# `verify`): the `verilocc` process then ends without freeing what the layers built, which
# costs about a tenth of the verification on a large kernel (as llc, which frees nothing at
# exit). Callers of `main` in their own process are not affected.
_EXIT_WITHOUT_TEARDOWN = False


def entry() -> None:
    """The `verilocc` command (and `python -m verilocc`): `main`, then the exit."""
    code = main()
    if _EXIT_WITHOUT_TEARDOWN:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # a reader that went away (`| head`) takes nothing more
                pass
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    # The layers build large graphs of small objects that reference counting frees; at the
    # default thresholds the cycle collector would walk all of them again and again. A caller
    # that runs commands in its own process (tests, a notebook) gets its collector back.
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(100_000, 50, 100)
    try:
        return _run(argv)
    finally:
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()


def _run(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word that is not an option (the top level's are -h and --version).
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    args = parser.parse_args(words)
    if getattr(args, "layers", "unset") is None:
        from verilocc.findings import LAYERS

        args.layers = LAYERS
    try:
        return int(args.func(args))
    except InputError as e:
        print(" ".join(str(e).split("\n")), file=sys.stderr)  # always one line
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("verilocc: interrupted", file=sys.stderr)
        return EXIT_UNKNOWN
    except RecursionError:
        print("<input>:0:0: error: input nests too deeply", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 - never a traceback, never a verdict
        missing = (e.name or "").split(".")[0] if isinstance(e, ModuleNotFoundError) else ""
        if missing in OPTIONAL_EXTRAS:
            print(f"verilocc {args.command}: needs the optional package '{missing}': "
                  f"pip install 'verilocc[{OPTIONAL_EXTRAS[missing]}]'", file=sys.stderr)
            return EXIT_BAD_INPUT
        if os.environ.get("VERILOCC_DEBUG"):
            raise
        print(f"verilocc: internal error: {type(e).__name__}: {e} (set VERILOCC_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())
