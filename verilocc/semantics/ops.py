"""Semantics of machine instructions for the equivalence proof, one table per opcode family.

Values are 16-bit lanes (terms of width 16, `verilocc.semantics.terms`), in the slot order of the register that
holds them. An operation's semantics maps the lanes of its register inputs (and the text of
its other operands) to the lanes of each def. Only the operations whose meaning matters for
the proof are interpreted: copies, immediate moves, REG_SEQUENCE and the subregister
operations. Every other opcode is an uninterpreted function of all its inputs: one function
symbol per (opcode, non-register operands, def, lane), so equal inputs give equal results
and nothing else is assumed. Side effects (stores, barriers, branches, anything with a memory
operand or without register defs) also take and produce a memory token, which orders them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verilocc.analysis.instructions import MOVE_OPCODES, SIDE_EFFECT_PREFIXES
from verilocc.mir.model import Instruction
from verilocc.semantics.terms import TermTable

LANE_BITS = 16
TOKEN_BITS = 64

# Moves of one immediate into a register: the value is the immediate itself.
IMMEDIATE_MOVES = frozenset(
    {"V_MOV_B32_e32", "V_MOV_B32_e64", "S_MOV_B32", "S_MOV_B64", "V_MOV_B64_PSEUDO", "V_MOV_B64_e32",
     "V_MOV_B64_e64", "S_MOV_B64_IMM_PSEUDO", "AV_MOV_B32_IMM_PSEUDO", "AV_MOV_B64_IMM_PSEUDO",
     "V_ACCVGPR_WRITE_B32_e64", "S_MOVK_I32"}
)
_PURE_MOVES = frozenset({"COPY", "V_MOV_B32_e32", "S_MOV_B32", "S_MOV_B64", "V_MOV_B64_PSEUDO",
                         "V_ACCVGPR_WRITE_B32_e64", "V_ACCVGPR_READ_B32_e64", "V_ACCVGPR_MOV_B32"})


def has_side_effects(ins: Instruction) -> bool:
    """Orders with other side effects: memory access, no register result, or a control transfer."""
    if ins.opcode in MOVE_OPCODES:
        return False
    if ins.mem is not None:
        return True
    # `dead` is a liveness annotation the two programs may disagree on: not part of meaning.
    return not any(op.kind == "reg" and op.is_def for op in ins.operands) or ins.opcode.startswith(
        SIDE_EFFECT_PREFIXES)


def reads_memory(ins: Instruction) -> bool:
    return ins.mem is not None or has_side_effects(ins)


def _immediate_lanes(text: str, n: int) -> list[int] | None:
    try:
        value = int(text, 0)
    except ValueError:
        return None
    value &= (1 << (LANE_BITS * n)) - 1
    return [(value >> (LANE_BITS * k)) & 0xFFFF for k in range(n)]


@dataclass
class OpKey:
    """Identifies an uninterpreted function family: opcode plus the text of non-register operands."""

    opcode: str
    digest: str

    @staticmethod
    def of(ins: Instruction) -> OpKey:
        others = "|".join(op.text for op in ins.operands if op.kind != "reg")
        flags = ",".join(ins.instr_flags)
        h = hashlib.sha256(f"{others}#{flags}#{ins.mem or ''}".encode()).hexdigest()[:12]
        return OpKey(ins.opcode, h)


class Semantics:
    """Builds the terms of one instruction's results: hash-consed Python terms
    (`verilocc.semantics.terms`), in which two terms are the same term exactly when they are
    the same object."""

    def __init__(self, terms: TermTable | None = None) -> None:
        self.terms = terms if terms is not None else TermTable()
        self._keys: dict[int, tuple[Instruction, OpKey]] = {}

    # --- the term constructors and comparisons ------------------------------------------
    def lane_const(self, name: str) -> Any:
        """A 16-bit symbol."""
        return self.terms.symbol(name, LANE_BITS)

    def token_const(self, name: str) -> Any:
        """A memory token symbol."""
        return self.terms.symbol(name, TOKEN_BITS)

    def const(self, v: int) -> Any:
        return self.terms.value(v, LANE_BITS)

    def fn_const(self, name: str, bits: int) -> Any:
        """An uninterpreted function of no argument."""
        return self.terms.symbol(name, bits)

    def fn_app(self, name: str, args: tuple[Any, ...], bits: int) -> Any:
        """The uninterpreted function `name` of 16-bit lanes, applied to `args`."""
        return self.terms.apply(name, args, bits)

    def extract(self, high: int, low: int, t: Any) -> Any:
        return self.terms.extract(high, low, t)

    def same(self, a: Any, b: Any) -> bool:
        """Whether two terms are the same term (syntactic identity)."""
        return a is b

    def equal(self, a: Any, b: Any) -> Any:
        """The assumption a = b."""
        return (a, b)

    # --- instructions ----------------------------------------------------------------------
    def key(self, ins: Instruction) -> OpKey:
        got = self._keys.get(id(ins))
        if got is None or got[0] is not ins:
            got = self._keys[id(ins)] = (ins, OpKey.of(ins))
        return got[1]

    def uninterpreted(self, ins: Instruction, inputs: Sequence[Any], def_widths: Sequence[int],
                      token: Any | None) -> tuple[list[list[Any]], Any | None]:
        """Results of an opcode with no interpretation, and the new memory token if it has effects."""
        key = self.key(ins)
        tok_args: tuple[Any, ...] = ()
        if token is not None:
            # Fold the memory token into the arguments as four 16-bit lanes.
            tok_args = tuple(self.extract(16 * k + 15, 16 * k, token) for k in range(4))
        full = tok_args + tuple(inputs)
        outs: list[list[Any]] = []
        for j, width in enumerate(def_widths):
            lanes = []
            for k in range(width):
                name = f"{key.opcode}.{key.digest}.d{j}.l{k}"
                lanes.append(self.fn_app(name, full, LANE_BITS) if full else self.fn_const(name, LANE_BITS))
            outs.append(lanes)
        new_token = None
        if token is not None and has_side_effects(ins):
            name = f"{key.opcode}.{key.digest}.mem"
            new_token = self.fn_app(name, full, TOKEN_BITS) if full else self.fn_const(name, TOKEN_BITS)
        return outs, new_token

    def interpret(self, ins: Instruction, inputs: Sequence[Sequence[Any]], def_widths: Sequence[int]) -> list[list[Any]] | None:
        """Results of an interpreted opcode, or None when the opcode is uninterpreted.

        `inputs` holds the lanes of each explicit register use in operand order (implicit
        uses such as $exec do not change a move's result in LLVM's model of registers).
        """
        op = ins.opcode
        if len(def_widths) != 1 or (op not in IMMEDIATE_MOVES and op not in _PURE_MOVES):
            return None
        width = def_widths[0]
        others = [o for o in ins.operands if o.kind != "reg"]
        if op in IMMEDIATE_MOVES and not inputs and len(others) == 1 and others[0].kind == "imm":
            lanes = _immediate_lanes(others[0].text, width)
            if lanes is not None:
                return [[self.const(x) for x in lanes]]
        if op in _PURE_MOVES and len(inputs) >= 1 and len(inputs[0]) == width and not others:
            return [list(inputs[0])]
        return None
