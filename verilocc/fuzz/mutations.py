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

from verilocc.mir.model import Function, Instruction, Module, Operand
from verilocc.errors import TargetError
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


def drop_instruction(module: Module, rng: random.Random) -> Mutant | None:
    """An instruction of the program is missing."""
    got = _pick(module, rng, lambda i: _is_real(i) and not i.opcode.startswith(("S_BRANCH", "S_CBRANCH", "S_ENDPGM", "SI_RETURN")))
    if got is None:
        return None
    m, fn, b, ins, idx = got
    block = next(x for x in fn.blocks if x.number == b)
    del block.instructions[idx]
    return _mutant(m, fn, b, idx, ins, "drop-instruction", f"{ins.opcode} at line {ins.line} is dropped")


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
}
