"""Random GPU-shaped LLVM IR for the AMDGPU backend: inputs for a hunt of llc's register allocators.

`gpu_program(seed, target)` writes one module, a pure function of its arguments, that llc
compiles through its default pipelines (-O3 with the greedy allocator, -O0 with the fast one).
The programs look like GPU code rather than like arbitrary IR, because that is where register
allocation on AMDGPU is hard: one `amdgpu_kernel` (sometimes two) reading the work-item and
work-group ids and global buffers indexed by them; divergent control flow on the thread id or
on loaded values (if/else and switches with phis, nested, loops with a uniform trip count or a
per-lane exit, breaks out of loops); calls to `noinline` device functions with up to 40
arguments (some passed on the stack) and wide or struct results; an indirect call through a
divergent function pointer (llc emits a waterfall loop); LDS with barriers; 64-bit, 16-bit and
vector arithmetic; lane intrinsics (`readfirstlane`, `ds.bpermute`, `mbcnt`); MFMA on gfx90a,
gfx942 and gfx950 and WMMA on gfx1100 and gfx1200, their accumulators kept live; many values
live at once, and kernel attributes that shrink the register budget.

Each program draws its own subset of these features and its own size. The IR is read alike by
LLVM 16, 19 and 22: opaque pointers, no syntax newer than LLVM 16, intrinsics whose names and
signatures the three accept (`readfirstlane` unsuffixed, upgraded by the newer ones).

Every program compiles with each of llc-16, 19 and 22 that knows its target, at -O3 and -O0, so
the generator steers clear of what makes llc itself hang, crash or give up before register
allocation could be looked at: vectors with constant lanes other than zero and operations on
two literals (`Emitter.constant`), an fma whose addend is one of its factors (`fma`),
minnum/maxnum (`float_op`), half literals that are not inline constants (`HALF_CONSTANTS`),
and register budgets too small for calls or matrix operations (`squeeze_attributes`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

TARGETS: tuple[str, ...] = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200")

MFMA_TARGETS = ("gfx90a", "gfx942", "gfx950")
#: The A/B operand type of `llvm.amdgcn.wmma.f32.16x16x16.f16` in wave32, and the name used.
WMMA = {
    "gfx1100": ("<16 x half>", "llvm.amdgcn.wmma.f32.16x16x16.f16"),
    "gfx1200": ("<8 x half>", "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v8f16"),
}
#: MFMA intrinsics: name, A/B operand type, accumulator type.
MFMAS = (
    ("llvm.amdgcn.mfma.f32.32x32x2f32", "float", "<16 x float>"),
    ("llvm.amdgcn.mfma.f32.16x16x4f32", "float", "<4 x float>"),
    ("llvm.amdgcn.mfma.f32.16x16x16f16", "<4 x half>", "<4 x float>"),
    ("llvm.amdgcn.mfma.f32.32x32x8f16", "<4 x half>", "<16 x float>"),
)

INT_BITS = {"i16": 16, "i32": 32, "i64": 64}
FLOAT_BITS = {"half": 16, "float": 32, "double": 64}
INT_OF_FLOAT = {"half": "i16", "float": "i32", "double": "i64"}
VECTORS = {
    "<2 x half>": ("half", 2), "<4 x half>": ("half", 4), "<8 x half>": ("half", 8),
    "<16 x half>": ("half", 16), "<4 x float>": ("float", 4), "<8 x float>": ("float", 8),
    "<16 x float>": ("float", 16), "<8 x i32>": ("i32", 8),
}
#: Vectors made by bitcasting a value of another type of the same width.
BITCAST_FROM = {"<2 x half>": "i32", "<4 x half>": "i64", "<8 x half>": "<4 x float>",
                "<16 x half>": "<8 x i32>"}
SUFFIX = {"i16": "i16", "i32": "i32", "i64": "i64", "half": "f16", "float": "f32", "double": "f64"}
FLOAT_CONSTANTS = ("0.0", "1.0", "-1.0", "0.5", "2.0", "-0.25", "1.5", "3.0", "-8.0")
#: Half constants are AMDGPU inline constants: a literal addend makes llc-16 select
#: V_FMAAK_F16_t16 with operands of the wrong register classes on gfx1100.
HALF_CONSTANTS = ("0xH0000", "0xH3C00", "0xHBC00", "0xH3800", "0xH4000", "0xH4400")
INT_CONSTANTS = (0, 1, 2, 3, 5, 7, 8, 15, 16, 31, 63, 100, 255, 1000, -1, -7, -128)

#: Types of the values a function computes with; the wide and 16-bit ones only when the
#: program has them.
BASE_TYPES = ("i32", "float")
WIDE_TYPES = ("i64", "double")
NARROW_TYPES = ("i16", "half", "<2 x half>")
VECTOR_TYPES = ("<4 x float>", "<8 x i32>")
PARAM_TYPES = ("i32", "float", "i64", "<4 x float>", "i32", "float", "double", "half",
               "<2 x half>")
RETURN_TYPES = (("i32",), ("float",), ("i64",), ("<4 x float>",), ("<8 x i32>",),
                ("i32", "float", "i64"), ("<4 x float>", "i32"), ("double", "<2 x half>"))


def suffix(ty: str) -> str:
    """The overloaded-intrinsic name suffix of a type: `f32`, `v4f32`..."""
    if ty in VECTORS:
        elem, n = VECTORS[ty]
        return f"v{n}{SUFFIX[elem]}"
    return SUFFIX[ty]


def element(ty: str) -> str:
    return VECTORS[ty][0] if ty in VECTORS else ty


def is_float(ty: str) -> bool:
    return element(ty) in FLOAT_BITS


@dataclass(frozen=True)
class Value:
    ty: str
    name: str


@dataclass(frozen=True)
class Signature:
    params: tuple[str, ...]  # "ptr addrspace(1)" or a value type
    results: tuple[str, ...]  # () void, one type, or the fields of a struct

    @property
    def ret(self) -> str:
        if not self.results:
            return "void"
        if len(self.results) == 1:
            return self.results[0]
        return "{ " + ", ".join(self.results) + " }"


@dataclass(frozen=True)
class Callee:
    name: str
    sig: Signature


@dataclass(frozen=True)
class Lds:
    name: str
    ty: str
    count: int


@dataclass
class Features:
    """What one function may contain, and how much of it."""
    types: tuple[str, ...]
    budget: int
    branches: bool = False
    loops: bool = False
    divergent_loops: bool = False
    calls: tuple[Callee, ...] = ()
    indirect: tuple[tuple[Callee, Callee], ...] = ()
    lds: tuple[Lds, ...] = ()
    matrix: bool = False
    lanes: bool = False
    atomics: bool = False
    live_values: int = 0
    max_depth: int = 3


@dataclass
class Module:
    """Module-level text: the LDS globals, the intrinsics declared, the attribute groups."""
    target: str
    globals: list[str] = field(default_factory=list)
    declarations: dict[str, str] = field(default_factory=dict)
    attributes: list[str] = field(default_factory=list)

    def declare(self, name: str, ret: str, params: tuple[str, ...]) -> str:
        if name not in self.declarations:
            self.declarations[name] = f"declare {ret} @{name}({', '.join(params)})"
        return name

    def attribute_group(self, text: str) -> int:
        self.attributes.append(text)
        return len(self.attributes) - 1


class Emitter:
    """The body of one function under construction: its lines, its blocks, its live values.

    `pool` holds the values that dominate the current point; a nested region appends to it and
    cuts it back when it ends, so only dominating values are ever used.
    """

    def __init__(self, module: Module, rng: random.Random, features: Features) -> None:
        self.module = module
        self.rng = rng
        self.features = features
        self.lines: list[str] = []
        self.pool: list[Value] = []
        self.block = "entry"
        self.count = 0
        self.buffers: list[str] = []
        self.out: str | None = None
        self.lane: Value | None = None  # a per-lane i32 (the thread id when there is one)
        self.uniform_trip: str | None = None  # a uniform i32 argument usable as a trip count
        self.convergent = True  # all lanes of the wave reach this point together
        self.depth = 0

    # --- text ----------------------------------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def new_label(self, hint: str) -> str:
        self.count += 1
        return f"{hint}{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def define(self, ty: str, text: str, keep: bool = True) -> Value:
        value = Value(ty, self.fresh())
        self.emit(f"{value.name} = {text}")
        if keep:
            self.pool.append(value)
        return value

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")
        self.block = name

    def reserve(self) -> int:
        self.lines.append("")
        return len(self.lines) - 1

    def intrinsic(self, name: str, ret: str, params: tuple[str, ...], args: list[str],
                  keep: bool = True) -> Value:
        self.module.declare(name, ret, params)
        text = ", ".join(f"{t} {a}" for t, a in zip(params, args))
        return self.define(ret, f"call {ret} @{name}({text})", keep)

    # --- values --------------------------------------------------------------------------
    def constant(self, ty: str) -> str:
        """A literal of type `ty`; for a vector, only zero.

        No vector has a constant lane other than zero, and the first operand of every
        arithmetic operation is a value, not a literal (so that no computed value is a
        constant, shift amounts aside): llc-16 hangs in SI Fold Operands on gfx9 when a vector
        with literal (non-inline) lanes, such as `<4 x float>` lanes of 3.0 or `<8 x i32>`
        lanes of 64 * 64, is used across blocks; llc-19 and llc-22 do not.
        """
        if ty in INT_BITS:
            return str(self.rng.choice(INT_CONSTANTS))
        if ty == "half":
            return self.rng.choice(HALF_CONSTANTS)
        if ty in FLOAT_BITS:
            return self.rng.choice(FLOAT_CONSTANTS)
        return "zeroinitializer"

    def pick(self, ty: str) -> Value | None:
        """A dominating value of type `ty`, recent ones more likely, or None."""
        found = [v for v in self.pool if v.ty == ty]
        if not found:
            return None
        if self.rng.random() < 0.5:
            return self.rng.choice(found[-6:])
        return self.rng.choice(found)

    def get(self, ty: str, literal: bool = True) -> str:
        """An operand of type `ty`: a dominating value, a conversion of one, or (if `literal`)
        a constant."""
        value = self.pick(ty)
        if value is not None and self.rng.random() < 0.9:
            return value.name
        if literal and self.rng.random() < 0.15:
            return self.constant(ty)
        return convert(self, ty).name

    def any_i32(self) -> Value:
        """An i32 computed from any dominating value."""
        if self.pool and self.rng.random() < 0.6:
            return to_i32(self, self.rng.choice(self.pool))
        value = self.pick("i32")
        return value if value is not None else self.lane_value()

    def lane_value(self) -> Value:
        if self.lane is None:
            self.lane = self.intrinsic("llvm.amdgcn.workitem.id.x", "i32", (), [])
        return self.lane


# --- conversions -------------------------------------------------------------------------

def convert(e: Emitter, ty: str) -> Value:
    """A new value of type `ty` computed from a dominating value of another type."""
    if ty in BITCAST_FROM and e.rng.random() < 0.7:
        source = e.get(BITCAST_FROM[ty], literal=False)
        return e.define(ty, f"bitcast {BITCAST_FROM[ty]} {source} to {ty}")
    return from_i32(e, ty, e.any_i32())


def from_i32(e: Emitter, ty: str, x: Value) -> Value:
    """A value of type `ty` computed from the i32 `x`."""
    r = e.rng
    if ty == "i32":
        return x
    if ty == "i16":
        return e.define(ty, f"trunc i32 {x.name} to i16")
    if ty == "i64":
        return e.define(ty, f"{r.choice(('zext', 'sext'))} i32 {x.name} to i64")
    if ty in FLOAT_BITS:
        if ty == "float" and r.random() < 0.4:
            return e.define(ty, f"bitcast i32 {x.name} to float")
        return e.define(ty, f"{r.choice(('sitofp', 'uitofp'))} i32 {x.name} to {ty}")
    if ty == "<2 x half>":
        return e.define(ty, f"bitcast i32 {x.name} to <2 x half>")
    elem, n = VECTORS[ty]
    scalar = from_i32(e, elem, x)
    one = e.define(ty, f"insertelement {ty} undef, {elem} {scalar.name}, i32 0", keep=False)
    if r.random() < 0.5:
        return e.define(ty, f"shufflevector {ty} {one.name}, {ty} undef, "
                            f"<{n} x i32> zeroinitializer")
    return e.define(ty, f"insertelement {ty} {e.get(ty)}, {elem} {scalar.name}, "
                        f"i32 {r.randrange(n)}")


def to_i32(e: Emitter, v: Value) -> Value:
    """An i32 computed from `v` (a lane of it, for a vector)."""
    r = e.rng
    ty = v.ty
    if ty == "i32":
        return v
    if ty == "i16":
        return e.define("i32", f"{r.choice(('zext', 'sext'))} i16 {v.name} to i32", keep=False)
    if ty == "i64":
        if r.random() < 0.5:
            # Bits 16 to 47, not the high half: the high half of a zext is a zero that llc-16's
            # DAG finds late, and a half made from it crashes llc-16's Machine CSE on gfx90a.
            v = e.define("i64", f"lshr i64 {v.name}, 16", keep=False)
        return e.define("i32", f"trunc i64 {v.name} to i32", keep=False)
    if ty in FLOAT_BITS:
        if r.random() < 0.3:
            return e.define("i32", f"fptosi {ty} {v.name} to i32", keep=False)
        bits = e.define(INT_OF_FLOAT[ty], f"bitcast {ty} {v.name} to {INT_OF_FLOAT[ty]}",
                        keep=False)
        return to_i32(e, bits)
    if ty == "<2 x half>":
        return e.define("i32", f"bitcast <2 x half> {v.name} to i32", keep=False)
    elem, n = VECTORS[ty]
    lane = e.define(elem, f"extractelement {ty} {v.name}, i32 {r.randrange(n)}", keep=False)
    return to_i32(e, lane)


# --- arithmetic --------------------------------------------------------------------------

def combine(e: Emitter, ty: str, a: str, b: str, keep: bool = True) -> Value:
    """`a op b` for a random operation of type `ty`."""
    if ty in INT_BITS:
        return int_op(e, ty, a, b, keep)
    if ty in FLOAT_BITS:
        return float_op(e, ty, a, b, keep)
    return vector_op(e, ty, a, b, keep)


def int_op(e: Emitter, ty: str, a: str, b: str, keep: bool) -> Value:
    r = e.rng
    kind = r.choice(("add", "sub", "mul", "and", "or", "xor", "shift", "shift", "select",
                     "minmax", "add", "mul"))
    if kind == "shift":
        amount = e.define(ty, f"and {ty} {b}, {INT_BITS[ty] - 1}", keep=False)
        op = r.choice(("shl", "lshr", "ashr"))
        return e.define(ty, f"{op} {ty} {a}, {amount.name}", keep)
    if kind == "select":
        pred = r.choice(("slt", "ult", "sgt", "eq", "ne", "uge"))
        cond = e.define("i1", f"icmp {pred} {ty} {a}, {b}", keep=False)
        return e.define(ty, f"select i1 {cond.name}, {ty} {a}, {ty} {e.get(ty)}", keep)
    if kind == "minmax":
        name = f"llvm.{r.choice(('umin', 'umax', 'smin', 'smax'))}.{suffix(ty)}"
        return e.intrinsic(name, ty, (ty, ty), [a, b], keep)
    return e.define(ty, f"{kind} {ty} {a}, {b}", keep)


def float_op(e: Emitter, ty: str, a: str, b: str, keep: bool) -> Value:
    r = e.rng
    kind = r.choice(("fadd", "fsub", "fmul", "fma", "fma", "select", "fabs", "fneg",
                     "fdiv" if ty == "float" else "fadd"))
    if kind == "fma":
        return fma(e, ty, a, b, keep)
    if kind == "select":
        pred = r.choice(("olt", "ogt", "oeq", "une", "uge"))
        cond = e.define("i1", f"fcmp {pred} {ty} {a}, {b}", keep=False)
        return e.define(ty, f"select i1 {cond.name}, {ty} {a}, {ty} {e.get(ty)}", keep)
    if kind == "fabs":
        # Not minnum/maxnum: llc-19's GVN crashes (InstSimplify, getInverseMinMaxIntrinsic)
        # on a maxnum of a maxnum and an fma once operands fold to constants.
        absolute = e.intrinsic(f"llvm.fabs.{suffix(ty)}", ty, (ty,), [a], keep=False)
        return e.define(ty, f"fmul {ty} {absolute.name}, {b}", keep)
    if kind == "fneg":
        neg = e.define(ty, f"fneg {ty} {a}", keep=False)
        return e.define(ty, f"fadd {ty} {neg.name}, {b}", keep)
    return e.define(ty, f"{kind} {ty} {a}, {b}", keep)


def fma(e: Emitter, ty: str, a: str, b: str, keep: bool) -> Value:
    """`a * b + c` with an addend `c` other than `a` and `b`.

    llc (16, 19 and 22 alike) loops forever in the Two-Address instruction pass on targets
    with V_FMAC_F32/F64 when an fma's addend is also one of its factors in a loop whose phis
    swap values through it.
    """
    addend = e.get(ty)
    for _ in range(3):
        if addend not in (a, b):
            break
        addend = e.get(ty)
    else:
        addend = convert(e, ty).name
    return e.intrinsic(f"llvm.fma.{suffix(ty)}", ty, (ty, ty, ty), [a, b, addend], keep)


def vector_op(e: Emitter, ty: str, a: str, b: str, keep: bool) -> Value:
    r = e.rng
    elem, n = VECTORS[ty]
    kind = r.choice(("binary", "binary", "shuffle", "insert", "fma"))
    if kind == "shuffle":
        mask = ", ".join(f"i32 {r.randrange(2 * n)}" for _ in range(n))
        return e.define(ty, f"shufflevector {ty} {a}, {ty} {b}, <{n} x i32> <{mask}>", keep)
    if kind == "insert":
        return e.define(ty, f"insertelement {ty} {a}, {elem} {e.get(elem, literal=False)}, "
                            f"i32 {r.randrange(n)}", keep)
    if kind == "fma" and is_float(ty) and n <= 4:
        return fma(e, ty, a, b, keep)
    if is_float(ty):
        op = r.choice(("fadd", "fmul", "fsub"))
    else:
        op = r.choice(("add", "mul", "xor", "sub"))
    return e.define(ty, f"{op} {ty} {a}, {b}", keep)


def update(e: Emitter, v: Value) -> Value:
    """A new value of `v`'s type computed from `v` and another value."""
    return combine(e, v.ty, v.name, e.get(v.ty), keep=False)


