"""The worked examples of docs/concepts_linear.md and docs/concepts_relu.md, recomputed.

The concept pages state a few facts with concrete numbers (the ones marked *(verified)*, and
the examples of the smooth locus and of a neuromanifold that does not fill its space). Each
is checked here with the exact engine, with numbers that are exact in floating point
(powers of two), so that ``relu.equivalent`` decides about the real functions.
"""

from __future__ import annotations

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold import relu


def net3(W1, b1, W2, b2, W3, b3):
    """Three-layer parameters from nested lists."""
    return [
        (np.array(W, dtype=float).reshape(len(b), -1), np.array(b, dtype=float))
        for W, b in ((W1, b1), (W2, b2), (W3, b3))
    ]


def same(p, q) -> bool:
    return relu.equivalent(p, q, method="regions").equivalent


# ------------------------------------------------------------------ concepts_relu.md §4
@pytest.mark.parametrize(
    "t, expected", [(0.0, True), (0.5, True), (7.25, True), (-1.0, True), (-1.5, False)]
)
def test_hiding_translation_example(t, expected):
    """``W1 = 1, b1 = t, W2 = 1, b2 = -1 - t, W3 = 1, b3 = 0`` is ``relu(x - 1)`` iff t >= -1."""
    target = [(np.array([[1.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]
    assert same(net3([1], [t], [1], [-1 - t], [1], [0]), target) is expected


@pytest.mark.parametrize(
    "t, expected", [(-1.0, True), (0.5, True), (2.0, True), (-1.5, False), (2.5, False)]
)
def test_translation_interval_bounded_by_a_dead_row(t, expected):
    """Rows (1; -1) and (-1; -2) of [W2 | b2] both hide neuron 1; the valid interval is
    ``max b2_j / W2[j,1] over W2[j,1] > 0 = -1 <= t <= min over W2[j,1] < 0 = 2``."""
    W2, b2 = np.array([[1.0], [-1.0]]), np.array([-1.0, -2.0])
    p = net3([1], [0], W2, b2, [[1, 3]], [0])
    q = net3([1], [t], W2, b2 - t * W2[:, 0], [[1, 3]], [0])
    assert same(p, q) is expected


def _flip(W1, b1, a, i, flipped):
    """The discrete flip of concepts_relu.md §4 for the neurons ``flipped`` (hidden one: i)."""
    W1, b1 = W1.copy(), b1.copy()
    for k in flipped:
        W1[i] += a[k] / a[i] * W1[k]
        b1[i] += a[k] / a[i] * b1[k]
        W1[k], b1[k] = -W1[k], -b1[k]
    return W1, b1


@pytest.mark.parametrize("flipped", [(1,), (2,), (1, 2)])
def test_discrete_flips_with_one_live_second_layer_neuron(flipped):
    rng = np.random.default_rng(7)
    W1 = rng.integers(-8, 9, (3, 3)) / 4.0
    b1 = rng.integers(-8, 9, 3) / 4.0
    a, beta = np.array([2.0, -1.0, -0.5]), -0.75  # hides neuron 0
    dead = np.array([-1.0, -0.25, -2.0])  # a dead row does not matter
    W2, b2 = np.vstack([a, dead]), np.array([beta, -0.5])
    W3, b3 = np.array([[1.5, 4.0]]), np.array([0.25])
    W1f, b1f = _flip(W1, b1, a, 0, flipped)
    assert not np.allclose(W1f, W1)
    assert same([(W1, b1), (W2, b2), (W3, b3)], [(W1f, b1f), (W2, b2), (W3, b3)])


def test_flip_breaks_with_a_second_live_neuron():
    rng = np.random.default_rng(7)
    W1 = rng.integers(-8, 9, (3, 3)) / 4.0
    b1 = rng.integers(-8, 9, 3) / 4.0
    a = np.array([2.0, -1.0, -0.5])
    W2, b2 = np.vstack([a, [0.5, -1.0, 1.0]]), np.array([-0.75, 0.25])
    W3, b3 = np.array([[1.5, 1.0]]), np.array([0.25])
    W1f, b1f = _flip(W1, b1, a, 0, (1,))
    assert not same([(W1, b1), (W2, b2), (W3, b3)], [(W1f, b1f), (W2, b2), (W3, b3)])


def test_ramp_flip_example():
    p = net3([[2, -1]], [0.5], [-1.5], [3], [2], [0.75])
    q = net3([[-3, 1.5]], [2.25], [-1], [3], [-2], [6.75])
    assert same(p, q)
    # and a near miss: the output bias off by 1/4
    assert not same(p, net3([[-3, 1.5]], [2.25], [-1], [3], [-2], [7.0]))


@pytest.mark.parametrize("c", [0.5, 1.0, 4.0])
def test_ramp_from_the_other_end(c):
    """The construction behind the ramp example: with ``a < 0 < beta`` and
    ``u_0 = -beta / a``, the ramp ``relu(a relu(u) + beta)`` is rebuilt from the other end by
    ``u' = c (u_0 - u)``, second-layer row ``(-1, c u_0)``, ``W3' = W3 a / c`` and
    ``b3' = b3 + W3 beta``, for every ``c > 0``."""
    w, b, a, beta, W3, b3 = np.array([1.0, -2.0]), 0.25, -0.5, 1.0, 3.0, -0.5
    u0 = -beta / a
    p = net3([w], [b], [a], [beta], [W3], [b3])
    q = net3([-c * w], [c * (u0 - b)], [-1.0], [c * u0], [W3 * a / c], [b3 + W3 * beta])
    assert same(p, q)


def test_bottleneck_first_layer_reaches_the_whole_orthant():
    """concepts_relu.md §1: with n1 <= d and W1 of full row rank, every z >= 0 is
    ``relu(W1 x + b1)`` for some x."""
    rng = np.random.default_rng(0)
    W1, b1 = rng.standard_normal((3, 5)), rng.standard_normal(3)
    for z in rng.exponential(size=(20, 3)) * (rng.random((20, 3)) < 0.7):
        x = np.linalg.lstsq(W1, z - b1, rcond=None)[0]
        np.testing.assert_allclose(np.maximum(W1 @ x + b1, 0.0), z, atol=1e-12)


# ---------------------------------------------------------------- concepts_linear.md §1-3
def test_crossing_point_is_two_branches_with_different_tangent_spaces():
    """Filters (3, 2), stride 2, w_1 = (a, 0, b): both factors are polynomials in t^2, the
    fiber has two branches, each of full rank, whose Jacobian images differ."""
    net = nm.LinearConvNet([3, 2], strides=[2])
    params = [np.array([1.0, 0.0, -2.0]), np.array([0.5, 3.0])]
    fib = net.fiber(*net.exact_target(params))
    assert fib.certified and fib.num_points == 2
    jacobians = [net.jacobian(point) for point in fib.points]
    assert all(np.linalg.matrix_rank(J) == net.dimension for J in jacobians)
    assert np.linalg.matrix_rank(np.hstack(jacobians)) > net.dimension
    assert not nm.ntk_dependence(net, params).independent


def test_stride_one_roots_move_between_layers():
    """k = (2, 2), v = (1, -3, 2): two fiber points at delta = 1, with different NTKs."""
    net = nm.LinearConvNet([2, 2])
    fib = net.fiber([1.0, -3.0, 2.0], [1.0])
    assert fib.certified and fib.num_points == 2
    K0, K1 = (net.ntk(point) for point in fib.points)
    assert np.linalg.norm(K0 - K1) > 1e-3 * np.linalg.norm(K0)


def test_full_dimensional_does_not_mean_filling():
    """1D, stride 1: k = (2, 2) misses 1 + t^2 (no real roots); k = (3, 2) (one even size)
    contains (1 + t^2)(1 + t)."""
    two_two = nm.LinearConvNet([2, 2])
    assert two_two.is_full_dimensional
    with pytest.raises(nm.NotInNeuromanifoldError):
        two_two.fiber([1.0, 0.0, 1.0], [0.0], method="exact")
    three_two = nm.LinearConvNet([3, 2])
    assert three_two.fiber([1.0, 1.0, 1.0, 1.0], [0.0], method="exact").num_points >= 1


def test_sign_flips_keep_function_invariants_and_ntk():
    net = nm.LinearConvNet([3, 2, 2], strides=[1, 2])
    params = net.random_params(seed=3)
    flipped = [-params[0], params[1], -params[2]]
    np.testing.assert_allclose(net.end_to_end(flipped), net.end_to_end(params))
    np.testing.assert_allclose(net.invariants(flipped), net.invariants(params))
    np.testing.assert_allclose(net.ntk(flipped), net.ntk(params))
