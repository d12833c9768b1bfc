"""Occupancy as llc counts it: registers, LDS, work-group size and amdgpu-waves-per-eu
(`verilocc.target.waves`), and every place that shows or uses it.

Three tiers: the rules by hand, and the LDS-bound DGEMM of tests/fixtures/occupancy in `show`,
`allocate`'s summary and the allocators' greedy floor (always); every kernel of the corpus,
`examples/` and the target fixtures finished by llc, whose `; Occupancy:` must be what
`verilocc show` computes; and generated kernels over processors, LDS sizes, work-group sizes and
amdgpu-waves-per-eu against llc-19 and llc-22, each with the rule of its LLVM (both `llc`).
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from verilocc.mir.model import Function
from verilocc.mir.parser import read_module
from verilocc.target import Target, get_target
from verilocc.target.waves import (LOCAL_MEM_SIZE, WORKGROUP_SIZES, addressable_lds, attribute_waves, launch_limits,
                                   waves_per_simd, workgroup_sizes, workgroup_waves)
from verilocc.verify import function_target
from verilocc.view.occupancy import build_occupancy
from verilocc.view.resources import resources

from .conftest import CORPUS, EXAMPLES, FIXTURES

DGEMM = FIXTURES / "occupancy"


# --- the rules by hand --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cpu", "features", "lds", "sizes", "rule", "waves"),
    [
        # corpus gfx90a/hgemm_mfma16_w32x32: 65536 // 10240 = 6 groups of 4 waves over 4 SIMDs
        ("gfx90a", "", 10240, (1, 256), LOCAL_MEM_SIZE, 6),
        ("gfx90a", "", 32768, (1, 256), LOCAL_MEM_SIZE, 2),  # the DGEMM fixture
        ("gfx90a", "", 40000, (1, 256), LOCAL_MEM_SIZE, 1),
        # corpus gfx1100/hgemm_wmma_w32x32: a WGP has twice the LDS, 131072 // 12288 = 10 groups
        ("gfx1100", "", 12288, (1, 128), LOCAL_MEM_SIZE, 10),
        ("gfx1100", "", 24576, (1, 128), LOCAL_MEM_SIZE, 5),
        ("gfx1100", "+cumode", 24576, (1, 128), LOCAL_MEM_SIZE, 4),  # one CU: 2 groups, 2 SIMDs
        ("gfx600", "", 20000, (1, 256), LOCAL_MEM_SIZE, 1),  # 32 KiB of LDS on gfx6
        ("gfx950", "", 32768, (1, 256), WORKGROUP_SIZES, 5),  # 160 KiB on gfx950
        # No LDS: 16 barriers hold 16 groups of 2 waves, 32 of gfx900's 40 slots; LLVM 22 also
        # counts the one-wave groups of the range, which need no barrier.
        ("gfx900", "", 0, (1, 128), LOCAL_MEM_SIZE, 8),
        ("gfx900", "", 0, (1, 128), WORKGROUP_SIZES, 10),
        ("gfx90a", "", 0, (1, 448), LOCAL_MEM_SIZE, 7),  # 4 groups of 7 waves in 32 slots
        ("gfx90a", "", 0, (1, 448), WORKGROUP_SIZES, 8),
        ("gfx90a", "", 0, (256, 256), WORKGROUP_SIZES, 8),
    ],
)  # fmt: skip
def test_lds_and_workgroup_size(cpu: str, features: str, lds: int, sizes: tuple[int, int], rule: str,
                                waves: int) -> None:
    assert workgroup_waves(get_target(cpu), lds, sizes, features == "+cumode", rule) == waves


def test_lds_per_target() -> None:
    assert [addressable_lds(get_target(n)) for n in ("gfx600", "gfx700", "gfx90a", "gfx950", "gfx9-4-generic",
                                                     "gfx1100", "gfx1200")] == [32768, 65536, 65536, 163840, 65536,
                                                                                65536, 65536]


def test_waves_per_eu_caps_occupancy_where_llc_counts_the_registers() -> None:
    # "4,4" on gfx90a: llc counts at least 97 vector registers, which allow 4 waves.
    gfx90a, gfx1030 = get_target("gfx90a"), get_target("gfx1030")
    assert attribute_waves(gfx90a, 4) == 4
    launch = launch_limits(gfx90a, {"amdgpu-flat-work-group-size": "1,256", "amdgpu-waves-per-eu": "4,4"}, {})
    assert launch.waves == 4 and waves_per_simd(gfx90a, launch, 8) == 4
    # On gfx1030 even 256 VGPRs leave 4 waves: asking for at most 2 gives 4, not 2.
    assert attribute_waves(gfx1030, 2) == 4
    # A minimum below what 1024 work-items need (4 waves per SIMD) makes LLVM ignore the request.
    assert launch_limits(gfx90a, {"amdgpu-waves-per-eu": "2,2"}, {}).waves == 8


def test_workgroup_sizes_and_the_rule_of_the_mirs_llvm() -> None:
    t = get_target("gfx1100")
    assert workgroup_sizes(t, {}) == (1, 1024)
    assert workgroup_sizes(t, {}, "amdgpu_ps") == (1, 32)  # a shader's group is one wave
    assert workgroup_sizes(t, {"amdgpu-flat-work-group-size": "1,2048"}) == (1, 1024)  # invalid: the default
    assert workgroup_sizes(t, {"amdgpu-flat-work-group-size": "256,64"}) == (1, 1024)
    assert workgroup_sizes(t, {"amdgpu-flat-work-group-size": "64,128"}) == (64, 128)
    assert launch_limits(t, {}, {"ldsSize": 10}).rule == LOCAL_MEM_SIZE
    assert launch_limits(t, {}, {"ldsSize": 10, "dynamicVGPRBlockSize": 0}).rule == WORKGROUP_SIZES


# --- the DGEMM whose LDS holds it at 2 waves ---------------------------------------------------
def _dgemm(llvm: int) -> tuple[Function, Function, Target]:
    post = read_module(str(DGEMM / f"llvm{llvm}/gfx90a/dgemm_lds.post.mir")).functions[0]
    pre = read_module(str(DGEMM / f"llvm{llvm}/gfx90a/dgemm_lds.pre.mir")).functions[0]
    return post, pre, function_target(post, None, post.file)


@pytest.mark.parametrize(("llvm", "register_waves"), [(19, 7), (22, 8)])
def test_show_counts_the_lds(llvm: int, register_waves: int) -> None:
    """llc says `; Occupancy: 2` for both (llc tier); the registers alone would allow 7 (66
    VGPRs) and 8 (64 VGPRs, which `show` called "8 of 8, limited by the target's maximum")."""
    post, _, target = _dgemm(llvm)
    res = resources(post, target, build_occupancy(post, None))
    assert (res.waves, res.register_waves, res.launch.lds_bytes) == (2, register_waves, 32768)
    occupancy = dict(res.remarks(post.name))["Occupancy [waves/SIMD]"]
    assert occupancy.startswith("2 of 8, limited by LDS and work-group size: 32768 bytes of LDS per work group of up "
                                "to 256 work-items, 65536 bytes per CU") and f"registers alone allow {register_waves}" in occupancy
    assert not res.free_to_gain and dict(res.vector_thresholds) == {2: 256}  # no register count gains a wave


def test_allocate_and_the_greedy_floor_count_the_lds() -> None:
    from verilocc.allocators.driver import ModuleAllocation
    from verilocc.allocators.optimal import SolverAllocation, waves_bound
    from verilocc.allocators.colouring import start_waves
    from verilocc.allocators.problem import build_problem
    from verilocc.allocators.usage import register_usage
    from verilocc.llm.problem import build_problem as llm_problem

    post, pre, target = _dgemm(19)
    usage = register_usage(post, target)
    assert usage["waves"] == 2
    assert start_waves(pre, target) == 2 and waves_bound(build_problem(pre, target)) == 2
    assert llm_problem(pre, target).usage({})["waves"] == 2
    module = read_module(str(DGEMM / "llvm19/gfx90a/dgemm_lds.pre.mir"))
    line = ModuleAllocation(module, {pre.name: SolverAllocation("feasible", {}, 1.0, usage=usage, function=post)},
                            {pre.name: target}).summary(pre.name)
    assert "2 waves/SIMD on gfx90a (at most 2 by LDS and work-group size: 32768 bytes of LDS" in line, line


# --- every kernel finished by llc ---------------------------------------------------------------
def _llc(version: int) -> str:
    exe = f"llc-{version}"
    if shutil.which(exe) is None:
        pytest.skip(f"{exe} is not installed (make test installs it)")
    return exe


@functools.cache
def _last_rewriter(llc: str, cpu: str) -> int:
    """The last virtregrewriter instance of llc's -O3 pipeline for `cpu` (1 on LLVM 19, 2 on 22)."""
    from verilocc.llc.pairs import last_rewriter_instance

    got = subprocess.run([llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-O3", "-debug-pass=Structure",
                          "-o", "/dev/null"], input="define amdgpu_kernel void @k() {\n  ret void\n}\n",
                         capture_output=True, text=True, check=True)
    return last_rewriter_instance(got.stderr)


