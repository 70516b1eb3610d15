"""Live ``torch.nn.Module`` convolutional ReLU networks, read from their forward pass.

``torch.fx.symbolic_trace`` records the module's forward pass as a graph without running
it on data; each node becomes the ONNX operator it computes (``Conv2d`` -> ``Conv``,
``BatchNorm2d`` -> ``BatchNormalization``, ``x + y`` -> ``Add``, ...) and the ONNX reader's
walk (:mod:`neuromanifold.io._onnx_conv`) reads the result, so a module and its ONNX export
are read by one set of rules: forks and sums become residual blocks, BatchNorm is folded
into the layer before it (inference mode), a final Softmax is left out. Every module,
function or method the walk does not know is refused with its name in the module.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import numpy as np

from .._errors import ModelFileError
from ..relu import layers as nl
from ._onnx_conv import GraphReader

__all__ = [
    "FxGraph",
    "check_input_shape",
    "check_trace",
    "dense_chain",
    "fx_graph",
    "hooks",
    "refuse_hooks",
]


@dataclasses.dataclass
class _Node:
    """One node as the ONNX walk reads it: ``op_type``, ``input``/``output`` tensor names
    (constants among the inputs by name), ``attrs``, and the module path and torch type
    for messages."""

    name: str
    op_type: str
    input: list
    output: list
    attrs: dict
    torch_type: str


@dataclasses.dataclass
class _Output:
    name: str


@dataclasses.dataclass
class _GraphOutputs:
    output: list


@dataclasses.dataclass
class _Proto:
    """What the walk reads of an ONNX model: ``proto.graph.output[0].name``."""

    graph: _GraphOutputs
    node: list


class FxGraph(GraphReader):
    """The constants and nodes of a traced module, with the interface of the ONNX reader's
    graph (``consts``, ``current``, ``nodes``, ``run``, ``refuse``, ``const``, ``attrs``)."""

    def __init__(self, source: str):
        self.source = source
        self.consts: dict[str, np.ndarray] = {}
        self.nodes_: list[_Node] = []
        self.current = ""
        self.example_shape: tuple | None = None

    def nodes(self, proto: Any) -> list:
        return list(self.nodes_)

    def refuse(self, node: Any, why: str) -> ModelFileError:
        return ModelFileError(f"{self.source}: {node.name!r} ({node.torch_type}): {why}")

    def const(self, node: Any, index: int, kinds: str = "fiu") -> np.ndarray:
        if index >= len(node.input) or node.input[index] not in self.consts:
            raise self.refuse(node, f"input {index} must be a parameter or buffer of the module")
        return self.consts[node.input[index]]

    def attrs(self, node: Any) -> dict:
        return node.attrs


def _array(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


def _pair(v: Any, n: int) -> list[int]:
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)] * n


class _Tracer:
    """fx nodes -> :class:`_Node` list, one rule per module, function or method."""

    def __init__(self, module: Any, source: str):
        import torch.nn as tnn  # optional extra: only torch models need it

        self.tnn = tnn
        self.module = module
        self.g = FxGraph(source)
        self.names: dict[Any, str] = {}  # fx node -> tensor name
        self.skipped: set = set()  # fx nodes that are not tensors of the data path

    def refuse(self, name: str, torch_type: str, why: str) -> ModelFileError:
        return ModelFileError(f"{self.g.source}: {name!r} ({torch_type}): {why}")

    def emit(self, fx_node: Any, op: str, data: list, consts: dict, attrs: dict, kind: str):
        inputs = [self.names[d] for d in data]
        for key, value in consts.items():
            cname = f"{fx_node.target}.{key}"
            self.g.consts[cname] = value
            inputs.append(cname)
        self.names[fx_node] = fx_node.name
        name = str(fx_node.target) if fx_node.op == "call_module" else fx_node.name
        self.g.nodes_.append(_Node(name, op, inputs, [fx_node.name], attrs, kind))

    def data_args(self, fx_node: Any) -> list:
        import torch.fx as fx  # optional extra: only torch models need it

        out = []
        for a in fx_node.args:
            if isinstance(a, fx.Node) and a not in self.skipped:
                if a not in self.names:
                    raise self.refuse(
                        str(fx_node.target), fx_node.op, f"reads {a.name!r}, which is not a tensor"
                    )
                out.append(a)
        return out

    def module_node(self, n: Any) -> None:
        """The ONNX node of one call of a submodule, by the submodule's type."""
        # Whole: one branch per torch layer type, a few lines each: the table of what is read
        tnn, m = self.tnn, self.module.get_submodule(n.target)
        kind = type(m).__name__
        data = self.data_args(n)
        if n.kwargs or len(data) != 1:
            raise self.refuse(n.target, kind, "a layer is read called on one tensor, positionally")
        [x] = data
        if isinstance(m, (tnn.Conv1d, tnn.Conv2d)):
            k = m.weight.ndim - 2
            if m.padding_mode != "zeros" or isinstance(m.padding, str) and m.padding != "valid":
                raise self.refuse(n.target, kind, "padding other than explicit zeros is not read")
            pad = [0] * k if isinstance(m.padding, str) else _pair(m.padding, k)
            consts = {"weight": _array(m.weight)}
            if m.bias is not None:
                consts["bias"] = _array(m.bias)
            attrs = {
                "strides": _pair(m.stride, k),
                "pads": pad + pad,
                "dilations": _pair(m.dilation, k),
                "group": int(m.groups),
            }
            self.emit(n, "Conv", [x], consts, attrs, kind)
        elif isinstance(m, (tnn.BatchNorm1d, tnn.BatchNorm2d)):
            if m.training:
                raise self.refuse(
                    n.target,
                    kind,
                    "in training mode BatchNorm normalizes by each batch's statistics: "
                    "call module.eval() first (inference mode is read)",
                )
            if m.running_mean is None:
                raise self.refuse(n.target, kind, "track_running_stats=False is not read")
            c = m.num_features
            consts = {
                "gamma": _array(m.weight) if m.affine else np.ones(c),
                "beta": _array(m.bias) if m.affine else np.zeros(c),
                "mean": _array(m.running_mean),
                "var": _array(m.running_var),
            }
            self.emit(n, "BatchNormalization", [x], consts, {"epsilon": float(m.eps)}, kind)
        elif isinstance(m, tnn.ReLU):
            self.emit(n, "Relu", [x], {}, {}, kind)
        elif isinstance(m, (tnn.MaxPool1d, tnn.MaxPool2d, tnn.AvgPool1d, tnn.AvgPool2d)):
            k = 1 if isinstance(m, (tnn.MaxPool1d, tnn.AvgPool1d)) else 2
            size = _pair(m.kernel_size, k)
            pad = _pair(m.padding, k)
            attrs = {
                "kernel_shape": size,
                "strides": _pair(m.stride if m.stride is not None else size, k),
                "pads": pad + pad,
                "ceil_mode": int(m.ceil_mode),
            }
            if isinstance(m, (tnn.MaxPool1d, tnn.MaxPool2d)):
                if m.return_indices:
                    raise self.refuse(n.target, kind, "return_indices=True is not read")
                attrs["dilations"] = _pair(m.dilation, k)
                self.emit(n, "MaxPool", [x], {}, attrs, kind)
            else:
                if getattr(m, "divisor_override", None) is not None:
                    raise self.refuse(n.target, kind, "divisor_override is not read")
                attrs["count_include_pad"] = int(m.count_include_pad)
                self.emit(n, "AveragePool", [x], {}, attrs, kind)
        elif isinstance(m, (tnn.AdaptiveAvgPool1d, tnn.AdaptiveAvgPool2d)):
            if any(s != 1 for s in np.atleast_1d(m.output_size)):
                raise self.refuse(
                    n.target, kind, f"output_size {m.output_size} (only 1: global average)"
                )
            self.emit(n, "GlobalAveragePool", [x], {}, {}, kind)
        elif isinstance(m, tnn.Flatten):
            if m.start_dim != 1 or m.end_dim != -1:
                raise self.refuse(n.target, kind, "Flatten is read with start_dim=1, end_dim=-1")
            self.emit(n, "Flatten", [x], {}, {"axis": 1}, kind)
        elif isinstance(m, tnn.Linear):
            consts = {"weight": _array(m.weight)}
            if m.bias is not None:
                consts["bias"] = _array(m.bias)
            self.emit(n, "Gemm", [x], consts, {"transB": 1}, kind)
        elif isinstance(m, (tnn.Identity, tnn.Dropout)):
            if isinstance(m, tnn.Dropout) and m.training:
                raise self.refuse(n.target, kind, "Dropout in training mode: call module.eval()")
            self.names[n] = self.names[x]  # the same tensor
        elif isinstance(m, (tnn.Softmax, tnn.LogSoftmax)):
            self.emit(
                n, "Softmax" if isinstance(m, tnn.Softmax) else "LogSoftmax", [x], {}, {}, kind
            )
        else:
            raise self.refuse(
                n.target,
                kind,
                "not a layer of a convolutional ReLU network (read: Conv1d/2d, BatchNorm1d/2d, "
                "ReLU, MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool to 1, Flatten, Linear, "
                "Identity, Dropout, a final Softmax/LogSoftmax, and sums of two branches)",
            )

    def function_node(self, n: Any) -> None:
        import torch  # optional extra: only torch models need it
        import torch.nn.functional as F  # optional extra: only torch models need it

        f, what = n.target, getattr(n.target, "__name__", str(n.target))
        data = self.data_args(n)
        if f in (operator.add, torch.add) and len(data) == 2 and not n.kwargs:
            self.emit(n, "Add", data, {}, {}, what)
        elif f in (F.relu, torch.relu) and len(data) == 1:
            self.emit(n, "Relu", data, {}, {}, what)
        elif f is torch.flatten and len(data) == 1 and _flatten_dims(n) == (1, -1):
            self.emit(n, "Flatten", data, {}, {"axis": 1}, what)
        elif f in (F.softmax, F.log_softmax, torch.softmax, torch.log_softmax) and len(data) == 1:
            self.emit(n, "Softmax" if "log" not in what else "LogSoftmax", data, {}, {}, what)
        else:
            raise self.refuse(
                n.name,
                what,
                "a function the forward pass calls that is not read (read: x + y of two "
                "branches, relu, flatten(x, 1), a final softmax)",
            )

    def method_node(self, n: Any) -> None:
        x = n.args[0]
        if n.target == "size":  # an int, not a tensor: may feed a view
            self.skipped.add(n)
            return
        data = self.data_args(n)
        rest = n.args[1:]
        if n.target == "relu" and len(data) == 1:
            self.emit(n, "Relu", data, {}, {}, f"Tensor.{n.target}")
        elif n.target == "flatten" and data == [x] and _flatten_dims(n) == (1, -1):
            self.emit(n, "Flatten", data, {}, {"axis": 1}, f"Tensor.{n.target}")
        elif n.target in ("view", "reshape") and data == [x] and not n.kwargs:
            shape = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
            batch = len(shape) == 2 and (shape[0] in (-1, 1) or shape[0] in self.skipped)
            if not batch or not isinstance(shape[1], int):
                raise self.refuse(
                    n.name,
                    f"Tensor.{n.target}",
                    "read when it flattens to (batch, -1) or (-1, entries) only",
                )
            # a Reshape: the walk checks that it flattens (its entries are the tensor's)
            self.emit(
                n, "Reshape", data, {"shape": np.array([-1, shape[1]])}, {}, f"Tensor.{n.target}"
            )
        else:
            raise self.refuse(
                n.name,
                f"Tensor.{n.target}",
                "a tensor method the forward pass calls that is not read (read: relu, and "
                "view/reshape/flatten to (batch, -1))",
            )

    def run(self, graph: Any) -> _Proto:
        out = ""
        for n in graph.nodes:
            try:
                out = self.node(n) or out
            except ModelFileError:
                raise
            except (ValueError, TypeError, IndexError) as exc:
                raise self.refuse(
                    n.name, str(n.target), f"cannot be read ({type(exc).__name__}: {exc})"
                ) from None
        return _Proto(graph=_GraphOutputs(output=[_Output(out)]), node=self.g.nodes_)

    def node(self, n: Any) -> str | None:
        """One fx node read; the output's tensor name for the output node."""
        if n.op == "placeholder":
            if self.g.current:
                raise self.refuse(n.name, "input", "a forward pass of one input is read")
            self.g.current = self.names[n] = n.name
        elif n.op == "call_module":
            self.module_node(n)
        elif n.op == "call_function":
            self.function_node(n)
        elif n.op == "call_method":
            self.method_node(n)
        elif n.op == "get_attr":
            raise self.refuse(
                n.name,
                str(n.target),
                "a parameter read by the forward pass itself (outside a layer) is not read",
            )
        elif n.op == "output":
            if n.args[0] not in self.names:
                raise self.refuse(n.name, "output", "the output is not one tensor")
            return self.names[n.args[0]]
        return None


