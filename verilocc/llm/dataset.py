"""Training examples from pre/post MIR pairs, split by kernel source.

An example is one function: its normalised header and one line per virtual register with
LLVM's decision as the answer: the listed choice (`verilocc.llm.choices`) that is the register
LLVM gave it (`assignment_from_allocation` on the pair). Lines are listed against LLVM's
earlier registers (teacher forcing), as the decoder lists them against its own. Registers LLVM
split or spilled, and registers it chose outside the listed choices, have no answer: `?` (no
loss), and the state goes on with LLVM's register. A few lines get a `!` mark on a listed
register that is not the answer, as a counterexample's ban puts it, so the model learns that
such a choice is never the answer.

A feedback example is the same function as round 2 of the loop sees it: a round-1 proposal
(LLVM's decisions with one to three lines broken into decisions that name no listed choice,
as a model writes them) is verified by the loop's own `verify_regs`, its findings rendered by
`render_feedback` exactly as the loop renders them (names in the prompt's alphabet) and its
bans taken as the loop takes them (`bans_from`); the example is the header, that paragraph and
the lines with LLVM's decisions (for functions of up to `FEEDBACK_MAX_VREGS` virtual
registers: each costs a verification). Held-out kernels are whole sources (`flash_attn.hip`,
`sgemm_tiled.hip` by default): no function of a held-out source is trained on, whatever its
target, compiler or variant.

The teacher is LLVM's allocation, or with `teacher="solver"` the SMT allocator's where that is
the better one (`best_teacher`): the solver (`verilocc.allocators.optimal.solve_function`, no
spill code, within a time limit) allocates the training function, its answer is VERIFIED by
all three layers, and it replaces LLVM's when it ranks first in the order the decoder aims
for: more waves, no spill code, fewer VGPR+AGPR, fewer SGPRs, fewer copies left (COPY partners
in different registers, and LLVM's split ranges) (`teacher_rank`), LLVM's counted as its post
function uses registers; on a tie LLVM's stays.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from verilocc.allocators.usage import register_usage
from verilocc.analysis.instructions import is_spill_code
from verilocc.analysis.operands import VReg
from verilocc.llm import HELD_OUT_SOURCES  # noqa: F401 - part of this module's interface
from verilocc.llm.choices import ChoiceTables, answer_token
from verilocc.llm.normalise import header_text, line_text, output_finding, resolve
from verilocc.llm.problem import AllocationProblem, build_problem, single_function
from verilocc.mir.model import Function, Module
from verilocc.mir.parser import read_module
from verilocc.rewrite.assignment import assignment_from_allocation
from verilocc.target import PhysReg, get_target

BAN_RATE = 0.05
FEEDBACK_MAX_VREGS = 400  # feedback examples verify a proposal: of functions up to this size
TEACHERS = ("llvm", "solver")


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


def teacher_lines(problem: AllocationProblem, tables: ChoiceTables, teacher: dict[VReg, PhysReg],
                  rng: random.Random, bans: dict[VReg, list[PhysReg]] | None = None,
                  ban_rate: float = BAN_RATE) -> tuple[list[str], list[str]]:
    """The lines of a function and the teacher's decisions (`?` where it chose no listed choice)."""
    bans = bans or {}
    state = tables.start()
    lines: list[str] = []
    answers: list[str] = []
    for k, v in enumerate(problem.order):
        label = teacher.get(v)
        line_bans = list(bans.get(v, ()))
        if label is not None and rng.random() < ban_rate:
            listed, _ = tables.choices(state, k, line_bans)
            others = [c.reg for c in listed if c.reg != label]
            if others:
                line_bans.append(rng.choice(others))
        text, listed = line_text(problem, tables, state, k, line_bans)
        j = next((i for i, c in enumerate(listed) if c.reg == label and c.kind != "!"), None)
        lines.append(text)
        answers.append("?" if j is None else answer_token(j))
        tables.take(state, k, label)
    return lines, answers


