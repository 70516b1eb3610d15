"""Identifiability of convolutional networks modulo channel permutation and scaling:
``False`` with the channel moves of ``reduce`` on R^d (each checked here by a second
parameter of the same architecture and the same exact outputs, off the channel orbit),
otherwise undecided with the reason; never ``True``."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError, relu
from neuromanifold.relu import ChannelIdentifiability, Identifiability, ReLUConvNet
from neuromanifold.relu import layers as nl


def _cnn(seed, kind=None):
    """Conv(1->4, 3x3) + ReLU + Conv(4->3, 2x2) + ReLU + Flatten + Dense(2) on 1x6x6, with
    ``kind`` planted in the first convolution: "duplicate" (channel 3 = 2 x channel 0),
    "dead" (channel 1 all zero, bias -1/4) or "unread" (channel 2 read by nothing)."""
    rng = np.random.default_rng(seed)
    W1, b1 = (
        np.round(rng.standard_normal((4, 1, 3, 3)) * 8) / 8,
        np.round(rng.standard_normal(4) * 8) / 8,
    )
    W2, b2 = (
        np.round(rng.standard_normal((3, 4, 2, 2)) * 8) / 8,
        np.round(rng.standard_normal(3) * 8) / 8,
    )
    if kind == "duplicate":
        W1[3], b1[3] = 2 * W1[0], 2 * b1[0]
    elif kind == "dead":
        W1[1], b1[1] = 0.0, -0.25
    elif kind == "unread":
        W2[:, 2] = 0.0
    head = np.round(rng.standard_normal((2, 3 * 3 * 3)) * 8) / 8
    layers = [
        nl.Conv(W1, b1),
        nl.ReLU(),
        nl.Conv(W2, b2),
        nl.ReLU(),
        nl.Flatten(),
        nl.Dense(head, np.zeros(2)),
    ]
    return ReLUConvNet(input_shape=(1, 6, 6), layers=layers)


def _second_parameter(net, kind):
    """Another parameter of the same architecture and function, off the channel orbit:
    the duplicate's outgoing weights moved onto channel 0 (times 2), the dead channel's
    outgoing weights changed, or the unread channel's kernel changed."""
    conv1, conv2 = net.layers[0], net.layers[2]
    W1, b1, W2 = conv1.weight.copy(), conv1.bias.copy(), conv2.weight.copy()
    if kind == "duplicate":
        W2[:, 0] += 2 * W2[:, 3]
        W2[:, 3] = 0.0
    elif kind == "dead":
        W2[:, 1] += 1.0
    else:
        W1[2] += 1.0
    layers = list(net.layers)
    layers[0] = nl.Conv(W1, b1)
    layers[2] = nl.Conv(W2, conv2.bias)
    return net.with_layers(layers)


@pytest.mark.parametrize("kind", ["duplicate", "dead", "unread"])
def test_a_planted_channel_move_proves_not_identifiable(kind):
    net = _cnn(0, kind)
    r = relu.identifiability(net)
    assert isinstance(r, ChannelIdentifiability)
    assert r.identifiable is False and r.certified and r.witnesses
    assert r.widths == (4, 3, 2)
    other = _second_parameter(net, kind)
    X = np.random.default_rng(1).standard_normal((20, 36)) * 3
    assert np.array_equal(net.exact_forward(X), other.exact_forward(X))
    # off the orbit: some kernel or outgoing column changed beyond a positive scale
    assert not all(
        np.array_equal(a.weight, b.weight)
        for a, b in zip(net.layers[::2][:2], other.layers[::2][:2])
    )
    assert Identifiability.from_dict(r.to_dict()) == r
    assert "proved" in r.describe()


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6))
def test_never_true_and_undecided_says_why(seed):
    r = relu.identifiability(_cnn(seed))
    assert r.identifiable is not True
    if r.identifiable is None:
        assert "not characterized" in r.undecided_reason and not r.certified


def test_the_local_verdict_is_refused_for_a_convolutional_network():
    with pytest.raises(InputError, match="kernels"):
        relu.identifiability(_cnn(0), local=True)
    with pytest.raises(InputError, match="kernels"):
        relu.identifiability(_cnn(0), data=np.zeros((3, 36)))


def test_a_layer_whose_only_channel_is_dead_is_not_identifiable():
    """reduce keeps a layer's last channel even when it is dead; its free outgoing
    weights still prove the network not identifiable."""
    net = ReLUConvNet(
        input_shape=(1, 4),
        layers=[
            nl.Conv(np.zeros((1, 1, 2)), np.array([-0.25])),
            nl.ReLU(),
            nl.Conv(np.ones((2, 1, 2)), np.array([0.5, 1.0])),
            nl.ReLU(),
            nl.Flatten(),
            nl.Dense(np.ones((1, 4)), np.zeros(1)),
        ],
    )
    r = relu.identifiability(net)
    assert r.identifiable is False and r.certified
    assert "kept" in r.witnesses[0]
    moved = net.with_layers(
        [net.layers[0], net.layers[1], nl.Conv(2 * np.ones((2, 1, 2)), np.array([0.5, 1.0]))]
        + list(net.layers[3:])
    )
    X = np.random.default_rng(0).standard_normal((10, 4))
    assert np.array_equal(net.exact_forward(X), moved.exact_forward(X))


@pytest.mark.parametrize(
    "bad", [dict(exact_genericity=True), dict(time_limit=-5), dict(max_regions="x")]
)
def test_bad_options_are_refused_for_a_convolutional_network(bad):
    with pytest.raises(InputError):
        relu.identifiability(_cnn(0), **bad)
