"""The fuzzing oracles (`verilocc/fuzz/`) and what they say about the verifier.

(a) generated programs are well formed: verilocc's parser reads them and the interpreter
    runs them strictly (no read of an undefined lane);
(b) reference allocations and renamings of them are VERIFIED and agree with the program;
(c) soundness: a mutant the verifier calls VERIFIED agrees with the program on every input;
(d) a mutant whose trace differs from the program's is not VERIFIED;
(e) each property notices a verifier bug planted by monkeypatching.
The pairs of the verifier bugs the oracles found are checked at the end.
Everything is deterministic (hypothesis `derandomize=True`, fixed seeds) and bounded.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verilocc.findings import Verdict
from verilocc.fuzz import interpret, oracle, render
from verilocc.fuzz.generate import programs, random_program
from verilocc.fuzz.interpret import function_inputs, run
from verilocc.fuzz.profiles import EXTRA_TARGETS, PROFILES, TARGETS
from verilocc.fuzz.program import Program
from verilocc.fuzz.refalloc import AllocationError, Budget, allocate, permute
from verilocc.mir.parser import parse_module
from verilocc.mir.printer import print_module
from verilocc.verify import Options, verify_modules

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fuzz"


def _settings(n: int) -> settings:
    return settings(derandomize=True, max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def _inputs(text: str, k: int, seed: int = 0) -> list[dict[str, int]]:
    regs = function_inputs(text)
    rng = random.Random(seed)
    return [{r: rng.getrandbits(32) for r in regs} for _ in range(k)]


def _verdict(post: str, pre: str) -> Verdict:
    return verify_modules(parse_module(post, "post.mir"), parse_module(pre, "pre.mir"), Options(timeout_s=20)).verdict


def _avoiding_known(target: str | None = None) -> st.SearchStrategy[Program]:
    return programs(target, **oracle.GEN_AVOID)  # type: ignore[arg-type]


# --- (a) well-formed programs --------------------------------------------------------------
@_settings(100)
@given(programs())
def test_generated_programs_parse_and_run(program: Program) -> None:
    module = parse_module(program.text, "gen.mir")
    (fn,) = module.functions
    assert fn.target_cpu == program.target
    assert 2 <= len(fn.blocks) <= 10
    declared = set(fn.registers)
    used = {op.vreg for b in fn.blocks for i in b.instructions for op in i.operands if op.vreg is not None}
    assert used <= declared
    for k, inp in enumerate(_inputs(program.text, 2)):
        trace = run(module, inp, seed=k, strict=True)
        assert trace.ok, trace.status  # loops end: their counters change every iteration
        assert trace.events  # the results are stored


def test_generator_covers_the_shapes() -> None:
    texts = [random_program(t, s).text for t in TARGETS for s in range(60)]
    joined = "\n".join(texts)
    for shape in ("S_CBRANCH_SCC1", "S_CBRANCH_VCCNZ", "undef %", ".sub1:", "vreg_512", "sgpr_256", "areg_128_align2",
                  "class: areg_128,", "vreg_64_align2", "V_MFMA_F32_16X16X1F32_mac_e64", "early-clobber", "V_FMAC_F32_e32",
                  "GLOBAL_STORE_DWORDX4", "S_LOAD_DWORDX16_IMM", "IMPLICIT_DEF", "KILL %", "dead %", "S_CSELECT_B32",
                  "V_ADDC_U32_e64",
                  # the thread dimension (generate.py's docstring): divergent if/else, loops, waterfalls
                  "= COPY $exec, implicit-def $exec", "$exec = S_MOV_B64_term %", "S_CBRANCH_EXECZ",
                  "= S_OR_SAVEEXEC_B64 %", "$exec = S_XOR_B64_term $exec, %", "$exec = S_OR_B64 $exec, %",
                  "$exec = S_ANDN2_B64_term $exec, %", "S_CBRANCH_EXECNZ", "= S_AND_SAVEEXEC_B64 %",
                  "V_CMP_EQ_U64_e64", "SI_CALL %", "= COPY $vgpr0\n", ":vreg_64_align2 = IMPLICIT_DEF",
                  "$exec = S_MOV_B64 %", "$exec_lo = S_OR_B32 $exec_lo, %", "= S_AND_SAVEEXEC_B32 %",
                  "$exec_lo = S_ANDN2_B32_term $exec_lo, %", "V_READFIRSTLANE_B32", "V_READLANE_B32",
                  "V_WRITELANE_B32", "csr_amdgpu_gfx90ainsts", "csr_amdgpu,"):
        assert shape in joined, shape
    # A uniform count copied into a VGPR in a divergent loop: each lane keeps the one it left with.
    assert re.search(r":vgpr_32 = COPY %\d+, implicit \$exec\n", joined)
    # Loops: a block that branches to itself or back.
    assert any(_has_back_edge(t) for t in texts)


def _has_back_edge(text: str) -> bool:
    fn = parse_module(text, "x.mir").functions[0]
    return any(s <= b.number for b in fn.blocks for s, _ in b.successors)


# --- the interpreter on its own --------------------------------------------------------------
def _tiny(target: str, registers: list[tuple[int, str]], body: list[str],
          stack: tuple[tuple[int, int, str], ...] = ()) -> str:
    liveins = [("sgpr4_sgpr5", 0 if registers else None), ("vgpr0", 1 if registers else None)]
    return (render.ir_module(target) + render.function_header(target, registers, liveins, stack)
            + render.render_body([(0, [], ["$sgpr4_sgpr5", "$vgpr0"], body)]))


def test_interpreter_moves_values_and_sees_wrong_ones() -> None:
    """A hand-made spill: the right reload agrees with the program (and is VERIFIED), a reload
    from another slot does not."""
    store = "GLOBAL_STORE_DWORD {a}, {v}, 0, 0, implicit $exec :: (store (s32), addrspace 1)"
    pre = _tiny("gfx90a", [(0, "sgpr_64"), (1, "vgpr_32"), (2, "vreg_64_align2"), (3, "vgpr_32"), (4, "vreg_64_align2"),
                           (5, "vgpr_32")], [
        "%0:sgpr_64 = COPY $sgpr4_sgpr5", "%1:vgpr_32 = COPY $vgpr0", "%2:vreg_64_align2 = COPY %0",
        "%3:vgpr_32 = V_ADD_U32_e32 %1, %1, implicit $exec",
        "undef %4.sub0:vreg_64_align2 = COPY %3", "%4.sub1:vreg_64_align2 = V_MOV_B32_e32 7, implicit $exec",
        store.format(a="%2", v="%4.sub1"), "%5:vgpr_32 = V_MOV_B32_e32 9, implicit $exec",
        store.format(a="%2", v="%3"), store.format(a="%2", v="%5"), "S_ENDPGM 0"])

    def post(slot: int) -> str:
        return _tiny("gfx90a", [], [
            "renamable $vgpr2_vgpr3 = COPY $sgpr4_sgpr5", "renamable $vgpr4 = V_ADD_U32_e32 $vgpr0, $vgpr0, implicit $exec",
            "SI_SPILL_V32_SAVE $vgpr4, %stack.0, $sgpr32, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5)",
            "renamable $vgpr5 = V_MOV_B32_e32 7, implicit $exec", store.format(a="renamable $vgpr2_vgpr3", v="renamable $vgpr5"),
            "renamable $vgpr4 = V_MOV_B32_e32 9, implicit $exec",
            (f"renamable $vgpr0 = SI_SPILL_V32_RESTORE %stack.{slot}, $sgpr32, 0, implicit $exec "
             f":: (load (s32) from %stack.{slot}, addrspace 5)"),
            store.format(a="renamable $vgpr2_vgpr3", v="renamable $vgpr0"),
            store.format(a="renamable $vgpr2_vgpr3", v="renamable $vgpr4"), "S_ENDPGM 0"],
            ((0, 4, "default"), (1, 4, "default")))

    inputs = _inputs(pre, 3)
    assert all(run(pre, inp, seed=k, strict=True) == run(post(0), inp, seed=k) for k, inp in enumerate(inputs))
    assert all(run(pre, inp, seed=k) != run(post(1), inp, seed=k) for k, inp in enumerate(inputs))
    # A store's values: per active lane, (lane, (the address dwords, then the data)).
    lanes = run(pre, inputs[0]).events[0][2]
    assert len(lanes) == 64 and all(values[2] == 7 for _, values in lanes)
    assert _verdict(post(0), pre) is Verdict.VERIFIED
    assert _verdict(post(1), pre) is not Verdict.VERIFIED


def test_exact_interpreter_sees_an_ignored_input() -> None:
    """`V_LSHL_OR_B32 a, b, -1` is -1 whatever a and b are: swapping a and b (a mutant the
    fuzzer made) is harmless, and the verifier proves it (a liveness-anomaly warning). The
    hashing interpreter tells the two apart; with the opcodes' real meanings it does not, so
    the oracle does not call the VERIFIED verdict unsound. With 0 in place of -1 the swap is
    a real error: the exact interpreter still tells them apart and the verifier rejects it."""
    store = "GLOBAL_STORE_DWORD {a}, {v}, 0, 0, implicit $exec :: (store (s32), addrspace 1)"

    def pair(mask: int, swap: bool) -> tuple[str, str]:
        pre = _tiny("gfx90a", [(0, "sgpr_64"), (1, "vgpr_32"), (2, "vreg_64_align2"), (3, "vgpr_32"), (4, "vgpr_32"),
                               (5, "vgpr_32")], [
            "%0:sgpr_64 = COPY $sgpr4_sgpr5", "%1:vgpr_32 = COPY $vgpr0", "%2:vreg_64_align2 = COPY %0",
            "%3:vgpr_32 = V_ADD_U32_e32 %1, %1, implicit $exec",
            f"%4:vgpr_32 = V_LSHL_OR_B32_e64 %3, %1, {mask}, implicit $exec",
            "%5:vgpr_32 = V_ADD_U32_e32 %4, %3, implicit $exec",
            store.format(a="%2", v="%5"), "S_ENDPGM 0"])
        a, b = ("$vgpr1", "$vgpr0") if not swap else ("$vgpr0", "$vgpr1")
        post = _tiny("gfx90a", [], [
            "renamable $vgpr2_vgpr3 = COPY $sgpr4_sgpr5", "renamable $vgpr1 = V_ADD_U32_e32 $vgpr0, $vgpr0, implicit $exec",
            f"renamable $vgpr4 = V_LSHL_OR_B32_e64 renamable {a}, renamable {b}, {mask}, implicit $exec",
            "renamable $vgpr4 = V_ADD_U32_e32 renamable $vgpr4, renamable $vgpr1, implicit $exec",
            store.format(a="renamable $vgpr2_vgpr3", v="renamable $vgpr4"), "S_ENDPGM 0"])
        return pre, post

    for mask, harmless in ((-1, True), (0, False)):
        pre, right = pair(mask, swap=False)
        _, swapped = pair(mask, swap=True)
        inputs = _inputs(pre, 3)
        for exact in (False, True):
            assert all(run(pre, inp, seed=k, exact=exact) == run(right, inp, seed=k, exact=exact)
                       for k, inp in enumerate(inputs))
        assert any(run(pre, inp, seed=k) != run(swapped, inp, seed=k) for k, inp in enumerate(inputs))
        same = all(run(pre, inp, seed=k, exact=True) == run(swapped, inp, seed=k, exact=True)
                   for k, inp in enumerate(inputs))
        assert same is harmless
        assert _verdict(right, pre) is Verdict.VERIFIED
        assert (_verdict(swapped, pre) is Verdict.VERIFIED) is harmless


def test_the_opcodes_a_proof_rests_on_settle_a_difference_the_real_loop_never_reaches() -> None:
    """A mutant the campaign made (gfx942, seed 147116) reloads the wrong stack slot into the
    shift amount of `V_LSHLREV_B32_e64 $vgpr0, 0`: 0 shifted by anything is 0, and the verifier
    proves it harmless (a liveness-anomaly warning naming the opcode). The hashing interpreter
    tells the runs apart. With every real meaning, the loop counter (`S_ADD_I32 x, x` from 0)
    never reaches its bound: both runs stop after the same number of steps, the allocated one
    (with its spill code) earlier in the loop, so their stores differ too. With the real
    meaning of only the opcode the proof rests on, the runs end and agree, so the oracle does
    not call the VERIFIED verdict unsound; a real error elsewhere in the same program still
    differs there and is REJECTED."""
    base = FIXTURES.parent / "fuzz-oracle" / "ignored-shift-amount"
    pre, post = Path(f"{base}.pre.mir").read_text(), Path(f"{base}.post.mir").read_text()
    answer = oracle.VerifierAnswer(*oracle.default_verify()(parse_module(post, "post.mir"), parse_module(pre, "pre.mir")))
    assert answer.verdict == Verdict.VERIFIED.name
    assert answer.relies_on == frozenset({"V_LSHLREV_B32_e64"})
    inputs = _inputs(pre, 4)
    assert oracle.runs_differ(post, pre, inputs, 7)
    assert oracle.runs_differ(post, pre, inputs, 7, exact=True)
    assert not oracle.runs_differ(post, pre, inputs, 7, exact=True, relies_on=answer.relies_on)
    # The second store of the last block reads %stack.2 (the shift's 0) instead of %stack.3.
    reload = "renamable $vgpr7 = SI_SPILL_V32_RESTORE %stack.3, $sgpr32, 0, implicit $exec :: (load (s32) from %stack.3"
    assert post.count(reload) == 1
    wrong = post.replace(reload, reload.replace("%stack.3", "%stack.2"))
    assert oracle.runs_differ(wrong, pre, inputs, 7, exact=True, relies_on=answer.relies_on)
    assert _verdict(wrong, pre) is Verdict.REJECTED


def test_interpreter_refuses_misaligned_tuples() -> None:
    program = random_program("gfx90a", 1, **oracle.GEN_AVOID)  # type: ignore[arg-type]
    alloc = allocate(program.text, random.Random(1))
    odd = permute(alloc.text, random.Random(2), alloc.assignment.values(), misalign=True)
    assert odd != alloc.text
    trace = run(odd, _inputs(program.text, 1)[0])
    assert trace.status.startswith("error: bb.") and "misaligned" in trace.status, trace.status
    assert interpret.physical_units("vgpr4_vgpr5") == ("vgpr4", "vgpr5")
    assert interpret.physical_units("vcc") == ("vcc_lo", "vcc_hi")


# --- (b) reference allocations -------------------------------------------------------------
@_settings(40)
@given(_avoiding_known(), st.sampled_from(oracle.BUDGETS), st.integers(0, 2**16))
def test_reference_allocations_are_verified_and_agree(program: Program, budget: Budget, seed: int) -> None:
    rng = random.Random(seed)
    alloc = allocate(program.text, rng, budget)
    renamed = permute(alloc.text, rng, alloc.assignment.values())
    inputs = _inputs(program.text, 3, seed)
    expected = [run(program.text, inp, seed=k) for k, inp in enumerate(inputs)]
    for name, post in (("reference", alloc.text), ("permuted", renamed)):
        assert [run(post, inp, seed=k) for k, inp in enumerate(inputs)] == expected, f"{name} computes something else"
        assert _verdict(post, program.text) is Verdict.VERIFIED, name


def test_reference_allocator_spills_and_permute_renames() -> None:
    spilled = renamed = 0
    for seed in range(6):
        program = random_program("gfx942", seed, **oracle.GEN_AVOID)  # type: ignore[arg-type]
        alloc = allocate(program.text, random.Random(seed), Budget(4, 8, 4))
        spilled += bool(alloc.spilled)
        renamed += permute(alloc.text, random.Random(seed), alloc.assignment.values()) != alloc.text
    assert spilled >= 3 and renamed >= 5


@pytest.mark.parametrize("target", [*TARGETS, *EXTRA_TARGETS])
def test_reference_allocations_are_printed_in_the_printers_layout(target: str) -> None:
    """Read back and printed by verilocc.mir.printer, an allocation (with its spill code) is the
    same text, but for the IR document's blank lines, which the allocator leaves unindented."""
    spilled = 0
    for seed in range(4):
        alloc = allocate(random_program(target, seed).text, random.Random(seed), Budget(8, 10, 8))
        spilled += bool(alloc.spilled)
        ir, sep, functions = alloc.text.partition("\n...\n")
        printed = print_module(parse_module(alloc.text, "post.mir"))
        assert printed == ir.replace("\n\n", "\n  \n") + sep + functions
    assert spilled

