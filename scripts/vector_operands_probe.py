#!/usr/bin/env python3
"""Check `verilocc.analysis.vector_operands.takes_file` against llc's machine verifier.

    python scripts/vector_operands_probe.py --llc llc-22 --mcpu gfx942 POST.mir... [--jobs 2]

For every kind of explicit vector register operand in the allocated programs given (opcode,
operand position, file), one instruction that has it is taken alone into a function, once as
written and once with that operand's register in the other vector file (`$vgpr4_vgpr5` <->
`$agpr4_agpr5`), and llc -verify-machineinstrs reads both. Where it accepts the instruction as
written, its answer for the changed one is compared with the rule's:
- `unsound`: the rule lets the operand name the other file and llc refuses it (must be 0);
- `gap`: llc accepts it and the rule does not (a correct allocation the verifier would reject).
Prints one line per unsound case and per gap, then the counts; exit 1 if any is unsound.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from verilocc.analysis.vector_operands import takes_file  # noqa: E402
from verilocc.errors import InputError  # noqa: E402
from verilocc.mir.parser import read_module  # noqa: E402
from verilocc.target import RegFile, get_target  # noqa: E402

_VECTOR_REG = re.compile(r"\$(vgpr|agpr)\d+(?:_(?:vgpr|agpr)\d+)*")
_SKIP = ("SI_", "INLINEASM", "DBG_", "BUNDLE", "COPY", "KILL", "IMPLICIT_DEF")
_MIR = """--- |
  define amdgpu_kernel void @probe() {{ ret void }}
...
---
name: probe
tracksRegLiveness: false
machineFunctionInfo:
  scratchRSrcReg: '$sgpr0_sgpr1_sgpr2_sgpr3'
  stackPtrOffsetReg: '$sgpr32'
body: |
  bb.0:
    {body}
    S_ENDPGM 0
...
"""

Key = tuple[str, int, str]  # opcode, operand position, file as written ("vgpr" or "agpr")


def cases(paths: list[Path], av_operands: bool) -> dict[Key, tuple[str, str, bool]]:
    """Key -> (the instruction as written, with that operand in the other vector file, whether
    `takes_file` lets it), for the first instruction of each key (flags that name liveness,
    `renamable` and memory operands dropped)."""
    out: dict[Key, tuple[str, str, bool]] = {}
    for path in paths:
        try:
            module = read_module(path)
        except InputError:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for fn in module.functions:
            for b in fn.blocks:
                for ins in b.instructions:
                    if ins.opcode.startswith(_SKIP):
                        continue
                    for k, op in enumerate(ins.operands):
                        if op.kind != "reg" or op.phys is None or op.is_implicit or op.tied_def is not None:
                            continue
                        file = op.phys[:4]
                        if file not in ("vgpr", "agpr") or (ins.opcode, k, file) in out:
                            continue
                        raw = lines[ins.line - 1]
                        start = len(raw[:op.column - 1].replace("renamable ", ""))
                        line = raw.replace("renamable ", "").split(" :: ")[0]
                        m = _VECTOR_REG.search(line, start)
                        if m is None:
                            continue
                        swapped = m.group(0).replace("vgpr", "#").replace("agpr", "vgpr").replace("#", "agpr")
                        other = RegFile.AGPR if file == "vgpr" else RegFile.VGPR
                        out[(ins.opcode, k, file)] = (line.strip(), (line[:m.start()] + swapped + line[m.end():]).strip(),
                                                      takes_file(ins, k, other, av_operands))
    return out


def llc_accepts(llc: str, cpu: str, body: str, directory: Path, name: str) -> bool:
    """Whether llc's machine verifier accepts a function of the one instruction `body`."""
    path = directory / f"{name}.mir"
    path.write_text(_MIR.format(body=body), encoding="utf-8")
    run = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-run-pass=none", "-verify-machineinstrs",
                          str(path), "-o", "/dev/null"], capture_output=True, text=True, timeout=120, check=False)
    return run.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="allocated (post-RA) MIR files")
    ap.add_argument("--llc", default="llc-19")
    ap.add_argument("--mcpu", default="gfx90a")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    found = cases(args.files, get_target(args.mcpu).aligned_vgpr_tuples)
    with tempfile.TemporaryDirectory() as tmp:
        def judge(item: tuple[int, tuple[Key, tuple[str, str, bool]]]) -> tuple[Key, bool | None, bool, str]:
            n, (key, (text, changed, ok)) = item
            if not llc_accepts(args.llc, args.mcpu, text, Path(tmp), f"{n}a"):
                return key, None, ok, changed
            return key, llc_accepts(args.llc, args.mcpu, changed, Path(tmp), f"{n}b"), ok, changed
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(judge, enumerate(sorted(found.items()))))
    unsound = [r for r in results if r[1] is False and r[2]]
    gaps = [r for r in results if r[1] is True and not r[2]]
    for key, _, _, changed in unsound:
        print("unsound", *key, changed)
    for key, _, _, _ in gaps:
        print("gap", *key)
    judged = sum(1 for r in results if r[1] is not None)
    print(f"{args.llc} {args.mcpu}: {len(found)} operand kinds, {judged} judged by llc, "
          f"{judged - len(unsound) - len(gaps)} agree, {len(unsound)} unsound, {len(gaps)} gaps")
    return 1 if unsound else 0


if __name__ == "__main__":
    sys.exit(main())
