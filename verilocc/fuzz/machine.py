"""The fuzzer interpreter's machine (`verilocc.fuzz.interpret`): its state (registers per wave
and per lane, definedness, stack slots, the events a run records), how instructions decode to
plans, and the encoding checks a program must pass before it runs.

Nothing here comes from the verifier (`tests/test_layers.py`): the machine is the ISA's.
"""

from __future__ import annotations

import abc
import functools
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from verilocc.fuzz import isa, meanings
from verilocc.fuzz.isa import (ALIGNED_VECTOR_TUPLES, UnmodelledConstruct, class_dwords, is_numbered, physical_units,
                               subreg_lanes)
from verilocc.mir.model import Function, Instruction, Module, Operand

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


def mix(x: int) -> int:
    """splitmix64's finaliser: a fixed bijection of 64-bit integers."""
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def text_hash(text: str) -> int:
    return mix(zlib.crc32(text.encode()) | (len(text) << 32))


@functools.lru_cache(maxsize=2048)
def unit_hash(unit: str) -> int:
    return text_hash("clobber:" + unit)


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


class Stop(Exception):
    pass


Program = str | Module

# Physical registers a program must write before it reads them (`strict`): the condition codes.
_WRITTEN_FIRST = frozenset({"scc", "vcc_lo", "vcc_hi"})

# Opcodes without encoding constraints on their registers (expanded per register).
_GENERIC = frozenset({"COPY", "KILL", "IMPLICIT_DEF", "DBG_VALUE", "PRED_COPY"})

# A location of the `Machine`: (kind, key). Lower-case kinds are physical 32-bit registers
# ("s": one value per wave, "v"/"a": per lane), upper-case ones lanes of virtual registers,
# keyed (id, dword).
MachineLoc = tuple[str, object]


@dataclass
class DecodedOperand:
    """A register operand, decoded once: its locations and what the instruction reads it as."""

    op: Operand
    locs: tuple[MachineLoc, ...]
    role: str  # "lane" (per-lane value), "mask" (a lane mask, one bit per lane), "scalar"


@dataclass
class Plan:
    run: Callable[[Any, Plan], str | None]  # a method of `verilocc.fuzz.interpret.Machine`
    ins: Instruction
    opcode: str  # without `_term`
    defs: list[DecodedOperand]  # explicit defs
    rest: list[Operand]  # explicit operands after the defs (registers and immediates)
    rest_regs: dict[int, DecodedOperand]  # index in `rest` -> decoded register (not `undef`, not $noreg)
    implicit_uses: list[DecodedOperand]  # real inputs among the implicit uses
    implicit_defs: list[DecodedOperand]  # real results among the implicit defs
    key: int = 0


