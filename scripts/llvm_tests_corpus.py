#!/usr/bin/env python3
"""Turn LLVM's own AMDGPU codegen tests into pre/post register-allocation MIR pairs.

Input: the ``.ll`` files of ``tests/fixtures/llvm-tests/ll/`` (LLVM's
``llvm/test/CodeGen/AMDGPU`` inputs; ``SOURCES.tsv`` beside them says what each exercises).
Output, under ``--out``::

    <llvm>/<target>/<test>.<mode>.pre.mir     before the first greedy allocator
    <llvm>/<target>/<test>.<mode>.post.mir    after the last virtual-register rewriter
    pairs.tsv                                 one row per (llvm, target, test, mode)

``<llvm>`` is the major version of the llc (``19``, ``22``, ...).  Two ways to make a pair:

``one-process``
    Both files come from llc runs on the test's IR, without reading MIR back::

        llc -mtriple=amdgcn-amd-amdhsa -mcpu=T -O3 -verify-machineinstrs -stop-before=greedy t.ll
        llc ... -print-before=greedy -stop-after=virtregrewriter,N t.ll

    The second run allocates in the same process that built the pre-RA function, so no
    renumbering or re-parsing stands between the two files.  ``-print-before`` prints the
    machine-function dump format, not MIR YAML, so the pre file is the MIR printed by the
    first run, which executes the same deterministic pipeline up to greedy; the script checks
    that the dump of the second run (the first greedy instance of every function) has the
    same instructions, opcode by opcode and virtual register by virtual register, as that
    pre file, and fails the pair otherwise.  The pre file is llc's raw print: it is not
    normalised and may not re-read in llc (wave32 ``$vcc_lo`` operands), verilocc reads it.

``reread``
    ``-stop-before=greedy`` to a pre file normalised to a fixed point of llc's own MIR
    printer, then ``-start-before=greedy -stop-after=virtregrewriter,N`` from that file:
    exactly how ``../shared/corpus`` was made (``scripts/llc_corpus.py``, whose pair maker
    this reuses, including the wave32 ``$vcc_lo`` patch of the temporary llc input).

N is the 0-based instance of the last ``virtregrewriter`` in ``-debug-pass=Structure`` (1 for
LLVM 19: SGPR and VGPR stages; 2 for LLVM 20 and later, which add a WWM stage).  A post file
that still mentions a virtual register in a body fails the pair.

A (version, target, test) the llc cannot compile is recorded, not fatal: ``skip`` when the llc
does not know the target (gfx950 before LLVM 20), ``fail`` with llc's first error lines
otherwise (an intrinsic the target lacks, IR the version cannot read, ...).  Runs are
deterministic; files are written only when their content changes; ``pairs.tsv`` keeps the
rows of earlier runs for keys this run did not make (so filtered runs add up).

Example::

    python3 scripts/llvm_tests_corpus.py --out /tmp/llvm-tests -j 2
    python3 scripts/llvm_tests_corpus.py --out /tmp/llvm-tests --llvm 22 --targets gfx1100 \\
        --tests 'loop_break,wave32' --modes one-process
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import fnmatch
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, installed or not
from verilocc.llm.llc_pairs import (  # noqa: E402  (the pair maker `make dataset` uses)
    TRIPLE, Job, Llc, PairError, PairMaker, fail_message, last_rewriter_instance,
    read_text, virtual_registers_in_body, write_if_changed,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
LL_DIR = REPO_ROOT / "tests" / "fixtures" / "llvm-tests" / "ll"
SOURCES = LL_DIR.parent / "SOURCES.tsv"
TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200")
VERSIONS = ("19", "22")
MODES = ("one-process", "reread")
PAIRS_HEADER = ("llvm", "target", "test", "mode", "status", "pre", "post", "note")

DUMP_HEADER = re.compile(r"^# Machine code for function (\S+?):")
SLOT_INDEX = re.compile(r"^\d+B\t")
VREG = re.compile(r"%(\d+)\b")
OPCODE = re.compile(r"\b([A-Z][A-Z0-9_]*[A-Z0-9])\b")
IR_TRIPLE = re.compile(r'^target triple = "([^"]+)"', re.M)
RUN_TRIPLE = re.compile(r"RUN:.*\bllc\b.*?-m(?:triple|arch)[= ](amdgcn[-\w]*)")


def test_triple(ll_text: str) -> str:
    """The triple the test runs under: its IR's, else its first amdgcn llc RUN line's.

    Graphics shader calling conventions (amdgpu_ps, amdgpu_cs, ...) are rejected under
    amdhsa, so the test's own OS matters.  Spellings are normalised to the full form; a
    test that names no amdgcn triple runs under amdgcn-amd-amdhsa.
    """
    m = IR_TRIPLE.search(ll_text) or RUN_TRIPLE.search(ll_text)
    name = m.group(1) if m and m.group(1).startswith("amdgcn") else "amdgcn-amd-amdhsa"
    for os_name, full in (("amdhsa", "amdgcn-amd-amdhsa"), ("amdpal", "amdgcn-amd-amdpal"),
                          ("mesa3d", "amdgcn-mesa-mesa3d")):
        if os_name in name:
            return full
    return "amdgcn"


class LocalLlc(Llc):
    """An llc that reads `.ll` inputs from its working directory.

    `llc_corpus.PairMaker` passes the IR by absolute path, which llc writes into the MIR as
    `source_filename`; a copy under the test's own name keeps the output independent of
    where the checkout lives (as in one-process mode).
    """

    def run(self, args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
        local = []
        for a in args:
            if a.endswith(".ll") and Path(a).is_absolute():
                shutil.copyfile(a, cwd / Path(a).name)
                a = Path(a).name
            local.append(a)
        return super().run(local, cwd, what)


class TriplePairMaker(PairMaker):
    """`llc_corpus.PairMaker` under the test's own triple."""

    def __init__(self, llc: Llc, out: Path, triple: str):
        super().__init__(llc, out, check_replay=False)
        self.triple = triple

    def base_args(self, target: str) -> list[str]:
        return [f"-mtriple={self.triple}", *super().base_args(target)[1:]]


