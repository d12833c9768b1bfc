"""A reader of the MIR subset that LLVM prints for AMDGPU around register allocation.

Accepted (anything else raises `BadInput` with file:line:col, never a guess):
- YAML documents separated by `---` and closed by `...`; of a first document `--- |` (the
  embedded IR module) only what a function's register budget depends on: `target triple`,
  each `define`'s calling convention and attribute group `#N`, and the string attributes of
  each `attributes #N = { ... }`; each other document is one machine function, of which this
  reader uses `name:`, the `registers:` list (`- { id: N, class: C ...}`), the
  `isEntryFunction:` and the registers it reserves (`stackPtrOffsetReg:`, `scratchRSrcReg:`,
  `frameOffsetReg:`, `sgprForEXECCopy:`, `longBranchReservedReg:`, `vgprForAGPRCopy:`) of
  `machineFunctionInfo:` (and `wwmReservedRegs:`, where only whole-wave values live), its
  `argumentInfo:` registers and whether it has `dynamicVGPRBlockSize:`, and `body: |`;
- in the body: block headers `bb.N[.name][ (attributes)]:`, `successors:` (`%bb.N` with an
  optional `(probability)`), `liveins:`, comments (`;`), and one instruction per line:
  `[defs =] [instruction flags] OPCODE [operands] [:: memory operands] [trailer]`;
- operands: registers `$name` or `%N` with register flags (implicit, implicit-def, def, dead,
  killed, undef, internal, early-clobber, renamable, debug-use), an optional subregister
  index `.subN`, a class `:class` and/or type `(s32)`, `(tied-def N)`; `$noreg`; integers;
  `%bb.N`; `%stack.N[.name][ + off]`; every other operand (globals, target flags, `%ir.`,
  `%fixed-stack.`, `%const.`, typed constants) is kept as its text and compared as such.
- debug instructions (`DBG_*`) are skipped: they do not execute;
- an `S_NOP` reads nothing (its definition has no register operand; the implicit uses LLVM's
  tests give it only keep values alive): its register uses are dropped, its defs kept;
- a bundle (`BUNDLE ... {`, its instructions, `}`) reads its inputs before any instruction in it
  writes; when no instruction in it writes a 16-bit unit or virtual lane that a later one reads
  or writes, running its instructions in turn reads and writes the same values, and it is read
  as those instructions (the header, a summary of their operands, is dropped). Any other bundle
  is refused, and so is an `internal` operand (LLVM's mark of a read of a value the bundle
  itself defines);
- of the embedded IR module, the `target-cpu` and `target-features` of each function
  (`attributes #N` of its `define`): they say whether it runs in wave32 (`wave32`);
- Refused: a block without a `successors:` list that does not end the function and is not
  the last block (LLVM would infer its successors), dependent bundles, named virtual registers
  used as values of unknown class, lines that do not parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from certcheck import regs


class BadInput(Exception):
    """Input outside the accepted subset; str() is one line with file:line:col."""


REG_FLAGS = ("implicit-def", "implicit", "def", "dead", "killed", "undef", "internal", "early-clobber", "renamable",
             "debug-use")
INSTR_FLAGS = frozenset({"nofpexcept", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "nuw", "nsw",
                         "exact", "frame-setup", "frame-destroy", "nneg", "disjoint", "samesign", "unpredictable",
                         "noconvergent", "nusw", "inbounds"})
_REG = re.compile(r"(\$[A-Za-z_][A-Za-z0-9_]*|%[0-9]+)(?:\.([a-z0-9_]+))?(?::([A-Za-z_][A-Za-z0-9_]*))?"
                  r"(?:\s*\(\s*(?:tied-def\s+([0-9]+)|[sp][0-9]+|<[^()]*>|[a-z0-9]+)\s*\))*$")
_TIED = re.compile(r"\(\s*tied-def\s+([0-9]+)\s*\)")
_BLOCK = re.compile(r"bb\.([0-9]+)(?:\.[A-Za-z0-9_.$-]+)?(?:\s*\([^)]*\))?:$")
# What makes two fixed stack objects the same memory (llc numbers them anew when it re-reads a file).
MEMORY_FIELDS = ("type", "offset", "size", "stack-id", "isImmutable", "isAliased")
# Terminators after which a block has no successor.
ENDS = frozenset({"S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG", "S_SETPC_B64_return", "SI_TCRETURN",
                  "S_ENDPGM_SAVED", "SI_CS_CHAIN_TC_W32", "SI_CS_CHAIN_TC_W64", "S_SETPC_B64_return_gfx"})
_OPCODE = re.compile(r"[A-Z][A-Za-z0-9_]*$")
# `define [linkage, cc, attributes] type @name(` in the IR document: group 1 is what precedes the name


@dataclass
class Op:
    kind: str  # reg, imm, bb, stack, other
    text: str  # the operand as written, flags and class stripped for registers
    flags: frozenset[str] = frozenset()
    reg: str = ""  # physical name without `$`, or the virtual register number as text
    virtual: bool = False
    subreg: str = ""
    cls: str = ""
    tied: int | None = None

    @property
    def is_def(self) -> bool:
        return bool(self.flags & {"def", "implicit-def"})

    @property
    def implicit(self) -> bool:
        return bool(self.flags & {"implicit", "implicit-def"})

    @property
    def reads(self) -> bool:
        """A use whose value matters."""
        return self.kind == "reg" and not self.is_def and not (self.flags & {"undef", "debug-use", "internal"}) \
            and self.reg != "noreg"


@dataclass
class Ins:
    opcode: str
    ops: list[Op]
    line: int
    flags: tuple[str, ...]
    mem: str

    @property
    def defs(self) -> list[Op]:
        return [o for o in self.ops if o.kind == "reg" and o.is_def]

    @property
    def explicit_regs(self) -> list[Op]:
        return [o for o in self.ops if o.kind == "reg" and not o.implicit]


@dataclass
class Block:
    number: int
    line: int
    successors: list[int] = field(default_factory=list)
    ins: list[Ins] = field(default_factory=list)
    has_successors: bool = False  # a `successors:` line was written


@dataclass(frozen=True)
class BudgetInputs:
    """What a function's register budget depends on, as the MIR file states it."""

    attributes: dict[str, str] = field(default_factory=dict)  # the IR's string attributes of the function
    convention: str = ""  # amdgpu_kernel, amdgpu_ps, ... ("" for the default)
    triple: str = ""
    flat_scratch_init: bool = False  # argumentInfo has flatScratchInit
    preloaded_sgprs: int = 0  # up to the highest SGPR argumentInfo names, that one included
    llvm21: bool = False  # machineFunctionInfo has dynamicVGPRBlockSize (llc 21 and later print it)


