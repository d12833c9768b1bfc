"""The ties an opcode's definition implies without MIR printing them.

LLVM's TableGen gives some instructions a constraint `$vdst = $vdst_in` (the def and that use
must be one register: the instruction writes part of it and keeps the rest, or accumulates in
it); the MIR printer writes `(tied-def N)` only where a tie differs from the definition's. Each
rule below names opcodes by a pattern and the (def, use) positions it ties, counted over the
explicit operands (defs first, then the uses with the modifier immediates of `_e64`, DPP and
SDWA forms). The first matching rule decides; a rule with no ties shields opcodes from a broader
one after it. Sources (llvm/lib/Target/AMDGPU/): Target.td (INSERT_SUBREG), SOPInstructions.td,
SMInstructions.td, SIInstructions.td, DSInstructions.td, FLATInstructions.td, BUFInstructions.td,
MIMGInstructions.td, VOP1/VOP2/VOP3/VOP3P/VOPInstructions.td.

Real (encoded) instructions (`V_FMAC_F32_e32_gfx10`, `BUFFER_LOAD_DWORD_OFFSET_vi`, ...) are
made by the asm printer; MIR around register allocation has their pseudos, whose ties differ.
`encoded` names them and the checker refuses them, except the families whose encoded names are
the opcodes MIR uses: MIMG (`IMAGE_*`), DS without M0 (`DS_*_gfx9`) and the CI scalar loads
(`S_*_ci`). `tests/test_certcheck_ties.py` compares these rules with llc's own ties.
"""

from __future__ import annotations

import functools
import re

_ENCODED = re.compile(r"_(?:gfx[0-9]+[a-z0-9]*|vi|si|ci)(?:_format)?$")
_MIR_ENCODED = re.compile(r"IMAGE_\w+|DS_\w+_gfx9|S_\w+_ci")

# The accumulating VALU operations (VOP2 `VOP_MAC`, `VOP_DOT_ACC`): `$vdst = $src2`.
_ACC = r"V_(?:F?MAC_F(?:16|32|64)(?:_t16|_fake16)?|F?MAC_LEGACY_F32|DOT2C_F32_[BF]{1,2}16|DOT2C_I32_I16|DOT4C_I32_I8" \
       r"|DOT8C_I32_I4)"
_D16 = r"(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?"
_DPP = r"_dpp8?(?:_w32|_w64)?"

