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

from verilocc.allocators.colouring import start_waves
from verilocc.allocators.problem import allocation_budget
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
    program exists (where one does, the repair step allocates it). `floor`: a VERIFIED proposal with fewer waves per SIMD than a first-fit
    allocation reaches goes to the repair step, which puts occupancy first. `use_feedback`:
    off for the ablation that gives round 2 no findings (nor bans, nor kept lines). `use_bans`:
    the counterexample's bans and confined lines. `keep_rest`: after a counterexample, lines it
    does not blame keep their register. `first_greedy`: the first sample of
    each round is the model's most likely answer. `verify`: a `verify_regs` that caches
    verdicts (`verilocc eval`). `steer`: decoding keeps the first fit's waves
    (`verilocc.llm.decode`)."""
    return _Loop(pre, lm, _LoopOptions(samples, rounds, constrained, repair, seed, timeout, temperature, over_budget,
                                       waves, floor, spill, log, use_feedback, first_greedy, use_bans, keep_rest,
                                       verify or verify_regs, steer)).run()


@dataclass(frozen=True)
class _LoopOptions:
    """`run_loop`'s keyword arguments (`verify`: `verify_regs` unless one was given)."""

    samples: int
    rounds: int
    constrained: bool
    repair: bool
    seed: int
    timeout: float
    temperature: float
    over_budget: bool
    waves: int | None
    floor: bool
    spill: bool
    log: Callable[[str], None]
    use_feedback: bool
    first_greedy: bool
    use_bans: bool
    keep_rest: bool
    verify: Callable[..., tuple[Module, Report]]
    steer: bool


