"""The packages form layers that point down only, and no modules import each other in a cycle.

The order follows the data: which build of the core runs, errors and findings, target facts and
the llc driver that makes the pairs (standard library only), MIR, analyses, the pairing of the
two programs, the three checks, certificates, `verify`, then the clients (allocators, the
viewer, the batch runner, the language model, the fuzzer), the hunt for LLVM's bugs that uses
them, and the command line on top. A module may import from its own package or from a lower
layer; imports inside functions count too, because they are the same dependency made later.
Packages on one layer do not import each other.

Each command's options and handler live beside what it drives: a package's `commands` module,
or a top-level `*_command` module for a command that drives several packages. `verilocc.cli`
lists them in its table and imports them by name; nothing else imports them.
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
    "target": 2, "llc": 2,  # llc: runs llc to make pairs, for the hunt and the model's data alike
    "options": 2,  # the command-line options several commands share (--layers reads findings' names)
    "mir": 3,
    "analysis": 4,
    "pairing": 5,
    "smt": 6, "rewrite": 6,
    "semantics": 7,
    "certificate": 8,
    "verify": 9, "report": 9,
    "allocators": 10, "view": 10, "batch": 10,
    "llm": 11, "fuzz": 11,  # fuzz: its command runs the fuzzer's chunks on batch's runner
    "verify_command": 11,  # one pair, or a batch; a page of view on request
    "hunt": 12,  # makes pairs with llc's pair maker, allocates fuzz's programs
    "allocate_command": 12,  # the model loop of llm, or the SMT allocator
    "cli": 13, "__main__": 14,
}


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, package: Path = PACKAGE) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("verilocc"):
            out.add(node.module)
            for alias in node.names:  # `from verilocc.target import subregs` imports a module
                if (package / Path(*node.module.split(".")[1:]) / f"{alias.name}.py").exists():
                    out.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("verilocc"))
    return out


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _command_modules() -> set[str]:
    """The modules of the command table of `verilocc.cli` (imported by name, not by an import
    statement)."""
    from verilocc.cli import COMMANDS

    return {entry.split(":")[0] for entry in COMMANDS.values()}


def _graph() -> nx.DiGraph:
    g: nx.DiGraph = nx.DiGraph()
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = _module_name(path)
        g.add_node(mod)
        for dep in _imports(path):
            if dep != mod:
                g.add_edge(mod, dep)
    g.add_edges_from(("verilocc.cli", mod) for mod in _command_modules())
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


def test_only_the_command_line_imports_command_modules() -> None:
    """Every command module is in the table of `verilocc.cli` and exists, and only `verilocc.cli`
    imports one: a command's handler calls into packages, never into another command."""
    g = _graph()
    named = {m for m in g.nodes if m.rsplit(".", 1)[-1] == "commands" or m.endswith("_command")}
    assert _command_modules() == named, "list each command module in verilocc.cli.COMMANDS, and only those"
    importers = sorted(f"{mod} -> {dep}" for mod, dep in g.edges if dep in named and mod != "verilocc.cli")
    assert not importers, importers


def test_the_command_table_builds_every_command() -> None:
    """Each entry of the table adds the parser of the command it names, in the table's order."""
    from verilocc.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS)  # type: ignore[arg-type]
    for name in COMMANDS:
        one = next(a for a in build_parser(name)._actions if a.dest == "command")
        assert list(one.choices) == [name]  # type: ignore[arg-type]


def test_the_check_rejects_an_upward_import(tmp_path: Path) -> None:
    """The rule is not vacuous: an import from `mir` into `verify` is seen and ranked upward."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from verilocc.verify import Options\n")
    assert "verilocc.verify" in _imports(probe)
    assert LAYERS[_layer_of("verilocc.verify")] > LAYERS[_layer_of("verilocc.mir.parser")]


# --- the fuzzer's oracles do not use what they judge ------------------------------------------
# The concrete interpreter decides whether an allocation computes what its program computes,
# and the reference allocator and the generator make the "correct" answers; a shared helper
# with a bug would hide it on both sides (docs/fuzz.md, "What the oracles share with the
# verifier"). They, and every module of `verilocc.fuzz` they import, directly or inside a
# function, import nothing from the verifier's checks. Both sides read MIR with `verilocc.mir`
# (what keeps a parser bug from hiding there: docs/fuzz.md).
ORACLES = ("verilocc.fuzz.interpret", "verilocc.fuzz.refalloc", "verilocc.fuzz.generate")
JUDGED = ("verilocc.semantics", "verilocc.smt", "verilocc.analysis", "verilocc.pairing")


def _judged_imports(package: Path, roots: tuple[str, ...] = ORACLES) -> dict[str, list[str]]:
    """For each module an oracle reaches through `verilocc.fuzz` imports, what it imports from
    the verifier's checks."""
    root = package.parent
    imports = {_module_name(p, root): _imports(p, package) for p in sorted((package / "fuzz").rglob("*.py"))}
    seen, todo = set(roots), list(roots)
    while todo:
        for dep in imports.get(todo.pop(), ()):
            if dep in imports and dep not in seen:
                seen.add(dep)
                todo.append(dep)
    bad = {m: sorted(d for d in imports[m] if d.startswith(JUDGED)) for m in sorted(seen) if m in imports}
    return {m: deps for m, deps in bad.items() if deps}


