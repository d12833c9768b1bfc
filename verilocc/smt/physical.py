"""Layer 1 checks that need no virtual program and no solver: every operand of the allocated
program on its own.

Virtual registers left behind; registers that do not exist, lie outside the file or the
function's limits (`verilocc.target.limits`), or are misaligned; allocated (renamable)
operands in reserved registers; tied operands in different registers; early-clobber defs
that overlap a use of the same instruction; COPYs that LLVM cannot lower (a vector register
into a scalar one); on unified VGPR/AGPR files, the two files' combined size. The interference of values needs the virtual program: `verilocc.smt.constraints`.
"""

from __future__ import annotations

from verilocc.analysis.instructions import MOVE_OPCODES
from verilocc.analysis.operands import VReg, function_limits, physreg_at
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.target import PhysReg, RegFile, RegisterClass, Target
from verilocc.target.limits import NUMBERED_FILES, UNLIMITED, Limits, budget_warning, register_problem
from verilocc.target.opcodes import tie_constraints

LAYER = "constraints"


def post_only_checks(fn: Function, target: Target, classes: dict[VReg, RegisterClass]) -> list[Finding]:
    """Checks that need no virtual program: every operand of the allocated program.

    Virtual registers left behind; registers that do not exist, lie outside the file or the
    budget, or are misaligned; allocated (renamable) operands in reserved registers; tied
    operands in different registers; early-clobber defs that overlap a use.
    """
    del classes
    limits = function_limits(fn, target)
    findings: list[Finding] = []
    budget_warned: dict[RegFile, Finding] = {}
    seen_v: set[VReg] = set()
    # (register, subregister, renamable, free of alignment: a move or an implicit operand) -> the
    # register and its problem: a register is named many times, and its problem depends on nothing else.
    checked: dict[tuple[str, str | None, bool, bool], tuple[PhysReg, tuple[str, str] | None]] = {}
    for b in fn.blocks:
        for idx, ins in enumerate(b.instructions):
            regs: list[tuple[Operand, PhysReg | None]] = []
            for op in ins.operands:
                if op.kind != "reg":
                    continue
                if op.vreg is not None:
                    if op.vreg not in seen_v:
                        seen_v.add(op.vreg)
                        findings.append(Finding("unallocated", LAYER, _place(fn, b.number, idx, op),
                                                f"bb.{b.number} line {op.line}: virtual register %{op.vreg} was not allocated",
                                                vregs=(f"%{op.vreg}",)))
                    regs.append((op, None))
                    continue
                if op.phys is None:
                    regs.append((op, None))
                    continue
                renamable = op.has("renamable")
                # An implicit operand has no operand class (SIInstrInfo::verifyInstruction checks
                # the explicit ones): the rewriter's `implicit-def $vgpr41_vgpr42` of a tuple's
                # live lanes may start at an odd register.
                key = (op.phys, op.subreg, renamable, ins.opcode in MOVE_OPCODES or op.is_implicit)
                got = checked.get(key)
                if got is None:
                    got = checked[key] = _register_check(fn, op, target, limits, renamable, key[3])
                reg, problem = got
                regs.append((op, reg))
                if reg.file not in NUMBERED_FILES:
                    continue
                if problem is not None:
                    kind, why = problem
                    findings.append(Finding(kind, LAYER, _place(fn, b.number, idx, op), f"bb.{b.number} line {op.line}: {why}",
                                            physregs=(f"${reg.name}",)))
                elif renamable and reg.file not in budget_warned:
                    warn = budget_warning(reg, limits)
                    if warn is not None:
                        # One warning per register file says enough.
                        budget_warned[reg.file] = Finding(
                            "budget", LAYER, _place(fn, b.number, idx, op), f"bb.{b.number} line {op.line}: {warn}",
                            physregs=(f"${reg.name}",), severity="warning")
            findings.extend(_tied_and_early_clobber(fn, b.number, idx, ins, regs))
            if ins.opcode == "COPY":
                findings.extend(_illegal_copy(fn, b.number, idx, ins, regs))
            elif ins.opcode.startswith(("SI_SPILL_", "SI_RESTORE_")):
                findings.extend(_spill_file(fn, b.number, idx, ins, regs))
    findings.extend(_vector_budget(fn, target, limits))
    findings.extend(budget_warned[f] for f in sorted(budget_warned, key=lambda x: x.value))
    return findings


