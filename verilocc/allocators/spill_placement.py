"""Where spill code goes: the rewriter that carries out a round's choice (`verilocc.allocators.spill`
describes the rules; `verilocc.allocators.spill_choice` makes the choice).

A spilled value lives in its home in its *region* (`region`); the blocks at the region's edges
get a store at their end or a reload at their start (`boundaries`). Inside, `Rewriter` puts a
store after each def and a reload before the first access after a point over the budget,
folds full COPYs into the store or reload, and defines a constant again before each use. The
instructions themselves come from `verilocc.allocators.spill_code`.
"""

from __future__ import annotations

import bisect
import copy
import re

from verilocc.allocators.problem import vreg_key
from verilocc.allocators.slots import Slot, colour_slots, redundant_stores, rename_slots
from verilocc.allocators.spill_code import (add_frame_entries, av_class, copy as copy_instruction, defined_parts,
                                            lane_reloads, lane_stores, lane_vgpr_def, stack_reload, stack_store)
from verilocc.analysis.cfg import CFG, build_cfg, loop_depths
from verilocc.analysis.liveness import Liveness
from verilocc.analysis.operands import VReg, vreg_classes
from verilocc.analysis.wholewave import wwm_vregs
from verilocc.mir.model import Function, Instruction, Operand, VRegDecl
from verilocc.target import RegFile, RegisterClass, Target
from verilocc.target.limits import Limits

#: Accesses of a spilled value this close (instructions, same block) share one register even
#: where the pressure is over the budget (a short range costs less than a reload; the next
#: round spills something else if it must).
NEAR = 12

_TERMINATORS = frozenset({
    "S_BRANCH", "SI_IF", "SI_ELSE", "SI_LOOP", "SI_WATERFALL_LOOP", "S_ENDPGM", "SI_RETURN", "SI_RETURN_TO_EPILOG",
    "S_SETPC_B64_return", "SI_TCRETURN", "SI_KILL_I1_TERMINATOR", "SI_KILL_F32_COND_IMM_TERMINATOR",
    "SI_EARLY_TERMINATE_SCC0", "S_TRAP", "SI_CS_CHAIN_TC_W32", "SI_CS_CHAIN_TC_W64",
})


def is_terminator(ins: Instruction) -> bool:
    op = ins.opcode
    return (op in _TERMINATORS or op.startswith(("S_CBRANCH_", "S_SETPC_B64_return", "SI_TCRETURN"))
            or op.endswith("_term"))


def terminator_start(instructions: list[Instruction]) -> int:
    """Index of the first instruction of the block's terminator group (len when none)."""
    k = len(instructions)
    while k > 0 and is_terminator(instructions[k - 1]):
        k -= 1
    return k


def vregs_of(ins: Instruction) -> list[VReg]:
    """The virtual registers `ins` reads or writes, in operand order, each once."""
    out: list[VReg] = []
    for op in ins.operands:
        if op.kind == "reg" and op.vreg is not None and op.vreg not in out:
            out.append(op.vreg)
    return out


# --------------------------------------------------------------------------------------------
# Regions
# --------------------------------------------------------------------------------------------
def region(hot: set[int], live_in: set[int], cfg: CFG) -> set[int]:
    """Blocks where a value spilled at points over the budget in `hot` lives in its home: the
    hot blocks, and every block it is live into from both a block inside and one outside
    (entering there would need its home and its register to agree)."""
    out = set(hot)
    changed = True
    while changed:
        changed = False
        for q in sorted(live_in - out):
            ps = cfg.predecessors(q)
            if any(p in out for p in ps) and any(p not in out for p in ps):
                out.add(q)
                changed = True
    return out


def boundaries(region: set[int], live_in: set[int], cfg: CFG) -> tuple[list[int], list[int]]:
    """Blocks outside `region` that end with a store (a successor in the region is entered
    with the value live) and blocks outside it that start with a reload (entered from the
    region with the value live; `region` makes all their predecessors region blocks)."""
    stores = sorted({p for h in region if h in live_in for p in cfg.predecessors(h) if p not in region})
    reloads = sorted(q for q in live_in - region if cfg.predecessors(q) and all(p in region for p in cfg.predecessors(q)))
    return stores, reloads


