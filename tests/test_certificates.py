"""Certificates (`verify --certificate`, `recheck`): every corpus pair's certificate re-checks
with cvc5; a changed input or obligation, an extra or missing file, a secretly satisfiable
obligation and a bad directory all fail; a REJECTED pair writes nothing. Real z3, real cvc5.

The default run certifies a spread of kernels (each target, spills, AGPRs);
VERILOCC_CERT_ALL=1 certifies all 54 pairs (12.5 minutes on 2 shared cores).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from pathlib import Path

import pytest

from verilocc.cli import main
from verilocc.fuzz import mutations
from verilocc.mir.parser import read_module
from verilocc.mir.printer import print_module

from .conftest import KERNELS, corpus_pairs

pytest.importorskip("cvc5")

# Every target; AGPRs (hgemm_mfma16, fa_mfma_d64); stack spills (sgemm_128x128_t8x8_v64 on gfx1100).
SPREAD = {"gfx90a/vadd", "gfx90a/hgemm_mfma16_w32x32", "gfx942/fa_mfma_d64", "gfx942/reduce_sum",
          "gfx1100/hgemm_wmma_w32x32", "gfx1100/sgemm_128x128_t8x8_v64"}
ALL = bool(os.environ.get("VERILOCC_CERT_ALL"))
PAIRS = [p for p in corpus_pairs() if ALL or p[0] in SPREAD]
VADD = KERNELS / "gfx90a" / "vadd"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _certify(capsys: pytest.CaptureFixture[str], out: Path, post: Path = Path(f"{VADD}.post.mir"),
             pre: Path = Path(f"{VADD}.pre.mir")) -> tuple[int, str, str]:
    """The full form: these tests are about layer 2's obligations too."""
    return _run(capsys, "verify", str(post), "--pre", str(pre), "--certificate", str(out), "--certificate-full")


def _manifest(d: Path) -> dict[str, object]:
    return json.loads((d / "certificate.json").read_text())  # type: ignore[no-any-return]


def _refresh_hash(d: Path, rel: str) -> None:
    """What a forger does after editing an obligation: fix its hash in the manifest."""
    m = _manifest(d)
    for ob in m["obligations"]:  # type: ignore[attr-defined]
        if ob["file"] == rel:
            ob["sha256"] = hashlib.sha256((d / rel).read_bytes()).hexdigest()
    (d / "certificate.json").write_text(json.dumps(m, indent=2))