def _register_check(fn: Function, op: Operand, target: Target, limits: Limits, renamable: bool,
                    any_alignment: bool) -> tuple[PhysReg, tuple[str, str] | None]:
    """The register an operand names and why it may not be there (kind, sentence), if so."""
    assert op.phys is not None
    reg = physreg_at(fn, op, op.phys)
    if reg.file not in NUMBERED_FILES:
        return reg, None
    # Fixed registers (not renamable: the ABI's, inline assembly's) are the program's, not
    # the allocator's: only a register LLVM does not have is wrong (AGPRs exist, reserved, on
    # targets without them: `INLINEASM ... $agpr31`).
    problem = register_problem(reg, None, target, limits if renamable else UNLIMITED)
    if problem is not None and problem[0] == "bounds" and not renamable:
        problem = None
    if problem is not None and problem[0] == "alignment" and reg.file is not RegFile.SGPR and any_alignment:
        # Generic opcodes (COPY expands register by register in copyPhysReg) and implicit
        # operands have no alignment constraint, and LLVM makes odd ones. Spill pseudos do: the
        # machine verifier says "Subtarget requires even aligned vector registers".
        problem = None
    return reg, problem


def _place(fn: Function, block: int, idx: int, op: Operand) -> Place:
    return Place(fn.file, fn.name, block, idx, op.line, op.column)


def _tied_and_early_clobber(fn: Function, block: int, idx: int, ins: Instruction,
                            regs: list[tuple[Operand, PhysReg | None]]) -> list[Finding]:
    out: list[Finding] = []
    by_op = {id(op): reg for op, reg in regs}
    for op, reg in regs:
        if op.tied_def is None or reg is None:
            continue
        d = ins.operands[op.tied_def]
        dreg = by_op.get(id(d))
        if dreg is not None and dreg.units != reg.units:
            out.append(Finding("tied", LAYER, Place(fn.file, fn.name, block, idx, op.line, op.column),
                               f"bb.{block} line {op.line}: `{ins.opcode}` ties its def ${dreg.name} to this use "
                               f"({_tie_source(ins, op)}), but the use is in ${reg.name}: llc's machine verifier "
                               f"says \"Tied physical registers must match\"",
                               physregs=(f"${dreg.name}", f"${reg.name}")))
    for d, dreg in regs:
        if dreg is None or not d.is_def or not d.has("early-clobber"):
            continue
        for u, ureg in regs:
            if ureg is None or u.is_def or u.tied_def is not None or u.has("undef") or u.is_implicit:
                continue
            # Without the virtual program the live lanes of a tuple use are unknown (LLVM may
            # reuse its dead lanes), and a two-address form reads its own def: the layer with
            # the virtual program checks those.
            if len(ureg.units) > 2 or ureg.units == dreg.units:
                continue
            if set(dreg.units) & set(ureg.units):
                out.append(Finding("early-clobber", LAYER, Place(fn.file, fn.name, block, idx, d.line, d.column),
                                   f"bb.{block} line {d.line}: early-clobber def ${dreg.name} overlaps the use "
                                   f"${ureg.name} of the same `{ins.opcode}`",
                                   physregs=(f"${dreg.name}", f"${ureg.name}")))
    return out


_VECTOR = frozenset({RegFile.VGPR, RegFile.AGPR})