@dataclass
class Function:
    name: str
    classes: dict[str, str]  # virtual register number -> class
    stack_pointer: str
    entry_function: bool
    reserved: dict[str, str]  # register -> the machineFunctionInfo key that reserves it
    later_sgpr_masks: bool  # written by llc 20 or later (`hasFakeUses:`/`noPhis:`): s40-s47 ... not preserved
    fixed_stack: dict[str, tuple[str, ...]]  # id -> the memory it names (type, offset, size, ...)
    blocks: list[Block]
    line: int
    cc: str = "ccc"  # the calling convention of its `define` in the IR document (C without one)
    inputs: BudgetInputs = field(default_factory=BudgetInputs)
    wwm: set[str] = field(default_factory=set)  # virtual registers declared WWM_REG


def _split(text: str) -> list[tuple[str, int]]:
    """Comma-separated pieces at parenthesis depth 0, with their column offsets."""
    out: list[tuple[str, int]] = []
    depth, start, quoted = 0, 0, False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        if quoted:
            continue
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append((text[start:i], start))
            start = i + 1
    out.append((text[start:], start))
    return [(p.strip(), c + len(p) - len(p.lstrip())) for p, c in out if p.strip()]


def _operand(piece: str, where: str, is_def_side: bool) -> Op:
    words = piece.split()
    flags: set[str] = set()
    while words and words[0] in REG_FLAGS:
        flags.add(words.pop(0))
    rest = " ".join(words)
    if rest.startswith(("$", "%")) and not rest.startswith(("%bb.", "%stack.", "%fixed-stack.", "%const.", "%ir.",
                                                             "%ir-block.", "%subreg.", "%jump-table.")):
        m = _REG.match(rest)
        if not m:
            raise BadInput(f"{where}: error: register operand `{piece}` is outside the accepted MIR subset")
        name = m.group(1)
        tied = _TIED.search(rest)
        if is_def_side:
            flags.add("def")
        op = Op("reg", name, frozenset(flags), name[1:], name.startswith("%"), m.group(2) or "", m.group(3) or "",
                int(tied.group(1)) if tied else None)
        return op
    if flags:
        raise BadInput(f"{where}: error: register flags on a non-register operand `{piece}`")
    if re.fullmatch(r"-?[0-9]+", rest):
        return Op("imm", rest)
    if m := re.fullmatch(r"%bb\.([0-9]+)", rest):
        return Op("bb", m.group(1))
    if m := re.fullmatch(r"%stack\.([0-9]+)(?:\.[A-Za-z0-9_.]+)?(\s*\+\s*[0-9]+)?", rest):
        return Op("stack", m.group(1) + (m.group(2) or "").replace(" ", ""))
    return Op("other", " ".join(rest.split()))


