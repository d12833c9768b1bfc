"""Read MIR files as llc 13 to 22 writes them.

A MIR file is a YAML stream: an optional first document holding the LLVM IR module as a
block scalar, then one document per machine function. The YAML keys of a function (registers,
liveins, frameInfo, stack, machineFunctionInfo, ...) are loaded with PyYAML; the `body:`
block scalar is parsed here line by line so that every block, instruction and operand keeps
its exact line and column (llvm/docs/MIRLangRef.rst describes the body language).

Parsers come in pairs as in xDSL: `_parse_optional_x` returns None when the construct is
absent, the callers raise an InputError (file, line, column) when it was required.

The module is longer than most because it is the whole grammar of the body language, and its
fast paths for the shapes llc writes (a `registers:` list, document ends) sit beside the general
rules they shortcut: one reads them together to see that they agree.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import yaml

from verilocc.errors import InputError, TargetError
from verilocc.mir.model import (
    INSTR_FLAGS,
    REG_FLAGS,
    Block,
    Function,
    Instruction,
    Module,
    Operand,
    VRegDecl,
)
from verilocc.target import parse_physreg
from verilocc.target.opcode_names import is_known_opcode
from verilocc.target.opcodes import tie_constraints

# Larger inputs are refused with one line instead of exhausting memory.
MAX_FILE_BYTES = 256 * 1024 * 1024

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_BLOCK_HEADER = re.compile(r"bb\.(\d+)(?:\.([^\s:(]+))?\s*(?:\((.*)\))?\s*:\s*$")
_OPCODE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_REG = re.compile(
    r"(?P<reg>%\d+|%[A-Za-z_][\w$-]*|\$[A-Za-z_][\w]*|_)"
    r"(?:\.(?P<sub>[A-Za-z_]\w*))?"
    r"(?::(?P<cls>[A-Za-z_]\w*))?"
    r"(?P<rest>(?:\([^()]*\))*)$"
)
_PAREN_GROUP = re.compile(r"\(([^()]*)\)")
_INT = re.compile(r"-?\d+$")
_LIVEIN = re.compile(r"\$([A-Za-z_]\w*)(?::(0x[0-9A-Fa-f]+|\d+))?$")
_MBB_REF = re.compile(r"%bb\.([0-9]+)(?:\.[^\s(),]+)?$")
_SUCCESSOR = re.compile(r"%bb\.(\d+)(?:\.[^\s(]+)?(?:\(([^()]*)\))?$")
_TRAILER_KEYWORDS = (
    "debug-location",
    "pcsections",
    "mmra",
    "heap-alloc-marker",
    "pre-instr-symbol",
    "post-instr-symbol",
    "debug-instr-number",
    "cfi-type",
)
_FP_TYPES = ("half", "bfloat", "float", "double", "x86_fp80", "fp128", "ppc_fp128")


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
                             _find_line(lines, start, start + len(body), "name:"), 1)
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


_IR_FUNC_ATTR = re.compile(r"^\s*define\b.*@\"?([^\s\"(]+)\"?\(.*\)\s*(.*)\{\s*$")
_IR_ATTR_GROUP = re.compile(r"^\s*attributes #(\d+) = \{(.*)\}\s*$")


_IR_CALLING_CONVENTION = re.compile(r"^\s*define\b[^@]*?\b(amdgpu_\w+|spir_kernel|spir_func|fastcc|coldcc|ccc)\b")


_IR_TRIPLE = re.compile(r'^\s*target triple = "([^"]*)"', re.M)


def _ir_triple(ir_text: str | None) -> str:
    """The IR module's `target triple` ("" when there is none)."""
    m = _IR_TRIPLE.search(ir_text or "")
    return m.group(1) if m else ""


