"""An SMT register allocator: an assignment for a pre-RA function that z3 finds, optimises and
verilocc then verifies.

Unknowns. Every virtual register ``%v`` gets ``r_v``, the index of its first 32-bit register in
its register file, and, when its class allows several files (``av_*`` classes: VGPR or AGPR;
``sreg_*`` classes: SGPRs or VCC), ``f_v`` choosing the file; both are 16-bit bit-vectors whose
values stay far from wrapping (z3 bit-blasts these colouring problems to SAT, much faster
than linear integer arithmetic). Files
are the numbered SGPR, VGPR and AGPR files and VCC, seen as a two-register file
(``vcc_lo``, ``vcc_hi``); other special registers are reserved or in no allocatable class.

Constraints (hard), the verifier's own: the problem (`verilocc.allocators.problem`) takes the
interference relation layer 1 checks (`verilocc.analysis.interference`) and the register limits
(`verilocc.target.limits`); the encoding (`verilocc.allocators.encoding`) states them in z3:
- *domain*: ``(f_v, r_v)`` names a member of the class on the target, inside the budget the
  function's attributes ask for (``amdgpu-num-vgpr``, ``amdgpu-waves-per-eu``, ...), not
  reserved; tuple width and alignment are part of membership. On a unified VGPR/AGPR file
  (gfx90a/94x/950) VGPRs rounded up to 4 plus AGPRs stay within the file;
- *interference*, at 16-bit lane granularity, fact by fact; a COPY's destination may share
  the source's copied lanes only at the identity position (the copy becomes an identity).
Objectives, lexicographic: (1) with ``prefer``, keep as many preferred registers as possible
(the repair of a proposed assignment); (2) ``registers``: VGPRs + AGPRs (highest index + 1 per
file, as the hardware counts), then SGPRs; ``waves``: waves per SIMD first (as llc counts
them, `verilocc.target.waves`: no wave above what the LDS and work-group size allow is
sought), then registers; (3) copy hints: as many COPYs as possible become identities
(VirtRegRewriter deletes them). Step (1) is MaxSAT for z3's Optimize; step (2) starts from a
first-fit colouring (`greedy_assignment`) and descends on each bound with incremental z3
checks, trying the pressure lower bound first; a bound is proved optimal when z3 answers unsat
one below it or it meets the pressure bound. Step (3) assumes every hint and drops one per
unsat core (best effort; it does not affect "optimal"). The search (`verilocc.allocators.search`)
counts its budget in z3 resource units, so the result does not depend on the machine's speed.

Nothing leaves this module unchecked: the assignment is materialised, given llc's block
live-ins and verified with all three layers; only a VERIFIED result is "optimal" or
"feasible". A kernel whose pressure exceeds the budget needs spill code, which an assignment
cannot express: the function gets spill code first (`verilocc.allocators.spill`; "infeasible"
with `spill=False`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from verilocc.allocators.encoding import Encoding, NoRegister
from verilocc.analysis.calls import call_mask, sgpr_striped
from verilocc.allocators.colouring import greedy_assignment, spill_fit
from verilocc.allocators.files import SGPR_FILE, VGPR_FILE
from verilocc.allocators.problem import Problem, UnsupportedByAllocator, allocation_budget, build_problem, vreg_key
from verilocc.allocators.usage import register_usage
from verilocc.allocators.search import RLIMIT_PER_SECOND, Bound, Search, wave_limits
from verilocc.allocators.evict import evicting_fit
from verilocc.allocators.spill import CannotSpill, Spilled, spill_to_fit, spillable_values
from verilocc.allocators.spill_budget import Margin
from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function, Module
from verilocc.target import PhysReg, RegFile, Target
from verilocc.target.limits import Limits
from verilocc.target.waves import waves_per_simd

OBJECTIVES = ("registers", "waves")
STATUSES = ("optimal", "feasible", "infeasible", "unknown", "unsupported")

#: Share of the time limit the objective descent may use; the rest is for copy hints.
_DESCENT_SHARE = 0.75
#: CPU-time safety net, in multiples of the time limit, for machines much slower than ours.
_CPU_FACTOR = 3.0


@dataclass
class SolverAllocation:
    status: str  # "optimal" | "feasible" | "infeasible" | "unknown" | "unsupported"
    assignment: dict[int | str, PhysReg]  # vreg id -> physical register, as Assignment.regs
    seconds: float
    kept: int = 0  # preferences honoured (repair mode)
    reason: str = ""  # why infeasible/unknown/unsupported, one sentence
    usage: dict[str, int] = field(default_factory=dict)  # {"vgpr": n, "agpr": n, "sgpr": n, "waves": w}
    #: The allocated, VERIFIED function (with llc's block live-ins) when status is optimal/feasible.
    function: Function | None = field(default=None, repr=False, compare=False)
    #: The spill code written before allocating (None when the values fit without it).
    spilled: Spilled | None = field(default=None, repr=False, compare=False)
    #: Waves per SIMD no allocation of the (spilled) program can exceed (0: not computed).
    waves_bound: int = 0


def solve_function(fn: Function, target: Target, *, prefer: Mapping[int | str, PhysReg] | None = None,
                   objective: str = "registers", timeout: float = 60.0, seed: int = 0, waves: int | None = None,
                   floor: bool = True, spill: bool = True) -> SolverAllocation:
    """Allocate the pre-RA function `fn` optimally (see the module docstring) and verify it.

    `waves`: allocate for that occupancy (its register budget) instead of the one the
    function's attributes ask for. `floor`: occupancy first (the waves LLVM's greedy allocator
    reaches are the floor), then the objective. `spill`: write spill code when the values do
    not fit the budget (`verilocc.allocators.spill`)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    return _Solve(fn, target, prefer, objective, timeout, seed, waves, floor, spill).solve()


