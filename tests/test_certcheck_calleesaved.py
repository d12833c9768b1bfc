"""certcheck's callee-saved check: at every return of a function with callee-saved registers
(C and `amdgpu_gfx` functions), each callee-saved SGPR holds the value it had at the function's
entry, shown by the value flow of the witness (entry values `^unit`). Real certificates of
functions that call and return (LLVM 14, 19 and 22 output) are accepted; a callee-saved
register overwritten without being saved, or restored from the wrong lane (every hash fixed up
as a forger would), is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from certcheck import regs
from certcheck.mir import read_mir

from .test_certcheck import PAIRS, _certify, _check, _manifest, _rehash, _witness
from .conftest import ROOT

CALLS = ROOT / "tests" / "fixtures" / "calls"
# `if_call` saves $sgpr30_sgpr31 (and $sgpr34_sgpr35) in lanes in bb.0, calls in bb.1, returns in bb.2
MULTI_BLOCK = "llvm-tests/pairs/19/gfx90a/call-skip.reread"


def _certify_fixture(tmp_path: Path, src: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    PAIRS[src.name] = src
    try:
        return _certify(tmp_path, src.name, capsys)
    finally:
        del PAIRS[src.name]


def _post(d: Path) -> Path:
    return Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))


@pytest.mark.parametrize("llvm", ["14", "19", "22"])
def test_functions_that_return_are_accepted_with_the_claim_covered(llvm: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify_fixture(tmp_path, CALLS / f"call.llvm{llvm}.gfx90a", capsys)
    code, out = _check(capsys, d)
    assert code == 0 and not [ln for ln in out.split("\n") if ln.startswith("not covered:") and "callee-saved" in ln]
    assert "callee_fn: witness re-checked" in out and "callee-saved registers)" in out
    m = _manifest(d)
    assert not [u for u in m["not_covered"] if "callee-saved" in u["claim"]]
    assert [w for w in m["witnessed"] if w["function"] == "callee_fn" and "callee-saved" in w["claim"]]
    fn = next(f for f in read_mir(str(_post(d)), _post(d).read_bytes()) if f.name == "callee_fn")
    assert fn.cc == "ccc" and not fn.entry_function and regs.callee_saved_sgprs(fn.cc, False)


def _callee_fn_body(text: str) -> tuple[int, int]:
    start = text.index("name:            callee_fn")
    return start, text.index("\n...", start)


def test_a_callee_saved_sgpr_overwritten_without_a_save_is_refused(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """callee_fn keeps the callee's address in $sgpr16_sgpr17 (not callee-saved); moved to
    $sgpr40_sgpr41 (callee-saved, kept across the call, not reserved) the values still flow,
    but the function returns with the caller's $sgpr40 lost."""
    d = _certify_fixture(tmp_path, CALLS / "call.llvm19.gfx90a", capsys)
    path = _post(d)
    text = path.read_text()
    a, b = _callee_fn_body(text)
    body = text[a:b]
    assert "$sgpr16_sgpr17" in body and "$sgpr40" not in body and "$sgpr41" not in body
    path.write_text(text[:a] + body.replace("$sgpr16_sgpr17", "$sgpr40_sgpr41") + text[b:])
    _rehash(d)
    code, out = _check(capsys, d)
    ret = next(k for k, ln in enumerate(path.read_text().split("\n"), 1) if ln.strip() == "SI_RETURN")
    assert code == 1 and "refused: callee-saved registers" in out and f":{ret}:" in out, out
    assert "returns with sgpr40.0 not holding its value at the function's entry" in out


def test_the_return_address_restored_from_the_wrong_lane_is_refused(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """LLVM saves the return address $sgpr30_sgpr31 in two lanes of a VGPR around the call (the
    virtual program has no such code: the call itself clobbers it there). $sgpr31 read back from
    $sgpr30's lane is refused at the return."""
    d = _certify_fixture(tmp_path, CALLS / "call.llvm19.gfx90a", capsys)
    path = _post(d)
    text = path.read_text()
    restore = re.search(r"\$sgpr31 = SI_RESTORE_S32_FROM_VGPR (\$vgpr[0-9]+), 1\n", text)
    assert restore
    path.write_text(text.replace(restore.group(0), restore.group(0).replace(", 1\n", ", 0\n")))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: callee-saved registers" in out and "sgpr31.0 not holding" in out, out


def test_an_entry_value_claim_taken_out_of_the_witness_is_refused(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Where the return lies in another block than the save, the witness says at that block's
    entry where the entry values are (`^sgpr30.0` in a lane); without those claims the
    checker cannot show them at the return."""
    d = _certify_fixture(tmp_path, ROOT / "tests" / "fixtures" / MULTI_BLOCK, capsys)
    code, out = _check(capsys, d)
    assert code == 0, out
    p, w = _witness_of(d, "^")
    claims = [(b["bb"], x) for b in w["blocks"] if isinstance(b["entry"], dict)
              for x in b["entry"]["holds"] + b["entry"]["lanes"] if any(t.startswith("^") for t in x[-1])]
    assert w["function"] == "if_call" and {bb for bb, _ in claims} == {2}
    assert any(x[-1] == ["^sgpr30.0"] for _, x in claims)  # the call clobbers $sgpr30 in both programs
    for b in w["blocks"]:
        if isinstance(b["entry"], dict):
            for key in ("holds", "lanes"):
                b["entry"][key] = [x for x in b["entry"][key] if not any(t.startswith("^") for t in x[-1])]
    p.write_text(json.dumps(w))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: callee-saved registers" in out, out


def _witness_of(d: Path, needle: str) -> tuple[Path, dict]:  # type: ignore[type-arg]
    for rec in _manifest(d)["witnesses"]:
        p = d / rec["file"]
        if f'"{needle}' in p.read_text():
            return p, json.loads(p.read_text())
    return _witness(d)