def copy_problem(dst: PhysReg, src: PhysReg) -> str | None:
    """Why LLVM cannot lower `dst = COPY src` as a copy (`SIInstrInfo::copyPhysReg`), or None.

    A VGPR or AGPR holds one value per thread lane, an SGPR (and every special register: VCC,
    EXEC, M0, SCC) one per wave: copyPhysReg refuses a vector source for a scalar destination
    ("illegal VGPR to SGPR copy"; LLVM 16 and earlier print the message with the files the wrong
    way round), and LLVM 22's machine verifier refuses the COPY itself ("illegal copy from vector
    register to SGPR"; LLVM 19's accepts it). The one scalar destination it takes from a VGPR is VCC (or VCC_LO on wave32),
    and there it writes `V_CMP_NE_U32`, a lane mask of the nonzero lanes, not the value."""
    if src.file not in _VECTOR or dst.file in _VECTOR:
        return None
    if dst.name in ("vcc", "vcc_lo") and src.file is RegFile.VGPR and len(src.units) == 2:
        return (f"LLVM lowers it to `V_CMP_NE_U32`, the lane mask of the lanes of ${src.name} that are not zero, "
                "not a copy of the value")
    return ("a vector register holds one value per thread lane, a scalar register one per wave: "
            "LLVM cannot lower it (llc: \"illegal VGPR to SGPR copy\"; its machine verifier: \"illegal copy from "
            "vector register to SGPR\")")


# The register files of the spill pseudos' operands (SIInstructions.td: SI_SPILL_S*_SAVE and
# _RESTORE take SReg classes, SI_SPILL_V*, SI_SPILL_A* and SI_SPILL_AV* VReg, AReg and AV
# classes, the WWM spills VGPRs or either vector file; SI_SPILL_S32_TO_VGPR writes a lane of a
# VGPR from an SGPR, SI_RESTORE_S32_FROM_VGPR the reverse).
_SPILL_FILES = (("SI_SPILL_WWM_AV", _VECTOR), ("SI_SPILL_WWM_V", frozenset({RegFile.VGPR})), ("SI_SPILL_AV", _VECTOR),
                ("SI_SPILL_A", frozenset({RegFile.AGPR})), ("SI_SPILL_V", frozenset({RegFile.VGPR})))
_FILE_WORDS = {RegFile.VGPR: "a VGPR", RegFile.AGPR: "an AGPR"}


def _spill_data_files(opcode: str) -> tuple[frozenset[RegFile] | None, frozenset[RegFile] | None]:
    """(files of the def, files of the first register use) a spill pseudo allows; None for
    any scalar register (an SReg class: SGPRs, VCC, M0, EXEC, ...); (None, None) when the
    opcode is not one this table knows, or the side does not apply."""
    if opcode.startswith("SI_SPILL_S") and opcode.endswith("_TO_VGPR"):
        return frozenset({RegFile.VGPR}), frozenset()
    if opcode.startswith("SI_RESTORE_S") and opcode.endswith("_FROM_VGPR"):
        return frozenset(), frozenset({RegFile.VGPR})
    if not opcode.endswith(("_SAVE", "_RESTORE")):
        return None, None
    files: frozenset[RegFile] = frozenset()  # an SReg class: no vector file
    if not opcode.startswith("SI_SPILL_S"):
        got = next((f for prefix, f in _SPILL_FILES if opcode.startswith(prefix)), None)
        if got is None:
            return None, None
        files = got
    return (files, None) if opcode.endswith("_RESTORE") else (None, files)


def _spill_file(fn: Function, block: int, idx: int, ins: Instruction,
                regs: list[tuple[Operand, PhysReg | None]]) -> list[Finding]:
    """A spill pseudo's data operand in a register file its definition does not take (a VGPR
    spill of an SGPR, an SGPR spill reloaded into VGPRs): llc's machine verifier refuses it
    ("Illegal physical register for instruction")."""
    want_def, want_use = _spill_data_files(ins.opcode)
    explicit = [(op, reg) for op, reg in regs if not op.is_implicit]
    checks = []
    d = next(((op, reg) for op, reg in explicit if op.is_def), None)
    u = next(((op, reg) for op, reg in explicit if not op.is_def), None)
    if want_def is not None and d is not None:
        checks.append((d, want_def))
    if want_use is not None and u is not None:
        checks.append((u, want_use))
    findings = []
    for (op, reg), files in checks:
        if reg is None or op.has("undef"):
            continue
        vector = reg.file in _VECTOR
        if (reg.file in files) if files else not vector:
            continue
        wanted = " or ".join(_FILE_WORDS[f] for f in sorted(files, key=lambda f: f.value)) if files else "a scalar register"
        findings.append(Finding(
            "class", LAYER, Place(fn.file, fn.name, block, idx, op.line, op.column),
            f"bb.{block} line {op.line}: `{ins.opcode}` takes {wanted} here, not ${reg.name} (llc's machine "
            "verifier: \"Illegal physical register for instruction\")", physregs=(f"${reg.name}",)))
    return findings


