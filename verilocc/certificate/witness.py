"""The witnesses of a certificate: what the verifier found, for an independent checker to re-check.

`certcheck` (a package that shares no code with verilocc) re-establishes the claims that no
solver obligation covers from the two MIR files and these witnesses:

- `blocks[i].bb`, `post_bb`: a block of the virtual program and its block in the allocated
  file (llc may number them anew);
- `blocks[i].steps`: the pairing of each block's instructions, `[role, pre line, post line]`
  (line numbers of the two files, 0 where a side has no instruction; roles as
  `verilocc.pairing.alignment.Role`): matched instructions, moves, spill code, rematerialised
  copies and the definitions the allocator deleted;
- `blocks[i].entry`: value flow's state at the block's entry (`verilocc.semantics.valueflow`):
  which allocated locations hold which values of the virtual program (`holds`), which virtual
  lanes are defined (`defined`), which physical registers of the virtual program are undefined
  (`undef`), the SGPR values spilled into lanes of VGPRs (`lanes`) and how rematerialisable
  lanes were computed (`remat`: the virtual program's line of the computing instruction, its
  input values and the lane's position). A block whose one predecessor is another block has
  `"entry": "pred"`: the checker starts it from that block's exit state. In a function that
  is not an entry function, `holds` and `lanes` also say where the entry values of the
  registers the allocated program saves for its caller are (`verilocc.semantics.calleesaved`):
  the checker shows from them that each callee-saved register holds its entry value at every
  return.

- `anomalies` (only where there are some): each read that LLVM's liveness left out and the
  verifier showed harmless (an LLVM liveness anomaly, `verilocc.semantics.anomalies`): the
  allocated file's line of the instruction, the operand's position, the operand's 16-bit slots
  that may hold another value, and the file of the obligation that proves the instruction's
  observed results do not depend on them.

Names are independent of verilocc's internals: a location is a 16-bit half of a 32-bit
register, `vgpr5.0` (low) / `vgpr5.1` (high), `vcc_lo.0`, `scc.1`, `private_rsrc_reg.3`, or
piece k of a stack slot, `slot:3.k`; a value is `%12.2` (16-bit lane 2 of %12), `$vgpr5.1`
(what the virtual program holds in that unit: its entry value until the program writes it) or
`^sgpr30.0` (the value that unit had at the function's entry, whatever the program writes).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from verilocc.mir.model import Function
from verilocc.pairing.alignment import FunctionAlignment
from verilocc.pairing.steps import Loc
from verilocc.semantics.calleesaved import CalleeSavedChecker
from verilocc.semantics.calleesaved import State as EntryValues
from verilocc.semantics.holdings import State, Tag, untouched
from verilocc.semantics.valueflow import ValueFlowChecker
from verilocc.target import register_for_units
from verilocc.target.registers import parse_physreg, special_register_names

WITNESS_FORMAT = "verilocc-witness/3"


class WitnessError(Exception):
    """A state the witness format cannot name; the function's witness is then not written."""


@lru_cache(maxsize=None)
def _special_units() -> dict[int, str]:
    """Unit -> name for the units of special registers that no 16-bit register name covers."""
    out: dict[int, str] = {}
    names = sorted(special_register_names(), key=lambda n: (len(parse_physreg(n).units), n))
    for name in names:
        for k, u in enumerate(parse_physreg(name).units):
            out.setdefault(u, f"{name}.{k}")
    return out


@lru_cache(maxsize=None)
def unit_name(u: int) -> str:
    reg = register_for_units((u,))
    if reg is not None:
        m = re.fullmatch(r"(.+)_(lo16|hi16)", reg.name)
        if m:
            return f"{m.group(1)}.{0 if m.group(2) == 'lo16' else 1}"
    got = _special_units().get(u)
    if got is None:
        raise WitnessError(f"register unit {u} has no name")
    return got


def loc_name(loc: Loc) -> str:
    if isinstance(loc, int):
        return unit_name(loc)
    if isinstance(loc, tuple) and len(loc) == 3 and loc[0] == "slot":
        return f"slot:{loc[1]}.{loc[2]}"
    raise WitnessError(f"location {loc!r}")


