"""Layer 1 in a child process (`Options.fork`, the command line's way) says exactly what it
says in the verifying process: the same findings in the same order, notes, layers, verdict and
statistics (but for times), on correct pairs, on seeded mutants of them (rejections, with
findings of every layer) and on pairs with an LLVM liveness anomaly (where layer 1 runs again
after value flow); and z3 in a process of its own (`solver_process`) answers as z3 here. Each
runs in a fresh interpreter: a process with another thread (a pytest-xdist worker) forks no
child for layer 1 and starts no solver process."""

from __future__ import annotations

import inspect
import os
import random
import subprocess
import sys

import pytest

from verilocc.findings import Report
from verilocc.fuzz.mutations import OPERATORS
from verilocc.mir.model import Module
from verilocc.mir.parser import read_module
from verilocc.smt import solver

from .conftest import EXAMPLES, FIXTURES, ROOT

PAIRS = [EXAMPLES / "gfx90a" / "softmax_row", FIXTURES / "fidelity" / "packed-broadcast.llvm22.gfx90a",
         FIXTURES / "fidelity" / "sdiv3264.llvm19.gfx1100"]


def _said(report: Report) -> list[object]:
    return [(fr.name, fr.verdict, fr.layers, fr.notes, fr.findings,
             {k: v for k, v in fr.stats.items() if not k.startswith(("seconds", "solver_seconds"))})
            for fr in report.functions]


def _modules(base: os.PathLike[str]) -> list[tuple[Module, Module]]:
    post, pre = read_module(f"{base}.post.mir"), read_module(f"{base}.pre.mir")
    out = [(post, pre)]
    for name in sorted(OPERATORS):
        m = OPERATORS[name](post, random.Random(f"{base}/{name}"))
        if m is not None:
            out.append((m.module, pre))
    return out


def _in_a_fresh_interpreter(script: str, *args: str) -> str:
    """Run `script` (with `_said` and `_modules` defined) in a new interpreter, where no other
    thread runs (a pytest-xdist worker has some, and a process with threads forks no child
    here); its standard output."""
    helpers = "\n".join(inspect.getsource(f) for f in (_said, _modules))
    head = ("from __future__ import annotations\nimport os, random\nfrom verilocc.findings import Report\n"
            "from verilocc.fuzz.mutations import OPERATORS\nfrom verilocc.mir.model import Module\n"
            "from verilocc.mir.parser import read_module\n")
    run = subprocess.run([sys.executable, "-c", head + helpers + script, *args], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    return run.stdout


LAYER1_SCRIPT = r'''
import os, sys
from verilocc import verify
from verilocc.verify import Options, verify_modules

verify.FORK_INSTRUCTIONS = 0
forks = 0
real_fork = os.fork

def counting_fork():
    global forks
    pid = real_fork()
    forks += pid != 0
    return pid

os.fork = counting_fork
rejected = 0
for post, pre in _modules(sys.argv[1]):
    here = verify_modules(post, pre, Options())
    before = forks
    there = verify_modules(post, pre, Options(fork=True))
    assert forks == before + len(there.functions)  # every function's layer 1 ran in a child
    assert _said(there) == _said(here)
    rejected += here.verdict.name == "REJECTED"
print(rejected)
'''


@pytest.mark.skipif(not hasattr(os, "fork") or solver.processors() < 2, reason="needs fork and two processors")
@pytest.mark.parametrize("base", PAIRS, ids=lambda p: p.name)
def test_layer1_in_a_child_says_the_same(base: os.PathLike[str]) -> None:
    assert int(_in_a_fresh_interpreter(LAYER1_SCRIPT, str(base))) > 0  # the mutants include rejections


SOLVER_PROCESS_SCRIPT = r'''
import io, os, sys
from contextlib import redirect_stdout
from verilocc.cli import main
from verilocc.smt import solver
from verilocc.verify import Options, verify_modules

pairs = [(post, pre) for base in sys.argv[1:] for post, pre in _modules(base)]
pigeons = "".join(f"(declare-const x{i} Int)(assert (and (<= 0 x{i}) (< x{i} 6)))" for i in range(7))
queries = [("(declare-const a Int)(declare-const b Int)(assert (= (+ a b) 7))(assert (> a 5))(check-sat)",
            dict(want_model=True)),
           (pigeons + "(assert (distinct " + " ".join(f"x{i}" for i in range(7)) + "))(check-sat)", {}),
           (pigeons + "(assert (distinct " + " ".join(f"x{i}" for i in range(7)) + "))(check-sat)",
            dict(rlimit=200))]
def no_process_left():
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False

with redirect_stdout(io.StringIO()) as out:  # the command line starts a solver process of its own
    code = main(["verify", sys.argv[1] + ".post.mir", "--pre", sys.argv[1] + ".pre.mir"])
assert code == 0 and out.getvalue().startswith("VERIFIED"), out.getvalue()
assert "z3" not in sys.modules and "rich" not in sys.modules, "decided here, or rich imported for a pipe"
assert solver._SERVER is None and no_process_left()
with solver.solver_process():
    assert solver._SERVER is not None
    answers = [solver.check_z3(text, **kw) for text, kw in queries]
    assert "z3" not in sys.modules
    # What is not a query of this user gets no answer, and the process answers the next one.
    assert solver._ask_server(solver._SERVER, {"smtlib": "(check-sat)"}) is None
    if os.getuid() == 0:  # another user (as root: nobody) gets no answer either
        pid = os.fork()
        if pid == 0:
            os.setuid(65534)
            os._exit(0 if solver._ask_server(solver._SERVER, dict(smtlib=queries[0][0], timeout_s=60.0,
                     rlimit=solver.DEFAULT_RLIMIT, seed=0, want_model=False)) is None else 1)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert solver.check_z3(queries[1][0]).answer.value == "unsat" and "z3" not in sys.modules
    there = [_said(verify_modules(post, pre, Options(fork=True))) for post, pre in pairs]
assert solver._SERVER is None and no_process_left()
here = [_said(verify_modules(post, pre, Options(fork=True))) for post, pre in pairs]
assert there == here
for (text, kw), got in zip(queries, answers):
    want = solver._check_z3_here(text, timeout_s=60.0, rlimit=kw.get("rlimit", solver.DEFAULT_RLIMIT),
                                 seed=0, want_model=kw.get("want_model", False))
    assert (got.answer, got.model, got.reason) == (want.answer, want.model, want.reason), (got, want)
assert [a.answer.value for a in answers] == ["sat", "unsat", "unknown"]
print("ok", len(pairs))
'''


@pytest.mark.skipif(not hasattr(os, "fork") or solver.processors() < 2 or sys.platform != "linux",
                    reason="needs fork, two processors and Linux")
def test_solver_process_says_the_same() -> None:
    """z3 in a process of its own (`solver_process`, the command line's way) gives the same
    answers, models and findings as z3 here, and leaves no process behind; `verilocc verify`
    on a correct pair then imports neither z3 nor, printing to a pipe, rich. (In a fresh
    interpreter: the solver process starts only where no other thread runs.)"""
    bases = [str(EXAMPLES / "gfx90a" / "vadd"), str(PAIRS[0])]
    out = _in_a_fresh_interpreter(SOLVER_PROCESS_SCRIPT, *bases)
    assert out.split() == ["ok", str(sum(len(_modules(b)) for b in bases))]
