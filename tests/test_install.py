"""A plain, non-editable install of the checkout finds its data through the package: from
another directory, the installed `verilocc` verifies an example pair and allocates an example
with the shipped default model, and the llc pair maker finds its header."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.slow


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with verilocc installed from a wheel of the checkout (not editable). Its
    dependencies (torch among them) come from this interpreter's site-packages through a .pth
    file placed after the venv's own, so `verilocc` itself resolves to the installed copy."""
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"  # a copy, so that building leaves nothing in the checkout
    for package in ("verilocc", "certcheck"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    r = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", src], tmp, env)
    assert r.returncode == 0, r.stderr[-2000:]
    venv = tmp / "venv"
    r = _run([sys.executable, "-m", "venv", venv], tmp, env)
    assert r.returncode == 0, r.stderr[-2000:]
    py = venv / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, env).stdout.strip())
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next((tmp / "dist").glob("verilocc-*.whl"))
    r = _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], tmp, env)
    assert r.returncode == 0, r.stderr[-2000:]
    return venv, env


def test_installed_copy_is_not_the_checkout(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    r = _run([venv / "bin" / "python", "-c", "import verilocc, pathlib; print(pathlib.Path(verilocc.__file__).parent)"],
             tmp_path, env)
    package = Path(r.stdout.strip())
    assert package.is_relative_to(venv), package
    assert (package / "llm" / "data" / "verilocc-small" / "model.safetensors").is_file()
    assert (package / "llc" / "data" / "hip_compat.h").is_file()


def test_installed_verify_and_allocate(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    verilocc = venv / "bin" / "verilocc"
    pair = EXAMPLES / "gfx90a" / "vadd"
    r = _run([verilocc, "verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir"], tmp_path, env)
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    r = _run([verilocc, "allocate", f"{pair}.pre.mir", "-o", "alloc.mir"], tmp_path, env)
    assert r.returncode == 0 and "VERIFIED" in r.stderr, r.stdout + r.stderr
    assert "default model" not in r.stderr
    r = _run([verilocc, "verify", "alloc.mir", "--pre", f"{pair}.pre.mir"], tmp_path, env)
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr


def test_installed_certificate_and_certcheck(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """The wheel installs the independent checker beside verilocc, as its own console script."""
    venv, env = installed
    pair = EXAMPLES / "gfx90a" / "vadd"
    r = _run([venv / "bin" / "verilocc", "verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir", "--certificate",
              "cert"], tmp_path, env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run([venv / "bin" / "certcheck", "cert"], tmp_path, env)
    assert r.returncode == 0 and "accepted" in r.stdout, r.stdout + r.stderr
    r = _run([venv / "bin" / "python", "-c", "import certcheck, pathlib; print(pathlib.Path(certcheck.__file__).parent)"],
             tmp_path, env)
    assert Path(r.stdout.strip()).is_relative_to(venv)


def test_installed_pair_maker_runs(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """What `verilocc dataset build` runs, found through the package."""
    venv, env = installed
    r = _run([venv / "bin" / "python", "-m", "verilocc.llc.corpus", "--help"], tmp_path, env)
    assert r.returncode == 0 and "--hip DIR" in r.stdout, r.stderr
