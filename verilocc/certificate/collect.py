"""Gather the proof obligations of one VERIFIED function from its three layers.

- Layer 1: the SMT-LIB text `ConstraintChecker` sent to z3, unchanged but for a comment
  header.
- Layer 3: the assertions `EquivalenceChecker` sent to z3 (assumptions and the negated
  conjunction of the obligations that were not syntactically identical), printed portably.
- Layer 2: one encoding per block (`verilocc.certificate.valueflow`); and, per LLVM liveness
  anomaly (`verilocc.semantics.anomalies`), the bit-vector query that showed the wrong read
  harmless (`verilocc.semantics.bitvector.slots_query`), printed portably; the witness lists
  each anomaly with its obligation's file.

Before an obligation goes into a certificate, z3 decides its text (layer 1's text is the one z3
already decided, so it is not decided twice): a printed query
that z3 does not find unsat means the printer or the encoding is wrong, and a certificate
must not claim coverage it does not have. For layers 1 and 3 that is an internal error (the
certificate is not written); for layer 2's encoding the block is listed as not covered.
"""

from __future__ import annotations

from typing import Any

from verilocc.pairing.alignment import FunctionAlignment
from verilocc.certificate.obligation import (
    CertificateError,
    FunctionCertificate,
    ProofObligation,
    Uncovered,
)
from verilocc.certificate.smt2 import query_text
from verilocc.certificate.valueflow import valueflow_obligations
from verilocc.certificate.witness import WitnessError, function_witness
from verilocc.findings import FunctionResult
from verilocc.semantics.anomalies import Anomaly
from verilocc.mir.model import Function
from verilocc.semantics.equivalence import EquivalenceChecker
from verilocc.semantics.valueflow import ValueFlowChecker
from verilocc.smt.constraints import ConstraintChecker
from verilocc.smt.solver import Answer, check_z3

# Checks of a VERIFIED verdict that run in Python only, with no solver query to certify. The
# second element says whether `certcheck` re-establishes the claim from the witness
# (`verilocc.certificate.witness`) and the two MIR files.
PYTHON_ONLY = (
    ("constraints", ("registers of the allocated program exist, lie in the file and are aligned; every home of a "
     "virtual register is in its class's file; tied operands share a register; early-clobber defs do not overlap "
     "uses (post-only checks)"), True),
    ("constraints", ("the registers of the allocated program lie in the function's budget (from the target and its "
     "attributes)"), True),
    ("constraints", ("no home of a virtual register is reserved, the registers inserted moves, reloads and lane "
     "restores put values in included"), True),
    ("constraints", ("the ties an instruction's definition implies without printing them (verilocc.target.opcodes; "
     "certcheck.ties)"), True),
    ("constraints", ("every COPY is one LLVM can lower: none from a vector register (one value per thread lane) into a "
     "scalar one (illegal copies); every spill pseudo's data operand is in a file its definition takes"), True),
    ("constraints", "no register is read before some path defines it (undefined reads)", True),
    ("constraints", ("class membership of the homes of split, spilled or rematerialised virtual registers (they have "
     "no variable in the SMT obligation)"), True),
    ("value-flow", ("the allocated program has the virtual program's blocks and successors, and no instruction is "
     "added or dropped (alignment of the two programs)"), True),
    ("value-flow", ("the registers the allocated program saves for its caller hold their entry values at every "
     "return (callee-saved registers, verilocc.semantics.calleesaved)"), True),
)
WITNESS_REASON = "re-established by certcheck from the witness and the two MIR files"


def _header(layer: str, fn: str, claim: str, origin: str) -> list[str]:
    return [f"verilocc certificate obligation: {layer}, function {fn}", f"claim: {claim}", f"origin: {origin}",
            "expected answer: unsat"]


