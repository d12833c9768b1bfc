"""Fuzzing oracles for the verifier: one example at a time, for tests and `verilocc fuzz`.

An example is a seed and a target. From them: a random pre-RA program (`generate`), a
reference allocation of it (`refalloc.allocate`) and a renamed copy (`refalloc.permute`),
mutants of the reference allocation (`mutations.OPERATORS`), a renaming that puts vector
tuples on odd registers (`misaligned`, gfx90a/gfx942/gfx950 only) and, when `llc-19` (`llc-22`
for gfx950, `Profile.llc`) is there and asked for, LLVM's own allocation and mutants of it
(`llvm`, `llvm-mutant:*`). Every variant
is verified and run by the concrete interpreter (`interpret.run`) on a few random inputs.
What must hold:

- a correct allocation (reference, permuted, llvm: the interpreter agrees with the program)
  is VERIFIED; otherwise the verifier rejected a correct allocation (`false-rejection`, or
  `unknown` when it could not decide);
- a variant whose trace differs from the program's on some input is not VERIFIED;
  otherwise the verifier is unsound (`unsound`, the most serious);
- the reference allocation and its permutation agree with the program under the
  interpreter; otherwise the oracles themselves are wrong (`oracle-bug`);
- the verifier answers: an exception other than its one-line bad-input error is a `crash`.

`check_example` returns an `Outcome` with the verdict of each variant, whether its trace
differs, and the disagreements with the programs to reproduce them; `save_outcome` writes
the disagreeing pairs (pre/post MIR and a note) to a directory.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from verilocc.errors import InputError
from verilocc.findings import Verdict
from verilocc.fuzz.generate import random_program
from verilocc.fuzz.interpret import Trace, function_inputs, run
from verilocc.fuzz.profiles import PROFILES
from verilocc.fuzz.program import Program
from verilocc.fuzz.refalloc import Allocation, AllocationError, Budget, allocate, permute
from verilocc.mir.model import Module
from verilocc.mir.parser import parse_module
from verilocc.mir.printer import print_module

# Budgets the reference allocator starts from: tight ones force spilling.
BUDGETS = (Budget(4, 8, 4), Budget(8, 12, 8), Budget(12, 14, 16), Budget(16, 20, 16), Budget(24, 24, 32),
           Budget(32, 32, 32), Budget(48, 40, 32))

# Verifier bugs these oracles found, minimised under tests/fixtures/fuzz/ (README.md there);
# tests/test_fuzz_regressions.py keeps the fixed ones fixed.
FOUND_VERIFIER_ISSUES = {
    "dead-flag-mismatch": "a def flagged `dead` only in the allocated program turned it into a side effect "
                          "(semantics.ops.has_side_effects): correct allocations were REJECTED",
    "self-copy": "`%1 = COPY %1` in the virtual program made value flow forget %1: correct allocations "
                 "(which delete the copy) were REJECTED",
    "self-copy-subreg": "the same with `%1.sub1 = COPY %1.sub1`",
    "explicit-tie": "`(tied-def 0)` written on a use in the virtual program only (llc prints it only when the "
                    "tie is not the opcode's) made the instruction impure (analysis.instructions.is_pure): correct "
                    "allocations were REJECTED",
    "odd-tuple-copy": "an odd VGPR/AGPR tuple in a COPY (LLVM's split of a vreg_512_align2 on gfx90a) was "
                      "reported as an alignment error, but COPY has no alignment constraint: LLVM's own "
                      "allocation was REJECTED",
    "loop-constant-redef": "a loop-carried register the loop redefines with a constant: the allocated program's "
                           "lazily read entry value was the virtual program's current one",
    "dead-def-deleted": "LLVM deletes an instruction whose defs are all dead (`dead %6.sub2 = S_AND_B32 ..., "
                        "implicit-def dead $scc`); it was reported as a dropped instruction (fixed: is_removable)",
    "remat-forgets-copy": "the pairing took a later equal invariant load as the original, so a copy of the "
                          "earlier one lost its value (fixed: the first in a gap is the original)",
}
# Generator options that keep away from the triggers of verifier bugs still open, so that the
# properties test everything else (`check_example(avoid_known=True)`, the tests). Empty: none
# is open. It was {"constant_redefs": False} while loop-constant-redef was.
GEN_AVOID: dict[str, object] = {}
# Mutation operators whose wrong allocations the verifier still VERIFIES at times: verifier bugs
# the per-lane interpreter found (pairs under tests/fixtures/fuzz/found/, notes starting with
# `open`). The properties of tests/test_fuzz_oracles.py leave these operators out until they are
# fixed; `verilocc fuzz` runs them, and reports each such mutant as unsound.
OPEN_MUTATIONS: dict[str, str] = {
    "move-exec-update": "an EXEC restore moved below a vector reload at a join is VERIFIED: the reload then "
                        "writes only the lanes of one arm, and the others read what the register held before",
}


@dataclass(frozen=True)
class Variant:
    name: str  # "reference", "permuted", "misaligned", "mutant:<operator>", "llvm", "llvm-mutant:<operator>"
    verdict: str  # Verdict name
    differs: bool  # the interpreter found an input where its trace differs from the program's
    description: str = ""
    findings: tuple[str, ...] = ()  # "kind: message" of the verifier's errors


@dataclass(frozen=True)
class Disagreement:
    kind: str  # "unsound", "false-rejection", "unknown", "crash", "oracle-bug"
    variant: str
    verdict: str
    detail: str
    pre: str  # MIR text of the program
    post: str  # MIR text of the allocation


@dataclass
class Outcome:
    """What checking one fuzz example (a target and a seed) gave."""

    target: str
    seed: int
    status: str  # "checked", "skipped: ..." when the example could not be built or run
    program: Program | None = None
    allocation: Allocation | None = None
    variants: list[Variant] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def counts(self) -> Counter[tuple[str, str, bool]]:
        """(variant kind, verdict, differs) -> number, for summaries."""
        return Counter((v.name.split(":")[0], v.verdict, v.differs) for v in self.variants)


class VerifierAnswer(NamedTuple):
    verdict: str  # Verdict name
    errors: tuple[str, ...]  # "kind: message" of the verifier's errors
    # Opcodes whose bit-precise meaning the proof rests on: those of the instructions the
    # verifier reported as LLVM liveness anomalies (a read it proved does not matter).
    relies_on: frozenset[str] = frozenset()


# A verifier for the oracles: (verdict, errors) or a `VerifierAnswer`.
Verify = Callable[[Module, Module], tuple[str, tuple[str, ...]] | VerifierAnswer]


def default_verify(timeout_s: float = 20.0) -> Verify:
    from verilocc.verify import Options, verify_modules

    def verify(post: Module, pre: Module) -> VerifierAnswer:
        report = verify_modules(post, pre, Options(timeout_s=timeout_s))
        errors = tuple(f"{f.kind}: {f.message}" for f in report.findings if f.severity == "error")
        lines = {f.place.line for f in report.findings if f.kind == "liveness-anomaly"}
        relies_on = frozenset(ins.opcode for fn in post.functions for b in fn.blocks for ins in b.instructions
                              if ins.line in lines)
        return VerifierAnswer(report.verdict.name, errors, relies_on)

    return verify


def llvm_allocation(pre_text: str, target: str, llc: str = "llc-19", timeout_s: float = 60.0) -> str | None:
    """LLVM's own allocation of a program (greedy + virtregrewriter, as the corpus was made),
    or None when `llc` is not on PATH or fails. LLVM 19 ends with rewriter instance 1."""
    exe = shutil.which(llc)
    if exe is None:
        return None
    instance = 1 if llc.endswith("-19") else 2
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "pre.mir", Path(tmp) / "post.mir"
        src.write_text(pre_text)
        try:
            done = subprocess.run([exe, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-O3", "-verify-machineinstrs",
                                   "-start-before=greedy", f"-stop-after=virtregrewriter,{instance}", str(src),
                                   "-o", str(dst)], capture_output=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return None
        return dst.read_text() if done.returncode == 0 and dst.exists() else None


def with_budget(text: str, attribute: str, count: int) -> str:
    """The program with `"amdgpu-num-vgpr"` or `"amdgpu-num-sgpr"`: LLVM then spills under
    pressure (VGPRs to stack slots, SGPRs to VGPR lanes)."""
    return text.replace('"amdgpu-flat-work-group-size"="1,256"',
                        f'"amdgpu-flat-work-group-size"="1,256" "{attribute}"="{count}"', 1)


def traces(program: Module | str, inputs: list[dict[str, int]], seed: int,
           exact: bool | frozenset[str] = False, callee_abi: str = "llvm21") -> list[Trace]:
    return [run(program, inp, seed=seed + k, exact=exact, callee_abi=callee_abi) for k, inp in enumerate(inputs)]


def callee_abi(target: str) -> str:
    """Which SGPRs the callees of LLVM's own allocation for `target` preserve: those of the
    llc that made it (s30-s105 up to LLVM 20, `interpret.run`)."""
    return "llvm20" if PROFILES[target].llc in ("llc-15", "llc-16", "llc-17", "llc-18", "llc-19", "llc-20") \
        else "llvm21"


def runs_differ(post: Module | str, virtual: Module | str, inputs: list[dict[str, int]], seed: int,
                expected: list[Trace] | None = None, exact: bool = False,
                relies_on: frozenset[str] = frozenset(), callee_abi: str = "llvm21") -> bool:
    """Whether the interpreter finds an input where `post` and `virtual` store differently
    (`expected`: the traces of `virtual`, when already run; `callee_abi`: what callees
    preserve, `interpret.run`).

    The interpreter hashes most opcodes, so an instruction that ignores an input for real (an
    OR with -1, a shift of 0) shows a difference that no hardware would: `exact` (asked for
    a VERIFIED variant) runs both again. First with the real meanings of only the opcodes
    the verifier's proof rests on (`relies_on`), every other opcode hashed as before: that
    proof holds whatever the other opcodes compute, so if it is right the runs agree, and
    they end where the hashed runs end (with every real meaning, a loop counter that doubles
    0 never reaches its bound, and two runs stopped after the same number of steps differ
    only in how far each got). Then, when that does not settle it, with the real meanings
    of every opcode that has one."""
    abi = callee_abi
    if traces(post, inputs, seed, callee_abi=abi) == (expected if expected is not None
                                                     else traces(virtual, inputs, seed, callee_abi=abi)):
        return False
    if not exact:
        return True
    if relies_on and traces(post, inputs, seed, relies_on, abi) == traces(virtual, inputs, seed, relies_on, abi):
        return False
    return traces(post, inputs, seed, True, abi) != traces(virtual, inputs, seed, True, abi)


def check_example(
    target: str,
    seed: int,
    *,
    mutants: int | Iterable[str] | None = None,
    inputs: int = 4,
    permutations: int = 1,
    budget: Budget | None = None,
    verify: Verify | None = None,
    avoid_known: bool = True,
    misaligned: bool = True,
    llvm: bool = False,
    gen: dict[str, object] | None = None,
    text: str | None = None,
) -> Outcome:
    """Build and check one example. `mutants`: how many mutation operators to try (all of
    them when None), or their names; `inputs`: random inputs per comparison; `misaligned`:
    also check a renaming that puts vector tuples on odd registers (gfx90a/gfx942), which
    the interpreter refuses to run like the hardware cannot encode it; `llvm`: also check
    LLVM's own allocation (`llc-19` on PATH), sometimes under a budget that makes it spill;
    `text`: check this program (MIR) instead of generating one (shrinking uses it)."""
    t0 = time.perf_counter()
    verify = verify or default_verify()
    rng = random.Random(f"{target}/{seed}")
    kw: dict[str, object] = {**GEN_AVOID} if avoid_known else {}
    kw.update(gen or {})
    program, pre = _program(target, seed, kw, text)
    out = Outcome(target, seed, "checked", program)
    ran = _finishing_inputs(pre, rng, inputs, seed)
    if isinstance(ran, str):
        out.status = f"skipped: the program does not finish ({ran})"
        return out
    try:
        alloc = allocate(pre, rng, budget or rng.choice(BUDGETS))
    except AllocationError as e:
        out.status = f"skipped: {e}"
        return out
    out.allocation = alloc
    variants: list[tuple[str, str, str]] = [("reference", alloc.text, "")]
    for k in range(permutations):
        variants.append((f"permuted{k or ''}", permute(alloc.text, rng, alloc.assignment.values()), ""))
    post_ref = parse_module(alloc.text, f"{target}-{seed}.post.mir")
    names, mutant_modules = _mutants(target, seed, alloc, post_ref, rng, mutants, misaligned)
    judge = _Judge(out, verify, pre, program.text, *ran, seed)
    for name, variant, description in variants:
        judge(name, parse_module(variant, f"{target}-{seed}.{name}.mir"), variant, description, correct=True)
    if llvm:
        _check_llvm(judge, program, target, seed, names, rng)
    for name, module, description in mutant_modules:
        judge(name, module, None, description, correct=False)
    out.seconds = time.perf_counter() - t0
    return out


def _program(target: str, seed: int, kw: dict[str, object], text: str | None) -> tuple[Program, Module]:
    """The program of example `seed` (generated with `kw`, or `text`) and its module."""
    if text is None:
        program = random_program(target, seed, **kw)  # type: ignore[arg-type]
        return program, parse_module(program.text, f"{target}-{seed}.pre.mir")
    pre = parse_module(text, f"{target}-{seed}.pre.mir")
    fn = pre.functions[0]
    return Program(text, target, tuple(sorted(function_inputs(pre))), sum(len(b.instructions) for b in fn.blocks),
                   len(fn.blocks)), pre


def _finishing_inputs(pre: Module, rng: random.Random, inputs: int,
                      seed: int) -> tuple[list[dict[str, int]], list[Trace]] | str:
    """`inputs` random inputs of `pre`, those on which it finishes and its traces on them; the
    first run's status when it finishes on none."""
    regs = function_inputs(pre)
    ins = [{r: rng.getrandbits(32) for r in regs} for _ in range(inputs)]
    expected = traces(pre, ins, seed)
    keep = [k for k, t in enumerate(expected) if t.ok]
    if not keep:
        return expected[0].status
    return [ins[k] for k in keep], [expected[k] for k in keep]


