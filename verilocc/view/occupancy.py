"""The occupancy of an allocation: which value each physical register holds at each point.

Rows are program points, the instructions of the allocated program in layout order; columns
are 32-bit registers: the SGPRs, VCC, the VGPRs and the AGPRs, each file up to the highest
register the function names. A cell is *occupied* when its register is live across the
instruction in the allocated program's own lane liveness (`verilocc.analysis.liveness` over
physical units): read by it, written by it, or live just before or after it. An occupied cell
is labelled with the value it holds there:

- with the virtual program: the virtual register whose value the register holds, as layer 2
  (value flow) tracks it (`ValueFlowChecker.replay`): where it holds several (a copy the
  allocator coalesced), the one live in the virtual program at that point; a fixed register
  of the virtual program (an argument, $vcc) by its name; a live register that holds no
  value of the virtual program is labelled so (the picture of a wrong read);
- without it: the instruction that last wrote the register, in layout order.

Consecutive cells of a column with one label are a *run* (first point, length, value): the
page and the figure draw runs as live-range bars, and the page carries them as its data.
The live count of each file per point is the register pressure.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.instructions import is_spill_code
from verilocc.analysis.liveness import Effect, compute_liveness
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.analysis.usage import highest_registers, named_registers
from verilocc.errors import TargetError
from verilocc.mir.model import Function, Instruction
from verilocc.mir.printer import print_instruction
from verilocc.semantics.holdings import State, Tag
from verilocc.semantics.valueflow import ValueFlowChecker
from verilocc.target import PhysReg, RegFile, file_register, parse_physreg, register_for_units, slots_to_mask
from verilocc.verify import PreparedPair

#: Register files as the page groups them, in column order, with their short ISA prefix.
FILES: tuple[tuple[str, str], ...] = (("sgpr", "s"), ("vgpr", "v"), ("agpr", "a"))
#: VCC is the one special register the allocator hands out (SReg_64 contains it).
SPECIAL_COLUMNS = ("vcc_lo", "vcc_hi")


@dataclass(frozen=True)
class Column:
    name: str  # "s4", "v10", "a0", "vcc_lo"
    file: str  # "sgpr", "vgpr", "agpr", "special"
    units: tuple[int, ...]


@dataclass(frozen=True)
class Point:
    """One instruction of the allocated program."""

    block: int  # block number as the allocated file writes it
    index: int  # instruction index in the block
    line: int
    text: str  # the instruction as llc prints it
    kind: str  # "spill", "reload", "copy" or ""


@dataclass(frozen=True)
class Value:
    label: str  # "%41", "$sgpr4 (fixed)", "no value", "$vgpr4_vgpr5 = V_MOV_B32 (line 12)"
    detail: str  # the virtual register's class, or the defining opcode


#: A run of one column: first point, number of points, value index.
Run = tuple[int, int, int]


@dataclass
class Occupancy:
    function: str
    points: list[Point]
    columns: list[Column]
    values: list[Value]
    runs: list[list[Run]]  # per column
    reads: list[tuple[int, ...]]  # per point: columns the instruction reads
    writes: list[tuple[int, ...]]  # per point: columns it writes
    pressure: dict[str, list[int]]  # file -> live registers per point
    block_starts: list[tuple[str, int]] = field(default_factory=list)  # (label, first point)
    with_virtual: bool = False  # labelled with the virtual program's registers

    def point_of_line(self, line: int) -> int | None:
        for k, p in enumerate(self.points):
            if p.line == line:
                return k
        return None

    def value_at(self, point: int, column: int) -> int | None:
        for start, length, value in self.runs[column]:
            if start <= point < start + length:
                return value
        return None


def point_kind(ins: Instruction) -> str:
    if is_spill_code(ins):
        return "reload" if ins.opcode.endswith("_RESTORE") or ins.opcode.startswith("SI_RESTORE") else "spill"
    return "copy" if ins.opcode == "COPY" else ""


def register_columns(fn: Function) -> list[Column]:
    """SGPRs, VCC, VGPRs and AGPRs, each file from 0 to the highest register `fn` names."""
    top = {file.value: n for file, n in highest_registers(fn).items()}
    uses_vcc = any(reg.name.startswith("vcc") for reg in named_registers(fn))
    columns: list[Column] = []
    for file, short in FILES:
        if file == "vgpr" and uses_vcc:
            columns.extend(Column(n, "special", parse_physreg(n).units) for n in SPECIAL_COLUMNS)
        columns.extend(Column(f"{short}{i}", file, file_register(RegFile(file), i).units) for i in range(top[file]))
    return columns


@dataclass
class _PointFacts:
    """Liveness facts of one point, as column sets."""

    reads: frozenset[int]
    writes: frozenset[int]
    after: frozenset[int]  # occupied after the instruction (live, or written even if dead)
    dying: frozenset[int]  # read and free after it

    @property
    def occupied(self) -> frozenset[int]:
        return self.after | self.dying


def _columns_of(units: object, unit_column: dict[int, int]) -> frozenset[int]:
    return frozenset(unit_column[u] for u in units if u in unit_column)  # type: ignore[attr-defined]


def _facts(fn: Function, unit_column: dict[int, int], columns: list[Column]) -> tuple[list[_PointFacts], dict[str, list[int]]]:
    """Per point: the columns read, written, occupied; per file the live count (the larger of
    the registers live before and live after or written by the instruction)."""
    cfg = build_cfg(fn)
    liveness = compute_liveness(fn, cfg, vreg_classes(fn))
    facts: list[_PointFacts] = []
    pressure: dict[str, list[int]] = {file: [] for file, _ in FILES}
    file_of = [c.file for c in columns]
    for b in fn.blocks:
        after_units = dict(liveness.walk_backward(b.number))
        effects: list[Effect] = liveness.effects[b.number]
        for idx in range(len(b.instructions)):
            eff = effects[idx]
            use_units = {u for r in eff.uses for u in r.units}
            def_units = {u for r in eff.defs for u in r.units}
            live_after = after_units[idx].units
            before = (live_after - def_units) | use_units
            reads = _columns_of(use_units, unit_column)
            writes = _columns_of(def_units, unit_column)
            after = _columns_of(live_after, unit_column) | writes
            before_cols = _columns_of(before, unit_column)
            facts.append(_PointFacts(reads, writes, after, before_cols - after))
            for file in pressure:
                pressure[file].append(max(sum(1 for c in before_cols if file_of[c] == file),
                                          sum(1 for c in after if file_of[c] == file)))
    return facts, pressure


class _Labels:
    """Values in order of first appearance (deterministic: the walk is in layout order)."""

    def __init__(self) -> None:
        self.values: list[Value] = []
        self.index: dict[object, int] = {}

    def get(self, key: object, label: str, detail: str) -> int:
        got = self.index.get(key)
        if got is None:
            got = self.index[key] = len(self.values)
            self.values.append(Value(label, detail))
        return got


def _vreg_key(v: VReg) -> tuple[int, int, str]:
    return (0, v, "") if isinstance(v, int) else (1, 0, v)


class _Holdings:
    """Names the value a register holds in a value-flow state. A location keeps one tag set
    object until it changes, so the candidates of each pair of sets are worked out once."""

    def __init__(self, labels: _Labels, classes: dict[VReg, str]) -> None:
        self.labels = labels
        self.classes = classes
        self.cache: dict[tuple[frozenset[Tag], ...], tuple[list[tuple[VReg, int]], int]] = {}

    def candidates(self, sets: tuple[frozenset[Tag], ...]) -> tuple[list[tuple[VReg, int]], int]:
        """Virtual lanes held, ordered by register (with each lane's LLVM lane mask), and the
        value to show when none of them is live."""
        tags: set[Tag] = set().union(*sets)
        lanes: dict[VReg, int] = {}
        for t in tags:
            if t[0] != "$":
                v: VReg = t[0]  # type: ignore[assignment]
                lanes[v] = lanes.get(v, 0) | slots_to_mask((int(t[1]),))  # type: ignore[call-overload]
        virtual = sorted(lanes.items(), key=lambda x: _vreg_key(x[0]))
        if virtual:
            v = virtual[0][0]
            fallback = self.virtual(v)
        else:
            fixed = sorted(int(t[1]) for t in tags if t[0] == "$")  # type: ignore[call-overload]
            if fixed:
                u = fixed[0]
                reg = register_for_units((u - u % 2, u - u % 2 + 1)) or register_for_units((u,))
                name = f"${reg.name}" if reg is not None else f"unit {u}"
                fallback = self.labels.get(("$", name), f"{name} (fixed)", "a physical register of the virtual program")
            else:
                fallback = self.labels.get(("none",), "no value", "holds no value of the virtual program")
        return virtual, fallback  # type: ignore[return-value]

    def virtual(self, v: VReg) -> int:
        got = self.labels.index.get(("v", v))
        return got if got is not None else self.labels.get(("v", v), f"%{v}", self.classes.get(v, ""))

    def value(self, state: State, column: Column, live: dict[VReg, int]) -> int:
        """A virtual register (one live in the virtual program first), else the virtual
        program's fixed register, else nothing."""
        sets = tuple(state.holds(u) for u in column.units)
        if not any(sets) and any(state.lanes.get(u) for u in column.units):
            return self.labels.get(("lanes",), "spilled SGPRs", "a VGPR whose lanes hold spilled SGPRs")
        got = self.cache.get(sets)
        if got is None:
            got = self.cache[sets] = self.candidates(sets)
        virtual, fallback = got
        if len(virtual) < 2:
            return fallback  # one virtual register (or none): the same whether live or not
        for v, lane in virtual:
            if live.get(v, 0) & lane:
                return self.virtual(v)
        return fallback


def _virtual_cells(pair: PreparedPair, post: Function, columns: list[Column], facts: list[_PointFacts],
                   labels: _Labels) -> list[dict[int, int]] | None:
    """Cells labelled by value flow; None when its fixed point fails (the layer says so)."""
    vf = ValueFlowChecker(pair.pre, pair.post, pair.pre_classes, pair.alignment, pair.pre_cfg)
    if not vf.fixed_point():
        return None
    holdings = _Holdings(labels, {v: c.name for v, c in pair.pre_classes.items()})
    pre_live = _pre_live_after(pair)
    cells: list[dict[int, int]] = [{} for _ in facts]
    first = 0
    for k, block in enumerate(post.blocks):
        number = pair.post.blocks[k].number  # the virtual program's number of this block
        if number not in vf.entry_states or number not in pair.alignment.steps:
            first += len(block.instructions)
            continue
        live: dict[VReg, int] = pre_live.get((number, -1), {})
        for decoded, state, done in vf.replay(number):
            q = decoded.step.post
            if q is not None:
                f = facts[first + q]
                wanted = f.after if done else f.dying
                row = cells[first + q]
                for c in sorted(wanted):
                    row[c] = holdings.value(state, columns[c], live)
            if done and decoded.step.pre is not None:
                live = pre_live.get((number, decoded.step.pre), live)
        first += len(block.instructions)
    return cells


def _pre_live_after(pair: PreparedPair) -> dict[tuple[int, int], dict[VReg, int]]:
    """(block, instruction) -> the virtual program's live lanes after it; index -1: at entry."""
    liveness = compute_liveness(pair.pre, pair.pre_cfg, pair.pre_classes)
    out: dict[tuple[int, int], dict[VReg, int]] = {}
    for b in pair.pre.blocks:
        out[(b.number, -1)] = dict(liveness.live_in[b.number].vregs)
        for idx, after in liveness.walk_backward(b.number):
            out[(b.number, idx)] = after.vregs
    return out


def _physical_cells(post: Function, facts: list[_PointFacts], labels: _Labels,
                    columns: list[Column]) -> list[dict[int, int]]:
    """Cells labelled by the instruction that last wrote the register in layout order."""
    holder: dict[int, int] = {}
    cells: list[dict[int, int]] = []
    unit_column = {u: k for k, c in enumerate(columns) for u in c.units}
    p = 0
    for b in post.blocks:
        for ins in b.instructions:
            f = facts[p]
            row: dict[int, int] = {}
            for c in sorted(f.dying):
                row[c] = holder.get(c, labels.get(("in", c), f"${_long_name(columns[c])} (live-in)", "live on entry"))
            for position, op in enumerate(ins.operands):
                if op.kind != "reg" or not op.is_def or op.phys is None:
                    continue
                try:
                    units = _op_units(op.phys, op.subreg)
                except TargetError:
                    continue
                value = labels.get(("def", p, position), f"${op.phys} = {ins.opcode} (line {ins.line})", ins.opcode)
                for c in sorted(_columns_of(units, unit_column)):
                    holder[c] = value
            for c in sorted(f.after):
                row[c] = holder.setdefault(c, labels.get(("in", c), f"${_long_name(columns[c])} (live-in)",
                                                         "live on entry"))
            cells.append(row)
            p += 1
    return cells


def _op_units(name: str, subreg: str | None) -> tuple[int, ...]:
    reg: PhysReg = parse_physreg(name)
    return reg.subreg(subreg).units if subreg else reg.units


def _long_name(column: Column) -> str:
    reg = register_for_units(column.units)
    return reg.name if reg is not None else column.name


def _runs(cells: list[dict[int, int]], n_columns: int) -> list[list[Run]]:
    runs: list[list[Run]] = [[] for _ in range(n_columns)]
    open_runs: dict[int, list[int]] = {}  # column -> [start, length, value]
    for p, row in enumerate(cells):
        for c in list(open_runs):
            run = open_runs[c]
            if row.get(c) != run[2] or run[0] + run[1] != p:
                runs[c].append((run[0], run[1], run[2]))
                del open_runs[c]
        for c, v in row.items():
            if c in open_runs:
                open_runs[c][1] += 1
            else:
                open_runs[c] = [p, 1, v]
    for c, run in open_runs.items():
        runs[c].append((run[0], run[1], run[2]))
    for r in runs:
        r.sort()
    return runs


def build_occupancy(post: Function, pair: PreparedPair | None) -> Occupancy:
    """The occupancy grid of `post`; labelled with virtual registers when `pair` (the function
    and its virtual program, `verilocc.verify.prepare_pair`) is given."""
    columns = register_columns(post)
    unit_column = {u: k for k, c in enumerate(columns) for u in c.units}
    facts, pressure = _facts(post, unit_column, columns)
    labels = _Labels()
    cells = _virtual_cells(pair, post, columns, facts, labels) if pair is not None else None
    with_virtual = cells is not None
    if cells is None:
        cells = _physical_cells(post, facts, labels, columns)
    points: list[Point] = []
    starts: list[tuple[str, int]] = []
    for b in post.blocks:
        starts.append((b.label, len(points)))
        points.extend(Point(b.number, i, ins.line, print_instruction(ins), point_kind(ins))
                      for i, ins in enumerate(b.instructions))
    return Occupancy(
        function=post.name, points=points, columns=columns, values=labels.values, runs=_runs(cells, len(columns)),
        reads=[tuple(sorted(f.reads)) for f in facts], writes=[tuple(sorted(f.writes)) for f in facts],
        pressure=pressure, block_starts=starts, with_virtual=with_virtual,
    )


def instructions(fn: Function) -> Iterator[tuple[int, Instruction]]:
    """(point, instruction) in layout order."""
    p = 0
    for b in fn.blocks:
        for ins in b.instructions:
            yield p, ins
            p += 1