def refuse_hooks(module: Any, source: str) -> None:
    """A :class:`~neuromanifold.ModelFileError` when forward hooks are registered: the
    module's weights and layers, which are what is read, are then not what it computes."""
    hooked = hooks(module)
    if hooked:
        raise ModelFileError(
            f"{source}: forward hooks are registered on {hooked[:6]}; the network read from "
            f"its layers would not be what the module computes: remove them, or export the "
            f"module to ONNX"
        )


def _flatten_dims(n: Any) -> tuple:
    """``(start_dim, end_dim)`` of a ``flatten`` call, positional or by keyword."""
    args = list(n.args[1:]) + [None, None]
    start = n.kwargs.get("start_dim", args[0] if args[0] is not None else 0)
    end = n.kwargs.get("end_dim", args[1] if args[1] is not None else -1)
    return start, end


def hooks(module: Any) -> list[str]:
    """The submodules (by name) with forward hooks or pre-hooks, which a trace does not
    see, and ``"(global)"`` for hooks registered on every module."""
    import torch.nn.modules.module as mm  # optional extra: only torch models need it

    out = [
        name or "(the module)"
        for name, m in module.named_modules()
        if getattr(m, "_forward_hooks", None) or getattr(m, "_forward_pre_hooks", None)
    ]
    if getattr(mm, "_global_forward_hooks", None) or getattr(mm, "_global_forward_pre_hooks", None):
        out.append("(global)")
    return out


