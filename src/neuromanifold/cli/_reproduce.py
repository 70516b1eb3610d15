"""``neuromanifold reproduce linear``: compute the table of docs/concepts_linear.md §3 row by row.

For every row (architecture, condition, the paper's claim) the dependence test runs over
several architectures and random instances; the table shows the computed verdict, the
outcome judged within the claim's hypotheses (agrees; disagrees, with a re-verified
witness meeting every hypothesis; outside the hypotheses, with the reason; inconclusive),
and the evidence (largest NTK difference found, fiber sizes, whether certified, a witness).
Refined rows (a condition the computation found to matter) follow their parent row. The
hypotheses of every row are listed in docs/reproduction.md.
"""

from __future__ import annotations

import argparse
import sys

from ._common import add_seed, write_json
from ._table import format_table

_WHICH = ("linear",)   # "relu" later


def run(args: argparse.Namespace) -> int:
    from ..reproduce import reproduce_linear, summarize

    rows = reproduce_linear(seed=args.seed, quick=args.quick, progress=True)
    table = [[r.architecture, r.condition, r.paper_claim, r.computed, r.outcome, r.summary()]
             for r in rows]
    mode = "quick" if args.quick else "full"
    print(f"docs/concepts_linear.md §3: is the NTK parameter-independent at fixed invariants? "
          f"(computed, {mode} run, seed {args.seed}; hypotheses of every row: "
          f"docs/reproduction.md)\n")
    print(format_table(table, ["architecture", "condition", "paper's claim", "computed",
                               "outcome", "evidence"]))
    print("\n" + summary_line(summarize(rows)))
    if args.json:
        write_json(args.json, [r.to_dict() for r in rows])
    if args.report:
        from .. import report
        print("computing the report's figures ...", file=sys.stderr)
        flows, flow_record = report.flow_section(seed=args.seed)
        relu, relu_record = report.relu_picture_section(seed=args.seed)
        table = report.reproduction_section(
            "Paper A: is the NTK a function of the end-to-end filter and the invariants?", rows,
            ["Achour, Kohn, Rauhut, 'The Riemannian Geometry Associated to Gradient Flows of "
             "Linear Convolutional Networks' (arXiv 2507.06367). Each row tests one claim over "
             "several architectures and random instances; a disagreement counts only with a "
             "re-verified witness that meets every hypothesis of the claim."])
        page = report.write_report(args.report, "neuromanifold: the papers, computed",
                                   [table, flows, relu],
                                   {"linear": rows, "flows": flow_record, "relu": relu_record},
                                   subtitle=f"reproduce {args.which}, seed {args.seed}"
                                            f"{', quick run' if args.quick else ''}.")
        print(f"wrote {page}", file=sys.stderr)
    return 0


def summary_line(counts: dict) -> str:
    """The closing line: genuine disagreements only (a witness meeting every hypothesis).

    >>> rows = {"agrees": 2, "disagrees": 1, "outside the hypotheses": 1, "inconclusive": 0}
    >>> print(summary_line({"rows": rows, "claims": rows}))
    4 rows (4 of the paper's claims, the rest refinements): 1 genuine disagreement (verified evidence meeting every hypothesis); 2 agree; 1 outside the hypotheses; 0 inconclusive. Paper's claims: 1 disagree, 2 agree, 1 outside, 0 inconclusive.
    """
    r, c = counts["rows"], counts["claims"]
    n = sum(r.values())
    d = r["disagrees"]
    return (f"{n} rows ({sum(c.values())} of the paper's claims, the rest refinements): "
            f"{d} genuine disagreement{'' if d == 1 else 's'} (verified evidence meeting "
            f"every hypothesis); {r['agrees']} agree; {r['outside the hypotheses']} outside "
            f"the hypotheses; {r['inconclusive']} inconclusive. Paper's claims: "
            f"{c['disagrees']} disagree, {c['agrees']} agree, "
            f"{c['outside the hypotheses']} outside, {c['inconclusive']} inconclusive.")


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="compute a paper's table row by row (docs/concepts_linear.md §3)",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("which", choices=_WHICH, help="which table: 'linear' (docs/concepts_linear.md §3)")
    p.add_argument("--json", metavar="PATH", help="also write the rows as a JSON list")
    p.add_argument("--report", metavar="DIR", help="also write an HTML report (index.html, "
                   "results.json, figures) to DIR")
    add_seed(p)
    p.add_argument("--quick", action="store_true",
                   help="fewer architectures and instances (a few seconds)")
    p.set_defaults(func=run)
