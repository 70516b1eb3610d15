"""ONNX graphs: what the library writes reads back and runs the same in the ONNX reference
runtime; graphs built node by node with onnx.helper read as their operators say; every
operator or layout outside a straight-line ReLU network is refused by name."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold.io import load, save

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402


def _graph(
    tmp_path,
    nodes,
    consts,
    *,
    name="g.onnx",
    inputs=("x",),
    n_in=4,
    dtype=np.float32,
    output="y",
    shape=None,
):
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    shape = ["N", n_in] if shape is None else shape
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(i, elem, shape) for i in inputs],
        [helper.make_tensor_value_info(output, elem, None)],
        initializer=[numpy_helper.from_array(np.asarray(a), k) for k, a in consts.items()],
    )
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _mlp_consts(rng, dtype=np.float32):
    return {
        "W1": rng.standard_normal((4, 5)).astype(dtype),
        "b1": rng.standard_normal(5).astype(dtype),
        "W2": rng.standard_normal((5, 2)).astype(dtype),
        "b2": rng.standard_normal(2).astype(dtype),
    }


@settings(max_examples=15, deadline=None)
@given(widths=st.lists(st.integers(1, 5), min_size=2, max_size=5), seed=st.integers(0, 10**6))
def test_relu_round_trip_runs_the_same(tmp_path_factory, widths, seed):
    params = nm.ReLUNet(widths).random_params(seed=seed)
    path = tmp_path_factory.mktemp("onnx") / "net.onnx"
    save(params, path)
    model = load(path)
    assert model.architecture == tuple(widths)
    assert all(
        np.array_equal(W, V) and np.array_equal(b, c)
        for (W, b), (V, c) in zip(model.params, params)
    )
    # the activation is read from the graph, not assumed
    assert not any("assumed" in n for n in model.notes)
    x = np.random.default_rng(seed).standard_normal((6, widths[0]))
    ran = ReferenceEvaluator(str(path)).run(None, {"input": x})[0]
    np.testing.assert_allclose(ran, nm.relu.forward(params, x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "shapes, strides", [([3, 2], [2, 2]), ([(2, 2), (3, 2)], [(2, 1), (1, 1)])]
)
def test_conv_round_trip_runs_the_same(tmp_path, shapes, strides):
    net = nm.LinearConvNet(shapes, strides=strides)
    filters = net.random_params(seed=0)
    save(filters, tmp_path / "conv.onnx", strides=strides)
    model = load(tmp_path / "conv.onnx")
    assert model.kind == "linear_conv" and model.network() == net
    assert all(np.array_equal(a, b) for a, b in zip(model.params, filters))
    x = np.random.default_rng(1).standard_normal((1, 1) + (12,) * net.ndim)
    ran = ReferenceEvaluator(str(tmp_path / "conv.onnx")).run(None, {"input": x})[0][0, 0]
    ours = net.apply(filters, x[0, 0])
    last = tuple(slice(None, None, s) for s in model.strides[-1])
    np.testing.assert_allclose(ran, ours[last], rtol=1e-12, atol=1e-12)


def test_matmul_add_graph_with_no_op_nodes(tmp_path):
    """The shape of a hand-exported graph: Flatten, a Reshape to (-1, n) whose shape is a
    Constant node, MatMul followed by Add (the bias on either side), Identity."""
    rng = np.random.default_rng(0)
    consts = _mlp_consts(rng)
    shape = numpy_helper.from_array(np.array([-1, 4], np.int64), "shape_value")
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flatten"),
        helper.make_node("Constant", [], ["shape"], name="shape", value=shape),
        helper.make_node("Reshape", ["f", "shape"], ["r"], name="reshape"),
        helper.make_node("MatMul", ["r", "W1"], ["m1"], name="fc1"),
        helper.make_node("Add", ["b1", "m1"], ["a1"], name="fc1_bias"),
        helper.make_node("Relu", ["a1"], ["h1"], name="act1"),
        helper.make_node("Identity", ["h1"], ["i1"], name="identity"),
        helper.make_node("MatMul", ["i1", "W2"], ["m2"], name="fc2"),
        helper.make_node("Add", ["m2", "b2"], ["y"], name="fc2_bias"),
    ]
    path = _graph(tmp_path, nodes, consts)
    model = load(path)
    assert model.architecture == (4, 5, 2) and model.converted_from == "float32"
    x = rng.standard_normal((9, 4)).astype(np.float32)
    ran = ReferenceEvaluator(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(ran, nm.relu.forward(model.params, x), rtol=1e-5, atol=1e-5)
    assert nm.relu.regions(model, max_regions=10**4).num_regions >= 1  # analyses take it


def test_gemm_attributes(tmp_path):
    """alpha, beta and transB=0 as the operator defines them: Y = alpha A B + beta C."""
    rng = np.random.default_rng(2)
    B, C = rng.standard_normal((4, 3)), rng.standard_normal((1, 3))
    V = rng.standard_normal((3, 1))
    nodes = [
        helper.make_node("Gemm", ["x", "B", "C"], ["g"], name="g", alpha=0.5, beta=2.0),
        helper.make_node("Relu", ["g"], ["h"], name="r"),
        helper.make_node("Gemm", ["h", "V"], ["y"], name="out"),
    ]
    path = _graph(tmp_path, nodes, {"B": B, "C": C, "V": V}, dtype=np.float64)
    model = load(path)
    x = rng.standard_normal((5, 4))
    ran = ReferenceEvaluator(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(ran, nm.relu.forward(model.params, x), rtol=1e-12, atol=1e-12)


def _refused(tmp_path, nodes, consts, match, **kw):
    with pytest.raises(nm.ModelFileError, match=match):
        load(_graph(tmp_path, nodes, consts, **kw))


def test_refusals_name_the_node_and_the_rule(tmp_path):
    c = _mlp_consts(np.random.default_rng(0))
    mm = helper.make_node
    _refused(
        tmp_path,
        [
            mm("MatMul", ["x", "W1"], ["m"], name="fc1"),
            mm("Sigmoid", ["m"], ["s"], name="act1"),
            mm("MatMul", ["s", "W2"], ["y"], name="fc2"),
        ],
        c,
        r"node 'act1' \(op type 'Sigmoid'\).*readable: Gemm",
    )
    _refused(
        tmp_path,
        [
            mm("MatMul", ["x", "W1"], ["m"], name="fc1"),
            mm("MatMul", ["m", "W2"], ["y"], name="fc2"),
        ],
        c,
        r"'fc2'.*no ReLU between",
    )
    _refused(
        tmp_path,
        [mm("MatMul", ["x", "W1"], ["m"], name="fc1"), mm("Relu", ["m"], ["y"], name="last")],
        c,
        "after the last affine",
    )
    _refused(tmp_path, [mm("Relu", ["x"], ["y"], name="first")], c, "follows no affine layer")
    _refused(tmp_path, [mm("Gemm", ["x", "W1"], ["y"], name="g", transA=1)], c, "transA")
    _refused(
        tmp_path,
        [
            mm("Flatten", ["x"], ["f"], name="fl", axis=2),
            mm("MatMul", ["f", "W1"], ["y"], name="fc"),
        ],
        c,
        "axis 2",
        shape=["N", 2, 4],
    )
    _refused(
        tmp_path,
        [mm("Relu", ["x"], ["h"], name="r"), mm("MatMul", ["x", "W1"], ["y"], name="side")],
        c,
        "follows no affine",
    )
    _refused(
        tmp_path,
        [
            mm("MatMul", ["x", "W1"], ["m"], name="fc"),
            mm("MatMul", ["m", "m"], ["y"], name="square"),
        ],
        c,
        "'square'.*must be a constant tensor",
    )
    _refused(
        tmp_path,
        [mm("MatMul", ["x", "W1"], ["y"], name="fc")],
        c,
        "one data input",
        inputs=("x", "z"),
    )
    _refused(
        tmp_path,
        [mm("MatMul", ["x", "W1"], ["y"], name="fc", domain="com.example")],
        c,
        "custom domain",
    )
    _refused(
        tmp_path,
        [
            mm("MatMul", ["x", "W1"], ["m"], name="fc"),
            mm("Add", ["m", "W2"], ["y"], name="bad_bias"),
        ],
        c,
        r"node name: bad_bias.*Incompatible dimensions",
    )


def test_conv_refusals(tmp_path):
    w = np.ones((1, 1, 3))
    mm = helper.make_node
    _refused(
        tmp_path,
        [mm("Conv", ["x", "w"], ["y"], name="c", pads=[1, 1])],
        {"w": w},
        "padding",
        dtype=np.float64,
        shape=["N", 1, 8],
    )
    _refused(
        tmp_path,
        [mm("Conv", ["x", "w", "b"], ["y"], name="c")],
        {"w": w, "b": np.ones(1)},
        "nonzero bias",
        dtype=np.float64,
        shape=["N", 1, 8],
    )


def test_bad_files(tmp_path):
    (tmp_path / "junk.onnx").write_bytes(b"\x00\xff" * 64)
    with pytest.raises(nm.ModelFileError, match="junk.onnx: not a valid ONNX file"):
        load(tmp_path / "junk.onnx")
    save(nm.ReLUNet([3, 2, 1]).random_params(), tmp_path / "n.onnx")
    data = (tmp_path / "n.onnx").read_bytes()
    (tmp_path / "t.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(nm.ModelFileError, match="t.onnx"):
        load(tmp_path / "t.onnx")
    # a tensor declaring 2**40 entries is refused before anything is allocated
    huge = TensorProto(
        name="W", data_type=TensorProto.FLOAT, dims=[2**20, 2**20], raw_data=b"\0" * 16
    )
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[huge],
    )
    onnx.save(helper.make_model(graph), str(tmp_path / "huge.onnx"))
    with pytest.raises(nm.ModelFileError, match="more than the limit"):
        load(tmp_path / "huge.onnx")


def test_without_the_extra(tmp_path, monkeypatch):
    save(nm.ReLUNet([2, 1]).random_params(), tmp_path / "n.onnx")
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    with pytest.raises(nm.ModelFileError, match=r"pip install 'neuromanifold\[onnx\]'"):
        load(tmp_path / "n.onnx")


def test_torch_onnx_export(tmp_path):
    torch = pytest.importorskip("torch")
    seq = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)
    )
    x = torch.randn(5, 6)
    torch.onnx.export(seq, (x,), str(tmp_path / "t.onnx"), dynamo=False)
    model = load(tmp_path / "t.onnx")
    assert model.architecture == (6, 4, 3)
    np.testing.assert_allclose(
        nm.relu.forward(model.params, x.numpy()), seq(x).detach().numpy(), rtol=1e-5, atol=1e-5
    )


def test_reshapes_that_regroup_examples_are_refused(tmp_path):
    """A Reshape([-1, 2]) of an [N, 4] input splits every example into two rows: a different
    function from the network the weights alone suggest."""
    mm = helper.make_node
    W = {"W": np.ones((2, 1), np.float32), "shape": np.array([-1, 2], np.int64)}
    _refused(
        tmp_path,
        [
            mm("Reshape", ["x", "shape"], ["r"], name="split"),
            mm("MatMul", ["r", "W"], ["y"], name="fc"),
        ],
        W,
        "'split'.*4 features",
        n_in=4,
    )
    graph = helper.make_graph(
        [mm("MatMul", ["x", "W"], ["y"], name="fc")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.ones((2, 1), np.float32), "W")],
    )
    onnx.save(helper.make_model(graph), str(tmp_path / "rank3.onnx"))
    with pytest.raises(nm.ModelFileError, match="Flatten"):
        load(tmp_path / "rank3.onnx")


def test_a_conv_with_a_2d_weight_is_refused_not_read_as_a_dense_layer(tmp_path):
    """Conv(Conv(x)) with weights [[2.]] and [[-1.]] computes -2x; read as a dense
    network with a ReLU between, it would give 0 at x = -1."""
    mm = helper.make_node
    _refused(
        tmp_path,
        [mm("Conv", ["x", "a"], ["m"], name="c1"), mm("Conv", ["m", "b"], ["y"], name="c2")],
        {"a": np.array([[2.0]]), "b": np.array([[-1.0]])},
        "'c1'|node name: c1",
        n_in=1,
        dtype=np.float64,
    )


def _bad_graphs():
    """Graphs onnx itself calls invalid, each with the node its message must name."""
    mm = helper.make_node
    rng = np.random.default_rng(0)
    W1, W2 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))

    def mlp(first, extra=None, **consts):
        nodes = [
            *first,
            mm("Relu", ["a"], ["h"], name="r"),
            mm("MatMul", ["h", "W2"], ["y"], name="fc2"),
        ]
        return nodes, {"W1": W1, "W2": W2, **consts}, extra

    string = helper.make_tensor("S", TensorProto.STRING, [3], [b"1", b"2", b"3"])
    shape = helper.make_tensor("s", TensorProto.STRING, [2], [b"-1", b"4"])
    return {
        "relu with two inputs": (
            [
                mm("MatMul", ["x", "W1"], ["m"], name="fc"),
                mm("Relu", ["m", "m"], ["h"], name="r2"),
                mm("MatMul", ["h", "W2"], ["y"], name="fc2"),
            ],
            {"W1": W1, "W2": W2},
            None,
            "'r2'",
        ),
        "gemm alpha a string": (*mlp([mm("Gemm", ["x", "W1"], ["a"], name="g", alpha="2")]), "'g'"),
        "gemm C boolean": (
            *mlp([mm("Gemm", ["x", "W1", "C"], ["a"], name="g")], C=np.array([True, False, True])),
            "node name: g",
        ),
        "gemm C complex": (
            *mlp([mm("Gemm", ["x", "W1", "C"], ["a"], name="g")], C=np.array([1 + 1j, 2, 3])),
            "node name: g",
        ),
        "add of strings": (
            *mlp(
                [
                    mm("MatMul", ["x", "W1"], ["m"], name="fc"),
                    mm("Add", ["m", "S"], ["a"], name="add"),
                ],
                [string],
            ),
            "node name: add",
        ),
        "reshape by strings": (
            *mlp(
                [
                    mm("Reshape", ["x", "s"], ["q"], name="rs"),
                    mm("MatMul", ["q", "W1"], ["a"], name="fc"),
                ],
                [shape],
            ),
            "node name: rs",
        ),
        "reshape by floats": (
            *mlp(
                [
                    mm("Reshape", ["x", "s"], ["q"], name="rs"),
                    mm("MatMul", ["q", "W1"], ["a"], name="fc"),
                ],
                s=np.array([-1.5, 4.2]),
            ),
            "node name: rs",
        ),
    }


@pytest.mark.parametrize("case", sorted(_bad_graphs()))
def test_graphs_onnx_calls_invalid_are_refused_naming_the_node(tmp_path, case):
    nodes, consts, extra, match = _bad_graphs()[case]
    elem = TensorProto.DOUBLE
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", elem, ["N", 4])],
        [helper.make_tensor_value_info("y", elem, None)],
        initializer=[numpy_helper.from_array(np.asarray(a), k) for k, a in consts.items()]
        + list(extra or ()),
    )
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    with pytest.raises(nm.ModelFileError, match=match):
        load(path)


def test_an_input_with_a_zero_length_axis_is_refused(tmp_path):
    c = _mlp_consts(np.random.default_rng(0))
    mm = helper.make_node
    _refused(
        tmp_path,
        [
            mm("MatMul", ["x", "W1"], ["m"], name="fc"),
            mm("Relu", ["m"], ["h"], name="r"),
            mm("MatMul", ["h", "W2"], ["y"], name="fc2"),
        ],
        c,
        "zero-length|fc",
        n_in=0,
    )


# -- VNN-COMP layouts: MatMul(W, x) on a 1-D input, input normalization ----------------


def _vnn_graph(tmp_path, rng, *, norm, column=False, dtype=np.float64, name="vnn.onnx"):
    """An ACAS Xu-like graph as VNN-COMP 2026's acas_xu_vnnlib2 exports it: the input X
    of shape [5] (or a column [5, 1]), ``MatMul(W, X)`` with the weight first, Add of a
    bias, Relu, ...; ``norm`` lists the normalization nodes in front of the first layer
    as ``(op, constant)``. Returns the path and the graph's own numpy evaluation."""
    widths = [5, 6, 4, 3]
    col = (lambda v: v.reshape(-1, 1)) if column else (lambda v: v)
    consts, nodes, current = {}, [], "X"
    for k, (op, c) in enumerate(norm):
        consts[f"n{k}"] = np.asarray(c, dtype)
        nodes.append(helper.make_node(op, [current, f"n{k}"], [f"z{k}"], name=f"{op.lower()}_{k}"))
        current = f"z{k}"
    Ws, bs = [], []
    for l, (n, m) in enumerate(zip(widths[:-1], widths[1:])):
        W, b = rng.standard_normal((m, n)).astype(dtype), col(rng.standard_normal(m).astype(dtype))
        consts[f"W{l}"], consts[f"b{l}"] = W, b
        Ws.append(W.astype(np.float64))
        bs.append(b.astype(np.float64))
        nodes.append(helper.make_node("MatMul", [f"W{l}", current], [f"m{l}"], name=f"mm{l}"))
        last = l == len(widths) - 2
        out = "Y" if last else f"a{l}"
        nodes.append(helper.make_node("Add", [f"m{l}", f"b{l}"], [out], name=f"add{l}"))
        current = out
        if not last:
            nodes.append(helper.make_node("Relu", [out], [f"h{l}"], name=f"relu{l}"))
            current = f"h{l}"
    path = _graph(
        tmp_path,
        nodes,
        consts,
        name=name,
        inputs=("X",),
        output="Y",
        dtype=dtype,
        shape=[5, 1] if column else [5],
    )

    def direct(x):  # the graph evaluated op by op in float64 (x: one input, shape (5,))
        z = col(np.asarray(x, np.float64))
        for op, c in norm:
            c = np.asarray(c, dtype).astype(np.float64)
            z = {"Sub": np.subtract, "Div": np.divide, "Mul": np.multiply}[op](z, c)
        for l, (W, b) in enumerate(zip(Ws, bs)):
            z = W @ z + b
            if l < len(Ws) - 1:
                z = np.maximum(z, 0)
        return z.reshape(-1)

    return path, direct


