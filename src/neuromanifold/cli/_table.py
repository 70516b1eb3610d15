"""Plain-text tables for the terminal (the CLI's only formatting helper)."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

import numpy as np


def format_table(
    rows: Sequence[Sequence[object]],
    header: Sequence[str],
    *,
    width: int | None = None,
    shorten: Sequence[int] = (),
) -> str:
    """Left-aligned columns separated by two spaces, with a rule under the header.

    With ``width``, a table wider than that is brought within it: the widest columns are
    wrapped at spaces onto continuation lines inside their column (down to 18 characters),
    then the columns listed in ``shorten`` are cut with "..." (their full text is in
    ``--json``), then everything is wrapped further, inside words only as a last resort.

    >>> print(format_table([["a", 1], ["bb", 22]], ["name", "n"]))
    name  n
    ----  --
    a     1
    bb    22
    >>> print(format_table([["a long cell of words", 1]], ["text", "n"], width=12))
    text       n
    ---------  -
    a long     1
    cell of
    words
    """
    cells = [[str(h) for h in header]] + [[str(c) for c in row] for row in rows]
    ncol = len(header)
    widths = [max(len(r[i]) for r in cells) for i in range(ncol)]
    if width is not None:
        room = width - 2 * (ncol - 1)

        # a column wraps at spaces down to its longest word (at most 16), so words stay whole
        words = [
            min(16, max(len(w) for r in cells for w in (r[i].split() or [""]))) for i in range(ncol)
        ]

        def narrow(columns, floor):
            while sum(widths) > room:  # the widest of ``columns``, one character less
                left = [k for k in columns if widths[k] > max(floor, words[k])]
                if not left:
                    return
                widths[max(left, key=lambda k: widths[k])] -= 1

        kept = [i for i in range(ncol) if i not in shorten]
        narrow(kept, 18)  # wrap the other columns to a readable width first,
        narrow(list(shorten), 24)  # then cut the evidence (in full in --json),
        narrow(list(range(ncol)), 0)  # then wrap at spaces whatever still does not fit,
        words[:] = [4] * ncol
        narrow(list(range(ncol)), 0)  # and, last, inside words
    lines = []
    for r, row in enumerate(cells):
        parts = []
        for i, c in enumerate(row):
            if len(c) <= widths[i]:
                parts.append([c])
            elif i in shorten:
                parts.append([c[: widths[i] - 3] + "..."])
            else:
                parts.append(textwrap.wrap(c, widths[i], break_on_hyphens=False) or [""])
        for k in range(max(len(p) for p in parts)):
            lines.append(
                "  ".join(
                    (p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)
                ).rstrip()
            )
        if r == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def terminal_width() -> int:
    """The terminal's width in columns (``COLUMNS`` when set; 100 when unknown)."""
    return shutil.get_terminal_size((100, 24)).columns


def fit(text: str, width: int | None = None) -> str:
    """``text`` with every line longer than ``width`` (the terminal's) wrapped at spaces,
    continuation lines indented four more than the line's own indent.

    >>> print(fit("  a long line of words", 12))
      a long
          line of
          words
    """
    width = terminal_width() if width is None else width
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(
            textwrap.fill(
                line.strip(),
                width,
                initial_indent=indent,
                subsequent_indent=indent + "    ",
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def short_array(a: object, max_items: int = 6, precision: int = 4) -> str:
    """A vector or matrix for a table cell: all of it when small, else its shape and its
    first and last entries (the full values are in ``--json``).

    >>> short_array([1.0, 2.0])
    '[1 2]'
    >>> short_array(list(range(64)))
    '[0 1 2 ... 61 62 63] (64 entries)'
    >>> short_array([[1.0, 2.0], [3.0, 4.0]])
    '2x2 [[1 2] [3 4]]'
    """
    arr = np.asarray(a, dtype=float)

    def num(x):
        return f"{x:.{precision}g}"

    def vec(v):
        if v.size <= max_items:
            return "[" + " ".join(num(x) for x in v) + "]"
        k = max_items // 2
        return (
            "[" + " ".join(num(x) for x in v[:k]) + " ... " + " ".join(num(x) for x in v[-k:]) + "]"
        )

    if arr.ndim <= 1:
        flat = arr.reshape(-1)
        return vec(flat) + ("" if flat.size <= max_items else f" ({flat.size} entries)")
    shape = "x".join(str(n) for n in arr.shape)
    rows = arr.reshape(arr.shape[0], -1)
    if rows.shape[0] <= 3 and rows.shape[1] <= max_items:
        return f"{shape} [" + " ".join(vec(r) for r in rows) + "]"
    return f"{shape} [{vec(rows[0])} ... {vec(rows[-1])}]"
