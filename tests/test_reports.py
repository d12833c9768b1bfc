"""The command line and its renderings: exit codes, one summary line, JSON and SARIF 2.1.0,
deterministic bytes, layers, and a solver that gives up never yields VERIFIED."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import pytest

from verilocc.cli import main
from verilocc.findings import Finding, FunctionResult, Place, Report, Verdict
from verilocc.fuzz import mutations
from verilocc.mir.parser import read_module
from verilocc.mir.printer import print_module
from verilocc.report.render import render_text
from verilocc.smt.solver import Answer, check_z3
from verilocc.verify import Options, verify_modules

from .conftest import kernel

VADD = kernel("gfx90a/vadd")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _mutant(tmp_path: Path) -> Path:
    m = mutations.wrong_use(read_module(f"{VADD}.post.mir"), random.Random(3))
    assert m is not None
    path = tmp_path / "bad.post.mir"
    path.write_text(print_module(m.module))
    return path


def test_verified_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "verify", f"{VADD}.post.mir", "--pre", f"{VADD}.pre.mir")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("VERIFIED") and "constraints, equivalence, value-flow" in first


def test_rejected_text_json_sarif(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = _mutant(tmp_path)
    code, out, _ = _run(capsys, "verify", str(bad), "--pre", f"{VADD}.pre.mir")
    assert code == 1 and out.startswith("REJECTED")
    assert f"{bad}:" in out  # each finding starts with its file:line:col

    code, out, _ = _run(capsys, "verify", str(bad), "--pre", f"{VADD}.pre.mir", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "REJECTED"
    fn = doc["functions"][0]
    assert fn["verdict"] == "REJECTED" and fn["layers"] == ["constraints", "value-flow", "equivalence"]
    for f in fn["findings"]:
        assert {"kind", "layer", "function", "block", "line", "vregs", "physregs", "message"} <= set(f)
    assert any(f["layer"] == "value-flow" and f["kind"] == "wrong-value" for f in fn["findings"])

    code, out, _ = _run(capsys, "verify", str(bad), "--pre", f"{VADD}.pre.mir", "--format", "sarif")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    run = sarif["runs"][0]
    rules = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert run["results"] and {r["ruleId"] for r in run["results"]} <= rules
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1


def _rejected_reports(tmp_path: Path) -> list[Report]:
    """Real reports with findings: every mutation operator's first mutant of vadd, verified."""
    post, pre = read_module(f"{VADD}.post.mir"), read_module(f"{VADD}.pre.mir")
    reports = []
    for k, name in enumerate(sorted(mutations.OPERATORS)):
        m = mutations.OPERATORS[name](post, random.Random(k))
        if m is not None:
            path = tmp_path / f"{name}.post.mir"
            path.write_text(print_module(m.module))
            reports.append(verify_modules(read_module(str(path)), pre, Options()))
    assert sum(r.verdict is Verdict.REJECTED for r in reports) >= 5
    return reports


def test_text_without_rich_is_what_rich_prints(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Plain text (a pipe or file) is written without rich, and is the text rich prints there;
    on a terminal rich colours the same characters."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    for report in _rejected_reports(tmp_path):
        plain, through_rich = io.StringIO(), io.StringIO()
        render_text(report, plain)  # a StringIO is no terminal: no rich
        render_text(report, through_rich, colour=True)  # rich, which sees no terminal either
        assert plain.getvalue() == through_rich.getvalue()
        assert plain.getvalue().count("\n") >= 1 + len(report.findings)
        monkeypatch.setenv("FORCE_COLOR", "1")
        coloured = io.StringIO()
        render_text(report, coloured)
        monkeypatch.delenv("FORCE_COLOR")
        assert "\x1b[" in coloured.getvalue()
        assert re.sub("\x1b\\[[0-9;]*m", "", coloured.getvalue()) == plain.getvalue()


def test_text_prints_places_and_messages_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """`file:100:5:` stays that (rich would print an emoji for `:100:`), brackets are text, and
    the characters rich leaves out (a bell, a carriage return) are left out."""
    finding = Finding("interference", "constraints", Place("k.mir", "f", 0, 3, 100, 5),
                      "[b]%1:100:[/b] and\x07 %2\r", vregs=("%1",))
    report = Report(file="k.mir", pre_file="k.pre.mir", functions=[FunctionResult("f", "gfx90a", ["constraints"], [finding])], tool_version="0")
    for env in ("", "1"):
        monkeypatch.setenv("FORCE_COLOR", env)  # "": rich prints no colours; "1": it does
        out = io.StringIO()
        render_text(report, out)
        text = re.sub("\x1b\\[[0-9;]*m", "", out.getvalue())
        assert text.splitlines()[1] == "k.mir:100:5: error [constraints/interference] f: [b]%1:100:[/b] and %2"


def test_output_is_deterministic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = _mutant(tmp_path)
    outs = {_run(capsys, "verify", str(bad), "--pre", f"{VADD}.pre.mir", "--format", "json")[1] for _ in range(2)}
    assert len(outs) == 1


def test_json_written_to_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, stdout, _ = _run(capsys, "verify", f"{VADD}.post.mir", "--pre", f"{VADD}.pre.mir", "--format", "json",
                           "-o", str(out))
    assert code == 0 and stdout == "" and json.loads(out.read_text())["verdict"] == "VERIFIED"


def test_without_reference_is_not_verified(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "verify", f"{VADD}.post.mir")
    assert code == 3 and out.startswith("UNKNOWN")
    assert "equivalence were not checked" in out


def test_layer_subset_never_verifies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "verify", f"{VADD}.post.mir", "--pre", f"{VADD}.pre.mir", "--layers", "value-flow",
                        "--format", "json")
    doc = json.loads(out)
    assert code == 3 and doc["verdict"] == "UNKNOWN" and doc["functions"][0]["layers"] == ["value-flow"]


