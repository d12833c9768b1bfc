#!/usr/bin/env python3
"""Write the AMDGPU instruction names every installed LLVM knows to
`verilocc/target/data/opcode-names.txt.gz`, which the MIR reader uses to refuse an instruction
name llc would not read ("unknown machine instruction name").

    python3 scripts/opcode_names.py [--check]

For each `llc-N` on PATH, the LLVM library it runs on holds the AMDGPU backend's table of
instruction names: NUL-separated names around `V_FMAC_F32_e32`, in which a name that is the tail
of another shares that name's bytes (TableGen's suffix-sharing string table: `S_AND_B32` lies
inside `DS_AND_B32`, `COPY` inside a longer name). The file keeps the names seen, one per line, each
written backwards and sorted (so that the reader finds tails by bisection), for the union of
the versions; a name is known when it is one of them or a tail of one
(`verilocc.target.opcodes.is_known_opcode`), so no real name is refused and an unknown one is
accepted only when it happens to be the tail of a real one. The header line says which LLVM
versions were read. `--check` writes nothing and exits 1 when the file differs.
"""

from __future__ import annotations

import argparse
import gzip
import mmap
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "verilocc" / "target" / "data" / "opcode-names.txt.gz"
_NAME = re.compile(rb"[A-Z][A-Za-z0-9_]{1,80}")
_ANCHOR = b"\0V_FMAC_F32_e32\0"  # in the AMDGPU table of every LLVM from 13 on


def library_of(llc: str) -> Path | None:
    """The largest LLVM shared library of the llc's install (where its backends live)."""
    proc = subprocess.run([llc, "--version"], capture_output=True, text=True, check=False)
    m = re.search(r"LLVM version (\d+)", proc.stdout)
    if m is None:
        return None
    major = m.group(1)
    real = Path(shutil.which(llc) or llc).resolve()
    candidates = list(real.parent.parent.glob("lib/libLLVM*.so*")) + list(Path("/usr/lib").glob(f"*/libLLVM*-{major}*.so*"))
    libs = sorted({p.resolve() for p in candidates if p.is_file()}, key=lambda p: p.stat().st_size)
    return libs[-1] if libs else None


def names_in(library: Path) -> set[str]:
    with library.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(_ANCHOR)
        if at < 0:
            return set()
        names: set[str] = set()
        for step in (-1, 1):
            pos, misses = at + 1, 0
            while misses < 4 and 0 < pos < len(data):
                if step < 0:
                    start = data.rfind(b"\0", 0, pos - 1) + 1
                    word, pos = data[start:pos - 1], start
                else:
                    end = data.find(b"\0", pos)
                    word, pos = data[pos:end], end + 1
                if _NAME.fullmatch(word):
                    names.add(word.decode())
                    misses = 0
                else:
                    misses += 1
        return names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the file differs; write nothing")
    args = ap.parse_args()
    versions: list[str] = []
    names: set[str] = set()
    for major in range(13, 40):
        llc = shutil.which(f"llc-{major}")
        lib = library_of(llc) if llc else None
        found = names_in(lib) if lib else set()
        if len(found) < 10_000:
            continue
        versions.append(str(major))
        names |= found
        print(f"llc-{major}: {len(found)} names from {lib}", file=sys.stderr)
    if not versions:
        print("no llc-N with an AMDGPU name table on PATH", file=sys.stderr)
        return 2
    # Each name written backwards, in sorted order: the reader looks a name's tails up by bisection
    # without sorting anything itself (`verilocc.target.opcode_names`).
    text = (f"# AMDGPU instruction names of LLVM {', '.join(versions)}, each backwards, sorted (scripts/opcode_names.py)\n"
            + "\n".join(sorted(name[::-1] for name in names)) + "\n")
    data = gzip.compress(text.encode(), 9, mtime=0)
    if args.check:
        same = OUT.exists() and gzip.decompress(OUT.read_bytes()).decode() == text
        print("up to date" if same else f"{OUT} differs", file=sys.stderr)
        return 0 if same else 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(data)
    print(f"{len(names)} names -> {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
