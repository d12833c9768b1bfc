"""Spill and split code (`verilocc.allocators.spill`) and what `verilocc allocate` does with it.

A function over its budget is allocated with spill code that is VERIFIED against the program
before spilling and that llc accepts; wrong spill code a planted bug in the spiller writes is
REJECTED; the evicting colouring where first fit leaves values out; whole modules; the occupancy
floor; the missing `model` extra.
"""

from __future__ import annotations

import os
import re

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, EXAMPLES, FIXTURES
from verilocc.allocators import spill, spill_placement
from verilocc.allocators.optimal import solve_function, waves_bound
from verilocc.allocators.optimal import _checked
from verilocc.allocators.colouring import greedy_assignment, spill_fit
from verilocc.allocators.files import FILES, make_register
from verilocc.allocators.problem import allocation_budget, build_problem
from verilocc.allocators.usage import register_usage
from verilocc.allocators.evict import evicting_fit, spill_weights
from verilocc.analysis.operands import function_limits, vreg_classes
from verilocc.allocators.spill import spill_instructions, spill_to_fit, spillable_values
from verilocc.cli import main
from verilocc.findings import Verdict
from verilocc.mir.model import Module
from verilocc.mir.parser import parse_module, read_module
from verilocc.mir.printer import print_module
from verilocc.verify import Options, function_target, verify_modules

TIMEOUT = 20.0
#: For tests that assert what every allocation the solver returns must satisfy (it fits the
#: budget, it is VERIFIED, llc takes it), not how good it is: the objectives and copy hints
#: would spend the rest of a larger budget without changing what is asserted.
QUICK = 5.0
NESTED_LOOPS = FIXTURES / "allocate" / "nested-loop-conditions.gfx90a.pre.mir"


def _tight(tmp_path: Path, attribute: str) -> Path:
    """gfx90a sgemm_naive (25 VGPRs, 17 SGPRs) with a budget it does not fit."""
    text = (EXAMPLES / "gfx90a" / "sgemm_naive.pre.mir").read_text()
    assert '"target-cpu"="gfx90a"' in text
    path = tmp_path / "tight.pre.mir"
    path.write_text(text.replace('"target-cpu"="gfx90a"', f'{attribute} "target-cpu"="gfx90a"'))
    return path


def _solve(path: Path, timeout: float = TIMEOUT, **kw: object):  # noqa: ANN202
    pre = read_module(path)
    fn = pre.functions[0]
    return pre, solve_function(fn, function_target(fn, None, pre.file), timeout=timeout, **kw)  # type: ignore[arg-type]


def _reverified(pre: Module, fn: object) -> Verdict:
    """Print the written function, read it back and verify it against the program before spilling."""
    text = print_module(Module(pre.file, pre.ir_text, [fn], pre.ir_blank_lines))  # type: ignore[list-item]
    return verify_modules(parse_module(text, "alloc.mir"), pre, Options()).verdict


def _llc(path: Path, mcpu: str, tmp_path: Path, end: str = "s_endpgm") -> None:
    if shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not installed")
    run = subprocess.run(["llc-19", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-O3", "-verify-machineinstrs",
                          "-start-after=virtregrewriter,1", str(path), "-o", str(tmp_path / "k.s")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert end in (tmp_path / "k.s").read_text()


def _pre(ll: Path, mcpu: str, out: Path, llc: str = "llc-19") -> Path:
    """`ll` compiled by `llc` up to the register allocator into the directory `out`, as the
    pair maker does (skips when `llc` is not installed)."""
    if shutil.which(llc) is None:
        pytest.skip(f"{llc} is not installed")
    pre_path = out / f"{ll.stem}.pre.mir"
    subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-O3", "-stop-before=greedy", str(ll),
                    "-o", str(pre_path)], check=True, capture_output=True)
    return pre_path


def _live_at_once(n: int) -> str:
    """`n` VGPR values defined by inline assembly, then all used: `n` live at once."""
    return "\n".join([f'  %v{i} = call i32 asm sideeffect "; def $0", "=v"()' for i in range(n)]
                     + [f'  call void asm sideeffect "; use $0", "v"(i32 %v{i})' for i in range(n)])


def test_vgprs_over_budget_spill_to_stack_slots(tmp_path: Path) -> None:
    pre, got = _solve(_tight(tmp_path, '"amdgpu-num-vgpr"="8"'))
    assert got.status == "feasible", got.reason
    assert got.spilled is not None and set(got.spilled.homes.values()) <= {"stack", "remat"}
    assert got.function is not None and got.usage["vgpr"] <= 16  # LLVM's budget for amdgpu-num-vgpr=8 on gfx90a
    text = print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines))
    assert "SI_SPILL_V32_SAVE" in text and "SI_SPILL_V32_RESTORE" in text and "type: spill-slot" in text
    assert "hasSpilledVGPRs: true" in text and "maxAlignment:    4" in text
    assert spill_instructions(got.function) == got.spilled.inserted
    assert _reverified(pre, got.function) is Verdict.VERIFIED


def test_sgprs_over_budget_spill_to_vgpr_lanes(tmp_path: Path) -> None:
    pre, got = _solve(_tight(tmp_path, '"amdgpu-num-sgpr"="16"'))
    assert got.status == "feasible", got.reason
    assert got.spilled is not None and "lane" in got.spilled.homes.values()
    assert got.function is not None
    text = print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines))
    assert "SI_SPILL_S32_TO_VGPR" in text and "SI_RESTORE_S32_FROM_VGPR" in text
    assert "hasSpilledSGPRs: true" in text and "stack:           []" in text  # no slot remains, as in LLVM 19
    assert _reverified(pre, got.function) is Verdict.VERIFIED


