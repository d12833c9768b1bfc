"""Waves per SIMD as llc counts them: the registers, and how the function is launched.

llc's ``; Occupancy:`` (AMDGPUAsmPrinter::getSIProgramInfo, LLVM 19 and 22) is the least of

* the *registers'* term, `Target.waves_per_simd` of the VGPRs/AGPRs and the SGPRs the
  function allocates (getOccupancyWithNumVGPRs/getOccupancyWithNumSGPRs of
  NumVGPRsForWavesPerEU/NumSGPRsForWavesPerEU);
* the *launch's* term, `Launch.waves`, which no allocation changes:

  - LDS and work-group size: how many work groups of the function fit on one CU at once
    (a WGP on gfx10+ in WGP mode, the default), given the LDS each allocates
    (``machineFunctionInfo: ldsSize:``), the wave slots and the barriers, with their waves
    spread over the CU's SIMDs (`workgroup_waves`);
  - the maximum of ``"amdgpu-waves-per-eu"``: llc counts at least getMinNumVGPRs(max) VGPRs
    and getMinNumSGPRs(max) SGPRs (NumVGPRsForWavesPerEU, NumSGPRsForWavesPerEU), which caps
    occupancy near that maximum (`attribute_waves`). Both register terms fall as the count
    grows, so waves(max(n, m)) = min(waves(n), waves(m)): the attribute's part is a cap
    that does not depend on the allocation, like the LDS.

`waves_per_simd` is the one place the two terms meet; the viewer, `allocate`'s summary and
the allocators' occupancy floor all call it. This module works on strings and mappings, as
`verilocc.target.limits` does; `function_launch` reads them off a parsed function.

Sources (LLVM, checked against llc-19's and llc-22's ``; Occupancy:`` by
tests/test_waves.py): ``AMDGPUSubtarget.cpp`` getFlatWorkGroupSizes,
getDefaultFlatWorkGroupSize, getOccupancyWithLocalMemSize (LLVM 19 and older) and
getOccupancyWithWorkGroupSizes (LLVM 22; new with llvm-project PR #123748, early 2025);
``Utils/AMDGPUBaseInfo.cpp`` (IsaInfo) getMaxWorkGroupsPerCU, getEUsPerCU, getLocalMemorySize,
getAddressableLocalMemorySize; ``GCNSubtarget.cpp`` initializeSubtargetDependencies (LDS
doubled in WGP mode); ``AMDGPU.td`` the FeatureLocalMemorySize / AddressableLocalMemorySize
of each generation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from verilocc.target.gfx import MAX_FLAT_WORKGROUP_SIZE, Target, has_trap_handler, target_names

# --------------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------------
#: LDS bytes one work group may allocate (getAddressableLocalMemorySize): AMDGPU.td gives
#: gfx6 (FeatureSouthernIslands) FeatureLocalMemorySize32768 and every later generation
#: 65536, except the processors below.
_ADDRESSABLE_LDS_BY_MAJOR: Final = {6: 32768}
_ADDRESSABLE_LDS: Final = 65536
#: ... gfx950: FeatureAddressableLocalMemorySize163840 (LLVM 20 and later; gfx9-4-generic,
#: which gfx940/942 must also run, keeps 65536).
_ADDRESSABLE_LDS_BY_PROCESSOR: Final = {"gfx950": 163840}
#: Work groups with barriers one CU runs at once (getMaxWorkGroupsPerCU): 16, 32 on gfx10+
#: in WGP mode; a one-wave work group needs no barrier and takes none.
_BARRIERS: Final = 16
_WGP_BARRIERS: Final = 32
#: The target feature that runs gfx10+ work groups on one CU (2 SIMDs, its own LDS) instead
#: of a WGP (4 SIMDs, twice the LDS): FeatureCuMode, off by default.
CU_MODE_FEATURE: Final = "+cumode"

#: Which of LLVM's two rules for LDS and work-group size applies (`workgroup_waves`).
LOCAL_MEM_SIZE: Final = "getOccupancyWithLocalMemSize"  # LLVM 19 and older
WORKGROUP_SIZES: Final = "getOccupancyWithWorkGroupSizes"  # LLVM 22 (PR #123748, early 2025)
#: A `machineFunctionInfo` key llc-22 prints and llc-19 does not (new in 2025, like the rule;
#: llc-20 and llc-21 were not at hand): the LLVM that wrote the MIR decides the rule.
_NEW_RULE_KEY: Final = "dynamicVGPRBlockSize"


def _check_table() -> None:
    assert set(_ADDRESSABLE_LDS_BY_PROCESSOR) <= set(target_names()), _ADDRESSABLE_LDS_BY_PROCESSOR
    assert all(v % 32768 == 0 for v in [*_ADDRESSABLE_LDS_BY_PROCESSOR.values(), *_ADDRESSABLE_LDS_BY_MAJOR.values()])


_check_table()


def addressable_lds(target: Target) -> int:
    """getAddressableLocalMemorySize: LDS bytes one work group may allocate."""
    return _ADDRESSABLE_LDS_BY_PROCESSOR.get(target.name, _ADDRESSABLE_LDS_BY_MAJOR.get(target.major, _ADDRESSABLE_LDS))


def lds_per_cu(target: Target, cu_mode: bool = False) -> int:
    """getLocalMemorySize: LDS bytes the work groups on one CU share; a gfx10+ WGP has twice
    the LDS a work group may address."""
    return addressable_lds(target) * (2 if target.major >= 10 and not cu_mode else 1)


def max_workgroups_per_cu(target: Target, size: int, cu_mode: bool = False) -> int:
    """getMaxWorkGroupsPerCU: work groups of `size` work-items one CU holds by its wave slots
    and barriers."""
    slots = target.max_waves_per_simd * target.eus_per_cu(cu_mode)
    waves = math.ceil(size / target.wavefront_size)
    if waves == 1:
        return slots
    return min(slots // waves, _WGP_BARRIERS if target.major >= 10 and not cu_mode else _BARRIERS)


def workgroup_waves(target: Target, lds_bytes: int, sizes: tuple[int, int], cu_mode: bool = False,
                    rule: str = LOCAL_MEM_SIZE) -> int:
    """Waves per SIMD that work groups of `sizes` (least, most work-items) allocating
    `lds_bytes` of LDS each allow, by LLVM's `rule`; the target's maximum when nothing limits.

    LOCAL_MEM_SIZE (LLVM 19): as many work groups of the largest size as the LDS, the wave
    slots and the barriers allow, their waves divided over the SIMDs, rounded up.
    WORKGROUP_SIZES (LLVM 22): the most waves any size in the range reaches that way, since
    smaller groups may fit more waves (the maximum of the range LLVM computes)."""
    eus, most = target.eus_per_cu(cu_mode), target.max_waves_per_simd
    by_lds = lds_per_cu(target, cu_mode) // max(lds_bytes, 1)
    if rule == LOCAL_MEM_SIZE:
        groups = max_workgroups_per_cu(target, sizes[1], cu_mode)
        if not groups:
            return 0
        if not by_lds:
            return 1  # more LDS than a CU has: LLVM assumes the worst
        waves = min(groups, by_lds) * math.ceil(sizes[1] / target.wavefront_size)
        return min(math.ceil(waves / eus), most)
    if rule != WORKGROUP_SIZES:
        raise ValueError(f"unknown occupancy rule {rule!r}")
    if not by_lds:
        return 1
    per_small = math.ceil(sizes[0] / target.wavefront_size)
    small_groups = min(max_workgroups_per_cu(target, sizes[0], cu_mode), by_lds)
    large_groups = min(max_workgroups_per_cu(target, sizes[1], cu_mode), by_lds)
    most_waves = per_small * small_groups
    large_waves = math.ceil(sizes[1] / target.wavefront_size) * large_groups
    if large_waves >= most_waves:
        most_waves = large_waves
    else:
        # Slots the smallest groups leave free may go to larger groups of the range, as many
        # of them as fit: each may grow by the free slots it gets, up to the largest size.
        grow = (most * eus - small_groups * per_small) // small_groups
        if grow:
            most_waves += small_groups * min(grow, (sizes[1] - 1) // target.wavefront_size + 1 - per_small)
    return min(max(math.ceil(most_waves / eus), 1), most)


def attribute_waves(target: Target, most_waves_per_eu: int, trap_handler: bool = False) -> int:
    """The cap the maximum of the effective ``"amdgpu-waves-per-eu"`` range puts on
    occupancy: the waves getMinNumVGPRs and getMinNumSGPRs of it allow (getMinNumSGPRs does
    not count where the SGPR init bug fixes the SGPRs at 96)."""
    waves = target.max_waves_per_simd
    vgprs = target.min_vgprs_for_waves(most_waves_per_eu)
    if vgprs:
        waves = min(waves, target.waves_with_vgprs(vgprs))
    sgprs = target.min_sgprs_for_waves(most_waves_per_eu, trap_handler)
    if sgprs and not target.sgpr_init_bug:
        waves = min(waves, target.waves_with_sgprs(sgprs))
    return waves


# --------------------------------------------------------------------------------------------
# A function's launch
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    """What bounds a function's occupancy besides its registers."""

    lds_bytes: int  # machineFunctionInfo ldsSize
    workgroup_sizes: tuple[int, int]  # getFlatWorkGroupSizes: least and most work-items
    waves_per_eu: tuple[int, int]  # getWavesPerEU: the effective range
    unit: str  # what a work group's waves share: "CU", or "WGP" (gfx10+ in WGP mode)
    unit_lds: int  # LDS bytes of one unit (`lds_per_cu`)
    rule: str  # LOCAL_MEM_SIZE or WORKGROUP_SIZES
    workgroup_waves: int  # LDS and work-group size (`workgroup_waves`)
    attribute_waves: int  # the maximum of amdgpu-waves-per-eu (`attribute_waves`)

    @property
    def waves(self) -> int:
        """The most waves per SIMD any allocation of the function can have."""
        return min(self.workgroup_waves, self.attribute_waves)

    def limits(self, waves: int) -> list[str]:
        """What of the launch holds occupancy at `waves` (nothing when only registers do)."""
        out: list[str] = []
        if self.workgroup_waves == waves:
            lds = f"{self.lds_bytes} bytes of LDS per work group of" if self.lds_bytes else "work groups of"
            out.append(f"LDS and work-group size: {lds} up to {self.workgroup_sizes[1]} work-items, "
                       f"{self.unit_lds} bytes per {self.unit}")
        if self.attribute_waves == waves:
            out.append(f"amdgpu-waves-per-eu: at most {self.waves_per_eu[1]}")
        return out


