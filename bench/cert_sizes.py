#!/usr/bin/env python3
"""Benchmark: certificate sizes and check times on the corpus (docs/measurements.md, "Certificates").

    python bench/cert_sizes.py [--corpus DIR] [--only gfx90a/fa_d128_kv4 ...]
                               [--full] [--tsv FILE] [--work DIR]

Per pair `<target>/<kernel>` (each command a child process, wall seconds): `verilocc verify POST
--pre PRE` (no certificate), `verilocc verify POST --pre PRE --certificate C` (`--full`: with
`--certificate-full`) and `certcheck -q C`; the certificate's bytes (every file under C) over
the two MIR files' bytes. Prints one line per pair, then: the size ratio's maximum, median and
overall (total certificate bytes over total MIR bytes), how many pairs are within 10x, whether
certcheck accepted every one, and the three times summed and for the largest pair. `--tsv`
writes the per-pair numbers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str]) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    lines = p.stdout.strip().splitlines() or p.stderr.strip().splitlines() or [""]
    return seconds, p.returncode, lines[-1]


def _size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=os.environ.get("VERILOCC_CORPUS") or str(ROOT.parent / "shared" / "corpus"),
                    help="the pairs' directory (default $VERILOCC_CORPUS, else ../shared/corpus)")
    ap.add_argument("--only", nargs="*", metavar="TARGET/KERNEL", help="these pairs only")
    ap.add_argument("--full", action="store_true", help="certify with --certificate-full")
    ap.add_argument("--tsv", metavar="FILE", help="write the per-pair numbers here")
    ap.add_argument("--work", metavar="DIR", help="where certificates are written (default: a temporary directory)")
    args = ap.parse_args()
    corpus = Path(args.corpus)
    pairs = sorted(str(p.relative_to(corpus))[: -len(".post.mir")] for p in corpus.glob("*/*.post.mir"))
    if args.only:
        pairs = [p for p in pairs if p in set(args.only)]
    work = Path(args.work or tempfile.mkdtemp(prefix="cert_sizes."))
    py = sys.executable
    rows = []
    for name in pairs:
        post, pre = corpus / f"{name}.post.mir", corpus / f"{name}.pre.mir"
        cert = work / name.replace("/", "_")
        shutil.rmtree(cert, ignore_errors=True)
        t_verify, code, _ = _run([py, "-m", "verilocc", "verify", str(post), "--pre", str(pre)])
        if code != 0:
            print(f"{name}: not VERIFIED (exit {code})")
            continue
        cmd = [py, "-m", "verilocc", "verify", str(post), "--pre", str(pre), "--certificate", str(cert)]
        t_cert, code, last = _run(cmd + (["--certificate-full"] if args.full else []))
        if code != 0:
            print(f"{name}: no certificate (exit {code}): {last}")
            continue
        t_check, code, verdict = _run([py, "-m", "certcheck", "-q", str(cert)])
        mir = post.stat().st_size + pre.stat().st_size
        size = _size(cert)
        rows.append((name, mir, size, size / mir, t_verify, t_cert, t_check, code == 0))
        print(f"{name}: MIR {mir / 1e6:.2f} MB, certificate {size / 1e6:.2f} MB ({size / mir:.1f}x); verify "
              f"{t_verify:.2f} s, verify --certificate {t_cert:.2f} s, certcheck {t_check:.2f} s: {verdict}", flush=True)
        if not args.work:
            shutil.rmtree(cert, ignore_errors=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    if not rows:
        return 1
    ratios = [r[3] for r in rows]
    mir, size = sum(r[1] for r in rows), sum(r[2] for r in rows)
    largest = max(rows, key=lambda r: r[1])
    print(f"\n{len(rows)} pairs, {sum(r[7] for r in rows)} accepted by certcheck; certificate / MIR: max "
          f"{max(ratios):.1f}x ({max(rows, key=lambda r: r[3])[0]}), median {statistics.median(ratios):.1f}x, "
          f"overall {size / mir:.1f}x ({size / 1e6:.1f} MB for {mir / 1e6:.1f} MB); within 10x: "
          f"{sum(x <= 10 for x in ratios)} of {len(rows)}")
    print(f"seconds, all pairs: verify {sum(r[4] for r in rows):.1f}, verify --certificate "
          f"{sum(r[5] for r in rows):.1f}, certcheck {sum(r[6] for r in rows):.1f}; certcheck faster than "
          f"verify --certificate on {sum(r[6] <= r[5] for r in rows)} of {len(rows)}")
    print(f"largest, {largest[0]} ({largest[1] / 1e6:.2f} MB of MIR): certificate {largest[2] / 1e6:.2f} MB "
          f"({largest[3]:.1f}x); verify {largest[4]:.2f} s, verify --certificate {largest[5]:.2f} s, "
          f"certcheck {largest[6]:.2f} s")
    if args.tsv:
        with open(args.tsv, "w", encoding="utf-8") as fh:
            fh.write("pair\tmir_bytes\tcertificate_bytes\tratio\tverify_s\tverify_certificate_s\tcertcheck_s\taccepted\n")
            for r in rows:
                fh.write(f"{r[0]}\t{r[1]}\t{r[2]}\t{r[3]:.2f}\t{r[4]:.2f}\t{r[5]:.2f}\t{r[6]:.2f}\t{int(r[7])}\n")
    return 0 if all(r[7] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
