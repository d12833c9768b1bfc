"""Pairs the fuzzer found and minimised (tests/fixtures/fuzz/): each stays fixed.

A pair whose note (`<name>.txt`) says `unsound` is a wrong allocation the verifier once
VERIFIED: it must not be VERIFIED. Every other pair is a correct allocation (the concrete
interpreter agrees with its program) that the verifier once rejected: it must be VERIFIED;
a note starting with `open` marks one not fixed yet: it is checked all the same and is an
expected failure while the verifier still gets it wrong (`open unsound: ...` for a mutant of
an operator in `oracle.OPEN_MUTATIONS`). A pair the fuzzer saved with a note `oracle-bug` or
`crash` fails until someone looks at it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verilocc.findings import Verdict

from .conftest import FIXTURES, verify_pair

# `verilocc fuzz --save` writes new ones to tests/fixtures/fuzz/found/ (shrunk): they run too.
PAIRS = sorted((FIXTURES / "fuzz").rglob("*.post.mir"))


@pytest.mark.parametrize("post", PAIRS, ids=[p.name[: -len(".post.mir")] for p in PAIRS])
def test_fuzz_regression(post: Path) -> None:
    pre = post.with_name(post.name.replace(".post.mir", ".pre.mir"))
    note = post.with_name(post.name.replace(".post.mir", ".txt"))
    text = note.read_text() if note.exists() else ""
    is_open = text.startswith("open")
    kind = text.removeprefix("open").strip()
    if kind.startswith(("oracle-bug", "crash")):
        pytest.fail(text.strip())  # the fuzz oracles themselves, or a traceback: look at it
    unsound = kind.startswith("unsound")
    verdict = verify_pair(post, pre).verdict
    holds = verdict is not Verdict.VERIFIED if unsound else verdict is Verdict.VERIFIED
    if is_open and not holds:
        pytest.xfail(text.strip())  # a known verifier bug: next to fix
    assert holds, (verdict, text.strip())


# Each fix that made a pair above VERIFIED accepts more programs; a wrong neighbour of the
# pair, one textual edit away, must still be REJECTED.
WRONG_NEIGHBOURS = {
    "loop-constant-redef: the constant stored from the first iteration on": ("loop-constant-redef", [(
        "pre",
        "    %5:vreg_64 = COPY %0\n    %0:sgpr_64 = S_MOV_B64 3\n",
        "    %0:sgpr_64 = S_MOV_B64 3\n    %5:vreg_64 = COPY %0\n",
    )]),
    "loop-constant-redef: copy after the redefinition": ("loop-constant-redef", [(
        "post",
        "    renamable $vgpr2_vgpr3 = COPY killed renamable $sgpr0_sgpr1\n    renamable $sgpr0_sgpr1 = S_MOV_B64 3\n",
        "    renamable $sgpr0_sgpr1 = S_MOV_B64 3\n    renamable $vgpr2_vgpr3 = COPY killed renamable $sgpr0_sgpr1\n",
    )]),
    "remat-forgets-copy: copy of the wrong lane before the rematerialisation": ("remat-forgets-copy", [(
        "post",
        "renamable $vgpr2 = COPY killed renamable $sgpr1\n",
        "renamable $vgpr2 = COPY killed renamable $sgpr2\n",
    )]),
    "remat-forgets-copy: the copied lane overwritten before the copy": ("remat-forgets-copy", [(
        "post",
        "    renamable $vgpr2 = COPY killed renamable $sgpr1\n",
        "    renamable $sgpr1 = COPY renamable $sgpr0\n    renamable $vgpr2 = COPY killed renamable $sgpr1\n",
    )]),
    "remat-stale-dependency: the partial redefinition written to the other half": ("remat-stale-dependency", [(
        "post",
        "    renamable $sgpr4 = S_MOV_B32 -2147483648\n",
        "    renamable $sgpr5 = S_MOV_B32 -2147483648\n",
    )]),
    "coalesced-input-copy: %0 read from where it lives later, not where it is now": ("coalesced-input-copy", [(
        "post",
        "renamable $vgpr2_vgpr3 = COPY renamable $sgpr4_sgpr5\n",
        "renamable $vgpr2_vgpr3 = COPY renamable $sgpr6_sgpr7\n",
    )]),
    "dead-def-deleted: a deleted def whose value is stored": ("dead-def-deleted", [(
        "pre",
        "    dead %18:sreg_64 = S_LSHL_B64 %5, %0.sub0, implicit-def dead $scc\n",
        "    dead %18:sreg_64 = S_LSHL_B64 %5, %0.sub0, implicit-def dead $scc\n"
        "    %500:sreg_32 = S_AND_B32 %0.sub0, %0.sub0, implicit-def dead $scc\n"
        "    S_STORE_DWORD_IMM %500, %0, 0, 0 :: (store (s32), addrspace 1)\n",
    ), (
        "post",
        "killed renamable $sgpr4, implicit-def dead $scc\n",
        "renamable $sgpr4, implicit-def dead $scc\n"
        "    S_STORE_DWORD_IMM renamable $sgpr4, renamable $sgpr4_sgpr5, 0, 0 :: (store (s32), addrspace 1)\n",
    )]),
}


@pytest.mark.parametrize("case", WRONG_NEIGHBOURS)
def test_wrong_neighbour_rejected(case: str, tmp_path: Path) -> None:
    name, edits = WRONG_NEIGHBOURS[case]
    files = {s: FIXTURES / "fuzz" / f"{name}.{s}.mir" for s in ("pre", "post")}
    texts = {s: f.read_text() for s, f in files.items()}
    for side, old, new in edits:
        assert old in texts[side]
        texts[side] = texts[side].replace(old, new, 1)
        files[side] = tmp_path / files[side].name
        files[side].write_text(texts[side])
    report = verify_pair(files["post"], files["pre"])
    assert report.verdict is Verdict.REJECTED, [f.message for f in report.findings]
    assert not [f for f in report.findings if "dropped" in f.kind or "added" in f.kind]
