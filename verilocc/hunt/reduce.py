"""Reproducers for a hunt's candidate LLVM bugs: the llc commands, and a reduced input.

`commands` writes the llc command lines that show a case (the pre file, the allocation, the
verilocc verdict), the way `docs/llvm-bugs.md` gives them. `reduce_case` shrinks the input
`.ll` (or pre-RA `.mir`) with the affected LLVM's own `llvm-reduce-N`, with `verilocc.hunt.interesting` as the
interestingness test: the reduced file still makes that llc, target, allocator and mode produce
an allocation of the same function that verilocc REJECTS with the same finding kind.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from verilocc.hunt.llvm import ALLOC_PASS, Llvm, end_pass, opt_level
from verilocc.hunt.pairs import input_triple
from verilocc.llc.text import read_text

REPO_ROOT = Path(__file__).resolve().parents[2]


def rewriter_instance(note: str) -> int | None:
    m = re.search(r"(?:virtregrewriter|regallocfast),(\d+)", note)
    return int(m.group(1)) if m else None


def commands(llvm: Llvm, target: str, allocator: str, mode: str, ll: str, instance: int | None, text: str) -> list[str]:
    """The shell commands that make the pair of a case and verify it."""
    alloc = ALLOC_PASS[allocator]
    base = " ".join([llvm.name, f"-mtriple={input_triple(text)}", f"-mcpu={target}", opt_level(allocator),
                     *llvm.regalloc_args(allocator), *llvm.ir_args(text)])
    stop = f"-stop-after={end_pass(allocator)[0]},{instance if instance is not None else 'N'}"
    if ll.endswith(".mir"):  # a pre-RA MIR input is the pre file
        return [f"{base} -start-before={alloc} {stop} {ll} -o post.mir", f"verilocc verify post.mir --pre {ll}"]
    lines = [f"{base} -stop-before={alloc} {ll} -o pre.mir"]
    if mode == "reread":
        lines.append(f"{base} -start-before={alloc} {stop} pre.mir -o post.mir")
    else:
        lines.append(f"{base} {stop} {ll} -o post.mir")
    lines.append("verilocc verify post.mir --pre pre.mir")
    return lines


def reduce_case(llvm: Llvm, case: dict[str, Any], source: Path, work: Path, timeout: float,
                machine_verifier: bool = False) -> tuple[Path | None, str]:
    """Reduce `source` for one (b) case into `work/<input>.reduced.ll` (`.mir` for a MIR input,
    which should be the pre file the affected llc printed: an older llvm-reduce does not read a
    later LLVM's keys); (path, note)."""
    exe = llvm.reduce
    if exe is None:
        return None, f"llvm-reduce-{llvm.version} is not on PATH"
    work.mkdir(parents=True, exist_ok=True)
    reduced = work / f"{case['input']}.reduced{source.suffix}"
    shutil.copyfile(source, reduced)
    language = ["-x=mir", f"--mtriple={input_triple(read_text(source))}"] if source.suffix == ".mir" else []
    test = ["--test", sys.executable]
    for arg in ["-m", "verilocc.hunt.interesting", "--llc", llvm.llc, "--version", str(llvm.version),
                "--target", case["target"], "--allocator", case["allocator"], "--mode", case["mode"],
                "--function", case["function"], "--kind", case["kind"],
                *(["--machine-verifier"] if machine_verifier else [])]:
        test.append(f"--test-arg={arg}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p))
    extra = ["-j", "1"] if "j" in _reduce_options(exe) else []
    try:
        proc = subprocess.run([exe, *language, *test, *extra, "--in-place", reduced.name], cwd=work, capture_output=True,
                              text=True, errors="replace", timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return reduced, f"llvm-reduce-{llvm.version} stopped after {timeout:.0f}s (partly reduced)"
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()][:3]
        return None, f"llvm-reduce-{llvm.version} exited {proc.returncode}: " + " | ".join(lines)
    before, after = len(read_text(source).splitlines()), len(read_text(reduced).splitlines())
    return reduced, f"reduced by llvm-reduce-{llvm.version} from {before} to {after} lines"


def _reduce_options(exe: str) -> set[str]:
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=False).stdout
    return set(re.findall(r"^\s+-+([\w-]+)", out, re.M))
