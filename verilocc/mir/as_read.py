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


def _wave32_vcc(op: Operand) -> bool:
    return op.kind == "reg" and op.is_implicit and op.phys == "vcc" and op.subreg is None


def _fixed(ins: Instruction) -> Instruction:
    """`ins` with its implicit `$vcc` operands read as `$vcc_lo` (itself when it has none)."""
    if ins.opcode in _INLINE_ASSEMBLY or not any(_wave32_vcc(op) for op in ins.operands):
        return ins
    return dataclasses.replace(ins, operands=[
        dataclasses.replace(op, phys="vcc_lo", text=op.text.replace("$vcc", "$vcc_lo")) if _wave32_vcc(op) else op
        for op in ins.operands])


def as_llc_reads(fn: Function, wave32: bool) -> Function:
    """`fn` as llc reads it (see the module docstring); `fn` itself when nothing changes."""
    if not wave32:
        return fn
    blocks = []
    for b in fn.blocks:
        fixed = [_fixed(i) for i in b.instructions]
        changed = any(x is not y for x, y in zip(fixed, b.instructions))
        blocks.append(dataclasses.replace(b, instructions=fixed) if changed else b)
    return fn if all(x is y for x, y in zip(blocks, fn.blocks)) else dataclasses.replace(fn, blocks=blocks)
