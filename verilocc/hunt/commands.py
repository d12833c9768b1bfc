"""`verilocc hunt`: the command line around `verilocc.hunt.run`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from verilocc.options import add_cluster_options
from verilocc.errors import InputError

DEFAULT_TRIAGE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "hunt" / "triage.tsv"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    h = sub.add_parser(
        "hunt", help="let every installed llc allocate inputs and sort what verilocc does not verify",
        description="For each input (.ll or pre-RA .mir, or directories of them; HIP kernels with --hip; "
        "fuzzer programs with --fuzz), each installed llc (llc-13 to llc-22 on PATH, or --llvm), each AMDGPU "
        "target it knows (or --targets), each allocator (--regalloc) and both ways of making a pair (one llc "
        "process, or re-reading the printed pre file): make the pre/post pair, verify it, and write one table "
        "(markdown and JSON) of the functions not VERIFIED, grouped into (a) limitations of verilocc, (b) "
        "candidate LLVM bugs and (c) harmless liveness anomalies (docs/hunt.md says how). --reduce shrinks each "
        "(b) case with llvm-reduce. --random hunts with random programs instead: llvm-stress's and GPU-shaped ones "
        "of our own, seed by seed (resumable; on Dask with --dask or --scheduler). "
        "Exit codes: 0 no candidate LLVM bug, 1 some, 2 bad input.")
    h.add_argument("inputs", nargs="*", type=Path, metavar="INPUT",
                   help=".ll or pre-RA .mir files, or directories searched for them")
    h.add_argument("--llvm", metavar="N[,N]", help="LLVM major versions, run as llc-N (default: every llc-13 to "
                   "llc-22 on PATH)")
    h.add_argument("--targets", metavar="GFX[,GFX]", help="targets (default: every gfx processor each llc knows); an "
                   "input made for one processor (clang's IR names it, --hip, --fuzz) is allocated for that one")
    h.add_argument("--regalloc", metavar="A[,A]",
                   help="allocators: greedy, fast, basic (in llc's -O3 pipeline), fast-O0 (the -O0 pipeline, whose "
                   "allocator is fast) (default greedy; greedy,fast-O0 with --random)")
    h.add_argument("--mir-regalloc", metavar="A[,A]",
                   help="allocators for pre-RA MIR inputs and --fuzz programs (default: --regalloc)")
    h.add_argument("--modes", default="one-process,reread", metavar="M[,M]",
                   help="ways to make a pair: one-process, reread (default both)")
    h.add_argument("--hip", type=Path, metavar="DIR", help="also compile the kernels of DIR/manifest.txt with --clang")
    h.add_argument("--clang", default="clang-19", help="clang for --hip (default clang-19)")
    h.add_argument("--kernels", metavar="K[,K]", help="only these kernels of the --hip manifest (shell patterns)")
    h.add_argument("--fuzz", type=int, default=0, metavar="N",
                   help="also allocate N fuzzer programs per fuzzer target among the targets")
    h.add_argument("--fuzz-seed", type=int, default=0, metavar="S", help="first fuzzer seed (default 0)")
    h.add_argument("--random", action="store_true",
                   help="hunt with random programs: --examples seeds from --seed, even seeds GPU-shaped programs of "
                   "our own (one per target), odd ones llvm-stress's cleaned by opt (see --sources); default targets "
                   "gfx90a,gfx942,gfx950,gfx1100,gfx1200")
    h.add_argument("--examples", type=int, default=100, metavar="N", help="random programs (seeds) to hunt with "
                   "(default 100)")
    h.add_argument("--seed", type=int, default=0, metavar="S", help="first seed of --random (default 0)")
    h.add_argument("--sources", default="gpu,stress", metavar="SRC[,SRC]",
                   help="kinds of random program: gpu, stress (default both, alternating by seed)")
    h.add_argument("--out", type=Path, default=Path("build/hunt"), help="pairs, reductions and the table "
                   "(default build/hunt)")
    h.add_argument("--markdown", type=Path, metavar="FILE",
                   help="also write the table between <!-- hunt:begin --> and <!-- hunt:end --> of FILE")
    h.add_argument("--json", type=Path, metavar="FILE", help="also write the JSON records here")
    h.add_argument("--triage", type=Path, default=DEFAULT_TRIAGE,
                   help="human-confirmed decisions (TSV; default tests/fixtures/hunt/triage.tsv)")
    h.add_argument("--retable", action="store_true",
                   help="sort the records of the finished hunt in --out again (current rules and --triage) and "
                   "rewrite its tables, without making or verifying pairs; the inputs are given as for the hunt")
    h.add_argument("--reduce", action="store_true",
                   help="reduce every (b) case with llvm-reduce-N, verilocc as the interestingness test")
    h.add_argument("--reduce-timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="time for one reduction (default 1800)")
    h.add_argument("--machine-verifier", action="store_true",
                   help="run llc with -verify-machineinstrs (off by default: an error it finds in LLVM's bookkeeping "
                   "stops llc before it prints the allocation)")
    h.add_argument("-j", "--jobs", type=int, default=1, help="llc runs and verifications in parallel (default 1); "
                   "with --random, seeds in parallel")
    add_cluster_options(h)
    h.add_argument("--llc-timeout", type=float, default=300.0, metavar="SECONDS", help="per llc run (default 300)")
    h.add_argument("--pair-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="per pair verified (default 600)")
    h.add_argument("--command-name", default=None, help=argparse.SUPPRESS)  # how the table names its command
    h.set_defaults(func=cmd_hunt)


def _split(s: str | None) -> list[str] | None:
    return None if s is None else [x for x in (p.strip() for p in s.split(",")) if x]


def cmd_hunt(args: argparse.Namespace) -> int:
    from verilocc.hunt.triage import TriageError, read_triage

    allocators, mir_allocators, modes = _checked_choices(args)
    llvms = _llvms(args)
    try:
        triage = read_triage(args.triage)
    except TriageError as e:
        raise InputError(str(e), str(args.triage), 0, 0) from None
    inputs, result, known = _hunt(args, llvms, allocators, mir_allocators, modes, triage)
    return _write_tables(args, result, _reproducers(args, inputs, llvms, result, known))


def _checked_choices(args: argparse.Namespace) -> tuple[list[str], list[str] | None, list[str]]:
    """The allocators (for .ll inputs, and for MIR ones when given apart) and the modes asked
    for; an `InputError` for a name not known, or fewer than one job."""
    from verilocc.hunt.llvm import ALLOCATORS
    from verilocc.hunt.pairs import MODES

    allocators = _split(args.regalloc) or (["greedy", "fast-O0"] if args.random else ["greedy"])
    mir_allocators = _split(args.mir_regalloc)
    modes = _split(args.modes) or []
    for a in allocators + (mir_allocators or []):
        if a not in ALLOCATORS:
            raise InputError(f"unknown allocator '{a}' (choose from {', '.join(ALLOCATORS)})", "--regalloc", 0, 0)
    for m in modes:
        if m not in MODES:
            raise InputError(f"unknown mode '{m}' (choose from {', '.join(MODES)})", "--modes", 0, 0)
    if args.jobs < 1:
        raise InputError("--jobs must be at least 1", "--jobs", 0, 0)
    return allocators, mir_allocators, modes


def _llvms(args: argparse.Namespace) -> list[Any]:
    """The installed llc-N of the versions asked for (--llvm, default all); notes on stderr."""
    from verilocc.hunt.llvm import LlvmError, installed

    versions = None
    if args.llvm:
        try:
            versions = [int(v) for v in _split(args.llvm) or []]
        except ValueError:
            raise InputError(f"--llvm takes major versions such as 19,22, not '{args.llvm}'", "--llvm", 0, 0) from None
    try:
        llvms, notes = installed(versions)
    except LlvmError as e:
        raise InputError(str(e), "--llvm", 0, 0) from None
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    if not llvms:
        raise InputError("no llc-N on PATH (apt-get install llvm-19)", "--llvm", 0, 0)
    return llvms


def _hunt(args: argparse.Namespace, llvms: list[Any], allocators: list[str], mir_allocators: list[str] | None,
          modes: list[str], triage: Any) -> tuple[list[Any], Any, dict[tuple[str, ...], dict[str, Any]]]:
    """(the inputs, the hunt's result, the reproducers of the hunt sorted again): a random hunt,
    the given inputs' hunt, or (--retable) the finished hunt in --out sorted again."""
    from verilocc.hunt.run import HuntConfig, retable, run_hunt

    targets = _split(args.targets)
    known: dict[tuple[str, ...], dict[str, Any]] = {}
    if args.random:
        return _random_hunt(args, llvms, targets, allocators, modes, triage)
    inputs = _given_inputs(args, targets)
    config = HuntConfig(inputs, llvms, targets, allocators, modes, args.out, args.jobs, args.llc_timeout,
                        args.pair_timeout, triage, args.machine_verifier, mir_allocators)
    if args.retable:
        if not (args.out / "hunt.json").is_file():
            raise InputError("no finished hunt here (hunt.json) to sort again", str(args.out), 0, 0)
        result, known = retable(args.out, triage)
    else:
        result = run_hunt(config, _log)
    return inputs, result, known


def _reproducers(args: argparse.Namespace, inputs: list[Any], llvms: list[Any], result: Any,
                 known: dict[tuple[str, ...], dict[str, Any]]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Per (b) case, the commands that reproduce it (reduced with --reduce, the first of each
    case), or those of the hunt sorted again."""
    from verilocc.hunt import reduce as red
    from verilocc.hunt.report import case_key

    by_name = {i.name: i for i in inputs}
    by_version = {str(l.version): l for l in llvms}
    notes_of: dict[tuple[str, ...], str] = {
        (p["input"], p["llvm"], p["target"], p["allocator"], p["mode"]): p["note"] for p in result.pairs}
    reproducers: dict[tuple[str, ...], dict[str, Any]] = {}
    for r in result.records:
        if r.get("group") != "b":
            continue
        key = case_key(r)
        if key in known and ("reduced" in known[key] or not args.reduce):
            reproducers[key] = known[key]  # from the hunt being sorted again
            continue
        llvm = by_version.get(r["llvm"])
        inp = by_name.get(r["input"])
        if llvm is None or inp is None:
            reproducers[key] = {"kind": r["kind"], "commands": [], "note": "input or llc not given to this run"}
            continue
        rep: dict[str, Any] = {"kind": r["kind"], "commands": red.commands(
            llvm, r["target"], r["allocator"], r["mode"], str(inp.path),
            red.rewriter_instance(notes_of[key[:1] + key[2:]]), inp.path.read_text(errors="replace"))}
        first_of_case = not any(k[:5] == key[:5] for k in reproducers)
        if args.reduce and first_of_case:
            # A MIR input is reduced from the pre file that llc printed (keys it reads).
            source = args.out / r["pre"] if inp.is_mir else inp.path
            reduced, note = red.reduce_case(llvm, r, source, args.out / "reduced" / r["llvm"] / r["target"],
                                            args.reduce_timeout, args.machine_verifier)
            rep["note"] = note
            if reduced is not None:
                rep["reduced"] = str(reduced)
                rep["commands"] = red.commands(llvm, r["target"], r["allocator"], r["mode"], str(reduced),
                                               red.rewriter_instance(notes_of[key[:1] + key[2:]]),
                                               reduced.read_text(errors="replace"))
        reproducers[key] = rep
    return reproducers


def _write_tables(args: argparse.Namespace, result: Any, reproducers: dict[tuple[str, ...], dict[str, Any]]) -> int:
    """The table (markdown and JSON) in --out and where --markdown and --json ask; the exit
    code: 1 when there is a candidate LLVM bug."""
    from verilocc.hunt.report import markdown, to_json, write_section
    from verilocc.llc.text import write_if_changed

    command = args.command_name or "verilocc hunt " + " ".join(sys.argv[2:])
    md = markdown(result, command, reproducers)
    js = to_json(result, command, reproducers)
    write_if_changed(args.out / "hunt.md", md)
    write_if_changed(args.out / "hunt.json", js)
    if args.markdown:
        write_section(args.markdown, md)
    if args.json:
        write_if_changed(args.json, js)
    groups = {g: sum(1 for r in result.records if r.get("group") == g) for g in "abc"}
    ok = sum(1 for p in result.pairs if p["status"] == "ok")
    print(f"{ok} of {len(result.pairs)} pairs made; {len(result.records)} function records: "
          f"(a) {groups['a']}, (b) {groups['b']}, (c) {groups['c']}; {args.out / 'hunt.md'}")
    return 1 if groups["b"] else 0


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _given_inputs(args: argparse.Namespace, targets: list[str] | None) -> list[Any]:
    """The inputs named on the command line, the --hip kernels and the --fuzz programs."""
    from verilocc.hunt.inputs import Input, file_inputs, fuzz_inputs, hip_inputs, unique_names

    inputs: list[Input] = file_inputs(args.inputs) if args.inputs else []
    if args.hip:
        hip_targets = targets or ["gfx908", "gfx90a", "gfx942", "gfx1100"]
        made, failed = hip_inputs(args.hip, args.clang, hip_targets, _split(args.kernels), args.out / "inputs" / "hip",
                                  args.llc_timeout)
        inputs += made
        for f in failed:
            print(f"note: {args.clang} failed on {f}", file=sys.stderr)
    if args.fuzz:
        from verilocc.fuzz.profiles import TARGETS as FUZZ_TARGETS

        inputs += fuzz_inputs(args.fuzz, args.fuzz_seed, targets or list(FUZZ_TARGETS), args.out / "inputs" / "fuzz")
    if not inputs:
        raise InputError("nothing to hunt: give .ll/.mir inputs, --hip DIR, --fuzz N or --random", "<args>", 0, 0)
    return unique_names(inputs)


def _random_hunt(args: argparse.Namespace, llvms: list[Any], targets: list[str] | None, allocators: list[str],
                 modes: list[str], triage: list[Any]) -> tuple[list[Any], Any, dict[tuple[str, ...], dict[str, Any]]]:
    """--random: the seeds' programs, pairs and verdicts (made, or read back with --retable)."""
    from verilocc.batch.run import run_chunks
    from verilocc.hunt.random_hunt import SOURCES, TARGETS, RandomPlan, gathered, record_path, run_random
    from verilocc.hunt.run import HuntResult, compare_modes, retable
    from verilocc.hunt.stress import StressError, tools
    from verilocc.hunt.triage import classify

    if args.inputs or args.hip or args.fuzz:
        raise InputError("--random makes its own programs: give no INPUT, --hip or --fuzz with it", "--random", 0, 0)
    if args.examples < 1:
        raise InputError("--examples must be at least 1", "--examples", 0, 0)
    sources = _split(args.sources) or []
    for s in sources:
        if s not in SOURCES:
            raise InputError(f"unknown source '{s}' (choose from {', '.join(SOURCES)})", "--sources", 0, 0)
    if not sources:
        raise InputError("--sources names no kind of program", "--sources", 0, 0)
    seeds = list(range(args.seed, args.seed + args.examples))
    if args.retable:
        import json

        if not (args.out / "hunt.json").is_file():
            raise InputError("no finished hunt here (hunt.json) to sort again", str(args.out), 0, 0)
        records = [json.loads(p.read_text()) for p in (record_path(args.out, s) for s in seeds) if p.is_file()]
        result, known = retable(args.out, triage)
        return gathered(records, args.out)[0], result, known
    if "stress" in sources:
        try:
            tools(min(l.version for l in llvms))
        except StressError as e:
            raise InputError(str(e), "--sources", 0, 0) from None
    plan = RandomPlan(tuple(sources), tuple(llvms), tuple(targets or TARGETS), tuple(allocators), tuple(modes),
                      args.out, args.llc_timeout, args.pair_timeout, args.machine_verifier)
    records = run_random(plan, seeds, lambda f, items, fa: run_chunks(f, items, fa, args, largest=4), _log)
    inputs, pairs, functions = gathered(records, args.out)
    classify(functions, triage)
    return inputs, HuntResult(pairs, functions, compare_modes(functions, args.out)), {}
