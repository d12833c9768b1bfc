"""A concrete interpreter for pre-RA and post-RA MIR: the value oracle of the fuzzer.

It runs one lane of one wave. Registers hold 32-bit values: a virtual register of class
`vreg_128` is four values, `%7.sub2` the third; a physical register `$vgpr4_vgpr5` is the two
32-bit registers `vgpr4`, `vgpr5` (storage computed from the name here, not by the verifier's
target tables). Only moves are interpreted: COPY, moves of immediates and of registers,
REG_SEQUENCE, subregister reads and writes, KILL, IMPLICIT_DEF (a fixed garbage value),
spills and restores through a map of stack slots, and SGPR spills to VGPR lanes. Every other
opcode is a fixed pseudo-random function of (opcode, the text of its non-register operands,
its input values) under a per-run seed, so a pre-RA program and an allocation of it compute
the same values if and only if the allocation moves values correctly (up to hash
collisions). Compares give 0 or 1, so branches on SCC or VCC go both ways. Stores append
(opcode, operands, values) to the trace; loads see how many stores came before them. A
misaligned register tuple in a machine instruction (which the hardware cannot encode; COPY
and the other generic pseudos are expanded register by register) faults the whole run.

`run(program, inputs, seed)` returns a `Trace`; two programs agree on an input when their
traces are equal. A run stops with status "timeout" after `max_steps` instructions and with
"error: ..." on something it cannot execute (a width mismatch in a mutated COPY, a misaligned
tuple, an unknown construct); those statuses are part of the trace. `strict=True` also
refuses reads of undefined virtual register lanes (a well-formedness check of pre-RA code).
"""

from __future__ import annotations

import functools
import random
import re
import zlib
from dataclasses import dataclass, field

from verilocc.mir.model import Function, Instruction, Module, Operand
from verilocc.mir.parser import parse_module

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


# --------------------------------------------------------------------------------------------
# Register storage, computed from names
# --------------------------------------------------------------------------------------------
_NUMBERED = re.compile(r"(vgpr|sgpr|agpr|ttmp)(\d+)$")
_PAIRS = {
    "vcc": ("vcc_lo", "vcc_hi"),
    "exec": ("exec_lo", "exec_hi"),
    "flat_scr": ("flat_scr_lo", "flat_scr_hi"),
    "xnack_mask": ("xnack_mask_lo", "xnack_mask_hi"),
    "tba": ("tba_lo", "tba_hi"),
    "tma": ("tma_lo", "tma_hi"),
}
_SINGLES = frozenset({"vcc_lo", "vcc_hi", "exec_lo", "exec_hi", "scc", "m0", "mode", "flat_scr_lo", "flat_scr_hi",
                      "sgpr_null", "src_scc", "src_vccz", "src_execz"})


