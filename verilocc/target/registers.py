"""AMDGPU physical registers as LLVM names them in MIR, and the 16-bit units they occupy.

A register is identified by its llc spelling without ``$`` (lower case, the TableGen def name):
``sgpr4``, ``vgpr4_vgpr5``, ``agpr0_agpr1_agpr2_agpr3``, ``vgpr3_hi16``, ``vcc``, ``vcc_lo``,
``exec``, ``m0``, ``scc``, ``sgpr_null``, ``mode``, ``ttmp0_ttmp1``, ...

**Units.** Every register covers a tuple of 16-bit *units*, one per 16-bit slot in memory order
(see `verilocc.target.subregs` for slots versus LLVM lane masks). Unit ids are opaque, globally
unique integers: two registers alias iff their unit sets intersect. A tuple's units are the
concatenation of its 32-bit members' units; a 32-bit register's units are ``(lo16, hi16)``;
``vcc`` is ``vcc_lo + vcc_hi``. Registers without subregisters that are not storage for the
allocator (``scc``, ``mode``, the ISel placeholders ``fp_reg``/``sp_reg``/``private_rsrc_reg``)
get units of their own, two per 32 bits of their size, so they alias nothing else.

Facts come from llvm/lib/Target/AMDGPU/SIRegisterInfo.td (LLVM main) and were
checked by parsing names with llc-19 and llc-22 (``S_NOP 0, implicit $<name>``).
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from typing import Final

from verilocc.errors import TargetError
import verilocc.target.subregs as subregs


class RegFile(enum.Enum):
    """Which register file a register lives in."""

    SGPR = "sgpr"
    VGPR = "vgpr"
    AGPR = "agpr"
    SPECIAL = "special"


# --------------------------------------------------------------------------------------------
# Numbered register groups: prefix -> (file, number of 32-bit registers, first unit id).
# SIRegisterInfo.td: SGPR0..105 ("foreach Index = 0...105"); VGPR0..1023 in LLVM 22 (LLVM 19:
# VGPR0..255; llc-19 rejects $vgpr256, llc-22 accepts $vgpr1023); AGPR0..255; TTMP0..15.
# TTMPs are trap-handler SGPRs outside the SGPR file: file SPECIAL, index -1.
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Group:
    prefix: str
    file: RegFile
    count: int
    unit_base: int


_GROUPS: Final[dict[str, _Group]] = {
    "sgpr": _Group("sgpr", RegFile.SGPR, 106, 0),
    "vgpr": _Group("vgpr", RegFile.VGPR, 1024, 1000),
    "agpr": _Group("agpr", RegFile.AGPR, 256, 4000),
    "ttmp": _Group("ttmp", RegFile.SPECIAL, 16, 4600),
}

#: Highest VGPR that LLVM 19 defines (SIRegisterInfo.td of release/19: VGPR0..255).
LLVM19_VGPR_COUNT: Final = 256

#: Tuple widths (32-bit registers) LLVM defines for SGPR/VGPR/AGPR tuples
#: (SIRegisterInfo.td: SGPR_64Regs..SGPR_1024Regs, VGPR_64..VGPR_1024, AGPR_64..AGPR_1024);
#: llc rejects a 13-wide tuple.
TUPLE_WIDTHS: Final[frozenset[int]] = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 32})

#: TTMP tuple widths (TTMP_64Regs..TTMP_512Regs: no 1024-bit TTMP tuple).
TTMP_TUPLE_WIDTHS: Final[frozenset[int]] = TUPLE_WIDTHS - {32}

# --------------------------------------------------------------------------------------------
# Special registers (SIRegisterInfo.td, "Special Registers" .. "FLAT_SCR").
# --------------------------------------------------------------------------------------------
#: 32-bit specials defined with ``SIRegLoHi16``: each has ``<name>_lo16`` and ``<name>_hi16``.
_SPECIAL_32: Final[tuple[str, ...]] = (
    "vcc_lo", "vcc_hi", "exec_lo", "exec_hi", "m0",
    "sgpr_null", "sgpr_null_hi",
    "src_vccz", "src_execz", "src_scc",
    "src_shared_base_lo", "src_shared_limit_lo", "src_private_base_lo", "src_private_limit_lo",
    "src_pops_exiting_wave_id",
    "src_flat_scratch_base_lo", "src_flat_scratch_base_hi",  # LLVM 22 only (gfx1250)
    "xnack_mask_lo", "xnack_mask_hi",
    "tba_lo", "tba_hi", "tma_lo", "tma_hi",
    "flat_scr_lo", "flat_scr_hi",
)  # fmt: skip

#: 64-bit specials whose ``sub0``/``sub1`` are the two named 32-bit registers.
_SPECIAL_64: Final[dict[str, tuple[str, str]]] = {
    "vcc": ("vcc_lo", "vcc_hi"),
    "exec": ("exec_lo", "exec_hi"),
    "sgpr_null64": ("sgpr_null", "sgpr_null_hi"),
    "xnack_mask": ("xnack_mask_lo", "xnack_mask_hi"),
    "tba": ("tba_lo", "tba_hi"),
    "tma": ("tma_lo", "tma_hi"),
    "flat_scr": ("flat_scr_lo", "flat_scr_hi"),
    "src_flat_scratch_base": ("src_flat_scratch_base_lo", "src_flat_scratch_base_hi"),  # LLVM 22
}

#: 64-bit aperture registers: only ``sub0`` is a register (``ApertureRegister``,
#: ``CoveredBySubRegs = 0``); the high half gets units of its own.
_APERTURES: Final[dict[str, str]] = {
    "src_shared_base": "src_shared_base_lo",
    "src_shared_limit": "src_shared_limit_lo",
    "src_private_base": "src_private_base_lo",
    "src_private_limit": "src_private_limit_lo",
}

#: Registers without subregisters, with their size in 32-bit registers. scc is 1 bit, mode
#: and lds_direct are not addressable; fp_reg/sp_reg/private_rsrc_reg/pc_reg are ISel
#: placeholders (Pseudo_SReg_32/Pseudo_SReg_128); sgpr_null128/256, asynccnt and tensorcnt
#: exist only in LLVM 22.
_ATOMIC: Final[dict[str, int]] = {
    "scc": 1, "mode": 1, "lds_direct": 1, "pc_reg": 1, "fp_reg": 1, "sp_reg": 1,
    "private_rsrc_reg": 4, "sgpr_null128": 4, "sgpr_null256": 8,
    "asynccnt": 1, "tensorcnt": 1,
}  # fmt: skip

#: Names only LLVM 22 defines (llc-19 rejects them).
LLVM22_ONLY: Final[frozenset[str]] = frozenset(
    {
        "src_flat_scratch_base", "src_flat_scratch_base_lo", "src_flat_scratch_base_hi",
        "src_flat_scratch_base_lo_lo16", "src_flat_scratch_base_lo_hi16",
        "src_flat_scratch_base_hi_lo16", "src_flat_scratch_base_hi_hi16",
        "sgpr_null128", "sgpr_null256", "asynccnt", "tensorcnt",
    }
)  # fmt: skip

#: MC-layer encodings of the same registers (``m0_gfx11plus``, ``ttmp0_vi``, ``flat_scr_ci``):
#: LLVM defines them but they never appear in MIR, so verilocc rejects them.
_MC_ONLY = re.compile(r".*_(?:gfx11plus|gfxpre11|gfx9plus|gfx9_gfx10|vi|ci)(?:_lo16|_hi16)?")

_SPECIAL_UNIT_BASE: Final = 5000


def _build_special_units() -> dict[str, tuple[int, ...]]:
    """Unit tuples of every special register, allocated in table order."""
    table: dict[str, tuple[int, ...]] = {}
    next_unit = _SPECIAL_UNIT_BASE

    def fresh(n: int) -> tuple[int, ...]:
        nonlocal next_unit
        units = tuple(range(next_unit, next_unit + n))
        next_unit += n
        return units

    for name in _SPECIAL_32:
        lo, hi = fresh(2)
        table[name] = (lo, hi)
        table[f"{name}_lo16"] = (lo,)
        table[f"{name}_hi16"] = (hi,)
    for name, (sub0, sub1) in _SPECIAL_64.items():
        table[name] = table[sub0] + table[sub1]
    for name, sub0 in _APERTURES.items():
        table[name] = table[sub0] + fresh(2)
    for name, dwords in _ATOMIC.items():
        table[name] = fresh(2 * dwords)
    return table


_SPECIAL_UNITS: Final[dict[str, tuple[int, ...]]] = _build_special_units()
_SPECIAL_BY_UNITS: Final[dict[tuple[int, ...], str]] = {u: n for n, u in _SPECIAL_UNITS.items()}


def _check_tables() -> None:
    assert len(_SPECIAL_BY_UNITS) == len(_SPECIAL_UNITS), "two specials share units"
    ends = sorted((g.unit_base, g.unit_base + 2 * g.count) for g in _GROUPS.values())
    ends.append((_SPECIAL_UNIT_BASE, _SPECIAL_UNIT_BASE + 1))
    for (_, end), (start, _) in zip(ends, ends[1:]):
        assert end <= start, "register groups overlap in unit space"


_check_tables()


# --------------------------------------------------------------------------------------------
# PhysReg
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PhysReg:
    """One physical register. Equality and hashing go by ``name`` (the name determines the rest).

    ``index`` is the first 32-bit register number within the SGPR/VGPR/AGPR file, -1 for
    special registers (TTMPs included). ``units`` are the 16-bit units in slot order.
    """

    name: str
    file: RegFile
    index: int
    units: tuple[int, ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PhysReg) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return f"${self.name}"

    @property
    def width16(self) -> int:
        """Width in 16-bit units (1 for ``vgpr3_hi16``, 2 for ``vgpr3``, 4 for a pair)."""
        return len(self.units)

    @property
    def width32(self) -> int:
        """Number of 32-bit registers covered: ``len(units) // 2``, so 0 for a 16-bit half."""
        return len(self.units) // 2

    @property
    def is_half(self) -> bool:
        """A 16-bit register (``vgpr3_lo16``, ``m0_hi16``)."""
        return len(self.units) == 1

    @property
    def is_atomic(self) -> bool:
        """A register without subregisters (16-bit halves, ``scc``, ``mode``, placeholders)."""
        return len(self.units) == 1 or self.name in _ATOMIC

    @property
    def full_mask(self) -> int:
        """The LLVM lane mask covering the whole register (``0xF`` for a 64-bit pair)."""
        return subregs.slots_to_mask(range(len(self.units)))

    @functools.cached_property
    def unit_set(self) -> frozenset[int]:
        return frozenset(self.units)

    def lanes(self, mask: int) -> tuple[int, ...]:
        """Units selected by the LLVM ``LaneBitmask`` ``mask`` relative to this register.

        ``parse_physreg("vgpr0_vgpr1").lanes(0xC)`` is the units of ``vgpr1``; ``0x1`` is the
        high half of ``vgpr0`` (see `verilocc.target.subregs` for the bit order). A register
        without subregisters is all-or-nothing. Raises `TargetError` for bits beyond the register.
        """
        if mask == 0:
            return ()
        if mask == subregs.ALL_LANES or self.is_atomic:
            return self.units
        slots = subregs.mask_to_slots(mask)
        if slots[-1] >= len(self.units):
            raise TargetError(f"lane mask {mask:#018x} selects lanes outside ${self.name}")
        return tuple(self.units[s] for s in slots)

    def subreg(self, idx: str) -> PhysReg:
        """The register that subregister index ``idx`` names inside this one.

        ``vgpr4_vgpr5 .sub1 -> vgpr5``, ``vcc .sub0 -> vcc_lo``, ``vgpr0 .hi16 -> vgpr0_hi16``.
        Purely positional: ``sub1_sub2`` of an SGPR quad gives ``sgpr5_sgpr6``, which LLVM does
        not define (`is_defined` says so). Raises `TargetError` when the index does not fit or
        no register covers those units.
        """
        first, count = subregs.subreg_range(idx)
        if self.is_atomic or first + count > len(self.units):
            raise TargetError(f"${self.name} has no subregister '{idx}'")
        sub = register_for_units(self.units[first : first + count])
        if sub is None:
            raise TargetError(f"${self.name} has no subregister '{idx}'")
        return sub

    def subreg_or_none(self, idx: str) -> PhysReg | None:
        """`subreg`, but ``None`` instead of an error when the index does not apply."""
        first, count = subregs.subreg_range(idx)
        if self.is_atomic or first + count > len(self.units):
            return None
        return register_for_units(self.units[first : first + count])


