"""The thread dimension: a VGPR or AGPR holds one value per lane, an SGPR one per wave, and
EXEC decides which lanes a write changes (docs/soundness.md, "Lanes").

LLVM's correct allocations whose values live in some lanes only are VERIFIED; values moved
through a register of the wrong file and a lane write whose tied input is not its result are
REJECTED, by a finding in LLVM's words and by the value-flow and equivalence layers on their
own. A write under a narrowed EXEC that clobbers lanes still waiting for their trip is the
known gap of assumption A2 (docs/soundness.md): its test is a strict expected failure. The
fixtures and how each was made: tests/fixtures/thread/README.md."""

from __future__ import annotations


import pytest

from verilocc.findings import Finding, Report, Verdict
from verilocc.mir.parser import read_module
from verilocc.smt.physical import copy_problem
from verilocc.target import parse_physreg
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES

THREAD = FIXTURES / "thread"


def _verify(name: str, layers: tuple[str, ...] | None = None) -> Report:
    post, pre = THREAD / f"{name}.post.mir", THREAD / f"{name}.pre.mir"
    opts = Options() if layers is None else Options(layers=layers)
    return verify_modules(read_module(str(post)), read_module(str(pre)), opts)


def _errors(report: Report, kind: str | None = None) -> list[Finding]:
    return [f for f in report.findings if f.severity == "error" and (kind is None or f.kind == kind)]


def _line_of(name: str, text: str) -> int:
    lines = (THREAD / f"{name}.post.mir").read_text().splitlines()
    return next(k + 1 for k, ln in enumerate(lines) if ln.strip() == text)


# --- LLVM's output ---------------------------------------------------------------------------

LIVERANGE = sorted(p.name[:-len(".post.mir")] for p in THREAD.glob("vgpr-liverange.llvm*.post.mir")
                   if p.name.count(".") == 4)


def test_the_waterfall_pairs_cover_three_llvm_versions_and_targets() -> None:
    versions = {n.split(".")[1] for n in LIVERANGE}
    targets = {n.split(".")[2] for n in LIVERANGE}
    assert versions == {"llvm16", "llvm19", "llvm22"} and targets == {"gfx90a", "gfx942", "gfx1100"}


@pytest.mark.parametrize("name", LIVERANGE)
def test_a_call_in_a_waterfall_loop_keeps_the_waiting_lanes(name: str) -> None:
    """`loop`: the call clobbers the VGPRs of the divergent pointer, but only in the lanes it
    serves; the waiting lanes are inactive, and a callee keeps every VGPR's inactive lanes."""
    report = _verify(name)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings][:3]


def test_an_sgpr_spilled_into_vgpr_lanes_verifies() -> None:
    name = "conv1d_t112.llvm22.gfx90a"
    assert (THREAD / f"{name}.post.mir").read_text().count("SI_SPILL_S32_TO_VGPR") >= 40
    report = _verify(name)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings][:3]


# --- wrong allocations -----------------------------------------------------------------------

CROSS_FILE = [
    ("loop_exit_with_xor.llvm16.gfx90a.vgpr-through-sgpr", "renamable $sgpr87 = COPY $vgpr31"),
    ("gfx-callable-preserved-registers.llvm16.gfx90a.vgpr-through-sgpr", "renamable $sgpr95 = COPY $vgpr31"),
    ("spill-agpr.llvm22.gfx90a.agpr-through-sgpr", "renamable $sgpr50 = COPY killed renamable $agpr0"),
    ("simple-indirect-call.llvm22.gfx1200.vgpr-through-sgpr", "renamable $sgpr40 = COPY $vgpr0"),
]


@pytest.mark.parametrize(("name", "copy"), CROSS_FILE, ids=[c[0] for c in CROSS_FILE])
def test_a_vector_value_through_a_scalar_register_is_rejected(name: str, copy: str) -> None:
    report = _verify(name)
    assert report.verdict is Verdict.REJECTED
    (illegal,) = _errors(report, "illegal-copy")
    assert illegal.place.line == _line_of(name, copy)
    assert "illegal VGPR to SGPR copy" in illegal.message and "one value per thread lane" in illegal.message