def _llc_occupancy(llc: str, post: Path) -> dict[str, int]:
    """llc's `; Occupancy:` per function of `post`, finished after its last rewriter."""
    from verilocc.hunt.pairs import input_triple
    from verilocc.llc.wave32 import WAVE32_VCC_OPCODES, run_learning_wave32

    text, cpu = post.read_text(), post.parent.name
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "post.mir"

        def run(patched: str) -> subprocess.CompletedProcess[str]:
            path.write_text(patched)
            return subprocess.run([llc, f"-mtriple={input_triple(text)}", f"-mcpu={cpu}", "-O3",
                                   f"-start-after=virtregrewriter,{_last_rewriter(llc, cpu)}", str(path), "-o", "-"],
                                  capture_output=True, text=True, timeout=600)

        proc = run_learning_wave32(text, set(WAVE32_VCC_OPCODES), run)
    assert proc.returncode == 0, f"{llc} on {post}: {proc.stderr[-800:]}"
    out: dict[str, int] = {}
    name = ""
    for line in proc.stdout.splitlines():
        if m := re.match(r"^([A-Za-z_$][\w$.]*):", line):  # a function's label (blocks' start with a dot)
            name = m.group(1)
        elif m := re.match(r"^; Occupancy: (\d+)$", line):
            out[name] = int(m.group(1))
    return out


