"""Normalised prompts: the text a model reads and writes, one line per virtual register.

A function becomes a header that states the target's constraints once, then one line per
virtual register in program order of first definition (dense renumbering `%0, %1, ...`):

    target align2 agprs wave64 vgprs 512 agprs 256 sgprs 102
    %0 s2 0 14 3 = s4 f s4 : s4
    %1 v2 2 40 17 f v0 ! v2 : v4

Fields: dense id; architecture-neutral class (file letters `s`, `v`, `a`, `av` and the width in
32-bit registers, `h` for 16-bit; the target's tuple alignment is stated once in the header);
the start of the live interval relative to the previous line (instructions), its length and
the number of registers it conflicts with (numbers above 511 are written 511); `= R` for each
COPY partner whose register is already known; `f R`, the first register that the class,
alignment and conflicts with the registers above leave free; `! R` for registers a verifier
counterexample ruled out; then `:` and the register. The register comes right after its
virtual register and interval, the format a small model learns (measured: a separate list at
the end is never learned). Registers are written in a per-file alphabet (`v4` is the tuple of
the class's width starting at VGPR 4; `vcc`, `m0` and other special registers by name) and
mapped back to `%N -> $vgpr4_vgpr5` lines (DESIGN.md section 1) for verification.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from verilocc.analysis.operands import VReg
from verilocc.errors import TargetError
from verilocc.findings import Finding, Place
from verilocc.llm.problem import AllocationProblem
from verilocc.target import PhysReg, RegisterClass, Target
from verilocc.target.registers import RegFile, file_half, file_register, parse_physreg

MAX_NUMBER = 511
_LETTER = {RegFile.SGPR: "s", RegFile.VGPR: "v", RegFile.AGPR: "a"}
_FILE = {v: k for k, v in _LETTER.items()}


def class_token(cls: RegisterClass) -> str:
    files = "".join(sorted(_LETTER[f] for f in cls.files if f in _LETTER)) or "x"
    files = {"av": "av", "as": "as", "asv": "asv", "sv": "sv"}.get(files, files)
    width = "h" if cls.width_units == 1 else str(cls.width32)
    return f"{files}{width}"


def reg_token(reg: PhysReg) -> str:
    """`vgpr4_vgpr5` -> `v4`; `vgpr3_hi16` -> `v3.h`; special registers by name."""
    if reg.file in _LETTER:
        half = ".h" if reg.name.endswith("_hi16") else ".l" if reg.name.endswith("_lo16") else ""
        return f"{_LETTER[reg.file]}{reg.index}{half}"
    return reg.name


def token_register(token: str, cls: RegisterClass) -> PhysReg:
    """The register a token names for a value of `cls`; TargetError when there is none."""
    m = re.fullmatch(r"(av|[sva])(\d+)(\.[hl])?", token)
    if m is None:
        return parse_physreg(token)
    letter, index, half = m.group(1), int(m.group(2)), m.group(3)
    if letter == "av":
        raise TargetError(f"'{token}' names no register file")
    file = _FILE[letter]
    if half:
        return file_half(file, index, half == ".h")
    return file_register(file, index, max(1, cls.width32))


def header_text(target: Target, problem: AllocationProblem | None = None) -> str:
    lim = problem.limits.hint or problem.limits if problem is not None else None
    parts = ["target", "align2" if target.aligned_vgpr_tuples else "align1",
             "agprs" if target.has_agprs else "noagprs", f"wave{target.wavefront_size}"]
    if lim is not None:
        parts += ["vgprs", str(min(lim.vgprs, MAX_NUMBER)), "agprs", str(min(lim.agprs, MAX_NUMBER)),
                  "sgprs", str(min(lim.sgprs, MAX_NUMBER))]
    return " ".join(parts)


def _num(n: int) -> str:
    return str(max(0, min(n, MAX_NUMBER)))


@dataclass
class Line:
    """One virtual register's line without its answer."""

    dense: int
    vreg: VReg
    text: str  # "%3 v2 0 40 17 = v4 f v0"


