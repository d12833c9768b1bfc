"""Facts about an instruction that its opcode and operands decide, in either program.

- which instructions are moves (`MOVE_OPCODES`, `is_register_move`, `is_exec_save`) and which
  are spill code (`is_spill_code`, `is_lane_spill`);
- which order with other side effects (`SIDE_EFFECT_PREFIXES`), which are definitions LLVM may
  rematerialise (`is_pure`, `is_constant_def`) or delete once their results are unused
  (`is_removable`);
- which register uses a value depends on (`value_inputs`; `AMBIENT_REGISTERS` are not among
  them) and which implicit defs are liveness notes (`is_liveness_note`);
- the operation an opcode performs whatever register file its accumulator uses (`operation`).

None of them looks at the other program or at any pairing of the two: the pairing
(`verilocc.pairing.alignment`), the checks, the allocators and the viewer read them here.
"""

from __future__ import annotations

from verilocc.mir.model import Instruction, Operand

# Instructions that move values or mark them defined or dead, and compute nothing.
MOVE_OPCODES = frozenset({"COPY", "KILL", "IMPLICIT_DEF"})
EXEC_REGISTERS = frozenset({"exec", "exec_lo"})
# Implicit inputs that do not change a value in LLVM's model (remat ignores them too).
AMBIENT_REGISTERS = frozenset({"exec", "exec_lo", "exec_hi", "mode"})
# Opcodes that order with other side effects (control transfer, synchronisation, messages,
# memory, inline assembly) whatever their operands say. Inline assembly counts whatever its
# flags: LLVM's allocators never delete, duplicate or move it, so it is never a rematerialised
# or deleted definition, and a missing one is a finding even when its outputs are unused.
SIDE_EFFECT_PREFIXES = (
    "S_BRANCH", "S_CBRANCH", "SI_", "S_ENDPGM", "S_SETPC", "S_BARRIER", "S_WAITCNT", "S_SETPRIO", "S_SENDMSG",
    "S_SLEEP", "ATOMIC_FENCE", "S_SETREG", "S_DCACHE", "S_MEMTIME", "S_MEMREALTIME", "S_GETREG", "BUFFER_",
    "GLOBAL_", "FLAT_", "SCRATCH_", "DS_", "INLINEASM",
)
_NOT_PURE_PREFIXES = SIDE_EFFECT_PREFIXES + ("DBG_",)
_LANE_READS = frozenset({"V_READFIRSTLANE_B32", "V_READLANE_B32"})


def is_spill_code(ins: Instruction) -> bool:
    """A spill or restore the allocator writes: the `SI_SPILL_*` and `SI_RESTORE_*` pseudos
    (to a stack slot or a VGPR lane), and the lane spills of LLVM 13-16 (`is_lane_spill`)."""
    op = ins.opcode
    return (op.startswith(("SI_SPILL_", "SI_RESTORE_")) or op in ("SI_SPILL_S32_TO_VGPR", "SI_RESTORE_S32_FROM_VGPR")
            or is_lane_spill(ins))


def is_lane_spill(ins: Instruction) -> bool:
    """An SGPR spill of LLVM 13-16, which `si-lower-sgpr-spills` writes as the plain lane
    instructions `$vgprN = V_WRITELANE_B32 $sgprM, lane, $vgprN` and
    `$sgprM = V_READLANE_B32 $vgprN, lane` (LLVM 17+ print `SI_SPILL_S32_TO_VGPR` /
    `SI_RESTORE_S32_FROM_VGPR` there). Told apart from the same opcodes of the program by
    what the allocator never writes: no operand is `renamable` (the lane VGPR is physical from
    the start), the lane is an immediate and the written VGPR is its own tied input. The
    step then means exactly what the instruction does (lane `lane` written or read whatever
    $exec is), so a misread instruction of the program is checked by its real meaning."""
    if ins.opcode not in ("V_WRITELANE_B32", "V_READLANE_B32"):
        return False
    if any(op.kind == "reg" and op.has("renamable") for op in ins.operands):
        return False
    explicit = [op for op in ins.operands if not (op.kind == "reg" and op.is_implicit)]
    regs = [op for op in explicit if op.kind == "reg"]
    if any(op.kind == "reg" and op.phys is None for op in ins.operands):
        return False
    if ins.opcode == "V_WRITELANE_B32":
        shape = [op.kind for op in explicit] == ["reg", "reg", "imm", "reg"]
        return shape and regs[0].is_def and regs[0].phys == regs[2].phys and (regs[0].phys or "").startswith("vgpr") \
            and _is_sgpr(regs[1].phys)
    shape = [op.kind for op in explicit] == ["reg", "reg", "imm"]
    return shape and regs[0].is_def and _is_sgpr(regs[0].phys) and (regs[1].phys or "").startswith("vgpr")


def _is_sgpr(name: str | None) -> bool:
    return name is not None and (name.startswith("sgpr") or name in ("vcc_lo", "vcc_hi", "m0", "exec_lo", "exec_hi"))