def anomaly_obligations(vf: ValueFlowChecker, post: Function) -> list[ProofObligation]:
    """One obligation per anomaly of `vf`: the query that proved the read harmless. Raises
    CertificateError when an anomaly's opcode has no bit-precise meaning (its discharge needed
    no solver and no formula can be written)."""
    import z3

    out: list[ProofObligation] = []
    for a in anomalies_of(vf):
        line = post.block(a.block).instructions[a.post_index].line
        query = vf.harmless.query(a)
        if query is None:
            raise CertificateError(f"the proof rests on an LLVM liveness anomaly at line {a.line} ({a.opcode}) whose "
                                   "opcode has no bit-precise meaning here, so no formula can say the read is harmless")
        claim = (f"the results of `{a.opcode}` (allocated line {line}) that the program reads are the same "
                 f"whatever 16-bit slots {list(a.slots)} of operand {a.position} hold (an LLVM liveness anomaly)")
        origin = "the bit-vector query that showed the read harmless (verilocc.semantics.bitvector.slots_query)"
        logic = "QF_UFBV" if _has_functions(z3, query) else "QF_BV"
        text = query_text(z3, query, logic, _header("layer 2 (value flow): LLVM liveness anomaly", post.name,
                                                      claim, origin))
        out.append(ProofObligation("anomaly", post.name, a.block, claim, text, origin,
                                   tag=f".line{line}.op{a.position}"))
    return out


def _has_functions(z3: Any, terms: list[Any]) -> bool:
    """Whether `terms` apply an uninterpreted function of some arguments."""
    todo, seen = list(terms), set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED and t.num_args() > 0:
            return True
        todo.extend(t.children())
    return False


def anomalies_of(vf: ValueFlowChecker) -> list[Anomaly]:
    """Each read recorded as an anomaly once, in program order."""
    seen: dict[tuple[int, int, int], Anomaly] = {}
    for a in vf.anomalies:
        seen.setdefault((a.block, a.post_index, a.position), a)
    return [seen[k] for k in sorted(seen)]


def _self_check(ob: ProofObligation, timeout_s: float, seed: int) -> Answer:
    return check_z3(ob.smtlib, timeout_s=timeout_s, seed=seed).answer


