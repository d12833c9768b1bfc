"""Compile kernels into pre/post register-allocation MIR pairs for the training data.

Sources: HIP kernels with a manifest (``manifest.txt``, as in ``examples/kernels/``: name,
source, targets, clang flags; a source not among the kernels is looked up where its manifest
says, relative to the manifest, with the kernels' directory on the include path), compiled
with clang-19 for every requested target; then `verilocc.llc.corpus` makes the pairs with
each llc (LLVM 19 and 22), exactly as the corpus was made. Existing pair directories
(``<dir>/<target>/<kernel>.{pre,post}.mir``) can be added as they are. Every step skips outputs
that already exist, so the command resumes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verilocc.errors import InputError

# Targets that clang-19 knows (gfx950 needs LLVM 20+) and the manifest's target keywords.
DEFAULT_TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx1100", "gfx1200")
_KEYWORDS = {
    "all": ("gfx908", "gfx90a", "gfx942", "gfx1100", "gfx1200"),
    "mfma": ("gfx908", "gfx90a", "gfx942"),
    "wmma": ("gfx1100",),
}


@dataclass(frozen=True)
class KernelVariant:
    name: str
    source: str  # the .hip file's name: the unit of the train/held-out split
    targets: tuple[str, ...]
    flags: tuple[str, ...]
    line: int = 0  # where the manifest names the source (1-based), for errors
    column: int = 0
    directory: Path | None = None  # where the manifest says the source is, if it is not among the kernels


def source_path(kernels_dir: Path, kv: KernelVariant) -> Path:
    """The kernel's source: in the kernels' directory, else where the manifest naming it says."""
    own = kernels_dir / kv.source
    if own.is_file() or kv.directory is None or not (kv.directory / kv.source).is_file():
        return own
    return kv.directory / kv.source


def read_manifest(path: Path) -> list[KernelVariant]:
    out: list[KernelVariant] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) < 3:
            raise InputError("expected <name> <source.hip> <targets> [clang flags]", str(path), number,
                             len(raw) - len(raw.lstrip()) + 1)
        name, source, targets, *flags = line.split()
        ts: list[str] = []
        for t in targets.split(","):
            ts.extend(_KEYWORDS.get(t, (t,)))
        column = raw.find(source, raw.find(name) + len(name)) + 1
        where = path.parent / source  # `kernels/x.hip` names x.hip in the manifest's kernels/
        out.append(KernelVariant(name, where.name, tuple(dict.fromkeys(ts)), tuple(flags), number, column,
                                 where.parent))
    return out


# Optimisation variants: the same kernel compiled differently (suffix, extra clang flags).
VARIANTS: tuple[tuple[str, tuple[str, ...]], ...] = (("", ()), ("_nounroll", ("-fno-unroll-loops",)))


def compile_ir(kernels_dir: Path, manifest: list[KernelVariant], targets: tuple[str, ...], out: Path,
               clang: str, log: Callable[[str], None]) -> dict[str, str]:
    """clang -> <out>/<target>/<kernel><variant>.ll; returns kernel name -> source file."""
    sources: dict[str, str] = {}
    for kv in manifest:
        for suffix, extra in VARIANTS:
            sources[kv.name + suffix] = kv.source
            for t in kv.targets:
                if t not in targets:
                    continue
                ll = out / t / f"{kv.name}{suffix}.ll"
                if ll.exists():
                    continue
                ll.parent.mkdir(parents=True, exist_ok=True)
                src = source_path(kernels_dir, kv)
                include = [] if src.parent == kernels_dir else ["-I", str(kernels_dir)]
                cmd = [clang, "-x", "hip", "--cuda-device-only", f"--offload-arch={t}", "-nogpulib", "-nogpuinc",
                       "-fuse-cuid=none", "-O3", *include, *kv.flags, *extra, "-S", "-emit-llvm", str(src),
                       "-o", str(ll)]
                r = subprocess.run(cmd, capture_output=True, text=True, check=False)
                log(f"{'ok  ' if r.returncode == 0 else 'FAIL'} clang {t}/{kv.name}")
                if r.returncode != 0 and ll.exists():
                    ll.unlink()
    return sources


def make_pairs(ir_dir: Path, targets: tuple[str, ...], llc: str, out: Path, log: Callable[[str], None],
               jobs: int = 1) -> None:
    """`verilocc.llc.corpus` with `llc` for the targets whose pairs are not made yet."""
    if shutil.which(llc) is None:
        log(f"skip {llc}: not installed")
        return
    for t in targets:
        if not (ir_dir / t).is_dir():
            continue
        failed_file = out / t / ".failed"
        failed = set(failed_file.read_text(encoding="utf-8").split()) if failed_file.exists() else set()
        todo = [ll.name[: -len(".ll")] for ll in sorted((ir_dir / t).glob("*.ll"))]
        todo = [k for k in todo if k not in failed and not (out / t / f"{k}.post.mir").exists()]
        if not todo:
            continue
        r = subprocess.run([sys.executable, "-m", "verilocc.llc.corpus", "--llc", llc, "--corpus", str(ir_dir),
                            "--out", str(out), "--targets", t, "--kernels", ",".join(todo), "-j", str(jobs)],
                           capture_output=True, text=True, check=False)
        made = [ln for ln in r.stdout.splitlines() if " pairs made" in ln]
        log(f"{llc} {t}: {made[-1] if made else r.stderr.strip()[-200:]}")
        (out / t).mkdir(parents=True, exist_ok=True)
        failed |= {k for k in todo if not (out / t / f"{k}.post.mir").exists()}
        failed_file.write_text("\n".join(sorted(failed)) + "\n", encoding="utf-8")
