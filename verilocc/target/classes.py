"""AMDGPU register classes as MIR names them in ``registers:`` (``vreg_64_align2``, ``sreg_32``...).

Two kinds of names exist:

* **Defined classes**, written in llvm/lib/Target/AMDGPU/SIRegisterInfo.td. `_BASE` lists the
  allocatable ones (the only ones llc accepts for a virtual register) plus ``vgpr_16_lo128``,
  which synthesized names refer to.
* **Synthesized classes**, which TableGen infers (CodeGenRegisters.cpp) and llc prints in
  lower case: ``A_with_IDX`` (members of A that have subregister IDX), ``A_with_IDX_in_B``
  (members of A whose IDX subregister is in B) and ``A_and_B`` (the intersection), nested
  freely, e.g. ``sreg_32_xexec_hi_and_sreg_32_xm0`` or
  ``av_96_with_sub1_sub2_in_av_64_align2``. `get_class` parses such a name, computes its
  members from that definition, and accepts it only when TableGen could have made it: every
  operand is a class, the member set is not empty and differs from each operand's (TableGen
  reuses an existing class instead of making an equal one). A chain ``A_with_i_in_B_with_j_in_C``
  can be read two ways; LLVM's reading nests to the right (``B_with_j_in_C`` is the operand),
  which llc confirms by allocating a register of such a class. The widths of the operands
  settle every other ambiguity.

LLVM 19 accepts 549 class names for virtual registers and LLVM 22 accepts 812 (1193 distinct).
For every one of them, on gfx908, the first allocatable member computed here is the register
llc's greedy allocator assigns (tests/test_target.py, ``VERILOCC_SLOW_TESTS=1``), which checks
membership, allocation order and reservations together.

Membership is LLVM's, plus what the target imposes (`RegisterClass.contains`): registers the
target lacks (AGPRs without MAI, VGPRs past v255) and, on gfx90a/94x/950, odd-aligned VGPR/AGPR
tuples are not members, whatever the class. Members come in class-definition order, which is
LLVM's allocation order before hints.

Where LLVM 19 and 22 differ, the LLVM 22 (main) definition is used: ``sreg_64_xexec`` holds
the four aperture registers only in LLVM 19 (checked with the machine verifier on
``S_LOAD_DWORDX2_IMM``); VGPR classes reach v1023 only in LLVM 22. Neither matters for
allocation (apertures are reserved; no supported target addresses v256+).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from verilocc.errors import TargetError
import verilocc.target.subregs as subregs
from verilocc.target.gfx import Reservations, Target, reservations
from verilocc.target.registers import (
    TUPLE_WIDTHS,
    PhysReg,
    RegFile,
    file_half,
    file_register,
    is_defined,
    parse_physreg,
)


# --------------------------------------------------------------------------------------------
# Class definitions (nodes)
# --------------------------------------------------------------------------------------------
class _Node:
    """A register-class expression. Subclasses are frozen dataclasses (hashable by structure)."""

    @property
    def width16(self) -> int:
        """Width of every member in 16-bit units."""
        raise NotImplementedError

    def generate(self) -> Iterator[PhysReg]:
        raise NotImplementedError

    @functools.cached_property
    def members(self) -> tuple[PhysReg, ...]:
        """LLVM members in definition order, ignoring any target."""
        seen: set[PhysReg] = set()
        ordered: list[PhysReg] = []
        for reg in self.generate():
            if reg not in seen:
                seen.add(reg)
                ordered.append(reg)
        return tuple(ordered)

    @functools.cached_property
    def member_set(self) -> frozenset[PhysReg]:
        return frozenset(self.members)


@dataclass(frozen=True, eq=True)
class _Tuples(_Node):
    """``dwords``-wide tuples of one file starting at multiples of ``align`` in [start, end)."""

    file: RegFile
    dwords: int
    align: int
    start: int
    end: int

    @property
    def width16(self) -> int:
        return 2 * self.dwords

    def generate(self) -> Iterator[PhysReg]:
        for first in range(self.start, self.end - self.dwords + 1, self.align):
            yield file_register(self.file, first, self.dwords)


@dataclass(frozen=True, eq=True)
class _Halves(_Node):
    """16-bit halves of registers [0, end) of a file, lo16 and/or hi16, interleaved."""

    file: RegFile
    end: int
    lo: bool
    hi: bool

    @property
    def width16(self) -> int:
        return 1

    def generate(self) -> Iterator[PhysReg]:
        for number in range(self.end):
            if self.lo:
                yield file_half(self.file, number, high=False)
            if self.hi:
                yield file_half(self.file, number, high=True)


@dataclass(frozen=True, eq=True)
class _Named(_Node):
    """Explicitly listed (special) registers."""

    names: tuple[str, ...]
    dwords: int

    @property
    def width16(self) -> int:
        return 2 * self.dwords

    def generate(self) -> Iterator[PhysReg]:
        for name in self.names:
            reg = parse_physreg(name)
            assert reg.width16 == self.width16, name
            yield reg


@dataclass(frozen=True, eq=True)
class _Union(_Node):
    """``(add A, B, ...)``: members of the parts in order."""

    parts: tuple[_Node, ...]

    @property
    def width16(self) -> int:
        return self.parts[0].width16

    def generate(self) -> Iterator[PhysReg]:
        for part in self.parts:
            yield from part.members


@dataclass(frozen=True, eq=True)
class _Empty(_Node):
    """A class without registers (``VReg_1``: ``(add)``)."""

    dwords: int

    @property
    def width16(self) -> int:
        return 2 * self.dwords

    def generate(self) -> Iterator[PhysReg]:
        return iter(())


@dataclass(frozen=True, eq=True)
class _WithSubreg(_Node):
    """``inner_with_idx`` or ``inner_with_idx_in_sub``."""

    inner: _Node
    idx: str
    sub: _Node | None

    @property
    def width16(self) -> int:
        return self.inner.width16

    def generate(self) -> Iterator[PhysReg]:
        wanted = self.sub.member_set if self.sub is not None else None
        for reg in self.inner.members:
            part = reg.subreg_or_none(self.idx)
            if part is None or not is_defined(part):
                continue
            if wanted is None or part in wanted:
                yield reg


@dataclass(frozen=True, eq=True)
class _And(_Node):
    """``left_and_right``: the intersection, in ``left``'s order."""

    left: _Node
    right: _Node

    @property
    def width16(self) -> int:
        return self.left.width16

    def generate(self) -> Iterator[PhysReg]:
        other = self.right.member_set
        return (reg for reg in self.left.members if reg in other)