def arithmetic(e: Emitter) -> None:
    """A few operations on the function's types."""
    for _ in range(e.rng.randint(1, 5)):
        ty = e.rng.choice(e.features.types)
        combine(e, ty, e.get(ty, literal=False), e.get(ty))


def fold(e: Emitter, values: list[Value]) -> Value:
    """One value of the first value's type combining all of `values` (all of one type)."""
    acc = values[0]
    for v in values[1:]:
        if acc.ty in INT_BITS:
            acc = e.define(acc.ty, f"{e.rng.choice(('add', 'xor'))} {acc.ty} {acc.name}, {v.name}",
                           keep=False)
        elif is_float(acc.ty):
            acc = e.define(acc.ty, f"fadd {acc.ty} {acc.name}, {v.name}", keep=False)
        else:
            acc = e.define(acc.ty, f"xor {acc.ty} {acc.name}, {v.name}", keep=False)
    return acc


def fold_pool(e: Emitter) -> list[Value]:
    """Every value of the pool combined, one result per type (in order of first appearance)."""
    groups: dict[str, list[Value]] = {}
    for v in e.pool:
        groups.setdefault(v.ty, []).append(v)
    return [fold(e, values) for values in groups.values()]


# --- memory ------------------------------------------------------------------------------

def index(e: Emitter) -> str:
    """An i32 element index: the lane plus an offset, or one computed from a value."""
    r = e.rng
    if r.random() < 0.65 or not e.pool:
        return e.define("i32", f"add i32 {e.lane_value().name}, {r.randrange(1, 4096)}",
                        keep=False).name
    x = e.any_i32()
    return e.define("i32", f"and i32 {x.name}, {r.choice((255, 1023, 4095, 65535))}",
                    keep=False).name


