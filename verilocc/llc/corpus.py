"""The command line that makes pre/post register-allocation MIR pairs with a given llc: `main`.

For every ``<corpus>/<target>/<kernel>.ll``, or with ``--hip DIR --clang CLANG`` every kernel
of a manifest compiled first (`verilocc.llc.hip`, the IR written to ``--ll-dir``, default
``<out>/ll``), it makes ``<out>/<target>/<kernel>.{pre,post}.mir`` (`verilocc.llc.pairs`),
``-j`` pairs at a time, and prints one line per pair in job order, then a summary.
Outputs are written only when their content changes (idempotent; llc is deterministic).
Exit status: 0 when every pair was made, 1 when any failed (they are named), 2 on usage
errors.

The command line is ``scripts/llc_corpus.py`` (or ``python -m verilocc.llc.corpus``);
``verilocc dataset build`` runs it too. Example::

    python3 scripts/llc_corpus.py --llc llc-22 --corpus ../shared/corpus --out /tmp/llc22 -j 4
    python3 scripts/llc_corpus.py --llc llc-19 --corpus ../shared/corpus --out /tmp/llc19 \\
        --targets gfx1100 --kernels 'fa_*'
    python3 scripts/llc_corpus.py --llc llc-19 --hip examples/kernels --clang clang-19 --out /tmp/examples
    python3 scripts/llc_corpus.py --llc llc-15 --hip ../shared/kernels --clang clang-15 \\
        --targets gfx908,gfx90a,gfx940,gfx1030,gfx1100 --out /tmp/llc15

Standard library only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from verilocc.llc.hip import compile_hip
from verilocc.llc.pairs import Job, PairMaker, PairResult
from verilocc.llc.run import Llc

DEFAULT_TARGETS = ("gfx90a", "gfx942", "gfx1100")


def llc_version(llc: str) -> str:
    try:
        out = subprocess.run([llc, "--version"], capture_output=True, text=True,
                             check=False, timeout=60).stdout
    except OSError as e:
        raise SystemExit(f"error: cannot run {llc}: {e}") from None
    m = re.search(r"(?:LLVM|clang) version (\S+)", out)
    return m.group(1) if m else "unknown"


def find_jobs(corpus: Path, targets: list[str], kernels: list[str] | None) -> list[Job]:
    jobs = []
    for target in targets:
        tdir = corpus / target
        if not tdir.is_dir():
            raise SystemExit(f"error: no directory {tdir}")
        for ll in sorted(tdir.glob("*.ll")):
            kernel = ll.name[: -len(".ll")]
            if kernels is None or any(fnmatch.fnmatchcase(kernel, k) for k in kernels):
                jobs.append(Job(target, kernel, ll))
    return jobs


def split_list(s: str | None) -> list[str] | None:
    return None if s is None else [x for x in (p.strip() for p in s.split(",")) if x]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Make pre/post register-allocation MIR pairs with llc, from LLVM IR or HIP sources.")
    ap.add_argument("--llc", required=True, help="llc to use (path or name on PATH)")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="corpus directory with <target>/<kernel>.ll (or --hip)")
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                    help="comma-separated targets (default %(default)s)")
    ap.add_argument("--kernels", default=None,
                    help="comma-separated kernel names or shell patterns (default: all)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="pairs made in parallel (default 2)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per llc call")
    ap.add_argument("--check-replay", action="store_true",
                    help="allocate twice from the stored pre text and require identical posts")
    ap.add_argument("--hip", type=Path, default=None, metavar="DIR",
                    help="compile the HIP kernels of DIR/<manifest> with --clang first and make "
                         "the pairs from that IR instead of --corpus")
    ap.add_argument("--clang", default=None, help="clang for --hip (path or name on PATH)")
    ap.add_argument("--manifest", default="manifest.txt",
                    help="kernel manifest: a file name in the --hip directory or a path with a "
                         "'/' (sources are always taken from --hip; default %(default)s)")
    ap.add_argument("--ll-dir", type=Path, default=None,
                    help="where --hip writes <target>/<kernel>.ll (default <out>/ll)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("-j must be at least 1")
    if (args.hip is None) != (args.clang is None):
        ap.error("--hip and --clang go together")
    if (args.hip is None) == (args.corpus is None):
        ap.error("give either --corpus DIR (its .ll files) or --hip DIR --clang CLANG")

    llc_path = shutil.which(args.llc) or args.llc
    version = llc_version(llc_path)
    targets = split_list(args.targets) or []
    clang_failed: list[str] = []
    jobs: list[Job]
    if args.hip is not None:
        clang_path = shutil.which(args.clang) or args.clang
        ll_dir = args.ll_dir or args.out / "ll"
        manifest = Path(args.manifest) if "/" in args.manifest else args.hip / args.manifest
        if not manifest.is_file():
            ap.error(f"no manifest {manifest}")
        print(f"clang {clang_path} ({llc_version(clang_path)}); kernels of "
              f"{manifest} into {ll_dir}", flush=True)
        jobs, clang_failed = compile_hip(clang_path, args.hip.resolve(), manifest.resolve(),
                                         targets, split_list(args.kernels), ll_dir.resolve(),
                                         args.timeout)
        args.corpus = ll_dir
    else:
        jobs = find_jobs(args.corpus, targets, split_list(args.kernels))
    if not jobs:
        print("error: no kernel matched", file=sys.stderr)
        return 1
    print(f"llc {llc_path} (LLVM {version}); {len(jobs)} pairs from {args.corpus} "
          f"into {args.out}; -j {args.jobs}", flush=True)

    maker = PairMaker(Llc(llc_path, args.timeout), args.out, args.check_replay)
    t0 = time.monotonic()
    results: list[PairResult] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(maker.make, job) for job in jobs]
        for fut in futures:  # submission order: deterministic output
            r = fut.result()
            results.append(r)
            status = "ok  " if r.ok else "FAIL"
            print(f"{status} {r.job.target}/{r.job.kernel}: {r.message} [{r.seconds:.1f}s]",
                  flush=True)

    failed = [r for r in results if not r.ok]
    instances = sorted({r.instance for r in results if r.instance is not None})
    print(f"{len(results) - len(failed)} of {len(results)} pairs made, {len(failed)} failed; "
          f"last virtregrewriter instance {', '.join(map(str, instances)) or '-'}; "
          f"{time.monotonic() - t0:.1f}s")
    for r in failed:
        print(f"failed: {r.job.target}/{r.job.kernel}", file=sys.stderr)
    for name in clang_failed:
        print(f"failed (clang): {name}", file=sys.stderr)
    return 1 if failed or clang_failed else 0


if __name__ == "__main__":
    sys.exit(main())
