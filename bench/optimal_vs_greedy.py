"""`verilocc allocate` against LLVM's greedy allocator, per function.

For every pre file of a set, each function is allocated with a strategy (`solver`: the SMT
allocator; `model`: the model loop with its repair step), exactly as `verilocc allocate` does
(spill code included, the occupancy floor on), and compared with llc's own post file of the
same function: VGPR+AGPR, SGPR and waves per SIMD (counted the same way for both,
`verilocc.allocators.usage.register_usage`), spill instructions (`spill_instructions`:
stack stores and reloads, SGPR lane moves, VGPR<->AGPR copies, ours and greedy's) and seconds.
With `--llc`, each file whose functions were all VERIFIED is written and llc-19 finishes code
generation from it (`-start-after=virtregrewriter,1 -verify-machineinstrs`; wave32 `$vcc_lo`
operands its MIR parser wants as `$vcc` are patched as the pair maker patches them), and so it
does from LLVM's own post file. A failure on both is marked (llc cannot finish from its own
output either: a limit of restarting from MIR, not of the allocation) and counted apart.

Judged on the final assembly. Where llc finishes, its own resource lines of both assemblies
(`verilocc.llc.asm`: `; NumVgprs`, `; NumAgprs`, `; NumSgprs` or `; TotalNumSgprs`,
`; ScratchSize`, `; Occupancy`) are stored with the row: waves per SIMD, VGPR+AGPR, SGPRs and
scratch bytes as the code that runs has them. Spill instructions are also counted weighted by
loop depth: one at depth d (the natural loops of the MIR's own control-flow graph,
`verilocc.analysis.cfg.loop_depths`) counts `LOOP_WEIGHT`**d. Greedy's seconds are llc's wall
time allocating from the pre file (`-start-before=greedy -stop-after=virtregrewriter,N`,
reading and printing included).
Greedy's scratch bytes as llc's stack slot colouring leaves them are also stored
(``greedy.scratch``, with ``ours.scratch`` from our finished file): llc allocating the pre file
itself (``-start-before=greedy``), since llc restarted from a written post file cannot colour
slots (its LiveStacks analysis is empty there); the spiller colours ours itself. `table` lists
the functions where either side spills with both.

Sets:
- ``heldout``: the kernels of ``bench/heldout`` (bench/heldout/README.md: written for this
  bench, of kinds the training data lacks, never used to tune anything), as pairs made by
  ``make heldout-pairs`` in ``build/heldout-bench/pairs-llc-19`` and ``pairs-llc-22``
  (``--llvm 19`` or ``22`` picks one; ``--pairs DIR`` another). Every written file is finished
  by the llc of its pre file's version (``--llc`` is implied), and ``run`` ends with the
  per-kernel table of model, solver and greedy on the final assembly.
- ``corpus``: the 54 kernels of ``../shared/corpus`` (LLVM 19, gfx90a, gfx942, gfx1100).
- ``llvm-tests``: LLVM's own AMDGPU tests as pairs, made by
  ``python scripts/llvm_tests_corpus.py --out build/llvm-tests-alloc --llvm 19 --targets gfx90a,gfx942,gfx1100 --modes reread``
  (``--pairs DIR`` names another directory). ``--every K`` takes every K-th file.

Rows go to a JSON-lines file, one per function; a run resumes where one stopped (functions
already in the file are skipped). `table` renders the files as the tables of docs/allocate.md.

    python bench/optimal_vs_greedy.py run --set corpus --strategy solver --timeout 30 --llc -o bench/results/solver-corpus.jsonl
    python bench/optimal_vs_greedy.py run --set llvm-tests --every 3 --strategy solver --timeout 30 --llc -o bench/results/solver-llvm-tests.jsonl
    python bench/optimal_vs_greedy.py run --set heldout --llvm 19 --only 'llc-19/gfx90a/*' --strategy solver --timeout 20 -o bench/results/heldout.jsonl
    python bench/optimal_vs_greedy.py table bench/results/*.jsonl

`--strategy model,solver` runs both. The model strategy needs the trained model (the one shipped
in the package, or `--model PATH`); without one the bench says so and runs the solver alone.
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
HELDOUT = ROOT / "build" / "heldout-bench"  # pairs-llc-<V>/<target>/<kernel>.{pre,post}.mir: make heldout-pairs

#: A spill instruction inside d nested loops counts LOOP_WEIGHT**d in the weighted count.
LOOP_WEIGHT = 10


def files_of(which: str, pairs: Path | None, every: int, llvm: int = 19) -> list[tuple[str, Path, Path]]:
    """(name, pre, post) of a set."""
    out: list[tuple[str, Path, Path]] = []
    if which == "heldout":
        for pre in sorted((pairs or HELDOUT / f"pairs-llc-{llvm}").glob("*/*.pre.mir")):
            post = pre.with_name(pre.name.replace(".pre.mir", ".post.mir"))
            if post.exists():
                out.append((f"llc-{llvm}/{pre.parent.name}/{pre.name[:-len('.pre.mir')]}", pre, post))
    elif which == "corpus":
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
_MODEL_PATH: str | None = None


def load_model(path: str | None) -> str | None:
    """Load the model the model strategy uses (`--model PATH`, or the one shipped in the
    package) once per process: None, or why it cannot be used."""
    global _LM, _MODEL_PATH
    _MODEL_PATH = path
    if _LM is None:
        try:
            from verilocc.llm.lm import load_lm_or_default

            _LM = load_lm_or_default(path)
        except Exception as e:  # noqa: BLE001 - missing files, a missing torch: the reason is the message
            return f"{type(e).__name__}: {e}".splitlines()[0]
    return None


def loop_weighted_spills(post: Any, pre: Any) -> tuple[int, int]:
    """(spill instructions, the same weighted by loop depth) of the allocated function `post`
    of the virtual function `pre`: `spill_instructions` per block, less the COPYs between the
    VGPR-only and AGPR-only classes the block has in `pre` (those are the program's, not spill
    code), each counting LOOP_WEIGHT**depth with the block's depth in `post`'s own CFG."""
    import dataclasses

    from verilocc.allocators.spill import spill_instructions
    from verilocc.analysis.cfg import build_cfg, loop_depths
    from verilocc.analysis.operands import vreg_classes
    from verilocc.target import RegFile

    classes = vreg_classes(pre)
    vector = {frozenset({RegFile.VGPR}), frozenset({RegFile.AGPR})}
    program_copies: dict[int, int] = {}
    for b in pre.blocks:
        n = 0
        for ins in b.instructions:
            if ins.opcode == "COPY":
                files = [classes[op.vreg].files for op in ins.operands if op.kind == "reg" and op.vreg is not None]
                n += len(files) == 2 and {frozenset(f) for f in files} == vector
        program_copies[b.number] = n
    depth = loop_depths(build_cfg(post))
    plain = weighted = 0
    for b in post.blocks:
        n = max(0, spill_instructions(dataclasses.replace(post, blocks=[b])) - program_copies.get(b.number, 0))
        plain += n
        weighted += n * LOOP_WEIGHT ** depth.get(b.number, 0)
    return plain, weighted


def _strategy(name: str, timeout: float):  # noqa: ANN202
    from verilocc.allocators.optimal import solve_function

    if name == "solver":
        return lambda fn, target, module: solve_function(fn, target, timeout=timeout)

    def model(fn, target, module):  # noqa: ANN001, ANN202
        import dataclasses

        from verilocc.allocators.optimal import SolverAllocation
        from verilocc.llm.loop import run_loop

        why = load_model(_MODEL_PATH)
        if why is not None:
            raise RuntimeError(f"no model: {why}")
        t0 = time.perf_counter()
        res = run_loop(dataclasses.replace(module, functions=[fn]), _LM, timeout=timeout)
        got = SolverAllocation("feasible" if res.verified else "unknown", dict(res.regs), time.perf_counter() - t0,
                               reason=res.reason, usage=res.usage,
                               function=res.post.functions[0] if res.post is not None else None)
        got.spilled = res.spilled
        return got

    return model


def run_file(item: tuple[str, str, str], strategy: str, timeout: float, llc: int | None,
             done: set[str], keep: str | None = None) -> list[dict[str, Any]]:
    from verilocc.allocators.usage import register_usage
    from verilocc.errors import InputError
    from verilocc.llc.asm import resources
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
    allocated: list[Any] = []
    run = _strategy(strategy, timeout)
    for fn in pre.functions:
        key = f"{strategy}:{name}:{fn.name}"
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
            spills, weighted = loop_weighted_spills(g, fn)
            row["greedy"] = {"vector": u["vgpr"] + u["agpr"], "sgpr": u["sgpr"], "waves": u["waves"],
                             "spills": spills, "spills_weighted": weighted}
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
            spills, weighted = loop_weighted_spills(got.function, fn)
            row["ours"] = {"vector": u["vgpr"] + u["agpr"], "sgpr": u["sgpr"], "waves": u["waves"],
                           "spills": spills, "spills_weighted": weighted}
            if got.spilled is not None:
                row["spilled"] = got.spilled.describe()
        rows.append(row)
        allocated.append(got.function)
    if llc and rows:
        cpu = pre.functions[0].target_cpu or ""
        post_text = Path(post_path).read_text()
        theirs, greedy_asm = _llc(post_text, cpu, llc)
        greedy_res = resources(greedy_asm)
        greedy_s = _greedy_seconds(Path(pre_path).read_text(), cpu, llc)
        coloured = _greedy_scratch(Path(pre_path).read_text(), cpu, llc)
        ours_res: dict[str, dict[str, int]] = {}
        verdict = None
        if all(f is not None for f in allocated) and len(allocated) == len(pre.functions):
            written = print_module(Module(pre.file, pre.ir_text, allocated, pre.ir_blank_lines))
            verdict, ours_asm = _llc(written, cpu, llc)
            ours_res = resources(ours_asm)
            if verdict != "ok" and keep:  # the written file llc rejects, to look at
                kept = Path(keep) / f"{strategy}-{name.replace('/', '-')}.mir"
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(written)
            if verdict != "ok" and theirs != "ok":
                verdict += THEIRS_TOO
        for r in rows:
            if verdict is not None:
                r["llc"] = verdict
            r["asm"] = {"greedy": greedy_res.get(r["function"]), "ours": ours_res.get(r["function"]),
                        "llc": llc, "greedy_seconds": greedy_s}
            if r.get("ours") and "scratch" in (ours_res.get(r["function"]) or {}):
                r["ours"]["scratch"] = ours_res[r["function"]]["scratch"]
            if r.get("greedy") and r["function"] in coloured:
                r["greedy"]["scratch"] = coloured[r["function"]]
    return rows


def _run_llc(text: str, target: str, version: int, args: list[str]) -> tuple[subprocess.CompletedProcess[str], str, float, str]:
    """llc-`version` on the MIR `text` with `args` (the output is `-o out.s`): the process,
    what it wrote, its wall time and the temporary directory's name (for error lines).
    Wave32 `$vcc_lo` operands llc's parser wants as `$vcc` are patched as the pair maker does."""
    from verilocc.hunt.pairs import input_triple
    from verilocc.llc.wave32 import WAVE32_VCC_OPCODES, run_learning_wave32

    triple = input_triple(text)  # the module's own: its OS decides the trap handler's SGPRs
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "alloc.mir"
        out = Path(d) / "out.s"

        def run(patched: str) -> subprocess.CompletedProcess[str]:
            path.write_text(patched)
            return subprocess.run([f"llc-{version}", f"-mtriple={triple}", f"-mcpu={target}", "-O3", *args,
                                   str(path), "-o", str(out)], capture_output=True, text=True,
                                  timeout=900, check=False)
        t0 = time.perf_counter()
        proc = run_learning_wave32(text, set(WAVE32_VCC_OPCODES), run)
        seconds = time.perf_counter() - t0
        written = out.read_text() if proc.returncode == 0 and out.exists() else ""
    return proc, written, seconds, d


