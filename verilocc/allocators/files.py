"""Register files as the allocator sees them, and fixed registers as runs of their slots.

The numbered SGPR, VGPR and AGPR files and VCC, seen as a two-register file (``vcc_lo``,
``vcc_hi``); other special registers are reserved or in no allocatable class. A register is
located by (file, first 32-bit register); a unit by (file, 16-bit slot).
"""

from __future__ import annotations

from dataclasses import dataclass

from verilocc.analysis.operands import VReg
from verilocc.target import PhysReg, RegFile, file_register, parse_physreg


@dataclass(frozen=True)
class AllocatableFile:
    code: int
    name: str
    unit_base: int  # global unit id of slot 0 (`PhysReg.units`)
    size: int  # 32-bit registers


def _files() -> tuple[AllocatableFile, ...]:
    vcc_lo = parse_physreg("vcc_lo").units[0]
    assert parse_physreg("vcc").units == tuple(range(vcc_lo, vcc_lo + 4)), "vcc is vcc_lo + vcc_hi"
    return (
        AllocatableFile(0, "sgpr", file_register(RegFile.SGPR, 0).units[0], 106),
        AllocatableFile(1, "vgpr", file_register(RegFile.VGPR, 0).units[0], 256),
        AllocatableFile(2, "agpr", file_register(RegFile.AGPR, 0).units[0], 256),
        AllocatableFile(3, "vcc", vcc_lo, 2),
    )


FILES = _files()
SGPR_FILE, VGPR_FILE, AGPR_FILE, VCC_FILE = FILES
_BY_REGFILE = {RegFile.SGPR: SGPR_FILE, RegFile.VGPR: VGPR_FILE, RegFile.AGPR: AGPR_FILE}


def locate(reg: PhysReg) -> tuple[AllocatableFile, int] | None:
    """(file, first 32-bit register index) of an allocatable register, None for others."""
    f = _BY_REGFILE.get(reg.file)
    if f is None:
        if reg.name not in ("vcc", "vcc_lo", "vcc_hi"):
            return None
        f = VCC_FILE
    slot = reg.units[0] - f.unit_base
    if slot % 2 or len(reg.units) % 2:
        return None
    return f, slot // 2


def unit_slot(unit: int) -> tuple[AllocatableFile, int] | None:
    for f in FILES:
        if 0 <= unit - f.unit_base < 2 * f.size:
            return f, unit - f.unit_base
    return None


def locate_low_half(reg: PhysReg) -> tuple[AllocatableFile, int] | None:
    """(file, register index) of the low 16-bit half of a VGPR (``$vgpr4_lo16``), None for
    any other register: a 16-bit value is given low halves only."""
    f = _BY_REGFILE.get(reg.file)
    slot = reg.units[0] - f.unit_base if f is not None else 1
    if f is not VGPR_FILE or len(reg.units) != 1 or slot % 2:
        return None
    return f, slot // 2


def make_register(f: AllocatableFile, index: int, width32: int, half: bool = False) -> PhysReg:
    if half:
        return parse_physreg(f"{f.name.lower()}{index}_lo16")
    if f is VCC_FILE:
        return parse_physreg({(0, 2): "vcc", (0, 1): "vcc_lo", (1, 1): "vcc_hi"}[(index, width32)])
    return file_register(RegFile(f.name), index, width32)



@dataclass(frozen=True)
class ConflictSide:
    """One side of a conflict or a copy: a virtual register, or fixed physical slots."""

    vreg: VReg | None  # a virtual register, or
    file: int = -1  # a fixed physical run: file code and first 16-bit slot
    slot: int = 0


#: Two sides with 16-bit slot masks that must not share a lane, unless `waiver` = (a offset,


def phys_sides(units: frozenset[int] | set[int] | tuple[int, ...]) -> list[tuple[ConflictSide, int]]:
    """Fixed physical units as runs of slots in the allocatable files (others cannot clash)."""
    out: list[tuple[ConflictSide, int]] = []
    for u in sorted(units):
        loc = unit_slot(u)
        if loc is None:
            continue
        f, slot = loc
        if out and out[-1][0].file == f.code and out[-1][0].slot + out[-1][1].bit_length() == slot:
            side, mask = out[-1]
            out[-1] = (side, mask | (1 << (slot - side.slot)))
        else:
            out.append((ConflictSide(None, f.code, slot), 1))
    return out
