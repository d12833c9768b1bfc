"""`verilocc eval`: the model loop on held-out functions, against LLVM's greedy allocator and
the SMT allocator.

Held-out functions come in families, as the VeriLocc paper reports them: GEMM and attention
kernels whose sources were never trained on (`sgemm_tiled.hip`, `flash_attn.hip`), and
functions of LLVM's own AMDGPU tests (none trained on), per target. Per function:

- fits: an assignment is known to exist (LLVM's own allocation is one: no spill, no split; or
  one of ours is VERIFIED). Rates are over the functions that fit; the others need spill code,
  which an assignment cannot express, and are counted apart.
- single shot: the model's greedy first proposal, decoded without masking, is VERIFIED (all
  three layers). Decoding is steered to keep the first fit's waves (`verilocc.llm.decode`):
  where the answer would cost a wave, it is decoded again from the last line that can keep
  it, and on a steered line whose answer leaves no completion within those waves, the
  model's next answers, then the completion's register, are written. The same proposal decoded without
  steering is measured too (`unsteered`: VERIFIED, its registers, and the lines steering
  changed), so the rate says what the model alone does. Per group, also the per-line error rate that best explains its single-shot
  outcomes (`line_error_rate`), which tells how often the model errs apart from how long the
  group's functions are.
- pass@k: `n` proposals sampled at `temperature` without masking, `c` of them VERIFIED; the
  unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al. 2021), for k <= n (n is smaller for
  functions above `large` virtual registers: each distinct sample costs a verification).
- rounds to VERIFIED with feedback, and without (the ablation): the loop with `rounds`
  rounds of one proposal each, every proposal sampled at `rounds_temperature` (same seeds in
  every arm; hotter than the pass@k samples, so that first answers fail often enough for the
  arms to differ); None when no round verified. Four arms (`run_loop`'s switches): the loop as `verilocc allocate` runs it
  (`feedback`: the paragraph, the bans and confined lines, the lines the counterexample does
  not blame kept); the same with every line drawn again (`resample`); the paragraph alone, what
  the model reads of a counterexample (`text`); no feedback (`plain`).
- constrained: the first constrained proposal (decoding masked to listed choices) VERIFIED.
- registers: VGPRs, AGPRs, SGPRs and waves per SIMD of our VERIFIED allocation (the
  single-shot one, else the constrained one; and the best VERIFIED sample) beside LLVM's post file (its greedy allocator on
  the same pre file); occupancy as llc counts it (`verilocc.target.waves.waves_per_simd`:
  registers, LDS, work-group size, amdgpu-waves-per-eu).
- allocated: the registers and waves of what `verilocc allocate` writes with its defaults
  (constrained decoding, up to 3 rounds, then the repair step, which raises a VERIFIED answer
  with fewer waves than a first fit reaches: the occupancy floor), beside the model's own.
- solver: the registers and waves of what `verilocc allocate --solver` writes for the same
  function within `solver_timeout` seconds (the SMT allocator, with spill code where the
  function needs it), when VERIFIED; `solver_timeout` 0 leaves it out.
- seconds: one greedy proposal (decoding), and per sample of the batch of n.
Apart from `allocated`, no repair step runs here: the numbers are the model's. Verification
verdicts are cached by assignment, so a proposal met twice is verified once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from verilocc.analysis.operands import VReg
from verilocc.certificate.write import sha256_file
from verilocc.errors import InputError
from verilocc.findings import Finding, Report, Verdict
from verilocc.llm.choices import ChoiceTables
from verilocc.llm.dataset import find_pairs, has_spill_code, kernel_source
from verilocc.llm.decode import propose_many
from verilocc.llm.lm import LM
from verilocc.llm.loop import run_loop, verify_regs
from verilocc.allocators.optimal import solve_function
from verilocc.allocators.usage import register_usage
from verilocc.llm.problem import AllocationProblem, build_problem, single_function
from verilocc.mir.model import Module
from verilocc.mir.parser import read_module
from verilocc.rewrite.assignment import assignment_from_allocation
from verilocc.target import PhysReg
from verilocc.verify import Options, function_target

#: Kernel source -> family (the paper's GEMM and multi-head attention).
FAMILIES = {"sgemm_tiled.hip": "GEMM", "sgemm_naive.hip": "GEMM", "hgemm_mfma.hip": "GEMM", "hgemm_wmma.hip": "GEMM",
            "flash_attn.hip": "attention", "flash_attn_mfma.hip": "attention"}
LLVM_TESTS = "LLVM tests"
PASS_AT = (1, 10, 100)
#: The loop's arms (`CaseResult.rounds_<arm>`): feedback as `allocate` runs it, every line
#: drawn again, the paragraph alone, no feedback.
ARMS = ("feedback", "resample", "text", "plain")


@dataclass
class Case:
    """One held-out function: its pre module (that function only) and LLVM's allocation."""

    family: str
    target: str
    name: str
    pre: Module
    post: Module | None


