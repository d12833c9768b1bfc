"""`verilocc hunt` and the known LLVM register-allocation bugs (tests/fixtures/hunt/).

Known bugs, each on pairs made from its reproducer (tests/fixtures/hunt/README.md), no llc needed:
- #61134 (LLVM 16, `-sgpr-regalloc=fast`): the SGPR stage drops the subregister index of a
  VGPR def; verilocc REJECTS LLVM 16's allocation naming a 64-bit register written as a 32-bit
  subregister, and VERIFIES LLVM 19's.
- #98474 (LLVM 13 to 19: a machine-verifier error after tail duplication, fixed in LLVM 20):
  the allocation is not a miscompile (the lane is poison), so LLVM 19's is VERIFIED; LLVM 22's
  fix adds an implicit def of the live-out undefined lanes, a liveness note: VERIFIED too.
- #59358 (gfx1100 v_mad_u64_u32 destination overlapping a source): every LLVM from 15 to 22
  puts the early-clobber result on the *undefined* high half of the addend, which LLVM's own
  semantics allow; VERIFIED, while the same result on the defined half is REJECTED as an
  early-clobber fault.
- the fast SGPR allocator of LLVM 16 to 22 deletes `%v.sub1 = COPY %v.sub0` of a VGPR tuple it
  does not allocate (found by the hunt, docs/llvm-bugs.md): REJECTED on LLVM 19 (IR) and 22
  (MIR), VERIFIED for LLVM 15 and for the greedy allocator.
- LLVM 13 to 16 put the address of a tail call that is also called before in a callee-saved
  SGPR pair, which the epilogue restores before the jump (found by the hunt on LLVM's
  `ipra.ll`, docs/llvm-bugs.md): REJECTED on LLVM 16, VERIFIED on LLVM 19.

The hunt's own parts (triage, inputs, MIR key dropping, tables) are tested without llc; the
end-to-end runs are marked `llc`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from verilocc.findings import Report, Verdict
from verilocc.hunt.check import cause_of
from verilocc.hunt.inputs import Input, file_inputs, unique_names
from verilocc.hunt.pairs import drop_yaml_key, input_triple
from verilocc.hunt.report import markdown, to_json
from verilocc.hunt.run import HuntResult, compare_modes
from verilocc.hunt.triage import TriageError, TriageRow, classify, read_triage
from verilocc.mir.parser import read_module
from verilocc.rewrite.assignment import Assignment, assignment_from_allocation, materialise
from verilocc.target import parse_physreg
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES, ROOT

KNOWN = FIXTURES / "hunt" / "known"


def _verify(stem: str) -> Report:
    return verify_modules(read_module(str(KNOWN / f"{stem}.post.mir")), read_module(str(KNOWN / f"{stem}.pre.mir")),
                          Options())


def _errors(report: Report) -> list[Any]:
    return [f for f in report.findings if f.severity == "error"]


# --- known bugs -------------------------------------------------------------------------------

def test_61134_llvm16_fast_rejected_naming_the_dropped_subregister() -> None:
    report = _verify("issue61134.llvm16.gfx90a.fast")
    assert report.verdict is Verdict.REJECTED
    first = _errors(report)[0]
    assert first.kind == "width"
    line = (KNOWN / "issue61134.llvm16.gfx90a.fast.post.mir").read_text().split("\n")[first.place.line - 1]
    assert "undef renamable $vgpr2_vgpr3, renamable $sgpr0_sgpr1 = V_ADD_CO_U32_e64" in line
    assert first.physregs == ("$vgpr2_vgpr3",) and "has 64 bits but" in first.message and ".sub0 has 32" in first.message
    # The malformed defs leave the values elsewhere than the program reads them.
    assert any(f.kind == "wrong-value" for f in _errors(report))


def test_61134_llvm19_fast_verified() -> None:
    assert _verify("issue61134.llvm19.gfx90a.fast").verdict is Verdict.VERIFIED


def test_98474_llvm19_verified() -> None:
    """LLVM 19 leaves the undefined high lane of the phi without a def (what the machine
    verifier later objects to): the lane is poison, so the allocation is correct."""
    assert _verify("issue98474.llvm19.gfx900").verdict is Verdict.VERIFIED


def test_98474_llvm22_verified() -> None:
    """LLVM 22's fix marks the undefined lane with `implicit-def $vgpr2` on the move that
    defines its neighbour: a liveness note the hardware does not write, so the move is still the
    rematerialised constant of the virtual program."""
    post = (KNOWN / "issue98474.llvm22.gfx900.post.mir").read_text()
    assert "renamable $vgpr1 = V_MOV_B32_e32 0, implicit $exec, implicit-def $vgpr2" in post
    assert _verify("issue98474.llvm22.gfx900").verdict is Verdict.VERIFIED


def test_98474_liveness_note_hides_no_clobber(tmp_path: Path) -> None:
    """The same move with its note, put on the register that holds the value EXP reads first,
    is REJECTED: only the note is ignored, never the def."""
    post = (KNOWN / "issue98474.llvm22.gfx900.post.mir").read_text()
    bad = post.replace("renamable $vgpr1 = V_MOV_B32_e32 0, implicit $exec, implicit-def $vgpr2",
                       "renamable $vgpr0 = V_MOV_B32_e32 0, implicit $exec, implicit-def $vgpr2")
    assert bad != post
    path = tmp_path / "bad.post.mir"
    path.write_text(bad)
    report = verify_modules(read_module(str(path)), read_module(str(KNOWN / "issue98474.llvm22.gfx900.pre.mir")),
                            Options())
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "wrong-value" for f in _errors(report))


@pytest.mark.parametrize("stem", ["issue59358.llvm15.gfx1100", "issue59358.llvm22.gfx1100"])
def test_59358_result_on_the_undefined_half_verified(stem: str) -> None:
    """`v_mad_u64_u32 v[1:2], null, s2, s3, v[0:1]`: the early-clobber result shares v1 with the
    addend's undefined high half only; the instruction's low result does not depend on it."""
    post = (KNOWN / f"{stem}.post.mir").read_text()
    assert "early-clobber renamable $vgpr1_vgpr2, $sgpr_null = V_MAD_U64_U32_gfx11_e64" in post
    assert "$vgpr0_vgpr1, 0, implicit $exec" in post
    assert _verify(stem).verdict is Verdict.VERIFIED


def test_59358_result_on_the_defined_half_rejected() -> None:
    pre = read_module(str(KNOWN / "issue59358.llvm15.gfx1100.pre.mir"))
    post = read_module(str(KNOWN / "issue59358.llvm15.gfx1100.post.mir"))
    regs = dict(assignment_from_allocation(pre, post).regs)
    mad = next(i for b in pre.functions[0].blocks for i in b.instructions if i.opcode.startswith("V_MAD_U64_U32"))
    result = mad.defs[0].vreg
    assert result is not None and regs[result].name == "vgpr1_vgpr2"
    regs[result] = parse_physreg("vgpr0_vgpr1")
    module, extra = materialise(pre, Assignment(file="<test>", regs=regs))
    report = verify_modules(module, pre, Options(), extra_findings=extra)
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "early-clobber" and "overlaps the use" in f.message for f in _errors(report))


def test_fast_sgpr_stage_deleting_a_subregister_copy_rejected() -> None:
    """The accumulator `undef %46.sub0 = V_MOV_B32 0; %46.sub1 = COPY %46.sub0` loses its COPY
    in LLVM 19's fast SGPR stage; the loop then reads the high half that nothing wrote."""
    stem = "regallocfast-subreg-copy.llvm19.gfx90a.fast"
    assert "%46.sub1:vreg_64_align2 = COPY %46.sub0" in (KNOWN / f"{stem}.pre.mir").read_text()
    report = _verify(stem)
    assert report.verdict is Verdict.REJECTED
    first = _errors(report)[0]
    assert first.kind == "wrong-value" and "expecting %46 (lanes 0xC)" in first.message
    assert "holds no value of the virtual program" in first.message
    assert _verify("regallocfast-subreg-copy.llvm19.gfx90a").verdict is Verdict.VERIFIED  # greedy


