"""Connected live ranges: the generator's last pass over a program's MIR lines.

A generated program may define a virtual register several times on different paths; LLVM's
pre-RA code (and the verifier's pairing) expects each register's live range to be connected.
`split_components` renames the defs that belong to no common component, by reaching
definitions over the generator's CFG, and flags unread defs `dead` when asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from verilocc.fuzz.program import ProgramBuilder

_VREG = re.compile(r"(?P<undef>undef )?%(?P<id>\d+)(?P<sub>\.sub[\w]*)?(?P<cls>:\w+)?")
_TIED = ("V_FMAC_F32_e32", "_mac_e64", "_mac_vgprcd_e64", "V_MAC_F32_e32", "V_WRITELANE_B32")


Site = tuple[int, int]  # (block index, instruction index)
Span = tuple[int, int]  # where `%N` is in its line
# An instruction's operands: defs as (var, span, undef, has subregister), uses as (var, span).
Operands = tuple[list[tuple[int, Span, bool, bool]], list[tuple[int, Span]]]
State = dict[int, frozenset[Site]]  # var -> the def sites that reach a point
Value = tuple[int, Site]  # a var's def at a site


def split_components(g: ProgramBuilder, mark_dead: bool) -> None:
    """Give every connected component of a virtual register's values its own register.

    A register may be defined several times (PHI elimination leaves that), but like LLVM's
    pre-RA code each register's live range must be connected: the values that reach one use,
    a partial (subregister) def and the value it updates, and a tied def and its tied use
    belong together. Other defs are renamed to fresh registers of the same class, by reaching
    definitions over the CFG. This keeps the meaning of the program. With `mark_dead`, defs
    whose value nothing reads get the `dead` flag, as LiveIntervals leaves them before RA."""
    blocks = g.layout
    parsed = [[_operands(line) for line in b.instrs] for b in blocks]
    index = {id(b): i for i, b in enumerate(blocks)}
    preds: list[list[int]] = [[] for _ in blocks]
    for i, b in enumerate(blocks):
        for s in b.succs:
            preds[index[id(s)]].append(i)
    outs = _reaching_definitions(parsed, preds)
    comps = _Components(parsed, [b.instrs for b in blocks])
    for bi in range(len(blocks)):
        _transfer(parsed[bi], bi, _entry_state(outs, preds[bi]), comps.visit)
    names = comps.names(g)
    for bi, b in enumerate(blocks):
        for ii, line in enumerate(b.instrs):
            b.instrs[ii] = comps.renamed(line, bi, ii, names, mark_dead)


def _operands(line: str) -> Operands:
    cut = line.find(" = ")
    defs: list[tuple[int, Span, bool, bool]] = []
    uses: list[tuple[int, Span]] = []
    for m in _VREG.finditer(line):
        vid = int(m.group("id"))
        span = (m.start("id") - 1, m.end("id"))
        if 0 <= cut and m.start() < cut:
            defs.append((vid, span, bool(m.group("undef")), bool(m.group("sub"))))
        else:
            uses.append((vid, span))
    return defs, uses


def _entry_state(outs: list[State], preds: list[int]) -> State:
    """The definitions reaching a block's entry: those reaching its predecessors' ends."""
    state: State = {}
    for p in preds:
        for vid, sites in outs[p].items():
            state[vid] = state.get(vid, frozenset()) | sites
    return state


def _transfer(rows: list[Operands], bi: int, state: State, visit: Callable[[int, int, State], None] | None) -> State:
    """The definitions reaching the end of block `bi` from those at its entry; `visit` sees the
    state before each instruction."""
    st = dict(state)
    for ii, (defs, _uses) in enumerate(rows):
        if visit is not None:
            visit(bi, ii, st)
        for vid, _span, _u, _s in defs:
            st[vid] = frozenset({(bi, ii)})
    return st


def _reaching_definitions(parsed: list[list[Operands]], preds: list[list[int]]) -> list[State]:
    """Per block, var -> the def sites reaching its end (a fixed point)."""
    outs: list[State] = [{} for _ in parsed]
    changed = True
    while changed:
        changed = False
        for bi in range(len(parsed)):
            new = _transfer(parsed[bi], bi, _entry_state(outs, preds[bi]), None)
            if new != outs[bi]:
                outs[bi] = new
                changed = True
    return outs


class _Components:
    """The values of each var joined into components (union-find), the defs something reads,
    and the sites that reach each use."""

    def __init__(self, parsed: list[list[Operands]], lines: list[list[str]]) -> None:
        self.parsed, self.lines = parsed, lines
        self.parent: dict[Value, Value] = {}
        self.use_sites: dict[tuple[int, int, int], frozenset[Site]] = {}  # (block, instr, use#) -> reaching sites
        self.read: set[Value] = set()  # defs whose value something reads

    def find(self, x: Value) -> Value:
        parent = self.parent
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: Value, b: Value) -> None:
        self.parent[self.find(a)] = self.find(b)

    def visit(self, bi: int, ii: int, st: State) -> None:
        """Join the values that reach one use, and a partial or tied def with what it updates."""
        defs, uses = self.parsed[bi][ii]
        line = self.lines[bi][ii]
        for k, (vid, _span) in enumerate(uses):
            sites = st.get(vid, frozenset())
            self.use_sites[(bi, ii, k)] = sites
            self.read.update((vid, s2) for s2 in sites)
            for s2 in sites:
                self.union((vid, s2), (vid, min(sites)))
        tied = any(t in line for t in _TIED)
        for vid, _span, undef, sub in defs:
            self.find((vid, (bi, ii)))
            if (sub and not undef) or tied:
                for s2 in st.get(vid, frozenset()):
                    self.union((vid, (bi, ii)), (vid, s2))
                    self.read.add((vid, s2))

    def names(self, g: ProgramBuilder) -> dict[Value, int]:
        """One register per component; the component with the earliest def keeps the number."""
        names: dict[Value, int] = {}
        roots_by_var: dict[int, list[Value]] = {}
        for key in sorted(self.parent):
            r = self.find(key)
            if r not in roots_by_var.setdefault(key[0], []):
                roots_by_var[key[0]].append(r)
        for vid, roots in roots_by_var.items():
            for k, r in enumerate(roots):
                names[r] = vid if k == 0 else g.new_var(g.vars[vid].cls, g.vars[vid].file, g.vars[vid].n).id
        return names

    def renamed(self, line: str, bi: int, ii: int, names: dict[Value, int], mark_dead: bool) -> str:
        """Instruction `ii` of block `bi` with its registers renamed (and unread defs `dead`)."""
        defs, uses = self.parsed[bi][ii]
        edits: set[tuple[int, int, str]] = set()  # (start, end, replacement) in the original line
        for vid, (a, e), _u, _s in defs:
            edits.add((a, e, f"%{names[self.find((vid, (bi, ii)))]}"))
            start = _operand_start(line, a)
            if mark_dead and (vid, (bi, ii)) not in self.read and not line[start:].startswith("dead "):
                edits.add((start, start, "dead "))
        for k, (vid, (a, e)) in enumerate(uses):
            sites = self.use_sites.get((bi, ii, k), frozenset())
            if sites:
                edits.add((a, e, f"%{names[self.find((vid, next(iter(sites))))]}"))
        for a, e, text in sorted(edits, reverse=True):
            line = line[:a] + text + line[e:]
        return line


def _operand_start(line: str, at: int) -> int:
    """Where the operand whose register starts at `at` begins (before its flags)."""
    return line.rfind(", ", 0, at) + 2 if ", " in line[:at] else 0
