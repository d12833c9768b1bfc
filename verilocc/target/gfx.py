"""AMDGPU targets: register budgets, occupancy and reserved registers per gfx architecture.

Sources (LLVM; the corpus is LLVM 19, numbers checked against llc-19/llc-22):

* ``Utils/AMDGPUBaseInfo.cpp`` (``IsaInfo``): getAddressableNumSGPRs (104 on gfx6/7, 102 on
  gfx8/9, 106 on gfx10+, 96 with the SGPR init bug), getTotalNumSGPRs (512 on gfx6/7, 800 on
  gfx8+), getSGPRAllocGranule (8, 16, the whole file on gfx10+), getMaxNumSGPRs,
  getMinNumSGPRs, getVGPRAllocGranule, getTotalNumVGPRs, getAddressableNumVGPRs,
  getMaxWavesPerEU, getNumWavesPerEUWithNumVGPRs, getOccupancyWithNumSGPRs,
  getMaxNumVGPRs, getMinNumVGPRs, getTotalNumVGPRs(has90AInsts, NumAGPR, NumVGPR).
* ``GCNSubtarget.cpp`` (LLVM 19): getBaseReservedNumSGPRs, getBaseMaxNumSGPRs,
  getBaseMaxNumVGPRs; ``AMDGPUSubtarget.cpp``: getWavesPerEU, getEUsPerCU.
* ``SIRegisterInfo.cpp``: getReservedRegs, getMaxNumVectorRegs (LLVM 19: split of the unified
  VGPR/AGPR file on gfx90a by ``usesAGPRs``).
* ``AMDGPU.td`` / ``GCNProcessors.td``: which processor has which feature
  (FeatureMAIInsts: gfx908/90a/94x/950; FeatureGFX90AInsts, hence ``needsAlignedVGPRs()`` and
  the unified 512-entry vector file: gfx90a/94x/950; FeatureArchitectedFlatScratch: gfx94x/950;
  Feature1_5xVGPRs: gfx1100/1101/1151/1200/1201; FeatureGFX10_3Insts: gfx103x and gfx11+;
  FeatureSGPRInitBug: gfx802/805; XNACK: gfx801/810 and gfx9).
  The 1.5x VGPR file, the granules and the wave limits were confirmed with llc-19 and llc-22
  ("; Occupancy:" of kernels that clobber v24, v25, v96, v97, v128).

The module is longer than most: it is the one table of processors and the one place their
register arithmetic lives, kept together so a rule and its processors are read side by side.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final, cast

from verilocc.errors import TargetError
from verilocc.target.registers import (
    PhysReg,
    RegFile,
    parse_physreg,
    special_register_names,
)


# --------------------------------------------------------------------------------------------
# Fact table
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Processor:
    """One row of the processor table: the subtarget features that matter for registers."""

    name: str
    major: int  # ISA major version (IsaVersion.Major)
    mai: bool  # FeatureMAIInsts: has AGPRs
    gfx90a_insts: bool  # FeatureGFX90AInsts: unified 512 VGPR+AGPR file, aligned tuples
    gfx10_3_insts: bool  # FeatureGFX10_3Insts: VGPR granule 16 (wave32) / 8 (wave64)
    vgprs_1_5x: bool  # Feature1_5xVGPRs (was FeatureGFX11FullVGPRs): 1536/768 VGPRs
    architected_flat_scratch: bool  # FeatureArchitectedFlatScratch
    xnack: bool  # supports XNACK; the default target id "any" counts as enabled
    llvm_min: int  # first LLVM major that knows the processor
    llvm_max: int | None  # last LLVM major that knows it (None: still supported)
    sgpr_init_bug: bool = False  # FeatureSGPRInitBug: every kernel allocates exactly 96 SGPRs


def _row(name: str, major: int, features: str = "", llvm: tuple[int, int | None] = (19, None)) -> _Processor:
    """A table row; ``features`` names the ones set: mai, 90a, 10.3, 1.5x, afs, xnack, initbug."""
    f = set(features.split())
    assert f <= {"mai", "90a", "10.3", "1.5x", "afs", "xnack", "initbug"}, f
    return _Processor(name, major, "mai" in f, "90a" in f, "10.3" in f, "1.5x" in f, "afs" in f, "xnack" in f,
                      llvm[0], llvm[1], "initbug" in f)


# Every processor llc-19 or llc-22 accepts for amdgcn except gfx1250/gfx1251 (LLVM 22's
# 1024-VGPR files): GCNProcessors.td / AMDGPU.td, and each row's occupancy limits, SGPR
# budget, XNACK/flat-scratch SGPRs and AGPRs are compared with llc's "; Occupancy:",
# "; NumSgprs:" and "; NumAgprs:" (tests/test_target.py::test_occupancy_matches_llc).
# llc-19 knows the generic targets only with code object version 6; gfx950, gfx1153 and
# gfx9-4-generic are new in LLVM 20, and LLVM 22 removed gfx940 and gfx941.
_PROCESSORS: Final[tuple[_Processor, ...]] = (
    *(_row(n, 6) for n in ("gfx600", "gfx601", "gfx602")),
    *(_row(n, 7) for n in ("gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705")),
    _row("gfx801", 8, "xnack"),
    _row("gfx802", 8, "initbug"),
    _row("gfx803", 8),
    _row("gfx805", 8, "initbug"),
    _row("gfx810", 8, "xnack"),
    *(_row(n, 9, "xnack") for n in ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c", "gfx9-generic")),
    _row("gfx908", 9, "mai xnack"),
    _row("gfx90a", 9, "mai 90a xnack"),
    _row("gfx940", 9, "mai 90a afs xnack", llvm=(19, 21)),
    _row("gfx941", 9, "mai 90a afs xnack", llvm=(19, 21)),
    _row("gfx942", 9, "mai 90a afs xnack"),
    _row("gfx950", 9, "mai 90a afs xnack", llvm=(20, None)),
    _row("gfx9-4-generic", 9, "mai 90a afs xnack", llvm=(20, None)),
    *(_row(n, 10, "xnack") for n in ("gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx10-1-generic")),
    *(_row(n, 10, "10.3") for n in ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
                                    "gfx10-3-generic")),
    *(_row(n, 11, "10.3 1.5x") for n in ("gfx1100", "gfx1101", "gfx1151")),
    *(_row(n, 11, "10.3") for n in ("gfx1102", "gfx1103", "gfx1150", "gfx1152", "gfx11-generic")),
    _row("gfx1153", 11, "10.3", llvm=(20, None)),
    *(_row(n, 12, "10.3 1.5x") for n in ("gfx1200", "gfx1201", "gfx12-generic")),
)

#: VGPRs (and AGPRs) one instruction can address per file (getAddressableNumArchVGPRs).
ARCH_VGPRS: Final = 256
#: SGPRs the hardware file holds per SIMD (getTotalNumSGPRs): 800 on gfx8+, 512 before.
_TOTAL_SGPRS: Final = 800
_GFX6_TOTAL_SGPRS: Final = 512
#: The SGPRs every kernel allocates on processors with the SGPR init bug (gfx802, gfx805).
FIXED_SGPRS_FOR_INIT_BUG: Final = 96
#: Wave-limited SGPR budget on gfx10+ when not asking for addressable ones (getMaxNumSGPRs).
_GFX10_NON_ADDRESSABLE_SGPRS: Final = 108
#: ... and on gfx8/9 (getMaxNumSGPRs: ``AddressableNumSGPRs = 112``).
_GFX9_NON_ADDRESSABLE_SGPRS: Final = 112
#: SGPRs a trap handler takes from each wave's share (IsaInfo TRAP_NUM_SGPRS).
TRAP_SGPRS: Final = 16
#: Largest flat work-group size (getMaxFlatWorkGroupSize), the default for kernels.
MAX_FLAT_WORKGROUP_SIZE: Final = 1024


def _check_table() -> None:
    names = [p.name for p in _PROCESSORS]
    assert len(set(names)) == len(names), "duplicate processor"
    for p in _PROCESSORS:
        assert 6 <= p.major <= 12, p
        assert not p.sgpr_init_bug or p.major == 8, p
        assert not p.gfx90a_insts or p.mai, f"{p.name}: gfx90a insts imply MAI"
        assert not p.vgprs_1_5x or p.gfx10_3_insts, p
        assert not (p.major >= 10 and p.mai), p


_check_table()


# --------------------------------------------------------------------------------------------
# Target
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """Register facts of one processor at one wavefront size.

    ``addressable_vgprs`` is per file (VGPR, and AGPR where present); on gfx90a/94x/950 the
    two files share ``total_vgprs`` = 512 entries per lane. ``vgpr_alloc_granule`` and
    ``total_vgprs`` depend on the wave size: use `with_wavefront` for a function whose
    target-features say ``+wavefrontsize64`` on gfx10+.
    """

    name: str
    generation: str  # "gfx6" ... "gfx12"
    wavefront_size: int
    addressable_sgprs: int
    total_sgprs: int
    addressable_vgprs: int
    has_agprs: bool
    unified_vgpr_file: bool
    aligned_vgpr_tuples: bool
    vgpr_alloc_granule: int
    max_waves_per_simd: int
    total_vgprs: int  # getTotalNumVGPRs at this wave size: the per-SIMD budget occupancy divides
    sgpr_alloc_granule: int
    gfx10_3_insts: bool
    vgprs_1_5x: bool
    architected_flat_scratch: bool
    xnack: bool
    llvm_min: int
    llvm_max: int | None
    sgpr_init_bug: bool = False

    def __hash__(self) -> int:
        return hash((self.name, self.wavefront_size))

    @property
    def major(self) -> int:
        return int(self.generation[3:])

    def with_wavefront(self, size: int) -> Target:
        """The same processor at another wave size (gfx10+ supports 32 and 64; gfx9 only 64)."""
        return _make_target(self.name, size)

    # -- registers ---------------------------------------------------------------------------
    def has_register(self, reg: PhysReg) -> bool:
        """Whether the register exists in this processor's register files.

        VGPRs and AGPRs above v255/a255 (LLVM 22 defines VGPRs up to 1023 for gfx1250) do not;
        AGPRs exist only with MAI instructions. SGPRs 0..105 and special registers always
        exist as LLVM registers (those the target lacks are reserved, see `is_reserved`).
        """
        if reg.file is RegFile.VGPR:
            return reg.index + max(reg.width32, 1) <= self.addressable_vgprs
        if reg.file is RegFile.AGPR:
            return self.has_agprs and reg.index + max(reg.width32, 1) <= self.addressable_vgprs
        return True

    def tuple_alignment_ok(self, reg: PhysReg) -> bool:
        """VGPR/AGPR tuples must start at an even register on gfx90a/94x/950.

        GCNSubtarget::needsAlignedVGPRs() is hasGFX90AInsts(); the machine verifier reports
        "Subtarget requires even aligned vector registers" otherwise. SGPR tuple alignment is
        part of what LLVM defines (see `registers.is_defined`), not a target property.
        """
        if not self.aligned_vgpr_tuples or reg.file not in (RegFile.VGPR, RegFile.AGPR):
            return True
        return reg.width32 < 2 or reg.index % 2 == 0

    # -- occupancy ---------------------------------------------------------------------------
    def waves_per_simd(self, vgprs: int, agprs: int = 0, sgprs: int = 0) -> int:
        """Waves per SIMD (EU) that ``vgprs`` VGPRs, ``agprs`` AGPRs and ``sgprs`` SGPRs allow.

        As GCNSubtarget::computeOccupancy without the LDS term: the minimum of
        getMaxWavesPerEU, getNumWavesPerEUWithNumVGPRs(total vector registers) and
        getOccupancyWithNumSGPRs. ``sgprs`` counts every SGPR the kernel allocates, including
        VCC/FLAT_SCRATCH/XNACK_MASK (the ``; NumSgprs:`` that llc prints); 0 means "not limiting".
        On gfx90a-like targets AGPRs follow VGPRs rounded up to 4 (getTotalNumVGPRs with
        has90AInsts); on gfx908 the two files are separate and the larger one counts.
        """
        if min(vgprs, agprs, sgprs) < 0:
            raise TargetError("register counts must not be negative")
        if self.unified_vgpr_file and agprs:
            vector = _align_to(vgprs, 4) + agprs
        else:
            vector = max(vgprs, agprs)
        waves = min(self.max_waves_per_simd, self.waves_with_vgprs(vector))
        if self.sgpr_init_bug:
            sgprs = FIXED_SGPRS_FOR_INIT_BUG  # llc reports 96 whatever the kernel uses
        if sgprs:
            waves = min(waves, self.waves_with_sgprs(sgprs))
        return waves

    def waves_with_vgprs(self, vgprs: int) -> int:
        """getNumWavesPerEUWithNumVGPRs."""
        if vgprs < self.vgpr_alloc_granule:
            return self.max_waves_per_simd
        rounded = _align_to(vgprs, self.vgpr_alloc_granule)
        return min(max(self.total_vgprs // rounded, 1), self.max_waves_per_simd)

    def waves_with_sgprs(self, sgprs: int) -> int:
        """getOccupancyWithNumSGPRs (gfx8/9 and gfx6/7 tables; gfx10+ SGPRs never limit occupancy)."""
        if self.major >= 10:
            return self.max_waves_per_simd
        if self.major < 8:
            for limit, waves in ((48, 10), (56, 9), (64, 8), (72, 7), (80, 6)):
                if sgprs <= limit:
                    return waves
            return 5
        if sgprs <= 80:
            return 10
        if sgprs <= 88:
            return 9
        if sgprs <= 100:
            return 8
        return 7

    # -- budgets (IsaInfo) -------------------------------------------------------------------
    @property
    def addressable_vector_regs(self) -> int:
        """getAddressableNumVGPRs: 512 on gfx90a-like targets (VGPRs + AGPRs), else 256."""
        return 2 * ARCH_VGPRS if self.unified_vgpr_file else ARCH_VGPRS

    def max_vgprs_for_waves(self, waves_per_eu: int) -> int:
        """IsaInfo::getMaxNumVGPRs: vector registers a wave may use at that occupancy."""
        _check_waves(waves_per_eu)
        most = _align_down(self.total_vgprs // waves_per_eu, self.vgpr_alloc_granule)
        return min(most, self.addressable_vector_regs)

    def min_vgprs_for_waves(self, waves_per_eu: int) -> int:
        """IsaInfo::getMinNumVGPRs (LLVM 19)."""
        _check_waves(waves_per_eu)
        if waves_per_eu >= self.max_waves_per_simd:
            return 0
        granule = self.vgpr_alloc_granule
        most = _align_down(self.total_vgprs // waves_per_eu, granule)
        if most == _align_down(self.total_vgprs // self.max_waves_per_simd, granule):
            return 0
        min_waves = self.waves_with_vgprs(self.addressable_vector_regs)
        if waves_per_eu < min_waves:
            return self.min_vgprs_for_waves(min_waves)
        most_next = _align_down(self.total_vgprs // (waves_per_eu + 1), granule)
        return min(1 + min(most - granule, most_next), self.addressable_vector_regs)

    def max_sgprs_for_waves(self, waves_per_eu: int, addressable: bool, trap_handler: bool = False) -> int:
        """IsaInfo::getMaxNumSGPRs; `trap_handler`: the subtarget has FeatureTrapHandler (every
        AMDHSA function), whose SGPRs come off each wave's share first."""
        _check_waves(waves_per_eu)
        if self.major >= 10:
            return self.addressable_sgprs if addressable else _GFX10_NON_ADDRESSABLE_SGPRS
        limit = self.addressable_sgprs if addressable or self.major < 8 else _GFX9_NON_ADDRESSABLE_SGPRS
        share = self.total_sgprs // waves_per_eu
        if trap_handler:
            share -= min(share, TRAP_SGPRS)
        return min(_align_down(share, self.sgpr_alloc_granule), limit)

    def min_sgprs_for_waves(self, waves_per_eu: int, trap_handler: bool = False) -> int:
        """IsaInfo::getMinNumSGPRs (`trap_handler` as in `max_sgprs_for_waves`)."""
        _check_waves(waves_per_eu)
        if self.major >= 10 or waves_per_eu >= self.max_waves_per_simd:
            return 0
        share = self.total_sgprs // (waves_per_eu + 1)
        if trap_handler:
            share -= min(share, TRAP_SGPRS)
        return min(_align_down(share, self.sgpr_alloc_granule) + 1, self.addressable_sgprs)

    def reserved_num_sgprs(self, has_flat_scratch: bool = False) -> int:
        """GCNSubtarget::getBaseReservedNumSGPRs: SGPRs kept for VCC, FLAT_SCRATCH, XNACK_MASK."""
        if self.major >= 10:
            return 2  # VCC; FLAT_SCRATCH and XNACK are no longer SGPRs
        if (has_flat_scratch or self.architected_flat_scratch) and self.major >= 8:
            return 6  # FLAT_SCRATCH, XNACK, VCC
        if has_flat_scratch and self.major == 7:
            return 4  # FLAT_SCRATCH, VCC (gfx6 has no flat scratch)
        if self.xnack:
            return 4  # XNACK, VCC
        return 2

    def eus_per_cu(self, cu_mode: bool = False) -> int:
        """getEUsPerCU: 4 SIMDs share a work-group (2 on gfx10+ in CU mode)."""
        return 2 if self.major >= 10 and cu_mode else 4

    def waves_per_eu(
        self,
        flat_workgroup_size: int = MAX_FLAT_WORKGROUP_SIZE,
        requested: tuple[int, int | None] | None = None,
        cu_mode: bool = False,
    ) -> tuple[int, int]:
        """AMDGPUSubtarget::getWavesPerEU: ``(min, max)`` waves per EU for a kernel.

        ``flat_workgroup_size`` is the maximum of ``"amdgpu-flat-work-group-size"`` (default
        1024); ``requested`` is ``"amdgpu-waves-per-eu"`` (second element optional).
        """
        waves_per_group = math.ceil(flat_workgroup_size / self.wavefront_size)
        implied_min = math.ceil(waves_per_group / self.eus_per_cu(cu_mode))
        default = (implied_min, self.max_waves_per_simd)
        if requested is None:
            return default
        first, second = requested[0], requested[1] if requested[1] is not None else default[1]
        if second and first > second:
            return default
        if first < 1 or second > self.max_waves_per_simd:
            return default
        if first < implied_min:
            return default
        return (first, second)


