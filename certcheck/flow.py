"""Re-check a function's witness against the two MIR files.

The witness (docs/certificates.md) gives, per block, its block in the allocated file, the
pairing of its instructions and the value-flow state at its entry. This module checks, with
its own rules:

1. alignment: the blocks pair one to one, entry with entry, in the same layout order, with the
   same successors; each block's steps use every instruction of both sides once, in order; a
   matched pair has the same opcode, flags, memory operands and non-register operands, and
   register operands at the same positions; a post-only step is a move, spill code or a
   rematerialised definition, a pre-only step a COPY, KILL, IMPLICIT_DEF or a deleted
   definition with no other effect;
2. homes: walking each reachable block from its entry state (or, for a block whose one
   predecessor is another block, from that block's exit state), every register the virtual
   program reads is read, in the allocated program, from units that hold that value (or the
   value is undefined there); defs, copies, spills, reloads, lane spills and
   rematerialisations move values by the rules below; at every edge the successor's entry
   state holds (the states are an inductive invariant; the entry block starts empty);
3. undefined reads: no virtual register is read where no path writes it;
4. post-only constraints: every register exists on the target, lies in its file, is aligned;
   each home is in its virtual register's class file and width and not reserved; tied
   operands are equal, printed or implied by the opcode (`certcheck.ties`); early-clobber defs
   overlap no use that reads a value; no COPY from a vector into a scalar register; spill
   pseudos store registers of their file;
5. callee-saved registers: at every return, each SGPR the function keeps for its caller holds
   its entry value `^unit` (the walk from the entry block starts with every unit holding its
   own; the witness states where they are at other blocks);
6. LLVM liveness anomalies: a read whose units do not hold their value is accepted only where
   the witness lists an anomaly for that allocated line and operand position whose slots cover
   the wrong ones, and whose obligation (that the instruction's results do not depend on those
   slots) the manifest lists, so that z3 and cvc5 decide it.

A failure raises `Refused` with the claim and the place.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from certcheck import regs, ties
from certcheck.mir import Block, Function, Ins, Op

Store = dict[tuple[int, int], frozenset[str]]
NOTHING: frozenset[str] = frozenset()
SIDE_EFFECTS = ("S_BRANCH", "S_CBRANCH", "SI_", "S_ENDPGM", "S_SETPC", "S_BARRIER", "S_WAITCNT", "S_SETPRIO",
                "S_SENDMSG", "S_SLEEP", "ATOMIC_FENCE", "S_SETREG", "S_DCACHE", "S_MEMTIME", "S_MEMREALTIME",
                "S_GETREG", "BUFFER_", "GLOBAL_", "FLAT_", "SCRATCH_", "DS_", "INLINEASM", "DBG_")
LANE_READS = ("V_READFIRSTLANE_B32", "V_READLANE_B32")
RETURNS = frozenset({"SI_RETURN", "S_SETPC_B64_return", "S_SETPC_B64_return_gfx", "SI_RETURN_TO_EPILOG"})
WWM_DEFS = frozenset({"V_SET_INACTIVE_B32", "V_SET_INACTIVE_B64", "STRICT_WWM", "STRICT_WQM", "WWM", "WWM_COPY"})
# Opcodes some of whose vector operands take either file on targets with AGPRs (memory data,
# MFMA sources, AV moves): a home there is only checked to be a vector register.
EITHER_VECTOR_FILE = ("GLOBAL_", "FLAT_", "BUFFER_", "DS_", "SCRATCH_", "V_MFMA_", "V_SMFMAC_", "AV_MOV_", "INLINEASM")


class Refused(Exception):
    def __init__(self, claim: str, where: str) -> None:
        super().__init__(f"{claim}: {where}")


def is_mask(text: str) -> bool:
    """A register mask operand (of a call)."""
    return text.lower().startswith(("csr_", "customregmask(")) or "regmask" in text


def operation(opcode: str) -> str:
    """An MFMA with its accumulator in VGPRs (`_vgprcd`) computes what the AGPR one does."""
    if "_vgprcd" in opcode and opcode.startswith(("V_MFMA_", "V_SMFMAC_")):
        return opcode.replace("_vgprcd", "", 1)
    return opcode


def value_inputs(ins: Ins) -> list[Op]:
    return [o for o in ins.ops if o.reads and not (o.implicit and o.reg in regs.AMBIENT)]


def recipe_key(ins: Ins) -> tuple[Any, ...]:
    others = tuple(o.text for o in ins.ops if o.kind != "reg")
    explicit = [o for o in ins.ops if o.kind == "reg" and not o.implicit]
    read = tuple(o in value_inputs(ins) for o in explicit if not o.is_def)
    return (operation(ins.opcode), ins.flags, others, len(explicit), ins.mem, read)


def is_pure(ins: Ins) -> bool:
    """A definition of the virtual program whose value depends only on its operands."""
    if ins.opcode in ("COPY", "KILL", "IMPLICIT_DEF") or ins.opcode.startswith(SIDE_EFFECTS) \
            or ins.opcode in LANE_READS:
        return False
    if ins.mem and ("invariant load" not in ins.mem or "store" in ins.mem):
        return False
    defs = ins.defs
    return len(defs) == 1 and not defs[0].implicit and defs[0].virtual


def deletable(ins: Ins) -> bool:
    """A definition with no effect but its defs (an allocator deletes it when its value is
    dead or rematerialised elsewhere)."""
    if ins.opcode.startswith(SIDE_EFFECTS) or ins.opcode in ("COPY", "KILL", "IMPLICIT_DEF"):
        return False
    if ins.mem and ("invariant load" not in ins.mem or "store" in ins.mem):
        return False
    return bool(ins.defs)


class Holds(dict[str, frozenset[str]]):
    """Location -> the values it holds, with the inverse (value -> locations) kept beside it.
    Only `h[loc] = values` changes it."""

    def __init__(self) -> None:
        super().__init__()
        self.index: dict[str, set[str]] = {}

    def __setitem__(self, loc: str, ts: frozenset[str]) -> None:
        old = self.get(loc, NOTHING)
        for t in old - ts:
            self.index[t].discard(loc)
        for t in ts - old:
            self.index.setdefault(t, set()).add(loc)
        super().__setitem__(loc, ts)

    def where(self, t: str) -> set[str]:
        return self.index.get(t, set())

    def copy(self) -> Holds:
        h = Holds()
        dict.update(h, self)
        h.index = {t: set(locs) for t, locs in self.index.items() if locs}
        return h


class Walk:
    """One block's walk: the state and the transfer rules."""

    def __init__(self, fc: FunctionCheck, bb: int, entry: dict[str, Any]) -> None:
        self.fc = fc
        self.bb = bb
        self.holds = Holds()
        for loc, ts in entry["holds"]:
            self.holds[loc] = frozenset(ts)
        self.lanes: dict[str, Store] = {}
        for loc, lane, half, ts in entry["lanes"]:
            self.lanes.setdefault(loc, {})[(int(lane), int(half))] = frozenset(ts)
        self.defined: set[str] = set(entry["defined"])
        self.undef: set[str] = set(entry["undef"])
        self.remat: dict[str, tuple[tuple[Any, ...], tuple[str, ...], int]] = {
            t: (fc.recipe_key_at(int(line), f"bb.{bb} entry, recipe of {t}"), tuple(inputs), int(pos))
            for t, line, inputs, pos in entry["remat"]}
        self.where = f"bb.{bb}"
        self._users: dict[str, set[str]] | None = None
        # from the function's entry on: a unit no step changed also holds its entry value `^unit`
        self.from_entry = False

    def successor_walk(self, bb: int) -> Walk:
        """A walk of `bb` from this walk's state (bb's one predecessor is this block)."""
        w = Walk(self.fc, bb, {"holds": [], "lanes": [], "defined": [], "undef": [], "remat": []})
        w.holds = self.holds.copy()
        w.lanes = {loc: dict(store) for loc, store in self.lanes.items()}
        w.defined, w.undef, w.remat = set(self.defined), set(self.undef), dict(self.remat)
        w.from_entry = self.from_entry
        return w

    # state -------------------------------------------------------------------------------
    def held(self, loc: str) -> frozenset[str]:
        got = self.holds.get(loc)
        if got is not None:
            return got
        if loc.startswith("slot:"):
            return NOTHING
        return frozenset({"$" + loc, "^" + loc}) if self.from_entry else frozenset({"$" + loc})

    def is_defined(self, t: str) -> bool:
        if t.startswith("^"):
            return True  # an entry value
        return t not in self.undef if t.startswith("$") else t in self.defined

    def forget(self, t: str) -> None:
        for loc in list(self.holds.where(t)):
            self.holds[loc] = self.holds[loc] - {t}
        if t.startswith("$") and t[1:] not in self.holds:
            self.holds[t[1:]] = NOTHING
        for store in self.lanes.values():
            for k, ts in list(store.items()):
                if t in ts:
                    store[k] = ts - {t}
        self.remat.pop(t, None)
        for x in self.users().pop(t, ()):
            if x in self.remat and t in self.remat[x][1]:
                del self.remat[x]

    def users(self) -> dict[str, set[str]]:
        """Input value -> the values whose recipe reads it (made when first needed, then kept
        by `set_remat`; an entry may name a recipe that is gone, which `forget` skips)."""
        if self._users is None:
            self._users = {}
            for x, (_, inputs, _) in self.remat.items():
                for i in inputs:
                    self._users.setdefault(i, set()).add(x)
        return self._users

    def set_remat(self, t: str, recipe: tuple[tuple[Any, ...], tuple[str, ...], int]) -> None:
        self.remat[t] = recipe
        if self._users is not None:
            for i in recipe[1]:
                self._users.setdefault(i, set()).add(t)

    def clobber(self, units: list[str]) -> None:
        for u in units:
            self.holds[u] = NOTHING
            self.lanes.pop(u, None)

    def undefine(self, t: str) -> None:
        self.forget(t)
        if t.startswith("$"):
            self.undef.add(t)
        else:
            self.defined.discard(t)

    def define(self, tags: list[str], units: list[str], recipe: tuple[tuple[Any, ...], tuple[str, ...]] | None) -> None:
        for t in tags:
            self.forget(t)
        for k, u in enumerate(units):
            self.holds[u] = frozenset({tags[k]}) if k < len(tags) else NOTHING
            self.lanes.pop(u, None)
        for p, t in enumerate(tags):
            self.undef.discard(t)
            if not t.startswith("$"):
                self.defined.add(t)
                if recipe is not None and t not in recipe[1]:
                    self.set_remat(t, (recipe[0], recipe[1], p))

    def undefine_rest(self, op: Op) -> None:
        """An `undef` subregister def leaves the other lanes of its register undefined."""
        if op.virtual and op.subreg and "undef" in op.flags:
            mine = set(self.fc.tags(op))
            for t in self.fc.tags(Op("reg", op.text, frozenset(), op.reg, True)):
                if t not in mine:
                    self.undefine(t)

    # checks ------------------------------------------------------------------------------
    def fail(self, claim: str, ins: Ins, side: str, what: str) -> NoReturn:
        raise Refused(claim, f"{self.fc.path(side)}:{ins.line}: {self.where}: {what}")

    def use(self, pi: Ins, qi: Ins, po: Op, qo: Op, position: int) -> None:
        tags = self.fc.tags(po)
        units = self.fc.post_units(qo)
        if not po.virtual and self.fc.pre_units(po) != units:
            self.fail("fixed registers", qi, "post", f"reads ${qo.reg} where the virtual program reads ${po.reg}")
        if len(tags) != len(units):
            self.fail("operand widths", qi, "post", f"`${qo.reg}` has {len(units) * 16} bits, {po.text} "
                      f"{len(tags) * 16}")
        wrong = [k for k, (t, u) in enumerate(zip(tags, units)) if t not in self.held(u) and self.is_defined(t)]
        if wrong and not set(wrong) <= self.fc.anomalies.get((qi.line, position), set()):
            t, u = tags[wrong[0]], units[wrong[0]]
            have = ", ".join(sorted(self.held(u))) or "nothing"
            self.fail("value flow", qi, "post", f"reads {u} expecting {t}, but it holds {have}")

    def matched(self, pi: Ins, qi: Ins) -> None:
        if operation(pi.opcode) != operation(qi.opcode) or pi.flags != qi.flags \
                or self.fc.fixed(pi.mem, True) != self.fc.fixed(qi.mem, False):
            self.fail("alignment", qi, "post", f"`{qi.opcode}` is paired with `{pi.opcode}` (pre line {pi.line}) "
                      "but differs in opcode, flags or memory operands")
        if len(qi.ops) < len(pi.ops):
            self.fail("alignment", qi, "post", "fewer operands than its counterpart")
        for q in qi.ops[len(pi.ops):]:
            if q.kind != "reg" or not q.implicit:
                self.fail("alignment", qi, "post", f"an extra operand `{q.text}`")
            if q.is_def and regs.file_and_range(q.reg) is None:
                self.fail("alignment", qi, "post", f"an extra def `${q.reg}` of a special register")
            # an extra implicit-def of a general register is the rewriter's liveness note (the
            # super-register of a subregister def, the lanes an `undef` def leaves): the
            # instruction writes what its opcode writes, which the counterpart's defs name
        defs: list[tuple[Op, Op]] = []
        mask: frozenset[str] | None = None
        for position, (po, qo) in enumerate(zip(pi.ops, qi.ops)):
            if po.kind == "other" and is_mask(po.text):
                mask = regs.preserved_by(po.text, self.fc.pre.later_sgpr_masks or self.fc.post.later_sgpr_masks)
                if mask is None:
                    self.fail("MIR subset", pi, "pre", f"the register mask `{po.text}` is not known here")
            if po.kind == "bb":
                if qo.kind != "bb" or self.fc.post_of.get(int(po.text)) != int(qo.text):
                    self.fail("alignment", qi, "post", f"operand `{qo.text}` is not the block of `{po.text}`")
                continue
            if po.kind != "reg":
                if qo.kind != po.kind or self.fc.fixed(qo.text, False) != self.fc.fixed(po.text, True):
                    self.fail("alignment", qi, "post", f"operand `{qo.text}` differs from `{po.text}`")
                continue
            if qo.kind != "reg" or qo.is_def != po.is_def or qo.implicit != po.implicit:
                self.fail("alignment", qi, "post", f"operand `{qo.text}` does not stand for `{po.text}`")
            if (po.reg == "noreg") != (qo.reg == "noreg"):
                self.fail("alignment", qi, "post", f"operand `{qo.text}` does not stand for `{po.text}`")
            if po.reg == "noreg":
                continue
            if po.virtual:
                self.fc.member(po, qo, qi)
            if po.is_def:
                defs.append((po, qo))
            elif po.reads:
                self.use(pi, qi, po, qo, position)
        if mask is not None or pi.opcode in RETURNS:
            self.reads_exec(pi, qi)
        if pi.opcode in RETURNS or pi.opcode.startswith("SI_TCRETURN"):
            self.callee_saved(qi)
        self.early_clobbers(pi, qi)
        recipe = self.fc.recipe(pi) if is_pure(pi) else None
        for po, qo in defs:
            tags, units = self.fc.tags(po), self.fc.post_units(qo)
            if not po.virtual and self.fc.pre_units(po) != units:
                self.fail("fixed registers", qi, "post", f"writes ${qo.reg} where the virtual program writes ${po.reg}")
            if len(units) != len(tags):
                self.fail("operand widths", qi, "post", f"`${qo.reg}` has {len(units) * 16} bits, {po.text} "
                          f"{len(tags) * 16}")
            self.undefine_rest(po)
            self.define(tags, units, recipe)
        if mask is not None:
            # A call clobbers every register its mask does not preserve: in both programs each
            # holds what the call left there (the same in both), never a value kept across it.
            written = {u for po in pi.ops if po.kind == "reg" and po.is_def and not po.virtual
                       for u in self.fc.pre_units(po)}
            for r in regs.clobbered_by(mask, self.fc.target):
                units = [u for u in regs.units(r) if u not in written]
                self.define(["$" + u for u in units], units, None)

    def reads_exec(self, pi: Ins, qi: Ins) -> None:
        """A call runs, and a return hands back, the lanes $exec has on in the virtual program
        (the callee returns with its caller's $exec): the allocated program's $exec holds it."""
        for u in regs.units("exec"):
            if "$" + u not in self.held(u) and self.is_defined("$" + u):
                self.fail("value flow", qi, "post", f"`{qi.opcode}` runs with {u} not holding the virtual program's "
                          "$exec")

    def callee_saved(self, qi: Ins) -> None:
        """At a return (or tail call) each callee-saved SGPR holds its entry value: `^unit`, or
        `$unit` where the virtual program never writes the register (its value is the entry
        one throughout)."""
        for u in self.fc.saved:
            held = self.held(u)
            if "^" + u not in held and ("$" + u not in held or u in self.fc.written):
                self.fail("callee-saved registers", qi, "post", f"`{qi.opcode}` returns with {u} not holding its "
                          f"value at the function's entry (callee-saved in the calling convention {self.fc.pre.cc})")

    def early_clobbers(self, pi: Ins, qi: Ins) -> None:
        """An early-clobber def is written before the uses are read: it may share no unit with
        a use that reads a defined value there (a use of the same whole register is the
        two-address form, which reads its own def; tied uses are checked as ties)."""
        for d in qi.ops:
            if d.kind != "reg" or "early-clobber" not in d.flags:
                continue
            mine = set(self.fc.post_units(d))
            for po, qo in zip(pi.ops, qi.ops):
                if not po.reads or qo.tied is not None or qo.implicit or qo.kind != "reg":
                    continue
                units = self.fc.post_units(qo)
                if units == self.fc.post_units(d):
                    continue
                for t, u in zip(self.fc.tags(po), units):
                    if u in mine and self.is_defined(t):
                        self.fail("early clobbers", qi, "post", f"the early-clobber def ${d.reg} overlaps ${qo.reg}, "
                                  f"which holds {t} for this instruction")

    def pre_move(self, pi: Ins) -> None:
        if pi.opcode == "KILL":
            return
        if pi.opcode == "IMPLICIT_DEF":
            for d in pi.defs:
                self.undefine_rest(d)
                for t in self.fc.tags(d):
                    self.undefine(t)
            return
        r = pi.explicit_regs
        if pi.opcode != "COPY" or len(r) != 2 or not r[0].is_def or r[1].is_def:
            self.fail("alignment", pi, "pre", f"`{pi.opcode}` is not a COPY, KILL or IMPLICIT_DEF")
        dst, src = r
        self.undefine_rest(dst)
        dtags = self.fc.tags(dst)
        if "undef" in src.flags:
            for t in dtags:
                self.undefine(t)
            return
        stags = self.fc.tags(src)
        if not (len(dtags) == len(stags) or {len(dtags), len(stags)} == {1, 2}):
            self.fail("operand widths", pi, "pre", "a COPY between registers of different widths")
        for dt, st in zip(dtags, stags):
            if dt == st:
                continue
            self.forget(dt)
            if not self.is_defined(st):
                self.undefine(dt)
                continue
            if dt.startswith("$"):
                self.undef.discard(dt)
            else:
                self.defined.add(dt)
            for loc in list(self.holds.where(st)):
                self.holds[loc] = self.holds[loc] | {dt}
            if st.startswith("$") and st[1:] not in self.holds:
                self.holds[st[1:]] = self.held(st[1:]) | {dt}
            for store in self.lanes.values():
                for k, ts in list(store.items()):
                    if st in ts:
                        store[k] = ts | {dt}
            if st in self.remat and dt not in self.remat[st][1]:
                self.set_remat(dt, self.remat[st])
        for dt in dtags[len(stags):]:
            self.undefine(dt)

    def post_step(self, role: str, qi: Ins) -> None:
        fc = self.fc
        op = qi.opcode
        r = qi.explicit_regs
        if role == "remat":
            return self.remat_copy(qi)
        if role == "move":
            if op == "IMPLICIT_DEF":
                for o in qi.defs:
                    self.clobber(fc.post_units(o))
                return
            if op == "KILL":
                return
            if op in ("S_OR_SAVEEXEC_B32", "S_OR_SAVEEXEC_B64"):
                ex = [o for o in qi.ops if not (o.kind == "reg" and o.implicit)]
                if len(ex) != 2 or ex[0].kind != "reg" or not ex[0].is_def or ex[1].text != "-1":
                    self.fail("alignment", qi, "post", "not an $exec save")
                exec_name = "exec_lo" if op.endswith("B32") else "exec"
                saved = [self.held(u) for u in regs.units(exec_name)]
                for o in qi.defs:
                    if o is not ex[0]:
                        # wave32: the low half of $exec is set; the operands name all of it
                        wave32_exec = op.endswith("B32") and o.reg == "exec"
                        self.clobber(regs.units("exec_lo") if wave32_exec else fc.post_units(o))
                for u, ts in zip(fc.post_units(ex[0]), saved):
                    self.holds[u] = ts
                    self.lanes.pop(u, None)
                return
            moves = op == "COPY" or (op in ("S_MOV_B32", "S_MOV_B64") and all(o.kind == "reg" for o in qi.ops))
            if not moves or len(r) != 2 or not r[0].is_def or r[1].is_def:
                self.fail("inserted instructions", qi, "post", f"`{op}` is not a move")
            dst, src = r
            d, s = fc.post_units(dst), fc.post_units(src)
            fd, fs = regs.file_and_range(dst.reg), regs.file_and_range(src.reg)
            if (fd is None or fd[0] == "s") and fs is not None and fs[0] in "va":
                self.fail("illegal copies", qi, "post", f"a COPY from the vector register ${src.reg} into a scalar one")
            if "undef" in src.flags:
                return self.clobber(d)
            if not (len(d) == len(s) or {len(d), len(s)} == {1, 2}):
                self.fail("operand widths", qi, "post", "a COPY between registers of different widths")
            moved = [(self.held(u), self.lanes.get(u)) for u in s]
            for u, (ts, store) in zip(d, moved):
                self.holds[u] = ts
                if store:
                    self.lanes[u] = dict(store)
                else:
                    self.lanes.pop(u, None)
            return self.new_home(qi, dst)
        if role != "spill":
            self.fail("inserted instructions", qi, "post", f"`{op}` has no counterpart in the virtual program")
        imm = [o for o in qi.ops if o.kind == "imm"]
        if op in ("SI_SPILL_S32_TO_VGPR", "V_WRITELANE_B32"):
            if len(r) < 2 or not imm or not r[0].is_def:
                self.fail("spill code", qi, "post", "a lane spill without its operands")
            vunits = fc.post_units(r[0])  # its tied input is the same register (`ties`, post_constraints)
            store = dict(self.lanes.get(vunits[0], {}))
            for h, u in enumerate(fc.post_units(r[1])):
                store[(int(imm[0].text), h)] = self.held(u)
            self.clobber(vunits)
            self.lanes[vunits[0]] = store
            return
        if op in ("SI_RESTORE_S32_FROM_VGPR", "V_READLANE_B32"):
            if len(r) < 2 or not imm or not r[0].is_def:
                self.fail("spill code", qi, "post", "a lane restore without its operands")
            store = self.lanes.get(fc.post_units(r[1])[0], {})
            d = fc.post_units(r[0])
            self.clobber(d)
            for h, u in enumerate(d):
                self.holds[u] = store.get((int(imm[0].text), h), NOTHING)
            return self.new_home(qi, r[0])
        slot = next((o for o in qi.ops if o.kind == "stack"), None)
        if slot is None or not r or not op.startswith("SI_SPILL_") or not op.endswith(("_SAVE", "_RESTORE")) \
                or "+" in slot.text:
            self.fail("spill code", qi, "post", f"`{op}` is not a spill or reload of a stack slot")
        after = [o for o in qi.ops[qi.ops.index(slot) + 1:] if not (o.kind == "reg" and o.implicit)]
        if op.startswith("SI_SPILL_S"):
            ok = not after
        else:
            ok = len(after) == 2 and after[0].kind == "reg" and after[0].reg == fc.post.stack_pointer \
                and after[1].text == "0"
        if not ok:
            self.fail("spill code", qi, "post", "the slot is not addressed by the stack pointer and offset 0")
        if slot.text in fc.pre_stack:
            self.fail("spill code", qi, "post", f"spills into %stack.{slot.text}, which the virtual program uses")
        data = r[0]
        fr = regs.file_and_range(data.reg)
        kind = op[len("SI_SPILL_"):].split("_")[0]  # V32, AV64, S32, A128, WWM_V32...
        files = "va" if kind.startswith("AV") else "a" if kind.startswith("A") else "s" if kind.startswith("S") \
            else "v" if kind.startswith(("V", "WWM")) else ""
        if fr is not None and fr[0] not in files or fr is None and files != "s":
            self.fail("spill code", qi, "post", f"`{op}` stores ${data.reg}, which is not in its file")
        units = fc.post_units(data)
        if op.endswith("_SAVE"):
            for k, u in enumerate(units):
                loc = f"slot:{slot.text}.{k}"
                self.holds[loc] = self.held(u)
                self.move_lanes(u, loc)
        else:
            if not data.is_def:
                self.fail("spill code", qi, "post", "a reload whose register is not a def")
            self.clobber(units)
            for k, u in enumerate(units):
                loc = f"slot:{slot.text}.{k}"
                self.holds[u] = self.held(loc)
                self.move_lanes(loc, u)
            self.new_home(qi, data)

    def new_home(self, qi: Ins, o: Op) -> None:
        """The register an inserted move, reload or lane restore has put values of virtual
        registers in is a home of theirs: not reserved (`wwmReservedRegs` only for whole-wave
        values), as a home at a matched instruction (`FunctionCheck.member`)."""
        fc = self.fc
        vregs = {t[1:].split(".")[0] for u in fc.post_units(o) for t in self.held(u) if t.startswith("%")}
        if not vregs or ("renamable" not in o.flags and set(fc.post_units(o)) <= fc.pre_named()):
            return  # a register the virtual program names itself ($m0 for an interpolation) is its own
        reserved = fc.post.reserved if not vregs <= fc.wwm_values else \
            {r: k for r, k in fc.post.reserved.items() if k != "wwmReservedRegs"}
        bad = regs.reserved_problem(o.reg, reserved, fc.target)
        if bad:
            self.fail("reserved registers", qi, "post", f"`${o.reg}` holds %{min(vregs)}: {bad}")

    def move_lanes(self, src: str, dst: str) -> None:
        store = self.lanes.get(src)
        if store:
            self.lanes[dst] = dict(store)
        else:
            self.lanes.pop(dst, None)

    def remat_copy(self, qi: Ins) -> None:
        defs = [o for o in qi.defs if not o.implicit]
        if len(defs) != 1 or any(regs.file_and_range(o.reg) is None for o in qi.defs if o.implicit):
            self.fail("rematerialisation", qi, "post", "a rematerialised instruction with other than one def")
        key = recipe_key(qi)
        units = self.fc.post_units(defs[0])
        inputs = [u for o in value_inputs(qi) for u in self.fc.post_units(o)]
        by_pos: dict[int, set[str]] = {}
        for t, (k, expected, p) in self.remat.items():
            if k != key or len(expected) != len(inputs):
                continue
            if all(e in self.held(u) or not self.is_defined(e) for e, u in zip(expected, inputs)):
                by_pos.setdefault(p, set()).add(t)
        self.clobber(units)
        for p, u in enumerate(units):
            self.holds[u] = frozenset(by_pos.get(p, ()))

    def edge(self, s: int, target: dict[str, Any]) -> None:
        th = {loc: set(ts) for loc, ts in target["holds"]}
        for loc in sorted(set(th) | set(self.holds)):
            want = th.get(loc, set() if loc.startswith("slot:") else {"$" + loc})
            for t in sorted(want):
                if t not in self.held(loc) and self.is_defined(t):
                    raise Refused("value flow", f"{self.where} -> bb.{s}: {loc} does not hold {t} at the edge")
        for loc, lane, half, ts in target["lanes"]:
            have = self.lanes.get(loc, {}).get((int(lane), int(half)), NOTHING)
            for t in ts:
                if t not in have and self.is_defined(t):
                    raise Refused("value flow", f"{self.where} -> bb.{s}: lane {lane} of {loc} does not hold {t}")
        for t, line, inputs, pos in target["remat"]:
            recipe = (self.fc.recipe_key_at(int(line), f"bb.{s} entry, recipe of {t}"), tuple(inputs), int(pos))
            if self.is_defined(t) and self.remat.get(t) != recipe:
                raise Refused("value flow", f"{self.where} -> bb.{s}: the recipe of {t} does not hold at the edge")
        if not self.defined <= set(target["defined"]):
            extra = sorted(self.defined - set(target["defined"]))[0]
            raise Refused("value flow", f"{self.where} -> bb.{s}: {extra} is defined here but not in bb.{s}'s state")
        if not set(target["undef"]) <= self.undef:
            extra = sorted(set(target["undef"]) - self.undef)[0]
            raise Refused("value flow", f"{self.where} -> bb.{s}: {extra} is defined here but not in bb.{s}'s state")