class _Loop:
    """One run of the loop: the program the model allocates (with spill code once the spiller
    wrote some), its problem and choice tables, what the rounds learnt (feedback, bans, kept
    and confined lines, the best proposal so far) and the attempts made."""

    def __init__(self, pre: Module, lm: LM | None, o: _LoopOptions) -> None:
        self.t0 = time.monotonic()
        self.pre, self.lm, self.o = pre, lm, o
        self.fn = single_function(pre)
        self.target = function_target(self.fn, None, pre.file)
        self.work_fn = self.fn if o.waves is None else with_waves(self.fn, o.waves)
        self.margins = iter(SPILL_MARGINS)
        self.spilled: Spilled | None = None
        self.coloured = False  # a colouring places every value of the program (the SMT allocator's)
        self.laddered = False  # the SMT allocator's spill ladders ran (`coloured_program`)
        self.stop = False  # no round left that could decode something else: the repair step next
        self.respill()
        self._new_problem()
        self.problem.launch = function_launch(self.fn, self.target)  # the written file keeps the input's attributes
        self.tables = ChoiceTables(self.problem) if lm is not None else None
        if o.floor and o.repair and self.spilled is None and lm is not None:
            # The floor is the better of the model's own first fits (`occupancy_caps`, set by the
            # choice tables) and the SMT allocator's start, which the repair step reaches.
            self.problem.floor_waves = max(self.problem.floor_waves, start_waves(self.fn, self.target, o.waves))
        self.opts = Options(timeout_s=o.timeout, seed=o.seed)
        self.attempts: list[Attempt] = []
        self._forget()

    def _new_problem(self) -> None:
        """The problem of the program the model allocates now."""
        self.work = dataclasses.replace(self.pre, functions=[self.work_fn])
        self.problem = build_problem(self.work_fn, self.target)
        self.problem.over_budget = self.o.over_budget

    def _forget(self) -> None:
        """No feedback, bans, kept or confined lines, nor best proposal: what a first round has."""
        self.feedback = ""
        self.bans: dict[VReg, list[PhysReg]] = {}
        self.keep: dict[VReg, PhysReg] = {}
        self.confine: set[VReg] = set()
        self.best: tuple[int, Proposal] | None = None

    def coloured_program(self) -> bool:
        """Take the program the SMT allocator's spill ladders colour (`coloured_spill_program`:
        the fewest spill instructions a first-fit or evicting colouring places in full, the
        budget filled before more is spilled), once; True when it replaces the current one."""
        self.laddered = True
        if not self.o.spill:
            return False
        from verilocc.allocators.optimal import coloured_spill_program

        base = self.fn if self.o.waves is None else with_waves(self.fn, self.o.waves)
        program = coloured_spill_program(base, self.target, allocation_budget(base, self.target))
        if program is None:
            return False
        self.coloured = True
        got = program[0]
        if not got.homes:
            return False  # the program without spill code colours: the current one
        changed = self.spilled is None or self.spilled.fn is not got.fn
        self.spilled, self.work_fn = got, got.fn
        self.o.log(f"spill code (the SMT allocator's program): {got.describe()}")
        return changed

    def respill(self) -> bool:
        """Spill with the next margin; False when there is none or spilling is off."""
        margin = next(self.margins, None)
        if not self.o.spill or margin is None:
            return False
        base = self.fn if self.o.waves is None else with_waves(self.fn, self.o.waves)
        try:
            got = spill_to_fit(base, self.target, allocation_budget(base, self.target), margin)
        except CannotSpill as e:
            self.o.log(f"spilling: {e}")
            return False
        if not got.homes:
            return margin == 0
        if margin == 0 and not self.laddered and self.coloured_program():
            return True
        self.coloured = False
        self.spilled, self.work_fn = got, got.fn
        self.o.log(f"spill code ({margin} register(s) below the budget): {got.describe()}")
        return True

    def done(self, post: Module, regs: dict[VReg, PhysReg], how: str, usage: dict[str, int]) -> LoopResult:
        return LoopResult(True, post, regs, self.attempts, how, usage, time.monotonic() - self.t0, self.problem,
                          self.spilled)

    def run(self) -> LoopResult:
        for r in range(self.o.rounds if self.lm is not None else 0):
            found = self._round(r)
            if found is not None:
                return found
            if self.stop:
                break
        return self._give_up()

    def _round(self, r: int) -> LoopResult | None:
        """Round `r`: its samples decoded and verified; the result when one is accepted, else
        what the round teaches the next (or more spill code when every sample ran out of
        registers)."""
        o = self.o
        round_best: tuple[int, Proposal, Report] | None = None
        dead_ends = 0
        t1 = time.monotonic()
        props = propose_many(self.lm, self.problem, samples=o.samples, constrained=o.constrained,  # type: ignore[arg-type]
                             feedback=self.feedback, bans=self.bans, temperature=o.temperature,
                             seed=round_seed(o.seed, r), tables=self.tables, greedy_first=o.first_greedy,
                             keep=self.keep, confine=self.confine, steer=o.steer)
        decode_seconds = (time.monotonic() - t1) / o.samples
        for s, prop in enumerate(props):
            tried = self._try(r, s, prop, time.monotonic() - decode_seconds)
            if tried is None:
                dead_ends += 1
                continue
            post, report, errors = tried
            if report.verdict is Verdict.VERIFIED and (o.over_budget or not _over_budget(report)):
                return self._accept(r, s, prop, post)
            if report.verdict is Verdict.VERIFIED:
                o.log(f"round {r + 1} sample {s + 1}: VERIFIED but beyond the registers the function's attributes "
                      "request (llc-19 reserves them); not accepted without --over-budget")
            if round_best is None or errors < round_best[0]:
                round_best = (errors, prop, report)
        stuck = dead_ends == o.samples and o.constrained
        renewed = stuck and not self.laddered and self.coloured_program()
        if stuck and self.coloured and o.repair and not renewed:
            # A colouring places every value of this program: the repair step allocates it
            # rather than more spill code than it needs.
            o.log(f"round {r + 1}: constrained decoding ran out of registers on a program a colouring places; "
                  "the repair step allocates it")
            self.stop = True
        elif renewed or stuck and self.respill():
            # Constrained decoding ran out of registers: the next round allocates the program
            # with more spill code (its registers have new numbers: feedback starts afresh).
            self._new_problem()
            self.tables = ChoiceTables(self.problem)
            self._forget()
        elif stuck and o.samples == 1 and o.first_greedy and not self.feedback and o.repair:
            # The same program, no findings to act on: the next round would decode the same
            # dead end (its one sample is the model's most likely answer).
            o.log(f"round {r + 1}: no other program to allocate; the repair step allocates this one")
            self.stop = True
        elif round_best is not None:
            self._learn(r, *round_best)
        return None

    def _try(self, r: int, s: int, prop: Proposal, t1: float) -> tuple[Module, Report, int] | None:
        """Verify sample `s` of round `r` (decoding started at `t1`) and record the attempt:
        (the allocated module, the report, its errors), None when decoding reached a dead end."""
        o = self.o
        head = prompt_head(self.problem, self.feedback)
        if prop.steered_from is not None:
            o.log(f"round {r + 1} sample {s + 1}: decoding steered from line {prop.steered_from + 1} to keep the "
                  f"waves/SIMD of a first fit ({prop.overridden} line(s) not the model's first answer)")
        if prop.dead_end is not None:
            self.attempts.append(Attempt(r, s, head, prop.text, "DEAD-END", 1, time.monotonic() - t1,
                                         kept=_kept(prop, self.keep), confined=len(self.confine)))
            o.log(f"round {r + 1} sample {s + 1}: constrained decoding stopped: {prop.dead_end}")
            return None
        post, report = o.verify(self.work, self.problem, prop.regs, prop.findings, self.opts, reference=self.pre)
        errors = sum(1 for f in report.findings if f.severity == "error")
        self.attempts.append(Attempt(r, s, head, prop.text, report.verdict.value, errors, time.monotonic() - t1,
                                     list(report.findings),
                                     feedback_read=reads_feedback(self.lm) or not self.feedback,  # type: ignore[arg-type]
                                     kept=_kept(prop, self.keep), confined=len(self.confine)))
        o.log(f"round {r + 1} sample {s + 1}: {report.verdict.value} ({errors} error(s), "
              f"{time.monotonic() - t1:.1f}s)")
        return post, report, errors

    def _accept(self, r: int, s: int, prop: Proposal, post: Module) -> LoopResult:
        """A VERIFIED proposal within the budget: the result, or the repair step's when the
        proposal has fewer waves than the floor and the repair step raises them."""
        o, problem = self.o, self.problem
        usage = problem.usage(prop.regs)
        how = f"VERIFIED in round {r + 1}, sample {s + 1}"
        if o.repair and o.floor and usage["waves"] < problem.floor_waves:
            raised = _repair(self.fn, self.target, prop.regs, o.timeout, o.seed, o.waves, o.floor, o.spill)
            if not isinstance(raised, str) and raised.usage.get("waves", 0) > usage["waves"]:
                assert raised.function is not None
                self.attempts.append(Attempt(r, s, "", "", "REPAIR-VERIFIED", 0, raised.seconds))
                o.log(f"repair step: {raised.usage['waves']} waves/SIMD instead of the proposal's {usage['waves']}")
                return self.done(_module_of(self.pre, raised.function), dict(raised.assignment),
                                 how + f"; occupancy raised by the SMT repair step ({raised.status})", raised.usage)
            how += (f"; {usage['waves']} waves/SIMD, fewer than the {problem.floor_waves} a first-fit "
                    "allocation reaches (the repair step could not raise it)")
        return self.done(post, prop.regs, how, usage)

    def _learn(self, r: int, errors: int, prop: Proposal, report: Report) -> None:
        """What round `r`'s best proposal teaches the next round: its findings as feedback,
        bans and confined lines, and the lines it does not blame kept."""
        o, problem = self.o, self.problem
        if self.best is None or errors <= self.best[0]:
            self.best = (errors, prop)
        if not o.use_feedback:
            return
        self.feedback = render_feedback(report, rename=lambda m: rename_text(m, problem))
        if o.use_bans:
            bans_from(report, problem, prop.regs, self.bans)
            self.confine |= confined_from(report, problem)
        if o.keep_rest:
            self.keep = kept_regs(report, problem, prop.regs)
        if o.keep_rest and r + 1 < o.rounds:
            o.log(f"round {r + 2}: {len(self.keep)} of {len(problem.order)} line(s) keep their register; "
                  f"the model decides the other {len(problem.order) - len(self.keep)}")

    def _give_up(self) -> LoopResult:
        """No proposal accepted: the repair step's allocation from the best proposal, else why
        there is none."""
        o = self.o
        why = "no VERIFIED proposal in " + (f"{o.rounds} round(s) of {o.samples} sample(s)" if self.lm is not None
                                            else "0 rounds")
        dead = [a for a in self.attempts if a.verdict == "DEAD-END"]
        if dead and len(dead) == len(self.attempts):
            why += ("; constrained decoding ran out of registers (the function needs "
                    + ("more spill code than the spiller wrote" if o.spill else "spill code, and --no-spill is set")
                    + ("" if o.over_budget else " within the registers its attributes request") + ")")
        if o.repair:
            t1 = time.monotonic()
            got = _repair(self.fn, self.target, self.best[1].regs if self.best else {}, o.timeout, o.seed, o.waves,
                          o.floor, o.spill)
            if isinstance(got, str):
                self.attempts.append(Attempt(o.rounds, 0, "", "", "REPAIR-UNAVAILABLE", 0, time.monotonic() - t1))
                why += f"; repair: {got}"
            else:
                assert got.function is not None
                self.attempts.append(Attempt(o.rounds, 0, "", "", "REPAIR-VERIFIED", 0, time.monotonic() - t1))
                self.spilled = got.spilled
                return self.done(_module_of(self.pre, got.function), dict(got.assignment),
                                 f"VERIFIED after the SMT repair step ({got.status})", got.usage)
        return LoopResult(False, None, {}, self.attempts, why, {}, time.monotonic() - self.t0, self.problem, self.spilled)


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
