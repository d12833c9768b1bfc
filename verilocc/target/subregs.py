"""AMDGPU subregister indices, their LLVM lane masks and their 16-bit slot ranges.

Two coordinate systems describe the parts of a register:

* **Slots** (verilocc's own): the 16-bit halves of a register in memory order. Slot ``2k`` is
  the low half of the k-th 32-bit register of a tuple, slot ``2k + 1`` its high half.
  `PhysReg.units` lists one unit per slot, in slot order.
* **LLVM lane masks** (``LaneBitmask``, printed in block live-ins as
  ``$vgpr0_vgpr1:0x000000000000000C``): two bits per 32-bit register, but inside each pair
  TableGen gives the *lower* bit to ``hi16`` and the upper bit to ``lo16``, because it numbers
  lanes in alphabetical order of the leaf indices (``hi16`` < ``lo16``,
  ``sub1_hi16`` < ``sub1_lo16``). So ``sub0 = 0x3``, ``sub1 = 0xC``, ``hi16 = 0x1``,
  ``lo16 = 0x2``, ``sub31 = 0xC000000000000000``.
  Checked with llc-19 and llc-22: a ``vreg_64`` with only ``hi16`` and ``sub1_lo16`` live into
  a block gives ``$vgpr5_vgpr6:0x9``; only ``lo16`` and ``sub1_hi16`` gives ``0x6``; ``sub31``
  and ``sub17`` of a ``vreg_1024`` give ``0xC000000C00000000`` (tests/test_target.py repeats
  these checks when llc is installed). Corpus live-ins agree: ``sub1_sub2`` = ``0x3C``.

So lane bit ``b`` is slot ``b ^ 1`` and slot ``s`` is lane bit ``s ^ 1``.

The set of indices is the same in LLVM 19 and 22 (SIRegisterInfo.td, "Subregister
declarations"; enumerated with llc-19/llc-22 by parsing ``%0.<idx>``, 283 indices):
``lo16``, ``hi16``, ``sub0``..``sub31``, ``subK_lo16``/``subK_hi16`` for K in 1..31 (for K = 0
the names are plain ``lo16``/``hi16``), and runs ``subA_..._subB`` of 2, 3, 4, 5, 6, 8 or 16
consecutive 32-bit registers starting anywhere they fit in 32 (``foreach Size = {2...6,8,16}``).
TableGen adds one more family for the tuple widths that have no named run (7, 9, 10, 11 and
12 registers, the VReg_224/288/320/352/384 sub-tuples of wider tuples): their names join the
16-bit leaves, e.g. ``sub3_lo16_sub3_hi16_sub4_lo16_..._sub9_hi16`` (7 registers from sub3).
llc-19 and llc-22 accept exactly these at every offset where they fit (116 more, 399 in all).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from verilocc.errors import TargetError

#: Widths (in 32-bit registers) of the multi-register indices ``subA_..._subB``
#: (SIRegisterInfo.td: ``foreach Size = {2...6,8,16}``); checked against llc-19 and llc-22.
RUN_INDEX_WIDTHS: frozenset[int] = frozenset({2, 3, 4, 5, 6, 8, 16})

#: Widths (in 32-bit registers) of TableGen's synthesized leaf-joined indices (checked with
#: llc-19/llc-22 for every width 1..32 and offset).
LEAF_RUN_WIDTHS: frozenset[int] = frozenset({7, 9, 10, 11, 12})

#: Number of 32-bit subregisters the widest tuple has (``sub0``..``sub31``).
MAX_SUBREGS = 32

#: ``LaneBitmask::getAll()``: LLVM's "every lane" mask.
ALL_LANES = (1 << 64) - 1

_SUB = re.compile(r"sub(0|[1-9][0-9]?)")
_HALF = re.compile(r"(?:sub([1-9][0-9]?)_)?(lo16|hi16)")
_LEAF_RUN = re.compile(r"(?:sub[1-9][0-9]?_)?(?:lo16|hi16)(?:_(?:sub[1-9][0-9]?_)?(?:lo16|hi16))+")


def _check_tables() -> None:
    # Facts are data; make sure they are self-consistent when the module loads.
    assert all(2 <= w <= MAX_SUBREGS for w in RUN_INDEX_WIDTHS)
    assert not RUN_INDEX_WIDTHS & LEAF_RUN_WIDTHS
    assert slot_to_lane_bit(0) == 1 and slot_to_lane_bit(1) == 0


def slot_to_lane_bit(slot: int) -> int:
    """The LLVM lane-mask bit of 16-bit slot ``slot`` (hi16 takes the even bit)."""
    return slot ^ 1


def lane_bit_to_slot(bit: int) -> int:
    """The 16-bit slot that LLVM lane-mask bit ``bit`` denotes."""
    return bit ^ 1


@functools.lru_cache(maxsize=None)
def subreg_range(idx: str) -> tuple[int, int]:
    """``(first slot, number of slots)`` that subregister index ``idx`` covers.

    ``sub1`` -> ``(2, 2)``, ``hi16`` -> ``(1, 1)``, ``sub2_sub3`` -> ``(4, 4)``,
    ``sub3_hi16`` -> ``(7, 1)``. Raises `TargetError` for an index LLVM does not define.
    """
    m = _HALF.fullmatch(idx)
    if m:
        dword = int(m.group(1)) if m.group(1) else 0
        if dword >= MAX_SUBREGS:
            raise TargetError(f"unknown subregister index '{idx}'")
        return (2 * dword + (0 if m.group(2) == "lo16" else 1), 1)
    if _LEAF_RUN.fullmatch(idx):
        return _leaf_run_range(idx)
    parts = idx.split("_")
    firsts: list[int] = []
    for part in parts:
        sm = _SUB.fullmatch(part)
        if not sm:
            raise TargetError(f"unknown subregister index '{idx}'")
        firsts.append(int(sm.group(1)))
    start, width = firsts[0], len(firsts)
    if firsts != list(range(start, start + width)) or start + width > MAX_SUBREGS:
        raise TargetError(f"unknown subregister index '{idx}'")
    if width > 1 and width not in RUN_INDEX_WIDTHS:
        raise TargetError(f"unknown subregister index '{idx}' (LLVM has no {width}-register index)")
    return (2 * start, 2 * width)


def _leaf_run_range(idx: str) -> tuple[int, int]:
    """Range of a leaf-joined synthesized index such as ``lo16_hi16_sub1_lo16_..._sub6_hi16``."""
    slots = [
        2 * (int(m.group(1)) if m.group(1) else 0) + (0 if m.group(2) == "lo16" else 1)
        for m in _HALF.finditer(idx)
    ]
    first, count = slots[0], len(slots)
    if (
        slots != list(range(first, first + count))
        or first % 2
        or count % 2
        or count // 2 not in LEAF_RUN_WIDTHS
        or first + count > 2 * MAX_SUBREGS
        or _leaf_name(first, count) != idx
    ):
        raise TargetError(f"unknown subregister index '{idx}'")
    return (first, count)


def _leaf_name(first: int, count: int) -> str:
    def leaf(slot: int) -> str:
        dword, half = divmod(slot, 2)
        suffix = "hi16" if half else "lo16"
        return suffix if dword == 0 else f"sub{dword}_{suffix}"

    return "_".join(leaf(s) for s in range(first, first + count))


def is_subreg_index(idx: str) -> bool:
    """Whether LLVM defines the AMDGPU subregister index ``idx``."""
    try:
        subreg_range(idx)
    except TargetError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def subreg_mask(idx: str) -> int:
    """The LLVM ``LaneBitmask`` of subregister index ``idx`` (``sub1`` -> ``0xC``, ``lo16`` -> ``0x2``)."""
    first, count = subreg_range(idx)
    return slots_to_mask(range(first, first + count))


def slots_to_mask(slots: Iterable[int]) -> int:
    """The LLVM lane mask selecting the given 16-bit slots."""
    mask = 0
    for slot in slots:
        if slot < 0 or slot >= 2 * MAX_SUBREGS:
            raise TargetError(f"16-bit slot {slot} is outside any AMDGPU register")
        mask |= 1 << slot_to_lane_bit(slot)
    return mask


@functools.lru_cache(maxsize=4096)
@functools.lru_cache(maxsize=4096)
def mask_to_slots(mask: int) -> tuple[int, ...]:
    """The 16-bit slots (ascending) that LLVM lane mask ``mask`` selects."""
    if mask < 0 or mask > ALL_LANES:
        raise TargetError(f"lane mask {mask:#x} is not a 64-bit LaneBitmask")
    return tuple(sorted(lane_bit_to_slot(b) for b in range(64) if mask >> b & 1))


@functools.lru_cache(maxsize=None)
def index_for_range(first: int, count: int) -> str:
    """The subregister index covering exactly ``count`` slots from slot ``first``.

    Inverse of `subreg_range`. Raises `TargetError` when LLVM has no such index (for example
    an odd-aligned 32-bit run, or a run of 7 registers).
    """
    if count == 1:
        dword, half = divmod(first, 2)
        suffix = "hi16" if half else "lo16"
        name = suffix if dword == 0 else f"sub{dword}_{suffix}"
    elif count % 2 == 0 and first % 2 == 0 and count // 2 in LEAF_RUN_WIDTHS:
        name = _leaf_name(first, count)
    elif count % 2 == 0 and first % 2 == 0:
        start = first // 2
        name = "_".join(f"sub{i}" for i in range(start, start + count // 2))
    else:
        raise TargetError(f"no subregister index covers 16-bit slots {first}..{first + count - 1}")
    if subreg_range(name) != (first, count):  # raises for widths LLVM lacks
        raise TargetError(f"no subregister index covers 16-bit slots {first}..{first + count - 1}")
    return name


@functools.lru_cache(maxsize=None)
def compose(outer: str, inner: str) -> str:
    """Index of ``inner`` taken inside ``outer``: ``compose("sub2_sub3", "sub1") == "sub3"``.

    Mirrors ``TargetRegisterInfo::composeSubRegIndices``; raises `TargetError` when ``inner``
    does not fit inside ``outer`` or the result has no name in LLVM.
    """
    o_first, o_count = subreg_range(outer)
    i_first, i_count = subreg_range(inner)
    if i_first + i_count > o_count:
        raise TargetError(f"subregister index '{inner}' does not fit inside '{outer}'")
    return index_for_range(o_first + i_first, i_count)


def all_subreg_indices() -> tuple[str, ...]:
    """Every AMDGPU subregister index LLVM 19/22 define (399 names)."""
    names = ["lo16", "hi16"]
    for k in range(MAX_SUBREGS):
        names.append(f"sub{k}")
        if k:
            names += [f"sub{k}_lo16", f"sub{k}_hi16"]
    for width in sorted(RUN_INDEX_WIDTHS):
        for start in range(MAX_SUBREGS - width + 1):
            names.append("_".join(f"sub{i}" for i in range(start, start + width)))
    for width in sorted(LEAF_RUN_WIDTHS):
        for start in range(MAX_SUBREGS - width + 1):
            names.append(_leaf_name(2 * start, 2 * width))
    return tuple(names)


_check_tables()
assert len(all_subreg_indices()) == 399, "index table no longer matches llc-19/llc-22"
