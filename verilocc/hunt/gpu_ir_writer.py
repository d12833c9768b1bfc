"""The writer of the hunt's random GPU-shaped LLVM IR (`verilocc.hunt.gpu_ir`): the types and
constants it computes with, the module being written (declarations, attribute groups), and the
emitter of one function's instructions, with conversions between its value types.
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
