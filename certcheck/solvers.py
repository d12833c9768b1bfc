"""Decide one SMT-LIB obligation with cvc5 and with z3 (their Python APIs, fresh solvers).

An obligation may only set the logic or an info, declare and define sorts, functions and
constants, assert, and end with exactly one `(check-sat)`: cvc5's parser names each command,
and any other refuses the obligation before z3 reads it. Each solver parses the text itself.
"""

from __future__ import annotations

ALLOWED = frozenset({"set-logic", "set-info", "declare-sort", "declare-fun", "declare-const", "define-fun",
                     "define-sort", "assert", "check-sat"})


def z3_answer(text: str, timeout_s: float) -> str:
    import z3

    ctx = z3.Context()
    try:
        assertions = z3.parse_smt2_string(text, ctx=ctx)
    except z3.Z3Exception as e:
        return f"error ({' '.join(str(e).split())[:80]})"
    s = z3.Solver(ctx=ctx)
    s.set("timeout", max(1, int(timeout_s * 1000)))
    s.add(assertions)
    r = s.check()
    return "unsat" if r == z3.unsat else "sat" if r == z3.sat else "unknown"


def cvc5_answer(text: str, timeout_s: float) -> str:
    import cvc5

    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("tlimit-per", str(max(1, int(timeout_s * 1000))))
    symbols = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, symbols)
    answer = "error (no check-sat)"
    checks = 0
    try:
        parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "obligation")
        while True:
            cmd = parser.nextCommand()
            if cmd.isNull():
                break
            name = cmd.getCommandName()
            if checks:
                return f"error (`{name}` after check-sat)"
            if name not in ALLOWED:
                return f"error (command `{name}` is not allowed in an obligation)"
            if name == "check-sat":
                checks += 1
                r = solver.checkSat()
                answer = "unsat" if r.isUnsat() else "sat" if r.isSat() else "unknown"
            else:
                cmd.invoke(solver, symbols)
    except RuntimeError as e:
        return f"error ({' '.join(str(e).split())[:80]})"
    return answer


def versions() -> str:
    import cvc5
    import z3

    return f"z3 {z3.get_version_string()}, cvc5 {cvc5.__version__}"
