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
  line heads each, as ``neuromanifold.relu`` groups its names by question), each section
  is a page of its own, generated (``api/relu/identifiability.md``, named after the
  section's first name) and listed in the nav under the module's page, which lists the
  questions in order with their names. Adding a name to an ``__all__`` needs no change here;
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
    pages = question_pages(module, documented)
    if pages:  # grouped by question: a page each, listed here with its names
        lines += ["      members: []"]
        folder = module.rpartition(".")[2]
        for title, concepts, uri, names in pages:
            lines += ["", f"## {title}", ""]
            lines += [f"[The page of this question]({folder}/{uri.rpartition('/')[2]})"]
            if concepts:
                lines[-1] += f"; the concepts: [{concepts[0]}](../{concepts[0]}){concepts[1]}"
            lines += [""]
            page = f"{folder}/{uri.rpartition('/')[2]}"
            lines += [f"* [`{module}.{name}`]({page}#{module}.{name})" for name in names]
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


def question_pages(module: str, documented: list[str]) -> list[tuple[str, tuple, str, list]]:
    """One page per section of ``module``'s ``__all__`` (:func:`groups`): ``(title, the
    concepts page and its anchor or (), the page's src_uri, the names whose home is
    ``module``)``, the page named after its first name (``api/relu/regions.md``). ``[]``
    for a module written as one flat list."""
    out = []
    for heading, names in groups(module):
        names = [n for n in names if home(module, n, documented) == module]
        if not names:
            continue
        found = re.search(r"\s*\(docs/([\w.]+\.md)([^)]*)\)", heading)
        title = heading[: found.start()] if found else heading
        concepts = (found.group(1), found.group(2)) if found else ()
        uri = f"api/{module.rpartition('.')[2]}/{names[0].lower()}.md"
        out.append((title[:1].upper() + title[1:], concepts, uri, names))
    return out


def question_page(module: str, title: str, concepts: tuple, names: list[str]) -> str:
    """The Markdown of one question's page: its names rendered in full."""
    lines = [f"# {title}", ""]
    if concepts:
        lines += [f"The concepts: [{concepts[0]}](../../{concepts[0]}){concepts[1]}.", ""]
    lines += [f"Exported by [`{module}`](../{module.rpartition('.')[2]}.md).", ""]
    for name in names:
        lines += [f"::: {module}.{name}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines)


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
    from mkdocs.structure.files import File  # start-up: the hooks import mkdocs only here

    documented = sorted(_API_PAGES)
    for module in documented:
        for title, concepts, uri, names in question_pages(module, documented):
            files.append(
                File.generated(config, uri, content=question_page(module, title, concepts, names))
            )
    return files


def on_nav(nav, config, files, **kwargs):
    """The question pages under their module's page in the nav."""
    from mkdocs.structure.nav import Section  # start-up: the hooks import mkdocs only here

    documented = sorted(_API_PAGES)
    for module in documented:
        pages = question_pages(module, documented)
        if not pages:
            continue
        for section in (item for item in nav.items if isinstance(item, Section)):
            for i, child in enumerate(section.children):
                if (
                    getattr(child, "file", None) is not None
                    and child.file.src_uri == _API_PAGES[module]
                ):
                    questions = [files.get_file_from_path(uri).page for _, _, uri, _ in pages]
                    for page in questions:
                        page.parent = section
                    section.children[i + 1 : i + 1] = questions
    return nav


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if page.file.src_uri == "index.md":
        if MARKER not in markdown:
            raise ValueError(f"docs/index.md must contain {MARKER!r}")
        root = Path(config["config_file_path"]).parent
        readme = (root / "README.md").read_text(encoding="utf-8")
        return markdown.replace(MARKER, readme_for_site(readme))
    if page.file.src_uri in _API_PAGES.values():  # a module's page (not a question's)
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
