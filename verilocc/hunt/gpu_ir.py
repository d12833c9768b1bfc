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

The writer (types, constants, the emitter) is `verilocc.hunt.gpu_ir_writer`, the statements
(`fma`, `float_op`, control flow, calls, regions) `verilocc.hunt.gpu_ir_statements`; this module
writes the functions and the program.
"""

from __future__ import annotations

import random

from verilocc.hunt.gpu_ir_statements import call, combine, fold_pool, load, matrix, region, store
from verilocc.hunt.gpu_ir_writer import (BASE_TYPES, MFMA_TARGETS, NARROW_TYPES, PARAM_TYPES, RETURN_TYPES, TARGETS,
                                         VECTOR_TYPES, VECTORS, WIDE_TYPES, WMMA, Callee, Emitter, Features, Lds, Module,
                                         Signature, Value, from_i32, to_i32)

__all__ = ["TARGETS", "gpu_program"]


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
