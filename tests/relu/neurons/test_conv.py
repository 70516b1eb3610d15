"""``neurons`` of a convolutional network by channel: every proved status holds at every
sampled input of the box (the channel's pre-activation at every position), the statuses at
the data points are those of the data's exact values, and the planted dead channels are
found; after a residual block nothing is claimed."""

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold.relu import ReLUConvNet
from neuromanifold.relu import layers as nl
from tests.support.common import run_cli
from tests.support.relu import planted_cnn


def _pre_activations(net: ReLUConvNet, X: np.ndarray) -> dict:
    """Every top-level affine layer's outputs at the rows of ``X``, per channel:
    ``{k: (channels, n * positions)}``."""
    h, out = X.reshape((len(X),) + net.input_shape), {}
    for k, layer in enumerate(net.layers):
        h = layer.forward(h)
        if isinstance(layer, nl.AffineLayer):
            out[k] = np.moveaxis(h, 1, 0).reshape(h.shape[1], -1)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_every_channel_status_holds_at_the_samples(seed):
    net, _ = planted_cnn(seed, 3)
    box = (np.zeros(64), np.ones(64))
    data = np.random.default_rng(seed).uniform(size=(40, 64))
    r = nm.relu.neurons(net, box, data=data, method="bounds")
    assert r.channel_layers == (0, 2, 4)
    assert all(layer[1] == "dead" for layer in r.channels)  # planted in every layer
    X = np.random.default_rng(seed + 10).uniform(size=(400, 64))
    X[:50] = np.round(X[:50])  # vertices of the box too
    Z = _pre_activations(net, X)
    for k, statuses in zip(r.channel_layers, r.channels):
        for c, status in enumerate(statuses):
            if status == "dead":
                assert np.all(Z[k][c] <= 0)
            elif status == "linear":
                assert np.all(Z[k][c] >= 0)
    D = _pre_activations(net, data)
    for k, statuses in zip(r.channel_layers, r.channels_on_data):
        for c, status in enumerate(statuses):
            z = D[k][c]
            want = (
                "both" if z.max() > 0 > z.min()
                else "inactive" if z.max() <= 0
                else "active"
            )  # fmt: skip
            assert status in (want, "undecided"), (k, c, status, want)


def test_on_r_d_only_zero_weights_prove_a_channel_dead():
    net, _ = planted_cnn(0, 2)
    r = nm.relu.neurons(net, method="bounds")
    # layer 0's planted channel is dead on the box only; layer 2's has zero weights
    assert r.channels[0][1] == "undecided" and r.channels[1][1] == "dead"
    assert r.channels_on_data is None


def test_nothing_is_claimed_after_a_residual_block():
    rng = np.random.default_rng(0)
    conv = lambda: nl.Conv(rng.standard_normal((2, 2, 3, 3)), rng.standard_normal(2), padding=1)  # noqa: E731
    net = ReLUConvNet(
        input_shape=(2, 4, 4),
        layers=[nl.Residual([conv(), nl.ReLU(), conv()], []), nl.ReLU(), conv(), nl.ReLU(),
                nl.Flatten(), nl.Dense(rng.standard_normal((1, 32)), np.zeros(1))],
    )  # fmt: skip
    r = nm.relu.neurons(net, (np.zeros(32), np.ones(32)), method="bounds")
    assert r.channel_layers == (2,) and set(r.channels[0]) == {"undecided"}


def test_a_fully_connected_network_has_no_channels():
    p = nm.relu.ReLUNet([2, 3, 1]).random_params(seed=0)
    r = nm.relu.neurons(p, (np.zeros(2), np.ones(2)))
    assert r.channel_layers == () and r.channels == () and r.channels_on_data is None
    assert type(r).from_dict(r.to_dict()).to_dict() == r.to_dict()


def test_the_cli_prints_the_channels(tmp_path):
    pytest.importorskip("onnx")
    net, _ = planted_cnn(0, 2)
    nm.io.save(net, tmp_path / "cnn.onnx")
    out = run_cli(
        "relu", "neurons", tmp_path / "cnn.onnx", "--domain", "box:0,1", "--method", "bounds"
    )
    assert out.returncode == 0, out.stderr
    assert "layer 0 (5 channels): dead on the domain [1]" in out.stdout


def test_auto_answers_a_large_dense_view_by_the_bound_engine_and_says_so():
    net, _ = planted_cnn(0, 3)  # 810 hidden neurons in its dense view
    r = nm.relu.neurons(net, (np.zeros(64), np.ones(64)))
    assert r.method == "bounds" and "dense view (810 hidden neurons)" in r.note
    assert all(layer[1] == "dead" for layer in r.channels)
