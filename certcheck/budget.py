"""The register budget of one function: how many SGPRs, VGPRs and AGPRs LLVM lets it use.

Two budgets are derived, and a register of the allocated program must lie within both:

* what the target and the work-group size allow (`hard`): the registers a wave may have
  when as many waves run per SIMD as one work group of the largest size needs
  (``"amdgpu-flat-work-group-size"``; a kernel beyond it cannot be launched);
* what the function's attributes ask for (`asked`): the same with ``"amdgpu-waves-per-eu"``,
  ``"amdgpu-num-sgpr"`` and ``"amdgpu-num-vgpr"``, as SIRegisterInfo::getReservedRegs
  reserves every register beyond GCNSubtarget::getMaxNumSGPRs/getMaxNumVGPRs of the
  function (LLVM's machine verifier refuses a `renamable` operand in a reserved register).

Facts (LLVM: Utils/AMDGPUBaseInfo.cpp IsaInfo getTotalNumSGPRs, getAddressableNumSGPRs,
getSGPRAllocGranule, getMaxNumSGPRs, getMinNumSGPRs, getVGPRAllocGranule, getTotalNumVGPRs,
getAddressableNumVGPRs, getMaxWavesPerEU, getMaxNumVGPRs, getMinNumVGPRs,
getNumWavesPerEUWithNumVGPRs, getEUsPerCU; GCNSubtarget.cpp getBaseReservedNumSGPRs,
getBaseMaxNumSGPRs, getBaseMaxNumVGPRs; AMDGPUSubtarget.cpp getFlatWorkGroupSizes,
getWavesPerEU, and from LLVM 21 getEffectiveWavesPerEU with the occupancy the work-group sizes
and ``"amdgpu-lds-size"`` allow; AMDGPU.td / GCNProcessors.td for which processor has which
feature). Which rule for the waves per EU applies is read off the file: llc 21 and later
print ``dynamicVGPRBlockSize`` in ``machineFunctionInfo``, older ones do not.

On gfx90a/gfx94x/gfx950 VGPRs and AGPRs share one file; LLVM splits the budget between them
by whether the function uses AGPRs (SIMachineFunctionInfo::usesAGPRs), which a MIR file does
not record: each file gets the larger of its two shares, and the VGPRs (rounded up to 4 when
AGPRs are used) and the AGPRs together stay within the whole budget.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from certcheck import regs
from certcheck.flow import Refused
from certcheck.mir import BudgetInputs as Inputs, Function, Op

# Older names llc accepts for gfx6-gfx8 processors (AMDGPUUsage, "Processors").
LEGACY = {"tahiti": "gfx600", "pitcairn": "gfx601", "verde": "gfx601", "oland": "gfx602", "hainan": "gfx602",
          "kaveri": "gfx700", "hawaii": "gfx701", "kabini": "gfx703", "mullins": "gfx703", "bonaire": "gfx704",
          "carrizo": "gfx801", "iceland": "gfx802", "tonga": "gfx802", "fiji": "gfx803", "polaris10": "gfx803",
          "polaris11": "gfx803", "tongapro": "gfx805", "stoney": "gfx810"}
_PROCESSOR = re.compile(r"gfx(60[0-2]|70[0-5]|80[1235]|810|90[02469ac]|908|94[012]|950|9-generic|9-4-generic|101[0-3]|"
                        r"10-1-generic|103[0-6]|10-3-generic|110[0-3]|115[0-3]|11-generic|120[01]|12-generic)$")


def _down(x: int, granule: int) -> int:
    return x // granule * granule


class Subtarget:
    """A processor at one wave size, in CU or WGP mode, with or without a trap handler."""

    def __init__(self, name: str, wave: int | None, cu_mode: bool, trap: bool) -> None:
        self.name, self.cu_mode, self.trap = name, cu_mode, trap
        self.major = major = int(name[3:5]) if name[3:5] in ("10", "11", "12") else int(name[3])
        self.wave = wave = wave or (64 if major <= 9 else 32)
        self.unified = bool(re.match(r"gfx9(0a|4.|50|-4-generic)$", name))  # FeatureGFX90AInsts
        self.mai = self.unified or name == "gfx908"  # FeatureMAIInsts: AGPRs
        v103 = major >= 11 or bool(re.match(r"gfx10(3.|-3-generic)$", name))  # FeatureGFX10_3Insts
        self.xnack = major == 9 or name in ("gfx801", "gfx810") or bool(re.match(r"gfx10(1.|-1-generic)$", name))
        self.init_bug = name in ("gfx802", "gfx805")  # FeatureSGPRInitBug: 96 SGPRs, whatever is asked
        self.max_waves = 8 if self.unified else 10 if major <= 9 else 16 if v103 else 20  # per SIMD
        self.eus = 2 if major >= 10 and cu_mode else 4  # SIMDs the waves of one work group share
        if self.unified or major <= 9:  # (allocation granule, VGPRs per SIMD lane)
            self.granule, self.total = (8, 512) if self.unified else (4, 256)
        else:  # Feature1_5xVGPRs: gfx1100/1101/1151, gfx12; halved at wave64
            g, t = (24, 1536) if name in ("gfx1100", "gfx1101", "gfx1151", "gfx1200", "gfx1201", "gfx12-generic") \
                else (16 if v103 else 8, 1024)
            self.granule, self.total = (g, t) if wave == 32 else (g // 2, t // 2)
        self.vector = 512 if self.unified else 256  # addressable VGPRs (+ AGPRs on a unified file)
        self.sgprs = 96 if self.init_bug else 106 if major >= 10 else 102 if major >= 8 else 104  # addressable

    def max_vgprs(self, waves: int) -> int:
        return min(_down(self.total // waves, self.granule), self.vector)

    def min_vgprs(self, waves: int) -> int:
        """The fewest VGPRs that keep occupancy at `waves` (more would allow waves + 1)."""
        g, t = self.granule, self.total
        if waves >= self.max_waves or _down(t // waves, g) == _down(t // self.max_waves, g):
            return 0
        floor = min(max(t // (-(-self.vector // g) * g), 1), self.max_waves)  # the waves all addressable VGPRs allow
        if waves < floor:
            return self.min_vgprs(floor)
        return min(1 + min(_down(t // waves, g) - g, _down(t // (waves + 1), g)), self.vector)

    def _sgpr_share(self, waves: int) -> int:
        share = (800 if self.major >= 8 else 512) // waves
        share -= min(share, 16) if self.trap else 0  # a trap handler takes 16 of each share
        return _down(share, 16 if self.major >= 8 else 8)

    def max_sgprs(self, waves: int, addressable: bool) -> int:
        if self.major >= 10:
            return self.sgprs if addressable else 108
        return min(self._sgpr_share(waves), self.sgprs if addressable or self.major < 8 else 112)

    def min_sgprs(self, waves: int) -> int:
        if self.major >= 10 or waves >= self.max_waves:
            return 0
        return min(self._sgpr_share(waves + 1) + 1, self.sgprs)

    def kept_sgprs(self, flat_scratch_init: bool) -> int:
        """SGPRs kept for VCC, FLAT_SCRATCH and XNACK_MASK (architected flat scratch: gfx94x/950)."""
        if self.major >= 10:
            return 2
        if (flat_scratch_init or (self.unified and self.name != "gfx90a")) and self.major >= 7:
            return 6 if self.major >= 8 else 4
        return 4 if self.xnack else 2

    def implied_waves(self, size: int) -> int:
        """The waves per SIMD one work group of `size` work-items needs."""
        return math.ceil(math.ceil(size / self.wave) / self.eus)

    def fitting_waves(self, lds: int, sizes: tuple[int, int]) -> int:
        """LLVM 21+: the most waves per SIMD work groups of `sizes` (least, most work-items)
        allocating `lds` bytes of LDS each reach (getOccupancyWithWorkGroupSizes' maximum)."""
        wgp = self.major >= 10 and not self.cu_mode
        per_unit = (163840 if self.name == "gfx950" else 32768 if self.major == 6 else 65536) * (2 if wgp else 1)
        by_lds = per_unit // max(lds, 1)
        if not by_lds:
            return 1
        slots = self.max_waves * self.eus

        def groups(size: int) -> int:
            waves = math.ceil(size / self.wave)
            return slots if waves == 1 else min(slots // waves, 32 if wgp else 16)

        small_waves = math.ceil(sizes[0] / self.wave)
        small = min(groups(sizes[0]), by_lds)
        waves = small_waves * small
        large = math.ceil(sizes[1] / self.wave) * min(groups(sizes[1]), by_lds)
        if large >= waves:
            waves = large
        elif grow := (slots - small * small_waves) // small:
            # the slots the smallest groups leave may go to larger groups of the range
            waves += small * min(grow, math.ceil(sizes[1] / self.wave) - small_waves)
        return min(max(math.ceil(waves / self.eus), 1), self.max_waves)


# --------------------------------------------------------------------------------------------
# The budget of a function
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Budget:
    sgprs: int
    vgprs: int
    agprs: int
    vector: int  # a unified file: VGPRs (rounded up to 4 when AGPRs are used) + AGPRs


# The attributes that ask for a budget (besides the work-group size and LDS).
ASKING = ("amdgpu-waves-per-eu", "amdgpu-num-sgpr", "amdgpu-num-vgpr")
SHADERS = ("amdgpu_vs", "amdgpu_ls", "amdgpu_hs", "amdgpu_es", "amdgpu_gs", "amdgpu_ps")


def _pair(text: str | None, default: tuple[int, int], first_only: bool) -> tuple[int, int] | None:
    """An integer pair attribute "a,b" ("a" alone when `first_only`); None when it does not read."""
    if text is None:
        return default
    parts = [t.strip() for t in text.split(",")]
    if len(parts) > 2 or not all(t.isdigit() for t in parts) or (len(parts) == 1 and not first_only):
        return None
    return (int(parts[0]), int(parts[1]) if len(parts) == 2 else default[1])


def _number(attrs: dict[str, str], key: str) -> int | None:
    v = attrs.get(key, "").strip()
    return int(v) if v.isdigit() else None


def subtarget(target: str, inp: Inputs) -> Subtarget:
    name = LEGACY.get(target, target)
    if not _PROCESSOR.match(name):
        raise Refused("register budget", f"target {target} is not one whose budget certcheck knows")
    features = inp.attributes.get("target-features", "")
    trap = inp.triple.split("-")[2:3] == ["amdhsa"]
    for f in features.split(","):
        if f.strip() in ("+trap-handler", "-trap-handler"):
            trap = f.strip()[0] == "+"
    wave = 64 if "+wavefrontsize64" in features else 32 if "+wavefrontsize32" in features else None
    return Subtarget(name, wave, "+cumode" in features.split(","), trap)


def budgets(target: str, inp: Inputs) -> tuple[Budget, Budget]:
    """(what the target and the work-group size allow, what the attributes ask for)."""
    st = subtarget(target, inp)
    attrs = inp.attributes
    default_sizes = (1, st.wave if inp.convention in SHADERS else 1024)
    sizes = _pair(attrs.get("amdgpu-flat-work-group-size"), default_sizes, False)
    if sizes is None or not 1 <= sizes[0] <= sizes[1] <= 1024:
        sizes = default_sizes
    implied = st.implied_waves(sizes[1])
    hard = _budget(st, inp, (implied, st.max_waves), None, None)
    asked = _pair(attrs.get("amdgpu-waves-per-eu"), (1, st.max_waves), True)
    if inp.llvm21:
        most = st.fitting_waves((_pair(attrs.get("amdgpu-lds-size"), (0, 0), True) or (0, 0))[0], sizes)
        default = (min(implied, most), most)
        if asked is None or not default[0] <= asked[0] <= min(asked[1], default[1]) or asked[1] > st.max_waves:
            waves = default
        else:
            waves = (asked[0], min(asked[1], most))
    else:
        default = (implied, st.max_waves)
        if asked is None or (asked[1] and asked[0] > asked[1]) or asked[0] < implied or asked[1] > st.max_waves:
            waves = default
        else:
            waves = asked
    return hard, _budget(st, inp, waves, _number(attrs, "amdgpu-num-sgpr"), _number(attrs, "amdgpu-num-vgpr"))


def _budget(st: Subtarget, inp: Inputs, waves: tuple[int, int], num_sgpr: int | None,
            num_vgpr: int | None) -> Budget:
    low, high = waves
    top = st.max_sgprs(low, False)
    kept = st.kept_sgprs(inp.flat_scratch_init)
    if num_sgpr:  # 0 asks for nothing
        n = max(num_sgpr, inp.preloaded_sgprs) if num_sgpr > kept else 0
        if n and n <= top and not (high and n < st.min_sgprs(high)):
            top = n
    if st.init_bug:
        top = 96
    sgprs = min(top - kept, st.max_sgprs(low, True))
    vector = st.max_vgprs(low)
    if num_vgpr:
        n = num_vgpr * (2 if st.unified else 1)
        if n <= vector and not (high and n < st.min_vgprs(high)):
            vector = n
    vgprs = min(vector, 256)
    if st.unified:  # the larger share of each file: all VGPRs first, or half and half
        return Budget(sgprs, vgprs, max(vector - vgprs, vector // 2), vector)
    return Budget(sgprs, vgprs, vgprs if st.mai else 0, vector)


# --------------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------------
def check_function(pre: Function, post: Function, target: str, path: str) -> str:
    """Refuse (`Refused`, claim "register budget") a register of the allocated program beyond
    either budget; return a line saying what was checked. Checked: every SGPR, VGPR and AGPR
    operand that is `renamable` (the allocator's) or that the virtual program does not name
    itself (what it names, an argument or an inline-assembly clobber, is the program's)."""
    cpu = post.inputs.attributes.get("target-cpu")
    if cpu is not None and LEGACY.get(cpu, cpu) != target:
        raise Refused("register budget", f"{path}:{post.line}: function {post.name} is compiled for {cpu}, the "
                      f"certificate says {target}")
    hard, asked = budgets(target, post.inputs)
    unified = subtarget(target, post.inputs).unified
    named = {u for b in pre.blocks for i in b.ins for o in i.ops if o.kind == "reg" and not o.virtual
             and o.reg != "noreg" for u in _units(o)}
    top = {"s": 0, "v": 0, "a": 0}
    where: dict[str, tuple[int, str]] = {}
    for b in post.blocks:
        for ins in b.ins:
            for o in ins.ops:
                if o.kind != "reg" or o.virtual or o.reg == "noreg" or regs.file_and_range(o.reg) is None:
                    continue
                us = _units(o)
                if "renamable" not in o.flags and set(us) <= named:
                    continue
                for u in us:
                    if (m := _UNIT.match(u)) and int(m.group(2)) + 1 > top[m.group(1)[0]]:
                        top[m.group(1)[0]], where[m.group(1)[0]] = int(m.group(2)) + 1, (ins.line, o.reg)
    used = (-(-top["v"] // 4) * 4 if top["a"] else top["v"]) + top["a"]
    attrs = post.inputs.attributes
    asks = " ".join(f'"{k}"="{attrs[k]}"' for k in ASKING if k in attrs) or "none"
    for bud, what in ((hard, f"what {target} allows for its work-group size"),
                    (asked, f"what its attributes ask for ({asks})")):
        for f, limit in (("s", bud.sgprs), ("v", bud.vgprs), ("a", bud.agprs)):
            if top[f] > limit:
                line, reg = where[f]
                raise Refused("register budget", f"{path}:{line}: ${reg} lies beyond the {limit} {f.upper()}GPRs of "
                              f"{what}")
        if unified and used > bud.vector:
            line, reg = where["a" if top["a"] else "v"]
            raise Refused("register budget", f"{path}:{line}: ${reg}: {top['v']} VGPRs and {top['a']} AGPRs take "
                          f"{used} registers of the unified file, beyond the {bud.vector} of {what}")
    least = [min(getattr(hard, k), getattr(asked, k)) for k in ("sgprs", "vgprs", "agprs", "vector")]
    return (f"{post.name}: register budget re-derived ({least[0]} SGPRs, {least[1]} VGPRs, {least[2]} AGPRs"
            f"{f', {least[3]} in all' if unified else ''}); the allocation uses {top['s']}, {top['v']}, {top['a']}")


_UNIT = re.compile(r"([sva])gpr([0-9]+)\.")


def _units(o: Op) -> list[str]:
    us = regs.units(o.reg)
    return [us[s] for s in regs.subreg_slots(o.subreg) if s < len(us)] if o.subreg else us
