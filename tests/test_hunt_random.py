"""`verilocc hunt --random`: llvm-stress programs made fit for AMDGPU, the -O0 pipeline's
allocation, and a random hunt that prints the same table for the same seeds and resumes.

Everything here runs the installed LLVM tools (llvm-stress-N, opt-N, llc-N) and the real
verifier; a test skips when the tools it needs are not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verilocc.hunt.stress import private_allocas

from .conftest import ROOT


def _need(*tools: str) -> None:
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} is not installed")


def test_allocas_move_to_the_private_address_space() -> None:
    ir = ("define void @f(i32 %x) {\nBB:\n  %A = alloca i64, align 8\n  %A1 = alloca <4 x i32>\n"
          "  store i32 %x, ptr %A1\n  ret void\n}\n")
    out = private_allocas(ir)
    assert "  %A.private = alloca i64, align 8, addrspace(5)\n" \
           "  %A = addrspacecast ptr addrspace(5) %A.private to ptr\n" in out
    assert "  %A1.private = alloca <4 x i32>, addrspace(5)\n" in out
    assert "alloca i64, align 8\n" not in out and "store i32 %x, ptr %A1\n" in out


@pytest.mark.llc
@pytest.mark.parametrize("version", [16, 19, 22])
def test_stress_programs_compile_for_amdgpu(version: int, tmp_path: Path) -> None:
    """Raw llvm-stress output is refused by llc on amdgcn; the cleaned programs compile, the
    same bytes every time."""
    _need(f"llvm-stress-{version}", f"opt-{version}", f"llc-{version}")
    from verilocc.hunt.stress import stress_program

    raw = tmp_path / "raw.ll"
    subprocess.run([f"llvm-stress-{version}", "--seed=1", "--size=100", "-o", str(raw)], check=True)
    refused = subprocess.run([f"llc-{version}", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", str(raw), "-o",
                              "/dev/null"], capture_output=True, check=False)
    assert refused.returncode != 0
    kinds = set()
    for seed in range(1, 5):
        text = stress_program(seed, version)
        assert text == stress_program(seed, version)
        assert "alloca" not in text or "addrspace(5)" in text
        kinds.add("amdgpu_kernel" in text)
        (tmp_path / "p.ll").write_text(text)
        proc = subprocess.run([f"llc-{version}", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O3",
                               str(tmp_path / "p.ll"), "-o", "/dev/null"], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, (seed, proc.stderr[-1000:])
    assert kinds == {True, False}  # kernels and device functions


@pytest.mark.llc
def test_the_O0_pipeline_allocates_with_its_fast_allocator(tmp_path: Path) -> None:
    """fast-O0: the pre file stops before -O0's first regallocfast, the post after its last;
    both ways of making the pair are VERIFIED."""
    _need("llc-19")
    from verilocc.hunt.check import verify_pair
    from verilocc.hunt.llvm import installed
    from verilocc.hunt.pairs import PairFactory, PairTask

    (llvm,), _ = installed([19])
    src = ROOT / "tests" / "fixtures" / "thread" / "vgpr-liverange.ll"
    for mode in ("one-process", "reread"):
        outcome = PairFactory(tmp_path / "out", 300).make(PairTask(llvm, "gfx90a", "fast-O0", src, "v", mode))
        assert outcome.status == "ok", outcome.note
        assert "post regallocfast," in outcome.note
        assert outcome.pre is not None and outcome.post is not None
        assert "SI_SPILL_" in outcome.post.read_text()  # -O0 keeps values in stack slots across blocks
        res = verify_pair(str(outcome.pre), str(outcome.post), 300)
        assert [f["verdict"] for f in res["functions"]] == ["VERIFIED"] * len(res["functions"]), res
        assert res["functions"]


def _hunt(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "verilocc", "hunt", *args], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False, timeout=900)


@pytest.mark.llc
def test_a_random_hunt_is_the_same_for_the_same_seeds_and_resumes(tmp_path: Path) -> None:
    _need("llc-19", "llvm-stress-19", "opt-19")
    out = tmp_path / "out"
    common = ["--random", "--llvm", "19", "--targets", "gfx90a", "--modes", "one-process", "--regalloc", "greedy",
              "--out", str(out), "--triage", str(tmp_path / "none.tsv")]
    first = _hunt([*common, "--examples", "1", "--seed", "6"])
    assert first.returncode == 0, first.stderr[-2000:]
    assert "[seed 1/1] 6 (gpu)" in first.stderr
    both = _hunt([*common, "--examples", "2", "--seed", "6", "-j", "2"])
    assert both.returncode == 0, both.stderr[-2000:]
    assert "1 of 2 seeds recorded before under the same stamp" in both.stderr
    assert "[seed 1/1] 7 (stress)" in both.stderr
    doc = json.loads((out / "hunt.json").read_text())
    assert {p["input"] for p in doc["pairs"]} == {"gpu-6@gfx90a", "stress-7"}
    assert all(p["status"] == "ok" for p in doc["pairs"])
    assert {f["verdict"] for f in doc["functions"]} == {"VERIFIED"}
    md = (out / "hunt.md").read_text()
    # The same seeds in a fresh directory: the same table, byte for byte.
    fresh = tmp_path / "fresh"
    again = _hunt([*common[:-4], "--out", str(fresh), "--triage", str(tmp_path / "none.tsv"),
                   "--examples", "2", "--seed", "6", "--command-name", "X"])
    assert again.returncode == 0, again.stderr[-2000:]
    ours = _hunt([*common, "--examples", "2", "--seed", "6", "--command-name", "X"])
    assert ours.returncode == 0 and "2 of 2 seeds recorded before" in ours.stderr
    assert (fresh / "hunt.md").read_text() == (out / "hunt.md").read_text()
    assert md.split("\n", 1)[1] == (out / "hunt.md").read_text().split("\n", 1)[1]  # all but the command line


@pytest.mark.parametrize(("args", "what"), [
    (["--random", "--sources", "csmith"], "unknown source 'csmith'"),
    (["--random", "--examples", "0"], "--examples must be at least 1"),
    (["--random", "x.ll"], "--random makes its own programs"),
    (["--random", "--regalloc", "fast-O3"], "unknown allocator 'fast-O3'"),
])
def test_bad_random_usage_is_one_line(args: list[str], what: str, tmp_path: Path) -> None:
    proc = _hunt([*args, "--llvm", "19", "--out", str(tmp_path / "out")])
    if proc.returncode != 2 and shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not installed")
    assert proc.returncode == 2, proc.stderr
    assert what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.llc
def test_a_random_hunt_on_dask_writes_the_same_table(tmp_path: Path) -> None:
    _need("llc-19", "llvm-stress-19", "opt-19")
    pytest.importorskip("distributed")
    common = ["--random", "--sources", "stress", "--examples", "2", "--seed", "5", "--llvm", "19", "--targets",
              "gfx90a", "--modes", "one-process", "--regalloc", "greedy", "--triage", str(tmp_path / "none.tsv"),
              "--command-name", "X"]
    local = _hunt([*common, "--out", str(tmp_path / "local")])
    dask = _hunt([*common, "--out", str(tmp_path / "dask"), "--dask", "-j", "2"])
    assert local.returncode == 0 and dask.returncode == 0, dask.stderr[-2000:]
    assert "[seed 2/2] 6 (stress)" in dask.stderr
    assert (tmp_path / "dask" / "hunt.md").read_text() == (tmp_path / "local" / "hunt.md").read_text()
