"""Tests for verilocc.target: registers, subregister lanes, classes, gfx facts.

Three tiers: table facts (always), the real llc corpus (conftest.CORPUS; skipped when it is
absent), and cross-checks against llc-19 / llc-22 (skipped when the binary is missing). Set
VERILOCC_SLOW_TESTS=1 to check every register class name the installed LLVMs define.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import TypeVar
from pathlib import Path

import pytest

from verilocc.errors import TargetError
from verilocc.target import (
    PhysReg,
    RegFile,
    base_class_names,
    compose,
    function_budget,
    function_reserved_registers,
    get_class,
    get_target,
    index_for_range,
    is_defined,
    is_reserved,
    parse_physreg,
    reservations,
    subreg_mask,
    subreg_range,
    target_names,
    units_overlap,
)
from verilocc.target import subregs
from verilocc.target.gfx import FIXED_SGPRS_FOR_INIT_BUG
from verilocc.target.registers import special_register_names

from .conftest import CORPUS  # VERILOCC_CORPUS, or ../shared/corpus beside the checkout
SLOW = os.environ.get("VERILOCC_SLOW_TESTS") == "1"
T = TypeVar("T")
R = TypeVar("R")


def reg(name: str) -> PhysReg:
    return parse_physreg(name)


# =============================================================================================
# Registers
# =============================================================================================
def test_parse_names_and_files() -> None:
    assert reg("$vgpr4_vgpr5") is reg("vgpr4_vgpr5")
    r = reg("vgpr4_vgpr5")
    assert (r.file, r.index, r.width32, r.width16) == (RegFile.VGPR, 4, 2, 4)
    assert reg("sgpr0_sgpr1_sgpr2_sgpr3").file is RegFile.SGPR
    assert reg("agpr7").file is RegFile.AGPR
    h = reg("vgpr3_hi16")
    assert (h.file, h.index, h.width16, h.width32, h.is_half) == (RegFile.VGPR, 3, 1, 0, True)
    for special in ("vcc", "vcc_lo", "exec", "m0", "scc", "sgpr_null", "mode", "ttmp0_ttmp1", "flat_scr_hi"):
        assert reg(special).file is RegFile.SPECIAL and reg(special).index == -1
    assert reg("vcc").width32 == 2 and reg("exec_lo").width32 == 1 and reg("scc").width32 == 1
    # syntactic: parses although LLVM does not define it
    assert reg("sgpr1_sgpr2").index == 1 and not is_defined(reg("sgpr1_sgpr2"))


@pytest.mark.parametrize(
    "name",
    [
        "vgpr", "vgpr1_vgpr3", "vgpr2_vgpr1", "vgpr1_agpr2", "sgpr106", "agpr256", "vgpr1024",
        "vcc_mid", "VGPR0", "vgpr01", "m0_gfx11plus", "ttmp16", "sgpr_null_hi_hi", "", "$",
        "exec_lo_lo32", "vgpr0_lo16_vgpr0_hi16", "scratch_wave_offset_reg",
    ],
)  # fmt: skip
def test_parse_rejects_unknown(name: str) -> None:
    with pytest.raises(TargetError):
        parse_physreg(name)


def test_units_compose() -> None:
    assert reg("vcc").units == reg("vcc_lo").units + reg("vcc_hi").units
    assert reg("exec").units == reg("exec_lo").units + reg("exec_hi").units
    assert reg("vgpr0_vgpr1_vgpr2").units == reg("vgpr0").units + reg("vgpr1").units + reg("vgpr2").units
    assert reg("vgpr9").units == reg("vgpr9_lo16").units + reg("vgpr9_hi16").units
    assert reg("sgpr_null64").units == reg("sgpr_null").units + reg("sgpr_null_hi").units
    assert reg("ttmp4_ttmp5_ttmp6_ttmp7").units == reg("ttmp4_ttmp5").units + reg("ttmp6_ttmp7").units
    # every special register has its own units, globally unique per 16 bits
    owners: dict[int, str] = {}
    atoms = [n for n in special_register_names() if not reg(n).is_atomic or n in ("scc", "mode")]
    for name in atoms + [f"sgpr{i}" for i in range(106)] + [f"vgpr{i}" for i in range(256)]:
        r = reg(name)
        if r.width32 != 1 or r.file is RegFile.SPECIAL and ("_lo16" in name or "_hi16" in name):
            continue
        for u in r.units:
            assert u not in owners, (name, owners.get(u))
            owners[u] = name


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("vcc", "vcc_lo", True), ("vcc", "vcc_hi", True), ("vcc_lo", "vcc_hi", False),
        ("vgpr0_vgpr1", "vgpr1", True), ("vgpr0_vgpr1", "vgpr2", False),
        ("vgpr1_vgpr2", "vgpr2_vgpr3", True), ("vgpr0", "agpr0", False), ("vgpr0", "sgpr0", False),
        ("vgpr0", "vgpr0_hi16", True), ("vgpr0_lo16", "vgpr0_hi16", False),
        ("exec", "exec_hi_lo16", True), ("sgpr_null64", "sgpr_null", True),
        ("scc", "vcc", False), ("mode", "m0", False), ("m0", "m0_lo16", True),
        ("sgpr96_sgpr97_sgpr98_sgpr99", "sgpr98", True), ("src_shared_base", "src_shared_base_lo", True),
        ("ttmp0_ttmp1", "ttmp1", True), ("ttmp0", "sgpr0", False),
    ],
)  # fmt: skip
def test_aliasing(a: str, b: str, overlap: bool) -> None:
    assert units_overlap(reg(a), reg(b)) is overlap
    assert units_overlap(reg(b), reg(a)) is overlap


@pytest.mark.parametrize(
    ("name", "defined"),
    [
        ("sgpr0_sgpr1", True), ("sgpr1_sgpr2", False), ("sgpr2_sgpr3_sgpr4", False),
        ("sgpr4_sgpr5_sgpr6", True), ("sgpr2_sgpr3_sgpr4_sgpr5", False),
        ("sgpr100_sgpr101_sgpr102_sgpr103", True), ("sgpr104_sgpr105", True),
        ("vgpr1_vgpr2", True), ("vgpr3_vgpr4_vgpr5", True), ("agpr1_agpr2_agpr3_agpr4_agpr5_agpr6_agpr7", True),
        ("vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7_vgpr8_vgpr9_vgpr10_vgpr11_vgpr12", False),
        ("ttmp1_ttmp2", False), ("ttmp4_ttmp5_ttmp6_ttmp7", True),
    ],
)  # fmt: skip
def test_is_defined(name: str, defined: bool) -> None:
    assert is_defined(reg(name)) is defined


def test_llvm_version_differences() -> None:
    assert is_defined(reg("vgpr300"), 22) and not is_defined(reg("vgpr300"), 19)
    assert is_defined(reg("sgpr_null128"), 22) and not is_defined(reg("sgpr_null128"), 19)
    assert is_defined(reg("ttmp3_ttmp4_ttmp5"), 19) and not is_defined(reg("ttmp3_ttmp4_ttmp5"), 22)
    assert is_defined(reg("ttmp4_ttmp5_ttmp6"), 22) and not is_defined(reg("ttmp4_ttmp5_ttmp6"), 19)


def test_subreg() -> None:
    assert reg("vgpr4_vgpr5").subreg("sub1") == reg("vgpr5")
    assert reg("vgpr4_vgpr5").subreg("sub0") == reg("vgpr4")
    assert reg("vgpr0_vgpr1_vgpr2_vgpr3").subreg("sub1_sub2") == reg("vgpr1_vgpr2")
    assert reg("vgpr0_vgpr1_vgpr2_vgpr3").subreg("sub2_sub3") == reg("vgpr2_vgpr3")
    assert reg("vgpr7").subreg("hi16") == reg("vgpr7_hi16")
    assert reg("vgpr6_vgpr7").subreg("sub1_lo16") == reg("vgpr7_lo16")
    assert reg("vgpr6_vgpr7").subreg("lo16") == reg("vgpr6_lo16")
    assert reg("vcc").subreg("sub0") == reg("vcc_lo") and reg("exec").subreg("sub1") == reg("exec_hi")
    assert reg("vcc").subreg("hi16") == reg("vcc_lo_hi16")
    assert reg("sgpr_null64").subreg("sub1") == reg("sgpr_null_hi")
    assert reg("src_private_base").subreg("sub0") == reg("src_private_base_lo")
    quad = reg("sgpr4_sgpr5_sgpr6_sgpr7")
    assert quad.subreg("sub1_sub2").name == "sgpr5_sgpr6" and not is_defined(quad.subreg("sub1_sub2"))
    for bad_reg, idx in [("vgpr4_vgpr5", "sub2"), ("vgpr4", "sub1"), ("vgpr4_vgpr5", "sub1_sub2"),
                         ("scc", "sub0"), ("vgpr4_hi16", "lo16"), ("src_shared_base", "sub1"),
                         ("vgpr4_vgpr5", "sub0_sub2"), ("vgpr4_vgpr5", "sub7_lo16x")]:  # fmt: skip
        with pytest.raises(TargetError):
            reg(bad_reg).subreg(idx)


# =============================================================================================
# Subregister indices and lane masks
# =============================================================================================
@pytest.mark.parametrize(
    ("idx", "mask", "rng"),
    [
        ("sub0", 0x3, (0, 2)), ("sub1", 0xC, (2, 2)), ("sub2", 0x30, (4, 2)),
        ("sub0_sub1", 0xF, (0, 4)), ("sub1_sub2", 0x3C, (2, 4)), ("sub2_sub3", 0xF0, (4, 4)),
        ("sub0_sub1_sub2_sub3", 0xFF, (0, 8)), ("sub17", 0xC00000000, (34, 2)),
        ("sub31", 0xC000000000000000, (62, 2)),
        ("hi16", 0x1, (1, 1)), ("lo16", 0x2, (0, 1)), ("sub1_hi16", 0x4, (3, 1)), ("sub1_lo16", 0x8, (2, 1)),
        ("lo16_hi16_sub1_lo16_sub1_hi16_sub2_lo16_sub2_hi16_sub3_lo16_sub3_hi16_sub4_lo16_sub4_hi16"
         "_sub5_lo16_sub5_hi16_sub6_lo16_sub6_hi16", 0x3FFF, (0, 14)),
    ],
)  # fmt: skip
def test_subreg_masks(idx: str, mask: int, rng: tuple[int, int]) -> None:
    assert subreg_mask(idx) == mask
    assert subreg_range(idx) == rng
    assert index_for_range(*rng) == idx


@pytest.mark.parametrize(
    "idx",
    ["sub32", "sub0_lo16", "sub0_sub2", "sub1_sub0", "sub0_sub1_sub2_sub3_sub4_sub5_sub6", "lo16_hi16",
     "hi16_sub1_lo16", "sub", "sub01", "lo32", "sub30_sub31_sub32", ""],
)  # fmt: skip
def test_unknown_subreg_indices(idx: str) -> None:
    with pytest.raises(TargetError):
        subreg_mask(idx)


def test_index_algebra() -> None:
    indices = subregs.all_subreg_indices()
    assert len(indices) == len(set(indices)) == 399
    for idx in indices:
        assert index_for_range(*subreg_range(idx)) == idx
        assert subregs.mask_to_slots(subreg_mask(idx)) == tuple(range(*_span(subreg_range(idx))))
    assert compose("sub2_sub3", "sub1") == "sub3"
    assert compose("sub4_sub5_sub6_sub7", "sub1_sub2") == "sub5_sub6"
    assert compose("sub1", "hi16") == "sub1_hi16"
    assert compose("sub0", "lo16") == "lo16"
    with pytest.raises(TargetError):
        compose("sub0_sub1", "sub2")
    with pytest.raises(TargetError):
        compose("sub0_sub1_sub2_sub3_sub4_sub5_sub6_sub7", "sub0_sub1_sub2_sub3_sub4_sub5_sub6")


def _span(rng: tuple[int, int]) -> tuple[int, int]:
    return (rng[0], rng[0] + rng[1])


def test_lanes() -> None:
    pair = reg("vgpr0_vgpr1")
    assert pair.lanes(0xC) == reg("vgpr1").units
    assert pair.lanes(0x3) == reg("vgpr0").units
    assert pair.lanes(0x1) == reg("vgpr0_hi16").units
    assert pair.lanes(0x2) == reg("vgpr0_lo16").units
    assert pair.lanes(0xF) == pair.units == pair.lanes(subregs.ALL_LANES)
    assert pair.lanes(0) == ()
    assert reg("scc").lanes(0x1) == reg("scc").units
    assert reg("vcc").lanes(subreg_mask("sub1")) == reg("vcc_hi").units
    assert pair.full_mask == 0xF and reg("vgpr0_vgpr1_vgpr2_vgpr3").full_mask == 0xFF
    with pytest.raises(TargetError):
        pair.lanes(0x30)


# =============================================================================================
# Register classes
# =============================================================================================
GFX90A, GFX908, GFX942, GFX1100 = (get_target(n) for n in ("gfx90a", "gfx908", "gfx942", "gfx1100"))


def test_alignment_per_target() -> None:
    odd, even = reg("vgpr1_vgpr2"), reg("vgpr2_vgpr3")
    assert not get_class("vreg_64_align2").contains(odd, GFX90A)
    assert get_class("vreg_64_align2").contains(even, GFX90A)
    assert get_class("vreg_64").contains(odd, GFX1100)
    assert get_class("vreg_64").contains(odd, GFX908)
    assert not get_class("vreg_64").contains(odd, GFX90A)  # needsAlignedVGPRs: hardware rule
    assert not get_class("vreg_64_align2").contains(odd, GFX1100)  # the class itself is even-only
    assert not get_class("areg_128_align2").contains(reg("agpr1_agpr2_agpr3_agpr4"), GFX908)
    assert get_class("areg_128").contains(reg("agpr1_agpr2_agpr3_agpr4"), GFX908)
    assert not get_class("areg_128").contains(reg("agpr1_agpr2_agpr3_agpr4"), GFX942)
    assert get_class("vreg_96_align2").contains(reg("vgpr4_vgpr5_vgpr6"), GFX90A)
    assert not get_class("vreg_96_align2").contains(reg("vgpr5_vgpr6_vgpr7"), GFX90A)
    for t in (GFX90A, GFX908, GFX1100):
        assert not get_class("sgpr_64").contains(reg("sgpr1_sgpr2"), t)
        assert get_class("sgpr_64").contains(reg("sgpr2_sgpr3"), t)
        assert get_class("sreg_64").contains(reg("sgpr2_sgpr3"), t)
        assert not get_class("sgpr_128").contains(reg("sgpr2_sgpr3_sgpr4_sgpr5"), t)
        assert get_class("sgpr_128").contains(reg("sgpr4_sgpr5_sgpr6_sgpr7"), t)
        assert not get_class("sgpr_96").contains(reg("sgpr2_sgpr3_sgpr4"), t)
        assert get_class("vgpr_32").contains(reg("vgpr255"), t)
        assert not get_class("vgpr_32").contains(reg("vgpr256"), t)  # LLVM 22 defines it (gfx1250)


@pytest.mark.parametrize(
    ("cls", "name", "member"),
    [
        ("sreg_32", "m0", True), ("sreg_32", "exec_lo", True), ("sreg_32", "vcc_lo", True),
        ("sreg_32_xm0", "m0", False), ("sreg_32_xm0", "exec_hi", True),
        ("sreg_32_xm0_xexec", "exec_lo", False), ("sreg_32_xm0_xexec", "m0", False),
        ("sreg_32_xm0_xexec", "vcc_hi", True), ("sreg_32_xm0_xexec", "sgpr_null", True),
        ("sreg_32_xexec", "m0", True), ("sreg_32_xexec", "exec_lo", False),
        ("sreg_32_xexec_hi", "exec_lo", True), ("sreg_32_xexec_hi", "exec_hi", False),
        ("sreg_32_xexec_hi_and_sreg_32_xm0", "exec_lo", True),
        ("sreg_32_xexec_hi_and_sreg_32_xm0", "exec_hi", False),
        ("sreg_32_xexec_hi_and_sreg_32_xm0", "m0", False),
        ("sreg_32_xexec_hi_and_sreg_32_xm0", "sgpr7", True),
        ("sreg_64", "vcc", True), ("sreg_64", "exec", True), ("sreg_64_xexec", "exec", False),
        ("sreg_64_xexec", "vcc", True), ("sreg_64_xexec", "sgpr_null64", True),
        ("sreg_64_xexec_xnull", "sgpr_null64", False), ("sgpr_64", "vcc", False),
        ("sgpr_32", "vcc_lo", False), ("sreg_32", "scc", False), ("sreg_32", "mode", False),
        ("vgpr_32", "agpr0", False), ("av_32", "agpr0", True), ("av_32", "vgpr0", True),
        ("av_64_align2", "agpr2_agpr3", True), ("av_64_align2", "agpr1_agpr2", False),
        ("vgpr_16", "vgpr3_hi16", True), ("vgpr_16", "vgpr3", False), ("sgpr_lo16", "sgpr3_lo16", True),
        ("sgpr_lo16", "sgpr3_hi16", False), ("vreg_1", "vgpr0", False),
        ("ccr_sgpr_64", "sgpr28_sgpr29", True), ("ccr_sgpr_64", "sgpr30_sgpr31", False),
        ("gfx_ccr_sgpr_64", "sgpr36_sgpr37", True), ("gfx_ccr_sgpr_64", "sgpr34_sgpr35", False),
        ("vgpr_32_lo128", "vgpr127", True), ("vgpr_32_lo128", "vgpr128", False),
        ("av_96_with_sub1_sub2_in_av_64_align2", "vgpr1_vgpr2_vgpr3", True),
        ("av_96_with_sub1_sub2_in_av_64_align2", "agpr3_agpr4_agpr5", True),
        ("av_96_with_sub1_sub2_in_av_64_align2", "vgpr2_vgpr3_vgpr4", False),
        ("sgpr_128_with_sub0_sub1_in_ccr_sgpr_64", "sgpr28_sgpr29_sgpr30_sgpr31", True),
        ("sgpr_128_with_sub0_sub1_in_ccr_sgpr_64", "sgpr32_sgpr33_sgpr34_sgpr35", False),
    ],
)  # fmt: skip
def test_class_membership(cls: str, name: str, member: bool) -> None:
    assert get_class(cls).contains(reg(name), GFX908) is member
    assert get_class(cls).contains_llvm(reg(name)) is member


def test_agprs_only_with_mai() -> None:
    assert get_class("av_32").contains(reg("agpr0"), GFX90A)
    assert not get_class("av_32").contains(reg("agpr0"), GFX1100)
    assert get_class("areg_128").members(GFX1100) == []
    assert len(get_class("av_32").members(GFX908)) == 512
    assert len(get_class("av_32").members(GFX1100)) == 256


def test_class_shapes_and_order() -> None:
    v64 = get_class("vreg_64_align2")
    assert (v64.width_units, v64.width32, v64.files) == (4, 2, frozenset({RegFile.VGPR}))
    assert [r.name for r in v64.members(GFX90A)[:3]] == ["vgpr0_vgpr1", "vgpr2_vgpr3", "vgpr4_vgpr5"]
    assert len(v64.members(GFX90A)) == 128
    assert len(get_class("vreg_64").members(GFX90A)) == 128  # odd pairs dropped on gfx90a
    assert len(get_class("vreg_64").members(GFX908)) == 255
    assert get_class("vgpr_16").width_units == 1 and get_class("vreg_1024").width_units == 64
    assert [r.name for r in get_class("vgpr_16").members(GFX1100)[:3]] == ["vgpr0_lo16", "vgpr0_hi16", "vgpr1_lo16"]
    av = get_class("av_64").members(GFX908)
    assert av[0].file is RegFile.VGPR and av[-1].file is RegFile.AGPR  # VGPRs are tried first
    s32 = [r.name for r in get_class("sreg_32").members(GFX90A)]
    assert s32[:2] == ["sgpr0", "sgpr1"] and s32[106] == "vcc_lo" and "m0" in s32 and "exec_lo" in s32
    assert get_class("sgpr_128").members(GFX90A)[-1].name == "sgpr100_sgpr101_sgpr102_sgpr103"
    assert get_class("vreg_1").members(GFX90A) == []
    assert get_class("sreg_32").files == frozenset({RegFile.SGPR, RegFile.SPECIAL})


def test_defined_class_table_is_consistent() -> None:
    from verilocc.target.classes import _BASE, _check_bases

    _check_bases()  # every defined class, also those no kernel here uses
    assert len(_BASE) > 100


def test_allocatable_members_drop_reserved() -> None:
    names = {r.name for r in get_class("sreg_32").allocatable_members(GFX90A)}
    assert {"vcc_lo", "vcc_hi", "sgpr101"} <= names
    assert not names & {"m0", "exec_lo", "exec_hi", "sgpr102", "sgpr_null", "flat_scr_lo", "ttmp0", "src_scc"}
    s64 = {r.name for r in get_class("sreg_64").allocatable_members(GFX1100)}
    assert "vcc" in s64 and "exec" not in s64 and "sgpr104_sgpr105" in s64
    gfx90a_s64 = {r.name for r in get_class("sreg_64").allocatable_members(GFX90A)}
    assert "sgpr100_sgpr101" in gfx90a_s64 and "sgpr102_sgpr103" not in gfx90a_s64
    res = reservations(GFX90A).with_registers(["$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr32"])
    quads = {r.name for r in get_class("sgpr_128").allocatable_members(GFX90A, res)}
    assert "sgpr96_sgpr97_sgpr98_sgpr99" not in quads and "sgpr32_sgpr33_sgpr34_sgpr35" not in quads
    assert "sgpr92_sgpr93_sgpr94_sgpr95" in quads


@pytest.mark.parametrize(
    "name",
    ["vreg_65", "foo", "", "vgpr_16_lo128", "m0_class", "scc_class", "sreg_128", "ttmp_64", "vs_32",
     "vreg_64_with_sub0_in_vgpr_32",  # same members as vreg_64: TableGen never names it
     "vreg_64_with_sub1",  # every pair has sub1
     "vreg_64_with_sub2_in_vgpr_32",  # sub2 does not fit in 64 bits
     "vreg_64_with_sub1_in_sgpr_32",  # empty
     "vreg_64_and_sgpr_64", "vreg_64_and_vreg_128"],
)  # fmt: skip
def test_unknown_classes(name: str) -> None:
    with pytest.raises(TargetError):
        get_class(name)


def test_class_names_any_case() -> None:
    assert get_class("VReg_64_Align2") == get_class("vreg_64_align2")
    assert "sreg_64_xexec" in base_class_names() and "vgpr_16_lo128" not in base_class_names()


# =============================================================================================
# Targets, occupancy, budgets
# =============================================================================================
def test_targets_known_and_unknown() -> None:
    for name in ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200"):
        assert name in target_names()
        assert get_target(name).name == name
    for bad in ("gfx1250", "gfx90a:xnack-", "sm_80", "", "gfx1100 x", "gfx9"):
        with pytest.raises(TargetError):
            get_target(bad)


@pytest.mark.parametrize(
    ("name", "gen", "wave", "sgprs", "agprs", "unified", "aligned", "granule", "waves"),
    [
        ("gfx900", "gfx9", 64, 102, False, False, False, 4, 10),
        ("gfx908", "gfx9", 64, 102, True, False, False, 4, 10),
        ("gfx90a", "gfx9", 64, 102, True, True, True, 8, 8),
        ("gfx942", "gfx9", 64, 102, True, True, True, 8, 8),
        ("gfx950", "gfx9", 64, 102, True, True, True, 8, 8),
        ("gfx1030", "gfx10", 32, 106, False, False, False, 16, 16),
        ("gfx1100", "gfx11", 32, 106, False, False, False, 24, 16),
        ("gfx1200", "gfx12", 32, 106, False, False, False, 24, 16),
    ],
)  # fmt: skip
def test_target_facts(
    name: str, gen: str, wave: int, sgprs: int, agprs: bool, unified: bool, aligned: bool, granule: int, waves: int
) -> None:
    t = get_target(name)
    assert (t.generation, t.wavefront_size, t.addressable_sgprs, t.addressable_vgprs) == (gen, wave, sgprs, 256)
    assert (t.has_agprs, t.unified_vgpr_file, t.aligned_vgpr_tuples) == (agprs, unified, aligned)
    assert (t.vgpr_alloc_granule, t.max_waves_per_simd, t.total_sgprs) == (granule, waves, 800)


def test_wavefront_override() -> None:
    w64 = get_target("gfx1100").with_wavefront(64)
    assert (w64.wavefront_size, w64.vgpr_alloc_granule, w64.total_vgprs) == (64, 12, 768)
    assert get_target("gfx1100", 64) == w64 and w64 != get_target("gfx1100")
    assert get_target("gfx1030").with_wavefront(64).vgpr_alloc_granule == 8
    with pytest.raises(TargetError):
        get_target("gfx90a").with_wavefront(32)


# (target, wave, vgprs, agprs, sgprs, waves): measured with llc-19 ("; Occupancy:" of kernels
# whose inline asm clobbers the highest register, flat work-group size 1..64).
OCCUPANCY = [
    ("gfx1100", 32, 24, 0, 0, 16), ("gfx1100", 32, 96, 0, 0, 16), ("gfx1100", 32, 97, 0, 0, 12),
    ("gfx1100", 32, 128, 0, 0, 10), ("gfx1100", 64, 97, 0, 0, 7), ("gfx1200", 32, 97, 0, 0, 12),
    ("gfx1030", 32, 96, 0, 0, 10), ("gfx1030", 32, 97, 0, 0, 9), ("gfx1030", 64, 97, 0, 0, 4),
    ("gfx90a", 64, 25, 0, 0, 8), ("gfx90a", 64, 96, 0, 0, 5), ("gfx90a", 64, 97, 0, 0, 4),
    ("gfx90a", 64, 97, 32, 0, 3), ("gfx942", 64, 128, 0, 0, 4), ("gfx908", 64, 24, 0, 0, 10),
    ("gfx908", 64, 25, 0, 0, 9), ("gfx908", 64, 96, 0, 0, 2), ("gfx908", 64, 97, 130, 0, 1),
    ("gfx900", 64, 24, 0, 80, 10), ("gfx900", 64, 24, 0, 81, 9), ("gfx900", 64, 24, 0, 100, 8),
    ("gfx900", 64, 24, 0, 102, 7), ("gfx1100", 32, 24, 0, 106, 16),
]  # fmt: skip


@pytest.mark.parametrize(("name", "wave", "vgprs", "agprs", "sgprs", "waves"), OCCUPANCY)
def test_waves_per_simd(name: str, wave: int, vgprs: int, agprs: int, sgprs: int, waves: int) -> None:
    assert get_target(name, wave).waves_per_simd(vgprs, agprs, sgprs) == waves


# Every processor against llc itself: the occupancy of kernels that clobber the highest VGPR
# or SGPR they use (inline asm), the SGPRs llc adds for VCC/XNACK/FLAT_SCRATCH or the init bug,
# and whether AGPRs exist.  One test per llc version; a processor the target table lacks but
# llc knows (other than gfx1250/gfx1251, LLVM 22's 1024-VGPR files) fails it too.
_PROBE_VGPRS = (24, 25, 85, 97, 129)
_PROBE_SGPRS = (49, 81)
_NOT_MODELLED = {"gfx1250", "gfx1251"}


def _llc_processors(llc: str) -> list[str]:
    help_text = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=help"], capture_output=True, text=True)
    names = re.findall(r"^\s+(gfx[0-9a-z-]+)\s+- Select the", help_text.stdout + help_text.stderr, re.M)
    return sorted(set(names))


def _occupancy_probe(llc: str, cpu: str, vgprs: int, sgprs: int, agprs: int) -> dict[str, int]:
    clobbers = [f"~{{v{vgprs - 1}}}"] + ([f"~{{s{sgprs - 1}}}"] if sgprs else []) + ([f"~{{a{agprs - 1}}}"] if agprs else [])
    ir = (f'define amdgpu_kernel void @k() #0 {{\n  call void asm sideeffect "", "{",".join(clobbers)}"()\n  ret void\n}}\n'
          'attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }\n')
    args = [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-O3", "-o", "-"]
    if cpu.endswith("-generic"):
        args.append("--amdhsa-code-object-version=6")  # llc-19 knows generic targets only there
    out = subprocess.run(args, input=ir, capture_output=True, text=True, check=True).stdout
    # LLVM 22 prints `; TotalNumSgprs:` where LLVM 19 prints `; NumSgprs:`.
    return {k.replace("TotalNum", "Num"): int(v) for k, v in re.findall(r"^\s*; (\w+): (\d+)$", out, re.M)}


@pytest.mark.parametrize("version", [19, 22])
def test_occupancy_matches_llc(version: int) -> None:
    llc = f"llc-{version}"
    if shutil.which(llc) is None:
        pytest.skip(f"{llc} is not installed (make test installs it)")
    cpus = _llc_processors(llc)
    assert len(cpus) > 40, cpus
    missing = [c for c in cpus if c not in target_names() and c not in _NOT_MODELLED]
    assert not missing, f"{llc} knows processors the target table lacks: {missing}"
    jobs = [(cpu, v, s, a) for cpu in cpus if cpu not in _NOT_MODELLED
            for v, s, a in [(v, 0, 0) for v in _PROBE_VGPRS] + [(1, s, 0) for s in _PROBE_SGPRS] + [(1, 0, 1)]]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        probes = list(pool.map(lambda job: _occupancy_probe(llc, *job), jobs))
    wrong = []
    for (cpu, v, s, a), got in zip(jobs, probes):
        t = get_target(cpu)
        sgprs = got["NumSgprs"]
        expect = t.waves_per_simd(got["NumVgprs"], got.get("NumAgprs", 0), sgprs)
        if got["Occupancy"] != expect:
            wrong.append(f"{cpu} v{v} s{s}: llc {got['Occupancy']} waves, verilocc {expect}")
        if (v, s, a) == (1, 0, 0):
            reserved = t.reserved_num_sgprs()
            base = FIXED_SGPRS_FOR_INIT_BUG if t.sgpr_init_bug else reserved if reserved > 2 else 0
            if sgprs != base:  # VCC counts only when used; XNACK_MASK and FLAT_SCRATCH always
                wrong.append(f"{cpu}: llc adds {sgprs} SGPRs, verilocc {base}")
        if a and ("NumAgprs" in got) != t.has_agprs:
            wrong.append(f"{cpu}: AGPRs {'NumAgprs' in got} in llc, {t.has_agprs} in verilocc")
    assert not wrong, "\n".join(wrong)


def test_budgets() -> None:
    assert function_budget(GFX90A, flat_workgroup_size=256) == function_budget(GFX90A, flat_workgroup_size=64)
    b = function_budget(GFX90A, flat_workgroup_size=256, uses_agprs=True)
    assert (b.sgprs, b.vgprs, b.agprs) == (102, 256, 256)
    b = function_budget(GFX90A)  # 1024 lanes: 4 waves per SIMD, 128 vector registers
    assert (b.vgprs, b.agprs) == (128, 0)
    assert function_budget(GFX90A, uses_agprs=True).vgprs == 64
    assert function_budget(GFX908).vgprs == 64 and function_budget(GFX908).agprs == 64
    assert function_budget(GFX90A, flat_workgroup_size=256, num_sgpr=16).sgprs == 12  # 16 - XNACK - VCC
    assert function_budget(GFX942, flat_workgroup_size=256, num_sgpr=16).sgprs == 10  # also FLAT_SCRATCH
    assert function_budget(GFX1100, flat_workgroup_size=256, num_sgpr=18).sgprs == 16  # VCC only
    assert function_budget(GFX1100, flat_workgroup_size=256).sgprs == 106
    assert function_budget(GFX90A, flat_workgroup_size=256, num_vgpr=64).vgprs == 128  # doubled on gfx90a


def test_reserved_registers() -> None:
    for name in ("exec", "exec_lo", "exec_hi_lo16", "m0", "scc", "mode", "sgpr_null", "flat_scr_lo",
                 "xnack_mask_hi", "src_shared_base_lo", "ttmp5", "tba", "lds_direct", "sgpr102",
                 "sgpr100_sgpr101_sgpr102_sgpr103", "private_rsrc_reg"):  # fmt: skip
        assert is_reserved(reg(name), GFX90A), name
    for name in ("vcc", "vcc_lo", "vcc_hi", "sgpr101", "sgpr100_sgpr101", "vgpr255", "agpr255"):
        assert not is_reserved(reg(name), GFX90A), name
    assert not is_reserved(reg("sgpr105"), GFX1100) and is_reserved(reg("agpr0"), GFX1100)
    res = reservations(GFX90A).with_registers(["$sgpr32", "sgpr100_sgpr101"])
    assert res.is_reserved(reg("sgpr32_sgpr33")) and res.is_reserved(reg("sgpr101"))
    assert not res.is_reserved(reg("sgpr31"))
    with pytest.raises(TargetError):
        reservations(GFX90A).with_registers(["$sgpr_bogus"])
    mfi = {"scratchRSrcReg": "'$sgpr96_sgpr97_sgpr98_sgpr99'", "frameOffsetReg": "'$fp_reg'",
           "stackPtrOffsetReg": "'$sgpr32'", "sgprForEXECCopy": "''", "vgprForAGPRCopy": "'$vgpr255'"}  # fmt: skip
    assert function_reserved_registers(mfi, GFX90A) == ("sgpr96_sgpr97_sgpr98_sgpr99", "sgpr32", "fp_reg")
    assert "vgpr255" in function_reserved_registers(mfi, GFX908)  # gfx908 keeps a VGPR for AGPR copies


# =============================================================================================
# The corpus (real llc 19 output)
# =============================================================================================
def corpus_files(kind: str) -> list[Path]:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    files = sorted(CORPUS.glob(f"*/*.{kind}.mir"))
    if not files:
        pytest.skip("corpus is empty")
    return files


def _body(text: str) -> str:
    return text[text.index("\nbody:") :]


def test_corpus_class_names_resolve() -> None:
    seen: set[str] = set()
    for path in corpus_files("pre") + corpus_files("post"):
        for m in re.finditer(r"class:\s*([A-Za-z0-9_]+)", path.read_text()):
            seen.add(m.group(1))
    assert "vreg_64_align2" in seen
    for name in sorted(seen):
        assert get_class(name).name == name


def test_corpus_physical_registers() -> None:
    bases = [get_class(n) for n in base_class_names()]
    checked: set[tuple[str, str]] = set()
    for path in corpus_files("post"):
        target = get_target(path.parent.name)
        for m in re.finditer(r"\$([a-z][a-z0-9_]*)", _body(path.read_text())):
            key = (target.name, m.group(1))
            if key in checked:
                continue
            checked.add(key)
            r = parse_physreg(m.group(1))
            assert is_defined(r, 19), r
            assert r.file is RegFile.SPECIAL or any(c.contains(r, target) for c in bases), (path, r)
    assert len(checked) > 100


def test_corpus_livein_masks() -> None:
    """Block live-in masks (``$reg:0xMASK``) select whole lanes inside their register."""
    seen = 0
    for path in corpus_files("post"):
        for m in re.finditer(r"\$([a-z0-9_]+):(0x[0-9A-Fa-f]+)", path.read_text()):
            r, mask = parse_physreg(m.group(1)), int(m.group(2), 16)
            assert mask and mask & ~r.full_mask == 0, m.group(0)
            assert set(r.lanes(mask)) <= set(r.units), m.group(0)
            slots = subregs.mask_to_slots(mask)
            assert all(s ^ 1 in slots for s in slots), m.group(0)  # 32-bit values only here
            seen += 1
    assert seen > 100
    text = (CORPUS / "gfx1100" / "fa_d64_kv8.post.mir").read_text()
    assert "$sgpr4_sgpr5_sgpr6_sgpr7:0x000000000000003C" in text  # sub1_sub2 live
    assert subreg_mask("sub1_sub2") == 0x3C


def _attr(ll: str, key: str) -> str | None:
    m = re.search(rf'"{key}"="([^"]*)"', ll)
    return m.group(1) if m else None


def _mfi(text: str) -> dict[str, object]:
    keys = "|".join(["scratchRSrcReg", "stackPtrOffsetReg", "frameOffsetReg", "sgprForEXECCopy",
                     "longBranchReservedReg", "vgprForAGPRCopy"])  # fmt: skip
    return {m.group(1): m.group(2) for m in re.finditer(rf"^  ({keys}):\s*(\S+)", text, re.M)}


def test_corpus_allocations_respect_budget_and_reservations() -> None:
    """Every register LLVM assigned (``renamable``) is allowed by the function's budget, and
    the budget is tight: LLVM puts sgprForEXECCopy at the top of it."""
    checked = 0
    for path in corpus_files("post"):
        target = get_target(path.parent.name)
        text = path.read_text()
        ll = path.with_name(path.name.replace(".post.mir", ".ll")).read_text()
        fwg, wpe = _attr(ll, "amdgpu-flat-work-group-size"), _attr(ll, "amdgpu-waves-per-eu")
        ns, nv = _attr(ll, "amdgpu-num-sgpr"), _attr(ll, "amdgpu-num-vgpr")
        budget = function_budget(
            target,
            flat_workgroup_size=int(fwg.split(",")[1]) if fwg else 1024,
            waves_per_eu=(int(wpe.split(",")[0]), int(wpe.split(",")[1])) if wpe else None,
            num_sgpr=int(ns) if ns else None,
            num_vgpr=int(nv) if nv else None,
            uses_agprs=bool(re.search(r"\$agpr|class: (areg|av)_", text)),
        )
        mfi = _mfi(text)
        res = reservations(target, budget, function_reserved_registers(mfi, target))
        for m in re.finditer(r"renamable \$([a-z0-9_]+)", _body(text)):
            r = parse_physreg(m.group(1))
            assert not res.is_reserved(r), (path.name, r)
            assert target.tuple_alignment_ok(r), (path.name, r)
            checked += 1
        exec_copy = str(mfi.get("sgprForEXECCopy", "''")).strip("'$")
        if exec_copy:
            top = budget.sgprs // 2 * 2 - 2 if target.wavefront_size == 64 else budget.sgprs - 1
            assert parse_physreg(exec_copy).index == top, (path.name, exec_copy, budget)
    assert checked > 10000


# =============================================================================================
# Cross-checks with llc
# =============================================================================================
def llc_or_skip(version: int) -> str:
    exe = shutil.which(f"llc-{version}")
    if exe is None:
        pytest.skip(f"llc-{version} is not installed")
    return exe


def run_llc(version: int, mir: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = llc_or_skip(version)
    return subprocess.run(
        [exe, "-mtriple=amdgcn-amd-amdhsa", "-x", "mir", "-", "-o", "-", *args],
        input=mir, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def parallel(fn: Callable[[T], R], items: list[T]) -> list[R]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(fn, items))


def _last_rewriter(version: int) -> str:
    # LLVM 20+ runs a WWM allocation stage first, so the final rewriter is instance 2.
    return f"-stop-after=virtregrewriter,{1 if version == 19 else 2}"


def _ra_mir(body: str, registers: str, liveins: str = "") -> str:
    return f"""---
