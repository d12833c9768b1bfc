"""Renderings of a verification report: text (coloured by rich on a terminal), JSON and SARIF 2.1.0.

All three are views of the same Finding objects; output is deterministic (findings sorted by
place, keys in a fixed order) so the same input gives the same bytes.
"""

from __future__ import annotations

import json
import os
from typing import Any

from verilocc import __version__
from verilocc.findings import Finding, FunctionResult, Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

_RULES = {
    "class": "The physical register is not a member of the virtual register's class.",
    "alignment": "A register tuple is not aligned as the target requires.",
    "bounds": "The register lies outside the target's register file or budget.",
    "budget": "The allocation uses more registers than the function's attributes ask for.",
    "reserved": "A reserved register is assigned or clobbered.",
    "interference": "Two values that are live at the same time share a register lane.",
    "tied": "A tied def and use are in different registers.",
    "illegal-copy": "A COPY that LLVM cannot lower as a copy (a vector register into a scalar one).",
    "early-clobber": "An early-clobber def overlaps a use of the same instruction.",
    "undefined-read": "A register is read that no path defines.",
    "unallocated": "A virtual register is left in the allocated program.",
    "wrong-value": "A use reads a location that does not hold the value the virtual program reads.",
    "fixed-register": "A fixed physical register of the virtual program was changed.",
    "width": "Register widths do not match.",
    "operands": "The operands differ from the virtual program's.",
    "added-instruction": "The allocated program has an instruction the virtual program lacks.",
    "dropped-instruction": "The allocated program lacks an instruction of the virtual program.",
    "cfg": "The control-flow graph differs.",
    "unsupported": "A construct the checker cannot model stopped the proof.",
    "solver": "The solver could not decide an obligation.",
    "not-equivalent": "The two programs compute different results.",
}


def sorted_findings(fr: FunctionResult) -> list[Finding]:
    return sorted(fr.findings, key=Finding.sort_key)


def _stats(stats: dict[str, Any], timings: bool) -> dict[str, Any]:
    """Counts always; seconds only on request, so that the same input gives the same bytes."""
    return {k: v for k, v in sorted(stats.items()) if timings or not k.startswith(("seconds", "solver_seconds"))}


def to_json(report: Report, timings: bool = False) -> str:
    doc: dict[str, Any] = {
        "verdict": report.verdict.value,
        "file": report.file,
        "pre": report.pre_file,
        "tool": {"name": "verilocc", "version": __version__},
        "functions": [
            {
                "name": fr.name,
                "target": fr.target,
                "verdict": fr.verdict.value,
                "layers": fr.layers,
                "notes": fr.notes,
                "stats": _stats(fr.stats, timings),
                "findings": [f.to_dict() for f in sorted_findings(fr)],
            }
            for fr in report.functions
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def to_sarif(report: Report) -> str:
    kinds = sorted({f.kind for f in report.findings})
    results = []
    for fr in report.functions:
        for f in sorted_findings(fr):
            results.append(
                {
                    "ruleId": f.kind,
                    "level": {"error": "error", "warning": "note"}.get(f.severity, "warning"),
                    "message": {"text": f.message},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": f.place.file},
                                "region": {"startLine": max(1, f.place.line), "startColumn": max(1, f.place.column)},
                            },
                            "logicalLocations": [
                                {"name": f"bb.{f.place.block}" if f.place.block >= 0 else fr.name,
                                 "fullyQualifiedName": f"{fr.name}/bb.{f.place.block}", "kind": "block"}
                            ],
                        }
                    ],
                    "properties": {
                        "layer": f.layer,
                        "function": fr.name,
                        "vregs": list(f.vregs),
                        "physregs": list(f.physregs),
                    },
                }
            )
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "verilocc",
                        "version": __version__,
                        "informationUri": "https://example.invalid/verilocc",
                        "rules": [
                            {"id": k, "shortDescription": {"text": _RULES.get(k, k)}} for k in kinds
                        ],
                    }
                },
                "invocations": [{"executionSuccessful": True}],
                "properties": {"verdict": report.verdict.value},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def source_line(file: str, line: int, cache: dict[str, list[str]]) -> str:
    if file not in cache:
        try:
            with open(file, encoding="utf-8", errors="replace") as fh:
                cache[file] = fh.read().split("\n")
        except OSError:
            cache[file] = []
    lines = cache[file]
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


