"""Input checks shared by every module; each failure is a NeuromanifoldError."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ._errors import InputError, ParameterError, short_repr

__all__ = ["as_finite_array", "as_seed_rng", "check_bool", "check_positive_int",
           "check_positive_float", "check_nonnegative_float", "check_options"]


def as_finite_array(value: Any, name: str, *, ndim: int | None = None,
                    shape: tuple[int, ...] | None = None,
                    error: type[Exception] = ParameterError) -> np.ndarray:
    """``value`` as a float64 array, checked to be finite and of the given shape.

    >>> as_finite_array([1, 2], "w").dtype
    dtype('float64')
    >>> as_finite_array([1, float("nan")], "w")
    Traceback (most recent call last):
    ...
    neuromanifold.ParameterError: w must be finite (no NaN or inf); got array([ 1., nan])
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be an array of real numbers; got {short_repr(value)}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise error(f"{name} must have {ndim} dimension(s); got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise error(f"{name} must have shape {tuple(shape)}; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise error(f"{name} must be finite (no NaN or inf); got {short_repr(arr)}")
    return arr


def check_positive_int(value: Any, name: str, error: type[Exception] = InputError) -> int:
    """``value`` as an ``int`` >= 1, or an error naming the rule."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error(f"{name} must be a positive integer; got {short_repr(value)}")
    if value < 1:
        raise error(f"{name} must be a positive integer; got {value}")
    return int(value)


def as_seed_rng(seed: Any) -> np.random.Generator:
    """A numpy Generator from an int seed, ``None`` or an existing Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or seed < 0):
        raise InputError(
            f"seed must be a nonnegative int, None or a numpy Generator; got {short_repr(seed)}")
    return np.random.default_rng(seed)


def check_positive_float(value: Any, name: str) -> float:
    """``value`` as a positive finite float, or an :class:`InputError` naming the rule."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)) or not np.isfinite(value) \
            or value <= 0:
        raise InputError(f"{name} must be a positive finite number; got {short_repr(value)}")
    return float(value)


def check_nonnegative_float(value: Any, name: str) -> float:
    """``value`` as a finite float >= 0 (e.g. a tolerance where 0 means exact), or an
    :class:`InputError` naming the rule."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)) or not np.isfinite(value) \
            or value < 0:
        raise InputError(f"{name} must be a nonnegative finite number; got {short_repr(value)}")
    return float(value)


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a Python ``bool``; only ``True``/``False`` (Python or numpy) are accepted,
    so that ``progress="no"`` or ``exact=1`` is an :class:`InputError`, not silently truthy.

    >>> check_bool(np.True_, "exact")
    True
    >>> check_bool("yes", "progress")
    Traceback (most recent call last):
    ...
    neuromanifold.InputError: progress must be True or False; got 'yes'
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False; got {short_repr(value)}")
    return bool(value)


def check_options(func: Callable, options: dict, what: str) -> None:
    """Raise an :class:`InputError` listing the accepted names when ``options`` has a
    keyword ``func`` does not take (instead of Python's bare ``TypeError``)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items()
                if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                              inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise InputError(f"{what} got unknown option(s) {unknown}; it accepts {accepted}")