name: f
tracksRegLiveness: true
machineFunctionInfo:
  isEntryFunction: true
  scratchRSrcReg: '$sgpr96_sgpr97_sgpr98_sgpr99'
  stackPtrOffsetReg: '$sgpr32'
registers:
{registers}
body: |
  bb.0:
    successors: %bb.1
{liveins}{body}
...
"""


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_llc_lane_masks(version: int) -> None:
    """Live-in masks llc prints after allocation match subreg_mask (hi16 is the low bit)."""
    cases = [
        ("vreg_64", "gfx1100", "undef %0.hi16:vreg_64 = COPY $vgpr5_hi16\n    %0.sub1_lo16:vreg_64 = COPY $vgpr6_lo16",
         "$vgpr0_hi16 = COPY %0.hi16\n    $vgpr1_lo16 = COPY %0.sub1_lo16", ("hi16", "sub1_lo16")),
        ("vreg_64", "gfx1100", "undef %0.lo16:vreg_64 = COPY $vgpr5_lo16\n    %0.sub1_hi16:vreg_64 = COPY $vgpr6_hi16",
         "$vgpr0_lo16 = COPY %0.lo16\n    $vgpr1_hi16 = COPY %0.sub1_hi16", ("lo16", "sub1_hi16")),
        ("vreg_1024_align2", "gfx90a", "undef %0.sub31:vreg_1024_align2 = COPY $vgpr5\n    %0.sub17:vreg_1024_align2 = COPY $vgpr6",
         "$vgpr0 = COPY %0.sub31\n    $vgpr1 = COPY %0.sub17", ("sub31", "sub17")),
    ]  # fmt: skip
    for cls, cpu, defs, uses, indices in cases:
        mir = _ra_mir(
            f"    {defs}\n    S_BRANCH %bb.1\n  bb.1:\n    {uses}\n    S_ENDPGM 0\n",
            f"  - {{ id: 0, class: {cls} }}",
            "    liveins: $vgpr5, $vgpr6\n",
        )
        out = run_llc(version, mir, f"-mcpu={cpu}", "-mattr=+real-true16", "-start-before=greedy,0",
                      _last_rewriter(version))  # fmt: skip
        assert out.returncode == 0, out.stderr
        m = re.search(r"bb\.1:\n\s+liveins: \$([a-z0-9_]+):(0x[0-9A-F]+)", out.stdout)
        assert m, out.stdout
        expected = subreg_mask(indices[0]) | subreg_mask(indices[1])
        assert int(m.group(2), 16) == expected
        r = parse_physreg(m.group(1))
        assert set(r.lanes(expected)) == set(r.subreg(indices[0]).units + r.subreg(indices[1]).units)


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_llc_register_names(version: int) -> None:
    """llc accepts exactly the names is_defined() says it defines."""
    names = list(special_register_names())
    names += ["sgpr0", "sgpr105", "sgpr0_lo16", "sgpr0_hi16", "vgpr255", "vgpr256", "vgpr1023",
              "vgpr255_hi16", "agpr255", "agpr0_lo16", "sgpr1_sgpr2", "sgpr4_sgpr5_sgpr6",
              "sgpr2_sgpr3_sgpr4", "vgpr1_vgpr2", "vgpr254_vgpr255", "vgpr255_vgpr256",
              "agpr1_agpr2_agpr3_agpr4_agpr5_agpr6_agpr7_agpr8_agpr9",
              "vgpr0_vgpr1_vgpr2_vgpr3_vgpr4_vgpr5_vgpr6_vgpr7_vgpr8_vgpr9_vgpr10_vgpr11_vgpr12",
              "ttmp3_ttmp4_ttmp5", "ttmp4_ttmp5_ttmp6", "ttmp1_ttmp2"]  # fmt: skip
    llc_or_skip(version)

    def accepted(name: str) -> bool:
        mir = f"---\nname: f\nbody: |\n  bb.0:\n    S_NOP 0, implicit ${name}\n    S_ENDPGM 0\n...\n"
        return run_llc(version, mir, "-mcpu=gfx90a", "-run-pass=none").returncode == 0

    results = parallel(accepted, names)
    wrong = [n for n, ok in zip(names, results) if ok != is_defined(parse_physreg(n), version)]
    assert not wrong


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_llc_subreg_indices(version: int) -> None:
    llc_or_skip(version)
    good = list(subregs.all_subreg_indices()[::7]) + ["lo16", "hi16", "sub31", "sub16_sub17_sub18_sub19_sub20_sub21_sub22_sub23"]
    bad = ["sub0_lo16", "lo16_hi16", "sub0_sub1_sub2_sub3_sub4_sub5_sub6", "sub32", "hi16_sub1_lo16",
           "sub0_sub1_sub2_sub3_sub4_sub5_sub6_sub7_sub8"]  # fmt: skip

    def accepted(idx: str) -> bool:
        mir = (f"---\nname: f\nregisters:\n  - {{ id: 0, class: vreg_1024 }}\n  - {{ id: 1, class: vgpr_32 }}\n"
               f"body: |\n  bb.0:\n    %1 = COPY %0.{idx}\n    S_ENDPGM 0\n...\n")  # fmt: skip
        return "unknown subregister index" not in run_llc(version, mir, "-mcpu=gfx1100", "-run-pass=none").stderr

    results = parallel(accepted, good + bad)
    assert results == [True] * len(good) + [False] * len(bad)
    for idx in bad:
        assert not subregs.is_subreg_index(idx)


@pytest.mark.llc
@pytest.mark.parametrize("cpu", ["gfx90a", "gfx942", "gfx908", "gfx1100"])
def test_llc_tuple_alignment(cpu: str) -> None:
    mir = ("---\nname: f\ntracksRegLiveness: true\nbody: |\n  bb.0:\n    liveins: $vgpr4_vgpr5\n"
           "    $vgpr1_vgpr2 = V_LSHLREV_B64_e64 0, $vgpr4_vgpr5, implicit $exec\n"
           "    S_ENDPGM 0, implicit $vgpr1_vgpr2\n...\n")  # fmt: skip
    out = run_llc(19, mir, f"-mcpu={cpu}", "-run-pass=none", "-verify-machineinstrs")
    rejected = "Subtarget requires even aligned vector registers" in out.stderr
    assert rejected is not get_target(cpu).tuple_alignment_ok(reg("vgpr1_vgpr2"))


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_llc_special_class_membership(version: int) -> None:
    """The machine verifier checks S_LOAD destinations against sreg_32_xm0_xexec/sreg_64_xexec."""
    llc_or_skip(version)
    cases = [(n, "S_LOAD_DWORD_IMM", "sreg_32_xm0_xexec") for n in
             ("vcc_lo", "vcc_hi", "m0", "exec_lo", "exec_hi", "sgpr_null", "ttmp0", "tba_lo", "src_vccz", "sgpr7")]
    cases += [(n, "S_LOAD_DWORDX2_IMM", "sreg_64_xexec") for n in
              ("vcc", "exec", "sgpr_null64", "flat_scr", "xnack_mask", "ttmp0_ttmp1", "tma", "sgpr6_sgpr7")]
    if version >= 22:  # LLVM 19 also counts the aperture registers (see classes.py)
        cases.append(("src_shared_base", "S_LOAD_DWORDX2_IMM", "sreg_64_xexec"))

    def legal(case: tuple[str, str, str]) -> bool:
        name, opcode, _ = case
        mir = (f"---\nname: f\ntracksRegLiveness: true\nbody: |\n  bb.0:\n    liveins: $sgpr0_sgpr1\n"
               f"    ${name} = {opcode} $sgpr0_sgpr1, 0, 0\n    S_ENDPGM 0\n...\n")  # fmt: skip
        out = run_llc(version, mir, "-mcpu=gfx90a", "-run-pass=none", "-verify-machineinstrs")
        return "Illegal physical register" not in out.stderr

    results = parallel(legal, cases)
    for (name, _, cls), ok in zip(cases, results):
        assert get_class(cls).contains_llvm(reg(name)) is ok, (name, cls)


@pytest.mark.llc
@pytest.mark.parametrize(
    ("cpu", "vgpr", "agpr", "sgpr", "extra"),
    [("gfx1100", 97, 0, 0, ""), ("gfx1100", 97, 0, 0, '"target-features"="+wavefrontsize64"'),
     ("gfx90a", 97, 32, 0, ""), ("gfx908", 25, 0, 0, ""), ("gfx942", 128, 0, 0, ""),
     ("gfx900", 8, 0, 90, ""), ("gfx1030", 97, 0, 0, "")],
)  # fmt: skip
def test_llc_occupancy(cpu: str, vgpr: int, agpr: int, sgpr: int, extra: str) -> None:
    clobbers = [f"~{{v{vgpr - 1}}}"] + ([f"~{{a{agpr - 1}}}"] if agpr else []) + ([f"~{{s{sgpr - 1}}}"] if sgpr else [])
    ll = (f'define amdgpu_kernel void @k() #0 {{\n  call void asm sideeffect "", "{",".join(clobbers)}"()\n  ret void\n}}\n'
          f'attributes #0 = {{ "amdgpu-flat-work-group-size"="1,64" {extra} }}\n')  # fmt: skip
    exe = llc_or_skip(19)
    out = subprocess.run([exe, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-x", "ir", "-", "-o", "-"],
                         input=ll, capture_output=True, text=True, timeout=120, check=True)  # fmt: skip

    def stat(key: str) -> int:
        m = re.search(rf"; {key}: (\d+)", out.stdout)
        return int(m.group(1)) if m else 0

    target = get_target(cpu, 64 if "wavefrontsize64" in extra else None)
    assert stat("NumVgprs") == vgpr
    waves = target.waves_per_simd(stat("NumVgprs"), stat("NumAgprs"), stat("NumSgprs"))
    assert waves == stat("Occupancy")


# Synthesized names chosen to cover each rule: intersections, "_with_..._in_", alignment by
# subregister, leaf-joined indices, and a chain whose bracketing matters (LLVM nests to the
# right: the "_in_" operand takes the rest of the name).
_ORACLE_SAMPLE = {
    19: ["vreg_64_align2", "sreg_32", "sreg_64_xexec", "sgpr_128", "av_128_align2", "vgpr_16",
         "sreg_32_xexec_hi_and_sreg_32_xm0", "av_96_with_sub1_sub2_in_av_64_align2",
         "areg_128_with_sub0_sub1_sub2_in_areg_96_with_sub1_sub2_in_areg_64_align2",
         "sgpr_128_with_sub0_sub1_in_ccr_sgpr_64", "av_1024_with_hi16_in_vgpr_16_lo128",
         "sgpr_1024_with_sub0_sub1_in_ccr_sgpr_64_with_sub4_sub5_sub6_sub7_sub8_sub9_sub10_sub11"
         "_sub12_sub13_sub14_sub15_sub16_sub17_sub18_sub19_in_sgpr_512_with_sub0_sub1_in_ccr_sgpr_64"
         "_with_sub4_lo16_sub4_hi16_sub5_lo16_sub5_hi16_sub6_lo16_sub6_hi16_sub7_lo16_sub7_hi16"
         "_sub8_lo16_sub8_hi16_sub9_lo16_sub9_hi16_sub10_lo16_sub10_hi16_sub11_lo16_sub11_hi16"
         "_sub12_lo16_sub12_hi16_sub13_lo16_sub13_hi16_in_sgpr_320_with_sub0_sub1_in_ccr_sgpr_64"
         "_and_sgpr_320_with_sub4_sub5_sub6_sub7_sub8_sub9_in_sgpr_192_with_sub4_sub5_in_gfx_ccr_sgpr_64"],
    22: ["vreg_64_align2", "sreg_64_xexec_xnull", "vreg_128_lo256_align2", "av_64_with_sub0_in_vgpr_32_lo256",
         "av_1024_with_lo16_hi16_sub1_lo16_sub1_hi16_sub2_lo16_sub2_hi16_sub3_lo16_sub3_hi16_sub4_lo16"
         "_sub4_hi16_sub5_lo16_sub5_hi16_sub6_lo16_sub6_hi16_sub7_lo16_sub7_hi16_sub8_lo16_sub8_hi16"
         "_sub9_lo16_sub9_hi16_in_vreg_320_lo256_align2",
         "sreg_32_xexec_hi_and_sreg_32_xm0", "av_96_with_sub1_sub2_in_av_64_align2"],
}  # fmt: skip


def _first_allocated(version: int, cpu: str, cls: str) -> str | None:
    """The register llc's greedy allocator gives a lone virtual register of class ``cls``
    (None if llc rejects the class name, "" if no register is available)."""
    mir = f"""--- |
  define amdgpu_kernel void @f() #0 {{ ret void }}
  attributes #0 = {{ "amdgpu-flat-work-group-size"="1,64" }}
