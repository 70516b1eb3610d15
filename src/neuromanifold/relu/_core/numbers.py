"""The one exact and the one float conversion of ReLU parameters and values.

Every analysis that needs exact values of user input goes through :func:`exact_value` /
:func:`exact_layers` (floats are exact binary rationals, ``Fraction``, ``fmpq``, integers
and sympy rationals are kept as given), and every exact value that goes back to floats
goes through :func:`to_float` (correctly rounded, +-inf beyond the float range) or, where
a float solver needs finite input, :func:`clipped_float` (+-1e300 beyond it).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from ..._errors import ParameterError, short_repr
from ..._validation import as_real_array
from ...exact import fmpq_to_fraction
from .domain import Domain
from .net import check_params, param_list

__all__ = [
    "exact_value",
    "exact_layers",
    "fraction_to_fmpq",
    "float_to_fmpq",
    "to_float",
    "clipped_float",
    "pow2",
    "binary_exponent",
    "open_range",
    "forward_error_bounds",
]

_INF = math.inf
_ZERO = Fraction(0)


def exact_value(x: Any) -> Fraction:
    """The exact rational value of a float, int, Fraction, fmpq or sympy Rational; a
    :class:`ParameterError` for anything else (strings, complex numbers, booleans, None)."""
    t = type(x)
    if t is float:
        return Fraction(x)
    if t is Fraction:
        return x
    if t is int:
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, flint.fmpq):
        return fmpq_to_fraction(x)
    if isinstance(x, (float, np.floating)):
        return Fraction(float(x))
    if hasattr(x, "p") and hasattr(x, "q") and getattr(x, "is_Rational", False):  # sympy
        return Fraction(int(x.p), int(x.q))
    raise ParameterError(
        f"parameter entries must be real numbers (float, int, Fraction); got "
        f"{short_repr(x)} of type {type(x).__name__}"
    )


def exact_layers(params: Any) -> tuple[list, list]:
    """Validated float layers and the exact values of the very entries passed.

    Entries given as ``Fraction``/``fmpq``/ints are kept exact (so exact fiber samples can
    be checked without rounding); floats are converted exactly.
    """
    params = param_list(params)
    if isinstance(params, (str, bytes)):
        raise ParameterError(
            f"ReLU parameters must be a non-empty list of (W, b) pairs; got {short_repr(params)}"
        )
    with warnings.catch_warnings():  # numpy casts complex arrays to float with a warning
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        try:
            layers = check_params(params)
        except np.exceptions.ComplexWarning as exc:
            raise ParameterError(
                f"parameter entries must be real numbers (float, int, "
                f"Fraction); got complex values in {short_repr(params)}"
            ) from exc
    exact = []
    for l, ((W, b), (Wf, bf)) in enumerate(zip(params, layers), start=1):
        # entries as passed (a boolean among floats is refused by _frac); tensors detached
        We = np.asarray(_detached(W, f"W_{l}"), dtype=object).reshape(Wf.shape)
        be = np.asarray(_detached(b, f"b_{l}"), dtype=object).reshape(bf.shape)
        exact.append(
            (
                [[exact_value(x) for x in row] for row in We.tolist()],
                [exact_value(x) for x in be.tolist()],
            )
        )
    return layers, exact


def _detached(x: Any, name: str) -> Any:
    """A tensor's values (detached, via the shared reader); anything else unchanged."""
    if hasattr(x, "detach") and not isinstance(x, np.ndarray):
        return as_real_array(x, name, exact=True)
    return x


def fraction_to_fmpq(x: Fraction) -> flint.fmpq:
    """A ``Fraction`` as an ``fmpq`` (the same value)."""
    return flint.fmpq(x.numerator, x.denominator)


def float_to_fmpq(v: float) -> flint.fmpq:
    """The exact value of a finite float."""
    return flint.fmpq(*float(v).as_integer_ratio())


def to_float(v: flint.fmpq) -> float:
    """``v`` correctly rounded to a float; ``+-inf`` beyond the float range."""
    try:
        return int(v.p) / int(v.q)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def clipped_float(v: flint.fmpq) -> float:
    """``float(v)``, clipped to ``+-1e300`` beyond the float range: the finite input a float
    solver needs (the exact side decides; the clipped value only guides)."""
    try:
        return float(v)
    except OverflowError:
        return 1e300 if v > 0 else -1e300


def pow2(e: int) -> flint.fmpq:
    """``2**e`` as an exact rational (any integer ``e``)."""
    return flint.fmpq(2**e) if e >= 0 else flint.fmpq(1, 2**-e)


def binary_exponent(v: flint.fmpq) -> int:
    """``floor(log2 |v|)`` up to one, for a non-zero rational (from the bit lengths)."""
    return int(abs(v.p)).bit_length() - int(v.q).bit_length()


def open_range(a: Sequence[Fraction], dom: Domain) -> tuple[Any, Any] | None:
    """Exact ``(inf, sup)`` of ``<a, z>`` over the interior of ``dom`` (``None`` when the
    domain kind has no closed form). For ``a != 0`` the range over the interior is the open
    interval between these values; over the closed domain, its closure."""
    if all(x == 0 for x in a):
        return _ZERO, _ZERO
    if dom.kind == "whole":
        return -_INF, _INF
    if dom.kind == "orthant":
        lo = -_INF if any(x < 0 for x in a) else _ZERO
        hi = _INF if any(x > 0 for x in a) else _ZERO
        return lo, hi
    if dom.kind == "box" and dom.lower is not None and dom.upper is not None:
        lo = hi = _ZERO
        for x, l, u in zip(a, dom.lower, dom.upper):
            p, q = x * exact_value(float(l)), x * exact_value(float(u))
            lo += min(p, q)
            hi += max(p, q)
        return lo, hi
    return None


_U = 2.0**-53


def forward_error_bounds(params: list, X: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per hidden layer, ``(Z, err)``: the float pre-activations at the rows of ``X`` and a
    rigorous bound on their distance from the exact ones of the float network.

    A sum of n products is within ``gamma_(n+1) (|W| |a| + |b|)`` of the exact one (any
    order, fused or not; a margin of 1 % and one more term), the error carried in ``a``
    adds ``|W| e`` (ReLU does not enlarge it), and the bound is inflated for its own
    rounding and for underflow; it is ``inf`` where anything overflowed."""
    H = np.asarray(X, dtype=float)
    E = np.zeros_like(H)
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for W, b in params[:-1]:
            n = W.shape[1] + 2
            g = 1.01 * n * _U / (1 - n * _U)
            A = np.abs(W)
            Z = H @ W.T + b
            err = E @ A.T + g * (np.abs(H) @ A.T + np.abs(b))
            err = err * (1 + 1e-10) + n * 2.0**-1070
            err = np.where(np.isfinite(err) & np.isfinite(Z), err, np.inf)
            out.append((Z, err))
            H, E = np.maximum(Z, 0.0), err
    return out
