"""Whole-wave-mode values: the virtual registers whose inactive lanes matter.

A value computed in whole-wave mode (WWM) is read in lanes that are inactive in the normal
program, so LLVM keeps such values apart from ordinary VGPR values: LLVM 19 assigns them
before the VGPR allocator (SIPreAllocateWWMRegs) and LLVM 20 and later in a WWM allocation
stage of their own (PR #93526); either way the registers they get are listed in the allocated
function's ``machineFunctionInfo.wwmReservedRegs`` and reserved for everything else
(SIRegisterInfo::getReservedRegs). A register that held an ordinary value as well could have
its inactive lanes overwritten by that value's code, which is the miscompile PR #93526 fixed.

A virtual register is a WWM value when the virtual program says so in any of the ways LLVM
marks them (SIWholeQuadMode, SIPreAllocateWWMRegs::processDef):
- its declaration carries the ``WWM_REG`` flag (LLVM 20 and later);
- it is defined by `V_SET_INACTIVE_B32`/`_B64`, `STRICT_WWM`, `STRICT_WQM`, `WWM_COPY`;
- it is defined inside a strict whole-wave region of a block, between `ENTER_STRICT_WWM` /
  `ENTER_STRICT_WQM` and the matching `EXIT_STRICT_WWM` / `EXIT_STRICT_WQM`.
"""

from __future__ import annotations

from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function

#: Opcodes whose results are whole-wave values wherever they occur.
WWM_DEF_OPCODES = frozenset({
    "V_SET_INACTIVE_B32", "V_SET_INACTIVE_B64", "STRICT_WWM", "STRICT_WQM", "WWM", "WWM_COPY",
})
REGION_OPENERS = frozenset({"ENTER_STRICT_WWM", "ENTER_STRICT_WQM"})
REGION_CLOSERS = frozenset({"EXIT_STRICT_WWM", "EXIT_STRICT_WQM"})


def wwm_vregs(fn: Function) -> frozenset[VReg]:
    """The virtual registers of `fn` that hold whole-wave values (see the module docstring)."""
    out: set[VReg] = {decl.id for decl in fn.registers.values() if "WWM_REG" in decl.flags}
    for block in fn.blocks:
        inside = False
        for ins in block.instructions:
            if ins.opcode in REGION_OPENERS:
                inside = True
                continue
            if ins.opcode in REGION_CLOSERS:
                inside = False
                continue
            if inside or ins.opcode in WWM_DEF_OPCODES:
                out.update(d.vreg for d in ins.defs if d.vreg is not None)
    return frozenset(out)


__all__ = ["REGION_CLOSERS", "REGION_OPENERS", "WWM_DEF_OPCODES", "wwm_vregs"]
