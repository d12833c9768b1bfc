"""Register masks of calls: the registers a call preserves; it clobbers every other one.

A call in MIR names its mask by the callee-saved list it comes from (`csr_amdgpu`,
`csr_amdgpu_gfx90ainsts`, ...). Sources: llvm/lib/Target/AMDGPU/AMDGPUCallingConv.td
(`CSR_AMDGPU_VGPRs`, `CSR_AMDGPU_AGPRs`, `CSR_AMDGPU_SGPRs`, `CSR_AMDGPU_SI_Gfx_SGPRs`,
`CSR_AMDGPU_CS_ChainPreserve`, `CSR_AMDGPU_NoRegs`) and SIRegisterInfo::getCallPreservedMask,
which picks the `_GFX90AInsts` variant where the subtarget has AGPRs as callee-saved.

- VGPRs 40-47, 56-63, ... 248-255 (stripes of eight from 40, every other one) are preserved
  by every mask but the no-register ones; VGPRs above 255 are not.
- SGPRs: LLVM up to 20 preserves s30-s105; LLVM 21 and later (llvm-project PR #127353)
  preserve s30-s39, s48-s55, s64-s71, s80-s87, s96-s105 only. Checked here: with values live
  across a call, llc-19 keeps them in s40-s43 and s52-s99 and llc-22 only in s48-s51.
  `sgpr_striped` selects the later rule; where the LLVM version is not known, the later rule
  is the safe one (it preserves a subset of the earlier one, so it never lets a clobbered
  register pass as preserved).
- The `amdgpu_gfx` masks (`csr_amdgpu_si_gfx*`) preserve s4-s31 and s64-s105.
- LLVM 13 and 14 name their masks `csr_amdgpu_highregs` (`CSR_AMDGPU_HighRegs`: the VGPR
  stripes and s32-s105; s30/s31 hold the return address and are clobbered) and
  `csr_amdgpu_highregs_with_agprs` (plus a32-a255).
- AGPRs 32-255 are preserved by the `_gfx90ainsts` masks.
- `CustomRegMask($sgpr60,$sgpr62)` lists the registers whose bit the mask sets (MIR's
  printer writes every one): a call through it preserves the lanes of the listed 32-bit and
  16-bit registers. A listed tuple adds nothing its listed members do not (LLVM sets a tuple's
  bit only where its members' are set), so a tuple that is listed while one of its members is
  not never makes that member preserved.
- EXEC and MODE are preserved by the calling convention whatever the mask says (the callee
  returns with the caller's EXEC; AMDGPUUsage, "Call Convention"): they are added to every
  mask that preserves anything.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from verilocc.errors import TargetError
from verilocc.target.registers import PhysReg, parse_physreg

_VGPR_STRIPES = tuple(range(start, start + 8) for start in range(40, 256, 16))
_SGPR_OLD = (range(30, 106),)
_SGPR_STRIPED = (range(30, 40), range(48, 56), range(64, 72), range(80, 88), range(96, 106))
_SGPR_GFX = (range(4, 32), range(64, 106))
_SGPR_HIGHREGS = (range(32, 106),)
_AGPR_CSR = (range(32, 256),)
_ALWAYS = ("exec", "mode")


@dataclass(frozen=True)
class RegMask:
    """A call's register mask: the units of the registers it preserves."""

    name: str
    preserved: frozenset[int]

    def preserves(self, reg: PhysReg) -> bool:
        return all(u in self.preserved for u in reg.units)


def _units(prefix: str, ranges: tuple[range, ...]) -> set[int]:
    return {u for r in ranges for i in r for u in parse_physreg(f"{prefix}{i}").units}


@functools.cache
def regmask(name: str, sgpr_striped: bool) -> RegMask | None:
    """The mask `name` as llc prints it (case-insensitive), or None for a mask not known here
    (a call through it is then not modelled)."""
    key = name.lower()
    if key.startswith("customregmask(") and key.endswith(")"):
        return _custom(key)
    agprs = key.endswith(("_gfx90ainsts", "_with_agprs"))
    base = key.removesuffix("_gfx90ainsts").removesuffix("_with_agprs")
    units: set[int] = set()
    if base == "csr_amdgpu_highregs":
        units = _units("vgpr", _VGPR_STRIPES) | _units("sgpr", _SGPR_HIGHREGS)
    elif base == "csr_amdgpu":
        units = _units("vgpr", _VGPR_STRIPES) | _units("sgpr", _SGPR_STRIPED if sgpr_striped else _SGPR_OLD)
    elif base == "csr_amdgpu_si_gfx":
        units = _units("vgpr", _VGPR_STRIPES) | _units("sgpr", _SGPR_GFX)
    elif base == "csr_amdgpu_cs_chainpreserve" and not agprs:
        units = _units("vgpr", (range(8, 256),))
    elif base == "csr_amdgpu_noregs" and not agprs:
        return RegMask(key, frozenset())
    else:
        return None
    if agprs:
        units |= _units("agpr", _AGPR_CSR)
    return _with_always(key, units)


def _custom(key: str) -> RegMask | None:
    """`customregmask($sgpr60,$sgpr62)` (lower case): see the module docstring."""
    units: set[int] = set()
    for item in key[len("customregmask("):-1].split(","):
        reg = item.strip()
        if not reg:
            continue
        if not reg.startswith("$"):
            return None
        try:
            phys = parse_physreg(reg[1:])
        except TargetError:
            return None
        if len(phys.units) <= 2:  # one 32-bit register or a 16-bit half of one
            units |= set(phys.units)
    return _with_always(key, units) if units else RegMask(key, frozenset())


def _with_always(key: str, units: set[int]) -> RegMask:
    """The mask `key` preserving `units` and the registers every mask that preserves
    anything preserves (`_ALWAYS`)."""
    for special in _ALWAYS:
        units |= set(parse_physreg(special).units)
    return RegMask(key, frozenset(units))