class LaunchSource(Protocol):
    """What `function_launch` reads of a function (`verilocc.mir.model.Function` has it)."""

    @property
    def ir_attributes(self) -> Mapping[str, str]: ...

    @property
    def calling_convention(self) -> str: ...

    @property
    def triple(self) -> str: ...

    @property
    def machine_function_info(self) -> Mapping[str, object]: ...


#: Calling conventions of graphics shaders, whose default work group is one wave
#: (getDefaultFlatWorkGroupSize).
_SHADERS: Final = frozenset({"amdgpu_vs", "amdgpu_ls", "amdgpu_hs", "amdgpu_es", "amdgpu_gs", "amdgpu_ps"})


def _int_pair(text: str | None, default: tuple[int, int], first_only: bool = False) -> tuple[int, int] | None:
    """getIntegerPairAttribute: "a,b" (or "a" when `first_only`); None when it does not parse."""
    if text is None:
        return default
    first, _, second = (p.strip() for p in text.partition(","))
    if not first.isdigit():
        return None
    if not second:
        return (int(first), default[1]) if first_only else None
    return (int(first), int(second)) if second.isdigit() else None


def workgroup_sizes(target: Target, attributes: Mapping[str, str], calling_convention: str = "") -> tuple[int, int]:
    """getFlatWorkGroupSizes: ``"amdgpu-flat-work-group-size"`` when it is a valid range
    within 1..1024, else the default (1..1024; 1..one wave for graphics shaders)."""
    default = (1, target.wavefront_size if calling_convention in _SHADERS else MAX_FLAT_WORKGROUP_SIZE)
    got = _int_pair(attributes.get("amdgpu-flat-work-group-size"), default)
    if got is None or got[0] > got[1] or got[0] < 1 or got[1] > MAX_FLAT_WORKGROUP_SIZE:
        return default
    return got


