"""The view as one self-contained HTML page: data as JSON, script and style inline.

Nothing is fetched: the page works from a file on a machine without a network. The grid and
the pressure curve are drawn on canvases by `assets/page.js`, only the rows on screen at a
time, so a kernel of thousands of instructions and hundreds of registers stays responsive;
the data is compact (live ranges as runs, one text line per instruction).

Every string from the input (MIR text, register and function names, messages) reaches the
page only inside the JSON block, with `<`, `>` and `&` escaped, and the script puts it into
the page as text (never as markup). The output is deterministic: the same view gives the same
bytes.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from verilocc import __version__
from verilocc.findings import Finding
from verilocc.view.model import AllocationView, FunctionView, View
from verilocc.view.marks import Mark

ASSETS = Path(__file__).parent / "assets"

_FILE_CODE = {"sgpr": "s", "special": "c", "vgpr": "v", "agpr": "a"}


def _finding(m: Mark) -> dict[str, Any]:
    f: Finding = m.finding
    return {
        "kind": f.kind, "layer": f.layer, "severity": f.severity, "message": f.message,
        "file": f.place.file, "line": f.place.line, "column": f.place.column, "label": f.place.label,
        "vregs": list(f.vregs), "physregs": list(f.physregs), "source": f.source,
        "counterexample": [list(kv) for kv in f.counterexample],
        "point": m.point, "cols": list(m.columns), "writer": m.writer, "reader": m.reader,
    }


def _limits(fv: FunctionView) -> dict[str, Any]:
    lim = fv.resources.limits
    out: dict[str, Any] = {"sgpr": lim.sgprs, "vgpr": lim.vgprs, "agpr": lim.agprs, "vector": lim.total_vector}
    if lim.hint is not None and (lim.hint.vgprs, lim.hint.sgprs) != (lim.vgprs, lim.sgprs):
        out["hint"] = {"sgpr": lim.hint.sgprs, "vgpr": lim.hint.vgprs, "vector": lim.hint.total_vector}
    return out


def function_data(fv: FunctionView) -> dict[str, Any]:
    occ, res = fv.occupancy, fv.resources
    result = fv.result
    return {
        "name": fv.name,
        "file": fv.file,
        "target": fv.target.name,
        "verdict": fv.verdict.value if fv.verdict is not None else None,
        "layers": list(result.layers) if result is not None else [],
        "notes": list(result.notes) if result is not None else [],
        "virtual": occ.with_virtual,
        "blocks": [[label, start] for label, start in occ.block_starts],
        "lines": [p.line for p in occ.points],
        "text": [p.text for p in occ.points],
        "kind": "".join({"spill": "S", "reload": "R", "copy": "C"}.get(p.kind, ".") for p in occ.points),
        "cols": [c.name for c in occ.columns],
        "files": "".join(_FILE_CODE[c.file] for c in occ.columns),
        "values": [[v.label, v.detail] for v in occ.values],
        "runs": [[x for run in runs for x in run] for runs in occ.runs],
        "reads": [list(r) for r in occ.reads],
        "writes": [list(w) for w in occ.writes],
        "pressure": {k: occ.pressure[k] for k in ("vgpr", "agpr", "sgpr")},
        "vector": list(res.vector_live),
        "free": list(res.free_per_point),
        "summary": [list(r) for r in res.remarks(fv.name)],
        "waves": res.waves,
        "maxWaves": res.max_waves,
        "unified": res.unified_vector_file,
        "peak": res.peak_point,
        "thresholds": [list(t) for t in res.vector_thresholds],
        "sgprThresholds": [list(t) for t in res.sgpr_thresholds],
        "limits": _limits(fv),
        "findings": [_finding(m) for m in fv.marks],
    }


def side_data(side: AllocationView) -> dict[str, Any]:
    return {
        "file": side.file,
        "pre": side.pre_file,
        "verdict": side.report.verdict.value,
        "functions": [function_data(fv) for fv in side.functions],
    }


def view_data(view: View) -> dict[str, Any]:
    return {"tool": f"verilocc {__version__}", "title": view.title, "sides": [side_data(s) for s in view.sides]}


def _json_for_html(data: object) -> str:
    """JSON that cannot end its <script> element or open markup: `<`, `>`, `&` as escapes."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_html(view: View) -> str:
    style = (ASSETS / "page.css").read_text(encoding="utf-8")
    script = (ASSETS / "page.js").read_text(encoding="utf-8")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{html.escape(view.title)}</title>\n<style>\n{style}</style>\n</head>\n<body>\n"
        "<noscript>This page draws the allocation with JavaScript; enable it to see the view.</noscript>\n"
        "<div id=\"app\"></div>\n<div id=\"tip\" role=\"tooltip\"></div>\n"
        f"<script type=\"application/json\" id=\"verilocc-data\">{_json_for_html(view_data(view))}</script>\n"
        f"<script>\n{script}</script>\n</body>\n</html>\n"
    )
