"""Findings and verdicts: what every check produces and every renderer prints.

A finding is data with an exact place (function, block, instruction index, source line,
column) and the registers involved; the terminal text, JSON, SARIF and model prompts are
renderings of the same object. Unknowns are findings too (severity "unknown"): a check that
could not decide says so, and the verdict can then never be VERIFIED.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Verdict(enum.Enum):
    VERIFIED = "VERIFIED"
    REJECTED = "REJECTED"
    UNKNOWN = "UNKNOWN"

    @property
    def exit_code(self) -> int:
        return {"VERIFIED": 0, "REJECTED": 1, "UNKNOWN": 3}[self.value]


# The layers of docs/design.md section 2, in the order they run.
LAYERS = ("constraints", "value-flow", "equivalence")


@dataclass(frozen=True, order=True)
class Place:
    file: str
    function: str
    block: int  # block number (bb.N); -1 for function-level findings
    index: int  # instruction index within the block; -1 for block-level findings
    line: int
    column: int = 0

    @property
    def label(self) -> str:
        where = f"bb.{self.block}" if self.block >= 0 else "function"
        return f"{where} line {self.line}" if self.line else where


@dataclass(frozen=True)
class Finding:
    kind: str  # e.g. "interference", "class", "alignment", "wrong-value", "unsupported"
    layer: str  # one of LAYERS
    place: Place
    message: str
    vregs: tuple[str, ...] = ()  # "%41"
    physregs: tuple[str, ...] = ()  # "$vgpr6_vgpr7"
    severity: str = "error"  # "error" rejects; "unknown" stops a proof; "warning" informs
    counterexample: tuple[tuple[str, str], ...] = ()  # concrete input from a solver model
    source: str = ""  # the source line as written

    def sort_key(self) -> tuple[Any, ...]:
        return (self.place, self.layer, self.kind, self.message)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind,
            "layer": self.layer,
            "severity": self.severity,
            "function": self.place.function,
            "block": self.place.block,
            "index": self.place.index,
            "line": self.place.line,
            "column": self.place.column,
            "vregs": list(self.vregs),
            "physregs": list(self.physregs),
            "message": self.message,
        }
        if self.counterexample:
            d["counterexample"] = dict(self.counterexample)
        if self.source:
            d["source"] = self.source
        return d


@dataclass
class FunctionResult:
    name: str
    target: str
    layers: list[str]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    certificate: Any = None  # verilocc.certificate.obligation.FunctionCertificate, when asked for

    @property
    def verdict(self) -> Verdict:
        if any(f.severity == "error" for f in self.findings):
            return Verdict.REJECTED
        if any(f.severity == "unknown" for f in self.findings):
            return Verdict.UNKNOWN
        # Every layer must have run for a proof; a subset never proves the allocation.
        if set(self.layers) != set(LAYERS):
            return Verdict.UNKNOWN
        return Verdict.VERIFIED


@dataclass
class Report:
    file: str
    pre_file: str | None
    functions: list[FunctionResult]
    tool_version: str

    @property
    def verdict(self) -> Verdict:
        verdicts = [f.verdict for f in self.functions]
        if not verdicts:
            return Verdict.UNKNOWN
        if Verdict.REJECTED in verdicts:
            return Verdict.REJECTED
        if Verdict.UNKNOWN in verdicts:
            return Verdict.UNKNOWN
        return Verdict.VERIFIED

    @property
    def findings(self) -> list[Finding]:
        return [f for fr in self.functions for f in fr.findings]
