"""Bit-precise meanings of common integer opcodes, for the fuzzer's interpreter.

Written from the AMD GPU ISA manuals (the "SOP2", "SOPC", "VOP2", "VOP3" and "VOPC" opcode
descriptions; `D.u = S0.u + S1.u`...), on concrete integers, sharing nothing with the
verifier's `semantics.bitvector`: the interpreter uses these to tell whether a difference
between two runs is real (an OR with -1 ignores its other input) and for the opcodes whose
real value the machine needs (EXEC arithmetic, lane compares, selects).

A meaning takes the values of the instruction's explicit operands after its defs, in order:
registers (the combined value of their 32-bit pieces, low first), immediates (as written,
signed) and, for a VALU lane-mask source, the bit of the lane. It returns the values of the
explicit defs (a VALU carry-out or compare result is the lane's bit) and SCC when the
instruction writes it (scalar meanings) or the `$vcc` bit (VOP2/VOPC forms), else None.

`SCALAR` holds per-wave meanings (SALU), `LANE` per-lane ones (VALU); `ALWAYS` names the
opcodes the interpreter runs by their real meaning in every run, because what the programs
compute with them is control: EXEC and lane-mask arithmetic, lane compares and selects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1

# (inputs, SCC in) -> (explicit def values, SCC out or None)
ScalarMeaning = Callable[[Sequence[int], int], tuple[list[int], int | None]]
# inputs -> (explicit def values, VCC bit or None)
LaneMeaning = Callable[[Sequence[int]], tuple[list[int], int | None]]


def _s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def _s64(x: int) -> int:
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def _signed(x: int, bits: int) -> int:
    return _s32(x) if bits == 32 else _s64(x)


# --------------------------------------------------------------------------------------------
# SALU
# --------------------------------------------------------------------------------------------
_LOGIC: dict[str, Callable[[int, int], int]] = {
    "AND": lambda a, b: a & b,
    "OR": lambda a, b: a | b,
    "XOR": lambda a, b: a ^ b,
    "ANDN2": lambda a, b: a & ~b,
    "ORN2": lambda a, b: a | ~b,
    "NAND": lambda a, b: ~(a & b),
    "NOR": lambda a, b: ~(a | b),
    "XNOR": lambda a, b: ~(a ^ b),
}


def _s_logic(f: Callable[[int, int], int], mask: int) -> ScalarMeaning:
    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        d = f(v[0], v[1]) & mask
        return [d], int(d != 0)
    return m


def _s_shift(kind: str, bits: int) -> ScalarMeaning:
    mask = (1 << bits) - 1

    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        a, n = v[0] & mask, v[1] & (bits - 1)
        d = (a << n) if kind == "shl" else (a >> n) if kind == "lshr" else _signed(a, bits) >> n
        d &= mask
        return [d], int(d != 0)
    return m


def _s_arith(kind: str) -> ScalarMeaning:
    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        a, b = v[0] & M32, v[1] & M32
        if kind == "add_u":
            r = a + b
            return [r & M32], r >> 32
        if kind == "addc_u":
            r = a + b + scc
            return [r & M32], r >> 32
        if kind == "sub_u":
            return [(a - b) & M32], int(b > a)
        if kind == "subb_u":
            return [(a - b - scc) & M32], int(b + scc > a)
        if kind in ("add_i", "sub_i"):
            r = _s32(a) + _s32(b) if kind == "add_i" else _s32(a) - _s32(b)
            return [r & M32], int(r != _s32(r))
        if kind == "mul":
            return [(a * b) & M32], None
        if kind == "mulhi_u":
            return [(a * b) >> 32], None
        if kind == "mulhi_i":
            return [((_s32(a) * _s32(b)) >> 32) & M32], None
        raise AssertionError(kind)
    return m


def _s_minmax(kind: str, signed: bool) -> ScalarMeaning:
    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        a, b = (_s32(v[0]), _s32(v[1])) if signed else (v[0] & M32, v[1] & M32)
        pick = a < b if kind == "min" else a > b
        return [(a if pick else b) & M32], int(pick)
    return m


def _compare(pred: str, a: int, b: int) -> int:
    return int({"EQ": a == b, "NE": a != b, "LG": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b,
                "F": False, "T": True}[pred])


def _s_cmp(pred: str, signed: bool, bits: int) -> ScalarMeaning:
    mask = (1 << bits) - 1

    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        a, b = (_signed(v[0], bits), _signed(v[1], bits)) if signed else (v[0] & mask, v[1] & mask)
        return [], _compare(pred, a, b)
    return m


def _s_bfe(signed: bool, bits: int) -> ScalarMeaning:
    """S_BFE: offset = S1[5:0] (64-bit: [5:0], 32-bit: [4:0]), width = S1[22:16]."""
    mask = (1 << bits) - 1

    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        off, width = v[1] & (bits - 1), (v[1] >> 16) & 0x7F
        d = ((v[0] & mask) >> off) & ((1 << width) - 1) if width else 0
        if signed and width and width < bits and (d >> (width - 1)) & 1:
            d -= 1 << width
        d &= mask
        return [d], int(d != 0)
    return m


def _s_not(mask: int) -> ScalarMeaning:
    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        d = ~v[0] & mask
        return [d], int(d != 0)
    return m


def _s_cselect(mask: int) -> ScalarMeaning:
    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        return [(v[0] if scc else v[1]) & mask], None
    return m


def _s_lshl_add(n: int) -> ScalarMeaning:
    """S_LSHL<n>_ADD_U32: (S0 << n) + S1, SCC the carry out."""
    def m(v: Sequence[int], scc: int) -> tuple[list[int], int | None]:
        r = ((v[0] & M32) << n) + (v[1] & M32)
        return [r & M32], int(r > M32)
    return m


def _scalar_table() -> dict[str, ScalarMeaning]:
    t: dict[str, ScalarMeaning] = {}
    for bits, sfx in ((32, "B32"), (64, "B64")):
        mask = (1 << bits) - 1
        for name, f in _LOGIC.items():
            t[f"S_{name}_{sfx}"] = _s_logic(f, mask)
        t[f"S_NOT_{sfx}"] = _s_not(mask)
        t[f"S_LSHL_{sfx}"] = _s_shift("shl", bits)
        t[f"S_LSHR_{sfx}"] = _s_shift("lshr", bits)
        t[f"S_CSELECT_{sfx}"] = _s_cselect(mask)
    t["S_ASHR_I32"], t["S_ASHR_I64"] = _s_shift("ashr", 32), _s_shift("ashr", 64)
    t["S_ADD_U32"], t["S_ADDC_U32"] = _s_arith("add_u"), _s_arith("addc_u")
    t["S_SUB_U32"], t["S_SUBB_U32"] = _s_arith("sub_u"), _s_arith("subb_u")
    t["S_ADD_I32"], t["S_SUB_I32"] = _s_arith("add_i"), _s_arith("sub_i")
    t["S_MUL_I32"], t["S_MUL_HI_U32"], t["S_MUL_HI_I32"] = _s_arith("mul"), _s_arith("mulhi_u"), _s_arith("mulhi_i")
    for kind in ("min", "max"):
        t[f"S_{kind.upper()}_I32"] = _s_minmax(kind, True)
        t[f"S_{kind.upper()}_U32"] = _s_minmax(kind, False)
    for pred in ("EQ", "LG", "LT", "LE", "GT", "GE"):
        t[f"S_CMP_{pred}_U32"] = _s_cmp(pred, False, 32)
        t[f"S_CMP_{pred}_I32"] = _s_cmp(pred, True, 32)
    t["S_CMP_EQ_U64"], t["S_CMP_LG_U64"] = _s_cmp("EQ", False, 64), _s_cmp("LG", False, 64)
    t["S_BFE_U32"], t["S_BFE_I32"] = _s_bfe(False, 32), _s_bfe(True, 32)
    t["S_BFE_U64"], t["S_BFE_I64"] = _s_bfe(False, 64), _s_bfe(True, 64)
    t["S_ABS_I32"] = lambda v, scc: ([abs(_s32(v[0])) & M32], int(abs(_s32(v[0])) & M32 != 0))
    t["S_SEXT_I32_I8"] = lambda v, scc: ([(v[0] & 0xFF) - ((v[0] & 0x80) << 1) & M32], None)
    t["S_SEXT_I32_I16"] = lambda v, scc: ([(v[0] & 0xFFFF) - ((v[0] & 0x8000) << 1) & M32], None)
    for n in range(1, 5):
        t[f"S_LSHL{n}_ADD_U32"] = _s_lshl_add(n)
    return t


# --------------------------------------------------------------------------------------------
# VALU, one lane
# --------------------------------------------------------------------------------------------
def _clamp_u(r: int, clamp: int) -> int:
    return min(max(r, 0), M32) if clamp else r & M32


def _v_add(kind: str, e64: bool) -> LaneMeaning:
    """V_ADD/SUB/SUBREV_U32 (no carry), the _CO forms (carry out) and ADDC/SUBB/SUBBREV (carry
    in and out). Inputs: (src0, src1[, carry-in bit][, clamp]); the e32 forms' carry-in is
    `$vcc`'s bit, after the sources."""
    has_cin = kind in ("addc", "subb", "subbrev")
    clamp_at = 3 if has_cin else 2

    def m(v: Sequence[int]) -> tuple[list[int], int | None]:
        a, b = v[0] & M32, v[1] & M32
        cin = v[2] & 1 if has_cin else 0
        clamp = v[clamp_at] & 1 if e64 and len(v) > clamp_at else 0
        if kind in ("sub", "sub_co", "subb"):
            r = a - b - cin
        elif kind in ("subrev", "subrev_co", "subbrev"):
            r = b - a - cin
        else:
            r = a + b + cin
        carry = int(r < 0 or r > M32)
        d = _clamp_u(r, clamp)
        if kind in ("add", "sub", "subrev"):
            return [d], None
        return ([d, carry], None) if e64 else ([d], carry)
    return m


