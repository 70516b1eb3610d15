"""Identifiability with one hidden layer, decided by the theorem of the kinks and their
gradient jumps: every ``True`` is checked against the exact region engine (no flipped copy
of the network is equivalent to it, and every copy on its orbit is) and against an
independent search for a second parameter (least-squares fits from random starts, which
find the flip where a set cancels); every ``False`` witness keeps the function exactly;
planted cancelling sets, opposite rows and near cancellations at ``tol`` keep the verdict
from ``True``."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import relu
from neuromanifold.relu.symmetries import NeuronFlip
from tests.support.relu import dyadic_net, permuted_rescaled


def _flipped(p, S):
    """``p`` with the neurons ``S`` flipped and the output bias compensated, whether or
    not their linear terms cancel (built here, not by NeuronFlip)."""
    (W, b), (C, c) = p
    W, b, c = W.copy(), b.copy(), c.copy()
    S = list(S)
    c = c + C[:, S] @ b[S]
    W[S] *= -1
    b[S] *= -1
    return [(W, b), (C.copy(), c)]


def _same(p, q) -> bool:
    r = relu.equivalent(p, q, tol=0, method="regions")
    assert r.equivalent is not None
    return r.equivalent


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    d=st.integers(1, 2),
    n=st.integers(1, 4),
    m=st.integers(1, 2),
    dyadic=st.booleans(),
)
def test_every_verdict_agrees_with_the_exact_engine(seed, d, n, m, dyadic):
    rng = np.random.default_rng(seed)
    if dyadic:  # exact coincidences: zero rows, parallel rows, cancelling sets
        p = dyadic_net(rng, [d, n, m])
    else:
        p = relu.ReLUNet([d, n, m]).random_params(seed)
    r = relu.identifiability(p, tol=0)
    if r.identifiable is True:
        assert r.certified
        for k in range(1, n + 1):
            for S in combinations(range(n), k):
                assert not _same(p, _flipped(p, S)), S
        assert _same(p, permuted_rescaled(p, rng))
    elif r.identifiable is False:
        for w in r.witnesses:
            if w.applies(p, tol=0):
                assert _same(p, w.apply(p, tol=0))


def test_a_generic_shallow_network_is_identifiable_with_the_theorem_named():
    p = relu.ReLUNet([3, 6, 2]).random_params(0)
    r = relu.identifiability(p)
    assert r.identifiable is True and r.certified
    assert "kinks" in r.method and "linearly independent" in r.reasons[0]
    assert relu.Identifiability.from_dict(r.to_dict()) == r


def test_a_planted_cancelling_set_is_found_and_its_flip_keeps_the_function():
    # c_0 w_0 + c_1 w_1 + c_2 w_2 = (1, 0) + (0, 1) - (1, 1) = 0, hyperplanes distinct
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -2.0]])
    b = np.array([-1.0, 0.5, 0.25, -0.75])
    p = [(W, b), (np.array([[1.0, 1.0, -1.0, 2.0]]), np.array([0.5]))]
    r = relu.identifiability(p, tol=0)
    assert r.identifiable is False and r.certified
    assert r.witnesses == (NeuronFlip(1, (0, 1, 2)),)
    assert _same(p, r.witnesses[0].apply(p))
    assert not _same(p, _flipped(p, (0, 1)))


def test_opposite_rows_are_outside_the_theorem():
    p = [(np.array([[1.0], [-2.0]]), np.array([-1.0, 2.0])), (np.array([[1.0, 3.0]]), np.zeros(1))]
    r = relu.identifiability(p, tol=0)
    assert r.identifiable is None
    assert "multiples of each other" in r.undecided_reason


def test_a_near_cancellation_at_tol_is_not_identifiable_by_the_theorem():
    p = relu.ReLUNet([2, 5, 1]).random_params(3)
    (W, b), (C, c) = p
    W[2] = -(C[0, 0] * W[0] + C[0, 1] * W[1]) / C[0, 2]  # cancels up to rounding
    exact = relu.identifiability(p, tol=0)
    loose = relu.identifiability(p, tol=1e-9)
    assert loose.identifiable is None and "within tol" in loose.undecided_reason
    if exact.identifiable is False:  # the rounding happened to cancel exactly
        assert exact.witnesses == (NeuronFlip(1, (0, 1, 2)),)
    else:
        assert exact.identifiable is True


@pytest.mark.parametrize("dead", ["zero_row", "silent"])
def test_degenerate_neurons_are_never_identifiable(dead):
    p = relu.ReLUNet([2, 3, 1]).random_params(1)
    if dead == "zero_row":
        p[0][0][1] = 0.0
        p[0][1][1] = -1.0
    else:
        p[1][0][:, 1] = 0.0
    assert relu.identifiability(p, tol=0).identifiable is False


def _fitted(net, p, rng, starts):
    """Parameters of ``net``'s widths fitted by least squares to ``p``'s values at 400
    points of [-4, 4]^d from random starts, kept where the fit reproduces the values (to
    rounding) and the exact engine proves the function equal on R^d: an independent
    search for second parameters of the same function."""
    from scipy.optimize import least_squares

    X = rng.uniform(-4, 4, (400, p[0][0].shape[1]))
    y = relu.forward(p, X)[:, 0]
    out = []
    for _ in range(starts):
        fit = least_squares(
            lambda t: relu.forward(net.unflatten(t), X)[:, 0] - y,
            1.5 * rng.standard_normal(net.flatten(p).size),
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
            max_nfev=4000,
        )
        q = net.unflatten(fit.x)
        if np.max(np.abs(fit.fun)) < 1e-9 and relu.equivalent(p, q, tol=1e-7).equivalent:
            out.append(q)
    return out


@pytest.mark.parametrize("seed", [1, 5])  # seeds whose fits converge in a second
def test_fits_from_random_starts_land_on_the_orbit_of_an_identifiable_network(seed):
    from neuromanifold.relu._symmetries.orbit import orbit_gap

    net = relu.ReLUNet([2, 3, 1])
    p = net.random_params(seed)
    assert relu.identifiability(p, tol=0).identifiable is True
    found = _fitted(net, p, np.random.default_rng(seed), starts=12)
    assert found  # the search reached the function
    assert all(orbit_gap(p, q) < 1e-5 for q in found)


def test_the_same_search_finds_the_flipped_parameter_of_a_cancelling_set():
    """The search has the power to find a second parameter: where a set cancels, some fits
    land off the orbit (the flip)."""
    from neuromanifold.relu._symmetries.orbit import orbit_gap

    p = [
        (np.array([[1.0], [1.0]]), np.array([-1.0, -2.0])),
        (np.array([[1.0, -1.0]]), np.array([0.5])),
    ]
    assert relu.identifiability(p, tol=0).identifiable is False
    found = _fitted(relu.ReLUNet([1, 2, 1]), p, np.random.default_rng(0), starts=12)
    assert any(orbit_gap(p, q) > 1e-5 for q in found)


def test_rows_parallel_within_tol_are_not_identifiable_by_the_theorem():
    p = relu.ReLUNet([2, 3, 1]).random_params(0)
    (W, b), _ = p
    W[1], b[1] = 3 * W[0] * (1 + 1e-12), 3 * b[0] * (1 + 1e-12)
    r = relu.identifiability(p)
    assert r.identifiable is not True
    assert r.identifiable is False or "within tol" in r.undecided_reason


def test_a_flip_whose_image_is_near_the_orbit_still_decides():
    """Neurons 0 and 1 are parallel hyperplanes 2^-30 apart with cancelling terms: the
    flip swaps them up to 2^-30, below the measured orbit gap's threshold, and is still
    a second parameter (no two rows are multiples, so it is off the orbit)."""
    p = [
        (np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([0.0, 2.0**-30])),
        (np.array([[1.0, 1.0]]), np.zeros(1)),
    ]
    r = relu.identifiability(p, tol=0)
    assert r.identifiable is False and r.certified
    assert r.witnesses == (NeuronFlip(1, (0, 1)),) and r.orbit_gaps[0] < 1e-6
    assert _same(p, r.witnesses[0].apply(p, tol=0))


def test_near_cancellation_is_the_smallest_relative_sum_over_every_set():
    from neuromanifold.relu._identifiability.shallow import near_cancellation

    rng = np.random.default_rng(0)
    C, W = rng.standard_normal((2, 5)), rng.standard_normal((5, 3))
    U = [np.outer(C[:, i], W[i]) for i in range(5)]
    want = min(
        np.max(np.abs(sum(U[i] for i in S))) / max(np.max(np.abs(U[i])) for i in S)
        for k in range(1, 6)
        for S in combinations(range(5), k)
    )
    assert near_cancellation(C, W) == pytest.approx(want, rel=1e-12)
    C2 = np.ones((1, 3))
    W2 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0 + 1e-12]])
    assert near_cancellation(C2, W2) < 1e-11  # the three nearly cancel
