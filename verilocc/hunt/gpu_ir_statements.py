"""The statements of the hunt's random GPU-shaped LLVM IR (`verilocc.hunt.gpu_ir`): arithmetic,
memory (global buffers, atomics, LDS), lane and matrix intrinsics, divergent and uniform control
flow (branches, switches, loops), calls, and regions that mix them by the program's weights.
"""

from __future__ import annotations

from verilocc.hunt.gpu_ir_writer import (FLOAT_BITS, INT_BITS, MFMA_TARGETS, MFMAS, VECTORS, WMMA, Emitter, Lds, Value,
                                         convert, element, is_float, suffix, to_i32)

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
