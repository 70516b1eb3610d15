"""The distance of two networks: the certified interval against the exact ground truth
(exact forward passes at the witness, dense sampling, the supremum the regions method of
`equivalent` computes), the MILP and budget paths, and bad input."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from neuromanifold import ArchitectureError, InputError
from neuromanifold.relu import ReLUNet, distance, equivalent, forward

from tests.support.relu import float_permuted_rescaled


def _exact_difference(p, q, x, relative):
    def out(params):
        h = [Fraction(float(v)) for v in x]
        for l, (W, b) in enumerate(params):
            z = [sum((Fraction(float(w)) * v for w, v in zip(row, h)), Fraction(float(c)))
                 for row, c in zip(np.asarray(W), np.asarray(b))]
            h = z if l == len(params) - 1 else [max(v, Fraction(0)) for v in z]
        return h
    diff = max(abs(a - b) for a, b in zip(out(p), out(q)))
    return diff / max(Fraction(1), max(abs(Fraction(float(v))) for v in x)) if relative else diff


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10**6), widths=st.sampled_from([[2, 3, 2, 1], [3, 4, 3, 2], [2, 4, 1]]),
       domain=st.sampled_from([None, "orthant", (-1.0, 1.0), (-3.0, 0.5)]))
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
    assert r.lower >= 0.5 * exact.lower          # the MILPs' optima are offered too


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
    assert r.lower == pytest.approx(5e-3)       # absolute on the box, at x = 10
