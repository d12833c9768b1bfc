"""Make pre/post register-allocation MIR pairs with a given llc.

For every ``<corpus>/<target>/<kernel>.ll`` this writes ``<out>/<target>/<kernel>.pre.mir``
(before register allocation, every allocatable operand virtual) and ``.post.mir`` (after the
last virtual-register rewriter, before prolog/epilog insertion), made the way
``examples/README.md`` describes, so that the stored post is exactly what ``llc``
prints when it re-runs allocation from the stored pre.  Standard library only.

Steps for one pair (target T, instance number N)::

    llc -mtriple=amdgcn-amd-amdhsa -mcpu=T -O3 -verify-machineinstrs -stop-before=greedy k.ll
    repeat: drop unused virtual-register declarations, re-print with -run-pass=none
            until llc prints its input back unchanged                     -> stored pre
    llc ... -start-before=greedy -debug-pass=Structure  (count the rewriters -> N)
    llc ... -start-before=greedy -stop-after=virtregrewriter,N          -> stored post

Why normalise the pre file.  Reading MIR back is not the identity: the embedded IR module
is re-printed (the ModuleID becomes the file name, attribute groups change), and virtual
registers are numbered afresh, densely, in the order the parser creates them (declared
ones first, in order), so a missing declaration shifts every later number.  The greedy
allocator breaks ties by register number, so what llc allocates in one run from IR is in
general not what it allocates from a re-read pre file.  The stored pre must therefore be a text that llc reads back as
itself, a fixed point of (drop unused declarations, parse, print), and the post is
computed from exactly that text.  Unused declarations (registers mentioned nowhere
outside ``registers:``) are dropped: llc keeps them and their
numbers otherwise.  A ``preferred-register`` hint naming a dropped register is cleared to
``''`` (the parser rejects a dangling one; an unused register is never assigned, so its
hint never guided the allocator).  LLVM 22 wraps long ``registers:`` entries onto a second
line; entries are grouped accordingly.  Two rounds suffice in practice; the loop is
bounded (``MAX_ROUNDS``).  llc lists a function's fixed stack objects the other way round each
time it reads a file, so a file with any is never its own re-print: two prints that differ only
so (``fixed_stack_named_by_memory``) count as a fixed point, and the stored pre is the text llc
read (the allocation reads the objects, not their ids).  With llc-19 this reproduces the corpus and ``examples/`` byte for byte.

The instance number N of ``-stop-after=virtregrewriter,N`` is 0-based (the first rewriter
is instance 0) and a number past the last instance makes llc print a later stage without a
warning.  So N is derived, per pair, from the ``-debug-pass=Structure`` listing of the same
llc on the same pre file: N = (number of ``-virtregrewriter`` passes) - 1, cross-checked
against the count of "Virtual Register Rewriter" lines.  LLVM 19 has two rewriters (SGPR
stage, VGPR/AGPR stage), LLVM 20+ a third one for the WWM stage in between.  The post file
must then contain no virtual register in its body; anything else fails the pair.

wave32 (gfx10 and later).  llc prints the implicit VCC operand of S_CBRANCH_VCCZ,
S_CBRANCH_VCCNZ and V_DIV_FMAS_* as ``implicit $vcc_lo``, and its MIR parser rejects that
("missing implicit register operand 'implicit $vcc'").  Only the temporary llc input is
patched: on those instructions, and only on implicit operands, ``$vcc_lo`` becomes ``$vcc``
(flags such as ``killed`` kept).  llc re-prints them as ``$vcc_lo`` (it fixes the implicit
operands of wave32 instructions when it creates them), so:

* the stored pre file is exactly what llc printed: the last re-print of the fixed-point
  loop, whose patched form is also the input of that same re-print;
* the stored post file is exactly what llc printed when allocating from the patched form
  of that stored pre file, which has the same lines and differs only in those implicit
  operands (asserted: same line count, each changed line turns back into the stored line
  by replacing ``$vcc`` with ``$vcc_lo`` in its implicit operands).

So the pair corresponds instruction by instruction, and re-running allocation from the
stored pre (patched the same way) reproduces the stored post byte for byte.  If the parser
rejects another instruction's ``$vcc_lo`` implicit operand, its opcode is added to the set
for that pair and the pair is retried; the summary line names it.

File names.  The embedded IR module's ``; ModuleID`` comment is the name of the MIR file
llc read, so llc runs in a temporary directory on ``<kernel>.pre.mir`` (wave64) or
``<kernel>.pre.w32tmp.mir`` (wave32, whether or not anything needed patching; the corpus's
name for the patched copy).

Outputs are written only when their content changes (idempotent; llc is deterministic).
Exit status: 0 when every pair was made, 1 when any failed (they are named), 2 on usage
errors.

IR from HIP (``--hip DIR --clang CLANG``).  Instead of reading the corpus's ``.ll`` files
(made by clang-19, whose IR older llc versions cannot parse), compile the kernels of
``DIR/manifest.txt`` (or ``--manifest FILE``) with the given clang first::

    cd DIR && CLANG -x hip --cuda-device-only --offload-arch=T -nogpulib -nogpuinc
              -fuse-cuid=none -O3 [manifest -D flags] -include verilocc/llm/data/hip_compat.h
              -S -emit-llvm k.hip -o <ll-dir>/T/<kernel>.ll

``hip_compat.h`` stands in for two builtins clang 15/16 lack and is a no-op for clang 19+.
A manifest line's target keywords select among the requested ``--targets``: ``all`` every
one, ``mfma`` those with MFMA (gfx908, gfx90a, gfx94x, gfx950), ``wmma`` gfx11; an explicit
target name only itself.  The pairs are then made from those ``.ll`` files, written to
``--ll-dir`` (default ``<out>/ll``; other files there are ignored).

The command line is ``scripts/llc_corpus.py`` (or ``python -m verilocc.llm.llc_pairs``);
``verilocc dataset build`` runs it too. Example::

    python3 scripts/llc_corpus.py --llc llc-22 --corpus ../shared/corpus --out /tmp/llc22 -j 4
    python3 scripts/llc_corpus.py --llc llc-19 --corpus ../shared/corpus --out /tmp/llc19 \\
        --targets gfx1100 --kernels 'fa_*'
    python3 scripts/llc_corpus.py --llc llc-19 --hip examples/kernels --clang clang-19 --out /tmp/examples
    python3 scripts/llc_corpus.py --llc llc-15 --hip ../shared/kernels --clang clang-15 \
        --targets gfx908,gfx90a,gfx940,gfx1030,gfx1100 --out /tmp/llc15

The module is longer than most: every quirk of llc's MIR round trip it works around is
explained where it is handled, and they must be applied in one order.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_TARGETS = ("gfx90a", "gfx942", "gfx1100")
TRIPLE = "amdgcn-amd-amdhsa"
MAX_ROUNDS = 10

# Instructions whose MCInstrDesc lists VCC as implicit operand; llc prints it as `$vcc_lo`
# in wave32 but its MIR parser wants `$vcc` (seen with LLVM 19 and 22).
WAVE32_VCC_OPCODES = frozenset(
    {"S_CBRANCH_VCCZ", "S_CBRANCH_VCCNZ", "V_DIV_FMAS_F32_e64", "V_DIV_FMAS_F64_e64"}
)
_FLAG = r"(?:killed|dead|undef|internal|renamable|early-clobber|debug-use|implicit)"
IMPLICIT_VCC_LO = re.compile(rf"\b(implicit(?:-def)?(?: {_FLAG})*) \$vcc_lo\b")
IMPLICIT_VCC = re.compile(rf"\b(implicit(?:-def)?(?: {_FLAG})*) \$vcc\b")
MISSING_IMPLICIT = re.compile(
    r":(\d+):\d+: missing implicit register operand '(?:implicit|implicit-def) \$vcc'"
)
OPCODE = re.compile(r"\b([A-Z][A-Za-z0-9_]*)\b")
VREG_REF = re.compile(r"%(\d+)\b")
HINT = re.compile(r"preferred-register: '%(\d+)'")
DECLARATION = re.compile(r"^  - \{ id: \d+, class: ")
REG_ENTRY = re.compile(r"^- \{ id: (\d+),.*\}$")


class PairError(Exception):
    """A pair could not be made; the message says which step and why."""


@dataclasses.dataclass(frozen=True)
class Job:
    target: str
    kernel: str
    ll: Path


@dataclasses.dataclass
class PairResult:
    job: Job
    ok: bool
    message: str
    instance: int | None = None
    seconds: float = 0.0


@dataclasses.dataclass(frozen=True)
class Llc:
    path: str
    timeout: float

    def run(self, args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
        cmd = [self.path, *args]
        try:
            proc = subprocess.run(
                cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                timeout=self.timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise PairError(f"{what}: llc timed out after {self.timeout:.0f}s") from None
        return proc


ERROR_LINE = re.compile(r"error|Bad machine code|LLVM ERROR|Assertion|UNREACHABLE|- (function|instruction|operand):")


def fail_message(what: str, proc: subprocess.CompletedProcess[str]) -> str:
    """The step, llc's exit code and its first error lines (the first lines when none says error:
    a dump printed before the error is not what went wrong)."""
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ERROR_LINE.search(ln)]
    if proc.returncode < 0 and not errors:  # a crash: its stack dump says where, not why
        return f"{what}: llc crashed (signal {-proc.returncode})"
    return f"{what}: llc exited {proc.returncode}: " + " | ".join((errors or lines)[:6])


# --- MIR text helpers ------------------------------------------------------------------------

def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def write_if_changed(path: Path, text: str) -> bool:
    data = text.encode("utf-8", errors="surrogateescape")
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def function_documents(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) line ranges of the machine-function YAML documents (`name:` first)."""
    starts = [i for i, ln in enumerate(lines) if ln == "---" or ln.startswith("--- ")]
    docs = []
    for k, s in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        for j in range(s + 1, end):
            if lines[j] == "...":
                end = j
                break
        if s + 1 < end and lines[s + 1].startswith("name:"):
            docs.append((s + 1, end))
    return docs