def test_without_reference_still_finds_misalignment(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = Path(f"{VADD}.post.mir").read_text().replace("$vgpr4_vgpr5", "$vgpr5_vgpr6")
    bad = tmp_path / "mis.mir"
    bad.write_text(text)
    code, out, _ = _run(capsys, "verify", str(bad), "--format", "json")
    doc = json.loads(out)
    assert code == 1
    assert any(f["kind"] == "alignment" and "$vgpr5_vgpr6" in f["message"] for f in doc["functions"][0]["findings"])
    code, out, _ = _run(capsys, "verify", str(bad), "--mcpu", "gfx1100", "--format", "json")
    assert not any(f["kind"] == "alignment" for f in json.loads(out)["functions"][0]["findings"])


def test_an_implicit_operand_has_no_alignment_constraint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """LLVM's rewriter writes `implicit-def $vgpr41_vgpr42` for the live lanes of a tuple; only
    explicit operands have a class (and so an alignment) in llc's machine verifier."""
    line = "renamable $vgpr0 = V_LSHL_OR_B32_e64 killed $sgpr6, 8, killed $vgpr0, implicit $exec"
    text = Path(f"{VADD}.post.mir").read_text()
    assert line in text
    post = tmp_path / "implicit.mir"
    post.write_text(text.replace(line, line + ", implicit-def $vgpr1_vgpr2"))
    code, out, _ = _run(capsys, "verify", str(post), "--format", "json")
    # Without the virtual program no verdict is VERIFIED: UNKNOWN (3), not REJECTED (1).
    assert code == 3 and not any(f["kind"] == "alignment" for f in json.loads(out)["functions"][0]["findings"])
    post.write_text(text.replace(line, line.replace("renamable $vgpr0 =", "renamable $vgpr0, renamable $vgpr1_vgpr2 =")))
    code, out, _ = _run(capsys, "verify", str(post), "--format", "json")
    assert code == 1 and any(f["kind"] == "alignment" for f in json.loads(out)["functions"][0]["findings"])


def test_solver_out_of_resources_is_unknown() -> None:
    # A pigeonhole instance: 7 values into 6 distinct slots; out of reach with a tiny budget.
    decls = "".join(f"(declare-const x{i} Int)(assert (and (<= 0 x{i}) (< x{i} 6)))" for i in range(7))
    text = decls + "(assert (distinct " + " ".join(f"x{i}" for i in range(7)) + "))(check-sat)"
    out = check_z3(text, rlimit=200)
    assert out.answer is Answer.UNKNOWN
    assert check_z3(text).answer is Answer.UNSAT


@pytest.mark.interpreted
def test_unknown_solver_makes_function_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    import verilocc.smt.constraints as constraints
    from verilocc.smt.solver import SolverOutcome
    from verilocc.verify import Options, verify_modules

    monkeypatch.setattr(constraints, "check_z3", lambda *a, **k: SolverOutcome(Answer.UNKNOWN, "z3", 0.0, "timeout"))
    report = verify_modules(read_module(f"{VADD}.post.mir"), read_module(f"{VADD}.pre.mir"), Options())
    assert report.verdict is Verdict.UNKNOWN
    assert any(f.kind == "solver" and f.severity == "unknown" for f in report.findings)


def test_unknown_register_mask_is_unknown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A construct the layers do not model stops the proof: UNKNOWN, naming it."""
    post = Path(f"{VADD}.post.mir").read_text().replace("S_ENDPGM 0", "SI_RETURN csr_unheard_of\n    S_ENDPGM 0")
    pre = Path(f"{VADD}.pre.mir").read_text().replace("S_ENDPGM 0", "SI_RETURN csr_unheard_of\n    S_ENDPGM 0")
    (tmp_path / "p.mir").write_text(post)
    (tmp_path / "q.mir").write_text(pre)
    code, out, _ = _run(capsys, "verify", str(tmp_path / "p.mir"), "--pre", str(tmp_path / "q.mir"))
    assert code == 3 and out.startswith("UNKNOWN") and "register mask" in out


def test_commands_run_in_process_leave_the_cycle_collector_as_they_found_it(capsys: pytest.CaptureFixture[str]) -> None:
    """`verify` turns the cycle collector off for its one pair; a caller that runs commands in
    its own process (this test suite) must get it back, or its memory grows without bound."""
    import gc

    from .conftest import EXAMPLES

    before = gc.get_threshold()
    assert gc.isenabled()
    pair = EXAMPLES / "gfx90a" / "vadd"
    assert main(["verify", f"{pair}.post.mir", "--pre", f"{pair}.pre.mir"]) == 0
    capsys.readouterr()
    assert gc.isenabled() and gc.get_threshold() == before