def _v_logic(f: Callable[[int, int], int]) -> LaneMeaning:
    return lambda v: ([f(v[0], v[1]) & M32], None)


def _v_shift_rev(kind: str, bits: int) -> LaneMeaning:
    """V_*REV: (amount, value)."""
    mask = (1 << bits) - 1

    def m(v: Sequence[int]) -> tuple[list[int], int | None]:
        n, a = v[0] & (bits - 1), v[1] & mask
        d = (a << n) if kind == "shl" else (a >> n) if kind == "lshr" else _signed(a, bits) >> n
        return [d & mask], None
    return m


def _v_ternary(f: Callable[[int, int, int], int]) -> LaneMeaning:
    return lambda v: ([f(v[0] & M32, v[1] & M32, v[2] & M32) & M32], None)


def _v_minmax(kind: str, signed: bool) -> LaneMeaning:
    def m(v: Sequence[int]) -> tuple[list[int], int | None]:
        a, b = (_s32(v[0]), _s32(v[1])) if signed else (v[0] & M32, v[1] & M32)
        return [(min(a, b) if kind == "min" else max(a, b)) & M32], None
    return m


def _v_bfe(signed: bool) -> LaneMeaning:
    def m(v: Sequence[int]) -> tuple[list[int], int | None]:
        off, width = v[1] & 31, v[2] & 31
        d = ((v[0] & M32) >> off) & ((1 << width) - 1) if width else 0
        if signed and width and (d >> (width - 1)) & 1:
            d -= 1 << width
        return [d & M32], None
    return m


