"""`verilocc recheck DIR`: re-check a certificate without trusting verilocc's proof.

1. The manifest must be a verilocc certificate of a VERIFIED verdict whose every obligation
   expects `unsat`.
2. Every input file is hashed again and must match. Paths are resolved as the manifest
   records them (as given to `verify`, relative to the current directory), under
   `--input-root` when given, or replaced by `--post/--pre/--assignment`.
3. Every obligation file is hashed again; a missing file, a changed one, a file under
   `obligations/` the manifest does not list, or a listed file outside DIR is tampering.
4. Every obligation is parsed and decided by cvc5 (its own SMT-LIB parser, a fresh solver
   each, a time limit per obligation). Only `unsat` passes; `sat`, `unknown`, a timeout or a
   parse error fails. Scripts may only declare, define, assert and end with one check-sat.

The manifest itself is not signed (whoever can change the files can change it): its SHA-256
is printed, to compare with one kept apart from the certificate. Every problem is reported
on its own line; any problem fails the re-check (exit 1). A
certificate that cannot be read at all is bad input (exit 2). Claims the manifest lists as
not covered are printed as not independently re-checked.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilocc.certificate.obligation import CertificateError
from verilocc.certificate.write import FORMAT, MANIFEST, OBLIGATIONS, sha256_file
from verilocc.errors import InputError

_ALLOWED_COMMANDS = frozenset({"set-logic", "set-info", "declare-sort", "declare-fun", "declare-const",
                               "define-fun", "define-sort", "assert"})


@dataclass
class ObligationOutcome:
    """What rechecking one obligation of a certificate gave."""

    file: str
    layer: str
    answer: str  # "unsat", "sat", "unknown", "error"
    seconds: float
    detail: str = ""


@dataclass
class RecheckResult:
    manifest: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    outcomes: list[ObligationOutcome] = field(default_factory=list)
    inputs_checked: int = 0
    seconds: float = 0.0
    solver: str = ""
    manifest_sha256: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def cvc5_version() -> str:
    import cvc5

    return str(cvc5.__version__)  # type: ignore[attr-defined]


def load_manifest(directory: Path) -> dict[str, Any]:
    where = directory / MANIFEST
    if not directory.is_dir():
        raise CertificateError("not a directory")
    try:
        manifest = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CertificateError(f"no {MANIFEST}: not a verilocc certificate") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CertificateError(f"cannot read {MANIFEST}: {e}") from None
    except ValueError as e:
        raise CertificateError(f"{MANIFEST} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CertificateError(f"{MANIFEST} is not a {FORMAT} manifest")
    for key, kind in (("inputs", list), ("obligations", list), ("verdict", str)):
        if not isinstance(manifest.get(key), kind):
            raise CertificateError(f"{MANIFEST}: '{key}' is missing or malformed")
    for ob in manifest["obligations"]:
        if not (isinstance(ob, dict) and isinstance(ob.get("file"), str) and isinstance(ob.get("sha256"), str)):
            raise CertificateError(f"{MANIFEST}: an obligation has no 'file' or 'sha256'")
    for inp in manifest["inputs"]:
        if not (isinstance(inp, dict) and isinstance(inp.get("path"), str) and isinstance(inp.get("sha256"), str)
                and isinstance(inp.get("role"), str)):
            raise CertificateError(f"{MANIFEST}: an input has no 'role', 'path' or 'sha256'")
    return manifest  # type: ignore[no-any-return]


def solve_cvc5(path: Path, timeout_s: float) -> tuple[str, str]:
    """(answer, detail) of cvc5 on one SMT-LIB script."""
    import cvc5

    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("tlimit-per", str(max(1, int(timeout_s * 1000))))
    symbols = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, symbols)
    checks = 0
    answer = "error"
    detail = "no (check-sat)"
    try:
        parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, str(path))
        while True:
            cmd = parser.nextCommand()
            if cmd.isNull():
                break
            name = cmd.getCommandName()
            if checks:
                return "error", f"`{name}` after (check-sat)"
            if name == "check-sat":
                checks += 1
                r = solver.checkSat()
                if r.isUnsat():
                    answer, detail = "unsat", ""
                elif r.isSat():
                    answer, detail = "sat", ""
                else:
                    answer, detail = "unknown", str(r.getUnknownExplanation())
            elif name in _ALLOWED_COMMANDS:
                cmd.invoke(solver, symbols)
            else:
                return "error", f"command `{name}` is not allowed in an obligation"
    except RuntimeError as e:  # cvc5 reports parse and logic errors this way
        return "error", " ".join(str(e).split())
    return answer, detail


def recheck(directory: str, *, input_root: str | None = None, overrides: dict[str, str] | None = None,
            timeout_s: float = 60.0, progress: Any = None) -> RecheckResult:
    start = time.perf_counter()
    try:
        import cvc5  # noqa: F401 - the re-check needs it; say so before reading anything
    except ImportError:
        raise InputError("cvc5 is not installed (pip install cvc5); it is the solver that re-checks", "<cvc5>", 0, 0) \
            from None
    d = Path(directory)
    manifest = load_manifest(d)
    res = RecheckResult(manifest, solver=f"cvc5 {cvc5_version()}")
    res.manifest_sha256 = sha256_file(d / MANIFEST)
    if manifest["verdict"] != "VERIFIED":
        res.problems.append(f"the manifest's verdict is {manifest['verdict']}, not VERIFIED")
    # Every function keeps its layer 1 obligation: a manifest that lost one lost a claim.
    with_constraints = {ob.get("function") for ob in manifest["obligations"] if ob.get("layer") == "constraints"}
    for fn in manifest.get("functions", []):
        name = fn.get("name") if isinstance(fn, dict) else None
        if name not in with_constraints:
            res.problems.append(f"function {name}: the manifest lists no layer 1 obligation for it")

    # Inputs.
    for inp in manifest["inputs"]:
        role, given = inp["role"], inp["path"]
        p = Path((overrides or {}).get(role) or given)
        if not p.is_absolute() and input_root is not None and role not in (overrides or {}):
            p = Path(input_root) / p
        try:
            digest = sha256_file(p)
        except OSError as e:
            res.problems.append(f"input {role} {p}: cannot read it ({e.strerror or e})")
            continue
        res.inputs_checked += 1
        if digest != inp["sha256"]:
            res.problems.append(f"input {role} {p}: SHA-256 {digest[:16]}... differs from the certificate's "
                                f"{inp['sha256'][:16]}... (the file changed)")

    # Obligation files: exactly the listed ones, unchanged.
    root = d.resolve()
    listed: dict[Path, dict[str, Any]] = {}
    for ob in manifest["obligations"]:
        p = (d / ob["file"]).resolve()
        if root not in p.parents:
            res.problems.append(f"obligation {ob['file']}: lies outside the certificate directory")
            continue
        if p in listed:
            res.problems.append(f"obligation {ob['file']}: listed twice")
        listed[p] = ob
        if ob.get("expect") != "unsat":
            res.problems.append(f"obligation {ob['file']}: expects {ob.get('expect')!r}, not unsat")
    ob_dir = d / OBLIGATIONS
    if ob_dir.is_dir():
        for p in sorted(ob_dir.rglob("*")):
            if p.is_file() and p.resolve() not in listed:
                res.problems.append(f"{p.relative_to(d)}: not listed in the manifest (an extra claim)")
    to_solve: list[tuple[Path, dict[str, Any]]] = []
    for p, ob in listed.items():
        try:
            digest = sha256_file(p)
        except OSError:
            res.problems.append(f"obligation {ob['file']}: missing")
            continue
        if digest != ob["sha256"]:
            res.problems.append(f"obligation {ob['file']}: SHA-256 differs from the manifest (the file changed)")
            continue
        to_solve.append((p, ob))

    # cvc5.
    for k, (p, ob) in enumerate(to_solve):
        if progress is not None:
            progress(k, len(to_solve), ob["file"])
        t0 = time.perf_counter()
        answer, detail = solve_cvc5(p, timeout_s)
        seconds = time.perf_counter() - t0
        res.outcomes.append(ObligationOutcome(ob["file"], str(ob.get("layer", "?")), answer, seconds, detail))
        if answer == "sat":
            res.problems.append(f"obligation {ob['file']}: cvc5 finds it satisfiable; the claim "
                                f"'{ob.get('claim', '?')}' does not hold")
        elif answer == "unknown":
            why = "timeout" if "TIMEOUT" in detail.upper() else detail or "unknown"
            res.problems.append(f"obligation {ob['file']}: cvc5 answers unknown ({why}) within {timeout_s:g} s")
        elif answer == "error":
            res.problems.append(f"obligation {ob['file']}: cvc5 cannot check it: {detail}")
    res.seconds = time.perf_counter() - start
    return res


def render(res: RecheckResult, directory: str, console: Any) -> None:
    """The summary: problems first (one line each), then a table per layer, then coverage."""
    from rich.table import Table

    for p in res.problems:
        console.print(f"{directory}: error: {p}", markup=False)
    m = res.manifest
    table = Table(title=None, show_edge=False)
    for col in ("layer", "obligations", "unsat", "failed", "cvc5 seconds", "slowest"):
        table.add_column(col, justify="left" if col == "layer" else "right")
    layers = sorted({o.layer for o in res.outcomes})
    for layer in layers:
        mine = [o for o in res.outcomes if o.layer == layer]
        unsat = sum(o.answer == "unsat" for o in mine)
        table.add_row(layer, str(len(mine)), str(unsat), str(len(mine) - unsat),
                      f"{sum(o.seconds for o in mine):.2f}", f"{max(o.seconds for o in mine):.2f}")
    console.print(table)
    versions = m.get("versions", {})
    console.print(f"inputs re-hashed: {res.inputs_checked}/{len(m['inputs'])}; obligations: {len(m['obligations'])} "
                  f"listed, {len(res.outcomes)} decided by {res.solver} in {res.seconds:.2f} s; proved with "
                  f"verilocc {versions.get('verilocc', '?')} and z3 {versions.get('z3', '?')}", markup=False)
    not_covered = m.get("not_covered", [])
    if not_covered:
        console.print(f"not independently re-checked ({len(not_covered)} claim(s), trusted to verilocc):", markup=False)
        seen: dict[tuple[str, str, str], int] = {}
        for u in not_covered:
            block = u.get("block")
            claim = str(u.get("claim", "?"))
            if block is not None:
                claim = f"bb.{block}: " + claim.split(": ", 1)[-1] if claim.startswith("bb.") else claim
            key = (str(u.get("layer", "?")), claim, str(u.get("reason", "")))
            seen[key] = seen.get(key, 0) + 1
        for (layer, claim, reason), n in seen.items():
            times = f" (in {n} functions)" if n > 1 else ""
            console.print(f"  - {layer}: {claim}{times}: {reason}", markup=False)
    # The manifest is not signed: an auditor compares this with a hash kept elsewhere.
    console.print(f"manifest SHA-256: {res.manifest_sha256}", markup=False)
    verdict = "RECHECKED" if res.ok else "RECHECK FAILED"
    console.print(f"{verdict} {directory}: {len(res.problems)} problem(s)", markup=False)
