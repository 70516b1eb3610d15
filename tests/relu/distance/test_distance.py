"""The distance of two networks: the certified interval against the exact ground truth
(exact forward passes at the witness, dense sampling, the supremum the regions method of
`equivalent` computes), the MILP and budget paths, and bad input."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neuromanifold import ArchitectureError, InputError
from neuromanifold.relu import ReLUNet, distance, equivalent, forward
from tests.support.relu import exact_outputs, float_permuted_rescaled


def _exact_difference(p, q, x, relative):
    diff = max(abs(a - b) for a, b in zip(exact_outputs(p, x), exact_outputs(q, x)))
    return diff / max(Fraction(1), max(abs(Fraction(float(v))) for v in x)) if relative else diff


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 3, 2, 1], [3, 4, 3, 2], [2, 4, 1]]),
    domain=st.sampled_from([None, "orthant", (-1.0, 1.0), (-3.0, 0.5)]),
)
def test_the_interval_holds_and_closes(seed, widths, domain):
    rng = np.random.default_rng(seed)
    p, q = ReLUNet(widths).random_params(seed), ReLUNet(widths).random_params(seed + 1)
    r = distance(p, q, domain, gap=0.0)
    assert r.upper_method == "regions" and r.certified
    # closed up to the rounding of the maximizer to a float input (or a supremum approached
    # only at infinity)
    assert 0 <= r.lower <= r.upper <= r.lower * (1 + 1e-9) + 1e-300
    # lower is the exact difference at the point, which lies in the domain
    exact = _exact_difference(p, q, r.point, r.relative)
    assert abs(float(exact) - r.lower) <= 1e-15 * max(1.0, r.lower)
    assert r.domain.contains(r.point[None, :])[0]
    # no sampled input exceeds upper
    if isinstance(domain, tuple):
        X = rng.uniform(domain[0], domain[1], (20000, widths[0]))
        w = np.ones(len(X))
    else:
        X = rng.standard_normal((20000, widths[0])) * np.exp(rng.uniform(-3, 5, (20000, 1)))
        X = np.abs(X) if domain == "orthant" else X
        w = np.maximum(1.0, np.abs(X).max(axis=1))
    sampled = (np.abs(forward(p, X) - forward(q, X)).max(axis=1) / w).max()
    assert sampled <= r.upper * (1 + 1e-12)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6), eps=st.sampled_from([1e-13, 1e-11, 1e-3]))
def test_agrees_with_equivalent(seed, eps):
    """Two ground truths: `equivalent(method="regions")` bounds the relative difference
    from above when equivalent, and its witness from below when not."""
    rng = np.random.default_rng(seed)
    p = ReLUNet([2, 3, 3, 1]).random_params(seed)
    q = float_permuted_rescaled(p, rng)
    q[0][1][0] += eps
    e = equivalent(p, q, method="regions")
    r = distance(p, q, gap=0.0)
    assert r.within_tol == e.equivalent
    if e.equivalent:
        assert r.upper <= e.max_difference * e.scale * (1 + 1e-9) + 1e-300
    else:
        w = e.witness_difference / max(1.0, np.abs(e.witness).max())
        assert w <= r.upper * (1 + 1e-12)


def test_milp_bounds_from_above_uncertified():
    p, q = ReLUNet([2, 4, 3, 2]).random_params(3), ReLUNet([2, 4, 3, 2]).random_params(4)
    exact = distance(p, q, (-1.0, 1.0), gap=0.0)
    r = distance(p, q, (-1.0, 1.0), method="milp")
    assert r.upper_method == "milp" and not r.certified and r.num_milps == 4
    assert r.upper >= exact.upper * (1 - 1e-9) and r.lower <= exact.upper * (1 + 1e-12)
    assert r.lower >= 0.5 * exact.lower  # the MILPs' optima are offered too


def test_the_budget_ends_with_an_honest_interval():
    p = ReLUNet([6, 12, 12, 3]).random_params(0)
    q = [(W + 1e-3, b) for W, b in p]
    r = distance(p, q, (-1.0, 1.0), method="regions", max_regions=20)
    assert not r.converged and "stopped" in r.note
    assert r.upper_method in ("parameter_bound", "interval") and r.certified
    assert 0 < r.lower <= r.upper
    X = np.random.default_rng(0).uniform(-1, 1, (5000, 6))
    assert np.abs(forward(p, X) - forward(q, X)).max() <= r.upper


def test_results_round_trip_and_read():
    p, q = ReLUNet([2, 3, 1]).random_params(0), ReLUNet([2, 3, 1]).random_params(1)
    r = distance(p, q, (-1.0, 1.0))
    assert type(r).from_dict(r.to_dict()).to_dict() == r.to_dict()
    assert "lower=" in repr(r) and r.within_tol is False


def test_bad_input():
    p = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(InputError, match="gap must be a nonnegative finite number"):
        distance(p, p, gap=-1.0)
    with pytest.raises(InputError, match="method"):
        distance(p, p, method="fast")
    with pytest.raises(ArchitectureError, match="same input dimension"):
        distance(p, ReLUNet([3, 3, 1]).random_params(0))
    same = distance(p, p, (-1.0, 1.0))
    assert same.lower == 0.0 and same.upper == 0.0 and same.within_tol


def test_within_tol_measures_as_equivalent_does_on_a_box_past_the_unit():
    L = lambda w: (np.array([[w]]), np.zeros(1))  # noqa: E731
    p, q = [L(1.0), L(1.0)], [L(1.0005), L(1.0)]
    e = equivalent(p, q, ([0.0], [10.0]), tol=1e-3)
    r = distance(p, q, ([0.0], [10.0]), tol=1e-3)
    assert e.equivalent and r.within_tol is not False
    assert r.lower == pytest.approx(5e-3)  # absolute on the box, at x = 10


# -- the top-1 classes ------------------------------------------------------------------


def _is_counterexample(p, q, x, thr):
    """Independently of the package: a class one network ranks first (ties included)
    more than ``thr`` below the other network's largest output."""
    a, b = exact_outputs(p, x), exact_outputs(q, x)
    return any(
        max(v) - v[c] > thr for u, v in ((a, b), (b, a)) for c in range(len(u)) if u[c] == max(u)
    )


