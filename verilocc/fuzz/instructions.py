"""The generator's instruction templates: real AMDGPU opcodes with their real operand shapes.

Each `t_*` method writes one kind of instruction (VALU, SALU, moves, copies, loads and stores,
tuples built from subregister defs, MFMA, KILL...) with operands the environment says are
defined, and records what it defines; it returns False when nothing fits here (the caller
draws again). `random_instruction` picks templates by the weights of `TEMPLATES`. Which
opcodes exist follows the target's `Profile`.

The order of the templates, of the opcode tables and of the draws in each template is part
of what a seed generates: the long fuzz campaign's record names programs by seed.
"""

from __future__ import annotations

from verilocc.fuzz.program import ProgramBuilder, sclass, subreg_name

# 32-bit VALU opcodes of t_valu_e32 (the order is part of what a seed generates).
_VOP2 = ("V_ADD_U32_e32", "V_SUB_U32_e32", "V_XOR_B32_e32", "V_AND_B32_e32", "V_OR_B32_e32", "V_MAX_I32_e32",
         "V_MIN_U32_e32", "V_LSHLREV_B32_e32", "V_LSHRREV_B32_e32", "V_ADD_F32_e32", "V_MUL_F32_e32", "V_SUB_F32_e32")
# gfx6-8: no V_ADD_U32/V_SUB_U32 without carry (HasAddNoCarryInsts); 24-bit multiplies instead.
_VOP2_GFX6 = ("V_MUL_U32_U24_e32", "V_MUL_HI_U32_U24_e32", *_VOP2[2:])
# gfx6-8: three-source VOP3 opcodes that exist before GFX9Insts (V_MAD_U32_U24 has a clamp operand).
_VOP3_GFX6 = ("V_MAD_U32_U24_e64", "V_BFE_U32_e64", "V_BFI_B32_e64", "V_ALIGNBIT_B32_e64")