def body_line_numbers(lines: list[str]) -> list[int]:
    """Indices of the lines inside the `body: |` blocks of all machine functions."""
    out: list[int] = []
    for start, end in function_documents(lines):
        inside = False
        for i in range(start, end):
            if lines[i].startswith("body:"):
                inside = True
                continue
            if inside:
                if lines[i] and not lines[i].startswith(" "):
                    inside = False
                else:
                    out.append(i)
    return out


_FIXED_ENTRY = re.compile(r"^  - \{ id: (\d+), (.*)$")
_FIXED_REF = re.compile(r"%fixed-stack\.(\d+)(?!\d)")


def fixed_stack_named_by_memory(text: str) -> str:
    """`text` with each function's fixed stack objects listed in one order and called by what
    they describe (every field but the id; duplicates alike): llc lists them the other way
    round each time it reads a file, so two prints that differ only so are equal here."""
    lines = text.split("\n")
    out: list[str] = []
    done = 0
    for start, end in function_documents(lines):
        at = next((i for i in range(start, end) if lines[i] == "fixedStack:"), None)
        if at is None:
            continue
        described: dict[int, str] = {}  # id -> the entry without it, its continuation lines joined
        i = at + 1
        while i < end and (m := _FIXED_ENTRY.match(lines[i])) is not None:
            entry = [m.group(2)]
            while not entry[-1].rstrip().endswith("}") and i + 1 < end:
                i += 1
                entry.append(lines[i].strip())
            described[int(m.group(1))] = " ".join(entry)
            i += 1
        order = sorted(set(described.values()))
        name = {old: order.index(d) for old, d in described.items()}

        def rename(m: re.Match[str]) -> str:
            return f"%fixed-stack.m{name.get(int(m.group(1)), m.group(1))}"
        out += lines[done:start]
        out += [_FIXED_REF.sub(rename, ln) for ln in lines[start:at + 1]]
        out += sorted(described.values())
        out += [_FIXED_REF.sub(rename, ln) for ln in lines[i:end]]
        done = end
    return "\n".join(out + lines[done:])


