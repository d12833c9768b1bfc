"""Layer 2's claim as SMT-LIB obligations, one per block.

Value flow (`verilocc.semantics.valueflow`) asks no solver: it computes block-entry states
`R_b` (which post locations hold which virtual values, which virtual lanes are defined, how
rematerialisable lanes were computed) and checks every use against them. Its claim, per
block b, is: *from `R_b`, every use reads its value and, at every edge b -> s, `R_s` holds*.
By induction over paths (the function entry's `R` is the empty state: every register holds
its own incoming value), that is the layer's verdict.

This module states that claim so that any SMT solver can check it, without replaying the
Python transfer functions. Values are elements of an uninterpreted sort `Val`:
- at b's entry, each virtual tag t has a value `v.t`, each post location l a value `w.l`
  (a physical unit that `R_b` does not mention holds its own incoming value, which is the
  virtual program's `v.u<unit>`), and `R_b` is stated as facts: `d.t` (t is defined),
  `d.t => w.l = v.t` for each tag a location holds, the same for SGPR-spill lanes, and
  `d.t => v.t = r(inputs)` for a lane `R_b` says was computed by a rematerialisable
  instruction (`r` an uninterpreted function per instruction key and lane);
- each aligned step of the block moves values: a def gives the virtual lanes and the post
  units the same new value (a fresh constant, or `r(inputs)` for a pure instruction),
  copies, spills and reloads move values between locations, IMPLICIT_DEF makes lanes
  undefined and units junk; the text names every intermediate value, so it stays linear;
- the claim is the conjunction of: at every matched use, `d => post location = virtual
  lane`; at every edge b -> s, every fact of `R_s` (locations, lanes, recipes) and that no
  lane defined at b's exit is undefined in `R_s`. The obligation asserts its negation.

Unsat proves the claim for b. The encoding is value-based: it is a little weaker than the
Python checker's syntactic "holds" relation (an equal value read from another place
counts), and that is exactly the property the equivalence proof needs.
"""

from __future__ import annotations

import hashlib

from verilocc.analysis.instructions import is_pure, value_inputs
from verilocc.pairing.alignment import FunctionAlignment, paired_operands, recipe_key
from verilocc.pairing import steps as ps
from verilocc.pairing.steps import Loc
from verilocc.certificate.obligation import ProofObligation, Uncovered
from verilocc.certificate.smt2 import symbol
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.semantics.holdings import State, Tag
from verilocc.semantics.valueflow import ValueFlowChecker

LAYER = "value-flow"
ORIGIN = "encoding of value flow's block claim (layer 2 asks no solver)"


class _Unsupported(Exception):
    """A step this encoding does not state; the block's claim is then not covered."""


def _loc_symbol(loc: Loc) -> str:
    if isinstance(loc, int):
        return f"u{loc}"
    if isinstance(loc, tuple) and loc and loc[0] == "slot":
        return f"slot{loc[1]}_{loc[2]}"
    raise _Unsupported(f"location {loc!r}")


