"""`certcheck` on real certificates: untampered ones are accepted; a changed witness, a changed
obligation, a changed byte of either MIR file, two registers swapped in the allocated program
(hashes fixed up, as a forger would) are refused, each with the claim that fails. Real z3,
real cvc5, real `verilocc verify --certificate`."""

from __future__ import annotations

from collections.abc import Callable

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from certcheck.__main__ import main as certcheck_main
from verilocc.cli import main as verilocc_main

from .conftest import KERNELS, ROOT

pytest.importorskip("cvc5")

PAIRS = {"vadd": KERNELS / "gfx90a" / "vadd", "sgemm_naive": KERNELS / "gfx90a" / "sgemm_naive",
         # SGPR spills to the stack; whole-wave values; SGPR lane spills
         "spills": ROOT / "tests" / "fixtures" / "fidelity" / "si-spill-sgpr-stack.llvm19.gfx90a",
         "whole-wave": ROOT / "tests" / "fixtures" / "fidelity" / "set-inactive-wwm-overwrite.llvm19.gfx90a",
         "lanes": ROOT / "tests" / "fixtures" / "hunt" / "known" / "issue61134.llvm19.gfx90a.fast"}


def certify_copy(tmp_path: Path, src: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    """The certificate of a copy of the pair `src` (X for X.post.mir and X.pre.mir), and the
    copies of its allocated and virtual files."""
    post, pre = tmp_path / f"{src.name}.post.mir", tmp_path / f"{src.name}.pre.mir"
    shutil.copy(f"{src}.post.mir", post)
    shutil.copy(f"{src}.pre.mir", pre)
    out = tmp_path / "cert"
    code = verilocc_main(["verify", str(post), "--pre", str(pre), "--certificate", str(out)])
    capsys.readouterr()
    assert code == 0
    return out, post, pre


def _certify(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> Path:
    return certify_copy(tmp_path, PAIRS[name], capsys)[0]


def _check(capsys: pytest.CaptureFixture[str], d: Path, *more: str) -> tuple[int, str]:
    code = certcheck_main([str(d), *more])
    out, err = capsys.readouterr()
    return code, out + err


def _manifest(d: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((d / "certificate.json").read_text())  # type: ignore[no-any-return]


def _rehash(d: Path) -> None:
    """What a forger does after an edit: every hash in the manifest made to match again."""
    m = _manifest(d)
    for rec in m["obligations"] + m["witnesses"]:
        rec["sha256"] = hashlib.sha256((d / rec["file"]).read_bytes()).hexdigest()
    for inp in m["inputs"]:
        inp["sha256"] = hashlib.sha256(Path(inp["path"]).read_bytes()).hexdigest()
    (d / "certificate.json").write_text(json.dumps(m, indent=2))


def _edit_line(d: Path, path: Path, match: Callable[[str], bool], old: str, new: str) -> int:
    """Replace `old` by `new` in the first line of `path` that `match` accepts and fix the
    certificate's hashes, as a forger would; the line's index."""
    lines = path.read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if match(ln))
    lines[k] = lines[k].replace(old, new)
    path.write_text("\n".join(lines))
    _rehash(d)
    return k


def _witness(d: Path) -> tuple[Path, dict]:  # type: ignore[type-arg]
    p = d / _manifest(d)["witnesses"][0]["file"]
    return p, json.loads(p.read_text())


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_untampered_certificate_is_accepted(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, name, capsys)
    code, out = _check(capsys, d)
    assert code == 0, out
    assert "witness re-checked" in out and "unsat for z3 and for cvc5" in out
    # every claim is re-established: none is left uncovered, by certcheck or by the manifest
    m = _manifest(d)
    assert m["not_covered"] == [] and "not covered" not in out
    assert out.strip().splitlines()[-1].startswith("accepted (")
    assert m["witnessed"] and all("certcheck" in w["reason"] for w in m["witnessed"])


def test_changed_home_in_the_witness_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "sgemm_naive", capsys)
    p, w = _witness(d)
    block = next(b for b in w["blocks"] if isinstance(b["entry"], dict) and len(b["entry"]["holds"]) > 2
                 and b["bb"] != 0)
    (loc, tags), (loc2, tags2) = block["entry"]["holds"][0], block["entry"]["holds"][1]
    block["entry"]["holds"][0] = [loc, tags2]  # loc now claims to hold what loc2 holds
    p.write_text(json.dumps(w))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: value flow" in out, out


def test_changed_pairing_in_the_witness_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    p, w = _witness(d)
    steps = next(b["steps"] for b in w["blocks"] if sum(s[0] == "matched" for s in b["steps"]) > 2)
    i, j = [k for k, s in enumerate(steps) if s[0] == "matched"][:2]
    steps[i][2], steps[j][2] = steps[j][2], steps[i][2]
    p.write_text(json.dumps(w))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: alignment" in out, out


def test_witness_without_its_hash_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    p, w = _witness(d)
    p.write_text(json.dumps(w, indent=1))
    code, out = _check(capsys, d)
    assert code == 1 and "refused: certificate files" in out and "SHA-256" in out


def test_changed_obligation_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Layer 3's query without its assumptions: both solvers find it satisfiable."""
    d = _certify(tmp_path, "sgemm_naive", capsys)
    rel = next(ob["file"] for ob in _manifest(d)["obligations"] if ob["layer"] == "equivalence")
    text = (d / rel).read_text()
    forged = re.sub(r"^\(assert (?!\(not ).*\n", "", text, flags=re.MULTILINE)
    assert forged != text
    (d / rel).write_text(forged)
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and f"{rel}: cvc5 answers sat" in out, out


def test_obligation_with_another_command_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    rel = _manifest(d)["obligations"][0]["file"]
    (d / rel).write_text((d / rel).read_text().replace("(check-sat)", "(reset)\n(check-sat)"))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "cvc5 answers error (command `reset` is not allowed in an obligation)" in out, out


@pytest.mark.parametrize("role", ["pre", "post"])
def test_one_byte_of_a_mir_file_is_refused(role: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == role))
    data = bytearray(path.read_bytes())
    body = data.index(b"body:")
    data[body + (len(data) - body) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    code, out = _check(capsys, d)
    assert code == 1 and "refused: input hashes" in out and str(path) in out


def test_swapped_registers_in_the_post_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two VGPRs exchanged in one instruction, and every hash fixed up: the homes disagree."""
    d = _certify(tmp_path, "sgemm_naive", capsys)
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))
    lines = path.read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if "= V_ADD" in ln and len(set(re.findall(r"\$vgpr[0-9]+\b", ln))) >= 2)
    a, b = sorted(set(re.findall(r"\$vgpr[0-9]+\b", lines[k])))[:2]
    lines[k] = re.sub(rf"\{a}\b|\{b}\b", lambda m: b if m.group(0) == a else a, lines[k])
    path.write_text("\n".join(lines))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: value flow" in out and f":{k + 1}:" in out, out


def test_mir_outside_the_subset_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))
    text = path.read_text()
    k = text.index("\n    ", text.index("body:"))
    # a bundle whose second instruction reads what its first writes
    path.write_text(text[:k] + "\n    BUNDLE {\n      $vgpr0 = V_MOV_B32_e32 0, implicit $exec\n"
                    "      $vgpr1 = V_MOV_B32_e32 $vgpr0, implicit $exec\n    }" + text[k:])
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: MIR subset" in out and "bundle whose instructions depend" in out


def test_unreadable_certificate_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _check(capsys, tmp_path)
    assert code == 2 and out.count("\n") == 1 and "no certificate.json" in out
    (tmp_path / "certificate.json").write_text("{")
    code, out = _check(capsys, tmp_path)
    assert code == 2 and out.count("\n") == 1 and "certificate.json: error" in out


def test_certificates_are_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _certify(tmp_path, "vadd", capsys)
    b = a.with_name("again")
    assert verilocc_main(["verify", str(tmp_path / "vadd.post.mir"), "--pre", str(tmp_path / "vadd.pre.mir"),
                          "--certificate", str(b)]) == 0
    capsys.readouterr()
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


def test_verilocc_recheck_runs_certcheck(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _certify(tmp_path, "vadd", capsys)
    assert verilocc_main(["recheck", str(d)]) == 0
    assert "certcheck: accepted" in capsys.readouterr().out
    p, w = _witness(d)
    w["blocks"][0]["entry"]["defined"] = ["%0.0"]
    p.write_text(json.dumps(w))
    _rehash(d)
    assert verilocc_main(["recheck", str(d)]) == 1
    assert "certcheck: refused: witness" in capsys.readouterr().out


def test_a_value_kept_across_a_call_in_a_clobbered_register_is_refused(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A call clobbers every register its mask (`csr_amdgpu_gfx90ainsts`) does not preserve.
    LLVM keeps a value across the call in $vgpr42 (preserved); moved to $vgpr20 (clobbered),
    hashes fixed up, the read after the call is refused."""
    PAIRS["call"] = ROOT / "tests" / "fixtures" / "calls" / "call.llvm19.gfx90a"
    try:
        d = _certify(tmp_path, "call", capsys)
    finally:
        del PAIRS["call"]
    code, out = _check(capsys, d)
    assert code == 0 and "accepted" in out, out
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))
    text = path.read_text()
    assert "$vgpr42" in text and "$vgpr20" not in text
    path.write_text(text.replace("$vgpr42", "$vgpr20"))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: value flow" in out and "SI_CALL" not in out, out
    line = next(k for k, ln in enumerate(text.split("\n"), 1) if "V_ADD_U32_e32 killed $vgpr0, killed $vgpr42" in ln)
    assert f":{line}:" in out


