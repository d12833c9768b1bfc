"""Write MIR back in llc's layout.

The YAML header of each function is written back as it was read (or as a caller replaced
it); the body is printed from the data model, so parse -> print -> parse gives the same
structure. Output is deterministic: the same module gives the same bytes.
"""

from __future__ import annotations

from verilocc.mir.model import REG_FLAGS, Block, Function, Instruction, Module, Operand


def print_operand(op: Operand) -> str:
    if op.kind != "reg":
        return op.text
    flags = [f for f in REG_FLAGS if f in op.flags and f != "def"]
    text = op.register_text
    if op.reg_class:
        text += f":{op.reg_class}"
    if op.tied_def is not None and not op.tie_implied:  # llc leaves the definition's ties out too
        text += f"(tied-def {op.tied_def})"
    if op.llt:
        text += f"({op.llt})"
    return " ".join([*flags, text])


def print_instruction(ins: Instruction) -> str:
    defs: list[str] = []
    rest: list[str] = []
    explicit_defs = True
    for op in ins.operands:
        # Leading explicit defs go before `=`, as MIRPrinter writes them.
        if explicit_defs and op.kind == "reg" and "def" in op.flags and "implicit-def" not in op.flags:
            defs.append(print_operand(op))
        else:
            explicit_defs = False
            # An explicit def among the other operands (INLINEASM outputs) keeps its `def`.
            text = print_operand(op)
            rest.append(f"def {text}" if op.kind == "reg" and "def" in op.flags and "implicit-def" not in op.flags
                        else text)
    rest.extend(ins.trailer)
    head = ", ".join(defs) + " = " if defs else ""
    line = head + " ".join([*ins.instr_flags, ins.opcode])
    if rest:
        line += " " + ", ".join(rest)
    if ins.mem:
        line += " :: " + ins.mem
    if ins.opens_bundle:
        line += " {"
    return line


def print_block(block: Block) -> list[str]:
    header = f"bb.{block.number}" + (f".{block.name}" if block.name else "")
    if block.attributes:
        header += " (" + ", ".join(block.attributes) + ")"
    out = [f"  {header}:"]
    if block.successors_written or block.successors:
        succ = ", ".join(f"%bb.{n}" + (f"({w})" if w is not None else "") for n, w in block.successors)
        out.append(f"    successors: {succ}".rstrip())
    if block.liveins:
        lv = ", ".join(f"${r}" + (f":0x{m:016X}" if m is not None else "") for r, m in block.liveins)
        out.append(f"    liveins: {lv}")
    if len(out) > 1 and block.instructions:
        out.append("  ")
    prev_bundled = False
    for ins in block.instructions:
        if prev_bundled and not ins.bundled:
            out.append("    }")
        indent = "      " if ins.bundled else "    "
        out.append(indent + print_instruction(ins))
        prev_bundled = ins.bundled
    if prev_bundled:
        out.append("    }")
    return out


def print_function(fn: Function) -> str:
    lines = ["---"]
    if fn.header_text:
        lines.append(fn.header_text)
    lines.append("body:             |")
    for i, block in enumerate(fn.blocks):
        if i:
            lines.append("  ")
        lines.extend(print_block(block))
    lines.extend([""] * fn.body_blank_lines)
    if fn.trailer_text.strip():
        lines.append(fn.trailer_text)
    lines.append("...")
    return "\n".join(lines) + "\n"


def print_module(module: Module) -> str:
    parts: list[str] = []
    if module.ir_text is not None:
        ir = "\n".join("  " + ln for ln in module.ir_text.rstrip("\n").split("\n"))
        parts.append("--- |\n" + ir + "\n" + "\n" * module.ir_blank_lines + "...\n")
    parts.extend(print_function(fn) for fn in module.functions)
    return "".join(parts)
