"""Budgets that hold: every exponential analysis with a ``time_limit``, on the networks
people train, measured against the rule "stops within 10 % plus 1 s of its limit, with
the partial result attached".

Networks: a scikit-learn ``MLPClassifier`` 64-32-16-10 trained on the bundled digits data
(``random_state=0``), analysed on all of R^64, and a Gaussian 784-64-32-10 (MNIST-shaped),
analysed on [0, 1]^784; near misses for the comparisons (the first bias of q moved by 1e-7).
Also a Gaussian 8-60-60-1 (the fiber) and 4-640-640-1 (equivalent to a copy whose dead
neuron has other outgoing weights), where one step that cannot be interrupted once ran past
the limit. Each analysis runs with ``time_limit`` 2 s and 5 s. A row reports the time it took,
whether it finished or stopped at the limit, whether that was within the rule, and whether the
error carried a partial result. There is no baseline: absolute figures only.

    python benchmarks/bench_budgets.py [--quick]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time
import warnings

import numpy as np
from _timing import suite_row

from neuromanifold import ComputationLimitError, io, relu

NONE = "-"


def digits_classifier():
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    X, y = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning
        clf = MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=200, random_state=0).fit(
            X / 16.0, y
        )
    return io.load(clf).params


def near_miss(p):
    q = [(W.copy(), b.copy()) for W, b in p]
    q[0][1][0] += 1e-7
    return q


def analyses(p, dom, q):
    """``(name, call)`` for every analysis with a time limit, on ``p`` (and ``q``)."""
    out = [
        ("regions", lambda t: relu.regions(p, dom, time_limit=t)),
        ("bent_hyperplanes", lambda t: relu.bent_hyperplanes(p, dom, time_limit=t)),
        ("genericity", lambda t: relu.genericity(p, dom, time_limit=t)),
        ("functional_dimension", lambda t: relu.functional_dimension(p, dom, time_limit=t)),
        ("neurons (regions)", lambda t: relu.neurons(p, dom, method="regions", time_limit=t)),
        ("reduce", lambda t: relu.reduce(p, dom, time_limit=t)),
        ("equivalent, near miss", lambda t: relu.equivalent(p, q, dom, time_limit=t)),
        (
            "equivalent (regions), near miss",
            lambda t: relu.equivalent(p, q, dom, method="regions", time_limit=t),
        ),
        ("distance, near miss", lambda t: relu.distance(p, q, dom, time_limit=t)),
    ]
    if len(p) == 3:
        out.append(("identifiability", lambda t: relu.identifiability(p, time_limit=t)))
    return out


def exact_steps():
    """``(size, name, call)`` where one uninterruptible step once ran past the limit: the
    fiber of a Gaussian 8-60-60-1 (its layered rank's last rank, one call of about 2 s),
    and the equivalence of a Gaussian 4-640-640-1 and a copy whose dead first-layer neuron
    has other outgoing weights (the exact copies, matching and reduction before the
    regions)."""
    deep = relu.ReLUNet([8, 60, 60, 1]).random_params(0)
    wide = relu.ReLUNet([4, 640, 640, 1]).random_params(0)
    wide[0][0][0], wide[0][1][0] = 0.0, -1.0
    moved = [(W.copy(), b.copy()) for W, b in wide]
    moved[1][0][:, 0] = np.random.default_rng(1).standard_normal(640)
    return [
        ("8-60-60-1 Gaussian", "fiber", lambda t: relu.fiber(deep, time_limit=t)),
        (
            "4-640-640-1 Gaussian",
            "equivalent, a dead neuron moved",
            lambda t: relu.equivalent(wide, moved, time_limit=t),
        ),
    ]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one network, one limit")
    args = parser.parse_args(argv)
    nets = [("64-32-16-10 digits", digits_classifier(), None)]
    if not args.quick:
        nets.append(
            (
                "784-64-32-10 on [0, 1]^784",
                relu.ReLUNet([784, 64, 32, 10]).random_params(0),
                (0.0, 1.0),
            )
        )
    limits = (2.0,) if args.quick else (2.0, 5.0)
    rows = []
    print(f"{'network':<28} {'analysis':<34} {'limit':>6} {'took':>7}  outcome")
    runs = [
        (size, name, call) for size, p, dom in nets for name, call in analyses(p, dom, near_miss(p))
    ]
    if not args.quick:
        runs += exact_steps()
    for size, name, call in runs:
        for limit in limits:
            t0 = time.perf_counter()
            try:
                call(limit)
                outcome, partial = "finished", None
            except ComputationLimitError as err:
                outcome, partial = "stopped", err.partial is not None
            took = time.perf_counter() - t0
            held = took <= 1.1 * limit + 1.0
            what = (
                outcome
                if partial is None
                else f"{outcome}, {'with' if partial else 'without'} a partial result"
            )
            print(
                f"{size:<28} {name:<34} {limit:>5.0f}s {took:>6.2f}s  {what}; "
                f"{'within' if held else 'BEYOND'} 10 % + 1 s"
            )
            rows.append(
                suite_row(
                    "time-limited analyses, time taken (rule: 10 % + 1 s)",
                    f"{name}: {size}, limit {limit:g} s",
                    took,
                    NONE,
                    None,
                    note=f"{what}; {'within' if held else 'BEYOND'} 1.1 x limit + 1 s",
                )
            )
    return rows


if __name__ == "__main__":
    main()
