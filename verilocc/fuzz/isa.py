"""What the fuzzer's oracles know about the hardware, written from the ISA and LLVM's conventions.

The concrete interpreter (`verilocc.fuzz.interpret`) and the reference allocator
(`verilocc.fuzz.refalloc`) judge the verifier, so they must not learn the machine from it:
nothing here comes from `verilocc.target` or any other verifier package (tests/test_layers.py
enforces it). Each fact names its source.

- Wave size: 64 lanes before gfx10; 32 from gfx10 on unless the function's target features
  say `+wavefrontsize64` (AMDGPUUsage, "Processors": gfx10+ are wave32 by default).
- Register storage, from names only: `$vgpr4_vgpr5` is the 32-bit registers vgpr4 and vgpr5;
  VGPRs and AGPRs hold a value per lane, everything else (SGPRs, VCC, EXEC, M0, SCC, TTMPs)
  one value per wave. A virtual register's file and width come from its class name.
- Register masks of calls (llvm/lib/Target/AMDGPU/SICallingConv.td): `CSR_AMDGPU_VGPRs` is
  v40-v47, v56-v63, ... v248-v255; `CSR_AMDGPU_AGPRs` a32-a255 (the `_gfx90ainsts` masks);
  `CSR_AMDGPU_SGPRs` s30-s105 up to LLVM 20 and s30-s39, s48-s55, s64-s71, s80-s87, s96-s105
  from LLVM 21 (llvm-project PR #127353); the `amdgpu_gfx` masks (`CSR_AMDGPU_SI_Gfx_SGPRs`)
  s4-s31 and s64-s105. A callee returns with the caller's EXEC and MODE and never writes the
  lanes that are inactive at the call (AMDGPUUsage, "Call Convention": a callee preserves the
  inactive lanes of every VGPR).
- Operand files (SIInstrInfo.td, VOP*Instructions.td, FLATInstructions.td,
  BUFInstructions.td): which register file each operand of an instruction can encode. A VALU
  result goes to a VGPR (a VOPC or carry result to an SGPR lane mask); VOP2's second source
  and every memory address and data operand is a VGPR (or AGPR for data on gfx90a+); SALU
  operands, lane selects, `saddr`, resource descriptors and callee addresses are SGPRs.
- Operands tied by the instruction's definition (`Constraints = "$vdst = $vdst_in"` and the
  like): the def and that use must be one register.
"""

from __future__ import annotations

import functools
import re

from verilocc.mir.model import Instruction, Operand


class UnmodelledConstruct(Exception):
    """A construct the oracles do not model."""


# --------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------
def generation(cpu: str | None) -> int:
    """The GFX major version of a processor name: gfx90a -> 9, gfx1100 -> 11, gfx600 -> 6."""
    m = re.fullmatch(r"gfx(\d+)[a-z]?", cpu or "")
    if not m:
        return 9
    digits = m.group(1)
    return int(digits[:2]) if len(digits) == 4 else int(digits[0])


def wave_size(cpu: str | None, features: str | None) -> int:
    """Lanes per wave: 64 before gfx10, 32 from gfx10 unless `+wavefrontsize64`."""
    feats = features or ""
    if "+wavefrontsize64" in feats:
        return 64
    if "+wavefrontsize32" in feats:
        return 32
    return 32 if generation(cpu) >= 10 else 64


