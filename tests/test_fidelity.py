"""LLVM's own output: whole-wave mode, exec brackets, shader budgets, fixed AGPRs, processor
names. LLVM's allocations are VERIFIED; the same files with a planted fault are REJECTED."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from verilocc.findings import Verdict
from verilocc.mir.parser import parse_module, read_module
from verilocc.smt.constraints import units_name
from verilocc.target import get_target, parse_physreg
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES

FIDELITY = FIXTURES / "fidelity"
# LLVM's gfx942 exec-copy register is its stack pointer (tests/fixtures/fidelity/README.md).
SP_CLOBBERED = {"preserve-wwm-copy-dst-reg.llvm19.gfx942", "preserve-wwm-copy-dst-reg.llvm22.gfx942",
                "exec-copy-in-stack-pointer.llvm19.gfx942", "exec-copy-in-stack-pointer.llvm22.gfx942"}
PAIRS = sorted(p.name[: -len(".post.mir")] for p in FIDELITY.glob("*.post.mir"))


def _verify(post_text: str, pre: Path, name: str = "edited.post.mir") -> tuple[Verdict, list[str]]:
    report = verify_modules(parse_module(post_text, name), read_module(pre), Options())
    return report.verdict, [f"{f.layer}/{f.kind}: {f.message}" for f in report.findings if f.severity != "warning"]


def _pair(name: str) -> tuple[str, Path]:
    return (FIDELITY / f"{name}.post.mir").read_text(), FIDELITY / f"{name}.pre.mir"


@pytest.mark.parametrize("pair", [p for p in PAIRS if p not in SP_CLOBBERED])
def test_llvm_allocation_is_verified(pair: str) -> None:
    post, pre = _pair(pair)
    report = verify_modules(parse_module(post, f"{pair}.post.mir"), read_module(pre), Options())
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings]
    for fr in report.functions:
        # Every equivalence obligation made is discharged by identity or sent to z3 (as one of
        # the query's conjuncts, a repeated one once).
        assert fr.stats["obligations"] == fr.stats["discharged_by_identity"] + fr.stats["sent_to_solver"], fr.name


@pytest.mark.parametrize("pair", sorted(SP_CLOBBERED))
def test_exec_saved_in_the_stack_pointer_is_rejected(pair: str) -> None:
    """The call frame setup reads $sgpr32 (the stack pointer) after LLVM saved $exec in it."""
    verdict, findings = _verify(*_pair(pair))
    assert verdict is Verdict.REJECTED
    assert any(f.startswith("value-flow/wrong-value") and "reads `$sgpr32` expecting $sgpr32, but it holds the "
               "virtual program's $exec_lo" in f for f in findings), findings


def test_ordinary_value_in_a_wwm_register_is_rejected() -> None:
    """A register reserved for whole-wave values holding an ordinary value (the fault LLVM's
    split WWM allocation, PR #93526, removed): its inactive lanes are not protected."""
    post, pre = _pair("set-inactive-wwm-overwrite.llvm19.gfx90a")
    assert "  wwmReservedRegs:\n    - '$vgpr1'\n" in post and "renamable $vgpr0 = V_MOV_B32_e32 -1" in post
    wrong = post.replace("  wwmReservedRegs:\n    - '$vgpr1'\n", "  wwmReservedRegs:\n    - '$vgpr1'\n    - '$vgpr0'\n")
    verdict, findings = _verify(wrong, pre)
    assert verdict is Verdict.REJECTED
    assert any(f.startswith("constraints/reserved") and "$vgpr0 is reserved for whole-wave-mode values" in f
               for f in findings), findings


def test_missing_exec_restore_is_rejected() -> None:
    """Without `$exec = S_MOV_B64 $saved` the call runs with every lane on."""
    post, pre = _pair("whole-wave-register-copy.llvm19.gfx90a")
    restore = "    $exec = S_MOV_B64 killed $sgpr28_sgpr29\n"
    assert post.count(restore) == 2
    verdict, findings = _verify(post.replace(restore, "", 1), pre)
    assert verdict is Verdict.REJECTED
    assert any("$exec" in f for f in findings), findings


def test_exec_saved_over_a_live_value_is_rejected() -> None:
    """Saving $exec in the SGPRs that carry a call argument destroys the argument."""
    post, pre = _pair("whole-wave-register-copy.llvm19.gfx90a")
    first = post.index("S_OR_SAVEEXEC_B64")
    line_start = post.rindex("\n", 0, first) + 1
    line_end = post.index("$exec = S_MOV_B64 killed $sgpr28_sgpr29", first) + len("$exec = S_MOV_B64 killed $sgpr28_sgpr29")
    bracket = post[line_start:line_end]
    wrong = post[:line_start] + bracket.replace("$sgpr28_sgpr29", "$sgpr4_sgpr5") + post[line_end:]
    verdict, findings = _verify(wrong, pre)
    assert verdict is Verdict.REJECTED
    assert any("$sgpr4_sgpr5" in f or "$sgpr4" in f for f in findings), findings


def test_wwm_spill_reloaded_from_the_wrong_slot_is_rejected() -> None:
    """The VGPR holding spilled SGPR lanes is saved to a stack slot as a whole-wave spill; its
    lanes come back only from that slot."""
    post, pre = _pair("si-spill-sgpr-stack.llvm19.gfx90a")
    reload = "SI_SPILL_WWM_AV32_RESTORE %stack.1,"
    assert reload in post
    verdict, findings = _verify(post.replace(reload, "SI_SPILL_WWM_AV32_RESTORE %stack.2,", 1), pre)
    assert verdict is Verdict.REJECTED, findings


def test_shader_budget_follows_the_calling_convention() -> None:
    """An `amdgpu_vs` shader's work group is one wave, so its 256 VGPRs are within budget; as
    a compute shader (work groups up to 1024 lanes) the same allocation is beyond it."""
    post, pre = _pair("vgpr-spill-emergency-stack-slot.llvm19.gfx1100")
    assert "define amdgpu_vs void @main(" in post
    verdict, findings = _verify(post.replace("define amdgpu_vs void @main(", "define amdgpu_cs void @main("), pre)
    assert verdict is Verdict.REJECTED
    assert any(f.startswith("constraints/bounds") and "beyond this function's budget" in f for f in findings), findings


def test_fixed_agprs_of_inline_assembly_on_a_target_without_them() -> None:
    """Inline assembly may name AGPRs on gfx1100 (LLVM has them, reserved): not the
    allocator's choice, so not its fault; an allocated (renamable) AGPR there still is."""
    post, pre = _pair("agpr-register-count.llvm19.gfx1100")
    assert "implicit-def early-clobber $agpr31" in post
    wrong = post.replace("implicit-def early-clobber $agpr31", "implicit-def early-clobber renamable $agpr31", 1)
    verdict, findings = _verify(wrong, pre)
    assert verdict is Verdict.REJECTED
    assert any("outside the gfx1100 AGPR file" in f for f in findings), findings


def test_liveness_anomaly_is_discharged_by_bit_precise_semantics() -> None:
    """LLVM 19 clobbers a lane a shift by 33 never looks at: VERIFIED, with the anomaly named."""
    post, pre = _pair("sdiv3264.llvm19.gfx1100")
    report = verify_modules(parse_module(post, "sdiv.post.mir"), read_module(pre), Options())
    assert report.verdict is Verdict.VERIFIED
    (anomaly,) = [f for f in report.findings if f.kind == "liveness-anomaly"]
    assert anomaly.severity == "warning" and "S_ASHR_I64" in anomaly.message and "%14.sub2_sub3" in anomaly.message


def test_a_clobbered_lane_that_matters_is_still_rejected() -> None:
    """The same allocation with a shift by 1: the overwritten low half reaches the result."""
    post, pre = _pair("sdiv3264.llvm19.gfx1100")
    shift = ("renamable $sgpr2_sgpr3 = S_ASHR_I64 renamable $sgpr2_sgpr3, 33", "%28:sreg_64 = S_ASHR_I64 %14.sub2_sub3, 33")
    assert shift[0] in post and shift[1] in pre.read_text()
    wrong_pre = pre.read_text().replace(shift[1], shift[1][:-2] + "1")
    report = verify_modules(parse_module(post.replace(shift[0], shift[0][:-2] + "1"), "sdiv.post.mir"),
                            parse_module(wrong_pre, "sdiv.pre.mir"), Options())
    assert report.verdict is Verdict.REJECTED
    assert not any(f.kind == "liveness-anomaly" for f in report.findings)
    assert any(f.kind == "wrong-value" and "%14.sub2_sub3" in f.message for f in report.findings)


def test_packed_fp32_broadcast_leaves_the_high_component_unread() -> None:
    """LLVM 22 (greedy, gfx90a, our sgemm_64x64 kernel) reuses the high SGPR of a pair that
    `V_PK_FMA_F32 8, %a, 0, %b.sub2_sub3, ...` still names: modifiers 0 broadcast the low
    component, so the high one is never read. VERIFIED with the anomaly named."""
    post, pre = _pair("packed-broadcast.llvm22.gfx90a")
    report = verify_modules(parse_module(post, "pk.post.mir"), read_module(pre), Options())
    assert report.verdict is Verdict.VERIFIED
    anomalies = [f for f in report.findings if f.kind == "liveness-anomaly"]
    assert anomalies and all("V_PK_FMA_F32" in f.message and f.severity == "warning" for f in anomalies)


def test_packed_fp32_component_that_is_read_is_still_rejected() -> None:
    """The same allocation with the usual modifiers (8: each result reads its own component):
    the high SGPR the allocation reused is read, and the value there is wrong."""
    post, pre = _pair("packed-broadcast.llvm22.gfx90a")
    pre_text = pre.read_text()
    assert ", 0, %152.sub2_sub3, 8," in pre_text and ", 0, $sgpr6_sgpr7, 8," in post
    report = verify_modules(parse_module(post.replace(", 0, $sgpr6_sgpr7, 8,", ", 8, $sgpr6_sgpr7, 8,"), "pk.post.mir"),
                            parse_module(pre_text.replace(", 0, %152.sub2_sub3, 8,", ", 8, %152.sub2_sub3, 8,"),
                                         "pk.pre.mir"), Options())
    assert report.verdict is Verdict.REJECTED
    assert not any(f.kind == "liveness-anomaly" for f in report.findings)
    assert any(f.kind in ("wrong-value", "interference") and "%152" in f.message for f in report.findings)


def test_true16_copy_from_the_wrong_register_is_rejected() -> None:
    """A 32-to-16-bit COPY moves the low half: taken from another register, it is wrong."""
    post, pre = _pair("fma.f16.llvm22.gfx1100")
    copy = "renamable $vgpr1_lo16 = COPY killed renamable $vgpr1\n"
    assert copy in post
    verdict, findings = _verify(post.replace(copy, "renamable $vgpr1_lo16 = COPY renamable $vgpr2\n", 1), pre)
    assert verdict is Verdict.REJECTED
    assert any(f.startswith("value-flow/wrong-value") for f in findings), findings


def test_legacy_processor_names() -> None:
    assert get_target("fiji").name == "gfx803" and get_target("hawaii").name == "gfx701"
    assert get_target("tahiti").name == "gfx600"


def test_units_are_named_as_llvm_names_registers() -> None:
    assert units_name(parse_physreg("vcc").units) == "$vcc"
    assert units_name(parse_physreg("sgpr4_sgpr5").units) == "$sgpr4_sgpr5"
    odd = parse_physreg("sgpr5").units + parse_physreg("sgpr6").units
    assert units_name(odd) == "$sgpr5, $sgpr6"



@pytest.mark.parametrize("pair", ["swdev373493.llvm19.gfx90a", "swdev373493.llvm22.gfx1100"])
def test_wrong_tail_call_argument_is_rejected(pair: str) -> None:
    """The block of the second tail call is reached only from its own branch (the first tail
    call's block does not fall into it): its argument copies are checked on that path, and a
    copy swapped with its neighbour is REJECTED."""
    post, pre = _pair(pair)
    block = post.index("  bb.5.bb8:")
    copy = re.compile(r"\$vgpr(\d+) = COPY killed renamable (\$vgpr\d+)\n")
    first = copy.search(post, block)
    assert first is not None
    second = copy.search(post, first.end())
    assert second is not None and "SI_TCRETURN" in post[second.end():]
    a, b = first.start(2), second.start(2)
    wrong = post[:a] + second.group(2) + post[a + len(first.group(2)):b] + first.group(2) + post[b + len(second.group(2)):]
    verdict, findings = _verify(wrong, pre)
    assert verdict is Verdict.REJECTED
    assert any(f.startswith("value-flow/wrong-value") for f in findings), findings


def test_part_of_a_partially_defined_tuple_spilled_with_its_implicit_use() -> None:
    """llc-14 stores each SGPR of a partly defined 1024-bit tuple to a VGPR lane; the first
    store reads `$sgpr44`, never written, beside an implicit use of the whole tuple. Without
    that implicit use, or with an implicit use of a register without `$sgpr44`, the read is
    undefined."""
    post, pre = _pair("tuple-allocation-failure.llvm14.gfx908")
    tuple_ = "_".join(f"$sgpr{i}" if i == 44 else f"sgpr{i}" for i in range(44, 76))
    store = f"$vgpr40 = V_WRITELANE_B32 $sgpr44, 48, $vgpr40, implicit-def {tuple_}, implicit {tuple_}\n"
    assert store in post  # the first store of the tuple; a later one stores it again, defined
    for wrong in (store.replace(f", implicit {tuple_}", ""),
                  store.replace(f", implicit {tuple_}", ", implicit $sgpr45_sgpr46_sgpr47_sgpr48")):
        verdict, findings = _verify(post.replace(store, wrong, 1), pre)
        assert verdict is Verdict.REJECTED
        assert any(f.startswith("constraints/undefined-read") and "reads $sgpr44, which no path" in f
                   for f in findings), findings


def test_bundles_of_independent_instructions_run_in_turn() -> None:
    """LLVM bundles each GWS operation with the `S_WAITCNT` after it; neither writes what the
    other reads, so the bundle is read one instruction after the other (the pair is VERIFIED
    above). A wrong register inside such a bundle is REJECTED; a bundle whose instruction
    reads a value written inside it (`internal`) is not modelled: UNKNOWN, never VERIFIED."""
    post, pre = _pair("tail-duplication-convergent.llvm19.gfx90a")
    gws = "      DS_GWS_INIT renamable $vgpr0, 0, implicit $m0"
    assert post.count(gws) == 1 and post.count("BUNDLE implicit") == 3
    verdict, findings = _verify(post.replace(gws, gws.replace("$vgpr0,", "$vgpr1,")), pre)
    assert verdict is Verdict.REJECTED
    assert any(f.startswith("value-flow/wrong-value") and "reads `$vgpr1`" in f for f in findings), findings
    pre_gws = "      DS_GWS_INIT %37.sub0, 0, implicit $m0"
    pre_text = pre.read_text()
    assert pre_text.count(pre_gws) == 1
    report = verify_modules(parse_module(post.replace(gws, gws.replace("renamable $vgpr0,", "internal renamable $vgpr0,")),
                                         "edited.post.mir"),
                            parse_module(pre_text.replace(pre_gws, pre_gws.replace("%37", "internal %37")), "edited.pre.mir"),
                            Options())
    assert report.verdict is Verdict.UNKNOWN
    assert [f.message for f in report.findings if f.severity == "unknown"] == [
        f"bb.{f.place.block} line {f.place.line}: an instruction bundle whose instructions depend on each other is not "
        "modelled; the proof stops here" for f in report.findings if f.severity == "unknown"]
    assert sorted(f.place.file for f in report.findings if f.severity == "unknown") == ["edited.post.mir", "edited.pre.mir"]


def test_debug_instructions_are_not_executed() -> None:
    """LLVM's allocation drops the `DBG_VALUE_LIST` of a value that is dead where it stands
    (the pair is VERIFIED above): debug instructions compute nothing. One that names a
    register holding another value is not a read either; a wrong register in the instruction
    beside it is REJECTED."""
    post, pre = _pair("si-optimize-vgpr-live-range-dbg-instr.llvm19.gfx90a")
    ret = "    $exec = S_OR_B64 $exec, killed renamable $sgpr4_sgpr5, implicit-def $scc\n    SI_RETURN\n"
    assert "DBG_VALUE_LIST" in pre.read_text() and "DBG_" not in post and post.count(ret) == 1
    dbg = "    DBG_VALUE_LIST !4, !DIExpression(DW_OP_LLVM_arg, 0, DW_OP_stack_value), $vgpr2_vgpr3, debug-location !9\n"
    verdict, findings = _verify(post.replace(ret, dbg + ret), pre)
    assert verdict is Verdict.VERIFIED, findings
    verdict, findings = _verify(post.replace(ret, dbg + ret.replace("$sgpr4_sgpr5,", "$sgpr6_sgpr7,")), pre)
    assert verdict is Verdict.REJECTED
    assert any("reads `$sgpr6_sgpr7`" in f for f in findings), findings


def test_mfma_rewritten_to_its_agpr_form_is_the_same_operation() -> None:
    """LLVM 22's allocator rewrites `V_MFMA_..._vgprcd_e64` (accumulator and result in VGPRs)
    into `V_MFMA_..._e64` (in AGPRs) where it assigns the result to AGPRs: the same MFMA (the
    pair is VERIFIED above). Another MFMA in its place is REJECTED."""
    post, pre = _pair("rewrite-vgpr-mfma-to-agpr-copy-from.llvm22.gfx90a")
    assert "V_MFMA_F64_4X4X4F64_vgprcd_e64" in pre.read_text() and post.count("V_MFMA_F64_4X4X4F64_e64") == 6
    mfma = "renamable $agpr0_agpr1 = V_MFMA_F64_4X4X4F64_e64 killed $vgpr0_vgpr1, killed $vgpr2_vgpr3, killed $agpr0_agpr1"
    assert post.count(mfma) >= 1
    verdict, findings = _verify(post.replace(mfma, mfma.replace("_F64_4X4X4F64_e64", "_F64_16X16X4F64_e64"), 1), pre)
    assert verdict is Verdict.REJECTED
    assert any("V_MFMA_F64_16X16X4F64_e64" in f for f in findings), findings


def test_copy_of_an_undefined_value_leaves_its_destination_undefined() -> None:
    """`$sgpr6_sgpr7 = COPY undef %0` gives the call argument an undefined value, which any
    value refines: the allocation is VERIFIED (above) whatever the allocated program puts
    there. Without `undef` in the virtual program, the same allocation is REJECTED."""
    post, pre = _pair("fold-restore-undef-use.llvm19.gfx900")
    pre_copy, post_copy = "    $sgpr6_sgpr7 = COPY undef %0\n", "    $sgpr6_sgpr7 = COPY undef renamable $sgpr34_sgpr35\n"
    pre_text = pre.read_text()
    assert pre_text.count(pre_copy) == 1 and post.count(post_copy) == 1
    verdict, findings = _verify(post.replace(post_copy, post_copy.replace("undef ", "")), pre)
    assert verdict is Verdict.VERIFIED, findings
    report = verify_modules(parse_module(post, "p.post.mir"),
                            parse_module(pre_text.replace(pre_copy, "    $sgpr6_sgpr7 = COPY %0\n"), "p.pre.mir"), Options())
    assert report.verdict is Verdict.REJECTED
    assert any("$sgpr6_sgpr7" in f.message for f in report.findings if f.severity == "error")


def test_a_mad_whose_result_high_half_nobody_reads_ignores_the_addend_high_half() -> None:
    """LLVM 22 (greedy, gfx1100, a GPU-shaped program of the random hunt) overwrites the high
    half of `V_MAD_U64_U32`'s 64-bit addend before the MAD, whose users read `.sub0` only: the
    low half of the sum does not depend on the addend's high half. VERIFIED with the anomaly
    named; the same pair with the result's high half read is REJECTED at the MAD."""
    post, pre = _pair("mad-u64-addend-high-half.llvm22.gfx1100")
    report = verify_modules(parse_module(post, "mad.post.mir"), read_module(pre), Options())
    assert report.verdict is Verdict.VERIFIED
    (anomaly,) = [f for f in report.findings if f.kind == "liveness-anomaly"]
    assert "V_MAD_U64_U32_gfx11_e64" in anomaly.message and "%299 (lanes 0xC)" in anomaly.message
    read = ("%239:vgpr_32 = V_XOR_B32_e64 %236.sub0, %102.sub0", "renamable $vgpr21 = V_XOR_B32_e64 killed $vgpr21, $vgpr25")
    assert read[0] in pre.read_text() and read[1] in post
    wrong_pre = pre.read_text().replace(read[0], read[0].replace("%236.sub0", "%236.sub1"))
    wrong_post = post.replace(read[1], read[1].replace("killed $vgpr21,", "killed $vgpr22,"))
    report = verify_modules(parse_module(wrong_post, "mad.post.mir"), parse_module(wrong_pre, "mad.pre.mir"), Options())
    assert report.verdict is Verdict.REJECTED
    assert not any(f.kind == "liveness-anomaly" for f in report.findings)
    assert any(f.kind == "wrong-value" and "%299 (lanes 0xC)" in f.message for f in report.findings)