def _ir_function_attributes(ir_text: str | None, func_name: str) -> tuple[dict[str, str], str]:
    """The string attributes (`"target-cpu"="gfx90a"`, ...) of a function in the IR module,
    and its calling convention (`amdgpu_kernel`, `amdgpu_ps`...; "" for the default one)."""
    if not ir_text:
        return {}, ""
    groups: dict[str, str] = {}
    group_of_func: str | None = None
    convention = ""
    for ln in ir_text.split("\n"):
        m = _IR_ATTR_GROUP.match(ln)
        if m:
            groups[m.group(1)] = m.group(2)
            continue
        m = _IR_FUNC_ATTR.match(ln)
        if m and m.group(1) == func_name:
            g = re.search(r"#(\d+)", m.group(2))
            group_of_func = g.group(1) if g else None
            cc = _IR_CALLING_CONVENTION.match(ln)
            convention = cc.group(1) if cc else ""
    attrs = groups.get(group_of_func or "", "")
    if not attrs:
        # No attribute group on the function: fall back to the first group that names a cpu.
        attrs = next((a for a in groups.values() if '"target-cpu"' in a), "")
    return dict(re.findall(r'"([^"]+)"(?:="([^"]*)")?', attrs)), convention


def _parse_function(
    lines: list[str], start: int, count: int, file: str, ir_text: str | None
) -> Function:
    end = start + count
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
    header_end = body_at if body_at is not None else end
    # Keys written after the body block scalar (hand-written files) belong to the header.
    body_lines_end = end
    if body_at is not None:
        for i in range(body_at + 1, end):
            ln = lines[i]
            if ln.strip() and not ln.startswith((" ", "\t")):
                body_lines_end = i
                break
    header_text = "\n".join(lines[start:header_end])
    trailer_text = "\n".join(lines[body_lines_end:end])
    fast = _registers_as_llc_writes_them(lines, start, header_end)
    yaml_text = header_text
    if fast is not None:
        # The entries are read already: YAML gets blank lines in their place (line numbers kept).
        first, count, _ = fast
        yaml_text = "\n".join(lines[start:first] + [""] * count + lines[first + count:header_end])
    header = _load_yaml(yaml_text + "\n" + trailer_text, file, start,
                        list(range(start, header_end)) + list(range(body_lines_end, end)))
    if not isinstance(header, dict) or "name" not in header:
        raise InputError("machine function document without `name:`", file, start + 1, 1)
    if fast is not None and header.get("registers") is None:
        header["registers"] = fast[2]
    name = str(header["name"])
    for key, kind in _HEADER_KEY_TYPES.items():
        value = header.get(key)
        if value is not None and not isinstance(value, kind):
            what = "a list" if kind is list else "a mapping"
            raise InputError(f"`{key}:` must be {what}", file, _find_line(lines, start, header_end, key + ":"), 1)
    registers = _parse_registers(header.get("registers"), lines, start, header_end, file)
    liveins: list[tuple[str, str | None]] = []
    for entry in header.get("liveins") or []:
        if not isinstance(entry, dict) or "reg" not in entry:
            raise InputError("malformed `liveins:` entry", file, _find_line(lines, start, header_end, "liveins:"), 1)
        reg = str(entry["reg"]).lstrip("$")
        try:
            parse_physreg(reg)
        except TargetError as e:
            line, col = _find_text(lines, start, header_end, str(entry["reg"]))
            raise InputError(str(e), file, line, col) from None
        vr = entry.get("virtual-reg") or None
        liveins.append((reg, str(vr) if vr else None))
    blocks: list[Block] = []
    if body_at is not None:
        blocks = _BodyParser(lines, body_at + 1, body_lines_end, file).parse()
    if not blocks:
        at = body_at + 1 if body_at is not None else start + 1
        raise InputError(f"function '{name}' has no basic blocks (empty or truncated `body:`)", file, at, 1)
    attrs, convention = _ir_function_attributes(ir_text, name)
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
        triple=_ir_triple(ir_text),
        body_line=(body_at + 1) if body_at is not None else 0,
        body_blank_lines=_trailing_blank_lines(lines[body_at + 1:body_lines_end]) if body_at is not None else 0,
        trailer_text=trailer_text,
    )


# One `registers:` entry as llc writes it; the YAML it is, read without a YAML parser.
_REGISTER_ENTRY = re.compile(
    r"  - \{ id: (0|[1-9][0-9]*), class: ([A-Za-z_][A-Za-z0-9_]*), preferred-register: '([ -&(-~]*)'(, flags: \[ *\])? \}")