def collect_obligations(fr: FunctionResult, checker: ConstraintChecker, vf: ValueFlowChecker, eq: EquivalenceChecker,
                        pre: Function, post: Function, alignment: FunctionAlignment,
                        timeout_s: float = 60.0, seed: int = 0,
                        block_pairing: dict[int, int] | None = None, full: bool = False) -> FunctionCertificate:
    """Where the witness covers the function, what certcheck re-establishes from it gets no
    obligation and is listed as witnessed: layer 2's per-block claims, and layer 1's
    interference facts (certcheck's value flow shows that every read reads its own value, so no
    value is overwritten while it is live); layer 1's memberships stay an obligation. `full`
    (`--certificate-full`): every obligation all the same, for a re-check by solvers alone."""
    cert = FunctionCertificate()
    name = post.name
    try:
        cert.witness = function_witness(vf, pre, post, alignment, block_pairing)
    except WitnessError:
        cert.witness = None
    lean = not full and cert.witness is not None

    # Layer 1.
    if checker.query is None:
        raise CertificateError(f"function {name}: layer 1 made no solver query")
    decided: ProofObligation | None = None  # the text z3 already decided
    if lean and checker.disjoint:
        claim = ("every home of a virtual register with one home is in its class, the file, the budget and not "
                 "reserved (the memberships of layer 1)")
        origin = "the memberships of the query layer 1 sent to z3 (which implies this one)"
        query = checker.smtlib(disjoint=False)
        cert.witnessed.append(Uncovered("constraints", name, f"no two values live at the same time share a lane "
                                        f"({len(checker.disjoint)} interference facts of layer 1)", WITNESS_REASON +
                                        " (every read reads its own value: no value is overwritten while it is live)"))
    else:
        claim = ("every home of a virtual register with one home is in its class, the file, the budget and not "
                 "reserved; no two values live at the same time share a lane (the constraints of layer 1)")
        origin = "the query layer 1 sent to z3"
        query = checker.query
    text = "".join(f"; {h}\n" for h in _header("layer 1 (constraints)", name, claim, origin)) + query
    cert.obligations.append(ProofObligation("constraints", name, None, claim, text, origin))
    if query is checker.query:
        decided = cert.obligations[0]

    # The anomalies layer 2 recorded (decided below with the others).
    anomaly_obs = anomaly_obligations(vf, post)
    cert.obligations.extend(anomaly_obs)
    if cert.witness is not None and anomaly_obs:
        cert.witness["anomalies"] = [{"post_line": post.block(a.block).instructions[a.post_index].line,
                                      "position": a.position, "slots": list(a.slots), "obligation": ob.tag}
                                     for a, ob in zip(anomalies_of(vf), anomaly_obs)]

    # Layer 3.
    stats = eq.stats
    claim = ("the allocated program is equivalent to the virtual one: every side effect sees equal inputs and every "
             "block-entry relation is inductive (all obligations not discharged by syntactic identity)")
    if eq.proof.query is not None:
        origin = "the assertions layer 3 sent to z3"
        text = query_text(eq.proof.z3, eq.proof.query, "QF_UFBV", _header("layer 3 (equivalence)", name, claim, origin))
        cert.obligations.append(ProofObligation("equivalence", name, None, claim, text, origin))
    identical = int(stats.get("discharged_by_identity", 0))  # type: ignore[call-overload]
    if identical:
        what = f"{identical} equivalence obligation(s) whose two sides are the same hash-consed term"
        if cert.witness is not None:
            # The witness check shows that every matched instruction reads, in the allocated
            # program, the values its counterpart reads: equal inputs, equal results.
            cert.witnessed.append(Uncovered("equivalence", name, what, WITNESS_REASON + " (every matched "
                                            "instruction reads the values its counterpart reads)"))
        else:
            cert.uncovered.append(Uncovered("equivalence", name, what,
                                            "discharged by syntactic identity, not by a solver: no obligation to re-check"))

    for layer, what, by_witness in PYTHON_ONLY:
        if cert.witness is not None and by_witness:
            cert.witnessed.append(Uncovered(layer, name, what, WITNESS_REASON))
        else:
            cert.uncovered.append(Uncovered(layer, name, what, "checked in Python; no solver query to certify"))

    # Layer 1's full text is the one z3 already found unsat (a VERIFIED verdict needs that);
    # its memberships alone and layer 3's re-print of z3's terms are decided once more.
    for ob in cert.obligations:
        if ob is decided:
            continue
        answer = _self_check(ob, timeout_s, seed)
        if answer is not Answer.UNSAT:
            raise CertificateError(f"function {name}: the printed {ob.layer} obligation is {answer.value} for z3, "
                                   "not unsat; the certificate would not prove the verdict")

    # Layer 2.
    vf_obs: list[ProofObligation]
    vf_uncovered: list[Uncovered]
    if lean:
        cert.witnessed.append(Uncovered("value-flow", name, "every block: from its entry state every use reads its "
                                        "value and every successor's entry state holds", WITNESS_REASON))
        vf_obs, vf_uncovered = [], []
    else:
        vf_obs, vf_uncovered = valueflow_obligations(vf, pre, post, alignment)
    for u in vf_uncovered:
        if cert.witness is not None:  # certcheck walks every block of the witness with its own rules
            cert.witnessed.append(Uncovered(u.layer, u.function, u.claim, WITNESS_REASON, u.block))
        else:
            cert.uncovered.append(u)
    for ob in vf_obs:
        answer = _self_check(ob, timeout_s, seed)
        if answer is Answer.UNSAT:
            cert.obligations.append(ob)
        else:
            (cert.witnessed if cert.witness is not None else cert.uncovered).append(Uncovered(ob.layer, name, ob.claim,
                                            f"the certificate's value encoding is {answer.value}, not unsat (it is "
                                            "weaker than the checker's own rules here)", ob.block))
    cert.stats = {"obligations": len(cert.obligations), "uncovered": len(cert.uncovered),
                  "equivalence_identities": identical}
    return cert
