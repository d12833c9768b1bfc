"""The decoded steps of a paired block (`verilocc.pairing.steps`) and what each layer concludes
from each kind: a right allocation is VERIFIED by value flow and equivalence, a neighbour one
edit away is REJECTED, and a malformed step is UNKNOWN in every layer."""

from __future__ import annotations

import pytest

from verilocc.findings import Report, Verdict
from verilocc.fuzz import generate
from verilocc.mir.parser import parse_module
from hypothesis import given, settings
from hypothesis import strategies as st

from verilocc.analysis.instructions import value_inputs
from verilocc.mir.parser import parse_instruction, read_module
from verilocc.pairing.alignment import Role, Step, align_functions, common_subsequence, instruction_key, recipe_key
from verilocc.pairing.steps import (
    MALFORMED_COPY,
    SPILL_CODE,
    Added,
    Dropped,
    Matched,
    PostCopy,
    PostImplicitDef,
    PostKill,
    PreCopy,
    PreImplicitDef,
    PreKill,
    ReloadFromSlot,
    RematCopy,
    RematOrigin,
    RestoreFromLane,
    SpillToLane,
    SpillToSlot,
    UnsupportedStep,
    decode,
    walk_block,
)
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES

TARGET = "gfx90a"
STORE = "GLOBAL_STORE_DWORD {a}, {v}, 0, 0, implicit $exec :: (store (s32), addrspace 1)"
SLOTS = ((0, 4, "default"), (1, 4, "default"))


def _module(registers: list[tuple[int, str]], body: list[str], stack: tuple[tuple[int, int, str], ...] = ()) -> str:
    liveins = [("sgpr4_sgpr5", 0 if registers else None), ("vgpr0", 1 if registers else None)]
    return (generate.ir_module(TARGET) + generate.function_header(TARGET, registers, liveins, stack)
            + generate.render_body([(0, [], ["$sgpr4_sgpr5", "$vgpr0"], body)]))


# The virtual program: %3 = %1 + %1 stored through the address %2 (a copy of the argument %0).
PRE_HEAD = ["%0:sgpr_64 = COPY $sgpr4_sgpr5", "%1:vgpr_32 = COPY $vgpr0", "%2:vreg_64_align2 = COPY %0",
            "%3:vgpr_32 = V_ADD_U32_e32 %1, %1, implicit $exec"]
PRE_REGS = [(0, "sgpr_64"), (1, "vgpr_32"), (2, "vreg_64_align2"), (3, "vgpr_32"), (4, "vgpr_32"),
            (5, "sreg_32"), (6, "vgpr_32")]
POST_HEAD = ["renamable $vgpr2_vgpr3 = COPY $sgpr4_sgpr5", "renamable $vgpr4 = V_ADD_U32_e32 $vgpr0, $vgpr0, implicit $exec"]
ADDR = "renamable $vgpr2_vgpr3"


def _pre(*body: str) -> str:
    return _module(PRE_REGS, [*PRE_HEAD, *body, "S_ENDPGM 0"])


def _post(*body: str, stack: tuple[tuple[int, int, str], ...] = SLOTS) -> str:
    return _module([], [*POST_HEAD, *body, "S_ENDPGM 0"], stack)


def _report(post: str, pre: str, layer: str | None = None) -> Report:
    """Verify with every layer, or with one (then VERIFIED is impossible: the others did not run)."""
    opts = Options() if layer is None else Options(layers=(layer,))
    return verify_modules(parse_module(post, "post.mir"), parse_module(pre, "pre.mir"), opts)


def _layer_findings(post: str, pre: str, layer: str) -> set[tuple[str, str]]:
    return {(f.kind, f.severity) for f in _report(post, pre, layer).findings if f.layer == layer}


def _decoded(post: str, pre: str) -> list[object]:
    pre_fn = parse_module(pre, "pre.mir").functions[0]
    post_fn = parse_module(post, "post.mir").functions[0]
    alignment = align_functions(pre_fn, post_fn)
    return [decode(st, pre_fn.blocks[0], post_fn.blocks[0], alignment.stack_pointers) for st in alignment.steps[0]]


SEMANTIC_LAYERS = ("value-flow", "equivalence")

