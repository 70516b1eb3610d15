"""Reading and writing models: ``.npz``, ``.safetensors``, PyTorch files and live objects.

Nothing a file holds is ever executed: ``.npz`` is read with ``allow_pickle=False``,
``.safetensors`` holds raw arrays by design, an ONNX graph is read as data (its nodes
are interpreted one by one, never run), and PyTorch files go through
``torch.load(..., weights_only=True)``, which refuses anything but tensors and plain
containers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import ModelFileError, NeuromanifoldError, short_repr
from .._validation import MAX_PARAMS
from ..relu import ReLUConvNet
from ..relu import forward as relu_forward
from ..relu._library import live_relu_params, tensor_to_numpy
from ._model import ORDER_KEY, STRIDES_KEY, Model, model_from_arrays, stored_strides_list
from ._onnx import read_onnx, write_onnx
from ._onnx_conv import ConvWalk, conv_model, read_conv_graph
from ._torch import check_input_shape, check_trace, dense_chain, fx_graph, refuse_hooks

__all__ = ["load", "save", "SUFFIXES"]

#: File suffixes :func:`load` reads (:func:`save` writes ``.npz``, ``.safetensors`` and
#: ``.onnx``).
SUFFIXES = (".npz", ".safetensors", ".onnx", ".pt", ".pth", ".bin")
_TORCH_HINT = "reading PyTorch objects needs torch: pip install 'neuromanifold[torch]'"


def _to_numpy(value: Any) -> Any:
    """A tensor (torch, detached) or array-like as a numpy array, without importing torch."""
    try:
        return tensor_to_numpy(value)
    except (ValueError, TypeError) as exc:  # a ragged nest, ...
        raise ModelFileError(
            f"cannot read {short_repr(value)} as an array of numbers: {exc}"
        ) from None


def _check_npz_headers(path: Path) -> None:
    """Read every member's ``.npy`` header before any array: a header that declares more
    than :data:`~neuromanifold._validation.MAX_PARAMS` entries, or more bytes than the
    member holds, is refused before numpy allocates for it."""
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, _, dtype = read(fh)
                data_bytes = info.file_size - fh.tell()
            count = int(np.prod(shape, dtype=object))
            too_big = not dtype.hasobject and count * dtype.itemsize > data_bytes
            if count > MAX_PARAMS or too_big:  # (object arrays are refused by np.load)
                raise ModelFileError(
                    f"{path}: array {info.filename[:-4]!r} declares shape {shape} "
                    f"({count:,} entries), more than "
                    + (
                        f"the limit of {MAX_PARAMS:,}"
                        if count > MAX_PARAMS
                        else f"the {data_bytes:,} bytes of data the file holds for it"
                    )
                )


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        _check_npz_headers(path)
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise ModelFileError(
                f"{path}: holds Python objects that would have to be "
                f"unpickled; refused (only numeric arrays are read)"
            ) from None
        raise ModelFileError(f"{path}: not a valid .npz file ({exc})") from None
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, zlib.error) as exc:
        raise ModelFileError(
            f"{path}: not a valid .npz file, truncated or corrupted ({type(exc).__name__}: {exc})"
        ) from None


def _read_safetensors(path: Path) -> tuple[dict[str, Any], bool]:
    """The file's arrays, and whether they come in the network's order: the format keeps
    its names sorted, so only the order :func:`save` stores (metadata
    ``neuromanifold.order``) is one."""
    from safetensors import SafetensorError, safe_open  # start-up: a slow import

    try:
        with safe_open(str(path), framework="np") as f:
            arrays = {k: f.get_tensor(k) for k in f.keys()}
            meta = f.metadata() or {}
    except (SafetensorError, OSError, ValueError, TypeError) as exc:
        raise ModelFileError(
            f"{path}: not a valid .safetensors file, truncated or corrupted ({exc})"
        ) from None
    except AttributeError as exc:  # a dtype numpy has no type for (F8_E4M3, F8_E5M2)
        raise ModelFileError(
            f"{path}: holds a dtype numpy cannot represent ({exc}); save "
            f"the weights as float32 or float64"
        ) from None
    if STRIDES_KEY in meta:
        try:
            raw = json.loads(meta[STRIDES_KEY])
        except ValueError:
            raw = meta[STRIDES_KEY]
        arrays[STRIDES_KEY] = stored_strides_list(raw, str(path))
    order = _stored_order(meta.get(ORDER_KEY), arrays, path)
    if order is None:
        return arrays, False
    return {k: arrays[k] for k in order + [k for k in arrays if k not in order]}, True


def _stored_order(raw: str | None, arrays: dict, path: Path) -> list[str] | None:
    """The array names in the order :func:`save` stored them, or None when the file
    stores none; an order that does not name the file's arrays is refused."""
    if raw is None:
        return None
    try:
        order = json.loads(raw)
    except ValueError:
        order = None
    names = [k for k in arrays if k != STRIDES_KEY]
    if not isinstance(order, list) or sorted(map(str, order)) != sorted(names):
        raise ModelFileError(
            f"{path}: the stored layer order {raw[:200]!r} does not name "
            f"the file's arrays {sorted(names)[:20]}"
        )
    return order