def test_fast_allocator_skipping_the_live_out_spill_after_a_subregister_implicit_def_rejected() -> None:
    """`%4.sub0..sub2` computed, then `%4.sub3 = IMPLICIT_DEF` last in bb.0, %4 live into bb.1:
    LLVM 19's fast allocator reloads %4 from a slot it never stored (docs/llvm-bugs.md)."""
    stem = "regallocfast-implicit-def-live-out.llvm19.gfx900.fast"
    post = (KNOWN / f"{stem}.post.mir").read_text()
    assert "SI_SPILL_V128_RESTORE %stack.4," in post and "%stack.4, $sgpr32" not in post.replace(
        "SI_SPILL_V128_RESTORE %stack.4, $sgpr32", "")
    report = _verify(stem)
    assert report.verdict is Verdict.REJECTED
    first = _errors(report)[0]
    assert first.kind == "wrong-value" and first.place.line == 151
    assert "expecting %4.sub2" in first.message and "holds no value of the virtual program" in first.message
    # The same program with the IMPLICIT_DEF before the last real def: llc stores %4, VERIFIED.
    assert _verify("regallocfast-implicit-def-live-out.moved.llvm19.gfx900.fast").verdict is Verdict.VERIFIED


def test_O0_lane_vgpr_implicit_def_in_a_loop_header_rejected() -> None:
    """LLVM 22 at -O0: the VGPR holding SGPR spill lanes is IMPLICIT_DEF in the loop header,
    so nothing reloads it there and the header's lane restores read no value of the virtual
    program; LLVM 19 keeps those lanes in a reserved VGPR: VERIFIED (docs/llvm-bugs.md)."""
    stem = "sgpr-spill-lane-vgpr-loop-header.llvm22.gfx1100.fast-O0"
    report = _verify(stem)
    assert report.verdict is Verdict.REJECTED
    first = _errors(report)[0]
    assert first.kind == "wrong-value" and "holds no value of the virtual program" in first.message
    post = (KNOWN / f"{stem}.post.mir").read_text().split("\n")
    header = next(i for i, ln in enumerate(post) if ln.strip().startswith("bb.1"))
    implicit = next(i for i in range(header, len(post)) if post[i].strip().endswith("= IMPLICIT_DEF"))
    lane_vgpr = post[implicit].split("=")[0].split()[-1]
    assert any(f"SI_RESTORE_S32_FROM_VGPR {lane_vgpr}" in ln for ln in post[implicit:first.place.line])
    # The finding follows the lane back across blocks: the SGPR read in bb.2 was restored from a
    # lane of another VGPR, which the back edge filled from a lane the header's IMPLICIT_DEF left
    # undefined. The hunt's triage reads that and sorts it (b) without a row of its own.
    m = re.search(r"restored at line (\d+) from lane (\d+) of `\$(vgpr\d+)`, copying lane (\d+) of `\$(vgpr\d+)`, "
                  r"which `IMPLICIT_DEF` at line (\d+) left undefined", first.message)
    assert m is not None, first.message
    restore, lane, vgpr, lane0, vgpr0, line = (int(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5),
                                               int(m.group(6)))
    assert f"SI_RESTORE_S32_FROM_VGPR ${vgpr}, {lane}" in post[restore - 1]
    assert post[line - 1].strip() == f"${vgpr0} = IMPLICIT_DEF" and vgpr0 != vgpr
    assert any(re.search(rf"SI_RESTORE_S32_FROM_VGPR \${vgpr0}, {lane0}\b", ln) for ln in post[line:])
    record = {"input": "stress-11", "function": first.place.function, "llvm": "22", "target": "gfx1100",
              "allocator": "fast-O0", "mode": "one-process", "verdict": "REJECTED", "kind": first.kind,
              "message": first.message, "program": "p"}
    classify([record], [])
    assert record["group"] == "b"
    assert _verify("sgpr-spill-lane-vgpr-loop-header.llvm19.gfx1100.fast-O0").verdict is Verdict.VERIFIED


