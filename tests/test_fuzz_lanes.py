"""The fuzzer's interpreter runs a wave, not a lane (`verilocc/fuzz/interpret.py`).

Hand-written programs with physical registers and EXEC set by hand, whose stores say what
each lane holds: VALU writes, vector copies, spills and reloads honour EXEC; SALU writes are
whole; V_CMP, V_CNDMASK, V_READFIRSTLANE, V_READLANE, V_WRITELANE, SAVEEXEC and calls behave as
the ISA and LLVM's calling convention say; what cannot be encoded stops the run; definedness is
tracked per lane. Then the bit-precise meanings against values worked out from the ISA, and
the thread-dimension mutation operators judged by the interpreter.
"""

from __future__ import annotations

import random

import pytest

from verilocc.fuzz import interpret, isa, meanings, mutations, render
from verilocc.fuzz.generate import random_program
from verilocc.fuzz.interpret import run
from verilocc.fuzz.refalloc import allocate
from verilocc.mir.parser import parse_module

ADDR = "$vgpr4_vgpr5"
STORE = f"GLOBAL_STORE_DWORD {ADDR}, {{v}}, 0, 0, implicit $exec :: (store (s32), addrspace 1)"
SSTORE = "S_STORE_DWORD_IMM {s}, $sgpr4_sgpr5, 0, 0 :: (store (s32), addrspace 1)"


def _program(body: list[str], target: str = "gfx90a", registers: list[tuple[int, str]] | None = None,
             features: str | None = None, calls: bool = False) -> str:
    liveins = [("sgpr4_sgpr5", 0 if registers else None), ("vgpr0", 1 if registers else None)]
    ir = render.ir_module(target)
    if features:
        ir = ir.replace('"target-features"="+wavefrontsize32"', f'"target-features"="{features}"')
    head = [] if registers else [f"{ADDR} = COPY $sgpr4_sgpr5"]
    return (ir + render.function_header(target, registers or [], liveins, calls=calls)
            + render.render_body([(0, [], ["$sgpr4_sgpr5", "$vgpr0"], head + body + ["S_ENDPGM 0"])]))


def _stored(text: str, **kw: object) -> list[dict[int, int] | int]:
    """Per store: {lane: stored value} of a vector store, the value of a scalar one."""
    trace = run(text, {"sgpr4": 0x1000, "sgpr5": 0, "vgpr0": 7}, **kw)  # type: ignore[arg-type]
    assert trace.ok, trace.status
    out: list[dict[int, int] | int] = []
    for event in trace.events:
        op, values = str(event[0]), event[2]
        if op == "GLOBAL_STORE_DWORD":
            out.append({lane: v[-1] for lane, v in values})  # type: ignore[attr-defined]
        elif op.startswith("S_STORE"):
            out.append(values[0])  # type: ignore[index]  # the stored SGPR comes first
    return out


def _status(text: str) -> str:
    return run(text, {"sgpr4": 0x1000, "sgpr5": 0, "vgpr0": 7}).status


def test_vector_writes_honour_exec_and_scalar_writes_are_whole() -> None:
    got = _stored(_program([
        "$vgpr1 = V_MOV_B32_e32 1, implicit $exec",
        "$vgpr2 = V_MOV_B32_e32 1, implicit $exec",
        "$sgpr8 = S_MOV_B32 11",
        "$sgpr36_sgpr37 = S_MOV_B64 $exec",
        "$exec = S_MOV_B64 15",
        "$vgpr1 = V_MOV_B32_e32 2, implicit $exec",  # lanes 0-3
        "$vgpr2 = COPY $sgpr8",  # an SGPR into a VGPR: broadcast to the active lanes
        "$sgpr9 = S_MOV_B32 12",  # a scalar write ignores EXEC
        "$vgpr3 = COPY $vgpr1",
        "$exec = S_MOV_B64 $sgpr36_sgpr37",
        STORE.format(v="$vgpr1"), STORE.format(v="$vgpr2"), SSTORE.format(s="$sgpr9")]))
    assert got[0] == {lane: 2 if lane < 4 else 1 for lane in range(64)}
    assert got[1] == {lane: 11 if lane < 4 else 1 for lane in range(64)}
    assert got[2] == 12


