"""Lane-granular liveness of virtual and physical registers.

LLVM tracks subregister liveness on AMDGPU: a tuple's lanes live and die separately, and
the allocator may reuse dead lanes. So a live set maps each virtual register to the lane
mask that is live (2 bits per 32-bit subregister, LLVM's LaneBitmask convention), and holds
the 16-bit units of live physical registers.

Transfer (backward, one instruction): live_before = (live_after - defs) | uses, where
- a use reads its lanes unless it is `undef` (or a debug use);
- a def writes its lanes; a subregister def without `undef` leaves the other lanes alone;
- a subregister def with `undef` also ends the other lanes' live ranges: they are undefined
  above it, so no use after it keeps them live across it (LLVM's
  `LiveInterval::computeSubRangeUndefs`: the def is an "undef" point of the other lanes'
  subranges, where the search for reaching definitions stops);
- a def does not read, even when it is partial.
Blocks meet by union over successors; the fixed point is reached with a worklist.

A lane is *live* in LLVM's sense only where it may also have been defined: LiveIntervals
grow live ranges from defs to uses, so a lane that no path defines before a point is not live
there even if it is read later (LLVM reads undefined lanes of tuples freely). So a forward
"may be defined" analysis (union over predecessors) is computed too, and `walk_backward`
yields live lanes intersected with the lanes that may be defined after each instruction.
"""

from __future__ import annotations

import bisect
import dataclasses

from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field

from verilocc.analysis.cfg import CFG
from verilocc.analysis.operands import RegRef, VReg, full_mask, resolve_operand, vreg_classes
from verilocc.mir.model import Function, Instruction
from verilocc.target import RegisterClass


@dataclass
class LiveSet:
    vregs: dict[VReg, int] = field(default_factory=dict)
    units: set[int] = field(default_factory=set)

    def copy(self) -> LiveSet:
        return LiveSet(dict(self.vregs), set(self.units))

    def union_in(self, other: LiveSet) -> bool:
        changed = False
        for v, m in other.vregs.items():
            old = self.vregs.get(v, 0)
            if m & ~old:
                self.vregs[v] = old | m
                changed = True
        if not other.units <= self.units:
            self.units |= other.units
            changed = True
        return changed


@dataclass(frozen=True)
class Effect:
    """What one instruction reads and writes, for liveness. `kills[i]`: the lanes whose live
    range `defs[i]` ends (its own lanes, or all lanes of an `undef` subregister def)."""

    uses: tuple[RegRef, ...]
    defs: tuple[RegRef, ...]
    kills: tuple[int, ...] = ()

    def apply_backward(self, live: LiveSet) -> None:
        for d, kill in zip(self.defs, self.kills):
            if d.vreg is not None:
                m = live.vregs.get(d.vreg, 0) & ~kill
                if m:
                    live.vregs[d.vreg] = m
                else:
                    live.vregs.pop(d.vreg, None)
            else:
                live.units.difference_update(d.units)
        for u in self.uses:
            if u.vreg is not None:
                live.vregs[u.vreg] = live.vregs.get(u.vreg, 0) | u.mask
            else:
                live.units.update(u.units)


def instruction_effect(fn: Function, ins: Instruction, classes: dict[VReg, RegisterClass],
                       unread: Mapping[int, int] | None = None) -> Effect:
    """What `ins` reads and writes. `unread`: operand position -> lanes (a lane mask) of that
    use the instruction's results are known not to depend on; they are not read."""
    uses: list[RegRef] = []
    defs: list[RegRef] = []
    kills: list[int] = []
    if ins.opcode == "BUNDLE":
        # The header only summarises the bundled instructions, which are analysed themselves.
        return Effect((), ())
    for position, op in enumerate(ins.operands):
        if op.kind != "reg":
            continue
        ref = resolve_operand(fn, op, classes)
        if ref is None:
            continue
        if op.is_def:
            defs.append(ref)
            kills.append(full_mask(classes[ref.vreg]) if ref.vreg is not None and op.subreg and op.has("undef")
                         else ref.mask)
        elif not (op.has("undef") or op.has("debug-use") or op.has("internal")):
            if unread and position in unread and ref.vreg is not None:
                ref = dataclasses.replace(ref, mask=ref.mask & ~unread[position])
                if not ref.mask:
                    continue
            uses.append(ref)
    if ins.opcode.startswith("DBG_"):
        return Effect((), ())
    return Effect(tuple(uses), tuple(defs), tuple(kills))


