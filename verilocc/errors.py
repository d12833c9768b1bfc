"""Errors for bad input: each carries a place (file, line, column) and renders as one line."""

from __future__ import annotations

from dataclasses import dataclass

#: The exit code of bad input (docs/design.md section 3).
EXIT_BAD_INPUT = 2


@dataclass
class InputError(Exception):
    """Bad input from the user: malformed MIR, unknown target, unreadable file.

    The CLI prints `file:line:col: error: message` and exits with code 2 (`EXIT_BAD_INPUT`).
    """

    message: str
    file: str = "<input>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: error: {self.message}"


class TargetError(Exception):
    """An unknown target, register class, register or subregister index.

    Raised by `verilocc.target`; callers that know the source place wrap it in an InputError.
    """
