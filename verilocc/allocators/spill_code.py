"""The instructions and frame entries of spill code, as LLVM writes them after the last
VirtRegRewriter (`verilocc.allocators.spill` describes when each is written).

Each function builds the instructions of one store or reload (`verilocc.mir.build`): a stack
slot's ``SI_SPILL_*_SAVE``/``_RESTORE``, the COPY to or from an AGPR home, an SGPR's
``SI_SPILL_S32_TO_VGPR``/``SI_RESTORE_S32_FROM_VGPR`` per 32 bits, the ``IMPLICIT_DEF`` of a lane
VGPR. `add_frame_entries` writes the spill slots into the function's ``stack:`` and the flags
of its frame and machineFunctionInfo.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from verilocc.analysis.operands import VReg
from verilocc.mir.build import define, imm, instruction, reg, stack_slot
from verilocc.mir.model import Function, Instruction
from verilocc.target import RegFile, RegisterClass, get_class, index_for_range

#: Widths of the vector spill pseudos (SI_SPILL_V<bits>_SAVE), in bits.
SPILL_BITS = frozenset({32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 512, 1024})


# --------------------------------------------------------------------------------------------
# Stack slots
# --------------------------------------------------------------------------------------------
def stack_store(t: VReg, cls: RegisterClass, slot: int, stack_pointer: str, line: int) -> Instruction:
    """`t` (of `cls`) stored into stack slot `slot`: ``SI_SPILL_S<bits>_SAVE %t, %stack.N,
    implicit $exec, implicit $sp`` for an SGPR class, ``SI_SPILL_V<bits>_SAVE %t, %stack.N, $sp,
    0, implicit $exec`` (``A``/``AV``) for a vector one."""
    bits = 32 * cls.width32
    sp = stack_pointer.lstrip("$")
    if RegFile.SGPR in cls.files:
        ops = [reg(t), stack_slot(slot), reg(phys="exec", flags={"implicit"}), reg(phys=sp, flags={"implicit"})]
        opcode = f"SI_SPILL_S{bits}_SAVE"
    else:
        ops = [reg(t), stack_slot(slot), reg(phys=sp), imm(0), reg(phys="exec", flags={"implicit"})]
        opcode = f"{spill_opcode(cls)}{bits}_SAVE"
    return instruction(opcode, ops, line, f"(store (s{bits}) into {_slot_memory(slot, bits)})")


def stack_reload(t: VReg, cls: RegisterClass, slot: int, stack_pointer: str, line: int) -> Instruction:
    """`t` (of `cls`) defined from stack slot `slot` (``SI_SPILL_*_RESTORE``, operands as the
    store's)."""
    bits = 32 * cls.width32
    sp = stack_pointer.lstrip("$")
    dst = define(t, reg_class=cls.name)
    if RegFile.SGPR in cls.files:
        ops = [dst, stack_slot(slot), reg(phys="exec", flags={"implicit"}), reg(phys=sp, flags={"implicit"})]
        opcode = f"SI_SPILL_S{bits}_RESTORE"
    else:
        ops = [dst, stack_slot(slot), reg(phys=sp), imm(0), reg(phys="exec", flags={"implicit"})]
        opcode = f"{spill_opcode(cls)}{bits}_RESTORE"
    return instruction(opcode, ops, line, f"(load (s{bits}) from {_slot_memory(slot, bits)})")


def _slot_memory(slot: int, bits: int) -> str:
    """The place of a slot's memory operand, as LLVM prints it."""
    return f"%stack.{slot}{', align 4' if bits > 32 else ''}, addrspace 5"


def spill_opcode(cls: RegisterClass) -> str:
    """The stack spill pseudo's prefix for a vector class (``SI_SPILL_V``, ``_A``, ``_AV``)."""
    if cls.files == {RegFile.AGPR}:
        return "SI_SPILL_A"
    if RegFile.AGPR in cls.files:
        return "SI_SPILL_AV"
    return "SI_SPILL_V"


# --------------------------------------------------------------------------------------------
# AGPR homes
# --------------------------------------------------------------------------------------------
def copy(dst: VReg, dst_class: str, src: VReg, line: int) -> Instruction:
    """``%dst:dst_class = COPY %src``: into an AGPR home, or out of it."""
    return instruction("COPY", [define(dst, reg_class=dst_class), reg(src)], line)


def av_class(cls: RegisterClass) -> str | None:
    """The ``av_*`` class a VGPR value of `cls` may be split into (None when there is none)."""
    if cls.files != {RegFile.VGPR}:
        return None
    bits = 32 * cls.width32
    for name in ((f"av_{bits}_align2", f"av_{bits}") if bits > 32 else ("av_32",)):
        try:
            get_class(name)
        except Exception:  # noqa: BLE001 - a width without an AV class
            continue
        return name
    return None


# --------------------------------------------------------------------------------------------
# VGPR lanes
# --------------------------------------------------------------------------------------------
def lane_vgpr_def(lane_vgpr: VReg, line: int) -> Instruction:
    """``%L:vgpr_32 = IMPLICIT_DEF``, at the top of the entry block."""
    return instruction("IMPLICIT_DEF", [define(lane_vgpr, reg_class="vgpr_32")], line)


def lane_stores(t: VReg, cls: RegisterClass, lane_vgpr: VReg, first: int, line: int,
                parts: Sequence[int] | None = None) -> list[Instruction]:
    """``%L:vgpr_32 = SI_SPILL_S32_TO_VGPR %t.subK, first + K, %L(tied-def 0)`` per 32 bits
    (`parts`: only those K)."""
    return [instruction("SI_SPILL_S32_TO_VGPR", [define(lane_vgpr, reg_class="vgpr_32"), reg(t, subreg=_part(cls, k)),
                                                 imm(first + k), reg(lane_vgpr, tied_def=0)], line)
            for k in (range(cls.width32) if parts is None else parts)]


def lane_reloads(t: VReg, cls: RegisterClass, lane_vgpr: VReg, first: int, line: int,
                 parts: Sequence[int] | None = None) -> list[Instruction]:
    """``%t.subK:cls = SI_RESTORE_S32_FROM_VGPR %L, first + K`` per 32 bits (`parts`: only
    those K; the first `undef` for a tuple)."""
    ks = list(range(cls.width32) if parts is None else parts)
    return [instruction("SI_RESTORE_S32_FROM_VGPR",
                        [define(t, subreg=_part(cls, k), reg_class=cls.name,
                                flags={"undef"} if cls.width32 > 1 and n == 0 else ()),
                         reg(lane_vgpr), imm(first + k)], line)
            for n, k in enumerate(ks)]


def defined_parts(cls: RegisterClass, lanes: int) -> list[int]:
    """The 32-bit parts of a value of `cls` with a lane of `lanes` (16-bit lane mask)."""
    return [k for k in range(max(1, cls.width32)) if (lanes >> (2 * k)) & 3]


def _part(cls: RegisterClass, k: int) -> str | None:
    """`subK` for the k-th 32 bits of a tuple; None for a 32-bit class."""
    return None if cls.width32 == 1 else index_for_range(2 * k, 2)


# --------------------------------------------------------------------------------------------
# The frame
# --------------------------------------------------------------------------------------------
def add_frame_entries(fn: Function, slot_sizes: list[tuple[int, int, str]], lanes: bool) -> None:
    """The spill slots `slot_sizes` ((id, bytes, stack-id)) as ``spill-slot`` entries of
    ``stack:`` (in the header text and the header read from it), ``maxAlignment`` at least 4,
    ``hasSpilledVGPRs`` for a vector slot, ``hasSpilledSGPRs`` for an SGPR slot or `lanes`."""
    text = fn.header_text
    if slot_sizes:
        entries = "".join(
            f"\n  - {{ id: {n}, name: '', type: spill-slot, offset: 0, size: {size}, alignment: 4, \n"
            f"      stack-id: {stack_id}, callee-saved-register: '', callee-saved-restored: true, \n"
            "      debug-info-variable: '', debug-info-expression: '', debug-info-location: '' }"
            for n, size, stack_id in slot_sizes)
        text = _add_stack_entries(text, entries)
        text = re.sub(r"(?m)^(  maxAlignment:\s+)(\d+)$", lambda m: m.group(1) + str(max(4, int(m.group(2)))), text)
        if any(stack_id == "default" for _, _, stack_id in slot_sizes):
            text = re.sub(r"(?m)^(  hasSpilledVGPRs:\s+)false$", r"\1true", text)
        stack = list(fn.header.get("stack") or [])
        stack += [{"id": n, "name": "", "type": "spill-slot", "offset": 0, "size": size, "alignment": 4,
                   "stack-id": stack_id} for n, size, stack_id in slot_sizes]
        fn.header["stack"] = stack
    if lanes or any(stack_id == "sgpr-spill" for _, _, stack_id in slot_sizes):
        text = re.sub(r"(?m)^(  hasSpilledSGPRs:\s+)false$", r"\1true", text)
    fn.header_text = text


def _add_stack_entries(text: str, entries: str) -> str:
    lines = text.split("\n")
    for k, ln in enumerate(lines):
        if ln.startswith("stack:"):
            if ln.rstrip().endswith("[]"):
                lines[k] = "stack:" + entries
                return "\n".join(lines)
            end = k + 1
            while end < len(lines) and (lines[end].startswith((" ", "-")) or not lines[end].strip()):
                end += 1
            lines[end - 1] += entries
            return "\n".join(lines)
    return text
