"""Bit-precise opcode meanings decide which input slots an instruction's results ignore."""

from __future__ import annotations

import pytest

from verilocc.mir.model import Instruction, Operand
from verilocc.semantics.bitvector import MEANINGS, ignores_slots


def _ins(opcode: str, *inputs: str, scc: str | None = "dead") -> tuple[Instruction, dict[int, int]]:
    """`%0 = OPCODE inputs...`; a register input is written `r32`/`r64`, an immediate as a number."""
    ops = [Operand(kind="reg", text="%0", line=1, column=1, vreg=0, flags=frozenset({"def"}))]
    bits: dict[int, int] = {}
    for k, text in enumerate(inputs, start=1):
        if text.startswith("r"):
            ops.append(Operand(kind="reg", text=f"%{k}", line=1, column=1, vreg=k))
            bits[len(ops) - 1] = int(text[1:])
        else:
            ops.append(Operand(kind="imm", text=text, line=1, column=1))
    if scc is not None:
        flags = {"implicit-def", "dead"} if scc == "dead" else {"implicit-def"}
        ops.append(Operand(kind="reg", text="$scc", line=1, column=1, phys="scc", flags=frozenset(flags)))
    return Instruction(opcode=opcode, operands=ops, line=1, column=1), bits


@pytest.mark.parametrize(("opcode", "inputs", "slots", "expected"), [
    # An arithmetic shift of a pair by 33 keeps bits 33-63: the low register does not matter.
    ("S_ASHR_I64", ("r64", "33"), [0, 1], True),
    ("S_ASHR_I64", ("r64", "33"), [2], False),
    ("S_ASHR_I64", ("r64", "31"), [0], True),
    ("S_ASHR_I64", ("r64", "31"), [1], False),
    ("S_LSHR_B64", ("r64", "32"), [0, 1], True),
    ("S_LSHL_B32", ("r32", "16"), [1], True),
    ("S_LSHL_B32", ("r32", "15"), [1], False),
    ("S_AND_B32", ("r32", "65535"), [1], True),
    ("S_AND_B32", ("r32", "65536"), [1], False),
    ("S_BFE_U32", ("r32", str(8 | 8 << 16)), [1], True),
    ("S_BFE_U32", ("r32", str(8 | 9 << 16)), [1], False),
    ("S_BFE_I64", ("r64", str(0 | 16 << 16)), [1, 2, 3], True),
    ("V_LSHRREV_B32_e32", ("16", "r32"), [0], True),
    ("V_LSHRREV_B32_e32", ("15", "r32"), [0], False),
    ("V_ADD_U32_e32", ("r32", "r32"), [1], False),
    ("S_MOV_B64", ("r64",), [3], False),
])
def test_ignored_slots(opcode: str, inputs: tuple[str, ...], slots: list[int], expected: bool) -> None:
    ins, bits = _ins(opcode, *inputs, scc="dead" if opcode.startswith("S_") else None)
    assert ignores_slots(ins, min(bits), slots, bits) is expected


def test_a_live_scc_counts_as_a_result() -> None:
    """S_ADD_U32's carry depends on the high half: the sum's low half alone does not decide."""
    ins, bits = _ins("S_AND_B32", "r32", "65535", scc="live")
    assert ignores_slots(ins, 1, [1], bits) is True  # scc = (result != 0), still the low half only
    ins, bits = _ins("S_ADD_U32", "r32", "r32", scc="live")
    assert ignores_slots(ins, 1, [1], bits) is False


def test_no_claim_without_a_meaning_or_with_another_layout() -> None:
    ins, bits = _ins("V_MFMA_F32_4X4X1F32_e64", "r32", "r32", scc=None)
    assert ignores_slots(ins, 1, [1], bits) is False
    ins, bits = _ins("S_ASHR_I64", "r64", "33", "0")  # one input too many
    assert ignores_slots(ins, 1, [0, 1], bits) is False
    ins, bits = _ins("S_ASHR_I64", "r32", "33")  # a 32-bit operand where the opcode reads 64 bits
    assert ignores_slots(ins, 1, [0], bits) is False
    ins, bits = _ins("V_ADD_U32_e64", "r32", "65535", "1", scc=None)  # clamp 1: saturating
    assert ignores_slots(ins, 1, [1], bits) is False
    ins, bits = _ins("S_ASHR_I64", "r64", "33")
    assert ignores_slots(ins, 2, [0], bits) is False  # the shift amount is an immediate, not an input slot


def test_every_meaning_is_well_formed() -> None:
    """Each table entry builds for inputs of its widths and gives results of consistent widths."""
    import z3

    for name, m in MEANINGS.items():
        values = [z3.BitVec(f"x{k}", w) for k, w in enumerate(m.widths)]
        out = m.fn(z3, values)
        assert out, name
        for key, value in out.items():
            assert key in ("d0", "d1", "scc", "vcc"), name
            if key in ("d1", "scc", "vcc"):
                assert value.size() == 1, name


