"""Blocks are paired by structure: llc's renumbering is not a difference, a changed CFG is."""

from __future__ import annotations

from verilocc.findings import Verdict
from verilocc.mir.parser import parse_module, read_module
from verilocc.pairing.blocks import pair_blocks, renumbered
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES

PRE = FIXTURES / "blocks" / "loop_break.gfx90a.pre.mir"
POST = FIXTURES / "blocks" / "loop_break.gfx90a.post.mir"

def _verify_text(post_text: str) -> tuple[Verdict, list[str]]:
    report = verify_modules(parse_module(post_text, str(POST)), read_module(PRE), Options())
    return report.verdict, [f.message for f in report.findings if f.severity == "error"]

def test_renumbered_blocks_are_paired_by_structure() -> None:
    pre, post = read_module(PRE).function("break_loop"), read_module(POST).function("break_loop")
    pairing = pair_blocks(pre, post)
    assert pairing == {0: 0, 1: 1, 2: 5, 3: 2, 4: 3, 5: 4}
    again = renumbered(post, pairing)
    assert [b.number for b in again.blocks] == [0, 1, 5, 2, 3, 4]
    assert [b.number for b in post.blocks] == [0, 1, 2, 3, 4, 5]  # the input is not changed
    report = verify_modules(read_module(POST), read_module(PRE), Options())
    assert report.verdict is Verdict.VERIFIED
    assert any("paired by structure" in n for fr in report.functions for n in fr.notes)

def test_same_numbers_pair_as_identity() -> None:
    fn = read_module(PRE).function("break_loop")
    assert pair_blocks(fn, fn) == {b.number: b.number for b in fn.blocks}

def test_a_branch_to_another_block_is_rejected() -> None:
    text = POST.read_text()
    # bb.1 branches to bb.4 (the flow block) instead of bb.3 (bb4): the CFG no longer matches.
    wrong = text.replace("S_CBRANCH_SCC0 %bb.3, implicit killed $scc", "S_CBRANCH_SCC0 %bb.4, implicit killed $scc", 1)
    assert wrong != text
    verdict, errors = _verify_text(wrong)
    assert verdict is Verdict.REJECTED, errors

def test_successors_that_match_no_structure_are_rejected() -> None:
    text = POST.read_text()
    wrong = text.replace("successors: %bb.3(0x30000000), %bb.2(0x50000000)",
                         "successors: %bb.3(0x30000000), %bb.5(0x50000000)", 1)
    assert wrong != text
    verdict, errors = _verify_text(wrong)
    assert verdict is Verdict.REJECTED
    assert any("successors" in e for e in errors), errors

def test_blocks_with_other_names_are_not_paired() -> None:
    """Equal shapes are not enough: a pairing must keep the IR block names."""
    pre = read_module(PRE).function("break_loop")
    post = read_module(POST).function("break_loop")
    named = renumbered(post, {b.number: b.number for b in post.blocks})
    for b in named.blocks:
        if b.name == "Flow":
            b.name = "Other"
    assert pair_blocks(pre, named) == {b.number: b.number for b in post.blocks}
