"""AMDGPU register facts the checker needs (from LLVM's SIRegisterInfo.td and AMDGPUUsage):
register names and their 16-bit units, subregister indices, class files and widths, and which
registers a target has.

A unit is a 16-bit half of a 32-bit register, named `vgpr5.0` (low) and `vgpr5.1` (high); a
special register's halves are named after it (`m0.0`), and a 64-bit special is its `_lo` and
`_hi` halves (`vcc` = `vcc_lo.0 vcc_lo.1 vcc_hi.0 vcc_hi.1`). Any other name is refused.
"""

from __future__ import annotations

import functools
import re

FILES = {"vgpr": "v", "sgpr": "s", "agpr": "a", "ttmp": "t"}
# 32-bit special registers (two units each).
SPECIAL32 = frozenset({"m0", "scc", "mode", "sgpr_null", "sp_reg", "fp_reg", "vcc_lo", "vcc_hi", "exec_lo", "exec_hi",
                       "flat_scr_lo", "flat_scr_hi", "xnack_mask_lo", "xnack_mask_hi", "tba_lo", "tba_hi", "tma_lo",
                       "tma_hi", "src_scc", "src_vccz", "src_execz", "lds_direct", "src_pops_exiting_wave_id",
                       "src_shared_base_lo", "src_shared_limit_lo", "src_private_base_lo", "src_private_limit_lo",
                       "src_shared_base_hi", "src_shared_limit_hi", "src_private_base_hi", "src_private_limit_hi",
                       "sgpr_null64_lo", "src_flat_scratch_base_lo", "src_flat_scratch_base_hi"})
# 64-bit special registers: their two 32-bit halves.
SPECIAL64 = {"vcc": ("vcc_lo", "vcc_hi"), "exec": ("exec_lo", "exec_hi"), "flat_scr": ("flat_scr_lo", "flat_scr_hi"),
             "xnack_mask": ("xnack_mask_lo", "xnack_mask_hi"), "tba": ("tba_lo", "tba_hi"), "tma": ("tma_lo", "tma_hi"),
             "src_shared_base": ("src_shared_base_lo", "src_shared_base_hi"),
             "src_shared_limit": ("src_shared_limit_lo", "src_shared_limit_hi"),
             "src_private_base": ("src_private_base_lo", "src_private_base_hi"),
             "src_private_limit": ("src_private_limit_lo", "src_private_limit_hi")}
# 128-bit placeholders LLVM uses before frame lowering.
SPECIAL128 = frozenset({"private_rsrc_reg", "scratch_rsrc_reg"})
# Registers whose implicit reads are part of how every instruction runs, not one of its values
# (SIInstrInfo: $exec masks lanes, $mode rounds); a rematerialised definition may read them.
AMBIENT = frozenset({"exec", "exec_lo", "exec_hi", "mode"})

# Registers SIRegisterInfo::getReservedRegs reserves in every function, and those in no
# allocatable class (SCC, the placeholders): never the home of a virtual register.
RESERVED = ("mode", "exec", "flat_scr", "m0", "src_vccz", "src_execz", "src_scc", "src_shared_base",
            "src_shared_limit", "src_private_base", "src_private_limit", "src_pops_exiting_wave_id", "xnack_mask",
            "lds_direct", "tba", "tma", "sgpr_null", "scc", "pc_reg", "fp_reg", "sp_reg",
            "private_rsrc_reg", "src_flat_scratch_base", "asynccnt", "tensorcnt")

_NUM = re.compile(r"(vgpr|sgpr|agpr|ttmp)([0-9]+)(?:_(lo16|hi16))?$")


class RegError(Exception):
    pass


def units(name: str) -> list[str]:
    """The 16-bit units of a physical register (name without `$`), in memory order."""
    return list(_units(name))