def address(e: Emitter, buffer: str, ty: str) -> str:
    return e.define("ptr", f"getelementptr {ty}, ptr addrspace(1) {buffer}, i32 {index(e)}",
                    keep=False).name


def load(e: Emitter) -> None:
    ty = e.rng.choice(e.features.types)
    pointer = address(e, e.rng.choice(e.buffers), ty)
    e.define(ty, f"load {ty}, ptr addrspace(1) {pointer}")


def store(e: Emitter, value: Value | None = None) -> None:
    if value is None:
        ty = e.rng.choice(e.features.types)
        value = Value(ty, e.get(ty))
    buffer = e.out if e.out is not None else e.rng.choice(e.buffers)
    pointer = address(e, buffer, value.ty)
    e.emit(f"store {value.ty} {value.name}, ptr addrspace(1) {pointer}")


def atomic(e: Emitter) -> None:
    r = e.rng
    op = r.choice(("add", "max", "umin", "xor", "or"))
    i32_lds = [a for a in e.features.lds if a.ty == "i32"]
    if i32_lds and r.random() < 0.5:
        array = r.choice(i32_lds)
        slot = e.define("i32", f"and i32 {e.any_i32().name}, {array.count - 1}", keep=False)
        pointer = lds_address(e, array, slot.name)
        e.define("i32", f"atomicrmw {op} ptr addrspace(3) {pointer}, i32 {e.get('i32')} "
                        f"monotonic, align 4")
        return
    pointer = address(e, e.rng.choice(e.buffers), "i32")
    scope = r.choice(('syncscope("agent") ', 'syncscope("workgroup") ', ""))
    e.define("i32", f"atomicrmw {op} ptr addrspace(1) {pointer}, i32 {e.get('i32')} "
                    f"{scope}monotonic, align 4")


