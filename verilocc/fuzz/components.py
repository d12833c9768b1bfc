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


def split_components(g: ProgramBuilder, mark_dead: bool) -> None:
    """Give every connected component of a virtual register's values its own register.

    A register may be defined several times (PHI elimination leaves that), but like LLVM's
    pre-RA code each register's live range must be connected: the values that reach one use,
    a partial (subregister) def and the value it updates, and a tied def and its tied use
    belong together. Other defs are renamed to fresh registers of the same class, by reaching
    definitions over the CFG. This keeps the meaning of the program. With `mark_dead`, defs
    whose value nothing reads get the `dead` flag, as LiveIntervals leaves them before RA."""
    blocks = g.layout
    Site = tuple[int, int]  # (block index, instruction index)
    Span = tuple[int, int]
    # Operands per instruction: defs as (var, span of `%N`, undef, has subregister), uses as (var, span).
    parsed: list[list[tuple[list[tuple[int, Span, bool, bool]], list[tuple[int, Span]]]]] = []
    for b in blocks:
        rows = []
        for line in b.instrs:
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
            rows.append((defs, uses))
        parsed.append(rows)
    index = {id(b): i for i, b in enumerate(blocks)}
    succs = [[index[id(s)] for s in b.succs] for b in blocks]
    # Reaching definitions: per block, var -> sites reaching its end.
    outs: list[dict[int, frozenset[Site]]] = [{} for _ in blocks]
    changed = True
    preds: list[list[int]] = [[] for _ in blocks]
    for i, ss in enumerate(succs):
        for j in ss:
            preds[j].append(i)

    State = dict[int, frozenset[Site]]

    def transfer(bi: int, state: State, visit: Callable[[int, int, State], None] | None) -> State:
        st = dict(state)
        for ii, (defs, _uses) in enumerate(parsed[bi]):
            if visit is not None:
                visit(bi, ii, st)
            for vid, _span, _u, _s in defs:
                st[vid] = frozenset({(bi, ii)})
        return st

    while changed:
        changed = False
        for bi in range(len(blocks)):
            state: dict[int, frozenset[Site]] = {}
            for p in preds[bi]:
                for vid, sites in outs[p].items():
                    state[vid] = state.get(vid, frozenset()) | sites
            new = transfer(bi, state, None)
            if new != outs[bi]:
                outs[bi] = new
                changed = True
    parent: dict[tuple[int, Site], tuple[int, Site]] = {}

    def find(x: tuple[int, Site]) -> tuple[int, Site]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: tuple[int, Site], b: tuple[int, Site]) -> None:
        parent[find(a)] = find(b)

    use_sites: dict[tuple[int, int, int], frozenset[Site]] = {}  # (block, instr, use#) -> reaching sites
    read: set[tuple[int, Site]] = set()  # defs whose value something reads

    def visit(bi: int, ii: int, st: dict[int, frozenset[Site]]) -> None:
        defs, uses = parsed[bi][ii]
        line = blocks[bi].instrs[ii]
        for k, (vid, _span) in enumerate(uses):
            sites = st.get(vid, frozenset())
            use_sites[(bi, ii, k)] = sites
            read.update((vid, s2) for s2 in sites)
            for s2 in sites:
                union((vid, s2), (vid, min(sites)))
        tied = any(t in line for t in _TIED)
        for vid, _span, undef, sub in defs:
            find((vid, (bi, ii)))
            if (sub and not undef) or tied:
                for s2 in st.get(vid, frozenset()):
                    union((vid, (bi, ii)), (vid, s2))
                    read.add((vid, s2))

    for bi in range(len(blocks)):
        state = {}  # reaching definitions at the block's entry
        for p in preds[bi]:
            for vid, sites in outs[p].items():
                state[vid] = state.get(vid, frozenset()) | sites
        transfer(bi, state, visit)
    # One register per component; the component with the earliest def keeps the number.
    names: dict[tuple[int, Site], int] = {}
    roots_by_var: dict[int, list[tuple[int, Site]]] = {}
    for key in sorted(parent):
        r = find(key)
        if r not in roots_by_var.setdefault(key[0], []):
            roots_by_var[key[0]].append(r)
    for vid, roots in roots_by_var.items():
        for k, r in enumerate(roots):
            names[r] = vid if k == 0 else g.new_var(g.vars[vid].cls, g.vars[vid].file, g.vars[vid].n).id
    for bi, b in enumerate(blocks):
        for ii, line in enumerate(b.instrs):
            defs, uses = parsed[bi][ii]
            edits: set[tuple[int, int, str]] = set()  # (start, end, replacement) in the original line
            for vid, (a, e), _u, _s in defs:
                edits.add((a, e, f"%{names[find((vid, (bi, ii)))]}"))
                start = _operand_start(line, a)
                if mark_dead and (vid, (bi, ii)) not in read and not line[start:].startswith("dead "):
                    edits.add((start, start, "dead "))
            for k, (vid, (a, e)) in enumerate(uses):
                sites = use_sites.get((bi, ii, k), frozenset())
                if sites:
                    edits.add((a, e, f"%{names[find((vid, next(iter(sites))))]}"))
            for a, e, text in sorted(edits, reverse=True):
                line = line[:a] + text + line[e:]
            b.instrs[ii] = line


def _operand_start(line: str, at: int) -> int:
    """Where the operand whose register starts at `at` begins (before its flags)."""
    return line.rfind(", ", 0, at) + 2 if ", " in line[:at] else 0
