"""The example kernels of `examples/`: LLVM's allocations are correct by assumption, so every
pair must be VERIFIED by every layer (the corpus-free counterpart of `test_corpus.py`), and the
files must be what clang-19 and llc-19 make from the HIP sources beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilocc.findings import LAYERS, Verdict
from verilocc.llc.corpus import main as llc_corpus

from .conftest import EXAMPLES, example_pairs, have, verify_pair


def test_examples_cover_three_targets() -> None:
    ids = [i for i, _, _ in example_pairs()]
    assert {i.split("/")[0] for i in ids} == {"gfx90a", "gfx942", "gfx1100"}
    assert {"gfx90a/vadd", "gfx1100/reduce_sum", "gfx942/sgemm_naive", "gfx90a/softmax_row"} <= set(ids)
    assert sum(p.stat().st_size for p in EXAMPLES.glob("*/*.mir")) < 1_000_000


@pytest.mark.parametrize(("post", "pre"), [(p, q) for _, p, q in example_pairs()],
                         ids=[i for i, _, _ in example_pairs()])
def test_example_pair_verified(post: Path, pre: Path) -> None:
    report = verify_pair(post, pre)
    errors = [f.message for f in report.findings if f.severity != "warning"]
    assert report.verdict is Verdict.VERIFIED, errors[:5]
    for fr in report.functions:
        assert fr.layers == list(LAYERS)


@pytest.mark.llc
def test_examples_remade_byte_for_byte(tmp_path: Path) -> None:
    """scripts/make_examples.py's steps, into a temporary directory: the same bytes."""
    if not (have("clang-19") and have("llc-19")):
        pytest.skip("clang-19 and llc-19 are not installed")
    code = llc_corpus(["--llc", "llc-19", "--hip", str(EXAMPLES / "kernels"), "--clang", "clang-19",
                      "--targets", "gfx90a,gfx942,gfx1100", "--out", str(tmp_path / "pairs"), "-j", "2"])
    assert code == 0
    made = sorted(p.relative_to(tmp_path / "pairs") for p in (tmp_path / "pairs").glob("*/*.mir"))
    assert made == sorted(p.relative_to(EXAMPLES) for p in EXAMPLES.glob("*/*.mir"))
    for rel in made:
        assert (tmp_path / "pairs" / rel).read_bytes() == (EXAMPLES / rel).read_bytes(), rel
