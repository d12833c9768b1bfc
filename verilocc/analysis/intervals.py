"""Live intervals over instruction slots.

Slots number the instructions of a function in layout order, two per instruction as in
LLVM's SlotIndexes: slot 2i is where instruction i reads its uses, slot 2i+1 where it writes
its defs. A `LiveInterval` is, per virtual register, the sorted segments [start, end) of slots
where some of its lanes are live, with the lane mask live in each segment. The language
model's problem (`verilocc.llm.problem`) orders and describes registers by them. Which values
may not share registers is not read off intervals: that is the interference relation
(`verilocc.analysis.interference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verilocc.analysis.liveness import Liveness
from verilocc.analysis.operands import VReg


@dataclass
class Segment:
    start: int  # first slot
    end: int  # one past the last slot
    lanes: int  # LLVM lane mask live in the segment


@dataclass
class LiveInterval:
    vreg: VReg
    segments: list[Segment] = field(default_factory=list)

    def live_at(self, slot: int) -> int:
        """Lane mask live at `slot` (0 when dead)."""
        for s in self.segments:
            if s.start <= slot < s.end:
                return s.lanes
        return 0

    @property
    def start(self) -> int:
        return self.segments[0].start if self.segments else 0

    @property
    def end(self) -> int:
        return self.segments[-1].end if self.segments else 0


def slot_numbers(liveness: Liveness) -> dict[tuple[int, int], int]:
    """(block, instruction index) -> the instruction's number in layout order."""
    out: dict[tuple[int, int], int] = {}
    n = 0
    for b in liveness.cfg.order:
        for i in range(len(liveness.effects[b])):
            out[(b, i)] = n
            n += 1
    return out


def live_intervals(liveness: Liveness) -> dict[VReg, LiveInterval]:
    """The live interval of every virtual register that is live somewhere."""
    numbers = slot_numbers(liveness)
    # Lanes live after each instruction (at its def slot) and before it (at its use slot).
    points: dict[VReg, list[tuple[int, int]]] = {}
    for b in liveness.cfg.order:
        effects = liveness.effects[b]
        for idx, after in liveness.walk_backward(b):
            i = numbers[(b, idx)]
            for v, m in after.vregs.items():
                points.setdefault(v, []).append((2 * i + 1, m))
            for u in effects[idx].uses:
                if u.vreg is not None:
                    points.setdefault(u.vreg, []).append((2 * i, u.mask))
            for d in effects[idx].defs:  # a def occupies its slot even when dead
                if d.vreg is not None:
                    points.setdefault(d.vreg, []).append((2 * i + 1, d.mask))
    out: dict[VReg, LiveInterval] = {}
    for v, pts in points.items():
        merged: dict[int, int] = {}
        for slot, m in pts:
            merged[slot] = merged.get(slot, 0) | m
        iv = LiveInterval(v)
        for slot in sorted(merged):
            m = merged[slot]
            last = iv.segments[-1] if iv.segments else None
            if last is not None and last.end == slot and last.lanes == m:
                last.end = slot + 1
            else:
                iv.segments.append(Segment(slot, slot + 1, m))
        out[v] = iv
    return out