def _mutants(target: str, seed: int, alloc: Allocation, post_ref: Module, rng: random.Random,
             mutants: int | Iterable[str] | None, misaligned: bool) -> tuple[list[str], list[tuple[str, Module, str]]]:
    """The mutation operators to try, and the wrong allocations they (and misaligned tuples) make."""
    from verilocc.fuzz import mutations

    out: list[tuple[str, Module, str]] = []
    if misaligned:
        odd = permute(alloc.text, rng, alloc.assignment.values(), misalign=True)
        if odd != alloc.text and PROFILES[target].aligned:
            out.append(("misaligned", parse_module(odd, f"{target}-{seed}.misaligned.mir"),
                        "VGPR/AGPR tuples moved to odd registers"))
    if mutants is None:
        names = sorted(mutations.OPERATORS)
    elif isinstance(mutants, int):
        names = rng.sample(sorted(mutations.OPERATORS), min(mutants, len(mutations.OPERATORS)))
    else:
        names = list(mutants)
    for name in names:
        m = mutations.OPERATORS[name](post_ref, rng)
        if m is not None:
            out.append((f"mutant:{name}", m.module, m.description))
    return names, out


def _check_llvm(judge: _Judge, program: Program, target: str, seed: int, names: list[str], rng: random.Random) -> None:
    """LLVM's allocation of the program (sometimes under a budget that makes it spill), and its
    mutants."""
    from verilocc.fuzz import mutations

    tight = rng.choice((None, ("amdgpu-num-vgpr", 16), ("amdgpu-num-sgpr", 12)))
    llvm_pre = with_budget(program.text, *tight) if tight else program.text
    llvm_post = llvm_allocation(llvm_pre, target, PROFILES[target].llc)
    if llvm_post is None:
        return
    # The budget attribute does not change what the program computes.
    virtual = parse_module(llvm_pre, f"{target}-{seed}.pre.mir")
    post_llvm = parse_module(llvm_post, f"{target}-{seed}.llvm.mir")
    abi = callee_abi(target)
    judge("llvm", post_llvm, llvm_post, f"{PROFILES[target].llc}'s allocation"
          + (f" with {tight[0]}={tight[1]}" if tight else ""),
          correct=True, virtual=virtual, virtual_text=llvm_pre, abi=abi)
    for name in names:  # LLVM's allocation, mutated: kill flags, spills and copies as llc writes them
        m = mutations.OPERATORS[name](post_llvm, rng)
        if m is not None:
            judge(f"llvm-mutant:{name}", m.module, None, m.description, correct=False,
                  virtual=virtual, virtual_text=llvm_pre, abi=abi)


