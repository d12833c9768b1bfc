"""`certcheck` shares no code with verilocc: no file of it imports verilocc (its AST, every
import statement, also inside functions), and it stays small enough to read in a day."""

from __future__ import annotations

import ast

from .conftest import ROOT

CERTCHECK = ROOT / "certcheck"


def _imports(path: object) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "__import__", "import_module"):
            out += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out


def test_certcheck_imports_nothing_of_verilocc() -> None:
    files = sorted(CERTCHECK.rglob("*.py"))
    assert len(files) >= 5
    bad = {str(p.relative_to(ROOT)): m for p in files for m in _imports(p)
           if m.split(".")[0] == "verilocc" or m.startswith("..")}
    assert not bad


def test_the_scan_sees_an_import_of_verilocc(tmp_path: object) -> None:
    p = tmp_path / "x.py"  # type: ignore[operator]
    p.write_text("def f():\n    from verilocc.mir import parser\n    import verilocc\n    __import__('verilocc.x')\n")
    assert _imports(p) == ["verilocc.mir", "verilocc", "verilocc.x"]


def test_certcheck_is_small() -> None:
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in CERTCHECK.rglob("*.py"))
    assert lines <= 2500