def launch_limits(target: Target, attributes: Mapping[str, str], machine_function_info: Mapping[str, object],
                  calling_convention: str = "", trap_handler: bool = False, rule: str | None = None) -> Launch:
    """The launch of a function with these IR attributes, `machineFunctionInfo` and calling
    convention. `trap_handler`: the subtarget has FeatureTrapHandler (`has_trap_handler`).
    `rule`: LLVM's rule for LDS and work-group size; by default the one of the LLVM that
    printed the `machineFunctionInfo`."""
    lds = machine_function_info.get("ldsSize", 0)
    lds_bytes = lds if isinstance(lds, int) and lds > 0 else 0
    cu_mode = CU_MODE_FEATURE in attributes.get("target-features", "").split(",")
    if rule is None:
        rule = WORKGROUP_SIZES if _NEW_RULE_KEY in machine_function_info else LOCAL_MEM_SIZE
    sizes = workgroup_sizes(target, attributes, calling_convention)
    requested = _int_pair(attributes.get("amdgpu-waves-per-eu"), (1, target.max_waves_per_simd), first_only=True)
    range_ = target.waves_per_eu(sizes[1], requested, cu_mode)
    return Launch(lds_bytes, sizes, range_, "WGP" if target.major >= 10 and not cu_mode else "CU",
                  lds_per_cu(target, cu_mode), rule,
                  workgroup_waves(target, lds_bytes, sizes, cu_mode, rule), attribute_waves(target, range_[1], trap_handler))