def test_fast_sgpr_stage_subregister_copy_in_mir_from_llvm16() -> None:
    """The MIR reproducer: LLVM 22's fast SGPR stage deletes the three copies, LLVM 15 keeps them."""
    bad = _verify("regallocfast-subreg-copy.mir.llvm22.gfx90a.fast")
    assert bad.verdict is Verdict.REJECTED
    assert any(f.kind == "wrong-value" and "expecting %2" in f.message for f in _errors(bad))
    good = "regallocfast-subreg-copy.mir.llvm15.gfx90a.fast"
    assert (KNOWN / f"{good}.post.mir").read_text().count("= COPY renamable $vgpr") == 3
    assert _verify(good).verdict is Verdict.VERIFIED


def test_tail_call_through_a_callee_saved_pair_rejected() -> None:
    """`%9:sreg_64`, the address of @ext, serves SI_CALL and SI_TCRETURN; LLVM 16 keeps it in
    the callee-saved $sgpr46_sgpr47, so the tail call jumps to the caller's s[46:47]."""
    stem = "tailcall-csr.llvm16.gfx90a"
    assert "SI_TCRETURN killed renamable $sgpr46_sgpr47" in (KNOWN / f"{stem}.post.mir").read_text()
    report = _verify(stem)
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "wrong-value" and "reads `$sgpr46_sgpr47` expecting %9" in f.message
               and "the virtual program's $sgpr46_sgpr47" in f.message for f in _errors(report))
    fixed = "tailcall-csr.llvm19.gfx90a"
    assert "ccr_sgpr_64 = SI_PC_ADD_REL_OFFSET" in (KNOWN / f"{fixed}.pre.mir").read_text()
    assert _verify(fixed).verdict is Verdict.VERIFIED


