"""neuromanifold.relu.gradient_flow and the laws it conserves: rescaling laws along
random flows, the block law while its block is active (and its drift after), the
velocity against the analytic Jacobian, and errors."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neuromanifold import ComputationLimitError, InputError
from neuromanifold.relu import ReLUNet, active_blocks, block_law, gradient_flow
from neuromanifold.relu._flow.flow import _velocity, rescaling_law_terms


def _flow_or_partial(*args, **kwargs):
    """The flow, or the part of it computed before the solver stalled at a kink."""
    try:
        return gradient_flow(*args, **kwargs)
    except ComputationLimitError as err:
        return err.partial


@settings(max_examples=8)
@given(
    widths=st.lists(st.integers(1, 4), min_size=2, max_size=2),
    d=st.integers(1, 3),
    out=st.integers(1, 2),
    seed=st.integers(0, 999),
)
def test_rescaling_laws_are_conserved_along_random_three_layer_flows(widths, d, out, seed):
    rng = np.random.default_rng(seed)
    p = ReLUNet([d] + widths + [out]).random_params(seed=seed)
    X, Y = rng.standard_normal((12, d)), rng.standard_normal((12, out))
    flow = _flow_or_partial(p, X, Y, 0.3, num_times=31, max_steps=600)
    assume(len(flow.times) >= 3)  # a flow that stalls at once at a kink says nothing
    assert flow.max_law_drift < 1e-8
    assert flow.loss_monotone
    assert len(flow.law_names) >= sum(widths)


def _two_block_net(b2_first):
    """d = 1, one first-layer neuron, a block of two second-layer neurons active on the
    data x in [0.5, 1.5] at t = 0 (pre-activations x + b2_first and x/2 + 3)."""
    return [
        (np.array([[1.0]]), np.array([0.0])),
        (np.array([[1.0], [0.5]]), np.array([b2_first, 3.0])),
        (np.array([[1.0, 1.0]]), np.array([0.0])),
    ]


X_LINE = np.linspace(0.5, 1.5, 6)[:, None]


def test_block_law_is_conserved_while_the_block_stays_active():
    p = _two_block_net(0.1)
    assert active_blocks(p, X_LINE) == [[0], [0, 1]]
    flow = gradient_flow(p, X_LINE, np.full((6, 1), 4.0), 1.0, num_times=21)
    assert flow.blocks == ((2, (0, 1)),) and "block[2; 0, 1]" in flow.law_names
    assert flow.blocks_leave_time is None and flow.first_change_time is None
    assert flow.max_block_drift < 1e-9 and flow.max_law_drift < 1e-9
    assert flow.loss[-1] < 0.1 * flow.loss[0]
    # the off-diagonal entry itself moved along the flow? no: it is the conserved one
    start, end = block_law(flow.params[0], [0, 1]), block_law(flow.final_params, [0, 1])
    assert np.allclose(start, end, rtol=0, atol=1e-9 * np.abs(start).max())
    assert not np.allclose(flow.params[0][1][0], flow.final_params[1][0])


def test_block_law_drifts_once_a_neuron_of_the_block_switches_off():
    p = _two_block_net(0.3)
    flow = gradient_flow(p, X_LINE, np.full((6, 1), -1.0), 1.0, num_times=201)
    leave = flow.blocks_leave_time
    assert leave is not None and 0.02 < leave < 1.0  # several samples before it
    assert flow.max_block_drift_while_active < 1e-9  # conserved while active ...
    assert flow.max_block_drift > 1e-3  # ... not after
    assert flow.max_law_drift < 1e-9  # rescaling laws: always
    assert flow.pattern_changes.sum() > 0 and flow.first_change_time <= leave


def test_velocity_is_minus_the_jacobian_transpose_times_the_residual(rng):
    net = ReLUNet([3, 4, 3, 2])
    p = net.random_params(seed=5)
    X, Y = rng.standard_normal((7, 3)), rng.standard_normal((7, 2))
    res = net.forward(p, X) - Y
    expected = -net.jacobian(p, X).T @ res.ravel()
    got = _velocity(net, X, Y)(net.flatten(p))
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_law_values_are_tracked_and_match_block_law():
    p = _two_block_net(0.1)
    flow = gradient_flow(p, X_LINE, np.full((6, 1), 4.0), 0.2, num_times=3, laws=[(2, [0, 1])])
    names = list(flow.law_names)
    assert names[:3] == [n for n, _ in rescaling_law_terms((1, 1, 2, 1))]
    B = block_law(p, [0, 1])
    assert flow.law_values[0, names.index("block[2; 0, 1]")] == pytest.approx(B[0, 1])
    assert flow.law_values[0, names.index("rescaling[2, 1]")] == pytest.approx(B[1, 1])
    only = gradient_flow(p, X_LINE, np.full((6, 1), 4.0), 0.2, num_times=3, laws="rescaling")
    assert only.blocks == () and only.max_block_drift is None


def test_a_stall_at_a_kink_hands_back_the_partial_flow():
    rng = np.random.default_rng(3)
    W1, b1 = rng.standard_normal((3, 2)), rng.standard_normal(3)
    W2, b2 = np.abs(rng.standard_normal((2, 3))), np.array([2.0, 2.0])
    p = [(W1, b1), (W2, b2), (rng.standard_normal((1, 2)), np.zeros(1))]
    X, Y = rng.standard_normal((10, 2)), rng.standard_normal((10, 1))
    with pytest.raises(ComputationLimitError) as info:
        gradient_flow(p, X, Y, 2.0, num_times=21, max_steps=2000)
    partial = info.value.partial
    assert 2 <= len(partial.times) < 21 and not partial.success
    assert partial.max_law_drift < 1e-8


def test_block_law_formula():
    rng = np.random.default_rng(0)
    p = ReLUNet([2, 3, 4, 1]).random_params(seed=0)
    W2, b2 = p[1]
    W3 = p[2][0]
    R = np.hstack([W2[[1, 3]], b2[[1, 3], None]])
    assert np.allclose(block_law(p, [3, 1]), R @ R.T - W3[:, [1, 3]].T @ W3[:, [1, 3]])
    W1, b1 = p[0]
    R1 = np.hstack([W1, b1[:, None]])
    assert np.allclose(block_law(p, [0, 1, 2], layer=1), R1 @ R1.T - W2.T @ W2)
    del rng


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda p: block_law(p, []), "non-empty"),
        (lambda p: block_law(p, [0, 0]), "repeat"),
        (lambda p: block_law(p, [5]), "neuron indices"),
        (lambda p: block_law(p, [0], layer=3), "hidden layer"),
        (lambda p: block_law(p[:1], [0]), "need a hidden layer"),
        (lambda p: gradient_flow(p, np.ones((3, 3)), np.ones((3, 1)), 1.0), "X must have shape"),
        (lambda p: gradient_flow(p, np.ones((3, 2)), np.ones((2, 1)), 1.0), "Y must have shape"),
        (lambda p: gradient_flow(p, np.ones((3, 2)), np.ones(3), -1.0), "t_final"),
        (lambda p: gradient_flow(p, np.ones((3, 2)), np.ones(3), 1.0, num_times=1), "num_times"),
        (lambda p: gradient_flow(p, np.ones((3, 2)), np.ones(3), 1.0, solver="Euler"), "solver"),
        (lambda p: gradient_flow(p, np.ones((3, 2)), np.ones(3), 1.0, laws="all"), "laws must"),
        (
            lambda p: gradient_flow(p, np.ones((3, 2)), np.ones(3), 1.0, laws=[(2, [9])]),
            "neuron indices",
        ),
        (lambda p: active_blocks(p, np.ones((0, 2))), "N >= 1"),
    ],
)
def test_bad_input_is_an_input_error(call, match):
    p = ReLUNet([2, 3, 2, 1]).random_params(seed=0)
    with pytest.raises(InputError, match=match):
        call(p)
