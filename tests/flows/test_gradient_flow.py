"""Losses and parameter-space gradient flows (docs/concepts_linear.md §2, 1.5)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from neuromanifold import (
    ComputationLimitError,
    InputError,
    LinearConvNet,
    LinearFCNet,
    ParameterError,
    QuadraticLoss,
    SquareLoss,
    gradient_flow,
)
from neuromanifold.flows._gradient_flow import parameter_velocity
from tests.support.common import conv_nets


def _data(net, rng, n=6):
    if isinstance(net, LinearConvNet):
        X = rng.standard_normal((n,) + tuple(k + 2 for k in net.end_to_end_shape))
        Y = rng.standard_normal(net.apply(net.random_params(0), X).shape)
    else:
        X = rng.standard_normal((n, net.widths[0]))
        Y = rng.standard_normal((n, net.widths[-1]))
    return X, Y


NETS = [
    LinearConvNet([3, 2, 2], strides=[2, 2]),
    LinearConvNet([(2, 2), (2, 3)], strides=[(2, 1)]),
    LinearFCNet([2, 3, 2]),
]


@pytest.mark.parametrize("net", NETS, ids=repr)
def test_square_loss_reduction(net, rng):
    """SquareLoss.from_data is the square loss of the network, as a quadratic in v."""
    X, Y = _data(net, rng)
    loss = SquareLoss.from_data(net, X, Y)
    for _ in range(3):
        params = net.random_params(rng)
        direct = 0.5 * np.sum((net.apply(params, X) - Y) ** 2)
        assert abs(loss.value(net.end_to_end(params)) - direct) <= 1e-9 * max(1, direct)
        # gradient = M^T (M v - y)
        v = net.end_to_end(params).ravel()
        np.testing.assert_allclose(
            loss.gradient(v), loss.design.T @ (loss.design @ v - loss.targets), atol=1e-9
        )


@pytest.mark.parametrize("net", NETS, ids=repr)
def test_flow_conserves_invariants_and_decreases_loss(net, rng):
    X, Y = _data(net, rng)
    loss = SquareLoss.from_data(net, X, Y)
    flow = gradient_flow(net, net.random_params(rng), loss, 1.0, num_times=21)
    assert flow.success
    assert flow.max_invariant_drift < 1e-8
    assert flow.loss_monotone and np.all(np.diff(flow.loss) <= 1e-12 * flow.loss[0])
    assert flow.loss[-1] < flow.loss[0]
    assert flow.max_ntk_residual < 1e-6
    # the recorded trajectory is consistent: v(t) = mu(theta(t))
    for p, v in zip(flow.params, flow.end_to_end):
        np.testing.assert_allclose(net.end_to_end(p), v)
    assert flow.end_to_end.shape == (21,) + tuple(net.end_to_end_shape)
    assert flow.to_dict()["max_invariant_drift"] == flow.max_invariant_drift


@given(seed=st.integers(0, 2**31))
def test_flow_matches_explicit_euler_direction(seed):
    """The initial velocity of v equals -K grad l(v) (checked with finite differences)."""
    rng = np.random.default_rng(seed)
    net = LinearConvNet([2, 3], strides=[2])
    loss = QuadraticLoss(
        np.diag(rng.uniform(0.5, 2, net.end_to_end_size)), rng.standard_normal(net.end_to_end_size)
    )
    params = net.random_params(rng)
    h = 1e-5
    flow = gradient_flow(net, params, loss, h, num_times=2)
    vdot = (flow.end_to_end[1] - flow.end_to_end[0]).ravel() / h
    expected = -net.ntk(params) @ loss.gradient(net.end_to_end(params)).ravel()
    # forward difference: error O(h |v"|), measured against the size of the velocity
    np.testing.assert_allclose(vdot, expected, rtol=0, atol=1e-3 * np.abs(expected).max())


def test_loss_and_flow_errors():
    with pytest.raises(InputError, match="square"):
        QuadraticLoss(np.ones((2, 3)), [0, 0])
    with pytest.raises(InputError, match="symmetric"):
        QuadraticLoss([[1.0, 2.0], [0.0, 1.0]], [0, 0])
    with pytest.raises(InputError, match="2 entries"):
        QuadraticLoss(np.eye(2), [0, 0, 0])
    loss = QuadraticLoss(np.eye(2), [0, 0])
    with pytest.raises(InputError, match="2 entries"):
        loss.value([1.0, 2.0, 3.0])
    net = LinearConvNet([2, 2])
    with pytest.raises(InputError, match="3 end-to-end entries"):
        gradient_flow(net, net.random_params(0), loss, 1.0)
    loss3 = QuadraticLoss(np.eye(3), [0, 0, 0])
    with pytest.raises(InputError, match="t_final"):
        gradient_flow(net, net.random_params(0), loss3, -1.0)
    with pytest.raises(InputError, match="solver must be one of"):
        gradient_flow(net, net.random_params(0), loss3, 1.0, solver="nope")
    with pytest.raises(InputError, match="t_final"):
        gradient_flow(net, net.random_params(0), loss3, True)
    with pytest.raises(InputError, match="rtol must be a positive"):
        gradient_flow(net, net.random_params(0), loss3, 1.0, rtol="tight")
    with pytest.raises(InputError, match="net must be a network"):
        gradient_flow(object(), net.random_params(0), loss3, 1.0)
    with pytest.raises(InputError, match="offset"):
        QuadraticLoss(np.eye(2), [0, 0], offset="a")
    with pytest.raises(InputError, match="end_to_end_operator"):
        SquareLoss.from_data(object(), np.ones((3, 5)), np.ones((3, 2)))
    with pytest.raises(InputError, match="same positive number of samples"):
        SquareLoss.from_data(net, np.ones((3, 5)), np.ones((2, 3)))
    with pytest.raises(InputError, match="each target"):
        SquareLoss.from_data(net, np.ones((3, 5)), np.ones((3, 2)))


@pytest.mark.parametrize("method", ["DOP853", "RK45", "LSODA", "Radau"])
def test_stepper_matches_solve_ivp(method, rng):
    """Ground truth: the stepping loop (with budgets) samples the same trajectory as
    scipy's solve_ivp on the same right-hand side."""
    net = LinearConvNet([3, 2, 2], strides=[2, 2])
    X, Y = _data(net, rng)
    loss = SquareLoss.from_data(net, X, Y)
    params = net.random_params(rng)
    flow = gradient_flow(net, params, loss, 0.5, num_times=6, solver=method)
    velocity = parameter_velocity(net, loss)
    sol = solve_ivp(
        lambda t, y: velocity(y),
        (0.0, 0.5),
        net.flatten(params),
        method=method,
        t_eval=flow.times,
        rtol=1e-10,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        np.array([net.flatten(p) for p in flow.params]), sol.y.T, rtol=0, atol=1e-13
    )
    assert flow.success and 0 < flow.num_steps <= 10_000


