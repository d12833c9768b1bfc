"""The verifier says the same about every known pair and its seeded mutants as the snapshot.

`tests/fixtures/snapshot/findings.json` holds, for every pair of the repository's fixtures and
of `../shared/corpus`, and for one seeded mutant per mutation operator of each pair up to 1,500
lines, the verdict and every finding (layer, kind, place, message). A change that is meant to
keep what the verifier says (a refactoring, a speed-up) must leave it equal; a change that is
meant to change it re-makes the snapshot and shows the difference in review:

    python scripts/findings_snapshot.py --corpus ../shared/corpus -j 2 -o tests/fixtures/snapshot/findings.json
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import CORPUS, ROOT, script

SNAPSHOT = ROOT / "tests" / "fixtures" / "snapshot" / "findings.json"
ROOTS = {"fixtures": ROOT / "tests" / "fixtures", "examples": ROOT / "examples", "corpus": CORPUS}


def _script() -> ModuleType:
    return script("findings_snapshot")


@cache
def _snapshot() -> dict[str, object]:
    return dict(json.loads(SNAPSHOT.read_text()))


def _pairs() -> list[str]:
    return sorted(k for k in _snapshot() if "#" not in k)


@pytest.mark.parametrize("name", _pairs())
def test_findings_are_unchanged(name: str) -> None:
    root, _, rel = name.partition("/")
    base = ROOTS[root] / rel
    post, pre = Path(f"{base}.post.mir"), Path(f"{base}.pre.mir")
    if not post.exists():
        pytest.skip(f"{post} is not here (../shared/corpus is optional)")
    want = {k: v for k, v in _snapshot().items() if k == name or k.startswith(name + "#")}
    got = _script().entries(name, post, pre, mutants=1)
    assert got == want


def test_the_snapshot_covers_every_fixture_pair() -> None:
    known = set(_pairs())
    pairs = [name for name, _, _ in _script().pairs([ROOTS["fixtures"]])]
    assert pairs and not set(pairs) - known, sorted(set(pairs) - known)