def feedback_round(pre: Module, problem: AllocationProblem, tables: ChoiceTables, teacher: dict[VReg, PhysReg],
                   answers: list[str], rng: random.Random) -> tuple[str, dict[VReg, list[PhysReg]]] | None:
    """A round-1 proposal with broken lines, verified and fed back as the loop does it: the
    feedback paragraph and the bans of round 2 (None when no line can be broken)."""
    from verilocc.llm.loop import bans_from, verify_regs
    from verilocc.llm.normalise import rename_text
    from verilocc.report.render import render_feedback
    from verilocc.verify import Options

    decided = [k for k, a in enumerate(answers) if a != "?"]
    if not decided:
        return None
    broken = sorted(rng.sample(decided, min(len(decided), rng.randint(1, 3))))
    regs = dict(teacher)
    findings = []
    state = tables.start()
    for k, v in enumerate(problem.order):
        if k in broken:
            listed, _ = tables.choices(state, k)
            word = answer_token(rng.randint(len(listed), 15)) if len(listed) < 16 else "?"
            _, why = resolve(word, listed, v)
            findings.append(output_finding(problem, "<model>", k, why or ""))
            regs.pop(v, None)
        tables.take(state, k, regs.get(v))
    _, report = verify_regs(pre, problem, regs, findings, Options(timeout_s=30.0, seed=0))
    feedback = render_feedback(report, rename=lambda m: rename_text(m, problem))
    bans: dict[VReg, list[PhysReg]] = {}
    bans_from(report, problem, regs, bans)
    return feedback, bans


def has_spill_code(fn: Function) -> bool:
    """An allocated function with spill or restore instructions (`is_spill_code`)."""
    return any(is_spill_code(ins) for b in fn.blocks for ins in b.instructions)


def copies_apart(problem: AllocationProblem, regs: Mapping[VReg, PhysReg]) -> int:
    """COPY partners (virtual-virtual pairs once, virtual-physical ones) that `regs` puts in
    different registers: the copies an allocation leaves in the program."""
    fixed: set[tuple[VReg, PhysReg]] = set()
    virtual: set[tuple[VReg, VReg]] = set()
    for v, iv in problem.info.items():
        for p in iv.copies:
            if isinstance(p, PhysReg):
                fixed.add((v, p))
            else:
                a, b = sorted((v, p), key=str)
                virtual.add((a, b))
    n = sum(regs.get(v) not in (None, p) for v, p in fixed)
    for a, b in virtual:
        ra, rb = regs.get(a), regs.get(b)
        n += ra is not None and rb is not None and ra != rb
    return n


def teacher_rank(usage: Mapping[str, int], spills: bool, copies: int) -> tuple[int, ...]:
    """How good an allocation is as a teacher, smaller first: more waves, no spill code, fewer
    VGPR+AGPR, fewer SGPRs, fewer copies left (`usage` as `register_usage` counts it)."""
    return (-usage["waves"], int(spills), usage["vgpr"] + usage["agpr"], usage["sgpr"], copies)


@dataclass(frozen=True)
class LLVMAnswer:
    """LLVM's allocation of a function as a teacher: the registers of the virtual registers it
    kept whole (`assignment_from_allocation`), what its post function uses, whether that has
    spill code, and the ranges it split (each leaves a copy)."""

    regs: dict[VReg, PhysReg]
    usage: dict[str, int]
    spills: bool
    split: int

    def rank(self, problem: AllocationProblem) -> tuple[int, ...]:
        return teacher_rank(self.usage, self.spills, copies_apart(problem, self.regs) + self.split)


def best_teacher(problem: AllocationProblem, llvm: LLVMAnswer, timeout: float,
                 seed: int = 0) -> tuple[dict[VReg, PhysReg], str]:
    """The solver's VERIFIED allocation of the problem's function when it ranks before LLVM's
    (`teacher_rank`: LLVM's as its post function uses registers, with its spill code and split
    ranges), else LLVM's; and which one it is."""
    from verilocc.allocators.optimal import solve_function

    got = solve_function(problem.fn, problem.target, timeout=timeout, seed=seed, spill=False)
    if got.status not in ("optimal", "feasible") or any(v not in got.assignment for v in problem.order):
        return llvm.regs, "llvm"
    solver = {v: got.assignment[v] for v in problem.order}
    if teacher_rank(problem.usage(solver), False, copies_apart(problem, solver)) < llvm.rank(problem):
        return solver, "solver"
    return llvm.regs, "llvm"


