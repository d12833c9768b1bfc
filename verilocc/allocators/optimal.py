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
file, as the hardware counts), then SGPRs; ``waves``: waves per SIMD first (the target's
occupancy rules), then registers; (3) copy hints: as many COPYs as possible become identities
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

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from verilocc.allocators.encoding import Encoding, NoRegister
from verilocc.analysis.calls import call_mask, sgpr_striped
from verilocc.allocators.problem import (SGPR_FILE, VGPR_FILE, Problem, Unsupported, allocation_budget, build_problem,
                                         greedy_assignment, register_usage, spill_fit, vreg_key)
from verilocc.allocators.search import RLIMIT_PER_SECOND, Bound, Search, wave_limits
from verilocc.allocators.spill import CannotSpill, Spilled, spill_to_fit
from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function, Module
from verilocc.target import PhysReg, Target

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
    import z3

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    start = time.perf_counter()

    def result(status: str, reason: str = "", **kw: object) -> SolverAllocation:
        return SolverAllocation(status, {}, round(time.perf_counter() - start, 3), reason=reason, **kw)  # type: ignore[arg-type]

    budget = allocation_budget(fn, target, waves)
    try:
        problem = build_problem(fn, target, budget)
    except Unsupported as e:
        return result("unsupported", str(e))
    striped = sgpr_striped(fn)
    if any(call_mask(ins, striped) is None for b in fn.blocks for ins in b.instructions
           if any(op.kind == "regmask" for op in ins.operands)):
        return result("unsupported", "a call's register mask is not one the verifier models (csr_amdgpu*)")
    units = max(1, int(timeout * RLIMIT_PER_SECOND))
    fn_values = set(problem.values)
    cpu_deadline = time.process_time() + _CPU_FACTOR * timeout

    # (0) Fit: an assignment of the program (first fit, else z3 in a share of the time
    # limit), or of the program with spill code. A program with spill code is coloured first
    # fit as a linear scan (`spill_fit`); each next try asks for more room below the budget
    # (reload registers and tuple alignment need some), and after `_ROOM_FIRST` failed tries
    # also spills the values first fit left out as a whole. Only the last try asks z3 (in a
    # share of the time limit), so the tries end in bounded time and the time limit is left
    # for the objectives.
    spilled: Spilled | None = None
    force: frozenset[VReg] = frozenset()
    margins = iter(_SPILL_MARGINS)
    final = not spill  # the last try: z3 looks for an assignment
    fitted: Problem | None = None  # the program first fit last failed on
    failed_fits = 0
    spent = 0
    why = ""
    search: Search | None = None
    enc: Encoding | None = None
    while True:
        over = _over_budget(problem)
        left: list[VReg] = []
        start_point = None
        if over is None and spilled is not None and fitted is not problem:
            fitted = problem
            placed, left = spill_fit(problem, spilled.home_regs)
            start_point = None if left else placed
        if over is None and (start_point is not None or spilled is None or final):
            ctx = z3.Context()
            try:
                enc = Encoding(problem, ctx)
            except NoRegister as e:
                cls = problem.values[e.vreg].cls
                return result("infeasible", f"no register of class {cls.name} for %{e.vreg} is allocatable within "
                                            "this function's budget and reservations")
            search = Search(enc, seed, units, cpu_deadline)
            search.spent = spent
            answer = "unknown"
            if start_point is None:
                start_point = greedy_assignment(problem)
            if start_point is not None:
                answer = search.check(enc.pinned(start_point), pinned=True)
            if answer != "sat":
                until = search.spent + (1.0 if final and spilled is None else _FIT_SHARE) * units
                answer = search.check(None, min(until, units))
            spent = search.spent
            if answer == "sat":
                break
            why = ("the values live at once do not fit in the budget" if answer == "unsat"
                   else f"no assignment found: {search.reason}")
        elif over is None:
            why = f"first fit left {len(left)} value(s) of the program with spill code without a register"
        else:
            why = over
        margin = None if final else next(margins, None)
        failed_fits += 1 if left else 0
        if failed_fits >= _ROOM_FIRST:
            force = force | {v for v in left if v in fn_values}
        more: Spilled | None = None
        cannot: CannotSpill | None = None
        while margin is not None and more is None:
            try:
                more = spill_to_fit(fn, target, budget, margin, force=force)
            except CannotSpill as e:  # another margin may still work: the choices differ
                cannot = e
                margin = next(margins, None)
        if more is None:
            if not final and over is None and spilled is not None:
                final = True  # no more room to ask for: z3 on this program
                continue
            if cannot is not None:
                return result("infeasible", f"{why}; spilling cannot make it fit: {cannot}")
            status = "infeasible" if over is not None or "do not fit" in why else "unknown"
            return result(status, why + ("" if spill else "; spill code is off (--no-spill)"))
        spilled = more
        problem = build_problem(spilled.fn, target, budget)
    assert search is not None and enc is not None

    # (1) Occupancy first when it is the floor; keep as many preferred registers as
    # possible; then the objective. Each step gets an equal share of the time left for the
    # steps; time a step does not use goes to the next.
    kept = 0
    descent_end = _DESCENT_SHARE * units
    kinds = ("waves", "vector", "sgpr") if objective == "waves" or floor else ("vector", "sgpr")
    steps = len(kinds) + (1 if prefer else 0)

    def share() -> float:
        nonlocal steps
        now = search.spent
        until = now + max(0.0, descent_end - now) / max(1, steps)
        steps -= 1
        return until

    def descend(kind: str) -> None:
        assert enc is not None and search is not None
        bound = Bound(enc, kind)
        current = bound.current(search)
        if kind == "vector":
            lower = problem.pressure["vector"]
            # Occupancy thresholds are likely answers: try them before bisecting.
            probes = sorted({wave_limits(target, w)[0] for w in range(1, target.max_waves_per_simd + 1)}
                            & set(range(lower, current)), reverse=True)
        elif kind == "sgpr":
            lower, probes = problem.pressure["sgpr"], []
        else:
            lower, probes = -waves_bound(problem), []
        search.descend(bound, current, lower, share(), probes)

    if floor and "waves" in kinds:
        descend("waves")
    if prefer:
        soft = [t for v, reg in sorted(prefer.items(), key=lambda kv: vreg_key(kv[0]))
                if (t := enc.matches(v, reg)) is not None]
        kept = search.maxsat(soft, share())
    for kind in kinds:
        if not (floor and kind == "waves"):
            descend(kind)
    proved = search.proved
    # (3) Copy hints: as many identity copies as possible (best effort, not part of "optimal").
    hints = [h for dst, doff, src, soff, _ in problem.copies if (h := enc.copy_hint(dst, doff, src, soff)) is not None]
    search.greedy_hints(hints, units)

    assert search.model is not None
    assignment = {v: enc.register_of(v, search.model) for v in sorted(problem.values, key=vreg_key)}
    kept = sum(1 for v, reg in (prefer or {}).items() if assignment.get(v) == reg)
    reason = "" if proved else f"not proved optimal: {search.reason or 'z3 could not decide a bound'}"
    status = "optimal" if proved else "feasible"
    if spilled is not None and spilled.homes:
        status = "feasible"
        reason = "the assignment of the program with spill code is " + ("proved optimal" if proved else
                                                                         "not proved optimal")
    got = _checked(fn, target, assignment, status, kept, start, reason, problem.fn)
    got.spilled = spilled if spilled is not None and spilled.homes else None
    got.waves_bound = waves_bound(problem)
    return got


#: Margins below the budget (registers) the spiller aims for, one per try.
_SPILL_MARGINS = (0, 2, 4, 8, 16, 32)
#: Tries whose first fit fails before values it left out are spilled as a whole (more room
#: alone often suffices, and costs fewer spill instructions).
_ROOM_FIRST = 2
#: Share of the time limit one try may spend looking for a first assignment before spilling more.
_FIT_SHARE = 0.15


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
    registers fixed operands use) as the only registers."""
    t = problem.target
    p, fixed = problem.pressure, problem.fixed_top
    vector = max(p["vector"] if t.unified_vgpr_file else p["vgpr"], fixed.get(VGPR_FILE.code, 0))
    sgprs = max(p["sgpr"], fixed.get(SGPR_FILE.code, 0))
    return t.waves_per_simd(vector, 0, sgprs + t.reserved_num_sgprs())


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


__all__ = ["OBJECTIVES", "STATUSES", "SolverAllocation", "register_usage", "solve_function"]
