"""LLVM's own AMDGPU tests as allocations to verify (tests/fixtures/llvm-tests/).

The kept pairs of `pairs/` were made by `scripts/llvm_tests_corpus.py` from LLVM's
`llvm/test/CodeGen/AMDGPU` inputs in `ll/`. LLVM's allocations are correct by assumption, so
every function must be VERIFIED. The functions verilocc does not verify yet are listed in
KNOWN_FAILING with their cause (the groups of docs/llvm-tests.md); they are expected to fail,
strictly, so that a fix of the verifier shows up here and its entry is removed. Wrong
allocations of the VERIFIED files (mutated post modules) must be REJECTED. The `llc` tests
remake kept pairs from the `.ll` files and compare them byte for byte."""

from __future__ import annotations

import functools
import importlib.util
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

from verilocc.findings import Report, Verdict
from verilocc.fuzz import mutations
from verilocc.mir.parser import parse_module, read_module
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES, ROOT

LLVM_TESTS = FIXTURES / "llvm-tests"
PAIRS = LLVM_TESTS / "pairs"
CAUSES = {"block pairing", "EXEC control flow", "WWM", "calls", "budgets",
          "physical interference", "lane anomaly", "16-bit registers", "parse error", "other"}

# <llvm>/<target>/<test>.<mode>/<function> -> cause (docs/llvm-tests.md has the findings).
KNOWN_FAILING: dict[str, str] = {
}

# (pair, mutation operator, seed): wrong allocations of VERIFIED functions.
MUTANTS: list[tuple[str, str, int]] = [
    ("19/gfx90a/call-skip.reread", "change-immediate", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "change-immediate", 0),
    ("19/gfx908/diverge-switch-default.one-process", "change-immediate", 0),
    ("19/gfx90a/call-skip.reread", "change-opcode", 0),
    ("19/gfx1100/atomic-optimizer-strict-wqm.one-process", "change-opcode", 0),
    ("19/gfx908/diverge-switch-default.one-process", "change-opcode", 0),
    ("19/gfx90a/call-skip.reread", "clobber-def", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "clobber-def", 0),
    ("19/gfx908/diverge-switch-default.one-process", "clobber-def", 0),
    ("19/gfx90a/call-skip.reread", "copy-wrong-source", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "copy-wrong-source", 0),
    ("19/gfx908/diverge-switch-default.one-process", "copy-wrong-source", 0),
    ("19/gfx90a/call-skip.reread", "drop-instruction", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "drop-instruction", 0),
    ("19/gfx908/diverge-switch-default.one-process", "drop-instruction", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "spill-wrong-register", 0),
    ("19/gfx90a/call-skip.reread", "swap-operands", 0),
    ("19/gfx942/llvm.amdgcn.wqm.vote.one-process", "swap-operands", 0),
    ("19/gfx908/diverge-switch-default.one-process", "swap-operands", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "wrong-reload-slot", 0),
    ("19/gfx90a/call-skip.reread", "wrong-use", 0),
    ("19/gfx908/whole-wave-register-spill.one-process", "wrong-use", 0),
    ("19/gfx908/diverge-switch-default.one-process", "wrong-use", 0),
    ("22/gfx1200/pal-simple-indirect-call.one-process", "clobber-def", 0),
    ("22/gfx1200/pal-simple-indirect-call.one-process", "wrong-use", 0),
    ("22/gfx942/sgpr-spill-update-only-slot-indexes.one-process", "copy-wrong-source", 0),
    ("22/gfx942/sgpr-spill-update-only-slot-indexes.one-process", "drop-instruction", 0),
    ("22/gfx90a/si-annotate-cfg-loop-assert.one-process", "swap-operands", 0),
    ("22/gfx1100/scalar-branch-missing-and-exec.one-process", "change-opcode", 0),
    ("22/gfx90a/partial-regcopy-and-spill-missed-at-regalloc.one-process", "copy-wrong-source", 0),
]


def _rows() -> list[dict[str, str]]:
    lines = (PAIRS / "pairs.tsv").read_text().splitlines()
    head = lines[0].split("\t")
    rows = [dict(zip(head, ln.split("\t"))) for ln in lines[1:]]
    return [r for r in rows if r["status"] == "ok"]


