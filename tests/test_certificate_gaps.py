"""`verify --certificate` says which claims of a VERIFIED function its certificate cannot cover
(the manifest's `not_covered`): one line per such function naming each claim, with the verdict
kept VERIFIED. Real verifier, real z3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verilocc.cli import main

from .conftest import KERNELS, ROOT

pytest.importorskip("cvc5")

PAIRS = [KERNELS / "gfx90a" / "vadd",
         ROOT / "tests" / "fixtures" / "liveness-uses" / "greedy-instruction-split-subrange.llvm19.gfx900.fast"]


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_each_uncovered_claim_is_reported(pair: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cert"
    code = main(["verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir", "--certificate", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0 and stdout.startswith("VERIFIED"), stdout + err
    m = json.loads((out / "certificate.json").read_text())
    by_function: dict[str, list[str]] = {}
    for u in m["not_covered"]:
        by_function.setdefault(u["function"], []).append(u["claim"])
    assert by_function  # the register budget is not covered (certcheck does not check it)
    gaps = [ln for ln in err.splitlines() if "certificate gap" in ln]
    assert len(gaps) == len(by_function), err
    for line, (fn, claims) in zip(gaps, by_function.items()):
        assert f"function {fn}: not covered: " in line and "the verdict stays VERIFIED" in line
        assert all(c in line for c in claims), line
    covered = {f["name"] for f in m["functions"]} - set(by_function)
    assert not any(f"function {fn}:" in ln for fn in covered for ln in gaps)