class _BlockEncoder:
    def __init__(self, vf: ValueFlowChecker, b: int, entry: State) -> None:
        self.vf = vf
        self.b = b
        self.entry = entry
        self.decls: dict[str, str] = {}
        self.defs: list[str] = []  # define-fun of intermediate values, in creation order
        self.facts: list[str] = []
        self.claims: list[str] = []
        self.val: dict[Tag, str] = {}  # virtual program: tag -> value now
        self.dfn: dict[Tag, str] = {}  # tag -> Boolean term: defined now
        self.loc: dict[Loc, str] = {}  # allocated program: location -> value now
        self.lanes: dict[Loc, dict[tuple[int, int], str]] = {}  # SGPR-spill lanes of a VGPR
        self.written: set[Loc] = set()
        self.fresh_count = 0

    # --- symbols and entry facts ---------------------------------------------------------
    def declare(self, name: str, sort: str, args: str = "") -> str:
        sym = symbol(name)
        self.decls.setdefault(sym, f"(declare-fun {sym} ({args}) {sort})")
        return sym

    def fresh(self, why: str) -> str:
        self.fresh_count += 1
        return self.declare(f"x.{self.fresh_count}.{why}", "Val")

    def name(self, term: str, why: str) -> str:
        """A symbol for a compound term, so that terms never nest and the text stays linear."""
        if not term.startswith("("):
            return term
        self.fresh_count += 1
        sym = symbol(f"x.{self.fresh_count}.{why}")
        self.defs.append(f"(define-fun {sym} () Val {term})")
        return sym

    def tag_sym(self, t: Tag) -> str:
        return self.vf.names.tag_symbol(t)

    def defined(self, t: Tag) -> str:
        got = self.dfn.get(t)
        if got is None:
            if t[0] == "$" and self.entry.is_defined(t):
                got = "true"
            else:
                got = self.declare(f"d.{self.tag_sym(t)}", "Bool")
                self.facts.append(f"(assert {got})" if self.entry.is_defined(t) else f"(assert (not {got}))")
            self.dfn[t] = got
        return got

    def value(self, t: Tag) -> str:
        got = self.val.get(t)
        if got is None:
            got = self.declare(f"v.{self.tag_sym(t)}", "Val")
            self.val[t] = got
            recipe = self.entry.remat.get(t)
            if recipe is not None:
                key, inputs, pos = recipe
                args = [self.value(x) for x in inputs]
                self.facts.append(f"(assert (=> {self.defined(t)} (= {got} {self.apply(key, pos, args)})))")
        return got

    def apply(self, key: tuple[object, ...], pos: int, args: list[str]) -> str:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
        f = self.declare(f"r.{key[0]}.{digest}.{pos}.{len(args)}", "Val", " ".join(["Val"] * len(args)))
        return self.name(f"({f} {' '.join(args)})", "app") if args else f

    def holds_fact(self, term: str, tags: frozenset[Tag]) -> None:
        for t in sorted(tags, key=repr):
            self.facts.append(f"(assert (=> {self.defined(t)} (= {term} {self.value(t)})))")

    def at(self, loc: Loc) -> str:
        got = self.loc.get(loc)
        if got is None:
            if isinstance(loc, int) and loc not in self.entry.locs:
                got = self.value(("$", loc))  # never written: its own incoming value
            else:
                got = self.declare(f"w.{_loc_symbol(loc)}", "Val")
                self.holds_fact(got, self.entry.holds(loc))
            self.loc[loc] = got
        return got

    def lane_store(self, loc: Loc) -> dict[tuple[int, int], str]:
        got = self.lanes.get(loc)
        if got is None:
            got = {}
            for k, tags in sorted(self.entry.lanes.get(loc, {}).items()):
                term = self.declare(f"w.{_loc_symbol(loc)}.lane{k[0]}_{k[1]}", "Val")
                self.holds_fact(term, tags)
                got[k] = term
            self.lanes[loc] = got
        return got

    # --- updates -------------------------------------------------------------------------
    def put(self, loc: Loc, term: str) -> None:
        self.loc[loc] = term
        self.written.add(loc)

    def clobber(self, units: tuple[int, ...]) -> None:
        for u in units:
            self.put(u, self.fresh("junk"))
            self.lanes[u] = {}

    def undefine(self, t: Tag) -> None:
        self.val[t] = self.fresh("undef")
        self.dfn[t] = "false"

    def units_of(self, op: Operand) -> tuple[int, ...]:
        return self.vf.units_of(op)

    def define(self, tags: list[Tag], units: tuple[int, ...], values: list[str]) -> None:
        for t, x in zip(tags, values):
            self.val[t] = x
            self.dfn[t] = "true"
        self.clobber(units)
        for u, x in zip(units, values):
            self.put(u, x)

    def new_values(self, ins: Instruction, tags: list[Tag], pure: bool, inputs: list[str] | None) -> list[str]:
        """The values a definition gives its lanes: `r(inputs)` when it is rematerialisable."""
        if pure and inputs is not None:
            key, in_tags = self.vf.recipe(ins)
            return [self.apply(key, p, inputs) if t not in in_tags else self.fresh("def") for p, t in enumerate(tags)]
        return [self.fresh("def") for _ in tags]

    # --- steps (one method per kind, called by `walk_block`) -----------------------------
    def remat_origin(self, s: ps.RematOrigin) -> None:
        ins = s.ins
        inputs = [self.value(t) for t in self.vf.recipe(ins)[1]]
        for d in ins.defs:
            self.undefine_rest(d)
            tags = self.vf.tags_of(d)
            self.define(tags, (), self.new_values(ins, tags, True, inputs))

    def added(self, s: ps.Added) -> None:
        raise _Unsupported("added step")

    def dropped(self, s: ps.Dropped) -> None:
        raise _Unsupported("dropped step")

    def unsupported(self, s: ps.UnsupportedStep) -> None:
        what = f"{s.reason} `{s.ins.opcode}`" if s.reason == ps.SPILL_CODE else f"step `{s.ins.opcode}`, {s.reason}"
        raise _Unsupported(what)

    def undefine_rest(self, op: Operand) -> None:
        for t in self.vf.other_tags(op):
            self.undefine(t)

    def matched(self, s: ps.Matched) -> None:
        pi, qi = s.pre, s.post
        defs: list[tuple[Operand, Operand]] = []
        for _, po, _, qo in paired_operands(pi, qi, self.vf.post, self.vf.classes):
            if po.kind != "reg" or qo.kind != "reg":
                continue
            if po.is_def:
                defs.append((po, qo))
            elif not (po.has("undef") or po.has("debug-use") or po.has("internal")) and not po.is_noreg:
                tags, units = self.vf.tags_of(po), self.vf.read_units(pi, po, qo)
                if len(tags) != len(units):
                    raise _Unsupported(f"operand widths differ at line {qi.line}")
                for t, u in zip(tags, units):
                    self.claims.append(f"(=> {self.defined(t)} (= {self.at(u)} {self.value(t)})) ; line {qi.line} reads {po.register_text}")
        pure = is_pure(pi, allocated=False)
        inputs = [self.value(t) for t in self.vf.recipe(pi)[1]] if pure else None
        for po, qo in defs:
            if po.is_noreg:
                continue
            tags, units = self.vf.tags_of(po), self.units_of(qo)[: len(self.vf.tags_of(po))]
            self.undefine_rest(po)
            self.define(tags, units, self.new_values(pi, tags, pure, inputs))

    def pre_copy(self, s: ps.PreCopy) -> None:
        self.undefine_rest(s.dst)
        if s.src is None:  # the virtual program's `COPY undef`: its lanes take an undefined value
            for dt in self.vf.tags_of(s.dst):
                self.undefine(dt)
            return
        dtags, stags = self.vf.tags_of(s.dst), self.vf.tags_of(s.src)
        for dt, st in zip(dtags, stags):
            if dt == st:
                continue
            d_src = self.defined(st)
            self.val[dt] = self.value(st) if d_src == "true" else \
                self.name(f"(ite {d_src} {self.value(st)} {self.fresh('undef')})", "copy")
            self.dfn[dt] = d_src
        for dt in dtags[len(stags):]:  # a 16-bit source widened: the high half is undefined
            self.undefine(dt)

    def pre_implicit_def(self, s: ps.PreImplicitDef) -> None:
        for d in s.ins.defs:
            self.undefine_rest(d)
            for t in self.vf.tags_of(d):
                self.undefine(t)

    def pre_kill(self, s: ps.PreKill) -> None:
        pass

    def post_copy(self, s: ps.Copy) -> None:
        dunits = self.units_of(s.dst)
        if s.src is None:
            self.clobber(dunits)
            return
        sunits = self.units_of(s.src)
        if not ps.copy_widths_agree(len(dunits), len(sunits)):
            raise _Unsupported(f"COPY of different widths at line {s.ins.line}")
        moved = [(self.at(u), dict(self.lane_store(u))) for u in sunits]
        for d, (term, store) in zip(dunits, moved):
            self.put(d, term)
            self.lanes[d] = store

    def exec_save(self, s: ps.ExecSave) -> None:
        self.post_copy(s)
        for op in s.clobbers:
            self.clobber(self.units_of(op))

    def post_implicit_def(self, s: ps.PostImplicitDef) -> None:
        for d in s.ins.defs:
            self.clobber(self.units_of(d))

    def post_kill(self, s: ps.PostKill) -> None:
        pass

    def spill_to_lane(self, s: ps.SpillToLane) -> None:
        vunits = self.units_of(s.vgpr)
        source = self.units_of(s.vgpr_in) if s.vgpr_in is not None else vunits
        store = dict(self.lane_store(source[0]))
        for h, u in enumerate(self.units_of(s.src)):
            store[(s.lane, h)] = self.at(u)
        for u in vunits:
            self.put(u, self.fresh("junk"))
        self.lanes[vunits[0]] = store

    def restore_from_lane(self, s: ps.RestoreFromLane) -> None:
        store = self.lane_store(self.units_of(s.vgpr)[0])
        dunits = self.units_of(s.dst)
        got = [store.get((s.lane, h)) for h in range(len(dunits))]
        self.clobber(dunits)
        for u, term in zip(dunits, got):
            self.put(u, term if term is not None else self.fresh("junk"))

    def spill_to_slot(self, s: ps.SpillToSlot) -> None:
        for k, u in enumerate(self.units_of(s.src)):
            self.put(("slot", s.slot, k), self.at(u))
            self.lanes[("slot", s.slot, k)] = dict(self.lane_store(u))

    def reload_from_slot(self, s: ps.ReloadFromSlot) -> None:
        dunits = self.units_of(s.dst)
        got = [(self.at(("slot", s.slot, k)), dict(self.lane_store(("slot", s.slot, k)))) for k in range(len(dunits))]
        self.clobber(dunits)
        for u, (term, store) in zip(dunits, got):
            self.put(u, term)
            self.lanes[u] = store

    def remat(self, s: ps.RematCopy) -> None:
        ins = s.ins
        key = recipe_key(ins)
        units = self.units_of(ins.defs[0])
        inputs = [self.at(u) for op in value_inputs(ins) for u in self.units_of(op)]
        values = [self.apply(key, p, inputs) for p in range(len(units))]
        self.clobber(units)
        for u, x in zip(units, values):
            self.put(u, x)

    # --- the edge claims -----------------------------------------------------------------
    def close(self, succs: list[int], entry_states: dict[int, State]) -> None:
        for s in succs:
            target = entry_states.get(s)
            if target is None:
                continue
            locs = set(target.locs) | set(self.entry.locs) | self.written
            for loc in sorted(locs, key=repr):
                if isinstance(loc, tuple) and loc[0] != "slot":
                    continue
                for t in sorted(target.holds(loc), key=repr):
                    self.claims.append(f"(=> {self.defined(t)} (= {self.at(loc)} {self.value(t)})) "
                                       f"; edge to bb.{s}: {_loc_symbol(loc)} holds {self.tag_sym(t)}")
            for t, (key, inputs, pos) in sorted(target.remat.items(), key=repr):
                args = [self.value(x) for x in inputs]
                self.claims.append(f"(=> {self.defined(t)} (= {self.value(t)} {self.apply(key, pos, args)})) "
                                   f"; edge to bb.{s}: recipe of {self.tag_sym(t)}")
            for loc, store in sorted(target.lanes.items(), key=repr):
                have = self.lane_store(loc)
                for k, tags in sorted(store.items()):
                    for t in sorted(tags, key=repr):
                        term = have.get(k) or self.fresh("nolane")
                        self.claims.append(f"(=> {self.defined(t)} (= {term} {self.value(t)})) "
                                           f"; edge to bb.{s}: lane {k} of {_loc_symbol(loc)} holds {self.tag_sym(t)}")
            # Lanes defined here must be defined at s, or s would skip checking their uses.
            here = {t for t in set(self.dfn) | self.entry.defined if t[0] != "$"}
            for t in sorted(here, key=repr):
                if t not in target.defined:
                    self.claims.append(f"(not {self.defined(t)}) ; edge to bb.{s}: {self.tag_sym(t)} undefined")

    def text(self, header: list[str]) -> str:
        lines = [f"; {h}" for h in header]
        lines.append("(set-logic QF_UF)")
        lines.append("(declare-sort Val 0)")
        lines.extend(self.decls[k] for k in sorted(self.decls))
        lines.extend(self.defs)
        lines.append("; the entry invariant R_b")
        lines.extend(self.facts)
        lines.append("; the claim: every use reads its value, every successor's invariant holds")
        if len(self.claims) == 1:
            body = self.claims[0].split(" ; ", 1)[0]
            lines.append(f"(assert (not {body}))")
        else:
            lines.append("(assert (not (and")
            lines.extend("  " + c for c in self.claims)
            lines.append(")))")
        lines.append("(check-sat)")
        return "\n".join(lines) + "\n"


