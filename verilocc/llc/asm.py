"""llc's own account of a function's resources, read from the assembly it writes: `resources`.

After each AMDGPU function, llc prints comment lines such as::

    ; NumSgprs: 35            (LLVM 19 and older; LLVM 20 and later: ; TotalNumSgprs: 35)
    ; NumVgprs: 28
    ; NumAgprs: 0             (targets with AGPRs only)
    ; ScratchSize: 0
    ; Occupancy: 8

These are what the final code uses, after prolog/epilog insertion and every later pass, so a
comparison of two allocations on them is a comparison of what runs. The function they belong to
is the last label llc marked with ``; @name`` before them. A value that is not a plain number
(an expression of symbols, for a function that calls another) is left out. Standard library only.
"""

from __future__ import annotations

import re

#: The resource lines read, and the key each is stored under.
FIELDS = {"NumSgprs": "sgpr", "TotalNumSgprs": "sgpr", "NumVgprs": "vgpr", "NumAgprs": "agpr",
          "ScratchSize": "scratch", "Occupancy": "waves"}

_LABEL = re.compile(r"^([^\s:;]+):\s*;\s*@(\S+)")
_FIELD = re.compile(r"^;\s*(" + "|".join(FIELDS) + r"):\s*(\S+)\s*$")


def resources(asm: str) -> dict[str, dict[str, int]]:
    """{function: {sgpr, vgpr, agpr, scratch, waves}} from llc's assembly text; a field llc did
    not print for a function (``agpr`` on a target without AGPRs) is absent."""
    out: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m:
            current = m.group(2)
            out.setdefault(current, {})
            continue
        m = _FIELD.match(line)
        if m and current is not None and m.group(2).isdigit():
            out[current][FIELDS[m.group(1)]] = int(m.group(2))
    return out


__all__ = ["FIELDS", "resources"]
