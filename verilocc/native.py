"""The compiled core: the verifier's hot modules built by mypyc, used only while they are the
sources' own build.

`make install` (`scripts/build_native.py`) compiles `MODULES` with mypyc into extension modules
beside their sources and writes `BUILD_RECORD`: the sha256 of every source it compiled. Python
imports an extension module before a source file of the same name, so the compiled modules are
used as they are while every source still has the hash it had when built. When any has changed
(a source edited, another checkout's build copied in), when the build record is missing, when
another extension module lies in the package, or when `VERILOCC_PURE=1` is set, every module of
the package is imported from its source: never some compiled and some not, since compiled
modules of one build call each other directly. Both run the same source, so they give the same
verdicts, findings and bytes out; the compiled modules check the sources' type annotations as
they run.

`install()` (when the package is imported) only puts the finder first; the hashes are compared
when the first module of `MODULES` is imported, so a command that imports none of them (`verify
--help`) does not pay for it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

PACKAGE = os.path.dirname(os.path.abspath(__file__))
BUILD_RECORD = os.path.join(PACKAGE, "native-build.json")

# The modules every verification runs through, parsing to equivalence. Modules whose classes
# cache in instances (`functools.cached_property`: `target.registers`, `target.classes`), or
# that mostly wait on z3 (`smt.solver`), stay interpreted.
MODULES = (
    "verilocc.mir.model",
    "verilocc.mir.header",
    "verilocc.mir.body",
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
    "verilocc.analysis.instructions",
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
    "verilocc.semantics.holdings",
    "verilocc.semantics.valuenames",
    "verilocc.semantics.lanetrace",
    "verilocc.semantics.anomalies",
    "verilocc.semantics.valueflow",
    "verilocc.semantics.obligations",
    "verilocc.semantics.equivalence",
    "verilocc.semantics.calleesaved",
)
SHARED_LIBRARY = "verilocc.native__mypyc"  # the build's runtime, which its modules import
_EXTENSIONS = tuple(importlib.machinery.EXTENSION_SUFFIXES)  # this interpreter's, the tagged one first


def source(module: str) -> str:
    """The source file of a module of the package."""
    return os.path.join(os.path.dirname(PACKAGE), *module.split(".")) + ".py"


def source_hashes(modules: Sequence[str] = MODULES) -> dict[str, str]:
    import hashlib

    out = {}
    for m in modules:
        with open(source(m), "rb") as f:
            out[m] = hashlib.sha256(f.read()).hexdigest()
    return out


def extension_modules() -> set[str]:
    """The modules of the package that an extension module of this interpreter would provide."""
    out = set()
    folders = [("verilocc", PACKAGE)] + [(f"verilocc.{e.name}", e.path) for e in os.scandir(PACKAGE) if e.is_dir()]
    for prefix, folder in folders:
        for entry in os.scandir(folder):
            suffix = next((s for s in _EXTENSIONS if entry.name.endswith(s)), None)
            if suffix is not None:
                out.add(f"{prefix}.{entry.name[:-len(suffix)]}")
    return out


def state(honour_env: bool = True) -> str:
    """"compiled", "pure" (`VERILOCC_PURE=1`, unless not `honour_env`), "stale" (a source
    changed since the build) or "not built" (no build, or not all of it: its record, this
    interpreter's extension modules, exactly `MODULES` and their runtime)."""
    if honour_env and os.environ.get("VERILOCC_PURE") == "1":
        return "pure"
    import json

    try:
        with open(BUILD_RECORD, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return "not built"
    if record.get("python") != sys.implementation.cache_tag or extension_modules() != {*MODULES, SHARED_LIBRARY}:
        return "not built"
    return "compiled" if record.get("sources") == source_hashes() else "stale"


class _Finder:
    """First on `sys.meta_path`: a module of the package comes from its `.py` file unless the
    build is this source's own (`state`, decided at the first import of one of `MODULES`)."""

    def __init__(self) -> None:
        self.state: str | None = None
        self.extensions: set[str] | None = None

    def decided(self) -> str:
        if self.state is None:
            self.state = state()
        return self.state

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith("verilocc."):
            return None
        if fullname in MODULES:
            if self.decided() == "compiled":
                return None  # the extension module, found as usual
        else:
            if self.extensions is None:
                self.extensions = extension_modules()
            if fullname not in self.extensions:
                return None  # no extension module beside it: found as usual
        file = source(fullname)
        return importlib.util.spec_from_file_location(fullname, file) if os.path.isfile(file) else None


def _finder() -> _Finder:
    found = next((f for f in sys.meta_path if isinstance(f, _Finder)), None)
    if found is None:
        found = _Finder()
        sys.meta_path.insert(0, found)
    return found


def install() -> None:
    """Put the finder first (once); called when the package is imported."""
    _finder()


def current() -> str:
    """The state this process runs its core in (`state`, decided once)."""
    return _finder().decided()
