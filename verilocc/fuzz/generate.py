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

The generator is layered by job: `sources` (random draws), `program` (the program under
construction and its operand choices), `instructions` (the instruction templates), this
module (control flow, the prologue and epilogue, the whole program), `components` (the last
pass: connected live ranges) and `render` (the MIR text); `profiles` holds what differs by
target.

Nothing here is shared with the verifier. `programs()` is a hypothesis strategy; the same
generator runs from a `random.Random` (`random_program`) for the `verilocc fuzz` driver.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from verilocc.fuzz.components import split_components
from verilocc.fuzz.instructions import InstructionTemplates
from verilocc.fuzz.profiles import PROFILES, TARGETS
from verilocc.fuzz.program import LayoutBlock, Program, meet, subreg_name
from verilocc.fuzz.render import function_header, ir_module, render_body
from verilocc.fuzz.sources import DrawSource, RandomSource, Source


class _Gen(InstructionTemplates):
    """The generator: structured control flow around random instructions."""

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

    def branch(self, op: str, use: str, taken: LayoutBlock, other: LayoutBlock) -> None:
        self.cur.term = [(f"{op} %bb.{{}}, implicit {use}", taken), ("S_BRANCH %bb.{}", other)]
        self.cur.succs = [taken, other] if taken is not other else [taken]

    def jump(self, to: LayoutBlock) -> None:
        self.cur.term = [("S_BRANCH %bb.{}", to)]
        self.cur.succs = [to]

    def if_then(self, depth: int) -> None:
        op, use = self.condition(prefer_scc=False)
        then_b, join = LayoutBlock(), LayoutBlock()
        self.branch(op, use, join, then_b)
        before = dict(self.env)
        self.pending += 1
        self.switch(then_b)
        self.region(depth + 1)
        self.jump(join)
        self.env = meet(before, self.env)
        self.pending -= 1
        self.switch(join)

    def if_else(self, depth: int) -> None:
        op, use = self.condition(prefer_scc=False)
        then_b, else_b, join = LayoutBlock(), LayoutBlock(), LayoutBlock()
        self.branch(op, use, else_b, then_b)
        before = dict(self.env)
        self.pending += 2
        self.switch(then_b)
        self.region(depth + 1)
        self.jump(join)
        after_then = self.env
        self.env = dict(before)
        self.pending -= 1
        self.switch(else_b)
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
        self.env = meet(after_then, self.env)
        self.pending -= 1
        self.switch(join)

    def loop(self, depth: int) -> None:
        ctr = self.new_var("sreg_32", "s", 1)
        self.counters.add(ctr.id)
        self.emit(f"%{ctr.id}:sreg_32 = S_MOV_B32 {self.src.integer(0, 3)}")
        self.define(ctr)
        header = LayoutBlock()
        self.jump(header)
        self.switch(header)
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
        exit_b = LayoutBlock()
        self.branch(op, use, header, exit_b)
        self.switch(exit_b)

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
                    part = f"%{vid}" if w == v.n else f"%{vid}.{subreg_name(k, w)}"
                    self.emit(self.store(addr, part, w, 4 * k))
        self.emit("S_ENDPGM 0")


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
        last = LayoutBlock()
        g.jump(last)
        g.switch(last)
    g.epilogue()
    split_components(g, mark_dead=src.chance(0.75) if mark_dead is None else mark_dead)
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