def _sgpr_pressure(target: str, pairs: int) -> str:
    """A program of `target` that holds `pairs` 64-bit SGPR values live at once."""
    text = random_program(target, 0).text
    head, rest = text.split("registers:\n", 1)
    header = rest[rest.index("liveins:"):].split("body:", 1)[0]
    bb0 = text.split("body:", 1)[1].split("\n  bb.1", 1)[0].splitlines()
    head_lines = [ln for ln in bb0 if "bb.0" in ln or "liveins:" in ln]
    body_lines = [ln for ln in bb0 if ln.startswith("    ") and "liveins:" not in ln and "successors:" not in ln]
    copies = []
    for ln in body_lines:  # the input copies that open the block (later ones copy call results)
        if "= COPY $" not in ln:
            break
        copies.append(ln)
    first = "\n".join(head_lines + copies)
    n = first.count("= COPY $")  # the input copies: %0 to %(n-1)
    inputs = re.findall(r"- \{ id: (\d+), class: (\w+)", rest)[:n]
    regs = [f"  - {{ id: {i}, class: {c}, preferred-register: '' }}" for i, c in inputs]
    regs += [f"  - {{ id: {i}, class: sreg_64, preferred-register: '' }}" for i in range(n, n + 2 * pairs)]
    body = [f"    %{n + k}:sreg_64 = S_MOV_B64 {k}" for k in range(pairs)]
    body += [f"    %{n + pairs + k}:sreg_64 = S_AND_B64 %{n + k}, %{n + pairs + k - 1 if k else n + pairs - 1}, "
             "implicit-def dead $scc" for k in range(pairs)]
    return head + "registers:\n" + "\n".join(regs) + "\n" + header + "body: |\n" + first + "\n" + "\n".join(body) \
        + "\n    S_ENDPGM 0\n...\n"


