"""A two-network query decided: every sat counterexample meets its constraint in exact
arithmetic, unsat agrees with the exact supremum of the region engine, a permuted copy
is proven within any eps at once, and a budget ends in unknown with a certified
interval."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import DifferenceQuery, ReLUNet, Verification, distance, verify
from tests.support.relu import exact_outputs, float_permuted_rescaled


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10**6), ratio=st.sampled_from([0.5, 0.98, 1.02, 2.0]))
def test_the_answer_agrees_with_the_exact_supremum(seed, ratio):
    rng = np.random.default_rng(seed)
    p = ReLUNet([2, 4, 3, 2]).random_params(seed=seed)
    q = [(W + 0.2 * rng.standard_normal(W.shape), b) for W, b in p]
    lo, hi = -np.ones(2), np.ones(2)
    exact = distance(p, q, (lo, hi), method="regions", gap=0, time_limit=None)
    # equal on the box (the change only met dead neurons): |f - g| > 0 has no
    # counterexample, and float bounds cannot prove a supremum of exactly 0 (unknown)
    assume(exact.upper > 0)
    eps = ratio * exact.upper
    r = verify(p, q, DifferenceQuery.within(lo, hi, eps, 2), time_limit=15)
    if r.status == "sat":
        x = r.counterexample
        assert np.all(lo <= x) and np.all(x <= hi)
        diff = [a - b for a, b in zip(exact_outputs(p, x), exact_outputs(q, x))]
        assert max(abs(v) for v in diff) > Fraction(eps)
        assert eps < exact.upper
    elif r.status == "unsat":
        assert eps >= exact.lower
    # a decision is reached on a gap of 2 % of the supremum or more
    if abs(ratio - 1) > 0.01:
        assert r.status == ("sat" if ratio < 1 else "unsat"), r
    assert r.lower <= r.upper


def test_a_permuted_copy_is_proven_within_any_eps():
    p = ReLUNet([5, 16, 16, 3]).random_params(seed=4)
    q = float_permuted_rescaled(p, np.random.default_rng(4))
    r = verify(p, q, DifferenceQuery.within(-np.ones(5), np.ones(5), 1e-6, 3), time_limit=20)
    assert r.status == "unsat" and r.certified and r.upper < 0


def test_the_budget_ends_in_unknown_with_a_certified_interval():
    p = ReLUNet([6, 32, 32, 2]).random_params(seed=1)
    q = [(W * 1.01, b) for W, b in p]
    exact_lower = distance(p, q, (-np.ones(6), np.ones(6)), time_limit=2).lower
    # eps just above what sampling finds: neither side decides in a short budget
    query = DifferenceQuery.within(-np.ones(6), np.ones(6), exact_lower * 1.0001, 2)
    r = verify(p, q, query, time_limit=0.5)
    assert r.status in ("unknown", "sat", "unsat")
    if r.status == "unknown":
        assert not r.certified and r.lower <= 0 < r.upper
    assert r.seconds < 5


def test_general_rows_and_non_strict_constraints():
    # f - g = 0.5 everywhere: 2 * (f - g) >= 1 is met (non-strict, at equality); > 1 is
    # met nowhere, but the float bounds cannot prove a supremum of exactly 0 below 0:
    # unknown is the honest answer; > 1 + 1e-9 is proven
    f = [(np.array([[1.0]]), np.array([0.5])), (np.array([[1.0]]), np.zeros(1))]
    g = [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.zeros(1))]
    lo, hi = np.array([0.0]), np.array([1.0])
    for strict, threshold, status in (
        (False, 1.0, "sat"),
        (True, 1.0, "unknown"),
        (True, 1.0 + 1e-9, "unsat"),
    ):
        query = DifferenceQuery(
            lower=lo,
            upper=hi,
            rows=np.array([[2.0]]),
            thresholds=np.array([threshold]),
            strict=(strict,),
        )
        r = verify(f, g, query, time_limit=1)
        assert r.status == status
        if status == "sat":
            assert r.margin == 0.0 and r.violated == 0


def test_the_result_round_trips_and_bad_queries_are_refused():
    p = ReLUNet([2, 3, 1]).random_params(seed=0)
    r = verify(p, p, DifferenceQuery.within([-1, -1], [1, 1], 0.1, 1))
    assert Verification.from_dict(r.to_dict()).status == r.status == "unsat"
    with pytest.raises(InputError, match="DifferenceQuery"):
        verify(p, p, "query.vnnlib")
    with pytest.raises(InputError, match="3 coordinates; the networks take 2"):
        verify(p, p, DifferenceQuery.within([0, 0, 0], [1, 1, 1], 0.1, 1))
    with pytest.raises(InputError, match="lower <= upper"):
        DifferenceQuery.within([1, 0], [0, 1], 0.1, 1)
    with pytest.raises(InputError, match="one depth"):
        verify(
            p,
            ReLUNet([2, 3, 3, 1]).random_params(seed=0),
            DifferenceQuery.within([-1, -1], [1, 1], 0.1, 1),
        )