class _Solve:
    """One run of `solve_function`: the problem solved (the program's, or that of the program
    with spill code once the program does not fit), z3's search on it and the solver time
    spent so far."""

    def __init__(self, fn: Function, target: Target, prefer: Mapping[int | str, PhysReg] | None, objective: str,
                 timeout: float, seed: int, waves: int | None, floor: bool, spill: bool) -> None:
        self.start = time.perf_counter()
        self.fn, self.target, self.prefer, self.objective = fn, target, prefer, objective
        self.timeout, self.seed, self.waves, self.floor, self.spill = timeout, seed, waves, floor, spill
        self.spilled: Spilled | None = None
        self.spent = 0
        self.search: Search | None = None
        self.enc: Encoding | None = None

    def result(self, status: str, reason: str = "", **kw: object) -> SolverAllocation:
        return SolverAllocation(status, {}, round(time.perf_counter() - self.start, 3), reason=reason, **kw)  # type: ignore[arg-type]

    def solve(self) -> SolverAllocation:
        self.budget = allocation_budget(self.fn, self.target, self.waves)
        try:
            self.problem = build_problem(self.fn, self.target, self.budget)
        except UnsupportedByAllocator as e:
            return self.result("unsupported", str(e))
        striped = sgpr_striped(self.fn)
        if any(call_mask(ins, striped) is None for b in self.fn.blocks for ins in b.instructions
               if any(op.kind == "regmask" for op in ins.operands)):
            return self.result("unsupported", "a call's register mask is not one the verifier models (csr_amdgpu*)")
        self.units = max(1, int(self.timeout * RLIMIT_PER_SECOND))
        self.cpu_deadline = time.process_time() + _CPU_FACTOR * self.timeout
        try:
            failed = self._fit()
        except NoRegister as e:
            cls = self.problem.values[e.vreg].cls
            return self.result("infeasible", f"no register of class {cls.name} for %{e.vreg} is allocatable within "
                                             "this function's budget and reservations")
        if failed is not None:
            return failed
        self._optimise()
        proved = self.search.proved  # type: ignore[union-attr]
        self._copy_hints()
        return self._verified(proved)

    # (0) Fit: an assignment of the program (first fit, else z3 in a share of the time
    # limit), or of the program with spill code (`_spill_ladder`, one per plan of `_PLANS`;
    # of the programs they colour, the one with the fewest spill instructions is kept). Only
    # when no ladder colours its program does z3 look for an assignment of the first plan's
    # last one, in a share of the time limit; so every try ends, and the time limit is left
    # for the objectives.
    def _fit(self) -> SolverAllocation | None:
        """None when an assignment is found (`search` and `enc` are then its problem's), else
        the result that says why there is none."""
        over = _over_budget(self.problem)
        answer = "unsat" if over is not None else self._z3_fit(self.problem, greedy_assignment(self.problem),
                                                               _FIT_SHARE if self.spill else 1.0)
        why = over or self._failure(answer)
        if answer == "sat":
            return None
        if not self.spill:
            status = "infeasible" if answer == "unsat" else "unknown"
            return self.result(status, why + "; spill code is off (--no-spill)")
        return self._fit_with_spill_code(why)

    def _fit_with_spill_code(self, why: str) -> SolverAllocation | None:
        programs = _Programs(self.fn, self.target, self.budget, spillable_values(self.fn, self.target, self.budget))
        ladders = [_spill_ladder(programs, _PLANS[0])]
        if ladders[0].tries > 1:  # a ladder whose first program colours is every plan's
            ladders += [_spill_ladder(programs, plan) for plan in _PLANS[1:]]
        for ladder in sorted(ladders, key=_Ladder.cost):
            if ladder.placed is not None and ladder.spilled is not None and ladder.problem is not None:
                self.spilled, self.problem = ladder.spilled, ladder.problem
                if self._z3_fit(self.problem, ladder.placed, _FIT_SHARE) == "sat":
                    return None
        last = ladders[0]
        if last.spilled is None or last.problem is None:
            return self.result("infeasible", f"{why}; spilling cannot make it fit: {last.why}")
        self.spilled, self.problem = last.spilled, last.problem  # no more room to ask for: z3 on it
        answer = self._z3_fit(self.problem, None, _FIT_SHARE)
        if answer != "sat":
            return self.result("infeasible" if answer == "unsat" else "unknown", self._failure(answer))
        return None

    def _z3_fit(self, p: Problem, start_point: dict[VReg, tuple[int, int]] | None, share: float) -> str:
        """Sat when z3 confirms `start_point` or finds an assignment of `p` in `share` of the
        time limit; `search` and `enc` are then this problem's."""
        import z3

        self.enc = Encoding(p, z3.Context())
        search = self.search = Search(self.enc, self.seed, self.units, self.cpu_deadline)
        search.spent = self.spent
        answer = "unknown"
        if start_point is not None:
            answer = search.check(self.enc.pinned(start_point), pinned=True)
        if answer != "sat":
            answer = search.check(None, min(search.spent + share * self.units, self.units))
        self.spent = search.spent
        return answer

    def _failure(self, answer: str) -> str:
        assert self.search is not None
        return ("the values live at once do not fit in the budget" if answer == "unsat"
                else f"no assignment found: {self.search.reason}")

    # (1) Occupancy first when it is the floor; keep as many preferred registers as
    # possible; then the objective. Each step gets an equal share of the time left for the
    # steps; time a step does not use goes to the next.
    def _optimise(self) -> None:
        assert self.search is not None and self.enc is not None
        self.descent_end = _DESCENT_SHARE * self.units
        kinds = ("waves", "vector", "sgpr") if self.objective == "waves" or self.floor else ("vector", "sgpr")
        self.steps = len(kinds) + (1 if self.prefer else 0)
        if self.floor and "waves" in kinds:
            self._descend("waves")
        if self.prefer:
            soft = [t for v, reg in sorted(self.prefer.items(), key=lambda kv: vreg_key(kv[0]))
                    if (t := self.enc.matches(v, reg)) is not None]
            self.search.maxsat(soft, self._share())
        for kind in kinds:
            if not (self.floor and kind == "waves"):
                self._descend(kind)

    def _share(self) -> float:
        """The search's budget mark for the next step: an equal share of what is left."""
        assert self.search is not None
        now = self.search.spent
        until = now + max(0.0, self.descent_end - now) / max(1, self.steps)
        self.steps -= 1
        return until

    def _descend(self, kind: str) -> None:
        assert self.enc is not None and self.search is not None
        problem, target = self.problem, self.target
        bound = Bound(self.enc, kind)
        current = bound.current(self.search)
        if kind == "vector":
            lower = problem.pressure["vector"]
            # Occupancy thresholds are likely answers: try them before bisecting.
            probes = sorted({wave_limits(target, w, problem.launch())[0] for w in range(1, target.max_waves_per_simd + 1)}
                            & set(range(lower, current)), reverse=True)
        elif kind == "sgpr":
            lower, probes = problem.pressure["sgpr"], []
        else:
            lower, probes = -waves_bound(problem), []
        self.search.descend(bound, current, lower, self._share(), probes)

    # (3) Copy hints: as many identity copies as possible (best effort, not part of "optimal").
    def _copy_hints(self) -> None:
        assert self.enc is not None and self.search is not None
        enc = self.enc
        hints = [h for dst, doff, src, soff, _ in self.problem.copies
                 if (h := enc.copy_hint(dst, doff, src, soff)) is not None]
        self.search.greedy_hints(hints, self.units)

    def _verified(self, proved: bool) -> SolverAllocation:
        """The assignment z3 found, with its status, verified (`_checked`)."""
        assert self.search is not None and self.enc is not None and self.search.model is not None
        problem, spilled = self.problem, self.spilled
        assignment = {v: self.enc.register_of(v, self.search.model) for v in sorted(problem.values, key=vreg_key)}
        kept = sum(1 for v, reg in (self.prefer or {}).items() if assignment.get(v) == reg)
        reason = "" if proved else f"not proved optimal: {self.search.reason or 'z3 could not decide a bound'}"
        status = "optimal" if proved else "feasible"
        if spilled is not None and spilled.homes:
            status = "feasible"
            reason = "the assignment of the program with spill code is " + ("proved optimal" if proved else
                                                                             "not proved optimal")
        if status == "optimal" and any(val.half for val in problem.values.values()):
            # The model puts 16-bit values in low halves only: a bound proved there is not one of
            # every allocation (two 16-bit values may share a VGPR).
            status, reason = "feasible", "16-bit values take the low half of a VGPR each; not proved optimal"
        got = _checked(self.fn, self.target, assignment, status, kept, self.start, reason, problem.fn)
        got.spilled = spilled if spilled is not None and spilled.homes else None
        got.waves_bound = waves_bound(problem)
        return got


