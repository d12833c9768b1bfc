"""The control-flow graph of a machine function.

Edges come from the `successors:` lists llc writes. When a block has none written, they are
inferred as llc's MIR parser does: the targets of branch operands, plus the fall-through block
unless the block's last instruction is a barrier (an unconditional branch, a return, a tail
call, the end of the program). llc leaves the list out exactly where that guess is right: a
block that ends in a tail call and has no successors gets no list, a block that ends in
`S_TRAP` (not a barrier) and has none gets an empty one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verilocc.mir.model import Block, Function

# The barriers of LLVM 13 to 22 (`isBarrier`): control never falls through them to the next
# block. llc-19 and llc-22 parse a block ending in each with no fall-through edge
# (tests/test_analysis.py checks it), except the LLVM 22 tail calls SI_TCRETURN_GFX_WholeWave
# and SI_CS_CHAIN_TC_*_DVGPR, which the test cannot build and which are here as the tail calls
# they are variants of, and LLVM 13 and 14's return of amdgpu_gfx functions
# S_SETPC_B64_return_gfx; `S_TRAP`, `S_RFE_B64` and the conditional branches are not barriers.
_NO_FALLTHROUGH = frozenset({
    "S_BRANCH", "S_SETPC_B64", "S_SETPC_B64_return", "S_SETPC_B64_return_gfx", "SI_RETURN", "SI_RETURN_TO_EPILOG", "SI_WHOLE_WAVE_FUNC_RETURN",
    "S_ENDPGM", "S_ENDPGM_SAVED", "S_ENDPGM_ORDERED_PS_DONE",
    "SI_TCRETURN", "SI_TCRETURN_GFX", "SI_TCRETURN_CHAIN", "SI_TCRETURN_GFX_WholeWave",
    "SI_CS_CHAIN_TC_W32", "SI_CS_CHAIN_TC_W64", "SI_CS_CHAIN_TC_W32_DVGPR", "SI_CS_CHAIN_TC_W64_DVGPR",
})


@dataclass
class CFG:
    """Edges as adjacency lists without repeats, each in the order the edges were first met
    (blocks in layout order, each block's successors as written)."""

    function: Function
    order: list[int]  # block numbers in layout order
    succ: dict[int, list[int]] = field(default_factory=dict)
    pred: dict[int, list[int]] = field(default_factory=dict)

    def add_edge(self, a: int, b: int) -> None:
        for node in (a, b):
            if node not in self.succ:
                self.succ[node] = []
                self.pred[node] = []
        if b not in self.succ[a]:
            self.succ[a].append(b)
            self.pred[b].append(a)

    def successors(self, block: int) -> list[int]:
        return list(self.succ[block])

    def predecessors(self, block: int) -> list[int]:
        return list(self.pred[block])

    @property
    def entry(self) -> int:
        return self.order[0]

    def reverse_postorder(self) -> list[int]:
        seen: set[int] = set()
        post: list[int] = []
        # Iterative DFS in layout order of successors, for deterministic output.
        stack: list[tuple[int, int]] = [(self.entry, 0)]
        seen.add(self.entry)
        while stack:
            node, i = stack[-1]
            succ = self.successors(node)
            if i < len(succ):
                stack[-1] = (node, i + 1)
                nxt = succ[i]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, 0))
            else:
                stack.pop()
                post.append(node)
        rpo = post[::-1]
        # Unreachable blocks still get analysed, after the reachable ones.
        rpo.extend(b for b in self.order if b not in seen)
        return rpo


def _inferred_successors(block: Block, next_block: Block | None) -> list[int]:
    out: list[int] = []
    for ins in block.instructions:
        for op in ins.operands:
            if op.kind == "mbb":
                num = int(op.text[len("%bb."):].split(".")[0])
                if num not in out:
                    out.append(num)
    last = block.instructions[-1].opcode if block.instructions else ""
    if next_block is not None and last not in _NO_FALLTHROUGH and next_block.number not in out:
        out.append(next_block.number)
    return out


def build_cfg(fn: Function) -> CFG:
    order = [b.number for b in fn.blocks]
    cfg = CFG(function=fn, order=order, succ={n: [] for n in order}, pred={n: [] for n in order})
    for i, b in enumerate(fn.blocks):
        if b.successors_written:
            succ = [n for n, _ in b.successors]
        else:
            succ = _inferred_successors(b, fn.blocks[i + 1] if i + 1 < len(fn.blocks) else None)
        for s in succ:
            cfg.add_edge(b.number, s)
    return cfg


def _immediate_dominators(cfg: CFG) -> dict[int, int]:
    """Immediate dominators of the blocks reachable from the entry (the entry maps to itself),
    by the iterative algorithm of Cooper, Harvey and Kennedy over reverse postorder."""
    rpo = cfg.reverse_postorder()
    reachable = _reachable(cfg)
    rpo = [b for b in rpo if b in reachable]
    index = {b: i for i, b in enumerate(rpo)}
    idom: dict[int, int] = {cfg.entry: cfg.entry}

    def intersect(a: int, b: int) -> int:
        while a != b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            preds = [p for p in cfg.pred[b] if p in idom]
            if not preds:
                continue
            new = preds[0]
            for p in preds[1:]:
                new = intersect(p, new)
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def _reachable(cfg: CFG) -> set[int]:
    seen = {cfg.entry}
    work = [cfg.entry]
    while work:
        for s in cfg.succ[work.pop()]:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return seen


def loop_depths(cfg: CFG) -> dict[int, int]:
    """How many natural loops contain each block (0 outside loops; unreachable blocks 0).

    A back edge u -> h is one whose head h dominates u; the loop of h is h and every block
    that reaches a back edge's tail without passing h. Back edges to one head form one loop.
    """
    idom = _immediate_dominators(cfg)

    def dominates(a: int, b: int) -> bool:
        while True:
            if a == b:
                return True
            up = idom[b]
            if up == b:
                return False
            b = up

    bodies: dict[int, set[int]] = {}
    edges = sorted((u, h) for u in idom for h in cfg.succ[u])
    for u, h in edges:
        if not dominates(h, u):
            continue
        body = bodies.setdefault(h, {h})
        work = [u]
        while work:
            n = work.pop()
            if n in body:
                continue
            body.add(n)
            work.extend(p for p in cfg.pred[n] if p in idom and p not in body)
    depth = {b: 0 for b in cfg.order}
    for body in bodies.values():
        for n in body:
            depth[n] += 1
    return depth
