"""Verify one pre/post pair and describe every function's outcome as plain data.

`verify_pair` runs `verilocc.verify.verify_modules` on a pair under a time limit and returns a
dict (it is pickled back from worker processes): per function the verdict and, unless
VERIFIED, its first finding (first error, else first unknown) with the instruction it names,
and the `liveness-anomaly` warnings of a VERIFIED function. A pair that cannot be read, times
out or crashes the verifier is a result too (`error`).

`cause_of` names what a non-VERIFIED function's first finding is about (`CAUSES`, first match
wins): a construct of LLVM's output (whole-wave code, calls, EXEC control flow, 16-bit
registers...) or the kind of fault. The LLVM-test sweep (`scripts/llvm_tests_sweep.py`) and
`verilocc hunt` share it.
"""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import Any

# Causes, in the order the tables list them, with the rule that picks each (first match wins).
CAUSES = (
    ("parse error", "verilocc could not read the pair (InputError: file:line:column)"),
    ("block pairing", "the blocks of pre and post could not be paired (renumbered, split or "
                      "merged blocks): finding kind `cfg`"),
    ("budgets", "a register beyond the function's budget or reserved on the target: finding "
                "kind `budget`, `bounds` or `reserved` (outside WWM code)"),
    ("WWM", "the finding's instruction is whole-wave-mode code (STRICT_WWM/WQM, "
            "V_SET_INACTIVE, WWM spills, `wwmReservedRegs`)"),
    ("calls", "the finding's instruction is a call, return or register-mask operand "
              "(SI_CALL, SI_TCRETURN, SI_RETURN, `csr_*` masks, ADJCALLSTACK*)"),
    ("EXEC control flow", "the finding's instruction manipulates EXEC (SI_IF/SI_ELSE/"
                          "SI_LOOP/SI_END_CF, *_SAVEEXEC, `$exec` other than the `implicit "
                          "$exec` every vector instruction reads)"),
    ("16-bit registers", "a 16-bit register or a copy between 16- and 32-bit registers: finding "
                         "kind `width`, `_lo16`/`_hi16` operands"),
    ("lane anomaly", "a read of lanes never written or a partial (subregister) write: "
                     "`undefined-read`, `undef`, lane masks"),
    ("physical interference", "a virtual register's home overlaps a physical register live "
                              "in the program (a live-in, an implicit def, a reserved register)"),
    ("other", "none of the above"),
)

WWM_RE = re.compile(r"\b(STRICT_WWM|STRICT_WQM|ENTER_STRICT_\w+|EXIT_STRICT_\w+|SOFT_WQM|"
                    r"V_SET_INACTIVE_B\w+|SI_SPILL_WWM\w+|WWM_COPY|SI_WHOLE_WAVE\w+)\b")
CALL_RE = re.compile(r"\b(SI_CALL\w*|SI_TCRETURN\w*|SI_RETURN\w*|ADJCALLSTACK\w+|"
                     r"S_SETPC_B64_return\w*|SI_CS_CHAIN\w*)\b|csr_amdgpu")
EXEC_RE = re.compile(r"\b(SI_IF|SI_ELSE|SI_LOOP|SI_END_CF|SI_IF_BREAK|SI_KILL\w*|"
                     r"S_\w+_SAVEEXEC_B(32|64)|SI_INIT_EXEC\w*|SI_WATERFALL\w*)\b|(?<!implicit )\$exec")
LANE_RE = re.compile(r"undefined-read|\bundef\b|lane|subregister|sub\d", re.I)


def cause_of(kind: str, message: str, source: str, wwm_function: bool) -> str:
    """The cause of a non-VERIFIED function, from its first finding (see CAUSES)."""
    if kind == "parse":
        return "parse error"
    if kind == "cfg":
        return "block pairing"
    text = f"{source} {message}"
    if WWM_RE.search(text) or (wwm_function and (kind == "reserved" or "wwm" in message.lower())):
        return "WWM"
    if kind in ("budget", "bounds", "reserved"):
        return "budgets"
    if kind == "width" or re.search(r"_(lo|hi)16\b|\b16 bits", text):
        return "16-bit registers"
    if CALL_RE.search(text):
        return "calls"
    if EXEC_RE.search(text):
        return "EXEC control flow"
    if kind == "undefined-read" or LANE_RE.search(message):
        return "lane anomaly"
    if kind == "interference" and re.search(r"\$[a-z]", message):
        return "physical interference"
    return "other"


class PairTimeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise PairTimeout()


def verify_pair(pre: str, post: str, seconds: float, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Verify one pair; a plain dict: `base` plus `functions` (one record per function) or
    `error` ("parse error", "timeout", "crash") and `message`."""
    from verilocc.errors import InputError
    from verilocc.mir.parser import read_module
    from verilocc.verify import Options, verify_modules

    base = dict(base or {})
    # The time limit is a timer signal, which only the main thread may set: in a Dask worker's
    # thread the pair runs under the solver's own time limit per query only.
    timed = threading.current_thread() is threading.main_thread()
    if timed:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        pre_m, post_m = read_module(pre), read_module(post)
        report = verify_modules(post_m, pre_m, Options())
    except InputError as e:
        return {**base, "error": "parse error", "message": str(e)}
    except PairTimeout:
        return {**base, "error": "timeout", "message": f"no answer within {seconds:.0f}s"}
    except Exception as e:  # a verifier crash is a result of the run, not of the caller
        return {**base, "error": "crash", "message": f"{type(e).__name__}: {e}"}
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    text = Path(post).read_text(errors="replace")
    lines = {pre: Path(pre).read_text(errors="replace").split("\n"), post: text.split("\n")}

    def source(f: Any) -> str:
        """The instruction a finding names, as written (from the file when the finding has none)."""
        if f.source:
            return str(f.source).strip()
        file_lines = lines.get(f.place.file, [])
        return file_lines[f.place.line - 1].strip() if 0 < f.place.line <= len(file_lines) else ""

    functions = []
    for fr in report.functions:
        rec: dict[str, Any] = {**base, "function": fr.name, "verdict": fr.verdict.value}
        if fr.verdict.value == "VERIFIED":
            anomalies = [f for f in fr.findings if f.kind == "liveness-anomaly"]
            if anomalies:
                a = anomalies[0]
                rec.update(anomalies=len(anomalies), kind=a.kind, layer=a.layer, message=a.message,
                           source=source(a), line=a.place.line, file="post", block=a.place.block,
                           index=a.place.index)
        else:
            first = next((f for f in fr.findings if f.severity == "error"), None) or \
                next((f for f in fr.findings if f.severity == "unknown"), None)
            if first is None:
                rec.update(kind="layers", message="not every layer ran: " + ", ".join(fr.layers),
                           source="", line=0, cause="other")
            else:
                wwm = bool(WWM_RE.search(function_text(text, fr.name)))
                rec.update(kind=first.kind, layer=first.layer, message=first.message,
                           source=source(first), line=first.place.line,
                           file="pre" if first.place.file == pre else "post",
                           block=first.place.block, index=first.place.index,
                           errors=sum(1 for f in fr.findings if f.severity == "error"),
                           cause=cause_of(first.kind, first.message, source(first), wwm))
        functions.append(rec)
    return {**base, "functions": functions}


def function_text(text: str, name: str) -> str:
    """The YAML document of function `name` in a MIR text (header and body)."""
    m = re.search(rf"^name:\s+'?{re.escape(name)}'?\s*$", text, re.M)
    if not m:
        return ""
    end = text.find("\n...", m.end())
    return text[m.start(): end if end >= 0 else len(text)]
