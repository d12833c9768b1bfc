"""Registers an allocation uses and the occupancy they give, as llc counts them."""

from __future__ import annotations

from collections.abc import Iterable

from verilocc.analysis.usage import highest_registers
from verilocc.mir.model import Function
from verilocc.target import PhysReg, RegFile, Target
from verilocc.target.waves import Launch, function_launch, waves_per_simd


def register_usage(fn: Function, target: Target, extra: Iterable[PhysReg] = (),
                   launch: Launch | None = None) -> dict[str, int]:
    """Registers an allocated function uses, as the hardware counts them (highest index + 1 per
    file, as llc's NumVgprs/NumAgprs/NumSgprs), with the physical registers of `fn` plus
    `extra`, and the waves per SIMD llc gives it (`verilocc.target.waves.waves_per_simd`: the
    SGPRs plus the VCC/FLAT_SCRATCH/XNACK ones the target reserves, and the LDS, work-group
    size and amdgpu-waves-per-eu of `launch`, by default those of `fn`)."""
    top = highest_registers(fn)
    for r in extra:
        if r.file in top:
            top[r.file] = max(top[r.file], r.index + max(1, r.width32))
    return usage_dict(target, launch or function_launch(fn, target), top[RegFile.VGPR], top[RegFile.AGPR],
                      top[RegFile.SGPR])


def usage_dict(target: Target, launch: Launch, vgprs: int, agprs: int, sgprs: int) -> dict[str, int]:
    waves = waves_per_simd(target, launch, vgprs, agprs, sgprs + target.reserved_num_sgprs())
    return {"vgpr": vgprs, "agpr": agprs, "sgpr": sgprs, "waves": waves}