# (what, virtual program, right allocation, one-edit-wrong allocation, kinds the right one has)
CASES = [
    ("copies and matched instructions",
     _pre(STORE.format(a="%2", v="%3")),
     _post("renamable $vgpr5 = COPY $vgpr4", STORE.format(a=ADDR, v="renamable $vgpr5")),
     _post("renamable $vgpr5 = COPY $vgpr0", STORE.format(a=ADDR, v="renamable $vgpr5")),
     (Matched, PreCopy, PostCopy)),
    ("spill to a stack slot and reload",
     _pre(STORE.format(a="%2", v="%3")),
     _post("SI_SPILL_V32_SAVE $vgpr4, %stack.0, $sgpr32, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5)",
           "renamable $vgpr6 = SI_SPILL_V32_RESTORE %stack.0, $sgpr32, 0, implicit $exec :: (load (s32) from %stack.0, addrspace 5)",
           STORE.format(a=ADDR, v="renamable $vgpr6")),
     _post("SI_SPILL_V32_SAVE $vgpr4, %stack.0, $sgpr32, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5)",
           "renamable $vgpr6 = SI_SPILL_V32_RESTORE %stack.1, $sgpr32, 0, implicit $exec :: (load (s32) from %stack.1, addrspace 5)",
           STORE.format(a=ADDR, v="renamable $vgpr6")),
     (SpillToSlot, ReloadFromSlot)),
    ("SGPR spill to a VGPR lane and restore",
     _pre("%5:sreg_32 = S_ADD_U32 %0.sub0, %0.sub1, implicit-def dead $scc",
          "%6:vgpr_32 = V_ADD_U32_e32 %5, %3, implicit $exec", STORE.format(a="%2", v="%6")),
     _post("renamable $sgpr6 = S_ADD_U32 $sgpr4, $sgpr5, implicit-def dead $scc",
           "$vgpr9 = IMPLICIT_DEF", "$vgpr9 = SI_SPILL_S32_TO_VGPR $sgpr6, 1, $vgpr9", "$sgpr7 = SI_RESTORE_S32_FROM_VGPR $vgpr9, 1",
           "renamable $vgpr5 = V_ADD_U32_e32 $sgpr7, $vgpr4, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr5")),
     _post("renamable $sgpr6 = S_ADD_U32 $sgpr4, $sgpr5, implicit-def dead $scc",
           "$vgpr9 = IMPLICIT_DEF", "$vgpr9 = SI_SPILL_S32_TO_VGPR $sgpr6, 1, $vgpr9", "$sgpr7 = SI_RESTORE_S32_FROM_VGPR $vgpr9, 0",
           "renamable $vgpr5 = V_ADD_U32_e32 $sgpr7, $vgpr4, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr5")),
     (SpillToLane, RestoreFromLane)),
    ("rematerialised constant",
     _pre("%4:vgpr_32 = V_MOV_B32_e32 7, implicit $exec", STORE.format(a="%2", v="%4"), STORE.format(a="%2", v="%4")),
     _post("renamable $vgpr5 = V_MOV_B32_e32 7, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr5"),
           "renamable $vgpr5 = V_MOV_B32_e32 7, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr5")),
     _post("renamable $vgpr5 = V_MOV_B32_e32 7, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr5"),
           "renamable $vgpr5 = V_MOV_B32_e32 7, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr4")),
     (RematCopy, RematOrigin)),
    ("implicit defs and kills",
     _pre("%4:vgpr_32 = IMPLICIT_DEF", "KILL %1", STORE.format(a="%2", v="%4"), STORE.format(a="%2", v="%3")),
     _post("renamable $vgpr5 = IMPLICIT_DEF", "KILL $vgpr0", STORE.format(a=ADDR, v="renamable $vgpr5"),
           STORE.format(a=ADDR, v="renamable $vgpr4")),
     _post("renamable $vgpr4 = IMPLICIT_DEF", "KILL $vgpr0", STORE.format(a=ADDR, v="renamable $vgpr5"),
           STORE.format(a=ADDR, v="renamable $vgpr4")),
     (PreImplicitDef, PreKill, PostImplicitDef, PostKill)),
]


@pytest.mark.parametrize("what, pre, right, wrong, kinds", CASES, ids=[c[0] for c in CASES])
def test_each_step_kind_verified_right_and_rejected_one_edit_wrong(
        what: str, pre: str, right: str, wrong: str, kinds: tuple[type, ...]) -> None:
    decoded = {type(s) for s in _decoded(right, pre)}
    assert set(kinds) <= decoded, (what, decoded)
    assert not decoded & {UnsupportedStep, Added, Dropped}
    report = _report(right, pre)
    assert report.verdict is Verdict.VERIFIED, (what, report.findings)
    for layer in SEMANTIC_LAYERS:
        assert not _layer_findings(right, pre, layer)
        wrong_report = _report(wrong, pre, layer)
        assert wrong_report.verdict is Verdict.REJECTED, (what, layer, wrong_report.findings)
        assert any(f.layer == layer and f.severity == "error" for f in wrong_report.findings), (what, layer)


