"""The instructions that execute: debug instructions dropped, simple bundles opened.

Two constructs of MIR bodies do not execute as written, and the layers read both programs of
a pair through this module instead:

- Debug instructions (`DBG_VALUE`, `DBG_VALUE_LIST`, `DBG_INSTR_REF`, `DBG_PHI`,
  `DBG_LABEL`) tell a debugger where a variable lives; they compute nothing and read no
  value (LLVM's liveness ignores their operands). LLVM's allocator moves, rewrites and
  drops them (LiveDebugVariables); none of that changes what the program computes. They
  are removed from both programs.
- A bundle (`BUNDLE ... { ... }`) reads all its inputs before any of its instructions
  writes. Its header only summarises the operands of the instructions inside it. When no
  instruction inside writes a register (or lane of a virtual register) that a later one
  inside reads or writes, running them one after the other reads and writes the same
  values; such a bundle (LLVM bundles a GWS operation with the `S_WAITCNT` after it, for
  example) is replaced by its instructions. Any other bundle is left as it is, and the
  verifier reports it as not modelled (UNKNOWN).

A function with neither construct is returned as it is (the same object).
"""

from __future__ import annotations

import dataclasses

from verilocc.analysis.operands import VReg, resolve_operand, vreg_classes
from verilocc.mir.model import Block, Function, Instruction, Operand
from verilocc.target import RegisterClass, mask_to_slots

DEBUG_PREFIX = "DBG_"


def executed(fn: Function, classes: dict[VReg, RegisterClass] | None = None) -> Function:
    """`fn` without debug instructions and with every bundle whose instructions do not depend
    on each other opened (module docstring); `classes` are the classes of its virtual
    registers (`vreg_classes`, made here when a bundle needs them and none are given)."""
    if not any(ins.opcode.startswith(DEBUG_PREFIX) or ins.opens_bundle for b in fn.blocks for ins in b.instructions):
        return fn
    if classes is None and any(ins.opens_bundle for b in fn.blocks for ins in b.instructions):
        classes = vreg_classes(fn)
    return dataclasses.replace(fn, blocks=[_block(fn, b, classes or {}) for b in fn.blocks])


def _block(fn: Function, b: Block, classes: dict[VReg, RegisterClass]) -> Block:
    out: list[Instruction] = []
    instructions = b.instructions
    i = 0
    while i < len(instructions):
        ins = instructions[i]
        i += 1
        if ins.opcode.startswith(DEBUG_PREFIX):
            continue
        if not ins.opens_bundle:
            out.append(ins)
            continue
        inner: list[Instruction] = []
        while i < len(instructions) and instructions[i].bundled:
            inner.append(instructions[i])
            i += 1
        run = [x for x in inner if not x.opcode.startswith(DEBUG_PREFIX)]
        if _independent(fn, run, classes):
            out.extend(dataclasses.replace(x, bundled=False) for x in run)
        else:
            out.append(ins)
            out.extend(inner)
    return dataclasses.replace(b, instructions=out)


def _independent(fn: Function, inner: list[Instruction], classes: dict[VReg, RegisterClass]) -> bool:
    """Whether no instruction of `inner` writes a register unit or virtual lane that a later
    one reads or writes (then one after the other is the bundle's meaning)."""
    written: set[object] = set()
    for ins in inner:
        touched: set[object] = set()
        for op in ins.operands:
            if op.kind != "reg" or op.is_noreg:
                continue
            if op.has("internal"):  # LLVM's mark of a read of a value the bundle defines
                return False
            touched |= _footprint(fn, op, classes)
        if touched & written:
            return False
        written |= {x for op in ins.operands if op.kind == "reg" and op.is_def and not op.is_noreg
                    for x in _footprint(fn, op, classes)}
    return True


def _footprint(fn: Function, op: Operand, classes: dict[VReg, RegisterClass]) -> set[object]:
    """The 16-bit units of a physical register operand, or the (register, slot) lanes of a
    virtual one."""
    ref = resolve_operand(fn, op, classes)
    if ref is None:
        return set()
    if ref.vreg is not None:
        return {(ref.vreg, slot) for slot in mask_to_slots(ref.mask)}
    assert ref.phys is not None
    return set(ref.phys.units)
