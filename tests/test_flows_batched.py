"""Many flows at once: each trajectory equals the single flow (solve_ivp), conserves the
invariants, and an absurd horizon ends with success=False instead of hanging."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import neuromanifold as nm
from neuromanifold.flows import gradient_flows
from neuromanifold.linear import random_regression_data

ARCHS = [([3, 2, 2], [2, 2]), ([2, 2], [1]), ([2, 3, 2], [3, 2]), ([(2, 2), (3, 2)], [(2, 1)]),
         ([(2, 1), (1, 2)], [(1, 1)])]


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


@pytest.mark.parametrize("kwargs, message", [
    ({"t_final": -1.0}, "t_final"), ({"num_times": 1}, "num_times"), ({"rtol": 0.0}, "rtol"),
    ({"params": []}, "non-empty list"), ({"params": [[np.ones(3)]]}, "W_1|filter|layer|shape"),
])
def test_bad_input(kwargs, message):
    net = nm.LinearConvNet([2, 2], strides=[2])
    args = {"net": net, "params": [net.random_params(seed=0)],
            "loss": nm.QuadraticLoss(np.eye(4), np.zeros(4)), "t_final": 1.0}
    args.update(kwargs)
    with pytest.raises(nm.NeuromanifoldError, match=message):
        gradient_flows(**args)
    with pytest.raises(nm.InputError, match="LinearConvNet"):
        gradient_flows(nm.LinearFCNet([2, 2]), [[np.eye(2)]], args["loss"], 1.0)


@pytest.mark.parametrize("method", ["DOP853", "RK45"])
@pytest.mark.parametrize("monomials", [True, False])
def test_both_pairs_and_both_velocity_paths_are_the_single_flow(method, monomials,
                                                               monkeypatch):
    """DOP853 and RK45, with the batch's velocity from monomials or (limit set to 0)
    from batched convolutions: each trajectory is the single flow."""
    from neuromanifold.flows import _gradient_flow
    if not monomials:
        monkeypatch.setattr(_gradient_flow, "MONOMIAL_MAX_TERMS", 0)
    net = nm.LinearConvNet([3, 2, 2], [2, 2])
    loss = nm.SquareLoss.from_data(net, *random_regression_data(net, seed=1))
    starts = [net.random_params(seed=s) for s in range(3)]
    res = gradient_flows(net, starts, loss, 0.5, num_times=3, method=method)
    assert res.success.all() and res.max_invariant_drift.max() < 1e-9
    for i, p in enumerate(starts):
        single = nm.gradient_flow(net, p, loss, 0.5, num_times=3)
        scale = max(1.0, np.abs(single.end_to_end).max())
        np.testing.assert_allclose(res.end_to_end[i], single.end_to_end, atol=1e-8 * scale)
    with pytest.raises(nm.InputError, match="method"):
        gradient_flows(net, starts, loss, 0.5, method="LSODA")
