"""The compiled core: the verifier's hot modules built by mypyc, used only while they are the
sources' own build.

`make install` (`scripts/build_native.py`) compiles `MODULES` with mypyc into extension modules
beside their sources and writes `BUILD_RECORD`: the sha256 of every source it compiled. Python
imports an extension module before a source file of the same name, so the compiled modules are
used as they are, at no cost, while every source still has the hash it had when built. When any
has changed (a source edited, another checkout's build copied in), when the build record is
missing, or when `VERILOCC_PURE=1` is set, `install()` puts a finder first that imports every
module of the package from its source: never some compiled and some not, since compiled
modules of one build call each other directly. Both run the same source, so they give the same verdicts,
findings and bytes out; the compiled modules check the sources' type annotations as they run.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
BUILD_RECORD = PACKAGE / "native-build.json"

# The modules every verification runs through, parsing to equivalence. Modules whose classes
# patch themselves (`mir.model`) or cache in instances (`functools.cached_property`:
# `target.registers`, `target.classes`), or that mostly wait on z3 (`smt.solver`), stay
# interpreted.
MODULES = (
    "verilocc.mir.parser",
    "verilocc.target.subregs",
    "verilocc.target.limits",
    "verilocc.analysis.cfg",
    "verilocc.analysis.operands",
    "verilocc.analysis.executed",
    "verilocc.analysis.calls",
    "verilocc.analysis.liveness",
    "verilocc.analysis.interference",
    "verilocc.analysis.intervals",
    "verilocc.analysis.undefined",
    "verilocc.analysis.usage",
    "verilocc.analysis.vector_operands",
    "verilocc.analysis.wholewave",
    "verilocc.pairing.steps",
    "verilocc.pairing.alignment",
    "verilocc.pairing.blocks",
    "verilocc.pairing.homes",
    "verilocc.smt.formulas",
    "verilocc.smt.constraints",
    "verilocc.smt.physical",
    "verilocc.semantics.terms",
    "verilocc.semantics.ops",
    "verilocc.semantics.interpretation",
    "verilocc.semantics.valueflow",
    "verilocc.semantics.equivalence",
    "verilocc.semantics.calleesaved",
)


SHARED_LIBRARY = "verilocc.native__mypyc"  # the build's runtime, which its modules import


def source(module: str) -> Path:
    """The source file of a module of the package."""
    return PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")


def source_hashes(modules: Sequence[str] = MODULES) -> dict[str, str]:
    return {m: hashlib.sha256(source(m).read_bytes()).hexdigest() for m in modules}


def extension_modules() -> set[str]:
    """The modules of the package that an extension module of this interpreter would provide."""
    out = set()
    for folder in (PACKAGE, *(p for p in PACKAGE.iterdir() if p.is_dir())):
        prefix = ".".join(("verilocc", *folder.relative_to(PACKAGE).parts))
        for entry in os.scandir(folder):
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:  # the tagged one first
                if entry.name.endswith(suffix):
                    out.add(f"{prefix}.{entry.name[:-len(suffix)]}")
                    break
    return out


def state(honour_env: bool = True) -> str:
    """"compiled", "pure" (`VERILOCC_PURE=1`, unless not `honour_env`), "stale" (a source
    changed since the build) or "not built" (no build, or not all of it: its record, this
    interpreter's extension modules, exactly `MODULES` and their runtime)."""
    if honour_env and os.environ.get("VERILOCC_PURE") == "1":
        return "pure"
    try:
        record = json.loads(BUILD_RECORD.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "not built"
    if record.get("python") != sys.implementation.cache_tag or extension_modules() != {*MODULES, SHARED_LIBRARY}:
        return "not built"
    return "compiled" if record.get("sources") == source_hashes() else "stale"


class _FromSource:
    """A finder (`sys.meta_path`) that imports every module of the package that has a `.py`
    file from that file, whatever extension module lies beside it."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith("verilocc.") or not (file := source(fullname)).is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, file)


def install() -> str:
    """Use the compiled modules only when they are this source's build (`state`); returns the
    state. Called once, when the package is imported."""
    got = state()
    if got != "compiled" and not any(isinstance(f, _FromSource) for f in sys.meta_path):
        sys.meta_path.insert(0, _FromSource())
    return got