def test_default_certificate_is_lean_accepted_and_smaller(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lean = _certify(tmp_path, "sgemm_naive", capsys)
    full = tmp_path / "full"
    assert verilocc_main(["verify", str(tmp_path / "sgemm_naive.post.mir"), "--pre", str(tmp_path / "sgemm_naive.pre.mir"),
                          "--certificate", str(full), "--certificate-full"]) == 0
    capsys.readouterr()
    assert any(ob["layer"] == "value-flow" for ob in _manifest(full)["obligations"])
    code, out = _check(capsys, full)
    assert code == 0 and "accepted" in out, out
    layers = [ob["layer"] for ob in _manifest(lean)["obligations"]]
    assert "value-flow" not in layers and {"constraints", "equivalence"} <= set(layers)
    assert any(w["layer"] == "value-flow" for w in _manifest(lean)["witnessed"])
    size = lambda d: sum(p.stat().st_size for p in d.rglob("*") if p.is_file())  # noqa: E731
    assert size(lean) * 2 < size(full)
    code, out = _check(capsys, lean)
    assert code == 0 and "accepted" in out, out
    # the witness still carries value flow: a wrong home is refused without any layer 2 obligation
    p, w = _witness(lean)
    block = next(b for b in w["blocks"] if isinstance(b["entry"], dict) and len(b["entry"]["holds"]) > 2
                 and b["bb"] != 0)
    block["entry"]["holds"][0][1] = block["entry"]["holds"][1][1]
    p.write_text(json.dumps(w))
    _rehash(lean)
    code, out = _check(capsys, lean)
    assert code == 1 and "refused: value flow" in out, out


def test_dropped_store_passed_off_as_a_deleted_definition_is_refused(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The store removed from the allocated file, the witness renumbered to match and the store's
    step turned into `remat-origin` (a definition the allocator deleted): a store has an effect
    besides its defs, so it may not be deleted."""
    d = _certify(tmp_path, "vadd", capsys)
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))
    lines = path.read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if "GLOBAL_STORE" in ln) + 1  # its line number
    del lines[k - 1]
    path.write_text("\n".join(lines))
    p, w = _witness(d)
    for b in w["blocks"]:
        for s in b["steps"]:
            if s[2] == k:
                s[0], s[2] = "remat-origin", 0
            elif s[2] > k:
                s[2] -= 1
    p.write_text(json.dumps(w))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: alignment" in out and "may not delete it" in out, out


def test_mutation_sweep_over_the_witness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every field of a witness changed one at a time, checked against the MIR files. Changes
    that survive must be explained: only removing one claim from a block's entry state can
    (a home, lane, recipe or undefined mark that no later read needs: a weaker invariant that
    still proves every read, so the certificate still proves the verdict). Every other change
    (a step's role, either line of a step, a block's pairing, a claim moved to another value
    or place) is refused."""
    from certcheck import flow
    from certcheck.mir import read_mir

    d = _certify(tmp_path, "vadd", capsys)
    m = _manifest(d)
    files = {i["role"]: Path(i["path"]) for i in m["inputs"]}
    pre, post = (read_mir(str(files[r]), files[r].read_bytes())[0] for r in ("pre", "post"))
    _, w = _witness(d)

    def verdict(wit: dict) -> str | None:  # type: ignore[type-arg]
        try:
            flow.FunctionCheck(pre, post, wit, "gfx90a", ("pre", "post")).run()
        except flow.Refused as e:
            return str(e)
        return None

    assert verdict(w) is None
    survivors: list[str] = []
    refused = 0

    def attempt(what: str, kind: str) -> None:
        nonlocal refused
        if verdict(w) is None:
            survivors.append(f"{kind}: {what}")
        else:
            refused += 1

    roles = ["matched", "move", "spill", "remat", "remat-origin"]
    for b in w["blocks"]:
        for s in b["steps"]:
            old = list(s)
            for r in roles:
                if r != old[0]:
                    s[0] = r
                    attempt(f"bb.{b['bb']} step {old} as {r}", "role")
            s[0] = old[0]
            for k in (1, 2):
                if s[k]:
                    s[k] += 1
                    attempt(f"bb.{b['bb']} step {old} line {k} + 1", "line")
                    s[k] = old[k]
        old_post = b["post_bb"]
        b["post_bb"] = (old_post + 1) % len(w["blocks"])
        attempt(f"bb.{b['bb']} paired with bb.{b['post_bb']}", "block")
        b["post_bb"] = old_post
        e = b["entry"]
        if e == "pred":  # the predecessor's exit state: claimed as an empty state instead
            b["entry"] = {"holds": [], "defined": [], "undef": [], "lanes": [], "remat": []}
            attempt(f"bb.{b['bb']} with an empty entry state", "empty")
            b["entry"] = e
            continue
        if not e:
            continue
        b["entry"] = "pred"
        attempt(f"bb.{b['bb']} from its predecessor's state", "pred")
        b["entry"] = e
        for key in ("holds", "defined", "undef", "lanes", "remat"):
            for i in range(len(e[key])):
                item = e[key].pop(i)
                attempt(f"bb.{b['bb']} {key} without {item}", f"removed {key}")
                e[key].insert(i, item)
        for i in range(0, len(e["holds"]) - 1, 2):  # a home moved to the next place
            a, c = e["holds"][i][1], e["holds"][i + 1][1]
            if a != c:
                e["holds"][i][1], e["holds"][i + 1][1] = c, a
                attempt(f"bb.{b['bb']} holds of {e['holds'][i][0]} and {e['holds'][i + 1][0]} exchanged", "moved")
                e["holds"][i][1], e["holds"][i + 1][1] = a, c
    assert verdict(w) is None
    # an empty state survives where nothing the predecessor defines reaches the block's reads
    explained = ("removed holds", "removed lanes", "removed remat", "removed undef", "empty")
    unexplained = [s for s in survivors if not s.startswith(explained)]
    print(f"{refused} refused, {len(survivors)} survived (all removals)")
    assert refused > 100 and not unexplained, unexplained


def test_a_witness_dropped_from_the_manifest_is_reported_not_covered(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A forger who drops a function's witness (and its file) cannot make certcheck say less."""
    d = _certify(tmp_path, "vadd", capsys)
    m = _manifest(d)
    (d / m["witnesses"][0]["file"]).unlink()
    m["witnesses"], m["not_covered"] = [], []
    (d / "certificate.json").write_text(json.dumps(m))
    code, out = _check(capsys, d)
    assert code == 0 and "(the certificate has no witness for it)" in out and "accepted with 1 claim(s)" in out, out


def test_fixed_stack_objects_pair_by_their_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """llc numbers fixed stack objects anew when it re-reads a file: they pair by the memory they
    name (offset, size, ...). A store moved to another object of the allocated program's own
    list (hashes fixed up) is refused."""
    PAIRS["byval"] = ROOT / "tests" / "fixtures" / "fixed-stack" / "byval.llvm19.gfx90a"
    try:
        d = _certify(tmp_path, "byval", capsys)
    finally:
        del PAIRS["byval"]
    code, out = _check(capsys, d)
    assert code == 0 and "accepted" in out, out
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))
    k = _edit_line(d, path, lambda ln: "STORE" in ln and "%fixed-stack.34" in ln, "%fixed-stack.34", "%fixed-stack.0")
    code, out = _check(capsys, d)
    assert code == 1 and "refused: alignment" in out and f":{k + 1}:" in out, out


def test_a_lane_restore_into_a_reserved_register_is_refused_there(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A home made by spill code (here the SGPRs an SGPR pair is restored into from VGPR lanes)
    is checked against the reserved registers where the restore writes it, as a home at a
    matched instruction is: restored into the scratch resource descriptor's SGPRs (hashes fixed
    up), the certificate is refused at the restore, before the store that reads them."""
    d = _certify(tmp_path, "spills", capsys)
    path = Path(next(i["path"] for i in _manifest(d)["inputs"] if i["role"] == "post"))
    text = path.read_text()
    assert "scratchRSrcReg:  '$sgpr96_sgpr97_sgpr98_sgpr99'" in text
    lines = text.split("\n")
    k = next(k for k, ln in enumerate(lines) if ln.strip().startswith("$sgpr0 = SI_RESTORE_S32_FROM_VGPR"))
    assert lines[k + 1].strip().startswith("$sgpr1 = SI_RESTORE_S32_FROM_VGPR")
    store = next(j for j in range(k, len(lines)) if "GLOBAL_STORE" in lines[j] and "$sgpr0_sgpr1" in lines[j])
    lines[k] = lines[k].replace("$sgpr0 =", "renamable $sgpr96 =").replace("$sgpr0_sgpr1", "$sgpr96_sgpr97")
    lines[k + 1] = lines[k + 1].replace("$sgpr1 =", "renamable $sgpr97 =")
    lines[store] = lines[store].replace("$sgpr0_sgpr1", "$sgpr96_sgpr97")
    path.write_text("\n".join(lines))
    _rehash(d)
    code, out = _check(capsys, d)
    assert code == 1 and "refused: reserved registers" in out, out
    assert f":{k + 1}: " in out and "`$sgpr96` holds %" in out and "scratchRSrcReg" in out, out
