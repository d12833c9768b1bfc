#!/usr/bin/env python3
"""Where counterexamples matter: held-out functions whose first proposal the verifier rejects.

The listed choices (`verilocc.llm.choices`) are free by the one interference relation, so a
proposal that takes listed choices only is REJECTED only where value flow or equivalence see
more than that relation (or where the function needs spill code). This finds such functions
among LLVM's AMDGPU tests (pairs of `scripts/llvm_tests_corpus.py`): the first listed choice on
every line (`--sweep`, what a model's greedy proposal is on almost every line), then, on each
function found, runs the model loop with greedy decoding for `--rounds` rounds with the
counterexample fed back and without it (the ablation), and writes a table and JSON.

    python3 bench/model_eval/feedback_gaps.py --llvm-tests build/llvm-tests \
        --targets gfx90a,gfx942,gfx1100,gfx906 -o bench/model_eval/feedback_gaps.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verilocc.findings import Verdict  # noqa: E402
from verilocc.llm.choices import ChoiceTables, replay  # noqa: E402
from verilocc.llm.loop import verify_regs  # noqa: E402
from verilocc.llm.problem import build_problem  # noqa: E402
from verilocc.mir.parser import read_module  # noqa: E402
from verilocc.verify import Options, function_target  # noqa: E402


def sweep(root: Path, targets: list[str]) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for target in targets:
        for pre_path in sorted((root / "19" / target).glob("*.pre.mir")):
            try:
                pre = read_module(pre_path)
            except Exception:  # noqa: BLE001 - unreadable: not a case
                continue
            for fn in pre.functions:
                if not fn.registers:
                    continue
                single = dataclasses.replace(pre, functions=[fn])
                try:
                    problem = build_problem(fn, function_target(fn, None, str(pre_path)))
                except Exception:  # noqa: BLE001
                    continue
                regs, bad = replay(ChoiceTables(problem), ["@0"] * len(problem.order))
                if bad:
                    continue  # no listed choice somewhere: needs spill code (or an unallocatable class)
                _, report = verify_regs(single, problem, regs, [], Options(timeout_s=30, seed=0))
                if report.verdict is not Verdict.VERIFIED:
                    kinds = sorted({f.kind for f in report.findings if f.severity == "error"})
                    found.append({"target": target, "file": str(pre_path), "function": fn.name,
                                  "vregs": len(problem.order), "verdict": report.verdict.value, "kinds": kinds})
                    print(f"{target} {pre_path.name} {fn.name}: {report.verdict.value} {kinds}", flush=True)
    return found


def ablation(cases: list[dict[str, object]], model: str, rounds: int) -> None:
    from verilocc.llm.lm import load_lm
    from verilocc.llm.loop import run_loop

    lm = load_lm(model)
    for case in cases:
        pre = read_module(str(case["file"]))
        single = dataclasses.replace(pre, functions=[f for f in pre.functions if f.name == case["function"]])
        for arm in (True, False):
            t0 = time.monotonic()
            res = run_loop(single, lm, samples=1, rounds=rounds, constrained=False, repair=False, use_feedback=arm)
            case["rounds_feedback" if arm else "rounds_plain"] = res.rounds if res.verified else None
            case["seconds_feedback" if arm else "seconds_plain"] = round(time.monotonic() - t0, 1)
        print(f"{case['target']} {Path(str(case['file'])).name} {case['function']}: rounds to VERIFIED with feedback "
              f"{case['rounds_feedback']}, without {case['rounds_plain']}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llvm-tests", type=Path, default=Path("build/llvm-tests"))
    ap.add_argument("--targets", default="gfx90a,gfx942,gfx1100,gfx906")
    ap.add_argument("--model", default=None, help="default: the shipped model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", type=Path, help="skip the sweep: the functions of an earlier JSON")
    ap.add_argument("-o", "--out", type=Path, default=Path("bench/model_eval/feedback_gaps.json"))
    args = ap.parse_args()
    t0 = time.monotonic()
    if args.cases:
        cases = json.loads(args.cases.read_text())["functions"]
    else:
        cases = sweep(args.llvm_tests, args.targets.split(","))
    if args.model != "none":
        from verilocc.llm import DEFAULT_MODEL

        ablation(cases, args.model or str(DEFAULT_MODEL), args.rounds)
    fixed = [c for c in cases if c.get("rounds_feedback")]
    plain = [c for c in cases if c.get("rounds_plain")]
    summary = {"functions": len(cases), "verified_with_feedback": len(fixed), "verified_without_feedback": len(plain),
               "rounds": args.rounds, "seconds": round(time.monotonic() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "functions": cases}, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
