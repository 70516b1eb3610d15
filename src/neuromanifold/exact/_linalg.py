"""Exact rational linear algebra on lists of rows (python-flint ``fmpq_mat``).

Vectors are lists of ``flint.fmpq`` and matrices lists of such rows; entries may also be
given as ints, ``Fraction``s or floats (converted exactly by :func:`to_fmpq`). Row
reduction, rank and solving run in flint; these helpers only translate between rows and
``fmpq_mat`` and fix conventions (the nullspace basis read off the reduced row echelon
form, the shapes of empty matrices).

>>> rows = [[1, 2, 3], [2, 4, 6]]
>>> rational_rank(rows, 3), rational_rref(rows, 3)
(1, ([[1, 2, 3]], [0]))
>>> rational_nullspace(rows, 3)
[[-2, 1, 0], [-3, 0, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._validation import as_real_array, check_nonnegative_int
from ._rational import to_fmpq

__all__ = [
    "qmat",
    "qrows",
    "rational_rank",
    "rational_rref",
    "rational_nullspace",
    "rational_combination",
    "rational_matmul",
    "rational_solve",
]

_Q0 = flint.fmpq(0)
_Q1 = flint.fmpq(1)


def _q(x: Any) -> flint.fmpq:
    return x if type(x) is flint.fmpq else to_fmpq(x)


def _is_sequence(x: Any) -> bool:
    """A list, tuple, array or other ordered sized iterable (not a string, set or dict)."""
    return (
        hasattr(x, "__len__")
        and hasattr(x, "__iter__")
        and not isinstance(x, (str, bytes, set, frozenset, dict, type))
        and not (isinstance(x, np.ndarray) and x.ndim == 0)
    )


def qmat(rows: Sequence[Sequence[Any]], ncols: int) -> flint.fmpq_mat:
    """The rows as an exact ``len(rows) x ncols`` ``flint.fmpq_mat``.

    Args:
        rows: rows of equal length ``ncols`` (fmpq, ints, Fractions or floats).
        ncols: the number of columns (needed when ``rows`` is empty).

    Returns:
        The matrix; an :class:`InputError` when a row has another length.

    >>> qmat([[1, 0.5]], 2)
    [1, 1/2]
    """
    ncols = check_nonnegative_int(ncols, "ncols")
    if isinstance(rows, np.ndarray):  # refuses boolean, complex, string dtypes
        rows = as_real_array(rows, "rows", error=InputError, exact=True)
    if not _is_sequence(rows):
        raise InputError(f"rows must be a sequence of rows; got {short_repr(rows)}")
    flat = []
    for row in rows:
        if not _is_sequence(row) or len(row) != ncols:
            raise InputError(
                f"every row must have {ncols} entries (a sequence); got {short_repr(row)}"
            )
        flat.extend(_q(x) for x in row)
    return flint.fmpq_mat(len(rows), ncols, flat) if len(rows) else flint.fmpq_mat(0, ncols)


def qrows(m: flint.fmpq_mat) -> list[list[flint.fmpq]]:
    """The rows of an ``fmpq_mat`` as lists of ``fmpq``.

    >>> qrows(qmat([[1, 2]], 2))
    [[1, 2]]
    """
    if not isinstance(m, flint.fmpq_mat):
        raise InputError(f"qrows needs a flint.fmpq_mat; got {short_repr(m)}")
    return [list(r) for r in m.tolist()]


def rational_rank(rows: Sequence[Sequence[Any]], ncols: int) -> int:
    """The exact rank of the matrix with these rows (0 for no rows or no columns).

    >>> rational_rank([[1, 1], [1, 1]], 2), rational_rank([], 4)
    (1, 0)
    """
    if check_nonnegative_int(ncols, "ncols") == 0 and _is_sequence(rows):
        return 0
    M = qmat(rows, ncols)
    return 0 if M.nrows() == 0 else int(M.rank())


def rational_rref(
    rows: Sequence[Sequence[Any]], ncols: int
) -> tuple[list[list[flint.fmpq]], list[int]]:
    """The nonzero rows of the reduced row echelon form and their pivot columns.

    >>> rational_rref([[0, 2, 4], [1, 1, 1]], 3)
    ([[1, 0, -1], [0, 1, 2]], [0, 1])
    """
    if check_nonnegative_int(ncols, "ncols") == 0 and _is_sequence(rows):
        return [], []
    M = qmat(rows, ncols)
    if M.nrows() == 0:
        return [], []
    R, r = M.rref()
    out = qrows(R)[: int(r)]
    pivots = [next(j for j, x in enumerate(row) if x != 0) for row in out]
    return out, pivots


def rational_nullspace(rows: Sequence[Sequence[Any]], ncols: int) -> list[list[flint.fmpq]]:
    """A basis of ``{x : rows @ x = 0}``: one vector per free column f of the reduced row
    echelon form, with ``x[f] = 1`` and zero on the other free columns.

    >>> rational_nullspace([[1, -1]], 2), rational_nullspace([], 2)
    ([[1, 1]], [[1, 0], [0, 1]])
    """
    R, pivots = rational_rref(rows, ncols)
    pset = set(pivots)
    basis = []
    for f in range(ncols):
        if f in pset:
            continue
        x = [_Q0] * ncols
        x[f] = _Q1
        for i, p in enumerate(pivots):
            x[p] = -R[i][f]
        basis.append(x)
    return basis


def rational_combination(
    coefs: Sequence[Any], vecs: Sequence[Sequence[Any]], n: int
) -> list[flint.fmpq]:
    """``sum_i coefs[i] * vecs[i]`` (vectors of length ``n``; the zero vector when empty).

    >>> rational_combination([2, -1], [[1, 0], [1, 1]], 2)
    [1, -1]
    """
    V = qmat(vecs, n)
    c = qmat([coefs], V.nrows())
    if V.nrows() == 0:
        return [_Q0] * int(n)
    return qrows(c * V)[0]


def rational_matmul(
    A: Sequence[Sequence[Any]], B: Sequence[Sequence[Any]], inner: int, ncols: int
) -> list[list[flint.fmpq]]:
    """The product of an ``len(A) x inner`` and an ``inner x ncols`` matrix, as rows.

    >>> rational_matmul([[1, 2]], [[3], [4]], 2, 1)
    [[11]]
    >>> rational_matmul([[]], [], 0, 2)
    [[0, 0]]
    """
    MA, MB = qmat(A, inner), qmat(B, ncols)
    if MB.nrows() != MA.ncols():
        raise InputError(f"B must have inner = {MA.ncols()} rows; got {MB.nrows()}")
    if MA.nrows() == 0:
        return []
    if MA.ncols() == 0:
        return [[_Q0] * int(ncols) for _ in range(MA.nrows())]
    return qrows(MA * MB)


def rational_solve(
    A: Sequence[Sequence[Any]], B: Sequence[Sequence[Any]], n: int, ncols: int
) -> list[list[flint.fmpq]]:
    """The solution X of ``A X = B`` for an invertible ``n x n`` matrix ``A``.

    >>> rational_solve([[2, 0], [0, 4]], [[1], [1]], 2, 1)
    [[1/2], [1/4]]
    """
    MA, MB = qmat(A, n), qmat(B, ncols)
    if MA.nrows() != MA.ncols() or MB.nrows() != MA.ncols():
        raise InputError(
            f"rational_solve needs an n x n matrix A and n = {MA.ncols()} rows "
            f"of B; got {MA.nrows()} and {MB.nrows()} rows"
        )
    try:
        return qrows(MA.solve(MB))
    except ZeroDivisionError:
        raise InputError(f"A is singular: {short_repr(A)}") from None
