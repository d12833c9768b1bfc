"""What a hunt allocates: LLVM IR files, HIP kernels compiled by a clang, fuzzer programs.

An `Input` is one file with a name that is unique within the hunt (the names of the output
files and table rows) and, for inputs made for one processor (HIP kernels compiled with
`--offload-arch`, fuzzer programs), the one target it may be allocated for.
- `.ll` files, given one by one or as directories (every `*.ll` below, sorted); an IR file
  whose functions all name one `"target-cpu"` (clang's output) is allocated for that target only
  (the attribute would override `-mcpu` anyway); one whose `RUN:` lines choose an allocator
  (`-sgpr-regalloc=fast`...) is allocated with that one too, as its test runs;
- pre-RA `.mir` files, given one by one or as directories without `.ll` files (every
  `*.pre.mir` below): allocated from their text only;
- `hip_inputs`: the kernels of a manifest (`verilocc.llc.hip.compile_hip`), one `.ll`
  per kernel and target;
- `fuzz_inputs`: programs of the fuzzer's generator (`verilocc.fuzz.generate`), written as
  pre-RA MIR for the fuzzer's targets among the hunt's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from verilocc.errors import InputError


@dataclass(frozen=True)
class Input:
    name: str
    path: Path
    target: str | None = None  # the only target it may be allocated for
    allocators: tuple[str, ...] = ()  # allocators its RUN lines ask for, besides the hunt's

    @property
    def is_mir(self) -> bool:
        return self.path.suffix == ".mir"


def _name(path: Path) -> str:
    name = path.name
    for suffix in (".pre.mir", ".mir", ".ll"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def file_inputs(paths: list[Path]) -> list[Input]:
    """The `.ll` and pre-RA `.mir` files named or found below the named directories."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.ll") if q.is_file()) or \
                sorted(q for q in p.rglob("*.pre.mir") if q.is_file())
            if not found:
                raise InputError(f"no .ll or .pre.mir file below {p}", str(p), 0, 0)
            files.extend(found)
        elif p.is_file():
            if p.suffix not in (".ll", ".mir"):
                raise InputError("an input is LLVM IR (.ll) or pre-RA MIR (.mir)", str(p), 0, 0)
            files.append(p)
        else:
            raise InputError("no such file or directory", str(p), 0, 0)
    return unique_names([Input(_name(f), f, _target_cpu(f), _run_allocators(f)) for f in files])


RUN_ALLOCATOR = re.compile(r"^\s*[;#]\s*RUN:.*?-(?:sgpr-|vgpr-|wwm-)?regalloc=(greedy|fast|basic)\b", re.M)


def _run_allocators(path: Path) -> tuple[str, ...]:
    """The allocators the file's `RUN:` lines choose."""
    return tuple(sorted(set(RUN_ALLOCATOR.findall(path.read_text(errors="replace")))))


TARGET_CPU = re.compile(r'"target-cpu"="(gfx[0-9a-z-]+)"')


def _target_cpu(path: Path) -> str | None:
    """The one processor an IR file's functions name, if they name exactly one."""
    if path.suffix != ".ll":
        return None
    names = set(TARGET_CPU.findall(path.read_text(errors="replace")))
    return names.pop() if len(names) == 1 else None


def unique_names(inputs: list[Input]) -> list[Input]:
    """Inputs whose names are made unique by as many parent directories as it takes
    (`15/gfx90a/vadd` and `16/gfx90a/vadd` become `15.gfx90a.vadd` and `16.gfx90a.vadd`);
    files of one directory with the same stem keep their suffix (`x.ll`, `x.mir`)."""
    def leaf(i: Input) -> str:
        twin = any(o.path != i.path and o.name == i.name and o.path.parent == i.path.parent for o in inputs)
        return i.name + i.path.suffix if twin else i.name

    def name(i: Input, depth: int) -> str:
        parents = [p.name for p in list(i.path.parents)[:depth]][::-1]
        return ".".join([*parents, leaf(i)])

    out = []
    for i in inputs:
        depth = 0
        while depth < len(i.path.parents) and any(
                o is not i and name(o, depth) == name(i, depth) for o in inputs):
            depth += 1
        out.append(Input(name(i, depth), i.path, i.target, i.allocators))
    return out


def hip_inputs(hip: Path, clang: str, targets: list[str], kernels: list[str] | None, out: Path,
               timeout: float) -> tuple[list[Input], list[str]]:
    """The kernels of `hip/manifest.txt` (those matching `kernels`, shell patterns, if given)
    compiled by `clang` for each target: one input per kernel and target (names
    `<kernel>@<target>`), and the kernels clang failed on."""
    import shutil

    from verilocc.llc.hip import compile_hip

    manifest = hip / "manifest.txt"
    if not manifest.is_file():
        raise InputError("no manifest.txt in the kernel directory", str(hip), 0, 0)
    exe = shutil.which(clang) or clang
    jobs, failed = compile_hip(exe, hip.resolve(), manifest.resolve(), targets, kernels, out.resolve(), timeout)
    return [Input(f"{j.kernel}@{j.target}", j.ll, j.target) for j in jobs], failed


def fuzz_inputs(count: int, seed: int, targets: list[str], out: Path) -> list[Input]:
    """`count` generated programs per fuzzer target among `targets`, seeds `seed`, `seed+1`...,
    written to `out/<target>-<seed>.pre.mir` (only when their text changes)."""
    from verilocc.fuzz.generate import random_program
    from verilocc.fuzz.profiles import ALL_TARGETS
    from verilocc.llc.text import write_if_changed

    made = []
    for target in [t for t in targets if t in ALL_TARGETS]:
        for s in range(seed, seed + count):
            path = out / f"{target}-{s}.pre.mir"
            write_if_changed(path, random_program(target, s).text)
            made.append(Input(f"fuzz-{target}-{s}", path, target))
    return made
