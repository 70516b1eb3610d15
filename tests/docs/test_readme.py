"""README.md and docs/: every Python snippet runs, every link resolves, every section a
docstring cites exists, and nothing points outside the repository.

The README's ```python blocks are run in order in one shared namespace (a later block uses
the names an earlier one defined). A block written as a doctest (``>>>`` prompts) is checked
against its shown output; any other block is executed as a script.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

from tests.support.common import ROOT  # noqa: E402

README = ROOT / "README.md"
DOCS = ROOT / "docs"
SRC = ROOT / "src" / "neuromanifold"

_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def code_blocks(text: str, language: str = "python") -> list[tuple[int, str]]:
    """The fenced blocks of ``language`` in a Markdown text, as ``(first line number, code)``."""
    return [
        (text.count("\n", 0, m.start(2)) + 1, m.group(2))
        for m in _FENCE.finditer(text)
        if m.group(1) == language
    ]


def run_block(code: str, namespace: dict, name: str, lineno: int) -> list[str]:
    """Run one block in ``namespace``; return the failure reports (empty when it passes).

    A doctest block fails when an example raises or prints something other than what is
    shown; a script block fails when it raises.
    """
    if ">>>" in code:
        test = doctest.DocTestParser().get_doctest(code, namespace, name, str(README), lineno)
        failures: list[str] = []

        class Runner(doctest.DocTestRunner):
            def report_failure(self, out, test, example, got):
                failures.append(
                    f"{name}, line {lineno + example.lineno}: "
                    f"{example.source.strip()}\n  expected: "
                    f"{example.want.strip()}\n  got:      {got.strip()}"
                )

            def report_unexpected_exception(self, out, test, example, exc_info):
                failures.append(
                    f"{name}, line {lineno + example.lineno}: "
                    f"{example.source.strip()}\n  raised "
                    f"{exc_info[0].__name__}: {exc_info[1]}"
                )

        # the doctest's globals are a copy: write the names back so later blocks see them
        Runner(optionflags=_FLAGS).run(test, out=lambda s: None, clear_globs=False)
        namespace.update(test.globs)
        return failures
    try:
        exec(compile(code, f"{README}:{lineno}", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - reported as a failure of the block
        return [f"{name}, line {lineno}: raised {type(exc).__name__}: {exc}"]
    return []


def test_readme_snippets_run():
    blocks = code_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 8, "the README tour has lost its Python snippets"
    namespace: dict = {"__name__": "readme"}
    failures: list[str] = []
    for i, (lineno, code) in enumerate(blocks, start=1):
        failures += run_block(code, namespace, f"README block {i}", lineno)
    assert not failures, "README snippets failed:\n" + "\n".join(failures)


def test_runner_catches_wrong_output_errors_and_undefined_names():
    """The harness itself can fail: a wrong shown output, an exception, a name no earlier
    block defined."""
    ns: dict = {}
    assert run_block(">>> x = 1 + 1\n>>> x\n2\n", ns, "ok", 1) == []
    assert ns["x"] == 2  # names survive for the next block
    assert run_block(">>> x\n3\n", ns, "wrong", 1)
    assert run_block(">>> undefined_name\n", ns, "undefined", 1)
    assert run_block("raise ValueError('boom')\n", ns, "script", 1)
    assert run_block("y = x * 2\n", ns, "script", 1) == [] and ns["y"] == 4


def test_code_blocks_extracts_only_python():
    text = "a\n```python\n>>> 1\n1\n```\n```sh\nmake demo\n```\n```python\nz = 3\n```\n"
    assert code_blocks(text) == [(3, ">>> 1\n1\n"), (10, "z = 3\n")]


# ------------------------------------------------------------------ docs consistency
def _markdown_files() -> list[Path]:
    return [README] + sorted(DOCS.glob("*.md"))


def test_no_reference_outside_the_repository():
    """The repository explains itself: no pointer to an external specification or folder."""
    bad = re.compile(r"SPEC\b|/work/|shared folder|seed (paper|document|summar)")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _markdown_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if bad.search(line)
    ]
    assert not offenders, "\n".join(offenders)


def test_relative_links_resolve():
    link = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")
    broken = []
    for path in _markdown_files():
        for target, _ in link.findall(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not broken, "broken links: " + ", ".join(broken)


def _sections(page: Path) -> set[int]:
    return {int(m) for m in re.findall(r"^## (\d+)\. ", page.read_text(encoding="utf-8"), re.M)}


@pytest.mark.parametrize("page", ["concepts_linear.md", "concepts_relu.md"])
def test_concept_pages_number_their_sections(page):
    numbers = sorted(_sections(DOCS / page))
    assert numbers == list(range(1, len(numbers) + 1)) and numbers, numbers


def test_cited_sections_exist():
    """Every ``docs/<page>.md §n`` cited in the source, the tests or the docs is a heading
    ``## n. ...`` of that page, and every cited page exists."""
    cite = re.compile(r"(?:docs/)?(concepts_linear|concepts_relu)\.md\)?\s*§\s*(\d+)")
    pages = {name: _sections(DOCS / f"{name}.md") for name in ("concepts_linear", "concepts_relu")}
    files = [
        p
        for p in list(SRC.rglob("*.py")) + list((ROOT / "tests").glob("*.py")) + _markdown_files()
        if p.name != "test_readme.py"
    ]
    missing = []
    for path in files:
        for name, number in cite.findall(path.read_text(encoding="utf-8")):
            if int(number) not in pages[name]:
                missing.append(f"{path.relative_to(ROOT)}: {name}.md §{number}")
    assert not missing, "cited sections that do not exist: " + ", ".join(sorted(set(missing)))
    cited_pages = set()
    for path in SRC.rglob("*.py"):
        cited_pages |= set(re.findall(r"docs/([a-z_]+\.md)", path.read_text(encoding="utf-8")))
    assert not [p for p in cited_pages if not (DOCS / p).exists()], cited_pages


def test_license_is_mit_as_declared():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the neuromanifold developers" in text
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
