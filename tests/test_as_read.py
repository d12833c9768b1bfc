"""MIR read as llc reads it (`verilocc.mir.as_read`): on wave32, an implicit `$vcc` is
`$vcc_lo`, as llc makes it when it loads a file (checked against llc's own re-print). Files
patched to `implicit $vcc` so that llc reads them verify against llc's allocation of them; on
wave64 a `$vcc` read as `$vcc_lo` is half the mask and REJECTED. How the fixtures were made:
tests/fixtures/wave32-vcc/README.md."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from verilocc.findings import Verdict
from verilocc.mir.as_read import as_llc_reads
from verilocc.mir.parser import parse_instruction, parse_module, read_module
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES, have

VCC = FIXTURES / "wave32-vcc"
PAIRS = sorted(p.name[:-len(".post.mir")] for p in VCC.glob("*.post.mir"))
WAVE32 = [n for n in PAIRS if ".gfx1" in n]


def test_wave32_implicit_vcc_is_its_low_half_and_nothing_else_changes() -> None:
    module = read_module(str(VCC / "fdiv.llvm19.gfx1100.pre.mir"))
    fn = module.functions[0]
    read = as_llc_reads(fn, wave32=True)
    before = [(op.phys, op.flags) for b in fn.blocks for i in b.instructions for op in i.operands if op.kind == "reg"]
    after = [(op.phys, op.flags) for b in read.blocks for i in b.instructions for op in i.operands if op.kind == "reg"]
    changed = [(x, y) for x, y in zip(before, after) if x != y]
    assert changed and all(x[0] == "vcc" and y[0] == "vcc_lo" and x[1] == y[1] and "implicit" in x[1] for x, y in changed)
    assert as_llc_reads(fn, wave32=False) is fn
    asm = parse_instruction("INLINEASM &\"\", 1 /* sideeffect attdialect */, implicit $vcc")
    assert asm.operands[-1].phys == "vcc"


@pytest.mark.llc
@pytest.mark.parametrize("name", [n for n in WAVE32 if ".llvm16." not in n])
def test_llc_reads_the_patched_file_as_this_does(name: str, tmp_path: Path) -> None:
    """llc re-prints the patched pre file; every register operand it prints is the one
    `as_llc_reads` reads (the check fails if either side changes another operand). llc-16
    prints `$vcc` back as it reads it (it rewrites implicit operands when it creates an
    instruction, not when it loads a file); a wave32 instruction has no 64-bit VCC to read all
    the same, and its pairs verify below."""
    llc = f"llc-{name.split('.')[1].removeprefix('llvm')}"
    if not have(llc):
        pytest.skip(f"{llc} is not installed (make test installs it)")
    pre = VCC / f"{name}.pre.mir"
    cpu = name.split(".")[2]
    out = tmp_path / "reprint.mir"
    subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-run-pass=none", "-o", str(out), str(pre)],
                   check=True, capture_output=True)
    ours = as_llc_reads(read_module(str(pre)).functions[0], wave32=True)
    theirs = read_module(str(out)).functions[0]
    regs = [[(op.phys, op.vreg, op.is_implicit) for op in i.operands if op.kind == "reg"]
            for f in (ours, theirs) for b in f.blocks for i in b.instructions]
    half = len(regs) // 2
    assert regs[:half] == regs[half:]
    assert any(r[0] == "vcc_lo" and r[2] for ops in regs[half:] for r in ops)


@pytest.mark.parametrize("name", PAIRS)
def test_llvms_allocation_of_a_patched_file_is_verified(name: str) -> None:
    report = verify_modules(read_module(str(VCC / f"{name}.post.mir")), read_module(str(VCC / f"{name}.pre.mir")), Options())
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings][:3]


@pytest.mark.parametrize("name", [n for n in PAIRS if ".gfx90a" in n])
def test_a_64_bit_vcc_read_as_32_is_rejected(name: str) -> None:
    """Wave64: `V_DIV_FMAS_F32_e64` reads all 64 bits of VCC; the allocated program giving it
    `$vcc_lo` instead is a different program."""
    text = (VCC / f"{name}.post.mir").read_text()
    lines = text.split("\n")
    k = next(k for k, ln in enumerate(lines) if "V_DIV_FMAS_F32_e64" in ln and "implicit $vcc," in ln)
    lines[k] = lines[k].replace("implicit $vcc,", "implicit $vcc_lo,")
    report = verify_modules(parse_module("\n".join(lines), f"{name}.post.mir"), read_module(str(VCC / f"{name}.pre.mir")), Options())
    assert report.verdict is Verdict.REJECTED
    assert any(f.place.line == k + 1 for f in report.findings if f.severity == "error")


def _instructions(fn) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    """What llc's reading decides of each instruction: opcode, flags, every register operand
    (register, subregister, flags, tie) and every other operand but block and fixed stack
    references, which llc may renumber (paired by structure and by memory elsewhere)."""
    return [(i.opcode, i.instr_flags, tuple(
        (o.phys, o.vreg, o.subreg, tuple(sorted(o.flags)), o.tied_def) if o.kind == "reg"
        else (o.kind,) if o.kind in ("mbb", "fixed-stack") else (o.kind, o.text) for o in i.operands))
        for b in fn.blocks for i in b.instructions]


@pytest.mark.llc
@pytest.mark.parametrize("version", ["19", "22"])
def test_llc_reads_every_instruction_as_this_does(version: str, tmp_path: Path) -> None:
    """llc's re-print of allocated and virtual programs it wrote itself (the target fixtures of
    its version, and the patched wave32 files) reads back, instruction by instruction, as
    `as_llc_reads` reads the file: no other spelling llc changes when it loads a file."""
    llc = f"llc-{version}"
    if not have(llc):
        pytest.skip(f"{llc} is not installed (make test installs it)")
    from verilocc.target import target_for_function

    files = sorted((FIXTURES / "targets" / f"llvm{version}").glob("*/*.mir"))[::3]
    files += sorted(VCC.glob(f"*.llvm{version}.*.mir"))
    compared = 0
    for path in files:
        fn = read_module(str(path)).functions[0]
        out = tmp_path / "reprint.mir"
        proc = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={fn.target_cpu}", "-run-pass=none", "-o", str(out),
                               str(path)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            continue  # a wave32 file llc writes but does not read unpatched
        wave32 = target_for_function(fn.target_cpu or "", fn.target_features or "").wavefront_size == 32
        assert _instructions(as_llc_reads(fn, wave32)) == _instructions(read_module(str(out)).functions[0]), path.name
        compared += 1
    assert compared >= 10
