"""`verilocc verify --certificate DIR`: the manifest and the obligation files.

Layout of DIR:
- `certificate.json`: the manifest (inputs and their SHA-256, targets, versions, seed, layers,
  verdict, time; each obligation file with its SHA-256, layer, function, block, claim and the
  expected answer `unsat`; the claims no obligation covers, and what stays trusted);
- `obligations/*.smt2`: SMT-LIB 2 scripts, each ending in `(check-sat)`, whose
  unsatisfiability is the proof;
- `witnesses/*.json`: per function, the pairing of the two programs and the value-flow state at
  each block entry (`verilocc.certificate.witness`), from which `certcheck` re-establishes the
  claims no obligation covers (the manifest's `witnessed`).

The manifest records no time, so the same inputs give the same bytes.

DIR may be missing or empty. A DIR that holds a previous certificate (its manifest) and
nothing else is replaced; any other non-empty DIR is refused, so no user file is ever
overwritten or deleted. The manifest is written last: a DIR without it is not a certificate.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from verilocc import __version__
from verilocc.certificate.obligation import FunctionCertificate
from verilocc.errors import InputError
from verilocc.findings import Report, Verdict

MANIFEST = "certificate.json"
FORMAT = "verilocc-certificate/2"
OBLIGATIONS = "obligations"
WITNESSES = "witnesses"

TRUSTED = (
    ("with certcheck: its trusted base (certcheck/README.md: Python, its MIR reader and rules, z3, cvc5, SHA-256); "
     "what follows is what `verilocc recheck` alone rests on"),
    "the MIR parser and the alignment of the two programs (which instruction corresponds to which)",
    ("the translation of the programs into the obligations: layer 1's constraints from liveness and the register "
    "classes, layer 3's symbolic execution (opcode semantics, assumptions A1-A5 of docs/soundness.md), layer 2's "
    "encoding of each aligned step"),
    "SHA-256 and the re-checking solver",
)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _previous_files(directory: Path) -> set[Path] | None:
    """The files a previous certificate in `directory` consists of, or None if it is not one."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        files = {directory / MANIFEST}
        root = directory.resolve()
        for ob in [*manifest["obligations"], *manifest.get("witnesses", [])]:
            p = directory / str(ob["file"])
            if root not in p.resolve().parents:
                return None  # names a file outside the directory: not one of ours
            files.add(p)
        return files
    except (OSError, ValueError, KeyError, TypeError):
        return None


def prepare_directory(path: str) -> None:
    """Refuse (InputError) a DIR a certificate may not be written to; check before verifying."""
    d = Path(path)
    if d.exists() and not d.is_dir():
        raise InputError("cannot write a certificate here: not a directory", path, 0, 0)
    if not d.exists() or not any(d.iterdir()):
        return
    previous = _previous_files(d)
    if previous is None:
        raise InputError("refusing to write a certificate into a non-empty directory that holds no previous "
                         f"certificate ({MANIFEST}); choose an empty or new directory", path, 0, 0)
    present = {p for p in d.rglob("*") if p.is_file()}
    other = sorted(str(p.relative_to(d)) for p in present - previous)
    if other:
        raise InputError(f"refusing to replace the certificate: the directory also holds {other[0]}, which is not "
                         "part of it", path, 0, 0)


def _clear_previous(d: Path) -> None:
    previous = _previous_files(d)
    if previous is None:
        return
    (d / MANIFEST).unlink(missing_ok=True)  # first: a half-removed certificate is no certificate
    for p in sorted(previous):
        p.unlink(missing_ok=True)
    for sub in (OBLIGATIONS, WITNESSES):
        ob_dir = d / sub
        if ob_dir.is_dir() and not any(ob_dir.iterdir()):
            ob_dir.rmdir()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80] or "function"


def _versions() -> dict[str, str]:
    from verilocc.smt.solver import z3_version

    out = {"verilocc": __version__, "z3": z3_version(),
           "python": ".".join(str(x) for x in sys.version_info[:3])}
    try:
        import cvc5

        out["cvc5 (re-check)"] = str(cvc5.__version__)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - recording a version must not fail a certificate
        out["cvc5 (re-check)"] = "not installed"
    return out


def mir_syntax(paths: list[str]) -> dict[str, Any]:
    """What can be said about the LLVM version behind the files.

    llc records no version in MIR; the embedded IR module's `llvm.ident` names the compiler
    that made the IR, which is usually, not necessarily, the llc that wrote the MIR. So the
    manifest gives that hint and, always, what verilocc's parser accepted.
    """
    idents: set[str] = set()
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        ir = text.split("\n---", 2)[0] if text.startswith("--- |") else ""
        idents.update(m.group(1) for m in re.finditer(r'!\{!"([^"]*(?:clang|LLVM) version [0-9][^"]*)"\}', ir))
    majors = {m.group(1) for i in idents if (m := re.search(r"version ([0-9]+)", i))}
    return {
        "detected": f"LLVM {majors.pop()} (from the embedded IR's llvm.ident; MIR does not record llc's version)"
        if len(majors) == 1 else None,
        "llvm_ident": sorted(idents),
        "accepted": f"LLVM MIR (YAML documents and body language) of llc 13 to 22, as read by verilocc {__version__}",
    }


