"""Layer 1: register constraints of an allocation, encoded in SMT and decided by z3.

Unknowns. Each virtual register that the allocation keeps in one place (its *home*) is a
variable `h_N`: the first 16-bit register unit of that home. Virtual registers that live in
several places (LLVM split or spilled them) get no variable; their homes are still checked for
class membership, and their interference is left to value flow (layer 2), which the verdict
says. Fixed physical registers of the virtual program are constants.

Constraints (docs/design.md section 2, layer 1), one object each (`verilocc.smt.formulas`), so
that the same set is both evaluated on the allocation (for findings with places) and printed as
SMT-LIB (the proof):
- `Member`: the home is a register of the virtual register's class on this target, inside the
  register file and the function's limits, and not reserved (class membership, tuple width and
  alignment, bounds, reserved registers: `verilocc.target.limits.register_problem`);
- `Disjoint`: one per fact of the interference relation (`verilocc.analysis.interference`, the
  relation every allocator uses too) between sides that have a home variable or are fixed:
  values that meet at a definition share no lane, except the copied lanes of a COPY at the
  identity position. The count follows the program's interference, not all pairs.
Tied operands and early-clobber defs of the allocated program itself, and registers that do
not exist, are checked on the physical program (`verilocc.smt.physical`).

The obligation is `assignment /\\ not (C1 /\\ ... /\\ Cn)`: unsat proves every constraint holds.
Findings come from evaluating each constraint on the assignment; the solver's answer must
agree with that evaluation, and any disagreement or timeout is an "unknown" finding.
"""

from __future__ import annotations

import functools
import threading

from verilocc.analysis.instructions import is_constant_def, is_pure
from verilocc.analysis.interference import FixedUnits, VirtualLanes, interferences
from verilocc.analysis.liveness import Liveness
from verilocc.analysis.operands import VReg, function_limits, physreg_at, resolve_operand, slot_mask
from verilocc.analysis.vector_operands import takes_file
from verilocc.analysis.wholewave import wwm_vregs
from verilocc.errors import TargetError
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction
from verilocc.pairing.alignment import FunctionAlignment, Role, instruction_key
from verilocc.pairing.homes import HomeUse, Rerun, collect_homes, make_register
from verilocc.smt.formulas import DISJOINT_DEF, ConstraintSide, Disjoint, Member
from verilocc.smt.solver import Answer, SolverOutcome, check_z3
from verilocc.target import PhysReg, RegFile, RegisterClass, Target, register_for_units, slots_to_mask
from verilocc.target.registers import is_defined
from verilocc.target.limits import NUMBERED_FILES, Limits, budget_warning, register_problem

LAYER = "constraints"
_PREFIX = {RegFile.SGPR: "sgpr", RegFile.VGPR: "vgpr", RegFile.AGPR: "agpr"}


@functools.lru_cache(maxsize=4096)
def allowed_first_units(cls: RegisterClass, target: Target, limits: Limits, wwm_value: bool = False) -> tuple[int, ...]:
    """First register units of the registers that can hold a value of the class (a
    whole-wave value when `wwm_value`)."""
    return tuple(sorted({m.units[0] for m in cls.members(target)
                         if register_problem(m, cls, target, limits, wwm_value) is None}))


_VECTOR_FILES = frozenset({RegFile.VGPR, RegFile.AGPR})


def av_classes(cls: RegisterClass, file: RegFile, target: Target) -> bool:
    """Whether a value of `cls` may sit in a register of `file` where its operands allow:
    on targets with AGPRs (AV classes), a vector class's value in either vector file
    (`analysis.vector_operands`)."""
    vector = {RegFile.VGPR, RegFile.AGPR}
    return target.has_agprs and file in vector and bool(cls.files & vector)


