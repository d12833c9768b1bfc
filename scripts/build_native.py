"""Compile the verifier's core (`verilocc.native.MODULES`) with mypyc, in place.

    python scripts/build_native.py [--if-stale | --clean]

Writes one extension module beside each source, a shared library of the build
(`verilocc/native__mypyc...so`) and `verilocc/native-build.json` (the sources' hashes, which
`verilocc.native` compares before it uses the build). Intermediate files go to
`build/native/`. Needs mypy (which has mypyc) and a C compiler; without them it says so and
exits 1, and verilocc runs its sources as they are. `--if-stale` builds only when there is no
build of the current sources; `--clean` removes a build.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["VERILOCC_PURE"] = "1"  # this process reads the sources, not a build

from verilocc import native  # noqa: E402

WORK = ROOT / "build" / "native"
GROUP = "verilocc.native"  # the shared library: verilocc/native__mypyc.*.so


def built_files() -> list[Path]:
    """Every extension module in the package (it has none but a build's)."""
    out = [p for suffix in importlib.machinery.EXTENSION_SUFFIXES for p in Path(native.PACKAGE).rglob(f"*{suffix}")]
    return sorted(set(out))


def clean() -> None:
    for p in built_files():
        p.unlink()
    Path(native.BUILD_RECORD).unlink(missing_ok=True)


def build() -> int:
    if importlib.util.find_spec("mypyc") is None or importlib.util.find_spec("setuptools") is None:
        print("note: the verifier's core runs uncompiled: mypyc is not installed "
              "(pip install mypy, then python scripts/build_native.py)", file=sys.stderr)
        return 1
    if shutil.which(os.environ.get("CC", "cc")) is None:
        print("note: the verifier's core runs uncompiled: no C compiler (cc) to build it with", file=sys.stderr)
        return 1
    clean()
    hashes = native.source_hashes()  # before compiling: what the build is of
    paths = [str(Path(native.source(m)).relative_to(ROOT)) for m in native.MODULES]
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypyc names modules by their paths from here
    try:
        _compile(paths)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - mypy's, setuptools' or the compiler's: one line
        clean()
        print(f"note: the verifier's core runs uncompiled: its build failed ({type(e).__name__}: {e})", file=sys.stderr)
        return 1
    finally:
        os.chdir(cwd)
    if native.source_hashes() != hashes:
        clean()
        print("error: a source changed while it was compiled; run again", file=sys.stderr)
        return 1
    record = {"python": sys.implementation.cache_tag, "sources": hashes}
    Path(native.BUILD_RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"compiled {len(native.MODULES)} modules of the verifier's core")
    return 0


def _compile(paths: list[str]) -> None:
    """mypyc's C for `paths` (from the checkout's root), compiled beside the sources."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK) as cache:
        os.environ["MYPY_CACHE_DIR"] = cache
        modules = mypycify(["--config-file", str(ROOT / "pyproject.toml"), *paths], opt_level="3",
                           target_dir=str(WORK / "c"), group_name=GROUP)
    dist = Distribution({"name": "verilocc-native", "ext_modules": modules})
    cmd = dist.get_command_obj("build_ext")
    cmd.inplace = True  # type: ignore[attr-defined]
    cmd.build_temp = str(WORK / "temp")  # type: ignore[attr-defined]
    cmd.build_lib = str(WORK / "lib")  # type: ignore[attr-defined]
    cmd.parallel = os.cpu_count() or 1  # type: ignore[attr-defined]
    dist.run_command("build_ext")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--if-stale", action="store_true", help="build only if the sources changed or were never built")
    what.add_argument("--clean", action="store_true", help="remove the build")
    args = ap.parse_args()
    if args.clean:
        clean()
        return 0
    if args.if_stale and native.state(honour_env=False) == "compiled":
        return 0
    return build()


if __name__ == "__main__":
    sys.exit(main())
