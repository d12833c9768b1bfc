"""A small set of kernels that LLVM's greedy allocator spills, for `optimal_vs_greedy.py`.

Ten corpus kernels (`../shared/corpus/<target>/<kernel>.ll`, LLVM 19 IR) with an
``"amdgpu-num-vgpr"`` budget below what they use, made into pairs as the corpus was made
(``llc-19 -stop-before=greedy`` for the pre file, ``-stop-after=virtregrewriter,1`` for
greedy's post file):

    python bench/spill_set.py --out build/spill-set
    python bench/optimal_vs_greedy.py run --set corpus --pairs build/spill-set --strategy solver --timeout 10 --llc \\
        -o bench/results/spill-set/solver.jsonl
    python bench/optimal_vs_greedy.py table bench/results/spill-set/*.jsonl

On gfx90a and gfx942 llc doubles an ``amdgpu-num-vgpr`` request (VGPRs and AGPRs share the
file), so a limit of 8 there is a budget of 16 VGPRs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"

#: (target, kernel, amdgpu-num-vgpr)
SET = (
    ("gfx1100", "reduce_sum", 8), ("gfx1100", "sgemm_64x64_t4x4", 40), ("gfx1100", "sgemm_naive", 10),
    ("gfx1100", "sgemm_naive", 12), ("gfx1100", "softmax_row", 12), ("gfx90a", "reduce_sum", 8),
    ("gfx90a", "sgemm_64x64_t4x4", 32), ("gfx90a", "sgemm_naive", 8), ("gfx90a", "softmax_row", 8),
    ("gfx942", "sgemm_64x64_t4x4", 24),
)


def make(out: Path, corpus: Path, llc: str = "llc-19") -> list[Path]:
    made = []
    for target, kernel, vgprs in SET:
        src = corpus / target / f"{kernel}.ll"
        text = src.read_text()
        cpu = f'"target-cpu"="{target}"'
        if cpu not in text:
            raise SystemExit(f"{src}: no {cpu} attribute")
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        name = f"{kernel}_v{vgprs}"
        ll = d / f"{name}.ll"
        ll.write_text(text.replace(cpu, f'"amdgpu-num-vgpr"="{vgprs}" {cpu}'))
        common = [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-O3", "-verify-machineinstrs"]
        rel = f"{target}/{name}"  # paths relative to `out`: the ModuleID llc prints is the same anywhere
        subprocess.run([*common, "-stop-before=greedy", f"{rel}.ll", "-o", f"{rel}.pre.mir"], check=True, cwd=out)
        subprocess.run([*common, "-stop-after=virtregrewriter,1", f"{rel}.ll", "-o", f"{rel}.post.mir"], check=True,
                       cwd=out)
        made.append(d / f"{name}.pre.mir")
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "spill-set"))
    ap.add_argument("--corpus", default=str(CORPUS))
    args = ap.parse_args()
    for p in make(Path(args.out), Path(args.corpus)):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
