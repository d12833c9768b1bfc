"""What an allocation costs: registers, scratch, spills, occupancy and what limits it.

The summary mirrors LLVM's `-Rpass-analysis=kernel-resource-usage` remarks and
`llvm-calc-occupancy`: SGPRs, VGPRs, AGPRs (highest register + 1 per file, as the hardware
allocates them), scratch (the stack objects, bytes per lane), spills and reloads, waves per
SIMD and the resource that limits them. Every occupancy fact comes from `verilocc.target`
(`verilocc.target.waves.waves_per_simd`, as llc computes ``; Occupancy:``: the registers, the
LDS the function allocates (``machineFunctionInfo: ldsSize:``), its work-group size
(``amdgpu-flat-work-group-size``) and ``amdgpu-waves-per-eu``) and the function's limits from
`verilocc.target.limits`; nothing here re-derives a granule or a table. Thresholds (the
register counts at which waves drop) are found by searching those functions, which are
monotone in the register count; none is drawn above what the launch allows, and no register
count gains a wave there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verilocc.analysis.operands import function_limits
from verilocc.mir.model import Function
from verilocc.target import Target
from verilocc.target.limits import Limits
from verilocc.target.waves import Launch, function_launch, waves_per_simd
from verilocc.view.occupancy import Occupancy


@dataclass(frozen=True)
class Resources:
    target: str
    wave_size: int
    sgprs: int  # highest SGPR + 1
    reserved_sgprs: int  # VCC, FLAT_SCRATCH, XNACK_MASK the target adds (llc's NumSgprs counts them)
    vgprs: int
    agprs: int
    scratch_bytes: int  # stack objects, bytes per lane
    spill_slot_bytes: int
    sgpr_spills: int  # SGPR spill instructions (to the stack or to VGPR lanes)
    vector_spills: int  # VGPR/AGPR spill instructions
    reloads: int
    waves: int  # per SIMD, as llc's `; Occupancy:`
    max_waves: int
    register_waves: int  # what the registers alone allow (more than `waves` when the launch limits)
    limited_by: tuple[str, ...]  # "VGPRs"/"AGPRs"/"SGPRs", the LDS and work-group size, or ("the target",)
    free_to_gain: dict[str, int]  # file -> registers to give up for one more wave
    limits: Limits
    launch: Launch  # LDS, work-group size and amdgpu-waves-per-eu
    unified_vector_file: bool
    # Pressure: the vector count that occupancy divides (VGPR + AGPR in a unified file, the
    # larger of the two otherwise) per point, its peak, and the thresholds.
    vector_live: tuple[int, ...]
    peak_point: int
    peak_live: int
    peak_waves: int  # waves/SIMD an allocation as tight as the peak live count would have
    free_at_peak: int  # live vector registers to free at the peak for one more wave than that
    vector_thresholds: tuple[tuple[int, int], ...]  # (waves, most vector registers for them)
    sgpr_thresholds: tuple[tuple[int, int], ...]  # (waves, most live SGPRs for them)
    free_per_point: tuple[int, ...]  # live vector registers over the count for `waves` + 1

    @property
    def sgprs_total(self) -> int:
        return self.sgprs + self.reserved_sgprs

    def remarks(self, function: str) -> list[tuple[str, str]]:
        """The summary as (name, value) lines, in the order of LLVM's remarks."""
        limiter = "; ".join(self.limited_by)
        rows = [
            ("Function Name", function),
            ("Target", f"{self.target} (wave{self.wave_size})"),
            ("SGPRs", f"{self.sgprs_total} ({self.sgprs} + {self.reserved_sgprs} reserved: VCC, FLAT_SCRATCH, XNACK)"),
            ("VGPRs", str(self.vgprs)),
            ("AGPRs", str(self.agprs)),
            ("ScratchSize [bytes/lane]", f"{self.scratch_bytes} (spill slots {self.spill_slot_bytes})"),
            ("SGPRs Spill", str(self.sgpr_spills)),
            ("VGPRs Spill", str(self.vector_spills)),
            ("Reloads", str(self.reloads)),
            ("LDS Size [bytes/block]", f"{self.launch.lds_bytes} (work groups of up to {self.launch.workgroup_sizes[1]} "
                                       f"work-items; {self.launch.unit_lds} bytes per {self.launch.unit})"),
            ("Occupancy [waves/SIMD]", f"{self.waves} of {self.max_waves}, limited by {limiter}"
                                       + (f"; the registers alone allow {self.register_waves}"
                                          if self.register_waves > self.waves else "")),
        ]
        for file, k in sorted(self.free_to_gain.items()):
            rows.append(("To gain one wave", f"use {k} fewer {file}"))
        best = f"{self.peak_live} (at best {self.peak_waves} wave{'s' if self.peak_waves > 1 else ''}/SIMD)"
        if self.peak_waves < min(self.max_waves, self.launch.waves):
            best += f"; free {self.free_at_peak} at the peak for {self.peak_waves + 1}"
        rows.append(("Peak live vector registers", best))
        return rows


