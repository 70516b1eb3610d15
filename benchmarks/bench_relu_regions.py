"""Linear-region enumeration of ReLU networks against the naive 2^n baseline.

* Ours: ``neuromanifold.relu.regions`` (layer-by-layer refinement with a binary space
  partition per layer, non-crossing hyperplanes dropped from a sub-tree after one LP,
  every region and every discarded side certified in exact rational arithmetic).
* Baseline (same run): one Chebyshev-center LP (same HiGHS binding, floats only, no
  certification) for each of the 2^n activation patterns, on the polyhedron that the
  pattern defines; the pattern is a region iff the LP radius exceeds 1e-7.

Both must find the same set of patterns (checked). A second table shows how ours alone
scales to larger networks (regions found, LPs solved, time). Nothing is asserted on time.

    python benchmarks/bench_relu_regions.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from neuromanifold.relu import ReLUNet, regions
from neuromanifold.relu._engine import LP_TOL, RADIUS_CAP
from neuromanifold.relu._lp import LPCounter, solve_lp
from _timing import best_time


def naive_regions(params) -> tuple[set, int]:
    """All 2^n patterns, one LP each; returns the full-dimensional ones and the LP count."""
    d = params[0][0].shape[1]
    sizes = [W.shape[0] for W, _ in params[:-1]]
    counter = LPCounter()
    found = set()
    for bits in itertools.product([False, True], repeat=sum(sizes)):
        rows, offs = [], []
        H = np.hstack([np.eye(d), np.zeros((d, 1))])
        pos, ok = 0, True
        for (W, b), n in zip(params[:-1], sizes):
            Z = W @ H
            Z[:, d] += b
            mask = np.array(bits[pos:pos + n])
            for j in range(n):
                a, c = Z[j, :d], Z[j, d]
                if not np.any(a):
                    ok = ok and (mask[j] == (c > 0))
                elif mask[j]:
                    rows.append(-a)
                    offs.append(c)
                else:
                    rows.append(a)
                    offs.append(-c)
            H = Z * mask[:, None]
            pos += n
        if not ok:
            continue
        A = np.array(rows)
        nrm = np.linalg.norm(A, axis=1)
        k = len(rows)
        A_ub = np.zeros((k + 1, d + 1))
        A_ub[:k, :d] = A / nrm[:, None]
        A_ub[:k, d] = 1.0
        A_ub[k, d] = 1.0
        b_ub = np.append(np.array(offs) / nrm, RADIUS_CAP)
        obj = np.zeros(d + 1)
        obj[d] = -1.0
        sol = solve_lp(obj, A_ub, b_ub, counter=counter)
        if sol.status == "optimal" and sol.x[d] > LP_TOL:
            found.add(bits)
    return found, counter.count


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    rows: list[dict] = []

    vs = [[2, 3, 3, 1], [2, 4, 3, 1]] if args.quick else [[2, 6, 6, 1], [3, 8, 6, 1]]
    print("ours vs naive (one LP per each of the 2^n patterns), on all of R^d, seed 0")
    print(f"{'widths':<16} {'2^n':>7} {'regions':>8} {'same':>5} {'LPs ours':>9} "
          f"{'LPs naive':>10} {'ours s':>8} {'naive s':>8} {'ratio':>7}")
    for w in vs:
        p = ReLUNet(w).random_params(0)
        t_ours, R = best_time(lambda: regions(p), args.repeat)
        t_naive, (found, n_lps) = best_time(lambda: naive_regions(p), args.repeat)
        ours = {tuple(bool(v) for v in np.concatenate(r.pattern)) for r in R}
        row = {"widths": w, "patterns": 2 ** sum(w[1:-1]), "regions": R.num_regions,
               "same": ours == found, "lps_ours": R.num_lps, "lps_naive": n_lps,
               "ours": t_ours, "baseline": t_naive, "ratio": t_naive / t_ours}
        rows.append(row)
        print(f"{str(w):<16} {row['patterns']:>7} {R.num_regions:>8} {str(row['same']):>5} "
              f"{R.num_lps:>9} {n_lps:>10} {t_ours:>8.3f} {t_naive:>8.3f} {row['ratio']:>6.1f}x")

    big = [[2, 8, 8, 1]] if args.quick else [[2, 10, 10, 1], [2, 16, 16, 1], [4, 12, 12, 1]]
    print()
    print("ours alone")
    print(f"{'widths':<16} {'regions':>8} {'per layer':>16} {'LPs':>8} {'exact fb':>8} {'time s':>8}")
    for w in big:
        p = ReLUNet(w).random_params(0)
        t, R = best_time(lambda: regions(p), args.repeat)
        rows.append({"widths": w, "regions": R.num_regions, "lps_ours": R.num_lps,
                     "ours": t, "exact_fallbacks": R.num_exact_fallbacks})
        print(f"{str(w):<16} {R.num_regions:>8} {str(R.counts):>16} {R.num_lps:>8} "
              f"{R.num_exact_fallbacks:>8} {t:>8.2f}")
    return rows


if __name__ == "__main__":
    main()