@dataclass
class Liveness:
    cfg: CFG
    classes: dict[VReg, RegisterClass]
    effects: dict[int, list[Effect]]  # block -> per-instruction effects
    live_in: dict[int, LiveSet]
    live_out: dict[int, LiveSet]
    defined_in: dict[int, dict[VReg, int]]  # lanes that may be defined at block entry
    # block -> vreg -> (instruction indices, lanes of the entry state still defined after each,
    # lanes defined in the block up to and including each)
    block_defs: dict[int, dict[VReg, tuple[list[int], list[int], list[int]]]]

    def defined_after(self, block: int, index: int, v: VReg) -> int:
        """Lanes of `v` that may be defined just after instruction `index` of `block`."""
        mask = self.defined_in[block].get(v, 0)
        got = self.block_defs[block].get(v)
        if got is not None:
            idxs, keep, gen = got
            k = bisect.bisect_right(idxs, index)
            if k:
                mask = (mask & keep[k - 1]) | gen[k - 1]
        return mask

    def walk_backward(self, block: int, only: Set[VReg] | None = None) -> Iterator[tuple[int, LiveSet]]:
        """Yield (instruction index, live set after it), last instruction first.

        Virtual lanes are restricted to those that may be defined there, and registers to
        `only` when it is given. The yielded set is a fresh copy each time: callers may keep it.
        """
        live = self.live_out[block].copy()
        effs = self.effects[block]
        if not effs:
            return
        # `restricted` is the live set after instruction i restricted to the lanes that may be
        # defined there, in the order of `live` (so that callers' facts come out in a fixed
        # order). Going from i to i - 1, a register's live lanes change only where instruction
        # i reads or writes it, and its defined lanes only where i writes it: only the
        # registers instruction i names are recomputed.
        vregs = live.vregs

        def lanes(v: VReg, i: int) -> int:
            m = vregs.get(v, 0) if only is None or v in only else 0
            return m & self.defined_after(block, i, v) if m else 0

        last = len(effs) - 1
        restricted = {v: m for v in vregs if (m := lanes(v, last))}
        for i in range(last, -1, -1):
            yield i, LiveSet(dict(restricted), set(live.units))
            eff = effs[i]
            # `Effect.apply_backward`, noting the registers that leave `live` and come back at
            # its end (their place in the order changes).
            appended: list[VReg] = []
            for d, kill in zip(eff.defs, eff.kills):
                if d.vreg is not None:
                    m = vregs.get(d.vreg, 0) & ~kill
                    if m:
                        vregs[d.vreg] = m
                    else:
                        vregs.pop(d.vreg, None)
                else:
                    live.units.difference_update(d.units)
            for u in eff.uses:
                if u.vreg is not None:
                    if u.vreg in vregs:
                        vregs[u.vreg] |= u.mask
                    else:
                        vregs[u.vreg] = u.mask
                        appended.append(u.vreg)
                else:
                    live.units.update(u.units)
            rebuild = False
            for ref in (*eff.defs, *eff.uses):
                v = ref.vreg
                if v is None or v in appended:
                    continue
                m = lanes(v, i - 1)
                if m and v not in restricted and v in vregs:
                    rebuild = True  # it takes a place in the middle of the order
                elif m:
                    restricted[v] = m
                else:
                    restricted.pop(v, None)
            for v in appended:
                restricted.pop(v, None)
                if m := lanes(v, i - 1):
                    restricted[v] = m
            if rebuild:
                restricted = {v: m for v in vregs if (m := lanes(v, i - 1))}


