"""Finish a materialised allocation the way VirtRegRewriter leaves it, so llc can continue.

`llc -start-after=virtregrewriter,N` runs the machine verifier on what it reads: after
allocation every block must list the physical registers live into it (with lane masks when
only some lanes are), and a subregister def's `undef` flag no longer applies (the rewriter
clears it, VirtRegRewriter::rewrite). `materialise` produces the program the verifier
proves; this adds those two facts from the virtual program's liveness. Neither changes what
the program computes, and the result is verified as written.
"""

from __future__ import annotations

from collections.abc import Mapping

from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.liveness import compute_liveness
from verilocc.analysis.operands import VReg, full_mask, vreg_classes
from verilocc.mir.model import Function
from verilocc.target import PhysReg


def finish_for_llc(pre: Function, post: Function, regs: Mapping[VReg, PhysReg]) -> None:
    classes = vreg_classes(pre)
    liveness = compute_liveness(pre, build_cfg(pre), classes)
    pre_blocks = {b.number: b for b in pre.blocks}
    for block in post.blocks:
        live = liveness.live_in.get(block.number)
        entries: dict[str, int | None] = {r: m for r, m in block.liveins}
        if live is not None:
            defined = liveness.defined_in.get(block.number, {})
            for v in sorted(live.vregs, key=str):
                mask = live.vregs[v] & defined.get(v, 0)
                reg = regs.get(v)
                if not mask or reg is None:
                    continue
                full = full_mask(classes[v])
                entries[reg.name] = None if mask == full else mask
        if block.number in pre_blocks:
            for r, m in pre_blocks[block.number].liveins:
                entries.setdefault(r, m)
        block.liveins = sorted(entries.items())
        for ins in block.instructions:
            for op in ins.operands:
                if op.kind == "reg" and op.is_def and op.has("undef") and op.has("renamable"):
                    op.flags = op.flags - {"undef"}