#: Margins below the budget (registers) the spiller aims for, one per try.
_SPILL_MARGINS = (0, 2, 4, 8, 16, 32)
#: Tries at one margin that spill more values as a whole before the margin grows.
_FORCE_ROUNDS = 6


@dataclass(frozen=True)
class _Plan:
    """How a spill ladder colours and what it asks for when the colouring fails."""

    evict: bool  # colour with `evicting_fit` where first fit leaves values out
    room_first: int  # failed colourings before the values left out are spilled as a whole
    stay: bool  # spill more values as a whole at the same margin while that adds values
    whole: bool = False  # the spiller may spill a value wherever it lives (`spill_to_fit(whole_ranges=...)`)


#: The ladders tried. Each wins on some kernels: first fit alone with more room first (its
#: left-out values are often fine to spill), eviction with more room first, and eviction
#: spilling the values it gives up (the cheap ones) from the first failure on.
_PLANS = (_Plan(evict=False, room_first=2, stay=False), _Plan(evict=True, room_first=2, stay=True),
          _Plan(evict=True, room_first=0, stay=True), _Plan(evict=False, room_first=2, stay=False, whole=True),
          _Plan(evict=True, room_first=2, stay=True, whole=True), _Plan(evict=True, room_first=0, stay=True, whole=True))
