"""MIR of LLVM 15 and 16 (tests/fixtures/llvm/, made by clang and llc 15.0.6 and 16.0.6 as its
README says; no LLVM needed here): every pair is VERIFIED by every layer, and wrong allocations
of those files are REJECTED (mutated post files, an odd VGPR pair on gfx90a).

LLVM 13-16 lower SGPR spills to plain `V_WRITELANE_B32`/`V_READLANE_B32` on a lane VGPR
(LLVM 17+ print the pseudos `SI_SPILL_S32_TO_VGPR`/`SI_RESTORE_S32_FROM_VGPR`); the layers
read them as the same spill steps (`analysis.instructions.is_lane_spill`): the pair with such spills
is VERIFIED, and a reload from the wrong lane, a lane VGPR overwritten between the write and the
read, or a spill of the wrong SGPR is REJECTED."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from verilocc.analysis.instructions import is_lane_spill
from verilocc.rewrite.assignment import Assignment, assignment_from_allocation, materialise
from verilocc.findings import LAYERS, Finding, Report, Verdict
from verilocc.fuzz import mutations
from verilocc.mir.model import Instruction, Module
from verilocc.mir.parser import read_module
from verilocc.target import PhysReg, RegFile, parse_physreg
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES, llvm_version_pairs, verify_pair

VERSIONS = ("15", "16")
TARGETS = {"gfx908", "gfx90a", "gfx940", "gfx1030", "gfx1100"}
# Pairs whose post file holds SGPR spills lowered to V_WRITELANE_B32/V_READLANE_B32.
SGPR_SPILL_LANES = {"gfx90a/sgemm_naive_s16"}

ALL = [p for v in VERSIONS for p in llvm_version_pairs(v)]


def _pair(version: str, name: str) -> tuple[Module, Module]:
    base = FIXTURES / "llvm" / version / name
    return read_module(f"{base}.pre.mir"), read_module(f"{base}.post.mir")


def _errors(report: Report) -> list[Finding]:
    return [f for f in report.findings if f.severity == "error"]


def test_fixture_set() -> None:
    """Both versions: the same 12 pairs on every target LLVM 15/16 share with the project, each
    with the IR it was made from."""
    for version in VERSIONS:
        pairs = llvm_version_pairs(version)
        assert len(pairs) == 12, version
        assert {post.parent.name for _, post, _ in pairs} == TARGETS
        for _, post, pre in pairs:
            assert pre.exists()
            ll = FIXTURES / "llvm" / version / "ll" / post.parent.name / post.name.replace(".post.mir", ".ll")
            assert ll.exists(), ll


@pytest.mark.parametrize(("post", "pre"), [(p, q) for _, p, q in ALL], ids=[i for i, _, _ in ALL])
def test_made_by_that_llvm(post: Path, pre: Path) -> None:
    """The embedded IR names the clang of the version directory, and the files use that
    version's syntax (no keys LLVM 17+ added)."""
    version = post.parent.parent.name
    for path in (pre, post):
        text = path.read_text()
        assert f'clang version {version}.0.6' in text
        assert "sgprForEXECCopy:" not in text and "isOutlined:" not in text


@pytest.mark.parametrize(("post", "pre"), [(p, q) for _, p, q in ALL], ids=[i for i, _, _ in ALL])
def test_pair_verified(post: Path, pre: Path) -> None:
    report = verify_pair(post, pre)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in _errors(report)][:5]
    for fr in report.functions:
        assert fr.layers == list(LAYERS)


def _lane_lines(post: Module) -> list[tuple[int, int, Instruction]]:
    """(block index, instruction index, instruction) of the lane writes and reads."""
    return [(b, k, ins) for b, blk in enumerate(post.functions[0].blocks) for k, ins in enumerate(blk.instructions)
            if ins.opcode in ("V_WRITELANE_B32", "V_READLANE_B32")]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", sorted(SGPR_SPILL_LANES))
def test_sgpr_spill_lanes_are_spill_code(version: str, name: str) -> None:
    """Every lane write and read of the pair is spill code, and the pair is VERIFIED with
    value flow alone (the lane store carries the spilled SGPRs)."""
    pre, post = _pair(version, name)
    lanes = _lane_lines(post)
    assert len(lanes) >= 10
    assert all(is_lane_spill(ins) for _, _, ins in lanes)
    report = verify_modules(post, pre, Options(layers=("value-flow",)))
    assert not _errors(report), [f.message for f in _errors(report)][:3]


def _reread(post: Module, path: Path, text: str, tmp_path: Path) -> Module:
    out = tmp_path / path.name
    out.write_text(text)
    return read_module(str(out))


