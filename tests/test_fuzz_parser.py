"""The one piece both sides of the fuzzer share, `verilocc.mir.parser`, read as llc reads it.

The interpreter and the verifier both parse the fuzzer's programs with `verilocc.mir.parser`,
so a parser bug (a flag dropped, an operand misread) would give both the same wrong program
and hide. `tests/test_mir.py` shows the printer reproduces llc's own files byte for byte,
which only covers text already in llc's form; the fuzzer writes its programs and their
allocations itself. Here llc re-prints them (`llc -run-pass=none`: its MIR parser, then its
printer), and verilocc's reading of the fuzzer's text must equal its reading of llc's text:
every block, successor, instruction, operand (kind, register, subregister, flags, text) and
memory operand, and the function's live-ins and virtual registers. One difference is allowed:
llc drops the `renamable` flag of operands of some instructions that the reference allocator
writes it on (LLVM's MachineOperand::isRenamable answers false where the instruction has extra
register allocation requirements); neither oracle reads it.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from verilocc.fuzz import mutations
from verilocc.fuzz.generate import random_program
from verilocc.fuzz.profiles import PROFILES, TARGETS
from verilocc.fuzz.refalloc import Budget, allocate
from verilocc.mir.model import Module
from verilocc.mir.parser import parse_module
from verilocc.mir.printer import print_module

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _reading(module: Module) -> list[Any]:
    """What a program is, as verilocc reads it (no line numbers, no layout; virtual registers
    numbered in order of appearance, since llc numbers them densely when it prints)."""
    out: list[Any] = []
    for f in module.functions:
        number: dict[object, int] = {}
        for b in f.blocks:
            for i in b.instructions:
                for o in i.operands:
                    if o.vreg is not None:
                        number.setdefault(o.vreg, len(number))

        def vreg(v: object) -> object:
            return number.get(v, v)

        classes = sorted((vreg(k), v.reg_class) for k, v in f.registers.items() if k in number)
        liveins = sorted((r, vreg(int(v[1:])) if v and v[1:].isdigit() else v) for r, v in f.liveins)
        out.append((f.name, liveins, classes))
        for b in f.blocks:
            out.append((b.number, sorted(n for n, _ in b.successors), sorted(r for r, _ in b.liveins)))
            for i in b.instructions:
                out.append((i.opcode, i.instr_flags, " ".join((i.mem or "").split()), [
                    (o.kind, vreg(o.vreg), o.phys, o.subreg, sorted(o.flags - {"renamable"}),
                     o.text if o.kind != "reg" else None) for o in i.operands]))
    return out


def _llc_reprint(text: str, target: str, tmp: Path) -> str:
    """llc's re-print of `text`. `failedISel` and `failsVerification` keep its MIR parser from
    running the machine verifier on what it read, which refuses a mutant no hardware can run
    (the body is read and printed all the same)."""
    llc = PROFILES[target].llc
    src = tmp / "in.mir"
    text = re.sub(r"^(failedISel|failsVerification): .*\n", "", text, flags=re.M)
    src.write_text(re.sub(r"^(name: .*)$", r"\1\nfailedISel: true\nfailsVerification: true", text, flags=re.M))
    done = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-run-pass=none", str(src), "-o", "-"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[:500]
    return done.stdout


def _same_reading(text: str, target: str, tmp: Path) -> None:
    ours = _reading(parse_module(text, "fuzz.mir"))
    theirs = _reading(parse_module(_llc_reprint(text, target, tmp), "llc.mir"))
    for a, b in zip(ours, theirs):
        assert a == b, f"verilocc reads\n  {a}\nllc reads\n  {b}"
    assert len(ours) == len(theirs)


@pytest.mark.llc
@pytest.mark.parametrize("target", [*TARGETS, "gfx950", "gfx1200"])
def test_the_fuzzers_programs_read_as_llc_reads_them(target: str, tmp_path: Path) -> None:
    """Generated programs, their reference allocations (with spill code) and mutants of them
    (the thread-dimension operators among them): verilocc and llc read the same program."""
    if shutil.which(PROFILES[target].llc) is None:
        pytest.skip(f"{PROFILES[target].llc} is not on PATH")
    for seed in range(4):
        program = random_program(target, seed)
        _same_reading(program.text, target, tmp_path)
        alloc = allocate(program.text, random.Random(seed), Budget(8, 10, 8))
        _same_reading(alloc.text, target, tmp_path)
        post = parse_module(alloc.text, "post.mir")
        for name in ("other-file", "lane-write-tie", "move-exec-update"):
            m = mutations.OPERATORS[name](post, random.Random(seed))
            if m is not None:  # the printed mutant: what the verifier and the interpreter read
                _same_reading(print_module(m.module), target, tmp_path)


@pytest.mark.llc
def test_the_saved_pairs_read_as_llc_reads_them(tmp_path: Path) -> None:
    """The pairs the fuzzer found and keeps (tests/fixtures/fuzz*), which the regression tests
    and the oracle tests read."""
    if shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not on PATH")
    files = sorted(p for d in FIXTURES.glob("fuzz*") for p in d.rglob("*.mir"))
    assert files
    for path in files:
        text = path.read_text()
        target = next((t for t in PROFILES if f'"target-cpu"="{t}"' in text), "gfx90a")
        _same_reading(text, target, tmp_path)