def test_a_copy_between_overlapping_tuples_reads_before_it_writes() -> None:
    """`$vgpr2_vgpr3 = COPY $vgpr1_vgpr2` moves both halves: LLVM orders the pieces so that
    none is overwritten before it is read (`SIInstrInfo::copyPhysReg`), either way round."""
    got = _stored(_program([
        "$vgpr1 = V_MOV_B32_e32 1, implicit $exec",
        "$vgpr2 = V_MOV_B32_e32 2, implicit $exec",
        "$vgpr2_vgpr3 = COPY $vgpr1_vgpr2",
        STORE.format(v="$vgpr2"), STORE.format(v="$vgpr3"),
        "$vgpr6 = V_MOV_B32_e32 6, implicit $exec",
        "$vgpr7 = V_MOV_B32_e32 7, implicit $exec",
        "$vgpr5_vgpr6 = COPY $vgpr6_vgpr7",
        STORE.format(v="$vgpr5"), STORE.format(v="$vgpr6")]))
    assert got == [{lane: v for lane in range(64)} for v in (1, 2, 6, 7)]


def test_lane_masks_compares_selects_and_lane_moves() -> None:
    got = _stored(_program([
        "$vgpr1 = V_MOV_B32_e32 5, implicit $exec",
        "$sgpr36_sgpr37 = S_MOV_B64 $exec",
        "$exec = S_MOV_B64 12",  # lanes 2 and 3
        "$vgpr1 = V_MOV_B32_e32 9, implicit $exec",
        "$sgpr20_sgpr21 = V_CMP_EQ_U32_e64 9, $vgpr1, implicit $exec",  # inactive lanes 0
        "$vgpr1 = V_WRITELANE_B32 33, 40, $vgpr1",  # lane 40 is inactive: written all the same
        "$sgpr22 = V_READLANE_B32 $vgpr1, 40",
        "$sgpr23 = V_READFIRSTLANE_B32 $vgpr1, implicit $exec",  # lane 2
        "$exec = S_MOV_B64 0",
        "$sgpr24 = V_READFIRSTLANE_B32 $vgpr1, implicit $exec",  # no lane active: lane 0
        "$exec = S_MOV_B64 $sgpr36_sgpr37",
        "$vgpr2 = V_CNDMASK_B32_e64 0, $vgpr1, 0, $sgpr22, $sgpr20_sgpr21, implicit $exec",
        SSTORE.format(s="$sgpr20"), SSTORE.format(s="$sgpr21"), SSTORE.format(s="$sgpr22"),
        SSTORE.format(s="$sgpr23"), SSTORE.format(s="$sgpr24"), STORE.format(v="$vgpr2")]))
    assert got[:5] == [12, 0, 33, 9, 5]
    assert got[5] == {lane: 33 if lane in (2, 3) else 33 if lane == 40 else 5 for lane in range(64)}


def test_saveexec_and_the_shapes_of_divergent_control_flow() -> None:
    """S_AND_SAVEEXEC saves EXEC and narrows it; S_XOR_B64_term takes the done lanes out, the
    branch on EXECZ/EXECNZ follows, and EXEC is put back."""
    body = [
        "$vgpr1 = V_MOV_B32_e32 0, implicit $exec",
        "$sgpr40_sgpr41 = S_MOV_B64 $exec",
        "$sgpr20_sgpr21 = S_MOV_B64 255",  # the lanes of a condition: 0-7
        "$sgpr22_sgpr23 = S_AND_SAVEEXEC_B64 $sgpr20_sgpr21, implicit-def $exec, implicit-def $scc, implicit $exec",
        "$vgpr1 = V_MOV_B32_e32 3, implicit $exec",
        "$sgpr24 = S_CSELECT_B32 1, 0, implicit $scc",  # SCC: EXEC is not 0
        "$exec = S_MOV_B64 $sgpr40_sgpr41",
        STORE.format(v="$vgpr1"), SSTORE.format(s="$sgpr22"), SSTORE.format(s="$sgpr23"), SSTORE.format(s="$sgpr24")]
    got = _stored(_program(body), exact=True)
    assert got[0] == {lane: 3 if lane < 8 else 0 for lane in range(64)}
    assert got[1:] == [0xFFFFFFFF, 0xFFFFFFFF, 1]