@pytest.mark.parametrize(("name", "copy"), CROSS_FILE, ids=[c[0] for c in CROSS_FILE])
def test_the_equivalence_layer_alone_rejects_the_move_through_a_scalar_register(name: str, copy: str) -> None:
    """Not only the rule of layer 1: the semantics, with a vector register into a scalar one
    an unknown function of its active lanes, find that the program computes something else."""
    del copy
    report = _verify(name, ("value-flow", "equivalence"))
    assert report.verdict is Verdict.REJECTED
    assert _errors(report, "not-equivalent")


@pytest.mark.xfail(strict=True, reason="assumption A2 (docs/soundness.md): a vector write is taken to write "
                   "every lane, so a write under a narrowed $exec that clobbers the waiting lanes goes unseen")
def test_a_clobber_of_the_waiting_lanes_is_rejected() -> None:
    name = "vgpr-liverange.llvm19.gfx90a.waiting-lanes-clobbered"
    report = _verify(name)
    assert report.verdict is Verdict.REJECTED
    clobber = _line_of(name, "renamable $vgpr3 = V_MOV_B32_e32 0, implicit $exec")
    # The next trip's lanes read the pointer's high half at the loop's head, above the clobber.
    reads = [f for f in _errors(report) if f.kind in ("wrong-value", "not-equivalent")]
    assert reads and all(f.place.function == "loop" for f in reads)
    assert min(f.place.line for f in reads) < clobber
    alone = _verify(name, ("value-flow", "equivalence"))
    assert _errors(alone, "not-equivalent")


def test_a_lane_spill_whose_tied_input_is_another_vgpr_is_rejected() -> None:
    name = "conv1d_t112.llvm22.gfx90a.lane-spill-tie"
    report = _verify(name)
    assert report.verdict is Verdict.REJECTED
    line = _line_of(name, "$vgpr255 = SI_SPILL_S32_TO_VGPR $sgpr4, 20, killed $vgpr40")
    tied = [f for f in _errors(report, "tied") if f.place.line == line]
    assert tied and "Tied physical registers must match" in tied[0].message
    # The lanes the spill did not write come from its tied input: SGPRs spilled earlier into
    # $vgpr255 and restored later are wrong, which the semantics see without the tie rule.
    alone = _verify(name, ("value-flow", "equivalence"))
    assert alone.verdict is Verdict.REJECTED


# --- the rules -------------------------------------------------------------------------------

@pytest.mark.parametrize(("dst", "src", "legal"), [
    ("sgpr4", "vgpr0", False), ("sgpr4_sgpr5", "agpr2_agpr3", False), ("m0", "vgpr1", False),
    ("exec", "vgpr0_vgpr1", False), ("vgpr0", "sgpr4", True), ("agpr0", "vgpr0", True),
    ("vgpr0", "agpr0", True), ("sgpr4", "sgpr5", True), ("vcc", "sgpr4_sgpr5", True),
])
def test_which_copies_llvm_lowers(dst: str, src: str, legal: bool) -> None:
    assert (copy_problem(parse_physreg(dst), parse_physreg(src)) is None) is legal


def test_vcc_from_a_vgpr_is_a_lane_mask_not_a_copy() -> None:
    why = copy_problem(parse_physreg("vcc"), parse_physreg("vgpr0"))
    assert why is not None and "V_CMP_NE_U32" in why


@pytest.mark.parametrize(("name", "opcode", "reg"), [
    ("gfx908-40-mutant-other-file", "SI_SPILL_S64_RESTORE", "$vgpr21_vgpr22"),
    ("gfx942-45-mutant-other-file", "SI_SPILL_V32_SAVE", "$sgpr33"),
    ("gfx1100-11-mutant-other-file", "SI_SPILL_V64_SAVE", "$sgpr58_sgpr59"),
])
def test_a_spill_pseudo_names_a_register_of_its_file(name: str, opcode: str, reg: str) -> None:
    """An SGPR spill reloaded into VGPRs, or a VGPR spill of SGPRs, moves a value across
    register files as an illegal COPY does: layer 1 says so at the spill, in llc's words."""
    post = FIXTURES / "fuzz" / "found" / f"{name}.post.mir"
    report = verify_modules(read_module(str(post)), read_module(str(post.with_name(f"{name}.pre.mir"))), Options())
    assert report.verdict is Verdict.REJECTED
    found = [f for f in _errors(report, "class") if opcode in f.message and reg in f.message]
    assert found and "Illegal physical register for instruction" in found[0].message
    line = next(k for k, text in enumerate(post.read_text().splitlines(), 1) if opcode in text and reg in text)
    assert found[0].place.line == line
