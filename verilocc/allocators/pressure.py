"""Lower bounds on the registers any allocation of a function needs (register pressure).

Read by the SMT allocator (`verilocc.allocators.optimal`) to bound its search, and reported
with the line where the VGPR bound peaks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from verilocc.allocators.files import AGPR_FILE, SGPR_FILE, VCC_FILE, VGPR_FILE, phys_sides
from verilocc.analysis.liveness import Effect, Liveness
from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function, Operand


class Value(Protocol):
    """What the bounds read of a value (`verilocc.allocators.problem.Value`)."""

    width32: int
    allowed: dict[int, tuple[int, ...]]  # file code -> allowed first register indices


def pressure(fn: Function, liveness: Liveness, values: Mapping[VReg, Value],
             copies: list[tuple[Operand, Operand]]) -> dict[str, int]:
    """Lower bounds on the registers any allocation needs ("vector", "sgpr", "vgpr": values
    that only VGPRs can hold), and the line where the VGPR bound peaks.

    Counted after each instruction: lanes that are live *and defined on every path* there.
    Two such lanes always meet at a definition (the later of their last definitions on a path
    sees the other live), so they must differ, except when a COPY made one from the other:
    values joined by COPYs count once (their widest member), so the bound stays sound.
    Physical registers count only where some value may be placed: one beyond every value's
    registers (an argument in a register the budget reserves) takes nothing from them.
    `copies`: (destination, source) of the COPYs of `fn` (`FunctionFacts.copies`).
    """
    reach: dict[int, int] = {}  # file code -> slots below the highest a value may take
    for val in values.values():
        for code, idxs in val.allowed.items():
            if idxs:
                reach[code] = max(reach.get(code, 0), 2 * (idxs[-1] + val.width32))
    root = _copy_groups(values, copies)
    kind_of = {v: _kinds(val) for v, val in values.items()}
    must_in = _must_defined(fn, liveness)
    peak = {"vector": 0, "sgpr": 0, "vgpr": 0, "line": 0}
    blocks = {b.number: b for b in fn.blocks}
    for b in liveness.cfg.order:
        effects = liveness.effects[b]
        live_after = dict(liveness.walk_backward(b))
        must = dict(must_in[b])
        for idx, eff in enumerate(effects):
            _define(must, eff, blocks[b].instructions[idx].opcode)
            units: dict[str, dict[VReg | None, int]] = {"vector": {}, "sgpr": {}, "vgpr": {}}  # kind -> root -> lanes
            for w, m in live_after[idx].vregs.items():
                lanes = (m & must.get(w, 0)).bit_count()
                for kind in kind_of[w]:
                    by_root, r = units[kind], root(w)
                    if lanes > by_root.get(r, 0):
                        by_root[r] = lanes
            _add_physical(units, live_after[idx].units, reach)
            total = {k: sum(by_root.values()) for k, by_root in units.items()}
            if (total["vgpr"] + 1) // 2 > peak["vgpr"]:
                peak["vgpr"], peak["line"] = (total["vgpr"] + 1) // 2, blocks[b].instructions[idx].line
            peak["vector"] = max(peak["vector"], (total["vector"] + 1) // 2)
            peak["sgpr"] = max(peak["sgpr"], (max(0, total["sgpr"] - 4) + 1) // 2)  # VCC may hold 2
    return peak


def _copy_groups(values: Mapping[VReg, Value], copies: list[tuple[Operand, Operand]]) -> Callable[[VReg], VReg]:
    """The representative of each value's group of values joined by COPYs (union-find)."""
    parent: dict[VReg, VReg] = {v: v for v in values}

    def root(v: VReg) -> VReg:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for dst, src in copies:
        if dst.vreg in parent and src.vreg in parent:
            parent[root(dst.vreg)] = root(src.vreg)  # type: ignore[arg-type]
    return root


def _kinds(val: Value) -> tuple[str, ...]:
    """The bounds a value counts in: "vector" (and "vgpr" when only VGPRs can hold it), "sgpr"."""
    files = set(val.allowed)
    if files and files <= {VGPR_FILE.code, AGPR_FILE.code}:
        return ("vector", "vgpr") if files == {VGPR_FILE.code} else ("vector",)
    if files and files <= {SGPR_FILE.code, VCC_FILE.code}:
        return ("sgpr",)
    return ()


def _add_physical(units: dict[str, dict[VReg | None, int]], live: frozenset[int] | set[int] | tuple[int, ...],
                  reach: dict[int, int]) -> None:
    """Count the live physical units below the highest slot a value may take (`reach`)."""
    for side, m in phys_sides(live):
        holds = {VGPR_FILE.code: "vgpr", AGPR_FILE.code: "vector", SGPR_FILE.code: "sgpr"}.get(side.file)
        m &= (1 << max(0, reach.get(side.file, 0) - side.slot)) - 1
        if holds is not None and m:
            for k in (holds, "vector") if holds == "vgpr" else (holds,):
                units[k][None] = units[k].get(None, 0) + m.bit_count()


def _define(state: dict[VReg, int], eff: Effect, opcode: str = "") -> None:
    """Lanes defined after an instruction: a def adds its lanes; an `undef` subregister def
    leaves only its own (LLVM's meaning of the flag). IMPLICIT_DEF defines nothing here: the
    encoding lets its value share registers with anything."""
    if opcode == "IMPLICIT_DEF":
        return
    for d in eff.defs:
        if d.vreg is None:
            continue
        if d.op.subreg and d.op.has("undef"):
            state[d.vreg] = d.mask
        else:
            state[d.vreg] = state.get(d.vreg, 0) | d.mask


def _must_defined(fn: Function, liveness: Liveness) -> dict[int, dict[VReg, int]]:
    """Lanes defined on every path into each block (intersection over predecessors)."""
    blocks = {b.number: b for b in fn.blocks}
    cfg = liveness.cfg
    order = cfg.reverse_postorder()
    entry = cfg.entry
    state: dict[int, dict[VReg, int] | None] = {b: None for b in cfg.order}  # None: not reached yet
    state[entry] = {}
    changed = True
    while changed:
        changed = False
        for b in order:
            if b == entry:
                continue
            meet: dict[VReg, int] | None = None
            for p in cfg.predecessors(b):
                if state[p] is None:
                    continue
                out = dict(state[p])  # type: ignore[arg-type]
                for eff, ins in zip(liveness.effects[p], blocks[p].instructions):
                    _define(out, eff, ins.opcode)
                meet = out if meet is None else {v: m & out[v] for v, m in meet.items() if v in out and m & out[v]}
            if meet is not None and meet != state[b]:
                state[b] = meet
                changed = True
    return {b: (s or {}) for b, s in state.items()}
