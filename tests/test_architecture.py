"""The layering rule of ``neuromanifold._layers``, checked over every import of the package
(function-level ones included), and a test of the test: upward, cross-domain, cyclic and
private imports planted in a copy are caught."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from neuromanifold import _layers

SRC = Path(__file__).resolve().parents[1] / "src"
STDLIB = set(sys.stdlib_module_names)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (a name inside a module counts as the module)
    names: tuple  # the names imported (``from X import a, b``)
    line: int
    function_level: bool
    comment: str  # the comment on the import's line, if any


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def read_imports(sources: dict[str, tuple[str, bool]]) -> list[Import]:
    """Every import of ``sources`` (``{module: (text, is_package)}``) that names a module of
    ``sources`` or a third-party package; ``from X import y`` with ``X.y`` a module of
    ``sources`` counts as an import of ``X.y``."""
    out = []
    for mod, (text, is_pkg) in sources.items():
        pkg = mod if is_pkg else mod.rpartition(".")[0]
        lines = text.splitlines()
        tree = ast.parse(text)
        top_level = {id(n) for n in tree.body}
        # imports under `if`/`try` at module level are still module-level
        for n in tree.body:
            if isinstance(n, (ast.If, ast.Try)):
                top_level.update(id(m) for m in ast.walk(n))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.module == "__future__":
                    continue
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                targets = [(target, tuple(a.name for a in node.names))]
                subs = [a.name for a in node.names if f"{target}.{a.name}" in sources]
                if subs:
                    targets = [(f"{target}.{s}", ()) for s in subs]
                    rest = tuple(a.name for a in node.names if a.name not in subs)
                    if rest:
                        targets.append((target, rest))
            elif isinstance(node, ast.Import):
                targets = [(a.name, ()) for a in node.names]
            else:
                continue
            line = lines[node.lineno - 1]
            comment = line.split("#", 1)[1].strip() if "#" in line else ""
            for target, names in targets:
                out.append(
                    Import(mod, target, names, node.lineno, id(node) not in top_level, comment)
                )
    return out


def part_of(module: str, table) -> str | None:
    best = None
    for name in _layers.parts(table):
        if (module == name or module.startswith(name + ".")) and (
            best is None or len(name) > len(best)
        ):
            best = name
    return best


def violations(sources: dict[str, tuple[str, bool]], root: str = "neuromanifold") -> list[str]:
    """What breaks the layering rule, one line each (empty when the rule holds)."""
    tiers = _layers.parts(_layers.TIERS)
    found = []
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for imp in read_imports(sources):
        where = f"{imp.module}:{imp.line}"
        top = imp.target.split(".")[0]
        if imp.function_level and not imp.comment.startswith(_layers.IMPORT_REASONS):
            found.append(
                f"{where}: a function-level import of {imp.target} without a reason from "
                f"the list ({', '.join(_layers.IMPORT_REASONS)} ...): "
                f"{imp.comment or 'no comment'!r}"
            )
        if top == "importlib" and imp.module not in _layers.IMPORTLIB:
            found.append(f"{where}: importlib outside the modules that say why (_layers.IMPORTLIB)")
        if top != root:
            if top in _layers.OPTIONAL and not imp.function_level:
                found.append(f"{where}: the optional extra {top!r} imported at module level")
            continue
        target = imp.target
        graph[imp.module].add(target)
        a, b = part_of(imp.module, _layers.TIERS), part_of(target, _layers.TIERS)
        if a is None or b is None:
            found.append(
                f"{where}: {imp.module if a is None else target} is in no part of the table"
            )
            continue
        if a != b and tiers[b] <= tiers[a]:
            kind = "within one tier (cross-domain)" if tiers[a] == tiers[b] else "upward"
            found.append(f"{where}: {a} imports {b}: {kind}")
        if a == b and a in _layers.ROOMS:
            rooms = _layers.parts(_layers.ROOMS[a])
            ra, rb = part_of(imp.module, _layers.ROOMS[a]), part_of(target, _layers.ROOMS[a])
            if ra != rb and rooms[rb] <= rooms[ra]:
                kind = "within one tier" if rooms[ra] == rooms[rb] else "upward"
                found.append(f"{where}: {ra} imports {rb}: {kind}")
        door = target == f"{b}._library"  # a package's one door for the rest of the library
        if a != b and not door and any(p.startswith("_") for p in target[len(b) :].split(".") if p):
            found.append(
                f"{where}: {target} is private to {b}; import from {b} (or its {b}._library)"
            )
        private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
        if private:
            found.append(f"{where}: private name(s) {private} taken from {target}")
    found.extend(f"import cycle: {' -> '.join(c)}" for c in cycles(graph))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def package_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(p, SRC): (p.read_text(), p.name == "__init__.py")
        for p in sorted((SRC / "neuromanifold").rglob("*.py"))
    }


def test_the_package_keeps_the_layering_rule():
    assert violations(package_sources()) == []


def test_every_module_is_in_a_part_of_the_table():
    for mod in package_sources():
        assert part_of(mod, _layers.TIERS) is not None, mod
        top = part_of(mod, _layers.TIERS)
        if top in _layers.ROOMS:
            assert part_of(mod, _layers.ROOMS[top]) is not None, mod


# -- a test of the test: each planted breach is caught --------------------------------------

PLANTED = {
    "upward": ("neuromanifold.exact._lp", "from ..relu import ReLUNet\n", "upward"),
    "upward room": (
        "neuromanifold.relu._engine.lp",
        "from .._regions.regions import regions\n",
        "upward",
    ),
    "cross-domain": ("neuromanifold.linear._fc", "from ..relu import forward\n", "cross-domain"),
    "function level": (
        "neuromanifold.flows._losses",
        "def f():\n    from ..linear import LinearConvNet\n",
        "upward",
    ),
    "private module": (
        "neuromanifold.relu._core.net",
        "from ...exact._lp import dot\n",
        "private to",
    ),
    "private name": (
        "neuromanifold.relu._regions.bent",
        "from .regions import _sample_x\n",
        "private name",
    ),
    "no reason": (
        "neuromanifold.relu._regions.bent",
        "def f():\n    from .regions import regions\n",
        "without a reason from the list",
    ),
    "a reason not on the list": (
        "neuromanifold.relu._regions.bent",
        "def f():\n    import json  # I like it here\n",
        "without a reason from the list",
    ),
    "importlib": ("neuromanifold.relu._regions.bent", "import importlib\n", "importlib outside"),
    "optional extra": ("neuromanifold.io._formats", "import torch\n", "optional extra"),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_planted_breach_is_caught(case):
    module, code, expected = PLANTED[case]
    sources = package_sources()
    text, is_pkg = sources[module]
    sources[module] = (text + "\n" + code, is_pkg)
    found = violations(sources)
    assert any(expected in line and module in line for line in found), found


def test_a_planted_cycle_is_caught():
    sources = package_sources()
    a, b = "neuromanifold.relu._core.net", "neuromanifold.relu._core.domain"
    for m, other in ((a, "domain"), (b, "net")):
        text, is_pkg = sources[m]
        sources[m] = (text + f"\nfrom . import {other}  # planted\n", is_pkg)
    assert any(
        line.startswith("import cycle") and a in line and b in line for line in violations(sources)
    )


def test_the_architecture_page_shows_the_table():
    page = (SRC.parent / "docs" / "architecture.md").read_text()
    block = page.split("<!-- layers -->\n", 1)[1].split("<!-- /layers -->", 1)[0]
    assert block == _layers.markdown()


# -- the floor plans people read: every folder of the package, and no other ----------------


def _folders() -> set[str]:
    """Every package folder under src/neuromanifold, as ``relu/`` or ``_engine/`` (the
    rooms of relu by their own names)."""
    out, package = set(), SRC / "neuromanifold"
    for init in package.rglob("__init__.py"):
        rel = init.parent.relative_to(package)
        if rel.parts and "__pycache__" not in rel.parts:
            out.add(rel.parts[-1] + "/")
    return out


def _tree_block(text: str, opening: str) -> set[str]:
    block = text.split(opening, 1)[1].split("```")[1]  # its first code block
    return {w for w in re.findall(r"(?<![\w/.])(_?[a-z]\w*/)", block)} - {"src/", "neuromanifold/"}


@pytest.mark.parametrize(
    "page, opening", [("README.md", "## Layout"), ("docs/architecture.md", "## The tree")]
)
def test_the_pages_trees_name_every_folder(page, opening):
    text = (SRC.parent / page).read_text()
    shown = _tree_block(text, opening)
    folders = _folders()
    assert folders - shown == set(), f"{page} leaves out {sorted(folders - shown)}"
    extra = shown - folders - {"tests/", "benchmarks/", "docs/", "support/"}
    assert extra == set(), f"{page} names folders that do not exist: {sorted(extra)}"


def test_numba_loads_with_the_first_analysis_that_needs_a_kernel():
    """Importing the package compiles nothing and loads no numba (a third of a second of
    start-up for every command); the first region enumeration does."""
    import subprocess

    code = (
        "import sys, neuromanifold.relu as r\n"
        "print('numba' in sys.modules)\n"
        "r.regions(r.ReLUNet([2, 3, 1]).random_params(seed=0))\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


# -- the unit of reading ---------------------------------------------------------------------

#: the most lines a function's body may have (its docstring not counted)
MAX_FUNCTION_LINES = 150

#: functions still over the limit, each to be split; the list may only shrink
LONG_FUNCTIONS: set[str] = set()


def _body_lines(node: ast.AST) -> int:
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def long_functions() -> dict[str, int]:
    """``{module.function: lines}`` of every function over :data:`MAX_FUNCTION_LINES`."""
    out = {}
    for path in (SRC / "neuromanifold").rglob("*.py"):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _body_lines(node) > MAX_FUNCTION_LINES:
                    out[f"{module}.{node.name}"] = _body_lines(node)
    return out


def test_no_new_function_over_the_limit_and_the_list_only_shrinks():
    found = long_functions()
    new = sorted(set(found) - LONG_FUNCTIONS)
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines: {[(n, found[n]) for n in new]}"
    gone = sorted(LONG_FUNCTIONS - set(found))
    assert not gone, f"split now, so take them off LONG_FUNCTIONS: {gone}"


#: a function's body over this many lines says, first thing, why it stays whole
LONG_READ_LINES = 80

#: the comment that says so, right after the docstring
WHOLE_MARK = "# Whole:"

#: the most positional parameters a function takes; more travel in a small state object
MAX_POSITIONAL = 7


def _after_docstring(node: ast.AST, lines: list[str]) -> list[str]:
    """The source lines between a function's docstring (or signature) and its first
    statement: where the comment saying why it stays whole goes."""
    body = node.body
    has_doc = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    # without a docstring, the signature's own lines are scanned too: none is a comment
    start = body[0].end_lineno if has_doc else node.lineno
    rest = body[1:] if has_doc else body
    end = rest[0].lineno - 1 if rest else node.end_lineno
    return [ln.strip() for ln in lines[start:end]]


def reading_breaches(text: str, module: str) -> list[str]:
    """Functions of ``text`` over :data:`LONG_READ_LINES` lines without a
    :data:`WHOLE_MARK` comment, and functions with more than :data:`MAX_POSITIONAL`
    positional parameters (numba kernels, which take arrays only, excepted)."""
    lines = text.splitlines()
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        name = f"{module}.{node.name}"
        if _body_lines(node) > LONG_READ_LINES and name not in LONG_FUNCTIONS:
            if not any(ln.startswith(WHOLE_MARK) for ln in _after_docstring(node, lines)):
                out.append(f"{name}: {_body_lines(node)} lines and no '{WHOLE_MARK}' comment")
        a = node.args
        positional = [p.arg for p in a.posonlyargs + a.args if p.arg not in ("self", "cls")]
        kernel = any("njit" in ast.unparse(d) for d in node.decorator_list)
        if len(positional) > MAX_POSITIONAL and not kernel:
            out.append(f"{name}: {len(positional)} positional parameters {positional}")
    return out


def test_long_functions_say_why_and_helpers_take_few_positional_parameters():
    found = []
    for path in sorted((SRC / "neuromanifold").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        found += reading_breaches(path.read_text(encoding="utf-8"), module)
    assert not found, "\n".join(found)


_LONG_BODY = "\n".join(f"    x{i} = {i}" for i in range(LONG_READ_LINES + 1))


@pytest.mark.parametrize(
    "text, caught",
    [
        (f"def f():\n    '''doc'''\n{_LONG_BODY}\n", True),
        (f"def f():\n    '''doc'''\n    {WHOLE_MARK} one pass\n{_LONG_BODY}\n", False),
        (f"def f():\n    {WHOLE_MARK} one pass\n{_LONG_BODY}\n", False),
        # the mark must come first, not somewhere inside
        (f"def f():\n    '''doc'''\n    y = 0\n    {WHOLE_MARK} late\n{_LONG_BODY}\n", True),
        ("def f(a, b, c, d, e, g, h, i):\n    pass\n", True),
        ("def f(self, a, b, c, d, e, g, h):\n    pass\n", False),
        ("def f(a, b, c, d, e, g, h, *, i):\n    pass\n", False),
        ("@njit(cache=True)\ndef f(a, b, c, d, e, g, h, i):\n    pass\n", False),
    ],
)
def test_a_planted_unreadable_function_is_caught(text, caught):
    assert bool(reading_breaches(text, "m")) == caught