def _pair_id(row: dict[str, str]) -> str:
    return f"{row['llvm']}/{row['target']}/{row['test']}.{row['mode']}"


PAIR_FILES = {_pair_id(r): (PAIRS / r["pre"], PAIRS / r["post"]) for r in _rows()}


def _function_ids() -> list[str]:
    out = []
    for pid, (_, post) in PAIR_FILES.items():
        names = re.findall(r"^name:\s+'?([^'\s]+)'?\s*$", post.read_text(), re.M)
        out += [f"{pid}/{name}" for name in names]
    return out


FUNCTIONS = _function_ids()


@functools.cache
def _report(pid: str) -> Report:
    pre, post = PAIR_FILES[pid]
    return verify_modules(read_module(post), read_module(pre), Options())


def _params() -> list[object]:
    return [pytest.param(fid, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[fid]))
            if fid in KNOWN_FAILING else fid for fid in FUNCTIONS]


def test_fixture_set() -> None:
    """Every category of the corpus is represented, both LLVM versions are, and the
    KNOWN_FAILING table names kept functions only, each with one of the sweep's causes."""
    sources = [ln.split("\t") for ln in (LLVM_TESTS / "SOURCES.tsv").read_text().splitlines()[1:]]
    assert len(sources) >= 120
    assert all((LLVM_TESTS / "ll" / f"{s[0]}.ll").is_file() for s in sources)
    category = {s[0]: s[3] for s in sources}
    kept = {pid.split("/")[2].rsplit(".", 1)[0] for pid in PAIR_FILES}
    assert {category[t] for t in kept} == set(category.values())
    assert {pid.split("/")[0] for pid in PAIR_FILES} == {"19", "22"}
    assert set(KNOWN_FAILING) <= set(FUNCTIONS)
    assert set(KNOWN_FAILING.values()) <= CAUSES
    assert sum(p.stat().st_size for pair in PAIR_FILES.values() for p in pair) < 5_000_000


@pytest.mark.parametrize("fid", _params())
def test_llvm_allocation_verified(fid: str) -> None:
    pid, name = fid.rsplit("/", 1)
    fr = next(f for f in _report(pid).functions if f.name == name)
    first = next((f for f in fr.findings if f.severity != "warning"), None)
    assert fr.verdict is Verdict.VERIFIED, first.message if first else fr.layers


@pytest.mark.parametrize(("pid", "operator", "seed"), MUTANTS)
def test_wrong_allocation_rejected(pid: str, operator: str, seed: int) -> None:
    pre, post = PAIR_FILES[pid]
    mutant = mutations.OPERATORS[operator](read_module(post), random.Random(seed))
    assert mutant is not None
    assert f"{pid}/{mutant.function}" not in KNOWN_FAILING
    assert next(f for f in _report(pid).functions if f.name == mutant.function).verdict \
        is Verdict.VERIFIED
    report = verify_modules(mutant.module, read_module(pre), Options())
    fr = next(f for f in report.functions if f.name == mutant.function)
    assert fr.verdict is Verdict.REJECTED, mutant.description


# --- remaking kept pairs with llc ------------------------------------------------------------

def _corpus_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "llvm_tests_corpus", ROOT / "scripts" / "llvm_tests_corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("llvm_tests_corpus", module)
    spec.loader.exec_module(module)
    return module


def _remake_cases() -> list[str]:
    """The smallest kept pair per LLVM version and mode."""
    best: dict[tuple[str, str], str] = {}
    for pid, (pre, post) in sorted(PAIR_FILES.items()):
        key = (pid.split("/")[0], pid.rsplit(".", 1)[1])
        size = pre.stat().st_size + post.stat().st_size
        if key not in best or size < sum(p.stat().st_size for p in PAIR_FILES[best[key]]):
            best[key] = pid
    return sorted(best.values())


