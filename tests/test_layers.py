"""The packages form layers that point down only, and no modules import each other in a cycle.

The order follows the data (STYLE.md): which build of the core runs, errors and findings, target facts, MIR, analyses, the
pairing of the two programs, the three checks, certificates, `verify`, then the clients
(allocators, the language model, the fuzzer, the viewer), the hunt for LLVM's bugs that uses
them, and the command line on top. A
module may import from its own package or from a lower layer; imports inside functions count
too, because they are the same dependency made later.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from .conftest import ROOT

PACKAGE = ROOT / "verilocc"

# Lower number = lower layer. A package or top-level module missing here fails the test, so a
# new one must be placed deliberately.
LAYERS: dict[str, int] = {
    "native": -1,  # whether the compiled core runs: settled when the package is imported
    "__init__": 0, "errors": 0, "output": 1, "findings": 1,
    "target": 2,
    "mir": 3,
    "analysis": 4,
    "pairing": 5,
    "smt": 6, "rewrite": 6,
    "semantics": 7,
    "certificate": 8,
    "verify": 9, "report": 9,
    "allocators": 10, "view": 10,
    "llm": 11, "fuzz": 11, "batch": 11,
    "hunt": 12,  # makes pairs with llm's pair maker, allocates fuzz's programs
    "cli": 13, "__main__": 14,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("verilocc"):
            out.add(node.module)
            for alias in node.names:  # `from verilocc.target import subregs` imports a module
                if (PACKAGE / Path(*node.module.split(".")[1:]) / f"{alias.name}.py").exists():
                    out.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("verilocc"))
    return out


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph() -> nx.DiGraph:
    g: nx.DiGraph = nx.DiGraph()
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = _module_name(path)
        g.add_node(mod)
        for dep in _imports(path):
            if dep != mod:
                g.add_edge(mod, dep)
    return g


def test_every_package_has_a_layer() -> None:
    missing = sorted({_layer_of(m) for m in _graph().nodes} - set(LAYERS))
    assert not missing, f"place these in LAYERS: {missing}"


def test_imports_point_down() -> None:
    upward = []
    for mod, dep in _graph().edges:
        a, b = _layer_of(mod), _layer_of(dep)
        if a != b and LAYERS.get(b, 99) >= LAYERS.get(a, 99):
            upward.append(f"{mod} -> {dep}")
    assert not upward, upward


def test_no_import_cycles() -> None:
    cycles = list(nx.simple_cycles(_graph()))
    assert not cycles, cycles[:5]


def test_the_check_rejects_an_upward_import(tmp_path: Path) -> None:
    """The rule is not vacuous: an import from `mir` into `verify` is seen and ranked upward."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from verilocc.verify import Options\n")
    assert "verilocc.verify" in _imports(probe)
    assert LAYERS[_layer_of("verilocc.verify")] > LAYERS[_layer_of("verilocc.mir.parser")]
