"""Align a virtual-register program with its allocated version, block by block.

The allocator keeps the CFG and the order of the original instructions; it adds and removes
only moves and bookkeeping. So the instructions of each block are split into
- *moves*: COPY, KILL and IMPLICIT_DEF, on either side. They are never paired; the value-flow
  layer gives each side its meaning (a pre COPY says two virtual registers hold one value, a
  post COPY moves values between locations);
- *spill code*: `SI_SPILL_*` and `SI_RESTORE_*` pseudos, only in the allocated program;
- *constant definitions* (moves of immediates and other pure defs with no register input):
  LLVM deletes, duplicates and moves them freely, so they are never paired;
- *real* instructions, paired by a longest common subsequence over their keys (opcode,
  instruction flags and every non-register operand): Myers' difference algorithm, exact when
  the two sequences differ by few instructions (`MAX_EDITS`), as an allocation's do; above
  that, difflib's matching blocks. Pairing is a guess that value flow then checks (a paired
  instruction must read the values its partner reads), so a worse pairing can only reject.
An unpaired pure instruction (one LLVM may rematerialise, `is_pure`) is a rematerialisation on
the post side and a deleted original on the pre side (`Role.REMAT` / `Role.REMAT_ORIGIN`):
value flow checks that a rematerialised copy reads the same inputs. Any other unpaired real
instruction is a finding: the allocated program added, dropped or changed an instruction.

Which instructions are moves, spill code, pure or removable is decided by their opcodes and
operands alone (`verilocc.analysis.instructions`); this module pairs them.
"""

from __future__ import annotations

import difflib
import enum
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from verilocc.analysis.instructions import (MOVE_OPCODES, is_constant_def, is_exec_save, is_pure, is_register_move,
                                            is_removable, is_spill_code, is_value_input, operation)
from verilocc.analysis.operands import VReg, physreg_at
from verilocc.errors import TargetError
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.target import RegisterClass, mask_to_slots, parse_physreg, subreg_mask


class Role(enum.Enum):
    MATCHED = "matched"
    MOVE = "move"  # COPY / KILL / IMPLICIT_DEF on its own side
    SPILL = "spill"  # SI_SPILL_* / SI_RESTORE_* (post only)
    REMAT = "remat"  # post: a rematerialised copy of a pre definition
    REMAT_ORIGIN = "remat-origin"  # pre: a rematerialisable or dead definition the allocator deleted
    ADDED = "added"  # post: an instruction with no counterpart
    DROPPED = "dropped"  # pre: an instruction with no counterpart


@dataclass(frozen=True)
class Step:
    """One step of the aligned walk through a block: a pre and/or a post instruction."""

    role: Role
    pre: int | None  # instruction index in the pre block
    post: int | None  # instruction index in the post block


def instruction_key(ins: Instruction) -> tuple[object, ...]:
    """What must be equal for a pre and a post instruction to be the same instruction."""
    others: list[str] = []
    explicit_regs = 0
    for op in ins.operands:
        if op.kind != "reg":
            others.append(op.text)
        elif not op.is_implicit:
            explicit_regs += 1
    return (ins.opcode, ins.instr_flags, tuple(others), explicit_regs, ins.mem)


def _operation_key(key: tuple[object, ...]) -> tuple[object, ...]:
    """An `instruction_key` with the opcode read as its `operation`."""
    return (operation(str(key[0])), *key[1:])


def whole_register_for_subregister(pi: Instruction, po: Operand, qo: Operand, post_units: int,
                                   classes: Mapping[VReg, RegisterClass]) -> bool:
    """Whether the allocated operand `qo` (of `post_units` units) names the whole register of
    the virtual register whose subregister `po` of `pi` names, as an allocator may write it
    where nothing reads it: an implicit use by an `S_NOP` (LLVM's fast allocator turns `S_NOP 0,
    implicit %0.sub1` into `S_NOP 0, implicit killed $vgpr4_vgpr5`)."""
    return (pi.opcode == "S_NOP" and qo.is_implicit and not qo.is_def and po.vreg is not None
            and bool(po.subreg) and post_units == classes[po.vreg].width_units)


