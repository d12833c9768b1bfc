"""Decide one SMT-LIB obligation with z3 and with cvc5 (their Python APIs, fresh solvers).

An obligation may only set the logic or an info, declare and define sorts, functions and
constants, assert, and end with exactly one `(check-sat)`. Each solver parses the text itself.
"""

from __future__ import annotations

import re

ALLOWED = frozenset({"set-logic", "set-info", "declare-sort", "declare-fun", "declare-const", "define-fun",
                     "define-sort", "assert", "check-sat"})


def commands_ok(text: str) -> str | None:
    """Why the script has a command outside ALLOWED or not one final `(check-sat)`, or None.
    Commands are the top-level `(name`; comments and string literals are skipped."""
    depth, names, i, n = 0, [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == ";":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == '"' or ch == "|":
            j = text.find(ch, i + 1)
            if j < 0:
                return "an unterminated literal"
            i = j + 1
            continue
        if ch == "(":
            if depth == 0:
                m = re.match(r"\(\s*([a-z-]+)", text[i:i + 40])
                names.append(m.group(1) if m else "?")
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return "unbalanced parentheses"
        i += 1
    if depth:
        return "unbalanced parentheses"
    bad = [c for c in names if c not in ALLOWED]
    if bad:
        return f"command `{bad[0]}` is not allowed in an obligation"
    if names.count("check-sat") != 1 or names[-1] != "check-sat":
        return "not exactly one final (check-sat)"
    return None


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
    try:
        parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "obligation")
        while True:
            cmd = parser.nextCommand()
            if cmd.isNull():
                break
            if cmd.getCommandName() == "check-sat":
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
