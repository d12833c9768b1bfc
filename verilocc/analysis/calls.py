"""Calls: a register mask read as the registers the call defines.

A call (`SI_CALL`, `SI_TCRETURN`, ...) carries a register mask: the registers it preserves
(`verilocc.target.regmasks`). Every other register may hold anything when the call returns.
That is exactly what an `implicit-def` of each clobbered register says, so before the layers
run, each call with a known mask gets one `implicit-def $r` per clobbered 32-bit register of
the target's files (SGPRs, VGPRs, AGPRs where present, VCC, M0, SCC) that the call does not
define already. The same expansion is applied to both programs, so the layers need no rule of
their own for calls:

- value flow: after the call, a clobbered register holds the value the call gave it in the
  virtual program (a fixed-register definition), never a virtual register's value: a value
  kept in a clobbered register across the call is not found there when it is read;
- equivalence: the call is a side effect; its inputs (argument registers) must be equal and
  its results, clobbered registers included, are the same function of them on both sides;
- constraints: a virtual register live across the call in a clobbered register interferes
  with the call's definition of that register.

A mask `target.regmasks` does not know (a new `csr_*` list) is left as it is and the verifier
reports the call as not modelled (UNKNOWN); `CustomRegMask(...)` preserves what it lists.

A call runs under the lanes $exec has on, and a function returns to its caller with the $exec
it was called with, though LLVM's `SI_CALL` and `SI_RETURN` do not say so. Each call and each
return (`SI_RETURN`, `S_SETPC_B64_return`, LLVM 13 and 14's `S_SETPC_B64_return_gfx`,
`SI_RETURN_TO_EPILOG`) therefore gets an
`implicit $exec` (`$exec_lo` in wave32) in both programs: an allocation that leaves all lanes
on after saving $exec for a whole-wave copy, and never restores it, is caught there.
"""

from __future__ import annotations

import dataclasses

from verilocc.mir.model import Function, Instruction, Operand
from verilocc.target import Target
from verilocc.target.regmasks import RegMask, regmask
from verilocc.target.registers import PhysReg, parse_physreg

_SPECIAL_CLOBBERS = ("vcc", "m0", "scc")


def sgpr_striped(fn: Function) -> bool:
    """Whether llc 20 or later wrote `fn` (its function header has keys LLVM 19 does not
    write); the later SGPR callee-saved rule is then the safe one (`target.regmasks`)."""
    return "hasFakeUses" in fn.header or "noPhis" in fn.header


def call_mask(ins: Instruction, striped: bool) -> RegMask | None:
    op = next((o for o in ins.operands if o.kind == "regmask"), None)
    return regmask(op.text, striped) if op is not None else None


def clobbered_registers(mask: RegMask, target: Target) -> list[PhysReg]:
    """The 32-bit registers (and VCC, M0, SCC) of `target` that a call through `mask` clobbers."""
    names = [f"sgpr{i}" for i in range(target.addressable_sgprs)]
    names += [f"vgpr{i}" for i in range(target.addressable_vgprs)]
    if target.has_agprs:
        names += [f"agpr{i}" for i in range(target.addressable_vgprs)]
    names += list(_SPECIAL_CLOBBERS)
    regs = [parse_physreg(n) for n in names]
    return [r for r in regs if not mask.preserves(r)]


#: Returns to the caller, who sees $exec afterwards.
RETURN_OPCODES = frozenset({"SI_RETURN", "S_SETPC_B64_return", "S_SETPC_B64_return_gfx", "SI_RETURN_TO_EPILOG"})


def _reads_exec(ins: Instruction, target: Target) -> Instruction:
    """`ins` with an `implicit $exec` use (wave32: `$exec_lo`) unless it reads one already."""
    name = "exec_lo" if target.wavefront_size == 32 else "exec"
    if any(op.kind == "reg" and not op.is_def and op.phys in ("exec", name) for op in ins.operands):
        return ins
    use = Operand(kind="reg", text=f"implicit ${name}", line=ins.line, column=ins.column, phys=name,
                  flags=frozenset({"implicit"}))
    return dataclasses.replace(ins, operands=list(ins.operands) + [use])


def _expand(ins: Instruction, mask: RegMask, target: Target) -> Instruction:
    defined = {u for op in ins.operands if op.kind == "reg" and op.is_def and op.phys
               for u in parse_physreg(op.phys).units}
    extra = [
        Operand(kind="reg", text=f"implicit-def ${r.name}", line=ins.line, column=ins.column,
                phys=r.name, flags=frozenset({"implicit-def"}))
        for r in clobbered_registers(mask, target) if defined.isdisjoint(r.units)
    ]
    return _reads_exec(dataclasses.replace(ins, operands=list(ins.operands) + extra), target)


def expand_calls(fn: Function, target: Target, striped: bool) -> Function:
    """A copy of `fn` in which every call with a known register mask defines the registers it
    clobbers and every call and return reads $exec (the input is not changed; a function
    without calls or returns is returned as it is). Both programs of a pair must be expanded
    with the same `striped` rule."""
    changed = False
    blocks = []
    for b in fn.blocks:
        instructions = []
        for ins in b.instructions:
            mask = call_mask(ins, striped)
            if mask is not None:
                ins = _expand(ins, mask, target)
                changed = True
            elif ins.opcode in RETURN_OPCODES:
                ins = _reads_exec(ins, target)
                changed = True
            instructions.append(ins)
        blocks.append(dataclasses.replace(b, instructions=instructions))
    return dataclasses.replace(fn, blocks=blocks) if changed else fn
