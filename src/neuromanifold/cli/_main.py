"""Entry point and subcommand registry of the ``neuromanifold`` command."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .._errors import InputFileError, ModelFileError, NeuromanifoldError
from .._version import __version__
from ._common import LAST_READ

# Each command module exposes ``register(subparsers)``, which adds its parser and sets
# ``func`` (taking the parsed args, returning an exit code).
_COMMAND_MODULES = ["demo", "reproduce", "linear", "relu", "verify", "sweep"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neuromanifold",
        description="Geometry of neural-network parameterizations: fibers, symmetries, "
        "NTK, invariants and gradient flows.",
    )
    parser.add_argument("--version", action="version", version=f"neuromanifold {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__package__}._{name}").register(sub)
    return parser


def _check_output_path(parser: argparse.ArgumentParser, path: str | None) -> None:
    """Refuse an output path that cannot be written *before* computing (a usage error,
    exit status 2): the file is opened for appending and, if it did not exist, removed."""
    if path is None:
        return
    if not path.strip():
        parser.error("--json needs a file name; got an empty string")
    if os.path.isdir(path):
        parser.error(f"--json {path!r} is a directory")
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        parser.error(f"--json {path!r} cannot be written: {exc.strerror or exc}")
    if not existed:
        os.remove(path)


def _error(exc: BaseException) -> None:
    """The one-line message of a refused computation, wrapped to the terminal's width."""
    from ._common import for_the_command  # start-up: loaded when a command fails
    from ._table import fit  # start-up: loaded when a command fails

    print(fit(for_the_command(f"neuromanifold: error: {exc}")), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``neuromanifold`` with the arguments ``argv`` (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 1 when the computation refused its input or could
        not write its output (a one-line message on stderr, no traceback), 2 on bad usage
        (argparse's message; raised as ``SystemExit(2)`` by argparse), 3 on a bad input
        file (a model or a sweep configuration), 130 on Ctrl-C.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    _check_output_path(parser, getattr(args, "json", None))
    LAST_READ.clear()
    try:
        return int(args.func(args) or 0)
    except (ModelFileError, InputFileError) as exc:  # a bad input file: exit status 3
        _error(exc)
        return 3
    except NeuromanifoldError as exc:
        _error(exc)
        return 1
    except BrokenPipeError:  # the reader (head, less) closed the pipe: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        _error(exc)
        return 1
    except KeyboardInterrupt:
        print("neuromanifold: interrupted", file=sys.stderr)
        return 130