class MachineState(abc.ABC):
    """The state of one run and the decoding of its instructions; `Machine` adds what each
    instruction does."""

    def __init__(self, fn: Function, inputs: dict[str, int], seed: int, max_steps: int, strict: bool = False,
                 exact: bool | frozenset[str] = False, callee_abi: str = "llvm21") -> None:
        self.fn = fn
        # Opcodes with a bit-precise meaning compute their real values: all of them (True),
        # or those of a set; meanings.ALWAYS always do.
        self.exact = exact
        self.strict = strict  # reading an undefined lane of a virtual register is an error
        self.callee_abi = callee_abi
        self.seed = mix(seed & M64)
        self.wave = isa.wave_size(fn.target_cpu, fn.target_features)
        self.full = (1 << self.wave) - 1
        self.gfx90a = (fn.target_cpu or "") in isa.GFX90A_INSTS
        self.inputs = {k.lstrip("$"): v & M32 for k, v in inputs.items()}
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
                return self.full & M32
            if key == "exec_hi":
                return self.full >> 32
            if key == "sgpr_null":
                return 0
        return mix(self.seed ^ text_hash(f"uninit:{key}")) & M32

    def _initial_vector(self, key: object) -> tuple[int, ...]:
        if isinstance(key, str) and key in self.inputs:  # a per-lane input: distinct in every lane
            base = mix(self.inputs[key] ^ 0x5EED)
            return tuple(self.inputs[key] if lane == 0 else mix(base ^ lane) & M32 for lane in range(self.wave))
        base = mix(self.seed ^ text_hash(f"uninit:{key}"))
        return tuple(mix(base ^ lane) & M32 for lane in range(self.wave))

    def scalar(self, loc: MachineLoc) -> int:
        kind, key = loc
        if kind in "va" or kind in "VA":
            raise Stop(f"error: a per-lane register ({loc_name(loc)}) read as one value")
        v = self.scalars.get(key)
        if v is None:
            if self.strict and key in _WRITTEN_FIRST:
                raise Stop(f"error: ${key} is read but not defined")
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
            raise Stop(f"error: %{vid} dword {k} is read but not defined{lanes}")

    def write_scalar(self, loc: MachineLoc, value: int) -> None:
        kind, key = loc
        if kind not in "sS":
            raise Stop(f"error: one value per wave written to the per-lane register {loc_name(loc)}")
        if key == "sgpr_null":
            return
        self.scalars[key] = value & M32
        if kind == "S":
            self.defined[key] = 1

    def write_lanes(self, loc: MachineLoc, values: list[int] | tuple[int, ...], lanes: tuple[int, ...]) -> None:
        """Write values[i] to lane lanes[i] of a vector location; the other lanes keep theirs."""
        kind, key = loc
        if kind in "sS":
            raise Stop(f"error: per-lane values written to {loc_name(loc)}, which holds one value per wave")
        if len(lanes) == self.wave:
            self.vectors[key] = tuple(x & M32 for x in values)
        elif lanes:
            out = list(self.lane_values(loc))
            for lane, x in zip(lanes, values):
                out[lane] = x & M32
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

    def plan(self, ins: Instruction) -> Plan:
        p = self._plans.get(id(ins))
        if p is None:
            p = self._plans[id(ins)] = self._decode(ins)
        return p

    def _decode(self, ins: Instruction) -> Plan:
        opcode = isa.base_opcode(ins.opcode)
        defs_ops, rest = isa.explicit_operands(ins)
        vector_op = isa.is_valu(opcode) or isa.is_vmem(opcode)
        defs = []
        for j, d in enumerate(defs_ops):
            role = "scalar"
            if vector_op:
                role = "mask" if opcode.startswith("V_CMP") or j > 0 else \
                    "scalar" if opcode.startswith(("V_READFIRSTLANE", "V_READLANE")) else "lane"
            defs.append(DecodedOperand(d, self.locs(d), role))
        masks = isa.LANE_MASK_INPUTS.get(opcode, ())
        rest_regs = {}
        for k, o in enumerate(rest):
            if o.kind == "reg" and not o.is_noreg and not o.has("undef"):
                role = ("mask" if k in masks else "lane") if vector_op else "scalar"
                rest_regs[k] = DecodedOperand(o, self.locs(o), role)
        implicit_uses, implicit_defs = [], []
        for o in ins.operands:
            if o.kind != "reg" or not o.is_implicit or o.phys is None or is_numbered(o.phys) or o.has("undef"):
                continue
            if o.is_def:
                if o.phys.startswith("exec"):
                    continue  # only the instructions that write EXEC for real do (handled by name)
                role = "mask" if vector_op and o.phys.startswith("vcc") else "scalar"
                implicit_defs.append(DecodedOperand(o, self.locs(o), role))
            else:
                if vector_op and o.phys.startswith("exec"):
                    continue  # a VALU instruction reads EXEC to know which lanes to write
                if vector_op and o.phys.startswith("vcc") and opcode not in isa.VCC_MASK_INPUT:
                    continue
                role = "mask" if vector_op and o.phys.startswith("vcc") else "scalar"
                implicit_uses.append(DecodedOperand(o, self.locs(o), role))
        others = "|".join(o.text for o in ins.operands if o.kind != "reg")
        p = Plan(self._handler(opcode, ins), ins, opcode, defs, rest, rest_regs, implicit_uses, implicit_defs,
                  text_hash(f"{ins.opcode}#{others}"))
        return p

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
        if op in ("COPY", "PRED_COPY") and not dead_copy(ins):
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

    def _lane_columns(self, p: Plan, active: int) -> list[tuple[int, ...]]:
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

    def _scalar_inputs(self, p: Plan) -> list[int]:
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

    @abc.abstractmethod
    def _handler(self, opcode: str, ins: Instruction) -> Callable[[Any, Plan], str | None]:
        """The method that runs an instruction (`Machine`'s)."""


def dead_copy(ins: Instruction) -> bool:
    """A COPY whose defs are all `dead`: ExpandPostRAPseudos turns it into a KILL, so it writes
    nothing and is never an illegal copy."""
    if ins.opcode not in ("COPY", "PRED_COPY"):
        return False
    defs = [o for o in ins.operands if o.kind == "reg" and o.is_def]
    return bool(defs) and all(o.has("dead") for o in defs)


# Decoded instructions and the encoding check, per function: every run of a function (inputs,
# seeds, exact or hashed) decodes the same instructions the same way.
_CACHE: dict[int, tuple[Function, dict[int, Plan], dict[str, str | None]]] = {}


def _function_cache(fn: Function) -> tuple[dict[int, Plan], dict[str, str | None]]:
    got = _CACHE.get(id(fn))
    if got is None or got[0] is not fn:
        if len(_CACHE) > 64:
            _CACHE.clear()
        got = _CACHE[id(fn)] = (fn, {}, {})
    return got[1], got[2]


def loc_name(loc: MachineLoc) -> str:
    kind, key = loc
    if kind in "sva":
        return f"${key}"
    vid, k = cast(tuple[object, int], key)
    return f"%{vid} dword {k}"