# --- triage -----------------------------------------------------------------------------------

def _rec(**kw: Any) -> dict[str, Any]:
    base = {"input": "t", "function": "f", "llvm": "16", "target": "gfx90a", "allocator": "greedy",
            "mode": "reread", "verdict": "REJECTED", "kind": "wrong-value", "message": "reads `$v0`", "program": "p1"}
    return {**base, **kw}


def test_value_fault_with_the_same_program_verified_is_a_candidate_bug() -> None:
    bad = _rec(allocator="fast")
    good = _rec(allocator="greedy", verdict="VERIFIED")
    classify([bad, good], [])
    assert bad["group"] == "b" and "greedy reread" in bad["reason"]
    assert bad["evidence"] == ["VERIFIED, same virtual program: llc-16 gfx90a greedy reread"]
    assert "group" not in good


def test_value_fault_without_such_evidence_is_a_limitation() -> None:
    other_program = _rec(allocator="greedy", verdict="VERIFIED", program="p2")
    other_version = _rec(llvm="19", allocator="fast", verdict="VERIFIED")
    bad = _rec(allocator="fast")
    classify([bad, other_program, other_version], [])
    assert bad["group"] == "a"
    assert bad["evidence"] == ["VERIFIED elsewhere: llc-19 gfx90a fast reread"]


def test_value_fault_verified_only_the_other_way_is_a_limitation() -> None:
    """One process against reread: LLVM's liveness in memory may know a lane is not read."""
    bad = _rec(mode="one-process")
    classify([bad, _rec(mode="reread", verdict="VERIFIED")], [])
    assert bad["group"] == "a" and "the other way" in bad["reason"]
    assert bad["evidence"] == ["VERIFIED, same virtual program: llc-16 gfx90a greedy reread"]


@pytest.mark.parametrize(("changes", "group"), [
    ({"kind": "added-instruction"}, "a"),  # about verilocc's reading
    ({"verdict": "UNKNOWN", "kind": "unsupported"}, "a"),
    ({"verdict": "VERIFIED", "kind": "liveness-anomaly", "anomalies": 1}, "c"),
])
def test_groups_by_kind(changes: dict[str, Any], group: str) -> None:
    r = _rec(**changes)
    classify([r, _rec(allocator="fast", verdict="VERIFIED")], [])
    assert r["group"] == group