def parse_instruction(text: str, line: int, col: int, path: str) -> Ins:
    where = f"{path}:{line}:{col}"
    body = text
    mem = ""
    if " :: " in body:
        body, mem = body.split(" :: ", 1)
        mem = mem.strip()
    # trailers LLVM prints after the operands (no meaning for the allocation)
    body = re.split(r",?\s+(?:debug-location|debug-instr-number|pcsections|mmra|pre-instr-symbol|"
                    r"post-instr-symbol|heap-alloc-marker)\b", body, maxsplit=1)[0]
    mem = re.split(r"\s+(?:debug-location|pcsections|mmra)\b", mem, maxsplit=1)[0]
    defs: list[tuple[str, int]] = []
    if " = " in body:
        lhs, rhs = body.split(" = ", 1)
        if lhs.strip() and all(p.split()[-1].startswith(("$", "%")) for p, _ in _split(lhs)):
            defs, body = _split(lhs), rhs
    words = body.split(None, 1)
    flags: list[str] = []
    while words and words[0] in INSTR_FLAGS:
        flags.append(words[0])
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words or not _OPCODE.match(words[0]):
        raise BadInput(f"{where}: error: no opcode in `{text.strip()[:60]}`")
    opcode = words[0]
    ops = [_operand(p, f"{path}:{line}:{col + c}", True) for p, c in defs]
    if any(o.kind != "reg" for o in ops):
        raise BadInput(f"{where}: error: a definition that is not a register")
    if len(words) > 1:
        ops += [_operand(p, f"{path}:{line}:{col}", False) for p, _ in _split(words[1])]
    if any("internal" in o.flags for o in ops):
        raise BadInput(f"{where}: error: an `internal` operand (a read of a value its bundle defines) is outside "
                       "the accepted MIR subset")
    if opcode == "S_NOP":
        # S_NOP reads no register (its only operand is the wait count): implicit uses only keep
        # values alive, and the fast allocator may name a whole register there for a subregister
        ops = [o for o in ops if o.kind != "reg" or o.is_def]
    return Ins(opcode, ops, line, tuple(flags), mem)


def _uncomment(raw: str) -> str:
    """The line without its `;` comment (a `;` inside a quoted string is text)."""
    quoted = False
    for i, ch in enumerate(raw):
        if ch == '"' and (i == 0 or raw[i - 1] != "\\"):
            quoted = not quoted
        elif ch == ";" and not quoted:
            return raw[:i]
    return raw


def _documents(lines: list[str]) -> list[tuple[int, list[str]]]:
    docs: list[tuple[int, list[str]]] = []
    cur: list[str] | None = None
    start = 0
    for i, raw in enumerate(lines, 1):
        if raw.startswith("---"):
            if cur is not None:
                docs.append((start, cur))
            cur, start = ([raw], i)
        elif raw.startswith("..."):
            if cur is not None:
                docs.append((start, cur))
            cur = None
        elif cur is not None:
            cur.append(raw)
    if cur is not None:
        docs.append((start, cur))
    return docs