def _rewriter(version: int) -> int:
    """The instance of the last VirtRegRewriter: the second on LLVM 19 and older, the third on
    LLVM 20 and later (whose VGPR allocation runs in two stages)."""
    return 1 if version <= 19 else 2


def _llc(text: str, target: str, version: int = 19) -> tuple[str, str]:
    """llc-`version` finishing code generation from the MIR `text` (after the last
    VirtRegRewriter): ("ok", the assembly) or (its first error line, "")."""
    try:
        proc, asm, _, d = _run_llc(text, target, version,
                                   ["-verify-machineinstrs", f"-start-after=virtregrewriter,{_rewriter(version)}"])
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"not run: {e}", ""
    if proc.returncode == 0:
        return "ok", asm
    lines = proc.stderr.splitlines()
    passes = [m.group(1) for ln in lines if (m := re.match(r"\s*\d+\.\s+Running pass '([^']+)'", ln))]
    first = (next((ln for ln in lines if "Bad machine code" in ln), None)
             or next((ln for ln in lines if "error" in ln.lower() and "bug report" not in ln), None)
             or (f"crash in {passes[-1]}" if passes else proc.stderr.strip()[:200]))
    return "fail: " + first.replace(d, "").strip()[:200], ""


def _greedy_seconds(pre_text: str, target: str, version: int) -> float | None:
    """llc-`version`'s wall time allocating the pre file with its own allocator (reading and
    printing the MIR included); None when it fails."""
    try:
        proc, _, seconds, _ = _run_llc(pre_text, target, version,
                                       ["-start-before=greedy", f"-stop-after=virtregrewriter,{_rewriter(version)}"])
    except (OSError, subprocess.TimeoutExpired):
        return None
    return round(seconds, 2) if proc.returncode == 0 else None