@pytest.mark.llc
@pytest.mark.parametrize("pid", _remake_cases())
def test_pair_remade_by_llc(pid: str, tmp_path: Path) -> None:
    version, target, rest = pid.split("/")
    test, mode = rest.rsplit(".", 1)
    if shutil.which(f"llc-{version}") is None:
        pytest.skip(f"llc-{version} is not installed")
    script = _corpus_script()
    assert script.main(["--out", str(tmp_path), "--llvm", version, "--targets", target,
                        "--tests", test, "--modes", mode, "-j", "1"]) == 0
    for kept in PAIR_FILES[pid]:
        made = tmp_path / kept.relative_to(PAIRS)
        assert made.read_bytes() == kept.read_bytes(), made


# --- registers saved for the caller -----------------------------------------------------------

CSR_PAIR = "19/gfx908/whole-wave-register-spill.one-process"


@pytest.mark.parametrize(("old", "new"), [
    # the return address's high half reloaded from the slot of a whole-wave VGPR
    ("$sgpr31 = SI_SPILL_S32_RESTORE %stack.2,", "$sgpr31 = SI_SPILL_S32_RESTORE %stack.3,"),
    # its low half never reloaded: it keeps what the call left in it
    ("    $sgpr30 = SI_SPILL_S32_RESTORE %stack.1, implicit $exec, implicit $sgpr32 :: "
     "(load (s32) from %stack.1, addrspace 5)\n", ""),
    # saved from another register
    ("SI_SPILL_S32_SAVE killed $sgpr31, %stack.2,", "SI_SPILL_S32_SAVE killed $sgpr30, %stack.2,"),
])
def test_return_address_saved_for_the_caller_is_restored(old: str, new: str, tmp_path: Path) -> None:
    """LLVM saves $sgpr30_sgpr31 (the return address) around a call in code the virtual
    program does not have; a return without its entry value is REJECTED, naming it."""
    pre, post = PAIR_FILES[CSR_PAIR]
    assert _report(CSR_PAIR).verdict is Verdict.VERIFIED
    text = post.read_text()
    assert old in text
    mutant = tmp_path / post.name
    mutant.write_text(text.replace(old, new, 1))
    report = verify_modules(read_module(mutant), read_module(pre), Options())
    assert report.verdict is Verdict.REJECTED
    lost = [f for f in report.findings if f.kind == "callee-saved-lost"]
    assert lost and "SI_RETURN" in lost[0].message and "$sgpr3" in lost[0].message, \
        [f.message for f in report.findings]


# --- registers of the wrong shape -------------------------------------------------------------

def _def_sites(pid: str, pattern: str) -> list[tuple[int, int, str]]:
    """(line, column, register) of renamable defs in the allocated file whose register matches
    `pattern`, outside copies and spill pseudos (which may take any tuple alignment)."""
    _, post = PAIR_FILES[pid]
    out = []
    for fn in read_module(post).functions:
        for block in fn.blocks:
            for ins in block.instructions:
                if ins.opcode == "COPY" or ins.opcode.startswith("SI_SPILL"):
                    continue
                for op in ins.operands:
                    if (op.is_reg and op.phys and "def" in op.flags and "renamable" in op.flags
                            and re.fullmatch(pattern, op.phys)):
                        out.append((op.line, op.column, op.phys))
    return out


def _with_register(pid: str, site: tuple[int, int, str], new: str, tmp_path: Path) -> Report:
    pre, post = PAIR_FILES[pid]
    line, column, old = site
    lines = post.read_text().splitlines(keepends=True)
    text = lines[line - 1]
    at = text.index(f"${old}", column - 1)
    lines[line - 1] = text[:at] + f"${new}" + text[at + 1 + len(old):]
    mutant = tmp_path / post.name
    mutant.write_text("".join(lines))
    return verify_modules(read_module(mutant), read_module(pre), Options())


ALIGNED = [pid for pid in PAIR_FILES if pid.split("/")[1] in ("gfx90a", "gfx942", "gfx950")]


@pytest.mark.parametrize("pid", [p for p in ALIGNED if _def_sites(p, r"vgpr\d+_vgpr\d+")][:4])
def test_misaligned_tuple_rejected(pid: str, tmp_path: Path) -> None:
    """A 64-bit VGPR tuple moved to an odd register on a target that needs even tuples."""
    site = _def_sites(pid, r"vgpr\d+_vgpr\d+")[0]
    first = int(re.match(r"vgpr(\d+)", site[2]).group(1))  # type: ignore[union-attr]
    report = _with_register(pid, site, f"vgpr{first + 1}_vgpr{first + 2}", tmp_path)
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "alignment" for f in report.findings), [f.message for f in report.findings]