@functools.lru_cache(maxsize=None)
def _units(name: str) -> tuple[str, ...]:
    if name in SPECIAL64:
        lo, hi = SPECIAL64[name]
        return (f"{lo}.0", f"{lo}.1", f"{hi}.0", f"{hi}.1")
    if name in SPECIAL32:
        return (f"{name}.0", f"{name}.1")
    if name in SPECIAL128:
        return tuple(f"{name}.{k}" for k in range(8))
    if name.endswith(("_lo16", "_hi16")) and name[:-5] in SPECIAL32:
        return (f"{name[:-5]}.{0 if name.endswith('_lo16') else 1}",)
    out: list[str] = []
    for piece in _pieces(name):
        m = _NUM.match(piece)
        assert m is not None
        base = f"{m.group(1)}{int(m.group(2))}"
        out += [f"{base}.0"] if m.group(3) == "lo16" else [f"{base}.1"] if m.group(3) == "hi16" \
            else [f"{base}.0", f"{base}.1"]
    return tuple(out)


def _pieces(name: str) -> list[str]:
    parts = re.findall(r"(?:vgpr|sgpr|agpr|ttmp)[0-9]+(?:_lo16|_hi16)?", name)
    if not parts or "_".join(parts) != name:
        raise RegError(f"unknown register `${name}`")
    return parts


def file_and_range(name: str) -> tuple[str, int, int] | None:
    """(file letter, first 32-bit index, width in 32-bit registers) of a numbered register, None
    for a special one. Tuples must be consecutive registers of one file."""
    if name in SPECIAL64 or name in SPECIAL32 or name in SPECIAL128 or name[:-5] in SPECIAL32:
        return None
    parts = [_NUM.match(p) for p in _pieces(name)]
    files = {m.group(1) for m in parts if m}
    nums = [int(m.group(2)) for m in parts if m]
    if len(files) != 1 or nums != list(range(nums[0], nums[0] + len(nums))):
        raise RegError(f"`${name}` is not consecutive registers of one file")
    if len(parts) > 1 and any(m and m.group(3) for m in parts):
        raise RegError(f"`${name}`: a tuple of 16-bit halves")
    return FILES[files.pop()], nums[0], len(nums)


def subreg_slots(index: str) -> list[int]:
    """The 16-bit slots a subregister index selects: `sub1` -> [2, 3], `sub0_sub1` -> 0..3,
    `lo16` -> [0], `hi16` -> [1], `sub2_hi16` -> [5]."""
    if index == "lo16":
        return [0]
    if index == "hi16":
        return [1]
    m = re.fullmatch(r"sub([0-9]+)_(lo16|hi16)", index)
    if m:
        return [2 * int(m.group(1)) + (0 if m.group(2) == "lo16" else 1)]
    nums = re.findall(r"sub([0-9]+)", index)
    if not nums or "_".join(f"sub{n}" for n in nums) != index:
        raise RegError(f"unknown subregister index `{index}`")
    out: list[int] = []
    for n in nums:
        out += [2 * int(n), 2 * int(n) + 1]
    return out


