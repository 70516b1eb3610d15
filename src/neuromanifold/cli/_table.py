"""Plain-text tables for the terminal (the CLI's only formatting helper)."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    """Left-aligned columns separated by two spaces, with a rule under the header.

    >>> print(format_table([["a", 1], ["bb", 22]], ["name", "n"]))
    name  n
    ----  --
    a     1
    bb    22
    """
    cells = [[str(h) for h in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
