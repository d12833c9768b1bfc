"""Running one llc: a step's command line under a timeout (`Llc`), and how a step fails
(`PairError`; `fail_message` names llc's exit code and its first error lines). Standard library
only.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path


class PairError(Exception):
    """A pair could not be made; the message says which step and why."""


@dataclasses.dataclass(frozen=True)
class Llc:
    path: str
    timeout: float

    def run(self, args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
        cmd = [self.path, *args]
        try:
            proc = subprocess.run(
                cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                timeout=self.timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise PairError(f"{what}: llc timed out after {self.timeout:.0f}s") from None
        return proc


ERROR_LINE = re.compile(r"error|Bad machine code|LLVM ERROR|Assertion|UNREACHABLE|- (function|instruction|operand):")


def fail_message(what: str, proc: subprocess.CompletedProcess[str]) -> str:
    """The step, llc's exit code and its first error lines (the first lines when none says error:
    a dump printed before the error is not what went wrong)."""
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ERROR_LINE.search(ln)]
    if proc.returncode < 0 and not errors:  # a crash: its stack dump says where, not why
        return f"{what}: llc crashed (signal {-proc.returncode})"
    return f"{what}: llc exited {proc.returncode}: " + " | ".join((errors or lines)[:6])
