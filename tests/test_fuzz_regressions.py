"""Pairs the fuzzer found and minimised (tests/fixtures/fuzz/): each stays fixed.

A pair whose note (`<name>.txt`) says `unsound` is a wrong allocation the verifier once
VERIFIED: it must not be VERIFIED. Every other pair is a correct allocation (the concrete
interpreter agrees with its program) that the verifier once rejected: it must be VERIFIED;
a note starting with `open` marks one not fixed yet (expected to fail).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verilocc.findings import Verdict

from .conftest import FIXTURES, verify_pair

PAIRS = sorted((FIXTURES / "fuzz").glob("*.post.mir"))


@pytest.mark.parametrize("post", PAIRS, ids=[p.name[: -len(".post.mir")] for p in PAIRS])
def test_fuzz_regression(post: Path) -> None:
    pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
    note = post.with_name(post.name.replace(".post.mir", ".txt"))
    text = note.read_text() if note.exists() else ""
    if text.startswith("open"):
        pytest.xfail(text.strip())  # a known, undiagnosed false rejection: next to fix
    unsound = text.startswith("unsound")
    verdict = verify_pair(post, pre).verdict
    if unsound:
        assert verdict is not Verdict.VERIFIED
    else:
        assert verdict is Verdict.VERIFIED
