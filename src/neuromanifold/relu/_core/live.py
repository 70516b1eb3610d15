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

from ..._errors import short_repr

__all__ = ["is_live_relu_model", "live_relu_params", "tensor_to_numpy"]

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


def is_live_relu_model(obj: Any) -> bool:
    """Whether ``obj`` is one of the objects :func:`live_relu_params` reads."""
    return _is_model(obj) or _is_sklearn_mlp(obj) or _is_torch_sequential(obj)


def live_relu_params(obj: Any, error: type[Exception]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(W, b)`` list of a live ReLU model (see the module docs); ``error`` (an
    exception class of the caller's) names the rule otherwise."""
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
