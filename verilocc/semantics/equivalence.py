"""Layer 3: a symbolic proof that the allocated program equals the virtual one.

Both programs run block by block from shared symbolic inputs. At a block's entry, the
virtual program's value of every tag (a virtual lane, or a fixed physical unit) is a fresh
symbol; each location of the allocated program starts with the symbol of a tag it holds
according to value flow's entry state (layer 2), which is the relation assumed at block
boundaries. Then both sides execute (`verilocc.semantics.ops`): interpreted moves and
immediates, uninterpreted functions for everything else, a memory token threaded through
side effects. The obligations are:
- every side-effecting instruction (stores, branches and their conditions, barriers, returns)
  sees equal inputs on both sides, and the memory tokens agree at the end of the block;
- at each edge, the relation assumed at the successor's entry holds at the block's exit, so
  the relation is inductive and values live out of the function are equal.
An undefined input of the virtual program (never written, IMPLICIT_DEF, an `undef` use) may be
refined by any value: it takes the value the allocated program reads there.

Obligations whose two sides are the same term are discharged by identity (terms are
hash-consed, `verilocc.semantics.terms`); the rest, with the assumptions, are translated into
z3 and go to z3 in one query per function: assumptions /\\ not (O1 /\\ ... ).
Unsat proves equivalence; sat gives a concrete input under which the programs differ; a
timeout is UNKNOWN (`verilocc.semantics.obligations`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from verilocc.pairing.alignment import FunctionAlignment, paired_operands
from verilocc.pairing import steps as ps
from verilocc.pairing.steps import Loc
from verilocc.analysis.cfg import CFG
from verilocc.analysis.instructions import is_liveness_note, is_pure, value_inputs
from verilocc.analysis.operands import VReg, physreg_at
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.semantics.obligations import Obligations
from verilocc.semantics.ops import Semantics, has_side_effects, reads_memory
from verilocc.semantics.holdings import State, Tag, untouched
from verilocc.semantics.valueflow import ValueFlowChecker
from verilocc.target import RegFile, RegisterClass, Target

_VECTOR_FILES = frozenset({RegFile.VGPR, RegFile.AGPR})

LAYER = "equivalence"

_NOT_READ = frozenset({"debug-use", "internal"})  # use operands the executor does not read
_SORTED: dict[frozenset[Tag], list[Tag]] = {}


def by_repr(tags: frozenset[Tag]) -> list[Tag]:
    """`sorted(tags, key=repr)`, remembered: the same sets of tags come back at every edge."""
    got = _SORTED.get(tags)
    if got is None:
        if len(_SORTED) > 1 << 16:
            _SORTED.clear()
        got = _SORTED[tags] = sorted(tags, key=repr)
    return got


_REPRS: dict[object, str] = {}


def sorted_by_repr(items: set[Any]) -> list[Any]:
    """`sorted(items, key=repr)` with each item's repr remembered: a block's locations come
    back at every edge, and making the repr of each again was much of the edges' time."""
    reprs = _REPRS
    if len(reprs) > 1 << 16:
        reprs.clear()
    keyed: list[tuple[str, int, Any]] = []
    for i, x in enumerate(items):
        r = reprs.get(x)
        if r is None:
            r = reprs[x] = repr(x)
        keyed.append((r, i, x))
    keyed.sort()  # as `sorted`, stable: equal reprs keep their order, items are never compared
    return [x for _, _, x in keyed]