def drop_unused_vregs(text: str) -> tuple[str, int, int]:
    """Remove `registers:` entries whose `%N` the function does not otherwise mention.

    Returns the new text, the number of entries dropped and of hints cleared.
    """
    lines = text.split("\n")
    drop: set[int] = set()
    dropped = cleared = 0
    for start, end in function_documents(lines):
        # Entries are YAML flow mappings, one per `  - { id: N, ... }` item; LLVM 22 wraps
        # long ones onto a continuation line (`      flags: [  ] }`).
        entries: dict[int, tuple[int, list[int]]] = {}  # first line -> (id, all its lines)
        i = start
        while i < end and not lines[i].startswith("registers:"):
            i += 1
        if i == end or lines[i].rstrip().endswith("[]"):
            continue
        j = i + 1
        well_formed = True
        while j < end and lines[j].startswith(" "):
            first = j
            while not lines[j].rstrip().endswith("}") and j + 1 < end \
                    and lines[j + 1].startswith("    "):
                j += 1
            m = REG_ENTRY.match(" ".join(lines[k].strip() for k in range(first, j + 1)))
            if m:
                entries[first] = (int(m.group(1)), list(range(first, j + 1)))
            else:
                well_formed = False  # an entry llc printed differently: leave it alone
            j += 1
        if not well_formed:
            continue
        reg_lines = {k for _, ks in entries.values() for k in ks}
        # Used: mentioned outside `registers:` (body, liveins, frame and function info).
        # A hint (`preferred-register: '%M'`) does not make %M used; a hint to a dropped
        # register is cleared (the parser rejects a dangling one, and a hint to a register
        # without a live range never guides the allocator).
        used: set[int] = set()
        for k in range(start, end):
            if k not in reg_lines:
                used.update(int(x) for x in VREG_REF.findall(lines[k]))
        for rid, ks in entries.values():
            if rid not in used:
                drop.update(ks)
                dropped += 1
                continue
            for k in ks:
                m = HINT.search(lines[k])
                if m and int(m.group(1)) not in used:
                    lines[k] = (lines[k][: m.start()] + "preferred-register: ''"
                                + lines[k][m.end():])
                    cleared += 1
    if not drop and not cleared:
        return text, 0, 0
    kept = "\n".join(ln for k, ln in enumerate(lines) if k not in drop)
    return kept, dropped, cleared


