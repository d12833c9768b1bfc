"""The equivalence executor's terms: hash-consed in Python, turned into z3 terms on demand.

The executor builds a term for every lane both programs compute, and almost every
obligation it makes is discharged because its two sides are the same term. So terms are
plain Python objects, made once per structure (`TermTable.make` returns the existing object
for a structure it has seen), and two terms are the same term exactly when they are the same
object. Only the obligations that are not discharged that way, and the assumptions they rest
on, are translated into z3 (`ToZ3`), where z3's own hash-consing gives one z3 term per
structure: the translation of a term is the z3 term the same construction would have made
directly.

The term language is the executor's (`verilocc.semantics.ops`): 16-bit and 64-bit symbols,
bit-vector constants, applications of uninterpreted functions over 16-bit lanes, and
extraction of bits from a term.
"""

from __future__ import annotations

from typing import Any

SYMBOL, VALUE, APPLY, EXTRACT = "sym", "val", "app", "ext"


class Term:
    """One node: `op` is SYMBOL (name), VALUE (name is the int), APPLY (name is the function,
    `args` its arguments) or EXTRACT (name is (high bit, low bit), `args` the one operand);
    `bits` is the width of its value. Equality and hashing are by identity: the table makes
    one object per structure."""

    __slots__ = ("op", "name", "args", "bits")

    def __init__(self, op: str, name: Any, args: tuple[Term, ...], bits: int) -> None:
        self.op = op
        self.name = name
        self.args = args
        self.bits = bits

    def __repr__(self) -> str:
        if self.op == APPLY:
            return f"{self.name}({', '.join(map(repr, self.args))})"
        if self.op == EXTRACT:
            return f"{self.args[0]!r}[{self.name[0]}:{self.name[1]}]"
        return str(self.name)


class TermTable:
    """Makes terms, one object per structure."""

    def __init__(self) -> None:
        self._made: dict[tuple[object, ...], Term] = {}

    def make(self, op: str, name: Any, args: tuple[Term, ...], bits: int) -> Term:
        key = (op, name, args, bits)
        t = self._made.get(key)
        if t is None:
            t = self._made[key] = Term(op, name, args, bits)
        return t

    def symbol(self, name: str, bits: int) -> Term:
        return self.make(SYMBOL, name, (), bits)

    def value(self, v: int, bits: int) -> Term:
        return self.make(VALUE, v, (), bits)

    def apply(self, fn: str, args: tuple[Term, ...], bits: int) -> Term:
        return self.make(APPLY, fn, args, bits)

    def extract(self, high: int, low: int, t: Term) -> Term:
        return self.make(EXTRACT, (high, low), (t,), high - low + 1)


class ToZ3:
    """Translates terms into one z3 context, each term once.

    A function symbol becomes `z3.Function(name, lane, ..., lane, result)`: every argument of
    an uninterpreted function is a 16-bit lane (`verilocc.semantics.ops` folds a memory token
    into four lanes by extraction before it passes one)."""

    def __init__(self, z3: Any, ctx: Any) -> None:
        self.z3 = z3
        self.ctx = ctx
        self._sorts: dict[int, Any] = {}
        self._funcs: dict[tuple[str, int, int], Any] = {}
        self._done: dict[int, Any] = {}

    def sort(self, bits: int) -> Any:
        s = self._sorts.get(bits)
        if s is None:
            s = self._sorts[bits] = self.z3.BitVecSort(bits, self.ctx)
        return s

    def __call__(self, term: Term) -> Any:
        done = self._done
        got = done.get(id(term))
        if got is not None:
            return got[1]
        stack = [term]
        while stack:
            t = stack[-1]
            if id(t) in done:
                stack.pop()
                continue
            missing = [a for a in t.args if id(a) not in done]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            done[id(t)] = (t, self._make(t))  # the term is kept so that its id stays its own
        return done[id(term)][1]

    def _make(self, t: Term) -> Any:
        z3 = self.z3
        if t.op == SYMBOL:
            sym = z3.Z3_mk_string_symbol(self.ctx.ref(), t.name)
            return z3.BitVecRef(z3.Z3_mk_const(self.ctx.ref(), sym, self.sort(t.bits).ast), self.ctx)
        if t.op == VALUE:
            return z3.BitVecVal(t.name, t.bits, self.ctx)
        args = [self._done[id(a)][1] for a in t.args]
        if t.op == EXTRACT:
            return z3.Extract(t.name[0], t.name[1], args[0])
        key = (t.name, len(args), t.bits)
        f = self._funcs.get(key)
        if f is None:
            f = self._funcs[key] = z3.Function(t.name, *([self.sort(16)] * len(args)), self.sort(t.bits))
        arr = (z3.Ast * len(args))()
        for i, a in enumerate(args):
            arr[i] = a.as_ast()
        return z3.BitVecRef(z3.Z3_mk_app(self.ctx.ref(), f.ast, len(args), arr), self.ctx)
