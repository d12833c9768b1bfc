"""Stack slot sharing for spill code: spilled values that are never live together share a slot.

LLVM's StackSlotColoring pass does this after register allocation from the live intervals of
the spill slots that its spiller records; llc started from a written post-RA file has no such
intervals and keeps every slot apart, so the spiller (`verilocc.allocators.spill`) shares the
slots itself, and the scratch memory a kernel needs (llc's ``; ScratchSize``) counts what is
live at once instead of every value ever spilled.

A slot's contents are live at a point when some path from it reaches a reload of the slot
without passing a store to it (every store the spiller writes covers the whole slot). Two
slots conflict when they are live at one point, or when one is stored where the other is
live (the store would overwrite it); a slot live into the entry block (a reload some path
reaches with nothing stored: the value is undefined there) conflicts with every slot, so that
such a reload never reads another value's bytes. Slots are coloured first fit, largest first;
a shared slot takes the size of its largest member. Only slots of the same `stack-id` share.

The verifier tracks every 16-bit lane of every stack slot as a location of value flow
(`docs/soundness.md`), so a reload from a slot that another value overwrote is REJECTED like
any other wrong allocation: sharing changes what is proved, never whether it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from collections.abc import Mapping

from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function, Instruction


@dataclass(frozen=True)
class Slot:
    """A spill slot the spiller added: its id, size in bytes and stack id."""

    id: int
    size: int
    stack_id: str


def slot_access(ins: Instruction, ids: frozenset[int] | set[int]) -> tuple[str, int] | None:
    """("store", slot) or ("reload", slot) for a spill pseudo naming one of `ids`, else None."""
    op = ins.opcode
    if not op.startswith("SI_SPILL_"):
        return None
    kind = "store" if op.endswith("_SAVE") else "reload" if op.endswith("_RESTORE") else None
    if kind is None:
        return None
    for o in ins.operands:
        if o.kind == "stack":
            m = re.fullmatch(r"%stack\.(\d+)(?:\.[^\s,]*)?", o.text)
            if m and int(m.group(1)) in ids:
                return kind, int(m.group(1))
    return None


def slot_conflicts(fn: Function, slots: list[Slot]) -> dict[int, set[int]]:
    """Per slot of `slots`, the slots of `slots` it may not share with (see the module)."""
    ids = {s.id for s in slots}
    index = {s.id: k for k, s in enumerate(slots)}
    everyone = (1 << len(slots)) - 1
    cfg = build_cfg(fn)
    blocks = {b.number: b for b in fn.blocks}
    accesses: dict[int, list[tuple[str, int] | None]] = {
        b.number: [slot_access(ins, ids) for ins in b.instructions] for b in fn.blocks}
    # Per block: slots read before any store to them (gen) and slots stored (kill).
    gen: dict[int, int] = {}
    kill: dict[int, int] = {}
    for n, acc in accesses.items():
        g = k = 0
        for a in reversed(acc):
            if a is None:
                continue
            bit = 1 << index[a[1]]
            if a[0] == "store":
                g &= ~bit
                k |= bit
            else:
                g |= bit
        gen[n], kill[n] = g, k
    live_in = {n: 0 for n in blocks}
    order = list(cfg.order) + [n for n in blocks if n not in set(cfg.order)]
    changed = True
    while changed:
        changed = False
        for n in reversed(order):
            after = 0
            for q in cfg.successors(n):
                after |= live_in.get(q, 0)
            new = gen[n] | (after & ~kill[n])
            if new != live_in[n]:
                live_in[n] = new
                changed = True
    conflict = [0] * len(slots)

    def together(mask: int) -> None:
        m = mask
        while m:
            low = m & -m
            conflict[low.bit_length() - 1] |= mask
            m ^= low

    for n in blocks:
        live = 0
        for q in cfg.successors(n):
            live |= live_in.get(q, 0)
        together(live)
        for a in reversed(accesses[n]):
            if a is None:
                continue
            k = index[a[1]]
            bit = 1 << k
            if a[0] == "store":
                conflict[k] |= live  # the store overwrites whatever is live after it
                m = live
                while m:
                    low = m & -m
                    conflict[low.bit_length() - 1] |= bit
                    m ^= low
                live &= ~bit
            else:
                live |= bit
            together(live)
    entry = live_in.get(cfg.entry, 0) if fn.blocks else 0
    m = entry
    while m:
        low = m & -m
        conflict[low.bit_length() - 1] = everyone
        m ^= low
    out: dict[int, set[int]] = {}
    for s in slots:
        k = index[s.id]
        out[s.id] = {slots[j].id for j in range(len(slots)) if j != k and (conflict[k] >> j & 1
                                                                          or conflict[j] >> k & 1)}
    return out


def colour_slots(fn: Function, slots: list[Slot]) -> tuple[dict[int, int], list[Slot]]:
    """Slots that may share: (old id -> the id of the slot it goes to, the slots that remain,
    each as large as its largest member). First fit, largest first, then by id."""
    conflicts = slot_conflicts(fn, slots)
    groups: list[tuple[Slot, list[int]]] = []  # (the remaining slot, its members)
    to: dict[int, int] = {}
    for s in sorted(slots, key=lambda s: (-s.size, s.id)):
        for g, (head, members) in enumerate(groups):
            if head.stack_id == s.stack_id and not any(m in conflicts[s.id] for m in members):
                members.append(s.id)
                to[s.id] = head.id
                break
        else:
            groups.append((s, [s.id]))
            to[s.id] = s.id
    remaining = sorted((Slot(head.id, max(next(x.size for x in slots if x.id == m) for m in members), head.stack_id)
                        for head, members in groups), key=lambda s: s.id)
    return to, remaining


def redundant_stores(fn: Function, slot_of: Mapping[VReg, int]) -> list[tuple[int, int]]:
    """(block, index) of the stores of a value into its slot that find the slot already
    holding it: on every path there, the last access of the slot stored or reloaded the
    value's own register and nothing defined that register since (a store at the end of a
    block that enters a second region of a value live through both, whose first store still
    holds). Forward over the CFG: a slot is *clean* after a store of its value's register or a
    reload into it, *dirty* after any other store to it or any def of the register, and clean
    at a join only when clean on every edge (dirty at the entry)."""
    owner = {n: v for v, n in slot_of.items()}
    ids = set(owner)
    if not ids:
        return []
    cfg = build_cfg(fn)
    blocks = {b.number: b for b in fn.blocks}
    order = list(cfg.order) + [n for n in blocks if n not in set(cfg.order)]
    preds: dict[int, list[int]] = {n: [] for n in blocks}
    for n in blocks:
        for q in cfg.successors(n):
            if q in preds:
                preds[q].append(n)
    everything = frozenset(ids)

    def step(clean: set[int], ins: Instruction) -> tuple[set[int], bool]:
        """The clean slots after `ins`, and whether `ins` is a store that finds its slot clean."""
        acc = slot_access(ins, ids)
        redundant = False
        if acc is not None:
            kind, n = acc
            reg = _register(ins, kind)
            if kind == "store":
                redundant = n in clean and reg == owner[n]
                clean = clean | {n} if reg == owner[n] else clean - {n}
            elif reg == owner[n]:
                return clean | {n}, False
        defined = {op.vreg for op in ins.operands if op.kind == "reg" and op.is_def and op.vreg is not None}
        if defined and (acc is None or acc[0] == "store"):
            clean = {n for n in clean if owner[n] not in defined}
        return clean, redundant

    out_state: dict[int, frozenset[int]] = {n: everything for n in blocks}
    entry = cfg.entry if fn.blocks else None
    changed = True
    while changed:
        changed = False
        for n in order:
            ps = preds[n]
            clean: set[int] = set() if n == entry or not ps else set.intersection(*(set(out_state[p]) for p in ps))
            for ins in blocks[n].instructions:
                clean, _ = step(clean, ins)
            if frozenset(clean) != out_state[n]:
                out_state[n] = frozenset(clean)
                changed = True
    found: list[tuple[int, int]] = []
    for n in order:
        ps = preds[n]
        clean = set() if n == entry or not ps else set.intersection(*(set(out_state[p]) for p in ps))
        for i, ins in enumerate(blocks[n].instructions):
            clean, redundant = step(clean, ins)
            if redundant:
                found.append((n, i))
    return found


def _register(ins: Instruction, kind: str) -> VReg | None:
    """The virtual register a spill store stores (its first register use) or a reload defines."""
    for op in ins.operands:
        if op.kind == "reg" and op.vreg is not None and (op.is_def == (kind == "reload")) and not op.subreg:
            return op.vreg
    return None


def rename_slots(fn: Function, to: dict[int, int]) -> None:
    """Point every stack operand and memory operand of `fn` naming a slot of `to` at its new slot."""
    moved = {a: b for a, b in to.items() if a != b}
    if not moved:
        return
    pattern = re.compile(r"%stack\.(\d+)(?![\d])")

    def sub(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return f"%stack.{moved.get(n, n)}"

    for b in fn.blocks:
        for ins in b.instructions:
            touched = False
            for op in ins.operands:
                if op.kind == "stack" and pattern.match(op.text):
                    new = pattern.sub(sub, op.text)
                    if new != op.text:
                        op.text = new
                        touched = True
            if touched and ins.mem:
                ins.mem = pattern.sub(sub, ins.mem)


__all__ = ["Slot", "colour_slots", "redundant_stores", "rename_slots", "slot_access", "slot_conflicts"]