def _function(first: int, doc: list[str], path: str) -> Function:
    name = ""
    classes: dict[str, str] = {}
    sp = "sp_reg"
    entry = False
    reserved: dict[str, str] = {}
    later = False
    fixed: dict[str, tuple[str, ...]] = {}
    entry_text = ""
    body_at = None
    section = ""
    args: dict[str, str] = {}  # argumentInfo: argument -> register
    in_args = in_wwm = llvm21 = False
    wwm: set[str] = set()  # virtual registers declared with the WWM_REG flag
    for k, raw in enumerate(doc):
        ln = first + k
        if raw.startswith(("hasFakeUses:", "noPhis:")):
            later = True
        if raw.startswith("name:"):
            name = raw.split(":", 1)[1].strip().strip("'\"")
        if raw and not raw.startswith(" "):
            section = raw.split(":", 1)[0]
        if section == "registers" and (m := re.search(r"id:\s*([0-9]+),\s*class:\s*([A-Za-z_0-9]+)", raw)):
            classes[m.group(1)] = m.group(2)
            if re.search(r"flags:\s*\[[^]]*\bWWM_REG\b", raw):
                wwm.add(m.group(1))
        if section == "machineFunctionInfo":
            in_args = raw.startswith("    ") and in_args or raw.startswith("  argumentInfo:")
            if in_args and (m := re.match(r"    ([A-Za-z]+):\s*\{\s*reg:\s*'?\$([a-z0-9_]+)", raw)):
                args[m.group(1)] = m.group(2)
            llvm21 = llvm21 or raw.startswith("  dynamicVGPRBlockSize:")
            in_wwm = raw.startswith("    ") and in_wwm or raw.startswith("  wwmReservedRegs:")
            if in_wwm and (m := re.match(r"\s+- '?\$([a-z0-9_]+)'?\s*$", raw)):
                reserved.setdefault(m.group(1), "wwmReservedRegs")
            if m := re.match(r"\s+stackPtrOffsetReg:\s*'?\$?([a-z0-9_]+)'?", raw):
                sp = m.group(1)
            if re.match(r"\s+isEntryFunction:\s*true", raw):
                entry = True
            if m := re.match(r"\s+(scratchRSrcReg|stackPtrOffsetReg|frameOffsetReg|sgprForEXECCopy|"
                             r"longBranchReservedReg|vgprForAGPRCopy):\s*'?\$([a-z0-9_]+)'?\s*$", raw):
                reserved.setdefault(m.group(2), m.group(1))

        if section == "fixedStack":
            entry_text = (entry_text + " " + raw.strip()) if entry_text or raw.strip().startswith("- {") else ""
            if entry_text.endswith("}"):
                fields = dict(re.findall(r"([A-Za-z-]+):\s*('[^']*'|[^,}]*)", entry_text))
                fixed[fields.get("id", "").strip()] = tuple(fields.get(f, "").strip() for f in MEMORY_FIELDS)
                entry_text = ""
        if raw.startswith("body:"):
            if raw.split(":", 1)[1].strip() != "|":
                raise BadInput(f"{path}:{ln}:1: error: `body:` must be a literal block (`|`)")
            body_at = k + 1
            break
    if not name or body_at is None:
        raise BadInput(f"{path}:{first}:1: error: a function document without `name:` or `body:`")
    blocks: list[Block] = []
    cur: Block | None = None
    bundle: list[Ins] | None = None  # the instructions of the open bundle
    bundle_at = ""
    bundles: list[tuple[str, list[Ins]]] = []
    for k in range(body_at, len(doc)):
        raw = doc[k]
        ln = first + k
        text = _uncomment(raw).rstrip()
        stripped = text.strip()
        if not stripped:
            continue
        col = len(text) - len(text.lstrip()) + 1
        if m := _BLOCK.match(stripped):
            cur = Block(int(m.group(1)), ln)
            blocks.append(cur)
            continue
        if cur is None:
            raise BadInput(f"{path}:{ln}:{col}: error: an instruction outside a block")
        if stripped.startswith("successors:"):
            cur.has_successors = True
            for piece, _ in _split(stripped[len("successors:"):]):
                sm = re.fullmatch(r"%bb\.([0-9]+)(?:\s*\([^)]*\))?", piece)
                if not sm:
                    raise BadInput(f"{path}:{ln}:{col}: error: successor `{piece}` is outside the accepted MIR subset")
                cur.successors.append(int(sm.group(1)))
            continue
        if stripped.startswith("liveins:"):
            continue
        if stripped == "}" and bundle is not None:
            bundles.append((bundle_at, bundle))
            bundle = None
            continue
        if stripped.endswith("{") and bundle is None:
            header = parse_instruction(stripped[:-1], ln, col, path)
            if header.opcode != "BUNDLE":
                raise BadInput(f"{path}:{ln}:{col}: error: `{{` after `{header.opcode}` is outside the accepted MIR "
                               "subset")
            bundle, bundle_at = [], f"{path}:{ln}:{col}"
            continue
        if stripped in ("{", "}") or stripped.endswith("{"):
            raise BadInput(f"{path}:{ln}:{col}: error: a bundle's braces outside the accepted MIR subset")
        ins = parse_instruction(stripped, ln, col, path)
        if ins.opcode == "BUNDLE":
            raise BadInput(f"{path}:{ln}:{col}: error: a BUNDLE without its instructions (`{{`) is outside the "
                           "accepted MIR subset")
        if ins.opcode.startswith("DBG_"):
            continue  # debug instructions do not execute
        if bundle is not None:
            bundle.append(ins)
        for op in ins.ops:
            if op.kind == "reg" and op.virtual and op.cls:
                if classes.setdefault(op.reg, op.cls) != op.cls:
                    raise BadInput(f"{path}:{ln}:{col}: error: %{op.reg} has two classes")
        cur.ins.append(ins)
    if bundle is not None:
        raise BadInput(f"{bundle_at}: error: a bundle without its closing `}}`")
    for where, inner in bundles:
        _independent(inner, classes, where)
    preloaded = 0
    for r in args.values():
        if re.fullmatch(r"sgpr[0-9]+(_sgpr[0-9]+)*", r):
            preloaded = max(preloaded, int(r.split("_")[-1][4:]) + 1)
    return Function(name, classes, sp, entry, reserved, later, fixed, blocks, first,
                    inputs=BudgetInputs({}, "", "", "flatScratchInit" in args, preloaded, llvm21), wwm=wwm)


