"""Fixed stack objects are the memory they name (`verilocc.pairing.fixed_objects`).

llc renumbers the `fixedStack:` entries of a MIR file it reads back, so the allocated program
calls an incoming stack argument, a byval copy or a tail call's outgoing argument by another
id than the virtual program. LLVM's allocations of functions with such objects are VERIFIED
on llc-16, llc-19 and llc-22, gfx90a, gfx942 and gfx1100; an access moved to another object
is REJECTED. How the fixtures were made: tests/fixtures/fixed-stack/README.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from verilocc.findings import Report, Verdict
from verilocc.llc.text import fixed_stack_named_by_memory
from verilocc.mir.parser import parse_module, read_module
from verilocc.pairing.fixed_objects import fixed_object_names, with_fixed_objects_named
from verilocc.verify import Options, verify_modules

from .conftest import FIXTURES, ROOT, have

FIXED = FIXTURES / "fixed-stack"
PAIRS = sorted(p.name[:-len(".post.mir")] for p in FIXED.glob("*.post.mir"))


def _verify(name: str, post_text: str | None = None) -> Report:
    post = (parse_module(post_text, f"{name}.post.mir") if post_text is not None
            else read_module(str(FIXED / f"{name}.post.mir")))
    return verify_modules(post, read_module(str(FIXED / f"{name}.pre.mir")), Options())


def _objects(name: str, side: str) -> dict[int, tuple[int, int]]:
    fn = read_module(str(FIXED / f"{name}.{side}.mir")).functions[0]
    return {e["id"]: (e["offset"], e["size"]) for e in fn.header["fixedStack"]}


def test_the_pairs_cover_three_llvm_versions_and_targets_and_are_renumbered() -> None:
    assert {n.split(".")[1] for n in PAIRS} == {"llvm16", "llvm19", "llvm22"}
    assert {n.split(".")[2] for n in PAIRS} >= {"gfx90a", "gfx942", "gfx1100"}
    # In every pair some id names other memory in the allocated program than in the virtual one.
    for name in PAIRS:
        pre, post = _objects(name, "pre"), _objects(name, "post")
        assert any(pre.get(i) != post[i] for i in post), name


@pytest.mark.parametrize("name", PAIRS)
def test_llvms_allocation_with_renumbered_fixed_objects_is_verified(name: str) -> None:
    report = _verify(name)
    assert report.verdict is Verdict.VERIFIED, [f.message for f in report.findings][:3]


def test_one_memory_listed_twice_is_read_under_one_name() -> None:
    """`sibling_call_byval_and_stack_passed` lists offset 16, size 4 twice (the byval
    argument and the tail call's outgoing argument): both sides read it as the lower id."""
    name = "byval.llvm19.gfx90a"
    pre = read_module(str(FIXED / f"{name}.pre.mir")).functions[0]
    post = read_module(str(FIXED / f"{name}.post.mir")).functions[0]
    pre_names, post_names = fixed_object_names(pre, post)
    objects, post_objects = _objects(name, "pre"), _objects(name, "post")
    groups: dict[tuple[int, int], list[int]] = {}
    for i in sorted(objects):
        groups.setdefault(objects[i], []).append(i)
    twice = [ids for ids in groups.values() if len(ids) > 1]
    assert twice
    renamed_pre, renamed_post = with_fixed_objects_named(pre, post)
    texts = {op.text for f in (renamed_pre, renamed_post) for b in f.blocks for i in b.instructions
             for op in i.operands if op.kind == "fixed-stack"}
    for ids in twice:
        assert {pre_names[i] for i in ids} == {ids[0]}
        assert {post_names[i] for i in post_objects if post_objects[i] == objects[ids[0]]} == {ids[0]}
        assert not texts & {f"%fixed-stack.{i}" for i in ids[1:]}


def _moved(name: str, opcode: str) -> tuple[str, int]:
    """The allocated program with the first `opcode` that names a fixed object moved to
    another object at another offset (operand and memory operand alike), and the line changed."""
    text = (FIXED / f"{name}.post.mir").read_text()
    objects = _objects(name, "post")
    lines = text.split("\n")
    for k, line in enumerate(lines):
        m = re.search(r"%fixed-stack\.(\d+)", line)
        if m is None or f" {opcode} " not in f" {line.strip()} ":
            continue
        was = int(m.group(1))
        other = next(i for i in sorted(objects) if objects[i][0] != objects[was][0])
        lines[k] = re.sub(rf"%fixed-stack\.{was}(?!\d)", f"%fixed-stack.{other}", line)
        return "\n".join(lines), k + 1
    raise AssertionError(f"no {opcode} of a fixed object in {name}")


@pytest.mark.parametrize("name", ["byval.llvm19.gfx90a", "byval.llvm22.gfx1100"])
def test_a_store_to_another_fixed_object_is_rejected(name: str) -> None:
    opcode = "BUFFER_STORE_DWORD_OFFEN" if "gfx90a" in name else "SCRATCH_STORE_DWORD_SADDR"
    text, line = _moved(name, opcode)
    report = _verify(name, text)
    assert report.verdict is Verdict.REJECTED
    assert any(f.place.line == line for f in report.findings if f.severity == "error")


@pytest.mark.parametrize("name", ["ret72.llvm19.gfx942", "stackargs.llvm22.gfx1100"])
def test_a_load_of_another_stack_argument_is_rejected(name: str) -> None:
    """The planted fault of a reload from the wrong slot: an incoming stack argument read
    from the object of another argument."""
    text, line = _moved(name, "SCRATCH_LOAD_DWORD_SADDR")
    report = _verify(name, text)
    assert report.verdict is Verdict.REJECTED
    assert any(f.place.line == line for f in report.findings if f.severity == "error")


def test_a_copy_of_a_stack_argument_load_is_an_added_instruction() -> None:
    """LLVM does not rematerialise a memory load on AMDGPU: a second load of an incoming
    stack argument, even of the right one, is an instruction the virtual program lacks."""
    name = "ret72.llvm19.gfx942"
    lines = (FIXED / f"{name}.post.mir").read_text().split("\n")
    k = next(k for k, ln in enumerate(lines) if "= SCRATCH_LOAD_DWORD_SADDR %fixed-stack." in ln)
    lines.insert(k + 1, lines[k])
    report = _verify(name, "\n".join(lines))
    assert report.verdict is Verdict.REJECTED
    assert any(f.kind == "added-instruction" and f.place.line == k + 2 for f in report.findings)


@pytest.mark.llc
def test_llcs_re_print_differs_from_its_input_only_in_the_fixed_objects_order(tmp_path: Path) -> None:
    """Why no file with fixed objects is its own re-print: llc lists them the other way round.
    Named by the memory they describe, the two prints are one text; a changed offset is not."""
    if not have("llc-19"):
        pytest.skip("llc-19 is not installed (make test installs it)")
    pre = FIXED / "byval.llvm19.gfx90a.pre.mir"
    out = tmp_path / "again.mir"
    subprocess.run(["llc-19", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-run-pass=none", "-o", str(out), str(pre)],
                   check=True, capture_output=True)
    # The machine functions (the embedded IR module is re-printed under another name).
    text, again = (t[t.index("\n---\nname:"):] for t in (pre.read_text(), out.read_text()))
    assert text != again
    assert fixed_stack_named_by_memory(text) == fixed_stack_named_by_memory(again)
    moved = again.replace("offset: 12, size: 4", "offset: 8, size: 4", 1)
    assert moved != again and fixed_stack_named_by_memory(text) != fixed_stack_named_by_memory(moved)


@pytest.mark.llc
def test_the_pair_maker_makes_re_read_pairs_of_functions_with_fixed_objects(tmp_path: Path) -> None:
    """`sibling-call.ll` re-read by llc-19 for gfx90a: the pair is made (it used to stop at "did
    not reach a fixed point") and LLVM's allocation in it is VERIFIED."""
    if not have("llc-19"):
        pytest.skip("llc-19 is not installed (make test installs it)")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "llvm_tests_corpus.py"), "--out", str(tmp_path), "--llvm", "19",
                           "--targets", "gfx90a", "--tests", "sibling-call", "--modes", "reread", "-j", "1"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    post, pre = (tmp_path / "19" / "gfx90a" / f"sibling-call.reread.{side}.mir" for side in ("post", "pre"))
    report = verify_modules(read_module(str(post)), read_module(str(pre)), Options())
    assert report.verdict is Verdict.VERIFIED and len(report.functions) > 20