class _BlockRun:
    """Executes one block of both programs symbolically."""

    def __init__(self, eq: EquivalenceChecker, b: int, entry: State) -> None:
        self.eq = eq
        self.b = b
        self.entry = entry
        self.pv: dict[Tag, Any] = {}  # virtual program: tag -> value set in this block
        self.pentry: dict[Tag, Any | None] = {}  # virtual program: tag -> value at block entry
        self.undef_tags: set[Tag] = set()  # lanes the virtual program made undefined here
        self.pwritten: set[Tag] = set()  # tags the virtual program writes in this block
        self.qv: dict[Loc, Any] = {}  # allocated program: location -> value
        self.qlanes: dict[Loc, dict[tuple[int, int], Any]] = {}
        self.written: set[Loc] = set()
        self.ptoken = eq.sem.token_const(f"mem_b{b}")
        self.qtoken = self.ptoken
        self.assumptions: list[Any] = []  # `Semantics.equal` of terms assumed equal
        self.fresh = 0
        self._alike: dict[frozenset[Tag], frozenset[Tag]] = {}  # for `entry_alike`
        self._represented: dict[frozenset[Tag], Any | None] = {}  # for `representative`

    # --- values --------------------------------------------------------------------------
    def entry_value(self, tag: Tag) -> Any:
        # Tags that one location holds at entry are equal (that is the relation assumed at the
        # boundary): they share one symbol, named after the least of them.
        rep = self.eq.canonical(self.b, tag)
        return self.eq.sem.lane_const(f"in_b{self.b}_{self.eq.vf.names.tag_symbol(rep)}")

    def pget(self, tag: Tag) -> Any | None:
        """The virtual program's current value of a tag; None when it is undefined here."""
        if tag in self.pv:
            return self.pv[tag]
        if tag in self.undef_tags:
            return None
        return self.pentry_value(tag)

    def pentry_value(self, tag: Tag) -> Any | None:
        """The virtual program's value of a tag at block entry, whatever the block did since
        (the allocated program reads its entry locations lazily, maybe after the virtual
        program redefined the tag); None when it is undefined at entry."""
        if tag in self.pentry:
            return self.pentry[tag]
        v: Any | None = None
        if tag[0] == "$" or self.entry.is_defined(tag):
            recipe = self.entry.remat.get(tag)
            v = self.recompute(recipe, self.pentry_value) if recipe is not None else None
            if v is None:
                v = self.entry_value(tag)
        self.pentry[tag] = v
        return v

    def recompute(self, recipe: tuple[tuple[object, ...], tuple[Tag, ...], int],
                  get: Callable[[Tag], Any | None]) -> Any | None:
        """The value of a lane that value flow says was computed by a pure instruction whose
        inputs still hold their values: recompute it from the values `get` gives the inputs."""
        key, inputs, pos = recipe
        ins = self.eq.vf.remat_instructions.get(key)
        if ins is None:
            return None
        values = [get(t) for t in inputs]
        if any(v is None for v in values):
            return None
        ops = value_inputs(ins)
        reads: list[tuple[Operand, list[Any]]] = []
        k = 0
        for op in ops:
            n = len(self.eq.vf.tags_of(op))
            reads.append((op, values[k:k + n]))
            k += n
        d = ins.defs[0]
        width = len(self.eq.vf.tags_of(d))
        res, _ = self.execute(ins, reads, [d], [width], None)
        return res[0][pos] if pos < len(res[0]) else None

    def representative(self, tags: frozenset[Tag]) -> Any | None:
        """The entry value of a location that holds `tags`: the tags are equal, so assume it.
        (Once per set of tags: again, it would make the same assumptions.)"""
        if tags in self._represented:
            return self._represented[tags]
        entry = self.entry
        defined = [t for t in by_repr(tags) if entry.is_defined(t)]
        first = self.pentry_value(defined[0]) if defined else None
        # Without a recipe, every defined tag's entry value is the symbol `canonical` gives
        # their class, `first` itself: no assumption to make (as `entry_alike` says).
        if len(defined) > 1 and any(t in entry.remat for t in defined):
            for t in defined[1:]:
                other = self.pentry_value(t)
                if other is not None and not self.eq.sem.same(other, first):
                    self.assumptions.append(self.eq.sem.equal(other, first))
        self._represented[tags] = first
        return first

    def entry_alike(self, loc: Loc) -> frozenset[Tag]:
        """The tags t for which `qget(loc)` is sure to be `pentry_value(t)`, made without an
        assumption, while the allocated program has not written loc in this block.

        `qget(loc)` is then `representative` of what loc held at entry: `pentry_value` of
        its first defined tag, with assumptions that the others equal it. When no tag loc held
        has a recipe, each defined tag's `pentry_value` is `entry_value`, the symbol that
        `canonical` gives the whole class, so all are the same term and no assumption is
        made: every defined tag is alike. When some have recipes, only a sole defined tag is."""
        entry = self.entry
        holds = entry.holds(loc)
        got = self._alike.get(holds)
        if got is None:
            defined = frozenset(x for x in holds if entry.is_defined(x))
            plain = len(defined) == 1 or not any(x in entry.remat for x in holds)
            got = self._alike[holds] = defined if plain else frozenset()
        return got

    def loc_entry(self, loc: Loc) -> Any:
        v = self.representative(self.entry.holds(loc))
        return v if v is not None else self.new_junk()

    def qget(self, loc: Loc) -> Any:
        v = self.qv.get(loc)
        if v is None:
            v = self.loc_entry(loc)
            self.qv[loc] = v
        return v

    def qset(self, loc: Loc, value: Any) -> None:
        self.qv[loc] = value
        self.written.add(loc)

    def lanes_store(self, loc: Loc) -> dict[tuple[int, int], Any]:
        got = self.qlanes.get(loc)
        if got is None:
            got = {}
            for k, tags in self.entry.lanes.get(loc, {}).items():
                v = self.representative(tags)
                if v is not None:
                    got[k] = v
            self.qlanes[loc] = got
        return got

    # --- operands --------------------------------------------------------------------------
    def pre_read(self, op: Operand, post_lanes: list[Any] | None) -> list[Any]:
        out = []
        tags = self.eq.vf.tags_of(op)
        for i, t in enumerate(tags):
            v = None if op.has("undef") else self.pget(t)
            if v is None:
                # Undefined in the virtual program: any value refines it, take the allocated one.
                v = post_lanes[i] if post_lanes is not None and i < len(post_lanes) else self.new_junk()
            out.append(v)
        return out

    def new_junk(self) -> Any:
        self.fresh += 1
        return self.eq.sem.lane_const(f"undef_b{self.b}_{self.fresh}")

    def post_read(self, op: Operand) -> list[Any]:
        return [self.qget(u) for u in self.eq.vf.units_of(op)]

    def pre_write(self, op: Operand, lanes: list[Any | None]) -> None:
        self.pwritten.update(self.eq.vf.tags_of(op))
        self.pwritten.update(self.eq.vf.other_tags(op))
        for t in self.eq.vf.other_tags(op):
            self.pv.pop(t, None)
            self.undef_tags.add(t)
        for t, v in zip(self.eq.vf.tags_of(op), lanes):
            if v is None:
                self.pv.pop(t, None)
                self.undef_tags.add(t)
            else:
                self.pv[t] = v
                self.undef_tags.discard(t)

    def post_write(self, op: Operand, lanes: list[Any]) -> None:
        units = self.eq.vf.units_of(op)
        for u in units:
            self.qlanes.pop(u, None)
        for u, v in zip(units, lanes):
            self.qset(u, v)
        if len(lanes) < len(units):
            for u in units[len(lanes):]:
                self.qset(u, self.new_junk())

    # --- execution -----------------------------------------------------------------------
    def execute(self, ins: Instruction, reads: list[tuple[Operand, list[Any]]], defs: list[Operand],
                widths: list[int], token: Any, pure: bool | None = None) -> tuple[list[list[Any]], Any]:
        """Results of `ins` from the lanes it reads. `pure`: whether its value ignores $exec and
        $mode; decided from the instruction when None. A matched pair passes the virtual
        instruction's answer for both sides: one instruction has one meaning, whatever flags
        (`renamable`) the allocator left on the other side's operands."""
        explicit = [lanes for op, lanes in reads if not op.is_implicit]
        res = self.eq.sem.interpret(ins, explicit, widths)
        if res is not None:
            return res, token
        if pure is None:
            pure = is_pure(ins, allocated=defs[0].vreg is None) if len(defs) == 1 else False
        if pure:
            # A pure value ignores $exec/$mode, as LLVM's rematerialisation does, and invariant
            # memory needs no token: the same inputs give the same value anywhere.
            keep = {id(op) for op in value_inputs(ins)}
            reads = [(op, lanes) for op, lanes in reads if id(op) in keep]
        inputs = [v for _, lanes in reads for v in lanes]
        use_token = token is not None and reads_memory(ins) and not pure
        outs, new_tok = self.eq.sem.uninterpreted(ins, inputs, widths, token if use_token else None)
        return outs, (new_tok if new_tok is not None else token)

    # --- steps (one method per kind, called by `walk_block`) ------------------------------
    def remat(self, s: ps.RematCopy) -> None:
        self.post_only(s.ins, pure=True)

    def added(self, s: ps.Added) -> None:
        self.post_only(s.ins)

    def remat_origin(self, s: ps.RematOrigin) -> None:
        self.pre_only(s.ins)

    def dropped(self, s: ps.Dropped) -> None:
        self.pre_only(s.ins)

    def matched(self, s: ps.Matched) -> None:
        pi, qi, qidx = s.pre, s.post, s.step.post
        assert qidx is not None  # a matched step has both instructions
        preads: list[tuple[Operand, list[Any]]] = []
        qreads: list[tuple[Operand, list[Any]]] = []
        pdefs: list[Operand] = []
        qdefs: list[Operand] = []
        discharged = self.eq.vf.discharged
        for position, po, _, qo in paired_operands(pi, qi, self.eq.post, self.eq.vf.classes):
            if po.kind != "reg" or qo.kind != "reg" or po.is_noreg:
                continue
            if po.is_def:
                pdefs.append(po)
                qdefs.append(qo)
            elif not (po.flags & _NOT_READ):
                ql = [self.qget(u) for u in self.eq.vf.read_units(pi, po, qo)]
                pl = self.pre_read(po, ql)
                ignored = discharged.get((self.b, qidx, position)) if discharged else None
                if ignored:
                    # Value flow proved the results do not depend on these slots
                    # (`ValueFlowChecker.discharge`): read them as the virtual program does.
                    ql = [p if k in ignored and p is not None else q for k, (p, q) in enumerate(zip(pl, ql))]
                preads.append((po, pl))
                qreads.append((qo, ql))
        widths = [len(self.eq.vf.tags_of(d)) for d in pdefs]
        pure = is_pure(pi, allocated=False) if len(pdefs) == 1 else False
        pres, self.ptoken = self.execute(pi, preads, pdefs, widths, self.ptoken, pure)
        # One operation in another form (an MFMA rewritten to its AGPR form, `operation`):
        # the allocated program's instruction computes the virtual program's function.
        qins = qi if qi.opcode == pi.opcode else replace(qi, opcode=pi.opcode)
        qres, self.qtoken = self.execute(qins, qreads, qdefs, widths, self.qtoken, pure)
        if has_side_effects(pi):
            lhs = [v for _, lanes in preads for v in lanes]
            rhs = [v for _, lanes in qreads for v in lanes]
            if not self.eq.proof.by_identity(lhs, rhs):
                self.eq.proof.record(Place(self.eq.post.file, self.eq.post.name, self.b, qidx, qi.line, qi.column),
                               f"`{qi.opcode}` at line {qi.line} sees the same inputs", lhs, rhs)
        for d, lanes in zip(pdefs, pres):
            self.pre_write(d, lanes)
        for d, lanes in zip(qdefs, qres):
            self.post_write(d, lanes)

    def pre_only(self, ins: Instruction) -> None:
        reads = [(op, self.pre_read(op, None)) for op in ins.operands
                 if op.kind == "reg" and not op.is_def and not op.is_noreg and not op.has("debug-use")]
        defs = [op for op in ins.defs if not op.is_noreg]
        widths = [len(self.eq.vf.tags_of(d)) for d in defs]
        res, self.ptoken = self.execute(ins, reads, defs, widths, self.ptoken)
        for d, lanes in zip(defs, res):
            self.pre_write(d, lanes)

    def post_only(self, ins: Instruction, pure: bool | None = None) -> None:
        reads = [(op, self.post_read(op)) for op in ins.operands
                 if op.kind == "reg" and not op.is_def and not op.is_noreg and not op.has("debug-use")]
        defs = [op for op in ins.defs if not op.is_noreg and not (pure and is_liveness_note(op))]
        widths = [len(self.eq.vf.units_of(d)) for d in defs]
        res, self.qtoken = self.execute(ins, reads, defs, widths, self.qtoken, pure)
        for d, lanes in zip(defs, res):
            self.post_write(d, lanes)

    def pre_copy(self, s: ps.PreCopy) -> None:
        src = s.src
        lanes = [self.pget(t) for t in self.eq.vf.tags_of(src)] if src is not None else \
            [None] * len(self.eq.vf.tags_of(s.source))
        width = len(self.eq.vf.tags_of(s.dst))
        if self.eq.vector_to_scalar(self.eq.pre, s.dst, s.source):
            # Not a copy (`verilocc.smt.physical.copy_problem`): an unknown function of the source.
            known = tuple(v for v in lanes if v is not None)
            terms = self.eq.sem.terms
            self.pre_write(s.dst, [terms.apply(f"COPY.to-scalar.{k}", known, 16) if known else None
                                   for k in range(width)])
            return
        self.pre_write(s.dst, (lanes + [None] * width)[:width])  # a widened 16-bit source: high half undefined

    def pre_implicit_def(self, s: ps.PreImplicitDef) -> None:
        for d in s.ins.defs:
            self.pre_write(d, [None] * len(self.eq.vf.tags_of(d)))

    def pre_kill(self, s: ps.PreKill) -> None:
        pass

    def post_copy(self, s: ps.Copy) -> None:
        sunits = self.eq.vf.units_of(s.source)
        lanes = [self.qget(u) for u in sunits]
        dunits = self.eq.vf.units_of(s.dst)
        lanes += [self.qget(u) for u in dunits[len(lanes):]]  # a widened 16-bit source: the high half stays
        stores = [self.lanes_store(u) if (u in self.qlanes or u in self.entry.lanes) else None for u in sunits]
        if self.eq.vector_to_scalar(self.eq.post, s.dst, s.source):
            self.post_write(s.dst, [])  # not a copy (`verilocc.smt.physical.copy_problem`): an unknown value
            return
        self.post_write(s.dst, lanes)
        for d, store in zip(self.eq.vf.units_of(s.dst), stores):
            if store:
                self.qlanes[d] = dict(store)

    def exec_save(self, s: ps.ExecSave) -> None:
        self.post_copy(s)
        for op in s.clobbers:
            self.post_write(op, [])

    def post_implicit_def(self, s: ps.PostImplicitDef) -> None:
        for d in s.ins.defs:
            self.post_write(d, [])

    def post_kill(self, s: ps.PostKill) -> None:
        pass

    def spill_to_lane(self, s: ps.SpillToLane) -> None:
        vunits = self.eq.vf.units_of(s.vgpr)
        source = self.eq.vf.units_of(s.vgpr_in) if s.vgpr_in is not None else vunits
        store = dict(self.lanes_store(source[0]))  # the tied input's lanes, one replaced
        for h, v in enumerate(self.post_read(s.src)):
            store[(s.lane, h)] = v
        for u in vunits:
            self.qset(u, self.new_junk())
        self.qlanes[vunits[0]] = store

    def restore_from_lane(self, s: ps.RestoreFromLane) -> None:
        store = self.lanes_store(self.eq.vf.units_of(s.vgpr)[0])
        dunits = self.eq.vf.units_of(s.dst)
        lanes = [store.get((s.lane, h)) for h in range(len(dunits))]
        self.post_write(s.dst, [x if x is not None else self.new_junk() for x in lanes])

    def spill_to_slot(self, s: ps.SpillToSlot) -> None:
        sunits = self.eq.vf.units_of(s.src)
        stores = [self._store_of(u) for u in sunits]
        for k, v in enumerate(self.post_read(s.src)):
            self.qset(("slot", s.slot, k), v)
        for k, store in enumerate(stores):
            self._put_store(("slot", s.slot, k), store)

    def reload_from_slot(self, s: ps.ReloadFromSlot) -> None:
        units = self.eq.vf.units_of(s.dst)
        stores = [self._store_of(("slot", s.slot, k)) for k in range(len(units))]
        self.post_write(s.dst, [self.qget(("slot", s.slot, k)) for k in range(len(units))])
        for u, store in zip(units, stores):
            self._put_store(u, store)

    def _store_of(self, loc: Loc) -> dict[tuple[int, int], Any] | None:
        """The lane store of a location (a VGPR holding spilled SGPRs), None when it has none."""
        return dict(self.lanes_store(loc)) if (loc in self.qlanes or loc in self.entry.lanes) else None

    def _put_store(self, loc: Loc, store: dict[tuple[int, int], Any] | None) -> None:
        self.qlanes[loc] = store or {}

    def unsupported(self, s: ps.UnsupportedStep) -> None:
        self.eq.unknown(s.ins, self.b, f"`{s.ins.opcode}` is {s.reason} the executor does not model"
                        + (f": {s.detail}" if s.detail else ""))

    def edge_text(self, s: int, loc: Loc, t: Tag) -> str:
        return f"on the edge bb.{self.b} -> bb.{s}, {self.eq.vf.names.loc_name(loc)} holds {self.eq.vf.names.tag_name(t)}"

    def lane_text(self, s: int, lane: int, loc: Loc, t: Tag) -> str:
        return (f"on the edge bb.{self.b} -> bb.{s}, lane {lane} of {self.eq.vf.names.loc_name(loc)} holds "
                f"{self.eq.vf.names.tag_name(t)}")

    def close(self, exit_states: dict[int, State], succs: list[int], last: Instruction | None, post_index: int) -> None:
        """The obligations at the block's end: its side effects agree, and on each edge the
        relation assumed at the successor's entry holds (locations, recipes, lanes of VGPRs)."""
        line = last.line if last is not None else 0
        place = Place(self.eq.post.file, self.eq.post.name, self.b, post_index, line)
        self.eq.proof.oblige(place, f"side effects of bb.{self.b} agree", [self.ptoken], [self.qtoken])
        out = self.eq.vf.out_states.get(self.b)
        for s in succs:
            target = exit_states.get(s)
            if target is None or out is None:
                continue
            # An obligation whose two terms an earlier one of this edge already pairs is that
            # one again (a location holding many tags known equal: one per tag): counted, and
            # left to the first (which has this place too, so a failure reads the same).
            paired: set[tuple[int, int]] = set()
            self._edge_locations(place, s, target, out, paired)
            self._edge_recipes(place, s, target, out)
            self._edge_lanes(place, s, target, out, paired)

    def _edge_locations(self, place: Place, s: int, target: State, out: State, paired: set[tuple[int, int]]) -> None:
        locs = set(target.locs) | set(self.entry.locs) | self.written
        # `pget(t) == qget(loc)` for each defined tag t that loc holds at s's entry. Most
        # pairs are untouched by the block: the allocated program did not write loc, the
        # virtual program did not redefine t, and `qget(loc)` would be `pentry_value(t)`
        # (`entry_alike`). Their two sides are one term, so they are counted as discharged
        # by identity without making it. The memos of `pget` and `qget` are read inline.
        eq, pget, qget = self.eq.proof, self.pget, self.qget
        pv_set, undef_tags, q_set, written = self.pv, self.undef_tags, self.qv, self.written
        out_defined, out_undef_fixed, held = out.defined, out.undef_fixed, target.locs
        # Locations holding the same tags (a value copied to many places, each place
        # holding every tag known equal to it) ask the same questions: (tags, alike) ->
        # the allocated value the first one compared with (None: none was needed), and
        # how many of its obligations were identical and how many not. Another location
        # with that value again makes the same obligations, the second time each: the
        # identical ones counted as such, the others repeats of obligations `paired` holds.
        asked: dict[tuple[frozenset[Tag], frozenset[Tag]], tuple[Any, int, int]] = {}
        for loc in sorted_by_repr(locs):
            if isinstance(loc, tuple) and loc[0] != "slot":
                continue
            tags = held.get(loc)
            if tags is None:
                tags = untouched(loc)
            alike = self.entry_alike(loc) if loc not in written else frozenset()
            before = asked.get((tags, alike))
            if before is not None:
                q_first, same, other = before
                qv = None
                if q_first is not None:
                    qv = q_set.get(loc)
                    if qv is None:
                        qv = qget(loc)
                if qv is q_first:
                    eq.made += same + other
                    eq.identical += same
                    eq.repeated += other
                    continue
            q_first, same, other = None, 0, 0
            for t in by_repr(tags):
                if not ((t[0] == "$" and t not in out_undef_fixed) or t in out_defined):
                    continue
                pv = pv_set.get(t)
                if pv is None:
                    if t in alike and t not in undef_tags:
                        eq.made += 1
                        eq.identical += 1
                        same += 1
                        continue
                    pv = pget(t)
                    if pv is None:
                        continue
                qv = q_set.get(loc)
                if qv is None:
                    qv = qget(loc)
                q_first = qv
                if pv is qv:  # `oblige` would discharge it by identity
                    eq.made += 1
                    eq.identical += 1
                    same += 1
                    continue
                other += 1
                if eq.repeats(paired, pv, qv):
                    continue
                eq.oblige(place, self.edge_text, [pv], [qv], s, loc, t)
            if before is None:
                asked[(tags, alike)] = (q_first, same, other)

    def _edge_recipes(self, place: Place, s: int, target: State, out: State) -> None:
        # The recipes value flow gives at s's entry (used there instead of fresh symbols)
        # must hold here too, or they would be unproved assumptions.
        # (Proved where the recipe was established when nothing here changed it.)
        changed = {t for t, recipe in target.remat.items() if out.is_defined(t) and not (
            self.entry.remat.get(t) == recipe and t not in self.pwritten and self.pwritten.isdisjoint(recipe[1]))}
        # In the order of `repr((t, recipe))`, which is that of `repr(t)`: tags are distinct
        # tuples, and no tuple's repr is a proper prefix of another's.
        for t in sorted_by_repr(changed):
            recipe = target.remat[t]
            pv = self.pget(t)
            again = self.recompute(recipe, self.pget)
            if pv is not None and again is not None:
                self.eq.proof.oblige(place, f"on the edge bb.{self.b} -> bb.{s}, {self.eq.vf.names.tag_name(t)} is "
                               "recomputable where it is rematerialised", [pv], [again])

    def _edge_lanes(self, place: Place, s: int, target: State, out: State, paired: set[tuple[int, int]]) -> None:
        eq = self.eq.proof
        # As `asked` in `_edge_locations`, for lanes holding the same tags and the same allocated value.
        lanes_asked: dict[frozenset[Tag], tuple[Any, int, int]] = {}
        # In the order of `repr((loc, store))`, which is that of `repr(loc)`: locations are
        # distinct, and one location's repr is a proper prefix of another's only where a
        # digit follows (ints), which sorts after the ", " that follows a whole repr.
        lanes = target.lanes
        for loc in sorted_by_repr(set(lanes)):
            store = lanes[loc]
            have = self.lanes_store(loc)
            for k, tags in sorted(store.items()):
                qv = have.get(k)
                if qv is not None:
                    before = lanes_asked.get(tags)
                    if before is not None and before[0] is qv:
                        self.fresh += before[1] + before[2]  # junk is numbered as if each lane made one
                        eq.made += before[1] + before[2]
                        eq.identical += before[1]
                        eq.repeated += before[2]
                        continue
                same = other = 0
                for t in by_repr(tags):
                    pv = self.pget(t) if out.is_defined(t) else None
                    if pv is None:
                        continue
                    if qv is None:
                        self.eq.proof.oblige(place, self.lane_text, [pv], [self.new_junk()], s, k[0], loc, t)
                        continue
                    self.fresh += 1  # junk is numbered as if each lane made one
                    if pv is qv:
                        same += 1
                    else:
                        other += 1
                        if eq.repeats(paired, pv, qv):
                            continue
                    self.eq.proof.oblige(place, self.lane_text, [pv], [qv], s, k[0], loc, t)
                if qv is not None and tags not in lanes_asked:
                    lanes_asked[tags] = (qv, same, other)