#: Share of the time limit one try may spend looking for a first assignment before spilling more.
_FIT_SHARE = 0.15


@dataclass
class _Ladder:
    """The end of a spill ladder: the last program with spill code that fits by pressure and
    its problem (None when the spiller could not make one), a colouring of every value of it
    (None when the ladder ran out), why not, and the programs tried."""

    spilled: Spilled | None
    problem: Problem | None
    placed: dict[VReg, tuple[int, int]] | None
    why: str
    tries: int

    def cost(self) -> tuple[int, int]:
        """Coloured ladders first, by the spill instructions their program has."""
        if self.placed is None or self.spilled is None:
            return (1, 0)
        return (0, self.spilled.inserted)


@dataclass
class _Programs:
    """The spiller's programs for `fn` and their problems, made once for all ladders (the
    ladders ask for the same margins and forced values at their start)."""

    fn: Function
    target: Target
    budget: Limits
    evictable: frozenset[VReg]  # values the spiller can spill as a whole (`spillable_values`)
    per_kind: bool = True  # a margin per kind of value (False: one for all, `bench/spill_margins.py`)
    made: dict[tuple[Margin, frozenset[VReg], bool], tuple[Spilled, Problem] | CannotSpill] = field(default_factory=dict)

    def get(self, margin: Margin, force: frozenset[VReg], whole: bool = False) -> tuple[Spilled, Problem]:
        """`spill_to_fit(margin, force, whole_ranges=whole)` and its problem; `CannotSpill` as it raises it."""
        key = (margin, force, whole)
        if key not in self.made:
            try:
                spilled = spill_to_fit(self.fn, self.target, self.budget, margin, force=force, whole_ranges=whole)
                self.made[key] = (spilled, build_problem(spilled.fn, self.target, self.budget))
            except CannotSpill as e:
                self.made[key] = e
        got = self.made[key]
        if isinstance(got, CannotSpill):
            raise got
        return got


