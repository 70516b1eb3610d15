"""Convolutional ReLU networks: every view of one network is the same function, and the
channel symmetries derived from the layers keep it; the dense view (a fully connected
network, the ground truth every MLP analysis reads) is checked against the structured
forward pass, an independent loop convolution and onnx's reference evaluator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold.relu import ReLUConvNet, channel_spec
from neuromanifold.relu import layers as nl
from neuromanifold.relu._core.conv.network import difference_bound, path_norm
from neuromanifold.relu._symmetries.channels import apply_channel_symmetries

from .strategies import conv_nets, random_channel_symmetries, residual_nets


def _conv_loop(x, W, b, stride, pad, dil):
    """A 2-D convolution by loops (the textbook definition)."""
    C, H, Wd = x.shape
    xp = np.zeros((C, H + pad[0] + pad[2], Wd + pad[1] + pad[3]))
    xp[:, pad[0] : pad[0] + H, pad[1] : pad[1] + Wd] = x
    kh, kw = W.shape[2:]
    Ho = (xp.shape[1] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    Wo = (xp.shape[2] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((W.shape[0], Ho, Wo))
    for o in range(W.shape[0]):
        for i in range(Ho):
            for j in range(Wo):
                patch = xp[
                    :,
                    i * stride[0] : i * stride[0] + dil[0] * (kh - 1) + 1 : dil[0],
                    j * stride[1] : j * stride[1] + dil[1] * (kw - 1) + 1 : dil[1],
                ]
                out[o, i, j] = (patch * W[o]).sum() + b[o]
    return out


@settings(max_examples=35, deadline=None)
@given(st.one_of(conv_nets(), residual_nets()))
def test_dense_view_and_exact_forward_are_the_structured_function(case):
    net, rng = case
    X = rng.normal(size=(30, net.input_dim)) * 2
    y = net.forward(X)
    dense = net.dense_params()
    assert np.allclose(nm.relu.forward(dense, X), y, rtol=1e-9, atol=1e-9 * (1 + np.abs(y).max()))
    exact = net.exact_forward(X[:2]).astype(float)
    assert np.allclose(exact, y[:2], rtol=1e-12, atol=1e-12 * (1 + np.abs(y).max()))
    # the scale bounds every output: |f(x)| <= scale * max(1, |x|_inf)
    scale = path_norm(net)
    assert np.all(np.abs(y).max(axis=1) <= scale * np.maximum(1, np.abs(X).max(axis=1)))


@pytest.mark.parametrize(
    "stride,pad,dil", [((1, 1), (0, 0, 0, 0), (1, 1)), ((2, 1), (1, 0, 2, 1), (1, 2))]
)
def test_convolution_is_the_textbook_loop(stride, pad, dil):
    rng = np.random.default_rng(0)
    W, b = rng.normal(size=(3, 2, 3, 2)), rng.normal(size=3)
    conv = nl.Conv(W, b, stride=stride, padding=pad, dilation=dil)
    x = rng.normal(size=(2, 7, 6))
    want = _conv_loop(x, W, b, stride, pad, dil)
    assert np.allclose(conv.forward(x[None])[0], want)
    M, t = conv.linear_map(x.shape)
    assert np.allclose(M @ x.ravel() + t, want.ravel())


@settings(max_examples=30, deadline=None)
@given(st.one_of(conv_nets(), residual_nets()), st.booleans())
def test_derived_channel_symmetries_keep_the_function_and_equivalent_certifies_them(case, pow2):
    net, rng = case
    syms = random_channel_symmetries(net, rng, pow2)
    moved = apply_channel_symmetries(net, syms)
    X = rng.normal(size=(20, net.input_dim))
    assert np.allclose(moved.forward(X), net.forward(X), rtol=1e-9, atol=1e-9)
    res = nm.relu.equivalent(net, moved, tol=0 if pow2 else 1e-9)
    assert res.equivalent and res.certified and res.method == "matching"
    # the parameter bound holds on samples, for another pair of the same layout
    other = apply_channel_symmetries(net, syms[:1]) if syms else net
    diff = np.abs(net.forward(X) - other.forward(X)).max(axis=1)
    assert np.all(diff <= difference_bound(net, other) * np.maximum(1, np.abs(X).max(axis=1)))
    # the symmetry found takes p to q
    back = apply_channel_symmetries(net, res.symmetry)
    assert np.allclose(back.forward(X), moved.forward(X), rtol=1e-9, atol=1e-9)
    # the dense views agree: the MLP engine is the ground truth
    assert nm.relu.equivalent(net.dense_params(), moved.dense_params(), tol=1e-9).equivalent


def test_a_scale_not_carried_to_the_consumer_is_caught():
    """A mutation of the symmetry (the producer scaled, the consumer left) changes the
    function, and equivalent finds the witness, checked exactly."""
    rng = np.random.default_rng(1)
    net = ReLUConvNet(
        input_shape=(1, 6, 6),
        layers=[
            nl.Conv(rng.normal(size=(3, 1, 3, 3)), rng.normal(size=3)),
            nl.ReLU(),
            nl.MaxPool(kernel=2),
            nl.Flatten(),
            nl.Dense(rng.normal(size=(2, 12)), rng.normal(size=2)),
        ],
    )
    layers = list(net.layers)
    layers[0] = layers[0].act_on_outputs(np.arange(3), np.array([1.0, 2.0, 1.0]))
    broken = net.with_layers(layers)
    res = nm.relu.equivalent(net, broken, tol=0)
    assert not res.equivalent and res.certified
    x = res.witness
    assert np.abs(net.forward(x[None]) - broken.forward(x[None])).max() > 0


def test_near_miss_gets_an_exactly_checked_witness_and_equal_networks_tol0():
    rng = np.random.default_rng(2)
    net = ReLUConvNet(
        input_shape=(2, 8, 8),
        layers=[
            nl.Conv(rng.normal(size=(4, 2, 3, 3)), rng.normal(size=4), padding=1),
            nl.ReLU(),
            nl.AvgPool(kernel=2),
            nl.Conv(rng.normal(size=(3, 4, 3, 3)), rng.normal(size=3)),
            nl.ReLU(),
            nl.Flatten(),
            nl.Dense(rng.normal(size=(2, 12)), rng.normal(size=2)),
        ],
    )
    layers = list(net.layers)
    W = layers[3].weight.copy()
    W[1, 2, 1, 1] *= 1 + 1e-3
    near = net.with_layers(layers[:3] + [nl.Conv(W, layers[3].bias)] + layers[4:])
    res = nm.relu.equivalent(net, near, tol=0)
    assert not res.equivalent and res.certified and res.witness_difference > 0
    assert nm.relu.equivalent(net, net, tol=0).equivalent


def test_parameter_questions_refuse_a_convolutional_network():
    rng = np.random.default_rng(0)
    net = ReLUConvNet(
        input_shape=(1, 4),
        layers=[
            nl.Conv(rng.normal(size=(2, 1, 2)), rng.normal(size=2)),
            nl.ReLU(),
            nl.Flatten(),
            nl.Dense(rng.normal(size=(1, 6)), np.zeros(1)),
        ],
    )
    assert nm.relu.identifiability(net).identifiable is not True  # modulo channels
    for question in (
        "fiber",
        "functional_dimension",
        "genericity",
    ):
        with pytest.raises(nm.ParameterError, match="convolutional"):
            getattr(nm.relu, question)(net)


def test_spec_names_the_axes_as_a_hand_written_spec_would():
    rng = np.random.default_rng(0)
    net = ReLUConvNet(
        input_shape=(3, 10, 10),
        layers=[
            nl.Conv(rng.normal(size=(4, 3, 3, 3)), rng.normal(size=4), name="conv1"),
            nl.ReLU(),
            nl.MaxPool(kernel=2),
            nl.Conv(rng.normal(size=(5, 4, 3, 3)), rng.normal(size=5), name="conv2"),
            nl.ReLU(),
            nl.Flatten(),
            nl.Dense(rng.normal(size=(7, 20)), rng.normal(size=7), name="fc1"),
            nl.ReLU(),
            nl.Dense(rng.normal(size=(2, 7)), rng.normal(size=2), name="fc2"),
        ],
    )
    spec = channel_spec(net)
    assert spec.axes == {
        "conv1.weight": ("P1", None, None, None),
        "conv1.bias": ("P1",),
        "conv2.weight": ("P2", "P1", None, None),
        "conv2.bias": ("P2",),
        "fc1.weight": ("P3", "P2"),
        "fc1.bias": ("P3",),
        "fc2.weight": (None, "P3"),
        "fc2.bias": (None,),
    }
    assert [g.consumers for g in spec.groups][1] == (("6", 4),)  # 2x2 positions per channel
    assert type(spec).from_dict(spec.to_dict()).to_dict() == spec.to_dict()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: nl.Conv(np.ones((2, 2)), np.zeros(2)), "3 or 4 axes"),
        (lambda: nl.Conv(np.ones((2, 1, 3)), np.zeros(3)), "one entry per output channel"),
        (lambda: nl.Conv(np.ones((2, 1, 3)), np.zeros(2), stride=0), "stride"),
        (lambda: nl.MaxPool(kernel=0), "kernel"),
        (
            lambda: ReLUConvNet(
                input_shape=(1, 2), layers=[nl.Conv(np.ones((1, 1, 3)), np.zeros(1))]
            ),
            "spans",
        ),
        (lambda: ReLUConvNet(input_shape=(4,), layers=[nl.ReLU()]), "at least one"),
        (
            lambda: ReLUConvNet(
                input_shape=(1, 4), layers=[nl.Dense(np.ones((1, 4)), np.zeros(1))]
            ),
            "Flatten",
        ),
        (lambda: ReLUConvNet(input_shape="x", layers=[nl.ReLU()]), "input_shape"),
    ],
)
def test_bad_layers_are_refused_by_rule(make, match):
    with pytest.raises(nm.ArchitectureError, match=match):
        make()


def test_forward_validates_its_inputs_as_the_dense_forward_does():
    net = ReLUConvNet(
        input_shape=(1, 4, 4),
        layers=[nl.Conv(np.ones((2, 1, 3, 3)), np.zeros(2)), nl.ReLU(), nl.Flatten(),
                nl.Dense(np.ones((1, 8)), np.zeros(1))],
    )  # fmt: skip
    for bad, match in (
        ("abc", "array of real numbers"),
        (np.full((1, 16), np.nan), "finite"),
        (np.zeros((2, 5)), "shape"),
    ):
        with pytest.raises(nm.InputError, match=match):
            net.forward(bad)
    assert net.forward(np.zeros((0, 16))).shape == (0, 1)
    with pytest.raises(nm.ArchitectureError, match="True or False"):
        nl.AvgPool(2, count_include_pad="yes")


@settings(max_examples=20, deadline=None)
@given(st.one_of(conv_nets(), residual_nets()))
def test_canonical_form_quotients_the_channel_symmetries(case):
    """The form computes the network's function (certified within tol) and is the same,
    up to rounding, for a copy with every channel group permuted and rescaled: the
    ground truth of the form is the symmetry relating the two."""
    net, rng = case
    moved = apply_channel_symmetries(net, random_channel_symmetries(net, rng, False))
    a, b = nm.relu.canonical_form(net), nm.relu.canonical_form(moved)
    assert isinstance(a, ReLUConvNet)
    X = rng.normal(size=(10, net.input_dim))
    y = net.forward(X)
    assert np.allclose(a.forward(X), y, rtol=1e-9, atol=1e-9 * (1 + np.abs(y).max()))
    for (_, la, _), (_, lb, _) in zip(a.leaves(), b.leaves(), strict=True):
        for role, arr in la.arrays().items():
            assert np.allclose(arr, lb.arrays()[role], rtol=1e-9, atol=1e-12)
    with pytest.raises(nm.InputError, match="tol > 0"):
        nm.relu.canonical_form(net, tol=0)


def _four_channels(bias: float) -> ReLUConvNet:
    """A convolution of four channels, ReLU, flatten, one output."""
    rng = np.random.default_rng(0)
    return ReLUConvNet(
        input_shape=(1, 4, 4),
        layers=[nl.Conv(rng.normal(size=(4, 1, 3, 3)), np.full(4, bias)), nl.ReLU(),
                nl.Flatten(), nl.Dense(rng.normal(size=(1, 16)), np.zeros(1))],
    )  # fmt: skip


@pytest.mark.parametrize(
    "perm, scale",
    [
        ("abcd", (1.0,) * 4),
        (None, (1.0,) * 4),
        ((0.4, 1.4, 2.4, 3.4), (1.0,) * 4),  # was truncated to the identity
        ((True, False, 2, 3), (1.0,) * 4),
        (3, (1.0,) * 4),
        ((0, 1, 2, 2), (1.0,) * 4),
        ((0, 1, 2, 3), "abc"),
        ((0, 1, 2, 3), (1 + 1j,) * 4),
        ((0, 1, 2, 3), (1.0, 0.0, 1.0, 1.0)),
        ((0, 1, 2, 3), (1.0, 1e-320, 1.0, 1.0)),
        ((0, 1, 2, 3), ["2", "1", "1", "1"]),
        ((0, 1, 2, 3), (True,) * 4),
    ],
)
def test_a_channel_symmetry_states_its_rules(perm, scale):
    net = _four_channels(bias=0.0)
    with pytest.raises(nm.ArchitectureError, match="perm must hold|scale must hold"):
        nm.relu.ChannelSymmetry(group="P1", perm=perm, scale=scale).apply(net)
    with pytest.raises(nm.ArchitectureError, match="no channel group 'P9'"):
        nm.relu.ChannelSymmetry(group="P9", perm=(0, 1, 2, 3), scale=(1.0,) * 4).apply(net)


def test_a_channel_symmetry_that_overflows_the_network_is_refused():
    """Scales of 1e308 are finite and positive, but the moved network's forward pass
    would overflow (inf - inf = NaN): refused, where the network given is in range."""
    net = _four_channels(bias=1.0)
    with pytest.raises(nm.ArchitectureError, match="out of the float range"):
        nm.relu.ChannelSymmetry(group="P1", perm=(0, 1, 2, 3), scale=(1e308, 1, 1, 1)).apply(net)
    moved = nm.relu.ChannelSymmetry(group="P1", perm=(0, 1, 2, 3), scale=(1e100, 1, 1, 1)).apply(
        net
    )
    assert np.allclose(moved.forward(np.ones((1, 16))), net.forward(np.ones((1, 16))))


def test_reduce_of_a_convolutional_network_reduces_its_channels():
    net = _four_channels(bias=-1.0)  # channel 1 dead on [0, 1]^16 (its weights are < 0)
    net = net.with_layers(
        [nl.Conv(-np.abs(net.layers[0].weight), net.layers[0].bias)] + list(net.layers[1:])
    )
    r = nm.relu.reduce(net, (0.0, 1.0))
    assert r.note.startswith("a convolutional network, reduced by channel")
    assert r.exact and r.widths_before == (1, 4, 1) and r.widths_after == (1, 1, 1)
    X = np.random.default_rng(0).uniform(size=(20, 16))
    assert np.allclose(r.network.forward(X), net.forward(X))
