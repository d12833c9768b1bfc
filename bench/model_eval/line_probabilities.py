#!/usr/bin/env python3
"""What the model gives each answer at one line of a proposal, and how that moves with the line's
dense ids.

Reads a transcript of `verilocc allocate --transcript T.json` (its first attempt's prompt and
output), rebuilds the context of line K as decoding sees it (the header, the `--context` lines
before K with their answers, line K up to its `:`) and prints the model's most likely answers
there; with `--shift D[,D]`, the same with every dense id `%n` of those lines written `%(n+D)`:
the ids name lines, they say nothing about the allocation. Without `--line`, the first line
whose answer names no listed choice.

    verilocc allocate PRE.mir --no-constrained --rounds 1 --no-repair --transcript /tmp/t.json -o /tmp/o.mir
    python bench/model_eval/line_probabilities.py /tmp/t.json [--model DIR] [--line K] [--shift 0,-32,3,40]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verilocc.llm.choices import NO_CHOICE, SLOTS  # noqa: E402
from verilocc.llm import DEFAULT_MODEL  # noqa: E402
from verilocc.llm.lm import load_lm  # noqa: E402

_ID = re.compile(r"^%(\d+)")


def names_no_listed_choice(line: str) -> bool:
    head, _, answer = line.rpartition(":")
    listed = sum(w != NO_CHOICE for w in head.split()[-SLOTS:])
    m = re.fullmatch(r"@(\d+)", answer.strip())
    return m is None or int(m.group(1)) >= listed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("transcript")
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--line", type=int, help="line number K, from 0 (default: the first answer naming no listed choice)")
    ap.add_argument("--context", type=int, default=20, help="lines before K in the context (default 20)")
    ap.add_argument("--shift", default="0", help="shifts of the dense ids (default 0)")
    ap.add_argument("--top", type=int, default=3)
    args = ap.parse_args()

    import torch

    attempt = json.loads(Path(args.transcript).read_text(encoding="utf-8"))["attempts"][0]
    lines = [ln for ln in attempt["output"].split("\n") if ln.strip()]
    k = args.line if args.line is not None else next((i for i, ln in enumerate(lines) if names_no_listed_choice(ln)), None)
    if k is None or not 0 <= k < len(lines):
        raise SystemExit(f"{args.transcript}: no such line (every answer names a listed choice)")
    lm = load_lm(args.model)
    head = lm.bos + lm.encode(attempt["prompt"].split("\n")[0]) + lm.line_end
    print(f"line {k}: {lines[k]}")
    for d in (int(x) for x in args.shift.split(",")):
        def shifted(s: str, d: int = d) -> str:
            return _ID.sub(lambda m: f"%{int(m.group(1)) + d}", s)
        ids = list(head)
        for ln in lines[max(0, k - args.context):k]:
            ids += lm.encode(shifted(ln)) + lm.line_end
        ids += lm.encode(shifted(lines[k].rpartition(":")[0]) + ":")
        probs = torch.softmax(lm.next_logits(ids).float(), -1)
        top = torch.topk(probs, args.top)
        said = ", ".join(f"{lm.decode([int(i)]).strip()} {float(p):.3f}" for p, i in zip(top.values, top.indices))
        print(f"ids shifted by {d:+d}: {said}")


if __name__ == "__main__":
    main()
