"""Spill and split code for a pre-RA function whose values do not fit its budget.

Both allocation strategies share this: before they assign registers, `spill_to_fit` rewrites
the virtual program into one whose register pressure fits the budget (the target's register
file, ``amdgpu-waves-per-eu``, ``amdgpu-num-vgpr``/``-sgpr``, or an occupancy the user asks
for), with the code LLVM itself writes at that point of the pipeline (after the last
VirtRegRewriter, before prolog/epilog insertion; InlineSpiller and SILowerSGPRSpills):

- **stack**: a vector value lives in a stack slot. After each def, ``SI_SPILL_V<bits>_SAVE %t,
  %stack.N, $sgpr32, 0, implicit $exec :: (store (s<bits>) into %stack.N, addrspace 5)``;
  before each use, ``%t = SI_SPILL_V<bits>_RESTORE %stack.N, ...`` (``A``/``AV`` opcodes for
  AGPR and AV classes). The slot is a ``spill-slot`` entry of ``stack:``; frameInfo's
  ``maxAlignment`` becomes at least 4 and machineFunctionInfo says ``hasSpilledVGPRs``.
- **agpr** (gfx90a, gfx942, gfx950, where VGPRs and AGPRs share one file and the budget has
  AGPRs): a VGPR value is split into a register of the ``av_*`` class of its width through
  COPYs after each def and before each use; the allocator puts it in an AGPR (or in a VGPR
  when one is free: a live-range split), as LLVM's class inflation does. A value live across a
  call that keeps no AGPR tuple of its width goes to the stack instead.
- **lane**: an SGPR value lives in lanes of a VGPR, as SILowerSGPRSpills of LLVM 17 to 19
  leaves it: ``%L:vgpr_32 = IMPLICIT_DEF`` at the top of the entry block, ``%L =
  SI_SPILL_S32_TO_VGPR %t.subK, lane, %L(tied-def 0)`` per 32 bits after each def, ``%t.subK =
  SI_RESTORE_S32_FROM_VGPR %L, lane`` before each use; machineFunctionInfo says
  ``hasSpilledSGPRs``; no stack slot remains (LLVM deletes the SGPR slots it lowered).
  An SGPR value live across a call that keeps no VGPR within the budget, or across
  instructions that clobber every VGPR within it between them (where no lane VGPR could
  live, `_no_lane`), goes to a stack slot instead, as LLVM's greedy allocator writes it before
  SILowerSGPRSpills: ``SI_SPILL_S<bits>_SAVE %t, %stack.N, implicit $exec, implicit $sgpr32``
  and ``SI_SPILL_S<bits>_RESTORE``, an ``sgpr-spill`` slot, lowered by prolog/epilog
  insertion to lanes of a scratch VGPR and memory.
- **remat**: a constant (a pure def without register inputs, `is_constant_def`) is defined
  again right before each use, and its original def goes, as LLVM rematerialises.

Where: a spilled value lives in its home only in its *region*, the blocks with points over
the budget where it is live, closed so that no block outside is entered both from the region
and from outside it (`_region`). Outside, the value keeps its register: a block that enters
the region ends with a store, a block entered from it starts with a reload (after the `$exec`
restore that opens a join block, as LLVM's split points skip a block's prologue). Inside, a
store follows each def and a reload precedes the first use after each point over the budget;
accesses in between, or within `NEAR` instructions, share one register, and a run of partial
defs (``undef %v.sub0 = ...; %v.sub1 = ...``) is stored once. A full COPY into or out of a
spilled value becomes the store or reload itself (LLVM folds it). What is written is verified
like any allocation, against the program before spilling. Spilled values never live
together in their slots share one (`verilocc.allocators.slots`, after the last round).

What, by cost: pressure is the lanes live after each instruction (`Liveness`, lane-granular,
the relation the verifier reads; dead defs, a call's or an inline assembly's clobbers among
them, count, and so do the inputs of an instruction with an early-clobber def) per kind
(VGPR-only values, AGPR-only values, all vector values, SGPRs) against the budget. Values
live across a call fit what it keeps, by count and by shape, less what the call itself
defines. A value's cost is what spilling it writes, at block
frequency (`LOOP_WEIGHT` per loop level): in its region, a store per def and a reload per run
of accesses; the stores and reloads at the region's edges; a constant costs half a reload per
use. At each point over the budget, from the most over, the live values with the lowest cost
per over-budget point they span are spilled until the point fits. Rounds repeat on the
rewritten program (reload registers are live near uses) until every point fits `margin`
below the budget. Values an allocator could not colour (`force`) are spilled first, as a
whole: in every block they live in, a reload before each access. With `whole_ranges`, a value
costs the cheaper of its region and every block it lives in (a store after each def, no
stores or reloads at region edges), and is spilled there.

The module is longer than most: the choice by cost and the rewriter that carries the choice out
(slots, lanes, AGPR homes, rematerialisation, region edges) share the regions and costs they
are computed from.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import pickle
import re
from dataclasses import dataclass, field

from verilocc.allocators.slots import Slot, colour_slots, redundant_stores, rename_slots
from verilocc.analysis.calls import call_mask, sgpr_striped
from verilocc.analysis.cfg import CFG, build_cfg, loop_depths
from verilocc.analysis.instructions import is_constant_def
from verilocc.analysis.liveness import Liveness, compute_liveness
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.analysis.wholewave import wwm_vregs
from verilocc.errors import TargetError
from verilocc.mir.model import Function, Instruction, Operand, VRegDecl
from verilocc.mir.parser import parse_instruction
from verilocc.target import PhysReg, RegFile, RegisterClass, Target, get_class, index_for_range
from verilocc.target.limits import Limits
from verilocc.target.regmasks import RegMask
from verilocc.target.registers import parse_physreg

#: Accesses of a spilled value this close (instructions, same block) share one register even
#: where the pressure is over the budget (a short range costs less than a reload; the next
#: round spills something else if it must).
NEAR = 12
#: Estimated executions of a block per enclosing loop (LLVM's block frequency is similar).
LOOP_WEIGHT = 8
#: Widths of the vector spill pseudos (SI_SPILL_V<bits>_SAVE), in bits.
SPILL_BITS = frozenset({32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 512, 1024})
HOMES = ("stack", "agpr", "lane", "remat")

_TERMINATORS = frozenset({
    "S_BRANCH", "SI_IF", "SI_ELSE", "SI_LOOP", "SI_WATERFALL_LOOP", "S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG",
    "S_SETPC_B64_return", "SI_TCRETURN", "SI_KILL_I1_TERMINATOR", "SI_KILL_F32_COND_IMM_TERMINATOR",
    "SI_EARLY_TERMINATE_SCC0", "S_TRAP", "SI_CS_CHAIN_TC_W32", "SI_CS_CHAIN_TC_W64",
})


def is_terminator(ins: Instruction) -> bool:
    op = ins.opcode
    return (op in _TERMINATORS or op.startswith(("S_CBRANCH_", "S_SETPC_B64_return", "SI_TCRETURN"))
            or op.endswith("_term"))


def terminator_start(instructions: list[Instruction]) -> int:
    """Index of the first instruction of the block's terminator group (len when none)."""
    k = len(instructions)
    while k > 0 and is_terminator(instructions[k - 1]):
        k -= 1
    return k