def opcode_of(line: str) -> str | None:
    code = line.split(" :: ", 1)[0]
    if " = " in code:
        code = code.split(" = ", 1)[1]
    m = OPCODE.search(code)
    return m.group(1) if m else None


def patch_wave32(text: str, opcodes: frozenset[str]) -> tuple[str, list[str]]:
    """`implicit $vcc_lo` -> `implicit $vcc` on body lines of `opcodes`; returns the opcodes hit."""
    lines = text.split("\n")
    hits: list[str] = []
    for i in body_line_numbers(lines):
        if "$vcc_lo" not in lines[i]:
            continue
        op = opcode_of(lines[i])
        if op in opcodes:
            new = IMPLICIT_VCC_LO.sub(r"\1 $vcc", lines[i])
            if new != lines[i]:
                lines[i] = new
                hits.append(op)
    return "\n".join(lines), hits


def run_learning_wave32(text: str, opcodes: set[str],
                        run: Callable[[str], subprocess.CompletedProcess[str]]) -> subprocess.CompletedProcess[str]:
    """`run(patched text)` until llc's MIR parser no longer asks for `$vcc` where the text has
    `$vcc_lo` (`patch_wave32`): each such error adds its line's opcode to `opcodes` (which the
    caller keeps) and runs again. The last run's result, successful or not."""
    while True:
        patched, _ = patch_wave32(text, frozenset(opcodes))
        check_patch_only_vcc(text, patched)
        proc = run(patched)
        m = MISSING_IMPLICIT.search(proc.stderr) if proc.returncode != 0 else None
        if m is None:
            return proc
        ln = patched.split("\n")[int(m.group(1)) - 1]
        op = opcode_of(ln)
        if not op or op in opcodes or not IMPLICIT_VCC_LO.search(ln):
            return proc
        opcodes.add(op)


