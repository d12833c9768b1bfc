"""The equivalence layer's obligations `lhs == rhs` (lane by lane, over the terms of
`verilocc.semantics.terms`): counted, discharged by identity of hash-consed terms or recorded,
and then decided together, first under a few random interpretations (a wrong allocation is
refuted in microseconds), then by z3 under the assumptions the block-entry relation gives.
A failing obligation becomes a finding with a counterexample; z3 answering neither way, an
unknown one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verilocc.findings import Finding, Place
from verilocc.semantics.terms import ToZ3
from verilocc.smt.solver import Answer, check_z3_terms


@dataclass
class Obligation:
    place: Place
    what_parts: tuple[Any, ...]  # formatted only when the obligation fails (most never do)
    lhs: list[Any]  # virtual program's lanes
    rhs: list[Any]  # allocated program's lanes

    @property
    def what(self) -> str:
        fmt, *args = self.what_parts
        return str(fmt(*args)) if callable(fmt) else str(fmt)


def distinct(pending: list[Obligation]) -> list[Obligation]:
    """The obligations without repeats: of those in one block whose lanes pair the same terms
    (hash-consed: the same objects), only the first, which has the least line of them (a
    block's obligations are made in the order of its lines), so the formula, and the finding
    a failure of it gives, are the same. (`_BlockRun.close` leaves out the repeats within one
    edge; here go those across edges and instructions.)"""
    seen: set[tuple[int, tuple[tuple[int, int], ...]]] = set()
    out: list[Obligation] = []
    for ob in pending:
        key = (ob.place.block, tuple((id(a), id(b)) for a, b in zip(ob.lhs, ob.rhs) if a is not b))
        if key not in seen:
            seen.add(key)
            out.append(ob)
    return out


class Obligations:
    def __init__(self, layer: str, file: str, function: str, pretty: Callable[[str], str],
                 timeout_s: float, seed: int) -> None:
        self.layer = layer
        self.file = file  # the allocated program's, where a finding without a line is placed
        self.function = function
        self.pretty = pretty  # a solver symbol as a finding names it
        self.timeout_s = timeout_s
        self.seed = seed
        self.recorded: list[Obligation] = []  # those not discharged by identity
        self.identical = 0  # obligations discharged by identity
        self.made = 0  # obligations made
        self.repeated = 0  # obligations not recorded: an earlier one is the same
        self.assumptions: list[Any] = []  # `Semantics.equal` of terms assumed equal
        self.findings: list[Finding] = []
        self.stats: dict[str, object] = {}
        # z3 and a fresh context are made only when an obligation needs the solver: no state
        # shared between runs, same bytes out. The exact assertions sent to z3 (None when no
        # obligation needed the solver): a certificate prints these, so it is this proof, not a
        # re-derivation of it.
        self.z3: Any = None
        self.ctx: Any = None
        self.query: list[Any] | None = None

    def oblige(self, place: Place, what: Any, lhs: list[Any], rhs: list[Any], *args: Any) -> None:
        """The obligation lhs == rhs; `what` is a sentence, or a function formatting one from
        args. When both sides are the same Python terms, lane by lane, it holds: only counted."""
        if not self.by_identity(lhs, rhs):
            self.record(place, what, lhs, rhs, *args)

    def repeats(self, paired: set[tuple[int, int]], lhs: Any, rhs: Any) -> bool:
        """Whether the obligation lhs == rhs (Python terms, one lane) pairs the same terms as
        one already in `paired`: then it is that one again, only counted. Otherwise it joins
        `paired`."""
        pair = (id(lhs), id(rhs))
        if pair in paired:
            self.made += 1
            self.repeated += 1
            return True
        paired.add(pair)
        return False

    def by_identity(self, lhs: list[Any], rhs: list[Any]) -> bool:
        """Count an obligation lhs == rhs; whether it is discharged by identity here (with
        Python terms: the same terms lane by lane), so that it need not be recorded."""
        self.made += 1
        if len(lhs) == len(rhs) and all(a is b for a, b in zip(lhs, rhs)):
            self.identical += 1
            return True
        return False

    def record(self, place: Place, what: Any, lhs: list[Any], rhs: list[Any], *args: Any) -> None:
        """Record a counted obligation (`by_identity`) for `decide`."""
        self.recorded.append(Obligation(place, (what, *args), lhs, rhs))

    def decide(self) -> None:
        """Decide the obligations that identity did not discharge: findings for those that
        fail, or an unknown finding when z3 answers neither way."""
        pending: list[Obligation] = []
        for ob in self.recorded:
            if len(ob.lhs) != len(ob.rhs):
                self.findings.append(Finding("not-equivalent", self.layer, ob.place,
                                             f"bb.{ob.place.block}: {ob.what}: the programs pass {len(ob.lhs)} and {len(ob.rhs)} lanes"))
                continue
            pending.append(ob)
        self.stats.update({"obligations": self.made, "discharged_by_identity": self.identical,
                           "sent_to_solver": len(pending) + self.repeated})
        if not pending:
            return
        import z3

        self.z3 = z3
        self.ctx = z3.Context()
        to_z3 = ToZ3(z3, self.ctx)
        translated: list[tuple[Obligation, Any]] = []
        for ob in distinct(pending):
            lhs, rhs = [to_z3(t) for t in ob.lhs], [to_z3(t) for t in ob.rhs]
            diff = [(a, b) for a, b, x, y in zip(lhs, rhs, ob.lhs, ob.rhs) if x is not y]
            f = z3.And([a == b for a, b in diff], self.ctx) if len(diff) > 1 else diff[0][0] == diff[0][1]
            translated.append((Obligation(ob.place, ob.what_parts, lhs, rhs), f))
        equal = [(to_z3(a), to_z3(b)) for a, b in dict.fromkeys(self.assumptions)]
        assumptions = [a == b for a, b in equal]
        from verilocc.semantics.interpretation import RandomInterpretation

        # Opcodes are uninterpreted, so one interpretation under which the assumptions hold
        # and an obligation fails refutes the claim as a solver's model would: try a few
        # random ones before the solver (a wrong allocation is found in microseconds). The
        # values depend on the terms and the fixed order they are made and evaluated in: the
        # same from run to run.
        for attempt in range(3):
            interp = RandomInterpretation(z3, f"{self.seed}/{attempt}", equal)
            if interp.holds(assumptions) and self.report_failures(translated, interp.value):
                self.stats["refuted_by"] = "random interpretation"
                return
        self.query = [*assumptions, z3.Not(z3.And([f for _, f in translated]))]
        outcome, value = check_z3_terms(z3, self.ctx, self.query, timeout_s=self.timeout_s, seed=self.seed)
        if outcome.answer is Answer.UNSAT:
            return
        if value is None:
            self.findings.append(Finding("solver", self.layer, Place(self.file, self.function, -1, -1, 0),
                                         f"z3 could not decide equivalence: {outcome.reason}", severity="unknown"))
            return
        if not self.report_failures(translated, value):
            # A sat answer whose model fails no obligation is a solver or translation fault:
            # the claim is neither proved nor refuted.
            self.findings.append(Finding("solver", self.layer, Place(self.file, self.function, -1, -1, 0),
                                         "z3 answered sat, but no obligation fails under its model",
                                         severity="unknown"))

    def report_failures(self, pending: list[tuple[Obligation, Any]],
                        value: Callable[[Any], int | bool | None]) -> bool:
        """A finding for the first failing obligation of each block under the valuation
        `value` (a solver model or a concrete interpretation); whether any failed."""
        reported: set[int] = set()
        for ob, f in sorted(pending, key=lambda x: (x[0].place.block, x[0].place.line)):
            if ob.place.block in reported or value(f) is not False:
                continue
            # One counterexample per block: later obligations of the block usually fail because
            # of the first.
            reported.add(ob.place.block)
            inputs = self.counterexample(value, ob)
            shown = ", ".join(f"{k} = {v}" for k, v in inputs[:6])
            lane = next(i for i, (a, b) in enumerate(zip(ob.lhs, ob.rhs)) if value(a) != value(b))
            self.findings.append(Finding(
                "not-equivalent", self.layer, ob.place,
                f"bb.{ob.place.block} line {ob.place.line}: expected that {ob.what}, but lane {lane} is "
                f"{_hex(value(ob.lhs[lane]))} in the virtual program and {_hex(value(ob.rhs[lane]))} in the allocated one"
                + (f" when {shown}" if shown else ""),
                counterexample=tuple(inputs)))
        return bool(reported)

    def leaves(self, terms: list[Any]) -> dict[str, Any]:
        z3 = self.z3
        seen: set[int] = set()
        names: dict[str, Any] = {}
        stack = list(terms)
        while stack and len(names) < 64:
            t = stack.pop()
            if t.get_id() in seen:
                continue
            seen.add(t.get_id())
            if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                names[t.decl().name()] = t
            else:
                stack.extend(t.children())
        return names

    def counterexample(self, value: Callable[[Any], int | bool | None], ob: Obligation) -> list[tuple[str, str]]:
        """Entry values the failing obligation depends on, as plain strings: first those only
        one side reads (where the programs part ways), then the shared ones."""
        left, right = self.leaves(ob.lhs), self.leaves(ob.rhs)
        differing = sorted(set(left) ^ set(right))
        shared = sorted(set(left) & set(right))
        both = {**left, **right}
        return [(self.pretty(n), _hex(value(both[n]))) for n in differing + shared][:12]


def _hex(v: int | bool | None) -> str:
    return f"0x{v:04x}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