def test_wave_size_follows_the_target() -> None:
    body = ["$vgpr1 = V_MOV_B32_e32 1, implicit $exec", STORE.format(v="$vgpr1")]
    assert len(_stored(_program(body, "gfx1100"))[0]) == 32  # type: ignore[arg-type]
    assert len(_stored(_program(body, "gfx1100", features="+wavefrontsize64"))[0]) == 64  # type: ignore[arg-type]
    assert len(_stored(_program(body, "gfx90a"))[0]) == 64  # type: ignore[arg-type]
    assert isa.wave_size("gfx1200", "") == 32 and isa.wave_size("gfx950", None) == 64
    narrowed = ["$vgpr1 = V_MOV_B32_e32 1, implicit $exec", "$sgpr40 = S_MOV_B32 $exec_lo", "$exec_lo = S_MOV_B32 1",
                "$vgpr1 = V_MOV_B32_e32 2, implicit $exec", "$exec_lo = S_MOV_B32 $sgpr40", STORE.format(v="$vgpr1")]
    assert _stored(_program(narrowed, "gfx1100"))[0] == {lane: 2 if lane == 0 else 1 for lane in range(32)}


def test_calls_clobber_the_active_lanes_of_what_they_do_not_preserve() -> None:
    body = [
        "$vgpr1 = V_MOV_B32_e32 1, implicit $exec",
        "$vgpr40 = V_MOV_B32_e32 2, implicit $exec",
        "$sgpr10 = S_MOV_B32 3", "$sgpr34 = S_MOV_B32 4", "$sgpr44 = S_MOV_B32 5",
        "$sgpr36_sgpr37 = S_MOV_B64 $exec",
        "$exec = S_MOV_B64 3",
        "$sgpr16_sgpr17 = S_MOV_B64 4096",
        "ADJCALLSTACKUP 0, 0, implicit-def dead $scc, implicit-def $sgpr32, implicit $sgpr32",
        "dead $sgpr30_sgpr31 = SI_CALL $sgpr16_sgpr17, 0, csr_amdgpu, implicit-def $vgpr0",
        "ADJCALLSTACKDOWN 0, 0, implicit-def dead $scc, implicit-def $sgpr32, implicit $sgpr32",
        "$exec = S_MOV_B64 $sgpr36_sgpr37",
        STORE.format(v="$vgpr1"), STORE.format(v="$vgpr40"),
        SSTORE.format(s="$sgpr10"), SSTORE.format(s="$sgpr34"), SSTORE.format(s="$sgpr44")]
    text = _program(body, calls=True)
    new = _stored(text)  # callees compiled by LLVM 21+: s44 is not preserved
    old = _stored(text, callee_abi="llvm20")  # up to LLVM 20: s30-s105 are
    for got in (new, old):
        vgpr1, vgpr40 = got[0], got[1]
        assert all(vgpr1[lane] != 1 for lane in (0, 1)) and all(vgpr1[lane] == 1 for lane in range(2, 64))  # type: ignore[index]
        assert vgpr40 == {lane: 2 for lane in range(64)}
        assert got[2] != 3 and got[3] == 4
    assert old[4] == 5 and new[4] != 5


@pytest.mark.parametrize(("line", "why"), [
    ("$sgpr8 = COPY $vgpr1", "illegal VGPR to SGPR copy"),
    ("$sgpr8 = V_ADD_U32_e32 $vgpr1, $vgpr1, implicit $exec", "VALU destination"),
    ("$vgpr2 = S_ADD_I32 $vgpr1, 1, implicit-def $scc", "SGPR"),
    ("$vgpr2 = V_ADD_U32_e32 $vgpr1, $sgpr8, implicit $exec", "VOP2 second source"),
    ("$vgpr2 = V_ADD_U32_e32 $agpr1, $vgpr1, implicit $exec", "source"),
    ("$vgpr2 = V_WRITELANE_B32 $sgpr8, 3, $vgpr1", "ties $vgpr2 and $vgpr1"),
    ("$vgpr2 = nofpexcept V_FMAC_F32_e32 $vgpr1, $vgpr1, $vgpr3, implicit $mode, implicit $exec", "ties"),
    ("SI_SPILL_V32_SAVE $sgpr8, %stack.0, $sgpr32, 0, implicit $exec :: (store (s32) into %stack.0, addrspace 5)",
     "spilled register"),
    ("$sgpr8 = V_READFIRSTLANE_B32 $sgpr9, implicit $exec", "VGPR source"),
    ("$vgpr2_vgpr3 = GLOBAL_LOAD_DWORDX2 $sgpr8_sgpr9, 0, 0, implicit $exec :: (load (s64), addrspace 1)",
     "VGPR address"),
])
def test_what_cannot_be_encoded_stops_the_run(line: str, why: str) -> None:
    setup = ["$vgpr1 = V_MOV_B32_e32 1, implicit $exec", "$sgpr8 = S_MOV_B32 1", "$vgpr3 = V_MOV_B32_e32 1, implicit $exec"]
    status = _status(_program([*setup, line, STORE.format(v="$vgpr1")]))
    assert status.startswith("error: bb.0 line") and why in status, status


