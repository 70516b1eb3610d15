"""Small convolutional ONNX graphs built with onnx.helper (no torch needed)."""

from __future__ import annotations

import numpy as np


def lenet_graph(
    rng: np.random.Generator, *, batch_norm: bool = True, softmax: bool = True, size: int = 12
):
    """A LeNet-shaped graph on ``1 x size x size`` inputs: Conv(+BN) Relu MaxPool, Conv
    Relu AveragePool, Flatten, Gemm Relu, MatMul + Add, optional Softmax."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    c1 = rng.normal(size=(4, 1, 3, 3)) * 0.5
    nodes.append(
        helper.make_node(
            "Conv",
            ["x", const("conv1.weight", c1), const("conv1.bias", rng.normal(size=4) * 0.1)],
            ["h1"],
            pads=[1, 1, 1, 1],
            name="conv1",
        )
    )
    cur = "h1"
    if batch_norm:
        nodes.append(
            helper.make_node(
                "BatchNormalization",
                [
                    cur,
                    const("bn.g", rng.uniform(0.5, 2, 4)),
                    const("bn.b", rng.normal(size=4) * 0.1),
                    const("bn.m", rng.normal(size=4) * 0.1),
                    const("bn.v", rng.uniform(0.5, 2, 4)),
                ],
                ["h1b"],
                epsilon=1e-5,
                name="bn1",
            )
        )
        cur = "h1b"
    nodes.append(helper.make_node("Relu", [cur], ["r1"]))
    nodes.append(helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    c2 = rng.normal(size=(6, 4, 3, 3)) * 0.3
    nodes.append(
        helper.make_node(
            "Conv",
            ["p1", const("conv2.weight", c2), const("conv2.bias", rng.normal(size=6) * 0.1)],
            ["h2"],
            name="conv2",
        )
    )
    nodes.append(helper.make_node("Relu", ["h2"], ["r2"]))
    nodes.append(
        helper.make_node("AveragePool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2])
    )
    nodes.append(helper.make_node("Flatten", ["p2"], ["f"], axis=1))
    s = ((size // 2 - 2) // 2) ** 2 * 6
    nodes.append(
        helper.make_node(
            "Gemm",
            [
                "f",
                const("fc1.weight", rng.normal(size=(8, s)) * 0.3),
                const("fc1.bias", rng.normal(size=8) * 0.1),
            ],
            ["g1"],
            transB=1,
            name="fc1",
        )
    )
    nodes.append(helper.make_node("Relu", ["g1"], ["r3"]))
    nodes.append(
        helper.make_node(
            "MatMul", ["r3", const("fc2.weight", rng.normal(size=(8, 3)) * 0.3)], ["m"]
        )
    )
    nodes.append(
        helper.make_node("Add", ["m", const("fc2.bias", rng.normal(size=3) * 0.1)], ["logits"])
    )
    out = "logits"
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["y"], axis=1))
        out = "y"
    graph = helper.make_graph(
        nodes,
        "lenet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, size, size])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def logits_by_onnx(model, X: np.ndarray) -> np.ndarray:
    """onnx's reference evaluator up to the logits (float32)."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(
        ["logits"] if any(o.name == "y" for o in model.graph.output) else None,
        {"x": X.astype(np.float32)},
    )[0]


def resnet_graph(
    rng: np.random.Generator,
    *,
    widths: tuple = (4, 4, 8),
    size: int = 8,
    channels: int = 3,
    classes: int = 3,
):
    """A ResNet-shaped graph on ``channels x size x size`` inputs as torch exports one:
    a stem Conv+BN+Relu, then one basic block per entry of ``widths`` after the first
    (Conv+BN+Relu+Conv+BN, Add of the skip, Relu; a block that changes the width has
    stride 2 and a 1x1 Conv+BN projection on its skip), GlobalAveragePool, Flatten, Gemm.
    Node and weight names follow torchvision's (``layer1.0.conv1.weight``, ...)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def conv_bn(x, name, cin, cout, k, stride):
        w = rng.normal(size=(cout, cin, k, k)) * np.sqrt(2 / (cin * k * k))
        p = k // 2
        nodes.append(
            helper.make_node(
                "Conv",
                [x, const(f"{name}.weight", w)],
                [f"{name}_out"],
                kernel_shape=[k, k],
                strides=[stride, stride],
                pads=[p, p, p, p],
                name=name,
            )
        )
        bn = name.replace("conv", "bn").replace("downsample.0", "downsample.1")
        nodes.append(
            helper.make_node(
                "BatchNormalization",
                [
                    f"{name}_out",
                    const(f"{bn}.weight", rng.uniform(0.5, 1.5, cout)),
                    const(f"{bn}.bias", rng.normal(size=cout) * 0.1),
                    const(f"{bn}.running_mean", rng.normal(size=cout) * 0.1),
                    const(f"{bn}.running_var", rng.uniform(0.5, 2, cout)),
                ],
                [f"{bn}_out"],
                name=bn,
            )
        )
        return f"{bn}_out"

    def relu(x, name):
        nodes.append(helper.make_node("Relu", [x], [f"{name}_relu"], name=f"{name}_relu"))
        return f"{name}_relu"

    cur = relu(conv_bn("x", "conv1", channels, widths[0], 3, 1), "stem")
    for i, (cin, cout) in enumerate(zip(widths[:-1], widths[1:])):
        name = f"layer{i + 1}.0"
        stride = 1 if cin == cout else 2
        h = relu(conv_bn(cur, f"{name}.conv1", cin, cout, 3, stride), f"{name}.a")
        h = conv_bn(h, f"{name}.conv2", cout, cout, 3, 1)
        skip = cur if cin == cout else conv_bn(cur, f"{name}.downsample.0", cin, cout, 1, 2)
        nodes.append(helper.make_node("Add", [h, skip], [f"{name}_sum"], name=f"{name}.add"))
        cur = relu(f"{name}_sum", name)
    nodes.append(helper.make_node("GlobalAveragePool", [cur], ["pool"]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], axis=1))
    nodes.append(
        helper.make_node(
            "Gemm",
            [
                "flat",
                const("fc.weight", rng.normal(size=(classes, widths[-1])) / np.sqrt(widths[-1])),
                const("fc.bias", rng.normal(size=classes) * 0.1),
            ],
            ["logits"],
            transB=1,
            name="fc",
        )
    )
    graph = helper.make_graph(
        nodes,
        "resnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", channels, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
