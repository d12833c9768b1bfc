"""A concrete valuation of the equivalence executor's terms, tried before the solver.

Opcodes are uninterpreted, so one interpretation under which the assumptions hold and an
obligation fails refutes the claim as a solver's model would.
"""

from __future__ import annotations

import hashlib
from typing import Any


class RandomInterpretation:
    """A concrete valuation of the executor's terms: every 16-bit symbol and every
    uninterpreted function (an opcode's lane, a memory effect) is a fixed pseudo-random
    function of its name and arguments, derived from `salt`. Interpreted operations (bit-vector
    constants, extraction, equality, conjunction, negation) keep their meaning, so a term's
    value here is its value in one model of the theory: if the assumptions hold and an
    obligation is false, the obligation is refuted. Terms with other operations have no value
    (None), and then the solver decides."""

    def __init__(self, z3: Any, salt: str) -> None:
        self.z3 = z3
        self.salt = salt
        self.memo: dict[int, int | bool | None] = {}

    def _random(self, name: str, args: tuple[object, ...], bits: int) -> int:
        digest = hashlib.blake2b(f"{self.salt}|{name}|{args}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") & ((1 << bits) - 1)

    def holds(self, terms: list[Any]) -> bool:
        return all(self.value(t) is True for t in terms)

    def value(self, term: Any) -> int | bool | None:
        stack = [term]
        while stack:
            t = stack[-1]
            tid = t.get_id()
            if tid in self.memo:
                stack.pop()
                continue
            kids = t.children()
            missing = [c for c in kids if c.get_id() not in self.memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            args = [self.memo[c.get_id()] for c in kids]
            self.memo[tid] = None if any(a is None for a in args) else self._apply(t, args)
        return self.memo[term.get_id()]

    def _apply(self, t: Any, args: list[Any]) -> int | bool | None:
        z3 = self.z3
        if z3.is_bv_value(t):
            return t.as_long()
        if z3.is_true(t):
            return True
        if z3.is_false(t):
            return False
        kind = t.decl().kind()
        if kind == z3.Z3_OP_UNINTERPRETED and z3.is_bv(t):
            return self._random(t.decl().name(), tuple(args), t.size())
        if kind == z3.Z3_OP_EXTRACT:
            hi, lo = t.params()
            return (args[0] >> lo) & ((1 << (hi - lo + 1)) - 1)
        if kind == z3.Z3_OP_CONCAT:
            out = 0
            for a, c in zip(args, t.children()):
                out = (out << c.size()) | a
            return out
        if kind == z3.Z3_OP_EQ:
            return args[0] == args[1]
        if kind == z3.Z3_OP_AND:
            return all(args)
        if kind == z3.Z3_OP_OR:
            return any(args)
        if kind == z3.Z3_OP_NOT:
            return not args[0]
        return None