def write_certificate(path: str, report: Report, inputs: dict[str, str | None], *, seed: int, timeout_s: float,
                      layers: tuple[str, ...], seconds: float) -> list[str]:
    """Write the certificate of a VERIFIED report; return the files written."""
    assert report.verdict is Verdict.VERIFIED
    d = Path(path)
    prepare_directory(path)
    try:
        d.mkdir(parents=True, exist_ok=True)
        _clear_previous(d)
        (d / OBLIGATIONS).mkdir(exist_ok=True)
        records: list[dict[str, Any]] = []
        uncovered: list[dict[str, Any]] = []
        witnessed: list[dict[str, Any]] = []
        witnesses: list[dict[str, Any]] = []
        written: list[str] = []
        for k, fr in enumerate(report.functions):
            cert: FunctionCertificate | None = fr.certificate
            assert cert is not None, "the caller checks that every function has its obligations"
            files: dict[str, str] = {}  # an obligation's tag -> its file, for the witness
            for ob in cert.obligations:
                where = "" if ob.block is None else f".bb{ob.block}"
                rel = f"{OBLIGATIONS}/f{k}.{_safe(fr.name)}.{ob.layer}{where}{ob.tag}.smt2"
                if ob.tag:
                    files[ob.tag] = rel
                data = ob.smtlib.encode("utf-8")
                (d / rel).write_bytes(data)
                written.append(rel)
                records.append({"file": rel, "sha256": hashlib.sha256(data).hexdigest(), "layer": ob.layer,
                                "function": ob.function, "block": ob.block, "claim": ob.claim, "origin": ob.origin,
                                "expect": "unsat"})
            for u in cert.uncovered:
                uncovered.append({"layer": u.layer, "function": u.function, "block": u.block, "claim": u.claim,
                                  "reason": u.reason})
            for u in cert.witnessed:
                witnessed.append({"layer": u.layer, "function": u.function, "block": u.block, "claim": u.claim,
                                  "reason": u.reason})
            if cert.witness is not None:
                (d / WITNESSES).mkdir(exist_ok=True)
                rel = f"{WITNESSES}/f{k}.{_safe(fr.name)}.json"
                witness = dict(cert.witness)
                if "anomalies" in witness:  # each anomaly names its obligation's file
                    witness["anomalies"] = [{**a, "obligation": files[a["obligation"]]}  # type: ignore[attr-defined]
                                            for a in witness["anomalies"]]  # type: ignore[attr-defined]
                data = (json.dumps(witness, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")
                (d / rel).write_bytes(data)
                written.append(rel)
                witnesses.append({"file": rel, "sha256": hashlib.sha256(data).hexdigest(), "function": fr.name})
        given = {role: p for role, p in inputs.items() if p is not None}
        manifest = {
            "format": FORMAT,
            "verdict": report.verdict.value,
            "inputs": [{"role": role, "path": p, "sha256": sha256_file(Path(p))} for role, p in given.items()],
            "mir_syntax": mir_syntax(list(given.values())),
            "functions": [{"name": fr.name, "target": fr.target, "layers": fr.layers} for fr in report.functions],
            "versions": _versions(),
            "seed": seed,
            "timeout_seconds": timeout_s,
            "layers": list(layers),
            "obligations": records,
            "witnesses": witnesses,
            "witnessed": witnessed,
            "not_covered": uncovered,
            "trusted": list(TRUSTED),
        }
        tmp = d / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, d / MANIFEST)
    except OSError as e:
        raise InputError(f"cannot write the certificate: {e.strerror or e}", path, 0, 0) from None
    return [MANIFEST, *written]


def certify(path: str, report: Report, inputs: dict[str, str | None], *, seed: int, timeout_s: float,
            layers: tuple[str, ...], seconds: float) -> int:
    """`verify --certificate`: write the certificate of a VERIFIED report, or say on stderr why
    there is none; return the exit code (the verdict's, or 3 when a VERIFIED function's
    obligations could not be made)."""
    if report.verdict is not Verdict.VERIFIED:
        print(f"verilocc: no certificate written to {path}: the verdict is {report.verdict.value}", file=sys.stderr)
        return report.verdict.exit_code
    missing = [fr for fr in report.functions if fr.certificate is None]
    if missing:
        why = next((n for n in missing[0].notes if n.startswith("no certificate")), "no obligations")
        print(f"verilocc: no certificate written to {path}: function {missing[0].name}: {why}", file=sys.stderr)
        return Verdict.UNKNOWN.exit_code  # VERIFIED, but the asked-for proof cannot be handed out
    files = write_certificate(path, report, inputs, seed=seed, timeout_s=timeout_s, layers=layers, seconds=seconds)
    digest = sha256_file(Path(path) / MANIFEST)
    print(f"verilocc: certificate written to {path} ({len(files) - 1} obligation(s), manifest SHA-256 {digest}); "
          f"check it with `verilocc recheck {path}`", file=sys.stderr)
    for line in uncovered_lines(report):
        print(line, file=sys.stderr)
    return report.verdict.exit_code


def uncovered_lines(report: Report) -> list[str]:
    """One line per function whose certificate leaves a claim to verilocc alone (the manifest's
    `not_covered`): the claims, and that the verdict stands (the proof covers them; the
    certificate cannot hand them out for a re-check)."""
    out: list[str] = []
    for fr in report.functions:
        cert = fr.certificate
        if cert is None or not cert.uncovered:
            continue
        claims = [f"{u.layer}{'' if u.block is None else f' bb.{u.block}'}: {u.claim}" for u in cert.uncovered]
        said = claims[0] if len(claims) == 1 else " ".join(f"({k}) {c}" for k, c in enumerate(claims, 1))
        out.append(f"verilocc: certificate gap: function {fr.name}: not covered: {said} (the verdict stays VERIFIED: "
                   "verilocc proved it; the certificate holds nothing a checker can re-establish it from)")
    return out
