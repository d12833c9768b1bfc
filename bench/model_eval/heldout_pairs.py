#!/usr/bin/env python3
"""Pairs of the held-out kernel sources beyond the corpus: the unseen target, more variants.

The corpus (`../shared/corpus`) has the held-out kernels of its manifest for gfx90a, gfx942 and
gfx1100 (LLVM 19). A target the model never saw in training needs its own pairs, and more
variants of the held-out sources (`heldout_manifest.txt` here) widen the GEMM and attention
families: this compiles the variants of the held-out sources in `--manifest` (default the
kernels' own manifest) for `--targets` with clang-19 and makes pairs with llc-19, exactly as
`verilocc dataset build` does (`verilocc.llm.build`). Resumes.

    python3 bench/model_eval/heldout_pairs.py --targets gfx906 --out build/heldout
    python3 bench/model_eval/heldout_pairs.py --manifest bench/model_eval/heldout_manifest.txt \
        --targets gfx90a,gfx942,gfx1100,gfx906 --out build/heldout-more
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verilocc.llm.build import compile_ir, make_pairs, read_manifest  # noqa: E402
from verilocc.llm.dataset import HELD_OUT_SOURCES  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="../shared/kernels", type=Path)
    ap.add_argument("--manifest", type=Path, help="kernel variants (default <kernels>/manifest.txt)")
    ap.add_argument("--targets", default="gfx906")
    ap.add_argument("--sources", default=",".join(HELD_OUT_SOURCES))
    ap.add_argument("--out", default="build/heldout", type=Path)
    ap.add_argument("--clang", default="clang-19")
    ap.add_argument("--llc", default="llc-19")
    args = ap.parse_args()
    targets = tuple(t for t in args.targets.split(",") if t)
    sources = set(args.sources.split(","))
    manifest = [dataclasses.replace(kv, targets=targets) for kv in read_manifest(args.manifest or args.kernels / "manifest.txt")
                if kv.source in sources]
    compile_ir(args.kernels, manifest, targets, args.out / "ir", args.clang, print)
    make_pairs(args.out / "ir", targets, args.llc, args.out / f"pairs-{args.llc}", print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
