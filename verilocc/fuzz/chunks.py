"""`verilocc fuzz` in chunks of examples, for worker processes and Dask (`verilocc.batch`).

An example is `(target, seed)` and its unit of work is `oracle.check_example`. Examples come
in the order `verilocc fuzz` makes them (targets in turn, one seed per round of targets), and
a chunk is a run of consecutive examples, so a run cut into chunks checks the same examples.
A worker sends back each `Outcome` without the program and allocation objects (the
disagreements keep their MIR text): the summary is the same whichever runner made it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from verilocc.fuzz.oracle import Outcome, check_example


def fuzz_example(target: str, seed: int, mutants: int) -> Outcome:
    """One example, without the bulky program and allocation (a worker process returns it)."""
    return dataclasses.replace(check_example(target, seed, mutants=mutants), program=None, allocation=None)


def fuzz_chunk(examples: Sequence[tuple[str, int]], mutants: int) -> list[Outcome]:
    return [fuzz_example(target, seed, mutants) for target, seed in examples]


def examples(targets: Sequence[str], first_seed: int, count: int) -> list[tuple[str, int]]:
    return [(targets[k % len(targets)], first_seed + k // len(targets)) for k in range(count)]
