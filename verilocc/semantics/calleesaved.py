"""Registers the allocated program saves for its caller must hold their entry values at return.

Before the virtual-register rewriter, LLVM (SILowerSGPRSpills, from LLVM 16) saves some
callee-saved registers itself: the return address `$sgpr30_sgpr31` around a call, and the SGPRs
the allocation used, written to a stack slot or a VGPR lane at the function's entry and read
back before `SI_RETURN`. The virtual program has no such code (the prologue and epilogue come
later, from the same pass or from prolog/epilog insertion), so pairing the two programs says
nothing about it: a restore from the wrong slot hands the caller a wrong return address and
every read the virtual program makes still sees its own values.

The rule checked here: a register the allocated program reads at entry (a block live-in of
the entry block) while the virtual program does not, and whose entry value the allocated
program spills (to a slot or a lane) or which it reloads from one, was saved for the caller
(LLVM reads such a register at entry only to save it); at every return
(`SI_RETURN`, `S_SETPC_B64_return`, `S_SETPC_B64_return_gfx`, `SI_RETURN_TO_EPILOG`) it must hold that entry value
again. Values are followed through the allocated program's copies, spills, reloads and lane
spills, decoded by `verilocc.pairing.steps` like every layer's; any other definition of a
location, a call's clobbers included, makes it hold nothing. Meet is intersection, so a path
that loses the value is caught. Kernels (entry functions) return to no one and are skipped.
"""

from __future__ import annotations

from verilocc.analysis.calls import RETURN_OPCODES
from verilocc.analysis.cfg import CFG
from verilocc.analysis.operands import physreg_at
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.pairing import steps as ps
from verilocc.pairing.alignment import FunctionAlignment
from verilocc.pairing.steps import Loc
from verilocc.target import register_for_units
from verilocc.errors import TargetError
from verilocc.target.registers import parse_physreg

LAYER = "value-flow"

State = dict[Loc, frozenset[int]]  # location -> the entry values (units) it holds


def _units(fn: Function, op: Operand) -> tuple[int, ...]:
    return physreg_at(fn, op, op.phys).units if op.phys is not None else ()


def _entry_units(fn: Function) -> set[int]:
    if not fn.blocks:
        return set()
    out: set[int] = set()
    for name, _ in fn.blocks[0].liveins:
        try:
            out.update(parse_physreg(name.lstrip("$")).units)
        except TargetError:  # a live-in this module cannot name is not one it checks
            continue
    return out


class _Walker:
    """Post-side transfer of one block (a `StepVisitor`)."""

    def __init__(self, check: CalleeSavedChecker, block: int, state: State, report: bool) -> None:
        self.c = check
        self.b = block
        self.s = state
        self.report = report

    # primitive updates
    def clear(self, ins: Instruction) -> None:
        for op in ins.operands:
            if op.kind == "reg" and op.is_def and op.phys is not None:
                units = _units(self.c.post, op)
                for u in units:
                    self.s.pop(u, None)
                if units:
                    first = units[0]
                    for loc in [loc for loc in self.s if isinstance(loc, tuple) and loc[0] == "lane" and loc[1] == first]:
                        del self.s[loc]

    def move(self, dst: tuple[Loc, ...], src: tuple[Loc, ...] | None) -> None:
        got = [self.s.get(loc, frozenset()) for loc in src] if src is not None and len(src) == len(dst) else None
        for k, loc in enumerate(dst):
            if got is not None and got[k]:
                self.s[loc] = got[k]
            else:
                self.s.pop(loc, None)

    def saved(self, src: tuple[Loc, ...]) -> None:
        """An entry value spilled: the allocated program keeps it for the caller."""
        for loc in src:
            if isinstance(loc, int) and loc in self.s.get(loc, frozenset()):
                self.c.saved.add(loc)

    def check_return(self, ins: Instruction, index: int) -> None:
        if not self.report or ins.opcode not in RETURN_OPCODES:
            return
        lost = sorted(u for u in self.c.tracked if u not in self.s.get(u, frozenset()))
        if not lost:
            return
        regs = [register_for_units((u - u % 2, u - u % 2 + 1)) or register_for_units((u,)) for u in lost]
        names = ", ".join(dict.fromkeys(f"${r.name}" for r in regs if r is not None))
        self.c.findings.append(Finding(
            kind="callee-saved-lost", layer=LAYER,
            place=Place(self.c.post.file, self.c.post.name, self.b, index, ins.line, ins.column),
            message=(f"bb.{self.b} line {ins.line}: `{ins.opcode}` returns with {names} not holding "
                     f"the value it had at the function's entry: the allocated program saved it for the "
                     f"caller (a callee-saved register or the return address) and must restore it"),
            physregs=(names,), severity="error"))

    # step kinds
    def matched(self, s: ps.Matched) -> None:
        assert s.step.post is not None  # a matched step has both instructions
        self.check_return(s.post, s.step.post)
        self.clear(s.post)

    def pre_copy(self, s: ps.PreCopy) -> None: ...
    def pre_implicit_def(self, s: ps.PreImplicitDef) -> None: ...
    def pre_kill(self, s: ps.PreKill) -> None: ...
    def post_kill(self, s: ps.PostKill) -> None: ...
    def remat_origin(self, s: ps.RematOrigin) -> None: ...
    def dropped(self, s: ps.Dropped) -> None: ...

    def post_copy(self, s: ps.PostCopy) -> None:
        dst = _units(self.c.post, s.dst)
        src = _units(self.c.post, s.src) if s.src is not None else None
        self.move(dst, src)

    def exec_save(self, s: ps.ExecSave) -> None:
        self.clear(s.ins)

    def post_implicit_def(self, s: ps.PostImplicitDef) -> None:
        self.clear(s.ins)

    def spill_to_slot(self, s: ps.SpillToSlot) -> None:
        src = _units(self.c.post, s.src)
        self.saved(src)
        self.move(tuple(("slot", s.slot, k) for k in range(len(src))), src)

    def reload_from_slot(self, s: ps.ReloadFromSlot) -> None:
        dst = _units(self.c.post, s.dst)
        self.c.restored.update(dst)
        self.clear(s.ins)
        self.move(dst, tuple(("slot", s.slot, k) for k in range(len(dst))))

    def spill_to_lane(self, s: ps.SpillToLane) -> None:
        src = _units(self.c.post, s.src)
        self.saved(src)
        first = _units(self.c.post, s.vgpr)[:1]
        if first:
            self.move(tuple(("lane", first[0], s.lane, k) for k in range(len(src))), src)

    def restore_from_lane(self, s: ps.RestoreFromLane) -> None:
        dst = _units(self.c.post, s.dst)
        self.c.restored.update(dst)
        first = _units(self.c.post, s.vgpr)[:1]
        got = tuple(("lane", first[0], s.lane, k) for k in range(len(dst))) if first else None
        self.clear(s.ins)
        self.move(dst, got)

    def remat(self, s: ps.RematCopy) -> None:
        self.clear(s.ins)

    def added(self, s: ps.Added) -> None:
        self.check_return(s.ins, s.step.post if s.step.post is not None else -1)
        self.clear(s.ins)

    def unsupported(self, s: ps.UnsupportedStep) -> None:
        if not s.in_pre:
            self.clear(s.ins)