@pytest.mark.parametrize(("target", "sgprs"), [("gfx600", 104), ("gfx908", 106)])
def test_reference_allocator_stays_inside_the_register_file(target: str, sgprs: int) -> None:
    """Without spilling, the SGPR budget grows up to the target's file and no further: a
    program that needs more is not allocated (AllocationError), one that fits names no SGPR
    beyond the file."""
    fits = allocate(_sgpr_pressure(target, 44), random.Random(0), Budget(), spill=False)
    assert fits.budget.sgprs <= sgprs
    assert max(int(n) for n in re.findall(r"\$sgpr(\d+)", fits.text.split("body:", 1)[1])) < sgprs
    with pytest.raises(AllocationError, match=f"the {sgprs} SGPRs of {target}"):
        allocate(_sgpr_pressure(target, 56), random.Random(0), Budget(), spill=False)


# --- (c) and (d) mutants -------------------------------------------------------------------
@_settings(30)
@given(_avoiding_known(), st.integers(0, 2**16))
def test_verified_mutants_agree_with_the_program(program: Program, seed: int) -> None:
    """(c) Soundness: whenever the verifier says VERIFIED, the traces are equal."""
    from verilocc.fuzz.mutations import OPERATORS

    rng = random.Random(seed)
    alloc = allocate(program.text, rng, rng.choice(oracle.BUDGETS))
    pre = parse_module(program.text, "pre.mir")
    post = parse_module(alloc.text, "post.mir")
    inputs = _inputs(program.text, 3, seed)
    expected = [run(pre, inp, seed=k) for k, inp in enumerate(inputs)]
    for name in sorted(set(OPERATORS) - set(oracle.OPEN_MUTATIONS)):
        mutant = OPERATORS[name](post, rng)
        if mutant is None:
            continue
        verdict = verify_modules(mutant.module, pre, Options(timeout_s=20)).verdict
        if verdict is Verdict.VERIFIED:
            got = [run(mutant.module, inp, seed=k) for k, inp in enumerate(inputs)]
            assert got == expected, f"{name}: {mutant.description} is VERIFIED but computes something else"


