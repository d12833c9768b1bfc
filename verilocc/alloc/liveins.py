"""Block live-ins of an allocated program, as llc wants them after register allocation.

After allocation a function has no virtual registers, and llc's machine verifier
(`-verify-machineinstrs`, with ``tracksRegLiveness: true``) requires every physical register
read in a block before it is written there to be listed in the block's ``liveins:``. A
program materialised from an assignment has only the virtual program's live-ins, so this
module recomputes them from lane liveness of the allocated program (`verilocc.analysis`).

Lists hold whole 32-bit registers (``$vgpr4``) for the numbered files and the smallest named
special registers that cover the live units (``$vcc`` when both halves are live); reserved
registers (``$exec``, ``$m0``, ...) are omitted, as LLVM omits them. A 32-bit register with only
one half live is listed whole: llc accepts a live-in that is wider than necessary.
"""

from __future__ import annotations

from verilocc.analysis.cfg import build_cfg
from verilocc.analysis.liveness import compute_liveness
from verilocc.mir.model import Function
from verilocc.target import PhysReg, RegFile, Target, parse_physreg, register_for_units, reservations


def block_liveins(fn: Function, target: Target) -> dict[int, list[str]]:
    """Block number -> live-in register names (without ``$``), in register order."""
    liveness = compute_liveness(fn, build_cfg(fn), {})
    reserved = reservations(target).reserved_units
    out: dict[int, list[str]] = {}
    for block in fn.blocks:
        units = sorted(u for u in liveness.live_in[block.number].units if u not in reserved)
        out[block.number] = [r.name for r in _cover(units)]
    return out


def _cover(units: list[int]) -> list[PhysReg]:
    """The registers that list `units` (sorted): 32-bit registers, special pairs where whole."""
    regs: list[PhysReg] = []
    seen: set[int] = set()
    for u in units:
        if u in seen:
            continue
        # The 32-bit register holding this unit: units come in (lo16, hi16) pairs from an even id.
        base = u - (u % 2)
        reg = register_for_units((base, base + 1)) or register_for_units((u,))
        if reg is None:
            continue
        if reg.file is RegFile.SPECIAL:
            wide = register_for_units((base, base + 1, base + 2, base + 3))
            if wide is not None and base + 2 in units and wide.file is RegFile.SPECIAL:
                reg = wide
        seen.update(reg.units)
        regs.append(reg)
    return regs


def add_block_liveins(fn: Function, target: Target) -> None:
    """Replace every block's ``liveins:`` by the live-ins of the allocated program `fn`."""
    lists = block_liveins(fn, target)
    entry = fn.blocks[0].number if fn.blocks else None
    for block in fn.blocks:
        names = lists.get(block.number, [])
        if block.number == entry:
            # The entry block keeps the function's live-ins (the ABI), in their written order.
            written = [r for r, _ in block.liveins]
            covered = {u for r in written for u in parse_physreg(r).units}
            names = written + [n for n in names if not covered.issuperset(parse_physreg(n).units)]
        block.liveins = [(n, None) for n in names]
