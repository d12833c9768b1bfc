#!/usr/bin/env python3
"""Benchmark: `verilocc verify` beside llc's MachineVerifier, start-up, a size sweep, fuzzing.

    python bench/verify_bench.py [--repeat 3] [--llc llc-19] [--fuzz-examples 100] [--no-fuzz]
                                 [--no-sweep] [--plot bench/verify_sweep.png] [--compare DIR]

One run prints, measured in child processes (`--repeat` times each, medians):
1. gfx90a/fa_d128_kv4 (2,481 instructions, the largest corpus kernel for gfx90a):
   `verilocc verify POST --pre PRE` (all layers) beside
   `llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -run-pass=none -verify-machineinstrs POST`
   and beside itself with its core interpreted (`VERILOCC_PURE=1`; `verilocc.native`), the
   three measured in turn, run by run: wall and CPU seconds, peak resident memory (GNU time's,
   `GNU_TIME`), their ratios, and where verilocc's time goes (seconds per layer, from its own
   `--timings` JSON);
2. a size sweep over corpus kernels of 100 to 2,600 instructions, the same two commands:
   a table of seconds and microseconds per instruction, the exponent of a power-law fit
   (1.0 is linear) and a PNG plot (`--plot`, matplotlib); then, outside the fit, LLVM's
   tuple-allocation-failure test through llc-14 (1024-bit SGPR tuples spilled to VGPR lanes);
3. start-up: `verilocc --version`, `verilocc verify --help` and verifying
   examples/gfx90a/vadd (29 instructions);
4. with `--compare DIR` (another checkout, e.g. the main branch): the fa_d128_kv4, tuple and
   vadd verifications, a wrong allocation (the tuple pair's `clobber-def` mutant of the findings
   snapshot: one definition writes another register; REJECTED), `--version` and `verify --help`
   of both, measured in turn, run by run, so that a change is measured against what it changes
   under the same load;
5. fuzzing (`bench/batch_bench.py`): the same `verilocc fuzz` chunk with 1 and 2 local worker
   processes and on a Dask LocalCluster of 2 workers, examples per second; the three must
   print the same summary (the same examples and verdicts).

Pairs are `<target>/<kernel>` under ../shared/corpus. The package is byte-compiled first, so
that start-up is measured as an installed verilocc starts. Ratios are measured in this one
run on this machine; compare them, not absolute numbers, across machines. On a machine that
other work shares, CPU seconds vary less than wall seconds.
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from verilocc import native  # noqa: E402
from verilocc.mir.parser import read_module  # noqa: E402

#: This checkout's core as its runs use it (`verilocc.native.state`; the bench's own environment aside).
CORE = native.state(honour_env=False)

CORPUS = ROOT.parent / "shared" / "corpus"
HEADLINE = "gfx90a/fa_d128_kv4"
SWEEP = ["gfx90a/sgemm_naive", "gfx90a/reduce_sum", "gfx90a/softmax_row", "gfx90a/sgemm_128x128_t8x8",
         "gfx90a/fa_mfma_d128", "gfx90a/hgemm_mfma32_w128x64", "gfx90a/fa_d64_kv8", "gfx90a/fa_d128_kv4",
         "gfx1100/fa_d128_kv4"]
SMALL = ROOT / "examples" / "gfx90a" / "vadd"
# LLVM's tuple-allocation-failure.ll through llc-14 (645 instructions): 1024-bit SGPR tuples,
# partly defined, spilled to VGPR lanes; locations that hold many values known equal.
TUPLES = ROOT / "tests" / "fixtures" / "fidelity" / "tuple-allocation-failure.llvm14.gfx908"
FUZZ_SEED = 139763


def wrong_tuples(out: Path) -> Path:
    """The tuple pair's post file with the findings snapshot's `clobber-def` mutant
    (`mutant` of scripts/findings_snapshot.py), written to `out`."""
    import importlib.util

    from verilocc.mir.printer import print_module

    spec = importlib.util.spec_from_file_location("findings_snapshot", ROOT / "scripts" / "findings_snapshot.py")
    assert spec is not None and spec.loader is not None
    snapshot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(snapshot)
    name = f"fixtures/{TUPLES.relative_to(ROOT / 'tests' / 'fixtures').as_posix()}"
    got = snapshot.mutant(name, read_module(Path(f"{TUPLES}.post.mir")), "clobber-def", 0)
    assert got is not None
    path = out / "tuples-clobber-def.post.mir"
    path.write_text(print_module(got.module))
    return path


class Run:
    """Medians of repeated runs of one command."""

    def __init__(self, runs: list[tuple[float, float, float, str]]) -> None:
        self.wall = statistics.median(r[0] for r in runs)
        self.cpu = statistics.median(r[1] for r in runs)
        self.mib = max(r[2] for r in runs)
        self.out = runs[-1][3]

    @classmethod
    def of(cls, runs: list[Run]) -> Run:
        """The medians of single runs (`measure(..., 1)`) made in turn with other commands."""
        return cls([(r.wall, r.cpu, r.mib, r.out) for r in runs])


# Linux records, when a process calls exec, the peak resident size of the memory the new
# program replaces, so a command started from this process reports at least this process's own
# size (tens of MiB once the sweep has read its kernels). GNU time, a small process, starts the
# command itself and reports the command's own peak; without it, wait4's figure is given.
GNU_TIME = Path("/usr/bin/time")


def measure(cmd: list[str], repeat: int, tree: Path = ROOT, pure: bool = False) -> Run:
    """Wall seconds, CPU seconds (user + system, the command's children included) and peak RSS
    in MiB of `cmd`, `repeat` times, with the verilocc of `tree` (this checkout by default);
    `pure`: with its core interpreted (`VERILOCC_PURE=1`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VERILOCC_PURE")}
    env["PYTHONPATH"] = str(tree)
    if pure:
        env["VERILOCC_PURE"] = "1"
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            peak = Path(tmp) / "peak_kib"
            full = [str(GNU_TIME), "-f", "%M", "-o", str(peak), *cmd] if GNU_TIME.exists() else cmd
            start = time.perf_counter()
            proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tree)
            assert proc.stdout is not None
            out = proc.stdout.read().decode()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            code = os.waitstatus_to_exitcode(status)
            if code not in (0, 1, 3):
                sys.exit(f"{' '.join(cmd)}: exit {code}")
            # GNU time writes "Command exited with non-zero status N" first when it is not 0.
            kib = int(peak.read_text().split()[-1]) if GNU_TIME.exists() else usage.ru_maxrss
        runs.append((wall, usage.ru_utime + usage.ru_stime, kib / 1024.0, out))
    return Run(runs)


def instructions(post: Path) -> int:
    return sum(len(b.instructions) for f in read_module(post).functions for b in f.blocks)


def verify_cmd(pair: str, timings: bool = False) -> list[str]:
    return pair_cmd(CORPUS / pair, timings)


def pair_cmd(stem: Path, timings: bool = False) -> list[str]:
    """`verilocc verify STEM.post.mir --pre STEM.pre.mir`."""
    return [sys.executable, "-m", "verilocc", "verify", f"{stem}.post.mir", "--pre", f"{stem}.pre.mir",
            *(["--format", "json", "--timings"] if timings else [])]


def llc_cmd(llc: str, pair: str) -> list[str]:
    cpu = pair.split("/")[0]
    return [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-run-pass=none", "-verify-machineinstrs",
            str(CORPUS / f"{pair}.post.mir"), "-o", os.devnull]


def headline(llc: str | None, repeat: int) -> None:
    """verilocc, llc and verilocc with its core interpreted, measured in turn, run by run."""
    runs: dict[str, list[Run]] = {"verilocc": [], "llc": [], "pure": []}
    for _ in range(repeat):
        runs["verilocc"].append(measure(verify_cmd(HEADLINE, timings=True), 1))
        if llc is not None:
            runs["llc"].append(measure(llc_cmd(llc, HEADLINE), 1))
        runs["pure"].append(measure(verify_cmd(HEADLINE, timings=True), 1, pure=True))
    v, p = Run.of(runs["verilocc"]), Run.of(runs["pure"])
    doc = json.loads(v.out)
    stats = doc["functions"][0]["stats"]
    n = instructions(CORPUS / f"{HEADLINE}.post.mir")
    print(f"## {HEADLINE} ({n:,} instructions): verilocc verify (all layers) beside llc's MachineVerifier, "
          "measured in turn\n")
    print("| command | wall s | CPU s | peak MiB |\n|---|---:|---:|---:|")
    print(f"| `verilocc verify {HEADLINE}.post.mir --pre {HEADLINE}.pre.mir` ({doc['verdict']}; core "
          f"{CORE}) | {v.wall:.3f} | {v.cpu:.3f} | {v.mib:.0f} |")
    print(f"| the same, core interpreted (`VERILOCC_PURE=1`; {json.loads(p.out)['verdict']}) | "
          f"{p.wall:.3f} | {p.cpu:.3f} | {p.mib:.0f} |")
    if llc is None:
        print("\nllc not found: no ratio")
    else:
        lr = Run.of(runs["llc"])
        print(f"| `{Path(llc).name} -mcpu={HEADLINE.split('/')[0]} -run-pass=none -verify-machineinstrs` | "
              f"{lr.wall:.3f} | {lr.cpu:.3f} | {lr.mib:.0f} |")
        print(f"| ratio | {v.wall / lr.wall:.1f}x | {v.cpu / lr.cpu:.1f}x | {v.mib / lr.mib:.1f}x |")
        print(f"| ratio, core interpreted | {p.wall / lr.wall:.1f}x | {p.cpu / lr.cpu:.1f}x | {p.mib / lr.mib:.1f}x |")
    layers = " ".join(f"{k[len('seconds_'):]} {stats[k]:.3f} s" for k in
                      ("seconds_prepare", "seconds_constraints", "seconds_value_flow", "seconds_equivalence")
                      if k in stats)
    print(f"\nverilocc's own seconds per layer (wall, parsing and start-up not included): {layers}; "
          f"z3 in layer 1 {stats.get('solver_seconds', 0):.3f} s; {stats.get('disjoint_constraints')} disjointness "
          f"constraints; {stats.get('obligations')} equivalence obligations, "
          f"{stats.get('sent_to_solver')} sent to z3")


def sweep(llc: str | None, repeat: int, plot: Path | None) -> None:
    print("\n## Size sweep: seconds and microseconds per instruction\n")
    print("| pair | instructions | verilocc wall s | CPU s | MiB | us/instr (wall) | llc wall s | llc CPU s | "
          "ratio wall | ratio CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for pair in SWEEP:
        if not (CORPUS / f"{pair}.post.mir").exists():
            print(f"| {pair} | not in {CORPUS} |")
            continue
        n = instructions(CORPUS / f"{pair}.post.mir")
        v = measure(verify_cmd(pair), repeat)
        lr = measure(llc_cmd(llc, pair), repeat) if llc else None
        rows.append((pair, n, v, lr))
        llc_cells = f"{lr.wall:.3f} | {lr.cpu:.3f} | {v.wall / lr.wall:.1f}x | {v.cpu / lr.cpu:.1f}x" if lr else "- | - | - | -"
        print(f"| {pair} | {n:,} | {v.wall:.3f} | {v.cpu:.3f} | {v.mib:.0f} | {1e6 * v.wall / n:.0f} | {llc_cells} |",
              flush=True)
    if len(rows) >= 2:
        xs = [math.log(n) for _, n, _, _ in rows]
        for what, pick in (("wall", lambda r: r.wall), ("CPU", lambda r: r.cpu)):
            ys = [math.log(pick(v)) for _, _, v, _ in rows]
            mx, my = statistics.fmean(xs), statistics.fmean(ys)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
            print(f"\nverilocc {what} time ~ instructions^{slope:.2f} over the sweep (1.00 is linear)", end="")
        print()
    if plot is not None and rows:
        draw(rows, plot)
        print(f"\nplot: {plot.relative_to(ROOT) if plot.is_relative_to(ROOT) else plot}")
    n = instructions(TUPLES.with_name(TUPLES.name + ".post.mir"))
    v = measure(pair_cmd(TUPLES), repeat)
    print(f"\nOutside the fit, {TUPLES.relative_to(ROOT)} (LLVM's tuple-allocation-failure.ll, llc-14; {n:,} "
          f"instructions, 1024-bit SGPR tuples spilled to VGPR lanes): {v.wall:.3f} s wall, {v.cpu:.3f} s CPU, "
          f"{v.mib:.0f} MiB, {1e6 * v.wall / n:.0f} us per instruction")


def draw(rows: list[tuple[str, int, Run, Run | None]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    ns = [n for _, n, _, _ in rows]
    ax.plot(ns, [1e6 * v.wall / n for _, n, v, _ in rows], "o-", label="verilocc verify, wall")
    ax.plot(ns, [1e6 * v.cpu / n for _, n, v, _ in rows], "s--", label="verilocc verify, CPU")
    if all(lr is not None for *_, lr in rows):
        ax.plot(ns, [1e6 * lr.wall / n for _, n, _, lr in rows if lr is not None], "^-",
                label="llc -verify-machineinstrs, wall")
    ax.set_xlabel("instructions (allocated program)")
    ax.set_ylabel("microseconds per instruction")
    ax.set_ylim(bottom=0)
    ax.set_title("time per instruction over corpus kernels", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def compare(other: Path, repeat: int) -> None:
    """This checkout beside another one (`--compare DIR`, e.g. `git worktree add DIR main`), the
    two measured in turn, run by run, so that both see the same load."""
    compileall.compile_dir(other / "verilocc", quiet=1)
    print(f"\n## This checkout beside {other} (wall and CPU, median of {repeat}, measured in turn)\n")
    print("| command | before wall s | before CPU s | before MiB | now wall s | now CPU s | now MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    small = pair_cmd(SMALL)
    with tempfile.TemporaryDirectory(prefix="verilocc-bench-") as tmp:
        _compare_rows(other, repeat, small, wrong_tuples(Path(tmp)))


def _compare_rows(other: Path, repeat: int, small: list[str], wrong: Path) -> None:
    for label, cmd in ((f"verify {HEADLINE}", verify_cmd(HEADLINE)), ("verify examples/gfx90a/vadd", small),
                       (f"verify {TUPLES.name}", pair_cmd(TUPLES)),
                       (f"verify {TUPLES.name}, its clobber-def mutant (REJECTED)",
                        [sys.executable, "-m", "verilocc", "verify", str(wrong), "--pre", f"{TUPLES}.pre.mir"]),
                       ("--version", [sys.executable, "-m", "verilocc", "--version"]),
                       ("verify --help", [sys.executable, "-m", "verilocc", "verify", "--help"])):
        runs: dict[Path, list[Run]] = {other: [], ROOT: []}
        for _ in range(repeat):
            for tree in runs:
                runs[tree].append(measure(cmd, 1, tree))
        cells = []
        for tree in (other, ROOT):
            rs = runs[tree]
            assert len({r.out for r in rs}) == 1
            cells.append(f"{statistics.median(r.wall for r in rs):.3f} | {statistics.median(r.cpu for r in rs):.3f} | "
                         f"{max(r.mib for r in rs):.0f}")
        if runs[other][0].out != runs[ROOT][0].out:
            cells.append("(outputs differ)")
        print(f"| `verilocc {label}` | {' | '.join(cells)} |")


def startup(repeat: int) -> None:
    print("\n## Start-up and a small kernel (wall, median)\n")
    print("| command | wall s | CPU s | MiB |\n|---|---:|---:|---:|")
    small = pair_cmd(SMALL)
    for label, cmd in (("verilocc --version", [sys.executable, "-m", "verilocc", "--version"]),
                       ("verilocc verify --help", [sys.executable, "-m", "verilocc", "verify", "--help"]),
                       ("verilocc verify examples/gfx90a/vadd.post.mir --pre examples/gfx90a/vadd.pre.mir", small)):
        r = measure(cmd, max(repeat, 5))
        print(f"| `{label}` | {r.wall:.3f} | {r.cpu:.3f} | {r.mib:.0f} |")


def fuzz(examples: int) -> None:
    import batch_bench  # bench/batch_bench.py: the same chunk through each runner, same bytes required

    with tempfile.TemporaryDirectory() as save:
        batch_bench.table(f"## Fuzzing: verilocc fuzz, {examples} examples from seed {FUZZ_SEED}", "examples",
                          examples, ["fuzz", "--examples", str(examples), "--seed", str(FUZZ_SEED), "--save", save])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--llc", default="llc-19")
    ap.add_argument("--fuzz-examples", type=int, default=100, metavar="N")
    ap.add_argument("--no-fuzz", action="store_true", help="leave out the fuzzing section")
    ap.add_argument("--no-sweep", action="store_true", help="leave out the size sweep")
    ap.add_argument("--plot", type=Path, default=ROOT / "bench" / "verify_sweep.png", help="the sweep's PNG plot")
    ap.add_argument("--compare", type=Path, metavar="DIR",
                    help="also measure the verilocc of another checkout DIR beside this one, in turn")
    args = ap.parse_args()
    if not (CORPUS / f"{HEADLINE}.post.mir").exists():
        print(f"{CORPUS} not found: the benchmark needs ../shared/corpus", file=sys.stderr)
        return 2
    compileall.compile_dir(ROOT / "verilocc", quiet=1)
    llc = shutil.which(args.llc)
    print(f"# verilocc verify benchmark: median of {args.repeat} runs; verifier core {CORE}; llc = {llc or 'not found'}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start\n")
    headline(llc, args.repeat)
    if not args.no_sweep:
        sweep(llc, args.repeat, args.plot)
    startup(args.repeat)
    if args.compare is not None:
        compare(args.compare.resolve(), args.repeat)
    if not args.no_fuzz:
        fuzz(args.fuzz_examples)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    sys.exit(main())
