"""Counting conservation laws, ``D - dim Lie(V)(theta)``, over random ReLU architectures.

* The set: 50 random architectures, widths 2..9 (every layer, input and output
  included), 2..4 layers (1..3 hidden layers), one random parameter each; the generators
  are the path-lifting. ``neuromanifold.conservation_laws`` with exact values mod a
  prime (certified when the rank meets the verified known laws). Each count is also
  checked against the number of hidden neurons (it is computed, not assumed: a
  mismatch is printed).
* With data: the same for the first 10 architectures, V spanned by the outputs at 20
  random inputs on the activation region of theta (brackets to several depths).
* Baseline: the naive path (``neuromanifold.conservation._naive``: symbolic fields and
  brackets with sympy Jacobians, function-level closure, exact rank at theta), on the
  small architectures it can finish; the same counts are compared.

    python benchmarks/bench_conservation.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import median_time, peak_memory_mb, suite_row

from neuromanifold.conservation import conservation_laws
from neuromanifold.conservation._naive import naive_lie_trace
from neuromanifold.relu import ReLUNet

SMALL = [(1, 1, 1), (2, 1, 1), (2, 2, 1), (1, 2, 1, 1), (2, 2, 2), (1, 1, 1, 1)]


def architectures(n: int, seed: int = 0) -> list[tuple[int, ...]]:
    """``n`` random architectures: 2..4 layers, widths 2..9."""
    rng = np.random.default_rng(seed)
    return [
        tuple(int(w) for w in rng.integers(2, 10, size=int(rng.integers(2, 5)) + 1))
        for _ in range(n)
    ]


def run_set(archs, data_points=None, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for widths in archs:
        p = ReLUNet(widths).random_params(seed=seed)
        X = None if data_points is None else rng.standard_normal((data_points, widths[0]))
        t = time.perf_counter()
        res = conservation_laws(p, data=X, seed=seed)
        out.append(
            {
                "widths": list(widths),
                "D": res.dimension,
                "count": res.count,
                "hidden": sum(widths[1:-1]),
                "known": res.known_count,
                "certified": res.certified,
                "trace": list(res.lie_rank_trace),
                "seconds": time.perf_counter() - t,
            }
        )
    return out


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 architectures, 2 small baselines")
    args = parser.parse_args(argv)
    n = 5 if args.quick else 50
    archs = architectures(n)
    rows: list[dict] = []

    t_set, spread, results = median_time(lambda: run_set(archs), 1)
    bad = [r for r in results if r["count"] != r["hidden"]]
    certified = sum(r["certified"] for r in results)
    slowest = max(results, key=lambda r: r["seconds"])
    print(
        f"{n} architectures (path-lifting): {t_set:.2f} s, {certified}/{n} certified, "
        f"largest D = {max(r['D'] for r in results)}, slowest {slowest['widths']} "
        f"{slowest['seconds']:.2f} s; count != hidden neurons: {len(bad)}"
    )
    rows += results
    peak = peak_memory_mb(lambda: run_set(archs[:1]))
    rows.append(
        suite_row(
            "conservation law count, path-lifting",
            f"{n} random ReLU archs, widths 2..9, 2..4 layers",
            t_set,
            "sympy Jacobians (naive)",
            None,
            spread,
            peak,
            note=f"{certified}/{n} certified; baseline not run at this size "
            f"(see the small-set row)",
        )
    )

    m = 2 if args.quick else 10
    t_data, _, with_data = median_time(lambda: run_set(archs[:m], data_points=20), 1)
    cert_d = sum(r["certified"] for r in with_data)
    print(
        f"{m} architectures with 20 data points: {t_data:.2f} s, {cert_d}/{m} certified, "
        f"counts {[r['count'] for r in with_data]} vs hidden {[r['hidden'] for r in with_data]}"
    )
    rows.append(
        suite_row(
            "conservation law count, outputs on 20 data points",
            f"{m} random ReLU archs",
            t_data,
            "-",
            None,
            0.0,
            None,
            note=f"{cert_d}/{m} certified (others: rank stopped growing)",
        )
    )

    small = SMALL[:2] if args.quick else SMALL
    ours_s, naive_s, agree = 0.0, 0.0, True
    for widths in small:
        p = ReLUNet(widths).random_params(seed=0)
        t_o, _, res = median_time(lambda: conservation_laws(p), 3)
        t_n, _, ref = median_time(lambda: naive_lie_trace(p), 1)
        ours_s, naive_s = ours_s + t_o, naive_s + t_n
        agree = agree and res.count == ref["count"]
        print(
            f"  {list(widths)}: ours {t_o * 1e3:.1f} ms, naive {t_n:.2f} s, counts "
            f"{res.count} / {ref['count']}"
        )
    rows.append(
        suite_row(
            "conservation law count vs naive symbolic path",
            f"{len(small)} small ReLU archs (D <= 11)",
            ours_s,
            "sympy Jacobians (naive)",
            naive_s,
            0.0,
            None,
            note=f"same counts: {agree}",
        )
    )
    return rows


if __name__ == "__main__":
    main()
