"""Findings placed on the occupancy grid: the instruction, the registers, the writer and the reader.

A finding names its place (a source line of the allocated program, or of the virtual one) and
the physical registers involved. On the grid that is a row and some columns. Two more rows
make a clobber visible: the instruction that *overwrote* the registers and the one that
*reads* them expecting the old value. Which of the two the finding's own instruction is
follows from what it does with those registers, not from the finding's kind:

- it writes them (layer 1's "still live when %13 is defined in $vgpr1"): it is the writer,
  and the reader is the next instruction, along the control flow, that reads them;
- it reads them (layer 2's "reads $vgpr1 expecting %8, but it holds %13"): it is the reader,
  and the writer is the last instruction before it, against the control flow, that writes them.

A finding in the virtual program (a dropped instruction) is placed at the first point of its
block; a function-level one at no point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verilocc.analysis.cfg import build_cfg
from verilocc.errors import TargetError
from verilocc.findings import Finding
from verilocc.mir.model import Function
from verilocc.target import parse_physreg
from verilocc.view.occupancy import Occupancy


@dataclass(frozen=True)
class Mark:
    finding: Finding
    point: int | None  # the finding's instruction
    columns: tuple[int, ...]  # the registers it names
    writer: int | None  # the instruction that overwrote them
    reader: int | None  # the instruction that reads them


_REGISTER = re.compile(r"\$?([a-z][a-z0-9_]*)")


def _columns(names: tuple[str, ...], occ: Occupancy) -> tuple[int, ...]:
    """Columns of the registers a finding names (`$vgpr0_vgpr1`, `$vgpr2_vgpr3[lanes 0xC]`)."""
    unit_column = {u: k for k, c in enumerate(occ.columns) for u in c.units}
    out: set[int] = set()
    for name in names:
        m = _REGISTER.match(name.strip())
        if m is None:
            continue
        try:
            reg = parse_physreg(m.group(1))
        except TargetError:
            continue
        out.update(unit_column[u] for u in reg.units if u in unit_column)
    return tuple(sorted(out))


def _operand_columns(fn: Function, occ: Occupancy, point: int, column: int) -> tuple[int, ...]:
    """The register of the operand at `column` of the instruction at `point` (a finding
    without register names still points at an operand)."""
    p = occ.points[point]
    ins = fn.block(p.block).instructions[p.index]
    for op in ins.operands:
        if op.kind == "reg" and op.phys is not None and op.column == column:
            return _columns((op.phys,), occ)
    return ()


def _operand_role(fn: Function, occ: Occupancy, point: int, column: int) -> str | None:
    """"def" or "use" for the register operand the finding's column points at, else None
    (an instruction that reads and writes one register is the reader of a wrong read and the
    writer of a clobber: the operand says which)."""
    p = occ.points[point]
    for op in fn.block(p.block).instructions[p.index].operands:
        if op.kind == "reg" and op.phys is not None and op.column == column:
            return "def" if op.is_def else "use"
    return None


class _Flow:
    """The allocated program's points with their control-flow neighbours."""

    def __init__(self, fn: Function, occ: Occupancy) -> None:
        cfg = build_cfg(fn)
        self.first = {b.number: start for b, (_, start) in zip(fn.blocks, occ.block_starts)}
        self.last = {b.number: self.first[b.number] + len(b.instructions) - 1 for b in fn.blocks}
        self.block_of = [p.block for p in occ.points]
        self.succ = {b.number: cfg.successors(b.number) for b in fn.blocks}
        self.pred = {b.number: cfg.predecessors(b.number) for b in fn.blocks}

    def forward(self, point: int) -> list[int]:
        """Points after `point`, in the order a breadth-first walk of the CFG reaches them."""
        b = self.block_of[point]
        return list(range(point + 1, self.last[b] + 1)) + self._walk(self.succ, b, forward=True)

    def backward(self, point: int) -> list[int]:
        """Points before `point`, nearest first, against the control flow."""
        b = self.block_of[point]
        return list(range(point - 1, self.first[b] - 1, -1)) + self._walk(self.pred, b, forward=False)

    def _walk(self, edges: dict[int, list[int]], start: int, forward: bool) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        queue = list(edges[start])
        while queue:
            s = queue.pop(0)
            if s in seen:
                continue
            seen.add(s)
            span = range(self.first[s], self.last[s] + 1)
            out.extend(span if forward else reversed(span))
            queue.extend(edges[s])
        return out


def place_findings(findings: list[Finding], fn: Function, occ: Occupancy,
                   block_numbers: dict[int, int] | None = None) -> list[Mark]:
    """A mark per finding of `fn` (same order as `findings`). `block_numbers`: the virtual
    program's block number -> the allocated file's, for findings placed in the virtual program."""
    flow = _Flow(fn, occ) if fn.blocks else None
    first_of = dict(zip((b.number for b in fn.blocks), (s for _, s in occ.block_starts)))
    block_first = {v: first_of[q] for v, q in (block_numbers or {q: q for q in first_of}).items() if q in first_of}
    marks: list[Mark] = []
    for f in findings:
        point: int | None = None
        if f.place.file == fn.file and f.place.line:
            point = occ.point_of_line(f.place.line)
        if point is None and f.place.block in block_first and f.place.file != fn.file:
            point = block_first[f.place.block]
        columns = _columns(f.physregs, occ)
        if point is not None and not columns and f.place.file == fn.file:
            columns = _operand_columns(fn, occ, point, f.place.column)
        writer = reader = None
        if point is not None and columns and flow is not None:
            wanted = set(columns)
            role = _operand_role(fn, occ, point, f.place.column) if f.place.file == fn.file else None
            writes, reads = bool(wanted & set(occ.writes[point])), bool(wanted & set(occ.reads[point]))
            if role == "def" or (role is None and writes):
                writer = point
                reader = next((q for q in flow.forward(point) if wanted & set(occ.reads[q])), None)
            elif role == "use" or reads:
                reader = point
                writer = next((q for q in flow.backward(point) if wanted & set(occ.writes[q])), None)
        marks.append(Mark(f, point, columns, writer, reader))
    return marks