@pytest.mark.parametrize("target", TARGETS)
def test_differing_mutants_are_not_verified(target: str) -> None:
    """(d) A mutant the interpreter tells apart from the program is never VERIFIED; and the
    check is not vacuous: most examples have such mutants."""
    from verilocc.fuzz.mutations import OPERATORS

    differing = 0
    closed = sorted(set(OPERATORS) - set(oracle.OPEN_MUTATIONS))
    for seed in range(4):
        names = random.Random(f"{target}/{seed}").sample(closed, 6)
        outcome = oracle.check_example(target, seed, mutants=names, inputs=3)
        assert outcome.status == "checked", outcome.status
        assert not outcome.disagreements, [(d.kind, d.variant, d.detail) for d in outcome.disagreements]
        differing += sum(v.differs for v in outcome.variants)
        for v in outcome.variants:
            if v.differs:
                assert v.verdict != Verdict.VERIFIED.name, v
    assert differing >= 2


# --- (e) planted verifier bugs -------------------------------------------------------------
def _first_disagreement(targets: tuple[str, ...], kind: str, seeds: int, **kw: object) -> oracle.Outcome | None:
    for seed in range(seeds):
        for t in targets:
            outcome = oracle.check_example(t, seed, **kw)  # type: ignore[arg-type]
            if any(d.kind == kind for d in outcome.disagreements):
                return outcome
    return None