@dataclass
class _Judge:
    """The verifier's answer on each variant of one example, set against what the interpreter
    says the variant computes; each answer is a `Variant` of `out`, each that is wrong a
    `Disagreement`."""

    out: Outcome
    verify: Verify
    pre: Module
    pre_text: str
    ins: list[dict[str, int]]
    expected: list[Trace]
    seed: int

    def differs(self, post: Module | str, virtual: Module, exact: bool = False,
                relies_on: frozenset[str] = frozenset(), abi: str = "llvm21") -> bool:
        return runs_differ(post, virtual, self.ins, self.seed,
                           self.expected if virtual is self.pre and abi == "llvm21" else None, exact, relies_on, abi)

    def __call__(self, name: str, post: Module, text: str | None, description: str, correct: bool,
                 virtual: Module | None = None, virtual_text: str | None = None, abi: str = "llvm21") -> None:
        virtual = self.pre if virtual is None else virtual
        try:
            answer = VerifierAnswer(*self.verify(post, virtual))
        except InputError as e:  # the verifier's "bad input" answer: fine for a mutant
            answer = VerifierAnswer("ERROR", (str(e),))
        except Exception as e:  # noqa: BLE001 - a traceback is never an answer: report it
            answer = VerifierAnswer("CRASH", (f"{type(e).__name__}: {e}",))
        verdict, errors = answer.verdict, answer.errors
        # A VERIFIED variant is unsound only if the difference is real (see `runs_differ`).
        diff = self.differs(post, virtual, exact=verdict == Verdict.VERIFIED.name, relies_on=answer.relies_on, abi=abi)
        self.out.variants.append(Variant(name, verdict, diff, description, errors))
        wrong = _disagreement(verdict, errors, diff, correct, description)
        if wrong is not None:
            self.out.disagreements.append(Disagreement(
                wrong[0], name, verdict, wrong[1], self.pre_text if virtual_text is None else virtual_text,
                text if text is not None else print_module(post)))


