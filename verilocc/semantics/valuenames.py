"""How layer 2's findings name what it tracks: values of the virtual program (tags),
locations, lanes of an operand and the symbols the equivalence layer makes for them."""

from __future__ import annotations

import re

from verilocc.analysis.operands import VReg
from verilocc.mir.model import Operand
from verilocc.pairing.steps import Loc
from verilocc.semantics.holdings import Tag
from verilocc.target import RegisterClass, register_for_units, slots_to_mask


class ValueNames:
    def __init__(self, classes: dict[VReg, RegisterClass]) -> None:
        self.classes = classes

    def tag_name(self, tag: Tag) -> str:
        if tag[0] == "$":
            return f"the virtual program's {self.unit_label(int(tag[1]))}"  # type: ignore[call-overload]
        v, slot = tag
        return f"%{v}[slot {slot}]"

    def lane_name(self, op: Operand, tags: list[Tag]) -> str:
        if op.vreg is None:
            return ""
        slots = sorted(int(t[1]) for t in tags)  # type: ignore[call-overload]
        if len(slots) == self.classes[op.vreg].width_units:
            return ""
        return f" (lanes 0x{slots_to_mask(slots):X})"

    def tag_symbol(self, tag: Tag) -> str:
        """A solver-friendly name: `v12_s0` for slot 0 of %12, `u40` for physical unit 40."""
        if tag[0] == "$":
            return f"u{tag[1]}"
        return f"v{tag[0]}_s{tag[1]}"

    def pretty_symbol(self, name: str) -> str:
        """`in_b3_v12_s0` -> `%12 slot 0 at entry of bb.3` (names made by the equivalence layer)."""
        m = re.match(r"in_b(\d+)_v(.+)_s(\d+)$", name)
        if m:
            return f"%{m.group(2)}[slot {m.group(3)}] at bb.{m.group(1)} entry"
        m = re.match(r"in_b(\d+)_u(\d+)$", name)
        if m:
            return f"{self.unit_label(int(m.group(2)))} at bb.{m.group(1)} entry"
        return name

    def held_names(self, tags: set[Tag]) -> list[str]:
        """Names of the values `tags` stand for; the virtual program's values of physical
        units that make up one register are named by that register (`$exec_lo`)."""
        units = sorted(int(t[1]) for t in tags if t[0] == "$")  # type: ignore[call-overload]
        names = {self.tag_name(t) for t in tags if t[0] != "$"}
        k = 0
        while k < len(units):
            run = [units[k]]
            while k + len(run) < len(units) and units[k + len(run)] == run[-1] + 1:
                run.append(units[k + len(run)])
            while len(run) > 1 and register_for_units(tuple(run)) is None:
                run.pop()
            reg = register_for_units(tuple(run))
            label = f"${reg.name}" if reg is not None else f"unit {run[0]}"
            names.add(f"the virtual program's {label}")
            k += len(run)
        return sorted(names)

    def unit_label(self, unit: int) -> str:
        reg = register_for_units((unit,))
        return f"${reg.name}" if reg is not None else f"unit {unit}"

    def loc_name(self, loc: Loc) -> str:
        if isinstance(loc, int):
            return self.unit_label(loc)
        if isinstance(loc, tuple) and loc and loc[0] == "slot":
            return f"%stack.{loc[1]}[slot {loc[2]}]"
        return repr(loc)
