"""The one narrow layer that talks to SMT solvers.

Every query is SMT-LIB 2 text (the same text a certificate stores), decided with a fixed
seed, a deterministic resource limit and a wall-clock timeout. The answer is Sat, Unsat or
Unknown; Unknown is its own answer and never counts as either of the others. A model is
turned into plain Python integers before it leaves this module.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT_S = 60.0
# z3's resource counter is deterministic across machines and always honoured, unlike its
# wall-clock timeout (seen not to stop some queries); it is the hard limit.
DEFAULT_RLIMIT = 200_000_000
DEFAULT_SEED = 0


class Answer(enum.Enum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


@dataclass
class Outcome:
    answer: Answer
    solver: str
    seconds: float
    reason: str = ""
    model: dict[str, int] = field(default_factory=dict)


def z3_version() -> str:
    import z3

    return str(z3.get_version_string())


def check_z3(
    smtlib: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rlimit: int = DEFAULT_RLIMIT,
    seed: int = DEFAULT_SEED,
    want_model: bool = False,
) -> Outcome:
    import z3

    start = time.perf_counter()
    ctx = z3.Context()
    try:
        assertions = z3.parse_smt2_string(smtlib, ctx=ctx)
    except z3.Z3Exception as e:
        return Outcome(Answer.UNKNOWN, "z3", time.perf_counter() - start, f"z3 rejected the query: {e}")
    s = z3.Solver(ctx=ctx)
    s.set("random_seed", seed)
    s.set("timeout", max(1, int(timeout_s * 1000)))
    s.set("rlimit", rlimit)
    s.add(assertions)
    try:
        r = s.check()
    except z3.Z3Exception as e:  # interrupted or out of resources
        return Outcome(Answer.UNKNOWN, "z3", time.perf_counter() - start, str(e))
    elapsed = time.perf_counter() - start
    if r == z3.sat:
        model: dict[str, int] = {}
        if want_model:
            m = s.model()
            for d in m.decls():
                v = m[d]
                if z3.is_bv_value(v) or z3.is_int_value(v):
                    model[d.name()] = v.as_long()  # type: ignore[union-attr]
                elif z3.is_true(v) or z3.is_false(v):
                    model[d.name()] = int(z3.is_true(v))
        return Outcome(Answer.SAT, "z3", elapsed, model=model)
    if r == z3.unsat:
        return Outcome(Answer.UNSAT, "z3", elapsed)
    return Outcome(Answer.UNKNOWN, "z3", elapsed, s.reason_unknown())


def check_z3_terms(
    z3: Any,
    ctx: Any,
    assertions: list[Any],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rlimit: int = DEFAULT_RLIMIT,
    seed: int = DEFAULT_SEED,
) -> tuple[Outcome, Callable[[Any], int | bool | None] | None]:
    """Decide z3 terms built in `ctx` (by a layer that constructs its query as terms, not text)
    under the same seed and limits as `check_z3`. On Sat, also a valuation of the model that
    turns any term into a plain Python value (bit-vector -> int, Boolean -> bool, else None)."""
    start = time.perf_counter()
    s = z3.Solver(ctx=ctx)
    s.set("random_seed", seed)
    s.set("timeout", max(1, int(timeout_s * 1000)))
    s.set("rlimit", rlimit)
    s.add(assertions)
    r = s.check()
    elapsed = time.perf_counter() - start
    if r == z3.unsat:
        return Outcome(Answer.UNSAT, "z3", elapsed), None
    if r != z3.sat:
        return Outcome(Answer.UNKNOWN, "z3", elapsed, s.reason_unknown()), None
    model = s.model()

    def value(t: Any) -> int | bool | None:
        v = model.eval(t, model_completion=True)
        return v.as_long() if z3.is_bv_value(v) else z3.is_true(v) if z3.is_bool(v) else None

    return Outcome(Answer.SAT, "z3", elapsed), value
