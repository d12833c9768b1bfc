"""A hunt from start to end: make every pair, verify it, sort what is not VERIFIED.

For each input, each LLVM, each target (the input's own one, the `targets` asked for, or every
processor the llc knows), each allocator and each way of making a pair (`verilocc.hunt.pairs`):
make the pair in a thread pool (llc runs in its own processes), then verify every pair in worker
processes, biggest first, each under a time limit (`verilocc.hunt.check`). Every function record
gets the fingerprint of its virtual program, the records are sorted into groups
(`verilocc.hunt.triage`), and the two ways of making a pair are compared function by function
(`compare_modes`). Output files are written under `out` only when their content changes.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilocc.hunt.check import function_text, verify_pair
from verilocc.hunt.inputs import Input
from verilocc.hunt.llvm import Llvm
from verilocc.hunt.pairs import PairFactory, PairTask, mir_functions
from verilocc.hunt.triage import TriageRow, classify, program_fingerprint
from verilocc.llc.text import read_text, write_if_changed

PAIRS_HEADER = ("input", "llvm", "target", "allocator", "mode", "status", "pre", "post", "note")


@dataclass
class HuntConfig:
    inputs: list[Input]
    llvms: list[Llvm]
    targets: list[str] | None  # None: every processor each llc knows
    allocators: list[str]
    modes: list[str]
    out: Path
    jobs: int = 1
    llc_timeout: float = 300.0
    pair_timeout: float = 600.0
    triage: list[TriageRow] = field(default_factory=list)
    machine_verifier: bool = False
    mir_allocators: list[str] | None = None  # for pre-RA MIR inputs (fuzzer programs), if not `allocators`


@dataclass
class HuntResult:
    pairs: list[dict[str, Any]]  # one per (input, llvm, target, allocator, mode)
    records: list[dict[str, Any]]  # one per function of a made pair, and one per pair not verified
    modes: dict[str, Any]  # compare_modes


def tasks(config: HuntConfig) -> list[PairTask]:
    out = []
    for inp in config.inputs:
        for llvm in config.llvms:
            if inp.target is not None:  # made for one processor: allocated for that one only
                targets = [inp.target]
            else:
                targets = config.targets if config.targets is not None else sorted(llvm.targets, key=target_key)
            allocators = config.mir_allocators if inp.is_mir and config.mir_allocators else config.allocators
            allocators = [*allocators, *(a for a in inp.allocators if a not in allocators)]
            for target in targets:
                for allocator in allocators:
                    for mode in config.modes:
                        out.append(PairTask(llvm, target, allocator, inp.path, inp.name, mode))
    return out


def target_key(target: str) -> tuple[int, str, str]:
    """gfx908 < gfx90a < gfx942 < gfx1100 < gfx11-generic: generation, then the rest of the name."""
    core = target[3:].split("-")[0]
    if len(core) >= 3 and core[:-2].isdigit():
        return int(core[:-2]), core[-2:], target
    return (int(core) if core.isdigit() else 99), "~", target


def record_key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["input"], int(r["llvm"]), target_key(r["target"]), r["allocator"], r["mode"], r.get("function", ""))


def run_hunt(config: HuntConfig, log: Callable[[str], None]) -> HuntResult:
    factory = PairFactory(config.out / "pairs", config.llc_timeout, config.machine_verifier)
    todo = tasks(config)
    pairs: list[dict[str, Any]] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=config.jobs) as pool:
        for k, (task, outcome) in enumerate(zip(todo, pool.map(factory.make, todo)), 1):
            rel = [str(p.relative_to(config.out)) if p is not None else "" for p in (outcome.pre, outcome.post)]
            pairs.append({"input": task.name, "llvm": str(task.llvm.version), "target": task.target,
                          "allocator": task.allocator, "mode": task.mode, "status": outcome.status,
                          "pre": rel[0], "post": rel[1], "note": outcome.note})
            log(f"[pair {k}/{len(todo)}] {outcome.status:4} llc-{task.llvm.version} {task.target} {task.allocator} "
                f"{task.mode} {task.name}: {outcome.note[:200]}")
    pairs.sort(key=record_key)
    write_pairs(config.out / "pairs.tsv", pairs)
    jobs = [(str(config.out / p["pre"]), str(config.out / p["post"]), config.pair_timeout,
             {k: p[k] for k in ("input", "llvm", "target", "allocator", "mode", "pre", "post")})
            for p in pairs if p["status"] == "ok"]
    jobs.sort(key=lambda j: (-os.path.getsize(j[1]), record_key(j[3])))  # big files first
    cache = VerifyCache(config.out / "verified")
    todo_jobs = [j for j in jobs if cache.get(j) is None]
    records: list[dict[str, Any]] = []
    for j in jobs:
        res = cache.get(j)
        if res is not None:
            records.extend(function_records(res, config.out))
    if len(todo_jobs) < len(jobs):
        log(f"{len(jobs) - len(todo_jobs)} pairs verified before by this verilocc ({cache.root})")
    with concurrent.futures.ProcessPoolExecutor(max_workers=config.jobs) as pool:
        for k, (job, res) in enumerate(zip(todo_jobs, pool.map(_verify, todo_jobs, chunksize=1)), 1):
            cache.put(job, res)
            log(f"[verify {k}/{len(todo_jobs)}] llc-{res['llvm']} {res['target']} {res['allocator']} {res['mode']} "
                f"{res['input']}: " + (res.get("error") or ", ".join(
                    f"{f['function']} {f['verdict']}" for f in res["functions"])[:200]))
            records.extend(function_records(res, config.out))
    records.sort(key=record_key)
    classify(records, config.triage)
    return HuntResult(pairs, records, compare_modes(records, config.out))


def retable(out: Path, triage: list[TriageRow]) -> tuple[HuntResult, dict[tuple[str, ...], dict[str, Any]]]:
    """The records of a finished hunt (`<out>/hunt.json` and its pairs), sorted again with the
    current rules and `triage`; and the reproducers it had (without llc or verification)."""
    doc = json.loads(read_text(out / "hunt.json"))
    pairs = doc["pairs"]
    files = {(p["input"], p["llvm"], p["target"], p["allocator"], p["mode"]): (p["pre"], p["post"]) for p in pairs}
    programs: dict[str, dict[str, list[tuple[str, tuple[str, ...]]]]] = {}
    records = []
    for r in doc["functions"]:
        r = {k: v for k, v in r.items() if k not in ("group", "reason", "evidence", "triaged")}
        pre, post = files.get((r["input"], r["llvm"], r["target"], r["allocator"], r["mode"]), ("", ""))
        r.setdefault("pre", pre)
        r.setdefault("post", post)
        if "program" not in r and pre and r.get("function") != "(pair)":
            if pre not in programs:
                programs[pre] = mir_functions(read_text(out / pre))
            sig = programs[pre].get(r["function"])
            r["program"] = program_fingerprint(sig) if sig is not None else None
        records.append(r)
    records.sort(key=record_key)
    classify(records, triage)
    reproducers = {tuple(c[k] for k in ("input", "function", "llvm", "target", "allocator", "mode")):
                   {k: v for k, v in c.items() if k not in ("input", "function", "llvm", "target", "allocator", "mode")}
                   for c in doc.get("reproducers", [])}
    return HuntResult(pairs, records, compare_modes(records, out)), reproducers


class VerifyCache:
    """Verification results by the content of the pair and of the verifier: a hunt that is run
    again (the triage file or the table changed, a run was stopped) does not verify a pair
    this verilocc has verified before. The key hashes the pre and post files, the time limit,
    and every source file of `verilocc/` except the hunt's own modules (which do not change a
    verdict), `verilocc/hunt/check.py` included (which makes the record)."""

    def __init__(self, root: Path):
        self.root = root
        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in sorted(package.rglob("*.py")):
            rel = path.relative_to(package).as_posix()
            if rel.startswith("hunt/") and rel != "hunt/check.py":
                continue
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
        self.tool = digest.hexdigest()

    def _path(self, job: tuple[str, str, float, dict[str, Any]]) -> Path:
        pre, post, seconds, base = job
        h = hashlib.sha256(self.tool.encode())
        for part in (Path(pre).read_bytes(), Path(post).read_bytes(), repr(seconds).encode(),
                     json.dumps(base, sort_keys=True).encode()):
            h.update(part + b"\0")
        return self.root / f"{h.hexdigest()[:32]}.json"

    def get(self, job: tuple[str, str, float, dict[str, Any]]) -> dict[str, Any] | None:
        path = self._path(job)
        if not path.exists():
            return None
        try:
            res: dict[str, Any] = json.loads(path.read_text())
        except ValueError:
            return None
        return res if res.get("error") != "timeout" else None  # a time limit may pass another time

    def put(self, job: tuple[str, str, float, dict[str, Any]], res: dict[str, Any]) -> None:
        write_if_changed(self._path(job), json.dumps(res, sort_keys=True) + "\n")


def _verify(job: tuple[str, str, float, dict[str, Any]]) -> dict[str, Any]:
    pre, post, seconds, base = job
    return verify_pair(pre, post, seconds, base)


def function_records(res: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    if "error" in res:
        return [dict(res, function="(pair)", verdict=None)]
    programs = mir_functions(read_text(out / res["pre"]))
    recs = []
    for f in res["functions"]:
        sig = programs.get(f["function"])
        recs.append(dict(f, program=program_fingerprint(sig) if sig is not None else None))
    return recs


def outcome_of(r: dict[str, Any]) -> str:
    if r.get("verdict") is None:
        return r.get("error", "error")
    return r["verdict"] + (" (anomaly)" if r.get("anomalies") else "")


def compare_modes(records: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """One-process against reread, function by function: how many allocations are the same text,
    and every function whose outcome (verdict, anomaly) differs between the two."""
    both: dict[tuple[str, str, str, str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        if r.get("function") and r["function"] != "(pair)":
            key = (r["input"], r["llvm"], r["target"], r["allocator"], r["function"])
            both.setdefault(key, {})[r["mode"]] = r
    same = different = 0
    diffs = []
    texts: dict[str, str] = {}

    def body(path: str, fn: str) -> str:
        if path not in texts:
            texts[path] = read_text(out / path)
        t = function_text(texts[path], fn)
        return hashlib.sha256(t[t.find("\nbody:"):].encode()).hexdigest()

    for key, modes in sorted(both.items(), key=lambda kv: (kv[0][0], int(kv[0][1]), kv[0][2:])):
        if set(modes) != {"one-process", "reread"}:
            continue
        a, b = modes["one-process"], modes["reread"]
        alloc_same = body(a["post"], key[4]) == body(b["post"], key[4])
        same += alloc_same
        different += not alloc_same
        if outcome_of(a) != outcome_of(b):
            diffs.append({"input": key[0], "llvm": key[1], "target": key[2], "allocator": key[3],
                          "function": key[4], "one-process": outcome_of(a), "reread": outcome_of(b),
                          "same allocation": alloc_same,
                          "finding": (a if a.get("kind") else b).get("message", "")})
    return {"functions": same + different, "same allocation": same, "different allocation": different,
            "outcome differs": diffs}


def write_pairs(path: Path, pairs: list[dict[str, Any]]) -> None:
    text = "\t".join(PAIRS_HEADER) + "\n" + "".join(
        "\t".join(str(p[h]).replace("\t", " ").replace("\n", " ") for h in PAIRS_HEADER) + "\n" for p in pairs)
    write_if_changed(path, text)
