"""`verilocc show` and `verilocc verify --format html`: verify, build the view, write it.

The output's suffix chooses the rendering: `.html` the interactive page (`view.page`),
`.png` the figure (`view.figure`, matplotlib, imported only then).
"""

from __future__ import annotations

from pathlib import Path

from verilocc.errors import InputError
from verilocc.findings import Report
from verilocc.mir.model import Module
from verilocc.output import write_output
from verilocc.mir.parser import read_module
from verilocc.verify import Options, verify_modules
from verilocc.view.model import AllocationView, View, build_side, only_function
from verilocc.view.page import render_html

FORMATS = {".html": "html", ".htm": "html", ".png": "png"}


def output_format(path: str) -> str:
    fmt = FORMATS.get(Path(path).suffix.lower()) if path != "-" else "html"
    if fmt is None:
        raise InputError("the output must end in .html or .png (or be - for HTML on stdout)", path, 0, 0)
    return fmt


def _title(sides: list[AllocationView]) -> str:
    return "verilocc show: " + " vs ".join(s.file for s in sides)


def report_page(report: Report, post: Module, pre: Module | None, mcpu: str | None) -> str:
    """The page of a finished verification (`verify --format html`)."""
    side = build_side(post, pre, report, mcpu)
    return render_html(View([side], _title([side])))


def show(alloc: str, pre_path: str | None, output: str, function: str | None = None, compare: str | None = None,
         opts: Options | None = None) -> int:
    """Verify ALLOC (and COMPARE) against PRE, and write the view to OUTPUT; exit 0."""
    fmt = output_format(output)
    if fmt == "png" and output == "-":
        raise InputError("a PNG needs a file name", output, 0, 0)
    opts = opts or Options()
    pre = only_function(read_module(pre_path), function) if pre_path else None
    sides: list[AllocationView] = []
    for path in [alloc] + ([compare] if compare else []):
        post = only_function(read_module(path), function)
        sides.append(build_side(post, pre, verify_modules(post, pre, opts), opts.mcpu))
    view = View(sides, _title(sides))
    inputs = [alloc, pre_path, compare]
    if fmt == "png":
        from verilocc.view.figure import render_png

        write_output(output, render_png(view), inputs)
    else:
        write_output(output, render_html(view), inputs)
    return 0
