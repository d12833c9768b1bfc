"""llvm-reduce's interestingness test for a hunt case: exit 0 when the file is still interesting.

    python -m verilocc.hunt.interesting --llc LLC --version N --target T --allocator A \\
        --mode M --function F --kind K FILE.ll

makes the pair of FILE.ll with that llc, target, allocator and mode (`verilocc.hunt.pairs`),
verifies it, and exits 0 when function F is REJECTED with a finding of kind K; 1 otherwise
(llc fails, the function is gone or VERIFIED, another fault). `verilocc.hunt.reduce` runs it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from verilocc.hunt.llvm import ALLOCATORS, Llvm
from verilocc.hunt.pairs import MODES, PairFactory, PairTask


def still_rejected(llvm: Llvm, target: str, allocator: str, mode: str, function: str, kind: str, path: Path,
                   seconds: float = 300.0, machine_verifier: bool = False) -> bool:
    from verilocc.errors import InputError
    from verilocc.mir.parser import read_module
    from verilocc.verify import Options, verify_modules

    with tempfile.TemporaryDirectory(prefix="verilocc_interesting_") as tmp:
        outcome = PairFactory(Path(tmp), seconds, machine_verifier).make(PairTask(llvm, target, allocator, path, "case", mode))
        if outcome.status != "ok" or outcome.pre is None or outcome.post is None:
            return False
        try:
            report = verify_modules(read_module(str(outcome.post)), read_module(str(outcome.pre)), Options())
        except InputError:
            return False
    fr = next((f for f in report.functions if f.name == function), None)
    return fr is not None and any(f.severity == "error" and f.kind == kind for f in fr.findings)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--llc", required=True)
    ap.add_argument("--version", type=int, required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--allocator", choices=ALLOCATORS, required=True)
    ap.add_argument("--mode", choices=MODES, required=True)
    ap.add_argument("--function", required=True)
    ap.add_argument("--kind", required=True)
    ap.add_argument("--machine-verifier", action="store_true")
    ap.add_argument("file", type=Path)
    a = ap.parse_args(argv)
    llvm = Llvm(a.version, a.llc)
    return 0 if still_rejected(llvm, a.target, a.allocator, a.mode, a.function, a.kind, a.file,
                               machine_verifier=a.machine_verifier) else 1


if __name__ == "__main__":
    sys.exit(main())
