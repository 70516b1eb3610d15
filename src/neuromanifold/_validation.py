"""Input checks shared by every module; each failure is a NeuromanifoldError.

The rules, in one place: arrays of real numbers are float or integer arrays, or object
arrays of exact reals (Fractions, ints, python-flint rationals); tensors are detached;
complex numbers, strings (also numeric ones), booleans and other objects are refused
(:func:`as_real_array`). Results that overflow float64 from finite inputs are a
:class:`ParameterError` "overflow: ..." (:func:`check_finite_result`). Counts that set the
size of a computation take a ``maximum`` (:func:`check_positive_int`), so that an absurd
value is a clear error rather than a hang or a ``MemoryError``.
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ._errors import ArchitectureError, InputError, ParameterError, short_repr

__all__ = [
    "check_workers",
    "as_real_array",
    "as_finite_array",
    "check_finite_result",
    "as_seed_rng",
    "check_seed",
    "check_bool",
    "check_positive_int",
    "check_nonnegative_int",
    "check_positive_float",
    "check_nonnegative_float",
    "check_options",
]


#: Element types an object array may hold: exact or floating real numbers (``bool`` is
#: not one; python-flint's ``fmpz``/``fmpq`` are accepted by name, without importing it).
_REAL_SCALARS = (int, float, Fraction, np.integer, np.floating)
_FLINT_REALS = ("fmpz", "fmpq")


def _is_real_scalar(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, _REAL_SCALARS) or type(x).__name__ in _FLINT_REALS


def as_real_array(
    value: Any, name: str, *, error: type[Exception] = ParameterError, exact: bool = False
) -> np.ndarray:
    """``value`` as a numpy array of real numbers, refusing what only looks like one.

    The input rules shared by every entry point:

    * accepted: float and integer arrays (and nested lists of them), object arrays whose
      entries are real numbers (``int``, ``float``, :class:`fractions.Fraction`, numpy
      scalars, python-flint ``fmpz``/``fmpq``), and array-likes with a ``detach`` method
      (a ``torch.Tensor``, also one that requires grad: it is detached and copied to the
      CPU, never differentiated through);
    * refused with ``error``: ``None``, strings and bytes (also numeric ones such as
      ``"1.5"``, which numpy would parse), complex numbers (even with zero imaginary
      part: their real part is not what was meant), booleans, dates, ragged nests and
      any other object.

    Args:
        value: the array-like.
        name: the argument's name, for the message.
        error: the error class raised (a :class:`NeuromanifoldError`).
        exact: keep an object array (of checked real entries) as it is, for callers
            that read ints and Fractions exactly; otherwise the result is float64 and an
            entry out of the float64 range is an error.

    Returns:
        A float64 array (or, with ``exact=True`` and object input, an object array).
        Finiteness is not checked here (see :func:`as_finite_array`).

    >>> as_real_array([1, 2], "w").dtype
    dtype('float64')
    >>> as_real_array([1 + 0j], "w")
    Traceback (most recent call last):
    ...
    neuromanifold.ParameterError: w must be an array of real numbers (complex numbers are refused:
    their imaginary part would be dropped); got [(1+0j)]
    """
    what = f"{name} must be an array of real numbers"
    if value is None or isinstance(value, (str, bytes, bytearray)):
        raise error(f"{what}; got {short_repr(value)}")
    if (
        hasattr(value, "detach")
        and callable(getattr(value, "detach"))
        and not isinstance(value, np.ndarray)
    ):
        # a torch.Tensor (possibly requiring grad, possibly on a GPU): its values only
        try:
            detached = value.detach()
            if hasattr(detached, "cpu"):
                detached = detached.cpu()
            value = detached.numpy() if hasattr(detached, "numpy") else np.asarray(detached)
        except Exception as exc:  # noqa: BLE001 - any failure of a foreign library
            raise error(f"{what}; could not read the tensor {short_repr(value)}: {exc}") from None
    if type(value) is np.ndarray and value.dtype.kind in "fiu":
        raw = value  # a plain numeric array, the common case: nothing to parse
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                raw = np.asarray(value)
        except (TypeError, ValueError, OverflowError, RuntimeError, MemoryError) as exc:
            raise error(f"{what} (a rectangular nest of numbers); got {short_repr(value)}") from exc
    kind = raw.dtype.kind
    if kind == "c":
        raise error(
            f"{what} (complex numbers are refused: their imaginary part would be "
            f"dropped); got {short_repr(value)}"
        )
    if kind == "b":
        raise error(f"{what} (booleans are refused: pass 0/1 as numbers); got {short_repr(value)}")
    if kind in "iuf":
        if kind == "f" and raw.dtype.itemsize > 8:
            return _to_float64(raw, name, error)
        return raw.astype(np.float64, copy=False)
    if kind == "O":
        flat = raw.ravel()
        bad = next((x for x in flat if not _is_real_scalar(x)), _NOTHING)
        if bad is not _NOTHING:
            raise error(
                f"{what}; got an entry {short_repr(bad)} of type "
                f"{type(bad).__name__} in {short_repr(value)}"
            )
        if exact:
            return raw
        return _to_float64(raw, name, error)
    raise error(f"{what}; got dtype {raw.dtype}: {short_repr(value)}")


_NOTHING = object()


def _to_float64(raw: np.ndarray, name: str, error: type[Exception]) -> np.ndarray:
    """Exact or extended-precision entries as float64; a clear error when one is out of
    the float64 range (instead of a silent inf)."""
    out = np.empty(raw.shape, dtype=np.float64)
    flat = out.reshape(-1)
    for i, x in enumerate(raw.reshape(-1)):
        try:
            f = float(x)
        except OverflowError:
            f = float("inf")
        if not np.isfinite(f) and _finite_number(x):
            raise error(
                f"{name} has an entry out of the float64 range (|x| > 1.8e308): {short_repr(x)}"
            )
        flat[i] = f
    return out


def _finite_number(x: Any) -> bool:
    if isinstance(x, (int, Fraction, np.integer)) or type(x).__name__ in _FLINT_REALS:
        return True
    try:
        return bool(np.isfinite(x))
    except TypeError:  # pragma: no cover - real scalars are all numpy-comparable
        return True


def as_finite_array(
    value: Any,
    name: str,
    *,
    ndim: int | None = None,
    shape: tuple[int, ...] | None = None,
    error: type[Exception] = ParameterError,
) -> np.ndarray:
    """``value`` as a float64 array, checked to be real, finite and of the given shape.

    The accepted inputs are those of :func:`as_real_array` (float, integer, Fraction
    and tensor inputs; no complex, string, boolean or generic object entries).

    Args:
        value: the array-like.
        name: the argument's name, for the message.
        ndim: required number of dimensions (None: any).
        shape: required shape (None: any).
        error: the error class raised (a :class:`NeuromanifoldError`).

    Returns:
        A float64 array.

    >>> as_finite_array([1, 2], "w").dtype
    dtype('float64')
    >>> as_finite_array([1, float("nan")], "w")
    Traceback (most recent call last):
    ...
    neuromanifold.ParameterError: w must be finite (no NaN or inf); got array([ 1., nan])
    """
    arr = as_real_array(value, name, error=error)
    if ndim is not None and arr.ndim != ndim:
        raise error(f"{name} must have {ndim} dimension(s); got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise error(f"{name} must have shape {tuple(shape)}; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise error(f"{name} must be finite (no NaN or inf); got {short_repr(arr)}")
    return arr


def check_finite_result(value: Any, what: str) -> Any:
    """``value`` unchanged when every float in it is finite; otherwise a
    :class:`ParameterError` saying the computation overflowed (finite inputs whose
    result leaves the float64 range, e.g. weights of size 1e200 multiplied together).

    Args:
        value: an array, a float, or a list/tuple of them.
        what: what was computed, for the message.

    Returns:
        ``value``.

    >>> check_finite_result(np.array([1.0, 2.0]), "the end-to-end filter")
    array([1., 2.])
    >>> check_finite_result([np.array([np.inf])], "the NTK")
    Traceback (most recent call last):
    ...
    neuromanifold.ParameterError: overflow: the NTK is not finite in float64 (the inputs are too
    large in magnitude; rescale them)
    """
    if not _all_finite(value):
        raise ParameterError(
            f"overflow: {what} is not finite in float64 (the inputs are "
            f"too large in magnitude; rescale them)"
        )
    return value


def _all_finite(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value)))
    if isinstance(value, (float, np.floating)):
        return bool(np.isfinite(value))
    if isinstance(value, (list, tuple)):
        return all(_all_finite(v) for v in value)
    return True


def check_positive_int(
    value: Any, name: str, error: type[Exception] = InputError, *, maximum: int | None = None
) -> int:
    """``value`` as an ``int`` >= 1 (and <= ``maximum`` when given: counts that set the
    size of a computation are capped so that a typo such as ``num_starts=10**9`` is a
    clear error, not a hang), or an error naming the rule.

    >>> check_positive_int(3, "num_starts")
    3
    >>> check_positive_int(10**9, "num_starts", maximum=10_000)
    Traceback (most recent call last):
    ...
    neuromanifold.InputError: num_starts must be at most 10000 (a size limit); got 1000000000
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise error(f"{name} must be a positive integer; got {short_repr(value)}")
    if value < 1:
        raise error(f"{name} must be a positive integer; got {value}")
    if maximum is not None and value > maximum:
        raise error(f"{name} must be at most {maximum} (a size limit); got {value}")
    return int(value)