def class_info(cls: str) -> tuple[frozenset[str], int, bool]:
    """(files a member may be in, width in 16-bit units, tuples start even) of a class name,
    read from its leading defined class (`vreg_64_align2_with_sub0` -> vreg_64_align2)."""
    m = re.match(r"(vgpr|vreg|agpr|areg|av|sgpr|sreg|ccr_sgpr|gfx_ccr_sgpr)_([0-9]+)(_align2)?", cls)
    if not m:
        raise RegError(f"unknown register class `{cls}`")
    files = {"vgpr": "v", "vreg": "v", "agpr": "a", "areg": "a", "av": "va", "sgpr": "s", "sreg": "s",
             "ccr_sgpr": "s", "gfx_ccr_sgpr": "s"}[m.group(1)]
    bits = int(m.group(2))
    if bits == 1:
        raise RegError(f"`{cls}` is lowered before register allocation")
    return frozenset(files), max(bits // 16, 1), bool(m.group(3))


# gfx90a, gfx94x and gfx950 (FeatureGFX90AInsts): VGPR/AGPR tuples start at an even register
# (GCNSubtarget::needsAlignedVGPRs). AGPRs exist where MAI instructions do.
_ALIGNED = re.compile(r"gfx9(0a|4[0-9]|5[0-9])$")
_AGPRS = re.compile(r"gfx9(08|0a|4[0-9]|5[0-9])$")


@functools.lru_cache(maxsize=1)
def _reserved_units() -> tuple[tuple[str, frozenset[str]], ...]:
    out = []
    for r in RESERVED:
        try:
            out.append((r, frozenset(units(r))))
        except RegError:
            continue  # a name this reader does not know cannot be an operand either
    return tuple(out)


def reserved_problem(name: str, function_reserved: dict[str, str], target: str) -> str | None:
    """Why `name` may not be the home of a virtual register, or None: it overlaps a register
    LLVM always reserves, or one the function's machineFunctionInfo reserves
    (`vgprForAGPRCopy` only on targets with AGPRs and without gfx90a instructions: gfx908)."""
    mine = set(units(name))
    fr = file_and_range(name)
    if fr is not None and fr[0] == "t":
        return f"`${name}` is a trap-handler register, reserved on every function"
    for r, theirs in _reserved_units():
        if mine & theirs:
            return f"`${name}` overlaps ${r}, reserved on every function"
    for r, key in sorted(function_reserved.items()):
        if key == "vgprForAGPRCopy" and target != "gfx908":
            continue
        try:
            theirs = frozenset(units(r))
        except RegError:
            continue
        if mine & theirs:
            return f"`${name}` overlaps ${r}, which the function reserves ({key})"
    return None


def has_agprs(target: str) -> bool:
    return bool(_AGPRS.match(target))


def register_problem(name: str, target: str, aligned: bool = True) -> str | None:
    """Why a physical register of the allocated program is not one the target has, or None."""
    try:
        units(name)
        fr = file_and_range(name)
    except RegError as e:
        return str(e)
    if fr is None:
        return None
    f, first, width = fr
    if f in "va" and first + width > 256:
        return f"`${name}` lies outside the {f.upper()}GPR file (256 registers)"
    if f == "a" and not _AGPRS.match(target):
        return f"`${name}`: {target} has no AGPRs"
    if f == "s" and first + width > 106:
        return f"`${name}` lies outside the SGPR file"
    if f == "s" and width > 1 and first % (2 if width == 2 else 4):
        return f"`${name}` is not an aligned SGPR tuple"
    if aligned and f in "va" and width > 1 and _ALIGNED.match(target) and first % 2:
        return f"`${name}` is an odd-aligned vector tuple, which {target} does not allow"
    return None


def member_problem(name: str, cls: str, slots: int) -> str | None:
    """Why the physical register `name`, home of a virtual register of class `cls`, is not of
    the class's file, width or alignment (`slots` 16-bit units are asked for), or None."""
    files, width, even = class_info(cls)
    fr = file_and_range(name)
    n = len(units(name))
    if n != slots:
        return f"`${name}` has {n * 16} bits where {slots * 16} are needed"
    if fr is None:
        if "s" in files and name.split("_lo16")[0].split("_hi16")[0] in ("vcc", "vcc_lo", "vcc_hi", "exec", "exec_lo",
                                                                         "exec_hi", "m0", "sgpr_null"):
            return None
        return f"`${name}` is not in class `{cls}`"
    if fr[0] not in files:
        return f"`${name}` is not in the register file of class `{cls}`"
    if even and fr[2] > 1 and fr[1] % 2:
        return f"`${name}` is not even-aligned as class `{cls}` needs"
    return None


# Register masks of calls (llvm/lib/Target/AMDGPU/AMDGPUCallingConv.td, CSR_AMDGPU_*, and
# SIRegisterInfo::getCallPreservedMask): the 32-bit registers a call preserves. VGPRs: stripes
# of eight from v40, every other one, to v255. SGPRs: s30-s105 up to LLVM 20, only s30-s39,
# s48-s55, s64-s71, s80-s87, s96-s105 from LLVM 21 (`striped`). The `amdgpu_gfx` masks keep
# s4-s31 and s64-s105; LLVM 13-14's `highregs` s32-s105; the `_gfx90ainsts` / `_with_agprs`
# variants also a32-a255. $exec and $mode are preserved by the calling convention.
_VGPR_STRIPES = tuple(range(start, start + 8) for start in range(40, 256, 16))
_SGPRS = {"old": (range(30, 106),), "striped": ((range(30, 40), range(48, 56), range(64, 72), range(80, 88),
                                                 range(96, 106))),
          "gfx": (range(4, 32), range(64, 106)), "highregs": (range(32, 106),)}


def _regs(prefix: str, ranges: tuple[range, ...]) -> set[str]:
    return {f"{prefix}{i}" for r in ranges for i in r}


def preserved_by(mask: str, striped: bool) -> frozenset[str] | None:
    """The 32-bit registers a call through `mask` (as MIR prints it) preserves, or None for a
    mask not known here."""
    key = mask.lower()
    if key.startswith("customregmask(") and key.endswith(")"):
        names = [x.strip().lstrip("$") for x in key[len("customregmask("):-1].split(",") if x.strip()]
        keep = {n for n in names if _NUM.match(n) and not _NUM.match(n).group(3)}  # type: ignore[union-attr]
        return frozenset(keep | {"exec_lo", "exec_hi", "mode"}) if keep else frozenset()
    agprs = key.endswith(("_gfx90ainsts", "_with_agprs"))
    base = key.removesuffix("_gfx90ainsts").removesuffix("_with_agprs")
    if base == "csr_amdgpu_highregs":
        keep = _regs("vgpr", _VGPR_STRIPES) | _regs("sgpr", _SGPRS["highregs"])
    elif base == "csr_amdgpu":
        keep = _regs("vgpr", _VGPR_STRIPES) | _regs("sgpr", _SGPRS["striped" if striped else "old"])
    elif base == "csr_amdgpu_si_gfx":
        keep = _regs("vgpr", _VGPR_STRIPES) | _regs("sgpr", _SGPRS["gfx"])
    elif base == "csr_amdgpu_cs_chainpreserve" and not agprs:
        keep = _regs("vgpr", (range(8, 256),))
    elif base == "csr_amdgpu_noregs" and not agprs:
        return frozenset()
    else:
        return None
    if agprs:
        keep |= _regs("agpr", (range(32, 256),))
    return frozenset(keep | {"exec_lo", "exec_hi", "mode"})


def clobbered_by(preserved: frozenset[str], target: str) -> list[str]:
    """The 32-bit registers (and VCC, M0, SCC) of the target a call clobbers."""
    names = [f"sgpr{i}" for i in range(106)] + [f"vgpr{i}" for i in range(256)]
    if has_agprs(target):
        names += [f"agpr{i}" for i in range(256)]
    names += ["vcc_lo", "vcc_hi", "m0", "scc"]
    return [n for n in names if n not in preserved]


# The callee-saved list of a function's own calling convention (SIRegisterInfo::
# getCalleeSavedRegs): that of the call mask its callers use. C, fast and cold functions keep
# `csr_amdgpu`'s registers, `amdgpu_gfx` ones `csr_amdgpu_si_gfx`'s, chain-preserve functions
# VGPRs only; kernels, shaders and chain functions none. Another convention is not modelled.
_OWN_MASK = {"ccc": "csr_amdgpu", "fastcc": "csr_amdgpu", "coldcc": "csr_amdgpu", "amdgpu_gfx": "csr_amdgpu_si_gfx",
             "amdgpu_cs_chain_preserve": "csr_amdgpu_cs_chainpreserve"}
_NO_CSR = ("amdgpu_kernel", "amdgpu_ps", "amdgpu_vs", "amdgpu_gs", "amdgpu_hs", "amdgpu_ls", "amdgpu_es", "amdgpu_cs",
           "amdgpu_cs_chain")


def callee_saved_sgprs(cc: str, striped: bool) -> list[str] | None:
    """The SGPRs a function of calling convention `cc` must hand back as it got them (None: a
    convention not modelled)."""
    if cc in _NO_CSR:
        return []
    mask = _OWN_MASK.get(cc)
    kept = preserved_by(mask, striped) if mask else None
    return None if kept is None else sorted((r for r in kept if r.startswith("sgpr")), key=lambda r: int(r[4:]))