def _spill_ladder(programs: _Programs, plan: _Plan) -> _Ladder:
    """Programs with spill code, until one colours: each is coloured first fit as a linear
    scan (`spill_fit`) and, with `plan.evict`, where that leaves values out, by the colouring
    that evicts the cheapest values in the way (`evicting_fit`). A failed colouring asks the
    spiller for more room below the budget (`_SPILL_MARGINS`: reload registers and tuple
    alignment need some) for the kinds of the values it left out (vector or SGPR: SGPR tuples
    left out take no vector registers away); after `plan.room_first` failures it also spills
    the values the colouring left out as a whole (`spill_to_fit(force=...)`, as LLVM's greedy
    allocator spills a range it can neither assign nor split), with `plan.stay` at the same
    margin as long as that adds values (`_FORCE_ROUNDS`). A margin the spiller cannot reach is
    skipped (another margin changes its choices)."""
    steps = {"vector": 0, "sgpr": 0}  # each kind's place in _SPILL_MARGINS

    def margin_now() -> Margin:
        return Margin(_SPILL_MARGINS[steps["vector"]], _SPILL_MARGINS[steps["sgpr"]])

    def grow(which: set[str]) -> bool:
        """The next margin for the kinds `which` (both where none of them can grow)."""
        for group in ((which, {"vector", "sgpr"}) if programs.per_kind else ({"vector", "sgpr"},)):
            grown = [k for k in sorted(group) if steps[k] + 1 < len(_SPILL_MARGINS)]
            for k in grown:
                steps[k] += 1
            if grown:
                return True
        return False

    force: frozenset[VReg] = frozenset()
    failed = rounds = tries = 0
    last = _Ladder(None, None, None, "", 0)
    below: Margin | None = None  # the last margin whose program did not colour, with this `force`

    def colour(spilled: Spilled, problem: Problem) -> tuple[dict[VReg, tuple[int, int]], list[VReg]]:
        best: tuple[dict[VReg, tuple[int, int]], list[VReg]] | None = None
        # AGPR homes in a copy partner's VGPR save the copies, but where the VGPRs are full
        # they take the registers the values they were split from need: then the homes go to
        # the AGPRs first (as LLVM's split copies into AV classes do).
        for first in (spilled.homes_first, True) if spilled.home_regs else (spilled.homes_first,):
            placed, left = spill_fit(problem, spilled.home_regs, first)
            if left and plan.evict:
                eviction = evicting_fit(problem, spilled.home_regs, programs.evictable, first)
                placed, left = eviction.placed, eviction.left
            if best is None or len(left) < len(best[1]):
                best = placed, left
            if not left:
                break
        assert best is not None
        return best

    def fill(spilled: Spilled, problem: Problem, placed: dict[VReg, tuple[int, int]],
             margin: Margin) -> _Ladder:
        """Fill the budget before spilling more: per kind, between the margin that did not
        colour and this one, bisect for the smallest margin whose program colours."""
        nonlocal tries
        for kind in ("vector", "sgpr"):
            lo = getattr(below, kind) if below is not None else None
            hi = getattr(margin, kind)
            while lo is not None and hi - lo > 1:
                mid = (lo + hi) // 2
                trial = dataclasses.replace(margin, **{kind: mid})
                try:
                    s2, p2 = programs.get(trial, force, plan.whole)
                except CannotSpill:
                    lo = mid
                    continue
                tries += 1
                if _over_budget(p2) is not None:
                    lo = mid
                    continue
                placed2, left2 = colour(s2, p2)
                if left2 or s2.inserted > spilled.inserted:
                    lo = mid
                else:
                    hi, margin, spilled, problem, placed = mid, trial, s2, p2, placed2
        return _Ladder(spilled, problem, placed, "", tries)

    while True:
        margin = margin_now()
        try:
            spilled, problem = programs.get(margin, force, plan.whole)
        except CannotSpill as e:
            if last.spilled is None:
                last.why = str(e)
            if not grow({"vector", "sgpr"}):
                break
            continue
        tries += 1
        over = _over_budget(problem)
        left: list[VReg] = []
        which = {"vector", "sgpr"}
        if over is None:
            placed, left = colour(spilled, problem)
            if not left:
                return fill(spilled, problem, placed, margin)
            below = margin
            failed += 1
            last = _Ladder(spilled, problem, None, f"the colouring left {len(left)} value(s) of the program with "
                                                   "spill code without a register", tries)
            which = {"sgpr" if RegFile.SGPR in problem.values[v].cls.files else "vector"
                     for v in left if v in problem.values} or which
        elif last.spilled is None:
            last.why = over
        grown = force | {v for v in left if v in programs.evictable}
        again = plan.stay and failed > plan.room_first and grown != force and rounds < _FORCE_ROUNDS
        rounds = rounds + 1 if again else 0
        if failed >= plan.room_first:
            if grown != force:
                below = None  # other values spilled as a whole: margins below are not comparable
            force = grown
        if not again and not grow(which):
            break
    last.tries = tries
    return last