@pytest.fixture
def vadd_cert(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    out = tmp_path / "cert"
    code, _, err = _certify(capsys, out)
    assert code == 0 and "certificate written" in err
    return out


@pytest.mark.parametrize(("post", "pre"), [(p, q) for _, p, q in PAIRS], ids=[i for i, _, _ in PAIRS])
def test_corpus_certificate_rechecks(capsys: pytest.CaptureFixture[str], tmp_path: Path, post: Path,
                                     pre: Path) -> None:
    out = tmp_path / "cert"
    code, _, err = _certify(capsys, out, post, pre)
    assert code == 0, err
    m = _manifest(out)
    assert m["verdict"] == "VERIFIED" and m["layers"] == ["constraints", "value-flow", "equivalence"]
    inputs = {i["role"]: i for i in m["inputs"]}  # type: ignore[attr-defined]
    assert inputs["post"]["sha256"] == hashlib.sha256(post.read_bytes()).hexdigest()
    assert inputs["pre"]["sha256"] == hashlib.sha256(pre.read_bytes()).hexdigest()
    layers = {ob["layer"] for ob in m["obligations"]}  # type: ignore[attr-defined]
    assert {"constraints", "value-flow"} <= layers
    for ob in m["obligations"]:  # type: ignore[attr-defined]
        text = (out / ob["file"]).read_text()
        assert ob["expect"] == "unsat" and text.rstrip().endswith("(check-sat)") and "(set-logic " in text
        assert not re.search(r"\((and|or) [^\s()]+\)", text)  # no unary and/or
    code, stdout, err = _run(capsys, "recheck", str(out))
    assert code == 0, stdout + err
    assert f"RECHECKED {out}: 0 problem(s)" in stdout and "cvc5 1." in stdout


def test_certificate_files_are_deterministic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _certify(capsys, a)
    _certify(capsys, b)
    files = sorted(p.relative_to(a) for p in (a / "obligations").iterdir())
    assert files and files == sorted(p.relative_to(b) for p in (b / "obligations").iterdir())
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes()


def test_changed_input_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    post, pre = tmp_path / "vadd.post.mir", tmp_path / "vadd.pre.mir"
    shutil.copy(f"{VADD}.post.mir", post)
    shutil.copy(f"{VADD}.pre.mir", pre)
    out = tmp_path / "cert"
    assert _certify(capsys, out, post, pre)[0] == 0
    data = bytearray(pre.read_bytes())
    data[len(data) // 2] ^= 0x01
    pre.write_bytes(bytes(data))
    code, stdout, _ = _run(capsys, "recheck", str(out))
    assert code == 1
    assert f"{out}: error: input pre {pre}: SHA-256" in stdout and "RECHECK FAILED" in stdout
    pre.unlink()
    code, stdout, _ = _run(capsys, "recheck", str(out))
    assert code == 1 and "cannot read it" in stdout


def test_changed_obligation_byte_fails(capsys: pytest.CaptureFixture[str], vadd_cert: Path) -> None:
    rel = next(ob["file"] for ob in _manifest(vadd_cert)["obligations"] if ob["layer"] == "value-flow")  # type: ignore[attr-defined]
    p = vadd_cert / rel
    data = bytearray(p.read_bytes())
    data[-2] ^= 0x20  # inside the final (check-sat)
    p.write_bytes(bytes(data))
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert))
    assert code == 1 and f"obligation {rel}: SHA-256 differs" in stdout


def test_extra_and_missing_obligation_fail(capsys: pytest.CaptureFixture[str], vadd_cert: Path) -> None:
    (vadd_cert / "obligations" / "extra.smt2").write_text("(set-logic QF_UF)\n(assert false)\n(check-sat)\n")
    rel = _manifest(vadd_cert)["obligations"][0]["file"]  # type: ignore[index]
    (vadd_cert / rel).unlink()
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert))
    assert code == 1
    assert "obligations/extra.smt2: not listed in the manifest (an extra claim)" in stdout
    assert f"obligation {rel}: missing" in stdout


def test_secretly_satisfiable_value_flow_obligation_fails(capsys: pytest.CaptureFixture[str], vadd_cert: Path) -> None:
    """Drop the entry invariant's facts from a block's obligation and fix its hash: only cvc5 can tell."""
    m = _manifest(vadd_cert)
    for ob in m["obligations"]:  # type: ignore[attr-defined]
        if ob["layer"] != "value-flow":
            continue
        p = vadd_cert / ob["file"]
        text = p.read_text()
        forged = re.sub(r"^\(assert \(=> .*\n", "", text, flags=re.MULTILINE)
        if forged != text:
            p.write_text(forged)
            _refresh_hash(vadd_cert, ob["file"])
            break
    else:
        pytest.fail("no value-flow obligation states entry facts")
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert))
    assert code == 1
    assert f"obligation {ob['file']}: cvc5 finds it satisfiable" in stdout


def test_secretly_satisfiable_constraints_obligation_fails(capsys: pytest.CaptureFixture[str], vadd_cert: Path) -> None:
    """Move one home to a register outside its class (h = -1) and fix the hash."""
    rel = next(ob["file"] for ob in _manifest(vadd_cert)["obligations"] if ob["layer"] == "constraints")  # type: ignore[attr-defined]
    p = vadd_cert / rel
    text = p.read_text()
    forged, n = re.subn(r"^\(define-fun (h_\d+) \(\) Int \d+\)$", r"(define-fun \1 () Int (- 1))", text, count=1, flags=re.MULTILINE)
    assert n == 1
    p.write_text(forged)
    _refresh_hash(vadd_cert, rel)
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert))
    assert code == 1 and f"obligation {rel}: cvc5 finds it satisfiable" in stdout


