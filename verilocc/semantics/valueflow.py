"""Layer 2: value flow through splits, spills, reloads, rematerialisation and copies.

The abstract domain (locations, tags, the state and its meet) is `verilocc.semantics.holdings`.

Transfer, one rule per kind of decoded step (`verilocc.pairing.steps`, which this module's
`_Walker` visits):
- matched instruction: every pre use must read, in the post operand at the same position,
  units that hold the tags the pre program reads; then each def clears its tags everywhere,
  clears the post units it writes, and puts its tags there.
- pre COPY `%a = COPY %b`: every location holding a lane of %b now holds that lane of %a too
  (the allocator removed an identity copy, or will move the value itself).
- pre IMPLICIT_DEF: the lanes become undefined. KILL: nothing.
- post COPY: the destination units hold what the source units hold (and their lane stores).
- post IMPLICIT_DEF: the units hold nothing.
- spill save/restore: stack-slot lanes take the source's tags / the destination takes them.
- SGPR spill to a VGPR lane / restore: the lane store of the VGPR takes / gives the SGPR's tags.
- rematerialised definition (post only): each unit holds the lanes whose current value was
  computed by an instruction with the same key from inputs that the post instruction's input
  units still hold; deleted original (pre only): the lanes are redefined, with their recipe.
- added / dropped instruction: a finding; its effect is approximated so that one error does
  not cascade.
Phase 1 computes block-entry states to a fixed point; phase 2 collects every error with its
place, not just the first, from each block walked from its final entry state (its last walk
in phase 1, which records what it finds: a block's entry state changes only when it is
walked, so no block is walked again for it). A wrong read whose
lanes the instruction provably ignores is recorded as an `Anomaly` instead of an error
(`verilocc.semantics.anomalies`).

"""

from __future__ import annotations

from collections import defaultdict
from typing import cast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from verilocc.pairing.alignment import FunctionAlignment, paired_operands, recipe_key, whole_register_for_subregister
from verilocc.pairing import steps as ps
from verilocc.pairing.steps import Loc
from verilocc.analysis.cfg import CFG
from verilocc.analysis.instructions import is_pure, value_inputs
from verilocc.analysis.operands import VReg, physreg_at, resolve_operand
from verilocc.findings import Finding, Place
from verilocc.mir.model import Block, Function, Instruction, Operand
from verilocc.semantics.anomalies import Anomaly, HarmlessReads
from verilocc.semantics.holdings import Remat, State, Tag, meet, untouched
from verilocc.semantics.lanetrace import UndefinedLaneTrace
from verilocc.semantics.valuenames import ValueNames
from verilocc.target import RegisterClass, mask_to_slots

LAYER = "value-flow"
_NOT_READ = frozenset({"undef", "debug-use", "internal"})  # use operands that read no value