def _greedy_scratch(pre_text: str, target: str, version: int) -> dict[str, int]:
    """llc-`version`'s ScratchSize per function when it allocates the pre file itself, after
    its stack slot colouring; empty when it fails."""
    from verilocc.llc.asm import resources

    try:
        proc, asm, _, _ = _run_llc(pre_text, target, version, ["-start-before=greedy"])
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0:
        return {}
    return {name: res["scratch"] for name, res in resources(asm).items() if "scratch" in res}


def cmd_run(args: argparse.Namespace) -> int:
    import fnmatch

    strategies = [x.strip() for x in args.strategy.split(",") if x.strip()]
    bad = [x for x in strategies if x not in ("solver", "model")]
    if bad or not strategies:
        print(f"error: --strategy takes solver, model or both separated by a comma, not {args.strategy!r}", file=sys.stderr)
        return 2
    if args.set == "heldout":
        if args.llc not in (None, args.llvm):
            print(f"error: the held-out set is finished by the llc of its pre files (llc-{args.llvm}), not llc-{args.llc}",
                  file=sys.stderr)
            return 2
        args.llc = args.llvm
    if "model" in strategies:
        if args.jobs > 1:
            print("error: the model strategy runs with -j 1 (each worker would load the model)", file=sys.stderr)
            return 2
        why = load_model(args.model)
        if why is not None:
            print(f"the model strategy needs a trained model and none could be loaded ({why}); "
                  "run `make model` or pass --model PATH. Running the solver strategy only.", flush=True)
            strategies = [x for x in strategies if x != "model"] or ["solver"]
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    done: set[str] = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            if r.get("status") not in (None, "crash"):
                done.add(f"{r['strategy']}:{r['file']}:{r['function']}")
    items = files_of(args.set, Path(args.pairs) if args.pairs else None, args.every, args.llvm)
    if args.only:
        only = [x.strip() for x in args.only.split(",") if x.strip()]
        items = [i for i in items if any(fnmatch.fnmatchcase(i[0], k) for k in only)]
    if not items:
        where = args.pairs or (HELDOUT / f"pairs-llc-{args.llvm}" if args.set == "heldout" else "the set's directory")
        print(f"error: no pairs to run in {where}" + (" (make heldout-pairs makes them)" if args.set == "heldout" else ""),
              file=sys.stderr)
        return 2
    work = [(n, str(a), str(b)) for n, a, b in items]
    with out.open("a") as f:
        def emit(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if r.get("status") is None:
                    continue
                f.write(json.dumps({"set": args.set, **r}, sort_keys=True) + "\n")
                f.flush()
                g, o = r.get("greedy") or {}, r.get("ours") or {}
                asm = r.get("asm") or {}
                ga, oa = asm.get("greedy") or {}, asm.get("ours") or {}
                print(f"{r['strategy']:6} {r['file']:40} {r['function'][:24]:24} {r['status']:10} "
                      f"waves {oa.get('waves', o.get('waves', '-'))}/{ga.get('waves', g.get('waves', '-'))} "
                      f"v+a {_vector(oa) if oa else o.get('vector', '-')}/{_vector(ga) if ga else g.get('vector', '-')} "
                      f"scratch {oa.get('scratch', '-')}/{ga.get('scratch', '-')} "
                      f"spills(w) {o.get('spills_weighted', '-')}/{g.get('spills_weighted', '-')} "
                      f"{r.get('seconds', 0):.1f}s {r.get('llc', '')}", flush=True)

        for strategy in strategies:
            if args.jobs <= 1:
                for item in work:
                    emit(run_file(item, strategy, args.timeout, args.llc, done, args.keep))
            else:
                with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
                    futures = [pool.submit(run_file, item, strategy, args.timeout, args.llc, done, args.keep) for item in work]
                    for fut in futures:
                        emit(fut.result())
    if args.set == "heldout":
        print()
        print("\n".join(final_assembly_report(_latest(_read_rows([out])))))
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


def _vector(res: dict[str, int]) -> int:
    """VGPR+AGPR of llc's resource lines (`verilocc.llc.asm.resources`)."""
    return res.get("vgpr", 0) + res.get("agpr", 0)


def _read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths for line in Path(path).read_text().splitlines()]


