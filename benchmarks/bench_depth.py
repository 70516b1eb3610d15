"""Trained networks of any depth: identifiability, the canonical form, equivalence of a
permuted and rescaled copy and of a copy moved by a symmetry, a near miss, and the
functional dimension, each timed with its peak memory and whether it is certified.

Networks (scikit-learn ``MLPClassifier``, ``random_state=0``, read with ``io.load``):
64-8-16-10, 64-32-16-10 and 64-64-32-16-10 trained on the bundled digits data, and
784-256-128-10 and 784-128-64-32-10 trained for 15 epochs on an MNIST-shaped task (3,000
points of [0, 1]^784 labelled by a random linear teacher). Every analysis runs on all of
R^d, and the local verdicts and the fiber on the unit box too.

* Permuted and rescaled copy: every hidden layer permuted and rescaled (scales in
  [1/4, 4]). Baseline (same run, same pair): normalized weight matching (unit rows, one
  assignment per layer), which finds the permutation but certifies nothing.
* Moved copy: the first witness of ``identifiability`` applied (a dead neuron's outgoing
  weights changed, say), then permuted and rescaled; no baseline recovers it (absolute).
* Near miss: one first-layer row scaled by ``1 + 1e-4`` (its outgoing weights not
  compensated). Baseline (same run, same pair): dense sampling, 20,000 points at scales
  0.1, 1 and 10, counted as a witness where the difference exceeds ``tol`` times the
  scale.
* Functional dimension (``time_limit=120``). Baseline (same run, same network, where
  P <= 3,000): the numerical rank at the default ``tol`` of the dense parameter Jacobian
  at ``1.5 (P - hidden) / m`` Gaussian inputs (scales ``e^-2 .. e^4``), the textbook
  estimate (a lower bound, never certified); above that its ``P``-column SVD is not run.
* Canonical form with two rows dead (three-layer networks): two second-layer rows made
  dead, the form under every named symmetry, and whether a random orbit point (block
  refactors, second-layer flips, dead-neuron moves) gets the same form. Also on digits
  networks whose second hidden layer is the wider (64-16-32-10 and 64-32-64-10, two rows
  dead; 64-16-32-10 with three dead and three always-active rows), canonical rows only.
* The fiber (networks of other depths than three, ``time_limit=120``), on R^d and on the
  unit box (the parameters of the same function there): the dimension the listed moves
  generate, the proven upper bound ``P - rank``, and the local dimension where they meet.
* Local identifiability (``local=True``, ``time_limit=30``) on R^d, on the unit box and
  from the values at the training inputs (do they determine the parameter near itself?):
  proved from the exact rank, disproved by moves that keep the function, or undecided.
* Identifiability with one hidden layer (64-32-10 digits, 784-256-10 MNIST-shaped): the
  theorem of the kinks decides it in exact arithmetic.
* Identifiability, the canonical form and the fiber report absolute figures: no other tool
  computes them.

    python benchmarks/bench_depth.py [--quick]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time
import warnings

import numpy as np
from _timing import peak_memory_mb, pin_threads, suite_row
from bench_symmetry_recovery import normalized_matching, planted_copy

from neuromanifold import ComputationLimitError, NeuromanifoldError, io, relu
from neuromanifold._tolerance import DEFAULT_TOL, numerical_rank
from neuromanifold.relu._bounds.parameters import path_norm_scale
from neuromanifold.relu.symmetries import random_orbit_point

NONE = "-"
TASK = "trained networks of any depth"


def training_data(data: str) -> tuple:
    """``(X, y)`` of "digits" (scaled to [0, 1]) or "mnist-shaped"."""
    if data == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X / 16.0, y
    rng = np.random.default_rng(0)
    X = rng.random((3000, 784))
    return X, np.argmax((X - 0.5) @ rng.standard_normal((784, 10)), axis=1)


def trained(hidden: tuple, data: str):
    """An ``MLPClassifier`` with these hidden widths, trained on ``data`` ("digits" or
    "mnist-shaped"), as ReLU parameters."""
    from sklearn.neural_network import MLPClassifier

    X, y = training_data(data)
    epochs = 200 if data == "digits" else 15
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning
        clf = MLPClassifier(hidden_layer_sizes=hidden, max_iter=epochs, random_state=0).fit(X, y)
    return io.load(clf).params


def near_miss(p):
    q = [(W.copy(), b.copy()) for W, b in p]
    q[0][0][0] *= 1 + 1e-4
    return q


def dense_sampling(p, q, n: int = 20000, seed: int = 0):
    """``(found, largest relative difference)`` over ``n`` Gaussian points at scales 0.1,
    1 and 10."""
    rng = np.random.default_rng(seed)
    d = p[0][0].shape[1]
    X = np.vstack([rng.standard_normal((n // 3, d)) * s for s in (0.1, 1.0, 10.0)])
    diff = np.max(np.abs(relu.forward(p, X) - relu.forward(q, X)), axis=1)
    rel = diff / (path_norm_scale(p) * np.maximum(1.0, np.max(np.abs(X), axis=1)))
    return bool(np.any(rel > DEFAULT_TOL)), float(np.max(rel))


def jacobian_rank(p, seed: int = 0) -> int:
    """The dense baseline of the functional dimension (module docs)."""
    widths = [p[0][0].shape[1]] + [W.shape[0] for W, _ in p]
    P = sum(W.size + b.size for W, b in p)
    n = int(np.ceil(1.5 * (P - sum(widths[1:-1])) / widths[-1]))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, widths[0])) * np.exp(rng.uniform(-2.0, 4.0, (n, 1)))
    return numerical_rank(relu.ReLUNet(widths).jacobian(p, X), DEFAULT_TOL)[0]


#: Parameters up to which the dense Jacobian baseline runs.
JACOBIAN_LIMIT = 3000


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def canonical_with_dead_rows(row, p, dead: int = 2, active: int = 0) -> None:
    """The three-layer canonical form (every named symmetry) with ``dead`` second-layer rows
    made dead and the next ``active`` always active, and whether a random point of the orbit
    (block refactors, second-layer flips and dead-neuron moves among its moves) gets the
    same form."""
    planted = [(W.copy(), b.copy()) for W, b in p]
    W2, b2 = planted[1]
    W2[:dead], b2[:dead] = -np.abs(W2[:dead]), -1.0
    W2[dead : dead + active], b2[dead : dead + active] = np.abs(W2[dead : dead + active]), 1.0
    what = (
        "canonical form, two rows dead"
        if (dead, active) == (2, 0)
        else f"canonical form, {dead} rows dead, {active} always active"
    )
    moved, _ = random_orbit_point(planted, seed=0)
    atol = 1e-7 * max(path_norm_scale(planted), 1.0)
    try:
        took, c = timed(lambda: relu.canonical_form(planted))
        same = all(
            np.allclose(A, B, atol=atol)
            for (A, a), (B, b) in zip(c, relu.canonical_form(moved))
            for A, B in ((A, B), (a, b))
        )
        row(
            what, took, lambda: relu.canonical_form(planted), f"an orbit point's form equal: {same}"
        )
    except NeuromanifoldError as exc:  # the orientation search ran out of branches
        row(what, 0.0, None, f"refused: {str(exc)[:90]}")


def expanding_rows() -> list[dict]:
    """The canonical form with dead and always-active rows on digits networks whose second
    hidden layer is wider than the first (more crossing rows than ``n1``)."""
    rows = []
    for hidden, dead, active in (((16, 32), 2, 0), ((32, 64), 2, 0), ((16, 32), 3, 3)):
        p = trained(hidden, "digits")
        size = "-".join(map(str, (64,) + hidden + (10,))) + " digits"
        canonical_with_dead_rows(recorder(rows, size), p, dead, active)
    return rows


def shallow_rows(quick: bool) -> list[dict]:
    """Identifiability of networks with one hidden layer, decided by the theorem of the
    kinks and their gradient jumps (exact), on the digits and the MNIST-shaped task."""
    rows = []
    for hidden, data in (((32,), "digits"), ((256,), "mnist-shaped"))[: 1 if quick else 2]:
        p = trained(hidden, data)
        size = "-".join(map(str, (p[0][0].shape[1],) + hidden + (10,))) + f" {data}"
        took, r = timed(lambda: relu.identifiability(p))
        recorder(rows, size)(
            "identifiability, one hidden layer",
            took,
            lambda: relu.identifiability(p),
            f"{r.verdict}, certified={r.certified}, {len(r.witnesses)} witnesses"
            + (f"; {r.undecided_reason[:100]}" if r.identifiable is None else ""),
        )
    return rows


def recorder(rows: list, size: str):
    """``row(what, took, fn, note, baseline_name, baseline)``: appends the suite row of
    ``size`` to ``rows`` (peak memory from a rerun of ``fn``) and prints it."""

    def row(what, took, fn, note, baseline_name=NONE, baseline=None):
        peak = peak_memory_mb(fn) if fn is not None else None
        rows.append(
            suite_row(
                TASK, f"{what}: {size}", took, baseline_name, baseline, peak_mb=peak, note=note
            )
        )
        print(f"{size:<22} {what:<34} {took:>7.2f}s  {note}")

    return row


def rows_for(size: str, p, rng) -> list[dict]:
    rows = []
    row = recorder(rows, size)
    took, r = timed(lambda: relu.identifiability(p))
    row(
        "identifiability",
        took,
        lambda: relu.identifiability(p),
        f"{r.verdict}, certified={r.certified}, {len(r.witnesses)} witnesses",
    )
    d = p[0][0].shape[1]
    unit_box = (np.zeros(d), np.ones(d))
    for where, dom in (("R^d", None), ("[0, 1]^d", unit_box)):
        took, r = timed(lambda: relu.identifiability(p, dom, local=True, time_limit=30))
        word = {True: "locally identifiable", False: "not locally identifiable"}.get(
            r.locally_identifiable, "undecided"
        )
        row(
            f"local identifiability on {where}",
            took,
            None,
            f"{word} (limit 30 s); rank {r.jacobian_rank}; {r.local_reason[:110]}",
        )
    X = training_data(size.split()[-1])[0]
    took, r = timed(lambda: relu.identifiability(p, data=X, time_limit=30))
    word = {True: "locally identifiable", False: "not locally identifiable"}.get(
        r.locally_identifiable, "undecided"
    )
    row(
        "local identifiability from the training inputs",
        took,
        None,
        f"{word} from {len(X):,} points (limit 30 s); {r.local_reason[:110]}",
    )
    copy, _ = planted_copy(rng, p)
    try:
        took, c = timed(lambda: relu.canonical_form(p))
        same = all(
            np.allclose(A, B, atol=1e-8)
            for (A, a), (B, b) in zip(c, relu.canonical_form(copy))
            for A, B in ((A, B), (a, b))
        )
        row(
            "canonical form",
            took,
            lambda: relu.canonical_form(p),
            f"widths {'-'.join(str(W.shape[0]) for W, _ in c)}; the copy's form equal: {same}",
        )
    except Exception as exc:  # the three-layer form refuses non-generic networks
        row("canonical form", 0.0, None, f"refused: {str(exc)[:90]}")
    if len(p) == 3:
        canonical_with_dead_rows(row, p)
    took, e = timed(lambda: relu.equivalent(p, copy))
    t_nm, _ = timed(lambda: normalized_matching(p, copy))
    row(
        "equivalent, permuted copy",
        took,
        lambda: relu.equivalent(p, copy),
        f"{e.equivalent}, certified={e.certified}, {e.method}",
        "weight matching on normalized weights",
        t_nm,
    )
    if r.witnesses:
        moved, _ = planted_copy(rng, r.witnesses[0].apply(p))
        try:
            took, e = timed(lambda: relu.equivalent(p, moved, time_limit=60))
            note = f"{e.equivalent}, certified={e.certified}, {e.method} ({r.witnesses[0].name})"
        except ComputationLimitError:
            took, note = 60.0, f"stopped at 60 s ({r.witnesses[0].name})"
        row("equivalent, moved copy", took, None, note)
    q = near_miss(p)
    took, e = timed(lambda: relu.equivalent(p, q, time_limit=60))
    t_ds, (found, rel) = timed(lambda: dense_sampling(p, q))
    row(
        "equivalent, near miss",
        took,
        None,
        f"{e.equivalent}, certified={e.certified}, {e.method}; sampling: witness "
        f"{found} (largest difference {rel:.2g} relative)",
        "dense sampling (20,000 points)",
        t_ds,
    )
    if len(p) != 3:  # three-layer networks get the bottleneck families (no time limit)
        took, F = timed(lambda: relu.fiber(p, time_limit=120))
        state = (
            f"local dimension {F.local_dimension}, proved"
            if F.local_dimension is not None
            else f"undecided: between {F.dimension} and {F.kernel_dimension}"
        )
        row("fiber", took, None, f"{state} ({len(F.families)} move families)")
        took, F = timed(lambda: relu.fiber(p, unit_box, time_limit=120))
        state = (
            f"local dimension {F.local_dimension}, proved"
            if F.local_dimension is not None
            else f"undecided: between {F.dimension} and {F.kernel_dimension}"
        )
        row("fiber on [0, 1]^d", took, None, f"{state} ({len(F.families)} move families)")
    t0 = time.perf_counter()
    try:
        f = relu.functional_dimension(p, time_limit=120)
        note = f"rank {f.rank} of bound {f.bound}, certified={f.certified}" + (
            "" if f.certified else f" ({f.note[:80]})"
        )
    except ComputationLimitError as err:
        note = (
            "stopped, limit 120 s: "
            + str(err).split(";")[0][:100]
            + (f" (partial: rank >= {err.partial.rank})" if err.partial is not None else "")
        )
    took = time.perf_counter() - t0

    def again():  # for the peak memory: the same run
        try:
            relu.functional_dimension(p, time_limit=120)
        except ComputationLimitError:
            pass

    P = sum(W.size + b.size for W, b in p)
    if P <= JACOBIAN_LIMIT:
        t_j, rank_j = timed(lambda: jacobian_rank(p))
        row(
            "functional dimension",
            took,
            again,
            note + f"; dense Jacobian: rank {rank_j}",
            "dense Jacobian SVD at random inputs",
            t_j,
        )
    else:
        row("functional dimension", took, again, note + f"; dense Jacobian not run ({P:,} columns)")
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the smallest network only")
    args = parser.parse_args(argv)
    pin_threads()
    relu.warm_up()  # the compiled kernels load once per process, before any timing
    small = relu.ReLUNet([4, 3, 3, 2]).random_params(0)
    relu.equivalent(small, small)
    relu.canonical_form(relu.ReLUNet([4, 3, 3, 2, 2]).random_params(0))
    nets = [((8, 16), "digits")]
    if not args.quick:
        nets += [
            ((32, 16), "digits"),
            ((64, 32, 16), "digits"),
            ((256, 128), "mnist-shaped"),
            ((128, 64, 32), "mnist-shaped"),
        ]
    rows = []
    for hidden, data in nets:
        p = trained(hidden, data)
        size = "-".join(map(str, (p[0][0].shape[1],) + hidden + (10,))) + f" {data}"
        rows += rows_for(size, p, np.random.default_rng(0))
    rows += shallow_rows(args.quick)
    if not args.quick:
        rows += expanding_rows()
    return rows


if __name__ == "__main__":
    main()
