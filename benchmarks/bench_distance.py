"""The distance of two checkpoints: the certified interval of ``relu.distance`` against
dense sampling, on the same pair in the same run.

Pairs: a random network ``p`` and ``q = p`` with every weight moved by a relative 1e-3
(two nearby checkpoints), at 8-32-32-1 on [-1, 1]^8, 64-32-16-10 on [0, 1]^64 and
784-64-32-10 on [0, 1]^784.

* Ours: ``relu.distance(p, q, box, time_limit=BUDGET)``: ``lower`` attained at a point
  (exact), ``upper`` proven (``upper_method`` says how), and the time until the interval
  closed to 10 % of the difference (``upper - lower <= 0.1 * lower``), when it did.
* Baselines (same pair, same run, each for as long as ours took):
  - dense uniform sampling of the box, keeping the largest difference seen: a lower bound
    only (sampling proves no upper bound);
  - the plain MILP a user would write: both networks on the box with the textbook big-M
    encoding, big-M constants from plain interval arithmetic, no bound tightening and no
    rows tying the two networks together, one program per output and sign with
    ``scipy.optimize.milp`` (HiGHS), the time shared evenly; its bound is the largest
    dual bound, its lower end the largest incumbent (floating point, like our MILP's).
  The ratio column compares nothing here (neither side closes the gap at the sizes
  below): each row reports absolute figures, and the note compares the bounds.

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
    q = [
        (
            W * (1 + 1e-3 * rng.standard_normal(W.shape)),
            b * (1 + 1e-3 * rng.standard_normal(b.shape)),
        )
        for W, b in p
    ]
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


def plain_milp(p, q, lo: float, hi: float, seconds: float) -> tuple[float, float]:
    """The textbook big-M MILP of ``max_o |f_p(x)_o - f_q(x)_o|`` over the box (module
    docs): returns ``(lower, upper)``, the best incumbent and the largest dual bound."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    d = p[0][0].shape[1]
    lb, ub, integer, rows, rhs_lo, rhs_hi = [lo] * d, [hi] * d, [0] * d, [], [], []

    def var(a, b, is_int=0):
        lb.append(a), ub.append(b), integer.append(is_int)
        return len(lb) - 1

    def encode(params):
        # expressions as {variable: coefficient} plus a constant; intervals alongside
        H = [({k: 1.0}, 0.0) for k in range(d)]
        L, U = np.full(d, lo), np.full(d, hi)
        for l, (W, b) in enumerate(params):
            Z = []
            for i in range(W.shape[0]):
                coef, const = {}, float(b[i])
                for j, (e, c) in enumerate(H):
                    for v, w in e.items():
                        coef[v] = coef.get(v, 0.0) + W[i, j] * w
                    const += W[i, j] * c
                Z.append((coef, const))
            Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
            Lz, Uz = Wp @ L + Wn @ U + b, Wp @ U + Wn @ L + b
            if l == len(params) - 1:
                return Z
            H, L, U = [], np.maximum(Lz, 0), np.maximum(Uz, 0)
            for (coef, const), a, u in zip(Z, Lz, Uz):
                if u <= 0:
                    H.append(({}, 0.0))
                elif a >= 0:
                    H.append((coef, const))
                else:
                    h, z = var(0.0, u), var(0.0, 1.0, 1)
                    # h >= z, h <= z - a (1 - t), h <= u t   (t the binary)
                    for row, c_lo, c_hi in (
                        ({**coef, h: -1.0}, -np.inf, -const),
                        ({**{v: -w for v, w in coef.items()}, h: 1.0, z: -a}, -np.inf, const - a),
                        ({h: 1.0, z: -u}, -np.inf, 0.0),
                    ):
                        rows.append(row), rhs_lo.append(c_lo), rhs_hi.append(c_hi)
                    H.append(({h: 1.0}, 0.0))

    out_p, out_q = encode(p), encode(q)
    n = len(lb)
    A = np.zeros((len(rows), n))
    for r, row in enumerate(rows):
        for v, w in row.items():
            A[r, v] += w
    cons = [LinearConstraint(A, rhs_lo, rhs_hi)] if rows else []
    programs = [(o, sg) for o in range(len(out_p)) for sg in (1.0, -1.0)]
    best_lo, best_hi = 0.0, 0.0
    t_end = time.perf_counter() + seconds
    for k, (o, sg) in enumerate(programs):
        c = np.zeros(n)
        for v, w in out_p[o][0].items():
            c[v] -= sg * w
        for v, w in out_q[o][0].items():
            c[v] += sg * w
        const = sg * (out_p[o][1] - out_q[o][1])
        share = max(0.05, (t_end - time.perf_counter()) / (len(programs) - k))
        res = milp(
            c,
            constraints=cons,
            integrality=integer,
            bounds=Bounds(lb, ub),
            options={"time_limit": share},
        )
        if res.x is not None:
            best_lo = max(best_lo, -res.fun + const)
        dual = getattr(res, "mip_dual_bound", None)
        best_hi = max(
            best_hi, (-dual + const) if dual is not None and np.isfinite(dual) else np.inf
        )
    return best_lo, best_hi


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (for tests)")
    args = parser.parse_args(argv)
    cases = (
        [([3, 6, 6, 1], -1.0, 1.0)]
        if args.quick
        else [
            ([8, 32, 32, 1], -1.0, 1.0),
            ([64, 32, 16, 10], 0.0, 1.0),
            ([784, 64, 32, 10], 0.0, 1.0),
        ]
    )
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
        m_lo, m_hi = plain_milp(p, q, lo, hi, t_ours)
        size = f"{'-'.join(map(str, widths))} on [{lo:g}, {hi:g}]^{widths[0]}"
        rows.append(
            {
                "widths": widths,
                "lower": r.lower,
                "upper": r.upper,
                "closed": closed,
                "sampled": sampled,
                "seconds": t_ours,
                "method": r.upper_method,
                "plain_milp": [m_lo, m_hi],
            }
        )
        rows.append(
            suite_row(
                "relu distance of two checkpoints (certified interval)",
                size,
                t_ours,
                "-",
                None,
                note=f"[{r.lower:.4g}, {r.upper:.4g}] by {r.upper_method} (certified="
                f"{r.certified}); gap <= 10% of the difference: "
                + (f"reached in {t_ours:.1f} s" if closed else "not reached")
                + f"; dense sampling for the same time ({n:,} points): {sampled:.4g}, "
                f"{'below' if sampled < r.lower else 'not below'} our lower bound; the plain "
                f"big-M MILP (scipy milp, interval big-M, no tightening) for the same time: "
                + (
                    f"[{m_lo:.4g}, {m_hi:.4g}] (floating point), its upper bound "
                    f"{m_hi / r.upper:.3g}x ours"
                    if np.isfinite(m_hi)
                    else f"no upper bound (HiGHS stopped at the time limit without a dual bound; "
                    f"best incumbent {m_lo:.4g})"
                ),
            )
        )
        print(
            f"{size}: [{r.lower:.4g}, {r.upper:.4g}] by {r.upper_method} in {t_ours:.1f} s "
            f"(10% gap {'reached' if closed else 'not reached'}); sampling {sampled:.4g} "
            f"({n:,} points); plain MILP [{m_lo:.4g}, {m_hi:.4g}]"
        )
    return rows


if __name__ == "__main__":
    main()
