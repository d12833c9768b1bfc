"""Read MIR files as llc 13 to 22 writes them.

A MIR file is a YAML stream: an optional first document holding the LLVM IR module as a
block scalar, then one document per machine function. The YAML keys of a function are its
header (`verilocc.mir.header`, loaded with PyYAML); the `body:` block scalar is parsed line by
line (`verilocc.mir.body`) so that every block, instruction and operand keeps its exact line
and column.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

from verilocc.errors import InputError, TargetError
from verilocc.mir.body import BodyParser, parse_instruction
from verilocc.mir.header import (HEADER_KEY_TYPES, find_line, find_text, ir_function_attributes, ir_triple, load_yaml,
                                 parse_registers, registers_as_llc_writes_them)
from verilocc.mir.model import Block, Function, Module
from verilocc.target import parse_physreg

__all__ = ["MAX_FILE_BYTES", "parse_instruction", "parse_module", "read_module", "read_text"]

# Larger inputs are refused with one line instead of exhausting memory.
MAX_FILE_BYTES = 256 * 1024 * 1024


def read_module(path: str | os.PathLike[str]) -> Module:
    """Read and parse a MIR file; every failure is an InputError with a place."""
    name = str(path)
    text = read_text(path, "a MIR file")
    return parse_module(text, name)


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """Read a UTF-8 input file of at most MAX_FILE_BYTES; every failure is an InputError."""
    name = str(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", name, 0, 0) from None
    size = st.st_size
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory, expected {what}", name, 0, 0)
    if size > MAX_FILE_BYTES:
        raise InputError(
            f"file is {size} bytes, larger than the {MAX_FILE_BYTES} byte limit", name, 0, 0
        )
    try:
        # Bounded: devices and pipes report no size (`/dev/zero` never ends).
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", name, 0, 0) from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"file is larger than the {MAX_FILE_BYTES} byte limit", name, 0, 0)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError("file is not UTF-8 text", name, line, col) from None


def parse_module(text: str, file: str = "<input>") -> Module:
    """Parse the text of a MIR file (CRLF line ends are read as LF, as llc does)."""
    text = text.replace("\r\n", "\n")
    if "\x00" in text:
        at = text.index("\x00")
        line = text.count("\n", 0, at) + 1
        raise InputError("NUL byte in MIR text", file, line, at - text.rfind("\n", 0, at))
    lines = text.split("\n")
    docs = _split_documents(lines, file)
    ir_text: str | None = None
    ir_blank = 0
    functions: list[Function] = []
    names: set[str] = set()
    for start, body in docs:
        first = body[0] if body else ""
        opener = lines[start - 1] if start >= 1 else ""
        if opener.rstrip().endswith("|") and ir_text is None and not functions:
            # `--- |` opens the embedded IR module.
            ir_text = "\n".join(_dedent_block(body))
            ir_blank = _trailing_blank_lines(body)
            continue
        if not any(ln.strip() and not ln.lstrip().startswith("#") for ln in body):
            continue
        del first
        fn = _parse_function(lines, start, len(body), file, ir_text)
        if fn.name in names:
            raise InputError(f"redefinition of machine function '{fn.name}'", file,
                             find_line(lines, start, start + len(body), "name:"), 1)
        names.add(fn.name)
        functions.append(fn)
    if not functions:
        raise InputError("no machine function found (expected a `---` document with `name:`)", file, 1, 1)
    return Module(file=file, ir_text=ir_text, functions=functions, ir_blank_lines=ir_blank)


def _trailing_blank_lines(lines: list[str]) -> int:
    n = 0
    for ln in reversed(lines):
        if ln.strip():
            break
        n += 1
    return n


def _split_documents(lines: list[str], file: str) -> list[tuple[int, list[str]]]:
    """Split the stream at `---` and `...`; return (index of first content line, lines)."""
    docs: list[tuple[int, list[str]]] = []
    cur_start: int | None = None
    for i, ln in enumerate(lines):
        if ln.startswith("---") and (len(ln) == 3 or ln[3] in " \t|"):
            if cur_start is not None:
                docs.append((cur_start, lines[cur_start:i]))
            cur_start = i + 1
        elif ln.startswith("...") and ln.rstrip() == "...":
            if cur_start is None:
                raise InputError("`...` without an open document", file, i + 1, 1)
            docs.append((cur_start, lines[cur_start:i]))
            cur_start = None
        elif cur_start is None and ln.strip() and not ln.lstrip().startswith("#"):
            raise InputError("text outside a YAML document (expected `---`)", file, i + 1, 1)
    if cur_start is not None:
        # llc closes every document with `...`; a stream that stops inside one was cut short,
        # and what is left of it may still parse as a (different, shorter) program.
        last = max((i for i, ln in enumerate(lines) if ln.strip()), default=0)
        raise InputError("file ends inside a YAML document without its closing `...` (truncated file?)",
                         file, last + 1, len(lines[last]) + 1)
    return docs


def _dedent_block(body: list[str]) -> list[str]:
    indent = min((len(ln) - len(ln.lstrip(" ")) for ln in body if ln.strip()), default=0)
    return [ln[indent:] for ln in body]


def _parse_function(
    lines: list[str], start: int, count: int, file: str, ir_text: str | None
) -> Function:
    end = start + count
    body_at, body_lines_end = _body_span(lines, start, end)
    header_end = body_at if body_at is not None else end
    header_text = "\n".join(lines[start:header_end])
    trailer_text = "\n".join(lines[body_lines_end:end])
    header = _header(lines, start, header_end, body_lines_end, end, file)
    name = str(header["name"])
    registers = parse_registers(header.get("registers"), lines, start, header_end, file)
    liveins = _liveins(header, lines, start, header_end, file)
    blocks: list[Block] = []
    if body_at is not None:
        blocks = BodyParser(lines, body_at + 1, body_lines_end, file).parse()
    if not blocks:
        at = body_at + 1 if body_at is not None else start + 1
        raise InputError(f"function '{name}' has no basic blocks (empty or truncated `body:`)", file, at, 1)
    attrs, convention = ir_function_attributes(ir_text, name)
    return Function(
        name=name,
        file=file,
        line=start,
        header=header,
        header_text=header_text,
        registers=registers,
        liveins=liveins,
        blocks=blocks,
        ir_attributes=attrs,
        calling_convention=convention,
        triple=ir_triple(ir_text),
        body_line=(body_at + 1) if body_at is not None else 0,
        body_blank_lines=_trailing_blank_lines(lines[body_at + 1:body_lines_end]) if body_at is not None else 0,
        trailer_text=trailer_text,
    )


def _body_span(lines: list[str], start: int, end: int) -> tuple[int | None, int]:
    """The line of `body:` in a function's document (None without one) and the end of its
    block scalar: keys written after it (hand-written files) belong to the header."""
    body_at: int | None = None
    for i in range(start, end):
        if not lines[i].startswith("body:"):
            continue
        if re.match(r"body:\s*[|>]", lines[i]):
            body_at = i
            break
        if re.match(r"body:\s*(''|\"\")?\s*$", lines[i]):
            body_at = i
            break
    body_lines_end = end
    if body_at is not None:
        for i in range(body_at + 1, end):
            ln = lines[i]
            if ln.strip() and not ln.startswith((" ", "\t")):
                body_lines_end = i
                break
    return body_at, body_lines_end


def _header(lines: list[str], start: int, header_end: int, body_lines_end: int, end: int, file: str) -> dict[Any, Any]:
    """The YAML keys of a function (before `body:` and after its block scalar), `registers:`
    read by the fast path when llc wrote it; its keys of the types the analyses read."""
    header_text = "\n".join(lines[start:header_end])
    trailer_text = "\n".join(lines[body_lines_end:end])
    fast = registers_as_llc_writes_them(lines, start, header_end)
    yaml_text = header_text
    if fast is not None:
        # The entries are read already: YAML gets blank lines in their place (line numbers kept).
        first, count, _ = fast
        yaml_text = "\n".join(lines[start:first] + [""] * count + lines[first + count:header_end])
    header = load_yaml(yaml_text + "\n" + trailer_text, file, start,
                       list(range(start, header_end)) + list(range(body_lines_end, end)))
    if not isinstance(header, dict) or "name" not in header:
        raise InputError("machine function document without `name:`", file, start + 1, 1)
    if fast is not None and header.get("registers") is None:
        header["registers"] = fast[2]
    for key, kind in HEADER_KEY_TYPES.items():
        value = header.get(key)
        if value is not None and not isinstance(value, kind):
            what = "a list" if kind is list else "a mapping"
            raise InputError(f"`{key}:` must be {what}", file, find_line(lines, start, header_end, key + ":"), 1)
    return header


def _liveins(header: dict[Any, Any], lines: list[str], start: int, header_end: int,
             file: str) -> list[tuple[str, str | None]]:
    """The function's `liveins:`: (physical register, virtual register or None)."""
    liveins: list[tuple[str, str | None]] = []
    for entry in header.get("liveins") or []:
        if not isinstance(entry, dict) or "reg" not in entry:
            raise InputError("malformed `liveins:` entry", file, find_line(lines, start, header_end, "liveins:"), 1)
        reg = str(entry["reg"]).lstrip("$")
        try:
            parse_physreg(reg)
        except TargetError as e:
            line, col = find_text(lines, start, header_end, str(entry["reg"]))
            raise InputError(str(e), file, line, col) from None
        vr = entry.get("virtual-reg") or None
        liveins.append((reg, str(vr) if vr else None))
    return liveins