def test_no_spill_option_keeps_the_old_answer(tmp_path: Path) -> None:
    _, got = _solve(_tight(tmp_path, '"amdgpu-num-vgpr"="8"'), spill=False)
    assert got.status == "infeasible" and "--no-spill" in got.reason and got.function is None


def test_spill_code_prints_as_llc_writes_it() -> None:
    # The instructions the spiller builds print as LLVM writes them after the last
    # VirtRegRewriter (docs/allocate.md, "Spill and split code"), and read back as they were.
    from verilocc.allocators import spill_code
    from verilocc.mir.body import parse_instruction
    from verilocc.mir.printer import print_instruction
    from verilocc.target import get_class

    v64, s64, a128 = get_class("vreg_64_align2"), get_class("sgpr_64"), get_class("areg_128_align2")
    made = {
        "SI_SPILL_V64_SAVE %5, %stack.2, $sgpr32, 0, implicit $exec :: (store (s64) into %stack.2, align 4, addrspace 5)":
            spill_code.stack_store(5, v64, 2, "$sgpr32", 9),
        "%6:areg_128_align2 = SI_SPILL_A128_RESTORE %stack.0, $sgpr32, 0, implicit $exec :: "
        "(load (s128) from %stack.0, align 4, addrspace 5)": spill_code.stack_reload(6, a128, 0, "$sgpr32", 9),
        "SI_SPILL_S64_SAVE %7, %stack.1, implicit $exec, implicit $sgpr32 :: (store (s64) into %stack.1, align 4, "
        "addrspace 5)": spill_code.stack_store(7, s64, 1, "$sgpr32", 9),
        "%8:av_64_align2 = COPY %5": spill_code.copy(8, "av_64_align2", 5, 9),
        "%9:vgpr_32 = IMPLICIT_DEF": spill_code.lane_vgpr_def(9, 9),
        "%9:vgpr_32 = SI_SPILL_S32_TO_VGPR %7.sub1, 4, %9(tied-def 0)": spill_code.lane_stores(7, s64, 9, 3, 9)[1],
        "undef %10.sub0:sgpr_64 = SI_RESTORE_S32_FROM_VGPR %9, 3": spill_code.lane_reloads(10, s64, 9, 3, 9)[0],
    }
    for text, ins in made.items():
        assert print_instruction(ins) == text
        assert parse_instruction(text, "t.mir", 9) == ins
    assert spill_code.av_class(v64) == "av_64_align2" and spill_code.av_class(s64) is None


def test_spiller_leaves_a_fitting_function_alone() -> None:
    pre = read_module(EXAMPLES / "gfx90a" / "sgemm_naive.pre.mir")
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    out = spill_to_fit(fn, target, allocation_budget(fn, target))
    assert not out.homes and out.inserted == 0
    assert print_module(Module(pre.file, pre.ir_text, [out.fn])) == print_module(Module(pre.file, pre.ir_text, [fn]))


def test_waves_flag_sets_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    # The budget of --waves N is the one "amdgpu-waves-per-eu"="N,N" gives (512 vector
    # registers per SIMD lane on gfx90a, in granules of 8).
    pre = read_module(EXAMPLES / "gfx90a" / "sgemm_naive.pre.mir")
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    assert allocation_budget(fn, target, 8).vgprs == 64
    assert allocation_budget(fn, target, 4).vgprs == 128
    assert main(["allocate", str(EXAMPLES / "gfx90a" / "sgemm_naive.pre.mir"), "--solver", "--waves", "0"]) == 2
    assert "--waves" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Planted bugs: wrong spill code is REJECTED, never written
# --------------------------------------------------------------------------------------------
def _wrong_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    real = spill_placement.Rewriter._reload

    def reload(self: spill_placement.Rewriter, v, t, cls, line, defined=None):  # noqa: ANN001, ANN202
        others = [w for w, n in self.slot_of.items() if w != v and self.fn.registers[w].reg_class == cls.name]
        if self.homes[v] != "stack" or not others:
            return real(self, v, t, cls, line, defined)
        saved = self.slot_of[v]
        self.slot_of[v] = self.slot_of[others[0]]  # the slot of another value of the same class
        try:
            return real(self, v, t, cls, line, defined)
        finally:
            self.slot_of[v] = saved

    monkeypatch.setattr(spill_placement.Rewriter, "_reload", reload)


def _clobbered_register(monkeypatch: pytest.MonkeyPatch) -> None:
    real = spill_placement.Rewriter._store

    def store(self: spill_placement.Rewriter, v, t, cls, line, defined=None):  # noqa: ANN001, ANN202
        # Store the value's old register instead of the one that holds it now: where the
        # value lives in its home, that register holds something else.
        return real(self, v, v, cls, line, defined)

    monkeypatch.setattr(spill_placement.Rewriter, "_store", store)


def _missing_reload(monkeypatch: pytest.MonkeyPatch) -> None:
    real = spill_placement.Rewriter._reload

    def reload(self: spill_placement.Rewriter, v, t, cls, line, defined=None):  # noqa: ANN001, ANN202
        got = real(self, v, t, cls, line, defined)
        if t != v and not getattr(self, "planted", False):
            self.planted = True  # type: ignore[attr-defined]
            return []  # the first reload is not written: its use reads whatever the register holds
        return got

    monkeypatch.setattr(spill_placement.Rewriter, "_reload", reload)


@pytest.mark.parametrize("plant", [_wrong_slot, _clobbered_register, _missing_reload],
                         ids=["reload-from-wrong-slot", "spill-of-clobbered-register", "missing-reload"])
