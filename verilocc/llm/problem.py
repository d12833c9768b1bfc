"""The allocation problem of one pre-RA function, from static analysis, for decoders.

For every virtual register: its class, the registers it may take (class membership, tuple
alignment, the function's budget, reservations: the verifier's `register_problem`), its live
interval, the registers it is copied from/to, and its conflicts, the relation layer 1 of the
verifier encodes (DESIGN.md section 2): a def conflicts with everything live after it (lane
granular), with the other defs of its instruction, and an early-clobber def with the
instruction's uses; a COPY's def does not conflict with its source, IMPLICIT_DEF and KILL
conflict with nothing. A decoder that picks, for each register in turn, a candidate that no
conflict rules out against the choices already made produces an assignment that satisfies
every constraint of layer 1; value flow and equivalence follow because the program is only
renamed (identity copies aside). Spilling cannot be expressed by an assignment: a function
whose registers cannot all be placed reports `Infeasible` rather than guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.intervals import live_intervals, slot_numbers
from verilocc.analysis.liveness import compute_liveness
from verilocc.analysis.operands import VReg, slot_mask, vreg_classes
from verilocc.errors import InputError
from verilocc.mir.model import Function, Module
from verilocc.smt.constraints import Limits, function_limits, register_problem
from verilocc.target import PhysReg, RegisterClass, Target, parse_physreg
from verilocc.target.registers import RegFile


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


@dataclass
class AllocationProblem:
    fn: Function
    target: Target
    limits: Limits
    order: list[VReg]  # program order of first definition: the dense renumbering
    info: dict[VReg, VRegInfo]
    # Highest register number + 1 per file: what a first-fit allocation in program order uses
    # (`tight`), and what keeps the occupancy it reaches (`caps`); decoders try within them first.
    tight: dict[RegFile, int] = field(default_factory=dict)
    caps: dict[RegFile, int] = field(default_factory=dict)
    # Whether registers beyond what amdgpu-num-* / amdgpu-waves-per-eu request may be used.
    # The verifier only warns (LLVM 22 drops requests it cannot meet), but LLVM 19 reserves
    # those registers and llc-19 rejects an allocation that uses them: off by default.
    over_budget: bool = False

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
            units = [reg.units[s] for s in _bits(theirs) if s < len(reg.units)]
            out.setdefault(mine, set()).update(units)
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
                    pools.insert(0, tuple(r for r in iv.preferred if _within(r, caps)))
        for pool in pools:
            out = [reg for reg in pool if reg not in skip and all(
                reg.units[s] not in units for mask, units in banned.items() for s in _bits(mask) if s < len(reg.units))]
            if out:
                return out
        return []

    def usage(self, regs: Mapping[VReg, PhysReg]) -> dict[str, int]:
        """Registers an assignment uses with the function's fixed physical registers."""
        return register_usage(self.fn, self.target, regs.values())


def _within(reg: PhysReg, caps: Mapping[RegFile, int]) -> bool:
    cap = caps.get(reg.file)
    return cap is None or reg.index + max(1, reg.width32) <= cap


def occupancy_caps(problem: AllocationProblem) -> tuple[dict[RegFile, int], dict[RegFile, int]]:
    """Per vector file, the register counts of a first-fit allocation in program order, and
    the counts that keep its waves per SIMD (both empty when first fit runs out of registers)."""
    chosen: dict[VReg, PhysReg] = {}
    for v in problem.order:
        allowed = problem.allowed(v, chosen)
        if not allowed:
            return {}, {}
        chosen[v] = allowed[0]
    usage = problem.usage(chosen)
    tight = {RegFile.VGPR: usage["vgpr"], RegFile.AGPR: usage["agpr"]}
    target = problem.target
    most = target.max_vgprs_for_waves(usage["waves"])
    agprs = usage["agpr"]
    if target.unified_vgpr_file and agprs:
        vgprs = (most - agprs) // 4 * 4
    else:
        vgprs = most
    return tight, {RegFile.VGPR: max(vgprs, usage["vgpr"]),
                   RegFile.AGPR: max(agprs, most if not target.unified_vgpr_file else agprs)}


def _bits(mask: int) -> list[int]:
    return [s for s in range(mask.bit_length()) if mask >> s & 1]


def register_usage(fn: Function, target: Target, extra: Iterable[PhysReg] = ()) -> dict[str, int]:
    """VGPRs, AGPRs and SGPRs used (highest register number + 1 per file, as llc's
    NumVgprs/NumAgprs; SGPRs plus the target's VCC/FLAT_SCRATCH/XNACK reservation) and the
    resulting waves per SIMD, for the physical registers of `fn` plus `extra`."""
    top = {RegFile.VGPR: 0, RegFile.AGPR: 0, RegFile.SGPR: 0}
    regs: list[PhysReg] = list(extra)
    for b in fn.blocks:
        for ins in b.instructions:
            for op in ins.operands:
                if op.kind == "reg" and op.phys:
                    try:
                        regs.append(parse_physreg(op.phys))
                    except Exception:  # noqa: BLE001 - an unknown name is the verifier's business
                        continue
    for r in regs:
        if r.file in top:
            top[r.file] = max(top[r.file], r.index + max(1, r.width32))
    sgprs = top[RegFile.SGPR] + target.reserved_num_sgprs()
    waves = target.waves_per_simd(top[RegFile.VGPR], top[RegFile.AGPR], sgprs)
    return {"vgpr": top[RegFile.VGPR], "agpr": top[RegFile.AGPR], "sgpr": top[RegFile.SGPR], "waves": waves}