def _meet(states: list[State]) -> State:
    if not states:
        return {}
    out = dict(states[0])
    for s in states[1:]:
        for loc in list(out):
            both = out[loc] & s.get(loc, frozenset())
            if both:
                out[loc] = both
            else:
                del out[loc]
    return out


class CalleeSavedChecker:
    def __init__(self, pre: Function, post: Function, alignment: FunctionAlignment, cfg: CFG) -> None:
        self.pre = pre
        self.post = post
        self.alignment = alignment
        self.cfg = cfg
        self.findings: list[Finding] = []
        self.saved: set[int] = set()  # entry values the allocated program spilled
        self.restored: set[int] = set()  # units it reloads from a slot or a lane
        self.tracked: set[int] = set()
        self.entry_states: dict[int, State] = {}  # block -> where the entry values are at its entry

    def _fixed_point(self, candidates: set[int], report: bool) -> None:
        pre_blocks = {b.number: b for b in self.pre.blocks}
        post_blocks = {b.number: b for b in self.post.blocks}
        order = [b for b in self.cfg.reverse_postorder() if b in self.alignment.steps and b in post_blocks]
        out: dict[int, State] = {}
        entry: dict[int, State] = {}
        for _ in range(50 * max(1, len(order))):
            changed = False
            for b in order:
                preds = [out[p] for p in self.cfg.predecessors(b) if p in out]
                state: State = {u: frozenset({u}) for u in candidates} if b == self.cfg.entry else _meet(preds)
                entry[b] = state
                walker = _Walker(self, b, dict(state), report=False)
                ps.walk_block(self.alignment.steps[b], pre_blocks[b], post_blocks[b], walker,
                              self.alignment.stack_pointers)
                if out.get(b) != walker.s:
                    out[b] = walker.s
                    changed = True
            if not changed:
                break
        self.entry_states = entry
        if report:
            for b in order:
                walker = _Walker(self, b, dict(entry[b]), report=True)
                ps.walk_block(self.alignment.steps[b], pre_blocks[b], post_blocks[b], walker,
                              self.alignment.stack_pointers)

    def _candidates(self) -> set[int]:
        info = self.post.header.get("machineFunctionInfo") or {}
        if self.post.calling_convention == "amdgpu_kernel" or info.get("isEntryFunction") is True:
            return set()
        return _entry_units(self.post) - _entry_units(self.pre)

    def entry_values(self) -> dict[int, State]:
        """Per block, the locations that hold the entry values of the registers the allocated
        program reads at entry (the virtual program does not) at the block's entry: what a
        certificate's witness states of them (`verilocc.certificate.witness`)."""
        candidates = self._candidates()
        if candidates:
            self._fixed_point(candidates, report=False)
        return self.entry_states if candidates else {}

    def run(self) -> list[Finding]:
        candidates = self._candidates()
        if not candidates:
            return []
        self._fixed_point(candidates, report=False)  # which entry values get saved
        self.tracked = (self.saved | self.restored) & candidates
        if self.tracked:
            self._fixed_point(candidates, report=True)
        return self.findings
