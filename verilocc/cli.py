"""The `verilocc` command line: the table of commands, and the dispatch to them.

Each command's options and handler live beside what it drives; running one imports only
its own module. A command module imports at module level only the standard library and small
verilocc modules, so that building the parser stays cheap; the heavy imports (z3, networkx,
torch) happen inside the handlers that need them. Exit codes (docs/design.md section 3):
0 VERIFIED, 1 REJECTED, 2 bad input, 3 UNKNOWN.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from verilocc import __version__, native
from verilocc.errors import EXIT_BAD_INPUT, InputError

EXIT_UNKNOWN = 3

# Every command, in the order `verilocc --help` lists them, and the function that adds its
# parser, as `module:function` (the parser's `func` default is the handler). Only this module
# imports these modules (tests/test_layers.py).
COMMANDS: dict[str, str] = {
    "verify": "verilocc.verify_command:add_parser",
    "show": "verilocc.view.commands:add_parser",
    "recheck": "verilocc.certificate.commands:add_parser",
    "fuzz": "verilocc.fuzz.commands:add_parser",
    "allocate": "verilocc.allocate_command:add_parser",
    "materialise": "verilocc.rewrite.commands:add_parser",
    "hunt": "verilocc.hunt.commands:add_parser",
    "dataset": "verilocc.llm.commands:add_dataset_parser",
    "train": "verilocc.llm.commands:add_train_parser",
    "eval": "verilocc.llm.commands:add_eval_parser",
}

# Optional dependencies: the package a command imports -> the extra that installs it.
OPTIONAL_EXTRAS = {
    "torch": "model", "transformers": "model", "peft": "model", "safetensors": "model", "matplotlib": "view",
    "dask": "cluster", "distributed": "cluster", "selenium": "view",
}


# `verilocc.native.state` as `--version` says it.
_CORE = {"compiled": "compiled", "pure": "interpreted (VERILOCC_PURE=1)",
         "stale": "interpreted: its sources changed since the build (make native)",
         "not built": "interpreted (make native compiles it)"}


class _Version(argparse.Action):
    """`--version`: which verifier core runs is found out only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"verilocc {__version__} (verifier core: {_CORE[native.current()]})")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, for a command of the table, the top level and that command
    alone: the same parse of its arguments, and building every command's options costs a short
    `verify` a tenth of its time."""
    p = argparse.ArgumentParser(
        prog="verilocc",
        description="Verification-first register allocation for AMD GPUs: prove an allocation in LLVM MIR correct, "
        "or explain with a counterexample why it is not.",
    )
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and which verifier core runs, and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [n for n in COMMANDS if n == command] or list(COMMANDS):
        module, function = COMMANDS[name].split(":")
        # __import__ as an import statement does it, so that `python -X importtime` lists the module
        getattr(__import__(module, fromlist=[function]), function)(sub)
    return p


# Set when the handler set `args.exit_without_teardown`: every output of the command is written
# and closed when it returns (one pair's `verify`). The `verilocc` process then ends without
# freeing what the layers built, which costs about a tenth of the verification on a large
# kernel (as llc, which frees nothing at exit). Callers of `main` in their own process are not
# affected.
_EXIT_WITHOUT_TEARDOWN = False


def entry() -> None:
    """The `verilocc` command (and `python -m verilocc`): `main`, then the exit."""
    code = main()
    if _EXIT_WITHOUT_TEARDOWN:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # a reader that went away (`| head`) takes nothing more
                pass
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    # The layers build large graphs of small objects that reference counting frees; at the
    # default thresholds the cycle collector would walk all of them again and again. A caller
    # that runs commands in its own process (tests, a notebook) gets its collector back.
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(100_000, 50, 100)
    try:
        return _run(argv)
    finally:
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()


def _run(argv: Sequence[str] | None) -> int:
    global _EXIT_WITHOUT_TEARDOWN
    words = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word that is not an option (the top level's are -h and --version).
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    args = parser.parse_args(words)
    try:
        code = int(args.func(args))
        _EXIT_WITHOUT_TEARDOWN = bool(getattr(args, "exit_without_teardown", False))
        return code
    except InputError as e:
        print(" ".join(str(e).split("\n")), file=sys.stderr)  # always one line
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("verilocc: interrupted", file=sys.stderr)
        return EXIT_UNKNOWN
    except RecursionError:
        print("<input>:0:0: error: input nests too deeply", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 - never a traceback, never a verdict
        missing = (e.name or "").split(".")[0] if isinstance(e, ModuleNotFoundError) else ""
        if missing in OPTIONAL_EXTRAS:
            print(f"verilocc {args.command}: needs the optional package '{missing}': "
                  f"pip install 'verilocc[{OPTIONAL_EXTRAS[missing]}]'", file=sys.stderr)
            return EXIT_BAD_INPUT
        if os.environ.get("VERILOCC_DEBUG"):
            raise
        print(f"verilocc: internal error: {type(e).__name__}: {e} (set VERILOCC_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())
