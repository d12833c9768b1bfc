"""Which instruction names llc reads for AMDGPU, from the table of every LLVM it was made with.

`data/opcode-names.txt.gz` holds the names the AMDGPU backend of LLVM 13 to 22 knows, as
`scripts/opcode_names.py` reads them out of each version's library (its first line says which
versions), each written backwards and sorted, so that the tails of names are found by
bisection. That table shares the bytes of a name that is the tail of another (`S_AND_B32`
inside `DS_AND_B32`), so a name is known when it is one of the names kept or the tail of one:
no name llc knows is refused; a made-up name is accepted only when it happens to be such a
tail, and is then read as an instruction the verifier does not know (never a wrong verdict).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data" / "opcode-names.txt.gz"


@lru_cache(maxsize=1)
def _reversed_names() -> str:
    """The table's names, one per line, backwards and sorted (the header line left out)."""
    import gzip  # here: only a process that reads MIR pays for it

    text = gzip.decompress(_DATA.read_bytes()).decode()
    return text[text.index("\n") + 1:] if text.startswith("#") else text


@lru_cache(maxsize=None)
def is_known_opcode(name: str) -> bool:
    """Whether llc (some LLVM from 13 on) knows `name` as an AMDGPU instruction."""
    text, tail = _reversed_names(), name[::-1]
    # Bisection over the lines of the text, without splitting it: `lo` is always a line's start.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        start = max(text.rfind("\n", 0, mid) + 1, lo)
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end] < tail:
            lo = end + 1
        else:
            hi = start
    return text.startswith(tail, lo)
