"""Layer 1: register constraints of an allocation, encoded in SMT and decided by z3.

Unknowns. Each virtual register that the allocation keeps in one place (its *home*) is a
variable `h_N`: the first 16-bit register unit of that home. Virtual registers that live in
several places (LLVM split or spilled them) get no variable; their homes are still checked for
class membership, and their interference is left to value flow (layer 2), which the verdict
says. Fixed physical registers of the virtual program are constants.

Constraints (DESIGN.md section 2, layer 1), one object each, so that the same set is both
evaluated on the allocation (for findings with places) and printed as SMT-LIB (the proof):
- `Member`: the home is a register of the virtual register's class on this target, inside the
  register file and the function's budget, and not reserved (class membership, tuple width and
  alignment, bounds, reserved registers);
- `Disjoint`: two values live at the same time do not share a lane. One constraint per pair
  that meets at a definition (the def against everything live after it, including the other
  defs of the instruction; an early-clobber def also against the instruction's uses), so the
  count follows the program's interference, not all pairs. The source of a COPY may share the
  destination's register at the copy itself, as LLVM's coalescer allows.
Tied operands and early-clobber defs of the allocated program itself, and registers that do
not exist, are checked on the physical program (`post_only_checks`).

The obligation is `assignment /\\ not (C1 /\\ ... /\\ Cn)`: unsat proves every constraint holds.
Findings come from evaluating each constraint on the assignment; the solver's answer must
agree with that evaluation, and any disagreement or timeout is an "unknown" finding.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from verilocc.pairing.alignment import (
    MOVE_OPCODES,
    FunctionAlignment,
    Role,
    instruction_key,
    is_constant_def,
    is_pure,
)
from verilocc.pairing.homes import NUMBERED_FILES, HomeUse, collect_homes, make_register
from verilocc.analysis.liveness import Liveness
from verilocc.analysis.operands import VReg, physreg_at, resolve_operand, slot_mask
from verilocc.errors import TargetError
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.smt.solver import Answer, check_z3
from verilocc.target import (
    PhysReg,
    RegFile,
    RegisterClass,
    Target,
    default_budget,
    function_budget,
    function_reserved_registers,
    is_defined,
    reservations,
    slots_to_mask,
)

LAYER = "constraints"
_NUMBERED = NUMBERED_FILES
_PREFIX = {RegFile.SGPR: "sgpr", RegFile.VGPR: "vgpr", RegFile.AGPR: "agpr"}


def lane_runs(mask: int) -> list[tuple[int, int]]:
    """Maximal runs of set bits: [(first, length)]."""
    runs: list[tuple[int, int]] = []
    i = 0
    while mask:
        if mask & 1:
            start = i
            while mask & 1:
                mask >>= 1
                i += 1
            runs.append((start, i - start))
        else:
            mask >>= 1
            i += 1
    return runs


@dataclass(frozen=True)
class Limits:
    """How many registers of each file one function may use, and which are reserved.

    Computed with `verilocc.target.function_budget` (GCNSubtarget / SIRegisterInfo rules).
    The *hard* limits follow from the target and the work-group size: a kernel beyond them
    cannot be launched as compiled, so exceeding them rejects the allocation. The *hint*
    limits also apply `amdgpu-waves-per-eu`, `amdgpu-num-vgpr` and `amdgpu-num-sgpr`, which
    LLVM versions honour differently (LLVM 22 drops requests it cannot meet); exceeding them
    only lowers occupancy, so it is a warning. Where facts a MIR file does not record would
    change a limit (whether AGPRs are used), the larger choice is taken.
    """

    sgprs: int
    vgprs: int
    agprs: int
    total_vector: int  # VGPRs (rounded up to 4 when AGPRs are used) + AGPRs, unified files
    reserved: frozenset[int]
    hint: Limits | None = None

    def limit(self, file: RegFile) -> int | None:
        return {RegFile.SGPR: self.sgprs, RegFile.VGPR: self.vgprs, RegFile.AGPR: self.agprs}.get(file)


UNLIMITED = Limits(10**6, 10**6, 10**6, 10**6, frozenset())


def _int_attr(attrs: dict[str, str], key: str) -> int | None:
    v = attrs.get(key, "").strip()
    return int(v) if v.isdigit() else None


def _limits(target: Target, reserved: frozenset[int], **kw: object) -> Limits:
    without = function_budget(target, uses_agprs=False, **kw)  # type: ignore[arg-type]
    with_agprs = function_budget(target, uses_agprs=True, **kw)  # type: ignore[arg-type]
    vgprs = max(without.vgprs, with_agprs.vgprs)
    agprs = max(without.agprs, with_agprs.agprs)
    total = without.vgprs + without.agprs if target.unified_vgpr_file else vgprs + agprs
    return Limits(max(without.sgprs, with_agprs.sgprs), vgprs, agprs, total, reserved)


def function_limits(fn: Function, target: Target) -> Limits:
    attrs = fn.ir_attributes
    extra = function_reserved_registers(fn.machine_function_info, target)
    reserved = frozenset(reservations(target, default_budget(target), extra).reserved_units)
    flat = attrs.get("amdgpu-flat-work-group-size", "").split(",")
    common: dict[str, object] = {}
    if flat[-1].strip().isdigit():
        common["flat_workgroup_size"] = int(flat[-1])
    hard = _limits(target, reserved, **common)
    waves = [w.strip() for w in attrs.get("amdgpu-waves-per-eu", "").split(",")]
    if waves[0].isdigit():
        common["waves_per_eu"] = (int(waves[0]), int(waves[1]) if len(waves) > 1 and waves[1].isdigit() else None)
    common["num_sgpr"] = _int_attr(attrs, "amdgpu-num-sgpr")
    common["num_vgpr"] = _int_attr(attrs, "amdgpu-num-vgpr")
    hint = _limits(target, reserved, **common)
    return Limits(hard.sgprs, hard.vgprs, hard.agprs, hard.total_vector, reserved, hint=hint)


def budget_warning(reg: PhysReg, limits: Limits) -> str | None:
    """A sentence when `reg` lies beyond the function's requested (hint) budget."""
    hint = limits.hint
    if hint is None or reg.file not in _NUMBERED:
        return None
    limit = hint.limit(reg.file)
    if limit is not None and reg.index + max(1, len(reg.units) // 2) > limit:
        return (f"${reg.name} is beyond the {limit} {reg.file.value.upper()}s this function's attributes "
                "(amdgpu-waves-per-eu / amdgpu-num-*) ask for; occupancy will be lower than requested")
    return None


def file_size(target: Target, file: RegFile) -> int:
    if file is RegFile.SGPR:
        return target.total_sgprs
    if file is RegFile.VGPR:
        return target.addressable_vgprs
    if file is RegFile.AGPR:
        return target.addressable_vgprs if target.has_agprs else 0
    return 0


def register_problem(reg: PhysReg, cls: RegisterClass | None, target: Target, limits: Limits) -> tuple[str, str] | None:
    """Why `reg` cannot hold a value of `cls` (kind, sentence), or None when it can."""
    name = f"${reg.name}"
    if cls is not None and reg.file not in cls.files:
        want = "/".join(sorted(f.value.upper() for f in cls.files))
        return "class", f"{name} is {'an' if reg.file.value[0] in 'as' else 'a'} {reg.file.value.upper()} register, but class {cls.name} needs {want}"
    if not is_defined(reg):
        return "alignment", f"{name} is not a register: SGPR tuples must start at an even SGPR (4-aligned when wider than 64 bits)"
    if reg.file in _NUMBERED:
        width32 = max(1, len(reg.units) // 2)
        size = file_size(target, reg.file)
        if reg.index + width32 > size:
            return "bounds", f"{name} is outside the {target.name} {reg.file.value.upper()} file ({size} registers)"
        limit = limits.limit(reg.file)
        if limit is not None and reg.index + width32 > limit:
            return "bounds", f"{name} is beyond this function's budget of {limit} {reg.file.value.upper()}s"
        if target.aligned_vgpr_tuples and reg.file in (RegFile.VGPR, RegFile.AGPR) and width32 >= 2 and reg.index % 2:
            return "alignment", f"{name} starts at an odd register; {target.name} needs even-aligned {reg.file.value.upper()} tuples"
    if cls is not None and not cls.contains(reg, target):
        return "class", f"{name} is not in class {cls.name} on {target.name}"
    if limits.reserved.intersection(reg.units):
        return "reserved", f"{name} is reserved on {target.name} and may not be allocated"
    return None


@functools.lru_cache(maxsize=4096)
def allowed_first_units(cls: RegisterClass, target: Target, limits: Limits) -> tuple[int, ...]:
    """First register units of the registers that can hold a value of the class."""
    return tuple(sorted({m.units[0] for m in cls.members(target) if register_problem(m, cls, target, limits) is None}))


@dataclass(frozen=True)
class Side:
    """A value's place in a constraint: a home variable or fixed physical units."""

    label: str  # "%12" or "$vcc"
    var: str | None = None  # "h_12"
    const: int | None = None  # first unit of a fixed register


@dataclass(frozen=True)
class Member:
    var: str
    vreg: VReg
    cls: str
    allowed: tuple[int, ...]  # allowed first units, ascending

    def smt(self) -> str:
        return _member_smt(self.var, self.allowed)


@dataclass(frozen=True)
class Disjoint:
    a: Side
    a_mask: int
    b: Side
    b_mask: int
    place: Place
    kind: str  # "interference" or "early-clobber"
    def_text: str  # the defining operand as written
    live_vreg: VReg | None  # the value that is live (b)

    def holds(self, values: dict[str, int]) -> bool:
        pa = values[self.a.var] if self.a.var else self.a.const
        pb = values[self.b.var] if self.b.var else self.b.const
        assert pa is not None and pb is not None
        if pa <= pb:
            return not (self.a_mask & (self.b_mask << (pb - pa)))
        return not (self.b_mask & (self.a_mask << (pa - pb)))

    def smt(self) -> str:
        ta = self.a.var if self.a.var else str(self.a.const)
        tb = self.b.var if self.b.var else str(self.b.const)
        parts = []
        for s1, l1 in lane_runs(self.a_mask):
            for s2, l2 in lane_runs(self.b_mask):
                # [ta+s1, ta+s1+l1) and [tb+s2, tb+s2+l2) do not meet
                parts.append(f"(or (<= (+ {ta} {s1 + l1}) (+ {tb} {s2})) (<= (+ {tb} {s2 + l2}) (+ {ta} {s1})))")
        return parts[0] if len(parts) == 1 else "(and " + " ".join(parts) + ")"


def _member_smt(var: str, allowed: tuple[int, ...]) -> str:
    if not allowed:
        return "false"
    # Compress the allowed set into arithmetic progressions.
    progs: list[tuple[int, int, int]] = []
    i = 0
    n = len(allowed)
    while i < n:
        if i + 1 < n:
            step = allowed[i + 1] - allowed[i]
            j = i + 1
            while j + 1 < n and allowed[j + 1] - allowed[j] == step:
                j += 1
            progs.append((allowed[i], allowed[j], step))
            i = j + 1
        else:
            progs.append((allowed[i], allowed[i], 1))
            i += 1
    terms = []
    for lo, hi, step in progs:
        if lo == hi:
            terms.append(f"(= {var} {lo})")
        elif step == 1:
            terms.append(f"(and (<= {lo} {var}) (<= {var} {hi}))")
        else:
            terms.append(f"(and (<= {lo} {var}) (<= {var} {hi}) (= (mod (- {var} {lo}) {step}) 0))")
    return terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")"


# Since gfx90a, memory instructions take AGPRs as data operands and MFMAs take either file for
# their accumulators (FeatureGFX90AInsts; LLVM gives such operands AV_* classes). After a split,
# LLVM inflates a virtual register's class to the AV class its operands allow, so a value of a
# VGPR class may legally sit in an AGPR there (and the reverse).
_AV_OPERAND_PREFIXES = ("GLOBAL_", "BUFFER_", "FLAT_", "DS_", "SCRATCH_", "V_MFMA", "V_SMFMAC", "V_ACCVGPR")


def av_interchangeable(cls: RegisterClass, reg: PhysReg, opcode: str, target: Target) -> bool:
    vector = {RegFile.VGPR, RegFile.AGPR}
    return (
        target.aligned_vgpr_tuples
        and target.has_agprs
        and reg.file in vector
        and bool(cls.files & vector)
        and opcode.startswith(_AV_OPERAND_PREFIXES)
    )


class ConstraintChecker:
    def __init__(self, pre: Function, post: Function, target: Target, classes: dict[VReg, RegisterClass],
                 alignment: FunctionAlignment, liveness: Liveness, timeout_s: float = 60.0, seed: int = 0) -> None:
        self.pre = pre
        self.post = post
        self.target = target
        self.classes = classes
        self.alignment = alignment
        self.liveness = liveness
        self.timeout_s = timeout_s
        self.seed = seed
        self.limits = function_limits(post, target)
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.stats: dict[str, object] = {}
        self.homes: dict[VReg, dict[str, HomeUse]] = {}
        self.members: list[Member] = []
        self.disjoint: list[Disjoint] = []
        self.values: dict[str, int] = {}
        self.remat: set[VReg] = set()
        self._pre_to_post: dict[tuple[int, int], int] = {
            (b, st.pre): st.post
            for b, steps in alignment.steps.items()
            for st in steps
            if st.role is Role.MATCHED and st.pre is not None and st.post is not None
        }
        self._allowed_cache: dict[str, tuple[int, ...]] = {}
        self.query: str | None = None

    def rematerialised_vregs(self) -> set[VReg]:
        """Virtual registers whose live range LLVM may have cut by rematerialisation.

        Their pre-RA live range says nothing about where the allocated program keeps them,
        so they get no variable here; value flow checks them.
        """
        post_blocks = {b.number: b for b in self.post.blocks}
        pre_blocks = {b.number: b for b in self.pre.blocks}
        keys: set[tuple[object, ...]] = set()
        out: set[VReg] = set()
        for b, steps in self.alignment.steps.items():
            for st in steps:
                if st.role is Role.REMAT and st.post is not None:
                    keys.add(instruction_key(post_blocks[b].instructions[st.post]))
                elif st.role is Role.REMAT_ORIGIN and st.pre is not None:
                    out.update(d.vreg for d in pre_blocks[b].instructions[st.pre].defs if d.vreg is not None)
        for block in self.pre.blocks:
            for ins in block.instructions:
                if is_constant_def(ins, False) or (is_pure(ins, False) and instruction_key(ins) in keys):
                    out.update(d.vreg for d in ins.defs if d.vreg is not None)
        return out

    def _copy_units(self, ins: Instruction, fn: Function) -> tuple[frozenset[int], frozenset[int]] | None:
        """(destination units, source units) of a COPY; virtual operands through their homes."""
        regs = [op for op in ins.operands if op.kind == "reg" and not op.is_implicit]
        if len(regs) != 2:
            return None
        out: list[frozenset[int]] = []
        for op in regs:
            if op.phys is not None:
                out.append(frozenset(physreg_at(fn, op, op.phys).units))
            elif op.vreg is not None and len(self.homes.get(op.vreg, {})) == 1:
                ref = resolve_operand(fn, op, self.classes)
                home = next(iter(self.homes[op.vreg].values())).reg
                assert ref is not None
                try:
                    out.append(frozenset(home.lanes(ref.mask)))
                except TargetError:
                    return None
            else:
                return None
        return out[0], out[1]

    def moved_vregs(self) -> set[VReg]:
        """Virtual registers that allocator-inserted moves take out of (or into) their home.

        A post-only COPY or spill that reads or writes the home of a value live at that point
        means LLVM split the value's live range: its pre-RA live range no longer says where it
        is, so it gets no variable here (value flow follows it through the moves). A post COPY
        that is just the virtual program's own COPY between the same homes moves nothing.
        A virtual-program COPY between different homes that the allocated program does not
        repeat was coalesced: there the value sat in the other operand's register, not in its
        home, so its virtual operands get no variable either.
        """
        out: set[VReg] = set()
        by_unit: dict[int, set[VReg]] = {}
        for v, h in self.homes.items():
            if len(h) == 1:
                for u in next(iter(h.values())).reg.units:
                    by_unit.setdefault(u, set()).add(v)
        pre_blocks = {b.number: b for b in self.pre.blocks}
        post_blocks = {b.number: b for b in self.post.blocks}

        def coalesced(copies: list[tuple[tuple[frozenset[int], frozenset[int]], Instruction]]) -> None:
            for (dst, src), pi in copies:
                if dst != src:
                    out.update(op.vreg for op in pi.operands if op.kind == "reg" and op.vreg is not None)

        for b, steps in self.alignment.steps.items():
            wanted: dict[int, list[frozenset[int]]] = {}
            pre_idx = -1
            gap_copies: list[tuple[tuple[frozenset[int], frozenset[int]], Instruction]] = []
            for st in steps:
                if st.role is Role.MATCHED:
                    coalesced(gap_copies)
                    gap_copies = []
                if st.pre is not None:
                    pre_idx = st.pre
                    pi = pre_blocks[b].instructions[st.pre]
                    if st.role is Role.MOVE and pi.opcode == "COPY":
                        units = self._copy_units(pi, self.pre)
                        if units is not None:
                            gap_copies.append((units, pi))
                    continue
                if st.post is None or st.role not in (Role.MOVE, Role.SPILL):
                    continue
                qi = post_blocks[b].instructions[st.post]
                if st.role is Role.MOVE and qi.opcode != "COPY":
                    continue
                if qi.opcode == "COPY":
                    units = self._copy_units(qi, self.post)
                    match = next((g for g in gap_copies if g[0] == units), None) if units is not None else None
                    if match is not None:
                        gap_copies.remove(match)
                        continue
                touched: set[int] = set()
                for op in qi.operands:
                    if op.kind == "reg" and op.phys is not None and not op.is_implicit:
                        touched.update(physreg_at(self.post, op, op.phys).units)
                wanted.setdefault(pre_idx, []).append(frozenset(touched))
            coalesced(gap_copies)
            if not wanted:
                continue
            live_at: dict[int, set[VReg]] = {}
            if -1 in wanted:
                live_at[-1] = set(self.liveness.live_in[b].vregs)
            for idx, live in self.liveness.walk_backward(b):
                if idx in wanted:
                    live_at[idx] = set(live.vregs)
            for idx, unit_sets in wanted.items():
                live = live_at.get(idx, set())
                for touched_units in unit_sets:
                    for u in touched_units:
                        out.update(v for v in by_unit.get(u, ()) if v in live)
        return out

    def collect_homes(self) -> None:
        found = collect_homes(self.pre, self.post, self.alignment, self.classes, self.target)
        self.homes = found.homes
        for v, text, phys, place in found.impossible:
            cls = self.classes[v]
            why = (f"no register of class {cls.name} has it as that subregister" if "." in text else
                   f"it has {len(phys.units) * 16} bits and class {cls.name} {cls.width_units * 16}")
            self.findings.append(Finding(
                "width", LAYER, place, f"bb.{place.block} line {place.line}: {text} is in ${phys.name}, but {why}",
                vregs=(f"%{v}",), physregs=(f"${phys.name}",)))

    # --- constraints ---------------------------------------------------------------------
    def allowed(self, cls: RegisterClass) -> tuple[int, ...]:
        return allowed_first_units(cls, self.target, self.limits)

    def allowed_av(self, cls: RegisterClass) -> tuple[int, ...]:
        """Allowed first units of `cls` widened to both vector files (see av_interchangeable)."""
        key = "av:" + cls.name
        got = self._allowed_cache.get(key)
        if got is None:
            firsts = set(self.allowed(cls))
            for m in cls.members(self.target):
                if m.file not in (RegFile.VGPR, RegFile.AGPR):
                    continue
                other = RegFile.AGPR if m.file is RegFile.VGPR else RegFile.VGPR
                try:
                    twin = make_register(other, m.index, len(m.units) // 2)
                except TargetError:
                    continue
                if register_problem(twin, None, self.target, self.limits) is None:
                    firsts.add(twin.units[0])
            got = tuple(sorted(firsts))
            self._allowed_cache[key] = got
        return got

    def check_members(self) -> None:
        for v in sorted(self.homes, key=_vkey):
            cls = self.classes[v]
            widened = False
            for name in sorted(self.homes[v]):
                use = self.homes[v][name]
                problem = register_problem(use.reg, cls, self.target, self.limits)
                if problem is not None and problem[0] == "class" and av_interchangeable(cls, use.reg, use.opcode, self.target):
                    problem = register_problem(use.reg, None, self.target, self.limits)
                    widened = True
                if problem is not None:
                    kind, why = problem
                    self.findings.append(Finding(
                        kind, LAYER, use.place,
                        f"bb.{use.place.block} line {use.place.line}: %{v}:{cls.name} is assigned ${use.reg.name}: {why}",
                        vregs=(f"%{v}",), physregs=(f"${use.reg.name}",)))
                elif (warn := budget_warning(use.reg, self.limits)) is not None:
                    self.findings.append(Finding(
                        "budget", LAYER, use.place, f"bb.{use.place.block} line {use.place.line}: {warn}",
                        vregs=(f"%{v}",), physregs=(f"${use.reg.name}",), severity="warning"))
            if len(self.homes[v]) == 1 and v not in self.remat:
                (use,) = self.homes[v].values()
                var = f"h_{v}"
                self.values[var] = use.reg.units[0]
                allowed = self.allowed_av(cls) if widened else self.allowed(cls)
                self.members.append(Member(var, v, cls.name + (" (AV operand)" if widened else ""), allowed))

    def side_of_vreg(self, v: VReg) -> Side | None:
        var = f"h_{v}"
        return Side(f"%{v}", var=var) if var in self.values else None

    def build_disjointness(self) -> None:
        seen: set[tuple[object, ...]] = set()
        pre_blocks = {b.number: b for b in self.pre.blocks}
        unit_runs: dict[frozenset[int], list[tuple[int, int]]] = {}

        def phys_sides(units: frozenset[int]) -> list[tuple[Side, int]]:
            runs = unit_runs.get(units)
            if runs is None:
                runs = []
                for u in sorted(units):
                    if runs and runs[-1][0] + runs[-1][1] == u:
                        runs[-1] = (runs[-1][0], runs[-1][1] + 1)
                    else:
                        runs.append((u, 1))
                unit_runs[units] = runs
            return [(Side(f"unit {s}", const=s), (1 << n) - 1) for s, n in runs]

        for b in self.liveness.cfg.order:
            block = pre_blocks[b]
            effects = self.liveness.effects[b]
            for idx, live in self.liveness.walk_backward(b):
                ins = block.instructions[idx]
                eff = effects[idx]
                if not eff.defs or ins.opcode in ("IMPLICIT_DEF", "KILL"):
                    continue
                copy_src = _copy_source(ins)
                place = Place(self.pre.file, self.pre.name, b, idx, ins.line, ins.column)
                def_sides: list[tuple[Side, int, Operand]] = []
                for d in eff.defs:
                    if d.vreg is not None:
                        side = self.side_of_vreg(d.vreg)
                        if side is not None:
                            def_sides.append((side, slot_mask(d.mask), d.op))
                    elif d.units:
                        for s, m in phys_sides(frozenset(d.units)):
                            def_sides.append((Side(f"${d.phys.name}" if d.phys else s.label, const=s.const), m, d.op))
                if not def_sides:
                    continue
                live_sides: list[tuple[Side, int, VReg | None]] = []
                for w, mw in live.vregs.items():
                    side = self.side_of_vreg(w)
                    if side is not None:
                        live_sides.append((side, slot_mask(mw), w))
                if live.units:
                    for s, m in phys_sides(frozenset(live.units)):
                        live_sides.append((s, m, None))
                for ds, dm, dop in def_sides:
                    for ls, lm, w in live_sides:
                        if ls == ds or (ds.var is None and ls.var is None):
                            continue
                        if copy_src is not None and w == copy_src:
                            continue
                        self._add(seen, ds, dm, ls, lm, place, "interference", dop, w)
                    if dop.has("early-clobber"):
                        for u in eff.uses:
                            if u.op.tied_def is not None or u.vreg is None:
                                continue
                            us = self.side_of_vreg(u.vreg)
                            # Only lanes that may hold a value before the instruction conflict.
                            um = u.mask & (self.liveness.defined_after(b, idx - 1, u.vreg) if idx else
                                           self.liveness.defined_in[b].get(u.vreg, 0))
                            if us is not None and us != ds and um:
                                self._add(seen, ds, dm, us, slot_mask(um), place, "early-clobber", dop, u.vreg)
                # Defs of one instruction never share lanes with each other.
                for i in range(len(def_sides)):
                    for j in range(i + 1, len(def_sides)):
                        a, b2 = def_sides[i], def_sides[j]
                        if a[0] != b2[0] and not (a[0].var is None and b2[0].var is None):
                            self._add(seen, a[0], a[1], b2[0], b2[1], place, "interference", a[2], None)

    def _add(self, seen: set[tuple[object, ...]], a: Side, am: int, b: Side, bm: int, place: Place, kind: str,
             dop: Operand, w: VReg | None) -> None:
        key = (a.var, a.const, am, b.var, b.const, bm)
        if key in seen:
            return
        seen.add(key)
        self.disjoint.append(Disjoint(a, am, b, bm, place, kind, dop.register_text, w))

    # --- evaluation and proof ------------------------------------------------------------
    def evaluate(self) -> int:
        """Report every violated disjointness; return how many encoded constraints fail."""
        failed = 0
        for c in self.disjoint:
            if not c.holds(self.values):
                failed += 1
                self.findings.append(self.describe(c))
        # Members are reported (with their reason) by check_members; count them here.
        failed += sum(1 for m in self.members if self.values[m.var] not in set(m.allowed))
        return failed

    def post_place(self, place: Place) -> Place:
        """The allocated program's instruction paired with a virtual program's one, if any."""
        post_index = self._pre_to_post.get((place.block, place.index))
        if post_index is None:
            return place
        ins = self.post.block(place.block).instructions[post_index]
        return Place(self.post.file, self.post.name, place.block, post_index, ins.line, ins.column)

    def describe(self, c: Disjoint) -> Finding:
        pa = self.values[c.a.var] if c.a.var else c.a.const
        assert pa is not None
        where = self.unit_name(pa, c.a_mask)
        other = c.b.label if c.b.var else self.unit_name(c.b.const or 0, c.b_mask)
        b = c.place.block
        place = self.post_place(c.place)
        if c.kind == "early-clobber":
            msg = (f"bb.{b} line {place.line}: early-clobber def {c.def_text} (in {where}) overlaps the use of "
                   f"{other} in the same instruction")
        else:
            read_at = self.next_read(c) if c.live_vreg is not None else None
            lanes = self.lanes_text(c.live_vreg, c.b_mask) if c.live_vreg is not None else ""
            other_where = self.unit_name(self.values[c.b.var], c.b_mask) if c.b.var else other
            msg = (f"at bb.{b} line {place.line}, {other}{lanes} (in {other_where}) is still live"
                   + (f" (read at line {read_at})" if read_at else "")
                   + f" when {c.def_text} is defined in {where} and overwrites it")
        vregs = tuple(x.label for x in (c.a, c.b) if x.var)
        return Finding(c.kind, LAYER, place, msg, vregs=vregs,
                       physregs=tuple(sorted({self.unit_name(pa, c.a_mask)})))

    def lanes_text(self, v: VReg, mask: int) -> str:
        cls = self.classes.get(v)
        if cls is None or mask == (1 << cls.width_units) - 1:
            return ""
        return f" (lanes 0x{slots_to_mask(i for i in range(mask.bit_length()) if mask >> i & 1):X})"

    def unit_name(self, first_unit: int, mask: int) -> str:
        """A register name for `mask` lanes starting at `first_unit` (best effort)."""
        for v in self.homes:
            for use in self.homes[v].values():
                if use.reg.units[0] <= first_unit <= use.reg.units[-1]:
                    base = use.reg.units.index(first_unit)
                    units = tuple(first_unit + i for i in range(mask.bit_length()) if mask >> i & 1)
                    if all(u in use.reg.units for u in units):
                        return f"${self._name_units(use.reg, base, mask)}"
        return f"units {first_unit}+0x{mask:X}"

    @staticmethod
    def _name_units(reg: PhysReg, base: int, mask: int) -> str:
        if base == 0 and mask == (1 << len(reg.units)) - 1:
            return reg.name
        lanes = [base + i for i in range(mask.bit_length()) if mask >> i & 1]
        if reg.file in _NUMBERED and lanes[0] % 2 == 0 and len(lanes) % 2 == 0:
            first = reg.index + lanes[0] // 2
            return "_".join(f"{_PREFIX[reg.file]}{i}" for i in range(first, first + len(lanes) // 2))
        return f"{reg.name}[lanes 0x{mask << base:X}]"

    def next_read(self, c: Disjoint) -> int | None:
        """The line of the next read of the live value after the conflicting def."""
        w = c.live_vreg
        pre_blocks = {b.number: b for b in self.pre.blocks}
        start_block, start = c.place.block, c.place.index + 1
        seen: set[int] = set()
        queue = [(start_block, start)]
        while queue:
            b, i = queue.pop(0)
            block = pre_blocks[b]
            for k, ins in enumerate(block.instructions[i:], start=i):
                for op in ins.operands:
                    if op.kind == "reg" and op.vreg == w and not op.is_def and not op.has("undef"):
                        ref = resolve_operand(self.pre, op, self.classes)
                        if ref is not None and slot_mask(ref.mask) & c.b_mask:
                            return self.post_place(Place(self.pre.file, self.pre.name, b, k, op.line)).line
            for s in self.liveness.cfg.successors(b):
                if s not in seen:
                    seen.add(s)
                    queue.append((s, 0))
        return None

    def smtlib(self) -> str:
        """The proof obligation: the assignment and the negated conjunction of all constraints."""
        out = ["(set-logic QF_LIA)"]
        # The assignment as definitions, not asserted equalities: the same formula, and every
        # constraint becomes ground, which solvers (cvc5 re-checking a certificate) decide by
        # rewriting instead of by substitution.
        for var in sorted(self.values, key=_var_key):
            out.append(f"(define-fun {var} () Int {self.values[var]})")
        names: list[str] = []
        for i, m in enumerate(self.members):
            out.append(f"(define-fun m{i} () Bool {m.smt()}) ; {m.vreg} in {m.cls}")
            names.append(f"m{i}")
        for i, d in enumerate(self.disjoint):
            out.append(f"(define-fun d{i} () Bool {d.smt()}) ; {d.kind} {d.a.label} {d.b.label} bb.{d.place.block} line {d.place.line}")
            names.append(f"d{i}")
        # SMT-LIB's `and` takes two or more arguments (cvc5 rejects a unary one).
        conj = "true" if not names else names[0] if len(names) == 1 else "(and " + " ".join(names) + ")"
        out.append(f"(assert (not {conj}))")
        out.append("(check-sat)")
        return "\n".join(out) + "\n"

    def run(self) -> list[Finding]:
        self.remat = self.rematerialised_vregs()
        self.collect_homes()
        self.remat |= self.moved_vregs()
        self.check_members()
        self.build_disjointness()
        failed = self.evaluate()
        split = sorted((v for v, h in self.homes.items() if len(h) > 1 or v in self.remat), key=_vkey)
        if split:
            self.notes.append(
                f"{len(split)} virtual register(s) live in several places (split, spilled, moved or "
                "rematerialised): their interference is checked by value flow, not here")
        self.stats.update({"variables": len(self.values), "member_constraints": len(self.members),
                           "disjoint_constraints": len(self.disjoint), "split_vregs": len(split)})
        python_ok = failed == 0
        self.query = self.smtlib()  # the text z3 decides is the text a certificate stores
        outcome = check_z3(self.query, timeout_s=self.timeout_s, seed=self.seed)
        self.stats["solver_seconds"] = round(outcome.seconds, 3)
        self.stats["solver_answer"] = outcome.answer.value
        place = Place(self.post.file, self.post.name, -1, -1, 0)
        if outcome.answer is Answer.UNKNOWN:
            self.findings.append(Finding("solver", LAYER, place, f"z3 could not decide the constraints: {outcome.reason}",
                                         severity="unknown"))
        elif (outcome.answer is Answer.UNSAT) != python_ok:
            self.findings.append(Finding(
                "solver", LAYER, place,
                f"internal disagreement: z3 answered {outcome.answer.value} but evaluation found "
                f"{'no violation' if python_ok else 'violations'}", severity="unknown"))
        return self.findings


def _copy_source(ins: Instruction) -> VReg | None:
    if ins.opcode != "COPY":
        return None
    regs = [op for op in ins.operands if op.kind == "reg" and not op.is_implicit]
    return regs[1].vreg if len(regs) == 2 else None


def _vkey(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def _var_key(var: str) -> tuple[int, int, str]:
    tail = var[2:]
    return (0, int(tail), "") if tail.isdigit() else (1, 0, tail)


def post_only_checks(fn: Function, target: Target, classes: dict[VReg, RegisterClass]) -> list[Finding]:
    """Checks that need no virtual program: every operand of the allocated program.

    Virtual registers left behind; registers that do not exist, lie outside the file or the
    budget, or are misaligned; allocated (renamable) operands in reserved registers; tied
    operands in different registers; early-clobber defs that overlap a use.
    """
    del classes
    limits = function_limits(fn, target)
    findings: list[Finding] = []
    budget_warned: dict[RegFile, Finding] = {}
    seen_v: set[VReg] = set()
    for b in fn.blocks:
        for idx, ins in enumerate(b.instructions):
            regs: list[tuple[Operand, PhysReg | None]] = []
            for op in ins.operands:
                if op.kind != "reg":
                    continue
                place = Place(fn.file, fn.name, b.number, idx, op.line, op.column)
                if op.vreg is not None:
                    if op.vreg not in seen_v:
                        seen_v.add(op.vreg)
                        findings.append(Finding("unallocated", LAYER, place,
                                                f"bb.{b.number} line {op.line}: virtual register %{op.vreg} was not allocated",
                                                vregs=(f"%{op.vreg}",)))
                    regs.append((op, None))
                    continue
                if op.phys is None:
                    regs.append((op, None))
                    continue
                reg = physreg_at(fn, op, op.phys)
                regs.append((op, reg))
                if reg.file not in _NUMBERED:
                    continue
                # Fixed registers of the ABI (not renamable) are only checked against the file.
                problem = register_problem(reg, None, target, limits if op.has("renamable") else UNLIMITED)
                if (problem is not None and problem[0] == "alignment" and reg.file is not RegFile.SGPR
                        and ins.opcode in MOVE_OPCODES):
                    # Generic opcodes (COPY expands register by register in copyPhysReg) have
                    # no alignment constraint, and LLVM makes odd ones. Spill pseudos do: the
                    # machine verifier says "Subtarget requires even aligned vector registers".
                    problem = None
                if problem is not None:
                    kind, why = problem
                    findings.append(Finding(kind, LAYER, place, f"bb.{b.number} line {op.line}: {why}",
                                            physregs=(f"${reg.name}",)))
                elif op.has("renamable") and reg.file not in budget_warned:
                    warn = budget_warning(reg, limits)
                    if warn is not None:
                        # One warning per register file says enough.
                        budget_warned[reg.file] = Finding(
                            "budget", LAYER, place, f"bb.{b.number} line {op.line}: {warn}",
                            physregs=(f"${reg.name}",), severity="warning")
            findings.extend(_tied_and_early_clobber(fn, b.number, idx, ins, regs))
    findings.extend(_vector_budget(fn, target, limits))
    findings.extend(budget_warned[f] for f in sorted(budget_warned, key=lambda x: x.value))
    return findings


def _tied_and_early_clobber(fn: Function, block: int, idx: int, ins: Instruction,
                            regs: list[tuple[Operand, PhysReg | None]]) -> list[Finding]:
    out: list[Finding] = []
    by_op = {id(op): reg for op, reg in regs}
    for op, reg in regs:
        if op.tied_def is None or reg is None:
            continue
        d = ins.operands[op.tied_def]
        dreg = by_op.get(id(d))
        if dreg is not None and dreg.units != reg.units:
            out.append(Finding("tied", LAYER, Place(fn.file, fn.name, block, idx, op.line, op.column),
                               f"bb.{block} line {op.line}: `{ins.opcode}` ties its def ${dreg.name} to this use, "
                               f"but the use is in ${reg.name}", physregs=(f"${dreg.name}", f"${reg.name}")))
    for d, dreg in regs:
        if dreg is None or not d.is_def or not d.has("early-clobber"):
            continue
        for u, ureg in regs:
            if ureg is None or u.is_def or u.tied_def is not None or u.has("undef") or u.is_implicit:
                continue
            # Without the virtual program the live lanes of a tuple use are unknown (LLVM may
            # reuse its dead lanes), and a two-address form reads its own def: the layer with
            # the virtual program checks those.
            if len(ureg.units) > 2 or ureg.units == dreg.units:
                continue
            if set(dreg.units) & set(ureg.units):
                out.append(Finding("early-clobber", LAYER, Place(fn.file, fn.name, block, idx, d.line, d.column),
                                   f"bb.{block} line {d.line}: early-clobber def ${dreg.name} overlaps the use "
                                   f"${ureg.name} of the same `{ins.opcode}`",
                                   physregs=(f"${dreg.name}", f"${ureg.name}")))
    return out


def _vector_budget(fn: Function, target: Target, budget: Limits) -> list[Finding]:
    """On unified register files VGPRs (rounded up to 4) and AGPRs share one budget."""
    if not target.unified_vgpr_file:
        return []
    top = {RegFile.VGPR: 0, RegFile.AGPR: 0}
    where: dict[RegFile, Place] = {}
    for b in fn.blocks:
        for idx, ins in enumerate(b.instructions):
            for op in ins.operands:
                if op.kind == "reg" and op.phys is not None and op.has("renamable"):
                    reg = physreg_at(fn, op, op.phys)
                    if reg.file in top:
                        end = reg.index + max(1, len(reg.units) // 2)
                        if end > top[reg.file]:
                            top[reg.file] = end
                            where[reg.file] = Place(fn.file, fn.name, b.number, idx, op.line, op.column)
    used = ((top[RegFile.VGPR] + 3) // 4 * 4 if top[RegFile.AGPR] else top[RegFile.VGPR]) + top[RegFile.AGPR]
    place = where.get(RegFile.AGPR) or where.get(RegFile.VGPR)
    if place is None:
        return []
    what = (f"the function uses {top[RegFile.VGPR]} VGPRs and {top[RegFile.AGPR]} AGPRs ({used} registers of the "
            f"unified file)")
    if used > budget.total_vector:
        return [Finding("bounds", LAYER, place, f"{what}, beyond the {budget.total_vector} {target.name} allows it")]
    if budget.hint is not None and used > budget.hint.total_vector:
        return [Finding("budget", LAYER, place, f"{what}, beyond the {budget.hint.total_vector} its attributes ask for",
                        severity="warning")]
    return []
