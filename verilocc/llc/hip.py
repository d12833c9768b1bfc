"""LLVM IR from HIP sources: the kernels of a manifest compiled with a given clang (`compile_hip`).

The pair maker's command line (``--hip DIR --clang CLANG``, `verilocc.llc.corpus`) compiles
them instead of reading a corpus's ``.ll`` files (made by clang-19, whose IR older llc versions
cannot parse), and so does `verilocc hunt` for its HIP inputs. Each kernel of ``DIR/manifest.txt``
(or ``--manifest FILE``) is compiled for each target it selects::

    cd DIR && CLANG -x hip --cuda-device-only --offload-arch=T -nogpulib -nogpuinc
              -fuse-cuid=none -O3 [manifest -D flags] -include verilocc/llc/data/hip_compat.h
              -S -emit-llvm k.hip -o <ll-dir>/T/<kernel>.ll

``hip_compat.h`` stands in for two builtins clang 15/16 lack and is a no-op for clang 19+.
A manifest line's target keywords select among the requested targets: ``all`` every
one, ``mfma`` those with MFMA (gfx908, gfx90a, gfx94x, gfx950), ``wmma`` gfx11; an explicit
target name only itself. The jobs returned are those ``.ll`` files (other files in the
directory are ignored). Standard library only.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tempfile
from pathlib import Path

from verilocc.llc.pairs import Job
from verilocc.llc.text import read_text, write_if_changed

HIP_COMPAT = Path(__file__).resolve().parent / "data" / "hip_compat.h"


def target_matches(keyword: str, target: str) -> bool:
    """Does a manifest target keyword (all, mfma, wmma or a name) select `target`?"""
    if keyword == "all":
        return True
    if keyword == "mfma":
        return target in ("gfx908", "gfx90a", "gfx950") or target.startswith("gfx94")
    if keyword == "wmma":
        return re.fullmatch(r"gfx11\d\d", target) is not None
    return keyword == target


def read_manifest(path: Path) -> list[tuple[str, str, list[str], list[str]]]:
    """(kernel, source, target keywords, clang flags) per line of a kernel manifest."""
    out = []
    for raw in read_text(path).splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, source, targets, *flags = line.split()
            out.append((name, source, targets.split(","), flags))
    return out


def compile_hip(clang: str, hip: Path, manifest: Path, targets: list[str], kernels: list[str] | None,
                ll_dir: Path, timeout: float) -> tuple[list[Job], list[str]]:
    """Compile the manifest's kernels into `ll_dir/<target>/<kernel>.ll`.

    Returns the jobs for the compiled kernels (only those: other `.ll` files in `ll_dir` are
    not picked up) and the `<target>/<kernel>` names clang failed on.
    """
    jobs: list[Job] = []
    failed: list[str] = []
    for name, source, keywords, flags in read_manifest(manifest):
        if kernels is not None and not any(fnmatch.fnmatchcase(name, k) for k in kernels):
            continue
        for target in targets:
            if not any(target_matches(k, target) for k in keywords):
                continue
            with tempfile.TemporaryDirectory(prefix="llc_corpus_clang_") as tmp:
                out = Path(tmp) / "k.ll"
                cmd = [clang, "-x", "hip", "--cuda-device-only", f"--offload-arch={target}",
                       "-nogpulib", "-nogpuinc", "-fuse-cuid=none", "-O3", *flags,
                       "-include", str(HIP_COMPAT), "-S", "-emit-llvm", source, "-o", str(out)]
                try:
                    proc = subprocess.run(cmd, cwd=hip, capture_output=True, text=True,
                                          errors="replace", timeout=timeout, check=False)
                    ok = proc.returncode == 0 and out.exists()
                    why = " | ".join([ln for ln in proc.stderr.splitlines()
                                      if "error" in ln][:3])
                except subprocess.TimeoutExpired:
                    ok, why = False, f"timed out after {timeout:.0f}s"
                if ok:
                    ll = ll_dir / target / f"{name}.ll"
                    write_if_changed(ll, read_text(out))
                    jobs.append(Job(target, name, ll))
                else:
                    failed.append(f"{target}/{name}")
                    print(f"FAIL clang {target}/{name}: {why}", flush=True)
    order = {t: k for k, t in enumerate(targets)}
    return sorted(jobs, key=lambda j: (order[j.target], j.kernel)), failed
