"""LLVM's own allocations are correct by assumption: every corpus pair must be VERIFIED, by every
layer, on LLVM 19 output (the shared corpus and our gfx908/gfx950/gfx1200 fixtures) and on
LLVM 22 output made here with llc-22.

The corpus and fixture pairs are verified once, by `tests/test_snapshot.py`, which requires the
verifier to say of each what `tests/fixtures/snapshot/findings.json` records; here the record
must say VERIFIED with no error (a VERIFIED verdict means every layer ran:
`verilocc.verify`). So a snapshot re-made after a change that turns one of LLVM's own
allocations into anything else fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from verilocc.findings import LAYERS, Verdict

from .conftest import CORPUS, FIXTURES, ROOT, corpus_pairs, fixture_pairs, have, verify_pair

SNAPSHOT = FIXTURES / "snapshot" / "findings.json"


def _assert_verified(post: Path, pre: Path) -> None:
    report = verify_pair(post, pre)
    errors = [f.message for f in report.findings if f.severity != "warning"]
    assert report.verdict is Verdict.VERIFIED, errors[:5]
    for fr in report.functions:
        assert fr.layers == list(LAYERS)


@cache
def _snapshot() -> dict[str, dict[str, object]]:
    return dict(json.loads(SNAPSHOT.read_text(encoding="utf-8")))


def _assert_recorded_verified(name: str) -> None:
    """The snapshot's record of pair `name` (the verifier's verdict, by `tests/test_snapshot.py`)
    is VERIFIED without an error."""
    entry = _snapshot().get(name)
    assert entry is not None, f"{name} is not in {SNAPSHOT.name}"
    assert entry["verdict"] == Verdict.VERIFIED.name, entry
    assert not [f for f in entry["findings"] if f.split("|")[2] != "warning"], entry


@pytest.mark.parametrize("pair", [i for i, _, _ in corpus_pairs()])
def test_corpus_pair_verified(pair: str) -> None:
    _assert_recorded_verified(f"corpus/{pair}")


def test_corpus_is_complete() -> None:
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    assert len(corpus_pairs()) == 54


@pytest.mark.parametrize("post", [p for _, p, _ in fixture_pairs("llvm19") + fixture_pairs("llvm22")],
                         ids=[i for i, _, _ in fixture_pairs("llvm19") + fixture_pairs("llvm22")])
def test_fixture_pair_verified(post: Path) -> None:
    _assert_recorded_verified(post.relative_to(FIXTURES.parent).as_posix()[:-len(".post.mir")])


def test_fixtures_cover_every_design_target() -> None:
    targets = {p.parent.name for _, p, _ in corpus_pairs() + fixture_pairs("llvm19") + fixture_pairs("llvm22")}
    assert {"gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200"} <= targets
    # ... and every generation LLVM supports, with the processor features that change budgets
    # (SGPR init bug, XNACK, gfx10.1's 20 waves, gfx11 with and without the 1.5x VGPR file).
    assert {"gfx600", "gfx700", "gfx802", "gfx810", "gfx906", "gfx1010", "gfx1036", "gfx1102", "gfx1151"} <= targets


@pytest.fixture(scope="module")
def llc22_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not have("llc-22"):
        pytest.skip("llc-22 is not installed (make test installs it)")
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    out = tmp_path_factory.mktemp("llc22")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "llc_corpus.py"), "--llc", "llc-22", "--corpus", str(CORPUS),
                    "--out", str(out), "-j", "2"], check=True, capture_output=True, timeout=900)
    return out


@pytest.mark.llc
@pytest.mark.parametrize("pair", [i for i, _, _ in corpus_pairs()])
def test_llc22_pair_verified(llc22_corpus: Path, pair: str) -> None:
    post = llc22_corpus / f"{pair}.post.mir"
    pre = llc22_corpus / f"{pair}.pre.mir"
    assert post.exists() and pre.exists()
    _assert_verified(post, pre)
