"""Registers an allocated function names: the highest of each numbered file, as the hardware
allocates them (a function that touches $vgpr40 occupies $vgpr0..$vgpr40)."""

from __future__ import annotations

from verilocc.errors import TargetError
from verilocc.mir.model import Function
from verilocc.target import PhysReg, RegFile, parse_physreg


def named_registers(fn: Function) -> list[PhysReg]:
    """Every physical register an operand of `fn` names (unknown names are the verifier's
    business and are left out)."""
    out: list[PhysReg] = []
    for b in fn.blocks:
        for ins in b.instructions:
            for op in ins.operands:
                if op.kind != "reg" or op.phys is None:
                    continue
                try:
                    out.append(parse_physreg(op.phys))
                except TargetError:
                    continue
    return out


def highest_registers(fn: Function) -> dict[RegFile, int]:
    """SGPR, VGPR and AGPR: the highest register `fn` names + 1 (0 when none)."""
    top = {RegFile.SGPR: 0, RegFile.VGPR: 0, RegFile.AGPR: 0}
    for reg in named_registers(fn):
        if reg.file in top:
            top[reg.file] = max(top[reg.file], reg.index + max(1, reg.width32))
    return top
