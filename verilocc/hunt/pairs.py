"""Pre/post register-allocation pairs made by any installed llc, two ways.

A pair is the virtual program (before the first instance of the allocator pass) and the
allocated one (after the last `virtregrewriter`; after the last `regallocfast` at -O0), for one
input, one llc, one AMDGPU target and one allocator (`greedy`, `fast`, `basic` in the -O3
pipeline, `fast-O0` in the -O0 one; `verilocc.hunt.llvm`). Two ways to make it:

``one-process``
    Both files come from llc runs on the input IR, without reading MIR back::

        llc -mtriple=T -mcpu=C -O3 [alloc] -stop-before=P in.ll
        llc ... -print-before=P -stop-after=virtregrewriter,N in.ll

    The second run allocates in the same process that built the virtual program, with LLVM's
    in-memory liveness. `-print-before` prints a dump, not MIR, so the pre file is the MIR of
    the first run (the same deterministic pipeline up to P); `compare_dump` checks that the
    dump of the second run (the first P of every function) has the same instructions, opcode by
    opcode and virtual register by virtual register, and fails the pair otherwise.

``reread``
    The pre file normalised to a fixed point of llc's MIR printer, then allocated from that
    text with `-start-before=P -stop-after=virtregrewriter,N`
    (`verilocc.llc.pairs.PairMaker`, which also patches wave32 `$vcc_lo` operands llc
    cannot re-read). An input that is already pre-RA MIR (the fuzzer's programs) is made this
    way only; YAML keys an older llc does not know (`sgprForEXECCopy`, `flags:` of
    `registers:` entries...) are dropped first, one at a time as llc names them.

P is `greedy`, `regallocfast` or `regallocbasic`; N is the 0-based instance of the last
rewriter in `-debug-pass=Structure` of a probe kernel with the same options (the pipeline does
not depend on the function; the whole pipeline on the input itself could stop at an error after
allocation). LLVM's machine verifier (`-verify-machineinstrs`) runs only when asked
(`machine_verifier`): it checks LLVM's own bookkeeping, and an error it finds (the fast allocator
at -O3 leaves slot indexes out of order on LLVM 15) stops llc before it prints the allocation
that verilocc is there to check. LLVM's in-memory liveness can know more than the printed
MIR says, so the two modes can allocate differently; `verilocc.hunt.triage` compares them.

A (version, target, input) the llc cannot compile is an outcome, not an error: `skip` when
the llc does not know the target or the mode does not apply, `fail` with llc's first error
lines. Runs are deterministic and files are written only when their content changes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from verilocc.hunt.llvm import ALLOC_PASS, TRIPLE, Llvm, end_pass, opt_level
from verilocc.llc.pairs import Job, PairMaker, last_rewriter_instance
from verilocc.llc.run import Llc, PairError, fail_message
from verilocc.llc.text import read_text, virtual_registers_in_body, write_if_changed

MODES = ("one-process", "reread")

DUMP_HEADER = re.compile(r"^# Machine code for function (\S+?):")
SLOT_INDEX = re.compile(r"^\d+B\t")
VREG = re.compile(r"%(\d+)\b")
OPCODE = re.compile(r"\b([A-Z][A-Z0-9_]*[A-Z0-9])\b")
IR_TRIPLE = re.compile(r'^\s*target triple = "([^"]+)"', re.M)
RUN_TRIPLE = re.compile(r"RUN:.*\bllc\b.*?-m(?:triple|arch)[= ](amdgcn[-\w]*)")
UNKNOWN_KEY = re.compile(r"YAML:(\d+):(\d+): unknown key '([^']+)'")


def input_triple(text: str) -> str:
    """The triple an input runs under: its IR's, else its first amdgcn llc RUN line's.

    Graphics shader calling conventions (amdgpu_ps, amdgpu_cs, ...) are rejected under
    amdhsa, so the input's own OS matters. Spellings are normalised to the full form; an
    input that names no amdgcn triple runs under amdgcn-amd-amdhsa.
    """
    m = IR_TRIPLE.search(text) or RUN_TRIPLE.search(text)
    name = m.group(1) if m and m.group(1).startswith("amdgcn") else TRIPLE
    for os_name, full in (("amdhsa", "amdgcn-amd-amdhsa"), ("amdpal", "amdgcn-amd-amdpal"),
                          ("mesa3d", "amdgcn-mesa-mesa3d")):
        if os_name in name:
            return full
    return "amdgcn"


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
            raise PairError(f"one-process: function {fn}: pre file and the allocator's input "
                            f"differ at instruction {k} ({len(sigs)} vs {len(seen[fn])} instructions)")


# --- MIR of one LLVM read by an older one ------------------------------------------------------

def drop_yaml_key(text: str, line: int, column: int) -> str | None:
    """`text` without the YAML key that starts at 1-based `line`:`column` (and its value):
    a block-mapping line with its more indented continuation lines, or one `key: value` of a
    flow mapping (`- { id: 0, class: sgpr_32, flags: [  ] }`). None if nothing is there."""
    lines = text.split("\n")
    if not 0 < line <= len(lines):
        return None
    s = lines[line - 1]
    col = column - 1
    if s[:col].strip() == "":  # a block-mapping key: drop it and what is nested under it
        end = line
        while end < len(lines) and lines[end].strip() and lines[end].startswith(" " * (col + 1)):
            end += 1
        return "\n".join(lines[: line - 1] + lines[end:])
    m = re.match(r"[\w-]+:\s*(\[[^\]]*\]|'[^']*'|[^,}]*)\s*", s[col:])
    if m is None:
        return None
    before = s[:col].rstrip()
    after = s[col + m.end():]
    if before.endswith(","):
        before = before[:-1]
    elif after.startswith(","):
        after = after[1:].lstrip()
    lines[line - 1] = (before + " " + after.lstrip()).rstrip() if not after.startswith("}") \
        else before + " " + after
    return "\n".join(lines)


# --- making pairs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairTask:
    llvm: Llvm
    target: str
    allocator: str
    source: Path  # `.ll`, or pre-RA `.mir`
    name: str
    mode: str

    @property
    def is_mir(self) -> bool:
        return self.source.suffix == ".mir"

    @property
    def stem(self) -> Path:
        """`<version>/<target>/<allocator>/<name>.<mode>` (the pair's files add `.pre.mir`, `.post.mir`)."""
        return Path(str(self.llvm.version)) / self.target / self.allocator / f"{self.name}.{self.mode}"


@dataclass
class PairOutcome:
    status: str  # ok | skip | fail
    note: str
    pre: Path | None = None
    post: Path | None = None


class LocalLlc(Llc):
    """An llc that reads `.ll` inputs from its working directory.

    `PairMaker` passes the IR by absolute path, which llc writes into the MIR as
    `source_filename`; a copy under the input's own name keeps the output independent of
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


class HuntPairMaker(PairMaker):
    """`PairMaker` under the input's own triple, any allocator, and files where a hunt keeps them;
    a pre-RA MIR input is read instead of compiled."""

    def __init__(self, llc: Llc, pre: Path, post: Path, triple: str, allocator: str,
                 extra_args: tuple[str, ...], instance: int, mir_source: str | None = None,
                 machine_verifier: bool = False):
        super().__init__(llc, pre.parent, check_replay=False, alloc_pass=ALLOC_PASS[allocator], extra_args=extra_args,
                         machine_verifier=machine_verifier)
        self.opt_level = opt_level(allocator)
        self.end_pass = end_pass(allocator)
        self.triple = triple
        self.paths = (pre, post)
        self.instance = instance
        self.mir_source = mir_source

    def rewriter_instance(self, job: Job, work: Path, name: str, pre: str, opcodes: set[str]) -> int:
        # From a probe kernel (`PairFactory.last_instance`), as for one-process pairs: the
        # whole pipeline on the input itself would stop at a machine-verifier error after
        # allocation, which is not the pair's business.
        return self.instance

    def base_args(self, target: str) -> list[str]:
        return [f"-mtriple={self.triple}", *super().base_args(target)[1:]]

    def output_paths(self, job: Job) -> tuple[Path, Path]:
        return self.paths

    def raw_pre(self, job: Job, work: Path) -> str:
        if self.mir_source is None:
            return super().raw_pre(job, work)
        text = self.mir_source
        for _ in range(50):  # drop the keys this llc does not know, as it names them
            (work / "adapt.mir").write_text(text)
            proc = self.llc.run([*self.base_args(job.target), "-run-pass=none", "adapt.mir", "-o", "adapt.out.mir"],
                                work, "read MIR")
            m = UNKNOWN_KEY.search(proc.stderr)
            if proc.returncode == 0 or m is None:
                return text
            dropped = drop_yaml_key(text, int(m.group(1)), int(m.group(2)))
            if dropped is None or dropped == text:
                raise PairError(fail_message("read MIR", proc))
            text = dropped
        raise PairError("read MIR: too many unknown YAML keys")


class PairFactory:
    """Makes pairs under `out` (`PairTask.stem`); caches what each llc's pipeline looks like."""

    def __init__(self, out: Path, timeout: float, machine_verifier: bool = False):
        self.out = out
        self.timeout = timeout
        self.machine_verifier = machine_verifier
        self._instance: dict[tuple[str, str, str], int] = {}

    def paths(self, task: PairTask) -> tuple[Path, Path]:
        stem = self.out / task.stem
        return stem.with_name(stem.name + ".pre.mir"), stem.with_name(stem.name + ".post.mir")

    def last_instance(self, task: PairTask, llc: Llc, work: Path) -> int:
        """Last instance of the pass that ends allocation in this llc's pipeline for the target
        and allocator (from a tiny kernel: the pass structure does not depend on the function)."""
        key = (task.llvm.llc, task.target, task.allocator)
        if key not in self._instance:
            (work / "probe.ll").write_text("define amdgpu_kernel void @probe() {\n  ret void\n}\n")
            proc = llc.run([f"-mtriple={TRIPLE}", f"-mcpu={task.target}", opt_level(task.allocator),
                            *task.llvm.regalloc_args(task.allocator), "-debug-pass=Structure",
                            "probe.ll", "-o", "probe.s"], work, "pass structure")
            if proc.returncode != 0:
                raise PairError(fail_message("pass structure", proc))
            self._instance[key] = last_rewriter_instance(proc.stderr, *end_pass(task.allocator))
        return self._instance[key]

    def make(self, task: PairTask) -> PairOutcome:
        if task.target not in task.llvm.targets:
            return PairOutcome("skip", f"{task.llvm.name} does not know {task.target}")
        if task.is_mir and task.mode == "one-process":
            return PairOutcome("skip", "a MIR input is allocated from its text only (reread)")
        pre_path, post_path = self.paths(task)
        text = read_text(task.source)
        extra = (*task.llvm.regalloc_args(task.allocator), *task.llvm.ir_args(text))
        llc = Llc(task.llvm.llc, self.timeout)
        try:
            if task.mode == "reread":
                with tempfile.TemporaryDirectory(prefix="verilocc_hunt_") as tmp:
                    instance = self.last_instance(task, llc, Path(tmp))
                maker = HuntPairMaker(LocalLlc(llc.path, llc.timeout), pre_path, post_path, input_triple(text),
                                      task.allocator, extra, instance, text if task.is_mir else None,
                                      self.machine_verifier)
                res = maker.make(Job(task.target, f"{task.name}.reread", task.source))
                if not res.ok:
                    raise PairError(res.message)
                note = re.sub(r"; (written|unchanged)$", "", res.message)
            else:
                with tempfile.TemporaryDirectory(prefix="verilocc_hunt_") as tmp:
                    note = self.one_process(task, llc, Path(tmp), extra, pre_path, post_path)
        except PairError as e:
            return PairOutcome("fail", str(e))
        return PairOutcome("ok", note, pre_path, post_path)

    def one_process(self, task: PairTask, llc: Llc, work: Path, extra: tuple[str, ...],
                    pre_path: Path, post_path: Path) -> str:
        instance = self.last_instance(task, llc, work)
        # The ModuleID of the embedded IR is the input's name: keep it the input's name.
        ll = work / task.source.name
        shutil.copyfile(task.source, ll)
        alloc, end = ALLOC_PASS[task.allocator], end_pass(task.allocator)[0]
        base = [f"-mtriple={input_triple(read_text(ll))}", f"-mcpu={task.target}", opt_level(task.allocator),
                *(["-verify-machineinstrs"] if self.machine_verifier else []), *extra]
        proc = llc.run([*base, f"-stop-before={alloc}", ll.name, "-o", "pre.mir"], work, "pre")
        if proc.returncode != 0:
            raise PairError(fail_message("pre", proc))
        proc = llc.run([*base, f"-print-before={alloc}", f"-stop-after={end},{instance}",
                        ll.name, "-o", "post.mir"], work, "post")
        if proc.returncode != 0:
            raise PairError(fail_message("post", proc))
        pre, post = read_text(work / "pre.mir"), read_text(work / "post.mir")
        if not mir_functions(pre):  # amdgpu-remove-incompatible-functions may drop every one
            raise PairError("pre: llc printed no machine function")
        vregs = virtual_registers_in_body(post)
        if vregs:
            line, reg = vregs[0]
            raise PairError(f"post ({end},{instance}) still has {len(vregs)} virtual "
                            f"register operands, first {reg} on line {line}")
        compare_dump(pre, proc.stderr)
        write_if_changed(pre_path, pre)
        write_if_changed(post_path, post)
        return f"post {end},{instance}; pre matches the allocator's input"
