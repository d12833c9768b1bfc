"""Do two versions of the fuzzer generate the same examples? One hash per campaign target.

    PYTHONPATH=CHECKOUT python bench/fuzz_same_examples.py [FIRST_SEED LAST_SEED]

Run it with the checkout of each version on PYTHONPATH and compare the hashes: equal hashes
are the evidence of a `same_examples` link in bench/fuzz_campaign.json (a change to the
fuzzer after which the long run's earlier parts still count). Verification is replaced by a
stub that records the allocated program it is given (every reference, permuted, misaligned
and mutant variant) and the virtual one; every random draw of the generator (range and
result), the interpreter's traces, the reference allocation and the variants' verdicts and
disagreements are recorded too. check_example is called as `verilocc fuzz` calls it.
Default seeds: 121763-122262 (2,000 examples).
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any

import verilocc
from verilocc.fuzz import generate, oracle
from verilocc.mir.model import Module
from verilocc.mir.printer import print_module

CAMPAIGN_TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx1100")
MUTANTS = 3  # `verilocc fuzz --mutants` default
record: list[str] = []


def stub_verify(post: Module, pre: Module) -> tuple[str, tuple[str, ...]]:
    record.append("verify:" + print_module(post) + "\n--pre--\n" + print_module(pre))
    return "VERIFIED", ()


def recording(real: Any, tag: str, show: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        record.append(f"{tag}:{show(args, out)}")
        return out
    return wrapper


def main(lo: int, hi: int) -> None:
    oracle.traces = recording(oracle.traces, "traces", lambda a, out: repr(a[1:]) + repr(
        [(t.events, t.status, t.steps) for t in out]))
    generate.RandomSource.integer = recording(generate.RandomSource.integer, "draw", lambda a, x: f"{a[1:]}={x}")
    print("code:", verilocc.__file__, file=sys.stderr)
    total = hashlib.sha256()
    for target in CAMPAIGN_TARGETS:
        h = hashlib.sha256()
        for seed in range(lo, hi + 1):
            record.clear()
            p = generate.random_program(target, seed)
            record.append("program:" + p.text + repr((p.inputs, p.instructions, p.blocks)))
            o = oracle.check_example(target, seed, mutants=MUTANTS, verify=stub_verify)
            record.append("status:" + o.status)
            if o.allocation is not None:
                a = o.allocation
                record.append("alloc:" + a.text + repr(sorted(map(str, a.assignment.items())))
                              + repr(sorted(map(str, a.spilled.items()))) + repr(a.budget))
            record.append("variants:" + repr([(v.name, v.verdict, v.differs, v.description) for v in o.variants]))
            record.append("dis:" + repr([(d.kind, d.variant, d.pre, d.post) for d in o.disagreements]))
            for r in record:
                h.update(r.encode() + b"\0")
        print(target, h.hexdigest(), flush=True)
        total.update(h.hexdigest().encode())
    print("all", total.hexdigest())


if __name__ == "__main__":
    main(*(map(int, sys.argv[1:3]) if len(sys.argv) > 2 else (121763, 122262)))
