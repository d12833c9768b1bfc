"""Layer 1 in a child process (`Options.fork`, the command line's way) says exactly what it
says in the verifying process: the same findings in the same order, notes, layers, verdict and
statistics (but for times), on correct pairs, on seeded mutants of them (rejections, with
findings of every layer) and on pairs with an LLVM liveness anomaly (where layer 1 runs again
after value flow)."""

from __future__ import annotations

import os
import random
import threading

import pytest

from verilocc import verify
from verilocc.findings import Report
from verilocc.fuzz.mutations import OPERATORS
from verilocc.mir.model import Module
from verilocc.mir.parser import read_module
from verilocc.verify import Options, verify_modules

from .conftest import EXAMPLES, FIXTURES

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


@pytest.mark.skipif(not hasattr(os, "fork") or verify._processors() < 2, reason="needs fork and two processors")
@pytest.mark.parametrize("base", PAIRS, ids=lambda p: p.name)
def test_layer1_in_a_child_says_the_same(base: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if threading.active_count() > 1:
        pytest.skip("another thread runs in this process: layer 1 is not forked here")
    monkeypatch.setattr(verify, "FORK_INSTRUCTIONS", 0)
    forks = 0
    real_fork = os.fork

    def counting_fork() -> int:
        nonlocal forks
        pid = real_fork()
        forks += pid != 0
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    rejected = 0
    for post, pre in _modules(base):
        here = verify_modules(post, pre, Options())
        before = forks
        there = verify_modules(post, pre, Options(fork=True))
        assert forks == before + len(there.functions)  # every function's layer 1 ran in a child
        assert _said(there) == _said(here)
        rejected += here.verdict.name == "REJECTED"
    assert rejected  # the mutants include rejections
