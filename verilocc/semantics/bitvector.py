"""Bit-precise meanings of common integer SALU/VALU opcodes, and the lanes a result ignores.

The equivalence layer treats most opcodes as uninterpreted functions: equal inputs give equal
results, and nothing else is assumed. That cannot show that an instruction ignores part of an
input, which is what an allocation needs when it overwrites a lane that the virtual program
still reads but whose value cannot change the result (`S_ASHR_I64 %r.sub2_sub3, 33` takes
bits 33-63 of the pair: the low register does not matter). LLVM's liveness can know such a
lane is undefined (after coalescing) while the MIR text says it is read; an allocation that
reuses the lane is then right in effect and wrong by the text, an *LLVM liveness anomaly*.

This module gives exact z3 bit-vector meanings to integer opcodes and decides, for one
instruction, whether its results (explicit defs, and `$scc`/`$vcc` where they are not dead)
are the same for every value of some 16-bit slots of one input: `ignores_slots`.

Vector (VALU) opcodes are read per lane of the wave: each register operand is the value of
one work-item, which is exact for lane-wise operations. Cross-lane opcodes are modelled by a
function with the same dependence on the bits of their inputs as the real one (for
`V_READFIRSTLANE_B32`, the identity): a slot the model does not depend on is a slot the real
instruction does not depend on, which is all `ignores_slots` claims. Opcodes not listed here
have no bit-precise meaning and never ignore anything.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verilocc.mir.model import Instruction

Z3 = Any
Fn = Callable[[Any, list[Any]], dict[str, Any]]  # (z3, inputs) -> {"d0": result, "d1": carry, "scc": bool ...}


@dataclass(frozen=True)
class BitMeaning:
    """The meaning of one opcode: how many explicit register/immediate inputs it takes and of
    what width (bits), and the function from their values to its results."""

    widths: tuple[int, ...]
    fn: Fn
    vector: bool = False  # a VALU opcode, read per work-item
    clamp: bool = False  # the last input is a clamp bit; only clamp 0 has this meaning


def _mask(z3: Z3, x: Any, bits: int) -> Any:
    return x & z3.BitVecVal((1 << bits) - 1, x.size())


def _shift_amount(z3: Z3, amount: Any, width: int) -> Any:
    """The low log2(width) bits of a 32-bit shift amount, widened to `width` bits."""
    low = _mask(z3, amount, 6 if width == 64 else 5)
    return z3.ZeroExt(width - 32, low) if width > 32 else low


def _bool(z3: Z3, cond: Any) -> Any:
    return z3.If(cond, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))


def _nonzero(z3: Z3, x: Any) -> Any:
    return _bool(z3, x != 0)


def _logic(op: Callable[[Any, Any], Any], width: int, vector: bool = False) -> BitMeaning:
    """A bitwise operation; the scalar ones also set SCC (result nonzero), the VALU ones do not."""
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        r = op(v[0], v[1])
        return {"d0": r} if vector else {"d0": r, "scc": _nonzero(z3, r)}
    return BitMeaning((width, width), fn, vector)


def _shift(kind: str, width: int, reverse: bool = False, vector: bool = False) -> BitMeaning:
    """Scalar shifts take (value, amount); VALU `*REV` shifts take (amount, value)."""
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        value, amount = (v[1], v[0]) if reverse else (v[0], v[1])
        s = _shift_amount(z3, amount, width)
        r = value << s if kind == "shl" else (z3.LShR(value, s) if kind == "lshr" else value >> s)
        return {"d0": r, "scc": _nonzero(z3, r)}
    widths = (32, width) if reverse else (width, 32)
    return BitMeaning(widths, fn, vector)


def _arith(kind: str, vector: bool = False, clamp: bool = False) -> BitMeaning:
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        a, b = v[0], v[1]
        if kind == "add":
            r = a + b
            carry = _bool(z3, z3.ULT(r, a))
        elif kind == "sub":
            r, carry = a - b, _bool(z3, z3.ULT(a, b))
        elif kind == "subrev":
            r, carry = b - a, _bool(z3, z3.ULT(b, a))
        elif kind == "mul":
            r, carry = a * b, None
        elif kind == "mulhi_u":
            r, carry = z3.Extract(63, 32, z3.ZeroExt(32, a) * z3.ZeroExt(32, b)), None
        else:  # mulhi_i
            r, carry = z3.Extract(63, 32, z3.SignExt(32, a) * z3.SignExt(32, b)), None
        out = {"d0": r}
        if carry is not None:
            out["scc"] = carry
        return out
    return BitMeaning((32, 32, 1) if clamp else (32, 32), fn, vector, clamp)


def _mad_u64_u32() -> BitMeaning:
    """`V_MAD_U64_U32`: (src0, src1, src2, clamp) -> d0 = src0 * src1 + src2 (64 bits), and
    d1 (the second explicit def, the carry-out lane mask) = the 64-bit sum overflows."""
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        a, b, c = v[0], v[1], v[2]
        r = z3.ZeroExt(32, a) * z3.ZeroExt(32, b) + c
        return {"d0": r, "d1": _bool(z3, z3.ULT(r, c))}
    return BitMeaning((32, 32, 64, 1), fn, True, True)


def _minmax(kind: str, signed: bool, vector: bool = False) -> BitMeaning:
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        a, b = v[0], v[1]
        less = (a < b) if signed else z3.ULT(a, b)
        greater = (a > b) if signed else z3.UGT(a, b)
        if kind == "min":
            return {"d0": z3.If(less, a, b), "scc": _bool(z3, less)}
        return {"d0": z3.If(greater, a, b), "scc": _bool(z3, greater)}
    return BitMeaning((32, 32), fn, vector)


def _bfe(signed: bool, width: int, vector: bool = False) -> BitMeaning:
    """S_BFE: (value, offset | width << 16); V_BFE: (value, offset, width)."""
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        value = v[0]
        if vector:
            offset, size = _mask(z3, v[1], 5), _mask(z3, v[2], 5)
        else:
            offset = _mask(z3, v[1], 6 if width == 64 else 5)
            size = _mask(z3, z3.LShR(v[1], 16), 7)
        if width > 32:
            offset, size = z3.ZeroExt(width - 32, offset), z3.ZeroExt(width - 32, size)
        field = z3.LShR(value, offset)
        one = z3.BitVecVal(1, width)
        kept = z3.If(z3.UGE(size, width), field, field & ((one << size) - 1))
        if signed:
            shift = z3.BitVecVal(width, width) - size
            kept = z3.If(z3.UGE(size, width), field, (kept << shift) >> shift)
        r = z3.If(size == 0, z3.BitVecVal(0, width), kept)
        return {"d0": r, "scc": _nonzero(z3, r)}
    return BitMeaning((width, 32, 32) if vector else (width, 32), fn, vector)


def _unary(f: Callable[[Any, Any], Any], width: int, scc: bool, vector: bool = False) -> BitMeaning:
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        r = f(z3, v[0])
        return {"d0": r, "scc": _nonzero(z3, r)} if scc else {"d0": r}
    return BitMeaning((width,), fn, vector)


def _ternary(f: Callable[[Any, Any, Any, Any], Any]) -> BitMeaning:
    return BitMeaning((32, 32, 32), lambda z3, v: {"d0": f(z3, v[0], v[1], v[2])}, True)


def _compare(pred: str, signed: bool, e32: bool) -> BitMeaning:
    def fn(z3: Z3, v: list[Any]) -> dict[str, Any]:
        a, b = v[0], v[1]
        ops = {
            "EQ": a == b, "NE": a != b,
            "LT": (a < b) if signed else z3.ULT(a, b), "LE": (a <= b) if signed else z3.ULE(a, b),
            "GT": (a > b) if signed else z3.UGT(a, b), "GE": (a >= b) if signed else z3.UGE(a, b),
        }
        bit = _bool(z3, ops[pred])
        return {"vcc": bit} if e32 else {"d0": bit}
    return BitMeaning((32, 32), fn, True)


def _scalar_compare(pred: str, signed: bool) -> BitMeaning:
    inner = _compare(pred, signed, False)
    return BitMeaning((32, 32), lambda z3, v: {"scc": inner.fn(z3, v)["d0"]})


def _table() -> dict[str, BitMeaning]:
    t: dict[str, BitMeaning] = {}
    for w, sfx in ((32, "B32"), (64, "B64")):
        t[f"S_AND_{sfx}"] = _logic(lambda a, b: a & b, w)
        t[f"S_OR_{sfx}"] = _logic(lambda a, b: a | b, w)
        t[f"S_XOR_{sfx}"] = _logic(lambda a, b: a ^ b, w)
        t[f"S_ANDN2_{sfx}"] = _logic(lambda a, b: a & ~b, w)
        t[f"S_ORN2_{sfx}"] = _logic(lambda a, b: a | ~b, w)
        t[f"S_NAND_{sfx}"] = _logic(lambda a, b: ~(a & b), w)
        t[f"S_NOR_{sfx}"] = _logic(lambda a, b: ~(a | b), w)
        t[f"S_XNOR_{sfx}"] = _logic(lambda a, b: ~(a ^ b), w)
        t[f"S_LSHL_{sfx}"] = _shift("shl", w)
        t[f"S_LSHR_{sfx}"] = _shift("lshr", w)
        t[f"S_MOV_{sfx}"] = _unary(lambda z3, x: x, w, scc=False)
        t[f"S_NOT_{sfx}"] = _unary(lambda z3, x: ~x, w, scc=True)
    t["S_ASHR_I32"] = _shift("ashr", 32)
    t["S_ASHR_I64"] = _shift("ashr", 64)
    t["S_ADD_U32"] = t["S_ADD_I32"] = _arith("add")
    t["S_SUB_U32"] = t["S_SUB_I32"] = _arith("sub")
    t["S_MUL_I32"] = _arith("mul")
    t["S_MUL_HI_U32"] = _arith("mulhi_u")
    t["S_MUL_HI_I32"] = _arith("mulhi_i")
    for kind in ("min", "max"):
        t[f"S_{kind.upper()}_I32"] = _minmax(kind, True)
        t[f"S_{kind.upper()}_U32"] = _minmax(kind, False)
        t[f"V_{kind.upper()}_I32_e32"] = t[f"V_{kind.upper()}_I32_e64"] = _minmax(kind, True, vector=True)
        t[f"V_{kind.upper()}_U32_e32"] = t[f"V_{kind.upper()}_U32_e64"] = _minmax(kind, False, vector=True)
    t["S_BFE_U32"], t["S_BFE_I32"] = _bfe(False, 32), _bfe(True, 32)
    t["S_BFE_U64"], t["S_BFE_I64"] = _bfe(False, 64), _bfe(True, 64)
    t["S_ABS_I32"] = _unary(lambda z3, x: z3.If(x < 0, -x, x), 32, scc=True)
    t["S_SEXT_I32_I8"] = _unary(lambda z3, x: z3.SignExt(24, z3.Extract(7, 0, x)), 32, scc=False)
    t["S_SEXT_I32_I16"] = _unary(lambda z3, x: z3.SignExt(16, z3.Extract(15, 0, x)), 32, scc=False)
    for pred in ("EQ", "LG", "LT", "LE", "GT", "GE"):
        p = "NE" if pred == "LG" else pred
        t[f"S_CMP_{pred}_U32"] = _scalar_compare(p, False)
        t[f"S_CMP_{pred}_I32"] = _scalar_compare(p, True)
    for pred in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        for sign, signed in (("U32", False), ("I32", True)):
            t[f"V_CMP_{pred}_{sign}_e64"] = _compare(pred, signed, e32=False)
            t[f"V_CMP_{pred}_{sign}_e32"] = _compare(pred, signed, e32=True)
    t["V_ADD_U32_e32"], t["V_ADD_U32_e64"] = _arith("add", True), _arith("add", True, clamp=True)
    t["V_SUB_U32_e32"], t["V_SUB_U32_e64"] = _arith("sub", True), _arith("sub", True, clamp=True)
    t["V_SUBREV_U32_e32"], t["V_SUBREV_U32_e64"] = _arith("subrev", True), _arith("subrev", True, clamp=True)
    t["V_MUL_LO_U32_e64"] = _arith("mul", True)
    t["V_MAD_U64_U32_e64"] = t["V_MAD_U64_U32_gfx11_e64"] = _mad_u64_u32()
    t["V_MUL_HI_U32_e64"] = _arith("mulhi_u", True)
    t["V_MUL_HI_I32_e64"] = _arith("mulhi_i", True)
    for name, op in (("AND", operator.and_), ("OR", operator.or_), ("XOR", operator.xor)):
        for enc in ("e32", "e64"):
            t[f"V_{name}_B32_{enc}"] = _logic(op, 32, vector=True)
    for kind, name in (("shl", "LSHLREV"), ("lshr", "LSHRREV"), ("ashr", "ASHRREV")):
        suffix = "I32" if kind == "ashr" else "B32"
        t[f"V_{name}_{suffix}_e32"] = t[f"V_{name}_{suffix}_e64"] = _shift(kind, 32, reverse=True, vector=True)
        suffix64 = "I64" if kind == "ashr" else "B64"
        t[f"V_{name}_{suffix64}_e64"] = _shift(kind, 64, reverse=True, vector=True)
    t["V_BFE_U32_e64"], t["V_BFE_I32_e64"] = _bfe(False, 32, vector=True), _bfe(True, 32, vector=True)
    t["V_LSHL_ADD_U32_e64"] = _ternary(lambda z3, a, b, c: (a << _shift_amount(z3, b, 32)) + c)
    t["V_ADD_LSHL_U32_e64"] = _ternary(lambda z3, a, b, c: (a + b) << _shift_amount(z3, c, 32))
    t["V_LSHL_OR_B32_e64"] = _ternary(lambda z3, a, b, c: (a << _shift_amount(z3, b, 32)) | c)
    t["V_AND_OR_B32_e64"] = _ternary(lambda z3, a, b, c: (a & b) | c)
    t["V_OR3_B32_e64"] = _ternary(lambda z3, a, b, c: a | b | c)
    t["V_XOR3_B32_e64"] = _ternary(lambda z3, a, b, c: a ^ b ^ c)
    t["V_BFI_B32_e64"] = _ternary(lambda z3, a, b, c: (a & b) | (~a & c))
    t["V_MOV_B32_e32"] = t["V_MOV_B32_e64"] = _unary(lambda z3, x: x, 32, scc=False, vector=True)
    t["V_READFIRSTLANE_B32"] = _unary(lambda z3, x: x, 32, scc=False, vector=True)
    t["V_NOT_B32_e32"] = t["V_NOT_B32_e64"] = _unary(lambda z3, x: ~x, 32, scc=False, vector=True)
    return t


MEANINGS: dict[str, BitMeaning] = _table()

def _explicit_inputs(ins: Instruction) -> list[int]:
    """Operand positions of the explicit inputs (register uses and immediates) after the defs."""
    return [i for i, op in enumerate(ins.operands)
            if not op.is_implicit and not (op.kind == "reg" and op.is_def) and op.kind in ("reg", "imm")]


def meaning(ins: Instruction) -> BitMeaning | None:
    m = MEANINGS.get(ins.opcode)
    if m is None:
        return None
    inputs = _explicit_inputs(ins)
    if len(inputs) != len(m.widths):
        return None  # another operand layout (modifiers, a newer encoding): no claim
    if m.clamp and ins.operands[inputs[-1]].text != "0":
        return None  # a saturating form
    return m


def evaluate(ins: Instruction, values: dict[int, int]) -> dict[str, int] | None:
    """The results of `ins` on concrete inputs: `values` maps the operand position of each
    register input to its value (as wide as the opcode reads it); immediates are read from
    the instruction. None when the opcode has no bit-precise meaning here. "d0" is the
    explicit result, "d1" a second one (`V_MAD_U64_U32`'s carry-out); "scc"/"vcc" the
    condition bits it sets."""
    import z3

    m = meaning(ins)
    if m is None:
        return None
    args: list[Any] = []
    for pos, width in zip(_explicit_inputs(ins), m.widths):
        op = ins.operands[pos]
        if op.kind == "imm":
            try:
                v = int(op.text, 0)
            except ValueError:
                return None
        elif pos in values:
            v = values[pos]
        else:
            return None
        args.append(z3.BitVecVal(v & ((1 << width) - 1), width))
    out = {}
    for name, expr in m.fn(z3, args).items():
        out[name] = z3.simplify(expr).as_long()
    return out


def _results_live(ins: Instruction) -> set[str]:
    """Which results count: the first explicit def, any further one (`d1`, ...) not marked dead
    nor written to `$sgpr_null`, and `$scc`/`$vcc` implicit defs not marked dead."""
    out = {"d0"}
    explicit = [op for op in ins.explicit_regs if op.is_def]
    for k, op in enumerate(explicit[1:], 1):
        if not op.has("dead") and op.phys != "sgpr_null":
            out.add(f"d{k}")
    for op in ins.operands:
        if op.kind == "reg" and op.is_def and op.is_implicit and not op.has("dead"):
            if op.phys == "scc":
                out.add("scc")
            elif op.phys in ("vcc", "vcc_lo"):
                out.add("vcc")
    return out


# Packed FP32 (VOP3P, gfx90a and later): each source is a pair of 32-bit components, and each
# result component c reads, of every source, the component its modifiers select (OP_SEL_0 for
# c = 0, OP_SEL_1 for c = 1; SIDefines.h SISrcMods). Whatever the arithmetic, a component no
# result selects is not read. V_PK_MOV_B32 is a shuffle: the low result is the component of src0
# that src0's OP_SEL_0 selects, the high result the component of src1 that src1's OP_SEL_0
# selects (`V_PK_MOV_B32 12, %a, 8, %b` is <%a.hi, %b.lo>; LLVM's 64-bit copy is `8, %s, 12, %s`).
PACKED_F32 = frozenset({"V_PK_FMA_F32", "V_PK_MUL_F32", "V_PK_ADD_F32"})
PACKED_MOVE = "V_PK_MOV_B32"
OP_SEL_0, OP_SEL_1 = 1 << 2, 1 << 3


def unselected_slots(ins: Instruction, position: int, observed: dict[str, int] | None = None) -> frozenset[int]:
    """The 16-bit slots of the source at operand `position` that no observed result of `ins`
    reads: for a packed FP32 instruction, the 32-bit component its modifiers (the immediate
    before the source) select for no observed result component (`V_PK_FMA_F32 8, %a, 0, %b, ...`:
    0 broadcasts the low component of %b, whose high one is not read); for `V_PK_MOV_B32`, the
    component of each source that its OP_SEL_0 does not select, and the whole source when the
    result component it feeds is not observed. `observed` is as for `ignores_slots`."""
    if ins.opcode not in PACKED_F32 and ins.opcode != PACKED_MOVE:
        return frozenset()
    if position < 1 or ins.operands[position].kind != "reg":
        return frozenset()
    mods = ins.operands[position - 1]
    if mods.kind != "imm" or ins.operands[position].is_def or ins.operands[position].is_implicit:
        return frozenset()
    try:
        m = int(mods.text, 0)
    except ValueError:
        return frozenset()
    mask = (observed or {}).get("d0", 0)
    results = {c for c in (0, 1) if not mask or mask >> (32 * c) & 0xFFFF_FFFF}
    if ins.opcode == PACKED_MOVE:
        source = sum(1 for op in ins.operands[:position] if op.kind == "reg" and not op.is_def)
        read = {1 if m & OP_SEL_0 else 0} if source in results else set()
    else:
        read = {1 if m & (OP_SEL_0 if c == 0 else OP_SEL_1) else 0 for c in results}
    return frozenset(s for c in (0, 1) if c not in read for s in (2 * c, 2 * c + 1))


def packed_selection_query(ins: Instruction, position: int, slots: list[int],
                           observed: dict[str, int] | None = None) -> list[Any] | None:
    """The z3 assertions whose unsatisfiability is `unselected_slots`'s claim, for a packed FP32
    instruction or `V_PK_MOV_B32`: each observed result component is an uninterpreted function
    of the 32-bit components its modifiers select from its sources (the modifiers, clamp and
    the rest are the same on both sides, so they are part of the function); two copies of the
    source at operand `position` agree outside `slots`, and some observed component differs.
    None for another opcode or operand."""
    import z3

    if ins.opcode not in PACKED_F32 and ins.opcode != PACKED_MOVE:
        return None
    sources: list[tuple[int, int]] = []  # (operand position, modifiers) of each register source
    for k, op in enumerate(ins.operands):
        if op.kind == "reg" and not op.is_def and not op.is_implicit and k > 0 and ins.operands[k - 1].kind == "imm":
            try:
                sources.append((k, int(ins.operands[k - 1].text, 0)))
            except ValueError:
                return None
    if position not in [k for k, _ in sources]:
        return None
    keep = sum(0xFFFF << (16 * s) for s in range(4) if s not in slots)
    values_a = {k: z3.BitVec(f"in{n}", 64) for n, (k, _) in enumerate(sources)}
    values_b = dict(values_a)
    other = z3.BitVec("in_other", 64)
    values_b[position] = (values_a[position] & z3.BitVecVal(keep, 64)) | (other & z3.BitVecVal(~keep & (2**64 - 1), 64))
    mask = (observed or {}).get("d0", 0)
    results = [c for c in (0, 1) if not mask or mask >> (32 * c) & 0xFFFF_FFFF]

    def component(v: Any, c: int, mods: int) -> Any:
        hi = mods & (OP_SEL_0 if c == 0 else OP_SEL_1) if ins.opcode != PACKED_MOVE else mods & OP_SEL_0
        return z3.Extract(63, 32, v) if hi else z3.Extract(31, 0, v)

    differs = []
    bv32 = z3.BitVecSort(32)
    for c in results:
        if ins.opcode == PACKED_MOVE:
            if c >= len(sources):
                return None
            k, mods = sources[c]
            differs.append(component(values_a[k], c, mods) != component(values_b[k], c, mods))
        else:
            f = z3.Function(f"{ins.opcode.lower()}_c{c}", *([bv32] * len(sources)), bv32)
            differs.append(f(*[component(values_a[k], c, mods) for k, mods in sources])
                           != f(*[component(values_b[k], c, mods) for k, mods in sources]))
    return [z3.Or(differs)] if differs else None


#: z3 resource units a discharge may use (`ignores_slots`), counted alike on every machine and
#: under any load, so the verdict is the same everywhere: about 2 s of z3 here. A tenth of it
#: gives the same verdicts on the findings snapshot (docs/measurements.md).
DISCHARGE_RLIMIT = 5_000_000


def ignores_slots(ins: Instruction, position: int, slots: list[int], input_bits: dict[int, int],
                  timeout_ms: int = 30_000, observed: dict[str, int] | None = None) -> bool | None:
    """Whether the results of `ins` are the same for every value of the 16-bit `slots` of the
    input at operand `position`, every other input held fixed. True: proved (unsat), or the
    slots are a packed component no result selects (`unselected_slots`, without a solver);
    False: a counterexample exists or the opcode has no bit-precise meaning here; None: the
    solver gave up. `input_bits` gives each register input's width in bits (by operand position).
    `observed` narrows a result to the bits of it the program ever reads (a mask by result
    name; a result not named, or with an empty mask, is observed whole)."""
    if slots and input_bits.get(position) == 64 and set(slots) <= unselected_slots(ins, position, observed):
        return True
    import z3

    query = slots_query(ins, position, slots, input_bits, observed)
    if query is None:
        return False
    solver = z3.Solver()
    # The resource limit decides (z3 counts it alike on every machine, so the answer does not
    # depend on the load); the time limit is only a safety net.
    solver.set("rlimit", DISCHARGE_RLIMIT)
    solver.set("timeout", timeout_ms)
    solver.add(*query)
    answer = solver.check()
    if answer == z3.unsat:
        return True
    return None if answer == z3.unknown else False


def slots_query(ins: Instruction, position: int, slots: list[int], input_bits: dict[int, int],
                observed: dict[str, int] | None = None) -> list[Any] | None:
    """The z3 assertions whose unsatisfiability `ignores_slots` proves: two copies of the
    inputs that agree but in `slots` of the input at operand `position`, and some observed
    result that differs. None when the opcode has no bit-precise meaning here (no claim)."""
    import z3

    m = meaning(ins)
    positions = _explicit_inputs(ins)
    if m is None or position not in positions or ins.operands[position].kind != "reg":
        return None
    values_a: list[Any] = []
    values_b: list[Any] = []
    for k, (pos, width) in enumerate(zip(positions, m.widths)):
        op = ins.operands[pos]
        if op.kind == "imm":
            try:
                v = z3.BitVecVal(int(op.text, 0) & ((1 << width) - 1), width)
            except ValueError:
                return None
            values_a.append(v)
            values_b.append(v)
            continue
        bits = input_bits.get(pos)
        if bits is None or bits != width:
            return None  # an operand of another width than the opcode reads: no claim
        a = z3.BitVec(f"in{k}", width)
        if pos != position:
            values_a.append(a)
            values_b.append(a)
            continue
        b = z3.BitVec(f"in{k}_other", width)
        # b agrees with a outside the slots.
        keep = 0
        for s in range(width // 16):
            if s not in slots:
                keep |= 0xFFFF << (16 * s)
        mask = z3.BitVecVal(keep, width)
        values_a.append(a)
        values_b.append((a & mask) | (b & ~mask))
    ra, rb = m.fn(z3, values_a), m.fn(z3, values_b)
    live = _results_live(ins) & set(ra)
    if not live:
        return None
    differs = []
    for name in sorted(live):
        bits = (observed or {}).get(name)
        if not bits:  # not named, or no bit read: the whole result counts
            differs.append(ra[name] != rb[name])
        else:
            read = z3.BitVecVal(bits & ((1 << ra[name].size()) - 1), ra[name].size())
            differs.append(ra[name] & read != rb[name] & read)
    return [z3.Or(differs)]
