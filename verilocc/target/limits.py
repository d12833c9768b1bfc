"""What registers one function may use: its limits per register file, and why a register is out.

A function's limits follow from the target, its IR attributes and its `machineFunctionInfo`
(`function_budget`: GCNSubtarget / SIRegisterInfo rules, sources in `verilocc.target.gfx`):

* ``amdgpu-flat-work-group-size`` (the maximum) decides the *hard* limits: a kernel beyond
  them cannot be launched as compiled (AMDGPUSubtarget::getWavesPerEU).
* ``amdgpu-waves-per-eu``, ``amdgpu-num-vgpr`` and ``amdgpu-num-sgpr`` decide the *hint*
  limits, which LLVM versions honour differently (LLVM 22 drops requests it cannot meet;
  GCNSubtarget::getBaseMaxNumVGPRs); exceeding them only lowers occupancy.
* registers named in ``machineFunctionInfo`` (stack, scratch, WWM reservations) are reserved
  (SIRegisterInfo::getReservedRegs, `function_reserved_registers`); the WWM ones
  (``wwmReservedRegs``) only for values that are not whole-wave values
  (`verilocc.analysis.wholewave`), which LLVM allocates there.

This module works on strings and mappings, not on MIR: callers pass a function's
attributes and `machineFunctionInfo` (`verilocc.analysis.operands.function_limits` does it
for a parsed function).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from verilocc.errors import TargetError
from verilocc.target.classes import RegisterClass
from verilocc.target.gfx import (Target, default_budget, function_budget, function_reserved_registers, reservations,
                                 wwm_reserved_registers)
from verilocc.target.registers import PhysReg, RegFile, is_defined, parse_physreg

#: Register files whose registers are numbered (`vgpr4`): the ones with bounds and budgets.
NUMBERED_FILES = (RegFile.SGPR, RegFile.VGPR, RegFile.AGPR)


@dataclass(frozen=True)
class Limits:
    """How many registers of each file one function may use, and which are reserved.

    The *hard* limits (the fields) reject an allocation beyond them; `hint` holds the limits
    the attributes ask for, whose excess is a warning. Where facts a MIR file does not record
    would change a limit (whether AGPRs are used), the larger choice is taken.
    """

    sgprs: int
    vgprs: int
    agprs: int
    total_vector: int  # VGPRs (rounded up to 4 when AGPRs are used) + AGPRs, unified files
    reserved: frozenset[int]
    hint: Limits | None = None
    wwm: frozenset[int] = frozenset()  # units of `reserved` that whole-wave values may use

    def limit(self, file: RegFile) -> int | None:
        return {RegFile.SGPR: self.sgprs, RegFile.VGPR: self.vgprs, RegFile.AGPR: self.agprs}.get(file)


UNLIMITED = Limits(10**6, 10**6, 10**6, 10**6, frozenset())


def _int_attr(attrs: Mapping[str, str], key: str) -> int | None:
    v = attrs.get(key, "").strip()
    return int(v) if v.isdigit() else None


def _limits(target: Target, reserved: frozenset[int], wwm: frozenset[int], uses_agprs: bool | None,
            **kw: object) -> Limits:
    if uses_agprs is not None:
        # LLVM bounds each file on its own (getReservedRegs); in a unified file the AGPRs
        # start after the VGPRs rounded up to 4, so that is what the two together may take.
        b = function_budget(target, uses_agprs=uses_agprs, **kw)  # type: ignore[arg-type]
        vgprs = -(-b.vgprs // 4) * 4 if target.unified_vgpr_file and b.agprs else b.vgprs
        return Limits(b.sgprs, b.vgprs, b.agprs, vgprs + b.agprs, reserved, wwm=wwm)
    without = function_budget(target, uses_agprs=False, **kw)  # type: ignore[arg-type]
    with_agprs = function_budget(target, uses_agprs=True, **kw)  # type: ignore[arg-type]
    vgprs = max(without.vgprs, with_agprs.vgprs)
    agprs = max(without.agprs, with_agprs.agprs)
    total = without.vgprs + without.agprs if target.unified_vgpr_file else vgprs + agprs
    return Limits(max(without.sgprs, with_agprs.sgprs), vgprs, agprs, total, reserved, wwm=wwm)


#: Graphics shader calling conventions: without `amdgpu-flat-work-group-size` their work
#: groups are at most one wave (AMDGPUSubtarget::getDefaultFlatWorkGroupSize).
SHADER_CONVENTIONS = frozenset({"amdgpu_vs", "amdgpu_ls", "amdgpu_hs", "amdgpu_es", "amdgpu_gs", "amdgpu_ps"})


def attribute_limits(target: Target, attributes: Mapping[str, str],
                     machine_function_info: Mapping[str, object], calling_convention: str = "",
                     uses_agprs: bool | None = None, trap_handler: bool = False) -> Limits:
    """The limits of a function with these IR attributes, `machineFunctionInfo` and calling
    convention. `uses_agprs` decides the VGPR/AGPR split of a unified file; None takes the
    larger limit of each file (what a MIR file does not record cannot reject an allocation).
    `trap_handler`: the subtarget keeps SGPRs for a trap handler (`has_trap_handler`)."""
    extra = function_reserved_registers(machine_function_info, target)
    reserved = frozenset(reservations(target, default_budget(target), extra).reserved_units)
    wwm_names = wwm_reserved_registers(machine_function_info)
    others = tuple(n for n in extra if n not in wwm_names)
    wwm = reserved - frozenset(reservations(target, default_budget(target), others).reserved_units)
    # A kernel whose arguments include the flat scratch init keeps FLAT_SCRATCH's SGPRs out of
    # its budget (getReservedNumSGPRs of the machine function); its preloaded SGPRs bound an
    # `amdgpu-num-sgpr` from below.
    args = machine_function_info.get("argumentInfo")
    args = args if isinstance(args, dict) else {}
    from verilocc.target.waves import CU_MODE_FEATURE, effective_waves_per_eu, workgroup_sizes

    # The largest work group (getFlatWorkGroupSizes: an invalid range gives the default) and the
    # SIMDs its waves share (getEUsPerCU: 2 in CU mode on gfx10+) decide the waves per EU.
    common: dict[str, object] = {"trap_handler": trap_handler, "has_flat_scratch": "flatScratchInit" in args,
                                 "preloaded_sgprs": _preloaded_sgprs(args),
                                 "flat_workgroup_size": workgroup_sizes(target, attributes, calling_convention)[1],
                                 "cu_mode": CU_MODE_FEATURE in attributes.get("target-features", "").split(",")}
    hard = _limits(target, reserved, wwm, uses_agprs, **common)
    waves = [w.strip() for w in attributes.get("amdgpu-waves-per-eu", "").split(",")]
    if waves[0].isdigit():
        common["waves_per_eu"] = (int(waves[0]), int(waves[1]) if len(waves) > 1 and waves[1].isdigit() else None)
    common["num_sgpr"] = _int_attr(attributes, "amdgpu-num-sgpr")
    common["num_vgpr"] = _int_attr(attributes, "amdgpu-num-vgpr")
    # A file written by LLVM 21 or later: the range its llc computes, bounded by the LDS.
    effective = effective_waves_per_eu(target, attributes, machine_function_info, calling_convention)
    if effective is not None:
        common["effective_waves"] = effective
    hint = _limits(target, reserved, wwm, uses_agprs, **common)
    return Limits(hard.sgprs, hard.vgprs, hard.agprs, hard.total_vector, reserved, hint=hint, wwm=wwm)


def _preloaded_sgprs(arguments: Mapping[str, object]) -> int:
    """SGPRs the hardware or the runtime fills before the kernel starts: the highest SGPR an
    `argumentInfo` entry names, plus one (user SGPRs and then system SGPRs, from $sgpr0)."""
    top = 0
    for entry in arguments.values():
        reg = entry.get("reg") if isinstance(entry, dict) else None
        if isinstance(reg, str):
            try:
                r = parse_physreg(reg.strip("'$"))
            except TargetError:
                continue
            if r.file is RegFile.SGPR:
                top = max(top, r.index + max(1, len(r.units) // 2))
    return top


def budget_warning(reg: PhysReg, limits: Limits) -> str | None:
    """A sentence when `reg` lies beyond the function's requested (hint) budget."""
    hint = limits.hint
    if hint is None or reg.file not in NUMBERED_FILES:
        return None
    limit = hint.limit(reg.file)
    if limit is not None and reg.index + max(1, len(reg.units) // 2) > limit:
        return (f"${reg.name} is beyond the {limit} {reg.file.value.upper()}s this function's attributes "
                "(amdgpu-waves-per-eu / amdgpu-num-*) ask for; occupancy will be lower than requested")
    return None


def file_size(target: Target, file: RegFile) -> int:
    """Registers of `file` the target can address (SGPRs: the whole file, getTotalNumSGPRs)."""
    if file is RegFile.SGPR:
        return target.total_sgprs
    if file is RegFile.VGPR:
        return target.addressable_vgprs
    if file is RegFile.AGPR:
        return target.addressable_vgprs if target.has_agprs else 0
    return 0


def register_problem(reg: PhysReg, cls: RegisterClass | None, target: Target, limits: Limits,
                     wwm_value: bool = False) -> tuple[str, str] | None:
    """Why `reg` cannot hold a value of `cls` (kind, sentence), or None when it can.
    `wwm_value`: the value is a whole-wave value, which may use `limits.wwm`."""
    name = f"${reg.name}"
    if cls is not None and reg.file not in cls.files:
        want = "/".join(sorted(f.value.upper() for f in cls.files))
        return "class", f"{name} is {'an' if reg.file.value[0] in 'as' else 'a'} {reg.file.value.upper()} register, but class {cls.name} needs {want}"
    if not is_defined(reg):
        return "alignment", f"{name} is not a register: SGPR tuples must start at an even SGPR (4-aligned when wider than 64 bits)"
    if reg.file in NUMBERED_FILES:
        width32 = max(1, len(reg.units) // 2)
        size = file_size(target, reg.file)
        if reg.index + width32 > size:
            return "bounds", f"{name} is outside the {target.name} {reg.file.value.upper()} file ({size} registers)"
        limit = limits.limit(reg.file)
        if limit is not None and reg.index + width32 > limit:
            return "bounds", f"{name} is beyond this function's budget of {limit} {reg.file.value.upper()}s"
        if target.aligned_vgpr_tuples and reg.file in (RegFile.VGPR, RegFile.AGPR) and width32 >= 2 and reg.index % 2:
            return "alignment", f"{name} starts at an odd register; {target.name} needs even-aligned {reg.file.value.upper()} tuples"
    if cls is not None and not cls.contains(reg, target):
        return "class", f"{name} is not in class {cls.name} on {target.name}"
    if limits.reserved.intersection(reg.units):
        if not (limits.reserved - limits.wwm).intersection(reg.units):
            if wwm_value:
                return None
            return "reserved", (f"{name} is reserved for whole-wave-mode values (wwmReservedRegs), "
                                "and this value is not one: its inactive lanes could be overwritten")
        return "reserved", f"{name} is reserved on {target.name} and may not be allocated"
    return None


__all__ = ["NUMBERED_FILES", "SHADER_CONVENTIONS", "UNLIMITED", "Limits", "attribute_limits", "budget_warning", "file_size",
           "register_problem"]