def _disagreement(verdict: str, errors: tuple[str, ...], diff: bool, correct: bool,
                  description: str) -> tuple[str, str] | None:
    """(kind, detail) of a verdict that disagrees with the interpreter; None when it agrees."""
    if verdict == "CRASH" or (correct and verdict == "ERROR"):
        return "crash", errors[0]
    if correct and diff:
        return "oracle-bug", f"the interpreter says this allocation computes something else than the program ({verdict})"
    if diff and verdict == Verdict.VERIFIED.name:
        return "unsound", description
    if correct and verdict == Verdict.REJECTED.name:
        return "false-rejection", "; ".join(errors[:3])
    if correct and verdict == Verdict.UNKNOWN.name:
        return "unknown", description
    return None


def shrink(outcome: Outcome, dis: Disagreement, max_rounds: int = 20, **kw: object) -> Disagreement:
    """The same disagreement on a smaller program: instructions are deleted while the program
    stays well formed (the interpreter's strict runs) and checking it again
    (`check_example(text=...)`, the variant's mutation operator only) still gives a
    disagreement of the same kind and variant. `kw` as check_example's."""
    if dis.kind == "oracle-bug":
        return dis
    variant = dis.variant
    opts: dict[str, object] = {"misaligned": variant == "misaligned", "llvm": variant.startswith("llvm"),
                               "mutants": [variant.split(":", 1)[1]] if ":" in variant else 0, **kw}

    def well_formed(text: str) -> bool:
        """The smaller program still reads only defined lanes (a deleted def would turn the
        disagreement into one about an ill-formed program)."""
        try:
            module = parse_module(text, "shrink.pre.mir")
        except InputError:
            return False
        rng = random.Random(f"{outcome.target}/{outcome.seed}/shrink")
        regs = function_inputs(module)
        return all(run(module, {r: rng.getrandbits(32) for r in regs}, seed=outcome.seed + k, strict=True).ok
                   for k in range(2))

    def again(text: str) -> Disagreement | None:
        if not well_formed(text):
            return None
        o = check_example(outcome.target, outcome.seed, text=text, **opts)  # type: ignore[arg-type]
        return next((d for d in o.disagreements if d.kind == dis.kind and d.variant == variant), None)

    small = minimise(dis.pre, lambda text: again(text) is not None, max_rounds)
    return (again(small) or dis) if small != dis.pre else dis


