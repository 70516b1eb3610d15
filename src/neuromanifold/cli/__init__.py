"""Command line: ``neuromanifold <command>``; each command lives in its own module."""

from ._main import main

__all__ = ["main"]
