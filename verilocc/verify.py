"""`verilocc verify`: read the inputs, run the layers, collect one report.

Data flow: MIR text -> parse -> (materialise an assignment) -> target -> analyses ->
layer 1 constraints (SMT) -> layer 2 value flow -> layer 3 equivalence -> findings -> report.
A function is VERIFIED only when every layer ran and proved its part; a layer that could not
decide leaves an "unknown" finding and the verdict UNKNOWN.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verilocc import __version__
from verilocc.pairing.alignment import FunctionAlignment, align_functions
from verilocc.pairing.fixed_objects import with_fixed_objects_named
from verilocc.pairing.blocks import pair_blocks, renumbered, renumbering_note
from verilocc.analysis.calls import call_mask, expand_calls, sgpr_striped
from verilocc.analysis.cfg import CFG, build_cfg
from verilocc.analysis.executed import executed
from verilocc.analysis.instructions import is_spill_code
from verilocc.analysis.liveness import compute_liveness
from verilocc.analysis.operands import VReg, check_header_registers, resolve_operand, slot_mask, vreg_classes
from verilocc.analysis.undefined import undefined_reads
from verilocc.errors import InputError, TargetError
from verilocc.findings import LAYERS, Finding, FunctionResult, Place, Report, Verdict
from verilocc.mir.as_read import as_llc_reads
from verilocc.mir.model import Function, Module
from verilocc.mir.parser import read_module
from verilocc.semantics.calleesaved import CalleeSavedChecker
from verilocc.semantics.anomalies import Anomaly
from verilocc.semantics.valueflow import ValueFlowChecker
from verilocc.smt.constraints import ConstraintChecker
from verilocc.smt.physical import post_only_checks
from verilocc.smt.solver import forking_pays
from verilocc.target import RegisterClass, Target, slots_to_mask, target_for_function

if TYPE_CHECKING:
    from verilocc.semantics.equivalence import EquivalenceChecker


@dataclass(frozen=True)
class Options:
    mcpu: str | None = None
    layers: tuple[str, ...] = LAYERS
    timeout_s: float = 60.0
    seed: int = 0
    certify: bool = False  # keep the proof obligations of a VERIFIED function (--certificate)
    # --certificate-full: layer 2's per-block obligations also where the witness covers the function
    certify_full: bool = False
    # Layer 1 of a large function in a child process beside layers 2 and 3 (`Layer1`); only
    # for a caller that runs no other threads (the command line), where fork is safe.
    fork: bool = False


def function_target(fn: Function, mcpu: str | None, where: str) -> Target:
    """The target of `fn` (`--mcpu` or its target-cpu, `target_for_function`), or an
    InputError at the function (at `--mcpu` when that names no target)."""
    name = mcpu or fn.target_cpu
    if not name:
        raise InputError(
            f"function '{fn.name}' names no target-cpu; pass --mcpu", where, fn.line + 1, 1
        )
    try:
        return target_for_function(name, fn.target_features or "")
    except TargetError as e:
        if mcpu is not None:
            raise InputError(str(e), "--mcpu", 0, 0) from None
        raise InputError(str(e), where, fn.line + 1, 1) from None


def load_inputs(
    post_path: str | None, pre_path: str | None, assignment_path: str | None
) -> tuple[Module, Module | None, list[Finding]]:
    """Read the allocated program (or materialise it from an assignment) and the virtual one."""
    pre = read_module(pre_path) if pre_path else None
    if assignment_path is not None:
        if pre is None:
            raise InputError("--assignment needs the virtual program: pass --pre PRE.mir", assignment_path, 0, 0)
        if post_path is not None:
            raise InputError("give either ALLOC.mir or --assignment, not both", assignment_path, 0, 0)
        from verilocc.rewrite.assignment import materialise, read_assignment

        post, findings = materialise(pre, read_assignment(assignment_path))
        return post, pre, findings
    if post_path is None:
        raise InputError("nothing to verify: give ALLOC.mir, or --pre with --assignment", "<args>", 0, 0)
    return read_module(post_path), pre, []


def verify_modules(post: Module, pre: Module | None, opts: Options, extra_findings: list[Finding] | None = None) -> Report:
    results: list[FunctionResult] = []
    pre_by_name = {f.name: f for f in pre.functions} if pre else {}
    for fn in post.functions:
        target = function_target(fn, opts.mcpu, post.file)
        pre_fn = pre_by_name.get(fn.name)
        if pre is not None and pre_fn is None:
            fr = FunctionResult(fn.name, target.name, [])
            fr.findings.append(Finding("missing-function", "value-flow", Place(post.file, fn.name, -1, -1, fn.line + 1),
                                       f"function '{fn.name}' is not in the virtual program {pre.file}"))
            results.append(fr)
            continue
        fr = verify_function(fn, pre_fn, target, opts)
        fr.findings.extend(f for f in extra_findings or [] if f.place.function == fn.name)
        results.append(fr)
    if pre is not None:
        names = {f.name for f in post.functions}
        for f in pre.functions:
            if f.name not in names:
                fr = FunctionResult(f.name, "", [])
                fr.findings.append(Finding("missing-function", "value-flow", Place(pre.file, f.name, -1, -1, f.line + 1),
                                           f"function '{f.name}' of the virtual program is missing from {post.file}"))
                results.append(fr)
    return Report(file=post.file, pre_file=pre.file if pre else None, functions=results, tool_version=__version__)


@dataclass(frozen=True)
class PreparedPair:
    """The two programs as every layer reads them: the allocated one renumbered to the virtual
    program's blocks, calls expanded on both sides, and their instructions aligned."""

    pre: Function
    post: Function
    pre_classes: dict[VReg, RegisterClass]
    pre_cfg: CFG
    alignment: FunctionAlignment
    block_pairing: dict[int, int]  # allocated block number -> virtual block number


