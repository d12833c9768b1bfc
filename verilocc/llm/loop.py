"""The feedback loop of DESIGN.md section 6: propose, verify with every layer, feed back.

Round r draws K proposals in one batch (the first greedy unless `first_greedy` is off, the
others sampled with seeded generators); each is materialised and checked by layer 1, and one
that passes it is verified with all three layers. The first VERIFIED one ends the loop.
Otherwise the findings of the best proposal (fewest errors) go into the next prompt twice: as
the feedback paragraph (`render_feedback`, the same Finding objects as the terminal text) and,
for the virtual register each finding names last in program order, as a ban of the register
it had (a `!` choice on its line). `use_feedback=False` keeps every prompt as in round 1 (the
ablation of `verilocc eval`). After R rounds, the optional repair step asks the SMT allocator
(`verilocc.allocators.optimal.solve_function`) to keep as many of the model's choices as
possible, and verifies its answer like any other. The result is a VERIFIED module or an
explicit failure: nothing unverified is ever returned as an allocation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from verilocc.rewrite.assignment import Assignment, materialise
from verilocc.rewrite.finish import finish_for_llc
from verilocc.analysis.operands import VReg
from verilocc.findings import Finding, Report, Verdict
from verilocc.mir.model import Module
from verilocc.llm.choices import ChoiceTables
from verilocc.llm.decode import Proposal, prompt_head, propose_many, reads_feedback
from verilocc.llm.lm import LM
from verilocc.llm.normalise import rename_text
from verilocc.llm.problem import AllocationProblem, build_problem, single_function
from verilocc.report.render import render_feedback
from verilocc.target import PhysReg
from verilocc.verify import Options, function_target, verify_modules


@dataclass
class Attempt:
    round: int
    sample: int
    prompt: str  # header and feedback the model read
    output: str  # what it wrote
    verdict: str  # VERIFIED / REJECTED / UNKNOWN / DEAD-END / REPAIR-...
    errors: int
    seconds: float
    findings: list[Finding] = field(default_factory=list)
    feedback_read: bool = True  # False: the model read the findings only as `! R` bans (see decode.reads_feedback)


@dataclass
class LoopResult:
    verified: bool
    post: Module | None  # the VERIFIED allocated module, else None
    regs: dict[VReg, PhysReg]
    attempts: list[Attempt]
    reason: str  # why it failed, or how it succeeded
    usage: dict[str, int]
    seconds: float
    problem: AllocationProblem

    @property
    def rounds(self) -> int:
        return (self.attempts[-1].round + 1) if self.attempts else 0


def verify_regs(pre: Module, problem: AllocationProblem, regs: dict[VReg, PhysReg], parse_findings: list[Finding],
                opts: Options) -> tuple[Module, Report]:
    asg = Assignment("<model>", dict(regs), {v: problem.dense[v] + 1 for v in regs})
    post, mat = materialise(pre, asg)
    if not mat:
        finish_for_llc(single_function(pre), single_function(post), regs)
    post.file = pre.file.removesuffix(".mir").removesuffix(".pre") + ".alloc.mir"
    # Layer 1 first: its errors already reject (and are what the next prompt needs); only a
    # proposal that passes it pays for value flow and equivalence, and only all three verify.
    extra = parse_findings + mat
    first = verify_modules(post, pre, replace(opts, layers=("constraints",)), extra_findings=extra)
    if first.verdict is Verdict.REJECTED:
        return post, first
    return post, verify_modules(post, pre, opts, extra_findings=extra)


def bans_from(report: Report, problem: AllocationProblem, regs: dict[VReg, PhysReg],
              bans: dict[VReg, list[PhysReg]]) -> None:
    dense = problem.dense
    for f in report.findings:
        if f.severity != "error":
            continue
        named: list[VReg] = []
        for name in f.vregs:
            raw = name.lstrip("%")
            key: VReg = int(raw) if raw.isdigit() else raw
            if key in dense and key in regs:
                named.append(key)
        if named:
            last = max(named, key=lambda v: dense[v])
            if regs[last] not in bans.setdefault(last, []):
                bans[last].append(regs[last])


def run_loop(pre: Module, lm: LM | None, *, samples: int = 1, rounds: int = 3, constrained: bool = True,
             repair: bool = True, seed: int = 0, timeout: float = 60.0, temperature: float = 0.7,
             over_budget: bool = False, log: Callable[[str], None] = lambda s: None, use_feedback: bool = True,
             first_greedy: bool = True, verify: Callable[..., tuple[Module, Report]] | None = None) -> LoopResult:
    t0 = time.monotonic()
    fn = single_function(pre)
    target = function_target(fn, None, pre.file)
    problem = build_problem(fn, target)
    problem.over_budget = over_budget
    tables = ChoiceTables(problem) if lm is not None else None
    verify = verify or verify_regs  # `verilocc eval` passes one that caches verdicts
    opts = Options(timeout_s=timeout, seed=seed)
    attempts: list[Attempt] = []
    feedback = ""
    bans: dict[VReg, list[PhysReg]] = {}
    best: tuple[int, Proposal] | None = None
    for r in range(rounds if lm is not None else 0):
        round_best: tuple[int, Proposal, Report] | None = None
        t1 = time.monotonic()
        props = propose_many(lm, problem, samples=samples, constrained=constrained, feedback=feedback,  # type: ignore[arg-type]
                             bans=bans, temperature=temperature, seed=seed * 1_000_003 + r * 1009,
                             tables=tables, greedy_first=first_greedy)
        decode_seconds = (time.monotonic() - t1) / samples
        for s, prop in enumerate(props):
            t1 = time.monotonic() - decode_seconds
            head = prompt_head(problem, feedback)
            if prop.dead_end is not None:
                attempts.append(Attempt(r, s, head, prop.text, "DEAD-END", 1, time.monotonic() - t1))
                log(f"round {r + 1} sample {s + 1}: constrained decoding stopped: {prop.dead_end}")
                continue
            post, report = verify(pre, problem, prop.regs, prop.findings, opts)
            errors = sum(1 for f in report.findings if f.severity == "error")
            attempts.append(Attempt(r, s, head, prop.text, report.verdict.value, errors, time.monotonic() - t1,
                                    list(report.findings), feedback_read=reads_feedback(lm) or not feedback))  # type: ignore[arg-type]
            log(f"round {r + 1} sample {s + 1}: {report.verdict.value} ({errors} error(s), "
                f"{time.monotonic() - t1:.1f}s)")
            if report.verdict is Verdict.VERIFIED and (over_budget or not _over_budget(report)):
                return LoopResult(True, post, prop.regs, attempts, f"VERIFIED in round {r + 1}, sample {s + 1}",
                                  problem.usage(prop.regs), time.monotonic() - t0, problem)
            if report.verdict is Verdict.VERIFIED:
                log(f"round {r + 1} sample {s + 1}: VERIFIED but beyond the registers the function's attributes "
                    "request (llc-19 reserves them); not accepted without --over-budget")
            if round_best is None or errors < round_best[0]:
                round_best = (errors, prop, report)
        if round_best is not None:
            errors, prop, report = round_best
            if best is None or errors <= best[0]:
                best = (errors, prop)
            if not use_feedback:
                continue
            feedback = render_feedback(report, rename=lambda m: rename_text(m, problem))
            bans_from(report, problem, prop.regs, bans)
    why = "no VERIFIED proposal in " + (f"{rounds} round(s) of {samples} sample(s)" if lm is not None else "0 rounds")
    dead = [a for a in attempts if a.verdict == "DEAD-END"]
    if dead and len(dead) == len(attempts):
        why += ("; constrained decoding ran out of registers (the function needs spilling"
                + ("" if over_budget else " within the registers its attributes request")
                + ", which an assignment cannot express)")
    if repair:
        t1 = time.monotonic()
        got = _repair(fn, target, best[1].regs if best else {}, timeout, seed)
        if isinstance(got, str):
            attempts.append(Attempt(rounds, 0, "", "", "REPAIR-UNAVAILABLE", 0, time.monotonic() - t1))
            why += f"; repair: {got}"
        else:
            status, regs = got
            if regs:
                post, report = verify_regs(pre, problem, regs, [], opts)
                errors = sum(1 for f in report.findings if f.severity == "error")
                attempts.append(Attempt(rounds, 0, "", "", "REPAIR-" + report.verdict.value, errors, time.monotonic() - t1,
                                        list(report.findings)))
                if report.verdict is Verdict.VERIFIED and (over_budget or not _over_budget(report)):
                    return LoopResult(True, post, regs, attempts, f"VERIFIED after the SMT repair step ({status})",
                                      problem.usage(regs), time.monotonic() - t0, problem)
                why += f"; the repaired allocation was {report.verdict.value}"
            else:
                why += f"; repair: the solver answered {status}"
    return LoopResult(False, None, {}, attempts, why, {}, time.monotonic() - t0, problem)


def _over_budget(report: Report) -> bool:
    return any(f.kind == "budget" for f in report.findings)


def _repair(fn: Any, target: Any, prefer: dict[VReg, PhysReg], timeout: float, seed: int) -> str | tuple[str, dict[VReg, PhysReg]]:
    try:
        from verilocc.allocators.optimal import solve_function  # type: ignore[import-not-found]
    except ImportError:
        return "not available (verilocc.allocators.optimal, the SMT allocator, is not in this build)"
    sol = solve_function(fn, target, prefer=prefer or None, objective="registers", timeout=timeout, seed=seed)
    if sol.status not in ("optimal", "feasible"):
        return sol.status + (f" ({sol.reason})" if sol.reason else "")
    return sol.status, dict(sol.assignment)
