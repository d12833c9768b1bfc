"""Shared fixtures: the corpus beside the checkout, the project's own fixtures, and a runner."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from verilocc.findings import Report
from verilocc.mir.parser import read_module
from verilocc.verify import Options, verify_modules

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
FIXTURES = ROOT / "tests" / "fixtures"


def corpus_pairs() -> list[tuple[str, Path, Path]]:
    """(id, post, pre) for every pair of the shared corpus."""
    out = []
    for post in sorted(CORPUS.glob("*/*.post.mir")):
        pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
        out.append((f"{post.parent.name}/{post.name[:-len('.post.mir')]}", post, pre))
    return out


def _pairs_under(root: Path, prefix: str) -> list[tuple[str, Path, Path]]:
    """(id, post, pre) for every `<target>/<kernel>.post.mir` under `root`."""
    out = []
    for post in sorted(root.glob("*/*.post.mir")):
        pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
        out.append((f"{prefix}/{post.parent.name}/{post.name[:-len('.post.mir')]}", post, pre))
    return out


def fixture_pairs(llvm: str) -> list[tuple[str, Path, Path]]:
    return _pairs_under(FIXTURES / "targets" / llvm, llvm)


def llvm_version_pairs(version: str) -> list[tuple[str, Path, Path]]:
    """The pairs of tests/fixtures/llvm/<version>/<target>/ (LLVM 15 and 16)."""
    return _pairs_under(FIXTURES / "llvm" / version, version)


def verify_pair(post: Path, pre: Path | None = None, **opts: object) -> Report:
    return verify_modules(read_module(post), read_module(pre) if pre else None, Options(**opts))  # type: ignore[arg-type]


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not beside the checkout")
    return CORPUS


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


@pytest.fixture
def tmp_copy(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
