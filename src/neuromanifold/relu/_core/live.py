"""Live model objects read as ReLU parameters, without importing their libraries.

A fitted scikit-learn ``MLPRegressor``/``MLPClassifier`` with ReLU, a
``torch.nn.Sequential`` of ``Linear`` and ``ReLU``, and the :class:`~neuromanifold.io.Model`
that :func:`neuromanifold.io.load` returns are recognized by their attributes, so that the
ReLU analyses accept them directly and :mod:`neuromanifold.io` reads them the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._errors import ParameterError, short_repr
from .conv.network import ReLUConvNet

__all__ = [
    "is_live_relu_model",
    "live_relu_params",
    "tensor_to_numpy",
    "as_conv_net",
    "refuse_conv",
]

#: torch modules that compute nothing in an inference pass
_PASS_THROUGH = ("Identity", "Flatten", "Dropout")


def tensor_to_numpy(value: Any) -> np.ndarray:
    """A tensor (torch, detached) or array-like as a numpy array, without importing torch."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _is_model(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("kind", "params", "architecture", "source"))


def _is_sklearn_mlp(obj: Any) -> bool:
    return type(obj).__module__.startswith("sklearn") and hasattr(obj, "hidden_layer_sizes")


def _is_torch_sequential(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and type(obj).__name__ == "Sequential"


def as_conv_net(obj: Any) -> Any:
    """The :class:`~neuromanifold.relu.ReLUConvNet` that ``obj`` is or holds (a Model of
    kind ``"relu_conv"``), else None."""
    if isinstance(obj, ReLUConvNet):
        return obj
    if _is_model(obj) and getattr(obj, "kind", None) == "relu_conv":
        return obj.params
    return None


def refuse_conv(obj: Any, question: str) -> None:
    """Refuse a convolutional network where ``question`` is about the parameters of a
    fully connected one (their dense view has other parameters than the kernels)."""
    if as_conv_net(obj) is not None:
        raise ParameterError(
            f"{question} answers about the parameters of a fully connected ReLU network; "
            f"got a convolutional network, whose parameters are its kernels. For it: "
            f"relu.channel_spec (its channel symmetries) and relu.identifiability (modulo "
            f"them); equivalent, distance, regions, neurons, verify, reduce and "
            f"fingerprint read its function through its dense view"
        )


def is_live_relu_model(obj: Any) -> bool:
    """Whether ``obj`` is one of the objects :func:`live_relu_params` reads."""
    return (
        _is_model(obj)
        or _is_sklearn_mlp(obj)
        or _is_torch_sequential(obj)
        or as_conv_net(obj) is not None
    )


def live_relu_params(obj: Any, error: type[Exception]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(W, b)`` list of a live ReLU model (see the module docs); ``error`` (an
    exception class of the caller's) names the rule otherwise."""
    conv = as_conv_net(obj)
    if conv is not None:  # its function, as a fully connected ReLU network
        return conv.dense_params()
    if _is_model(obj):
        if obj.kind != "relu":
            raise error(f"{obj.source}: holds a {obj.kind} model; this needs a ReLU network")
        return [(np.asarray(W), np.asarray(b)) for W, b in obj.params]
    if _is_sklearn_mlp(obj):
        source = f"scikit-learn {type(obj).__name__}"
        if getattr(obj, "activation", None) != "relu":
            raise error(
                f"{source}: activation must be 'relu'; got "
                f"{short_repr(getattr(obj, 'activation', None))}"
            )
        coefs, intercepts = getattr(obj, "coefs_", None), getattr(obj, "intercepts_", None)
        if (
            not isinstance(coefs, Sequence)
            or not isinstance(intercepts, Sequence)
            or len(coefs) != len(intercepts)
            or not coefs
        ):
            raise error(
                f"{source}: the model is not fitted (coefs_ and intercepts_ must be "
                f"lists of one array per layer; got {short_repr(coefs)} and "
                f"{short_repr(intercepts)})"
            )
        return [(np.asarray(C).T, np.asarray(c)) for C, c in zip(coefs, intercepts)]
    if _is_torch_sequential(obj):
        source = f"torch {type(obj).__name__}"
        mods = [m for m in obj if type(m).__name__ not in _PASS_THROUGH]
        params = []
        for i, m in enumerate(mods):
            expected = "Linear" if i % 2 == 0 else "ReLU"
            if type(m).__name__ != expected or (i == len(mods) - 1 and expected != "Linear"):
                raise error(
                    f"{source}: expected Linear and ReLU layers alternating, starting "
                    f"and ending with Linear; layer {i} is {type(m).__name__}"
                )
            if expected == "Linear":
                W = tensor_to_numpy(m.weight)
                b = np.zeros(W.shape[0]) if m.bias is None else tensor_to_numpy(m.bias)
                params.append((W, b))
        if not params:
            raise error(f"{source}: holds no Linear layer")
        return params
    raise error(f"not a live ReLU model: {short_repr(obj)}")
