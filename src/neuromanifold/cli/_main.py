"""Entry point and subcommand registry of the ``neuromanifold`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import ModelFileError, NeuromanifoldError, __version__

# Each command module exposes ``register(subparsers)``, which adds its parser and sets
# ``func`` (taking the parsed args, returning an exit code).
_COMMAND_MODULES = ["demo", "reproduce", "linear", "relu", "sweep"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neuromanifold",
        description="Geometry of neural-network parameterizations: fibers, symmetries, "
                    "NTK, invariants and gradient flows.")
    parser.add_argument("--version", action="version", version=f"neuromanifold {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    import importlib
    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__package__}._{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ModelFileError as exc:  # a bad input file: exit status 3
        print(f"neuromanifold: error: {exc}", file=sys.stderr)
        return 3
    except NeuromanifoldError as exc:
        print(f"neuromanifold: error: {exc}", file=sys.stderr)
        return 1
