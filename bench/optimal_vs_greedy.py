"""`verilocc allocate` against LLVM's greedy allocator, per function.

For every pre file of a set, each function is allocated with a strategy (`solver`: the SMT
allocator; `model`: the model loop with its repair step), exactly as `verilocc allocate` does
(spill code included, the occupancy floor on), and compared with llc's own post file of the
same function: VGPR+AGPR, SGPR and waves per SIMD (counted the same way for both,
`verilocc.allocators.usage.register_usage`), spill instructions (`spill_instructions`:
stack stores and reloads, SGPR lane moves, VGPR<->AGPR copies, ours and greedy's) and seconds.
With `--llc`, each file whose functions were all VERIFIED is written and llc-19 finishes code
generation from it (`-start-after=virtregrewriter,1 -verify-machineinstrs`; wave32 `$vcc_lo`
operands its MIR parser wants as `$vcc` are patched as the pair maker patches them). Where
that fails, llc-19 runs on LLVM's own post file too; a failure there as well is marked (llc-19
cannot finish from its own output either: a limit of restarting from MIR, not of the allocation)
and counted apart. Each function's ``; ScratchSize`` from that llc run is its scratch bytes,
and greedy's comes from llc allocating the pre file itself (``-start-before=greedy``: after
its stack slot colouring, which llc started from a written post file cannot do); `table`
lists the functions where either side spills with both.

Sets:
- ``corpus``: the 54 kernels of ``../shared/corpus`` (LLVM 19, gfx90a, gfx942, gfx1100).
- ``llvm-tests``: LLVM's own AMDGPU tests as pairs, made by
  ``python scripts/llvm_tests_corpus.py --out build/llvm-tests-alloc --llvm 19 --targets gfx90a,gfx942,gfx1100 --modes reread``
  (``--pairs DIR`` names another directory). ``--every K`` takes every K-th file.

Rows go to a JSON-lines file, one per function; a run resumes where one stopped (functions
already in the file are skipped). `table` renders the files as the tables of docs/allocate.md.

    python bench/optimal_vs_greedy.py run --set corpus --strategy solver --timeout 30 --llc -o bench/results/solver-corpus.jsonl
    python bench/optimal_vs_greedy.py run --set llvm-tests --every 3 --strategy solver --timeout 30 --llc -o bench/results/solver-llvm-tests.jsonl
    python bench/optimal_vs_greedy.py table bench/results/*.jsonl
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "corpus"
LLVM_TESTS = ROOT / "build" / "llvm-tests-alloc"


def files_of(which: str, pairs: Path | None, every: int) -> list[tuple[str, Path, Path]]:
    """(name, pre, post) of a set."""
    out: list[tuple[str, Path, Path]] = []
    if which == "corpus":
        for pre in sorted((pairs or CORPUS).glob("*/*.pre.mir")):
            out.append((f"{pre.parent.name}/{pre.name[:-len('.pre.mir')]}", pre, pre.with_name(pre.name.replace(".pre.", ".post."))))
    else:
        root = pairs or LLVM_TESTS
        for pre in sorted(root.glob("*/*/*.pre.mir")):
            post = pre.with_name(pre.name.replace(".pre.mir", ".post.mir"))
            if post.exists():
                out.append((f"{pre.parent.parent.name}/{pre.parent.name}/{pre.name[:-len('.pre.mir')]}", pre, post))
    return out[::every] if every > 1 else out


_LM: Any = None


def _strategy(name: str, timeout: float):  # noqa: ANN202
    from verilocc.allocators.optimal import solve_function

    if name == "solver":
        return lambda fn, target, module: solve_function(fn, target, timeout=timeout)

    def model(fn, target, module):  # noqa: ANN001, ANN202
        import dataclasses

        from verilocc.allocators.optimal import SolverAllocation
        from verilocc.llm.lm import load_lm_or_default
        from verilocc.llm.loop import run_loop

        global _LM
        if _LM is None:
            _LM = load_lm_or_default(None)
        t0 = time.perf_counter()
        res = run_loop(dataclasses.replace(module, functions=[fn]), _LM, timeout=timeout)
        got = SolverAllocation("feasible" if res.verified else "unknown", dict(res.regs), time.perf_counter() - t0,
                               reason=res.reason, usage=res.usage,
                               function=res.post.functions[0] if res.post is not None else None)
        got.spilled = res.spilled
        return got

    return model


def run_file(item: tuple[str, str, str], strategy: str, timeout: float, llc: int | None,
             done: set[str]) -> list[dict[str, Any]]:
    from verilocc.allocators.usage import register_usage
    from verilocc.allocators.spill import cross_file_copies, spill_instructions
    from verilocc.errors import InputError
    from verilocc.mir.model import Module
    from verilocc.mir.parser import read_module
    from verilocc.mir.printer import print_module
    from verilocc.verify import function_target

    name, pre_path, post_path = item
    rows: list[dict[str, Any]] = []
    try:
        pre = read_module(pre_path)
        post = read_module(post_path)
    except InputError as e:
        return [{"file": name, "function": "", "strategy": strategy, "status": "bad-input", "reason": str(e)}]
    greedy_fns = {f.name: f for f in post.functions}
    allocated = []
    run = _strategy(strategy, timeout)
    for fn in pre.functions:
        key = f"{name}:{fn.name}"
        row: dict[str, Any] = {"file": name, "function": fn.name, "strategy": strategy}
        try:
            target = function_target(fn, None, pre.file)
        except InputError as e:
            rows.append({**row, "status": "bad-input", "reason": str(e)})
            continue
        row["target"] = target.name
        g = greedy_fns.get(fn.name)
        if g is not None:
            u = register_usage(g, target)
            row["greedy"] = {"vector": u["vgpr"] + u["agpr"], "sgpr": u["sgpr"], "waves": u["waves"],
                             "spills": max(0, spill_instructions(g) - cross_file_copies(fn))}
        if key in done:
            continue
        t0 = time.perf_counter()
        try:
            got = run(fn, target, pre)
        except Exception as e:  # noqa: BLE001 - a crash is a result of the bench, not its end
            rows.append({**row, "status": "crash", "reason": f"{type(e).__name__}: {e}",
                         "seconds": round(time.perf_counter() - t0, 2)})
            allocated.append(None)
            continue
        row["seconds"] = round(time.perf_counter() - t0, 2)
        row["status"] = got.status
        row["verified"] = got.function is not None
        if got.reason:
            row["reason"] = got.reason[:300]
        if got.function is not None:
            u = got.usage
            row["ours"] = {"vector": u["vgpr"] + u["agpr"], "sgpr": u["sgpr"], "waves": u["waves"],
                           "spills": max(0, spill_instructions(got.function) - cross_file_copies(fn))}
            if got.spilled is not None:
                row["spilled"] = got.spilled.describe()
        rows.append(row)
        allocated.append(got.function)
    if llc and rows and all(f is not None for f in allocated) and len(allocated) == len(pre.functions):
        target = allocated[0].target_cpu or ""
        scratch: dict[str, int] = {}
        verdict = _llc(print_module(Module(pre.file, pre.ir_text, allocated, pre.ir_blank_lines)), target, llc,
                       scratch=scratch)
        if verdict != "ok" and _llc(Path(post_path).read_text(), target, llc) != "ok":
            verdict += THEIRS_TOO
        theirs: dict[str, int] = {}
        _llc(Path(pre_path).read_text(), target, llc, scratch=theirs, start="-start-before=greedy")
        for r in rows:
            r["llc"] = verdict
            if r.get("ours") and r["function"] in scratch:
                r["ours"]["scratch"] = scratch[r["function"]]
            if r.get("greedy") and r["function"] in theirs:
                r["greedy"]["scratch"] = theirs[r["function"]]
    return rows


def scratch_sizes(asm: str) -> dict[str, int]:
    """llc's own `; ScratchSize:` line per function of an assembly file (the bytes of private
    memory a work-item needs: spill slots and other stack objects, after llc's stack slot
    colouring when llc ran the register allocator itself)."""
    out: dict[str, int] = {}
    name = None
    for ln in asm.splitlines():
        m = re.match(r"^([A-Za-z_.$][\w.$]*):\s*(?:;.*)?$", ln)
        if m and not m.group(1).startswith((".L", "$")):
            name = m.group(1)
        m = re.match(r"^\s*; ScratchSize: (\d+)", ln)
        if m and name is not None:
            out.setdefault(name, int(m.group(1)))
    return out


def _llc(text: str, target: str, version: int = 19, scratch: dict[str, int] | None = None,
         start: str | None = None) -> str:
    """llc-`version` finishing code generation from the MIR `text` (after the last
    VirtRegRewriter: the first on LLVM 19 and older, the second on LLVM 20 and later, whose
    VGPR allocation runs in two stages; `start` another point, `-start-before=greedy` for a
    pre file that llc allocates itself): "ok" or its first error line. `scratch` receives
    llc's ScratchSize per function (`scratch_sizes`).
    Wave32 `$vcc_lo` operands llc's parser wants as `$vcc` are patched as the pair maker does."""
    from verilocc.hunt.pairs import input_triple
    from verilocc.llc.wave32 import WAVE32_VCC_OPCODES, run_learning_wave32

    triple = input_triple(text)  # the module's own: its OS decides the trap handler's SGPRs
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "alloc.mir"

        def run(patched: str) -> subprocess.CompletedProcess[str]:
            path.write_text(patched)
            return subprocess.run([f"llc-{version}", f"-mtriple={triple}", f"-mcpu={target}", "-O3",
                                   "-verify-machineinstrs", start or f"-start-after=virtregrewriter,{1 if version <= 19 else 2}",
                                   str(path), "-o", str(Path(d) / "out.s")], capture_output=True, text=True,
                                  timeout=900, check=False)
        try:
            proc = run_learning_wave32(text, set(WAVE32_VCC_OPCODES), run)
            if proc.returncode == 0 and scratch is not None:
                scratch.update(scratch_sizes((Path(d) / "out.s").read_text()))
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"not run: {e}"
    if proc.returncode == 0:
        return "ok"
    lines = proc.stderr.splitlines()
    passes = [m.group(1) for ln in lines if (m := re.match(r"\s*\d+\.\s+Running pass '([^']+)'", ln))]
    first = (next((ln for ln in lines if "Bad machine code" in ln), None)
             or next((ln for ln in lines if "error" in ln.lower() and "bug report" not in ln), None)
             or (f"crash in {passes[-1]}" if passes else proc.stderr.strip()[:200]))
    return "fail: " + first.replace(d, "").strip()[:200]


