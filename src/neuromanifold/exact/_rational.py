"""Exact rational arithmetic on top of python-flint.

Floats are exact binary rationals, so converting a float array to rationals loses
nothing: computations done afterwards in ``fmpq`` are exact statements about the very
numbers the user passed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import flint
import numpy as np

from .._errors import InputError, short_repr

__all__ = ["to_fmpq", "fmpq_to_fraction", "fmpq_matrix", "exact_rank", "fmpq_array"]


def to_fmpq(x: Any) -> flint.fmpq:
    """The exact rational value of a float, int, Fraction or fmpq.

    >>> to_fmpq(0.75)
    3/4
    """
    if isinstance(x, flint.fmpq):
        return x
    if isinstance(x, (int, np.integer, flint.fmpz)):
        return flint.fmpq(int(x))
    try:
        fr = x if isinstance(x, Fraction) else Fraction(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"expected a finite real number (float, int, Fraction or fmpq); "
                         f"got {short_repr(x)}") from exc
    return flint.fmpq(fr.numerator, fr.denominator)


def fmpq_to_fraction(q: flint.fmpq) -> Fraction:
    """A ``flint.fmpq`` as a ``fractions.Fraction``."""
    return Fraction(int(q.p), int(q.q))


def fmpq_array(arr: Any) -> np.ndarray:
    """An object array of ``fmpq`` with the exact values of ``arr`` (any shape)."""
    a = np.asarray(arr)
    out = np.empty(a.shape, dtype=object)
    for idx, x in np.ndenumerate(a):
        out[idx] = to_fmpq(x.item() if hasattr(x, "item") else x)
    return out


def fmpq_matrix(arr: Any) -> flint.fmpq_mat:
    """A 2D array (floats, ints, Fractions or fmpq) as an exact ``flint.fmpq_mat``."""
    a = np.asarray(arr, dtype=object)
    if a.ndim != 2:
        raise InputError(f"fmpq_matrix needs a 2D array; got shape {a.shape}")
    rows, cols = a.shape
    m = flint.fmpq_mat(rows, cols)
    for i in range(rows):
        for j in range(cols):
            x = a[i, j]
            m[i, j] = to_fmpq(float(x) if isinstance(x, np.floating) else x)
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