def compute_liveness(fn: Function, cfg: CFG, classes: dict[VReg, RegisterClass] | None = None,
                     unread: Mapping[tuple[int, int], Mapping[int, int]] | None = None) -> Liveness:
    """Lane liveness of `fn`. `unread`: (block, instruction index) -> `instruction_effect`'s
    lanes not read (reads proved not to matter, `verilocc.semantics.valueflow.Anomaly`)."""
    classes = classes if classes is not None else vreg_classes(fn)
    unread = unread or {}
    effects = {b.number: [instruction_effect(fn, ins, classes, unread.get((b.number, i)))
                          for i, ins in enumerate(b.instructions)] for b in fn.blocks}
    live_in = {b: LiveSet() for b in cfg.order}
    live_out = {b: LiveSet() for b in cfg.order}
    order = cfg.reverse_postorder()[::-1]
    work = list(order)
    queued = set(work)
    while work:
        b = work.pop(0)
        queued.discard(b)
        out = LiveSet()
        for s in cfg.successors(b):
            out.union_in(live_in[s])
        live_out[b] = out
        live = out.copy()
        for eff in reversed(effects[b]):
            eff.apply_backward(live)
        if live.vregs != live_in[b].vregs or live.units != live_in[b].units:
            live_in[b] = live
            for p in cfg.predecessors(b):
                if p not in queued:
                    queued.add(p)
                    work.append(p)
    defined_in, block_defs = _may_be_defined(cfg, effects)
    return Liveness(cfg=cfg, classes=classes, effects=effects, live_in=live_in, live_out=live_out,
                    defined_in=defined_in, block_defs=block_defs)


def _may_be_defined(
    cfg: CFG, effects: dict[int, list[Effect]]
) -> tuple[dict[int, dict[VReg, int]], dict[int, dict[VReg, tuple[list[int], list[int], list[int]]]]]:
    """Forward: lanes that some path defines. A def adds its lanes; an `undef` subregister
    def also makes the register's other lanes undefined (LLVM's meaning of the flag)."""
    block_defs: dict[int, dict[VReg, tuple[list[int], list[int], list[int]]]] = {}
    gen: dict[int, dict[VReg, int]] = {}
    keep_all: dict[int, dict[VReg, int]] = {}
    for b, effs in effects.items():
        per: dict[VReg, tuple[list[int], list[int], list[int]]] = {}
        g: dict[VReg, int] = {}
        keep: dict[VReg, int] = {}
        for i, eff in enumerate(effs):
            for d in eff.defs:
                if d.vreg is None:
                    continue
                old_g, old_k = g.get(d.vreg, 0), keep.get(d.vreg, -1)
                if d.op.subreg and d.op.has("undef"):
                    new_g, new_k = d.mask, 0
                else:
                    new_g, new_k = old_g | d.mask, old_k
                if (new_g, new_k) != (old_g, old_k):
                    idxs, ks, gs = per.setdefault(d.vreg, ([], [], []))
                    idxs.append(i)
                    ks.append(new_k)
                    gs.append(new_g)
                    g[d.vreg], keep[d.vreg] = new_g, new_k
        block_defs[b] = per
        gen[b] = g
        keep_all[b] = keep
    defined_in: dict[int, dict[VReg, int]] = {b: {} for b in cfg.order}
    order = cfg.reverse_postorder()
    changed = True
    while changed:
        changed = False
        for b in order:
            inn: dict[VReg, int] = {}
            for p in cfg.predecessors(b):
                keep = keep_all[p]
                for v, m in defined_in[p].items():
                    m &= keep.get(v, -1)
                    if m:
                        inn[v] = inn.get(v, 0) | m
                for v, m in gen[p].items():
                    inn[v] = inn.get(v, 0) | m
            if inn != defined_in[b]:
                defined_in[b] = inn
                changed = True
    return defined_in, block_defs
