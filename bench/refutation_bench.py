#!/usr/bin/env python3
"""Benchmark: refuting wrong allocations, with and without the solver.

    python bench/refutation_bench.py [--compare DIR] [--pairs tests/fixtures/llvm] [-o F.md]

The wrong allocations are the findings snapshot's mutants (`scripts/findings_snapshot.py`: one
seeded mutant per mutation operator) of every pair under `--pairs` (by default the LLVM 15 and
16 kernel pairs of `tests/fixtures/llvm`). Each is verified (all layers) in a child process per
checkout: this one and, with `--compare DIR`, another, the two measured in turn, pair by pair,
so that both see the same load. Per checkout: mutants REJECTED, the functions whose
equivalence obligations a concrete interpretation refuted without z3 (`verilocc.semantics.
interpretation`; the layer's `refuted_by` statistic), and the seconds spent verifying (summed
over mutants) and in all (with each child's start-up). The verdicts of both checkouts must be the same;
the bench says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in the checkout under test: the mutants of one pair, one JSON line per mutant.
_CHILD = r"""
import json, sys, time
sys.path.insert(0, "scripts")
import findings_snapshot as fs
from verilocc.fuzz.mutations import OPERATORS
from verilocc.mir.parser import read_module
from verilocc.verify import Options, verify_modules
name, post, pre = sys.argv[1:4]
post_m, pre_m = read_module(post), read_module(pre)
for op in sorted(OPERATORS):
    m = fs.mutant(name, post_m, op, 0)
    if m is None:
        continue
    t = time.perf_counter()
    r = verify_modules(m.module, pre_m, Options())
    how = [f.stats.get("refuted_by") for f in r.functions]
    print(json.dumps({"op": op, "verdict": r.verdict.name, "how": how, "s": time.perf_counter() - t}))
"""


def _pairs(under: Path) -> list[tuple[str, Path, Path]]:
    """The snapshot's pairs (named as it names them, which seeds their mutants) under `under`."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from findings_snapshot import pairs

    return [p for p in pairs([ROOT / "tests" / "fixtures"]) if p[1].is_relative_to(under)]


def _run(checkout: Path, name: str, post: Path, pre: Path) -> tuple[list[dict[str, object]], float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    got = subprocess.run([sys.executable, "-c", _CHILD, name, str(post), str(pre)], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True)
    return [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")], time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", type=Path, help="another checkout, measured in turn")
    ap.add_argument("--pairs", type=Path, default=ROOT / "tests" / "fixtures" / "llvm")
    ap.add_argument("-o", type=Path, help="also write the table here")
    args = ap.parse_args()
    checkouts = [("this", ROOT)] + ([("compared", args.compare.resolve())] if args.compare else [])
    totals = {label: {"mutants": 0, "rejected": 0, "interpretation": 0, "seconds": 0.0, "verify_s": 0.0}
              for label, _ in checkouts}
    verdicts: dict[str, dict[str, str]] = {label: {} for label, _ in checkouts}
    pairs = _pairs(args.pairs.resolve())
    for name, post, pre in pairs:
        for label, checkout in checkouts:
            rows, seconds = _run(checkout, name, post, pre)
            t = totals[label]
            t["seconds"] += seconds
            for row in rows:
                t["mutants"] += 1
                t["rejected"] += row["verdict"] == "REJECTED"
                t["verify_s"] += float(row["s"])  # type: ignore[arg-type]
                t["interpretation"] += sum(how == "random interpretation" for how in row["how"])  # type: ignore[union-attr]
                verdicts[label][f"{name}#{row['op']}"] = str(row["verdict"])
    lines = [f"Mutants of {len(pairs)} pairs under {args.pairs.relative_to(ROOT) if args.pairs.is_relative_to(ROOT) else args.pairs}, "
             "one per mutation operator (the findings snapshot's); the checkouts measured in turn, pair by pair.", "",
             "| checkout | mutants | REJECTED | functions the interpretation refuted (no z3) | seconds verifying (sum) | seconds with start-up |",
             "|---|---:|---:|---:|---:|---:|"]
    for label, checkout in checkouts:
        t = totals[label]
        lines.append(f"| {label} ({checkout.name}) | {t['mutants']} | {t['rejected']} | {t['interpretation']} | "
                     f"{t['verify_s']:.1f} | {t['seconds']:.1f} |")
    if args.compare:
        same = verdicts["this"] == verdicts["compared"]
        lines += ["", "Verdicts: " + ("the same, mutant by mutant." if same else "DIFFERENT: " + ", ".join(
            k for k in sorted(set(verdicts["this"]) | set(verdicts["compared"]))
            if verdicts["this"].get(k) != verdicts["compared"].get(k)))]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.o:
        args.o.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
