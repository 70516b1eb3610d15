"""Identifiability of three-layer bottleneck networks: the sign-pattern fast path against the
ground truth on many random parameters, and how often each genericity condition fails.

Parameters are drawn in three ways: Gaussian (every entry standard normal), "patterned"
(each row of [W2 | b2] drawn to be dead, linear, hiding or mixed on purpose, Gaussian
magnitudes) and "dyadic" (patterned with entries in (1/4) Z, so exact zeros and
coincidences happen). For each parameter:

* continuous freedom: the fast path (dead or linear neurons, hidden hyperplanes) against
  the exact functional dimension (rank < P - #hidden);
* witnesses: for a fraction of the non-identifiable ones, one witness symmetry applied and
  compared with the exact engine (tolerance 1e-9 relative to the path-norm scale);
* genericity: which fast conditions fail, and (with ``--exact-genericity``) which exact
  conditions of ``relu.genericity`` fail.

Usage: python benchmarks/validate_identifiability.py [--n 2000] [--seed 0] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package

from neuromanifold import relu  # noqa: E402
from tests.support.symmetry import bottleneck, ground_truth_equivalent, same_orbit  # noqa: E402

ARCHS = [
    (1, 1, 1, 1),
    (2, 1, 2, 1),
    (2, 1, 3, 2),
    (3, 1, 2, 1),
    (2, 2, 2, 1),
    (2, 2, 3, 1),
    (3, 2, 2, 2),
    (3, 2, 3, 1),
    (3, 3, 2, 1),
    (3, 3, 3, 1),
    (4, 3, 3, 2),
]


def draw(rng, mode):
    widths = ARCHS[int(rng.integers(len(ARCHS)))]
    d, n1, n2, n3 = widths
    if mode == "gaussian":
        return widths, bottleneck(rng, widths)
    opts = (
        (["mixed"] * 3 if n1 > 1 else ["ramp"] * 3)
        + ["dead", "linear"]
        + [("hiding", i) for i in range(n1)]
    )
    kinds = [opts[k] for k in rng.integers(0, len(opts), n2)]
    P = bottleneck(rng, widths, kinds=kinds, dyadic=(mode == "dyadic"))
    if mode == "dyadic" and rng.random() < 0.3:  # unpatterned small integers: many zeros
        P[1] = (rng.integers(-2, 3, (n2, n1)) / 2.0, rng.integers(-2, 3, n2) / 2.0)
    return widths, P


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--witness-fraction", type=float, default=0.1)
    ap.add_argument("--exact-genericity", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.witness_fraction = 12, 0.5
    rng = np.random.default_rng(args.seed)
    rows = []
    t0 = time.time()
    for k in range(args.n):
        mode = ("gaussian", "patterned", "dyadic")[k % 3]
        widths, P = draw(rng, mode)
        r = relu.identifiability(P, exact_genericity=args.exact_genericity)
        fd = relu.functional_dimension(P)
        cont_fast = bool(
            r.dead_neurons
            or r.linear_neurons
            or any(h.interval != (0.0, 0.0) for h in r.hidden_hyperplanes)
        )
        row = dict(
            mode=mode,
            widths=widths,
            generic=r.generic,
            identifiable=r.identifiable,
            kinds=r.row_kinds,
            agree=cont_fast == (fd.rank < fd.bound),
            failures=tuple(
                sorted(
                    {
                        f.split(":")[0]
                        if not f.startswith("exact")
                        else "exact " + f.split(":")[1].split()[0]
                        for f in r.genericity_failures
                    }
                )
            ),
            discrete_only=r.identifiable is False and not cont_fast,
            witness=None,
        )
        if r.generic and r.identifiable is False and rng.random() < args.witness_fraction:
            Q = r.witnesses[int(rng.integers(len(r.witnesses)))].apply(P)
            row["witness"] = ground_truth_equivalent(P, Q) and not same_orbit(P, Q)
        rows.append(row)
    elapsed = time.time() - t0
    report(rows, elapsed)
    return rows


def report(rows, elapsed):
    print(f"{len(rows)} parameters in {elapsed:.0f} s")
    for mode in ("gaussian", "patterned", "dyadic"):
        R = [r for r in rows if r["mode"] == mode]
        if not R:
            continue
        gen = [r for r in R if r["generic"]]
        fails = collections.Counter(f for r in R for f in r["failures"])
        kinds = collections.Counter(k for r in R for k in r["kinds"])
        wit = [r["witness"] for r in gen if r["witness"] is not None]
        print(f"\n{mode}: {len(R)} parameters, {len(gen)} generic")
        print(
            f"  fast path == functional dimension: generic {sum(r['agree'] for r in gen)}/"
            f"{len(gen)}, non-generic {sum(r['agree'] for r in R if not r['generic'])}/"
            f"{len(R) - len(gen)}"
        )
        print(
            f"  identifiable: {sum(r['identifiable'] for r in gen)}/{len(gen)} generic; "
            f"discrete-only non-identifiable (ramp flips): "
            f"{sum(r['discrete_only'] for r in gen)}"
        )
        print(
            f"  witnesses equivalent by the exact engine and off the orbit: {sum(wit)}/{len(wit)}"
        )
        print(f"  row kinds: {dict(kinds)}")
        print(
            "  genericity failures: "
            + (", ".join(f"{k} {v}/{len(R)}" for k, v in fails.most_common()) or "none")
        )


if __name__ == "__main__":
    main()