def check_patch_only_vcc(stored: str, patched: str) -> None:
    """The llc input differs from the stored text only in implicit `$vcc_lo` -> `$vcc`."""
    a, b = stored.split("\n"), patched.split("\n")
    if len(a) != len(b):
        raise PairError("internal: patched input has a different line count")
    for x, y in zip(a, b):
        if x != y and IMPLICIT_VCC.sub(r"\1 $vcc_lo", y) != x:
            raise PairError(f"internal: patched line differs beyond implicit vcc: {y.strip()}")


def virtual_registers_in_body(text: str) -> list[tuple[int, str]]:
    lines = text.split("\n")
    found = []
    for i in body_line_numbers(lines):
        for m in re.finditer(r"%[0-9]+", lines[i]):
            found.append((i + 1, m.group(0)))
    return found


def declared_vregs(text: str) -> int:
    return sum(1 for ln in text.split("\n") if DECLARATION.match(ln))


def is_wave32(ll_text: str, target: str) -> bool:
    if "+wavefrontsize32" in ll_text:
        return True
    if "+wavefrontsize64" in ll_text:
        return False
    m = re.match(r"gfx(\d+)", target)
    return m is not None and len(m.group(1)) >= 4 and int(m.group(1)[:-2]) >= 10


# --- the pipeline for one pair ---------------------------------------------------------------

def last_rewriter_instance(structure: str, arg: str = "virtregrewriter",
                           name: str = "Virtual Register Rewriter") -> int:
    """0-based number of the last `virtregrewriter` (or of the pass `arg` called `name`) in a
    -debug-pass=Structure listing."""
    by_arg = sum(ln.split().count(f"-{arg}")
                 for ln in structure.splitlines() if ln.startswith("Pass Arguments:"))
    by_name = sum(1 for ln in structure.splitlines() if ln.strip() == name)
    if by_arg == 0 or by_arg != by_name:
        raise PairError(f"cannot derive the instance of {arg}: {by_arg} '-{arg}' pass "
                        f"arguments, {by_name} '{name}' passes")
    return by_arg - 1