def test_planted_spiller_bug_is_rejected(plant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    plant(monkeypatch)
    path = _tight(tmp_path, '"amdgpu-num-vgpr"="8"')
    _, got = _solve(path)
    assert got.status == "unknown" and got.function is None
    assert "not VERIFIED (REJECTED:" in got.reason, got.reason
    assert "value-flow/" in got.reason or "equivalence/" in got.reason or "constraints/" in got.reason
    out = tmp_path / "alloc.mir"
    assert main(["allocate", str(path), "--solver", "--timeout", str(TIMEOUT), "-o", str(out)]) == 1
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# Modules, the regressions, the floor
# --------------------------------------------------------------------------------------------
def test_nested_loop_conditions_module_is_verified(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # LLVM's nested-loop-conditions.ll for gfx90a: two functions. An allocator with an
    # interference relation of its own can put a value on $sgpr0_sgpr1 while the program
    # still reads it after control flow; the one relation the verifier reads forbids it.
    out = tmp_path / "alloc.mir"
    assert main(["allocate", str(NESTED_LOOPS), "--solver", "--timeout", str(TIMEOUT), "-o", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split()[1] for ln in lines] == ["reduced_nested_loop_conditions:", "nested_loop_conditions:"]
    assert all(ln.startswith(("OPTIMAL", "FEASIBLE")) for ln in lines)
    assert main(["verify", str(out), "--pre", str(NESTED_LOOPS)]) == 0


def test_floor_puts_occupancy_first() -> None:
    pre = read_module(EXAMPLES / "gfx90a" / "softmax_row.pre.mir")
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    got = solve_function(fn, target, timeout=QUICK)
    greedy = read_module(EXAMPLES / "gfx90a" / "softmax_row.post.mir").functions[0]
    assert got.function is not None and got.usage["waves"] >= register_usage(greedy, target)["waves"]
    assert got.waves_bound >= got.usage["waves"]
    assert got.waves_bound == waves_bound(build_problem(fn, target))


def test_missing_model_extra_says_what_to_install() -> None:
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
            "from verilocc.cli import main\n"
            f"sys.exit(main(['allocate', {str(EXAMPLES / 'gfx90a' / 'vadd.pre.mir')!r}]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    assert "pip install 'verilocc[model]'" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.llc
def test_llc_finishes_code_generation_from_spill_code(tmp_path: Path) -> None:
    for attribute in ('"amdgpu-num-vgpr"="8"', '"amdgpu-num-sgpr"="16"'):
        out = tmp_path / "alloc.mir"
        assert main(["allocate", str(_tight(tmp_path, attribute)), "--solver", "--timeout", str(TIMEOUT),
                     "-o", str(out)]) == 0
        _llc(out, "gfx90a", tmp_path)


# --------------------------------------------------------------------------------------------
# When first fit and z3 find no assignment of the program with spill code
# --------------------------------------------------------------------------------------------
def _fragmented() -> tuple[Module, object, object]:
    """gfx1100 sgemm_naive with `"amdgpu-num-vgpr"="12"`: the spiller's program at the budget
    fits by pressure, but first fit leaves values without a register (tuples and loops)."""
    return _budgeted("gfx1100/sgemm_naive", 12)


def _fragmented_at_budget() -> tuple[Module, object, object, object, object, object]:
    """`_fragmented()` with its budget, the spiller's program at that budget and its problem."""
    pre, fn, target = _fragmented()
    budget = allocation_budget(fn, target)
    at_budget = spill_to_fit(fn, target, budget)
    return pre, fn, target, budget, at_budget, build_problem(at_budget.fn, target, budget)


def test_first_fit_leaves_values_out_and_forced_spills_place_them() -> None:
    pre, fn, target, budget, at_budget, problem = _fragmented_at_budget()
    placed, left = spill_fit(problem, at_budget.home_regs)
    assert left and greedy_assignment(problem) is None
    forced = frozenset(left) & {op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands}
    assert forced
    whole = spill_to_fit(fn, target, budget, 2, force=forced)  # as the third try asks
    assert forced <= set(whole.homes)
    # Spilled wherever they live: no instruction names them any more.
    assert not any(op.vreg in forced for b in whole.fn.blocks for ins in b.instructions for op in ins.operands)
    problem = build_problem(whole.fn, target, budget)
    placed, left = spill_fit(problem, whole.home_regs)
    assert not left
    assignment = {v: make_register(FILES[code], r, problem.values[v].width32) for v, (code, r) in placed.items()}
    got = _checked(fn, target, assignment, "feasible", 0, 0.0, "", whole.fn)
    assert got.function is not None, got.reason
    assert _reverified(pre, got.function) is Verdict.VERIFIED


def _budgeted(kernel: str, vgprs: int) -> tuple[Module, object, object]:
    """An example kernel with an `"amdgpu-num-vgpr"` budget it does not fit."""
    mcpu = kernel.split("/")[0]
    text = (EXAMPLES / f"{kernel}.pre.mir").read_text()
    assert f'"target-cpu"="{mcpu}"' in text
    pre = parse_module(text.replace(f'"target-cpu"="{mcpu}"', f'"amdgpu-num-vgpr"="{vgprs}" "target-cpu"="{mcpu}"'),
                       f"{kernel.split('/')[1]}.pre.mir")
    fn = pre.functions[0]
    return pre, fn, function_target(fn, None, pre.file)


def _colour_checked(pre: Module, fn: object, target: object, spilled: spill.Spilled,
                    placed: dict[object, tuple[int, int]]) -> Verdict:
    problem = build_problem(spilled.fn, target, allocation_budget(fn, target))  # type: ignore[arg-type]
    assert set(placed) == set(problem.values)
    assignment = {v: make_register(FILES[code], r, problem.values[v].width32) for v, (code, r) in placed.items()}
    got = _checked(fn, target, assignment, "feasible", 0, 0.0, "", spilled.fn)  # type: ignore[arg-type]
    assert got.function is not None, got.reason
    return _reverified(pre, got.function)


def test_eviction_places_what_first_fit_leaves_out() -> None:
    # gfx1100 reduce_sum in 12 VGPRs: the spiller's program fits by pressure, first fit
    # leaves values out; evicting the cheapest values in their way places every value (the
    # evicted ones find other registers), and the result is VERIFIED.
    pre, fn, target = _budgeted("gfx1100/reduce_sum", 12)
    budget = allocation_budget(fn, target)
    at_budget = spill_to_fit(fn, target, budget)
    problem = build_problem(at_budget.fn, target, budget)
    _, left = spill_fit(problem, at_budget.home_regs)
    assert left
    spillable = spillable_values(fn, target, budget)
    got = evicting_fit(problem, at_budget.home_regs, spillable)
    assert got.evicted and not got.left
    assert set(got.evicted) <= spillable  # never the spiller's reload registers
    assert _colour_checked(pre, fn, target, at_budget, got.placed) is Verdict.VERIFIED


def test_eviction_chooses_what_to_spill() -> None:
    # gfx1100 sgemm_naive in 12 VGPRs: first fit leaves four tuples out; the evicting
    # colouring leaves out fewer values, the ones it evicted. Spilling those as a whole at the
    # same margin gives a program it colours, with less spill code than asking the spiller
    # for more room; VERIFIED.
    pre, fn, target, budget, at_budget, problem = _fragmented_at_budget()
    _, ff_left = spill_fit(problem, at_budget.home_regs)
    spillable = spillable_values(fn, target, budget)
    got = evicting_fit(problem, at_budget.home_regs, spillable)
    assert got.left and len(got.left) < len(ff_left) and set(got.left) <= set(got.evicted)
    whole = spill_to_fit(fn, target, budget, force=frozenset(got.left))
    again = evicting_fit(build_problem(whole.fn, target, budget), whole.home_regs, spillable)
    assert not again.left
    assert whole.inserted < spill_to_fit(fn, target, budget, 2).inserted
    assert _colour_checked(pre, fn, target, whole, again.placed) is Verdict.VERIFIED


def test_eviction_moves_only_what_may_be_evicted() -> None:
    # With nothing evictable the evicting colouring is first fit itself; the spiller's reload
    # registers are not among the values it may evict; every value has a spill weight.
    _, fn, target, budget, at_budget, problem = _fragmented_at_budget()
    placed, left = spill_fit(problem, at_budget.home_regs)
    alone = evicting_fit(problem, at_budget.home_regs, frozenset())
    assert (alone.placed, alone.left, alone.evicted) == (placed, left, ())
    spillable = spillable_values(fn, target, budget)
    temps = set(problem.values) - {op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands}
    assert spillable and temps and not temps & spillable
    weights = spill_weights(problem)
    assert set(weights) == set(problem.values) and all(w >= 0 for w in weights.values())


def test_no_time_for_z3_still_gives_a_verified_allocation(tmp_path: Path) -> None:
    # A time limit too small for z3 to answer anything: first fit of the program with spill
    # code, with more room and values spilled as a whole, is what is written.
    pre, fn, target = _fragmented()
    got = solve_function(fn, target, timeout=0.01)
    assert got.status == "feasible" and got.function is not None, got.reason
    assert "not proved optimal" in got.reason
    assert got.spilled is not None and got.usage["vgpr"] <= 12
    assert _reverified(pre, got.function) is Verdict.VERIFIED
    if shutil.which("llc-19") is not None:
        out = tmp_path / "alloc.mir"
        out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines))
                       .replace("implicit $vcc_lo", "implicit $vcc").replace("implicit killed $vcc_lo", "implicit killed $vcc"))
        _llc(out, "gfx1100", tmp_path)


