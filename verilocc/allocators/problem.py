"""The allocation problem of one pre-RA function, in plain Python, before any solver is touched.

What every allocation strategy reads of a function (`FunctionFacts`, made by `read_function`):
its register classes, its calls expanded (they clobber what their register masks do not
preserve, as the verifier reads them), liveness, the interference relation
(`verilocc.analysis.interference`, the one the verifier's layer 1 checks), its COPYs (the
copy partners) and the registers each class may take within a budget (the register pools,
`verilocc.target.limits.register_problem`). The SMT allocator and the greedy colourings read
`Problem` (`build_problem`), made from these facts: per virtual register the (file, first
32-bit register) pairs its pool allows (`verilocc.allocators.files`); between values the
conflicts of the interference relation at 16-bit lane granularity, with the COPY identity
waiver; the COPYs that can become identities (copy hints); lower bounds on the registers any
allocation needs (`verilocc.allocators.pressure`). The language model decodes against its own
view of the same facts (`verilocc.llm.problem`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from verilocc.allocators.files import (AGPR_FILE, FILES, SGPR_FILE, VCC_FILE, VGPR_FILE, ConflictSide, locate,
                                       locate_low_half, phys_sides, unit_slot)
from verilocc.allocators.pressure import pressure
from verilocc.analysis.calls import expand_calls, sgpr_striped
from verilocc.analysis.cfg import CFG, build_cfg
from verilocc.analysis.interference import FixedUnits, Interference, VirtualLanes, interferences
from verilocc.analysis.liveness import Liveness, compute_liveness
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.errors import TargetError
from verilocc.mir.model import Function, Operand
from verilocc.target import PhysReg, RegFile, RegisterClass, Target, parse_physreg
from verilocc.target.gfx import has_trap_handler
from verilocc.target.limits import SHADER_CONVENTIONS, Limits, register_problem
from verilocc.target.waves import Launch, function_launch

# `AGPR_FILE`, `FILES`, `SGPR_FILE`, `VGPR_FILE` are read from this module too (the spiller's).


# --------------------------------------------------------------------------------------------
# What every strategy reads of a function
# --------------------------------------------------------------------------------------------
class FunctionFacts:
    """The facts of one pre-RA function that every allocation strategy reads, each made when
    first asked for and then kept (read only)."""

    def __init__(self, fn: Function, target: Target) -> None:
        self.fn = fn  # as written
        self.target = target
        self._pools: dict[tuple[RegisterClass, Limits], tuple[PhysReg, ...]] = {}

    @cached_property
    def classes(self) -> dict[VReg, RegisterClass]:
        return vreg_classes(self.fn)

    @cached_property
    def limits(self) -> Limits:
        """`allocation_limits`: the hard limits, with LLVM's VGPR/AGPR split."""
        return allocation_limits(self.fn, self.target)

    @cached_property
    def called(self) -> Function:
        """`fn` with every call defining what it clobbers (`verilocc.analysis.calls`); the
        registers a callee clobbers are not registers this function uses."""
        return expand_calls(self.fn, self.target, sgpr_striped(self.fn))

    @cached_property
    def liveness(self) -> Liveness:
        """Liveness of `called`."""
        return compute_liveness(self.called, build_cfg(self.called), self.classes)

    def interferences(self) -> list[Interference]:
        """The interference relation of `called`, in its fixed order."""
        return list(interferences(self.called, self.liveness))

    @cached_property
    def copies(self) -> list[tuple[Operand, Operand]]:
        """(destination, source) of every COPY with two explicit register operands, in layout
        order: the COPYs an allocation can make identities by giving both sides one register."""
        out = []
        for b in self.fn.blocks:
            for ins in b.instructions:
                if ins.opcode == "COPY":
                    regs = ins.explicit_regs
                    if len(regs) == 2:
                        out.append((regs[0], regs[1]))
        return out

    def pool(self, cls: RegisterClass, budget: Limits) -> tuple[PhysReg, ...]:
        """The members of `cls` a value may take within `budget`, in the class's order."""
        key = (cls, budget)
        got = self._pools.get(key)
        if got is None:
            got = self._pools[key] = tuple(m for m in cls.members(self.target)
                                           if register_problem(m, cls, self.target, budget) is None)
        return got


def read_function(fn: Function, target: Target) -> FunctionFacts:
    return FunctionFacts(fn, target)


