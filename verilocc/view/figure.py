"""The view as a figure for papers and READMEs: a PNG drawn with matplotlib.

Per function (and per allocation, side by side with `--compare`): the occupancy grid with
program points left to right and registers bottom to top (SGPRs, VCC, VGPRs, AGPRs), each
live range a bar in the colour of the value it holds; spill and reload points marked on the
axis; every finding on the grid (the overwritten registers red at the overwriting
instruction, a ring at the reader, a dashed line over the stretch the old value was still
needed) and its message below; under it the pressure curve with the budget and the
waves/SIMD thresholds. matplotlib is imported here only, when a PNG is asked for. The bytes
are deterministic for one matplotlib version (no date or software stamp in the file).
"""

from __future__ import annotations

import colorsys
import io
import textwrap
from typing import Any

from verilocc.view.model import FunctionView, View

_FILE_BANDS = {"sgpr": "#fbf4e8", "special": "#f0f0f0", "vgpr": "#eaf1fb", "agpr": "#f3ecfa"}
_FILE_LABELS = {"sgpr": "SGPR", "special": "VCC", "vgpr": "VGPR", "agpr": "AGPR"}
_VERDICT_COLOURS = {"VERIFIED": "#1a7f37", "REJECTED": "#c62828", "UNKNOWN": "#b26a00"}


def value_colour(label: str, v: int) -> tuple[float, float, float]:
    """The page's colour of value `v` (`assets/page.js`, colourOf), as RGB."""
    if label == "no value":
        return (0.6, 0.6, 0.6)
    if label == "spilled SGPRs":
        return (0.91, 0.64, 0.23)
    if label.endswith("(fixed)") or label.endswith("(live-in)"):
        return colorsys.hls_to_rgb(((v * 47) % 360) / 360, 0.70, 0.18)
    k = int(label[1:]) if label[:1] == "%" and label[1:].isdigit() else v  # by the register's number
    return colorsys.hls_to_rgb(((k * 137.508) % 360) / 360, 0.60 if k % 2 else 0.70, 0.62)