def check_nonnegative_int(
    value: Any, name: str, error: type[Exception] = InputError, *, maximum: int | None = None
) -> int:
    """``value`` as an ``int`` >= 0 (and <= ``maximum`` when given), or an error naming
    the rule.

    >>> check_nonnegative_int(0, "walk_steps")
    0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise error(f"{name} must be an integer >= 0; got {short_repr(value)}")
    if maximum is not None and value > maximum:
        raise error(f"{name} must be at most {maximum} (a size limit); got {value}")
    return int(value)


def check_seed(seed: Any) -> Any:
    """``seed`` when it is a nonnegative int, ``None`` or a numpy Generator, else an
    :class:`InputError`; for a caller that draws from it only on some paths (building a
    Generator costs some 20 microseconds)."""
    if (
        seed is not None
        and not isinstance(seed, np.random.Generator)
        and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0)
    ):
        raise InputError(
            f"seed must be a nonnegative int, None or a numpy Generator; got {short_repr(seed)}"
        )
    return seed


def as_seed_rng(seed: Any) -> np.random.Generator:
    """A numpy Generator from an int seed, ``None`` or an existing Generator."""
    if isinstance(check_seed(seed), np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def check_positive_float(value: Any, name: str) -> float:
    """``value`` as a positive finite float, or an :class:`InputError` naming the rule."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not np.isfinite(value)
        or value <= 0
    ):
        raise InputError(f"{name} must be a positive finite number; got {short_repr(value)}")
    return float(value)