def test_triage_file_decides_first(tmp_path: Path) -> None:
    path = tmp_path / "triage.tsv"
    path.write_text("# comment\ninput\tfunction\tllvm\ttarget\tallocator\tmode\tkind\tmessage\tgroup\treason\n"
                    "t\tf\t1[56]\t*\t*\t*\twrong-value\t*$v0*\ta\told register classes\n")
    rows = read_triage(path)
    assert rows == [TriageRow("t", "f", "1[56]", "*", "*", "*", "wrong-value", "*$v0*", "a", "old register classes")]
    bad = _rec(allocator="fast")
    classify([bad, _rec(verdict="VERIFIED")], rows)
    assert bad["group"] == "a" and bad["reason"] == "triaged: old register classes"
    other = _rec(llvm="19", allocator="fast")
    classify([other, _rec(llvm="19", verdict="VERIFIED")], rows)
    assert other["group"] == "b"


@pytest.mark.parametrize(("line", "what"), [("t\tf\t*\n", "3 tab-separated cells"),
                                            ("*\t*\t*\t*\t*\t*\t*\t*\tz\twhy\n", "group 'z'")])
def test_malformed_triage_file(tmp_path: Path, line: str, what: str) -> None:
    path = tmp_path / "triage.tsv"
    path.write_text("# header comment\n" + line)
    with pytest.raises(TriageError, match=rf"triage.tsv:2: .*{what}"):
        read_triage(path)


def test_shipped_triage_file_reads() -> None:
    rows = read_triage(FIXTURES / "hunt" / "triage.tsv")
    assert {r.group for r in rows} <= {"a", "b", "c"} and rows


# --- inputs and pairs -------------------------------------------------------------------------

def test_inputs_from_directories() -> None:
    inputs = file_inputs([KNOWN, FIXTURES / "llvm" / "15" / "ll", FIXTURES / "llvm" / "16" / "ll"])
    names = [i.name for i in inputs]
    assert len(set(names)) == len(names)
    assert "issue61134" in names and "15.ll.gfx90a.vadd" in names and "16.ll.gfx90a.vadd" in names
    by = {i.name: i for i in inputs}
    assert by["15.ll.gfx1100.hgemm_wmma_w32x32"].target == "gfx1100"  # clang's "target-cpu"
    assert by["issue61134"].allocators == ("fast",) and by["issue61134"].target is None  # its RUN line
    assert not any(i.is_mir for i in inputs)  # a directory with .ll files: those only


def test_unique_names_go_up_as_far_as_needed() -> None:
    a = Input("k", Path("x/15/gfx90a/k.ll"))
    b = Input("k", Path("x/16/gfx90a/k.ll"))
    c = Input("m", Path("x/16/gfx90a/m.ll"))
    assert [i.name for i in unique_names([a, b, c])] == ["15.gfx90a.k", "16.gfx90a.k", "m"]


def test_unique_names_keep_the_suffix_of_same_stem_files() -> None:
    """`x.ll` and `x.mir` of one directory would otherwise share their pairs' file names."""
    ll, mir = Input("x", Path("d/x.ll")), Input("x", Path("d/x.mir"))
    other = Input("x", Path("e/x.ll"))
    assert [i.name for i in unique_names([ll, mir, other])] == ["x.ll", "x.mir", "x"]


def test_input_triple() -> None:
    assert input_triple('target triple = "amdgcn-amd-amdpal"\n') == "amdgcn-amd-amdpal"
    assert input_triple("; RUN: llc -mtriple=amdgcn--amdpal -mcpu=gfx900 < %s\n") == "amdgcn-amd-amdpal"
    assert input_triple("define void @f() { ret void }\n") == "amdgcn-amd-amdhsa"


def test_drop_yaml_key() -> None:
    text = ("machineFunctionInfo:\n  isEntryFunction: true\n  sgprForEXECCopy: '$sgpr100_sgpr101'\n"
            "  mode:\n    ieee: true\n    dx10-clamp: true\n  occupancy: 8\nregisters:\n"
            "  - { id: 0, class: sgpr_32, preferred-register: '', flags: [  ] }\n")
    once = drop_yaml_key(text, 3, 3)
    assert once is not None and "sgprForEXECCopy" not in once and "isEntryFunction: true" in once
    twice = drop_yaml_key(once, 3, 3)  # `mode:` with its nested lines
    assert twice is not None and "ieee" not in twice and "occupancy: 8" in twice
    flow = drop_yaml_key(twice, 5, twice.split("\n")[4].index("flags") + 1)
    assert flow is not None and flow.split("\n")[4] == "  - { id: 0, class: sgpr_32, preferred-register: '' }"
    assert drop_yaml_key(text, 99, 1) is None


