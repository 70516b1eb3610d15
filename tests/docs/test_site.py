"""The documentation site (mkdocs.yml, docs/): it builds with ``mkdocs build --strict``, the
API pages cover every public name, the command-line pages show the parser's current
``--help`` and examples that run, and the tutorials run as doctests.

The site's machinery is in ``docs/_ext/``: ``mkdocs_hooks.py`` (home page from the README,
API pages expanded from ``__all__``, stale help blocks refused), ``griffe_docstrings.py``
(doctests in docstrings shown as code) and ``cli_help.py`` (the help blocks).
"""

from __future__ import annotations

import contextlib
import doctest
import html
import importlib
import io
import os
import pkgutil
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_readme import code_blocks, run_block
from tests.support.common import ROOT  # noqa: E402

DOCS = ROOT / "docs"
EXT = DOCS / "_ext"
sys.path.insert(0, str(EXT))

import cli_help  # noqa: E402  (docs/_ext)
import mkdocs_hooks  # noqa: E402  (docs/_ext; imports nothing from mkdocs)

from neuromanifold.cli._main import build_parser, main  # noqa: E402

_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_CHECKER = doctest.OutputChecker()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def fenced(text: str) -> list[tuple[str, int, str]]:
    """Every fenced block of a Markdown text as ``(language, first line number, code)``."""
    return [
        (m.group(1), text.count("\n", 0, m.start(2)) + 1, m.group(2)) for m in _FENCE.finditer(text)
    ]


# ------------------------------------------------------------------ tutorials
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))


def test_there_is_a_tutorial_per_paper():
    assert {p.name for p in TUTORIALS} >= {"linear.md", "relu.md"}


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs(page, tmp_path, monkeypatch):
    """Every ```python block of the tutorial, in order, in one namespace; doctest blocks
    are checked against their shown output."""
    monkeypatch.chdir(tmp_path)
    blocks = code_blocks(page.read_text(encoding="utf-8"))
    assert len(blocks) >= 10, f"{page.name} has lost its examples"
    namespace: dict = {"__name__": f"tutorial_{page.stem}"}
    failures: list[str] = []
    for i, (lineno, code) in enumerate(blocks, start=1):
        failures += run_block(code, namespace, f"{page.name} block {i}", lineno)
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------ command-line pages
CLI_PAGES = sorted((DOCS / "cli").glob("*.md"))


def test_every_subcommand_has_a_page_with_its_help():
    names = sorted(cli_help.subcommands())
    assert names, "the parser has no subcommands?"
    missing = []
    for name in names:
        page = DOCS / "cli" / f"{name}.md"
        shown = (
            dict(cli_help.help_blocks(page.read_text(encoding="utf-8"))) if page.exists() else {}
        )
        if f"neuromanifold {name}" not in shown:
            missing.append(f"docs/cli/{name}.md with a help block of 'neuromanifold {name}'")
    index = (DOCS / "cli" / "index.md").read_text(encoding="utf-8")
    if "neuromanifold" not in dict(cli_help.help_blocks(index)):
        missing.append("docs/cli/index.md with the help block of 'neuromanifold'")
    assert not missing, "missing: " + "; ".join(missing)
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f"cli/{name}.md" in nav for name in names), "a command page is not in the nav"


@pytest.mark.parametrize("page", CLI_PAGES, ids=lambda p: p.stem)
def test_help_blocks_are_current(page):
    stale = cli_help.stale_blocks(page.read_text(encoding="utf-8"))
    assert not stale, (
        f"{page.name}: the help of {stale} changed; run "
        "`python docs/_ext/cli_help.py` (or `make docs`) and commit the pages"
    )


def test_a_changed_help_text_is_detected_and_refreshed():
    page = (DOCS / "cli" / "sweep.md").read_text(encoding="utf-8")
    broken = page.replace("--workers WORKERS", "--workers N", 1)
    assert broken != page
    assert cli_help.stale_blocks(broken) == ["neuromanifold sweep"]
    assert cli_help.stale_blocks(cli_help.refresh(broken)) == []
    rewrapped = page.replace("[--workers WORKERS]", "\n   [--workers WORKERS]", 1)
    assert cli_help.stale_blocks(rewrapped) == []  # only the words are compared