def single_function(module: Module) -> Function:
    if len(module.functions) != 1:
        raise InputError(f"expected one function per file, found {len(module.functions)}", module.file, 1, 1)
    return module.functions[0]


def build_problem(fn: Function, target: Target) -> AllocationProblem:
    classes = vreg_classes(fn)
    cfg = build_cfg(fn)
    liveness = compute_liveness(fn, cfg, classes)
    limits = function_limits(fn, target)
    numbers = slot_numbers(liveness)
    intervals = live_intervals(liveness)
    blocks = {b.number: b for b in fn.blocks}

    first_def: dict[VReg, int] = {}
    first_use: dict[VReg, int] = {}
    copies: dict[VReg, list[VReg | PhysReg]] = {v: [] for v in classes}
    for b in cfg.order:
        for idx, ins in enumerate(blocks[b].instructions):
            n = numbers[(b, idx)]
            for op in ins.operands:
                if op.kind == "reg" and op.vreg is not None:
                    (first_def if op.is_def else first_use).setdefault(op.vreg, n)
            if ins.opcode == "COPY":
                regs = [o for o in ins.operands if o.kind == "reg" and not o.is_implicit]
                if len(regs) == 2 and not regs[0].subreg and not regs[1].subreg:
                    a, c = regs
                    for x, y in ((a, c), (c, a)):
                        if x.vreg is not None and x.vreg in copies:
                            if y.vreg is not None:
                                copies[x.vreg].append(y.vreg)
                            elif y.phys:
                                try:
                                    copies[x.vreg].append(parse_physreg(y.phys))
                                except Exception:  # noqa: BLE001
                                    pass
    big = 1 << 30
    order = sorted(classes, key=lambda v: (first_def.get(v, big), first_use.get(v, big), str(v)))

    pool_cache: dict[str, tuple[tuple[PhysReg, ...], tuple[PhysReg, ...]]] = {}
    info: dict[VReg, VRegInfo] = {}
    for v in order:
        cls = classes[v]
        if cls.name not in pool_cache:
            members = cls.members(target)
            hard = tuple(m for m in members if register_problem(m, cls, target, limits) is None)
            hint = limits.hint or limits
            soft = tuple(m for m in hard if register_problem(m, cls, target, hint) is None)
            pool_cache[cls.name] = (hard, soft)
        hard, soft = pool_cache[cls.name]
        iv = intervals.get(v)
        start = iv.start // 2 if iv else first_def.get(v, first_use.get(v, 0))
        end = (iv.end + 1) // 2 if iv else start + 1
        info[v] = VRegInfo(v, cls, hard, soft, start, end, copies=copies[v])

    seen: set[tuple[VReg, VReg, int, int]] = set()

    def pair(a: VReg, am: int, c: VReg, cm: int) -> None:
        if a == c or (a, c, am, cm) in seen:
            return
        seen.add((a, c, am, cm))
        info[a].conflicts.append((c, am, cm))
        info[c].conflicts.append((a, cm, am))

    for b in cfg.order:
        block = blocks[b]
        effects = liveness.effects[b]
        for idx, live in liveness.walk_backward(b):
            ins = block.instructions[idx]
            eff = effects[idx]
            if not eff.defs or ins.opcode in ("IMPLICIT_DEF", "KILL"):
                continue
            copy_src = None
            if ins.opcode == "COPY":
                regs = [o for o in ins.operands if o.kind == "reg" and not o.is_implicit]
                # Only a whole-register copy lets its def share the source's register: a
                # subregister copy leaves the source's other lanes live beside it.
                if len(regs) == 2 and not regs[0].subreg and not regs[1].subreg:
                    copy_src = regs[1].vreg
            live_units = frozenset(live.units)
            vdefs = [d for d in eff.defs if d.vreg is not None]
            pdefs = frozenset(u for d in eff.defs if d.vreg is None for u in d.units)
            for d in vdefs:
                assert d.vreg is not None
                dm = slot_mask(d.mask)
                for w, mw in live.vregs.items():
                    if w != d.vreg and w != copy_src:
                        pair(d.vreg, dm, w, slot_mask(mw))
                if live_units or pdefs:
                    info[d.vreg].fixed.append((dm, live_units | pdefs))
                if d.op.has("early-clobber"):
                    for u in eff.uses:
                        if u.vreg is not None and u.op.tied_def is None and u.vreg != d.vreg:
                            pair(d.vreg, dm, u.vreg, slot_mask(u.mask))
                for d2 in vdefs:
                    if d2.vreg is not None and d2.vreg != d.vreg:
                        pair(d.vreg, dm, d2.vreg, slot_mask(d2.mask))
            if pdefs:
                for w, mw in live.vregs.items():
                    info[w].fixed.append((slot_mask(mw), pdefs))
    for iv2 in info.values():  # merge fixed units per mask: fewer entries to test
        merged: dict[int, set[int]] = {}
        for m, units in iv2.fixed:
            merged.setdefault(m, set()).update(units)
        iv2.fixed = [(m, frozenset(u)) for m, u in sorted(merged.items())]
    problem = AllocationProblem(fn, target, limits, order, info)
    problem.tight, problem.caps = occupancy_caps(problem)
    return problem