def test_undefined_lanes_are_tracked_per_lane() -> None:
    regs = [(0, "sgpr_64"), (1, "vgpr_32"), (2, "vreg_64_align2"), (3, "vgpr_32"), (4, "sreg_64"), (5, "vgpr_32")]
    head = ["%0:sgpr_64 = COPY $sgpr4_sgpr5", "%1:vgpr_32 = COPY $vgpr0", "%2:vreg_64_align2 = COPY %0",
            "%3:vgpr_32 = V_MOV_B32_e32 1, implicit $exec", "%4:sreg_64 = S_MOV_B64 $exec", "$exec = S_MOV_B64 15"]
    store = "GLOBAL_STORE_DWORD %2, {v}, 0, 0, implicit $exec :: (store (s32), addrspace 1)"
    # Defined in lanes 0-3 only: readable there, not once EXEC is back.
    partial = [*head, "%5:vgpr_32 = V_ADD_U32_e32 %3, %3, implicit $exec", store.format(v="%5")]
    inp = {"sgpr4": 1, "sgpr5": 0, "vgpr0": 7}
    assert run(_program(partial, registers=regs), inp, strict=True).ok
    late = [*partial, "$exec = S_MOV_B64 %4", store.format(v="%5")]
    assert "read but not defined" in run(_program(late, registers=regs), inp, strict=True).status
    assert run(_program(late, registers=regs), inp).ok  # only `strict` cares
    # An IMPLICIT_DEF under a narrowed EXEC makes those lanes undefined, not the others.
    undef = [*head, "%3:vgpr_32 = IMPLICIT_DEF", "$exec = S_MOV_B64 240", store.format(v="%3")]
    assert run(_program(undef, registers=regs), inp, strict=True).ok
    undef[-2] = "$exec = S_MOV_B64 31"
    assert "read but not defined" in run(_program(undef, registers=regs), inp, strict=True).status