def _most(count: Callable[[int], int], waves: int, upper: int) -> int:
    """The largest n in [0, upper] with count(n) >= waves (count is non-increasing in n), or -1."""
    if count(0) < waves:
        return -1
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(mid) >= waves:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _fewer(count: Callable[[int], int], current: int, waves: int) -> int | None:
    """How many fewer registers than `current` give `waves` or more; None if none do."""
    n = _most(count, waves, current)
    return None if n < 0 else current - n


def _thresholds(count: Callable[[int], int], upper: int, top: int) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for w in range(top, 0, -1):
        n = _most(count, w, upper)
        if 0 <= n < upper and (not out or out[-1][1] != n):
            out.append((w, n))
    return tuple(out)


def _scratch(fn: Function) -> tuple[int, int]:
    total = spills = 0
    for slot in fn.stack_slots:
        size = slot.get("size", 0)
        size = int(size) if isinstance(size, int) or str(size).isdigit() else 0
        total += size
        if str(slot.get("type", "")) == "spill-slot":
            spills += size
    return total, spills


def resources(fn: Function, target: Target, occ: Occupancy) -> Resources:
    top = {"sgpr": 0, "vgpr": 0, "agpr": 0}
    for c in occ.columns:
        if c.file in top:
            top[c.file] += 1
    reserved = target.reserved_num_sgprs()
    vgprs, agprs, sgprs = top["vgpr"], top["agpr"], top["sgpr"]
    launch = function_launch(fn, target)

    def count(v: int, a: int, s: int) -> int:
        """Waves per SIMD with these registers (SGPRs with the reserved ones; 0: not limiting)."""
        return waves_per_simd(target, launch, v, a, s)

    waves = count(vgprs, agprs, sgprs + reserved)
    register_waves = target.waves_per_simd(vgprs, agprs, sgprs + reserved)
    limited: list[str] = []
    free: dict[str, int] = {}
    if waves < target.max_waves_per_simd:
        if register_waves == waves and target.waves_per_simd(vgprs, agprs, 0) == waves:
            limited.append("VGPRs" if not agprs else "VGPRs and AGPRs")
            k = _fewer(lambda n: count(n, agprs, 0), vgprs, waves + 1)
            if k is not None:
                free["VGPRs"] = k
            if agprs:
                k = _fewer(lambda n: count(vgprs, n, 0), agprs, waves + 1)
                if k is not None:
                    free["AGPRs"] = k
        if register_waves == waves and target.waves_per_simd(0, 0, sgprs + reserved) == waves:
            limited.append("SGPRs")
            k = _fewer(lambda n: count(0, 0, n + reserved), sgprs, waves + 1)
            if k is not None:
                free["SGPRs"] = k
        limited.extend(launch.limits(waves))
    else:
        limited.append(f"the target's maximum ({target.max_waves_per_simd})")
    unified = target.unified_vgpr_file
    v_live, a_live = occ.pressure["vgpr"], occ.pressure["agpr"]
    vector = tuple(v + a if unified else max(v, a) for v, a in zip(v_live, a_live))
    upper = target.addressable_vector_regs

    def vector_waves(n: int) -> int:
        return count(n, 0, 0)

    def sgpr_waves(n: int) -> int:
        return count(0, 0, n + reserved)

    peak_point = max(range(len(vector)), key=lambda p: (vector[p], -p)) if vector else 0
    peak = vector[peak_point] if vector else 0
    peak_waves = vector_waves(peak)
    at_peak = _fewer(vector_waves, peak, peak_waves + 1) if peak_waves < target.max_waves_per_simd else 0
    next_count = _most(vector_waves, waves + 1, upper) if waves < target.max_waves_per_simd else -1
    free_per_point = tuple(max(0, n - next_count) if next_count >= 0 else 0 for n in vector)
    scratch, spill_bytes = _scratch(fn)
    kinds = [p.kind for p in occ.points]
    texts = [p.text for p in occ.points]
    sgpr_spills = sum(1 for k, t in zip(kinds, texts) if k == "spill" and ("SI_SPILL_S" in t))
    return Resources(
        target=target.name, wave_size=target.wavefront_size, sgprs=sgprs, reserved_sgprs=reserved, vgprs=vgprs,
        agprs=agprs, scratch_bytes=scratch, spill_slot_bytes=spill_bytes, sgpr_spills=sgpr_spills,
        vector_spills=kinds.count("spill") - sgpr_spills, reloads=kinds.count("reload"), waves=waves,
        max_waves=target.max_waves_per_simd, register_waves=register_waves, limited_by=tuple(limited),
        free_to_gain=free, limits=function_limits(fn, target), launch=launch, unified_vector_file=unified, vector_live=vector,
        peak_point=peak_point, peak_live=peak, peak_waves=peak_waves, free_at_peak=at_peak or 0,
        vector_thresholds=_thresholds(vector_waves, upper, target.max_waves_per_simd),
        sgpr_thresholds=_thresholds(sgpr_waves, target.addressable_sgprs, target.max_waves_per_simd),
        free_per_point=free_per_point,
    )