def lds_address(e: Emitter, array: Lds, slot: str) -> str:
    return e.define("ptr", f"getelementptr inbounds [{array.count} x {array.ty}], "
                           f"ptr addrspace(3) @{array.name}, i32 0, i32 {slot}", keep=False).name


def lds_exchange(e: Emitter) -> None:
    """Each lane stores to LDS, the workgroup waits at a barrier, each lane reads a neighbour's."""
    r = e.rng
    array = r.choice(e.features.lds)
    lane = e.lane_value().name
    mine = e.define("i32", f"and i32 {lane}, {array.count - 1}", keep=False)
    e.emit(f"store {array.ty} {e.get(array.ty)}, ptr addrspace(3) "
           f"{lds_address(e, array, mine.name)}")
    if e.convergent:
        e.module.declare("llvm.amdgcn.s.barrier", "void", ())
        e.emit("call void @llvm.amdgcn.s.barrier()")
    for _ in range(r.randint(1, 3)):
        moved = e.define("i32", f"{r.choice(('xor', 'add'))} i32 {lane}, {r.randrange(1, 64)}",
                         keep=False)
        theirs = e.define("i32", f"and i32 {moved.name}, {array.count - 1}", keep=False)
        e.define(array.ty, f"load {array.ty}, ptr addrspace(3) "
                           f"{lds_address(e, array, theirs.name)}")


