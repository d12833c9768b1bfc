"""Ties an instruction's definition implies (`verilocc.target.opcodes`), against llc.

llc's MIR printer leaves out the ties an opcode's definition implies, but when it prints a
function for a pass dump (`-print-after=...`) or a machine-verifier report it prints every tie,
implied ones included (`MachineInstr::print` with `IsStandalone`):

    llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -run-pass=machineverifier \\
        -print-after=machineverifier -o /dev/null f.mir
    ...  renamable $vgpr8 = V_FMAC_F32_e32 $vgpr7, $vgpr5, killed $vgpr8(tied-def 0), implicit $mode, ...

(The MIR parser verifies what it read; where the verifier refuses a function it prints the same
dump before its report.) So the table is compared with llc twice: on one instruction of every
opcode of the repository's MIR files and the corpus, as written there (without its printed
ties), and on every opcode name llc knows, each given only register operands, which llc ties as
its definition says whatever the operands are. Then what the parser does with the ties: a lane
spill and a V_FMAC_F32 whose tied operands were moved apart are REJECTED, and implied ties do
not show up when a file is printed back.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from verilocc.errors import InputError
from verilocc.findings import Verdict
from verilocc.mir.model import Function, Instruction, Operand
from verilocc.mir.parser import parse_instruction, parse_module, read_module
from verilocc.mir.printer import print_instruction, print_module
from verilocc.target.opcode_names import is_known_opcode
from verilocc.target.opcodes import implied_ties, tie_constraints

from .conftest import CORPUS, EXAMPLES, FIXTURES, script, verify_pair

LLC_VERSIONS = ("19", "22")  # every opcode name: LLVM 15 and 16 check operand counts, which these have not
REPOSITORY_LLCS = ("15", "16", "19", "22")
TIES = FIXTURES / "ties"
_TIED_DEF = re.compile(r"\(tied-def (\d+)\)")
_OPCODE_IN_LINE = re.compile(r"^\s*(?:[^=]*\s=\s)?(?:[a-z-]+\s+)*([A-Z][A-Z0-9_]*[A-Za-z0-9_]*)\b", re.M)


def _llc(version: str) -> str | None:
    return shutil.which(f"llc-{version}")


def _installed() -> list[str]:
    return [v for v in REPOSITORY_LLCS if _llc(v)]


# --------------------------------------------------------------------------------------------
# What llc prints
# --------------------------------------------------------------------------------------------
def _split_operands(text: str) -> list[str]:
    """The comma-separated parts of an operand list, commas in brackets or quotes kept."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "([{<":
            depth += 1
        elif not quote and ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0 and not quote:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def printed_ties(line: str) -> set[tuple[int, int]]:
    """(def, use) positions of the `(tied-def N)` llc printed on the explicit uses of one
    instruction line of a dump."""
    head = line.split(" :: ")[0].strip()
    defs: list[str] = []
    if " = " in head:
        left, head = head.split(" = ", 1)
        defs = _split_operands(left)
    words = head.split(None, 1)
    rest = _split_operands(words[1]) if len(words) > 1 else []
    ties = set()
    for k, text in enumerate(defs + rest):
        m = _TIED_DEF.search(text)
        if m and not text.startswith(("implicit ", "implicit-def ")):
            ties.add((int(m.group(1)), k))
    return ties


def _dump(llc: str, mir: Path) -> tuple[list[str] | None, str]:
    """The instruction lines of the function llc dumps (None when it refused the file), and
    its error output. llc is stopped once the dump is read: what its verifier says after it
    about instructions of made-up operands can run to gigabytes."""
    # `-o -`: llc removes an output file it did not finish, and as root `-o /dev/null` would
    # remove the device itself
    cmd = [llc, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-run-pass=machineverifier",
           "-print-after=machineverifier", "-o", "-", str(mir)]
    lines: list[str] = []
    seen: list[str] = []
    inside = blocks = False
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace") as p:
        assert p.stderr is not None
        for line in p.stderr:
            if line.startswith("# Machine code for function"):
                inside = True
            elif line.startswith("# End machine code"):
                p.kill()
                return lines, ""
            elif inside and line.startswith("bb."):
                blocks = True  # after the frame objects
            elif blocks and line.strip() and not line.strip().startswith(("liveins:", "successors:", ";")):
                lines.append(line.strip())
            elif not inside and len(seen) < 200:
                seen.append(line)
    return None, "".join(seen)


def _function(body: list[str]) -> str:
    return "\n".join([
        "---", "name: ties", "tracksRegLiveness: false",
        "stack:", "  - { id: 0, size: 64, alignment: 4 }",
        "fixedStack:", "  - { id: 0, offset: 0, size: 4, alignment: 4 }",
        "body: |", "  bb.0:", *(f"    {line}" for line in body), "  bb.1:", "    S_ENDPGM 0", "...", ""])


_FIRST_BODY_LINE = 10  # the line of the first instruction in `_function`


def llc_ties(llc: str, samples: dict[str, list[str]],
             tmp: Path) -> tuple[dict[str, tuple[str, set[tuple[int, int]]]], list[str]]:
    """For each opcode, the first of its sample instructions llc reads, with the ties llc
    prints for it; and the opcodes none of whose samples llc reads."""
    todo = {op: list(texts) for op, texts in samples.items() if texts}
    refused: list[str] = []
    mir = tmp / "ties.mir"
    while True:
        order = sorted(todo)
        body = [todo[op][0] for op in order]
        mir.write_text(_function(body))
        lines, err = _dump(llc, mir)
        if lines is not None:
            assert len(lines) == len(body) + 1, err[-2000:]
            return {op: (body[k], printed_ties(lines[k])) for k, op in enumerate(order)}, refused
        m = re.search(r"ties\.mir:(\d+):\d+: (.*)", err)
        assert m, err[-2000:]
        op = order[int(m.group(1)) - _FIRST_BODY_LINE]
        todo[op].pop(0)  # llc cannot read this one (an opcode, class or operand of another LLVM)
        if not todo[op]:
            del todo[op]
            refused.append(op)


# --------------------------------------------------------------------------------------------
# Samples of the opcodes the repository's MIR uses
# --------------------------------------------------------------------------------------------
def _mir_files() -> list[Path]:
    files = sorted(EXAMPLES.rglob("*.mir")) + sorted(FIXTURES.rglob("*.mir"))
    if CORPUS.is_dir():
        files += sorted(CORPUS.glob("*/*.mir"))
    return files


_KEEP_KINDS = {"imm", "fpimm", "subreg", "regmask", "intrinsic", "predicate"}
_RENAME_KINDS = {"mbb": "%bb.1", "stack": "%stack.0", "fixed-stack": "%fixed-stack.0"}


def _classes(fn: Function) -> dict[int | str, str]:
    out = {k: d.reg_class for k, d in fn.registers.items() if d.reg_class and d.reg_class != "_"}
    for _, _, ins in fn.instructions():
        for op in ins.operands:
            if op.kind == "reg" and op.vreg is not None and op.reg_class and op.vreg not in out:
                out[op.vreg] = op.reg_class
    return out


def sample(ins: Instruction, classes: dict[int | str, str], fresh: Iterator[int]) -> str | None:
    """`ins` as one line llc reads in a function of its own: no printed tie, memory operand or
    debug location; virtual registers renumbered, each with its class; blocks, stack slots as
    the ones `_function` has. None where an operand needs more context (globals, IR values)."""
    if ins.opcode == "BUNDLE":
        return None
    names: dict[int | str, int] = {}
    ops: list[Operand] = []
    for op in ins.operands:
        if op.kind == "reg":
            op = dataclasses.replace(op, tied_def=None, tie_implied=False)
            if op.vreg is not None:
                if op.vreg not in classes or op.llt:
                    return None
                if op.vreg not in names:
                    names[op.vreg] = next(fresh)
                op = dataclasses.replace(op, vreg=names[op.vreg], reg_class=classes[op.vreg])
        elif op.kind in _RENAME_KINDS:
            op = dataclasses.replace(op, text=_RENAME_KINDS[op.kind])
        elif op.kind not in _KEEP_KINDS:
            return None
        ops.append(op)
    return print_instruction(dataclasses.replace(ins, operands=ops, mem=None, trailer=(), bundled=False,
                                                 opens_bundle=False))


def repository_samples(per_opcode: int = 4) -> dict[str, list[str]]:
    """Up to `per_opcode` sample lines of every opcode of the repository's MIR files and the
    corpus, those of allocated programs first (they need no classes)."""
    fresh = iter(range(10_000, 10**9))
    physical: dict[str, list[str]] = {}
    virtual: dict[str, list[str]] = {}
    for path in _mir_files():
        text = path.read_text(errors="replace")
        wanted = {m.group(1) for m in _OPCODE_IN_LINE.finditer(text)}
        if all(len(physical.get(op, ())) >= per_opcode for op in wanted):
            continue
        try:
            module = parse_module(text, str(path))
        except InputError:
            continue  # a fixture of bad input
        for fn in module.functions:
            classes = _classes(fn)
            for _, _, ins in fn.instructions():
                got = physical if all(op.vreg is None for op in ins.operands if op.kind == "reg") else virtual
                have = got.setdefault(ins.opcode, [])
                if len(have) < per_opcode:
                    line = sample(ins, classes, fresh)
                    if line is not None and line not in have:
                        have.append(line)
    return {op: (physical.get(op, []) + virtual.get(op, []))[: 2 * per_opcode]
            for op in physical.keys() | virtual.keys()}


def _ours(line: str) -> set[tuple[int, int]]:
    return set(implied_ties(parse_instruction(line)))


@pytest.mark.llc
@pytest.mark.slow
def test_every_opcode_of_the_repository_has_llcs_ties(tmp_path: Path) -> None:
    """The table gives each opcode of the repository's MIR (and the corpus) the ties llc gives it
    (each of llc-15, 16, 19 and 22 installed), on an instruction of that opcode from those files."""
    versions = _installed()
    if not {"19", "22"} & set(versions):
        pytest.skip("neither llc-19 nor llc-22 is installed (make test installs them)")
    samples = repository_samples()
    compared: dict[str, set[str]] = {}
    disagree = []
    for version in versions:
        llc = _llc(version)
        assert llc is not None
        got, _ = llc_ties(llc, samples, tmp_path)
        for op, (line, theirs) in sorted(got.items()):
            compared.setdefault(op, set()).add(version)
            ours = _ours(line)
            if ours != theirs:
                disagree.append(f"llc-{version} {op}: llc ties {sorted(theirs)}, the table {sorted(ours)} ({line})")
    assert not disagree, "\n".join(disagree)
    # Every opcode was compared with some llc, except the LLVM 15/16 ones neither reads.
    uncompared = sorted(set(samples) - set(compared))
    tied = [op for op in uncompared if tie_constraints(op)]
    assert not tied, f"opcodes with ties no llc was asked about: {tied}"
    assert len(compared) >= 0.95 * len(samples), uncompared
    print(f"{len(compared)} opcodes compared with llc-{'/llc-'.join(versions)}, "
          f"{sum(1 for op in compared if tie_constraints(op))} of them tied; not compared: {uncompared}")


# --------------------------------------------------------------------------------------------
# Every opcode name llc knows
# --------------------------------------------------------------------------------------------


def llvm_opcode_names(llc: str) -> list[str]:
    """The AMDGPU instruction names in the LLVM library `llc` runs on, as
    `scripts/opcode_names.py` reads them (names that are the tail of another share its bytes
    there and are not seen: `S_AND_B32` of `DS_AND_B32`)."""
    names = script("opcode_names")
    library = names.library_of(llc)
    return sorted(names.names_in(library)) if library is not None else []


_IMPLICIT = ["$exec", "$mode", "$scc", "$vcc", "$m0", "$exec_lo", "$vcc_lo", "$flat_scr"]


def llc_ties_of_names(llc: str, names: list[str], tmp: Path, chunk: int = 2000) -> dict[str, set[tuple[int, int]]]:
    """The ties llc gives each opcode name on 24 register operands, all uses: `addOperand` ties
    each use at a position its definition ties (the `(tied-def N)` of a use names the earlier
    position). The implicit registers the parser asks for are added to every instruction."""
    implicit = list(_IMPLICIT)
    out: dict[str, set[tuple[int, int]]] = {}
    todo = list(names)
    regs = ", ".join(f"$vgpr{k}" for k in range(24))
    while todo:
        part = todo[:chunk]
        extra = ", ".join([f"implicit {r}" for r in implicit] + [f"implicit-def {r}" for r in implicit])
        mir = tmp / "names.mir"
        mir.write_text(_function([f"{name} {regs}, {extra}" for name in part]))
        lines, err = _dump(llc, mir)
        if lines is None:
            m = re.search(r"names\.mir:(\d+):\d+: (.*)", err)
            assert m, err[-2000:]
            missing = re.search(r"missing implicit register operand '[a-z-]+ (\$\w+)'", m.group(2))
            if missing and missing.group(1) not in implicit:
                implicit.append(missing.group(1))
            else:
                todo.remove(part[int(m.group(1)) - _FIRST_BODY_LINE])  # not an instruction of this llc
            continue
        assert len(lines) == len(part) + 1, err[-2000:]
        for name, line in zip(part, lines):
            out[name] = {(d, u) for d, u in printed_ties(line) if d < u}
        todo = todo[chunk:]
    return out


# The families of AMDGPU opcodes (the other names of the table are LLVM's generic ones).
_AMDGPU = {"S", "V", "SI", "AV", "DS", "BUFFER", "TBUFFER", "GLOBAL", "FLAT", "SCRATCH", "IMAGE", "EXP", "LDS", "WAVE",
           "CLUSTER", "TENSOR", "ENDPGM", "WWM", "IGLP", "SCHED", "GET", "FPTRUNC", "SOFT", "SIMULATED"}
# Real (encoded) instructions: MIR before the asm printer has only their pseudos, except for
# MIMG, whose opcodes are the encoded ones.
_ENCODED = re.compile(r"_(?:gfx\d\w*|vi|si|ci)$")


def ties_of_every_name(version: str, tmp_path: Path, session: Path | None = None) -> dict[str, set[tuple[int, int]]]:
    """llc-`version`'s ties of every AMDGPU opcode name it knows (the test skips without that llc
    or its table of names). With `session` (`_session_dir`), llc's answer is read once per
    test session: this test and certcheck's (tests/test_certcheck_ties.py) compare their own
    tables with the same dump of llc."""
    llc = _llc(version)
    if llc is None:
        pytest.skip(f"llc-{version} is not installed (make test installs it)")
    names = [n for n in llvm_opcode_names(llc) if n.split("_")[0] in _AMDGPU or n in ("INSERT_SUBREG", "ARITH_FENCE")]
    if len(names) < 10_000:
        pytest.skip(f"no table of instruction names found in the library of {llc}")
    if session is None:
        return llc_ties_of_names(llc, names, tmp_path)
    binary = Path(shutil.which(llc) or llc).resolve()
    stamp = binary.stat()
    saved = session / f"llc-{version}-ties-{stamp.st_size}-{stamp.st_mtime_ns}.json"
    if saved.exists():
        return {name: {(d, u) for d, u in pairs} for name, pairs in json.loads(saved.read_text()).items()}
    got = llc_ties_of_names(llc, names, tmp_path)
    part = saved.with_suffix(f".{os.getpid()}.part")
    part.write_text(json.dumps({name: sorted(pairs) for name, pairs in sorted(got.items())}))
    os.replace(part, saved)  # another worker may have written the same answer meanwhile
    return got


def _session_dir(factory: pytest.TempPathFactory) -> Path:
    """A directory of this test session that every pytest-xdist worker of it shares."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.mark.llc
@pytest.mark.slow
@pytest.mark.parametrize("version", LLC_VERSIONS)
def test_every_opcode_name_llc_knows_has_llcs_ties(version: str, tmp_path: Path,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """No opcode gets a tie llc does not give it, and every pseudo (and every MIMG opcode) gets
    exactly llc's ties; an encoded VALU opcode may be left out."""
    theirs = ties_of_every_name(version, tmp_path, _session_dir(tmp_path_factory))
    wrong, missing = [], []
    for name, ties in sorted(theirs.items()):
        ours = {(t.def_, t.use) for t in tie_constraints(name)}
        if ours == ties:
            continue
        if ours:
            wrong.append(f"{name}: llc {sorted(ties)}, the table {sorted(ours)}")
        elif not _ENCODED.search(name) or name.startswith(("IMAGE_", "DS_")):
            missing.append(f"{name}: llc {sorted(ties)}")
    assert not wrong and not missing, "\n".join(wrong[:50] + missing[:50])
    tied = sum(1 for ties in theirs.values() if ties)
    print(f"llc-{version}: {len(theirs)} opcode names, {tied} tied, the table agrees on all of them "
          f"but {sum(1 for n, t in theirs.items() if t and not tie_constraints(n))} encoded ones it leaves out")


# --------------------------------------------------------------------------------------------
# The parser and the verifier
# --------------------------------------------------------------------------------------------
def _tied(ins: Instruction) -> list[tuple[int, int, bool]]:
    return [(op.tied_def, k, op.tie_implied) for k, op in enumerate(ins.operands) if op.tied_def is not None]


def test_each_form_has_its_own_positions() -> None:
    fmac = "$vgpr8 = V_FMAC_F32_e32 $vgpr7, $vgpr5, killed $vgpr8, implicit $mode, implicit $exec"
    assert _tied(parse_instruction(fmac)) == [(0, 3, True)]
    e64 = "$vgpr8 = V_FMAC_F32_e64 0, $vgpr7, 0, $vgpr5, 0, killed $vgpr8, 0, 0, implicit $mode, implicit $exec"
    assert _tied(parse_instruction(e64)) == [(0, 6, True)]
    acc = "_".join(f"agpr{k}" for k in range(16))
    mac = (f"${acc} = V_MFMA_F32_16X16X1F32_mac_e64 $vgpr0, $vgpr1, ${acc}, 0, 0, 0, "
           "implicit $mode, implicit $exec")
    assert _tied(parse_instruction(mac)) == [(0, 3, True)]
    swap = "$vgpr0, $vgpr1 = V_SWAP_B32 $vgpr1, $vgpr0, implicit $exec"
    assert _tied(parse_instruction(swap)) == [(1, 2, True), (0, 3, True)]
    # No tie where the definition has none (V_PK_FMAC_F16 has two sources, S_CMOVK_I32 none).
    for text in ("$vgpr0 = V_ADD_F32_e32 $vgpr1, $vgpr0, implicit $mode, implicit $exec",
                 "$vgpr0 = V_PK_FMAC_F16_e32 $vgpr1, $vgpr2, implicit $mode, implicit $exec",
                 "$sgpr0 = S_CMOVK_I32 5, implicit $scc"):
        assert _tied(parse_instruction(text)) == []


def test_a_written_tie_stays_written() -> None:
    text = "%3:vgpr_32 = V_FMAC_F32_e32 %1, %2, %3(tied-def 0), implicit $mode, implicit $exec"
    ins = parse_instruction(text)
    assert _tied(ins) == [(0, 3, False)]
    assert print_instruction(ins) == text


@pytest.mark.parametrize("text, col, says", [
    ("$vgpr8 = V_FMAC_F32_e32 $vgpr7, $vgpr5(tied-def 0), killed $vgpr8, implicit $mode, implicit $exec", 33,
     '"Explicit operand should not be tied"'),
    ("$vgpr8, $vgpr9 = V_SWAP_B32 $vgpr9(tied-def 0), $vgpr8, implicit $exec", 29,
     '"Tied def doesn\'t match MCInstrDesc"'),
])
def test_a_written_tie_against_the_definition_is_bad_input(text: str, col: int, says: str) -> None:
    with pytest.raises(InputError) as e:
        parse_instruction(text, "f.mir", 7)
    line = str(e.value)
    assert line.startswith(f"f.mir:7:{col}: error: ") and "\n" not in line and says in line


def _tied_findings(broken: Path, pre: Path) -> list[str]:
    report = verify_pair(broken, pre)
    assert report.verdict is Verdict.REJECTED
    return [f"{f.place.line}: {f.message}" for f in report.findings if f.kind == "tied" and f.severity == "error"]


def test_a_lane_spill_into_another_register_is_rejected() -> None:
    """`SI_SPILL_S32_TO_VGPR` writes one lane of its tied input: writing the lanes to $vgpr5 while
    the input is $vgpr0 is what llc refuses ("Tied physical registers must match"), although the
    values would flow (this allocation was VERIFIED before the table)."""
    (found,) = _tied_findings(TIES / "spill-lane.broken.mir", TIES / "spill-lane.pre.mir")
    assert found.startswith("189: ") and "`SI_SPILL_S32_TO_VGPR` ties its def $vgpr5 to this use" in found
    assert "(the instruction's definition: `$vdst = $vdst_in`), but the use is in $vgpr0" in found
    assert 'llc\'s machine verifier says "Tied physical registers must match"' in found
    original = FIXTURES / "fidelity" / "si-spill-sgpr-stack.llvm19.gfx90a"
    assert verify_pair(Path(f"{original}.post.mir"), Path(f"{original}.pre.mir")).verdict is Verdict.VERIFIED


def test_an_fmac_accumulating_another_register_is_rejected(tmp_path: Path) -> None:
    """`V_FMAC_F32_e32` reads its accumulator from its def's register: its result put in $vgpr9
    (and the store after it reading $vgpr9) while the accumulator is in $vgpr2 is refused."""
    post = (EXAMPLES / "gfx90a" / "sgemm_naive.post.mir").read_text()
    fmac = ("    renamable $vgpr2 = contract nofpexcept V_FMAC_F32_e32 killed $sgpr11, killed $vgpr8, killed $vgpr2, "
            "implicit $mode, implicit $exec\n"
            "    GLOBAL_STORE_DWORD killed renamable $vgpr0_vgpr1, killed renamable $vgpr2,")
    assert post.count(fmac) == 1
    moved = fmac.replace("renamable $vgpr2 = contract", "renamable $vgpr9 = contract").replace(
        "killed renamable $vgpr2,", "killed renamable $vgpr9,")
    broken = tmp_path / "sgemm_naive.post.mir"
    broken.write_text(post.replace(fmac, moved))
    line = post[: post.index(fmac)].count("\n") + 1
    (found,) = _tied_findings(broken, EXAMPLES / "gfx90a" / "sgemm_naive.pre.mir")
    assert found.startswith(f"{line}: ") and "`V_FMAC_F32_e32` ties its def $vgpr9 to this use" in found
    assert "(the instruction's definition: `$vdst = $src2`), but the use is in $vgpr2" in found


def _round_trip_files() -> Iterable[Path]:
    yield from sorted(EXAMPLES.glob("*/*.mir"))
    yield TIES / "spill-lane.broken.mir"


@pytest.mark.parametrize("path", list(_round_trip_files()), ids=lambda p: p.name)
def test_implied_ties_print_back_as_the_file_had_them(path: Path) -> None:
    module = read_module(path)
    implied = sum(1 for fn in module.functions for _, _, ins in fn.instructions()
                  for op in ins.operands if op.tie_implied)
    if path.name.startswith(("sgemm", "softmax")) or path.parent == TIES:
        assert implied, "the file has implied ties (FMACs, lane spills): the test would prove nothing"
    assert print_module(module) == path.read_text()


@pytest.mark.llc
@pytest.mark.parametrize("version", ["13", "14", "15", "16", "19", "22"])
def test_the_reader_knows_every_name_llc_knows(version: str) -> None:
    """No instruction name an installed llc reads is refused as unknown
    (`verilocc/target/data/opcode-names.txt.gz`, made by `scripts/opcode_names.py` from the
    libraries of LLVM 13 to 22); a made-up one is."""
    llc = _llc(version)
    if llc is None:
        pytest.skip(f"llc-{version} is not installed (make test installs llc-19 and llc-22)")
    names = llvm_opcode_names(llc)
    if len(names) < 10_000:
        pytest.skip(f"no table of instruction names found in the library of {llc}")
    assert [n for n in names if not is_known_opcode(n)] == []
    assert not is_known_opcode("V_FROB_XYZ") and not is_known_opcode("V_MFMA_F32_4X4X1F32_mac_e64")
