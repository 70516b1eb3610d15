"""Convolutional ReLU networks from ONNX graphs, node by node.

Read: ``Conv`` (bias, strides, pads, dilations; one group), ``BatchNormalization``
(inference mode, folded into the Conv or dense layer right before it, and said so),
``Relu``, ``MaxPool`` and ``AveragePool`` (floor mode), ``GlobalAveragePool``,
``Flatten`` (axis 1) and a ``Reshape`` that flattens, ``Gemm``, ``MatMul`` (+ ``Add`` of
a bias), ``Add`` of two branches (a residual connection: the branches from the tensor
where they fork become a :class:`~neuromanifold.relu.layers.Residual` block, the one of
affine layers only, or none, its skip), and a final ``Softmax``/``LogSoftmax`` (left out
and said so: the analyses are on the logits, and logits equal up to a constant are the
same classifier). Every other operator, attribute value or graph shape is refused with
the node's name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._errors import ArchitectureError, ModelFileError
from ..relu import ReLUConvNet
from ..relu import layers as nl
from ._model import Model

__all__ = [
    "ConvWalk",
    "GraphReader",
    "is_conv_relu_graph",
    "read_conv_graph",
    "conv_model",
    "conv_graph_nodes",
]

_CONV_OPS = {"Relu", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization"}
_PASS = {"Identity", "Dropout"}


class GraphReader:
    """What the graphs the walk reads share (an ONNX file's, a traced torch module's): a
    node's step run with any value no rule foresaw refused with the node's name."""

    def refuse(self, node: Any, why: str) -> ModelFileError:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, node: Any, step: Any) -> None:
        """``step(node)``, a value no rule of ``step`` foresaw refused with the node's name."""
        try:
            step(node)
        except ModelFileError:
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            raise self.refuse(node, f"cannot be read ({type(exc).__name__}: {exc})") from None


def is_conv_relu_graph(proto: Any) -> bool:
    """A graph with a convolution and a ReLU or pooling: a convolutional ReLU network
    (a graph of bias-free convolutions alone is a linear convolutional network)."""
    ops = {n.op_type for n in proto.graph.node}
    return "Conv" in ops and bool(ops & _CONV_OPS)