@pytest.mark.interpreted
def test_planted_alignment_bug_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch off tuple alignment (the gfx90a rule and the `_align2` classes): a renaming
    that puts tuples on odd VGPRs gets VERIFIED, and the interpreter refuses to run it."""
    import verilocc.verify as verify_module
    from verilocc.target import classes, get_class

    real_target = verify_module.function_target
    real_contains, real_members = classes.RegisterClass.contains, classes.RegisterClass.members

    def unaligned(cls: classes.RegisterClass) -> classes.RegisterClass:
        return get_class(cls.name.replace("_align2", "")) if "_align2" in cls.name else cls

    monkeypatch.setattr(verify_module, "function_target",
                        lambda *a: dataclasses.replace(real_target(*a), aligned_vgpr_tuples=False))
    monkeypatch.setattr(classes.RegisterClass, "contains", lambda self, reg, t: real_contains(unaligned(self), reg, t))
    monkeypatch.setattr(classes.RegisterClass, "members", lambda self, t: real_members(unaligned(self), t))
    classes._contains.cache_clear()
    classes._members.cache_clear()
    try:
        found = _first_disagreement(("gfx90a", "gfx942"), "unsound", seeds=3, mutants=0)
    finally:
        classes._contains.cache_clear()
        classes._members.cache_clear()
    assert found is not None
    assert any(d.variant == "misaligned" for d in found.disagreements)


@pytest.mark.interpreted
def test_planted_value_flow_bug_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch off the value-flow and equivalence layers: wrong mutants get VERIFIED."""
    from verilocc.semantics import equivalence, valueflow

    monkeypatch.setattr(valueflow.ValueFlowChecker, "run", lambda self: [])
    monkeypatch.setattr(equivalence.EquivalenceChecker, "run", lambda self: [])
    found = _first_disagreement(("gfx90a", "gfx1100"), "unsound", seeds=3, misaligned=False)
    assert found is not None
    assert all(d.variant.startswith("mutant:") for d in found.disagreements)
    # What `verilocc fuzz --save` writes: the same disagreement on a smaller program.
    dis = found.disagreements[0]
    small = oracle.shrink(found, dis, max_rounds=1, inputs=2)
    assert (small.kind, small.variant) == (dis.kind, dis.variant)
    assert small.pre.count("\n") < dis.pre.count("\n")
    assert parse_module(small.post, "small.post.mir").functions


