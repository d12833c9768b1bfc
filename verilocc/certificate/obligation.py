"""One proof obligation of a certificate, and a claim a certificate does not cover."""

from __future__ import annotations

from dataclasses import dataclass, field


class CertificateError(Exception):
    """A certificate could not be written or read; the message is one line."""


@dataclass(frozen=True)
class ProofObligation:
    """SMT-LIB 2 text whose unsatisfiability proves `claim`.

    `origin` says where the text comes from: the query a layer sent to z3 (the certificate
    is then that proof itself), or an encoding made for the certificate (layer 2, which has
    no solver query).
    """

    layer: str
    function: str
    block: int | None  # None: the obligation covers the whole function
    claim: str
    smtlib: str
    origin: str
    tag: str = ""  # tells apart the file names of a function's obligations of one layer and block


@dataclass(frozen=True)
class Uncovered:
    """A claim of a VERIFIED verdict that no obligation of the certificate re-checks."""

    layer: str
    function: str
    claim: str
    reason: str
    block: int | None = None


@dataclass
class FunctionCertificate:
    obligations: list[ProofObligation] = field(default_factory=list)
    uncovered: list[Uncovered] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    # `verilocc.certificate.witness.function_witness`, None when the state cannot be named
    witness: dict[str, object] | None = None
    # claims that the witness lets `certcheck` re-establish (not covered by an obligation)
    witnessed: list[Uncovered] = field(default_factory=list)
