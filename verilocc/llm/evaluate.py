"""`verilocc eval`: the model loop on held-out kernels, against LLVM's greedy allocator.

Per kernel (a pre/post pair whose source is held out of training):
- single shot: round 1 of the unconstrained loop (greedy decoding, no feedback) VERIFIED;
- k rounds: the unconstrained loop with counterexample feedback VERIFIED within k rounds;
- constrained: the loop with constrained decoding, rounds and seconds to success;
- the VERIFIED constrained allocations are written to `<out>/alloc/<target>/<kernel>.alloc.mir`;
- registers: VGPRs, AGPRs, SGPRs and waves per SIMD of the constrained (else the best
  VERIFIED) allocation beside those of LLVM's post file (the greedy allocator on the same
  pre file). Occupancy uses the target's rules (`Target.waves_per_simd`).
No repair step runs here: the numbers are the model's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verilocc.mir.parser import read_module
from verilocc.llm.dataset import Pair, find_pairs, kernel_source
from verilocc.llm.lm import LM
from verilocc.llm.loop import LoopResult, run_loop
from verilocc.llm.problem import register_usage, single_function
from verilocc.verify import function_target


@dataclass
class KernelResult:
    target: str
    kernel: str
    vregs: int
    single_shot: bool | None  # None: not measured (--constrained-only)
    within_k: bool | None
    k_rounds: int  # rounds used by the unconstrained loop (to success, or all)
    constrained: bool
    constrained_rounds: int
    constrained_seconds: float
    unconstrained_seconds: float
    ours: dict[str, int]
    greedy: dict[str, int]
    note: str = ""


def evaluate_pair(pair: Pair, lm: LM, rounds: int, samples: int, seed: int, timeout: float,
                  log: Callable[[str], None], save: Path | None = None, constrained_only: bool = False) -> KernelResult:
    pre = read_module(pair.pre)
    post = read_module(pair.post)
    fn = single_function(post)
    target = function_target(fn, None, str(pair.post))
    greedy = register_usage(fn, target)
    free: LoopResult | None = None
    if not constrained_only:
        free = run_loop(pre, lm, samples=samples, rounds=rounds, constrained=False, repair=False, seed=seed,
                        timeout=timeout, log=lambda s: log(f"  unconstrained {s}"))
    cons: LoopResult = run_loop(pre, lm, samples=samples, rounds=rounds, constrained=True, repair=False, seed=seed,
                                timeout=timeout, log=lambda s: log(f"  constrained {s}"))
    if save is not None and cons.verified and cons.post is not None:  # for `verilocc verify` and llc afterwards
        from verilocc.mir.printer import print_module

        dest = save / pair.target / f"{pair.kernel}.alloc.mir"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(print_module(cons.post), encoding="utf-8")
    single = None if free is None else bool(free.attempts) and free.attempts[0].verdict == "VERIFIED"
    ours = cons.usage if cons.verified else free.usage if free is not None and free.verified else {}
    note = "" if cons.verified else cons.reason
    return KernelResult(pair.target, pair.kernel, len(cons.problem.order), single, None if free is None else free.verified,
                        0 if free is None else free.rounds, cons.verified, cons.rounds, round(cons.seconds, 1),
                        0.0 if free is None else round(free.seconds, 1), ours, greedy, note)


def held_out_pairs(root: Path, targets: list[str], sources: dict[str, str], held: tuple[str, ...],
                   kernels: list[str] | None) -> list[Pair]:
    out = []
    for p in sorted(find_pairs(root, "corpus"), key=lambda p: p.pre.stat().st_size):  # small kernels first
        if p.target in targets and kernel_source(p.kernel, sources) in held and (not kernels or p.kernel in kernels):
            out.append(p)
    return out


def summarise(results: list[KernelResult]) -> dict[str, Any]:
    n = len(results)

    def rate(xs: list[bool | None]) -> float | None:
        got = [x for x in xs if x is not None]
        return round(sum(got) / len(got), 3) if got else None

    ok = [r for r in results if r.constrained]
    worse = [r for r in results if r.ours and r.ours["waves"] < r.greedy["waves"]]
    return {
        "kernels": n,
        "single_shot_verified": rate([r.single_shot for r in results]),
        "within_k_verified": rate([r.within_k for r in results]),
        "constrained_verified": rate([r.constrained for r in results]),
        "constrained_mean_rounds": round(sum(r.constrained_rounds for r in ok) / len(ok), 2) if ok else None,
        "constrained_mean_seconds": round(sum(r.constrained_seconds for r in ok) / len(ok), 1) if ok else None,
        "fewer_waves_than_greedy": [f"{r.target}/{r.kernel}" for r in worse],
    }


def render_table(results: list[KernelResult], summary: dict[str, Any], k: int, console: Any) -> None:
    from rich.table import Table

    t = Table(title=f"held-out kernels: model loop vs LLVM greedy (k = {k} rounds)")
    for col in ("target", "kernel", "vregs", "1-shot", f"<= {k} rounds", "constrained", "rounds", "seconds",
                "VGPR+AGPR ours/greedy", "SGPR ours/greedy", "waves ours/greedy"):
        t.add_column(col, justify="right" if col not in ("target", "kernel") else "left")
    yes = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}
    for r in results:
        o, g = r.ours, r.greedy
        vec = f"{o['vgpr'] + o['agpr']}/{g['vgpr'] + g['agpr']}" if o else f"-/{g['vgpr'] + g['agpr']}"
        sg = f"{o['sgpr']}/{g['sgpr']}" if o else f"-/{g['sgpr']}"
        wv = f"{o['waves']}/{g['waves']}" if o else f"-/{g['waves']}"
        if o and o["waves"] < g["waves"]:
            wv = f"[red]{wv}[/]"
        t.add_row(r.target, r.kernel, str(r.vregs), yes[r.single_shot], yes[r.within_k], yes[r.constrained],
                  str(r.constrained_rounds) if r.constrained else "-", f"{r.constrained_seconds:.1f}", vec, sg, wv)
    console.print(t)
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.0%}"

    console.print(f"single-shot VERIFIED {pct(summary['single_shot_verified'])}, within {k} rounds "
                  f"{pct(summary['within_k_verified'])}, constrained {pct(summary['constrained_verified'])} "
                  f"(mean {summary['constrained_mean_rounds']} rounds, {summary['constrained_mean_seconds']} s); "
                  f"fewer waves than greedy: {', '.join(summary['fewer_waves_than_greedy']) or 'none'}")


def plot(results: list[KernelResult], summary: dict[str, Any], path: Path, k: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 3]})
    names = ["1-shot", f"<= {k} rounds", "constrained"]
    vals = [summary["single_shot_verified"] or 0.0, summary["within_k_verified"] or 0.0, summary["constrained_verified"] or 0.0]
    ax1.bar(names, vals, color=["#999999", "#6688cc", "#33aa55"])
    for x, key in enumerate(("single_shot_verified", "within_k_verified", "constrained_verified")):
        if summary[key] is None:
            ax1.annotate("not measured", (x, 0.02), ha="center", fontsize=8)
    ax1.set_ylim(0, 1)
    ax1.set_ylabel("VERIFIED rate")
    ax1.set_title(f"{summary['kernels']} held-out kernels")
    labels = [f"{r.target}\n{r.kernel}" for r in results]
    xs = range(len(results))
    ours = [(r.ours["vgpr"] + r.ours["agpr"]) if r.ours else 0 for r in results]
    greedy = [r.greedy["vgpr"] + r.greedy["agpr"] for r in results]
    ax2.bar([x - 0.2 for x in xs], greedy, 0.4, label="LLVM greedy", color="#999999")
    ax2.bar([x + 0.2 for x in xs], ours, 0.4, label="model (constrained)", color="#33aa55")
    for x, r in zip(xs, results):
        if r.ours:
            ax2.annotate(f"{r.ours['waves']}w/{r.greedy['waves']}w", (x, max(ours[x], greedy[x])), ha="center",
                         va="bottom", fontsize=7)
    ax2.set_xticks(list(xs))
    ax2.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax2.set_ylabel("VGPR + AGPR (labels: waves/SIMD ours/greedy)")
    ax2.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_eval(pairs: list[Pair], lm: LM, *, rounds: int, samples: int, seed: int, timeout: float, out: Path,
             console: Any, command: str, constrained_only: bool = False) -> dict[str, Any]:
    results: list[KernelResult] = []
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    for n, pair in enumerate(pairs, 1):
        console.print(f"[{n}/{len(pairs)}] {pair.target}/{pair.kernel}")
        results.append(evaluate_pair(pair, lm, rounds, samples, seed, timeout, console.print, save=out / "alloc",
                                     constrained_only=constrained_only))
        with (out / "partial.jsonl").open("a" if n > 1 else "w", encoding="utf-8") as fh:  # survives an interruption
            fh.write(json.dumps(asdict(results[-1])) + "\n")
    summary = summarise(results)
    summary.update({"command": command, "model": lm.path, "rounds": rounds, "samples": samples, "seed": seed,
                    "seconds": round(time.monotonic() - t0, 1)})
    render_table(results, summary, rounds, console)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps({"summary": summary, "kernels": [asdict(r) for r in results]}, indent=2) + "\n",
                                   encoding="utf-8")
    plot(results, summary, out / "eval.png", rounds)
    console.print(f"wrote {out / 'eval.json'} and {out / 'eval.png'}")
    return summary
