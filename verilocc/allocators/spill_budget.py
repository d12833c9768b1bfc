"""The registers the spiller fits a function into: the budget's caps per kind of value, and
what of them a call keeps for the values live across it (`verilocc.allocators.spill`).

Kinds: ``vgpr`` (VGPR-only values), ``agpr`` (AGPR-only values), ``vector`` (all vector
values) and ``sgpr``; a value counts against each kind its class belongs to (`kinds`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from verilocc.allocators.spill_code import av_class
from verilocc.errors import TargetError
from verilocc.mir.model import Instruction
from verilocc.target import PhysReg, RegFile, RegisterClass, Target, get_class
from verilocc.target.limits import Limits
from verilocc.target.regmasks import RegMask
from verilocc.target.registers import parse_physreg

KINDS = ("vgpr", "vector", "sgpr", "agpr")


@dataclass(frozen=True)
class Caps:
    """Registers (32-bit) one point may hold: VGPR-only values, all vector values, SGPRs,
    AGPR-only values."""

    vgpr: int
    vector: int
    sgpr: int
    agpr: int = 0

    def less(self, margin: int | Margin) -> Caps:
        m = margin if isinstance(margin, Margin) else Margin(margin, margin)
        return Caps(self.vgpr - m.vector, self.vector - m.vector, self.sgpr - m.sgpr, max(0, self.agpr - m.vector))


@dataclass(frozen=True)
class Margin:
    """Registers below the budget the spiller aims for: for vector values (VGPR, AGPR and
    both) and for SGPRs, so that a colouring that leaves SGPR values out asks for SGPR room
    without taking vector registers (and the other way round)."""

    vector: int
    sgpr: int


def budget_caps(target: Target, limits: Limits) -> Caps:
    vector = limits.total_vector if target.unified_vgpr_file else limits.vgprs + limits.agprs
    if target.unified_vgpr_file and limits.agprs:
        vector -= 3  # with AGPRs in use the VGPRs count rounded up to 4
    return Caps(limits.vgprs, vector, limits.sgprs, limits.agprs)


def kinds(cls: RegisterClass, limits: Limits) -> tuple[str, ...]:
    """The kinds a value of `cls` counts against (none for a class the budget has no file of)."""
    files = set(cls.files)
    if not limits.agprs:
        files.discard(RegFile.AGPR)
    if files and files <= {RegFile.VGPR, RegFile.AGPR}:
        return ("vgpr", "vector") if files == {RegFile.VGPR} else ("agpr", "vector") if files == {RegFile.AGPR} else (
            "vector",)
    if RegFile.SGPR in files:
        return ("sgpr",)
    return ()


def phys_kinds() -> dict[int, str]:
    """The kind of each register unit of the VGPR, AGPR and SGPR files."""
    from verilocc.allocators.problem import AGPR_FILE, SGPR_FILE, VGPR_FILE

    out: dict[int, str] = {}
    for f, k in ((VGPR_FILE, "vgpr"), (AGPR_FILE, "agpr"), (SGPR_FILE, "sgpr")):
        for u in range(f.unit_base, f.unit_base + 2 * f.size):
            out[u] = k
    return out


# --------------------------------------------------------------------------------------------
# Calls
# --------------------------------------------------------------------------------------------
def _kept(reg: PhysReg, mask: RegMask, limits: Limits) -> bool:
    """A register a call through `mask` preserves and the function does not reserve."""
    return mask.preserves(reg) and not limits.reserved.intersection(reg.units)


def call_caps(mask: RegMask, caps: Caps, limits: Limits) -> Caps:
    """Registers (32-bit) that values live across a call through `mask` may hold: the ones
    within `caps` that the call keeps (`_kept`)."""
    def kept(prefix: str, n: int) -> int:
        return sum(1 for i in range(max(0, n)) if _kept(parse_physreg(f"{prefix}{i}"), mask, limits))

    vgpr = kept("vgpr", caps.vgpr)
    agpr = kept("agpr", min(limits.agprs, caps.vector - caps.vgpr)) if limits.agprs else 0
    return Caps(vgpr, min(caps.vector, vgpr + agpr), kept("sgpr", caps.sgpr), agpr)


def fits_across(cls: RegisterClass, mask: RegMask, target: Target, limits: Limits, caps: Caps) -> bool:
    """Whether some register of `cls` within `caps` is kept by a call through `mask`."""
    return any(_kept(r, mask, limits) and r.index + max(1, cls.width32) <= _cap_of(r.file, caps)
               for r in cls.members(target))


def agpr_home_across(cls: RegisterClass, mask: RegMask, target: Target, limits: Limits, caps: Caps) -> bool:
    """Whether an AGPR home of a value of `cls` (its ``av_*`` class) may live across a call
    through `mask`: some AGPR tuple of its width within `caps` that the call keeps."""
    av = av_class(cls)
    return av is not None and any(
        r.file is RegFile.AGPR and _kept(r, mask, limits) and r.index + max(1, cls.width32) <= _cap_of(r.file, caps)
        for r in get_class(av).members(target))


def at_call(ins: Instruction, limits: Limits) -> tuple[Limits, frozenset[int]]:
    """`limits` at a call, with what the call itself defines (the return address) reserved:
    the call does not keep it for values live across; and the units of those defs."""
    defined = frozenset(u for op in ins.operands if op.kind == "reg" and op.is_def and op.phys
                        for u in _units(op.phys))
    return (dataclasses.replace(limits, reserved=limits.reserved | defined) if defined else limits), defined


def _units(name: str) -> tuple[int, ...]:
    """The units of a physical register (none for a name that is not one)."""
    try:
        return parse_physreg(name).units
    except TargetError:
        return ()


def _cap_of(file: RegFile, caps: Caps) -> int:
    if file is RegFile.SGPR:
        return caps.sgpr
    return caps.vgpr if file is RegFile.VGPR else caps.vector - caps.vgpr