...
---
name: f
tracksRegLiveness: true
machineFunctionInfo:
  isEntryFunction: true
  scratchRSrcReg: '$sgpr96_sgpr97_sgpr98_sgpr99'
  stackPtrOffsetReg: '$sgpr101'
registers:
  - {{ id: 0, class: {cls} }}
body: |
  bb.0:
    %0 = IMPLICIT_DEF
    S_NOP 0, implicit %0
    S_ENDPGM 0
...
"""
    out = run_llc(version, mir, f"-mcpu={cpu}", "-start-before=greedy,0", _last_rewriter(version))
    if "undefined register class" in out.stderr or "non-allocatable class" in out.stderr:
        return None
    m = re.search(r"\$(\S+) = IMPLICIT_DEF", out.stdout)
    if m:
        return m.group(1)
    assert "no registers from class available" in out.stderr, out.stderr
    return ""


def _check_oracle(version: int, names: list[str]) -> None:
    """Membership, order and reservations agree with llc: the first allocatable member of our
    class is what greedy assigns (gfx908: AGPRs, no alignment rule, so LLVM's sets are exact)."""
    target = get_target("gfx908")
    res = reservations(target, function_budget(target, flat_workgroup_size=64),
                       ("sgpr96_sgpr97_sgpr98_sgpr99", "sgpr101"))  # fmt: skip
    got = parallel(lambda n: _first_allocated(version, "gfx908", n), names)
    wrong: list[tuple[str, str]] = []
    for name, allocated in zip(names, got):
        if allocated is None:
            with pytest.raises(TargetError):
                get_class(name)
            continue
        members = get_class(name).allocatable_members(target, res)
        if (members[0].name if members else "") != allocated:
            wrong.append((name, allocated))
    assert not wrong


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_llc_class_oracle_sample(version: int) -> None:
    llc_or_skip(version)
    _check_oracle(version, _ORACLE_SAMPLE[version])


def _llvm_class_candidates(version: int) -> Iterator[str]:
    """Suffixes of the register-class name table in libLLVMAMDGPUDesc.a (TableGen shares
    suffixes, so every class name is a suffix of a stored string)."""
    lib = Path(f"/usr/lib/llvm-{version}/lib/libLLVMAMDGPUDesc.a")
    strings = shutil.which("strings")
    if not lib.exists() or strings is None:
        pytest.skip("no AMDGPU static library or strings(1)")
    out = subprocess.run([strings, "-n", "3", str(lib)], capture_output=True, text=True, check=True).stdout
    prefixes = ("VReg", "AReg", "AV_", "SReg", "SGPR_", "VGPR_", "AGPR_", "CCR", "Gfx_CCR")
    seen: set[str] = set()
    for line in out.splitlines():
        if line.startswith(prefixes):
            parts = line.split("_")
            for i in range(len(parts)):
                cand = "_".join(parts[i:]).lower()
                if cand and cand[0].isalpha() and cand not in seen:
                    seen.add(cand)
                    yield cand


@pytest.mark.llc
@pytest.mark.skipif(not SLOW, reason="set VERILOCC_SLOW_TESTS=1 (runs llc once per candidate name)")
@pytest.mark.parametrize("version", [19, 22])
def test_llc_every_class_name(version: int) -> None:
    llc_or_skip(version)
    _check_oracle(version, sorted(_llvm_class_candidates(version)))


_EXEC_COPY_KERNEL = """define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %c = icmp eq i32 %id, 0
  br i1 %c, label %a, label %b
a:
  store i32 1, ptr addrspace(1) %p
  br label %b
b:
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
attributes #0 = { nounwind "amdgpu-waves-per-eu"="WAVES" "amdgpu-flat-work-group-size"="1,64" }
"""


@pytest.mark.parametrize(("cpu", "triple", "waves"), [
    ("gfx90a", "amdgcn-amd-amdhsa", 7), ("gfx90a", "amdgcn-amd-amdhsa", 8), ("gfx90a", "amdgcn-amd-amdpal", 7),
    ("gfx90a", "amdgcn-amd-amdpal", 8), ("gfx90a", "amdgcn", 8), ("gfx906", "amdgcn-amd-amdhsa", 9),
    ("gfx906", "amdgcn-amd-amdpal", 10), ("gfx942", "amdgcn-amd-amdhsa", 8), ("gfx1100", "amdgcn-amd-amdhsa", 16),
])
def test_sgpr_budget_follows_the_trap_handler_of_the_triple(cpu: str, triple: str, waves: int) -> None:
    """An AMDHSA subtarget has a trap handler, whose 16 SGPRs come off each wave's share
    before the allocation granule: at 8 waves on gfx90a that is 76 SGPRs on amdhsa against 92
    elsewhere. llc puts sgprForEXECCopy at the top of the budget, the oracle here."""
    _check_exec_copy_at_budget_top(cpu, triple, _EXEC_COPY_KERNEL.replace("WAVES", str(waves)))


_FLAT_SCRATCH_KERNEL = """define amdgpu_kernel void @k(ptr addrspace(1) %p, i32 %i) #0 {
  %a = alloca [16 x i32], align 4, addrspace(5)
  %g = getelementptr [16 x i32], ptr addrspace(5) %a, i32 0, i32 %i
  store volatile i32 7, ptr addrspace(5) %g
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %c = icmp eq i32 %id, 0
  br i1 %c, label %x, label %y
x:
  %v = load volatile i32, ptr addrspace(5) %g
  store i32 %v, ptr addrspace(1) %p
  br label %y
y:
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
attributes #0 = { nounwind "amdgpu-num-sgpr"="NUM" }
"""


@pytest.mark.parametrize("num_sgpr", [18, 24, 40])
def test_sgpr_budget_of_a_kernel_with_flat_scratch(num_sgpr: int) -> None:
    """A kernel with a stack has a flat scratch init among its arguments, and FLAT_SCRATCH
    joins VCC and XNACK_MASK outside its budget: "amdgpu-num-sgpr"="18" leaves 12 SGPRs."""
    _check_exec_copy_at_budget_top("gfx90a", "amdgcn-amd-amdhsa", _FLAT_SCRATCH_KERNEL.replace("NUM", str(num_sgpr)))


def _check_exec_copy_at_budget_top(cpu: str, triple: str, ll: str) -> None:
    from verilocc.analysis.operands import function_limits
    from verilocc.mir.parser import parse_module

    exe = llc_or_skip(19)
    run = subprocess.run([exe, f"-mtriple={triple}", f"-mcpu={cpu}", "-O3", "-stop-after=finalize-isel", "-o", "-"],
                         input=ll, capture_output=True, text=True, timeout=120, check=True)
    fn = parse_module(run.stdout, "k.mir").functions[0]
    target = get_target(cpu)
    exec_copy = str(fn.machine_function_info.get("sgprForEXECCopy", "")).strip("'$")
    assert exec_copy, run.stdout[-500:]
    limits = function_limits(fn, target)
    budget = (limits.hint or limits).sgprs
    top = budget // 2 * 2 - 2 if target.wavefront_size == 64 else budget - 1
    assert parse_physreg(exec_copy).index == top, (exec_copy, budget)
