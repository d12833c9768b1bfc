"""Training examples from pre/post MIR pairs, split by kernel source.

An example is one function: its normalised header and one line per virtual register with
LLVM's register as the answer (`assignment_from_allocation` on the pair). Registers LLVM split
or spilled have no single answer: their answer is `?` (no loss) and they occupy nothing in the
hints of later lines. Hints are computed from LLVM's earlier answers (teacher forcing), as the
decoder computes them from its own. A few lines get a `! R` ban of a register that is not the
answer, so the model learns what a counterexample's ban means. Held-out kernels are whole
sources (`flash_attn.hip`, `softmax.hip` by default): no function of a held-out source is
trained on, whatever its target, compiler or variant.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from verilocc.rewrite.assignment import assignment_from_allocation
from verilocc.analysis.operands import VReg
from verilocc.mir.parser import read_module
from verilocc.llm.normalise import header_text, line_prefix, reg_token
from verilocc.llm.problem import build_problem, single_function
from verilocc.target import PhysReg, get_target

HELD_OUT_SOURCES = ("flash_attn.hip", "softmax.hip")
BAN_RATE = 0.05


@dataclass(frozen=True)
class Pair:
    pre: Path
    post: Path
    target: str
    kernel: str
    origin: str  # "corpus", "llc-19", "llc-22"


def find_pairs(root: Path, origin: str) -> list[Pair]:
    out: list[Pair] = []
    for pre in sorted(root.glob("*/*.pre.mir")):
        post = pre.with_name(pre.name[: -len(".pre.mir")] + ".post.mir")
        if post.exists():
            out.append(Pair(pre, post, pre.parent.name, pre.name[: -len(".pre.mir")], origin))
    return out


def kernel_source(kernel: str, sources: dict[str, str]) -> str:
    if kernel in sources:
        return sources[kernel]
    base = kernel.removesuffix("_nounroll")
    return sources.get(base, base)


def example_from_pair(pair: Pair, source: str, seed: int = 0) -> dict[str, object]:
    pre, post = read_module(pair.pre), read_module(pair.post)
    fn = single_function(pre)
    target = get_target(fn.target_cpu or pair.target)
    problem = build_problem(fn, target)
    derived = assignment_from_allocation(pre, post, target.name)
    rng = random.Random(f"{seed}:{pair.origin}:{pair.target}:{pair.kernel}")
    chosen: dict[VReg, PhysReg] = {}
    lines: list[str] = []
    answers: list[str] = []
    for k, v in enumerate(problem.order):
        label = derived.regs.get(v)
        bans: list[PhysReg] = []
        if label is not None and rng.random() < BAN_RATE:
            others = [r for r in problem.info[v].candidates[:64] if r != label]
            if others:
                bans.append(rng.choice(others))
        text, _ = line_prefix(problem, k, v, chosen, bans)
        lines.append(text)
        answers.append(reg_token(label) if label is not None else "?")
        if label is not None:
            chosen[v] = label
    usage = problem.usage(chosen)
    return {"kernel": pair.kernel, "source": source, "target": target.name, "origin": pair.origin,
            "pre": str(pair.pre), "header": header_text(target, problem), "lines": lines, "answers": answers,
            "unknown": len(derived.split) + len(derived.missing), "usage": usage}


def _example_job(job: tuple[Pair, str]) -> dict[str, object] | str:
    pair, source = job
    try:
        return example_from_pair(pair, source)
    except Exception as e:  # noqa: BLE001 - one unreadable pair must not stop the build
        return f"{type(e).__name__}: {e}"


def build_examples(pairs: list[Pair], sources: dict[str, str], out: Path, held_out: tuple[str, ...],
                   progress: Callable[[str], None], jobs: int = 1) -> dict[str, int]:
    """Write train.jsonl and heldout.jsonl (one example per line, in `pairs` order) and manifest.tsv."""
    from concurrent.futures import ProcessPoolExecutor

    counts = {"train": 0, "heldout": 0, "failed": 0, "train_lines": 0}
    out.mkdir(parents=True, exist_ok=True)
    work = [(p, kernel_source(p.kernel, sources)) for p in pairs]
    with (out / "train.jsonl").open("w", encoding="utf-8") as tr, (out / "heldout.jsonl").open("w", encoding="utf-8") as ho, \
            (out / "manifest.tsv").open("w", encoding="utf-8") as man, ProcessPoolExecutor(max_workers=jobs) as pool:
        man.write("split\torigin\ttarget\tkernel\tsource\tvregs\tunknown\n")
        for (pair, source), ex in zip(work, pool.map(_example_job, work)):
            split = "heldout" if source in held_out else "train"
            if isinstance(ex, str):
                counts["failed"] += 1
                progress(f"skip {pair.origin} {pair.target}/{pair.kernel}: {ex}")
                continue
            (ho if split == "heldout" else tr).write(json.dumps(ex) + "\n")
            counts[split] += 1
            if split == "train":
                counts["train_lines"] += len(ex["lines"])  # type: ignore[arg-type]
            man.write(f"{split}\t{pair.origin}\t{pair.target}\t{pair.kernel}\t{source}\t{len(ex['lines'])}\t{ex['unknown']}\n")  # type: ignore[arg-type]
            progress(f"{split} {pair.origin} {pair.target}/{pair.kernel}")
    return counts


def read_examples(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