def cmd_run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    done: set[str] = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            if r.get("status") not in (None, "crash"):
                done.add(f"{r['file']}:{r['function']}")
    items = files_of(args.set, Path(args.pairs) if args.pairs else None, args.every)
    if args.only:
        only = {x.strip() for x in args.only.split(",")}
        items = [i for i in items if i[0] in only]
    work = [(n, str(a), str(b)) for n, a, b in items]
    with out.open("a") as f:
        def emit(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if r.get("status") is None:
                    continue
                f.write(json.dumps({"set": args.set, **r}, sort_keys=True) + "\n")
                f.flush()
                g, o = r.get("greedy") or {}, r.get("ours") or {}
                print(f"{r['file']:50} {r['function'][:30]:30} {r['status']:10} v+a {o.get('vector', '-')}/{g.get('vector', '-')} "
                      f"waves {o.get('waves', '-')}/{g.get('waves', '-')} spills {o.get('spills', '-')}/{g.get('spills', '-')} "
                      f"scratch {o.get('scratch', '-')}/{g.get('scratch', '-')} {r.get('seconds', 0):.1f}s {r.get('llc', '')}",
                      flush=True)

        if args.jobs <= 1:
            for item in work:
                emit(run_file(item, args.strategy, args.timeout, args.llc, done))
        else:
            with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
                futures = [pool.submit(run_file, item, args.strategy, args.timeout, args.llc, done) for item in work]
                for fut in futures:
                    emit(fut.result())
    return 0


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------
def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


#: Marks an llc verdict where llc-19 also fails from LLVM's own post file (a limit of
#: `-start-after` from MIR, not of the allocation).
THEIRS_TOO = " (llc fails on LLVM's own post file too)"


def summary_rows(rows: list[dict[str, Any]]) -> list[str]:
    """One row per set, target and strategy."""
    out = ["| set | target | strategy | functions | VERIFIED | llc finishes (files all VERIFIED) | waves >= greedy | "
           "VGPR+AGPR <= greedy | with spill code (ours / greedy) | spill instructions (ours / greedy) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], r.get("target", "?"), r["strategy"]), []).append(r)
    for (st, target, strat), rs in sorted(groups.items()):
        rs = [r for r in rs if r.get("status") != "bad-input"]
        ok = [r for r in rs if r.get("verified")]
        cmp_ = [r for r in ok if r.get("greedy")]
        llc_rows = [r for r in ok if "llc" in r]
        theirs = sum(1 for r in llc_rows if r["llc"].endswith(THEIRS_TOO))
        llc = _pct(sum(1 for r in llc_rows if r["llc"] == "ok"), len(llc_rows) - theirs)
        if theirs:
            llc += f"; {theirs} more where llc fails on LLVM's own post too"
        out.append(
            f"| {st} | {target} | {strat} | {len(rs)} | {_pct(len(ok), len(rs))} | {llc} | "
            f"{_pct(sum(1 for r in cmp_ if r['ours']['waves'] >= r['greedy']['waves']), len(cmp_))} | "
            f"{_pct(sum(1 for r in cmp_ if r['ours']['vector'] <= r['greedy']['vector']), len(cmp_))} | "
            f"{sum(1 for r in cmp_ if r['ours']['spills'])} / {sum(1 for r in cmp_ if r['greedy']['spills'])} | "
            f"{sum(r['ours']['spills'] for r in cmp_)} / {sum(r['greedy']['spills'] for r in cmp_)} |")
    return out


def function_rows(rows: list[dict[str, Any]], strategies: list[str]) -> list[str]:
    head = "| function | greedy v+a / sgpr / waves / spills |" + "".join(
        f" {s} v+a / sgpr / waves / spills | {s} s |" for s in strategies)
    out = [head, "|---|---|" + "---|---|" * len(strategies)]
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(f"{r['file']}" + (f" `{r['function']}`" if "/" in r["file"] and r["file"].count("/") > 1 else ""), {})[r["strategy"]] = r
    for name in sorted(by):
        rs = by[name]
        g = next((r.get("greedy") for r in rs.values() if r.get("greedy")), None)
        line = f"| {name} | " + (f"{g['vector']} / {g['sgpr']} / {g['waves']} / {g['spills']}" if g else "-") + " |"
        for s in strategies:
            r = rs.get(s)
            if r is None:
                line += " not run | |"
            elif r.get("ours"):
                o = r["ours"]
                line += f" {o['vector']} / {o['sgpr']} / {o['waves']} / {o['spills']} | {r.get('seconds', 0):.0f} |"
            else:
                line += f" {r['status']} | {r.get('seconds', 0):.0f} |"
        out.append(line)
    return out


def scratch_rows(rows: list[dict[str, Any]]) -> list[str]:
    """Functions where either side spills, with llc's ScratchSize for both (`--llc`): ours from
    the written file, greedy's from llc allocating the pre file itself."""
    out = ["| function | strategy | VGPR+AGPR (ours / greedy) | waves (ours / greedy) | scratch bytes (ours / greedy) | "
           "spill instructions (ours / greedy) | s |", "|---|---|---|---|---|---|---|"]
    total: dict[str, list[int]] = {}
    for r in sorted(rows, key=lambda r: (r["strategy"], r["file"], r["function"])):
        g, o = r.get("greedy") or {}, r.get("ours") or {}
        if "scratch" not in g or "scratch" not in o or not (g["scratch"] or o["scratch"] or g["spills"] or o["spills"]):
            continue
        t = total.setdefault(r["strategy"], [0, 0, 0, 0, 0, 0])
        for k, x in enumerate((o["vector"], g["vector"], o["scratch"], g["scratch"], o["spills"], g["spills"])):
            t[k] += x
        out.append(f"| {r['file']} `{r['function']}` | {r['strategy']} | {o['vector']} / {g['vector']} | "
                   f"{o['waves']} / {g['waves']} | {o['scratch']} / {g['scratch']} | {o['spills']} / {g['spills']} | "
                   f"{r.get('seconds', 0):.0f} |")
    for strat, t in sorted(total.items()):
        out.append(f"| total | {strat} | {t[0]} / {t[1]} | | {t[2]} / {t[3]} | {t[4]} / {t[5]} | |")
    return out if total else []


def below_goal(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in sorted(rows, key=lambda r: (r["strategy"], r["file"], r["function"])):
        if r.get("status") == "bad-input":
            continue
        g, o = r.get("greedy"), r.get("ours")
        why = []
        if not r.get("verified"):
            why.append(f"{r.get('status')}: {r.get('reason', '')[:160]}")
        elif g:
            if o["waves"] < g["waves"]:
                why.append(f"waves {o['waves']} < {g['waves']}")
            if o["vector"] > g["vector"]:
                why.append(f"VGPR+AGPR {o['vector']} > {g['vector']}")
        if r.get("llc", "ok") != "ok" and r.get("verified") and not r["llc"].endswith(THEIRS_TOO):
            why.append(f"llc: {r['llc']}")
        if why:
            out.append(f"- {r['strategy']} {r['file']} `{r['function']}`: {'; '.join(why)}")
    return out


def cmd_table(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    for path in args.files:
        for line in Path(path).read_text().splitlines():
            rows.append(json.loads(line))
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        latest[(r["strategy"], r["file"], r["function"])] = r
    rows = list(latest.values())
    print("\n".join(summary_rows(rows)))
    strategies = sorted({r["strategy"] for r in rows})
    corpus = [r for r in rows if r["set"] == "corpus"]
    if corpus:
        print()
        print("\n".join(function_rows(corpus, strategies)))
    spills = scratch_rows(rows)
    if spills:
        print()
        print("\n".join(spills))
    print()
    print("\n".join(below_goal(rows)) or "(every function meets the goals)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="allocate every function of a set and append one JSON line per function")
    r.add_argument("--set", choices=("corpus", "llvm-tests"), default="corpus")
    r.add_argument("--pairs", default=None, help="the set's directory (default ../shared/corpus, build/llvm-tests-alloc)")
    r.add_argument("--strategy", choices=("solver", "model"), default="solver")
    r.add_argument("--timeout", type=float, default=30.0, help="solver seconds per function (default 30)")
    r.add_argument("--every", type=int, default=1, metavar="K", help="every K-th file only")
    r.add_argument("--only", default="", help="comma-separated file names of the set")
    r.add_argument("--llc", nargs="?", type=int, const=19, default=None, metavar="VERSION",
                   help="finish code generation with llc-VERSION (default 19) from each written file")
    r.add_argument("-j", "--jobs", type=int, default=1)
    r.add_argument("-o", "--output", required=True, help="JSON-lines file (appended; a run resumes)")
    r.set_defaults(func=cmd_run)
    t = sub.add_parser("table", help="markdown tables from JSON-lines files")
    t.add_argument("files", nargs="+")
    t.set_defaults(func=cmd_table)
    args = ap.parse_args()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