def test_reproducer_commands() -> None:
    from verilocc.hunt.llvm import Llvm
    from verilocc.hunt.reduce import commands, rewriter_instance

    llvm = Llvm(19, "llc-19")
    assert rewriter_instance("post virtregrewriter,1; pre matches the allocator's input") == 1
    ll = commands(llvm, "gfx1100", "greedy", "one-process", "x.ll", 1, 'target triple = "amdgcn-amd-amdpal"')
    assert ll == ["llc-19 -mtriple=amdgcn-amd-amdpal -mcpu=gfx1100 -O3 -stop-before=greedy x.ll -o pre.mir",
                  "llc-19 -mtriple=amdgcn-amd-amdpal -mcpu=gfx1100 -O3 -stop-after=virtregrewriter,1 x.ll -o post.mir",
                  "verilocc verify post.mir --pre pre.mir"]
    reread = commands(llvm, "gfx1100", "greedy", "reread", "x.ll", 1, "")
    assert reread[1].endswith("-start-before=greedy -stop-after=virtregrewriter,1 pre.mir -o post.mir")
    mir = commands(llvm, "gfx90a", "greedy", "reread", "p.pre.mir", 1, "")
    assert mir == ["llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -O3 -start-before=greedy "
                   "-stop-after=virtregrewriter,1 p.pre.mir -o post.mir", "verilocc verify post.mir --pre p.pre.mir"]


# --- comparing the two ways of making a pair, and the table -----------------------------------

def _pair_files(tmp_path: Path) -> list[dict[str, Any]]:
    """Two function records per mode for one input, from real post files."""
    recs = []
    for mode, stem in (("one-process", "issue61134.llvm16.gfx90a.fast"), ("reread", "issue61134.llvm19.gfx90a.fast")):
        for side in ("pre", "post"):
            shutil.copyfile(KNOWN / f"{stem}.{side}.mir", tmp_path / f"{mode}.{side}.mir")
        recs.append(_rec(input="issue61134", function="gemv", mode=mode, allocator="fast",
                         verdict="REJECTED" if mode == "one-process" else "VERIFIED",
                         pre=f"{mode}.pre.mir", post=f"{mode}.post.mir"))
    return recs


def test_compare_modes(tmp_path: Path) -> None:
    modes = compare_modes(_pair_files(tmp_path), tmp_path)
    assert modes["functions"] == 1 and modes["different allocation"] == 1
    (d,) = modes["outcome differs"]
    assert (d["one-process"], d["reread"], d["same allocation"]) == ("REJECTED", "VERIFIED", False)


def test_table_is_deterministic(tmp_path: Path) -> None:
    recs = _pair_files(tmp_path)
    classify(recs, [])
    pairs = [{"input": "issue61134", "llvm": "16", "target": "gfx90a", "allocator": "fast", "mode": m,
              "status": "ok", "pre": f"{m}.pre.mir", "post": f"{m}.post.mir", "note": ""}
             for m in ("one-process", "reread")]
    result = HuntResult(pairs, recs, compare_modes(recs, tmp_path))
    md = markdown(result, "verilocc hunt x", {})
    assert md == markdown(result, "verilocc hunt x", {})
    assert "| 16 | gfx90a | fast | 2 | 0 | 1 | 0 | 1 | 0 | 0 |" in md
    assert "| issue61134 | gemv | 16 | gfx90a | fast | REJECTED | VERIFIED | no |" in md
    doc = json.loads(to_json(result, "verilocc hunt x", {}))
    assert doc["modes"]["different allocation"] == 1


# --- with llc ---------------------------------------------------------------------------------

def _hunt(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "verilocc", "hunt", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False, timeout=900)


