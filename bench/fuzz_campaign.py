"""The long fuzz run, kept in bench/fuzz_campaign.json, part by part.

    python bench/fuzz_campaign.py                      # table; examples on the current verifier
    python bench/fuzz_campaign.py add LABEL COMMIT CHUNK.json ...
                                                       # record `verilocc fuzz` summaries as parts

A run is made of chunks, `verilocc fuzz --examples N --seed S --jobs 2` (or `--dask --jobs N`,
`--scheduler tcp://HOST:PORT`: the same examples and summary) with consecutive seeds (one seed
per four targets), so chunks run at different times add up to one run. A part
counts for the verifier of today only if `verilocc/` at its commit is today's `verilocc/` up to
whitespace (`git diff -w --ignore-blank-lines`; packages neither imports, `NOT_RUN`, aside): a
change to the verifier or to the fuzzer
makes earlier parts evidence about older code. The one exception is a link in the campaign's
`same_examples` list: a change confined to the fuzzer, its runners (`verilocc/batch/`: worker
processes, Dask) and the command line (`FUZZER`, checked here; the campaign reaches the
verifier through `verify_modules`, which none of them is part of)
after which `verilocc fuzz` generates the same examples for the four targets (the link's
`evidence`, for example equal hashes of every program, allocation and mutant for a range of
seeds). A link may also name verifier files (`verifier_files`) whose change cannot reach any
example the campaign hands to the verifier: its `argument` says why (for example, the change is
confined to opcodes the fuzzer never writes), and its `evidence` is a chunk run again on the
later commit printing the same bytes. The clean run is the trailing stretch of counted parts with
no disagreement.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ROOT / "bench" / "fuzz_campaign.json"
TARGETS = 4  # gfx908, gfx90a, gfx942, gfx1100: one seed per four examples
FUZZER = ("verilocc/fuzz/", "verilocc/batch/", "verilocc/cli.py", "verilocc/options.py", "verilocc/verify_command.py",
          "verilocc/certificate/commands.py", "verilocc/rewrite/commands.py")  # the command line: table and commands
# Packages neither the verifier nor `verilocc fuzz` imports (tests/test_layers.py keeps it so):
# a change there cannot change what a chunk generates or what the verifier says.
NOT_RUN = ("verilocc/allocators/", "verilocc/llm/", "verilocc/view/", "verilocc/hunt/", "verilocc/allocate_command.py")


def changed(a: str, b: str | None) -> list[str]:
    """Files under `verilocc/` (outside NOT_RUN) that differ beyond whitespace between commits
    `a` and `b` (None: the working tree); `verilocc/` itself when either is not a commit (a part recorded
    as "before 210e3d5")."""
    # --name-only would list whitespace-only changes too; the patch leaves them out.
    diff = subprocess.run(["git", "diff", "--no-color", "-U0", "-w", "--ignore-blank-lines", a, *([b] if b else []),
                           "--", "verilocc/", *(f":(exclude){p}" for p in NOT_RUN)],
                          cwd=ROOT, capture_output=True, text=True)
    if diff.returncode:
        return ["verilocc/"]
    return [ln.split(" b/", 1)[1] for ln in diff.stdout.splitlines() if ln.startswith("diff --git a/")]


def same_verifier(commit: str, links: list[dict[str, object]]) -> bool:
    """`verilocc/` at `commit` is the working tree's up to whitespace, directly or through
    `same_examples` links whose changes stay inside the FUZZER files and the link's own
    `verifier_files`."""
    if not changed(commit, None):
        return True

    def allowed(link: dict[str, object]) -> tuple[str, ...]:
        return FUZZER + tuple(str(f) for f in link.get("verifier_files", []))  # type: ignore[union-attr]

    return any(not changed(commit, str(link["from"])) and all(f.startswith(allowed(link)) for f in changed(
        str(link["from"]), str(link["to"]))) and same_verifier(str(link["to"]), [k for k in links if k is not link])
        for link in links)


def first_seed(part: dict[str, object]) -> int:
    seed = part.get("seed", part.get("seeds"))
    return int(str(seed).split("-")[0])


def add(label: str, commit: str, chunks: list[str]) -> None:
    campaign = json.loads(CAMPAIGN.read_text())
    for chunk in chunks:
        summary = json.loads(Path(chunk).read_text())
        campaign["parts"].append({
            "part": label,
            "seed": summary["seed"], "verifier": commit, "examples": summary["examples"],
            "verdicts": summary["verdicts"], "disagreements": summary["disagreements"],
            "saved": [Path(p).name for p in summary["saved"]],
        })
    campaign["parts"].sort(key=first_seed)
    campaign["examples"] = sum(int(p["examples"]) for p in campaign["parts"])
    CAMPAIGN.write_text(json.dumps(campaign, indent=1) + "\n")


def report() -> None:
    campaign = json.loads(CAMPAIGN.read_text())
    parts, links = campaign["parts"], campaign.get("same_examples", [])
    print("| part | seeds | verifier | examples | disagreements | verilocc/ as now |")
    print("|---|---|---|---:|---|---|")
    clean, verdicts = 0, Counter[str]()
    for p in parts:
        now = same_verifier(p["verifier"], links)
        last = first_seed(p) + (p["examples"] + TARGETS - 1) // TARGETS - 1
        dis = ", ".join(f"{n} {k}" for k, n in sorted(p["disagreements"].items())) or "0"
        print(f"| {p['part']} | {first_seed(p)}-{last} | {p['verifier']} | {p['examples']:,} | {dis} | "
              f"{'yes' if now else 'no'} |")
        if now and not p["disagreements"]:
            clean += p["examples"]
            verdicts.update(p["verdicts"])
        else:
            clean, verdicts = 0, Counter()
    end = max(first_seed(p) + p["examples"] // TARGETS for p in parts)
    print(f"\nclean run on today's verilocc/: {clean:,} examples, {verdicts.total():,} verifier calls, 0 disagreements")
    for kind, n in sorted(verdicts.items()):
        print(f"  {kind}: {n:,}")
    print(f"continue: verilocc fuzz --examples 4000 --seed {end} --jobs 2")


if __name__ == "__main__":
    if sys.argv[1:2] == ["add"] and len(sys.argv) >= 5:
        add(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) > 1:
        sys.exit(__doc__)
    report()