#: keys under which training checkpoints keep the model's state_dict, tried in order
CHECKPOINT_KEYS = ("model_state_dict", "state_dict", "model")


def _unwrap_checkpoint(obj: Any) -> tuple[Any, tuple[str, ...]]:
    """A training checkpoint's state_dict (``{"model_state_dict": ...,
    "optimizer_state_dict": ...}``, ``{"state_dict": ...}``, ``{"model": ...}``) and a
    note saying which key was read; anything else as it is."""
    if isinstance(obj, dict) and not all(hasattr(v, "shape") for v in obj.values()):
        for key in CHECKPOINT_KEYS:
            if isinstance(obj.get(key), dict):
                others = sorted(str(k) for k in obj if k != key)
                return obj[key], (
                    f"read the checkpoint's {key!r}"
                    + (f" (not {', '.join(others)})" if others else ""),
                )
    return obj, ()


def _read_torch(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    try:
        import torch  # optional extra: only torch models need it
    except ImportError:
        raise ModelFileError(f"{path}: {_TORCH_HINT}") from None
    try:
        # torch warns about pickle protocols while it reads; a file it cannot read gets
        # our refusal alone, a file it reads gets its warnings after all
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    except Exception as exc:  # torch raises many types; none of them may escape
        if not zipfile.is_zipfile(path) and not _legacy_torch_magic(path):
            raise ModelFileError(
                f"{path}: not a PyTorch file (neither the zip archive "
                f"torch.save writes nor its legacy format)"
            ) from None
        if "weights_only" in str(exc) or "Unpickl" in type(exc).__name__:
            raise ModelFileError(
                f"{path}: holds Python objects beyond tensors, which would have to be "
                f"unpickled; refused (save the model's state_dict instead)"
            ) from None
        raise ModelFileError(
            f"{path}: not a readable PyTorch file, truncated or corrupted "
            f"({type(exc).__name__}: {exc})"
        ) from None
    obj, notes = _unwrap_checkpoint(obj)
    if not isinstance(obj, dict) or not all(hasattr(v, "detach") for v in obj.values()):
        raise ModelFileError(
            f"{path}: expected a state_dict (a mapping of names to tensors, "
            f"or a checkpoint holding one under {', '.join(CHECKPOINT_KEYS)}); "
            f"got {type(obj).__name__}"
        )
    return {k: _to_numpy(v) for k, v in obj.items()}, notes


def _legacy_torch_magic(path: Path) -> bool:
    """Whether the file starts like a legacy (pre-1.6, pickle-based) torch.save file."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x80\x02"


def _from_torch_module(obj: Any, strides: Any, input_shape: Any) -> Model:
    import torch.nn as tnn  # optional extra: only torch models need it

    source = f"torch {type(obj).__name__}"
    if not isinstance(obj, tnn.Module):
        raise ModelFileError(f"{source}: not a torch.nn.Module")
    refuse_hooks(obj, source)
    if isinstance(obj, tnn.Sequential) and input_shape is None:
        mods = [m for m in obj if not isinstance(m, (tnn.Identity, tnn.Flatten, tnn.Dropout))]
        convs = [m for m in mods if isinstance(m, (tnn.Conv1d, tnn.Conv2d))]
        if convs and len(convs) == len(mods) and all(m.bias is None for m in convs):
            return _linear_conv_module(convs, source, strides)
        if not convs:  # Linear and ReLU: the fully connected network
            return _relu_model(live_relu_params(obj, ModelFileError), source)
    return _traced_module(obj, source, input_shape)


def _linear_conv_module(convs: list, source: str, strides: Any) -> Model:
    """A Sequential of bias-free convolutions alone: a linear convolutional network."""
    arrays: dict[str, Any] = {}
    for i, m in enumerate(convs):
        if (
            any(p != 0 for p in np.atleast_1d(m.padding))
            or any(d != 1 for d in np.atleast_1d(m.dilation))
            or m.groups != 1
        ):
            raise ModelFileError(
                f"{source}: layer {i} uses padding, dilation or groups; "
                f"only valid correlation (padding 0, dilation 1) is modelled"
            )
        arrays[f"{i}.weight"] = _to_numpy(m.weight)
    given = [tuple(int(s) for s in m.stride) for m in convs] if strides is None else strides
    return model_from_arrays(arrays, source, strides=given, weights_only=False)


def _traced_module(obj: Any, source: str, input_shape: Any) -> Model:
    """A module read from its forward pass (torch.fx): a convolutional ReLU network, or a
    fully connected one when its layers are Linear and ReLU alone."""
    graph, proto = fx_graph(obj, source)
    first = next((n for n in graph.nodes_ if graph.current in n.input), None)
    if input_shape is None:
        if first is None or first.op_type != "Gemm":
            raise ModelFileError(
                f"{source}: its first layer does not fix the input's shape: pass "
                f"input_shape=(channels, length) or (channels, height, width)"
            )
        input_shape = (graph.const(first, 1).shape[1],)
    shape = check_input_shape(input_shape, source)
    note = "read from its forward pass (torch.fx)"
    if len(shape) == 1:
        walk = ConvWalk(graph, shape)
        layers = walk.run(proto)
        params = dense_chain(layers)
        if params is None:
            raise ModelFileError(
                f"{source}: a fully connected network is read as Linear layers with a ReLU "
                f"between each two (no residual sums or pooling); got "
                f"{[type(layer).__name__ for layer in layers]}"
            )
        model = _relu_model(params, source)
        notes = (note,) + tuple(walk.notes)
        model = dataclasses.replace(model, notes=tuple(model.notes) + notes)
        check_trace(obj, lambda X: relu_forward(params, X), shape, _last_op(proto), source)
        return model
    model = read_conv_graph(graph, proto, source, shape)
    check_trace(obj, model.network().forward, shape, _last_op(proto), source)
    return dataclasses.replace(model, notes=(note,) + tuple(model.notes[1:]))


def _last_op(proto: Any) -> str | None:
    """The op of the node computing the graph's output (a Softmax the reading leaves out)."""
    out = proto.graph.output[0].name
    return next((n.op_type for n in proto.node if n.output[0] == out), None)


def _relu_model(params: list, source: str) -> Model:
    """The Model of a ``(W, b)`` list whose activation is known to be ReLU."""
    arrays = {}
    for l, (W, b) in enumerate(params):
        arrays[f"{2 * l}.weight"], arrays[f"{2 * l}.bias"] = _to_numpy(W), _to_numpy(b)
    return model_from_arrays(arrays, source, weights_only=False)


def load(source: Any, *, strides: Any = None, input_shape: Any = None) -> Model:
    """Read a network from a file or a live object; nothing a file holds is executed (a
    live ``torch.nn.Module`` read from its forward pass is run at 4 random inputs, to
    check that the trace computes what the module computes).

    Args:
        source: a path to ``.npz`` (read with ``allow_pickle=False``), ``.safetensors``,
            an ONNX graph (``.onnx``: Gemm, MatMul + Add, Relu, Flatten, Identity and
            Reshape of the batch axis, or bias-free Conv; weights from initializers;
            ``MatMul(W, x)`` with the weight first on a 1-D input or a column, and an
            input normalization ``Sub``/``Div``/``Mul`` by constants folded into the
            first layer, as VNN-COMP graphs have them; any other operator is refused by
            name; needs the ``onnx`` extra),
            or a PyTorch ``state_dict`` file (``.pt``/``.pth``/``.bin``, read with
            ``torch.load(..., weights_only=True)``); or a ``torch.nn.Sequential`` of
            ``Linear``/``ReLU`` (a ReLU network) or of bias-free single-channel
            ``Conv1d``/``Conv2d`` (a linear convolutional network, strides taken from the
            modules); any other live ``torch.nn.Module`` (a custom ``forward`` included)
            read from its forward pass as ``torch.fx`` traces it (and checked against the
            module itself at random inputs; forward hooks refused), in inference mode:
            ``Conv1d``/``Conv2d``, ``BatchNorm1d``/``2d`` (folded into the layer before
            it), ``ReLU``, max and average pooling, ``AdaptiveAvgPool`` to 1, ``Flatten``,
            ``Linear``, sums of two branches (residual blocks) and a final
            ``Softmax``/``LogSoftmax`` (left out: the analyses are on the logits), every
            other layer refused by name; a fitted scikit-learn
            ``MLPRegressor``/``MLPClassifier`` with ReLU (the network up to its output
            logits); a dict of named arrays (a state_dict);
            a list of ``(W, b)`` pairs; or a :class:`Model`.
        strides: strides of a convolutional network when the source does not carry them
            (one per layer, or one per layer but the last).
        input_shape: the shape of one input, past the batch axis, for a live
            ``torch.nn.Module`` whose first layer does not fix it (a convolution:
            ``(channels, length)`` or ``(channels, height, width)``).

    Returns:
        A :class:`Model`: kind, float64 parameters, inferred architecture, source. A
        file that is missing, malformed, truncated, has inconsistent layer shapes or asks
        to unpickle raises :class:`neuromanifold.ModelFileError` naming the file.

    >>> import tempfile, os
    >>> params = [(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    >>> path = os.path.join(tempfile.mkdtemp(), "net.npz")
    >>> save(params, path)
    >>> load(path).architecture
    (2, 2, 1)
    """
    torch_nn = sys.modules.get("torch.nn")
    live_torch = torch_nn is not None and isinstance(source, torch_nn.Module)
    if input_shape is not None and not live_torch:
        raise ModelFileError(
            f"input_shape is for a live torch.nn.Module (whose convolutions do not fix "
            f"it); got input_shape={short_repr(input_shape)} for a {type(source).__name__}"
        )
    model = (
        _from_torch_module(source, strides, input_shape) if live_torch else _read(source, strides)
    )
    if strides is not None and model.kind != "linear_conv":
        raise ModelFileError(
            f"{model.source}: strides are for a linear convolutional network (a list of "
            f"filters, or convolution kernels); this is a {model.kind} model; got strides="
            f"{short_repr(strides)}"
        )
    return model


def _read(source: Any, strides: Any) -> Model:
    """:func:`load` but its check that ``strides`` went to a network that has them."""
    if isinstance(source, Model):
        return source
    if isinstance(source, ReLUConvNet):
        return conv_model(source, "ReLUConvNet", "float64", source.notes)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise ModelFileError(f"{path}: a folder, not a model file")
        if not path.is_file():
            raise ModelFileError(f"{path}: no such file")
        suffix = path.suffix.lower()
        notes: tuple[str, ...] = ()
        ordered = True  # npz and torch files keep the order their arrays were saved in
        if suffix == ".npz":
            arrays = _read_npz(path)
        elif suffix == ".safetensors":
            arrays, ordered = _read_safetensors(path)
        elif suffix == ".onnx":
            return read_onnx(path, strides=strides)
        elif suffix in (".pt", ".pth", ".bin"):
            arrays, notes = _read_torch(path)
        else:
            raise ModelFileError(
                f"{path}: unknown model format {suffix!r}; readable: {', '.join(SUFFIXES)}"
            )
        return model_from_arrays(arrays, str(path), strides=strides, notes=notes, ordered=ordered)
    module = type(source).__module__ or ""
    if module.startswith("torch"):
        return _from_torch_module(source, strides, None)
    if module.startswith("sklearn"):
        return _relu_model(
            live_relu_params(source, ModelFileError), f"scikit-learn {type(source).__name__}"
        )
    if isinstance(source, dict):
        source, notes = _unwrap_checkpoint(source)
        return model_from_arrays(
            {str(k): _to_numpy(v) for k, v in source.items()},
            "dict of arrays",
            strides=strides,
            notes=notes,
        )
    if (
        isinstance(source, Sequence)
        and not isinstance(source, (str, bytes))
        and source
        and all(isinstance(p, Sequence) and len(p) == 2 for p in source)
    ):
        return _relu_model(source, "list of (W, b) pairs")
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes)) and source:
        arrays = {}
        for l, w in enumerate(source):
            w = _to_numpy(w)
            arrays[f"{l}.weight"] = w.reshape((1, 1) + w.shape)
        return model_from_arrays(arrays, "list of filters", strides=strides)
    raise ModelFileError(
        f"cannot read a model from {short_repr(source)}: give a path "
        f"({', '.join(SUFFIXES)}), a torch.nn.Sequential, a scikit-learn MLP, "
        f"a dict of arrays or a list of (W, b) pairs"
    )