def _grid(ax: Any, fv: FunctionView) -> None:
    from matplotlib.patches import Rectangle

    occ = fv.occupancy
    n_points, n_cols = len(occ.points), len(occ.columns)
    ax.set_xlim(-0.5, n_points - 0.5)
    ax.set_ylim(-0.5, n_cols - 0.5)
    # Bands per register file, then one bar per run.
    start = 0
    ticks, labels = [], []
    for c in range(1, n_cols + 1):
        if c == n_cols or occ.columns[c].file != occ.columns[start].file:
            file = occ.columns[start].file
            ax.add_patch(Rectangle((-0.5, start - 0.5), n_points, c - start, color=_FILE_BANDS[file], lw=0, zorder=0))
            ticks.append((start + c - 1) / 2)
            labels.append(f"{_FILE_LABELS[file]}\n{occ.columns[start].name}-{occ.columns[c - 1].name}"
                          if c - start > 1 else _FILE_LABELS[file])
            if c < n_cols:
                ax.axhline(c - 0.5, color="white", lw=1.5, zorder=1)
            start = c
    colours = [value_colour(v.label, k) for k, v in enumerate(occ.values)]
    thin = 0.12 if n_cols <= 64 else 0.0
    for c, runs in enumerate(occ.runs):
        for first, length, value in runs:
            ax.add_patch(Rectangle((first - 0.5 + 0.04, c - 0.5 + thin), length - 0.08, 1 - 2 * thin,
                                   color=colours[value], lw=0, zorder=2))
    small = n_cols <= 48 and n_points <= 120
    if small:  # every register named, and the value on each long enough bar
        ax.set_yticks(range(n_cols), [c.name for c in occ.columns], fontsize=6.5, parse_math=False)
        for tick, label in zip(ticks, labels):
            ax.annotate(label.split("\n")[0], (0, tick), xycoords=("axes fraction", "data"), xytext=(-34, 0),
                        textcoords="offset points", ha="right", va="center", fontsize=8, fontweight="bold")
        for c, runs in enumerate(occ.runs):
            for first, length, value in runs:
                if length >= 3 and occ.values[value].label.startswith("%"):
                    ax.text(first + length / 2 - 0.5, c, occ.values[value].label, fontsize=6, ha="center",
                            va="center", zorder=3, color="#1d2330", parse_math=False)
    else:
        ax.set_yticks(ticks, labels, fontsize=8, parse_math=False)
    for label, first in occ.block_starts[1:]:
        ax.axvline(first - 0.5, color="#9aa1ae", lw=0.6, zorder=3)
    for p, point in enumerate(occ.points):
        if point.kind in ("spill", "reload"):
            ax.plot([p], [-0.5], marker="^", color="#c77800" if point.kind == "spill" else "#008080",
                    markersize=5, clip_on=False, zorder=5)
    for number, m in enumerate(fv.marks, start=1):
        if m.point is None:
            continue
        # The finding's own instruction is the writer unless it is the reader.
        writer = m.writer if m.writer is not None or m.reader == m.point else m.point
        if not m.columns:
            ax.axvspan(m.point - 0.5, m.point + 0.5, color="#c62828", alpha=0.12, zorder=1)
            continue
        lo, hi = min(m.columns), max(m.columns)
        ax.annotate(str(number), (m.point, hi + 0.5), xytext=(0, 4), textcoords="offset points", fontsize=7,
                    ha="center", color="white", fontweight="bold", zorder=7,
                    bbox={"boxstyle": "circle,pad=0.2", "fc": "#c62828", "ec": "none"})
        if writer is not None:
            for c in m.columns:
                ax.add_patch(Rectangle((writer - 0.5, c - 0.5), 1, 1, color="#d62020", lw=0, zorder=4))
            ax.add_patch(Rectangle((writer - 0.5, lo - 0.5), 1, hi - lo + 1, fill=False, ec="#7f0000", lw=1.4,
                                   zorder=5))
        if m.reader is not None:
            ax.add_patch(Rectangle((m.reader - 0.5, lo - 0.5), 1, hi - lo + 1, fill=False, ec="#c62828", lw=2.0,
                                   zorder=5))
            ax.annotate("reads", (m.reader + 0.6, hi + 0.4), color="#c62828", fontsize=7, fontweight="bold",
                        zorder=6, annotation_clip=False)
            if writer is not None and m.reader > writer:
                ax.plot([writer + 0.5, m.reader - 0.5], [(lo + hi) / 2] * 2, color="#c62828", lw=1.2, ls="--",
                        zorder=5)
    step = max(1, n_points // 12)
    ax.set_xticks(range(0, n_points, step), [str(occ.points[p].line) for p in range(0, n_points, step)], fontsize=7,
                  parse_math=False)
    ax.tick_params(axis="x", length=2)


def _curve(ax: Any, fv: FunctionView) -> None:
    res, occ = fv.resources, fv.occupancy
    xs = range(len(occ.points))
    ax.plot(xs, res.vector_live, color="#1f5fbf", lw=1.3, label="VGPR+AGPR live" if res.unified_vector_file else "VGPR live")
    ax.plot(xs, occ.pressure["sgpr"], color="#d35400", lw=1.1, label="SGPR live")
    now = next((n for w, n in res.vector_thresholds if w == res.waves), None)
    top = max(8.0, res.peak_live * 1.15, max(occ.pressure["sgpr"], default=0) * 1.15, (now or 0) * 1.08)
    for w, n in res.vector_thresholds:
        if n <= top:
            ax.axhline(n, color="#8a8f99", lw=0.8, ls=(0, (3, 3)))
            ax.annotate(f"{w} waves", (1.0, n), xycoords=("axes fraction", "data"), xytext=(3, 0),
                        textcoords="offset points", fontsize=7, color="#5d6678", va="center")
    budget = res.limits.total_vector if res.unified_vector_file else res.limits.vgprs
    if budget <= top:
        ax.axhline(budget, color="#c62828", lw=1.0, ls="--")
    ax.plot([res.peak_point], [res.peak_live], "o", color="#c62828", markersize=4)
    ax.set_ylim(0, top)
    ax.set_xlim(-0.5, len(occ.points) - 0.5)
    ax.set_ylabel("live", fontsize=8)
    ax.set_xlabel("instruction (source line)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_xticks([])
    ax.legend(fontsize=7, loc="upper left", frameon=False, ncol=2)


def _caption(fv: FunctionView) -> str:
    res = fv.resources
    head = (f"VGPR {res.vgprs}  AGPR {res.agprs}  SGPR {res.sgprs_total}  scratch {res.scratch_bytes} B  "
            f"spills {res.sgpr_spills + res.vector_spills}  {res.waves} waves/SIMD "
            f"(limited by {'; '.join(res.limited_by)})")
    lines = [head]
    for number, m in enumerate(fv.marks[:4], start=1):
        f = m.finding
        lines.extend(textwrap.wrap(f"{number}: {f.severity} [{f.layer}/{f.kind}] {f.message}", 150,
                                   subsequent_indent="    "))
    if len(fv.marks) > 4:
        lines.append(f"and {len(fv.marks) - 4} more finding(s)")
    return "\n".join(lines)


def render_png(view: View, dpi: int = 130) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = view.function_names()
    sides = view.sides
    fig = plt.figure(figsize=(7.5 * len(sides) + 4.5, 6.4 * len(names)), dpi=dpi)
    outer = fig.add_gridspec(len(names), len(sides), hspace=0.45, wspace=0.12)
    for row, name in enumerate(names):
        for col, side in enumerate(sides):
            fv = next((f for f in side.functions if f.name == name), None)
            inner = outer[row, col].subgridspec(3, 1, height_ratios=[3.2, 1.2, 0.9], hspace=0.12)
            if fv is None:
                ax = fig.add_subplot(inner[0])
                ax.set_axis_off()
                ax.set_title(f"{name}: not in {side.file}", fontsize=9, parse_math=False)
                continue
            grid_ax = fig.add_subplot(inner[0])
            _grid(grid_ax, fv)
            verdict = fv.verdict.value if fv.verdict is not None else "not verified"
            grid_ax.set_title(f"{verdict}  {name} on {fv.target.name}  ({side.file})", fontsize=10, loc="left",
                              color=_VERDICT_COLOURS.get(verdict, "#1d2330"), fontweight="bold", parse_math=False)
            _curve(fig.add_subplot(inner[1]), fv)
            text_ax = fig.add_subplot(inner[2])
            text_ax.set_axis_off()
            text_ax.text(0, 1, _caption(fv), fontsize=7.5, va="top", ha="left", family="monospace",
                         transform=text_ax.transAxes, parse_math=False)
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None}, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return out.getvalue()
