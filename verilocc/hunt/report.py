"""A hunt's table, as markdown and as JSON: the same records, sorted, without timings.

Markdown sections: pairs and verdicts per LLVM, target and allocator; the three groups
(`verilocc.hunt.triage`); every candidate LLVM bug with its evidence and reproducer; the
limitations by cause; the harmless anomalies; one-process against reread; and why llc did not
make the pairs it did not make. `write_section` puts the markdown between
`<!-- hunt:begin -->` and `<!-- hunt:end -->` of a document and leaves the rest as it is.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from verilocc.hunt.check import CAUSES
from verilocc.hunt.run import HuntResult, record_key, target_key
from verilocc.hunt.triage import GROUPS
from verilocc.llc.text import write_if_changed

BEGIN, END = "<!-- hunt:begin -->", "<!-- hunt:end -->"


def cell(s: str, limit: int = 160) -> str:
    s = " ".join(str(s).split()).replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _where(members: list[dict[str, Any]]) -> str:
    """`19: gfx90a gfx1100 (greedy one-process, greedy reread); 22: ...`"""
    parts = []
    for v in sorted({m["llvm"] for m in members}, key=int):
        ms = [m for m in members if m["llvm"] == v]
        targets = " ".join(sorted({m["target"] for m in ms}, key=target_key))
        ways = ", ".join(sorted({f"{m['allocator']} {m['mode']}" for m in ms}))
        parts.append(f"{v}: {targets} ({ways})")
    return "; ".join(parts)


def _finding(r: dict[str, Any]) -> str:
    if r.get("verdict") is None:
        return f"{r.get('error')}: {r.get('message', '')}"
    return f"`{r.get('kind', '')}`: {r.get('message', '')}"


def counts_table(result: HuntResult) -> list[str]:
    out = ["| LLVM | target | allocator | pairs made | not made (llc) | VERIFIED | of them (c) | REJECTED | "
           "UNKNOWN | pairs not verified |", "|---|---|---|---|---|---|---|---|---|---|"]
    made: Counter[tuple[str, str, str, str]] = Counter()
    for p in result.pairs:
        made[(p["llvm"], p["target"], p["allocator"], "ok" if p["status"] == "ok" else "not")] += 1
    c: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for r in result.records:
        k = (r["llvm"], r["target"], r["allocator"])
        c[k][r.get("verdict") or "bad"] += 1
        c[k]["anomaly"] += bool(r.get("verdict") == "VERIFIED" and r.get("anomalies"))
    keys = sorted({(p["llvm"], p["target"], p["allocator"]) for p in result.pairs},
                  key=lambda k: (int(k[0]), target_key(k[1]), k[2]))
    total: Counter[str] = Counter()
    for k in keys:
        n = c[k]
        row = {"made": made[(*k, "ok")], "not": made[(*k, "not")], **n}
        total.update(row)
        if not row["made"] and not row["not"]:
            continue
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {row['made']} | {row['not']} | {n['VERIFIED']} | {n['anomaly']} | "
                   f"{n['REJECTED']} | {n['UNKNOWN']} | {n['bad']} |")
    out.append(f"| all | | | {total['made']} | {total['not']} | {total['VERIFIED']} | {total['anomaly']} | "
               f"{total['REJECTED']} | {total['UNKNOWN']} | {total['bad']} |")
    return out


def markdown(result: HuntResult, command: str, reproducers: dict[tuple[str, ...], dict[str, Any]]) -> str:
    out = [f"Made by `{command}`.", "", "#### Pairs and verdicts (functions) per LLVM, target and allocator", ""]
    out += counts_table(result)
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in result.records:
        if r.get("group"):
            grouped[r["group"]].append(r)
    out += ["", "#### Groups", "", "| group | functions (pairs) | distinct input functions | how it is decided |",
            "|---|---|---|---|"]
    how = {"a": "UNKNOWN; a finding about verilocc's reading; or no allocation of the same virtual program "
                "VERIFIED (`verilocc/hunt/triage.py`)",
           "b": "a value fault while another allocator or mode VERIFIES the same virtual program; or triaged",
           "c": "VERIFIED with a `liveness-anomaly` warning"}
    for g, label in GROUPS.items():
        rs = grouped.get(g, [])
        out.append(f"| ({g}) {label} | {len(rs)} | {len({(r['input'], r['function']) for r in rs})} | {how[g]} |")
    out += _bugs(grouped.get("b", []), reproducers)
    out += _limitations(grouped.get("a", []))
    out += _anomalies(grouped.get("c", []))
    out += _modes(result.modes)
    out += _not_made(result.pairs)
    return "\n".join(out) + "\n"


def case_key(r: dict[str, Any]) -> tuple[str, ...]:
    return (r["input"], r["function"], r["llvm"], r["target"], r["allocator"], r["mode"])


def _bugs(rs: list[dict[str, Any]], reproducers: dict[tuple[str, ...], dict[str, Any]]) -> list[str]:
    out = ["", f"#### (b) Candidate LLVM bugs: {len(rs)}", ""]
    if not rs:
        return out + ["None."]
    by_fn: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rs:
        by_fn[(r["input"], r["function"])].append(r)
    for (inp, fn), members in sorted(by_fn.items()):
        first = members[0]
        out += [f"- **{inp}** `{fn}` ({_where(members)}): {cell(_finding(first), 400)}"]
        if first.get("source"):
            out.append(f"  - {first.get('file', 'post')} line {first.get('line')}: `{cell(first['source'], 200)}`")
        out.append(f"  - why (b): {first['reason']}")
        for e in first.get("evidence", [])[:4]:
            out.append(f"  - evidence: {e}")
        rep = reproducers.get(case_key(first))
        if rep:
            if rep.get("reduced"):
                out.append(f"  - reduced: `{rep['reduced']}` ({rep.get('note', '')})")
            elif rep.get("note"):
                out.append(f"  - reduction: {rep['note']}")
            out.append("  - reproduce: `" + "` ; `".join(rep["commands"]) + "`")
    return out


def signature(r: dict[str, Any]) -> str:
    """What a limitation is about, across functions: the finding kind and the opcode it names."""
    if r.get("verdict") is None:
        return f"{r.get('error')}"
    m = OPCODE.search(r.get("source", "").split(" = ", 1)[-1]) or NAMED.search(r.get("message", ""))
    return f"`{r.get('kind', '')}` at {m.group(1) if m else '(no instruction)'}"


NAMED = re.compile(r"`([A-Z][A-Z0-9_]*[A-Z0-9])`")


OPCODE = re.compile(r"\b([A-Z][A-Z0-9_]*[A-Z0-9])\b")


def _limitations(rs: list[dict[str, Any]]) -> list[str]:
    """By cause, then by signature (finding kind and opcode): each signature is one thing verilocc
    does not read or model yet, with how often, where, and its first occurrence."""
    out = ["", f"#### (a) Limitations of verilocc: {len(rs)}", "", "| cause | functions | inputs | rule |",
           "|---|---|---|---|"]
    by_cause: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rs:
        by_cause[r.get("cause") or ("parse error" if r.get("error") == "parse error" else "other")].append(r)
    for cause, rule in CAUSES:
        fs = by_cause.get(cause, [])
        if fs:
            out.append(f"| {cause} | {len(fs)} | {len({f['input'] for f in fs})} | {rule} |")
    out += ["", "| cause | signature | functions | input functions | LLVM | first occurrence | why (a) |",
            "|---|---|---|---|---|---|---|"]
    for cause, _ in CAUSES:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in by_cause.get(cause, []):
            groups[signature(f)].append(f)
        for sig, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            first = members[0]
            versions = " ".join(sorted({m["llvm"] for m in members}, key=int))
            src = f" — `{cell(first['source'], 90)}`" if first.get("source") else ""
            example = f"{first['input']} `{first['function']}` (llc-{first['llvm']} {first['target']} " \
                      f"{first['allocator']} {first['mode']}): {cell(_finding(first), 140)}{src}"
            out.append(f"| {cause} | {sig} | {len(members)} | {len({(m['input'], m['function']) for m in members})} | "
                       f"{versions} | {example} | {cell(first.get('reason', ''), 90)} |")
    return out


def _anomalies(rs: list[dict[str, Any]]) -> list[str]:
    out = ["", f"#### (c) Harmless anomalies: {len(rs)}", ""]
    if not rs:
        return out + ["None."]
    out += ["| input | function | where | anomaly (first) |", "|---|---|---|---|"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rs:
        groups[(r["input"], r["function"])].append(r)
    for (inp, fn), members in sorted(groups.items()):
        out.append(f"| {inp} | {fn} | {_where(members)} | {cell(members[0].get('message', ''))} |")
    return out


def _modes(modes: dict[str, Any]) -> list[str]:
    out = ["", "#### One-process against reread", "",
           f"{modes['functions']} functions were allocated both ways: {modes['same allocation']} got the same "
           f"allocation, {modes['different allocation']} a different one; the outcome differs for "
           f"{len(modes['outcome differs'])}."]
    if modes["outcome differs"]:
        out += ["", "| input | function | LLVM | target | allocator | one-process | reread | same allocation | "
                    "finding |", "|---|---|---|---|---|---|---|---|---|"]
        for d in modes["outcome differs"]:
            out.append(f"| {d['input']} | {d['function']} | {d['llvm']} | {d['target']} | {d['allocator']} | "
                       f"{d['one-process']} | {d['reread']} | {'yes' if d['same allocation'] else 'no'} | "
                       f"{cell(d['finding'], 120)} |")
    return out


def _not_made(pairs: list[dict[str, Any]]) -> list[str]:
    failed = [p for p in pairs if p["status"] == "fail"]
    out = ["", f"#### Pairs llc did not make: {len(failed)} (and {sum(p['status'] == 'skip' for p in pairs)} "
               "skipped: target unknown to that llc, or one-process for a MIR input)", ""]
    if not failed:
        return out
    reasons: Counter[tuple[str, str]] = Counter()
    for p in failed:
        note = re.sub(r"llc exited -?\d+: ", "", p["note"])
        note = re.sub(r"\(0x[0-9a-f]+\)|0x[0-9a-f]+|\S+\.(ll|mir):\d+:\d+:", "", note)
        reasons[(p["llvm"], cell(note.split(" | ")[0], 110))] += 1
    out += ["| LLVM | first error line | pairs |", "|---|---|---|"]
    for (v, why), n in sorted(reasons.items(), key=lambda kv: (int(kv[0][0]), -kv[1], kv[0][1])):
        out.append(f"| {v} | {why} | {n} |")
    return out


def to_json(result: HuntResult, command: str, reproducers: dict[tuple[str, ...], dict[str, Any]]) -> str:
    slim = ("input", "llvm", "target", "allocator", "mode", "function", "verdict", "program")
    functions = [r if r.get("group") else {k: r[k] for k in slim if k in r} for r in result.records]
    cases = [dict(zip(("input", "function", "llvm", "target", "allocator", "mode"), k), **v)
             for k, v in sorted(reproducers.items())]
    doc = {"command": command, "pairs": sorted(result.pairs, key=record_key), "functions": functions,
           "modes": result.modes, "reproducers": cases}
    return json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"


def write_section(path: Path, section: str, title: str = "# verilocc hunt") -> None:
    old = path.read_text() if path.exists() else f"{title}\n\n{BEGIN}\n{END}\n"
    if BEGIN not in old or END not in old:
        old = old.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    head, rest = old.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    write_if_changed(path, f"{head}{BEGIN}\n{section}{END}{tail}")
