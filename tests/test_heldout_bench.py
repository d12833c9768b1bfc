"""The held-out bench on the final assembly (bench/optimal_vs_greedy.py --set heldout,
bench/heldout): llc's resource lines read per function, spill instructions weighted by loop
depth, the held-out kernels compiled and allocated by llc with the budgets their manifest
gives, and the bench's command line on bad input and without a model."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from verilocc.allocators.spill import cross_file_copies, spill_instructions
from verilocc.llc.asm import resources
from verilocc.llc.hip import read_manifest
from verilocc.mir.parser import read_module

from .conftest import EXAMPLES, FIXTURES, ROOT, have

HELDOUT = ROOT / "bench" / "heldout"
BENCH = ROOT / "bench" / "optimal_vs_greedy.py"
LOOP_FIXTURE = FIXTURES / "hunt" / "known" / "sgpr-spill-lane-vgpr-loop-header.llvm19.gfx1100.fast-O0"


@cache
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("optimal_vs_greedy", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_resources_are_read_per_function_in_both_formats() -> None:
    asm = """\
first:                                  ; @first
\ts_endpgm
.Lfunc_end0:
                                        ; -- End function
; NumSgprs: 35
; NumVgprs: 28
; NumAgprs: 4
; TotalNumVgprs: 32
; ScratchSize: 16
; Occupancy: 8
second:                                 ; @second
\ts_setpc_b64 s[30:31]
                                        ; -- End function