def _v_cmp(pred: str, signed: bool, bits: int, e32: bool) -> LaneMeaning:
    mask = (1 << bits) - 1

    def m(v: Sequence[int]) -> tuple[list[int], int | None]:
        a, b = (_signed(v[0], bits), _signed(v[1], bits)) if signed else (v[0] & mask, v[1] & mask)
        bit = _compare(pred, a, b)
        return ([], bit) if e32 else ([bit], None)
    return m


def _source_mods(mods: int, x: int) -> int:
    """SISrcMods on a 32-bit source: ABS (2) clears the sign bit, then NEG (1) flips it."""
    if mods & 2:
        x &= 0x7FFFFFFF
    if mods & 1:
        x ^= 0x80000000
    return x


def _lane_table() -> dict[str, LaneMeaning]:
    t: dict[str, LaneMeaning] = {}
    for name, kind in (("ADD", "add"), ("SUB", "sub"), ("SUBREV", "subrev")):
        t[f"V_{name}_U32_e32"], t[f"V_{name}_U32_e64"] = _v_add(kind, False), _v_add(kind, True)
        t[f"V_{name}_CO_U32_e32"], t[f"V_{name}_CO_U32_e64"] = _v_add(kind + "_co", False), _v_add(kind + "_co", True)
        # gfx6-8 name the carry-out forms V_ADD_I32/V_SUB_I32/V_SUBREV_I32.
        t[f"V_{name}_I32_e32"], t[f"V_{name}_I32_e64"] = _v_add(kind + "_co", False), _v_add(kind + "_co", True)
    for name, kind in (("ADDC", "addc"), ("SUBB", "subb"), ("SUBBREV", "subbrev")):
        t[f"V_{name}_U32_e32"], t[f"V_{name}_U32_e64"] = _v_add(kind, False), _v_add(kind, True)
        t[f"V_{name}_CO_U32_e32"], t[f"V_{name}_CO_U32_e64"] = _v_add(kind, False), _v_add(kind, True)
    for name, f in (("AND", _LOGIC["AND"]), ("OR", _LOGIC["OR"]), ("XOR", _LOGIC["XOR"]), ("XNOR", _LOGIC["XNOR"])):
        t[f"V_{name}_B32_e32"] = t[f"V_{name}_B32_e64"] = _v_logic(f)
    t["V_NOT_B32_e32"] = t["V_NOT_B32_e64"] = lambda v: ([~v[0] & M32], None)
    for kind, name in (("shl", "LSHLREV"), ("lshr", "LSHRREV"), ("ashr", "ASHRREV")):
        suffix = "I32" if kind == "ashr" else "B32"
        t[f"V_{name}_{suffix}_e32"] = t[f"V_{name}_{suffix}_e64"] = _v_shift_rev(kind, 32)
        t[f"V_{name}_{'I64' if kind == 'ashr' else 'B64'}_e64"] = _v_shift_rev(kind, 64)
    t["V_LSHLREV_B64_pseudo_e64"] = _v_shift_rev("shl", 64)
    rev = _v_shift_rev("shl", 64)
    t["V_LSHL_B64_e64"] = lambda v: rev([v[1], v[0]])  # gfx6/7: (value, amount)
    t["V_MUL_LO_U32_e64"] = lambda v: ([(v[0] * v[1]) & M32], None)
    t["V_MUL_HI_U32_e64"] = lambda v: ([((v[0] & M32) * (v[1] & M32)) >> 32], None)
    t["V_MUL_HI_I32_e64"] = lambda v: ([((_s32(v[0]) * _s32(v[1])) >> 32) & M32], None)
    t["V_MUL_U32_U24_e32"] = t["V_MUL_U32_U24_e64"] = lambda v: ([((v[0] & 0xFFFFFF) * (v[1] & 0xFFFFFF)) & M32], None)
    t["V_MUL_HI_U32_U24_e32"] = t["V_MUL_HI_U32_U24_e64"] = \
        lambda v: ([((v[0] & 0xFFFFFF) * (v[1] & 0xFFFFFF)) >> 32], None)
    t["V_MAD_U32_U24_e64"] = lambda v: ([_clamp_u((v[0] & 0xFFFFFF) * (v[1] & 0xFFFFFF) + (v[2] & M32),
                                                   v[3] & 1 if len(v) > 3 else 0)], None)
    for kind in ("min", "max"):
        for sign, signed in (("I32", True), ("U32", False)):
            t[f"V_{kind.upper()}_{sign}_e32"] = t[f"V_{kind.upper()}_{sign}_e64"] = _v_minmax(kind, signed)
    t["V_ADD3_U32_e64"] = _v_ternary(lambda a, b, c: a + b + c)
    t["V_LSHL_OR_B32_e64"] = _v_ternary(lambda a, b, c: (a << (b & 31)) | c)
    t["V_AND_OR_B32_e64"] = _v_ternary(lambda a, b, c: (a & b) | c)
    t["V_OR3_B32_e64"] = _v_ternary(lambda a, b, c: a | b | c)
    t["V_XOR3_B32_e64"] = _v_ternary(lambda a, b, c: a ^ b ^ c)
    t["V_XAD_U32_e64"] = _v_ternary(lambda a, b, c: (a ^ b) + c)
    t["V_LSHL_ADD_U32_e64"] = _v_ternary(lambda a, b, c: (a << (b & 31)) + c)
    t["V_ADD_LSHL_U32_e64"] = _v_ternary(lambda a, b, c: (a + b) << (c & 31))
    t["V_BFI_B32_e64"] = _v_ternary(lambda a, b, c: (a & b) | (~a & c))
    t["V_ALIGNBIT_B32_e64"] = _v_ternary(lambda a, b, c: ((a << 32) | b) >> (c & 31))
    t["V_BFE_U32_e64"], t["V_BFE_I32_e64"] = _v_bfe(False), _v_bfe(True)
    t["V_MOV_B32_e32"] = t["V_MOV_B32_e64"] = lambda v: ([v[0] & M32], None)
    t["V_CNDMASK_B32_e32"] = lambda v: ([(v[1] if v[2] else v[0]) & M32], None)  # (src0, src1, vcc bit)
    t["V_CNDMASK_B32_e64"] = lambda v: ([(_source_mods(v[2], v[3]) if v[4] else _source_mods(v[0], v[1])) & M32], None)
    for pred in ("EQ", "NE", "LT", "LE", "GT", "GE", "F", "T"):
        for sign, signed, bits in (("U32", False, 32), ("I32", True, 32), ("U64", False, 64), ("I64", True, 64),
                                   ("U16", False, 16), ("I16", True, 16)):
            for cmp in ("V_CMP", "V_CMPX"):
                t[f"{cmp}_{pred}_{sign}_e32"] = _v_cmp(pred, signed, bits, e32=True)
                t[f"{cmp}_{pred}_{sign}_e64"] = _v_cmp(pred, signed, bits, e32=False)
    return t


SCALAR: dict[str, ScalarMeaning] = _scalar_table()
LANE: dict[str, LaneMeaning] = _lane_table()

# Run by their real meaning in every run: what EXEC and lane masks are made of, lane compares
# (a waterfall loop ends when the lanes equal to the first one are done) and selects.
ALWAYS = frozenset({
    *(f"S_{name}_{sfx}" for name in _LOGIC for sfx in ("B32", "B64")), "S_NOT_B32", "S_NOT_B64",
    *(op for op in LANE if op.startswith(("V_CMP_", "V_CMPX_"))), "V_CNDMASK_B32_e32", "V_CNDMASK_B32_e64",
})