def fx_graph(module: Any, source: str) -> tuple[FxGraph, _Proto]:
    """The traced forward pass of ``module`` as the ONNX walk reads it; a module fx cannot
    trace (control flow on values) raises :class:`~neuromanifold.ModelFileError`."""
    import torch.fx as fx  # optional extra: only torch models need it

    refuse_hooks(module, source)
    try:
        traced = fx.symbolic_trace(module)
    except Exception as exc:  # fx raises many types on untraceable code
        raise ModelFileError(
            f"{source}: its forward pass cannot be traced by torch.fx ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); export it to ONNX "
            f"(torch.onnx.export) and load the file"
        ) from None
    tracer = _Tracer(module, source)
    proto = tracer.run(traced.graph)
    return tracer.g, proto


def check_input_shape(input_shape: Any, source: str) -> tuple[int, ...]:
    """``input_shape`` as a tuple of 1 to 3 positive ints (one input, past the batch axis)."""
    try:
        items = list(input_shape)
    except TypeError:
        items = []
    ok = 1 <= len(items) <= 3 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in items
    )
    shape = tuple(int(v) for v in items) if ok else ()
    if not ok:
        raise ModelFileError(
            f"{source}: input_shape must be the shape of one input past the batch axis, 1 to "
            f"3 positive integers ((features,), (channels, length) or (channels, height, "
            f"width)); got {input_shape!r}"
        )
    return shape