# --- GPU intrinsics ----------------------------------------------------------------------

def lane_intrinsic(e: Emitter) -> None:
    """readfirstlane, ds.bpermute (a shuffle across lanes) or mbcnt (the lane's index)."""
    r = e.rng
    kind = r.choice(("readfirstlane", "bpermute", "mbcnt"))
    if kind == "readfirstlane":
        e.intrinsic("llvm.amdgcn.readfirstlane", "i32", ("i32",), [e.any_i32().name])
    elif kind == "bpermute":
        moved = e.define("i32", f"xor i32 {e.lane_value().name}, {r.randrange(1, 32)}",
                         keep=False)
        byte = e.define("i32", f"shl i32 {moved.name}, 2", keep=False)
        e.intrinsic("llvm.amdgcn.ds.bpermute", "i32", ("i32", "i32"),
                    [byte.name, e.any_i32().name])
    else:
        low = e.intrinsic("llvm.amdgcn.mbcnt.lo", "i32", ("i32", "i32"), ["-1", "0"],
                          keep=False)
        e.intrinsic("llvm.amdgcn.mbcnt.hi", "i32", ("i32", "i32"), ["-1", low.name])


def matrix(e: Emitter) -> None:
    """A chain of MFMA (gfx9) or WMMA (gfx11, gfx12) operations on one accumulator."""
    r = e.rng
    target = e.module.target
    if target in MFMA_TARGETS:
        name, operand, acc_ty = r.choice(MFMAS)
        params: tuple[str, ...] = (operand, operand, acc_ty, "i32", "i32", "i32")
        tail = ["0", "0", "0"]
    else:
        operand, name = WMMA[target]
        acc_ty = "<8 x float>"
        params = (operand, operand, acc_ty)
        tail = []
    found = e.pick(acc_ty)
    acc = found.name if found is not None and r.random() < 0.8 else "zeroinitializer"
    steps = r.randint(1, 4)
    for step in range(steps):
        args = [e.get(operand), e.get(operand), acc, *tail]
        acc = e.intrinsic(name, acc_ty, params, args, keep=step == steps - 1).name


# --- control flow ------------------------------------------------------------------------

def condition(e: Emitter, divergent: bool) -> str:
    """An i1 that differs between lanes (thread id, loaded values) or is the same for all."""
    r = e.rng
    if divergent:
        kind = r.choice(("lane", "lane", "bit", "value", "float"))
        if kind == "lane":
            return e.define("i1", f"icmp {r.choice(('ult', 'ugt', 'eq', 'ne'))} i32 "
                                  f"{e.lane_value().name}, {r.randrange(1, 64)}", keep=False).name
        if kind == "bit":
            bit = e.define("i32", f"and i32 {e.lane_value().name}, {1 << r.randrange(6)}",
                           keep=False)
            return e.define("i1", f"icmp eq i32 {bit.name}, 0", keep=False).name
        if kind == "float" and e.pick("float") is not None:
            return e.define("i1", f"fcmp {r.choice(('olt', 'ogt', 'une'))} float "
                                  f"{e.get('float')}, {e.constant('float')}", keep=False).name
        return e.define("i1", f"icmp {r.choice(('slt', 'ult', 'sgt', 'eq'))} i32 "
                              f"{e.any_i32().name}, {e.constant('i32')}", keep=False).name
    if e.uniform_trip is not None and r.random() < 0.5:
        value = e.uniform_trip
    else:
        value = e.intrinsic("llvm.amdgcn.readfirstlane", "i32", ("i32",), [e.any_i32().name],
                            keep=False).name
    return e.define("i1", f"icmp sgt i32 {value}, {r.randrange(0, 16)}", keep=False).name


def carried_values(e: Emitter, most: int) -> list[Value]:
    """Dominating values that a branch or loop redefines (phis at its end), distinct."""
    candidates = list(dict.fromkeys(e.pool))
    count = min(len(candidates), e.rng.randint(0, most))
    return e.rng.sample(candidates, count)


def arm(e: Emitter, label: str, join: str, carried: list[Value], budget: int,
        divergent: bool) -> tuple[list[str], str]:
    """One arm of a branch ending at `join`: the carried values' new names and the last block."""
    e.label(label)
    mark, convergent = len(e.pool), e.convergent
    e.convergent = convergent and not divergent
    e.depth += 1
    region(e, budget)
    names = [update(e, v).name for v in carried]
    end = e.block
    e.emit(f"br label %{join}")
    e.depth -= 1
    e.convergent = convergent
    del e.pool[mark:]
    return names, end