def _grid(lo, hi, n, d):
    axes = np.meshgrid(*[np.linspace(lo, hi, n)] * d)
    return np.stack([a.ravel() for a in axes], axis=1)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 4, 3], [2, 3, 3, 3], [1, 4, 4, 2]]),
    eps=st.sampled_from([0.0, 1e-3, 0.3]),
)
@example(seed=2587, widths=[2, 4, 3], eps=1e-3)  # the simplex's counterexample on a tie
def test_top1_against_exact_checks_and_a_dense_grid(seed, widths, eps):
    """The verdict is decided on small networks; False carries a witness the test checks
    exactly on its own (where the exact simplex's counterexample sits on a tie of p's top
    classes, its float rounding is not one: a float input beside it is); True leaves no
    counterexample on a dense grid."""
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed)
    q = [
        (W + eps * rng.standard_normal(W.shape), b + eps * rng.standard_normal(b.shape))
        for W, b in p
    ]
    box = (-2.0, 1.5)
    r = distance(p, q, box, top1=True).top1
    assert r.certified and r.same is not None
    thr = Fraction(r.tol) * Fraction(distance(p, q, box).scale)
    if r.same is False:
        assert np.all((r.witness >= -2.0) & (r.witness <= 1.5))
        assert _is_counterexample(p, q, r.witness, thr)
        return
    assert eps == 0.0 or r.method == "regions"
    X = _grid(-2.0, 1.5, 200 if widths[0] <= 2 else 2000, widths[0])
    P, Q = forward(p, X), forward(q, X)
    rows = np.arange(len(X))
    score = np.maximum(Q.max(1) - Q[rows, P.argmax(1)], P.max(1) - P[rows, Q.argmax(1)])
    for k in np.argsort(-score)[:5]:
        assert not _is_counterexample(p, q, X[k], thr)


def test_top1_finds_a_sliver_sampling_misses():
    """Shift one output by a hair: the classes disagree only on a sliver of the box that
    20,000 samples miss; the joint regions find it, and a shift of every output by one
    constant keeps the argmax (same=True)."""
    p = ReLUNet([2, 5, 3]).random_params(4)
    scale = distance(p, p, (-1.0, 1.0)).scale
    q = [p[0], (p[1][0], p[1][1] + np.array([1e-6 * scale, 0.0, 0.0]))]
    r = distance(p, q, (-1.0, 1.0), top1=True).top1
    assert r.same is False and r.method == "regions"
    assert _is_counterexample(p, q, r.witness, Fraction(1e-9) * Fraction(scale))
    shifted = [p[0], (3.0 * p[1][0], 3.0 * p[1][1] + 0.7)]
    assert distance(p, shifted, (-1.0, 1.0), top1=True).top1.same is True
    swapped = [p[0], (p[1][0][[1, 0, 2]], p[1][1][[1, 0, 2]])]
    r = distance(p, swapped, (-1.0, 1.0), top1=True).top1
    assert r.same is False and _is_counterexample(p, swapped, r.witness, Fraction(0))