def _check_waves(waves: int) -> None:
    if waves <= 0:
        raise TargetError(f"waves per EU must be positive, got {waves}")


def _align_to(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def _align_down(value: int, granule: int) -> int:
    return value // granule * granule


def _make_target(name: str, wavefront_size: int | None = None) -> Target:
    proc = _processor(name)
    if wavefront_size is None:
        # Default wave size: 64 up to gfx9, 32 on gfx10+ (llc prints .amdhsa_wavefront_size32 1).
        wavefront_size = 64 if proc.major <= 9 else 32
    if wavefront_size not in (32, 64) or (proc.major <= 9 and wavefront_size != 64):
        raise TargetError(f"{name} does not support wavefront size {wavefront_size}")
    wave32 = wavefront_size == 32
    # getVGPRAllocGranule / getTotalNumVGPRs
    if proc.gfx90a_insts:
        granule, total_vgprs = 8, 512
    elif proc.major <= 9:
        granule, total_vgprs = 4, 256
    elif proc.vgprs_1_5x:
        granule, total_vgprs = (24, 1536) if wave32 else (12, 768)
    elif proc.gfx10_3_insts:
        granule, total_vgprs = (16, 1024) if wave32 else (8, 512)
    else:
        granule, total_vgprs = (8, 1024) if wave32 else (4, 512)
    # getMaxWavesPerEU: 8 with gfx90a insts, 10 up to gfx9, 16 from gfx10.3, 20 on gfx10.1.
    if proc.gfx90a_insts:
        max_waves = 8
    elif proc.major <= 9:
        max_waves = 10
    else:
        max_waves = 16 if proc.gfx10_3_insts else 20
    # getAddressableNumSGPRs
    if proc.sgpr_init_bug:
        addressable_sgprs = FIXED_SGPRS_FOR_INIT_BUG
    else:
        addressable_sgprs = 106 if proc.major >= 10 else 102 if proc.major >= 8 else 104
    return Target(
        name=name,
        generation=f"gfx{proc.major}",
        wavefront_size=wavefront_size,
        addressable_sgprs=addressable_sgprs,
        total_sgprs=_TOTAL_SGPRS if proc.major >= 8 else _GFX6_TOTAL_SGPRS,
        addressable_vgprs=ARCH_VGPRS,
        has_agprs=proc.mai,
        unified_vgpr_file=proc.gfx90a_insts,
        aligned_vgpr_tuples=proc.gfx90a_insts,
        vgpr_alloc_granule=granule,
        max_waves_per_simd=max_waves,
        total_vgprs=total_vgprs,
        # getSGPRAllocGranule: the whole addressable file on gfx10+, 16 on gfx8/9, 8 before.
        sgpr_alloc_granule=addressable_sgprs if proc.major >= 10 else 16 if proc.major >= 8 else 8,
        gfx10_3_insts=proc.gfx10_3_insts,
        vgprs_1_5x=proc.vgprs_1_5x,
        architected_flat_scratch=proc.architected_flat_scratch,
        xnack=proc.xnack,
        llvm_min=proc.llvm_min,
        llvm_max=proc.llvm_max,
        sgpr_init_bug=proc.sgpr_init_bug,
    )


#: The processor names LLVM accepts for GCN generations before gfx9 (AMDGPUUsage,
#: "Processors"), as `"target-cpu"` in older tests still has them.
LEGACY_PROCESSOR_NAMES = {
    "tahiti": "gfx600", "pitcairn": "gfx601", "verde": "gfx601", "oland": "gfx602", "hainan": "gfx602",
    "kaveri": "gfx700", "hawaii": "gfx701", "kabini": "gfx703", "mullins": "gfx703", "bonaire": "gfx704",
    "carrizo": "gfx801", "iceland": "gfx802", "tonga": "gfx802", "fiji": "gfx803", "polaris10": "gfx803",
    "polaris11": "gfx803", "tongapro": "gfx805", "stoney": "gfx810",
}


def _processor(name: str) -> _Processor:
    for proc in _PROCESSORS:
        if proc.name == name:
            return proc
    raise TargetError(f"unknown target '{name}' (known: {', '.join(target_names())})")


@functools.lru_cache(maxsize=None)
def get_target(name: str, wavefront_size: int | None = None) -> Target:
    """The target for an ``llc -mcpu`` name such as ``gfx90a``; unknown names raise `TargetError`.

    A target-id suffix (``gfx90a:xnack-``) is not accepted: strip it first. The older names
    (``fiji``, ``hawaii``...) give their gfx target.
    """
    name = name.strip().lower()
    return _make_target(LEGACY_PROCESSOR_NAMES.get(name, name), wavefront_size)


def target_for_function(cpu: str, features: str = "") -> Target:
    """The target of a function with ``"target-cpu"=cpu`` and ``"target-features"=features``.

    The wave size is the processor's default unless the features select one:
    ``+wavefrontsize64`` / ``+wavefrontsize32`` (AMDGPU.td FeatureWavefrontSize64/32, the
    features clang and llc put on every gfx10+ function). Unknown processors and wave sizes
    the processor lacks raise `TargetError`.
    """
    wave = 64 if "+wavefrontsize64" in features else 32 if "+wavefrontsize32" in features else None
    return get_target(cpu, wave)


def has_trap_handler(triple: str, features: str = "") -> bool:
    """Whether a function of this IR module triple and ``"target-features"`` is compiled with
    FeatureTrapHandler: the AMDHSA OS turns it on (GCNSubtarget adds ``+trap-handler`` to
    every amdhsa subtarget); an explicit ``+``/``-trap-handler`` feature, the last one, wins."""
    on = triple.split("-")[2:3] == ["amdhsa"]
    for feature in features.split(","):
        if feature.strip() in ("+trap-handler", "-trap-handler"):
            on = feature.strip()[0] == "+"
    return on


def target_names() -> list[str]:
    """Every processor name `get_target` accepts."""
    return [p.name for p in _PROCESSORS]


# --------------------------------------------------------------------------------------------
# Function budgets
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Budget:
    """How many SGPRs, VGPRs and AGPRs (from register 0) a function may allocate."""

    sgprs: int
    vgprs: int
    agprs: int


def default_budget(target: Target) -> Budget:
    """The widest budget any function can have on the target: every addressable register.

    SGPRs: getAddressableNumSGPRs (the allocator's limit when no attribute lowers it:
    min(112 - reserved, 102) on gfx9, min(108 - 2, 106) on gfx10+). VGPRs/AGPRs: 256 each.
    """
    return Budget(
        sgprs=target.addressable_sgprs,
        vgprs=ARCH_VGPRS,
        agprs=ARCH_VGPRS if target.has_agprs else 0,
    )


def function_budget(
    target: Target,
    *,
    flat_workgroup_size: int = MAX_FLAT_WORKGROUP_SIZE,
    waves_per_eu: tuple[int, int | None] | None = None,
    num_sgpr: int | None = None,
    num_vgpr: int | None = None,
    preloaded_sgprs: int = 0,
    has_flat_scratch: bool = False,
    uses_agprs: bool = False,
    cu_mode: bool = False,
    trap_handler: bool = False,
    effective_waves: tuple[int, int] | None = None,
) -> Budget:
    """The budget LLVM 19 gives one function, from its IR attributes.

    Arguments mirror ``"amdgpu-flat-work-group-size"`` (maximum), ``"amdgpu-waves-per-eu"``,
    ``"amdgpu-num-sgpr"``, ``"amdgpu-num-vgpr"``; ``preloaded_sgprs`` is the number of input
    SGPRs (MFI.getNumPreloadedSGPRs), ``has_flat_scratch`` whether the kernel has a flat
    scratch init, ``uses_agprs`` whether it uses AGPRs (SIMachineFunctionInfo::usesAGPRs,
    which decides the VGPR/AGPR split on gfx90a-like targets), ``trap_handler`` whether the
    subtarget reserves SGPRs for a trap handler (`has_trap_handler`). ``effective_waves``:
    the waves-per-EU range as a later LLVM computes it (`verilocc.target.waves.effective_waves_per_eu`),
    in place of LLVM 19's from the work-group size and ``waves_per_eu``.
    Follows GCNSubtarget::getBaseMaxNumSGPRs/getBaseMaxNumVGPRs of LLVM 19 (LLVM 21+ clamp an
    out-of-range ``amdgpu-num-vgpr`` instead of ignoring it) and SIRegisterInfo::getReservedRegs.
    """
    low, high = effective_waves or target.waves_per_eu(flat_workgroup_size, waves_per_eu, cu_mode)

    # SGPRs
    max_sgprs = target.max_sgprs_for_waves(low, addressable=False, trap_handler=trap_handler)
    max_addressable = target.max_sgprs_for_waves(low, addressable=True, trap_handler=trap_handler)
    reserved = target.reserved_num_sgprs(has_flat_scratch)
    if num_sgpr is not None:
        requested = num_sgpr
        if requested and requested <= reserved:
            requested = 0
        if requested and requested < preloaded_sgprs:
            requested = preloaded_sgprs
        if requested and requested > max_sgprs:
            requested = 0
        if high and requested and requested < target.min_sgprs_for_waves(high, trap_handler):
            requested = 0
        if requested:
            max_sgprs = requested
    if target.sgpr_init_bug:
        max_sgprs = FIXED_SGPRS_FOR_INIT_BUG
    sgprs = min(max_sgprs - reserved, max_addressable)

    # Vector registers
    vector = target.max_vgprs_for_waves(low)
    if num_vgpr is not None:
        requested = num_vgpr * 2 if target.unified_vgpr_file else num_vgpr
        if requested and requested > target.max_vgprs_for_waves(low):
            requested = 0
        if high and requested and requested < target.min_vgprs_for_waves(high):
            requested = 0
        if requested:
            vector = requested
    if target.unified_vgpr_file:
        if uses_agprs:
            vgprs = agprs = vector // 2
        else:
            vgprs = min(vector, ARCH_VGPRS)
            agprs = vector - vgprs
    else:
        vgprs = min(vector, ARCH_VGPRS)
        agprs = vgprs if target.has_agprs else 0
    return Budget(sgprs=sgprs, vgprs=vgprs, agprs=agprs)


# --------------------------------------------------------------------------------------------
# Reserved registers
# --------------------------------------------------------------------------------------------
#: Registers SIRegisterInfo::getReservedRegs always reserves (with all their aliases):
#: MODE, EXEC, FLAT_SCR, M0, SRC_VCCZ/EXECZ/SCC, the aperture registers,
#: SRC_POPS_EXITING_WAVE_ID, XNACK_MASK, LDS_DIRECT, TBA, TMA, TTMP0..15, SGPR_NULL64.
_LLVM_RESERVED: Final[tuple[str, ...]] = (
    "mode", "exec", "flat_scr", "m0", "src_vccz", "src_execz", "src_scc",
    "src_shared_base", "src_shared_limit", "src_private_base", "src_private_limit",
    "src_pops_exiting_wave_id", "xnack_mask", "lds_direct", "tba", "tma",
    "ttmp0_ttmp1", "ttmp2_ttmp3", "ttmp4_ttmp5", "ttmp6_ttmp7",
    "ttmp8_ttmp9", "ttmp10_ttmp11", "ttmp12_ttmp13", "ttmp14_ttmp15",
    "sgpr_null64",
)  # fmt: skip

#: Not reserved by LLVM but in no allocatable class, so never assigned either: SCC (only in
#: the non-allocatable SCC_CLASS), the ISel placeholders, and LLVM 22 additions.
_NEVER_ALLOCATED: Final[tuple[str, ...]] = (
    "scc", "pc_reg", "fp_reg", "sp_reg", "private_rsrc_reg",
    "sgpr_null128", "sgpr_null256", "src_flat_scratch_base", "asynccnt", "tensorcnt",
)  # fmt: skip

#: machineFunctionInfo keys whose registers getReservedRegs reserves for the function.
FUNCTION_RESERVED_KEYS: Final[tuple[str, ...]] = (
    "scratchRSrcReg", "stackPtrOffsetReg", "frameOffsetReg", "sgprForEXECCopy",
    "longBranchReservedReg", "vgprForAGPRCopy",
)  # fmt: skip


def _check_reserved_tables() -> None:
    known = set(special_register_names())
    for name in _LLVM_RESERVED + _NEVER_ALLOCATED:
        assert name in known or name.startswith("ttmp"), name
        parse_physreg(name)


_check_reserved_tables()


@dataclass(frozen=True)
class Reservations:
    """The registers one function may not allocate: fixed specials, out-of-budget file
    registers and the function's own reserved registers (machineFunctionInfo)."""

    target: Target
    budget: Budget
    extra: tuple[str, ...] = ()

    @functools.cached_property
    def reserved_units(self) -> frozenset[int]:
        units: set[int] = set()
        for name in _LLVM_RESERVED + _NEVER_ALLOCATED + self.extra:
            units.update(parse_physreg(name).units)
        return frozenset(units)

    def is_reserved(self, reg: PhysReg) -> bool:
        """Whether ``reg`` overlaps any reserved register (LLVM reserves every alias)."""
        if reg.file is RegFile.SGPR and reg.index + max(reg.width32, 1) > self.budget.sgprs:
            return True
        if reg.file is RegFile.VGPR and reg.index + max(reg.width32, 1) > self.budget.vgprs:
            return True
        if reg.file is RegFile.AGPR and reg.index + max(reg.width32, 1) > self.budget.agprs:
            return True
        return not self.reserved_units.isdisjoint(reg.units)

    def with_registers(self, names: Iterable[str]) -> Reservations:
        """These reservations plus more registers (names with or without ``$``)."""
        added = tuple(n[1:] if n.startswith("$") else n for n in names if n)
        for name in added:
            parse_physreg(name)  # unknown names are errors, not silently ignored
        return replace(self, extra=tuple(sorted(set(self.extra + added))))


@functools.lru_cache(maxsize=None)
def reservations(target: Target, budget: Budget | None = None, extra: tuple[str, ...] = ()) -> Reservations:
    """Reservations for a function on ``target`` (default budget: `default_budget`)."""
    base = Reservations(target, budget or default_budget(target))
    return base.with_registers(extra) if extra else base


def is_reserved(reg: PhysReg, target: Target) -> bool:
    """Whether the allocator may never assign ``reg`` on ``target`` with the default budget."""
    return reservations(target).is_reserved(reg)


def reserved_registers(target: Target) -> frozenset[str]:
    """Names of the special registers reserved on every function of ``target`` (roots only:
    their aliases and the out-of-budget SGPR/VGPR/AGPRs are reserved too, see `is_reserved`)."""
    del target  # the same set on every supported target
    return frozenset(_LLVM_RESERVED + _NEVER_ALLOCATED)


def wwm_reserved_registers(machine_function_info: Mapping[str, object]) -> tuple[str, ...]:
    """The registers ``machineFunctionInfo.wwmReservedRegs`` reserves for whole-wave values."""
    wwm = machine_function_info.get("wwmReservedRegs")
    names: list[str] = []
    if isinstance(wwm, (list, tuple)):
        for value in cast("list[object] | tuple[object, ...]", wwm):
            text = str(value).strip("'\" ")
            if text.strip("$"):
                parse_physreg(text)
                names.append(text.lstrip("$"))
    return tuple(names)


def function_reserved_registers(machine_function_info: Mapping[str, object], target: Target) -> tuple[str, ...]:
    """Register names that a MIR ``machineFunctionInfo`` block reserves on ``target``.

    Reads `FUNCTION_RESERVED_KEYS` (values like ``'$sgpr96_sgpr97_sgpr98_sgpr99'``, empty
    strings skipped) and ``wwmReservedRegs`` (a list). ``vgprForAGPRCopy`` counts only on
    targets with AGPRs but without gfx90a instructions (gfx908), as in getReservedRegs.
    The placeholders ``$fp_reg``/``$private_rsrc_reg`` are returned too; they alias nothing.
    """
    names: list[str] = []
    for key in FUNCTION_RESERVED_KEYS:
        value = machine_function_info.get(key)
        if not isinstance(value, str) or not value.strip("'\" $"):
            continue
        if key == "vgprForAGPRCopy" and not (target.has_agprs and not target.unified_vgpr_file):
            continue
        names.append(value.strip("'\" "))
    names.extend(f"${n}" for n in wwm_reserved_registers(machine_function_info))
    for name in names:
        parse_physreg(name)
    return tuple(n[1:] if n.startswith("$") else n for n in names)
