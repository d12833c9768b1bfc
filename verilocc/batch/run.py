"""Running the work of a batch, a fuzz run or a hunt: `verify_batch` is `verilocc verify` on a
directory or a manifest, and `run_chunks` runs chunks of any work (the fuzz command hands it
`verilocc.fuzz.chunks.fuzz_chunk`, the random hunt its seeds).

Only these commands import this package: verifying one pair never does.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from verilocc.batch.engine import chunk_size, chunked, dask_client, in_order, stream_dask, stream_local, workers_of
from verilocc.batch.pairs import find_pairs, read_manifest
from verilocc.batch.records import json_line, summary_table, text_lines, verify_chunk, worst_exit
from verilocc.errors import InputError
from verilocc.output import write_output


def check_runner_options(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise InputError("--jobs must be at least 1", "--jobs", 0, 0)
    if args.chunk is not None and args.chunk < 1:
        raise InputError("--chunk must be at least 1", "--chunk", 0, 0)


def run_chunks(function: Callable[..., list[Any]], items: Sequence[Any], fn_args: tuple[Any, ...],
               args: argparse.Namespace, largest: int, more: Callable[[], bool] = lambda: True,
               ran_on: list[str] | None = None) -> Iterator[Any]:
    """The results of `function(chunk, *fn_args)` over chunks of `items`, flattened, in the
    items' order: on Dask with --dask/--scheduler (about four chunks per worker, at most
    `largest` items each), otherwise in --jobs local processes (one item per chunk)."""
    check_runner_options(args)
    if args.dask or args.scheduler:
        with dask_client(args.jobs, args.scheduler) as client:
            workers = workers_of(client) if args.scheduler else args.jobs
            if ran_on is not None:
                ran_on.append(f"Dask {'scheduler ' + args.scheduler if args.scheduler else 'LocalCluster'}, "
                              f"{workers} worker(s)")
            chunks = chunked(items, args.chunk or chunk_size(len(items), workers, largest))
            for results in in_order(stream_dask(client, function, chunks, fn_args, in_flight=2 * workers, more=more)):
                yield from results
        return
    if ran_on is not None:
        ran_on.append(f"{args.jobs} local worker process(es)" if args.jobs > 1 else "in process")
    for results in in_order(stream_local(function, chunked(items, args.chunk or 1), fn_args, args.jobs, more)):
        yield from results


def verify_batch(args: argparse.Namespace) -> int:
    """Verify every pair of a directory or manifest; one record per pair, the worst exit code."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from verilocc.verify import Options

    for flag, given in (("--pre", args.pre), ("--assignment", args.assignment), ("--certificate", args.certificate)):
        if given:
            raise InputError(f"{flag} applies to one pair, not to a batch (a directory or --manifest)", flag, 0, 0)
    if args.format not in ("text", "jsonl"):
        raise InputError("a batch writes --format text or jsonl", "--format", 0, 0)
    if args.manifest and args.alloc:
        raise InputError("give either a directory or --manifest, not both", args.alloc, 0, 0)
    pairs = read_manifest(args.manifest) if args.manifest else find_pairs(args.alloc)
    opts = Options(mcpu=args.mcpu, layers=args.layers, timeout_s=args.timeout, seed=args.seed)
    render = (lambda r: json_line(r, args.timings)) if args.format == "jsonl" else text_lines
    console = Console(stderr=True, highlight=False)
    started = time.perf_counter()
    records: list[dict[str, Any]] = []
    ran_on: list[str] = []
    with Progress(TextColumn("verify"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[status]}"), console=console, disable=not console.is_terminal) as bar:
        task = bar.add_task("verify", total=len(pairs), status="")
        for record in run_chunks(verify_chunk, pairs, (opts,), args, largest=8, ran_on=ran_on):
            records.append(record)
            if args.output is None:
                sys.stdout.write(render(record))
                sys.stdout.flush()
            bar.update(task, advance=1, status=record["pair"])
    if args.output is not None:
        inputs = [p for pair in pairs for p in (pair.post, pair.pre)] + [args.manifest]
        write_output(args.output, "".join(render(r) for r in records), inputs)
    console.print(summary_table(records, time.perf_counter() - started, ran_on[0] if ran_on else ""))
    return worst_exit(records)