# A line of the text rendering: (text, rich style) segments; "" is no style.
Line = tuple[tuple[str, str], ...]
# The characters rich leaves out of printed text (bell, backspace, vertical tab, form feed,
# carriage return); a tab becomes one space. Both renderings print the same characters.
_UNPRINTED = {7: None, 8: None, 11: None, 12: None, 13: None, 9: " "}


def text_lines(report: Report) -> list[Line]:
    """One summary line, then each function's notes and each finding with its source line."""
    def seg(text: str, style: str = "") -> tuple[str, str]:
        return text.translate(_UNPRINTED), style

    colour = {"VERIFIED": "green", "REJECTED": "red", "UNKNOWN": "yellow"}[report.verdict.value]
    n_err = sum(1 for f in report.findings if f.severity == "error")
    n_unk = sum(1 for f in report.findings if f.severity == "unknown")
    n_warn = sum(1 for f in report.findings if f.severity == "warning")
    layers = sorted({layer for fr in report.functions for layer in fr.layers})
    rest = (f" {report.file}: {len(report.functions)} function(s), {n_err} error(s)"
            + (f", {n_unk} unknown" if n_unk else "") + (f", {n_warn} warning(s)" if n_warn else "")
            + f"; layers: {', '.join(layers) or 'none'}")
    lines: list[Line] = [(seg(report.verdict.value, f"bold {colour}"), seg(rest))]
    cache: dict[str, list[str]] = {}
    for fr in report.functions:
        for note in fr.notes:
            lines.append((seg("  "), seg("note:", "dim"), seg(f" {fr.name}: {note}")))
        for f in sorted_findings(fr):
            style = {"error": "red", "unknown": "yellow", "warning": "magenta"}.get(f.severity, "yellow")
            lines.append((seg(f"{f.place.file}:{f.place.line}:{f.place.column}: "), seg(f.severity, style),
                          seg(f" [{f.layer}/{f.kind}] {fr.name}: {f.message}")))
            src = f.source or source_line(f.place.file, f.place.line, cache)
            if src:
                lines.append((seg("    "), seg(src, "dim")))
    return lines


def render_text(report: Report, stream: Any, colour: bool | None = None) -> None:
    """Print `text_lines` to `stream`: through rich when it may show colours (a terminal, or
    FORCE_COLOR or TTY_COMPATIBLE set: rich decides), else as plain text, the characters rich
    would print, without importing rich (it costs a pipeline's `verify` a sixth of its time)."""
    lines = text_lines(report)
    if colour is None:
        colour = may_show_colours(stream)
    if not colour:
        stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False, markup=False)
    for line in lines:
        console.print(Text.assemble(*line))


def may_show_colours(stream: Any) -> bool:
    """Whether rich could colour `stream`: it is a terminal, or the environment says so."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def render_feedback(report: Report, rename: Any = None, limit: int = 3) -> str:
    """The feedback paragraph of a regeneration prompt: the same findings as `render_text`,
    errors first, as plain lines (`rename` maps names into the prompt's normalised alphabet)."""
    found = [(fr, f) for fr in report.functions for f in sorted_findings(fr) if f.severity != "warning"]
    found.sort(key=lambda x: (x[1].severity != "error", x[1].sort_key()))
    lines = [f"feedback: {report.verdict.value}, {len(found)} finding(s)"]
    for fr, f in found[:limit]:
        msg = f"{f.severity} [{f.layer}/{f.kind}] {f.message}"
        lines.append("feedback: " + (rename(msg) if rename is not None else msg))
    if len(found) > limit:
        lines.append(f"feedback: and {len(found) - limit} more")
    return "\n".join(lines)
