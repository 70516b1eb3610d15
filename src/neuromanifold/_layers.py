"""The floor plan as data: which part of the package may import which.

Each tier lists parts of the package; a part may import itself and any part of a lower
tier (later in the list), never one of its own tier or a higher one. So the domains
(``linear``, ``relu``) never import each other, the shared mechanisms never import a
domain, and nothing imports an outer layer. Inside ``relu`` the rooms have a table of
their own, read the same way. ``tests/test_architecture.py`` checks every import of the
package against these tables (function-level ones included), and
``docs/architecture.md`` is checked against them.

A module belongs to the longest part that is a prefix of its name.
"""

#: (part, what it holds), outermost first; a part imports only from later tiers.
TIERS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("neuromanifold.__main__", "`python -m neuromanifold`"),),
    (("neuromanifold.cli", "the command line: argument parsing, tables, exit codes"),),
    (("neuromanifold", "the public facade: the names a user imports"),),
    (
        ("neuromanifold.sweep", "many analyses over a grid of configurations, optionally on dask"),
        ("neuromanifold.reproduce", "the papers' claims recomputed row by row"),
    ),
    (("neuromanifold.report", "the HTML report and its figures"),),
    (("neuromanifold.io", "model files: safetensors, npz, ONNX, torch, scikit-learn"),),
    (
        (
            "neuromanifold.ntk",
            "the NTK dependence test (is the NTK a function of the "
            "end-to-end map and the invariants?)",
        ),
        ("neuromanifold.conservation", "conservation laws of gradient flow, for both domains"),
    ),
    (
        ("neuromanifold.linear", "domain: linear convolutional and fully connected networks"),
        ("neuromanifold.relu", "domain: ReLU networks"),
    ),
    (("neuromanifold.flows", "shared: losses, gradient and Riemannian flows, integrators"),),
    (("neuromanifold.fibers", "shared: the fiber result and invariant vectors"),),
    (
        (
            "neuromanifold.exact",
            "shared: exact arithmetic (flint): rationals, polynomials, roots, exact LP",
        ),
    ),
    (
        ("neuromanifold._results", "the frozen result base class"),
        ("neuromanifold._tolerance", "the tolerance contract"),
        ("neuromanifold._validation", "input checks, one per rule"),
        ("neuromanifold._progress", "the one progress-bar helper"),
        ("neuromanifold._version", "the version string"),
        ("neuromanifold._layers", "this table"),
    ),
    (("neuromanifold._errors", "the one exception family"),),
)