# Functions of at least this many instructions have layer 1 in a child process when
# `Options.fork` asks for it and a second processor is there: below it, starting the
# process costs about what the parallel run saves.
FORK_INSTRUCTIONS = 300


class Layer1:
    """Layer 1 of one function, run beside layers 2 and 3, which do not read what it makes.

    In this process, z3 decides in a thread of its own (`ConstraintChecker.start`). With
    `fork` (a second processor, and no other thread whose locks a child could inherit held),
    the whole layer runs in a forked child that sends back its findings, notes and statistics:
    the same objects, made by the same code from the same state, as if it ran here. A child
    that fails leaves nothing half-done: the layer then runs here. `checker` is the checker
    when it ran here (None when in a child)."""

    def __init__(self, make: Callable[[], tuple[list[Finding], ConstraintChecker]], fork: bool) -> None:
        self.make = make
        self.started = time.perf_counter()
        self.checker: ConstraintChecker | None = None
        self.first: list[Finding] = []  # findings of the checks of the allocated program alone
        self.child: tuple[int, int] | None = None  # (pid, read end of the pipe)
        if fork and forking_pays():
            self.child = self._fork()
        self.seconds = 0.0  # in this process: building the constraints and waiting for z3
        if self.child is None:
            self._start()

    def _start(self) -> None:
        start = time.perf_counter()
        self.first, self.checker = self.make()
        self.checker.start()
        self.seconds += time.perf_counter() - start

    def _fork(self) -> tuple[int, int] | None:
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return None
        if pid:
            os.close(write)
            return pid, read
        code = 1
        try:  # the child: one layer, its result down the pipe, and out without cleanup
            os.close(read)
            first, checker = self.make()
            findings = checker.run()
            data = pickle.dumps((first, findings, checker.notes, checker.stats, time.perf_counter() - self.started))
            with os.fdopen(write, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)

    def finish(self) -> tuple[list[Finding], list[Finding], list[str], dict[str, object]]:
        """The findings of the allocated program's checks, then the constraints' findings,
        notes and statistics (`seconds_constraints` among them)."""
        if self.child is not None:
            pid, read = self.child
            self.child = None
            with os.fdopen(read, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) == 0 and data:
                first, findings, notes, stats, seconds = pickle.loads(data)
                return first, findings, notes, {**stats, "seconds_constraints": round(seconds, 3)}
            self._start()  # the child failed: the layer runs here
        assert self.checker is not None
        start = time.perf_counter()
        findings = self.checker.finish()
        self.seconds += time.perf_counter() - start
        return self.first, findings, self.checker.notes, {**self.checker.stats,
                                                          "seconds_constraints": round(self.seconds, 3)}


