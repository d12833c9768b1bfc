"""What each failed single-shot answer of an `eval` run got wrong.

The held-out functions are those of the run's own command (eval.json's `meta`, read with
`verilocc eval`'s parser and `eval_cases`). For every one that fits and whose single shot was not
VERIFIED, the model's greedy unconstrained answer is decoded again (the call `verilocc eval`
makes, with the run's seed), verified, and summarised: the lines that name no listed choice
(with the first one's message) and the kinds of the verifier's errors. With `--all`, every
function that fits is decoded and verified, and the last line counts the VERIFIED ones: the
single-shot rate of another model (`--model`) on the same functions, without the rest of an
`eval` run; it also counts the VERIFIED answers with fewer waves per SIMD than LLVM's greedy
allocator (the run's `greedy` column) and names them. `--functions` limits the run to some
`target/name`s; `--no-steer` decodes without steering (`verilocc.llm.decode`). Run from the
checkout, where the command ran:

    python bench/model_eval/single_shot_failures.py [--eval bench/model_eval/eval.json] [--model DIR] [--all]
        [--functions gfx1100/sgemm_128x128_t8x8,...] [--no-steer]
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections import Counter
from pathlib import Path

from verilocc.cli import build_parser
from verilocc.llm.choices import ChoiceTables
from verilocc.llm import DEFAULT_MODEL
from verilocc.llm.commands import eval_cases
from verilocc.llm.decode import propose_many
from verilocc.llm.evaluate import Verifier
from verilocc.llm.lm import load_lm
from verilocc.llm.problem import build_problem, single_function
from verilocc.verify import Options, function_target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", default="bench/model_eval/eval.json", help="an eval.json (default %(default)s)")
    ap.add_argument("--model", help="the model (default: the run's --model where it exists, else the shipped one)")
    ap.add_argument("--all", action="store_true",
                    help="decode every function that fits, not only the run's failures, and count the VERIFIED")
    ap.add_argument("--functions", help="only these target/name pairs, comma-separated")
    ap.add_argument("--no-steer", action="store_true", help="decode without steering towards the first fit's waves")
    args = ap.parse_args()
    report = json.loads(Path(args.eval).read_text(encoding="utf-8"))
    run = build_parser().parse_args(shlex.split(report["meta"]["command"])[1:])
    fits = {(f["target"], f["name"]) for f in report["functions"] if f["fits"]}
    failed = {(f["target"], f["name"]) for f in report["functions"] if f["fits"] and not f["single_shot"]}
    todo = fits if args.all else failed
    if args.functions:
        todo = {tuple(f.split("/", 1)) for f in args.functions.split(",")} & fits  # type: ignore[misc]
    greedy = {(f["target"], f["name"]): f["greedy"] for f in report["functions"] if f.get("greedy")}
    verified = 0
    fewer: list[str] = []
    model = args.model or (run.model if run.model and Path(run.model).exists() else str(DEFAULT_MODEL))
    lm = load_lm(model)
    opts = Options(timeout_s=run.timeout, seed=run.seed)
    for case in eval_cases(run):
        if (case.target, case.name) not in todo:
            continue
        fn = single_function(case.pre)
        problem = build_problem(fn, function_target(fn, None, case.pre.file))
        first = propose_many(lm, problem, samples=1, constrained=False, tables=ChoiceTables(problem),
                             greedy_first=True, seed=run.seed, steer=not args.no_steer)[0]
        _, verdict = Verifier(case.pre, problem, opts)(case.pre, problem, first.regs, first.findings, opts)
        if verdict.verdict.name == "VERIFIED":
            verified += 1
            usage, theirs = problem.usage(first.regs), greedy.get((case.target, case.name))
            if theirs and usage["waves"] < theirs["waves"]:
                fewer.append(f"{case.target}/{case.name}")
                print(f"{case.target}/{case.name}: VERIFIED, {usage['waves']} waves/SIMD ({usage['vgpr']} VGPRs, "
                      f"{usage['agpr']} AGPRs) where LLVM's greedy allocator has {theirs['waves']} ({theirs['vgpr']}, "
                      f"{theirs['agpr']}); decoding steered from line {first.steered_from}")
            if args.all or args.functions:
                continue
        errors = Counter(f.kind for f in verdict.findings if f.severity == "error")
        said = first.findings[0].message if first.findings else ""
        print(f"{case.target}/{case.name}: {len(first.findings)} line(s) naming no listed choice, "
              f"{verdict.verdict.name}, errors {dict(sorted(errors.items()))}; {said}")
    if args.all or args.functions:
        print(f"single shot: {verified} of {len(todo)} functions that fit VERIFIED, {len(fewer)} of them with fewer "
              f"waves than greedy ({model})")


if __name__ == "__main__":
    main()