_DEFINE = re.compile(r"\s*define\b([^@]*)@(\"[^\"]*\"|[-\w.$]+)\(")
_GROUP = re.compile(r"\s*attributes #([0-9]+) = \{(.*)\}\s*$")


def _ir(doc: list[str]) -> tuple[str, dict[str, tuple[str, str]], dict[str, dict[str, str]]]:
    """Of the IR module: its triple; per function, its calling convention and attribute group;
    per attribute group, its string attributes (`"key"="value"`, `"key"`)."""
    triple = ""
    functions: dict[str, tuple[str, str]] = {}
    groups: dict[str, dict[str, str]] = {}
    for raw in doc[1:]:
        if m := re.match(r'\s*target triple = "([^"]*)"', raw):
            triple = m.group(1)
        elif m := _DEFINE.match(raw):
            cc = re.search(r"\b(amdgpu_\w+|ccc|fastcc|coldcc|cc\s*[0-9]+|[a-z_]+cc)\b", m.group(1))
            group = re.findall(r"\s#([0-9]+)\b", raw[m.end():])
            functions.setdefault(m.group(2).strip('"'), (cc.group(1) if cc else "", group[-1] if group else ""))
        elif m := _GROUP.match(raw):
            groups[m.group(1)] = {k: v for k, v in re.findall(r'"([^"]*)"(?:="([^"]*)")?', m.group(2))}
    return triple, functions, groups


def _footprint(op: Op, classes: dict[str, str], where: str) -> set[tuple[str, str]]:
    """The 16-bit units of a physical register operand, or the 16-bit lanes of a virtual one."""
    try:
        if op.virtual:
            if op.reg not in classes:
                raise BadInput(f"{where}: error: %{op.reg} in a bundle has no class")
            _, width, _ = regs.class_info(classes[op.reg])
            return {("%" + op.reg, str(s)) for s in (regs.subreg_slots(op.subreg) if op.subreg else range(width))}
        units = regs.units(op.reg)
        if op.subreg:
            units = [units[s] for s in regs.subreg_slots(op.subreg) if s < len(units)]
        return {("$", u) for u in units}
    except regs.RegError as e:
        raise BadInput(f"{where}: error: {e}") from None


