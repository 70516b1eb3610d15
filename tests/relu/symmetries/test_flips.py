"""Flips of neurons whose linear terms cancel: the function is kept at every depth, the
flip is its own inverse, and the exact search finds planted sets and no others."""

import numpy as np
import pytest

from neuromanifold import InputError, relu
from neuromanifold.relu._symmetries.flips import cancelling_sum, zero_sum_flips
from neuromanifold.relu.symmetries import NeuronFlip


def _planted(depth_after=1, seed=0):
    """A network whose hidden layer 1 has neurons 0, 1, 2 with cancelling linear terms
    (dyadic, exact) and random later layers."""
    rng = np.random.default_rng(seed)
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]])
    b = np.array([-0.5, 0.25, 0.75, 0.0])
    C = np.zeros((3, 4))
    C[:, 3] = rng.standard_normal(3)
    v = np.array([1.0, -0.5, 2.0])
    C[:, 0], C[:, 1], C[:, 2] = v, v, -v  # v (1,0) + v (0,1) - v (1,1) = 0
    p = [(W, b), (C, rng.integers(-4, 5, 3) / 4)]  # dyadic: the flipped bias is exact
    for _ in range(depth_after):
        p.append((rng.standard_normal((2, p[-1][0].shape[0])), rng.standard_normal(2)))
    return p


@pytest.mark.parametrize("depth_after", [1, 2])
def test_the_flip_keeps_the_function_and_is_its_own_inverse(depth_after):
    p = _planted(depth_after)
    flip = NeuronFlip(1, (2, 0, 1))
    assert flip.neurons == (0, 1, 2) and flip.applies(p, tol=0)
    q = flip.apply(p, tol=0)
    X = np.random.default_rng(1).standard_normal((2000, 2)) * 5
    np.testing.assert_allclose(relu.forward(p, X), relu.forward(q, X), atol=1e-12)
    back = flip.inverse(q).apply(q, tol=0)
    for (W, b), (V, c) in zip(back, p):
        np.testing.assert_allclose(W, V, atol=1e-15)
        np.testing.assert_allclose(b, c, atol=1e-15)
    assert relu.equivalent(p, q, tol=0, method="regions").equivalent


def test_a_set_that_does_not_cancel_does_not_apply():
    p = _planted()
    assert not NeuronFlip(1, (0, 1)).applies(p, tol=0)
    assert not NeuronFlip(1, (0, 1)).applies(p, tol=1e-9)
    assert cancelling_sum(p, 1, (0, 1, 2)) == (True, 0.0)


def test_the_search_finds_the_planted_set_and_only_it():
    found = zero_sum_flips(_planted(), 1)
    assert found.sets == ((0, 1, 2),) and found.decided


def test_independent_terms_are_decided_by_the_rank():
    p = relu.ReLUNet([5, 8, 3]).random_params(0)
    found = zero_sum_flips(p, 1)
    assert found.sets == () and found.decided and found.rank == 8


@pytest.mark.parametrize(
    "bad", [dict(layer=1, neurons=()), dict(layer=1, neurons=(1, 1)), dict(layer=-1, neurons=(0,))]
)
def test_bad_flips_are_refused(bad):
    with pytest.raises(InputError):
        NeuronFlip(**bad)


def test_a_flip_outside_the_network_does_not_apply():
    p = _planted()
    assert not NeuronFlip(3, (0,)).applies(p)
    assert not NeuronFlip(1, (9,)).applies(p)


def test_a_deep_network_with_cancelling_neurons_is_not_identifiable():
    p = _planted(depth_after=2)
    r = relu.identifiability(p, tol=0)
    assert r.identifiable is False and r.certified
    assert NeuronFlip(1, (0, 1, 2)) in r.witnesses


def test_a_three_layer_network_outside_the_characterization_gets_the_flip_witness():
    """Second-layer neurons 0 and 3 (and 1 and 2) have cancelling linear terms: the
    genericity conditions fail (their kinks vanish), and the flip still proves the
    network not identifiable."""
    W1, b1 = np.array([[1.0, 0.5], [-0.5, 1.0]]), np.array([0.5, -0.25])
    W2 = np.array([[1.0, -1.0], [-1.0, 2.0], [1.0, -2.0], [-1.0, 1.0], [1.0, 0.5]])
    b2 = np.array([-1.0, 0.5, 0.25, -0.75, -0.5])
    p = [(W1, b1), (W2, b2), (np.array([[1.0, 1.0, 1.0, 1.0, 2.0]]), np.array([0.5]))]
    r = relu.identifiability(p, tol=0)
    assert r.identifiable is False and r.certified and r.undecided_reason is None
    assert NeuronFlip(2, (0, 3)) in r.witnesses
    assert relu.equivalent(p, NeuronFlip(2, (0, 3)).apply(p), tol=0, method="regions").equivalent


def test_a_flip_overrides_a_three_layer_true_whose_checked_conditions_miss_it():
    """The three second-layer neurons' rows sum to zero with equal outgoing weights: the
    genericity conditions as checked held and the three-layer route said identifiable;
    the exact flip (and the exact engine) say otherwise."""
    p = [
        (np.array([[-2, 0.25], [-1, 0.0]]), np.array([0, -2.0])),
        (np.array([[-0.25, -0.25], [1, -1.25], [-0.75, 1.5]]), np.array([0.75, -1, -0.25])),
        (np.full((1, 3), -0.75), np.zeros(1)),
    ]
    r = relu.identifiability(p, tol=0)
    assert r.identifiable is False and r.certified
    assert NeuronFlip(2, (0, 1, 2)) in r.witnesses
    assert "genericity checks do not exclude" in r.reasons[-1]
    q = NeuronFlip(2, (0, 1, 2)).apply(p, tol=0)
    assert relu.equivalent(p, q, tol=0, method="regions").equivalent


def test_the_search_refuses_a_layer_that_is_not_hidden():
    with pytest.raises(ValueError, match="hidden layer"):
        zero_sum_flips(_planted(), 0)
