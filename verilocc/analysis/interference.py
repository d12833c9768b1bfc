"""The interference relation: which register lanes may not share a 16-bit register unit.

Layer 1 of the verifier (`verilocc.smt.constraints`), the SMT allocator
(`verilocc.allocators.problem`) and the problem the language model decodes against
(`verilocc.llm.problem`) all read this one relation, so an allocator can never propose what
the verifier refuses on interference grounds.

The relation is stated at definitions, as LLVM's LiveIntervals state it: two values interfere
when one is defined where the other is live. Liveness is per lane (`verilocc.analysis.liveness`:
lanes live after the instruction *and* possibly defined there). Each fact says that the lanes
`defined` writes and the lanes or units of `other` must not share a 16-bit unit. Lanes are
16-bit *slots* of a virtual register's register (bit s = slot s, `slot_mask`); physical
registers are their units. At each instruction with defs:

1. *Live after.* Every def against every virtual lane and physical unit live after the
   instruction (except the def's own register): a dead def still writes its register.
2. *Defs of one instruction* never share a lane with each other.
3. *Early-clobber.* An `early-clobber` def is written before the instruction reads its uses,
   so it is also against each virtual use of the instruction, on the lanes of the use that
   may hold a value there (possibly defined before the instruction). Not against:
   - a *tied* use (the tie makes it the def's own register: `verilocc.smt.physical` checks
     on the allocated program that tied operands share their register);
   - physical uses (they are fixed: the allocated program's early-clobber check sees them);
   - the def's own register (its lanes cannot overlap themselves).
4. *COPY.* LLVM's coalescer joins a COPY's source and destination, so a COPY whose source is
   virtual is an identity when both sit on the same units. Only the *copied* lanes (those
   the source operand reads, e.g. sub1 of `%3.sub1`) are exempt, and only at the identity
   position: `identity` = (slot of `defined`, slot of `other`) that may coincide. Elsewhere
   the copied lanes must not overlap the destination (a shifted tuple copy clobbers the
   source), and the source's other lanes live after the copy interfere as in rule 1. The
   destination may be virtual or physical (`$vgpr0 = COPY %5`, %5 in $vgpr0). A physical
   source is exempt the same way: `%5 = COPY $vcc` with $vcc read again later may put %5 in
   $vcc itself (LLVM's allocator does: `acc-ldst.ll`), since both then name one value; the
   units of the source live after the copy are the other side, with the identity (slot 0 of
   %5, the source's lowest unit) when they are the whole source register. Soundness rests on
   the definitions that follow: a later def of %5 or of $vcc while the other is live is a
   fact of rule 1, and value flow checks every read. Other moves (`V_MOV_B32`) are not
   copies: their operands interfere as usual.
5. `KILL` defines no value: it interferes with nothing. `IMPLICIT_DEF` is a def like any
   other: it writes no bits, but its register is written in LLVM's reading of the program
   (a later pass may drop an earlier def of the register as dead), and value flow takes it
   as a write after which the units hold no value; so a live value may not sit on its lanes.

Facts are yielded in a fixed order (blocks in CFG order, instructions last to first, defs in
operand order; for each def the live virtual lanes, the live physical units, the early-clobber
uses; then the pairs of defs), so clients that keep the first place of a repeated fact are
deterministic. Facts are not deduplicated; masks are never empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from dataclasses import dataclass

from verilocc.analysis.liveness import Liveness
from verilocc.analysis.operands import RegRef, VReg, slot_mask
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.target import PhysReg

#: Instructions whose defs interfere with nothing (rule 5).
NO_INTERFERENCE_OPCODES = frozenset({"KILL"})


@dataclass(frozen=True, slots=True)
class VirtualLanes:
    """Lanes of a virtual register, as 16-bit slots of its register (bit s = slot s)."""

    vreg: VReg
    slots: int


@dataclass(frozen=True, slots=True)
class FixedUnits:
    """Units of physical registers: one physical def (`reg`), or every physical unit live."""

    units: frozenset[int]
    reg: PhysReg | None = None

    @property
    def contiguous(self) -> bool:
        return max(self.units) - min(self.units) + 1 == len(self.units)


InterferenceSide = VirtualLanes | FixedUnits


@dataclass(init=False)
class Interference:
    """`defined` (written by the instruction at `block`/`index`) and `other` share no unit.
    (Not frozen, with `__init__` written out: there are tens of thousands, and a frozen
    dataclass, or the interpreted `__init__` dataclasses writes, takes several times longer
    to make.)

    `meets`: "live" (other is live after the instruction), "def" (another def of it) or
    "use" (an early-clobber def against a use). `identity`: for the copied lanes of a COPY,
    the (slot of `defined`, slot of `other`) that may lie on the same unit, the one position
    where they may overlap; positions are slot 0 of a virtual register and the lowest unit
    of fixed units.
    """

    block: int
    index: int
    defined: InterferenceSide
    other: InterferenceSide
    meets: str
    def_op: Operand
    identity: tuple[int, int] | None = None

    def __init__(self, block: int, index: int, defined: InterferenceSide, other: InterferenceSide, meets: str,
                 def_op: Operand, identity: tuple[int, int] | None = None) -> None:
        self.block = block
        self.index = index
        self.defined = defined
        self.other = other
        self.meets = meets
        self.def_op = def_op
        self.identity = identity

    @property
    def kind(self) -> str:
        """The finding kind a violation is: "early-clobber" or "interference"."""
        return "early-clobber" if self.meets == "use" else "interference"

    @property
    def live_vreg(self) -> VReg | None:
        """The virtual register whose value the def would overwrite (None for two defs)."""
        return self.other.vreg if self.meets != "def" and isinstance(self.other, VirtualLanes) else None


def _def_side(d: RegRef) -> InterferenceSide | None:
    if d.vreg is not None:
        return VirtualLanes(d.vreg, slot_mask(d.mask))
    return FixedUnits(frozenset(d.units), d.phys) if d.units else None


def _same(a: InterferenceSide, b: InterferenceSide) -> bool:
    """Sides that never constrain each other: one virtual register, or two fixed sides."""
    if isinstance(a, VirtualLanes) and isinstance(b, VirtualLanes):
        return a.vreg == b.vreg
    return isinstance(a, FixedUnits) and isinstance(b, FixedUnits)


def copied_lanes(ins: Instruction, uses: tuple[RegRef, ...], defs: tuple[RegRef, ...]) -> tuple[RegRef, RegRef] | None:
    """(destination, source) of a COPY (rule 4), else None; the source is virtual lanes or
    the units of one physical register."""
    if ins.opcode != "COPY":
        return None
    dsts = [d for d in defs if not d.op.is_implicit]
    srcs = [u for u in uses if not u.op.is_implicit]
    if len(dsts) != 1 or len(srcs) != 1 or (srcs[0].vreg is None and not srcs[0].units):
        return None
    return dsts[0], srcs[0]


def _first_slot(slots: int) -> int:
    return (slots & -slots).bit_length() - 1


def _against_live_units(b: int, idx: int, ds: VirtualLanes, d: RegRef, live: FixedUnits,
                        copy: tuple[RegRef, RegRef] | None) -> Iterator[Interference]:
    """A virtual def against the physical units live after it; the source of a COPY from a
    physical register is the identity side (rule 4)."""
    if copy is None or d is not copy[0] or copy[1].vreg is not None:
        yield Interference(b, idx, ds, live, "live", d.op)
        return
    source = frozenset(copy[1].units)
    rest = live.units - source
    held = live.units & source
    if rest:
        yield Interference(b, idx, ds, FixedUnits(rest), "live", d.op)
    if held:
        whole = held == source and FixedUnits(held).contiguous
        other = FixedUnits(held, copy[1].phys if whole else None)
        yield Interference(b, idx, ds, other, "live", d.op, (_first_slot(ds.slots), 0) if whole else None)


def interferences(fn: Function, liveness: Liveness, only: Set[VReg] | None = None) -> Iterator[Interference]:
    """Every interference fact of `fn` (see the module docstring for the rules and order).

    `only`: the facts whose virtual sides are all registers of this set (the same facts, in
    the same order, as filtering the whole relation afterwards)."""
    blocks = {b.number: b for b in fn.blocks}
    lanes_of: dict[tuple[VReg, int], VirtualLanes] = {}
    for b in liveness.cfg.order:
        effects = liveness.effects[b]
        for idx, live in liveness.walk_backward(b, only):
            ins = blocks[b].instructions[idx]
            eff = effects[idx]
            if not eff.defs or ins.opcode in NO_INTERFERENCE_OPCODES:
                continue
            def_sides: list[tuple[InterferenceSide, RegRef]] = []
            for d in eff.defs:
                side = _def_side(d)
                if side is not None:
                    def_sides.append((side, d))
            if only is not None and all(isinstance(ds, VirtualLanes) and ds.vreg not in only for ds, _ in def_sides):
                continue
            copy = copied_lanes(ins, eff.uses, eff.defs)
            live_vregs = []
            for w, m in live.vregs.items():  # only registers of `only`, when given
                ls = lanes_of.get((w, m))
                if ls is None:
                    ls = lanes_of[(w, m)] = VirtualLanes(w, slot_mask(m))
                live_vregs.append(ls)
            live_units = FixedUnits(frozenset(live.units)) if live.units else None
            for ds, d in def_sides:
                if only is not None and isinstance(ds, VirtualLanes) and ds.vreg not in only:
                    continue
                for ls in live_vregs:
                    if _same(ds, ls):
                        continue
                    if copy is not None and d is copy[0] and ls.vreg == copy[1].vreg:
                        copied = slot_mask(copy[1].mask)
                        if ls.slots & ~copied:
                            yield Interference(b, idx, ds, VirtualLanes(ls.vreg, ls.slots & ~copied), "live", d.op)
                        if ls.slots & copied:
                            dpos = _first_slot(ds.slots) if isinstance(ds, VirtualLanes) else 0
                            ident: tuple[int, int] | None = (dpos, _first_slot(copied))
                            if isinstance(ds, FixedUnits) and not ds.contiguous:
                                ident = None
                            yield Interference(b, idx, ds, VirtualLanes(ls.vreg, ls.slots & copied), "live", d.op, ident)
                        continue
                    yield Interference(b, idx, ds, ls, "live", d.op)
                if live_units is not None and not isinstance(ds, FixedUnits):
                    yield from _against_live_units(b, idx, ds, d, live_units, copy)
                if d.op.has("early-clobber"):
                    for u in eff.uses:
                        if u.op.tied_def is not None or u.vreg is None:
                            continue
                        us = u.mask & (liveness.defined_after(b, idx - 1, u.vreg) if idx else
                                       liveness.defined_in[b].get(u.vreg, 0))
                        use_side = VirtualLanes(u.vreg, slot_mask(us))
                        if only is not None and u.vreg not in only:
                            continue
                        if us and not _same(ds, use_side):
                            yield Interference(b, idx, ds, use_side, "use", d.op)
            for i in range(len(def_sides)):
                for j in range(i + 1, len(def_sides)):
                    (a, d), (c, _) = def_sides[i], def_sides[j]
                    if only is not None and any(isinstance(x, VirtualLanes) and x.vreg not in only for x in (a, c)):
                        continue
                    if not _same(a, c):
                        yield Interference(b, idx, a, c, "def", d.op)


__all__ = ["FixedUnits", "Interference", "InterferenceSide", "VirtualLanes", "copied_lanes", "interferences"]