class ConvWalk:
    """The graph's tensors as chains of layers from the input (``chains``), extended node
    by node; the node being read sees its input's chain as ``layers`` and ``shape``."""

    def __init__(self, graph: Any, example_shape: tuple):
        self.g = graph
        self.layers: list[nl.Layer] = []
        self.notes: list[str] = []
        self.shape = tuple(example_shape)
        self.chains: dict[str, tuple[tuple[nl.Layer, ...], tuple]] = {}
        self.forked = False  # the input of the node being read feeds other nodes too
        self.output = ""

    def run(self, proto: Any) -> tuple[nl.Layer, ...]:
        """Every node in order; returns the graph output's chain of layers."""
        g = self.g
        nodes = list(g.nodes(proto))
        uses: dict[str, int] = {}
        for node in nodes:
            for t in node.input:
                uses[t] = uses.get(t, 0) + 1
        self.output = proto.graph.output[0].name
        self.chains[g.current] = ((), self.shape)
        for node in nodes:
            data = [t for t in node.input if t and t not in g.consts]
            if len(node.output) != 1:
                raise g.refuse(node, "a node with more than one output is not read")
            if node.op_type == "Add" and len(data) == 2:
                g.run(node, lambda n: self.join(n, data))
                continue
            if len(data) != 1 or data[0] not in self.chains:
                raise g.refuse(
                    node,
                    "not on the graph's data path from the input (it must read one tensor "
                    "computed from the input, its other inputs constants)",
                )
            self.layers, self.shape = list(self.chains[data[0]][0]), self.chains[data[0]][1]
            self.forked = uses.get(data[0], 0) > 1
            g.run(node, self.step)
            self.chains[node.output[0]] = (tuple(self.layers), self.shape)
        for node in nodes:
            if uses.get(node.output[0], 0) == 0 and node.output[0] != self.output:
                raise g.refuse(node, "its output is not used (a branch that never rejoins)")
        if self.output not in self.chains:
            raise ModelFileError(f"{g.source}: the graph's output is not computed from its input")
        return self.chains[self.output][0]

    def join(self, node: Any, data: list[str]) -> None:
        """``Add`` of two tensors computed from the input: a residual block, the two
        branches from the tensor where they fork."""
        g = self.g
        if any(t not in self.chains for t in data):
            raise g.refuse(node, "adds a tensor that is not computed from the input")
        (la, sa), (lb, sb) = (self.chains[t] for t in data)
        if sa != sb:
            raise g.refuse(node, f"adds tensors of shapes {sa} and {sb} (no broadcasting)")
        k = 0
        while k < min(len(la), len(lb)) and la[k] is lb[k]:
            k += 1
        block, why = None, ""
        for body, skip in ((la[k:], lb[k:]), (lb[k:], la[k:])):
            try:
                block = nl.Residual(body, skip)
                break
            except ArchitectureError as err:
                why = str(err)
        if block is None:
            raise g.refuse(
                node,
                f"a sum of two branches is read as a residual block (a body, and a skip of "
                f"affine layers or none); here: {why}",
            )
        self.chains[node.output[0]] = (la[:k] + (block,), sa)

    def push(self, layer: nl.Layer, node: Any) -> None:
        try:
            self.shape = tuple(layer.out_shape(self.shape))
        except ArchitectureError as err:
            raise self.g.refuse(node, str(err)) from None
        self.layers.append(layer)

    def ints(self, a: dict, key: str, default: Any) -> Any:
        value = a.get(key, default)
        return None if value is None else [int(v) for v in value]

    def step(self, node: Any) -> None:
        g, op, a = self.g, node.op_type, self.g.attrs(node)
        if op in _PASS:
            return
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise g.refuse(node, "auto_pad is not read; export with explicit pads")
        if op == "Conv":
            W, b = g.const(node, 1), (g.const(node, 2) if len(node.input) > 2 else None)
            if W.ndim not in (3, 4):
                raise g.refuse(node, f"a Conv weight has 3 or 4 axes; got shape {W.shape}")
            if int(a.get("group", 1)) != 1:
                raise g.refuse(node, f"grouped convolution (group={a['group']}) is not read")
            n = W.ndim - 2
            b = np.zeros(W.shape[0]) if b is None else b
            layer = nl.Conv(
                np.asarray(W, np.float64),
                np.asarray(b, np.float64),
                stride=self.ints(a, "strides", [1] * n),
                padding=self.ints(a, "pads", [0] * 2 * n),
                dilation=self.ints(a, "dilations", [1] * n),
                name=node.input[1].removesuffix(".weight"),
            )
            self.push(layer, node)
        elif op == "BatchNormalization":
            self.batch_norm(node, a)
        elif op == "Relu":
            self.push(nl.ReLU(), node)
        elif op in ("MaxPool", "AveragePool"):
            if int(a.get("ceil_mode", 0)) != 0:
                raise g.refuse(node, "ceil_mode=1 is not read (floor mode only)")
            if op == "MaxPool" and (
                any(d != 1 for d in a.get("dilations", [])) or len(node.output) != 1
            ):
                raise g.refuse(node, "dilated max pooling or its indices output is not read")
            k = self.ints(a, "kernel_shape", None)
            kw = dict(kernel=tuple(k), stride=tuple(self.ints(a, "strides", k)))
            kw["padding"] = tuple(self.ints(a, "pads", [0] * 2 * len(k)))
            if op == "MaxPool":
                self.push(nl.MaxPool(**kw), node)
            else:
                include = bool(a.get("count_include_pad", 0))
                self.push(nl.AvgPool(**kw, count_include_pad=include), node)
        elif op == "GlobalAveragePool":
            self.push(nl.GlobalAvgPool(), node)
        elif op in ("Flatten", "Reshape"):
            self.flatten(node, a)
        elif op in ("Gemm", "MatMul"):
            self.dense(node, a)
        elif op == "Add":
            self.add(node)
        elif op in ("Softmax", "LogSoftmax"):
            if node.output[0] != self.output:
                raise g.refuse(node, "a Softmax is read as the graph's last node only")
            self.notes.append(
                f"the final {op} left out: the analyses are on the logits (logits equal "
                f"up to a constant are the same classifier)"
            )
        else:
            raise g.refuse(
                node,
                "not a layer of a convolutional ReLU network (read: Conv, "
                "BatchNormalization, Relu, MaxPool, AveragePool, GlobalAveragePool, "
                "Flatten, Reshape, Gemm, MatMul, Add of a bias or of two branches, a final "
                "Softmax)",
            )

    def batch_norm(self, node: Any, a: dict) -> None:
        g = self.g
        last = self.layers[-1] if self.layers else None
        if not isinstance(last, nl.AffineLayer) or self.forked:
            raise g.refuse(
                node,
                "BatchNormalization is read right after a Conv or dense layer only (whose "
                "output feeds nothing else)",
            )
        if int(a.get("training_mode", 0)):
            raise g.refuse(node, "training_mode=1: only inference-mode BatchNormalization")
        gamma, beta, mean, var = (np.asarray(g.const(node, i), np.float64) for i in range(1, 5))
        eps = float(a.get("epsilon", 1e-5))
        if np.any(var + eps <= 0):
            raise g.refuse(node, "a variance + epsilon <= 0")
        s = gamma / np.sqrt(var + eps)
        shape = (-1,) + (1,) * (last.weight.ndim - 1)
        folded = dataclasses.replace(
            last, weight=last.weight * s.reshape(shape), bias=(last.bias - mean) * s + beta
        )
        self.layers[-1] = folded
        self.notes.append(
            f"BatchNormalization {node.name or node.output[0]!r} (inference mode) folded "
            f"into the affine layer before it"
        )

    def flatten(self, node: Any, a: dict) -> None:
        g = self.g
        if node.op_type == "Flatten" and int(a.get("axis", 1)) != 1:
            raise g.refuse(node, "Flatten is read with axis=1 only (batch first)")
        if node.op_type == "Reshape":
            shape = [int(v) for v in g.const(node, 1, "iu").ravel()]
            total = int(np.prod(self.shape))
            if len(shape) != 2 or shape[1] not in (-1, total) or shape[0] not in (-1, 0, 1):
                raise g.refuse(
                    node, f"a Reshape is read when it flattens to (batch, {total}); got {shape}"
                )
        self.push(nl.Flatten(), node)

    def dense(self, node: Any, a: dict) -> None:
        g = self.g
        if len(self.shape) != 1:
            raise g.refuse(node, f"a dense layer on an unflattened tensor of shape {self.shape}")
        if node.op_type == "Gemm":
            if int(a.get("transA", 0)):
                raise g.refuse(node, "transA=1 is not read")
            W = np.asarray(g.const(node, 1), np.float64)
            W = W if int(a.get("transB", 0)) else W.T
            W = W * float(a.get("alpha", 1.0))
            b = (
                np.asarray(g.const(node, 2), np.float64) * float(a.get("beta", 1.0))
                if len(node.input) > 2
                else np.zeros(W.shape[0])
            )
            b = np.broadcast_to(b.ravel() if b.size == W.shape[0] else b, (W.shape[0],)).copy()
        else:
            W = np.asarray(g.const(node, 1), np.float64).T
            b = np.zeros(W.shape[0])
        name = node.input[1].removesuffix(".weight")
        self.push(nl.Dense(W, b, name=name), node)

    def add(self, node: Any) -> None:
        g = self.g
        last = self.layers[-1] if self.layers else None
        other = [i for i in node.input if i in g.consts]
        if not isinstance(last, nl.Dense) or len(other) != 1 or self.forked:
            raise g.refuse(
                node,
                "an Add of a constant is read as a dense layer's bias (right after MatMul or "
                "Gemm, whose output feeds nothing else)",
            )
        c = np.asarray(g.const(node, list(node.input).index(other[0])), np.float64).ravel()
        if c.size not in (1, last.bias.size):
            raise g.refuse(node, f"a bias of {c.size} entries for {last.bias.size} outputs")
        self.layers[-1] = nl.Dense(last.weight, last.bias + c, name=last.name)


