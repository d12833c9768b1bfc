"""The control-flow graph of a machine function.

Edges come from the `successors:` lists llc writes. When a block has none written (hand-made
MIR), they are inferred as llc's MIR parser does: the targets of branch operands, plus the
fall-through block unless the block ends in an unconditional branch or a return.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verilocc.mir.model import Block, Function

# Terminators after which control never falls through to the next block.
_NO_FALLTHROUGH = frozenset(
    {"S_BRANCH", "S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG", "S_SETPC_B64_return", "S_TRAP", "S_ENDPGM_SAVED"}
)


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
