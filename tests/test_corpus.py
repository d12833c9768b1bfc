"""LLVM's own allocations are correct by assumption: every corpus pair must be VERIFIED, by every
layer, on LLVM 19 output (the shared corpus and our gfx908/gfx950/gfx1200 fixtures) and on
LLVM 22 output made here with llc-22."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from verilocc.findings import LAYERS, Verdict

from .conftest import CORPUS, ROOT, corpus_pairs, fixture_pairs, have, verify_pair


def _assert_verified(post: Path, pre: Path) -> None:
    report = verify_pair(post, pre)
    errors = [f.message for f in report.findings if f.severity != "warning"]
    assert report.verdict is Verdict.VERIFIED, errors[:5]
    for fr in report.functions:
        assert fr.layers == list(LAYERS)


@pytest.mark.parametrize(("post", "pre"), [(p, q) for _, p, q in corpus_pairs()],
                         ids=[i for i, _, _ in corpus_pairs()])
def test_corpus_pair_verified(post: Path, pre: Path) -> None:
    _assert_verified(post, pre)


def test_corpus_is_complete() -> None:
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    assert len(corpus_pairs()) == 54


@pytest.mark.parametrize(("post", "pre"), [(p, q) for _, p, q in fixture_pairs("llvm19") + fixture_pairs("llvm22")],
                         ids=[i for i, _, _ in fixture_pairs("llvm19") + fixture_pairs("llvm22")])
def test_fixture_pair_verified(post: Path, pre: Path) -> None:
    _assert_verified(post, pre)


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
