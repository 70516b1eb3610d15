"""Exact fiber enumeration of linear convolutional networks against a naive baseline.

Case: 1D, stride 1, L = 5 layers of filter size 3 whose polynomials have real roots only,
so pi(v) has 10 distinct real roots and every assignment of 2 roots per layer is a fiber
point: 10! / 2!^5 = 113,400 points.

* Ours: ``LinearConvNet.fiber`` (certified root isolation, contingency tables generated
  breadth-first with numpy, vectorized polynomial products and rescaling, residual check).
* Baseline (same run): enumerate the subsets with ``itertools.combinations`` layer after
  layer, rebuild each layer polynomial with ``numpy.poly``, then rescale each point with a
  scalar bracketing root solve (``scipy.optimize.brentq``) of the docs/concepts_linear.md §2
  equation.

Both produce the same list of points (checked: nearest-neighbour distance between the two
sets). A second table times the D = 2 route (exact factorization over Q + grouping +
exact rescaling) against sympy's ``factor_list`` of the same polynomial (factorization
only: a lower bound on what a sympy user pays before grouping and rescaling). Prints
tables with ratios and returns the suite's rows (medians of ``--repeat`` runs); nothing
is asserted on time.

    python benchmarks/bench_fibers.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from _timing import median_time, peak_memory_mb, pin_threads, suite_row
from scipy import optimize, spatial

from neuromanifold import LinearConvNet


def real_rooted_params(L: int, k: int, seed: int) -> list[np.ndarray]:
    """Filters ``c * prod (t - r)`` with distinct real roots (constant term first)."""
    rng = np.random.default_rng(seed)
    roots = rng.permutation(np.linspace(-3, 3, L * (k - 1)) + rng.uniform(-0.05, 0.05, L * (k - 1)))
    return [
        np.poly(roots[l * (k - 1) : (l + 1) * (k - 1)])[::-1] * rng.uniform(0.5, 2.0)
        for l in range(L)
    ]


def baseline_fiber(net: LinearConvNet, v: np.ndarray, deltas: np.ndarray) -> list[list[np.ndarray]]:
    """Naive enumeration: itertools subsets, numpy.poly per layer, scalar rescaling."""
    roots = np.roots(v[::-1])
    sizes = [k[0] - 1 for k in net.filter_shapes]
    top = v[np.nonzero(v)[0][-1]]
    D = np.concatenate([[0.0], np.cumsum(deltas)])
    T0 = max(0.0, float(np.max(-D)))
    points = []

    def assign(layer: int, remaining: tuple[int, ...], chosen: list[tuple[int, ...]]) -> None:
        if layer == len(sizes):
            ws = [np.real(np.poly(roots[list(c)]))[::-1] for c in chosen]
            ws[0] = ws[0] * top
            n = np.array([w @ w for w in ws])
            logP = np.sum(np.log(n))

            def f(t1, D=D, logP=logP):
                return np.sum(np.log(t1 + D)) - logP

            hi = T0 + 1.0
            while f(hi) < 0:
                hi *= 2
            lo = T0 + 1e-12 * max(1.0, T0)
            while f(lo) > 0:
                lo = T0 + (lo - T0) / 1e3
            t1 = optimize.brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)
            lam = np.sqrt((t1 + D) / n)
            points.append([w * c for w, c in zip(ws, lam)])
            return
        for c in itertools.combinations(remaining, sizes[layer]):
            rest = tuple(i for i in remaining if i not in c)
            assign(layer + 1, rest, chosen + [c])

    assign(0, tuple(range(len(roots))), [])
    return points


def _stack(points: list[list[np.ndarray]]) -> np.ndarray:
    return np.array([np.concatenate([w.ravel() for w in p]) for p in points])


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="L = 3 (90 points) instead of L = 5")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    pin_threads()
    rows = []
    L = 3 if args.quick else 5
    net = LinearConvNet([3] * L)
    params = real_rooted_params(L, 3, seed=0)
    v, deltas = net.end_to_end(params), net.invariants(params)
    t_ours, spread, fib = median_time(
        lambda: net.fiber(net.polynomial(params), deltas), args.repeat
    )
    t_base, _, base = median_time(
        lambda: baseline_fiber(net, v, deltas), 1 if not args.quick else args.repeat
    )
    peak = peak_memory_mb(lambda: net.fiber(net.polynomial(params), deltas))
    A, B = _stack(fib.points), _stack(base)
    dist = float(max(spatial.cKDTree(A).query(B)[0].max(), spatial.cKDTree(B).query(A)[0].max()))
    rows.append(
        {
            "case": f"1D stride 1, L={L}, k=3, real roots",
            "points": fib.num_points,
            "baseline_points": len(base),
            "ours": t_ours,
            "baseline": t_base,
            "ratio": t_base / t_ours,
            "max_set_distance": dist,
            "max_residual": fib.max_residual,
            "certified": fib.certified,
        }
    )
    print(
        f"{'case':<36} {'points':>8} {'base pts':>8} {'ours s':>8} {'base s':>8} "
        f"{'ratio':>7} {'set dist':>9} {'residual':>9}"
    )
    r = rows[-1]
    rows.append(
        suite_row(
            "fiber enumeration (1D, exact)",
            f"[3]*{L} stride 1, real roots: {fib.num_points} points",
            t_ours,
            "itertools + numpy.poly + brentq per point",
            t_base,
            spread,
            peak,
            f"same point set to {dist:.0e}; certified={fib.certified}",
        )
    )
    print(
        f"{r['case']:<36} {r['points']:>8} {r['baseline_points']:>8} {r['ours']:>8.3f} "
        f"{r['baseline']:>8.3f} {r['ratio']:>6.1f}x {dist:>9.1e} {fib.max_residual:>9.1e}"
    )

    # D = 2: exact factorization route
    import sympy

    cases = [([(3, 3), (2, 3), (3, 2)], None), ([(3, 3), (3, 3), (2, 2)], [(1, 1), (2, 2)])]
    if not args.quick:
        cases.append(([(4, 4), (3, 3), (3, 3), (2, 2)], None))
    print()
    print(f"{'2D network':<70} {'points':>6} {'fiber s':>8} {'sympy factor s':>14}")
    for shapes, strides in cases:
        net2 = LinearConvNet(shapes, strides)
        p2 = net2.random_params(1)
        poly = net2.polynomial(p2)
        t_fib, spread2, fib2 = median_time(
            lambda: net2.fiber(poly, net2.invariants(p2)), args.repeat
        )
        t1, t2 = sympy.symbols("t1 t2")
        expr = sympy.sympify(str(poly).replace("^", "**"), locals={"t1": t1, "t2": t2})
        t_sym, _, _ = median_time(lambda: sympy.factor_list(expr), args.repeat)
        peak2 = peak_memory_mb(lambda: net2.fiber(poly, net2.invariants(p2)))
        rows.append(
            {
                "case": repr(net2),
                "points": fib2.num_points,
                "ours": t_fib,
                "baseline": t_sym,
                "ratio": t_sym / t_fib,
                "certified": fib2.certified,
            }
        )
        rows.append(
            suite_row(
                "fiber (2D, exact)",
                f"{[k for k in shapes]}, strides {strides or 1}: {fib2.num_points} points",
                t_fib,
                "sympy factor_list (factoring only)",
                t_sym,
                spread2,
                peak2,
                f"certified={fib2.certified}",
            )
        )
        print(f"{repr(net2)[:70]:<70} {fib2.num_points:>6} {t_fib:>8.3f} {t_sym:>14.3f}")
    return rows


if __name__ == "__main__":
    main()
