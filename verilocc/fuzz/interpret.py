"""A concrete interpreter for pre-RA and post-RA MIR: the value oracle of the fuzzer.

It runs one wave of 64 lanes (gfx6 to gfx9) or 32 (gfx10 and later, unless the function's
target features say `+wavefrontsize64`), as the hardware does (`verilocc.fuzz.isa`):

- a VGPR or AGPR holds one 32-bit value per lane; an SGPR, M0, SCC one value per wave; EXEC
  and VCC are lane masks (`$exec_lo`/`$vcc_lo` on wave32). A virtual register's storage comes
  from its class: `%7:vreg_128` is four per-lane values, `%7.sub2` the third.
- VALU instructions, vector loads, vector copies (lowered to V_MOV/V_ACCVGPR_*, which honour
  EXEC) and vector spills and reloads write only the lanes active in EXEC; the others keep
  their values. SALU instructions write whole registers. A copy from a VGPR or AGPR into an
  SGPR cannot be executed (LLVM refuses to lower it: "illegal VGPR to SGPR copy"); an SGPR
  into a VGPR broadcasts.
- V_CMP gives a lane mask (inactive lanes 0), V_CMPX writes EXEC, V_CNDMASK selects per lane,
  V_READFIRSTLANE reads the first active lane (lane 0 when EXEC is 0), V_READLANE and
  V_WRITELANE read and write one lane whatever EXEC is (the write keeps the other lanes of its
  tied input), as do the SGPR spills to VGPR lanes (`SI_SPILL_S32_TO_VGPR`,
  `SI_RESTORE_S32_FROM_VGPR`). `S_*_SAVEEXEC_*` and the logical SALU opcodes are bit-exact.
- A call (`SI_CALL`) is a pseudo-random function of its callee operand and the active lanes
  of its argument registers: it records an event, and every register its mask does not
  preserve changes (VGPRs and AGPRs in the active lanes only, SGPRs entirely).
- Other opcodes are a fixed pseudo-random function of (opcode, the text of their non-register
  operands, their inputs) under a per-run seed, computed lane by lane for a VALU instruction,
  so a pre-RA program and an allocation of it compute the same values if and only if the
  allocation moves values correctly (up to hash collisions). `exact` runs the opcodes of
  `verilocc.fuzz.meanings` by their real meaning instead (all of them, or a set).
- Stores record (opcode, non-register operands, the values of each active lane); loads see how
  many stores and calls came before them. Spills go to a map of stack slots, per lane for
  vector spills.
- What cannot be encoded ends the run with an error before it starts: a misaligned register
  tuple in a machine instruction (COPY and the other generic pseudos are expanded register by
  register), an operand in a register file its instruction cannot name (a VALU result in an
  SGPR, an SALU source in a VGPR, an AGPR where only VGPRs go...), operands that the
  instruction's definition ties in different registers. A COPY whose defs are all `dead` is
  what LLVM makes of it, a KILL: it writes nothing and is never illegal.

`run(program, inputs, seed)` returns a `Trace`; two programs agree on an input when their
traces are equal. A run stops with status "timeout" after `max_steps` instructions and with
"error: ..." on something it cannot execute; those statuses are part of the trace.
`strict=True` also refuses reads of undefined virtual register lanes (a well-formedness check
of pre-RA code): a pre-program IMPLICIT_DEF makes the active lanes of a vector register (the
whole of a scalar one) undefined, and definedness is tracked per lane; and reads of SCC or VCC
before anything wrote them.

Nothing here comes from the verifier (`tests/test_layers.py`): the machine is the ISA's.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import TypeVar

from verilocc.fuzz import isa, meanings
from verilocc.fuzz.isa import ALIGNED_VECTOR_TUPLES, UnmodelledConstruct, class_dwords, physical_units, subreg_lanes
from verilocc.fuzz.machine import (M32, DecodedOperand, MachineLoc, MachineState, Plan, Program, Stop, Trace,
                                   dead_copy, loc_name, mix, text_hash, unit_hash)
from verilocc.mir.model import Instruction, Module
from verilocc.mir.parser import parse_module

__all__ = ["ALIGNED_VECTOR_TUPLES", "Trace", "UnmodelledConstruct", "class_dwords", "function_inputs",
           "physical_units", "run", "subreg_lanes"]

# Opcodes that compute nothing.
_NOTHING = frozenset({"KILL", "DBG_VALUE", "DBG_VALUE_LIST", "DBG_INSTR_REF", "DBG_PHI", "DBG_LABEL",
                      "SCHED_BARRIER", "S_NOP", "ADJCALLSTACKUP", "ADJCALLSTACKDOWN", "S_WAITCNT", "WAVE_BARRIER",
                      "SI_MASKED_UNREACHABLE", "S_SETPRIO", "IGLP_OPT", "S_SET_INST_PREFETCH_DISTANCE"})
_ENDS = frozenset({"S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG", "S_SETPC_B64_return"})

_V = TypeVar("_V")  # what `Machine._exact_sources` reads a register as


class Machine(MachineState):
    """Runs a function: what each instruction does to the state."""

    def _handler(self, opcode: str, ins: Instruction) -> Callable[[Machine, Plan], str | None]:
        """The method that runs an instruction (unbound: plans outlive a run)."""
        m = Machine
        if opcode in _NOTHING or dead_copy(ins):
            return m._nothing
        if opcode in _ENDS:
            return m._end
        if opcode == "S_BRANCH":
            return m._branch
        if opcode.startswith("S_CBRANCH_"):
            return m._cbranch
        if opcode == "IMPLICIT_DEF":
            return m._implicit_def
        if opcode == "REG_SEQUENCE":
            return m._reg_sequence
        if opcode in isa.MOVES:
            return m._move
        if opcode == "V_READFIRSTLANE_B32":
            return m._readfirstlane
        if opcode in ("V_READLANE_B32", "SI_RESTORE_S32_FROM_VGPR"):
            return m._readlane
        if opcode in ("V_WRITELANE_B32", "SI_SPILL_S32_TO_VGPR"):
            return m._writelane
        if isa.saveexec(opcode):
            return m._saveexec
        if opcode.startswith("SI_SPILL_") and opcode.endswith("_SAVE"):
            return m._spill
        if opcode.startswith("SI_SPILL_") and opcode.endswith("_RESTORE"):
            return m._reload
        if opcode.startswith("SI_CALL"):
            return m._call
        if isa.is_valu(opcode) or isa.is_vmem(opcode):
            return m._valu
        return m._salu


    # -- instructions ------------------------------------------------------------------------
    def _nothing(self, p: Plan) -> None:
        return None

    def _end(self, p: Plan) -> str:
        return "end"

    def _branch(self, p: Plan) -> str:
        return next(o.text for o in p.ins.operands if o.kind == "mbb")

    def _cbranch(self, p: Plan) -> str | None:
        cond = p.opcode[len("S_CBRANCH_"):]
        target = next(o.text for o in p.ins.operands if o.kind == "mbb")
        if cond in ("SCC1", "SCC0"):
            val = self.scalar(("s", "scc")) & 1 != 0
            taken = val if cond == "SCC1" else not val
        elif cond in ("VCCNZ", "VCCZ"):
            vcc = ("s", "vcc_lo") if self.wave == 32 else None
            locs = (vcc,) if vcc else (("s", "vcc_lo"), ("s", "vcc_hi"))
            val = self.read_mask(locs) != 0
            taken = val if cond == "VCCNZ" else not val
        elif cond in ("EXECNZ", "EXECZ"):
            val = self.active() != 0
            taken = val if cond == "EXECNZ" else not val
        else:
            raise UnmodelledConstruct(p.opcode)
        return target if taken else None

    def _implicit_def(self, p: Plan) -> None:
        """An undefined value: the active lanes of a vector register, or a scalar register."""
        active = self.active()
        for d in p.defs:
            for k, loc in enumerate(d.locs):
                garbage = mix(0xDEAD ^ text_hash("IMPLICIT_DEF") ^ k) & M32
                if loc[0] in "sS":
                    self.write_scalar(loc, garbage)
                else:
                    lanes = self.lanes(active)
                    self.write_lanes(loc, [garbage] * len(lanes), lanes)
                self.undefine(loc, active)
        return None

    def _copy_into(self, dst: tuple[MachineLoc, ...], src: list[MachineLoc | int], what: str) -> None:
        """Copy 32-bit pieces: into a vector register in the active lanes (a broadcast from a
        scalar), into a scalar register whole; a vector piece into a scalar register cannot be
        executed. Every piece is read before any is written, as LLVM lowers a copy between
        overlapping tuples (`SIInstrInfo::copyPhysReg` orders the pieces so that none is
        overwritten before it is read)."""
        if len(dst) != len(src):
            raise Stop(f"error: {what} of {len(src)} registers into {len(dst)}")
        active = -1
        writes: list[tuple[MachineLoc, int | list[int]]] = []
        for d, s in zip(dst, src):
            if d[0] in "sS":
                if isinstance(s, int):
                    writes.append((d, s))
                elif s[0] in "sS":
                    if self.strict:
                        self.check_defined(s, 1)
                    writes.append((d, self.scalar(s)))
                else:
                    raise Stop(f"error: illegal VGPR to SGPR copy ({loc_name(d)} from {loc_name(s)})")
                continue
            if active < 0:
                active = self.active()
            lanes = self.lanes(active)
            if isinstance(s, int):
                writes.append((d, [s] * len(lanes)))
                continue
            if self.strict:
                self.check_defined(s, active)
            vals = self.lane_values(s)
            writes.append((d, [vals[lane] for lane in lanes]))
        for d, v in writes:
            if isinstance(v, int):
                self.write_scalar(d, v)
            else:
                self.write_lanes(d, v, self.lanes(active))

    def _move(self, p: Plan) -> str | None:
        if len(p.defs) != 1:
            return self._generic(p)
        d = p.defs[0]
        srcs = [o for o in p.rest if o.kind in ("reg", "imm") and not o.is_noreg]
        if len(srcs) != 1:
            return self._generic(p)
        s = srcs[0]
        if s.kind == "reg" and s.has("undef"):  # a copy of nothing: the def is undefined
            self._implicit_def(p)
            return None
        if s.kind == "imm":
            imm = self._imm(s)
            if imm is None:
                return self._generic(p)
            imm &= (1 << (32 * len(d.locs))) - 1  # sign-extended to the def's width
            self._copy_into(d.locs, [(imm >> (32 * k)) & M32 for k in range(len(d.locs))], p.opcode)
            return None
        self._copy_into(d.locs, list(p.rest_regs[p.rest.index(s)].locs), p.opcode)
        return None

    def _reg_sequence(self, p: Plan) -> None:
        d = p.defs[0]
        srcs: list[MachineLoc | int] = [0] * len(d.locs)
        regs = [o for o in p.rest if o.kind == "reg"]
        subs = [o for o in p.rest if o.kind == "subreg"]
        if len(regs) != len(subs):
            raise UnmodelledConstruct("REG_SEQUENCE shape")
        for r, s in zip(regs, subs):
            dwords = subreg_lanes(s.text[len("%subreg."):])
            got = self.locs(r)
            if len(got) != len(dwords):
                raise Stop("error: REG_SEQUENCE width mismatch")
            for k, loc in zip(dwords, got):
                srcs[k] = loc
        self._copy_into(d.locs, srcs, "REG_SEQUENCE")
        return None

    def _readfirstlane(self, p: Plan) -> str | None:
        src = p.rest_regs.get(0)
        if src is None:
            return self._salu(p)
        active = self.active()
        lane = (active & -active).bit_length() - 1 if active else 0
        if self.strict:
            self.check_defined(src.locs[0], 1 << lane)
        self.write_scalar(p.defs[0].locs[0], self.lane_values(src.locs[0])[lane])
        return None

    def _lane_select(self, p: Plan, index: int) -> int:
        o = p.rest[index]
        if o.kind == "imm":
            sel = self._imm(o) or 0
        else:
            sel = self.scalar(p.rest_regs[index].locs[0]) if index in p.rest_regs else 0
        return sel & (self.wave - 1)

    def _readlane(self, p: Plan) -> str | None:
        """V_READLANE_B32 (src, lane) and SI_RESTORE_S32_FROM_VGPR (src, lane): one lane, whatever
        EXEC is."""
        src = p.rest_regs.get(0)
        if src is None:
            return self._salu(p)
        lane = self._lane_select(p, 1)
        if self.strict:
            self.check_defined(src.locs[0], 1 << lane)
        self.write_scalar(p.defs[0].locs[0], self.lane_values(src.locs[0])[lane])
        return None

    def _writelane(self, p: Plan) -> None:
        """V_WRITELANE_B32 and SI_SPILL_S32_TO_VGPR (value, lane, vdst_in): the def is vdst_in with
        one lane replaced, whatever EXEC is (the encoding check made the def and vdst_in one
        register)."""
        d = p.defs[0].locs[0]
        o = p.rest[0]
        value = (self._imm(o) or 0) if o.kind == "imm" else self.scalar(p.rest_regs[0].locs[0]) if 0 in p.rest_regs \
            else 0
        lane = self._lane_select(p, 1)
        if 2 in p.rest_regs and p.rest_regs[2].locs[0] != d:  # cannot happen in an encodable program
            raise Stop("error: a lane write whose vdst_in is another register")
        self.write_lanes(d, [value], (lane,))
        return None

    def _saveexec(self, p: Plan) -> None:
        """S_<OP>_SAVEEXEC_B32/B64 src: def = EXEC; EXEC = op(src, EXEC); SCC = EXEC != 0."""
        kind, bits = isa.saveexec(p.opcode) or ("AND", 64)
        ex = (("s", "exec_lo"),) if bits == 32 else (("s", "exec_lo"), ("s", "exec_hi"))
        old = self._combined([self.scalar(loc) for loc in ex])
        width = (1 << bits) - 1
        src = p.rest[0]
        s = (self._imm(src) or 0) if src.kind == "imm" else self._combined([self.scalar(loc) for loc in
                                                                           p.rest_regs[0].locs])
        s &= width
        ops = {"AND": s & old, "OR": s | old, "XOR": s ^ old, "ANDN2": s & ~old, "ORN2": s | ~old,
               "NAND": ~(s & old), "NOR": ~(s | old), "XNOR": ~(s ^ old), "ANDN1": ~s & old, "ORN1": ~s | old,
               "ANDN1_WREXEC": ~s & old, "ANDN2_WREXEC": s & ~old}
        new = ops[kind] & width
        if p.defs:
            self.write_mask(p.defs[0].locs, old)
        for k, loc in enumerate(ex):
            self.write_scalar(loc, new >> (32 * k))
        self.write_scalar(("s", "scc"), int(new != 0))
        return None

    def _slot(self, p: Plan) -> tuple[str, int]:
        """(stack slot number, first 32-bit word) of a spill pseudo's `%stack.N` and offset."""
        st = next(o for o in p.rest if o.kind == "stack")
        m = re.match(r"%stack\.(\d+)", st.text)
        if not m:
            raise UnmodelledConstruct(f"stack operand {st.text}")
        imms = [o for o in p.rest if o.kind == "imm"]
        offset = int(imms[0].text) if imms else 0
        return m.group(1), offset // 4

    def _slot_words(self, p: Plan, reload: bool) -> tuple[tuple[int, ...], list[tuple[tuple[str, int], MachineLoc]]]:
        """The active lanes, and each 32-bit register a spill pseudo saves (or a reload writes)
        with the word of its stack slot that register goes to (or comes from)."""
        slot, base = self._slot(p)
        locs = p.defs[0].locs if reload else p.rest_regs[0].locs
        return self.lanes(self.active()), [((slot, base + k), loc) for k, loc in enumerate(locs)]

    def _spill(self, p: Plan) -> None:
        """A save to a stack slot: whole for an SGPR spill, the active lanes for a vector one."""
        lanes, words = self._slot_words(p, reload=False)
        for where, loc in words:
            if loc[0] in "sS":
                self.stack[where] = self.scalar(loc)
                continue
            vals = self.lane_values(loc)
            old = self.stack.get(where)
            if not isinstance(old, tuple):
                old = self._uninit_slot(where)
            out = list(old)
            for lane in lanes:
                out[lane] = vals[lane]
            self.stack[where] = tuple(out)
        return None

    def _uninit_word(self, where: tuple[str, int]) -> int:
        """The hash a stack slot word never written starts from: an SGPR reload reads its low 32
        bits, each lane of a vector reload a hash of it and the lane."""
        return mix(self.seed ^ text_hash(f"uninit:stack.{where[0]}.{where[1]}"))

    def _uninit_slot(self, where: tuple[str, int]) -> tuple[int, ...]:
        base = self._uninit_word(where)
        return tuple(mix(base ^ lane) & M32 for lane in range(self.wave))

    def _reload(self, p: Plan) -> None:
        lanes, words = self._slot_words(p, reload=True)
        for where, loc in words:
            got = self.stack.get(where)
            if loc[0] in "sS":
                if got is None or isinstance(got, tuple):
                    got = self._uninit_word(where) & M32 if got is None else got[0]
                self.write_scalar(loc, got)
                continue
            if not isinstance(got, tuple):
                got = self._uninit_slot(where) if got is None else (got,) * self.wave
            self.write_lanes(loc, [got[lane] for lane in lanes], lanes)
        return None

    def _call(self, p: Plan) -> None:
        """The callee: a pseudo-random function of its address operand and its arguments (the
        implicit uses: scalar registers whole, vector registers in the active lanes). It
        records an event, and every register the mask does not preserve changes: VGPRs and
        AGPRs in the active lanes only (a callee preserves the inactive lanes of every VGPR),
        SGPRs entirely."""
        ins = p.ins
        mask = next((o.text for o in ins.operands if o.kind == "regmask"), None)
        if mask is None:
            raise UnmodelledConstruct(f"{ins.opcode} without a register mask")
        preserved = isa.preserved_units(mask, self.callee_abi)
        active = self.active()
        lanes = self.lanes(active)
        h = mix(self.seed ^ text_hash("call"))
        callee = p.rest[0] if p.rest else None
        if callee is not None and callee.kind == "reg" and 0 in p.rest_regs:
            for loc in p.rest_regs[0].locs:
                h = mix(h ^ self.scalar(loc))
        elif callee is not None:
            h = mix(h ^ text_hash(callee.text))
        scalar_args: list[int] = []
        vector_args: list[tuple[int, ...]] = []
        for o in ins.operands:
            if o.kind != "reg" or o.is_def or not o.is_implicit or o.has("undef") or o.phys is None:
                continue
            for loc in self.locs(o):
                if loc[0] in "va":
                    vector_args.append(self.lane_values(loc))
                else:
                    scalar_args.append(self.scalar(loc))
        for v in scalar_args:
            h = mix(h ^ v)
        per_lane = {lane: h for lane in lanes}
        for col in vector_args:
            for lane in lanes:
                per_lane[lane] = mix(per_lane[lane] ^ col[lane])
        others = tuple(o.text for o in ins.operands if o.kind not in ("reg",))
        self.events.append((ins.opcode, others, tuple(scalar_args),
                            tuple((lane, tuple(col[lane] for col in vector_args)) for lane in lanes)))
        self.stores += 1
        clobbered: set[str] = set()
        for o in ins.operands:  # results and the return address
            if o.kind == "reg" and o.is_def and o.phys is not None:
                clobbered.update(physical_units(o.phys))
        for key in list(self.scalars) + list(self.vectors):
            if isinstance(key, str):
                clobbered.add(key)
        for unit in clobbered:
            if (preserved is not None and unit in preserved) or unit in ("exec_lo", "exec_hi", "mode", "sgpr_null"):
                continue
            u = unit_hash(unit)
            if isa.unit_file(unit) == "s":
                self.scalars[unit] = mix(h ^ u) & M32
            else:
                old = list(self.lane_values(("v", unit)))
                for lane in lanes:
                    old[lane] = (per_lane[lane] ^ u) & M32  # per_lane is mixed already
                self.vectors[unit] = tuple(old)
        return None

    def _valu(self, p: Plan) -> str | None:
        """A VALU or vector memory instruction, lane by lane over the active lanes."""
        opcode = p.opcode
        if opcode.startswith(("V_CMP", "V_CMPX")) or self._exact_on(opcode):
            if self._lane_exact(p):
                return None
        active = self.active()
        lanes = self.lanes(active)
        cols = self._lane_columns(p, active)
        if isa.is_store(p.ins):
            self.events.append((p.ins.opcode, tuple(o.text for o in p.ins.operands if o.kind != "reg"),
                                tuple((lane, tuple(col[lane] for col in cols)) for lane in lanes)))
            self.stores += 1
        if p.ins.mem is not None:  # memory: what it reads depends on the stores before it
            cols.append((self.stores,) * self.wave)
        base = mix(self.seed ^ p.key)
        hs = [base] * len(lanes)
        for col in cols:
            hs = [mix(h ^ col[lane]) for h, lane in zip(hs, lanes)]
        compare = opcode.startswith(("V_CMP", "V_CMPX"))
        results = [*p.defs, *p.implicit_defs]
        for j, d in enumerate(results):
            if d.role == "mask" or compare:
                m = 0
                for h, lane in zip(hs, lanes):
                    if mix(h ^ ((j + 1) << 8)) & 1:
                        m |= 1 << lane
                self.write_mask(d.locs, m)
                if opcode.startswith("V_CMPX") and j == 0:
                    self._write_exec(m)
                continue
            if d.role == "scalar":  # an implicit scalar result of a VALU instruction
                self.write_scalar(d.locs[0], mix(base ^ ((j + 1) << 8)) & 1)
                continue
            for k, loc in enumerate(d.locs):
                salt = (j + 1) << 8 | k
                self.write_lanes(loc, [mix(h ^ salt) for h in hs], lanes)
        if opcode.startswith("V_CMPX") and not results:
            m = 0
            for h, lane in zip(hs, lanes):
                if mix(h ^ (1 << 8)) & 1:
                    m |= 1 << lane
            self._write_exec(m)
        return None

    def _write_exec(self, mask: int) -> None:
        self.write_mask((("s", "exec_lo"), ("s", "exec_hi")) if self.wave == 64 else (("s", "exec_lo"),), mask)

    def _lane_exact(self, p: Plan) -> bool:
        """Run a VALU instruction by its real meaning (`meanings.LANE`); False when it has none
        here (the caller hashes)."""
        meaning = meanings.LANE.get(p.opcode)
        if meaning is None:
            return False
        active = self.active()
        values = self._exact_sources(p, lambda d: self._lane_source(d, active))
        if values is None:
            return False
        if p.opcode in isa.VCC_MASK_INPUT:
            vcc = next((d for d in p.implicit_uses if d.role == "mask"), None)
            if vcc is None:
                return False
            m = self.read_mask(vcc.locs)
            values.append(tuple((m >> lane) & 1 for lane in range(self.wave)))
        lanes = self.lanes(active)
        outs: list[list[int]] = [[] for _ in p.defs]
        vcc_bits = 0
        if lanes:
            pick = operator.itemgetter(*lanes)
            cols = [(v,) * len(lanes) if isinstance(v, int) else pick(v) if len(lanes) > 1 else (v[lanes[0]],)
                    for v in values]
            for lane, args in zip(lanes, zip(*cols)):
                res, bit = meaning(args)
                if len(res) != len(p.defs):
                    return False
                for j, r in enumerate(res):
                    outs[j].append(r)
                if bit:
                    vcc_bits |= 1 << lane
        result = vcc_bits  # a compare's result: its def, or $vcc for the VOPC form
        for j, d in enumerate(p.defs):
            if d.role == "mask":
                m = 0
                for lane, r in zip(lanes, outs[j]):
                    if r & 1:
                        m |= 1 << lane
                self.write_mask(d.locs, m)
                if j == 0:
                    result = m
                continue
            for k, loc in enumerate(d.locs):
                self.write_lanes(loc, [(r >> (32 * k)) & M32 for r in outs[j]], lanes)
        vcc_def = next((d for d in p.implicit_defs if d.role == "mask"), None)
        if vcc_def is not None:
            self.write_mask(vcc_def.locs, vcc_bits)
        if p.opcode.startswith("V_CMPX"):  # EXEC becomes the lanes where the compare holds
            self._write_exec(result)
        return True

    def _exact_sources(self, p: Plan, register: Callable[[DecodedOperand], _V]) -> list[int | _V] | None:
        """The explicit sources of `p` for its real meaning: an immediate's value, a register as
        `register` reads it; None when one is neither (the caller hashes)."""
        values: list[int | _V] = []
        for k, o in enumerate(p.rest):
            if o.kind == "imm":
                imm = self._imm(o)
                if imm is None:
                    return None
                values.append(imm)
            elif o.kind == "reg" and k in p.rest_regs:
                values.append(register(p.rest_regs[k]))
            else:
                return None
        return values

    def _lane_source(self, d: DecodedOperand, active: int) -> tuple[int, ...]:
        """A VALU source register's value in every lane (a lane mask: its bit of each lane)."""
        if d.role == "mask":
            m = self.read_mask(d.locs)
            return tuple((m >> lane) & 1 for lane in range(self.wave))
        cols = []
        for loc in d.locs:
            if self.strict:
                self.check_defined(loc, active)
            cols.append(self.lane_values(loc))
        return cols[0] if len(cols) == 1 else \
            tuple(self._combined([c[lane] for c in cols]) for lane in range(self.wave))

    def _scalar_source(self, d: DecodedOperand) -> int:
        """A SALU source register's value."""
        if self.strict:
            for loc in d.locs:
                self.check_defined(loc, 1)
        return self._combined([self.scalar(loc) for loc in d.locs])

    def _salu(self, p: Plan) -> str | None:
        if self._exact_on(p.opcode) and self._scalar_exact(p):
            return None
        return self._generic(p)

    def _scalar_exact(self, p: Plan) -> bool:
        meaning = meanings.SCALAR.get(p.opcode)
        if meaning is None:
            return False
        values = self._exact_sources(p, self._scalar_source)
        if values is None:
            return False
        reads_scc = any(d.op.phys == "scc" for d in p.implicit_uses)
        res, scc = meaning(values, self.scalar(("s", "scc")) & 1 if reads_scc else 0)
        if len(res) != len(p.defs):
            return False
        for d, r in zip(p.defs, res):
            for k, loc in enumerate(d.locs):
                self.write_scalar(loc, (r >> (32 * k)) & M32)
        for d in p.implicit_defs:
            if d.op.phys == "scc" and scc is not None:
                self.write_scalar(d.locs[0], scc)
        return True

    def _generic(self, p: Plan) -> str | None:
        """Any other instruction: a pseudo-random function of everything it reads, one value
        per wave (a vector result, which no scalar instruction has, is written in the active
        lanes)."""
        inputs = self._scalar_inputs(p)
        if isa.is_store(p.ins):
            self.events.append((p.ins.opcode, tuple(o.text for o in p.ins.operands if o.kind != "reg"), tuple(inputs)))
            self.stores += 1
        if p.ins.mem is not None:  # memory: what it reads depends on the stores before it
            inputs.append(self.stores)
        h = mix(self.seed ^ p.key)
        for v in inputs:
            h = mix(h ^ v)
        compare = p.opcode.startswith(("S_CMP", "S_BITCMP"))
        for j, d in enumerate([*p.defs, *p.implicit_defs]):
            for k, loc in enumerate(d.locs):
                x = mix(h ^ ((j + 1) << 8 | k))
                if compare or d.op.phys == "scc":
                    x = (x & 1) if k == 0 else 0
                if loc[0] in "sS":
                    self.write_scalar(loc, x)
                else:
                    lanes = self.lanes(self.active())
                    self.write_lanes(loc, [mix(x ^ lane) for lane in lanes], lanes)
        return None

    # -- control -----------------------------------------------------------------------------
    def run(self) -> Trace:
        blocks = self.fn.blocks
        index = {f"%bb.{b.number}": i for i, b in enumerate(blocks)}
        for b in blocks:
            if b.name:
                index[f"%bb.{b.number}.{b.name}"] = index[f"%bb.{b.number}"]
        steps = 0
        bi = 0
        try:
            if "why" not in self._encoding:
                self._encoding["why"] = self.encoding_error()
            why = self._encoding["why"]
            if why is not None:
                return Trace((), why, 0)
            while True:
                block = blocks[bi]
                target: str | None = None
                for ins in block.instructions:
                    steps += 1
                    if steps > self.max_steps:
                        return Trace(tuple(self.events), "timeout", steps)
                    p = self.plan(ins)
                    target = p.run(self, p)
                    if target is not None:
                        break
                if target == "end":
                    return Trace(tuple(self.events), "ok", steps)
                if target is None:
                    if bi + 1 >= len(blocks):
                        return Trace(tuple(self.events), "error: fell off the end of the function", steps)
                    bi += 1
                else:
                    if target not in index:
                        return Trace(tuple(self.events), f"error: no block {target}", steps)
                    bi = index[target]
        except Stop as e:
            return Trace(tuple(self.events), str(e), steps)
        except UnmodelledConstruct as e:
            return Trace(tuple(self.events), f"error: unsupported {e}", steps)
        except (StopIteration, IndexError, ValueError, KeyError) as e:
            return Trace(tuple(self.events), f"error: malformed instruction ({type(e).__name__})", steps)