def check_nonnegative_float(value: Any, name: str) -> float:
    """``value`` as a finite float >= 0 (e.g. a tolerance where 0 means exact), or an
    :class:`InputError` naming the rule."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not np.isfinite(value)
        or value < 0
    ):
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
    accepted = [
        n
        for n, p in params.items()
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise InputError(f"{what} got unknown option(s) {unknown}; it accepts {accepted}")


def check_workers(workers: Any) -> int:
    """The number of processes ``workers`` asks for: a positive int (at most 4096), or
    ``None`` for every core available to this process.

    >>> check_workers(3)
    3
    """
    if workers is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not on Linux
            return os.cpu_count() or 1
    return check_positive_int(workers, "workers", maximum=4096)


def renamed_keywords(**old_to_new: str) -> Callable:
    """A decorator: the keyword arguments ``old`` keep working for one release as aliases of
    ``new``, with a ``DeprecationWarning`` that names the new keyword; passing both is an
    :class:`InputError`. The decorated function keeps its own signature."""

    def wrap(func: Callable) -> Callable:
        @functools.wraps(func)
        def inner(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise InputError(
                            f"{func.__name__}: pass {new}= only ({old}= is its "
                            f"deprecated old name); got both"
                        )
                    warnings.warn(
                        f"{func.__name__}: the keyword {old}= is deprecated; use {new}=",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        inner.renamed_keywords = dict(old_to_new)
        return inner

    return wrap


#: the most entries a network's weights may have (1e8 float64 entries take 800 MB): a
#: width of 10^9 is a typo, not a network, and must not reach an allocation
MAX_PARAMS = 10**8


def check_widths(widths: Any, what: str) -> tuple[int, ...]:
    """Layer widths ``(n_0, ..., n_L)``: at least two positive ints whose weight matrices
    have at most :data:`MAX_PARAMS` entries in all, else an :class:`ArchitectureError`
    naming the rule (``what`` names the network kind in the message)."""
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence) or len(widths) < 2:
        raise ArchitectureError(
            f"{what} widths must be a list of at least two positive integers "
            f"(n0, ..., nL); got {short_repr(widths)}"
        )
    out = tuple(check_positive_int(w, "every width", ArchitectureError) for w in widths)
    check_param_count(
        sum(a * b for a, b in zip(out, out[1:])), f"widths {list(out)} (their weight matrices)"
    )
    return out


def check_param_count(count: int, what: str) -> int:
    """``count`` (the entries of an array to allocate: a network's weights, its Jacobian)
    when at most :data:`MAX_PARAMS`, else an :class:`ArchitectureError` stating the limit."""
    if count > MAX_PARAMS:
        raise ArchitectureError(
            f"{what}: {count:,} entries, more than the limit of {MAX_PARAMS:,} (800 MB of float64)"
        )
    return count


def check_choice(value: Any, name: str, choices: Any) -> str:
    """``value`` when it is one of the strings ``choices``, else an :class:`InputError`
    listing them (the one check of every ``method=`` and ``kind=`` option).

    >>> check_choice("auto", "method", ("auto", "regions"))
    'auto'
    """
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name} must be one of {list(choices)}; got {short_repr(value)}")
    return value