# --------------------------------------------------------------------------------------------
# The problem the SMT allocator and the colourings read
# --------------------------------------------------------------------------------------------
@dataclass
class Value:
    vreg: VReg
    cls: RegisterClass
    width32: int
    allowed: dict[int, tuple[int, ...]]  # file code -> allowed first register indices
    #: A 16-bit value (``vgpr_16``, LLVM 22's true16 code on gfx11+): it takes the low half of
    #: the register it is given, and nothing is placed in the high half.
    half: bool = False


#: Two sides with 16-bit slot masks that must not share a lane, unless `waiver` = (a offset,
#: b offset) is given and both offsets name the same slot: a COPY's destination may sit
#: exactly on the lanes it copies (the copy becomes an identity), and nowhere else on them.
Conflict = tuple[ConflictSide, int, ConflictSide, int, tuple[int, int] | None]


@dataclass
class Problem:
    fn: Function
    target: Target
    limits: Limits
    values: dict[VReg, Value]
    conflicts: list[Conflict]
    copies: list[tuple[ConflictSide, int, ConflictSide, int, int]]  # (dst, dst slot offset, src, src offset, slots)
    fixed_top: dict[int, int]  # file code -> highest fixed register index + 1
    pressure: dict[str, int]  # lower bounds: "vector", "sgpr", "vgpr" (VGPR-only values) live at once
    _graph: tuple[dict[VReg, list[Neighbour]], dict[VReg, list[tuple[ConflictSide, int, int]]]] | None = field(
        default=None, init=False, repr=False, compare=False)
    _orders: dict[bool, tuple[VReg, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _liveness: tuple[CFG, Liveness] | None = field(default=None, init=False, repr=False, compare=False)
    _launch: Launch | None = field(default=None, init=False, repr=False, compare=False)

    def launch(self) -> Launch:
        """What bounds the occupancy of `fn` besides its registers (LDS, work-group size,
        amdgpu-waves-per-eu); made once per problem."""
        if self._launch is None:
            self._launch = function_launch(self.fn, self.target)
        return self._launch

    def liveness(self) -> tuple[CFG, Liveness]:
        """The control-flow graph and liveness of `fn` as written (calls not expanded); made once
        per problem, read only."""
        if self._liveness is None:
            cfg = build_cfg(self.fn)
            self._liveness = (cfg, compute_liveness(self.fn, cfg, vreg_classes(self.fn)))
        return self._liveness

    def graph(self) -> tuple[dict[VReg, list[Neighbour]], dict[VReg, list[tuple[ConflictSide, int, int]]]]:
        """Each value's conflicts as neighbours, and its copy partners (with my slot offset and
        theirs); made once per problem, read only."""
        if self._graph is None:
            adj: dict[VReg, list[Neighbour]] = {v: [] for v in self.values}
            for a, am, b, bm, waiver in self.conflicts:
                if a.vreg is not None:
                    adj[a.vreg].append((b, am, bm, waiver))
                if b.vreg is not None:
                    adj[b.vreg].append((a, bm, am, None if waiver is None else (waiver[1], waiver[0])))
            partners: dict[VReg, list[tuple[ConflictSide, int, int]]] = {v: [] for v in self.values}
            for dst, doff, src, soff, _ in self.copies:
                if dst.vreg is not None:
                    partners[dst.vreg].append((src, doff, soff))
                if src.vreg is not None:
                    partners[src.vreg].append((dst, soff, doff))
            self._graph = (adj, partners)
        return self._graph


def allocation_budget(fn: Function, target: Target, waves: int | None = None) -> Limits:
    """The registers an allocation of `fn` may use: what its attributes ask for
    (``amdgpu-waves-per-eu``, ``amdgpu-num-vgpr``/``-sgpr``; LLVM's budget), or, with `waves`,
    what that occupancy allows (as ``"amdgpu-waves-per-eu"="waves,waves"`` would)."""
    limits = allocation_limits(fn, target, waves)
    return limits.hint or limits


def allocation_limits(fn: Function, target: Target, waves: int | None = None) -> Limits:
    """The verifier's limits of `fn` (`attribute_limits`, with `waves` as in
    `allocation_budget`), except that on a unified VGPR/AGPR file the split is LLVM's
    (`llvm_uses_agprs`), not the verifier's larger choice: llc reserves the registers beyond it,
    so an allocation must stay within it."""
    from verilocc.target.limits import attribute_limits

    attrs = dict(fn.ir_attributes)
    if waves is not None:
        attrs = {k: v for k, v in attrs.items() if k not in ("amdgpu-num-vgpr", "amdgpu-num-sgpr")}
        attrs["amdgpu-waves-per-eu"] = f"{waves},{waves}"
    uses = llvm_uses_agprs(fn, target) if target.unified_vgpr_file and target.has_agprs else None
    return attribute_limits(target, attrs, fn.machine_function_info, fn.calling_convention, uses,
                            has_trap_handler(fn.triple, fn.target_features or ""))


def llvm_uses_agprs(fn: Function, target: Target) -> bool:
    """Whether LLVM splits the unified vector file of `fn` evenly between VGPRs and AGPRs
    (SIMachineFunctionInfo::usesAGPRs, which getReservedRegs asks). It does when the function
    has a virtual register of an AGPR-only class (instruction selection makes one only where
    the function may need AGPRs, whatever its attributes say). Otherwise it does not when the
    function may not need AGPRs (``"amdgpu-no-agpr"``, LLVM 19, or ``"amdgpu-agpr-alloc"="0"``,
    later LLVMs, with a budget of at most 256 vector registers) or it is an entry function
    without calls that names no physical AGPR. LLVM 18 and older decide "may not need" from
    the IR instead (no call, no ``a`` asm constraint): there the split is taken where LLVM may
    not take it, which costs registers, never correctness. LLVM 21 and later split evenly
    unless ``"amdgpu-agpr-alloc"="0"``."""
    from verilocc.target.limits import attribute_limits

    attrs = fn.ir_attributes
    if "dynamicVGPRBlockSize" in fn.machine_function_info:
        # Written by LLVM 21 or later (its machineFunctionInfo has this key): the split is even
        # unless "amdgpu-agpr-alloc" asks for no AGPRs, whatever the function uses
        # (SIRegisterInfo::getMaxNumVectorRegs). A split other than even or none is taken as even.
        return attrs.get("amdgpu-agpr-alloc", "").split(",")[0].strip() != "0"
    if any(cls.files == frozenset({RegFile.AGPR}) for cls in vreg_classes(fn).values()):
        return True
    no_agprs = "amdgpu-no-agpr" in attrs or attrs.get("amdgpu-agpr-alloc", "").split(",")[0].strip() == "0"
    if no_agprs:
        total = attribute_limits(target, attrs, fn.machine_function_info, fn.calling_convention, False)
        if (total.hint or total).total_vector <= 256:
            return False
    entry = fn.machine_function_info.get("isEntryFunction") is True or fn.calling_convention in (
        "amdgpu_kernel", "amdgpu_cs", *SHADER_CONVENTIONS)
    frame = fn.header.get("frameInfo")
    if not entry or (isinstance(frame, dict) and frame.get("hasCalls") is True):
        return True
    return _fixed_top(fn).get(AGPR_FILE.code, 0) > 0


def build_problem(fn: Function, target: Target, budget: Limits | None = None,
                  facts: FunctionFacts | None = None) -> Problem:
    """The allocation problem of `fn` within `budget` (default `allocation_budget`);
    `InputError`/`TargetError` for what is not supported. `facts`: those of `fn` when made
    already."""
    facts = facts or read_function(fn, target)
    if budget is None:
        budget = facts.limits.hint or facts.limits
    values = _values(facts, budget)
    conflicts = _conflicts(facts.interferences())
    bounds = pressure(facts.called, facts.liveness, values, facts.copies)
    return Problem(fn, target, budget, values, conflicts, _copies(facts), _fixed_top(fn), bounds)


def _values(facts: FunctionFacts, budget: Limits) -> dict[VReg, Value]:
    """A value per virtual register an operand names, with the (file, register) pairs its
    class's pool allows."""
    used = {op.vreg for b in facts.fn.blocks for ins in b.instructions for op in ins.operands if op.vreg is not None}
    of_class: dict[RegisterClass, dict[int, tuple[int, ...]]] = {}  # what a class allows depends on it alone
    values: dict[VReg, Value] = {}
    for v in sorted(used, key=vreg_key):
        cls = facts.classes[v]
        half = cls.width_units == 1
        if cls.width_units % 2 and not (half and cls.files == frozenset({RegFile.VGPR})):
            raise UnsupportedByAllocator(f"%{v} has the 16-bit class {cls.name}; 16-bit register classes other than "
                                         "VGPR halves are not supported")
        if cls not in of_class:
            allowed: dict[int, list[int]] = {}
            for m in facts.pool(cls, budget):
                loc = locate(m) if not half else locate_low_half(m)
                if loc is not None:
                    allowed.setdefault(loc[0].code, []).append(loc[1])
            of_class[cls] = {k: tuple(sorted(set(x))) for k, x in sorted(allowed.items())}
        values[v] = Value(v, cls, max(1, cls.width_units // 2), dict(of_class[cls]), half)
    return values


class UnsupportedByAllocator(Exception):
    """A construct the allocator does not handle (reported as status "unsupported")."""


def vreg_key(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def _conflicts(facts: list[Interference]) -> list[Conflict]:
    """Pairs that must not share a lane: the interference relation (`verilocc.analysis.interference`,
    the one the verifier's layer 1 checks) in the allocator's terms."""
    seen: set[Conflict] = set()
    out: list[Conflict] = []
    # A side's (ConflictSide, slots, sort key) list, made once per register and lanes.
    made: dict[VirtualLanes | FixedUnits, list[tuple[ConflictSide, int, tuple[int, int, int, str]]]] = {}

    def sides(side: VirtualLanes | FixedUnits) -> list[tuple[ConflictSide, int, tuple[int, int, int, str]]]:
        got = made.get(side)
        if got is None:
            runs = ([(ConflictSide(side.vreg), side.slots)] if isinstance(side, VirtualLanes)
                    else phys_sides(side.units))
            got = made[side] = [(s, m, _side_key(s)) for s, m in runs]
        return got

    said_before: set[tuple[VirtualLanes | FixedUnits, VirtualLanes | FixedUnits, tuple[int, int] | None]] = set()
    for fact in facts:
        # A fact repeated (a value defined again, lane by lane, while another is live) adds nothing.
        said = (fact.defined, fact.other, fact.identity)
        if said in said_before:
            continue
        said_before.add(said)
        defined, other = sides(fact.defined), sides(fact.other)
        # An identity names a fixed side by its lowest unit: its one run in a register file.
        waiver = fact.identity if len(defined) == 1 and len(other) == 1 else None
        for a, am, ka in defined:
            for b, bm, kb in other:
                # Equal keys: the same side; two fixed sides: nothing to choose.
                if ka == kb or (a.vreg is None and b.vreg is None) or not am or not bm:
                    continue
                key: Conflict = ((a, am, b, bm, waiver) if ka <= kb else
                                 (b, bm, a, am, None if waiver is None else (waiver[1], waiver[0])))
                if key not in seen:
                    seen.add(key)
                    out.append(key)
    return out

def _side_key(s: ConflictSide) -> tuple[int, int, int, str]:
    if s.vreg is None:
        return (1, s.file, s.slot, "")
    k = vreg_key(s.vreg)
    return (0, k[0], k[1], k[2])


def _copies(facts: FunctionFacts) -> list[tuple[ConflictSide, int, ConflictSide, int, int]]:
    """COPYs that become identities when both sides share registers (copy hints): (destination,
    its slot offset, source, its offset, slots copied)."""
    from verilocc.target import subreg_range

    out: list[tuple[ConflictSide, int, ConflictSide, int, int]] = []
    for regs in facts.copies:
        if any(op.is_noreg for op in regs):
            continue
        ends: list[tuple[ConflictSide, int, int]] = []  # side, slot offset, slots
        for op in regs:
            if op.vreg is not None:
                first, count = subreg_range(op.subreg) if op.subreg else (0, facts.classes[op.vreg].width_units)
                ends.append((ConflictSide(op.vreg), first, count))
            else:
                assert op.phys is not None
                try:
                    reg = parse_physreg(op.phys)
                    reg = reg.subreg(op.subreg) if op.subreg else reg
                except TargetError:
                    break
                loc = unit_slot(reg.units[0])
                if loc is None:
                    break
                ends.append((ConflictSide(None, loc[0].code, loc[1]), 0, len(reg.units)))
        if len(ends) != 2 or ends[0][2] != ends[1][2] or ends[0][2] % 2:
            continue
        (dst, doff, n), (src, soff, _) = ends
        if dst.vreg is None and src.vreg is None:
            continue
        out.append((dst, doff, src, soff, n))
    return out


def _fixed_top(fn: Function) -> dict[int, int]:
    top: dict[int, int] = {}
    for b in fn.blocks:
        for ins in b.instructions:
            for op in ins.operands:
                if op.kind == "reg" and op.phys is not None:
                    try:
                        reg = parse_physreg(op.phys)
                    except TargetError:
                        continue
                    last = unit_slot(reg.units[-1])  # 16-bit halves too: the register they are in
                    if last is not None and last[0] is not VCC_FILE:
                        top[last[0].code] = max(top.get(last[0].code, 0), last[1] // 2 + 1)
    return top


#: A conflict seen from one value: the other side, my slots, its slots, the identity waiver.
Neighbour = tuple[ConflictSide, int, int, tuple[int, int] | None]
