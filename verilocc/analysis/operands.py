"""Resolve register operands against the target: virtual lanes and physical units.

A virtual operand `%7.sub1` becomes (vreg 7, lane mask of sub1 within %7's class); a
physical operand `$vgpr4_vgpr5` becomes its 16-bit register units. Every unknown class,
register or subregister index is an InputError at the operand's line and column.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from verilocc.errors import InputError, TargetError
from verilocc.mir.model import Function, Operand
from verilocc.target import (
    PhysReg,
    RegisterClass,
    Target,
    function_reserved_registers,
    get_class,
    parse_physreg,
    slots_to_mask,
    subreg_mask,
)
from verilocc.target.classes import LEGACY_RETURN_CLASSES, legacy_return_address_class
from verilocc.target.gfx import has_trap_handler
from verilocc.target.limits import Limits, attribute_limits

VReg = int | str


@dataclass(init=False)
class RegRef:
    """A register operand after resolution. (Never changed once made; not frozen, with its
    `__init__` written out, because it is made for every operand every layer reads: a frozen
    dataclass, or the interpreted `__init__` dataclasses writes, takes several times longer.)"""

    op: Operand
    vreg: VReg | None  # virtual register, or None for a physical one
    mask: int  # lanes of the virtual register this operand touches
    phys: PhysReg | None  # physical register (with the subregister applied)

    def __init__(self, op: Operand, vreg: VReg | None, mask: int, phys: PhysReg | None) -> None:
        self.op = op
        self.vreg = vreg
        self.mask = mask
        self.phys = phys

    @property
    def units(self) -> tuple[int, ...]:
        return self.phys.units if self.phys is not None else ()


@functools.lru_cache(maxsize=None)
def _full_mask(width_units: int) -> int:
    return slots_to_mask(range(width_units))


def full_mask(cls: RegisterClass) -> int:
    """The LLVM lane mask of a whole register of `cls`."""
    return _full_mask(cls.width_units)


_EVEN = 0x5555_5555_5555_5555


def slot_mask(lane_mask: int) -> int:
    """LLVM lane mask -> bit mask over 16-bit slots (slot s is lane bit s ^ 1, see target.subregs)."""
    return ((lane_mask & _EVEN) << 1) | ((lane_mask >> 1) & _EVEN)


#: LLVM 13 and 14's returns through a return address register.
LEGACY_RETURNS = frozenset({"S_SETPC_B64_return", "S_SETPC_B64_return_gfx"})


def returns_through_virtual_register(fn: Function) -> bool:
    """Whether `fn` returns as LLVM 13 and 14 write it: `S_SETPC_B64_return %ra` (amdgpu_gfx
    functions: `S_SETPC_B64_return_gfx %ra`), the return address in a virtual register (LLVM 15
    and later return with `SI_RETURN` until prolog and epilog insertion)."""
    return any(ins.opcode in LEGACY_RETURNS and any(op.vreg is not None for op in ins.operands)
               for block in fn.blocks for ins in block.instructions)


def vreg_classes(fn: Function) -> dict[VReg, RegisterClass]:
    """The register class of every virtual register: `registers:` first, then annotations."""
    names: dict[VReg, tuple[str, int, int]] = {}
    for vid, decl in fn.registers.items():
        if decl.reg_class and decl.reg_class != "_":
            names[vid] = (decl.reg_class, decl.line, 1)
    for block in fn.blocks:
        for ins in block.instructions:
            for op in ins.operands:
                if op.vreg is not None and op.reg_class and op.vreg not in names:
                    names[op.vreg] = (op.reg_class, op.line, op.column)
    out: dict[VReg, RegisterClass] = {}
    legacy = returns_through_virtual_register(fn)
    for vid, (name, line, col) in names.items():
        try:
            out[vid] = get_class(name)
        except TargetError as e:
            raise InputError(str(e), fn.file, line, col) from None
        if legacy and out[vid].name in LEGACY_RETURN_CLASSES:
            out[vid] = legacy_return_address_class(out[vid].name)
    for block in fn.blocks:
        for ins in block.instructions:
            for op in ins.operands:
                if op.vreg is not None and op.vreg not in out:
                    raise InputError(f"virtual register %{op.vreg} has no register class", fn.file, op.line, op.column)
                if op.vreg is not None and op.reg_class and op.reg_class != out[op.vreg].name:
                    # An annotation must name a known class, the one the register already has.
                    try:
                        cls = get_class(op.reg_class)
                    except TargetError as e:
                        raise InputError(str(e), fn.file, op.line, op.column) from None
                    if legacy and cls.name in LEGACY_RETURN_CLASSES:
                        cls = legacy_return_address_class(cls.name)
                    if cls.name != out[op.vreg].name:
                        raise InputError(f"conflicting register classes for %{op.vreg}: {op.reg_class}, "
                                         f"previously {out[op.vreg].name}", fn.file, op.line, op.column)
    return out


def check_header_registers(fn: Function, target: Target) -> None:
    """The registers `machineFunctionInfo` names must exist: an InputError at the first unknown one."""
    try:
        function_reserved_registers(fn.machine_function_info, target)
    except TargetError as e:
        line, col = fn.line + 1, 1
        for k, text in enumerate(fn.header_text.split("\n")):
            bad = next((m for m in re.finditer(r"\$[A-Za-z_]\w*", text) if not _is_physreg(m.group())), None)
            if bad is not None:
                line, col = fn.line + 1 + k, bad.start() + 1
                break
        raise InputError(str(e), fn.file, line, col) from None


def function_limits(fn: Function, target: Target) -> Limits:
    """The register limits of `fn` on `target`, from its attributes (`attribute_limits`)."""
    return attribute_limits(target, fn.ir_attributes, fn.machine_function_info, fn.calling_convention,
                            trap_handler=has_trap_handler(fn.triple, fn.target_features or ""))


def _is_physreg(name: str) -> bool:
    try:
        parse_physreg(name)
    except TargetError:
        return False
    return True


def physreg_at(fn: Function, op: Operand, name: str) -> PhysReg:
    try:
        reg = parse_physreg(name)
        return reg.subreg(op.subreg) if op.subreg else reg
    except TargetError as e:
        raise InputError(str(e), fn.file, op.line, op.column) from None


def resolve_operand(fn: Function, op: Operand, classes: dict[VReg, RegisterClass]) -> RegRef | None:
    """Resolve a register operand; None for `$noreg` / `_`."""
    if op.vreg is not None:
        cls = classes[op.vreg]
        if op.subreg:
            try:
                mask = subreg_mask(op.subreg)
            except TargetError as e:
                raise InputError(str(e), fn.file, op.line, op.column) from None
            if mask & ~full_mask(cls):
                raise InputError(
                    f"subregister {op.subreg} is outside %{op.vreg}:{cls.name}", fn.file, op.line, op.column
                )
        else:
            mask = full_mask(cls)
        return RegRef(op=op, vreg=op.vreg, mask=mask, phys=None)
    if op.phys is not None:
        return RegRef(op=op, vreg=None, mask=0, phys=physreg_at(fn, op, op.phys))
    return None
