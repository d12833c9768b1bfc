"""`verilocc fuzz` in chunks of seeds: the per-seed unit is `oracle.check_example`, unchanged.

An example is `(target, seed)`, made in the order `verilocc fuzz` always made them (targets
in turn, one seed per round of targets); a chunk is a run of consecutive examples. What a
worker sends back is the `Outcome` without the program and allocation objects (the
disagreements keep their MIR text), so the summary is the same whichever runner made it.
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
