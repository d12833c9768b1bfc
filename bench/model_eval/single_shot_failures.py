"""What each failed single-shot answer of an `eval` run got wrong.

For every function that fits and whose single shot was not VERIFIED in EVAL.json, the model's
greedy unconstrained answer is decoded again (the same call `verilocc eval` makes), verified,
and summarised: the lines that name no listed choice (with the first such message) and the
kinds of the verifier's errors. The cases are read as `make model-eval` reads them.

    python bench/model_eval/single_shot_failures.py [--eval bench/model_eval/eval.json] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from verilocc.llm.build import read_manifest
from verilocc.llm.choices import ChoiceTables
from verilocc.llm.commands import DEFAULT_MODEL
from verilocc.llm.decode import propose_many
from verilocc.llm.evaluate import Verifier, kernel_cases, llvm_test_cases
from verilocc.llm.lm import load_lm
from verilocc.llm.problem import build_problem, single_function
from verilocc.llm import HELD_OUT_SOURCES
from verilocc.verify import Options, function_target

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", default=str(ROOT / "bench" / "model_eval" / "eval.json"))
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--kernels", default=str(ROOT.parent / "shared" / "kernels"))
    args = ap.parse_args()
    report = json.loads(Path(args.eval).read_text())
    failed = {(f["target"], f["name"]) for f in report["functions"] if f["fits"] and not f["single_shot"]}
    targets = sorted({t for t, _ in failed})
    sources: dict[str, str] = {}
    for manifest in (Path(args.kernels) / "manifest.txt", ROOT / "bench" / "model_eval" / "heldout_manifest.txt"):
        sources.update((kv.name, kv.source) for kv in read_manifest(manifest))
    roots = [ROOT.parent / "shared" / "corpus", ROOT / "build" / "heldout" / "pairs-llc-19",
             ROOT / "build" / "heldout-more" / "pairs-llc-19"]
    cases = kernel_cases([r for r in roots if r.is_dir()], targets, sources, HELD_OUT_SOURCES, None)
    if (ROOT / "build" / "llvm-tests").is_dir():
        cases += llvm_test_cases(ROOT / "build" / "llvm-tests", targets, 10)
    lm = load_lm(args.model)
    for case in cases:
        if (case.target, case.name) not in failed:
            continue
        fn = single_function(case.pre)
        problem = build_problem(fn, function_target(fn, None, case.pre.file))
        first = propose_many(lm, problem, samples=1, constrained=False, tables=ChoiceTables(problem),
                             greedy_first=True, seed=report["meta"]["seed"])[0]
        _, verdict = Verifier(case.pre, problem, Options())(case.pre, problem, first.regs, first.findings, Options())
        errors = Counter(f.kind for f in verdict.findings if f.severity == "error")
        said = first.findings[0].message if first.findings else ""
        print(f"{case.target}/{case.name}: {len(first.findings)} line(s) naming no listed choice, "
              f"{verdict.verdict.name}, errors {dict(sorted(errors.items()))}; {said}")


if __name__ == "__main__":
    main()
