"""What to spill, and to which home: one round's choice by cost (`verilocc.allocators.spill`
describes the rules).

`choose` finds the points over the budget (`_Pressure`: lanes live after each instruction per
kind, and at calls what the call keeps), prices every value live there (`costs`: what
spilling it in its region writes, at block frequency) and spills, from the most over point
down, the cheapest values per over-budget point they span. `forced` spills the values a
colouring could not place, wherever they live.
"""

from __future__ import annotations

from verilocc.allocators.problem import vreg_key
from verilocc.allocators.spill_budget import (KINDS, Caps, agpr_home_across, at_call, budget_caps, call_caps,
                                              fits_across, kinds, phys_kinds)
from verilocc.allocators.spill_code import SPILL_BITS, av_class
from verilocc.allocators.spill_placement import Rewriter, boundaries, region, terminator_start, vregs_of
from verilocc.analysis.calls import call_mask, sgpr_striped
from verilocc.analysis.cfg import CFG, build_cfg
from verilocc.analysis.instructions import is_constant_def
from verilocc.analysis.liveness import Liveness, LiveSet, compute_liveness
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.mir.model import Function, Instruction
from verilocc.target import RegFile, RegisterClass
from verilocc.target.limits import Limits
from verilocc.target.regmasks import RegMask

#: Estimated executions of a block per enclosing loop (LLVM's block frequency is similar).
LOOP_WEIGHT = 8

#: A point over the budget: (excess registers, block, kind, the live values of that kind that
#: may be spilled there with their live lanes).
Over = tuple[int, int, str, dict[VReg, int]]


class CannotSpill(Exception):
    """No value left to spill at a point over the budget."""


def agpr_split(state: Rewriter, cls: RegisterClass) -> bool:
    """Whether a value of `cls` may live in an AGPR: on a unified file whose budget goes
    beyond the VGPRs (LLVM 19 reserves every AGPR of a function that uses none when its
    VGPR budget is at most the VGPR file, and llc rejects such an AGPR)."""
    limits = state.limits
    return (state.target.unified_vgpr_file and limits.agprs > 0 and limits.total_vector > limits.vgprs
            and av_class(cls) is not None)


# --------------------------------------------------------------------------------------------
# One round
# --------------------------------------------------------------------------------------------
def choose(state: Rewriter, caps: Caps) -> dict[VReg, str]:
    """Values to spill in this round and their homes (empty when every point fits); the
    points over the budget go to `state.evict`, the regions to `state.plan`."""
    fn, limits = state.fn, state.limits
    classes = vreg_classes(fn)
    kinds_of = {v: kinds(c, limits) for v, c in classes.items()}
    cfg = build_cfg(fn)
    liveness = compute_liveness(fn, cfg, classes)
    no_lane = _no_lane(fn, liveness, kinds_of, caps, limits)
    pressure = _Pressure(state, caps, classes, kinds_of)
    pressure.walk(cfg, liveness)
    if not pressure.over:
        return {}
    state.evict = {b: sorted(ix) for b, ix in pressure.evict.items()}
    live_in = _live_in(liveness)
    hot, regions, priced = _priced(state, pressure.over, classes, live_in, cfg)
    chosen = _pick(state, caps, pressure.over, classes, priced, hot, no_lane, pressure.no_agpr_home)
    state.plan(chosen, {v: regions[v] for v in chosen}, live_in, cfg, liveness)
    return chosen