class FunctionCheck:
    def __init__(self, pre: Function, post: Function, witness: dict[str, Any], target: str, paths: tuple[str, str],
                 obligations: frozenset[str] = frozenset()):
        self.pre, self.post, self.witness, self.target, self.paths = pre, post, witness, target, paths
        # (allocated line, operand position) -> the operand's slots a harmless read may find wrong
        self.anomalies: dict[tuple[int, int], set[int]] = {}
        for a in witness.get("anomalies", []):
            if a["obligation"] not in obligations:
                raise Refused("witness", f"the anomaly at line {a['post_line']} names {a['obligation']}, which is not "
                              f"an obligation of function {post.name} in the manifest")
            self.anomalies.setdefault((int(a["post_line"]), int(a["position"])), set()).update(map(int, a["slots"]))
        self.pre_lines = {i.line: i for b in pre.blocks for i in b.ins}
        self.keys: dict[int, tuple[Any, ...]] = {}
        self.post_of: dict[int, int] = {}  # virtual block number -> allocated block number
        # Fixed stack objects by the memory they name, as the lowest virtual-program id of it
        # (llc numbers them anew when it re-reads a file); an allocated-program object that
        # names no memory of the virtual program gets a name no operand of it has.
        lowest: dict[tuple[str, ...], str] = {}
        for i, desc in sorted(pre.fixed_stack.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1):
            lowest.setdefault(desc, i)
        self.pre_fixed = {i: lowest[d] for i, d in pre.fixed_stack.items()}
        self.post_fixed = {i: lowest.get(d, f"unpaired{i}") for i, d in post.fixed_stack.items()}
        # stack objects the virtual program itself uses (a spill slot must be none of them)
        self.pre_stack = {o.text.split("+")[0] for i in self.pre_lines.values() for o in i.ops if o.kind == "stack"} \
            | {m for i in self.pre_lines.values() for m in re.findall(r"%stack\.([0-9]+)", i.mem)}
        # whole-wave values (SIWholeQuadMode, SIPreAllocateWWMRegs): declared WWM_REG, defined by a
        # whole-wave opcode or inside a strict whole-wave region; only they may live in wwmReservedRegs
        self._pre_named: set[str] | None = None
        self.wwm_values = set(pre.wwm)
        for b in pre.blocks:
            inside = False
            for ins in b.ins:
                if ins.opcode in ("ENTER_STRICT_WWM", "ENTER_STRICT_WQM", "EXIT_STRICT_WWM", "EXIT_STRICT_WQM"):
                    inside = ins.opcode.startswith("ENTER")
                elif inside or ins.opcode in WWM_DEFS:
                    self.wwm_values |= {o.reg for o in ins.defs if o.virtual}

    def fixed(self, text: str, pre_side: bool) -> str:
        """`text` with each `%fixed-stack.N` named by the memory it is (`pre_fixed`/`post_fixed`)."""
        if "%fixed-stack." not in text:
            return text
        names = self.pre_fixed if pre_side else self.post_fixed

        def name(m: re.Match[str]) -> str:
            return f"%fixed-stack.{names.get(m.group(1), 'unknown' + m.group(1))}"
        return re.sub(r"%fixed-stack\.([0-9]+)", name, text)

    def path(self, side: str) -> str:
        return self.paths[0] if side == "pre" else self.paths[1]

    def cls(self, op: Op) -> str:
        c = self.pre.classes.get(op.reg)
        if c is None:
            raise Refused("MIR subset", f"{self.paths[0]}: %{op.reg} has no class")
        return c

    def tags(self, op: Op) -> list[str]:
        if op.virtual:
            _, width, _ = regs.class_info(self.cls(op))
            slots = regs.subreg_slots(op.subreg) if op.subreg else list(range(width))
            if max(slots) >= width:
                raise Refused("MIR subset", f"{self.paths[0]}: {op.text}.{op.subreg} lies outside its class")
            return [f"%{op.reg}.{s}" for s in slots]
        return ["$" + u for u in self.pre_units(op)]

    def pre_units(self, op: Op) -> list[str]:
        return self._units(op)

    def post_units(self, op: Op) -> list[str]:
        if op.virtual:
            raise Refused("post-only constraints", f"{self.paths[1]}: virtual register {op.text} after allocation")
        return self._units(op)

    @staticmethod
    def _units(op: Op) -> list[str]:
        us = regs.units(op.reg)
        if op.subreg:
            slots = regs.subreg_slots(op.subreg)
            if max(slots) >= len(us):
                raise regs.RegError(f"${op.reg}.{op.subreg} lies outside the register")
            us = [us[s] for s in slots]
        return us

    def pre_named(self) -> set[str]:
        """The units of the physical registers the virtual program names itself."""
        if self._pre_named is None:
            self._pre_named = {u for b in self.pre.blocks for i in b.ins for o in i.ops
                               if o.kind == "reg" and not o.virtual and o.reg != "noreg" for u in self._units(o)}
        return self._pre_named

    def recipe_key_at(self, line: int, where: str) -> tuple[Any, ...]:
        """The recipe key of the pure definition at `line` of the virtual program."""
        got = self.keys.get(line)
        if got is None:
            ins = self.pre_lines.get(line)
            if ins is None or not is_pure(ins):
                raise Refused("witness", f"{where}: pre line {line} is not a pure definition")
            got = self.keys[line] = recipe_key(ins)
        return got

    def recipe(self, ins: Ins) -> tuple[tuple[Any, ...], tuple[str, ...]]:
        return recipe_key(ins), tuple(t for o in value_inputs(ins) for t in self.tags(o))

    def member(self, po: Op, qo: Op, qi: Ins) -> None:
        cls = self.cls(po)
        files, _, _ = regs.class_info(cls)
        if regs.has_agprs(self.target) and qi.opcode.startswith(EITHER_VECTOR_FILE) and files & {"v", "a"}:
            # LLVM inflates a split register's class to the AV class where every operand takes
            # either vector file (MachineRegisterInfo::recomputeRegClass)
            cls = "av" + cls[cls.index("_"):]
        if po.subreg or qo.subreg:
            files, _, _ = regs.class_info(cls)
            fr = regs.file_and_range(qo.reg)
            bad = None if (fr[0] if fr else "s") in files else f"`${qo.reg}` is not in the file of class `{cls}`"
        else:
            bad = regs.member_problem(qo.reg, cls, len(self.tags(po)))
        if bad:
            raise Refused("class membership", f"{self.paths[1]}:{qi.line}: home of {po.text}: {bad}")
        reserved = self.post.reserved if po.reg not in self.wwm_values else \
            {r: k for r, k in self.post.reserved.items() if k != "wwmReservedRegs"}
        bad = regs.reserved_problem(qo.reg, reserved, self.target)
        if bad:
            raise Refused("reserved registers", f"{self.paths[1]}:{qi.line}: home of {po.text}: {bad}")

    # ------------------------------------------------------------------------------------
    def run(self) -> None:
        pre_b = {b.number: b for b in self.pre.blocks}
        by_number = {b.number: b for b in self.post.blocks}
        wblocks = {int(w["bb"]): w for w in self.witness["blocks"]}
        if sorted(wblocks) != sorted(pre_b) or len(wblocks) != len(self.witness["blocks"]):
            raise Refused("witness", f"function {self.post.name}: the witness does not list every block once")
        # llc may number the blocks of the allocated program anew: the witness pairs them
        self.post_of = {n: int(w["post_bb"]) for n, w in wblocks.items()}
        if sorted(self.post_of.values()) != sorted(by_number) or len(by_number) != len(self.post.blocks) \
                or self.post_of[self.pre.blocks[0].number] != self.post.blocks[0].number:
            raise Refused("alignment", f"function {self.post.name}: the blocks of the two programs do not pair one "
                          "to one, entry with entry")
        if [self.post_of[b.number] for b in self.pre.blocks] != [b.number for b in self.post.blocks]:
            raise Refused("alignment", f"function {self.post.name}: the blocks are not in the same layout order "
                          "(fall-through would reach other blocks)")
        post_b = {n: by_number[m] for n, m in self.post_of.items()}
        for n, b in pre_b.items():
            if sorted(self.post_of[s] for s in b.successors) != sorted(post_b[n].successors):
                raise Refused("alignment", f"{self.paths[1]}:{post_b[n].line}: bb.{post_b[n].number} has other "
                              f"successors than bb.{n} of the virtual program")
        self.post_constraints()
        self.saved, self.written = self.callee_saved(), self.pre_written()
        reach = self.reachable()
        self.undefined_reads(reach)
        entry = self.pre.blocks[0].number
        first = wblocks[entry]["entry"]
        if not isinstance(first, dict) or any(first[k] for k in ("holds", "defined", "undef", "lanes", "remat")):
            raise Refused("witness", f"function {self.post.name}: the entry block's state is not the empty state")
        steps = {n: self.check_steps(pre_b[n], post_b[n], wblocks[n]["steps"]) for n in sorted(pre_b)}
        # A block whose one predecessor is another block starts from that block's exit state
        # (`"entry": "pred"`): exactly what reaches it, so it needs no invariant of its own.
        preds: dict[int, list[int]] = {n: [] for n in pre_b}
        for n, b in pre_b.items():
            for t in set(b.successors):
                preds[t].append(n)
        for n, w in wblocks.items():
            if w["entry"] == "pred" and (len(preds[n]) != 1 or preds[n][0] == n):
                raise Refused("witness", f"bb.{n} takes its predecessor's state but has not exactly one other "
                              "predecessor")
        for n in sorted(pre_b):
            entry = wblocks[n]["entry"]
            if n not in reach or entry == "pred":
                continue
            if not isinstance(entry, dict):
                raise Refused("witness", f"bb.{n} is reachable but has no entry state")
            todo = [Walk(self, n, entry)]
            todo[0].from_entry = n == self.pre.blocks[0].number
            while todo:
                walk = todo.pop()
                self.walk_block(walk, steps[walk.bb])
                for t in sorted(set(pre_b[walk.bb].successors)):
                    target = wblocks[t]["entry"]
                    if target == "pred":
                        todo.append(walk.successor_walk(t))
                    elif not isinstance(target, dict):
                        raise Refused("witness", f"bb.{t} is reachable but has no entry state")
                    else:
                        walk.edge(t, target)

    def walk_block(self, walk: Walk, steps: list[tuple[str, Ins | None, Ins | None]]) -> None:
        for role, pi, qi in steps:
            if role == "matched":
                assert pi is not None and qi is not None
                walk.matched(pi, qi)
            elif pi is not None:
                if role == "move":
                    walk.pre_move(pi)
                elif role == "remat-origin":
                    if not deletable(pi):
                        walk.fail("alignment", pi, "pre", f"`{pi.opcode}` has effects besides its defs: the "
                                  "allocator may not delete it")
                    recipe = self.recipe(pi) if is_pure(pi) else None
                    for d in pi.defs:
                        walk.undefine_rest(d)
                        walk.define(self.tags(d), [], recipe)
                else:
                    walk.fail("alignment", pi, "pre", f"`{pi.opcode}` has no counterpart ({role})")
            else:
                assert qi is not None
                walk.post_step(role, qi)

    def undefined_reads(self, reach: set[int]) -> None:
        """No virtual register is read (a use without `undef`) where no path from the entry has
        written it (any def counts, IMPLICIT_DEF too): a forward may-analysis of the virtual
        program."""
        gen = {b.number: {o.reg for i in b.ins for o in i.ops if o.kind == "reg" and o.virtual and o.is_def}
               for b in self.pre.blocks}
        into: dict[int, set[str]] = {b.number: set() for b in self.pre.blocks}
        changed = True
        while changed:
            changed = False
            for b in self.pre.blocks:
                if b.number not in reach:
                    continue
                out = into[b.number] | gen[b.number]
                for s in b.successors:
                    if not out <= into[s]:
                        into[s] |= out
                        changed = True
        for b in self.pre.blocks:
            if b.number not in reach:
                continue
            have = set(into[b.number])
            for i in b.ins:
                for o in i.ops:
                    if o.reads and o.virtual and o.reg not in have:
                        raise Refused("undefined reads", f"{self.paths[0]}:{i.line}: bb.{b.number}: {o.text} is read "
                                      "before any path defines it")
                have |= {o.reg for o in i.ops if o.kind == "reg" and o.virtual and o.is_def}

    def callee_saved(self) -> list[str]:
        """The units of the SGPRs the function's calling convention says are callee-saved, but the
        stack pointer and the SGPRs for EXEC copies that `machineFunctionInfo` names: frame
        lowering restores and saves those itself (SIFrameLowering; README.md)."""
        if self.pre.cc != self.post.cc:
            raise Refused("alignment", f"function {self.post.name}: the two programs have other calling conventions")
        sgprs = regs.callee_saved_sgprs(self.pre.cc, self.pre.later_sgpr_masks or self.post.later_sgpr_masks)
        if sgprs is None:
            raise Refused("MIR subset", f"function {self.post.name}: calling convention {self.pre.cc} is not modelled")
        frame = [r for f in (self.pre, self.post) for r, key in f.reserved.items()
                 if key in ("stackPtrOffsetReg", "sgprForEXECCopy")]
        skip = {u for r in (*frame, self.pre.stack_pointer, self.post.stack_pointer) for u in regs.units(r)}
        if any(i.opcode.startswith("S_SETPC_B64_return") for i in self.pre_lines.values()):
            # LLVM 14 and before return through an operand: $sgpr30_sgpr31 is an argument then
            skip |= set(regs.units("sgpr30_sgpr31"))
        return [u for r in sgprs for u in regs.units(r) if u not in skip]

    def pre_written(self) -> frozenset[str]:
        """The units of physical registers the virtual program writes anywhere (defs and what
        its calls clobber)."""
        out: set[str] = set()
        for i in self.pre_lines.values():
            for o in i.ops:
                if o.kind == "reg" and o.is_def and not o.virtual and o.reg != "noreg":
                    out.update(self._units(o))
                elif o.kind == "other" and is_mask(o.text):
                    kept = regs.preserved_by(o.text, self.pre.later_sgpr_masks or self.post.later_sgpr_masks)
                    out.update(u for r in regs.clobbered_by(kept or frozenset(), self.target) for u in regs.units(r))
        return frozenset(out)

    def reachable(self) -> set[int]:
        succ = {b.number: b.successors for b in self.pre.blocks}
        seen, todo = set(), [self.pre.blocks[0].number]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo.extend(succ.get(n, []))
        return seen

    def check_steps(self, pb: Block, qb: Block, steps: list[Any]) -> list[tuple[str, Ins | None, Ins | None]]:
        pre_lines = [i.line for i in pb.ins]
        post_lines = [i.line for i in qb.ins]
        pmap = {i.line: i for i in pb.ins}
        qmap = {i.line: i for i in qb.ins}
        used_p = [int(s[1]) for s in steps if int(s[1])]
        used_q = [int(s[2]) for s in steps if int(s[2])]
        if used_p != pre_lines or used_q != post_lines:
            raise Refused("alignment", f"bb.{pb.number}: the pairing does not use every instruction of both "
                          "programs once, in order")
        out: list[tuple[str, Ins | None, Ins | None]] = []
        for role, pl, ql in steps:
            p, q = pmap.get(int(pl)), qmap.get(int(ql))
            ok = {"matched": p is not None and q is not None, "move": (p is None) != (q is None),
                  "spill": p is None and q is not None, "remat": p is None and q is not None,
                  "remat-origin": p is not None and q is None}.get(role, False)
            if not ok:
                raise Refused("alignment", f"bb.{pb.number}: a step `{role}` with pre line {pl} and post line {ql}")
            out.append((role, p, q))
        return out

    def post_constraints(self) -> None:
        # a physical register the virtual program names itself is the program's, not the
        # allocator's choice (an inline-assembly clobber, an argument register)
        fixed = {o.reg for b in self.pre.blocks for i in b.ins for o in i.ops if o.kind == "reg" and not o.virtual}
        for b in self.post.blocks:
            for ins in b.ins:
                where = f"{self.paths[1]}:{ins.line}"
                for o in ins.ops:
                    if o.kind != "reg" or o.reg == "noreg":
                        continue
                    if o.virtual:
                        raise Refused("post-only constraints", f"{where}: virtual register {o.text} after allocation")
                    # COPY is lowered one 32-bit register at a time: no tuple alignment applies
                    bad = None if o.reg in fixed else regs.register_problem(
                        o.reg, self.target, aligned=ins.opcode not in ("COPY", "KILL", "IMPLICIT_DEF"))
                    if bad:
                        raise Refused("registers exist, lie in the file and are aligned", f"{where}: {bad}")
                    if o.tied is not None:
                        if o.tied >= len(ins.ops) or not ins.ops[o.tied].is_def \
                                or self._units(ins.ops[o.tied]) != self._units(o):
                            raise Refused("tied operands", f"{where}: ${o.reg} is not the register of its tied def")
                self.implied_ties(ins, where)

    @staticmethod
    def implied_ties(ins: Ins, where: str) -> None:
        """The ties the opcode's definition implies (`certcheck.ties`), printed or not."""
        if ties.encoded(ins.opcode):
            raise Refused("MIR subset", f"{where}: `{ins.opcode}` is an encoded instruction (the asm printer's), "
                          "not one of MIR before it")
        explicit = [o for o in ins.ops if not (o.kind == "reg" and o.implicit)]
        for d, u in ties.implied(ins.opcode):
            pair = explicit[d:d + 1] + explicit[u:u + 1]
            if len(pair) != 2 or any(o.kind != "reg" or o.reg == "noreg" for o in pair) \
                    or FunctionCheck._units(pair[0]) != FunctionCheck._units(pair[1]):
                raise Refused("tied operands", f"{where}: `{ins.opcode}` ties explicit operand {u} to its def {d} "
                              "(its definition), but they are not one register")