_NORMS = {
    "none": [],
    "per-coordinate mean and std": [
        ("Sub", [19791.1, 0.0, 0.0, 650.0, 600.0]),
        ("Div", [60261.0, 6.28318, 6.28318, 1100.0, 1200.0]),
    ],
    "scalar mean, per-coordinate scale": [("Sub", 0.5), ("Mul", [2.0, -1.0, 0.25, 3.0, 1.5])],
    "std only, scalar": [("Div", 4.0)],
}


@pytest.mark.parametrize("column", [False, True], ids=["vector", "column"])
@pytest.mark.parametrize("norm", sorted(_NORMS))
def test_vnncomp_weight_first_graphs_read_as_the_graph_computes(tmp_path, norm, column):
    """MatMul(W, X) on a 1-D input [5] (or a column [5, 1]) with a normalization folded
    into the first layer: the loaded network computes what the graph computes, by a
    direct numpy evaluation and by onnx's reference evaluator, at random inputs."""
    rng = np.random.default_rng(7)
    consts = [
        (op, np.asarray(c).reshape(-1, 1) if column and np.ndim(c) else c) for op, c in _NORMS[norm]
    ]
    path, direct = _vnn_graph(tmp_path, rng, norm=consts, column=column)
    model = load(path)
    assert model.architecture == (5, 6, 4, 3) and model.converted_from == "float64"
    assert any("MatMul(W, x)" in n for n in model.notes)
    assert any("normalization folded" in n for n in model.notes) == bool(consts)
    scale = np.array([60261.0, 6.3, 6.3, 1100.0, 1200.0])
    X = rng.uniform(-1, 1, (40, 5)) * scale
    ours = nm.relu.forward(model.params, X)
    want = np.array([direct(x) for x in X])
    np.testing.assert_allclose(ours, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    ref = ReferenceEvaluator(str(path))
    for x, y in zip(X[:8], ours[:8]):
        ran = ref.run(None, {"X": x.reshape((5, 1) if column else (5,))})[0].reshape(-1)
        np.testing.assert_allclose(ran, y, rtol=1e-9, atol=1e-9 * np.abs(y).max())


def test_the_acas_xu_layout_in_float32(tmp_path):
    """The benchmark's own dtype: float32 constants, read as float32 and said so."""
    rng = np.random.default_rng(3)
    path, direct = _vnn_graph(
        tmp_path, rng, norm=_NORMS["per-coordinate mean and std"], dtype=np.float32
    )
    model = load(path)
    assert model.converted_from == "float32"
    X = rng.uniform(-1, 1, (20, 5)).astype(np.float32) * np.float32(600)
    want = np.array([direct(x) for x in X])
    np.testing.assert_allclose(nm.relu.forward(model.params, X), want, rtol=1e-9, atol=1e-9)
    ran = np.array([ReferenceEvaluator(str(path)).run(None, {"X": x})[0] for x in X])
    np.testing.assert_allclose(ran, want, rtol=1e-4, atol=1e-4)


def test_layouts_outside_the_vnncomp_pattern_are_refused_by_node(tmp_path):
    rng = np.random.default_rng(0)
    mm = helper.make_node
    W, V = rng.standard_normal((3, 4)), rng.standard_normal((2, 3))
    c = {"W": W, "V": V, "b": np.ones(3), "m": np.ones(4), "z": np.array([1.0, 0, 1, 1])}
    tail = [mm("Relu", ["a"], ["h"], name="r"), mm("MatMul", ["V", "h"], ["y"], name="fc2")]
    f64 = {"dtype": np.float64}
    # W @ x on a batch of rows mixes the examples
    _refused(
        tmp_path,
        [mm("MatMul", ["W2", "x"], ["a"], name="wx"), *tail],
        {**c, "W2": rng.standard_normal((3, 5))},
        r"'wx' \(op type 'MatMul'\).*1-D activation \[n\] or a column",
        shape=[5, 4],
        **f64,
    )
    # the constant first in Sub or Div is not a normalization
    for op in ("Sub", "Div"):
        _refused(
            tmp_path,
            [
                mm(op, ["m", "x"], ["n"], name="flip"),
                mm("MatMul", ["W", "n"], ["a"], name="fc"),
                *tail,
            ],
            c,
            rf"'flip' \(op type '{op}'\).*constant second",
            shape=[4],
            **f64,
        )
    # a normalization after the first layer
    _refused(
        tmp_path,
        [
            mm("MatMul", ["W", "x"], ["m1"], name="fc"),
            mm("Sub", ["m1", "b"], ["a"], name="late"),
            *tail,
        ],
        c,
        r"'late' \(op type 'Sub'\).*in front of the first affine layer",
        shape=[4],
        **f64,
    )
    # a std with a zero entry
    _refused(
        tmp_path,
        [
            mm("Div", ["x", "z"], ["n"], name="std"),
            mm("MatMul", ["W", "n"], ["a"], name="fc"),
            *tail,
        ],
        c,
        r"'std' \(op type 'Div'\).*zero entry",
        shape=[4],
        **f64,
    )
    # a bias of shape (3,) on a column (3, 1) broadcasts to a 3 x 3 matrix
    _refused(
        tmp_path,
        [
            mm("MatMul", ["W", "x"], ["m1"], name="fc"),
            mm("Add", ["m1", "b"], ["a"], name="rowbias"),
            *tail,
        ],
        c,
        r"'rowbias' \(op type 'Add'\).*bias of shape \(3,\) on an activation of shape \[3, 1\]",
        shape=[4, 1],
        **f64,
    )
    # x @ W after a column layer W @ x
    _refused(
        tmp_path,
        [
            mm("MatMul", ["W", "x"], ["a"], name="fc"),
            mm("Relu", ["a"], ["h"], name="r"),
            mm("MatMul", ["h", "U"], ["y"], name="back"),
        ],
        {**c, "U": np.ones((1, 2))},
        r"'back' \(op type 'MatMul'\).*x @ W on a column",
        shape=[4, 1],
        **f64,
    )
    # a per-coordinate mean of a column shape on a 1-D input expands it to a matrix
    _refused(
        tmp_path,
        [
            mm("Sub", ["x", "mc"], ["n"], name="sub"),
            mm("MatMul", ["W", "n"], ["a"], name="fc"),
            *tail,
        ],
        {**c, "mc": np.ones((4, 1))},
        r"'fc' \(op type 'MatMul'\).*shape is \[4, 4\]",
        shape=[4],
        **f64,
    )
