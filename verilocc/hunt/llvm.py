"""The LLVM installations a hunt runs: which `llc-N` are on PATH, what each one knows.

Facts are asked of each llc itself, never assumed from its version number:
- the AMDGPU processors it knows (`llc -mtriple=amdgcn-amd-amdhsa -mcpu=help`);
- the options it has (`llc --help-hidden`): `-sgpr-regalloc`/`-vgpr-regalloc` (LLVM 13+) and
  `-wwm-regalloc` (LLVM 20+, the whole-wave stage of PR #93526) choose the allocator of each
  stage (AMDGPU refuses plain `-regalloc`); `-opaque-pointers` lets LLVM 14 read `ptr` IR
  (LLVM 15+ read it by default, LLVM 13 not at all);
- where allocation ends: the 0-based instance of the last `virtregrewriter` in
  `-debug-pass=Structure` (`verilocc.llc.pairs.last_rewriter_instance`), per allocator;
  at -O0 (`fast-O0`: llc's own pipeline without optimisation, whose allocator is the fast one
  and which has no rewriter) the last `regallocfast`.
Standard library only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cached_property

TRIPLE = "amdgcn-amd-amdhsa"
VERSIONS = tuple(range(13, 23))  # the llc-N names looked for on PATH
# greedy, fast and basic run in the -O3 pipeline; fast-O0 is the -O0 pipeline (its own allocator is fast).
ALLOCATORS = ("greedy", "fast", "basic", "fast-O0")
# The pass each allocator's pipeline starts with (the pre file stops before its first instance).
ALLOC_PASS = {"greedy": "greedy", "fast": "regallocfast", "basic": "regallocbasic", "fast-O0": "regallocfast"}
# The pass after which allocation is over, as `-debug-pass=Structure` names it (argument, name).
REWRITER = ("virtregrewriter", "Virtual Register Rewriter")
END_PASS = {"fast-O0": ("regallocfast", "Fast Register Allocator")}


def opt_level(allocator: str) -> str:
    """The llc optimisation level of an allocator's pipeline."""
    return "-O0" if allocator == "fast-O0" else "-O3"


def end_pass(allocator: str) -> tuple[str, str]:
    """The pass after which `allocator`'s pipeline has allocated every register."""
    return END_PASS.get(allocator, REWRITER)


class LlvmError(Exception):
    """An llc could not be asked what it knows; the message says which and why."""


def _run(cmd: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LlvmError(f"cannot run {cmd[0]}: {e}") from None


@dataclass(frozen=True)
class Llvm:
    """One installed LLVM: `llc-N` (and `llvm-reduce-N` when it is there)."""

    version: int
    llc: str

    @property
    def name(self) -> str:
        return f"llc-{self.version}"

    @property
    def reduce(self) -> str | None:
        return shutil.which(f"llvm-reduce-{self.version}")

    @cached_property
    def targets(self) -> frozenset[str]:
        """The gfx processors this llc knows."""
        proc = _run([self.llc, f"-mtriple={TRIPLE}", "-mcpu=help"])
        return frozenset(re.findall(r"^\s+(gfx\w+)\s+- ", proc.stdout + proc.stderr, re.M))

    @cached_property
    def options(self) -> frozenset[str]:
        """The option names of `llc --help-hidden` (without dashes)."""
        proc = _run([self.llc, "--help-hidden"])
        return frozenset(re.findall(r"^\s+--?([a-z0-9][\w-]*)", proc.stdout, re.M))

    def regalloc_args(self, allocator: str) -> tuple[str, ...]:
        """The llc options that make every allocation stage use `allocator`."""
        if allocator not in ALLOCATORS:
            raise LlvmError(f"unknown allocator '{allocator}' (choose from {', '.join(ALLOCATORS)})")
        if allocator in ("greedy", "fast-O0"):
            return ()
        stages = [s for s in ("sgpr", "wwm", "vgpr") if f"{s}-regalloc" in self.options]
        if not {"sgpr", "vgpr"} <= set(stages):
            raise LlvmError(f"{self.name} has no -sgpr-regalloc/-vgpr-regalloc: cannot choose '{allocator}'")
        return tuple(f"-{s}-regalloc={allocator}" for s in stages)

    def ir_args(self, ir_text: str) -> tuple[str, ...]:
        """`-opaque-pointers` for an llc that reads `ptr` only when asked (LLVM 14)."""
        if self.version < 15 and "opaque-pointers" in self.options and re.search(r"\bptr\b", ir_text):
            return ("-opaque-pointers",)
        return ()


def llc_major(llc: str) -> int:
    m = re.search(r"LLVM version (\d+)", _run([llc, "--version"]).stdout)
    if not m:
        raise LlvmError(f"cannot tell the LLVM version of {llc}")
    return int(m.group(1))


def installed(versions: list[int] | None = None) -> tuple[list[Llvm], list[str]]:
    """The LLVMs on PATH (`llc-N` for N in `versions`, default 13 to 22), and a note per
    asked-for version that is missing or reports another version."""
    found: list[Llvm] = []
    notes: list[str] = []
    for v in versions if versions is not None else VERSIONS:
        path = shutil.which(f"llc-{v}")
        if path is None:
            if versions is not None:
                notes.append(f"llc-{v} is not on PATH (apt-get install llvm-{v})")
            continue
        major = llc_major(path)
        if major != v:
            notes.append(f"llc-{v} reports LLVM {major}: skipped")
            continue
        found.append(Llvm(v, path))
    return found, notes
