"""The hunt's generator of GPU-shaped LLVM IR (verilocc/hunt/gpu_ir.py).

- the text is a pure function of (seed, target), the same in another process with another
  hash seed, and differs between seeds;
- seeds 0..4 compile for every target with each installed llc-16/19/22 that knows it (-O3);
- over seeds 0..49 each feature appears for the targets it is meant for (a branch on the
  thread id, loops, direct and indirect calls, LDS with a barrier, MFMA on gfx9, WMMA on
  gfx11/gfx12, kernel attributes that shrink the register budget...), and matrix operations
  never appear for a target without them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from verilocc.hunt.gpu_ir import TARGETS, gpu_program

ROOT = Path(__file__).resolve().parents[1]
LLC_VERSIONS = (16, 19, 22)
FEATURE_SEEDS = range(50)


@cache
def llc_targets(version: int) -> frozenset[str]:
    """The targets of TARGETS that `llc-<version>` knows (empty when it is not installed)."""
    llc = shutil.which(f"llc-{version}")
    if llc is None:
        return frozenset()
    done = subprocess.run([llc, "-mtriple=amdgcn", "-mcpu=help"], capture_output=True,
                          text=True, timeout=60)
    listing = done.stdout + done.stderr
    return frozenset(t for t in TARGETS if re.search(rf"\b{t}\b", listing))


@cache
def programs(target: str) -> tuple[str, ...]:
    return tuple(gpu_program(seed, target) for seed in FEATURE_SEEDS)


def test_same_bytes_twice_and_different_across_seeds() -> None:
    for target in TARGETS:
        first = gpu_program(7, target)
        assert first == gpu_program(7, target)
        assert first.startswith(f"; verilocc gpu_ir seed 7 target {target}\n")
        assert 'target triple = "amdgcn-amd-amdhsa"' in first
        assert "datalayout" not in first
        assert len({gpu_program(seed, target) for seed in range(6)}) == 6
    assert gpu_program(7, "gfx90a") != gpu_program(7, "gfx942")


def test_same_bytes_in_another_process() -> None:
    """No dependence on the process: another interpreter with another hash seed agrees."""
    code = ("import sys; from verilocc.hunt.gpu_ir import gpu_program; "
            "sys.stdout.write(gpu_program(11, 'gfx1100') + gpu_program(12, 'gfx950'))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120, check=True)
    assert done.stdout == gpu_program(11, "gfx1100") + gpu_program(12, "gfx950")


def test_unknown_target_is_refused() -> None:
    with pytest.raises(ValueError):
        gpu_program(0, "gfx803")


@pytest.mark.llc
@pytest.mark.parametrize("target", TARGETS)
def test_compiles_with_installed_llc(target: str, tmp_path: Path) -> None:
    if not any(llc_targets(v) for v in LLC_VERSIONS):
        pytest.skip("no llc-16, llc-19 or llc-22 installed")
    versions = [v for v in LLC_VERSIONS if target in llc_targets(v)]
    if not versions:
        pytest.skip(f"no installed llc knows {target}")
    for seed in range(5):
        path = tmp_path / f"{target}_{seed}.ll"
        path.write_text(gpu_program(seed, target))
        for version in versions:
            done = subprocess.run([f"llc-{version}", "-mtriple=amdgcn-amd-amdhsa",
                                   f"-mcpu={target}", "-O3", str(path), "-o", os.devnull],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, (version, seed, done.stderr[-2000:])


# --- features ------------------------------------------------------------------------------

def functions(text: str) -> list[list[str]]:
    """The lines of each function definition."""
    bodies: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("define "):
            bodies.append([])
        if bodies and (not bodies[-1] or bodies[-1][-1] != "}"):
            bodies[-1].append(line)
    return bodies


def branches_on_thread_id(body: list[str]) -> bool:
    """Whether a conditional branch or switch of `body` depends on the work-item id."""
    defs: dict[str, str] = {}
    for line in body:
        found = re.match(r"\s+(%[\w.]+) = (.*)", line)
        if found:
            defs[found.group(1)] = found.group(2)

    def depends(name: str, seen: set[str]) -> bool:
        if name in seen or name not in defs:
            return False
        seen.add(name)
        text = defs[name]
        return "llvm.amdgcn.workitem.id" in text or any(
            depends(operand, seen) for operand in re.findall(r"%[\w.]+", text))

    conditions = [m.group(1) for line in body
                  for m in [re.match(r"\s+(?:br i1|switch i32) (%[\w.]+),", line)] if m]
    return any(depends(c, set()) for c in conditions)


def calls_through_selected_pointer(text: str) -> bool:
    """Whether a call goes through a `select` between two device functions."""
    pointers = re.findall(r"(%v\d+) = select i1 %v\d+, ptr @func\d+, ptr @func\d+\n", text)
    return any(re.search(rf"= call .* {p}\(|call void {p}\(", text) for p in pointers)


def most_parameters(text: str) -> int:
    """The largest number of parameters of a device function."""
    lists = re.findall(r"^define .*? @func\d+\((.*)\) #\d+ \{$", text, re.M)
    return max((len(p.split(", ")) for p in lists if p), default=0)


#: What each feature looks like in the IR text.
FEATURES: dict[str, Callable[[str], object]] = {
    "branch on the thread id": lambda text: any(branches_on_thread_id(f) for f in functions(text)),
    "if/else with phis": lambda text: re.search(r"^join\d+:\n  %v\d+ = phi ", text, re.M),
    "loop": lambda text: re.search(r"^loop\d+:\n  %i\d+ = phi i32 \[ 0, ", text, re.M),
    "per-lane loop exit": lambda text: re.search(r"= or i1 .*\n  br i1 %v\d+, label %exit", text),
    "call": lambda text: re.search(r"call [^@%\n]*@func\d+\(", text),
    "call with 10+ arguments": lambda text: most_parameters(text) >= 10,
    "wide result": lambda text: re.search(r"^define (<8 x i32>|\{ [^}]+ \}) @func", text, re.M),
    "indirect call": calls_through_selected_pointer,
    "LDS with a barrier": lambda text: "addrspace(3) global" in text
    and "call void @llvm.amdgcn.s.barrier()" in text,
    "readfirstlane": lambda text: "@llvm.amdgcn.readfirstlane(" in text,
    "ds.bpermute": lambda text: "@llvm.amdgcn.ds.bpermute(" in text,
    "64-bit": lambda text: re.search(r"= (mul|add|sub) i64 |= fadd double ", text),
    "16-bit": lambda text: re.search(r"= \w+ (i16|half|<2 x half>) %", text),
    "register squeeze": lambda text: re.search(
        r'"amdgpu-(num-vgpr|num-sgpr|waves-per-eu)"="[\d,]+"', text),
    "two kernels": lambda text: text.count("define amdgpu_kernel") == 2,
}


@pytest.mark.parametrize("target", TARGETS)
def test_every_feature_appears(target: str) -> None:
    texts = programs(target)
    missing = [name for name, has in FEATURES.items() if not any(has(t) for t in texts)]
    assert not missing
    assert all(1 <= t.count("define amdgpu_kernel") <= 2 for t in texts)


@pytest.mark.parametrize("target", TARGETS)
def test_matrix_operations_only_where_the_target_has_them(target: str) -> None:
    texts = programs(target)
    mfma = sum("@llvm.amdgcn.mfma." in t for t in texts)
    wmma = sum("@llvm.amdgcn.wmma." in t for t in texts)
    if target in ("gfx90a", "gfx942", "gfx950"):
        assert mfma > 0 and wmma == 0
    else:
        assert wmma > 0 and mfma == 0