def test_top1_undecided_when_the_proof_does_not_run():
    p = ReLUNet([6, 12, 12, 3]).random_params(0)
    q = [(W * 1.0, b * 1.0) for W, b in p]
    q[1] = (q[1][0] * (1 + 1e-12), q[1][1])
    r = distance(p, q, (-1.0, 1.0), top1=True, method="milp", time_limit=1).top1
    # the bound engine proves it (the two differ by about 1e-12, within tol) ...
    assert r.same is True and r.certified and r.method == "branch_and_bound"
    # ... but not at tol = 0, where nothing but the joint regions proves 'same'
    r = distance(p, q, (-1.0, 1.0), top1=True, tol=0, method="milp", time_limit=1).top1
    assert r.same is None and not r.certified and "not enumerated" in r.note
    with pytest.raises(InputError, match="box"):
        distance(p, q, None, top1=True)
    with pytest.raises(InputError, match="top1"):
        distance(p, q, (-1.0, 1.0), top1="yes")


def test_the_bound_engine_certifies_a_permuted_rescaled_copy_at_once():
    p = ReLUNet([6, 24, 24, 3]).random_params(seed=5)
    q = float_permuted_rescaled(p, np.random.default_rng(5))
    r = distance(p, q, (-np.ones(6), np.ones(6)), method="bounds", time_limit=20)
    assert r.upper_method == "branch_and_bound" and r.certified and r.converged
    assert r.upper <= r.tol * r.scale and r.within_tol is True
    assert "aligned by the weight matching" in r.note


@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 10**6), size=st.sampled_from([1e-3, 0.3]))
def test_the_bound_engine_contains_the_exact_supremum(seed, size):
    rng = np.random.default_rng(seed)
    p = ReLUNet([3, 5, 4, 2]).random_params(seed=seed)
    q = [(W + size * rng.standard_normal(W.shape), b) for W, b in p]
    box = (-np.ones(3), np.full(3, 0.5))
    exact = distance(p, q, box, method="regions", gap=0, time_limit=None)
    r = distance(p, q, box, method="bounds", gap=1e-2 * exact.upper, time_limit=20)
    assert r.upper_method == "branch_and_bound" and r.certified
    assert r.lower <= exact.upper and r.upper >= exact.lower
    assert r.converged and r.upper <= exact.upper + 1e-2 * exact.upper * (1 + 1e-9)


def test_the_bound_engine_needs_a_box_and_one_depth():
    p = ReLUNet([2, 3, 1]).random_params(seed=0)
    with pytest.raises(InputError, match="on the whole domain"):
        distance(p, p, None, method="bounds")
    q = ReLUNet([2, 3, 3, 1]).random_params(seed=0)
    with pytest.raises(InputError, match="depths 2 and 3"):
        distance(p, q, (-1.0, 1.0), method="bounds")


def test_a_bad_or_unreachable_scheduler_is_said_within_the_time_limit():
    """An address that is not Dask's is an InputError (whatever the method); a scheduler
    that does not answer is a WorkerError within the time limit (Dask waits 30 s)."""
    import time

    from neuromanifold import WorkerError

    p = ReLUNet([2, 3, 1]).random_params(seed=1)
    q = ReLUNet([2, 3, 1]).random_params(seed=2)
    for method in ("auto", "bounds"):
        with pytest.raises(InputError, match="Dask scheduler address"):
            distance(p, q, (-1.0, 1.0), method=method, scheduler="junk://x")
    pytest.importorskip("dask.distributed")
    t0 = time.monotonic()
    with pytest.raises(WorkerError, match="cannot reach the Dask scheduler"):
        distance(p, q, (-1.0, 1.0), method="bounds", scheduler="tcp://127.0.0.1:1", time_limit=2)
    assert time.monotonic() - t0 < 2 * 1.1 + 1
