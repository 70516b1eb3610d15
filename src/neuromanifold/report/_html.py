"""A self-contained HTML report: sections of prose, tables and figures, in one file.

Figures are embedded as base64 PNG (and also written next to the page), styles are
inline, and the page loads nothing from the network, so it opens anywhere, offline.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._errors import InputError, short_repr
from .._results import to_jsonable

__all__ = ["Figure", "Table", "Section", "render", "write_report"]


@dataclasses.dataclass(frozen=True)
class Figure:
    """A picture: PNG bytes, a file name (``name.png``), a caption, and whether it spans
    the page's width (``wide``) or sits beside others."""

    name: str
    png: bytes
    caption: str
    wide: bool = False

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels, read from the PNG header."""
        return int.from_bytes(self.png[16:20], "big"), int.from_bytes(self.png[20:24], "big")


@dataclasses.dataclass(frozen=True)
class Table:
    """A table: header, rows of cells, and optional per-row CSS classes (e.g. the
    outcome of a reproduction row: ``agrees``, ``disagrees``, ``outside``)."""

    header: Sequence[str]
    rows: Sequence[Sequence[Any]]
    row_classes: Sequence[str] | None = None
    caption: str = ""


@dataclasses.dataclass(frozen=True)
class Section:
    """A titled part of the report: paragraphs (plain text), then tables, then figures."""

    title: str
    paragraphs: Sequence[str] = ()
    tables: Sequence[Table] = ()
    figures: Sequence[Figure] = ()


_CSS = """
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d2330;
       max-width: 1180px; margin: 0 auto; padding: 24px 32px 64px; background: #fbfbfd; }
h1 { font-size: 26px; margin: 8px 0 4px; } h2 { font-size: 20px; margin: 36px 0 8px;
     padding-bottom: 4px; border-bottom: 2px solid #e3e6ee; }
.meta { color: #667; font-size: 13px; margin-bottom: 18px; }
nav { background: #fff; border: 1px solid #e3e6ee; border-radius: 8px; padding: 10px 16px; }
nav a { margin-right: 18px; color: #2855c5; text-decoration: none; }
p { max-width: 900px; }
table { border-collapse: collapse; margin: 12px 0 6px; background: #fff; font-size: 13.5px;
        box-shadow: 0 1px 2px rgba(0,0,0,.06); }
th { background: #eef1f7; text-align: left; padding: 6px 10px; border-bottom: 1px solid #d5dae6; }
td { padding: 5px 10px; border-bottom: 1px solid #eef0f4; vertical-align: top; }
tr.agrees td:first-child { border-left: 4px solid #2e9e5b; }
tr.disagrees td:first-child { border-left: 4px solid #d2433a; }
tr.outside td:first-child { border-left: 4px solid #c9a227; }
tr.inconclusive td:first-child { border-left: 4px solid #9aa3b5; }
tr.disagrees { background: #fff5f4; } tr.outside { background: #fffbea; }
.caption { color: #555; font-size: 13px; margin-bottom: 14px; }
.figs { display: flex; flex-wrap: wrap; gap: 18px; }
figure { margin: 0; background: #fff; border: 1px solid #e3e6ee; border-radius: 8px; padding: 10px;
         box-sizing: border-box; flex: 0 1 auto; max-width: calc(50% - 9px); }
figure.wide { flex-basis: 100%; max-width: 100%; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 13px; color: #444; margin-top: 6px; }
code { background: #eef1f7; padding: 1px 4px; border-radius: 3px; }
"""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return html.escape(f"{value:.4g}")
    return html.escape(str(value))


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in t.header)
    body = []
    for i, row in enumerate(t.rows):
        cls = f' class="{html.escape(t.row_classes[i])}"' if t.row_classes else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>")
    cap = f'<div class="caption">{html.escape(t.caption)}</div>' if t.caption else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{cap}"


def _figure(f: Figure) -> str:
    data = base64.b64encode(f.png).decode()
    wide = ' class="wide"' if f.wide else ""
    return (
        f'<figure{wide}><img src="data:image/png;base64,{data}" alt="{html.escape(f.caption)}">'
        f"<figcaption>{html.escape(f.caption)}</figcaption></figure>"
    )


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def render(title: str, sections: Sequence[Section], *, subtitle: str = "") -> str:
    """The whole page as one HTML string (figures embedded)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<a href="#{_anchor(s.title)}">{html.escape(s.title)}</a>' for s in sections)
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<div class='meta'>{html.escape(subtitle)} Computed {stamp}; every number on this "
        f"page was computed in this run. Machine-readable: <code>results.json</code>.</div>",
        f"<nav>{nav}</nav>",
    ]
    for s in sections:
        parts.append(f'<h2 id="{_anchor(s.title)}">{html.escape(s.title)}</h2>')
        parts += [f"<p>{html.escape(p)}</p>" for p in s.paragraphs]
        parts += [_table(t) for t in s.tables]
        if s.figures:
            parts.append("<div class='figs'>" + "".join(_figure(f) for f in s.figures) + "</div>")
    # a check for readers and tests alike: how many figures decoded
    parts.append(
        "<script>window.addEventListener('load', () => { const imgs = [...document.images];"
        " document.body.dataset.images = imgs.length; document.body.dataset.imagesLoaded ="
        " imgs.filter(i => i.complete && i.naturalWidth > 0).length; });</script>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(
    directory: Any, title: str, sections: Sequence[Section], results: Any, *, subtitle: str = ""
) -> Path:
    """Write ``index.html`` (self-contained), ``results.json`` and ``figures/*.png``.

    Args:
        directory: the report folder (created if missing).
        title: the page title.
        sections: the page's sections, in order.
        results: everything computed, JSON-ready after :func:`to_jsonable`.
        subtitle: one line under the title.

    Returns:
        The path of ``index.html``; an :class:`InputError` when the folder cannot be written.
    """
    folder = Path(directory)
    try:
        (folder / "figures").mkdir(parents=True, exist_ok=True)
        for s in sections:
            for f in s.figures:
                (folder / "figures" / f.name).write_bytes(f.png)
        (folder / "results.json").write_text(json.dumps(to_jsonable(results), indent=2))
        page = folder / "index.html"
        page.write_text(render(title, sections, subtitle=subtitle))
    except OSError as exc:
        raise InputError(
            f"report folder {short_repr(str(directory))} cannot be written: {exc.strerror or exc}"
        ) from None
    return page
