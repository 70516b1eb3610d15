"""Residual connections: the block's forward pass, its dense view (the block's input
carried through the body's ReLUs) and the channel groups a sum ties, checked against the
fully connected ground truth, onnx's reference evaluator and planted mistakes."""

from __future__ import annotations

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold.relu import ReLUConvNet, channel_spec
from neuromanifold.relu import layers as nl
from neuromanifold.relu._symmetries.channels import ChannelSymmetry, apply_channel_symmetries

from .onnx_cnn import logits_by_onnx, resnet_graph
from .strategies import conv_layer


def _load(model, tmp_path):
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return nm.io.load(path).params


def test_an_untied_skip_is_a_mistake_a_witness_shows(tmp_path):
    """git-re-basin issue 10's kind of mistake: the residual stream permuted in the
    block's body but not in its skip (nor the stem). The function changes, and equivalent
    says so with an exactly checked witness; the derived spec ties them."""
    rng = np.random.default_rng(3)
    net = _load(resnet_graph(rng, widths=(4, 4, 8)), tmp_path)
    spec = channel_spec(net)
    stream = next(g for g in spec.groups if "2.body.2" in g.producers)
    assert set(stream.producers) == {"0", "2.body.2"}
    assert {c for c, _ in stream.consumers} == {"2.body.0", "4.body.0", "4.skip.0"}
    perm = np.array([1, 0, 3, 2])
    ones = np.ones(4)
    wrong = net.with_leaves(
        {  # the hand-written mistake: only the body's last conv and its readers
            "2.body.2": net.layer_at("2.body.2").act_on_outputs(perm, ones),
            "4.body.0": net.layer_at("4.body.0").act_on_inputs(perm, ones, 1),
            "4.skip.0": net.layer_at("4.skip.0").act_on_inputs(perm, ones, 1),
        }
    )
    res = nm.relu.equivalent(net, wrong, tol=1e-9)
    assert not res.equivalent and res.certified
    x = res.witness
    assert np.abs(net.forward(x[None]) - wrong.forward(x[None])).max() > 1e-9
    right = apply_channel_symmetries(
        net, (ChannelSymmetry(group=stream.name, perm=tuple(perm.tolist()), scale=(1.0,) * 4),)
    )
    assert nm.relu.equivalent(net, right, tol=0).equivalent


def test_a_resnet_graph_reads_as_the_same_function_with_the_hand_written_spec(tmp_path):
    rng = np.random.default_rng(0)
    model = resnet_graph(rng, widths=(4, 4, 8, 8))
    net = _load(model, tmp_path)
    X = rng.uniform(size=(4, 3, 8, 8))
    assert np.allclose(net.forward(X.reshape(4, -1)), logits_by_onnx(model, X), atol=1e-5)
    axes = channel_spec(net).axes
    # the permutation spec one writes by hand for this ResNet (torchvision names)
    want = {
        "conv1": ("S1", None),
        "layer1.0.conv1": ("A", "S1"),
        "layer1.0.conv2": ("S1", "A"),
        "layer2.0.conv1": ("B", "S1"),
        "layer2.0.conv2": ("S2", "B"),
        "layer2.0.downsample.0": ("S2", "S1"),
        "layer3.0.conv1": ("C", "S2"),
        "layer3.0.conv2": ("S2", "C"),
        "fc": (None, "S2"),
    }
    rename: dict = {}
    for layer, (out, inp) in want.items():
        got = axes[f"{layer}.weight"][:2]
        for mine, theirs in ((out, got[0]), (inp, got[1])):
            assert rename.setdefault(mine, theirs) == theirs, layer
    assert len({v for v in rename.values() if v}) == len({k for k in rename if k})


def _graph(nodes, inits, out_shape=(1, 2, 4, 4)):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_residual_graphs_read_or_refused_by_node(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(size=(2, 2, 1, 1)).astype(np.float32), n)
        for n in ("w1", "w2")
    ] + [numpy_helper.from_array(np.ones(2, np.float32), "v")]
    conv = [
        helper.make_node("Conv", ["x", "w1"], ["h"], name="c1"),
        helper.make_node("Relu", ["h"], ["r"], name="r1"),
    ]
    cases = {
        # relu(h) + h: the body a ReLU, the skip the identity from h
        "read": conv + [helper.make_node("Add", ["r", "h"], ["y"], name="sum")],
        "two bodies": conv
        + [
            helper.make_node("Conv", ["x", "w2"], ["h2"], name="c2"),
            helper.make_node("Relu", ["h2"], ["r2"], name="r2"),
            helper.make_node("Add", ["r", "r2"], ["y"], name="sum"),
        ],
        "dangling": conv
        + [
            helper.make_node("Relu", ["h"], ["unused"], name="loose"),
            helper.make_node("Relu", ["r"], ["y"], name="r3"),
        ],
        "bn after fork": [
            helper.make_node("Conv", ["x", "w1"], ["h"], name="c1"),
            helper.make_node("BatchNormalization", ["h", "v", "v", "v", "v"], ["b"], name="bn"),
            helper.make_node("Relu", ["h"], ["r"], name="r1"),
            helper.make_node("Add", ["r", "b"], ["y"], name="sum"),
        ],
    }
    for what, nodes in cases.items():
        path = tmp_path / f"{what}.onnx"
        onnx.save(_graph(nodes, inits), path)
        if what == "read":
            net = nm.io.load(path).params
            X = rng.normal(size=(3, 32))
            h = nl.Conv(onnx.numpy_helper.to_array(inits[0]).astype(float), np.zeros(2)).forward(
                X.reshape(3, 2, 4, 4)
            )
            assert np.allclose(net.forward(X), (np.maximum(h, 0) + h).reshape(3, -1), atol=1e-6)
            continue
        match = {
            "two bodies": "'sum'.*residual block",
            "dangling": "'loose'.*never rejoins",
            "bn after fork": "'bn'.*feeds nothing else",
        }[what]
        with pytest.raises(nm.ModelFileError, match=match):
            nm.io.load(path)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: nl.Residual([], []), "at least one layer"),
        (lambda: nl.Residual(nl.ReLU()), "list of layers"),
        (lambda: nl.Residual([nl.ReLU()], [nl.ReLU()]), "affine layers only"),
        (lambda: nl.Residual([nl.ReLU()], ["conv"]), "layer 0, must be a layer"),
    ],
)
def test_bad_residual_blocks_are_refused_by_rule(make, match):
    with pytest.raises(nm.ArchitectureError, match=match):
        make()


def test_branch_shapes_must_agree():
    rng = np.random.default_rng(0)
    with pytest.raises(nm.ArchitectureError, match="body gives shape .* and its skip"):
        ReLUConvNet(
            input_shape=(1, 4, 4),
            layers=[nl.Residual([conv_layer(rng, 1, 2)]), nl.Flatten(),
                    nl.Dense(np.ones((1, 32)), np.zeros(1))],
        )  # fmt: skip