def _command_lines(text: str) -> list[tuple[int, str]]:
    """The ``neuromanifold ...`` command lines of the ```sh and ```console blocks."""
    out = []
    for language, lineno, code in fenced(text):
        for offset, line in enumerate(code.splitlines()):
            line = (
                line[2:]
                if language == "console" and line.startswith("$ ")
                else (line if language == "sh" else "")
            )
            words = shlex.split(line, comments=True)
            if words[:3] == ["python", "-m", "neuromanifold"]:
                words = ["neuromanifold"] + words[3:]
            if words[:1] == ["neuromanifold"]:
                out.append((lineno + offset, words))
    return out


@pytest.mark.parametrize("page", CLI_PAGES, ids=lambda p: p.stem)
def test_documented_commands_parse(page, tmp_path, monkeypatch):
    """Every command line shown is accepted by the current parser (options and actions
    cannot be renamed without updating the pages)."""
    monkeypatch.chdir(tmp_path)  # --out FILE must be in a writable folder
    lines = _command_lines(page.read_text(encoding="utf-8"))
    assert lines, f"{page.name} shows no command"
    parser = build_parser()
    bad = []
    for lineno, words in lines:
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                parser.parse_args(words[1:])
        except SystemExit as exc:  # --help exits with 0
            if exc.code == 0:
                continue
            bad.append(f"{page.name}:{lineno}: {' '.join(words)}")
    assert not bad, "commands the parser refuses:\n" + "\n".join(bad)


def test_command_lines_are_found():
    text = (
        "```sh\nneuromanifold demo --seed 2  # comment\npython -m neuromanifold demo\n```\n"
        "```console\n$ neuromanifold linear ntk\noutput\n```\n```text\nneuromanifold x\n```\n"
    )
    assert [w for _, w in _command_lines(text)] == [
        ["neuromanifold", "demo", "--seed", "2"],
        ["neuromanifold", "demo"],
        ["neuromanifold", "linear", "ntk"],
    ]


