"""The compiled core (`verilocc.native`): the same reports as the sources it was built from, and
never used once a source has changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verilocc import native
from verilocc.mir.parser import read_module
from verilocc.mir.printer import print_module

from .conftest import EXAMPLES, FIXTURES, ROOT, script

needs_build = pytest.mark.skipif(native.current() != "compiled",
                                 reason=f"the core is not compiled here ({native.current()}): make native")


def _env(tree: Path, pure: bool = False) -> dict[str, str]:
    """This environment with the package of `tree` on the path, its core compiled or not."""
    env = {k: v for k, v in os.environ.items() if k != "VERILOCC_PURE"}
    env["PYTHONPATH"] = str(tree)
    if pure:
        env["VERILOCC_PURE"] = "1"
    return env


def _verilocc(args: list[str], pure: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "verilocc", *args], capture_output=True, text=True,
                          env=_env(ROOT, pure), cwd=ROOT)


def _pairs(out: Path) -> int:
    """Writes to `out` as `X.pre.mir`/`X.post.mir` the example pairs, LLVM's fidelity pairs, the
    fuzzers' regressions, and wrong allocations: the findings snapshot's mutants of the gfx90a
    examples (`scripts/findings_snapshot.py`). Returns how many."""
    out.mkdir()
    pairs: list[tuple[str, Path, str]] = []
    for folder, pattern in ((EXAMPLES, "*/*.pre.mir"), (FIXTURES / "fidelity", "*.pre.mir"),
                            (FIXTURES / "fuzz", "*.pre.mir")):
        for pre in sorted(folder.glob(pattern)):
            post = pre.with_name(pre.name.replace(".pre.mir", ".post.mir"))
            if post.exists() and post.stat().st_size < 400_000:
                pairs.append((f"{pre.parent.name}.{pre.name[:-len('.pre.mir')]}", pre, post.read_text(encoding="utf-8")))
    snapshot = script("findings_snapshot")
    for pre in sorted(EXAMPLES.glob("gfx90a/*.pre.mir")):
        post = read_module(pre.with_name(pre.name.replace(".pre.mir", ".post.mir")))
        for op in sorted(snapshot.OPERATORS):
            got = snapshot.mutant(f"gfx90a/{pre.name}", post, op, 0)
            if got is not None:
                pairs.append((f"gfx90a.{pre.name[:-len('.pre.mir')]}.{op}", pre, print_module(got.module)))
    for name, pre, post_text in pairs:
        shutil.copyfile(pre, out / f"{name}.pre.mir")
        (out / f"{name}.post.mir").write_text(post_text, encoding="utf-8")
    return len(pairs)


@needs_build
def test_compiled_and_interpreted_core_write_the_same_reports(tmp_path: Path) -> None:
    assert _pairs(tmp_path / "pairs") >= 40
    args = ["verify", str(tmp_path / "pairs"), "--jobs", "1", "--format", "jsonl"]
    compiled, pure = _verilocc(args, pure=False), _verilocc(args, pure=True)
    assert compiled.returncode == pure.returncode
    assert compiled.stdout == pure.stdout
    verdicts = {json.loads(line)["verdict"] for line in compiled.stdout.splitlines()}
    assert {"VERIFIED", "REJECTED"} <= verdicts


def _copy_package(dest: Path) -> Path:
    shutil.copytree(ROOT / "verilocc", dest / "verilocc",
                    ignore=shutil.ignore_patterns("__pycache__", "data", "assets"))
    return dest / "verilocc"


def _where(tree: Path) -> list[str]:
    """`verilocc.native.current()` and where the value-flow module came from, in a fresh interpreter that
    imports the package copied to `tree`."""
    got = subprocess.run([sys.executable, "-c", "import verilocc, verilocc.semantics.valueflow as v; "
                          "print(verilocc.native.current()); print(v.__file__)"],
                         capture_output=True, text=True, env=_env(tree), cwd=tree, check=True)
    return got.stdout.splitlines()


@needs_build
def test_a_build_is_used_only_while_its_sources_are_unchanged(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    state, module = _where(tmp_path)
    assert state == "compiled" and not module.endswith(".py")
    # An extension module the build did not make (another build's): not this build.
    built = next(p for p in (package / "semantics").iterdir() if p.name.startswith("valueflow.") and p.suffix != ".py")
    stray = package / "target" / built.name.replace("valueflow", "registers")
    shutil.copyfile(built, stray)
    state, module = _where(tmp_path)
    assert state == "not built" and module.endswith("valueflow.py")
    stray.unlink()
    # One compiled source edited: every compiled module is imported from its source.
    edited = package / "semantics" / "terms.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    state, module = _where(tmp_path)
    assert state == "stale" and module == str(package / "semantics" / "valueflow.py")
    # No build record (a build interrupted, or copied without it): the sources again.
    (package / Path(native.BUILD_RECORD).name).unlink()
    state, module = _where(tmp_path)
    assert state == "not built" and module.endswith("valueflow.py")


def test_the_version_says_which_core_runs() -> None:
    pure = _verilocc(["--version"], pure=True)
    assert pure.returncode == 0 and "core: interpreted (VERILOCC_PURE=1)" in pure.stdout
    default = _verilocc(["--version"], pure=False)
    expected = {"compiled": "core: compiled", "not built": "make native compiles it",
                "stale": "its sources changed since the build"}[native.state(honour_env=False)]
    assert expected in default.stdout


def test_the_package_type_checks() -> None:
    """mypy finds no error in the package. mypyc compiles the core from its annotations; the
    rest is held to the same annotations, so that none of them says what the code does not do."""
    pytest.importorskip("mypy")
    run = subprocess.run([sys.executable, "-m", "mypy", "verilocc", "--cache-dir", str(ROOT / "build" / "mypy-cache")],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
