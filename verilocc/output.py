"""Writing what the tool produces: to stdout or atomically to a file, never over an input; and
the console of progress and summary lines on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from verilocc.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console


def write_output(path: str | None, text: str | bytes, inputs: Sequence[str | None]) -> None:
    """Write text or bytes to `path` (or stdout) atomically; never over an input file."""
    if path is None or path == "-":
        if isinstance(text, bytes):
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
        return
    import tempfile  # (here: printing to stdout, the common case, needs neither)
    from pathlib import Path

    target = Path(path)
    for inp in inputs:
        if inp and target.exists() and Path(inp).exists() and target.resolve() == Path(inp).resolve():
            raise InputError("refusing to write the output over an input file", path, 0, 0)
    if target.is_dir():
        raise InputError("cannot write the output: is a directory", path, 0, 0)
    directory = target.parent if str(target.parent) else Path(".")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".verilocc-", dir=directory)
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as fh:
                fh.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
        os.replace(tmp, target)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise InputError(f"cannot write the output: {e.strerror or e}", path, 0, 0) from None


def log_console() -> Console:
    """A console on stderr for progress and summary lines: a terminal's width, or 170 columns in
    logs and pipes (wide enough for the eval table)."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=True, highlight=False, width=170)
    return console
