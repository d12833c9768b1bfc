"""MIR text as llc prints it: files read and written byte for byte, the machine-function
documents and their bodies, and the rewrites that make a pre file one llc reads back as itself.

`read_text` and `write_if_changed` keep every byte (undecodable ones too) and write a file only
when its content changes. `drop_unused_vregs` removes the `registers:` entries a function does
not otherwise mention (llc keeps them, and their numbers, otherwise) and clears the hints that
name them; `fixed_stack_named_by_memory` makes two prints equal that list a function's fixed
stack objects in different orders (why both: `verilocc.llc.pairs`). Standard library only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

OPCODE = re.compile(r"\b([A-Z][A-Za-z0-9_]*)\b")
VREG_REF = re.compile(r"%(\d+)\b")
HINT = re.compile(r"preferred-register: '%(\d+)'")
DECLARATION = re.compile(r"^  - \{ id: \d+, class: ")
REG_ENTRY = re.compile(r"^- \{ id: (\d+),.*\}$")


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def write_if_changed(path: Path, text: str) -> bool:
    data = text.encode("utf-8", errors="surrogateescape")
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def function_documents(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) line ranges of the machine-function YAML documents (`name:` first)."""
    starts = [i for i, ln in enumerate(lines) if ln == "---" or ln.startswith("--- ")]
    docs = []
    for k, s in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        for j in range(s + 1, end):
            if lines[j] == "...":
                end = j
                break
        if s + 1 < end and lines[s + 1].startswith("name:"):
            docs.append((s + 1, end))
    return docs


def body_line_numbers(lines: list[str]) -> list[int]:
    """Indices of the lines inside the `body: |` blocks of all machine functions."""
    out: list[int] = []
    for start, end in function_documents(lines):
        inside = False
        for i in range(start, end):
            if lines[i].startswith("body:"):
                inside = True
                continue
            if inside:
                if lines[i] and not lines[i].startswith(" "):
                    inside = False
                else:
                    out.append(i)
    return out


_FIXED_ENTRY = re.compile(r"^  - \{ id: (\d+), (.*)$")
_FIXED_REF = re.compile(r"%fixed-stack\.(\d+)(?!\d)")


def fixed_stack_named_by_memory(text: str) -> str:
    """`text` with each function's fixed stack objects listed in one order and called by what
    they describe (every field but the id; duplicates alike): llc lists them the other way
    round each time it reads a file, so two prints that differ only so are equal here."""
    lines = text.split("\n")
    out: list[str] = []
    done = 0
    for start, end in function_documents(lines):
        at = next((i for i in range(start, end) if lines[i] == "fixedStack:"), None)
        if at is None:
            continue
        described: dict[int, str] = {}  # id -> the entry without it, its continuation lines joined
        i = at + 1
        while i < end and (m := _FIXED_ENTRY.match(lines[i])) is not None:
            entry = [m.group(2)]
            while not entry[-1].rstrip().endswith("}") and i + 1 < end:
                i += 1
                entry.append(lines[i].strip())
            described[int(m.group(1))] = " ".join(entry)
            i += 1
        order = sorted(set(described.values()))
        name = {old: order.index(d) for old, d in described.items()}

        def rename(m: re.Match[str]) -> str:
            return f"%fixed-stack.m{name.get(int(m.group(1)), m.group(1))}"
        out += lines[done:start]
        out += [_FIXED_REF.sub(rename, ln) for ln in lines[start:at + 1]]
        out += sorted(described.values())
        out += [_FIXED_REF.sub(rename, ln) for ln in lines[i:end]]
        done = end
    return "\n".join(out + lines[done:])


def drop_unused_vregs(text: str) -> tuple[str, int, int]:
    """Remove `registers:` entries whose `%N` the function does not otherwise mention.

    Returns the new text, the number of entries dropped and of hints cleared.
    """
    lines = text.split("\n")
    drop: set[int] = set()
    dropped = cleared = 0
    for start, end in function_documents(lines):
        # Entries are YAML flow mappings, one per `  - { id: N, ... }` item; LLVM 22 wraps
        # long ones onto a continuation line (`      flags: [  ] }`).
        entries: dict[int, tuple[int, list[int]]] = {}  # first line -> (id, all its lines)
        i = start
        while i < end and not lines[i].startswith("registers:"):
            i += 1
        if i == end or lines[i].rstrip().endswith("[]"):
            continue
        j = i + 1
        well_formed = True
        while j < end and lines[j].startswith(" "):
            first = j
            while not lines[j].rstrip().endswith("}") and j + 1 < end \
                    and lines[j + 1].startswith("    "):
                j += 1
            m = REG_ENTRY.match(" ".join(lines[k].strip() for k in range(first, j + 1)))
            if m:
                entries[first] = (int(m.group(1)), list(range(first, j + 1)))
            else:
                well_formed = False  # an entry llc printed differently: leave it alone
            j += 1
        if not well_formed:
            continue
        reg_lines = {k for _, ks in entries.values() for k in ks}
        # Used: mentioned outside `registers:` (body, liveins, frame and function info).
        # A hint (`preferred-register: '%M'`) does not make %M used; a hint to a dropped
        # register is cleared (the parser rejects a dangling one, and a hint to a register
        # without a live range never guides the allocator).
        used: set[int] = set()
        for k in range(start, end):
            if k not in reg_lines:
                used.update(int(x) for x in VREG_REF.findall(lines[k]))
        for rid, ks in entries.values():
            if rid not in used:
                drop.update(ks)
                dropped += 1
                continue
            for k in ks:
                m = HINT.search(lines[k])
                if m and int(m.group(1)) not in used:
                    lines[k] = (lines[k][: m.start()] + "preferred-register: ''"
                                + lines[k][m.end():])
                    cleared += 1
    if not drop and not cleared:
        return text, 0, 0
    kept = "\n".join(ln for k, ln in enumerate(lines) if k not in drop)
    return kept, dropped, cleared


def opcode_of(line: str) -> str | None:
    code = line.split(" :: ", 1)[0]
    if " = " in code:
        code = code.split(" = ", 1)[1]
    m = OPCODE.search(code)
    return m.group(1) if m else None


def virtual_registers_in_body(text: str) -> list[tuple[int, str]]:
    lines = text.split("\n")
    found = []
    for i in body_line_numbers(lines):
        for m in re.finditer(r"%[0-9]+", lines[i]):
            found.append((i + 1, m.group(0)))
    return found


def declared_vregs(text: str) -> int:
    return sum(1 for ln in text.split("\n") if DECLARATION.match(ln))
