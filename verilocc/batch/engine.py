"""Running chunks of work in worker processes or on Dask distributed, results streamed back.

Work is a list of chunks (a few pairs, a few fuzz seeds) and one function that maps a chunk
to its result. Every runner yields `(index, result)` as chunks complete, each index exactly
once; `in_order` turns that into the chunks' own order, releasing each result as soon as
every earlier one has arrived, so output is the same bytes however the workers raced.

On Dask a chunk whose worker dies is run again: the scheduler reschedules it (up to its
`allowed-failures`), and a chunk that still fails (`KilledWorker`, or an exception) is
submitted afresh under a new key, up to `attempts` times. A chunk's result is taken once,
from the first attempt that finishes; later duplicates are dropped.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from verilocc.errors import InputError

T = TypeVar("T")
INSTALL = "pip install 'verilocc[cluster]' (or: pip install 'dask[distributed]')"


def chunked(items: Sequence[T], size: int) -> list[list[T]]:
    return [list(items[k:k + size]) for k in range(0, len(items), size)]


def chunk_size(count: int, workers: int, largest: int) -> int:
    """About four chunks per worker (a lost worker costs little, the load stays even), at most `largest`."""
    return max(1, min(largest, -(-count // (4 * max(1, workers)))))


def stream_local(function: Callable[..., Any], chunks: Sequence[Any], args: tuple[Any, ...], jobs: int,
                 more: Callable[[], bool] = lambda: True) -> Iterator[tuple[int, Any]]:
    """`jobs` worker processes on this machine (none for 1), at most 2 chunks per worker in
    flight; no new chunk starts once `more()` is false."""
    if jobs <= 1:
        for k, chunk in enumerate(chunks):
            if not more():
                return
            yield k, function(chunk, *args)
        return
    with ProcessPoolExecutor(jobs) as pool:
        running: dict[Future[Any], int] = {}
        queue = iter(enumerate(chunks))
        while True:
            while len(running) < 2 * jobs and more():
                item = next(queue, None)
                if item is None:
                    break
                running[pool.submit(function, item[1], *args)] = item[0]
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: running[f]):
                yield running.pop(fut), fut.result()


def in_order(stream: Iterator[tuple[int, T]]) -> Iterator[T]:
    """The results by index, each as soon as all earlier ones are in; results past a gap
    (chunks that a stopped run never started) come last, by index."""
    waiting: dict[int, T] = {}
    following = 0
    for index, result in stream:
        waiting[index] = result
        while following in waiting:
            yield waiting.pop(following)
            following += 1
    for index in sorted(waiting):  # chunks past a gap that `more()` left unstarted
        yield waiting[index]


@contextlib.contextmanager
def dask_client(jobs: int, scheduler: str | None) -> Iterator[Any]:
    """A client of the cluster at `scheduler` (tcp://HOST:PORT), or of a LocalCluster of
    `jobs` worker processes with one thread each, listening on the loopback address only."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError(f"Dask distributed is not installed: {INSTALL}", "--dask", 0, 0) from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError, ValueError) as e:
            raise InputError(f"cannot reach the Dask scheduler: {e}", scheduler, 0, 0) from None
        with client:
            yield client
        return
    with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client


def workers_of(client: Any) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


def stream_dask(client: Any, function: Callable[..., Any], chunks: Sequence[Any], args: tuple[Any, ...],
                in_flight: int, attempts: int = 3, more: Callable[[], bool] = lambda: True) -> Iterator[tuple[int, Any]]:
    """The chunks on a Dask cluster, at most `in_flight` at a time, each index yielded once."""
    from distributed import as_completed

    run = uuid.uuid4().hex[:8]
    meta: dict[str, tuple[int, int]] = {}  # future key -> (chunk index, attempt)
    pending = as_completed()
    queue = iter(range(len(chunks)))

    def submit(index: int, attempt: int) -> None:
        fut = client.submit(function, chunks[index], *args, key=f"verilocc-{run}-{index}-{attempt}", pure=False)
        meta[fut.key] = (index, attempt)
        pending.add(fut)

    def top_up() -> None:
        while pending.count() < in_flight and more():
            index = next(queue, None)
            if index is None:
                return
            submit(index, 0)

    top_up()
    taken: set[int] = set()
    for fut in pending:
        index, attempt = meta.pop(fut.key)
        if fut.status != "finished":  # "error" (an exception, KilledWorker) or "cancelled"
            error = f"{type(fut.exception()).__name__}: {fut.exception()}" if fut.status == "error" else fut.status
            fut.release()
            if attempt + 1 >= attempts:
                raise RuntimeError(f"chunk {index} failed {attempts} times on the cluster: {error}")
            submit(index, attempt + 1)
            continue
        result = fut.result()
        fut.release()
        if index not in taken:
            taken.add(index)
            yield index, result
        top_up()
