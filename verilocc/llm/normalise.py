"""Normalised prompts: the text a model reads and writes, one line per virtual register.

A function becomes a header that states the target's constraints once, then one line per
virtual register in program order of first definition (dense renumbering `%0, %1, ...`):

    target align2 agprs wave64 vgprs 512 agprs 256 sgprs 102
    %0 s2 0 14 3 40 =s fs fs fs fs fs fs fs : @0
    %1 v2 2 40 17 96 dv fv fv fv fv fv nv nv : @1

Fields: dense id; architecture-neutral class (file letters `s`, `v`, `a`, `av` and the width in
32-bit registers, `h` for 16-bit; the target's tuple alignment is stated once in the header);
the start of the live interval relative to the previous line (instructions), its length, the
number of registers it conflicts with and the number of registers still free for it (numbers
above 511 are written 511); then `SLOTS` listed choices (`verilocc.llm.choices`: `=` a COPY
partner's register, `d` a dying value's, `f` a free one, `n` one that raises the high-water
mark, `!` one a counterexample ruled out, each with its file letter; `-` an empty slot), `:`
and the decision `@j`, the j-th listed choice. No register is named on a line, so the same
decisions describe the same allocation on every target whose constraints agree; answers map
back to `%N -> $vgpr4_vgpr5` lines (docs/design.md section 1) by replaying the choices.
The feedback paragraph of a counterexample names registers in a per-file alphabet (`v4` is
the tuple of the class's width starting at VGPR 4; `vcc`, `m0` by name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from verilocc.analysis.operands import VReg
from verilocc.errors import TargetError
from verilocc.findings import Finding, Place
from verilocc.llm.choices import NO_CHOICE, SLOTS, Choice, ChoiceTables, State
from verilocc.llm.problem import AllocationProblem
from verilocc.target import PhysReg, RegisterClass, Target
from verilocc.target.registers import RegFile, parse_physreg

MAX_NUMBER = 511
_LETTER = {RegFile.SGPR: "s", RegFile.VGPR: "v", RegFile.AGPR: "a"}


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


def line_text(problem: AllocationProblem, tables: ChoiceTables, state: State, k: int,
              bans: Sequence[PhysReg] = ()) -> tuple[str, list[Choice]]:
    """The line of the k-th virtual register up to `:`, and its listed choices."""
    v = problem.order[k]
    iv = problem.info[v]
    prev = problem.info[problem.order[k - 1]].start if k else 0
    listed, free = tables.choices(state, k, bans)
    parts = [f"%{k}", class_token(iv.cls), _num(iv.start - prev), _num(iv.end - iv.start),
             _num(tables.degree[k]), _num(free)]
    parts += [c.token for c in listed] + [NO_CHOICE] * (SLOTS - len(listed))
    return " ".join(parts), listed


def resolve(answer: str, listed: Sequence[Choice], v: VReg) -> tuple[Choice | None, str | None]:
    """The listed choice an answer names, or why it names none."""
    word = answer.split()[0] if answer.split() else ""
    j = int(word[1:]) if word.startswith("@") and word[1:].isdigit() else None
    if j is None:
        return None, f"'{word[:40]}' is not a decision `@j` for %{v}"
    if j >= len(listed):
        return None, (f"'{word}' names no listed choice for %{v} ({len(listed)} listed"
                      + ("; no register of its class is free: the function needs spilling or other choices before it)"
                         if not listed else ")"))
    return listed[j], None


def output_finding(problem: AllocationProblem, file: str, k: int, why: str) -> Finding:
    """The finding for line k's decision that names no listed choice (line k + 1 of the text)."""
    v = problem.order[k]
    return Finding("model-output", "constraints", Place(file, problem.fn.name, -1, -1, k + 1, 1),
                   f"model output line {k + 1}: {why}", vregs=(f"%{v}",))


# --------------------------------------------------------------------------------------------
# Reading a model's answers back
# --------------------------------------------------------------------------------------------
_ANSWER = re.compile(r"^\s*%(\d+)\b.*?:\s*(\S*)\s*$")


def parse_model_output(text: str, problem: AllocationProblem, file: str = "<model>",
                       bans: Mapping[VReg, Sequence[PhysReg]] | None = None,
                       tables: ChoiceTables | None = None) -> tuple[dict[VReg, PhysReg], list[Finding]]:
    """Model text (normalised lines `%k ... : @j`) -> registers of the original virtual registers.

    The decisions are replayed in program order (with the bans the prompt carried), so each
    `@j` names the register the model saw listed. Never raises: a line that does not parse, an
    id that is not a virtual register, a decision given twice, missing or naming no listed
    choice are findings (kind `model-output`, layer constraints) at the line of the text, which
    the verifier's report and the next prompt carry like any other finding.
    """
    findings: list[Finding] = []
    fn = problem.fn.name
    tables = tables or ChoiceTables(problem)
    bans = bans or {}

    def bad(n: int, msg: str, vreg: VReg | None = None) -> None:
        findings.append(Finding("model-output", "constraints", Place(file, fn, -1, -1, n, 1), msg,
                                vregs=(f"%{vreg}",) if vreg is not None else ()))

    answers: dict[int, tuple[int, str]] = {}
    for n, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip() or raw.startswith(("target", "feedback", "#")):
            continue
        m = _ANSWER.match(raw)
        if m is None:
            bad(n, f"model output line {n} is not `%N ... : @j`: {raw.strip()[:80]!r}")
            continue
        k = int(m.group(1))
        if k >= len(problem.order):
            bad(n, f"model output line {n} names %{k}, but the function has {len(problem.order)} virtual registers")
            continue
        if k in answers:
            bad(n, f"model output line {n} decides %{problem.order[k]} a second time", problem.order[k])
            continue
        answers[k] = (n, m.group(2))
    state = tables.start()
    missing: list[VReg] = []
    for k, v in enumerate(problem.order):
        listed, _ = tables.choices(state, k, bans.get(v, ()))
        if k not in answers:
            missing.append(v)
            continue
        n, word = answers[k]
        choice, why = resolve(word, listed, v)
        if choice is None:
            bad(n, f"model output line {n}: {why}", v)
        else:
            tables.take(state, k, choice.reg)
    for v in missing[:20]:
        bad(0, f"the model gave no decision for %{v}", v)
    return state.regs, findings


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