# --------------------------------------------------------------------------------------------
# The rewriter
# --------------------------------------------------------------------------------------------
class Rewriter:
    """Rewrites one function round by round; keeps slots, lanes and new registers, and what
    the choice of the next round reads (the values spilled, the registers made here, the
    points over the budget)."""

    def __init__(self, fn: Function, target: Target, limits: Limits, near: int = NEAR) -> None:
        self.fn = fn
        self.near = near  # accesses this close share a register (`NEAR`)
        self.target = target
        self.limits = limits
        self.homes: dict[VReg, str] = {}
        self.slot_of: dict[VReg, int] = {}
        self.slot_sizes: list[tuple[int, int, str]] = []  # (id, bytes, stack-id) of the slots added
        self.home_reg: dict[VReg, int] = {}  # value -> its av_* register ("agpr")
        self.lane_of: dict[VReg, tuple[int, int]] = {}  # value -> (lane VGPR, first lane)
        self.lane_vgprs: list[int] = []
        self.lanes_used = 0
        self.temps: set[VReg] = set()  # registers this spiller made: never spilled again
        self.inserted = 0
        used = [v for v in fn.registers if isinstance(v, int)]
        used += [op.vreg for b in fn.blocks for ins in b.instructions for op in ins.operands if isinstance(op.vreg, int)]
        self.next_vreg = max(used, default=-1) + 1
        slots = [s.get("id") for s in fn.stack_slots]
        self.next_slot = max((s for s in slots if isinstance(s, int)), default=-1) + 1
        mfi = fn.machine_function_info
        sp = str(mfi.get("stackPtrOffsetReg") or "$sgpr32").strip("'")
        self.stack_pointer = sp if re.fullmatch(r"\$sgpr\d+", sp) else "$sgpr32"
        self.wwm = wwm_vregs(fn)
        self.depth = loop_depths(build_cfg(fn))
        self.evict: dict[int, list[int]] = {}  # block -> instructions after which the pressure is over
        self.region: dict[VReg, set[int]] = {}  # this round's values -> blocks where they live in their homes
        self.tail_stores: dict[int, list[VReg]] = {}  # block -> values stored at its end (entering a region)
        self.head_reloads: dict[int, list[VReg]] = {}  # block -> values reloaded at its start (leaving one)
        self.whole: set[VReg] = set()  # values spilled wherever they live (`force`)
        self.whole_ranges = False  # a value may be spilled wherever it lives when that costs less
        self.liveness: Liveness | None = None  # of the program this round rewrites (lanes defined where)

    # -- where -------------------------------------------------------------------------------
    def plan(self, chosen: dict[VReg, str], regions: dict[VReg, set[int]], live_in: dict[VReg, set[int]],
             cfg: CFG, liveness: Liveness | None = None) -> None:
        """Where this round's values live in their homes, and the stores and reloads at the
        edges of those regions. `liveness`: of the program as it is (which lanes of a value
        may be defined where its spill code goes)."""
        self.liveness = liveness
        self.region = {}
        self.tail_stores = {}
        self.head_reloads = {}
        everywhere = {b.number for b in self.fn.blocks}
        for v, home in chosen.items():
            if home == "remat":
                self.region[v] = everywhere
                continue
            self.region[v] = regions[v]
            stores, reloads = boundaries(regions[v], live_in.get(v, set()), cfg)
            for p in stores:
                self.tail_stores.setdefault(p, []).append(v)
            for q in reloads:
                self.head_reloads.setdefault(q, []).append(v)

    def crosses(self, block: int, i: int, j: int, v: VReg | None = None) -> bool:
        """Whether the register of a spilled value must not live from instruction i to j: a
        point over the budget lies in between (anywhere for a value of `whole`), and they are
        more than `self.near` apart."""
        if j - i <= self.near:
            return False
        if v in self.whole:
            return True
        ix = self.evict.get(block)
        if not ix:
            return False
        k = bisect.bisect_left(ix, i)
        return k < len(ix) and ix[k] < j

    # -- rewriting ---------------------------------------------------------------------------
    def new_vreg(self, cls: str) -> int:
        v = self.next_vreg
        self.next_vreg += 1
        self.fn.registers[v] = VRegDecl(v, cls, None)
        self.temps.add(v)
        return v

    def rewrite(self, chosen: dict[VReg, str]) -> None:
        """Give this round's values (`chosen`: value -> home) their homes and write their spill
        code where `plan` placed them."""
        fn = self.fn
        classes = vreg_classes(fn)
        lane_defs = self._give_homes(chosen, classes)
        remat_defs: dict[VReg, Instruction] = {}  # a rematerialised constant -> its def
        for b in fn.blocks:
            for ins in b.instructions:
                for op in ins.operands:
                    if op.kind == "reg" and op.is_def and op.vreg in chosen and chosen[op.vreg] == "remat":
                        remat_defs[op.vreg] = ins
        for b in fn.blocks:
            here = {v: h for v, h in chosen.items() if b.number in self.region[v]}
            code = self._rewrite_block(b.number, b.instructions, here, classes, remat_defs)
            self._add_edge_code(b.number, b.line, code, classes, len(b.instructions))
            b.instructions = code
        # After the blocks: the points over the budget (`self.evict`) index the instructions
        # as they were, so nothing may be inserted before rewriting.
        entry = fn.blocks[0]
        line = entry.instructions[0].line if entry.instructions else fn.line
        entry.instructions[0:0] = [lane_vgpr_def(lv, line) for lv in lane_defs]

    def _give_homes(self, chosen: dict[VReg, str], classes: dict[VReg, RegisterClass]) -> list[int]:
        """A stack slot, an av_* register or lanes of a lane VGPR for each value of `chosen`;
        the lane VGPRs made (their IMPLICIT_DEF goes at the top of the entry block)."""
        lane_defs: list[int] = []
        for v, home in sorted(chosen.items(), key=lambda kv: vreg_key(kv[0])):
            self.homes[v] = home
            cls = classes[v]
            if home == "stack":
                self.slot_of[v] = self.next_slot
                self.slot_sizes.append((self.next_slot, 4 * cls.width32,
                                        "sgpr-spill" if RegFile.SGPR in cls.files else "default"))
                self.next_slot += 1
            elif home == "agpr":
                av = av_class(cls)
                assert av is not None
                self.home_reg[v] = self.new_vreg(av)
            elif home == "lane":
                wave = self.target.wavefront_size
                if not self.lane_vgprs or self.lanes_used + cls.width32 > wave:
                    self.lane_vgprs.append(self.new_vreg("vgpr_32"))
                    self.lanes_used = 0
                    lane_defs.append(self.lane_vgprs[-1])
                self.lane_of[v] = (self.lane_vgprs[-1], self.lanes_used)
                self.lanes_used += cls.width32
        return lane_defs

    def _add_edge_code(self, block: int, line: int, code: list[Instruction],
                       classes: dict[VReg, RegisterClass], length: int) -> None:
        """The stores of a block that enters a region (before its terminators) and the reloads
        of a block entered from one (after its prologue: the instructions that restore $exec
        at a join), into `code`."""
        tail = [ins for v in sorted(self.tail_stores.get(block, []), key=vreg_key)
                for ins in self._store(v, v, classes[v], line, self._defined(block, length - 1, v))]
        if tail:
            t = terminator_start(code)
            code[t:t] = tail
        head = [ins for v in sorted(self.head_reloads.get(block, []), key=vreg_key)
                for ins in self._reload(v, v, classes[v], line, self._defined(block, -1, v))]
        if head:
            k = 0
            while k < len(code) and not is_terminator(code[k]) and any(
                    op.kind == "reg" and op.is_def and op.phys in ("exec", "exec_lo") for op in code[k].operands):
                k += 1
            code[k:k] = head

    def _rewrite_block(self, block: int, code: list[Instruction], chosen: dict[VReg, str],
                       classes: dict[VReg, RegisterClass], remat_defs: dict[VReg, Instruction]) -> list[Instruction]:
        """`code` with the accesses of the values of `chosen` (those living in their homes in
        this block) going through registers of their own, stored after defs and reloaded
        before uses."""
        tstart = terminator_start(code)
        touches: dict[VReg, list[int]] = {}
        for i, ins in enumerate(code):
            for v in vregs_of(ins):
                if v in chosen:
                    touches.setdefault(v, []).append(i)
        if not touches:
            return code
        out: list[Instruction] = []
        out_tstart: int | None = None
        avail: dict[VReg, tuple[int, int]] = {}  # value -> (register holding it, index of last access)
        for i, ins in enumerate(code):
            if i == tstart:
                out_tstart = len(out)
            vs = [v for v in vregs_of(ins) if v in chosen]
            if not vs:
                out.append(ins)
                continue
            if any(remat_defs.get(v) is ins for v in vs):
                continue  # the original def of a rematerialised constant goes
            folded = self._fold_copy(block, i, ins, vs, chosen, classes, remat_defs)
            if folded is not None:
                for v in vs:
                    avail.pop(v, None)
                self._emit(out, out_tstart, [], folded, [])
                continue
            before: list[Instruction] = []
            after: list[Instruction] = []
            rename: dict[VReg, int] = {}
            for v in vs:
                if chosen[v] == "remat":
                    t = self.new_vreg(classes[v].name)
                    before.append(self._remat(remat_defs[v], v, t))
                else:
                    t = self._access(block, code, i, v, classes[v], touches[v], tstart, avail, before, after)
                rename[v] = t
            for op in ins.operands:
                if op.kind == "reg" and op.vreg in rename:
                    _set_vreg(op, rename[op.vreg])
            self._emit(out, out_tstart if i >= tstart else None, before, [ins], after)
        return out

    def _access(self, block: int, code: list[Instruction], i: int, v: VReg, cls: RegisterClass, touches: list[int],
                tstart: int, avail: dict[VReg, tuple[int, int]], before: list[Instruction],
                after: list[Instruction]) -> int:
        """The register that instruction `i` of `code` accesses spilled value `v` through: the
        one of its last access when no point over the budget lies in between, or a new one,
        reloaded into `before` when `i` reads `v`. A def is stored in `after`, unless a partial
        def of the same register follows (that one stores) or the def is dead."""
        ops = [op for op in code[i].operands if op.kind == "reg" and op.vreg == v]
        reads = any((not op.is_def and not op.has("undef")) or (op.is_def and op.subreg and not op.has("undef"))
                    for op in ops)
        got = avail.get(v)
        if reads and got is not None and not self.crosses(block, got[1], i, v):
            t = got[0]
        else:
            t = self.new_vreg(cls.name)
            if reads:
                before.extend(self._reload(v, t, cls, code[i].line, self._defined(block, i - 1, v)))
        if not any(op.is_def for op in ops):
            avail[v] = (t, i)
            return t
        if all(op.has("dead") for op in ops if op.is_def):
            avail.pop(v, None)
            return t
        nxt = next((j for j in touches if j > i), None)
        if not (nxt is not None and nxt < tstart and not self.crosses(block, i, nxt, v)
                and any(op.is_def for op in code[nxt].operands if op.kind == "reg" and op.vreg == v)):
            after.extend(self._store(v, t, cls, code[i].line, self._defined(block, i, v)))
        avail[v] = (t, i)
        return t

    def _emit(self, out: list[Instruction], at: int | None, before: list[Instruction], body: list[Instruction],
              after: list[Instruction]) -> None:
        if at is not None and before:
            out[at:at] = before  # reloads for a terminator go before the terminator group
        else:
            out.extend(before)
        out.extend(body)
        out.extend(after)

    def _fold_copy(self, block: int, i: int, ins: Instruction, vs: list[VReg], chosen: dict[VReg, str],
                   classes: dict[VReg, RegisterClass], remat_defs: dict[VReg, Instruction]) -> list[Instruction] | None:
        """A full COPY between a spilled value and an unspilled virtual register of the same
        register file becomes the store or the reload itself."""
        if ins.opcode != "COPY" or len(vs) != 1 or len(ins.operands) != 2:
            return None
        dst, src = ins.operands
        if (dst.vreg is None or src.vreg is None or dst.subreg or src.subreg or src.has("undef")
                or dst.has("dead") or dst.vreg == src.vreg):
            return None
        v = vs[0]
        o = src.vreg if dst.vreg == v else dst.vreg
        cls, ocls = classes[v], classes[o]
        if cls.width_units != ocls.width_units:
            return None
        home = chosen[v]
        same_file = (cls.files <= {RegFile.VGPR, RegFile.AGPR}) == (ocls.files <= {RegFile.VGPR, RegFile.AGPR})
        if not same_file or home == "remat" and dst.vreg == v:
            return None
        if dst.vreg == v:  # a store
            return self._store(v, o, ocls, ins.line, self._defined(block, i - 1, o))
        if home == "remat":
            return [self._remat(remat_defs[v], v, o)]
        return self._reload(v, o, ocls, ins.line, self._defined(block, i - 1, v))

    def _defined(self, block: int, index: int, v: VReg) -> int | None:
        """Lanes of `v` that may be defined just after instruction `index` of `block` (-1: at
        its entry) in the program this round rewrites; None when that is not known."""
        if self.liveness is None or block not in self.liveness.defined_in:
            return None
        if index < 0:
            return self.liveness.defined_in[block].get(v, 0)
        return self.liveness.defined_after(block, index, v)

    def _store(self, v: VReg, t: VReg, cls: RegisterClass, line: int, defined: int | None = None) -> list[Instruction]:
        """Instructions that put `t` (a register of class `cls`) into `v`'s home. `defined`:
        the lanes of `t` that may be defined there (None: all). An SGPR value's parts that no
        path defines are not stored (a read of an SGPR no path writes is one LLVM's machine
        verifier refuses; its contents do not matter): in VGPR lanes, only the parts with a
        defined lane; to a stack slot, nothing when no lane is defined."""
        home = self.homes[v]
        if defined is not None and RegFile.SGPR in cls.files:
            parts = defined_parts(cls, defined)
            if not parts:
                return []
            if home == "lane":
                lane_vgpr, first = self.lane_of[v]
                out = lane_stores(t, cls, lane_vgpr, first, line, parts)
                self.inserted += len(out)
                return out
        if home == "stack":
            out = [stack_store(t, cls, self.slot_of[v], self.stack_pointer, line)]
        elif home == "agpr":
            h = self.home_reg[v]
            reg_class = self.fn.registers[h].reg_class
            assert reg_class is not None
            out = [copy_instruction(h, reg_class, t, line)]
        else:
            lane_vgpr, first = self.lane_of[v]
            out = lane_stores(t, cls, lane_vgpr, first, line)
        self.inserted += len(out)
        return out

    def _reload(self, v: VReg, t: VReg, cls: RegisterClass, line: int, defined: int | None = None) -> list[Instruction]:
        """Instructions that define `t` (class `cls`) from `v`'s home. `defined`: the lanes of
        `v` that may be defined there; from VGPR lanes only the parts with a defined lane are
        restored (all when none is: the use still needs a def)."""
        home = self.homes[v]
        if home == "lane" and defined is not None and (parts := defined_parts(cls, defined)):
            lane_vgpr, first = self.lane_of[v]
            out = lane_reloads(t, cls, lane_vgpr, first, line, parts)
            self.inserted += len(out)
            return out
        if home == "stack":
            out = [stack_reload(t, cls, self.slot_of[v], self.stack_pointer, line)]
        elif home == "agpr":
            out = [copy_instruction(t, cls.name, self.home_reg[v], line)]
        else:
            lane_vgpr, first = self.lane_of[v]
            out = lane_reloads(t, cls, lane_vgpr, first, line)
        self.inserted += len(out)
        return out

    def _remat(self, origin: Instruction, v: VReg, t: VReg) -> Instruction:
        ins = copy.deepcopy(origin)
        for op in ins.operands:
            if op.kind == "reg" and op.vreg == v:
                _set_vreg(op, t)
        return ins

    # -- after the last round ----------------------------------------------------------------
    def drop_redundant_stores(self) -> None:
        """Stores that find the slot already holding the value go (`redundant_stores`)."""
        found = redundant_stores(self.fn, self.slot_of)
        if not found:
            return
        gone: dict[int, set[int]] = {}
        for b, i in found:
            gone.setdefault(b, set()).add(i)
        for block in self.fn.blocks:
            if block.number in gone:
                block.instructions = [ins for i, ins in enumerate(block.instructions) if i not in gone[block.number]]
        self.inserted -= len(found)

    def share_slots(self) -> None:
        """Spilled vector values never live together share a stack slot (`verilocc.allocators.slots`)."""
        spills = [Slot(n, size, stack_id) for n, size, stack_id in self.slot_sizes if stack_id == "default"]
        if len(spills) < 2:
            return
        to, remaining = colour_slots(self.fn, spills)
        rename_slots(self.fn, to)
        self.slot_of = {v: to.get(n, n) for v, n in self.slot_of.items()}
        self.slot_sizes = sorted([(s.id, s.size, s.stack_id) for s in remaining]
                                 + [x for x in self.slot_sizes if x[2] != "default"])

    def finish_header(self) -> None:
        """The slots and the spill flags in the function's header (`add_frame_entries`)."""
        add_frame_entries(self.fn, self.slot_sizes, bool(self.lane_of))


def _set_vreg(op: Operand, v: VReg) -> None:
    """Rename a register operand; its class comes from `registers:` (every value has an entry)."""
    op.vreg = v
    op.reg_class = None
    op.flags = op.flags - {"killed"}
    op.text = op.register_text
