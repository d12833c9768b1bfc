"""First-fit colourings of an allocation problem (`verilocc.allocators.problem`): the greedy
assignment the SMT allocator starts from (never trusted on its own), the linear scan of a
program with spill code, and the questions a colouring asks (is a register free for a value,
which placed values stand in its way).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verilocc.allocators.files import AGPR_FILE, FILES, SGPR_FILE, VCC_FILE, VGPR_FILE, ConflictSide
from verilocc.allocators.problem import (Neighbour, Problem, UnsupportedByAllocator, allocation_budget, build_problem,
                                         vreg_key)
from verilocc.allocators.usage import usage_dict
from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function
from verilocc.target import Target


#: Re-colourings `greedy_assignment` tries after its first fits (a count, not a time, so that
#: the same input gives the same start on every machine).
RECOLOUR_ROUNDS = 8


def greedy_assignment(p: Problem, rounds: int = RECOLOUR_ROUNDS) -> dict[VReg, tuple[int, int]] | None:
    """(file code, register index) per value by first-fit colouring, trying a copy partner's
    register first, in four orders: program order, most conflicts first (LLVM's greedy
    allocator also takes the most constrained values first), the order live ranges start,
    and widest values first with 32-bit values filling the holes tuples leave (the other half
    of an aligned pair that a conflict already takes); the one with more waves per SIMD, then
    fewer registers, is kept. Then `rounds` re-colourings of the best so far (`_recolour`),
    each kept when it is no worse. None when every order runs out of registers."""
    found = [a for a, left in (_first_fit(p, o) for o in ("program", "conflicts", "live", "widest")) if not left]
    if not found:
        return None
    best = max(found, key=lambda a: _merit(p, a))
    merit = _merit(p, best)
    for i in range(rounds):
        got = _recolour(p, best, i)
        if got is not None and (m := _merit(p, got)) >= merit:
            best, merit = got, m
    return best


def start_waves(fn: Function, target: Target, waves: int | None = None) -> int:
    """Waves per SIMD of `greedy_assignment` on `fn` within `allocation_budget(fn, target,
    waves)` (0 when it runs out of registers or the problem is unsupported): the occupancy the
    SMT allocator starts from, and so the least its occupancy-first search returns."""
    try:
        p = build_problem(fn, target, allocation_budget(fn, target, waves))
    except UnsupportedByAllocator:
        return 0
    start = greedy_assignment(p)
    return _merit(p, start)[0] if start is not None else 0


def _recolour(p: Problem, placed: dict[VReg, tuple[int, int]], i: int) -> dict[VReg, tuple[int, int]] | None:
    """First fit in an order taken from the colouring `placed` (iterated greedy, Culberson and
    Luo 1996): the values of one register stay together, and the groups go highest register
    first, largest group first, widest value first, or shuffled (seed `i`), by round `i`. For
    plain graph colouring this never needs more colours than `placed`; with tuples and
    alignment it may, so the caller keeps the better. None when a value fits nowhere."""
    import random

    groups: dict[tuple[int, int], list[VReg]] = {}
    for v in sorted(placed, key=vreg_key):
        groups.setdefault(placed[v], []).append(v)
    keys = sorted(groups)
    how = i % 4
    if how == 0:
        keys.sort(key=lambda k: (k[0], -k[1]))
    elif how == 1:
        keys.sort(key=lambda k: -len(groups[k]))
    elif how == 2:
        keys.sort(key=lambda k: -max(p.values[v].width32 for v in groups[k]))
    else:
        random.Random(i).shuffle(keys)
    col = Colouring.of(p)
    for k in keys:
        for v in sorted(groups[k], key=lambda v: -p.values[v].width32):
            choice = col.first_fit(v, col.candidates(v)[0])
            if choice is None:
                return None
            col.placed[v] = choice
    return col.placed


def spill_fit(p: Problem, homes: frozenset[VReg] = frozenset(),
              homes_first: bool = False) -> tuple[dict[VReg, tuple[int, int]], list[VReg]]:
    """First fit for a program with spill code, as a linear scan: values in the order their
    live ranges start (a block's live-ins at its top, then operands in program order), the
    values in `homes` (the spiller's AGPR homes) in AGPRs first. A value that fits nowhere is
    left out and the colouring goes on: (registers of the others, the values left out, in
    order). The values left out are the ones to spill as a whole (`spill_to_fit`'s `force`).
    `homes_first`: the values of `homes` take no copy partner's register before the AGPRs."""
    return _first_fit(p, "live", homes, homes_first)


def _merit(p: Problem, placed: dict[VReg, tuple[int, int]]) -> tuple[int, int, int]:
    """(waves per SIMD, -vector registers, -SGPRs) of an assignment with the fixed registers."""
    tops = {f.code: p.fixed_top.get(f.code, 0) for f in FILES}
    for v, (code, r) in placed.items():
        tops[code] = max(tops[code], r + p.values[v].width32)
    u = usage_dict(p.target, p.launch(), tops[VGPR_FILE.code], tops[AGPR_FILE.code], tops[SGPR_FILE.code])
    return u["waves"], -(u["vgpr"] + u["agpr"]), -u["sgpr"]


def _first_fit(p: Problem, order_by: str, homes: frozenset[VReg] = frozenset(),
               homes_first: bool = False) -> tuple[dict[VReg, tuple[int, int]], list[VReg]]:
    """(registers placed, values that fit nowhere); only "live" order goes on past the first
    value that fits nowhere."""
    col = Colouring.of(p, homes, homes_first)
    order = colouring_order(p, order_by == "live")
    position = {v: i for i, v in enumerate(order)}
    if order_by == "widest":
        order.sort(key=lambda v: (-p.values[v].width32, position[v]))
    elif order_by == "conflicts":
        degree = {v: len(col.adj[v]) for v in order}
        order.sort(key=lambda v: (-degree[v], position[v]))
    left: list[VReg] = []
    for v in order:
        val = p.values[v]
        candidates, hinted = col.candidates(v)
        choice = col.first_fit(v, candidates)
        if choice is None:
            left.append(v)
            if order_by == "live":
                continue
            return col.placed, left
        if order_by == "widest" and val.width32 == 1 and candidates.index(choice) >= hinted:
            fits = col.fitter(v)
            hole = next(((c, r) for c, r in candidates[hinted:] if (r ^ 1) in val.allowed.get(c, ())
                         and fits(c, r) and not fits(c, r ^ 1)), None)
            choice = hole or choice
        col.placed[v] = choice
    return col.placed, left


def colouring_order(p: Problem, live: bool) -> list[VReg]:
    """Values in program order of their first operand; with `live`, in the order their live
    ranges start (a block's live-ins at its top, then its operands). Made once per problem."""
    made = p._orders.get(live)
    if made is None:
        made = p._orders[live] = tuple(_colouring_order(p, live))
    return list(made)


def _colouring_order(p: Problem, live: bool) -> list[VReg]:
    order: list[VReg] = []
    seen: set[VReg] = set()
    live_in = p.liveness()[1].live_in if live else {}
    for b in p.fn.blocks:
        for w in sorted(live_in[b.number].vregs if b.number in live_in else (), key=vreg_key):
            if w not in seen and w in p.values:
                seen.add(w)
                order.append(w)
        for ins in b.instructions:
            for op in ins.operands:
                if op.vreg is not None and op.vreg not in seen and op.vreg in p.values:
                    seen.add(op.vreg)
                    order.append(op.vreg)
    return order



@dataclass
class Colouring:
    """A partial assignment of a problem (file code, first register per value) and the
    questions a colouring asks of it, in the terms of the problem's conflicts: whether a
    register is free for a value, and which placed values stand in its way."""

    problem: Problem
    homes: frozenset[VReg]  # values that try AGPRs first (the spiller's AGPR homes)
    adj: dict[VReg, list[Neighbour]]
    partners: dict[VReg, list[tuple[ConflictSide, int, int]]]  # copy partner, my slot offset, its offset
    placed: dict[VReg, tuple[int, int]] = field(default_factory=dict)
    homes_first: bool = False  # homes try the AGPRs before a copy partner's register

    @staticmethod
    def of(p: Problem, homes: frozenset[VReg] = frozenset(), homes_first: bool = False) -> Colouring:
        adj, partners = p.graph()
        return Colouring(p, homes, adj, partners, homes_first=homes_first)

    def where(self, side: ConflictSide) -> tuple[int, int] | None:
        """(file code, first 16-bit slot) of a side, None for a value not placed."""
        if side.vreg is None:
            return side.file, side.slot
        got = self.placed.get(side.vreg)
        return None if got is None else (got[0], 2 * got[1])

    def _clash(self, n: Neighbour, code: int, r: int) -> bool | None:
        """Whether neighbour `n` shares a lane with a value at (code, r); None when it is not placed."""
        other, mine, theirs, waiver = n
        loc = self.where(other)
        if loc is None:
            return None
        if loc[0] != code or (waiver is not None and 2 * r + waiver[0] == loc[1] + waiver[1]):
            return False
        return bool((mine << (2 * r)) & (theirs << loc[1]))

    def fits(self, v: VReg, code: int, r: int) -> bool:
        return not any(self._clash(n, code, r) for n in self.adj[v])

    def fitter(self, v: VReg) -> Callable[[int, int], bool]:
        """`fits` for `v` while no value is placed or moved, in one pass over the neighbours:
        the lanes placed neighbours take are merged per (file, my slots), so a register
        costs a few integer operations (a neighbour with a COPY waiver is asked on its own)."""
        taken: dict[int, dict[int, int]] = {}  # file code -> my slot mask -> lanes taken
        waived: list[Neighbour] = []
        for n in self.adj[v]:
            loc = self.where(n[0])
            if loc is None:
                continue
            if n[3] is not None:
                waived.append(n)
                continue
            masks = taken.setdefault(loc[0], {})
            masks[n[1]] = masks.get(n[1], 0) | (n[2] << loc[1])

        def fits(code: int, r: int) -> bool:
            return (not any((mine << (2 * r)) & lanes for mine, lanes in taken.get(code, {}).items())
                    and not any(self._clash(n, code, r) for n in waived))
        return fits

    def first_fit(self, v: VReg, candidates: list[tuple[int, int]]) -> tuple[int, int] | None:
        """The first of `candidates` where `v` fits."""
        fits = self.fitter(v)
        return next(((c, r) for c, r in candidates if fits(c, r)), None)

    def in_the_way(self, v: VReg, code: int, r: int) -> set[VReg] | None:
        """The placed values that keep `v` from (code, r); None when a fixed register does."""
        out: set[VReg] = set()
        for n in self.adj[v]:
            if self._clash(n, code, r):
                if n[0].vreg is None:
                    return None
                out.add(n[0].vreg)
        return out

    def candidates(self, v: VReg) -> tuple[list[tuple[int, int]], int]:
        """(file code, register) in the order first fit tries them: a copy partner's register
        first (the number of those is the second item), then the allowed registers, AGPRs first
        for a value of `homes`, VCC last."""
        val = self.problem.values[v]
        out: list[tuple[int, int]] = []
        for other, mine_off, their_off in [] if self.homes_first and v in self.homes else self.partners[v]:
            loc = self.where(other)
            if loc is not None and (loc[1] + their_off - mine_off) % 2 == 0:
                c, r = loc[0], (loc[1] + their_off - mine_off) // 2
                if r in val.allowed.get(c, ()):
                    out.append((c, r))
        hinted = len(out)
        first = AGPR_FILE.code if v in self.homes else -1
        for code in sorted(val.allowed, key=lambda c: (c != first, c == VCC_FILE.code, c)):
            out.extend((code, r) for r in val.allowed[code])
        return out, hinted