def _latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each (strategy, file, function): a rerun replaces a row."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        latest[(r["strategy"], r["file"], r["function"])] = r
    return list(latest.values())


def _finished(r: dict[str, Any]) -> bool:
    """VERIFIED, and llc finished code generation from the written file and from LLVM's post."""
    asm = r.get("asm") or {}
    return bool(r.get("verified")) and r.get("llc") == "ok" and bool(asm.get("ours")) and bool(asm.get("greedy"))


def _spills_in_greedy(r: dict[str, Any]) -> bool:
    """Does greedy spill this function (scratch in its assembly, or spill code in its MIR)?"""
    ga = (r.get("asm") or {}).get("greedy") or {}
    return ga.get("scratch", 0) > 0 or (r.get("greedy") or {}).get("spills", 0) > 0


STRATEGY_ORDER = ("model", "solver")


def final_assembly_report(rows: list[dict[str, Any]]) -> list[str]:
    """The held-out bench on the final assembly: one row per kernel (waves, VGPR+AGPR, scratch
    bytes, loop-weighted spill instructions and seconds of each strategy and of greedy), the
    totals per llc version, target and strategy, and where a strategy loses to greedy."""
    rows = [r for r in rows if r.get("set") == "heldout" and r.get("status") != "bad-input"]
    if not rows:
        return ["(no held-out rows)"]
    sr: dict[str, Any] | None
    strategies = [s for s in STRATEGY_ORDER if any(r["strategy"] == s for r in rows)]
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["file"], r["function"]), {})[r["strategy"]] = r

    def cell(res: dict[str, int] | None, spills: Any, seconds: Any, digits: int = 1) -> str:
        if not res:
            return "- | - | - | - | " + (f"{seconds:.{digits}f}" if isinstance(seconds, (int, float)) else "-")
        return (f"{res.get('waves', '-')} | {_vector(res)} | {res.get('scratch', '-')} | {spills} | "
                + (f"{seconds:.{digits}f}" if isinstance(seconds, (int, float)) else "-"))

    out = ["Per kernel, from llc's resource lines of the final assembly: waves per SIMD | VGPR+AGPR | "
           f"scratch bytes | spill instructions weighted by loop depth ({LOOP_WEIGHT}^depth) | seconds.", ""]
    head = "| kernel |" + "".join(f" {s}: waves | v+a | scratch | spills | s |" for s in strategies) + \
        " greedy: waves | v+a | scratch | spills | s |"
    out += [head, "|---|" + "---|---|---|---|---|" * (len(strategies) + 1)]
    for (file, _fn), rs in sorted(by.items()):
        any_row = next(iter(rs.values()))
        asm = next((r["asm"] for r in rs.values() if (r.get("asm") or {}).get("greedy")), any_row.get("asm") or {})
        line = f"| {file}{' *' if _spills_in_greedy({**any_row, 'asm': asm}) else ''} |"
        for s in strategies:
            sr = rs.get(s)
            if sr is None:
                line += " not run | | | | |"
            elif _finished(sr):
                line += " " + cell(sr["asm"]["ours"], sr["ours"]["spills_weighted"], sr.get("seconds")) + " |"
            else:
                why = sr.get("status", "?") if not sr.get("verified") else f"llc {sr.get('llc', 'not run')[:40]}"
                line += f" {why} | | | | " + (f"{sr['seconds']:.1f}" if "seconds" in sr else "-") + " |"
        line += " " + cell(asm.get("greedy"), (any_row.get("greedy") or {}).get("spills_weighted", "-"),
                           asm.get("greedy_seconds"), 2) + " |"
        out.append(line)
    out += ["", "`*`: greedy spills (scratch in its assembly or spill code in its MIR).", ""]

    out += ["| llc | target | strategy | kernels | VERIFIED and finished by llc | waves >= greedy | "
            "greedy spills: scratch <= greedy | scratch bytes (ours / greedy) | spills weighted (ours / greedy) | "
            "no spill: VGPR+AGPR <= greedy | VGPR+AGPR (ours / greedy) | seconds median / max (greedy max) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["file"].split("/")[0], r.get("target", "?"), r["strategy"]), []).append(r)
    total: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(groups, key=lambda k: (k[0], k[1], STRATEGY_ORDER.index(k[2]) if k[2] in STRATEGY_ORDER else 9)):
        out.append(_summary_line(*key, groups[key]))
        total.setdefault(key[2], []).extend(groups[key])
    if len({k[:2] for k in groups}) > 1:  # totals over every llc version and target
        for s in strategies:
            out.append(_summary_line("all", "all", s, total[s]))

    out += ["", "Where a strategy loses to greedy (or does not finish):"]
    losses = []
    for (file, fn), rs in sorted(by.items()):
        for s in strategies:
            sr = rs.get(s)
            if sr is None:
                continue
            if not _finished(sr):
                what = (f"{sr.get('status')}: {sr.get('reason', '')[:160]}" if not sr.get("verified")
                        else f"llc: {sr.get('llc', 'not run')}")
                losses.append(f"- {s} {file}: {what}")
                continue
            o, g = sr["asm"]["ours"], sr["asm"]["greedy"]
            why = []
            if o.get("waves", 0) < g.get("waves", 0):
                why.append(f"waves {o['waves']} < {g['waves']}")
            if o.get("scratch", 0) > g.get("scratch", 0):
                why.append(f"scratch {o['scratch']} > {g['scratch']} bytes")
            if sr["ours"]["spills_weighted"] > sr["greedy"]["spills_weighted"]:
                why.append(f"weighted spills {sr['ours']['spills_weighted']} > {sr['greedy']['spills_weighted']}")
            if not _spills_in_greedy(sr) and _vector(o) > _vector(g):
                why.append(f"VGPR+AGPR {_vector(o)} > {_vector(g)}")
            if why:
                losses.append(f"- {s} {file}: {'; '.join(why)}")
    return out + (losses or ["(none)"])


def _summary_line(llc: str, target: str, strategy: str, rs: list[dict[str, Any]]) -> str:
    fin = [r for r in rs if _finished(r)]
    spill = [r for r in fin if _spills_in_greedy(r)]
    fit = [r for r in fin if not _spills_in_greedy(r)]

    def ours(r: dict[str, Any]) -> dict[str, int]:
        return r["asm"]["ours"]

    def greedy(r: dict[str, Any]) -> dict[str, int]:
        return r["asm"]["greedy"]

    secs = sorted(r["seconds"] for r in rs if "seconds" in r)
    gsecs = [r["asm"]["greedy_seconds"] for r in rs if (r.get("asm") or {}).get("greedy_seconds") is not None]
    return (f"| {llc} | {target} | {strategy} | {len(rs)} | {_pct(len(fin), len(rs))} | "
            f"{_pct(sum(1 for r in fin if ours(r).get('waves', 0) >= greedy(r).get('waves', 0)), len(fin))} | "
            f"{_pct(sum(1 for r in spill if ours(r).get('scratch', 0) <= greedy(r).get('scratch', 0)), len(spill))} | "
            f"{sum(ours(r).get('scratch', 0) for r in spill)} / {sum(greedy(r).get('scratch', 0) for r in spill)} | "
            f"{sum(r['ours']['spills_weighted'] for r in fin)} / {sum(r['greedy']['spills_weighted'] for r in fin)} | "
            f"{_pct(sum(1 for r in fit if _vector(ours(r)) <= _vector(greedy(r))), len(fit))} | "
            f"{sum(_vector(ours(r)) for r in fit)} / {sum(_vector(greedy(r)) for r in fit)} | "
            + (f"{secs[len(secs) // 2]:.1f} / {secs[-1]:.1f}" if secs else "-")
            + (f" ({max(gsecs):.2f})" if gsecs else "") + " |")


def cmd_table(args: argparse.Namespace) -> int:
    rows = _latest(_read_rows([Path(p) for p in args.files]))
    rest = [r for r in rows if r.get("set") != "heldout"]
    if len(rest) < len(rows):
        print("\n".join(final_assembly_report(rows)))
        if not rest:
            return 0
        print()
    rows = rest
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
    r.add_argument("--set", choices=("corpus", "llvm-tests", "heldout"), default="corpus")
    r.add_argument("--pairs", default=None, help="the set's directory (default ../shared/corpus, build/llvm-tests-alloc, "
                                                 "build/heldout-bench/pairs-llc-<--llvm>)")
    r.add_argument("--llvm", type=int, choices=(19, 22), default=19,
                   help="heldout: the pairs made by this llc version, finished by the same llc (default 19)")
    r.add_argument("--strategy", default="solver", help="solver, model, or model,solver (default solver)")
    r.add_argument("--model", default=None, metavar="PATH", help="the model strategy's model (default: the one shipped)")
    r.add_argument("--timeout", type=float, default=30.0, help="solver seconds per function (default 30)")
    r.add_argument("--every", type=int, default=1, metavar="K", help="every K-th file only")
    r.add_argument("--only", default="", help="comma-separated file names of the set, or shell patterns of them")
    r.add_argument("--llc", nargs="?", type=int, const=19, default=None, metavar="VERSION",
                   help="finish code generation with llc-VERSION (default 19) from each written file")
    r.add_argument("-j", "--jobs", type=int, default=1)
    r.add_argument("--keep", default=None, metavar="DIR", help="write each allocated file llc fails to finish into DIR")
    r.add_argument("-o", "--output", required=True, help="JSON-lines file (appended; a run resumes)")
    r.set_defaults(func=cmd_run)
    t = sub.add_parser("table", help="markdown tables from JSON-lines files")
    t.add_argument("files", nargs="+")
    t.set_defaults(func=cmd_table)
    args = ap.parse_args()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