# --------------------------------------------------------------------------------------------
# Construction and parsing
# --------------------------------------------------------------------------------------------
def _group_name(group: _Group, start: int, width: int) -> str:
    return "_".join(f"{group.prefix}{i}" for i in range(start, start + width))


@functools.lru_cache(maxsize=None)
def _group_reg(prefix: str, start: int, width: int) -> PhysReg:
    """Tuple of ``width`` 32-bit registers of a group from ``start``."""
    group = _GROUPS[prefix]
    if start < 0 or width < 1 or start + width > group.count:
        raise TargetError(f"${group.prefix}{start}: register number out of range")
    base = group.unit_base + 2 * start
    index = start if group.file is not RegFile.SPECIAL else -1
    return PhysReg(_group_name(group, start, width), group.file, index, tuple(range(base, base + 2 * width)))


@functools.lru_cache(maxsize=None)
def _group_half(prefix: str, number: int, high: bool) -> PhysReg:
    group = _GROUPS[prefix]
    if number < 0 or number >= group.count:
        raise TargetError(f"${group.prefix}{number}: register number out of range")
    unit = group.unit_base + 2 * number + (1 if high else 0)
    index = number if group.file is not RegFile.SPECIAL else -1
    return PhysReg(f"{group.prefix}{number}_{'hi16' if high else 'lo16'}", group.file, index, (unit,))