def console_sessions(code: str) -> list[tuple[list[str], str]]:
    """``(argv, shown output)`` for each ``$ neuromanifold ...`` line of a console block."""
    out: list[tuple[list[str], str]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            out.append((shlex.split(line[2:])[1:], ""))
        elif out:
            out[-1] = (out[-1][0], out[-1][1] + line + "\n")
    return out


def run_console(code: str) -> list[str]:
    """Run every command of a console block in-process; the failures (exit status or
    output other than shown, with ``...`` matching anything)."""
    failures = []
    for argv, want in console_sessions(code):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
            status = main(argv)
        got = stdout.getvalue()
        if status != 0 or not _CHECKER.check_output(want, got, _FLAGS):
            failures.append(
                f"$ neuromanifold {' '.join(argv)} (exit {status})\n"
                f"  expected:\n{want}  got:\n{got}"
            )
    return failures


def test_console_runner_catches_wrong_output():
    assert run_console("$ neuromanifold linear dimension --filters 2,2\n...(3,)...\n") == []
    assert run_console("$ neuromanifold linear dimension --filters 2,2\n(4,)\n")
    assert run_console("$ neuromanifold linear dimension --filters 2,2 --strides 0\n...\n")


@pytest.mark.parametrize("page", CLI_PAGES, ids=lambda p: p.stem)
def test_console_examples_print_what_is_shown(page, tmp_path, monkeypatch):
    """The ```console blocks are run (after the page's ```python blocks, in page order, in
    a fresh folder) and their output compared with what the page shows."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"cli_{page.stem}"}
    failures: list[str] = []
    for language, lineno, code in fenced(page.read_text(encoding="utf-8")):
        if language == "python":
            failures += run_block(code, namespace, f"{page.name}:{lineno}", lineno)
        elif language == "console":
            failures += [f"{page.name}:{lineno}: {f}" for f in run_console(code)]
    assert not failures, "\n".join(failures)


def test_sweep_page_configuration_is_valid(tmp_path):
    from neuromanifold.sweep import load_config, tasks_of

    text = (DOCS / "cli" / "sweep.md").read_text(encoding="utf-8")
    configs = [code for language, _, code in fenced(text) if language == "toml"]
    assert len(configs) == 1
    path = tmp_path / "study.toml"
    path.write_text(configs[0], encoding="utf-8")
    config = load_config(path)
    assert len(tasks_of(config)) == 3 * 3 + 5 * 2
    analyses = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    from neuromanifold.sweep import ANALYSES

    assert analyses == set(ANALYSES), "the table of analyses is out of date"


# ------------------------------------------------------------------ API pages
def public_modules() -> list[str]:
    """``neuromanifold`` and every public subpackage or module with an ``__all__`` (the
    command line, documented on its own pages, excepted)."""
    import neuromanifold

    names = ["neuromanifold"]
    for info in pkgutil.walk_packages(neuromanifold.__path__, "neuromanifold."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or parts[1] == "cli":
            continue
        if hasattr(importlib.import_module(info.name), "__all__"):
            names.append(info.name)
    return names


def api_pages() -> dict[str, str]:
    return mkdocs_hooks.api_modules(
        {
            f"api/{p.name}": p.read_text(encoding="utf-8")
            for p in sorted((DOCS / "api").glob("*.md"))
        }
    )


def test_every_public_module_has_an_api_page_in_the_nav():
    pages = api_pages()
    modules = public_modules()
    assert {"neuromanifold", "neuromanifold.relu.symmetries", "neuromanifold.report"} <= set(
        modules
    )
    missing = [m for m in modules if m not in pages]
    assert not missing, f"public modules without an API page (docs/api/*.md): {missing}"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert not [p for p in set(pages.values()) if p not in nav], "an API page is not in the nav"


def test_every_name_is_documented_once_at_its_home():
    documented = sorted(api_pages())
    assert mkdocs_hooks.home("neuromanifold", "LinearConvNet", documented) == "neuromanifold.linear"
    assert mkdocs_hooks.home("neuromanifold.ntk", "Fiber", documented) == "neuromanifold.fibers"
    assert mkdocs_hooks.home("neuromanifold", "InputError", documented) == "neuromanifold"
    assert (
        mkdocs_hooks.home("neuromanifold.relu", "symmetries", documented)
        == "neuromanifold.relu.symmetries"
    )
    assert mkdocs_hooks.home("neuromanifold.io", "SUFFIXES", documented) == "neuromanifold.io"
    text = mkdocs_hooks.expand_directive("neuromanifold.ntk", documented)
    assert "        - ntk_dependence" in text and "        - Fiber" not in text
    assert "[`neuromanifold.ntk.Fiber`][neuromanifold.fibers.Fiber]" in text


def test_every_question_of_relu_has_a_page_with_its_names():
    documented = sorted(api_pages())
    pages = mkdocs_hooks.question_pages("neuromanifold.relu", documented)
    uris = [uri for _, _, uri, _ in pages]
    assert len(uris) == len(set(uris)) >= 15
    by_uri = {uri: names for _, _, uri, names in pages}
    assert {"identifiability", "Identifiability"} <= set(by_uri["api/relu/identifiability.md"])
    listed = [n for names in by_uri.values() for n in names]
    assert len(listed) == len(set(listed))  # each name on one question's page
    # every name whose home is relu is on a question's page (the rest link elsewhere)
    relu = importlib.import_module("neuromanifold.relu")
    own = [
        n
        for n in relu.__all__
        if mkdocs_hooks.home("neuromanifold.relu", n, documented) == "neuromanifold.relu"
    ]
    assert sorted(listed) == sorted(own)
    text = mkdocs_hooks.question_page("neuromanifold.relu", *pages[1][:2], pages[1][3])
    assert (
        text.startswith(f"# {pages[1][0]}") and f"::: neuromanifold.relu.{pages[1][3][0]}" in text
    )


def undocumented(site: Path, modules: list[str], pages: dict[str, str]) -> list[str]:
    """``module.name`` for every name of every ``__all__`` that the built API page of its
    module neither documents (an element with that id) nor links to where it is documented
    (an ``href`` to an id present in the site's API pages, the question pages included)."""
    ids: set[str] = set()
    html_of: dict[str, str] = {}
    for path in sorted((site / "api").rglob("*.html")):
        text = html.unescape(path.read_text(encoding="utf-8"))
        html_of[path.relative_to(site).with_suffix(".md").as_posix()] = text
        ids |= set(re.findall(r'\bid="([^"]+)"', text))
    missing = []
    for module in modules:
        page = pages.get(module)
        text = html_of.get(page, "") if page else ""
        for name in importlib.import_module(module).__all__:
            anchor = f"{module}.{name}"
            if anchor in ids and f'id="{anchor}"' in text:
                continue
            links = re.findall(
                r'href="[^"]*#([^"]+)"[^>]*>\s*(?:<code>)?\s*' + re.escape(anchor) + r"\b", text
            )
            if not any(target in ids for target in links):
                missing.append(anchor)
    return missing


def test_undocumented_finds_a_missing_name(tmp_path):
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "ntk.html").write_text(
        '<h1 id="neuromanifold.ntk">x</h1><h2 id="neuromanifold.ntk.ntk_dependence">y</h2>'
        '<h2 id="neuromanifold.fibers.Fiber"></h2>'
        '<a href="fibers.html#neuromanifold.fibers.Fiber"><code>neuromanifold.ntk.Fiber</code></a>',
        encoding="utf-8",
    )
    assert undocumented(tmp_path, ["neuromanifold.ntk"], {"neuromanifold.ntk": "api/ntk.md"}) == [
        "neuromanifold.ntk.NTKDependence"
    ]


# ------------------------------------------------------------------ the build
def _site_tools_missing() -> str | None:
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python", "material"):
        try:
            importlib.import_module(module)
        except ImportError:
            return module
    return None


def test_site_builds_strict_and_documents_every_public_name(tmp_path):
    """``mkdocs build --strict`` (any warning fails: broken links or anchors, docstring
    problems, stale help blocks), then every name of every ``__all__`` is found on its API
    page, the home page is the README, and the help blocks are rendered."""
    missing_tool = _site_tools_missing()
    if missing_tool:
        pytest.skip(
            f"{missing_tool} is not installed: the documentation tools come with "
            "the test extra (pip install -e '.[test]')"
        )
    site = tmp_path / "site"
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=os.pathsep.join(
            [str(ROOT / "src")]
            + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    proc = subprocess.run(
        # no --quiet: it hides the warnings from --strict's count
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"

    missing = undocumented(site, public_modules(), api_pages())
    assert not missing, (
        "public names missing from the API pages: "
        + ", ".join(missing)
        + " (add a docs/api/<module>.md page with '::: <module>' for a new "
        "module)"
    )

    home = (site / "index.html").read_text(encoding="utf-8")
    first_heading = re.search(
        r"^## (.+)$", (ROOT / "README.md").read_text(encoding="utf-8"), re.M
    ).group(1)
    assert html.escape(first_heading, quote=False) in home and "include: README.md" not in home
    relu_page = html.unescape((site / "cli" / "relu.html").read_text(encoding="utf-8"))
    assert "usage: neuromanifold relu" in relu_page
    api_relu = (site / "api" / "relu" / "regions.html").read_text(encoding="utf-8")
    # one page per question, each in the nav of every page
    questions = mkdocs_hooks.question_pages("neuromanifold.relu", sorted(api_pages()))
    flows_page = (site / "api" / "flows.html").read_text(encoding="utf-8")
    for _, _, uri, _ in questions:
        assert (site / uri.replace(".md", ".html")).is_file(), uri
        assert uri.removeprefix("api/").replace(".md", ".html") in flows_page, uri
    # opened from disk a link must name a file: no directory URLs, every target exists
    broken = []
    for page in site.rglob("*.html"):
        if "assets" in page.parts or page.name == "404.html":
            continue
        for href in re.findall(r'href="([^"#:?]+)(?:#[^"]*)?"', page.read_text(encoding="utf-8")):
            if href.endswith((".css", ".js", ".png", ".svg", ".ico", ".xml", ".gz")):
                continue
            target = (page.parent / href).resolve()
            if href.endswith("/") or not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert not broken, broken[:10]
    assert '<span class="gp">&gt;&gt;&gt; </span>' in api_relu  # doctests shown as code
    assert "<blockquote>" not in api_relu
    _click_through_in_chromium(site)


def _click_through_in_chromium(site: Path) -> None:
    """Open the home page from disk in headless Chromium and follow a few of its links, as
    a person would: each must show its page, not a directory listing."""
    import shutil
    import tempfile

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:  # .ci/run installs it; elsewhere the file checks above stand
        return
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--virtual-time-budget=3000",
        f"--user-data-dir={tempfile.mkdtemp()}",
    ]
    home = (site / "index.html").read_text(encoding="utf-8")
    targets = [h for h in re.findall(r'href="([a-z_/]+\.html)"', home) if h != "index.html"][:4]
    assert len(targets) >= 3, targets
    for href in ["index.html"] + targets:
        dom = subprocess.run(
            [chromium, *flags, "--dump-dom", (site / href).as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert dom.returncode == 0, dom.stderr[-1000:]
        assert "Index of" not in dom.stdout and "<h1" in dom.stdout, href


# ------------------------------------------------------------------ the extensions
def test_doctests_in_docstrings_are_fenced():
    pytest.importorskip("griffe")
    import griffe_docstrings as g

    text = "Sum.\n\nArgs:\n    x: a number.\n\n>>> f([1])\n[1]\n>>> 2\n2\n\nDone."
    assert g.fence_doctests(text) == (
        "Sum.\n\nArgs:\n    x: a number.\n\n```pycon\n>>> f([1])\n[1]\n>>> 2\n2\n```\n\nDone."
    )
    fenced_already = "```pycon\n>>> 1\n1\n```"
    assert g.fence_doctests(fenced_already) == fenced_already
    examples = "Examples:\n    >>> 1\n    1\n"
    assert g.fence_doctests(examples) == examples
    assert (
        g.markdown_docstring("See :func:`regions` and :class:`~a.B`.") == "See `regions` and `B`."
    )


def test_readme_links_are_rewritten_for_the_site():
    text = mkdocs_hooks.readme_for_site("[a](docs/tolerance.md) [b](https://x/docs/y) [c](LICENSE)")
    assert text == "[a](tolerance.md) [b](https://x/docs/y) [c](LICENSE)"
    assert mkdocs_hooks.MARKER in (DOCS / "index.md").read_text(encoding="utf-8")


def test_make_docs_target_and_ignored_site():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs:", makefile, re.M) and "mkdocs build" in makefile
    assert "/site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    test_extra = re.search(r"^test = \[(.*?)\]\s*$", pyproject, re.M | re.S).group(1)
    assert all(tool in test_extra for tool in ("mkdocs", "mkdocstrings[python]", "mkdocs-material"))


# ------------------------------------------------------------------ reproduction tables
import reproduction_tables  # noqa: E402  (docs/_ext)


@pytest.mark.parametrize("page", reproduction_tables.PAGES, ids=lambda p: p.name)
def test_reproduction_tables_are_rendered_from_the_last_run(page):
    """The tables quoted in README.md and docs/reproduction.md are the committed run,
    rendered by the script (never edited by hand); `make tables` refreshes them."""
    text = page.read_text()
    assert reproduction_tables.BLOCK.search(text), f"{page.name} quotes no table"
    assert text == reproduction_tables.expected_page(text, reproduction_tables.load_last_run()), (
        f"{page.name}: a table differs from docs/reproduction_last_run.json; run `make tables`"
    )


def test_the_last_run_has_the_rows_of_the_current_code():
    """The committed run has the fields of today's Row and one row per claim family of
    today's claims (a renamed or added claim needs `make tables`)."""
    from neuromanifold.reproduce import Row, default_relu_claims

    run = reproduction_tables.load_last_run()
    fields = {f for f in Row.__dataclass_fields__ if not f.startswith("_")}
    for row in run["linear"] + run["relu"]:
        assert set(row) >= fields - {"evidence"} and row["outcome"] in (
            "agrees",
            "disagrees",
            "outside the hypotheses",
            "inconclusive",
        )
    claims = {c.paper_claim for c in default_relu_claims()}
    assert {r["paper_claim"] for r in run["relu"]} >= claims - {
        "each move keeps the function"
    }  # the symmetry rows state the move itself


def test_a_hand_edited_table_is_detected():
    run = {
        "linear": [
            {
                "architecture": "a",
                "condition": "c",
                "paper_claim": "p",
                "computed": "x",
                "outcome": "agrees",
                "evidence": {},
            }
        ],
        "relu": [],
    }
    page = "<!-- table: linear -->\n| stale |\n<!-- /table -->\n"
    fresh = reproduction_tables.expected_page(page, run)
    assert fresh != page and "| a | c | p | x | agrees |" in fresh
    assert reproduction_tables.expected_page(fresh, run) == fresh
