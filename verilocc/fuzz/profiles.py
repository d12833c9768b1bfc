"""The targets the fuzzer generates programs for, and what differs between them.

Targets: the four `TARGETS` (`verilocc fuzz`'s default) and the `EXTRA_TARGETS`, one
processor of each other generation from gfx6 to gfx12. A `Profile` holds what differs: the
opcodes that exist (no carry-less V_ADD_U32 or GFX9 three-source VOP3 before gfx9, V_MAC_F32
for V_FMAC_F32 there; FLAT on gfx7/gfx8 and MUBUF with a resource descriptor on gfx6 for
global memory), tuple alignment, AGPRs, the wave size, input registers and the
machineFunctionInfo llc writes for the target. The generator (`verilocc.fuzz.generate`), the
renderer (`verilocc.fuzz.render`) and the reference allocator (`verilocc.fuzz.refalloc`) read
them; nothing here is shared with the verifier.
"""

from __future__ import annotations

from dataclasses import dataclass


# `verilocc fuzz`'s default: the four targets of the long campaign (one seed per four targets,
# README.md "Fuzzing the verifier"); `--mcpu` may name any of ALL_TARGETS.
TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx1100")
# One processor of each other generation: gfx950 (GFX9.5, MAI), gfx1200 (GFX12), gfx1030
# (GFX10.3), gfx906 (GFX9 without MAI), gfx803 (GFX8), gfx700 (GFX7), gfx600 (GFX6).
EXTRA_TARGETS = ("gfx950", "gfx1200", "gfx1030", "gfx906", "gfx803", "gfx700", "gfx600")
ALL_TARGETS = (*TARGETS, *EXTRA_TARGETS)


@dataclass(frozen=True)
class Profile:
    """What the generator and the reference allocator need to know about one target."""

    name: str
    aligned: bool  # even-aligned VGPR/AGPR tuples (gfx90a, gfx942: FeatureGFX90AInsts)
    agprs: bool  # has MAI instructions and AGPRs
    wave32: bool
    kernarg: str  # input SGPR pair holding the kernel argument pointer
    group_ids: tuple[str, ...]  # input registers holding workgroup ids X, Y
    scratch_rsrc: str  # machineFunctionInfo.scratchRSrcReg, as llc writes it for the target
    exec_copy: str  # machineFunctionInfo.sgprForEXECCopy
    reserved_sgprs: tuple[int, ...]  # SGPRs the reference allocator never uses (besides $sgpr32)
    # The fields below keep, at their defaults, what the four TARGETS have always been given
    # (their programs must not change: the long campaign's evidence is per seed).
    generation: int = 9  # GFX major version: which opcodes exist (see the properties below)
    private_segment_buffer: bool = False  # argumentInfo.privateSegmentBuffer in $sgpr0_sgpr1_sgpr2_sgpr3
    # How argumentInfo gives the work-item ids: "legacy" (both in $vgpr0 with masks, and
    # $vgpr1 sometimes read: what the first four targets were given), "split" ($vgpr0 and
    # $vgpr1, llc's layout before gfx90a) or "packed" ($vgpr0 only, with masks).
    workitem_ids: str = "legacy"
    architected_group_ids: bool = False  # workgroup ids in TTMP registers, not in argumentInfo (gfx12)
    llc: str = "llc-19"  # the llc that knows the target (gfx950 is new in LLVM 20)

    def registers(self, file: str) -> int:
        """The registers of `file` ("s", "v", "a") an allocation may name: $sgpr0-103 on gfx6/gfx7
        and $sgpr0-105 later, 256 VGPRs, and 256 AGPRs on targets with MAI."""
        return {"s": 104 if self.generation <= 7 else 106, "v": 256, "a": 256 if self.agprs else 0}[file]

    @property
    def lane_mask_class(self) -> str:
        return "sreg_32_xm0_xexec" if self.wave32 else "sreg_64_xexec"

    @property
    def lane_mask_dwords(self) -> int:
        return 1 if self.wave32 else 2

    # EXEC as SILowerControlFlow writes it (llc-19 -stop-before=greedy): `$exec`, the _B64
    # opcodes and sreg_64 copies on wave64; `$exec_lo`, _B32 and sreg_32 on wave32.
    @property
    def exec_reg(self) -> str:
        return "$exec_lo" if self.wave32 else "$exec"

    @property
    def wave_bits(self) -> str:
        return "B32" if self.wave32 else "B64"

    @property
    def exec_copy_class(self) -> str:
        return "sreg_32" if self.wave32 else "sreg_64"

    @property
    def lanes(self) -> int:
        return 32 if self.wave32 else 64

    @property
    def calls(self) -> bool:
        """Whether programs may call (gfx9 and later: the kernels whose call sequences llc-19 and
        llc-22 were checked to compile here)."""
        return self.generation >= 9

    @property
    def call_mask(self) -> str:
        """The register mask of a call (SIRegisterInfo::getCallPreservedMask: the _GFX90AInsts
        list where the subtarget has gfx90a's instructions)."""
        return "csr_amdgpu_gfx90ainsts" if self.aligned else "csr_amdgpu"

    # Opcodes by generation (LLVM 19 VOP2/VOP3/FLAT/MUBUF instruction definitions, checked with
    # `llc-19 -verify-machineinstrs -run-pass=none` on generated programs for each target).
    @property
    def add_no_carry(self) -> bool:
        """V_ADD_U32/V_SUB_U32 without carry out (HasAddNoCarryInsts: gfx9+); before, the
        carry-out forms V_ADD_CO_U32/V_SUB_CO_U32 with a dead lane mask def."""
        return self.generation >= 9

    @property
    def gfx9_vop3(self) -> bool:
        """V_ADD3_U32, V_LSHL_OR_B32, V_AND_OR_B32, V_XAD_U32 (GFX9Insts)."""
        return self.generation >= 9

    @property
    def fmac(self) -> bool:
        """V_FMAC_F32 (gfx906's FeatureDLInsts, gfx908+, gfx10+); before, V_MAC_F32."""
        return self.generation >= 9

    @property
    def memory(self) -> str:
        """How global memory is reached: "global" (GLOBAL_*, gfx9+), "flat" (FLAT_* without an
        offset: gfx7/gfx8, as llc-19 selects for amdhsa) or "buffer" (BUFFER_*_ADDR64 with a
        resource descriptor: gfx6 has no FLAT)."""
        return "global" if self.generation >= 9 else "flat" if self.generation >= 7 else "buffer"

    def vclass(self, n: int) -> str:
        return "vgpr_32" if n == 1 else f"vreg_{32 * n}" + ("_align2" if self.aligned else "")

    def aclass(self, n: int) -> str:
        return "agpr_32" if n == 1 else f"areg_{32 * n}" + ("_align2" if self.aligned else "")


