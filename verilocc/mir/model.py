"""The MIR data model: modules, functions, blocks, instructions and operands.

One object per construct of the MIR body language (llvm/docs/MIRLangRef.rst). Every
instruction and operand keeps its source line and column so that findings and parse errors
point at the text the user wrote. Register operands are parsed into their parts (register,
subregister index, class, type, flags, tie); other operands keep their text and a kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


# Register operand flags as llc prints them, in the order MIRPrinter writes them.
REG_FLAGS = (
    "implicit",
    "implicit-def",
    "def",
    "dead",
    "killed",
    "undef",
    "internal",
    "early-clobber",
    "debug-use",
    "renamable",
)

# Instruction flags that may stand between `=` and the opcode.
INSTR_FLAGS = frozenset(
    {
        "frame-setup",
        "frame-destroy",
        "nnan",
        "ninf",
        "nsz",
        "arcp",
        "contract",
        "afn",
        "reassoc",
        "nuw",
        "nsw",
        "exact",
        "nofpexcept",
        "nomerge",
        "unpredictable",
        "noconvergent",
        "nusw",
        "disjoint",
        "nneg",
        "samesign",
        "inbounds",
    }
)


@dataclass(init=False)
class Operand:
    """One machine operand.

    `kind` is "reg" for register operands (virtual, physical or `_`/`$noreg`), otherwise one of
    "imm", "fpimm", "cimm", "mbb", "stack", "fixed-stack", "global", "external", "subreg",
    "regmask", "mcsymbol", "intrinsic", "predicate", "other". For non-register operands
    `text` is the operand as written (flags removed) and defines its identity.
    """

    kind: str
    text: str
    line: int
    column: int
    # Register operands only:
    vreg: int | str | None = None  # virtual register number (or name for `%name`)
    phys: str | None = None  # physical register name without `$`, lower case
    subreg: str | None = None  # subregister index: `%7.sub0` -> "sub0"
    reg_class: str | None = None  # class annotation `%7:vreg_64`
    llt: str | None = None  # low-level type annotation `(s32)`, `(p4)`
    flags: frozenset[str] = frozenset()
    # On a use operand: the def it is tied to, whether the text says so (`(tied-def N)`) or the
    # opcode's definition implies it (`verilocc.target.opcodes`; llc's MIR parser ties those
    # itself and its printer leaves them out).
    tied_def: int | None = None
    tie_implied: bool = False  # `tied_def` comes from the definition, not the text: not printed

    # `__init__` and `__reduce__` are written out (the same parameters as the fields, in their
    # order): the `__init__` dataclasses writes is interpreted code, which the compiled core
    # (`verilocc.native`) would call for every operand it makes, tens of thousands per kernel.
    def __init__(self, kind: str, text: str, line: int, column: int, vreg: int | str | None = None,
                 phys: str | None = None, subreg: str | None = None, reg_class: str | None = None,
                 llt: str | None = None, flags: frozenset[str] = frozenset(), tied_def: int | None = None,
                 tie_implied: bool = False) -> None:
        self.kind = kind
        self.text = text
        self.line = line
        self.column = column
        self.vreg = vreg
        self.phys = phys
        self.subreg = subreg
        self.reg_class = reg_class
        self.llt = llt
        self.flags = flags
        self.tied_def = tied_def
        self.tie_implied = tie_implied

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy: the fields, given to `__init__`
        return (Operand, (self.kind, self.text, self.line, self.column, self.vreg, self.phys, self.subreg,
                          self.reg_class, self.llt, self.flags, self.tied_def, self.tie_implied))

    @property
    def is_def(self) -> bool:
        """A def: `def` or `implicit-def` among the flags (read from them, so always true to them)."""
        flags = self.flags
        return "def" in flags or "implicit-def" in flags

    @property
    def is_implicit(self) -> bool:
        flags = self.flags
        return "implicit" in flags or "implicit-def" in flags

    @property
    def is_reg(self) -> bool:
        return self.kind == "reg"

    @property
    def is_noreg(self) -> bool:
        return self.kind == "reg" and self.vreg is None and self.phys is None

    def has(self, flag: str) -> bool:
        return flag in self.flags

    @property
    def register_text(self) -> str:
        """The register as written, without flags: `%7.sub0`, `$vgpr0`, `$noreg`."""
        if self.vreg is not None:
            base = f"%{self.vreg}"
        elif self.phys is not None:
            base = f"${self.phys}"
        else:
            base = "$noreg"
        return f"{base}.{self.subreg}" if self.subreg else base


@dataclass(init=False)
class Instruction:
    opcode: str
    operands: list[Operand]  # explicit defs first, then the rest in written order
    line: int
    column: int
    instr_flags: tuple[str, ...] = ()
    mem: str | None = None  # memory operands after `::`, as written
    trailer: tuple[str, ...] = ()  # debug-location, pcsections, ... as written
    bundled: bool = False  # inside a `{ ... }` bundle (not the BUNDLE header)
    opens_bundle: bool = False  # this instruction is followed by `{`

    def __init__(self, opcode: str, operands: list[Operand], line: int, column: int, instr_flags: tuple[str, ...] = (),
                 mem: str | None = None, trailer: tuple[str, ...] = (), bundled: bool = False,
                 opens_bundle: bool = False) -> None:  # as `Operand.__init__`
        self.opcode = opcode
        self.operands = operands
        self.line = line
        self.column = column
        self.instr_flags = instr_flags
        self.mem = mem
        self.trailer = trailer
        self.bundled = bundled
        self.opens_bundle = opens_bundle

    def __reduce__(self) -> tuple[Any, ...]:
        return (Instruction, (self.opcode, self.operands, self.line, self.column, self.instr_flags, self.mem,
                              self.trailer, self.bundled, self.opens_bundle))

    @property
    def defs(self) -> list[Operand]:
        return [op for op in self.operands if op.kind == "reg" and op.is_def]

    @property
    def uses(self) -> list[Operand]:
        return [op for op in self.operands if op.kind == "reg" and not op.is_def]

    @property
    def explicit_regs(self) -> list[Operand]:
        """The register operands that are not implicit, defs and uses, in operand order: `$vgpr0`
        and `%1` of `$vgpr0 = V_MOV_B32_e32 %1, implicit $exec`."""
        return [op for op in self.operands if op.kind == "reg" and not op.is_implicit]


@dataclass
class Block:
    number: int
    line: int
    name: str | None = None  # `bb.1.entry` -> "entry"
    attributes: tuple[str, ...] = ()  # `(%ir-block.4, align 4)` parts, as written
    successors: list[tuple[int, str | None]] = field(default_factory=list)
    liveins: list[tuple[str, int | None]] = field(default_factory=list)  # ($reg, lane mask)
    instructions: list[Instruction] = field(default_factory=list)
    successors_written: bool = False

    @property
    def label(self) -> str:
        return f"bb.{self.number}" + (f".{self.name}" if self.name else "")


@dataclass
class VRegDecl:
    id: int | str
    reg_class: str | None  # class or register bank (`_` for generic registers)
    preferred: str | None
    flags: tuple[str, ...] = ()
    line: int = 0


@dataclass
class Function:
    name: str
    file: str
    line: int  # line of the `---` that opens the document
    header: dict[str, Any]  # every YAML key but `body`, as loaded
    header_text: str  # the YAML text before `body:`, printed back unchanged
    registers: dict[int | str, VRegDecl]
    liveins: list[tuple[str, str | None]]  # ($physreg, %vreg or None)
    blocks: list[Block]
    ir_attributes: dict[str, str] = field(default_factory=dict)  # "target-cpu" -> "gfx90a", ...
    calling_convention: str = ""  # of the IR function: "amdgpu_kernel", "amdgpu_ps", ... ("" default)
    triple: str = ""  # the IR module's `target triple` ("amdgcn-amd-amdhsa"; "" when absent)
    body_line: int = 0  # line of `body:`
    trailer_text: str = ""  # YAML keys after `body:` (rare), printed back unchanged
    body_blank_lines: int = 1  # blank lines closing the body (LLVM 19 writes one, LLVM 22 none)

    @property
    def target_cpu(self) -> str | None:
        return self.ir_attributes.get("target-cpu")

    @property
    def target_features(self) -> str | None:
        return self.ir_attributes.get("target-features")

    def block(self, number: int) -> Block:
        for b in self.blocks:
            if b.number == number:
                return b
        raise KeyError(number)

    @property
    def stack_slots(self) -> list[dict[str, Any]]:
        return list(self.header.get("stack") or [])

    @property
    def machine_function_info(self) -> dict[str, Any]:
        return dict(self.header.get("machineFunctionInfo") or {})

    def instructions(self) -> list[tuple[Block, int, Instruction]]:
        return [(b, i, ins) for b in self.blocks for i, ins in enumerate(b.instructions)]


@dataclass
class Module:
    file: str
    ir_text: str | None  # the embedded LLVM IR module, as written (None when absent)
    functions: list[Function]
    ir_blank_lines: int = 1  # blank lines closing the IR document (LLVM 19 writes one, LLVM 22 none)
    # Text between documents we keep verbatim (the `--- |` header line etc.) is regenerated.

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)
