"""Facts about opcodes: the ties an instruction's definition implies.

LLVM's TableGen gives some instructions a constraint `Constraints = "$vdst = $vdst_in"`: the
def and that use must be one register. The MIR printer leaves such a tie out of the text
(`(tied-def N)` is written only where the ties differ from the definition's), and llc's MIR
parser puts it back from the instruction description (`MachineInstr::addOperand` ties every
explicit register use whose operand has a `TIED_TO` constraint). So a reader of MIR that wants
every tie llc sees needs the table below.

Each entry maps opcode names (a pattern where LLVM's naming is systematic) to the (def, use)
operand positions it ties, in MIR operand order: explicit defs first, then explicit uses, the
modifier immediates of `_e64`/VOP3 forms counted (so each form has its own positions). Each
names the LLVM source it comes from. The first entry that matches decides; an entry with no
ties stands in front of a broader pattern for the opcodes it must not catch. An opcode no entry
matches has no implied tie.

What the table covers: every opcode LLVM 19 and 22 define for AMDGPU as it can occur in MIR
before code emission, i.e. the pseudo instructions, and the MIMG (`IMAGE_*`) opcodes, which are
encoded ones; the encoded DS, SMEM, SALU and buffer opcodes too, which keep their pseudo's ties.
The other encoded opcodes (`V_FMAC_F32_e32_gfx10`, `V_ADD_F32_dpp_gfx11`, `GLOBAL_LOAD_SHORT_D16_vi`,
...) do not occur in MIR before the asm printer, and their ties often differ from their
pseudo's: the table leaves them out (no tie), and never gives one a tie llc does not give it.
`tests/test_ties.py` checks all this against llc's own ties: for every opcode of the repository's
MIR files and the corpus (llc-15, 16, 19 and 22), and for every opcode name llc-19 and llc-22
know (about 46,000, 8,100 of them tied).

The table is version independent: no opcode that LLVM 19 and 22 both define has different ties
in the two, and LLVM 15 and 16 agree on every opcode the repository's files use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ImpliedTie:
    """One tie of an instruction's definition: explicit operand `use` must be in the register
    of explicit operand `def_` (MIR positions, defs first); `constraint` is the TableGen text."""

    def_: int
    use: int
    constraint: str


@dataclass(frozen=True)
class _Entry:
    pattern: re.Pattern[str]
    ties: tuple[ImpliedTie, ...]


def _ties(*pairs: tuple[int, int, str]) -> tuple[ImpliedTie, ...]:
    return tuple(ImpliedTie(d, u, c) for d, u, c in pairs)


# An optional real-encoding suffix, for the families whose encoded opcodes keep their pseudo's
# operands and ties (`_vi`, `_gfx10`, `_gfx6_gfx7`, `_gfx90a`, `_nsa_gfx10` for MIMG, ...).
_ENC = r"(?:_(?:nsa_)?(?:gfx\d\w*|vi|si|ci))?"
# The forms of one VALU operation (VOPInstructions.td), and the operations LLVM names as
# accumulating into their own def (VOP2Instructions.td `VOP_MAC`, `VOP_DOT_ACC` profiles).
_MAC = (r"(?:F?MAC_F(?:16|32|64)(?:_t16|_fake16)?|F?MAC_LEGACY_F32"
        r"|DOT2C_F32_(?:F16|BF16)|DOT2C_I32_I16|DOT4C_I32_I8|DOT8C_I32_I4)")
_DPP = r"dpp8?(?:_w32|_w64)?"

_V_SRC2 = "$vdst = $src2"
_VDST_IN = "$vdst = $vdst_in"
_OLD = "$old = $vdst"

# (pattern, ties). Positions were read off llc (`tests/test_ties.py` shows how).
_TABLE: tuple[tuple[str, tuple[ImpliedTie, ...]], ...] = (
    # --- Target-independent (llvm/include/llvm/Target/Target.td) ------------------------------
    ("INSERT_SUBREG", _ties((0, 1, "$supersrc = $dst"))),
    ("ARITH_FENCE", _ties((0, 1, "$src = $dst"))),
    # --- SALU (SOPInstructions.td) --------------------------------------------------------------
    # SOPK_32TIE: `S_ADDK_I32`, `S_MULK_I32` read and write $sdst. `S_CMOVK_I32`, `S_CMOV_B32`
    # and `S_CMOV_B64` keep $sdst when SCC is clear, but their definitions tie nothing (llc
    # prints no tie for them, nor for `V_SET_INACTIVE_B32/B64`, from LLVM 15 to 22).
    ("S_(?:ADDK|MULK)_I32" + _ENC, _ties((0, 1, "$sdst = $src0"))),
    # SOP1_32/SOP1_64 with tied_in: the bit set or cleared in the rest of $sdst.
    ("S_BITSET[01]_B(?:32|64)", _ties((0, 2, "$sdst = $sdst_in"))),
    # SOP2 `S_FMAC_F32`/`S_FMAC_F16` (gfx11.5+).
    ("S_FMAC_F(?:16|32)" + _ENC, _ties((0, 3, "$sdst = $src2"))),
    # SMInstructions.td, SM_Atomic_Pseudo with isRet: the returning scalar atomics.
    ("S_(?:BUFFER_)?ATOMIC_\\w+_RTN(?:_alt)?" + _ENC, _ties((0, 1, "$sdst = $sdata"))),
    # --- Pseudo instructions (SIInstructions.td) -------------------------------------------------
    # The SGPR spill to a VGPR lane (writes one lane, keeps the others).
    ("SI_SPILL_S32_TO_VGPR", _ties((0, 3, _VDST_IN))),
    # SI_INDIRECT_DST_V*: a register tuple with one element replaced.
    ("SI_INDIRECT_DST_V\\d+", _ties((0, 1, "$src = $vdst"))),
    # IndirectRegWriteMovRelPseudo / VGPRIndirectRegWriteGPRIdxPseudo, the same for
    # indirect writes through M0 or GPR indexing.
    ("[SV]_INDIRECT_REG_WRITE_MOVREL_B(?:32|64)_V\\d+", _ties((0, 1, "$vsrc = $vdst"))),
    ("V_INDIRECT_REG_WRITE_GPR_IDX_B32_V\\d+", _ties((0, 1, "$vsrc = $vdst"))),
    # The 64-bit DPP move (expanded after RA), a VOP_DPP_Pseudo with `$old`.
    ("V_MOV_B64_DPP_PSEUDO", _ties((0, 1, _OLD))),
    # --- Memory: loads of 16 bits into one half of a register keep the other half ----------------
    # DSInstructions.td DS_1A_RET_Tied (`_gfx9`: the forms without M0).
    ("DS_READ_(?:I8|U8|U16)_D16(?:_HI)?" + _ENC, _ties((0, 4, _VDST_IN))),
    # DSInstructions.td, the BVH stack operations update the stack address in place.
    ("DS_BVH_STACK_(?:PUSH8_POP[12]_)?RTN_B(?:32|64)" + _ENC, _ties((1, 2, "$addr = $addr_in"))),
    # FLATInstructions.td FLAT_Load_Pseudo with HasTiedOutput; the `_SADDR` forms have one more
    # address operand, the scratch `_ST` forms one fewer, `_SVS` both a VGPR and an SGPR.
    ("(?:FLAT|GLOBAL)_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?_SADDR", _ties((0, 5, _VDST_IN))),
    ("(?:FLAT|GLOBAL)_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?", _ties((0, 4, _VDST_IN))),
    ("SCRATCH_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?_ST", _ties((0, 3, _VDST_IN))),
    ("SCRATCH_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?_SVS", _ties((0, 5, _VDST_IN))),
    ("SCRATCH_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?(?:_SADDR)?", _ties((0, 4, _VDST_IN))),
    # BUFInstructions.td MUBUF_Load_Pseudo with HasTiedDest: `_OFFSET` has no VGPR address.
    ("BUFFER_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?(?:_TFE)?(?:_VBUFFER)?_OFFSET(?:_exact)?" + _ENC,
     _ties((0, 6, "$vdata = $vdata_in"))),
    ("BUFFER_LOAD_(?:SBYTE|UBYTE|SHORT)_D16(?:_HI)?(?:_TFE)?(?:_VBUFFER)?_(?:OFFEN|IDXEN|BOTHEN|ADDR64)(?:_exact)?"
     + _ENC, _ties((0, 7, "$vdata = $vdata_in"))),
    # BUFInstructions.td MUBUF_AtomicRet_Pseudo: the returning buffer atomics.
    ("BUFFER_ATOMIC_\\w+_RTN" + _ENC, _ties((0, 1, "$vdata = $vdata_in"))),
    # MIMGInstructions.td: image atomics that return (the `_NORTN` forms do not), and the BVH
    # ray queries that update the ray in place (gfx12).
    ("IMAGE_ATOMIC_\\w+_NORTN_\\w+", ()),
    ("IMAGE_ATOMIC_\\w+", _ties((0, 1, "$vdst = $vdata"))),
    ("IMAGE_BVH(?:8|_DUAL)_INTERSECT_RAY" + _ENC,
     _ties((1, 5, "$ray_origin_out = $ray_origin"), (2, 6, "$ray_dir_out = $ray_dir"))),
    # --- VALU accumulators: VOP2Instructions.td `VOP_MAC`/`VOP_DOT_ACC` (`V_MAC_*`, `V_FMAC_*`,
    # `V_DOT*C_*`), `Constraints = "$vdst = $src2"`; DPP forms tie $src2 instead of $old
    # (VOPProfile TieRegDPP). `V_PK_FMAC_F16` has two sources in LLVM and no tie.
    ("V_" + _MAC + "_e32", _ties((0, 3, _V_SRC2))),
    ("V_" + _MAC + "_e64", _ties((0, 6, _V_SRC2))),
    ("V_" + _MAC + "_sdwa", _ties((0, 5, _V_SRC2))),
    ("V_" + _MAC + "_e64_" + _DPP, _ties((0, 7, _V_SRC2))),
    ("V_(?:" + _MAC + "|DOT2ACC_F32_F16)_" + _DPP, _ties((0, 5, _V_SRC2))),
    # VOP3PInstructions.td MAIInst: the `_mac` forms of MFMAs accumulate in place.
    ("V_MFMA_\\w+_mac(?:_vgprcd)?_e64", _ties((0, 3, _V_SRC2))),
    # VOP3PInstructions.td SMFMACInst (gfx940+): the accumulator is the last source.
    ("V_SMFMAC_\\w+_e64", _ties((0, 6, _V_SRC2))),
    # VOP3PInstructions.td WMMA `_twoaddr` pseudos (gfx11+; `_threeaddr` untied). Which
    # sources have modifiers, and so where $src2 stands, depends on the input type.
    ("V_WMMA_(?:F16|BF16|F32)_16X16X(?:16|32)_(?:F16|BF16)(?:_TIED)?_(?:twoaddr_w(?:32|64)|w(?:32|64)_twoaddr)",
     _ties((0, 6, _V_SRC2))),
    ("V_WMMA_F32_16X16X4_F32_w32_twoaddr", _ties((0, 6, _V_SRC2))),
    ("V_WMMA_I32_16X16X16_IU[48]_twoaddr_w(?:32|64)", _ties((0, 6, _V_SRC2))),  # gfx11: with src2_modifiers
    ("V_WMMA_I32_16X16X(?:16|32|64)_IU[48]_w(?:32|64)_twoaddr", _ties((0, 5, _V_SRC2))),  # gfx12+
    ("V_WMMA_(?:F16|F32)_16X16X(?:16|64|128)_[BF][FP]8_[BF][FP]8_w(?:32|64)_twoaddr", _ties((0, 4, _V_SRC2))),
    ("V_WMMA_(?:SCALE16_|SCALE_)?F32_(?:16X16X128_F8F6F4_f[468]_f[468]|32X16X128_F4)_w32_twoaddr",
     _ties((0, 4, _V_SRC2))),
    # SWMMAC (sparse WMMA, gfx12+): the accumulator `$srcTiedDef` follows the two sources.
    ("V_SWMMAC_(?:F16|F32)_16X16X(?:32|128)_[BF][FP]8_[BF][FP]8_w(?:32|64)_twoaddr",
     _ties((0, 3, "$vdst = $srcTiedDef"))),
    ("V_SWMMAC_\\w+_w(?:32|64)_twoaddr", _ties((0, 5, "$vdst = $srcTiedDef"))),
    # --- VALU with a `$vdst_in` (the lanes or halves the instruction does not write) ---------------
    # VOP2Instructions.td V_WRITELANE_B32.
    ("V_WRITELANE_B32", _ties((0, 3, _VDST_IN))),
    # VOP3Instructions.td V_PERMLANE16_B32/V_PERMLANEX16_B32 (gfx10+), the `_VAR` forms (gfx12).
    ("V_PERMLANEX?16_B32_e64", _ties((0, 7, _VDST_IN))),
    ("V_PERMLANEX?16_VAR_B32_e64", _ties((0, 5, _VDST_IN))),
    # VOP1Instructions.td V_PERMLANE16_SWAP_B32/V_PERMLANE32_SWAP_B32 (gfx950): two results, each
    # tied to one source.
    ("V_PERMLANE(?:16|32)_SWAP_B32_e(?:32|64)", _ties((0, 2, _VDST_IN), (1, 3, "$src0_out = $src0_in"))),
    # VOP1Instructions.td V_SWAP_B32 (gfx9+), V_SWAP_B16 (gfx11+), V_SWAPREL_B32 (gfx10+).
    ("V_SWAP(?:REL)?_B32|V_SWAP_B16", _ties((1, 2, "$vdst1 = $src0"), (0, 3, "$vdst = $src1"))),
    # VINTRP V_INTERP_P2_F32 accumulates into $vdst.
    ("V_INTERP_P2_F32", _ties((0, 1, "$src0 = $vdst"))),
    # VOP3PInstructions.td: the mixed-precision FMAs that write one half of $vdst.
    ("V_(?:FMA|MAD)_MIX(?:LO|HI)_(?:F16|BF16)", _ties((0, 8, _VDST_IN))),
    ("V_(?:FMA|MAD)_MIX(?:LO|HI)_(?:F16|BF16)_dpp", _ties((0, 9, _VDST_IN))),
    # VOP3Instructions.td: the FP8/BF8 conversions that write one part of $vdst (gfx940+,
    # gfx950 `SCALEF32`, gfx12, gfx1250 forms: the sources before $vdst_in differ).
    ("V_CVT_PK_[BF][FP]8_F32(?:_t16|_fake16)?_e64", _ties((0, 5, _VDST_IN))),
    ("V_CVT_PK_[BF][FP]8_F32(?:_t16|_fake16)?_e64_dpp", _ties((0, 6, _VDST_IN))),
    ("V_CVT_PK_FP8_F32_gfx1250(?:_t16|_fake16)?_e64", _ties((0, 6, _VDST_IN))),
    ("V_CVT_PK_FP8_F32_gfx1250(?:_t16|_fake16)?_e64_dpp", _ties((0, 7, _VDST_IN))),
    ("V_CVT_SR_[BF][FP]8_F32_e64", _ties((0, 6, _VDST_IN))),
    ("V_CVT_SR_[BF][FP]8_F32_e64_dpp", _ties((0, 7, _VDST_IN))),
    ("V_CVT_SR_[BF][FP]8_F32_gfx12_e64", _ties((0, 5, _VDST_IN))),
    ("V_CVT_SR_[BF][FP]8_F32_gfx12_e64_dpp", _ties((0, 6, _VDST_IN))),
    ("V_CVT_SR_FP8_F32_gfx1250_e64", _ties((0, 6, _VDST_IN))),
    ("V_CVT_SR_FP8_F32_gfx1250_e64_dpp", _ties((0, 7, _VDST_IN))),
    ("V_CVT_SR_[BF][FP]8_F16(?:_t16|_fake16)?_e64", _ties((0, 5, _VDST_IN))),
    ("V_CVT_SR_[BF][FP]8_F16(?:_t16|_fake16)?_e64_dpp", _ties((0, 6, _VDST_IN))),
    ("V_CVT_SR_(?:BF16|F16)_F32_e64", _ties((0, 5, _VDST_IN))),
    ("V_CVT_SCALEF32_(?:F16_[BF][FP]8|PK_[BF][FP]8_(?:BF16|F16))_e64", _ties((0, 5, _VDST_IN))),
    ("V_CVT_SCALEF32_PK_FP4_(?:BF16|F16)_e64", _ties((0, 6, _VDST_IN))),
    ("V_CVT_SCALEF32_(?:PK_(?:BF8|FP8|FP4)_F32|SR_[BF][FP]8_(?:BF16|F16|F32))_e64", _ties((0, 7, _VDST_IN))),
    # --- DPP: VOPInstructions.td VOP_DPP_Pseudo/VOP_DPP8_Base, `Constraints = TieRegDPP # " =
    # $vdst"` for every form with a source: the lanes DPP does not write keep `$old`, the first
    # source after the defs. VOPC (no `$old`), V_NOP and the F32 mixed-precision FMAs have none.
    ("V_CMP\\w*_" + _DPP, ()),
    ("V_NOP_" + _DPP, ()),
    ("V_(?:FMA_MIX_F32(?:_BF16)?|MAD_MIX_F32)_" + _DPP, ()),
    # The VOP3 forms with a carry-out (or VCC) second def have `$old` after it.
    ("V_(?:ADD|SUB|SUBREV)_CO(?:_CI)?_U32_e64_" + _DPP, _ties((0, 2, _OLD))),
    ("V_(?:ADDC|SUBB|SUBBREV)_U32_e64_" + _DPP, _ties((0, 2, _OLD))),
    ("V_(?:DIV_SCALE_F(?:32|64)|MAD(?:_CO)?_[IU]64_[IU]32)_e64_" + _DPP, _ties((0, 2, _OLD))),
    ("V_\\w+_" + _DPP, _ties((0, 1, _OLD))),
)


class _Instruction(Protocol):
    """What `implied_ties` reads of a `verilocc.mir.model.Instruction` (the target layer sits
    below `mir` and does not import it)."""

    @property
    def opcode(self) -> str: ...


def _entries() -> tuple[_Entry, ...]:
    """The table compiled, checked as it loads: a def comes before the use it is tied to (defs
    are first), and no def or use is in two ties of one entry."""
    out = []
    for pattern, ties in _TABLE:
        defs, uses = [t.def_ for t in ties], [t.use for t in ties]
        if any(t.def_ < 0 or t.use <= t.def_ for t in ties) or len(set(defs)) < len(defs) or len(set(uses)) < len(uses):
            raise ValueError(f"verilocc.target.opcodes: malformed ties for {pattern!r}: {ties}")
        out.append(_Entry(re.compile(pattern), ties))
    return tuple(out)


_ENTRIES = _entries()
_BY_OPCODE: dict[str, tuple[ImpliedTie, ...]] = {}


def tie_constraints(opcode: str) -> tuple[ImpliedTie, ...]:
    """The ties the definition of `opcode` implies (none for an opcode the table does not know)."""
    got = _BY_OPCODE.get(opcode)
    if got is None:
        got = next((e.ties for e in _ENTRIES if e.pattern.fullmatch(opcode)), ())
        _BY_OPCODE[opcode] = got
    return got


def implied_ties(ins: _Instruction) -> tuple[tuple[int, int], ...]:
    """(def, use) pairs of MIR operand positions (explicit defs first, then explicit uses) that
    the definition of `ins`'s opcode ties, whether or not the text prints them."""
    return tuple((t.def_, t.use) for t in tie_constraints(ins.opcode))


__all__ = ["ImpliedTie", "implied_ties", "tie_constraints"]
