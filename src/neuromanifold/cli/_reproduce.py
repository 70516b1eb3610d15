"""``neuromanifold reproduce linear|relu|all``: compute the papers' claims row by row.

``linear``: the table of docs/concepts_linear.md §3 (paper A). For every row (architecture,
condition, the paper's claim) the dependence test runs over several architectures and
random instances; the table shows the computed verdict, the outcome judged within the
claim's hypotheses (agrees; disagrees, with a re-verified witness meeting every
hypothesis; outside the hypotheses, with the reason; inconclusive), and the evidence
(largest NTK difference found, fiber sizes, whether certified, a witness). Refined rows (a
condition the computation found to matter) follow their parent row.

``relu``: paper B's claims on three-layer ReLU networks (identifiability against the exact
ground truth, every symmetry checked by the exact engine, fiber dimensions, the flip group,
non-localizability, the polynomial-time equivalence test against the exact engine).

``all``: linear, then relu; one report with both tables. The hypotheses of every row are
listed in docs/reproduction.md.
"""

from __future__ import annotations

import argparse
import sys

from ._common import add_seed, write_json
from ._table import fit, format_table, terminal_width

_WHICH = ("linear", "relu", "all")

_HEADERS = ["architecture", "condition", "paper's claim", "computed", "outcome", "evidence"]


def _print_table(title: str, rows) -> None:
    from ..reproduce import summarize  # start-up: loaded when the subcommand runs

    table = [
        [r.architecture, r.condition, r.paper_claim, r.computed, r.outcome, r.summary()]
        for r in rows
    ]
    print(fit(title) + "\n")
    print(format_table(table, _HEADERS, width=terminal_width(), shorten=(5,)))
    if any(len(str(r[5])) > 12 for r in table):
        print("(evidence shortened to fit; in full with --json PATH or --report DIR)")
    print("\n" + fit(summary_line(summarize(rows))))


def run(args: argparse.Namespace) -> int:
    # Whole: the subcommand's steps in order: run the claims, print, write JSON, build the report
    from ..reproduce import (  # start-up: loaded when the subcommand runs
        reproduce_linear,
        reproduce_relu,
    )

    mode = "quick" if args.quick else "full"
    linear = relu_rows = None
    if args.which in ("linear", "all"):
        linear = reproduce_linear(seed=args.seed, quick=args.quick, progress=True)
        _print_table(
            f"docs/concepts_linear.md §3: is the NTK parameter-independent at fixed "
            f"invariants? (computed, {mode} run, seed {args.seed}; hypotheses of "
            f"every row: docs/reproduction.md)",
            linear,
        )
    if args.which in ("relu", "all"):
        relu_rows = reproduce_relu(seed=args.seed, quick=args.quick, progress=True)
        if linear is not None:
            print()
        _print_table(
            f"Paper B (three-layer ReLU networks): the claims, computed ({mode} run, "
            f"seed {args.seed}; hypotheses of every row: docs/reproduction.md)",
            relu_rows,
        )
    if args.json:
        if args.which == "all":
            write_json(
                args.json,
                {"linear": [r.to_dict() for r in linear], "relu": [r.to_dict() for r in relu_rows]},
            )
        else:
            write_json(args.json, [r.to_dict() for r in (linear or relu_rows)])
    if args.report:
        from .. import report  # start-up: loaded when the subcommand runs

        print("computing the report's figures ...", file=sys.stderr)
        sections, record = [], {}
        if linear is not None:
            sections.append(
                report.reproduction_section(
                    "Paper A: is the NTK a function of the end-to-end filter and the invariants?",
                    linear,
                    [
                        "Achour, Kohn, Rauhut, 'The Riemannian Geometry Associated to Gradient "
                        "Flows of Linear Convolutional Networks' (arXiv 2507.06367). Each row "
                        "tests one claim over several architectures and random instances; a "
                        "disagreement counts only with a re-verified witness that meets every "
                        "hypothesis of the claim."
                    ],
                )
            )
            record["linear"] = linear
        if relu_rows is not None:
            sections.append(
                report.reproduction_section(
                    "Paper B: the symmetries of three-layer ReLU networks, computed",
                    relu_rows,
                    [
                        "Gegenfurtner, Grillo, Montufar, 'The Symmetries of Three-Layer ReLU "
                        "Networks' (arXiv 2605.18319). Each row tests one claim on random "
                        "parameters (Gaussian, and drawn to hit every sign pattern of [W2 | b2]) "
                        "against the exact ground truth (exact functional dimension, the exact "
                        "region engine); a disagreement counts only with verified evidence at a "
                        "parameter meeting every hypothesis (bottleneck, full-rank W1, "
                        "genericity)."
                    ],
                )
            )
            record["relu_claims"] = relu_rows
        if linear is not None:
            flows, flow_record = report.flow_section(seed=args.seed)
            sections.append(flows)
            record["flows"] = flow_record
            fiber, record["fiber"] = report.fiber_section(seed=args.seed)
            sections.append(fiber)
        relu, relu_record = report.relu_picture_section(seed=args.seed)
        sections.append(relu)
        record["relu"] = relu_record
        if relu_rows is not None:
            hiding, record["hiding_translation"] = report.hiding_translation_section(seed=args.seed)
            sections.append(hiding)
        page = report.write_report(
            args.report,
            "neuromanifold: the papers, computed",
            sections,
            record,
            subtitle=f"reproduce {args.which}, seed {args.seed}"
            f"{', quick run' if args.quick else ''}.",
        )
        print(f"wrote {page}", file=sys.stderr)
    return 0


def summary_line(counts: dict) -> str:
    """The closing line: genuine disagreements only (a witness meeting every hypothesis).

    >>> rows = {"agrees": 2, "disagrees": 1, "outside the hypotheses": 1, "inconclusive": 0}
    >>> print(summary_line({"rows": rows, "claims": rows}))
    4 rows (4 of the paper's claims, the rest refinements): 1 genuine disagreement (verified
    evidence meeting every hypothesis); 2 agree; 1 outside the hypotheses; 0 inconclusive. Paper's
    claims: 1 disagree, 2 agree, 1 outside, 0 inconclusive.
    """
    r, c = counts["rows"], counts["claims"]
    n = sum(r.values())
    d = r["disagrees"]
    return (
        f"{n} rows ({sum(c.values())} of the paper's claims, the rest refinements): "
        f"{d} genuine disagreement{'' if d == 1 else 's'} (verified evidence meeting "
        f"every hypothesis); {r['agrees']} agree; {r['outside the hypotheses']} outside "
        f"the hypotheses; {r['inconclusive']} inconclusive. Paper's claims: "
        f"{c['disagrees']} disagree, {c['agrees']} agree, "
        f"{c['outside the hypotheses']} outside, {c['inconclusive']} inconclusive."
    )


def register(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="compute the papers' claims row by row (docs/reproduction.md)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "which",
        choices=_WHICH,
        help="which table: 'linear' (paper A, docs/concepts_linear.md §3), 'relu' "
        "(paper B), 'all' (both)",
    )
    p.add_argument(
        "--json",
        metavar="PATH",
        help="also write the rows as a JSON list "
        "('all': an object with the lists 'linear' and 'relu')",
    )
    p.add_argument(
        "--report",
        metavar="DIR",
        help="also write an HTML report (index.html, results.json, figures) to DIR",
    )
    add_seed(p)
    p.add_argument(
        "--quick", action="store_true", help="fewer architectures and instances (a few seconds)"
    )
    p.set_defaults(func=run)