def _shown_occupancy(post: Path) -> dict[str, int]:
    """Waves per SIMD `verilocc show` computes for each function of `post`."""
    out = {}
    for fn in read_module(str(post)).functions:
        target = function_target(fn, None, fn.file)
        out[fn.name] = resources(fn, target, build_occupancy(fn, None)).waves
    return out


def _compare(llc: str, posts: list[Path]) -> list[str]:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda p: _llc_occupancy(llc, p), posts))
    wrong = []
    for post, theirs in zip(posts, got):
        ours = _shown_occupancy(post)
        if theirs != ours:
            wrong.append(f"{post}: {llc} {theirs}, verilocc show {ours}")
    return wrong


@pytest.mark.llc
def test_show_agrees_with_llc_on_every_kernel_of_the_corpus_and_examples() -> None:
    """LLVM 19's post files (N = 1): 54 corpus pairs (when the corpus is there), the examples
    and the DGEMM; 6 of the corpus kernels are held below their registers' occupancy by LDS."""
    llc = _llc(19)
    posts = sorted(EXAMPLES.glob("*/*.post.mir")) + [DGEMM / "llvm19/gfx90a/dgemm_lds.post.mir"]
    if CORPUS.is_dir():
        posts += sorted(CORPUS.glob("*/*.post.mir"))
    wrong = _compare(llc, posts)
    assert not wrong, "\n".join(wrong)


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_show_agrees_with_llc_on_every_target_fixture(version: int) -> None:
    """gfx600 to gfx1200 (tests/fixtures/targets), and LLVM 22's DGEMM (N = 2)."""
    llc = _llc(version)
    posts = sorted((FIXTURES / "targets" / f"llvm{version}").glob("*/*.post.mir"))
    posts.append(DGEMM / f"llvm{version}/gfx90a/dgemm_lds.post.mir")
    wrong = _compare(llc, posts)
    assert not wrong, "\n".join(wrong)


