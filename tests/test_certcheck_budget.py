"""certcheck's own register budget (`certcheck.budget`) against verilocc's (`verilocc.target.limits`):
the same SGPR, VGPR and AGPR counts for every function of the corpus and the fixtures, and over
a grid of attribute sets and targets; and a certificate whose allocated program leaves the
budget is refused, hashes fixed up as a forger would. Real `verilocc verify --certificate`, real
z3 and cvc5."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from certcheck import budget, flow, mir
from certcheck.__main__ import main as certcheck_main
from verilocc.analysis.operands import function_limits
from verilocc.cli import main as verilocc_main
from verilocc.errors import TargetError
from verilocc.mir.parser import read_module
from verilocc.target.gfx import has_trap_handler, target_for_function
from verilocc.target.limits import Limits, attribute_limits
from verilocc.verify import function_target

from .conftest import CORPUS, ROOT

FIXTURES = ROOT / "tests" / "fixtures"
# gfx908, "amdgpu-num-vgpr"="64": the allocation uses $vgpr0..$vgpr62, $vgpr60 only alone.
NUM_VGPR_64 = FIXTURES / "targets" / "llvm19" / "gfx908" / "sgemm_128x128_t8x8_v64"


def _counts(lim: Limits, unified: bool) -> tuple[int, int, int, int | None]:
    return lim.sgprs, lim.vgprs, lim.agprs, lim.total_vector if unified else None


def _mine(b: budget.Budget, unified: bool) -> tuple[int, int, int, int | None]:
    return b.sgprs, b.vgprs, b.agprs, b.vector if unified else None


def _pairs() -> list[Path]:
    posts = sorted(CORPUS.glob("*/*.post.mir")) if CORPUS.is_dir() else []
    posts += sorted(FIXTURES.rglob("*.post.mir"))
    return [p for p in posts if p.with_name(p.name.replace(".post.mir", ".pre.mir")).exists()]


def test_budgets_agree_and_every_allocation_lies_within_them() -> None:
    """Every function with attributes: the same budgets. Every function: its allocation (llc's,
    and the fixtures' other allocators') lies within certcheck's budget."""
    differences: list[str] = []
    refused: list[str] = []
    compared = llvm21 = asked = checked = 0
    for post in _pairs():
        pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
        try:
            mine = {f.name: f for f in mir.read_mir(str(post), post.read_bytes())}
            mine_pre = {f.name: f for f in mir.read_mir(str(pre), pre.read_bytes())}
            theirs = read_module(str(post)).functions
        except Exception:  # noqa: BLE001 - outside either reader: nothing to compare
            continue
        for fn in theirs:
            if fn.name not in mine or fn.name not in mine_pre:
                continue
            try:
                target = function_target(fn, None, str(post))
            except Exception:  # noqa: BLE001 - no target: verilocc needs --mcpu, certcheck the manifest's
                continue
            try:
                budget.check_function(mine_pre[fn.name], mine[fn.name], target.name, str(post))
                checked += 1
            except flow.Refused as e:
                refused.append(str(e))
            if not mine[fn.name].inputs.attributes:
                continue
            lim = function_limits(fn, target)
            hard, wanted = budget.budgets(target.name, mine[fn.name].inputs)
            for what, v, c in (("hard", lim, hard), ("asked", lim.hint, wanted)):
                assert v is not None
                if _counts(v, target.unified_vgpr_file) != _mine(c, target.unified_vgpr_file):
                    differences.append(f"{post}: {fn.name} ({what}): verilocc {_counts(v, target.unified_vgpr_file)}, "
                                       f"certcheck {_mine(c, target.unified_vgpr_file)}")
            compared += 1
            llvm21 += mine[fn.name].inputs.llvm21
            asked += any(k in mine[fn.name].inputs.attributes for k in budget.ASKING)
    assert differences == [] and refused == []
    # the comparison covers both LLVM rules and functions that ask for a budget
    assert compared > 300 and llvm21 > 50 and asked > 20 and checked >= compared, (compared, llvm21, asked, checked)


TARGETS = ("gfx600", "gfx700", "gfx802", "gfx803", "gfx810", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950",
           "gfx9-4-generic", "gfx1010", "gfx1030", "gfx10-3-generic", "gfx1100", "gfx1102", "gfx1151", "gfx1200",
           "gfx12-generic", "fiji")