def test_added_and_dropped_instructions_are_rejected_by_value_flow() -> None:
    pre = _pre(STORE.format(a="%2", v="%3"))
    added = _post(STORE.format(a=ADDR, v="renamable $vgpr4"), STORE.format(a=ADDR, v="renamable $vgpr0"))
    dropped = _post()
    assert Added in {type(s) for s in _decoded(added, pre)}
    assert Dropped in {type(s) for s in _decoded(dropped, pre)}
    for post, kind in ((added, "added-instruction"), (dropped, "dropped-instruction")):
        report = _report(post, pre, "value-flow")
        assert report.verdict is Verdict.REJECTED
        assert kind in {f.kind for f in report.findings}


# --- the drift decisions: malformed steps are unsupported, in every layer ---------------------
MALFORMED = [
    ("post COPY with three explicit registers", _pre(STORE.format(a="%2", v="%3")),
     _post("renamable $vgpr5 = COPY $vgpr4, $vgpr0", STORE.format(a=ADDR, v="renamable $vgpr5")), MALFORMED_COPY),
    ("post COPY whose first register is a use", _pre(STORE.format(a="%2", v="%3")),
     _post("COPY $vgpr5, $vgpr4", STORE.format(a=ADDR, v="renamable $vgpr4")), MALFORMED_COPY),
    ("pre COPY with three explicit registers", _pre("%4:vgpr_32 = COPY %3, %1", STORE.format(a="%2", v="%4")),
     _post(STORE.format(a=ADDR, v="renamable $vgpr4")), MALFORMED_COPY),
    ("reload whose first register is not a def", _pre(STORE.format(a="%2", v="%3")),
     _post("SI_SPILL_V32_SAVE $vgpr4, %stack.0, $sgpr32, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5)",
           "SI_SPILL_V32_RESTORE $vgpr6, %stack.0, $sgpr32, 0, implicit $exec :: (load (s32) from %stack.0, addrspace 5)",
           STORE.format(a=ADDR, v="renamable $vgpr4")), SPILL_CODE),
    ("SGPR lane spill without a lane", _pre(STORE.format(a="%2", v="%3")),
     _post("$vgpr9 = SI_SPILL_S32_TO_VGPR $sgpr4, $vgpr9", STORE.format(a=ADDR, v="renamable $vgpr4")), SPILL_CODE),
]


