"""CFG, lane liveness and live intervals on real programs."""

from __future__ import annotations

import subprocess

import pytest

from verilocc.rewrite.assignment import assignment_from_allocation
from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.executed import executed
from verilocc.analysis.intervals import live_intervals, slot_numbers
from verilocc.analysis.liveness import compute_liveness
from verilocc.analysis.operands import vreg_classes
from verilocc.mir.parser import parse_module as parse_module_text, read_module
from verilocc.target import parse_physreg

from .conftest import FIXTURES, ROOT, have, kernel


def _load(name: str):  # type: ignore[no-untyped-def]
    pre = read_module(f"{kernel(name)}.pre.mir")
    fn = pre.functions[0]
    return pre, fn, compute_liveness(fn, build_cfg(fn))


def test_cfg_matches_successor_lists() -> None:
    _, fn, live = _load("gfx1100/reduce_sum")
    for b in fn.blocks:
        assert sorted(live.cfg.successors(b.number)) == sorted(n for n, _ in b.successors)
    assert live.cfg.entry == fn.blocks[0].number


# A block's last instruction, as llc-19 and llc-22 read it (operands made up, not verified).
LAST_INSTRUCTIONS = {
    "19": ["S_BRANCH %bb.2", "S_CBRANCH_SCC1 %bb.2, implicit undef $scc", "S_SETPC_B64 $sgpr16_sgpr17",
           "S_SETPC_B64_return $sgpr30_sgpr31", "SI_RETURN", "SI_RETURN_TO_EPILOG", "S_ENDPGM 0", "S_ENDPGM_SAVED",
           "S_ENDPGM_ORDERED_PS_DONE", "SI_TCRETURN $sgpr16_sgpr17, 0, 0, csr_amdgpu",
           "SI_TCRETURN_GFX $sgpr36_sgpr37, 0, 0, csr_amdgpu_si_gfx",
           "SI_CS_CHAIN_TC_W32 $sgpr16_sgpr17, 0, 0, $sgpr20, csr_amdgpu",
           "SI_CS_CHAIN_TC_W64 $sgpr16_sgpr17, 0, 0, $sgpr20_sgpr21, csr_amdgpu", "S_TRAP 2", "S_RFE_B64 $sgpr30_sgpr31",
           "S_NOP 0"],
    "22": ["SI_TCRETURN_CHAIN $sgpr16_sgpr17, 0, 0, csr_amdgpu", "SI_WHOLE_WAVE_FUNC_RETURN $sgpr0"],
}


@pytest.mark.parametrize("llvm", sorted(LAST_INSTRUCTIONS))
def test_inferred_edges_are_llcs(llvm: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A block written without `successors:` gets the edges llc's MIR parser gives it: its
    branch targets, and the next block unless its last instruction is a barrier (a tail call
    is one, `S_TRAP` is not)."""
    if not have(f"llc-{llvm}"):
        pytest.skip(f"llc-{llvm} not installed")
    for last in LAST_INSTRUCTIONS[llvm] + (LAST_INSTRUCTIONS["19"] if llvm != "19" else []):
        text = (f"---\nname: f\nbody: |\n  bb.0:\n    {last}\n"
                "  bb.1:\n    S_NOP 0\n  bb.2:\n    S_ENDPGM 0\n...\n")
        path = tmp_path / "f.mir"
        path.write_text(text)
        run = subprocess.run([f"llc-{llvm}", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-run-pass=none", str(path),
                              "-o", "-"], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        written = read_module(path).functions[0]
        assert not written.blocks[0].successors_written
        printed = parse_module_text(run.stdout).functions[0].blocks[0]
        assert sorted(build_cfg(written).successors(0)) == sorted(n for n, _ in printed.successors), last


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

def test_executed_drops_debug_instructions_and_opens_independent_bundles() -> None:
    fidelity = FIXTURES / "fidelity"
    # (file, BUNDLE headers, debug instructions) in the whole module
    for name, headers, debug in (("tail-duplication-convergent.llvm19.gfx90a.post.mir", 3, 0),
                                 ("si-optimize-vgpr-live-range-dbg-instr.llvm19.gfx90a.pre.mir", 0, 1)):
        seen = [0, 0]
        for fn in read_module(fidelity / name).functions:
            out = executed(fn, vreg_classes(fn))
            before = [ins for b in fn.blocks for ins in b.instructions]
            after = [ins for b in out.blocks for ins in b.instructions]
            assert not any(ins.opens_bundle or ins.bundled or ins.opcode.startswith("DBG_") for ins in after)
            kept = [i.line for i in before if not (i.opens_bundle or i.opcode.startswith("DBG_"))]
            assert [i.line for i in after] == kept  # the rest, in order
            seen[0] += sum(ins.opens_bundle for ins in before)
            seen[1] += sum(ins.opcode.startswith("DBG_") for ins in before)
            assert executed(out, vreg_classes(out)) is out
        assert seen == [headers, debug], name
    plain = read_module(ROOT / "examples" / "gfx90a" / "vadd.pre.mir").functions[0]
    assert executed(plain, vreg_classes(plain)) is plain