# --------------------------------------------------------------------------------------------
# The defined classes (SIRegisterInfo.td, LLVM main; allocatable names checked with llc)
# --------------------------------------------------------------------------------------------
_S, _V, _A = RegFile.SGPR, RegFile.VGPR, RegFile.AGPR
_SGPRS, _VGPRS, _AGPRS = 106, 1024, 256  # SGPR0..105, VGPR0..1023 (LLVM 22), AGPR0..255

#: Widths (in 32-bit registers) of the SGPR_<n> tuple classes (SRegClass<3..12,16,32>).
_SGPR_TUPLE_DWORDS: Final = (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 32)
#: Widths of VReg_/AReg_/AV_ tuple classes (VRegClass/ARegClass/AVRegClass<2..12,16,32>).
_VECTOR_TUPLE_DWORDS: Final = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 32)

#: SReg_32_XM0_XEXEC's special members, in .td order (after SGPR_32).
_SREG32_SPECIALS: Final = (
    "vcc_lo", "vcc_hi", "flat_scr_lo", "flat_scr_hi", "xnack_mask_lo", "xnack_mask_hi",
    "sgpr_null", "sgpr_null_hi",
    *(f"ttmp{i}" for i in range(16)),
    "tma_lo", "tma_hi", "tba_lo", "tba_hi",
    "src_shared_base_lo", "src_shared_limit_lo", "src_private_base_lo", "src_private_limit_lo",
    "src_pops_exiting_wave_id", "src_vccz", "src_execz", "src_scc",
    "src_flat_scratch_base_lo", "src_flat_scratch_base_hi",
)  # fmt: skip

#: SReg_64_XEXEC_XNULL's special members after SGPR_64 (TTMP_64 are the even TTMP pairs).
_SREG64_SPECIALS: Final = (
    "vcc", "flat_scr", "xnack_mask",
    *(f"ttmp{i}_ttmp{i + 1}" for i in range(0, 16, 2)),
    "tba", "tma", "src_flat_scratch_base",
)  # fmt: skip


