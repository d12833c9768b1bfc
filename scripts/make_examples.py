#!/usr/bin/env python3
"""Make `examples/<target>/<kernel>.{pre,post}.mir` from the HIP sources in `examples/kernels/`.

    python3 scripts/make_examples.py [--clang clang-19] [--llc llc-19]

Compiles each kernel of `examples/kernels/manifest.txt` with clang for gfx90a, gfx942 and
gfx1100 and makes its register-allocation pair with llc (`verilocc.llc.corpus`, the steps
`examples/README.md` lists). The LLVM IR goes to a temporary directory; only the pairs are
kept. With clang-19 and llc-19 (LLVM 19.1.7) the files are the same bytes as the kernels of
the same names in the larger corpus. Exit status as `llc_corpus.py`: 0 when every pair was made.
"""

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout, installed or not

from verilocc.llc.corpus import main as llc_corpus  # noqa: E402

EXAMPLES = ROOT / "examples"
TARGETS = "gfx90a,gfx942,gfx1100"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clang", default="clang-19")
    ap.add_argument("--llc", default="llc-19")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="verilocc-examples-") as ll:
        code = llc_corpus(["--llc", args.llc, "--hip", str(EXAMPLES / "kernels"), "--clang", args.clang,
                           "--targets", TARGETS, "--ll-dir", ll, "--out", str(EXAMPLES), "-j", "2"])
    size = sum(p.stat().st_size for p in EXAMPLES.glob("*/*.mir"))
    print(f"examples/: {len(list(EXAMPLES.glob('*/*.post.mir')))} pairs, {size / 1e6:.2f} MB")
    return code


if __name__ == "__main__":
    sys.exit(main())
