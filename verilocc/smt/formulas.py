"""Layer 1's constraints as objects: each one is evaluated on the allocation (for findings with
places) and printed as SMT-LIB (the proof obligation), so both readings are of one formula.

Unknowns are *home variables* `h_N`: the first 16-bit register unit of the one place where the
allocation keeps virtual register N. Fixed physical registers are constants (unit ids).
- `Member`: `h_N` is the first unit of a register the virtual register may take;
- `Disjoint`: two sides, each with a 16-bit slot mask, share no unit; with `identity`, they
  may also lie so that the two given slots coincide (the copied lanes of a COPY, see
  `verilocc.analysis.interference`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from verilocc.analysis.operands import VReg
from verilocc.findings import Place
from verilocc.mir.model import Operand


@functools.lru_cache(maxsize=4096)
def lane_runs(mask: int) -> tuple[tuple[int, int], ...]:
    """Maximal runs of set bits: ((first, length), ...)."""
    runs: list[tuple[int, int]] = []
    i = 0
    while mask:
        if mask & 1:
            start = i
            while mask & 1:
                mask >>= 1
                i += 1
            runs.append((start, i - start))
        else:
            mask >>= 1
            i += 1
    return tuple(runs)


@dataclass(frozen=True)
class ConstraintSide:
    """A value's place in a constraint: a home variable or fixed physical units."""

    label: str  # "%12" or "$vcc"
    var: str | None = None  # "h_12"
    const: int | None = None  # first unit of a fixed register


@dataclass(frozen=True)
class Member:
    var: str
    vreg: VReg
    cls: str
    allowed: tuple[int, ...]  # allowed first units, ascending

    def smt(self) -> str:
        return _member_smt(self.var, self.allowed)


@dataclass(init=False)
class Disjoint:
    """(Not frozen, with `__init__` written out: a large kernel has tens of thousands, and a
    frozen dataclass, or the interpreted `__init__` dataclasses writes, takes several times
    longer to make.)"""

    a: ConstraintSide
    a_mask: int
    b: ConstraintSide
    b_mask: int
    place: Place
    kind: str  # "interference" or "early-clobber"
    def_op: Operand  # the defining operand
    live_vreg: VReg | None  # the value that is live (b)
    identity: tuple[int, int] | None = None  # (slot of a, slot of b) that may coincide

    def __init__(self, a: ConstraintSide, a_mask: int, b: ConstraintSide, b_mask: int, place: Place, kind: str,
                 def_op: Operand, live_vreg: VReg | None, identity: tuple[int, int] | None = None) -> None:
        self.a = a
        self.a_mask = a_mask
        self.b = b
        self.b_mask = b_mask
        self.place = place
        self.kind = kind
        self.def_op = def_op
        self.live_vreg = live_vreg
        self.identity = identity

    @property
    def def_text(self) -> str:
        """The defining operand as written (only a violated constraint is described)."""
        return self.def_op.register_text

    def holds(self, values: dict[str, int]) -> bool:
        pa = values[self.a.var] if self.a.var else self.a.const
        pb = values[self.b.var] if self.b.var else self.b.const
        assert pa is not None and pb is not None
        if self.identity is not None and pa + self.identity[0] == pb + self.identity[1]:
            return True
        if pa <= pb:
            return not (self.a_mask & (self.b_mask << (pb - pa)))
        return not (self.b_mask & (self.a_mask << (pa - pb)))

    def smt(self) -> str:
        a, b = self.a, self.b
        parts = []
        for s1, l1 in lane_runs(self.a_mask):
            for s2, l2 in lane_runs(self.b_mask):
                # [ta+s1, ta+s1+l1) and [tb+s2, tb+s2+l2) do not meet (`DISJOINT_DEF`)
                parts.append(f"({DISJOINT} {_plus(a, s1)} {l1} {_plus(b, s2)} {l2})")
        body = parts[0] if len(parts) == 1 else "(and " + " ".join(parts) + ")"
        if self.identity is not None:
            body = f"(or (= {_plus(a, self.identity[0])} {_plus(b, self.identity[1])}) {body})"
        return body


# Two runs of units, [a, a+la) and [b, b+lb), do not meet: defined once in each obligation
# (`DISJOINT_DEF`) and applied by every `Disjoint`, a few tens of bytes each instead of the
# expanded formula (a large kernel has tens of thousands).
DISJOINT = "d"
DISJOINT_DEF = f"(define-fun {DISJOINT} ((a Int) (la Int) (b Int) (lb Int)) Bool (or (<= (+ a la) b) (<= (+ b lb) a)))"


def _plus(side: ConstraintSide, k: int) -> str:
    """The term `side + k`, folded where that is plain arithmetic: a constant side is one
    number, a variable plus 0 the variable. (The same formula in fewer symbols: z3 spends
    most of layer 1's time reading the text.)"""
    if not side.var:
        assert side.const is not None
        return str(side.const + k)
    return f"(+ {side.var} {k})" if k else side.var


def _member_smt(var: str, allowed: tuple[int, ...]) -> str:
    if not allowed:
        return "false"
    # Compress the allowed set into arithmetic progressions.
    progs: list[tuple[int, int, int]] = []
    i = 0
    n = len(allowed)
    while i < n:
        if i + 1 < n:
            step = allowed[i + 1] - allowed[i]
            j = i + 1
            while j + 1 < n and allowed[j + 1] - allowed[j] == step:
                j += 1
            progs.append((allowed[i], allowed[j], step))
            i = j + 1
        else:
            progs.append((allowed[i], allowed[i], 1))
            i += 1
    terms = []
    for lo, hi, step in progs:
        if lo == hi:
            terms.append(f"(= {var} {lo})")
        elif step == 1:
            terms.append(f"(and (<= {lo} {var}) (<= {var} {hi}))")
        else:
            terms.append(f"(and (<= {lo} {var}) (<= {var} {hi}) (= (mod (- {var} {lo}) {step}) 0))")
    return terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")"