# Bit-precise meanings: (opcode, inputs, expected results, expected SCC or VCC bit), worked
# out from the ISA's descriptions.
SCALAR_CASES = [
    ("S_ADD_U32", [0xFFFFFFFF, 2], [1], 1),
    ("S_ADDC_U32", [1, 2], [4], 0),  # with SCC in = 1
    ("S_SUB_U32", [1, 2], [0xFFFFFFFF], 1),
    ("S_ADD_I32", [0x7FFFFFFF, 1], [0x80000000], 1),
    ("S_ANDN2_B64", [0xFF, 0x0F], [0xF0], 1),
    ("S_ORN2_B32", [0, 0xFFFFFFFF], [0], 0),
    ("S_LSHL_B32", [1, 33], [2], 1),  # the amount's low 5 bits
    ("S_ASHR_I32", [0x80000000, 31], [0xFFFFFFFF], 1),
    ("S_BFE_U32", [0xABCD, 4 | (8 << 16)], [0xBC], 1),
    ("S_BFE_I32", [0x80, 0 | (8 << 16)], [0xFFFFFF80], 1),
    ("S_MIN_I32", [0xFFFFFFFF, 3], [0xFFFFFFFF], 1),
    ("S_CMP_LT_I32", [0xFFFFFFFF, 0], [], 1),
    ("S_CSELECT_B32", [7, 8], [7], None),
]
LANE_CASES = [
    ("V_ADD_CO_U32_e64", [0xFFFFFFFF, 1, 0], [0, 1], None),
    ("V_ADD_CO_U32_e32", [0xFFFFFFFF, 2], [1], 1),
    ("V_ADDC_U32_e64", [1, 1, 1, 0], [3, 0], None),
    ("V_SUBB_U32_e64", [0, 0, 1, 0], [0xFFFFFFFF, 1], None),
    ("V_SUBREV_U32_e32", [1, 3], [2], None),
    ("V_ADD_U32_e64", [0xFFFFFFFF, 1, 1], [0xFFFFFFFF], None),  # clamp saturates
    ("V_LSHLREV_B64_e64", [33, 1], [1 << 33], None),
    ("V_LSHL_B64_e64", [1, 33], [1 << 33], None),
    ("V_ALIGNBIT_B32_e64", [0x12345678, 0x9ABCDEF0, 8], [0x789ABCDE], None),
    ("V_BFE_I32_e64", [0xF0, 4, 4], [0xFFFFFFFF], None),
    ("V_MUL_HI_U32_e64", [0x80000000, 4], [2], None),
    ("V_MAD_U32_U24_e64", [0x1000002, 3, 1, 0], [7], None),
    ("V_XAD_U32_e64", [6, 3, 1], [6], None),
    ("V_CNDMASK_B32_e64", [0, 5, 1, 6, 1], [0x80000006], None),  # the NEG modifier on the chosen source
    ("V_CNDMASK_B32_e32", [5, 6, 0], [5], None),
    ("V_CMP_LT_I32_e64", [0xFFFFFFFF, 0], [1], None),
    ("V_CMP_GT_U64_e32", [1 << 40, 1], [], 1),
]


@pytest.mark.parametrize(("op", "inputs", "results", "bit"), SCALAR_CASES)
def test_scalar_meanings(op: str, inputs: list[int], results: list[int], bit: int | None) -> None:
    assert meanings.SCALAR[op](inputs, 1) == (results, bit)


@pytest.mark.parametrize(("op", "inputs", "results", "bit"), LANE_CASES)
def test_lane_meanings(op: str, inputs: list[int], results: list[int], bit: int | None) -> None:
    assert meanings.LANE[op](inputs) == (results, bit)


def test_exec_arithmetic_is_always_real() -> None:
    """EXEC is made of compares and logical SALU opcodes: they never hash, or no structured
    program would keep its lanes (a waterfall loop would not end)."""
    assert {"S_AND_B64", "S_XOR_B32", "S_ANDN2_B64", "V_CMP_EQ_U64_e64", "V_CNDMASK_B32_e64"} <= meanings.ALWAYS
    assert "S_ADD_I32" not in meanings.ALWAYS and "V_ADD_U32_e32" not in meanings.ALWAYS


# --- the thread-dimension mutation operators ---------------------------------------------------
THREAD_OPERATORS = ("other-file", "lane-write-tie", "drop-exec-update", "move-exec-update")


@pytest.mark.parametrize("name", THREAD_OPERATORS)
def test_thread_mutations_are_judged_by_the_interpreter(name: str) -> None:
    """Each operator finds places in generated programs' reference allocations, and the
    interpreter tells most of its mutants from the program (a lane-write tie never runs)."""
    made = differing = 0
    for seed in range(40):
        target = ("gfx90a", "gfx1100", "gfx942", "gfx908")[seed % 4]
        program = random_program(target, seed)
        alloc = allocate(program.text, random.Random(seed))
        m = mutations.OPERATORS[name](parse_module(alloc.text, "post.mir"), random.Random(seed))
        if m is None:
            continue
        made += 1
        inp = {r: random.Random(seed).getrandbits(32) for r in interpret.function_inputs(program.text)}
        want, got = run(program.text, inp, seed=seed), run(m.module, inp, seed=seed)
        differing += want != got
        if name == "lane-write-tie":
            assert got.status.startswith("error:") and "ties" in got.status, got.status
        if name == "other-file" and got.ok:
            # Runs only where every operand the value meets takes either file: a broadcast.
            assert "moved to" in m.description
    assert made >= 5 and differing >= made // 2, (made, differing)