class InstructionTemplates(ProgramBuilder):
    """A program builder that writes random instructions."""

    def t_valu_e32(self) -> bool:
        op = self.src.choice(_VOP2 if self.p.add_no_carry else _VOP2_GFX6)
        a, _ = self.vsrc()
        b = self.value("v", 1)
        if a is None or b is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        if "_F32" in op:
            self.emit(f"{d} = nofpexcept {op} {a}, {b}, implicit $mode, implicit $exec")
        else:
            self.emit(f"{d} = {op} {a}, {b}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_valu_e64(self) -> bool:
        op = self.src.choice(("V_MUL_LO_U32_e64", "V_MUL_HI_U32_e64", "V_ADD_U32_e64", "V_SUB_U32_e64",
                              "V_XOR_B32_e64", "V_LSHLREV_B32_e64"))
        srcs = self.vsrcs(2)
        if srcs is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        clamp = ", 0" if op in ("V_ADD_U32_e64", "V_SUB_U32_e64") else ""
        if clamp and not self.p.add_no_carry:  # gfx6-8: the carry-out form, its carry dead (as llc-19 writes it)
            carry = self.new_var("sreg_64", "s", 2)
            op = op.replace("_U32", "_CO_U32")
            self.emit(f"{d}, dead %{carry.id}:sreg_64 = {op} {srcs[0]}, {srcs[1]}{clamp}, implicit $exec")
            self.define(v, lanes)
            return True
        self.emit(f"{d} = {op} {srcs[0]}, {srcs[1]}{clamp}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_valu_3(self) -> bool:
        op = self.src.choice(("V_ADD3_U32_e64", "V_LSHL_OR_B32_e64", "V_AND_OR_B32_e64", "V_XAD_U32_e64")
                             if self.p.gfx9_vop3 else _VOP3_GFX6)
        srcs = self.vsrcs(3)
        if srcs is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        clamp = ", 0" if op == "V_MAD_U32_U24_e64" else ""
        self.emit(f"{d} = {op} {srcs[0]}, {srcs[1]}, {srcs[2]}{clamp}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_vmov(self) -> bool:
        r = self.src.integer(0, 2)
        a = self.literal() if r == 0 else self.value("s", 1) if r == 1 else self.value("v", 1)
        if a is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32", fresh_only=r == 0 and not self.constant_redefs)
        self.emit(f"{d} = V_MOV_B32_e32 {a}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_fmac(self) -> bool:
        """An accumulator updated in place (the tied operand of V_FMAC_F32)."""
        accs = sorted(vid for vid in self.env if self.vars[vid].cls == "vgpr_32" and self.full(self.vars[vid]))
        a, _ = self.vsrc(allow_imm=False)
        b = self.value("v", 1)
        if not accs or a is None or b is None:
            return False
        acc = self.src.choice(accs)
        op = "V_FMAC_F32_e32" if self.p.fmac else "V_MAC_F32_e32"
        self.emit(f"%{acc}:vgpr_32 = nofpexcept {op} {a}, {b}, %{acc}{self.tie}, implicit $mode, implicit $exec")
        return True

    def t_cndmask(self) -> bool:
        masks = self.pieces("s", self.p.lane_mask_dwords, classes=(self.p.lane_mask_class,))
        m = self.src.choice(masks) if masks else None
        a, b = self.value("v", 1), self.value("v", 1)
        if m is None or a is None or b is None:
            return False
        d, v, lanes = self.dest("v", 1, "vgpr_32")
        self.emit(f"{d} = V_CNDMASK_B32_e64 0, {a}, 0, {b}, {m}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_vcmp(self) -> bool:
        op = self.src.choice(("V_CMP_GT_I32_e64", "V_CMP_EQ_U32_e64", "V_CMP_LT_U32_e64", "V_CMP_NE_U32_e64"))
        srcs = self.vsrcs(2)
        if srcs is None:
            return False
        v = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        self.emit(f"%{v.id}:{v.cls} = {op} {srcs[0]}, {srcs[1]}, implicit $exec")
        self.define(v)
        return True

    def t_readfirstlane(self) -> bool:
        a = self.value("v", 1)
        if a is None:
            return False
        d, v, lanes = self.dest("s", 1, "sgpr_32")
        self.emit(f"{d} = V_READFIRSTLANE_B32 {a}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_add64(self) -> bool:
        """A 64-bit add in two halves through a carry in a lane mask: two defs in one instruction."""
        a, b = self.value("v", 2), self.value("v", 2)
        if a is None or b is None:
            return False
        s = self.src.integer(0, 1)
        x = None
        a_lo, a_hi = (f"{a}.sub0", f"{a}.sub1") if "." not in a else self._halves(a)
        b_lo, b_hi = (f"{b}.sub0", f"{b}.sub1") if "." not in b else self._halves(b)
        if s:  # an SGPR operand for the low half, as LLVM does for uniform bases
            x = self.value("s", 2)
            if x is not None:
                a_lo, a_hi = (f"{x}.sub0", f"{x}.sub1") if "." not in x else self._halves(x)
        if s and x is not None:  # the carry already uses the constant bus: copy the high half
            hi = self.new_var("vgpr_32", "v", 1)
            self.emit(f"%{hi.id}:vgpr_32 = COPY {a_hi}")
            self.define(hi)
            a_hi = f"%{hi.id}"
        v = self.new_var(self.p.vclass(2), "v", 2)
        c1 = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        c2 = self.new_var(self.p.lane_mask_class, "s", self.p.lane_mask_dwords)
        self.emit(f"undef %{v.id}.sub0:{v.cls}, %{c1.id}:{c1.cls} = V_ADD_CO_U32_e64 {a_lo}, {b_lo}, 0, implicit $exec")
        self.emit(f"%{v.id}.sub1:{v.cls}, dead %{c2.id}:{c2.cls} = V_ADDC_U32_e64 {a_hi}, {b_hi}, %{c1.id}, 0, implicit $exec")
        self.define(v)
        self.define(c1)
        return True

    def _halves(self, piece: str) -> tuple[str, str]:
        base, sub = piece.split(".")
        k = int(sub.split("_")[0][3:])
        return f"{base}.sub{k}", f"{base}.sub{k + 1}"

    def t_lshl64(self) -> bool:
        x = self.value("v", 2)
        if x is None:
            return False
        d, v, lanes = self.dest("v", 2, self.p.vclass(2))
        if self.p.generation < 8:  # V_LSHLREV_B64 is VI+; SI/CI have V_LSHL_B64 (value, shift)
            self.emit(f"{d} = V_LSHL_B64_e64 {x}, {self.src.integer(0, 4)}, implicit $exec")
        elif self.p.generation >= 12:  # a VOP2 on gfx12: llc-19 selects V_LSHLREV_B64_pseudo_e64
            self.emit(f"{d} = V_LSHLREV_B64_pseudo_e64 {self.src.integer(0, 4)}, {x}, implicit $exec")
        else:
            self.emit(f"{d} = V_LSHLREV_B64_e64 {self.src.integer(0, 4)}, {x}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_salu(self) -> bool:
        op = self.src.choice(("S_ADD_I32", "S_SUB_I32", "S_AND_B32", "S_OR_B32", "S_XOR_B32", "S_LSHL_B32",
                              "S_LSHR_B32", "S_MAX_I32", "S_MIN_U32", "S_MUL_I32"))
        a = self.ssrc(allow_imm=False)
        b = self.ssrc()
        if a is None or b is None:
            return False
        if self.src.chance(0.3):
            a, b = b, a
        d, v, lanes = self.dest("s", 1, self.src.choice(("sreg_32", "sgpr_32")))
        scc = "" if op == "S_MUL_I32" else ", implicit-def dead $scc"
        self.emit(f"{d} = {op} {a}, {b}{scc}")
        self.define(v, lanes)
        return True

    def t_salu64(self) -> bool:
        op = self.src.choice(("S_AND_B64", "S_OR_B64", "S_XOR_B64", "S_LSHL_B64"))
        a = self.value("s", 2)
        b = self.ssrc() if op == "S_LSHL_B64" else self.value("s", 2)
        if a is None or b is None:
            return False
        d, v, lanes = self.dest("s", 2, self.src.choice(("sreg_64", "sgpr_64")))
        self.emit(f"{d} = {op} {a}, {b}, implicit-def dead $scc")
        self.define(v, lanes)
        return True

    def t_smov(self) -> bool:
        fresh = not self.constant_redefs
        if self.src.chance(0.3):
            d, v, lanes = self.dest("s", 2, "sreg_64", fresh_only=fresh)
            self.emit(f"{d} = S_MOV_B64 {self.literal()}")
        else:
            d, v, lanes = self.dest("s", 1, self.src.choice(("sreg_32", "sgpr_32")), fresh_only=fresh)
            self.emit(f"{d} = S_MOV_B32 {self.literal()}")
        self.define(v, lanes)
        return True

    def t_cselect(self) -> bool:
        """SCC live between two instructions: a compare and a select."""
        a, b = self.ssrc(allow_imm=False), self.ssrc()
        x, y = self.ssrc(allow_imm=False), self.ssrc(allow_imm=False)
        if a is None or b is None or x is None or y is None:
            return False
        op = self.src.choice(("S_CMP_LG_U32", "S_CMP_LT_I32", "S_CMP_EQ_U32", "S_CMP_GE_U32"))
        d, v, lanes = self.dest("s", 1, "sreg_32")
        self.emit(f"S_CMP_{op[6:]} {a}, {b}, implicit-def $scc")
        self.emit(f"{d} = S_CSELECT_B32 {x}, {y}, implicit $scc")
        self.define(v, lanes)
        return True

    def t_sadd64(self) -> bool:
        """A 64-bit scalar add: the carry flows through SCC."""
        a, b = self.value("s", 2), self.value("s", 2)
        if a is None or b is None:
            return False
        a_lo, a_hi = (f"{a}.sub0", f"{a}.sub1") if "." not in a else self._halves(a)
        b_lo, b_hi = (f"{b}.sub0", f"{b}.sub1") if "." not in b else self._halves(b)
        v = self.new_var("sreg_64", "s", 2)
        self.emit(f"undef %{v.id}.sub0:sreg_64 = S_ADD_U32 {a_lo}, {b_lo}, implicit-def $scc")
        self.emit(f"%{v.id}.sub1:sreg_64 = S_ADDC_U32 {a_hi}, {b_hi}, implicit-def dead $scc, implicit $scc")
        self.define(v)
        return True

    def t_sload(self) -> bool:
        base = self.value("s", 2)
        if base is None:
            return False
        n = self.src.choice((1, 2, 4, 8, 16))
        cls = {1: "sreg_32_xm0_xexec", 2: "sreg_64_xexec", 4: "sgpr_128", 8: "sgpr_256", 16: "sgpr_512"}[n]
        op = "S_LOAD_DWORD_IMM" if n == 1 else f"S_LOAD_DWORDX{n}_IMM"
        v = self.new_var(cls, "s", n)
        off = 4 * self.src.integer(0, 16)
        self.emit(f"%{v.id}:{cls} = {op} {base}, {off}, 0 :: (dereferenceable invariant load (s{32 * n}), addrspace 4)")
        self.define(v)
        return True

    def t_gload(self) -> bool:
        addr = self.value("v", 2)
        if addr is None:
            return False
        n = self.src.choice((1, 1, 2, 3, 4))
        if n == 3 and self.p.generation < 7:  # BUFFER_LOAD_DWORDX3 is CI+
            n = 4
        op = "GLOBAL_LOAD_DWORD" if n == 1 else f"GLOBAL_LOAD_DWORDX{n}"
        d, v, lanes = self.dest("v", n, self.p.vclass(n), fresh_only=n == 3)
        off = 4 * self.src.integer(0, 8)
        align = ", align 4" if n == 3 else ""
        mem = f"(load (s{32 * n}){align}, addrspace 1)"
        if self.p.memory == "flat":  # FLAT has no offset before gfx9
            self.emit(f"{d} = {op.replace('GLOBAL', 'FLAT')} {addr}, 0, 0, implicit $exec, implicit $flat_scr :: {mem}")
        elif self.p.memory == "buffer":
            self.emit(f"{d} = {op.replace('GLOBAL', 'BUFFER')}_ADDR64 {addr}, %{self.rsrc}, 0, {off}, 0, 0, implicit $exec :: {mem}")
        else:
            self.emit(f"{d} = {op} {addr}, {off}, 0, implicit $exec :: {mem}")
        self.define(v, lanes)
        return True

    def t_store(self) -> bool:
        n = self.src.choice((1, 1, 2, 4))
        val = self.value("v", n)
        if val is None:
            return False
        off = 4 * self.src.integer(0, 8)
        if n == 1 and self.p.memory == "global" and self.src.chance(0.3):
            saddr, voff = self.value("s", 2) if self.p.llc == "llc-19" else self.sgpr_pair(), self.value("v", 1)
            if saddr is not None and voff is not None:
                self.emit(f"GLOBAL_STORE_DWORD_SADDR {voff}, {val}, {saddr}, {off}, 0, implicit $exec :: (store (s32), addrspace 1)")
                return True
        addr = self.value("v", 2)
        if addr is None:
            return False
        self.emit(self.store(addr, val, n, off))
        return True

    def sgpr_pair(self) -> str | None:
        """A 64-bit operand of SGPRs only: LLVM 20+ wants sreg_64_xexec_xnull for SADDR, which
        sreg_64 and sreg_64_xexec (they hold $vcc) are not (llc-22 -verify-machineinstrs, gfx950)."""
        ps = [x for x in self.pieces("s", 2) if self.vars[int(x[1:].split(".")[0])].cls.startswith("sgpr_")]
        return self.src.choice(ps) if ps else None

    def store(self, addr: str, val: str, n: int, off: int) -> str:
        """A store of n dwords to global memory, as the target does it."""
        op = "GLOBAL_STORE_DWORD" if n == 1 else f"GLOBAL_STORE_DWORDX{n}"
        mem = f"(store (s{32 * n}), addrspace 1)"
        if self.p.memory == "flat":
            return f"{op.replace('GLOBAL', 'FLAT')} {addr}, {val}, 0, 0, implicit $exec, implicit $flat_scr :: {mem}"
        if self.p.memory == "buffer":
            return f"{op.replace('GLOBAL', 'BUFFER')}_ADDR64 {val}, {addr}, %{self.rsrc}, 0, {off}, 0, 0, implicit $exec :: {mem}"
        return f"{op} {addr}, {val}, {off}, 0, implicit $exec :: {mem}"

    def t_copy(self) -> bool:
        """A copy between registers of one width: V<-V, V<-S, S<-S, A<-A, A<-V, V<-A."""
        kinds = [("v", "v"), ("v", "s"), ("s", "s")]
        if self.p.agprs:
            kinds += [("a", "a"), ("a", "v"), ("v", "a")]
        dst_file, src_file = self.src.choice(kinds)
        n = self.src.choice((1, 1, 1, 2, 2, 4, 8, 16))
        val = self.value(src_file, n)
        if val is None:
            return False
        cls = {"v": self.p.vclass, "a": self.p.aclass}.get(dst_file, sclass)(n)
        d, v, lanes = self.dest(dst_file, n, cls)
        if d.split(":")[0] == val and not self.self_copies:  # `%3 = COPY %3`, `%3.sub1 = COPY %3.sub1`
            v = self.new_var(cls, dst_file, n)
            d, lanes = f"%{v.id}:{cls}", None
        self.emit(f"{d} = COPY {val}")
        self.define(v, lanes)
        return True

    def t_tuple(self) -> bool:
        """A fresh tuple assembled from parts with subregister defs (what REG_SEQUENCE becomes)."""
        file = self.src.choice(("v", "v", "s", "a") if self.p.agprs else ("v", "v", "s"))
        n = self.src.choice((2, 2, 3, 4, 4, 8, 16)) if file != "a" else self.src.choice((2, 4, 4, 16))
        if file == "s" and n == 3:
            n = 4
        cls = {"v": self.p.vclass, "a": self.p.aclass}.get(file, sclass)(n)
        part = self.src.choice(tuple(p for p in (1, 2, 4, 8) if p < n and n % p == 0 and (file == "v" or p <= 4)))
        parts = []
        for k in range(0, n, part):
            src_file = file if file != "v" or not self.src.chance(0.2) else "s"
            if file == "a" and self.src.chance(0.3):
                src_file = "v"
            val = self.value(src_file, part)
            if val is None:
                return False
            parts.append((k, val))
        v = self.new_var(cls, file, n)
        # Sometimes the tuple starts as IMPLICIT_DEF and some parts stay undefined (never read).
        start_undef = self.src.chance(0.15)
        if start_undef:
            self.emit(f"%{v.id}:{cls} = IMPLICIT_DEF")
            self.define(v, [], undef=True)
            parts = parts[:-1] if len(parts) > 1 and self.src.chance(0.5) else parts
        for i, (k, val) in enumerate(parts):
            undef = "undef " if i == 0 and not start_undef else ""
            single = part == 1 and file == "v" and self.src.chance(0.3)
            sub = subreg_name(k, part)
            if single:
                self.emit(f"{undef}%{v.id}.{sub}:{cls} = V_MOV_B32_e32 {self.literal()}, implicit $exec")
            elif file == "a" and part == 1 and val.startswith("%") and self.vars[int(val[1:].split(".")[0])].file == "v":
                self.emit(f"{undef}%{v.id}.{sub}:{cls} = V_ACCVGPR_WRITE_B32_e64 {val}, implicit $exec")
            else:
                self.emit(f"{undef}%{v.id}.{sub}:{cls} = COPY {val}")
            self.define(v, list(range(k, k + part)), undef=bool(undef))
        return True

    def t_accvgpr(self) -> bool:
        if not self.p.agprs:
            return False
        if self.src.chance(0.5):
            a = self.value("v", 1)
            if a is None:
                return False
            d, v, lanes = self.dest("a", 1, "agpr_32")
            self.emit(f"{d} = V_ACCVGPR_WRITE_B32_e64 {a}, implicit $exec")
        else:
            a = self.value("a", 1)
            if a is None:
                return False
            d, v, lanes = self.dest("v", 1, "vgpr_32")
            self.emit(f"{d} = V_ACCVGPR_READ_B32_e64 {a}, implicit $exec")
        self.define(v, lanes)
        return True

    def t_mfma(self) -> bool:
        if not self.p.agprs:
            return False
        have_big = bool(self.pieces("a", 16, classes=(self.p.aclass(16),)) or self.pieces("v", 16, classes=(self.p.vclass(16),)))
        big = self.src.chance(0.6 if have_big else 0.3)
        n = 16 if big else 4
        op = "V_MFMA_F32_16X16X1F32" if big else "V_MFMA_F32_4X4X1F32"
        file = "v" if self.p.aligned and self.src.chance(0.3) else "a"
        cls = self.p.vclass(n) if file == "v" else self.p.aclass(n)
        a, b = self.value("v", 1), self.value("v", 1)
        if a is None or b is None:
            return False
        accs = self.pieces(file, n, classes=(cls,))
        suffix = "_vgprcd" if file == "v" else ""
        r = self.src.integer(0, 3)
        if r == 3:
            r = 1
        if r == 0 or not accs:  # no accumulator input: the result may not overlap the sources
            v = self.new_var(cls, file, n)
            self.emit(f"early-clobber %{v.id}:{cls} = {op}{suffix}_e64 {a}, {b}, 0, 0, 0, 0, implicit $mode, implicit $exec")
            self.define(v)
        elif r == 1:  # accumulate in place (the tied _mac form of the big MFMAs)
            acc = self.src.choice(accs)
            mac = "_mac" if big else ""
            tie = self.tie if big else ""
            self.emit(f"{acc}:{cls} = {op}{mac}{suffix}_e64 {a}, {b}, {acc}{tie}, 0, 0, 0, implicit $mode, implicit $exec")
        else:
            acc = self.src.choice(accs)
            v = self.new_var(cls, file, n)
            ec = "early-clobber " if big else ""
            self.emit(f"{ec}%{v.id}:{cls} = {op}{suffix}_e64 {a}, {b}, {acc}, 0, 0, 0, implicit $mode, implicit $exec")
            self.define(v)
        if r != 1 and big and self.src.chance(0.5):  # a GEMM-like chain accumulates into the result
            self.emit(f"%{v.id}:{cls} = {op}_mac{suffix}_e64 {b}, {a}, %{v.id}{self.tie}, 0, 0, 0, implicit $mode, implicit $exec")
        return True

    def t_readlane(self) -> bool:
        """One lane of a VGPR into an SGPR, whatever EXEC is: the lane must hold a value in
        every path, so the source is defined in every lane of the wave. Only at full EXEC:
        under a narrowed EXEC the lane may be one a reload did not restore (a vector reload
        writes the active lanes), which the reference allocator would get wrong, as LLVM's
        exec-masked spills would."""
        srcs = [x for x in self.pieces("v", 1) if int(x[1:].split(".")[0]) in self.wave_full]
        if not srcs or self.divergence:
            return False
        a = self.src.choice(srcs)
        lane = self.src.integer(0, self.p.lanes - 1)
        d, v, lanes = self.dest("s", 1, "sreg_32_xm0")  # SReg_32_XM0 (llc-22's machine verifier)
        self.emit(f"{d} = V_READLANE_B32 {a}, {lane}")
        self.define(v, lanes)
        return True

    def t_writelane(self) -> bool:
        """One lane of a VGPR written from an SGPR or a constant, whatever EXEC is; the other
        lanes are the tied input's (the same register). Only at full EXEC: a write to an
        inactive lane breaks the premise of allocating by the CFG's liveness (inactive lanes
        keep their values), so the reference allocator could give the register to a value
        whose other lanes are live."""
        accs = sorted(vid for vid in self.env if self.vars[vid].cls == "vgpr_32" and self.full(self.vars[vid])
                      and vid not in self.counters)
        if not accs or self.divergence:
            return False
        acc = self.src.choice(accs)
        value = self.ssrc() or str(self.src.integer(-16, 64))
        if not value.startswith("%") and not -16 <= int(value) <= 64:
            value = str(self.src.integer(0, 64))  # an inline constant (no literal before gfx10)
        lane = str(self.src.integer(0, self.p.lanes - 1))
        if self.src.chance(0.3) and not value.startswith("%"):  # an SGPR lane select (one SGPR on gfx9)
            sel = self.value("s", 1)
            lane = sel if sel is not None else lane
        self.emit(f"%{acc}:vgpr_32 = V_WRITELANE_B32 {value}, {lane}, %{acc}{self.tie}")
        return True

    def t_kill(self) -> bool:
        local = sorted(vid for vid in self.fresh_here if vid in self.env and self.full(self.vars[vid])
                       and vid not in self.counters)
        if not local:
            return False
        vid = self.src.choice(local)
        self.emit(f"KILL %{vid}")
        del self.env[vid]
        self.wave_full.discard(vid)
        return True

    TEMPLATES: tuple[tuple[str, int], ...] = (
        ("t_valu_e32", 10), ("t_valu_e64", 6), ("t_valu_3", 4), ("t_vmov", 4), ("t_fmac", 3), ("t_cndmask", 2),
        ("t_vcmp", 2), ("t_readfirstlane", 2), ("t_add64", 2), ("t_lshl64", 2), ("t_salu", 7), ("t_salu64", 2),
        ("t_smov", 3), ("t_cselect", 2), ("t_sadd64", 1), ("t_sload", 3), ("t_gload", 3), ("t_store", 4),
        ("t_copy", 6), ("t_tuple", 4), ("t_accvgpr", 2), ("t_mfma", 2), ("t_kill", 1), ("t_readlane", 1),
        ("t_writelane", 2),
    )

    def random_instruction(self) -> None:
        total = sum(w for _, w in self.TEMPLATES)
        for _ in range(8):
            r = self.src.integer(0, total - 1)
            for name, w in self.TEMPLATES:
                if r < w:
                    break
                r -= w
            if getattr(self, name)():
                return
        self.t_vmov()
