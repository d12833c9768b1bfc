"""Reads of registers that no path defines, in an allocated program.

A forward "may be defined" analysis over 16-bit units: at function entry the function's and
the entry block's live-in registers are defined; every def (explicit or implicit, dead or
not) defines its units; blocks meet by union. A use none of whose SGPR/VGPR/AGPR units may be
defined on any path reads garbage. Partially defined tuples are not reported: LLVM legally
reads tuples whose unused lanes were never written. For the same reason, as in LLVM's machine
verifier, neither is a read of a register that the same instruction also reads as part of an
implicit use of a larger register (SGPR spill code stores each part of a partially defined
tuple this way); that larger use is checked itself. Special registers (EXEC, M0, ...) are set
up by hardware or the ABI and are not checked here.
"""

from __future__ import annotations

from verilocc.analysis.cfg import CFG
from verilocc.analysis.operands import physreg_at
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction
from verilocc.target import RegFile, Target, default_budget, function_reserved_registers, parse_physreg, reservations


def undefined_reads(fn: Function, cfg: CFG, target: Target) -> list[Finding]:
    # Registers the ABI sets up before the first instruction: reserved ones (stack pointer,
    # scratch resource, ...) and the function's declared live-ins.
    extra = function_reserved_registers(fn.machine_function_info, target)
    entry: set[int] = set(reservations(target, default_budget(target), extra).reserved_units)
    for name, _ in fn.liveins:
        entry.update(parse_physreg(name).units)
    if fn.blocks:
        for name, _ in fn.blocks[0].liveins:
            entry.update(parse_physreg(name).units)
    blocks = {b.number: b for b in fn.blocks}
    gen: dict[int, set[int]] = {}
    for blk in fn.blocks:
        g: set[int] = set()
        for ins in blk.instructions:
            for op in ins.operands:
                if op.kind == "reg" and op.is_def and op.phys is not None:
                    g.update(physreg_at(fn, op, op.phys).units)
        gen[blk.number] = g
    defined_in: dict[int, set[int]] = {b: set() for b in cfg.order}
    defined_in[cfg.entry] = set(entry)
    order = cfg.reverse_postorder()
    changed = True
    while changed:
        changed = False
        for b in order:
            inn = set(entry) if b == cfg.entry else set()
            for p in cfg.predecessors(b):
                inn |= defined_in[p] | gen[p]
            if inn != defined_in[b]:
                defined_in[b] = inn
                changed = True
    findings: list[Finding] = []
    for b in order:
        cur = set(defined_in[b])
        for idx, ins in enumerate(blocks[b].instructions):
            if not ins.opcode.startswith("DBG_") and ins.opcode not in ("KILL", "BUNDLE"):
                wider: list[frozenset[int]] | None = None
                for op in ins.operands:
                    if op.kind != "reg" or op.is_def or op.phys is None or op.has("undef") or op.has("internal"):
                        continue
                    reg = physreg_at(fn, op, op.phys)
                    if reg.file is RegFile.SPECIAL:
                        continue
                    if not cur.intersection(reg.units):
                        if wider is None:
                            wider = implicit_uses(fn, ins)
                        units = set(reg.units)
                        if any(len(w) > len(units) and units <= w for w in wider):
                            continue
                        findings.append(Finding(
                            "undefined-read", "constraints", Place(fn.file, fn.name, b, idx, op.line, op.column),
                            f"bb.{b} line {op.line}: `{ins.opcode}` reads ${reg.name}, which no path to it defines",
                            physregs=(f"${reg.name}",)))
            for op in ins.operands:
                if op.kind == "reg" and op.is_def and op.phys is not None:
                    cur.update(physreg_at(fn, op, op.phys).units)
    return findings


def implicit_uses(fn: Function, ins: Instruction) -> list[frozenset[int]]:
    """The units of each register the instruction reads through an implicit use."""
    return [frozenset(physreg_at(fn, op, op.phys).units) for op in ins.operands
            if op.kind == "reg" and op.is_implicit and not op.is_def and op.phys is not None]
