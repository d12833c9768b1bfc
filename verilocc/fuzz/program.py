"""A program under construction: its registers, blocks, and the lanes defined at each point.

`ProgramBuilder` holds what the generator knows while it writes a program: the virtual
registers (`Var`) with class, file and width; the blocks in layout order (`LayoutBlock`: MIR
lines, terminators that name blocks by object, successors); the current block; and the
environment (`Env`), for every virtual register the lanes (32-bit pieces) defined on every
path reaching the current point, and the registers defined in every thread lane of the wave
(`wave_full`: outside divergent control flow, every register of the environment; inside,
those defined before it). The generator only reads what the environment holds, which is what makes its
programs well-formed. It also chooses operands (`pieces`, `value`, `vsrc`, `ssrc`) and def
targets (`dest`) from that environment; every choice is a draw of its `Source`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from verilocc.fuzz.profiles import Profile
from verilocc.fuzz.sources import Source


@dataclass
class Var:
    id: int
    cls: str
    file: str  # "v", "s", "a"
    n: int  # width in dwords


@dataclass
class LayoutBlock:
    """A block in layout order: its MIR lines, then its terminators (format, target block)."""

    instrs: list[str] = field(default_factory=list)
    # Terminators reference blocks by object; numbers are given by layout at the end.
    term: list[tuple[str, LayoutBlock | None]] = field(default_factory=list)
    succs: list[LayoutBlock] = field(default_factory=list)
    number: int = -1


@dataclass(frozen=True)
class Program:
    """A generated program: its MIR text and what the oracles need to know about it."""

    text: str
    target: str
    inputs: tuple[str, ...]  # live-in 32-bit registers (`vgpr0`, `sgpr4`, ...)
    instructions: int
    blocks: int


def subreg_name(start: int, width: int) -> str:
    return "_".join(f"sub{k}" for k in range(start, start + width))


Env = dict[int, frozenset[int]]  # var id -> lanes defined on every path


def sclass(n: int) -> str:
    """The SGPR class of a fresh n-dword register."""
    return {1: "sreg_32", 2: "sreg_64", 4: "sgpr_128", 8: "sgpr_256", 16: "sgpr_512"}[n]


def meet(a: Env, b: Env) -> Env:
    """The lanes defined on every path where two paths join."""
    out: Env = {}
    for vid in a.keys() & b.keys():
        lanes = a[vid] & b[vid]
        if lanes:
            out[vid] = lanes
    return out


class ProgramBuilder:
    """The state of one program under construction and the operand choices it allows."""

    def __init__(self, src: Source, prof: Profile, max_instrs: int, max_blocks: int) -> None:
        self.src = src
        self.p = prof
        self.max_instrs = max_instrs
        self.max_blocks = max_blocks
        self.vars: dict[int, Var] = {}
        self.layout: list[LayoutBlock] = []
        self.count = 0
        self.env: Env = {}
        self.fresh_here: set[int] = set()  # vars first defined in the current block
        self.cur = self._open()
        self.inputs: list[tuple[str, int]] = []
        self.self_copies = True  # `%3 = COPY %3`: legal, and coalescers delete it
        # Loop counters and EXEC masks: only their construct redefines them.
        self.counters: set[int] = set()
        self.pending = 0  # blocks of open constructs not laid out yet
        self.tie = ""  # "(tied-def 0)" to write the ties of V_FMAC / *_mac_e64 out (llc infers them)
        self.constant_redefs = True  # moves of immediates may redefine existing registers
        self.rsrc = -1  # gfx6: the buffer resource descriptor (sgpr_128) of global memory accesses
        self.divergence = 0  # divergent constructs (EXEC narrowed) around the current point
        self.wave_full: set[int] = set()  # registers defined in every lane of the wave
        self.calls = 0  # calls written (the function header then says it has calls)

    # -- infrastructure ----------------------------------------------------------------------
    def _open(self) -> LayoutBlock:
        b = LayoutBlock()
        self.layout.append(b)
        self.fresh_here = set()
        return b

    def switch(self, b: LayoutBlock) -> None:
        self.layout.append(b)
        self.cur = b
        self.fresh_here = set()

    def new_var(self, cls: str, file: str, n: int) -> Var:
        v = Var(len(self.vars), cls, file, n)
        self.vars[v.id] = v
        return v

    def emit(self, line: str) -> None:
        self.cur.instrs.append(line)
        self.count += 1

    def scaffold(self, line: str) -> None:
        """A line of a construct's fixed shape (EXEC bookkeeping, a call sequence): not counted
        against the instructions a region draws."""
        self.cur.instrs.append(line)

    def full(self, v: Var) -> bool:
        return len(self.env.get(v.id, ())) == v.n

    def define(self, v: Var, lanes: Sequence[int] | None = None, undef: bool = False) -> None:
        new = frozenset(range(v.n) if lanes is None else lanes)
        if v.id not in self.env:
            self.fresh_here.add(v.id)
            if self.divergence:  # defined in the active lanes only
                self.wave_full.discard(v.id)
        self.env[v.id] = new if undef or lanes is None else self.env.get(v.id, frozenset()) | new
        if not self.divergence and len(self.env[v.id]) == v.n:
            self.wave_full.add(v.id)

    def converge(self) -> None:
        """After a divergent construct: back at full EXEC, every register of the environment is
        defined in every lane (each lane took one arm, or every iteration it ran)."""
        if not self.divergence:
            self.wave_full = {vid for vid in self.env if self.full(self.vars[vid])}

    def room(self) -> bool:
        return self.count < self.max_instrs

    # -- operands ----------------------------------------------------------------------------
    def pieces(self, file: str, n: int, classes: tuple[str, ...] | None = None) -> list[str]:
        """Operands of width n in `file` readable here: whole registers and aligned subregisters."""
        out = []
        for vid, lanes in self.env.items():
            v = self.vars[vid]
            if v.file != file or (classes is not None and v.cls not in classes):
                continue
            if v.n == n and len(lanes) == n:
                out.append(f"%{vid}")
            elif v.n > n and classes is None:
                for k in range(0, v.n - n + 1, n):
                    if all(j in lanes for j in range(k, k + n)):
                        out.append(f"%{vid}.{subreg_name(k, n)}")
        return sorted(out)

    def value(self, file: str, n: int) -> str | None:
        ps = self.pieces(file, n)
        return self.src.choice(ps) if ps else None

    def imm(self) -> str:
        return str(self.src.choice((0, 1, 2, 4, 7, 16, 31, 64, -1, -16)))

    def literal(self) -> str:
        return str(self.src.choice((0, 1, 3, 100, 255, 4096, 65535, 123456789, -7, -2147483648)))

    def vsrc(self, allow_sgpr: bool = True, allow_imm: bool = True) -> tuple[str | None, bool]:
        """A 32-bit VALU source: (operand, is_sgpr)."""
        r = self.src.integer(0, 9)
        if allow_imm and r == 0:
            return self.imm(), False
        if allow_sgpr and r <= 2:
            s = self.value("s", 1)
            if s is not None:
                return s, True
        return self.value("v", 1), False

    def vsrcs(self, k: int, allow_imm: bool = True) -> list[str] | None:
        """k VOP3 sources with at most one SGPR (the gfx9 constant bus allows one)."""
        out: list[str] = []
        sgpr = False
        for _ in range(k):
            op, is_s = self.vsrc(allow_sgpr=not sgpr, allow_imm=allow_imm)
            if op is None:
                return None
            sgpr |= is_s
            out.append(op)
        return out

    def ssrc(self, allow_imm: bool = True) -> str | None:
        if allow_imm and self.src.chance(0.2):
            return self.imm()
        return self.value("s", 1)

    # -- def targets -------------------------------------------------------------------------
    def dest(self, file: str, n: int, cls: str, fresh_only: bool = False) -> tuple[str, Var, list[int] | None]:
        """Where a def of width n goes: a fresh register, a redefinition of a whole register of
        class `cls`, or (n == 1) one lane of a fully defined tuple. Returns (text, var, lanes)."""
        r = self.src.integer(0, 99)
        if not fresh_only and r < 25:
            same = sorted(vid for vid in self.env if self.vars[vid].cls == cls and self.full(self.vars[vid])
                          and vid not in self.counters)
            if same:
                v = self.vars[self.src.choice(same)]
                return f"%{v.id}:{v.cls}", v, None
        if not fresh_only and r < 35:
            tuples = sorted(vid for vid in self.env if self.vars[vid].file == file and self.vars[vid].n > n
                            and self.full(self.vars[vid]) and vid not in self.counters)
            if tuples:
                v = self.vars[self.src.choice(tuples)]
                k = self.src.integer(0, v.n // n - 1) * n
                return f"%{v.id}.{subreg_name(k, n)}:{v.cls}", v, list(range(k, k + n))
        v = self.new_var(cls, file, n)
        return f"%{v.id}:{cls}", v, None
