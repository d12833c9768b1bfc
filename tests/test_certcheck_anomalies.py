"""Certificates of functions whose proof rests on an LLVM liveness anomaly (a read of lanes
LLVM's liveness knew unused, shown harmless by the opcode's bit-precise semantics): the
witness lists each anomaly, an obligation holds the query that proved it, and `certcheck`
accepts a wrong read only where both say so. Real `verilocc verify --certificate`, real z3
and cvc5; tampered certificates have their hashes fixed up, as a forger would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from verilocc.cli import main as verilocc_main

from .conftest import ROOT
from .test_certcheck import _check, _manifest, _rehash, _witness

pytest.importorskip("cvc5")

FIXTURES = ROOT / "tests" / "fixtures"
PAIRS = {"sdiv3264": FIXTURES / "fidelity" / "sdiv3264.llvm19.gfx1100",
         "mad-u64": FIXTURES / "fidelity" / "mad-u64-addend-high-half.llvm22.gfx1100",
         "shift": FIXTURES / "fuzz-oracle" / "ignored-shift-amount",
         "packed": FIXTURES / "fidelity" / "packed-broadcast.llvm22.gfx90a"}


def _verify(tmp_path: Path, src: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Path, str]:
    post, pre = tmp_path / "x.post.mir", tmp_path / "x.pre.mir"
    shutil.copy(f"{src}.post.mir", post)
    shutil.copy(f"{src}.pre.mir", pre)
    out = tmp_path / "cert"
    code = verilocc_main(["verify", str(post), "--pre", str(pre), "--certificate", str(out)])
    return code, out, capsys.readouterr().err


def _certify(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, err = _verify(tmp_path, PAIRS[name], capsys)
    assert code == 0, err
    return out


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_anomaly_is_certified_and_accepted(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, name, capsys)
    m = _manifest(d)
    _, w = _witness(d)
    assert w["format"] == "verilocc-witness/3" and w["anomalies"]
    files = {ob["file"]: ob for ob in m["obligations"]}
    for a in w["anomalies"]:
        assert files[a["obligation"]]["layer"] == "anomaly" and a["slots"]
        # the packed broadcast's obligation is about which components the modifiers select,
        # the operation itself an uninterpreted function
        logic = "QF_UFBV" if name == "packed" else "QF_BV"
        assert f"(set-logic {logic})" in (d / a["obligation"]).read_text()
    code, out = _check(capsys, d)
    assert code == 0, out
    assert m["not_covered"] == [] and "not covered" not in out
    assert out.strip().splitlines()[-1].startswith("accepted (")


@pytest.mark.parametrize(("slots", "harmless"), [([2, 3], True), ([0, 1], False), ([0, 1, 2, 3], False)])
def test_the_packed_selection_formula_is_unsat_only_for_unselected_components(slots: list[int], harmless: bool) -> None:
    """`V_PK_FMA_F32 8, %a, 0, %b, ...`: modifiers 0 select the low component of %b for both
    results, so its high component (slots 2 and 3) is not read; its low one is."""
    import z3

    from verilocc.mir.parser import read_module
    from verilocc.semantics.bitvector import packed_selection_query

    post = read_module(FIXTURES / "fidelity" / "packed-broadcast.llvm22.gfx90a.post.mir")
    ins = next(i for f in post.functions for b in f.blocks for i in b.instructions if i.opcode == "V_PK_FMA_F32"
               and i.operands[3].kind == "imm" and i.operands[3].text == "0")
    query = packed_selection_query(ins, 4, slots)
    assert query is not None
    solver = z3.Solver()
    solver.add(*query)
    assert (solver.check() == z3.unsat) is harmless


def _edit_anomaly(d: Path, edit: object) -> dict:  # type: ignore[type-arg]
    p, w = _witness(d)
    (a,) = w["anomalies"]
    edit(w, a)  # type: ignore[operator]
    p.write_text(json.dumps(w))
    _rehash(d)
    return a  # type: ignore[no-any-return]


def test_anomaly_removed_from_the_witness_is_refused_at_the_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "shift", capsys)
    a = _edit_anomaly(d, lambda w, a: w.pop("anomalies"))
    code, out = _check(capsys, d)
    assert code == 1, out
    assert f"refused: value flow: {tmp_path / 'x.post.mir'}:{a['post_line']}:" in out and "expecting" in out


def test_anomaly_at_another_operand_position_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "sdiv3264", capsys)
    a = _edit_anomaly(d, lambda w, a: a.update(position=a["position"] + 1))
    code, out = _check(capsys, d)
    assert code == 1, out
    assert f"refused: value flow: {tmp_path / 'x.post.mir'}:{a['post_line']}:" in out


def test_anomaly_covering_fewer_slots_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "mad-u64", capsys)
    a = _edit_anomaly(d, lambda w, a: a.update(slots=a["slots"][1:]))
    code, out = _check(capsys, d)
    assert code == 1, out
    assert f"refused: value flow: {tmp_path / 'x.post.mir'}:{a['post_line']}:" in out


def test_anomaly_naming_an_unlisted_obligation_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "shift", capsys)
    m = _manifest(d)
    _, w = _witness(d)
    m["obligations"] = [ob for ob in m["obligations"] if ob["file"] != w["anomalies"][0]["obligation"]]
    (d / w["anomalies"][0]["obligation"]).unlink()
    (d / "certificate.json").write_text(json.dumps(m, indent=2))
    code, out = _check(capsys, d)
    assert code == 1, out
    assert "refused: witness:" in out and "not an obligation of function" in out


def test_satisfiable_anomaly_obligation_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The obligation changed to one that does not hold (the two inputs merely differ)."""
    d = _certify(tmp_path, "shift", capsys)
    _, w = _witness(d)
    p = d / w["anomalies"][0]["obligation"]
    lines = [ln for ln in p.read_text().splitlines() if not ln.startswith("(assert")]
    lines.insert(lines.index("(check-sat)"), "(assert (distinct in0 in0_other))")
    p.write_text("\n".join(lines) + "\n")
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1, out
    assert "refused: f: anomaly, bb.1:" in out and "answers sat, not unsat" in out
