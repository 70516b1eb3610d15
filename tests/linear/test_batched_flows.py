"""Many flows at once: each trajectory equals the single flow (solve_ivp), conserves the
invariants, and an absurd horizon ends with success=False instead of hanging."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold.linear import gradient_flows, random_regression_data

ARCHS = [
    ([3, 2, 2], [2, 2]),
    ([2, 2], [1]),
    ([2, 3, 2], [3, 2]),
    ([(2, 2), (3, 2)], [(2, 1)]),
    ([(2, 1), (1, 2)], [(1, 1)]),
]


@settings(max_examples=8)
@given(arch=st.sampled_from(ARCHS), seed=st.integers(0, 10**5), t_final=st.floats(0.1, 2.0))
def test_each_trajectory_is_the_single_flow(arch, seed, t_final):
    net = nm.LinearConvNet(*arch)
    X, Y = random_regression_data(net, seed=seed)
    loss = nm.SquareLoss.from_data(net, X, Y)
    starts = [net.random_params(seed=seed + i) for i in range(3)]
    res = gradient_flows(net, starts, loss, t_final, num_times=5)
    assert res.success.all()
    for i, p in enumerate(starts):
        single = nm.gradient_flow(net, p, loss, t_final, num_times=5)
        scale = max(1.0, np.abs(single.end_to_end).max())
        np.testing.assert_allclose(res.end_to_end[i], single.end_to_end, atol=1e-7 * scale)
        np.testing.assert_allclose(res.loss[i], single.loss, rtol=1e-7, atol=1e-10)
    assert res.max_invariant_drift.max() < 1e-8
    assert res.loss_monotone.all()


def test_budget_ends_absurd_horizons():
    net = nm.LinearConvNet([2, 2], strides=[2])
    loss = nm.QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    res = gradient_flows(net, [net.random_params(seed=0)], loss, 1e300, max_steps=50)
    assert not res.success[0] and res.steps[0] == 50
    assert np.isnan(res.loss[0, -1])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"t_final": -1.0}, "t_final"),
        ({"num_times": 1}, "num_times"),
        ({"rtol": 0.0}, "rtol"),
        ({"params": []}, "non-empty list"),
        ({"params": [[np.ones(3)]]}, "W_1|filter|layer|shape"),
    ],
)
def test_bad_input(kwargs, message):
    net = nm.LinearConvNet([2, 2], strides=[2])
    args = {
        "net": net,
        "params": [net.random_params(seed=0)],
        "loss": nm.QuadraticLoss(np.eye(4), np.zeros(4)),
        "t_final": 1.0,
    }
    args.update(kwargs)
    with pytest.raises(nm.NeuromanifoldError, match=message):
        gradient_flows(**args)
    with pytest.raises(nm.InputError, match="LinearConvNet"):
        gradient_flows(nm.LinearFCNet([2, 2]), [[np.eye(2)]], args["loss"], 1.0)


@pytest.mark.parametrize("method", ["DOP853", "RK45"])
@pytest.mark.parametrize("monomials", [True, False])
def test_both_pairs_and_both_velocity_paths_are_the_single_flow(method, monomials, monkeypatch):
    """DOP853 and RK45, with the batch's velocity from monomials or (limit set to 0)
    from batched convolutions: each trajectory is the single flow."""
    from neuromanifold.linear import _flow_paths

    if not monomials:
        monkeypatch.setattr(_flow_paths, "MONOMIAL_MAX_TERMS", 0)
    net = nm.LinearConvNet([3, 2, 2], [2, 2])
    loss = nm.SquareLoss.from_data(net, *random_regression_data(net, seed=1))
    starts = [net.random_params(seed=s) for s in range(3)]
    res = gradient_flows(net, starts, loss, 0.5, num_times=3, solver=method)
    assert res.success.all() and res.max_invariant_drift.max() < 1e-9
    for i, p in enumerate(starts):
        single = nm.gradient_flow(net, p, loss, 0.5, num_times=3)
        scale = max(1.0, np.abs(single.end_to_end).max())
        np.testing.assert_allclose(res.end_to_end[i], single.end_to_end, atol=1e-8 * scale)
    with pytest.raises(nm.InputError, match="solver"):
        gradient_flows(net, starts, loss, 0.5, solver="LSODA")


@settings(max_examples=6)
@given(arch=st.sampled_from(ARCHS), seed=st.integers(0, 10**5))
def test_one_loss_per_trajectory_is_each_flow_with_its_own_loss(arch, seed):
    """Stacked per-trajectory losses (own data each) against each trajectory alone, with
    its own loss as the shared one; the invariants are conserved per trajectory."""
    net = nm.LinearConvNet(*arch)
    rng = np.random.default_rng(seed)
    losses = [
        nm.SquareLoss.from_data(net, *random_regression_data(net, seed=rng)) for _ in range(3)
    ]
    starts = [net.random_params(seed=rng) for _ in range(3)]
    res = gradient_flows(net, starts, losses, 0.5, num_times=4)
    assert res.success.all() and res.max_invariant_drift.max() < 1e-8
    for i, (p, loss) in enumerate(zip(starts, losses)):
        alone = gradient_flows(net, [p], loss, 0.5, num_times=4)
        scale = max(1.0, np.abs(alone.end_to_end).max())
        np.testing.assert_allclose(res.end_to_end[i], alone.end_to_end[0], atol=1e-9 * scale)
        np.testing.assert_allclose(res.loss[i], alone.loss[0], rtol=1e-9, atol=1e-12)
        single = nm.gradient_flow(net, p, loss, 0.5, num_times=4)
        assert res.gradient_norm[i] == pytest.approx(single.gradient_norm, rel=1e-5, abs=1e-9)
    np.testing.assert_allclose(res.final_time, 0.5)


def test_per_trajectory_losses_differ_from_a_shared_one():
    """The stack is used per trajectory: swapping the losses swaps the results."""
    net = nm.LinearConvNet([2, 2], strides=[2])
    p = net.random_params(seed=0)
    a, b = (
        nm.QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2]),
        nm.QuadraticLoss(2 * np.eye(4), np.zeros(4), offset=1.0),
    )
    ab = gradient_flows(net, [p, p], [a, b], 1.0, num_times=3)
    ba = gradient_flows(net, [p, p], [b, a], 1.0, num_times=3)
    np.testing.assert_allclose(ab.loss[0], ba.loss[1])
    np.testing.assert_allclose(ab.loss[1], ba.loss[0])
    assert abs(ab.loss[0, -1] - ab.loss[1, -1]) > 0.1 and ab.loss[1, 0] > 1.0


def test_budget_reports_where_each_trajectory_stopped():
    net = nm.LinearConvNet([2, 2], strides=[2])
    loss = nm.QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    res = gradient_flows(
        net, [net.random_params(seed=0), net.random_params(seed=1)], loss, 1e300, max_steps=20
    )
    assert not res.success.any() and (0 < res.final_time).all() and (res.final_time < 1e3).all()
    v = net.end_to_end(res.final_params[0]).ravel()
    assert res.gradient_norm[0] == pytest.approx(
        np.linalg.norm(net.flatten(net.vjp(res.final_params[0], loss.gradient(v))))
    )
    with pytest.raises(nm.ComputationLimitError, match="time limit"):
        gradient_flows(net, [net.random_params(seed=0)], loss, 1e300, time_limit=1e-9)


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda a: [a], "one per flow"),
        (lambda a: [a, "x"], "QuadraticLoss"),
        (lambda a: [a, nm.QuadraticLoss(np.eye(3), np.zeros(3))], "acts on 3 entries"),
        (lambda a: "loss", "QuadraticLoss"),
    ],
)
def test_bad_loss_sequences(bad, message):
    net = nm.LinearConvNet([2, 2], strides=[2])
    loss = nm.QuadraticLoss(np.eye(4), np.zeros(4))
    with pytest.raises(nm.InputError, match=message):
        gradient_flows(net, [net.random_params(seed=0)] * 2, bad(loss), 1.0)


def test_a_step_whose_stages_overflow_is_shrunk_not_retried():
    """Parameters near the float64 limit make the first trial steps overflow (error NaN);
    such a step must shrink (it used to be retried at the same size for ever)."""
    net = nm.LinearConvNet([2, 2], strides=[2])
    loss = nm.QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    p = [1e30 * np.array([1.0, -1.0]), np.array([1.0, 1.0]) / 1e30]
    res = gradient_flows(net, [p], loss, 1.0, num_times=2, max_steps=50)
    assert res.rejected[0] > 0 and res.steps[0] == 50
    assert np.isfinite(net.flatten(res.final_params[0])).all()


def test_an_out_of_reach_horizon_stops_at_once_and_marks_what_was_reached():
    """t_final = 1e300 ends after a few dozen steps (as one flow does), not after the whole
    budget; the samples it did not reach are NaN, and ``reached`` says which."""
    net = nm.LinearConvNet([2, 2], strides=[2])
    loss = nm.QuadraticLoss(np.eye(4), [1.0, 0.5, -0.3, 0.2])
    res = gradient_flows(
        net, [net.random_params(seed=0), net.random_params(seed=1)], loss, 1e300, num_times=3
    )
    assert not res.success.any() and res.steps.max() < 1000  # the budget is 200,000
    assert res.reached[:, 0].all() and not res.reached[:, -1].any()
    assert np.isfinite(res.loss[res.reached]).all() and np.isnan(res.loss[~res.reached]).all()
    ok = gradient_flows(net, [net.random_params(seed=0)], loss, 1.0, num_times=3)
    assert ok.success.all() and ok.reached.all()


def test_the_old_name_warns_and_is_the_same_function():
    """The batched flows moved from ``flows`` (shared) to ``linear`` (their domain): the
    old names still work, with a DeprecationWarning naming the new one."""
    with pytest.warns(DeprecationWarning, match="neuromanifold.linear.gradient_flows"):
        old = nm.flows.gradient_flows
    assert old is gradient_flows
    with pytest.warns(DeprecationWarning, match="neuromanifold.linear.BatchedFlowResult"):
        assert nm.flows.BatchedFlowResult is nm.linear.BatchedFlowResult
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        nm.flows.nothing  # noqa: B018
