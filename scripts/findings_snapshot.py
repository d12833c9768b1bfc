"""Record the verdict and every finding of every known pair and of seeded mutants of them.

    python scripts/findings_snapshot.py [--corpus DIR] [--mutants N] [-j N] -o SNAPSHOT.json
    python scripts/findings_snapshot.py --check SNAPSHOT.json [--corpus DIR] [-j N]
    python scripts/findings_snapshot.py --add SNAPSHOT.json [--corpus DIR] [-j N]

A refactoring of the verifier must not change what it says: run this before the change
(`-o`), then after it (`--check`), which prints every pair whose verdict or findings differ
and exits 1 if any do. `--add` records only the pairs the snapshot does not name yet (new
fixtures) and leaves every recorded entry as it is. Pairs: the repository's fixtures (`tests/fixtures/**/X.post.mir` with
`X.pre.mir` beside it, the in-repo examples) and, with `--corpus`, a corpus directory such
as `../shared/corpus`. For each pair, `--mutants N` seeded mutants per mutation operator
(`verilocc.fuzz.mutations`) are verified too, so that rejections keep their findings.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
from pathlib import Path

from verilocc.errors import InputError
from verilocc.findings import Report
from verilocc.fuzz.mutations import OPERATORS, Mutant
from verilocc.mir.model import Module
from verilocc.mir.parser import read_module
from verilocc.verify import Options, verify_modules

ROOT = Path(__file__).resolve().parents[1]
# Mutants are made only of files up to this size, to keep the snapshot quick.
MUTANT_MAX_LINES = 1500


def pairs(roots: list[Path]) -> list[tuple[str, Path, Path]]:
    out = []
    for root in roots:
        for post in sorted(root.rglob("*.post.mir")):
            pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
            if pre.exists():
                out.append((f"{root.name}/{post.relative_to(root).as_posix()[:-len('.post.mir')]}", post, pre))
    return out


def summary(report: Report) -> dict[str, object]:
    return {
        "verdict": report.verdict.name,
        "findings": sorted(
            f"{f.layer}|{f.kind}|{f.severity}|{f.place.function}|{f.place.block}|{f.place.index}|{f.place.line}|{f.message}"
            for f in report.findings
        ),
    }


def mutant(name: str, post: Module, op_name: str, k: int) -> Mutant | None:
    """The snapshot's mutant `name#op_name.k` of the post module (None when the operator finds
    no place for it)."""
    return OPERATORS[op_name](post, random.Random(f"{name}/{op_name}/{k}"))


def entries(name: str, post: Path, pre: Path, mutants: int) -> dict[str, object]:
    """The pair's summary under `name` and its mutants' under `name#operator.k`."""
    try:
        post_m, pre_m = read_module(post), read_module(pre)
    except InputError as e:
        return {name: {"error": str(e)}}
    out: dict[str, object] = {name: summary(verify_modules(post_m, pre_m, Options()))}
    if mutants and len(post.read_text().splitlines()) <= MUTANT_MAX_LINES:
        for op_name in sorted(OPERATORS):
            for k in range(mutants):
                m = mutant(name, post_m, op_name, k)
                if m is not None:
                    out[f"{name}#{op_name}.{k}"] = summary(verify_modules(m.module, pre_m, Options()))
    return out


def _entries(job: tuple[str, Path, Path, int]) -> dict[str, object]:
    return entries(*job)


def snapshot(roots: list[Path], mutants: int, jobs: int = 1, skip: frozenset[str] = frozenset()) -> dict[str, object]:
    work = [(name, post, pre, mutants) for name, post, pre in pairs(roots) if name not in skip]
    out: dict[str, object] = {}
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            for got in pool.imap_unordered(_entries, work):
                out.update(got)
    else:
        for job in work:
            out.update(_entries(job))
    return dict(sorted(out.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, action="append", default=[], help="another directory of pairs")
    ap.add_argument("--mutants", type=int, default=1, help="mutants per operator and pair (default 1)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("-o", type=Path, help="write the snapshot here")
    ap.add_argument("--check", type=Path, help="compare with this snapshot")
    ap.add_argument("--add", type=Path, help="add the pairs this snapshot does not name yet, in place")
    args = ap.parse_args()
    roots = [ROOT / "tests" / "fixtures"] + [p for p in [ROOT / "examples"] if p.is_dir()] + args.corpus
    if args.add:
        known = json.loads(args.add.read_text())
        new = snapshot(roots, args.mutants, args.jobs, skip=frozenset(k for k in known if "#" not in k))
        args.add.write_text(json.dumps(dict(sorted({**known, **new}.items())), indent=1, sort_keys=True) + "\n")
        print(f"{sum('#' not in k for k in new)} pairs and {sum('#' in k for k in new)} mutants added to {args.add}")
        return 0
    got = snapshot(roots, args.mutants, args.jobs)
    if args.o:
        args.o.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"{len(got)} pairs and mutants written to {args.o}")
    if args.check:
        want = json.loads(args.check.read_text())
        differ = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
        for k in differ:
            print(f"{k}:\n  before: {json.dumps(want.get(k))}\n  now:    {json.dumps(got.get(k))}")
        print(f"{len(got)} pairs and mutants, {len(differ)} differ")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