# Processors with FeatureGFX90AInsts: even-aligned VGPR/AGPR tuples, AGPRs as memory data and
# MFMA A/B sources.
GFX90A_INSTS = frozenset({"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
ALIGNED_VECTOR_TUPLES = GFX90A_INSTS


# --------------------------------------------------------------------------------------------
# Register storage, computed from names
# --------------------------------------------------------------------------------------------
NUMBERED = re.compile(r"(vgpr|sgpr|agpr|ttmp)(\d+)$")
_PAIRS = {
    "vcc": ("vcc_lo", "vcc_hi"),
    "exec": ("exec_lo", "exec_hi"),
    "flat_scr": ("flat_scr_lo", "flat_scr_hi"),
    "xnack_mask": ("xnack_mask_lo", "xnack_mask_hi"),
    "tba": ("tba_lo", "tba_hi"),
    "tma": ("tma_lo", "tma_hi"),
}
_SINGLES = frozenset({"vcc_lo", "vcc_hi", "exec_lo", "exec_hi", "scc", "m0", "mode", "flat_scr_lo", "flat_scr_hi",
                      "sgpr_null", "src_scc", "src_vccz", "src_execz"})


@functools.lru_cache(maxsize=4096)
def physical_units(name: str) -> tuple[str, ...]:
    """The 32-bit registers of a physical register: `vgpr4_vgpr5` -> (`vgpr4`, `vgpr5`)."""
    name = name.lower().lstrip("$")
    if name in _PAIRS:
        return _PAIRS[name]
    if name in _SINGLES:
        return (name,)
    parts = name.split("_")
    if all(NUMBERED.match(p) for p in parts):
        ms = [NUMBERED.match(p) for p in parts]
        kinds = {m.group(1) for m in ms if m}
        idx = [int(m.group(2)) for m in ms if m]
        if len(kinds) == 1 and idx == list(range(idx[0], idx[0] + len(idx))):
            return tuple(parts)
    raise UnmodelledConstruct(f"register ${name}")


def unit_file(unit: str) -> str:
    """"v" (a VGPR: one value per lane), "a" (an AGPR: per lane) or "s" (one value per wave)."""
    if unit.startswith("vgpr"):
        return "v"
    if unit.startswith("agpr"):
        return "a"
    return "s"


def is_numbered(phys: str) -> bool:
    return phys.startswith(("vgpr", "sgpr", "agpr", "ttmp")) and phys[4:5].isdigit()


def class_file(cls: str) -> str:
    """The file of a virtual register class: "v", "a", "av" (either vector file) or "s"."""
    if cls.startswith(("vgpr", "vreg")):
        return "v"
    if cls.startswith(("agpr", "areg")):
        return "a"
    if cls.startswith(("av_", "av")):
        return "av"
    if cls.startswith(("sgpr", "sreg", "ccr_sgpr")):
        return "s"
    raise UnmodelledConstruct(f"register class {cls}")


def class_dwords(cls: str) -> int:
    """Width in 32-bit registers of a register class name (`vreg_64_align2` -> 2)."""
    m = re.search(r"_(\d+)", cls)
    if not m or int(m.group(1)) % 32:
        raise UnmodelledConstruct(f"register class {cls}")
    return int(m.group(1)) // 32


@functools.lru_cache(maxsize=1024)
def subreg_lanes(index: str) -> tuple[int, ...]:
    """`sub2_sub3` -> (2, 3)."""
    out = []
    for part in index.split("_"):
        if not re.fullmatch(r"sub\d+", part):
            raise UnmodelledConstruct(f"subregister index {index}")
        out.append(int(part[3:]))
    if out != list(range(out[0], out[0] + len(out))):
        raise UnmodelledConstruct(f"subregister index {index}")
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Register masks of calls
# --------------------------------------------------------------------------------------------
_VGPR_CSR = frozenset(k for start in range(40, 256, 16) for k in range(start, start + 8))
_AGPR_CSR = frozenset(range(32, 256))
_SGPR_CSR = {
    "llvm20": frozenset(range(30, 106)),
    "llvm21": frozenset([*range(30, 40), *range(48, 56), *range(64, 72), *range(80, 88), *range(96, 106)]),
}
_SGPR_CSR_GFX = frozenset([*range(4, 32), *range(64, 106)])
# What every callee returns as it found it, whatever the mask (AMDGPUUsage, "Call Convention").
_ALWAYS_PRESERVED = frozenset({"exec_lo", "exec_hi", "mode"})
# The SGPR rule of the callee: "llvm21" (s30-s39, s48-s55, ...: what every LLVM from 15 to 22
# preserves, and so what a callee compiled by any of them keeps) or "llvm20" (s30-s105: LLVM up
# to 20, for judging an allocation llc-19 made for llc-19's callees).
CALLEE_ABIS = tuple(_SGPR_CSR)


@functools.lru_cache(maxsize=64)
def preserved_units(mask: str, callee_abi: str = "llvm21") -> frozenset[str] | None:
    """The 32-bit registers a call with register mask `mask` preserves (None: every register
    not listed is clobbered, and `mask` is a `CustomRegMask(...)` listing them)."""
    name = mask.strip().lower()
    out: set[str] = set(_ALWAYS_PRESERVED)
    if name.startswith("custommask(") or name.startswith("customregmask("):
        inner = mask[mask.index("(") + 1:mask.rindex(")")]
        for reg in inner.split(","):
            reg = reg.strip().lstrip("$").lower()
            if reg.endswith(("_lo16", "_hi16")):
                continue  # the 32-bit register is listed too when both halves are
            try:
                units = physical_units(reg)
            except UnmodelledConstruct:
                continue
            if len(units) == 1:
                out.add(units[0])
        return frozenset(out)
    agprs = name.endswith("_gfx90ainsts") or name.endswith("_with_agprs")
    base = name.removesuffix("_gfx90ainsts").removesuffix("_with_agprs")
    if base == "csr_amdgpu":
        sgprs = _SGPR_CSR[callee_abi]
    elif base == "csr_amdgpu_si_gfx":
        sgprs = _SGPR_CSR_GFX
    elif base == "csr_amdgpu_highregs":  # LLVM 13/14: the VGPR stripes and s32-s105
        sgprs = frozenset(range(32, 106))
    elif base in ("csr_amdgpu_noregs", "csr_amdgpu_cs_chainpreserve"):
        sgprs = frozenset()
    else:
        raise UnmodelledConstruct(f"register mask {mask}")
    if base == "csr_amdgpu_cs_chainpreserve":
        vgprs = frozenset(range(8, 256))
    elif base == "csr_amdgpu_noregs":
        vgprs = frozenset()
    else:
        vgprs = _VGPR_CSR
    out.update(f"sgpr{k}" for k in sgprs)
    out.update(f"vgpr{k}" for k in vgprs)
    if agprs:
        out.update(f"agpr{k}" for k in _AGPR_CSR)
    return frozenset(out)


def preserved_by(mask: str, unit: str, callee_abi: str = "llvm21") -> bool:
    kept = preserved_units(mask, callee_abi)
    return kept is not None and unit in kept


# --------------------------------------------------------------------------------------------
# Opcodes
# --------------------------------------------------------------------------------------------
def base_opcode(op: str) -> str:
    """The opcode without LLVM's terminator marker: `S_MOV_B64_term` is `S_MOV_B64`."""
    return op[:-5] if op.endswith("_term") else op


def is_valu(op: str) -> bool:
    return op.startswith("V_")


def is_salu(op: str) -> bool:
    return op.startswith("S_") and not op.startswith(("S_LOAD", "S_STORE", "S_BUFFER", "S_SCRATCH", "S_ATC"))


def is_smem(op: str) -> bool:
    return op.startswith(("S_LOAD", "S_STORE", "S_BUFFER_LOAD", "S_BUFFER_STORE"))


def is_vmem(op: str) -> bool:
    return op.startswith(("GLOBAL_", "FLAT_", "BUFFER_", "SCRATCH_", "DS_", "TBUFFER_"))


def is_mfma(op: str) -> bool:
    return op.startswith(("V_MFMA_", "V_SMFMAC_"))


def is_store(ins: Instruction) -> bool:
    op = ins.opcode
    return "store" in (ins.mem or "") or any(w in op for w in ("STORE", "ATOMIC", "DS_WRITE"))


# Opcodes whose result is the value of their single input: one lane at a time for a vector
# destination (V_MOV_B32 and V_ACCVGPR_* honour EXEC, as does the V_MOV a vector COPY becomes),
# whole for a scalar one.
MOVES = frozenset({"COPY", "PRED_COPY", "V_MOV_B32_e32", "V_MOV_B32_e64", "V_MOV_B64_PSEUDO", "V_MOV_B64_e32",
                   "V_MOV_B64_e64", "S_MOV_B32", "S_MOV_B64", "S_MOV_B64_IMM_PSEUDO", "S_MOVK_I32",
                   "V_ACCVGPR_WRITE_B32_e64", "V_ACCVGPR_READ_B32_e64", "V_ACCVGPR_MOV_B32", "AV_MOV_B32_IMM_PSEUDO",
                   "AV_MOV_B64_IMM_PSEUDO", "STRICT_WWM", "STRICT_WQM", "WWM", "SOFT_WQM"})

# The explicit use (index among the operands after the defs) that an instruction's definition
# ties to its first def (`Constraints = "$vdst = $vdst_in"` or `"$vdst = $src2"`).
_TIED_E32 = ("V_FMAC_F32_e32", "V_FMAC_F16_e32", "V_FMAC_F64_e32", "V_FMAC_LEGACY_F32_e32", "V_MAC_F32_e32",
             "V_MAC_F16_e32", "V_MAC_LEGACY_F32_e32", "V_FMAC_F16_t16_e32", "V_FMAC_F16_fake16_e32",
             "V_DOT2C_F32_F16_e32", "V_DOT4C_I32_I8_e32", "V_DOT8C_I32_I4_e32", "V_DOT2C_I32_I16_e32",
             "V_PK_FMAC_F16_e32")
_TIED_E64 = ("V_FMAC_F32_e64", "V_FMAC_F16_e64", "V_FMAC_F64_e64", "V_FMAC_LEGACY_F32_e64", "V_MAC_F32_e64",
             "V_MAC_F16_e64", "V_MAC_LEGACY_F32_e64")
TIED_INPUT: dict[str, int] = {
    "V_WRITELANE_B32": 2,  # (ins SCSrc_b32:$src0, SCSrc_b32:$src1, VGPR_32:$vdst_in)
    "SI_SPILL_S32_TO_VGPR": 2,  # (ins SReg_32:$src0, i32imm:$src1, VGPR_32:$vdst_in)
    "S_ADDK_I32": 0, "S_MULK_I32": 0, "S_CMOVK_I32": 0,
    **{op: 2 for op in _TIED_E32},
    **{op: 5 for op in _TIED_E64},  # (src0_mods, src0, src1_mods, src1, src2_mods, src2, clamp, omod)
}


def tied_input(ins: Instruction) -> int | None:
    """The index (after the defs) of the use the definition of `ins` ties to its first def."""
    op = ins.opcode
    if op in TIED_INPUT:
        return TIED_INPUT[op]
    if op.startswith("V_SMFMAC_"):
        return 5  # (ins srcA, srcB, idx, cbsz, abid, vdst_in)
    if is_mfma(op) and "_mac_" in op:
        return 2  # (ins srcA, srcB, srcC, cbsz, abid, blgp): srcC is the accumulator
    return None


# VALU sources read as a lane mask (one bit per lane), by index after the defs.
LANE_MASK_INPUTS: dict[str, tuple[int, ...]] = {
    "V_CNDMASK_B32_e64": (4,),  # (src0_mods, src0, src1_mods, src1, src2: the condition)
    "V_CNDMASK_B16_e64": (4,),
    "V_ADDC_U32_e64": (2,), "V_SUBB_U32_e64": (2,), "V_SUBBREV_U32_e64": (2,),  # (src0, src1, carry-in, clamp)
    "V_ADDC_CO_U32_e64": (2,), "V_SUBB_CO_U32_e64": (2,), "V_SUBBREV_CO_U32_e64": (2,),
    "V_DIV_FMAS_F32_e64": (), "V_DIV_FMAS_F64_e64": (),
}
# VALU opcodes that read $vcc as a lane mask (their VOP2/VOPC forms take it implicitly).
VCC_MASK_INPUT = frozenset({"V_CNDMASK_B32_e32", "V_ADDC_U32_e32", "V_SUBB_U32_e32", "V_SUBBREV_U32_e32",
                            "V_ADDC_CO_U32_e32", "V_SUBB_CO_U32_e32", "V_SUBBREV_CO_U32_e32",
                            "V_DIV_FMAS_F32_e64", "V_DIV_FMAS_F64_e64"})


def saveexec(op: str) -> tuple[str, int] | None:
    """(operation, width) of an `S_<OP>_SAVEEXEC_B32/B64`: it saves EXEC in its def, sets EXEC
    to `<op>(src, EXEC)` (the ISA's `S0 op EXEC`; ANDN2 is `S0 & ~EXEC`... see `exec_op`) and
    SCC to whether EXEC is nonzero."""
    m = re.fullmatch(r"S_(AND|OR|XOR|ANDN2|ORN2|NAND|NOR|XNOR|ANDN1|ORN1|ANDN1_WREXEC|ANDN2_WREXEC)_SAVEEXEC_B(32|64)",
                     op)
    return (m.group(1), int(m.group(2))) if m else None


# --------------------------------------------------------------------------------------------
# Which file each explicit operand can encode
# --------------------------------------------------------------------------------------------
V, A, S = frozenset("v"), frozenset("a"), frozenset("s")
VA = V | A
VS = V | S
ANY = V | A | S


def explicit_operands(ins: Instruction) -> tuple[list[Operand], list[Operand]]:
    """(explicit defs, explicit operands after them: registers and immediates, in order)."""
    defs = [o for o in ins.operands if o.kind == "reg" and o.is_def and not o.is_implicit]
    rest = [o for o in ins.operands if not (o.kind == "reg" and (o.is_def or o.is_implicit))
            and o.kind not in ("regmask",)]
    return defs, rest


def operand_files(ins: Instruction, gfx90a: bool) -> list[tuple[Operand, frozenset[str], str]]:
    """(operand, files it can encode, what it is) for the explicit register operands of `ins`
    whose file the encoding fixes; operands not listed take any file (COPY, unknown opcodes)."""
    op = base_opcode(ins.opcode)
    defs, rest = explicit_operands(ins)
    regs = [(k, o) for k, o in enumerate(rest) if o.kind == "reg" and not o.is_noreg]
    out: list[tuple[Operand, frozenset[str], str]] = []
    data = VA if gfx90a else V

    def uses(files: frozenset[str], what: str, only: tuple[int, ...] | None = None) -> None:
        for k, o in regs:
            if only is None or k in only:
                out.append((o, files, what))

    if op in ("COPY", "PRED_COPY", "KILL", "IMPLICIT_DEF", "REG_SEQUENCE", "INSERT_SUBREG", "EXTRACT_SUBREG",
              "SUBREG_TO_REG", "STRICT_WWM", "STRICT_WQM", "WWM", "SOFT_WQM") or op.startswith(("DBG_", "INLINEASM")):
        return out
    if op in ("V_ACCVGPR_WRITE_B32_e64",):
        out += [(d, A, "AGPR destination") for d in defs]
        uses(VA, "source")
    elif op in ("V_ACCVGPR_READ_B32_e64",):
        out += [(d, V, "VGPR destination") for d in defs]
        uses(VA, "source")
    elif op == "V_ACCVGPR_MOV_B32":
        out += [(d, A, "AGPR destination") for d in defs]
        uses(A, "AGPR source")
    elif op in ("AV_MOV_B32_IMM_PSEUDO", "AV_MOV_B64_IMM_PSEUDO"):
        out += [(d, VA, "vector destination") for d in defs]
    elif op == "V_READFIRSTLANE_B32":
        out += [(d, S, "SGPR destination") for d in defs]
        uses(V, "VGPR source")
    elif op == "V_READLANE_B32":
        out += [(d, S, "SGPR destination") for d in defs]
        uses(V, "VGPR source", (0,))
        uses(S, "lane select", (1,))
    elif op == "V_WRITELANE_B32":
        out += [(d, V, "VGPR destination") for d in defs]
        uses(S, "SGPR source", (0,))
        uses(S, "lane select", (1,))
        uses(V, "vdst_in", (2,))
    elif op == "SI_SPILL_S32_TO_VGPR":
        out += [(d, V, "VGPR destination") for d in defs]
        uses(S, "SGPR source", (0,))
        uses(V, "vdst_in", (2,))
    elif op == "SI_RESTORE_S32_FROM_VGPR":
        out += [(d, S, "SGPR destination") for d in defs]
        uses(V, "VGPR source")
    elif op.startswith("SI_SPILL_"):
        kind = re.match(r"SI_SPILL_(AV|WWM_AV|WWM_V|V|A|S)\d+_", op)
        files = {"AV": VA, "WWM_AV": VA, "WWM_V": V, "V": V, "A": A, "S": S}[kind.group(1)] if kind else ANY
        if op.endswith("_SAVE"):
            uses(files, "spilled register", (0,))
            uses(S, "stack pointer", tuple(range(1, len(rest))))
        else:
            out += [(d, files, "reloaded register") for d in defs]
            uses(S, "stack pointer")
    elif op.startswith(("SI_CALL", "SI_TCRETURN")):
        uses(S, "callee address", (0,))
    elif op.startswith("V_SMFMAC_"):  # (srcA, srcB, idx, cbsz, abid, vdst_in): the result in either file
        out += [(d, VA, "SMFMAC result") for d in defs]
        uses(VA if gfx90a else V, "SMFMAC source", (0, 1))
        uses(V, "SMFMAC index", (2,))
        uses(VA, "SMFMAC accumulator", (5,))
    elif is_mfma(op):
        vgprcd = "_vgprcd" in op
        out += [(d, V if vgprcd else A, "MFMA result") for d in defs]
        src = VA if gfx90a else V
        uses(src, "MFMA source", (0, 1))
        uses(V if vgprcd else A, "MFMA accumulator", (2,))
    elif op.startswith(("V_CMP", "V_CMPX")):
        out += [(d, S, "lane mask destination") for d in defs]
        if op.endswith("_e32"):
            uses(VS, "source", (0,))
            uses(V, "VOPC second source", (1,))
        else:
            uses(VS, "source")
    elif op.startswith("V_"):
        if defs:
            out.append((defs[0], V, "VALU destination"))
            out += [(d, S, "carry-out lane mask") for d in defs[1:]]
        masks = LANE_MASK_INPUTS.get(op, ())
        if op.endswith("_e32"):  # VOP1/VOP2: src0 takes any file, src1 (and a tied src2) a VGPR
            uses(VS, "source", (0,))
            uses(V, "VOP2 second source", (1,))
            uses(V, "accumulator", tuple(k for k, _ in regs if k >= 2))
        else:
            uses(VS, "source", tuple(k for k, _ in regs if k not in masks))
        uses(S, "lane mask source", masks)
    elif is_salu(op) or is_smem(op):
        out += [(d, S, "SGPR destination") for d in defs]
        uses(S, "SGPR source")
    elif is_vmem(op):
        out += _memory_files(op, defs, regs, data)
    return out


def _memory_files(op: str, defs: list[Operand], regs: list[tuple[int, Operand]],
                  data: frozenset[str]) -> list[tuple[Operand, frozenset[str], str]]:
    """Address, data and descriptor operands of FLAT, GLOBAL, SCRATCH and MUBUF instructions,
    in the order LLVM's instruction definitions list them."""
    out: list[tuple[Operand, frozenset[str], str]] = [(d, data, "loaded register") for d in defs]
    ops = [o for _, o in regs]
    store = "STORE" in op or "ATOMIC" in op
    if op.startswith("SCRATCH_"):
        # FLAT_Scratch_*_Pseudo: load (vaddr? saddr?); store (vdata, vaddr? saddr?). _SADDR has
        # saddr only, _SVS both, _ST neither, the plain form vaddr only.
        has_saddr = "_SADDR" in op or "_SVS" in op
        has_vaddr = "_SVS" in op or not ("_SADDR" in op or "_ST" in op)
        names = (("stored register",) if store else ()) + (("VGPR address",) if has_vaddr else ()) + \
            (("saddr",) if has_saddr else ())
        for o, what in zip(ops, names):
            files = S if what == "saddr" else data if what == "stored register" else V
            out.append((o, files, what))
    elif op.startswith(("GLOBAL_", "FLAT_")):
        if op.endswith("_SADDR") or "_SADDR_" in op:
            # load: (saddr, vaddr); store: (vaddr, vdata, saddr)
            names = ("VGPR offset", "stored register", "saddr") if store else ("saddr", "VGPR offset")
        else:
            names = ("VGPR address", "stored register") if store else ("VGPR address",)
        for o, what in zip(ops, names):
            files = S if what == "saddr" else data if what == "stored register" else V
            out.append((o, files, what))
    elif op.startswith(("BUFFER_", "TBUFFER_")):
        # load: (vaddr?, srsrc, soffset); store: (vdata, vaddr?, srsrc, soffset)
        has_vaddr = any(w in op for w in ("_ADDR64", "_OFFEN", "_IDXEN", "_BOTHEN"))
        names = (("stored register",) if store else ()) + (("VGPR address",) if has_vaddr else ()) + \
            ("resource descriptor", "soffset")
        for o, what in zip(ops, names):
            files = data if what == "stored register" else V if what == "VGPR address" else S
            out.append((o, files, what))
    return out