def test_timeout_fails(capsys: pytest.CaptureFixture[str], vadd_cert: Path) -> None:
    """An obligation cvc5 cannot decide within --timeout (factoring a 64-bit product) fails."""
    rel = next(ob["file"] for ob in _manifest(vadd_cert)["obligations"] if ob["layer"] == "value-flow")  # type: ignore[attr-defined]
    (vadd_cert / rel).write_text(
        "(set-logic QF_BV)\n(declare-fun a () (_ BitVec 32))\n(declare-fun b () (_ BitVec 32))\n"
        "(assert (= (bvmul ((_ zero_extend 32) a) ((_ zero_extend 32) b)) #x7fffffffffffffe7))\n"
        "(assert (bvugt a #x00000001))\n(assert (bvugt b #x00000001))\n(check-sat)\n")
    _refresh_hash(vadd_cert, rel)
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert), "--timeout", "0.5")
    assert code == 1 and f"obligation {rel}: cvc5 answers unknown" in stdout


def test_rejected_pair_writes_no_certificate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    m = mutations.wrong_use(read_module(f"{VADD}.post.mir"), random.Random(3))
    assert m is not None
    bad = tmp_path / "bad.post.mir"
    bad.write_text(print_module(m.module))
    out = tmp_path / "cert"
    code, stdout, err = _certify(capsys, out, bad)
    assert code == 1 and stdout.startswith("REJECTED")
    assert "no certificate written" in err and "REJECTED" in err
    assert not out.exists() or not any(out.iterdir())


def test_layer_subset_writes_no_certificate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "cert"
    code, _, err = _run(capsys, "verify", f"{VADD}.post.mir", "--pre", f"{VADD}.pre.mir", "--layers",
                        "constraints", "--certificate", str(out))
    assert code == 3 and "no certificate written" in err
    assert not out.exists() or not any(out.iterdir())


def test_directory_policy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, _, err = _certify(capsys, mine)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "refusing" in err
    assert (mine / "notes.txt").read_text() == "keep me" and len(list(mine.iterdir())) == 1

    cert = tmp_path / "cert"
    assert _certify(capsys, cert)[0] == 0
    assert _certify(capsys, cert)[0] == 0  # a previous certificate is replaced
    assert _run(capsys, "recheck", str(cert))[0] == 0
    (cert / "notes.txt").write_text("keep me")
    code, _, err = _certify(capsys, cert)
    assert code == 2 and "notes.txt" in err and (cert / "notes.txt").exists()

    afile = tmp_path / "afile"
    afile.write_text("x")
    assert _certify(capsys, afile)[0] == 2 and afile.read_text() == "x"


