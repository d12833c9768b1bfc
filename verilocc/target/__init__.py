"""Target description of AMDGPU for register allocation: registers, subregisters, classes, gfx facts.

Conventions the rest of verilocc relies on:

* Register names are llc's, lower case, without ``$`` (``vgpr4_vgpr5``); `parse_physreg`
  accepts either form.
* ``PhysReg.units`` are opaque 16-bit unit ids in memory order (low half first); two
  registers alias iff their units intersect.
* LLVM lane masks give each 32-bit register two bits with ``hi16`` on the lower one
  (``hi16 = 0x1``, ``lo16 = 0x2``, ``sub1 = 0xC``); use `PhysReg.lanes` or
  `subregs.mask_to_slots`, never index ``units`` by lane bit.
* Unknown targets, classes, registers and subregister indices raise `TargetError`.
"""

from verilocc.target.classes import RegisterClass, base_class_names, get_class, is_class_name
from verilocc.target.gfx import (
    Budget,
    Reservations,
    Target,
    default_budget,
    function_budget,
    function_reserved_registers,
    get_target,
    is_reserved,
    reservations,
    reserved_registers,
    target_for_function,
    target_names,
)
from verilocc.target.registers import (
    PhysReg,
    RegFile,
    file_register,
    is_defined,
    parse_physreg,
    register_for_units,
    units_overlap,
)
from verilocc.target.subregs import (
    compose,
    index_for_range,
    is_subreg_index,
    mask_to_slots,
    slots_to_mask,
    subreg_mask,
    subreg_range,
)

__all__ = [
    "Budget",
    "PhysReg",
    "RegFile",
    "RegisterClass",
    "Reservations",
    "Target",
    "base_class_names",
    "compose",
    "default_budget",
    "file_register",
    "function_budget",
    "function_reserved_registers",
    "get_class",
    "get_target",
    "index_for_range",
    "is_class_name",
    "is_defined",
    "is_reserved",
    "is_subreg_index",
    "mask_to_slots",
    "parse_physreg",
    "register_for_units",
    "reservations",
    "reserved_registers",
    "slots_to_mask",
    "subreg_mask",
    "subreg_range",
    "target_for_function",
    "target_names",
    "units_overlap",
]
