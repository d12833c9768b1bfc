"""Why a register an instruction reads holds no value, when the allocated program says so
itself: it was restored from a lane of a VGPR that an `IMPLICIT_DEF` left undefined on some
path to the restore (LLVM's SGPR spill lowering at -O0, docs/llvm-bugs.md). Layer 2 adds this
to its finding; nothing is decided here."""

from __future__ import annotations

from collections.abc import Callable

from verilocc.analysis.cfg import CFG
from verilocc.mir.model import Block, Operand
from verilocc.pairing import steps as ps
from verilocc.pairing.alignment import FunctionAlignment

# Where a lane's content is looked for, going backwards: ("lane", the units of a VGPR, lane),
# ("slot", a stack slot, lane) or ("sgpr", the units of the SGPR a lane was spilled from, -1).
_Where = tuple[str, frozenset[int] | int | str, int]


class UndefinedLaneTrace:
    def __init__(self, pre_blocks: dict[int, Block], post_blocks: dict[int, Block], alignment: FunctionAlignment,
                 cfg: CFG, units_of: Callable[[Operand], tuple[int, ...]]) -> None:
        self.pre_blocks = pre_blocks
        self.post_blocks = post_blocks
        self.alignment = alignment
        self.cfg = cfg
        self.units_of = units_of

    def explain(self, block: int, post_index: int, units: tuple[int, ...]) -> str:
        """Why a read register holds no value, when the allocated program says so itself: it was
        restored in the block from a lane of a VGPR that, on some path to the restore, an
        `IMPLICIT_DEF` left undefined (`_implicit_def_before`; LLVM's SGPR spill lowering at -O0,
        docs/llvm-bugs.md). Empty otherwise."""
        read = set(units)
        for d in reversed(self._post_steps(block, post_index)):
            if not self._post_writes(block, d) & read:
                continue
            if not isinstance(d, ps.RestoreFromLane) or d.step.post is None:
                return ""
            found = self._implicit_def_before(block, d.step.post, set(self.units_of(d.vgpr)), d.lane)
            if found is None:
                return ""
            line, other = found
            via = f", copying {other}" if other else ""
            return (f" (restored at line {d.ins.line} from lane {d.lane} of `{d.vgpr.register_text}`{via}, "
                    f"which `IMPLICIT_DEF` at line {line} left undefined)")
        return ""

    def _post_steps(self, block: int, before: int | None = None) -> list[ps.DecodedStep]:
        """The decoded steps of `block` that have an allocated instruction before `before`."""
        pre_blocks, post_blocks = self.pre_blocks, self.post_blocks
        if block not in pre_blocks or block not in post_blocks:
            return []
        return [ps.decode(st, pre_blocks[block], post_blocks[block], self.alignment.stack_pointers)
                for st in self.alignment.steps.get(block, ())
                if st.post is not None and (before is None or st.post < before)]

    def _post_writes(self, block: int, d: ps.DecodedStep) -> set[int]:
        ins = self.post_blocks[block].instructions[d.step.post or 0]
        return {u for op in ins.operands if op.kind == "reg" and op.is_def and op.phys is not None
                for u in self.units_of(op)}

    def _implicit_def_before(self, block: int, before: int, vgpr: set[int], lane: int) -> tuple[int, str] | None:
        """Where lane `lane` of `vgpr`, read by instruction `before` of `block`, was left undefined
        on some path: the line of the `IMPLICIT_DEF`, and the lane it left undefined when that is
        another (`lane K of $vgprM`, else ""). The lane is followed back through spills to other
        lanes, through the SGPR a spill to that lane wrote (to the lane it was restored from),
        and through whole-register saves to a stack slot and reloads from it (LLVM keeps the VGPR
        of SGPR spill lanes in a slot across blocks at -O0); any other write ends the path. None
        if no path has one. Blocks are searched breadth first, predecessors in order."""
        start: _Where = ("lane", frozenset(vgpr), lane)
        queue: list[tuple[int, int | None, _Where]] = [(block, before, start)]
        seen = {(block, start)}
        while queue:
            b, limit, where = queue.pop(0)
            for d in reversed(self._post_steps(b, limit)):
                kind, place, k = where
                if kind == "slot":
                    if isinstance(d, ps.SpillToSlot) and d.slot == place:
                        where = ("lane", frozenset(self.units_of(d.src)), k)
                    continue
                assert isinstance(place, frozenset)
                if not self._post_writes(b, d) & place:
                    continue
                if kind == "sgpr":
                    if not isinstance(d, ps.RestoreFromLane):
                        break
                    where = ("lane", frozenset(self.units_of(d.vgpr)), d.lane)
                elif isinstance(d, ps.PostImplicitDef):
                    other = "" if (place, k) == (start[1], lane) else f"lane {k} of `{d.ins.operands[0].register_text}`"
                    return d.ins.line, other
                elif isinstance(d, ps.SpillToLane):
                    if d.lane == k:
                        where = ("sgpr", frozenset(self.units_of(d.src)), -1)
                elif isinstance(d, ps.ReloadFromSlot) and set(self.units_of(d.dst)) == place:
                    where = ("slot", d.slot, k)
                else:
                    break
            else:
                for p in self.cfg.predecessors(b):
                    if (p, where) not in seen:
                        seen.add((p, where))
                        queue.append((p, None, where))
        return None
