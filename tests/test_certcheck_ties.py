"""certcheck's own rules for the ties an opcode implies (`certcheck.ties`), against llc and
against verilocc's table, and what the checker does with them on a certificate.

llc is the oracle, as in tests/test_ties.py (whose helpers read llc's dump, which prints every
tie, implied ones included): each opcode name llc-19 and llc-22 know, given only register
operands, and one real instruction of each opcode of the repository's MIR files and the
corpus. certcheck must give exactly llc's ties to every opcode it does not refuse. It is
never stricter than llc; it is looser on purpose only where `DELIBERATE` says why, on opcodes
it refuses.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from certcheck import ties
from certcheck.mir import parse_instruction
from verilocc.target.opcodes import tie_constraints

from .test_certcheck import PAIRS, _certify, _check, _manifest, _rehash
from .test_ties import LLC_VERSIONS, _installed, _llc, _session_dir, llc_ties, repository_samples, ties_of_every_name

ROOT = Path(__file__).resolve().parent.parent

# The deliberate differences from llc's ties, with the reason.
DELIBERATE = {"looser: encoded (real) instructions, `ties.encoded`": (
    "refused by certcheck (`MIR subset`): MIR before the asm printer has their pseudos, whose ties the rules give; "
    "their own ties often differ from the pseudo's (V_DUAL_*, DPP and SDWA encodings)")}


def _names_of_the_repository() -> list[str]:
    """Every AMDGPU instruction name LLVM 13 to 22 know (verilocc's table of names, read here as
    data: one name a line, written backwards; names that are the tail of another share its line)."""
    text = gzip.decompress((ROOT / "verilocc" / "target" / "data" / "opcode-names.txt.gz").read_bytes()).decode()
    return sorted(line[::-1] for line in text.split("\n")[1:] if line)


def test_rules_agree_with_verilocc_on_every_name() -> None:
    """Two tables written apart, on the same facts: on every name certcheck does not refuse, they
    give the same ties (verilocc leaves the encoded names untied; certcheck refuses them)."""
    names = _names_of_the_repository()
    assert len(names) > 30_000
    differ, refused, tied = [], 0, 0
    for name in names:
        if ties.encoded(name):
            refused += 1
            continue
        ours = sorted(ties.implied(name))
        tied += bool(ours)
        theirs = sorted((t.def_, t.use) for t in tie_constraints(name))
        if ours != theirs:
            differ.append(f"{name}: certcheck {ours}, verilocc {theirs}")
    assert not differ, "\n".join(differ[:40])
    assert tied > 1500 and refused > 10_000
    print(f"{len(names)} names: {tied} tied, {refused} refused as encoded, the two tables agree on the rest")


def test_rules_on_one_instruction_of_each_form() -> None:
    """The positions count explicit operands as certcheck's reader gives them (defs first)."""
    cases = {
        "$vgpr8 = V_FMAC_F32_e32 $vgpr7, $vgpr5, killed $vgpr8, implicit $mode, implicit $exec": [(0, 3)],
        "$vgpr8 = V_FMAC_F32_e64 0, $vgpr7, 0, $vgpr5, 0, killed $vgpr8, 0, 0, implicit $mode, implicit $exec": [(0, 6)],
        "$vgpr63 = SI_SPILL_S32_TO_VGPR killed $sgpr30, 0, $vgpr63": [(0, 3)],
        "$vgpr0 = V_MOV_B32_dpp $vgpr0, $vgpr1, 228, 15, 15, 0, implicit $exec": [(0, 1)],
        "$vgpr0, $vgpr1 = V_SWAP_B32 $vgpr1, $vgpr0, implicit $exec": [(0, 3), (1, 2)],
        "$vgpr0 = V_ADD_F32_e32 $vgpr1, $vgpr0, implicit $mode, implicit $exec": [],
    }
    for text, want in cases.items():
        ins = parse_instruction(text, 1, 1, "t.mir")
        explicit = [o for o in ins.ops if not (o.kind == "reg" and o.implicit)]
        assert sorted(ties.implied(ins.opcode)) == want, text
        for d, u in want:
            assert explicit[d].is_def and not explicit[u].is_def and explicit[d].reg == explicit[u].reg, text
    assert ties.encoded("V_FMAC_F32_e32_gfx10") and ties.encoded("BUFFER_ATOMIC_ADD_VBUFFER_OFFEN_RTN_gfx12_format")
    assert not ties.encoded("DS_READ_B32_gfx9") and not ties.encoded("IMAGE_ATOMIC_ADD_V1_V1_gfx90a")
    assert not ties.encoded("V_MAD_U64_U32_gfx11_e64") and not ties.encoded("S_LOAD_DWORD_IMM_ci")


