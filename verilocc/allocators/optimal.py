"""An SMT register allocator: an assignment for a pre-RA function that z3 finds, optimises and
verilocc then verifies.

Unknowns. Every virtual register ``%v`` gets ``r_v``, the index of its first 32-bit register in
its register file, and, when its class allows several files (``av_*`` classes: VGPR or AGPR;
``sreg_*`` classes: SGPRs or VCC), ``f_v`` choosing the file; both are 16-bit bit-vectors whose
values stay far from wrapping (z3 bit-blasts these colouring problems to SAT, much faster
than linear integer arithmetic). Files
are the numbered SGPR, VGPR and AGPR files and VCC, seen as a two-register file
(``vcc_lo``, ``vcc_hi``); other special registers are reserved or in no allocatable class.

Constraints (hard), the same relation as the verifier's layer 1 (`verilocc.smt.constraints`):
- *domain*: ``(f_v, r_v)`` names a member of the class on the target, inside the budget the
  function's attributes ask for (``amdgpu-num-vgpr``, ``amdgpu-waves-per-eu``, ...), not
  reserved; tuple width and alignment are part of membership. On a unified VGPR/AGPR file
  (gfx90a/94x/950) VGPRs rounded up to 4 plus AGPRs stay within the file;
- *interference*, at 16-bit lane granularity: at every definition, each defined value against
  each value live after it (and fixed physical registers live there), on exactly the lanes
  live (LLVM reuses the dead lanes of tuples); an early-clobber def also against the
  instruction's uses; the defs of one instruction against each other. A COPY's destination
  may share the source's lanes only where it copies them (the copy becomes an identity).
Objectives, lexicographic: (1) with ``prefer``, keep as many preferred registers as possible
(the repair of a proposed assignment); (2) ``registers``: VGPRs + AGPRs (highest index + 1 per
file, as the hardware counts), then SGPRs; ``waves``: waves per SIMD first (the target's
occupancy rules), then registers; (3) copy hints: as many COPYs as possible become identities
(VirtRegRewriter deletes them). Step (1) is MaxSAT for z3's Optimize; step (2) starts from a
first-fit colouring (`greedy_assignment`) and descends on each bound with incremental z3
checks, trying the pressure lower bound first; a bound is proved optimal when z3 answers unsat
one below it or it meets the pressure bound. Step (3) assumes every hint and drops one per
unsat core (best effort; it does not affect "optimal"). Budgets are z3 resource units, so the
result does not depend on the machine's speed.

Nothing leaves this module unchecked: the assignment is materialised, given llc's block
live-ins and verified with all three layers; only a VERIFIED result is "optimal" or
"feasible". A kernel whose pressure exceeds the budget needs spill code, which an assignment
cannot express: "infeasible", with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.liveness import Effect, Liveness, compute_liveness
from verilocc.analysis.operands import VReg, slot_mask, vreg_classes
from verilocc.errors import TargetError
from verilocc.mir.model import Function, Module
from verilocc.smt.constraints import (
    Limits,
    function_limits,
    lane_runs,
    register_problem,
)
from verilocc.target import (
    PhysReg,
    RegFile,
    RegisterClass,
    Target,
    file_register,
    parse_physreg,
)

if TYPE_CHECKING:
    import z3

OBJECTIVES = ("registers", "waves")
STATUSES = ("optimal", "feasible", "infeasible", "unknown", "unsupported")

#: Share of the time limit the objective descent may use; the rest is for copy hints.
_DESCENT_SHARE = 0.75
#: z3 resource units ("rlimit count") per second of the time limit. Every query is limited in
#: these units, which z3 counts the same way on every machine, so the same input gives the
#: same allocation. Measured here (z3 5.4, 2 shared cores): 1 to 5 million per second, fewer on
#: the largest kernels, where the wall-clock safety net can end a search first.
_RLIMIT_PER_SECOND = 2_500_000
#: Wall-clock safety net, in multiples of the time limit, for machines much slower than ours.
_WALL_FACTOR = 3.0


@dataclass
class SolverAllocation:
    status: str  # "optimal" | "feasible" | "infeasible" | "unknown" | "unsupported"
    assignment: dict[int | str, PhysReg]  # vreg id -> physical register, as Assignment.regs
    seconds: float
    kept: int = 0  # preferences honoured (repair mode)
    reason: str = ""  # why infeasible/unknown/unsupported, one sentence
    usage: dict[str, int] = field(default_factory=dict)  # {"vgpr": n, "agpr": n, "sgpr": n, "waves": w}
    #: The allocated, VERIFIED function (with llc's block live-ins) when status is optimal/feasible.
    function: Function | None = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------------------------
# Register files as the allocator sees them
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _File:
    code: int
    name: str
    unit_base: int  # global unit id of slot 0 (`PhysReg.units`)
    size: int  # 32-bit registers


def _files() -> tuple[_File, ...]:
    vcc_lo = parse_physreg("vcc_lo").units[0]
    assert parse_physreg("vcc").units == tuple(range(vcc_lo, vcc_lo + 4)), "vcc is vcc_lo + vcc_hi"
    return (
        _File(0, "sgpr", file_register(RegFile.SGPR, 0).units[0], 106),
        _File(1, "vgpr", file_register(RegFile.VGPR, 0).units[0], 256),
        _File(2, "agpr", file_register(RegFile.AGPR, 0).units[0], 256),
        _File(3, "vcc", vcc_lo, 2),
    )


FILES = _files()
_SGPR, _VGPR, _AGPR, _VCC = FILES
_BY_REGFILE = {RegFile.SGPR: _SGPR, RegFile.VGPR: _VGPR, RegFile.AGPR: _AGPR}


def locate(reg: PhysReg) -> tuple[_File, int] | None:
    """(file, first 32-bit register index) of an allocatable register, None for others."""
    f = _BY_REGFILE.get(reg.file)
    if f is None:
        if reg.name not in ("vcc", "vcc_lo", "vcc_hi"):
            return None
        f = _VCC
    slot = reg.units[0] - f.unit_base
    if slot % 2 or len(reg.units) % 2:
        return None
    return f, slot // 2


def _unit_slot(unit: int) -> tuple[_File, int] | None:
    for f in FILES:
        if 0 <= unit - f.unit_base < 2 * f.size:
            return f, unit - f.unit_base
    return None


def make_register(f: _File, index: int, width32: int) -> PhysReg:
    if f is _VCC:
        return parse_physreg({(0, 2): "vcc", (0, 1): "vcc_lo", (1, 1): "vcc_hi"}[(index, width32)])
    return file_register(RegFile(f.name), index, width32)


# --------------------------------------------------------------------------------------------
# The problem, in plain Python (built before any solver is touched)
# --------------------------------------------------------------------------------------------
@dataclass
class _Value:
    vreg: VReg
    cls: RegisterClass
    width32: int
    allowed: dict[int, tuple[int, ...]]  # file code -> allowed first register indices


@dataclass(frozen=True)
class _Side:
    vreg: VReg | None  # a virtual register, or
    file: int = -1  # a fixed physical run: file code and first 16-bit slot
    slot: int = 0


#: Two sides with 16-bit slot masks that must not share a lane, unless `waiver` = (a offset,
#: b offset) is given and both offsets name the same slot: a COPY's destination may sit
#: exactly on the lanes it copies (the copy becomes an identity), and nowhere else on them.
_Conflict = tuple[_Side, int, _Side, int, tuple[int, int] | None]


@dataclass
class Problem:
    fn: Function
    target: Target
    limits: Limits
    values: dict[VReg, _Value]
    conflicts: list[_Conflict]
    copies: list[tuple[_Side, int, _Side, int, int]]  # (dst, dst slot offset, src, src offset, slots)
    fixed_top: dict[int, int]  # file code -> highest fixed register index + 1
    pressure: dict[str, int]  # lower bounds: "vector", "sgpr", "vgpr" (VGPR-only values) live at once


def build_problem(fn: Function, target: Target) -> Problem:
    """The allocation problem of `fn`; `InputError`/`TargetError` for what is not supported."""
    classes = vreg_classes(fn)
    limits = function_limits(fn, target)
    budget = limits.hint or limits
    values: dict[VReg, _Value] = {}
    used = {op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands if op.vreg is not None}
    for v in sorted(used, key=_vkey):
        cls = classes[v]
        if cls.width_units % 2:
            raise _Unsupported(f"%{v} has the 16-bit class {cls.name}; 16-bit register classes are not supported")
        allowed: dict[int, list[int]] = {}
        for m in cls.members(target):
            loc = locate(m)
            if loc is None or register_problem(m, cls, target, budget) is not None:
                continue
            allowed.setdefault(loc[0].code, []).append(loc[1])
        values[v] = _Value(v, cls, cls.width_units // 2, {k: tuple(sorted(set(x))) for k, x in sorted(allowed.items())})
    liveness = compute_liveness(fn, build_cfg(fn), classes)
    conflicts, pressure = _conflicts(fn, liveness, values)
    return Problem(fn, target, budget, values, conflicts, _copies(fn, classes, values), _fixed_top(fn), pressure)


class _Unsupported(Exception):
    """A construct the allocator does not handle (reported as status "unsupported")."""


def _vkey(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def _phys_sides(units: set[int] | tuple[int, ...]) -> list[tuple[_Side, int]]:
    """Fixed physical units as runs of slots in the allocatable files (others cannot clash)."""
    out: list[tuple[_Side, int]] = []
    for u in sorted(units):
        loc = _unit_slot(u)
        if loc is None:
            continue
        f, slot = loc
        if out and out[-1][0].file == f.code and out[-1][0].slot + out[-1][1].bit_length() == slot:
            side, mask = out[-1]
            out[-1] = (side, mask | (1 << (slot - side.slot)))
        else:
            out.append((_Side(None, f.code, slot), 1))
    return out


def _conflicts(fn: Function, liveness: Liveness, values: dict[VReg, _Value]) -> tuple[list[_Conflict], dict[str, int]]:
    """Pairs that must not share a lane (as layer 1 builds them), and the pressure bounds."""
    seen: set[_Conflict] = set()
    out: list[_Conflict] = []

    def add(a: _Side, am: int, b: _Side, bm: int, waiver: tuple[int, int] | None = None) -> None:
        if a == b or (a.vreg is None and b.vreg is None) or not am or not bm:
            return
        if _side_key(a) <= _side_key(b):
            key: _Conflict = (a, am, b, bm, waiver)
        else:
            key = (b, bm, a, am, None if waiver is None else (waiver[1], waiver[0]))
        if key not in seen:
            seen.add(key)
            out.append(key)

    blocks = {b.number: b for b in fn.blocks}
    for b in liveness.cfg.order:
        effects = liveness.effects[b]
        for idx, live in liveness.walk_backward(b):
            ins = blocks[b].instructions[idx]
            eff = effects[idx]
            if not eff.defs or ins.opcode in ("IMPLICIT_DEF", "KILL"):
                continue
            # A COPY of virtual lanes: (source vreg, its copied slot mask, dst offset, src offset).
            copied: tuple[VReg, int, int, int] | None = None
            if ins.opcode == "COPY" and len(eff.defs) == 1 and len(eff.uses) == 1 and eff.uses[0].vreg is not None:
                d0, u0 = eff.defs[0], eff.uses[0]
                if d0.vreg is not None:
                    copied = (u0.vreg, slot_mask(u0.mask), _first_slot(d0.mask), _first_slot(u0.mask))
            def_sides: list[tuple[_Side, int, bool]] = []
            for d in eff.defs:
                early = d.op.has("early-clobber")
                if d.vreg is not None:
                    def_sides.append((_Side(d.vreg), slot_mask(d.mask), early))
                else:
                    def_sides.extend((s, m, early) for s, m in _phys_sides(d.units))
            live_sides = [(_Side(w), slot_mask(m), w) for w, m in live.vregs.items()]
            live_sides += [(s, m, None) for s, m in _phys_sides(live.units)]
            for ds, dm, early in def_sides:
                for ls, lm, w in live_sides:
                    if copied is not None and w == copied[0]:
                        src_mask, doff, soff = copied[1], copied[2], copied[3]
                        add(ds, dm, ls, lm & ~src_mask)
                        # The copied lanes: the copy's own position, or elsewhere entirely.
                        add(ds, dm, ls, lm & src_mask, (doff, soff))
                        continue
                    add(ds, dm, ls, lm)
                if early:
                    for u in eff.uses:
                        if u.op.tied_def is not None or u.vreg is None:
                            continue
                        um = u.mask & (liveness.defined_after(b, idx - 1, u.vreg) if idx else
                                       liveness.defined_in[b].get(u.vreg, 0))
                        if um:
                            add(ds, dm, _Side(u.vreg), slot_mask(um))
            for i in range(len(def_sides)):
                for j in range(i + 1, len(def_sides)):
                    add(def_sides[i][0], def_sides[i][1], def_sides[j][0], def_sides[j][1])
    return out, _pressure(fn, liveness, values)


def _pressure(fn: Function, liveness: Liveness, values: dict[VReg, _Value]) -> dict[str, int]:
    """Lower bounds on the registers any allocation needs ("vector", "sgpr", "vgpr": values
    that only VGPRs can hold), and the line where the VGPR bound peaks.

    Counted after each instruction: lanes that are live *and defined on every path* there.
    Two such lanes always meet at a definition (the later of their last definitions on a path
    sees the other live), so they must differ, except when a COPY made one from the other:
    values joined by COPYs count once (their widest member), so the bound stays sound.
    """
    parent: dict[VReg, VReg] = {v: v for v in values}

    def root(v: VReg) -> VReg:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for b in fn.blocks:
        for ins in b.instructions:
            if ins.opcode == "COPY":
                regs = [op.vreg for op in ins.operands if op.kind == "reg" and not op.is_implicit]
                if len(regs) == 2 and regs[0] in parent and regs[1] in parent:
                    parent[root(regs[0])] = root(regs[1])  # type: ignore[index]
    must_in = _must_defined(fn, liveness)
    kind_of: dict[VReg, tuple[str, ...]] = {}
    for v, val in values.items():
        files = set(val.allowed)
        kinds: tuple[str, ...] = ()
        if files and files <= {_VGPR.code, _AGPR.code}:
            kinds = ("vector", "vgpr") if files == {_VGPR.code} else ("vector",)
        elif files and files <= {_SGPR.code, _VCC.code}:
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
            units: dict[tuple[str, VReg | None], int] = {}
            for w, m in live_after[idx].vregs.items():
                lanes = (m & must.get(w, 0)).bit_count()
                for kind in kind_of[w]:
                    key = (kind, root(w))
                    units[key] = max(units.get(key, 0), lanes)
            for side, m in _phys_sides(live_after[idx].units):
                kind = {_VGPR.code: "vgpr", _AGPR.code: "vector", _SGPR.code: "sgpr"}.get(side.file)
                if kind is not None:
                    units[(kind, None)] = units.get((kind, None), 0) + m.bit_count()
                    if kind == "vgpr":
                        units[("vector", None)] = units.get(("vector", None), 0) + m.bit_count()
            total = {k: sum(n for (kind, _), n in units.items() if kind == k) for k in ("vector", "sgpr", "vgpr")}
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


def _first_slot(lane_mask: int) -> int:
    m = slot_mask(lane_mask)
    return (m & -m).bit_length() - 1


def _side_key(s: _Side) -> tuple[int, int, int, str]:
    if s.vreg is None:
        return (1, s.file, s.slot, "")
    k = _vkey(s.vreg)
    return (0, k[0], k[1], k[2])


def _copies(fn: Function, classes: dict[VReg, RegisterClass],
            values: dict[VReg, _Value]) -> list[tuple[_Side, int, _Side, int, int]]:
    """COPYs that become identities when both sides share registers (copy hints)."""
    from verilocc.target import subreg_range

    out: list[tuple[_Side, int, _Side, int, int]] = []
    for b in fn.blocks:
        for ins in b.instructions:
            if ins.opcode != "COPY":
                continue
            regs = [op for op in ins.operands if op.kind == "reg" and not op.is_implicit]
            if len(regs) != 2 or any(op.is_noreg for op in regs):
                continue
            ends: list[tuple[_Side, int, int]] = []  # side, slot offset, slots
            for op in regs:
                if op.vreg is not None:
                    first, count = subreg_range(op.subreg) if op.subreg else (0, classes[op.vreg].width_units)
                    ends.append((_Side(op.vreg), first, count))
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
                    ends.append((_Side(None, loc[0].code, loc[1]), 0, len(reg.units)))
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
                    loc = locate(reg)
                    if loc is not None and loc[0] is not _VCC:
                        top[loc[0].code] = max(top.get(loc[0].code, 0), loc[1] + max(1, reg.width32))
    return top


# --------------------------------------------------------------------------------------------
# A greedy first assignment (the solver's starting point, never trusted on its own)
# --------------------------------------------------------------------------------------------
def greedy_assignment(p: Problem) -> dict[VReg, tuple[int, int]] | None:
    """(file code, register index) per value by first-fit colouring in program order, trying
    a copy partner's register first; None when some value finds no free register."""
    adj: dict[VReg, list[tuple[_Side, int, int, tuple[int, int] | None]]] = {v: [] for v in p.values}
    for a, am, b, bm, waiver in p.conflicts:
        if a.vreg is not None:
            adj[a.vreg].append((b, am, bm, waiver))
        if b.vreg is not None:
            adj[b.vreg].append((a, bm, am, None if waiver is None else (waiver[1], waiver[0])))
    partners: dict[VReg, list[tuple[_Side, int, int]]] = {v: [] for v in p.values}
    for dst, doff, src, soff, _ in p.copies:
        if dst.vreg is not None:
            partners[dst.vreg].append((src, doff, soff))
        if src.vreg is not None:
            partners[src.vreg].append((dst, soff, doff))
    order: list[VReg] = []
    seen: set[VReg] = set()
    for b in p.fn.blocks:
        for ins in b.instructions:
            for op in ins.operands:
                if op.vreg is not None and op.vreg not in seen and op.vreg in p.values:
                    seen.add(op.vreg)
                    order.append(op.vreg)
    placed: dict[VReg, tuple[int, int]] = {}

    def where(side: _Side) -> tuple[int, int] | None:  # (file code, first slot)
        if side.vreg is None:
            return side.file, side.slot
        got = placed.get(side.vreg)
        return None if got is None else (got[0], 2 * got[1])

    def fits(v: VReg, code: int, r: int) -> bool:
        for other, mine, theirs, waiver in adj[v]:
            loc = where(other)
            if loc is None or loc[0] != code:
                continue
            if waiver is not None and 2 * r + waiver[0] == loc[1] + waiver[1]:
                continue
            if (mine << (2 * r)) & (theirs << loc[1]):
                return False
        return True

    for v in order:
        val = p.values[v]
        candidates: list[tuple[int, int]] = []
        for other, mine_off, their_off in partners[v]:
            loc = where(other)
            if loc is not None and (loc[1] + their_off - mine_off) % 2 == 0:
                candidates.append((loc[0], (loc[1] + their_off - mine_off) // 2))
        for code in sorted(val.allowed, key=lambda c: (c == _VCC.code, c)):
            candidates.extend((code, r) for r in val.allowed[code])
        choice = next(((c, r) for c, r in candidates if r in val.allowed.get(c, ()) and fits(v, c, r)), None)
        if choice is None:
            return None
        placed[v] = choice
    return placed


# --------------------------------------------------------------------------------------------
# Usage and occupancy
# --------------------------------------------------------------------------------------------
def register_usage(fn: Function, target: Target) -> dict[str, int]:
    """Registers an allocated function uses, as the hardware counts them (highest index + 1 per
    file), and the waves per SIMD they allow (SGPRs plus the VCC/FLAT_SCRATCH/XNACK ones the
    target reserves; LDS and the work-group size are not counted)."""
    top = {RegFile.VGPR: 0, RegFile.AGPR: 0, RegFile.SGPR: 0}
    for b in fn.blocks:
        for ins in b.instructions:
            for op in ins.operands:
                if op.kind != "reg" or op.phys is None:
                    continue
                try:
                    reg = parse_physreg(op.phys)
                except TargetError:
                    continue
                if reg.file in top:
                    top[reg.file] = max(top[reg.file], reg.index + max(1, reg.width32))
    return usage_dict(target, top[RegFile.VGPR], top[RegFile.AGPR], top[RegFile.SGPR])


def usage_dict(target: Target, vgprs: int, agprs: int, sgprs: int) -> dict[str, int]:
    waves = target.waves_per_simd(vgprs, agprs, sgprs + target.reserved_num_sgprs())
    return {"vgpr": vgprs, "agpr": agprs, "sgpr": sgprs, "waves": waves}


# --------------------------------------------------------------------------------------------
# The SMT encoding
# --------------------------------------------------------------------------------------------
class _Encoding:
    """z3 terms of one problem: variables, hard constraints, usage terms, soft constraints."""

    def __init__(self, p: Problem, ctx: z3.Context) -> None:
        import z3

        self.p = p
        self.ctx = ctx
        self.hard: list[z3.BoolRef] = []
        self.r: dict[VReg, z3.ArithRef] = {}
        self.f: dict[VReg, z3.ArithRef | int] = {}
        for v, val in p.values.items():
            if not val.allowed:
                raise _NoRegister(v)
            r = _var(f"r_{v}", ctx)
            self.r[v] = r
            codes = list(val.allowed)
            if len(codes) == 1:
                self.f[v] = codes[0]
            else:
                fv = _var(f"f_{v}", ctx)
                self.f[v] = fv
                self.hard.append(z3.Or([fv == c for c in codes]))
            for code, idxs in val.allowed.items():
                self.hard.append(z3.Implies(self.in_file(v, code), _member(r, idxs)))
        for a, am, b, bm, waiver in p.conflicts:
            c = self.disjoint(a, am, b, bm, waiver)
            if c is not None:
                self.hard.append(c)
        # Usage per file: highest index + 1, at least what fixed registers already use.
        self.top: dict[int, z3.ArithRef] = {}
        for f in (_SGPR, _VGPR, _AGPR):
            t = _var(f"top_{f.name}", ctx)
            self.top[f.code] = t
            self.hard += [t >= p.fixed_top.get(f.code, 0), t <= f.size]
            for v, val in p.values.items():
                if f.code in val.allowed:
                    self.hard.append(z3.Implies(self.in_file(v, f.code), self.r[v] + val.width32 <= t))
        t = p.target
        if t.unified_vgpr_file:
            k = _var("vgpr_granules", ctx)
            self.vgpr4 = 4 * k
            self.hard += [k >= 0, k <= _VGPR.size // 4]
            self.hard += [self.vgpr4 >= self.top[_VGPR.code], self.vgpr4 < self.top[_VGPR.code] + 4]
            agprs = self.top[_AGPR.code]
            self.occupancy_count: z3.ArithRef = z3.If(agprs > 0, self.vgpr4 + agprs, self.top[_VGPR.code])
            self.hard.append(self.occupancy_count <= p.limits.total_vector)
        elif t.has_agprs:
            self.occupancy_count = _var("vector_count", ctx)
            self.hard += [self.occupancy_count >= self.top[_VGPR.code], self.occupancy_count >= self.top[_AGPR.code],
                          self.occupancy_count <= _VGPR.size]
        else:
            self.occupancy_count = self.top[_VGPR.code]
        self.vector = self.top[_VGPR.code] + self.top[_AGPR.code]
        self.sgprs = self.top[_SGPR.code]

    def in_file(self, v: VReg, code: int) -> z3.BoolRef:
        import z3

        fv = self.f[v]
        return z3.BoolVal(fv == code, self.ctx) if isinstance(fv, int) else fv == code

    def same_file(self, a: _Side, b: _Side) -> z3.BoolRef | bool:
        """Whether both sides are in one file (a Python bool when that is known)."""
        fa = self.f[a.vreg] if a.vreg is not None else a.file
        fb = self.f[b.vreg] if b.vreg is not None else b.file
        if isinstance(fa, int) and isinstance(fb, int):
            return fa == fb
        if isinstance(fa, int) or isinstance(fb, int):
            var, code, side = (fb, fa, b) if isinstance(fa, int) else (fa, fb, a)
            assert not isinstance(var, int) and isinstance(code, int) and side.vreg is not None
            return code in self.p.values[side.vreg].allowed and var == code
        return fa == fb

    def slot_of(self, s: _Side) -> z3.ArithRef | int:
        return 2 * self.r[s.vreg] if s.vreg is not None else s.slot

    def disjoint(self, a: _Side, am: int, b: _Side, bm: int, waiver: tuple[int, int] | None = None) -> z3.BoolRef | None:
        import z3

        same = self.same_file(a, b)
        if same is False:
            return None
        ta, tb = self.slot_of(a), self.slot_of(b)
        parts: list[z3.BoolRef] = []
        for s1, l1 in lane_runs(am):
            for s2, l2 in lane_runs(bm):
                if s1 % 2 == 0 and s2 % 2 == 0 and l1 == 2 and l2 == 2:
                    parts.append(_ne(ta, s1, tb, s2, self.ctx))
                else:
                    parts.append(z3.Or(_le(ta, s1 + l1, tb, s2, self.ctx), _le(tb, s2 + l2, ta, s1, self.ctx)))
        body = z3.And(parts) if len(parts) > 1 else parts[0]
        if waiver is not None:
            body = z3.Or(body, _eq(ta, waiver[0], tb, waiver[1], self.ctx))
        return body if same is True else z3.Implies(same, body)

    def pinned(self, placed: Mapping[VReg, tuple[int, int]]) -> z3.BoolRef:
        """Every value at the given (file code, register index)."""
        import z3

        eqs: list[z3.BoolRef] = []
        for v, (code, r) in placed.items():
            eqs.append(self.r[v] == r)
            fv = self.f[v]
            if not isinstance(fv, int):
                eqs.append(fv == code)
        return z3.And(eqs)

    def register_of(self, v: VReg, model: z3.ModelRef) -> PhysReg:
        import z3

        fv = self.f[v]
        code = fv if isinstance(fv, int) else model.eval(fv, model_completion=True).as_long()  # type: ignore[union-attr]
        index = model.eval(self.r[v], model_completion=True)
        assert z3.is_bv_value(index)
        return make_register(FILES[code], index.as_long(), self.p.values[v].width32)  # type: ignore[union-attr]

    def matches(self, v: VReg, reg: PhysReg) -> z3.BoolRef | None:
        """`%v` is in `reg` (None when `reg` cannot hold `%v` at all)."""
        import z3

        loc = locate(reg)
        val = self.p.values.get(v)
        if loc is None or val is None or val.width32 != reg.width32 or loc[1] not in val.allowed.get(loc[0].code, ()):
            return None
        return z3.And(self.in_file(v, loc[0].code), self.r[v] == loc[1])

    def copy_hint(self, dst: _Side, doff: int, src: _Side, soff: int) -> z3.BoolRef | None:
        import z3

        same = self.same_file(dst, src)
        if same is False:
            return None
        eq = (self.slot_of(dst) + doff) == (self.slot_of(src) + soff)
        if isinstance(eq, bool):
            return None
        return eq if same is True else z3.And(same, eq)


#: Bit width of the unknowns: registers, counts and 16-bit slots stay below 2**12, so signed
#: bit-vector arithmetic never wraps; bit-vectors let z3 bit-blast the problem to SAT, which
#: decides these colouring problems far faster than linear integer arithmetic.
_BITS = 16


def _var(name: str, ctx: z3.Context) -> z3.ArithRef:
    import z3

    v = z3.BitVec(name, _BITS, ctx)
    return v  # type: ignore[return-value]


class _NoRegister(Exception):
    def __init__(self, v: VReg) -> None:
        super().__init__(v)
        self.vreg = v


def _member(r: z3.ArithRef, idxs: tuple[int, ...]) -> z3.BoolRef:
    """`r` is one of `idxs`: an arithmetic progression with holes, as bounds, a stride and `!=`."""
    import math

    import z3

    lo, hi = idxs[0], idxs[-1]
    step = 0
    for x in idxs:
        step = math.gcd(step, x - lo)
    step = step or 1
    parts = [r >= lo, r <= hi]
    if step > 1:
        parts.append((r - lo) % step == 0)
    present = set(idxs)
    parts += [r != x for x in range(lo, hi + 1, step) if x not in present]
    return z3.And(parts) if len(parts) > 1 else parts[0]  # type: ignore[return-value]


def _ne(ta: z3.ArithRef | int, s1: int, tb: z3.ArithRef | int, s2: int, ctx: z3.Context) -> z3.BoolRef:
    import z3

    e = (ta + s1) != (tb + s2)
    return z3.BoolVal(e, ctx) if isinstance(e, bool) else e


def _eq(ta: z3.ArithRef | int, ka: int, tb: z3.ArithRef | int, kb: int, ctx: z3.Context) -> z3.BoolRef:
    import z3

    e = (ta + ka) == (tb + kb)
    return z3.BoolVal(e, ctx) if isinstance(e, bool) else e


def _le(ta: z3.ArithRef | int, ka: int, tb: z3.ArithRef | int, kb: int, ctx: z3.Context) -> z3.BoolRef:
    import z3

    e = (ta + ka) <= (tb + kb)
    return z3.BoolVal(e, ctx) if isinstance(e, bool) else e


# --------------------------------------------------------------------------------------------
# Solving
# --------------------------------------------------------------------------------------------
class _Search:
    """One incremental z3 solver over the hard constraints, and the lexicographic steps.

    Budgets are z3 resource units, not seconds (see `_RLIMIT_PER_SECOND`): `spent` counts
    what the queries used, and each step runs until a unit mark (`until`)."""

    def __init__(self, enc: _Encoding, seed: int, units: int, wall_deadline: float) -> None:
        import z3

        self.enc = enc
        self.units = units
        self.spent = 0
        self.wall_deadline = wall_deadline
        self.solver = z3.Solver(ctx=enc.ctx)
        self.solver.set("random_seed", seed)
        self.solver.add(enc.hard)
        self.fixed: list[z3.BoolRef] = []  # bounds earlier steps settled
        self.model: z3.ModelRef | None = None
        self.proved = True
        self.reason = ""

    def remaining(self, until: float | None = None) -> float:
        """Resource units left before `until` (default: the whole budget)."""
        return (self.units if until is None else until) - self.spent

    def _limit(self, solver: z3.Solver | z3.Optimize, until: float | None) -> bool:
        """Give `solver` the units left before `until`; False when none are left."""
        left = int(self.remaining(until))
        wall = self.wall_deadline - time.perf_counter()
        if left <= 0 or wall <= 0:
            self.reason = "the time limit was reached"
            return False
        solver.set("rlimit", left)
        solver.set("timeout", max(1, int(wall * 1000)))
        return True

    def _count(self, solver: z3.Solver | z3.Optimize) -> int:
        stats = solver.statistics()
        return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0

    def check(self, extra: z3.BoolRef | None = None, until: float | None = None,
              assumptions: tuple[z3.BoolRef, ...] = ()) -> str:
        """"sat" (self.model updated), "unsat" or "unknown" for the hard constraints + `extra`."""
        import z3

        s = self.solver
        if not self._limit(s, until):
            return "unknown"
        before = self._count(s)
        if extra is not None:
            s.push()
            s.add(extra)
        try:
            r = s.check(*assumptions)
            if r == z3.sat:
                self.model = s.model()
            elif r == z3.unknown:
                self.reason = f"z3 gave up ({s.reason_unknown()})"
        finally:
            self.spent += max(0, self._count(s) - before)
            if extra is not None:
                s.pop()
        return "sat" if r == z3.sat else "unsat" if r == z3.unsat else "unknown"

    def fix(self, c: z3.BoolRef) -> None:
        self.fixed.append(c)
        self.solver.add(c)

    def value(self, term: z3.ArithRef) -> int:
        assert self.model is not None
        v = self.model.eval(term, model_completion=True)
        return v.as_long()  # type: ignore[union-attr]

    def descend(self, bound: _Bound, current: int, lower: int, until: float) -> int:
        """Smallest k (>= `lower`) with `bound(k)` satisfiable, by bisection from the model's
        `current`; fixes `bound(best)` and clears `proved` when a step could not decide."""
        best, lo, floor = current, lower, lower
        first = True
        while floor < best and self.remaining(until) > 0:
            # The pressure bound is often reached: try it first, then bisect. A query that
            # cannot decide moves the next try up instead of ending the search.
            mid = floor if first else (floor + best - 1) // 2
            first = False
            cap = self.spent + max(_RLIMIT_PER_SECOND, self.remaining(until) / 3)
            answer = self.check(bound(mid), min(until, cap))
            if answer == "sat":
                best = bound.current(self)
            elif answer == "unsat":
                lo = floor = mid + 1
            else:
                floor = mid + 1
        if lo < best:
            self.proved = False
        self.fix(bound(best))
        return best

    def tops(self) -> dict[int, int]:
        """Highest register index + 1 per file code in the current model (fixed registers too)."""
        assert self.model is not None
        p = self.enc.p
        tops = {f.code: p.fixed_top.get(f.code, 0) for f in FILES}
        for v, val in p.values.items():
            reg = self.enc.register_of(v, self.model)
            loc = locate(reg)
            assert loc is not None
            tops[loc[0].code] = max(tops[loc[0].code], loc[1] + val.width32)
        return tops

    def maxsat(self, soft: list[z3.BoolRef], until: float) -> int:
        """Satisfy as many of `soft` as possible (z3's Optimize, MaxSAT); fix that count."""
        import z3

        assert self.model is not None
        count = sum(1 for t in soft if z3.is_true(self.model.eval(t, model_completion=True)))
        opt = z3.Optimize(ctx=self.enc.ctx)
        if count < len(soft) and self._limit(opt, until):
            opt.add(self.enc.hard + self.fixed)
            for t in soft:
                opt.add_soft(t, 1)
            r = opt.check()
            self.spent += self._count(opt)
            if r == z3.sat:
                self.model = opt.model()
                count = sum(1 for t in soft if z3.is_true(self.model.eval(t, model_completion=True)))
            else:
                self.proved = False
                self.reason = f"z3 could not maximise the preferences ({opt.reason_unknown()})"
        if soft:
            self.fix(z3.AtLeast(*soft, count))  # type: ignore[arg-type]
        return count

    def greedy_hints(self, hints: list[z3.BoolRef], until: float) -> None:
        """Satisfy many of `hints` (best effort): assume them all, and drop one hint of each
        unsat core until the rest is satisfiable or time runs out."""
        import z3

        assert self.model is not None
        wanted = [h for h in hints if not z3.is_true(self.model.eval(h, model_completion=True))]
        if not wanted:
            return
        lits = {z3.Bool(f"hint_{i}", self.enc.ctx): h for i, h in enumerate(hints)}
        s = self.solver
        s.push()
        for lit, h in lits.items():
            s.add(z3.Implies(lit, h))
        active = list(lits)
        while active:
            r = self.check(None, until, tuple(active))
            if r == "sat":
                break
            if r != "unsat":
                break
            core = {str(c) for c in s.unsat_core()}
            drop = [lit for lit in active if str(lit) in core]
            if not drop:
                break
            active.remove(drop[-1])
        s.pop()


@dataclass
class _Bound:
    """A monotone family of constraints `term <= k` (or, for waves, `waves >= -k`)."""

    enc: _Encoding
    kind: str  # "vector", "sgpr" or "waves"

    def __call__(self, k: int) -> z3.BoolRef:
        import z3

        if self.kind == "vector":
            return self.enc.vector <= k
        if self.kind == "sgpr":
            return self.enc.sgprs <= k
        vec, sgpr = _wave_limits(self.enc.p.target, -k)
        return z3.And(self.enc.occupancy_count <= vec, self.enc.sgprs <= sgpr)

    def current(self, search: _Search) -> int:
        """The model's value, from the registers it assigns (the `top_*` unknowns are only
        bounded below, so a model may leave slack in them)."""
        tops = search.tops()
        if self.kind == "vector":
            return tops[_VGPR.code] + tops[_AGPR.code]
        if self.kind == "sgpr":
            return tops[_SGPR.code]
        return -usage_dict(self.enc.p.target, tops[_VGPR.code], tops[_AGPR.code], tops[_SGPR.code])["waves"]


def _wave_limits(target: Target, waves: int) -> tuple[int, int]:
    """Most vector registers (occupancy count) and SGPRs that still allow `waves` per SIMD."""
    vec = max((c for c in range(1025) if target.waves_with_vgprs(c) >= waves), default=0)
    extra = target.reserved_num_sgprs()
    sgpr = max((c for c in range(801) if target.waves_with_sgprs(c + extra) >= waves), default=0)
    return vec, sgpr


def solve_function(fn: Function, target: Target, *, prefer: Mapping[int | str, PhysReg] | None = None,
                   objective: str = "registers", timeout: float = 60.0, seed: int = 0) -> SolverAllocation:
    """Allocate the pre-RA function `fn` optimally (see the module docstring) and verify it."""
    import z3

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    start = time.perf_counter()

    def result(status: str, reason: str = "", **kw: object) -> SolverAllocation:
        return SolverAllocation(status, {}, round(time.perf_counter() - start, 3), reason=reason, **kw)  # type: ignore[arg-type]

    try:
        problem = build_problem(fn, target)
    except _Unsupported as e:
        return result("unsupported", str(e))
    if any(op.kind == "regmask" for b in fn.blocks for ins in b.instructions for op in ins.operands):
        return result("unsupported", "calls (register masks) are not modelled by the verifier")
    # The pressure bound proves some budgets too small before any search.
    limits = problem.limits
    vector_budget = limits.total_vector if target.unified_vgpr_file else limits.vgprs + limits.agprs
    if problem.pressure["vgpr"] > limits.vgprs or problem.pressure["vector"] > vector_budget:
        need = (f"{problem.pressure['vgpr']} VGPRs" if problem.pressure["vgpr"] > limits.vgprs
                else f"{problem.pressure['vector']} vector registers")
        return result("infeasible", f"values needing {need} are live at once (near line {problem.pressure['line']}), "
                                    f"beyond this function's budget ({limits.vgprs} VGPRs, {vector_budget} vector "
                                    "registers in all): it needs spill code, which an assignment cannot express")
    ctx = z3.Context()
    try:
        enc = _Encoding(problem, ctx)
    except _NoRegister as e:
        cls = problem.values[e.vreg].cls
        return result("infeasible", f"no register of class {cls.name} for %{e.vreg} is allocatable within this "
                                    "function's budget and reservations")
    units = max(1, int(timeout * _RLIMIT_PER_SECOND))
    search = _Search(enc, seed, units, start + _WALL_FACTOR * timeout)
    answer = "unknown"
    start_point = greedy_assignment(problem)
    if start_point is not None:
        answer = search.check(enc.pinned(start_point))
    if answer != "sat":
        answer = search.check()
    if answer == "unsat":
        return result("infeasible", f"the values live at once do not fit in the budget ({limits.vgprs} VGPRs, "
                                    f"{limits.agprs} AGPRs, {limits.sgprs} SGPRs) without spill code, which an "
                                    "assignment cannot express")
    if answer == "unknown":
        return result("unknown", f"no assignment found: {search.reason}")

    # (1) Keep as many preferred registers as possible. Each step gets an equal share of the
    # time left for steps (1)-(2); time a step does not use goes to the next.
    kept = 0
    descent_end = _DESCENT_SHARE * units
    kinds = ("waves", "vector", "sgpr") if objective == "waves" else ("vector", "sgpr")
    steps = len(kinds) + (1 if prefer else 0)

    def share() -> float:
        nonlocal steps
        now = search.spent
        until = now + max(0.0, descent_end - now) / max(1, steps)
        steps -= 1
        return until

    if prefer:
        soft = [t for v, reg in sorted(prefer.items(), key=lambda kv: _vkey(kv[0]))
                if (t := enc.matches(v, reg)) is not None]
        kept = search.maxsat(soft, share())
    # (2) The objective, lexicographically.
    for kind in kinds:
        bound = _Bound(enc, kind)
        current = bound.current(search)
        if kind == "vector":
            lower = problem.pressure["vector"]
        elif kind == "sgpr":
            lower = problem.pressure["sgpr"]
        else:
            lower = -target.max_waves_per_simd
        search.descend(bound, current, lower, share())
    proved = search.proved
    # (3) Copy hints: as many identity copies as possible (best effort, not part of "optimal").
    hints = [h for dst, doff, src, soff, _ in problem.copies if (h := enc.copy_hint(dst, doff, src, soff)) is not None]
    search.greedy_hints(hints, units)

    assert search.model is not None
    assignment = {v: enc.register_of(v, search.model) for v in sorted(problem.values, key=_vkey)}
    kept = sum(1 for v, reg in (prefer or {}).items() if assignment.get(v) == reg)
    return _checked(fn, target, assignment, "optimal" if proved else "feasible", kept, start,
                    "" if proved else f"not proved optimal: {search.reason or 'z3 could not decide a bound'}")


def _checked(fn: Function, target: Target, assignment: dict[int | str, PhysReg], status: str, kept: int,
             start: float, reason: str) -> SolverAllocation:
    """Materialise and verify `assignment`; only a VERIFIED one keeps `status`."""
    from verilocc.rewrite.assignment import Assignment, materialise
    from verilocc.rewrite.finish import finish_for_llc
    from verilocc.findings import Verdict
    from verilocc.verify import Options, verify_modules

    pre = Module(fn.file, None, [fn])
    post, findings = materialise(pre, Assignment(fn.file, dict(assignment), {v: 0 for v in assignment}))
    (post_fn,) = post.functions
    if not findings:
        finish_for_llc(fn, post_fn, assignment)
    report = verify_modules(post, pre, Options(mcpu=target.name), extra_findings=findings)
    seconds = round(time.perf_counter() - start, 3)
    usage = register_usage(post_fn, target)
    if report.verdict is not Verdict.VERIFIED:
        first = next((f for fr in report.functions for f in fr.findings if f.severity != "warning"), None)
        why = f"{first.layer}/{first.kind}: {first.message}" if first is not None else report.verdict.value
        return SolverAllocation("unknown", assignment, seconds, kept,
                                f"the solver's assignment was not VERIFIED ({report.verdict.value}: {why})", usage)
    return SolverAllocation(status, assignment, seconds, kept, reason, usage, function=post_fn)


__all__ = ["OBJECTIVES", "STATUSES", "SolverAllocation", "register_usage", "solve_function"]