class _Walker:
    """Applies the transfer rules to a state; records findings when `report` is set."""

    def __init__(self, checker: ValueFlowChecker, block: int, state: State, report: bool) -> None:
        self.c = checker
        self.block = block
        self.s = state
        self.report = report
        self.found: list[Finding] = []  # with `report`: the errors of this walk
        self.anomalies: list[Anomaly] = []  # with `report`: the harmless wrong reads of this walk
        self.own: set[Tag] = set()  # tags whose set in `index` this walker made or copied
        if state.index is None:
            # By set of tags first: many locations hold the same set (a value copied to many places).
            holding: dict[frozenset[Tag], list[Loc]] = {}
            for loc, tags in state.locs.items():
                same = holding.get(tags)
                if same is None:
                    holding[tags] = [loc]
                else:
                    same.append(loc)
            index: dict[Tag, set[Loc]] = {}
            for tags, locs in holding.items():
                for t in tags:
                    at = index.get(t)
                    if at is None:
                        index[t] = set(locs)
                    else:
                        at.update(locs)
            state.index = index
            self.own.update(index)
        self.index = state.index
        self.rdeps: dict[Tag, set[Tag]] = defaultdict(set)  # input tag -> lanes computed from it
        for t, (_, inputs, _) in state.remat.items():
            for x in inputs:
                self.rdeps[x].add(t)
        # Instruction key -> lanes whose recipe had that key (some may have another recipe or
        # none since: `remat` reads each one's current recipe); made when `remat` first asks.
        self.by_key: dict[tuple[object, ...], set[Tag]] | None = None

    # --- primitive updates -------------------------------------------------------------
    def set_loc(self, loc: Loc, tags: frozenset[Tag]) -> None:
        index, own = self.index, self.own
        old = self.s.locs.get(loc)
        if old:
            for t in old:
                if t not in tags:
                    got = index.get(t)
                    if got is not None and loc in got:
                        if t not in own:
                            got = index[t] = set(got)
                            own.add(t)
                        got.discard(loc)
        self.s.locs[loc] = tags
        for t in tags:
            got = index.get(t)
            if got is None:
                index[t] = {loc}
                own.add(t)
            elif loc not in got:
                if t not in own:
                    got = index[t] = set(got)
                    own.add(t)
                got.add(loc)

    def add_tag(self, loc: Loc, tag: Tag, more: dict[frozenset[Tag], frozenset[Tag]] | None = None) -> None:
        """`set_loc(loc, holds(loc) | {tag})`, touching only `tag`'s set in `index` (every
        tag a location in `locs` holds has that location in its set already). `more`: the
        sets with `tag` already made for other locations holding the same set, to share."""
        held = self.s.locs.get(loc)
        if held is None:
            self.set_loc(loc, self.s.holds(loc) | {tag})
            return
        if tag in held:
            return
        if more is None:
            self.s.locs[loc] = held | {tag}
        else:
            made = more.get(held)
            if made is None:
                made = more[held] = held | {tag}
            self.s.locs[loc] = made
        got = self.index.get(tag)
        if got is None:
            self.index[tag] = {loc}
            self.own.add(tag)
        elif loc not in got:
            if tag not in self.own:
                got = self.index[tag] = set(got)
                self.own.add(tag)
            got.add(loc)

    def forget_tag(self, tag: Tag) -> None:
        """The virtual program redefines `tag`: no location holds its new value yet."""
        locs: set[Loc] | None = self.index.pop(tag, None)
        if tag[0] == "$":
            locs = (locs or set()) | {cast(int, tag[1])}
        # Many locations hold one set (a value copied to many places): each set less `tag` is
        # made once, and the locations share it.
        less: dict[frozenset[Tag], frozenset[Tag]] = {}
        if locs:
            s_locs, holds = self.s.locs, self.s.holds
            for loc in locs:
                held = holds(loc)
                if tag in held:
                    got = less.get(held)
                    if got is None:
                        got = less[held] = held - {tag}
                    s_locs[loc] = got
        if tag in self.c.lane_tags:
            for store in self.s.lanes.values():
                for k, v in store.items():  # (values replaced, no key added or removed)
                    if tag in v:
                        got = less.get(v)
                        if got is None:
                            got = less[v] = v - {tag}
                        store[k] = got
        self.s.remat.pop(tag, None)  # `drop_remat`
        for dep in self.rdeps.pop(tag, ()):
            # `rdeps` keeps every lane ever computed from `tag`; a lane redefined since then
            # has a recipe of its own, which this redefinition leaves alone.
            recipe = self.s.remat.get(dep)
            if recipe is not None and tag in recipe[1]:
                self.drop_remat(dep)

    def drop_remat(self, tag: Tag) -> None:
        self.s.remat.pop(tag, None)

    def set_remat(self, tag: Tag, recipe: Remat) -> None:
        self.s.remat[tag] = recipe
        for x in recipe[1]:
            self.rdeps[x].add(tag)
        if self.by_key is not None:
            self.by_key[recipe[0]].add(tag)

    def clobber(self, units: Iterable[int]) -> None:
        for u in units:
            self.set_loc(u, frozenset())
            self.s.lanes.pop(u, None)

    def undefine_rest(self, op: Operand) -> None:
        """`undef %v.sub = ...`: the lanes of %v outside sub become undefined."""
        for t in self.c.other_tags(op):
            self.forget_tag(t)
            self.s.defined.discard(t)

    def define(self, tags: list[Tag], units: tuple[int, ...],
               recipe: tuple[tuple[object, ...], tuple[Tag, ...]] | None) -> None:
        for t in tags:
            self.forget_tag(t)
        # `clobber(units)` and then each unit its tag, in one write per unit: the units of a
        # register are distinct, and the tags were just forgotten (no unit holds one of them).
        lanes, n = self.s.lanes, len(tags)
        for k, u in enumerate(units):
            self.set_loc(u, frozenset({tags[k]}) if k < n else frozenset())
            lanes.pop(u, None)
        for p, t in enumerate(tags):
            self.s.undef_fixed.discard(t)
            if t[0] != "$":
                self.s.defined.add(t)
                if recipe is not None and t not in recipe[1]:
                    self.set_remat(t, (recipe[0], recipe[1], p))

    # --- steps (one method per kind, called by `walk_block`) ----------------------------
    def remat_origin(self, s: ps.RematOrigin) -> None:
        recipe = self.c.recipe(s.ins)
        for d in s.ins.defs:
            self.undefine_rest(d)
            self.define(self.c.tags_of(d), (), recipe)

    def added(self, s: ps.Added) -> None:
        ins = s.ins
        self.error(
            "added-instruction", self.block, s.step.post, ins, None,
            f"`{ins.opcode}` at line {ins.line} has no counterpart in the virtual program",
        )
        for d in ins.defs:
            self.clobber(self.c.units_of(d))

    def dropped(self, s: ps.Dropped) -> None:
        ins = s.ins
        self.error(
            "dropped-instruction", self.block, None, ins, None,
            f"`{ins.opcode}` (virtual program line {ins.line}) is missing from the allocated program",
            pre_line=True,
        )
        self.undefine_defs(ins)

    def undefine_defs(self, ins: Instruction) -> None:
        for d in ins.defs:
            for t in self.c.tags_of(d):
                self.undefine(t)

    def undefine(self, t: Tag) -> None:
        """The virtual program's `t` becomes undefined: any value refines it."""
        self.forget_tag(t)
        if t[0] == "$":
            self.s.undef_fixed.add(t)
        else:
            self.s.defined.discard(t)

    def matched(self, s: ps.Matched) -> None:
        block, pi, qi = self.block, s.pre, s.post
        post_index = s.step.post
        assert post_index is not None
        pops, qops = pi.operands, qi.operands
        if len(qops) < len(pops):
            self.error("operands", block, post_index, qi, None, f"`{qi.opcode}` has fewer operands than in the virtual program")
            return
        defs: list[tuple[Operand, Operand]] = []
        for position, po, _, qo in paired_operands(pi, qi, self.c.post, self.c.classes):
            if po.kind != "reg":
                continue
            if qo.kind != "reg" or qo.is_def != po.is_def:
                self.error("operands", block, post_index, qi, qo, f"operand `{qo.text}` does not match `{po.text}` of the virtual program")
                continue
            if po.is_def:
                defs.append((po, qo))
            elif not (po.flags & _NOT_READ) and not po.is_noreg:
                self.check_use(block, post_index, qi, po, qo, pi, position)
        for po, qo in defs:
            if po.is_noreg:
                continue
            tags = self.c.tags_of(po)
            units = self.c.units_of(qo)
            if po.vreg is None and po.phys is not None and (qo.phys is None or self.c.units_of(po) != units):
                # A physical register the virtual program names (an inline-assembly output or
                # clobber, a call's result, the stack pointer of a call frame pseudo) is part of
                # the instruction: an allocator never renames it.
                self.error("fixed-register", block, post_index, qi, qo,
                           f"the virtual program writes {po.register_text} here, the allocated program `{qo.register_text}`")
                continue
            if len(units) != len(tags):
                self.error(
                    "width", block, post_index, qi, qo,
                    f"`{qo.register_text}` has {len(units) * 16} bits but {po.register_text} has {len(tags) * 16}",
                    vregs=(po,),
                )
                units = units[: len(tags)]
            self.undefine_rest(po)
            self.define(tags, units, self.c.recipe(pi) if is_pure(pi, allocated=False) else None)


    def check_use(self, block: int, post_index: int, qi: Instruction, po: Operand, qo: Operand,
                  pi: Instruction | None = None, position: int = -1) -> None:
        tags = self.c.tags_of(po)
        units = self.c.units_of(qo) if pi is None else self.c.read_units(pi, po, qo)
        if po.vreg is None and po.phys is not None:
            if qo.phys is None or self.c.units_of(po) != units:
                self.error("fixed-register", block, post_index, qi, qo,
                           f"the virtual program reads {po.register_text} here, the allocated program `{qo.register_text}`")
                return
        if len(units) != len(tags):
            self.error("width", block, post_index, qi, qo,
                       f"`{qo.register_text}` has {len(units) * 16} bits where {po.register_text} has {len(tags) * 16}",
                       vregs=(po,))
            return
        bad: list[tuple[Tag, int]] = []
        locs, defined, undef_fixed = self.s.locs, self.s.defined, self.s.undef_fixed
        for t, u in zip(tags, units):
            held = locs.get(u)  # `State.holds(u)`, which has ("$", u) when u is not in `locs`
            if t in held if held is not None else t == ("$", u):
                continue
            if (t[0] == "$" and t not in undef_fixed) or t in defined:  # `State.is_defined(t)`
                bad.append((t, u))
        if bad and self.report:
            names = self.c.names.held_names({x for _, u in bad for x in self.s.holds(u)})
            lanes = self.c.names.lane_name(po, [t for t, _ in bad])
            what = ", ".join(names) if names else "no value of the virtual program" + self.c.undefined_lane(block, post_index, units)
            slots = [k for k, (t, u) in enumerate(zip(tags, units)) if (t, u) in bad]
            anomaly = self.c.harmless.discharge(block, post_index, pi, qo, position, slots,
                                       f"reads `{qo.register_text}` expecting {po.register_text}{lanes}, "
                                       f"but it holds {what}") if pi is not None else None
            if anomaly is not None:
                self.anomalies.append(anomaly)
                return
            self.error(
                "wrong-value", block, post_index, qi, qo,
                f"reads `{qo.register_text}` expecting {po.register_text}{lanes}, but it holds {what}",
                vregs=(po,),
            )

    def pre_copy(self, s: ps.PreCopy) -> None:
        self.undefine_rest(s.dst)
        if s.src is None:  # `COPY undef`: the destination's lanes take an undefined value
            for dt in self.c.tags_of(s.dst):
                self.undefine(dt)
            return
        dtags, stags = self.c.tags_of(s.dst), self.c.tags_of(s.src)
        for dt, st in zip(dtags, stags):
            if dt == st:
                continue  # `%1 = COPY %1` changes nothing
            self.forget_tag(dt)
            if self.s.is_defined(st):
                if dt[0] != "$":
                    self.s.defined.add(dt)
                self.s.undef_fixed.discard(dt)
                more: dict[frozenset[Tag], frozenset[Tag]] = {}  # each set with dt made once, shared
                own: list[Loc] = [cast(int, st[1])] if st[0] == "$" and st in self.s.holds(cast(int, st[1])) else []
                for loc in list(self.index.get(st, ())) + own:
                    self.add_tag(loc, dt, more)
                if st in self.c.lane_tags:
                    self.c.lane_tags.add(dt)
                    for store in self.s.lanes.values():
                        for k, v in list(store.items()):
                            if st in v:
                                got = more.get(v)
                                if got is None:
                                    got = more[v] = v | {dt}
                                store[k] = got
                if st in self.s.remat and dt not in self.s.remat[st][1]:
                    self.set_remat(dt, self.s.remat[st])
            else:
                self.undefine(dt)
        for dt in dtags[len(stags):]:  # a 16-bit source widened: the high half is undefined
            self.undefine(dt)

    def pre_implicit_def(self, s: ps.PreImplicitDef) -> None:
        for d in s.ins.defs:
            self.undefine_rest(d)
        self.undefine_defs(s.ins)

    def pre_kill(self, s: ps.PreKill) -> None:
        pass

    def post_copy(self, s: ps.Copy) -> None:
        dunits = self.c.units_of(s.dst)
        if s.src is None:
            self.clobber(dunits)
            return
        sunits = self.c.units_of(s.src)
        if not ps.copy_widths_agree(len(dunits), len(sunits)):
            self.error("width", self.block, s.step.post, s.ins, s.dst,
                       f"COPY from {len(sunits) * 16} to {len(dunits) * 16} bits")
            self.clobber(dunits)
            return
        moved = [(self.s.holds(u), self.s.lanes.get(u)) for u in sunits]
        for d, (tags, store) in zip(dunits, moved):
            self.set_loc(d, tags)
            if store:
                self.s.lanes[d] = dict(store)
            else:
                self.s.lanes.pop(d, None)

    def exec_save(self, s: ps.ExecSave) -> None:
        self.post_copy(s)
        for op in s.clobbers:
            self.clobber(self.c.units_of(op))

    def post_implicit_def(self, s: ps.PostImplicitDef) -> None:
        for d in s.ins.defs:
            self.clobber(self.c.units_of(d))

    def post_kill(self, s: ps.PostKill) -> None:
        pass

    def spill_to_lane(self, s: ps.SpillToLane) -> None:
        """The lane store of the tied input, one lane replaced, is the result's."""
        vunits = self.c.units_of(s.vgpr)
        source = self.c.units_of(s.vgpr_in) if s.vgpr_in is not None else vunits
        store = dict(self.s.lanes.get(source[0], {}))
        for h, u in enumerate(self.c.units_of(s.src)):
            store[(s.lane, h)] = held = self.s.holds(u)
            self.c.lane_tags.update(held)
        for u in vunits:
            self.set_loc(u, frozenset())
        self.s.lanes[vunits[0]] = store

    def restore_from_lane(self, s: ps.RestoreFromLane) -> None:
        store = self.s.lanes.get(self.c.units_of(s.vgpr)[0], {})
        dunits = self.c.units_of(s.dst)
        self.clobber(dunits)
        for h, u in enumerate(dunits):
            self.set_loc(u, store.get((s.lane, h), frozenset()))

    def spill_to_slot(self, s: ps.SpillToSlot) -> None:
        """The slot takes the source's tags and its lane store (a VGPR holding spilled SGPRs,
        saved to the stack as a whole-wave spill)."""
        for k, u in enumerate(self.c.units_of(s.src)):
            loc = ("slot", s.slot, k)
            self.set_loc(loc, self.s.holds(u))
            self._move_lanes(u, loc)

    def reload_from_slot(self, s: ps.ReloadFromSlot) -> None:
        dunits = self.c.units_of(s.dst)
        self.clobber(dunits)
        for k, u in enumerate(dunits):
            loc = ("slot", s.slot, k)
            self.set_loc(u, self.s.holds(loc))
            self._move_lanes(loc, u)

    def _move_lanes(self, src: Loc, dst: Loc) -> None:
        store = self.s.lanes.get(src)
        if store:
            self.s.lanes[dst] = dict(store)
        else:
            self.s.lanes.pop(dst, None)

    def remat(self, s: ps.RematCopy) -> None:
        """A rematerialised copy: its lanes are those computed the same way from the same inputs."""
        ins = s.ins
        key = recipe_key(ins)
        d = ins.defs[0]
        units = self.c.units_of(d)
        inputs = [u for op in value_inputs(ins) for u in self.c.units_of(op)]
        by_pos: dict[int, set[Tag]] = defaultdict(set)
        if self.by_key is None:
            self.by_key = defaultdict(set)
            for t, recipe in self.s.remat.items():
                self.by_key[recipe[0]].add(t)
        remat = self.s.remat
        for t in self.by_key.get(key, ()):
            found = remat.get(t)
            if found is None:
                continue
            k, expected, p = found
            if k != key or len(expected) != len(inputs):
                continue
            if all(e in self.s.holds(u) or not self.s.is_defined(e) for e, u in zip(expected, inputs)):
                by_pos[p].add(t)
        self.clobber(units)
        for p, u in enumerate(units):
            self.set_loc(u, frozenset(by_pos.get(p, ())))

    def unsupported(self, s: ps.UnsupportedStep) -> None:
        ins = s.ins
        if self.report:
            index = s.step.post if s.step.post is not None else -1
            self.found.append(self.c.finding(
                "unsupported", self.block, index, ins, None,
                f"`{ins.opcode}` is {s.reason} this checker does not model" + (f": {s.detail}" if s.detail else ""),
                severity="unknown", pre_line=s.in_pre))
        if s.in_pre:
            self.undefine_defs(ins)
        else:
            for d in ins.defs:
                self.clobber(self.c.units_of(d))

    # --- reporting ---------------------------------------------------------------------
    def error(self, kind: str, block: int, index: int | None, ins: Instruction, op: Operand | None,
              msg: str, vregs: tuple[Operand, ...] = (), pre_line: bool = False) -> None:
        if self.report:
            self.found.append(self.c.finding(kind, block, index if index is not None else -1, ins, op, msg,
                                             vregs=vregs, pre_line=pre_line))