class _Pressure:
    """The points of one round over the budget (`over`, and per block the instructions after
    which they lie, `evict`), and the VGPR values live across a call that keeps no AGPR tuple
    of their width within the budget (`no_agpr_home`: an AGPR home could not live across it
    either)."""

    def __init__(self, state: Rewriter, caps: Caps, classes: dict[VReg, RegisterClass],
                 kinds_of: dict[VReg, tuple[str, ...]]) -> None:
        self.state = state
        self.caps = caps
        self.classes = classes
        self.kinds = kinds_of
        self.cap = {"vgpr": caps.vgpr, "vector": caps.vector, "sgpr": caps.sgpr, "agpr": caps.agpr}
        self.phys_kind = phys_kinds()
        self.striped = sgpr_striped(state.fn)
        self.blocks = {blk.number: blk for blk in state.fn.blocks}
        self.fits: dict[tuple[str, str, frozenset[int]], bool] = {}  # (class, mask, call defs) -> it fits across
        self.over: list[Over] = []
        self.evict: dict[int, list[int]] = {}
        self.no_agpr_home: set[VReg] = set()

    def walk(self, cfg: CFG, liveness: Liveness) -> None:
        for b in cfg.order:
            for idx, live in liveness.walk_backward(b):
                ins = self.blocks[b].instructions[idx]
                mask = call_mask(ins, self.striped)
                if mask is not None:
                    self._across_call(b, idx, ins, mask, live)
                self._at_point(b, idx, live, liveness)

    def _mark(self, excess: int, b: int, idx: int, kind: str, live: dict[VReg, int]) -> None:
        """Point `idx` of block `b` is `excess` registers of `kind` over: `live` may be spilled."""
        self.over.append((excess, b, kind, live))
        if not self.evict.get(b) or self.evict[b][-1] != idx:
            self.evict.setdefault(b, []).append(idx)

    def _of_kind(self, live: LiveSet, k: str) -> dict[VReg, int]:
        return {v: m for v, m in live.vregs.items() if k in self.kinds.get(v, ())}

    def _across_call(self, b: int, idx: int, ins: Instruction, mask: RegMask, live: LiveSet) -> None:
        """Values live after a call live across it: they fit the registers it keeps, by count,
        and each in a register of its shape (striped masks keep short runs)."""
        limits, defined = at_call(ins, self.state.limits)
        kept = call_caps(mask, self.caps, limits)
        target = self.state.target
        for k in KINDS:
            of_kind = self._of_kind(live, k)
            excess = (sum(m.bit_count() for m in of_kind.values()) + 1) // 2 - getattr(kept, k)
            if excess > 0:
                self._mark(excess, b, idx, k, of_kind)
            homeless: dict[VReg, int] = {}
            for v, m in of_kind.items():
                key = (self.classes[v].name, mask.name, defined)
                if key not in self.fits:
                    self.fits[key] = fits_across(self.classes[v], mask, target, limits, self.caps)
                if not self.fits[key]:
                    homeless[v] = m
            if homeless:
                self._mark(sum((m.bit_count() + 1) // 2 for m in homeless.values()), b, idx, k, homeless)
        for v in live.vregs:
            if "vgpr" in self.kinds.get(v, ()) and agpr_split(self.state, self.classes[v]):
                key = (f"agpr:{self.classes[v].name}", mask.name, defined)
                if key not in self.fits:
                    self.fits[key] = agpr_home_across(self.classes[v], mask, target, limits, self.caps)
                if not self.fits[key]:
                    self.no_agpr_home.add(v)

    def _at_point(self, b: int, idx: int, live: LiveSet, liveness: Liveness) -> None:
        """The lanes live after instruction `idx` of block `b` per kind against the caps; dead
        defs take their registers, and so do the inputs of an instruction with an
        early-clobber def (it writes while they are still read)."""
        lanes = dict.fromkeys(KINDS, 0)
        for v, m in live.vregs.items():
            n = m.bit_count()
            for k in self.kinds.get(v, ()):
                lanes[k] += n
        effect = liveness.effects[b][idx]
        units = set(live.units)
        for d in effect.defs:  # a dead def still takes its registers
            if d.vreg is not None:
                n = (d.mask & ~live.vregs.get(d.vreg, 0)).bit_count()
                for k in self.kinds.get(d.vreg, ()):
                    lanes[k] += n
            else:
                units.update(d.units)
        if any(d.op.has("early-clobber") for d in effect.defs):
            read: dict[VReg, int] = {}
            for use in effect.uses:
                if use.vreg is not None:
                    read[use.vreg] = read.get(use.vreg, 0) | (use.mask & ~live.vregs.get(use.vreg, 0))
                else:
                    units.update(use.units)
            for v, m in read.items():
                for k in self.kinds.get(v, ()):
                    lanes[k] += m.bit_count()
        for u in units:
            pk = self.phys_kind.get(u)
            if pk is not None:
                lanes[pk] += 1
                if pk != "sgpr":
                    lanes["vector"] += 1
        lanes["sgpr"] = max(0, lanes["sgpr"] - 4)  # VCC holds two SGPR-class registers
        for k, n in lanes.items():
            excess = (n + 1) // 2 - self.cap[k]
            if excess > 0:
                of_kind = self._of_kind(live, k)
                if of_kind or k != "agpr":  # AGPRs alone over (fixed ones): nothing to spill
                    self._mark(excess, b, idx, k, of_kind)


def _priced(state: Rewriter, over: list[Over], classes: dict[VReg, RegisterClass], live_in: dict[VReg, set[int]],
            cfg: CFG) -> tuple[dict[VReg, int], dict[VReg, set[int]], dict[VReg, tuple[float, str | None]]]:
    """For each value live at a point over the budget: how many such points it spans, its
    region, and its cost (`costs`; with `whole_ranges`, the cheaper of its region and every
    block it lives in, as LLVM spills a whole range: a store after each def, no stores or
    reloads at the region's edges)."""
    hot: dict[VReg, int] = {}
    hot_blocks: dict[VReg, set[int]] = {}
    for _, b, _, spillable in over:
        for v in spillable:
            hot[v] = hot.get(v, 0) + 1
            hot_blocks.setdefault(v, set()).add(b)
    regions = {v: region(hb, live_in.get(v, set()), cfg) for v, hb in hot_blocks.items()}
    priced = costs(state, classes, regions, live_in, cfg)
    if state.whole_ranges:
        accessed = _accessed(state.fn, set(regions))
        whole = {v: live_in.get(v, set()) | accessed.get(v, set()) for v in regions}
        for v, (c, how) in costs(state, classes, whole, live_in, cfg).items():
            if v in priced and how is None and priced[v][1] is None and c < priced[v][0]:
                priced[v] = (c, None)
                regions[v] = whole[v]
    return hot, regions, priced


def _pick(state: Rewriter, caps: Caps, over: list[Over], classes: dict[VReg, RegisterClass],
          priced: dict[VReg, tuple[float, str | None]], hot: dict[VReg, int], no_lane: set[VReg],
          no_agpr_home: set[VReg]) -> dict[VReg, str]:
    """At each point over the budget, from the most over, the live values with the lowest cost
    per over-budget point they span, until the point fits; and their homes: rematerialisation
    for a constant, lanes for an SGPR value (`no_lane` aside), an AGPR home for a VGPR value
    where only VGPRs are short (`no_agpr_home` aside), else a stack slot."""
    chosen: dict[VReg, str] = {}
    agpr_room = caps.vector - caps.vgpr - sum(classes[h].width32 for h in state.home_reg.values() if h in classes)
    over.sort(key=lambda o: -o[0])
    for excess, _, kind, spillable in over:
        need = excess - sum((m.bit_count() + 1) // 2 for v, m in spillable.items() if v in chosen)
        if need <= 0:
            continue
        cands = sorted((v for v in spillable if v not in chosen and v in priced),
                       key=lambda v: (priced[v][0] / hot[v], vreg_key(v)))
        for v in cands:
            if need <= 0:
                break
            home = priced[v][1] or ("lane" if kind == "sgpr" and v not in no_lane else
                                    "agpr" if kind == "vgpr" and agpr_split(state, classes[v]) and v not in no_agpr_home
                                    else "stack")
            if home == "agpr" and state.near == 0:
                # Without sharing (the retry), AGPR homes are counted as if all were live at
                # once: beyond the AGPRs the budget leaves, values go to the stack.
                width = classes[v].width32
                if agpr_room < width:
                    home = "stack"
                else:
                    agpr_room -= width
            chosen[v] = home
            need -= (spillable[v].bit_count() + 1) // 2
    if not chosen:
        excess, _, kind, _ = over[0]
        raise CannotSpill(f"{excess} {kind.upper()} register(s) over the budget where no live value can be spilled")
    return chosen


def _no_lane(fn: Function, liveness: Liveness, kinds_of: dict[VReg, tuple[str, ...]], caps: Caps,
             limits: Limits) -> set[VReg]:
    """SGPR values no lane VGPR can hold: live across a call that keeps no VGPR within the
    budget, or across instructions that clobber, between them, every VGPR within it (inline
    assembly that clobbers the file piece by piece). A lane VGPR lives wherever its values are
    spilled, so their home is a stack slot (an SGPR spill to memory, as LLVM's)."""
    from verilocc.allocators.problem import VGPR_FILE

    base = VGPR_FILE.unit_base
    lane_vgprs = {i for i in range(max(0, caps.vgpr))
                  if not limits.reserved.intersection((base + 2 * i, base + 2 * i + 1))}
    striped = sgpr_striped(fn)
    blocks = {blk.number: blk for blk in fn.blocks}
    out: set[VReg] = set()
    clobbered: dict[VReg, set[int]] = {}  # value -> lane VGPRs clobbered while it is live
    for b in liveness.cfg.order:
        effects = liveness.effects[b]
        for idx, live in liveness.walk_backward(b):
            sgprs = [v for v in live.vregs if "sgpr" in kinds_of.get(v, ())]
            if not sgprs:
                continue
            ins = blocks[b].instructions[idx]
            mask = call_mask(ins, striped)
            if mask is not None and call_caps(mask, caps, at_call(ins, limits)[0]).vgpr <= 0:
                out.update(sgprs)
            hit = {(u - base) // 2 for d in effects[idx].defs if d.vreg is None for u in d.units} & lane_vgprs
            if hit:
                for v in sgprs:
                    clobbered.setdefault(v, set()).update(hit)
    return out | {v for v, regs in clobbered.items() if lane_vgprs and regs >= lane_vgprs}


def _live_in(liveness: Liveness) -> dict[VReg, set[int]]:
    """Value -> the blocks it is live into."""
    out: dict[VReg, set[int]] = {}
    for b, ls in liveness.live_in.items():
        for v in ls.vregs:
            out.setdefault(v, set()).add(b)
    return out


def _accessed(fn: Function, values: set[VReg]) -> dict[VReg, set[int]]:
    """Value of `values` -> the blocks with an instruction that reads or writes it."""
    out: dict[VReg, set[int]] = {}
    for block in fn.blocks:
        for ins in block.instructions:
            for v in vregs_of(ins):
                if v in values:
                    out.setdefault(v, set()).add(block.number)
    return out


# --------------------------------------------------------------------------------------------
# Values a colouring could not place
# --------------------------------------------------------------------------------------------
def forced(state: Rewriter, force: frozenset[VReg]) -> dict[VReg, str]:
    """Homes of the values of `force` that can be spilled, each in every block it lives in."""
    fn, limits = state.fn, state.limits
    classes = vreg_classes(fn)
    cfg = build_cfg(fn)
    liveness = compute_liveness(fn, cfg, classes)
    live_in = _live_in(liveness)
    regions: dict[VReg, set[int]] = {v: set(live_in.get(v, ())) for v in force if v in classes}
    for v, blocks in _accessed(fn, set(regions)).items():
        regions[v] |= blocks
    priced = costs(state, classes, regions, live_in, cfg)
    chosen: dict[VReg, str] = {}
    no_lane = _no_lane(fn, liveness, {v: kinds(c, limits) for v, c in classes.items()},
                       budget_caps(state.target, limits), limits)
    for v in sorted(priced, key=vreg_key):
        of = kinds(classes[v], limits)
        if not of:
            continue
        chosen[v] = priced[v][1] or ("lane" if of == ("sgpr",) and v not in no_lane else
                                     "agpr" if agpr_split(state, classes[v]) else "stack")
    state.whole = set(chosen)
    state.plan(chosen, {v: regions[v] for v in chosen}, live_in, cfg, liveness)
    return chosen


# --------------------------------------------------------------------------------------------
# Costs
# --------------------------------------------------------------------------------------------
def costs(state: Rewriter, classes: dict[VReg, RegisterClass], regions: dict[VReg, set[int]],
          live_in: dict[VReg, set[int]], cfg: CFG) -> dict[VReg, tuple[float, str | None]]:
    """Spillable values of `regions`: (cost, "remat" or None). The cost counts what spilling
    would write, each at its block's frequency: in the blocks of its region, a store per def
    and a reload per run of accesses not separated by a point over the budget; a store at the
    end of each block that enters the region and a reload at the start of each block that
    leaves it. A constant is rematerialised everywhere, at half the price of a reload."""
    freq = frequencies(state)
    local, uses, defs, barred = _accesses(state, freq)
    out: dict[VReg, tuple[float, str | None]] = {}
    for v, blocks in regions.items():
        cls = classes.get(v)
        if v in barred or cls is None or not _spillable_class(cls):
            continue
        d = defs.get(v, [])
        if len(d) == 1 and is_constant_def(d[0], False) and not any(
                op.subreg for op in d[0].operands if op.kind == "reg" and op.vreg == v):
            out[v] = (0.5 * uses.get(v, 0.0), "remat")
            continue
        stores, reloads = boundaries(blocks, live_in.get(v, set()), cfg)
        c = sum(x for b, x in local.get(v, {}).items() if b in blocks)
        c += sum(freq[p] for p in stores) + sum(freq[q] for q in reloads)
        out[v] = (c, None)
    return out


def _accesses(state: Rewriter, freq: dict[int, float]) -> tuple[
        dict[VReg, dict[int, float]], dict[VReg, float], dict[VReg, list[Instruction]], set[VReg]]:
    """Per value: the price of its stores and reloads per block (a store per def, a reload per
    run of accesses), of its reloads alone, its defs, and the values that are not spilled
    (the spiller's own registers, values spilled before, whole-wave values, values defined by
    a terminator or with `$exec`, bundled or debug operands)."""
    local: dict[VReg, dict[int, float]] = {}
    uses: dict[VReg, float] = {}
    barred: set[VReg] = set(state.temps) | set(state.homes) | set(state.wwm)
    defs: dict[VReg, list[Instruction]] = {}
    for b in state.fn.blocks:
        f = freq[b.number]
        tstart = terminator_start(b.instructions)
        last: dict[VReg, int] = {}
        for i, ins in enumerate(b.instructions):
            vs = vregs_of(ins)
            if not vs:
                continue
            bad = ins.bundled or ins.opens_bundle or ins.opcode.startswith("DBG_") or ins.opcode == "BUNDLE"
            writes_exec = any(op.is_def and op.phys in ("exec", "exec_lo", "exec_hi") for op in ins.operands
                              if op.kind == "reg")
            defined: set[VReg] = set()
            for op in ins.operands:
                if op.kind != "reg" or op.vreg is None:
                    continue
                if op.is_def:
                    defined.add(op.vreg)
                    if i >= tstart or writes_exec:
                        barred.add(op.vreg)
                elif i >= tstart and writes_exec:
                    # The mask a terminator moves into $exec (`$exec = S_MOV_B64_term %m`):
                    # SIOptimizeExecMasking folds its def into an S_AND_SAVEEXEC and drops it,
                    # so spill code reading it in between would read a register nothing wrote.
                    barred.add(op.vreg)
                if bad:
                    barred.add(op.vreg)
            for v in vs:
                if v in defined:
                    defs.setdefault(v, []).append(ins)
                fresh = v not in last or state.crosses(b.number, last[v], i)
                n = (1 if v in defined else 0) + (1 if fresh else 0)
                per = local.setdefault(v, {})
                per[b.number] = per.get(b.number, 0.0) + f * n
                if fresh and v not in defined:
                    uses[v] = uses.get(v, 0.0) + f
                last[v] = i
    return local, uses, defs, barred


def frequencies(state: Rewriter) -> dict[int, float]:
    """Estimated executions of each block: `LOOP_WEIGHT` per loop level (at most 6)."""
    return {b.number: float(LOOP_WEIGHT ** min(state.depth.get(b.number, 0), 6)) for b in state.fn.blocks}


def _spillable_class(cls: RegisterClass) -> bool:
    """A class with spill code: a vector class of a width the spill pseudos have, or an SGPR class."""
    if cls.width_units % 2 or not cls.width32 or cls.name == "vreg_1":
        return False
    if cls.files <= {RegFile.VGPR, RegFile.AGPR}:
        return 32 * cls.width32 in SPILL_BITS
    return RegFile.SGPR in cls.files
