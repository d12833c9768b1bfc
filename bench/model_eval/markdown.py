"""The summary of a `verilocc eval` run as a Markdown table (docs/measurements.md).

One row per group of eval.json's summary: all, each family, then each family and target, in
the order `verilocc eval` prints them. Run from the checkout:

    python bench/model_eval/markdown.py [bench/model_eval/eval.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ARMS = ("feedback", "resample", "text", "plain")


def pct(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}".rstrip("0").rstrip(".") + "%"


def row(name: str, x: dict[str, Any]) -> str:
    err = x["single_shot_line_error"]
    cells = [
        name, f"{x['functions']} ({x['fit']})", pct(x["single_shot"]), pct(x.get("single_shot_unsteered")),
        "-" if err is None else f"{1000 * err:g}", pct(x["pass@1"]), pct(x["pass@10"]),
        f"{pct(x['pass@100'])} ({x['pass@100_functions']})",
        " / ".join(pct(x[f"verified_within_rounds_{a}"]) for a in ARMS),
        " / ".join("-" if x[f"mean_rounds_{a}"] is None else f"{x[f'mean_rounds_{a}']:.2f}" for a in ARMS),
        pct(x["constrained"]), str(len(x["fewer_waves_than_greedy"])),
        str(len(x.get("unsteered_fewer_waves_than_greedy", []))),
        f"{len(x['allocate_fewer_waves_than_greedy'])} of {x['allocate_functions']}",
        f"{x['mean_seconds_per_proposal']:.2f} / {x['max_seconds_per_proposal']:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/model_eval/eval.json")
    report = json.loads(path.read_text(encoding="utf-8"))
    rounds, hot = report["meta"]["rounds"], report["meta"].get("rounds_temperature", report["meta"]["temperature"])
    head = ["family / target", "functions (fit)", "single shot", "single shot unsteered", "errors per 1k lines",
            "pass@1", "pass@10", "pass@100 (functions with 100 samples)",
            f"VERIFIED within {rounds} rounds at T={hot:g}: feedback / resample / text / none",
            "mean rounds: feedback / resample / text / none", "constrained first answer", "waves below greedy",
            "unsteered below greedy", "allocate below greedy", "s/proposal mean / max"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    summary = report["summary"]
    for name in sorted(summary, key=lambda n: (n != "all", "/" in n, n)):
        print(row(name, summary[name]))


if __name__ == "__main__":
    main()
