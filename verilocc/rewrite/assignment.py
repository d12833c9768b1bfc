"""Assignments: the compact form a model emits, and its materialisation into a post-RA program.

An assignment file has one line per virtual register, `%12 -> $vgpr4_vgpr5`; blank lines and
comments (`#` or `;` to the end of the line) are ignored. Materialising rewrites every
virtual operand of the pre-RA program to the assigned physical register (applying the
operand's subregister index), marks it `renamable` as llc does, drops the copies that became
identities and empties `registers:`. The result is verified like any allocated program.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from verilocc.errors import InputError, TargetError
from verilocc.findings import Finding, Place
from verilocc.mir.model import Function, Module, Operand
from verilocc.mir.parser import read_text
from verilocc.target import PhysReg, parse_physreg

_LINE = re.compile(r"^\s*%(?P<v>\d+|[A-Za-z_][\w$-]*)\s*->\s*\$(?P<p>[A-Za-z_]\w*)\s*$")


@dataclass
class Assignment:
    file: str
    regs: dict[int | str, PhysReg] = field(default_factory=dict)
    lines: dict[int | str, int] = field(default_factory=dict)


def parse_assignment(text: str, file: str = "<assignment>") -> Assignment:
    out = Assignment(file=file)
    for n, raw in enumerate(text.split("\n"), start=1):
        line = re.split(r"[#;]", raw, maxsplit=1)[0]
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            col = len(line) - len(line.lstrip()) + 1
            raise InputError("expected `%N -> $physreg`", file, n, col)
        v: int | str = int(m.group("v")) if m.group("v").isdigit() else m.group("v")
        if v in out.regs:
            raise InputError(f"%{v} is assigned twice (first on line {out.lines[v]})", file, n, m.start("v"))
        try:
            out.regs[v] = parse_physreg(m.group("p"))
        except TargetError as e:
            raise InputError(str(e), file, n, m.start("p")) from None
        out.lines[v] = n
    return out


def read_assignment(path: str) -> Assignment:
    return parse_assignment(read_text(path, "an assignment file"), path)


def format_assignment(regs: dict[int | str, PhysReg]) -> str:
    keys = sorted(regs, key=lambda k: (isinstance(k, str), k if isinstance(k, int) else 0, str(k)))
    return "".join(f"%{k} -> ${regs[k].name}\n" for k in keys)


def materialise(pre: Module, assignment: Assignment) -> tuple[Module, list[Finding]]:
    """Rewrite `pre` with the assignment; return the allocated module and any findings.

    A virtual register without an assignment stays virtual (the verifier reports it); a
    subregister the assigned register does not have is a finding at the assignment's line.
    Without findings, each function gets the block live-ins VirtRegRewriter writes
    (`verilocc.rewrite.finish.finish_for_llc`), which llc's machine verifier wants of a file
    it finishes.
    """
    from verilocc.rewrite.finish import finish_for_llc

    post = copy.deepcopy(pre)
    findings: list[Finding] = []
    for fn in post.functions:
        _rewrite_function(fn, assignment, findings)
    if not findings:
        for pre_fn, post_fn in zip(pre.functions, post.functions):
            finish_for_llc(pre_fn, post_fn, assignment.regs)
    return post, findings


def _rewrite_function(fn: Function, asg: Assignment, findings: list[Finding]) -> None:
    reported: set[int | str] = set()
    for block in fn.blocks:
        kept = []
        for ins in block.instructions:
            for op in ins.operands:
                if op.kind == "reg" and op.vreg is not None and op.vreg in asg.regs:
                    _rewrite_operand(fn, op, asg, findings, reported)
            if ins.opcode == "COPY":
                regs = ins.explicit_regs
                if len(regs) == 2 and regs[0].phys and regs[0].phys == regs[1].phys and not regs[0].subreg and not regs[1].subreg:
                    continue  # an identity copy, dropped as VirtRegRewriter does
            kept.append(ins)
        block.instructions = kept
    # Registers left virtual (a subregister their assignment lacks) keep their class, so the
    # verifier reports them instead of failing on an unknown class.
    left = {op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands if op.vreg is not None}
    fn.registers = {k: d for k, d in fn.registers.items() if k in left}
    fn.header_text = _clear_registers(fn.header_text)
    fn.liveins = [(r, None) for r, _ in fn.liveins]


def _rewrite_operand(fn: Function, op: Operand, asg: Assignment, findings: list[Finding], reported: set[int | str]) -> None:
    v = op.vreg
    assert v is not None
    reg = asg.regs[v]
    if op.subreg:
        try:
            reg = reg.subreg(op.subreg)
        except TargetError as e:
            if v not in reported:
                reported.add(v)
                findings.append(Finding(
                    "width", "constraints", Place(asg.file, fn.name, -1, -1, asg.lines[v], 1),
                    f"%{v} is assigned ${asg.regs[v].name}, which has no {op.subreg} ({e})", vregs=(f"%{v}",),
                    physregs=(f"${asg.regs[v].name}",)))
            return
    op.vreg = None
    op.phys = reg.name
    op.subreg = None
    op.reg_class = None
    op.llt = None
    op.flags = op.flags | {"renamable"}
    op.text = f"${reg.name}"


def _clear_registers(header: str) -> str:
    """Replace the `registers:` list by `[]` and drop `virtual-reg` names of function live-ins."""
    lines = header.split("\n")
    out: list[str] = []
    skipping = False
    for ln in lines:
        if skipping:
            if ln.startswith((" ", "\t", "-")) or not ln.strip():
                continue
            skipping = False
        if ln.startswith("registers:"):
            out.append("registers:       []")
            skipping = ln.strip() != "registers:       []" and not ln.rstrip().endswith("[]")
            continue
        out.append(re.sub(r"virtual-reg: '%[^']*'", "virtual-reg: ''", ln))
    return "\n".join(out)


@dataclass
class DerivedAssignment:
    """An allocated program read back as an assignment (see `assignment_from_allocation`)."""

    regs: dict[int | str, PhysReg]
    split: list[int | str]  # virtual registers kept in several places: no single assignment
    missing: list[int | str]  # virtual registers no paired operand shows


def assignment_from_allocation(pre: Module, post: Module, target_name: str | None = None) -> DerivedAssignment:
    """The assignment an allocated program implements, for its first function.

    Each virtual register gets its home (`verilocc.pairing.homes`); registers seen only in
    COPYs take the home of the other side of an identity copy, when that is of a file their
    class has; registers seen only in instructions paired among rematerialised copies of one
    key take the home that pairing shows. Split registers have no single answer and are listed
    instead. (The result is an assignment to verify, not a verified one.)
    """
    from verilocc.pairing.alignment import align_functions
    from verilocc.pairing.fixed_objects import with_fixed_objects_named
    from verilocc.pairing.homes import collect_homes, home_of
    from verilocc.analysis.operands import physreg_at, vreg_classes
    from verilocc.target import get_target

    pf, qf = with_fixed_objects_named(pre.functions[0], post.functions[0])
    target = get_target(target_name or pf.target_cpu or "")
    classes = vreg_classes(pf)
    alignment = align_functions(pf, qf)
    homes = collect_homes(pf, qf, alignment, classes, target)
    regs: dict[int | str, PhysReg] = {}
    split: list[int | str] = []
    for v, h in homes.homes.items():
        if len(h) == 1:
            regs[v] = next(iter(h.values())).reg
        else:
            split.append(v)
    # From instructions paired among copies of one key, and rematerialised copies of the one
    # instruction of their key.
    guessed: dict[int | str, PhysReg] = {}
    for b, post_index, origins, paired in homes.rerun:
        origin = paired if paired is not None else (origins[0] if len(origins) == 1 else None)
        if origin is None:
            continue
        for po, qo in zip(origin.operands, qf.block(b).instructions[post_index].operands):
            if po.kind == "reg" and po.vreg is not None and qo.kind == "reg" and qo.phys is not None:
                home = home_of(physreg_at(qf, qo, qo.phys), classes[po.vreg], po.subreg, target)
                if home is not None and home.file in classes[po.vreg].files:
                    guessed.setdefault(po.vreg, home)
    changed = True
    while changed:
        changed = False
        for block in pf.blocks:
            for ins in block.instructions:
                if ins.opcode != "COPY":
                    continue
                ops = ins.explicit_regs
                if len(ops) != 2 or ops[0].subreg or ops[1].subreg:
                    continue
                dst, src = ops
                for a, partner in ((dst, src), (src, dst)):
                    if a.vreg is None or a.vreg in regs or a.vreg in split:
                        continue
                    other = (regs.get(partner.vreg) if partner.vreg is not None
                             else (parse_physreg(partner.phys) if partner.phys else None))
                    if (other is not None and len(other.units) == classes[a.vreg].width_units
                            and other.file in classes[a.vreg].files):
                        regs[a.vreg] = other
                        changed = True
        for v, home in guessed.items():
            if v not in regs and v not in split:
                regs[v] = home
                changed = True
        guessed = {}
    missing = sorted((v for v in classes if v not in regs and v not in split), key=str)
    return DerivedAssignment(regs, sorted(split, key=str), missing)