def as_read(fn: Function, target: Target) -> Function:
    """`fn` as llc reads it for `target` (`verilocc.mir.as_read`)."""
    return as_llc_reads(fn, target.wavefront_size == 32)


def prepare_pair(post: Function, pre: Function, target: Target) -> PreparedPair:
    """Read both programs (already as llc reads them, `as_read`) as they execute (`executed`),
    call fixed stack objects by the virtual program's ids for the same memory, pair blocks by
    structure, renumber, expand calls (one rule for both programs), align."""
    post, pre = executed(post), executed(pre)
    pre, post = with_fixed_objects_named(pre, post)
    pairing = pair_blocks(pre, post)
    striped = sgpr_striped(post) or sgpr_striped(pre)
    post = expand_calls(renumbered(post, pairing), target, striped)
    pre = expand_calls(pre, target, striped)
    pre_classes = vreg_classes(pre)
    return PreparedPair(pre, post, pre_classes, build_cfg(pre), align_functions(pre, post), pairing)


def verify_function(post: Function, pre: Function | None, target: Target, opts: Options) -> FunctionResult:
    fr = FunctionResult(post.name, target.name, [])
    t0 = time.perf_counter()
    for f in (post, pre):
        if f is not None:
            check_header_registers(f, target)
    post = as_read(post, target)
    pre = as_read(pre, target) if pre is not None else None
    post_classes = vreg_classes(post)
    post = executed(post, post_classes)
    pre = executed(pre) if pre is not None else None
    post_cfg = build_cfg(post)
    if pre is None:
        if "constraints" in opts.layers:
            fr.layers.append("constraints")
            fr.findings.extend(post_only_checks(post, target, post_classes))
            fr.findings.extend(undefined_reads(post, post_cfg, target))
        fr.notes.append(
            "no virtual program given (--pre): checked register validity, alignment, bounds, reserved "
            "registers, ties and undefined reads only; value flow and equivalence were not checked"
        )
        fr.stats["seconds"] = round(time.perf_counter() - t0, 3)
        return fr
    if (spilled := spill_code_in_virtual_program(pre)) is not None:
        fr.findings.append(spilled)
        fr.notes.append("no layer ran: the virtual program must be the one before register allocation")
        fr.stats["seconds"] = round(time.perf_counter() - t0, 3)
        return fr
    return _PairRun(fr, post, pre, post_classes, post_cfg, target, opts).run(t0)