FEATURES = ("", "+wavefrontsize64", "+wavefrontsize32", "+cumode", "+wavefrontsize64,+cumode", "-trap-handler")
ARGUMENTS: tuple[dict[str, dict[str, str]], ...] = (
    {}, {"workGroupIDX": {"reg": "$sgpr15"}},
    {"flatScratchInit": {"reg": "$sgpr8_sgpr9"}, "workGroupIDY": {"reg": "$sgpr12"}})


def _grid(n: int, seed: int) -> list[tuple[str, dict[str, str], str, str, dict[str, dict[str, str]], bool]]:
    """`n` attribute sets x targets: work-group sizes (valid and invalid ranges), waves per EU,
    amdgpu-num-vgpr/sgpr, LDS, calling conventions, triples, wave sizes, CU mode, trap handler,
    preloaded SGPRs and flat scratch, files of LLVM 19 and of LLVM 21+."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        attrs = {"target-cpu": rng.choice(TARGETS), "target-features": rng.choice(FEATURES)}
        choices = {"amdgpu-flat-work-group-size": [f"{rng.randint(1, 64)},{rng.choice((32, 64, 128, 256, 512, 1024))}",
                                                   "1,1024", "256,256", "512,256", "0,128", "128", "1,2048"],
                   "amdgpu-waves-per-eu": [str(rng.randint(0, 21)), f"{rng.randint(0, 21)},{rng.randint(0, 21)}"],
                   "amdgpu-num-vgpr": [str(rng.randint(0, 600))], "amdgpu-num-sgpr": [str(rng.randint(0, 120))],
                   "amdgpu-lds-size": [str(rng.randint(0, 170000)), "65536"]}
        for key, values in choices.items():
            if rng.random() < 0.6:
                attrs[key] = rng.choice(values)
        out.append((attrs["target-cpu"], attrs, rng.choice(("amdgpu_kernel", "amdgpu_ps", "")),
                    rng.choice(("amdgcn-amd-amdhsa", "amdgcn-amd-amdpal")), rng.choice(ARGUMENTS), rng.random() < 0.5))
    return out


def test_budgets_agree_over_a_grid_of_attributes_and_targets() -> None:
    differences = []
    for cpu, attrs, convention, triple, args, llvm21 in _grid(20000, 7):
        try:
            target = target_for_function(cpu, attrs["target-features"])
        except TargetError:  # wave32 before gfx10: no such subtarget
            continue
        info: dict[str, object] = {"argumentInfo": args, **({"dynamicVGPRBlockSize": 0} if llvm21 else {})}
        lim = attribute_limits(target, attrs, info, convention,
                               trap_handler=has_trap_handler(triple, attrs["target-features"]))
        preloaded = max((int(v["reg"].rsplit("sgpr", 1)[1]) + 1 for v in args.values()), default=0)
        inputs = mir.BudgetInputs(attrs, convention, triple, "flatScratchInit" in args, preloaded, llvm21)
        hard, asked = budget.budgets(target.name, inputs)
        for v, c in ((lim, hard), (lim.hint, asked)):
            assert v is not None
            if _counts(v, target.unified_vgpr_file) != _mine(c, target.unified_vgpr_file):
                differences.append((cpu, attrs, convention, triple, args, llvm21))
    assert differences[:3] == []


# --------------------------------------------------------------------------------------------
# Tampering
# --------------------------------------------------------------------------------------------
@pytest.fixture()
def cert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    post, pre = tmp_path / "k.post.mir", tmp_path / "k.pre.mir"
    shutil.copy(f"{NUM_VGPR_64}.post.mir", post)
    shutil.copy(f"{NUM_VGPR_64}.pre.mir", pre)
    assert "vgpr60" not in pre.read_text()
    out = tmp_path / "cert"
    assert verilocc_main(["verify", str(post), "--pre", str(pre), "--certificate", str(out)]) == 0
    capsys.readouterr()
    return out


def _check(capsys: pytest.CaptureFixture[str], d: Path) -> tuple[int, str]:
    code = certcheck_main([str(d)])
    out, err = capsys.readouterr()
    return code, out + err


Edit = Callable[[str], str] | None


def _forge(d: Path, post_edit: Edit = None, witness_edit: Edit = None,
           manifest_edit: Callable[[dict], None] | None = None) -> None:  # type: ignore[type-arg]
    """Edit the allocated program, the witness or the manifest, and fix every hash as a forger would."""
    m = json.loads((d / "certificate.json").read_text())
    post = Path(next(i["path"] for i in m["inputs"] if i["role"] == "post"))
    if post_edit is not None:
        post.write_text(post_edit(post.read_text()))
    if witness_edit is not None:
        w = d / m["witnesses"][0]["file"]
        w.write_text(witness_edit(w.read_text()))
    if manifest_edit is not None:
        manifest_edit(m)
    for rec in m["obligations"] + m["witnesses"]:
        rec["sha256"] = hashlib.sha256((d / rec["file"]).read_bytes()).hexdigest()
    for inp in m["inputs"]:
        inp["sha256"] = hashlib.sha256(Path(inp["path"]).read_bytes()).hexdigest()
    (d / "certificate.json").write_text(json.dumps(m, indent=2))


def _rename(new: int) -> tuple[Callable[[str], str], Callable[[str], str]]:
    return (lambda t: re.sub(r"\$vgpr60\b", f"$vgpr{new}", t)), (lambda t: re.sub(r"\bvgpr60\.", f"vgpr{new}.", t))


def test_untampered_certificate_covers_the_budget(cert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(capsys, cert)
    assert code == 0, out
    assert "sgemm_tiled: register budget re-derived (102 SGPRs, 64 VGPRs, 64 AGPRs)" in out
    assert "budget" not in "".join(line for line in out.splitlines() if line.startswith("not covered"))


def test_a_register_renamed_within_the_budget_is_accepted(cert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The renaming of the next test where the allocated program's IR asks for 128 VGPRs: a
    consistent forgery, so what refuses the next one is the budget alone."""
    post_edit, witness_edit = _rename(100)
    _forge(cert, lambda t: post_edit(t).replace('"amdgpu-num-vgpr"="64"', '"amdgpu-num-vgpr"="128"'), witness_edit)
    code, out = _check(capsys, cert)
    assert code == 0 and "(102 SGPRs, 128 VGPRs, 128 AGPRs); the allocation uses 33, 101, 60" in out, out


