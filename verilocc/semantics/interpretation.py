"""A concrete valuation of the equivalence executor's terms, tried before the solver.

Opcodes are uninterpreted, so one interpretation under which the assumptions hold and an
obligation fails refutes the claim as a solver's model would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any


class RandomInterpretation:
    """A concrete valuation of the executor's terms. Every 16-bit symbol and every
    uninterpreted function (an opcode's lane, a memory effect) is a function of its name and
    arguments, defined lazily: the first application evaluated at some argument values fixes
    the function there, and every later application at the same values gets the same value.
    That first value is pseudo-random (derived from `salt`), unless `equal` (the pairs of terms
    the assumptions equate) puts the term in a class with a constant or with a term valued
    already: then it takes that value, so that the assumptions can hold. Interpreted operations
    (bit-vector constants, extraction, concatenation, equality, conjunction, disjunction,
    negation) keep their meaning. So a term's value here is its value in one model of the
    theory, whatever `equal` says: if the assumptions hold (`holds` evaluates them) and an
    obligation is false, the obligation is refuted. Terms with other operations have no value
    (None), and then the solver decides."""

    def __init__(self, z3: Any, salt: str, equal: Sequence[tuple[Any, Any]] = ()) -> None:
        self.z3 = z3
        self.salt = salt
        self.memo: dict[int, int | bool | None] = {}
        self.table: dict[tuple[int, tuple[object, ...]], int] = {}  # the functions, where defined
        self.parent: dict[int, int] = {}  # union-find over the ids of terms `equal` relates
        self.class_value: dict[int, int] = {}  # per class (its root), the value a term of it has
        for a, b in equal:
            ra, rb = self._find(a.get_id()), self._find(b.get_id())
            if ra != rb:
                self.parent[ra] = rb
        self.applied: dict[int, list[Any]] = {}  # per class, its terms that apply a function to arguments
        self.resolving: set[int] = set()  # classes whose applications are being evaluated
        for pair in equal:
            for c in pair:
                root = self._find(c.get_id())
                if z3.is_bv_value(c):  # a class with a constant takes its value
                    self.class_value.setdefault(root, c.as_long())
                elif c.num_args():
                    self.applied.setdefault(root, []).append(c)

    def _find(self, tid: int) -> int:
        root = tid
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while tid != root:  # path compression
            self.parent[tid], tid = root, self.parent[tid]
        return root

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
            return self._joined(t, t.as_long())
        if z3.is_true(t):
            return True
        if z3.is_false(t):
            return False
        kind = t.decl().kind()
        if kind == z3.Z3_OP_UNINTERPRETED and z3.is_bv(t):
            decl = t.decl()
            key = (decl.get_id(), tuple(args))  # the declaration: its name, argument and result sorts
            got = self.table.get(key)
            if got is None:
                known = self._class_value(t)
                got = self.table.get(key)  # evaluating the class may have valued this application
                if got is None:
                    got = known if known is not None else self._random(decl.name(), key[1], t.size())
                    self.table[key] = got
            return self._joined(t, got)
        if kind == z3.Z3_OP_EXTRACT:
            hi, lo = t.params()
            return self._joined(t, (args[0] >> lo) & ((1 << (hi - lo + 1)) - 1))
        if kind == z3.Z3_OP_CONCAT:
            out = 0
            for a, c in zip(args, t.children()):
                out = (out << c.size()) | a
            return self._joined(t, out)
        if kind == z3.Z3_OP_EQ:
            return args[0] == args[1]
        if kind == z3.Z3_OP_AND:
            return all(args)
        if kind == z3.Z3_OP_OR:
            return any(args)
        if kind == z3.Z3_OP_NOT:
            return not args[0]
        return None

    def _class_value(self, t: Any) -> int | None:
        """The value of the class of `t`, if one is known. A symbol's class first evaluates its
        applications (`f(x)` with `x` valued): where two of them are one function at the same
        arguments, their classes must agree, which a random value for the symbol would break."""
        root = self._find(t.get_id())
        if root not in self.class_value and not t.num_args() and root not in self.resolving:
            self.resolving.add(root)
            for a in self.applied.get(root, ()):
                self.value(a)
                if root in self.class_value:
                    break
            self.resolving.discard(root)
        return self.class_value.get(root)

    def _joined(self, t: Any, v: int) -> int:
        """`v`, the value of bit-vector term `t`, which its class takes if it has none yet."""
        self.class_value.setdefault(self._find(t.get_id()), v)
        return v
