"""Wrong allocations are REJECTED at the right place; correct ones that differ from LLVM's are
VERIFIED. Assignments are read back from LLVM's allocation (`assignment_from_allocation`),
changed, and materialised; allocated programs are changed with the mutation operators."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from verilocc import cli
from verilocc.rewrite.assignment import Assignment, assignment_from_allocation, format_assignment, materialise
from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.liveness import compute_liveness
from verilocc.findings import Finding, Report, Verdict
from verilocc.fuzz import mutations
from verilocc.mir.model import Module
from verilocc.mir.parser import parse_module, read_module
from verilocc.target import PhysReg, RegFile, get_class, get_target, parse_physreg
from verilocc.verify import Options, verify_modules

from .conftest import CORPUS, EXAMPLES, FIXTURES


def _pair(name: str) -> tuple[Module, Module]:
    path = next((d / name for d in (CORPUS, EXAMPLES) if (d / f"{name}.pre.mir").exists()), FIXTURES / "targets" / name)
    if not Path(f"{path}.pre.mir").exists():
        pytest.skip(f"{name} not available")
    return read_module(f"{path}.pre.mir"), read_module(f"{path}.post.mir")


def _verify_assignment(pre: Module, regs: dict[int | str, PhysReg]) -> Report:
    post, extra = materialise(pre, Assignment(file="<test>", regs=regs))
    return verify_modules(post, pre, Options(), extra_findings=extra)


def _errors(report: Report) -> list[Finding]:
    # z3's answer and the direct evaluation of the same constraints always agree.
    assert not [f.message for f in report.findings if f.kind == "solver"]
    return [f for f in report.findings if f.severity == "error"]


def _lines_of(pre: Module, v: int | str) -> set[int]:
    return {op.line for b in pre.functions[0].blocks for i in b.instructions for op in i.operands if op.vreg == v}


def _vregs_of_class(pre: Module, regs: dict[int | str, PhysReg], names: tuple[str, ...]) -> list[int | str]:
    fn = pre.functions[0]
    return sorted((v for v, d in fn.registers.items() if d.reg_class in names and v in regs), key=str)


def _top(regs: dict[int | str, PhysReg], file: RegFile) -> int:
    return max((r.index + max(1, len(r.units) // 2) for r in regs.values() if r.file is file), default=0)


# --- correct allocations ------------------------------------------------------------------

COMPLETE = ["gfx90a/vadd", "gfx90a/sgemm_naive", "gfx942/reduce_sum", "gfx1100/softmax_row", "gfx1100/sgemm_naive"]


@pytest.mark.parametrize("name", COMPLETE)
def test_llvm_assignment_round_trips(name: str) -> None:
    pre, post = _pair(name)
    derived = assignment_from_allocation(pre, post)
    assert not derived.split and not derived.missing
    assert _verify_assignment(pre, derived.regs).verdict is Verdict.VERIFIED


@pytest.mark.parametrize("name", ["gfx90a/softmax_row", "gfx942/reduce_sum"])
def test_materialise_command_output_is_verified_and_read_by_llc(name: str, tmp_path: Path) -> None:
    """`verilocc materialise` writes block live-ins: llc's machine verifier accepts the file."""
    pre, post = _pair(name)
    regs = assignment_from_allocation(pre, post).regs
    asg = tmp_path / "a.txt"
    asg.write_text(format_assignment(regs), encoding="utf-8")
    out = tmp_path / "alloc.mir"
    assert cli.main(["materialise", pre.file, "--assignment", str(asg), "-o", str(out)]) == 0
    assert any(b.liveins for b in read_module(out).functions[0].blocks[1:])
    assert verify_modules(read_module(out), pre, Options()).verdict is Verdict.VERIFIED
    if shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not installed (make test installs it)")
    run = subprocess.run(["llc-19", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={name.split('/')[0]}", "-O3",
                          "-verify-machineinstrs", "-start-after=virtregrewriter,1", str(out), "-o", str(tmp_path / "k.s")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.parametrize("name", COMPLETE)
@pytest.mark.parametrize("shift", [4, 10])
def test_permuted_vgprs_verified(name: str, shift: int) -> None:
    """Every VGPR moved up by an even amount: a different, correct allocation."""
    pre, post = _pair(name)
    regs = assignment_from_allocation(pre, post).regs
    moved = {}
    for v, r in regs.items():
        if r.file is RegFile.VGPR:
            n = max(1, len(r.units) // 2)
            moved[v] = parse_physreg("_".join(f"vgpr{i + shift}" for i in range(r.index, r.index + n)))
        else:
            moved[v] = r
    assert moved != regs
    report = _verify_assignment(pre, moved)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in _errors(report)][:3]


@pytest.mark.parametrize("name", COMPLETE)
def test_value_moved_to_free_register_verified(name: str) -> None:
    pre, post = _pair(name)
    regs = assignment_from_allocation(pre, post).regs
    v = _vregs_of_class(pre, regs, ("vgpr_32",))[0]
    free = _top(regs, RegFile.VGPR) + 1
    regs = {**regs, v: parse_physreg(f"vgpr{free}")}
    assert _verify_assignment(pre, regs).verdict is Verdict.VERIFIED


# --- wrong allocations --------------------------------------------------------------------


def test_def_overwriting_live_value_rejected_at_def() -> None:
    pre, post = _pair("gfx90a/sgemm_naive")
    regs = assignment_from_allocation(pre, post).regs
    fn = pre.functions[0]
    live = compute_liveness(fn, build_cfg(fn))
    # The first def of a vgpr_32 value while another vgpr_32 value is live across it.
    for b in fn.blocks:
        for idx, after in sorted(live.walk_backward(b.number), key=lambda x: x[0]):
            ins = b.instructions[idx]
            defs = [op for op in ins.defs if op.vreg is not None and fn.registers[op.vreg].reg_class == "vgpr_32"]
            others = [w for w in after.vregs if fn.registers.get(w) and fn.registers[w].reg_class == "vgpr_32"
                      and w not in {d.vreg for d in defs} and w in regs]
            if defs and others and ins.opcode != "COPY" and defs[0].vreg in regs:
                v, w = defs[0].vreg, sorted(others, key=str)[0]
                report = _verify_assignment(pre, {**regs, v: regs[w]})
                assert report.verdict is Verdict.REJECTED
                hits = [f for f in _errors(report) if f.kind == "interference" and f.place.block == b.number]
                assert any(f.place.line == ins.line for f in hits), [f.message for f in _errors(report)][:4]
                assert any(f"%{v}" in f.message and f"%{w}" in f.message for f in hits)
                return
    pytest.fail("no interfering pair found")


@pytest.mark.parametrize(("name", "rejected"), [
    ("gfx90a/sgemm_naive", True), ("gfx942/sgemm_naive", True), ("gfx950/sgemm_naive", True),
    ("gfx1100/sgemm_naive", False), ("gfx908/sgemm_naive", False), ("gfx1200/sgemm_naive", False),
    ("gfx906/sgemm_naive", False), ("gfx1151/sgemm_naive", False), ("gfx810/sgemm_naive", False),
])
def test_misaligned_tuple(name: str, rejected: bool) -> None:
    target, kernel = name.split("/")
    try:
        pre, post = _pair(name)
    except pytest.skip.Exception:
        pre, post = _pair(f"llvm22/{target}/{kernel}")
    derived = assignment_from_allocation(pre, post)
    regs = derived.regs
    fn = pre.functions[0]
    pairs = sorted((v for v, d in fn.registers.items() if v in regs and d.reg_class and d.reg_class.startswith("vreg_64")),
                   key=str)
    v = pairs[0]
    start = _top(regs, RegFile.VGPR) | 1  # an odd register above everything in use
    regs = {**regs, v: parse_physreg(f"vgpr{start}_vgpr{start + 1}")}
    report = _verify_assignment(pre, regs)
    if rejected:
        assert report.verdict is Verdict.REJECTED
        hits = [f for f in _errors(report) if f.kind == "alignment"]
        assert hits and all(f.place.line in _lines_of(pre, v) for f in hits)
        assert any(f"%{v}" in f.message for f in hits)
    else:
        assert report.verdict is Verdict.VERIFIED, [f.message for f in _errors(report)][:3]


@pytest.mark.parametrize(("name", "cls", "reg", "kind"), [
    ("gfx90a/sgemm_naive", "vgpr_32", "sgpr40", "class"),  # an SGPR where a VGPR class is required
    ("gfx1100/vadd", "vgpr_32", "sgpr40", "class"),
    ("gfx90a/vadd", "vgpr_32", "vgpr256", "bounds"),  # beyond the 256-register file
    ("gfx1100/vadd", "vgpr_32", "agpr3", "class"),  # gfx1100 has no AGPRs at all
    ("gfx90a/sgemm_naive", "sreg_32", "sgpr104", "bounds"),  # beyond gfx90a's 102 SGPRs
    ("llvm19/gfx802/vadd", "sreg_32", "sgpr95", "bounds"),  # the SGPR init bug: 96 minus VCC
    ("llvm19/gfx600/vadd", "sreg_32", "sgpr104", "bounds"),  # gfx6 addresses 104 SGPRs
    ("llvm19/gfx1010/vadd", "vgpr_32", "agpr3", "class"),
])
def test_register_outside_class_or_file(name: str, cls: str, reg: str, kind: str) -> None:
    pre, post = _pair(name)
    regs = assignment_from_allocation(pre, post).regs
    candidates = [v for v in _vregs_of_class(pre, regs, (cls,)) if _lines_of(pre, v)]
    v = candidates[0]
    report = _verify_assignment(pre, {**regs, v: parse_physreg(reg)})
    assert report.verdict is Verdict.REJECTED
    hits = [f for f in _errors(report) if f.layer == "constraints" and f"${reg}" in f.message]
    assert hits, [f.message for f in _errors(report)][:4]
    # A vector value in an SGPR also makes the COPYs into it illegal (a second finding there).
    assert {f.kind for f in hits} <= {kind, "class", "bounds", "illegal-copy"} and any(f.kind == kind for f in hits)
    assert all(f.place.line in _lines_of(pre, v) for f in hits)
    if kind == "class":  # the target model agrees: not a member of the class
        assert not get_class(cls).contains(parse_physreg(reg), get_target(name.split("/")[-2]))


# --- mutated allocated programs -----------------------------------------------------------

MUTANTS = [
    ("wrong-use", "gfx90a/sgemm_naive", 3),
    ("wrong-use", "gfx1100/reduce_sum", 1),
    ("clobber-def", "gfx942/softmax_row", 2),
    ("wrong-reload-slot", "gfx90a/sgemm_128x128_t8x8_v64", 0),
    ("wrong-reload-slot", "gfx1100/sgemm_128x128_t8x8_v64", 5),
    ("spill-wrong-register", "gfx942/fa_d64_kv8_w4", 1),
    ("drop-instruction", "gfx90a/sgemm_naive", 4),
    ("change-immediate", "gfx1100/sgemm_naive", 2),
    ("change-opcode", "gfx90a/vadd", 0),
    ("swap-operands", "gfx942/sgemm_naive", 7),
    ("copy-wrong-source", "gfx90a/fa_mfma_d64", 3),
]


@pytest.mark.parametrize(("operator", "name", "seed"), MUTANTS)
def test_mutant_rejected_at_place(operator: str, name: str, seed: int) -> None:
    pre, post = _pair(name)
    mutant = mutations.OPERATORS[operator](post, random.Random(seed))
    assert mutant is not None
    report = verify_modules(mutant.module, pre, Options())
    errors = _errors(report)
    assert report.verdict is Verdict.REJECTED, mutant.description
    assert all(f.layer in ("constraints", "value-flow", "equivalence") for f in errors)
    # Nothing before the mutation is blamed in its block; where the mutated instruction itself
    # is wrong it is named; a value put in the wrong place is caught where it is read.
    here = sorted(f.place.line for f in errors if f.place.block == mutant.block and f.place.file != pre.file)
    assert not here or here[0] >= mutant.line, (mutant.description, [(f.kind, f.place.line) for f in errors][:5])
    if operator in ("wrong-use", "swap-operands", "change-opcode", "change-immediate"):
        assert here and here[0] == mutant.line, (mutant.description, [(f.kind, f.place.line) for f in errors][:5])


def test_equivalence_failure_has_concrete_input() -> None:
    pre, post = _pair("gfx90a/vadd")
    mutant = mutations.change_opcode(post, random.Random(0))
    assert mutant is not None
    report = verify_modules(mutant.module, pre, Options())
    eq = [f for f in report.findings if f.layer == "equivalence" and f.kind == "not-equivalent"]
    assert eq and eq[0].counterexample
    assert all(value.startswith("0x") for _, value in eq[0].counterexample)
    assert "in the virtual program and" in eq[0].message and eq[0].message.count("expected that") == 1


@pytest.mark.interpreted
def test_sat_answer_that_explains_no_failure_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """z3 decides a wrong allocation (no random interpretation may refute it first); if no
    obligation could be shown to fail under its model, the layer says unknown, never proved."""
    from verilocc.semantics import interpretation, obligations

    pre, post = _pair("gfx90a/vadd")
    mutant = mutations.change_opcode(post, random.Random(0))
    assert mutant is not None
    monkeypatch.setattr(interpretation.RandomInterpretation, "holds", lambda self, terms: False)
    solved = verify_modules(mutant.module, pre, Options())
    assert {f.kind for f in solved.findings if f.layer == "equivalence"} == {"not-equivalent"}  # from z3's model
    monkeypatch.setattr(obligations.Obligations, "report_failures", lambda self, pending, value: False)
    report = verify_modules(mutant.module, pre, Options())
    assert report.verdict is not Verdict.VERIFIED
    assert [(f.kind, f.severity, f.message) for f in report.findings if f.layer == "equivalence"] == [
        ("solver", "unknown", "z3 answered sat, but no obligation fails under its model")]


def test_mutation_operators_leave_input_alone() -> None:
    pre, post = _pair("gfx90a/vadd")
    before = [(i.opcode, [o.text for o in i.operands]) for b in post.functions[0].blocks for i in b.instructions]
    for op in mutations.OPERATORS.values():
        op(post, random.Random(1))
    after = [(i.opcode, [o.text for o in i.operands]) for b in post.functions[0].blocks for i in b.instructions]
    assert before == after


@pytest.mark.parametrize("pair", [
    "19/gfx942/basic-call-return.one-process",
    "19/gfx942/inline-asm-reserved-regs.reread",
    "22/gfx90a/machine-sink-loop-var-out-of-divergent-loop-swdev407790.one-process",
    "22/gfx942/scc-clobbered-sgpr-to-vmem-spill.one-process",
])
def test_inline_assembly_missing_from_the_allocation_is_rejected(pair: str) -> None:
    """Inline assembly is a side effect whatever its outputs: an allocation without one of
    LLVM's `INLINEASM` lines (a clobber-only statement, one whose output is dead) is REJECTED,
    never taken for a deleted dead definition."""
    base = FIXTURES / "llvm-tests" / "pairs" / pair
    pre = read_module(f"{base}.pre.mir")
    lines = Path(f"{base}.post.mir").read_text().split("\n")
    asm = [i for i, line in enumerate(lines) if "INLINEASM" in line]
    assert asm
    for i in asm:
        post = parse_module("\n".join(lines[:i] + lines[i + 1:]), "dropped.post.mir")
        assert verify_modules(post, pre, Options()).verdict is Verdict.REJECTED, lines[i]


@pytest.mark.parametrize(("pair", "old", "new"), [
    ("19/gfx1100/fix-frame-reg-in-custom-csr-spills.one-process", "implicit-def dead early-clobber $vgpr40",
     "implicit-def dead early-clobber $vgpr41"),
    ("22/gfx950/spill-csr-frame-ptr-reg-copy.one-process", "ADJCALLSTACKDOWN 0, 0, implicit-def dead $scc, implicit-def $sgpr32",
     "ADJCALLSTACKDOWN 0, 0, implicit-def dead $scc, implicit-def $sgpr33"),
])
def test_physical_register_written_by_the_virtual_program_is_kept(pair: str, old: str, new: str) -> None:
    """An inline-assembly clobber or the stack pointer a call-frame pseudo defines is part of
    the instruction: the allocated program writing another register instead is REJECTED, even
    where nothing reads either register afterwards."""
    base = FIXTURES / "llvm-tests" / "pairs" / pair
    text = Path(f"{base}.post.mir").read_text()
    assert text.count(old) >= 1
    report = verify_modules(parse_module(text.replace(old, new, 1), "renamed.post.mir"), read_module(f"{base}.pre.mir"),
                            Options())
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "fixed-register" and "the virtual program writes" in f.message for f in report.findings)


@pytest.mark.parametrize("address", ["$sgpr33, 0", "$sgpr32, 4"])
def test_spill_slot_addressed_otherwise_is_not_verified(address: str) -> None:
    """A stack slot is known by its frame index; a spill through another register or at an
    offset reaches other memory, so it is never VERIFIED."""
    base = FIXTURES / "llvm-tests" / "pairs" / "19/gfx908/whole-wave-register-spill.one-process"
    text = Path(f"{base}.post.mir").read_text()
    line = "SI_SPILL_WWM_V32_SAVE killed $vgpr0, %stack.3, $sgpr32, 0,"
    assert line in text
    post = parse_module(text.replace(line, line.replace("$sgpr32, 0", address)), "moved.post.mir")
    report = verify_modules(post, read_module(f"{base}.pre.mir"), Options())
    assert report.verdict is not Verdict.VERIFIED
    assert any("not the stack pointer `$sgpr32, 0`" in f.message for f in report.findings)


# --- register files ---------------------------------------------------------------------------


def _loaded(pre: Module, opcode: str) -> int | str:
    return next(i.defs[0].vreg for b in pre.functions[0].blocks for i in b.instructions if i.opcode == opcode)


def test_value_in_an_agpr_that_an_operand_cannot_read_is_rejected_there() -> None:
    """gfx90a: a loaded value (a load may write an AGPR) read by V_ADD_F32 (which reads VGPRs
    only) placed in an AGPR is REJECTED at the V_ADD_F32, as llc's machine verifier rejects it;
    that the first operand showing the register takes an AGPR does not make the others."""
    pre, post = _pair("gfx90a/vadd")
    regs = assignment_from_allocation(pre, post).regs
    v = _loaded(pre, "GLOBAL_LOAD_DWORD")
    report = _verify_assignment(pre, {**regs, v: parse_physreg("agpr0")})
    errors = _errors(report)
    assert report.verdict is Verdict.REJECTED
    assert [f.kind for f in errors] == ["class"]
    assert "`V_ADD_F32_e32` does not take AGPRs there" in errors[0].message
    assert errors[0].place.line != min(_lines_of(pre, v))


def test_value_every_operand_of_which_takes_an_agpr_may_sit_in_one() -> None:
    """gfx90a: a value loaded from global memory and only stored to LDS may sit in AGPRs (LLVM
    gives both operands AV classes); the same value read by an MFMA's A source too."""
    pre, post = _pair("gfx90a/hgemm_mfma16_w32x32")
    regs = assignment_from_allocation(pre, post).regs
    top = _top(regs, RegFile.AGPR)
    fn = pre.functions[0]
    uses = {v: [i.opcode for b in fn.blocks for i in b.instructions for op in i.operands if op.vreg == v]
            for v in regs}
    v = next(v for v, ops in uses.items() if ops[:1] == ["GLOBAL_LOAD_DWORDX4"] and set(ops[1:]) == {"DS_WRITE_B128_gfx9"})
    w = next(v for v, ops in uses.items() if ops[:1] == ["DS_READ2_B64_gfx9"] and all(o.startswith("V_MFMA") for o in ops[1:]))
    moved = {}
    top += top % 2  # tuples start at even registers
    for x in (v, w):
        n = len(regs[x].units) // 2
        moved[x] = parse_physreg("_".join(f"agpr{top + i}" for i in range(n)))
        top += n + n % 2
    report = _verify_assignment(pre, {**regs, **moved})
    assert report.verdict is Verdict.VERIFIED, [f.message for f in _errors(report)][:3]


def test_rematerialised_instruction_writing_a_file_its_operand_lacks_is_rejected() -> None:
    """LLVM's rematerialised `V_MOV_B32_e32 0` writing an AGPR (then copied where the value is
    read, so values flow as before): V_MOV_B32 writes VGPRs only, REJECTED at that line."""
    base = EXAMPLES / "gfx90a" / "reduce_sum"
    text = Path(f"{base}.post.mir").read_text()
    remat = "renamable $vgpr7 = V_MOV_B32_e32 0, implicit $exec\n"
    copies = "".join(f"    renamable $vgpr{i} = COPY renamable $vgpr7\n" for i in (6, 5, 4))
    assert remat + copies in text
    moved = text.replace(remat + copies, remat.replace("$vgpr7", "$agpr7") + copies.replace("COPY renamable $vgpr7",
                                                                                           "COPY renamable $agpr7"))
    report = verify_modules(parse_module(moved, "remat.post.mir"), read_module(f"{base}.pre.mir"), Options())
    line = text[:text.index(remat)].count("\n") + 1
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "class" and f.place.line == line and "run again" in f.message for f in report.findings)


def test_scalar_value_in_vgprs_written_by_a_paired_copy_of_its_instruction_is_rejected() -> None:
    """LLVM 15's reduce_sum on gfx90a: %31:sgpr_64 is defined by `S_MOV_B32 0`, which LLVM
    rematerialises, and otherwise only copied, so no operand of %31 shows a home. Given the
    VGPRs of a copy's other side, the program has `S_MOV_B32` write a VGPR: REJECTED at that
    instruction by the check of rematerialised instructions. Read back from LLVM's allocation,
    %31 keeps its SGPRs."""
    base = FIXTURES / "llvm" / "15" / "gfx90a" / "reduce_sum"
    pre, post = read_module(f"{base}.pre.mir"), read_module(f"{base}.post.mir")
    derived = assignment_from_allocation(pre, post)
    assert derived.regs[31].file is RegFile.SGPR
    report = _verify_assignment(pre, {**derived.regs, 31: parse_physreg("vgpr6_vgpr7")})
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "class" and "`S_MOV_B32`" in f.message and "$vgpr6" in f.message for f in _errors(report))
