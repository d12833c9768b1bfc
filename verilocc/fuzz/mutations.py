"""Mutation operators: turn a correct allocated program into (most likely) wrong ones.

Each operator takes an allocated module and a random source, changes one thing the way a
buggy allocator or a language model would, and returns a `Mutant` that says what changed and
where (block, instruction index, source line), or None when the program offers no place for
it. Operators never touch the input module (they work on a deep copy). They are used by the
test suite (each mutant must be REJECTED at the right place) and by `verilocc fuzz`.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass

from verilocc.errors import TargetError
from verilocc.fuzz import isa
from verilocc.mir.model import Function, Instruction, Module, Operand
from verilocc.target import RegFile, parse_physreg

# Opcodes with the same operands and a different meaning, for `change_opcode`.
OPCODE_SWAPS = {
    "V_ADD_F32_e32": "V_SUB_F32_e32",
    "V_SUB_F32_e32": "V_ADD_F32_e32",
    "V_MUL_F32_e32": "V_ADD_F32_e32",
    "V_ADD_U32_e32": "V_SUB_U32_e32",
    "V_SUB_U32_e32": "V_ADD_U32_e32",
    "V_ADD_U32_e64": "V_SUB_U32_e64",
    "V_AND_B32_e32": "V_OR_B32_e32",
    "V_OR_B32_e32": "V_XOR_B32_e32",
    "V_LSHLREV_B32_e32": "V_LSHRREV_B32_e32",
    "S_ADD_I32": "S_SUB_I32",
    "S_AND_B32": "S_OR_B32",
    "S_AND_B64": "S_OR_B64",
    "S_LSHL_B32": "S_LSHR_B32",
    "V_MAX_F32_e32": "V_MIN_F32_e32",
    "V_FMAC_F32_e32": "V_FMAC_F32_e32",
}


@dataclass(frozen=True)
class Mutant:
    module: Module
    kind: str
    function: str
    block: int
    index: int  # instruction index in the allocated block (before the change for drops)
    line: int
    description: str


# Opcode prefixes of branches and function ends: `drop_instruction` keeps them, and
# `move_exec_update` moves nothing among them.
_CONTROL = ("S_BRANCH", "S_CBRANCH", "S_ENDPGM", "SI_RETURN")

Operator = Callable[[Module, random.Random], "Mutant | None"]


def _sites(module: Module, pred: Callable[[Instruction], bool]) -> list[tuple[int, int, int]]:
    """(function index, block index, instruction index) of instructions satisfying pred."""
    out = []
    for fi, fn in enumerate(module.functions):
        for bi, b in enumerate(fn.blocks):
            for ii, ins in enumerate(b.instructions):
                if pred(ins):
                    out.append((fi, bi, ii))
    return out


def _pick(module: Module, rng: random.Random, pred: Callable[[Instruction], bool]
          ) -> tuple[Module, Function, int, Instruction, int] | None:
    sites = _sites(module, pred)
    if not sites:
        return None
    fi, bi, ii = rng.choice(sites)
    m = copy.deepcopy(module)
    fn = m.functions[fi]
    return m, fn, fn.blocks[bi].number, fn.blocks[bi].instructions[ii], ii


def _same_file_register(op: Operand, rng: random.Random, avoid: set[str]) -> str | None:
    """Another register of the same file and width, aligned like the original."""
    assert op.phys is not None
    try:
        reg = parse_physreg(op.phys)
    except TargetError:
        return None
    if reg.file not in (RegFile.VGPR, RegFile.SGPR, RegFile.AGPR) or len(reg.units) < 2:
        return None
    n = len(reg.units) // 2
    prefix = reg.file.value
    step = 4 if (reg.file is RegFile.SGPR and n > 2) else (2 if n > 1 else 1)
    top = 100 if reg.file is RegFile.SGPR else 250
    choices = [i for i in range(0, top - n, step) if i != reg.index]
    rng.shuffle(choices)
    for i in choices:
        name = "_".join(f"{prefix}{k}" for k in range(i, i + n))
        if name not in avoid:
            return name
    return None


def _retarget(op: Operand, name: str) -> None:
    op.phys = name
    op.subreg = None
    op.text = f"${name}"


def _is_real(ins: Instruction) -> bool:
    return ins.opcode not in ("COPY", "KILL", "IMPLICIT_DEF") and not ins.opcode.startswith(("SI_SPILL", "SI_RESTORE", "DBG_"))


def _renamable_uses(ins: Instruction) -> list[Operand]:
    return [op for op in ins.operands if op.kind == "reg" and not op.is_def and op.phys is not None
            and not op.is_implicit and not op.has("undef")]


def _mutant(m: Module, fn: Function, block: int, idx: int, ins: Instruction, kind: str, what: str) -> Mutant:
    return Mutant(m, kind, fn.name, block, idx, ins.line, what)


def _wrong_register(module: Module, rng: random.Random, kind: str, verb: str, where: Callable[[Instruction], bool],
                    operands: Callable[[Instruction], list[Operand]], first: bool = False,
                    avoid_own_only: bool = False) -> Mutant | None:
    """A register operand renamed to another register of its file and width: at an instruction
    `where` accepts, the first of `operands(ins)` or (unless `first`) one at random; the new
    register is none the instruction names (with `avoid_own_only`: not the operand's own)."""
    got = _pick(module, rng, lambda i: where(i) and any(_same_file_register_ok(o) for o in operands(i)))
    if got is None:
        return None
    m, fn, b, ins, idx = got
    ops = [o for o in operands(ins) if _same_file_register_ok(o)]
    op = ops[0] if first else rng.choice(ops)
    old = op.phys
    new = _same_file_register(op, rng, {old or ""} if avoid_own_only else {o.phys for o in ins.operands if o.phys})
    if new is None:
        return None
    _retarget(op, new)
    return _mutant(m, fn, b, idx, ins, kind, f"{ins.opcode} at line {ins.line} {verb} ${new} instead of ${old}")


def wrong_use(module: Module, rng: random.Random) -> Mutant | None:
    """A use reads another register than the one holding its value."""
    return _wrong_register(module, rng, "wrong-use", "reads", _is_real, _renamable_uses)


def _same_file_register_ok(op: Operand) -> bool:
    return op.phys is not None and op.phys.startswith(("vgpr", "sgpr", "agpr")) and "_hi16" not in op.phys and "_lo16" not in op.phys


def clobber_def(module: Module, rng: random.Random) -> Mutant | None:
    """A def writes another register (possibly one that holds a live value)."""
    return _wrong_register(module, rng, "clobber-def", "writes", _is_real, lambda i: [
        o for o in i.operands if o.is_def and not o.is_implicit and o.has("renamable")])


def wrong_reload_slot(module: Module, rng: random.Random) -> Mutant | None:
    """A reload reads another stack slot than the one its value was spilled to."""
    slots = {op.text for fn in module.functions for b in fn.blocks for i in b.instructions
             for op in i.operands if op.kind == "stack" and i.opcode.endswith("_SAVE")}
    got = _pick(module, rng, lambda i: i.opcode.endswith("_RESTORE") and any(o.kind == "stack" for o in i.operands))
    if got is None or len(slots) < 2:
        return None
    m, fn, b, ins, idx = got
    op = next(o for o in ins.operands if o.kind == "stack")
    others = sorted(slots - {op.text})
    new = rng.choice(others)
    old = op.text
    op.text = new
    if ins.mem:
        ins.mem = ins.mem.replace(old, new)
    return _mutant(m, fn, b, idx, ins, "wrong-reload-slot", f"{ins.opcode} at line {ins.line} reloads {new} instead of {old}")


def spill_wrong_register(module: Module, rng: random.Random) -> Mutant | None:
    """A spill stores another register than the value to spill."""
    return _wrong_register(module, rng, "spill-wrong-register", "spills", lambda i: i.opcode.endswith("_SAVE"),
                           _renamable_uses, first=True, avoid_own_only=True)


def _drop(module: Module, rng: random.Random, where: Callable[[Instruction], bool], kind: str,
          what: str = "") -> Mutant | None:
    """An instruction `where` accepts is deleted (`what`: said of it after its line)."""
    got = _pick(module, rng, where)
    if got is None:
        return None
    m, fn, b, ins, idx = got
    block = next(x for x in fn.blocks if x.number == b)
    del block.instructions[idx]
    return _mutant(m, fn, b, idx, ins, kind, f"{ins.opcode} at line {ins.line}{what} is dropped")


def drop_instruction(module: Module, rng: random.Random) -> Mutant | None:
    """An instruction of the program is missing."""
    return _drop(module, rng, lambda i: _is_real(i) and not i.opcode.startswith(_CONTROL), "drop-instruction")


def change_immediate(module: Module, rng: random.Random) -> Mutant | None:
    """An immediate operand changes."""
    got = _pick(module, rng, lambda i: _is_real(i) and i.opcode != "S_ENDPGM" and any(o.kind == "imm" for o in i.operands))
    if got is None:
        return None
    m, fn, b, ins, idx = got
    op = rng.choice([o for o in ins.operands if o.kind == "imm"])
    old = int(op.text)
    op.text = str(old + rng.choice([1, 2, 3, -1, 7]))
    return _mutant(m, fn, b, idx, ins, "change-immediate", f"{ins.opcode} at line {ins.line}: immediate {old} -> {op.text}")


def change_opcode(module: Module, rng: random.Random) -> Mutant | None:
    """An opcode is replaced by another with the same operands."""
    got = _pick(module, rng, lambda i: i.opcode in OPCODE_SWAPS and OPCODE_SWAPS[i.opcode] != i.opcode)
    if got is None:
        return None
    m, fn, b, ins, idx = got
    old = ins.opcode
    ins.opcode = OPCODE_SWAPS[old]
    return _mutant(m, fn, b, idx, ins, "change-opcode", f"line {ins.line}: {old} -> {ins.opcode}")


def swap_operands(module: Module, rng: random.Random) -> Mutant | None:
    """Two register uses of one instruction trade places."""
    def ok(i: Instruction) -> bool:
        uses = _renamable_uses(i)
        return _is_real(i) and len(uses) >= 2 and len({u.phys for u in uses}) >= 2 and \
            len({len(parse_physreg(u.phys).units) for u in uses if u.phys}) == 1
    got = _pick(module, rng, ok)
    if got is None:
        return None
    m, fn, b, ins, idx = got
    uses = _renamable_uses(ins)
    a, c = rng.sample([u for u in uses], 2)
    if a.phys == c.phys:
        return None
    a.phys, c.phys = c.phys, a.phys
    a.text, c.text = f"${a.phys}", f"${c.phys}"
    return _mutant(m, fn, b, idx, ins, "swap-operands", f"{ins.opcode} at line {ins.line}: swapped ${c.phys} and ${a.phys}")


def copy_wrong_source(module: Module, rng: random.Random) -> Mutant | None:
    """A copy inserted by the allocator reads the wrong source."""
    return _wrong_register(module, rng, "copy-wrong-source", "reads", lambda i: i.opcode == "COPY",
                           _renamable_uses, first=True)


# -- the thread dimension --------------------------------------------------------------------
def _numbered_units(name: str) -> tuple[str, ...] | None:
    try:
        units = isa.physical_units(name)
    except isa.UnmodelledConstruct:
        return None
    return units if all(isa.NUMBERED.match(u) for u in units) else None


def _register_names(fn: Function) -> set[str]:
    names = {op.phys for b in fn.blocks for i in b.instructions for op in i.operands
             if op.kind == "reg" and op.phys is not None}
    names.update(r.lstrip("$") for b in fn.blocks for r, _ in b.liveins)
    return names


def _call_registers(fn: Function) -> set[str]:
    """The 32-bit registers calls name (arguments, results, return address): the ABI's."""
    out: set[str] = set()
    for b in fn.blocks:
        for i in b.instructions:
            if i.opcode.startswith("SI_CALL"):
                callee = next((o for o in i.operands if o.kind == "reg" and not o.is_def and not o.is_implicit), None)
                for o in i.operands:
                    if o.kind == "reg" and o.phys and o is not callee:
                        out.update(_numbered_units(o.phys) or ())
    return out


def _rename_everywhere(fn: Function, old: str, new: str) -> int:
    count = 0
    for b in fn.blocks:
        b.liveins = [((r[:len(r) - len(r.lstrip("$"))] + new) if r.lstrip("$") == old else r, m) for r, m in b.liveins]
        for i in b.instructions:
            for op in i.operands:
                if op.kind == "reg" and op.phys == old:
                    _retarget(op, new)
                    count += 1
    return count


def other_file(module: Module, rng: random.Random) -> Mutant | None:
    """A register moves to a free register of another file: a VGPR or AGPR (or VGPR pair) into
    SGPRs, an SGPR (or SGPR pair) into VGPRs, at every place it is named. Only the file is
    wrong: the new register is named nowhere else, and preserved by calls where the old one
    was. What the hardware makes of it (a VALU result cannot go to an SGPR, a COPY from a VGPR
    to an SGPR cannot be lowered, an SGPR copied into a VGPR in some lanes is not the value
    in the others) is for the interpreter to say."""
    m = copy.deepcopy(module)
    sites = []
    for fi, fn in enumerate(m.functions):
        names = _register_names(fn)
        used_units = {u for reg in names for u in (_numbered_units(reg) or ())}
        fixed = {u for r, _ in fn.liveins for u in (_numbered_units(r) or ())} | _call_registers(fn) | {"sgpr32"}
        by_unit: dict[str, set[str]] = {}
        for reg in names:
            for u in _numbered_units(reg) or ():
                by_unit.setdefault(u, set()).add(reg)
        for reg in sorted(names):
            units = _numbered_units(reg)
            if not units or len(units) > 2 or any(u in fixed or by_unit[u] != {reg} for u in units):
                continue
            if units[0].startswith("ttmp"):
                continue
            sites.append((fi, reg, units, used_units))
    if not sites:
        return None
    fi, name, units, used_units = rng.choice(sites)
    fn = m.functions[fi]
    to = "sgpr" if units[0].startswith(("vgpr", "agpr")) else "vgpr"
    n = len(units)
    masks = {o.text for b in fn.blocks for i in b.instructions for o in i.operands if o.kind == "regmask"}
    kept = [isa.preserved_units(mask) or frozenset() for mask in masks]
    was_kept = any(u in k for k in kept for u in units)
    top = 100 if to == "sgpr" else 256
    choices = []
    for first in range(4 if to == "sgpr" else 0, top - n + 1, 2 if (to == "sgpr" and n == 2) else 1):
        new_units = [f"{to}{k}" for k in range(first, first + n)]
        if any(u in used_units or u == "sgpr32" for u in new_units):
            continue
        if was_kept and not all(u in k for k in kept for u in new_units):
            continue
        choices.append("_".join(new_units))
    if not choices:
        return None
    new = rng.choice(choices[:24])
    count = _rename_everywhere(fn, name, new)
    block = next((b for b in fn.blocks if any(o.kind == "reg" and o.phys == new for i in b.instructions
                                              for o in i.operands)), None)
    if block is None:
        return None  # named only in live-in lists: no instruction to mutate
    idx, ins = next((k, i) for k, i in enumerate(block.instructions)
                    if any(o.kind == "reg" and o.phys == new for o in i.operands))
    return _mutant(m, fn, block.number, idx, ins, "other-file",
                   f"${name} ({count} operands, first at line {ins.line}) moved to ${new}, another register file")


def lane_write_tie(module: Module, rng: random.Random) -> Mutant | None:
    """A lane write (V_WRITELANE_B32, SI_SPILL_S32_TO_VGPR) keeps the other lanes of another
    VGPR than the one it writes: its `vdst_in` no longer is its def."""
    got = _pick(module, rng, lambda i: i.opcode in ("V_WRITELANE_B32", "SI_SPILL_S32_TO_VGPR") and
                len(isa.explicit_operands(i)[1]) > 2 and isa.explicit_operands(i)[1][2].kind == "reg"
                and isa.explicit_operands(i)[1][2].phys is not None)
    if got is None:
        return None
    m, fn, b, ins, idx = got
    tied = isa.explicit_operands(ins)[1][2]
    old = tied.phys
    named = sorted(n for n in _register_names(fn) if n.startswith("vgpr") and n != old and _numbered_units(n)
                   and len(_numbered_units(n) or ()) == 1)
    new = rng.choice(named) if named and rng.random() < 0.7 else f"vgpr{rng.randrange(0, 64)}"
    if new == old:
        return None
    _retarget(tied, new)
    if not tied.tie_implied:
        tied.tied_def = None  # a printed `tied-def` goes; a tie the definition implies stays, as a re-read gives
    return _mutant(m, fn, b, idx, ins, "lane-write-tie",
                   f"{ins.opcode} at line {ins.line} keeps the lanes of ${new} instead of ${old}")


def _exec_update(i: Instruction) -> bool:
    """S_*_SAVEEXEC_*, or an instruction that puts EXEC back (`$exec = S_OR_B64 $exec, ...`,
    `$exec = S_MOV_B64 $sgprN` after a waterfall loop): not a terminator."""
    if isa.saveexec(i.opcode):
        return True
    return not i.opcode.endswith("_term") and any(
        o.kind == "reg" and o.is_def and not o.is_implicit and o.phys in ("exec", "exec_lo") for o in i.operands)


def drop_exec_update(module: Module, rng: random.Random) -> Mutant | None:
    """A SAVEEXEC or an EXEC restore is missing."""
    return _drop(module, rng, _exec_update, "drop-exec-update", " (EXEC)")


def move_exec_update(module: Module, rng: random.Random) -> Mutant | None:
    """A SAVEEXEC or an EXEC restore moves inside its block, before or after other
    instructions (never past the terminators)."""
    got = _pick(module, rng, _exec_update)
    if got is None:
        return None
    m, fn, b, ins, idx = got
    block = next(x for x in fn.blocks if x.number == b)
    body = [k for k, i in enumerate(block.instructions)
            if not (i.opcode.endswith("_term") or i.opcode.startswith(_CONTROL))]
    places = [k for k in body if k != idx]
    if not places:
        return None
    to = rng.choice(places)
    del block.instructions[idx]
    block.instructions.insert(to, ins)
    return _mutant(m, fn, b, to, ins, "move-exec-update",
                   f"{ins.opcode} at line {ins.line} (EXEC) moves {'up' if to < idx else 'down'} by {abs(to - idx)}")


OPERATORS: dict[str, Operator] = {
    "wrong-use": wrong_use,
    "clobber-def": clobber_def,
    "wrong-reload-slot": wrong_reload_slot,
    "spill-wrong-register": spill_wrong_register,
    "drop-instruction": drop_instruction,
    "change-immediate": change_immediate,
    "change-opcode": change_opcode,
    "swap-operands": swap_operands,
    "copy-wrong-source": copy_wrong_source,
    "other-file": other_file,
    "lane-write-tie": lane_write_tie,
    "drop-exec-update": drop_exec_update,
    "move-exec-update": move_exec_update,
}
