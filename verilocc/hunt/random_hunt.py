"""`verilocc hunt --random`: random programs through every llc, seed by seed, resumable.

Seed S makes one program (`source_of`): an even seed one of our GPU-shaped programs
(`verilocc.hunt.gpu_ir`, one module per target, since what it may call depends on the target),
an odd seed one of `llvm-stress` (`verilocc.hunt.stress`, made and cleaned by the oldest LLVM of
the hunt so that every llc reads it, allocated for every target); with one source asked for,
every seed is of that source. Each seed is one unit of work (`hunt_seeds`): write its
inputs under `<out>/inputs/random`, make every pair (`verilocc.hunt.pairs`) and verify it
(`verilocc.hunt.check`, through the hunt's verification cache). Units run in local processes
(`--jobs`) or on Dask (`--dask`, `--scheduler`; the workers write into `--out`, so it is a
directory they all see), and their results come back in seed order.

The record of a finished seed is `<out>/random/seed-<S>.json`, stamped with everything its
result depends on (this verilocc's sources, the llc versions, targets, allocators, modes,
sources and time limits): a run stopped halfway and started again, or a run over more seeds,
does only the seeds not yet recorded under the same stamp.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verilocc.hunt.check import verify_pair
from verilocc.hunt.gpu_ir import TARGETS  # the default targets of a random hunt: those the generator writes for
from verilocc.hunt.inputs import Input
from verilocc.hunt.llvm import Llvm
from verilocc.hunt.pairs import PairFactory
from verilocc.hunt.run import HuntConfig, VerifyCache, function_records, record_key, tasks
from verilocc.llc.text import read_text, write_if_changed

SOURCES = ("gpu", "stress")


@dataclass(frozen=True)
class RandomPlan:
    """What each seed of a random hunt does (pickled to the workers)."""

    sources: tuple[str, ...]
    llvms: tuple[Llvm, ...]
    targets: tuple[str, ...]
    allocators: tuple[str, ...]
    modes: tuple[str, ...]
    out: Path
    llc_timeout: float
    pair_timeout: float
    machine_verifier: bool

    def stamp(self) -> str:
        """Everything a seed's result depends on, hashed (the record of a seed is reused only
        under the same stamp)."""
        parts = [VerifyCache(self.out / "verified").tool, repr(self.sources),
                 repr([(l.version, l.llc) for l in self.llvms]), repr(self.targets), repr(self.allocators),
                 repr(self.modes), repr((self.llc_timeout, self.pair_timeout, self.machine_verifier))]
        # What makes the inputs and pairs.
        for name in ("gpu_ir", "gpu_ir_writer", "gpu_ir_statements", "stress", "random_hunt", "pairs", "llvm"):
            parts.append(Path(__file__).with_name(f"{name}.py").read_text())
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def config(self, inputs: list[Input]) -> HuntConfig:
        return HuntConfig(inputs, list(self.llvms), list(self.targets), list(self.allocators), list(self.modes),
                          self.out, 1, self.llc_timeout, self.pair_timeout, [], self.machine_verifier)


def source_of(seed: int, sources: Sequence[str]) -> str:
    return sources[seed % len(sources)]


def seed_inputs(seed: int, plan: RandomPlan) -> list[Input]:
    """The programs of `seed`, written under `<out>/inputs/random` (only when their text changes)."""
    folder = plan.out / "inputs" / "random"
    if source_of(seed, plan.sources) == "gpu":
        from verilocc.hunt.gpu_ir import gpu_program

        made = []
        for target in plan.targets:
            if target in TARGETS:
                path = folder / f"gpu-{seed}-{target}.ll"
                write_if_changed(path, gpu_program(seed, target))
                made.append(Input(f"gpu-{seed}@{target}", path, target))
        return made
    from verilocc.hunt.stress import stress_program

    path = folder / f"stress-{seed}.ll"
    write_if_changed(path, stress_program(seed, min(l.version for l in plan.llvms)))
    return [Input(f"stress-{seed}", path)]


def hunt_seeds(seeds: Sequence[int], plan: RandomPlan) -> list[dict[str, Any]]:
    """One record per seed: its inputs, pairs and function records (or the error that stopped it)."""
    from verilocc.hunt.stress import StressError

    factory = PairFactory(plan.out / "pairs", plan.llc_timeout, plan.machine_verifier)
    cache = VerifyCache(plan.out / "verified")
    results = []
    for seed in seeds:
        rec: dict[str, Any] = {"seed": seed, "source": source_of(seed, plan.sources), "inputs": [], "pairs": [],
                               "functions": []}
        try:
            inputs = seed_inputs(seed, plan)
        except StressError as e:
            results.append({**rec, "error": str(e)})
            continue
        rec["inputs"] = [{"name": i.name, "path": str(i.path.relative_to(plan.out)), "target": i.target}
                         for i in inputs]
        for task in tasks(plan.config(inputs)):
            outcome = factory.make(task)
            rel = [str(p.relative_to(plan.out)) if p is not None else "" for p in (outcome.pre, outcome.post)]
            pair = {"input": task.name, "llvm": str(task.llvm.version), "target": task.target,
                    "allocator": task.allocator, "mode": task.mode, "status": outcome.status,
                    "pre": rel[0], "post": rel[1], "note": outcome.note}
            rec["pairs"].append(pair)
            if outcome.status != "ok":
                continue
            job = (str(plan.out / rel[0]), str(plan.out / rel[1]), plan.pair_timeout,
                   {k: pair[k] for k in ("input", "llvm", "target", "allocator", "mode", "pre", "post")})
            res = cache.get(job)
            if res is None:
                res = verify_pair(*job)
                cache.put(job, res)
            rec["functions"].extend(function_records(res, plan.out))
        results.append(rec)
    return results


def record_path(out: Path, seed: int) -> Path:
    return out / "random" / f"seed-{seed}.json"


def recorded(out: Path, seed: int, stamp: str) -> dict[str, Any] | None:
    """The record of `seed` from an earlier run under the same stamp, if there is one."""
    path = record_path(out, seed)
    if not path.is_file():
        return None
    try:
        rec: dict[str, Any] = json.loads(read_text(path))
    except ValueError:
        return None
    return rec if rec.get("stamp") == stamp else None


def run_random(plan: RandomPlan, seeds: Sequence[int],
               run_chunks: Callable[[Callable[..., list[Any]], Sequence[Any], tuple[Any, ...]], Any],
               log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every seed's record, in seed order: from `<out>/random` where recorded under this plan's
    stamp, else made by `run_chunks(hunt_seeds, seeds, (plan,))` and recorded as it arrives."""
    stamp = plan.stamp()
    done = {s: r for s in seeds if (r := recorded(plan.out, s, stamp)) is not None}
    todo = [s for s in seeds if s not in done]
    if done:
        log(f"{len(done)} of {len(seeds)} seeds recorded before under the same stamp ({plan.out / 'random'})")
    for k, rec in enumerate(run_chunks(hunt_seeds, todo, (plan,)), 1):
        rec["stamp"] = stamp
        write_if_changed(record_path(plan.out, rec["seed"]), json.dumps(rec, sort_keys=True) + "\n")
        done[rec["seed"]] = rec
        verdicts = [f.get("verdict") or f.get("error", "error") for f in rec["functions"]]
        log(f"[seed {k}/{len(todo)}] {rec['seed']} ({rec['source']}): " + (rec.get("error") or (
            f"{sum(p['status'] == 'ok' for p in rec['pairs'])} of {len(rec['pairs'])} pairs, "
            f"{verdicts.count('VERIFIED')} of {len(verdicts)} functions VERIFIED")))
    return [done[s] for s in seeds]


def gathered(records: list[dict[str, Any]], out: Path) -> tuple[list[Input], list[dict[str, Any]],
                                                                   list[dict[str, Any]]]:
    """The inputs, pairs and function records of all seeds, sorted as a hunt sorts them."""
    inputs = [Input(i["name"], out / i["path"], i["target"]) for r in records for i in r["inputs"]]
    pairs = sorted((p for r in records for p in r["pairs"]), key=record_key)
    functions = sorted((f for r in records for f in r["functions"]), key=record_key)
    return inputs, pairs, functions

