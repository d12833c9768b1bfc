"""The allocation problem of one pre-RA function, from static analysis, for decoders.

For every virtual register: its class, the registers it may take (class membership, tuple
alignment, the function's budget, reservations: the verifier's `register_problem`), its live
interval, the registers it is copied from/to, and its conflicts: the interference relation
layer 1 of the verifier checks (`verilocc.analysis.interference`), lane by lane, against other
virtual registers and fixed physical units; a COPY's copied lanes conflict with its destination
everywhere except at the identity position (`copy_conflicts`). A decoder that picks, for each
register in turn, a candidate that no conflict rules out against the choices already made
produces an assignment that satisfies every interference constraint of layer 1; value flow
and equivalence follow because the program is only renamed (identity copies aside). Spilling
cannot be expressed by an assignment: a function whose registers cannot all be placed
reports `Infeasible` rather than guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from verilocc.allocators.problem import FunctionFacts, read_function
from verilocc.allocators.usage import register_usage
from verilocc.analysis.interference import FixedUnits, Interference, VirtualLanes
from verilocc.analysis.intervals import live_intervals, slot_numbers
from verilocc.analysis.liveness import Liveness
from verilocc.analysis.operands import VReg
from verilocc.errors import InputError
from verilocc.mir.model import Function, Module
from verilocc.target import PhysReg, RegisterClass, Target, parse_physreg
from verilocc.target.limits import Limits
from verilocc.target.registers import RegFile
from verilocc.target.waves import Launch, function_launch


@dataclass(frozen=True)
class CopyConflict:
    """Lanes of mine and of a COPY partner that may share units only as an identity copy."""

    other: VReg | None  # the partner, or None for fixed physical units
    mine: int  # my 16-bit slot mask
    theirs: int  # the partner's slot mask (unused for fixed units)
    identity: tuple[int, int]  # (my slot, its slot) that may lie on one unit
    units: frozenset[int] = frozenset()  # the fixed units (position: the lowest)

    def rules_out(self, reg: PhysReg, chosen: Mapping[VReg, PhysReg]) -> bool:
        """Whether `reg` for me clashes with the partner (its choice so far, or the units)."""
        if self.other is None:
            base, taken = min(self.units), self.units
        else:
            their = chosen.get(self.other)
            if their is None:
                return False
            base = their.units[0]
            taken = frozenset(their.units[s] for s in _bits(self.theirs) if s < len(their.units))
        if reg.units[0] + self.identity[0] == base + self.identity[1]:
            return False
        return any(reg.units[s] in taken for s in _bits(self.mine) if s < len(reg.units))


@dataclass
class VRegInfo:
    vreg: VReg
    cls: RegisterClass
    candidates: tuple[PhysReg, ...]  # within the hard limits of the target and work-group size
    preferred: tuple[PhysReg, ...]  # also within amdgpu-num-* / amdgpu-waves-per-eu requests
    start: int  # first instruction number where some lane is live or defined
    end: int  # one past the last
    copies: list[VReg | PhysReg] = field(default_factory=list)  # COPY partners, in program order
    # (other vreg, my 16-bit slot mask, its slot mask): lanes that must not share a unit
    conflicts: list[tuple[VReg, int, int]] = field(default_factory=list)
    fixed: list[tuple[int, frozenset[int]]] = field(default_factory=list)  # (my slot mask, physical units)
    # The copied lanes of COPYs: no shared unit except at the identity position.
    copy_conflicts: list[CopyConflict] = field(default_factory=list)
    # Virtual registers read where this one is first defined and live nowhere just after:
    # their registers become free there (a good allocator reuses them).
    dying: list[VReg] = field(default_factory=list)


@dataclass
class AllocationProblem:
    fn: Function
    target: Target
    limits: Limits
    order: list[VReg]  # program order of first definition: the dense renumbering
    info: dict[VReg, VRegInfo]
    # Highest register number + 1 per file: what the better of two first-fit allocations uses
    # (`tight`), and what keeps the occupancy it reaches (`caps`); decoders try within them first.
    # Computed by the first `verilocc.llm.choices.ChoiceTables` of the problem (`caps_known`).
    tight: dict[RegFile, int] = field(default_factory=dict)
    caps: dict[RegFile, int] = field(default_factory=dict)
    caps_known: bool = False
    # Where the widest-tuples-first fit is the better one: per line (dense id) the first unit of
    # its register, listed while a decoder's vector registers so far are the fit's
    # (`verilocc.llm.choices`); empty where program order is as good.
    fit: list[int] = field(default_factory=list)
    # Whether registers beyond what amdgpu-num-* / amdgpu-waves-per-eu request may be used.
    # The verifier only warns (LLVM 22 drops requests it cannot meet), but LLVM 19 reserves
    # those registers and llc-19 rejects an allocation that uses them: off by default.
    over_budget: bool = False
    # Waves per SIMD of that first-fit allocation (0 when it runs out of registers): the
    # occupancy the loop's repair step does not go below (`run_loop(floor=...)`).
    floor_waves: int = 0
    # What bounds occupancy besides the registers (LDS, work-group size, amdgpu-waves-per-eu)
    # in the file as written: `run_loop` keeps the input's when it allocates for other waves.
    launch: Launch | None = None

    @property
    def dense(self) -> dict[VReg, int]:
        return {v: i for i, v in enumerate(self.order)}

    def banned(self, v: VReg, chosen: Mapping[VReg, PhysReg]) -> dict[int, set[int]]:
        """My slot mask -> units that those slots may not use, given the choices so far."""
        out: dict[int, set[int]] = {}
        iv = self.info[v]
        for mask, units in iv.fixed:
            out.setdefault(mask, set()).update(units)
        for w, mine, theirs in iv.conflicts:
            reg = chosen.get(w)
            if reg is None:
                continue
            out.setdefault(mine, set()).update(reg.units[s] for s in _bits(theirs) if s < len(reg.units))
        return out

    def allowed(self, v: VReg, chosen: Mapping[VReg, PhysReg], *, budget: str = "preferred",
                excluded: Iterable[PhysReg] = ()) -> list[PhysReg]:
        """Candidates of `v` that no conflict with `chosen` rules out, in allocation order.

        `budget`: "hard" (the target and work-group size), "preferred" (also the amdgpu-num-* /
        waves-per-eu requests), "capped" (within `tight`, else `caps`, else "preferred").
        """
        iv = self.info[v]
        banned = self.banned(v, chosen)
        skip = set(excluded)
        pools = [iv.candidates] if budget == "hard" else [iv.preferred]
        if budget == "capped":
            for caps in (self.caps, self.tight):
                if caps:
                    pools.insert(0, tuple(r for r in iv.preferred if within(r, caps)))
        for pool in pools:
            out = [reg for reg in pool if reg not in skip and all(
                reg.units[s] not in units for mask, units in banned.items() for s in _bits(mask) if s < len(reg.units))
                and not any(c.rules_out(reg, chosen) for c in iv.copy_conflicts)]
            if out:
                return out
        return []

    def usage(self, regs: Mapping[VReg, PhysReg]) -> dict[str, int]:
        """Registers an assignment uses with the function's fixed physical registers."""
        return register_usage(self.fn, self.target, regs.values(), self.launch)