def as_module(program: Program) -> Module:
    return parse_module(program, "<fuzz>") if isinstance(program, str) else program


def run(program: Program, inputs: dict[str, int], seed: int = 0, max_steps: int = 20000,
        function: str | None = None, strict: bool = False, exact: bool | frozenset[str] = False,
        callee_abi: str = "llvm21") -> Trace:
    """Run a function (the first unless named) of `program` on 32-bit register `inputs` (a
    vector input register gets the value in lane 0 and values derived from it in the others).
    `strict`: reading a virtual register lane that holds no defined value is an error (a
    check that a pre-RA program is well formed on this path). `exact`: opcodes with a
    bit-precise meaning in `verilocc.fuzz.meanings` compute their real values instead of a
    pseudo-random function (the fuzzer's second opinion on a VERIFIED variant whose trace
    differs: an input the real instruction ignores cannot make a difference); a set of
    opcodes: only those do, every other opcode is hashed as usual. `callee_abi`: which SGPRs
    a callee preserves (`isa.CALLEE_ABIS`)."""
    module = as_module(program)
    fn = module.functions[0] if function is None else module.function(function)
    try:
        machine = Machine(fn, inputs, seed, max_steps, strict, exact, callee_abi)
    except UnmodelledConstruct as e:
        return Trace((), f"error: unsupported {e}")
    return machine.run()


def function_inputs(program: Program) -> list[str]:
    """The 32-bit registers of the function's live-ins (`$sgpr4_sgpr5` -> sgpr4, sgpr5)."""
    module = as_module(program)
    out: list[str] = []
    for reg, _ in module.functions[0].liveins:
        out.extend(physical_units(reg))
    return out
