"""The ``--help`` blocks of the command-line pages (docs/cli/*.md), generated from argparse.

A page marks each help block as::

    <!-- help: neuromanifold relu -->
    ```text
    ...the output of `neuromanifold relu --help`...
    ```

``python docs/_ext/cli_help.py`` (run by ``make docs``) rewrites every marked block with the
parser's current help, formatted at 80 columns. The MkDocs hook refuses to build a page
whose block is stale, and tests/docs/test_site.py fails on one, so the pages cannot drift.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI_DOCS = ROOT / "docs" / "cli"
WIDTH = 80
BLOCK = re.compile(r"(<!-- help: (neuromanifold(?: [a-z]+)*) -->\n```text\n)(.*?)(```)", re.S)


def _parser():
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    from neuromanifold.cli._main import build_parser

    return build_parser()


def subcommands(parser=None) -> dict:
    """``{name: subparser}`` of the ``neuromanifold`` command."""
    import argparse

    parser = parser or _parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def help_text(command: str) -> str:
    """The ``--help`` output of ``command`` (``"neuromanifold"`` or ``"neuromanifold X"``),
    formatted at ``WIDTH`` columns without colour, trailing spaces removed."""
    words = command.split()
    parser = _parser()
    if len(words) == 2:
        parser = subcommands(parser)[words[1]]
    elif len(words) != 1:
        raise ValueError(f"expected 'neuromanifold' or 'neuromanifold COMMAND'; got {command!r}")
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR")}
    os.environ.update(COLUMNS=str(WIDTH), NO_COLOR="1")
    try:
        text = parser.format_help()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")) + "\n"


def help_blocks(page: str) -> list[tuple[str, str]]:
    """The ``(command, shown help)`` pairs marked in a page's text."""
    return [(m.group(2), m.group(3)) for m in BLOCK.finditer(page)]


def stale_blocks(page: str) -> list[str]:
    """The commands whose marked help block differs from the current help. Whitespace is
    not compared (argparse wraps lines differently across Python versions); words are."""
    return [
        command
        for command, shown in help_blocks(page)
        if shown.split() != help_text(command).split()
    ]


def refresh(page: str) -> str:
    """The page's text with every marked help block replaced by the current help."""
    return BLOCK.sub(lambda m: m.group(1) + help_text(m.group(2)) + m.group(4), page)


def main() -> int:
    """Rewrite the help blocks of docs/cli/*.md in place; print the pages that changed."""
    for path in sorted(CLI_DOCS.glob("*.md")):
        old = path.read_text(encoding="utf-8")
        new = refresh(old)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