@pytest.mark.slow
@pytest.mark.llc
@pytest.mark.parametrize("kernel", [
    "gfx1100/sgemm_128x128_t8x8_v64",  # 64 VGPRs for 120 values' worth: to the stack; a minute
    pytest.param("gfx1100/fa_d128_kv4", marks=pytest.mark.skipif(
        os.environ.get("VERILOCC_SLOW_TESTS") != "1",
        reason="3 minutes: set VERILOCC_SLOW_TESTS=1 (gfx90a, 14 minutes: docs/allocate.md)")),
])
def test_large_kernel_is_allocated_with_spill_code(kernel: str, tmp_path: Path) -> None:
    """A corpus kernel greedy spills to the stack gets spill code, is VERIFIED, and llc finishes
    it. What is asserted holds of any allocation returned, so the solver gets `QUICK`."""
    pre_path = CORPUS / f"{kernel}.pre.mir"
    if not pre_path.exists():
        pytest.skip("no corpus")
    pre, got = _solve(pre_path, timeout=QUICK)
    assert got.function is not None, got.reason
    assert got.spilled is not None
    assert got.spilled.homes and set(got.spilled.homes.values()) <= {"stack", "agpr", "remat", "lane"}
    out = tmp_path / "alloc.mir"
    out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
    assert main(["verify", str(out), "--pre", str(pre_path)]) == 0
    mcpu = kernel.split("/")[0]
    if mcpu == "gfx1100":  # llc-19 reads wave32 MIR only with $vcc for $vcc_lo (../shared/corpus/README.md)
        out.write_text(out.read_text().replace("implicit $vcc_lo", "implicit $vcc").replace(
            "implicit killed $vcc_lo", "implicit killed $vcc"))
    _llc(out, mcpu, tmp_path)


