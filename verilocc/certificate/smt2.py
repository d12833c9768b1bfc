"""Print z3 terms as SMT-LIB 2 text that z3 and cvc5 both parse.

z3's own `to_smt2()` is not portable: it prints unary `(and x)`, z3-specific let forms and
internal names. This printer knows a small, fixed set of operators (those the equivalence
layer builds: bit-vector constants and variables, uninterpreted functions, extract, concat,
equality, the Boolean connectives, ite; and the SMT-LIB bit-vector operators of the opcode
meanings an LLVM liveness anomaly's query uses, `verilocc.semantics.bitvector`) and refuses
anything else (z3's internal division forms among them), so a certificate never
holds text whose meaning differs between solvers. Every symbol is declared; a term used more
than once is named once with `define-fun`, so the text grows linearly with the term DAG;
names are given in a deterministic order, so the same query prints the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from verilocc.certificate.obligation import CertificateError

_SIMPLE = re.compile(r"[A-Za-z~!@$%^&*_+=<>.?/-][A-Za-z0-9~!@$%^&*_+=<>.?/-]*")
_RESERVED = frozenset({"_", "!", "as", "let", "exists", "forall", "match", "par", "assert", "check-sat",
                       "declare-const", "declare-fun", "define-fun", "true", "false", "not", "and", "or",
                       "ite", "distinct", "extract", "concat", "BINARY", "DECIMAL", "HEXADECIMAL",
                       "NUMERAL", "STRING"})


def symbol(name: str) -> str:
    """An SMT-LIB symbol for `name`: simple when it can be, quoted otherwise."""
    if _SIMPLE.fullmatch(name) and name not in _RESERVED:
        return name
    if "|" in name or "\\" in name:
        raise CertificateError(f"symbol {name!r} cannot be written in SMT-LIB")
    return f"|{name}|"


class Printer:
    """Collects declarations and shared subterms of the terms it prints."""

    def __init__(self, z3: Any) -> None:
        self.z3 = z3
        self.decls: dict[str, str] = {}  # symbol -> declaration
        self.defs: list[str] = []
        self.text: dict[int, str] = {}  # AST id -> text (a name for shared terms)
        self.count = 0
        self._names_in_use: set[str] = set()

    def sort(self, s: Any) -> str:
        z3 = self.z3
        k = s.kind()
        if k == z3.Z3_BOOL_SORT:
            return "Bool"
        if k == z3.Z3_BV_SORT:
            return f"(_ BitVec {s.size()})"
        raise CertificateError(f"sort {s} has no portable SMT-LIB form here")

    def _refcounts(self, roots: Sequence[Any]) -> dict[int, int]:
        refs: dict[int, int] = {}
        stack = list(roots)
        while stack:
            t = stack.pop()
            i = t.get_id()
            refs[i] = refs.get(i, 0) + 1
            if refs[i] == 1 and self.z3.is_app(t):
                stack.extend(t.children())
        return refs

    def print_all(self, roots: Sequence[Any]) -> list[str]:
        """SMT-LIB text of each root; declarations and definitions are kept for `preamble`."""
        z3 = self.z3
        refs = self._refcounts(roots)
        out: list[str] = []
        for root in roots:
            stack: list[tuple[Any, bool]] = [(root, False)]
            while stack:
                t, ready = stack.pop()
                i = t.get_id()
                if i in self.text:
                    continue
                if not z3.is_app(t):
                    raise CertificateError(f"term {t} (a quantifier or variable) has no portable form here")
                kids = t.children()
                if not ready:
                    stack.append((t, True))
                    stack.extend((c, False) for c in reversed(kids) if c.get_id() not in self.text)
                    continue
                body = self._app(t, [self.text[c.get_id()] for c in kids])
                if kids and refs.get(i, 0) > 1:
                    self.count += 1
                    name = f"t!{self.count}"
                    self.defs.append(f"(define-fun {name} () {self.sort(t.sort())} {body})")
                    body = name
                self.text[i] = body
            out.append(self.text[root.get_id()])
        return out

    def _app(self, t: Any, args: list[str]) -> str:
        z3 = self.z3
        d = t.decl()
        k = d.kind()
        if k == z3.Z3_OP_UNINTERPRETED:
            name = symbol(d.name())
            dom = " ".join(self.sort(d.domain(j)) for j in range(d.arity()))
            decl = f"(declare-fun {name} ({dom}) {self.sort(d.range())})"
            if self.decls.setdefault(name, decl) != decl:
                raise CertificateError(f"symbol {name} is used with two signatures")
            return name if not args else f"({name} {' '.join(args)})"
        if k == z3.Z3_OP_BNUM:
            return f"(_ bv{t.as_long()} {t.size()})"
        if k == z3.Z3_OP_TRUE:
            return "true"
        if k == z3.Z3_OP_FALSE:
            return "false"
        if k == z3.Z3_OP_EXTRACT:
            hi, lo = d.params()
            return f"((_ extract {hi} {lo}) {args[0]})"
        if k in (z3.Z3_OP_SIGN_EXT, z3.Z3_OP_ZERO_EXT, z3.Z3_OP_REPEAT, z3.Z3_OP_ROTATE_LEFT,
                 z3.Z3_OP_ROTATE_RIGHT):
            name = {z3.Z3_OP_SIGN_EXT: "sign_extend", z3.Z3_OP_ZERO_EXT: "zero_extend", z3.Z3_OP_REPEAT: "repeat",
                    z3.Z3_OP_ROTATE_LEFT: "rotate_left", z3.Z3_OP_ROTATE_RIGHT: "rotate_right"}[k]
            return f"((_ {name} {d.params()[0]}) {args[0]})"
        simple = {z3.Z3_OP_EQ: "=", z3.Z3_OP_NOT: "not", z3.Z3_OP_ITE: "ite", z3.Z3_OP_CONCAT: "concat",
                  z3.Z3_OP_DISTINCT: "distinct", z3.Z3_OP_IMPLIES: "=>", **_bv_ops(z3)}
        if k in simple:
            return f"({simple[k]} {' '.join(args)})"
        if k in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            # SMT-LIB's and/or take at least two arguments (cvc5 enforces it).
            if not args:
                return "true" if k == z3.Z3_OP_AND else "false"
            if len(args) == 1:
                return args[0]
            return f"({'and' if k == z3.Z3_OP_AND else 'or'} {' '.join(args)})"
        raise CertificateError(f"operator {d.name()} has no portable SMT-LIB form here")

    def preamble(self) -> list[str]:
        return [self.decls[k] for k in sorted(self.decls)] + self.defs


def _bv_ops(z3: Any) -> dict[int, str]:
    """z3 operator kind -> SMT-LIB name, for the bit-vector operators of QF_BV (those that
    chain, bvand/bvor/bvxor/bvadd/bvmul, are left-associative in SMT-LIB as in z3)."""
    names = {"BAND": "bvand", "BOR": "bvor", "BXOR": "bvxor", "BNOT": "bvnot", "BNAND": "bvnand", "BNOR": "bvnor",
             "BXNOR": "bvxnor", "BNEG": "bvneg", "BADD": "bvadd", "BSUB": "bvsub", "BMUL": "bvmul",
             "BUDIV": "bvudiv", "BSDIV": "bvsdiv", "BUREM": "bvurem", "BSREM": "bvsrem", "BSMOD": "bvsmod",
             "BSHL": "bvshl", "BLSHR": "bvlshr", "BASHR": "bvashr", "ULT": "bvult", "ULEQ": "bvule", "UGT": "bvugt",
             "UGEQ": "bvuge", "SLT": "bvslt", "SLEQ": "bvsle", "SGT": "bvsgt", "SGEQ": "bvsge", "BCOMP": "bvcomp"}
    return {getattr(z3, f"Z3_OP_{k}"): v for k, v in names.items()}


def query_text(z3: Any, assertions: Sequence[Any], logic: str, header: Sequence[str] = ()) -> str:
    """A complete SMT-LIB 2 script: `assertions` conjoined, then `(check-sat)`."""
    p = Printer(z3)
    body = p.print_all(assertions)
    lines = [f"; {h}" for h in header]
    lines.append(f"(set-logic {logic})")
    lines.extend(p.preamble())
    lines.extend(f"(assert {b})" for b in body)
    lines.append("(check-sat)")
    return "\n".join(lines) + "\n"