class EquivalenceChecker:
    def __init__(self, pre: Function, post: Function, target: Target, classes: dict[VReg, RegisterClass],
                 alignment: FunctionAlignment, cfg: CFG, vf: ValueFlowChecker | None = None,
                 timeout_s: float = 60.0, seed: int = 0) -> None:
        self.classes = classes
        self.pre = pre
        self.post = post
        self.target = target
        self.alignment = alignment
        self.cfg = cfg
        if vf is None or not vf.entry_states:
            vf = ValueFlowChecker(pre, post, classes, alignment, cfg)
            vf.fixed_point()
        self.vf = vf
        self.sem = Semantics()
        # Terms are Python terms; z3 is brought in only when an obligation needs the solver.
        self.proof = Obligations(LAYER, post.file, post.name, vf.names.pretty_symbol, timeout_s, seed)
        self.stats = self.proof.stats
        self._classes: dict[int, dict[Tag, Tag]] = {}
        self._find: dict[int, Any] = {}
        self.findings: list[Finding] = []

    def canonical(self, block: int, tag: Tag) -> Tag:
        """Union-find over the defined tags that a location holds together at block entry."""
        parent = self._classes.get(block)
        if parent is None:
            parent = {}
            state = self.vf.entry_states[block]

            def find(t: Tag) -> Tag:
                while parent.get(t, t) != t:
                    t = parent[t]
                return t

            # Each set once (many locations hold the same): the classes, and the least of each
            # class as its root, do not depend on the order of the unions.
            groups = {v for v in state.locs.values() if len(v) > 1}
            groups.update(v for store in state.lanes.values() for v in store.values() if len(v) > 1)
            for tags in groups:
                defined = [t for t in by_repr(tags) if state.is_defined(t)]
                for t in defined[1:]:
                    a, b = find(defined[0]), find(t)
                    if a != b:
                        lo, hi = (b, a) if repr(a) > repr(b) else (a, b)
                        parent[hi] = lo
            self._classes[block] = parent
            self._find[block] = find
        return self._find[block](tag)

    def vector_to_scalar(self, fn: Function, dst: Operand, src: Operand) -> bool:
        """Whether `dst = COPY src` moves a vector register (one value per thread lane) into a
        scalar one (one per wave): not a copy, LLVM cannot lower it
        (`verilocc.smt.physical.copy_problem`)."""
        return bool(self._files(fn, src) & _VECTOR_FILES) and not self._files(fn, dst) & _VECTOR_FILES

    def _files(self, fn: Function, op: Operand) -> frozenset[RegFile]:
        if op.vreg is not None:
            cls = self.classes.get(op.vreg)
            return frozenset(cls.files) if cls is not None else frozenset()
        if op.phys is None:
            return frozenset()
        return frozenset({physreg_at(fn, op, op.phys).file})

    def unknown(self, ins: Instruction, block: int, msg: str) -> None:
        self.findings.append(Finding("unsupported", LAYER, Place(self.post.file, self.post.name, block, -1, ins.line, ins.column),
                                     msg, severity="unknown"))

    def run(self) -> list[Finding]:
        pre_blocks = {b.number: b for b in self.pre.blocks}
        post_blocks = {b.number: b for b in self.post.blocks}
        for b in self.cfg.reverse_postorder():
            if b not in self.alignment.steps or b not in self.vf.entry_states:
                continue
            run = _BlockRun(self, b, self.vf.entry_states[b])
            ps.walk_block(self.alignment.steps[b], pre_blocks[b], post_blocks[b], run, self.alignment.stack_pointers)
            qb = post_blocks[b]
            last = qb.instructions[-1] if qb.instructions else None
            run.close(self.vf.entry_states, self.cfg.successors(b), last, len(qb.instructions) - 1)
            self.proof.assumptions.extend(run.assumptions)
        self.proof.decide()
        self.findings.extend(self.proof.findings)
        return self.findings