def _ladders(programs: _Programs) -> list[_Ladder]:
    """The ladders of `_PLANS` (only the first when its first program colours: every plan's
    would), coloured ones first, by the spill instructions their program has."""
    ladders = [_spill_ladder(programs, _PLANS[0])]
    if ladders[0].tries > 1:
        ladders += [_spill_ladder(programs, plan) for plan in _PLANS[1:]]
    return sorted(ladders, key=_Ladder.cost)


def coloured_spill_program(fn: Function, target: Target, budget: Limits,
                           per_kind: bool = True) -> tuple[Spilled, Problem] | None:
    """The program with spill code that the SMT allocator starts from when `fn` does not fit
    `budget`: of the ladders' programs a first-fit or evicting colouring places every value of,
    the one with the fewest spill instructions (None when no ladder colours one). The model
    loop allocates this program too, so both strategies spill the same values. `per_kind`
    False: one margin for vector values and SGPRs alike (what `bench/spill_margins.py`
    compares with)."""
    for ladder in _ladders(_Programs(fn, target, budget, spillable_values(fn, target, budget), per_kind=per_kind)):
        if ladder.placed is not None and ladder.spilled is not None and ladder.problem is not None:
            return ladder.spilled, ladder.problem
    return None


def _over_budget(problem: Problem) -> str | None:
    """Why the pressure bound alone proves that `problem` needs spill code (None if it does not)."""
    limits = problem.limits
    vector_budget = limits.total_vector if problem.target.unified_vgpr_file else limits.vgprs + limits.agprs
    p = problem.pressure
    if p["vgpr"] > limits.vgprs or p["vector"] > vector_budget:
        need = f"{p['vgpr']} VGPRs" if p["vgpr"] > limits.vgprs else f"{p['vector']} vector registers"
        return (f"values needing {need} are live at once (near line {p['line']}), beyond this function's budget "
                f"({limits.vgprs} VGPRs, {vector_budget} vector registers in all)")
    if p["sgpr"] > limits.sgprs:
        return f"values needing {p['sgpr']} SGPRs are live at once, beyond this function's budget of {limits.sgprs}"
    return None