def is_register_move(ins: Instruction) -> bool:
    """`$d = S_MOV_B32/B64 $s`: a scalar move of a register, which LLVM's allocator and the
    whole-wave bracket write as copies."""
    if ins.opcode not in ("S_MOV_B32", "S_MOV_B64") or any(op.kind != "reg" for op in ins.operands):
        return False
    return len(ins.explicit_regs) == 2


def is_exec_save(ins: Instruction) -> bool:
    """`$s = S_OR_SAVEEXEC_B64 -1, implicit-def $exec, ...`: $exec saved in $s, all lanes on."""
    if ins.opcode not in ("S_OR_SAVEEXEC_B32", "S_OR_SAVEEXEC_B64"):
        return False
    explicit = [op for op in ins.operands if not (op.kind == "reg" and op.is_implicit)]
    return (len(explicit) == 2 and explicit[0].kind == "reg" and explicit[0].is_def and explicit[0].phys is not None
            and explicit[1].kind == "imm" and explicit[1].text == "-1"
            and any(op.kind == "reg" and not op.is_def and op.phys in EXEC_REGISTERS for op in ins.operands))


def is_pure(ins: Instruction, allocated: bool, fixed: bool = False) -> bool:
    """A definition LLVM may rematerialise: its value depends only on its operands.

    One explicit def, of a virtual register (or, in an allocated program, a `renamable`
    one, or any register with `fixed`: the whole-wave values LLVM assigns before allocation
    are not renamable); no implicit defs, no side effects; memory is read only if it is
    invariant. Mirrors SIInstrInfo::isReallyTriviallyReMaterializable.
    """
    if ins.opcode in MOVE_OPCODES or is_spill_code(ins) or ins.opcode.startswith(_NOT_PURE_PREFIXES):
        return False
    if ins.opcode in _LANE_READS:
        return False  # which lane it reads depends on $exec: not the same anywhere
    if ins.mem is not None and ("invariant load" not in ins.mem or "store" in ins.mem):
        return False
    defs = [op for op in ins.operands if op.kind == "reg" and op.is_def and not (allocated and is_liveness_note(op))]
    if len(defs) != 1 or defs[0].is_implicit:
        return False
    d = defs[0]
    if allocated and not (d.has("renamable") or fixed):
        return False
    if not allocated and d.vreg is None:
        return False
    return True  # a tied use is one more input; llc prints `tied-def` only sometimes


def is_liveness_note(op: Operand) -> bool:
    """An `implicit-def` of a general register that the virtual-register rewriter adds to an
    allocated instruction for liveness only: the super-register of a subregister def
    (`implicit-def $vgpr1_vgpr2`), or, from LLVM 20, the lanes an `undef` subregister def
    leaves undefined (`implicit-def $vgpr2`). No AMDGPU instruction writes a general register
    implicitly (their implicit defs are $scc, $vcc, $exec, $m0, $mode), so the hardware does not
    write it: value flow and equivalence leave the register as it was, as they do for such
    operands of paired instructions."""
    return (op.kind == "reg" and op.is_def and op.is_implicit and op.phys is not None
            and op.phys.startswith(("vgpr", "sgpr", "agpr")))


def is_removable(ins: Instruction) -> bool:
    """A virtual-program instruction that dead-code elimination may delete once its results
    are unused (LLVM: MachineInstr::isSafeToMove and every def dead): no memory access, no
    side effect, explicit defs of virtual registers, implicit defs (`$scc`) marked dead.
    Deleting it is harmless exactly when nothing reads what it defined, which value flow
    checks: its values are defined but held nowhere."""
    if ins.opcode in MOVE_OPCODES or ins.opcode.startswith(_NOT_PURE_PREFIXES) or ins.mem is not None:
        return False
    defs = [op for op in ins.operands if op.kind == "reg" and op.is_def]
    return bool(defs) and all(d.has("dead") if d.is_implicit else d.vreg is not None for d in defs)


def is_value_input(op: Operand) -> bool:
    """A register use a value depends on: not `undef`, not a debug use, not $noreg, and not
    an implicit read of an `AMBIENT_REGISTERS` register."""
    if op.kind != "reg" or op.is_def or op.is_noreg or op.has("undef") or op.has("debug-use"):
        return False
    return not (op.is_implicit and op.phys in AMBIENT_REGISTERS)


def value_inputs(ins: Instruction) -> list[Operand]:
    """The register uses a pure instruction's value depends on (not $exec / $mode)."""
    return [op for op in ins.operands if is_value_input(op)]


def is_constant_def(ins: Instruction, allocated: bool) -> bool:
    """A pure definition without register inputs (a move of an immediate, an address...)."""
    return is_pure(ins, allocated) and not value_inputs(ins)


def operation(opcode: str) -> str:
    """The operation an opcode performs, whatever register file its accumulator uses: an MFMA
    or SMFMAC with its accumulator and result in VGPRs (`..._vgprcd_e64`) computes what the
    same one with them in AGPRs (`..._e64`) computes. LLVM 22's allocator turns the first into
    the second where it assigns the result to AGPRs (AMDGPURewriteAGPRCopyMFMA)."""
    if "_vgprcd" in opcode and opcode.startswith(("V_MFMA_", "V_SMFMAC_")):
        return opcode.replace("_vgprcd", "", 1)
    return opcode