class PairMaker:
    """Makes one pair per `Job`. `alloc_pass` is the allocator pass the pair starts before
    (`greedy`; `regallocfast` or `regallocbasic` with `extra_args` choosing that allocator);
    `extra_args` go on every llc command line; `machine_verifier` runs LLVM's machine verifier
    after every pass (`-verify-machineinstrs`)."""

    def __init__(self, llc: Llc, out: Path, check_replay: bool, alloc_pass: str = "greedy",
                 extra_args: tuple[str, ...] = (), machine_verifier: bool = True):
        self.llc = llc
        self.out = out
        self.check_replay = check_replay
        self.alloc_pass = alloc_pass
        self.extra_args = extra_args
        self.machine_verifier = machine_verifier
        self.opt_level = "-O3"
        self.end_pass = ("virtregrewriter", "Virtual Register Rewriter")  # allocation is over after it

    def base_args(self, target: str) -> list[str]:
        return [f"-mtriple={TRIPLE}", f"-mcpu={target}", self.opt_level,
                *(["-verify-machineinstrs"] if self.machine_verifier else []), *self.extra_args]

    def output_paths(self, job: Job) -> tuple[Path, Path]:
        """Where the pair of `job` is written: `<out>/<target>/<kernel>.{pre,post}.mir`."""
        base = self.out / job.target
        return base / f"{job.kernel}.pre.mir", base / f"{job.kernel}.post.mir"

    def rewriter_instance(self, job: Job, work: Path, name: str, pre: str, opcodes: set[str]) -> int:
        """The last rewriter instance of this llc's pass structure on this input.  The assembly
        it writes is thrown away (not -filetype=null: llc-15 crashes with it)."""
        proc, _ = self.run_on_mir(job, work, name, pre,
                                  [f"-start-before={self.alloc_pass}", "-debug-pass=Structure"],
                                  opcodes, "pass structure")
        return last_rewriter_instance(proc.stderr, *self.end_pass)

    def raw_pre(self, job: Job, work: Path) -> str:
        """The virtual program as llc prints it before the first allocator pass."""
        proc = self.llc.run([*self.base_args(job.target), f"-stop-before={self.alloc_pass}",
                             str(job.ll.resolve()), "-o", "raw.pre.mir"], work, "pre")
        if proc.returncode != 0:
            raise PairError(fail_message("pre", proc))
        return read_text(work / "raw.pre.mir")

    def run_on_mir(self, job: Job, work: Path, name: str, text: str, extra: list[str],
                   opcodes: set[str], what: str) -> tuple[subprocess.CompletedProcess[str], str]:
        """Run llc on the patched `text` saved as `work/name`; learn parser-rejected opcodes."""
        out = work / "out.mir"

        def run(patched: str) -> subprocess.CompletedProcess[str]:
            (work / name).write_bytes(patched.encode("utf-8", errors="surrogateescape"))
            out.unlink(missing_ok=True)
            return self.llc.run([*self.base_args(job.target), *extra, name, "-o", out.name], work, what)

        proc = run_learning_wave32(text, opcodes, run)
        if proc.returncode != 0:
            raise PairError(fail_message(what, proc))
        return proc, read_text(out) if out.exists() else ""

    def make(self, job: Job) -> PairResult:
        t0 = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="llc_corpus_") as tmp:
                msg, instance = self._make(job, Path(tmp))
            return PairResult(job, True, msg, instance, time.monotonic() - t0)
        except PairError as e:
            return PairResult(job, False, str(e), None, time.monotonic() - t0)

    def _make(self, job: Job, work: Path) -> tuple[str, int]:
        ll_text = read_text(job.ll)
        wave32 = is_wave32(ll_text, job.target)
        name = f"{job.kernel}.pre.w32tmp.mir" if wave32 else f"{job.kernel}.pre.mir"
        opcodes = set(WAVE32_VCC_OPCODES) if wave32 else set()

        # 1. Stop before the first greedy allocator.
        cur = self.raw_pre(job, work)

        # 2. Normalise to a fixed point of (drop unused declarations, parse, print).
        dropped_total = cleared_total = 0
        for rounds in range(1, MAX_ROUNDS + 1):
            cand, dropped, cleared = drop_unused_vregs(cur)
            dropped_total += dropped
            cleared_total += cleared
            _, printed = self.run_on_mir(job, work, name, cand, ["-run-pass=none"], opcodes,
                                         f"normalise round {rounds}")
            if printed == cand:
                pre = printed
                break
            if fixed_stack_named_by_memory(printed) == fixed_stack_named_by_memory(cand):
                # Only the fixed stack objects are listed the other way round: llc does that on
                # every read, so no text is its own re-print. The allocation reads the objects,
                # not their ids: the stored pre is the text llc read, and the post is computed from it.
                pre = cand
                break
            cur = printed
        else:
            raise PairError(f"pre file did not reach a fixed point in {MAX_ROUNDS} rounds")
        if declared_vregs(pre) == 0:
            raise PairError("pre file declares no virtual registers")

        # 3. The last rewriter instance, from this llc's pass structure.
        instance = self.rewriter_instance(job, work, name, pre, opcodes)

        # 4. Allocate.
        stop = [f"-start-before={self.alloc_pass}", f"-stop-after={self.end_pass[0]},{instance}"]
        _, post = self.run_on_mir(job, work, name, pre, stop, opcodes, "post")
        vregs = virtual_registers_in_body(post)
        if vregs:
            line, reg = vregs[0]
            raise PairError(f"post ({self.end_pass[0]},{instance}) still has {len(vregs)} virtual "
                            f"register operands, first {reg} on line {line}")
        if self.check_replay:
            _, again = self.run_on_mir(job, work, name, pre, stop, opcodes, "replay")
            if again != post:
                raise PairError("replaying allocation from the pre file gave a different post")

        _, hits = patch_wave32(pre, frozenset(opcodes))
        pre_path, post_path = self.output_paths(job)
        written = [write_if_changed(pre_path, pre), write_if_changed(post_path, post)]
        spills = sum(1 for ln in post.split("\n") if re.search(r"\bSI_(SPILL|RESTORE)_", ln))
        counts: dict[str, int] = {}
        for h in hits:
            counts[h] = counts.get(h, 0) + 1
        patch = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "none"
        new_ops = sorted(opcodes - WAVE32_VCC_OPCODES)
        msg = (f"{declared_vregs(pre)} vregs, {rounds} rounds, {dropped_total} unused dropped, "
               f"{cleared_total} hints cleared; "
               f"post {self.end_pass[0]},{instance}, {spills} spill/restore lines; "
               f"{'wave32' if wave32 else 'wave64'} vcc patch: {patch}"
               + (f" (learned {', '.join(new_ops)})" if new_ops else "")
               + ("; written" if any(written) else "; unchanged"))
        return msg, instance