@pytest.mark.llc
def test_hunt_finds_61134(tmp_path: Path) -> None:
    """LLVM 16 and 19 allocate the reproducer with greedy and fast: LLVM 16's fast allocation is
    a candidate LLVM bug, because greedy's allocation of the same virtual program is VERIFIED."""
    for v in (16, 19):
        if shutil.which(f"llc-{v}") is None:
            pytest.skip(f"llc-{v} is not installed")
    args = [str(KNOWN / "issue61134.ll"), "--llvm", "16,19", "--targets", "gfx90a", "--regalloc", "greedy",
            "--modes", "one-process", "--out", str(tmp_path / "out"), "--triage", str(tmp_path / "none.tsv")]
    proc = _hunt(args, ROOT)
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "out" / "hunt.json").read_text())
    bugs = [r for r in doc["functions"] if r.get("group") == "b"]
    assert [(r["llvm"], r["allocator"], r["kind"]) for r in bugs] == [("16", "fast", "width")]
    verified = {(r["llvm"], r["allocator"]) for r in doc["functions"] if r["verdict"] == "VERIFIED"}
    assert verified == {("16", "greedy"), ("19", "greedy"), ("19", "fast")}
    md = (tmp_path / "out" / "hunt.md").read_text()
    assert "**issue61134** `gemv`" in md and "-sgpr-regalloc=fast -vgpr-regalloc=fast" in md
    # Run again: the pairs are made again, identical, and not verified again.
    rerun = _hunt(args, ROOT)
    assert rerun.returncode == 1 and "4 pairs verified before by this verilocc" in rerun.stderr
    assert (tmp_path / "out" / "hunt.md").read_text() == md
    # Sorted again with a triage row, without llc runs: the case becomes (a), with the reason.
    (tmp_path / "triage.tsv").write_text("issue61134\tgemv\t16\t*\tfast\t*\twidth\t*\ta\tread by a human\n")
    again = _hunt([str(KNOWN / "issue61134.ll"), "--llvm", "16,19", "--targets", "gfx90a", "--retable",
                   "--out", str(tmp_path / "out"), "--triage", str(tmp_path / "triage.tsv")], ROOT)
    assert again.returncode == 0, again.stderr[-2000:]
    doc = json.loads((tmp_path / "out" / "hunt.json").read_text())
    (case,) = [r for r in doc["functions"] if r.get("group")]
    assert (case["group"], case["reason"]) == ("a", "triaged: read by a human")


@pytest.mark.llc
def test_mir_input_for_older_llc(tmp_path: Path) -> None:
    """A fuzzer program (LLVM 19 MIR) allocated by llc-13: keys it does not know are dropped."""
    if shutil.which("llc-13") is None:
        pytest.skip("llc-13 is not installed")
    from verilocc.fuzz.generate import random_program
    from verilocc.hunt.llvm import installed
    from verilocc.hunt.pairs import PairFactory, PairTask

    (llvm,), _ = installed([13])
    src = tmp_path / "p.pre.mir"
    src.write_text(random_program("gfx90a", 3).text)
    outcome = PairFactory(tmp_path / "out", 300).make(PairTask(llvm, "gfx90a", "greedy", src, "p", "reread"))
    assert outcome.status == "ok", outcome.note
    assert outcome.pre is not None and "sgprForEXECCopy" not in outcome.pre.read_text()
    skipped = PairFactory(tmp_path / "out", 300).make(PairTask(llvm, "gfx90a", "greedy", src, "p", "one-process"))
    assert skipped.status == "skip"


@pytest.mark.llc
@pytest.mark.parametrize(("version", "interesting"), [(16, True), (19, False)])
def test_interestingness(version: int, interesting: bool) -> None:
    if shutil.which(f"llc-{version}") is None:
        pytest.skip(f"llc-{version} is not installed")
    from verilocc.hunt.interesting import main

    argv = ["--llc", f"llc-{version}", "--version", str(version), "--target", "gfx90a", "--allocator", "fast",
            "--mode", "one-process", "--function", "gemv", "--kind", "width", str(KNOWN / "issue61134.ll")]
    assert main(argv) == (0 if interesting else 1)


