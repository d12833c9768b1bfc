"""Line by line: does round 2 repeat what a counterexample blamed, with and without the model reading it?

`verilocc eval`'s ablation counts functions VERIFIED within R rounds. At its temperature a
function either comes out right in round 1 or fails on new lines in every round, so that count
cannot tell whether the model reads a counterexample. This counts at the lines themselves.

The held-out functions are those of an `eval` run (eval.json's `meta`, as
`single_shot_failures.py` reads them). For each function that fits, `--samples` round-1
proposals are sampled at `--temperature` (default: the run's rounds temperature) and verified
as the loop verifies them. Each REJECTED one whose errors blame lines is a counterexample: the
feedback paragraph (`render_feedback`, as the loop renders it), the `!` marks (`bans_from`: for
each error, the register of the last line it names) and the confined lines (`confined_from`: a
decision that named no listed choice). Round 2 is drawn with every line decided again (no kept
lines), with the loop's seed for round 2 (`round_seed`), in four arms:

- `none`: nothing of the counterexample;
- `paragraph`: the paragraph in the prompt, no marks;
- `marks`: the `!` marks on the blamed lines' listed registers and the confined lines, no paragraph;
- `both`: the paragraph and the marks (the loop's `resample` arm).

At a marked line, round 2 repeats the error when it answers the banned register again; the model
reads the mark in its line (unconstrained decoding does not mask it). At a confined line it
repeats when it again names no listed choice; in the `marks` and `both` arms decoding masks such a
line to its listed choices, so only the other two arms can repeat there. The table gives the
blamed lines and the share repeated per arm; where the paragraph arm is below `none`, the model
reads the paragraph; per counterexample, the times the paragraph arm repeats fewer confined lines
than `none` and the times it repeats more (a sign test).

    python bench/model_eval/reads_counterexamples.py [--eval bench/model_eval/eval.json] [--model DIR]
        [--samples 4] [--temperature T] [--probe 8] [--max-vregs N] [--functions gfx90a/softmax_row,...] [-o FILE.json]
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
from pathlib import Path

from verilocc.analysis.operands import VReg
from verilocc.cli import build_parser
from verilocc.findings import Verdict
from verilocc.llm.choices import NO_CHOICE, SLOTS, ChoiceTables
from verilocc.llm import DEFAULT_MODEL
from verilocc.llm.commands import eval_cases
from verilocc.llm.decode import propose_many
from verilocc.llm.evaluate import Verifier
from verilocc.llm.lm import load_lm
from verilocc.llm.loop import bans_from, confined_from, round_seed
from verilocc.llm.normalise import rename_text
from verilocc.llm.problem import build_problem, single_function
from verilocc.report.render import render_feedback
from verilocc.target import PhysReg
from verilocc.verify import Options, function_target

ARMS = ("none", "paragraph", "marks", "both")


def listed_count(line: str) -> int:
    """The listed choices of a decoded line `%k ... c1 .. c8 : @j`."""
    return sum(w != NO_CHOICE for w in line.rpartition(":")[0].split()[-SLOTS:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", default="bench/model_eval/eval.json", help="an eval.json (default %(default)s)")
    ap.add_argument("--model", help="the model (default: the run's --model where it exists, else the shipped one)")
    ap.add_argument("--samples", type=int, default=4, help="round-1 proposals per function (default %(default)s; 0: the marks probe only)")
    ap.add_argument("--temperature", type=float, help="sampling temperature of both rounds (default: the run's rounds temperature)")
    ap.add_argument("--probe", type=int, default=8,
                    help="lines of the greedy answer given a `!` on their register (default %(default)s)")
    ap.add_argument("--max-vregs", type=int, help="only functions with at most this many virtual registers")
    ap.add_argument("--functions", help="only these target/name pairs, comma-separated")
    ap.add_argument("-o", "--out", help="write the counts as JSON here")
    args = ap.parse_args()
    report = json.loads(Path(args.eval).read_text(encoding="utf-8"))
    run = build_parser().parse_args(shlex.split(report["meta"]["command"])[1:])
    temperature = args.temperature if args.temperature is not None else report["meta"]["rounds_temperature"]
    todo = {(f["target"], f["name"]) for f in report["functions"]
            if f["fits"] and (args.max_vregs is None or f["vregs"] <= args.max_vregs)}
    if args.functions:
        todo &= {tuple(f.split("/", 1)) for f in args.functions.split(",")}  # type: ignore[operator]
    model = args.model or (run.model if run.model and Path(run.model).exists() else str(DEFAULT_MODEL))
    lm = load_lm(model)
    opts = Options(timeout_s=run.timeout, seed=run.seed)
    kinds = ("marked", "confined")
    # blamed[kind]: lines; repeats[arm][kind]: of them, repeated in round 2; clean[arm]: round-2
    # proposals that repeat no blamed line.
    blamed = dict.fromkeys(kinds, 0)
    repeats = {a: dict.fromkeys(kinds, 0) for a in ARMS}
    clean = dict.fromkeys(ARMS, 0)
    counterexamples = functions = 0
    probe = {"marked": 0, "repeated": 0, "others": 0, "others_changed": 0}
    rows: list[dict[str, object]] = []
    for case in eval_cases(run):
        if (case.target, case.name) not in todo:
            continue
        fn = single_function(case.pre)
        problem = build_problem(fn, function_target(fn, None, case.pre.file))
        tables = ChoiceTables(problem)
        check = Verifier(case.pre, problem, opts)
        firsts = propose_many(lm, problem, samples=args.samples, constrained=False, tables=tables, greedy_first=False,
                              temperature=temperature, seed=run.seed + 2) if args.samples else []
        greedy = propose_many(lm, problem, samples=1, constrained=False, tables=tables, greedy_first=True,
                              seed=run.seed)[0]
        lines = greedy.text.split("\n")
        open_lines = [k for k, v in enumerate(problem.order)
                      if v in greedy.regs and k < len(lines) and listed_count(lines[k]) >= 2]
        marked = random.Random(f"{case.target}/{case.name}").sample(open_lines, min(args.probe, len(open_lines)))
        if marked:
            probed = {problem.order[k]: [greedy.regs[problem.order[k]]] for k in marked}
            again = propose_many(lm, problem, samples=1, constrained=False, tables=tables, greedy_first=True,
                                 seed=run.seed, bans=probed)[0]
            probe["marked"] += len(probed)
            probe["repeated"] += sum(again.regs.get(v) in regs for v, regs in probed.items())
            others = [v for v in greedy.regs if v not in probed]
            probe["others"] += len(others)
            probe["others_changed"] += sum(again.regs.get(v) != greedy.regs[v] for v in others)
        used = 0
        for s, first in enumerate(firsts):
            _, rep = check(case.pre, problem, first.regs, first.findings, opts)
            if rep.verdict is Verdict.VERIFIED:
                continue
            bans: dict[VReg, list[PhysReg]] = {}
            bans_from(rep, problem, first.regs, bans)
            confine = confined_from(rep, problem)
            if not bans and not confine:
                continue
            feedback = render_feedback(rep, rename=lambda m: rename_text(m, problem))
            used += 1
            n_marked = sum(len(b) for b in bans.values())
            blamed["marked"] += n_marked
            blamed["confined"] += len(confine)
            row: dict[str, object] = {"target": case.target, "name": case.name, "sample": s,
                                      "marked": n_marked, "confined": len(confine)}
            for arm in ARMS:
                paragraph = feedback if arm in ("paragraph", "both") else ""
                marks = arm in ("marks", "both")
                second = propose_many(lm, problem, samples=1, constrained=False, feedback=paragraph,
                                      bans=bans if marks else None, confine=confine if marks else (),
                                      temperature=temperature, seed=round_seed(run.seed + 2 + s, 1), tables=tables,
                                      greedy_first=False)[0]
                again_marked = sum(second.regs.get(v) in regs for v, regs in bans.items())
                again_confined = sum(v not in second.regs for v in confine)
                repeats[arm]["marked"] += again_marked
                repeats[arm]["confined"] += again_confined
                clean[arm] += not again_marked and not again_confined
                row[arm] = {"marked": again_marked, "confined": again_confined}
            rows.append(row)
        counterexamples += used
        functions += bool(used)
        print(f"{case.target}/{case.name}: {used} counterexample(s) of {len(firsts)} samples", flush=True)

    def share(n: int, d: int) -> str:
        return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "-"

    print(f"\n{counterexamples} counterexamples from {functions} functions ({model}, temperature {temperature})\n")
    print("| round 2 | marked lines repeated | confined lines repeated | proposals repeating no blamed line |")
    print("|---|---|---|---|")
    for arm in ARMS:
        print(f"| {arm} | {share(repeats[arm]['marked'], blamed['marked'])} | "
              f"{share(repeats[arm]['confined'], blamed['confined'])} | {share(clean[arm], counterexamples)} |")
    fewer = sum(r["paragraph"]["confined"] < r["none"]["confined"] for r in rows)  # type: ignore[index]
    more = sum(r["paragraph"]["confined"] > r["none"]["confined"] for r in rows)  # type: ignore[index]
    print(f"\nconfined lines, the paragraph against none per counterexample: fewer repeated in {fewer}, more in {more}")
    print(f"marks probe: {share(probe['repeated'], probe['marked'])} of the marked lines answered their marked "
          f"register again; {share(probe['others_changed'], probe['others'])} of the other lines changed register")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": model, "temperature": temperature, "samples": args.samples,
                                              "counterexamples": counterexamples, "functions": functions,
                                              "blamed": blamed, "repeats": repeats, "clean": clean, "probe": probe,
                                              "paragraph_fewer": fewer, "paragraph_more": more,
                                              "rows": rows},
                                             indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
