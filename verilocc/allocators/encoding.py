"""The SMT encoding of an allocation problem (`verilocc.allocators.problem`) as z3 terms.

Unknowns: per value ``r_v``, the index of its first 32-bit register in its file, and, when its
class allows several files, ``f_v`` choosing the file; both are 16-bit bit-vectors whose values
stay far from wrapping (z3 bit-blasts these colouring problems to SAT, much faster than linear
integer arithmetic). Hard constraints: the domain of each value; one disjointness per conflict
of the interference relation (with the COPY identity waiver); usage per file (highest index + 1)
and, on unified VGPR/AGPR files, VGPRs rounded up to 4 plus AGPRs within the limit. Soft terms:
preferred registers and copy hints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from verilocc.allocators.files import (
    AGPR_FILE,
    FILES,
    SGPR_FILE,
    VGPR_FILE,
    ConflictSide,
    locate,
    locate_low_half,
    make_register,
)
from verilocc.allocators.problem import Problem
from verilocc.analysis.operands import VReg
from verilocc.smt.formulas import lane_runs
from verilocc.target import PhysReg

if TYPE_CHECKING:
    import z3


class Encoding:
    """z3 terms of one problem: variables, hard constraints, usage terms, soft constraints."""

    def __init__(self, p: Problem, ctx: z3.Context) -> None:
        import z3

        self.p = p
        self.ctx = ctx
        self.hard: list[z3.BoolRef] = []
        self.r: dict[VReg, z3.ArithRef] = {}
        self.f: dict[VReg, z3.ArithRef | int] = {}
        self._twice: dict[VReg, z3.ArithRef] = {}
        self._at: dict[tuple[VReg, int], z3.ArithRef] = {}
        self._numerals: dict[int, z3.BitVecRef] = {}
        for v, val in p.values.items():
            if not val.allowed:
                raise NoRegister(v)
            r = _var(f"r_{v}", ctx)
            self.r[v] = r
            codes = list(val.allowed)
            if len(codes) == 1:
                self.f[v] = codes[0]
            else:
                fv = _var(f"f_{v}", ctx)
                self.f[v] = fv
                self.hard.append(z3.Or([fv == c for c in codes]))
            for code, idxs in val.allowed.items():
                self.hard.append(z3.Implies(self.in_file(v, code), _member(r, idxs)))
        for a, am, b, bm, waiver in p.conflicts:
            c = self.disjoint(a, am, b, bm, waiver)
            if c is not None:
                self.hard.append(c)
        # Usage per file: highest index + 1, at least what fixed registers already use.
        self.top: dict[int, z3.ArithRef] = {}
        for f in (SGPR_FILE, VGPR_FILE, AGPR_FILE):
            t = _var(f"top_{f.name}", ctx)
            self.top[f.code] = t
            self.hard += [t >= p.fixed_top.get(f.code, 0), t <= f.size]
            for v, val in p.values.items():
                if f.code in val.allowed:
                    self.hard.append(z3.Implies(self.in_file(v, f.code), self.r[v] + val.width32 <= t))
        t = p.target
        if t.unified_vgpr_file:
            k = _var("vgpr_granules", ctx)
            self.vgpr4 = 4 * k
            self.hard += [k >= 0, k <= VGPR_FILE.size // 4]
            self.hard += [self.vgpr4 >= self.top[VGPR_FILE.code], self.vgpr4 < self.top[VGPR_FILE.code] + 4]
            agprs = self.top[AGPR_FILE.code]
            self.occupancy_count: z3.ArithRef = z3.If(agprs > 0, self.vgpr4 + agprs, self.top[VGPR_FILE.code])
            # Physical registers the input names (an inline assembly operand) may lie beyond
            # the budget, which bounds only what the allocator chooses (LLVM reserves the
            # registers beyond it, and such operands stay): then the registers each value may
            # take (`Value.allowed`) are the bound, and the count is occupancy only.
            fixed = p.fixed_top
            if fixed.get(VGPR_FILE.code, 0) <= p.limits.vgprs and fixed.get(AGPR_FILE.code, 0) <= p.limits.agprs:
                self.hard.append(self.occupancy_count <= p.limits.total_vector)
        elif t.has_agprs:
            self.occupancy_count = _var("vector_count", ctx)
            self.hard += [self.occupancy_count >= self.top[VGPR_FILE.code], self.occupancy_count >= self.top[AGPR_FILE.code],
                          self.occupancy_count <= VGPR_FILE.size]
        else:
            self.occupancy_count = self.top[VGPR_FILE.code]
        self.vector = self.top[VGPR_FILE.code] + self.top[AGPR_FILE.code]
        self.sgprs = self.top[SGPR_FILE.code]

    def in_file(self, v: VReg, code: int) -> z3.BoolRef:
        import z3

        fv = self.f[v]
        return z3.BoolVal(fv == code, self.ctx) if isinstance(fv, int) else fv == code

    def same_file(self, a: ConflictSide, b: ConflictSide) -> z3.BoolRef | bool:
        """Whether both sides are in one file (a Python bool when that is known)."""
        fa = self.f[a.vreg] if a.vreg is not None else a.file
        fb = self.f[b.vreg] if b.vreg is not None else b.file
        if isinstance(fa, int) and isinstance(fb, int):
            return fa == fb
        if isinstance(fa, int) or isinstance(fb, int):
            var, code, side = (fb, fa, b) if isinstance(fa, int) else (fa, fb, a)
            assert not isinstance(var, int) and isinstance(code, int) and side.vreg is not None
            return code in self.p.values[side.vreg].allowed and var == code
        return fa == fb

    def at(self, s: ConflictSide, k: int) -> z3.ArithRef | int:
        """The 16-bit slot `k` slots above the side's first: ``2 * r_v + k``, made once per
        value and `k` (the term repeats in every conflict of the value), or a number for a
        fixed side."""
        if s.vreg is None:
            return s.slot + k
        got = self._at.get((s.vreg, k))
        if got is None:
            twice = self._twice.get(s.vreg)
            if twice is None:
                twice = self._twice[s.vreg] = 2 * self.r[s.vreg]
            got = self._at[(s.vreg, k)] = twice + k
        return got

    def _compare(self, op: str, x: z3.ArithRef | int, y: z3.ArithRef | int) -> z3.BoolRef:
        """`x op y` as z3's operators make it (a number on the left is the right operand of
        the mirrored operator), without their coercion of each argument."""
        import z3

        if isinstance(x, int) and isinstance(y, int):
            return z3.BoolVal(x <= y if op == "<=" else x != y if op == "!=" else x == y, self.ctx)
        if isinstance(x, int):
            x, y, op = y, x, ">=" if op == "<=" else op
        ref = self.ctx.ref()
        b = self._numeral(y) if isinstance(y, int) else y
        pair = (x.as_ast(), b.as_ast())  # type: ignore[union-attr]
        if op == "!=":
            made = z3.Z3_mk_distinct(ref, 2, (z3.Ast * 2)(*pair))
        else:
            made = {"<=": z3.Z3_mk_bvsle, ">=": z3.Z3_mk_bvsge, "==": z3.Z3_mk_eq}[op](ref, *pair)
        return z3.BoolRef(made, self.ctx)

    def _numeral(self, n: int) -> z3.BitVecRef:
        import z3

        got = self._numerals.get(n)
        if got is None:
            got = self._numerals[n] = z3.BitVecVal(n, _BITS, self.ctx)
        return got

    def disjoint(self, a: ConflictSide, am: int, b: ConflictSide, bm: int,
                 waiver: tuple[int, int] | None = None) -> z3.BoolRef | None:
        import z3

        same = self.same_file(a, b)
        if same is False:
            return None
        at, ctx = self.at, self.ctx
        parts: list[z3.BoolRef] = []
        for s1, l1 in lane_runs(am):
            for s2, l2 in lane_runs(bm):
                if s1 % 2 == 0 and s2 % 2 == 0 and l1 == 2 and l2 == 2:
                    parts.append(self._compare("!=", at(a, s1), at(b, s2)))
                else:
                    parts.append(_or([self._compare("<=", at(a, s1 + l1), at(b, s2)),
                                      self._compare("<=", at(b, s2 + l2), at(a, s1))], ctx))
        body = _and(parts, ctx) if len(parts) > 1 else parts[0]
        if waiver is not None:
            body = _or([body, self._compare("==", at(a, waiver[0]), at(b, waiver[1]))], ctx)
        return body if same is True else z3.Implies(same, body)

    def pinned(self, placed: Mapping[VReg, tuple[int, int]]) -> z3.BoolRef:
        """Every value at the given (file code, register index)."""
        import z3

        eqs: list[z3.BoolRef] = []
        for v, (code, r) in placed.items():
            eqs.append(self.r[v] == r)
            fv = self.f[v]
            if not isinstance(fv, int):
                eqs.append(fv == code)
        return z3.And(eqs) if eqs else z3.BoolVal(True, self.ctx)  # no values: nothing to pin

    def register_of(self, v: VReg, model: z3.ModelRef) -> PhysReg:
        import z3

        fv = self.f[v]
        code = fv if isinstance(fv, int) else model.eval(fv, model_completion=True).as_long()  # type: ignore[union-attr]
        index = model.eval(self.r[v], model_completion=True)
        assert z3.is_bv_value(index)
        val = self.p.values[v]
        return make_register(FILES[code], index.as_long(), val.width32, val.half)  # type: ignore[union-attr]

    def matches(self, v: VReg, reg: PhysReg) -> z3.BoolRef | None:
        """`%v` is in `reg` (None when `reg` cannot hold `%v` at all)."""
        import z3

        val = self.p.values.get(v)
        loc = locate_low_half(reg) if val is not None and val.half else locate(reg)
        if loc is None or val is None or (not val.half and val.width32 != reg.width32) or \
                loc[1] not in val.allowed.get(loc[0].code, ()):
            return None
        return z3.And(self.in_file(v, loc[0].code), self.r[v] == loc[1])

    def copy_hint(self, dst: ConflictSide, doff: int, src: ConflictSide, soff: int) -> z3.BoolRef | None:
        import z3

        same = self.same_file(dst, src)
        if same is False:
            return None
        eq = self.at(dst, doff) == self.at(src, soff)
        if isinstance(eq, bool):
            return None
        return eq if same is True else z3.And(same, eq)


#: Bit width of the unknowns: registers, counts and 16-bit slots stay below 2**12, so signed
#: bit-vector arithmetic never wraps; bit-vectors let z3 bit-blast the problem to SAT, which
#: decides these colouring problems far faster than linear integer arithmetic.
_BITS = 16


def _var(name: str, ctx: z3.Context) -> z3.ArithRef:
    import z3

    v = z3.BitVec(name, _BITS, ctx)
    return v  # type: ignore[return-value]


class NoRegister(Exception):
    def __init__(self, v: VReg) -> None:
        super().__init__(v)
        self.vreg = v


def _member(r: z3.ArithRef, idxs: tuple[int, ...]) -> z3.BoolRef:
    """`r` is one of `idxs`: an arithmetic progression with holes, as bounds, a stride and `!=`."""
    import math

    import z3

    lo, hi = idxs[0], idxs[-1]
    step = 0
    for x in idxs:
        step = math.gcd(step, x - lo)
    step = step or 1
    parts = [r >= lo, r <= hi]
    if step > 1:
        parts.append((r - lo) % step == 0)
    present = set(idxs)
    parts += [r != x for x in range(lo, hi + 1, step) if x not in present]
    return z3.And(parts) if len(parts) > 1 else parts[0]  # type: ignore[return-value]


# z3.Or and z3.And coerce and check their arguments each time, which costs as much as the rest of
# a disjointness constraint; these make the same terms from arguments that are Boolean z3 terms.
def _or(args: list[z3.BoolRef], ctx: z3.Context) -> z3.BoolRef:
    import z3

    return z3.BoolRef(z3.Z3_mk_or(ctx.ref(), len(args), (z3.Ast * len(args))(*(a.as_ast() for a in args))), ctx)


def _and(args: list[z3.BoolRef], ctx: z3.Context) -> z3.BoolRef:
    import z3

    return z3.BoolRef(z3.Z3_mk_and(ctx.ref(), len(args), (z3.Ast * len(args))(*(a.as_ast() for a in args))), ctx)
