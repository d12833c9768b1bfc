"""Which instruction names llc reads for AMDGPU, from the table of every LLVM it was made with.

`data/opcode-names.txt.gz` holds the names the AMDGPU backend of LLVM 13 to 22 knows, as
`scripts/opcode_names.py` reads them out of each version's library (its first line says which
versions), each written backwards and sorted, so that the tails of names are found by bisection. That table shares the bytes of a name that is the tail of another (`S_AND_B32`
inside `DS_AND_B32`), so a name is known when it is one of the names kept or the tail of one:
no name llc knows is refused; a made-up name is accepted only when it happens to be such a
tail, and is then read as an instruction the verifier does not know (never a wrong verdict).
"""

from __future__ import annotations

import bisect
from functools import lru_cache
from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data" / "opcode-names.txt.gz"


@lru_cache(maxsize=1)
def _reversed_names() -> tuple[str, ...]:
    import gzip  # here: only a process that reads MIR pays for it

    text = gzip.decompress(_DATA.read_bytes()).decode()
    return tuple(line for line in text.splitlines() if line and not line.startswith("#"))  # backwards, sorted


def opcode_versions() -> str:
    """The LLVM versions the table was read from, as its header line says."""
    import gzip

    with gzip.open(_DATA, "rt") as f:
        header = f.readline()
    return header.removeprefix("# AMDGPU instruction names of LLVM ").partition(", each")[0].strip()


def is_known_opcode(name: str) -> bool:
    """Whether llc (some LLVM from 13 on) knows `name` as an AMDGPU instruction."""
    names = _reversed_names()
    tail = name[::-1]
    k = bisect.bisect_left(names, tail)
    return k < len(names) and names[k].startswith(tail)