def within(reg: PhysReg, caps: Mapping[RegFile, int]) -> bool:
    cap = caps.get(reg.file)
    return cap is None or reg.index + max(1, reg.width32) <= cap


def _bits(mask: int) -> list[int]:
    return [s for s in range(mask.bit_length()) if mask >> s & 1]


def single_function(module: Module) -> Function:
    if len(module.functions) != 1:
        raise InputError(f"expected one function per file, found {len(module.functions)}", module.file, 1, 1)
    return module.functions[0]


def build_problem(fn: Function, target: Target, facts: FunctionFacts | None = None) -> AllocationProblem:
    """The model's problem of `fn`, read from the facts every strategy reads
    (`verilocc.allocators.problem.FunctionFacts`): its calls expanded, liveness, COPY partners,
    register pools and the interference relation. `facts`: those of `fn` when made already."""
    facts = facts or read_function(fn, target)
    liveness = facts.liveness
    limits = facts.limits  # LLVM's VGPR/AGPR split: llc reserves the rest
    numbers = slot_numbers(liveness)
    intervals = live_intervals(liveness)
    first_def, first_use, reads = _first_operands(facts.called, liveness, numbers)
    big = 1 << 30
    # Registers the `registers:` table declares but no instruction names (LLVM keeps
    # `vreg_1` entries SILowerI1Copies emptied, a class without physical registers) are not
    # allocated.
    order = sorted((v for v in facts.classes if v in first_def or v in first_use),
                   key=lambda v: (first_def.get(v, big), first_use.get(v, big), str(v)))
    copies = _copy_partners(facts)
    pools: dict[str, tuple[tuple[PhysReg, ...], tuple[PhysReg, ...]]] = {}
    info: dict[VReg, VRegInfo] = {}
    for v in order:
        cls = facts.classes[v]
        iv = intervals.get(v)
        start = iv.start // 2 if iv else first_def.get(v, first_use.get(v, 0))
        end = (iv.end + 1) // 2 if iv else start + 1
        if cls.name not in pools:
            pools[cls.name] = _pools(facts, cls, limits)
        info[v] = VRegInfo(v, cls, *pools[cls.name], start, end, copies=copies[v])
        at = first_def.get(v)
        if at is not None:
            info[v].dying = [w for w in reads.get(at, []) if w != v and w in intervals
                             and intervals[w].live_at(2 * at) and not intervals[w].live_at(2 * at + 1)]
    _add_conflicts(info, facts.interferences())
    return AllocationProblem(fn, target, limits, order, info, launch=function_launch(fn, target))