def _build_bases() -> dict[str, tuple[_Node, bool]]:
    """name -> (definition, allocatable)."""
    b: dict[str, tuple[_Node, bool]] = {}

    def add(name: str, node: _Node, allocatable: bool = True) -> None:
        assert name not in b, name
        b[name] = (node, allocatable)

    # Scalar classes.
    sgpr_32 = _Tuples(_S, 1, 1, 0, _SGPRS)
    add("sgpr_lo16", _Halves(_S, _SGPRS, lo=True, hi=False))
    add("sgpr_32", sgpr_32)
    sgpr_64 = _Tuples(_S, 2, 2, 0, _SGPRS)  # SIRegisterTuples<..., 105, stride 2, size 2>
    add("sgpr_64", sgpr_64)
    add("ccr_sgpr_64", _Tuples(_S, 2, 2, 0, 30))  # (trunc SGPR_64, 15): s[0:1]..s[28:29]
    add("gfx_ccr_sgpr_64", _Tuples(_S, 2, 2, 36, 64))  # (trunc (shl SGPR_64, 18), 14): s[36:37]..s[62:63]
    for n in _SGPR_TUPLE_DWORDS:
        add(f"sgpr_{32 * n}", _Tuples(_S, n, 4, 0, _SGPRS))  # stride 4 for 3+ registers
    xm0_xexec = _Union((sgpr_32, _Named(_SREG32_SPECIALS, 1)))
    add("sreg_32_xm0_xexec", xm0_xexec)
    xexec = _Union((xm0_xexec, _Named(("m0",), 1)))
    add("sreg_32_xexec", xexec)
    add("sreg_32_xexec_hi", _Union((xexec, _Named(("exec_lo",), 1))))
    xm0 = _Union((xm0_xexec, _Named(("exec_lo", "exec_hi"), 1)))
    add("sreg_32_xm0", xm0)
    add("sreg_32", _Union((xm0, _Named(("m0",), 1))))
    xexec_xnull = _Union((sgpr_64, _Named(_SREG64_SPECIALS, 2)))
    add("sreg_64_xexec_xnull", xexec_xnull)  # LLVM 20+
    sreg_64_xexec = _Union((xexec_xnull, _Named(("sgpr_null64",), 2)))
    add("sreg_64_xexec", sreg_64_xexec)
    add("sreg_64", _Union((sreg_64_xexec, _Named(("exec",), 2))))

    # Vector classes.
    add("vgpr_16", _Halves(_V, _VGPRS, lo=True, hi=True))
    add("vgpr_16_lo128", _Halves(_V, 128, lo=True, hi=True), allocatable=False)
    vgpr_32 = _Tuples(_V, 1, 1, 0, _VGPRS)
    agpr_32 = _Tuples(_A, 1, 1, 0, _AGPRS)
    add("vgpr_32", vgpr_32)
    add("vgpr_32_lo128", _Tuples(_V, 1, 1, 0, 128))
    add("vgpr_32_lo256", _Tuples(_V, 1, 1, 0, 256))  # LLVM 22
    add("agpr_32", agpr_32)
    add("av_32", _Union((vgpr_32, agpr_32)))
    for n in _VECTOR_TUPLE_DWORDS:
        bits = 32 * n
        add(f"vreg_{bits}", _Tuples(_V, n, 1, 0, _VGPRS))
        add(f"vreg_{bits}_align2", _Tuples(_V, n, 2, 0, _VGPRS))  # (decimate regList, 2)
        add(f"vreg_{bits}_lo256_align2", _Tuples(_V, n, 2, 0, 256))  # LLVM 22
        add(f"areg_{bits}", _Tuples(_A, n, 1, 0, _AGPRS))
        add(f"areg_{bits}_align2", _Tuples(_A, n, 2, 0, _AGPRS))
        add(f"av_{bits}", _Union((_Tuples(_V, n, 1, 0, _VGPRS), _Tuples(_A, n, 1, 0, _AGPRS))))
        add(f"av_{bits}_align2", _Union((_Tuples(_V, n, 2, 0, _VGPRS), _Tuples(_A, n, 2, 0, _AGPRS))))
    add("vreg_1", _Empty(1))  # i1 values before SILowerI1Copies; never allocated
    return b


_BASE: Final[dict[str, tuple[_Node, bool]]] = _build_bases()


