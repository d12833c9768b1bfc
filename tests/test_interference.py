"""The interference relation (`verilocc.analysis.interference`): one test per rule, and the
agreement of its clients: the SMT allocator proposes only what the verifier accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilocc.allocators.optimal import solve_function
from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.interference import FixedUnits, Interference, VirtualLanes, interferences
from verilocc.analysis.liveness import compute_liveness
from verilocc.findings import Place, Verdict
from verilocc.mir.model import Module
from verilocc.mir.parser import parse_module, read_module
from verilocc.smt.formulas import ConstraintSide, Disjoint
from verilocc.target import parse_physreg
from verilocc.verify import Options, function_target, verify_modules

from .conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
PLACE = Place("t.mir", "f", 0, 0, 1)  # where a constraint made by hand is said to come from


def _facts(body: str, registers: dict[int, str]) -> list[Interference]:
    regs = "".join(f"  - {{ id: {i}, class: {c} }}\n" for i, c in registers.items())
    text = f"---\nname: f\ntracksRegLiveness: true\nregisters:\n{regs}body: |\n  bb.0:\n" + "".join(
        f"    {line}\n" for line in body.strip().splitlines()) + "...\n"
    fn = parse_module(text, "t.mir").functions[0]
    return list(interferences(fn, compute_liveness(fn, build_cfg(fn))))


def _between(facts: list[Interference], index: int, a: int | str, b: int | str) -> list[Interference]:
    def name(s: VirtualLanes | FixedUnits) -> int | str:
        return s.vreg if isinstance(s, VirtualLanes) else (s.reg.name if s.reg is not None else "live units")
    return [f for f in facts if f.index == index and name(f.defined) == a and name(f.other) == b]


def test_def_against_the_lanes_live_after_it() -> None:
    """A def meets every lane live after it, a dead def too; dead lanes of a tuple are free."""
    facts = _facts("""
        %0:vreg_64_align2 = IMPLICIT_DEF
        %1:vgpr_32 = V_MOV_B32_e32 0, implicit $exec
        %2:vgpr_32 = V_MOV_B32_e32 1, implicit $exec
        S_ENDPGM 0, implicit %0.sub1, implicit %1
    """, {0: "vreg_64_align2", 1: "vgpr_32", 2: "vgpr_32"})
    (f,) = _between(facts, 2, 2, 0)
    assert f.other == VirtualLanes(0, 0b1100) and f.kind == "interference" and f.live_vreg == 0
    assert _between(facts, 2, 2, 1)  # %2 is dead, yet it writes its register while %1 is live
    assert not _between(facts, 1, 1, 2)  # %2 is not live after %1's def


def test_copy_exempts_only_the_copied_lanes_at_the_identity() -> None:
    facts = _facts("""
        %0:vreg_64_align2 = IMPLICIT_DEF
        %1:vreg_64_align2 = COPY %0
        %2:vgpr_32 = COPY %0.sub1
        S_ENDPGM 0, implicit %0, implicit %1, implicit %2
    """, {0: "vreg_64_align2", 1: "vreg_64_align2", 2: "vgpr_32"})
    (whole,) = _between(facts, 1, 1, 0)
    assert whole.other.slots == 0b1111 and whole.identity == (0, 0)
    # %2 copies sub1 of %0: sub1 may be %2's own register (slot 0 of %2 on slot 2 of %0);
    # sub0, still live, interferes with %2 everywhere.
    sub0, sub1 = sorted(_between(facts, 2, 2, 0), key=lambda f: f.other.slots)
    assert (sub0.other.slots, sub0.identity) == (0b0011, None)
    assert (sub1.other.slots, sub1.identity) == (0b1100, (0, 2))
    # As layer 1 evaluates it (home variables = first 16-bit units): the identity and a
    # disjoint place hold; a place half on sub1 does not, nor sub0's register.
    def disjoint(f: Interference) -> Disjoint:
        return Disjoint(ConstraintSide("%2", var="h2"), 0b11, ConstraintSide("%0", var="h0"), f.other.slots, PLACE,
                        f.kind, f.def_op, 0, f.identity)

    assert disjoint(sub1).holds({"h2": 102, "h0": 100}) and disjoint(sub1).holds({"h2": 110, "h0": 100})
    assert not disjoint(sub1).holds({"h2": 101, "h0": 100})
    assert not disjoint(sub0).holds({"h2": 100, "h0": 100})


def test_copy_to_a_physical_register_and_from_one() -> None:
    """A physical destination may hold the copied virtual lanes at the identity, and a virtual
    destination may sit on its physical source (`%138 = COPY $vcc` in $vcc, as LLVM does in
    acc-ldst.ll) but nowhere else on the live physical units."""
    facts = _facts("""
        liveins: $vgpr1
        %0:vgpr_32 = IMPLICIT_DEF
        $vgpr0 = COPY %0
        %1:vgpr_32 = COPY $vgpr1
        S_ENDPGM 0, implicit %0, implicit %1, implicit $vgpr0, implicit $vgpr1
    """, {0: "vgpr_32", 1: "vgpr_32"})
    (to_phys,) = _between(facts, 1, "vgpr0", 0)
    assert to_phys.identity == (0, 0) and to_phys.defined == FixedUnits(frozenset(parse_physreg("vgpr0").units),
                                                                          parse_physreg("vgpr0"))
    (from_phys,) = _between(facts, 2, 1, "vgpr1")
    assert from_phys.identity == (0, 0) and from_phys.other.units == frozenset(parse_physreg("vgpr1").units)
    (rest,) = _between(facts, 2, 1, "live units")
    assert rest.identity is None and set(parse_physreg("vgpr0").units) <= rest.other.units
    assert not set(parse_physreg("vgpr1").units) & rest.other.units

    def disjoint(f: Interference, h1: int) -> bool:
        return Disjoint(ConstraintSide("%1", var="h1"), 0b11, ConstraintSide("$vgpr1", const=min(f.other.units)), 0b11,
                        PLACE, f.kind, f.def_op, 1, f.identity).holds({"h1": h1})

    vgpr1 = min(parse_physreg("vgpr1").units)
    assert disjoint(from_phys, vgpr1) and not disjoint(from_phys, vgpr1 + 1) and disjoint(from_phys, vgpr1 + 2)


def test_moves_that_are_not_copies_interfere() -> None:
    facts = _facts("""
        %0:vgpr_32 = IMPLICIT_DEF
        %1:vgpr_32 = V_MOV_B32_e32 %0, implicit $exec
        S_ENDPGM 0, implicit %0, implicit %1
    """, {0: "vgpr_32", 1: "vgpr_32"})
    (f,) = _between(facts, 1, 1, 0)
    assert f.identity is None


def test_early_clobber_against_untied_uses_on_their_defined_lanes() -> None:
    facts = _facts("""
        undef %0.sub0:vreg_64_align2 = V_MOV_B32_e32 0, implicit $exec
        %1:vgpr_32 = V_MOV_B32_e32 0, implicit $exec
        %2:vgpr_32 = V_MOV_B32_e32 0, implicit $exec
        early-clobber %3:vgpr_32 = V_MAC_F32_e32 %0.sub0, %1, %2(tied-def 0), implicit $exec
        early-clobber %4:vreg_64_align2 = V_LSHLREV_B64_e64 1, %0, implicit $exec
        S_ENDPGM 0, implicit %3, implicit %4
    """, {0: "vreg_64_align2", 1: "vgpr_32", 2: "vgpr_32", 3: "vgpr_32", 4: "vreg_64_align2"})
    uses = [f for f in facts if f.meets == "use"]
    assert {(f.index, f.defined.vreg, f.other.vreg) for f in uses} == {(3, 3, 0), (3, 3, 1), (4, 4, 0)}  # type: ignore[union-attr]
    assert all(f.kind == "early-clobber" for f in uses)
    # %0.sub1 was never defined: only sub0's lanes meet the early-clobber def of %4.
    (f,) = [f for f in uses if f.index == 4]
    assert f.other.slots == 0b0011  # type: ignore[union-attr]


def test_defs_of_one_instruction_meet_each_other() -> None:
    facts = _facts("""
        %0:vgpr_32, %1:sreg_64_xexec = V_ADD_CO_U32_e64 0, 0, 0, implicit $exec
        S_ENDPGM 0
    """, {0: "vgpr_32", 1: "sreg_64_xexec"})
    (f,) = [f for f in facts if f.meets == "def"]
    assert (f.defined.vreg, f.other.vreg, f.live_vreg) == (0, 1, None)  # type: ignore[union-attr]


def test_kill_interferes_with_nothing_and_implicit_def_like_any_def() -> None:
    """An IMPLICIT_DEF writes its register as far as LLVM and value flow are concerned, so a
    live value may not sit on it; a KILL defines nothing."""
    facts = _facts("""
        %0:vgpr_32 = V_MOV_B32_e32 0, implicit $exec
        %1:vgpr_32 = IMPLICIT_DEF
        KILL %1
        S_ENDPGM 0, implicit %0, implicit %1
    """, {0: "vgpr_32", 1: "vgpr_32"})
    assert _between(facts, 1, 1, 0)
    assert not [f for f in facts if f.index == 2]


def test_implicit_def_on_a_live_value_is_rejected_by_every_layer_that_reads_it() -> None:
    """The allocation the relation used to allow: an IMPLICIT_DEF on the register of a value
    read after it. Layer 1 and value flow both refuse it."""
    head = "---\nname: f\ntracksRegLiveness: true\n"
    pre = parse_module(head + """registers:
  - { id: 0, class: vgpr_32 }
  - { id: 1, class: vgpr_32 }
  - { id: 2, class: vgpr_32 }
