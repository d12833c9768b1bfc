"""The search for an optimal assignment: one incremental z3 solver over the hard constraints of
an encoding (`verilocc.allocators.encoding`), and the lexicographic steps of `solve_function`.

Budgets are z3 resource units, not seconds, so the same input gives the same allocation on
every machine; a deadline in this process's CPU time is only a safety net (CPU time, so that
other work on a shared machine does not change the result).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verilocc.allocators.encoding import Encoding
from verilocc.allocators.files import AGPR_FILE, FILES, SGPR_FILE, VGPR_FILE, locate, locate_low_half
from verilocc.allocators.usage import usage_dict
from verilocc.target import Target
from verilocc.target.waves import Launch

if TYPE_CHECKING:
    import z3

#: z3 resource units ("rlimit count") per second of the time limit. Every query is limited in
#: these units, which z3 counts the same way on every machine, so the same input gives the
#: same allocation. Measured here (z3 5.4, 2 shared cores): 1 to 5 million per second, fewer on
#: the largest kernels, where the CPU-time safety net can end a search first.
RLIMIT_PER_SECOND = 2_500_000


class Search:
    """One incremental z3 solver over the hard constraints, and the lexicographic steps.

    Budgets are z3 resource units, not seconds (see `RLIMIT_PER_SECOND`): `spent` counts
    what the queries used, and each step runs until a unit mark (`until`)."""

    def __init__(self, enc: Encoding, seed: int, units: int, cpu_deadline: float) -> None:
        import z3

        self.enc = enc
        self.units = units
        self.spent = 0
        self.cpu_deadline = cpu_deadline  # time.process_time() value
        self.solver = z3.Solver(ctx=enc.ctx)
        self.solver.set("random_seed", seed)
        self.solver.add(enc.hard)
        self.fixed: list[z3.BoolRef] = []  # bounds earlier steps settled
        self.model: z3.ModelRef | None = None
        self.proved = True
        self.reason = ""

    def remaining(self, until: float | None = None) -> float:
        """Resource units left before `until` (default: the whole budget)."""
        return (self.units if until is None else until) - self.spent

    def _limit(self, solver: z3.Solver | z3.Optimize, until: float | None) -> bool:
        """Give `solver` the units left before `until`; False when none are left."""
        left = int(self.remaining(until))
        cpu = self.cpu_deadline - time.process_time()
        if left <= 0 or cpu <= 0:
            self.reason = "the time limit was reached"
            return False
        solver.set("rlimit", left)
        # z3 counts wall time: allow for a machine that gives this process a tenth of a core.
        solver.set("timeout", max(1, int(cpu * 10_000)))
        return True

    def _count(self, solver: z3.Solver | z3.Optimize) -> int:
        stats = solver.statistics()
        return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0

    def check(self, extra: z3.BoolRef | None = None, until: float | None = None,
              assumptions: tuple[z3.BoolRef, ...] = (), pinned: bool = False) -> str:
        """"sat" (self.model updated), "unsat" or "unknown" for the hard constraints + `extra`.
        `pinned`: `extra` fixes every unknown (a first-fit assignment), a check that needs no
        search, so no limit applies: a found assignment is never lost to the clock."""
        import z3

        s = self.solver
        if pinned:
            s.set("rlimit", 0)
            s.set("timeout", 4_294_967_295)
        elif not self._limit(s, until):
            return "unknown"
        before = self._count(s)
        if extra is not None:
            s.push()
            s.add(extra)
        try:
            r = s.check(*assumptions)
            if r == z3.sat:
                self.model = s.model()
            elif r == z3.unknown:
                self.reason = f"z3 gave up ({s.reason_unknown()})"
        finally:
            self.spent += max(0, self._count(s) - before)
            if extra is not None:
                s.pop()
        return "sat" if r == z3.sat else "unsat" if r == z3.unsat else "unknown"

    def fix(self, c: z3.BoolRef) -> None:
        self.fixed.append(c)
        self.solver.add(c)

    def value(self, term: z3.ArithRef) -> int:
        assert self.model is not None
        v = self.model.eval(term, model_completion=True)
        return v.as_long()  # type: ignore[union-attr]

    def descend(self, bound: Bound, current: int, lower: int, until: float, probes: list[int] | None = None) -> int:
        """Smallest k (>= `lower`) with `bound(k)` satisfiable, by bisection from the model's
        `current`; fixes `bound(best)` and clears `proved` when a step could not decide.
        `probes` (descending) are tried after the lower bound and before bisecting, while
        they are satisfiable: likely answers (another objective's thresholds)."""
        best, lo, floor = current, lower, lower

        def attempt(k: int) -> str:
            nonlocal best, lo, floor
            answer = self.check(bound(k), min(until, self.spent + max(RLIMIT_PER_SECOND, self.remaining(until) / 3)))
            if answer == "sat":
                best = bound.current(self)
            elif answer == "unsat":
                lo = floor = max(floor, k + 1)
            else:  # a query that cannot decide moves the next try up instead of ending the search
                floor = max(floor, k + 1)
            return answer

        # The pressure bound is often reached: try it first, then the probes, then bisect.
        if floor < best and self.remaining(until) > 0:
            attempt(floor)
        for k in probes or []:
            if floor <= k < best and self.remaining(until) > 0 and attempt(k) != "sat":
                break
        while floor < best and self.remaining(until) > 0:
            attempt((floor + best - 1) // 2)
        if lo < best:
            self.proved = False
        self.fix(bound(best))
        return best

    def tops(self) -> dict[int, int]:
        """Highest register index + 1 per file code in the current model (fixed registers too)."""
        assert self.model is not None
        p = self.enc.p
        tops = {f.code: p.fixed_top.get(f.code, 0) for f in FILES}
        for v, val in p.values.items():
            reg = self.enc.register_of(v, self.model)
            loc = locate_low_half(reg) if val.half else locate(reg)
            assert loc is not None
            tops[loc[0].code] = max(tops[loc[0].code], loc[1] + val.width32)
        return tops

    def maxsat(self, soft: list[z3.BoolRef], until: float) -> int:
        """Satisfy as many of `soft` as possible (z3's Optimize, MaxSAT); fix that count."""
        import z3

        assert self.model is not None
        count = sum(1 for t in soft if z3.is_true(self.model.eval(t, model_completion=True)))
        opt = z3.Optimize(ctx=self.enc.ctx)
        if count < len(soft) and self._limit(opt, until):
            opt.add(self.enc.hard + self.fixed)
            for t in soft:
                opt.add_soft(t, 1)
            r = opt.check()
            self.spent += self._count(opt)
            if r == z3.sat:
                self.model = opt.model()
                count = sum(1 for t in soft if z3.is_true(self.model.eval(t, model_completion=True)))
            else:
                self.proved = False
                self.reason = f"z3 could not maximise the preferences ({opt.reason_unknown()})"
        if soft:
            self.fix(z3.AtLeast(*soft, count))  # type: ignore[arg-type]
        return count

    def greedy_hints(self, hints: list[z3.BoolRef], until: float) -> None:
        """Satisfy many of `hints` (best effort): assume them all, and drop one hint of each
        unsat core until the rest is satisfiable or time runs out."""
        import z3

        assert self.model is not None
        wanted = [h for h in hints if not z3.is_true(self.model.eval(h, model_completion=True))]
        if not wanted:
            return
        lits = {z3.Bool(f"hint_{i}", self.enc.ctx): h for i, h in enumerate(hints)}
        s = self.solver
        s.push()
        for lit, h in lits.items():
            s.add(z3.Implies(lit, h))
        active = list(lits)
        while active:
            r = self.check(None, until, tuple(active))
            if r == "sat":
                break
            if r != "unsat":
                break
            core = {str(c) for c in s.unsat_core()}
            drop = [lit for lit in active if str(lit) in core]
            if not drop:
                break
            active.remove(drop[-1])
        s.pop()


@dataclass
class Bound:
    """A monotone family of constraints `term <= k` (or, for waves, `waves >= -k`)."""

    enc: Encoding
    kind: str  # "vector", "sgpr" or "waves"

    def __call__(self, k: int) -> z3.BoolRef:
        import z3

        if self.kind == "vector":
            return self.enc.vector <= k
        if self.kind == "sgpr":
            return self.enc.sgprs <= k
        vec, sgpr = wave_limits(self.enc.p.target, -k, self.enc.p.launch())
        return z3.And(self.enc.occupancy_count <= vec, self.enc.sgprs <= sgpr)

    def current(self, search: Search) -> int:
        """The model's value, from the registers it assigns (the `top_*` unknowns are only
        bounded below, so a model may leave slack in them)."""
        tops = search.tops()
        if self.kind == "vector":
            return tops[VGPR_FILE.code] + tops[AGPR_FILE.code]
        if self.kind == "sgpr":
            return tops[SGPR_FILE.code]
        p = self.enc.p
        return -usage_dict(p.target, p.launch(), tops[VGPR_FILE.code], tops[AGPR_FILE.code], tops[SGPR_FILE.code])["waves"]


def wave_limits(target: Target, waves: int, launch: Launch | None = None) -> tuple[int, int]:
    """Most vector registers (occupancy count) and SGPRs that still allow `waves` per SIMD;
    (-1, -1) when `launch` (LDS, work-group size, amdgpu-waves-per-eu) allows fewer waves,
    which no register count reaches."""
    if launch is not None and waves > launch.waves:
        return -1, -1
    vec = max((c for c in range(1025) if target.waves_with_vgprs(c) >= waves), default=0)
    extra = target.reserved_num_sgprs()
    sgpr = max((c for c in range(801) if target.waves_with_sgprs(c + extra) >= waves), default=0)
    return vec, sgpr
