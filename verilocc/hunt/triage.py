"""Sort the functions a hunt did not verify cleanly into three groups, with the evidence.

(a) *limitation of verilocc*: a construct verilocc does not model, or a finding that nothing
    shows to be the allocation's fault. Each is a bug of ours to fix.
(b) *candidate LLVM bug*: an allocation that breaks the virtual program, as far as the
    evidence goes; it is reduced and checked against llc's final assembly before it is called
    a bug (`docs/hunt.md`).
(c) *harmless anomaly*: VERIFIED, with a `liveness-anomaly` warning (a read LLVM's liveness
    left out, proved not to change any result).

Deciding (a) against (b) by machine is a judgement from evidence, made in this order (first
rule that applies):

1. A human-confirmed row of the triage file (`tests/fixtures/hunt/triage.tsv` by default:
   input, function, llvm, target, allocator, mode, finding kind, finding message, group,
   reason; each cell a shell pattern, `*` matches anything) decides, and its reason is shown.
2. UNKNOWN, and REJECTED by a finding that is about verilocc's reading rather than the
   allocation (`LIMITATION_KINDS`: an added, dropped or unsupported instruction, blocks that do
   not pair, a layer that did not finish...), is (a).
3. A wrong value that the allocated program shows undefined by itself (`UNDEFINED_LANE`: an
   SGPR restored from a lane that, on some path, an `IMPLICIT_DEF` left undefined, no spill to
   that lane in between, possibly by way of stack slots and other lanes) is (b): the allocated
   program reads a value no instruction wrote, whatever verilocc's model of the virtual one.
4. A finding about values (`VALUE_KINDS`: wrong value, not equivalent, interference, an
   early-clobber, tied, class, alignment or budget fault, a callee-saved register lost) is (b)
   when another allocation of *the same virtual program* made the same way is VERIFIED for the
   same function: another allocator of the same llc and target whose pre file has the same
   instruction sequence. verilocc then reads every construct of that program; what differs is
   the allocation.
5. Such a finding with a VERIFIED allocation only from the other way of making the pair (one
   process against reread) is (a): LLVM's liveness in memory and the printed MIR differ there,
   typically a lane the instruction does not read (`V_PK_FMA_F32` with `op_sel_hi` 0 reads the
   low half of a 64-bit operand only), which verilocc cannot discharge without that opcode's
   semantics. The one-process/reread section lists each for a human.
6. Anything else is (a): no allocation of that virtual program is VERIFIED, so the finding
   may well be a construct verilocc does not model. Functions VERIFIED by another LLVM
   version or target are listed as evidence but do not decide (their virtual programs differ).
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LIMITATION_KINDS = frozenset({
    "unsupported", "added-instruction", "dropped-instruction", "cfg", "missing-function", "no-fixed-point",
    "solver", "operands", "layers", "parse", "unallocated", "debug-use", "implicit-def",
})
VALUE_KINDS = frozenset({
    "wrong-value", "not-equivalent", "interference", "early-clobber", "tied", "illegal-copy", "class", "alignment", "bounds",
    "budget", "reserved", "fixed-register", "callee-saved-lost", "undefined-read", "width",
})
# What value flow adds to a wrong value read from a lane an IMPLICIT_DEF left undefined
# (`verilocc.semantics.valueflow.ValueFlowChecker.undefined_lane`).
UNDEFINED_LANE = re.compile(r"restored at line \d+ from lane \d+ of `\$vgpr\d+`(, copying lane \d+ of `\$vgpr\d+`)?, "
                            r"which `IMPLICIT_DEF` at line \d+ left undefined")
GROUPS = {"a": "limitation of verilocc", "b": "candidate LLVM bug", "c": "harmless anomaly"}
TRIAGE_HEADER = ("input", "function", "llvm", "target", "allocator", "mode", "kind", "message", "group", "reason")


@dataclass(frozen=True)
class TriageRow:
    """One human-confirmed decision; `*` (or an empty cell) matches anything, shell patterns work."""

    input: str
    function: str
    llvm: str
    target: str
    allocator: str
    mode: str
    kind: str
    message: str
    group: str
    reason: str

    def matches(self, rec: dict[str, Any]) -> bool:
        for key in ("input", "function", "llvm", "target", "allocator", "mode", "kind", "message"):
            pattern = getattr(self, key) or "*"
            if not fnmatch.fnmatchcase(str(rec.get(key, "")), pattern):
                return False
        return True


class TriageError(Exception):
    """A malformed triage file: `file:line: message`."""


def read_triage(path: Path) -> list[TriageRow]:
    rows: list[TriageRow] = []
    if not path.exists():
        return rows
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cells = raw.split("\t")
        if tuple(c.strip() for c in cells) == TRIAGE_HEADER:
            continue
        if len(cells) != len(TRIAGE_HEADER):
            raise TriageError(f"{path}:{n}: {len(cells)} tab-separated cells, expected {len(TRIAGE_HEADER)} "
                              f"({', '.join(TRIAGE_HEADER)})")
        row = TriageRow(*(c.strip() for c in cells))
        if row.group not in GROUPS:
            raise TriageError(f"{path}:{n}: group '{row.group}' is not one of {', '.join(GROUPS)}")
        rows.append(row)
    return rows


def program_fingerprint(signatures: list[tuple[str, tuple[str, ...]]]) -> str:
    """The instruction sequence of a virtual program's function (opcodes only: one-process and
    reread pre files number virtual registers differently)."""
    return hashlib.sha256("\n".join(op for op, _ in signatures).encode()).hexdigest()[:16]


def _same_program(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """b allocates the virtual program a allocates (same llc, target, function and instruction
    sequence) in another way."""
    return (a["input"], a["llvm"], a["target"], a["function"]) == (b["input"], b["llvm"], b["target"], b["function"]) \
        and (a["allocator"], a["mode"]) != (b["allocator"], b["mode"]) \
        and a.get("program") is not None and a.get("program") == b.get("program")


def where(rec: dict[str, Any]) -> str:
    return f"llc-{rec['llvm']} {rec['target']} {rec['allocator']} {rec['mode']}"


def classify(records: list[dict[str, Any]], triage: list[TriageRow]) -> None:
    """Set `group`, `reason` and `evidence` on every record that is not plainly VERIFIED."""
    verified = [r for r in records if r.get("verdict") == "VERIFIED"]
    by_function: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in verified:
        by_function.setdefault((r["input"], r["function"]), []).append(r)
    for r in records:
        verdict = r.get("verdict")
        if verdict == "VERIFIED" and not r.get("anomalies"):
            continue
        if verdict == "VERIFIED":
            r.update(group="c", reason="VERIFIED with a liveness anomaly", evidence=[])
            continue
        others = by_function.get((r["input"], r["function"]), [])
        same_mode = sorted(where(o) for o in others if _same_program(r, o) and o["mode"] == r["mode"])
        other_mode = sorted(where(o) for o in others if _same_program(r, o) and o["mode"] != r["mode"])
        same = same_mode + other_mode
        elsewhere = sorted(where(o) for o in others
                           if (o["llvm"], o["target"]) != (r["llvm"], r["target"]))
        r["evidence"] = [f"VERIFIED, same virtual program: {w}" for w in same] + \
            [f"VERIFIED elsewhere: {w}" for w in elsewhere[:6]] + \
            ([f"... and {len(elsewhere) - 6} more"] if len(elsewhere) > 6 else [])
        row = next((t for t in triage if t.matches(r)), None)
        kind = r.get("kind", "")
        if row is not None:
            r.update(group=row.group, reason=f"triaged: {row.reason}", triaged=True)
        elif verdict == "UNKNOWN" or kind in LIMITATION_KINDS or "error" in r:
            r.update(group="a", reason="not decided: " + ("UNKNOWN (a proof did not finish)" if verdict == "UNKNOWN"
                                                          else f"`{kind}` is about verilocc's reading of the pair"))
        elif kind == "wrong-value" and UNDEFINED_LANE.search(r.get("message", "")):
            r.update(group="b", reason="the allocated program restores the value from a lane of a VGPR that "
                                       "`IMPLICIT_DEF` left undefined earlier in the block (LLVM's SGPR spill "
                                       "lowering; docs/llvm-bugs.md)")
        elif kind in VALUE_KINDS and same_mode:
            r.update(group="b", reason="a value fault, and the same virtual program is VERIFIED when "
                                       f"{same_mode[0].split(' ', 2)[2]} allocates it")
        elif kind in VALUE_KINDS and other_mode:
            r.update(group="a", reason="VERIFIED only when the pair is made the other way: LLVM's liveness in "
                                       "memory and the printed MIR differ (a read the instruction may not make, "
                                       "whose semantics verilocc does not model)")
        else:
            r.update(group="a", reason="no allocation of this virtual program is VERIFIED: may be a "
                                       "construct verilocc does not model")
