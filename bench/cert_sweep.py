#!/usr/bin/env python3
"""Benchmark: every pair under some directories certified and checked (docs/measurements.md,
"Certificates").

    python bench/cert_sweep.py ../shared/corpus tests/fixtures [-j 2]

Per pair (`X.post.mir` beside `X.pre.mir`, found recursively), in child processes:
`verilocc verify X.post.mir --pre X.pre.mir --certificate C`; for a VERIFIED pair, `certcheck -q C`
and the number of claims the manifest leaves in `not_covered`. Prints one line per pair, then
the counts: VERIFIED pairs accepted with nothing uncovered, accepted with claims not covered,
refused, VERIFIED without a certificate, and pairs not VERIFIED.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)


def one(post: Path) -> tuple[str, str]:
    """The pair's outcome: `not verified (VERDICT)`, `no certificate`, `refused`, `accepted` or
    `accepted with gaps`, and the line that says it."""
    pre = post.with_name(post.name[: -len(".post.mir")] + ".pre.mir")
    with tempfile.TemporaryDirectory() as tmp:
        cert = Path(tmp) / "c"
        v = _run([sys.executable, "-m", "verilocc", "verify", str(post), "--pre", str(pre), "--certificate", str(cert)])
        verdict = (v.stdout.split() or ["?"])[0]
        if verdict != "VERIFIED":
            return f"not verified ({verdict})", verdict
        if not (cert / "certificate.json").exists():
            return "no certificate", (v.stderr.strip().splitlines() or [""])[-1]
        gaps = len(json.loads((cert / "certificate.json").read_text())["not_covered"])
        c = _run([sys.executable, "-m", "certcheck", str(cert), "-q"])
        said = (c.stdout.strip().splitlines() or c.stderr.strip().splitlines() or [""])[-1]
        if c.returncode != 0:
            return "refused", said
        return ("accepted with gaps" if gaps or "not covered" in said else "accepted"), said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="+", type=Path, help="directories of pairs")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    posts = sorted(p for r in args.roots for p in r.rglob("*.post.mir")
                   if p.with_name(p.name[: -len(".post.mir")] + ".pre.mir").exists())
    counts: collections.Counter[str] = collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for post, (outcome, said) in zip(posts, pool.map(one, posts)):
            counts[outcome.split(" (")[0]] += 1
            print(f"{post}: {outcome}: {said}", flush=True)
    print(f"\n{len(posts)} pairs: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
