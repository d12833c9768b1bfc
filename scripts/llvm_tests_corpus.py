#!/usr/bin/env python3
"""Turn LLVM's own AMDGPU codegen tests into pre/post register-allocation MIR pairs.

Input: the ``.ll`` files of ``tests/fixtures/llvm-tests/ll/`` (LLVM's
``llvm/test/CodeGen/AMDGPU`` inputs; ``SOURCES.tsv`` beside them says what each exercises).
Output, under ``--out``::

    <llvm>/<target>/<test>.<mode>.pre.mir     before the first greedy allocator
    <llvm>/<target>/<test>.<mode>.post.mir    after the last virtual-register rewriter
    pairs.tsv                                 one row per (llvm, target, test, mode)

``<llvm>`` is the major version of the llc (``19``, ``22``, ...).  A pair is made in one llc
process (``one-process``) or by re-reading the printed pre file (``reread``), with the greedy
allocator and LLVM's machine verifier on (``-verify-machineinstrs``), by
``verilocc.hunt.pairs.PairFactory`` (its docstring says how each way works); the pairs of
``verilocc hunt`` are made the same way.

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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, installed or not
from verilocc.hunt.llvm import Llvm  # noqa: E402
from verilocc.hunt.pairs import MODES, PairFactory, PairTask  # noqa: E402
from verilocc.llc.text import read_text, write_if_changed  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
LL_DIR = REPO_ROOT / "tests" / "fixtures" / "llvm-tests" / "ll"
SOURCES = LL_DIR.parent / "SOURCES.tsv"
TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1200")
VERSIONS = ("19", "22")
PAIRS_HEADER = ("llvm", "target", "test", "mode", "status", "pre", "post", "note")


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


# --- making pairs ------------------------------------------------------------------------------

class CorpusMaker(PairFactory):
    """`PairFactory` with the greedy allocator and the machine verifier, writing
    `<llvm>/<target>/<test>.<mode>.{pre,post}.mir`."""

    def __init__(self, out: Path, timeout: float):
        super().__init__(out, timeout, machine_verifier=True)

    def paths(self, task: PairTask) -> tuple[Path, Path]:
        base = self.out / str(task.llvm.version) / task.target
        return base / f"{task.name}.{task.mode}.pre.mir", base / f"{task.name}.{task.mode}.post.mir"

    def make_row(self, task: Task) -> Row:
        outcome = self.make(PairTask(Llvm(int(task.version), task.llc), task.target, "greedy",
                                     LL_DIR / f"{task.test}.ll", task.test, task.mode))
        row = Row(task.version, task.target, task.test, task.mode, outcome.status, note=outcome.note)
        if outcome.pre is not None and outcome.post is not None:
            row.pre, row.post = (str(p.relative_to(self.out)) for p in (outcome.pre, outcome.post))
        return row


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
        for k, (task, row) in enumerate(zip(tasks, pool.map(maker.make_row, tasks)), 1):
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