def valueflow_obligations(vf: ValueFlowChecker, pre: Function, post: Function,
                          alignment: FunctionAlignment) -> tuple[list[ProofObligation], list[Uncovered]]:
    """One obligation per block that value flow checked; blocks it cannot state are listed."""
    pre_blocks = {b.number: b for b in pre.blocks}
    post_blocks = {b.number: b for b in post.blocks}
    obligations: list[ProofObligation] = []
    uncovered: list[Uncovered] = []
    order = [b for b in vf.cfg.reverse_postorder() if b in alignment.steps and b in vf.entry_states]
    for b in sorted(order):
        claim = f"bb.{b}: from its entry invariant every use reads its value and every successor's invariant holds"
        enc = _BlockEncoder(vf, b, vf.entry_states[b])
        try:
            ps.walk_block(alignment.steps[b], pre_blocks[b], post_blocks[b], enc, alignment.stack_pointers)
            enc.close(vf.cfg.successors(b), vf.entry_states)
        except _Unsupported as e:
            uncovered.append(Uncovered(LAYER, post.name, claim, f"the certificate cannot state a {e}", b))
            continue
        if not enc.claims:
            continue  # no use and no successor: nothing to prove
        header = [f"verilocc certificate obligation: layer 2 (value flow), function {post.name}, bb.{b}",
                  f"claim: {claim}", "expected answer: unsat"]
        obligations.append(ProofObligation(LAYER, post.name, b, claim, enc.text(header), ORIGIN))
    return obligations, uncovered
