"""A colouring that evicts: first fit as a linear scan, and where no register is free for a
value, the cheapest values in the way of one register give it up, as LLVM's greedy allocator
evicts (`RAGreedy::tryEvict`).

First fit (`verilocc.allocators.colouring.spill_fit`) leaves a value out when every register of
its class is taken somewhere in its live range; for aligned 96- and 128-bit tuples that
happens long before the registers run out (fragmentation: a 32-bit value in each aligned
group). Here such a value takes the register whose occupants are cheapest to move, and they go
back into the queue: most find another register, and those that find none are left out, to be
spilled as a whole (`verilocc.allocators.spill.spill_to_fit`'s `force`).

Cost, as LLVM's spill weight (`VirtRegAuxInfo::weightCalcHelper`, `normalizeSpillWeight`): the
reads and writes of a value, each at its block's frequency (`LOOP_WEIGHT` per loop level),
divided by the length of its live range plus 25 instructions: a long range with few accesses
is cheap to spill, a short one that is used often is not. A value may evict only values
lighter than itself, and a value evicted once is not evicted again; values the spiller cannot
spill (its reload registers and homes, whole-wave values, ...) weigh infinitely and are never
evicted. So every value is evicted at most once and the colouring ends.

Conflicts are the problem's, that is the interference relation layer 1 checks
(`verilocc.analysis.interference`); nothing here decides interference on its own.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from verilocc.allocators.colouring import Colouring, colouring_order
from verilocc.allocators.problem import Problem, vreg_key
from verilocc.allocators.spill_choice import LOOP_WEIGHT
from verilocc.analysis.cfg import loop_depths
from verilocc.analysis.operands import VReg

#: Instructions added to every live range's length before dividing (LLVM: 25 instructions).
RANGE_BIAS = 25


@dataclass(frozen=True)
class Eviction:
    """What the evicting colouring did: registers of the values placed, the values left out
    (in the order they were given up), and the values it evicted (placed again or left out)."""

    placed: dict[VReg, tuple[int, int]]
    left: list[VReg]
    evicted: tuple[VReg, ...]


def spill_weights(p: Problem) -> dict[VReg, float]:
    """Spill weight per value of `p`: accesses at block frequency per instruction of live range."""
    fn = p.fn
    cfg, liveness = p.liveness()
    depth = loop_depths(cfg)
    accesses: dict[VReg, float] = {}
    length: dict[VReg, int] = {}
    for b in fn.blocks:
        freq = float(LOOP_WEIGHT ** min(depth.get(b.number, 0), 6))
        for ins in b.instructions:
            reads: set[VReg] = set()
            writes: set[VReg] = set()
            for op in ins.operands:
                if op.kind == "reg" and op.vreg is not None:
                    (writes if op.is_def else reads).add(op.vreg)
            for v in reads | writes:
                accesses[v] = accesses.get(v, 0.0) + freq * ((v in reads) + (v in writes))
        if b.number in liveness.effects:
            for _, live in liveness.walk_backward(b.number):
                for v in live.vregs:
                    length[v] = length.get(v, 0) + 1
    return {v: accesses.get(v, 0.0) / (length.get(v, 0) + RANGE_BIAS) for v in p.values}


def evicting_fit(p: Problem, homes: frozenset[VReg], evictable: frozenset[VReg], homes_first: bool = False) -> Eviction:
    """Colour `p` in the order live ranges start (as `spill_fit`, the values of `homes` in
    AGPRs first), evicting where first fit finds no register (module docstring). Only values
    of `evictable` are ever evicted."""
    col = Colouring.of(p, homes, homes_first)
    order = colouring_order(p, live=True)
    position = {v: i for i, v in enumerate(order)}
    weight = {v: (w if v in evictable else math.inf) for v, w in spill_weights(p).items()}
    evicted: set[VReg] = set()
    left: list[VReg] = []
    queue = deque(order)
    while queue:
        v = queue.popleft()
        candidates, _ = col.candidates(v)
        choice = col.first_fit(v, candidates)
        if choice is None:
            found = _cheapest(col, v, candidates, weight, evicted)
            if found is None:
                left.append(v)
                continue
            choice, victims = found
            for w in victims:
                del col.placed[w]
            evicted.update(victims)
            # Back to the front of the queue, in the order their ranges start: they look for
            # another register while the values placed so far are still the only obstacles.
            queue.extendleft(sorted(victims, key=lambda w: position[w], reverse=True))
        col.placed[v] = choice
    return Eviction(col.placed, left, tuple(sorted(evicted, key=vreg_key)))


def _cheapest(col: Colouring, v: VReg, candidates: list[tuple[int, int]], weight: dict[VReg, float],
              evicted: set[VReg]) -> tuple[tuple[int, int], list[VReg]] | None:
    """The register for `v` whose occupants may all be evicted (lighter than `v`, not evicted
    before) at the lowest cost: the heaviest of them first (LLVM's order), then their sum;
    the first such register in first fit's order on a tie. None when there is none."""
    mine = weight[v]
    best: tuple[tuple[float, float], tuple[int, int], list[VReg]] | None = None
    for c, r in candidates:
        victims = col.in_the_way(v, c, r)
        if not victims or any(w in evicted or weight[w] >= mine for w in victims):
            continue
        cost = (max(weight[w] for w in victims), sum(weight[w] for w in victims))
        if best is None or cost < best[0]:
            best = (cost, (c, r), sorted(victims, key=vreg_key))
    return None if best is None else (best[1], best[2])


__all__ = ["Eviction", "RANGE_BIAS", "evicting_fit", "spill_weights"]
