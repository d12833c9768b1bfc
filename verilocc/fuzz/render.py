"""MIR text of the fuzzer's programs, in llc's layout.

The generator writes its programs as text: the embedded IR module naming the target
(`ir_module`), the YAML of the machine function up to `body:` (`function_header`), and the
body from MIR lines it wrote itself (`render_body`). The reference allocator prints the
instructions of the parsed program it allocates through `verilocc.mir.printer` and takes the
rest from here: the function header with its spill slots (`post_ra_header`, which shares
`stack_yaml` and `has_spilled` with `function_header`), the body around its lines
(`render_body`) and the IR document (`ir_document`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from verilocc.fuzz.profiles import PROFILES

SpillSlot = tuple[int, int, str]  # (stack object id, size in bytes, stack-id: default or sgpr-spill)


def stack_yaml(slots: Sequence[SpillSlot]) -> list[str]:
    """The `stack:` key of a machine function holding spill slots."""
    if not slots:
        return ["stack:           []"]
    lines = ["stack:"]
    for sid, size, stack_id in slots:
        lines.append(f"  - {{ id: {sid}, name: '', type: spill-slot, offset: 0, size: {size}, alignment: 4, ")
        lines.append(f"      stack-id: {stack_id}, callee-saved-register: '', callee-saved-restored: true, ")
        lines.append("      debug-info-variable: '', debug-info-expression: '', debug-info-location: '' }")
    return lines


def has_spilled(slots: Sequence[SpillSlot], sgprs: bool) -> str:
    """machineFunctionInfo's hasSpilledSGPRs (`sgprs`) or hasSpilledVGPRs, as YAML."""
    return "true" if any((stack_id == "sgpr-spill") == sgprs for _, _, stack_id in slots) else "false"


def ir_module(target: str, name: str = "f") -> str:
    """The IR document of a program: one empty kernel `name` whose attributes name the target."""
    wave = "+wavefrontsize32" if PROFILES[target].wave32 else "+wavefrontsize64"
    return (
        "--- |\n"
        "  ; ModuleID = 'verilocc-fuzz'\n"
        "  target triple = \"amdgcn-amd-amdhsa\"\n"
        "  \n"
        f"  define amdgpu_kernel void @{name}() #0 {{\n"
        "    ret void\n"
        "  }\n"
        "  \n"
        f"  attributes #0 = {{ \"amdgpu-flat-work-group-size\"=\"1,256\" \"target-cpu\"=\"{target}\" "
        f"\"target-features\"=\"{wave}\" }}\n"
        "\n"
        "...\n"
    )


