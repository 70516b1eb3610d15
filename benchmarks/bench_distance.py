"""The distance of two checkpoints: the certified interval of ``relu.distance`` against
dense sampling, on the same pair in the same run.

Pairs: a random network ``p`` and ``q = p`` with every weight moved by a relative 1e-3
(two nearby checkpoints), at 8-32-32-1 on [-1, 1]^8, 64-32-16-10 on [0, 1]^64 and
784-64-32-10 on [0, 1]^784.

* Ours: ``relu.distance(p, q, box, time_limit=BUDGET)``: ``lower`` attained at a point
  (exact), ``upper`` proven (``upper_method`` says how), and the time until the interval
  closed to 10 % of the difference (``upper - lower <= 0.1 * lower``), when it did.
* Baseline (same pair, same run): dense uniform sampling of the box for as long as ours
  took, keeping the largest difference seen: a lower bound only (sampling proves no upper
  bound). The ratio column compares nothing here (it is not a speed comparison): each
  row reports absolute figures, and the note says how the two lower bounds compare.

    python benchmarks/bench_distance.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import suite_row

from neuromanifold import relu

BUDGET = 30.0


def _pair(widths, seed=0):
    p = relu.ReLUNet(widths).random_params(seed)
    rng = np.random.default_rng(seed + 1)
    q = [(W * (1 + 1e-3 * rng.standard_normal(W.shape)), b * (1 + 1e-3 * rng.standard_normal(b.shape)))
         for W, b in p]
    return p, q


def dense_sampling(p, q, lo, hi, seconds: float, seed: int = 0) -> tuple[float, int]:
    """The largest output difference on uniform points of the box within ``seconds``."""
    rng = np.random.default_rng(seed)
    d = p[0][0].shape[1]
    best, n, t0 = 0.0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        X = rng.uniform(lo, hi, (4096, d))
        diff = np.abs(relu.forward(p, X) - relu.forward(q, X)).max()
        best, n = max(best, float(diff)), n + len(X)
    return best, n


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    args = parser.parse_args(argv)
    cases = [([3, 6, 6, 1], -1.0, 1.0)] if args.quick else \
        [([8, 32, 32, 1], -1.0, 1.0), ([64, 32, 16, 10], 0.0, 1.0), ([784, 64, 32, 10], 0.0, 1.0)]
    budget = 5.0 if args.quick else BUDGET
    rows = []
    print(f"distance of two nearby checkpoints, budget {budget:g} s")
    for widths, lo, hi in cases:
        p, q = _pair(widths)
        t0 = time.perf_counter()
        r = relu.distance(p, q, (lo, hi), gap=0.0, time_limit=budget)
        t_ours = time.perf_counter() - t0
        closed = r.upper - r.lower <= 0.1 * r.lower
        sampled, n = dense_sampling(p, q, lo, hi, t_ours)
        size = f"{'-'.join(map(str, widths))} on [{lo:g}, {hi:g}]^{widths[0]}"
        rows.append({"widths": widths, "lower": r.lower, "upper": r.upper, "closed": closed,
                     "sampled": sampled, "seconds": t_ours, "method": r.upper_method})
        rows.append(suite_row(
            "relu distance of two checkpoints (certified interval)", size, t_ours, "-", None,
            note=f"[{r.lower:.4g}, {r.upper:.4g}] by {r.upper_method} (certified="
                 f"{r.certified}); gap <= 10% of the difference: "
                 + (f"reached in {t_ours:.1f} s" if closed else "not reached") +
                 f"; dense sampling for the same time ({n:,} points): {sampled:.4g}, "
                 f"{'below' if sampled < r.lower else 'not below'} our lower bound"))
        print(f"{size}: [{r.lower:.4g}, {r.upper:.4g}] by {r.upper_method} in {t_ours:.1f} s "
              f"(10% gap {'reached' if closed else 'not reached'}); sampling {sampled:.4g} "
              f"({n:,} points)")
    return rows


if __name__ == "__main__":
    main()