# --------------------------------------------------------------------------------------------
# Budget
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Caps:
    """Registers (32-bit) one point may hold: VGPR-only values, all vector values, SGPRs,
    AGPR-only values."""

    vgpr: int
    vector: int
    sgpr: int
    agpr: int = 0

    def less(self, margin: int) -> Caps:
        return Caps(self.vgpr - margin, self.vector - margin, self.sgpr - margin, max(0, self.agpr - margin))


def budget_caps(target: Target, limits: Limits) -> Caps:
    vector = limits.total_vector if target.unified_vgpr_file else limits.vgprs + limits.agprs
    if target.unified_vgpr_file and limits.agprs:
        vector -= 3  # with AGPRs in use the VGPRs count rounded up to 4
    return Caps(limits.vgprs, vector, limits.sgprs, limits.agprs)


def _kept(reg: PhysReg, mask: RegMask, limits: Limits) -> bool:
    """A register a call through `mask` preserves and the function does not reserve."""
    return mask.preserves(reg) and not limits.reserved.intersection(reg.units)


def call_caps(mask: RegMask, caps: Caps, limits: Limits) -> Caps:
    """Registers (32-bit) that values live across a call through `mask` may hold: the ones
    within `caps` that the call keeps (`_kept`)."""
    def kept(prefix: str, n: int) -> int:
        return sum(1 for i in range(max(0, n)) if _kept(parse_physreg(f"{prefix}{i}"), mask, limits))

    vgpr = kept("vgpr", caps.vgpr)
    agpr = kept("agpr", min(limits.agprs, caps.vector - caps.vgpr)) if limits.agprs else 0
    return Caps(vgpr, min(caps.vector, vgpr + agpr), kept("sgpr", caps.sgpr), agpr)


def _fits_across(cls: RegisterClass, mask: RegMask, target: Target, limits: Limits, caps: Caps) -> bool:
    """Whether some register of `cls` within `caps` is kept by a call through `mask`."""
    return any(_kept(r, mask, limits) and r.index + max(1, cls.width32) <= _cap_of(r.file, caps)
               for r in cls.members(target))


def _agpr_home_across(cls: RegisterClass, mask: RegMask, target: Target, limits: Limits, caps: Caps) -> bool:
    """Whether an AGPR home of a value of `cls` (its ``av_*`` class) may live across a call
    through `mask`: some AGPR tuple of its width within `caps` that the call keeps."""
    av = _av_class(cls)
    return av is not None and any(
        r.file is RegFile.AGPR and _kept(r, mask, limits) and r.index + max(1, cls.width32) <= _cap_of(r.file, caps)
        for r in get_class(av).members(target))


def _at_call(ins: Instruction, limits: Limits) -> tuple[Limits, frozenset[int]]:
    """`limits` at a call, with what the call itself defines (the return address) reserved:
    the call does not keep it for values live across; and the units of those defs."""
    defined = frozenset(u for op in ins.operands if op.kind == "reg" and op.is_def and op.phys
                        for u in _units(op.phys))
    return (dataclasses.replace(limits, reserved=limits.reserved | defined) if defined else limits), defined


def _units(name: str) -> tuple[int, ...]:
    """The units of a physical register (none for a name that is not one)."""
    try:
        return parse_physreg(name).units
    except TargetError:
        return ()


def _cap_of(file: RegFile, caps: Caps) -> int:
    if file is RegFile.SGPR:
        return caps.sgpr
    return caps.vgpr if file is RegFile.VGPR else caps.vector - caps.vgpr


def _kinds(cls: RegisterClass, limits: Limits) -> tuple[str, ...]:
    files = set(cls.files)
    if not limits.agprs:
        files.discard(RegFile.AGPR)
    if files and files <= {RegFile.VGPR, RegFile.AGPR}:
        return ("vgpr", "vector") if files == {RegFile.VGPR} else ("agpr", "vector") if files == {RegFile.AGPR} else (
            "vector",)
    if RegFile.SGPR in files:
        return ("sgpr",)
    return ()


# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------
@dataclass
class Spilled:
    """A pre-RA function rewritten with spill code, and what was done to it."""

    fn: Function
    homes: dict[VReg, str] = field(default_factory=dict)  # spilled value -> one of HOMES
    slots: dict[VReg, int] = field(default_factory=dict)  # value -> stack slot id ("stack")
    home_regs: frozenset[VReg] = frozenset()  # the av_* registers of "agpr" homes
    inserted: int = 0  # stores, reloads, split copies and lane moves written
    rounds: int = 0
    #: Written by the retry without sharing (`spill_to_fit`): its AGPR homes were counted
    #: against the AGPRs, so a colouring puts them there before any copy partner's register.
    homes_first: bool = False

    def describe(self) -> str:
        if not self.homes:
            return "no spill code"
        counts = {h: sum(1 for x in self.homes.values() if x == h) for h in HOMES}
        parts = [f"{n} to {'the stack' if h == 'stack' else 'AGPRs' if h == 'agpr' else 'VGPR lanes' if h == 'lane' else 'rematerialisation'}"
                 for h, n in counts.items() if n]
        return f"{len(self.homes)} value(s) spilled ({', '.join(parts)}), {self.inserted} spill instruction(s)"


class CannotSpill(Exception):
    """No value left to spill at a point over the budget."""