@pytest.mark.interpreted
def test_planted_over_strict_alignment_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Demand 4-aligned vector tuples: correct reference allocations get REJECTED."""
    from verilocc.smt import constraints
    from verilocc.target import RegFile

    real = constraints.register_problem

    def strict(reg, cls, target, limits, wwm_value=False):  # type: ignore[no-untyped-def]
        problem = real(reg, cls, target, limits, wwm_value)
        if problem is None and reg.file in (RegFile.VGPR, RegFile.AGPR) and len(reg.units) >= 4 and reg.index % 4:
            return "alignment", f"${reg.name}: planted rule, vector tuples start at a multiple of 4"
        return problem

    monkeypatch.setattr(constraints, "register_problem", strict)
    monkeypatch.setattr(constraints, "allowed_first_units", functools.lru_cache(constraints.allowed_first_units.__wrapped__))
    found = _first_disagreement(("gfx908", "gfx1100"), "false-rejection", seeds=4, mutants=0, misaligned=False)
    assert found is not None
    assert any(d.variant in ("reference", "permuted") for d in found.disagreements)


# --- driver ----------------------------------------------------------------------------------
def test_check_example_summary_and_save(tmp_path: Path) -> None:
    outcomes = [oracle.check_example("gfx1100", 7, mutants=["wrong-use", "clobber-def"], inputs=2)]
    summary = oracle.summarise(outcomes)
    assert summary["examples"] == 1 and summary["verdicts"]
    fake = dataclasses.replace(outcomes[0].variants[0])
    outcomes[0].disagreements.append(oracle.Disagreement("unsound", fake.name, fake.verdict, "test", "pre", "post"))
    written = oracle.save_outcome(outcomes[0], tmp_path)
    assert written and written[0].read_text() == "post"
    assert PROFILES["gfx1100"].wave32


@pytest.mark.llc
def test_llvm_allocations_are_verified() -> None:
    """LLVM's own allocations of generated programs (some under a VGPR budget that makes it
    spill) are correct by assumption: the interpreter agrees and the verifier says VERIFIED."""
    if shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not on PATH")
    seen = 0
    for seed in range(3):
        for target in TARGETS:
            outcome = oracle.check_example(target, seed, mutants=0, misaligned=False, llvm=True)
            assert not outcome.disagreements, [(d.kind, d.variant, d.detail) for d in outcome.disagreements]
            seen += any(v.name == "llvm" for v in outcome.variants)
    assert seen >= 10


# --- the other targets (EXTRA_TARGETS: one per generation, gfx6 to gfx12) --------------------
@pytest.mark.parametrize("target", EXTRA_TARGETS)
def test_other_targets_programs_parse_and_run(target: str) -> None:
    """(a) for each other target: its programs parse, name it, and run strictly to stores."""
    for seed in range(8):
        program = random_program(target, seed)
        module = parse_module(program.text, "gen.mir")
        (fn,) = module.functions
        assert fn.target_cpu == target
        for k, inp in enumerate(_inputs(program.text, 2, seed)):
            trace = run(module, inp, seed=k, strict=True)
            assert trace.ok, (seed, trace.status)
            assert trace.events


def _opcodes(text: str) -> set[str]:
    body = text.split("\nbody:", 1)[1]
    return set(re.findall(r"(?:= |^\s+)(?:nofpexcept |early-clobber )?([A-Z][A-Z0-9_]+[a-z0-9_]*)\b", body, re.M))


def test_other_targets_use_their_own_opcodes_and_inputs() -> None:
    """What differs per generation (llc-19 output for each target; `llvm-mc -mcpu` refuses the
    others, test_llc_accepts_other_targets' programs): no carry-less V_ADD_U32 and no GFX9
    three-source VOP3 before gfx9, global memory through FLAT on gfx7/gfx8 and MUBUF on gfx6,
    V_MAC_F32 for V_FMAC_F32; AGPRs only with MAI; gfx12's workgroup ids in TTMPs."""
    gfx9_only = {"V_ADD_U32_e32", "V_SUB_U32_e32", "V_ADD_U32_e64", "V_SUB_U32_e64", "V_ADD3_U32_e64",
                 "V_LSHL_OR_B32_e64", "V_AND_OR_B32_e64", "V_XAD_U32_e64", "V_FMAC_F32_e32"}
    for target in EXTRA_TARGETS:
        p = PROFILES[target]
        texts = [random_program(target, s).text for s in range(60)]
        ops = set().union(*map(_opcodes, texts))
        memory = {op.split("_")[0] for op in ops if "_LOAD_" in op or "_STORE_" in op} - {"S"}
        assert memory == {{"global": "GLOBAL", "flat": "FLAT", "buffer": "BUFFER"}[p.memory]}, (target, memory)
        if p.generation < 9:
            assert not ops & gfx9_only, (target, ops & gfx9_only)
            assert {"V_ADD_CO_U32_e64", "V_MAC_F32_e32"} <= ops, target
        else:
            assert {"V_ADD_U32_e32", "V_FMAC_F32_e32"} <= ops, target
        joined = "\n".join(texts)
        assert ("areg_" in joined) == p.agprs and ("V_MFMA" in joined) == p.agprs, target
        assert ("_align2" in joined) == p.aligned, target
        assert ":sreg_32_xm0_xexec = V_CMP" in joined and ":sreg_64_xexec = V_CMP" not in joined if p.wave32 \
            else ":sreg_64_xexec = V_CMP" in joined and ":sreg_32_xm0_xexec = V_CMP" not in joined, target
        header = texts[0].split("\nbody:", 1)[0]
        assert f"scratchRSrcReg:  '{p.scratch_rsrc}'" in header and f"sgprForEXECCopy: '{p.exec_copy}'" in header
        assert ("workGroupIDX" in header) != p.architected_group_ids, target
        assert ("privateSegmentBuffer" in header) == p.private_segment_buffer, target
        liveins = {r for t in texts for r in function_inputs(t)}
        assert p.group_ids[0] in liveins and p.kernarg.split("_")[0] in liveins, target
    assert "$ttmp9" in "\n".join(random_program("gfx1200", s).text for s in range(3))
    # The default targets are the campaign's four; the others are accepted by name.
    assert not set(TARGETS) & set(EXTRA_TARGETS)


def test_fuzz_help_names_every_target(capsys: pytest.CaptureFixture[str]) -> None:
    """`verilocc fuzz --help` lists the targets by hand (the parser is built without importing
    the fuzzer, so that `verilocc verify` starts fast): the list must name every one, defaults
    first."""
    from verilocc.cli import main

    with pytest.raises(SystemExit):
        main(["fuzz", "--help"])
    mcpu = capsys.readouterr().out.split("\n  --mcpu", 1)[1].split("\n  --minutes", 1)[0]
    assert re.findall(r"gfx\w+", mcpu) == [*TARGETS, *EXTRA_TARGETS]


@pytest.mark.parametrize("target", EXTRA_TARGETS)
def test_other_targets_reference_allocations_are_verified(target: str) -> None:
    """(b) and (d) for each other target: the reference and permuted allocations agree with
    the program and are VERIFIED; a mutant whose run differs is not VERIFIED."""
    differing = 0
    for seed in range(2):
        outcome = oracle.check_example(target, seed, mutants=2, inputs=2)
        assert outcome.status == "checked", outcome.status
        assert not outcome.disagreements, [(d.kind, d.variant, d.detail) for d in outcome.disagreements]
        verdicts = {v.name: v.verdict for v in outcome.variants}
        assert verdicts["reference"] == verdicts["permuted"] == Verdict.VERIFIED.name
        differing += sum(v.differs for v in outcome.variants)
    assert differing >= 1


def test_interpreter_refuses_misaligned_tuples_on_gfx950_only() -> None:
    """interpret.ALIGNED_VECTOR_TUPLES: gfx950 has even VGPR/AGPR tuples like gfx90a; gfx1200
    and gfx906 do not, so a tuple on an odd VGPR runs there."""
    odd_runs = {}
    for target in ("gfx950", "gfx1200", "gfx906"):
        for seed in range(20):
            program = random_program(target, seed)
            alloc = allocate(program.text, random.Random(seed))
            text = alloc.text.replace(f'"target-cpu"="{target}"', '"target-cpu"="gfx950"')
            odd = permute(text, random.Random(seed), alloc.assignment.values(), misalign=True)
            if odd != text and re.search(r"\$vgpr\d*[13579]_vgpr", odd):
                inp = _inputs(program.text, 1)[0]
                odd_runs[target] = (run(odd, inp).status,
                                    run(odd.replace('"target-cpu"="gfx950"', f'"target-cpu"="{target}"'), inp).status)
                break
    assert set(odd_runs) == {"gfx950", "gfx1200", "gfx906"}
    for target, (as_gfx950, as_itself) in odd_runs.items():
        assert as_gfx950.startswith("error: bb.") and "misaligned" in as_gfx950, as_gfx950
        assert (target == "gfx950") == ("misaligned" in as_itself), (target, as_itself)


def test_fuzz_command_accepts_other_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from verilocc import cli

    assert cli.main(["fuzz", "--mcpu", "gfx600,gfx1200", "--examples", "2", "--mutants", "1",
                     "--save", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert '"examples": 2' in out and '"gfx600"' in out and '"gfx1200"' in out
    assert cli.main(["fuzz", "--mcpu", "gfx9000", "--examples", "1"]) == 2


def _llc_accepts(target: str, text: str, tmp: Path) -> str | None:
    """None when llc (with -verify-machineinstrs) reads the program and compiles it from greedy
    on, and llvm-mc assembles the result for the same processor (llc itself does not check
    that an opcode exists on the subtarget); otherwise the first error."""
    llc = PROFILES[target].llc
    mc = llc.replace("llc", "llvm-mc")
    (tmp / "p.mir").write_text(text)
    base = [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-verify-machineinstrs"]
    for cmd in (base + ["-run-pass=none", str(tmp / "p.mir"), "-o", "/dev/null"],
                base + ["-O3", "-start-before=greedy", str(tmp / "p.mir"), "-o", str(tmp / "p.s")],
                [mc, "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-filetype=obj", str(tmp / "p.s"), "-o", "/dev/null"]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        # The kernel descriptor of a MIR file without IR arguments counts fewer user SGPRs
        # than the machine function uses: not about the instructions.
        errors = [ln for ln in done.stderr.splitlines() if ("error" in ln or "Bad machine code" in ln)
                  and "amdgpu_user_sgpr_count" not in ln]
        if errors or (done.returncode and mc not in cmd[0]):
            return f"{cmd[0]}: {(errors or [done.stderr[:300]])[0]}"
    return None


@pytest.mark.llc
@pytest.mark.parametrize("target", EXTRA_TARGETS)
def test_llc_accepts_other_targets(target: str, tmp_path: Path) -> None:
    """llc (llc-22 for gfx950) accepts generated programs and its own allocation of them is
    VERIFIED and agrees with the program."""
    llc = PROFILES[target].llc
    if shutil.which(llc) is None or shutil.which(llc.replace("llc", "llvm-mc")) is None:
        pytest.skip(f"{llc} is not on PATH")
    for seed in range(3):
        error = _llc_accepts(target, random_program(target, seed).text, tmp_path)
        assert error is None, (seed, error)
    seen = 0
    for seed in range(2):
        outcome = oracle.check_example(target, seed, mutants=0, misaligned=False, llvm=True, inputs=2)
        assert not outcome.disagreements, [(d.kind, d.variant, d.detail) for d in outcome.disagreements]
        seen += any(v.name == "llvm" and v.verdict == Verdict.VERIFIED.name for v in outcome.variants)
    assert seen == 2


# --- verifier bugs found by the oracles (tests/fixtures/fuzz/README.md) ----------------------
@pytest.mark.parametrize("name", sorted(oracle.FOUND_VERIFIER_ISSUES))
def test_found_pairs_are_correct_allocations(name: str) -> None:
    """The pairs are correct allocations by the interpreter's account; that the verifier
    accepts them is tests/test_fuzz_regressions.py."""
    pre = (FIXTURES / f"{name}.pre.mir").read_text()
    post = (FIXTURES / f"{name}.post.mir").read_text()
    for k, inp in enumerate(_inputs(pre, 4)):
        a, b = run(pre, inp, seed=k), run(post, inp, seed=k)
        assert a.ok and a == b


def test_found_unsound_pair_is_wrong() -> None:
    """misaligned-spill-restore (tests/fixtures/fuzz/) was VERIFIED although gfx90a cannot
    encode it: the interpreter refuses to run it, as llc's machine verifier refuses it."""
    pre = (FIXTURES / "misaligned-spill-restore.pre.mir").read_text()
    post = (FIXTURES / "misaligned-spill-restore.post.mir").read_text()
    inp = _inputs(pre, 1)[0]
    assert run(pre, inp, seed=0).ok
    assert not run(post, inp, seed=0).ok
