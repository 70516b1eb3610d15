"""The Riemannian flow on the issue's cases, counted (not timed).

1. 100 runs of :func:`compare_with_parameter_flow` on strided 1D networks ([3, 2, 2]
   strides [2, 2], [2, 2] stride [2], [2, 3, 2] strides [3, 2], in turn), each with a
   square loss from random data whose targets are realized by another network of the
   same architecture, a random initialization, t_final = 1 and the initial lift from the
   fiber: failures, and the largest difference of v(t) from the parameter flow.
2. :func:`compare_lifts` on 18 instances (3 architectures x 6 seeds, t = 2): each lift's
   outcome (finished, or the time where its branch reached a singular point).

    python benchmarks/riemannian_flows.py [--runs N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neuromanifold import LinearConvNet, NeuromanifoldError, SquareLoss
from neuromanifold.flows import compare_lifts, compare_with_parameter_flow


def problem(net, seed):
    """Teacher-realizable square loss and a random initialization."""
    rng = np.random.default_rng(seed)
    teacher = net.random_params(rng)
    shape = tuple(k + 2 * s for k, s in zip(net.end_to_end_shape, net.end_to_end_stride))
    X = rng.standard_normal((net.end_to_end_size + 2,) + shape)
    return SquareLoss.from_data(net, X, net.apply(teacher, X)), net.random_params(rng)


def hundred_runs(runs: int) -> dict:
    archs = [
        LinearConvNet([3, 2, 2], [2, 2]),
        LinearConvNet([2, 2], [2]),
        LinearConvNet([2, 3, 2], [3, 2]),
    ]
    failures, rows = 0, []
    for i in range(runs):
        net = archs[i % 3]
        loss, theta = problem(net, 1000 + i)
        try:
            c = compare_with_parameter_flow(net, theta, loss, 1.0)
        except NeuromanifoldError as err:
            failures += 1
            print(f"run {i} {net!r}: {type(err).__name__}: {err}")
            continue
        r = c.riemannian
        rows.append(
            (
                c.max_difference,
                r.max_kernel_mismatch,
                r.max_invariant_drift,
                r.max_lift_residual,
                r.min_singular_value,
            )
        )
    a = np.array(rows)
    return dict(
        runs=runs,
        failures=failures,
        max_difference=a[:, 0].max(),
        median_difference=float(np.median(a[:, 0])),
        max_kernel_mismatch=a[:, 1].max(),
        max_invariant_drift=a[:, 2].max(),
        max_lift_residual=a[:, 3].max(),
        min_singular_value=a[:, 4].min(),
    )


def eighteen_instances() -> dict:
    counts: dict = {}
    for net in (
        LinearConvNet([2, 2]),
        LinearConvNet([3, 2], [1]),
        LinearConvNet([3, 2, 2], [2, 2]),
    ):
        for seed in range(6):
            loss, theta = problem(net, seed)
            c = compare_lifts(net, net.end_to_end(theta), net.invariants(theta), loss, 2.0)
            for o in c.outcomes:
                counts[o.status] = counts.get(o.status, 0) + 1
            print(
                f"{net!r} seed {seed}: "
                + ", ".join(f"{o.status} (t={o.t_end:.4g})" for o in c.outcomes)
                + f"; max difference {c.max_difference:.3g}"
            )
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    summary = hundred_runs(args.runs)
    print(
        ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()
        )
    )
    print("compare_lifts outcomes:", eighteen_instances())
    print(f"({time.perf_counter() - start:.0f} s)")
    return summary


if __name__ == "__main__":
    main()