def spill_to_fit(fn: Function, target: Target, limits: Limits, margin: int = 0, max_rounds: int = 16,
                 force: frozenset[VReg] = frozenset(), whole_ranges: bool = False) -> Spilled:
    """`fn` rewritten so that its pressure fits `margin` registers below the budget of
    `limits` (the function itself, unchanged, when it already fits). `CannotSpill` when the
    values at some point cannot be spilled (reload registers alone exceed the budget, or the
    values there are not spillable).

    `force`: values of `fn` spilled first, wherever they live (their region is every block
    they are live in, a reload before each access more than `NEAR` instructions after the
    last): the values a colouring could not place (`verilocc.allocators.colouring.spill_fit`),
    as LLVM's greedy allocator spills a live range it can neither assign nor split.
    `whole_ranges`: a chosen value is spilled in every block it lives in where that costs less
    than its region (a store after each def, no stores or reloads at the region's edges).

    Accesses within `NEAR` instructions share a register even across a point over the budget,
    and AGPR homes are chosen point by point; when that leaves a point no spill can fix (the
    registers live there are all the spiller's own), the function is spilled again with no
    such sharing and with no more AGPR homes than the budget has AGPRs."""
    try:
        return _spill_to_fit(fn, target, limits, margin, max_rounds, force, NEAR, whole_ranges)
    except CannotSpill:
        return _spill_to_fit(fn, target, limits, margin, max_rounds, force, 0, whole_ranges)


def _spill_to_fit(fn: Function, target: Target, limits: Limits, margin: int, max_rounds: int,
                  force: frozenset[VReg], near: int, whole_ranges: bool = False) -> Spilled:
    caps = budget_caps(target, limits).less(margin)
    work = pickle.loads(pickle.dumps(fn, pickle.HIGHEST_PROTOCOL))  # a deep copy, in half the time
    for v, cls in vreg_classes(work).items():
        if v not in work.registers:
            work.registers[v] = VRegDecl(v, cls.name, None)
    state = _Rewriter(work, target, limits, near)
    state.whole_ranges = whole_ranges
    out = Spilled(state.fn, homes_first=near == 0)
    if force:
        forced = _forced(state, force)
        if forced:
            state.rewrite(forced)
    for rounds in range(max_rounds):
        chosen = _choose(state, caps)
        if not chosen:
            out.rounds = rounds
            break
        state.rewrite(chosen)
    else:
        if _choose(state, caps):
            raise CannotSpill(f"the pressure still exceeds the budget after {max_rounds} rounds of spilling")
        out.rounds = max_rounds
    state.drop_redundant_stores()
    state.share_slots()
    out.homes = dict(state.homes)
    out.slots = dict(state.slot_of)
    out.home_regs = frozenset(state.home_reg.values())
    out.inserted = state.inserted
    if out.homes:
        state.finish_header()
    return out


def spillable_values(fn: Function, target: Target, limits: Limits) -> frozenset[VReg]:
    """The values of `fn` that `spill_to_fit(force=...)` spills: of a class with spill code in
    a register file of the budget, not whole-wave, not defined by a terminator or an
    instruction that writes `$exec`, not in a bundle or a debug instruction. A colouring
    evicts only these (`verilocc.allocators.evict`): a value it leaves out must be one the
    spiller can take."""
    state = _Rewriter(fn, target, limits)
    classes = vreg_classes(fn)
    cfg = build_cfg(fn)
    costs = state.costs(classes, {v: set() for v in classes}, {}, cfg)
    return frozenset(v for v in costs if _kinds(classes[v], limits))