def file_register(file: RegFile, start: int, width: int = 1) -> PhysReg:
    """The SGPR/VGPR/AGPR tuple of ``width`` 32-bit registers starting at ``start``."""
    if file is RegFile.SPECIAL:
        raise TargetError("special registers have no numbered tuples; use parse_physreg")
    return _group_reg(file.value, start, width)


def file_half(file: RegFile, number: int, high: bool) -> PhysReg:
    """The 16-bit half ``<file><number>_lo16`` / ``_hi16``."""
    if file is RegFile.SPECIAL:
        raise TargetError("special registers have no numbered halves; use parse_physreg")
    return _group_half(file.value, number, high)


def register_for_units(units: tuple[int, ...]) -> PhysReg | None:
    """The register covering exactly ``units`` (in slot order), or ``None``."""
    if not units:
        return None
    special = _SPECIAL_BY_UNITS.get(units)
    if special is not None:
        return parse_physreg(special)
    first = units[0]
    group = next((g for g in _GROUPS.values() if 0 <= first - g.unit_base < 2 * g.count), None)
    if group is None:
        return None
    offset = first - group.unit_base
    if units != tuple(range(first, first + len(units))):
        return None
    if len(units) == 1:
        return _group_half(group.prefix, offset // 2, bool(offset % 2))
    if offset % 2 or len(units) % 2 or offset // 2 + len(units) // 2 > group.count:
        return None
    return _group_reg(group.prefix, offset // 2, len(units) // 2)


_NUMBERED = re.compile(r"(sgpr|vgpr|agpr|ttmp)(0|[1-9][0-9]*)")
_HALF_NAME = re.compile(r"(sgpr|vgpr|agpr|ttmp)(0|[1-9][0-9]*)_(lo16|hi16)")


@functools.lru_cache(maxsize=None)
def parse_physreg(name: str) -> PhysReg:
    """Parse an llc register name, with or without ``$``.

    Syntactic for numbered tuples: any contiguous run of one file parses (``sgpr1_sgpr2``
    parses although LLVM does not define it; see `is_defined`). Raises `TargetError` for
    unknown names, non-contiguous or mixed tuples, numbers beyond the file and MC-only names.
    """
    text = name[1:] if name.startswith("$") else name
    if text in _SPECIAL_UNITS:
        return PhysReg(text, RegFile.SPECIAL, -1, _SPECIAL_UNITS[text])
    m = _HALF_NAME.fullmatch(text)
    if m:
        return _group_half(m.group(1), int(m.group(2)), m.group(3) == "hi16")
    parts = text.split("_")
    numbers: list[int] = []
    prefix: str | None = None
    for part in parts:
        pm = _NUMBERED.fullmatch(part)
        if pm is None or (prefix is not None and pm.group(1) != prefix):
            if _MC_ONLY.fullmatch(text):
                raise TargetError(f"unknown register '${text}' (an MC-layer encoding, not valid in MIR)")
            raise TargetError(f"unknown register '${text}'")
        prefix = pm.group(1)
        numbers.append(int(pm.group(2)))
    assert prefix is not None
    start = numbers[0]
    if numbers != list(range(start, start + len(numbers))):
        raise TargetError(f"register tuple '${text}' is not a contiguous run")
    try:
        return _group_reg(prefix, start, len(numbers))
    except TargetError:
        raise TargetError(f"unknown register '${text}': number out of range") from None


def is_defined(reg: PhysReg, llvm_major: int = 22) -> bool:
    """Whether LLVM (version ``llvm_major``, 19 or later) defines this register.

    SGPR tuples: pairs start even, 3 or more registers start at a multiple of 4
    (SIRegisterInfo.td: ``SIRegisterTuples<..., SGPR_32, 105, 2, 2>`` for pairs, stride 4
    for the rest; every SGPR tuple of every width and offset was checked against llc-19 and
    llc-22). VGPR/AGPR tuples exist at every offset. Widths: `TUPLE_WIDTHS`.
    LLVM 19 has VGPR0..255 only and lacks `LLVM22_ONLY`.
    """
    if reg.file is RegFile.SPECIAL and not reg.name.startswith("ttmp"):
        return not (llvm_major < 22 and reg.name in LLVM22_ONLY)
    if reg.is_half:
        return not (reg.file is RegFile.VGPR and llvm_major < 22 and reg.index >= LLVM19_VGPR_COUNT)
    width = reg.width32
    if reg.file is RegFile.SPECIAL:  # TTMP tuples follow the SGPR alignment rules ...
        start = int(reg.name.split("_")[0][4:])
        if width == 3 and llvm_major < 22:
            return start % 3 == 0  # ... except TTMP_96Regs, stride 3 in LLVM 19 (llc-19 accepts ttmp3_ttmp4_ttmp5)
        return width in TTMP_TUPLE_WIDTHS and _sgpr_aligned(start, width)
    if width not in TUPLE_WIDTHS:
        return False
    if reg.file is RegFile.SGPR:
        return _sgpr_aligned(reg.index, width)
    if reg.file is RegFile.VGPR and llvm_major < 22:
        return reg.index + width <= LLVM19_VGPR_COUNT
    return True


def _sgpr_aligned(start: int, width: int) -> bool:
    if width == 1:
        return True
    if width == 2:
        return start % 2 == 0
    return start % 4 == 0


def units_overlap(a: PhysReg, b: PhysReg) -> bool:
    """Whether the two registers share any 16-bit unit (LLVM: ``regsOverlap``)."""
    return not a.unit_set.isdisjoint(b.units)


def special_register_names() -> tuple[str, ...]:
    """Every special (non-numbered) register name verilocc knows, in table order."""
    return tuple(_SPECIAL_UNITS)
