"""One pair verified into a plain record, and the renderings of a batch of records.

A record is a dict with a fixed key order (so a JSON line is the same bytes whichever worker
made it): the pair's name and files, its verdict, the exit code that verdict has alone, each
function's verdict, every finding (with its file) and, for bad input, the one-line error.
Seconds are measured in the worker; the JSON line carries them only with `--timings`.

The exit code of a batch is that of its worst pair, worst first: REJECTED (1), then bad
input (2), then UNKNOWN (3), then VERIFIED (0). A rejection is never hidden by an unknown or
by an unreadable file elsewhere in the batch, and an unreadable file is never hidden by an
unknown.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from verilocc.batch.pairs import Pair
from verilocc.errors import InputError
from verilocc.report.render import sorted_findings
from verilocc.verify import Options, load_inputs, verify_modules

BAD_INPUT = "BAD-INPUT"
EXIT_CODES = {"VERIFIED": 0, "REJECTED": 1, BAD_INPUT: 2, "UNKNOWN": 3}
WORST_FIRST = ("REJECTED", BAD_INPUT, "UNKNOWN", "VERIFIED")


def verify_pair(pair: Pair, opts: Options) -> dict[str, Any]:
    """Verify one pair; bad input and internal errors become this pair's record, never an exception."""
    t0 = time.perf_counter()
    record: dict[str, Any] = {"pair": pair.name, "post": pair.post, "pre": pair.pre}
    try:
        if pair.problem:
            raise InputError(pair.problem, pair.post if os.path.exists(pair.post) else pair.pre, 0, 0)
        post, pre, _ = load_inputs(pair.post, pair.pre, None)
        report = verify_modules(post, pre, opts)
    except InputError as e:
        record.update(verdict=BAD_INPUT, functions=[], findings=[], error=" ".join(str(e).split("\n")))
    except RecursionError:
        record.update(verdict=BAD_INPUT, functions=[], findings=[], error=f"{pair.post}:0:0: error: input nests too deeply")
    except Exception as e:  # noqa: BLE001 - as `verilocc verify` does: an internal error is UNKNOWN, never a pass
        record.update(verdict="UNKNOWN", functions=[], findings=[],
                      error=f"verilocc: internal error: {type(e).__name__}: {e}")
    else:
        record.update(
            verdict=report.verdict.value,
            functions=[{"name": fr.name, "target": fr.target, "verdict": fr.verdict.value} for fr in report.functions],
            findings=[{"file": f.place.file, **f.to_dict()} for fr in report.functions for f in sorted_findings(fr)],
        )
    record["exit"] = EXIT_CODES[record["verdict"]]
    record["seconds"] = round(time.perf_counter() - t0, 3)
    return record


def verify_chunk(pairs: Sequence[Pair], opts: Options) -> list[dict[str, Any]]:
    """The unit of work a worker runs: the records of a few pairs, in the order given."""
    return [verify_pair(p, opts) for p in pairs]


def worst_exit(records: Iterable[dict[str, Any]]) -> int:
    verdicts = {r["verdict"] for r in records}
    return next((EXIT_CODES[v] for v in WORST_FIRST if v in verdicts), EXIT_CODES[BAD_INPUT])


def json_line(record: dict[str, Any], timings: bool) -> str:
    shown = record if timings else {k: v for k, v in record.items() if k != "seconds"}
    return json.dumps(shown, separators=(",", ":")) + "\n"


def text_lines(record: dict[str, Any]) -> str:
    """The verdict and pair name, then each finding (or the bad-input error) on its own line."""
    out = [f"{record['verdict']} {record['pair']}"]
    if "error" in record:
        out.append(f"  {record['error']}")
    for f in record["findings"]:
        out.append(f"  {f['file']}:{f['line']}:{f['column']}: {f['severity']} [{f['layer']}/{f['kind']}] "
                   f"{f['function']}: {f['message']}")
    return "\n".join(out) + "\n"


def summary_table(records: Sequence[dict[str, Any]], wall_seconds: float, workers: str, slowest: int = 5) -> Any:
    """A rich table: pairs per verdict, wall and per-pair time, and the slowest pairs."""
    from rich.table import Table

    counts = Counter(r["verdict"] for r in records)
    busy = sum(r["seconds"] for r in records)
    table = Table(title=f"{len(records)} pair(s), {workers}", title_justify="left", show_header=False)
    table.add_column("")
    table.add_column("", justify="right")
    for verdict in WORST_FIRST:
        table.add_row(f"{verdict} (exit {EXIT_CODES[verdict]})", str(counts.get(verdict, 0)))
    table.add_section()
    table.add_row("wall time", f"{wall_seconds:.2f} s")
    table.add_row("verify time, all pairs", f"{busy:.2f} s")
    table.add_row("verify time per pair", f"{busy / max(1, len(records)):.2f} s")
    table.add_section()
    for r in sorted(records, key=lambda r: (-r["seconds"], r["pair"]))[:slowest]:
        table.add_row(f"slowest: {r['pair']}", f"{r['seconds']:.2f} s")
    return table
