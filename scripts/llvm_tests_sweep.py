#!/usr/bin/env python3
"""Verify LLVM's own allocations of its AMDGPU tests with verilocc and tabulate the outcome.

One command: make the pairs with ``scripts/llvm_tests_corpus.py`` (or take a directory of
them with ``--pairs``), verify every pair (``verilocc.verify.verify_modules`` in worker
processes, one pair at a time per worker, each under ``--pair-timeout``), and write

* ``bench/results/llvm-tests.json``: one record per function (version, target, test, mode, function,
  verdict, cause, first finding) and the pairs that could not be read or verified;
* the section of ``docs/llvm-tests.md`` between ``<!-- sweep:begin -->`` and
  ``<!-- sweep:end -->`` (the rest of the file is left as it is): per LLVM version and target the
  counts of VERIFIED / REJECTED / UNKNOWN functions and of pairs that are bad input, then every
  non-VERIFIED function grouped by cause.

LLVM's allocations are correct by assumption, so every REJECTED here is a false rejection
and every UNKNOWN a missing proof.  The cause of a function is read off its first finding
(first error, else first unknown) and the instruction it names; see
``verilocc.hunt.check.cause_of`` for the rules (``verilocc hunt`` sorts by the same causes).  Output is deterministic: records are sorted, timings are not written.

Example::

    nice -n 10 python3 scripts/llvm_tests_sweep.py --work /tmp/llvm-tests -j 2
    python3 scripts/llvm_tests_sweep.py --pairs tests/fixtures/llvm-tests/pairs \\
        --json /tmp/s.json --markdown /tmp/s.md
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import llvm_tests_corpus as corpus  # noqa: E402  (a sibling script)

from verilocc.hunt.check import CAUSES, verify_pair as check_pair  # noqa: E402

BEGIN, END = "<!-- sweep:begin -->", "<!-- sweep:end -->"
VERDICTS = ("VERIFIED", "REJECTED", "UNKNOWN")


def verify_pair(job: tuple[str, str, str, str, str, str, float]) -> dict:
    """Verify one pair in a worker process (`verilocc.hunt.check.verify_pair`)."""
    version, target, test, mode, pre, post, seconds = job
    return check_pair(pre, post, seconds, {"llvm": version, "target": target, "test": test, "mode": mode})


# --- tables ------------------------------------------------------------------------------------

def summarise(results: list[dict]) -> tuple[list[dict], list[dict]]:
    """(function records, bad pairs), each sorted."""
    functions, bad = [], []
    for r in results:
        if "error" in r:
            bad.append(r)
        else:
            functions.extend(r["functions"])
    key = lambda r: (int(r["llvm"]), corpus.TARGETS.index(r["target"])  # noqa: E731
                     if r["target"] in corpus.TARGETS else 99, r["target"], r["test"],
                     r["mode"], r.get("function", ""))
    return sorted(functions, key=key), sorted(bad, key=key)


def target_order(t: str) -> tuple[int, str]:
    return (corpus.TARGETS.index(t) if t in corpus.TARGETS else len(corpus.TARGETS), t)


def cell(s: str, limit: int = 160) -> str:
    s = " ".join(s.split()).replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def markdown(functions: list[dict], bad: list[dict], rows: dict, command: str) -> str:
    out = [f"Made by `{command}`.", ""]
    pairs_made = Counter((r.version, r.target, r.status) for r in rows.values())
    out += ["| LLVM | target | pairs made | not made (llc) | VERIFIED | REJECTED | UNKNOWN | "
            "bad input (pairs) |", "|---|---|---|---|---|---|---|---|"]
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for f in functions:
        counts[(f["llvm"], f["target"])][f["verdict"]] += 1
    for b in bad:
        counts[(b["llvm"], b["target"])]["bad"] += 1
    keys = sorted({(r.version, r.target) for r in rows.values()},
                  key=lambda k: (int(k[0]), corpus.TARGETS.index(k[1])
                                 if k[1] in corpus.TARGETS else 99, k[1]))
    total: Counter = Counter()
    for k in keys:
        c = counts[k]
        made, failed = pairs_made[(*k, "ok")], pairs_made[(*k, "fail")] + pairs_made[(*k, "skip")]
        total.update({"made": made, "failed": failed, **c})
        out.append(f"| {k[0]} | {k[1]} | {made} | {failed} | {c['VERIFIED']} | {c['REJECTED']} |"
                   f" {c['UNKNOWN']} | {c['bad']} |")
    out.append(f"| all | | {total['made']} | {total['failed']} | {total['VERIFIED']} | "
               f"{total['REJECTED']} | {total['UNKNOWN']} | {total['bad']} |")
    n = sum(total[v] for v in VERDICTS)
    if n:
        out += ["", f"{total['VERIFIED']} of {n} functions VERIFIED "
                f"({100 * total['VERIFIED'] / n:.1f}%); by mode:"]
        by_mode: dict[str, Counter] = defaultdict(Counter)
        for f in functions:
            by_mode[f["mode"]][f["verdict"]] += 1
        for mode in sorted(by_mode):
            c = by_mode[mode]
            out.append(f"- {mode}: {c['VERIFIED']} VERIFIED, {c['REJECTED']} REJECTED, "
                       f"{c['UNKNOWN']} UNKNOWN")
    failing = [f for f in functions if f["verdict"] != "VERIFIED"]
    by_cause: dict[str, list[dict]] = defaultdict(list)
    for f in failing:
        by_cause[f["cause"]].append(f)
    for b in bad:
        by_cause["parse error" if b["error"] == "parse error" else "other"].append(b)
    out += ["", "### Non-VERIFIED functions by cause", "",
            "| cause | functions | tests | rule |", "|---|---|---|---|"]
    for cause, rule in CAUSES:
        fs = by_cause.get(cause, [])
        out.append(f"| {cause} | {len(fs)} | {len({f['test'] for f in fs})} | {rule} |")
    for cause, _ in CAUSES:
        fs = by_cause.get(cause, [])
        if not fs:
            continue
        # One row per test, function and finding; where it occurs is listed in the row.
        groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
        for f in fs:
            what = (f"`{f['kind']}`: {f['message']}" if "verdict" in f
                    else f"{f['error']}: {f['message']}")
            norm = re.sub(r"%\d+", "%N", re.sub(r"line \d+", "line N", what))
            groups[(f["test"], f.get("function", "(pair)"), norm)].append(f)
        out += ["", f"#### {cause}: {len(fs)} functions, {len(groups)} distinct", "",
                "| test | function | where (LLVM: targets, modes) | verdict | first finding "
                "(first occurrence) |", "|---|---|---|---|---|"]
        for (test, fn, _), members in sorted(groups.items()):
            first = members[0]
            what = (f"`{first['kind']}`: {first['message']}" if "verdict" in first
                    else f"{first['error']}: {first['message']}")
            src = f" — {first['file']} line {first['line']}: `{cell(first['source'], 120)}`" \
                if first.get("source") else ""
            where = "; ".join(
                f"{v}: " + " ".join(sorted({m["target"] for m in members if m["llvm"] == v},
                                           key=target_order))
                + " (" + ", ".join(sorted({m["mode"] for m in members if m["llvm"] == v})) + ")"
                for v in sorted({m["llvm"] for m in members}, key=int))
            verdicts = "/".join(sorted({m.get("verdict") or m.get("error") for m in members}))
            out.append(f"| {test} | {fn} | {where} | {verdicts} | {cell(what)}{src} |")
    anomalies = [f for f in functions if f.get("anomalies")]
    out += ["", "### LLVM liveness anomalies", "",
            f"{len(anomalies)} VERIFIED functions read a lane LLVM's allocation overwrote, with results "
            "that do not depend on it (a `liveness-anomaly` warning; docs/llvm-fidelity.md)."]
    if anomalies:
        out += ["", "| test | LLVM | target | mode | function | instruction | warning |", "|---|---|---|---|---|---|---|"]
        for f in anomalies:
            out.append(f"| {f['test']} | {f['llvm']} | {f['target']} | {f['mode']} | {f['function']} | "
                       f"`{cell(f.get('source', ''), 100)}` | {cell(f['message'])} |")
    return "\n".join(out) + "\n"


def write_markdown_section(path: Path, section: str) -> None:
    old = path.read_text() if path.exists() else f"# LLVM's AMDGPU tests\n\n{BEGIN}\n{END}\n"
    if BEGIN not in old or END not in old:
        old = old.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    head, rest = old.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    corpus.write_if_changed(path, f"{head}{BEGIN}\n{section}{END}{tail}")


def pairs_on_disk(root: Path) -> dict:
    """Rows for the `<llvm>/<target>/<test>.<mode>.post.mir` files under `root`."""
    rows = {}
    for post in sorted(root.glob("*/*/*.post.mir")):
        test, mode = post.name[: -len(".post.mir")].rsplit(".", 1)
        pre = post.with_name(f"{test}.{mode}.pre.mir")
        version, target = post.parent.parent.name, post.parent.name
        if pre.exists() and mode in corpus.MODES:
            rows[(version, target, test, mode)] = corpus.Row(
                version, target, test, mode, "ok", str(pre.relative_to(root)),
                str(post.relative_to(root)))
    return rows


def categories() -> dict[str, str]:
    """Test name -> what it was chosen to exercise (SOURCES.tsv)."""
    lines = corpus.read_text(corpus.SOURCES).splitlines()[1:]
    return {c[0]: c[3] for c in (ln.split("\t") for ln in lines) if len(c) >= 4}


def keep_fixtures(dest: Path, pairs: Path, rows: dict, functions: list[dict], per_category: int,
                  max_bytes: int) -> list[corpus.Row]:
    """Make the smallest pairs of each category again in `dest` (one per test and outcome).

    Per category, pairs are taken smallest first, at most one per test, alternating between
    pairs whose functions are all VERIFIED and pairs with a non-VERIFIED function so that
    both kinds are kept, until `per_category` pairs or `max_bytes` in all.
    """
    cat = categories()
    outcome: dict[tuple[str, str, str, str], bool] = {}
    for f in functions:
        key = (f["llvm"], f["target"], f["test"], f["mode"])
        outcome[key] = outcome.get(key, True) and f["verdict"] == "VERIFIED"
    size = {k: (pairs / r.pre).stat().st_size + (pairs / r.post).stat().st_size
            for k, r in rows.items() if k in outcome}
    chosen: list[tuple[str, str, str, str]] = []
    total = 0
    for category in sorted(set(cat.values())):
        queues = {ok: sorted((k for k in size if cat.get(k[2]) == category and outcome[k] is ok),
                             key=lambda k: (size[k], k)) for ok in (True, False)}
        tests: set[str] = set()
        taken = 0
        turn = False
        while taken < per_category and (queues[True] or queues[False]):
            turn = not turn
            queue = queues[turn] or queues[not turn]
            k = queue.pop(0)
            if k[2] in tests or total + size[k] > max_bytes:
                continue
            tests.add(k[2])
            chosen.append(k)
            total += size[k]
            taken += 1
    # Remade rather than copied: the kept files are what this script's llc runs print now.
    maker = corpus.CorpusMaker(dest, timeout=600.0)
    kept = []
    for k in sorted(chosen, key=lambda k: (int(k[0]), target_order(k[1]), k[2], k[3])):
        llc = shutil.which(f"llc-{k[0]}") or f"llc-{k[0]}"
        row = maker.make_row(corpus.Task(k[0], llc, k[1], k[2], k[3]))
        if row.status == "ok":
            kept.append(row)
    corpus.write_pairs(dest / "pairs.tsv", {(r.version, r.target, r.test, r.mode): r
                                            for r in kept})
    return kept


def write_records(args: argparse.Namespace, functions: list[dict], bad: list[dict], rows: dict, command: str) -> None:
    """--json (every function, the bad pairs, the pairs llc did not make) and --markdown."""
    args.json.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_if_changed(args.json, json.dumps(
        {"command": command, "functions": functions, "bad_pairs": bad,
         "pairs_not_made": [r.cells() for r in rows.values() if r.status != "ok"]},
        indent=1, sort_keys=True) + "\n")
    write_markdown_section(args.markdown, markdown(functions, bad, rows, command))


def _portable(command: str, pairs: Path) -> str:
    """A recorded sweep command without this machine's paths: the pairs directory as
    `build/llvm-tests`, no --json/--markdown (the merged record is what is written)."""
    words = command.split()
    out: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w in ("--json", "--markdown"):
            skip = True
            continue
        out.append("build/llvm-tests" if Path(w) == pairs else w)
    return " ".join(out)


def merge(args: argparse.Namespace, argv: list[str]) -> int:
    """Tabulate recorded sweeps (`--merge`): their functions, the pairs of `--pairs`."""
    if args.pairs is None:
        print("error: --merge needs --pairs (the directory the records were made from)", file=sys.stderr)
        return 2
    records: dict[tuple[str, ...], dict] = {}
    bad: dict[tuple[str, ...], dict] = {}
    source: dict[tuple[str, ...], int] = {}  # which record each function and bad pair comes from
    commands = []
    for n, path in enumerate(args.merge):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return 2
        commands.append(doc.get("command", str(path)))
        for f in doc.get("functions", []):
            key = (f["llvm"], f["target"], f["test"], f["mode"], f.get("function", ""))
            records[key], source[key] = f, n
        for b in doc.get("bad_pairs", []):
            key = (b["llvm"], b["target"], b["test"], b["mode"])
            bad[key], source[key] = b, n
    commands = [c for n, c in enumerate(commands) if n in set(source.values())]  # the records still counted
    manifest = args.pairs / "pairs.tsv"
    rows = corpus.read_pairs(manifest) if manifest.is_file() else pairs_on_disk(args.pairs)
    seen = {k[:4] for k in records} | set(bad)
    rows = {k: r for k, r in rows.items() if (r.version, r.target, r.test, r.mode) in seen or r.status != "ok"}
    functions, bad_pairs = summarise([{"functions": list(records.values())}, *bad.values()])
    command = "; ".join(_portable(c, args.pairs) for c in commands)
    write_records(args, functions, bad_pairs, rows, command)
    c = Counter(f["verdict"] for f in functions)
    print(f"{len(functions)} functions: {c['VERIFIED']} VERIFIED, {c['REJECTED']} REJECTED, "
          f"{c['UNKNOWN']} UNKNOWN; {len(bad_pairs)} bad pairs")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Verify LLVM's allocations of its AMDGPU tests.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--pairs", type=Path, help="a directory made by llvm_tests_corpus.py")
    src.add_argument("--work", type=Path, help="make the pairs here first")
    ap.add_argument("--llvm", default=",".join(corpus.VERSIONS))
    ap.add_argument("--targets", default=",".join(corpus.TARGETS))
    ap.add_argument("--tests", default=None)
    ap.add_argument("--modes", default=",".join(corpus.MODES))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--pair-timeout", type=float, default=600.0,
                    help="seconds for verifying one pair (default %(default)s)")
    ap.add_argument("--json", type=Path, default=REPO_ROOT / "bench" / "results" / "llvm-tests.json")
    ap.add_argument("--markdown", type=Path, default=REPO_ROOT / "docs" / "llvm-tests.md")
    ap.add_argument("--keep-fixtures", type=Path, default=None, metavar="DIR",
                    help="also copy a small selection of the pairs to DIR (with pairs.tsv)")
    ap.add_argument("--keep-per-category", type=int, default=6)
    ap.add_argument("--keep-max-bytes", type=int, default=4_500_000)
    ap.add_argument("--merge", type=Path, nargs="+", metavar="JSON", default=None,
                    help="verify nothing: one table of the functions of these sweep records "
                         "(each written by --json; a later record's function wins), with the "
                         "pairs of --pairs as the pairs made")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("-j must be at least 1")
    if args.merge:
        return merge(args, argv if argv is not None else sys.argv[1:])
    filters = ["--llvm", args.llvm, "--targets", args.targets, "--modes", args.modes]
    if args.tests:
        filters += ["--tests", args.tests]
    pairs = args.pairs
    if args.work is not None:
        if corpus.main(["--out", str(args.work), "-j", str(args.jobs), *filters]) != 0:
            return 1
        pairs = args.work
    manifest = pairs / "pairs.tsv"
    if manifest.is_file():
        rows = corpus.read_pairs(manifest)
    elif pairs.is_dir():  # a run still in progress: the pairs present so far
        rows = pairs_on_disk(pairs)
    else:
        print(f"error: {pairs}: no such directory", file=sys.stderr)
        return 2
    versions = set(corpus.split_list(args.llvm) or [])
    targets = set(corpus.split_list(args.targets) or [])
    modes = set(corpus.split_list(args.modes) or [])
    tests = set(corpus.select_tests(corpus.split_list(args.tests))) if args.tests else None
    rows = {k: r for k, r in rows.items() if r.version in versions and r.target in targets
            and r.mode in modes and (tests is None or r.test in tests)}
    jobs = [(r.version, r.target, r.test, r.mode, str(pairs / r.pre), str(pairs / r.post),
             args.pair_timeout) for r in rows.values() if r.status == "ok"]
    # Longest first: the big files do not end up alone at the tail.
    jobs.sort(key=lambda j: (-os.path.getsize(j[5]), j[:4]))
    results = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for k, res in enumerate(pool.map(verify_pair, jobs, chunksize=1), 1):
            results.append(res)
            verdicts = Counter(f["verdict"] for f in res.get("functions", []))
            print(f"[{k}/{len(jobs)}] llvm-{res['llvm']} {res['target']} {res['test']} "
                  f"{res['mode']}: " + (res.get("error", "") or
                                        ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))),
                  flush=True)
    functions, bad = summarise(results)
    command = "python3 scripts/llvm_tests_sweep.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    write_records(args, functions, bad, rows, command)
    if args.keep_fixtures is not None:
        kept = keep_fixtures(args.keep_fixtures, pairs, rows, functions, args.keep_per_category,
                             args.keep_max_bytes)
        print(f"kept {len(kept)} pairs in {args.keep_fixtures}")
    c = Counter(f["verdict"] for f in functions)
    print(f"{len(jobs)} pairs: {c['VERIFIED']} functions VERIFIED, {c['REJECTED']} REJECTED, "
          f"{c['UNKNOWN']} UNKNOWN; {len(bad)} pairs bad input or not verified; "
          f"{args.markdown}, {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