@pytest.mark.parametrize("what, pre, post, reason", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_steps_are_unsupported_in_every_layer(what: str, pre: str, post: str, reason: str) -> None:
    bad = [s for s in _decoded(post, pre) if isinstance(s, UnsupportedStep)]
    assert [s.reason for s in bad] == [reason], what
    assert _report(post, pre).verdict is not Verdict.VERIFIED
    for layer in SEMANTIC_LAYERS:
        assert ("unsupported", "unknown") in _layer_findings(post, pre, layer), (what, layer)


def test_malformed_step_leaves_the_certificate_block_uncovered() -> None:
    from verilocc.analysis.cfg import build_cfg
    from verilocc.analysis.operands import vreg_classes
    from verilocc.certificate.valueflow import valueflow_obligations
    from verilocc.semantics.valueflow import ValueFlowChecker

    _, pre, post, _ = MALFORMED[0]
    pre_fn = parse_module(pre, "pre.mir").functions[0]
    post_fn = parse_module(post, "post.mir").functions[0]
    alignment = align_functions(pre_fn, post_fn)
    vf = ValueFlowChecker(pre_fn, post_fn, vreg_classes(pre_fn), alignment, build_cfg(pre_fn))
    vf.fixed_point()
    obligations, uncovered = valueflow_obligations(vf, pre_fn, post_fn, alignment)
    assert not obligations
    assert [u.block for u in uncovered] == [0]
    assert MALFORMED_COPY in uncovered[0].reason


# --- decode on its own ------------------------------------------------------------------------
def test_decode_reads_operands_of_each_kind() -> None:
    pre = CASES[2][1]
    post = CASES[2][2]
    steps = _decoded(post, pre)
    lane = next(s for s in steps if isinstance(s, SpillToLane))
    assert (lane.src.phys, lane.vgpr.phys, lane.lane) == ("sgpr6", "vgpr9", 1)
    back = next(s for s in steps if isinstance(s, RestoreFromLane))
    assert (back.dst.phys, back.vgpr.phys, back.lane) == ("sgpr7", "vgpr9", 1)
    steps = _decoded(CASES[1][2], CASES[1][1])
    save = next(s for s in steps if isinstance(s, SpillToSlot))
    load = next(s for s in steps if isinstance(s, ReloadFromSlot))
    assert (save.src.phys, save.slot, load.dst.phys, load.slot) == ("vgpr4", 0, "vgpr6", 0)
    assert save.ins.opcode == "SI_SPILL_V32_SAVE"
    copies = [s for s in _decoded(CASES[0][2], CASES[0][1]) if isinstance(s, (PreCopy, PostCopy))]
    assert [(type(c).__name__, c.dst.phys, c.src.phys) for c in copies][-1] == ("PostCopy", "vgpr5", "vgpr4")


def test_decode_copy_of_undef_has_no_source() -> None:
    pre = _pre("%4:vgpr_32 = COPY undef %1", STORE.format(a="%2", v="%3"))
    post = _post("renamable $vgpr5 = COPY undef $vgpr0", STORE.format(a=ADDR, v="renamable $vgpr4"))
    steps = _decoded(post, pre)
    pre_copy = [s for s in steps if isinstance(s, PreCopy)][-1]
    post_copy = [s for s in steps if isinstance(s, PostCopy)][-1]
    assert pre_copy.src is None and pre_copy.source.vreg == 1
    assert post_copy.src is None and post_copy.source.phys == "vgpr0"
    assert _report(post, pre).verdict is Verdict.VERIFIED


SP = frozenset({"sgpr32"})


def test_decode_roles_without_instructions_of_their_own() -> None:
    pre = parse_module(_pre(STORE.format(a="%2", v="%3")), "pre.mir").functions[0].blocks[0]
    post = parse_module(_post(STORE.format(a=ADDR, v="renamable $vgpr4")), "post.mir").functions[0].blocks[0]
    assert isinstance(decode(Step(Role.DROPPED, 4, None), pre, post, SP), Dropped)
    assert isinstance(decode(Step(Role.ADDED, None, 2), pre, post, SP), Added)
    assert isinstance(decode(Step(Role.REMAT_ORIGIN, 3, None), pre, post, SP), RematOrigin)
    assert isinstance(decode(Step(Role.REMAT, None, 1), pre, post, SP), RematCopy)
    odd = decode(Step(Role.SPILL, None, 2), pre, post, SP)  # a store is no spill code this decoder knows
    assert isinstance(odd, UnsupportedStep) and odd.reason == SPILL_CODE


def test_walk_block_calls_one_method_per_step_in_order() -> None:
    pre_text, post_text = CASES[1][1], CASES[1][2]
    pre_fn = parse_module(pre_text, "pre.mir").functions[0]
    post_fn = parse_module(post_text, "post.mir").functions[0]
    alignment = align_functions(pre_fn, post_fn)
    steps = alignment.steps[0]
    calls: list[str] = []

    class Recorder:
        def __getattr__(self, name: str) -> object:
            return lambda s: calls.append(name)

    walk_block(steps, pre_fn.blocks[0], post_fn.blocks[0], Recorder(), alignment.stack_pointers)  # type: ignore[arg-type]
    assert len(calls) == len(steps)
    assert calls.index("spill_to_slot") < calls.index("reload_from_slot")
    assert calls[-1] == "matched"  # S_ENDPGM


def _lcs_length(a: list[tuple[int]], b: list[tuple[int]]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


_KEYS = st.lists(st.tuples(st.integers(0, 3)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_KEYS, _KEYS)
def test_common_subsequence_is_a_longest_one(a: list[tuple[int]], b: list[tuple[int]]) -> None:
    pairs = common_subsequence(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:]))
    assert len(pairs) == _lcs_length(a, b)


@pytest.mark.parametrize("allocator", ["greedy", "basic"])
def test_recipe_of_a_key_with_an_undef_source_recomputes_its_own_sources(allocator: str) -> None:
    """`V_MUL_F32_e32 0, undef %7` and `V_MUL_F32_e32 0, %0` share an instruction key but not a
    recipe key, so a value of the second is not recomputed through the first, which reads no
    register (tests/fixtures/remat/README.md): LLVM's allocation is VERIFIED."""
    base = FIXTURES / "remat" / f"subreg-split-live-in-error.llvm19.gfx900.{allocator}"
    pre, post = read_module(f"{base}.pre.mir"), read_module(f"{base}.post.mir")
    muls = [ins for b in pre.functions[0].blocks for ins in b.instructions
            if ins.opcode == "V_MUL_F32_e32" and ins.operands[1].text == "0"]
    assert len({instruction_key(ins) for ins in muls}) == 1 < len({recipe_key(ins) for ins in muls})
    assert verify_modules(post, pre, Options()).verdict is Verdict.VERIFIED


def test_recipe_key_says_which_sources_are_read() -> None:
    undef = parse_instruction("%6:vgpr_32 = V_SUB_F32_e32 %1, undef %7:vgpr_32, implicit $mode, implicit $exec")
    other = parse_instruction("%8:vgpr_32 = V_SUB_F32_e32 undef %2:vgpr_32, %3, implicit $mode, implicit $exec")
    both = parse_instruction("%9:vgpr_32 = V_SUB_F32_e32 %4, %5, implicit $mode, implicit $exec")
    assert instruction_key(undef) == instruction_key(other) == instruction_key(both)
    assert len({recipe_key(undef), recipe_key(other), recipe_key(both)}) == 3
    assert [op.text for op in value_inputs(undef)] == ["%1"] and [op.text for op in value_inputs(other)] == ["%3"]


def test_rematerialised_loads_between_unrolled_groups_pair_every_instruction() -> None:
    """Greedy rematerialises a kernel-argument load before three of four identical address
    groups of a loop body (tests/fixtures/remat/README.md): every instruction of the virtual
    block is paired and the allocation is VERIFIED."""
    base = FIXTURES / "remat" / "sgemm_naive_s16.llvm19.gfx90a"
    pre, post = read_module(f"{base}.pre.mir"), read_module(f"{base}.post.mir")
    steps = align_functions(pre.functions[0], post.functions[0]).steps[16]
    assert not [s for s in steps if s.role in (Role.ADDED, Role.DROPPED, Role.REMAT_ORIGIN)]
    assert sum(1 for s in steps if s.role is Role.REMAT) >= 3
    assert verify_modules(post, pre, Options()).verdict is Verdict.VERIFIED


SPILLED = CASES[1][2]  # a spill to %stack.0 through `$sgpr32, 0` and its reload
assert "stackPtrOffsetReg: '$sgpr32'" in SPILLED


@pytest.mark.parametrize(("declared", "used", "right"), [
    ("'$sp_reg'", "$sp_reg", True),  # LLVM's placeholder, as MIR tests declare it
    (None, "$sp_reg", True),  # not declared: the field's default
    ("'$sp_reg'", "$sgpr32", False),  # not the function's stack pointer
    ("'$sgpr32'", "$sgpr33", False),
])
def test_spills_address_slots_by_the_functions_stack_pointer(declared: str | None, used: str, right: bool) -> None:
    """A spill addresses its slot through `machineFunctionInfo.stackPtrOffsetReg`, offset 0;
    through another register it is spill code verilocc does not model (and that register
    holds no value here: REJECTED besides)."""
    line = "  stackPtrOffsetReg: '$sgpr32'\n"
    assert line in SPILLED
    post = SPILLED.replace(line, f"  stackPtrOffsetReg: {declared}\n" if declared else "").replace("$sgpr32, 0", f"{used}, 0")
    report = _report(post, CASES[1][1])
    assert (report.verdict is Verdict.VERIFIED) is right, [f.message for f in report.findings]
    assert any("slot is addressed by" in f.message for f in report.findings) is not right


@pytest.mark.parametrize(("constant", "verdict"), [(7, Verdict.VERIFIED), (8, Verdict.REJECTED)])
def test_constant_in_a_physical_register_of_the_virtual_program_is_paired(constant: int, verdict: Verdict) -> None:
    """`renamable $sgpr6 = S_MOV_B32 7` in the virtual program (as LLVM's MIR test
    `inflate-reg-class-vgpr-mfma-to-av.mir` writes its SGPRs) is an instruction of the program,
    paired with its allocated copy, not a constant the allocator rematerialised and dropped."""
    pre = _pre("renamable $sgpr6 = S_MOV_B32 7", "%4:vgpr_32 = V_ADD_U32_e32 $sgpr6, %3, implicit $exec",
               STORE.format(a="%2", v="%4"))
    post = _post(f"renamable $sgpr6 = S_MOV_B32 {constant}",
                 "renamable $vgpr5 = V_ADD_U32_e32 $sgpr6, $vgpr4, implicit $exec", STORE.format(a=ADDR, v="renamable $vgpr5"))
    report = _report(post, pre)
    assert report.verdict is verdict, [f.message for f in report.findings]
    steps = _decoded(post, pre)
    assert sum(isinstance(s, Matched) and s.pre.opcode == "S_MOV_B32" for s in steps) == (constant == 7)


def test_constant_rematerialised_into_a_register_the_program_also_writes_is_not_paired_with_it() -> None:
    """The virtual program writes `$vgpr6 = V_MOV_B32_e32 7` (a fixed register, as a call
    argument is) and `%4 = V_MOV_B32_e32 7`; the allocator rematerialises %4 into $vgpr6 first
    and spills it (`renamable $vgpr6 = V_MOV_B32_e32 7`, as LLVM's fast allocator does beside a
    call). Only the unmarked copy is the program's instruction: VERIFIED."""
    pre = _pre("%4:vgpr_32 = V_MOV_B32_e32 7, implicit $exec", "$vgpr6 = V_MOV_B32_e32 7, implicit $exec",
               STORE.format(a="%2", v="$vgpr6"), STORE.format(a="%2", v="%4"))
    post = _post("renamable $vgpr6 = V_MOV_B32_e32 7, implicit $exec",
                 "SI_SPILL_V32_SAVE $vgpr6, %stack.0, $sgpr32, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5)",
                 "$vgpr6 = V_MOV_B32_e32 7, implicit $exec", STORE.format(a=ADDR, v="$vgpr6"),
                 "renamable $vgpr5 = SI_SPILL_V32_RESTORE %stack.0, $sgpr32, 0, implicit $exec :: (load (s32) from %stack.0, addrspace 5)",
                 STORE.format(a=ADDR, v="renamable $vgpr5"))
    report = _report(post, pre)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings]


