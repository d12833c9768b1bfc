"""wave32 (gfx10 and later): the implicit VCC operands llc prints but its MIR parser rejects.

llc prints the implicit VCC operand of S_CBRANCH_VCCZ, S_CBRANCH_VCCNZ and V_DIV_FMAS_* as
``implicit $vcc_lo``, and its MIR parser rejects that ("missing implicit register operand
'implicit $vcc'"). Only the temporary llc input is patched (`patch_wave32`): on those
instructions, and only on implicit operands, ``$vcc_lo`` becomes ``$vcc`` (flags such as
``killed`` kept). llc re-prints them as ``$vcc_lo`` (it fixes the implicit operands of wave32
instructions when it creates them), so:

* the stored pre file is exactly what llc printed: the last re-print of the fixed-point
  loop (`verilocc.llc.pairs`), whose patched form is also the input of that same re-print;
* the stored post file is exactly what llc printed when allocating from the patched form
  of that stored pre file, which has the same lines and differs only in those implicit
  operands (asserted by `check_patch_only_vcc`: same line count, each changed line turns back
  into the stored line by replacing ``$vcc`` with ``$vcc_lo`` in its implicit operands).

So the pair corresponds instruction by instruction, and re-running allocation from the
stored pre (patched the same way) reproduces the stored post byte for byte. If the parser
rejects another instruction's ``$vcc_lo`` implicit operand, its opcode is added to the set
for that pair and the pair is retried (`run_learning_wave32`); the summary line names it.
Standard library only.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

from verilocc.llc.run import PairError
from verilocc.llc.text import body_line_numbers, opcode_of

# Instructions whose MCInstrDesc lists VCC as implicit operand; llc prints it as `$vcc_lo`
# in wave32 but its MIR parser wants `$vcc` (seen with LLVM 19 and 22).
WAVE32_VCC_OPCODES = frozenset(
    {"S_CBRANCH_VCCZ", "S_CBRANCH_VCCNZ", "V_DIV_FMAS_F32_e64", "V_DIV_FMAS_F64_e64"}
)
_FLAG = r"(?:killed|dead|undef|internal|renamable|early-clobber|debug-use|implicit)"
IMPLICIT_VCC_LO = re.compile(rf"\b(implicit(?:-def)?(?: {_FLAG})*) \$vcc_lo\b")
IMPLICIT_VCC = re.compile(rf"\b(implicit(?:-def)?(?: {_FLAG})*) \$vcc\b")
MISSING_IMPLICIT = re.compile(
    r":(\d+):\d+: missing implicit register operand '(?:implicit|implicit-def) \$vcc'"
)


def is_wave32(ll_text: str, target: str) -> bool:
    if "+wavefrontsize32" in ll_text:
        return True
    if "+wavefrontsize64" in ll_text:
        return False
    m = re.match(r"gfx(\d+)", target)
    return m is not None and len(m.group(1)) >= 4 and int(m.group(1)[:-2]) >= 10


def patch_wave32(text: str, opcodes: frozenset[str]) -> tuple[str, list[str]]:
    """`implicit $vcc_lo` -> `implicit $vcc` on body lines of `opcodes`; returns the opcodes hit."""
    lines = text.split("\n")
    hits: list[str] = []
    for i in body_line_numbers(lines):
        if "$vcc_lo" not in lines[i]:
            continue
        op = opcode_of(lines[i])
        if op in opcodes:
            new = IMPLICIT_VCC_LO.sub(r"\1 $vcc", lines[i])
            if new != lines[i]:
                lines[i] = new
                hits.append(op)
    return "\n".join(lines), hits


def run_learning_wave32(text: str, opcodes: set[str],
                        run: Callable[[str], subprocess.CompletedProcess[str]]) -> subprocess.CompletedProcess[str]:
    """`run(patched text)` until llc's MIR parser no longer asks for `$vcc` where the text has
    `$vcc_lo` (`patch_wave32`): each such error adds its line's opcode to `opcodes` (which the
    caller keeps) and runs again. The last run's result, successful or not."""
    while True:
        patched, _ = patch_wave32(text, frozenset(opcodes))
        check_patch_only_vcc(text, patched)
        proc = run(patched)
        m = MISSING_IMPLICIT.search(proc.stderr) if proc.returncode != 0 else None
        if m is None:
            return proc
        ln = patched.split("\n")[int(m.group(1)) - 1]
        op = opcode_of(ln)
        if not op or op in opcodes or not IMPLICIT_VCC_LO.search(ln):
            return proc
        opcodes.add(op)


def check_patch_only_vcc(stored: str, patched: str) -> None:
    """The llc input differs from the stored text only in implicit `$vcc_lo` -> `$vcc`."""
    a, b = stored.split("\n"), patched.split("\n")
    if len(a) != len(b):
        raise PairError("internal: patched input has a different line count")
    for x, y in zip(a, b):
        if x != y and IMPLICIT_VCC.sub(r"\1 $vcc_lo", y) != x:
            raise PairError(f"internal: patched line differs beyond implicit vcc: {y.strip()}")