def examples_from_pair(pair: Pair, source: str, seed: int = 0, feedback: bool = True, teacher_name: str = "llvm",
                       solver_timeout: float = 20.0) -> list[dict[str, object]]:
    """The plain example of a pair's function and, with `feedback`, its feedback example;
    `teacher_name` "solver": taught by `best_teacher`."""
    pre, post = read_module(pair.pre), read_module(pair.post)
    fn = single_function(pre)
    target = get_target(fn.target_cpu or pair.target)
    problem = build_problem(fn, target)
    tables = ChoiceTables(problem)
    derived = assignment_from_allocation(pre, post, target.name)
    post_fn = post.function(fn.name)
    llvm = LLVMAnswer(dict(derived.regs), register_usage(post_fn, target), has_spill_code(post_fn), len(derived.split))
    teacher, taught = llvm.regs, "llvm"
    unknown = len(derived.split) + len(derived.missing)
    if teacher_name == "solver":
        teacher, taught = best_teacher(problem, llvm, solver_timeout, seed)
        if taught == "solver":
            unknown = 0
    rng = random.Random(f"{seed}:{pair.origin}:{pair.target}:{pair.kernel}")
    lines, answers = teacher_lines(problem, tables, teacher, rng)
    base = {"kernel": pair.kernel, "source": source, "target": target.name, "origin": pair.origin,
            "pre": str(pair.pre), "header": header_text(target, problem), "unknown": unknown,
            "teacher": taught, "usage": problem.usage(teacher) if taught == "solver" else llvm.usage,
            "llvm_usage": llvm.usage}
    out: list[dict[str, object]] = [{**base, "feedback": "", "lines": lines, "answers": answers}]
    if feedback and len(problem.order) <= FEEDBACK_MAX_VREGS:
        got = feedback_round(pre, problem, tables, teacher, answers, rng)
        if got is not None:
            text, bans = got
            lines2, answers2 = teacher_lines(problem, tables, teacher, rng, bans, ban_rate=0.0)
            out.append({**base, "feedback": text, "lines": lines2, "answers": answers2})
    return out


def _example_job(job: tuple[Pair, str, bool, str, float]) -> list[dict[str, object]] | str:
    pair, source, feedback, teacher, solver_timeout = job
    try:
        return examples_from_pair(pair, source, feedback=feedback, teacher_name=teacher, solver_timeout=solver_timeout)
    except Exception as e:  # noqa: BLE001 - one unreadable pair must not stop the build
        return f"{type(e).__name__}: {e}"


def build_examples(pairs: list[Pair], sources: dict[str, str], out: Path, held_out: tuple[str, ...],
                   progress: Callable[[str], None], jobs: int = 1, feedback: bool = True, teacher: str = "llvm",
                   solver_timeout: float = 20.0) -> dict[str, int]:
    """Write train.jsonl and heldout.jsonl (one example per line, in `pairs` order; feedback
    examples for training pairs only) and manifest.tsv. `teacher` "solver": the training
    functions are taught by `best_teacher` (held-out ones keep LLVM's answers)."""
    from concurrent.futures import ProcessPoolExecutor

    if teacher not in TEACHERS:
        raise ValueError(f"teacher must be one of {', '.join(TEACHERS)}, not {teacher!r}")
    counts = {"train": 0, "heldout": 0, "failed": 0, "train_lines": 0, "feedback": 0, "solver_taught": 0}
    out.mkdir(parents=True, exist_ok=True)
    work = []
    for p in pairs:
        source = kernel_source(p.kernel, sources)
        trained = source not in held_out
        work.append((p, source, feedback and trained, teacher if trained else "llvm", solver_timeout))
    with (out / "train.jsonl").open("w", encoding="utf-8") as tr, (out / "heldout.jsonl").open("w", encoding="utf-8") as ho, \
            (out / "manifest.tsv").open("w", encoding="utf-8") as man, ProcessPoolExecutor(max_workers=jobs) as pool:
        man.write("split\torigin\ttarget\tkernel\tsource\tvregs\tunknown\tteacher\n")
        for (pair, source, *_), exs in zip(work, pool.map(_example_job, work)):
            split = "heldout" if source in held_out else "train"
            if isinstance(exs, str):
                counts["failed"] += 1
                progress(f"skip {pair.origin} {pair.target}/{pair.kernel}: {exs}")
                continue
            for ex in exs:
                (ho if split == "heldout" else tr).write(json.dumps(ex) + "\n")
                counts["feedback"] += bool(ex["feedback"])
            ex = exs[0]
            counts[split] += 1
            counts["solver_taught"] += ex["teacher"] == "solver"
            if split == "train":
                counts["train_lines"] += len(ex["lines"])  # type: ignore[arg-type]
            man.write(f"{split}\t{pair.origin}\t{pair.target}\t{pair.kernel}\t{source}\t{len(ex['lines'])}\t"  # type: ignore[arg-type]
                      f"{ex['unknown']}\t{ex['teacher']}\n")
            progress(f"{split} {pair.origin} {pair.target}/{pair.kernel}")
    return counts


def read_examples(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