def _illegal_copy(fn: Function, block: int, idx: int, ins: Instruction,
                  regs: list[tuple[Operand, PhysReg | None]]) -> list[Finding]:
    explicit = [(op, reg) for op, reg in regs if not op.is_implicit]
    if len(explicit) != 2 or not explicit[0][0].is_def or explicit[1][0].is_def:
        return []
    (dop, dreg), (sop, sreg) = explicit
    if dreg is None or sreg is None or sop.has("undef") or dop.has("dead"):
        return []  # a dead COPY is a KILL to ExpandPostRAPseudos: it moves nothing
    why = copy_problem(dreg, sreg)
    if why is None:
        return []
    return [Finding("illegal-copy", LAYER, Place(fn.file, fn.name, block, idx, dop.line, dop.column),
                    f"bb.{block} line {dop.line}: `COPY` from ${sreg.name} into ${dreg.name}: {why}",
                    physregs=(f"${dreg.name}", f"${sreg.name}"))]


def _tie_source(ins: Instruction, use: Operand) -> str:
    """Where a tie comes from: the instruction's definition (its TableGen constraint) or the text."""
    if not use.tie_implied:
        return f"`(tied-def {use.tied_def})`"
    explicit = [o for o in ins.operands if not (o.kind == "reg" and o.is_implicit)]
    position = next(k for k, op in enumerate(explicit) if op is use)
    constraint = next((t.constraint for t in tie_constraints(ins.opcode) if t.use == position), None)
    return f"the instruction's definition: `{constraint}`" if constraint else "the instruction's definition"


def _vector_budget(fn: Function, target: Target, budget: Limits) -> list[Finding]:
    """On unified register files VGPRs (rounded up to 4) and AGPRs share one budget."""
    if not target.unified_vgpr_file:
        return []
    top = {RegFile.VGPR: 0, RegFile.AGPR: 0}
    where: dict[RegFile, Place] = {}
    for b in fn.blocks:
        for idx, ins in enumerate(b.instructions):
            for op in ins.operands:
                if op.kind == "reg" and op.phys is not None and op.has("renamable"):
                    reg = physreg_at(fn, op, op.phys)
                    if reg.file in top:
                        end = reg.index + max(1, len(reg.units) // 2)
                        if end > top[reg.file]:
                            top[reg.file] = end
                            where[reg.file] = Place(fn.file, fn.name, b.number, idx, op.line, op.column)
    used = ((top[RegFile.VGPR] + 3) // 4 * 4 if top[RegFile.AGPR] else top[RegFile.VGPR]) + top[RegFile.AGPR]
    place = where.get(RegFile.AGPR) or where.get(RegFile.VGPR)
    if place is None:
        return []
    what = (f"the function uses {top[RegFile.VGPR]} VGPRs and {top[RegFile.AGPR]} AGPRs ({used} registers of the "
            f"unified file)")
    if used > budget.total_vector:
        return [Finding("bounds", LAYER, place, f"{what}, beyond the {budget.total_vector} {target.name} allows it")]
    if budget.hint is not None and used > budget.hint.total_vector:
        return [Finding("budget", LAYER, place, f"{what}, beyond the {budget.hint.total_vector} its attributes ask for",
                        severity="warning")]
    return []
