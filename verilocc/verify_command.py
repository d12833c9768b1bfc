"""`verilocc verify`: one pair (`verilocc.verify`, rendered by `verilocc.report`, with a
certificate or as a page of `verilocc.view` on request), or a batch (`verilocc.batch`).

A single pair never imports the batch package. Exit codes: docs/design.md section 3.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

from verilocc.errors import InputError
from verilocc.options import add_check_options, add_runner_options, check_timeout
from verilocc.output import write_output


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser(
        "verify",
        help="verify an allocated MIR file (against its pre-RA version)",
        description="Verify a register allocation. With --pre, all layers run (constraints in SMT, value flow, "
        "equivalence); without it, only the checks that need no reference. Exit codes: 0 VERIFIED, 1 REJECTED, "
        "2 bad input, 3 UNKNOWN. A batch (a directory: every X.post.mir beside its X.pre.mir, recursively; or "
        "--manifest FILE: one `POST PRE` pair per line, paths relative to the manifest, `#` comments) verifies "
        "every pair, prints one result per pair sorted by name (text or --format jsonl) and a summary table on "
        "stderr, and exits with the worst pair's code: 1 if any pair is REJECTED, else 2 if any is bad input, "
        "else 3 if any is UNKNOWN, else 0.",
    )
    v.add_argument("alloc", metavar="ALLOC.mir|DIR", nargs="?",
                   help="the allocated program (post-RA MIR), or a directory of pairs to verify as a batch")
    v.add_argument("--manifest", metavar="FILE", help="verify the pairs this file lists (`POST PRE` per line) as a batch")
    v.add_argument("--pre", metavar="PRE.mir", help="the virtual-register program it was allocated from")
    v.add_argument("--assignment", metavar="FILE", help="verify an assignment (`%%N -> $reg` lines) applied to --pre, with the "
                   "block live-ins an allocator writes")
    v.add_argument("--format", choices=("text", "json", "sarif", "html", "jsonl"), default="text",
                   help="output format (default text); html: the register-occupancy page of `verilocc show` with the "
                   "verdict and every finding on it; a batch writes text or jsonl (one JSON object per pair)")
    v.add_argument("-o", "--output", metavar="FILE",
                   help="write JSON/SARIF/HTML (a batch: its results) here instead of stdout")
    add_check_options(v)
    v.add_argument("--timings", action="store_true",
                   help="add seconds per layer to the JSON stats (a batch: seconds per pair to each JSON line)")
    v.add_argument("--certificate", metavar="DIR",
                   help="if VERIFIED, write the proof obligations (SMT-LIB), the witnesses and a manifest with input "
                   "hashes to DIR (new, empty, or a previous certificate; otherwise exit 2); what certcheck "
                   "re-establishes from a witness (layer 2's value flow, layer 1's interference facts) gets no "
                   "obligation; a line on stderr names each claim the certificate cannot cover (the verdict stays "
                   "VERIFIED); other verdicts write nothing; exit 3 if a VERIFIED proof cannot be written; check it "
                   "with `certcheck DIR` or `verilocc recheck DIR`")
    v.add_argument("--certificate-full", action="store_true",
                   help="with --certificate: also write the obligations certcheck re-establishes from the witnesses "
                   "(layer 2's per block, layer 1's interference facts), for a re-check by SMT solvers alone; several "
                   "times the size")
    add_runner_options(v, "a batch: worker processes (default 1)")
    v.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    if args.manifest or (args.alloc is not None and os.path.isdir(args.alloc)):
        from verilocc.batch.run import verify_batch

        return verify_batch(args)
    for flag, given in (("--jobs", args.jobs != 1), ("--dask", args.dask), ("--scheduler", args.scheduler),
                        ("--chunk", args.chunk is not None), ("--format jsonl", args.format == "jsonl")):
        if given:
            raise InputError(f"{flag} applies to a batch: give a directory of pairs or --manifest FILE", flag, 0, 0)
    check_timeout(args.timeout)
    if args.certificate_full and not args.certificate:
        raise InputError("--certificate-full applies to --certificate DIR", "--certificate-full", 0, 0)
    if "constraints" not in args.layers and not args.certificate:
        return _verify_pair(args)
    from verilocc.smt.solver import solver_process

    with solver_process():  # z3 is imported in a process of its own meanwhile
        return _verify_pair(args)


def _verify_pair(args: argparse.Namespace) -> int:
    from verilocc.report.render import render_text, to_json, to_sarif
    from verilocc.verify import Options, load_inputs, verify_modules

    # One pair, then the process ends: what the layers build is freed by reference counting
    # (no cycles of note: peak memory is the same), so the cycle collector only costs time.
    gc.disable()
    if args.certificate:
        from verilocc.certificate.write import prepare_directory

        prepare_directory(args.certificate)  # refuse a bad DIR before spending time on the proof
    started = time.perf_counter()
    post, pre, extra = load_inputs(args.alloc, args.pre, args.assignment)
    opts = Options(mcpu=args.mcpu, layers=args.layers, timeout_s=args.timeout, seed=args.seed,
                   certify=bool(args.certificate), certify_full=bool(args.certificate_full), fork=True)
    report = verify_modules(post, pre, opts, extra_findings=extra)
    if args.format == "json":
        write_output(args.output, to_json(report, timings=args.timings), [args.alloc, args.pre, args.assignment])
    elif args.format == "sarif":
        write_output(args.output, to_sarif(report), [args.alloc, args.pre, args.assignment])
    elif args.format == "html":
        from verilocc.view.show import report_page

        write_output(args.output, report_page(report, post, pre, args.mcpu), [args.alloc, args.pre, args.assignment])
    else:
        render_text(report, sys.stdout)
    if args.certificate:
        from verilocc.certificate.write import certify

        inputs = {"post": args.alloc, "pre": args.pre, "assignment": args.assignment}
        return certify(args.certificate, report, inputs, seed=args.seed, timeout_s=args.timeout, layers=args.layers,
                       seconds=time.perf_counter() - started)
    args.exit_without_teardown = True  # every output is written and closed (`verilocc.cli.entry`)
    return report.verdict.exit_code
