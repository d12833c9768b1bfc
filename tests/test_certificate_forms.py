"""The forms of `verify --certificate`: by default no obligation for what certcheck
re-establishes from a witness (layer 2's blocks, layer 1's interference facts), all of them
with `--certificate-full`; and the line per function naming the claims a certificate cannot
cover (the manifest's `not_covered`), with the verdict kept VERIFIED. Real verifier, real z3,
real cvc5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from certcheck.__main__ import main as certcheck_main
from verilocc.cli import main

from .conftest import KERNELS, ROOT

pytest.importorskip("cvc5")

PAIRS = [KERNELS / "gfx90a" / "vadd",
         ROOT / "tests" / "fixtures" / "liveness-uses" / "greedy-instruction-split-subrange.llvm19.gfx900.fast"]


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_a_witnessed_function_leaves_nothing_uncovered(pair: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cert"
    code = main(["verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir", "--certificate", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0 and stdout.startswith("VERIFIED"), stdout + err
    m = json.loads((out / "certificate.json").read_text())
    assert m["witnesses"] and m["not_covered"] == [] and "certificate gap" not in err
    assert certcheck_main([str(out)]) == 0
    assert "not covered" not in capsys.readouterr().out


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_each_uncovered_claim_is_reported(pair: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A function whose witness cannot be written (here: the writer made to fail) keeps its
    VERIFIED verdict; `verify` names every claim its certificate leaves uncovered, one line per
    function, and certcheck lists them too."""
    from verilocc.certificate import collect
    from verilocc.certificate.witness import WitnessError

    def no_witness(*args: object, **kwargs: object) -> None:
        raise WitnessError("not written")

    monkeypatch.setattr(collect, "function_witness", no_witness)
    out = tmp_path / "cert"
    code = main(["verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir", "--certificate", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0 and stdout.startswith("VERIFIED"), stdout + err
    m = json.loads((out / "certificate.json").read_text())
    by_function: dict[str, list[str]] = {}
    for u in m["not_covered"]:
        by_function.setdefault(u["function"], []).append(u["claim"])
    assert set(by_function) == {f["name"] for f in m["functions"]}
    gaps = [ln for ln in err.splitlines() if "certificate gap" in ln]
    assert len(gaps) == len(by_function), err
    for line, (fn, claims) in zip(gaps, by_function.items()):
        assert f"function {fn}: not covered: " in line and "the verdict stays VERIFIED" in line
        assert all(c in line for c in claims), line
    assert certcheck_main([str(out)]) == 0
    assert "claim(s) not covered" in capsys.readouterr().out


def test_default_form_leaves_to_the_witness_what_certcheck_re_establishes(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    pair = KERNELS / "gfx90a" / "sgemm_naive"
    forms = {}
    for form in ("default", "full"):
        out = tmp_path / form
        more = ["--certificate-full"] if form == "full" else []
        assert main(["verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir", "--certificate", str(out), *more]) == 0
        capsys.readouterr()
        forms[form] = json.loads((out / "certificate.json").read_text())
        assert certcheck_main([str(out), "-q"]) == 0, capsys.readouterr().out
        capsys.readouterr()
    layer1 = {form: next((tmp_path / form / ob["file"]).read_text() for ob in m["obligations"]
                         if ob["layer"] == "constraints") for form, m in forms.items()}
    # the full form's layer 1 query has the disjointness facts (one definition, applied per fact)
    assert "(define-fun d (" in layer1["full"] and layer1["full"].count("\n  (d ") > 10
    assert "(define-fun d (" not in layer1["default"] and "\n  (d " not in layer1["default"]
    # the memberships are in both
    members = [ln for ln in layer1["full"].splitlines() if ln.startswith("  ") and " in " in ln]
    assert members and all(m in layer1["default"] for m in members)
    witnessed = [w["claim"] for w in forms["default"]["witnessed"] if w["layer"] == "constraints"]
    assert any("interference facts" in c for c in witnessed)
    assert any(ob["layer"] == "value-flow" for ob in forms["full"]["obligations"])
    assert not any(ob["layer"] == "value-flow" for ob in forms["default"]["obligations"])


def test_form_flag_without_certificate_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    flag = "--certificate-full"
    pair = KERNELS / "gfx90a" / "vadd"
    assert main(["verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir", flag]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag} applies to --certificate DIR" in err
