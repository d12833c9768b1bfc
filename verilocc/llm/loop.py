"""The feedback loop (docs/allocate.md, "The model loop"): propose, verify with every layer,
feed back.

Round r draws K proposals in one batch (the first greedy unless `first_greedy` is off, the
others sampled with seeded generators); each is materialised and checked by layer 1, and one
that passes it is verified with all three layers. The first VERIFIED one ends the loop.
Otherwise the findings of the best proposal (fewest errors) go into the next round three ways:
- the feedback paragraph (`render_feedback`, the same Finding objects as the terminal text),
  which the model reads in its prompt (`use_feedback`);
- bans (`use_bans`): for the virtual register each error names last in program order, the
  register it had becomes a `!` choice on its line; a line whose decision named no listed
  choice is decoded among its listed choices (decode's `confine`; the model picks which);
- the lines to decide again (`keep_rest`): every line whose virtual register no error names
  keeps the best proposal's register (decode's `keep`), so the next round changes what the
  counterexample blames and leaves the rest as it was (when no error names a virtual
  register, every line is drawn again).
`use_feedback=False` turns all three off: every round is drawn as round 1 is (the ablation of
`verilocc eval`, which also measures the paragraph alone and the paragraph with bans).
After R rounds, the optional repair step asks the SMT allocator
(`verilocc.allocators.optimal.solve_function`) to keep as many of the model's choices as
possible, and verifies its answer like any other. The result is a VERIFIED module or an
explicit failure: nothing unverified is ever returned as an allocation.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from verilocc.allocators.problem import allocation_budget, start_waves
from verilocc.allocators.spill import CannotSpill, Spilled, spill_to_fit
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
from verilocc.target.waves import function_launch
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
    feedback_read: bool = True  # False: the findings reached the model only as `! R` bans (see decode.reads_feedback)
    kept: int = 0  # lines given the register they had in the last round's best proposal (`keep_rest`)
    confined: int = 0  # lines decoded among their listed choices after naming none (`use_bans`)


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
    spilled: Spilled | None = None  # the spill code of the program the model allocated

    @property
    def rounds(self) -> int:
        return (self.attempts[-1].round + 1) if self.attempts else 0


def verify_regs(pre: Module, problem: AllocationProblem, regs: dict[VReg, PhysReg], parse_findings: list[Finding],
                opts: Options, reference: Module | None = None) -> tuple[Module, Report]:
    """Materialise `regs` on `pre` (the program the model allocated, with any spill code) and
    verify the result against `reference` (the program before spilling; default `pre`)."""
    asg = Assignment("<model>", dict(regs), {v: problem.dense[v] + 1 for v in regs})
    post, mat = materialise(pre, asg)
    if not mat:
        finish_for_llc(single_function(pre), single_function(post), regs)
    reference = reference or pre
    post.file = reference.file.removesuffix(".mir").removesuffix(".pre") + ".alloc.mir"
    # Layer 1 first: its errors already reject (and are what the next prompt needs); only a
    # proposal that passes it pays for value flow and equivalence, and only all three verify.
    extra = parse_findings + mat
    first = verify_modules(post, reference, replace(opts, layers=("constraints",)), extra_findings=extra)
    if first.verdict is Verdict.REJECTED:
        return post, first
    return post, verify_modules(post, reference, opts, extra_findings=extra)


def named_vregs(f: Finding, dense: dict[VReg, int]) -> list[VReg]:
    """The virtual registers of the function (`dense`: the problem's) that finding `f` names."""
    named: list[VReg] = []
    for name in f.vregs:
        raw = name.lstrip("%")
        key: VReg = int(raw) if raw.isdigit() else raw
        if key in dense:
            named.append(key)
    return named


def _errors(report: Report) -> list[Finding]:
    return [f for f in report.findings if f.severity == "error"]


def bans_from(report: Report, problem: AllocationProblem, regs: dict[VReg, PhysReg],
              bans: dict[VReg, list[PhysReg]]) -> None:
    dense = problem.dense
    for f in _errors(report):
        named = [v for v in named_vregs(f, dense) if v in regs]
        if named:
            last = max(named, key=lambda v: dense[v])
            if regs[last] not in bans.setdefault(last, []):
                bans[last].append(regs[last])


def confined_from(report: Report, problem: AllocationProblem) -> set[VReg]:
    """The virtual registers of the lines whose decision named no listed choice (their
    `model-output` errors)."""
    dense = problem.dense
    return {v for f in _errors(report) if f.kind == "model-output" for v in named_vregs(f, dense)}


def kept_regs(report: Report, problem: AllocationProblem, regs: dict[VReg, PhysReg]) -> dict[VReg, PhysReg]:
    """The registers of `regs` that no error of `report` blames: every assigned virtual
    register that no error finding names (nothing when no error names one: then the report
    does not say where the proposal went wrong)."""
    dense = problem.dense
    blamed = {v for f in _errors(report) for v in named_vregs(f, dense)}
    return {v: r for v, r in regs.items() if v not in blamed} if blamed else {}


def round_seed(seed: int, r: int) -> int:
    """The seed of round r (from 0) of a loop run with `seed`: every round draws afresh."""
    return seed * 1_000_003 + r * 1009


def run_loop(pre: Module, lm: LM | None, *, samples: int = 1, rounds: int = 3, constrained: bool = True,
             repair: bool = True, seed: int = 0, timeout: float = 60.0, temperature: float = 0.7,
             over_budget: bool = False, waves: int | None = None, floor: bool = True, spill: bool = True,
             log: Callable[[str], None] = lambda s: None, use_feedback: bool = True,
             first_greedy: bool = True, use_bans: bool = True, keep_rest: bool = True,
             verify: Callable[..., tuple[Module, Report]] | None = None, steer: bool = True) -> LoopResult:
    """The loop on the one function of `pre`. `waves`: allocate for that occupancy. `spill`:
    when the values do not fit the budget, the model allocates the SMT allocator's program with
    spill code (`coloured_spill_program`, which a colouring places; also when constrained
    decoding runs out of registers on a program that fits by pressure), and one with more
    spill code after a round in which decoding ran out of registers only where no such
    program exists (where one does, the repair step allocates it). `floor`: a VERIFIED
    proposal with fewer waves per SIMD than a first-fit allocation reaches goes to the repair
    step, which puts occupancy first. `use_feedback`:
    off for the ablation that gives round 2 no findings (nor bans, nor kept lines). `use_bans`:
    the counterexample's bans and confined lines. `keep_rest`: after a counterexample, lines it
    does not blame keep their register. `first_greedy`: the first sample of
    each round is the model's most likely answer. `verify`: a `verify_regs` that caches
    verdicts (`verilocc eval`). `steer`: decoding keeps the first fit's waves
    (`verilocc.llm.decode`)."""
    t0 = time.monotonic()
    fn = single_function(pre)
    target = function_target(fn, None, pre.file)
    work_fn = fn if waves is None else with_waves(fn, waves)
    margins = iter(SPILL_MARGINS)
    spilled: Spilled | None = None
    coloured = False  # a colouring places every value of the program (the SMT allocator's)
    laddered = False  # the SMT allocator's spill ladders ran (`coloured_program`)

    def coloured_program() -> bool:
        """Take the program the SMT allocator's spill ladders colour (`coloured_spill_program`:
        the fewest spill instructions a first-fit or evicting colouring places in full, the
        budget filled before more is spilled), once; True when it replaces the current one."""
        nonlocal spilled, work_fn, coloured, laddered
        laddered = True
        if not spill:
            return False
        from verilocc.allocators.optimal import coloured_spill_program

        base = fn if waves is None else with_waves(fn, waves)
        program = coloured_spill_program(base, target, allocation_budget(base, target))
        if program is None:
            return False
        coloured = True
        got = program[0]
        if not got.homes:
            return False  # the program without spill code colours: the current one
        changed = spilled is None or spilled.fn is not got.fn
        spilled, work_fn = got, got.fn
        log(f"spill code (the SMT allocator's program): {got.describe()}")
        return changed

    def respill() -> bool:
        """Spill with the next margin; False when there is none or spilling is off."""
        nonlocal spilled, work_fn, coloured
        margin = next(margins, None)
        if not spill or margin is None:
            return False
        base = fn if waves is None else with_waves(fn, waves)
        try:
            got = spill_to_fit(base, target, allocation_budget(base, target), margin)
        except CannotSpill as e:
            log(f"spilling: {e}")
            return False
        if not got.homes:
            return margin == 0
        if margin == 0 and not laddered and coloured_program():
            return True
        coloured = False
        spilled, work_fn = got, got.fn
        log(f"spill code ({margin} register(s) below the budget): {got.describe()}")
        return True

    respill()
    work = dataclasses.replace(pre, functions=[work_fn])
    problem = build_problem(work_fn, target)
    problem.over_budget = over_budget
    problem.launch = function_launch(fn, target)  # the written file keeps the input's attributes
    tables = ChoiceTables(problem) if lm is not None else None
    if floor and repair and spilled is None and lm is not None:
        # The floor is the better of the model's own first fits (`occupancy_caps`, set by the
        # choice tables) and the SMT allocator's start, which the repair step reaches.
        problem.floor_waves = max(problem.floor_waves, start_waves(fn, target, waves))
    verify = verify or verify_regs  # `verilocc eval` passes one that caches verdicts
    opts = Options(timeout_s=timeout, seed=seed)
    attempts: list[Attempt] = []
    feedback = ""
    bans: dict[VReg, list[PhysReg]] = {}
    keep: dict[VReg, PhysReg] = {}
    confine: set[VReg] = set()
    best: tuple[int, Proposal] | None = None

    def done(post: Module, regs: dict[VReg, PhysReg], how: str, usage: dict[str, int]) -> LoopResult:
        return LoopResult(True, post, regs, attempts, how, usage, time.monotonic() - t0, problem, spilled)

    for r in range(rounds if lm is not None else 0):
        round_best: tuple[int, Proposal, Report] | None = None
        dead_ends = 0
        t1 = time.monotonic()
        props = propose_many(lm, problem, samples=samples, constrained=constrained, feedback=feedback,  # type: ignore[arg-type]
                             bans=bans, temperature=temperature, seed=round_seed(seed, r),
                             tables=tables, greedy_first=first_greedy, keep=keep,
                             confine=confine, steer=steer)
        decode_seconds = (time.monotonic() - t1) / samples
        for s, prop in enumerate(props):
            t1 = time.monotonic() - decode_seconds
            head = prompt_head(problem, feedback)
            if prop.steered_from is not None:
                log(f"round {r + 1} sample {s + 1}: decoding steered from line {prop.steered_from + 1} to keep the "
                    f"waves/SIMD of a first fit ({prop.overridden} line(s) not the model's first answer)")
            if prop.dead_end is not None:
                dead_ends += 1
                attempts.append(Attempt(r, s, head, prop.text, "DEAD-END", 1, time.monotonic() - t1,
                                        kept=_kept(prop, keep), confined=len(confine)))
                log(f"round {r + 1} sample {s + 1}: constrained decoding stopped: {prop.dead_end}")
                continue
            post, report = verify(work, problem, prop.regs, prop.findings, opts, reference=pre)
            errors = sum(1 for f in report.findings if f.severity == "error")
            attempts.append(Attempt(r, s, head, prop.text, report.verdict.value, errors, time.monotonic() - t1,
                                    list(report.findings), feedback_read=reads_feedback(lm) or not feedback,  # type: ignore[arg-type]
                                    kept=_kept(prop, keep), confined=len(confine)))
            log(f"round {r + 1} sample {s + 1}: {report.verdict.value} ({errors} error(s), "
                f"{time.monotonic() - t1:.1f}s)")
            if report.verdict is Verdict.VERIFIED and (over_budget or not _over_budget(report)):
                usage = problem.usage(prop.regs)
                how = f"VERIFIED in round {r + 1}, sample {s + 1}"
                if repair and floor and usage["waves"] < problem.floor_waves:
                    raised = _repair(fn, target, prop.regs, timeout, seed, waves, floor, spill)
                    if not isinstance(raised, str) and raised.usage.get("waves", 0) > usage["waves"]:
                        assert raised.function is not None
                        attempts.append(Attempt(r, s, "", "", "REPAIR-VERIFIED", 0, raised.seconds))
                        log(f"repair step: {raised.usage['waves']} waves/SIMD instead of the proposal's {usage['waves']}")
                        return done(_module_of(pre, raised.function), dict(raised.assignment),
                                    how + f"; occupancy raised by the SMT repair step ({raised.status})", raised.usage)
                    how += (f"; {usage['waves']} waves/SIMD, fewer than the {problem.floor_waves} a first-fit "
                            "allocation reaches (the repair step could not raise it)")
                return done(post, prop.regs, how, usage)
            if report.verdict is Verdict.VERIFIED:
                log(f"round {r + 1} sample {s + 1}: VERIFIED but beyond the registers the function's attributes "
                    "request (llc-19 reserves them); not accepted without --over-budget")
            if round_best is None or errors < round_best[0]:
                round_best = (errors, prop, report)
        renewed = dead_ends == samples and constrained and not laddered and coloured_program()
        if dead_ends == samples and constrained and coloured and repair and not renewed:
            # A colouring places every value of this program: the repair step allocates it
            # rather than more spill code than it needs.
            log(f"round {r + 1}: constrained decoding ran out of registers on a program a colouring places; "
                "the repair step allocates it")
            break
        if renewed or dead_ends == samples and constrained and respill():
            # Constrained decoding ran out of registers: the next round allocates the program
            # with more spill code (its registers have new numbers: feedback starts afresh).
            work = dataclasses.replace(pre, functions=[work_fn])
            problem = build_problem(work_fn, target)
            problem.over_budget = over_budget
            tables = ChoiceTables(problem)
            feedback, bans, keep, confine, best = "", {}, {}, set(), None
            continue
        if dead_ends == samples and samples == 1 and first_greedy and not feedback and repair:
            # The same program, no findings to act on: the next round would decode the same
            # dead end (its one sample is the model's most likely answer).
            log(f"round {r + 1}: no other program to allocate; the repair step allocates this one")
            break
        if round_best is not None:
            errors, prop, report = round_best
            if best is None or errors <= best[0]:
                best = (errors, prop)
            if not use_feedback:
                continue
            feedback = render_feedback(report, rename=lambda m: rename_text(m, problem))
            if use_bans:
                bans_from(report, problem, prop.regs, bans)
                confine |= confined_from(report, problem)
            if keep_rest:
                keep = kept_regs(report, problem, prop.regs)
            if keep_rest and r + 1 < rounds:
                log(f"round {r + 2}: {len(keep)} of {len(problem.order)} line(s) keep their register; "
                    f"the model decides the other {len(problem.order) - len(keep)}")
    why = "no VERIFIED proposal in " + (f"{rounds} round(s) of {samples} sample(s)" if lm is not None else "0 rounds")
    dead = [a for a in attempts if a.verdict == "DEAD-END"]
    if dead and len(dead) == len(attempts):
        why += ("; constrained decoding ran out of registers (the function needs "
                + ("more spill code than the spiller wrote" if spill else "spill code, and --no-spill is set")
                + ("" if over_budget else " within the registers its attributes request") + ")")
    if repair:
        t1 = time.monotonic()
        got = _repair(fn, target, best[1].regs if best else {}, timeout, seed, waves, floor, spill)
        if isinstance(got, str):
            attempts.append(Attempt(rounds, 0, "", "", "REPAIR-UNAVAILABLE", 0, time.monotonic() - t1))
            why += f"; repair: {got}"
        else:
            assert got.function is not None
            attempts.append(Attempt(rounds, 0, "", "", "REPAIR-VERIFIED", 0, time.monotonic() - t1))
            spilled = got.spilled
            return done(_module_of(pre, got.function), dict(got.assignment),
                        f"VERIFIED after the SMT repair step ({got.status})", got.usage)
    return LoopResult(False, None, {}, attempts, why, {}, time.monotonic() - t0, problem, spilled)


#: Margins below the budget (registers) the model loop's spill code aims for, one per try.
SPILL_MARGINS = (0, 4, 16)


def with_waves(fn: Any, waves: int) -> Any:
    """A copy of `fn` whose attributes ask for `waves` waves per SIMD (the budget the model
    loop allocates within; the written file keeps the attributes it had)."""
    attrs = {k: v for k, v in fn.ir_attributes.items() if k not in ("amdgpu-num-vgpr", "amdgpu-num-sgpr")}
    attrs["amdgpu-waves-per-eu"] = f"{waves},{waves}"
    return dataclasses.replace(fn, ir_attributes=attrs)


def _module_of(pre: Module, fn: Any) -> Module:
    return dataclasses.replace(pre, functions=[fn])


def _kept(prop: Proposal, keep: dict[VReg, PhysReg]) -> int:
    """The lines of `prop` that wrote their kept register again (a kept register is written
    wherever it is listed, and cannot be chosen where it is not)."""
    return sum(1 for v, reg in keep.items() if prop.regs.get(v) == reg)


def _over_budget(report: Report) -> bool:
    return any(f.kind == "budget" for f in report.findings)


def _repair(fn: Any, target: Any, prefer: dict[VReg, PhysReg], timeout: float, seed: int, waves: int | None = None,
            floor: bool = True, spill: bool = True) -> Any:
    """The SMT allocator's VERIFIED allocation keeping as many of `prefer` as it can (a
    `SolverAllocation`), or why there is none (a sentence)."""
    try:
        from verilocc.allocators.optimal import solve_function  # type: ignore[import-not-found]
    except ImportError:
        return "not available (verilocc.allocators.optimal, the SMT allocator, is not in this build)"
    sol = solve_function(fn, target, prefer=prefer or None, objective="registers", timeout=timeout, seed=seed,
                         waves=waves, floor=floor, spill=spill)
    if sol.status not in ("optimal", "feasible") or sol.function is None:
        return sol.status + (f" ({sol.reason})" if sol.reason else "")
    return sol
