"""The command-line options that say where a run's units of work go (standard library only,
so that building a parser stays cheap)."""

from __future__ import annotations

import argparse


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