@pytest.mark.slow
@pytest.mark.llc
@pytest.mark.skipif(os.environ.get("VERILOCC_SLOW_TESTS") != "1",
                    reason="3 to 4 minutes: set VERILOCC_SLOW_TESTS=1 (bench/optimal_vs_greedy.py measures it)")
def test_fragmented_gemm_is_allocated_with_eviction(tmp_path: Path) -> None:
    # gfx90a sgemm_256x128_t16x8: first fit leaves aligned tuples out of every program the
    # spiller writes; with the evicting colouring the kernel gets an assignment, VERIFIED
    # (also when read back from the written file) and finished by llc.
    pre_path = CORPUS / "gfx90a" / "sgemm_256x128_t16x8.pre.mir"
    if not pre_path.exists():
        pytest.skip("no corpus")
    pre = read_module(pre_path)
    fn = pre.functions[0]
    got = solve_function(fn, function_target(fn, None, pre.file), timeout=30.0)
    assert got.function is not None, got.reason
    assert got.spilled is not None and got.usage["waves"] >= 1
    out = tmp_path / "alloc.mir"
    out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
    assert main(["verify", str(out), "--pre", str(pre_path)]) == 0
    _llc(out, "gfx90a", tmp_path)


def test_model_loop_allocates_spill_code_and_whole_modules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path / "alloc.mir"
    path = _tight(tmp_path, '"amdgpu-num-vgpr"="8"')
    assert main(["allocate", str(path), "--rounds", "1", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "to the stack" in err and "VERIFIED sgemm_naive" in err
    assert "SI_SPILL_V" in out.read_text()
    assert main(["verify", str(out), "--pre", str(path)]) == 0
    # A module of two functions: one summary line each, one written module.
    out2 = tmp_path / "nested.mir"
    assert main(["allocate", str(NESTED_LOOPS), "--rounds", "1", "-o", str(out2)]) == 0
    err = capsys.readouterr().err
    assert "VERIFIED reduced_nested_loop_conditions" in err and "VERIFIED nested_loop_conditions" in err
    assert main(["verify", str(out2), "--pre", str(NESTED_LOOPS)]) == 0


def test_no_agpr_homes_where_llvm_reserves_the_agprs(tmp_path: Path) -> None:
    # gfx90a with a VGPR budget inside the VGPR file: LLVM 19 reserves every AGPR of a function
    # that uses none, so a value spilled as a whole goes to the stack, not to an AGPR. The
    # verifier's limits allow AGPRs there (it cannot tell from a post file whether AGPRs were
    # used); the allocation budget takes LLVM's split.
    pre = read_module(_tight(tmp_path, '"amdgpu-num-vgpr"="8"'))
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    budget = allocation_budget(fn, target)
    verifier = function_limits(fn, target)
    assert (verifier.hint or verifier).agprs > 0
    assert budget.agprs == 0 and budget.total_vector <= budget.vgprs
    vgpr_values = frozenset(v for v, d in fn.registers.items() if d.reg_class.startswith("vgpr_32"))
    out = spill_to_fit(fn, target, budget, force=vgpr_values)
    assert out.homes and "agpr" not in out.homes.values() and not out.home_regs


@pytest.mark.llc
def test_budget_is_llvms_vgpr_agpr_split(tmp_path: Path) -> None:
    """A callable function on gfx942 at 8 waves has 64 vector registers, which LLVM 19 splits
    32 VGPRs / 32 AGPRs (it may need AGPRs). The verifier allows up to 64 VGPRs (a post file
    does not say which split LLVM took), but llc reserves $vgpr32 and up: 40 values live at
    once must be spilled to fit 32 VGPRs, and llc must finish code generation from the result."""
    ll = tmp_path / "split.ll"
    ll.write_text("define void @f() #0 {\n" + _live_at_once(40) + "\n  ret void\n}\n"
                  'attributes #0 = { nounwind "amdgpu-waves-per-eu"="8,8" "amdgpu-flat-work-group-size"="1,256" }\n')
    pre_path = _pre(ll, "gfx942", tmp_path)
    fn = read_module(pre_path).functions[0]
    target = function_target(fn, None, str(pre_path))
    verifier = function_limits(fn, target)
    assert verifier.vgprs >= 64
    budget = allocation_budget(fn, target)
    assert (budget.vgprs, budget.agprs) == (32, 32)
    got = solve_function(fn, target, timeout=QUICK)
    assert got.function is not None, got.reason
    assert got.usage["vgpr"] <= 32 and got.spilled is not None
    out = tmp_path / "split.alloc.mir"
    pre = read_module(pre_path)
    out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
    _llc(out, "gfx942", tmp_path, end="s_setpc_b64")  # a callable function returns


def test_model_loop_floor_is_the_solvers_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On gfx1100/sgemm_128x128_t8x8 first fit in program order needs 122 VGPRs (10 waves); the
    SMT allocator's start, 120 (12 waves, as llc's greedy allocator). The model loop takes the
    better as its floor, so a 10-wave answer goes to the repair step."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from verilocc.allocators.colouring import start_waves

    path = CORPUS / "gfx1100" / "sgemm_128x128_t8x8.pre.mir"
    if not path.exists():
        pytest.skip("no corpus")
    fn = read_module(path).functions[0]
    target = function_target(fn, None, str(path))
    greedy = register_usage(read_module(CORPUS / "gfx1100" / "sgemm_128x128_t8x8.post.mir").functions[0], target)
    assert start_waves(fn, target) >= greedy["waves"]
    out = tmp_path / "alloc.mir"
    assert main(["allocate", str(path), "--rounds", "1", "--timeout", str(QUICK), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if ln.startswith("VERIFIED sgemm_tiled"))
    waves = int(line.split(" waves/SIMD")[0].rsplit(" ", 1)[1])
    assert waves >= greedy["waves"], line


@pytest.mark.llc
@pytest.mark.parametrize("test, function, mcpu, finish", [
    ("partial-regcopy-and-spill-missed-at-regalloc", "partial_copy", "gfx942", True),
    ("spill-agpr", "max_6regs_used_8a", "gfx90a", False),
    ("vgpr-agpr-limit-gfx90a", "use256vgprs", "gfx942", False),
    ("vgpr-agpr-limit-gfx90a", "k256_w8", "gfx90a", False),  # across calls that keep no AGPR: the stack
])
def test_spill_retry_without_sharing(test: str, function: str, mcpu: str, finish: bool, tmp_path: Path) -> None:
    """LLVM's own spill tests, with budgets of 5 to 64 VGPRs: the first spill program keeps
    reload registers live across points over the budget (accesses within `NEAR` share one) or
    gives values AGPR homes that do not fit (more than the AGPRs, or across a call that keeps
    none); the retry without sharing, with AGPR homes counted against the AGPRs, fits, and the
    allocation is VERIFIED (and llc-19 finishes code generation from the one-function file)."""
    pre_path = _pre(FIXTURES / "llvm-tests" / "ll" / f"{test}.ll", mcpu, tmp_path)
    pre = read_module(pre_path)
    fn = next(f for f in pre.functions if f.name == function)
    target = function_target(fn, None, str(pre_path))
    got = solve_function(fn, target, timeout=QUICK)
    assert got.function is not None and got.spilled is not None, got.reason
    assert got.spilled.homes_first
    assert _reverified(Module(pre.file, pre.ir_text, [fn], pre.ir_blank_lines), got.function) is Verdict.VERIFIED
    if finish:
        out = tmp_path / "alloc.mir"
        out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
        _llc(out, mcpu, tmp_path)


@pytest.mark.llc
def test_sgpr_lane_spill_before_a_call_and_a_tail_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LLVM's `ipra` test on gfx942: `func_call_tail_call` keeps a call target (a `ccr_sgpr_64`,
    which no callee-saved SGPR pair can hold) live across a call to tail-call it after. It goes
    to VGPR lanes around the call; the lane VGPR's definition at the top of the entry block
    must not move the points over the budget that decide where the reloads go (it did, and
    the reload before the call was kept across it). The whole module is VERIFIED and llc-19 finishes code generation from it."""
    pre = _pre(FIXTURES / "llvm-tests" / "ll" / "ipra.ll", "gfx942", tmp_path)
    out = tmp_path / "ipra.alloc.mir"
    assert main(["allocate", str(pre), "--solver", "--timeout", "10", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    line = next(ln for ln in (captured.out + captured.err).splitlines() if " func_call_tail_call:" in ln)
    assert "to VGPR lanes" in line, line
    text = out.read_text()
    body = text[text.index("name:            func_call_tail_call"):]
    assert "SI_SPILL_S32_TO_VGPR" in body and "SI_RESTORE_S32_FROM_VGPR" in body
    _llc(out, "gfx942", tmp_path, end="s_setpc_b64")


# Functions at the edges of LLVM's register budget on gfx942, as LLVM's own AMDGPU tests write
# them (mfma-cd-select, agpr-remat, agpr-copy-no-free-registers): each is allocated by llc's
# greedy allocator, so each must be allocated here, VERIFIED, and finish code generation.
_MFMA32 = """
  %in = load <32 x float>, ptr addrspace(1) %arg
  %m = call <32 x float> @llvm.amdgcn.mfma.f32.32x32x1f32(float 1.0, float 2.0, <32 x float> %in, i32 0, i32 0, i32 0)
  store <32 x float> %m, ptr addrspace(1) %arg"""
_NINE = ", ".join(f"i32 %v{i}" for i in range(9))
_BUDGET_EDGES = {
    # "amdgpu-no-agpr", yet instruction selection made an AGPR tuple: LLVM splits the file.
    "agpr_tuple_despite_no_agpr": ("", "ptr addrspace(1) %arg", '"amdgpu-no-agpr" "amdgpu-waves-per-eu"="2" '
                                   '"amdgpu-flat-work-group-size"="1,256"', _MFMA32),
    # Inline assembly names AGPRs the budget reserves: they bound nothing the allocator chooses.
    "asm_agprs_past_budget": ("amdgpu_kernel", "ptr addrspace(1) %arg", "", """
  call void asm sideeffect "; use $0", "{a[100:131]}"(<32 x i32> undef)""" + _MFMA32),
    # Nine VGPR arguments and "amdgpu-num-vgpr"="8": $vgpr8 lies beyond every value's registers.
    "arguments_past_budget": ("", _NINE, '"amdgpu-num-vgpr"="8"', """
  call void asm sideeffect "; use $0 $1 $2 $3", "a,a,a,a"(i32 %v0, i32 %v1, i32 %v2, i32 %v3)
  call void asm sideeffect "; use $0 $1 $2 $3 $4", "a,a,a,a,a"(i32 %v4, i32 %v5, i32 %v6, i32 %v7, i32 %v8)"""),
    # An early-clobber AGPR clobber while an AGPR tuple is read and another lives across: the
    # AGPR file (40 at 6 waves), not the vector total, is what is over: a tuple is spilled.
    "agprs_over_at_a_clobber": ("", "float %x, float %y", '"amdgpu-waves-per-eu"="6,6"', """
  %asm = call { <32 x i32>, <16 x float> } asm sideeffect "; def $0 $1", "={v[0:31]},={a[0:15]}"()
  %vgprs = extractvalue { <32 x i32>, <16 x float> } %asm, 0
  %agprs = extractvalue { <32 x i32>, <16 x float> } %asm, 1
  %m = call <16 x float> @llvm.amdgcn.mfma.f32.16x16x1f32(float %x, float %y, <16 x float> %agprs, i32 0, i32 0, i32 0)
  %one = call i32 asm sideeffect "; copy $0", "={a1},a,~{a[0:15]}"(<16 x float> %agprs)
  %two = call i32 asm sideeffect "; copy $0", "={a2},a,{a[0:15]}"(i32 %one, <16 x float> %m)
  call void asm sideeffect "; use $0 $1", "{a3},{v[0:31]}"(i32 %two, <32 x i32> %vgprs)"""),
    # Eight 1024-bit tuples live across a call, 64 VGPRs: no AGPR tuple the call keeps holds
    # one, so all go to the stack and come back one by one.
    "tuples_across_a_call": ("", "", "", "".join(
        f'\n  %t{i} = call <32 x i32> asm sideeffect "; def $0", "=v"()' for i in range(8))
        + "\n  call void @ext()" + "".join(
        f'\n  call void asm sideeffect "; use $0", "v"(<32 x i32> %t{i})' for i in range(8))),
    # An SGPR live across a call on gfx1100 with 34 SGPRs and 40 VGPRs: the call keeps none of
    # those SGPRs, and no VGPR that could hold its lane: it goes to a stack slot (SI_SPILL_S32_SAVE).
    "sgpr_across_a_call_without_a_kept_vgpr": ("", "", '"amdgpu-num-sgpr"="34" "amdgpu-num-vgpr"="40"', """
  %s = call i32 asm sideeffect "; def $0", "=s"()
  call void @ext()
  store volatile i32 %s, ptr addrspace(1) undef"""),
    # An SGPR live while inline assembly clobbers every SGPR, VCC, M0 and, eight at a time,
    # every VGPR: no lane VGPR could live as long, so the SGPR goes to a stack slot.
    "sgpr_across_clobbers_of_every_vgpr": ("amdgpu_kernel", "ptr addrspace(1) %arg", "", """
  %s = load i32, ptr addrspace(4) null""" + "".join(
        f'\n  call void asm sideeffect "", "~{{s[{i}:{i + 7}]}}"()' for i in range(0, 96, 8)) + "".join(
        f'\n  call void asm sideeffect "", "~{{v[{i}:{i + 7}]}}"()' for i in range(0, 256, 8)) + """
  call void asm sideeffect "", "~{s[96:101]},~{vcc},~{m0}"()
  store i32 %s, ptr addrspace(1) %arg"""),
}
_BUDGET_EDGE_CPU = {"sgpr_across_a_call_without_a_kept_vgpr": "gfx1100"}


@pytest.mark.llc
@pytest.mark.parametrize("case", sorted(_BUDGET_EDGES))
def test_functions_at_the_edges_of_llvms_budget(case: str, tmp_path: Path) -> None:
    cc, params, attrs, body = _BUDGET_EDGES[case]
    ll = tmp_path / f"{case}.ll"
    ll.write_text(
        f"define {cc + ' ' if cc else ''}void @f({params}) #0 {{{body}\n  ret void\n}}\n"
        "declare <32 x float> @llvm.amdgcn.mfma.f32.32x32x1f32(float, float, <32 x float>, i32, i32, i32)\n"
        "declare <16 x float> @llvm.amdgcn.mfma.f32.16x16x1f32(float, float, <16 x float>, i32, i32, i32)\n"
        "declare void @ext()\n"
        f"attributes #0 = {{ nounwind {attrs} }}\n")
    mcpu = _BUDGET_EDGE_CPU.get(case, "gfx942")
    pre_path = _pre(ll, mcpu, tmp_path)
    pre, got = _solve(pre_path)
    assert got.function is not None, got.reason
    fn = pre.functions[0]
    budget = allocation_budget(fn, function_target(fn, None, pre.file))
    if case == "agpr_tuple_despite_no_agpr":
        assert any(c.name.startswith("areg") for c in vreg_classes(fn).values())
        assert got.usage["agpr"] >= 32 and budget.agprs >= 32
    elif case == "asm_agprs_past_budget":
        assert got.usage["agpr"] >= 132 > budget.agprs
    elif case == "arguments_past_budget":
        assert budget.vgprs == 8 and got.spilled is None
    elif case == "tuples_across_a_call":
        assert got.spilled is not None and set(got.spilled.homes.values()) == {"stack"} and budget.vgprs == 64
    elif case in ("sgpr_across_a_call_without_a_kept_vgpr", "sgpr_across_clobbers_of_every_vgpr"):
        assert got.spilled is not None and "SI_SPILL_S32_SAVE" in print_module(
            Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines))
    else:
        assert got.spilled is not None and budget.agprs < 48
    assert _reverified(pre, got.function) is Verdict.VERIFIED
    out = tmp_path / f"{case}.alloc.mir"
    out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
    _llc(out, mcpu, tmp_path, end="s_endpgm" if cc == "amdgpu_kernel" else "s_setpc_b64")


@pytest.mark.llc
def test_llvm22_splits_the_vector_file_evenly(tmp_path: Path) -> None:
    """LLVM 21 and later split the unified file evenly unless "amdgpu-agpr-alloc"="0", even in
    a kernel without AGPR values: with "amdgpu-num-vgpr"="8" on gfx942, llc-22 reserves
    $vgpr8 and up (LLVM 19 would give that kernel 16 VGPRs). Nine values live at once: one goes
    to an AGPR home, and llc-22 finishes code generation from the allocation."""
    ll = tmp_path / "k.ll"
    ll.write_text("define amdgpu_kernel void @k() #0 {\n" + _live_at_once(9) + "\n  ret void\n}\n"
                  'attributes #0 = { nounwind "amdgpu-num-vgpr"="8" }\n')
    pre_path = _pre(ll, "gfx942", tmp_path, "llc-22")
    pre, got = _solve(pre_path)
    fn = pre.functions[0]
    budget = allocation_budget(fn, function_target(fn, None, pre.file))
    assert (budget.vgprs, budget.agprs) == (8, 8)
    assert got.function is not None, got.reason
    assert got.usage["vgpr"] <= 8 and _reverified(pre, got.function) is Verdict.VERIFIED
    out = tmp_path / "k.alloc.mir"
    out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
    run = subprocess.run(["llc-22", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-O3", "-verify-machineinstrs",
                          "-start-after=virtregrewriter,2", str(out), "-o", str(tmp_path / "k.s")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.llc
def test_true16_values_take_low_halves(tmp_path: Path) -> None:
    """LLVM 22 selects true 16-bit instructions on gfx1100: `vgpr_16` virtual registers, halves
    of VGPRs. The solver places each in the low half of a VGPR ($vgprN_lo16), says that this
    is not proved optimal (two halves could share a VGPR), and llc-22 finishes the file."""
    ll = tmp_path / "h.ll"
    ll.write_text("define amdgpu_kernel void @h(ptr addrspace(1) %p) {\n"
                  "  %id = call i32 @llvm.amdgcn.workitem.id.x()\n"
                  "  %g = getelementptr half, ptr addrspace(1) %p, i32 %id\n"
                  "  %x = load volatile half, ptr addrspace(1) %g\n  %y = load volatile half, ptr addrspace(1) %g\n"
                  "  %s = fadd half %x, %y\n  %t = fmul half %s, %x\n  %u = fsub half %t, %y\n"
                  "  store half %u, ptr addrspace(1) %g\n  ret void\n}\n"
                  "declare i32 @llvm.amdgcn.workitem.id.x()\n")
    pre_path = _pre(ll, "gfx1100", tmp_path, "llc-22")
    assert re.search(r"%\d+:vgpr_16 = ", pre_path.read_text())  # used, not only declared
    pre, got = _solve(pre_path)
    assert got.function is not None, got.reason
    assert got.status == "feasible" and "16-bit" in got.reason
    text = print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines))
    assert "_lo16" in text and "_hi16" not in text
    assert _reverified(pre, got.function) is Verdict.VERIFIED
    out = tmp_path / "h.alloc.mir"
    out.write_text(text)
    run = subprocess.run(["llc-22", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-O3", "-verify-machineinstrs",
                          "-start-after=virtregrewriter,2", str(out), "-o", str(tmp_path / "h.s")],
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]


_HALF = """--- |
  define amdgpu_kernel void @half(ptr addrspace(4) %p) #0 { ret void }
  attributes #0 = { "target-cpu"="gfx90a" }
...
---
name: half
tracksRegLiveness: true
machineFunctionInfo:
  isEntryFunction: true
  scratchRSrcReg: '$sgpr0_sgpr1_sgpr2_sgpr3'
  stackPtrOffsetReg: '$sgpr32'
body: |
  bb.0:
    liveins: $sgpr4_sgpr5
    %0:sgpr_64 = COPY $sgpr4_sgpr5
    undef %1.sub0:sgpr_64 = S_LOAD_DWORD_IMM %0, 0, 0
""" + "".join(f"    %{10 + i}:vgpr_32 = V_MOV_B32_e32 {i}, implicit $exec\n" for i in range(16)) + """    %2:vreg_64_align2 = COPY %1
    %3:vgpr_32 = V_MOV_B32_e32 0, implicit $exec
    GLOBAL_STORE_DWORDX2 %3, %2, %0, 0, 0, implicit $exec
    S_ENDPGM 0
...
"""


def test_an_sgpr_value_defined_by_its_low_half_saves_and_restores_that_half_alone() -> None:
    """`undef %1.sub0:sgpr_64 = S_LOAD_DWORD_IMM`: spilled to VGPR lanes, only `sub0` is saved
    and restored; a save of `sub1` would read an SGPR nothing wrote, which llc's machine
    verifier refuses ("Using an undefined physical register")."""
    pre = parse_module(_HALF, "half.pre.mir")
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    spilled = spill_to_fit(fn, target, allocation_budget(fn, target), force=frozenset({1}))
    assert spilled.homes == {1: "lane"}
    lane_code = [ins for b in spilled.fn.blocks for ins in b.instructions
                 if ins.opcode in ("SI_SPILL_S32_TO_VGPR", "SI_RESTORE_S32_FROM_VGPR")]
    assert [ins.opcode for ins in lane_code] == ["SI_SPILL_S32_TO_VGPR", "SI_RESTORE_S32_FROM_VGPR"]
    parts = [op.subreg for ins in lane_code for op in ins.operands if op.kind == "reg" and op.subreg]
    assert parts == ["sub0", "sub0"]
    restore_def = next(op for op in lane_code[1].operands if op.kind == "reg" and op.is_def)
    assert restore_def.has("undef")
