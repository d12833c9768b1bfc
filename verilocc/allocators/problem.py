"""The allocation problem of one pre-RA function, in plain Python, before any solver is touched.

Register files as the allocator sees them: the numbered SGPR, VGPR and AGPR files and VCC, seen
as a two-register file (``vcc_lo``, ``vcc_hi``); other special registers are reserved or in no
allocatable class. Per virtual register: the (file, first 32-bit register) pairs its class
allows within the function's limits (`verilocc.target.limits.register_problem`). Between
values: the conflicts of the interference relation (`verilocc.analysis.interference`), at
16-bit lane granularity, with the COPY identity waiver; the COPYs that can become identities
(copy hints); lower bounds on the registers any allocation needs (pressure). Also a greedy
first-fit assignment (the solver's starting point, never trusted on its own) and the usage
and occupancy of an allocated function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verilocc.analysis.calls import expand_calls, sgpr_striped
from verilocc.analysis.cfg import CFG, build_cfg
from verilocc.analysis.interference import FixedUnits, VirtualLanes, interferences
from verilocc.analysis.liveness import Effect, Liveness, compute_liveness
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.analysis.usage import highest_registers
from verilocc.errors import TargetError
from verilocc.mir.model import Function
from verilocc.target import PhysReg, RegFile, RegisterClass, Target, file_register, parse_physreg
from verilocc.target.gfx import has_trap_handler
from verilocc.target.limits import SHADER_CONVENTIONS, Limits, register_problem
from verilocc.target.waves import Launch, function_launch, waves_per_simd


# --------------------------------------------------------------------------------------------
# Register files as the allocator sees them
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AllocatableFile:
    code: int
    name: str
    unit_base: int  # global unit id of slot 0 (`PhysReg.units`)
    size: int  # 32-bit registers


def _files() -> tuple[AllocatableFile, ...]:
    vcc_lo = parse_physreg("vcc_lo").units[0]
    assert parse_physreg("vcc").units == tuple(range(vcc_lo, vcc_lo + 4)), "vcc is vcc_lo + vcc_hi"
    return (
        AllocatableFile(0, "sgpr", file_register(RegFile.SGPR, 0).units[0], 106),
        AllocatableFile(1, "vgpr", file_register(RegFile.VGPR, 0).units[0], 256),
        AllocatableFile(2, "agpr", file_register(RegFile.AGPR, 0).units[0], 256),
        AllocatableFile(3, "vcc", vcc_lo, 2),
    )


FILES = _files()
SGPR_FILE, VGPR_FILE, AGPR_FILE, VCC_FILE = FILES
_BY_REGFILE = {RegFile.SGPR: SGPR_FILE, RegFile.VGPR: VGPR_FILE, RegFile.AGPR: AGPR_FILE}


def locate(reg: PhysReg) -> tuple[AllocatableFile, int] | None:
    """(file, first 32-bit register index) of an allocatable register, None for others."""
    f = _BY_REGFILE.get(reg.file)
    if f is None:
        if reg.name not in ("vcc", "vcc_lo", "vcc_hi"):
            return None
        f = VCC_FILE
    slot = reg.units[0] - f.unit_base
    if slot % 2 or len(reg.units) % 2:
        return None
    return f, slot // 2


def _unit_slot(unit: int) -> tuple[AllocatableFile, int] | None:
    for f in FILES:
        if 0 <= unit - f.unit_base < 2 * f.size:
            return f, unit - f.unit_base
    return None


def locate_low_half(reg: PhysReg) -> tuple[AllocatableFile, int] | None:
    """(file, register index) of the low 16-bit half of a VGPR (``$vgpr4_lo16``), None for
    any other register: a 16-bit value is given low halves only."""
    f = _BY_REGFILE.get(reg.file)
    slot = reg.units[0] - f.unit_base if f is not None else 1
    if f is not VGPR_FILE or len(reg.units) != 1 or slot % 2:
        return None
    return f, slot // 2


def make_register(f: AllocatableFile, index: int, width32: int, half: bool = False) -> PhysReg:
    if half:
        return parse_physreg(f"{f.name.lower()}{index}_lo16")
    if f is VCC_FILE:
        return parse_physreg({(0, 2): "vcc", (0, 1): "vcc_lo", (1, 1): "vcc_hi"}[(index, width32)])
    return file_register(RegFile(f.name), index, width32)


# --------------------------------------------------------------------------------------------
# The problem, in plain Python (built before any solver is touched)
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


@dataclass(frozen=True)
class ConflictSide:
    """One side of a conflict or a copy: a virtual register, or fixed physical slots."""

    vreg: VReg | None  # a virtual register, or
    file: int = -1  # a fixed physical run: file code and first 16-bit slot
    slot: int = 0


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


def build_problem(fn: Function, target: Target, budget: Limits | None = None) -> Problem:
    """The allocation problem of `fn` within `budget` (default `allocation_budget`);
    `InputError`/`TargetError` for what is not supported."""
    classes = vreg_classes(fn)
    if budget is None:
        budget = allocation_budget(fn, target)
    values: dict[VReg, Value] = {}
    used = {op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands if op.vreg is not None}
    of_class: dict[RegisterClass, dict[int, tuple[int, ...]]] = {}  # what a class allows depends on it alone
    for v in sorted(used, key=vreg_key):
        cls = classes[v]
        half = cls.width_units == 1
        if cls.width_units % 2 and not (half and cls.files == frozenset({RegFile.VGPR})):
            raise UnsupportedByAllocator(f"%{v} has the 16-bit class {cls.name}; 16-bit register classes other than "
                              "VGPR halves are not supported")
        if cls not in of_class:
            allowed: dict[int, list[int]] = {}
            for m in cls.members(target):
                loc = locate(m) if not half else locate_low_half(m)
                if loc is None or register_problem(m, cls, target, budget) is not None:
                    continue
                allowed.setdefault(loc[0].code, []).append(loc[1])
            of_class[cls] = {k: tuple(sorted(set(x))) for k, x in sorted(allowed.items())}
        values[v] = Value(v, cls, max(1, cls.width_units // 2), dict(of_class[cls]), half)
    # Calls clobber what their register masks do not preserve, as the verifier reads them; the
    # registers a callee clobbers are not registers this function uses (`_fixed_top`).
    called = expand_calls(fn, target, sgpr_striped(fn))
    liveness = compute_liveness(called, build_cfg(called), classes)
    conflicts, pressure = _conflicts(called, liveness, values)
    return Problem(fn, target, budget, values, conflicts, _copies(fn, classes, values), _fixed_top(fn), pressure)


class UnsupportedByAllocator(Exception):
    """A construct the allocator does not handle (reported as status "unsupported")."""


def vreg_key(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def _phys_sides(units: frozenset[int] | set[int] | tuple[int, ...]) -> list[tuple[ConflictSide, int]]:
    """Fixed physical units as runs of slots in the allocatable files (others cannot clash)."""
    out: list[tuple[ConflictSide, int]] = []
    for u in sorted(units):
        loc = _unit_slot(u)
        if loc is None:
            continue
        f, slot = loc
        if out and out[-1][0].file == f.code and out[-1][0].slot + out[-1][1].bit_length() == slot:
            side, mask = out[-1]
            out[-1] = (side, mask | (1 << (slot - side.slot)))
        else:
            out.append((ConflictSide(None, f.code, slot), 1))
    return out


def _conflicts(fn: Function, liveness: Liveness, values: dict[VReg, Value]) -> tuple[list[Conflict], dict[str, int]]:
    """Pairs that must not share a lane: the interference relation (`verilocc.analysis.interference`,
    the one the verifier's layer 1 checks) in the allocator's terms; and the pressure bounds."""
    seen: set[Conflict] = set()
    out: list[Conflict] = []
    # A side's (ConflictSide, slots, sort key) list, made once per register and lanes.
    made: dict[VirtualLanes | FixedUnits, list[tuple[ConflictSide, int, tuple[int, int, int, str]]]] = {}

    def sides(side: VirtualLanes | FixedUnits) -> list[tuple[ConflictSide, int, tuple[int, int, int, str]]]:
        got = made.get(side)
        if got is None:
            runs = ([(ConflictSide(side.vreg), side.slots)] if isinstance(side, VirtualLanes)
                    else _phys_sides(side.units))
            got = made[side] = [(s, m, _side_key(s)) for s, m in runs]
        return got

    facts: set[tuple[VirtualLanes | FixedUnits, VirtualLanes | FixedUnits, tuple[int, int] | None]] = set()
    for fact in interferences(fn, liveness):
        # A fact repeated (a value defined again, lane by lane, while another is live) adds nothing.
        said = (fact.defined, fact.other, fact.identity)
        if said in facts:
            continue
        facts.add(said)
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
    return out, _pressure(fn, liveness, values)


def _pressure(fn: Function, liveness: Liveness, values: dict[VReg, Value]) -> dict[str, int]:
    """Lower bounds on the registers any allocation needs ("vector", "sgpr", "vgpr": values
    that only VGPRs can hold), and the line where the VGPR bound peaks.

    Counted after each instruction: lanes that are live *and defined on every path* there.
    Two such lanes always meet at a definition (the later of their last definitions on a path
    sees the other live), so they must differ, except when a COPY made one from the other:
    values joined by COPYs count once (their widest member), so the bound stays sound.
    Physical registers count only where some value may be placed: one beyond every value's
    registers (an argument in a register the budget reserves) takes nothing from them.
    """
    reach: dict[int, int] = {}  # file code -> slots below the highest a value may take
    for val in values.values():
        for code, idxs in val.allowed.items():
            if idxs:
                reach[code] = max(reach.get(code, 0), 2 * (idxs[-1] + val.width32))
    parent: dict[VReg, VReg] = {v: v for v in values}

    def root(v: VReg) -> VReg:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for block in fn.blocks:
        for ins in block.instructions:
            if ins.opcode == "COPY":
                regs = [op.vreg for op in ins.explicit_regs]
                if len(regs) == 2 and regs[0] in parent and regs[1] in parent:
                    parent[root(regs[0])] = root(regs[1])  # type: ignore[index]
    must_in = _must_defined(fn, liveness)
    kind_of: dict[VReg, tuple[str, ...]] = {}
    for v, val in values.items():
        files = set(val.allowed)
        kinds: tuple[str, ...] = ()
        if files and files <= {VGPR_FILE.code, AGPR_FILE.code}:
            kinds = ("vector", "vgpr") if files == {VGPR_FILE.code} else ("vector",)
        elif files and files <= {SGPR_FILE.code, VCC_FILE.code}:
            kinds = ("sgpr",)
        kind_of[v] = kinds
    peak = {"vector": 0, "sgpr": 0, "vgpr": 0, "line": 0}
    blocks = {b.number: b for b in fn.blocks}
    for b in liveness.cfg.order:
        effects = liveness.effects[b]
        live_after = dict(liveness.walk_backward(b))
        must = dict(must_in[b])
        for idx, eff in enumerate(effects):
            _define(must, eff, blocks[b].instructions[idx].opcode)
            units: dict[str, dict[VReg | None, int]] = {"vector": {}, "sgpr": {}, "vgpr": {}}  # kind -> root -> lanes
            for w, m in live_after[idx].vregs.items():
                lanes = (m & must.get(w, 0)).bit_count()
                for kind in kind_of[w]:
                    by_root, r = units[kind], root(w)
                    if lanes > by_root.get(r, 0):
                        by_root[r] = lanes
            for side, m in _phys_sides(live_after[idx].units):
                holds = {VGPR_FILE.code: "vgpr", AGPR_FILE.code: "vector", SGPR_FILE.code: "sgpr"}.get(side.file)
                m &= (1 << max(0, reach.get(side.file, 0) - side.slot)) - 1
                if holds is not None and m:
                    for k in (holds, "vector") if holds == "vgpr" else (holds,):
                        units[k][None] = units[k].get(None, 0) + m.bit_count()
            total = {k: sum(by_root.values()) for k, by_root in units.items()}
            if (total["vgpr"] + 1) // 2 > peak["vgpr"]:
                peak["vgpr"], peak["line"] = (total["vgpr"] + 1) // 2, blocks[b].instructions[idx].line
            peak["vector"] = max(peak["vector"], (total["vector"] + 1) // 2)
            peak["sgpr"] = max(peak["sgpr"], (max(0, total["sgpr"] - 4) + 1) // 2)  # VCC may hold 2
    return peak


def _define(state: dict[VReg, int], eff: Effect, opcode: str = "") -> None:
    """Lanes defined after an instruction: a def adds its lanes; an `undef` subregister def
    leaves only its own (LLVM's meaning of the flag). IMPLICIT_DEF defines nothing here: the
    encoding lets its value share registers with anything."""
    if opcode == "IMPLICIT_DEF":
        return
    for d in eff.defs:
        if d.vreg is None:
            continue
        if d.op.subreg and d.op.has("undef"):
            state[d.vreg] = d.mask
        else:
            state[d.vreg] = state.get(d.vreg, 0) | d.mask


def _must_defined(fn: Function, liveness: Liveness) -> dict[int, dict[VReg, int]]:
    """Lanes defined on every path into each block (intersection over predecessors)."""
    blocks = {b.number: b for b in fn.blocks}
    cfg = liveness.cfg
    order = cfg.reverse_postorder()
    entry = cfg.entry
    state: dict[int, dict[VReg, int] | None] = {b: None for b in cfg.order}  # None: not reached yet
    state[entry] = {}
    changed = True
    while changed:
        changed = False
        for b in order:
            if b == entry:
                continue
            meet: dict[VReg, int] | None = None
            for p in cfg.predecessors(b):
                if state[p] is None:
                    continue
                out = dict(state[p])  # type: ignore[arg-type]
                for eff, ins in zip(liveness.effects[p], blocks[p].instructions):
                    _define(out, eff, ins.opcode)
                meet = out if meet is None else {v: m & out[v] for v, m in meet.items() if v in out and m & out[v]}
            if meet is not None and meet != state[b]:
                state[b] = meet
                changed = True
    return {b: (s or {}) for b, s in state.items()}


def _side_key(s: ConflictSide) -> tuple[int, int, int, str]:
    if s.vreg is None:
        return (1, s.file, s.slot, "")
    k = vreg_key(s.vreg)
    return (0, k[0], k[1], k[2])


def _copies(fn: Function, classes: dict[VReg, RegisterClass],
            values: dict[VReg, Value]) -> list[tuple[ConflictSide, int, ConflictSide, int, int]]:
    """COPYs that become identities when both sides share registers (copy hints)."""
    from verilocc.target import subreg_range

    out: list[tuple[ConflictSide, int, ConflictSide, int, int]] = []
    for b in fn.blocks:
        for ins in b.instructions:
            if ins.opcode != "COPY":
                continue
            regs = ins.explicit_regs
            if len(regs) != 2 or any(op.is_noreg for op in regs):
                continue
            ends: list[tuple[ConflictSide, int, int]] = []  # side, slot offset, slots
            for op in regs:
                if op.vreg is not None:
                    first, count = subreg_range(op.subreg) if op.subreg else (0, classes[op.vreg].width_units)
                    ends.append((ConflictSide(op.vreg), first, count))
                else:
                    assert op.phys is not None
                    try:
                        reg = parse_physreg(op.phys)
                        reg = reg.subreg(op.subreg) if op.subreg else reg
                    except TargetError:
                        break
                    loc = _unit_slot(reg.units[0])
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
                    last = _unit_slot(reg.units[-1])  # 16-bit halves too: the register they are in
                    if last is not None and last[0] is not VCC_FILE:
                        top[last[0].code] = max(top.get(last[0].code, 0), last[1] // 2 + 1)
    return top


# --------------------------------------------------------------------------------------------
# A greedy first assignment (the solver's starting point, never trusted on its own)
# --------------------------------------------------------------------------------------------
#: Re-colourings `greedy_assignment` tries after its first fits (a count, not a time, so that
#: the same input gives the same start on every machine).
RECOLOUR_ROUNDS = 8


def greedy_assignment(p: Problem, rounds: int = RECOLOUR_ROUNDS) -> dict[VReg, tuple[int, int]] | None:
    """(file code, register index) per value by first-fit colouring, trying a copy partner's
    register first, in four orders: program order, most conflicts first (LLVM's greedy
    allocator also takes the most constrained values first), the order live ranges start,
    and widest values first with 32-bit values filling the holes tuples leave (the other half
    of an aligned pair that a conflict already takes); the one with more waves per SIMD, then
    fewer registers, is kept. Then `rounds` re-colourings of the best so far (`_recolour`),
    each kept when it is no worse. None when every order runs out of registers."""
    found = [a for a, left in (_first_fit(p, o) for o in ("program", "conflicts", "live", "widest")) if not left]
    if not found:
        return None
    best = max(found, key=lambda a: _merit(p, a))
    merit = _merit(p, best)
    for i in range(rounds):
        got = _recolour(p, best, i)
        if got is not None and (m := _merit(p, got)) >= merit:
            best, merit = got, m
    return best


def start_waves(fn: Function, target: Target, waves: int | None = None) -> int:
    """Waves per SIMD of `greedy_assignment` on `fn` within `allocation_budget(fn, target,
    waves)` (0 when it runs out of registers or the problem is unsupported): the occupancy the
    SMT allocator starts from, and so the least its occupancy-first search returns."""
    try:
        p = build_problem(fn, target, allocation_budget(fn, target, waves))
    except UnsupportedByAllocator:
        return 0
    start = greedy_assignment(p)
    return _merit(p, start)[0] if start is not None else 0


def _recolour(p: Problem, placed: dict[VReg, tuple[int, int]], i: int) -> dict[VReg, tuple[int, int]] | None:
    """First fit in an order taken from the colouring `placed` (iterated greedy, Culberson and
    Luo 1996): the values of one register stay together, and the groups go highest register
    first, largest group first, widest value first, or shuffled (seed `i`), by round `i`. For
    plain graph colouring this never needs more colours than `placed`; with tuples and
    alignment it may, so the caller keeps the better. None when a value fits nowhere."""
    import random

    groups: dict[tuple[int, int], list[VReg]] = {}
    for v in sorted(placed, key=vreg_key):
        groups.setdefault(placed[v], []).append(v)
    keys = sorted(groups)
    how = i % 4
    if how == 0:
        keys.sort(key=lambda k: (k[0], -k[1]))
    elif how == 1:
        keys.sort(key=lambda k: -len(groups[k]))
    elif how == 2:
        keys.sort(key=lambda k: -max(p.values[v].width32 for v in groups[k]))
    else:
        random.Random(i).shuffle(keys)
    col = Colouring.of(p)
    for k in keys:
        for v in sorted(groups[k], key=lambda v: -p.values[v].width32):
            choice = col.first_fit(v, col.candidates(v)[0])
            if choice is None:
                return None
            col.placed[v] = choice
    return col.placed


def spill_fit(p: Problem, homes: frozenset[VReg] = frozenset(),
              homes_first: bool = False) -> tuple[dict[VReg, tuple[int, int]], list[VReg]]:
    """First fit for a program with spill code, as a linear scan: values in the order their
    live ranges start (a block's live-ins at its top, then operands in program order), the
    values in `homes` (the spiller's AGPR homes) in AGPRs first. A value that fits nowhere is
    left out and the colouring goes on: (registers of the others, the values left out, in
    order). The values left out are the ones to spill as a whole (`spill_to_fit`'s `force`).
    `homes_first`: the values of `homes` take no copy partner's register before the AGPRs."""
    return _first_fit(p, "live", homes, homes_first)


def _merit(p: Problem, placed: dict[VReg, tuple[int, int]]) -> tuple[int, int, int]:
    """(waves per SIMD, -vector registers, -SGPRs) of an assignment with the fixed registers."""
    tops = {f.code: p.fixed_top.get(f.code, 0) for f in FILES}
    for v, (code, r) in placed.items():
        tops[code] = max(tops[code], r + p.values[v].width32)
    u = usage_dict(p.target, p.launch(), tops[VGPR_FILE.code], tops[AGPR_FILE.code], tops[SGPR_FILE.code])
    return u["waves"], -(u["vgpr"] + u["agpr"]), -u["sgpr"]


def _first_fit(p: Problem, order_by: str, homes: frozenset[VReg] = frozenset(),
               homes_first: bool = False) -> tuple[dict[VReg, tuple[int, int]], list[VReg]]:
    """(registers placed, values that fit nowhere); only "live" order goes on past the first
    value that fits nowhere."""
    col = Colouring.of(p, homes, homes_first)
    order = colouring_order(p, order_by == "live")
    position = {v: i for i, v in enumerate(order)}
    if order_by == "widest":
        order.sort(key=lambda v: (-p.values[v].width32, position[v]))
    elif order_by == "conflicts":
        degree = {v: len(col.adj[v]) for v in order}
        order.sort(key=lambda v: (-degree[v], position[v]))
    left: list[VReg] = []
    for v in order:
        val = p.values[v]
        candidates, hinted = col.candidates(v)
        choice = col.first_fit(v, candidates)
        if choice is None:
            left.append(v)
            if order_by == "live":
                continue
            return col.placed, left
        if order_by == "widest" and val.width32 == 1 and candidates.index(choice) >= hinted:
            fits = col.fitter(v)
            hole = next(((c, r) for c, r in candidates[hinted:] if (r ^ 1) in val.allowed.get(c, ())
                         and fits(c, r) and not fits(c, r ^ 1)), None)
            choice = hole or choice
        col.placed[v] = choice
    return col.placed, left


def colouring_order(p: Problem, live: bool) -> list[VReg]:
    """Values in program order of their first operand; with `live`, in the order their live
    ranges start (a block's live-ins at its top, then its operands). Made once per problem."""
    made = p._orders.get(live)
    if made is None:
        made = p._orders[live] = tuple(_colouring_order(p, live))
    return list(made)


def _colouring_order(p: Problem, live: bool) -> list[VReg]:
    order: list[VReg] = []
    seen: set[VReg] = set()
    live_in = p.liveness()[1].live_in if live else {}
    for b in p.fn.blocks:
        for w in sorted(live_in[b.number].vregs if b.number in live_in else (), key=vreg_key):
            if w not in seen and w in p.values:
                seen.add(w)
                order.append(w)
        for ins in b.instructions:
            for op in ins.operands:
                if op.vreg is not None and op.vreg not in seen and op.vreg in p.values:
                    seen.add(op.vreg)
                    order.append(op.vreg)
    return order


#: A conflict seen from one value: the other side, my slots, its slots, the identity waiver.
Neighbour = tuple[ConflictSide, int, int, tuple[int, int] | None]


@dataclass
class Colouring:
    """A partial assignment of a problem (file code, first register per value) and the
    questions a colouring asks of it, in the terms of the problem's conflicts: whether a
    register is free for a value, and which placed values stand in its way."""

    problem: Problem
    homes: frozenset[VReg]  # values that try AGPRs first (the spiller's AGPR homes)
    adj: dict[VReg, list[Neighbour]]
    partners: dict[VReg, list[tuple[ConflictSide, int, int]]]  # copy partner, my slot offset, its offset
    placed: dict[VReg, tuple[int, int]] = field(default_factory=dict)
    homes_first: bool = False  # homes try the AGPRs before a copy partner's register

    @staticmethod
    def of(p: Problem, homes: frozenset[VReg] = frozenset(), homes_first: bool = False) -> Colouring:
        adj, partners = p.graph()
        return Colouring(p, homes, adj, partners, homes_first=homes_first)

    def where(self, side: ConflictSide) -> tuple[int, int] | None:
        """(file code, first 16-bit slot) of a side, None for a value not placed."""
        if side.vreg is None:
            return side.file, side.slot
        got = self.placed.get(side.vreg)
        return None if got is None else (got[0], 2 * got[1])

    def _clash(self, n: Neighbour, code: int, r: int) -> bool | None:
        """Whether neighbour `n` shares a lane with a value at (code, r); None when it is not placed."""
        other, mine, theirs, waiver = n
        loc = self.where(other)
        if loc is None:
            return None
        if loc[0] != code or (waiver is not None and 2 * r + waiver[0] == loc[1] + waiver[1]):
            return False
        return bool((mine << (2 * r)) & (theirs << loc[1]))

    def fits(self, v: VReg, code: int, r: int) -> bool:
        return not any(self._clash(n, code, r) for n in self.adj[v])

    def fitter(self, v: VReg) -> Callable[[int, int], bool]:
        """`fits` for `v` while no value is placed or moved, in one pass over the neighbours:
        the lanes placed neighbours take are merged per (file, my slots), so a register
        costs a few integer operations (a neighbour with a COPY waiver is asked on its own)."""
        taken: dict[int, dict[int, int]] = {}  # file code -> my slot mask -> lanes taken
        waived: list[Neighbour] = []
        for n in self.adj[v]:
            loc = self.where(n[0])
            if loc is None:
                continue
            if n[3] is not None:
                waived.append(n)
                continue
            masks = taken.setdefault(loc[0], {})
            masks[n[1]] = masks.get(n[1], 0) | (n[2] << loc[1])

        def fits(code: int, r: int) -> bool:
            return (not any((mine << (2 * r)) & lanes for mine, lanes in taken.get(code, {}).items())
                    and not any(self._clash(n, code, r) for n in waived))
        return fits

    def first_fit(self, v: VReg, candidates: list[tuple[int, int]]) -> tuple[int, int] | None:
        """The first of `candidates` where `v` fits."""
        fits = self.fitter(v)
        return next(((c, r) for c, r in candidates if fits(c, r)), None)

    def in_the_way(self, v: VReg, code: int, r: int) -> set[VReg] | None:
        """The placed values that keep `v` from (code, r); None when a fixed register does."""
        out: set[VReg] = set()
        for n in self.adj[v]:
            if self._clash(n, code, r):
                if n[0].vreg is None:
                    return None
                out.add(n[0].vreg)
        return out

    def candidates(self, v: VReg) -> tuple[list[tuple[int, int]], int]:
        """(file code, register) in the order first fit tries them: a copy partner's register
        first (the number of those is the second item), then the allowed registers, AGPRs first
        for a value of `homes`, VCC last."""
        val = self.problem.values[v]
        out: list[tuple[int, int]] = []
        for other, mine_off, their_off in [] if self.homes_first and v in self.homes else self.partners[v]:
            loc = self.where(other)
            if loc is not None and (loc[1] + their_off - mine_off) % 2 == 0:
                c, r = loc[0], (loc[1] + their_off - mine_off) // 2
                if r in val.allowed.get(c, ()):
                    out.append((c, r))
        hinted = len(out)
        first = AGPR_FILE.code if v in self.homes else -1
        for code in sorted(val.allowed, key=lambda c: (c != first, c == VCC_FILE.code, c)):
            out.extend((code, r) for r in val.allowed[code])
        return out, hinted


# --------------------------------------------------------------------------------------------
# Usage and occupancy
# --------------------------------------------------------------------------------------------
def register_usage(fn: Function, target: Target) -> dict[str, int]:
    """Registers an allocated function uses, as the hardware counts them (highest index + 1 per
    file), and the waves per SIMD llc gives it (`verilocc.target.waves.waves_per_simd`: the
    SGPRs plus the VCC/FLAT_SCRATCH/XNACK ones the target reserves, the LDS, the work-group
    size and amdgpu-waves-per-eu)."""
    top = highest_registers(fn)
    return usage_dict(target, function_launch(fn, target), top[RegFile.VGPR], top[RegFile.AGPR], top[RegFile.SGPR])


def usage_dict(target: Target, launch: Launch, vgprs: int, agprs: int, sgprs: int) -> dict[str, int]:
    waves = waves_per_simd(target, launch, vgprs, agprs, sgprs + target.reserved_num_sgprs())
    return {"vgpr": vgprs, "agpr": agprs, "sgpr": sgprs, "waves": waves}