@pytest.mark.parametrize(("args", "what"), [
    (["--regalloc", "pbqp", "x.ll"], "unknown allocator 'pbqp'"),
    (["no/such/file.ll"], "no such file or directory"),
    ([], "nothing to hunt"),
])
def test_bad_usage_is_one_line(args: list[str], what: str, tmp_path: Path) -> None:
    proc = _hunt([*args, "--llvm", "19", "--out", str(tmp_path / "out")], tmp_path)
    if proc.returncode != 2 and shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not installed")
    assert proc.returncode == 2, proc.stderr
    assert what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize(("source", "cause"), [
    ("renamable $vgpr0 = nofpexcept V_ADD_F32_e64 0, $vgpr1, 0, $vgpr2, 0, 0, implicit $mode, implicit $exec", "other"),
    ("renamable $sgpr6_sgpr7 = S_ANDN2_B64 killed renamable $sgpr6_sgpr7, $exec, implicit-def dead $scc",
     "EXEC control flow"),
    ("$exec = S_MOV_B64 killed renamable $sgpr4_sgpr5", "EXEC control flow"),
    ("renamable $sgpr4_sgpr5 = S_AND_SAVEEXEC_B64 killed renamable $sgpr6_sgpr7, implicit-def $exec, "
     "implicit-def $scc, implicit $exec", "EXEC control flow"),
])
def test_the_exec_every_vector_instruction_reads_is_not_exec_control_flow(source: str, cause: str) -> None:
    assert cause_of("wrong-value", "bb.1 line 9: reads `$vgpr1` expecting %4, but it holds %5", source, False) == cause


def test_a_value_restored_from_a_lane_an_implicit_def_left_undefined_is_a_candidate_bug() -> None:
    undefined = _rec(message="bb.20 line 3235: reads `$sgpr2` expecting %1219, but it holds no value of the virtual "
                             "program (restored at line 3200 from lane 0 of `$vgpr187`, which `IMPLICIT_DEF` at line "
                             "3199 left undefined)")
    plain = _rec(message="bb.20 line 3235: reads `$sgpr2` expecting %1219, but it holds no value of the virtual program")
    classify([undefined, plain], [])
    assert undefined["group"] == "b" and "IMPLICIT_DEF" in undefined["reason"]
    assert plain["group"] == "a"


def test_O0_lane_restored_from_an_implicit_def_in_the_same_block_says_so() -> None:
    """LLVM 22 at -O0 (seed 37 of the random hunt, reduced): a loop header restores an SGPR from
    a lane of a VGPR right after that VGPR's IMPLICIT_DEF. The finding names both lines, and the
    hunt's triage sorts it (b) without a human; LLVM 19's allocation of the same IR is VERIFIED."""
    stem = "sgpr-spill-lane-implicit-def-read"
    report = _verify(f"{stem}.llvm22.gfx1200.fast-O0")
    assert report.verdict is Verdict.REJECTED
    first = _errors(report)[0]
    post = (KNOWN / f"{stem}.llvm22.gfx1200.fast-O0.post.mir").read_text().split("\n")
    m = re.search(r"restored at line (\d+) from lane (\d+) of `\$(vgpr\d+)`, which `IMPLICIT_DEF` at line (\d+) "
                  r"left undefined", first.message)
    assert first.kind == "wrong-value" and m is not None, first.message
    restore, lane, vgpr, implicit = int(m.group(1)), m.group(2), m.group(3), int(m.group(4))
    assert post[implicit - 1].strip() == f"${vgpr} = IMPLICIT_DEF"
    assert f"SI_RESTORE_S32_FROM_VGPR ${vgpr}, {lane}" in post[restore - 1]
    assert implicit < restore < first.place.line
    record = {"input": "stress-37", "function": first.place.function, "llvm": "22", "target": "gfx1200",
              "allocator": "fast-O0", "mode": "one-process", "verdict": "REJECTED", "kind": first.kind,
              "message": first.message, "program": "p"}
    classify([record], [])
    assert record["group"] == "b"
    assert _verify(f"{stem}.llvm19.gfx1200.fast-O0").verdict is Verdict.VERIFIED