def waves_bound(problem: Problem) -> int:
    """Waves per SIMD no allocation of `problem` can exceed: the pressure bound (and the
    registers fixed operands use) as the only registers, within what the function's LDS,
    work-group size and amdgpu-waves-per-eu allow."""
    t = problem.target
    p, fixed = problem.pressure, problem.fixed_top
    vector = max(p["vector"] if t.unified_vgpr_file else p["vgpr"], fixed.get(VGPR_FILE.code, 0))
    sgprs = max(p["sgpr"], fixed.get(SGPR_FILE.code, 0))
    return waves_per_simd(t, problem.launch(), vector, 0, sgprs + t.reserved_num_sgprs())


def _checked(fn: Function, target: Target, assignment: dict[int | str, PhysReg], status: str, kept: int,
             start: float, reason: str, source: Function | None = None) -> SolverAllocation:
    """Materialise `assignment` on `source` (`fn` with spill code, or `fn`) and verify the
    result against `fn`, the program before spilling; only a VERIFIED one keeps `status`."""
    from verilocc.rewrite.assignment import Assignment, materialise
    from verilocc.rewrite.finish import finish_for_llc
    from verilocc.findings import Verdict
    from verilocc.verify import Options, verify_modules

    source = source or fn
    pre = Module(fn.file, None, [fn])
    post, findings = materialise(Module(fn.file, None, [source]),
                                 Assignment(fn.file, dict(assignment), {v: 0 for v in assignment}))
    (post_fn,) = post.functions
    if not findings:
        finish_for_llc(source, post_fn, assignment)
    report = verify_modules(post, pre, Options(mcpu=target.name), extra_findings=findings)
    seconds = round(time.perf_counter() - start, 3)
    usage = register_usage(post_fn, target)
    if report.verdict is not Verdict.VERIFIED:
        first = next((f for fr in report.functions for f in fr.findings if f.severity != "warning"), None)
        why = f"{first.layer}/{first.kind}: {first.message}" if first is not None else report.verdict.value
        return SolverAllocation("unknown", assignment, seconds, kept,
                                f"the solver's assignment was not VERIFIED ({report.verdict.value}: {why})", usage)
    return SolverAllocation(status, assignment, seconds, kept, reason, usage, function=post_fn)


__all__ = ["OBJECTIVES", "STATUSES", "SolverAllocation", "coloured_spill_program", "register_usage", "solve_function"]
