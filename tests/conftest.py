"""Shared fixtures: the example kernels, the optional corpus beside the checkout, the project's
own fixtures, and a runner.

The repository's `examples/` (small kernels for gfx90a, gfx942, gfx1100) is always there. The
larger corpus of llc output is optional: `VERILOCC_CORPUS` names it, by default
`../shared/corpus` beside the checkout; an empty `VERILOCC_CORPUS` means none (`make check`).
Tests over the corpus skip without it, and the small kernels they name come from `examples/`,
which holds the same bytes.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from verilocc import native
from verilocc.findings import Report
from verilocc.mir.parser import read_module
from verilocc.verify import Options, verify_modules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures"
_CORPUS = os.environ.get("VERILOCC_CORPUS")
#: The optional corpus. Without one this is a path that is never a directory (os.devnull).
CORPUS = (ROOT.parent / "shared" / "corpus" if _CORPUS is None
          else Path(_CORPUS) if _CORPUS else Path(os.devnull) / "corpus")
#: Where tests find the small kernels (vadd, reduce_sum, sgemm_naive, softmax_row): the corpus
#: when it is there, else `examples/` (the same files for the kernels both hold).
KERNELS = CORPUS if CORPUS.is_dir() else EXAMPLES


def kernel(name: str) -> Path:
    """`<dir>/<target>/<kernel>` for a name like `gfx90a/vadd` (append `.pre.mir`/`.post.mir`),
    from the corpus or `examples/`; the test skips when neither holds it."""
    for root in (CORPUS, EXAMPLES):
        if (root / f"{name}.pre.mir").exists():
            return root / name
    pytest.skip(f"{name} is in neither the corpus nor examples/")


def _pairs_under(root: Path, prefix: str = "") -> list[tuple[str, Path, Path]]:
    """(id, post, pre) for every `<target>/<kernel>.post.mir` under `root`."""
    out = []
    for post in sorted(root.glob("*/*.post.mir")):
        pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
        name = f"{post.parent.name}/{post.name[:-len('.post.mir')]}"
        out.append((f"{prefix}/{name}" if prefix else name, post, pre))
    return out


def corpus_pairs() -> list[tuple[str, Path, Path]]:
    """(id, post, pre) for every pair of the corpus (none without it)."""
    return _pairs_under(CORPUS)


def example_pairs() -> list[tuple[str, Path, Path]]:
    """(id, post, pre) for every pair of `examples/`."""
    return _pairs_under(EXAMPLES)


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
        pytest.skip("no corpus (../shared/corpus beside the checkout, or VERILOCC_CORPUS)")
    return CORPUS


@cache
def script(name: str) -> ModuleType:
    """`scripts/<name>.py` as a module: tests run the scripts' own functions."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


@pytest.fixture
def tmp_copy(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` run first (otherwise in the order collected): with two workers
    (`make test`), a test of minutes that starts last keeps one worker busy after the other
    has finished."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A test marked `interpreted` patches the verifier's own functions, which its compiled
    modules call directly (`verilocc.native`): where they are compiled, it runs in a pytest of
    its own with `VERILOCC_PURE=1`, and passes, fails or skips as it does there."""
    if pyfuncitem.get_closest_marker("interpreted") is None or native.current() != "compiled":
        return None
    env = {**os.environ, "VERILOCC_PURE": "1"}
    got = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "-rs", pyfuncitem.nodeid], cwd=pyfuncitem.config.rootpath, env=env,
                         capture_output=True, text=True)
    if got.returncode == 0 and " passed" not in got.stdout:
        pytest.skip(got.stdout.strip().splitlines()[-1] if got.stdout.strip() else "skipped")
    if got.returncode != 0:
        pytest.fail(f"with VERILOCC_PURE=1:\n{got.stdout[-4000:]}{got.stderr[-2000:]}", pytrace=False)
    return True
