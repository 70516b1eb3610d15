"""``neuromanifold reproduce linear``: compute the table of docs/concepts_linear.md §3 row by row.

For every row (architecture, condition, the seed's claim) the dependence test runs over
several architectures and random instances; the table shows the computed verdict, the
evidence (largest NTK difference found, fiber sizes, whether certified, a re-verified
witness) and whether it agrees with the seed. Refined rows (a condition the computation
found to matter) follow their parent row.
"""

from __future__ import annotations

import argparse
import json
import sys

from .._results import to_jsonable
from ._table import format_table

_WHICH = ("linear",)   # "relu" later


def run(args: argparse.Namespace) -> int:
    from ..reproduce import reproduce_linear

    rows = reproduce_linear(seed=args.seed, quick=args.quick, progress=True)
    table = [[r.architecture, r.condition, r.seed_claim, r.computed,
              "yes" if r.agrees else "NO", r.summary()] for r in rows]
    mode = "quick" if args.quick else "full"
    print(f"docs/concepts_linear.md §3: is the NTK parameter-independent at fixed invariants? "
          f"(computed, {mode} run, seed {args.seed})\n")
    print(format_table(table, ["architecture", "condition", "seed's claim", "computed",
                               "agrees", "evidence"]))
    disagree = sum(not r.agrees for r in rows)
    print(f"\n{len(rows)} rows; {disagree} where the computation disagrees with the seed "
          f"(see the refined rows and their witnesses).")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([to_jsonable(r.to_dict()) for r in rows], fh, indent=2)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="compute a paper's table row by row (docs/concepts_linear.md §3)",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("which", choices=_WHICH, help="which table: 'linear' (docs/concepts_linear.md §3)")
    p.add_argument("--json", metavar="PATH", help="also write the rows as a JSON list")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="fewer architectures and instances (a few seconds)")
    p.set_defaults(func=run)
