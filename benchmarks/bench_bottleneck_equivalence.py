"""Equivalence of three-layer bottleneck ReLU networks: the polynomial-time test against
the exact engine, on the same pairs.

Each pair is a generic bottleneck network ``p`` (Gaussian weights, widths
``d -> n1 -> n2 -> n3``) and ``q``, a copy with both hidden layers permuted and rescaled by
powers of two (exact in floating point, so the exact engine must also say "equivalent");
a second pair perturbs ``q``'s output bias by ``1e-6`` times the scale (must be "not
equivalent"). The "block" rows plant two always-active second-layer neurons and a dead one
and take ``q = random_orbit_point(p)`` (mixings and refactors of the block, second-layer
neurons turned around through it), so the canonical block is exercised.

* Ours: ``neuromanifold.relu._canonical.three_layer.equivalent_bottleneck`` (canonical forms).
* Baseline (same run): ``neuromanifold.relu.equivalent(p, q, method="regions")``, the
  exact region enumeration of the joint network. It runs in a child process and is
  stopped after ``--budget`` seconds (default 45); once it is stopped, larger sizes are
  not tried.

Both must agree where both finish (checked). Growth: the slope of ``log(time)`` against
``log(number of hidden neurons)`` (a polynomial of that degree), fitted over the sizes each
method finished. Nothing is asserted on time.

Suite rows (``_timing.suite_row``): median of ``--repeat`` runs of ours, the exact engine once.

    python benchmarks/bench_bottleneck_equivalence.py [--quick] [--budget S] [--repeat R]
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
from _timing import median_time, peak_memory_mb, suite_row

from neuromanifold.relu import equivalent
from neuromanifold.relu._bounds.parameters import path_norm_scale
from neuromanifold.relu._canonical.three_layer import equivalent_bottleneck, fast_path_reason
from neuromanifold.relu.symmetries import random_orbit_point


def make_pair(widths, seed, block=False):
    rng = np.random.default_rng(seed)
    d, n1, n2, n3 = widths
    while True:
        p = [
            (rng.standard_normal((n1, d)), rng.standard_normal(n1)),
            (rng.standard_normal((n2, n1)), rng.standard_normal(n2)),
            (rng.standard_normal((n3, n2)), rng.standard_normal(n3)),
        ]
        if block:  # two always-active neurons and a dead one, on purpose
            p[1][0][:2], p[1][1][:2] = rng.uniform(0.3, 2, (2, n1)), rng.uniform(0.3, 2, 2)
            p[1][0][2], p[1][1][2] = -rng.uniform(0.3, 2, n1), -rng.uniform(0.3, 2)
        if fast_path_reason(p) is None:
            break
    if block:  # every named symmetry that applies (block refactors, flips included)
        q, _ = random_orbit_point(p, seed=rng)
        miss = [(W.copy(), b.copy()) for W, b in q]
        miss[2][1][0] += 1e-6 * path_norm_scale(q)
        return p, q, miss
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


def _exact_child(widths, seed, block, conn):
    p, q, miss = make_pair(widths, seed, block)
    t = time.perf_counter()
    a = equivalent(p, q, method="regions")
    b = equivalent(p, miss, method="regions")
    conn.send((time.perf_counter() - t, a.equivalent, b.equivalent, a.num_regions))
    conn.close()


def exact_timed(widths, seed, budget, block=False):
    """(seconds for both pairs, verdicts, joint regions) or None when over budget."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_exact_child, args=(widths, seed, block, child))
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
    parser.add_argument("--budget", type=float, default=45.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = (
        [(3, 2, 3, 1), (4, 3, 3, 1)]
        if args.quick
        else [
            (4, 3, 4, 1),
            (5, 4, 5, 1),
            (6, 5, 6, 1),
            (7, 6, 7, 1),
            (8, 7, 8, 1),
            (10, 8, 10, 1),
            (12, 10, 12, 1),
            (24, 16, 24, 2),
            (48, 32, 48, 2),
            (96, 64, 96, 2),
            (160, 128, 160, 4),
            (256, 160, 256, 4),
        ]
    )
    blocks = [(3, 2, 4, 1)] if args.quick else [(3, 2, 4, 1), (4, 3, 5, 2), (5, 4, 6, 2)]
    rows, suite = [], []
    print("generic bottleneck pairs (p, permuted/rescaled copy) and (p, near miss), seed 0;")
    print("'block': two always-active neurons and a dead one planted, q = random_orbit_point(p)")
    print(
        f"{'widths':<20} {'hidden':>6} {'ours s':>9} {'exact s':>9} {'regions':>8} "
        f"{'agree':>6} {'ratio':>9}"
    )
    exact_alive = True
    for k, (w, block) in enumerate([(w, False) for w in sizes] + [(w, True) for w in blocks]):
        p, q, miss = make_pair(w, k, block)

        def ours():
            return equivalent_bottleneck(p, q), equivalent_bottleneck(p, miss)

        t_ours, spread, (a, b) = median_time(ours, args.repeat)
        peak = peak_memory_mb(ours)
        assert a.equivalent and a.certified and not b.equivalent, (w, a, b)
        row = {"widths": list(w), "hidden": w[1] + w[2], "ours": t_ours, "block": block}
        ex = exact_timed(w, k, args.budget, block) if (exact_alive or block) else None
        size = "-".join(map(str, w)) + (" block" if block else "")
        task = "bottleneck equivalence (copy + near miss)"
        if ex is None:
            text = f"> {args.budget:.0f}" if (exact_alive or block) else "-"
            if not block:
                exact_alive = False
            row["exact_stopped"] = True
            suite.append(
                suite_row(
                    task,
                    size,
                    t_ours,
                    "exact regions engine",
                    None,
                    spread,
                    peak,
                    note=f"exact engine stopped after {args.budget:.0f} s"
                    if text != "-"
                    else "exact engine not tried (smaller size already over budget)",
                )
            )
            print(f"{size:<20} {row['hidden']:>6} {t_ours:>9.4f} {text:>9} {'':>8} {'':>6} {'':>9}")
        else:
            t_ex, ea, eb, nreg = ex
            row.update(
                {
                    "baseline": t_ex,
                    "regions": nreg,
                    "agree": ea == a.equivalent and eb == b.equivalent,
                    "ratio": t_ex / t_ours,
                }
            )
            suite.append(
                suite_row(
                    task,
                    size,
                    t_ours,
                    "exact regions engine",
                    t_ex,
                    spread,
                    peak,
                    note=f"{nreg} joint regions; verdicts agree: {row['agree']}",
                )
            )
            print(
                f"{size:<20} {row['hidden']:>6} {t_ours:>9.4f} {t_ex:>9.2f} "
                f"{nreg:>8} {str(row['agree']):>6} {row['ratio']:>8.0f}x"
            )
        rows.append(row)
    plain = [r for r in rows if not r["block"]]
    done = [r for r in plain if "baseline" in r]
    s_ours = slope([r["hidden"] for r in plain], [r["ours"] for r in plain])
    s_ex = slope([r["hidden"] for r in done], [r["baseline"] for r in done])
    big = [r for r in plain if r["hidden"] >= 40]
    s_big = slope([r["hidden"] for r in big], [r["ours"] for r in big])
    print(
        f"fitted growth, time ~ hidden^k: ours k = {s_ours:.2f} (all sizes), "
        f"{s_big:.2f} (>= 40 hidden neurons); exact k = {s_ex:.2f} (sizes it finished)"
    )
    if len(done) >= 2:
        g = np.polyfit([r["hidden"] for r in done], np.log([r["baseline"] for r in done]), 1)[0]
        print(f"exact engine as an exponential: time x {np.exp(g):.2f} per hidden neuron")
    rows.append({"fit_ours": s_ours, "fit_ours_large": s_big, "fit_exact": s_ex})
    return rows + suite


if __name__ == "__main__":
    main()