def branch(e: Emitter, budget: int) -> None:
    """if/else, if without else, or a switch; phis at the join for the carried values."""
    r = e.rng
    divergent = r.random() < 0.8
    carried = carried_values(e, 4)
    join = e.new_label("join")
    shape = r.choice(("if_else", "if_else", "if", "switch"))
    edges: list[tuple[list[str], str]] = []
    if shape == "switch":
        selector = e.lane_value() if divergent else e.any_i32()
        cases = e.define("i32", f"and i32 {selector.name}, 3", keep=False)
        labels = [e.new_label("case") for _ in range(r.randint(2, 4))]
        table = " ".join(f"i32 {k}, label %{label}" for k, label in enumerate(labels[1:], 1))
        e.emit(f"switch i32 {cases.name}, label %{labels[0]} [ {table} ]")
    else:
        labels = [e.new_label("then"), e.new_label("else")]
        cond = condition(e, divergent)
        if shape == "if":
            labels = labels[:1]
            edges.append(([v.name for v in carried], e.block))
        e.emit(f"br i1 {cond}, label %{labels[0]}, label %{labels[1] if shape != 'if' else join}")
    for label in labels:
        edges.append(arm(e, label, join, carried, budget // len(labels), divergent))
    e.label(join)
    for k, value in enumerate(carried):
        incoming = ", ".join(f"[ {names[k]}, %{block} ]" for names, block in edges)
        e.define(value.ty, f"phi {value.ty} {incoming}")


def trip_count(e: Emitter) -> str:
    """A uniform i32 bound of a loop: a kernel argument, a constant, or a uniform value."""
    r = e.rng
    if e.uniform_trip is not None and r.random() < 0.6:
        return e.uniform_trip
    if r.random() < 0.6:
        return str(r.randint(2, 40))
    first = e.intrinsic("llvm.amdgcn.readfirstlane", "i32", ("i32",), [e.any_i32().name],
                        keep=False)
    return e.define("i32", f"and i32 {first.name}, 31", keep=False).name


def lane_exit(e: Emitter, state: list[Value]) -> str:
    """A per-lane i1 depending on the loop's state: lanes leave the loop at different times."""
    r = e.rng
    source = to_i32(e, r.choice(state))
    mixed = e.define("i32", f"xor i32 {source.name}, {e.lane_value().name}", keep=False)
    low = e.define("i32", f"and i32 {mixed.name}, {r.choice((1, 3, 7, 15))}", keep=False)
    return e.define("i1", f"icmp eq i32 {low.name}, 0", keep=False).name


def loop(e: Emitter, budget: int, exit_kind: str) -> None:
    """A loop counting to a uniform bound; `exit_kind` "divergent" adds a per-lane exit at the
    latch, "break" a per-lane exit in the middle of the body; carried values are phis."""
    r = e.rng
    carried = carried_values(e, 4)
    trip, pre = trip_count(e), e.block
    header, exit_ = e.new_label("loop"), e.new_label("exit")
    e.emit(f"br label %{header}")
    e.label(header)
    slots = [e.reserve() for _ in range(len(carried) + 1)]
    counter = Value("i32", e.fresh("i"))
    state = [Value(v.ty, e.fresh("acc")) for v in carried]
    mark, convergent = len(e.pool), e.convergent
    e.pool += [counter, *state]
    e.convergent = convergent and exit_kind == "uniform"
    e.depth += 1
    broken: str | None = None
    if exit_kind == "break":
        first = r.randint(0, budget)
        region(e, first)
        budget -= first
        cond = lane_exit(e, [counter, *state])
        broken, body = e.block, e.new_label("body")
        e.emit(f"br i1 {cond}, label %{exit_}, label %{body}")
        e.label(body)
    region(e, budget)
    nexts = [update(e, v) for v in state]
    step = e.define("i32", f"add i32 {counter.name}, 1", keep=False)
    done = e.define("i1", f"icmp sge i32 {step.name}, {trip}", keep=False).name
    if exit_kind == "divergent":
        done = e.define("i1", f"or i1 {done}, {lane_exit(e, [step, *nexts])}", keep=False).name
    latch = e.block
    e.emit(f"br i1 {done}, label %{exit_}, label %{header}")
    e.lines[slots[0]] = f"  {counter.name} = phi i32 [ 0, %{pre} ], [ {step.name}, %{latch} ]"
    for slot, v, acc, nxt in zip(slots[1:], carried, state, nexts):
        e.lines[slot] = f"  {acc.name} = phi {v.ty} [ {v.name}, %{pre} ], [ {nxt.name}, %{latch} ]"
    e.depth -= 1
    e.convergent = convergent
    del e.pool[mark:]
    e.label(exit_)
    for acc, nxt in zip(state, nexts):
        if broken is None:
            e.pool.append(nxt)
        else:
            e.define(acc.ty, f"phi {acc.ty} [ {acc.name}, %{broken} ], [ {nxt.name}, %{latch} ]")


# --- calls -------------------------------------------------------------------------------

def argument(e: Emitter, ty: str) -> str:
    if ty == "ptr addrspace(1)":
        return e.rng.choice(e.buffers) if e.buffers else "null"
    return e.get(ty)


def call(e: Emitter, indirect: bool) -> None:
    """A call of a device function, direct or through a pointer selected per lane."""
    r = e.rng
    if indirect:
        first, second = r.choice(e.features.indirect)
        cond = condition(e, divergent=True)
        target = e.define("ptr", f"select i1 {cond}, ptr @{first.name}, ptr @{second.name}",
                          keep=False).name
        sig = first.sig
    else:
        callee = r.choice(e.features.calls)
        target, sig = f"@{callee.name}", callee.sig
    args = ", ".join(f"{t} {argument(e, t)}" for t in sig.params)
    text = f"call {sig.ret} {target}({args})"
    if not sig.results:
        e.emit(text)
        return
    result = e.define(sig.ret, text, keep=len(sig.results) == 1)
    if len(sig.results) > 1:
        for k, ty in enumerate(sig.results):
            e.define(ty, f"extractvalue {sig.ret} {result.name}, {k}")


# --- regions -----------------------------------------------------------------------------

def statement_weights(e: Emitter) -> dict[str, float]:
    """The statements possible here, with their weights."""
    f = e.features
    nested = e.depth < f.max_depth
    weights = {"arith": 6.0}
    if e.buffers:
        weights["load"] = 2.0
        weights["store"] = 0.7
        if f.atomics:
            weights["atomic"] = 0.4
    if f.branches and nested:
        weights["branch"] = 1.6
    if f.loops and nested:
        weights["loop"] = 0.9
    if f.divergent_loops and nested:
        weights["divergent_loop"] = 0.6
        weights["break_loop"] = 0.4
    if f.calls:
        weights["call"] = 1.2
    if f.indirect:
        weights["indirect_call"] = 0.6
    if f.lds:
        weights["lds"] = 0.8 if e.convergent else 0.2
    if f.matrix:
        weights["matrix"] = 0.8
    if f.lanes:
        weights["lanes"] = 0.6
    return weights


def region(e: Emitter, budget: int) -> None:
    """Statements until the budget is spent; control flow spends its body's budget too."""
    while budget > 0:
        weights = statement_weights(e)
        kind = e.rng.choices(list(weights), list(weights.values()))[0]
        budget -= 1
        inner = e.rng.randint(1, max(1, budget // 2)) if budget > 1 else 1
        if kind == "branch":
            branch(e, inner)
        elif kind in ("loop", "divergent_loop", "break_loop"):
            loop(e, inner, {"loop": "uniform", "divergent_loop": "divergent"}.get(kind, "break"))
        else:
            simple_statement(e, kind)
            continue
        budget -= inner


def simple_statement(e: Emitter, kind: str) -> None:
    if kind == "arith":
        arithmetic(e)
    elif kind == "load":
        load(e)
    elif kind == "store":
        store(e)
    elif kind == "atomic":
        atomic(e)
    elif kind == "call":
        call(e, indirect=False)
    elif kind == "indirect_call":
        call(e, indirect=True)
    elif kind == "lds":
        lds_exchange(e)
    elif kind == "matrix":
        matrix(e)
    elif kind == "lanes":
        lane_intrinsic(e)


# --- functions ---------------------------------------------------------------------------

def kernel(module: Module, rng: random.Random, name: str, features: Features) -> list[str]:
    """An `amdgpu_kernel`: ids, `live_values` loads held to the end, a region, stores."""
    inputs = [f"%in{k}" for k in range(rng.randint(1, 3))]
    params = [f"ptr addrspace(1) {p}" for p in inputs] + ["ptr addrspace(1) %out", "i32 %n"]
    e = Emitter(module, rng, features)
    e.buffers, e.out, e.uniform_trip = inputs, "%out", "%n"
    tid = e.intrinsic("llvm.amdgcn.workitem.id.x", "i32", (), [])
    if rng.random() < 0.3:
        tid_y = e.intrinsic("llvm.amdgcn.workitem.id.y", "i32", (), [])
        row = e.define("i32", f"shl i32 {tid_y.name}, {rng.choice((4, 5, 6))}", keep=False)
        tid = e.define("i32", f"add i32 {tid.name}, {row.name}")
    group = e.intrinsic("llvm.amdgcn.workgroup.id.x", "i32", (), [])
    base = e.define("i32", f"mul i32 {group.name}, {rng.choice((64, 128, 256))}", keep=False)
    e.lane = e.define("i32", f"add i32 {base.name}, {tid.name}")
    for _ in range(features.live_values):
        load(e)
    region(e, features.budget)
    for value in fold_pool(e):
        store(e, value)
    e.emit("ret void")
    wide = bool(features.calls or features.indirect or features.matrix)
    attrs = squeeze_attributes(rng, wide)
    group_ref = f" #{module.attribute_group(' '.join(attrs))}" if attrs else ""
    head = f"define amdgpu_kernel void @{name}({', '.join(params)}){group_ref} {{"
    return [head, "entry:", *e.lines, "}"]


def device_function(module: Module, rng: random.Random, callee: Callee,
                    features: Features) -> list[str]:
    """A `noinline` function computing its results from its arguments (and loads, calls...)."""
    e = Emitter(module, rng, features)
    params = []
    for k, ty in enumerate(callee.sig.params):
        name = f"%a{k}"
        params.append(f"{ty} {name}")
        if ty == "ptr addrspace(1)":
            e.buffers.append(name)
        else:
            e.pool.append(Value(ty, name))
    e.lane_value()
    region(e, features.budget)
    e.emit(f"ret {function_result(e, callee.sig)}")
    attrs = module.attribute_group("noinline")
    head = f"define {callee.sig.ret} @{callee.name}({', '.join(params)}) #{attrs} {{"
    return [head, "entry:", *e.lines, "}"]


def function_result(e: Emitter, sig: Signature) -> str:
    """The operand of `ret`: every live value folded into the results (stored when void)."""
    folded = fold_pool(e)
    mixed = to_i32(e, folded[0])
    for value in folded[1:]:
        mixed = e.define("i32", f"xor i32 {mixed.name}, {to_i32(e, value).name}", keep=False)
    if not sig.results:
        if e.buffers:
            for value in folded:
                if value.ty in VECTORS:
                    store(e, value)
            store(e, mixed)
        return "void"
    fields = []
    for ty in sig.results:
        same = [v for v in folded if v.ty == ty]
        base = same[0] if same else from_i32(e, ty, mixed)
        fields.append(combine(e, ty, base.name, from_i32(e, ty, mixed).name, keep=False))
    if len(fields) == 1:
        return f"{sig.ret} {fields[0].name}"
    aggregate = "undef"
    for k, value in enumerate(fields):
        aggregate = e.define(sig.ret, f"insertvalue {sig.ret} {aggregate}, {value.ty} "
                                      f"{value.name}, {k}", keep=False).name
    return f"{sig.ret} {aggregate}"


def squeeze_attributes(rng: random.Random, wide: bool) -> list[str]:
    """Kernel attributes that shrink the register budget, or none (about half the kernels).

    A kernel that calls or uses MFMA/WMMA (`wide`) keeps at least 48 VGPRs, and asks for at
    most 4 waves per EU (which leaves 128 VGPRs on gfx9): the calling convention passes
    arguments in v0-v31 and the work-item ids in v31, a WMMA reads 24 VGPRs at once, and with
    fewer llc runs out of registers.
    """
    if rng.random() < 0.5:
        return []
    attrs = []
    if rng.random() < 0.6:
        attrs.append(f'"amdgpu-num-vgpr"="{rng.choice(range(48 if wide else 24, 129, 8))}"')
    if rng.random() < 0.4:
        attrs.append(f'"amdgpu-num-sgpr"="{rng.choice(range(32, 105, 8))}"')
    if rng.random() < 0.4:
        low = rng.randint(1, 4 if wide else 8)
        attrs.append(f'"amdgpu-waves-per-eu"="{low},{rng.randint(low, 8)}"')
    if rng.random() < 0.5 or not attrs:
        attrs.append('"amdgpu-flat-work-group-size"="1,256"')
    return attrs


# --- the program -------------------------------------------------------------------------

def program_types(rng: random.Random) -> tuple[str, ...]:
    types = list(BASE_TYPES)
    for extra in (WIDE_TYPES, NARROW_TYPES, VECTOR_TYPES):
        if rng.random() < 0.5:
            types += extra
    return tuple(types)


def signature(rng: random.Random) -> Signature:
    """Parameters (10 to 40 of them sometimes, so that some go on the stack) and results."""
    count = rng.randint(10, 40) if rng.random() < 0.3 else rng.randint(0, 8)
    params = [rng.choice(PARAM_TYPES) for _ in range(count)]
    if rng.random() < 0.7:
        params.insert(rng.randint(0, len(params)), "ptr addrspace(1)")
    results = () if rng.random() < 0.2 else rng.choice(RETURN_TYPES)
    return Signature(tuple(params), results)


def device_functions(rng: random.Random) -> tuple[list[Callee], list[tuple[Callee, Callee]]]:
    """The device functions' names and signatures, and the pairs of the same signature that an
    indirect call chooses between."""
    callees: list[Callee] = []
    pairs: list[tuple[Callee, Callee]] = []
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3, 4))):
        callees.append(Callee(f"func{len(callees)}", signature(rng)))
    if rng.random() < 0.35:
        sig = signature(rng)
        pair = (Callee(f"func{len(callees)}", sig), Callee(f"func{len(callees) + 1}", sig))
        callees += pair
        pairs.append(pair)
    return callees, pairs


def lds_arrays(rng: random.Random) -> list[Lds]:
    """LDS arrays of at most 16 KiB each (two fit every target's 64 KiB)."""
    if rng.random() < 0.55:
        return []
    arrays = []
    for k in range(rng.randint(1, 2)):
        ty = rng.choice(("float", "i32", "float", "<2 x half>", "<4 x float>"))
        most = 1024 if ty == "<4 x float>" else 4096
        arrays.append(Lds(f"lds{k}", ty, rng.choice([n for n in (64, 256, 1024, 4096)
                                                     if n <= most])))
    return arrays


def kernel_features(rng: random.Random, target: str, types: tuple[str, ...],
                    callees: list[Callee], pairs: list[tuple[Callee, Callee]],
                    lds: list[Lds]) -> Features:
    size = rng.choice(("small", "small", "medium", "medium", "large"))
    budget = {"small": rng.randint(4, 25), "medium": rng.randint(25, 90),
              "large": rng.randint(90, 220)}[size]
    return Features(
        types=types, budget=budget,
        branches=rng.random() < 0.75, loops=rng.random() < 0.6,
        divergent_loops=rng.random() < 0.45,
        calls=tuple(callees) if callees and rng.random() < 0.9 else (),
        indirect=tuple(pairs),
        lds=tuple(lds),
        matrix=(target in MFMA_TARGETS or target in WMMA) and rng.random() < 0.4,
        lanes=rng.random() < 0.4, atomics=rng.random() < 0.25,
        live_values=rng.choice((0, 0, rng.randint(4, 24), rng.randint(24, 96))),
        max_depth=rng.randint(1, 3))


def callee_features(rng: random.Random, target: str, types: tuple[str, ...],
                    later: list[Callee]) -> Features:
    return Features(
        types=types, budget=rng.randint(2, 40),
        branches=rng.random() < 0.6, loops=rng.random() < 0.4,
        divergent_loops=rng.random() < 0.3,
        calls=tuple(later) if later and rng.random() < 0.5 else (),
        matrix=(target in MFMA_TARGETS or target in WMMA) and rng.random() < 0.2,
        lanes=rng.random() < 0.3, atomics=rng.random() < 0.15,
        max_depth=rng.randint(1, 2))


def gpu_program(seed: int, target: str) -> str:
    """LLVM IR text of one random module for `target`, a pure function of (seed, target)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; one of {', '.join(TARGETS)}")
    rng = random.Random(f"verilocc-gpu-ir:{seed}:{target}")
    module = Module(target)
    types = program_types(rng)
    callees, pairs = device_functions(rng)
    lds = lds_arrays(rng)
    for array in lds:
        module.globals.append(f"@{array.name} = internal addrspace(3) global "
                              f"[{array.count} x {array.ty}] undef, align 16")
    bodies: list[list[str]] = []
    for k in range(2 if rng.random() < 0.15 else 1):
        features = kernel_features(rng, target, types, callees, pairs, lds)
        bodies.append(kernel(module, rng, f"kernel{k}", features))
    for k, callee in enumerate(callees):
        features = callee_features(rng, target, types, callees[k + 1:])
        bodies.append(device_function(module, rng, callee, features))
    lines = [f"; verilocc gpu_ir seed {seed} target {target}",
             'target triple = "amdgcn-amd-amdhsa"', ""]
    if module.globals:
        lines += [*module.globals, ""]
    for body in bodies:
        lines += [*body, ""]
    lines += list(module.declarations.values())
    if module.attributes:
        lines.append("")
        lines += [f"attributes #{k} = {{ {text} }}" for k, text in enumerate(module.attributes)]
    return "\n".join(lines) + "\n"
