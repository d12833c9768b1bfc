#!/usr/bin/env python3
"""Make pre/post pairs of LLVM tests whose pre file never reads back as itself.

`verilocc.llm.llc_pairs` stores a pre file only once llc re-prints it unchanged (a fixed
point), so that the post is exactly what llc allocates from the stored text. llc renumbers the
fixed stack objects of every file it reads (the order of `fixedStack:` reverses), so a
function with stack arguments, byval arguments or tail calls never reaches that point and its
re-read pair is not made. This makes the pair the plain way instead:

    llc-V -mtriple=amdgcn-amd-amdhsa -mcpu=T -O3 -stop-before=greedy TEST.ll -o pre.mir
    llc-V -mtriple=amdgcn-amd-amdhsa -mcpu=T -O3 -start-before=greedy \\
        -stop-after=virtregrewriter,N pre.mir -o post.mir

(N: the last rewriter, 1 before LLVM 20 and 2 from it; on wave32 every implicit `$vcc_lo` of
the pre file is written `$vcc` first, as llc's reader insists). The post is llc's allocation of
the pre file as stored, with the fixed objects renumbered. Writes `OUT/V.T.TEST.{pre,post}.mir`
and `OUT/manifest.txt` (`post pre` per line, for `verilocc verify --manifest`). Standard
library only.

    python3 scripts/reread_once_pairs.py --out build/reread-once --llvm 16,19,22 \\
        --targets gfx90a,gfx942,gfx1100,gfx1200 sibling-call spill-vgpr callee-frame-setup ...
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LL = ROOT / "tests" / "fixtures" / "llvm-tests" / "ll"
_VCC_LO = re.compile(r"\b(implicit(?:-def)?(?: (?:killed|dead|undef|renamable|internal))*) \$vcc_lo\b")


def make(llc: str, major: int, cpu: str, ll: Path, pre: Path, post: Path) -> str | None:
    """Write the pair; None, or what llc said when it could not."""
    base = [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-O3"]
    proc = subprocess.run(base + ["-stop-before=greedy", str(ll), "-o", "-"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or "is not a recognized processor" in proc.stderr:
        return (proc.stderr.strip().splitlines() or ["llc failed"])[0]
    text = proc.stdout
    if cpu.startswith("gfx1") and "+wavefrontsize64" not in text:
        text = _VCC_LO.sub(r"\1 $vcc", text)
    pre.write_text(text)
    rewriter = 2 if major >= 20 else 1
    proc = subprocess.run(base + ["-start-before=greedy", f"-stop-after=virtregrewriter,{rewriter}", str(pre), "-o", str(post)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pre.unlink()
        return (proc.stderr.strip().splitlines() or ["llc failed"])[0]
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", nargs="+", help="names of tests in tests/fixtures/llvm-tests/ll (without .ll)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--llvm", default="16,19,22")
    ap.add_argument("--targets", default="gfx90a,gfx942,gfx1100,gfx1200")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[str] = []
    for major in (int(v) for v in args.llvm.split(",")):
        for cpu in args.targets.split(","):
            for test in args.tests:
                name = f"{major}.{cpu}.{test}"
                pre, post = args.out / f"{name}.pre.mir", args.out / f"{name}.post.mir"
                why = make(f"llc-{major}", major, cpu, LL / f"{test}.ll", pre, post)
                if why is None:
                    rows.append(f"{post.name} {pre.name}")  # relative to the manifest
                else:
                    print(f"{name}: not made: {why[:120]}", file=sys.stderr)
    (args.out / "manifest.txt").write_text("".join(r + "\n" for r in rows))
    print(f"{len(rows)} pairs -> {args.out / 'manifest.txt'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