def function_header(
    target: str,
    registers: Sequence[tuple[int, str]],
    liveins: Sequence[tuple[str, int | None]],
    stack: Sequence[SpillSlot] = (),
    name: str = "f",
    calls: bool = False,
) -> str:
    """The YAML of one machine function up to `body:`. `stack` holds (id, size, stack-id);
    `calls`: the function calls (llc's machine verifier wants `adjustsStack` with the call
    frame pseudos)."""
    p = PROFILES[target]
    lines = [
        "---",
        f"name:            {name}",
        "alignment:       1",
        "tracksRegLiveness: true",
    ]
    if registers:
        lines.append("registers:")
        lines.extend(f"  - {{ id: {i}, class: {c}, preferred-register: '' }}" for i, c in registers)
    else:
        lines.append("registers:       []")
    lines.append("liveins:")
    lines.extend(f"  - {{ reg: '${r}', virtual-reg: '{'' if v is None else f'%{v}'}' }}" for r, v in liveins)
    lines += ["frameInfo:", "  maxAlignment:    1"]
    if calls:
        lines += ["  adjustsStack:    true", "  hasCalls:        true"]
    lines += ["fixedStack:      []"]
    lines += stack_yaml(stack)
    args = [f"    kernargSegmentPtr: {{ reg: '${p.kernarg}' }}",
            f"    workGroupIDX:    {{ reg: '${p.group_ids[0]}' }}",
            f"    workGroupIDY:    {{ reg: '${p.group_ids[1]}' }}",
            "    workItemIDX:     { reg: '$vgpr0', mask: 1023 }",
            "    workItemIDY:     { reg: '$vgpr1', mask: 1047552 }"]
    if p.workitem_ids == "split":
        args[3:] = ["    workItemIDX:     { reg: '$vgpr0' }", "    workItemIDY:     { reg: '$vgpr1' }"]
    elif p.workitem_ids == "packed":
        args[4] = "    workItemIDY:     { reg: '$vgpr0', mask: 1047552 }"
    if p.architected_group_ids:
        del args[1:3]
    if p.private_segment_buffer:
        args.insert(0, "    privateSegmentBuffer: { reg: '$sgpr0_sgpr1_sgpr2_sgpr3' }")
    lines += [
        "machineFunctionInfo:",
        "  isEntryFunction: true",
        f"  hasSpilledSGPRs: {has_spilled(stack, sgprs=True)}",
        f"  hasSpilledVGPRs: {has_spilled(stack, sgprs=False)}",
        f"  scratchRSrcReg:  '{p.scratch_rsrc}'",
        "  frameOffsetReg:  '$fp_reg'",
        "  stackPtrOffsetReg: '$sgpr32'",
        "  argumentInfo:",
        *args,
        "  occupancy:       8",
        f"  sgprForEXECCopy: '{p.exec_copy}'",
    ]
    return "\n".join(lines) + "\n"


def render_body(blocks: Sequence[tuple[int, Sequence[int], Sequence[str], Sequence[str]]]) -> str:
    """`body:` from (number, successors, block live-ins, instruction lines) per block."""
    out = ["body:             |"]
    for i, (num, succs, liveins, instrs) in enumerate(blocks):
        if i:
            out.append("  ")
        out.append(f"  bb.{num}:")
        if succs:
            w = 0x80000000 // len(succs) if len(succs) > 1 else 0x80000000
            out.append("    successors: " + ", ".join(f"%bb.{s}(0x{w:08x})" for s in succs))
        if liveins:
            out.append("    liveins: " + ", ".join(liveins))
        if len(out[-1]) and not out[-1].startswith("  bb."):
            out.append("  ")
        out.extend(f"    {ins}" for ins in instrs)
    out.append("")
    out.append("...")
    return "\n".join(out) + "\n"


def post_ra_header(header_text: str, slots: Sequence[SpillSlot]) -> str:
    """The YAML of an allocated function from its virtual program's (`Function.header_text`):
    no virtual registers, the spill slots as the stack, the spill flags to match."""
    out: list[str] = []
    lines = header_text.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith(("registers:", "stack:")):
            out += ["registers:       []"] if ln.startswith("registers:") else stack_yaml(slots)
            i += 1
            while i < len(lines) and lines[i].startswith((" ", "-")):
                i += 1
            continue
        ln = re.sub(r"virtual-reg: '%[^']*'", "virtual-reg: ''", ln)
        if ln.strip().startswith("hasSpilledVGPRs:"):
            ln = "  hasSpilledVGPRs: " + has_spilled(slots, sgprs=False)
        if ln.strip().startswith("hasSpilledSGPRs:"):
            ln = "  hasSpilledSGPRs: " + has_spilled(slots, sgprs=True)
        out.append(ln)
        i += 1
    return "\n".join(out)


def ir_document(ir_text: str) -> str:
    """The IR document of an allocated program, as the reference allocator writes it: unlike
    llc (and `verilocc.mir.printer`) it leaves blank lines unindented; the long fuzz
    campaign's record holds these bytes."""
    ir = "\n".join(("  " + ln) if ln else "" for ln in ir_text.rstrip("\n").split("\n"))
    return "--- |\n" + ir + "\n\n...\n"
