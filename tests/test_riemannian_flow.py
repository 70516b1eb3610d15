"""Riemannian gradient flow in function space (docs/concepts_linear.md §5): lifting, agreement with the
parameter flow where the NTK is parameter-independent, different flows from different
lifts where it is not."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import (InputError, LinearConvNet, LinearFCNet, NotInNeuromanifoldError,
                           QuadraticLoss, gradient_flow)
from neuromanifold.flows import (compare_lifts, compare_with_parameter_flow, invariant_vector,
                                 lift_to_fiber, riemannian_flow)
from neuromanifold.linear._base import LinearNetBase


def _loss(net, rng, spread=1.0):
    n = net.end_to_end_size
    A = rng.standard_normal((n + 2, n))
    return QuadraticLoss(A.T @ A / n, spread * rng.standard_normal(n))


def _stride1_lifts():
    """The two fiber points of v0 = (1, -3, 2), delta = 1 for k = (2, 2), stride 1 (docs/concepts_linear.md §3),
    by hand: pi(v0) = (1 - t)(1 - 2t); layer 1 takes root 1 (lift A) or root 1/2 (lift B),
    and c^2 = ||w_1||^2 / ||root factor||^2 solves the rescaling equation for delta = 1."""
    xa = (-1 + np.sqrt(41)) / 4          # 5 / x - 2 x = 1
    xb = (-1 + np.sqrt(41)) / 10         # 2 / x - 5 x = 1
    A = [np.sqrt(xa) * np.array([1.0, -1.0]), np.array([1.0, -2.0]) / np.sqrt(xa)]
    B = [np.sqrt(xb) * np.array([1.0, -2.0]), np.array([1.0, -1.0]) / np.sqrt(xb)]
    return A, B


# ---------------------------------------------------------------------------- lifting
@given(seed=st.integers(0, 10 ** 6),
       arch=st.sampled_from([([2, 2], [2]), ([3, 2, 2], [2, 2]), ([2, 3], [3]),
                             ([(2, 2), (3, 2)], [(1, 1)]), ([(2, 1), (2, 2)], [(2, 1)])]))
@settings(max_examples=25)
def test_lift_returns_to_the_nearby_fiber_point(seed, arch):
    """From a perturbed start, Gauss-Newton lands on the isolated fiber point it started near."""
    net = LinearConvNet(*arch)
    rng = np.random.default_rng(seed)
    theta = net.random_params(rng)
    start = [w + 1e-3 * np.linalg.norm(w) * rng.standard_normal(w.shape) for w in theta]
    lift = lift_to_fiber(net, net.end_to_end(theta), net.invariants(theta), start)
    assert lift.converged and lift.residual < 1e-12
    for a, b in zip(lift.params, theta):
        np.testing.assert_allclose(a, b, atol=1e-9 * max(1.0, np.abs(b).max()))


@given(seed=st.integers(0, 10 ** 6))
@settings(max_examples=10)
def test_lift_on_positive_dimensional_fiber(seed):
    """Fully connected: the lift reaches the fiber (same W, same Delta), moving little."""
    net = LinearFCNet([2, 3, 2])
    rng = np.random.default_rng(seed)
    theta = net.random_params(rng)
    start = [W + 1e-4 * rng.standard_normal(W.shape) for W in theta]
    lift = lift_to_fiber(net, net.end_to_end(theta), net.invariants(theta), start)
    assert lift.converged and lift.residual < 1e-12
    np.testing.assert_allclose(net.end_to_end(lift.params), net.end_to_end(theta), atol=1e-11)
    np.testing.assert_allclose(invariant_vector(net, lift.params), invariant_vector(net, theta),
                               atol=1e-11)


@pytest.mark.parametrize("net", [LinearConvNet([3, 2], [2]), LinearFCNet([2, 3, 2])], ids=repr)
def test_invariant_jacobian_matches_finite_differences(net, rng):
    params = net.random_params(rng)
    theta = net.flatten(params)
    fd = np.array([(invariant_vector(net, net.unflatten(theta + 1e-6 * e))
                    - invariant_vector(net, net.unflatten(theta - 1e-6 * e))) / 2e-6
                   for e in np.eye(theta.size)]).T
    np.testing.assert_allclose(net.invariant_jacobian(params), fd, atol=1e-7)
    # the generic unit-step central difference (exact for quadratics) is the same matrix
    np.testing.assert_allclose(LinearNetBase.invariant_jacobian(net, params),
                               net.invariant_jacobian(params), atol=1e-12)


# ---------------------------------------------------------------------------- agreement
@pytest.mark.parametrize("net", [LinearConvNet([3, 2], strides=[2]),
                                 LinearConvNet([(2, 2), (2, 3)], strides=[(1, 1)])], ids=repr)
@pytest.mark.parametrize("lift_from", ["fiber", "theta0"])
def test_riemannian_flow_reproduces_parameter_flow(net, lift_from, rng):
    """NTK parameter-independent (1D strided; 2D, distinct shapes): same v(t) to 1e-6,
    whether the initial lift is taken from the fiber or is theta0 itself."""
    theta = net.random_params(rng)
    loss = _loss(net, rng)
    cmp = compare_with_parameter_flow(net, theta, loss, 1.0, num_times=11,
                                      lift=theta if lift_from == "theta0" else None)
    assert cmp.max_difference < 1e-6
    # not trivially: the trajectory moved and stayed on the fiber of delta
    assert np.linalg.norm(cmp.parameter.end_to_end[-1] - cmp.parameter.end_to_end[0]) > 1e-2
    assert cmp.riemannian.max_lift_residual < 1e-8
    for p in cmp.riemannian.lifts:
        np.testing.assert_allclose(net.invariants(p), net.invariants(theta), atol=1e-9)
    assert cmp.riemannian.loss[-1] < cmp.riemannian.loss[0] and cmp.riemannian.loss_monotone


def test_two_lifts_give_two_trajectories():
    """1D, stride 1, k = (2, 2), v0 = (1, -3, 2), delta = 1: the two lifts (root 1 or root 1/2
    in layer 1) have different NTK, and the Riemannian flows from them differ. Recomputed:
    each is the parameter flow from its lift."""
    net = LinearConvNet([2, 2])
    A, B = _stride1_lifts()
    for p in (A, B):   # the hand-made lifts are fiber points
        np.testing.assert_allclose(net.end_to_end(p), [1.0, -3.0, 2.0], atol=1e-14)
        np.testing.assert_allclose(net.invariants(p), [1.0], atol=1e-14)
    loss = QuadraticLoss(np.eye(3), [1.0, -2.5, 1.0])
    cmp = compare_lifts(net, [1.0, -3.0, 2.0], [1.0], loss, 1.0, lifts=[A, B], num_times=11)
    assert cmp.initial_ntk_difference > 1e-2
    assert cmp.max_difference > 1e-3
    assert cmp.pair == (0, 1)
    for traj, lift in zip(cmp.trajectories, (A, B)):
        par = gradient_flow(net, lift, loss, 1.0, num_times=11)
        np.testing.assert_allclose(traj, par.end_to_end, atol=1e-7)
    # and the two recomputed parameter flows differ by the reported amount
    pa, pb = (gradient_flow(net, p, loss, 1.0, num_times=11).end_to_end for p in (A, B))
    assert abs(np.linalg.norm(pa - pb, axis=1).max() / max(1.0, np.abs(cmp.trajectories).max())
               - cmp.max_difference) < 1e-6


def test_two_lifts_from_the_fiber():
    """The same comparison with the lifts taken from net.fiber: two points, two flows."""
    net = LinearConvNet([2, 2])
    loss = QuadraticLoss(np.eye(3), [1.0, -2.5, 1.0])
    cmp = compare_lifts(net, [1.0, -3.0, 2.0], [1.0], loss, 1.0, num_times=6)
    assert len(cmp.lifts) == 2
    assert cmp.max_difference > 1e-3
    hand = _stride1_lifts()
    for lift in cmp.lifts:   # each fiber point is one of the hand-made lifts, up to signs
        assert any(all(np.allclose(w, sign * h, atol=1e-9) for w, h in zip(lift, hp))
                   for hp in hand for sign in (1.0, -1.0))


def test_strided_lifts_agree_with_each_other(rng):
    """Strides > 1: every fiber point (there is one modulo signs) gives the same flow."""
    net = LinearConvNet([3, 2], strides=[2])
    theta = net.random_params(rng)
    flipped = [-theta[0], -theta[1]]
    cmp = compare_lifts(net, net.end_to_end(theta), net.invariants(theta), _loss(net, rng), 0.5,
                        lifts=[theta, flipped], num_times=5)
    assert cmp.max_difference < 1e-9 and cmp.initial_ntk_difference < 1e-12


def test_fully_connected_flow_stays_on_the_fiber(rng):
    net = LinearFCNet([2, 2, 2])
    theta = net.random_params(rng)
    flow = riemannian_flow(net, net.end_to_end(theta), net.invariants(theta), _loss(net, rng),
                           0.5, lift=theta, num_times=5)
    assert flow.success and flow.max_lift_residual < 1e-9
    for p, v in zip(flow.lifts, flow.end_to_end):
        np.testing.assert_allclose(net.end_to_end(p), v, atol=1e-9)
        np.testing.assert_allclose(invariant_vector(net, p), invariant_vector(net, theta),
                                   atol=1e-9)


# ---------------------------------------------------------------------------- errors
def test_bad_inputs(rng):
    net = LinearConvNet([2, 2], strides=[2])
    theta = net.random_params(rng)
    v, d = net.end_to_end(theta), net.invariants(theta)
    loss = _loss(net, rng)
    with pytest.raises(InputError, match="t_final"):
        riemannian_flow(net, v, d, loss, -1.0, lift=theta)
    with pytest.raises(InputError, match="method"):
        riemannian_flow(net, v, d, loss, 1.0, lift=theta, method="Euler")
    with pytest.raises(InputError, match="entries"):
        riemannian_flow(net, v, d, QuadraticLoss(np.eye(3), np.zeros(3)), 1.0, lift=theta)
    with pytest.raises(InputError, match="v0"):
        riemannian_flow(net, v[:3], d, loss, 1.0, lift=theta)
    with pytest.raises(NotInNeuromanifoldError, match="initial lift"):
        # v0 far from the neuromanifold near this lift (dimension 3 < 4: not filling)
        riemannian_flow(net, [1.0, 0.0, 0.0, 5.0], d, loss, 1.0, lift=theta)
    with pytest.raises(InputError, match="lifts"):
        compare_lifts(net, v, d, loss, 1.0, lifts=[])
    with pytest.raises(InputError, match="rtol"):
        riemannian_flow(net, v, d, loss, 1.0, lift=theta, rtol="a")
    with pytest.raises(InputError, match="tol"):
        lift_to_fiber(net, v, d, theta, tol="a")