@functools.lru_cache(maxsize=None)
def _check_base(name: str) -> None:
    """The table's facts about one defined class hold: members exist, are LLVM registers and
    have the class's width. Checked when the class is first used (computing the members of
    all classes up front would cost every command its start-up time), all of them by
    tests/test_target.py."""
    node = _BASE[name][0]
    if name == "vreg_1":
        return
    regs = node.members
    assert regs, f"{name} is empty"
    assert all(r.width16 == node.width16 for r in regs), name
    assert all(is_defined(r) for r in regs), f"{name} holds a register LLVM does not define"
    assert node.width16 == 1 or node.width16 // 2 in TUPLE_WIDTHS, name


def _check_bases() -> None:
    for name in _BASE:
        _check_base(name)


# --------------------------------------------------------------------------------------------
# Names of synthesized classes
# --------------------------------------------------------------------------------------------
def _occurrences(text: str, sep: str) -> Iterator[int]:
    pos = text.find(sep)
    while pos > 0:
        yield pos
        pos = text.find(sep, pos + 1)


#: Upper bound on alternative parses kept per name. They come in preference order (splits
#: at the leftmost "_with_"/"_in_" first, i.e. right-nested), and `get_class` takes the first
#: plausible one, so the bound only limits work on very long names.
_MAX_PARSES: Final = 64


@functools.lru_cache(maxsize=None)
def _parses(text: str) -> tuple[_Node, ...]:
    """Every well-typed reading of ``text`` as a class expression (widths match)."""
    found: list[_Node] = []
    if text in _BASE:
        _check_base(text)
        found.append(_BASE[text][0])
    for pos in _occurrences(text, "_and_"):
        for left in _parses(text[:pos]):
            for right in _parses(text[pos + 5 :]):
                if left.width16 == right.width16:
                    found.append(_And(left, right))
    for pos in _occurrences(text, "_with_"):
        lefts = _parses(text[:pos])
        if not lefts:
            continue
        rest = text[pos + 6 :]
        if subregs.is_subreg_index(rest):
            first, count = subregs.subreg_range(rest)
            found += [_WithSubreg(left, rest, None) for left in lefts if first + count <= left.width16]
        for q in _occurrences(rest, "_in_"):
            idx = rest[:q]
            if not subregs.is_subreg_index(idx):
                continue
            first, count = subregs.subreg_range(idx)
            for sub in _parses(rest[q + 4 :]):
                if sub.width16 != count:
                    continue
                found += [_WithSubreg(left, idx, sub) for left in lefts if first + count <= left.width16]
        if len(found) > _MAX_PARSES:
            break
    return tuple(found[:_MAX_PARSES])


@functools.lru_cache(maxsize=None)
def _could_be_tablegen(node: _Node) -> bool:
    """Whether TableGen could have produced this expression as a class of its own."""
    if isinstance(node, _WithSubreg):
        operands: tuple[_Node, ...] = (node.inner,) if node.sub is None else (node.inner, node.sub)
        parents: tuple[_Node, ...] = (node.inner,)
    elif isinstance(node, _And):
        operands = parents = (node.left, node.right)
    else:
        return True  # a defined class
    if not all(_could_be_tablegen(op) for op in operands):
        return False
    return bool(node.members) and all(node.member_set != p.member_set for p in parents)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RegisterClass:
    """A register class of virtual registers. Equality and hashing go by ``name``.

    ``width_units`` is the width of each member in 16-bit units (2 per 32 bits); ``files``
    are the register files its members come from.
    """

    name: str
    width_units: int
    files: frozenset[RegFile]
    definition: _Node = field(repr=False, compare=False)  # how the members are computed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RegisterClass) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def width32(self) -> int:
        """Width of each member in 32-bit registers (0 for 16-bit classes)."""
        return self.width_units // 2

    @property
    def full_mask(self) -> int:
        """LLVM lane mask of a whole member (``0xF`` for 64-bit classes)."""
        return subregs.slots_to_mask(range(self.width_units))

    def contains_llvm(self, reg: PhysReg) -> bool:
        """LLVM's class membership, independent of any target."""
        return reg in self.definition.member_set

    def contains(self, reg: PhysReg, target: Target) -> bool:
        """Whether ``reg`` may hold a virtual register of this class on ``target``.

        LLVM membership (file, width, class alignment, special members and exclusions) and
        the target: the register must exist there and, on gfx90a/94x/950, VGPR/AGPR tuples
        must start even. Reservation is a separate question (`allocatable_members`).
        """
        return _contains(self, reg, target)

    def members(self, target: Target) -> list[PhysReg]:
        """Members on ``target`` in class-definition (allocation) order."""
        return list(_members(self, target))

    def allocatable_members(self, target: Target, reserved: Reservations | None = None) -> list[PhysReg]:
        """`members` minus the reserved registers (default: `gfx.reservations(target)`)."""
        res = reserved if reserved is not None else reservations(target)
        return [r for r in _members(self, target) if not res.is_reserved(r)]


