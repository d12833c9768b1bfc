"""Which vector register file an operand may name where LLVM lets either serve.

On targets with AGPRs some operands take a register of either vector file: LLVM gives them
`AV_*` classes (copies and LLVM 22's immediate moves from gfx908 on; memory data operands and
MFMA sources from gfx90a on). After splitting a live range LLVM inflates the new virtual
register's class to the largest class every one of its operands allows
(`MachineRegisterInfo::recomputeRegClass`), so a value of a `VGPR_32` register may then sit in
an AGPR, and the reverse, but only where *every* operand that names it takes that file. An
operand constrains nothing when it is implicit or belongs to `COPY`, `KILL` or `IMPLICIT_DEF`.

`takes_file` says, for one operand of an allocated instruction, whether it may name a register
of a given vector file. It answers True only where llc's machine verifier (`-verify-machineinstrs`,
LLVM 19 and 22, gfx908 to gfx950) accepts that file, and False wherever that is not known
(`scripts/vector_operands_probe.py` and `tests/test_vector_operands.py` check it against llc):
- memory instructions (`GLOBAL_`, `FLAT_`, `BUFFER_`, `DS_`, `SCRATCH_`): the loaded value
  (the def of a load), and the data of a store or of an atomic that returns nothing; never an
  address. llc refuses the other file for the two data operands of
  `DS_WRITE2*` and compare-and-swap and for any operand of an atomic that returns a value,
  even with all of them in it; so does this, and for the `DS_` permutes, appends, `ADDTID`
  and transposing (`_TR`) forms;
- MFMAs: the A and B sources take either file; the result and the C source take the file of
  the opcode's form (`_vgprcd`: VGPRs, otherwise AGPRs), so a virtual register of a VGPR
  class may hold an AGPR there when LLVM chose the AGPR form (AMDGPURewriteAGPRCopyMFMA);
- `AV_MOV_B32_IMM_PSEUDO` and `AV_MOV_B64_IMM_PSEUDO` (LLVM 22): the result takes either file;
- inline assembly: the files of the class its operand flag names (`/* reguse:AReg_64 */`), which
  LLVM 22 may change from the virtual register's when it rewrites an MFMA into its AGPR form;
- anything else (VALU, SALU, `V_ACCVGPR_*`, `SMFMAC`): only the class's own file.
"""

from __future__ import annotations

import re

from verilocc.mir.model import Instruction
from verilocc.target import RegFile

UNCONSTRAINED_OPCODES = frozenset({"COPY", "KILL", "IMPLICIT_DEF"})
_VECTOR_MEMORY = ("GLOBAL_", "FLAT_", "BUFFER_", "DS_")
# The class llc's MIR printer names in the comment of an inline-assembly operand's flag.
_ASM_FLAG = re.compile(r"/\* (?:regdef|reguse|regdef-ec)(?: [^:*]*)?:(\w+) \*/")
_ASM_FILES = (("AV_", (RegFile.VGPR, RegFile.AGPR)), ("AReg_", (RegFile.AGPR,)), ("AGPR_", (RegFile.AGPR,)),
              ("VReg_", (RegFile.VGPR,)), ("VGPR_", (RegFile.VGPR,)))
# `DS_` operations whose operands are not the plain address-and-data of a load, store or atomic.
_DS_OTHER = ("DS_BPERMUTE", "DS_PERMUTE", "DS_SWIZZLE", "DS_APPEND", "DS_CONSUME", "DS_ORDERED", "DS_NOP",
             "DS_GWS_SEMA_V", "DS_GWS_SEMA_P", "DS_GWS_SEMA_RELEASE")


def _explicit_index(ins: Instruction, position: int) -> int:
    """The operand's place among the instruction's explicit operands (defs first)."""
    return sum(1 for op in ins.operands[:position] if not (op.kind == "reg" and op.is_implicit))


def _asm_files(ins: Instruction, position: int) -> tuple[RegFile, ...]:
    """The vector files the class of an inline-assembly register operand has, from the flag
    operand before it (`3997705 /* reguse:AReg_64_Align2 */`); none when it names no class."""
    for op in reversed(ins.operands[:position]):
        if op.kind == "reg":
            continue
        m = _ASM_FLAG.search(op.text)
        if m is None:
            return ()
        return next((files for prefix, files in _ASM_FILES if m.group(1).startswith(prefix)), ())
    return ()


def takes_file(ins: Instruction, position: int, file: RegFile, av_operands: bool) -> bool:
    """Whether operand `position` of `ins` may name a register of the vector file `file` on a
    target with AGPRs (see the module docstring); False when unknown. `av_operands`: the
    target gives memory data operands and MFMA sources AV classes (gfx90a and later; gfx908
    does not: there only the other rules hold)."""
    op = ins.operands[position]
    opcode = ins.opcode
    if opcode in UNCONSTRAINED_OPCODES or op.is_implicit:
        return True
    if file not in (RegFile.VGPR, RegFile.AGPR):
        return False
    k = _explicit_index(ins, position)
    if opcode.startswith("V_MFMA_"):
        if k in (1, 2):
            return av_operands or file is RegFile.VGPR
        if k in (0, 3):  # the result and the C source (tied to it in the `_mac` forms)
            return (file is RegFile.VGPR) == ("_vgprcd" in opcode)
        return False
    if op.tied_def is not None:
        return False
    if opcode.startswith("AV_MOV_") and opcode.endswith("_IMM_PSEUDO"):
        return op.is_def and k == 0  # LLVM 22's move of an immediate into either file
    if opcode in ("INLINEASM", "INLINEASM_BR"):
        return file in _asm_files(ins, position)
    if not av_operands:
        return False
    if opcode.startswith("SCRATCH_LOAD_") and "_LDS" not in opcode:
        return op.is_def and k == 0
    if opcode.startswith("SCRATCH_STORE_") and "_LDS" not in opcode:
        return not op.is_def and k == 0  # the data comes first in every form (then vaddr, saddr)
    if not opcode.startswith(_VECTOR_MEMORY) or "ADDTID" in opcode or "_LDS" in opcode or "_TR" in opcode:
        return False
    regs = ins.explicit_regs
    if opcode.startswith("DS_"):
        if opcode.startswith(_DS_OTHER):
            return False
        if opcode.startswith("DS_READ"):
            return op.is_def and k == 0
        if opcode.startswith("DS_GWS_"):
            return not op.is_def and k == 0  # the data operand; GWS has no address
        # Writes and atomics: the address, then one data operand. llc refuses the other file
        # for two data operands (`DS_WRITE2*`, compare-and-swap) and for an atomic's result,
        # even all in one file.
        data = [o for o in regs if not o.is_def][1:]
        return not op.is_def and len(data) == 1 and data[0] is op and "_RTN" not in opcode
    if "_RTN" in opcode:
        return False  # a GLOBAL_/FLAT_/BUFFER_ atomic returning a value: its own file only
    if "_LOAD_" in opcode:
        return op.is_def and k == 0
    if op.is_def:
        return False
    if opcode.startswith("BUFFER_"):
        return k == 0  # stores and atomics name their data first
    if "_STORE_" in opcode or "_ATOMIC_" in opcode:
        return k == 1  # after the address (a 64-bit address, or the offset of `_SADDR`)
    return False


__all__ = ["UNCONSTRAINED_OPCODES", "takes_file"]
