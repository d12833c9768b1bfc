"""Layer 2's abstract domain: which values of the virtual program each location holds.

In the manner of regalloc2's checker:

- A *location* is a 16-bit physical register unit (an int), a 16-bit lane of a stack slot
  (`("slot", N, k)`) (both a `Loc` of `verilocc.pairing.steps`), or, for SGPRs spilled into
  lanes of a VGPR, a *lane store* attached to the location that holds the VGPR (`State.lanes`).
- A *tag* names a value of the virtual program: `(vreg, lane)` for a 16-bit lane of a virtual
  register, or `("$", unit)` for the value a physical register unit has in the virtual program
  (fixed registers such as $exec, $vcc, $m0, argument registers).
- The state maps each location to the set of tags it holds. A unit that was never written
  holds its incoming value `("$", unit)`. The state also records which virtual lanes are
  *defined* (an undefined lane, never written or last set by IMPLICIT_DEF, may be read from
  anywhere) and, for lanes last set by a pure instruction (one LLVM may rematerialise), how
  they were computed: `remat[tag] = (recipe key, input tags, position)` (`recipe_key`). An
  entry dies when any of its inputs is redefined.
- Meet (at block entry, over predecessors): a location holds a tag if, on every predecessor,
  it holds the tag or the tag is undefined there. Defined = union; remat = agreeing entries.
  It is an intersection, so the forward fixed point exists and is reached.

The transfer rules that change a state are `verilocc.semantics.valueflow`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verilocc.pairing.steps import Loc

Tag = tuple[object, ...]
# How a lane's current value was computed: (instruction key, input tags, lane position).
Remat = tuple[tuple[object, ...], tuple[Tag, ...], int]


_OWN: dict[int, frozenset[Tag]] = {}
_NOTHING: frozenset[Tag] = frozenset()


def untouched(loc: Loc) -> frozenset[Tag]:
    """What a location holds where no instruction has put anything in it: a register unit
    its own entry value, a stack slot nothing. (One set per unit, made once: the same
    object comes back, which dictionaries keyed by sets of tags find at once.)"""
    if not isinstance(loc, int):
        return _NOTHING
    got = _OWN.get(loc)
    if got is None:
        got = _OWN[loc] = frozenset({("$", loc)})
    return got


@dataclass
class State:
    locs: dict[Loc, frozenset[Tag]] = field(default_factory=dict)
    lanes: dict[Loc, dict[tuple[int, int], frozenset[Tag]]] = field(default_factory=dict)
    defined: set[Tag] = field(default_factory=set)
    remat: dict[Tag, Remat] = field(default_factory=dict)
    # Physical registers whose virtual-program value is undefined here (the high half after a
    # 16-bit COPY widened into them, an IMPLICIT_DEF, a copy of an undefined lane).
    undef_fixed: set[Tag] = field(default_factory=set)
    # The inverse of `locs` (tag -> the locations in `locs` holding it), kept by `_Walker`;
    # None until a walker needs it. A copy of the state shares the sets: a walker changes
    # only the sets it made or copied itself (`_Walker.own`).
    index: dict[Tag, set[Loc]] | None = None

    def copy(self) -> State:
        return State(dict(self.locs), {k: dict(v) for k, v in self.lanes.items()}, set(self.defined), dict(self.remat),
                     set(self.undef_fixed), dict(self.index) if self.index is not None else None)

    def holds(self, loc: Loc) -> frozenset[Tag]:
        got = self.locs.get(loc)
        if got is not None:
            return got
        return untouched(loc)

    def is_defined(self, tag: Tag) -> bool:
        return (tag[0] == "$" and tag not in self.undef_fixed) or tag in self.defined

    def same_as(self, other: State) -> bool:
        return (
            self.locs == other.locs
            and self.lanes == other.lanes
            and self.defined == other.defined
            and self.remat == other.remat
            and self.undef_fixed == other.undef_fixed
        )


def meet(states: list[State]) -> State:
    if len(states) == 1:
        return states[0].copy()
    out = State()
    defined: set[Tag] = set()
    for s in states:
        defined |= s.defined
    out.defined = defined
    out.undef_fixed = set.intersection(*(s.undef_fixed for s in states))
    all_locs: set[Loc] = set()
    for s in states:
        all_locs.update(s.locs)
    rest = states[1:]
    for loc in all_locs:
        first = states[0].holds(loc)
        others = [s.holds(loc) for s in rest]
        if all(h is first or h == first for h in others):
            keep = first  # held on every path: kept whatever is defined where
        else:
            keep = _kept([first, *others], states)
        if isinstance(loc, int) and len(keep) == 1 and ("$", loc) in keep:
            continue
        out.locs[loc] = keep
    lane_locs: set[Loc] = set()
    for s in states:
        lane_locs.update(s.lanes)
    for loc in lane_locs:
        slots: dict[tuple[int, int], frozenset[Tag]] = {}
        keys: set[tuple[int, int]] = set()
        for s in states:
            keys.update(s.lanes.get(loc, {}))
        for k in keys:
            sets = [s.lanes.get(loc, {}).get(k, frozenset()) for s in states]
            first_set = sets[0]
            if all(st is first_set or st == first_set for st in sets):
                kept = first_set  # the same on every path: all of it is kept
            else:
                cand2: set[Tag] = set().union(*sets)
                kept = frozenset(t for t in cand2 if all(t in st or not s.is_defined(t) for st, s in zip(sets, states)))
            if kept:
                slots[k] = kept
        if slots:
            out.lanes[loc] = slots
    remat = states[0].remat
    out.remat = {t: v for t, v in remat.items() if all(s.remat.get(t) == v for s in states[1:])}
    return out


def _kept(sets: list[frozenset[Tag]], states: list[State]) -> frozenset[Tag]:
    """The tags of `sets` (what one location holds on each path) that every path holds or
    leaves undefined: all of them but those some path defines and does not hold there."""
    union = sets[0].union(*sets[1:])
    lost: set[Tag] = set()
    for h, s in zip(sets, states):
        missing = union - h
        if missing:
            lost |= missing & s.defined  # defined lanes of virtual registers
            lost.update(t for t in missing - s.defined if t[0] == "$" and t not in s.undef_fixed)
    return union - lost if lost else union