# --- generated kernels against llc --------------------------------------------------------------
_SIZES = (None, "1,64", "1,96", "1,128", "1,192", "1,256", "1,448", "1,1024", "64,64", "128,320", "256,256")
_LDS = (0, 1000, 3000, 5000, 10000, 20000, 33000, 65536, 100000)
_WAVES = (None, "4,4", "1,2", "3", "2,5", "9")
#: (processor, features): every occupancy family, wave64 on gfx10.3, CU mode on gfx11.
_PROCESSORS = (("gfx600", ""), ("gfx700", ""), ("gfx802", ""), ("gfx803", ""), ("gfx900", ""), ("gfx908", ""),
               ("gfx90a", ""), ("gfx942", ""), ("gfx1010", ""), ("gfx1030", ""), ("gfx1030", "+wavefrontsize64"),
               ("gfx1100", ""), ("gfx1100", "+cumode"), ("gfx1151", ""), ("gfx1200", ""))
_LLVM22_ONLY = (("gfx950", ""), ("gfx9-4-generic", ""))


def _kernels(target: Target, features: str) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    """A module with one kernel per (work-group size, LDS, waves-per-eu) the target can hold."""
    ir, kernels = [], []
    for k, (size, lds, waves) in enumerate(itertools.product(_SIZES, _LDS, _WAVES)):
        if lds > addressable_lds(target):
            continue
        attrs = {"amdgpu-flat-work-group-size": size, "amdgpu-waves-per-eu": waves, "target-features": features or None}
        written = {key: v for key, v in attrs.items() if v}
        body = ""
        if lds:
            ir.append(f"@lds{k} = internal addrspace(3) global [{lds} x i8] poison, align 4")
            body = f"  store volatile i8 0, ptr addrspace(3) @lds{k}\n"
        ir.append(f"define amdgpu_kernel void @k{k}() #{k} {{\n{body}  ret void\n}}")
        quoted = " ".join(f'"{a}"="{v}"' for a, v in written.items())
        ir.append(f"attributes #{k} = {{ nounwind {quoted} }}")
        kernels.append((f"k{k}", written))
    return "\n".join(ir) + "\n", kernels


def _generated(llc: str, version: int, cpu: str, features: str) -> tuple[int, list[str], int]:
    """(kernels, those where verilocc differs from llc, those where the other LLVM's rule would)."""
    target = get_target(cpu, 64 if "+wavefrontsize64" in features else None)
    ir, kernels = _kernels(target, features)
    args = [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-O3", "-o", "-"] + ([f"-mattr={features}"] if features else [])
    out = subprocess.run(args, input=ir, capture_output=True, text=True, check=True, timeout=600).stdout
    stats: dict[str, dict[str, int]] = {}
    for name, body in re.findall(r"^(k\d+):(.*?)(?=^k\d+:|\Z)", out, re.M | re.S):
        stats[name] = {k.replace("TotalNum", "Num"): int(v) for k, v in re.findall(r"^\s*; (\w+): (\d+)", body, re.M)}
    rule, other = (LOCAL_MEM_SIZE, WORKGROUP_SIZES) if version <= 20 else (WORKGROUP_SIZES, LOCAL_MEM_SIZE)
    wrong, differs = [], 0
    for name, attrs in kernels:
        got = stats[name]
        mfi = {"ldsSize": got.get("LDSByteSize", 0)}
        regs = (got["NumVgprs"], got.get("NumAgprs", 0), got["NumSgprs"])
        ours = waves_per_simd(target, launch_limits(target, attrs, mfi, "amdgpu_kernel", True, rule), *regs)
        if ours != got["Occupancy"]:
            wrong.append(f"llc-{version} {cpu}{features} {attrs} LDS {mfi['ldsSize']}: llc {got['Occupancy']}, "
                         f"verilocc {ours}")
        differs += waves_per_simd(target, launch_limits(target, attrs, mfi, "amdgpu_kernel", True, other), *regs) != ours
    return len(kernels), wrong, differs


@pytest.mark.llc
@pytest.mark.parametrize("version", [19, 22])
def test_generated_kernels_match_llc(version: int) -> None:
    """About 500 kernels per processor; each LLVM's own rule for LDS and work-group size
    agrees with it on every one, and the other LLVM's rule does not (so the test can fail)."""
    llc = _llc(version)
    jobs = list(_PROCESSORS) + (list(_LLVM22_ONLY) if version >= 22 else [])
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda job: _generated(llc, version, *job), jobs))
    assert all(n > 300 for n, _, _ in results)
    wrong = [w for _, ws, _ in results for w in ws]
    assert not wrong, f"{len(wrong)} kernels differ:\n" + "\n".join(wrong[:40])
    assert sum(d for _, _, d in results) > 50