@dataclasses.dataclass(frozen=True)
class Task:
    version: str
    llc: str
    target: str
    test: str
    mode: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.version, self.target, self.test, self.mode)


@dataclasses.dataclass
class Row:
    version: str
    target: str
    test: str
    mode: str
    status: str  # ok | skip | fail
    pre: str = ""
    post: str = ""
    note: str = ""

    def cells(self) -> list[str]:
        return [self.version, self.target, self.test, self.mode, self.status, self.pre,
                self.post, self.note.replace("\t", " ").replace("\n", " ")]


# --- instruction sequences, to tie the one-process pre file to the in-process state -----------

def instruction_signature(line: str) -> tuple[str, tuple[str, ...]] | None:
    """(opcode, virtual registers in order) of a body line, or None for a non-instruction."""
    s = line.strip()
    if (not s or s.startswith((";", "#", "bb.", "successors:", "liveins:", "{", "}"))
            or s.endswith(":")):
        return None
    code = s.split(" :: ", 1)[0]
    rhs = code.split(" = ", 1)[1] if " = " in code else code
    m = OPCODE.search(rhs)
    if not m:
        return None
    return m.group(1), tuple(VREG.findall(code))


def dump_functions(dump: str) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """First machine-function dump per function of a `-print-before` listing."""
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    current: list[tuple[str, tuple[str, ...]]] | None = None
    for raw in dump.splitlines():
        m = DUMP_HEADER.match(raw)
        if m:
            current = None if m.group(1) in out else out.setdefault(m.group(1), [])
            continue
        if raw.startswith("# End machine code for function"):
            current = None
            continue
        if current is None or raw.startswith(("Function Live Ins:", "Frame Objects:", "  fi#",
                                              "Constant Pool:", "Jump Tables:")):
            continue
        sig = instruction_signature(SLOT_INDEX.sub("", raw))
        if sig is not None:
            current.append(sig)
    return out


def mir_functions(text: str) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """Instruction signatures per function of the `body:` blocks of a MIR file."""
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    name = None
    inside = False
    for raw in text.split("\n"):
        if raw.startswith("name:"):
            name = raw.split(":", 1)[1].strip().strip("'\"")
            out[name] = []
            inside = False
        elif raw.startswith("body:"):
            inside = name is not None
        elif inside and raw and not raw.startswith(" "):
            inside = False
        elif inside and name is not None:
            sig = instruction_signature(raw)
            if sig is not None:
                out[name].append(sig)
    return out