def _independent(inner: list[Ins], classes: dict[str, str], where: str) -> None:
    """Refuse a bundle one of whose instructions writes a unit or lane a later one reads or
    writes (then running them in turn is not what the bundle does)."""
    written: set[tuple[str, str]] = set()
    for ins in inner:
        touched: set[tuple[str, str]] = set()
        for op in ins.ops:
            if op.kind == "reg" and op.reg != "noreg":
                touched |= _footprint(op, classes, where)
        if touched & written:
            raise BadInput(f"{where}: error: a bundle whose instructions depend on each other (line {ins.line} "
                           "reads or writes what an earlier one in it writes) is outside the accepted MIR subset")
        written |= {x for op in ins.ops if op.kind == "reg" and op.is_def and op.reg != "noreg"
                    for x in _footprint(op, classes, where)}


def wave32(fn: Function) -> bool:
    """Whether the function's own IR says it runs in wave32: a `target-cpu` of gfx10 or later
    without `+wavefrontsize64`, or `+wavefrontsize32` (AMDGPU.td FeatureWavefrontSize32/64;
    gfx10+ default to wave32). Without that evidence, no."""
    features = fn.inputs.attributes.get("target-features", "")
    if "+wavefrontsize64" in features:
        return False
    m = re.fullmatch(r"gfx([0-9]+)[0-9a-z]{2}", fn.inputs.attributes.get("target-cpu", ""))
    return "+wavefrontsize32" in features or (m is not None and int(m.group(1)) >= 10)


def wave32_vcc(fn: Function) -> None:
    """Read a wave32 function as llc reads it (GCNSubtarget::mirFileLoaded calls
    SIInstrInfo::fixImplicitOperands): an implicit `$vcc` operand of any instruction but inline
    assembly is `$vcc_lo`, the lanes of a wave32 VCC (SIRegisterInfo.td: VCC is VCC_LO and VCC_HI).
    An explicit `$vcc` is left as written."""
    for b in fn.blocks:
        for ins in b.ins:
            if ins.opcode.startswith("INLINEASM"):
                continue
            for k, op in enumerate(ins.ops):
                if op.kind == "reg" and op.implicit and op.reg == "vcc" and not op.subreg:
                    ins.ops[k] = Op("reg", "$vcc_lo", op.flags, "vcc_lo", False, "", op.cls, op.tied)


def read_mir(path: str, data: bytes) -> list[Function]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}:1:1: error: not UTF-8 ({e.reason})") from None
    lines = text.split("\n")
    funcs: list[Function] = []
    ir: tuple[str, dict[str, tuple[str, str]], dict[str, dict[str, str]]] | None = None
    for k, (first, doc) in enumerate(_documents(lines)):
        if doc[0].startswith("--- |"):
            ir = _ir(doc) if k == 0 else ir
            continue
        if doc[0].strip() != "---":
            raise BadInput(f"{path}:{first}:1: error: unexpected document header `{doc[0][:40]}`")
        fn = _function(first, doc, path)
        if ir is not None:
            if fn.name not in ir[1]:
                raise BadInput(f"{path}:{fn.line}:1: error: the IR document does not define function {fn.name}")
            cc, group = ir[1][fn.name]
            fn.cc = cc or "ccc"
            fn.inputs = BudgetInputs(ir[2].get(group, {}), cc if cc.startswith("amdgpu_") else "", ir[0],
                                     fn.inputs.flat_scratch_init, fn.inputs.preloaded_sgprs, fn.inputs.llvm21)
        funcs.append(fn)
    if not funcs:
        raise BadInput(f"{path}:1:1: error: no machine function")
    for fn in funcs:
        for k, b in enumerate(fn.blocks):
            last = b.ins[-1].opcode if b.ins else ""
            if not b.has_successors and last not in ENDS and k + 1 < len(fn.blocks):
                # the MIR parser would infer successors (fall-through, branches): not read here
                raise BadInput(f"{path}:{b.line}:3: error: bb.{b.number} has no `successors:` list and does "
                               "not end the function")
    return funcs
