"""Sampled fibers of fully connected linear networks (LinearFCNet.fiber, docs/concepts_linear.md
§4)."""

import numpy as np
import pytest

from neuromanifold import InputError, LinearFCNet, NotInNeuromanifoldError


def residual(net, params, W, deltas):
    r = np.linalg.norm(net.end_to_end(params) - W) / np.linalg.norm(W)
    for D, D0 in zip(net.invariants(params), deltas):
        r = max(r, np.linalg.norm(D - D0) / max(1.0, np.linalg.norm(D0)))
    return r


@pytest.mark.parametrize(
    "widths, balanced",
    [([2, 2, 2], True), ([2, 2, 2], False), ([3, 2, 3], False), ([2, 3, 2, 2], True)],
)
def test_fiber_points_satisfy_constraints(widths, balanced):
    net = LinearFCNet(widths)
    p = net.balanced_params(seed=3) if balanced else net.random_params(seed=3)
    W, deltas = net.end_to_end(p), net.invariants(p)
    fib = net.fiber(W, deltas, num_starts=6, seed=1)
    assert not fib.certified and fib.num_points >= 2
    for q in fib.points:
        assert residual(net, q, W, deltas) < 1e-9
    # the points are genuinely different parameters
    thetas = np.array([net.flatten(q) for q in fib.points])
    assert np.max(np.linalg.norm(thetas - thetas[0], axis=1)) > 1e-3


def test_dimension_is_sum_of_orthogonal_group_dimensions():
    # Delta-preserving moves of a 2x2x2 net: one angle (dim O(2) = 1)
    net = LinearFCNet([2, 2, 2])
    for p in (net.balanced_params(seed=0), net.random_params(seed=0)):
        fib = net.fiber(net.end_to_end(p), net.invariants(p), num_starts=4, seed=0)
        assert fib.dimension == 1


def test_single_layer_fiber_is_a_point():
    net = LinearFCNet([2, 3])
    p = net.random_params(seed=0)
    fib = net.fiber(net.end_to_end(p), [], num_starts=3, seed=0)
    assert fib.num_points == 1 and fib.dimension == 0
    assert np.allclose(fib.points[0][0], p[0])


def test_bad_inputs():
    net = LinearFCNet([2, 2, 2])
    p = net.random_params(seed=0)
    W, deltas = net.end_to_end(p), net.invariants(p)
    with pytest.raises(InputError, match="shape"):
        net.fiber(W[:1], deltas)
    with pytest.raises(InputError, match="N - 1 = 1"):
        net.fiber(W, deltas + deltas)
    with pytest.raises(InputError, match="finite"):
        net.fiber(np.full((2, 2), np.nan), deltas)
    with pytest.raises(InputError, match="symmetric"):
        net.fiber(W, [np.array([[0.0, 1.0], [0.0, 0.0]])])
    with pytest.raises(InputError, match="num_starts"):
        net.fiber(W, deltas, num_starts=0)
    with pytest.raises(InputError, match="walk_steps"):
        net.fiber(W, deltas, walk_steps="a")
    with pytest.raises(InputError, match="tol must be a positive"):
        net.fiber(W, deltas, tol="a")


def test_unrealizable_raises():
    net = LinearFCNet([2, 1, 2])  # rank <= 1
    with pytest.raises(NotInNeuromanifoldError, match="rank"):
        net.fiber(np.eye(2), [np.zeros((1, 1))], num_starts=3, seed=0)