; TotalNumSgprs: 86
; NumVgprs: 48
; ScratchSize: second.private_seg_size
; Occupancy: 7
"""
    got = resources(asm)
    assert got == {"first": {"sgpr": 35, "vgpr": 28, "agpr": 4, "scratch": 16, "waves": 8},
                   "second": {"sgpr": 86, "vgpr": 48, "waves": 7}}  # a symbolic size is left out


def test_loop_weighted_spills_weigh_the_spills_inside_a_loop() -> None:
    pre = read_module(Path(f"{LOOP_FIXTURE}.pre.mir")).functions[0]
    post = read_module(Path(f"{LOOP_FIXTURE}.post.mir")).functions[0]
    b = bench()
    plain, weighted = b.loop_weighted_spills(post, pre)
    assert plain == spill_instructions(post) - cross_file_copies(pre) > 0
    assert weighted > plain  # bb.1 branches back to itself and restores lanes
    # The same blocks with no edge back to an earlier block (or to itself): no loop, no weight.
    number = {blk.number: i for i, blk in enumerate(post.blocks)}
    flat = dataclasses.replace(post, blocks=[
        dataclasses.replace(blk, successors=[(s, p) for s, p in blk.successors if number[s] > i], successors_written=True)
        for i, blk in enumerate(post.blocks)])
    assert b.loop_weighted_spills(flat, pre) == (plain, plain)


def test_heldout_sources_are_none_of_the_trained_or_example_ones() -> None:
    ours = {p.name for p in HELDOUT.glob("*.hip")}
    assert len(ours) >= 8
    for manifest in (ROOT / "bench" / "model_eval" / "train_manifest.txt", EXAMPLES / "kernels" / "manifest.txt",
                     ROOT / "bench" / "model_eval" / "heldout_manifest.txt"):
        assert not ours & {source for _, source, _, _ in read_manifest(manifest)}, manifest
    assert not ours & {p.name for p in (EXAMPLES / "kernels").glob("*.hip")}
    shared = ROOT.parent / "shared" / "kernels"
    if shared.is_dir():
        assert not ours & {p.name for p in shared.glob("*.hip")}
    entries = read_manifest(HELDOUT / "manifest.txt")
    assert {source for _, source, _, _ in entries} == ours  # every source is benched
    assert len({name for name, _, _, _ in entries}) == len(entries)


@pytest.mark.skipif(not (have("clang-19") and have("llc-19")), reason="needs clang-19 and llc-19")
def test_a_spilling_heldout_kernel_spills_in_greedys_final_assembly(tmp_path: Path) -> None:
    """stencil_x2r6_w8 asks for 8 waves on gfx90a (64 VGPRs) and needs more: greedy's post,
    finished by llc-19, runs at 8 waves with scratch; the source as written does not spill."""
    from verilocc.llc.hip import compile_hip
    from verilocc.llc.pairs import PairMaker
    from verilocc.llc.run import Llc

    jobs, failed = compile_hip("clang-19", HELDOUT, HELDOUT / "manifest.txt", ["gfx90a"],
                               ["stencil_r4", "stencil_x2r6_w8"], tmp_path / "ll", 300)
    assert not failed and len(jobs) == 2
    maker = PairMaker(Llc("llc-19", 300), tmp_path, check_replay=False)
    b = bench()
    got = {}
    for job in jobs:
        made = maker.make(job)
        assert made.ok, made.message
        pre_path, post_path = maker.output_paths(job)
        verdict, asm = b._llc(post_path.read_text(), "gfx90a", 19)
        assert verdict == "ok"
        (res,) = resources(asm).values()
        pre = read_module(pre_path).functions[0]
        post = read_module(post_path).functions[0]
        got[job.kernel] = (res, b.loop_weighted_spills(post, pre))
    res, (plain, weighted) = got["stencil_x2r6_w8"]
    assert res["waves"] == 8 and res["vgpr"] + res["agpr"] <= 64 and res["scratch"] > 0 and plain > 0
    assert weighted >= plain
    res, (plain, weighted) = got["stencil_r4"]
    assert res["scratch"] == 0 and plain == weighted == 0


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, check=False,
                          cwd=ROOT, timeout=600)


def test_bench_refuses_another_llc_for_the_heldout_set(tmp_path: Path) -> None:
    got = _run("run", "--set", "heldout", "--llvm", "19", "--llc", "22", "-o", str(tmp_path / "x.jsonl"))
    assert got.returncode == 2 and "Traceback" not in got.stderr
    assert got.stderr.strip().splitlines() == [
        "error: the held-out set is finished by the llc of its pre files (llc-19), not llc-22"]
    got = _run("run", "--set", "heldout", "--pairs", str(tmp_path), "-o", str(tmp_path / "x.jsonl"))
    assert got.returncode == 2 and len(got.stderr.strip().splitlines()) == 1 and "no pairs" in got.stderr


@pytest.mark.skipif(not have("llc-19"), reason="needs llc-19")
def test_bench_without_a_model_says_so_and_runs_the_solver(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    got = _run("run", "--set", "heldout", "--pairs", str(EXAMPLES), "--only", "llc-19/gfx90a/vadd",
               "--strategy", "model,solver", "--model", str(tmp_path / "no-model"), "--timeout", "30", "-o", str(out))
    assert got.returncode == 0, got.stderr
    assert "the model strategy needs a trained model" in got.stdout
    rows = [__import__("json").loads(line) for line in out.read_text().splitlines()]
    assert [r["strategy"] for r in rows] == ["solver"]
    (r,) = rows
    assert r["verified"] and r["llc"] == "ok"
    ours, greedy = r["asm"]["ours"], r["asm"]["greedy"]
    assert ours["scratch"] == greedy["scratch"] == 0 and ours["waves"] >= 1
    assert "| llc-19/gfx90a/vadd |" in got.stdout  # the per-kernel table


def test_report_counts_against_greedy_on_the_assembly_and_names_every_loss() -> None:
    def row(kernel: str, ours: dict[str, int] | None, greedy: dict[str, int], spills: tuple[int, int],
            llc: str = "ok") -> dict[str, object]:
        return {"set": "heldout", "strategy": "solver", "file": f"llc-19/gfx90a/{kernel}", "function": kernel,
                "target": "gfx90a", "status": "feasible", "verified": True, "llc": llc, "seconds": 1.0,
                "ours": {"spills": spills[0], "spills_weighted": spills[0]},
                "greedy": {"spills": spills[1], "spills_weighted": spills[1]},
                "asm": {"ours": ours, "greedy": greedy, "llc": 19, "greedy_seconds": 0.1}}

    fit = {"waves": 8, "vgpr": 40, "agpr": 0, "scratch": 0}
    rows = [row("fits", {**fit, "vgpr": 39}, fit, (0, 0)),
            row("spills", {"waves": 8, "vgpr": 60, "agpr": 0, "scratch": 96}, {"waves": 8, "vgpr": 64, "agpr": 0, "scratch": 36},
                (24, 20)),
            row("rejected", None, {"waves": 6, "vgpr": 80, "agpr": 0, "scratch": 100}, (0, 5), llc="fail: Bad machine code")]
    text = "\n".join(bench().final_assembly_report(rows))
    summary = next(ln for ln in text.splitlines() if ln.startswith("| llc-19 | gfx90a | solver |"))
    assert summary.split(" | ")[3:11] == ["3", "2/3 (67%)", "2/2 (100%)", "0/1 (0%)", "96 / 36", "24 / 20",
                                           "1/1 (100%)", "39 / 40"]
    losses = text.split("Where a strategy loses to greedy (or does not finish):")[1].strip().splitlines()
    assert losses == ["- solver llc-19/gfx90a/rejected: llc: fail: Bad machine code",
                      "- solver llc-19/gfx90a/spills: scratch 96 > 36 bytes; weighted spills 24 > 20"]
