"""Identifiability at any depth against the ground truth: every "not identifiable" comes
with a witness whose image computes the same function (the exact region engine decides)
and lies off the permutation-scaling orbit (an independent normal form says so); no
network of another depth than three layers is ever called identifiable unless it has no
hidden layer."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import DeepIdentifiability, Identifiability, identifiability
from neuromanifold.relu.symmetries import ActiveBiasShift
from tests.relu.symmetries.test_any_depth import WIDTHS, drawn, gaussian, planted
from tests.support.symmetry import ground_truth_equivalent, same_orbit

KINDS = ["dead", "active", "silent", "parallel", "none"]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(WIDTHS), st.sampled_from(KINDS), st.data())
def test_witnesses_are_fiber_points_off_the_orbit(seed, widths, kind, data):
    rng = np.random.default_rng(seed)
    P, _ = drawn(rng, widths, kind, data)
    r = identifiability(P)
    if len(widths) == 4:
        assert isinstance(r, Identifiability)
        return
    assert isinstance(r, DeepIdentifiability)
    if len(widths) == 3:  # one hidden layer: the theorem of test_shallow.py decides
        assert r.identifiable is not True or r.certified
        return
    assert r.identifiable is not True  # no characterization at these depths
    if kind != "none":
        assert r.identifiable is False and r.certified
    if r.identifiable is False:
        assert r.witnesses and len(r.witnesses) == len(r.reasons) == len(r.orbit_gaps)
        for w in r.witnesses[:3]:
            Q = w.apply(P)
            assert ground_truth_equivalent(P, Q), w
            assert not same_orbit(P, Q), w
    else:
        assert r.undecided_reason and "Phuong and Lampert" in r.undecided_reason


def test_window_symmetries_decide_deep_networks():
    # hidden layer 2 hides hyperplane 0 of hidden layer 1: nothing per layer shows it
    P = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0], [1.0, -2.0]]), np.array([-0.5, -1.0])),
        (np.array([[1.0, -1.0], [-1.0, 2.0]]), np.array([0.5, 0.25])),
        (np.array([[1.0, 2.0]]), np.zeros(1)),
    ]
    r = identifiability(P)
    assert r.identifiable is False and r.certified
    assert {w.symmetry.name for w in r.witnesses} == {"hiding_translation"}
    assert "as a three-layer window" in r.reasons[0]
    Q = r.witnesses[0].apply(P)
    assert ground_truth_equivalent(P, Q) and not same_orbit(P, Q)


def test_statuses_per_layer(rng):
    P = planted(rng, (3, 4, 3, 2, 1), "dead", 2, j=1)
    r = identifiability(P)
    assert r.dead_neurons == ((), (1,), ())
    assert len(r.active_neurons) == len(r.silent_neurons) == len(r.parallel_pairs) == 3
    d = r.to_dict()
    assert d["identifiable"] is False and d["widths"] == [3, 4, 3, 2, 1]
    assert r.describe().startswith("not identifiable (widths 3-4-3-2-1; proved")
    assert type(r).from_dict(d).witnesses == r.witnesses


def test_without_hidden_layers_and_errors(rng):
    r = identifiability([(rng.standard_normal((2, 3)), np.zeros(2))])
    assert r.identifiable is True and r.certified
    P = gaussian(rng, (2, 3, 3, 2, 1))
    with pytest.raises(InputError, match="three-layer networks"):
        identifiability(P, exact_genericity=True)
    with pytest.raises(InputError, match="tol"):
        identifiability(P, tol=-1.0)


def test_tolerance_decides_faint_structure():
    P = next(
        P
        for seed in range(100)
        if identifiability(
            P := gaussian(np.random.default_rng(seed), (2, 3, 3, 2, 1)), tol=0
        ).identifiable
        is None
    )  # nothing found as drawn
    P[2][0][:, 1] = 1e-14 * np.sign(P[2][0][:, 1])  # neuron 1 of layer 2 almost silent
    assert identifiability(P, tol=0).identifiable is None
    loose = identifiability(P, tol=1e-9)
    assert loose.identifiable is False and not loose.certified
    assert loose.silent_neurons[1] == (1,)


def test_trained_size_is_fast(rng):
    # 784-128-64-32-10 with a dead neuron in layer 3: decided in well under a second
    P = planted(rng, (784, 128, 64, 32, 10), "dead", 3, j=5)
    r = identifiability(P)
    assert r.identifiable is False and r.dead_neurons[2] == (5,)


def test_decisions_at_tol_do_not_depend_on_the_scaling_of_earlier_layers():
    # rows 0 and 1 of layer 2 are parallel but for column 0; with layer-1 neuron 0 scaled
    # by 1e12 (a point of the same orbit) their unit rows agree to 1e-12: read at tol as
    # parallel, but moving weight between them changes the function by O(1)
    P = gaussian(np.random.default_rng(2), (2, 3, 3, 2, 1))
    W2, b2 = P[1]
    W2[1], b2[1] = 2 * W2[0], 2 * b2[0]
    W2[1, 0] += 1.0
    assert identifiability(P).identifiable is None
    s = np.array([1e12, 1.0, 1.0])
    P[0] = (P[0][0] * s[:, None], P[0][1] * s)
    P[1] = (P[1][0] / s[None, :], P[1][1])
    r = identifiability(P)
    assert r.parallel_pairs[1] == ((0, 1),)  # the reading at tol ...
    assert r.identifiable is None and not r.witnesses  # ... is not taken as a symmetry


def test_a_move_read_at_tol_is_bounded():
    P = gaussian(np.random.default_rng(4), (2, 3, 3, 2, 1))
    # dead but for a 1e-13 weight: active where x_0 > 1e13, so no exact proof exists
    P[0][0][0], P[0][1][0] = (1e-13, 0.0), -1.0
    r = identifiability(P)
    assert r.identifiable is False and not r.certified
    assert 0 < r.function_bounds[0] <= 1e-9
    # later-layer signs read at tol can be proved exactly by the region engine instead
    Q = gaussian(np.random.default_rng(4), (2, 3, 3, 2, 1))
    Q[1][0][0] = -np.abs(Q[1][0][0])
    Q[1][0][0, 2], Q[1][1][0] = 1e-13, -abs(Q[1][1][0])
    r = identifiability(Q)
    assert r.identifiable is False
    assert r.certified == r.witnesses[0].applies(Q, tol=0).applies
    assert (
        identifiability(P, tol=0).identifiable is not False or identifiability(P, tol=0).certified
    )


def test_exact_signs_do_not_underflow():
    # 1e-200 * 1e-200 underflows; the signs at tol = 0 are those of the floats
    P = [
        (np.array([[1e-200]]), np.zeros(1)),
        (np.array([[1e-200]]), np.zeros(1)),
        (np.array([[1.0]]), np.zeros(1)),
        (np.array([[1.0]]), np.zeros(1)),
    ]
    assert identifiability(P, tol=0).dead_neurons == ((), (), ())
    r = identifiability(P)  # at tol, layer 2 reads as dead (its effect is 1e-400)
    assert r.identifiable is False and r.certified
    exact = [w for w, bound in zip(r.witnesses, r.function_bounds) if bound == 0.0]
    Q = exact[0].apply(P, tol=0)  # proved: layer 3 is active on every input
    from fractions import Fraction as F

    def f(N, x):  # exact evaluation
        h = [F(x)]
        for i, (W, b) in enumerate(N):
            h = [
                sum(F(float(W[j, k])) * h[k] for k in range(W.shape[1])) + F(float(b[j]))
                for j in range(W.shape[0])
            ]
            h = [max(v, 0) for v in h] if i < len(N) - 1 else h
        return h[0]

    assert all(f(P, x) == f(Q, x) for x in (1.0, -1.0, 3.0))


def test_a_dead_neuron_with_a_zero_row_leaves_the_orbit():
    P = [(np.array([[1.0], [0.0]]), np.zeros(2)), (np.array([[1.0, 1.0]]), np.zeros(1))]
    r = identifiability(P)
    assert r.identifiable is False
    assert not same_orbit(P, r.witnesses[0].apply(P))


def test_a_neuron_dead_only_on_the_image_is_a_witness():
    """Found by the fiber's cross-check: neuron 1 of hidden layer 4 of this Gaussian network
    has a positive entry (its signs do not show it dead), but the exact region engine finds
    it inactive on every region of R^d; its outgoing weights are free."""
    P = gaussian(np.random.default_rng(178), (2, 2, 3, 2, 2, 1))
    r = identifiability(P)
    assert r.identifiable is False and r.certified and r.dead_neurons[3] == ()
    w = r.witnesses[0]
    assert (w.name, w.layer, w.neuron) == ("dead_neuron_outgoing", 4, 1)
    assert "exact region engine" in r.reasons[0]
    assert "exact region engine" in w.applies(P, tol=0).reason
    Q = w.apply(P)
    assert ground_truth_equivalent(P, Q) and not same_orbit(P, Q)


def test_a_neuron_active_only_on_the_image_is_a_witness():
    """h_0 = relu(x) >= h_1 = relu(x - 1), so neuron 0 of layer 2, z = h_0 - h_1 + 0.5, is
    active on every input though its row has a negative entry: the region engine proves it,
    and its bias shifts (t >= 0) into the next layer."""
    P = [
        (np.array([[1.0], [1.0]]), np.array([0.0, -1.0])),
        (np.array([[1.0, -1.0], [-1.0, 2.0]]), np.array([0.5, 0.25])),
        (np.array([[1.0, -2.0]]), np.array([0.3])),
        (np.array([[1.5]]), np.array([0.0])),
    ]
    r = identifiability(P)
    assert r.identifiable is False and r.certified and r.active_neurons == ((), (), ())
    w = r.witnesses[0]
    assert (w.name, w.layer, w.neuron) == ("active_bias_shift", 2, 0) and w.shift > 0
    Q = w.apply(P)
    assert ground_truth_equivalent(P, Q) and not same_orbit(P, Q)
    assert not ActiveBiasShift(2, 0, -0.75).applies(P, tol=0).applies  # z - 0.75 < 0 at x <= 0
