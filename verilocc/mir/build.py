"""Instructions made in code, equal to what the parser reads from their printed text.

A pass that inserts instructions (spill code: `verilocc.allocators.spill_code`) builds them
from operands here instead of writing MIR text and parsing it. `instruction` gives every
operand the instruction's line and the column at which `verilocc.mir.printer` prints it, and
ties the uses that the opcode's definition ties, as the parser does (`verilocc.mir.body`). So
`parse_instruction(print_instruction(ins), file, ins.line)` gives an instruction equal to
`ins`, field by field (`tests/test_mir.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

from verilocc.mir.model import REG_FLAGS, Instruction, Operand
from verilocc.mir.printer import print_operand
from verilocc.target.opcodes import tie_constraints

__all__ = ["define", "imm", "instruction", "reg", "stack_slot"]


def reg(vreg: int | str | None = None, *, phys: str | None = None, subreg: str | None = None,
        reg_class: str | None = None, flags: Iterable[str] = (), tied_def: int | None = None) -> Operand:
    """A register operand: virtual (`vreg`), physical (`phys`, lower case without `$`) or
    `$noreg` (neither); `flags` as `verilocc.mir.model.REG_FLAGS` names them."""
    op = Operand("reg", "", 0, 0, vreg, phys, subreg, reg_class, None, frozenset(flags), tied_def)
    text = op.register_text
    if reg_class:
        text += f":{reg_class}"
    if tied_def is not None:
        text += f"(tied-def {tied_def})"
    op.text = text  # the register as written, flags aside (what the parser keeps)
    return op


def define(vreg: int | str, *, subreg: str | None = None, reg_class: str | None = None,
           flags: Iterable[str] = ()) -> Operand:
    """An explicit def of a virtual register (`undef` among `flags` for a partial one)."""
    return reg(vreg, subreg=subreg, reg_class=reg_class, flags={"def", *flags})


def imm(value: int) -> Operand:
    return Operand("imm", str(value), 0, 0)


def stack_slot(n: int) -> Operand:
    """`%stack.N`, a frame index."""
    return Operand("stack", f"%stack.{n}", 0, 0)


def instruction(opcode: str, operands: list[Operand], line: int, mem: str | None = None) -> Instruction:
    """`opcode` with `operands` (explicit defs first) and the memory operands `mem` (the text
    after `::`), at `line`."""
    ins = Instruction(opcode, operands, line, 0, mem=mem)
    _tie_as_defined(ins)
    _place(ins)
    return ins


def _is_explicit_def(op: Operand) -> bool:
    return op.kind == "reg" and "def" in op.flags and "implicit-def" not in op.flags


def _place(ins: Instruction) -> None:
    """Line and column of every operand and of the opcode, as the printer lays the text out
    (`print_instruction`: defs, ` = `, the opcode, the other operands after a space, `, `
    between operands) and the parser numbers it (from 1; an operand at its register or text,
    after its flags)."""
    at = 1
    defs = True
    for op in ins.operands:
        op.line = ins.line
        if defs and _is_explicit_def(op):
            op.column = at + _flags_width(op)
            at += len(print_operand(op)) + len(", ")
            continue
        if defs:
            ins.column = _opcode_column(at, ins)
            at = ins.column + len(ins.opcode) + len(" ")
            defs = False
        prefix = len("def ") if _is_explicit_def(op) else 0  # a def among the uses keeps its `def`
        op.column = at + prefix + _flags_width(op)
        at += prefix + len(print_operand(op)) + len(", ")
    if defs:
        ins.column = _opcode_column(at, ins)


def _opcode_column(at: int, ins: Instruction) -> int:
    """The opcode's column, `at` being where a next def would start."""
    return at - len(", ") + len(" = ") if ins.operands and _is_explicit_def(ins.operands[0]) else 1


def _flags_width(op: Operand) -> int:
    """The width of the flags `print_operand` writes before a register (`undef `, `implicit `)."""
    return sum(len(f) + 1 for f in REG_FLAGS if f in op.flags and f != "def") if op.kind == "reg" else 0


def _tie_as_defined(ins: Instruction) -> None:
    """Tie the register uses at the positions the opcode's definition ties, marked as implied
    (not printed): what the parser does for a text that does not write the tie."""
    explicit = [i for i, op in enumerate(ins.operands) if not (op.kind == "reg" and op.is_implicit)]
    for tie in tie_constraints(ins.opcode):
        if tie.use >= len(explicit) or tie.def_ >= len(explicit):
            continue
        d, u = explicit[tie.def_], explicit[tie.use]
        dop, uop = ins.operands[d], ins.operands[u]
        if uop.kind == "reg" and not uop.is_def and dop.kind == "reg" and dop.is_def and uop.tied_def is None:
            uop.tied_def = d
            uop.tie_implied = True
