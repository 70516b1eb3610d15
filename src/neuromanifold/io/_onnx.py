"""ONNX graphs: reading a straight-line ReLU network (or linear convolutional network) from
its nodes and initializers, and writing one.

ONNX is the interchange format of the verification community (VNN-COMP, Marabou,
VeryDiff). A graph is read node by node along the one path from its input to its output;
only operators whose meaning is an affine layer, a ReLU or a no-op on a batch of vectors
are read (:data:`READABLE_OPS`). Anything else is refused with the node's name and op
type, since guessing what an unknown operator computes would make every later answer
wrong. Reading executes nothing: the weights are the graph's constant tensors.

Two layouts of VNN-COMP graphs are read besides the batch of rows ``x @ W``:

* ``MatMul(W, x)``, the constant weight first, on a 1-D activation ``x`` of shape
  ``[n]`` or a column ``[n, 1]``: the layer ``W x`` (W of shape ``(out, in)``);
* input normalization in front of the first affine layer: ``Sub(x, mean)``,
  ``Div(x, std)`` and ``Mul(x, scale)`` (``Mul(scale, x)``) by constants, per coordinate
  or scalar, folded exactly into the first layer (``W' = W / std``,
  ``b' = b - W (mean / std)``, computed in float64), which the model's notes say.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import ModelFileError
from .._validation import MAX_PARAMS
from ._model import Model, model_from_arrays
from ._onnx_conv import GraphReader, conv_graph_nodes, is_conv_relu_graph, read_conv_graph

__all__ = ["read_onnx", "write_onnx", "READABLE_OPS"]

#: the ONNX operators :func:`read_onnx` reads; any other node is refused by name
READABLE_OPS = (
    "Gemm",
    "MatMul",
    "Add",
    "Relu",
    "Flatten",
    "Identity",
    "Reshape",
    "Conv",
    "Sub",
    "Div",
    "Mul",
)
#: the elementwise operators read as input normalization in front of the first layer
_NORMALIZATION = ("Sub", "Div", "Mul")
_HINT = "reading ONNX needs the onnx package: pip install 'neuromanifold[onnx]'"
_OPSET = 13


def _onnx(path: Any) -> Any:
    try:
        import onnx  # optional extra: only ONNX files need it
    except ImportError:
        raise ModelFileError(f"{path}: {_HINT}") from None
    return onnx


class _Graph(GraphReader):
    """The constants of a graph and the walk along its one data path, one node at a time."""

    def __init__(self, onnx: Any, graph: Any, source: str):
        self.onnx, self.source = onnx, source
        self.shapes: dict[str, list[int | None] | None] = {}  # by onnx's shape inference
        self.norm: list[tuple[Any, np.ndarray]] = []  # normalization nodes before layer 0
        self.rows = False  # a layer read as x @ W on a 2D activation (examples are rows)
        self.columns = False  # a layer read as W @ x on a column [n, 1]
        self.notes: list[str] = []
        self.consts: dict[str, np.ndarray] = {}
        self.external_ranges: dict[Path, list] = {}  # bytes of external files already read
        for init in graph.initializer:
            self.consts[init.name] = self.array(init, f"initializer {init.name!r}")
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                tensor = next((a.t for a in node.attribute if a.name == "value"), None)
                if tensor is None:
                    raise self.refuse(node, "a Constant without a tensor 'value'")
                self.consts[node.output[0]] = self.array(tensor, f"Constant {node.name!r}")
        self.layers: list[dict[str, Any]] = []  # affine: W, b, relu; conv: w, stride
        self.current: str = ""
        self.flat = True  # each example is one row (rank <= 2)
        self.features: int | None = None  # entries per example, when the graph says
        self.example_shape: tuple | None = None  # the input's shape past the batch axis

    def array(self, tensor: Any, what: str) -> np.ndarray:
        count = int(np.prod([int(d) for d in tensor.dims], dtype=object))
        if count > MAX_PARAMS:
            raise ModelFileError(
                f"{self.source}: {what} declares shape {tuple(tensor.dims)} "
                f"({count:,} entries), more than the limit of {MAX_PARAMS:,}"
            )
        if tensor.data_location == self.onnx.TensorProto.EXTERNAL:
            tensor = self.external(tensor, what, count)
        try:
            return np.array(self.onnx.numpy_helper.to_array(tensor))
        except Exception as exc:  # malformed tensor data: onnx raises several types
            raise ModelFileError(
                f"{self.source}: {what} cannot be read as an array ({type(exc).__name__}: {exc})"
            ) from None

    def external(self, tensor: Any, what: str, count: int) -> Any:
        """A copy of ``tensor`` with the bytes its external data names (``model.onnx``
        + ``model.onnx.data``, as torch's exporter writes): read from a file in the
        model's own folder only, at the stated offset, exactly the tensor's size."""
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        folder = Path(self.source).resolve().parent
        try:
            target = (folder / location).resolve()
            inside = (
                bool(location)
                and not Path(location).is_absolute()
                and target.parent == folder
                and target.is_file()
            )
        except (OSError, ValueError):  # a NUL byte, a name too long, ...
            inside = False
        if not inside:
            raise ModelFileError(
                f"{self.source}: {what} is stored in the external file {location!r}, which "
                f"must be a file in the model's own folder ({folder}); external data is "
                f"read from there only"
            )
        try:
            dtype = np.dtype(self.onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type))
            offset = int(info.get("offset", 0))
            length = int(info["length"]) if "length" in info else None
        except (TypeError, ValueError, KeyError) as exc:
            raise ModelFileError(
                f"{self.source}: {what}: unreadable external data entry ({exc})"
            ) from None
        size, stored = count * dtype.itemsize, target.stat().st_size
        if offset < 0 or length not in (None, size) or offset + size > stored:
            raise ModelFileError(
                f"{self.source}: {what} needs {size:,} bytes at offset {offset} of "
                f"{location!r} (length {info.get('length', 'not given')}, file of "
                f"{stored:,} bytes)"
            )
        # two tensors never share bytes: an offset into another tensor's data is refused
        for start, end, other in self.external_ranges.get(target, []):
            if offset < end and start < offset + size:
                raise ModelFileError(
                    f"{self.source}: {what} takes bytes {offset}..{offset + size} of "
                    f"{location!r}, which overlap those of {other} ({start}..{end})"
                )
        self.external_ranges.setdefault(target, []).append((offset, offset + size, what))
        with open(target, "rb") as fh:
            fh.seek(offset)
            raw = fh.read(size)
        if "checksum" in info and hashlib.sha1(raw).hexdigest() != info["checksum"].lower():
            raise ModelFileError(
                f"{self.source}: {what}: the SHA-1 of its external bytes does not match the "
                f"checksum the file states"
            )
        copy = self.onnx.TensorProto()
        copy.CopyFrom(tensor)
        del copy.external_data[:]
        copy.data_location = self.onnx.TensorProto.DEFAULT
        copy.raw_data = raw
        return copy

    def walk(self, proto: Any, step: Any) -> None:
        """``step(node)`` on every node along the one data path from the input (Constant
        nodes are constants); a node off that path, or a value no rule of ``step``
        foresaw, is refused with the node's name."""
        for node in self.nodes(proto):
            if self.current not in node.input[:2] or len(node.output) != 1:
                raise self.refuse(
                    node,
                    "not on a straight line from the input (it does not take the previous "
                    "node's output); only a chain of layers is read",
                )
            self.run(node, step)
            self.current = node.output[0]

    def nodes(self, proto: Any) -> Any:
        """The graph's nodes but its Constants (read as constants), in the file's order
        (ONNX's is topological)."""
        for node in proto.graph.node:
            if not (node.op_type == "Constant" and node.domain in ("", "ai.onnx")):
                yield node

    def refuse(self, node: Any, why: str) -> ModelFileError:
        return ModelFileError(
            f"{self.source}: node {node.name or '(unnamed)'!r} (op type {node.op_type!r}): {why}"
        )

    def const(self, node: Any, index: int, kinds: str = "fiu") -> np.ndarray:
        """Input ``index`` of ``node`` as a constant array of one of the dtype ``kinds``
        (numpy's kind letters; booleans are never numbers here)."""
        if index >= len(node.input) or node.input[index] not in self.consts:
            raise self.refuse(
                node,
                f"input {index} must be a constant tensor (an "
                f"initializer); a weight computed by the graph is not read",
            )
        value = self.consts[node.input[index]]
        if value.dtype.kind not in kinds or value.dtype.kind == "b":
            raise self.refuse(
                node,
                f"input {index} ({node.input[index]!r}) has dtype "
                f"{value.dtype}; expected " + ("integers" if kinds == "iu" else "real numbers"),
            )
        return value

    def attrs(self, node: Any) -> dict[str, Any]:
        return {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}

    def open_layer(self, node: Any) -> dict[str, Any]:
        """The affine layer that an Add or Relu continues."""
        if not self.layers or "W" not in self.layers[-1] or self.layers[-1]["relu"]:
            raise self.refuse(
                node,
                "follows no affine layer (Gemm or MatMul); a plain MLP "
                "alternates affine layers and ReLUs",
            )
        return self.layers[-1]

    def add_affine(
        self, node: Any, W: np.ndarray, b: np.ndarray, shape: tuple | None = None
    ) -> None:
        if not self.flat:
            raise self.refuse(
                node,
                "its input has more than one axis per example; a "
                "Flatten (or a Reshape to (batch, features)) must come "
                "first",
            )
        if self.features is not None and W.shape[1] != self.features:
            raise self.refuse(
                node,
                f"a weight for {W.shape[1]} inputs on an input of "
                f"{self.features} features per example",
            )
        self.features = W.shape[0]
        if self.layers and "W" in self.layers[-1] and not self.layers[-1]["relu"]:
            raise self.refuse(
                node,
                "a second affine layer with no ReLU between it and the "
                "previous one; a ReLU network alternates them",
            )
        dtypes = {W.dtype, b.dtype}
        if self.norm:
            W, b = self.fold(W, b, shape)
            dtypes |= {c.dtype for _, c in self.norm}
            self.norm = []
        layer = {"W": W, "b": b, "relu": False, "dtypes": dtypes}
        if shape is not None:
            layer["shape"] = (W.shape[0],) + tuple(shape[1:])
        self.layers.append(layer)

    def row_layer(self, node: Any) -> None:
        """A layer ``x @ W`` (or Gemm): the examples are the rows of the activation."""
        shape = self.shapes.get(self.current)
        if self.columns and (shape is None or len(shape) != 1):
            raise self.refuse(
                node,
                "x @ W on a column after layers read as W @ x; one graph reads its "
                "examples either as rows (x @ W) or as one vector or column (W @ x)",
            )
        if shape is None or len(shape) != 1:
            self.rows = True

    def weight_first(self, node: Any) -> None:
        """``MatMul(W, x)``: the layer ``W x`` on a 1-D activation ``[n]`` or a column
        ``[n, 1]`` (the layout of VNN-COMP's ACAS Xu graphs)."""
        W = self.const(node, 0)
        if W.ndim != 2:
            raise self.refuse(
                node, f"a weight of shape {W.shape}; only W @ x with a 2D W (out, in) is read"
            )
        shape = self.shapes.get(self.current)
        vector = shape is not None and len(shape) == 1
        column = shape is not None and len(shape) == 2 and shape[1] == 1 and not self.rows
        if not (vector or column):
            shown = "unknown" if shape is None else [d if d else "?" for d in shape]
            raise self.refuse(
                node,
                f"MatMul(W, x) with the constant weight first is read only on a 1-D "
                f"activation [n] or a column [n, 1] (the layer W x); this activation's "
                f"shape is {shown}",
            )
        if shape[0] is not None and shape[0] != W.shape[1]:
            raise self.refuse(
                node, f"a weight of shape {W.shape} on an activation of shape {shape}"
            )
        if column:
            self.columns = True
        if not self.layers:
            self.features = W.shape[1]
            self.notes.append(
                "MatMul(W, x) with the weight first read as the layer W x "
                f"(on a {'1-D input' if vector else 'column input [n, 1]'})"
            )
        self.add_affine(node, W, np.zeros(W.shape[0]), shape=(W.shape[1],) + tuple(shape[1:]))

    def keeps(self, node: Any, c: np.ndarray, shape: tuple, what: str) -> np.ndarray:
        """``c`` as one value per coordinate of a vector ``(n,)`` or column ``(n, 1)``
        activation: it must broadcast to that shape without changing it."""
        try:
            good = c.ndim <= len(shape) and np.broadcast_shapes(c.shape, shape) == shape
        except ValueError:
            good = False
        if not good:
            raise self.refuse(
                node,
                f"{what} of shape {c.shape} on an activation of shape {list(shape)}; "
                f"it must be a scalar or one value per coordinate of that shape",
            )
        return np.broadcast_to(c, shape).reshape(shape[0]).astype(np.float64)

    def normalization(self, node: Any, op: str) -> None:
        """``Sub(x, mean)``, ``Div(x, std)``, ``Mul(x, scale)`` in front of the first
        affine layer, recorded and folded into it by :meth:`fold`."""
        if self.layers:
            raise self.refuse(
                node,
                f"{op} is read only as input normalization in front of the first affine "
                f"layer ((x - mean) / std, x * scale, by constants)",
            )
        first = node.input[0] == self.current
        if op in ("Sub", "Div") and not first:
            raise self.refuse(
                node,
                f"{op}(c, x) with the input second; only "
                + ("x - mean" if op == "Sub" else "x / std")
                + " (the constant second) is read as input normalization",
            )
        c = self.const(node, 1 if first else 0)
        if not np.all(np.isfinite(c)):
            raise self.refuse(node, f"a normalization constant holding NaN or inf: {c}")
        if op == "Div" and np.any(c == 0):
            raise self.refuse(node, f"a division by a constant with a zero entry: {c}")
        self.norm.append((node, c))

    def fold(self, W: np.ndarray, b: np.ndarray, shape: tuple | None) -> tuple:
        """The first layer composed with the input normalization before it, in float64:
        with x' = (x - mean) / std, ``W x' + b = (W / std) x + (b - (W / std) mean)``."""
        n = W.shape[1]
        W, b = W.astype(np.float64), b.astype(np.float64)
        steps = []
        for node, c in self.norm:
            if shape is not None:
                v = self.keeps(node, c, shape, "a normalization constant")
            elif c.ndim > 2 and c.shape == (1, *(self.example_shape or ())):
                # a constant of the input's own shape (batch 1) in front of Flatten, as
                # VNN-COMP's ACAS Xu graphs (1, 1, 1, 5): one value per input feature, in
                # the order Flatten lays them out
                v = c.reshape(-1).astype(np.float64)
            else:
                v = self.bias(node, c, n)
            steps.append((node, v))
        for node, v in reversed(steps):
            if node.op_type == "Div":
                W = W / v
            elif node.op_type == "Mul":
                W = W * v
            else:
                b = b - W @ v
        named = ", ".join(f"{n.op_type} {n.name or '(unnamed)'!r}" for n, _ in steps)
        self.notes.append(
            f"input normalization folded exactly into the first affine layer ({named}: "
            f"W' = W / std, b' = b - W (mean / std))"
        )
        return W, b

    def step(self, node: Any) -> None:
        """Read one node of the data path."""
        op, a = node.op_type, self.attrs(node)
        if op in ("Identity", "Reshape", "Flatten"):
            if op == "Flatten" and a.get("axis", 1) != 1:
                raise self.refuse(
                    node,
                    f"Flatten with axis {a['axis']} (only axis 1, which "
                    f"keeps the batch axis, is read)",
                )
            if op == "Reshape":
                shape = [int(v) for v in self.const(node, 1, kinds="iu").ravel()]
                keeps = (
                    len(shape) == 2
                    and shape[0] in (-1, 0)
                    and (shape[1] == -1 or self.features is None or shape[1] == self.features)
                )
                if not keeps:
                    raise self.refuse(
                        node,
                        f"Reshape to {shape} of an input with "
                        f"{self.features or 'unknown'} features per "
                        f"example; only the reshape of each example to "
                        f"one row, (batch, features) as in [-1, n], is "
                        f"read",
                    )
            if op in ("Reshape", "Flatten"):
                if self.columns:
                    raise self.refuse(
                        node,
                        f"{op} of a column read as W @ x; only Relu, Add of a bias and "
                        f"MatMul(W, x) follow a layer W @ x",
                    )
                self.flat = True
        elif op == "Gemm":
            self.row_layer(node)
            if a.get("transA", 0):
                raise self.refuse(node, "transA=1 (the batch must be the first axis)")
            B = self.const(node, 1)
            if B.ndim != 2:
                raise self.refuse(node, f"a weight of shape {B.shape}; Gemm's B is 2D")
            W = float(a.get("alpha", 1.0)) * (B if a.get("transB", 0) else B.T)
            b = np.zeros(W.shape[0])
            if len(node.input) > 2 and node.input[2]:
                b = self.bias(node, float(a.get("beta", 1.0)) * self.const(node, 2), W.shape[0])
            self.add_affine(node, W, b)
        elif op == "MatMul" and node.input[0] != self.current:
            self.weight_first(node)
        elif op == "MatMul":
            B = self.const(node, 1)
            if B.ndim != 2:
                raise self.refuse(
                    node, f"a weight of shape {B.shape}; only x @ W with a 2D W is read"
                )
            self.row_layer(node)
            self.add_affine(node, B.T, np.zeros(B.shape[1]))
        elif op == "Add":
            layer = self.open_layer(node)
            c = self.const(node, 1 if node.input[0] == self.current else 0)
            if "shape" in layer:  # after W @ x: the bias keeps the vector or column shape
                layer["b"] = layer["b"] + self.keeps(node, c, layer["shape"], "a bias")
            else:
                layer["b"] = layer["b"] + self.bias(node, c, layer["W"].shape[0])
            layer["dtypes"].add(c.dtype)
        elif op in _NORMALIZATION:
            self.normalization(node, op)
        elif op == "Relu":
            self.open_layer(node)["relu"] = True
        elif op == "Conv":
            self.add_conv(node, a)
        else:
            raise self.refuse(
                node,
                f"an operator neuromanifold does not read; readable: "
                f"{', '.join(READABLE_OPS)} (weights from initializers)",
            )

    def bias(self, node: Any, c: np.ndarray, width: int) -> np.ndarray:
        try:
            return np.broadcast_to(c, (1, width)).reshape(width).astype(np.float64)
        except ValueError:
            raise self.refuse(
                node, f"a bias of shape {c.shape} for a layer of {width} neurons"
            ) from None

    def add_conv(self, node: Any, a: dict[str, Any]) -> None:
        if self.norm:
            first = self.norm[0][0]
            raise self.refuse(
                first,
                "input normalization in front of a Conv; it is folded only into a "
                "first affine layer (Gemm or MatMul)",
            )
        w = self.const(node, 1)
        if w.ndim not in (3, 4):
            raise self.refuse(
                node,
                f"a weight of shape {w.shape}; a Conv weight has shape "
                f"(out, in, k) or (out, in, kh, kw) (1D or 2D convolution)",
            )
        k = w.ndim - 2
        if len(node.input) > 2 and node.input[2] and np.any(self.const(node, 2) != 0):
            raise self.refuse(node, "a nonzero bias; linear convolutional networks have none")
        if (
            any(p != 0 for p in a.get("pads", [0] * 2 * k))
            or any(d != 1 for d in a.get("dilations", [1] * k))
            or a.get("group", 1) != 1
            or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET", "VALID")
        ):
            raise self.refuse(
                node,
                "padding, dilation or groups; only valid correlation "
                "(no padding, dilation 1, one group) is modelled",
            )
        self.layers.append({"w": w, "stride": tuple(int(s) for s in a.get("strides", [1] * k))})


def read_onnx(path: Path, *, strides: Any = None) -> Model:
    """The network an ONNX file holds: Gemm/MatMul(+Add) layers with Relu between them
    (a ReLU network; the activations are read, not assumed), or bias-free Conv layers
    (a linear convolutional network, strides from the nodes)."""
    onnx = _onnx(path)
    source = str(path)
    try:
        proto = onnx.load(source, load_external_data=False)
    except Exception as exc:  # protobuf and onnx raise several types; none may escape
        raise ModelFileError(
            f"{source}: not a valid ONNX file, truncated or corrupted ({type(exc).__name__}: {exc})"
        ) from None
    if not proto.graph.node:  # protobuf parses an empty (or unrelated) file as empty
        raise ModelFileError(
            f"{source}: holds no ONNX graph (no nodes): an empty file, or not an ONNX model"
        )
    _refuse_custom_domains(proto, source)
    graph = _Graph(onnx, proto.graph, source)  # the constants, their sizes checked first
    graph.shapes = _shapes(_check_graph(onnx, proto, source))
    inputs = [i.name for i in proto.graph.input if i.name not in graph.consts]
    if len(inputs) != 1 or len(proto.graph.output) != 1:
        raise ModelFileError(
            f"{source}: a network graph has one data input and one output; "
            f"this one has {len(inputs)} input(s) and "
            f"{len(proto.graph.output)} output(s)"
        )
    graph.current = inputs[0]
    declared = next(i for i in proto.graph.input if i.name == inputs[0])
    dims = [
        d.dim_value if d.HasField("dim_value") else None
        for d in declared.type.tensor_type.shape.dim
    ]
    if any(d == 0 for d in dims):
        raise ModelFileError(
            f"{source}: the input {inputs[0]!r} declares shape "
            f"{[d if d is not None else '?' for d in dims]} with a zero-length "
            f"axis; every layer has at least one input"
        )
    graph.flat = len(dims) <= 2
    rest = dims[1:]
    graph.features = int(np.prod(rest)) if rest and all(d for d in rest) else None
    graph.example_shape = tuple(rest) if rest and all(d for d in rest) else None
    if len(dims) == 1 and dims[0]:
        graph.features = dims[0]
    if is_conv_relu_graph(proto):
        return read_conv_graph(graph, proto, source, graph.example_shape)
    graph.walk(proto, graph.step)
    if graph.norm:
        node = graph.norm[0][0]
        raise graph.refuse(node, "input normalization followed by no affine layer")
    if graph.current != proto.graph.output[0].name:
        raise ModelFileError(
            f"{source}: the graph's output {proto.graph.output[0].name!r} "
            f"is not the end of the chain of layers"
        )
    return _model(graph, source, strides, proto)


def _refuse_custom_domains(proto: Any, source: str) -> None:
    """An operator outside ONNX's standard domain has no schema to check and no meaning
    the reader knows: refused by name before anything else."""
    custom = next((n for n in proto.graph.node if n.domain not in ("", "ai.onnx")), None)
    if custom is not None:
        raise ModelFileError(
            f"{source}: node {custom.name or '(unnamed)'!r} (op type "
            f"{custom.op_type!r}): an operator of the custom domain "
            f"{custom.domain!r}"
        )


def _shapes(inferred: Any) -> dict[str, list[int | None] | None]:
    """The shape onnx's inference gives each value (``None`` for an unknown axis; the
    value is absent, or ``None``, when its rank is unknown)."""
    g = inferred.graph
    out: dict[str, list[int | None] | None] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        out[vi.name] = (
            [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
            if t.HasField("shape")
            else None
        )
    return out


def _check_graph(onnx: Any, proto: Any, source: str) -> Any:
    """ONNX's own rules before the reader's: every node of the standard domain against
    its operator's schema (number of inputs and outputs, attribute types), then the
    graph's types and shapes by strict shape inference (a bool or string weight, a
    Reshape shape that is not int64, a MatMul of mismatched sizes, a Conv on an input
    of too few axes). A graph that breaks them is refused with onnx's message, which
    names the node."""
    checker = onnx.checker
    ctx = checker.C.CheckerContext()
    ctx.ir_version = proto.ir_version
    ctx.opset_imports = {o.domain: o.version for o in proto.opset_import} or {"": _OPSET}
    scope = checker.C.LexicalScopeContext()
    for node in proto.graph.node:
        try:
            checker.check_node(node, ctx, scope)
        except Exception as exc:  # onnx's ValidationError (and others on odd protos)
            raise ModelFileError(
                f"{source}: node {node.name or '(unnamed)'!r} (op type "
                f"{node.op_type!r}) is not valid ONNX: {exc}"
            ) from None
    try:
        return onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    except Exception as exc:  # InferenceError, and others on malformed graphs
        raise ModelFileError(
            f"{source}: not a valid ONNX graph (onnx's type and shape "
            f"inference: {str(exc).strip()[:600]})"
        ) from None


def _model(graph: _Graph, source: str, strides: Any, proto: Any) -> Model:
    layers = graph.layers
    if not layers:
        raise ModelFileError(f"{source}: the graph holds no layer (Gemm, MatMul or Conv)")
    opset = max(
        (o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=None
    )
    note = (f"read the ONNX graph (opset {opset}) node by node",) + tuple(graph.notes)
    convs = [layer for layer in layers if "w" in layer]
    if convs:
        if len(convs) != len(layers):
            raise ModelFileError(
                f"{source}: mixes Conv with Gemm/MatMul layers; a linear "
                f"convolutional network has only bias-free Conv layers"
            )
        arrays = {f"{l}.weight": layer["w"] for l, layer in enumerate(layers)}
        given = [layer["stride"] for layer in layers] if strides is None else strides
        return model_from_arrays(arrays, source, strides=given, notes=note, weights_only=False)
    inner = [l for l, layer in enumerate(layers[:-1]) if not layer["relu"]]
    if inner or layers[-1]["relu"]:
        raise ModelFileError(
            f"{source}: "
            + (
                f"affine layer {inner[0]} has no ReLU after it"
                if inner
                else "a ReLU after the last affine layer: the output is clipped at "
                "0, which the ReLU networks here (linear output layer) are not"
            )
        )
    arrays = {}
    for l, layer in enumerate(layers):
        arrays[f"{2 * l}.weight"], arrays[f"{2 * l}.bias"] = layer["W"], layer["b"]
    model = model_from_arrays(arrays, source, notes=note, weights_only=False)
    # a folded layer is computed in float64; the dtype reported is the one stored
    dtypes = {str(t) for layer in layers for t in layer["dtypes"]}
    stored = "float64" if dtypes <= {"float64"} else "/".join(sorted(dtypes - {"float64"}))
    return dataclasses.replace(model, converted_from=stored)


def write_onnx(model: Model, path: Path) -> None:
    """An ONNX graph of ``model`` (Gemm and Relu nodes; bias-free Conv nodes; or a
    convolutional ReLU network's nodes), with a dynamic batch axis, that
    :func:`read_onnx` and ONNX runtimes read back."""
    onnx = _onnx(path)
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    nodes, inits, current = [], [], "input"
    if model.kind == "relu_conv":
        nodes, inits, current = conv_graph_nodes(onnx, model.params, current)
        shape_in = ["batch", *model.params.input_shape]
        shape_out = ["batch", model.params.output_dim]
    elif model.kind == "relu":
        for l, (W, b) in enumerate(model.params):
            inits += [
                numpy_helper.from_array(W, f"{l}.weight"),
                numpy_helper.from_array(b, f"{l}.bias"),
            ]
            out = f"affine_{l}"
            nodes.append(
                helper.make_node(
                    "Gemm", [current, f"{l}.weight", f"{l}.bias"], [out], name=f"gemm_{l}", transB=1
                )
            )
            current = out
            if l < len(model.params) - 1:
                nodes.append(helper.make_node("Relu", [current], [f"relu_{l}"], name=f"relu_{l}"))
                current = f"relu_{l}"
        shape_in = ["batch", model.architecture[0]]
        shape_out = ["batch", model.architecture[-1]]
    else:
        for l, (w, s) in enumerate(zip(model.params, model.strides)):
            inits.append(numpy_helper.from_array(w.reshape((1, 1) + w.shape), f"{l}.weight"))
            out = f"conv_{l}"
            nodes.append(
                helper.make_node("Conv", [current, f"{l}.weight"], [out], name=out, strides=list(s))
            )
            current = out
        shape_in = ["batch", 1] + ["in_" + str(i) for i in range(model.params[0].ndim)]
        shape_out = ["batch", 1] + ["out_" + str(i) for i in range(model.params[0].ndim)]
    dtype = onnx.TensorProto.DOUBLE
    graph = helper.make_graph(
        nodes,
        "neuromanifold",
        [helper.make_tensor_value_info("input", dtype, shape_in)],
        [helper.make_tensor_value_info(current, dtype, shape_out)],
        initializer=inits,
    )
    proto = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="neuromanifold"
    )
    onnx.save(proto, str(path))