# --- IR from HIP sources ----------------------------------------------------------------------

HIP_COMPAT = Path(__file__).resolve().parent / "data" / "hip_compat.h"


def target_matches(keyword: str, target: str) -> bool:
    """Does a manifest target keyword (all, mfma, wmma or a name) select `target`?"""
    if keyword == "all":
        return True
    if keyword == "mfma":
        return target in ("gfx908", "gfx90a", "gfx950") or target.startswith("gfx94")
    if keyword == "wmma":
        return re.fullmatch(r"gfx11\d\d", target) is not None
    return keyword == target


def read_manifest(path: Path) -> list[tuple[str, str, list[str], list[str]]]:
    """(kernel, source, target keywords, clang flags) per line of a kernel manifest."""
    out = []
    for raw in read_text(path).splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, source, targets, *flags = line.split()
            out.append((name, source, targets.split(","), flags))
    return out


def compile_hip(clang: str, hip: Path, manifest: Path, targets: list[str], kernels: list[str] | None,
                ll_dir: Path, timeout: float) -> tuple[list[Job], list[str]]:
    """Compile the manifest's kernels into `ll_dir/<target>/<kernel>.ll`.

    Returns the jobs for the compiled kernels (only those: other `.ll` files in `ll_dir` are
    not picked up) and the `<target>/<kernel>` names clang failed on.
    """
    jobs: list[Job] = []
    failed: list[str] = []
    for name, source, keywords, flags in read_manifest(manifest):
        if kernels is not None and not any(fnmatch.fnmatchcase(name, k) for k in kernels):
            continue
        for target in targets:
            if not any(target_matches(k, target) for k in keywords):
                continue
            with tempfile.TemporaryDirectory(prefix="llc_corpus_clang_") as tmp:
                out = Path(tmp) / "k.ll"
                cmd = [clang, "-x", "hip", "--cuda-device-only", f"--offload-arch={target}",
                       "-nogpulib", "-nogpuinc", "-fuse-cuid=none", "-O3", *flags,
                       "-include", str(HIP_COMPAT), "-S", "-emit-llvm", source, "-o", str(out)]
                try:
                    proc = subprocess.run(cmd, cwd=hip, capture_output=True, text=True,
                                          errors="replace", timeout=timeout, check=False)
                    ok = proc.returncode == 0 and out.exists()
                    why = " | ".join([ln for ln in proc.stderr.splitlines()
                                      if "error" in ln][:3])
                except subprocess.TimeoutExpired:
                    ok, why = False, f"timed out after {timeout:.0f}s"
                if ok:
                    ll = ll_dir / target / f"{name}.ll"
                    write_if_changed(ll, read_text(out))
                    jobs.append(Job(target, name, ll))
                else:
                    failed.append(f"{target}/{name}")
                    print(f"FAIL clang {target}/{name}: {why}", flush=True)
    order = {t: k for k, t in enumerate(targets)}
    return sorted(jobs, key=lambda j: (order[j.target], j.kernel)), failed


# --- command line ----------------------------------------------------------------------------

def llc_version(llc: str) -> str:
    try:
        out = subprocess.run([llc, "--version"], capture_output=True, text=True,
                             check=False, timeout=60).stdout
    except OSError as e:
        raise SystemExit(f"error: cannot run {llc}: {e}") from None
    m = re.search(r"(?:LLVM|clang) version (\S+)", out)
    return m.group(1) if m else "unknown"


def find_jobs(corpus: Path, targets: list[str], kernels: list[str] | None) -> list[Job]:
    jobs = []
    for target in targets:
        tdir = corpus / target
        if not tdir.is_dir():
            raise SystemExit(f"error: no directory {tdir}")
        for ll in sorted(tdir.glob("*.ll")):
            kernel = ll.name[: -len(".ll")]
            if kernels is None or any(fnmatch.fnmatchcase(kernel, k) for k in kernels):
                jobs.append(Job(target, kernel, ll))
    return jobs


