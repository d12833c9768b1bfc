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


def fixture_pairs(llvm: str) -> list[tuple[str, Path, Path]]:
    out = []
    for post in sorted((FIXTURES / "targets" / llvm).glob("*/*.post.mir")):
        pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
        out.append((f"{llvm}/{post.parent.name}/{post.name[:-len('.post.mir')]}", post, pre))
    return out


def llvm_version_pairs(version: str) -> list[tuple[str, Path, Path]]:
    """(id, post, pre) for the pairs of tests/fixtures/llvm/<version>/<target>/ (LLVM 15 and 16)."""
    out = []
    for post in sorted((FIXTURES / "llvm" / version).glob("*/*.post.mir")):
        pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
        out.append((f"{version}/{post.parent.name}/{post.name[:-len('.post.mir')]}", post, pre))
    return out


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
