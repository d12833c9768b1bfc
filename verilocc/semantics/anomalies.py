"""LLVM liveness anomalies: reads of the virtual program that the allocated one does not
honour, shown harmless because the instruction's results do not depend on the lanes read
wrong (`verilocc.semantics.bitvector.ignores_slots`). Layer 2 records them instead of errors;
the equivalence layer then reads those lanes as the virtual program does, and layer 1 takes
them as not read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from verilocc.analysis.operands import VReg
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.pairing.alignment import FunctionAlignment
from verilocc.semantics.holdings import Tag


@dataclass(frozen=True)
class Anomaly:
    """A read of the virtual program that the allocated one does not honour, shown harmless:
    the instruction's results do not depend on the lanes it reads wrong
    (`verilocc.semantics.bitvector.ignores_slots`). LLVM's liveness knew the lanes were
    unused; its MIR says they are read (an *LLVM liveness anomaly*)."""

    block: int
    post_index: int
    pre_index: int
    position: int  # operand position in the instruction
    slots: tuple[int, ...]  # 16-bit slots of the operand that hold the wrong value
    opcode: str
    line: int
    column: int
    what: str  # "reads `$sgpr2_sgpr3` where %14.sub2_sub3 (lanes 0x30) holds %45[slot 0] ..."


class HarmlessReads:
    def __init__(self, pre: Function, alignment: FunctionAlignment, tags_of: Callable[[Operand], list[Tag]]) -> None:
        self.pre = pre
        self.alignment = alignment
        self.tags_of = tags_of
        self._read_slots: dict[VReg, set[int]] | None = None  # `observed_bits`
        self._ignores: dict[tuple[int, int, tuple[int, ...]], tuple[Instruction, bool]] = {}
        # the inputs of each recorded anomaly's proof (`query`)
        self._proofs: dict[Anomaly, tuple[Instruction, dict[int, int], dict[str, int]]] = {}

    def discharge(self, block: int, post_index: int, pi: Instruction, qo: Operand, position: int,
                  slots: list[int], what: str) -> Anomaly | None:
        """Whether a wrong read of `slots` of operand `position` is harmless: the results of the
        instruction are the same whatever those slots hold (proved with its bit-precise
        semantics). If so, the `Anomaly` to record; the equivalence layer then reads those slots
        as the virtual program does, and layer 1 takes them as not read."""
        from verilocc.semantics.bitvector import ignores_slots

        key = (id(pi), position, tuple(slots))
        ignored = self._ignores.get(key)
        widths = {k: 16 * len(self.tags_of(op)) for k, op in enumerate(pi.operands)
                  if op.kind == "reg" and not op.is_def and not op.is_noreg}
        if ignored is None or ignored[0] is not pi:
            ignored = self._ignores[key] = (pi, ignores_slots(pi, position, slots, widths,
                                                              observed=self.observed_bits(pi)) is True)
        if not ignored[1]:
            return None
        pre_index = next((st.pre for st in self.alignment.steps.get(block, ())
                          if st.post == post_index and st.pre is not None), -1)
        a = Anomaly(block, post_index, pre_index, position, tuple(slots), pi.opcode, qo.line, qo.column, what)
        self._proofs[a] = (pi, widths, self.observed_bits(pi))
        return a

    def query(self, a: Anomaly) -> list[Any] | None:
        """The z3 assertions whose unsatisfiability shows `a` harmless: the query
        `ignores_slots` decides (`slots_query`). Where the discharge needed no solver (a packed
        component no result selects), the same formula when the opcode has a bit-precise
        meaning, else the selection of packed components (`packed_selection_query`); None when
        neither can be written, or `a` is not one this object recorded."""
        from verilocc.semantics.bitvector import packed_selection_query, slots_query

        got = self._proofs.get(a)
        if got is None:
            return None
        pi, widths, observed = got
        query = slots_query(pi, a.position, list(a.slots), widths, observed)
        return query if query is not None else packed_selection_query(pi, a.position, list(a.slots), observed)

    def observed_bits(self, pi: Instruction) -> dict[str, int]:
        """For the first explicit def of `pi`, a virtual register written whole: the bits of
        it that any use in the function reads (16-bit slots of every use operand, `undef` uses
        read nothing). A value whose other bits no instruction reads may differ there. A value
        no instruction reads at all is compared whole: a wrong read that feeds only dead code
        stays an error, not an anomaly."""
        defs = [op for op in pi.explicit_regs if op.is_def]
        if not defs or defs[0].vreg is None or defs[0].subreg:
            return {}
        if self._read_slots is None:
            read: dict[VReg, set[int]] = {}
            for b in self.pre.blocks:
                for ins in b.instructions:
                    for op in ins.operands:
                        if op.kind == "reg" and not op.is_def and op.vreg is not None and not op.has("undef"):
                            read.setdefault(op.vreg, set()).update(cast(int, t[1]) for t in self.tags_of(op))
            self._read_slots = read
        slots = self._read_slots.get(defs[0].vreg, set())
        return {"d0": sum(0xFFFF << (16 * s) for s in slots)} if slots else {}