def av_twin(cls: RegisterClass, reg: PhysReg, target: Target) -> bool:
    """`reg` is a register LLVM's AV superclass of `cls` adds: in the vector file `cls` lacks
    (`av_classes`), at the place of a member of `cls` (`$agpr4_agpr5` for `$vgpr4_vgpr5`), as
    `ConstraintChecker.allowed_av` lists them."""
    if reg.file in cls.files or not av_classes(cls, reg.file, target):
        return False
    other = RegFile.VGPR if reg.file is RegFile.AGPR else RegFile.AGPR
    try:
        twin = make_register(other, reg.index, max(1, len(reg.units) // 2))
    except TargetError:
        return False
    return cls.contains(twin, target)


def units_name(units: tuple[int, ...]) -> str:
    """The registers covering `units` as LLVM names them (`$vcc`, `$sgpr4_sgpr5`, or a list of
    registers and 16-bit halves when no one register covers them)."""
    whole = register_for_units(units)
    if whole is not None and is_defined(whole):
        return f"${whole.name}"
    names: list[str] = []
    k = 0
    while k < len(units):
        pair = register_for_units(units[k:k + 2]) if k + 1 < len(units) and units[k] % 2 == 0 else None
        if pair is not None and is_defined(pair):
            names.append(f"${pair.name}")
            k += 2
            continue
        half = register_for_units(units[k:k + 1])
        names.append(f"${half.name}" if half is not None else f"unit {units[k]}")
        k += 1
    return ", ".join(names)


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
        self.wwm = wwm_vregs(pre)
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.stats: dict[str, object] = {}
        self.homes: dict[VReg, dict[str, HomeUse]] = {}
        self.rerun: list[Rerun] = []
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
        regs = ins.explicit_regs
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
                for op in qi.explicit_regs:
                    if op.phys is not None:
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
                live_vregs = live_at.get(idx, set())
                for touched_units in unit_sets:
                    for u in touched_units:
                        out.update(v for v in by_unit.get(u, ()) if v in live_vregs)
        return out

    def collect_homes(self) -> None:
        found = collect_homes(self.pre, self.post, self.alignment, self.classes, self.target)
        self.homes = found.homes
        self.rerun = found.rerun
        for v, text, phys, place in found.impossible:
            cls = self.classes[v]
            why = (f"no register of class {cls.name} has it as that subregister" if "." in text else
                   f"it has {len(phys.units) * 16} bits and class {cls.name} {cls.width_units * 16}")
            self.findings.append(Finding(
                "width", LAYER, place, f"bb.{place.block} line {place.line}: {text} is in ${phys.name}, but {why}",
                vregs=(f"%{v}",), physregs=(f"${phys.name}",)))

    # --- constraints ---------------------------------------------------------------------
    def allowed(self, cls: RegisterClass, wwm_value: bool = False) -> tuple[int, ...]:
        key = f"{cls.name}:{wwm_value}"  # (the cache of `allowed_first_units` hashes the target each time)
        got = self._allowed_cache.get(key)
        if got is None:
            got = self._allowed_cache[key] = allowed_first_units(cls, self.target, self.limits, wwm_value)
        return got

    def allowed_av(self, cls: RegisterClass, wwm_value: bool = False) -> tuple[int, ...]:
        """Allowed first units of `cls` widened to both vector files (see av_classes)."""
        key = f"av:{cls.name}:{wwm_value}"
        got = self._allowed_cache.get(key)
        if got is None:
            firsts = set(self.allowed(cls, wwm_value))
            for m in cls.members(self.target):
                if m.file not in (RegFile.VGPR, RegFile.AGPR):
                    continue
                other = RegFile.AGPR if m.file is RegFile.VGPR else RegFile.VGPR
                try:
                    twin = make_register(other, m.index, len(m.units) // 2)
                except TargetError:
                    continue
                if register_problem(twin, None, self.target, self.limits, wwm_value) is None:
                    firsts.add(twin.units[0])
            got = tuple(sorted(firsts))
            self._allowed_cache[key] = got
        return got

    def check_members(self) -> None:
        for v in sorted(self.homes, key=_vkey):
            cls = self.classes[v]
            wwm = v in self.wwm
            widened = False
            for name in sorted(self.homes[v]):
                use = self.homes[v][name]
                problem = register_problem(use.reg, cls, self.target, self.limits, wwm)
                if (problem is not None and problem[0] == "class" and use.refused is None
                        and av_twin(cls, use.reg, self.target)):
                    problem = register_problem(use.reg, None, self.target, self.limits, wwm)
                    widened = True
                if problem is not None:
                    kind, why = problem
                    place = use.place
                    if kind == "class" and use.refused is not None and use.refused[0] != use.place:
                        # Operands before it take the file (AV operands): the one that does not.
                        place = use.refused[0]
                        why += f"; `{use.refused[1]}` does not take {use.reg.file.value.upper()}s there"
                    self.findings.append(Finding(
                        kind, LAYER, place,
                        f"bb.{place.block} line {place.line}: %{v}:{cls.name} is assigned ${use.reg.name}: {why}",
                        vregs=(f"%{v}",), physregs=(f"${use.reg.name}",)))
                elif (warn := budget_warning(use.reg, self.limits)) is not None:
                    self.findings.append(Finding(
                        "budget", LAYER, use.place, f"bb.{use.place.block} line {use.place.line}: {warn}",
                        vregs=(f"%{v}",), physregs=(f"${use.reg.name}",), severity="warning"))
            if len(self.homes[v]) == 1 and v not in self.remat:
                (use,) = self.homes[v].values()
                var = f"h_{v}"
                self.values[var] = use.reg.units[0]
                allowed = self.allowed_av(cls, wwm) if widened else self.allowed(cls, wwm)
                self.members.append(Member(var, v, cls.name + (" (AV operand)" if widened else ""), allowed))

    def check_reruns(self) -> None:
        """The register files of the instructions that show no home (`Homes.rerun`:
        rematerialised copies and their ambiguous pairings). Such an instruction runs one of the
        virtual program's instructions of its key again, so each register it writes must be of
        a file the class of that instruction's virtual operand has (or of the other vector
        file, where the operand takes it). So must each register it reads in place of a
        vector operand, when it is a vector register: instructions of one key may read an SGPR
        where another read a VGPR, or a VGPR where another read an SGPR, which VALU sources
        allow, and which virtual instruction it runs again is a guess. Which value it computes,
        and in which lanes of which home, is value flow's to check."""
        for b, post_index, origins, _ in self.rerun:
            qi = self.post.block(b).instructions[post_index]
            for k, qo in enumerate(qi.operands):
                if qo.kind != "reg" or qo.phys is None or qo.is_implicit:
                    continue  # (implicit general registers are liveness notes: `is_liveness_note`)
                classes = [self.classes[v] for o in origins
                           if k < len(o.operands) and (v := o.operands[k].vreg) is not None]
                if not classes:
                    continue
                file = physreg_at(self.post, qo, qo.phys).file
                if file not in NUMBERED_FILES or any(file in c.files for c in classes):
                    continue
                if not qo.is_def and (file is RegFile.SGPR or not all(c.files <= _VECTOR_FILES for c in classes)):
                    continue  # a source of another file than a guessed origin's may be legal (VALU: SGPR or VGPR)
                if (any(av_classes(c, file, self.target) for c in classes)
                        and takes_file(qi, k, file, self.target.aligned_vgpr_tuples)):
                    continue
                place = Place(self.post.file, self.post.name, b, post_index, qo.line, qo.column)
                self.findings.append(Finding(
                    "class", LAYER, place,
                    f"bb.{b} line {place.line}: `{qi.opcode}`, run again for the virtual program's, "
                    f"{'writes' if qo.is_def else 'reads'} ${qo.phys}, but its virtual operand there is of class "
                    f"{classes[0].name}, which has no {file.value.upper()}s",
                    vregs=tuple(f"%{o.operands[k].vreg}" for o in origins[:1]), physregs=(f"${qo.phys}",)))

    def build_disjointness(self) -> None:
        """One `Disjoint` per interference fact between sides that have a variable or are
        fixed; a fact repeated (same sides and lanes) keeps its first place."""
        seen: set[tuple[object, ...]] = set()
        pre_blocks = {b.number: b for b in self.pre.blocks}
        unit_runs: dict[frozenset[int], list[tuple[int, int]]] = {}
        with_var = {v for v in self.homes if f"h_{v}" in self.values}
        made: dict[object, list[tuple[ConstraintSide, int]]] = {}  # the sides of fixed units
        virtual: dict[object, list[tuple[ConstraintSide, int]]] = {}  # (vreg, slots) -> the side of its variable
        places: dict[tuple[int, int], Place] = {}  # one per instruction

        def sides(side: VirtualLanes | FixedUnits) -> list[tuple[ConstraintSide, int]]:
            """The side of a home variable with its lanes, or a constant side per run of
            consecutive fixed units with its units."""
            if isinstance(side, VirtualLanes):
                key: object = (side.vreg, side.slots)
                got = virtual.get(key)
                if got is None:
                    got = virtual[key] = [(ConstraintSide(f"%{side.vreg}", var=f"h_{side.vreg}"), side.slots)]
                return got
            key = (side.units, side.reg)
            got = made.get(key)
            if got is not None:
                return got
            runs = unit_runs.get(side.units)
            if runs is None:
                runs = []
                for u in sorted(side.units):
                    if runs and runs[-1][0] + runs[-1][1] == u:
                        runs[-1] = (runs[-1][0], runs[-1][1] + 1)
                    else:
                        runs.append((u, 1))
                unit_runs[side.units] = runs
            label = f"${side.reg.name}" if side.reg is not None else None
            got = made[key] = [(ConstraintSide(label or units_name(tuple(range(s, s + n))), const=s), (1 << n) - 1)
                               for s, n in runs]
            return got

        disjoint = self.disjoint
        pre_file, pre_name = self.pre.file, self.pre.name
        # Facts with a side that has no variable make no constraint: `only` leaves them out.
        # (The loop is layer 1's hottest: a fact's sides are made once per register and lanes,
        # and a constraint is keyed by what it says: each side's variable or constant, its
        # lanes and the identity position.)
        for fact in interferences(self.pre, self.liveness, only=with_var):
            block, index, identity = fact.block, fact.index, fact.identity
            a_sides, b_sides = sides(fact.defined), sides(fact.other)
            # The identity position names units relative to a fixed side's lowest unit, which
            # is its only run when the relation gives one (a physical def).
            if identity is not None and (len(a_sides) != 1 or len(b_sides) != 1):
                identity = None
            place = None
            for sa, ma in a_sides:
                for sb, mb in b_sides:
                    key = (sa.var or sa.const, ma, sb.var or sb.const, mb, identity)
                    if key in seen:
                        continue
                    seen.add(key)
                    if place is None:
                        place = places.get((block, index))
                        if place is None:
                            ins = pre_blocks[block].instructions[index]
                            place = places[(block, index)] = Place(pre_file, pre_name, block, index, ins.line,
                                                                   ins.column)
                    disjoint.append(Disjoint(sa, ma, sb, mb, place, fact.kind, fact.def_op,
                                             fact.live_vreg, identity))

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
            ins = self.pre.block(b).instructions[c.place.index] if c.place.index >= 0 else None
            mask = next((op.text for op in ins.operands if op.kind == "regmask"), None) if ins is not None else None
            if c.a.var is None and mask is not None and ins is not None:
                overwrite = (f"the call `{ins.opcode}` clobbers {where} (its register mask `{mask}` does not "
                             "preserve it)")
            else:
                overwrite = f"{c.def_text} is defined in {where} and overwrites it"
            msg = (f"at bb.{b} line {place.line}, {other}{lanes} (in {other_where}) is still live"
                   + (f" (read at line {read_at})" if read_at else "") + f" when {overwrite}")
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
        return units_name(tuple(first_unit + i for i in range(mask.bit_length()) if mask >> i & 1))

    @staticmethod
    def _name_units(reg: PhysReg, base: int, mask: int) -> str:
        if base == 0 and mask == (1 << len(reg.units)) - 1:
            return reg.name
        lanes = [base + i for i in range(mask.bit_length()) if mask >> i & 1]
        if reg.file in NUMBERED_FILES and lanes[0] % 2 == 0 and len(lanes) % 2 == 0:
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

    def smtlib(self, disjoint: bool = True) -> str:
        """The proof obligation: the assignment and the negated conjunction of all constraints
        (`disjoint=False`: of the memberships only, a weaker obligation that the full one implies)."""
        out = ["(set-logic QF_LIA)"]
        # The assignment as definitions, not asserted equalities: the same formula, and every
        # constraint becomes ground, which solvers (cvc5 re-checking a certificate) decide by
        # rewriting instead of by substitution.
        for var in sorted(self.values, key=_var_key):
            out.append(f"(define-fun {var} () Int {self.values[var]})")
        if self.disjoint and disjoint:
            out.append(DISJOINT_DEF)
        # The constraints inline, one per line: naming each with a definition of its own
        # triples the time solvers take to read the text. A membership says what it is in a
        # comment; the disjointness facts, tens of thousands on a large kernel, say nothing
        # more than their two variables (`h_N` is %N).
        lines = [f"  {m.smt()} ; {m.vreg} in {m.cls}" for m in self.members]
        lines += [f"  {d.smt()}" for d in self.disjoint] if disjoint else []
        if not lines:
            out.append("(assert (not true))")
        else:
            # SMT-LIB's `and` takes two or more arguments (cvc5 rejects a unary one).
            out.append("(assert (not (and" if len(lines) > 1 else "(assert (not")
            out += lines
            out.append(")))" if len(lines) > 1 else "))")
        out.append("(check-sat)")
        return "\n".join(out) + "\n"

    def run(self) -> list[Finding]:
        self.start()
        return self.finish()

    def start(self) -> None:
        """Build and evaluate the constraints, and have z3 decide them in a thread of its own
        (z3 holds no Python lock while it parses and solves, so the other layers run
        meanwhile); `finish` waits for its answer."""
        self.remat = self.rematerialised_vregs()
        self.collect_homes()
        self.remat |= self.moved_vregs()
        self.check_members()
        self.check_reruns()
        self.build_disjointness()
        failed = self.evaluate()
        split = sorted((v for v, h in self.homes.items() if len(h) > 1 or v in self.remat), key=_vkey)
        if split:
            self.notes.append(
                f"{len(split)} virtual register(s) live in several places (split, spilled, moved or "
                "rematerialised): their interference is checked by value flow, not here")
        self.stats.update({"variables": len(self.values), "member_constraints": len(self.members),
                           "disjoint_constraints": len(self.disjoint), "split_vregs": len(split)})
        self._python_ok = failed == 0
        self.query = self.smtlib()  # the text z3 decides is the text a certificate stores
        self._answer: list[SolverOutcome | BaseException] = []
        self._deciding = threading.Thread(target=self._decide, args=(self.query,), daemon=True)
        self._deciding.start()

    def _decide(self, query: str) -> None:
        try:
            self._answer.append(check_z3(query, timeout_s=self.timeout_s, seed=self.seed))
        except BaseException as e:  # noqa: BLE001 - raised again by `finish`, in the caller's thread
            self._answer.append(e)

    def finish(self) -> list[Finding]:
        """z3's answer (`start`) checked against the evaluation; the layer's findings."""
        self._deciding.join()
        (outcome,) = self._answer
        if isinstance(outcome, BaseException):
            raise outcome
        python_ok = self._python_ok
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


def _vkey(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def _var_key(var: str) -> tuple[int, int, str]:
    tail = var[2:]
    return (0, int(tail), "") if tail.isdigit() else (1, 0, tail)
