"""Bad input never crashes: one `FILE:LINE:COL: error: message` line on stderr, exit code 2.

docs/design.md section 3: malformed, truncated or corrupted MIR, unknown targets, registers,
classes or subregister indices, directories, missing or huge files and bad assignment files
are reported as one line with a place and exit code 2 -- never a Python traceback, never a
verdict on stdout and never exit 3 "internal error" (which the CLI prints for unexpected
exceptions). Nothing the user had is overwritten.

Two parts: a table of hand-made malformed inputs derived from a real llc file (the exact line
of the error is asserted where it is known), and a seeded random part that truncates, deletes
lines from and corrupts small corpus files and runs the CLI in-process on every mutant.
"""

from __future__ import annotations

import functools
import random
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from verilocc import cli
from verilocc.errors import InputError
from verilocc.mir import body as mir_body
from verilocc.mir import parser as mir_parser

from .conftest import FIXTURES, have
from .conftest import KERNELS as CORPUS  # the corpus, or examples/: the same small kernels

VADD_PRE = CORPUS / "gfx90a" / "vadd.pre.mir"
VADD_POST = CORPUS / "gfx90a" / "vadd.post.mir"

pytestmark = pytest.mark.skipif(not VADD_PRE.exists(), reason="gfx90a/vadd is absent")

_ERROR_LINE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>\S.*)$")


@dataclass
class Outcome:
    rc: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Outcome:
    capsys.readouterr()
    rc = cli.main(argv)
    cap = capsys.readouterr()
    return Outcome(rc, cap.out, cap.err)


def assert_bad_input(res: Outcome, file: str | Path, line: int | None = None, col: int | None = None) -> re.Match[str]:
    """Exit 2, nothing on stdout, exactly one well-formed error line naming `file` (and `line`)."""
    assert "Traceback" not in res.out + res.err
    assert "internal error" not in res.out + res.err
    assert res.rc == 2, (res.rc, res.out[-500:], res.err[-500:])
    assert res.out == "", res.out[-500:]
    lines = res.err.splitlines()
    assert len(lines) == 1 and res.err.endswith("\n"), res.err
    m = _ERROR_LINE.match(lines[0])
    assert m, lines[0]
    assert m.group("file") == str(file), lines[0]
    if line is not None:
        assert int(m.group("line")) == line, lines[0]
    else:
        assert int(m.group("line")) >= 1, lines[0]
    if col is not None:
        assert int(m.group("col")) == col, lines[0]
    return m