def compare_dump(pre: str, dump: str) -> None:
    """The pre file holds the instructions the allocating process saw; raise otherwise."""
    want, seen = mir_functions(pre), dump_functions(dump)
    if set(want) != set(seen):
        raise PairError(f"one-process: dumped functions {sorted(seen)} differ from the pre "
                        f"file's {sorted(want)}")
    for fn, sigs in want.items():
        if sigs != seen[fn]:
            k = next((i for i, (a, b) in enumerate(zip(sigs, seen[fn])) if a != b),
                     min(len(sigs), len(seen[fn])))
            raise PairError(f"one-process: function {fn}: pre file and greedy's input differ "
                            f"at instruction {k} ({len(sigs)} vs {len(seen[fn])} instructions)")


# --- making pairs ------------------------------------------------------------------------------

class CorpusMaker:
    def __init__(self, out: Path, timeout: float):
        self.out = out
        self.timeout = timeout
        self._known: dict[str, set[str]] = {}
        self._instance: dict[tuple[str, str], int] = {}

    def known_targets(self, llc: str) -> set[str]:
        if llc not in self._known:
            proc = subprocess.run([llc, f"-mtriple={TRIPLE}", "-mcpu=help"], capture_output=True,
                                  text=True, check=False, timeout=60)
            self._known[llc] = set(re.findall(r"^\s+(gfx\w+)\s+- ", proc.stdout + proc.stderr,
                                              re.M))
        return self._known[llc]

    def last_instance(self, llc: Llc, target: str, work: Path) -> int:
        """Last rewriter instance of this llc's -O3 pipeline for `target` (from a tiny kernel)."""
        key = (llc.path, target)
        if key not in self._instance:
            (work / "probe.ll").write_text("define amdgpu_kernel void @probe() {\n  ret void\n}\n")
            proc = llc.run([f"-mtriple={TRIPLE}", f"-mcpu={target}", "-O3",
                            "-debug-pass=Structure", "probe.ll", "-o", "probe.s"], work,
                           "pass structure")
            if proc.returncode != 0:
                raise PairError(fail_message("pass structure", proc))
            self._instance[key] = last_rewriter_instance(proc.stderr)
        return self._instance[key]

    def make(self, task: Task) -> Row:
        row = Row(task.version, task.target, task.test, task.mode, "fail")
        if task.target not in self.known_targets(task.llc):
            row.status, row.note = "skip", f"llc-{task.version} does not know {task.target}"
            return row
        rel = Path(task.version) / task.target
        pre_rel = rel / f"{task.test}.{task.mode}.pre.mir"
        post_rel = rel / f"{task.test}.{task.mode}.post.mir"
        llc = Llc(task.llc, self.timeout)
        ll = LL_DIR / f"{task.test}.ll"
        try:
            if task.mode == "reread":
                maker = TriplePairMaker(LocalLlc(llc.path, llc.timeout), self.out / task.version,
                                        test_triple(read_text(ll)))
                res = maker.make(Job(task.target, f"{task.test}.reread", ll))
                if not res.ok:
                    raise PairError(res.message)
                note = re.sub(r"; (written|unchanged)$", "", res.message)
            else:
                with tempfile.TemporaryDirectory(prefix="llvm_tests_") as tmp:
                    note = self.one_process(llc, task, ll, Path(tmp), pre_rel, post_rel)
        except PairError as e:
            row.note = str(e)
            return row
        row.status, row.pre, row.post = "ok", str(pre_rel), str(post_rel)
        row.note = note
        return row

    def one_process(self, llc: Llc, task: Task, ll: Path, work: Path, pre_rel: Path,
                    post_rel: Path) -> str:
        instance = self.last_instance(llc, task.target, work)
        # The ModuleID of the embedded IR is the input's name: keep it the test's name.
        shutil.copyfile(ll, work / ll.name)
        base = [f"-mtriple={test_triple(read_text(ll))}", f"-mcpu={task.target}", "-O3",
                "-verify-machineinstrs"]
        proc = llc.run([*base, "-stop-before=greedy", ll.name, "-o", "pre.mir"], work, "pre")
        if proc.returncode != 0:
            raise PairError(fail_message("pre", proc))
        proc = llc.run([*base, "-print-before=greedy", f"-stop-after=virtregrewriter,{instance}",
                        ll.name, "-o", "post.mir"], work, "post")
        if proc.returncode != 0:
            raise PairError(fail_message("post", proc))
        pre, post = read_text(work / "pre.mir"), read_text(work / "post.mir")
        vregs = virtual_registers_in_body(post)
        if vregs:
            line, reg = vregs[0]
            raise PairError(f"post (virtregrewriter,{instance}) still has {len(vregs)} virtual "
                            f"register operands, first {reg} on line {line}")
        compare_dump(pre, proc.stderr)
        write_if_changed(self.out / pre_rel, pre)
        write_if_changed(self.out / post_rel, post)
        return f"post virtregrewriter,{instance}; pre matches greedy's input"


