"""Random well-formed pre-RA AMDGPU MIR programs, for the fuzzing oracles.

A generated program is one kernel `f` in a complete MIR file (a tiny embedded IR module that
names the target, then the machine function) as `llc -stop-before=greedy` would write it:
virtual registers of 32- to 512-bit VGPR, SGPR and AGPR classes, tuples built from
subregister definitions (`undef %5.sub0:vreg_64_align2 = ...` then `%5.sub1:... = ...`),
copies, real opcodes with their real operand shapes, function inputs copied out of live-in
physical registers, stores as the observable results, and a structured CFG: if-then,
if-then-else and loops whose latch branches on a counter that changes every iteration.

Well-formedness is by construction: the generator keeps, for every point, the lanes of each
virtual register that are defined on every path reaching it, and only reads those. Lanes only
ever grow along a path (an `undef` subregister def is only the first def of a fresh register),
so the environment at a loop header is the one on entry to the loop.

Targets: the four `TARGETS` (`verilocc fuzz`'s default) and the `EXTRA_TARGETS`, one
processor of each other generation from gfx6 to gfx12. A `Profile` holds what differs: the
opcodes that exist (no carry-less V_ADD_U32 or GFX9 three-source VOP3 before gfx9, V_MAC_F32
for V_FMAC_F32 there; FLAT on gfx7/gfx8 and MUBUF with a resource descriptor on gfx6 for
global memory), tuple alignment, AGPRs, the wave size, input registers and the
machineFunctionInfo llc writes for the target.

Nothing here is shared with the verifier. `programs()` is a hypothesis strategy; the same
generator runs from a `random.Random` (`random_program`) for the `verilocc fuzz` driver.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

# `verilocc fuzz`'s default: the four targets the long campaign has run since session 2 (one
# seed per four targets, README.md "Fuzzing the verifier"); `--mcpu` may name any of ALL_TARGETS.
TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx1100")
# One processor of each other generation: gfx950 (GFX9.5, MAI), gfx1200 (GFX12), gfx1030
# (GFX10.3), gfx906 (GFX9 without MAI), gfx803 (GFX8), gfx700 (GFX7), gfx600 (GFX6).
EXTRA_TARGETS = ("gfx950", "gfx1200", "gfx1030", "gfx906", "gfx803", "gfx700", "gfx600")
ALL_TARGETS = (*TARGETS, *EXTRA_TARGETS)


@dataclass(frozen=True)
class Profile:
    """What the generator and the reference allocator need to know about one target."""

    name: str
    aligned: bool  # even-aligned VGPR/AGPR tuples (gfx90a, gfx942: FeatureGFX90AInsts)
    agprs: bool  # has MAI instructions and AGPRs
    wave32: bool
    kernarg: str  # input SGPR pair holding the kernel argument pointer
    group_ids: tuple[str, ...]  # input registers holding workgroup ids X, Y
    scratch_rsrc: str  # machineFunctionInfo.scratchRSrcReg, as llc writes it for the target
    exec_copy: str  # machineFunctionInfo.sgprForEXECCopy
    reserved_sgprs: tuple[int, ...]  # SGPRs the reference allocator never uses (besides $sgpr32)
    # The fields below keep, at their defaults, what the four TARGETS have always been given
    # (their programs must not change: the long campaign's evidence is per seed).
    generation: int = 9  # GFX major version: which opcodes exist (see the properties below)
    private_segment_buffer: bool = False  # argumentInfo.privateSegmentBuffer in $sgpr0_sgpr1_sgpr2_sgpr3
    # How argumentInfo gives the work-item ids: "legacy" (both in $vgpr0 with masks, and
    # $vgpr1 sometimes read: what the first four targets were given), "split" ($vgpr0 and
    # $vgpr1, llc's layout before gfx90a) or "packed" ($vgpr0 only, with masks).
    workitem_ids: str = "legacy"
    architected_group_ids: bool = False  # workgroup ids in TTMP registers, not in argumentInfo (gfx12)
    llc: str = "llc-19"  # the llc that knows the target (gfx950 is new in LLVM 20)

    def registers(self, file: str) -> int:
        """The registers of `file` ("s", "v", "a") an allocation may name: $sgpr0-103 on gfx6/gfx7
        and $sgpr0-105 later, 256 VGPRs, and 256 AGPRs on targets with MAI."""
        return {"s": 104 if self.generation <= 7 else 106, "v": 256, "a": 256 if self.agprs else 0}[file]

    @property
    def lane_mask_class(self) -> str:
        return "sreg_32_xm0_xexec" if self.wave32 else "sreg_64_xexec"

    @property
    def lane_mask_dwords(self) -> int:
        return 1 if self.wave32 else 2

    # Opcodes by generation (LLVM 19 VOP2/VOP3/FLAT/MUBUF instruction definitions, checked with
    # `llc-19 -verify-machineinstrs -run-pass=none` on generated programs for each target).
    @property
    def add_no_carry(self) -> bool:
        """V_ADD_U32/V_SUB_U32 without carry out (HasAddNoCarryInsts: gfx9+); before, the
        carry-out forms V_ADD_CO_U32/V_SUB_CO_U32 with a dead lane mask def."""
        return self.generation >= 9

    @property
    def gfx9_vop3(self) -> bool:
        """V_ADD3_U32, V_LSHL_OR_B32, V_AND_OR_B32, V_XAD_U32 (GFX9Insts)."""
        return self.generation >= 9

    @property
    def fmac(self) -> bool:
        """V_FMAC_F32 (gfx906's FeatureDLInsts, gfx908+, gfx10+); before, V_MAC_F32."""
        return self.generation >= 9

    @property
    def memory(self) -> str:
        """How global memory is reached: "global" (GLOBAL_*, gfx9+), "flat" (FLAT_* without an
        offset: gfx7/gfx8, as llc-19 selects for amdhsa) or "buffer" (BUFFER_*_ADDR64 with a
        resource descriptor: gfx6 has no FLAT)."""
        return "global" if self.generation >= 9 else "flat" if self.generation >= 7 else "buffer"

    def vclass(self, n: int) -> str:
        return "vgpr_32" if n == 1 else f"vreg_{32 * n}" + ("_align2" if self.aligned else "")

    def aclass(self, n: int) -> str:
        return "agpr_32" if n == 1 else f"areg_{32 * n}" + ("_align2" if self.aligned else "")


# Register layouts follow the corpus (llc 19 output for each target). The first four are the
# campaign's; the others follow `llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=X -stop-before=greedy`
# of a kernel reading its kernarg pointer and workgroup ids X and Y, with the `amdgpu-no-*`
# attributes clang's attributor sets (no dispatch ptr/id, no workgroup/workitem id Z): its
# argumentInfo, liveins, scratchRSrcReg and sgprForEXECCopy (gfx950: llc-22, LLVM 19 lacks it).
PROFILES: dict[str, Profile] = {
    "gfx908": Profile("gfx908", False, True, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3),
                      private_segment_buffer=True),
    "gfx90a": Profile("gfx90a", True, True, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3),
                      private_segment_buffer=True),
    "gfx942": Profile("gfx942", True, True, False, "sgpr0_sgpr1", ("sgpr2", "sgpr3"),
                      "$private_rsrc_reg", "$sgpr100_sgpr101", ()),
    "gfx1100": Profile("gfx1100", False, False, True, "sgpr0_sgpr1", ("sgpr14", "sgpr15"),
                       "$private_rsrc_reg", "$sgpr105", (), generation=11),
    # gfx950 (llc-22): gfx942's layout; FeatureGFX90AInsts (even tuples), MAI and AGPRs.
    "gfx950": Profile("gfx950", True, True, False, "sgpr0_sgpr1", ("sgpr2", "sgpr3"),
                      "$private_rsrc_reg", "$sgpr100_sgpr101", (), workitem_ids="packed", llc="llc-22"),
    # gfx1200: architected SGPRs, llc-19 reads the workgroup id X from $ttmp9 and Y from the
    # low half of $ttmp7 (liveins `$ttmp7, $ttmp9`; argumentInfo names neither).
    "gfx1200": Profile("gfx1200", False, False, True, "sgpr0_sgpr1", ("ttmp9", "ttmp7"),
                       "$private_rsrc_reg", "$sgpr105", (), generation=12, workitem_ids="packed",
                       architected_group_ids=True),
    # gfx1030 (GFX10.3, wave32): a private segment buffer in $sgpr0-3 and a scratch resource at
    # $sgpr100-103, unlike gfx11.
    "gfx1030": Profile("gfx1030", False, False, True, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                       "$sgpr100_sgpr101_sgpr102_sgpr103", "$sgpr105", (0, 1, 2, 3), generation=10,
                       private_segment_buffer=True, workitem_ids="split"),
    # gfx906: GFX9 without MAI and AGPRs.
    "gfx906": Profile("gfx906", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3),
                      private_segment_buffer=True, workitem_ids="split"),
    # gfx803 (GFX8), gfx700 (GFX7) and gfx600 (GFX6, 104 addressable SGPRs): the same layout.
    "gfx803": Profile("gfx803", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3), generation=8,
                      private_segment_buffer=True, workitem_ids="split"),
    "gfx700": Profile("gfx700", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3), generation=7,
                      private_segment_buffer=True, workitem_ids="split"),
    "gfx600": Profile("gfx600", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3), generation=6,
                      private_segment_buffer=True, workitem_ids="split"),
}