def line_prefix(problem: AllocationProblem, dense: int, v: VReg, chosen: Mapping[VReg, PhysReg],
                bans: Sequence[PhysReg] = ()) -> tuple[str, list[PhysReg]]:
    """The line of `v` up to `:`, and the registers constrained decoding allows for it."""
    iv = problem.info[v]
    prev = problem.info[problem.order[dense - 1]].start if dense else 0
    n_conf = len({w for w, _, _ in iv.conflicts})
    parts = [f"%{dense}", class_token(iv.cls), _num(iv.start - prev), _num(iv.end - iv.start), _num(n_conf)]
    hints: list[str] = []
    for p in iv.copies:
        reg = p if isinstance(p, PhysReg) else chosen.get(p)
        if reg is not None and len(hints) < 2 and reg_token(reg) not in hints:
            hints.append(reg_token(reg))
    for h in hints:
        parts += ["=", h]
    allowed = problem.allowed(v, chosen, budget="capped", excluded=bans)
    if not allowed and problem.over_budget:
        allowed = problem.allowed(v, chosen, budget="hard", excluded=bans)
    if allowed:
        parts += ["f", reg_token(allowed[0])]
    for b in bans[:4]:
        parts += ["!", reg_token(b)]
    return " ".join(parts), allowed


# --------------------------------------------------------------------------------------------
# Reading a model's answers back
# --------------------------------------------------------------------------------------------
_ANSWER = re.compile(r"^\s*%(\d+)\b.*?:\s*(\S+)\s*$")


def parse_model_output(text: str, problem: AllocationProblem, file: str = "<model>") -> tuple[dict[VReg, PhysReg], list[Finding]]:
    """Model text (normalised lines `%k ... : R`) -> registers of the original virtual registers.

    Never raises: a line that does not parse, an id that is not a virtual register, a token
    that names no register, a register given twice or missing are findings (kind
    `model-output`, layer constraints) at the line of the text, which the verifier's report
    and the next prompt carry like any other finding.
    """
    regs: dict[VReg, PhysReg] = {}
    findings: list[Finding] = []
    fn = problem.fn.name

    def bad(n: int, msg: str, vreg: VReg | None = None) -> None:
        findings.append(Finding("model-output", "constraints", Place(file, fn, -1, -1, n, 1), msg,
                                vregs=(f"%{vreg}",) if vreg is not None else ()))

    for n, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip() or raw.startswith(("target", "feedback", "#")):
            continue
        m = _ANSWER.match(raw)
        if m is None:
            bad(n, f"model output line {n} is not `%N ... : register`: {raw.strip()[:80]!r}")
            continue
        k, tok = int(m.group(1)), m.group(2)
        if k >= len(problem.order):
            bad(n, f"model output line {n} names %{k}, but the function has {len(problem.order)} virtual registers")
            continue
        v = problem.order[k]
        if v in regs:
            bad(n, f"model output line {n} assigns %{v} a second time", v)
            continue
        try:
            regs[v] = token_register(tok, problem.info[v].cls)
        except TargetError:
            bad(n, f"model output line {n}: '{tok[:40]}' is not a register of class {problem.info[v].cls.name} "
                   f"for %{v}", v)
    missing = [v for v in problem.order if v not in regs and not any(f"%{v}" in f.vregs for f in findings)]
    for v in missing[:20]:
        bad(0, f"the model gave no register for %{v}", v)
    return regs, findings


def rename_text(text: str, problem: AllocationProblem) -> str:
    """Original `%N` and `$reg` names in a sentence -> normalised ids and register tokens."""
    dense = problem.dense

    def vname(m: re.Match[str]) -> str:
        raw = m.group(1)
        key: VReg = int(raw) if raw.isdigit() else raw
        return f"%{dense[key]}" if key in dense else m.group(0)

    def pname(m: re.Match[str]) -> str:
        try:
            return reg_token(parse_physreg(m.group(1)))
        except TargetError:
            return m.group(0)

    text = re.sub(r"%(\d+|[A-Za-z_][\w]*)", vname, text)
    return re.sub(r"\$([A-Za-z_]\w*)", pname, text)
