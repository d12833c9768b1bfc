"""How good spill code is, on example kernels under an `amdgpu-num-vgpr` budget they do not fit.

Stack slot sharing (`verilocc.allocators.slots`): spilled values never live together share a
slot, the allocation is VERIFIED, and sharing a slot between values live together is REJECTED.
The budget filled before spilling more: the spill ladder bisects for the smallest margin whose
program colours, and the model loop allocates that same program (not one with more room). A
colouring that leaves SGPR values out asks for SGPR room alone (one margin per kind).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.test_spill import _budgeted, _reverified
from verilocc.allocators import optimal
from verilocc.allocators import slots as slots_module
from verilocc.allocators import spill, spill_placement
from verilocc.allocators.optimal import solve_function
from verilocc.allocators.problem import allocation_budget
from verilocc.allocators.slots import Slot
from verilocc.allocators.spill_budget import Margin
from verilocc.cli import main
from verilocc.findings import Verdict
from verilocc.mir.model import Module
from verilocc.mir.parser import parse_module
from verilocc.mir.printer import print_module
from verilocc.verify import function_target

TIMEOUT = 5.0


def _stack_values(spilled: spill.Spilled) -> list[object]:
    return [v for v, h in spilled.homes.items() if h == "stack"]


def test_spilled_values_never_live_together_share_a_slot() -> None:
    # gfx90a softmax_row under "amdgpu-num-vgpr"="8": a dozen values go to the stack, in
    # loops and around them; several are never live in their slots at the same time.
    pre, fn, target = _budgeted("gfx90a/softmax_row", 8)
    got = solve_function(fn, target, timeout=TIMEOUT)  # type: ignore[arg-type]
    assert got.function is not None, got.reason
    assert got.spilled is not None
    values = _stack_values(got.spilled)
    written = [s for s in got.function.stack_slots if s.get("type") == "spill-slot"]
    assert len(written) == len(set(got.spilled.slots.values())) < len(values)
    # Each value's size fits the slot it shares.
    sizes = {s["id"]: s["size"] for s in written}
    classes = {v: d.reg_class for v, d in got.spilled.fn.registers.items()}
    from verilocc.target import get_class
    for v in values:
        assert sizes[got.spilled.slots[v]] >= 4 * get_class(classes[v]).width32
    assert _reverified(pre, got.function) is Verdict.VERIFIED


def _one_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    def colour(fn, slots):  # noqa: ANN001, ANN202 - every slot into the first, conflicts ignored
        first = min(s.id for s in slots)
        return {s.id: first for s in slots}, [Slot(first, max(s.size for s in slots), "default")]

    monkeypatch.setattr(spill_placement, "colour_slots", colour)


def test_sharing_a_slot_between_values_live_together_is_rejected(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _one_slot(monkeypatch)
    pre, fn, target = _budgeted("gfx90a/softmax_row", 8)
    got = solve_function(fn, target, timeout=TIMEOUT)  # type: ignore[arg-type]
    assert got.function is None and "not VERIFIED (REJECTED:" in got.reason, got.reason
    assert "value-flow/" in got.reason or "equivalence/" in got.reason
    path = tmp_path / "softmax.pre.mir"
    path.write_text(print_module(pre))
    out = tmp_path / "alloc.mir"
    assert main(["allocate", str(path), "--solver", "--timeout", str(TIMEOUT), "-o", str(out)]) == 1
    assert not out.exists()


def test_slot_sharing_keeps_each_stack_id_apart() -> None:
    # SGPR spill slots (stack-id sgpr-spill, lowered later by prolog/epilog insertion) are
    # never merged with vector spill slots, nor among themselves.
    pre, fn, target = _budgeted("gfx90a/softmax_row", 8)
    spilled = spill.spill_to_fit(fn, target, allocation_budget(fn, target))
    vector = [Slot(s["id"], s["size"], s["stack-id"]) for s in spilled.fn.stack_slots if s.get("type") == "spill-slot"]
    mixed = vector + [Slot(1000, 4, "sgpr-spill")]
    to, remaining = slots_module.colour_slots(spilled.fn, mixed)
    assert to[1000] == 1000 and Slot(1000, 4, "sgpr-spill") in remaining
    assert print_module(Module(pre.file, pre.ir_text, [spilled.fn]))  # printable


def test_the_budget_is_filled_before_more_is_spilled() -> None:
    # gfx90a reduce_sum under "amdgpu-num-vgpr"="9" (18 VGPRs): the program spilled to the
    # budget does not colour, two registers below it does, one below it too, with fewer
    # values spilled. The solver allocates that one and uses every VGPR of the budget.
    pre, fn, target = _budgeted("gfx90a/reduce_sum", 9)
    budget = allocation_budget(fn, target)
    one, two = (spill.spill_to_fit(fn, target, budget, m) for m in (1, 2))
    assert len(one.homes) < len(two.homes) and one.inserted < two.inserted
    got = solve_function(fn, target, timeout=TIMEOUT)  # type: ignore[arg-type]
    assert got.function is not None and got.spilled is not None, got.reason
    assert set(got.spilled.homes) == set(one.homes) and got.spilled.inserted == one.inserted
    assert got.usage["vgpr"] == budget.vgprs == 18
    assert _reverified(pre, got.function) is Verdict.VERIFIED


def test_model_loop_allocates_the_solvers_program_with_spill_code() -> None:
    # gfx90a softmax_row under "amdgpu-num-vgpr"="8": spilled to the budget, the program needs
    # 190 spill instructions (values reloaded in loops) and no colouring places it; the ladders
    # find one with 33 that a colouring places. Both strategies allocate that program.
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from verilocc.llm.lm import load_lm_or_default
    from verilocc.llm.loop import run_loop
    from verilocc.allocators.optimal import coloured_spill_program

    pre, fn, target = _budgeted("gfx90a/softmax_row", 8)
    budget = allocation_budget(fn, target)
    program = coloured_spill_program(fn, target, budget)
    assert program is not None
    at_budget = spill.spill_to_fit(fn, target, budget)
    assert program[0].inserted < at_budget.inserted
    res = run_loop(pre, load_lm_or_default(None), timeout=TIMEOUT)
    assert res.verified and res.spilled is not None and res.post is not None, res.reason
    assert set(res.spilled.homes) == set(program[0].homes) and res.spilled.inserted == program[0].inserted
    assert res.usage["vgpr"] <= budget.vgprs
    assert _reverified(pre, res.post.functions[0]) is Verdict.VERIFIED


# --------------------------------------------------------------------------------------------
# Budget attributes as the llc of the input reads them
# --------------------------------------------------------------------------------------------
def _sgpr_heavy_kernel_with_lds(tmp_path: Path) -> Path:
    """40 SGPR values live at once under "amdgpu-num-sgpr"="32", in a kernel whose 40,000
    bytes of LDS allow one wave per EU."""
    n = 40
    body = "\n".join([f'  %s{i} = call i32 asm sideeffect "; def $0", "=s"()' for i in range(n)]
                     + [f'  call void asm sideeffect "; use $0", "s"(i32 %s{i})' for i in range(n)])
    ll = tmp_path / "lds_sgprs.ll"
    ll.write_text('target triple = "amdgcn-amd-amdhsa"\n'
                  "@lds = internal addrspace(3) global [10000 x float] poison, align 4\n"
                  "define amdgpu_kernel void @k() #0 {\n"
                  "  store volatile float 0.0, ptr addrspace(3) getelementptr ([10000 x float], "
                  "ptr addrspace(3) @lds, i32 0, i32 9999), align 4\n"
                  f"{body}\n  ret void\n}}\n"
                  'attributes #0 = { nounwind "amdgpu-num-sgpr"="32" "amdgpu-flat-work-group-size"="1,256" }\n')
    return ll


@pytest.mark.llc
@pytest.mark.parametrize("llc", ["llc-19", "llc-22"])
def test_num_sgpr_is_read_as_the_inputs_llc_reads_it(llc: str, tmp_path: Path) -> None:
    # llc-19 honours "amdgpu-num-sgpr"="32" and spills SGPRs to VGPR lanes; llc-22 bounds the
    # waves-per-EU range by the LDS first (one wave per EU here), finds the request below what
    # one wave leaves, ignores it and spills nothing. The budget follows the llc of the input.
    import shutil
    import subprocess

    from tests.test_spill import _pre
    from verilocc.allocators.usage import register_usage
    from verilocc.mir.parser import read_module
    from verilocc.verify import function_target

    ll = _sgpr_heavy_kernel_with_lds(tmp_path)
    pre_path = _pre(ll, "gfx90a", tmp_path, llc)
    rewriter = 1 if llc == "llc-19" else 2
    post_path = tmp_path / "greedy.post.mir"
    subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O3", "-start-before=greedy",
                    f"-stop-after=virtregrewriter,{rewriter}", str(pre_path), "-o", str(post_path)],
                   check=True, capture_output=True)
    pre = read_module(pre_path)
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    budget = allocation_budget(fn, target)
    greedy = read_module(post_path).functions[0]
    greedy_spills = spill.spill_instructions(greedy)
    got = solve_function(fn, target, timeout=TIMEOUT)  # type: ignore[arg-type]
    assert got.function is not None, got.reason
    assert _reverified(pre, got.function) is Verdict.VERIFIED
    if llc == "llc-19":
        assert budget.sgprs < 32 and greedy_spills > 0
        assert got.spilled is not None and "lane" in got.spilled.homes.values()
    else:
        assert budget.sgprs > 40 and greedy_spills == 0
        assert register_usage(greedy, target)["sgpr"] > 32
        assert got.spilled is None and got.usage["sgpr"] <= budget.sgprs
    out = tmp_path / "alloc.mir"
    out.write_text(print_module(Module(pre.file, pre.ir_text, [got.function], pre.ir_blank_lines)))
    run = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O3", "-verify-machineinstrs",
                          f"-start-after=virtregrewriter,{rewriter}", str(out), "-o", str(tmp_path / "k.s")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert shutil.which(llc)


# --------------------------------------------------------------------------------------------
# Stores that find the slot already holding the value
# --------------------------------------------------------------------------------------------
def _softmax_program(monkeypatch: pytest.MonkeyPatch | None = None, drop=None):  # noqa: ANN001, ANN202
    """gfx90a softmax_row under "amdgpu-num-vgpr"="8", spilled one register below the budget
    (a program first fit colours), with `drop` in place of `redundant_stores`."""
    from verilocc.allocators.colouring import spill_fit
    from verilocc.allocators.problem import build_problem

    if drop is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(spill_placement, "redundant_stores", drop)
    pre, fn, target = _budgeted("gfx90a/softmax_row", 8)
    budget = allocation_budget(fn, target)
    spilled = spill.spill_to_fit(fn, target, budget, 1)
    placed, left = spill_fit(build_problem(spilled.fn, target, budget), spilled.home_regs, spilled.homes_first)
    assert not left
    return pre, fn, target, spilled, placed


def test_stores_that_find_the_slot_holding_the_value_go(monkeypatch: pytest.MonkeyPatch) -> None:
    # A value live through a second region of the program is stored again at its edge unless
    # its slot still holds it on every path there (no def of it since a store or a reload).
    from tests.test_spill import _colour_checked
    from verilocc.allocators.slots import redundant_stores

    dropped: list[int] = []

    def counting(fn, slot_of):  # noqa: ANN001, ANN202
        got = redundant_stores(fn, slot_of)
        dropped.append(len(got))
        return got

    pre, fn, target, spilled, placed = _softmax_program(monkeypatch, counting)
    assert dropped and dropped[-1] > 0
    assert spill.spill_instructions(spilled.fn) == spilled.inserted
    monkeypatch.setattr(spill_placement, "redundant_stores", lambda fn, slot_of: [])
    every = spill.spill_to_fit(fn, target, allocation_budget(fn, target), 1)
    assert every.inserted == spilled.inserted + dropped[-1]
    assert _colour_checked(pre, fn, target, spilled, placed) is Verdict.VERIFIED


def test_dropping_a_store_the_slot_needs_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    # Planted: every store of a value's own register counts as redundant, whatever the paths.
    from verilocc.allocators.optimal import _checked
    from verilocc.allocators.files import FILES, make_register
    from verilocc.allocators.problem import build_problem
    from verilocc.allocators.slots import slot_access

    def every_own_store(fn, slot_of):  # noqa: ANN001, ANN202
        owner = {n: v for v, n in slot_of.items()}
        out = []
        for b in fn.blocks:
            for i, ins in enumerate(b.instructions):
                acc = slot_access(ins, set(owner))
                if acc and acc[0] == "store" and any(op.vreg == owner[acc[1]] for op in ins.operands if op.kind == "reg"):
                    out.append((b.number, i))
        return out

    pre, fn, target, spilled, placed = _softmax_program(monkeypatch, every_own_store)
    problem = build_problem(spilled.fn, target, allocation_budget(fn, target))
    assignment = {v: make_register(FILES[code], r, problem.values[v].width32) for v, (code, r) in placed.items()}
    got = _checked(fn, target, assignment, "feasible", 0, 0.0, "", spilled.fn)
    assert got.function is None and "REJECTED" in got.reason, got.reason


def test_whole_ranges_where_region_edges_cost_more() -> None:
    # gfx90a softmax_row under "amdgpu-num-vgpr"="8": values live across the kernel's loops
    # cost a store and a reload at each region's edges; spilled wherever they live they cost a
    # store after each def. The cheaper per value, and the program is VERIFIED.
    from tests.test_spill import _colour_checked
    from verilocc.allocators.colouring import spill_fit
    from verilocc.allocators.problem import build_problem

    pre, fn, target = _budgeted("gfx90a/softmax_row", 8)
    budget = allocation_budget(fn, target)
    # One register below the budget (the margin the ladders bisect to), where first fit colours.
    regions = spill.spill_to_fit(fn, target, budget, 1)
    whole = spill.spill_to_fit(fn, target, budget, 1, whole_ranges=True)
    assert whole.inserted < regions.inserted // 2
    assert spill.spill_instructions(whole.fn) == whole.inserted
    placed, left = spill_fit(build_problem(whole.fn, target, budget), whole.home_regs, whole.homes_first)
    assert not left
    assert _colour_checked(pre, fn, target, whole, placed) is Verdict.VERIFIED


def test_a_colouring_that_leaves_sgprs_out_asks_for_sgpr_room_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """gfx90a sgemm_naive under "amdgpu-num-sgpr"="12" and "amdgpu-num-vgpr"="20": the first
    program with spill code leaves SGPR values without a register. The ladder asks the spiller
    for SGPR room and keeps every vector register of the budget; with one margin for both
    kinds it gives up vector registers as well. Both programs are VERIFIED once allocated."""
    text = (EXAMPLES / "gfx90a" / "sgemm_naive.pre.mir").read_text()
    pre = parse_module(text.replace('"target-cpu"="gfx90a"', '"amdgpu-num-sgpr"="12" "amdgpu-num-vgpr"="20" '
                                    '"target-cpu"="gfx90a"'), "sgemm_naive.pre.mir")
    fn = pre.functions[0]
    target = function_target(fn, None, pre.file)
    asked: list[Margin] = []
    real = optimal._Programs.get

    def get(self: optimal._Programs, margin: Margin, force: frozenset[object], whole: bool = False):  # noqa: ANN202
        asked.append(margin)
        return real(self, margin, force, whole)  # type: ignore[arg-type]

    monkeypatch.setattr(optimal._Programs, "get", get)
    got = optimal.coloured_spill_program(fn, target, allocation_budget(fn, target))  # type: ignore[arg-type]
    assert got is not None
    assert asked[0] == Margin(0, 0) and asked[1].sgpr > 0
    assert all(m.vector == 0 for m in asked), asked
    asked.clear()
    assert optimal.coloured_spill_program(fn, target, allocation_budget(fn, target), per_kind=False) is not None  # type: ignore[arg-type]
    assert any(m.vector > 0 for m in asked)
    alloc = solve_function(fn, target, timeout=TIMEOUT)  # type: ignore[arg-type]
    assert alloc.function is not None, alloc.reason
    assert _reverified(pre, alloc.function) is Verdict.VERIFIED
