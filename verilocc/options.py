"""Command-line options that several commands share, and their checks (standard library only at
module level, so that building a parser stays cheap)."""

from __future__ import annotations

import argparse
import math

from verilocc.errors import InputError


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    """--dask, --scheduler and --chunk (the command has its own --jobs)."""
    p.add_argument("--dask", action="store_true",
                   help="run on a Dask LocalCluster of J worker processes (loopback only; needs the `cluster` extra: "
                   "pip install 'verilocc[cluster]')")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on the Dask cluster whose scheduler listens there (`dask scheduler`, `dask worker`)")
    p.add_argument("--chunk", type=int, default=None, metavar="N",
                   help="items per unit of work (default: 1 in local processes; on Dask enough for about four units "
                   "per worker)")


def add_runner_options(p: argparse.ArgumentParser, jobs_help: str) -> None:
    """--jobs, --dask, --scheduler and --chunk: where the work of a batch or a fuzz run goes."""
    p.add_argument("--jobs", type=int, default=1, metavar="J", help=jobs_help)
    add_cluster_options(p)


def add_check_options(p: argparse.ArgumentParser) -> None:
    """--mcpu, --layers, --timeout and --seed: how an allocation is verified (every layer unless
    --layers names some)."""
    from verilocc.findings import LAYERS

    p.add_argument("--mcpu", metavar="GFX", help="target processor (default: the file's target-cpu)")
    p.add_argument("--layers", type=_layers, default=LAYERS, metavar="L1,L2",
                   help="run only these layers: constraints, value-flow, equivalence (a subset never VERIFIES)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="solver timeout per query (default 60)")
    p.add_argument("--seed", type=int, default=0, help="solver random seed (default 0)")


def _layers(text: str) -> tuple[str, ...]:
    """The layers that --layers names, in the order they run."""
    from verilocc.findings import LAYERS

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    for n in names:
        if n not in LAYERS:
            raise argparse.ArgumentTypeError(f"unknown layer '{n}' (choose from {', '.join(LAYERS)})")
    return tuple(layer for layer in LAYERS if layer in names)


def check_timeout(seconds: float) -> None:
    """--timeout is a positive number of seconds (bad input otherwise)."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"--timeout must be a positive number of seconds, not {seconds}", "--timeout", 0, 0)