def _named_arrays(model: Model) -> dict[str, np.ndarray]:
    """Arrays named as in the state_dict of the matching ``torch.nn.Sequential``."""
    if model.kind == "relu":
        out = {}
        for l, (W, b) in enumerate(model.params):
            out[f"{2 * l}.weight"], out[f"{2 * l}.bias"] = W, b
        return out
    return {f"{l}.weight": w.reshape((1, 1) + w.shape) for l, w in enumerate(model.params)}


def save(model: Any, path: Any, *, strides: Any = None) -> None:
    """Write a network to ``.npz``, ``.safetensors`` or ``.onnx``.

    Arrays are named as in the ``state_dict`` of the matching ``torch.nn.Sequential``
    (``0.weight``, ``0.bias``, ``2.weight``, ...), so a ReLU network saved here loads into
    PyTorch with ``load_state_dict``. The strides of a convolutional network are stored as
    the array ``neuromanifold.strides`` (npz) or as metadata (safetensors).

    Args:
        model: anything :func:`load` reads (a :class:`Model`, a list of ``(W, b)``, a
            list of filters with ``strides``, a torch or scikit-learn model).
        path: destination ending in ``.npz``, ``.safetensors`` or ``.onnx`` (a graph of
            Gemm and Relu nodes, or bias-free Conv nodes, in float64 with a dynamic batch
            axis; needs the ``onnx`` extra).
        strides: strides for a list of filters.

    Returns:
        None; a :class:`neuromanifold.ModelFileError` when the path cannot be written.
    """
    try:
        model = load(model, strides=strides)
    except ModelFileError:
        raise
    except NeuromanifoldError as exc:
        raise ModelFileError(f"cannot save {short_repr(model)}: {exc}") from None
    if not isinstance(path, (str, os.PathLike)):
        raise ModelFileError(f"path must be a file path; got {short_repr(path)}")
    path = Path(path)
    if path.is_dir():
        raise ModelFileError(f"{path}: cannot write (a folder of that name exists)")
    if not path.parent.is_dir():
        raise ModelFileError(f"{path}: cannot write (no folder {str(path.parent)!r})")
    suffix = path.suffix.lower()
    if model.kind == "relu_conv" and suffix != ".onnx":
        raise ModelFileError(
            f"{path}: a convolutional network is saved as .onnx, where its strides, "
            f"padding, pooling and residual blocks travel with the weights (a .npz or "
            f".safetensors of weights alone would not say them)"
        )
    arrays = _named_arrays(model) if model.kind != "relu_conv" else {}
    try:
        if suffix == ".npz":
            if model.strides is not None:
                arrays[STRIDES_KEY] = np.asarray(model.strides, dtype=np.int64)
            with open(path, "wb") as fh:
                np.savez(fh, **arrays)
        elif suffix == ".safetensors":
            from safetensors.numpy import save_file  # start-up: a slow import

            meta = {"neuromanifold.kind": model.kind, ORDER_KEY: json.dumps(list(arrays))}
            if model.strides is not None:
                meta[STRIDES_KEY] = json.dumps([list(s) for s in model.strides])
            save_file(
                {k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path), metadata=meta
            )
        elif suffix == ".onnx":
            write_onnx(model, path)
        else:
            raise ModelFileError(f"{path}: save writes .npz, .safetensors or .onnx; got {suffix!r}")
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot write ({exc.strerror or exc})") from None