# Implicit uses of an `S_NOP` above which `paired_operands` pairs by position only, and the
# partial pairings it tries before it gives up and does so.
_MAX_NOP_USES = 16
_NOP_SEARCH_BUDGET = 10_000


def paired_operands(pi: Instruction, qi: Instruction, post: Function,
                    classes: Mapping[VReg, RegisterClass]) -> Iterable[tuple[int, Operand, int, Operand]]:
    """The operands of the allocated instruction `qi` that stand for those of its partner `pi`:
    (position in `pi`, its operand, position in `qi`, its operand). The operand at the same position,
    except for the implicit uses of an `S_NOP`, which reads nothing: LLVM's fast allocator
    rewrites a killed subregister use there by deleting it and adding the whole register at
    the end (`MachineInstr::addRegisterKilled`), so `S_NOP 0, implicit %0.sub0, implicit
    %0.sub3` becomes `S_NOP 0, implicit killed $sgpr7, implicit killed $sgpr4_sgpr5_sgpr6_sgpr7`.
    Where the uses at the same positions name no one register per virtual register, they are
    paired by the registers they name (`_nop_use_pairs`); a use then read from the whole
    register stands for its subregister's lanes (`whole_register_for_subregister`)."""
    if pi.opcode == "S_NOP" and qi.opcode == "S_NOP":
        pairs = _nop_use_pairs(pi, qi, post, classes)
        if pairs is not None:
            return [(k, pi.operands[k], j, qi.operands[j]) for k, j in pairs]
    return zip(itertools.count(), pi.operands, itertools.count(), qi.operands)


def _nop_use_pairs(pi: Instruction, qi: Instruction, post: Function,
                   classes: Mapping[VReg, RegisterClass]) -> list[tuple[int, int]] | None:
    """Positions (in `pi`, in `qi`) pairing the implicit uses of two `S_NOP`s by register, or
    None where the positions pair them (or nothing does). Every use of `pi` takes a use of
    `qi` of its width, or, for a subregister, one of its virtual register's width; every use
    of `qi` stands for at least one; and the uses of one virtual register agree on where each
    of its lanes is. The first such pairing in the order that tries the same position first."""
    def implicit_uses(ins: Instruction) -> list[int]:
        return [k for k, op in enumerate(ins.operands) if op.kind == "reg" and op.is_implicit and not op.is_def]

    pre_uses, post_uses = implicit_uses(pi), implicit_uses(qi)
    if not pre_uses or len(pre_uses) > _MAX_NOP_USES or len(post_uses) > _MAX_NOP_USES:
        return None
    others = [k for k in range(len(pi.operands)) if k not in pre_uses]
    if others != [k for k in range(len(qi.operands)) if k not in post_uses]:
        return None
    try:
        units = {j: physreg_at(post, qi.operands[j], phys).units
                 for j in post_uses if (phys := qi.operands[j].phys) is not None}
        # what each use of `pi` needs: (virtual register or None, its slots, class width or units)
        needs: list[tuple[VReg | None, tuple[int, ...], int | tuple[int, ...]]] = []
        for k in pre_uses:
            po = pi.operands[k]
            if po.vreg is not None:
                width = classes[po.vreg].width_units
                slots = tuple(mask_to_slots(subreg_mask(po.subreg))) if po.subreg else tuple(range(width))
                needs.append((po.vreg, slots, width))
            elif po.phys is not None:
                needs.append((None, (), physreg_at(post, po, po.phys).units))
            else:
                return None
    except (TargetError, KeyError):
        return None
    if len(units) != len(post_uses):
        return None

    lanes: dict[VReg, dict[int, int]] = {}  # slot -> unit, per virtual register

    def place(need: tuple[VReg | None, tuple[int, ...], int | tuple[int, ...]], j: int) -> list[tuple[VReg, int]] | None:
        """Record where `need` is if it reads use `j` of `qi`: the (vreg, slot)s added, or None."""
        v, slots, width = need
        got = units[j]
        if v is None:
            return [] if got == width else None
        if len(got) == len(slots):
            at = dict(zip(slots, got))
        elif len(got) == width and len(slots) < width:
            at = dict(enumerate(got))
        else:
            return None
        known = lanes.setdefault(v, {})
        if any(known.get(s, u) != u for s, u in at.items()):
            return None
        added = [(v, s) for s in at if s not in known]
        known.update(at)
        return added

    chosen: list[int] = []
    budget = [_NOP_SEARCH_BUDGET]

    def search(i: int) -> bool:
        if i == len(pre_uses):
            return set(chosen) == set(post_uses)
        budget[0] -= 1
        if budget[0] < 0 or len(pre_uses) - i < len(set(post_uses).difference(chosen)):
            return False
        k = pre_uses[i]
        for j in sorted(post_uses, key=lambda j: j != k):
            added = place(needs[i], j)
            if added is None:
                continue
            chosen.append(j)
            if search(i + 1):
                return True
            chosen.pop()
            for v, s in added:
                del lanes[v][s]
        return False

    if not search(0) or chosen == pre_uses:
        return None
    return sorted([(k, k) for k in others] + list(zip(pre_uses, chosen)))


