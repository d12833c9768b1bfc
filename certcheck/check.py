"""Check a certificate directory: hashes, the two MIR files, the witnesses, the obligations.

Order (the first failing claim is the verdict): manifest shape; SHA-256 of both MIR files;
reading them (the accepted subset, `certcheck.mir`); per function, the witness file's SHA-256
and its check against the MIR (`certcheck.flow`); each obligation file's SHA-256 and its
decision by cvc5 and by z3, both `unsat`. Then the claims the certificate lists as not
covered are reported: they are not re-established by anyone.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from certcheck import budget, flow, regs, solvers
from certcheck.mir import BadInput, read_mir, wave32, wave32_vcc

FORMAT = "verilocc-certificate/2"
# `/2` may name entry values (`^unit`), `/3` also LLVM liveness anomalies; a `/1` witness names neither
WITNESS_FORMATS = ("verilocc-witness/1", "verilocc-witness/2", "verilocc-witness/3")


class Unreadable(Exception):
    """The certificate cannot be read at all (exit 2)."""


@dataclass
class Result:
    refused: str | None = None  # the first claim that fails
    uncovered: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # what was checked, one line each
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        if self.refused:
            return f"refused: {self.refused}"
        if self.uncovered:
            return f"accepted with {len(self.uncovered)} claim(s) not covered (listed above)"
        return "accepted"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(d: Path) -> dict[str, Any]:
    if not d.is_dir():
        raise Unreadable(f"{d}: error: not a directory")
    try:
        m = json.loads((d / "certificate.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Unreadable(f"{d}: error: no certificate.json") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise Unreadable(f"{d / 'certificate.json'}: error: unreadable ({' '.join(str(e).split())})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise Unreadable(f"{d / 'certificate.json'}: error: not a {FORMAT} manifest")
    for key in ("inputs", "functions", "obligations", "witnesses", "not_covered"):
        if not isinstance(m.get(key), list) or not all(isinstance(x, dict) for x in m[key]):
            raise Unreadable(f"{d / 'certificate.json'}: error: '{key}' is missing or malformed")
    return m


def _inside(d: Path, rel: object) -> Path:
    if not isinstance(rel, str):
        raise Unreadable(f"{d}: error: a listed file has no name")
    p = (d / rel).resolve()
    if d.resolve() not in p.parents:
        raise flow.Refused("certificate files", f"{rel} lies outside the certificate directory")
    return p



def _listed_file(d: Path, entry: dict[str, Any], seen: set[Path]) -> bytes:
    """The bytes of a file the manifest lists (a witness or an obligation), with the SHA-256
    the manifest gives it."""
    p = _inside(d, entry.get("file"))
    seen.add(p)
    try:
        raw = p.read_bytes()
    except OSError:
        raise flow.Refused("certificate files", f"{entry.get('file')} is missing") from None
    if sha256(raw) != entry.get("sha256"):
        raise flow.Refused("certificate files", f"{entry.get('file')}: SHA-256 differs from the manifest's")
    return raw

def check(directory: str, *, input_root: str | None = None, overrides: dict[str, str] | None = None,
          timeout_s: float = 60.0) -> Result:
    start = time.perf_counter()
    d = Path(directory)
    m = _manifest(d)
    res = Result()
    try:
        _check(d, m, res, input_root, overrides or {}, timeout_s)
    except flow.Refused as e:
        res.refused = str(e)
    except (regs.RegError, BadInput) as e:
        res.refused = f"MIR subset: {e}"
    # What the certificate itself says nobody re-checks, after what certcheck knows it does not
    # check (a forged manifest cannot hide those).
    res.uncovered += [f"{u.get('function')}: {u.get('layer')}"
                      f"{'' if u.get('block') is None else ', bb.' + str(u.get('block'))}: {u.get('claim')}"
                      " (the certificate says)" for u in m["not_covered"]]
    res.seconds = time.perf_counter() - start
    return res


def _check(d: Path, m: dict[str, Any], res: Result, root: str | None, overrides: dict[str, str],
           timeout_s: float) -> None:
    if m.get("verdict") != "VERIFIED":
        raise flow.Refused("verdict", f"the manifest's verdict is {m.get('verdict')}, not VERIFIED")
    # 1. the two MIR files
    data: dict[str, tuple[str, bytes]] = {}
    for inp in m["inputs"]:
        role, given = inp.get("role"), inp.get("path")
        if not isinstance(role, str) or not isinstance(given, str):
            raise Unreadable(f"{d / 'certificate.json'}: error: an input has no role or path")
        p = Path(overrides.get(role) or given)
        if role not in overrides and root is not None and not p.is_absolute():
            p = Path(root) / p
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise Unreadable(f"{p}: error: cannot read the {role} input ({e.strerror or e})") from None
        if sha256(raw) != inp.get("sha256"):
            raise flow.Refused("input hashes", f"{p}: SHA-256 differs from the certificate's (the file changed)")
        data[role] = (str(p), raw)
    if set(data) != {"pre", "post"}:
        raise flow.Refused("inputs", "the certificate must name the virtual (pre) and allocated (post) MIR files")
    res.lines.append("inputs: SHA-256 of both MIR files match")
    pre_path, post_path = data["pre"][0], data["post"][0]
    pre = {f.name: f for f in read_mir(pre_path, data["pre"][1])}
    post = read_mir(post_path, data["post"][1])
    names = [f.get("name") for f in m["functions"]]
    if names != [f.name for f in post]:
        raise flow.Refused("functions", "the manifest's functions are not those of the allocated program")
    # 2. witnesses
    listed: dict[str, set[Path]] = {"obligations": set(), "witnesses": set()}
    witnesses = {w.get("function"): w for w in m["witnesses"]}
    targets = {f.get("name"): str(f.get("target")) for f in m["functions"]}
    for fn in post:
        if fn.name not in pre:
            raise flow.Refused("functions", f"function {fn.name} is not in the virtual program")
        if wave32(pre[fn.name]) and wave32(fn):  # both files' IR say so: read them as llc does
            wave32_vcc(pre[fn.name])
            wave32_vcc(fn)
        res.lines.append(budget.check_function(pre[fn.name], fn, targets[fn.name], post_path))
        w = witnesses.get(fn.name)
        if w is None:
            res.uncovered.append(f"{fn.name}: alignment, homes, value flow, undefined reads, post-only constraints "
                                 "and callee-saved registers (the certificate has no witness for it)")
            continue
        raw = _listed_file(d, w, listed["witnesses"])
        try:
            wit = json.loads(raw)
            if wit.get("format") not in WITNESS_FORMATS or wit.get("function") != fn.name:
                raise ValueError("not this function's witness")
            mine = frozenset(ob.get("file") for ob in m["obligations"] if ob.get("function") == fn.name)
            flow.FunctionCheck(pre[fn.name], fn, wit, targets[fn.name], (pre_path, post_path), mine).run()
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise flow.Refused("witness", f"{w.get('file')}: malformed ({type(e).__name__}: {e})") from None
        blocks = len(wit["blocks"])
        res.lines.append(f"{fn.name}: witness re-checked ({blocks} block(s): alignment, homes, value flow, "
                         "post-only constraints, callee-saved registers)")
    # 3. obligations
    with_constraints = {ob.get("function") for ob in m["obligations"] if ob.get("layer") == "constraints"}
    for fn in post:
        if fn.name not in with_constraints:
            raise flow.Refused("obligations", f"function {fn.name}: no layer 1 (constraints) obligation")
    for ob in m["obligations"]:
        if ob.get("expect") != "unsat":
            raise flow.Refused("obligations", f"{ob.get('file')}: the manifest expects {ob.get('expect')!r}, not unsat")
        raw = _listed_file(d, ob, listed["obligations"])
        text = raw.decode("utf-8", errors="replace")
        claim = f"{ob.get('function')}: {ob.get('layer')}" + ("" if ob.get("block") is None else f", bb.{ob['block']}")
        for name, decide in (("cvc5", solvers.cvc5_answer), ("z3", solvers.z3_answer)):
            answer = decide(text, timeout_s)
            if answer != "unsat":
                raise flow.Refused(claim, f"{ob.get('file')}: {name} answers {answer}, not unsat")
    res.lines.append(f"obligations: {len(m['obligations'])} unsat for z3 and for cvc5")
    for sub, seen in listed.items():
        if (d / sub).is_dir():
            extra = sorted(str(p.relative_to(d.resolve())) for p in (d / sub).resolve().rglob("*")
                           if p.is_file() and p not in seen)
            if extra:
                raise flow.Refused("certificate files", f"{extra[0]} is not listed in the manifest")