#: The rooms of a domain, read like :data:`TIERS`.
ROOMS: dict[str, tuple[tuple[tuple[str, str], ...], ...]] = {
    # One room per question a user asks (one verb, one result class; the theory regimes
    # are routes inside it), above the machinery every room shares.
    "neuromanifold.relu": (
        (("neuromanifold.relu", "the public facade: the names of `neuromanifold.relu`"),),
        (
            ("neuromanifold.relu.symmetries", "the public facade of the named symmetries"),
            ("neuromanifold.relu.layers", "the public facade of the convolutional layers"),
        ),
        (
            (
                "neuromanifold.relu._fingerprint",
                "question: which networks of a zoo compute one function? (fingerprint, "
                "group_by_function)",
            ),
            (
                "neuromanifold.relu._verify",
                "question: does a two-network query hold on a box? (verify: sat, unsat "
                "or unknown, as a VNN-LIB solver answers)",
            ),
        ),
        (
            (
                "neuromanifold.relu._distance",
                "question: how far apart are two networks on a domain? (distance, top1)",
            ),
            (
                "neuromanifold.relu._nonlocalizability",
                "question: is identifiability decided locally? (non-localizability)",
            ),
        ),
        (
            (
                "neuromanifold.relu._fiber",
                "question: which parameters compute this function? (fiber: the three-layer "
                "and any-depth routes, the symmetry search)",
            ),
            (
                "neuromanifold.relu._equivalence",
                "question: do two networks compute one function? (equivalent: sampling, "
                "the compiled weight matching, reduction, the bottleneck fast path, the "
                "exact engine)",
            ),
        ),
        (
            (
                "neuromanifold.relu._identifiability",
                "question: is the parameter determined up to permutation and scaling? "
                "(identifiability: the three-layer and any-depth routes)",
            ),
            (
                "neuromanifold.relu._canonical",
                "question: one representative per orbit (canonical_form: the three-layer "
                "and any-depth routes, the always-active block and its kernel)",
            ),
        ),
        (
            (
                "neuromanifold.relu._symmetries",
                "question: which transformations keep the function? (three-layer and "
                "any-depth symmetries, orbits, shapes)",
            ),
        ),
        (
            (
                "neuromanifold.relu._reduction",
                "question: the smallest network of the same function (reduce)",
            ),
        ),
        (
            (
                "neuromanifold.relu._fundim",
                "question: the functional dimension (rank of the parameter Jacobian)",
            ),
            ("neuromanifold.relu._genericity", "question: is the parameter generic?"),
            (
                "neuromanifold.relu._neurons",
                "question: which neurons are dead, linear or switching on a domain?",
            ),
        ),
        (
            (
                "neuromanifold.relu._regions",
                "question: the linear regions and bent hyperplanes (and their pictures)",
            ),
            (
                "neuromanifold.relu._orthant",
                "question: one hidden layer on the orthant: weighted arrangements and their fibers",
            ),
            (
                "neuromanifold.relu._flow",
                "question: gradient flow and its conservation laws",
            ),
        ),
        (
            (
                "neuromanifold.relu._engine",
                "machinery: the exact region engine (cells, joint regions of two "
                "networks, compiled float kernels, LP, MILP encoding, workers, budgets)",
            ),
        ),
        (
            (
                "neuromanifold.relu._bounds",
                "machinery: the bound engine: interval and linear bound propagation for "
                "one network and for two networks' difference, branch and bound on the box",
            ),
        ),
        (
            (
                "neuromanifold.relu._core",
                "machinery: networks (live scikit-learn and torch models read as parameters), "
                "domains, the one exact and the one float conversion",
            ),
        ),
    ),
}

#: Third-party packages a module may import only inside a function (optional extras).
#: the reasons a function-level import may give, as the start of its comment: a package
#: only some files need (optional extra), an import too slow for every start (start-up),
#: or an import that would close a cycle at module level (layering)
IMPORT_REASONS = ("optional extra:", "start-up:", "layering:")

#: the modules that import by name (importlib), and why
IMPORTLIB = {
    "neuromanifold": "the subpackages load on first use (nm.relu, nm.io, ...)",
    "neuromanifold.cli._main": "the command modules, registered by name",
    "neuromanifold.flows": "names moved to a domain, read from there when asked (deprecated)",
}

OPTIONAL = ("torch", "sklearn", "dask", "distributed", "onnx", "jax", "mkdocs")


def parts(tiers) -> dict[str, int]:
    """``{part: tier index}`` of a table."""
    return {name: i for i, tier in enumerate(tiers) for name, _ in tier}


def markdown() -> str:
    """The tables as Markdown: one row per part, its tier (1 = outermost) and what it holds
    (the block between the ``layers`` markers of ``docs/architecture.md``)."""
    out = []
    for title, table in (
        ("The package", TIERS),
        *((f"The rooms of `{d.rpartition('.')[2]}/`", t) for d, t in ROOMS.items()),
    ):
        out += [
            f"**{title}** (a part imports only from parts of a larger tier number):",
            "",
            "| tier | part | what it holds |",
            "|---|---|---|",
        ]
        for i, tier in enumerate(table, start=1):
            for name, what in tier:
                shown = _path(name, facade=name in ROOMS and table is not TIERS)
                out.append(f"| {i} | `{shown}` | {what} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _path(name: str, facade: bool = False) -> str:
    """A part's place under ``src/``: a folder ``a/b/``, a module ``a/b.py``, or (``facade``)
    a package's ``__init__.py``."""
    rel = name.replace(".", "/")
    if name == "neuromanifold" or facade:
        return rel + "/__init__.py"
    if (
        name
        in ("neuromanifold.__main__", "neuromanifold.relu.symmetries", "neuromanifold.relu.layers")
        or name.rpartition(".")[2].startswith("_")
        and name.count(".") == 1
    ):
        return rel + ".py"
    return rel + "/"