def conv_model(net: ReLUConvNet, source: str, converted_from: str, notes: tuple) -> Model:
    """The :class:`~neuromanifold.io.Model` (kind ``"relu_conv"``) of ``net``."""
    return Model(
        kind="relu_conv",
        params=net,
        architecture=(tuple(net.input_shape), tuple(layer.describe() for layer in net.layers)),
        strides=None,
        source=source,
        converted_from=converted_from,
        notes=notes,
    )


def conv_graph_nodes(onnx: Any, net: ReLUConvNet, x: str) -> tuple[list, list, str]:
    """``(nodes, initializers, output name)``: ``net`` as ONNX nodes on the tensor ``x``
    (float64 weights named ``<layer path>.weight`` / ``.bias``, or the layer's own name),
    which :func:`read_conv_graph` reads back as the same network."""
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    nodes: list = []
    inits: list = []
    in_shapes = {path: shape for path, _, shape in net.leaves()}
    names: set[str] = set()

    def emit(prefix: str, layers: tuple, x: str) -> str:
        for j, layer in enumerate(layers):
            path = f"{prefix}{j}"
            out = f"t{path}"
            if isinstance(layer, nl.Residual):
                ends = [emit(f"{path}.{b}.", sub, x) for b, sub in layer.branches()]
                nodes.append(helper.make_node("Add", ends, [out], name=f"{path}.add"))
            elif isinstance(layer, nl.AffineLayer):
                # a layer's own name, unless another layer took it (initializers are unique)
                name = net.layer_name(path)
                name = name if name not in names else path
                names.add(name)
                inits.append(numpy_helper.from_array(layer.weight, f"{name}.weight"))
                inits.append(numpy_helper.from_array(layer.bias, f"{name}.bias"))
                args = [x, f"{name}.weight", f"{name}.bias"]
                if isinstance(layer, nl.Conv):
                    nodes.append(
                        helper.make_node(
                            "Conv",
                            args,
                            [out],
                            name=path,
                            kernel_shape=list(layer.weight.shape[2:]),
                            strides=list(layer.stride),
                            pads=list(layer.padding),
                            dilations=list(layer.dilation),
                        )
                    )
                else:
                    nodes.append(helper.make_node("Gemm", args, [out], name=path, transB=1))
            elif isinstance(layer, (nl.MaxPool, nl.AvgPool)):
                spatial = len(in_shapes[path]) - 1
                kernel, stride, pads = layer.geometry(spatial)
                kw = {"kernel_shape": list(kernel), "strides": list(stride), "pads": list(pads)}
                if isinstance(layer, nl.AvgPool):
                    kw["count_include_pad"] = int(layer.count_include_pad)
                op = "MaxPool" if isinstance(layer, nl.MaxPool) else "AveragePool"
                nodes.append(helper.make_node(op, [x], [out], name=path, **kw))
            else:
                op = {"relu": "Relu", "flatten": "Flatten", "globalavgpool": "GlobalAveragePool"}
                if layer.kind not in op:
                    raise ModelFileError(f"cannot write a {layer.describe()} layer to ONNX")
                kw = {"axis": 1} if layer.kind == "flatten" else {}
                nodes.append(helper.make_node(op[layer.kind], [x], [out], name=path, **kw))
            x = out
        return x

    return nodes, inits, emit("", net.layers, x)


def read_conv_graph(graph: Any, proto: Any, source: str, example_shape: tuple | None) -> Any:
    """The :class:`~neuromanifold.io.Model` (kind ``"relu_conv"``) of a convolutional
    ReLU graph; ``graph`` is the reader's constants and walk state."""
    if not example_shape or len(example_shape) not in (2, 3):
        raise ModelFileError(
            f"{source}: a convolutional network's input must declare its shape "
            f"(batch, channels, length) or (batch, channels, height, width); got "
            f"{example_shape}"
        )
    walk = ConvWalk(graph, tuple(int(d) for d in example_shape))
    layers = walk.run(proto)
    try:
        net = ReLUConvNet(
            input_shape=tuple(int(d) for d in example_shape),
            layers=layers,
            notes=tuple(walk.notes),
        )
    except ArchitectureError as err:
        raise ModelFileError(f"{source}: {err}") from None
    dtypes = {str(v.dtype) for v in graph.consts.values() if v.dtype.kind == "f"}
    return conv_model(
        net,
        source,
        "/".join(sorted(dtypes)) or "float64",
        ("read the ONNX graph node by node",) + tuple(walk.notes),
    )