def test_a_register_beyond_amdgpu_num_vgpr_is_refused(cert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    post_edit, witness_edit = _rename(100)
    _forge(cert, post_edit, witness_edit)
    code, out = _check(capsys, cert)
    assert code == 1 and "refused: register budget" in out and "$vgpr100 lies beyond the 64 VGPRs" in out, out
    assert "amdgpu-num-vgpr" in out


def test_the_budget_is_the_files_attributes(cert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The allocation is unchanged; the allocated program's IR asks for fewer VGPRs than it uses."""
    _forge(cert, lambda t: t.replace('"amdgpu-num-vgpr"="64"', '"amdgpu-num-vgpr"="32"'))
    code, out = _check(capsys, cert)
    assert code == 1 and "refused: register budget" in out and "beyond the 32 VGPRs" in out, out


def test_a_manifest_naming_another_target_is_refused(cert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def retarget(m: dict) -> None:  # type: ignore[type-arg]
        m["functions"][0]["target"] = "gfx90a"  # a larger file, and no even-alignment rule broken here

    _forge(cert, manifest_edit=retarget)
    code, out = _check(capsys, cert)
    assert code == 1 and "refused: register budget" in out and "compiled for gfx908" in out, out


def test_an_ordinary_value_in_a_whole_wave_register_is_refused(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`wwmReservedRegs` is for whole-wave values only: the allocated program's list made to
    name $vgpr3 too, which holds ordinary values (same line count, hashes fixed up)."""
    src = FIXTURES / "fidelity" / "set-inactive-wwm-overwrite.llvm19.gfx90a"
    post, pre = tmp_path / "w.post.mir", tmp_path / "w.pre.mir"
    shutil.copy(f"{src}.post.mir", post)
    shutil.copy(f"{src}.pre.mir", pre)
    out = tmp_path / "cert"
    assert verilocc_main(["verify", str(post), "--pre", str(pre), "--certificate", str(out)]) == 0
    capsys.readouterr()
    code, text = _check(capsys, out)
    assert code == 0, text  # the whole-wave values themselves live there
    _forge(out, lambda t: t.replace("    - '$vgpr2'\n  vgprForAGPRCopy: ''", "    - '$vgpr2'\n    - '$vgpr3'", 1))
    code, text = _check(capsys, out)
    assert code == 1 and "refused: reserved registers" in text and "$vgpr3, which the function reserves " \
        "(wwmReservedRegs)" in text, text
