"""The concrete interpretation the equivalence layer tries before z3 (`verilocc.semantics.
interpretation`): what it refutes, z3 refutes too, and it satisfies the assumptions that
equate a location's values, so that wrong allocations are refuted without the solver."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verilocc.findings import Verdict
from verilocc.fuzz import mutations
from verilocc.mir.parser import read_module
from verilocc.semantics.interpretation import RandomInterpretation
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES

z3 = pytest.importorskip("z3")


def _terms(ctx: object, shape: list[int]) -> list[object]:
    """Bit-vector terms over symbols, constants, two uninterpreted functions, extraction and
    concatenation, built bottom-up from the integers of `shape`."""
    x = [z3.BitVec(f"x{i}", 8, ctx) for i in range(3)]
    f = z3.Function("f", z3.BitVecSort(8, ctx), z3.BitVecSort(8, ctx))
    g = z3.Function("g", z3.BitVecSort(8, ctx), z3.BitVecSort(8, ctx), z3.BitVecSort(8, ctx))
    # A function of another sort under the same name: a different function.
    f16 = z3.Function("f", z3.BitVecSort(16, ctx), z3.BitVecSort(8, ctx))
    out: list[object] = [*x, z3.BitVecVal(0, 8, ctx), z3.BitVecVal(5, 8, ctx)]
    for n in shape:
        a, b = out[n % len(out)], out[(n // 7) % len(out)]
        kind = n % 5
        if kind == 0:
            out.append(f(a))
        elif kind == 1:
            out.append(g(a, b))
        elif kind == 2:
            out.append(f16(z3.Concat(a, b)))
        elif kind == 3:
            out.append(z3.Concat(z3.Extract(3, 0, a), z3.Extract(7, 4, b)))
        else:
            out.append(g(b, a))
    return out


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100)), max_size=4),
       st.tuples(st.integers(0, 100), st.integers(0, 100)), st.integers(0, 3))
def test_what_the_interpretation_refutes_z3_refutes(shape: list[int], equal: list[tuple[int, int]],
                                                    claim: tuple[int, int], salt: int) -> None:
    ctx = z3.Context()
    terms = _terms(ctx, shape)
    pairs = [(terms[a % len(terms)], terms[b % len(terms)]) for a, b in equal]
    lhs, rhs = terms[claim[0] % len(terms)], terms[claim[1] % len(terms)]
    interp = RandomInterpretation(z3, str(salt), pairs)
    assumptions = [a == b for a, b in pairs]
    if interp.holds(assumptions) and interp.value(lhs == rhs) is False:
        s = z3.Solver(ctx=ctx)
        s.add(*assumptions, lhs != rhs)
        assert s.check() == z3.sat


def test_assumed_equalities_are_satisfied_where_random_values_break_them() -> None:
    ctx = z3.Context()
    f = z3.Function("f", z3.BitVecSort(16, ctx), z3.BitVecSort(16, ctx))
    x, y, z = (z3.BitVec(n, 16, ctx) for n in "xyz")
    zero = z3.BitVecVal(0, 16, ctx)
    pairs = [(zero, x), (f(x), y), (f(zero), z)]
    assumptions = [a == b for a, b in pairs]
    interp = RandomInterpretation(z3, "0", pairs)
    assert interp.holds(assumptions)
    assert interp.value(x) == 0 and interp.value(y) == interp.value(z)
    assert not RandomInterpretation(z3, "0").holds(assumptions)


def test_a_wrong_allocation_is_refuted_without_the_solver() -> None:
    """An allocation whose locations hold values known equal (so that the claims rest on
    assumptions) is refuted by the interpretation, not by z3."""
    base = FIXTURES / "llvm" / "16" / "gfx90a" / "sgemm_64x64_t4x4"
    pre, post = read_module(f"{base}.pre.mir"), read_module(f"{base}.post.mir")
    mutant = mutations.change_opcode(post, random.Random("fixtures/llvm/16/gfx90a/sgemm_64x64_t4x4/change-opcode/0"))
    assert mutant is not None
    report = verify_modules(mutant.module, pre, Options())
    assert report.verdict is Verdict.REJECTED
    stats = report.functions[0].stats
    assert stats.get("refuted_by") == "random interpretation", stats