class ValueFlowChecker:
    def __init__(self, pre: Function, post: Function, classes: dict[VReg, RegisterClass],
                 alignment: FunctionAlignment, cfg: CFG) -> None:
        self.pre = pre
        self.post = post
        self.classes = classes
        self.names = ValueNames(classes)
        self.alignment = alignment
        self.cfg = cfg
        self.findings: list[Finding] = []
        self.anomalies: list[Anomaly] = []
        self._block_maps: tuple[dict[int, Block], dict[int, Block], list[int]] | None = None  # `_blocks`
        self._units: dict[int, tuple[Operand, tuple[int, ...]]] = {}
        self._tags: dict[int, tuple[Operand, list[Tag]]] = {}
        self.harmless = HarmlessReads(pre, alignment, self.tags_of)
        self.remat_instructions: dict[tuple[object, ...], Instruction] = {}
        self.entry_states: dict[int, State] = {}
        self.out_states: dict[int, State] = {}
        # Every tag a walker has put in a lane store (`spill_to_lane`, `pre_copy`): no store
        # holds any other, so the walkers skip their stores for the rest.
        self.lane_tags: set[Tag] = set()

    def recipe(self, ins: Instruction) -> tuple[tuple[object, ...], tuple[Tag, ...]]:
        """How a pure instruction of the virtual program computes its lanes: key and input tags."""
        key = recipe_key(ins)
        self.remat_instructions.setdefault(key, ins)
        return key, tuple(t for op in value_inputs(ins) for t in self.tags_of(op))

    def other_tags(self, op: Operand) -> list[Tag]:
        """For an `undef` subregister def, the tags of the lanes it leaves undefined."""
        if op.vreg is None or not op.subreg or not op.has("undef"):
            return []
        mine = set(self.tags_of(op))
        width = self.classes[op.vreg].width_units
        return [(op.vreg, slot) for slot in range(width) if (op.vreg, slot) not in mine]

    # operands -> tags / units
    def tags_of(self, op: Operand) -> list[Tag]:
        """The tags an operand of the virtual program names (the list is shared: not to be changed)."""
        got = self._tags.get(id(op))
        if got is not None and got[0] is op:
            return got[1]
        tags: list[Tag] = []
        if op.vreg is not None:
            ref = resolve_operand(self.pre, op, self.classes)
            assert ref is not None
            tags = [(op.vreg, slot) for slot in mask_to_slots(ref.mask)]
        elif op.phys is not None:
            tags = [("$", u) for u in physreg_at(self.pre, op, op.phys).units]
        self._tags[id(op)] = (op, tags)  # the operand is kept, so that its id stays its own
        return tags

    def units_of(self, op: Operand) -> tuple[int, ...]:
        got = self._units.get(id(op))
        if got is not None and got[0] is op:
            return got[1]
        units = physreg_at(self.post, op, op.phys).units if op.phys is not None else ()
        self._units[id(op)] = (op, units)
        return units

    def read_units(self, pi: Instruction, po: Operand, qo: Operand) -> tuple[int, ...]:
        """The units of the allocated operand `qo` that stand for the lanes the virtual operand
        `po` of `pi` reads: `units_of(qo)`, or the subregister's lanes of it where `qo` names
        the whole register (`whole_register_for_subregister`)."""
        units = self.units_of(qo)
        if whole_register_for_subregister(pi, po, qo, len(units), self.classes):
            return tuple(units[cast(int, slot)] for _, slot in self.tags_of(po))
        return units


    def undefined_lane(self, block: int, post_index: int, units: tuple[int, ...]) -> str:
        """Why a read register holds no value, when the allocated program says so itself
        (`verilocc.semantics.lanetrace`); empty otherwise."""
        pre_blocks, post_blocks, _ = self._blocks()
        trace = UndefinedLaneTrace(pre_blocks, post_blocks, self.alignment, self.cfg, self.units_of)
        return trace.explain(block, post_index, units)


    def finding(self, kind: str, block: int, index: int, ins: Instruction, op: Operand | None, msg: str,
                vregs: tuple[Operand, ...] = (), severity: str = "error", pre_line: bool = False) -> Finding:
        fn = self.pre if pre_line else self.post
        line = op.line if op is not None else ins.line
        col = op.column if op is not None else ins.column
        phys = (f"${op.phys}",) if op is not None and op.phys else ()
        return Finding(
            kind=kind, layer=LAYER,
            place=Place(fn.file, fn.name, block, index, line, col),
            message=(f"bb.{block} line {ins.line}: " if not pre_line else f"bb.{block}: ") + msg,
            vregs=tuple(f"%{o.vreg}" for o in vregs if o.vreg is not None),
            physregs=phys, severity=severity,
        )

    def _blocks(self) -> tuple[dict[int, Block], dict[int, Block], list[int]]:
        """The pre and post blocks by number, and the paired blocks in reverse postorder (made once)."""
        if self._block_maps is None:
            pre_blocks = {b.number: b for b in self.pre.blocks}
            post_blocks = {b.number: b for b in self.post.blocks}
            order = [b for b in self.cfg.reverse_postorder() if b in self.alignment.steps]
            self._block_maps = (pre_blocks, post_blocks, order)
        return self._block_maps

    def fixed_point(self, report: bool = False) -> bool:
        """Phase 1: block-entry states to a fixed point. False if it did not converge.

        With `report`, also phase 2: each block's errors and anomalies from its last walk, which
        started from its final entry state (a block's entry state changes only when it is
        walked), in block order, as replaying every block from its entry state would find them."""
        pre_blocks, post_blocks, order = self._blocks()
        walks: dict[int, _Walker] = {}
        entry_state: dict[int, State] = {}
        out_state: dict[int, State] = {}
        pos = {b: i for i, b in enumerate(order)}
        work = list(order)
        queued = set(work)
        rounds = 0
        while work:
            work.sort(key=pos.__getitem__)
            b = work.pop(0)
            queued.discard(b)
            preds = [out_state[p] for p in self.cfg.predecessors(b) if p in out_state]
            # One predecessor: its out state is the entry state itself, not a copy (no walker
            # changes a state once its walk is over; the walker below walks a copy).
            state = State() if b == self.cfg.entry or not preds else preds[0] if len(preds) == 1 else meet(preds)
            entry_state[b] = state
            walker = _Walker(self, b, state.copy(), report=report)
            ps.walk_block(self.alignment.steps[b], pre_blocks[b], post_blocks[b], walker, self.alignment.stack_pointers)
            walks[b] = walker
            new = walker.s
            old = out_state.get(b)
            rounds += 1
            if old is None or not old.same_as(new):
                out_state[b] = new
                for s in self.cfg.successors(b):
                    if s in pos and s not in queued:
                        queued.add(s)
                        work.append(s)
            if rounds > 50 * max(1, len(order)):
                return False
        self.entry_states = entry_state
        self.out_states = out_state
        for b in order:
            self.findings.extend(walks[b].found)
            self.anomalies.extend(walks[b].anomalies)
        return True

    @property
    def discharged(self) -> dict[tuple[int, int, int], frozenset[int]]:
        """(block, post instruction, operand position) -> slots read as the virtual program's."""
        return {(a.block, a.post_index, a.position): frozenset(a.slots) for a in self.anomalies}

    def replay(self, block: int) -> Iterator[tuple[ps.DecodedStep, State, bool]]:
        """Walk `block` from its entry state (after `fixed_point`) without reporting, yielding
        each decoded step twice: with the state before it (`False`) and after it (`True`). The
        state is one object, updated in place: read it before taking the next item. Viewers
        use it to name the value each location holds at each point."""
        pre_blocks, post_blocks, _ = self._blocks()
        walker = _Walker(self, block, self.entry_states[block].copy(), report=False)
        for st in self.alignment.steps[block]:
            decoded = ps.decode(st, pre_blocks[block], post_blocks[block], self.alignment.stack_pointers)
            yield decoded, walker.s, False
            ps.visit(walker, decoded)
            yield decoded, walker.s, True

    def run(self) -> list[Finding]:
        if not self.fixed_point(report=True):
            self.findings.append(Finding("no-fixed-point", LAYER, Place(self.post.file, self.post.name, -1, -1, 0),
                                         "value flow did not reach a fixed point", severity="unknown"))
        return self.findings
