"""A reference register allocator: simple enough to be obviously correct.

It allocates the programs of `verilocc.fuzz.generate` (one function, virtual registers of
VGPR, SGPR and AGPR classes) without splitting or coalescing:

1. Liveness of whole virtual registers (and of the physical input registers the program
   reads) by the textbook backward dataflow over the CFG; a subregister def without `undef`
   reads the register it updates.
2. Interference by Chaitin's rule: a def interferes with everything live after its
   instruction, with the other defs of the instruction, and (early-clobber) with its uses.
3. Greedy colouring, unspillable and widest registers first: each virtual register gets
   one physical register of its file and width, aligned as the target requires (even
   VGPR/AGPR tuples on gfx90a/gfx942/gfx950; SGPR pairs even, wider SGPR tuples 4-aligned),
   inside a register budget, avoiding reserved registers ($sgpr32 the stack pointer, the
   private segment buffer $sgpr0-3 where the target has one: `Profile.reserved_sgprs`) and
   overlapping no interfering register.
4. A VGPR or SGPR register of up to 128 bits (any register live across a call) that does not fit (colouring keeps
   `SPILL_RESERVE` registers per file free) is spilled everywhere: it lives in a stack slot,
   each instruction that reads it is preceded by an `SI_SPILL_*_RESTORE` into a temporary
   that is free at that instruction, and each instruction that writes it is followed by an
   `SI_SPILL_*_SAVE`. When something does not fit anyway, that file's budget grows and
   allocation restarts, up to the target's register file (`Profile.registers`: 104 SGPRs on
   gfx6/gfx7); beyond it the program is not allocated (AllocationError).
5. Calls: a virtual register live across a call (live after it and not one of its results)
   gets only registers the call's mask preserves (`isa.preserved_units`, the SGPRs every LLVM
   from 15 to 22 preserves), or is spilled (AGPRs too, which gfx908's calls clobber). A value
   that is dead at the call by the CFG (the result copied out of `$vgpr0` in a waterfall
   loop, the pointer after its IMPLICIT_DEF) may sit in a clobbered register: the callee only
   writes the lanes active at the call, and those lanes of the value are dead. This is
   LLVM's own reasoning, which the interpreter checks lane by lane.

`permute` renames the registers of an allocated program consistently (keeping tuple
alignment and the input registers) to give another correct allocation.

Nothing here is shared with the verifier: register files, widths and alignment are computed
from class and register names.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from verilocc.fuzz.isa import UnmodelledConstruct, class_dwords, physical_units, preserved_units, subreg_lanes
from verilocc.fuzz.profiles import PROFILES, Profile
from verilocc.fuzz.render import SpillSlot, ir_document, post_ra_header, render_body
from verilocc.mir.model import Function, Instruction, Module, Operand
from verilocc.mir.parser import parse_module
from verilocc.mir.printer import print_instruction

Item = object  # a virtual register id (int/str) or a physical 32-bit register name ("sgpr6")
Unit = tuple[str, int]  # ("v", 4) is $vgpr4
_PREFIX = {"v": "vgpr", "s": "sgpr", "a": "agpr"}
_NUMBERED = re.compile(r"(vgpr|sgpr|agpr)(\d+)$")


# Registers of each file that colouring leaves free at the top of the budget, for the
# temporaries of spill code (an instruction reads at most a few spilled values).
SPILL_RESERVE = 4


class AllocationError(Exception):
    """The program has a construct this allocator does not handle."""


class _NeedMore(Exception):
    """The budget of a register file is too small; the caller retries with a larger one."""

    def __init__(self, file: str, what: str) -> None:
        super().__init__(what)
        self.file = file


@dataclass(frozen=True)
class Budget:
    vgprs: int = 32
    sgprs: int = 32
    agprs: int = 32

    def grow(self, file: str, limit: int) -> Budget:
        """Eight more registers of `file`, at most `limit` (the target's file)."""
        return replace(self, **{_PREFIX[file] + "s": min(self.size(file) + 8, limit)})

    def size(self, file: str) -> int:
        return int(getattr(self, _PREFIX[file] + "s"))


@dataclass
class Allocation:
    text: str
    assignment: dict[object, str]  # virtual register -> physical register name
    spilled: dict[object, int]  # virtual register -> stack slot
    budget: Budget
    attempts: int = 1
    notes: list[str] = field(default_factory=list)


def class_file(cls: str) -> str:
    if cls.startswith(("vgpr", "vreg")):
        return "v"
    if cls.startswith(("sgpr", "sreg")):
        return "s"
    if cls.startswith(("agpr", "areg")):
        return "a"
    raise AllocationError(f"register class {cls}")


def alignment(file: str, n: int, prof: Profile) -> int:
    if file == "s":
        return 1 if n == 1 else 2 if n == 2 else 4
    return 2 if prof.aligned and n >= 2 else 1


def reg_name(file: str, start: int, n: int) -> str:
    return "_".join(f"{_PREFIX[file]}{k}" for k in range(start, start + n))


def _units_of_phys(name: str) -> list[Unit] | None:
    """Numbered 32-bit registers of a physical register, or None for special registers."""
    try:
        parts = physical_units(name)
    except UnmodelledConstruct:
        return None
    out = []
    for p in parts:
        m = _NUMBERED.match(p)
        if not m:
            return None
        out.append((m.group(1)[0], int(m.group(2))))
    return out


# --------------------------------------------------------------------------------------------
# Liveness and interference
# --------------------------------------------------------------------------------------------
@dataclass
class _Ins:
    block: int  # index in fn.blocks
    ins: Instruction
    uses: set[Item]
    defs: set[Item]
    kills: set[Item]  # items whose whole old value dies here (full defs)
    early: set[Item]  # early-clobber defs
    preserved: frozenset[str] | None = None  # a call: the 32-bit registers its mask preserves


class _Analysis:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.width: dict[object, int] = {}
        self.file: dict[object, str] = {}
        for vid, decl in fn.registers.items():
            if not decl.reg_class:
                raise AllocationError(f"%{vid} has no class")
            self.file[vid] = class_file(decl.reg_class)
            self.width[vid] = class_dwords(decl.reg_class)
        self.blocks: list[list[_Ins]] = []
        for bi, b in enumerate(fn.blocks):
            rows = []
            for ins in b.instructions:
                rows.append(self._row(bi, ins))
            self.blocks.append(rows)
        number = {b.number: i for i, b in enumerate(fn.blocks)}
        self.succs: list[list[int]] = []
        for i, b in enumerate(fn.blocks):
            ss = [number[n] for n, _ in b.successors]
            if not ss and b.instructions and not _ends(b.instructions[-1]) and i + 1 < len(fn.blocks):
                ss = [i + 1]  # fall through
            self.succs.append(ss)
        self._liveness()

    def _row(self, bi: int, ins: Instruction) -> _Ins:
        uses: set[Item] = set()
        defs: set[Item] = set()
        kills: set[Item] = set()
        early: set[Item] = set()
        for op in ins.operands:
            if op.kind != "reg" or op.is_noreg:
                continue
            if op.vreg is not None:
                if op.vreg not in self.width:
                    raise AllocationError(f"%{op.vreg} is not declared")
                if op.is_def:
                    defs.add(op.vreg)
                    if op.subreg is None or op.has("undef"):
                        kills.add(op.vreg)
                    else:
                        uses.add(op.vreg)  # a subregister def updates the register
                    if op.has("early-clobber"):
                        early.add(op.vreg)
                elif not op.has("undef"):
                    uses.add(op.vreg)
                continue
            units = _units_of_phys(op.phys or "")
            if units is None:
                continue  # $scc, $vcc, $exec...: never allocated here
            names = {reg_name(f, k, 1) for f, k in units}
            if op.is_def:
                defs |= names
                kills |= names
            elif not op.has("undef"):
                uses |= names
        mask = next((op.text for op in ins.operands if op.kind == "regmask"), None)
        preserved = preserved_units(mask) if mask is not None else None
        return _Ins(bi, ins, uses, defs, kills, early, preserved)

    def _liveness(self) -> None:
        n = len(self.blocks)
        self.live_in: list[set[Item]] = [set() for _ in range(n)]
        self.live_out: list[set[Item]] = [set() for _ in range(n)]
        changed = True
        while changed:
            changed = False
            for bi in reversed(range(n)):
                out: set[Item] = set()
                for s in self.succs[bi]:
                    out |= self.live_in[s]
                live = set(out)
                for row in reversed(self.blocks[bi]):
                    live -= row.kills
                    live |= row.uses
                if out != self.live_out[bi] or live != self.live_in[bi]:
                    self.live_out[bi], self.live_in[bi] = out, live
                    changed = True
        self.before: dict[int, set[Item]] = {}
        self.after: dict[int, set[Item]] = {}
        for bi in range(n):
            live = set(self.live_out[bi])
            for row in reversed(self.blocks[bi]):
                self.after[id(row)] = set(live)
                live -= row.kills
                live |= row.uses
                self.before[id(row)] = set(live)
        undefined = [x for x in self.live_in[0] if not isinstance(x, str)]
        if undefined:
            raise AllocationError(f"virtual registers read before any def: {sorted(map(str, undefined))}")

    def rows(self) -> Iterable[_Ins]:
        for rows in self.blocks:
            yield from rows

    def interference(self) -> dict[Item, set[Item]]:
        edges: dict[Item, set[Item]] = {}

        def add(a: Item, b: Item) -> None:
            if a != b:
                edges.setdefault(a, set()).add(b)
                edges.setdefault(b, set()).add(a)

        for row in self.rows():
            after = self.after[id(row)]
            for d in row.defs:
                for x in after:
                    add(d, x)
                for d2 in row.defs:
                    add(d, d2)
            for d in row.early:
                for u in row.uses:
                    add(d, u)
        return edges


def _ends(ins: Instruction) -> bool:
    return ins.opcode in ("S_BRANCH", "S_ENDPGM", "SI_RETURN", "S_SETPC_B64_return")


# --------------------------------------------------------------------------------------------
# Allocation
# --------------------------------------------------------------------------------------------
class _Allocator:
    def __init__(self, fn: Function, prof: Profile, budget: Budget, rng: random.Random, spill: bool) -> None:
        self.fn = fn
        self.prof = prof
        self.budget = budget
        self.rng = rng
        self.allow_spill = spill
        self.a = _Analysis(fn)
        self.reserved: set[Unit] = {("s", 32)} | {("s", k) for k in prof.reserved_sgprs}
        self.color: dict[Item, Unit] = {}  # item -> first unit
        # Virtual registers live across a call -> the registers every call they cross preserves.
        self.across: dict[object, frozenset[str]] = {}
        for row in self.a.rows():
            if row.preserved is None:
                continue
            for x in self.a.after[id(row)] - row.defs:
                if not isinstance(x, str):
                    self.across[x] = self.across.get(x, row.preserved) & row.preserved
        self.spilled: dict[object, int] = {}
        for it in self._all_items():
            if isinstance(it, str):
                m = _NUMBERED.match(it)
                assert m
                self.color[it] = (m.group(1)[0], int(m.group(2)))

    def _all_items(self) -> set[Item]:
        items: set[Item] = set()
        for row in self.a.rows():
            items |= row.uses | row.defs
        return items

    def units(self, item: Item, first: Unit | None = None) -> list[Unit]:
        f, k = first if first is not None else self.color[item]
        n = 1 if isinstance(item, str) else self.a.width[item]
        return [(f, k + j) for j in range(n)]

    def candidates(self, file: str, n: int, top: int) -> list[int]:
        al = alignment(file, n, self.prof)
        return [k for k in range(0, top - n + 1, al)
                if not any((file, k + j) in self.reserved for j in range(n))]

    def pick(self, file: str, n: int, taken: set[Unit], keep: int = 0,
             preserved: frozenset[str] | None = None) -> int | None:
        """A free register; `keep` registers at the top of the budget stay free (for spill
        temporaries, so that spilling, not growing the budget, answers pressure); `preserved`:
        only registers among these (a value live across calls)."""
        top = self.budget.size(file) - keep
        free = [k for k in self.candidates(file, n, top) if not any((file, k + j) in taken for j in range(n))
                and (preserved is None or all(f"{_PREFIX[file]}{k + j}" in preserved for j in range(n)))]
        if not free:
            return None
        return free[0] if self.rng.random() < 0.6 else self.rng.choice(free)

    def spillable(self, v: object) -> bool:
        crosses = v in self.across  # may not fit in the registers calls preserve (8-wide stripes)
        if not self.allow_spill or (not crosses and (self.a.file[v] == "a" or self.a.width[v] > 4)):
            return False
        for row in self.a.rows():
            for op in row.ins.operands:
                if op.kind == "reg" and op.vreg == v and op.is_def and (op.has("undef") or row.ins.opcode == "IMPLICIT_DEF"):
                    return False
        return True

    def colour(self) -> None:
        edges = self.a.interference()
        vregs = sorted((x for x in self._all_items() if not isinstance(x, str)), key=str)
        self.rng.shuffle(vregs)
        # Registers that cannot be spilled first, then the widest: what is left over spills.
        can_spill = {v: self.spillable(v) for v in vregs}
        vregs.sort(key=lambda v: (can_spill[v], -self.a.width[v]))
        for v in vregs:
            taken: set[Unit] = set()
            for w in edges.get(v, ()):
                if w in self.color:
                    taken.update(self.units(w))
            keep = SPILL_RESERVE if self.allow_spill and (self.a.file[v] in "vs" or self.across) else 0
            k = self.pick(self.a.file[v], self.a.width[v], taken, keep, self.across.get(v))
            if k is None:
                if can_spill[v]:
                    self.spilled[v] = len(self.spilled)
                    continue
                raise _NeedMore(self.a.file[v], f"%{v}")
            self.color[v] = (self.a.file[v], k)

    # -- rewriting ---------------------------------------------------------------------------
    def occupied(self, items: Iterable[Item]) -> set[Unit]:
        out: set[Unit] = set()
        for x in items:
            if x in self.color:
                out.update(self.units(x))
        return out

    def temps(self, row: _Ins) -> dict[object, Unit]:
        """A register per spilled virtual register touched by the instruction."""
        before = self.occupied(self.a.before[id(row)])
        after = self.occupied(self.a.after[id(row)]) | self.occupied(row.defs)
        early_regs = self.occupied(row.early)
        use_regs = self.occupied(row.uses)
        out: dict[object, Unit] = {}
        reload_taken: set[Unit] = set()
        def_taken: set[Unit] = set()
        spilled_uses = sorted((v for v in row.uses if v in self.spilled), key=str)
        spilled_defs = sorted((v for v in row.defs if v in self.spilled and v not in row.uses), key=str)

        def take(v: object, taken: set[Unit]) -> list[Unit]:
            f, n = self.a.file[v], self.a.width[v]
            k = self.pick(f, n, taken)
            if k is None:
                raise _NeedMore(f, f"no temporary for %{v}")
            out[v] = (f, k)
            return [(f, k + j) for j in range(n)]

        for v in spilled_uses:
            taken = before | reload_taken | early_regs
            if v in row.defs:  # read and written: one temporary, which must also survive the def
                taken |= after | def_taken
            regs = take(v, taken)
            reload_taken.update(regs)
            if v in row.defs:
                def_taken.update(regs)
        for v in spilled_defs:
            taken = after | def_taken
            if v in row.early:
                taken |= use_regs | reload_taken
            def_taken.update(take(v, taken))
        return out

    def phys_of(self, op: Operand, temps: dict[object, Unit]) -> str:
        first = temps.get(op.vreg) or self.color[op.vreg]
        f, k = first
        n = self.a.width[op.vreg]
        if op.subreg:
            lanes = subreg_lanes(op.subreg)
            if lanes[-1] >= n:
                raise AllocationError(f"%{op.vreg}.{op.subreg} is outside its class")
            return reg_name(f, k + lanes[0], len(lanes))
        return reg_name(f, k, n)

    def spill_code(self, v: object, temp: Unit, save: bool) -> str:
        f, n = self.a.file[v], self.a.width[v]
        slot = self.spilled[v]
        reg = reg_name(temp[0], temp[1], n)
        kind = "V" if f == "v" else "S" if f == "s" else "A"
        bits = 32 * n
        align = ", align 4" if n > 1 else ""
        if save:
            mem = f"(store (s{bits}) into %stack.{slot}{align}, addrspace 5)"
            if f == "s":
                return f"SI_SPILL_S{bits}_SAVE ${reg}, %stack.{slot}, implicit $exec, implicit $sgpr32 :: {mem}"
            return f"SI_SPILL_{kind}{bits}_SAVE ${reg}, %stack.{slot}, $sgpr32, 0, implicit $exec :: {mem}"
        mem = f"(load (s{bits}) from %stack.{slot}{align}, addrspace 5)"
        if f == "s":
            return f"renamable ${reg} = SI_SPILL_S{bits}_RESTORE %stack.{slot}, implicit $exec, implicit $sgpr32 :: {mem}"
        return f"renamable ${reg} = SI_SPILL_{kind}{bits}_RESTORE %stack.{slot}, $sgpr32, 0, implicit $exec :: {mem}"

    def rewrite(self, row: _Ins) -> list[str]:
        ins = row.ins
        if ins.opcode == "KILL" and any(op.vreg in self.spilled for op in ins.operands if op.kind == "reg"):
            return []  # nothing to keep alive in a register
        temps = self.temps(row) if any(v in self.spilled for v in row.uses | row.defs) else {}
        out = []
        for v in sorted((v for v in row.uses if v in self.spilled), key=str):
            out.append(self.spill_code(v, temps[v], save=False))
        post = _physical(ins, lambda op: self.phys_of(op, temps))
        copy = ins.opcode == "COPY" and len(ins.operands) == 2 and all(o.kind == "reg" for o in ins.operands)
        if not (copy and post.operands[0].register_text == post.operands[1].register_text):
            out.append(print_instruction(post))  # not an identity copy, which the allocator deletes
        dead = {op.vreg for op in ins.operands if op.kind == "reg" and op.is_def and op.has("dead")}
        for v in sorted((v for v in row.defs if v in self.spilled and v not in dead), key=str):
            out.append(self.spill_code(v, temps[v], save=True))
        return out

    def block_liveins(self, bi: int) -> list[str]:
        if bi == 0:
            return [f"${r}" for r, _ in self.fn.liveins]
        names = set()
        for x in self.a.live_in[bi]:
            if x in self.color:
                f, k = self.color[x]
                names.add((f, k, 1 if isinstance(x, str) else self.a.width[x]))
        return [f"${reg_name(f, k, n)}" for f, k, n in sorted(names)]


# Flags an allocated operand keeps; `internal` and `debug-use` are not written post-RA here.
_POST_RA_FLAGS = frozenset({"implicit", "implicit-def", "def", "dead", "killed", "undef", "early-clobber", "renamable"})


def _physical(ins: Instruction, phys_of: Callable[[Operand], str]) -> Instruction:
    """The instruction with its virtual operands replaced by `renamable` physical ones (without
    class, type or tie, and without the `killed` or def `undef` flags of the virtual register)."""
    operands: list[Operand] = []
    for op in ins.operands:
        if op.kind == "reg":
            flags = op.flags & _POST_RA_FLAGS
            if op.vreg is not None:
                flags = (flags - {"killed", "undef"} if op.is_def else flags - {"killed"}) | {"renamable"}
                op = replace(op, vreg=None, phys=phys_of(op), subreg=None)
            op = replace(op, flags=flags, reg_class=None, llt=None, tied_def=None)
        operands.append(op)
    return replace(ins, operands=operands)


# --------------------------------------------------------------------------------------------
# Whole function
# --------------------------------------------------------------------------------------------
def profile_of(fn: Function, target: str | None = None) -> Profile:
    name = target or fn.target_cpu
    if name not in PROFILES:
        raise AllocationError(f"target {name!r} is not one of {sorted(PROFILES)}")
    return PROFILES[name]


def allocate(pre: str | Module, rng: random.Random | None = None, budget: Budget | None = None,
             spill: bool = True, target: str | None = None, max_attempts: int = 40) -> Allocation:
    """Allocate the (single) function of a pre-RA program; returns the post-RA text."""
    module = parse_module(pre, "<pre>") if isinstance(pre, str) else pre
    if len(module.functions) != 1:
        raise AllocationError("one function per program")
    fn = module.functions[0]
    prof = profile_of(fn, target)
    rng = rng or random.Random(0)
    budget = budget or Budget()
    state = rng.getstate()
    for attempt in range(1, max_attempts + 1):
        rng.setstate(state)
        try:
            al = _Allocator(fn, prof, budget, rng, spill)
            al.colour()
            body = []
            for bi, b in enumerate(fn.blocks):
                lines: list[str] = []
                for row in al.a.blocks[bi]:
                    lines.extend(al.rewrite(row))
                body.append((b.number, [n for n, _ in b.successors], al.block_liveins(bi), lines))
        except _NeedMore as e:
            limit = prof.registers(e.file)
            if budget.size(e.file) >= limit:
                raise AllocationError(f"{e}: more than the {limit} {_PREFIX[e.file].upper()}s of {prof.name}") from None
            budget = budget.grow(e.file, limit)
            continue
        slots: list[SpillSlot] = []
        for v, sid in sorted(al.spilled.items(), key=lambda x: x[1]):
            slots.append((sid, 4 * al.a.width[v], "sgpr-spill" if al.a.file[v] == "s" else "default"))

        ir = ir_document(module.ir_text) if module.ir_text is not None else ""
        text = ir + "---\n" + post_ra_header(fn.header_text, slots) + "\n" + render_body(body)
        assignment = {v: reg_name(f, k, al.a.width[v]) for v, (f, k) in al.color.items() if not isinstance(v, str)}
        return Allocation(text, assignment, dict(al.spilled), budget, attempt)
    raise AllocationError(f"no allocation within {max_attempts} budget increases")


# --------------------------------------------------------------------------------------------
# Renaming an allocation
# --------------------------------------------------------------------------------------------
_REG_TOKEN = re.compile(r"\$((?:vgpr|sgpr|agpr)\d+(?:_(?:vgpr|sgpr|agpr)\d+)*)\b")


def permute(post_text: str, rng: random.Random, tuples: Iterable[str] | None = None,
            top: dict[str, int] | None = None, misalign: bool = False) -> str:
    """Rename the registers of an allocated program consistently: another correct allocation.

    Registers are grouped into clusters of overlapping tuples; each cluster moves as a whole
    by an offset that keeps every tuple's alignment (4 for SGPRs, 2 for VGPR/AGPR tuples on
    gfx90a/gfx942) to a place no other cluster uses. Input registers, $sgpr32 and the
    registers the reference allocator reserves stay where they are. `top` bounds each file
    (default: what the program uses, at least 32 VGPRs/AGPRs and 32 SGPRs).

    A tuple the text only names piece by piece (`$sgpr28`, `$sgpr29`... of an sgpr_256) is
    invisible here: pass the allocation's registers as `tuples` (`Allocation.assignment`
    values). Without them, adjacent registers are kept together, which is always safe.

    With `misalign`, VGPR/AGPR clusters holding a tuple move by an odd offset instead: the
    values still flow right, but on gfx90a/gfx942 such tuples do not exist in hardware, so
    this is a wrong allocation (the text is returned unchanged when nothing can move).

    Around calls, the registers a call names (its arguments, results and return address) stay,
    and a register its mask preserves only moves to one it preserves too.
    """
    head, sep, body = post_text.partition("\nbody:")
    if not sep:
        return post_text
    cpu = re.search(r'"target-cpu"="(gfx\w+)"', post_text)
    prof = PROFILES.get(cpu.group(1) if cpu else "", PROFILES["gfx90a"])
    fixed_names = set(re.findall(r"reg: '\$([\w]+)'", head.split("frameInfo:")[0]))
    ranges: dict[str, list[tuple[int, int]]] = {"v": [], "s": [], "a": []}
    fixed: dict[str, set[int]] = {"v": set(), "s": {32, *prof.reserved_sgprs}, "a": set()}
    kept: set[str] | None = None  # registers every call preserves
    for line in body.split("\n"):
        if "SI_CALL" not in line:
            continue
        mask = re.search(r"\b(csr_\w+|CustomRegMask\([^)]*\))", line)
        got = (preserved_units(mask.group(1)) if mask else None) or frozenset()
        kept = set(got) if kept is None else kept & got
        call_regs = re.findall(r"\$((?:vgpr|sgpr|agpr)\d+(?:_(?:vgpr|sgpr|agpr)\d+)*)\b", line)
        callee = re.search(r"SI_CALL\w* (?:killed |renamable )*\$(\w+)", line)
        for name in call_regs:
            if callee and name == callee.group(1):
                continue  # the callee's address is an ordinary value
            fixed_names.add(name)
    for name in set(_REG_TOKEN.findall(body)) | fixed_names | {t.lstrip("$") for t in tuples or ()}:
        units = _units_of_phys(name)
        if not units:
            continue
        f = units[0][0]
        ranges[f].append((units[0][1], units[-1][1]))
        if name in fixed_names:
            fixed[f].update(k for _, k in units)
    mapping: dict[str, dict[int, int]] = {}
    for f, rs in ranges.items():
        if not rs:
            continue
        clusters = _clusters(rs, adjacent=tuples is None)
        used_top = max(hi for _, hi in rs) + 1
        limit = max(used_top, (top or {}).get(f, 32))
        step = 4 if f == "s" else 2 if prof.aligned else 1
        odd = misalign and f in "va" and prof.aligned
        if odd:
            step = 1
        occupied = set(fixed[f])
        moves: dict[int, int] = {}
        movable = []
        for lo, hi in clusters:
            if any(k in fixed[f] for k in range(lo, hi + 1)):
                occupied.update(range(lo, hi + 1))
                moves[lo] = 0
            else:
                movable.append((lo, hi))
        rng.shuffle(movable)
        for lo, hi in movable:
            size = hi - lo + 1
            starts = [s for s in range(lo % step, limit - size + 1, step)
                      if not any(k in occupied for k in range(s, s + size))
                      and (kept is None or all(f"{_PREFIX[f]}{k - lo + s}" in kept
                                               for k in range(lo, hi + 1) if f"{_PREFIX[f]}{k}" in kept))]
            if odd:  # tuples to odd places, single registers anywhere
                tuple_here = any(a >= lo and b <= hi and b > a for a, b in rs)
                starts = [s for s in starts if (s - lo) % 2 == 1] if tuple_here else starts
            s = rng.choice(starts) if starts else lo
            if not starts and any(k in occupied for k in range(lo, lo + size)):
                return post_text  # no room to move: keep the allocation as it is
            occupied.update(range(s, s + size))
            moves[lo] = s - lo
        m: dict[int, int] = {}
        for lo, hi in clusters:
            for k in range(lo, hi + 1):
                m[k] = k + moves[lo]
        mapping[f] = m

    def rename(match: re.Match[str]) -> str:
        units = _units_of_phys(match.group(1))
        if not units:
            return match.group(0)
        f = units[0][0]
        first = mapping.get(f, {}).get(units[0][1], units[0][1])
        return "$" + reg_name(f, first, len(units))

    return head + sep + _REG_TOKEN.sub(rename, body)


def _clusters(ranges: list[tuple[int, int]], adjacent: bool) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + (1 if adjacent else 0):
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
