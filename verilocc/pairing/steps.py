"""The paired steps of a block, decoded once, and the one walker every layer drives.

`verilocc.pairing.alignment` pairs the instructions of a virtual (pre) block and its
allocated (post) block into `Step`s with a `Role`. `decode` turns each into one of the kinds
below, which is what a step *means*, written once; `walk_block` decodes a block's steps in
order and calls the visitor's method for each kind (the shape of regalloc2's checker step and
of LLVM's InstVisitor). Value flow, equivalence and the value-flow certificate are visitors.

The kinds, in the manner of regalloc2's checker:
- `Matched`: an instruction of the virtual program and its counterpart in the allocated one.
  Every use reads, at the same operand position, the value the virtual program reads; every
  def writes its lanes on both sides.
- `PreCopy` `%a = COPY %b`: %a now has %b's value (the allocator coalesced or will move it).
  `src` is None for `COPY undef %b`: the lanes of %a become undefined (any value refines them).
- `PreImplicitDef`: the defined lanes become undefined (any value refines them).
- `PreKill` / `PostKill`: nothing changes.
- `PostCopy`: the destination location now holds what the source holds. `src` is None for an
  `undef` source: the destination holds nothing.
  A post-only `S_MOV_B32`/`S_MOV_B64` from a register (LLVM inserts them to restore $exec
  around whole-wave copies) is a `PostCopy` too.
- `ExecSave` (post only) `$s = S_OR_SAVEEXEC_B64 -1` (or `_B32`): LLVM brackets a copy or
  spill of a whole-wave register with it and `$exec = S_MOV_B64 $s`, so that all lanes move.
  `$s` takes the value of $exec; $exec (all lanes on) and $scc then hold no value of the
  virtual program, so an instruction of the virtual program that runs before $exec is
  restored reads the wrong $exec and is caught.
- `PostImplicitDef`: the defined locations hold nothing.
- `SpillToSlot` (`SI_SPILL_*_SAVE`): the stack slot takes the value of `src`.
- `ReloadFromSlot` (`SI_SPILL_*_RESTORE`): `dst` takes the value of the stack slot.
- `SpillToLane` (`SI_SPILL_S32_TO_VGPR`): the VGPR `vgpr` is its tied input `vgpr_in` with lane
  `lane` replaced by `src`'s value.
- `RestoreFromLane` (`SI_RESTORE_S32_FROM_VGPR`): `dst` takes lane `lane` of `vgpr`.
- `RematCopy` (post only): a rematerialised copy of a pure definition of the virtual program.
- `RematOrigin` (pre only): a pure or dead definition the allocator deleted.
- `Added` / `Dropped`: an instruction with no counterpart on the other side (a finding).
- `UnsupportedStep`: a step no layer models, with the reason. Value flow reports it with
  severity unknown, equivalence gives UNKNOWN, the certificate leaves the block uncovered.

A COPY between a 16-bit and a 32-bit register (true16 targets: `%1:vgpr_16 = COPY %0:vgpr_32`,
`$vgpr1_lo16 = COPY $vgpr1`) moves the low 16 bits; a widening one leaves the high half of the
destination undefined (SIInstrInfo::copyPhysReg). Every other COPY has equal widths
(`copy_widths_agree`).

Two decisions are made here and nowhere else:
- A COPY must have exactly two explicit register operands, a def then a use (LLVM never
  prints another shape). Anything else is `UnsupportedStep` (malformed), never silently read.
- A reload (`*_RESTORE` with a stack slot) whose first explicit register is not a def is
  `UnsupportedStep`: no register would receive the slot's value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from verilocc.analysis.instructions import EXEC_REGISTERS, is_exec_save, is_register_move
from verilocc.mir.model import Block, Instruction, Operand
from verilocc.pairing.alignment import Role, Step

# Why a step is unsupported; each layer words its finding with it ("`X` is spill code ...").
SPILL_CODE = "spill code"
MALFORMED_COPY = "a malformed COPY (not one explicit def and one explicit use)"

# A location of the allocated program, as the layers that follow values through its steps key
# their states: a 16-bit physical register unit (an int), 16-bit piece `k` of a stack slot
# (`("slot", slot, k)`), or piece `k` of the value a lane of a VGPR holds (`("lane", first
# unit of the VGPR, lane, k)`).
Loc = int | tuple[str, int | str, int] | tuple[str, int, int, int]


@dataclass(frozen=True)
class Matched:
    step: Step
    pre: Instruction
    post: Instruction


@dataclass(frozen=True)
class OneSided:
    """A step about one instruction of one program (the pre one when `step.post` is None)."""

    step: Step
    ins: Instruction

    @property
    def in_pre(self) -> bool:
        return self.step.post is None


@dataclass(frozen=True)
class Copy(OneSided):
    """`dst = COPY src`; `PreCopy` and `PostCopy` say which program it belongs to."""

    dst: Operand
    src: Operand | None  # None: `COPY undef ...`
    source: Operand  # the source as written, also an `undef` one (its width still counts)


class PreCopy(Copy):
    pass


class PostCopy(Copy):
    pass


@dataclass(frozen=True)
class ExecSave(Copy):
    """`dst = S_OR_SAVEEXEC -1`: a copy of $exec (`src`), then `clobbers` hold nothing."""

    clobbers: tuple[Operand, ...] = ()


class PreImplicitDef(OneSided):
    pass


class PreKill(OneSided):
    pass


class PostImplicitDef(OneSided):
    pass


class PostKill(OneSided):
    pass


@dataclass(frozen=True)
class SpillToSlot(OneSided):
    src: Operand
    slot: int | str


@dataclass(frozen=True)
class ReloadFromSlot(OneSided):
    dst: Operand
    slot: int | str


@dataclass(frozen=True)
class SpillToLane(OneSided):
    """`$vgpr = SI_SPILL_S32_TO_VGPR $sgpr, lane, $vgpr_in`: `vgpr` is `vgpr_in` with lane
    `lane` replaced by `src` (the two are tied by the instruction's definition; None when the
    instruction names no input)."""

    src: Operand
    vgpr: Operand
    lane: int
    vgpr_in: Operand | None = None


@dataclass(frozen=True)
class RestoreFromLane(OneSided):
    dst: Operand
    vgpr: Operand
    lane: int


class RematCopy(OneSided):
    pass


class RematOrigin(OneSided):
    pass


class Added(OneSided):
    pass


class Dropped(OneSided):
    pass


@dataclass(frozen=True)
class UnsupportedStep(OneSided):
    reason: str  # SPILL_CODE, MALFORMED_COPY
    detail: str = ""


DecodedStep = (Matched | PreCopy | PreImplicitDef | PreKill | PostCopy | ExecSave | PostImplicitDef | PostKill | SpillToSlot
               | ReloadFromSlot | SpillToLane | RestoreFromLane | RematCopy | RematOrigin | Added | Dropped
               | UnsupportedStep)


def copy_widths_agree(dst_units: int, src_units: int) -> bool:
    """Whether a COPY of `src_units` 16-bit units into `dst_units` has a meaning: equal widths,
    or 16 and 32 bits either way (the low units move)."""
    return dst_units == src_units or {dst_units, src_units} == {1, 2}


def slot_number(op: Operand) -> int | str:
    """`%stack.3.name + 8` -> 3 (a named slot without a number keeps its name)."""
    body = op.text[len("%stack."):].split("+")[0].strip()
    head = body.split(".", 1)[0]
    return int(head) if head.isdigit() else head


def _exec_lo(op: Operand) -> Operand:
    return dataclasses.replace(op, phys="exec_lo", text="$exec_lo") if op.phys == "exec" else op


def _decode_move(step: Step, ins: Instruction, pre_side: bool) -> DecodedStep:
    if ins.opcode == "IMPLICIT_DEF":
        return PreImplicitDef(step, ins) if pre_side else PostImplicitDef(step, ins)
    if ins.opcode == "KILL":
        return PreKill(step, ins) if pre_side else PostKill(step, ins)
    regs = ins.explicit_regs
    if not pre_side and is_exec_save(ins):
        src = next(op for op in ins.operands if op.kind == "reg" and not op.is_def and op.phys in EXEC_REGISTERS)
        others = tuple(op for op in ins.defs if op is not regs[0])
        if ins.opcode.endswith("_B32"):
            # Wave32: the low half of $exec is saved and set; LLVM's operands name all of $exec.
            src = _exec_lo(src)
            others = tuple(_exec_lo(op) for op in others)
        return ExecSave(step, ins, regs[0], src, src, others)
    if ins.opcode != "COPY" and not (not pre_side and is_register_move(ins)):
        return UnsupportedStep(step, ins, MALFORMED_COPY, f"`{ins.opcode}` is not a copy")
    if len(regs) != 2 or not regs[0].is_def or regs[1].is_def:
        return UnsupportedStep(step, ins, MALFORMED_COPY, f"{len(regs)} explicit registers")
    read = None if regs[1].has("undef") else regs[1]
    kind = PreCopy if pre_side else PostCopy
    return kind(step, ins, regs[0], read, regs[1])


def _slot_address_error(ins: Instruction, slot: Operand, stack_pointers: frozenset[str]) -> str | None:
    """Why a stack-slot spill does not address its slot the way LLVM writes it, or None.

    The slot is known by its frame index only, so the rest of the address must be what
    LLVM's storeRegToStackSlot/loadRegFromStackSlot give every spill at this point of the
    pipeline: for VGPR/AGPR spills the function's stack pointer (`alignment.stack_pointers`:
    `$sgpr32` in code compiled from IR) and offset 0 after the slot, for SGPR spills nothing
    (the stack pointer is an implicit operand). Anything else would reach other memory once
    frame indices are lowered."""
    after = [o for o in ins.operands[ins.operands.index(slot) + 1:] if not (o.kind == "reg" and o.is_implicit)]
    shape = [(o.kind, o.phys if o.kind == "reg" else o.text) for o in after]
    if ins.opcode.startswith("SI_SPILL_S"):
        return None if not shape else f"an SGPR spill with operands after its slot ({', '.join(o.text for o in after)})"
    if len(shape) == 2 and shape[0][0] == "reg" and shape[0][1] in stack_pointers and shape[1] == ("imm", "0"):
        return None
    sp = " or ".join(f"`${r}, 0`" for r in sorted(stack_pointers))
    return f"the slot is addressed by `{', '.join(o.text for o in after)}`, not the stack pointer {sp}"


def _decode_spill(step: Step, ins: Instruction, stack_pointers: frozenset[str]) -> DecodedStep:
    op = ins.opcode
    regs = ins.explicit_regs
    slot = next((o for o in ins.operands if o.kind == "stack"), None)
    imm = next((o for o in ins.operands if o.kind == "imm"), None)
    if op in ("SI_SPILL_S32_TO_VGPR", "SI_RESTORE_S32_FROM_VGPR", "V_WRITELANE_B32", "V_READLANE_B32"):
        # `$vgpr = SI_SPILL_S32_TO_VGPR $sgpr, lane, $vgpr(tied)`;
        # `$sgpr = SI_RESTORE_S32_FROM_VGPR $vgpr, lane`; LLVM 13-16 write the same shapes
        # with V_WRITELANE_B32 / V_READLANE_B32 (`verilocc.analysis.instructions.is_lane_spill`).
        if len(regs) < 2 or imm is None:
            return UnsupportedStep(step, ins, SPILL_CODE, "missing register or lane operand")
        if op in ("SI_SPILL_S32_TO_VGPR", "V_WRITELANE_B32"):
            vgpr_in = regs[2] if len(regs) > 2 and not regs[2].is_def else None
            return SpillToLane(step, ins, src=regs[1], vgpr=regs[0], lane=int(imm.text), vgpr_in=vgpr_in)
        return RestoreFromLane(step, ins, dst=regs[0], vgpr=regs[1], lane=int(imm.text))
    if slot is not None and (bad := _slot_address_error(ins, slot, stack_pointers)):
        return UnsupportedStep(step, ins, SPILL_CODE, bad)
    if slot is not None and regs and op.endswith("_SAVE"):
        return SpillToSlot(step, ins, src=regs[0], slot=slot_number(slot))
    if slot is not None and regs and op.endswith("_RESTORE"):
        if not regs[0].is_def:
            return UnsupportedStep(step, ins, SPILL_CODE, "the first explicit register of a reload is not a def")
        return ReloadFromSlot(step, ins, dst=regs[0], slot=slot_number(slot))
    return UnsupportedStep(step, ins, SPILL_CODE, "no stack slot or register operand")


def decode(step: Step, pre: Block, post: Block, stack_pointers: frozenset[str]) -> DecodedStep:
    """What one aligned step means (see the module docstring); `stack_pointers` are the
    registers spills address their slots by (`FunctionAlignment.stack_pointers`)."""
    pre_ins = pre.instructions[step.pre] if step.pre is not None else None
    post_ins = post.instructions[step.post] if step.post is not None else None
    role = step.role
    if role is Role.MATCHED:
        assert pre_ins is not None and post_ins is not None
        return Matched(step, pre_ins, post_ins)
    if role is Role.MOVE:
        if pre_ins is not None:
            return _decode_move(step, pre_ins, pre_side=True)
        assert post_ins is not None
        return _decode_move(step, post_ins, pre_side=False)
    if role in (Role.REMAT_ORIGIN, Role.DROPPED):
        assert pre_ins is not None
        return RematOrigin(step, pre_ins) if role is Role.REMAT_ORIGIN else Dropped(step, pre_ins)
    assert post_ins is not None
    if role is Role.SPILL:
        return _decode_spill(step, post_ins, stack_pointers)
    return RematCopy(step, post_ins) if role is Role.REMAT else Added(step, post_ins)


class StepVisitor(Protocol):
    """One method per step kind; `walk_block` calls them in program order."""

    def matched(self, s: Matched) -> None: ...
    def pre_copy(self, s: PreCopy) -> None: ...
    def pre_implicit_def(self, s: PreImplicitDef) -> None: ...
    def pre_kill(self, s: PreKill) -> None: ...
    def post_copy(self, s: PostCopy) -> None: ...
    def exec_save(self, s: ExecSave) -> None: ...
    def post_implicit_def(self, s: PostImplicitDef) -> None: ...
    def post_kill(self, s: PostKill) -> None: ...
    def spill_to_slot(self, s: SpillToSlot) -> None: ...
    def reload_from_slot(self, s: ReloadFromSlot) -> None: ...
    def spill_to_lane(self, s: SpillToLane) -> None: ...
    def restore_from_lane(self, s: RestoreFromLane) -> None: ...
    def remat(self, s: RematCopy) -> None: ...
    def remat_origin(self, s: RematOrigin) -> None: ...
    def added(self, s: Added) -> None: ...
    def dropped(self, s: Dropped) -> None: ...
    def unsupported(self, s: UnsupportedStep) -> None: ...


_METHOD: dict[type, str] = {
    Matched: "matched", PreCopy: "pre_copy", PreImplicitDef: "pre_implicit_def", PreKill: "pre_kill",
    PostCopy: "post_copy", ExecSave: "exec_save", PostImplicitDef: "post_implicit_def", PostKill: "post_kill",
    SpillToSlot: "spill_to_slot", ReloadFromSlot: "reload_from_slot", SpillToLane: "spill_to_lane",
    RestoreFromLane: "restore_from_lane", RematCopy: "remat", RematOrigin: "remat_origin", Added: "added",
    Dropped: "dropped", UnsupportedStep: "unsupported",
}


def visit(visitor: StepVisitor, s: DecodedStep) -> None:
    getattr(visitor, _METHOD[type(s)])(s)


def walk_block(steps: list[Step], pre: Block, post: Block, visitor: StepVisitor,
               stack_pointers: frozenset[str]) -> None:
    """Decode a block's aligned steps in order and hand each to the visitor."""
    for st in steps:
        visit(visitor, decode(st, pre, post, stack_pointers))
