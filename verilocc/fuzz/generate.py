"""Random well-formed pre-RA AMDGPU MIR programs, for the fuzzing oracles.

A generated program is one kernel `f` in a complete MIR file (a tiny embedded IR module that
names the target, then the machine function) as `llc -stop-before=greedy` would write it:
virtual registers of 32- to 512-bit VGPR, SGPR and AGPR classes, tuples built from
subregister definitions (`undef %5.sub0:vreg_64_align2 = ...` then `%5.sub1:... = ...`),
copies, real opcodes with their real operand shapes, function inputs copied out of live-in
physical registers, stores as the observable results, and a structured CFG: if-then,
if-then-else and loops whose latch branches on a counter that changes every iteration.

The thread dimension, in the shapes llc-19 leaves before register allocation
(SILowerControlFlow, SIOptimizeVGPRLiveRange; `-stop-before=greedy` of small kernels):

- divergent if-then and if-else on a lane compare: `%s = COPY $exec, implicit-def $exec`,
  `%t = S_AND_B64 %s, %cond`, `%x = S_XOR_B64 %t, %s` (else only), `$exec = S_MOV_B64_term %t`,
  `S_CBRANCH_EXECZ`; a Flow block `%y = S_OR_SAVEEXEC_B64 %x`, `$exec = S_XOR_B64_term $exec,
  %y`; the join's `$exec = S_OR_B64 $exec, %y` (`_B32` and `$exec_lo` on wave32). A register
  both arms define is IMPLICIT_DEF before the branch, as PHI elimination leaves it;
- loops whose lanes leave at different iterations: a break mask `%b = S_OR_B64 %cond, %b`,
  `$exec = S_ANDN2_B64_term $exec, %b`, `S_CBRANCH_EXECNZ`, `$exec = S_OR_B64 $exec, %b` at the
  exit; an SGPR counter copied into a VGPR each iteration (each lane keeps the count it left
  with);
- waterfall loops around an indirect call through a per-lane pointer (`V_READFIRSTLANE_B32` of
  its halves, `V_CMP_EQ_U64_e64`, `S_AND_SAVEEXEC_B64`, the call, `%ptr = IMPLICIT_DEF`,
  `$exec = S_XOR_B64_term $exec, %saved`, `S_CBRANCH_EXECNZ`, EXEC restored after the loop) and
  calls through a uniform pointer, with values live across them (gfx9 and later);
- values moved between files legally: SGPR-to-VGPR copies, `V_READFIRSTLANE_B32`,
  `V_READLANE_B32`, `V_WRITELANE_B32` (one lane, whatever EXEC is), AGPR<->VGPR copies.

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
from collections.abc import Callable, Collection
from typing import Any

from verilocc.fuzz.components import split_components
from verilocc.fuzz.instructions import InstructionTemplates
from verilocc.fuzz.profiles import PROFILES, TARGETS
from verilocc.fuzz.program import Env, LayoutBlock, Program, meet, subreg_name
from verilocc.fuzz.render import function_header, ir_module, render_body
from verilocc.fuzz.sources import DrawSource, RandomSource, Source


class _Gen(InstructionTemplates):
    """The generator: structured control flow around random instructions."""

    # -- control flow ------------------------------------------------------------------------
    def condition(self, prefer_scc: bool) -> tuple[str, str]:
        """Emit what computes a uniform branch condition; returns (taken-branch opcode, implicit
        use). A VCC condition compares a scalar with a constant, so every lane agrees."""
        if not prefer_scc and not self.p.wave32 and self.src.chance(0.4):
            a = self.value("s", 1)
            if a is not None:
                c = self.new_var(self.p.lane_mask_class, "s", 2)
                op = self.src.choice(("V_CMP_GT_I32_e64", "V_CMP_LT_I32_e64", "V_CMP_GE_I32_e64"))
                self.emit(f"%{c.id}:{c.cls} = {op} {a}, {self.src.integer(-16, 64)}, implicit $exec")
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
            if depth < 2 and r < 10 and self.blocks_left() >= 2:
                self.if_then(depth)
            elif depth < 2 and r < 16 and self.blocks_left() >= 3:
                self.if_else(depth)
            elif depth < 2 and r < 25 and self.blocks_left() >= 2:
                self.loop(depth)
            elif depth < 2 and r < 29 and self.blocks_left() >= 2:
                self.divergent_if(depth, with_else=False)
            elif depth < 2 and r < 33 and self.blocks_left() >= 4:
                self.divergent_if(depth, with_else=True)
            elif depth < 2 and r < 37 and self.blocks_left() >= 2:
                self.divergent_loop(depth)
            elif depth < 2 and r < 40 and self.p.calls and self.calls < 3 and self.blocks_left() >= 3:
                self.waterfall_call()
            elif r < 42 and self.p.calls and self.calls < 3:
                self.uniform_call()
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
        self.define_in_second_arm(before, after_then)
        self.jump(join)
        self.env = meet(after_then, self.env)
        self.pending -= 1
        self.switch(join)

    def define_in_second_arm(self, before: Env, after_first: Env, keep: Collection[int] = ()) -> list[int]:
        """In the second arm of a construct, give some registers the first arm defined first
        (`after_first` less `before`) a value too, so they are defined after the join (what PHI
        elimination leaves behind); never those of `keep`. Returns the registers given one."""
        both = []
        for vid in sorted(set(after_first) - set(before)):
            v = self.vars[vid]
            if vid not in self.env and len(after_first[vid]) == v.n and v.n <= 2 and vid not in keep \
                    and self.src.chance(0.6):
                src = self.value(v.file if v.file != "a" else "v", v.n)  # from self.env: never %vid
                if src is None:
                    continue
                if v.file == "a" and v.n == 1:
                    self.emit(f"%{vid}:{v.cls} = V_ACCVGPR_WRITE_B32_e64 {src}, implicit $exec")
                elif v.file == "s" and v.n == 1 and "xm0" not in v.cls:
                    self.emit(f"%{vid}:{v.cls} = S_MOV_B32 {self.literal()}")
                else:
                    self.emit(f"%{vid}:{v.cls} = COPY {src}")
                self.define(v)
                both.append(vid)
        return both

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
        if not self.p.wave32 and self.src.chance(0.3):  # a uniform compare: every lane agrees
            c = self.new_var(self.p.lane_mask_class, "s", 2)
            self.emit(f"%{c.id}:{c.cls} = V_CMP_LT_I32_e64 %{ctr.id}, {self.src.integer(3, 40)}, implicit $exec")
            self.define(c)
            self.emit(f"$vcc = COPY %{c.id}")
            op, use = "S_CBRANCH_VCCNZ", "$vcc"
        else:
            self.emit(f"S_CMP_LT_U32 %{ctr.id}, {self.src.integer(3, 40)}, implicit-def $scc")
            op, use = "S_CBRANCH_SCC1", "$scc"
        exit_b = LayoutBlock()
        self.branch(op, use, header, exit_b)
        self.switch(exit_b)

    # -- divergent control flow, as SILowerControlFlow leaves it -------------------------------
    def lane_condition(self) -> str:
        """A lane mask from a compare of per-lane values: the lanes disagree."""
        op = self.src.choice(("V_CMP_LT_U32_e64", "V_CMP_GT_U32_e64", "V_CMP_LT_I32_e64", "V_CMP_GE_I32_e64"))
        a = self.value("v", 1) or self._vgpr_value()
        b, _ = self.vsrc(allow_imm=False)
        c = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        self.emit(f"%{c.id}:{c.cls} = {op} {a}, {b or a}, implicit $exec")
        self.define(c)
        return f"%{c.id}"

    def _vgpr_value(self) -> str:
        v = self.new_var("vgpr_32", "v", 1)
        self.emit(f"%{v.id}:vgpr_32 = V_MOV_B32_e32 {self.literal()}, implicit $exec")
        self.define(v)
        return f"%{v.id}"

    def _mask_var(self, cls: str | None = None) -> int:
        """A fresh register for EXEC or a lane mask: only its construct writes it."""
        v = self.new_var(cls or self.p.exec_copy_class, "s", self.p.lane_mask_dwords)
        self.counters.add(v.id)
        return v.id

    def divergent_if(self, depth: int, with_else: bool) -> None:
        """if-then or if-else on a lane condition: EXEC holds the lanes of each arm in turn."""
        p = self.p
        ex, b, cls = p.exec_reg, p.wave_bits, p.exec_copy_class
        cond = self.lane_condition()
        entry = self.cur
        at = len(entry.instrs)  # where IMPLICIT_DEFs of registers both arms define go
        s, t = self._mask_var(), self._mask_var()
        self.scaffold(f"%{s}:{cls} = COPY {ex}, implicit-def {ex}")
        self.scaffold(f"%{t}:{cls} = S_AND_{b} %{s}, {cond}, implicit-def dead $scc")
        x = -1
        if with_else:
            x = self._mask_var()
            self.scaffold(f"%{x}:{cls} = S_XOR_{b} %{t}, %{s}, implicit-def dead $scc")
        self.scaffold(f"{ex} = S_MOV_{b}_term %{t}")
        for vid in (s, t, x):
            if vid >= 0:
                self.define(self.vars[vid])
        arm1, join = LayoutBlock(), LayoutBlock()
        flow, arm2 = (LayoutBlock(), LayoutBlock()) if with_else else (join, join)
        self.branch("S_CBRANCH_EXECZ", "$exec", flow, arm1)
        before = dict(self.env)
        self.divergence += 1
        self.pending += 3 if with_else else 1
        self.switch(arm1)
        self.region(depth + 1)
        self.jump(flow)
        after1 = self.env
        self.pending -= 1
        if not with_else:
            self.env = meet(before, after1)
            self.switch(join)
            self.scaffold(f"{ex} = S_OR_{b} {ex}, %{s}, implicit-def $scc")
            self.divergence -= 1
            self.converge()
            return
        self.switch(flow)
        self.env = dict(before)
        y = self._mask_var()
        self.scaffold(f"%{y}:{cls} = S_OR_SAVEEXEC_{b} %{x}, implicit-def $exec, implicit-def $scc, implicit $exec")
        self.scaffold(f"{ex} = S_XOR_{b}_term {ex}, %{y}, implicit-def $scc")
        self.define(self.vars[y])
        self.branch("S_CBRANCH_EXECZ", "$exec", join, arm2)
        self.pending -= 1
        self.switch(arm2)
        self.region(depth + 1)
        # The registers both arms define are then defined after the join in every lane; the
        # IMPLICIT_DEF before the branch makes them defined on the path that skips both arms, as
        # PHI elimination writes it. Loop counters and EXEC masks stay their constructs' own.
        both = self.define_in_second_arm(before, after1, keep=self.counters)
        for k, vid in enumerate(both):
            entry.instrs.insert(at + k, f"%{vid}:{self.vars[vid].cls} = IMPLICIT_DEF")
        self.jump(join)
        self.env = meet(after1, self.env)
        self.pending -= 1
        self.switch(join)
        self.scaffold(f"{ex} = S_OR_{b} {ex}, %{y}, implicit-def $scc")
        self.divergence -= 1
        self.converge()

    def divergent_loop(self, depth: int) -> None:
        """A loop each lane leaves when its own condition holds: the lanes that are done leave
        EXEC through a break mask; the loop ends when none is left."""
        p = self.p
        ex, b, cls = p.exec_reg, p.wave_bits, p.exec_copy_class
        brk = self._mask_var()
        self.scaffold(f"%{brk}:{cls} = S_MOV_{b} 0")
        self.define(self.vars[brk])
        cnt = self.new_var("vgpr_32", "v", 1)
        self.counters.add(cnt.id)
        self.scaffold(f"%{cnt.id}:vgpr_32 = COPY {self.value('v', 1) or self._vgpr_value()}")
        self.define(cnt)
        it = -1
        if self.src.chance(0.5):  # a uniform count of iterations, copied into a VGPR as lanes leave
            it = self.new_var("sreg_32", "s", 1).id
            self.counters.add(it)
            self.scaffold(f"%{it}:sreg_32 = S_MOV_B32 0")
            self.define(self.vars[it])
        header = LayoutBlock()
        self.jump(header)
        self.switch(header)
        self.divergence += 1
        self.pending += 1
        self.region(depth + 1)
        self.pending -= 1
        # The latch: the per-lane counter changes every iteration (hashed: a lane leaves with
        # probability 1/2; shifted for real: once its top set bit reaches bit 31).
        self.scaffold(f"%{cnt.id}:vgpr_32 = V_LSHLREV_B32_e32 1, %{cnt.id}, implicit $exec")
        c = self.new_var(p.lane_mask_class, "s", p.lane_mask_dwords)
        self.scaffold(f"%{c.id}:{c.cls} = V_CMP_LT_I32_e64 %{cnt.id}, 0, implicit $exec")
        self.define(c)
        if it >= 0:
            self.scaffold(f"%{it}:sreg_32 = S_ADD_I32 %{it}, 1, implicit-def dead $scc")
            snap = self.new_var("vgpr_32", "v", 1)
            self.scaffold(f"%{snap.id}:vgpr_32 = COPY %{it}, implicit $exec")
            self.define(snap)
        self.scaffold(f"%{brk}:{cls} = S_OR_{b} %{c.id}, %{brk}, implicit-def $scc")
        self.scaffold(f"{ex} = S_ANDN2_{b}_term {ex}, %{brk}, implicit-def $scc")
        exit_b = LayoutBlock()
        self.branch("S_CBRANCH_EXECNZ", "$exec", header, exit_b)
        self.switch(exit_b)
        self.scaffold(f"{ex} = S_OR_{b} {ex}, %{brk}, implicit-def $scc")
        self.divergence -= 1
        self.converge()

    # -- calls -------------------------------------------------------------------------------
    def call(self, callee: str) -> None:
        """A call sequence as llc-19 writes it in a kernel: the argument in $vgpr0, the result
        copied out of $vgpr0."""
        self.calls += 1
        arg = self.value("v", 1)
        self.scaffold("ADJCALLSTACKUP 0, 0, implicit-def dead $scc, implicit-def $sgpr32, implicit $sgpr32")
        if arg is not None:
            self.scaffold(f"$vgpr0 = COPY {arg}")
        uses = ", implicit $vgpr0" if arg is not None else ""
        self.emit(f"dead $sgpr30_sgpr31 = SI_CALL {callee}, 0, {self.p.call_mask}{uses}, implicit-def $vgpr0")
        r = self.new_var("vgpr_32", "v", 1)
        self.scaffold(f"%{r.id}:vgpr_32 = COPY $vgpr0")
        self.scaffold("ADJCALLSTACKDOWN 0, 0, implicit-def dead $scc, implicit-def $sgpr32, implicit $sgpr32")
        self.define(r)

    def _callee(self) -> str:
        """A uniform callee address, loaded from the kernel arguments."""
        f = self.new_var("sreg_64_xexec", "s", 2)
        self.scaffold(f"%{f.id}:sreg_64_xexec = S_LOAD_DWORDX2_IMM %{self.inputs[0][1]}, {8 * self.src.integer(0, 7)}, 0 "
                  ":: (dereferenceable invariant load (s64), addrspace 4)")
        self.define(f)
        return f"%{f.id}"

    def uniform_call(self) -> None:
        self.call(self._callee())

    def waterfall_call(self) -> None:
        """A call through a per-lane pointer: a loop that calls once per distinct pointer, with
        EXEC narrowed to the lanes holding the first active lane's pointer."""
        p = self.p
        ex, b = p.exec_reg, p.wave_bits
        mcls = p.lane_mask_class
        ptr = self.new_var(p.vclass(2), "v", 2)
        f0 = self._callee()
        if self.src.chance(0.6):  # two callees, chosen per lane
            f1 = self._callee()
            halves = []
            for f in (f0, f1):
                for k in (0, 1):
                    h = self.new_var("vgpr_32", "v", 1)
                    self.scaffold(f"%{h.id}:vgpr_32 = COPY {f}.sub{k}")
                    self.define(h)
                    halves.append(f"%{h.id}")
            cond = self.lane_condition()
            self.scaffold(f"undef %{ptr.id}.sub0:{ptr.cls} = V_CNDMASK_B32_e64 0, {halves[0]}, 0, {halves[2]}, {cond}, "
                      "implicit $exec")
            self.scaffold(f"%{ptr.id}.sub1:{ptr.cls} = V_CNDMASK_B32_e64 0, {halves[1]}, 0, {halves[3]}, {cond}, "
                      "implicit $exec")
        else:
            self.scaffold(f"%{ptr.id}:{ptr.cls} = COPY {f0}")
        self.define(ptr)
        save = self._mask_var(mcls)
        self.scaffold(f"%{save}:{mcls} = S_MOV_{b} {ex}")
        self.define(self.vars[save])
        header, body, exit_b = LayoutBlock(), LayoutBlock(), LayoutBlock()
        self.jump(header)
        self.switch(header)
        fp = self.new_var("sgpr_64", "s", 2)
        self.scaffold(f"undef %{fp.id}.sub0:sgpr_64 = V_READFIRSTLANE_B32 %{ptr.id}.sub0, implicit $exec")
        self.scaffold(f"%{fp.id}.sub1:sgpr_64 = V_READFIRSTLANE_B32 %{ptr.id}.sub1, implicit $exec")
        eq, sv = self._mask_var(mcls), self._mask_var(mcls)
        self.scaffold(f"%{eq}:{mcls} = V_CMP_EQ_U64_e64 %{fp.id}, %{ptr.id}, implicit $exec")
        self.scaffold(f"%{sv}:{mcls} = S_AND_SAVEEXEC_{b} %{eq}, implicit-def $exec, implicit-def dead $scc, "
                  "implicit $exec")
        self.cur.succs = [body]  # falls through
        self.switch(body)
        self.divergence += 1
        self.call(f"%{fp.id}")
        # SIOptimizeVGPRLiveRange: the pointer's lanes that were called are dead.
        self.scaffold(f"%{ptr.id}:{ptr.cls} = IMPLICIT_DEF")
        self.scaffold(f"{ex} = S_XOR_{b}_term {ex}, %{sv}, implicit-def dead $scc")
        self.branch("S_CBRANCH_EXECNZ", "$exec", header, exit_b)
        self.switch(exit_b)
        self.scaffold(f"{ex} = S_MOV_{b} %{save}")
        del self.env[ptr.id]
        for v in (fp.id, eq, sv):
            self.env.pop(v, None)
        self.divergence -= 1
        self.converge()

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
    max_blocks = max_blocks if max_blocks is not None else src.integer(2, 10)
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
    text = ir_module(target) + function_header(target, regs, [(r, v) for r, v in g.inputs], calls=g.calls > 0) \
        + render_body(body)
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

