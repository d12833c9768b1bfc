"""Compare the training data of two teachers: `verilocc dataset build` with LLVM's answers and
with `--teacher solver`, on the same pairs (docs/allocate.md#training-data).

    verilocc dataset build ... --no-feedback --out build/dataset-llvm
    verilocc dataset build ... --no-feedback --teacher solver --out build/dataset-solver
    python bench/model_eval/teachers.py build/dataset-llvm build/dataset-solver [--markdown OUT.md]

Per training function (matched by llc version, target and kernel): which teacher the solver build
chose; the waves, VGPR+AGPR and SGPRs of LLVM's allocation (its post function) and of the
teacher chosen; and the lines whose answer is `?` (a register outside the listed choices, or a
range LLVM split or spilled: no loss).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _examples(data: Path) -> dict[tuple[str, str, str], dict[str, object]]:
    out = {}
    for line in (data / "train.jsonl").read_text(encoding="utf-8").splitlines():
        ex = json.loads(line)
        if not ex["feedback"]:
            # `--pairs DIR` names the origin after DIR (pairs-llc-19), the build's own pairs after llc
            out[(str(ex["origin"]).removeprefix("pairs-"), ex["target"], ex["kernel"])] = ex
    return out


def compare(llvm_dir: Path, solver_dir: Path) -> dict[str, int]:
    llvm, solver = _examples(llvm_dir), _examples(solver_dir)
    both = sorted(set(llvm) & set(solver))
    t = {"functions": len(both), "solver_taught": 0, "more_waves": 0, "fewer_waves": 0, "fewer_vector": 0,
         "more_vector": 0, "fewer_sgprs": 0,
         "vector_llvm": 0, "vector_solver": 0, "sgpr_llvm": 0, "sgpr_solver": 0, "lines": 0,
         "unanswered_llvm": 0, "unanswered_solver": 0, "unanswered_llvm_taught": 0, "unanswered_solver_taught": 0,
         "lines_taught": 0}
    for key in both:
        a, b = llvm[key], solver[key]
        taught = b["teacher"] == "solver"
        ua, ub = b["llvm_usage"], b["usage"]  # LLVM's post function's registers; the teacher's
        t["solver_taught"] += taught
        t["more_waves"] += ub["waves"] > ua["waves"]
        t["fewer_waves"] += ub["waves"] < ua["waves"]
        t["fewer_vector"] += ub["vgpr"] + ub["agpr"] < ua["vgpr"] + ua["agpr"]
        t["more_vector"] += ub["vgpr"] + ub["agpr"] > ua["vgpr"] + ua["agpr"]
        t["fewer_sgprs"] += ub["sgpr"] < ua["sgpr"]
        t["vector_llvm"] += ua["vgpr"] + ua["agpr"]
        t["vector_solver"] += ub["vgpr"] + ub["agpr"]
        t["sgpr_llvm"] += ua["sgpr"]
        t["sgpr_solver"] += ub["sgpr"]
        t["lines"] += len(a["answers"])
        qa, qb = a["answers"].count("?"), b["answers"].count("?")
        t["unanswered_llvm"] += qa
        t["unanswered_solver"] += qb
        if taught:
            t["lines_taught"] += len(a["answers"])
            t["unanswered_llvm_taught"] += qa
            t["unanswered_solver_taught"] += qb
    return t


def markdown(t: dict[str, int]) -> str:
    def pct(n: int, d: int) -> str:
        return f"{100 * n / d:.1f}%" if d else "-"

    rows = [
        ("training functions (both builds)", str(t["functions"]), ""),
        ("taught by the solver", str(t["solver_taught"]), ""),
        ("more waves than LLVM's", str(t["more_waves"]), ""),
        ("fewer waves than LLVM's", str(t["fewer_waves"]), ""),
        ("fewer VGPR+AGPR than LLVM's", str(t["fewer_vector"]), ""),
        ("more VGPR+AGPR than LLVM's", str(t["more_vector"]), ""),
        ("fewer SGPRs than LLVM's", str(t["fewer_sgprs"]), ""),
        ("VGPR+AGPR in total", str(t["vector_llvm"]), str(t["vector_solver"])),
        ("SGPRs in total", str(t["sgpr_llvm"]), str(t["sgpr_solver"])),
        ("lines answered `?` (all functions)", f"{t['unanswered_llvm']} of {t['lines']} ({pct(t['unanswered_llvm'], t['lines'])})",
         f"{t['unanswered_solver']} ({pct(t['unanswered_solver'], t['lines'])})"),
        ("lines answered `?` (functions the solver taught)",
         f"{t['unanswered_llvm_taught']} of {t['lines_taught']} ({pct(t['unanswered_llvm_taught'], t['lines_taught'])})",
         f"{t['unanswered_solver_taught']} ({pct(t['unanswered_solver_taught'], t['lines_taught'])})"),
    ]
    out = ["| measure | LLVM's answers | `--teacher solver` (the teacher chosen) |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("llvm", type=Path, help="dataset built with LLVM's answers")
    ap.add_argument("solver", type=Path, help="dataset built on the same pairs with --teacher solver")
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    args = ap.parse_args()
    for d in (args.llvm, args.solver):
        if not (d / "train.jsonl").is_file():
            print(f"{d}: error: no train.jsonl (run verilocc dataset build)", file=sys.stderr)
            return 2
    text = markdown(compare(args.llvm, args.solver))
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