@dataclass
class CaseResult:
    family: str
    target: str
    name: str
    vregs: int
    fits: bool
    llvm_fits: bool  # LLVM's allocation is an assignment (no spill code, no split)
    single_shot: bool
    samples: int
    verified_samples: int
    pass_at: dict[str, float | None]
    rounds_feedback: int | None  # the loop as `allocate` runs it: feedback, unblamed lines kept
    rounds_resample: int | None  # feedback, every line drawn again
    rounds_text: int | None  # only the feedback paragraph in the prompt
    rounds_plain: int | None  # no feedback
    constrained: bool
    ours: dict[str, int]
    best_sample: dict[str, int]  # the VERIFIED sample with the most waves (then fewest registers)
    greedy: dict[str, int]
    seconds_proposal: float
    seconds_sample: float
    note: str = ""
    # What `verilocc allocate` writes with its defaults (constrained decoding, 3 rounds, the
    # repair step with the occupancy floor): its usage when VERIFIED, else empty.
    allocated: dict[str, int] = field(default_factory=dict)
    # The single shot decoded without steering: VERIFIED, and its usage when it is.
    single_shot_unsteered: bool = False
    unsteered: dict[str, int] = field(default_factory=dict)
    steered_lines: int = 0  # lines of the single shot whose answer steering changed
    # What the SMT allocator writes for the function (`allocate --solver`): its usage when
    # VERIFIED, else empty (also when not run: `solver_timeout` 0).
    solver: dict[str, int] = field(default_factory=dict)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased estimator of pass@k from n samples with c correct (None when n < k)."""
    if n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


# --------------------------------------------------------------------------------------------
# Held-out functions
# --------------------------------------------------------------------------------------------
def kernel_cases(roots: list[Path], targets: list[str], sources: dict[str, str], held: tuple[str, ...],
                 kernels: list[str] | None) -> list[Case]:
    """Held-out kernel pairs (base variants: the corpus's), small first."""
    out: list[Case] = []
    seen: set[tuple[str, str]] = set()
    for root in roots:
        for p in sorted(find_pairs(root, root.name), key=lambda p: (p.pre.stat().st_size, str(p.pre))):
            source = kernel_source(p.kernel, sources)
            if p.target not in targets or source not in held or p.kernel.endswith("_nounroll"):
                continue
            if (kernels and p.kernel not in kernels) or (p.target, p.kernel) in seen:
                continue
            seen.add((p.target, p.kernel))
            out.append(Case(FAMILIES.get(source, "other"), p.target, p.kernel, read_module(p.pre), read_module(p.post)))
    return out


def llvm_test_cases(root: Path, targets: list[str], per_target: int, version: str = "19") -> list[Case]:
    """Functions of LLVM's AMDGPU tests (pairs of `scripts/llvm_tests_corpus.py`), `per_target`
    per target with at least one virtual register, in an order fixed by a hash of their names."""
    out: list[Case] = []
    for target in targets:
        found: list[tuple[str, Case]] = []
        for pre_path in sorted((root / version / target).glob("*.pre.mir")):
            post_path = pre_path.with_name(pre_path.name.replace(".pre.mir", ".post.mir"))
            if not post_path.exists():
                continue
            try:
                pre, post = read_module(pre_path), read_module(post_path)
            except Exception:  # noqa: BLE001 - a file verilocc cannot read is not a held-out case
                continue
            posts = {f.name: f for f in post.functions}
            test = pre_path.name.split(".")[0]
            for fn in pre.functions:
                if not fn.registers or fn.name not in posts:
                    continue
                name = f"{test}:{fn.name}"
                key = hashlib.sha256(f"{target}/{name}".encode()).hexdigest()
                found.append((key, Case(LLVM_TESTS, target, name, dataclasses.replace(pre, functions=[fn]),
                                        dataclasses.replace(post, functions=[posts[fn.name]]))))
        out += [c for _, c in sorted(found, key=lambda x: x[0])[:per_target]]
    return out


# --------------------------------------------------------------------------------------------
# One function
# --------------------------------------------------------------------------------------------
class Verifier:
    """`verify_regs` with verdicts cached by assignment and parse findings."""

    def __init__(self, pre: Module, problem: AllocationProblem, opts: Options) -> None:
        self.pre, self.problem, self.opts = pre, problem, opts
        self.cache: dict[tuple[Any, ...], tuple[Module, Report]] = {}
        self.problems: list[AllocationProblem] = []
        self.calls = 0

    def __call__(self, pre: Module, problem: AllocationProblem, regs: dict[VReg, PhysReg],
                 parse_findings: list[Finding], opts: Options, reference: Module | None = None) -> tuple[Module, Report]:
        # The program allocated changes when the loop spills more: its problem is in the key
        # (and kept alive by `problems`, so that its id is not reused).
        if not self.problems or self.problems[-1] is not problem:
            self.problems.append(problem)
        key = (id(problem), tuple(sorted((str(v), r.name) for v, r in regs.items())),
               tuple(f.message for f in parse_findings))
        got = self.cache.get(key)
        if got is None:
            self.calls += 1
            got = verify_regs(pre, problem, regs, parse_findings, opts, reference=reference)
            self.cache[key] = got
        return got

    def verified(self, regs: dict[VReg, PhysReg], parse_findings: list[Finding]) -> bool:
        """VERIFIED within the function's requested budget (a proposal with decisions that name
        no listed choice is REJECTED by those findings alone: not verified again)."""
        if parse_findings:
            return False
        _, report = self(self.pre, self.problem, regs, parse_findings, self.opts)
        return report.verdict is Verdict.VERIFIED and not any(f.kind == "budget" for f in report.findings)


def evaluate_case(case: Case, lm: LM, *, samples: int, rounds: int, temperature: float, seed: int, timeout: float,
                  rounds_temperature: float | None = None, steer: bool = True, solver_timeout: float = 0.0,
                  log: Callable[[str], None]) -> CaseResult:
    fn = single_function(case.pre)
    target = function_target(fn, None, case.pre.file)
    problem = build_problem(fn, target)
    tables = ChoiceTables(problem)
    check = Verifier(case.pre, problem, Options(timeout_s=timeout, seed=seed))
    greedy: dict[str, int] = {}
    llvm_fits = False
    if case.post is not None:
        post_fn = single_function(case.post)
        greedy = register_usage(post_fn, target)
        derived = assignment_from_allocation(case.pre, case.post, target.name)
        llvm_fits = not derived.split and not derived.missing and not has_spill_code(post_fn)

    t0 = time.monotonic()
    first = propose_many(lm, problem, samples=1, constrained=False, tables=tables, greedy_first=True, seed=seed,
                         steer=steer)[0]
    seconds_proposal = time.monotonic() - t0
    single = check.verified(first.regs, first.findings)
    alone = first
    if first.steered_from is not None:
        alone = propose_many(lm, problem, samples=1, constrained=False, tables=tables, greedy_first=True, seed=seed,
                             steer=False)[0]
    single_alone = check.verified(alone.regs, alone.findings)

    cons = propose_many(lm, problem, samples=1, constrained=True, tables=tables, greedy_first=True, seed=seed,
                        steer=steer)[0]
    constrained = cons.dead_end is None and check.verified(cons.regs, cons.findings)

    t0 = time.monotonic()
    props = propose_many(lm, problem, samples=samples, constrained=False, tables=tables, greedy_first=False,
                         temperature=temperature, seed=seed + 1, steer=steer) if samples else []
    seconds_sample = (time.monotonic() - t0) / max(1, samples)
    good = [p for p in props if check.verified(p.regs, p.findings)]
    verified = len(good)
    best: dict[str, int] = {}
    for p in good:  # the VERIFIED sample with the most waves, then the fewest registers
        u = problem.usage(p.regs)
        if not best or (-u["waves"], u["vgpr"] + u["agpr"], u["sgpr"]) < (-best["waves"], best["vgpr"] + best["agpr"], best["sgpr"]):
            best = u

    def loop_rounds(use_feedback: bool, use_bans: bool, keep_rest: bool) -> int | None:
        if not rounds:
            return None
        res = run_loop(case.pre, lm, samples=1, rounds=rounds, constrained=False, repair=False, seed=seed + 2,
                       timeout=timeout, temperature=temperature if rounds_temperature is None else rounds_temperature,
                       use_feedback=use_feedback, use_bans=use_bans,
                       keep_rest=keep_rest, steer=steer,
                       first_greedy=False, verify=check)
        return res.rounds if res.verified else None

    with_fb = loop_rounds(True, True, True)
    resample = loop_rounds(True, True, False)
    text = loop_rounds(True, False, False)
    without_fb = loop_rounds(False, False, False)
    ours: dict[str, int] = {}
    if single:
        ours = problem.usage(first.regs)
    elif constrained:
        ours = problem.usage(cons.regs)
    fits = (llvm_fits or single or constrained or verified > 0
            or any(x is not None for x in (with_fb, resample, text, without_fb)))
    allocated: dict[str, int] = {}
    if fits:
        res = run_loop(case.pre, lm, seed=seed, timeout=timeout, verify=check, steer=steer)
        allocated = res.usage if res.verified else {}
    solver: dict[str, int] = {}
    if solver_timeout > 0:
        got = solve_function(fn, target, timeout=solver_timeout, seed=seed)
        solver = got.usage if got.status in ("optimal", "feasible") else {}
    note = ""
    if not fits:
        note = "needs spill code (LLVM spilled or split; no assignment of ours VERIFIED)"
    elif cons.dead_end is not None:
        note = "constrained: " + cons.dead_end
    log(f"  {case.family} {case.target} {case.name}: {len(problem.order)} vregs, single shot "
        f"{'VERIFIED' if single else 'no'}, {verified}/{samples} samples, rounds {with_fb}/{resample}/{text}/{without_fb} "
        f"(feedback/resample/text/none), constrained {'VERIFIED' if constrained else 'no'}; {seconds_proposal:.1f}s per proposal, "
        f"{check.calls} verifications")
    return CaseResult(case.family, case.target, case.name, len(problem.order), fits, llvm_fits, single, samples, verified,
                      {f"pass@{k}": pass_at_k(samples, verified, k) for k in PASS_AT}, with_fb, resample, text, without_fb,
                      constrained,
                      ours, best, greedy, round(seconds_proposal, 2), round(seconds_sample, 3), note, allocated,
                      single_alone, problem.usage(alone.regs) if single_alone else {}, first.overridden, solver)


# --------------------------------------------------------------------------------------------
# Summaries, table, JSON, plot
# --------------------------------------------------------------------------------------------
def summarise(results: list[CaseResult]) -> dict[str, Any]:
    """Rates over the functions that fit, per (family, target), per family and overall."""
    groups: dict[str, list[CaseResult]] = {"all": results}
    for r in results:
        groups.setdefault(r.family, []).append(r)
        groups.setdefault(f"{r.family} / {r.target}", []).append(r)
    return {name: _summary(rs) for name, rs in groups.items()}


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def line_error_rate(outcomes: list[tuple[int, bool]]) -> float | None:
    """The per-line error rate p that best explains single-shot outcomes (lines, VERIFIED) if
    each line of a function is wrong independently with probability p, so that a function of
    n lines is VERIFIED with probability (1 - p)^n: the maximum-likelihood p, to two significant
    digits (None without functions; 0 when every one was VERIFIED, 1 when none with a line
    was). It separates how often the model errs from how long the functions of a family are."""
    if not outcomes:
        return None
    if all(ok for _, ok in outcomes):
        return 0.0
    if not any(ok for n, ok in outcomes if n):
        return 1.0

    def slope(p: float) -> float:  # d/dp of the log-likelihood; decreasing in p
        q = 1.0 - p
        return sum(-n / q if ok else n * q ** (n - 1) / (1.0 - q ** n) for n, ok in outcomes if n)

    lo, hi = 1e-9, 1.0 - 1e-9
    for _ in range(100):  # bisection on a log scale
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
    return float(f"{(lo + hi) / 2:.2g}")


def _summary(rs: list[CaseResult]) -> dict[str, Any]:
    fit = [r for r in rs if r.fits]
    out: dict[str, Any] = {"functions": len(rs), "fit": len(fit), "need_spills": len(rs) - len(fit)}
    out["single_shot"] = _mean([float(r.single_shot) for r in fit])
    out["single_shot_line_error"] = line_error_rate([(r.vregs, r.single_shot) for r in fit])
    for k in PASS_AT:
        got = [r.pass_at[f"pass@{k}"] for r in fit if r.pass_at[f"pass@{k}"] is not None]
        out[f"pass@{k}"] = _mean([float(x) for x in got if x is not None])
        out[f"pass@{k}_functions"] = len(got)
    for arm in ARMS:
        got = [getattr(r, f"rounds_{arm}") for r in fit]
        ok = [x for x in got if x is not None]
        out[f"verified_within_rounds_{arm}"] = _mean([float(x is not None) for x in got])
        out[f"mean_rounds_{arm}"] = _mean([float(x) for x in ok])
    out["constrained"] = _mean([float(r.constrained) for r in fit])
    both = [r for r in rs if r.ours and r.greedy]
    out["fewer_waves_than_greedy"] = [f"{r.target}/{r.name}" for r in both if r.ours["waves"] < r.greedy["waves"]]
    out["single_shot_unsteered"] = _mean([float(r.single_shot_unsteered) for r in fit])
    alone = [r for r in rs if r.unsteered and r.greedy]
    out["unsteered_fewer_waves_than_greedy"] = [f"{r.target}/{r.name}" for r in alone
                                                if r.unsteered["waves"] < r.greedy["waves"]]
    out["steered_single_shots"] = len([r for r in fit if r.steered_lines])
    out["more_waves_than_greedy"] = len([r for r in both if r.ours["waves"] > r.greedy["waves"]])
    out["same_waves_as_greedy"] = len([r for r in both if r.ours["waves"] == r.greedy["waves"]])
    sampled = [r for r in rs if r.best_sample and r.greedy]
    out["best_sample_fewer_waves_than_greedy"] = len([r for r in sampled if r.best_sample["waves"] < r.greedy["waves"]])
    out["best_sample_more_waves_than_greedy"] = len([r for r in sampled if r.best_sample["waves"] > r.greedy["waves"]])
    done = [r for r in rs if r.allocated and r.greedy]
    out["allocate_fewer_waves_than_greedy"] = [f"{r.target}/{r.name}" for r in done
                                               if r.allocated["waves"] < r.greedy["waves"]]
    out["allocate_functions"] = len(done)
    out["mean_vector_registers_ours_over_greedy"] = _mean(
        [(r.ours["vgpr"] + r.ours["agpr"]) / max(1, r.greedy["vgpr"] + r.greedy["agpr"]) for r in both])
    out["mean_sgprs_ours_over_greedy"] = _mean([r.ours["sgpr"] / max(1, r.greedy["sgpr"]) for r in both])
    # The model's allocation against the SMT allocator's on the functions both allocated: waves
    # first, then VGPR+AGPR (`allocated`: what `verilocc allocate` writes with its defaults).
    solved = [r for r in rs if r.solver]
    out["solver_functions"] = len(solved)
    out["solver_fewer_waves_than_greedy"] = [f"{r.target}/{r.name}" for r in solved
                                             if r.greedy and r.solver["waves"] < r.greedy["waves"]]
    out["solver_vector_registers_at_most_greedy"] = len(
        [r for r in solved if r.greedy and r.solver["waves"] >= r.greedy["waves"] and _vec(r.solver) <= _vec(r.greedy)])
    out["solver_vector_registers_of_greedy"] = len([r for r in solved if r.greedy])
    against = [r for r in solved if r.allocated]
    out["allocate_as_good_as_solver"] = len([r for r in against if (-r.allocated["waves"], _vec(r.allocated))
                                             <= (-r.solver["waves"], _vec(r.solver))])
    out["allocate_and_solver_functions"] = len(against)
    out["mean_vector_registers_allocate_over_solver"] = _mean(
        [_vec(r.allocated) / max(1, _vec(r.solver)) for r in against])
    out["mean_seconds_per_proposal"] = _mean([r.seconds_proposal for r in rs])
    out["max_seconds_per_proposal"] = max((r.seconds_proposal for r in rs), default=None)
    return out


def _vec(usage: dict[str, int]) -> int:
    return usage["vgpr"] + usage["agpr"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def render_tables(results: list[CaseResult], summary: dict[str, Any], rounds: int, console: Any,
                  rounds_temperature: float = 0.7) -> None:
    from rich.table import Table

    t = Table(title="held-out functions: the model (unconstrained unless said) vs LLVM greedy and the solver")
    for col in ("family", "target", "function", "vregs", "fits", "1-shot", "VERIFIED/n", "pass@10", "pass@100",
                "rounds fb/res/text/none", "constrained", "VGPR+AGPR ours/greedy", "SGPR ours/greedy", "waves ours/greedy",
                "allocate/solver VGPR+AGPR", "allocate/solver waves", "s/proposal"):
        t.add_column(col, justify="left" if col in ("family", "target", "function") else "right")
    yes = {True: "[green]yes[/]", False: "[red]no[/]"}
    for r in results:
        o, g = r.ours, r.greedy
        vec = f"{o['vgpr'] + o['agpr'] if o else '-'}/{g['vgpr'] + g['agpr'] if g else '-'}"
        sg = f"{o['sgpr'] if o else '-'}/{g['sgpr'] if g else '-'}"
        wv = f"{o['waves'] if o else '-'}/{g['waves'] if g else '-'}"
        if o and g and o["waves"] < g["waves"]:
            wv = f"[red]{wv}[/]"
        done, solved = r.allocated, r.solver
        t.add_row(r.family, r.target, r.name[:48], str(r.vregs), yes[r.fits], yes[r.single_shot],
                  f"{r.verified_samples}/{r.samples}", _pct(r.pass_at["pass@10"]), _pct(r.pass_at["pass@100"]),
                  "/".join(str(getattr(r, f"rounds_{a}") or "-") for a in ARMS), yes[r.constrained], vec, sg, wv,
                  f"{_vec(done) if done else '-'}/{_vec(solved) if solved else '-'}",
                  f"{done['waves'] if done else '-'}/{solved['waves'] if solved else '-'}",
                  f"{r.seconds_proposal:.1f}")
    console.print(t)
    s = Table(title=f"summary over the functions that fit (rounds: within {rounds}, sampled at {rounds_temperature:g}; "
                    "feedback as the loop runs it "
                    "/ the same, every line drawn again / the feedback paragraph alone / none)")
    for col in ("group", "functions", "fit", "1-shot", "1-shot unsteered", "1-shot errors per 1k lines", "pass@1",
                "pass@10", "pass@100",
                "within rounds fb/res/text/none",
                "mean rounds fb/res/text/none", "constrained", "waves <greedy", "=greedy", ">greedy",
                "unsteered <greedy", "allocate <greedy",
                "vector regs/greedy", "allocate as good as solver", "solver vector regs <= greedy",
                "s/proposal mean/max"):
        s.add_column(col, justify="left" if col == "group" else "right")
    for name in sorted(summary, key=lambda n: (n != "all", "/" in n, n)):
        x = summary[name]
        err = x["single_shot_line_error"]
        s.add_row(name, str(x["functions"]), str(x["fit"]), _pct(x["single_shot"]), _pct(x["single_shot_unsteered"]),
                  "-" if err is None else f"{1000 * err:g}", _pct(x["pass@1"]),
                  _pct(x["pass@10"]), _pct(x["pass@100"]) + f" ({x['pass@100_functions']})",
                  "/".join(_pct(x[f"verified_within_rounds_{a}"]) for a in ARMS),
                  "/".join(str(x[f"mean_rounds_{a}"]) for a in ARMS), _pct(x["constrained"]),
                  str(len(x["fewer_waves_than_greedy"])), str(x["same_waves_as_greedy"]), str(x["more_waves_than_greedy"]),
                  str(len(x["unsteered_fewer_waves_than_greedy"])),
                  f"{len(x['allocate_fewer_waves_than_greedy'])} of {x['allocate_functions']}",
                  str(x["mean_vector_registers_ours_over_greedy"]),
                  f"{x['allocate_as_good_as_solver']} of {x['allocate_and_solver_functions']}",
                  f"{x['solver_vector_registers_at_most_greedy']} of {x['solver_vector_registers_of_greedy']}",
                  f"{x['mean_seconds_per_proposal']}/{x['max_seconds_per_proposal']}")
    console.print(s)


def plot(results: list[CaseResult], summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in sorted(summary, key=lambda n: (n != "all", "/" in n, n)) if "/" in g]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(10, 1.1 * len(groups) + 3), 9))
    metrics = [("single_shot", "1-shot", "#777777"), ("pass@10", "pass@10", "#6688cc"),
               ("pass@100", "pass@100", "#2244aa"), ("constrained", "constrained", "#33aa55")]
    width = 0.8 / len(metrics)
    for i, (key, label, color) in enumerate(metrics):
        vals = [summary[g][key] if summary[g][key] is not None else 0.0 for g in groups]
        ax1.bar([x + (i - 1.5) * width for x in range(len(groups))], vals, width, label=label, color=color)
    ax1.set_xticks(range(len(groups)))
    ax1.set_xticklabels([g.replace(" / ", "\n") for g in groups], fontsize=8)
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel("VERIFIED rate (functions that fit)")
    ax1.axhline(0.85, color="#cc4444", lw=0.8, ls="--")
    ax1.legend(fontsize=8, ncol=4)
    ax1.set_title("held-out functions: unconstrained model (1-shot, pass@k) and constrained decoding")
    both = [r for r in results if r.ours and r.greedy]
    xs = [r.greedy["vgpr"] + r.greedy["agpr"] for r in both]
    ys = [r.ours["vgpr"] + r.ours["agpr"] for r in both]
    colors = ["#cc4444" if r.ours["waves"] < r.greedy["waves"] else "#33aa55" if r.ours["waves"] > r.greedy["waves"]
              else "#6688cc" for r in both]
    ax2.scatter(xs, ys, c=colors, s=14)
    top = max(xs + ys + [1])
    ax2.plot([0, top], [0, top], color="#999999", lw=0.8)
    ax2.set_xlabel("VGPR + AGPR, LLVM greedy")
    ax2.set_ylabel("VGPR + AGPR, model")
    ax2.set_title("registers per function (red: fewer waves than greedy, green: more, blue: same)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


_WORKER_LM: LM | None = None


def _worker_case(job: tuple[Case, str, dict[str, Any]]) -> CaseResult:
    """One case in a worker process (`-j`): the model is loaded once per process."""
    global _WORKER_LM
    import torch

    from verilocc.llm.lm import load_lm

    case, model, kw = job
    if _WORKER_LM is None or _WORKER_LM.path != model:
        torch.set_num_threads(1)
        _WORKER_LM = load_lm(model)
    return evaluate_case(case, _WORKER_LM, log=print, **kw)


def weights_digest(path: str) -> str:
    """sha256 of a model: of its file's digest, or of every file of its directory with its name."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root] if root.is_file() else []
    return hashlib.sha256("".join(f"{f.relative_to(root).as_posix() if root.is_dir() else ''}\0{sha256_file(f)}\n"
                                  for f in files).encode()).hexdigest()


def _resumed(partial: Path, run: dict[str, Any], cases: list[Case]) -> list[CaseResult]:
    """The results an interrupted run of the same weights, arguments and cases left in
    `partial` (its first line names the run): `eval --resume` reuses them."""
    if not partial.is_file():
        return []
    lines = partial.read_text(encoding="utf-8").splitlines()
    try:
        head = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        head = {}
    if head.get("run") != run:
        raise InputError("not a partial run of these weights, arguments and functions: run without --resume to "
                         "start again", str(partial), 1, 1)
    results: list[CaseResult] = []
    for line, case in zip(lines[1:], cases):
        try:
            r = CaseResult(**json.loads(line))
        except (json.JSONDecodeError, TypeError):
            break  # the line an interruption cut short
        if (r.family, r.target, r.name) != (case.family, case.target, case.name):
            break
        results.append(r)
    return results


def run_eval(cases: list[Case], lm: LM, *, samples: int, rounds: int, temperature: float, seed: int, timeout: float,
             out: Path, console: Any, command: str, large: int = 300, large_samples: int = 20, jobs: int = 1,
             rounds_temperature: float | None = None, steer: bool = True, resume: bool = False,
             solver_timeout: float = 0.0) -> dict[str, Any]:
    """Evaluate every case (in `jobs` worker processes); functions with more than `large`
    virtual registers draw `large_samples` samples instead of `samples` (each distinct sample
    costs a verification). Each result is appended to `out`/partial.jsonl as it comes, after a
    line naming the run; with `resume`, the results there of the same run are kept and only
    the rest evaluated."""
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    kws: list[dict[str, Any]] = [
        dict(samples=samples if len(single_function(c.pre).registers) <= large else min(samples, large_samples),
             rounds=rounds, temperature=temperature, seed=seed, timeout=timeout, rounds_temperature=rounds_temperature,
             steer=steer, solver_timeout=solver_timeout)
        for c in cases]
    run = {"weights": weights_digest(lm.path), "cases": [[c.family, c.target, c.name] for c in cases], "options": kws}
    partial = out / "partial.jsonl"
    results = _resumed(partial, run, cases) if resume else []
    resumed = len(results)
    if results:
        console.print(f"resuming {partial}: {len(results)} of {len(cases)} functions already evaluated")
    fresh = partial.with_name(partial.name + ".tmp")  # survives an interruption: `eval --resume`
    fresh.write_text(json.dumps({"run": run}) + "\n" + "".join(json.dumps(asdict(r)) + "\n" for r in results),
                     encoding="utf-8")
    fresh.replace(partial)
    todo = list(zip(cases, kws))[len(results):]
    if jobs > 1:
        pool = ProcessPoolExecutor(max_workers=jobs)
        done = pool.map(_worker_case, [(c, lm.path, kw) for c, kw in todo])
    else:
        pool = None
        done = (evaluate_case(c, lm, log=console.print, **kw) for c, kw in todo)
    try:
        for n, ((case, _), result) in enumerate(zip(todo, done), len(results) + 1):
            console.print(f"[{n}/{len(cases)}] {case.family} {case.target}/{case.name}")
            results.append(result)
            with partial.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(result)) + "\n")
    finally:
        if pool is not None:
            pool.shutdown()
    summary = summarise(results)
    hot = temperature if rounds_temperature is None else rounds_temperature
    meta = {"command": command, "model": lm.path, "samples": samples, "large": large, "large_samples": large_samples,
            "rounds": rounds, "temperature": temperature,
            "rounds_temperature": hot, "steer": steer, "seed": seed, "solver_timeout": solver_timeout,
            "seconds": round(time.monotonic() - t0, 1), "resumed": resumed}
    render_tables(results, summary, rounds, console, hot)
    (out / "eval.json").write_text(json.dumps({"meta": meta, "summary": summary, "functions": [asdict(r) for r in results]},
                                              indent=1) + "\n", encoding="utf-8")
    plot(results, summary, out / "eval.png")
    partial.unlink(missing_ok=True)  # the run is complete: eval.json holds every result
    console.print(f"wrote {out / 'eval.json'} and {out / 'eval.png'}")
    return summary
