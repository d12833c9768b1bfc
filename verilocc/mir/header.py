"""The header of a machine function in a MIR file: its YAML keys (registers, liveins,
frameInfo, stack, machineFunctionInfo, ...) loaded with PyYAML, with a fast path for the
`registers:` list as llc writes it beside the general rule it shortcuts, and what the function's
IR says of it (attributes, calling convention, triple).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from verilocc.errors import InputError
from verilocc.mir.model import VRegDecl

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_IR_FUNC_ATTR = re.compile(r"^\s*define\b.*@\"?([^\s\"(]+)\"?\(.*\)\s*(.*)\{\s*$")
_IR_ATTR_GROUP = re.compile(r"^\s*attributes #(\d+) = \{(.*)\}\s*$")


_IR_CALLING_CONVENTION = re.compile(r"^\s*define\b[^@]*?\b(amdgpu_\w+|spir_kernel|spir_func|fastcc|coldcc|ccc)\b")


_IR_TRIPLE = re.compile(r'^\s*target triple = "([^"]*)"', re.M)


def ir_triple(ir_text: str | None) -> str:
    """The IR module's `target triple` ("" when there is none)."""
    m = _IR_TRIPLE.search(ir_text or "")
    return m.group(1) if m else ""


def ir_function_attributes(ir_text: str | None, func_name: str) -> tuple[dict[str, str], str]:
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




# One `registers:` entry as llc writes it; the YAML it is, read without a YAML parser.
_REGISTER_ENTRY = re.compile(
    r"  - \{ id: (0|[1-9][0-9]*), class: ([A-Za-z_][A-Za-z0-9_]*), preferred-register: '([ -&(-~]*)'(, flags: \[ *\])? \}")
# Plain scalars that YAML 1.1 (PyYAML) reads as something else than a string.
_YAML_WORDS = frozenset(
    w for word in ("yes", "no", "true", "false", "on", "off", "null") for w in (word, word.capitalize(), word.upper()))


def registers_as_llc_writes_them(lines: list[str], start: int, end: int) -> tuple[int, int, list[Any]] | None:
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
HEADER_KEY_TYPES: dict[str, type] = {
    "liveins": list,
    "frameInfo": dict,
    "fixedStack": list,
    "stack": list,
    "machineFunctionInfo": dict,
}


def find_text(lines: list[str], start: int, end: int, text: str) -> tuple[int, int]:
    """(line, column) of the first occurrence of `text` in lines[start:end], else the start."""
    for i in range(start, end):
        at = lines[i].find(text) if text else -1
        if at >= 0:
            return i + 1, at + 1
    return start + 1, 1


def find_line(lines: list[str], start: int, end: int, key: str) -> int:
    for i in range(start, end):
        if lines[i].startswith(key):
            return i + 1
    return start + 1


# Deeper YAML crashes libyaml's recursive composer (a segmentation fault near 25,000 levels)
# and Python's recursion limit later on; llc writes at most 4 levels.
_MAX_YAML_DEPTH = 100


def load_yaml(text: str, file: str, first_line_index: int, source_lines: list[int] | None = None) -> Any:
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


def parse_registers(
    entries: Any, lines: list[str], start: int, end: int, file: str
) -> dict[int | str, VRegDecl]:
    out: dict[int | str, VRegDecl] = {}
    if entries in (None, []):
        return out
    reg_line = find_line(lines, start, end, "registers:")
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