# %3 = %1 + %1 and %4 = %1 + %3, both stored. The allocation keeps %3 in $vgpr4 and
# rematerialises it into $vgpr5 right before %4, which reads the copy: three equal V_ADDs for
# the virtual program's two.
REMAT_PRE = _pre(STORE.format(a="%2", v="%3"), "%4:vgpr_32 = V_ADD_U32_e32 %1, %3, implicit $exec",
                 STORE.format(a="%2", v="%4"))


def _remat_post(reads: str) -> str:
    return _post(STORE.format(a=ADDR, v="renamable $vgpr4"),
                 "renamable $vgpr5 = V_ADD_U32_e32 $vgpr0, $vgpr0, implicit $exec",
                 f"renamable $vgpr6 = V_ADD_U32_e32 $vgpr0, {reads}, implicit $exec",
                 STORE.format(a=ADDR, v="renamable $vgpr6"))


@pytest.mark.parametrize(("reads", "verdict"), [
    ("killed $vgpr5", Verdict.VERIFIED),  # the rematerialised %3
    ("$vgpr4", Verdict.VERIFIED),  # the original %3: the copy before it is dead
    ("$vgpr0", Verdict.REJECTED),  # %1 where %3 is read
])
def test_equal_instruction_rematerialised_before_its_reader_is_not_taken_for_it(reads: str, verdict: Verdict) -> None:
    """LLVM rematerialises a value right before the instruction that reads it, which may have
    the same key (`V_ADD_U32 %92, %53` before `V_ADD_U32 %86, %110`, seen in llc-22's greedy
    allocations): the reader is paired with the instruction whose inputs come from where its
    own do, not with the first equal one, and the allocation is VERIFIED."""
    pre, post = REMAT_PRE, _remat_post(reads)
    steps = align_functions(parse_module(pre, "pre.mir").functions[0], parse_module(post, "post.mir").functions[0]).steps[0]
    post_fn = parse_module(post, "post.mir").functions[0]
    matched = {post_fn.blocks[0].instructions[s.post].operands[0].phys for s in steps if s.role is Role.MATCHED
               and s.post is not None and post_fn.blocks[0].instructions[s.post].opcode == "V_ADD_U32_e32"}
    if verdict is Verdict.VERIFIED:
        assert matched == {"vgpr4", "vgpr6"}
    assert _report(post, pre).verdict is verdict
