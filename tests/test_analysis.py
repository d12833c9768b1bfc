"""CFG, lane liveness and live intervals on real programs."""

from __future__ import annotations

from verilocc.rewrite.assignment import assignment_from_allocation
from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.intervals import live_intervals, slot_numbers
from verilocc.analysis.liveness import compute_liveness
from verilocc.mir.parser import read_module
from verilocc.target import parse_physreg

from .conftest import kernel


def _load(name: str):  # type: ignore[no-untyped-def]
    pre = read_module(f"{kernel(name)}.pre.mir")
    fn = pre.functions[0]
    return pre, fn, compute_liveness(fn, build_cfg(fn))


def test_cfg_matches_successor_lists() -> None:
    _, fn, live = _load("gfx1100/reduce_sum")
    for b in fn.blocks:
        assert sorted(live.cfg.successors(b.number)) == sorted(n for n, _ in b.successors)
    assert live.cfg.entry == fn.blocks[0].number


def test_block_live_ins_agree_with_llvm() -> None:
    """LLVM records the lanes live into each allocated block; our liveness of the virtual
    program, mapped through LLVM's assignment, covers exactly those units."""
    for name in ("gfx90a/sgemm_naive", "gfx1100/reduce_sum", "gfx942/softmax_row"):
        pre, fn, live = _load(name)
        post = read_module(f"{kernel(name)}.post.mir")
        regs = assignment_from_allocation(pre, post).regs
        for b in post.functions[0].blocks[1:]:
            llvm_units = set()
            for reg, mask in b.liveins:
                r = parse_physreg(reg)
                llvm_units.update(r.lanes(mask) if mask is not None else r.units)
            ours = set()
            for v, m in live.live_in[b.number].vregs.items():
                m &= live.defined_in[b.number].get(v, 0)
                if m and v in regs:
                    ours.update(regs[v].lanes(m))
            assert ours <= llvm_units, (name, b.number, sorted(ours - llvm_units)[:4])


def test_intervals_cover_every_use() -> None:
    _, fn, live = _load("gfx90a/vadd")
    intervals = live_intervals(live)
    numbers = slot_numbers(live)
    # Every use of a virtual register lies inside its interval, with its lanes.
    for b in fn.blocks:
        for i, ins in enumerate(b.instructions):
            for op in ins.operands:
                if op.kind == "reg" and op.vreg is not None and not op.is_def and not op.has("undef"):
                    assert intervals[op.vreg].live_at(2 * numbers[(b.number, i)])