@functools.lru_cache(maxsize=1 << 18)
def _contains(cls: RegisterClass, reg: PhysReg, target: Target) -> bool:
    return reg in cls.definition.member_set and target.has_register(reg) and target.tuple_alignment_ok(reg)


@functools.lru_cache(maxsize=4096)
def _members(cls: RegisterClass, target: Target) -> tuple[PhysReg, ...]:
    node = cls.definition
    return tuple(r for r in node.members if target.has_register(r) and target.tuple_alignment_ok(r))


@functools.lru_cache(maxsize=None)
def get_class(name: str) -> RegisterClass:
    """The register class MIR calls ``name`` (any case). Unknown names raise `TargetError`.

    Accepts what llc accepts for a virtual register: the allocatable defined classes and
    TableGen's synthesized ones (see the module docstring).
    """
    key = name.strip().lower()
    if key in _BASE:
        node, allocatable = _BASE[key]
        _check_base(key)
        if not allocatable:
            raise TargetError(f"register class '{name}' is not allocatable (llc rejects it for a virtual register)")
        return _make(key, node)
    # Synthesized: the first plausible reading in preference order (see `_parses`).
    if "_with_" not in key and "_and_" not in key:
        raise TargetError(f"unknown register class '{name}'")
    for node in _parses(key):
        if _could_be_tablegen(node):
            return _make(key, node)
    raise TargetError(f"unknown register class '{name}'")


def _make(name: str, node: _Node) -> RegisterClass:
    files = frozenset(r.file for r in node.members)
    return RegisterClass(name=name, width_units=node.width16, files=files, definition=node)


#: The classes of a return address as LLVM 13 and 14 define them (`legacy_return_address_class`).
LEGACY_RETURN_CLASSES: Final = ("ccr_sgpr_64", "gfx_ccr_sgpr_64")


@functools.cache
def legacy_return_address_class(name: str) -> RegisterClass:
    """`ccr_sgpr_64` or `gfx_ccr_sgpr_64` (the amdgpu_gfx calling convention's) as LLVM 13 and
    14 define them: (trunc SGPR_64, 16), s[0:1]..s[30:31]; and (trunc (shl SGPR_64, 15), 1)
    plus (trunc (shl SGPR_64, 18), 14), s[30:31] and s[36:37]..s[62:63].

    Before LLVM 15 made s30/s31 callee-saved, a function received its return address in
    s[30:31], kept it in a virtual register of this class and returned through
    `S_SETPC_B64_return %ra` (`S_SETPC_B64_return_gfx %ra`); the allocator may leave it in
    s[30:31] (llc-14's machine verifier accepts that). From LLVM 15 neither class has s[30:31].
    `verilocc.analysis.operands.vreg_classes` uses these definitions for the functions that
    return that way. Named apart so that caches keyed by class name do not mix the two."""
    if name == "ccr_sgpr_64":
        return _make("ccr_sgpr_64(llvm13-14)", _Tuples(_S, 2, 2, 0, 32))
    if name == "gfx_ccr_sgpr_64":
        return _make("gfx_ccr_sgpr_64(llvm13-14)", _Union((_Tuples(_S, 2, 2, 30, 32), _Tuples(_S, 2, 2, 36, 64))))
    raise TargetError(f"no LLVM 13/14 definition of register class '{name}'")


def is_class_name(name: str) -> bool:
    """Whether `get_class` accepts ``name``."""
    try:
        get_class(name)
    except TargetError:
        return False
    return True


def base_class_names() -> list[str]:
    """The allocatable classes defined in SIRegisterInfo.td (not the synthesized ones)."""
    return [n for n, (_, allocatable) in _BASE.items() if allocatable]