def recipe_key(ins: Instruction) -> tuple[object, ...]:
    """The key of how a pure instruction computes its value from its `value_inputs`: its
    `instruction_key` and which explicit register uses are among them. `V_MUL_F32_e32 0, undef
    %7` and `V_MUL_F32_e32 0, %8` have one instruction key, but the first reads no register: a
    value computed by one is not computed again by the other."""
    read = tuple(is_value_input(op) for op in _explicit_uses(ins))
    return (*instruction_key(ins), read)


# Insertions plus deletions up to which `common_subsequence` is exact (Myers' algorithm costs
# O((n + m) * edits)); repetitive blocks with rematerialised copies need the exact answer.
MAX_EDITS = 400


def common_subsequence(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of `a` and `b`, in order.

    difflib's matcher takes the longest contiguous run first, which in a repetitive block
    (address computations unrolled four times) can pair every instruction with the one a
    group later once the allocated program has extra instructions between the groups
    (rematerialised scalar loads): Myers' algorithm finds a longest common subsequence."""
    ids: dict[tuple[object, ...], int] = {}
    x_seq = [ids.setdefault(k, len(ids)) for k in a]
    y_seq = [ids.setdefault(k, len(ids)) for k in b]
    n, m = len(x_seq), len(y_seq)
    limit = min(n + m, MAX_EDITS)
    offset = limit + 1
    v = [0] * (2 * limit + 3)
    trace: list[list[int]] = []
    for d in range(limit + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and x_seq[x] == y_seq[y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                trace.append(v[:])
                return _backtrack(trace, offset, n, m)
        trace.append(v[:])
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(blk.a + k, blk.b + k) for blk in matcher.get_matching_blocks() for k in range(blk.size)]


def _backtrack(trace: list[list[int]], offset: int, n: int, m: int) -> list[tuple[int, int]]:
    """The diagonal moves (equal elements) of the path Myers' forward pass found."""
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        prev = trace[d - 1]
        k = x - y
        if k == -d or (k != d and prev[offset + k - 1] < prev[offset + k + 1]):
            prev_k = k + 1
            start_x = prev[offset + prev_k]  # a step down: one element of b only
        else:
            prev_k = k - 1
            start_x = prev[offset + prev_k] + 1  # a step right: one element of a only
        while x > start_x:
            x -= 1
            y -= 1
            pairs.append((x, y))
        x = prev[offset + prev_k]
        y = x - prev_k
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((x, y))
    pairs.reverse()
    return pairs


def _fixed_def(ins: Instruction) -> tuple[object, ...] | None:
    """The instruction key and physical register of an instruction with one explicit def, of a
    physical register marked `renamable`; None for any other. (Without the mark the allocated
    copy is not rematerialisable anyway, and a `renamable` def of that register with that key
    may be a virtual register's value rematerialised into it: `renamable $vgpr0 = V_MOV_B32_e32
    0` beside a call argument `$vgpr0 = V_MOV_B32_e32 0`.)"""
    defs = [op for op in ins.explicit_regs if op.is_def]
    if len(defs) != 1 or defs[0].phys is None or not defs[0].has("renamable"):
        return None
    return (*instruction_key(ins), defs[0].phys)


def _explicit_uses(ins: Instruction) -> list[Operand]:
    return [op for op in ins.explicit_regs if not op.is_def]


def _input_origins(block: list[Instruction], index: int,
                   def_keys: Mapping[VReg, tuple[object, ...] | None] | None) -> list[tuple[object, ...] | None]:
    """For each explicit register use of `block[index]`, the key of the instruction that
    defines what it reads, None where that is not one known instruction. A virtual register
    is looked up in `def_keys` (its one defining instruction in the function); a physical
    one is followed back within the block to its last writer (a move or spill counts as
    unknown: it carries a value from elsewhere)."""
    out: list[tuple[object, ...] | None] = []
    for op in _explicit_uses(block[index]):
        if op.vreg is not None:
            out.append(def_keys.get(op.vreg) if def_keys is not None else None)
            continue
        out.append(_last_writer_key(block, index, op))
    return out


def _units(op: Operand) -> frozenset[int]:
    if op.phys is None:
        return frozenset()
    try:
        reg = parse_physreg(op.phys)
        return frozenset((reg.subreg(op.subreg) if op.subreg else reg).units)
    except TargetError:
        return frozenset()


def _last_writer_key(block: list[Instruction], index: int, use: Operand) -> tuple[object, ...] | None:
    units = _units(use)
    while units:
        for k in range(index - 1, -1, -1):
            ins = block[k]
            if any(op.kind == "reg" and op.is_def and units & _units(op) for op in ins.operands):
                break
        else:
            return None
        if ins.opcode == "COPY" or is_register_move(ins):
            # A copy passes its source's value on: follow it back.
            source = _explicit_uses(ins)
            units, index = (_units(source[0]), k) if len(source) == 1 else (frozenset(), k)
            continue
        if ins.opcode in MOVE_OPCODES or is_spill_code(ins):
            return None
        return instruction_key(ins)
    return None


# Above this many candidate pairings a run of equal instructions keeps the longest common
# subsequence's pairing (in order, the first post candidate of each gap).
MAX_RUN_CELLS = 40_000
_CANNOT = -(1 << 30)


def _pair_equal_runs(pairs: list[tuple[int, int]], a: list[tuple[object, ...]], b: list[tuple[object, ...]],
                     pre: list[Instruction], post: list[Instruction], pre_real: list[int], post_real: list[int],
                     def_keys: Mapping[VReg, tuple[object, ...] | None]) -> list[tuple[int, int]]:
    """Re-pair each run of consecutive pairs of one rematerialisable key.

    Where the allocated block has more instructions of a key than the virtual one (LLVM
    rematerialised some), the longest common subsequence may pair any of them: in a run of
    equal `V_ADD_F32`s it may take a rematerialised copy for the original and shift every
    later pair by one. Within the run (every instruction of that key between the pairs
    around it), the pairing kept is the one in order that pairs as many as before and
    agrees best on where each paired instruction's inputs come from (`_input_origins`: a
    copy of `%110 = V_ADD %92, %53` rematerialised right before the original
    `%141 = V_ADD %86, %110` reads other kinds of value than %141 does) and on which
    registers they read (`_homes`: the registers the block's unambiguous pairs give each
    virtual register), and among those the one taking the earliest post instructions: LLVM
    puts a rematerialised copy after its original, right before its readers."""
    runs: list[tuple[int, int, list[int], list[int], bool]] = []
    n = 0
    while n < len(pairs):
        key = a[pairs[n][0]]
        end = n + 1
        while end < len(pairs) and a[pairs[end][0]] == key:
            end += 1
        lo_a = pairs[n - 1][0] if n else -1
        lo_b = pairs[n - 1][1] if n else -1
        hi_a = pairs[end][0] if end < len(pairs) else len(a)
        hi_b = pairs[end][1] if end < len(pairs) else len(b)
        xs = [x for x in range(lo_a + 1, hi_a) if a[x] == key]
        ys = [y for y in range(lo_b + 1, hi_b) if b[y] == key]
        ambiguous = not (len(ys) == end - n and len(xs) == end - n) and len(xs) * len(ys) <= MAX_RUN_CELLS \
            and all(is_pure(pre[pre_real[x]], allocated=False) for x in xs)
        runs.append((n, end, xs, ys, ambiguous))
        n = end
    if not any(r[4] for r in runs):
        return pairs
    homes = _homes([(pre[pre_real[ai]], post[post_real[bi]]) for n, end, _, _, amb in runs if not amb
                    for ai, bi in pairs[n:end]])
    out: list[tuple[int, int]] = []
    for n, end, xs, ys, ambiguous in runs:
        if not ambiguous:
            out.extend(pairs[n:end])
            continue
        want = [_input_origins(pre, pre_real[x], def_keys) for x in xs]
        got = [_input_origins(post, post_real[y], None) for y in ys]
        score = [[_agreement(w, g) + _home_agreement(pre[pre_real[x]], post[post_real[y]], homes)
                  for g, y in zip(got, ys)] for w, x in zip(want, xs)]
        if len(xs) <= len(ys):
            out.extend((xs[i], ys[j]) for i, j in _best_in_order(score))
        else:
            flipped = [[score[i][j] for i in range(len(xs))] for j in range(len(ys))]
            out.extend(sorted((xs[i], ys[j]) for j, i in _best_in_order(flipped)))
    return out


def _homes(pairs: list[tuple[Instruction, Instruction]]) -> dict[tuple[VReg, str | None], set[str]]:
    """The physical registers each virtual register (and subregister) has in these pairs."""
    homes: dict[tuple[VReg, str | None], set[str]] = {}
    for p, q in pairs:
        for po, qo in zip(p.explicit_regs, q.explicit_regs):
            if po.vreg is not None and qo.phys is not None:
                homes.setdefault((po.vreg, po.subreg), set()).add(qo.phys)
    return homes


def _home_agreement(p: Instruction, q: Instruction, homes: Mapping[tuple[VReg, str | None], set[str]]) -> int:
    """Uses of `p` whose virtual register has a known home: how many of `q`'s registers are
    one of them, less how many are not."""
    total = 0
    for po, qo in zip(_explicit_uses(p), _explicit_uses(q)):
        known = homes.get((po.vreg, po.subreg)) if po.vreg is not None else None
        if known and qo.phys is not None:
            total += 1 if qo.phys in known else -1
    return total


def _best_in_order(score: list[list[int]]) -> list[tuple[int, int]]:
    """Each row i paired, in order, with a column j (no fewer columns than rows): the pairing
    of the highest total score, and among those the one taking the earliest columns."""
    nx, ny = len(score), len(score[0]) if score else 0
    # best[i][j]: the best total pairing all rows from i with columns from j.
    best = [[_CANNOT] * (ny + 1) for _ in range(nx + 1)]
    best[nx] = [0] * (ny + 1)
    for i in range(nx - 1, -1, -1):
        for j in range(ny - nx + i, -1, -1):
            after = best[i + 1][j + 1]
            take = after + score[i][j] if after != _CANNOT else _CANNOT
            best[i][j] = max(take, best[i][j + 1])
    out: list[tuple[int, int]] = []
    j = 0
    for i in range(nx):
        while best[i + 1][j + 1] == _CANNOT or best[i + 1][j + 1] + score[i][j] != best[i][j]:
            j += 1
        out.append((i, j))
        j += 1
    return out


def _agreement(want: list[tuple[object, ...] | None], got: list[tuple[object, ...] | None]) -> int:
    """Inputs whose origins are known on both sides: the number that agree less the number
    that do not."""
    return sum((1 if w == g else -1) for w, g in zip(want, got) if w is not None and g is not None)


def vreg_def_keys(fn: Function) -> dict[VReg, tuple[object, ...] | None]:
    """The key of the instruction each virtual register's value comes from, through copies;
    None where that is not one instruction (several defs, a copy of a physical register or
    of a subregister)."""
    defs: dict[VReg, list[Instruction]] = {}
    for block in fn.blocks:
        for ins in block.instructions:
            for op in ins.operands:
                if op.kind == "reg" and op.is_def and op.vreg is not None:
                    defs.setdefault(op.vreg, []).append(ins)
    keys: dict[VReg, tuple[object, ...] | None] = {}
    for vreg in defs:
        seen: list[VReg] = []
        current: VReg | None = vreg
        key: tuple[object, ...] | None = None
        while current is not None and current not in keys and current not in seen and len(defs.get(current, [])) == 1:
            seen.append(current)
            ins = defs[current][0]
            current = None
            if ins.opcode == "COPY":
                source = _explicit_uses(ins)
                if len(source) == 1 and source[0].vreg is not None and not source[0].subreg:
                    current = source[0].vreg
            elif ins.opcode not in MOVE_OPCODES:
                key = instruction_key(ins)
        if current is not None and current in keys:
            key = keys[current]
        for v in seen or [vreg]:
            keys[v] = key
    return keys


def align_block(pre: list[Instruction], post: list[Instruction],
                known_keys: set[tuple[object, ...]] | None = None,
                def_keys: Mapping[VReg, tuple[object, ...] | None] | None = None) -> list[Step]:
    """Pair the real instructions of two versions of one block; keep program order.
    `def_keys` (`vreg_def_keys` of the virtual program) tells equal rematerialisable
    instructions apart by where their inputs come from."""
    pre_real = [i for i, ins in enumerate(pre) if ins.opcode not in MOVE_OPCODES and not is_constant_def(ins, False)]
    # A constant the virtual program writes to a physical register it marks renamable
    # (`renamable $sgpr0 = S_MOV_B32 0`, as some MIR tests write it) is an instruction of the
    # program, not a value the allocator may rematerialise: its allocated copy is paired like
    # any real instruction. (Those keys are gathered when an allocated constant def first asks.)
    fixed: set[tuple[object, ...] | None] | None = None

    def claimed(ins: Instruction) -> bool:
        nonlocal fixed
        if fixed is None:
            fixed = {_fixed_def(pre[i]) for i in pre_real} - {None}
        return bool(fixed) and _fixed_def(ins) in fixed

    post_real = [
        i for i, ins in enumerate(post)
        if ins.opcode not in MOVE_OPCODES and not is_spill_code(ins)
        and (not is_constant_def(ins, True) or claimed(ins))
    ]
    a = [instruction_key(pre[i]) for i in pre_real]
    b = [instruction_key(post[i]) for i in post_real]
    if a == b:  # what the matcher finds for equal sequences: one block, all of them
        pairs = [(k, k) for k in range(len(a))]
    else:
        pairs = common_subsequence(a, b)
        if len(pairs) < min(len(a), len(b)):
            # Instructions left unpaired may be one operation in two forms (`operation`): the
            # pairing of operations is taken where it pairs more instructions.
            ca, cb = [_operation_key(k) for k in a], [_operation_key(k) for k in b]
            if ca != a or cb != b:
                wider = common_subsequence(ca, cb)
                if len(wider) > len(pairs):
                    pairs, a, b = wider, ca, cb
    pairs = _pair_equal_runs(pairs, a, b, pre, post, pre_real, post_real, def_keys or {})
    pair_of_pre = {pre_real[ai]: post_real[bi] for ai, bi in pairs}
    steps: list[Step] = []
    j = 0  # next post instruction to emit
    for i, ins in enumerate(pre):
        if i in pair_of_pre:
            target = pair_of_pre[i]
            while j < target:
                steps.append(_post_only(post, j, known_keys))
                j += 1
            steps.append(Step(Role.MATCHED, i, target))
            j = target + 1
        elif ins.opcode in MOVE_OPCODES:
            steps.append(Step(Role.MOVE, i, None))
        elif is_pure(ins, allocated=False) or is_removable(ins):
            steps.append(Step(Role.REMAT_ORIGIN, i, None))
        else:
            steps.append(Step(Role.DROPPED, i, None))
    while j < len(post):
        steps.append(_post_only(post, j, known_keys))
        j += 1
    return steps


def _post_only(post: list[Instruction], j: int, known_keys: set[tuple[object, ...]] | None) -> Step:
    """Classify an unpaired instruction of the allocated program. A pure one rematerialises a
    definition only if the virtual program has an instruction with its key somewhere; a
    register move and a save of $exec are moves (`verilocc.pairing.steps`)."""
    ins = post[j]
    if ins.opcode in MOVE_OPCODES or is_register_move(ins) or is_exec_save(ins):
        return Step(Role.MOVE, None, j)
    if is_spill_code(ins):
        return Step(Role.SPILL, None, j)
    if is_pure(ins, allocated=True, fixed=True) and (known_keys is None or instruction_key(ins) in known_keys):
        return Step(Role.REMAT, None, j)
    return Step(Role.ADDED, None, j)


def remat_ambiguous_keys(pre: list[Instruction], post: list[Instruction]) -> set[tuple[object, ...]]:
    """Keys that occur more often in the allocated block (rematerialised copies): their
    pairing is a guess, so nothing but value flow may rely on it."""
    counts: dict[tuple[object, ...], int] = {}
    for ins in pre:
        k = instruction_key(ins)
        counts[k] = counts.get(k, 0) - 1
    for ins in post:
        k = instruction_key(ins)
        counts[k] = counts.get(k, 0) + 1
    return {k for k, c in counts.items() if c > 0}


@dataclass
class FunctionAlignment:
    steps: dict[int, list[Step]]  # block number -> aligned steps
    missing_blocks: list[int]  # pre blocks absent from post
    extra_blocks: list[int]  # post blocks absent from pre
    stack_pointers: frozenset[str]  # what the allocated program's spills may address slots by


def stack_pointers(fn: Function) -> frozenset[str]:
    """The registers (without `$`) through which a spill of `fn` addresses its stack slot:
    LLVM's storeRegToStackSlot writes the function's stack pointer,
    `machineFunctionInfo.stackPtrOffsetReg`: `$sgpr32` in code llc compiles from IR, LLVM's
    placeholder `$sp_reg` in many MIR tests and where the file does not say (the field's
    default)."""
    declared = str(fn.machine_function_info.get("stackPtrOffsetReg") or "").strip("'\" ").lstrip("$")
    return frozenset({declared or "sp_reg"})


def align_functions(pre: Function, post: Function) -> FunctionAlignment:
    post_blocks = {b.number: b for b in post.blocks}
    pre_blocks = {b.number: b for b in pre.blocks}
    known = {instruction_key(ins) for b in pre.blocks for ins in b.instructions}
    def_keys = vreg_def_keys(pre)
    steps: dict[int, list[Step]] = {}
    for num, pb in pre_blocks.items():
        if num in post_blocks:
            steps[num] = align_block(pb.instructions, post_blocks[num].instructions, known, def_keys)
    return FunctionAlignment(
        steps=steps,
        missing_blocks=sorted(set(pre_blocks) - set(post_blocks)),
        extra_blocks=sorted(set(post_blocks) - set(pre_blocks)),
        stack_pointers=stack_pointers(post),
    )
