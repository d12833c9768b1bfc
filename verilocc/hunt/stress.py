"""Random LLVM IR from `llvm-stress`, made fit for the AMDGPU backend.

`llvm-stress-N --seed S --size K` writes one function of random scalar and vector arithmetic,
loads, stores, selects and branches, with its temporaries in `alloca`s of the default address
space. AMDGPU keeps private memory in address space 5 and llc refuses any other alloca
("alloca on amdgpu must be in addrspace(5)", or an isel failure on the frame index in older
versions). So each alloca is made in address space 5 and cast to a flat pointer, the module is
given the amdgcn triple, and `opt-N -passes=sroa,infer-address-spaces` promotes what it can to
registers and turns the rest into private accesses. Half of the programs (by seed) are made
kernels (`amdgpu_kernel`: arguments in the kernarg segment) and half stay device functions
(arguments in registers, the callable calling convention). Standard library only.

The output is a function of (seed, LLVM version): `llvm-stress` and `opt` are deterministic,
and every file is written under a fixed name in a fresh directory.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

TRIPLE = "amdgcn-amd-amdhsa"
SIZES = (25, 50, 100, 200)  # llvm-stress --size: instructions before its own clean-up

ALLOCA = re.compile(r"^(\s*)(%[-\w.$]+) = alloca (.*?)(, align \d+)?$", re.M)
DEFINE = re.compile(r"^define void @", re.M)


class StressError(Exception):
    """llvm-stress or opt could not make the program; the message says which and why."""


def tools(version: int) -> tuple[str, str]:
    """`llvm-stress-N` and `opt-N` on PATH, or a StressError that says what to install."""
    found = [shutil.which(f"{name}-{version}") for name in ("llvm-stress", "opt")]
    if found[0] is None or found[1] is None:
        raise StressError(f"llvm-stress-{version} and opt-{version} are needed for random programs "
                          f"(apt-get install llvm-{version})")
    return found[0], found[1]


def private_allocas(ir: str) -> str:
    """Every alloca in address space 5, its old name a flat pointer to it (what clang emits)."""
    def repl(m: re.Match[str]) -> str:
        indent, name, ty, align = m.group(1), m.group(2), m.group(3), m.group(4) or ""
        return (f"{indent}{name}.private = alloca {ty}{align}, addrspace(5)\n"
                f"{indent}{name} = addrspacecast ptr addrspace(5) {name}.private to ptr")
    return ALLOCA.sub(repl, ir)


def stress_program(seed: int, version: int, timeout: float = 120.0) -> str:
    """The IR text of the `seed`-th random program, made by llvm-stress-N and cleaned by opt-N."""
    stress, opt = tools(version)
    rng = random.Random(f"stress:{seed}")
    size = rng.choice(SIZES)
    kernel = rng.random() < 0.5
    with tempfile.TemporaryDirectory(prefix="verilocc_stress_") as tmp:
        work = Path(tmp)
        run([stress, f"--seed={seed}", f"--size={size}", "-o", "stress.ll"], work, timeout)
        ir = private_allocas((work / "stress.ll").read_text())
        if kernel:
            ir = DEFINE.sub("define amdgpu_kernel void @", ir)
        (work / "amdgpu.ll").write_text(f'target triple = "{TRIPLE}"\n' + ir)
        run([opt, f"-mtriple={TRIPLE}", "-passes=sroa,infer-address-spaces", "-S", "amdgpu.ll", "-o", "clean.ll"],
            work, timeout)
        text = (work / "clean.ll").read_text()
    kind = "kernel" if kernel else "device function"
    return f"; llvm-stress-{version} --seed={seed} --size={size}, a {kind}, cleaned by opt-{version}\n{text}"


def run(cmd: list[str], cwd: Path, timeout: float) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StressError(f"{Path(cmd[0]).name}: {e}") from None
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if ln.strip()), f"exit {proc.returncode}")
        raise StressError(f"{Path(cmd[0]).name}: {first}")