# --- command line ------------------------------------------------------------------------------

def llc_major(llc: str) -> str:
    out = subprocess.run([llc, "--version"], capture_output=True, text=True, check=False,
                         timeout=60).stdout
    m = re.search(r"LLVM version (\d+)", out)
    if not m:
        raise SystemExit(f"error: cannot tell the LLVM version of {llc}")
    return m.group(1)


def split_list(s: str | None) -> list[str] | None:
    return None if s is None else [x for x in (p.strip() for p in s.split(",")) if x]


def select_tests(patterns: list[str] | None) -> list[str]:
    names = sorted(p.name[: -len(".ll")] for p in LL_DIR.glob("*.ll"))
    if patterns is None:
        return names
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def read_pairs(path: Path) -> dict[tuple[str, str, str, str], Row]:
    rows: dict[tuple[str, str, str, str], Row] = {}
    if not path.exists():
        return rows
    lines = read_text(path).splitlines()
    for ln in lines[1:]:
        cells = ln.split("\t")
        if len(cells) == len(PAIRS_HEADER):
            row = Row(*cells)
            rows[(row.version, row.target, row.test, row.mode)] = row
    return rows


def write_pairs(path: Path, rows: dict[tuple[str, str, str, str], Row]) -> None:
    order = {t: k for k, t in enumerate(TARGETS)}

    def key(k: tuple[str, str, str, str]) -> tuple[int, int, str, str, str]:
        return (int(k[0]), order.get(k[1], len(order)), k[1], k[2], k[3])

    text = "\t".join(PAIRS_HEADER) + "\n" + "".join(
        "\t".join(rows[k].cells()) + "\n" for k in sorted(rows, key=key))
    write_if_changed(path, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Make pre/post register-allocation MIR pairs from "
                                             "LLVM's AMDGPU codegen tests.")
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--llvm", default=",".join(VERSIONS),
                    help="comma-separated LLVM major versions, run as llc-<V> (default %(default)s)")
    ap.add_argument("--targets", default=",".join(TARGETS), help="default %(default)s")
    ap.add_argument("--tests", default=None, help="comma-separated test names or shell patterns")
    ap.add_argument("--modes", default=",".join(MODES), help="default %(default)s")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="pairs made in parallel")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per llc call")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("-j must be at least 1")
    modes = split_list(args.modes) or []
    if set(modes) - set(MODES):
        ap.error(f"--modes takes {', '.join(MODES)}")
    tests = select_tests(split_list(args.tests))
    if not tests:
        ap.error("no test matched --tests")
    tasks: list[Task] = []
    for version in split_list(args.llvm) or []:
        llc = shutil.which(f"llc-{version}")
        if llc is None:
            print(f"skip LLVM {version}: llc-{version} is not on PATH "
                  f"(apt-get install llvm-{version})", file=sys.stderr)
            continue
        if llc_major(llc) != version:
            ap.error(f"llc-{version} reports another LLVM version")
        tasks += [Task(version, llc, target, test, mode) for target in split_list(args.targets) or []
                  for test in tests for mode in modes]
    if not tasks:
        print("error: nothing to do", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    maker = CorpusMaker(args.out, args.timeout)
    rows = read_pairs(args.out / "pairs.tsv")
    counts = {"ok": 0, "skip": 0, "fail": 0}
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for k, (task, row) in enumerate(zip(tasks, pool.map(maker.make, tasks)), 1):
            rows[task.key] = row
            if k % 100 == 0:  # a long run's manifest is readable while it goes on
                write_pairs(args.out / "pairs.tsv", rows)
            counts[row.status] += 1
            print(f"{row.status:4} llvm-{task.version} {task.target} {task.test} {task.mode}: "
                  f"{row.note}", flush=True)
    write_pairs(args.out / "pairs.tsv", rows)
    print(f"{counts['ok']} pairs made, {counts['skip']} skipped, {counts['fail']} failed of "
          f"{len(tasks)}; {time.monotonic() - t0:.0f}s; manifest {args.out / 'pairs.tsv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
