"""`verilocc allocate`: allocate a pre-RA file with a strategy and write the post-RA MIR only when
it is VERIFIED. The strategies: the model loop of `verilocc.llm` (the default; docs/allocate.md,
"The model loop") and the SMT allocator of `verilocc.allocators` (--solver). Torch and transformers
are imported only when the model loop runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from verilocc.errors import InputError
from verilocc.options import check_timeout
from verilocc.output import write_output

if TYPE_CHECKING:
    from verilocc.llm.lm import LM
    from verilocc.llm.loop import LoopResult
    from verilocc.mir.model import Module


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    _add_model_options(a)
    a.set_defaults(func=cmd_allocate)


def _add_model_options(a: argparse.ArgumentParser) -> None:
    """The options of the model loop, the default strategy."""
    a.add_argument("--model", metavar="PATH", help="local model directory or .gguf (default: the project's small model)")
    a.add_argument("--samples", type=int, default=1, metavar="K",
                   help="proposals per round, decoded as one batch; the first greedy, the others sampled (default 1)")
    a.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of samples 2..K (default 0.7)")
    a.add_argument("--rounds", type=int, default=3, metavar="R",
                   help="rounds of counterexample feedback (default 3): a rejected proposal's findings go into the "
                   "next prompt, the registers they blame are banned, a line whose answer named no listed choice "
                   "picks among its listed choices, and the lines they do not blame keep their registers")
    a.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=True,
                   help="mask registers ruled out by class, alignment and interference (default on)")
    a.add_argument("--steer", action=argparse.BooleanOptionalAction, default=True,
                   help="where a proposal would cost a wave per SIMD, decode it again from the last line that can "
                   "keep the waves of a first-fit allocation, overriding answers that leave no such first fit "
                   "(default on)")
    a.add_argument("--repair", action=argparse.BooleanOptionalAction, default=True,
                   help="after the rounds, let the SMT allocator keep as many model choices as possible (default on)")
    a.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    a.add_argument("--over-budget", action="store_true",
                   help="accept registers beyond what amdgpu-num-*/amdgpu-waves-per-eu request (verilocc warns; "
                   "LLVM 19 reserves them, so llc-19 rejects such a file)")
    a.add_argument("--transcript", metavar="FILE", help="write every round's prompt, output and verdict as JSON (with the lines kept from and "
                   "confined by the last counterexample)")


def cmd_allocate(args: argparse.Namespace) -> int:
    """Allocate a pre-RA file with a strategy; write the post-RA MIR only when VERIFIED."""
    from pathlib import Path

    from verilocc.mir.parser import read_module

    check_timeout(args.timeout)
    if args.waves is not None and args.waves < 1:
        raise InputError(f"--waves must be at least 1, not {args.waves}", "--waves", 0, 0)
    pre = read_module(args.pre)
    for out in (args.output, args.assignment_out):
        if out not in (None, "-") and Path(out).exists() and Path(out).resolve() == Path(args.pre).resolve():
            raise InputError("refusing to write the output over an input file", out, 0, 0)  # before any work
    if args.solver:
        return _allocate_with_solver(pre, args)
    return _allocate_with_model(pre, args)


def _allocate_with_solver(pre: Module, args: argparse.Namespace) -> int:
    """The SMT allocator, function by function, with one summary line each."""
    from functools import partial

    from verilocc.allocators.driver import allocate_module
    from verilocc.allocators.optimal import solve_function
    from verilocc.mir.printer import print_module

    strategy = partial(solve_function, objective=args.objective, timeout=args.timeout, seed=args.seed,
                       waves=args.waves, floor=args.greedy_floor, spill=args.spill)
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


def _allocate_with_model(pre: Module, args: argparse.Namespace) -> int:
    """The model loop, function by function (llc writes whole modules); the file is written only
    when every function is VERIFIED."""
    import dataclasses

    import torch

    from verilocc.llm.lm import load_lm_or_default
    from verilocc.llm.loop import run_loop
    from verilocc.mir.printer import print_module
    from verilocc.output import log_console

    for name in ("samples", "rounds"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name} must be at least 1", f"--{name}", 0, 0)
    torch.set_num_threads(args.threads)
    console = log_console()
    if not pre.functions:
        raise InputError("no machine function in the file", args.pre, 1, 1)
    lm = load_lm_or_default(args.model)
    results = []
    for fn in pre.functions:
        if len(pre.functions) > 1:
            console.print(f"function {fn.name}:")
        single = dataclasses.replace(pre, functions=[fn])
        results.append(run_loop(single, lm, samples=args.samples, rounds=args.rounds, constrained=args.constrained,
                                repair=args.repair, seed=args.seed, timeout=args.timeout, temperature=args.temperature,
                                over_budget=args.over_budget, waves=args.waves, floor=args.greedy_floor,
                                spill=args.spill, steer=args.steer, log=console.print))
    names = [fn.name for fn in pre.functions]
    if args.transcript:
        write_output(args.transcript, _transcript(args.pre, lm, names, results), [args.pre])
    for name, res in zip(names, results):
        u = res.usage
        if res.verified and res.post is not None:
            spill = f"; {res.spilled.describe()}" if res.spilled is not None else ""
            console.print(f"[green]VERIFIED[/] {name}: {res.reason}; {u['vgpr']} VGPR, {u['agpr']} AGPR, "
                          f"{u['sgpr']} SGPR, {u['waves']} waves/SIMD{spill}; {res.seconds:.1f}s")
        else:
            console.print(f"[red]FAILED[/] {name}: {res.reason}")
    if not all(r.verified and r.post is not None for r in results):
        console.print(f"[red]FAILED[/] {args.pre}: not every function VERIFIED; nothing written")
        return 1
    post = dataclasses.replace(pre, functions=[r.post.functions[0] for r in results if r.post is not None])
    write_output(args.output, print_module(post), [args.pre])
    if args.assignment_out:
        from verilocc.rewrite.assignment import format_assignment

        text = "".join((f"# {name}\n" if len(results) > 1 else "")
                       + (f"# with spill code: {res.spilled.describe()}; registers of that program\n"
                          if res.spilled is not None else "") + format_assignment(res.regs)
                       for name, res in zip(names, results))
        write_output(args.assignment_out, text, [args.pre, args.output])
    console.print(f"[green]VERIFIED[/] {args.pre} -> {args.output or 'stdout'}: {len(results)} function(s); "
                  f"{sum(r.seconds for r in results):.1f}s")
    return 0


def _transcript(pre: str, lm: LM, names: list[str], results: list[LoopResult]) -> str:
    """--transcript: every round's prompt, output and verdict, per function, as JSON."""
    import json

    docs = [{"function": name, "verified": res.verified, "reason": res.reason, "usage": res.usage,
             "attempts": [{"round": a.round + 1, "sample": a.sample + 1, "verdict": a.verdict, "errors": a.errors,
                           "seconds": round(a.seconds, 2), "prompt": a.prompt,
                           "feedback_read_as_text": a.feedback_read, "kept_lines": a.kept,
                           "confined_lines": a.confined, "output": a.output} for a in res.attempts]}
            for name, res in zip(names, results)]
    doc = {"pre": pre, "model": lm.path, "verified": all(r.verified for r in results),
           **(docs[0] if len(docs) == 1 else {"functions": docs})}
    return json.dumps(doc, indent=2) + "\n"