@pytest.mark.parametrize("pid", [p for p in PAIR_FILES if _def_sites(p, r"sgpr\d+")][:4])
def test_wrong_register_file_rejected(pid: str, tmp_path: Path) -> None:
    """A scalar result put in a VGPR: the register is not in its virtual register's class."""
    site = _def_sites(pid, r"sgpr\d+")[0]
    report = _with_register(pid, site, site[2].replace("sgpr", "vgpr"), tmp_path)
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "class" for f in report.findings), [f.message for f in report.findings]


# --- tabulating recorded sweeps --------------------------------------------------------------

def test_merged_sweeps_count_each_function_once(tmp_path: Path) -> None:
    """`llvm_tests_sweep.py --merge`: a function in two records counts once, from the later one,
    and only the commands of records still counted are named."""
    import json
    import subprocess

    pid = next(iter(sorted(PAIR_FILES)))
    version, target, rest = pid.split("/")
    test, mode = rest.rsplit(".", 1)
    row = {"llvm": version, "target": target, "test": test, "mode": mode, "function": "f"}
    older = tmp_path / "older.json"
    newer = tmp_path / "newer.json"
    gone = tmp_path / "gone.json"
    older.write_text(json.dumps({"command": "sweep A", "functions": [{**row, "verdict": "REJECTED", "kind": "k",
                                                                        "message": "m", "cause": "other"}]}))
    newer.write_text(json.dumps({"command": "sweep B", "functions": [{**row, "verdict": "VERIFIED"}]}))
    gone.write_text(json.dumps({"command": "sweep C", "functions": []}))
    out_json, out_md = tmp_path / "s.json", tmp_path / "s.md"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "llvm_tests_sweep.py"), "--pairs", str(PAIRS),
                        "--merge", str(older), str(gone), str(newer), "--json", str(out_json), "--markdown", str(out_md)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "1 functions: 1 VERIFIED, 0 REJECTED, 0 UNKNOWN" in r.stdout
    doc = json.loads(out_json.read_text())
    assert [f["verdict"] for f in doc["functions"]] == ["VERIFIED"]
    assert doc["command"] == "sweep B"
    assert "Made by `sweep B`" in out_md.read_text()


# --- liveness uses an allocator widens --------------------------------------------------------

WIDENED = FIXTURES / "liveness-uses" / "greedy-instruction-split-subrange.llvm19.gfx900.fast"


def _widened(old: str = "", new: str = "") -> Report:
    post = WIDENED.with_name(WIDENED.name + ".post.mir").read_text()
    assert old in post
    return verify_modules(parse_module(post.replace(old, new, 1), "post.mir"),
                          read_module(str(WIDENED.with_name(WIDENED.name + ".pre.mir"))), Options())


def test_whole_register_for_an_s_nop_subregister_use_verified() -> None:
    """`S_NOP 0, implicit %0.sub1` allocated as `S_NOP 0, implicit killed $vgpr4_vgpr5`, the
    whole register of %0 (tests/fixtures/liveness-uses/README.md): VERIFIED."""
    report = _widened()
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings]


@pytest.mark.parametrize(("old", "new"), [
    # the whole register of another value: its high half is not %0.sub1
    ("S_NOP 0, implicit killed $vgpr4_vgpr5\n", "S_NOP 0, implicit killed $vgpr2_vgpr3\n"),
    # one register that does not hold %0.sub1
    ("S_NOP 0, implicit killed $vgpr4_vgpr5\n", "S_NOP 0, implicit killed $vgpr4\n"),
])
def test_widened_s_nop_use_of_the_wrong_register_rejected(old: str, new: str) -> None:
    report = _widened(old, new)
    assert report.verdict is Verdict.REJECTED
    assert any(f.place.line == 120 for f in report.findings if f.severity == "error")


TWO_USES = FIXTURES / "liveness-uses" / "subreg_interference.llvm19.gfx900.fast"
TWO_USES_NOP = "S_NOP 0, implicit killed renamable $sgpr7, implicit killed $sgpr4_sgpr5_sgpr6_sgpr7\n"


