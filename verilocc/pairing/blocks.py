"""Pair the blocks of the two programs by structure, not by number.

llc renumbers basic blocks when it prints a function again: a block that was printed last in
the virtual program (one made by a pass after the IR blocks, such as a flow block of the
control-flow structuriser) takes its place in layout order in the allocated program, and every
block after it moves up by one. The allocator itself never changes the CFG, so the two
functions have isomorphic CFGs and the pairing is found from their structure:

1. from the entry blocks, walk both CFGs in step, pairing the k-th successor of a paired block
   with its k-th successor on the other side (llc keeps the order of successor lists);
2. if that does not give one consistent bijection, pair the blocks in layout order;
3. a candidate counts only if every pair has the same IR block name (`bb.3.Flow` pairs only
   with a block named Flow) and every edge maps to an edge: it is then an isomorphism of the
   CFGs that respects names.

When neither candidate counts, the blocks stay paired by number and the CFG checks report the
difference. A paired allocated function is renumbered to the virtual program's numbers (block
numbers, successor lists and `%bb.N` operands), so every layer speaks of one numbering; the
source lines of findings still point into the allocated file.
"""

from __future__ import annotations

import dataclasses

from verilocc.analysis.cfg import build_cfg
from verilocc.mir.model import Function, Instruction, Operand


def _successors(fn: Function) -> dict[int, list[int]]:
    """Each block's successors in written order (inferred from branches and fall-through when
    llc wrote no list, as `analysis.cfg` does)."""
    cfg = build_cfg(fn)
    return {b.number: cfg.successors(b.number) for b in fn.blocks}


def _walk_in_step(pre: Function, post: Function, ps: dict[int, list[int]], qs: dict[int, list[int]]) -> dict[int, int] | None:
    if not pre.blocks or not post.blocks:
        return None
    pairing = {post.blocks[0].number: pre.blocks[0].number}
    taken = {pre.blocks[0].number}
    queue = [post.blocks[0].number]
    while queue:
        q = queue.pop(0)
        p = pairing[q]
        if len(qs[q]) != len(ps[p]):
            return None
        for qn, pn in zip(qs[q], ps[p]):
            if qn in pairing:
                if pairing[qn] != pn:
                    return None
            elif pn in taken:
                return None
            else:
                pairing[qn] = pn
                taken.add(pn)
                queue.append(qn)
    return pairing if len(pairing) == len(post.blocks) else None


def _consistent(pre: Function, post: Function, pairing: dict[int, int],
                ps: dict[int, list[int]], qs: dict[int, list[int]]) -> bool:
    if len(pairing) != len(post.blocks) or len(set(pairing.values())) != len(pre.blocks):
        return False
    names = {b.number: b.name for b in pre.blocks}
    for b in post.blocks:
        p = pairing.get(b.number)
        if p is None or names.get(p) != b.name:
            return False
        if sorted(pairing[s] for s in qs[b.number]) != sorted(ps[p]):
            return False
    return True


def pair_blocks(pre: Function, post: Function) -> dict[int, int]:
    """Allocated block number -> virtual block number. Identity when the numbers already agree
    or no structural pairing is consistent (the CFG checks then report the difference)."""
    identity = {b.number: b.number for b in post.blocks}
    if len(pre.blocks) != len(post.blocks):
        return identity
    ps, qs = _successors(pre), _successors(post)
    if _consistent(pre, post, identity, ps, qs):
        return identity
    for candidate in (_walk_in_step(pre, post, ps, qs),
                      {q.number: p.number for q, p in zip(post.blocks, pre.blocks)}):
        if candidate is not None and _consistent(pre, post, candidate, ps, qs):
            return candidate
    return identity


def _renumber_operand(op: Operand, pairing: dict[int, int]) -> Operand:
    if op.kind != "mbb" or not op.text.startswith("%bb."):
        return op
    head, _, rest = op.text[len("%bb."):].partition(".")
    if not head.isdigit() or int(head) not in pairing:
        return op
    return dataclasses.replace(op, text=f"%bb.{pairing[int(head)]}" + (f".{rest}" if rest else ""))


def _renumber_instruction(ins: Instruction, pairing: dict[int, int]) -> Instruction:
    if not any(op.kind == "mbb" for op in ins.operands):
        return ins
    return dataclasses.replace(ins, operands=[_renumber_operand(op, pairing) for op in ins.operands])


def renumbered(post: Function, pairing: dict[int, int]) -> Function:
    """A copy of `post` whose blocks carry the numbers `pairing` gives them (the input is not
    changed). Blocks keep their layout order."""
    if all(k == v for k, v in pairing.items()):
        return post
    blocks = [
        dataclasses.replace(
            b,
            number=pairing[b.number],
            successors=[(pairing.get(n, n), w) for n, w in b.successors],
            instructions=[_renumber_instruction(i, pairing) for i in b.instructions],
        )
        for b in post.blocks
    ]
    return dataclasses.replace(post, blocks=blocks)


def renumbering_note(pairing: dict[int, int]) -> str | None:
    moved = sorted((q, p) for q, p in pairing.items() if q != p)
    if not moved:
        return None
    shown = ", ".join(f"bb.{q} is bb.{p}" for q, p in moved)
    return (f"llc numbered the blocks of the allocated program differently; paired by structure ({shown}); "
            "findings use the virtual program's block numbers and the allocated file's lines")

