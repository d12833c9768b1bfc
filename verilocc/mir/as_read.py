"""What llc changes in a MIR function when it reads one, done the same way here.

Two files that llc reads as one program must be one program to the verifier too, whatever
spelling each uses. The rules, each from llc's own reading of a file:

- **wave32 VCC** (`GCNSubtarget::mirFileLoaded`, `SIInstrInfo::fixImplicitOperands`): in a
  wave32 function, every implicit `$vcc` operand of an instruction other than inline assembly
  is `$vcc_lo`. llc's MIR parser insists on `implicit $vcc` where an instruction's definition
  names VCC (`S_CBRANCH_VCCNZ`, `V_DIV_FMAS_F32_e64`, ...), so wave32 files are patched to it
  before llc reads them; llc then reads `$vcc_lo`, and prints it. Flags are kept; an explicit
  `$vcc` is left as written (the machine verifier refuses a 64-bit VCC operand on wave32).

On a wave64 function nothing changes: `$vcc` is the 64-bit mask there, and `$vcc_lo` in its
place reads half of it.
"""

from __future__ import annotations

import dataclasses

from verilocc.mir.model import Function, Instruction, Operand

_INLINE_ASSEMBLY = ("INLINEASM", "INLINEASM_BR")


def _wave32_vcc(op: Operand) -> Operand:
    if op.kind == "reg" and op.is_implicit and op.phys == "vcc" and op.subreg is None:
        return dataclasses.replace(op, phys="vcc_lo", text=op.text.replace("$vcc", "$vcc_lo"))
    return op


def _needs_fix(ins: Instruction) -> bool:
    return ins.opcode not in _INLINE_ASSEMBLY and any(
        op.kind == "reg" and op.is_implicit and op.phys == "vcc" and op.subreg is None for op in ins.operands)


def as_llc_reads(fn: Function, wave32: bool) -> Function:
    """`fn` as llc reads it (see the module docstring); `fn` itself when nothing changes."""
    if not wave32 or not any(_needs_fix(i) for b in fn.blocks for i in b.instructions):
        return fn
    blocks = [dataclasses.replace(b, instructions=[
        dataclasses.replace(i, operands=[_wave32_vcc(op) for op in i.operands]) if _needs_fix(i) else i
        for i in b.instructions]) for b in fn.blocks]
    return dataclasses.replace(fn, blocks=blocks)