# Opcodes without encoding constraints on their registers (expanded per register).
_GENERIC = frozenset({"COPY", "KILL", "IMPLICIT_DEF", "DBG_VALUE"})
# Processors with FeatureGFX90AInsts: VGPR/AGPR tuples must start at an even register.
ALIGNED_VECTOR_TUPLES = frozenset({"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})


class Unsupported(Exception):
    pass


@functools.lru_cache(maxsize=4096)
def physical_units(name: str) -> tuple[str, ...]:
    """The 32-bit registers of a physical register: `vgpr4_vgpr5` -> (`vgpr4`, `vgpr5`)."""
    name = name.lower().lstrip("$")
    if name in _PAIRS:
        return _PAIRS[name]
    if name in _SINGLES:
        return (name,)
    parts = name.split("_")
    if all(_NUMBERED.match(p) for p in parts):
        ms = [_NUMBERED.match(p) for p in parts]
        kinds = {m.group(1) for m in ms if m}
        idx = [int(m.group(2)) for m in ms if m]
        if len(kinds) == 1 and idx == list(range(idx[0], idx[0] + len(idx))):
            return tuple(parts)
    raise Unsupported(f"register ${name}")


def class_dwords(cls: str) -> int:
    """Width in 32-bit registers of a register class name (`vreg_64_align2` -> 2)."""
    m = re.search(r"_(\d+)", cls)
    if not m or int(m.group(1)) % 32:
        raise Unsupported(f"register class {cls}")
    return int(m.group(1)) // 32


@functools.lru_cache(maxsize=1024)
def subreg_lanes(index: str) -> tuple[int, ...]:
    """`sub2_sub3` -> (2, 3)."""
    out = []
    for part in index.split("_"):
        if not re.fullmatch(r"sub\d+", part):
            raise Unsupported(f"subregister index {index}")
        out.append(int(part[3:]))
    if out != list(range(out[0], out[0] + len(out))):
        raise Unsupported(f"subregister index {index}")
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Traces
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trace:
    events: tuple[tuple[object, ...], ...]  # (opcode, non-register operands, input values) per store
    status: str  # "ok", "timeout", "error: ..."
    steps: int = field(default=0, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Stop(Exception):
    pass


Program = str | Module

# Opcodes whose single def is the value of their single input (register or immediate).
_MOVES = frozenset({"COPY", "V_MOV_B32_e32", "V_MOV_B32_e64", "S_MOV_B32", "S_MOV_B64", "V_MOV_B64_PSEUDO",
                    "S_MOV_B64_IMM_PSEUDO", "V_ACCVGPR_WRITE_B32_e64", "V_ACCVGPR_READ_B32_e64",
                    "V_ACCVGPR_MOV_B32", "S_MOVK_I32", "AV_MOV_B32_IMM_PSEUDO", "PRED_COPY", "STRICT_WWM"})


class Machine:
    def __init__(self, fn: Function, inputs: dict[str, int], seed: int, max_steps: int, strict: bool = False,
                 exact: bool | frozenset[str] = False) -> None:
        self.fn = fn
        # Opcodes with a bit-precise meaning compute their real values: all of them (True),
        # or those of a set.
        self.exact = exact
        self.strict = strict  # reading a virtual register lane no def wrote is an error
        self.undefined: set[tuple[object, int]] = set()  # lanes IMPLICIT_DEF wrote
        self.seed = _mix(seed & _M64)
        self.inputs = {k.lstrip("$"): v & _M32 for k, v in inputs.items()}
        self.max_steps = max_steps
        self.regs: dict[str, int] = {}
        self.vregs: dict[tuple[object, int], int] = {}
        self.stack: dict[tuple[str, int], int] = {}
        self.side: dict[tuple[str, int], int] = {}  # (vgpr, lane) -> value, lanes other than the modelled one
        self.widths: dict[object, int] = {}
        for vid, decl in fn.registers.items():
            if decl.reg_class and decl.reg_class != "_":
                self.widths[vid] = class_dwords(decl.reg_class)
        self.aligned_vector_tuples = (fn.target_cpu or "") in ALIGNED_VECTOR_TUPLES
        self.events: list[tuple[object, ...]] = []
        self.stores = 0
        self._keys: dict[int, int] = {}
        self._storage: dict[int, tuple[tuple[str, object, int], ...]] = {}  # id(operand) -> `_lanes`

    # -- state -------------------------------------------------------------------------------
    def _initial(self, what: str) -> int:
        """The value of a location nothing wrote: inputs, or a fixed function of its name."""
        if what in self.inputs:
            return self.inputs[what]
        if what in ("exec_lo", "exec_hi"):
            return _M32
        return _mix(self.seed ^ _text_hash("uninit:" + what)) & _M32

    def _vwidth(self, op: Operand) -> int:
        w = self.widths.get(op.vreg)
        if w is None and op.reg_class:
            w = class_dwords(op.reg_class)
            self.widths[op.vreg] = w
        if w is None:
            raise Unsupported(f"no class for %{op.vreg}")
        return w

    def _lanes(self, op: Operand) -> tuple[tuple[str, object, int], ...]:
        """Storage of a register operand: ("v", vreg, lane) or ("p", unit, 0) per 32 bits.

        Operands do not change while a program runs, so each one is worked out once.
        """
        cached = self._storage.get(id(op))
        if cached is not None:
            return cached
        if op.vreg is not None:
            lanes = subreg_lanes(op.subreg) if op.subreg else range(self._vwidth(op))
            out = tuple(("v", op.vreg, k) for k in lanes)
        else:
            assert op.phys is not None
            units = physical_units(op.phys)
            if op.subreg:
                units = tuple(units[k] for k in subreg_lanes(op.subreg))
            out = tuple(("p", u, 0) for u in units)
        self._storage[id(op)] = out
        return out

    def _check_tuple(self, name: str, units: tuple[str, ...]) -> None:
        """The hardware has no misaligned tuples: SGPR pairs start even and wider SGPR tuples at
        a multiple of 4 (no such LLVM register exists otherwise); on gfx90a/gfx942/gfx950,
        VGPR and AGPR tuples start even (the encoding drops bit 0, MachineVerifier: "Subtarget
        requires even aligned vector registers"). Such an operand faults the run."""
        m = _NUMBERED.match(units[0])
        if not m:
            return
        kind, first = m.group(1), int(m.group(2))
        if kind == "sgpr" and first % (2 if len(units) == 2 else 4):
            raise _Stop(f"error: misaligned SGPR tuple ${name}")
        if kind in ("vgpr", "agpr") and self.aligned_vector_tuples and first % 2:
            raise _Stop(f"error: misaligned {kind.upper()} tuple ${name} on {self.fn.target_cpu}")

    def read(self, op: Operand) -> list[int]:
        out = []
        for kind, where, k in self._lanes(op):
            if kind == "v":
                key = (where, k)
                if self.strict and (key not in self.vregs or key in self.undefined):
                    raise _Stop(f"error: %{where} lane {k} is read but not defined")
                if key not in self.vregs:
                    self.vregs[key] = _mix(self.seed ^ _text_hash(f"uninit:%{where}.{k}")) & _M32
                out.append(self.vregs[key])
            else:
                name = str(where)
                if name not in self.regs:
                    self.regs[name] = self._initial(name)
                out.append(self.regs[name])
        return out

    def write(self, op: Operand, values: list[int]) -> None:
        lanes = self._lanes(op)
        if len(lanes) != len(values):
            raise _Stop(f"error: {len(values)} values written to {op.register_text} ({len(lanes)} registers)")
        for (kind, where, k), val in zip(lanes, values):
            if kind == "v":
                self.vregs[(where, k)] = val & _M32
                self.undefined.discard((where, k))
            else:
                self.regs[str(where)] = val & _M32
                if self.side:  # an ordinary VGPR write clobbers every lane
                    for key in [key for key in self.side if key[0] == where]:
                        del self.side[key]

    # -- instruction semantics ---------------------------------------------------------------
    def _key(self, ins: Instruction) -> int:
        k = self._keys.get(id(ins))
        if k is None:
            others = "|".join(op.text for op in ins.operands if op.kind != "reg")
            k = _text_hash(f"{ins.opcode}#{others}")
            self._keys[id(ins)] = k
        return k

    def _hash(self, ins: Instruction, inputs: list[int]) -> int:
        h = _mix(self.seed ^ self._key(ins))
        for v in inputs:
            h = _mix(h ^ v)
        return h

    def execute(self, ins: Instruction) -> str | None:
        """Run one instruction; returns a branch target label, "end", or None to go on."""
        op = ins.opcode
        # Implicit operands on numbered registers (`implicit-def $vgpr4_vgpr5` after a subregister
        # def, `implicit killed $vgpr0_vgpr1`) only annotate liveness; on special registers
        # ($scc, $vcc, $exec, $mode, $m0) they are real inputs and results.
        regs = [o for o in ins.operands if o.kind == "reg" and not o.is_noreg
                and not (o.is_implicit and o.phys is not None and _is_numbered(o.phys))]
        defs = [o for o in regs if o.is_def]
        uses = [o for o in regs if not o.is_def and not o.has("undef")]
        explicit_uses = [o for o in uses if not o.is_implicit]
        others = [o for o in ins.operands if o.kind != "reg"]
        if op in ("KILL", "DBG_VALUE", "DBG_LABEL", "SCHED_BARRIER", "S_NOP"):
            return None
        if op == "IMPLICIT_DEF":
            for d in defs:
                self.write(d, [_mix(0xDEAD ^ _text_hash("IMPLICIT_DEF") ^ k) & _M32 for k in range(len(self._lanes(d)))])
                self.undefined.update((w, k) for kind, w, k in self._lanes(d) if kind == "v")
            return None
        if op in ("S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG", "S_SETPC_B64_return"):
            return "end"
        if op == "S_BRANCH":
            return others[0].text
        if op.startswith("S_CBRANCH_"):
            cond = op[len("S_CBRANCH_"):]
            target = others[0].text
            if cond in ("SCC1", "SCC0"):
                val = self.read(_phys("scc"))[0] != 0
                taken = val if cond == "SCC1" else not val
            elif cond in ("VCCNZ", "VCCZ"):
                reg = next((u for u in uses if u.phys and u.phys.startswith("vcc")), _phys("vcc"))
                val = any(self.read(reg))
                taken = val if cond == "VCCNZ" else not val
            elif cond in ("EXECNZ", "EXECZ"):
                val = any(self.read(_phys("exec")))
                taken = val if cond == "EXECNZ" else not val
            else:
                raise Unsupported(op)
            return target if taken else None
        if op in ("SI_SPILL_S32_TO_VGPR", "SI_RESTORE_S32_FROM_VGPR"):
            self._lane_spill(op, defs, explicit_uses, others)
            return None
        if op.startswith("SI_SPILL_") and op.endswith("_SAVE"):
            slot, base = _slot(others)
            vals = self.read(explicit_uses[0])
            for k, v in enumerate(vals):
                self.stack[(slot, base + k)] = v
            return None
        if op.startswith("SI_SPILL_") and op.endswith("_RESTORE"):
            slot, base = _slot(others)
            n = len(self._lanes(defs[0]))
            vals = []
            for k in range(base, base + n):
                vals.append(self.stack.get((slot, k), _mix(self.seed ^ _text_hash(f"uninit:stack.{slot}.{k}")) & _M32))
            self.write(defs[0], vals)
            return None
        if op == "REG_SEQUENCE":
            d = defs[0]
            vals = [0] * len(self._lanes(d))
            regs = [o for o in ins.operands if o.kind == "reg" and not o.is_def]
            subs = [o for o in others if o.kind == "subreg"]
            if len(regs) != len(subs):
                raise Unsupported("REG_SEQUENCE shape")
            for r, s in zip(regs, subs):
                lanes = subreg_lanes(s.text[len("%subreg."):])
                got = self.read(r)
                if len(got) != len(lanes):
                    raise _Stop("error: REG_SEQUENCE width mismatch")
                for k, x in zip(lanes, got):
                    vals[k] = x
            self.write(d, vals)
            return None
        if op in _MOVES and len([d for d in defs if not d.is_implicit]) == 1:
            d = next(d for d in defs if not d.is_implicit)
            n = len(self._lanes(d))
            if len(explicit_uses) == 1 and not others:
                vals = self.read(explicit_uses[0])
                if len(vals) != n:
                    raise _Stop(f"error: {op} of {len(vals)} registers into {n}")
                self.write(d, vals)
                return None
            if not explicit_uses and len(others) == 1 and others[0].kind == "imm":
                imm = int(others[0].text) & ((1 << (32 * n)) - 1)  # sign-extended to the def's width
                self.write(d, [(imm >> (32 * k)) & _M32 for k in range(n)])
                return None
        if self.exact and (self.exact is True or op in self.exact) and self._exact(ins, defs):
            return None
        # Everything else: a pseudo-random function of everything it reads.
        inputs = []
        for u in uses:
            inputs.extend(self.read(u))
        mem = ins.mem is not None
        if mem:
            inputs.append(self.stores)
        is_store = "store" in (ins.mem or "") or any(w in op for w in ("STORE", "ATOMIC", "DS_WRITE"))
        if is_store:
            vals = []
            for u in explicit_uses:
                vals.extend(self.read(u))
            self.events.append((op, tuple(o.text for o in others), tuple(vals)))
            self.stores += 1
        h = self._hash(ins, inputs)
        compare = op.startswith(("S_CMP", "V_CMP", "S_BITCMP"))
        for j, d in enumerate(defs):
            n = len(self._lanes(d))
            vals = []
            for k in range(n):
                x = _mix(h ^ ((j + 1) << 8 | k))
                if compare or (d.phys == "scc"):
                    x = (x & 1) if k == 0 else 0
                vals.append(x & _M32)
            self.write(d, vals)
        return None

    def _exact(self, ins: Instruction, defs: list[Operand]) -> bool:
        """Run `ins` by its bit-precise meaning (`semantics.bitvector`) when it has one: the
        real value, for a lane-wise opcode the value of the modelled lane. False when it has
        none here (the caller hashes)."""
        from verilocc.semantics import bitvector

        if bitvector.meaning(ins) is None:
            return False
        values = {}
        for pos, o in enumerate(ins.operands):
            if o.kind == "reg" and not o.is_def and not o.is_implicit:
                if o.has("undef"):
                    return False
                lanes = self.read(o)
                values[pos] = sum(v << (32 * k) for k, v in enumerate(lanes))
        results = bitvector.evaluate(ins, values)
        if results is None:
            return False
        for d in defs:
            if not d.is_implicit:
                name = "d0"
            elif d.phys == "scc":
                name = "scc"
            elif d.phys in ("vcc", "vcc_lo"):
                name = "vcc"
            else:
                return False
            if name not in results:
                return False
        for d in defs:
            name = "d0" if not d.is_implicit else ("scc" if d.phys == "scc" else "vcc")
            n = len(self._lanes(d))
            self.write(d, [(results[name] >> (32 * k)) & _M32 for k in range(n)])
        return True

    def _lane_spill(self, op: str, defs: list[Operand], uses: list[Operand], others: list[Operand]) -> None:
        """SGPR spills to a lane of a VGPR (v_writelane / v_readlane). The modelled lane is lane
        0; other lanes live beside the register until an ordinary write to it clobbers them."""
        lane = int(next(o for o in others if o.kind == "imm").text)
        if op == "SI_SPILL_S32_TO_VGPR":
            (value,) = self.read(uses[0])
            (vgpr,) = physical_units(defs[0].phys or "")
            if lane == 0:
                self.regs[vgpr] = value
            else:
                self.side[(vgpr, lane)] = value
            return
        (vgpr,) = physical_units(uses[0].phys or "")
        if lane == 0:
            (value,) = self.read(uses[0])
        else:
            value = self.side.get((vgpr, lane), _mix(self.seed ^ _text_hash(f"lane:{vgpr}.{lane}")) & _M32)
        self.write(defs[0], [value])

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
            # A misaligned tuple in a machine instruction means the program cannot be encoded
            # at all. Target-independent pseudos are expanded register by register
            # (copyPhysReg), so LLVM does put odd tuples in a COPY on gfx90a.
            for b in blocks:
                for ins in b.instructions:
                    if ins.opcode in _GENERIC:
                        continue
                    for op in ins.operands:
                        if op.kind == "reg" and op.phys and not op.is_implicit and _is_numbered(op.phys):
                            units = physical_units(op.phys)
                            if len(units) > 1:
                                self._check_tuple(op.phys, units)
            while True:
                block = blocks[bi]
                target: str | None = None
                for ins in block.instructions:
                    steps += 1
                    if steps > self.max_steps:
                        return Trace(tuple(self.events), "timeout", steps)
                    target = self.execute(ins)
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
        except Unsupported as e:
            return Trace(tuple(self.events), f"error: unsupported {e}", steps)
        except (StopIteration, IndexError, ValueError) as e:
            return Trace(tuple(self.events), f"error: malformed instruction ({type(e).__name__})", steps)


def _is_numbered(phys: str) -> bool:
    return phys.startswith(("vgpr", "sgpr", "agpr", "ttmp")) and phys[4:5].isdigit()


def _slot(others: list[Operand]) -> tuple[str, int]:
    """(stack slot number, first 32-bit word) of a spill pseudo's `%stack.N` and offset."""
    st = next(o for o in others if o.kind == "stack")
    m = re.match(r"%stack\.(\d+)", st.text)
    if not m:
        raise Unsupported(f"stack operand {st.text}")
    imms = [o for o in others if o.kind == "imm"]
    offset = int(imms[0].text) if imms else 0
    return m.group(1), offset // 4


def _phys(name: str) -> Operand:
    return Operand(kind="reg", text=f"${name}", line=0, column=0, phys=name)


def as_module(program: Program) -> Module:
    return parse_module(program, "<fuzz>") if isinstance(program, str) else program


def run(program: Program, inputs: dict[str, int], seed: int = 0, max_steps: int = 20000,
        function: str | None = None, strict: bool = False, exact: bool | frozenset[str] = False) -> Trace:
    """Run a function (the first unless named) of `program` on 32-bit register `inputs`.
    `strict`: reading a virtual register lane that holds no defined value is an error (a
    check that a pre-RA program is well formed on this path). `exact`: opcodes with a
    bit-precise meaning in `semantics.bitvector` compute their real values instead of a
    pseudo-random function (the fuzzer's second opinion on a VERIFIED variant whose trace
    differs: an input the real instruction ignores cannot make a difference); a set of
    opcodes: only those do, every other opcode is hashed as usual."""
    module = as_module(program)
    fn = module.functions[0] if function is None else module.function(function)
    try:
        machine = Machine(fn, inputs, seed, max_steps, strict, exact)
    except Unsupported as e:
        return Trace((), f"error: unsupported {e}")
    return machine.run()


def random_inputs(registers: list[str] | tuple[str, ...], rng: random.Random) -> dict[str, int]:
    return {r: rng.getrandbits(32) for r in registers}


def function_inputs(program: Program) -> list[str]:
    """The 32-bit registers of the function's live-ins (`$sgpr4_sgpr5` -> sgpr4, sgpr5)."""
    module = as_module(program)
    out: list[str] = []
    for reg, _ in module.functions[0].liveins:
        out.extend(physical_units(reg))
    return out