class _PairRun:
    """The layers on one pair of functions (both read as llc reads them and as they execute).

    Findings are kept by where they go in the result: layer 1's checks of the allocated
    program alone first (`own`), then what preparing the pair found (`prepared`), layer 1's
    constraints (`constraints`), then layers 2 and 3 (`later`). Layer 1 runs beside layers 2
    and 3 (`Layer1`) and is finished once: when value flow finds LLVM liveness anomalies (layer
    1 then runs again on the liveness they correct, and its findings go with the later ones),
    when an error stops the layers, or at the end."""

    def __init__(self, fr: FunctionResult, post: Function, pre: Function, post_classes: dict[VReg, RegisterClass],
                 post_cfg: CFG, target: Target, opts: Options) -> None:
        self.fr, self.target, self.opts = fr, target, opts
        self.unprepared, self.pre, self.post_classes, self.post_cfg = post, pre, post_classes, post_cfg
        self.own: list[Finding] = []
        self.prepared: list[Finding] = []
        self.constraints: list[Finding] = []
        self.later: list[Finding] = []
        self.layer1: Layer1 | None = None
        self.checker: ConstraintChecker | None = None
        self.block_pairing: dict[int, int] = {}

    def run(self, t0: float) -> FunctionResult:
        fr, opts = self.fr, self.opts
        t1 = t2 = t0
        try:
            self._prepare()
            t1 = time.perf_counter()
            if "constraints" in opts.layers:
                self._start_layer1()
            t2 = time.perf_counter()
            vf = self._value_flow()
            t3 = time.perf_counter()
            eq = self._equivalence(vf)
        except Exception:
            # What ran first reports its error first, as when the layers ran one after the other.
            if self.layer1 is None and "constraints" in opts.layers:
                self._post_checks()
            self._finish_layer1()
            raise
        t4 = time.perf_counter()
        self._finish_layer1()
        fr.findings = dedupe(self.own + self.prepared + self.constraints + self.later)
        self._certify(vf, eq)
        missing = [layer for layer in LAYERS if layer not in fr.layers]
        if missing:
            fr.notes.append("layers not run: " + ", ".join(missing) + " (the verdict cannot be VERIFIED)")
        fr.stats.update(
            {
                "seconds_prepare": round(t1 - t0, 3),
                "seconds_constraints": fr.stats.get("seconds_constraints", round(t2 - t1, 3)),
                "seconds_value_flow": round(t3 - t2, 3),
                "seconds_equivalence": round(t4 - t3, 3),
            }
        )
        return fr

    def _prepare(self) -> None:
        """What cannot be verified, the pair prepared (`prepare_pair`), and how the control flow
        of the two differs."""
        post, pre = self.unprepared, self.pre
        self.prepared.extend(unsupported_constructs(post))
        self.prepared.extend(unsupported_constructs(pre, calls=False))  # its calls are the allocated program's
        pair = prepare_pair(post, pre, self.target)
        self.pre, self.post, self.pre_classes, self.pre_cfg = pair.pre, pair.post, pair.pre_classes, pair.pre_cfg
        self.alignment = pair.alignment
        self.block_pairing = pair.block_pairing
        note = renumbering_note(pair.block_pairing)
        if note is not None:
            self.fr.notes.append(note)
        self.prepared.extend(cfg_findings(self.pre, self.post, self.alignment))

    def _post_checks(self) -> list[Finding]:
        """Layer 1's checks of the allocated program alone."""
        post = self.unprepared
        return [*post_only_checks(post, self.target, self.post_classes),
                *undefined_reads(post, self.post_cfg, self.target)]

    def _constraint_checker(self, unread: dict[tuple[int, int], dict[int, int]] | None = None) -> ConstraintChecker:
        """Layer 1's constraints, on the virtual program's liveness (with `unread`: the lanes
        value flow proved are not read)."""
        liveness = compute_liveness(self.pre, self.pre_cfg, self.pre_classes, unread)
        return ConstraintChecker(self.pre, self.post, self.target, self.pre_classes, self.alignment, liveness,
                                 timeout_s=self.opts.timeout_s, seed=self.opts.seed)

    def _make_layer1(self) -> tuple[list[Finding], ConstraintChecker]:
        first = self._post_checks()
        return first, self._constraint_checker()

    def _start_layer1(self) -> None:
        opts = self.opts
        size = sum(len(b.instructions) for b in self.pre.blocks)
        self.layer1 = Layer1(self._make_layer1, opts.fork and not opts.certify and size >= FORK_INSTRUCTIONS)
        self.checker = self.layer1.checker
        self.fr.layers.append("constraints")

    def _finish_layer1(self) -> tuple[list[Finding], list[str]]:
        """Layer 1's findings and notes put where they go (once); its constraints' findings
        and notes returned."""
        if self.layer1 is None:
            return [], []
        done, self.layer1 = self.layer1, None
        first, got, notes, stats = done.finish()
        self.own, self.constraints = first + self.own, got + self.constraints
        self.fr.notes.extend(notes)
        self.fr.stats.update(stats)
        return got, notes

    def _value_flow(self) -> ValueFlowChecker:
        """Layer 2 (value flow and callee-saved registers); layer 1 again where value flow
        found LLVM liveness anomalies."""
        vf = ValueFlowChecker(self.pre, self.post, self.pre_classes, self.alignment, self.pre_cfg)
        if "value-flow" not in self.opts.layers:
            return vf
        self.later.extend(vf.run())
        self.later.extend(CalleeSavedChecker(self.pre, self.post, self.alignment, self.pre_cfg).run())
        self.fr.layers.append("value-flow")
        if vf.anomalies and "constraints" in self.opts.layers:
            self._constraints_again(vf.anomalies)
        self.later.extend(anomaly_findings(vf.anomalies, self.post))
        return vf

    def _constraints_again(self, anomalies: list[Anomaly]) -> None:
        """Layer 1 again, its first findings and notes replaced: reads proved not to matter are
        not reads."""
        fr = self.fr
        first_findings, old_notes = self._finish_layer1()
        checker = self.checker = self._constraint_checker(unread_lanes(anomalies, self.pre, self.pre_classes))
        self.own = [f for f in self.own if f not in first_findings]
        self.prepared = [f for f in self.prepared if f not in first_findings]
        self.later = [f for f in self.later if f not in first_findings] + checker.run()
        self.constraints = []
        fr.notes = [n for n in fr.notes if n not in old_notes] + checker.notes
        fr.stats.update(checker.stats)

    def _equivalence(self, vf: ValueFlowChecker) -> EquivalenceChecker | None:
        """Layer 3."""
        if "equivalence" not in self.opts.layers:
            return None
        from verilocc.semantics.equivalence import EquivalenceChecker

        eq = EquivalenceChecker(self.pre, self.post, self.target, self.pre_classes, self.alignment, self.pre_cfg,
                                vf=vf, timeout_s=self.opts.timeout_s, seed=self.opts.seed)
        self.later.extend(eq.run())
        self.fr.layers.append("equivalence")
        self.fr.stats.update(eq.stats)
        return eq

    def _certify(self, vf: ValueFlowChecker, eq: EquivalenceChecker | None) -> None:
        """The proof obligations of a VERIFIED function (`--certificate`)."""
        fr, opts = self.fr, self.opts
        if opts.certify and fr.verdict is Verdict.VERIFIED and self.checker is not None and eq is not None:
            from verilocc.certificate.collect import collect_obligations
            from verilocc.certificate.obligation import CertificateError

            try:
                fr.certificate = collect_obligations(fr, self.checker, vf, eq, self.pre, self.post, self.alignment,
                                                     opts.timeout_s, opts.seed, self.block_pairing,
                                                     full=opts.certify_full)
            except CertificateError as e:
                fr.notes.append(f"no certificate: {e}")


