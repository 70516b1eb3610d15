"""The canonical form at any depth: the same form for every permuted and rescaled copy,
the function kept (the exact region engine decides), dead, silent, constant and parallel
neurons gone, always-active biases moved out."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import canonical_form
from neuromanifold.relu._symmetries.any_depth import dead_neurons
from neuromanifold.relu.symmetries import ActiveBiasShift, random_orbit_point
from tests.relu.symmetries.test_any_depth import WIDTHS, drawn, gaussian, planted
from tests.support.symmetry import ground_truth_equivalent

DEEP = [w for w in WIDTHS if len(w) != 4]


def same(A, B, atol=1e-9):
    return len(A) == len(B) and all(
        W.shape == V.shape and np.allclose(W, V, atol=atol) and np.allclose(b, c, atol=atol)
        for (W, b), (V, c) in zip(A, B)
    )


def shuffled(rng, P):
    """A random permutation and rescaling of every hidden layer of ``P``."""
    Q = [(W.copy(), b.copy()) for W, b in P]
    for l in range(len(Q) - 1):
        n = Q[l][0].shape[0]
        perm, s = rng.permutation(n), np.exp(rng.uniform(-3, 3, n))
        W, b = Q[l]
        Q[l] = (W[perm] * s[:, None], b[perm] * s)
        Wn, bn = Q[l + 1]
        Q[l + 1] = (Wn[:, perm] / s[None, :], bn)
    return Q


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**31),
    st.sampled_from(DEEP),
    st.sampled_from(["dead", "active", "silent", "parallel", "none"]),
    st.data(),
)
def test_one_form_per_orbit_and_the_function_kept(seed, widths, kind, data):
    rng = np.random.default_rng(seed)
    P, layer = drawn(rng, widths, kind, data)
    C = canonical_form(P)
    assert same(C, canonical_form(shuffled(rng, P)))
    assert ground_truth_equivalent(P, C)
    whole = kind == "dead" and len(dead_neurons(P, layer, 0.0)) == widths[layer]
    if kind not in ("none", "active") and not whole:  # the planted neuron is gone (a
        # layer whose every neuron is dead is kept; an active one is a constant or bias 0)
        assert sum(W.shape[0] for W, _ in C) < sum(W.shape[0] for W, _ in P)
    for W, b in C[:-1]:  # rows of largest magnitude 1, sorted
        R = np.hstack([W, b[:, None]])
        assert np.allclose(np.max(np.abs(R), axis=1), 1.0)
        assert [tuple(r) for r in R] == sorted(tuple(r) for r in R)


def test_always_active_bias_is_quotiented_out(rng):
    P = planted(rng, (2, 3, 3, 2, 1), "active", 2, j=0)
    Q = ActiveBiasShift(2, 0, 1.5).apply(P)
    assert not same(P, Q) and same(canonical_form(P), canonical_form(Q))
    assert canonical_form(P)[1][1].tolist().count(0.0) >= 1


def test_dead_and_constant_neurons_leave(rng):
    for kind in ("dead", "active"):  # active in the first layer: a constant, folded
        P = planted(rng, (2, 3, 3, 2, 1), kind, 1, j=2)
        C = canonical_form(P)
        assert C[0][0].shape == (2, 2) and ground_truth_equivalent(P, C)


def test_other_depths_and_errors(rng):
    P = gaussian(rng, (2, 3, 3, 2, 1))
    with pytest.raises(InputError, match="tol > 0"):
        canonical_form(P, tol=0)
    affine = [(rng.standard_normal((2, 3)), np.ones(2))]
    assert same(canonical_form(affine), affine, atol=0)
    T = gaussian(rng, (2, 2, 2, 1))  # three layers: the bottleneck canonical form
    orbit, _ = random_orbit_point(T, seed=1, moves=["permutation", "scaling"])
    assert same(canonical_form(T), canonical_form(orbit))


def test_weights_at_the_float_range_end_are_refused(rng):
    P = gaussian(rng, (2, 3, 3, 2, 1))
    P[0][0][0] = (1e10, 1e-300)  # normalized, 1e-310 is subnormal: no relative bound
    with pytest.raises(InputError, match="cannot certify"):
        canonical_form(P)


def test_trained_size(rng):
    P = planted(rng, (784, 128, 64, 32, 10), "dead", 2, j=3)
    C = canonical_form(P)
    assert [W.shape[0] for W, _ in C] == [128, 63, 32, 10]


def test_an_intermediate_subnormal_is_refused():
    # 1e300 * 1.23e-290 * 1e-30 ...: a product in the normal form lands below the normal
    # range and is divided up again; its rounding has no relative bound there
    P = [
        (np.array([[1e-30]]), np.zeros(1)),
        (np.array([[1.2345678901234e-290]]), np.zeros(1)),
        (np.array([[1e300]]), np.zeros(1)),
        (np.array([[1e20]]), np.zeros(1)),
    ]
    with pytest.raises(InputError, match="cannot certify"):
        canonical_form(P)


def test_the_quotient_is_chosen():
    rng = np.random.default_rng(0)
    T = gaussian(rng, (64, 32, 16, 10))
    W, b = T[1]
    W[:2], b[:2] = -np.abs(W[:2]), -1.0  # two dead rows: kept by the full quotient
    full = canonical_form(T)
    assert [W.shape[0] for W, _ in full] == [32, 16, 10]
    assert same(full, canonical_form(shuffled(rng, T)), atol=1e-8)
    wide = gaussian(rng, (8, 16, 4, 1))  # not a bottleneck: the full quotient refuses
    with pytest.raises(InputError, match="quotient='permutation-scaling'"):
        canonical_form(wide)
    C = canonical_form(T, quotient="permutation-scaling")
    assert [W.shape[0] for W, _ in C] == [32, 14, 10]
    assert same(C, canonical_form(shuffled(rng, T), quotient="permutation-scaling"))
    with pytest.raises(InputError, match="three-layer"):
        canonical_form(gaussian(rng, (2, 3, 3, 2, 1)), quotient="all")
    with pytest.raises(InputError, match="quotient"):
        canonical_form(T, quotient="some")
