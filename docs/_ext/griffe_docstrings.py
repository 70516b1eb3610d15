"""Griffe extension: the library's docstrings as Markdown (doctests as code, no roles).

The docstrings put their examples as bare doctests (``>>>`` lines followed by the expected
output) after the Args/Returns sections, because pytest runs them with --doctest-modules.
Markdown would read ``>>>`` as nested block quotes and ``[...]`` in the output as links, so
every doctest block (from a ``>>>`` line to the next blank line) is wrapped in a ``pycon``
fence before the docstring is parsed. Blocks inside a Google ``Examples:`` section are left
to griffe, which already renders them as code. Sphinx roles (``:func:`x` ``) are reduced to
their code span, which Markdown shows as code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLES = re.compile(r"^Examples?:\s*$")
_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|obj|exc):(`+)(~?)([\w.]*)")


def fence_doctests(text: str) -> str:
    """Wrap every doctest block of a (dedented) docstring in a ```` ```pycon ```` fence.

    Lines inside an existing fence are left alone (tests/docs/test_site.py checks both).
    """
    lines = text.split("\n")
    out: list[str] = []
    in_examples = in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("```"):
            in_fence = not in_fence
        if not indent and stripped:  # a top-level line opens or closes a section
            in_examples = bool(_EXAMPLES.match(stripped))
        if in_fence or in_examples or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += [indent + "```pycon"] + [indent + b for b in block] + [indent + "```"]
    return "\n".join(out)


def _code_span(match: re.Match) -> str:
    ticks, short, target = match.groups()
    return ticks + (target.rsplit(".", 1)[-1] if short else target)


def markdown_docstring(text: str) -> str:
    """A docstring as the site shows it: roles reduced to code spans (``~a.b.C`` to ``C``,
    as Sphinx shows it), doctests fenced."""
    return fence_doctests(_ROLE.sub(_code_span, text))


class MarkdownDocstrings(griffe.Extension):
    """Apply :func:`markdown_docstring` to every docstring griffe reads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