def test_fuzz_oracles_share_nothing_with_the_verifier() -> None:
    assert set(ORACLES) <= {_module_name(p) for p in (PACKAGE / "fuzz").glob("*.py")}
    assert not _judged_imports(PACKAGE), _judged_imports(PACKAGE)


def test_the_oracle_check_sees_a_planted_import(tmp_path: Path) -> None:
    """The check is not vacuous: a copy of `verilocc/fuzz` where a helper the interpreter
    imports reaches into `verilocc.semantics` inside a function (what the interpreter once did
    for its bit-precise re-runs) is caught, through the import, and so is a direct one."""
    fuzz = tmp_path / "verilocc" / "fuzz"
    fuzz.mkdir(parents=True)
    for p in (PACKAGE / "fuzz").glob("*.py"):
        (fuzz / p.name).write_text(p.read_text())
    assert not _judged_imports(tmp_path / "verilocc")
    helper = fuzz / "meanings.py"
    helper.write_text(helper.read_text() + "\n\ndef real(ins):\n    from verilocc.semantics import bitvector\n"
                      "    return bitvector.meaning(ins)\n")
    assert _judged_imports(tmp_path / "verilocc") == {"verilocc.fuzz.meanings": ["verilocc.semantics"]}
    (fuzz / "interpret.py").write_text((fuzz / "interpret.py").read_text() + "\nimport verilocc.pairing.steps\n")
    assert _judged_imports(tmp_path / "verilocc")["verilocc.fuzz.interpret"] == ["verilocc.pairing.steps"]


# --- facts about instructions have one home ---------------------------------------------------
# What an instruction's opcode and operands decide by themselves (a move, spill code, a pure or
# removable definition, the inputs its value depends on) is defined once, in
# `verilocc.analysis.instructions`, below the pairing and the checks that use it. The pairing
# imports those names too, so `from verilocc.pairing.alignment import is_pure` would still run:
# no module, test or script takes them that way (the pairing's own modules neither).
FACTS = PACKAGE / "analysis" / "instructions.py"


def _top_level_names(path: Path) -> set[str]:
    """The names a module defines at its top level: functions, classes, assigned names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def _is_pairing(module: str) -> bool:
    return module == "verilocc.pairing" or module.startswith("verilocc.pairing.")


def _facts_through_pairing(path: Path, facts: set[str]) -> list[str]:
    """The facts `path` takes from `verilocc.pairing`, anywhere in it (inside functions too):
    imported by name (`from verilocc.pairing.alignment import is_pure`) or read from an
    imported pairing module (`from verilocc.pairing import alignment`, then
    `alignment.is_pure`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[str] = []
    modules: set[str] = set()  # what names a pairing module here: `alignment`, `verilocc.pairing.steps`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _is_pairing(node.module):
            for alias in node.names:
                if alias.name in facts:
                    out.append(f"{node.module}.{alias.name}")
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(alias.asname or alias.name for alias in node.names if _is_pairing(alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in facts and ast.unparse(node.value) in modules:
            out.append(f"{ast.unparse(node.value)}.{node.attr}")
    return out


def _facts_taken_from_pairing(root: Path = ROOT, facts: Path = FACTS) -> dict[str, list[str]]:
    """For each Python file of the checkout at `root`, the facts of `facts` it takes from the
    pairing."""
    names = _top_level_names(facts)
    files = [p for d in ("verilocc", "tests", "scripts", "bench") for p in sorted((root / d).rglob("*.py"))]
    found = {str(p.relative_to(root)): _facts_through_pairing(p, names) for p in files}
    return {f: hits for f, hits in found.items() if hits}


def test_instruction_facts_are_not_taken_from_the_pairing() -> None:
    assert {"MOVE_OPCODES", "SIDE_EFFECT_PREFIXES", "is_pure", "is_constant_def", "is_spill_code"} \
        <= _top_level_names(FACTS)
    assert not _facts_taken_from_pairing(), _facts_taken_from_pairing()


def test_instruction_facts_have_one_definition() -> None:
    """The pairing defines none of the facts again: it imports them."""
    facts = _top_level_names(FACTS)
    again = {p.name: sorted(facts & _top_level_names(p)) for p in sorted((PACKAGE / "pairing").rglob("*.py"))}
    assert not any(again.values()), again


def test_the_facts_check_sees_a_planted_import(tmp_path: Path) -> None:
    """The check is not vacuous: an import of a fact from the pairing by name, inside a
    function, and a fact read from an imported pairing module are each seen; a name of the
    pairing's own is not."""
    facts = _top_level_names(FACTS)
    probe = tmp_path / "probe.py"
    probe.write_text("from verilocc.pairing.alignment import Role, align_functions\n\n\n"
                     "def f(ins):\n    from verilocc.pairing.alignment import is_pure\n    return is_pure(ins, False)\n\n\n"
                     "def g(ins):\n    from verilocc.pairing import alignment\n"
                     "    return ins.opcode in alignment.MOVE_OPCODES or alignment.Role\n")
    assert _facts_through_pairing(probe, facts) == ["verilocc.pairing.alignment.is_pure", "alignment.MOVE_OPCODES"]