body: |
  bb.0:
    liveins: $vgpr2_vgpr3
    %0:vgpr_32 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, implicit $exec
    %1:vgpr_32 = IMPLICIT_DEF
    %2:vgpr_32 = V_ADD_U32_e32 %0, %1, implicit $exec
    S_ENDPGM 0, implicit %2
...
""", "pre.mir")
    post = parse_module(head + """body: |
  bb.0:
    liveins: $vgpr2_vgpr3
    renamable $vgpr0 = GLOBAL_LOAD_DWORD $vgpr2_vgpr3, 0, 0, implicit $exec
    renamable $vgpr0 = IMPLICIT_DEF
    renamable $vgpr0 = V_ADD_U32_e32 $vgpr0, $vgpr0, implicit $exec
    S_ENDPGM 0, implicit $vgpr0
...
""", "post.mir")
    opts = Options(mcpu="gfx90a")
    for layer, kind in (("constraints", "interference"), ("value-flow", "wrong-value")):
        report = verify_modules(post, pre, Options(mcpu="gfx90a", layers=(layer,)))
        assert any(f.kind == kind for f in report.findings), (layer, [f.message for f in report.findings])
    assert verify_modules(post, pre, opts).verdict is Verdict.REJECTED


SMALL = sorted(p for p in (FIXTURES / "targets" / "llvm19").glob("gfx*/vadd.pre.mir")
               if p.parent.name in ("gfx90a", "gfx908", "gfx1100", "gfx1200"))


@pytest.mark.parametrize("pre_path", SMALL + [FIXTURES / "fuzz" / "odd-tuple-copy.pre.mir"], ids=lambda p: p.parent.name + "/" + p.name)
def test_solver_allocations_are_verified(pre_path: Path) -> None:
    """The allocator reads the relation layer 1 checks: what it proposes, layer 1 accepts.
    The fuzz program is allocated at 8 waves: its own budget (`amdgpu-num-vgpr`=16, which LLVM
    splits 16 VGPRs / 16 AGPRs since it declares an AGPR value) needs the 512-bit tuple in AGPRs
    with only its read lanes copied back, a live-range split the spiller does not write
    (docs/allocate.md, below the goals)."""
    pre = read_module(pre_path)
    fn = pre.functions[0]
    waves = 8 if pre_path.parent.name == "fuzz" else None
    got = solve_function(fn, function_target(fn, None, pre.file), timeout=20.0, waves=waves)
    assert got.status in ("optimal", "feasible"), got.reason
    assert got.function is not None
    post = Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)
    report = verify_modules(post, pre, Options(layers=("constraints",)))
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    assert verify_modules(post, pre, Options()).verdict is Verdict.VERIFIED