# Plain scalars that YAML 1.1 (PyYAML) reads as something else than a string.
_YAML_WORDS = frozenset(
    w for word in ("yes", "no", "true", "false", "on", "off", "null") for w in (word, word.capitalize(), word.upper()))


def _registers_as_llc_writes_them(lines: list[str], start: int, end: int) -> tuple[int, int, list[Any]] | None:
    """(first line index, number of lines, entries) of the `registers:` list when every entry
    is one line as llc writes it (`  - { id: 3, class: vgpr_32, preferred-register: '' }`,
    maybe with `, flags: [  ]`); the entries are what YAML makes of them. None otherwise (no
    such list, or any other shape): then YAML reads it. The list is the longest part of a
    header, and reading it without YAML saves most of a header's reading time."""
    keys = [i for i in range(start, end) if lines[i].startswith("registers:")]
    if len(keys) != 1 or lines[keys[0]].rstrip() != "registers:":
        return None
    first = keys[0] + 1
    out: list[Any] = []
    i = first
    while i < end and lines[i].startswith(" "):
        m = _REGISTER_ENTRY.fullmatch(lines[i])
        if m is None or m.group(2) in _YAML_WORDS:
            return None
        entry: dict[str, Any] = {"id": int(m.group(1)), "class": m.group(2), "preferred-register": m.group(3)}
        if m.group(4):
            entry["flags"] = []
        out.append(entry)
        i += 1
    return (first, i - first, out) if out else None


# Header keys the analyses read, and the YAML type they must have.
_HEADER_KEY_TYPES: dict[str, type] = {
    "liveins": list,
    "frameInfo": dict,
    "fixedStack": list,
    "stack": list,
    "machineFunctionInfo": dict,
}


def _find_text(lines: list[str], start: int, end: int, text: str) -> tuple[int, int]:
    """(line, column) of the first occurrence of `text` in lines[start:end], else the start."""
    for i in range(start, end):
        at = lines[i].find(text) if text else -1
        if at >= 0:
            return i + 1, at + 1
    return start + 1, 1


def _find_line(lines: list[str], start: int, end: int, key: str) -> int:
    for i in range(start, end):
        if lines[i].startswith(key):
            return i + 1
    return start + 1


# Deeper YAML crashes libyaml's recursive composer (a segmentation fault near 25,000 levels)
# and Python's recursion limit later on; llc writes at most 4 levels.
_MAX_YAML_DEPTH = 100