# Register layouts follow the corpus (llc 19 output for each target). The first four are the
# campaign's; the others follow `llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=X -stop-before=greedy`
# of a kernel reading its kernarg pointer and workgroup ids X and Y, with the `amdgpu-no-*`
# attributes clang's attributor sets (no dispatch ptr/id, no workgroup/workitem id Z): its
# argumentInfo, liveins, scratchRSrcReg and sgprForEXECCopy (gfx950: llc-22, LLVM 19 lacks it).
PROFILES: dict[str, Profile] = {
    "gfx908": Profile("gfx908", False, True, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3),
                      private_segment_buffer=True),
    "gfx90a": Profile("gfx90a", True, True, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3),
                      private_segment_buffer=True),
    "gfx942": Profile("gfx942", True, True, False, "sgpr0_sgpr1", ("sgpr2", "sgpr3"),
                      "$private_rsrc_reg", "$sgpr100_sgpr101", ()),
    "gfx1100": Profile("gfx1100", False, False, True, "sgpr0_sgpr1", ("sgpr14", "sgpr15"),
                       "$private_rsrc_reg", "$sgpr105", (), generation=11),
    # gfx950 (llc-22): gfx942's layout; FeatureGFX90AInsts (even tuples), MAI and AGPRs.
    "gfx950": Profile("gfx950", True, True, False, "sgpr0_sgpr1", ("sgpr2", "sgpr3"),
                      "$private_rsrc_reg", "$sgpr100_sgpr101", (), workitem_ids="packed", llc="llc-22"),
    # gfx1200: architected SGPRs, llc-19 reads the workgroup id X from $ttmp9 and Y from the
    # low half of $ttmp7 (liveins `$ttmp7, $ttmp9`; argumentInfo names neither).
    "gfx1200": Profile("gfx1200", False, False, True, "sgpr0_sgpr1", ("ttmp9", "ttmp7"),
                       "$private_rsrc_reg", "$sgpr105", (), generation=12, workitem_ids="packed",
                       architected_group_ids=True),
    # gfx1030 (GFX10.3, wave32): a private segment buffer in $sgpr0-3 and a scratch resource at
    # $sgpr100-103, unlike gfx11.
    "gfx1030": Profile("gfx1030", False, False, True, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                       "$sgpr100_sgpr101_sgpr102_sgpr103", "$sgpr105", (0, 1, 2, 3), generation=10,
                       private_segment_buffer=True, workitem_ids="split"),
    # gfx906: GFX9 without MAI and AGPRs.
    "gfx906": Profile("gfx906", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3),
                      private_segment_buffer=True, workitem_ids="split"),
    # gfx803 (GFX8), gfx700 (GFX7) and gfx600 (GFX6, 104 addressable SGPRs): the same layout.
    "gfx803": Profile("gfx803", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3), generation=8,
                      private_segment_buffer=True, workitem_ids="split"),
    "gfx700": Profile("gfx700", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3), generation=7,
                      private_segment_buffer=True, workitem_ids="split"),
    "gfx600": Profile("gfx600", False, False, False, "sgpr4_sgpr5", ("sgpr6", "sgpr7"),
                      "$sgpr96_sgpr97_sgpr98_sgpr99", "$sgpr100_sgpr101", (0, 1, 2, 3), generation=6,
                      private_segment_buffer=True, workitem_ids="split"),
}

assert set(PROFILES) == set(ALL_TARGETS), "a profile per target"