def test_unreadable_certificate_is_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "recheck", str(tmp_path))
    assert code == 2 and err.strip() == f"{tmp_path}: error: no certificate.json: not a verilocc certificate"
    (tmp_path / "certificate.json").write_text("{ not json")
    code, _, err = _run(capsys, "recheck", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not valid JSON" in err
    code, _, err = _run(capsys, "recheck", str(tmp_path / "missing"))
    assert code == 2 and "not a directory" in err


def test_relative_inputs_and_input_root(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(f"{VADD}.post.mir", work / "v.post.mir")
    shutil.copy(f"{VADD}.pre.mir", work / "v.pre.mir")
    monkeypatch.chdir(work)
    assert _run(capsys, "verify", "v.post.mir", "--pre", "v.pre.mir", "--certificate", "cert")[0] == 0
    assert [i["path"] for i in _manifest(work / "cert")["inputs"]] == ["v.post.mir", "v.pre.mir"]  # type: ignore[attr-defined]
    monkeypatch.chdir(tmp_path)
    code, stdout, _ = _run(capsys, "recheck", "work/cert")
    assert code == 1 and "cannot read it" in stdout
    assert _run(capsys, "recheck", "work/cert", "--input-root", "work")[0] == 0
    assert _run(capsys, "recheck", "work/cert", "--post", "work/v.post.mir", "--pre", "work/v.pre.mir")[0] == 0


def test_manifest_states_what_is_not_covered(vadd_cert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = _manifest(vadd_cert)
    assert m["not_covered"] == []  # every claim a solver does not see is the witness's, for certcheck
    witnessed = {u["layer"] for u in m["witnessed"]}  # type: ignore[attr-defined]
    assert {"constraints", "value-flow"} <= witnessed
    assert m["trusted"] and m["versions"]["z3"] and m["seed"] == 0  # type: ignore[index]
    assert m["mir_syntax"]["detected"].startswith("LLVM 19 ")  # type: ignore[index]  # the corpus is LLVM 19's
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert))
    assert code == 0 and "not independently re-checked" not in stdout


def test_assignment_certificate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An assignment is certified with its own hash; the materialised program is not an input."""
    from verilocc.rewrite.assignment import assignment_from_allocation, format_assignment

    pre = read_module(f"{VADD}.pre.mir")
    asg = tmp_path / "vadd.asg"
    asg.write_text(format_assignment(assignment_from_allocation(pre, read_module(f"{VADD}.post.mir")).regs))
    out = tmp_path / "cert"
    code, _, err = _run(capsys, "verify", "--pre", f"{VADD}.pre.mir", "--assignment", str(asg), "--certificate", str(out))
    assert code == 0, err
    assert [i["role"] for i in _manifest(out)["inputs"]] == ["pre", "assignment"]  # type: ignore[attr-defined]
    assert _run(capsys, "recheck", str(out))[0] == 0
    asg.write_text(asg.read_text() + "\n")
    code, stdout, _ = _run(capsys, "recheck", str(out))
    assert code == 1 and f"input assignment {asg}: SHA-256" in stdout


def test_manifest_without_a_layer_1_obligation_fails(capsys: pytest.CaptureFixture[str], vadd_cert: Path) -> None:
    m = _manifest(vadd_cert)
    dropped = [ob for ob in m["obligations"] if ob["layer"] == "constraints"]  # type: ignore[attr-defined]
    m["obligations"] = [ob for ob in m["obligations"] if ob["layer"] != "constraints"]  # type: ignore[attr-defined]
    for ob in dropped:
        (vadd_cert / ob["file"]).unlink()
    (vadd_cert / "certificate.json").write_text(json.dumps(m))
    code, stdout, _ = _run(capsys, "recheck", str(vadd_cert))
    assert code == 1 and "the manifest lists no layer 1 obligation" in stdout
    digest = hashlib.sha256((vadd_cert / "certificate.json").read_bytes()).hexdigest()
    assert f"manifest SHA-256: {digest}" in stdout


def test_equivalence_obligation_without_its_assumptions_fails(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    """Layer 3's query rests on the block-entry assumptions; dropped (hash fixed up), cvc5 finds sat."""
    pair = KERNELS / "gfx90a" / "sgemm_naive"  # one of the kernels whose layer 3 needs the solver
    out = tmp_path / "cert"
    assert _certify(capsys, out, Path(f"{pair}.post.mir"), Path(f"{pair}.pre.mir"))[0] == 0
    rel = next(ob["file"] for ob in _manifest(out)["obligations"] if ob["layer"] == "equivalence")  # type: ignore[attr-defined]
    text = (out / rel).read_text()
    forged = re.sub(r"^\(assert (?!\(not ).*\n", "", text, flags=re.MULTILINE)
    assert forged != text and "(assert (not " in forged
    (out / rel).write_text(forged)
    _refresh_hash(out, rel)
    code, stdout, _ = _run(capsys, "recheck", str(out))
    assert code == 1 and f"obligation {rel}: cvc5 finds it satisfiable" in stdout