def test_flow_budgets(rng):
    net = LinearFCNet([2, 3, 2])
    loss = QuadraticLoss(np.eye(4), np.ones(4))
    params = net.random_params(rng)
    with pytest.raises(ComputationLimitError, match="cannot reach t_final") as info:
        gradient_flow(net, params, loss, 1e300, num_times=3)
    assert info.value.kind == "steps" and info.value.y.shape == (net.num_params,)
    with pytest.raises(ComputationLimitError, match="max_steps=3"):
        gradient_flow(net, params, loss, 10.0, max_steps=3)
    flow = gradient_flow(net, params, loss, 1e-300, num_times=3, solver="DOP853")
    assert flow.success  # a tiny horizon is fine for an explicit method


def test_overflow_is_an_error_not_nan():
    net = LinearConvNet([2, 2], strides=[2])
    big = [np.full(2, 1e160), np.full(2, 1e160)]
    with pytest.raises(ParameterError, match="overflow"):
        gradient_flow(net, big, QuadraticLoss(np.eye(4), np.zeros(4)), 1.0)
    loss = QuadraticLoss(np.eye(4) * 1e300, np.zeros(4))
    with pytest.raises(InputError, match="overflow: the loss value"):
        loss.value(np.full(4, 1e10))
    assert loss.value(np.full(4, 1e-10)) == pytest.approx(2e280)


