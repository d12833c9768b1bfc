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
  SI_RESTORE_S32_FROM_VGPR %L, lane`` before each use, only for the parts some path defines
  there (a partially defined value, ``undef %t.sub0 = ...``, saves and restores what it holds:
  a read of an SGPR nothing wrote is one llc's machine verifier refuses); machineFunctionInfo says
  ``hasSpilledSGPRs``; no stack slot remains (LLVM deletes the SGPR slots it lowered).
  An SGPR value live across a call that keeps no VGPR within the budget, or across
  instructions that clobber every VGPR within it between them (where no lane VGPR could
  live, `spill_choice._no_lane`), goes to a stack slot instead, as LLVM's greedy allocator
  writes it before SILowerSGPRSpills: ``SI_SPILL_S<bits>_SAVE %t, %stack.N, implicit $exec, implicit $sgpr32``
  and ``SI_SPILL_S<bits>_RESTORE``, an ``sgpr-spill`` slot, lowered by prolog/epilog
  insertion to lanes of a scratch VGPR and memory.
- **remat**: a constant (a pure def without register inputs, `is_constant_def`) is defined
  again right before each use, and its original def goes, as LLVM rematerialises.

Where: a spilled value lives in its home only in its *region*, the blocks with points over the
budget where it is live, closed so that no block outside is entered both from the region and
from outside it (`spill_placement.region`). Outside, the value keeps its register: a block that
enters the region ends with a store, a block entered from it starts with a reload (after the
`$exec` restore that opens a join block, as LLVM's split points skip a block's prologue).
Inside, a store follows each def and a reload precedes the first use after each point over the
budget; accesses in between, or within `spill_placement.NEAR` instructions, share one register,
and a run of partial defs (``undef %v.sub0 = ...; %v.sub1 = ...``) is stored once. A full COPY
into or out of a spilled value becomes the store or reload itself (LLVM folds it). What is
written is verified like any allocation, against the program before spilling. Spilled values
that never live together share a slot (`verilocc.allocators.slots`, after the last round).

What, by cost: pressure is the lanes live after each instruction (`Liveness`, lane-granular,
the relation the verifier reads; dead defs, a call's or an inline assembly's clobbers among
them, count, and so do the inputs of an instruction with an early-clobber def) per kind
(VGPR-only values, AGPR-only values, all vector values, SGPRs) against the budget. Values
live across a call fit what it keeps, by count and by shape, less what the call itself
defines. A value's cost is what spilling it writes, at block frequency
(`spill_choice.LOOP_WEIGHT` per loop level): in its region, a store per def and a reload per run
of accesses; the stores and reloads at the region's edges; a constant costs half a reload per
use. At each point over the budget, from the most over, the live values with the lowest cost
per over-budget point they span are spilled until the point fits. Rounds repeat on the
rewritten program (reload registers are live near uses) until every point fits `margin`
below the budget. Values an allocator could not colour (`force`) are spilled first, as a
whole: in every block they live in, a reload before each access. With `whole_ranges`, a value
costs the cheaper of its region and every block it lives in (a store after each def, no
stores or reloads at region edges), and is spilled there.

The parts: `verilocc.allocators.spill_budget` (the caps per kind, and what a call keeps),
`verilocc.allocators.spill_choice` (the points over the budget, costs, the choice of values and
homes), `verilocc.allocators.spill_placement` (regions, and where the stores and reloads go)
and `verilocc.allocators.spill_code` (the instructions and frame entries, built as objects of
the MIR model).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

from verilocc.allocators.spill_budget import Margin, budget_caps, kinds
from verilocc.allocators.spill_choice import CannotSpill, choose, costs, forced
from verilocc.allocators.spill_placement import NEAR, Rewriter
from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.errors import TargetError
from verilocc.mir.model import Function, VRegDecl
from verilocc.target import RegFile, Target, parse_physreg
from verilocc.target.limits import Limits

HOMES = ("stack", "agpr", "lane", "remat")


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


def spill_to_fit(fn: Function, target: Target, limits: Limits, margin: int | Margin = 0, max_rounds: int = 16,
                 force: frozenset[VReg] = frozenset(), whole_ranges: bool = False) -> Spilled:
    """`fn` rewritten so that its pressure fits `margin` registers below the budget of
    `limits` (a `Margin` gives vector values and SGPRs their own; the function itself, unchanged, when it already fits). `CannotSpill` when the
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


def _spill_to_fit(fn: Function, target: Target, limits: Limits, margin: int | Margin, max_rounds: int,
                  force: frozenset[VReg], near: int, whole_ranges: bool = False) -> Spilled:
    caps = budget_caps(target, limits).less(margin)
    work = pickle.loads(pickle.dumps(fn, pickle.HIGHEST_PROTOCOL))  # a deep copy, in half the time
    for v, cls in vreg_classes(work).items():
        if v not in work.registers:
            work.registers[v] = VRegDecl(v, cls.name, None)
    state = Rewriter(work, target, limits, near)
    state.whole_ranges = whole_ranges
    out = Spilled(state.fn, homes_first=near == 0)
    if force:
        first = forced(state, force)
        if first:
            state.rewrite(first)
    for rounds in range(max_rounds):
        chosen = choose(state, caps)
        if not chosen:
            out.rounds = rounds
            break
        state.rewrite(chosen)
    else:
        if choose(state, caps):
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
    classes = vreg_classes(fn)
    priced = costs(Rewriter(fn, target, limits), classes, {v: set() for v in classes}, {}, build_cfg(fn))
    return frozenset(v for v in priced if kinds(classes[v], limits))


def spill_instructions(fn: Function) -> int:
    """Spill code in an allocated function: stack stores and reloads, SGPR lane moves, and
    COPYs between the VGPR and AGPR files."""
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


__all__ = ["CannotSpill", "HOMES", "Spilled", "cross_file_copies", "spill_instructions", "spill_to_fit",
           "spillable_values"]