def _load_yaml(text: str, file: str, first_line_index: int, source_lines: list[int] | None = None) -> Any:
    """Load a YAML header; `source_lines[k]` is the file line index of the text's line k."""

    def place(k: int) -> int:
        if source_lines is None:
            return first_line_index + k + 1
        return (source_lines[k] if k < len(source_lines) else (source_lines[-1] + 1 if source_lines else first_line_index)) + 1

    try:
        # libyaml's event parser keeps its own stack: measure the depth before composing. Keys
        # of each mapping are seen here too: YAML reads a key given twice as its last value,
        # llc's reader refuses it.
        depth = 0
        mappings: list[tuple[set[str], list[bool]] | None] = []  # per open collection: keys, expecting a key
        for ev in yaml.parse(text, Loader=_YAML_LOADER):
            if isinstance(ev, yaml.NodeEvent) and mappings and (top := mappings[-1]) is not None:
                keys, expecting = top
                if expecting[0] and isinstance(ev, yaml.ScalarEvent):
                    if ev.value in keys:
                        mark = ev.start_mark
                        raise InputError(f"duplicated mapping key '{ev.value}'", file, place(mark.line), mark.column + 1)
                    keys.add(ev.value)
                expecting[0] = not expecting[0]
            if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                mappings.append((set(), [True]) if isinstance(ev, yaml.MappingStartEvent) else None)
                depth += 1
                if depth > _MAX_YAML_DEPTH:
                    mark = ev.start_mark
                    raise InputError(f"YAML nests more than {_MAX_YAML_DEPTH} levels deep", file,
                                     place(mark.line), mark.column + 1)
            elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                mappings.pop()
                depth -= 1
            elif isinstance(ev, yaml.AliasEvent):
                # llc never writes them, and they expand to arbitrarily large values.
                mark = ev.start_mark
                raise InputError("YAML aliases are not supported in MIR", file, place(mark.line), mark.column + 1)
        return yaml.load(text, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = place(mark.line) if mark else first_line_index + 1
        col = (mark.column + 1) if mark else 1
        raise InputError(f"malformed YAML: {e.problem or e.context or 'syntax error'}", file, line, col) from None
    except yaml.reader.ReaderError as e:
        k = text.count("\n", 0, e.position)
        col = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        what = f"character #x{e.character:04x}" if isinstance(e.character, int) else "byte"
        raise InputError(f"malformed YAML: unacceptable {what}: {e.reason}", file, place(k), col) from None
    except yaml.YAMLError as e:
        msg = " ".join(str(e).split())
        raise InputError(f"malformed YAML: {msg}", file, first_line_index + 1, 1) from None
    except RecursionError:
        raise InputError("YAML nests too deeply", file, first_line_index + 1, 1) from None


def _parse_registers(
    entries: Any, lines: list[str], start: int, end: int, file: str
) -> dict[int | str, VRegDecl]:
    out: dict[int | str, VRegDecl] = {}
    if entries in (None, []):
        return out
    reg_line = _find_line(lines, start, end, "registers:")
    if not isinstance(entries, list):
        raise InputError("`registers:` must be a list", file, reg_line, 1)
    # Map each id to its source line for error messages (entries may wrap over lines).
    id_lines: dict[str, int] = {}
    for i in range(reg_line, end):
        m = re.search(r"\{\s*id:\s*([\w]+)", lines[i])
        if m:
            id_lines.setdefault(m.group(1), i + 1)
    for entry in entries:
        if not isinstance(entry, dict) or "id" not in entry:
            raise InputError("malformed `registers:` entry (expected `{ id: N, class: ... }`)", file, reg_line, 1)
        rid = entry["id"]
        key: int | str = rid if isinstance(rid, int) else str(rid)
        line = id_lines.get(str(rid), reg_line)
        if key in out:
            raise InputError(f"virtual register %{key} declared twice", file, line, 1)
        cls = entry.get("class")
        pref = entry.get("preferred-register") or None
        flags = entry.get("flags") or []
        out[key] = VRegDecl(
            id=key,
            reg_class=str(cls) if cls not in (None, "") else None,
            preferred=str(pref).lstrip("$") if pref else None,
            flags=tuple(str(f) for f in flags) if isinstance(flags, list) else (str(flags),),
            line=line,
        )
    return out


def _strip_comment(s: str) -> str:
    """Drop a `;` comment, ignoring semicolons inside quoted strings."""
    if ";" not in s:
        return s
    in_str = False
    for i, ch in enumerate(s):
        if ch == '"':
            in_str = not in_str
        elif ch == ";" and not in_str:
            return s[:i]
    return s


# What `_split_top` stops at: escapes, quotes and brackets, and each separator it splits at.
_NESTING = re.compile(r'[\\"()<>{}\[\]]')
_SPLIT_STOPS = {sep: re.compile(r'[\\"()<>{}\[\]]|' + re.escape(sep)) for sep in (",", " :: ", " = ")}


def _split_top(s: str, sep: str, base_col: int, file: str, line: int) -> list[tuple[str, int]]:
    """Split at `sep` outside parentheses, angle brackets, braces and strings.

    Returns (piece, column of the piece's first non-blank character) pairs. Only the
    characters that matter are visited (`_SPLIT_STOPS`): everything else is plain text.
    """
    out: list[tuple[str, int]] = []
    if _NESTING.search(s) is None:  # no quotes or brackets: every separator splits
        at = base_col
        for text in s.split(sep):
            out.append((text.strip(), at + len(text) - len(text.lstrip())))
            at += len(text) + len(sep)
        return out
    depth = 0
    in_str = False
    piece_start = 0
    opens: list[int] = []
    stops = _SPLIT_STOPS[sep].search
    pos = 0
    while (m := stops(s, pos)) is not None:
        i = m.start()
        ch = s[i]
        pos = i + 1
        if in_str:
            if ch == "\\":
                pos = i + 2  # the escaped character is text
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "(<{[":
            depth += 1
            opens.append(i)
        elif ch in ")>}]":
            if depth == 0:
                raise InputError(f"unbalanced `{ch}`", file, line, base_col + i)
            depth -= 1
            opens.pop()
        elif ch != "\\" and depth == 0:  # the separator
            out.append(_piece(s, piece_start, i, base_col))
            pos = piece_start = i + len(sep)
    if in_str:
        raise InputError("unterminated string", file, line, base_col + s.rfind('"'))
    if depth:
        raise InputError("unclosed bracket", file, line, base_col + opens[-1])
    out.append(_piece(s, piece_start, len(s), base_col))
    return out


def _piece(s: str, a: int, b: int, base_col: int) -> tuple[str, int]:
    text = s[a:b]
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    return stripped, base_col + a + lead


def _split_memory(s: str, base_col: int, file: str, line: int) -> list[tuple[str, int]]:
    """`_split_top(s, " :: ", ...)`, the same pieces and errors, without scanning twice what
    the callers scan again: with no ` :: ` the piece is the text (the split at ` = ` that
    follows checks the same brackets and strings and raises the same first error); with one,
    after text that has no brackets, quotes or escapes, it is a top-level separator (the
    memory operands are scanned when split at `,`)."""
    at = s.find(" :: ")
    if at < 0:
        text = s.strip()
        return [(text, base_col + len(s) - len(s.lstrip()))] if text or not s else [(text, base_col + len(s))]
    if s.find(" :: ", at + 4) < 0 and _NESTING.search(s, 0, at) is None:
        return [_piece(s, 0, at, base_col), _piece(s, at + 4, len(s), base_col)]
    return _split_top(s, " :: ", base_col, file, line)


class _BodyParser:
    def __init__(self, lines: list[str], first: int, end: int, file: str) -> None:
        self.lines = lines
        self.first = first
        self.end = end
        self.file = file

    def error(self, msg: str, line: int, col: int) -> InputError:
        return InputError(msg, self.file, line, col)

    def parse(self) -> list[Block]:
        blocks: list[Block] = []
        cur: Block | None = None
        in_bundle = False
        bundle_line = 0
        seen_instr = False
        numbers: set[int] = set()
        for idx in range(self.first, self.end):
            raw = self.lines[idx]
            lineno = idx + 1
            text = _strip_comment(raw).rstrip()
            stripped = text.strip()
            if not stripped:
                continue
            col = len(text) - len(text.lstrip()) + 1
            m = _BLOCK_HEADER.match(stripped)
            if m and stripped.startswith("bb."):
                if in_bundle:
                    raise self.error("bundle not closed with `}` before the next block", bundle_line, 1)
                num = int(m.group(1))
                if num in numbers:
                    raise self.error(f"block bb.{num} defined twice", lineno, col)
                numbers.add(num)
                attrs = tuple(p for p, _ in _split_top(m.group(3), ",", col, self.file, lineno)) if m.group(3) else ()
                cur = Block(number=num, line=lineno, name=m.group(2), attributes=attrs)
                blocks.append(cur)
                seen_instr = False
                continue
            if stripped.startswith("bb.") and stripped.endswith(":"):
                raise self.error("malformed block header", lineno, col)
            if cur is None:
                raise self.error("instruction outside a basic block (expected `bb.N:`)", lineno, col)
            if stripped.startswith("successors:") and not seen_instr:
                cur.successors = self._parse_successors(stripped, col, lineno)
                cur.successors_written = True
                continue
            if stripped.startswith("liveins:") and not seen_instr:
                cur.liveins.extend(self._parse_block_liveins(stripped, col, lineno))
                continue
            if stripped == "}":
                if not in_bundle:
                    raise self.error("`}` without an open bundle", lineno, col)
                in_bundle = False
                continue
            opens = stripped.endswith("{")
            body = stripped[:-1].rstrip() if opens else stripped
            if opens and in_bundle:
                raise self.error("nested bundle", lineno, col)
            ins = self.parse_instruction(body, col, lineno)
            ins.bundled = in_bundle
            ins.opens_bundle = opens
            cur.instructions.append(ins)
            seen_instr = True
            if opens:
                in_bundle = True
                bundle_line = lineno
        if in_bundle:
            raise self.error("bundle not closed with `}` (file truncated?)", bundle_line, 1)
        for b in blocks:
            for succ, _ in b.successors:
                if succ not in numbers:
                    raise self.error(f"successor %bb.{succ} is not a block of this function", b.line, 1)
            for ins in b.instructions:
                for op in ins.operands:
                    if op.kind != "mbb":
                        continue
                    ref = _MBB_REF.match(op.text)
                    if ref is None:
                        raise self.error(f"malformed block reference `{op.text}` (expected %bb.N)", op.line, op.column)
                    if int(ref.group(1)) not in numbers:
                        raise self.error(f"use of undefined block %bb.{ref.group(1)}", op.line, op.column)
        return blocks

    def _parse_successors(self, s: str, col: int, lineno: int) -> list[tuple[int, str | None]]:
        rest = s[len("successors:"):]
        out: list[tuple[int, str | None]] = []
        if not rest.strip():
            return out
        for piece, pcol in _split_top(rest, ",", col + len("successors:"), self.file, lineno):
            m = _SUCCESSOR.match(piece)
            if not m:
                raise self.error(f"malformed successor `{piece}` (expected %bb.N(weight))", lineno, pcol)
            out.append((int(m.group(1)), m.group(2)))
        return out

    def _parse_block_liveins(self, s: str, col: int, lineno: int) -> list[tuple[str, int | None]]:
        rest = s[len("liveins:"):]
        out: list[tuple[str, int | None]] = []
        if not rest.strip():
            return out
        for piece, pcol in _split_top(rest, ",", col + len("liveins:"), self.file, lineno):
            m = _LIVEIN.match(piece)
            if not m:
                raise self.error(f"malformed block live-in `{piece}` (expected $reg[:lanemask])", lineno, pcol)
            try:
                parse_physreg(m.group(1).lower())
            except TargetError as e:
                raise self.error(str(e), lineno, pcol) from None
            mask = int(m.group(2), 16 if m.group(2)[:2] in ("0x", "0X") else 10) if m.group(2) else None
            out.append((m.group(1).lower(), mask))
        return out

    def parse_instruction(self, s: str, col: int, lineno: int) -> Instruction:
        head, mem, mem_col = s, None, 0
        parts = _split_memory(s, col, self.file, lineno)
        if len(parts) > 2:
            raise self.error("more than one `::` in an instruction", lineno, parts[2][1])
        if len(parts) == 2:
            head, mem, mem_col = parts[0][0], parts[1][0], parts[1][1]
            if not mem:
                raise self.error("expected memory operands after `::`", lineno, mem_col)
            for piece, pcol in _split_top(mem, ",", mem_col, self.file, lineno):
                if not (piece.startswith("(") and piece.endswith(")")):
                    raise self.error(f"malformed memory operand `{piece}`", lineno, pcol)
        eq = _split_top(head, " = ", col, self.file, lineno)
        defs_text: list[tuple[str, int]] = []
        if len(eq) > 2:
            raise self.error("more than one `=` in an instruction", lineno, eq[2][1])
        if len(eq) == 2:
            defs_text = _split_top(eq[0][0], ",", eq[0][1], self.file, lineno)
            rest, rest_col = eq[1]
        else:
            rest, rest_col = eq[0]
        # Instruction flags, then the opcode, then the operand list.
        words = rest.split(None, 1) if rest else []
        flags: list[str] = []
        pos = rest_col
        consumed = 0
        while words and words[0] in INSTR_FLAGS:
            flags.append(words[0])
            consumed = rest.index(words[0], consumed) + len(words[0])
            words = rest[consumed:].split(None, 1)
        if not words:
            raise self.error("expected an opcode", lineno, rest_col + consumed)
        opcode = words[0]
        if opcode.endswith(","):
            opcode = opcode[:-1]
        op_at = rest.index(opcode, consumed)
        if not _OPCODE.match(opcode):
            raise self.error(f"expected an opcode, found `{opcode}`", lineno, rest_col + op_at)
        if not is_known_opcode(opcode):
            raise self.error(f"unknown machine instruction name '{opcode}'", lineno, rest_col + op_at)
        pos = rest_col + op_at
        operands: list[Operand] = []
        for text, ocol in defs_text:
            if not text:
                raise self.error("expected a register before `,`", lineno, ocol)
            op = self.parse_operand(text, ocol, lineno)
            if op.kind != "reg":
                raise self.error(f"expected a register definition, found `{text}`", lineno, ocol)
            if not op.is_def:
                op.flags = op.flags | {"def"}
            operands.append(op)
        trailer: list[str] = []
        after = rest[op_at + len(opcode):]
        if after.strip():
            if after.startswith(","):
                raise self.error("unexpected `,` after the opcode", lineno, pos + len(opcode))
            for text, ocol in _split_top(after, ",", pos + len(opcode), self.file, lineno):
                if not text:
                    raise self.error("expected an operand", lineno, ocol)
                if text.split(None, 1)[0] in _TRAILER_KEYWORDS:
                    trailer.append(text)
                    continue
                if trailer:
                    raise self.error(f"operand `{text}` after `{trailer[-1].split()[0]}`", lineno, ocol)
                operands.append(self.parse_operand(text, ocol, lineno))
        ins = Instruction(
            opcode=opcode,
            operands=operands,
            line=lineno,
            column=pos,
            instr_flags=tuple(flags),
            mem=mem,
            trailer=tuple(trailer),
        )
        self._check_ties(ins)
        self._tie_as_defined(ins)
        return ins

    def _check_ties(self, ins: Instruction) -> None:
        for op in ins.operands:
            if op.tied_def is None:
                continue
            if op.is_def:
                raise self.error("`tied-def` on a def operand (it belongs on the use)", op.line, op.column)
            if op.tied_def >= len(ins.operands) or not ins.operands[op.tied_def].is_def:
                raise self.error(f"`tied-def {op.tied_def}` does not name a def operand", op.line, op.column)

    def _tie_as_defined(self, ins: Instruction) -> None:
        """Tie the uses the opcode's definition ties, as llc's MIR parser does
        (`MachineInstr::addOperand`): a register use at a tied position gets its def, marked as
        implied so that the text prints back as it was. A `(tied-def N)` in the text that
        contradicts the definition is refused, as llc's machine verifier refuses it."""
        ties = tie_constraints(ins.opcode)
        if not ties:
            return
        explicit = [i for i, op in enumerate(ins.operands) if not (op.kind == "reg" and op.is_implicit)]
        for tie in ties:
            if tie.use >= len(explicit) or tie.def_ >= len(explicit):
                continue  # a shorter operand list than the definition's (llc ties what is there)
            d, u = explicit[tie.def_], explicit[tie.use]
            dop, uop = ins.operands[d], ins.operands[u]
            if uop.kind != "reg" or uop.is_def or dop.kind != "reg" or not dop.is_def:
                continue  # llc ties register uses only; its verifier reports the rest
            why = f"`{ins.opcode}` ties operand {u} to def {d} by its definition (`{tie.constraint}`)"
            if uop.tied_def is not None and uop.tied_def != d:
                raise self.error(f"{why}, but the text ties it to def {uop.tied_def}: llc's machine verifier "
                                 "says \"Tied def doesn't match MCInstrDesc\"", uop.line, uop.column)
            other = next((op for op in ins.operands if op is not uop and op.tied_def == d), None)
            if other is not None:
                raise self.error(f"{why}, but the text ties def {d} to this operand: llc's machine verifier says "
                                 "\"Explicit operand should not be tied\"", other.line, other.column)
            if uop.tied_def is None:
                uop.tied_def = d
                uop.tie_implied = True

    def parse_operand(self, text: str, col: int, lineno: int) -> Operand:
        """One operand; the same text always gives the same parts (only line and column
        differ), so the parts of each text read without error are remembered."""
        got = _OPERANDS.get(text)
        if got is not None:
            off, kind, rest, vreg, phys, subreg, cls, llt, flags, tied = got
            return Operand(kind, rest, lineno, col + off, vreg, phys, subreg, cls, llt, flags, tied)
        op = self._parse_operand(text, col, lineno)
        if len(_OPERANDS) > 1 << 16:
            _OPERANDS.clear()
        _OPERANDS[text] = (op.column - col, op.kind, op.text, op.vreg, op.phys, op.subreg, op.reg_class, op.llt,
                           op.flags, op.tied_def)
        return op

    def _parse_operand(self, text: str, col: int, lineno: int) -> Operand:
        flags: set[str] = set()
        rest = text
        off = 0
        while True:
            word = rest.split(None, 1)[0] if rest else ""
            if word in REG_FLAGS:
                flags.add(word)
                nxt = rest[len(word):]
                off += len(word) + (len(nxt) - len(nxt.lstrip()))
                rest = nxt.lstrip()
                continue
            break
        if not rest:
            raise self.error("expected a register after operand flags", lineno, col + off)
        at = col + off
        first = rest[0]
        if first in "%$_" and not _is_special_percent(rest):
            return self._parse_register(rest, frozenset(flags), at, lineno)
        if flags:
            raise self.error(f"register flags on a non-register operand `{rest}`", lineno, col)
        return Operand(kind=_classify(rest), text=rest, line=lineno, column=at)

    def _parse_register(self, rest: str, flags: frozenset[str], at: int, lineno: int) -> Operand:
        m = _REG.match(rest)
        if not m:
            raise self.error(f"malformed register operand `{rest}`", lineno, at)
        reg = m.group("reg")
        vreg: int | str | None = None
        phys: str | None = None
        if reg.startswith("%"):
            name = reg[1:]
            vreg = int(name) if name.isdigit() else name
        elif reg.startswith("$"):
            name = reg[1:].lower()
            if name != "noreg":
                phys = name
        tied: int | None = None
        llt: str | None = None
        for g in _PAREN_GROUP.finditer(m.group("rest")):
            inner = g.group(1).strip()
            if inner.startswith("tied-def"):
                num = inner[len("tied-def"):].strip()
                if not (num.isascii() and num.isdigit()):
                    raise self.error(f"malformed `({inner})`", lineno, at + m.start("rest") + g.start())
                tied = int(num)
            else:
                llt = inner
        if "def" in flags and "implicit-def" in flags:
            raise self.error("operand is both `def` and `implicit-def`", lineno, at)
        return Operand(
            kind="reg",
            text=rest,
            line=lineno,
            column=at,
            vreg=vreg,
            phys=phys,
            subreg=m.group("sub"),
            reg_class=m.group("cls"),
            llt=llt,
            flags=flags,
            tied_def=tied,
        )


# Operand text -> (column offset, and the other fields of `Operand` in order): see `parse_operand`.
_OPERANDS: dict[str, tuple[Any, ...]] = {}

_SPECIAL_PERCENT = ("%bb.", "%stack.", "%fixed-stack.", "%subreg.", "%ir.", "%ir-block.", "%const.", "%jump-table.")


def _is_special_percent(s: str) -> bool:
    return s.startswith(_SPECIAL_PERCENT)


def _classify(s: str) -> str:
    if _INT.match(s):
        return "imm"
    if s.startswith("%bb."):
        return "mbb"
    if s.startswith("%stack."):
        return "stack"
    if s.startswith("%fixed-stack."):
        return "fixed-stack"
    if s.startswith("%subreg."):
        return "subreg"
    if s.startswith(("@", "target-flags(")):
        return "global"
    if s.startswith("&"):
        return "external"
    if s.startswith(_FP_TYPES) and " " in s:
        return "fpimm"
    if re.match(r"i\d+ ", s):
        return "cimm"
    if s.startswith(("csr_", "CustomRegMask(", "regmask")):
        return "regmask"
    if s.startswith("<mcsymbol"):
        return "mcsymbol"
    if s.startswith("intrinsic("):
        return "intrinsic"
    if s.startswith(("intpred(", "floatpred(")):
        return "predicate"
    return "other"


def parse_instruction(text: str, file: str = "<input>", line: int = 0) -> Instruction:
    """One instruction written in MIR's body syntax (what a pass that inserts code writes)."""
    return _BodyParser([], 0, 0, file).parse_instruction(text, 1, line)