def split_list(s: str | None) -> list[str] | None:
    return None if s is None else [x for x in (p.strip() for p in s.split(",")) if x]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Make pre/post register-allocation MIR pairs with llc, from LLVM IR or HIP sources.")
    ap.add_argument("--llc", required=True, help="llc to use (path or name on PATH)")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="corpus directory with <target>/<kernel>.ll (or --hip)")
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                    help="comma-separated targets (default %(default)s)")
    ap.add_argument("--kernels", default=None,
                    help="comma-separated kernel names or shell patterns (default: all)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="pairs made in parallel (default 2)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per llc call")
    ap.add_argument("--check-replay", action="store_true",
                    help="allocate twice from the stored pre text and require identical posts")
    ap.add_argument("--hip", type=Path, default=None, metavar="DIR",
                    help="compile the HIP kernels of DIR/<manifest> with --clang first and make "
                         "the pairs from that IR instead of --corpus")
    ap.add_argument("--clang", default=None, help="clang for --hip (path or name on PATH)")
    ap.add_argument("--manifest", default="manifest.txt",
                    help="kernel manifest: a file name in the --hip directory or a path with a "
                         "'/' (sources are always taken from --hip; default %(default)s)")
    ap.add_argument("--ll-dir", type=Path, default=None,
                    help="where --hip writes <target>/<kernel>.ll (default <out>/ll)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("-j must be at least 1")
    if (args.hip is None) != (args.clang is None):
        ap.error("--hip and --clang go together")
    if (args.hip is None) == (args.corpus is None):
        ap.error("give either --corpus DIR (its .ll files) or --hip DIR --clang CLANG")

    llc_path = shutil.which(args.llc) or args.llc
    version = llc_version(llc_path)
    targets = split_list(args.targets) or []
    clang_failed: list[str] = []
    jobs: list[Job]
    if args.hip is not None:
        clang_path = shutil.which(args.clang) or args.clang
        ll_dir = args.ll_dir or args.out / "ll"
        manifest = Path(args.manifest) if "/" in args.manifest else args.hip / args.manifest
        if not manifest.is_file():
            ap.error(f"no manifest {manifest}")
        print(f"clang {clang_path} ({llc_version(clang_path)}); kernels of "
              f"{manifest} into {ll_dir}", flush=True)
        jobs, clang_failed = compile_hip(clang_path, args.hip.resolve(), manifest.resolve(),
                                         targets, split_list(args.kernels), ll_dir.resolve(),
                                         args.timeout)
        args.corpus = ll_dir
    else:
        jobs = find_jobs(args.corpus, targets, split_list(args.kernels))
    if not jobs:
        print("error: no kernel matched", file=sys.stderr)
        return 1
    print(f"llc {llc_path} (LLVM {version}); {len(jobs)} pairs from {args.corpus} "
          f"into {args.out}; -j {args.jobs}", flush=True)

    maker = PairMaker(Llc(llc_path, args.timeout), args.out, args.check_replay)
    t0 = time.monotonic()
    results: list[PairResult] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(maker.make, job) for job in jobs]
        for fut in futures:  # submission order: deterministic output
            r = fut.result()
            results.append(r)
            status = "ok  " if r.ok else "FAIL"
            print(f"{status} {r.job.target}/{r.job.kernel}: {r.message} [{r.seconds:.1f}s]",
                  flush=True)

    failed = [r for r in results if not r.ok]
    instances = sorted({r.instance for r in results if r.instance is not None})
    print(f"{len(results) - len(failed)} of {len(results)} pairs made, {len(failed)} failed; "
          f"last virtregrewriter instance {', '.join(map(str, instances)) or '-'}; "
          f"{time.monotonic() - t0:.1f}s")
    for r in failed:
        print(f"failed: {r.job.target}/{r.job.kernel}", file=sys.stderr)
    for name in clang_failed:
        print(f"failed (clang): {name}", file=sys.stderr)
    return 1 if failed or clang_failed else 0


if __name__ == "__main__":
    sys.exit(main())
