"""The pairs of a batch: `X.post.mir` beside `X.pre.mir` under a directory, or a manifest.

A manifest is a text file with one pair per line, `POST PRE` (whitespace-separated paths,
relative to the manifest's own directory unless absolute); `#` starts a comment, blank lines
are skipped. A pair is named after its post-RA file without `.post.mir` (relative to the
directory, or as the manifest writes it); batches are reported sorted by that name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verilocc.errors import InputError

POST, PRE = ".post.mir", ".pre.mir"


@dataclass(frozen=True, order=True)
class Pair:
    name: str
    post: str
    pre: str
    problem: str = ""  # set when the pair is incomplete: reported as bad input for this pair only


def _stem(path: str, suffix: str) -> str:
    return path[: -len(suffix)] if path.endswith(suffix) else path


def find_pairs(directory: str) -> list[Pair]:
    """Every `*.post.mir` under `directory` (recursively) with its `*.pre.mir`; a file of
    either kind without its partner becomes a pair with a problem."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError("not a directory", directory, 0, 0)
    posts = {_stem(p.relative_to(root).as_posix(), POST): p for p in root.rglob("*" + POST) if p.is_file()}
    pres = {_stem(p.relative_to(root).as_posix(), PRE): p for p in root.rglob("*" + PRE) if p.is_file()}
    pairs = []
    for name in sorted(posts.keys() | pres.keys()):
        post = posts.get(name, root / (name + POST))
        pre = pres.get(name, root / (name + PRE))
        problem = "" if name in posts and name in pres else \
            f"no {'pre-RA' if name in posts else 'post-RA'} file beside it ({Path(str(pre if name in posts else post)).name})"
        pairs.append(Pair(name, str(post), str(pre), problem))
    if not pairs:
        raise InputError(f"no *{POST} / *{PRE} pairs under this directory", directory, 0, 0)
    return pairs


def read_manifest(path: str) -> list[Pair]:
    """The pairs a manifest lists, in name order; a malformed line stops the batch (exit 2)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the manifest: {getattr(e, 'strerror', None) or e}", path, 0, 0) from None
    base = Path(path).parent
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        content = line.split("#", 1)[0]
        fields = content.split()
        if not fields:
            continue
        if len(fields) != 2:
            column = len(line) - len(line.lstrip()) + 1
            raise InputError(f"expected `POST PRE` (two paths), found {len(fields)} field(s)", path, number, column)
        post, pre = ((f if Path(f).is_absolute() else str(base / f)) for f in fields)
        pairs.append(Pair(_stem(fields[0], POST), post, pre))
    if not pairs:
        raise InputError("the manifest lists no pair", path, 0, 0)
    return sorted(pairs)