def tag_name(t: Tag) -> str:
    if t[0] == "$":
        return "$" + unit_name(int(t[1]))  # type: ignore[call-overload]
    if len(t) == 2 and isinstance(t[1], int):
        return f"%{t[0]}.{t[1]}"
    raise WitnessError(f"value {t!r}")


def _tags(ts: Any) -> list[str]:
    return sorted(tag_name(t) for t in ts)


def state_json(vf: ValueFlowChecker, s: State, entry_values: EntryValues | None = None) -> dict[str, Any]:
    holds_d = {loc_name(loc): _tags(ts) for loc, ts in s.locs.items() if ts != untouched(loc)}
    lanes_d = {(loc_name(loc), lane, half): _tags(ts)
               for loc, store in s.lanes.items() for (lane, half), ts in store.items() if ts}
    for loc, units in (entry_values or {}).items():
        tags = [t for t in ("^" + unit_name(u) for u in units) if t.startswith("^sgpr")]  # what certcheck checks
        if not tags:
            continue
        if isinstance(loc, tuple) and len(loc) == 4 and loc[0] == "lane":  # ("lane", VGPR unit, lane, half)
            lane_key = (unit_name(int(loc[1])), loc[2], loc[3])
            lanes_d[lane_key] = sorted(set(lanes_d.get(lane_key, [])) | set(tags))
        else:
            name = loc_name(loc)
            default = _tags(untouched(loc)) if isinstance(loc, int) else []
            holds_d[name] = sorted(set(holds_d.get(name, default)) | set(tags))
    holds = sorted([loc, ts] for loc, ts in holds_d.items())
    lanes = sorted([loc, lane, half, ts] for (loc, lane, half), ts in lanes_d.items())
    remat: list[list[Any]] = []
    for t, (key, inputs, pos) in s.remat.items():
        ins = vf.remat_instructions.get(key)
        if ins is None:
            raise WitnessError(f"no instruction for the recipe of {t!r}")
        remat.append([tag_name(t), ins.line, [tag_name(x) for x in inputs], pos])
    return {"holds": holds, "defined": _tags(t for t in s.defined if t[0] != "$"),
            "undef": _tags(s.undef_fixed), "lanes": lanes, "remat": sorted(remat)}


def function_witness(vf: ValueFlowChecker, pre: Function, post: Function, alignment: FunctionAlignment,
                     block_pairing: dict[int, int] | None = None) -> dict[str, Any]:
    """`block_pairing`: allocated block number -> virtual one (`verilocc.pairing.blocks`), where
    llc numbered the allocated program's blocks anew; `post` is renumbered to the virtual
    numbers, the witness says which block of the file each one is (`post_bb`)."""
    post_number = {v: k for k, v in (block_pairing or {}).items()}
    pre_blocks = {b.number: b for b in pre.blocks}
    post_blocks = {b.number: b for b in post.blocks}
    preds: dict[int, list[int]] = {n: [] for n in pre_blocks}
    for n in pre_blocks:
        for t in set(vf.cfg.successors(n)):
            preds.setdefault(t, []).append(n)
    entry_values = CalleeSavedChecker(pre, post, alignment, vf.cfg).entry_values()
    blocks: list[dict[str, Any]] = []
    for b in sorted(alignment.steps):
        pb, qb = pre_blocks[b], post_blocks[b]
        steps = [[st.role.value, pb.instructions[st.pre].line if st.pre is not None else 0,
                  qb.instructions[st.post].line if st.post is not None else 0] for st in alignment.steps[b]]
        entry = vf.entry_states.get(b)
        state: dict[str, Any] | str | None = None if entry is None else state_json(vf, entry, entry_values.get(b) if b != pre.blocks[0].number else None)
        if entry is not None and b != pre.blocks[0].number and len(preds[b]) == 1 and preds[b][0] != b:
            state = "pred"  # the checker starts from the predecessor's exit state
        blocks.append({"bb": b, "post_bb": post_number.get(b, b), "steps": steps, "entry": state})
    return {"format": WITNESS_FORMAT, "function": post.name, "blocks": blocks}