def _pools(facts: FunctionFacts, cls: RegisterClass, limits: Limits) -> tuple[tuple[PhysReg, ...], tuple[PhysReg, ...]]:
    """The registers of `cls` within the hard `limits`, and those also within what the
    function's attributes request (`limits.hint`)."""
    hard = facts.pool(cls, limits)
    if limits.hint is None:
        return hard, hard
    requested = set(facts.pool(cls, limits.hint))
    return hard, tuple(m for m in hard if m in requested)


def _first_operands(fn: Function, liveness: Liveness, numbers: Mapping[tuple[int, int], int]
                    ) -> tuple[dict[VReg, int], dict[VReg, int], dict[int, list[VReg]]]:
    """Per virtual register the instruction number of its first def and of its first use, and
    per instruction number the virtual registers it reads."""
    blocks = {b.number: b for b in fn.blocks}
    first_def: dict[VReg, int] = {}
    first_use: dict[VReg, int] = {}
    reads: dict[int, list[VReg]] = {}
    for b in liveness.cfg.order:
        for idx, ins in enumerate(blocks[b].instructions):
            n = numbers[(b, idx)]
            for op in ins.operands:
                if op.kind == "reg" and op.vreg is not None:
                    (first_def if op.is_def else first_use).setdefault(op.vreg, n)
                    if not op.is_def and op.vreg not in reads.setdefault(n, []):
                        reads[n].append(op.vreg)
    return first_def, first_use, reads


def _copy_partners(facts: FunctionFacts) -> dict[VReg, list[VReg | PhysReg]]:
    """Per virtual register the registers whole-register COPYs copy it from or to, in program
    order."""
    copies: dict[VReg, list[VReg | PhysReg]] = {v: [] for v in facts.classes}
    for a, c in facts.copies:
        if a.subreg or c.subreg:
            continue
        for x, y in ((a, c), (c, a)):
            if x.vreg is not None and x.vreg in copies:
                if y.vreg is not None:
                    copies[x.vreg].append(y.vreg)
                elif y.phys:
                    try:
                        copies[x.vreg].append(parse_physreg(y.phys))
                    except Exception:  # noqa: BLE001
                        pass
    return copies


def _add_conflicts(info: dict[VReg, VRegInfo], facts: Iterable[Interference]) -> None:
    """The interference relation in the model's terms: conflicts between virtual registers
    (each pair once), fixed units (merged per slot mask) and the copied lanes of COPYs."""
    seen: set[tuple[VReg, VReg, int, int]] = set()
    for fact in facts:
        d, o, ident = fact.defined, fact.other, fact.identity
        if isinstance(d, VirtualLanes) and isinstance(o, VirtualLanes):
            if ident is None:
                if d.vreg != o.vreg and (d.vreg, o.vreg, d.slots, o.slots) not in seen:
                    seen.add((d.vreg, o.vreg, d.slots, o.slots))
                    info[d.vreg].conflicts.append((o.vreg, d.slots, o.slots))
                    info[o.vreg].conflicts.append((d.vreg, o.slots, d.slots))
            else:
                info[d.vreg].copy_conflicts.append(CopyConflict(o.vreg, d.slots, o.slots, ident))
                info[o.vreg].copy_conflicts.append(CopyConflict(d.vreg, o.slots, d.slots, (ident[1], ident[0])))
        elif isinstance(d, VirtualLanes) and isinstance(o, FixedUnits):
            info[d.vreg].fixed.append((d.slots, o.units))
        elif isinstance(d, FixedUnits) and isinstance(o, VirtualLanes):
            if ident is None:
                info[o.vreg].fixed.append((o.slots, d.units))
            else:
                info[o.vreg].copy_conflicts.append(CopyConflict(None, o.slots, 0, (ident[1], ident[0]), d.units))
    for iv in info.values():  # merge fixed units per mask: fewer entries to test
        merged: dict[int, set[int]] = {}
        for m, units in iv.fixed:
            merged.setdefault(m, set()).update(units)
        iv.fixed = [(m, frozenset(u)) for m, u in sorted(merged.items())]
