"""Making one pre/post register-allocation MIR pair with a given llc: `PairMaker`.

For a job (target, kernel, ``.ll`` file) it writes ``<out>/<target>/<kernel>.pre.mir`` (before
register allocation, every allocatable operand virtual) and ``.post.mir`` (after the last
virtual-register rewriter, before prolog/epilog insertion), made the way
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
line; entries are grouped accordingly (``verilocc.llc.text.drop_unused_vregs``).  Two rounds
suffice in practice; the loop is bounded (``MAX_ROUNDS``).  llc lists a function's fixed stack
objects the other way round each time it reads a file, so a file with any is never its own
re-print: two prints that differ only so (``fixed_stack_named_by_memory``) count as a fixed
point, and the stored pre is the text llc read (the allocation reads the objects, not their
ids).  With llc-19 this reproduces the corpus and ``examples/`` byte for byte.

The instance number N of ``-stop-after=virtregrewriter,N`` is 0-based (the first rewriter
is instance 0) and a number past the last instance makes llc print a later stage without a
warning.  So N is derived, per pair, from the ``-debug-pass=Structure`` listing of the same
llc on the same pre file: N = (number of ``-virtregrewriter`` passes) - 1, cross-checked
against the count of "Virtual Register Rewriter" lines.  LLVM 19 has two rewriters (SGPR
stage, VGPR/AGPR stage), LLVM 20+ a third one for the WWM stage in between.  The post file
must then contain no virtual register in its body; anything else fails the pair.

wave32 (gfx10 and later).  llc's MIR parser rejects the ``implicit $vcc_lo`` operands llc
prints on a few instructions; every llc input is patched for it and the stored files are what
llc printed (``verilocc.llc.wave32``).

File names.  The embedded IR module's ``; ModuleID`` comment is the name of the MIR file
llc read, so llc runs in a temporary directory on ``<kernel>.pre.mir`` (wave64) or
``<kernel>.pre.w32tmp.mir`` (wave32, whether or not anything needed patching; the corpus's
name for the patched copy).

Outputs are written only when their content changes (idempotent; llc is deterministic).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import tempfile
import time
from pathlib import Path

from verilocc.llc.run import Llc, PairError, fail_message
from verilocc.llc.text import (
    declared_vregs, drop_unused_vregs, fixed_stack_named_by_memory, read_text,
    virtual_registers_in_body, write_if_changed,
)
from verilocc.llc.wave32 import WAVE32_VCC_OPCODES, is_wave32, patch_wave32, run_learning_wave32

TRIPLE = "amdgcn-amd-amdhsa"
MAX_ROUNDS = 10


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
