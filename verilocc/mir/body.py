"""The body of a machine function in a MIR file, parsed line by line so that every block,
instruction and operand keeps its exact line and column (llvm/docs/MIRLangRef.rst describes the
body language).

Parsers come in pairs as in xDSL: `_parse_optional_x` returns None when the construct is
absent, the callers raise an InputError (file, line, column) when it was required. The module
is the whole grammar of the body language, and its fast paths for the shapes llc writes sit
beside the general rules they shortcut: one reads them together to see that they agree.
"""

from __future__ import annotations

import re
from typing import Any

from verilocc.errors import InputError, TargetError
from verilocc.mir.model import INSTR_FLAGS, REG_FLAGS, Block, Instruction, Operand
from verilocc.target import parse_physreg
from verilocc.target.opcode_names import is_known_opcode
from verilocc.target.opcodes import tie_constraints

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


class BodyParser:
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
    return BodyParser([], 0, 0, file).parse_instruction(text, 1, line)