# ------------------------------------------------------------------ the monomial path
@given(net=conv_nets(max_layers=4, max_k=4), seed=st.integers(0, 2**31), zeros=st.integers(0, 2))
def test_monomial_velocity_equals_the_vjp(net, seed, zeros):
    """The monomial velocity is -J^T A (v - target) computed through net.vjp, to rounding,
    on random architectures (1D to 3D) with exact zero weights."""
    from neuromanifold.linear._flow_paths import MonomialPath

    if not MonomialPath.applies(net):
        return
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    for _ in range(zeros):
        l = int(rng.integers(len(params)))
        params[l].flat[int(rng.integers(params[l].size))] = 0.0
    n = net.end_to_end_size
    M = rng.standard_normal((n, n))
    loss = QuadraticLoss(M @ M.T, rng.standard_normal(n))
    out = parameter_velocity(net, loss)(net.flatten(params))
    g = loss.gradient(net.end_to_end(params))
    ref = -np.concatenate([a.ravel() for a in net.vjp(params, g)])
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))
    np.testing.assert_allclose(
        out,
        parameter_velocity(net, loss, monomials=False)(net.flatten(params)),
        rtol=0,
        atol=1e-12 * max(1.0, np.abs(ref).max()),
    )


def test_monomial_flow_is_the_convolution_flow(rng):
    """Both velocity paths give the same flow and conserve the invariants; the monomial
    path is not used beyond its size limit."""
    from neuromanifold.linear._flow_paths import MONOMIAL_MAX_TERMS, MonomialPath

    net = LinearConvNet([3, 2, 2], strides=[2, 2])
    loss = SquareLoss.from_data(net, *_data(net, rng))
    theta0 = net.flatten(net.random_params(rng))
    sols = [
        solve_ivp(
            lambda t, y, f=parameter_velocity(net, loss, monomials=m): f(y),
            (0, 3.0),
            theta0,
            method="DOP853",
            rtol=1e-11,
            atol=1e-13,
        )
        for m in (True, False)
    ]
    np.testing.assert_allclose(sols[0].y[:, -1], sols[1].y[:, -1], atol=1e-8)
    flow = gradient_flow(net, net.unflatten(theta0), loss, 3.0, num_times=5)
    assert flow.max_invariant_drift < 1e-10
    assert not MonomialPath.applies(LinearConvNet([17, 16, 16]))  # 4352 > 4096 products
    assert MONOMIAL_MAX_TERMS == 4096
    big = [np.full(2, 1e160), np.full(2, 1e160)]
    with pytest.raises(ParameterError, match="overflow"):
        parameter_velocity(
            LinearConvNet([2, 2], strides=[2]), QuadraticLoss(np.eye(4), np.zeros(4))
        )(np.concatenate(big))


def test_the_old_keyword_method_still_names_the_solver():
    """``method`` means an algorithm's route across the library; the ODE solver is
    ``solver``, and ``method=`` keeps working for a release with a DeprecationWarning."""
    net = LinearFCNet([2, 3, 2])
    loss = QuadraticLoss(np.eye(4), np.ones(4))
    params = net.random_params(0)
    with pytest.warns(DeprecationWarning, match="use solver="):
        old = gradient_flow(net, params, loss, 0.1, num_times=2, method="RK45")
    new = gradient_flow(net, params, loss, 0.1, num_times=2, solver="RK45")
    assert old.solver == new.solver == "RK45"
    with pytest.raises(InputError, match="got both"):
        gradient_flow(net, params, loss, 0.1, method="RK45", solver="RK45")