# --------------------------------------------------------------------------------------------
# Choice by cost
# --------------------------------------------------------------------------------------------
def _choose(state: _Rewriter, caps: Caps) -> dict[VReg, str]:
    """Values to spill in this round and their homes (empty when every point fits)."""
    fn, limits = state.fn, state.limits
    classes = vreg_classes(fn)
    kinds = {v: _kinds(c, limits) for v, c in classes.items()}
    cfg = build_cfg(fn)
    liveness = compute_liveness(fn, cfg, classes)
    phys_kind = _phys_kinds()
    over: list[tuple[int, int, str, dict[VReg, int]]] = []  # (excess, block, kind, live lanes per value)
    no_lane = _no_lane(fn, liveness, kinds, caps, limits)
    # VGPR values live across a call that keeps no AGPR tuple of their width within the budget:
    # an AGPR home could not live across it either.
    no_agpr_home: set[VReg] = set()
    cap = {"vgpr": caps.vgpr, "vector": caps.vector, "sgpr": caps.sgpr, "agpr": caps.agpr}
    evict: dict[int, list[int]] = {}
    striped = sgpr_striped(fn)
    blocks = {blk.number: blk for blk in fn.blocks}
    fits: dict[tuple[str, str, frozenset[int]], bool] = {}  # (class, mask, call defs) -> `_fits_across`

    def mark(excess: int, b: int, idx: int, kind: str, live: dict[VReg, int]) -> None:
        """Point `idx` of block `b` is `excess` registers of `kind` over: `live` may be spilled."""
        over.append((excess, b, kind, live))
        if not evict.get(b) or evict[b][-1] != idx:
            evict.setdefault(b, []).append(idx)

    for b in cfg.order:
        for idx, live in liveness.walk_backward(b):
            mask = call_mask(blocks[b].instructions[idx], striped)
            if mask is not None:
                # Values live after a call live across it: they fit the registers it keeps, by
                # count, and each in a register of its shape (striped masks keep short runs).
                at_call, defined = _at_call(blocks[b].instructions[idx], limits)
                kept = call_caps(mask, caps, at_call)
                for k in ("vgpr", "vector", "sgpr", "agpr"):
                    of_kind = {v: m for v, m in live.vregs.items() if k in kinds.get(v, ())}
                    excess = (sum(m.bit_count() for m in of_kind.values()) + 1) // 2 - getattr(kept, k)
                    if excess > 0:
                        mark(excess, b, idx, k, of_kind)
                    homeless: dict[VReg, int] = {}
                    for v, m in of_kind.items():
                        key = (classes[v].name, mask.name, defined)
                        if key not in fits:
                            fits[key] = _fits_across(classes[v], mask, state.target, at_call, caps)
                        if not fits[key]:
                            homeless[v] = m
                    if homeless:
                        mark(sum((m.bit_count() + 1) // 2 for m in homeless.values()), b, idx, k, homeless)
                for v in live.vregs:
                    if "vgpr" in kinds.get(v, ()) and state.agpr_split(classes[v]):
                        key = (f"agpr:{classes[v].name}", mask.name, defined)
                        if key not in fits:
                            fits[key] = _agpr_home_across(classes[v], mask, state.target, at_call, caps)
                        if not fits[key]:
                            no_agpr_home.add(v)
            lanes = {"vgpr": 0, "vector": 0, "sgpr": 0, "agpr": 0}
            for v, m in live.vregs.items():
                n = m.bit_count()
                for k in kinds.get(v, ()):
                    lanes[k] += n
            effect = liveness.effects[b][idx]
            units = set(live.units)
            for d in effect.defs:  # a dead def still takes its registers
                if d.vreg is not None:
                    n = (d.mask & ~live.vregs.get(d.vreg, 0)).bit_count()
                    for k in kinds.get(d.vreg, ()):
                        lanes[k] += n
                else:
                    units.update(d.units)
            if any(d.op.has("early-clobber") for d in effect.defs):
                # An early-clobber def takes its registers while the inputs are still read.
                read: dict[VReg, int] = {}
                for use in effect.uses:
                    if use.vreg is not None:
                        read[use.vreg] = read.get(use.vreg, 0) | (use.mask & ~live.vregs.get(use.vreg, 0))
                    else:
                        units.update(use.units)
                for v, m in read.items():
                    for k in kinds.get(v, ()):
                        lanes[k] += m.bit_count()
            for u in units:
                pk = phys_kind.get(u)
                if pk is not None:
                    lanes[pk] += 1
                    if pk != "sgpr":
                        lanes["vector"] += 1
            lanes["sgpr"] = max(0, lanes["sgpr"] - 4)  # VCC holds two SGPR-class registers
            for k, n in lanes.items():
                excess = (n + 1) // 2 - cap[k]
                if excess > 0:
                    of_kind = {v: m for v, m in live.vregs.items() if k in kinds.get(v, ())}
                    if of_kind or k != "agpr":  # AGPRs alone over (fixed ones): nothing to spill
                        mark(excess, b, idx, k, of_kind)
    if not over:
        return {}
    state.evict = {b: sorted(ix) for b, ix in evict.items()}
    hot: dict[VReg, int] = {}
    hot_blocks: dict[VReg, set[int]] = {}
    for _, b, _, spillable in over:
        for v in spillable:
            hot[v] = hot.get(v, 0) + 1
            hot_blocks.setdefault(v, set()).add(b)
    live_in: dict[VReg, set[int]] = {}
    for b, ls in liveness.live_in.items():
        for v in ls.vregs:
            live_in.setdefault(v, set()).add(b)
    regions = {v: _region(hb, live_in.get(v, set()), cfg) for v, hb in hot_blocks.items()}
    costs = state.costs(classes, regions, live_in, cfg)
    if state.whole_ranges:
        # A value whose region has edges (a store where it is entered, a reload where it is
        # left) may cost less spilled wherever it lives, a store after each def, as LLVM spills
        # a whole range: the cheaper of the two, per value.
        accessed: dict[VReg, set[int]] = {}
        for block in fn.blocks:
            for ins in block.instructions:
                for v in _vregs_of(ins):
                    if v in regions:
                        accessed.setdefault(v, set()).add(block.number)
        whole = {v: live_in.get(v, set()) | accessed.get(v, set()) for v in regions}
        for v, (c, how) in state.costs(classes, whole, live_in, cfg).items():
            if v in costs and how is None and costs[v][1] is None and c < costs[v][0]:
                costs[v] = (c, None)
                regions[v] = whole[v]
    chosen: dict[VReg, str] = {}
    agpr_room = caps.vector - caps.vgpr - sum(classes[h].width32 for h in state.home_reg.values() if h in classes)
    over.sort(key=lambda o: -o[0])
    for excess, _, kind, spillable in over:
        need = excess - sum((m.bit_count() + 1) // 2 for v, m in spillable.items() if v in chosen)
        if need <= 0:
            continue
        cands = sorted((v for v in spillable if v not in chosen and v in costs),
                       key=lambda v: (costs[v][0] / hot[v], _key(v)))
        for v in cands:
            if need <= 0:
                break
            home = costs[v][1] or ("lane" if kind == "sgpr" and v not in no_lane else
                                   "agpr" if kind == "vgpr" and state.agpr_split(classes[v]) and v not in no_agpr_home
                                   else "stack")
            if home == "agpr" and state.near == 0:
                # Without sharing (the retry), AGPR homes are counted as if all were live at
                # once: beyond the AGPRs the budget leaves, values go to the stack (as do values
                # live across a call that keeps no AGPR tuple of their width, `no_agpr_home`).
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
    state.plan(chosen, {v: regions[v] for v in chosen}, live_in, cfg)
    return chosen


def _no_lane(fn: Function, liveness: Liveness, kinds: dict[VReg, tuple[str, ...]], caps: Caps,
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
            sgprs = [v for v in live.vregs if "sgpr" in kinds.get(v, ())]
            if not sgprs:
                continue
            ins = blocks[b].instructions[idx]
            mask = call_mask(ins, striped)
            if mask is not None and call_caps(mask, caps, _at_call(ins, limits)[0]).vgpr <= 0:
                out.update(sgprs)
            hit = {(u - base) // 2 for d in effects[idx].defs if d.vreg is None for u in d.units} & lane_vgprs
            if hit:
                for v in sgprs:
                    clobbered.setdefault(v, set()).update(hit)
    return out | {v for v, regs in clobbered.items() if lane_vgprs and regs >= lane_vgprs}


def _forced(state: _Rewriter, force: frozenset[VReg]) -> dict[VReg, str]:
    """Homes of the values of `force` that can be spilled, each in every block it lives in."""
    fn, limits = state.fn, state.limits
    classes = vreg_classes(fn)
    cfg = build_cfg(fn)
    liveness = compute_liveness(fn, cfg, classes)
    live_in: dict[VReg, set[int]] = {}
    for b, ls in liveness.live_in.items():
        for v in ls.vregs:
            live_in.setdefault(v, set()).add(b)
    regions: dict[VReg, set[int]] = {v: set(live_in.get(v, ())) for v in force if v in classes}
    for block in fn.blocks:
        for ins in block.instructions:
            for v in _vregs_of(ins):
                if v in regions:
                    regions[v].add(block.number)
    costs = state.costs(classes, regions, live_in, cfg)
    chosen: dict[VReg, str] = {}
    no_lane = _no_lane(fn, liveness, {v: _kinds(c, limits) for v, c in classes.items()}, budget_caps(state.target, limits),
                       limits)
    for v in sorted(costs, key=_key):
        kinds = _kinds(classes[v], limits)
        if not kinds:
            continue
        chosen[v] = costs[v][1] or ("lane" if kinds == ("sgpr",) and v not in no_lane else
                                    "agpr" if state.agpr_split(classes[v]) else "stack")
    state.whole = set(chosen)
    state.plan(chosen, {v: regions[v] for v in chosen}, live_in, cfg)
    return chosen


def _region(hot: set[int], live_in: set[int], cfg: CFG) -> set[int]:
    """Blocks where a value spilled at points over the budget in `hot` lives in its home: the
    hot blocks, and every block it is live into from both a block inside and one outside
    (entering there would need its home and its register to agree)."""
    region = set(hot)
    changed = True
    while changed:
        changed = False
        for q in sorted(live_in - region):
            ps = cfg.predecessors(q)
            if any(p in region for p in ps) and any(p not in region for p in ps):
                region.add(q)
                changed = True
    return region


def _boundaries(region: set[int], live_in: set[int], cfg: CFG) -> tuple[list[int], list[int]]:
    """Blocks outside `region` that end with a store (a successor in the region is entered
    with the value live) and blocks outside it that start with a reload (entered from the
    region with the value live; `_region` makes all their predecessors region blocks)."""
    stores = sorted({p for h in region if h in live_in for p in cfg.predecessors(h) if p not in region})
    reloads = sorted(q for q in live_in - region if cfg.predecessors(q) and all(p in region for p in cfg.predecessors(q)))
    return stores, reloads


def _phys_kinds() -> dict[int, str]:
    from verilocc.allocators.problem import AGPR_FILE, SGPR_FILE, VGPR_FILE

    out: dict[int, str] = {}
    for f, k in ((VGPR_FILE, "vgpr"), (AGPR_FILE, "agpr"), (SGPR_FILE, "sgpr")):
        for u in range(f.unit_base, f.unit_base + 2 * f.size):
            out[u] = k
    return out


def _key(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


# --------------------------------------------------------------------------------------------
# The rewriter
# --------------------------------------------------------------------------------------------
class _Rewriter:
    """Rewrites one function round by round; keeps slots, lanes and new registers."""

    def __init__(self, fn: Function, target: Target, limits: Limits, near: int = NEAR) -> None:
        self.fn = fn
        self.near = near  # accesses this close share a register (`NEAR`)
        self.target = target
        self.limits = limits
        self.homes: dict[VReg, str] = {}
        self.slot_of: dict[VReg, int] = {}
        self.slot_sizes: list[tuple[int, int, str]] = []  # (id, bytes, stack-id) of the slots added
        self.home_reg: dict[VReg, int] = {}  # value -> its av_* register ("agpr")
        self.lane_of: dict[VReg, tuple[int, int]] = {}  # value -> (lane VGPR, first lane)
        self.lane_vgprs: list[int] = []
        self.lanes_used = 0
        self.temps: set[VReg] = set()  # registers this spiller made: never spilled again
        self.inserted = 0
        used = [v for v in fn.registers if isinstance(v, int)]
        used += [op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands if isinstance(op.vreg, int)]
        self.next_vreg = max(used, default=-1) + 1
        slots = [s.get("id") for s in fn.stack_slots]
        self.next_slot = max((s for s in slots if isinstance(s, int)), default=-1) + 1
        mfi = fn.machine_function_info
        sp = str(mfi.get("stackPtrOffsetReg") or "$sgpr32").strip("'")
        self.stack_pointer = sp if re.fullmatch(r"\$sgpr\d+", sp) else "$sgpr32"
        self.wwm = wwm_vregs(fn)
        self.depth = loop_depths(build_cfg(fn))
        self.evict: dict[int, list[int]] = {}  # block -> instructions after which the pressure is over
        self.region: dict[VReg, set[int]] = {}  # this round's values -> blocks where they live in their homes
        self.tail_stores: dict[int, list[VReg]] = {}  # block -> values stored at its end (entering a region)
        self.head_reloads: dict[int, list[VReg]] = {}  # block -> values reloaded at its start (leaving one)
        self.whole: set[VReg] = set()  # values spilled wherever they live (`force`)
        self.whole_ranges = False  # a value may be spilled wherever it lives when that costs less

    # -- choice support ----------------------------------------------------------------------
    def agpr_split(self, cls: RegisterClass) -> bool:
        """Whether a value of `cls` may live in an AGPR: on a unified file whose budget goes
        beyond the VGPRs (LLVM 19 reserves every AGPR of a function that uses none when its
        VGPR budget is at most the VGPR file, and llc rejects such an AGPR)."""
        limits = self.limits
        return (self.target.unified_vgpr_file and limits.agprs > 0 and limits.total_vector > limits.vgprs
                and _av_class(cls) is not None)

    def costs(self, classes: dict[VReg, RegisterClass], regions: dict[VReg, set[int]], live_in: dict[VReg, set[int]],
              cfg: CFG) -> dict[VReg, tuple[float, str | None]]:
        """Spillable values: (cost, "remat" or None). The cost counts what spilling would write,
        each at its block's frequency: in the blocks of its region, a store per def and a
        reload per run of accesses not separated by a point over the budget; a store at the
        end of each block that enters the region and a reload at the start of each block that
        leaves it. A constant is rematerialised everywhere, at half the price of a reload."""
        fn = self.fn
        local: dict[VReg, dict[int, float]] = {}
        uses: dict[VReg, float] = {}
        barred: set[VReg] = set(self.temps) | set(self.homes) | set(self.wwm)
        defs: dict[VReg, list[Instruction]] = {}
        freq = self.frequencies()
        for b in fn.blocks:
            f = freq[b.number]
            tstart = terminator_start(b.instructions)
            last: dict[VReg, int] = {}
            for i, ins in enumerate(b.instructions):
                vs = _vregs_of(ins)
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
                    if bad:
                        barred.add(op.vreg)
                for v in vs:
                    if v in defined:
                        defs.setdefault(v, []).append(ins)
                    fresh = v not in last or self.crosses(b.number, last[v], i)
                    n = (1 if v in defined else 0) + (1 if fresh else 0)
                    per = local.setdefault(v, {})
                    per[b.number] = per.get(b.number, 0.0) + f * n
                    if fresh and v not in defined:
                        uses[v] = uses.get(v, 0.0) + f
                    last[v] = i
        out: dict[VReg, tuple[float, str | None]] = {}
        for v, region in regions.items():
            cls = classes.get(v)
            if v in barred or cls is None or not self._spillable_class(cls):
                continue
            d = defs.get(v, [])
            if len(d) == 1 and is_constant_def(d[0], False) and not any(
                    op.subreg for op in d[0].operands if op.kind == "reg" and op.vreg == v):
                out[v] = (0.5 * uses.get(v, 0.0), "remat")
                continue
            stores, reloads = _boundaries(region, live_in.get(v, set()), cfg)
            c = sum(x for b, x in local.get(v, {}).items() if b in region)
            c += sum(freq[p] for p in stores) + sum(freq[q] for q in reloads)
            out[v] = (c, None)
        return out

    def frequencies(self) -> dict[int, float]:
        return {b.number: float(LOOP_WEIGHT ** min(self.depth.get(b.number, 0), 6)) for b in self.fn.blocks}

    def plan(self, chosen: dict[VReg, str], regions: dict[VReg, set[int]], live_in: dict[VReg, set[int]],
             cfg: CFG) -> None:
        """Where this round's values live in their homes, and the stores and reloads at the
        edges of those regions."""
        self.region = {}
        self.tail_stores = {}
        self.head_reloads = {}
        everywhere = {b.number for b in self.fn.blocks}
        for v, home in chosen.items():
            if home == "remat":
                self.region[v] = everywhere
                continue
            self.region[v] = regions[v]
            stores, reloads = _boundaries(regions[v], live_in.get(v, set()), cfg)
            for p in stores:
                self.tail_stores.setdefault(p, []).append(v)
            for q in reloads:
                self.head_reloads.setdefault(q, []).append(v)

    def crosses(self, block: int, i: int, j: int, v: VReg | None = None) -> bool:
        """Whether the register of a spilled value must not live from instruction i to j: a
        point over the budget lies in between (anywhere for a value of `whole`), and they are
        more than `self.near` apart."""
        if j - i <= self.near:
            return False
        if v in self.whole:
            return True
        ix = self.evict.get(block)
        if not ix:
            return False
        k = bisect.bisect_left(ix, i)
        return k < len(ix) and ix[k] < j

    def _spillable_class(self, cls: RegisterClass) -> bool:
        if cls.width_units % 2 or not cls.width32 or cls.name == "vreg_1":
            return False
        if cls.files <= {RegFile.VGPR, RegFile.AGPR}:
            return 32 * cls.width32 in SPILL_BITS
        return RegFile.SGPR in cls.files

    # -- rewriting ---------------------------------------------------------------------------
    def new_vreg(self, cls: str) -> int:
        v = self.next_vreg
        self.next_vreg += 1
        self.fn.registers[v] = VRegDecl(v, cls, None)
        self.temps.add(v)
        return v

    def rewrite(self, chosen: dict[VReg, str]) -> None:
        fn = self.fn
        classes = vreg_classes(fn)
        lane_defs: list[int] = []  # new lane VGPRs, defined at the top of the entry block at the end
        for v, home in sorted(chosen.items(), key=lambda kv: _key(kv[0])):
            self.homes[v] = home
            cls = classes[v]
            if home == "stack":
                self.slot_of[v] = self.next_slot
                self.slot_sizes.append((self.next_slot, 4 * cls.width32,
                                        "sgpr-spill" if RegFile.SGPR in cls.files else "default"))
                self.next_slot += 1
            elif home == "agpr":
                av = _av_class(cls)
                assert av is not None
                self.home_reg[v] = self.new_vreg(av)
            elif home == "lane":
                wave = self.target.wavefront_size
                if not self.lane_vgprs or self.lanes_used + cls.width32 > wave:
                    self.lane_vgprs.append(self.new_vreg("vgpr_32"))
                    self.lanes_used = 0
                    lane_defs.append(self.lane_vgprs[-1])
                self.lane_of[v] = (self.lane_vgprs[-1], self.lanes_used)
                self.lanes_used += cls.width32
        remat_defs: dict[VReg, Instruction] = {}
        for b in fn.blocks:
            for ins in b.instructions:
                for op in ins.operands:
                    if op.kind == "reg" and op.is_def and op.vreg in chosen and chosen[op.vreg] == "remat":
                        remat_defs[op.vreg] = ins
        for b in fn.blocks:
            here = {v: h for v, h in chosen.items() if b.number in self.region[v]}
            code = self._rewrite_block(b.number, b.instructions, here, classes, remat_defs)
            tail = [ins for v in sorted(self.tail_stores.get(b.number, []), key=_key)
                    for ins in self._store(v, v, classes[v], b.line)]
            if tail:
                t = terminator_start(code)
                code[t:t] = tail
            head = [ins for v in sorted(self.head_reloads.get(b.number, []), key=_key)
                    for ins in self._reload(v, v, classes[v], b.line)]
            if head:
                k = 0  # after the block's prologue: the instructions that restore $exec at a join
                while k < len(code) and not is_terminator(code[k]) and any(
                        op.kind == "reg" and op.is_def and op.phys in ("exec", "exec_lo") for op in code[k].operands):
                    k += 1
                code[k:k] = head
            b.instructions = code
        # After the blocks: the points over the budget (`self.evict`) index the instructions
        # as they were, so nothing may be inserted before rewriting.
        entry = fn.blocks[0]
        line = entry.instructions[0].line if entry.instructions else fn.line
        entry.instructions[0:0] = [self._parse(f"%{lv}:vgpr_32 = IMPLICIT_DEF", line) for lv in lane_defs]

    def _rewrite_block(self, block: int, code: list[Instruction], chosen: dict[VReg, str], classes: dict[VReg, RegisterClass],
                       remat_defs: dict[VReg, Instruction]) -> list[Instruction]:
        tstart = terminator_start(code)
        touches: dict[VReg, list[int]] = {}
        for i, ins in enumerate(code):
            for v in _vregs_of(ins):
                if v in chosen:
                    touches.setdefault(v, []).append(i)
        if not touches:
            return code
        out: list[Instruction] = []
        out_tstart: int | None = None
        avail: dict[VReg, tuple[int, int]] = {}  # value -> (register holding it, index of last access)
        for i, ins in enumerate(code):
            if i == tstart:
                out_tstart = len(out)
            vs = [v for v in _vregs_of(ins) if v in chosen]
            if not vs:
                out.append(ins)
                continue
            if any(remat_defs.get(v) is ins for v in vs):
                continue  # the original def of a rematerialised constant goes
            folded = self._fold_copy(ins, vs, chosen, classes, remat_defs)
            if folded is not None:
                for v in vs:
                    avail.pop(v, None)
                self._emit(out, out_tstart, [], folded, [])
                continue
            before: list[Instruction] = []
            after: list[Instruction] = []
            rename: dict[VReg, int] = {}
            for v in vs:
                home = chosen[v]
                cls = classes[v]
                ops = [op for op in ins.operands if op.kind == "reg" and op.vreg == v]
                reads = any((not op.is_def and not op.has("undef")) or (op.is_def and op.subreg and not op.has("undef"))
                            for op in ops)
                defines = any(op.is_def for op in ops)
                if home == "remat":
                    t = self.new_vreg(cls.name)
                    before.append(self._remat(remat_defs[v], v, t))
                    rename[v] = t
                    continue
                got = avail.get(v)
                if reads and got is not None and not self.crosses(block, got[1], i, v):
                    t = got[0]
                else:
                    t = self.new_vreg(cls.name)
                    if reads:
                        before.extend(self._reload(v, t, cls, ins.line))
                rename[v] = t
                if defines:
                    if all(op.has("dead") for op in ops if op.is_def):
                        avail.pop(v, None)
                        continue
                    nxt = next((j for j in touches[v] if j > i), None)
                    if (nxt is not None and nxt < tstart and not self.crosses(block, i, nxt, v)
                            and any(op.is_def for op in code[nxt].operands if op.kind == "reg" and op.vreg == v)):
                        avail[v] = (t, i)  # the next partial def stores
                    else:
                        after.extend(self._store(v, t, cls, ins.line))
                        avail[v] = (t, i)
                else:
                    avail[v] = (t, i)
            for op in ins.operands:
                if op.kind == "reg" and op.vreg in rename:
                    _set_vreg(op, rename[op.vreg])
            self._emit(out, out_tstart if i >= tstart else None, before, [ins], after)
        return out

    def _emit(self, out: list[Instruction], at: int | None, before: list[Instruction], body: list[Instruction],
              after: list[Instruction]) -> None:
        if at is not None and before:
            out[at:at] = before  # reloads for a terminator go before the terminator group
        else:
            out.extend(before)
        out.extend(body)
        out.extend(after)

    def _fold_copy(self, ins: Instruction, vs: list[VReg], chosen: dict[VReg, str], classes: dict[VReg, RegisterClass],
                   remat_defs: dict[VReg, Instruction]) -> list[Instruction] | None:
        """A full COPY between a spilled value and an unspilled virtual register of the same
        register file becomes the store or the reload itself."""
        if ins.opcode != "COPY" or len(vs) != 1 or len(ins.operands) != 2:
            return None
        dst, src = ins.operands
        if (dst.vreg is None or src.vreg is None or dst.subreg or src.subreg or src.has("undef")
                or dst.has("dead") or dst.vreg == src.vreg):
            return None
        v = vs[0]
        o = src.vreg if dst.vreg == v else dst.vreg
        cls, ocls = classes[v], classes[o]
        if cls.width_units != ocls.width_units:
            return None
        home = chosen[v]
        same_file = (cls.files <= {RegFile.VGPR, RegFile.AGPR}) == (ocls.files <= {RegFile.VGPR, RegFile.AGPR})
        if not same_file or home == "remat" and dst.vreg == v:
            return None
        if dst.vreg == v:  # a store
            return self._store(v, o, ocls, ins.line)
        if home == "remat":
            return [self._remat(remat_defs[v], v, o)]
        return self._reload(v, o, ocls, ins.line)

    def _store(self, v: VReg, t: VReg, cls: RegisterClass, line: int) -> list[Instruction]:
        """Instructions that put `t` (a register of class `cls`) into `v`'s home."""
        home = self.homes[v]
        if home == "stack" and RegFile.SGPR in cls.files:
            n, bits, mem = self._slot(v, cls)
            out = [f"SI_SPILL_S{bits}_SAVE %{t}, %stack.{n}, implicit $exec, implicit {self.stack_pointer} :: "
                   f"(store (s{bits}) into {mem})"]
        elif home == "stack":
            n, bits, mem = self._slot(v, cls)
            out = [f"{_spill_opcode(cls)}{bits}_SAVE %{t}, %stack.{n}, {self.stack_pointer}, 0, implicit $exec :: "
                   f"(store (s{bits}) into {mem})"]
        elif home == "agpr":
            h = self.home_reg[v]
            out = [f"%{h}:{self.fn.registers[h].reg_class} = COPY %{t}"]
        else:
            lane_vgpr, first = self.lane_of[v]
            out = [f"%{lane_vgpr}:vgpr_32 = SI_SPILL_S32_TO_VGPR %{t}{_part(cls, k)}, {first + k}, %{lane_vgpr}(tied-def 0)"
                   for k in range(cls.width32)]
        return self._written(out, line)

    def _reload(self, v: VReg, t: VReg, cls: RegisterClass, line: int) -> list[Instruction]:
        """Instructions that define `t` (class `cls`) from `v`'s home."""
        home = self.homes[v]
        if home == "stack" and RegFile.SGPR in cls.files:
            n, bits, mem = self._slot(v, cls)
            out = [f"%{t}:{cls.name} = SI_SPILL_S{bits}_RESTORE %stack.{n}, implicit $exec, implicit "
                   f"{self.stack_pointer} :: (load (s{bits}) from {mem})"]
        elif home == "stack":
            n, bits, mem = self._slot(v, cls)
            out = [f"%{t}:{cls.name} = {_spill_opcode(cls)}{bits}_RESTORE %stack.{n}, {self.stack_pointer}, 0, "
                   f"implicit $exec :: (load (s{bits}) from {mem})"]
        elif home == "agpr":
            out = [f"%{t}:{cls.name} = COPY %{self.home_reg[v]}"]
        else:
            lane_vgpr, first = self.lane_of[v]
            out = [("undef " if cls.width32 > 1 and k == 0 else "") + f"%{t}{_part(cls, k)}:{cls.name} = "
                   f"SI_RESTORE_S32_FROM_VGPR %{lane_vgpr}, {first + k}" for k in range(cls.width32)]
        return self._written(out, line)

    def _slot(self, v: VReg, cls: RegisterClass) -> tuple[int, int, str]:
        """`v`'s stack slot, its width in bits and the memory operand's place, as LLVM prints it."""
        n, bits = self.slot_of[v], 32 * cls.width32
        return n, bits, f"%stack.{n}{', align 4' if bits > 32 else ''}, addrspace 5"

    def _written(self, texts: list[str], line: int) -> list[Instruction]:
        self.inserted += len(texts)
        return [self._parse(t, line) for t in texts]

    def _remat(self, origin: Instruction, v: VReg, t: VReg) -> Instruction:
        ins = copy.deepcopy(origin)
        for op in ins.operands:
            if op.kind == "reg" and op.vreg == v:
                _set_vreg(op, t)
        return ins

    def _parse(self, text: str, line: int) -> Instruction:
        return parse_instruction(text, self.fn.file, line)

    def drop_redundant_stores(self) -> None:
        """Stores that find the slot already holding the value go (`redundant_stores`)."""
        found = redundant_stores(self.fn, self.slot_of)
        if not found:
            return
        gone: dict[int, set[int]] = {}
        for b, i in found:
            gone.setdefault(b, set()).add(i)
        for block in self.fn.blocks:
            if block.number in gone:
                block.instructions = [ins for i, ins in enumerate(block.instructions) if i not in gone[block.number]]
        self.inserted -= len(found)

    def share_slots(self) -> None:
        """Spilled vector values never live together share a stack slot (`verilocc.allocators.slots`)."""
        spills = [Slot(n, size, stack_id) for n, size, stack_id in self.slot_sizes if stack_id == "default"]
        if len(spills) < 2:
            return
        to, remaining = colour_slots(self.fn, spills)
        rename_slots(self.fn, to)
        self.slot_of = {v: to.get(n, n) for v, n in self.slot_of.items()}
        self.slot_sizes = sorted([(s.id, s.size, s.stack_id) for s in remaining]
                                 + [x for x in self.slot_sizes if x[2] != "default"])

    # -- the function's header ---------------------------------------------------------------
    def finish_header(self) -> None:
        fn = self.fn
        text = fn.header_text
        if self.slot_sizes:
            entries = "".join(
                f"\n  - {{ id: {n}, name: '', type: spill-slot, offset: 0, size: {size}, alignment: 4, \n"
                f"      stack-id: {stack_id}, callee-saved-register: '', callee-saved-restored: true, \n"
                "      debug-info-variable: '', debug-info-expression: '', debug-info-location: '' }"
                for n, size, stack_id in self.slot_sizes)
            text = _add_stack_entries(text, entries)
            text = re.sub(r"(?m)^(  maxAlignment:\s+)(\d+)$", lambda m: m.group(1) + str(max(4, int(m.group(2)))), text)
            if any(stack_id == "default" for _, _, stack_id in self.slot_sizes):
                text = re.sub(r"(?m)^(  hasSpilledVGPRs:\s+)false$", r"\1true", text)
            stack = list(fn.header.get("stack") or [])
            stack += [{"id": n, "name": "", "type": "spill-slot", "offset": 0, "size": size, "alignment": 4,
                       "stack-id": stack_id} for n, size, stack_id in self.slot_sizes]
            fn.header["stack"] = stack
        if self.lane_of or any(stack_id == "sgpr-spill" for _, _, stack_id in self.slot_sizes):
            text = re.sub(r"(?m)^(  hasSpilledSGPRs:\s+)false$", r"\1true", text)
        fn.header_text = text


def _add_stack_entries(text: str, entries: str) -> str:
    lines = text.split("\n")
    for k, ln in enumerate(lines):
        if ln.startswith("stack:"):
            if ln.rstrip().endswith("[]"):
                lines[k] = "stack:" + entries
                return "\n".join(lines)
            end = k + 1
            while end < len(lines) and (lines[end].startswith((" ", "-")) or not lines[end].strip()):
                end += 1
            lines[end - 1] += entries
            return "\n".join(lines)
    return text


def _spill_opcode(cls: RegisterClass) -> str:
    if cls.files == {RegFile.AGPR}:
        return "SI_SPILL_A"
    if RegFile.AGPR in cls.files:
        return "SI_SPILL_AV"
    return "SI_SPILL_V"


def _av_class(cls: RegisterClass) -> str | None:
    """The ``av_*`` class a VGPR value of `cls` may be split into (None when there is none)."""
    if cls.files != {RegFile.VGPR}:
        return None
    bits = 32 * cls.width32
    for name in ((f"av_{bits}_align2", f"av_{bits}") if bits > 32 else ("av_32",)):
        try:
            get_class(name)
        except Exception:  # noqa: BLE001 - a width without an AV class
            continue
        return name
    return None


def _part(cls: RegisterClass, k: int) -> str:
    """`.subK` for the k-th 32 bits of a tuple; nothing for a 32-bit class."""
    return "" if cls.width32 == 1 else "." + index_for_range(2 * k, 2)


def _vregs_of(ins: Instruction) -> list[VReg]:
    out: list[VReg] = []
    for op in ins.operands:
        if op.kind == "reg" and op.vreg is not None and op.vreg not in out:
            out.append(op.vreg)
    return out


def _set_vreg(op: Operand, v: VReg) -> None:
    """Rename a register operand; its class comes from `registers:` (every value has an entry)."""
    op.vreg = v
    op.reg_class = None
    op.flags = op.flags - {"killed"}
    op.text = op.register_text


def spill_instructions(fn: Function) -> int:
    """Spill code in an allocated function: stack stores and reloads, SGPR lane moves, and
    COPYs between the VGPR and AGPR files."""
    from verilocc.errors import TargetError
    from verilocc.target import parse_physreg

    n = 0
    for b in fn.blocks:
        for ins in b.instructions:
            if ins.opcode.startswith(("SI_SPILL_", "SI_RESTORE_")):
                n += 1
            elif ins.opcode == "COPY":
                files = []
                for op in ins.explicit_regs:
                    if op.phys:
                        try:
                            files.append(parse_physreg(op.phys).file)
                        except TargetError:
                            pass
                if len(files) == 2 and set(files) == {RegFile.VGPR, RegFile.AGPR}:
                    n += 1
    return n


def cross_file_copies(fn: Function) -> int:
    """COPYs between VGPR-only and AGPR-only classes in a virtual program (not spill code)."""
    classes = vreg_classes(fn)
    n = 0
    for b in fn.blocks:
        for ins in b.instructions:
            if ins.opcode != "COPY":
                continue
            files = [classes[op.vreg].files for op in ins.operands if op.kind == "reg" and op.vreg is not None]
            if len(files) == 2 and {frozenset(f) for f in files} == {frozenset({RegFile.VGPR}), frozenset({RegFile.AGPR})}:
                n += 1
    return n


__all__ = ["Caps", "CannotSpill", "HOMES", "Spilled", "budget_caps", "cross_file_copies", "is_terminator",
           "spill_instructions", "spill_to_fit", "spillable_values", "terminator_start"]