def _mutate_line(path: Path, line: int, old: str, new: str) -> str:
    lines = path.read_text().split("\n")
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    return "\n".join(lines)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("fault", ["wrong-lane", "wrong-source", "lane-vgpr-clobbered"])
def test_sgpr_spill_lane_faults_rejected(version: str, fault: str, tmp_path: Path) -> None:
    """Wrong lanes are REJECTED at the read that gets the wrong value."""
    pre, post = _pair(version, "gfx90a/sgemm_naive_s16")
    path = FIXTURES / "llvm" / version / "gfx90a/sgemm_naive_s16.post.mir"
    lanes = _lane_lines(post)
    reads = [ins for _, _, ins in lanes if ins.opcode == "V_READLANE_B32"]
    writes = [ins for _, _, ins in lanes if ins.opcode == "V_WRITELANE_B32"]
    if fault == "wrong-lane":  # the first reload reads the lane next to its own
        ins = reads[0]
        lane = next(op for op in ins.operands if op.kind == "imm").text
        other = str(int(lane) + 1)
        text = _mutate_line(path, ins.line, f", {lane}", f", {other}")
        where = ins.line
    elif fault == "wrong-source":  # the first spill stores another SGPR than the spilled one
        ins = writes[0]
        src = next(op for op in ins.operands if op.kind == "reg" and not op.is_def)
        assert src.phys is not None
        text = _mutate_line(path, ins.line, f"${src.phys},", "$sgpr31,")
        where = None
    else:  # a VALU write of the lane VGPR between the first spill and its reload
        ins = writes[0]
        vgpr = ins.defs[0].phys
        lines = path.read_text().split("\n")
        indent = lines[ins.line - 1][: len(lines[ins.line - 1]) - len(lines[ins.line - 1].lstrip())]
        lines.insert(ins.line, f"{indent}${vgpr} = V_MOV_B32_e32 0, implicit $exec")
        text = "\n".join(lines)
        where = None
    mutant = _reread(post, path, text, tmp_path)
    report = verify_modules(mutant, pre, Options())
    assert report.verdict is Verdict.REJECTED, fault
    errors = _errors(report)
    assert any(f.kind == "wrong-value" for f in errors), [f.message for f in errors][:3]
    if where is not None:  # the read itself is named (its destination holds the wrong value next)
        first = min(f.place.line for f in errors if f.kind == "wrong-value")
        assert first > where


# --- wrong allocations ----------------------------------------------------------------------

# (operator, pair, seed): each mutant changes one instruction of the post file.
MUTANTS = [
    ("swap-operands", "gfx90a/sgemm_64x64_t4x4", 2),  # S_ADDC_U32: two SGPRs trade places
    ("swap-operands", "gfx1100/hgemm_wmma_w32x32", 1),
    ("wrong-use", "gfx90a/softmax_row", 1),
    ("clobber-def", "gfx908/hgemm_mfma16_w32x32", 0),
    ("wrong-reload-slot", "gfx1030/softmax_row_v8", 0),  # memory spills of LLVM 15/16
    ("spill-wrong-register", "gfx908/softmax_row_v8", 1),
    ("copy-wrong-source", "gfx90a/hgemm_mfma16_w32x32", 1),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("operator", "name", "seed"), MUTANTS)
def test_mutant_rejected(version: str, operator: str, name: str, seed: int) -> None:
    pre, post = _pair(version, name)
    mutant = mutations.OPERATORS[operator](post, random.Random(seed))
    assert mutant is not None
    report = verify_modules(mutant.module, pre, Options())
    assert report.verdict is Verdict.REJECTED, mutant.description
    here = sorted(f.place.line for f in _errors(report)
                  if f.place.block == mutant.block and f.place.file != pre.file)
    assert not here or here[0] >= mutant.line, (mutant.description, here[:3])
    if operator in ("swap-operands", "wrong-use"):  # the changed instruction itself is named
        assert here and here[0] == mutant.line, (mutant.description, here[:3])


def _verify_assignment(pre: Module, regs: dict[int | str, PhysReg]) -> Report:
    post, extra = materialise(pre, Assignment(file="<test>", regs=regs))
    return verify_modules(post, pre, Options(), extra_findings=extra)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("name", "rejected"), [("gfx90a/reduce_sum", True), ("gfx1030/vadd", False)])
def test_odd_vgpr_pair(version: str, name: str, rejected: bool) -> None:
    """A 64-bit VGPR tuple moved to an odd first register above everything in use: REJECTED
    where tuples must be even-aligned (gfx90a), a correct allocation elsewhere (gfx1030)."""
    pre, post = _pair(version, name)
    derived = assignment_from_allocation(pre, post)
    assert not derived.split and not derived.missing
    regs = dict(derived.regs)
    assert _verify_assignment(pre, regs).verdict is Verdict.VERIFIED  # LLVM's own, re-materialised
    fn = pre.functions[0]
    tuples = sorted((v for v, d in fn.registers.items()
                     if v in regs and d.reg_class and d.reg_class.startswith("vreg_64")), key=str)
    assert tuples
    v = tuples[0]
    top = max(r.index + max(1, len(r.units) // 2) for r in regs.values() if r.file is RegFile.VGPR)
    start = top | 1
    regs[v] = parse_physreg(f"vgpr{start}_vgpr{start + 1}")
    report = _verify_assignment(pre, regs)
    if rejected:
        assert report.verdict is Verdict.REJECTED
        hits = [f for f in _errors(report) if f.kind == "alignment"]
        assert hits and any(f"%{v}" in f.message for f in hits)
    else:
        assert report.verdict is Verdict.VERIFIED, [f.message for f in _errors(report)][:3]
