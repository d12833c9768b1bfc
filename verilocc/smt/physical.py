"""Layer 1 checks that need no virtual program and no solver: every operand of the allocated
program on its own.

Virtual registers left behind; registers that do not exist, lie outside the file or the
function's limits (`verilocc.target.limits`), or are misaligned; allocated (renamable)
operands in reserved registers; tied operands in different registers; early-clobber defs
that overlap a use of the same instruction; on unified VGPR/AGPR files, the two files'
combined size. The interference of values needs the virtual program: `verilocc.smt.constraints`.
"""

from __future__ import annotations

from verilocc.analysis.operands import VReg, function_limits, physreg_at
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.pairing.alignment import MOVE_OPCODES
from verilocc.target import PhysReg, RegFile, RegisterClass, Target
from verilocc.target.limits import NUMBERED_FILES, UNLIMITED, Limits, budget_warning, register_problem

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
    # (register, subregister, renamable, a move) -> the register and its problem: a register
    # is named many times, and its problem depends on nothing else.
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
                key = (op.phys, op.subreg, renamable, ins.opcode in MOVE_OPCODES)
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
    findings.extend(_vector_budget(fn, target, limits))
    findings.extend(budget_warned[f] for f in sorted(budget_warned, key=lambda x: x.value))
    return findings


def _register_check(fn: Function, op: Operand, target: Target, limits: Limits, renamable: bool,
                    move: bool) -> tuple[PhysReg, tuple[str, str] | None]:
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
    if problem is not None and problem[0] == "alignment" and reg.file is not RegFile.SGPR and move:
        # Generic opcodes (COPY expands register by register in copyPhysReg) have no alignment
        # constraint, and LLVM makes odd ones. Spill pseudos do: the machine verifier says
        # "Subtarget requires even aligned vector registers".
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
                               f"bb.{block} line {op.line}: `{ins.opcode}` ties its def ${dreg.name} to this use, "
                               f"but the use is in ${reg.name}", physregs=(f"${dreg.name}", f"${reg.name}")))
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
