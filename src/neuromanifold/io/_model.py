"""A network read from a file or a live object, and the inference of its architecture from
named weight arrays.

Two kinds of model exist in neuromanifold: a fully connected ReLU network (a list of
``(W, b)``, docs/concepts_relu.md §1) and a linear convolutional network (one
single-channel filter per layer and the strides, docs/concepts_linear.md §1). Weight files
do not say which activation sits between layers, so a file of 2D weights is read as a
ReLU network (the only fully connected model the library analyses) and a file of
single-channel convolution kernels without bias as a linear convolutional network.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from .._errors import ModelFileError, short_repr
from .._results import Result
from ..linear import LinearConvNet
from ..relu import ReLUNet

__all__ = ["Model", "model_from_arrays", "STRIDES_KEY", "ORDER_KEY"]

#: Name of the array that carries the strides of a linear convolutional network in the
#: files :func:`neuromanifold.io.save` writes (npz; in safetensors it is metadata).
STRIDES_KEY = "neuromanifold.strides"


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Model(Result):
    """A network read by :func:`neuromanifold.io.load`.

    Attributes:
        kind: ``"relu"`` (fully connected ReLU network), ``"relu_conv"`` (convolutional
            ReLU network) or ``"linear_conv"`` (linear convolutional network).
        params: for ``"relu"`` a list of ``(W, b)`` float64 pairs, ``W`` of shape
            ``(n_l, n_{l-1})``; for ``"relu_conv"`` the
            :class:`~neuromanifold.relu.ReLUConvNet`; for ``"linear_conv"`` a list of
            float64 filters (layer 1 acts first).
        architecture: widths ``(n_0, ..., n_L)`` for ``"relu"``; the input shape and the
            layers' descriptions for ``"relu_conv"``; filter shapes for ``"linear_conv"``.
        strides: the strides of a linear convolutional network (one per layer), else None.
        source: where the model came from (a path or a description of the object).
        converted_from: the dtype of the weights as stored (e.g. ``"float32"``); every
            array is converted to float64.
        notes: what the reading assumed or chose, in words: the checkpoint key unwrapped,
            the prefix stripped, how the layers were ordered, and (for weights-only files)
            that ReLU is assumed between the layers.
    """

    kind: str
    params: list[np.ndarray] | list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(repr=False)
    architecture: tuple
    strides: tuple | None
    source: str
    converted_from: str
    notes: tuple = ()

    def network(self) -> Any:
        """The architecture object: a :class:`neuromanifold.ReLUNet` or a
        :class:`neuromanifold.LinearConvNet`."""
        if self.kind == "relu":
            return ReLUNet(self.architecture)
        if self.kind == "relu_conv":
            return self.params
        return LinearConvNet(list(self.architecture), strides=list(self.strides))

    def describe(self) -> str:
        """One line for people: kind, architecture, dtype conversion and source."""
        if self.kind == "relu":
            arch = "ReLU network " + "-".join(str(n) for n in self.architecture)
        elif self.kind == "relu_conv":
            arch = self.params.describe()
        else:
            shapes = ",".join("x".join(str(k) for k in s) for s in self.architecture)
            strides = ",".join("x".join(str(k) for k in s) for s in self.strides)
            arch = f"linear convolutional network, filters {shapes}, strides {strides}"
        note = (
            ""
            if self.converted_from == "float64"
            else f" ({self.converted_from} weights converted to float64)"
        )
        return f"{arch}{note} from {self.source}"


def stored_strides_list(value: Any, source: str) -> list[tuple[int, ...]]:
    """Strides as a file stores them (a list of positive ints, or of lists of positive ints
    for D >= 2), checked entry by entry: a float, bool, string, NaN or a nested scalar is
    refused, never rounded to an int."""

    def ints(row: Any) -> tuple[int, ...] | None:
        items = row.tolist() if isinstance(row, np.ndarray) else row
        items = items if isinstance(items, (list, tuple)) else [items]
        good = (
            all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 1
                for v in items
            )
            and items
        )
        return tuple(int(v) for v in items) if good else None

    rows = value.tolist() if isinstance(value, np.ndarray) else value
    out = [ints(r) for r in rows] if isinstance(rows, (list, tuple)) and rows else [None]
    if any(r is None for r in out):
        raise ModelFileError(
            f"{source}: the stored strides must be a list of positive "
            f"integers (one per layer, or one tuple per layer for D >= 2); "
            f"got {short_repr(value)}"
        )
    return out


#: name prefixes stripped when every array carries them (DataParallel, Lightning)
WRAPPER_PREFIXES = ("module.", "model.")

#: the safetensors metadata key under which :func:`neuromanifold.io.save` stores the
#: forward order of the layers (the format keeps its names sorted, not in their order)
ORDER_KEY = "neuromanifold.order"


def _shape_chain(shapes: list[tuple]) -> bool:
    """Whether fully connected weight shapes chain (each one's columns are the previous
    one's rows); convolution kernels always do (their sizes say nothing of the order)."""
    if any(len(s) != 2 for s in shapes):
        return True
    return all(a[0] == b[1] for a, b in zip(shapes, shapes[1:]))


def _numeric_skeleton(name: str) -> str:
    return re.sub(r"\d+", "#", name)


def _chains_by_shape(shapes: dict[str, tuple], limit: int = 2) -> list[list[str]]:
    """Up to ``limit`` orders of the layers in which their shapes chain (a search over
    permutations pruned by the shapes; at most 12 layers are searched)."""
    names, found = list(shapes), []

    def extend(path: list[str], rest: list[str]) -> None:
        if len(found) >= limit:
            return
        if not rest:
            found.append(path)
            return
        for p in rest:
            if not path or shapes[path[-1]][0] == shapes[p][1]:
                extend(path + [p], [r for r in rest if r != p])

    if len(names) <= 12 and all(len(s) == 2 for s in shapes.values()):
        extend([], names)
    return found


_SAVE_HINT = (
    "save the layers in forward order in a format that keeps it (.npz, a "
    "state_dict, or neuromanifold.io.save, which also stores the order in "
    ".safetensors), or name them 0, 1, 2, ... in forward order"
)


def _layer_order(layers: dict, source: str, ordered: bool) -> tuple[list[str], str | None]:
    """The layer names in forward order and how the order was found (``None`` when the
    stored order is taken as it is); see :func:`model_from_arrays`.

    Never a sort that happens to chain: square layers chain in any order, so a sort of
    ``0, 10, 2`` would be read as another network without a sign."""
    shapes = {p: tuple(np.shape(layers[p]["weight"])) for p in layers}
    given = list(layers)
    if ordered:
        if _shape_chain([shapes[p] for p in given]):
            return given, None
        raise ModelFileError(
            f"{source}: inconsistent layer shapes: the layers do not chain in the order the "
            f"file stores them, {short_repr(shapes)} (each weight's columns must equal the "
            f"previous layer's rows); a network is never reordered by guess: {_SAVE_HINT}"
        )
    if (
        len({_numeric_skeleton(p) for p in given}) == 1
        and len(given) > 1
        and all(re.search(r"\d", p) for p in given)
    ):
        natural = sorted(given, key=_natural_key)
        if len({tuple(_natural_key(p)) for p in given}) == len(given) and _shape_chain(
            [shapes[p] for p in natural]
        ):
            return natural, "layers ordered by the numbers in their names"
        raise ModelFileError(
            f"{source}: inconsistent layer shapes: in the order of the numbers in their "
            f"names the layers do not chain, {short_repr(shapes)} (each weight's columns "
            f"must equal the previous layer's rows)"
        )
    if len(given) == 1:
        return given, None
    found = _chains_by_shape(shapes)
    if len(found) == 1:
        return found[0], "layers ordered by the one chain their shapes allow"
    if not found and all(len(s) == 2 for s in shapes.values()) and len(given) <= 12:
        raise ModelFileError(
            f"{source}: inconsistent layer shapes: no order of the layers {short_repr(shapes)} "
            f"chains (each weight's columns must equal the previous layer's rows)"
        )
    why = (
        f"the shapes chain in more than one order (e.g. {found[0]} and {found[1]})"
        if found
        else "neither the names nor the shapes say it"
    )
    raise ModelFileError(
        f"{source}: the layer order is ambiguous: the format does not keep the order of "
        f"{short_repr(shapes)}, the names carry no layer numbers and {why}; {_SAVE_HINT}"
    )


def _refuse_wrapped_duplicates(arrays: dict, source: str) -> None:
    """Refuse two arrays that name one layer once a wrapper prefix is taken off one of
    them (``2.weight`` and ``model.2.weight``): which of them the network uses is not
    in the file."""
    for name in arrays:
        inner = name
        while inner.startswith(WRAPPER_PREFIXES):
            inner = inner.split(".", 1)[1]
            if inner in arrays:
                raise ModelFileError(
                    f"{source}: two arrays name {inner!r} (one of them is {name!r}); which "
                    f"one is the layer is ambiguous: save one copy of the weights"
                )


def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _float64(array: Any, name: str, source: str) -> np.ndarray:
    arr = np.asarray(array)
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise ModelFileError(
            f"{source}: array {name!r} must hold real numbers; got dtype {arr.dtype}"
        )
    if 0 in arr.shape:
        raise ModelFileError(
            f"{source}: array {name!r} has a zero-length axis (shape "
            f"{arr.shape}); every layer has at least one neuron and input"
        )
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ModelFileError(f"{source}: array {name!r} holds NaN or inf")
    return arr


def model_from_arrays(
    arrays: dict[str, Any],
    source: str,
    strides: Any = None,
    *,
    notes: tuple = (),
    weights_only: bool = True,
    ordered: bool = True,
) -> Model:
    """Infer the model from named weight arrays, as in a PyTorch ``state_dict``.

    Names are ``<layer>.weight`` and ``<layer>.bias`` (a ``module.`` or ``model.`` prefix
    on every name is stripped; two arrays that name one layer, such as ``2.weight`` and
    ``model.2.weight``, are refused). The layer order comes from the file, never from a
    sort that happens to chain (square layers chain in any order):

    * where the source keeps the order of its arrays (``ordered``: ``.npz``, a
      ``state_dict``, a dict, ONNX), the layers are taken in that order, and a file
      whose layers do not chain in it is refused, not reordered;
    * where it does not (``.safetensors`` sorts its names), layers whose names differ
      only in numbers are taken in the order of those numbers (``0, 2, 10``, not
      ``0, 10, 2``); other names (``input``, ``hidden``, ``output``) in the one order
      their shapes allow, and a file whose shapes allow several is refused as ambiguous.
    2D weights make a ReLU network (a missing bias is zero); weights of shape
    ``(1, 1, k...)`` (single-channel ``Conv1d``/``Conv2d`` kernels) make a linear
    convolutional network, which has no bias.

    Args:
        arrays: mapping from names to arrays.
        source: the file or object they came from, for messages.
        strides: strides of a convolutional network (one per layer, ints or tuples);
            when None they are read from the ``neuromanifold.strides`` entry, and a
            convolutional model without either is refused, since weights alone do not say
            them.
        notes: what the reader already noted (e.g. the checkpoint key it unwrapped).
        weights_only: the arrays come from weights alone (a file, a state_dict), so that
            ReLU between the layers is an assumption, which the notes then say.
        ordered: the arrays come in the source's own layer order (see above).

    Returns:
        A :class:`Model`; a :class:`neuromanifold.ModelFileError` naming the source and
        the problem otherwise.

    >>> m = model_from_arrays({"0.weight": np.ones((3, 2), np.float32),
    ...                        "0.bias": np.zeros(3), "2.weight": np.ones((1, 3))}, "demo")
    >>> m.describe()
    'ReLU network 2-3-1 (float32 weights converted to float64) from demo'
    """
    # Whole: names grouped into layers, then one branch per weight shape: ReLU, conv, or refusal
    arrays = dict(arrays)
    stored_strides = arrays.pop(STRIDES_KEY, None)
    notes = list(notes)
    wrappers = [
        w for w in WRAPPER_PREFIXES if arrays and all(name.startswith(w) for name in arrays)
    ]
    if wrappers:  # DataParallel's "module.", a Lightning module's "model.": one prefix
        arrays = {name[len(wrappers[0]) :]: v for name, v in arrays.items()}
        notes.append(f"prefix {wrappers[0]!r} stripped from every name")
    _refuse_wrapped_duplicates(arrays, source)
    layers: dict[str, dict[str, Any]] = {}
    for name, value in arrays.items():
        prefix, _, leaf = name.rpartition(".")
        if leaf not in ("weight", "bias"):
            raise ModelFileError(
                f"{source}: entry {name!r} is neither a weight nor a bias; a model file "
                f"holds '<layer>.weight' and '<layer>.bias' arrays only"
            )
        layers.setdefault(prefix, {})[leaf] = value
    if not layers:
        raise ModelFileError(f"{source}: holds no weight arrays")
    missing = [p for p in layers if "weight" not in layers[p]]
    if missing:
        raise ModelFileError(f"{source}: layer(s) {missing} have a bias but no weight")
    order, how = _layer_order(layers, source, ordered)
    if how:
        notes.append(how)
    dtypes = {str(np.asarray(layers[p][k]).dtype) for p in order for k in layers[p]}
    converted = "float64" if dtypes <= {"float64"} else "/".join(sorted(dtypes - {"float64"}))
    weights = [_float64(layers[p]["weight"], f"{p}.weight", source) for p in order]
    ndims = {w.ndim for w in weights}
    if ndims == {2}:
        params = []
        for p, W in zip(order, weights):
            b = layers[p].get("bias")
            b = np.zeros(W.shape[0]) if b is None else _float64(b, f"{p}.bias", source)
            if b.shape != (W.shape[0],):
                raise ModelFileError(
                    f"{source}: {p}.bias must have shape ({W.shape[0]},) to "
                    f"match {p}.weight of shape {W.shape}; got {b.shape}"
                )
            if params and W.shape[1] != params[-1][0].shape[0]:
                raise ModelFileError(
                    f"{source}: inconsistent layer shapes: {p}.weight has {W.shape[1]} "
                    f"columns but the previous layer has {params[-1][0].shape[0]} outputs"
                )
            params.append((W, b))
        widths = (params[0][0].shape[1],) + tuple(W.shape[0] for W, _ in params)
        if weights_only:
            notes.append(
                "ReLU assumed between the layers (a weights-only file holds no "
                "activation; a tanh or LeakyReLU network would be read wrongly)"
            )
        return Model(
            kind="relu",
            params=params,
            architecture=widths,
            strides=None,
            source=source,
            converted_from=converted,
            notes=tuple(notes),
        )
    if ndims <= {3, 4} and len(ndims) == 1:
        filters = []
        for p, w in zip(order, weights):
            if w.shape[:2] != (1, 1):
                raise ModelFileError(
                    f"{source}: {p}.weight has shape {w.shape}; a linear convolutional "
                    f"network has one input and one output channel per layer, (1, 1, k...)"
                )
            b = layers[p].get("bias")
            if b is not None and np.any(_float64(b, f"{p}.bias", source) != 0):
                raise ModelFileError(
                    f"{source}: {p}.bias is nonzero; linear convolutional networks have no bias"
                )
            filters.append(w[0, 0])
        if strides is None and stored_strides is None:
            raise ModelFileError(
                f"{source}: holds convolution kernels but no strides; weights alone do not "
                f"say them: give them, one per layer (strides=[...] in Python, --strides "
                f"on the command line)"
            )
        if strides is None:
            strides = stored_strides_list(stored_strides, source)
        try:
            net = LinearConvNet([f.shape for f in filters], strides=list(strides))
        except Exception as exc:  # an ArchitectureError: say which file
            raise ModelFileError(f"{source}: {exc}") from exc
        kept = tuple(net.strides)
        if len(strides) == len(filters):  # keep the last stride too: nothing is lost
            last = strides[-1]
            kept += (tuple(int(v) for v in last) if np.ndim(last) else (int(last),) * net.ndim,)
        return Model(
            kind="linear_conv",
            params=filters,
            architecture=tuple(tuple(f.shape) for f in filters),
            strides=kept,
            source=source,
            converted_from=converted,
            notes=tuple(notes),
        )
    shapes = {p: tuple(np.shape(layers[p]["weight"])) for p in order}
    conv = any(len(s) in (3, 4) and s[:2] != (1, 1) for s in shapes.values())
    raise ModelFileError(
        f"{source}: cannot infer a model from weight shapes {short_repr(shapes)}: expected "
        f"all 2D (fully connected layers) or all (1, 1, k...) (single-channel convolutions)"
        + (
            "; these are a convolutional network's weights, which alone do not say its "
            "strides, padding, pooling or skips: export it to ONNX (torch.onnx.export, or "
            "neuromanifold.io.save(net, 'model.onnx') for a neuromanifold.relu.ReLUConvNet)"
            if conv
            else ""
        )
    )
