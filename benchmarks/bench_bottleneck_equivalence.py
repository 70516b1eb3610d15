"""Equivalence of three-layer bottleneck ReLU networks: the polynomial-time test against
the exact engine, on the same pairs.

Each pair is a generic bottleneck network ``p`` (Gaussian weights, widths
``d -> n1 -> n2 -> n3``) and ``q``, a copy with both hidden layers permuted and rescaled by
powers of two (exact in floating point, so the exact engine must also say "equivalent");
a second pair perturbs ``q``'s output bias by ``1e-6`` times the scale (must be "not
equivalent").

* Ours: ``neuromanifold.relu._canonical.equivalent_bottleneck`` (canonical forms).
* Baseline (same run): ``neuromanifold.relu.equivalent(p, q, method="regions")``, the
  exact region enumeration of the joint network. It runs in a child process and is
  stopped after ``--budget`` seconds (default 120); once it is stopped, larger sizes are
  not tried.

Both must agree where both finish (checked). Growth: the slope of ``log(time)`` against
``log(number of hidden neurons)`` (a polynomial of that degree), fitted over the sizes each
method finished. Nothing is asserted on time.

    python benchmarks/bench_bottleneck_equivalence.py [--quick] [--budget S]
"""

from __future__ import annotations

import os

# one BLAS thread: on a shared machine a multi-threaded BLAS oversubscribes the cores and a
# 160 x 128 SVD takes seconds (set before numpy is imported; no effect inside the tests)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import multiprocessing as mp
import time

import numpy as np

from neuromanifold._tolerance import path_norm_scale
from neuromanifold.relu import equivalent
from neuromanifold.relu._canonical import equivalent_bottleneck, fast_path_reason
from _timing import best_time


def make_pair(widths, seed):
    rng = np.random.default_rng(seed)
    d, n1, n2, n3 = widths
    while True:
        p = [(rng.standard_normal((n1, d)), rng.standard_normal(n1)),
             (rng.standard_normal((n2, n1)), rng.standard_normal(n2)),
             (rng.standard_normal((n3, n2)), rng.standard_normal(n3))]
        if fast_path_reason(p) is None:
            break
    q = [(W.copy(), b.copy()) for W, b in p]
    for l in range(2):
        n = q[l][0].shape[0]
        perm, s = rng.permutation(n), 2.0 ** rng.integers(-3, 4, n)
        W, b = q[l]
        q[l] = (W[perm] * s[:, None], b[perm] * s)
        Wn, bn = q[l + 1]
        q[l + 1] = (Wn[:, perm] / s[None, :], bn)
    miss = [(W.copy(), b.copy()) for W, b in q]
    miss[2][1][0] += 1e-6 * path_norm_scale(q)
    return p, q, miss


def _exact_child(widths, seed, conn):
    p, q, miss = make_pair(widths, seed)
    t = time.perf_counter()
    a = equivalent(p, q, method="regions")
    b = equivalent(p, miss, method="regions")
    conn.send((time.perf_counter() - t, a.equivalent, b.equivalent, a.num_regions))
    conn.close()


def exact_timed(widths, seed, budget):
    """(seconds for both pairs, verdicts, joint regions) or None when over budget."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_exact_child, args=(widths, seed, child))
    proc.start()
    if parent.poll(budget):
        out = parent.recv()
        proc.join()
        return out
    proc.kill()
    proc.join()
    return None


def slope(ns, ts):
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = ([(3, 2, 3, 1), (4, 3, 3, 1)] if args.quick else
             [(4, 3, 4, 1), (5, 4, 5, 1), (6, 5, 6, 1), (7, 6, 7, 1), (8, 7, 8, 1),
              (10, 8, 10, 1), (12, 10, 12, 1), (24, 16, 24, 2), (48, 32, 48, 2),
              (96, 64, 96, 2), (160, 128, 160, 4), (256, 160, 256, 4)])
    rows = []
    print("generic bottleneck pairs (p, permuted/rescaled copy) and (p, near miss), seed 0")
    print(f"{'widths':<20} {'hidden':>6} {'ours s':>9} {'exact s':>9} {'regions':>8} "
          f"{'agree':>6} {'ratio':>9}")
    exact_alive = True
    for k, w in enumerate(sizes):
        p, q, miss = make_pair(w, k)

        def ours():
            return equivalent_bottleneck(p, q), equivalent_bottleneck(p, miss)
        t_ours, (a, b) = best_time(ours, args.repeat)
        assert a.equivalent and not b.equivalent, (w, a, b)
        row = {"widths": list(w), "hidden": w[1] + w[2], "ours": t_ours}
        ex = exact_timed(w, k, args.budget) if exact_alive else None
        if ex is None:
            text = f"> {args.budget:.0f}" if exact_alive else "-"
            exact_alive = False
            row["exact_stopped"] = True
            print(f"{str(list(w)):<20} {row['hidden']:>6} {t_ours:>9.4f} {text:>9} "
                  f"{'':>8} {'':>6} {'':>9}")
        else:
            t_ex, ea, eb, nreg = ex
            row.update({"baseline": t_ex, "regions": nreg, "agree": ea == a.equivalent
                        and eb == b.equivalent, "ratio": t_ex / t_ours})
            print(f"{str(list(w)):<20} {row['hidden']:>6} {t_ours:>9.4f} {t_ex:>9.2f} "
                  f"{nreg:>8} {str(row['agree']):>6} {row['ratio']:>8.0f}x")
        rows.append(row)
    done = [r for r in rows if "baseline" in r]
    s_ours = slope([r["hidden"] for r in rows], [r["ours"] for r in rows])
    s_ex = slope([r["hidden"] for r in done], [r["baseline"] for r in done])
    big = [r for r in rows if r["hidden"] >= 40]
    s_big = slope([r["hidden"] for r in big], [r["ours"] for r in big])
    print(f"fitted growth, time ~ hidden^k: ours k = {s_ours:.2f} (all sizes), "
          f"{s_big:.2f} (>= 40 hidden neurons); exact k = {s_ex:.2f} (sizes it finished)")
    if len(done) >= 2:
        g = np.polyfit([r["hidden"] for r in done], np.log([r["baseline"] for r in done]), 1)[0]
        print(f"exact engine as an exponential: time x {np.exp(g):.2f} per hidden neuron")
    rows.append({"fit_ours": s_ours, "fit_ours_large": s_big, "fit_exact": s_ex})
    return rows


if __name__ == "__main__":
    main()
