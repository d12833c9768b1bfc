"""Which operands take either vector file (`verilocc.analysis.vector_operands`): the rule read
on instructions, and checked against llc's machine verifier on the allocated programs of the
examples and fixtures (an operand the rule lets name the other file must be one llc accepts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilocc.analysis.vector_operands import takes_file
from verilocc.mir.model import Instruction
from verilocc.mir.parser import parse_instruction
from verilocc.target import RegFile

from .conftest import EXAMPLES, FIXTURES, have, script

A, V = RegFile.AGPR, RegFile.VGPR


def _ins(text: str) -> Instruction:
    return parse_instruction(text)


def test_memory_data_takes_either_file_and_addresses_do_not() -> None:
    load = _ins("$vgpr6 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, implicit $exec")
    assert takes_file(load, 0, A, True) and not takes_file(load, 1, A, True)
    store = _ins("GLOBAL_STORE_DWORD $vgpr0_vgpr1, $vgpr2, 0, 0, implicit $exec")
    assert takes_file(store, 1, A, True) and not takes_file(store, 0, A, True)
    buffer = _ins("BUFFER_STORE_DWORD_OFFEN_exact $vgpr2, $vgpr1, $sgpr0_sgpr1_sgpr2_sgpr3, 0, 0, 0, 0, implicit $exec")
    assert takes_file(buffer, 0, A, True) and not takes_file(buffer, 1, A, True)
    ds = _ins("DS_WRITE_B32_gfx9 $vgpr4, $vgpr2, 0, 0, implicit $exec")
    assert takes_file(ds, 1, A, True) and not takes_file(ds, 0, A, True)
    # A scratch store's data comes first in every form, before the VGPR and SGPR addresses.
    scratch = _ins("SCRATCH_STORE_DWORD_SADDR $agpr8, $sgpr0, 0, 0, implicit $exec, implicit $flat_scr")
    assert takes_file(scratch, 0, V, True) and not takes_file(scratch, 1, A, True)
    svs = _ins("SCRATCH_STORE_DWORDX2_SVS $vgpr2_vgpr3, $vgpr1, $sgpr0, 0, 0, implicit $exec, implicit $flat_scr")
    assert takes_file(svs, 0, A, True) and not takes_file(svs, 1, A, True)
    assert not takes_file(scratch, 0, V, False)  # gfx908 has no AV memory operands


def test_operands_that_must_share_a_file_take_only_their_own() -> None:
    """Two data operands of DS_WRITE2 and the value and result of an atomic that returns one
    must lie in one file: one operand alone may not change it."""
    write2 = _ins("DS_WRITE2_B32_gfx9 $vgpr3, $vgpr2, $vgpr1, 0, 1, 0, implicit $exec")
    assert not takes_file(write2, 1, A, True) and not takes_file(write2, 2, A, True)
    rtn = _ins("$vgpr0 = GLOBAL_ATOMIC_SUB_SADDR_RTN $vgpr1, $vgpr2, $sgpr0_sgpr1, 0, 1, implicit $exec")
    assert not any(takes_file(rtn, k, A, True) for k in range(3))


def test_mfma_sources_take_either_file_and_the_accumulator_its_forms() -> None:
    agpr_form = _ins("$agpr0_agpr1_agpr2_agpr3 = V_MFMA_F32_16X16X16F16_e64 $vgpr12_vgpr13, $vgpr16_vgpr17, "
                     "$agpr0_agpr1_agpr2_agpr3, 0, 0, 0, implicit $mode, implicit $exec")
    assert takes_file(agpr_form, 1, A, True) and takes_file(agpr_form, 2, A, True)
    assert takes_file(agpr_form, 0, A, True) and not takes_file(agpr_form, 0, V, True)
    assert takes_file(agpr_form, 3, A, True) and not takes_file(agpr_form, 3, V, True)
    vgpr_form = _ins("$vgpr0_vgpr1_vgpr2_vgpr3 = V_MFMA_F32_16X16X16F16_vgprcd_e64 $vgpr12_vgpr13, $vgpr16_vgpr17, "
                     "$vgpr0_vgpr1_vgpr2_vgpr3, 0, 0, 0, implicit $mode, implicit $exec")
    assert takes_file(vgpr_form, 0, V, True) and not takes_file(vgpr_form, 0, A, True)


def test_alu_operands_take_only_their_own_file_and_copies_any() -> None:
    add = _ins("$vgpr2 = V_ADD_F32_e32 $vgpr6, $vgpr7, implicit $mode, implicit $exec")
    assert not any(takes_file(add, k, A, True) for k in range(3))
    assert takes_file(add, 3, A, True)  # implicit operands constrain nothing
    assert takes_file(_ins("$agpr0 = COPY $vgpr1"), 0, V, True)
    write = _ins("$agpr0 = V_ACCVGPR_WRITE_B32_e64 $vgpr1, implicit $exec")
    assert not takes_file(write, 0, V, True) and not takes_file(write, 1, A, True)


def test_inline_assembly_operands_take_the_file_of_their_flags_class() -> None:
    asm = _ins('INLINEASM &"; use $0", 1 /* sideeffect attdialect */, 3997705 /* reguse:AReg_64_Align2 */, '
               '$agpr0_agpr1')
    assert takes_file(asm, 3, A, True) and not takes_file(asm, 3, V, True)
    av = _ins('INLINEASM &"; use $0", 1 /* sideeffect attdialect */, 1 /* reguse:AV_32 */, $vgpr0')
    assert takes_file(av, 3, A, True) and takes_file(av, 3, V, True)
    bare = _ins('INLINEASM &"; use $0", 1, 1, $vgpr0')
    assert not takes_file(bare, 3, A, True)


# --- against llc's machine verifier ---------------------------------------------------------


_PROGRAMS = {
    "gfx90a": lambda: sorted((EXAMPLES / "gfx90a").glob("*.post.mir")) + sorted((FIXTURES / "fidelity").glob("*gfx90a.post.mir")),
    "gfx908": lambda: sorted(FIXTURES.glob("targets/*/gfx908/*.post.mir")) + sorted((FIXTURES / "fidelity").glob("*gfx908.post.mir")),
}


@pytest.mark.llc
@pytest.mark.parametrize("llc", ["llc-19", "llc-22"])
@pytest.mark.parametrize("cpu", ["gfx90a", "gfx908"])
def test_what_the_rule_lets_name_the_other_file_llc_accepts(llc: str, cpu: str, tmp_path: Path) -> None:
    """Every operand of the allocated examples and fixtures that the rule lets name the other
    vector file is accepted there by llc's machine verifier; and llc refuses it where the rule
    does not let it, on VALU operands and (on gfx908, which has no AV memory operands) on the
    data of loads and stores (the check can fail)."""
    if not have(llc):
        pytest.skip(f"{llc} is not installed (make test installs it)")
    av = cpu != "gfx908"
    probe = script("vector_operands_probe")  # checks the rule against llc on any files
    cases = probe.cases(_PROGRAMS[cpu](), av)
    allowed = [(key, text, mutated) for key, (text, mutated, ok) in sorted(cases.items()) if ok]
    refused = [(key, text, mutated) for key, (text, mutated, ok) in sorted(cases.items())
               if not ok and (key[0].endswith(("_e32", "_e64")) and key[0].startswith("V_")
                              or not av and key[0].startswith(("GLOBAL_", "DS_")) and key[1] <= 1)]
    refused = refused[:8]
    assert refused and (allowed or not av)
    checked = 0
    for key, text, mutated in allowed + refused:
        if not probe.llc_accepts(llc, cpu, text, tmp_path, "written"):
            continue  # the instruction alone is not a valid program (operands it needs elsewhere)
        checked += 1
        assert probe.llc_accepts(llc, cpu, mutated, tmp_path, "changed") == ((key, text, mutated) in allowed), (key, mutated)
    assert checked >= 3


def test_llvm22_immediate_moves_to_either_file_take_either() -> None:
    move = _ins("$agpr5 = AV_MOV_B32_IMM_PSEUDO 0, implicit $exec")
    assert takes_file(move, 0, A, True) and takes_file(move, 0, V, True)


def test_before_gfx90a_only_copies_and_immediate_moves_take_either_file() -> None:
    """gfx908 has AGPRs but no AV memory operands or MFMA sources."""
    load = _ins("$vgpr6 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, implicit $exec")
    assert takes_file(load, 0, A, True) and not takes_file(load, 0, A, False)
    assert takes_file(_ins("$agpr5 = AV_MOV_B32_IMM_PSEUDO 0, implicit $exec"), 0, A, False)
    assert takes_file(_ins("$agpr0 = COPY $vgpr1"), 0, A, False)
    mfma = _ins("$agpr0_agpr1_agpr2_agpr3 = V_MFMA_F32_4X4X1F32_e64 $vgpr1, $vgpr2, $agpr0_agpr1_agpr2_agpr3, 0, 0, 0, "
                "implicit $mode, implicit $exec")
    assert not takes_file(mfma, 1, A, False) and takes_file(mfma, 0, A, False)


def test_a_value_widens_only_to_the_twin_of_a_member_of_its_class() -> None:
    """The AV superclass adds, for each member of a VGPR class, the AGPR at its place (and the
    reverse); not a register of the class's own file that the class leaves out, nor an odd
    tuple on a target whose tuples are even."""
    from verilocc.smt.constraints import av_twin
    from verilocc.target import get_class, get_target, parse_physreg

    gfx90a, gfx1100 = get_target("gfx90a"), get_target("gfx1100")
    pair = get_class("vreg_64_align2")
    assert av_twin(get_class("vgpr_32"), parse_physreg("agpr5"), gfx90a)
    assert av_twin(pair, parse_physreg("agpr4_agpr5"), gfx90a)
    assert not av_twin(pair, parse_physreg("agpr5_agpr6"), gfx90a)
    assert not av_twin(pair, parse_physreg("vgpr4_vgpr5"), gfx90a)  # its own file: membership decides
    assert not av_twin(get_class("vgpr_32"), parse_physreg("sgpr5"), gfx90a)
    assert not av_twin(get_class("vgpr_32"), parse_physreg("agpr5"), gfx1100)  # no AGPRs
