"""Convolutional ReLU networks read from ONNX graphs: the same function as onnx's own
reference evaluator, BatchNorm folded and Softmax left out (said in the notes), every
unsupported operator refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import neuromanifold as nm

from .onnx_cnn import lenet_graph

onnx = pytest.importorskip("onnx")


def _reference(model, X):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, {"x": X.astype(np.float32)})[0]


def test_lenet_graph_reads_as_the_same_function(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "lenet.onnx"
    onnx.save(lenet_graph(rng), path)
    model = nm.io.load(path)
    assert model.kind == "relu_conv"
    assert any("BatchNormalization" in n for n in model.notes)
    assert any("Softmax left out" in n for n in model.notes)
    logits = lenet_graph(np.random.default_rng(0), softmax=False)
    X = rng.uniform(size=(6, 1, 12, 12))
    want = _reference(logits, X)
    got = model.params.forward(X.reshape(6, -1))
    assert np.allclose(got, want, atol=1e-5)
    spec = nm.relu.channel_spec(model.params)
    assert spec.axes["conv2.weight"] == ("P2", "P1", None, None)


def test_a_channel_permuted_copy_is_equivalent_through_the_cli(tmp_path, capsys):
    rng = np.random.default_rng(1)
    model = lenet_graph(rng, batch_norm=False, softmax=False)
    a = tmp_path / "a.onnx"
    onnx.save(model, a)
    # permute conv1's output channels and conv2's input channels in the file itself
    inits = {t.name: t for t in model.graph.initializer}
    perm = np.array([2, 0, 3, 1])
    for name, axis in (("conv1.weight", 0), ("conv1.bias", 0), ("conv2.weight", 1)):
        arr = onnx.numpy_helper.to_array(inits[name])
        inits[name].CopyFrom(onnx.numpy_helper.from_array(np.take(arr, perm, axis=axis), name))
    b = tmp_path / "b.onnx"
    onnx.save(model, b)
    from neuromanifold.cli import main

    assert main(["relu", "equiv", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "EQUIVALENT" in out and "channels of P1" in out
    assert main(["relu", "spec", str(a)]) == 0
    assert "conv2.weight: ('P2', 'P1', None, None)" in capsys.readouterr().out


def test_unsupported_operators_are_refused_by_name(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    W = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["h"], name="c"),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Sigmoid", ["r"], ["y"], name="act"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])],
        [W],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "s.onnx"
    onnx.save(model, path)
    with pytest.raises(nm.ModelFileError, match="'act'.*Sigmoid"):
        nm.io.load(path)
