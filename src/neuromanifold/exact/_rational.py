"""Exact rational arithmetic on top of python-flint.

Floats are exact binary rationals, so converting a float array to rationals loses
nothing: computations done afterwards in ``fmpq`` are exact statements about the very
numbers the user passed.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._validation import as_real_array

__all__ = [
    "to_fmpq",
    "fmpq_to_fraction",
    "fmpq_matrix",
    "exact_rank",
    "fmpq_array",
    "fmpq_vector",
    "fmpq_rows",
]


def to_fmpq(x: Any) -> flint.fmpq:
    """The exact rational value of a finite float, int, Fraction or fmpq.

    Strings (even numeric ones), booleans, complex numbers, NaN and inf are refused with
    an :class:`InputError`.

    >>> to_fmpq(0.75)
    3/4
    """
    if isinstance(x, flint.fmpq):
        return x
    if type(x) is float or isinstance(x, np.floating):  # the common case, no Fraction
        f = float(x)
        if math.isfinite(f):
            return flint.fmpq(*f.as_integer_ratio())
    if isinstance(x, (bool, np.bool_)) or not (
        isinstance(x, (int, float, Fraction, np.integer, np.floating, flint.fmpz))
    ):
        raise InputError(
            f"expected a finite real number (float, int, Fraction or fmpq); got {short_repr(x)}"
        )
    if isinstance(x, (int, np.integer, flint.fmpz)):
        return flint.fmpq(int(x))
    try:
        fr = x if isinstance(x, Fraction) else Fraction(float(x))
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(
            f"expected a finite real number (float, int, Fraction or fmpq); got {short_repr(x)}"
        ) from exc
    return flint.fmpq(fr.numerator, fr.denominator)


def _exact_entries(arr: Any, name: str) -> np.ndarray:
    """``arr`` as an array whose entries :func:`to_fmpq` takes (refusing strings,
    complex, booleans, ragged nests and other objects), any shape."""
    a = as_real_array(arr, name, error=InputError, exact=True)
    if a.dtype != object and not np.all(np.isfinite(a)):
        raise InputError(f"{name} must be finite (no NaN or inf); got {short_repr(arr)}")
    return a


def fmpq_vector(x: Any, name: str = "vector", *, size: int | None = None) -> list[flint.fmpq]:
    """A 1D array-like of exact values as a list of ``fmpq``, of length ``size`` if given.

    >>> fmpq_vector([1, 0.5])
    [1, 1/2]
    """
    a = _exact_entries(x, name)
    if a.ndim != 1:
        raise InputError(f"{name} must be a 1D sequence of numbers; got shape {a.shape}")
    if size is not None and a.size != size:
        raise InputError(f"{name} must have {size} entries; got {a.size}")
    return [
        to_fmpq(v.item() if hasattr(v, "item") and not isinstance(v, flint.fmpq) else v) for v in a
    ]


def fmpq_rows(
    A: Any, name: str = "matrix", *, ncols: int | None = None, nrows: int | None = None
) -> list[list[flint.fmpq]]:
    """A 2D array-like of exact values (or an empty sequence: no rows) as a list of rows
    of ``fmpq``, with ``ncols`` columns and ``nrows`` rows if given.

    >>> fmpq_rows([[1, 2]], ncols=2)
    [[1, 2]]
    """
    a = _exact_entries(A, name)
    if a.ndim == 1 and a.size == 0:
        a = a.reshape(0, 0 if ncols is None else ncols)
    if a.ndim != 2:
        raise InputError(f"{name} must be a 2D array (a list of rows); got shape {a.shape}")
    if a.shape[0] and ncols is not None and a.shape[1] != ncols:
        raise InputError(f"{name} must have {ncols} columns; got shape {a.shape}")
    if nrows is not None and a.shape[0] != nrows:
        raise InputError(
            f"{name} must have {nrows} rows (one per right-hand side entry); got {a.shape[0]}"
        )
    return [
        [
            to_fmpq(v.item() if hasattr(v, "item") and not isinstance(v, flint.fmpq) else v)
            for v in row
        ]
        for row in a
    ]


def fmpq_to_fraction(q: flint.fmpq) -> Fraction:
    """A ``flint.fmpq`` as a ``fractions.Fraction``."""
    if not isinstance(q, flint.fmpq):
        raise InputError(f"fmpq_to_fraction needs a flint.fmpq; got {short_repr(q)}")
    return Fraction(int(q.p), int(q.q))


def fmpq_array(arr: Any) -> np.ndarray:
    """An object array of ``fmpq`` with the exact values of ``arr`` (any shape).

    >>> fmpq_array([[0.5, 2]])
    array([[1/2, 2]], dtype=object)
    """
    a = _exact_entries(arr, "arr")
    out = np.empty(a.shape, dtype=object)
    for idx, x in np.ndenumerate(a):
        out[idx] = to_fmpq(x.item() if hasattr(x, "item") and not isinstance(x, flint.fmpq) else x)
    return out


def fmpq_matrix(arr: Any) -> flint.fmpq_mat:
    """A 2D array (floats, ints, Fractions or fmpq) as an exact ``flint.fmpq_mat``."""
    a = fmpq_array(arr)
    if a.ndim != 2:
        raise InputError(f"fmpq_matrix needs a 2D array; got shape {a.shape}")
    rows, cols = a.shape
    m = flint.fmpq_mat(rows, cols)
    for i in range(rows):
        for j in range(cols):
            m[i, j] = a[i, j]
    return m


def exact_rank(arr: Any) -> int:
    """The exact rank of a matrix of floats/rationals (certified, no tolerance).

    >>> exact_rank([[1.0, 2.0], [2.0, 4.0]])
    1
    """
    m = fmpq_matrix(arr)
    if m.nrows() == 0 or m.ncols() == 0:
        return 0
    return int(m.rank())
