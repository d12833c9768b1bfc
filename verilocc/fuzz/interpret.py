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

import functools
import operator
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from verilocc.fuzz import isa, meanings
from verilocc.fuzz.isa import (ALIGNED_VECTOR_TUPLES, UnmodelledConstruct, class_dwords, is_numbered,
                               physical_units, subreg_lanes)
from verilocc.mir.model import Function, Instruction, Module, Operand
from verilocc.mir.parser import parse_module

__all__ = ["ALIGNED_VECTOR_TUPLES", "Trace", "UnmodelledConstruct", "class_dwords", "function_inputs",
           "physical_units", "run", "subreg_lanes"]

_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1


def _mix(x: int) -> int:
    """splitmix64's finaliser: a fixed bijection of 64-bit integers."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _text_hash(text: str) -> int:
    return _mix(zlib.crc32(text.encode()) | (len(text) << 32))


@functools.lru_cache(maxsize=2048)
def _unit_hash(unit: str) -> int:
    return _text_hash("clobber:" + unit)


# --------------------------------------------------------------------------------------------
# Traces
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trace:
    # Per store or call: (opcode, non-register operands, values). A vector store's values are
    # ((lane, (input values...)), ...) over its active lanes; a scalar store's the tuple of its
    # input values.
    events: tuple[tuple[object, ...], ...]
    status: str  # "ok", "timeout", "error: ..."
    steps: int = field(default=0, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Stop(Exception):
    pass


Program = str | Module

# Physical registers a program must write before it reads them (`strict`): the condition codes.
_WRITTEN_FIRST = frozenset({"scc", "vcc_lo", "vcc_hi"})

# Opcodes that compute nothing.
_NOTHING = frozenset({"KILL", "DBG_VALUE", "DBG_VALUE_LIST", "DBG_INSTR_REF", "DBG_PHI", "DBG_LABEL",
                      "SCHED_BARRIER", "S_NOP", "ADJCALLSTACKUP", "ADJCALLSTACKDOWN", "S_WAITCNT", "WAVE_BARRIER",
                      "SI_MASKED_UNREACHABLE", "S_SETPRIO", "IGLP_OPT", "S_SET_INST_PREFETCH_DISTANCE"})
_ENDS = frozenset({"S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG", "S_SETPC_B64_return"})
# Opcodes without encoding constraints on their registers (expanded per register).
_GENERIC = frozenset({"COPY", "KILL", "IMPLICIT_DEF", "DBG_VALUE", "PRED_COPY"})

# A location of the `Machine`: (kind, key). Lower-case kinds are physical 32-bit registers
# ("s": one value per wave, "v"/"a": per lane), upper-case ones lanes of virtual registers,
# keyed (id, dword).
MachineLoc = tuple[str, object]


@dataclass
class _Operand:
    """A register operand, decoded once: its locations and what the instruction reads it as."""

    op: Operand
    locs: tuple[MachineLoc, ...]
    role: str  # "lane" (per-lane value), "mask" (a lane mask, one bit per lane), "scalar"


@dataclass
class _Plan:
    run: Callable[[Machine, _Plan], str | None]
    ins: Instruction
    opcode: str  # without `_term`
    defs: list[_Operand]  # explicit defs
    rest: list[Operand]  # explicit operands after the defs (registers and immediates)
    rest_regs: dict[int, _Operand]  # index in `rest` -> decoded register (not `undef`, not $noreg)
    implicit_uses: list[_Operand]  # real inputs among the implicit uses
    implicit_defs: list[_Operand]  # real results among the implicit defs
    key: int = 0


class Machine:
    def __init__(self, fn: Function, inputs: dict[str, int], seed: int, max_steps: int, strict: bool = False,
                 exact: bool | frozenset[str] = False, callee_abi: str = "llvm21") -> None:
        self.fn = fn
        # Opcodes with a bit-precise meaning compute their real values: all of them (True),
        # or those of a set; meanings.ALWAYS always do.
        self.exact = exact
        self.strict = strict  # reading an undefined lane of a virtual register is an error
        self.callee_abi = callee_abi
        self.seed = _mix(seed & _M64)
        self.wave = isa.wave_size(fn.target_cpu, fn.target_features)
        self.full = (1 << self.wave) - 1
        self.gfx90a = (fn.target_cpu or "") in isa.GFX90A_INSTS
        self.inputs = {k.lstrip("$"): v & _M32 for k, v in inputs.items()}
        self.max_steps = max_steps
        self.scalars: dict[object, int] = {}  # physical SGPR-like units and virtual scalar lanes
        self.vectors: dict[object, tuple[int, ...]] = {}  # physical VGPR/AGPR units and virtual vector lanes
        self.defined: dict[object, int] = {}  # virtual lanes: the thread lanes holding a defined value
        self.stack: dict[tuple[str, int], int | tuple[int, ...]] = {}
        self.widths: dict[object, int] = {}
        self.files: dict[object, str] = {}
        for vid, decl in fn.registers.items():
            if decl.reg_class and decl.reg_class != "_":
                self.widths[vid] = class_dwords(decl.reg_class)
                self.files[vid] = isa.class_file(decl.reg_class)
        self.aligned_vector_tuples = (fn.target_cpu or "") in ALIGNED_VECTOR_TUPLES
        self.events: list[tuple[object, ...]] = []
        self.stores = 0
        self._plans, self._encoding = _function_cache(fn)
        self._lanes_of: dict[int, tuple[int, ...]] = {}
        self._broadcasts: dict[int, tuple[int, ...]] = {}

    # -- state -------------------------------------------------------------------------------
    def _initial_scalar(self, key: object) -> int:
        """The value of a scalar location nothing wrote: inputs, or a fixed function of its name."""
        if isinstance(key, str):
            if key in self.inputs:
                return self.inputs[key]
            if key == "exec_lo":
                return self.full & _M32
            if key == "exec_hi":
                return self.full >> 32
            if key == "sgpr_null":
                return 0
        return _mix(self.seed ^ _text_hash(f"uninit:{key}")) & _M32

    def _initial_vector(self, key: object) -> tuple[int, ...]:
        if isinstance(key, str) and key in self.inputs:  # a per-lane input: distinct in every lane
            base = _mix(self.inputs[key] ^ 0x5EED)
            return tuple(self.inputs[key] if lane == 0 else _mix(base ^ lane) & _M32 for lane in range(self.wave))
        base = _mix(self.seed ^ _text_hash(f"uninit:{key}"))
        return tuple(_mix(base ^ lane) & _M32 for lane in range(self.wave))

    def scalar(self, loc: MachineLoc) -> int:
        kind, key = loc
        if kind in "va" or kind in "VA":
            raise _Stop(f"error: a per-lane register ({_name(loc)}) read as one value")
        v = self.scalars.get(key)
        if v is None:
            if self.strict and key in _WRITTEN_FIRST:
                raise _Stop(f"error: ${key} is read but not defined")
            v = self.scalars[key] = self._initial_scalar(key)
        return v

    def lane_values(self, loc: MachineLoc) -> tuple[int, ...]:
        """The value of `loc` in every lane: a scalar location broadcasts."""
        kind, key = loc
        if kind in "sS":
            v = self.scalar(loc)
            b = self._broadcasts.get(v)
            if b is None:
                b = self._broadcasts[v] = (v,) * self.wave
                if len(self._broadcasts) > 4096:
                    self._broadcasts.clear()
            return b
        t = self.vectors.get(key)
        if t is None:
            t = self.vectors[key] = self._initial_vector(key)
        return t

    def active(self) -> int:
        lo = self.scalars.get("exec_lo")
        if lo is None:
            lo = self.scalars["exec_lo"] = self._initial_scalar("exec_lo")
        if self.wave == 32:
            return lo
        hi = self.scalars.get("exec_hi")
        if hi is None:
            hi = self.scalars["exec_hi"] = self._initial_scalar("exec_hi")
        return lo | (hi << 32)

    def lanes(self, mask: int) -> tuple[int, ...]:
        out = self._lanes_of.get(mask)
        if out is None:
            out = self._lanes_of[mask] = tuple(lane for lane in range(self.wave) if (mask >> lane) & 1)
        return out

    def check_defined(self, loc: MachineLoc, mask: int) -> None:
        """strict: the lanes `mask` of a virtual location must hold defined values."""
        kind, key = loc
        if kind in "sva":
            return
        have = self.defined.get(key, 0)
        need = 1 if kind == "S" else mask
        if need & ~have:
            vid, k = cast(tuple[object, int], key)
            lanes = "" if kind == "S" else f" (lanes {need & ~have:#x})"
            raise _Stop(f"error: %{vid} dword {k} is read but not defined{lanes}")

    def write_scalar(self, loc: MachineLoc, value: int) -> None:
        kind, key = loc
        if kind not in "sS":
            raise _Stop(f"error: one value per wave written to the per-lane register {_name(loc)}")
        if key == "sgpr_null":
            return
        self.scalars[key] = value & _M32
        if kind == "S":
            self.defined[key] = 1

    def write_lanes(self, loc: MachineLoc, values: list[int] | tuple[int, ...], lanes: tuple[int, ...]) -> None:
        """Write values[i] to lane lanes[i] of a vector location; the other lanes keep theirs."""
        kind, key = loc
        if kind in "sS":
            raise _Stop(f"error: per-lane values written to {_name(loc)}, which holds one value per wave")
        if len(lanes) == self.wave:
            self.vectors[key] = tuple(x & _M32 for x in values)
        elif lanes:
            out = list(self.lane_values(loc))
            for lane, x in zip(lanes, values):
                out[lane] = x & _M32
            self.vectors[key] = tuple(out)
        else:
            return
        if kind in "VA":
            m = 0
            for lane in lanes:
                m |= 1 << lane
            self.defined[key] = self.defined.get(key, 0) | m

    def undefine(self, loc: MachineLoc, mask: int) -> None:
        if loc[0] in "VA":
            self.defined[loc[1]] = self.defined.get(loc[1], 0) & ~mask
        elif loc[0] == "S":
            self.defined[loc[1]] = 0

    def read_mask(self, locs: tuple[MachineLoc, ...]) -> int:
        """A lane mask held in one (wave32) or two scalar locations."""
        value = 0
        for k, loc in enumerate(locs):
            value |= self.scalar(loc) << (32 * k)
        return value & self.full

    def write_mask(self, locs: tuple[MachineLoc, ...], mask: int) -> None:
        for k, loc in enumerate(locs):
            self.write_scalar(loc, mask >> (32 * k))

    # -- decoding ----------------------------------------------------------------------------
    def locs(self, op: Operand) -> tuple[MachineLoc, ...]:
        """Storage of a register operand, one location per 32 bits."""
        if op.vreg is not None:
            w = self.widths.get(op.vreg)
            if w is None and op.reg_class:
                w = self.widths[op.vreg] = class_dwords(op.reg_class)
                self.files[op.vreg] = isa.class_file(op.reg_class)
            if w is None:
                raise UnmodelledConstruct(f"no class for %{op.vreg}")
            kind = "S" if self.files[op.vreg] == "s" else "V"
            dwords = subreg_lanes(op.subreg) if op.subreg else range(w)
            return tuple((kind, (op.vreg, k)) for k in dwords)
        assert op.phys is not None
        units = physical_units(op.phys)
        if op.subreg:
            units = tuple(units[k] for k in subreg_lanes(op.subreg))
        return tuple((isa.unit_file(u), u) for u in units)

    def file_of(self, op: Operand) -> str:
        if op.vreg is not None:
            self.locs(op)
            return self.files[op.vreg]
        return isa.unit_file(physical_units(op.phys or "")[0])

    def plan(self, ins: Instruction) -> _Plan:
        p = self._plans.get(id(ins))
        if p is None:
            p = self._plans[id(ins)] = self._decode(ins)
        return p

    def _decode(self, ins: Instruction) -> _Plan:
        opcode = isa.base_opcode(ins.opcode)
        defs_ops, rest = isa.explicit_operands(ins)
        vector_op = isa.is_valu(opcode) or isa.is_vmem(opcode)
        defs = []
        for j, d in enumerate(defs_ops):
            role = "scalar"
            if vector_op:
                role = "mask" if opcode.startswith("V_CMP") or j > 0 else \
                    "scalar" if opcode.startswith(("V_READFIRSTLANE", "V_READLANE")) else "lane"
            defs.append(_Operand(d, self.locs(d), role))
        masks = isa.LANE_MASK_INPUTS.get(opcode, ())
        rest_regs = {}
        for k, o in enumerate(rest):
            if o.kind == "reg" and not o.is_noreg and not o.has("undef"):
                role = ("mask" if k in masks else "lane") if vector_op else "scalar"
                rest_regs[k] = _Operand(o, self.locs(o), role)
        implicit_uses, implicit_defs = [], []
        for o in ins.operands:
            if o.kind != "reg" or not o.is_implicit or o.phys is None or is_numbered(o.phys) or o.has("undef"):
                continue
            if o.is_def:
                if o.phys.startswith("exec"):
                    continue  # only the instructions that write EXEC for real do (handled by name)
                role = "mask" if vector_op and o.phys.startswith("vcc") else "scalar"
                implicit_defs.append(_Operand(o, self.locs(o), role))
            else:
                if vector_op and o.phys.startswith("exec"):
                    continue  # a VALU instruction reads EXEC to know which lanes to write
                if vector_op and o.phys.startswith("vcc") and opcode not in isa.VCC_MASK_INPUT:
                    continue
                role = "mask" if vector_op and o.phys.startswith("vcc") else "scalar"
                implicit_uses.append(_Operand(o, self.locs(o), role))
        others = "|".join(o.text for o in ins.operands if o.kind != "reg")
        p = _Plan(self._handler(opcode, ins), ins, opcode, defs, rest, rest_regs, implicit_uses, implicit_defs,
                  _text_hash(f"{ins.opcode}#{others}"))
        return p

    def _handler(self, opcode: str, ins: Instruction) -> Callable[[Machine, _Plan], str | None]:
        """The method that runs an instruction (unbound: plans outlive a run)."""
        m = Machine
        if opcode in _NOTHING or _dead_copy(ins):
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

    # -- static checks -----------------------------------------------------------------------
    def encoding_error(self) -> str | None:
        """Why the program cannot be encoded, or None. The hardware has no misaligned tuples
        (SGPR pairs start even and wider SGPR tuples at a multiple of 4; on gfx90a/gfx942/gfx950
        VGPR and AGPR tuples start even: MachineVerifier "Subtarget requires even aligned vector
        registers"), every operand names a file its encoding has, and operands tied by the
        instruction's definition are one register."""
        for b in self.fn.blocks:
            for ins in b.instructions:
                why = self._instruction_error(ins)
                if why is not None:
                    return f"error: bb.{b.number} line {ins.line}: {why}"
        return None

    def _instruction_error(self, ins: Instruction) -> str | None:
        op = ins.opcode
        if op not in _GENERIC:
            for o in ins.operands:
                if o.kind == "reg" and o.phys and not o.is_implicit and is_numbered(o.phys):
                    units = physical_units(o.phys)
                    if len(units) > 1:
                        why = self._misaligned(o.phys, units)
                        if why:
                            return why
        if op in ("COPY", "PRED_COPY") and not _dead_copy(ins):
            regs = [o for o in ins.operands if o.kind == "reg" and not o.is_implicit and not o.is_noreg]
            if len(regs) == 2 and regs[0].is_def and self.file_of(regs[0]) == "s" and self.file_of(regs[1]) != "s":
                return f"illegal VGPR to SGPR copy ({regs[0].register_text} = COPY {regs[1].register_text})"
        for o, files, what in isa.operand_files(ins, self.gfx90a):
            f = self.file_of(o)
            ok = bool(files & {"v", "a"}) if f == "av" else f in files
            if not ok:
                return f"{op} cannot name {o.register_text} as its {what}"
        tie = isa.tied_input(ins)
        defs, rest = isa.explicit_operands(ins)
        pairs = []
        if tie is not None and defs and tie < len(rest) and rest[tie].kind == "reg":
            pairs.append((defs[0], rest[tie]))
        for o in ins.operands:
            if o.kind == "reg" and o.tied_def is not None and o.tied_def < len(ins.operands):
                pairs.append((ins.operands[o.tied_def], o))
        for d, u in pairs:
            if d.kind == "reg" and not u.is_noreg and self.locs(d) != self.locs(u):
                return f"{op} ties {d.register_text} and {u.register_text}, which are not one register"
        return None

    def _misaligned(self, name: str, units: tuple[str, ...]) -> str | None:
        m = isa.NUMBERED.match(units[0])
        if not m:
            return None
        kind, first = m.group(1), int(m.group(2))
        if kind == "sgpr" and first % (2 if len(units) == 2 else 4):
            return f"misaligned SGPR tuple ${name}"
        if kind in ("vgpr", "agpr") and self.aligned_vector_tuples and first % 2:
            return f"misaligned {kind.upper()} tuple ${name} on {self.fn.target_cpu}"
        return None

    # -- reading operands --------------------------------------------------------------------
    def _exact_on(self, opcode: str) -> bool:
        return opcode in meanings.ALWAYS or self.exact is True or (bool(self.exact) and opcode in self.exact)  # type: ignore[operator]

    def _imm(self, o: Operand) -> int | None:
        if o.kind != "imm":
            return None
        try:
            return int(o.text)
        except ValueError:
            return None

    def _lane_columns(self, p: _Plan, active: int) -> list[tuple[int, ...]]:
        """The per-lane inputs of a VALU instruction, one column per 32 bits (or mask bit)."""
        cols = []
        for d in [*p.rest_regs.values(), *p.implicit_uses]:
            if d.role == "mask":
                m = self.read_mask(d.locs)
                cols.append(tuple((m >> lane) & 1 for lane in range(self.wave)))
                continue
            for loc in d.locs:
                if self.strict:
                    self.check_defined(loc, active)
                cols.append(self.lane_values(loc))
        return cols

    def _scalar_inputs(self, p: _Plan) -> list[int]:
        out: list[int] = []
        for d in [*p.rest_regs.values(), *p.implicit_uses]:
            for loc in d.locs:
                if loc[0] in "vaVA":  # an SALU or pseudo reading a vector register: its active lanes
                    active = self.active()
                    if self.strict:
                        self.check_defined(loc, active)
                    vals = self.lane_values(loc)
                    out.extend(vals[lane] for lane in self.lanes(active))
                    continue
                if self.strict:
                    self.check_defined(loc, 1)
                out.append(self.scalar(loc))
        return out

    def _combined(self, values: list[int]) -> int:
        out = 0
        for k, v in enumerate(values):
            out |= v << (32 * k)
        return out

    # -- instructions ------------------------------------------------------------------------
    def _nothing(self, p: _Plan) -> None:
        return None

    def _end(self, p: _Plan) -> str:
        return "end"

    def _branch(self, p: _Plan) -> str:
        return next(o.text for o in p.ins.operands if o.kind == "mbb")

    def _cbranch(self, p: _Plan) -> str | None:
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

    def _implicit_def(self, p: _Plan) -> None:
        """An undefined value: the active lanes of a vector register, or a scalar register."""
        active = self.active()
        for d in p.defs:
            for k, loc in enumerate(d.locs):
                garbage = _mix(0xDEAD ^ _text_hash("IMPLICIT_DEF") ^ k) & _M32
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
            raise _Stop(f"error: {what} of {len(src)} registers into {len(dst)}")
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
                    raise _Stop(f"error: illegal VGPR to SGPR copy ({_name(d)} from {_name(s)})")
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

    def _move(self, p: _Plan) -> str | None:
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
            self._copy_into(d.locs, [(imm >> (32 * k)) & _M32 for k in range(len(d.locs))], p.opcode)
            return None
        self._copy_into(d.locs, list(p.rest_regs[p.rest.index(s)].locs), p.opcode)
        return None

    def _reg_sequence(self, p: _Plan) -> None:
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
                raise _Stop("error: REG_SEQUENCE width mismatch")
            for k, loc in zip(dwords, got):
                srcs[k] = loc
        self._copy_into(d.locs, srcs, "REG_SEQUENCE")
        return None

    def _readfirstlane(self, p: _Plan) -> str | None:
        src = p.rest_regs.get(0)
        if src is None:
            return self._salu(p)
        active = self.active()
        lane = (active & -active).bit_length() - 1 if active else 0
        if self.strict:
            self.check_defined(src.locs[0], 1 << lane)
        self.write_scalar(p.defs[0].locs[0], self.lane_values(src.locs[0])[lane])
        return None

    def _lane_select(self, p: _Plan, index: int) -> int:
        o = p.rest[index]
        if o.kind == "imm":
            sel = self._imm(o) or 0
        else:
            sel = self.scalar(p.rest_regs[index].locs[0]) if index in p.rest_regs else 0
        return sel & (self.wave - 1)

    def _readlane(self, p: _Plan) -> str | None:
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

    def _writelane(self, p: _Plan) -> None:
        """V_WRITELANE_B32 and SI_SPILL_S32_TO_VGPR (value, lane, vdst_in): the def is vdst_in with
        one lane replaced, whatever EXEC is (the encoding check made the def and vdst_in one
        register)."""
        d = p.defs[0].locs[0]
        o = p.rest[0]
        value = (self._imm(o) or 0) if o.kind == "imm" else self.scalar(p.rest_regs[0].locs[0]) if 0 in p.rest_regs \
            else 0
        lane = self._lane_select(p, 1)
        if 2 in p.rest_regs and p.rest_regs[2].locs[0] != d:  # cannot happen in an encodable program
            raise _Stop("error: a lane write whose vdst_in is another register")
        self.write_lanes(d, [value], (lane,))
        return None

    def _saveexec(self, p: _Plan) -> None:
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

    def _slot(self, p: _Plan) -> tuple[str, int]:
        """(stack slot number, first 32-bit word) of a spill pseudo's `%stack.N` and offset."""
        st = next(o for o in p.rest if o.kind == "stack")
        m = re.match(r"%stack\.(\d+)", st.text)
        if not m:
            raise UnmodelledConstruct(f"stack operand {st.text}")
        imms = [o for o in p.rest if o.kind == "imm"]
        offset = int(imms[0].text) if imms else 0
        return m.group(1), offset // 4

    def _spill(self, p: _Plan) -> None:
        """A save to a stack slot: whole for an SGPR spill, the active lanes for a vector one."""
        slot, base = self._slot(p)
        src = p.rest_regs[0]
        active = self.active()
        lanes = self.lanes(active)
        for k, loc in enumerate(src.locs):
            where = (slot, base + k)
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

    def _uninit_slot(self, where: tuple[str, int]) -> tuple[int, ...]:
        base = _mix(self.seed ^ _text_hash(f"uninit:stack.{where[0]}.{where[1]}"))
        return tuple(_mix(base ^ lane) & _M32 for lane in range(self.wave))

    def _reload(self, p: _Plan) -> None:
        slot, base = self._slot(p)
        d = p.defs[0]
        active = self.active()
        lanes = self.lanes(active)
        for k, loc in enumerate(d.locs):
            where = (slot, base + k)
            got = self.stack.get(where)
            if loc[0] in "sS":
                if got is None or isinstance(got, tuple):
                    got = _mix(self.seed ^ _text_hash(f"uninit:stack.{slot}.{base + k}")) & _M32 \
                        if got is None else got[0]
                self.write_scalar(loc, got)
                continue
            if not isinstance(got, tuple):
                got = self._uninit_slot(where) if got is None else (got,) * self.wave
            self.write_lanes(loc, [got[lane] for lane in lanes], lanes)
        return None

    def _call(self, p: _Plan) -> None:
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
        h = _mix(self.seed ^ _text_hash("call"))
        callee = p.rest[0] if p.rest else None
        if callee is not None and callee.kind == "reg" and 0 in p.rest_regs:
            for loc in p.rest_regs[0].locs:
                h = _mix(h ^ self.scalar(loc))
        elif callee is not None:
            h = _mix(h ^ _text_hash(callee.text))
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
            h = _mix(h ^ v)
        per_lane = {lane: h for lane in lanes}
        for col in vector_args:
            for lane in lanes:
                per_lane[lane] = _mix(per_lane[lane] ^ col[lane])
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
            u = _unit_hash(unit)
            if isa.unit_file(unit) == "s":
                self.scalars[unit] = _mix(h ^ u) & _M32
            else:
                old = list(self.lane_values(("v", unit)))
                for lane in lanes:
                    old[lane] = (per_lane[lane] ^ u) & _M32  # per_lane is mixed already
                self.vectors[unit] = tuple(old)
        return None

    def _valu(self, p: _Plan) -> str | None:
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
        base = _mix(self.seed ^ p.key)
        hs = [base] * len(lanes)
        for col in cols:
            hs = [_mix(h ^ col[lane]) for h, lane in zip(hs, lanes)]
        compare = opcode.startswith(("V_CMP", "V_CMPX"))
        results = [*p.defs, *p.implicit_defs]
        for j, d in enumerate(results):
            if d.role == "mask" or compare:
                m = 0
                for h, lane in zip(hs, lanes):
                    if _mix(h ^ ((j + 1) << 8)) & 1:
                        m |= 1 << lane
                self.write_mask(d.locs, m)
                if opcode.startswith("V_CMPX") and j == 0:
                    self._write_exec(m)
                continue
            if d.role == "scalar":  # an implicit scalar result of a VALU instruction
                self.write_scalar(d.locs[0], _mix(base ^ ((j + 1) << 8)) & 1)
                continue
            for k, loc in enumerate(d.locs):
                salt = (j + 1) << 8 | k
                self.write_lanes(loc, [_mix(h ^ salt) for h in hs], lanes)
        if opcode.startswith("V_CMPX") and not results:
            m = 0
            for h, lane in zip(hs, lanes):
                if _mix(h ^ (1 << 8)) & 1:
                    m |= 1 << lane
            self._write_exec(m)
        return None

    def _write_exec(self, mask: int) -> None:
        self.write_mask((("s", "exec_lo"), ("s", "exec_hi")) if self.wave == 64 else (("s", "exec_lo"),), mask)

    def _lane_exact(self, p: _Plan) -> bool:
        """Run a VALU instruction by its real meaning (`meanings.LANE`); False when it has none
        here (the caller hashes)."""
        meaning = meanings.LANE.get(p.opcode)
        if meaning is None:
            return False
        values: list[tuple[int, ...] | int] = []
        active = self.active()
        for k, o in enumerate(p.rest):
            if o.kind == "imm":
                imm = self._imm(o)
                if imm is None:
                    return False
                values.append(imm)
            elif o.kind == "reg" and k in p.rest_regs:
                d = p.rest_regs[k]
                if d.role == "mask":
                    m = self.read_mask(d.locs)
                    values.append(tuple((m >> lane) & 1 for lane in range(self.wave)))
                    continue
                cols = []
                for loc in d.locs:
                    if self.strict:
                        self.check_defined(loc, active)
                    cols.append(self.lane_values(loc))
                values.append(cols[0] if len(cols) == 1 else
                              tuple(self._combined([c[lane] for c in cols]) for lane in range(self.wave)))
            else:
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
                self.write_lanes(loc, [(r >> (32 * k)) & _M32 for r in outs[j]], lanes)
        vcc_def = next((d for d in p.implicit_defs if d.role == "mask"), None)
        if vcc_def is not None:
            self.write_mask(vcc_def.locs, vcc_bits)
        if p.opcode.startswith("V_CMPX"):  # EXEC becomes the lanes where the compare holds
            self._write_exec(result)
        return True

    def _salu(self, p: _Plan) -> str | None:
        if self._exact_on(p.opcode) and self._scalar_exact(p):
            return None
        return self._generic(p)

    def _scalar_exact(self, p: _Plan) -> bool:
        meaning = meanings.SCALAR.get(p.opcode)
        if meaning is None:
            return False
        values = []
        for k, o in enumerate(p.rest):
            if o.kind == "imm":
                imm = self._imm(o)
                if imm is None:
                    return False
                values.append(imm)
            elif o.kind == "reg" and k in p.rest_regs:
                locs = p.rest_regs[k].locs
                if self.strict:
                    for loc in locs:
                        self.check_defined(loc, 1)
                values.append(self._combined([self.scalar(loc) for loc in locs]))
            else:
                return False
        reads_scc = any(d.op.phys == "scc" for d in p.implicit_uses)
        res, scc = meaning(values, self.scalar(("s", "scc")) & 1 if reads_scc else 0)
        if len(res) != len(p.defs):
            return False
        for d, r in zip(p.defs, res):
            for k, loc in enumerate(d.locs):
                self.write_scalar(loc, (r >> (32 * k)) & _M32)
        for d in p.implicit_defs:
            if d.op.phys == "scc" and scc is not None:
                self.write_scalar(d.locs[0], scc)
        return True

    def _generic(self, p: _Plan) -> str | None:
        """Any other instruction: a pseudo-random function of everything it reads, one value
        per wave (a vector result, which no scalar instruction has, is written in the active
        lanes)."""
        inputs = self._scalar_inputs(p)
        if isa.is_store(p.ins):
            self.events.append((p.ins.opcode, tuple(o.text for o in p.ins.operands if o.kind != "reg"), tuple(inputs)))
            self.stores += 1
        if p.ins.mem is not None:  # memory: what it reads depends on the stores before it
            inputs.append(self.stores)
        h = _mix(self.seed ^ p.key)
        for v in inputs:
            h = _mix(h ^ v)
        compare = p.opcode.startswith(("S_CMP", "S_BITCMP"))
        for j, d in enumerate([*p.defs, *p.implicit_defs]):
            for k, loc in enumerate(d.locs):
                x = _mix(h ^ ((j + 1) << 8 | k))
                if compare or d.op.phys == "scc":
                    x = (x & 1) if k == 0 else 0
                if loc[0] in "sS":
                    self.write_scalar(loc, x)
                else:
                    lanes = self.lanes(self.active())
                    self.write_lanes(loc, [_mix(x ^ lane) for lane in lanes], lanes)
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
        except _Stop as e:
            return Trace(tuple(self.events), str(e), steps)
        except UnmodelledConstruct as e:
            return Trace(tuple(self.events), f"error: unsupported {e}", steps)
        except (StopIteration, IndexError, ValueError, KeyError) as e:
            return Trace(tuple(self.events), f"error: malformed instruction ({type(e).__name__})", steps)


def _dead_copy(ins: Instruction) -> bool:
    """A COPY whose defs are all `dead`: ExpandPostRAPseudos turns it into a KILL, so it writes
    nothing and is never an illegal copy."""
    if ins.opcode not in ("COPY", "PRED_COPY"):
        return False
    defs = [o for o in ins.operands if o.kind == "reg" and o.is_def]
    return bool(defs) and all(o.has("dead") for o in defs)


# Decoded instructions and the encoding check, per function: every run of a function (inputs,
# seeds, exact or hashed) decodes the same instructions the same way.
_CACHE: dict[int, tuple[Function, dict[int, _Plan], dict[str, str | None]]] = {}


def _function_cache(fn: Function) -> tuple[dict[int, _Plan], dict[str, str | None]]:
    got = _CACHE.get(id(fn))
    if got is None or got[0] is not fn:
        if len(_CACHE) > 64:
            _CACHE.clear()
        got = _CACHE[id(fn)] = (fn, {}, {})
    return got[1], got[2]


def _name(loc: MachineLoc) -> str:
    kind, key = loc
    if kind in "sva":
        return f"${key}"
    vid, k = cast(tuple[object, int], key)
    return f"%{vid} dword {k}"


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
