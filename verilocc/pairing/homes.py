"""Homes: where the allocated program keeps each virtual register, read off paired operands.

Every pair of a virtual operand `%7.sub1` (pre) and a physical operand `$vgpr5` (post) of the
same instruction says that %7 lives, at that point, in the whole register whose sub1 is
$vgpr5: its *home* there (`$vgpr4_vgpr5`). A virtual register with one home everywhere was
assigned a register; several homes mean LLVM split or moved it (or the allocation reads the
wrong register, which value flow decides). Pairs of instructions whose pairing is a guess
(rematerialised copies of one key) show no home; they and the rematerialised copies of a
virtual program's instruction are listed in `rerun`, each with the virtual instructions of its
key, so that the files of their registers are still checked against classes (layer 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from verilocc.pairing.alignment import (FunctionAlignment, Role, instruction_key, paired_operands,
                                         remat_ambiguous_keys, whole_register_for_subregister)
from verilocc.analysis.operands import VReg, physreg_at
from verilocc.analysis.vector_operands import takes_file
from verilocc.errors import TargetError
from verilocc.findings import Place
from verilocc.mir.model import Function, Instruction
from verilocc.target import PhysReg, RegFile, RegisterClass, Target, mask_to_slots, parse_physreg, subreg_mask

_PREFIX = {RegFile.SGPR: "sgpr", RegFile.VGPR: "vgpr", RegFile.AGPR: "agpr"}
NUMBERED_FILES = tuple(_PREFIX)


def make_register(file: RegFile, index: int, count32: int) -> PhysReg:
    """The tuple of `count32` registers of `file` from `index` (`vgpr4_vgpr5`)."""
    prefix = _PREFIX[file]
    return parse_physreg("_".join(f"{prefix}{i}" for i in range(index, index + count32)))


def home_of(phys: PhysReg, cls: RegisterClass, subreg: str | None, target: Target) -> PhysReg | None:
    """The register of class width whose `subreg` is `phys` (or `phys` itself, when it has the
    class's width and there is no subregister), or None if there is none."""
    if not subreg:
        return phys if len(phys.units) == cls.width_units else None
    offset = mask_to_slots(subreg_mask(subreg))[0]
    if phys.file in NUMBERED_FILES and offset % 2 == 0 and cls.width_units % 2 == 0 and len(phys.units) % 2 == 0:
        index = phys.index - offset // 2
        if index < 0:
            return None
        try:
            return make_register(phys.file, index, cls.width_units // 2)
        except TargetError:
            return None
    for m in cls.members(target):
        try:
            if m.subreg(subreg).units == phys.units:
                return m
        except TargetError:
            continue
    return None


@dataclass
class HomeUse:
    reg: PhysReg  # the whole home register
    place: Place  # the first allocated operand that shows it
    # When the class has no register of the home's file: the first allocated operand showing
    # this home that may not name a register of that file (`analysis.vector_operands`), and
    # its opcode; None when every one may (or the class has registers of the file).
    refused: tuple[Place, str] | None = None


class Rerun(NamedTuple):
    """An allocated instruction that may run again one of the virtual instructions of its key."""

    block: int
    post: int  # its index in the allocated block
    origins: tuple[Instruction, ...]  # the virtual instructions of its key
    paired: Instruction | None  # the one the alignment paired it with (None: a rematerialised copy)


@dataclass
class Homes:
    homes: dict[VReg, dict[str, HomeUse]] = field(default_factory=dict)
    # Operands whose register cannot be a subregister of any register of the class.
    impossible: list[tuple[VReg, str, PhysReg, Place]] = field(default_factory=list)
    # The instructions that show no home: rematerialised copies and their ambiguous pairings.
    rerun: list[Rerun] = field(default_factory=list)

    def single(self, v: VReg) -> PhysReg | None:
        h = self.homes.get(v)
        return next(iter(h.values())).reg if h is not None and len(h) == 1 else None


def collect_homes(pre: Function, post: Function, alignment: FunctionAlignment,
                  classes: dict[VReg, RegisterClass], target: Target) -> Homes:
    out = Homes()
    pre_blocks = {b.number: b for b in pre.blocks}
    post_blocks = {b.number: b for b in post.blocks}
    by_key: dict[tuple[object, ...], list[Instruction]] | None = None  # made when a copy needs it
    for b, steps in sorted(alignment.steps.items()):
        ambiguous = remat_ambiguous_keys(pre_blocks[b].instructions, post_blocks[b].instructions)
        for st in steps:
            if st.post is None or not (st.role is Role.REMAT or st.role is Role.MATCHED):
                continue
            qi = post_blocks[b].instructions[st.post]
            if st.role is Role.MATCHED:
                assert st.pre is not None
                pi = pre_blocks[b].instructions[st.pre]
                if not ambiguous or instruction_key(pi) not in ambiguous:
                    _show_homes(out, b, st.post, pi, qi, post, classes, target)
                    continue
            # A rematerialised copy, or paired among copies of one key (a guess: value flow
            # decides): no home, but the virtual instructions it may run again.
            if by_key is None:
                by_key = {}
                for block in pre.blocks:
                    for ins in block.instructions:
                        by_key.setdefault(instruction_key(ins), []).append(ins)
            origins = tuple(by_key.get(instruction_key(qi), ()))
            paired = pre_blocks[b].instructions[st.pre] if st.role is Role.MATCHED and st.pre is not None else None
            if paired is not None and not any(o is paired for o in origins):
                origins += (paired,)  # paired by its operation (an MFMA of the other form)
            if origins:
                out.rerun.append(Rerun(b, st.post, origins, paired))
    return out


def _show_homes(out: Homes, b: int, post_index: int, pi: Instruction, qi: Instruction, post: Function,
                classes: dict[VReg, RegisterClass], target: Target) -> None:
    """The homes a paired instruction shows, into `out`. A use marked `undef` shows none: it
    reads no value, and an allocator may name any register there (LLVM's fast allocator names
    a free one, not the home of the virtual register's other values)."""
    for _, po, k, qo in paired_operands(pi, qi, post, classes):
        if po.kind != "reg" or qo.kind != "reg" or po.vreg is None or qo.phys is None:
            continue
        if not po.is_def and po.has("undef"):
            continue
        place = Place(post.file, post.name, b, post_index, qo.line, qo.column)
        phys = physreg_at(post, qo, qo.phys)
        cls = classes[po.vreg]
        whole = whole_register_for_subregister(pi, po, qo, len(phys.units), classes)
        home = home_of(phys, cls, "" if whole else po.subreg, target)
        if home is None:
            out.impossible.append((po.vreg, po.register_text, phys, place))
            continue
        use = out.homes.setdefault(po.vreg, {}).get(home.name)
        if use is None:
            use = out.homes[po.vreg][home.name] = HomeUse(home, place)
        if (use.refused is None and home.file not in classes[po.vreg].files
                and not takes_file(qi, k, home.file, target.aligned_vgpr_tuples)):
            use.refused = (place, qi.opcode)
