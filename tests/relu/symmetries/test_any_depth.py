"""Symmetries of any depth: every move that applies keeps the function (the exact region
engine decides), moves off the permutation-scaling orbit, and is undone by its inverse;
a move whose condition fails does not apply."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError, SymmetryError
from neuromanifold.relu import orbit_distance
from neuromanifold.relu.symmetries import (
    ActiveBiasShift,
    DeadNeuronMove,
    DeadNeuronOutgoing,
    HidingTranslation,
    LinearBlockMixing,
    ParallelNeuronSplit,
    Scaling,
    SilentNeuronIncoming,
    WindowSymmetry,
)
from tests.support.symmetry import ground_truth_equivalent

WIDTHS = [(2, 3, 3, 2, 1), (3, 3, 2, 2), (2, 4, 1), (2, 2, 3, 2, 2, 1)]


def gaussian(rng, widths):
    return [
        (rng.standard_normal((m, n)), rng.standard_normal(m))
        for n, m in zip(widths[:-1], widths[1:])
    ]


def planted(rng, widths, kind, layer, j=0):
    """A Gaussian network with neuron ``j`` of hidden ``layer`` made ``kind``."""
    P = gaussian(rng, widths)
    W, b = P[layer - 1]
    if kind == "dead":
        if layer == 1:
            W[j], b[j] = 0.0, -abs(b[j])
        else:
            W[j], b[j] = -np.abs(W[j]), -abs(b[j])
    elif kind == "active":
        if layer == 1:
            W[j], b[j] = 0.0, abs(b[j]) + 0.5
        else:
            W[j], b[j] = np.abs(W[j]), abs(b[j])
    elif kind == "silent":
        P[layer][0][:, j] = 0.0
    elif kind == "parallel":
        W[j + 1], b[j + 1] = 2.0 * W[j], 2.0 * b[j]  # exact in floats
    return P


def drawn(rng, widths, kind, data):
    """``(P, layer)``: a Gaussian network, or one with ``kind`` planted in a hidden
    ``layer`` drawn by hypothesis (``kind="none"``: as drawn, layer ``None``)."""
    if kind == "none":
        return gaussian(rng, widths), None
    hidden = [l for l in range(1, len(widths) - 1) if kind != "parallel" or widths[l] >= 2]
    layer = data.draw(st.sampled_from(hidden))
    return planted(rng, widths, kind, layer), layer


def move_for(P, kind, layer, j=0):
    W, b = P[layer - 1]
    Wn = P[layer][0]
    if kind == "dead":
        return DeadNeuronOutgoing(layer, j, tuple(Wn[:, j] + 1.0))
    if kind == "active":
        return ActiveBiasShift(layer, j, 0.75)
    if kind == "silent":
        return SilentNeuronIncoming(layer, j, tuple(-W[j]) + (1.0 - b[j],))
    return ParallelNeuronSplit(layer, (j, j + 1), (0.5,) * Wn.shape[0])


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**31),
    st.sampled_from(WIDTHS),
    st.sampled_from(["dead", "active", "silent", "parallel"]),
    st.data(),
)
def test_moves_keep_the_function_and_leave_the_orbit(seed, widths, kind, data):
    rng = np.random.default_rng(seed)
    hidden = [l for l in range(1, len(widths) - 1) if kind != "parallel" or widths[l] >= 2]
    layer = data.draw(st.sampled_from(hidden))
    P = planted(rng, widths, kind, layer)
    move = move_for(P, kind, layer)
    assert move.applies(P, tol=0).applies
    Q = move.apply(P)
    assert ground_truth_equivalent(P, Q)
    assert orbit_distance(P, Q) > 1e-6
    back = move.inverse(P).apply(Q)
    assert all(
        np.allclose(W, V, atol=1e-12) and np.allclose(b, c, atol=1e-12)
        for (W, b), (V, c) in zip(back, P)
    )


@pytest.mark.parametrize("kind", ["dead", "active", "silent", "parallel"])
def test_moves_refuse_networks_without_their_structure(rng, kind):
    P = gaussian(rng, (2, 3, 3, 1))
    Pp = planted(np.random.default_rng(1), (2, 3, 3, 1), kind, 2)
    move = move_for(Pp, kind, 2)
    res = move.applies(P, tol=0)
    assert not res.applies and res.reason
    with pytest.raises(SymmetryError):
        move.apply(P)


def test_active_bias_shift_must_keep_the_neuron_active(rng):
    P = planted(rng, (2, 3, 3, 1), "active", 2)
    b = P[1][1][0]
    assert ActiveBiasShift(2, 0, -b).applies(P, tol=0).applies  # down to bias 0
    assert not ActiveBiasShift(2, 0, -b - 1.0).applies(P, tol=0).applies


def test_parallel_at_zero_tolerance_is_exact(rng):
    P = gaussian(rng, (2, 3, 1))
    W, b = P[0]
    W[1], b[1] = W[0] * 3.0, b[0] * 3.0
    W[1, 0] = np.nextafter(W[1, 0], np.inf)  # parallel to rounding only
    split = ParallelNeuronSplit(1, (0, 1), (1.0,))
    assert not split.applies(P, tol=0).applies and split.applies(P, tol=1e-9).applies


def test_window_symmetries_lift_three_layer_ones(rng):
    # hidden layer 2 hides hyperplane 0 of hidden layer 1 (window 1), then dead and
    # always-active neurons of hidden layer 3 (window 2)
    P = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0]]), np.array([-0.5])),
        (np.array([[-1.0], [2.0]]), np.array([-1.0, 0.5])),
        (np.array([[1.0, 3.0]]), np.zeros(1)),
    ]
    for move in (
        WindowSymmetry(1, HidingTranslation(0, 0.25)),
        WindowSymmetry(2, DeadNeuronMove(0, (-2.0, -3.0), (4.0,))),
        WindowSymmetry(2, LinearBlockMixing((1,), np.eye(1), (2.0,))),
    ):
        assert move.applies(P, tol=0).applies, move
        Q = move.apply(P)
        assert ground_truth_equivalent(P, Q) and orbit_distance(P, Q) > 1e-6
        back = move.inverse(P).apply(Q)
        assert all(np.allclose(W, V) and np.allclose(b, c) for (W, b), (V, c) in zip(back, P))
    bad = WindowSymmetry(3, HidingTranslation(0, 0.25))
    assert "start must be 1..2" in bad.applies(P).reason
    assert not WindowSymmetry(2, HidingTranslation(0, 0.25)).applies(P).applies


def test_argument_errors():
    with pytest.raises(InputError, match="symmetry must be a Symmetry"):
        WindowSymmetry(1, "flip")
    with pytest.raises(InputError, match="two different neurons"):
        ParallelNeuronSplit(1, (0, 0), (1.0,))
    with pytest.raises(InputError, match="one number"):
        ActiveBiasShift(1, 0, (1.0, 2.0))
    with pytest.raises(InputError):
        DeadNeuronOutgoing(1, -1, (1.0,))
    P = gaussian(np.random.default_rng(0), (2, 2, 1))
    assert "hidden layer 1..1" in DeadNeuronOutgoing(2, 0, (1.0,)).applies(P).reason
    assert "outgoing must have 1" in DeadNeuronOutgoing(1, 0, (1.0, 2.0)).applies(P).reason
    # a scaling is a symmetry too, but on the orbit: the moves above are what leave it
    assert orbit_distance(P, Scaling(1, (2.0, 0.5)).apply(P)) < 1e-12