RULES: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    # generic: INSERT_SUBREG $dst = $supersrc; ARITH_FENCE $dst = $src
    (r"INSERT_SUBREG|ARITH_FENCE", ((0, 1),)),
    # scalar: S_ADDK/S_MULK read $sdst; S_BITSET keeps the other bits; S_FMAC accumulates;
    # the returning scalar atomics give back the old value in $sdata
    (r"S_(?:ADDK|MULK)_I32", ((0, 1),)),
    (r"S_BITSET[01]_B(?:32|64)", ((0, 2),)),
    (r"S_FMAC_F(?:16|32)", ((0, 3),)),
    (r"S_(?:BUFFER_)?ATOMIC_\w+_RTN", ((0, 1),)),
    # pseudos: the SGPR lane spill keeps the other lanes; indirect writes keep the other elements
    (r"SI_SPILL_S32_TO_VGPR|V_WRITELANE_B32", ((0, 3),)),
    (r"SI_INDIRECT_DST_V[0-9]+|[SV]_INDIRECT_REG_WRITE_(?:MOVREL|GPR_IDX)_B(?:32|64)_V[0-9]+|V_MOV_B64_DPP_PSEUDO",
     ((0, 1),)),
    # 16-bit loads into one half of a register keep the other half
    (r"DS_READ_(?:I8|U8|U16)_D16(?:_HI)?", ((0, 4),)),
    (r"DS_BVH_STACK_(?:PUSH8_POP[12]_)?RTN_B(?:32|64)", ((1, 2),)),
    (rf"(?:FLAT|GLOBAL)_LOAD_{_D16}_SADDR|SCRATCH_LOAD_{_D16}_SVS", ((0, 5),)),
    (rf"(?:FLAT|GLOBAL|SCRATCH)_LOAD_{_D16}(?:_SADDR)?", ((0, 4),)),
    (rf"SCRATCH_LOAD_{_D16}_ST", ((0, 3),)),
    (rf"BUFFER_LOAD_{_D16}(?:_TFE)?(?:_VBUFFER)?_OFFSET(?:_exact)?", ((0, 6),)),
    (rf"BUFFER_LOAD_{_D16}(?:_TFE)?(?:_VBUFFER)?_(?:OFFEN|IDXEN|BOTHEN|ADDR64)(?:_exact)?", ((0, 7),)),
    # returning atomics: the old value comes back in the data register
    (r"BUFFER_ATOMIC_\w+_RTN(?:_exact)?", ((0, 1),)),
    (r"IMAGE_ATOMIC_\w+_NORTN_\w+", ()),
    (r"IMAGE_ATOMIC_\w+", ((0, 1),)),
    (r"IMAGE_BVH(?:8|_DUAL)_INTERSECT_RAY_\w+", ((1, 5), (2, 6))),
    # accumulators: `$vdst = $src2` at the position each form puts $src2
    (_ACC + "_e32", ((0, 3),)),
    (_ACC + "_e64", ((0, 6),)),
    (_ACC + "_sdwa", ((0, 5),)),
    (_ACC + "_e64" + _DPP, ((0, 7),)),
    (rf"(?:{_ACC}|V_DOT2ACC_F32_F16){_DPP}", ((0, 5),)),
    (r"V_MFMA_\w+_mac(?:_vgprcd)?_e64", ((0, 3),)),
    (r"V_SMFMAC_\w+_e64", ((0, 6),)),
    (r"V_WMMA_(?:F16|BF16|F32)_16X16X(?:16|32)_(?:F16|BF16)(?:_TIED)?_(?:twoaddr_w(?:32|64)|w(?:32|64)_twoaddr)"
     r"|V_WMMA_F32_16X16X4_F32_w32_twoaddr|V_WMMA_I32_16X16X16_IU[48]_twoaddr_w(?:32|64)", ((0, 6),)),
    (r"V_WMMA_I32_16X16X(?:16|32|64)_IU[48]_w(?:32|64)_twoaddr", ((0, 5),)),
    (r"V_WMMA_(?:F16|F32)_16X16X(?:16|64|128)_[BF][FP]8_[BF][FP]8_w(?:32|64)_twoaddr"
     r"|V_WMMA_(?:SCALE16_|SCALE_)?F32_(?:16X16X128_F8F6F4_f[468]_f[468]|32X16X128_F4)_w32_twoaddr", ((0, 4),)),
    (r"V_SWMMAC_(?:F16|F32)_16X16X(?:32|128)_[BF][FP]8_[BF][FP]8_w(?:32|64)_twoaddr", ((0, 3),)),
    (r"V_SWMMAC_\w+_w(?:32|64)_twoaddr", ((0, 5),)),
    # VALU writing part of $vdst (`$vdst = $vdst_in`), swaps, interpolation
    (r"V_PERMLANEX?16_B32_e64", ((0, 7),)),
    (r"V_PERMLANEX?16_VAR_B32_e64", ((0, 5),)),
    (r"V_PERMLANE(?:16|32)_SWAP_B32_e(?:32|64)", ((0, 2), (1, 3))),
    (r"V_SWAP(?:REL)?_B32|V_SWAP_B16", ((0, 3), (1, 2))),
    (r"V_INTERP_P2_F32", ((0, 1),)),
    (r"V_(?:FMA|MAD)_MIX(?:LO|HI)_(?:F16|BF16)", ((0, 8),)),
    (r"V_(?:FMA|MAD)_MIX(?:LO|HI)_(?:F16|BF16)_dpp", ((0, 9),)),
    # FP8/BF8 conversions writing one byte or half of $vdst
    (r"V_CVT_PK_[BF][FP]8_F32(?:_t16|_fake16)?_e64|V_CVT_SR_[BF][FP]8_F16(?:_t16|_fake16)?_e64"
     r"|V_CVT_SR_[BF][FP]8_F32_gfx12_e64|V_CVT_SR_(?:BF16|F16)_F32_e64"
     r"|V_CVT_SCALEF32_(?:F16_[BF][FP]8|PK_[BF][FP]8_(?:BF16|F16))_e64", ((0, 5),)),
    (r"V_CVT_PK_[BF][FP]8_F32(?:_t16|_fake16)?_e64_dpp|V_CVT_SR_[BF][FP]8_F16(?:_t16|_fake16)?_e64_dpp"
     r"|V_CVT_SR_[BF][FP]8_F32_gfx12_e64_dpp|V_CVT_PK_FP8_F32_gfx1250(?:_t16|_fake16)?_e64"
     r"|V_CVT_SR_[BF][FP]8_F32_e64|V_CVT_SR_FP8_F32_gfx1250_e64|V_CVT_SCALEF32_PK_FP4_(?:BF16|F16)_e64", ((0, 6),)),
    (r"V_CVT_PK_FP8_F32_gfx1250(?:_t16|_fake16)?_e64_dpp|V_CVT_SR_[BF][FP]8_F32_e64_dpp"
     r"|V_CVT_SR_FP8_F32_gfx1250_e64_dpp"
     r"|V_CVT_SCALEF32_(?:PK_(?:BF8|FP8|FP4)_F32|SR_[BF][FP]8_(?:BF16|F16|F32))_e64", ((0, 7),)),
    # DPP: the lanes DPP does not write keep `$old`, the first use; after a carry-out def it is
    # the second. Compares, V_NOP and the F32 mixed FMAs have no `$old`.
    (r"V_CMP\w*" + _DPP + r"|V_NOP" + _DPP + r"|V_(?:FMA_MIX_F32(?:_BF16)?|MAD_MIX_F32)" + _DPP, ()),
    (r"V_(?:(?:ADD|SUB|SUBREV)_CO(?:_CI)?_U32|ADDC_U32|SUBB_U32|SUBBREV_U32|DIV_SCALE_F(?:32|64)"
     r"|MAD(?:_CO)?_[IU]64_[IU]32)_e64" + _DPP, ((0, 2),)),
    (r"V_\w+" + _DPP, ((0, 1),)),
)
_COMPILED = tuple((re.compile(p), ties) for p, ties in RULES)


def encoded(opcode: str) -> bool:
    """A real (encoded) instruction, which MIR before the asm printer does not have."""
    return bool(_ENCODED.search(opcode)) and not _MIR_ENCODED.fullmatch(opcode)


@functools.lru_cache(maxsize=None)
def implied(opcode: str) -> tuple[tuple[int, int], ...]:
    """(def, use) explicit-operand positions the definition of `opcode` ties."""
    return next((ties for p, ties in _COMPILED if p.fullmatch(opcode)), ())