def _mad(carry: str) -> tuple[Instruction, dict[int, int]]:
    """`%0, CARRY = V_MAD_U64_U32_e64 %1(32), %2(32), %3(64), 0`."""
    ins, bits = _ins("V_MAD_U64_U32_e64", "r32", "r32", "r64", "0", scc=None)
    flags = frozenset({"def", "dead"}) if carry == "dead" else frozenset({"def"})
    second = Operand(kind="reg", text=carry, line=1, column=1, phys="sgpr_null" if carry == "$sgpr_null" else None,
                     vreg=None if carry == "$sgpr_null" else 9, flags=flags)
    ins.operands.insert(1, second)
    return ins, {k + 1: v for k, v in bits.items()}


@pytest.mark.parametrize(("carry", "observed", "expected"), [
    ("$sgpr_null", {"d0": 0xFFFF_FFFF}, True),  # only the low half of the sum is read
    ("dead", {"d0": 0xFFFF_FFFF}, True),
    ("$sgpr_null", None, False),  # the high half of the sum is read
    ("$sgpr_null", {"d0": 0xFFFF_0000_0000}, False),
    ("live", {"d0": 0xFFFF_FFFF}, False),  # the carry-out depends on the addend's high half
])
def test_a_result_counts_only_on_the_bits_the_program_reads(carry: str, observed: dict[str, int] | None,
                                                            expected: bool) -> None:
    """The addend's high half of `V_MAD_U64_U32` changes the sum's high half and the carry,
    never the low half: when nothing reads those, a wrong high half is harmless."""
    ins, bits = _mad(carry)
    assert MEANINGS.get("V_MAD_U64_U32_gfx11_e64") is MEANINGS["V_MAD_U64_U32_e64"]
    addend = max(bits)
    # Not True is what matters where a lane does matter: a counterexample (False), or a solver
    # that gave up on the 64-bit product within its time limit (None); neither discharges.
    got = ignores_slots(ins, addend, [2, 3], bits, observed=observed)
    assert got is True if expected else got is not True
    assert ignores_slots(ins, addend, [0], bits, observed=observed) is not True  # the low half is read


@pytest.mark.parametrize(("mods0", "mods1", "position", "slots", "expected"), [
    # `V_PK_MOV_B32 12, %a, 8, %b` is <%a.hi, %b.lo>: %a's low and %b's high component are unread.
    ("12", "8", 2, [0, 1], True),
    ("12", "8", 2, [2, 3], False),
    ("12", "8", 4, [2, 3], True),
    ("12", "8", 4, [0, 1], False),
    # LLVM's own 64-bit copy (`8, %s, 12, %s`) reads the low component of src0, the high of src1.
    ("8", "12", 2, [2, 3], True),
    ("8", "12", 4, [0, 1], True),
    ("8", "12", 2, [1, 2], False),  # a slot of each component: the low one is read
])
def test_a_packed_move_reads_one_component_of_each_source(mods0: str, mods1: str, position: int,
                                                          slots: list[int], expected: bool) -> None:
    ins, bits = _ins("V_PK_MOV_B32", mods0, "r64", mods1, "r64", "0", "0", "0", "0", "0", scc=None)
    assert ignores_slots(ins, position, slots, bits) is expected


@pytest.mark.parametrize(("opcode", "observed", "position", "slots", "expected"), [
    # `%202 = V_PK_MUL_F32 8, %400.sub0_sub1, 8, %3.sub0_sub1` with only %202.sub1 ever read: the
    # low components of both sources feed only the low result, which nothing reads.
    ("V_PK_MUL_F32", {"d0": 0xFFFF_FFFF_0000_0000}, 2, [0, 1], True),
    ("V_PK_MUL_F32", {"d0": 0xFFFF_FFFF_0000_0000}, 4, [0, 1], True),
    ("V_PK_MUL_F32", {"d0": 0xFFFF_FFFF_0000_0000}, 2, [2, 3], False),
    ("V_PK_MUL_F32", {"d0": 0xFFFF}, 2, [0, 1], False),
    ("V_PK_MUL_F32", {"d0": 0}, 2, [0, 1], False),  # an empty mask is the whole result
    ("V_PK_MUL_F32", None, 2, [0, 1], False),
    # V_PK_MOV_B32 `8, %s, 12, %t` is <%s.lo, %t.hi>: with only the high result read, %s is unread.
    ("V_PK_MOV_B32", {"d0": 0xFFFF_FFFF_0000_0000}, 2, [0, 1, 2, 3], True),
    ("V_PK_MOV_B32", {"d0": 0xFFFF_FFFF_0000_0000}, 4, [2, 3], False),
    ("V_PK_MOV_B32", {"d0": 0xFFFF_FFFF}, 4, [0, 1, 2, 3], True),
])
def test_a_packed_component_feeding_only_unread_results_is_unread(opcode: str, observed: dict[str, int] | None,
                                                                  position: int, slots: list[int],
                                                                  expected: bool) -> None:
    mods = ("8", "12") if opcode == "V_PK_MOV_B32" else ("8", "8")
    ins, bits = _ins(opcode, mods[0], "r64", mods[1], "r64", "0", "0", "0", "0", "0", scc=None)
    assert ignores_slots(ins, position, slots, bits, observed=observed) is expected