def line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of `needle` (which must occur)."""
    at = text.index(needle)
    return text.count("\n", 0, at) + 1


def col_of(text: str, needle: str) -> int:
    at = text.index(needle)
    return at - (text.rfind("\n", 0, at) + 1) + 1


# --- the table ------------------------------------------------------------------------------
#
# Each case edits one of vadd's two files (`which`), verifies it against the other one and
# names the line (and column) the error must point at: `at` is a text that occurs in the edited
# file, the expected place is its first occurrence (None: any line >= 1).


@dataclass
class Case:
    id: str
    which: str  # "pre" or "post": the file that is broken
    edit: Callable[[str], str]
    at: str | None = None  # the error is on the line where this text first occurs (after the edit)
    at_col: bool = False  # ... and at its column
    args: tuple[str, ...] = ()


def sub(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, count)

    return edit


def insert_before(anchor: str, new: str) -> Callable[[str], str]:
    return sub(anchor, new + anchor)


def truncate_after(anchor: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        return text[: text.index(anchor) + len(anchor)]

    return edit


CASES = [
    Case("unclosed-paren", "pre", sub("%2(p4), 24, 0", "%2(p4, 24, 0"), at="%2(p4, 24, 0"),
    Case("unbalanced-close-paren", "pre", sub("V_LSHL_OR_B32_e64 %3, 8,", "V_LSHL_OR_B32_e64 %3), 8,"),
         at="%3), 8,"),
    Case("unterminated-string", "post", sub("S_ENDPGM 0", 'S_ENDPGM 0, pcsections "abc'), at="S_ENDPGM 0"),
    Case("bad-physreg", "post", sub("killed $sgpr6, 8, killed $vgpr0", "killed $sgpr6, 8, killed $vgprX"),
         at="$vgprX", at_col=True),
    Case("bad-physreg-number", "post", sub("killed $sgpr6, 8, killed $vgpr0", "killed $sgpr6, 8, killed $vgpr99999"),
         at="$vgpr99999", at_col=True),
    Case("bad-physreg-def", "post", sub("renamable $vgpr1 = V_ASHRREV", "renamable $vgprQ = V_ASHRREV"),
         at="$vgprQ", at_col=True),
    Case("bad-physreg-pre", "pre", sub("%3:sgpr_32 = COPY $sgpr6", "%3:sgpr_32 = COPY $sgprZZ"), at="$sgprZZ",
         at_col=True),
    Case("bad-physreg-subreg", "post", sub("KILL killed renamable $sgpr4_sgpr5", "KILL killed renamable $sgpr4.sub7"),
         at="$sgpr4.sub7", at_col=True),
    Case("unknown-class-registers", "pre", sub("class: sgpr_32,", "class: sgpr_33,"), at="class: sgpr_33,"),
    Case("unknown-class-operand", "pre", sub("%3:sgpr_32 = COPY", "%3:sgpr_99 = COPY"), at="%3:sgpr_99"),
    Case("conflicting-class", "pre", sub("%3:sgpr_32 = COPY", "%3:vgpr_32 = COPY"), at="%3:vgpr_32", at_col=True),
    Case("unknown-subreg", "pre", sub("%6:sreg_64 = V_CMP_GT_I32_e64 %5, %7.sub0", "%6:sreg_64 = V_CMP_GT_I32_e64 %5, %7.sub99"),
         at="%7.sub99", at_col=True),
    Case("subreg-outside-class", "pre", sub("%20:vgpr_32 = COPY %24.sub3", "%20:vgpr_32 = COPY %24.sub7"),
         at="%24.sub7", at_col=True),
    Case("unknown-subreg-post", "post", sub("KILL killed renamable $sgpr4_sgpr5", "KILL killed renamable $sgpr4_sgpr5.sub99"),
         at="$sgpr4_sgpr5.sub99", at_col=True),
    Case("tied-def-to-use", "post",
         sub("V_ADDC_U32_e64 killed $vgpr3, $vgpr1,", "V_ADDC_U32_e64 killed $vgpr3, $vgpr1(tied-def 3),"),
         at="$vgpr1(tied-def 3)", at_col=True),
    Case("tied-def-out-of-range", "post",
         sub("V_ADDC_U32_e64 killed $vgpr3, $vgpr1,", "V_ADDC_U32_e64 killed $vgpr3, $vgpr1(tied-def 99),"),
         at="$vgpr1(tied-def 99)", at_col=True),
    Case("tied-def-on-def", "post",
         sub("renamable $vgpr1 = V_ASHRREV_I32_e32", "renamable $vgpr1(tied-def 0) = V_ASHRREV_I32_e32"),
         at="$vgpr1(tied-def 0)", at_col=True),
    Case("tied-def-unicode-digit", "post",
         sub("V_ADDC_U32_e64 killed $vgpr3, $vgpr1,", "V_ADDC_U32_e64 killed $vgpr3, $vgpr1(tied-def \u00b2),"),
         at="$vgpr1(tied-def"),
    Case("tied-def-malformed", "post",
         sub("V_ADDC_U32_e64 killed $vgpr3, $vgpr1,", "V_ADDC_U32_e64 killed $vgpr3, $vgpr1(tied-def x),"),
         at="$vgpr1(tied-def x)"),
    Case("instruction-outside-block", "post", insert_before("  bb.0 (%ir-block.4):", "    S_NOP 0\n"), at="S_NOP 0"),
    Case("bundle-not-closed", "post",
         insert_before("  bb.2 (%ir-block.21):", "    BUNDLE implicit-def $vgpr9 {\n      $vgpr9 = V_MOV_B32_e32 0, implicit $exec\n"),
         at="BUNDLE implicit-def"),
    Case("bundle-not-closed-at-end", "post",
         sub("    S_ENDPGM 0\n", "    BUNDLE implicit-def $vgpr9 {\n      $vgpr9 = V_MOV_B32_e32 0, implicit $exec\n    S_ENDPGM 0\n"),
         at="BUNDLE implicit-def"),
    Case("close-brace-without-bundle", "post", sub("    S_ENDPGM 0\n", "    S_ENDPGM 0\n    }\n"), at="    }"),
    Case("bad-yaml-header", "post", sub("name:            vadd", "name:            [vadd"),
         at="alignment:       1"),  # where libyaml finds the `[` unclosed
    Case("bad-yaml-indent", "pre", sub("  maxAlignment:    1", " maxAlignment:    1:\n   - x"), at=None),
    Case("yaml-control-char", "pre", sub("name:            vadd\n", "name:            vadd\nalignment: \x01\n"),
         at="alignment: \x01"),
    Case("yaml-too-deep", "post", sub("alignment:       1\n", "alignment: " + "[" * 50_000 + "\n"), at="alignment: [["),
    Case("yaml-block-too-deep", "post", sub("alignment:       1\n", "alignment:\n" + "".join(" " * i + "-\n" for i in range(1, 300))),
         at=None),
    Case("yaml-alias", "post", sub("hasWinCFI:       false", "hasWinCFI:       *x"), at="hasWinCFI:       *x"),
    Case("function-defined-twice", "post", lambda t: t + t[t.index("---\nname:"):],
         at=None),
    Case("header-without-name", "post", sub("name:            vadd\n", ""), at="alignment:       1"),
    Case("registers-not-a-list", "pre", sub("registers:\n", "registers: 5\nxregisters:\n"), at="registers: 5"),
    Case("register-declared-twice", "pre", sub("  - { id: 1, class:", "  - { id: 0, class:"), at="{ id: 0, class:"),
    Case("malformed-register-entry", "pre", sub("  - { id: 1, class:", "  - { idx: 1, class:"), at="registers:"),
    Case("liveins-not-a-list", "post",
         sub("liveins:\n", "liveins: 7\nxliveins:\n"), at="liveins: 7"),
    Case("livein-unknown-register", "post", sub("- { reg: '$vgpr0', virtual-reg: '' }", "- { reg: '$vgprX', virtual-reg: '' }"),
         at="$vgprX"),
    Case("block-livein-unknown-register", "post", sub("liveins: $sgpr6, $vgpr0, $sgpr4_sgpr5", "liveins: $sgpr6, $vgprY, $sgpr4_sgpr5"),
         at="$vgprY", at_col=True),
    Case("block-livein-malformed", "post", sub("liveins: $sgpr6, $vgpr0, $sgpr4_sgpr5", "liveins: $sgpr6, vgpr0, $sgpr4_sgpr5"),
         at="vgpr0, $sgpr4_sgpr5", at_col=True),
    Case("mfi-not-a-mapping", "post", sub("machineFunctionInfo:\n", "machineFunctionInfo: 3\nxmachineFunctionInfo:\n"),
         at="machineFunctionInfo: 3"),
    Case("mfi-unknown-register", "post", sub("stackPtrOffsetReg: '$sgpr32'", "stackPtrOffsetReg: '$sgprX'"),
         at="stackPtrOffsetReg: '$sgprX'"),
    Case("stack-not-a-list", "post", sub("stack:           []", "stack:           7"), at="stack:           7"),
    Case("successor-unknown-block", "post", sub("successors: %bb.2(0x80000000)", "successors: %bb.9(0x80000000)"),
         at="  bb.1 (%ir-block.13):"),
    Case("successor-malformed", "post", sub("successors: %bb.2(0x80000000)", "successors: %bb.x(0x80000000)"),
         at="successors: %bb.x", at_col=False),
    Case("branch-unknown-block", "post", sub("S_CBRANCH_EXECZ %bb.2,", "S_CBRANCH_EXECZ %bb.7,"), at="%bb.7",
         at_col=True),
    Case("branch-malformed-block", "post", sub("S_CBRANCH_EXECZ %bb.2,", "S_CBRANCH_EXECZ %bb.x,"), at="%bb.x",
         at_col=True),
    Case("block-defined-twice", "post", sub("  bb.2 (%ir-block.21):", "  bb.1 (%ir-block.21):"),
         at="  bb.1 (%ir-block.21):"),
    Case("malformed-block-header", "post", sub("  bb.2 (%ir-block.21):", "  bb.two:"), at="  bb.two:"),
    Case("no-opcode", "post", sub("renamable $vgpr3 = COPY renamable $sgpr3", "renamable $vgpr3 = "), at="renamable $vgpr3 = "),
    Case("bad-opcode", "post", sub("S_BRANCH %bb.1", "S-BRANCH %bb.1"), at="S-BRANCH", at_col=True),
    Case("two-equals", "post", sub("renamable $vgpr3 = COPY renamable $sgpr3", "renamable $vgpr3 = COPY = $sgpr3"),
         at="COPY = $sgpr3"),
    Case("non-register-def", "post", sub("renamable $vgpr3 = COPY renamable $sgpr3", "42 = COPY renamable $sgpr3"), at="42 = COPY"),
    Case("flags-on-immediate", "post", sub("S_ENDPGM 0", "S_ENDPGM killed 0"), at="S_ENDPGM killed 0"),
    Case("def-and-implicit-def", "post", sub("S_ENDPGM 0", "S_ENDPGM 0, def implicit-def $vgpr0"), at="S_ENDPGM 0"),
    Case("empty-memory-operand", "post", sub(":: (store (s32) into %ir.15, !tbaa !6, addrspace 1)", ":: "),
         at="GLOBAL_STORE_DWORD killed"),
    Case("unknown-target-cpu", "post", sub('"target-cpu"="gfx90a" "target-features"', '"target-cpu"="gfx9999" "target-features"', 1),
         at="name:            vadd"),
    Case("document-end-without-start", "post", sub("---\nname:", "...\n---\nname:"), at=None),
    Case("text-outside-document", "post", sub("...\n---\nname:", "...\nhello\n---\nname:"), at="hello"),
    Case("empty-body", "post", truncate_after("body:             |\n"), at="body:"),
    Case("truncated-mid-instruction", "post", truncate_after("renamable $vgpr5, dead renamable $vcc = V_ADDC_U32_e64 killed $vgpr5, $vg"),
         at=None),
    Case("nul-byte", "post", sub("S_BRANCH %bb.1", "S_BRANCH %bb\x00.1"), at="\x00", at_col=True),
    # What llc refuses to read is bad input too (`LLC_REFUSES` below checks llc says the same).
    Case("key-given-twice", "post", sub("alignment:       1\n", "alignment:       1\nname:            other\n"),
         at="name:            other", at_col=True),
    Case("flow-key-given-twice", "post", sub("- { reg: '$vgpr0', virtual-reg: '' }", "- { reg: '$vgpr0', reg: '$vgpr1', virtual-reg: '' }"),
         at="reg: '$vgpr1'", at_col=True),
    Case("unknown-instruction-name", "post", sub("S_BRANCH %bb.1", "V_FROB_XYZ %bb.1"), at="V_FROB_XYZ", at_col=True),
]
LLC_REFUSES = ("key-given-twice", "flow-key-given-twice", "unknown-instruction-name")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_mir(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = VADD_PRE if case.which == "pre" else VADD_POST
    text = case.edit(src.read_text(encoding="utf-8"))
    bad = tmp_path / f"vadd.{case.which}.mir"
    bad.write_text(text, encoding="utf-8")
    if case.which == "pre":
        argv = ["verify", str(VADD_POST), "--pre", str(bad)]
    else:
        argv = ["verify", str(bad), "--pre", str(VADD_PRE)]
    res = run(capsys, argv + list(case.args))
    line = line_of(text, case.at) if case.at is not None else None
    col = col_of(text, case.at) if case.at is not None and case.at_col else None
    assert_bad_input(res, bad, line, col)


@pytest.mark.llc
@pytest.mark.parametrize("case", [c for c in CASES if c.id in LLC_REFUSES], ids=lambda c: c.id)
def test_llc_refuses_the_same_input_at_the_same_place(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file llc's MIR reader refuses is bad input here, at the line and column llc names."""
    if not have("llc-19"):
        pytest.skip("llc-19 is not installed (make test installs it)")
    bad = tmp_path / "vadd.post.mir"
    bad.write_text(case.edit(VADD_POST.read_text(encoding="utf-8")), encoding="utf-8")
    proc = subprocess.run(["llc-19", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-run-pass=none", "-o", "/dev/null", str(bad)],
                          capture_output=True, text=True, check=False)
    theirs = re.search(r"error: (?:YAML|[^:]+):(\d+):(\d+): (.*)", proc.stderr)
    assert proc.returncode != 0 and theirs is not None, proc.stderr
    res = run(capsys, ["verify", str(bad), "--pre", str(VADD_PRE)])
    ours = assert_bad_input(res, bad)
    assert (ours["line"], ours["col"]) == (theirs[1], theirs[2]) and ours["msg"] == theirs[3]


def test_unknown_registers_class_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The line of an unknown class in `registers:` is the line of its entry, not of `registers:`."""
    text = VADD_PRE.read_text(encoding="utf-8").replace("{ id: 5, class: sreg_32_xm0_xexec,", "{ id: 5, class: bogus,")
    assert "class: bogus" in text
    bad = tmp_path / "vadd.pre.mir"
    bad.write_text(text, encoding="utf-8")
    res = run(capsys, ["verify", str(VADD_POST), "--pre", str(bad)])
    assert_bad_input(res, bad, line_of(text, "class: bogus"))


def test_non_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = VADD_POST.read_bytes()
    at = data.index(b"S_BRANCH %bb.1")
    bad = tmp_path / "latin1.mir"
    bad.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    res = run(capsys, ["verify", str(bad)])
    text = data[:at].decode()
    assert_bad_input(res, bad, text.count("\n") + 1, at - data.rfind(b"\n", 0, at))


def test_unknown_mcpu(capsys: pytest.CaptureFixture[str]) -> None:
    res = run(capsys, ["verify", str(VADD_POST), "--pre", str(VADD_PRE), "--mcpu", "gfx9999"])
    m = assert_bad_input(res, "--mcpu", 0, 0)
    assert "gfx9999" in m.group("msg")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_bad_timeout(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    res = run(capsys, ["verify", str(VADD_POST), "--pre", str(VADD_PRE), "--timeout", value])
    assert_bad_input(res, "--timeout", 0, 0)


def test_nothing_to_verify(capsys: pytest.CaptureFixture[str]) -> None:
    assert_bad_input(run(capsys, ["verify"]), "<args>", 0, 0)
    assert_bad_input(run(capsys, ["verify", "--assignment", str(VADD_PRE)]), str(VADD_PRE), 0, 0)


def test_missing_target_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without the IR module there is no target-cpu: the error asks for --mcpu."""
    text = VADD_POST.read_text(encoding="utf-8")
    text = text[text.index("...\n") + 4:]
    bad = tmp_path / "noir.mir"
    bad.write_text(text, encoding="utf-8")
    res = run(capsys, ["verify", str(bad)])
    assert_bad_input(res, bad, line_of(text, "name:"))
    assert "--mcpu" in res.err
    # ... and with --mcpu it verifies.
    assert run(capsys, ["verify", str(bad), "--pre", str(VADD_PRE), "--mcpu", "gfx90a"]).rc == 0


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.mir"
    assert_bad_input(run(capsys, ["verify", str(missing)]), missing, 0, 0)
    assert_bad_input(run(capsys, ["verify", str(VADD_POST), "--pre", str(missing)]), missing, 0, 0)


def test_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_bad_input(run(capsys, ["verify", str(tmp_path)]), tmp_path, 0, 0)
    assert_bad_input(run(capsys, ["verify", str(VADD_POST), "--pre", str(tmp_path)]), tmp_path, 0, 0)
    assert_bad_input(run(capsys, ["verify", "--pre", str(VADD_PRE), "--assignment", str(tmp_path)]), tmp_path, 0, 0)


@pytest.mark.parametrize("content", ["", "\n", "---", "---\n", "--- |\n  ; ir\n...\n", "# comment only\n", "---\n...\n"],
                         ids=["empty", "newline", "dashes", "dashes-nl", "ir-only", "comment", "empty-doc"])
def test_no_function(content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "empty.mir"
    bad.write_text(content, encoding="utf-8")
    assert_bad_input(run(capsys, ["verify", str(bad)]), bad)


def test_deep_yaml_nesting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Well-formed but 30,000 levels deep: libyaml's composer used to crash the interpreter."""
    deep = "[" * 30_000 + "]" * 30_000
    text = VADD_POST.read_text(encoding="utf-8").replace("alignment:       1\n", f"alignment: {deep}\n", 1)
    bad = tmp_path / "deep.mir"
    bad.write_text(text, encoding="utf-8")
    assert_bad_input(run(capsys, ["verify", str(bad)]), bad, line_of(text, "alignment: [["))


def test_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An output that cannot be written is one error line, and leaves no temporary file behind."""
    for out in (tmp_path / "no" / "such" / "dir" / "out.json", tmp_path):
        res = run(capsys, ["verify", str(VADD_POST), "--pre", str(VADD_PRE), "--format", "json", "-o", str(out)])
        assert_bad_input(res, out, 0, 0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.interpreted
def test_huge_file_is_refused_quickly(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mir_parser, "MAX_FILE_BYTES", 4096)
    out = tmp_path / "out.json"
    res = run(capsys, ["verify", str(VADD_POST), "--pre", str(VADD_PRE), "--format", "json", "-o", str(out)])
    m = assert_bad_input(res, VADD_PRE, 0, 0)
    assert "limit" in m.group("msg")
    assert not out.exists()


def test_huge_sparse_file_is_refused_without_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file over the real limit (sparse: no disk used) is refused from its size alone."""
    huge = tmp_path / "huge.post.mir"
    with huge.open("wb") as fh:
        fh.truncate(mir_parser.MAX_FILE_BYTES + 1)
    t0 = time.perf_counter()
    res = run(capsys, ["verify", str(huge), "--pre", str(VADD_PRE)])
    assert time.perf_counter() - t0 < 5
    m = assert_bad_input(res, huge, 0, 0)
    assert "limit" in m.group("msg")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.interpreted
def test_endless_device_is_refused(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A device reports no size: reading stops at the limit."""
    monkeypatch.setattr(mir_parser, "MAX_FILE_BYTES", 1 << 16)
    m = assert_bad_input(run(capsys, ["verify", "/dev/zero"]), "/dev/zero", 0, 0)
    assert "limit" in m.group("msg")


@pytest.mark.interpreted
def test_huge_assignment_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    limit = VADD_PRE.stat().st_size + 100  # the MIR file fits, the assignment does not
    monkeypatch.setattr(mir_parser, "MAX_FILE_BYTES", limit)
    asg = tmp_path / "big.asg"
    asg.write_text("%1 -> $vgpr0\n" * (limit // 10), encoding="utf-8")
    for argv in (["materialise", str(VADD_PRE), "--assignment", str(asg)],
                 ["verify", "--pre", str(VADD_PRE), "--assignment", str(asg)]):
        m = assert_bad_input(run(capsys, argv), asg, 0, 0)
        assert "limit" in m.group("msg")


def test_bad_input_does_not_touch_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mir"
    bad.write_text(VADD_POST.read_text(encoding="utf-8").replace("$vgpr0, implicit", "$vgprX, implicit", 1), encoding="utf-8")
    out = tmp_path / "out.json"
    res = run(capsys, ["verify", str(bad), "--pre", str(VADD_PRE), "--format", "json", "-o", str(out)])
    assert_bad_input(res, bad)
    assert not out.exists()
    out.write_text("keep", encoding="utf-8")
    for fmt in ("json", "sarif"):
        res = run(capsys, ["verify", str(bad), "--pre", str(VADD_PRE), "--format", fmt, "-o", str(out)])
        assert_bad_input(res, bad)
        assert out.read_text(encoding="utf-8") == "keep"
    # materialise with a bad assignment leaves its output alone too
    asg = tmp_path / "a.asg"
    asg.write_text("%3 -> $sgprX\n", encoding="utf-8")
    res = run(capsys, ["materialise", str(VADD_PRE), "--assignment", str(asg), "-o", str(out)])
    assert_bad_input(res, asg, 1)
    assert out.read_text(encoding="utf-8") == "keep"
    assert list(tmp_path.iterdir()) == sorted([bad, out, asg]) or {p.name for p in tmp_path.iterdir()} == {"bad.mir", "out.json", "a.asg"}


# --- assignment files -------------------------------------------------------------------------

ASSIGNMENT_CASES = [
    ("arrow", "%3 -> $sgpr6\n%1 => $vgpr0\n", 2, 1),
    ("no-dollar", "%3 -> sgpr6\n", 1, 1),
    ("unknown-register", "%3 -> $sgpr6\n\n%1 -> $vgprX\n", 3, 7),
    ("register-out-of-range", "%1 -> $vgpr4096\n", 1, 7),
    ("assigned-twice", "%3 -> $sgpr6\n%3 -> $sgpr7\n", 2, 1),
    ("garbage", "hello world\n", 1, 1),
    ("indented-garbage", "# ok\n   %3 ->\n", 2, 4),
    ("nul", "%3 -> $sgpr6\x00\n", 1, None),
]


@pytest.mark.parametrize("name,content,line,col", ASSIGNMENT_CASES, ids=[c[0] for c in ASSIGNMENT_CASES])
def test_bad_assignment(name: str, content: str, line: int, col: int | None, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    asg = tmp_path / f"{name}.asg"
    asg.write_text(content, encoding="utf-8")
    res = run(capsys, ["verify", "--pre", str(VADD_PRE), "--assignment", str(asg)])
    assert_bad_input(res, asg, line, col)
    res = run(capsys, ["materialise", str(VADD_PRE), "--assignment", str(asg)])
    assert_bad_input(res, asg, line, col)


def test_assignment_non_utf8_and_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    asg = tmp_path / "bin.asg"
    asg.write_bytes(b"%3 -> $sgpr6\n%1 -> $vgpr\xff0\n")
    assert_bad_input(run(capsys, ["verify", "--pre", str(VADD_PRE), "--assignment", str(asg)]), asg, 2, 12)
    missing = tmp_path / "missing.asg"
    assert_bad_input(run(capsys, ["verify", "--pre", str(VADD_PRE), "--assignment", str(missing)]), missing, 0, 0)


def test_assignment_unknown_vreg_is_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A register the program does not have is ignored or rejected, never a crash."""
    asg = tmp_path / "extra.asg"
    asg.write_text("%999 -> $vgpr0\n%name -> $vgpr1\n", encoding="utf-8")
    res = run(capsys, ["verify", "--pre", str(VADD_PRE), "--assignment", str(asg)])
    assert "Traceback" not in res.out + res.err and "internal error" not in res.err
    assert res.rc in (1, 2, 3)


# --- seeded random mutants of real files --------------------------------------------------------

FUZZ_FILES = ["gfx90a/vadd", "gfx1100/reduce_sum", "gfx942/sgemm_naive"]
FUZZ_SEEDS = range(12)  # one test per seed; every seed makes MUTANTS_PER_SEED mutants
MUTANTS_PER_SEED = 12
_CORRUPT_CHARS = "()[]{}<>%$:,.=_-#;'\"\t\n 0123456789xq|!@&*"


def _mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(("truncate", "delete-line", "byte", "char", "duplicate-line", "swap-lines"))
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    lines = data.split(b"\n")
    if kind == "delete-line":
        del lines[rng.randrange(len(lines))]
        return kind, b"\n".join(lines)
    if kind == "duplicate-line":
        lines.insert(rng.randrange(len(lines)), lines[rng.randrange(len(lines))])
        return kind, b"\n".join(lines)
    if kind == "swap-lines":
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return kind, b"\n".join(lines)
    k = rng.randrange(len(data))
    if kind == "byte":
        new = bytes([rng.randrange(256)])
    else:
        new = rng.choice(_CORRUPT_CHARS).encode()
    return kind, data[:k] + new + data[k + 1:]


def _failures(check: Callable[[], object], what: str) -> list[str]:
    """[] if `check` passes, else the case and what went wrong (the sweeps below collect them,
    so that a planted parser bug shows which cases catch it)."""
    try:
        check()
    except AssertionError as e:
        return [f"{what}: {e}"]
    return []


def _random_mutant_failures(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Seeded truncations, deleted, duplicated and swapped lines and corrupted bytes of small
    corpus files: each gives bad input with a place or a verdict, never a crash."""
    rng = random.Random(1000 + seed)
    failures: list[str] = []
    for n in range(MUTANTS_PER_SEED):
        base = rng.choice(FUZZ_FILES)
        which = rng.choice(("pre", "post"))
        kind, data = _mutate((CORPUS / f"{base}.{which}.mir").read_bytes(), rng)
        bad = tmp_path / f"m{n}.{which}.mir"
        bad.write_bytes(data)
        other = CORPUS / f"{base}.{'post' if which == 'pre' else 'pre'}.mir"
        post, pre = (bad, other) if which == "post" else (other, bad)
        res = run(capsys, ["verify", str(post), "--pre", str(pre), "--timeout", "10"])
        what = f"seed {seed} mutant {n}: {kind} of {base}.{which}.mir (kept as {bad}): rc {res.rc}, stderr {res.err[-400:]!r}"

        def check(res: Outcome = res, bad: Path = bad, what: str = what) -> None:
            assert "Traceback" not in res.out + res.err, what
            assert "internal error" not in res.out + res.err, what
            assert res.rc in (0, 1, 2, 3), what
            if res.rc == 2:
                assert_bad_input(res, bad)
            else:
                assert res.out.split(None, 1)[0] in ("VERIFIED", "REJECTED", "UNKNOWN"), what
            if res.rc == 3:
                assert "UNKNOWN" in res.out, what

        failures += _failures(check, what)
    return failures


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_random_mutants(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    failures = _random_mutant_failures(seed, tmp_path, capsys)
    assert not failures, failures


def _truncation_failures(base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Cuts of `base` (pre and post) that are not bad input at the file's last line."""
    rng = random.Random(7)
    failures: list[str] = []
    for which in ("pre", "post"):
        data = (CORPUS / f"{base}.{which}.mir").read_bytes()
        end = data.rindex(b"\n...")
        lines_end = [i + 1 for i in range(len(data)) if data[i:i + 1] == b"\n" and i < end]
        cuts = sorted(set(rng.sample(range(end), 10) + lines_end[-6:] + [end]))
        for cut in cuts:
            bad = tmp_path / f"cut{cut}.{which}.mir"
            bad.write_bytes(data[:cut])
            other = CORPUS / f"{base}.{'post' if which == 'pre' else 'pre'}.mir"
            post, pre = (bad, other) if which == "post" else (other, bad)
            res = run(capsys, ["verify", str(post), "--pre", str(pre)])
            text = data[:cut].decode("utf-8", "replace")
            last = max(i for i, ln in enumerate(text.split("\n"), 1) if ln.strip()) if text.strip() else 1
            failures += _failures(functools.partial(assert_bad_input, res, bad, line=None if cut < 64 else last),
                                  f"{base}.{which}.mir cut at byte {cut}: rc {res.rc}")
    return failures


@pytest.mark.parametrize("base", FUZZ_FILES)
def test_every_truncation_is_bad_input(base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file cut anywhere before its closing `...` is bad input at its end, never a verdict.

    Cut at a line boundary inside the last function, the rest still parses as a shorter
    program (one that a verdict would judge); llc closes every document, so the missing
    `...` is what tells a truncated file from a complete one.
    """
    failures = _truncation_failures(base, tmp_path, capsys)
    assert not failures, failures


# --- the parser fuzzing catches planted parser bugs -----------------------------------------------

@pytest.mark.interpreted
def test_planted_truncation_bug_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser that closes a document left open (the check the truncation sweep guards) gives
    verdicts on truncated files: the sweep reports them."""
    real = mir_parser._split_documents  # pyright: ignore[reportPrivateUsage]

    def forgiving(lines: list[str], file: str) -> list[tuple[int, list[str]]]:
        try:
            return real(lines, file)
        except InputError as e:
            if "closing `...`" not in e.message:
                raise
            return real([*lines, "..."], file)

    monkeypatch.setattr(mir_parser, "_split_documents", forgiving)
    failures = _truncation_failures(FUZZ_FILES[0], tmp_path, capsys)
    assert any(re.search(r": rc [013]: ", f) for f in failures), failures


@pytest.mark.interpreted
def test_planted_positionless_error_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A body parser that raises a plain exception (no file, line, column) instead of a
    positioned error: the random mutants end in "internal error" and the sweep reports them."""
    monkeypatch.setattr(mir_body.BodyParser, "error",
                        lambda self, msg, line, col: ValueError(msg))  # type: ignore[no-untyped-def]
    failures = [f for seed in FUZZ_SEEDS[:4] for f in _random_mutant_failures(seed, tmp_path, capsys)]
    assert any("internal error" in f for f in failures), failures


def test_wrong_width_allocation_is_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not bad input but a wrong allocation: %0:sreg_64 (the saved exec) placed in the 32-bit $sgpr0."""
    text = VADD_POST.read_text(encoding="utf-8")
    text = text.replace("renamable $sgpr0_sgpr1 = COPY $exec, implicit-def $exec",
                        "renamable $sgpr0 = COPY $exec, implicit-def $exec")
    text = text.replace("S_AND_B64 killed renamable $sgpr0_sgpr1,", "S_AND_B64 killed renamable $sgpr0,")
    post = tmp_path / "narrow.post.mir"
    post.write_text(text, encoding="utf-8")
    res = run(capsys, ["verify", str(post), "--pre", str(VADD_PRE)])
    assert "internal error" not in res.err
    assert res.rc == 1 and res.out.startswith("REJECTED")


def test_assignment_without_the_subregister_is_rejected_not_bad_input(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """%8:vreg_64_align2 assigned the 32-bit $vgpr0: `%8.sub1` stays virtual, and that is a finding."""
    lines = ["%0 -> $sgpr0_sgpr1", "%1 -> $vgpr0", "%2 -> $sgpr4_sgpr5", "%3 -> $sgpr6", "%4 -> $sgpr6_sgpr7",
             "%5 -> $sgpr0", "%6 -> $vcc", "%7 -> $vgpr0_vgpr1", "%8 -> $vgpr0", "%9 -> $vgpr0_vgpr1",
             "%10 -> $vgpr2_vgpr3", "%11 -> $vgpr4_vgpr5", "%12 -> $vgpr6", "%13 -> $vgpr7", "%14 -> $vgpr2"]
    asg = tmp_path / "narrow.asg"
    asg.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = run(capsys, ["verify", "--pre", str(VADD_PRE), "--assignment", str(asg)])
    assert "Traceback" not in res.out + res.err and "internal error" not in res.err
    assert res.rc == 1 and res.out.startswith("REJECTED"), (res.rc, res.err)
    res = run(capsys, ["materialise", str(VADD_PRE), "--assignment", str(asg)])
    assert res.rc == 1 and "has no sub1" in res.err and res.out == ""


def test_missing_optional_dependency_says_what_to_install(tmp_path: Path) -> None:
    """`verilocc allocate` (the model loop) in an environment without torch: exit 2 with the
    extra to install, never an internal error. The import of torch is refused by a finder at
    the front of sys.meta_path, as it would be where torch is not installed."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers'):\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from verilocc.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    pre = FIXTURES / "blocks" / "loop_break.gfx90a.pre.mir"
    out = tmp_path / "alloc.mir"
    run = subprocess.run([sys.executable, "-c", script, "allocate", str(pre), "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "pip install 'verilocc[model]'" in run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert not out.exists()


def test_virtual_program_after_sgpr_allocation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LLVM allocates SGPRs first: `llc -stop-before=greedy,1` writes a program that already
    holds SGPR lane spills. Verifying LLVM's own allocation against it is UNKNOWN at the first
    spill instruction (never REJECTED: the output is correct); allocating it is bad input,
    one line at that instruction, nothing written."""
    import shutil
    import subprocess

    if shutil.which("llc-19") is None:
        pytest.skip("llc-19 is not installed")
    ll = FIXTURES / "llvm-tests" / "ll" / "partial-sgpr-to-vgpr-spills.ll"
    pre, post = tmp_path / "p.pre.mir", tmp_path / "p.post.mir"
    base = ["llc-19", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-O3", str(ll)]
    subprocess.run([*base, "-stop-before=greedy,1", "-o", str(pre)], check=True, capture_output=True)
    subprocess.run([*base, "-stop-after=virtregrewriter,1", "-o", str(post)], check=True, capture_output=True)
    first = next(n for n, line in enumerate(pre.read_text().splitlines(), 1) if "SI_SPILL_S32_TO_VGPR" in line)
    assert cli.main(["verify", str(post), "--pre", str(pre)]) == 3
    out = capsys.readouterr().out
    assert "REJECTED" not in out and f"p.pre.mir:{first}:" in out and "already holds spill code" in out
    alloc = tmp_path / "alloc.mir"
    assert cli.main(["allocate", "--solver", str(pre), "-o", str(alloc)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(rf".*p\.pre\.mir:{first}:\d+: error: function '\w+': the virtual program", err[0])
    assert not alloc.exists()
