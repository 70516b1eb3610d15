"""MkDocs hooks of the documentation site (registered in mkdocs.yml).

* **Home page.** ``docs/index.md`` holds the marker ``<!-- include: README.md -->``; it is
  replaced by the README with its links made relative to ``docs/`` (``docs/tolerance.md``
  becomes ``tolerance.md``), so the README stays the only copy of that text.
* **API pages.** A page under ``docs/api/`` is one line ``::: neuromanifold.x`` per module.
  Each such line is expanded into a mkdocstrings directive that renders the names of the
  module's ``__all__`` whose home is this module, followed by links for the names it
  re-exports from another documented module (``neuromanifold.LinearConvNet`` links to
  ``neuromanifold.linear.LinearConvNet``), so every public name is documented once and
  listed wherever it is exported. Where the ``__all__`` is written in sections (a comment
  line heads each, as ``neuromanifold.relu`` groups its names by question), the page has
  one section per comment, in that order. Adding a name to an ``__all__`` needs no change here;
  adding a module needs one page (one line) and one nav entry.
* **Command-line pages.** The ``--help`` blocks of ``docs/cli/*.md`` must equal the
  parser's current help (``docs/_ext/cli_help.py`` regenerates them; ``make docs`` runs
  it): a stale block is a warning, so ``mkdocs build --strict`` fails.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import sys
from pathlib import Path

MARKER = "<!-- include: README.md -->"
_DOCS_LINK = re.compile(r"\]\(docs/")
_DIRECTIVE = re.compile(r"^::: (neuromanifold(?:\.\w+)*)[ \t]*$", re.M)

log = logging.getLogger("mkdocs.hooks.neuromanifold")

# module name -> API page (src_uri), filled by on_files
_API_PAGES: dict[str, str] = {}


def readme_for_site(readme: str) -> str:
    """The README's text with ``](docs/...)`` links rewritten relative to the docs folder."""
    return _DOCS_LINK.sub("](", readme)


def api_modules(pages: dict[str, str]) -> dict[str, str]:
    """``{module name: page}`` for every ``::: module`` line of the given ``{page: text}``."""
    return {name: page for page, text in pages.items() for name in _DIRECTIVE.findall(text)}


def home(module: str, name: str, documented: list[str]) -> str:
    """The documented module where ``module.name`` is rendered in full.

    Among the documented modules that export the same object under ``name``, the one whose
    name is the longest prefix of the module that defines the object (``Fiber``, defined in
    ``neuromanifold.fibers._fiber`` and exported by ``fibers``, ``linear``, ``ntk`` and the
    package, lives on the ``fibers`` page). A submodule's home is its own page; an object
    with no defining module (a constant) lives where it is exported.
    """
    obj = getattr(importlib.import_module(module), name)
    if inspect.ismodule(obj):
        return obj.__name__ if obj.__name__ in documented else module
    origin = getattr(obj, "__module__", None)
    if not isinstance(origin, str):
        return module
    candidates = [
        m
        for m in documented
        if name in getattr(importlib.import_module(m), "__all__", ())
        and getattr(importlib.import_module(m), name, None) is obj
        and (origin == m or origin.startswith(m + "."))
    ]
    return max(candidates, key=len) if candidates else module


def expand_directive(module: str, documented: list[str]) -> str:
    """The mkdocstrings directive for ``module`` (its own names) and the list of the names
    it re-exports, each linked to the page where it is documented."""
    exported = list(importlib.import_module(module).__all__)
    own, elsewhere = [], []
    for name in exported:
        where = home(module, name, documented)
        (own if where == module else elsewhere).append((name, where))
    lines = [f"::: {module}", "    options:"]
    sections = groups(module)
    if own and sections:  # grouped by question: one section each, its names in order
        lines += ["      members: []"]
        home_here = {name for name, _ in own}
        for heading, names in sections:
            names = [n for n in names if n in home_here]
            if not names:
                continue
            page = re.search(r"\s*\(docs/([\w.]+\.md)([^)]*)\)", heading)
            title = heading[: page.start()] if page else heading
            lines += ["", f"## {title[:1].upper() + title[1:]}", ""]
            if page:
                lines += [
                    f"The concepts: [{page.group(1)}](../{page.group(1)}){page.group(2)}.",
                    "",
                ]
            for name in names:
                lines += [f"::: {module}.{name}", "    options:", "      heading_level: 3", ""]
    elif own:
        lines += ["      members:"] + [f"        - {name}" for name, _ in own]
    else:
        lines += ["      members: []"]
    if elsewhere:
        lines += [
            "",
            "## Also exported here",
            "",
            f"`{module}` also exports these names, documented where they are defined:",
            "",
        ]
        for name, where in elsewhere:
            is_module = inspect.ismodule(getattr(importlib.import_module(module), name))
            lines.append(f"* [`{module}.{name}`][{where if is_module else where + '.' + name}]")
    return "\n".join(lines) + "\n"


def groups(module: str) -> list[tuple[str, list[str]]]:
    """The sections of a module's ``__all__`` as its source writes them: a comment line
    opens a section (its text is the heading), the names under it belong to it. ``[]``
    when the ``__all__`` has no comment (one flat list)."""
    source = inspect.getsource(importlib.import_module(module))
    match = re.search(r"^__all__ = \[\n(.*?)^\]", source, re.M | re.S)
    out: list[tuple[str, list[str]]] = []
    for line in match.group(1).splitlines() if match else []:
        line = line.strip()
        if line.startswith("#"):
            out.append((line.lstrip("# ").strip(), []))
        elif line.startswith('"') and out:
            out[-1][1].append(line.strip('",'))
    return out


def on_config(config, **kwargs):
    root = Path(config["config_file_path"]).parent
    # document (and import) this checkout, like mkdocstrings' paths; find cli_help
    for folder in (str(root / "src"), str(root / "docs" / "_ext")):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    return config


def on_files(files, config, **kwargs):
    pages = {
        f.src_uri: Path(f.abs_src_path).read_text(encoding="utf-8")
        for f in files
        if f.src_uri.startswith("api/") and f.src_uri.endswith(".md")
    }
    _API_PAGES.clear()
    _API_PAGES.update(api_modules(pages))
    return files


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if page.file.src_uri == "index.md":
        if MARKER not in markdown:
            raise ValueError(f"docs/index.md must contain {MARKER!r}")
        root = Path(config["config_file_path"]).parent
        readme = (root / "README.md").read_text(encoding="utf-8")
        return markdown.replace(MARKER, readme_for_site(readme))
    if page.file.src_uri.startswith("api/"):
        documented = sorted(_API_PAGES)
        return _DIRECTIVE.sub(lambda m: expand_directive(m.group(1), documented), markdown)
    if page.file.src_uri.startswith("cli/"):
        import cli_help

        for command in cli_help.stale_blocks(markdown):
            log.warning(
                f"{page.file.src_uri}: the help block of '{command}' is stale; "
                "run `python docs/_ext/cli_help.py` (or `make docs`)"
            )
    return markdown
