"""Linear-region enumeration of ReLU networks against the naive all-patterns baseline.

* Ours: ``neuromanifold.relu.iter_regions`` / ``regions`` (layer-by-layer refinement, a
  binary space partition per layer, streamed depth first; non-crossing hyperplanes
  dropped from a sub-tree after one LP; every region and every discarded side certified
  in exact rational arithmetic). ``certify=False`` rows trust the floating-point LP
  instead (numerically checked regions, same HiGHS LPs).
* Baseline (same run): what a naive user runs, one Chebyshev-center LP (same HiGHS
  binding, floats only, no certification) for each of the 2^n activation patterns; the
  pattern is a region iff the LP radius exceeds 1e-7. Where 2^n is too large to run,
  its time is extrapolated from the measured time per LP (the note says so).

Rows: ours vs the baseline (same set of patterns, checked); growth with the width
(2-w-w-1) and with the depth; streaming a large network; the functional dimension.
Suite rows go to ``benchmarks/RESULTS.md``. Nothing is asserted on time.

    python benchmarks/bench_relu_regions.py [--quick] [--large] [--repeat N]

``--large`` adds 4-12-12-1 (13,689 regions) and 4-20-20-1 (~10^5 regions; many minutes).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from neuromanifold.relu import ReLUNet, functional_dimension, iter_regions, regions
from neuromanifold.relu._engine import LP_TOL, RADIUS_CAP
from neuromanifold.relu._lp import LPCounter, solve_lp
from _timing import median_time, peak_memory_mb, suite_row

BASELINE = "all 2^n patterns, one LP each"


def _pattern_lp(params, bits, d, sizes, counter):
    rows, offs = [], []
    H = np.hstack([np.eye(d), np.zeros((d, 1))])
    pos = 0
    for (W, b), n in zip(params[:-1], sizes):
        Z = W @ H
        Z[:, d] += b
        mask = np.array(bits[pos:pos + n])
        for j in range(n):
            a, c = Z[j, :d], Z[j, d]
            if not np.any(a):
                if mask[j] != (c > 0):
                    return False
            elif mask[j]:
                rows.append(-a)
                offs.append(c)
            else:
                rows.append(a)
                offs.append(-c)
        H = Z * mask[:, None]
        pos += n
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
    return sol.status == "optimal" and sol.x[d] > LP_TOL


def naive_regions(params, limit: int | None = None) -> tuple[set, int, float]:
    """All 2^n patterns (or the first ``limit``), one LP each; returns the
    full-dimensional ones, the LP count and the seconds per pattern."""
    d = params[0][0].shape[1]
    sizes = [W.shape[0] for W, _ in params[:-1]]
    counter = LPCounter()
    found = set()
    t = time.perf_counter()
    patterns = itertools.product([False, True], repeat=sum(sizes))
    tried = 0
    for bits in itertools.islice(patterns, limit):
        tried += 1
        if _pattern_lp(params, bits, d, sizes, counter):
            found.add(bits)
    return found, counter.count, (time.perf_counter() - t) / max(tried, 1)


def _stream(p, certify=True):
    it = iter_regions(p, certify=certify)
    n = sum(1 for _ in it)
    return n, it.num_lps, it.num_exact_fallbacks


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    parser.add_argument("--large", action="store_true", help="add the ~10^5-region network")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    rows: list[dict] = []

    # 1. ours vs the naive method, run in full
    vs = [[2, 3, 3, 1], [2, 4, 3, 1]] if args.quick else [[2, 6, 6, 1], [3, 8, 6, 1]]
    print("ours vs naive (one LP per each of the 2^n patterns), on all of R^d, seed 0")
    print(f"{'widths':<16} {'2^n':>7} {'regions':>8} {'same':>5} {'LPs ours':>9} "
          f"{'LPs naive':>10} {'ours s':>8} {'naive s':>8} {'ratio':>7}")
    for w in vs:
        p = ReLUNet(w).random_params(0)
        t_ours, spread, R = median_time(lambda: regions(p), args.repeat)
        t_naive, _, (found, n_lps, _) = median_time(lambda: naive_regions(p), 1)
        ours = {tuple(bool(v) for v in np.concatenate(r.pattern)) for r in R}
        row = {"widths": w, "patterns": 2 ** sum(w[1:-1]), "regions": R.num_regions,
               "same": ours == found, "lps_ours": R.num_lps, "lps_naive": n_lps,
               "ours_s": t_ours, "baseline_s": t_naive}
        rows.append(row)
        rows.append(suite_row("relu regions, certified", "-".join(map(str, w)), t_ours,
                              BASELINE, t_naive, spread,
                              note=f"{R.num_regions} regions, same set: {row['same']}; "
                                   f"LPs {R.num_lps} vs {n_lps}"))
        print(f"{str(w):<16} {row['patterns']:>7} {R.num_regions:>8} {str(row['same']):>5} "
              f"{R.num_lps:>9} {n_lps:>10} {t_ours:>8.3f} {t_naive:>8.3f} "
              f"{t_naive / t_ours:>6.1f}x")

    # 2. growth with the width (2-w-w-1) and the depth; the baseline extrapolated
    widths = [[2, 6, 6, 1]] if args.quick else \
        [[2, 8, 8, 1], [2, 16, 16, 1], [2, 24, 24, 1], [2, 32, 32, 1],
         [2, 8, 8, 8, 1], [2, 8, 8, 8, 8, 1]]
    print()
    print("growth: certified and certify=False; the naive baseline extrapolated from "
          "512 of its LPs")
    print(f"{'widths':<18} {'regions':>8} {'LP/reg':>7} {'ms/reg':>7} {'ms/reg unc':>10} "
          f"{'naive est s':>12}")
    for w in widths:
        p = ReLUNet(w).random_params(0)
        t, spread, (n, lps, fb) = median_time(lambda: _stream(p), args.repeat)
        t_u, _, (n_u, lps_u, _) = median_time(lambda: _stream(p, False), 1)
        _, _, per_lp = naive_regions(p, limit=512)
        hidden = sum(w[1:-1])
        naive_est = per_lp * 2.0 ** hidden
        rows.append({"widths": w, "regions": n, "lps_ours": lps, "ours_s": t,
                     "uncertified_s": t_u, "same_count_uncertified": n == n_u,
                     "exact_fallbacks": fb, "baseline_est_s": naive_est})
        size = "-".join(map(str, w))
        rows.append(suite_row("relu regions, certified", size, t, BASELINE + " (extrapolated)",
                              naive_est, spread,
                              note=f"{n} regions, {lps / n:.2f} LPs/region, "
                                   f"{1e3 * t / n:.2f} ms/region; baseline: 2^{hidden} LPs "
                                   f"at {1e6 * per_lp:.0f} us (measured on 512)"))
        rows.append(suite_row("relu regions, certify=False", size, t_u,
                              BASELINE + " (extrapolated)", naive_est,
                              note=f"{n_u} regions, {lps_u / n_u:.2f} LPs/region, "
                                   f"{1e3 * t_u / n_u:.2f} ms/region (numerically checked)"))
        print(f"{size:<18} {n:>8} {lps / n:>7.2f} {1e3 * t / n:>7.2f} {1e3 * t_u / n_u:>10.2f} "
              f"{naive_est:>12.3g}")

    # 3. streaming memory: peak while streaming vs collecting the list
    w = [2, 8, 8, 1] if args.quick else [4, 8, 8, 1]
    p = ReLUNet(w).random_params(0)
    peak_stream = peak_memory_mb(lambda: _stream(p, False))
    peak_list = peak_memory_mb(lambda: regions(p, certify=False))
    rows.append({"widths": w, "peak_stream_mb": peak_stream, "peak_list_mb": peak_list})
    print(f"\nPython-heap peak, {w}: streamed {peak_stream:.2f} MB, as a list "
          f"{peak_list:.2f} MB")

    # 4. larger networks, streamed (~10^3 regions; --large: ~1.4 10^4 and ~10^5)
    big = [] if args.quick else [[3, 8, 8, 1]]
    if args.large:
        big += [[4, 12, 12, 1], [4, 20, 20, 1]]
    for w in big:
        p = ReLUNet(w).random_params(0)
        for certify in (True, False):
            t0 = time.perf_counter()
            n, lps, fb = _stream(p, certify)
            t = time.perf_counter() - t0
            label = "certified" if certify else "certify=False"
            rows.append(suite_row(f"relu regions streamed, {label}", "-".join(map(str, w)), t,
                                  BASELINE, None,
                                  note=f"{n} regions, {n / t:.0f} regions/s, "
                                       f"{lps / n:.2f} LPs/region; baseline: 2^{sum(w[1:-1])} "
                                       f"LPs, not run"))
            print(f"{w} {label}: {n} regions in {t:.1f} s ({n / t:.0f}/s, {lps / n:.2f} LPs/region)")

    # 5. functional dimension: sampled regions first, enumeration only below the bound
    fds = [([2, 4, 4, 1], 1)] if args.quick else [([3, 4, 4, 1], 0), ([3, 8, 8, 1], 1)]
    if args.large:
        fds.append(([4, 16, 16, 1], 0))   # below the bound: every region (minutes)
    for w, seed in fds:
        p = ReLUNet(w).random_params(seed)
        t, _, fd = median_time(lambda: functional_dimension(p), 1)
        peak = peak_memory_mb(lambda: functional_dimension(p)) if args.quick else None
        rows.append(suite_row("relu functional dimension (tol 1e-9)", "-".join(map(str, w)), t,
                              "-", None, peak_mb=peak,
                              note=f"rank {fd.rank} / bound {fd.bound}, "
                                   f"{fd.num_sampled_regions} sampled regions, enumerated: "
                                   f"{fd.enumerated} ({fd.num_regions} regions used)"))
        print(f"functional dimension {w}: rank {fd.rank}/{fd.bound} in {t:.2f} s "
              f"({fd.num_regions} regions used, enumerated {fd.enumerated})")
    return rows


if __name__ == "__main__":
    main()