def effective_waves_per_eu(target: Target, attributes: Mapping[str, str], machine_function_info: Mapping[str, object],
                           calling_convention: str = "") -> tuple[int, int] | None:
    """The waves-per-EU range the register budget of a function written by LLVM 21 or later
    follows (AMDGPUSubtarget::getEffectiveWavesPerEU of the WORKGROUP_SIZES rule), or None for
    older files, whose range `Target.waves_per_eu` gives. The new rule bounds the range by
    the occupancy that the work-group sizes and the LDS of ``"amdgpu-lds-size"`` allow: its
    default is (the waves one largest work group needs per EU, at most that occupancy; that
    occupancy); a requested ``"amdgpu-waves-per-eu"`` whose minimum lies outside the default
    range, above its own maximum, or whose maximum exceeds the target's, gives the default;
    otherwise its maximum is cut to that occupancy. A request of ``"amdgpu-num-sgpr"`` below
    what the maximum leaves (getMinNumSGPRs) is then ignored, as with the old rule: under a
    large LDS, llc-22 ignores an ``"amdgpu-num-sgpr"`` that llc-19 honours."""
    if _NEW_RULE_KEY not in machine_function_info:
        return None
    cu_mode = CU_MODE_FEATURE in attributes.get("target-features", "").split(",")
    sizes = workgroup_sizes(target, attributes, calling_convention)
    lds = _int_pair(attributes.get("amdgpu-lds-size"), (0, 0), first_only=True)
    lds_bytes = lds[0] if lds is not None else 0
    most = workgroup_waves(target, lds_bytes, sizes, cu_mode, WORKGROUP_SIZES)
    default = (min(math.ceil(math.ceil(sizes[1] / target.wavefront_size) / target.eus_per_cu(cu_mode)), most), most)
    requested = _int_pair(attributes.get("amdgpu-waves-per-eu"), (1, target.max_waves_per_simd), first_only=True)
    if requested is None:
        return default
    first, second = requested
    if first < default[0] or first > default[1] or first > second or second > target.max_waves_per_simd:
        return default
    return (first, min(second, default[1]))


def function_launch(fn: LaunchSource, target: Target) -> Launch:
    """`launch_limits` of a parsed function."""
    return launch_limits(target, fn.ir_attributes, fn.machine_function_info, fn.calling_convention,
                         has_trap_handler(fn.triple, fn.ir_attributes.get("target-features", "")))


def waves_per_simd(target: Target, launch: Launch, vgprs: int, agprs: int = 0, sgprs: int = 0) -> int:
    """llc's ``; Occupancy:`` of a function launched as `launch` that allocates `vgprs`
    VGPRs, `agprs` AGPRs and `sgprs` SGPRs (VCC/FLAT_SCRATCH/XNACK_MASK included, as
    `Target.waves_per_simd` counts them)."""
    return min(target.waves_per_simd(vgprs, agprs, sgprs), launch.waves)


__all__ = ["CU_MODE_FEATURE", "LOCAL_MEM_SIZE", "WORKGROUP_SIZES", "Launch", "LaunchSource", "effective_waves_per_eu",
           "addressable_lds", "attribute_waves", "function_launch", "launch_limits", "lds_per_cu",
           "max_workgroups_per_cu", "waves_per_simd", "workgroup_sizes", "workgroup_waves"]