def _two_uses(old: str = "", new: str = "") -> Report:
    post = TWO_USES.with_name(TWO_USES.name + ".post.mir").read_text()
    assert old in post
    return verify_modules(parse_module(post.replace(old, new, 1), "post.mir"),
                          read_module(str(TWO_USES.with_name(TWO_USES.name + ".pre.mir"))), Options())


@pytest.mark.parametrize("nop", [
    TWO_USES_NOP,  # as the fast allocator writes it: `%0.sub0`'s operand deleted, the whole added
    # the same registers in the other order
    "S_NOP 0, implicit killed $sgpr4_sgpr5_sgpr6_sgpr7, implicit killed renamable $sgpr7\n",
])
def test_s_nop_uses_paired_by_register_verified(nop: str) -> None:
    """`S_NOP 0, implicit %0.sub0, implicit %0.sub3` allocated with one subregister and the
    whole register (tests/fixtures/liveness-uses/README.md): VERIFIED, whatever their order."""
    report = _two_uses(TWO_USES_NOP, nop)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings]


@pytest.mark.parametrize("nop", [
    # a register that is not %0.sub3 beside the whole register of %0
    "S_NOP 0, implicit killed renamable $sgpr6, implicit killed $sgpr4_sgpr5_sgpr6_sgpr7\n",
    # the whole register of the other value (%1)
    "S_NOP 0, implicit killed renamable $sgpr7, implicit killed $sgpr0_sgpr1_sgpr2_sgpr3\n",
    # %0.sub3 alone: nothing stands for %0.sub0
    "S_NOP 0, implicit killed renamable $sgpr7, implicit killed renamable $sgpr7\n",
])
def test_s_nop_uses_of_the_wrong_registers_rejected(nop: str) -> None:
    report = _two_uses(TWO_USES_NOP, nop)
    assert report.verdict is Verdict.REJECTED
    assert any(f.place.line == 101 for f in report.findings if f.severity == "error")


# --- uses marked undef ------------------------------------------------------------------------

UNDEF_USES = FIXTURES / "undef-uses" / "dead_bundle.llvm19.gfx900.fast"
SAMPLED = "undef renamable $sgpr8_sgpr9_sgpr10_sgpr11_sgpr12_sgpr13_sgpr14_sgpr15, renamable $sgpr0_sgpr1_sgpr2_sgpr3, 1"


def _undef_uses(old: str, new: str) -> Report:
    post = UNDEF_USES.with_name(UNDEF_USES.name + ".post.mir").read_text()
    assert old in post
    return verify_modules(parse_module(post.replace(old, new, 1), "post.mir"),
                          read_module(str(UNDEF_USES.with_name(UNDEF_USES.name + ".pre.mir"))), Options())


@pytest.mark.parametrize("register", [
    "$sgpr8_sgpr9_sgpr10_sgpr11_sgpr12_sgpr13_sgpr14_sgpr15",  # as llc writes it: not %3's home
    "$sgpr20_sgpr21_sgpr22_sgpr23_sgpr24_sgpr25_sgpr26_sgpr27",  # %3.sub8_..._sub15 in its home
])
def test_undef_use_shows_no_home_verified(register: str) -> None:
    """`undef %3.sub8_..._sub15` allocated to a register that is not %3's home
    (tests/fixtures/undef-uses/README.md): VERIFIED, wherever it points."""
    report = _undef_uses(SAMPLED, SAMPLED.replace("$sgpr8_sgpr9_sgpr10_sgpr11_sgpr12_sgpr13_sgpr14_sgpr15", register))
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings]


def test_defined_use_of_the_wrong_register_still_rejected() -> None:
    """`V_CVT_U32_F32_e64 0, %1.sub0` reading %1.sub1's register: REJECTED at line 116."""
    report = _undef_uses("V_CVT_U32_F32_e64 0, $sgpr4,", "V_CVT_U32_F32_e64 0, $sgpr5,")
    assert report.verdict is Verdict.REJECTED
    assert any(f.place.line == 116 for f in report.findings if f.severity == "error")
