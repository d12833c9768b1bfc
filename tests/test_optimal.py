"""The SMT allocator (`verilocc.allocators.optimal`, `verilocc allocate --solver`).

Every allocation it reports is VERIFIED; on small corpus kernels it uses no more registers
than LLVM's greedy allocator; preferences are kept when valid and repaired when not; a kernel
that needs spill code is infeasible with --no-spill and nothing is written (with spill code:
tests/test_spill.py); llc accepts the output.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import KERNELS as CORPUS  # the corpus, or examples/
from verilocc.rewrite.assignment import assignment_from_allocation
from verilocc.allocators.optimal import register_usage, solve_function
from verilocc.cli import main
from verilocc.findings import Verdict
from verilocc.mir.parser import parse_module, read_module
from verilocc.mir.printer import print_module
from verilocc.target import PhysReg, parse_physreg
from verilocc.verify import Options, function_target, verify_modules

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="no kernels: neither a corpus nor examples/")

SMALL = ["gfx90a/vadd", "gfx942/vadd", "gfx1100/vadd", "gfx90a/sgemm_naive", "gfx942/sgemm_naive"]
TIMEOUT = 30.0


def _pre(kernel: str) -> Path:
    return CORPUS / f"{kernel}.pre.mir"


@pytest.mark.parametrize("kernel", SMALL)
def test_small_kernels_verified_and_no_worse_than_greedy(kernel: str) -> None:
    pre = read_module(_pre(kernel))
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    got = solve_function(fn, target, timeout=TIMEOUT)
    assert got.status in ("optimal", "feasible"), got.reason
    assert got.function is not None
    # Independently: print, re-read and verify the written program against the pre file.
    post = parse_module(print_module(type(pre)(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)), "alloc.mir")
    assert verify_modules(post, pre, Options()).verdict is Verdict.VERIFIED
    greedy = register_usage(read_module(CORPUS / f"{kernel}.post.mir").functions[0], target)
    assert got.usage["vgpr"] + got.usage["agpr"] <= greedy["vgpr"] + greedy["agpr"]
    assert got.usage["waves"] >= greedy["waves"]
    assert set(got.assignment) == {v for b in fn.blocks for i in b.instructions for v in
                                   (op.vreg for op in i.operands) if v is not None}


def test_vadd_is_proved_optimal_with_the_pressure_bound() -> None:
    pre = read_module(_pre("gfx90a/vadd"))
    fn = pre.functions[0]
    got = solve_function(fn, function_target(fn, None, pre.file), timeout=TIMEOUT)
    assert got.status == "optimal"
    assert got.usage["vgpr"] == 8 and got.usage["waves"] == 8


def test_waves_objective() -> None:
    pre = read_module(_pre("gfx942/vadd"))
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    got = solve_function(fn, target, objective="waves", timeout=TIMEOUT)
    assert got.status == "optimal"
    assert got.usage["waves"] == target.max_waves_per_simd
    with pytest.raises(ValueError):
        solve_function(fn, target, objective="speed")


def test_prefer_keeps_a_valid_assignment_entirely() -> None:
    pre = read_module(_pre("gfx90a/vadd"))
    greedy = assignment_from_allocation(pre, read_module(CORPUS / "gfx90a/vadd.post.mir")).regs
    fn = pre.functions[0]
    got = solve_function(fn, function_target(fn, None, pre.file), prefer=greedy, timeout=TIMEOUT)
    assert got.status in ("optimal", "feasible"), got.reason
    assert got.kept == len(greedy)
    assert got.assignment == greedy


def test_prefer_repairs_a_conflicting_assignment() -> None:
    pre = read_module(_pre("gfx90a/vadd"))
    greedy = assignment_from_allocation(pre, read_module(CORPUS / "gfx90a/vadd.post.mir")).regs
    # %12 and %13 are loaded one after the other and added together: they interfere.
    bad = dict(greedy)
    bad[13] = bad[12]
    fn = pre.functions[0]
    got = solve_function(fn, function_target(fn, None, pre.file), prefer=bad, timeout=TIMEOUT)
    assert got.status in ("optimal", "feasible"), got.reason
    assert got.assignment[12] != got.assignment[13]
    assert got.kept == len(bad) - 1  # only one of the two clashing choices has to go


def _over_budget(tmp_path: Path) -> Path:
    text = _pre("gfx90a/sgemm_naive").read_text()
    assert '"target-cpu"="gfx90a"' in text
    path = tmp_path / "tight.pre.mir"
    path.write_text(text.replace('"target-cpu"="gfx90a"', '"amdgpu-num-vgpr"="8" "target-cpu"="gfx90a"'))
    return path


def test_over_budget_kernel_without_spill_code_is_infeasible_and_not_written(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _over_budget(tmp_path)
    pre = read_module(path)
    fn = pre.functions[0]
    got = solve_function(fn, function_target(fn, None, pre.file), timeout=TIMEOUT, spill=False)
    assert got.status == "infeasible"
    assert "spill" in got.reason and got.function is None
    out = tmp_path / "alloc.mir"
    assert main(["allocate", str(path), "--solver", "--no-spill", "--timeout", "20", "-o", str(out)]) == 1
    assert not out.exists()
    assert "INFEASIBLE" in capsys.readouterr().out


def test_cli_writes_verified_output_and_assignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, asg = tmp_path / "alloc.mir", tmp_path / "a.txt"
    args = ["allocate", str(_pre("gfx942/vadd")), "--solver", "--timeout", "20", "-o", str(out), "--assignment-out", str(asg)]
    assert main(args) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("OPTIMAL vadd: VGPR ") and "proved optimal" in line
    first = out.read_bytes()
    assert main(["verify", str(out), "--pre", str(_pre("gfx942/vadd"))]) == 0
    assert main(["verify", "--pre", str(_pre("gfx942/vadd")), "--assignment", str(asg)]) == 0
    assert all(parse_physreg(x.split("->")[1].strip()) for x in asg.read_text().splitlines())
    capsys.readouterr()
    assert main(args) == 0  # deterministic: the same bytes again
    assert out.read_bytes() == first


def test_same_input_same_bytes_when_the_search_is_cut_short(tmp_path: Path) -> None:
    # Budgets are z3 resource units, not seconds: a search that cannot finish stops at the
    # same point every time.
    outs = []
    for k in range(2):
        out = tmp_path / f"alloc{k}.mir"
        assert main(["allocate", str(_pre("gfx942/reduce_sum")), "--solver", "--timeout", "4", "-o", str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", str(tmp_path / "missing.mir"), "--solver"]) == 2
    assert main(["allocate", str(_pre("gfx942/vadd")), "--solver", "--timeout", "0"]) == 2
    assert main(["allocate", str(_pre("gfx942/vadd")), "--model", str(tmp_path / "no-model")]) == 2  # default: the model loop
    pre = _pre("gfx942/vadd")
    assert main(["allocate", str(pre), "--solver", "-o", str(pre)]) == 2  # never over an input
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(": error: " in e for e in err), err


@pytest.mark.llc
@pytest.mark.parametrize("kernel", ["gfx90a/vadd", "gfx90a/sgemm_naive", "gfx942/reduce_sum"])
def test_llc_finishes_code_generation(kernel: str, tmp_path: Path) -> None:
    if shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not installed")
    out = tmp_path / "alloc.mir"
    assert main(["allocate", str(_pre(kernel)), "--solver", "--timeout", "20", "-o", str(out)]) == 0
    mcpu = kernel.split("/")[0]
    run = subprocess.run(["llc-19", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-O3", "-verify-machineinstrs",
                          "-start-after=virtregrewriter,1", str(out), "-o", str(tmp_path / "k.s")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "s_endpgm" in (tmp_path / "k.s").read_text()


def _problem(kernel: str):  # noqa: ANN202
    from verilocc.allocators.problem import allocation_budget, build_problem

    path = _pre(kernel)
    if not path.exists():
        pytest.skip(f"{kernel} is not in {CORPUS}")
    fn = read_module(path).functions[0]
    target = function_target(fn, None, str(path))
    return build_problem(fn, target, allocation_budget(fn, target)), target


@pytest.mark.parametrize("kernel", ["gfx90a/sgemm_naive", "gfx1100/softmax_row", "gfx90a/hgemm_mfma16_w32x32"])
def test_merged_lane_check_answers_as_the_neighbour_check(kernel: str) -> None:
    """`Colouring.fitter` (lanes merged per file) says "fits" exactly where `fits` (neighbour by
    neighbour) does, for every candidate of every value not yet placed, half the values placed."""
    from verilocc.allocators.colouring import Colouring, greedy_assignment
    from verilocc.allocators.problem import vreg_key

    p, _ = _problem(kernel)
    start = greedy_assignment(p, rounds=0)
    assert start is not None
    col = Colouring.of(p)
    values = sorted(p.values, key=vreg_key)
    col.placed = {v: start[v] for v in values[::2]}
    asked = 0
    for v in values[1::2]:
        fits = col.fitter(v)
        for code, r in col.candidates(v)[0]:
            assert fits(code, r) == col.fits(v, code, r), (v, code, r)
            asked += 1
    assert asked > len(values)


def test_start_point_takes_the_best_order_and_recolours_it() -> None:
    """On a GEMM whose program-order first fit needs more VGPRs than llc's greedy allocator
    (222 against 220), the start point tries every order and re-colours the best: no more
    registers than llc, and re-colouring never makes it worse."""
    from verilocc.allocators.colouring import _first_fit, _merit, greedy_assignment

    p, target = _problem("gfx90a/sgemm_128x128_t8x8")
    orders = [a for a, left in (_first_fit(p, o) for o in ("program", "conflicts", "live", "widest")) if not left]
    start, recoloured = greedy_assignment(p, rounds=0), greedy_assignment(p)
    assert start is not None and recoloured is not None
    assert _merit(p, start) == max(_merit(p, a) for a in orders)
    assert _merit(p, recoloured) >= _merit(p, start)
    llc = register_usage(read_module(CORPUS / "gfx90a/sgemm_128x128_t8x8.post.mir").functions[0], target)
    assert -_merit(p, recoloured)[1] <= llc["vgpr"] + llc["agpr"]


@pytest.mark.parametrize("path", sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*.pre.mir")))
def test_both_strategies_read_one_problem(path: str) -> None:
    """The SMT allocator's problem and the model's, built from one `FunctionFacts`, offer each
    value the same registers within the function's budget, and every whole-register COPY
    partner the model lists is a copy hint of the SMT allocator."""
    from verilocc.allocators.files import locate, locate_low_half
    from verilocc.allocators.problem import build_problem, read_function
    from verilocc.llm.problem import build_problem as model_problem

    fn = read_module(CORPUS / path).functions[0]
    target = function_target(fn, None, path)
    facts = read_function(fn, target)
    smt, model = build_problem(fn, target, facts=facts), model_problem(fn, target, facts=facts)
    hints = {(d.vreg, s.vreg) for d, _, s, _, _ in smt.copies}
    for v, line in model.info.items():
        value = smt.values[v]
        offered: dict[int, set[int]] = {}
        for reg in line.preferred:
            loc = (locate_low_half if value.half else locate)(reg)
            if loc is not None:
                offered.setdefault(loc[0].code, set()).add(loc[1])
        assert offered == {code: set(regs) for code, regs in value.allowed.items()}, v
        for w in line.copies:
            if not isinstance(w, PhysReg):
                assert (v, w) in hints or (w, v) in hints, (v, w)
