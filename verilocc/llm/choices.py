"""The decision a model makes for one virtual register, relative to the allocation so far.

This is the cross-architecture normalisation of the model loop: the static analysis states the
allocation problem (`verilocc.llm.problem`: per virtual register its class, the registers that
class, tuple alignment, budget and reservations allow, and the one interference relation of
`verilocc.analysis.interference`), and for each virtual register in program order, given the
registers chosen for the ones before it, computes which registers are still free for it. The
model never names a register: it picks one of at most `SLOTS` listed choices, each described by
what an allocator sees in it, followed by the register's file (`v`, `a`, `s`, `x` for special
registers such as VCC):

    =  the register of a COPY partner: the copy becomes an identity and is deleted
    d  the register of a value that dies where this one is defined: reuse
    f  a free register below the high-water mark of its file: no new register
    n  a free register that raises the high-water mark: one more register in use
    !  a register a verifier counterexample ruled out for this value (never the answer)

Listed in that order: up to two copy partners' registers, the lowest free registers in the
class's allocation order, and up to two registers of dying values not among them; each register
once, every one free (a dying value's register may also be among the lowest: it is marked `d`
and takes no second slot), so a line lists `SLOTS` choices or all the free registers of its
tier. One more where program order is not the better first fit: when placing the widest tuples
first reaches more waves (`occupancy_caps`), that fit's register for the line is listed last (in
place of the highest of the lowest free, and with its kind as above) while every vector register
chosen before is that fit's (`State.on_fit`), so that the fit's waves stay reachable by listed
choices; a program-order first fit's registers always are, as the lowest free.

Free means that no interference fact with a register already chosen, no fixed physical register
and no COPY rule forbids it: exactly `AllocationProblem.allowed`, recomputed with integer bit
sets over the registers' first 16-bit units (`ChoiceTables`; `tests/test_model.py` compares
both). Registers come from the first budget tier that still has a free, unbanned one: within
the registers a first-fit allocation uses (`problem.tight`: the better of program order and
widest tuples first, `occupancy_caps`), then within the occupancy that reaches
(`problem.caps`), then the function's budget (`--over-budget`: the target's hard limits). A value whose class has no free
register anywhere gets an empty list: the function needs spilling (or other earlier choices),
which an assignment cannot express.

So a choice the model picks from the list satisfies layer 1 of the verifier against the choices
before it; what the model decides is which one (copies deleted, registers reused, registers and
waves used), and whether it writes a listed choice at all. The same decisions describe the same
allocation on gfx9 (aligned tuples, AGPRs, wave64) and gfx10+ (wave32) wherever the constraints
agree, because nothing in them names a register.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from verilocc.analysis.operands import VReg
from verilocc.llm.problem import AllocationProblem, within
from verilocc.target import PhysReg
from verilocc.target.registers import RegFile

SLOTS = 8  # choices listed per line
NO_CHOICE = "-"  # an empty slot
KINDS = ("=", "d", "f", "n", "!")
FILE_LETTER = {RegFile.SGPR: "s", RegFile.VGPR: "v", RegFile.AGPR: "a"}
_VECTOR = (RegFile.VGPR, RegFile.AGPR)
_SHIFT = 64  # offsets of slot masks are stored shifted by this (a 1024-bit tuple has 64 slots)


@dataclass(frozen=True)
class Choice:
    reg: PhysReg
    kind: str  # one of KINDS

    @property
    def token(self) -> str:
        return self.kind + FILE_LETTER.get(self.reg.file, "x")


@dataclass
class State:
    """The registers chosen so far (one sample of a decoder, or a teacher's assignment)."""

    regs: dict[VReg, PhysReg] = field(default_factory=dict)
    base: list[int] = field(default_factory=list)  # dense id -> first unit of its register, -1 none
    top: dict[RegFile, int] = field(default_factory=dict)  # highest register number + 1 per file
    on_fit: bool = True  # every vector register so far is the first fit's (`problem.fit`)

    def copy(self) -> State:
        return State(dict(self.regs), list(self.base), dict(self.top), self.on_fit)


@dataclass
class _Line:
    """Static facts of one virtual register, as bit sets over first units ("bases")."""

    tiers: list[tuple[int, ...]]  # candidate bases per budget tier, in allocation order
    by_base: dict[int, PhysReg]  # every candidate of the widest tier
    static_banned: int  # bases that fixed physical units rule out
    conflicts: list[tuple[int, int]]  # (dense id of the other, offset mask)
    copy_conflicts: list[tuple[int, int, int]]  # (dense id, offset mask, identity offset)
    partners: list[int | PhysReg]  # COPY partners: dense ids or physical registers
    dying: list[int]  # dense ids


def _bits(mask: int) -> list[int]:
    return [s for s in range(mask.bit_length()) if mask >> s & 1]


@functools.lru_cache(maxsize=4096)
def _offsets(mine: int, theirs: int) -> int:
    """Bit d set when some slot s of mine and t of theirs have t - s = d - _SHIFT."""
    out = 0
    for s in _bits(mine):
        out |= theirs << (_SHIFT - s)
    return out


def _as_bits(values: Sequence[int] | set[int]) -> int:
    out = 0
    for b in values:
        if b >= 0:
            out |= 1 << b
    return out


class ChoiceTables:
    """The choice lists of one problem: static tables, then `choices(state, k)` per line."""

    def __init__(self, problem: AllocationProblem) -> None:
        """Tables of `problem`; the first tables made for a problem compute its occupancy tiers
        (`occupancy_caps`, a first fit with tables of one tier)."""
        if not problem.caps_known:
            problem.caps_known = True
            problem.tight, problem.caps = occupancy_caps(problem)
        self.problem = problem
        dense = problem.dense
        self.lines: list[_Line] = []
        self._capped = sum(1 for caps in (problem.tight, problem.caps) if caps)  # tiers within the caps
        self.degree: list[int] = []  # distinct virtual registers each one conflicts with
        pools: dict[tuple[str, bool], list[tuple[int, ...]]] = {}
        for v in problem.order:
            iv = problem.info[v]
            key = (iv.cls.name, problem.over_budget)
            if key not in pools:
                pools[key] = self._tiers(iv.candidates, iv.preferred)
            tiers = pools[key]
            by_base = {r.units[0]: r for r in (iv.candidates if problem.over_budget else iv.preferred)}
            banned: set[int] = set()
            for mask, units in iv.fixed:
                banned.update(u - s for s in _bits(mask) for u in units)
            for cc in iv.copy_conflicts:
                if cc.other is None:
                    own = {u - s for s in _bits(cc.mine) for u in cc.units}
                    own.discard(min(cc.units) + cc.identity[1] - cc.identity[0])
                    banned |= own
            conflicts = [(dense[w], _offsets(mine, theirs)) for w, mine, theirs in iv.conflicts]
            self.degree.append(len({w for w, _, _ in iv.conflicts}))
            copy_conflicts = [(dense[cc.other], _offsets(cc.mine, cc.theirs), cc.identity[1] - cc.identity[0])
                              for cc in iv.copy_conflicts if cc.other is not None]
            partners: list[int | PhysReg] = [p if isinstance(p, PhysReg) else dense[p] for p in iv.copies
                                             if isinstance(p, PhysReg) or p in dense]
            self.lines.append(_Line(tiers, by_base, _as_bits(banned), conflicts, copy_conflicts,
                                    list(dict.fromkeys(partners)), [dense[w] for w in iv.dying if w in dense]))

    def _tiers(self, hard: tuple[PhysReg, ...], preferred: tuple[PhysReg, ...]) -> list[tuple[int, ...]]:
        """Candidate bases per budget tier (as `AllocationProblem.allowed(budget="capped")`)."""
        problem = self.problem
        tiers: list[tuple[int, ...]] = []
        for caps in (problem.tight, problem.caps):
            if caps:
                tiers.append(tuple(r.units[0] for r in preferred if within(r, caps)))
        tiers.append(tuple(r.units[0] for r in preferred))
        if problem.over_budget:
            tiers.append(tuple(r.units[0] for r in hard))
        for r in hard:  # the bit sets rely on it: unit s of a register is its first unit + s
            assert list(r.units) == list(range(r.units[0], r.units[0] + len(r.units))), r.name
        return tiers

    def start(self) -> State:
        """The state before the first choice: the function's own physical registers counted."""
        problem = self.problem
        usage = problem.usage({})
        return State({}, [-1] * len(problem.order),
                     {RegFile.VGPR: usage["vgpr"], RegFile.AGPR: usage["agpr"], RegFile.SGPR: usage["sgpr"]})

    def banned_bases(self, state: State, k: int) -> int:
        """Bases that interference with the choices in `state` rules out for line `k`."""
        return self.lines[k].static_banned | self._ruled_out(k, state.base)

    def _ruled_out(self, k: int, base: Sequence[int]) -> int:
        """Bases of line `k` that the other lines' registers rule out (`base`: per dense id the
        first unit of its register, -1 none)."""
        line = self.lines[k]
        out = 0
        for w, offs in line.conflicts:
            b = base[w]
            if b >= 0:
                out |= (offs << b) >> _SHIFT
        for w, offs, ident in line.copy_conflicts:
            b = base[w]
            if b >= 0:
                hit = (offs << b) >> _SHIFT
                out |= hit & ~(1 << (b + ident)) if b + ident >= 0 else hit
        return out

    def free(self, state: State, k: int) -> list[PhysReg]:
        """The free registers of line `k` in its first tier that has any, in allocation order."""
        line = self.lines[k]
        banned = self.banned_bases(state, k)
        for cand in line.tiers:
            free = [line.by_base[b] for b in cand if not banned >> b & 1]
            if free:
                return free
        return []

    def choices(self, state: State, k: int, bans: Sequence[PhysReg] = ()) -> tuple[list[Choice], int]:
        """The listed choices of line `k` (at most SLOTS) and how many free registers its tier has."""
        line = self.lines[k]
        banned = self.banned_bases(state, k)
        ban_bases = {r.units[0] for r in bans}
        tier: tuple[int, ...] = ()
        free_count = 0
        for cand in line.tiers:
            free = [b for b in cand if not banned >> b & 1]
            if any(b not in ban_bases for b in free):
                tier, free_count = tuple(free), sum(1 for b in free if b not in ban_bases)
                break
        out: list[Choice] = []
        in_tier = set(tier)
        partners: list[int] = []
        for p in line.partners:
            b = p.units[0] if isinstance(p, PhysReg) else state.base[p]
            if b in in_tier and b not in partners:
                partners.append(b)
        dying = [b for b in (state.base[w] for w in line.dying) if b in in_tier]
        picked = partners[:2]
        # The lowest free registers, then up to two dying values' registers not among them:
        # a dying register that turns out to be among the lowest needs no slot of its own.
        kept = [b for b in dying if b not in picked][:2]
        for b in tier:
            if len(picked) + sum(1 for d in kept if d not in picked) >= SLOTS:
                break
            if b not in picked:
                picked.append(b)
        for b in kept:
            if b not in picked and len(picked) < SLOTS:
                picked.append(b)
        fit = self.problem.fit[k] if state.on_fit and self.problem.fit else -1
        if fit in in_tier and fit not in picked:
            # The first fit's register, last: in place of the highest of the lowest free ones.
            if len(picked) >= SLOTS:
                lowest = [i for i, b in enumerate(picked) if b not in partners and b not in kept]
                del picked[lowest[-1] if lowest else -1]
            picked.append(fit)
        for b in picked:
            reg = line.by_base[b]
            if b in ban_bases:
                kind = "!"
            elif b in partners:
                kind = "="
            elif b in dying:
                kind = "d"
            else:
                top = state.top.get(reg.file)
                kind = "n" if top is not None and reg.index + max(1, reg.width32) > top else "f"
            out.append(Choice(reg, kind))
        return out, free_count

    def beyond_caps(self, listed: Sequence[Choice]) -> bool:
        """Whether every answer a line's listing allows costs a wave: none of its choices not
        ruled out (`!`) keeps the waves of the first fit (`problem.caps`)."""
        caps = self.problem.caps
        ok = [c for c in listed if c.kind != "!"]
        return bool(caps) and bool(ok) and not any(within(c.reg, caps) for c in ok)

    def completion(self, state: State, start: int) -> dict[int, int] | None:
        """Registers for lines `start`.. after the choices in `state` that keep the first fit's
        waves, each one a line's listing holds when the lines before it took theirs: per line
        the first unit of its register. While `state` is on the widest-tuples-first fit
        (`State.on_fit`), that fit's own vector registers (listed while a sample stays on it)
        with a first fit of the other lines; else, or failing that, a first fit in program
        order within the capped tiers (each line's register is then its lowest free one).
        None when neither keeps the caps, or the first fit found no caps."""
        caps = self.problem.caps
        if not caps or any(state.top.get(f, 0) > cap for f, cap in caps.items()):
            return None
        fit = self.problem.fit if state.on_fit else []
        for on_fit in ([True] if fit else []) + [False]:
            trial = state.copy()
            out: dict[int, int] = {}
            for k in range(start, len(self.lines)):
                base = fit[k] if on_fit and self.is_vector(k, fit[k]) else self._first_capped(trial, k)
                if base < 0:
                    break
                self.take(trial, k, self.lines[k].by_base[base])
                out[k] = base
            else:
                return out
        return None

    def is_vector(self, k: int, base: int) -> bool:
        """Whether `base` is the first unit of a vector register of line k."""
        reg = self.lines[k].by_base.get(base)
        return reg is not None and reg.file in _VECTOR

    def _first_capped(self, state: State, k: int) -> int:
        """The first free base of line k in its capped tiers (-1: none), as `free(state, k)[0]`."""
        line = self.lines[k]
        banned = self.banned_bases(state, k)
        for cand in line.tiers[:self._capped]:
            for b in cand:
                if not banned >> b & 1:
                    return b
        return -1

    def keeps(self, plan: Mapping[int, int], k: int, reg: PhysReg) -> bool:
        """Whether `plan` (a `completion`) stays one with line k's register changed to `reg`:
        `reg` is within the caps and no later line's register in the plan rules it out."""
        if not within(reg, self.problem.caps):
            return False
        later = [-1] * len(self.lines)
        for w, bw in plan.items():
            if w > k:
                later[w] = bw
        return not self._ruled_out(k, later) >> reg.units[0] & 1

    def take(self, state: State, k: int, reg: PhysReg | None) -> None:
        """Record the register chosen on line `k` (None: the line got none)."""
        if reg is None:
            state.on_fit = False
            return
        if self.problem.fit and reg.file in _VECTOR and reg.units[0] != self.problem.fit[k]:
            state.on_fit = False
        v = self.problem.order[k]
        state.regs[v] = reg
        state.base[k] = reg.units[0]
        if reg.file in state.top:
            state.top[reg.file] = max(state.top[reg.file], reg.index + max(1, reg.width32))


# --------------------------------------------------------------------------------------------
# Assignments <-> decisions
# --------------------------------------------------------------------------------------------
def answer_token(index: int) -> str:
    return f"@{index}"


def decisions_of(tables: ChoiceTables, regs: Mapping[VReg, PhysReg]) -> list[str]:
    """An assignment as decisions: per line `@j` (the listed choice that is its register) or
    `?` (not listed, or no register). Lines are decided in order, each against the registers
    of the lines before it, so replaying the decisions gives the assignment back wherever
    every decision is listed (`replay`)."""
    state = tables.start()
    out: list[str] = []
    for k, v in enumerate(tables.problem.order):
        reg = regs.get(v)
        listed, _ = tables.choices(state, k)
        j = next((i for i, c in enumerate(listed) if reg is not None and c.reg == reg), None)
        out.append("?" if j is None else answer_token(j))
        tables.take(state, k, reg)
    return out


def replay(tables: ChoiceTables, decisions: Sequence[str]) -> tuple[dict[VReg, PhysReg], list[int]]:
    """Decisions -> the registers they choose, and the lines whose decision names no listed choice."""
    state = tables.start()
    bad: list[int] = []
    for k in range(len(tables.problem.order)):
        listed, _ = tables.choices(state, k)
        d = decisions[k] if k < len(decisions) else ""
        j = int(d[1:]) if d.startswith("@") and d[1:].isdigit() else -1
        if 0 <= j < len(listed):
            tables.take(state, k, listed[j].reg)
        else:
            bad.append(k)
    return state.regs, bad


def occupancy_caps(problem: AllocationProblem) -> tuple[dict[RegFile, int], dict[RegFile, int]]:
    """Per vector file, the register counts of the better of two first-fit allocations, and
    the counts that keep its waves per SIMD (both empty when neither finds registers for all).
    First fit takes, for each register in turn, the first of `allowed` (budget "preferred"),
    computed with the choice tables' bit sets (`verilocc.llm.choices`); one runs in program
    order, the other places the widest tuples first (in program order among equals), which
    leaves fewer holes too narrow for a tuple: on GEMM kernels it often reaches a wave more.
    Better: more waves, then fewer VGPR+AGPR, then program order."""
    over, problem.over_budget = problem.over_budget, False
    tables = ChoiceTables(problem)  # problem.tight/caps still empty: one tier, the preferred registers
    problem.over_budget = over
    n = len(problem.order)
    width = [problem.info[v].cls.width_units for v in problem.order]
    best: dict[str, int] | None = None
    problem.fit = []
    plain = list(range(n))
    wide = sorted(plain, key=lambda k: -width[k])
    for order in [plain] + ([wide] if wide != plain else []):  # one width: one order
        state = tables.start()
        for k in order:
            free = tables.free(state, k)
            if not free:
                break
            tables.take(state, k, free[0])
        else:
            usage = problem.usage(state.regs)
            if best is None or (-usage["waves"], usage["vgpr"] + usage["agpr"]) < (-best["waves"], best["vgpr"] + best["agpr"]):
                # listed where program order, whose registers are the lowest listed, loses waves
                problem.fit = list(state.base) if order is wide and (best is None or usage["waves"] > best["waves"]) else []
                best = usage
    if best is None:
        return {}, {}
    problem.floor_waves = best["waves"]
    tight = {RegFile.VGPR: best["vgpr"], RegFile.AGPR: best["agpr"]}
    target = problem.target
    most = target.max_vgprs_for_waves(best["waves"])
    agprs = best["agpr"]
    if target.unified_vgpr_file and agprs:
        vgprs = (most - agprs) // 4 * 4
    else:
        vgprs = most
    return tight, {RegFile.VGPR: max(vgprs, best["vgpr"]),
                   RegFile.AGPR: max(agprs, most if not target.unified_vgpr_file else agprs)}