# --------------------------------------------------------------------------------------------
# Random sources: hypothesis draws or a random.Random, behind one interface
# --------------------------------------------------------------------------------------------
class Source:
    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.integer(0, len(seq) - 1)]

    def chance(self, p: float) -> bool:
        return self.integer(0, 999) < int(p * 1000)


class RandomSource(Source):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class DrawSource(Source):
    """Draws from hypothesis, so examples shrink."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(self.st.integers(lo, hi)))


# --------------------------------------------------------------------------------------------
# Program under construction
# --------------------------------------------------------------------------------------------
@dataclass
class Var:
    id: int
    cls: str
    file: str  # "v", "s", "a"
    n: int  # width in dwords


@dataclass
class _Block:
    instrs: list[str] = field(default_factory=list)
    # Terminators reference blocks by object; numbers are given by layout at the end.
    term: list[tuple[str, _Block | None]] = field(default_factory=list)
    succs: list[_Block] = field(default_factory=list)
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

# 32-bit VALU opcodes of t_valu_e32 (the order is part of what a seed generates).
_VOP2 = ("V_ADD_U32_e32", "V_SUB_U32_e32", "V_XOR_B32_e32", "V_AND_B32_e32", "V_OR_B32_e32", "V_MAX_I32_e32",
         "V_MIN_U32_e32", "V_LSHLREV_B32_e32", "V_LSHRREV_B32_e32", "V_ADD_F32_e32", "V_MUL_F32_e32", "V_SUB_F32_e32")
# gfx6-8: no V_ADD_U32/V_SUB_U32 without carry (HasAddNoCarryInsts); 24-bit multiplies instead.
_VOP2_GFX6 = ("V_MUL_U32_U24_e32", "V_MUL_HI_U32_U24_e32", *_VOP2[2:])
# gfx6-8: three-source VOP3 opcodes that exist before GFX9Insts (V_MAD_U32_U24 has a clamp operand).
_VOP3_GFX6 = ("V_MAD_U32_U24_e64", "V_BFE_U32_e64", "V_BFI_B32_e64", "V_ALIGNBIT_B32_e64")


class _Gen:
    def __init__(self, src: Source, prof: Profile, max_instrs: int, max_blocks: int) -> None:
        self.src = src
        self.p = prof
        self.max_instrs = max_instrs
        self.max_blocks = max_blocks
        self.vars: dict[int, Var] = {}
        self.layout: list[_Block] = []
        self.count = 0
        self.env: Env = {}
        self.fresh_here: set[int] = set()  # vars first defined in the current block
        self.cur = self._open()
        self.inputs: list[tuple[str, int]] = []
        self.self_copies = True  # `%3 = COPY %3`: legal, and coalescers delete it
        self.counters: set[int] = set()  # loop counters: only their latch redefines them
        self.pending = 0  # blocks of open constructs not laid out yet
        self.tie = ""  # "(tied-def 0)" to write the ties of V_FMAC / *_mac_e64 out (llc infers them)
        self.constant_redefs = True  # moves of immediates may redefine existing registers
        self.rsrc = -1  # gfx6: the buffer resource descriptor (sgpr_128) of global memory accesses

    # -- infrastructure ----------------------------------------------------------------------
    def _open(self) -> _Block:
        b = _Block()
        self.layout.append(b)
        self.fresh_here = set()
        return b

    def _switch(self, b: _Block) -> None:
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

    def full(self, v: Var) -> bool:
        return len(self.env.get(v.id, ())) == v.n

    def define(self, v: Var, lanes: Sequence[int] | None = None, undef: bool = False) -> None:
        new = frozenset(range(v.n) if lanes is None else lanes)
        if v.id not in self.env:
            self.fresh_here.add(v.id)
        self.env[v.id] = new if undef or lanes is None else self.env.get(v.id, frozenset()) | new

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
                            and self.full(self.vars[vid]))
            if tuples:
                v = self.vars[self.src.choice(tuples)]
                k = self.src.integer(0, v.n // n - 1) * n
                return f"%{v.id}.{subreg_name(k, n)}:{v.cls}", v, list(range(k, k + n))
        v = self.new_var(cls, file, n)
        return f"%{v.id}:{cls}", v, None

    # -- instruction templates ---------------------------------------------------------------
    def t_valu_e32(self) -> bool:
        op = self.src.choice(_VOP2 if self.p.add_no_carry else _VOP2_GFX6)
        a, _ = self.vsrc()
        b = self.value("v", 1)
        if a is None or b is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        if "_F32" in op:
            self.emit(f"{d} = nofpexcept {op} {a}, {b}, implicit $mode, implicit $exec")
        else:
            self.emit(f"{d} = {op} {a}, {b}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_valu_e64(self) -> bool:
        op = self.src.choice(("V_MUL_LO_U32_e64", "V_MUL_HI_U32_e64", "V_ADD_U32_e64", "V_SUB_U32_e64",
                              "V_XOR_B32_e64", "V_LSHLREV_B32_e64"))
        srcs = self.vsrcs(2)
        if srcs is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        clamp = ", 0" if op in ("V_ADD_U32_e64", "V_SUB_U32_e64") else ""
        if clamp and not self.p.add_no_carry:  # gfx6-8: the carry-out form, its carry dead (as llc-19 writes it)
            carry = self.new_var("sreg_64", "s", 2)
            op = op.replace("_U32", "_CO_U32")
            self.emit(f"{d}, dead %{carry.id}:sreg_64 = {op} {srcs[0]}, {srcs[1]}{clamp}, implicit $exec")
            self.define(v, lanes)
            return True
        self.emit(f"{d} = {op} {srcs[0]}, {srcs[1]}{clamp}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_valu_3(self) -> bool:
        op = self.src.choice(("V_ADD3_U32_e64", "V_LSHL_OR_B32_e64", "V_AND_OR_B32_e64", "V_XAD_U32_e64")
                             if self.p.gfx9_vop3 else _VOP3_GFX6)
        srcs = self.vsrcs(3)
        if srcs is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        clamp = ", 0" if op == "V_MAD_U32_U24_e64" else ""
        self.emit(f"{d} = {op} {srcs[0]}, {srcs[1]}, {srcs[2]}{clamp}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_vmov(self) -> bool:
        r = self.src.integer(0, 2)
        a = self.literal() if r == 0 else self.value("s", 1) if r == 1 else self.value("v", 1)
        if a is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32", fresh_only=r == 0 and not self.constant_redefs)
        self.emit(f"{d} = V_MOV_B32_e32 {a}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_fmac(self) -> bool:
        """An accumulator updated in place (the tied operand of V_FMAC_F32)."""
        accs = sorted(vid for vid in self.env if self.vars[vid].cls == "vgpr_32" and self.full(self.vars[vid]))
        a, _ = self.vsrc(allow_imm=False)
        b = self.value("v", 1)
        if not accs or a is None or b is None:
            return False
        acc = self.src.choice(accs)
        op = "V_FMAC_F32_e32" if self.p.fmac else "V_MAC_F32_e32"
        self.emit(f"%{acc}:vgpr_32 = nofpexcept {op} {a}, {b}, %{acc}{self.tie}, implicit $mode, implicit $exec")
        return True

    def t_cndmask(self) -> bool:
        masks = self.pieces("s", self.p.lane_mask_dwords, classes=(self.p.lane_mask_class,))
        m = self.src.choice(masks) if masks else None
        a, b = self.value("v", 1), self.value("v", 1)
        if m is None or a is None or b is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        self.emit(f"{d} = V_CNDMASK_B32_e64 0, {a}, 0, {b}, {m}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_vcmp(self) -> bool:
        op = self.src.choice(("V_CMP_GT_I32_e64", "V_CMP_EQ_U32_e64", "V_CMP_LT_U32_e64", "V_CMP_NE_U32_e64"))
        srcs = self.vsrcs(2)
        if srcs is None:
            return False
        v = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        self.emit(f"%{v.id}:{v.cls} = {op} {srcs[0]}, {srcs[1]}, implicit $exec")
        self.define(v)
        return True

    def t_readfirstlane(self) -> bool:
        a = self.value("v", 1)
        if a is None:
            return False
        d, v, lanes = self.dest("s", 1, "sgpr_32")
        self.emit(f"{d} = V_READFIRSTLANE_B32 {a}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_add64(self) -> bool:
        """A 64-bit add in two halves through a carry in a lane mask: two defs in one instruction."""
        a, b = self.value("v", 2), self.value("v", 2)
        if a is None or b is None:
            return False
        s = self.src.integer(0, 1)
        x = None
        a_lo, a_hi = (f"{a}.sub0", f"{a}.sub1") if "." not in a else self._halves(a)
        b_lo, b_hi = (f"{b}.sub0", f"{b}.sub1") if "." not in b else self._halves(b)
        if s:  # an SGPR operand for the low half, as LLVM does for uniform bases
            x = self.value("s", 2)
            if x is not None:
                a_lo, a_hi = (f"{x}.sub0", f"{x}.sub1") if "." not in x else self._halves(x)
        if s and x is not None:  # the carry already uses the constant bus: copy the high half
            hi = self.new_var("vgpr_32", "v", 1)
            self.emit(f"%{hi.id}:vgpr_32 = COPY {a_hi}")
            self.define(hi)
            a_hi = f"%{hi.id}"
        v = self.new_var(self.p.vclass(2), "v", 2)
        c1 = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        c2 = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        self.emit(f"undef %{v.id}.sub0:{v.cls}, %{c1.id}:{c1.cls} = V_ADD_CO_U32_e64 {a_lo}, {b_lo}, 0, implicit $exec")
        self.emit(f"%{v.id}.sub1:{v.cls}, dead %{c2.id}:{c2.cls} = V_ADDC_U32_e64 {a_hi}, {b_hi}, %{c1.id}, 0, implicit $exec")
        self.define(v)
        self.define(c1)
        return True

    def _halves(self, piece: str) -> tuple[str, str]:
        base, sub = piece.split(".")
        k = int(sub.split("_")[0][3:])
        return f"{base}.sub{k}", f"{base}.sub{k + 1}"

    def t_lshl64(self) -> bool:
        x = self.value("v", 2)
        if x is None:
            return False
        d, v, lanes = self.dest("v", 2, self.p.vclass(2))
        if self.p.generation < 8:  # V_LSHLREV_B64 is VI+; SI/CI have V_LSHL_B64 (value, shift)
            self.emit(f"{d} = V_LSHL_B64_e64 {x}, {self.src.integer(0, 4)}, implicit $exec")
        elif self.p.generation >= 12:  # a VOP2 on gfx12: llc-19 selects V_LSHLREV_B64_pseudo_e64
            self.emit(f"{d} = V_LSHLREV_B64_pseudo_e64 {self.src.integer(0, 4)}, {x}, implicit $exec")
        else:
            self.emit(f"{d} = V_LSHLREV_B64_e64 {self.src.integer(0, 4)}, {x}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_salu(self) -> bool:
        op = self.src.choice(("S_ADD_I32", "S_SUB_I32", "S_AND_B32", "S_OR_B32", "S_XOR_B32", "S_LSHL_B32",
                              "S_LSHR_B32", "S_MAX_I32", "S_MIN_U32", "S_MUL_I32"))
        a = self.ssrc(allow_imm=False)
        b = self.ssrc()
        if a is None or b is None:
            return False
        if self.src.chance(0.3):
            a, b = b, a
        d, v, lanes = self.dest("s", 1, self.src.choice(("sreg_32", "sgpr_32")))
        scc = "" if op == "S_MUL_I32" else ", implicit-def dead $scc"
        self.emit(f"{d} = {op} {a}, {b}{scc}")
        self.define(v, lanes)
        return True

    def t_salu64(self) -> bool:
        op = self.src.choice(("S_AND_B64", "S_OR_B64", "S_XOR_B64", "S_LSHL_B64"))
        a = self.value("s", 2)
        b = self.ssrc() if op == "S_LSHL_B64" else self.value("s", 2)
        if a is None or b is None:
            return False
        d, v, lanes = self.dest("s", 2, self.src.choice(("sreg_64", "sgpr_64")))
        self.emit(f"{d} = {op} {a}, {b}, implicit-def dead $scc")
        self.define(v, lanes)
        return True

    def t_smov(self) -> bool:
        fresh = not self.constant_redefs
        if self.src.chance(0.3):
            d, v, lanes = self.dest("s", 2, "sreg_64", fresh_only=fresh)
            self.emit(f"{d} = S_MOV_B64 {self.literal()}")
        else:
            d, v, lanes = self.dest("s", 1, self.src.choice(("sreg_32", "sgpr_32")), fresh_only=fresh)
            self.emit(f"{d} = S_MOV_B32 {self.literal()}")
        self.define(v, lanes)
        return True

    def t_cselect(self) -> bool:
        """SCC live between two instructions: a compare and a select."""
        a, b = self.ssrc(allow_imm=False), self.ssrc()
        x, y = self.ssrc(allow_imm=False), self.ssrc(allow_imm=False)
        if a is None or b is None or x is None or y is None:
            return False
        op = self.src.choice(("S_CMP_LG_U32", "S_CMP_LT_I32", "S_CMP_EQ_U32", "S_CMP_GE_U32"))
        d, v, lanes = self.dest("s", 1, "sreg_32")
        self.emit(f"S_CMP_{op[6:]} {a}, {b}, implicit-def $scc")
        self.emit(f"{d} = S_CSELECT_B32 {x}, {y}, implicit $scc")
        self.define(v, lanes)
        return True

    def t_sadd64(self) -> bool:
        """A 64-bit scalar add: the carry flows through SCC."""
        a, b = self.value("s", 2), self.value("s", 2)
        if a is None or b is None:
            return False
        a_lo, a_hi = (f"{a}.sub0", f"{a}.sub1") if "." not in a else self._halves(a)
        b_lo, b_hi = (f"{b}.sub0", f"{b}.sub1") if "." not in b else self._halves(b)
        v = self.new_var("sreg_64", "s", 2)
        self.emit(f"undef %{v.id}.sub0:sreg_64 = S_ADD_U32 {a_lo}, {b_lo}, implicit-def $scc")
        self.emit(f"%{v.id}.sub1:sreg_64 = S_ADDC_U32 {a_hi}, {b_hi}, implicit-def dead $scc, implicit $scc")
        self.define(v)
        return True

    def t_sload(self) -> bool:
        base = self.value("s", 2)
        if base is None:
            return False
        n = self.src.choice((1, 2, 4, 8, 16))
        cls = {1: "sreg_32_xm0_xexec", 2: "sreg_64_xexec", 4: "sgpr_128", 8: "sgpr_256", 16: "sgpr_512"}[n]
        op = "S_LOAD_DWORD_IMM" if n == 1 else f"S_LOAD_DWORDX{n}_IMM"
        v = self.new_var(cls, "s", n)
        off = 4 * self.src.integer(0, 16)
        self.emit(f"%{v.id}:{cls} = {op} {base}, {off}, 0 :: (dereferenceable invariant load (s{32 * n}), addrspace 4)")
        self.define(v)
        return True

    def t_gload(self) -> bool:
        addr = self.value("v", 2)
        if addr is None:
            return False
        n = self.src.choice((1, 1, 2, 3, 4))
        if n == 3 and self.p.generation < 7:  # BUFFER_LOAD_DWORDX3 is CI+
            n = 4
        op = "GLOBAL_LOAD_DWORD" if n == 1 else f"GLOBAL_LOAD_DWORDX{n}"
        d, v, lanes = self.dest("v", n, self.p.vclass(n), fresh_only=n == 3)
        off = 4 * self.src.integer(0, 8)
        align = ", align 4" if n == 3 else ""
        mem = f"(load (s{32 * n}){align}, addrspace 1)"
        if self.p.memory == "flat":  # FLAT has no offset before gfx9
            self.emit(f"{d} = {op.replace('GLOBAL', 'FLAT')} {addr}, 0, 0, implicit $exec, implicit $flat_scr :: {mem}")
        elif self.p.memory == "buffer":
            self.emit(f"{d} = {op.replace('GLOBAL', 'BUFFER')}_ADDR64 {addr}, %{self.rsrc}, 0, {off}, 0, 0, implicit $exec :: {mem}")
        else:
            self.emit(f"{d} = {op} {addr}, {off}, 0, implicit $exec :: {mem}")
        self.define(v, lanes)
        return True

    def t_store(self) -> bool:
        n = self.src.choice((1, 1, 2, 4))
        val = self.value("v", n)
        if val is None:
            return False
        off = 4 * self.src.integer(0, 8)
        if n == 1 and self.p.memory == "global" and self.src.chance(0.3):
            saddr, voff = self.value("s", 2) if self.p.llc == "llc-19" else self.sgpr_pair(), self.value("v", 1)
            if saddr is not None and voff is not None:
                self.emit(f"GLOBAL_STORE_DWORD_SADDR {voff}, {val}, {saddr}, {off}, 0, implicit $exec :: (store (s32), addrspace 1)")
                return True
        addr = self.value("v", 2)
        if addr is None:
            return False
        self.emit(self.store(addr, val, n, off))
        return True

    def sgpr_pair(self) -> str | None:
        """A 64-bit operand of SGPRs only: LLVM 20+ wants sreg_64_xexec_xnull for SADDR, which
        sreg_64 and sreg_64_xexec (they hold $vcc) are not (llc-22 -verify-machineinstrs, gfx950)."""
        ps = [x for x in self.pieces("s", 2) if self.vars[int(x[1:].split(".")[0])].cls.startswith("sgpr_")]
        return self.src.choice(ps) if ps else None

    def store(self, addr: str, val: str, n: int, off: int) -> str:
        """A store of n dwords to global memory, as the target does it."""
        op = "GLOBAL_STORE_DWORD" if n == 1 else f"GLOBAL_STORE_DWORDX{n}"
        mem = f"(store (s{32 * n}), addrspace 1)"
        if self.p.memory == "flat":
            return f"{op.replace('GLOBAL', 'FLAT')} {addr}, {val}, 0, 0, implicit $exec, implicit $flat_scr :: {mem}"
        if self.p.memory == "buffer":
            return f"{op.replace('GLOBAL', 'BUFFER')}_ADDR64 {val}, {addr}, %{self.rsrc}, 0, {off}, 0, 0, implicit $exec :: {mem}"
        return f"{op} {addr}, {val}, {off}, 0, implicit $exec :: {mem}"

    def t_copy(self) -> bool:
        """A copy between registers of one width: V<-V, V<-S, S<-S, A<-A, A<-V, V<-A."""
        kinds = [("v", "v"), ("v", "s"), ("s", "s")]
        if self.p.agprs:
            kinds += [("a", "a"), ("a", "v"), ("v", "a")]
        dst_file, src_file = self.src.choice(kinds)
        n = self.src.choice((1, 1, 1, 2, 2, 4, 8, 16))
        val = self.value(src_file, n)
        if val is None:
            return False
        cls = {"v": self.p.vclass, "a": self.p.aclass}.get(dst_file, _sclass)(n)
        d, v, lanes = self.dest(dst_file, n, cls)
        if d.split(":")[0] == val and not self.self_copies:  # `%3 = COPY %3`, `%3.sub1 = COPY %3.sub1`
            v = self.new_var(cls, dst_file, n)
            d, lanes = f"%{v.id}:{cls}", None
        self.emit(f"{d} = COPY {val}")
        self.define(v, lanes)
        return True

    def t_tuple(self) -> bool:
        """A fresh tuple assembled from parts with subregister defs (what REG_SEQUENCE becomes)."""
        file = self.src.choice(("v", "v", "s", "a") if self.p.agprs else ("v", "v", "s"))
        n = self.src.choice((2, 2, 3, 4, 4, 8, 16)) if file != "a" else self.src.choice((2, 4, 4, 16))
        if file == "s" and n == 3:
            n = 4
        cls = {"v": self.p.vclass, "a": self.p.aclass}.get(file, _sclass)(n)
        part = self.src.choice(tuple(p for p in (1, 2, 4, 8) if p < n and n % p == 0 and (file == "v" or p <= 4)))
        parts = []
        for k in range(0, n, part):
            src_file = file if file != "v" or not self.src.chance(0.2) else "s"
            if file == "a" and self.src.chance(0.3):
                src_file = "v"
            val = self.value(src_file, part)
            if val is None:
                return False
            parts.append((k, val))
        v = self.new_var(cls, file, n)
        # Sometimes the tuple starts as IMPLICIT_DEF and some parts stay undefined (never read).
        start_undef = self.src.chance(0.15)
        if start_undef:
            self.emit(f"%{v.id}:{cls} = IMPLICIT_DEF")
            self.define(v, [], undef=True)
            parts = parts[:-1] if len(parts) > 1 and self.src.chance(0.5) else parts
        for i, (k, val) in enumerate(parts):
            undef = "undef " if i == 0 and not start_undef else ""
            single = part == 1 and file == "v" and self.src.chance(0.3)
            sub = subreg_name(k, part)
            if single:
                self.emit(f"{undef}%{v.id}.{sub}:{cls} = V_MOV_B32_e32 {self.literal()}, implicit $exec")
            elif file == "a" and part == 1 and val.startswith("%") and self.vars[int(val[1:].split(".")[0])].file == "v":
                self.emit(f"{undef}%{v.id}.{sub}:{cls} = V_ACCVGPR_WRITE_B32_e64 {val}, implicit $exec")
            else:
                self.emit(f"{undef}%{v.id}.{sub}:{cls} = COPY {val}")
            self.define(v, list(range(k, k + part)), undef=bool(undef))
        return True

    def t_accvgpr(self) -> bool:
        if not self.p.agprs:
            return False
        if self.src.chance(0.5):
            a = self.value("v", 1)
            if a is None:
                return False
            d, v, lanes = self.dest("a", 1, "agpr_32")
            self.emit(f"{d} = V_ACCVGPR_WRITE_B32_e64 {a}, implicit $exec")
        else:
            a = self.value("a", 1)
            if a is None:
                return False
            d, v, lanes = self.dest("v", 1, "vgpr_32")
            self.emit(f"{d} = V_ACCVGPR_READ_B32_e64 {a}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_mfma(self) -> bool:
        if not self.p.agprs:
            return False
        have_big = bool(self.pieces("a", 16, classes=(self.p.aclass(16),)) or self.pieces("v", 16, classes=(self.p.vclass(16),)))
        big = self.src.chance(0.6 if have_big else 0.3)
        n = 16 if big else 4
        op = "V_MFMA_F32_16X16X1F32" if big else "V_MFMA_F32_4X4X1F32"
        file = "v" if self.p.aligned and self.src.chance(0.3) else "a"
        cls = self.p.vclass(n) if file == "v" else self.p.aclass(n)
        a, b = self.value("v", 1), self.value("v", 1)
        if a is None or b is None:
            return False
        accs = self.pieces(file, n, classes=(cls,))
        suffix = "_vgprcd" if file == "v" else ""
        r = self.src.integer(0, 3)
        if r == 3:
            r = 1
        if r == 0 or not accs:  # no accumulator input: the result may not overlap the sources
            v = self.new_var(cls, file, n)
            self.emit(f"early-clobber %{v.id}:{cls} = {op}{suffix}_e64 {a}, {b}, 0, 0, 0, 0, implicit $mode, implicit $exec")
            self.define(v)
        elif r == 1:  # accumulate in place (the tied _mac form of the big MFMAs)
            acc = self.src.choice(accs)
            mac = "_mac" if big else ""
            tie = self.tie if big else ""
            self.emit(f"{acc}:{cls} = {op}{mac}{suffix}_e64 {a}, {b}, {acc}{tie}, 0, 0, 0, implicit $mode, implicit $exec")
        else:
            acc = self.src.choice(accs)
            v = self.new_var(cls, file, n)
            ec = "early-clobber " if big else ""
            self.emit(f"{ec}%{v.id}:{cls} = {op}{suffix}_e64 {a}, {b}, {acc}, 0, 0, 0, implicit $mode, implicit $exec")
            self.define(v)
        if r != 1 and big and self.src.chance(0.5):  # a GEMM-like chain accumulates into the result
            self.emit(f"%{v.id}:{cls} = {op}_mac{suffix}_e64 {b}, {a}, %{v.id}{self.tie}, 0, 0, 0, implicit $mode, implicit $exec")
        return True

    def t_kill(self) -> bool:
        local = sorted(vid for vid in self.fresh_here if vid in self.env and self.full(self.vars[vid])
                       and vid not in self.counters)
        if not local:
            return False
        vid = self.src.choice(local)
        self.emit(f"KILL %{vid}")
        del self.env[vid]
        return True

    TEMPLATES: tuple[tuple[str, int], ...] = (
        ("t_valu_e32", 10), ("t_valu_e64", 6), ("t_valu_3", 4), ("t_vmov", 4), ("t_fmac", 3), ("t_cndmask", 2),
        ("t_vcmp", 2), ("t_readfirstlane", 2), ("t_add64", 2), ("t_lshl64", 2), ("t_salu", 7), ("t_salu64", 2),
        ("t_smov", 3), ("t_cselect", 2), ("t_sadd64", 1), ("t_sload", 3), ("t_gload", 3), ("t_store", 4),
        ("t_copy", 6), ("t_tuple", 4), ("t_accvgpr", 2), ("t_mfma", 2), ("t_kill", 1),
    )

    def random_instruction(self) -> None:
        total = sum(w for _, w in self.TEMPLATES)
        for _ in range(8):
            r = self.src.integer(0, total - 1)
            for name, w in self.TEMPLATES:
                if r < w:
                    break
                r -= w
            if getattr(self, name)():
                return
        self.t_vmov()

    # -- control flow ------------------------------------------------------------------------
    def condition(self, prefer_scc: bool) -> tuple[str, str]:
        """Emit what computes a branch condition; returns (taken-branch opcode, implicit use)."""
        if not prefer_scc and not self.p.wave32 and self.src.chance(0.4):
            srcs = self.vsrcs(2)
            if srcs is not None:
                c = self.new_var(self.p.lane_mask_class, "s", 2)
                op = self.src.choice(("V_CMP_GT_U32_e64", "V_CMP_EQ_U32_e64", "V_CMP_LT_I32_e64"))
                self.emit(f"%{c.id}:{c.cls} = {op} {srcs[0]}, {srcs[1]}, implicit $exec")
                self.define(c)
                self.emit(f"$vcc = COPY %{c.id}")
                return self.src.choice(("S_CBRANCH_VCCNZ", "S_CBRANCH_VCCZ")), "$vcc"
        a = self.ssrc(allow_imm=False)
        if a is None:
            a = self._sgpr_value()
        b = self.ssrc()
        if b is None:
            b = self.imm()
        op = self.src.choice(("S_CMP_LG_U32", "S_CMP_LT_U32", "S_CMP_EQ_U32", "S_CMP_GT_I32", "S_CMP_LE_I32"))
        self.emit(f"{op} {a}, {b}, implicit-def $scc")
        return self.src.choice(("S_CBRANCH_SCC1", "S_CBRANCH_SCC0")), "$scc"

    def _sgpr_value(self) -> str:
        v = self.new_var("sgpr_32", "s", 1)
        a = self.value("v", 1)
        if a is not None:
            self.emit(f"%{v.id}:sgpr_32 = V_READFIRSTLANE_B32 {a}, implicit $exec")
        else:
            self.emit(f"%{v.id}:sgpr_32 = S_MOV_B32 {self.literal()}")
        self.define(v)
        return f"%{v.id}"

    def blocks_left(self) -> int:
        return self.max_blocks - len(self.layout) - self.pending

    def region(self, depth: int) -> None:
        """A sequence of straight-line code and nested constructs in the current block. The
        whole function has `max_instrs`; a nested region takes a few of its own, so that the
        arms of late constructs are not empty."""
        start = self.count
        local = self.src.integer(1, 8) if depth else self.max_instrs
        while self.count - start < local and self.count < self.max_instrs + 6 * depth:
            r = self.src.integer(0, 99)
            if depth < 2 and r < 12 and self.blocks_left() >= 2:
                self.if_then(depth)
            elif depth < 2 and r < 20 and self.blocks_left() >= 3:
                self.if_else(depth)
            elif depth < 2 and r < 30 and self.blocks_left() >= 2:
                self.loop(depth)
            else:
                for _ in range(self.src.integer(1, 4)):
                    self.random_instruction()

    def branch(self, op: str, use: str, taken: _Block, other: _Block) -> None:
        self.cur.term = [(f"{op} %bb.{{}}, implicit {use}", taken), ("S_BRANCH %bb.{}", other)]
        self.cur.succs = [taken, other] if taken is not other else [taken]

    def jump(self, to: _Block) -> None:
        self.cur.term = [("S_BRANCH %bb.{}", to)]
        self.cur.succs = [to]

    def if_then(self, depth: int) -> None:
        op, use = self.condition(prefer_scc=False)
        then_b, join = _Block(), _Block()
        self.branch(op, use, join, then_b)
        before = dict(self.env)
        self.pending += 1
        self._switch(then_b)
        self.region(depth + 1)
        self.jump(join)
        self.env = _meet(before, self.env)
        self.pending -= 1
        self._switch(join)

    def if_else(self, depth: int) -> None:
        op, use = self.condition(prefer_scc=False)
        then_b, else_b, join = _Block(), _Block(), _Block()
        self.branch(op, use, else_b, then_b)
        before = dict(self.env)
        self.pending += 2
        self._switch(then_b)
        self.region(depth + 1)
        self.jump(join)
        after_then = self.env
        self.env = dict(before)
        self.pending -= 1
        self._switch(else_b)
        self.region(depth + 1)
        # Give some registers first defined in the then-arm a value here too, so they are
        # defined after the join (what PHI elimination leaves behind).
        for vid in sorted(set(after_then) - set(before)):
            v = self.vars[vid]
            if vid not in self.env and len(after_then[vid]) == v.n and v.n <= 2 and self.src.chance(0.6):
                src = self.value(v.file if v.file != "a" else "v", v.n)
                if src is None:
                    continue
                if v.file == "a" and v.n == 1:
                    self.emit(f"%{vid}:{v.cls} = V_ACCVGPR_WRITE_B32_e64 {src}, implicit $exec")
                elif v.file == "s" and v.n == 1 and "xm0" not in v.cls:
                    self.emit(f"%{vid}:{v.cls} = S_MOV_B32 {self.literal()}")
                else:
                    self.emit(f"%{vid}:{v.cls} = COPY {src}")
                self.define(v)
        self.jump(join)
        self.env = _meet(after_then, self.env)
        self.pending -= 1
        self._switch(join)

    def loop(self, depth: int) -> None:
        ctr = self.new_var("sreg_32", "s", 1)
        self.counters.add(ctr.id)
        self.emit(f"%{ctr.id}:sreg_32 = S_MOV_B32 {self.src.integer(0, 3)}")
        self.define(ctr)
        header = _Block()
        self.jump(header)
        self._switch(header)
        self.pending += 1
        self.region(depth + 1)
        self.pending -= 1
        # The latch: the counter changes every iteration, so the hashed compare of the
        # interpreter takes the back edge about half of the time.
        step = self.ssrc() or "1"
        self.emit(f"%{ctr.id}:sreg_32 = S_ADD_I32 %{ctr.id}, {step}, implicit-def dead $scc")
        if not self.p.wave32 and self.src.chance(0.3):
            c = self.new_var(self.p.lane_mask_class, "s", 2)
            self.emit(f"%{c.id}:{c.cls} = V_CMP_LT_U32_e64 %{ctr.id}, {self.value('v', 1) or '9'}, implicit $exec")
            self.define(c)
            self.emit(f"$vcc = COPY %{c.id}")
            op, use = "S_CBRANCH_VCCNZ", "$vcc"
        else:
            self.emit(f"S_CMP_LT_U32 %{ctr.id}, {self.src.integer(3, 40)}, implicit-def $scc")
            op, use = "S_CBRANCH_SCC1", "$scc"
        exit_b = _Block()
        self.branch(op, use, header, exit_b)
        self._switch(exit_b)

    # -- whole function ----------------------------------------------------------------------
    def prologue(self) -> None:
        p = self.p
        used = [p.kernarg, p.group_ids[0]]
        if self.src.chance(0.4):
            used.append(p.group_ids[1])
        used.append("vgpr0")
        if p.workitem_ids != "packed" and self.src.chance(0.3):  # packed: the Y id is in $vgpr0 too
            used.append("vgpr1")
        for reg in used:
            n = reg.count("_") + 1
            file = "s" if reg.startswith("ttmp") else reg[0]
            cls = {1: "sgpr_32", 2: "sgpr_64"}[n] if file == "s" else "vgpr_32"
            masked = p.architected_group_ids and reg == p.group_ids[1]  # Y: the low half of $ttmp7 (llc-19, gfx1200)
            v = self.new_var("sreg_32" if masked else cls, file, n)
            if masked:
                self.emit(f"%{v.id}:sreg_32 = S_AND_B32 ${reg}, 65535, implicit-def dead $scc")
            else:
                self.emit(f"%{v.id}:{cls} = COPY ${reg}")
            self.define(v)
            self.inputs.append((reg, v.id))
        # A 64-bit VGPR address for global memory, from the kernel argument pointer.
        a = self.new_var(p.vclass(2), "v", 2)
        self.emit(f"%{a.id}:{a.cls} = COPY %{self.inputs[0][1]}")
        self.define(a)
        if p.memory == "buffer":  # gfx6: a resource descriptor, as llc-19 builds it for addrspace 1 (ADDR64)
            r = self.new_var("sgpr_128", "s", 4)
            self.emit(f"undef %{r.id}.sub0_sub1:sgpr_128 = S_LOAD_DWORDX2_IMM %{self.inputs[0][1]}, 0, 0 "
                      ":: (dereferenceable invariant load (s64), addrspace 4)")
            self.emit(f"%{r.id}.sub2:sgpr_128 = S_MOV_B32 0")
            self.emit(f"%{r.id}.sub3:sgpr_128 = S_MOV_B32 16838656")
            self.define(r)
            self.rsrc = r.id
        self.fresh_here = set()  # the inputs are never KILLed

    def epilogue(self) -> None:
        """Store a few values that are live at the end, so a wrong allocation shows."""
        vals = sorted(vid for vid in self.env if self.full(self.vars[vid]))
        k = min(len(vals), self.src.integer(3, 8))
        chosen = []
        for _ in range(k):  # distinct values, most recent first
            left = [v for v in vals if v not in chosen]
            chosen.append(left[-1 - self.src.integer(0, min(3, len(left) - 1))])
        addr = self.value("v", 2)
        for vid in chosen:
            v = self.vars[vid]
            if addr is None:
                break
            if v.file == "s":
                val = self.new_var("vgpr_32", "v", 1)
                self.emit(f"%{val.id}:vgpr_32 = V_MOV_B32_e32 %{vid}.sub0, implicit $exec" if v.n > 1
                          else f"%{val.id}:vgpr_32 = V_MOV_B32_e32 %{vid}, implicit $exec")
                self.define(val)
                self.emit(self.store(addr, f"%{val.id}", 1, 0))
            elif v.file == "a":
                val = self.new_var("vgpr_32", "v", 1)
                self.emit(f"%{val.id}:vgpr_32 = V_ACCVGPR_READ_B32_e64 %{vid}{'.sub0' if v.n > 1 else ''}, implicit $exec")
                self.define(val)
                self.emit(self.store(addr, f"%{val.id}", 1, 4))
            else:
                w = v.n if v.n in (1, 2, 4) else 4 if v.n % 4 == 0 else 1
                for k in range(0, v.n, w):
                    val = f"%{vid}" if w == v.n else f"%{vid}.{subreg_name(k, w)}"
                    self.emit(self.store(addr, val, w, 4 * k))
        self.emit("S_ENDPGM 0")


_VREG = re.compile(r"(?P<undef>undef )?%(?P<id>\d+)(?P<sub>\.sub[\w]*)?(?P<cls>:\w+)?")
_TIED = ("V_FMAC_F32_e32", "_mac_e64", "_mac_vgprcd_e64", "V_MAC_F32_e32")


def _split_components(g: _Gen, mark_dead: bool) -> None:
    """Give every connected component of a virtual register's values its own register.

    A register may be defined several times (PHI elimination leaves that), but like LLVM's
    pre-RA code each register's live range must be connected: the values that reach one use,
    a partial (subregister) def and the value it updates, and a tied def and its tied use
    belong together. Other defs are renamed to fresh registers of the same class, by reaching
    definitions over the CFG. This keeps the meaning of the program. With `mark_dead`, defs
    whose value nothing reads get the `dead` flag, as LiveIntervals leaves them before RA."""
    blocks = g.layout
    Site = tuple[int, int]  # (block index, instruction index)
    Span = tuple[int, int]
    # Operands per instruction: defs as (var, span of `%N`, undef, has subregister), uses as (var, span).
    parsed: list[list[tuple[list[tuple[int, Span, bool, bool]], list[tuple[int, Span]]]]] = []
    for b in blocks:
        rows = []
        for line in b.instrs:
            cut = line.find(" = ")
            defs: list[tuple[int, Span, bool, bool]] = []
            uses: list[tuple[int, Span]] = []
            for m in _VREG.finditer(line):
                vid = int(m.group("id"))
                span = (m.start("id") - 1, m.end("id"))
                if 0 <= cut and m.start() < cut:
                    defs.append((vid, span, bool(m.group("undef")), bool(m.group("sub"))))
                else:
                    uses.append((vid, span))
            rows.append((defs, uses))
        parsed.append(rows)
    index = {id(b): i for i, b in enumerate(blocks)}
    succs = [[index[id(s)] for s in b.succs] for b in blocks]
    # Reaching definitions: per block, var -> sites reaching its end.
    outs: list[dict[int, frozenset[Site]]] = [{} for _ in blocks]
    changed = True
    preds: list[list[int]] = [[] for _ in blocks]
    for i, ss in enumerate(succs):
        for j in ss:
            preds[j].append(i)

    State = dict[int, frozenset[Site]]

    def transfer(bi: int, state: State, visit: Callable[[int, int, State], None] | None) -> State:
        st = dict(state)
        for ii, (defs, _uses) in enumerate(parsed[bi]):
            if visit is not None:
                visit(bi, ii, st)
            for vid, _span, _u, _s in defs:
                st[vid] = frozenset({(bi, ii)})
        return st

    while changed:
        changed = False
        for bi in range(len(blocks)):
            state: dict[int, frozenset[Site]] = {}
            for p in preds[bi]:
                for vid, sites in outs[p].items():
                    state[vid] = state.get(vid, frozenset()) | sites
            new = transfer(bi, state, None)
            if new != outs[bi]:
                outs[bi] = new
                changed = True
    parent: dict[tuple[int, Site], tuple[int, Site]] = {}

    def find(x: tuple[int, Site]) -> tuple[int, Site]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: tuple[int, Site], b: tuple[int, Site]) -> None:
        parent[find(a)] = find(b)

    use_sites: dict[tuple[int, int, int], frozenset[Site]] = {}  # (block, instr, use#) -> reaching sites
    read: set[tuple[int, Site]] = set()  # defs whose value something reads

    def visit(bi: int, ii: int, st: dict[int, frozenset[Site]]) -> None:
        defs, uses = parsed[bi][ii]
        line = blocks[bi].instrs[ii]
        for k, (vid, _span) in enumerate(uses):
            sites = st.get(vid, frozenset())
            use_sites[(bi, ii, k)] = sites
            read.update((vid, s2) for s2 in sites)
            for s2 in sites:
                union((vid, s2), (vid, min(sites)))
        tied = any(t in line for t in _TIED)
        for vid, _span, undef, sub in defs:
            find((vid, (bi, ii)))
            if (sub and not undef) or tied:
                for s2 in st.get(vid, frozenset()):
                    union((vid, (bi, ii)), (vid, s2))
                    read.add((vid, s2))

    for bi in range(len(blocks)):
        state = {}  # reaching definitions at the block's entry
        for p in preds[bi]:
            for vid, sites in outs[p].items():
                state[vid] = state.get(vid, frozenset()) | sites
        transfer(bi, state, visit)
    # One register per component; the component with the earliest def keeps the number.
    names: dict[tuple[int, Site], int] = {}
    roots_by_var: dict[int, list[tuple[int, Site]]] = {}
    for key in sorted(parent):
        r = find(key)
        if r not in roots_by_var.setdefault(key[0], []):
            roots_by_var[key[0]].append(r)
    for vid, roots in roots_by_var.items():
        for k, r in enumerate(roots):
            names[r] = vid if k == 0 else g.new_var(g.vars[vid].cls, g.vars[vid].file, g.vars[vid].n).id
    for bi, b in enumerate(blocks):
        for ii, line in enumerate(b.instrs):
            defs, uses = parsed[bi][ii]
            edits: set[tuple[int, int, str]] = set()  # (start, end, replacement) in the original line
            for vid, (a, e), _u, _s in defs:
                edits.add((a, e, f"%{names[find((vid, (bi, ii)))]}"))
                start = _operand_start(line, a)
                if mark_dead and (vid, (bi, ii)) not in read and not line[start:].startswith("dead "):
                    edits.add((start, start, "dead "))
            for k, (vid, (a, e)) in enumerate(uses):
                sites = use_sites.get((bi, ii, k), frozenset())
                if sites:
                    edits.add((a, e, f"%{names[find((vid, next(iter(sites))))]}"))
            for a, e, text in sorted(edits, reverse=True):
                line = line[:a] + text + line[e:]
            b.instrs[ii] = line


def _operand_start(line: str, at: int) -> int:
    """Where the operand whose register starts at `at` begins (before its flags)."""
    return line.rfind(", ", 0, at) + 2 if ", " in line[:at] else 0


def _sclass(n: int) -> str:
    return {1: "sreg_32", 2: "sreg_64", 4: "sgpr_128", 8: "sgpr_256", 16: "sgpr_512"}[n]


def _meet(a: Env, b: Env) -> Env:
    out: Env = {}
    for vid in a.keys() & b.keys():
        lanes = a[vid] & b[vid]
        if lanes:
            out[vid] = lanes
    return out


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------
def ir_module(target: str, name: str = "f") -> str:
    wave = "+wavefrontsize32" if PROFILES[target].wave32 else "+wavefrontsize64"
    return (
        "--- |\n"
        "  ; ModuleID = 'verilocc-fuzz'\n"
        "  target triple = \"amdgcn-amd-amdhsa\"\n"
        "  \n"
        f"  define amdgpu_kernel void @{name}() #0 {{\n"
        "    ret void\n"
        "  }\n"
        "  \n"
        f"  attributes #0 = {{ \"amdgpu-flat-work-group-size\"=\"1,256\" \"target-cpu\"=\"{target}\" "
        f"\"target-features\"=\"{wave}\" }}\n"
        "\n"
        "...\n"
    )


def function_header(
    target: str,
    registers: Sequence[tuple[int, str]],
    liveins: Sequence[tuple[str, int | None]],
    stack: Sequence[tuple[int, int, str]] = (),
    name: str = "f",
) -> str:
    """The YAML of one machine function up to `body:`. `stack` holds (id, size, stack-id)."""
    p = PROFILES[target]
    lines = [
        "---",
        f"name:            {name}",
        "alignment:       1",
        "tracksRegLiveness: true",
    ]
    if registers:
        lines.append("registers:")
        lines.extend(f"  - {{ id: {i}, class: {c}, preferred-register: '' }}" for i, c in registers)
    else:
        lines.append("registers:       []")
    lines.append("liveins:")
    lines.extend(f"  - {{ reg: '${r}', virtual-reg: '{'' if v is None else f'%{v}'}' }}" for r, v in liveins)
    lines += ["frameInfo:", "  maxAlignment:    1", "fixedStack:      []"]
    if stack:
        lines.append("stack:")
        for sid, size, stack_id in stack:
            lines.append(f"  - {{ id: {sid}, name: '', type: spill-slot, offset: 0, size: {size}, alignment: 4, ")
            lines.append(f"      stack-id: {stack_id}, callee-saved-register: '', callee-saved-restored: true, ")
            lines.append("      debug-info-variable: '', debug-info-expression: '', debug-info-location: '' }")
    else:
        lines.append("stack:           []")
    spilled_v = any(s != "sgpr-spill" for _, _, s in stack)
    spilled_s = any(s == "sgpr-spill" for _, _, s in stack)
    args = [f"    kernargSegmentPtr: {{ reg: '${p.kernarg}' }}",
            f"    workGroupIDX:    {{ reg: '${p.group_ids[0]}' }}",
            f"    workGroupIDY:    {{ reg: '${p.group_ids[1]}' }}",
            "    workItemIDX:     { reg: '$vgpr0', mask: 1023 }",
            "    workItemIDY:     { reg: '$vgpr1', mask: 1047552 }"]
    if p.workitem_ids == "split":
        args[3:] = ["    workItemIDX:     { reg: '$vgpr0' }", "    workItemIDY:     { reg: '$vgpr1' }"]
    elif p.workitem_ids == "packed":
        args[4] = "    workItemIDY:     { reg: '$vgpr0', mask: 1047552 }"
    if p.architected_group_ids:
        del args[1:3]
    if p.private_segment_buffer:
        args.insert(0, "    privateSegmentBuffer: { reg: '$sgpr0_sgpr1_sgpr2_sgpr3' }")
    lines += [
        "machineFunctionInfo:",
        "  isEntryFunction: true",
        f"  hasSpilledSGPRs: {'true' if spilled_s else 'false'}",
        f"  hasSpilledVGPRs: {'true' if spilled_v else 'false'}",
        f"  scratchRSrcReg:  '{p.scratch_rsrc}'",
        "  frameOffsetReg:  '$fp_reg'",
        "  stackPtrOffsetReg: '$sgpr32'",
        "  argumentInfo:",
        *args,
        "  occupancy:       8",
        f"  sgprForEXECCopy: '{p.exec_copy}'",
    ]
    return "\n".join(lines) + "\n"


def render_body(blocks: Sequence[tuple[int, Sequence[int], Sequence[str], Sequence[str]]]) -> str:
    """`body:` from (number, successors, block live-ins, instruction lines) per block."""
    out = ["body:             |"]
    for i, (num, succs, liveins, instrs) in enumerate(blocks):
        if i:
            out.append("  ")
        out.append(f"  bb.{num}:")
        if succs:
            w = 0x80000000 // len(succs) if len(succs) > 1 else 0x80000000
            out.append("    successors: " + ", ".join(f"%bb.{s}(0x{w:08x})" for s in succs))
        if liveins:
            out.append("    liveins: " + ", ".join(liveins))
        if len(out[-1]) and not out[-1].startswith("  bb."):
            out.append("  ")
        out.extend(f"    {ins}" for ins in instrs)
    out.append("")
    out.append("...")
    return "\n".join(out) + "\n"


def generate(src: Source, target: str, max_instrs: int | None = None, max_blocks: int | None = None,
             mark_dead: bool | None = None, self_copies: bool = True, explicit_ties: bool | None = None,
             constant_redefs: bool = True) -> Program:
    """One program for `target`. `mark_dead` flags unread defs `dead` (as LiveIntervals
    leaves them); `explicit_ties` writes `(tied-def 0)` on tied uses (llc writes it only when
    the tie is not the opcode's); `self_copies` allows `%3 = COPY %3` and `%3.sub1 = COPY
    %3.sub1`; `constant_redefs` lets moves of immediates redefine existing (for instance
    loop-carried) registers. None: at random."""
    prof = PROFILES[target]
    max_instrs = max_instrs if max_instrs is not None else src.integer(3, 34)
    max_blocks = max_blocks if max_blocks is not None else src.integer(2, 8)
    g = _Gen(src, prof, max_instrs, max_blocks)
    g.self_copies = self_copies
    g.constant_redefs = constant_redefs
    g.tie = "(tied-def 0)" if (src.chance(0.3) if explicit_ties is None else explicit_ties) else ""
    g.prologue()
    g.region(0)
    if len(g.layout) == 1:
        last = _Block()
        g.jump(last)
        g._switch(last)
    g.epilogue()
    _split_components(g, mark_dead=src.chance(0.75) if mark_dead is None else mark_dead)
    for num, b in enumerate(g.layout):
        b.number = num
    body = []
    for b in g.layout:
        lines = list(b.instrs)
        lines.extend(fmt.format(t.number) for fmt, t in b.term if t is not None)
        liveins = [f"${r}" for r, _ in g.inputs] if b is g.layout[0] else []
        body.append((b.number, [s.number for s in b.succs], liveins, lines))
    regs = [(v.id, v.cls) for v in g.vars.values()]
    text = ir_module(target) + function_header(target, regs, [(r, v) for r, v in g.inputs]) + render_body(body)
    units: list[str] = []
    for r, _ in g.inputs:
        units.extend(r.split("_"))
    n_ins = sum(len(x[3]) for x in body)
    return Program(text, target, tuple(units), n_ins, len(body))


def random_program(target: str, seed: int, **kw: Any) -> Program:
    return generate(RandomSource(random.Random(seed)), target, **kw)


def programs(target: str | None = None, max_instrs: int | None = None, **options: Any) -> Any:
    """Hypothesis strategy of `Program`s for `target` (any of the four TARGETS when None); `options`
    are those of `generate` (mark_dead, self_copies, explicit_ties, constant_redefs)."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw: Callable[[Any], Any]) -> Program:
        t = target if target is not None else draw(st.sampled_from(TARGETS))
        return generate(DrawSource(draw), t, max_instrs=max_instrs, **options)

    return _programs()


assert set(PROFILES) == set(ALL_TARGETS), "a profile per target"