def dense_chain(layers: tuple) -> list | None:
    """The ``(W, b)`` list of layers that are dense layers with a ReLU between each two (a
    leading Flatten of a flat input allowed), else ``None``."""
    layers = [layer for layer in layers if not isinstance(layer, nl.Flatten)]
    dense = layers[0::2]
    relus = layers[1::2]
    if not dense or not all(isinstance(layer, nl.Dense) for layer in dense):
        return None
    if len(relus) != len(dense) - 1 or not all(isinstance(layer, nl.ReLU) for layer in relus):
        return None
    return [(np.asarray(layer.weight), np.asarray(layer.bias)) for layer in dense]


def check_trace(module: Any, forward: Any, shape: tuple, last_op: str | None, source: str):
    """The module itself, in inference mode, against ``forward`` (the network read) at a
    few random inputs: a trace cannot see an in-place operation on a tensor read again
    (``h += y`` while a skip still holds ``h``, ``ReLU(inplace=True)``) or other state,
    so a network that computes something else is refused. ``last_op``: a final Softmax or
    LogSoftmax the reading left out, applied to ``forward``'s outputs for the comparison."""
    import torch  # optional extra: only torch models need it

    param = next(iter(module.parameters()), None)
    dtype = torch.float64 if param is None else param.dtype
    X = np.random.default_rng(0).uniform(-1.0, 1.0, (4,) + tuple(shape))
    with torch.no_grad():
        want = module(torch.tensor(X, dtype=dtype)).detach().cpu().double().numpy()
    got = np.asarray(forward(X.reshape(len(X), -1)), float)
    if last_op in ("Softmax", "LogSoftmax"):
        top = got.max(axis=1, keepdims=True)
        logs = got - top - np.log(np.exp(got - top).sum(axis=1, keepdims=True))
        got = logs if last_op == "LogSoftmax" else np.exp(logs)
    want = want.reshape(got.shape) if want.size == got.size else want
    room = (1e-4 if dtype != torch.float64 else 1e-9) * (1.0 + np.abs(want).max())
    gap = np.abs(got - want).max() if want.shape == got.shape else np.inf
    if not gap <= room:
        raise ModelFileError(
            f"{source}: the forward pass as traced does not compute what the module computes "
            f"(largest difference {gap:.3g} at random inputs): an in-place operation on a "
            f"tensor that is read again (h += ..., ReLU(inplace=True) on a skip's tensor) or "
            f"state the trace does not see; write it out of place, or export the module to "
            f"ONNX"
        )
