"""Convolutional ReLU networks read from ONNX graphs: the same function as onnx's own
reference evaluator, BatchNorm folded and Softmax left out (said in the notes), every
unsupported operator refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold.relu import layers as nl

from .onnx_cnn import lenet_graph, logits_by_onnx
from .strategies import conv_nets, residual_nets

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
    # the canonical forms of the two files are one network, written back as ONNX
    forms = [tmp_path / "ca.onnx", tmp_path / "cb.onnx"]
    for src, out in zip((a, b), forms):
        assert main(["relu", "canonical", str(src), "--out", str(out)]) == 0
        assert "modulo channel permutation and scaling" in capsys.readouterr().out
    ca, cb = (nm.io.load(f).params for f in forms)
    for (_, la, _), (_, lb, _) in zip(ca.leaves(), cb.leaves()):
        for role, arr in la.arrays().items():
            assert np.allclose(arr, lb.arrays()[role], rtol=1e-12, atol=1e-15)
    assert nm.relu.equivalent(nm.io.load(a).params, ca).equivalent


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


@settings(max_examples=10, deadline=None)
@given(st.one_of(conv_nets(), residual_nets()))
def test_a_convolutional_network_saves_to_onnx_and_reads_back(tmp_path_factory, case):
    """The writer's graph is the same network for the reader (exactly: the same
    parameters, layer by layer) and for onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    net, rng = case
    path = tmp_path_factory.mktemp("save") / "net.onnx"
    nm.io.save(net, path)
    back = nm.io.load(path)
    assert back.kind == "relu_conv"
    for (pa, a, sa), (pb, b, sb) in zip(net.leaves(), back.params.leaves(), strict=True):
        assert (pa, type(a), sa) == (pb, type(b), sb)
        assert all(np.array_equal(a.arrays()[k], b.arrays()[k]) for k in a.arrays())
    assert nm.relu.equivalent(net, back.params, tol=0).equivalent
    X = rng.normal(size=(3, net.input_dim))
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    y = ReferenceEvaluator(proto).run(None, {"input": X.reshape(3, *net.input_shape)})[0]
    assert np.allclose(y.reshape(3, -1), net.forward(X), rtol=1e-12, atol=1e-12)


def test_a_convolutional_network_is_not_saved_as_weights_alone(tmp_path):
    rng = np.random.default_rng(0)
    net = nm.io.load(_saved(lenet_graph(rng, softmax=False), tmp_path)).params
    for suffix in (".npz", ".safetensors"):
        with pytest.raises(nm.ModelFileError, match="saved as .onnx"):
            nm.io.save(net, tmp_path / f"net{suffix}")
    # a state_dict of a CNN's weights alone: refused with the way out
    arrays = {f"{k}.{role}": a for k, layer in enumerate(net.layers) for role, a in
              layer.arrays().items()}  # fmt: skip
    np.savez(tmp_path / "sd.npz", **arrays)
    with pytest.raises(nm.ModelFileError, match="convolutional network's weights.*ONNX"):
        nm.io.load(tmp_path / "sd.npz")


def _saved(model, tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return path


def test_external_data_is_read_from_the_models_own_folder_only(tmp_path):
    """torch's exporter writes model.onnx + model.onnx.data since 2.9: read, from the
    model's folder only, exactly the tensor's bytes."""
    from onnx.external_data_helper import convert_model_to_external_data

    rng = np.random.default_rng(4)
    model = lenet_graph(rng, softmax=False)
    convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=0
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert (tmp_path / "m.onnx.data").stat().st_size > 0
    got = nm.io.load(path).params
    X = rng.uniform(size=(3, 1, 12, 12))
    want = logits_by_onnx(onnx.load(path), X)
    assert np.allclose(got.forward(X.reshape(3, -1)), want, atol=1e-5)
    # a location outside the folder, or data cut short, is refused by name
    proto = onnx.load(path, load_external_data=False)
    for where in ("../m.onnx.data", "/etc/passwd", "sub/m.onnx.data"):
        bad = onnx.ModelProto()
        bad.CopyFrom(proto)
        for t in bad.graph.initializer:
            for e in t.external_data:
                if e.key == "location":
                    e.value = where
        onnx.save(bad, tmp_path / "bad.onnx")
        with pytest.raises(nm.ModelFileError, match="model's own folder"):
            nm.io.load(tmp_path / "bad.onnx")

    def edited(key, change, match):
        bad = onnx.ModelProto()
        bad.CopyFrom(proto)
        for e in bad.graph.initializer[0].external_data:
            if e.key == key:
                e.value = change(bad)
        if key == "checksum":
            bad.graph.initializer[0].external_data.add(key="checksum", value="deadbeef")
        onnx.save(bad, tmp_path / "bad.onnx")
        with pytest.raises(nm.ModelFileError, match=match):
            nm.io.load(tmp_path / "bad.onnx")

    def offset_of_second(bad):
        return next(e.value for e in bad.graph.initializer[1].external_data if e.key == "offset")

    edited("location", lambda bad: "m.onnx.data\x00zz", "model's own folder")  # NUL byte
    edited("offset", offset_of_second, "overlap")  # another tensor's bytes
    edited("offset", lambda bad: "1", "overlap")
    edited("checksum", None, "SHA-1")
    data = (tmp_path / "m.onnx.data").read_bytes()
    (tmp_path / "m.onnx.data").write_bytes(data[: len(data) // 2])
    with pytest.raises(nm.ModelFileError, match="needs .* bytes at offset"):
        nm.io.load(path)


def test_two_layers_of_one_name_are_written_apart(tmp_path):
    rng = np.random.default_rng(0)
    net = nm.relu.ReLUConvNet(
        input_shape=(1, 4, 4),
        layers=[nl.Conv(rng.normal(size=(2, 1, 3, 3)), np.zeros(2), name="c"), nl.ReLU(),
                nl.Conv(rng.normal(size=(2, 2, 1, 1)), np.zeros(2), name="c"), nl.ReLU(),
                nl.Flatten(), nl.Dense(rng.normal(size=(1, 8)), np.zeros(1))],
    )  # fmt: skip
    nm.io.save(net, tmp_path / "dup.onnx")
    back = nm.io.load(tmp_path / "dup.onnx").params
    assert nm.relu.equivalent(net, back, tol=0).equivalent