@pytest.mark.llc
@pytest.mark.slow
@pytest.mark.parametrize("version", LLC_VERSIONS)
def test_every_opcode_name_llc_knows_has_llcs_ties(version: str, tmp_path: Path,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    theirs = ties_of_every_name(version, tmp_path, _session_dir(tmp_path_factory))
    differ, looser = [], 0
    for name, got in sorted(theirs.items()):
        ours = set(ties.implied(name))
        if ties.encoded(name):
            looser += ours != got  # DELIBERATE: refused
            continue
        if ours != got:
            differ.append(f"{name}: llc {sorted(got)}, certcheck {sorted(ours)}")
    assert not differ, "\n".join(differ[:50])
    print(f"llc-{version}: {len(theirs)} names, {sum(1 for t in theirs.values() if t)} tied; certcheck agrees on "
          f"every one it reads, and refuses {sum(1 for n in theirs if ties.encoded(n))} encoded ones ({looser} of "
          f"them tied otherwise): {DELIBERATE}")


@pytest.mark.llc
@pytest.mark.slow
def test_every_opcode_of_the_repository_has_llcs_ties(tmp_path: Path) -> None:
    """One real instruction of each opcode of the repository's MIR files and the corpus, as llc
    reads it: llc's ties are certcheck's (positions over the explicit operands certcheck reads)."""
    versions = [v for v in _installed() if v in ("19", "22")]
    if not versions:
        pytest.skip("neither llc-19 nor llc-22 is installed (make test installs them)")
    samples = repository_samples()
    differ, compared = [], set()
    for version in versions:
        got, _ = llc_ties(_llc(version) or "", samples, tmp_path)
        for op, (line, theirs) in sorted(got.items()):
            compared.add(op)
            assert not ties.encoded(op), f"{op} is in the repository's MIR but refused as encoded"
            assert parse_instruction(line, 1, 1, "sample").opcode == op  # certcheck reads the sample
            if set(ties.implied(op)) != theirs:
                differ.append(f"llc-{version} {op}: llc {sorted(theirs)}, certcheck {sorted(ties.implied(op))}")
    assert not differ, "\n".join(differ)
    assert len(compared) >= 0.95 * len(samples)


# --------------------------------------------------------------------------------------------
# On certificates
# --------------------------------------------------------------------------------------------
def _post(d: Path) -> Path:
    return Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))


def test_an_fmac_accumulating_in_another_register_is_refused(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`V_FMAC_F32_e32` reads its accumulator from its def's register. Its def moved to $vgpr9 (and
    the store after it reading $vgpr9), hashes fixed up: the values still flow, the tie does not."""
    d = _certify(tmp_path, "sgemm_naive", capsys)
    path = _post(d)
    text = path.read_text()
    fmac = re.search(r"( *)renamable (\$vgpr[0-9]+) = contract nofpexcept V_FMAC_F32_e32 [^\n]*killed (\$vgpr[0-9]+), "
                     r"implicit \$mode, implicit \$exec\n\1GLOBAL_STORE_DWORD [^\n]*killed renamable (\$vgpr[0-9]+),", text)
    assert fmac and fmac.group(2) == fmac.group(3) == fmac.group(4) and "$vgpr9" not in fmac.group(0)
    moved = fmac.group(0).replace(f"renamable {fmac.group(2)} = ", "renamable $vgpr9 = ").replace(
        f"killed renamable {fmac.group(4)},", "killed renamable $vgpr9,")
    path.write_text(text.replace(fmac.group(0), moved))
    _rehash(d)
    code, out = _check(capsys, d)
    line = text[: fmac.start()].count("\n") + 1
    assert code == 1 and "refused: tied operands" in out and f":{line}:" in out and "V_FMAC_F32_e32" in out, out


def test_a_lane_spill_into_another_vgpr_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`SI_SPILL_S32_TO_VGPR` writes one lane of its tied input: its input moved to another VGPR
    (hashes fixed up) is refused at that line."""
    PAIRS["call"] = ROOT / "tests" / "fixtures" / "calls" / "call.llvm19.gfx90a"
    try:
        d = _certify(tmp_path, "call", capsys)
    finally:
        del PAIRS["call"]
    path = _post(d)
    lines = path.read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if "= SI_SPILL_S32_TO_VGPR" in ln)
    vgpr = re.search(r"(\$vgpr[0-9]+)$", lines[k])
    assert vgpr and "$vgpr1," not in lines[k]
    lines[k] = lines[k][: vgpr.start()] + "$vgpr1"
    path.write_text("\n".join(lines))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: tied operands" in out and f":{k + 1}:" in out, out
    assert "`SI_SPILL_S32_TO_VGPR` ties explicit operand 3 to its def 0" in out


def test_an_encoded_opcode_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "sgemm_naive", capsys)
    path = _post(d)
    pre = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "pre"))
    for p in (path, pre):
        p.write_text(p.read_text().replace("V_FMAC_F32_e32 ", "V_FMAC_F32_e32_gfx10 "))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: MIR subset" in out and "V_FMAC_F32_e32_gfx10" in out, out


def test_the_manifest_no_longer_leaves_ties_uncovered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    claims = [u["claim"] for u in _manifest(d)["not_covered"]]
    assert not [c for c in claims if "ties" in c]
    code, out = _check(capsys, d)
    assert code == 0 and "ties" not in out, out
    assert json.loads((d / _manifest(d)["witnesses"][0]["file"]).read_text())["format"] == "verilocc-witness/3"