def unread_lanes(anomalies: list[Anomaly], pre: Function,
                 classes: dict[VReg, RegisterClass]) -> dict[tuple[int, int], dict[int, int]]:
    """(block, pre instruction) -> operand position -> lane mask of the slots an anomaly
    showed the instruction does not depend on (`compute_liveness`'s `unread`)."""
    out: dict[tuple[int, int], dict[int, int]] = {}
    for a in anomalies:
        op = pre.block(a.block).instructions[a.pre_index].operands[a.position]
        ref = resolve_operand(pre, op, classes)
        if ref is None or ref.vreg is None:
            continue
        operand_slots = [s for s in range(classes[ref.vreg].width_units) if slot_mask(ref.mask) >> s & 1]
        lanes = slots_to_mask(operand_slots[k] for k in a.slots if k < len(operand_slots))
        row = out.setdefault((a.block, a.pre_index), {})
        row[a.position] = row.get(a.position, 0) | lanes
    return out


def anomaly_findings(anomalies: list[Anomaly], post: Function) -> list[Finding]:
    """Each LLVM liveness anomaly as a warning: the lane, and what the proof rests on."""
    return [
        Finding("liveness-anomaly", "value-flow", Place(post.file, post.name, a.block, a.post_index, a.line, a.column),
                f"bb.{a.block} line {a.line}: LLVM liveness anomaly: `{a.opcode}` {a.what}; the bits of its results "
                f"that the program reads do not depend on those lanes (bit-precise semantics of {a.opcode}, verilocc.semantics.bitvector), so the "
                "allocation computes the same values although the virtual program reads them",
                severity="warning")
        for a in anomalies
    ]