def save_outcome(outcome: Outcome, directory: str | Path, shrunk: bool = False) -> list[Path]:
    """Write each disagreement as `<target>-<seed>-<variant>.{pre,post}.mir` and a `.txt` note
    (`tests/test_fuzz_regressions.py` reads them back: the note's first word is the kind, after
    `open` for an unsound mutant of an operator in `OPEN_MUTATIONS`); `shrunk`: minimise each
    one first."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for k, dis in enumerate(outcome.disagreements):
        if shrunk:
            dis = shrink(outcome, dis)
        stem = f"{outcome.target}-{outcome.seed}-{dis.variant.replace(':', '-')}" + (f"-{k}" if k else "")
        (d / f"{stem}.pre.mir").write_text(dis.pre)
        (d / f"{stem}.post.mir").write_text(dis.post)
        operator = dis.variant.split(":", 1)[1] if ":" in dis.variant else ""
        known = "open " if dis.kind == "unsound" and operator in OPEN_MUTATIONS else ""  # a known bug, not fixed yet
        (d / f"{stem}.txt").write_text(f"{known}{dis.kind}: {dis.variant} is {dis.verdict}\n{dis.detail}\n")
        written.append(d / f"{stem}.post.mir")
    return written


def summarise(outcomes: Iterable[Outcome]) -> dict[str, object]:
    """Verdict counts by variant kind and whether the trace differs, and disagreements by kind."""
    verdicts: Counter[str] = Counter()
    disagreements: Counter[str] = Counter()
    skipped = checked = 0
    for o in outcomes:
        if o.status != "checked":
            skipped += 1
            continue
        checked += 1
        for (kind, verdict, diff), n in o.counts().items():
            verdicts[f"{kind} {verdict}{' (trace differs)' if diff else ''}"] += n
        for dis in o.disagreements:
            disagreements[dis.kind] += 1
    return {"examples": checked, "skipped": skipped, "verdicts": dict(sorted(verdicts.items())),
            "disagreements": dict(sorted(disagreements.items()))}


def minimise(pre_text: str, still_failing: Callable[[str], bool], max_rounds: int = 20) -> str:
    """Delete body instructions (not terminators) of a program while `still_failing(pre)`
    holds: a greedy one-line-at-a-time reduction, to a fixed point."""
    lines = pre_text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("body:"))
    for _ in range(max_rounds):
        changed = False
        for i in range(len(lines) - 1, start, -1):
            ln = lines[i].strip()
            if not lines[i].startswith("    ") or ln.startswith(("successors:", "liveins:", "S_BRANCH", "S_CBRANCH",
                                                                    "S_ENDPGM", "$vcc = COPY")):
                continue
            candidate = "\n".join(lines[:i] + lines[i + 1:])
            try:
                ok = still_failing(candidate)
            except Exception:  # noqa: BLE001 - a reduction that breaks the program is not kept
                ok = False
            if ok:
                lines = lines[:i] + lines[i + 1:]
                changed = True
        if not changed:
            break
    return "\n".join(lines)
