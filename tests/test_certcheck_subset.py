"""`certcheck` on the MIR that llc reads in its own way: wave32 files where one program names
`$vcc` and the other `$vcc_lo`, the fast allocator's `S_NOP` operands that name a whole
register for a subregister, and a bundle. Each real pair is certified by `verilocc verify
--certificate` and accepted; a tampered variant of each (hashes fixed up, as a forger would) is
refused with the claim that fails. Real z3, real cvc5."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


from .conftest import ROOT
from .test_certcheck import _check, _edit_line, _rehash, certify_copy

pytest.importorskip("cvc5")

FIX = ROOT / "tests" / "fixtures"
PAIRS = {
    # wave32: the virtual program reads `implicit $vcc` (patched so llc reads it), the allocated `$vcc_lo`
    "wave32-llvm19-gfx1100": FIX / "wave32-vcc" / "fdiv.llvm19.gfx1100",
    "wave32-llvm19-gfx1200": FIX / "wave32-vcc" / "fdiv.llvm19.gfx1200",
    "wave32-llvm22-gfx1100": FIX / "wave32-vcc" / "fdiv.llvm22.gfx1100",
    "wave32-llvm22-gfx1200": FIX / "wave32-vcc" / "fdiv.llvm22.gfx1200",
    # `S_NOP 0, implicit %0.sub1` allocated as `S_NOP 0, implicit killed $vgpr4_vgpr5`
    "snop-split": FIX / "liveness-uses" / "greedy-instruction-split-subrange.llvm19.gfx900.fast",
    "snop-interference": FIX / "liveness-uses" / "subreg_interference.llvm19.gfx900.fast",
    # `BUNDLE { DS_GWS_* ...; S_WAITCNT 0 }` in both programs
    "bundle": FIX / "fidelity" / "tail-duplication-convergent.llvm19.gfx90a",
}


def _certify(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    return certify_copy(tmp_path, PAIRS[name], capsys)


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) >= count, old
    path.write_text(text.replace(old, new, count))


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_pair_is_accepted(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, post, pre = _certify(tmp_path, name, capsys)
    code, out = _check(capsys, d)
    assert code == 0 and "witness re-checked" in out and "accepted" in out, out
    if name.startswith("wave32"):
        assert re.search(r"implicit (killed )?\$vcc,", pre.read_text())
        assert re.search(r"implicit (killed )?\$vcc_lo,", post.read_text())


@pytest.mark.parametrize("name", ["wave32-llvm19-gfx1100", "wave32-llvm22-gfx1200"])
def test_wave64_says_the_ir_vcc_lo_is_half_of_vcc(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The allocated file's IR made to say `+wavefrontsize64`: `$vcc` is then the 64-bit mask,
    and `$vcc_lo` reads half of it."""
    d, post, _ = _certify(tmp_path, name, capsys)
    text = post.read_text()
    cpu = text[text.index('"target-cpu"="'):].split("}", 1)[0].strip()
    _edit(post, cpu, cpu + ' "target-features"="+wavefrontsize64"')
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: fixed registers" in out and "$vcc_lo" in out, out


def test_wave32_vcc_hi_for_vcc_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, post, _ = _certify(tmp_path, "wave32-llvm19-gfx1100", capsys)
    k = _edit_line(d, post, lambda ln: "V_DIV_FMAS_F32" in ln and "implicit $vcc_lo" in ln,
                   "implicit $vcc_lo", "implicit $vcc_hi")
    code, out = _check(capsys, d)
    assert code == 1 and "refused: fixed registers" in out and f":{k + 1}:" in out, out


def test_snop_with_another_wait_count_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, post, _ = _certify(tmp_path, "snop-split", capsys)
    k = post.read_text().split("\n").index("    S_NOP 0, implicit killed $vgpr2_vgpr3")
    _edit(post, "S_NOP 0, implicit killed $vgpr2_vgpr3", "S_NOP 1, implicit killed $vgpr2_vgpr3")
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: alignment" in out and f":{k + 1}:" in out, out


def test_snop_def_in_another_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An S_NOP's uses are not values, its defs are: the home of %0.sub3 moved to a VGPR."""
    d, post, _ = _certify(tmp_path, "snop-interference", capsys)
    _edit(post, "S_NOP 0, implicit-def renamable $sgpr7", "S_NOP 0, implicit-def renamable $vgpr7")
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: class membership" in out, out


def test_bundle_reading_another_register_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, post, _ = _certify(tmp_path, "bundle", capsys)
    _edit(post, "DS_GWS_INIT renamable $vgpr0,", "DS_GWS_INIT renamable $vgpr1,")
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: value flow" in out and "DS_GWS" not in out, out


def test_dependent_bundle_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The write of $m0 moved into the bundle, before the instruction that reads it: the
    bundle reads $m0 before any of its instructions writes it, so in turn is not its meaning."""
    d, post, _ = _certify(tmp_path, "bundle", capsys)
    lines = post.read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if ln.strip().startswith("BUNDLE") and "$m0" in ln)
    assert "$m0 = S_MOV_B32" in lines[k - 1]
    lines[k - 1], lines[k] = lines[k], "  " + lines[k - 1]
    post.write_text("\n".join(lines))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: MIR subset" in out and "depend on each other" in out and f":{k}:" in out, out


def test_internal_operand_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, post, _ = _certify(tmp_path, "bundle", capsys)
    lines = post.read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if "DS_GWS_INIT" in ln)
    lines[k] = lines[k].replace("implicit $m0", "implicit internal $m0")
    post.write_text("\n".join(lines))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: MIR subset" in out and "internal" in out and f":{k + 1}:" in out, out