def unsupported_constructs(fn: Function, calls: bool = True) -> list[Finding]:
    """Constructs whose meaning the layers do not model: an explicit UNKNOWN, never a pass.

    A bundle that `executed` left closed reads all its inputs before any of its defs where
    running its instructions in turn would not, which the layers do not model; a call whose
    register mask is not known here (`analysis.calls` models the `csr_amdgpu*` ones and
    `CustomRegMask(...)`) clobbers
    registers the layers cannot name (with `calls`). A proof through either would not be a
    proof.
    """
    out: list[Finding] = []
    for b in fn.blocks:
        for idx, ins in enumerate(b.instructions):
            what = None
            if ins.opens_bundle:
                what = "an instruction bundle whose instructions depend on each other"
            elif calls and any(op.kind == "regmask" for op in ins.operands) and call_mask(ins, sgpr_striped(fn)) is None:
                mask = next(op.text for op in ins.operands if op.kind == "regmask")
                what = f"the register mask `{mask}` of `{ins.opcode}` (registers a call clobbers)"
            if what is not None:
                out.append(Finding("unsupported", "value-flow", Place(fn.file, fn.name, b.number, idx, ins.line, ins.column),
                                   f"bb.{b.number} line {ins.line}: {what} is not modelled; the proof stops here",
                                   severity="unknown"))
    return out


def spill_code_in_virtual_program(pre: Function) -> Finding | None:
    """An UNKNOWN finding at the first spill instruction of the virtual program, if it has one.

    Spill code is what an allocator writes: a virtual program holding it was written after
    some allocation (LLVM allocates SGPRs first: `llc -stop-before=greedy,1` holds their lane
    spills and physical SGPRs). The layers pair spill code of the allocated program with the
    moves it stands for, not with spill code of the virtual one, so they would read correct
    output as wrong; nothing is proved from such a pair."""
    for b in pre.blocks:
        for idx, ins in enumerate(b.instructions):
            if is_spill_code(ins):
                return Finding("unsupported", "value-flow", Place(pre.file, pre.name, b.number, idx, ins.line, ins.column),
                               f"bb.{b.number} line {ins.line}: the virtual program already holds spill code "
                               f"(`{ins.opcode}`): it was written after register allocation began; give the "
                               "program before it (llc -stop-before=greedy)", severity="unknown")
    return None


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (layer, kind, place): checks with and without the virtual program can
    see the same fault; keep the one that names the virtual registers."""
    best: dict[tuple[object, ...], Finding] = {}
    for f in findings:
        key = (f.layer, f.kind, f.place.file, f.place.line, f.place.column, f.severity)
        if key not in best or len(f.vregs) > len(best[key].vregs):
            best[key] = f
    return sorted(best.values(), key=Finding.sort_key)


def cfg_findings(pre: Function, post: Function, alignment: FunctionAlignment) -> list[Finding]:
    out: list[Finding] = []
    for b in alignment.missing_blocks:
        blk = pre.block(b)
        out.append(Finding("cfg", "value-flow", Place(pre.file, pre.name, b, -1, blk.line),
                           f"block bb.{b} of the virtual program is missing from the allocated program"))
    for b in alignment.extra_blocks:
        blk = post.block(b)
        out.append(Finding("cfg", "value-flow", Place(post.file, post.name, b, -1, blk.line),
                           f"block bb.{b} is not in the virtual program"))
    pre_cfg, post_cfg = build_cfg(pre), build_cfg(post)
    for b in sorted(alignment.steps):
        ps, qs = set(pre_cfg.successors(b)), set(post_cfg.successors(b))
        if ps != qs:
            blk = post.block(b)
            out.append(Finding("cfg", "value-flow", Place(post.file, post.name, b, -1, blk.line),
                               f"bb.{b} has successors {sorted(qs)} but {sorted(ps)} in the virtual program"))
    return out
