"""Exact linear programming over the rationals (python-flint ``fmpq``).

Floating-point LP solvers (HiGHS) are fast but decide feasibility up to a tolerance.
These helpers turn their answers into certified statements, or decide exactly when the
floating-point answer is ambiguous:

* :func:`strictly_satisfies` checks a candidate point exactly;
* :func:`motzkin_certificate` rounds a solver's dual vector to an exact certificate that a
  system of strict inequalities (plus equations) has no solution;
* :func:`exact_lp_max` is a small dense two-phase simplex method (Bland's rule, so it
  terminates) in exact rational arithmetic, the slow fallback;
* :func:`strict_interior_point` decides exactly whether ``{x : A x < c, E x = e}`` is
  non-empty, returning a rational point of it.

Rows are given as lists of rationals (anything :func:`to_fmpq` accepts).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import flint

from .._errors import ComputationLimitError, InputError, short_repr
from .._validation import as_finite_array, check_positive_float
from ._rational import fmpq_rows, fmpq_vector, to_fmpq

__all__ = [
    "exact_lp_max",
    "strict_interior_point",
    "strictly_satisfies",
    "motzkin_certificate",
    "dot",
]

_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)


def dot(a: Sequence[flint.fmpq], x: Sequence[flint.fmpq]) -> flint.fmpq:
    """Exact inner product of two equally long sequences of ``fmpq``."""
    s = flint.fmpq(0)
    for ai, xi in zip(a, x):
        if ai != 0:
            s += ai * xi
    return s


def strictly_satisfies(
    A: Sequence[Sequence[Any]],
    c: Sequence[Any],
    x: Sequence[Any],
    E: Sequence[Sequence[Any]] = (),
    e: Sequence[Any] = (),
) -> bool:
    """Whether ``A x < c`` (every row strictly) and ``E x = e`` hold exactly.

    >>> strictly_satisfies([[1, 0], [0, 1]], [1, 1], [0.5, 0.999])
    True
    >>> strictly_satisfies([[1, 0]], [1], [1.0, 0.0])
    False
    """
    xq = fmpq_vector(x, "x")
    Aq, cq, Eq, eq = _system(A, c, E, e, len(xq))
    for row, ci in zip(Aq, cq):
        if not dot(row, xq) < ci:
            return False
    for row, ei in zip(Eq, eq):
        if dot(row, xq) != ei:
            return False
    return True


def _system(A: Any, c: Any, E: Any, e: Any, n: int | None) -> tuple[list, list, list, list]:
    """``A x < c, E x = e`` checked (rows of n columns, one right-hand side per row) and
    converted to ``fmpq``; n = None takes it from the first row of A (or E)."""
    Aq = fmpq_rows(A, "A", ncols=n)
    if n is None and Aq:
        n = len(Aq[0])
    Eq = fmpq_rows(E, "E", ncols=n)
    cq = fmpq_vector(c, "c", size=len(Aq))
    eq = fmpq_vector(e, "e", size=len(Eq))
    return Aq, cq, Eq, eq


def _null_space_basis(
    cols: list[list[flint.fmpq]], nrows: int
) -> tuple[list[int], list[list[flint.fmpq]]]:
    """Free column indices and a null-space basis of the matrix with the given columns.

    The basis vector for free column ``f`` has a 1 at ``f`` and 0 at the other free columns.
    """
    ncols = len(cols)
    if nrows == 0:
        return list(range(ncols)), [
            [_ONE if i == f else _ZERO for i in range(ncols)] for f in range(ncols)
        ]
    flat = [cols[j][i] for i in range(nrows) for j in range(ncols)]
    R, rank = flint.fmpq_mat(nrows, ncols, flat).rref()
    pivots: list[int] = []
    for i in range(rank):
        for j in range(ncols):
            if R[i, j] != 0:
                pivots.append(j)
                break
    free = [j for j in range(ncols) if j not in set(pivots)]
    basis = []
    for f in free:
        v = [_ZERO] * ncols
        v[f] = _ONE
        for i, p in enumerate(pivots):
            v[p] = -R[i, f]
        basis.append(v)
    return free, basis


def motzkin_certificate(
    A: Sequence[Sequence[Any]],
    c: Sequence[Any],
    y_hint: Sequence[float],
    E: Sequence[Sequence[Any]] = (),
    e: Sequence[Any] = (),
    mu_hint: Sequence[float] = (),
    *,
    rel: float = 1e-9,
) -> tuple[list[flint.fmpq], list[flint.fmpq]] | None:
    """An exact certificate that ``{x : A x < c, E x = e}`` is empty, or ``None``.

    By Motzkin's transposition theorem the system has no solution iff there are
    ``y >= 0, y != 0`` and ``mu`` (free) with ``A^T y + E^T mu = 0`` and
    ``c.y + e.mu <= 0`` (then ``0 = (A^T y + E^T mu).x < c.y + e.mu <= 0`` for a solution x).
    ``y_hint``/``mu_hint`` are floating-point multipliers (e.g. LP duals); their support
    and values are rounded to an exact vector of the null space, which is then checked.

    Returns:
        ``(y, mu)`` as lists of ``fmpq`` (a verified certificate), or ``None``.

    >>> y, mu = motzkin_certificate([[1], [-1]], [0, 0], [1.0, 1.0])
    >>> [str(v) for v in y]
    ['1', '1']
    >>> motzkin_certificate([[1], [-1]], [1, 1], [1.0, 1.0]) is None
    True
    """
    A, c, E, e = _system(A, c, E, e, None)
    m = len(A)
    y_hint = as_finite_array(y_hint, "y_hint", error=InputError).ravel().tolist()
    if len(y_hint) != m:
        raise InputError(f"y_hint must have one entry per row of A ({m}); got {len(y_hint)}")
    mu_hint = as_finite_array(mu_hint, "mu_hint", error=InputError).ravel().tolist()
    if len(mu_hint) > len(E):
        raise InputError(
            f"mu_hint must have at most one entry per row of E ({len(E)}); got {len(mu_hint)}"
        )
    rel = check_positive_float(rel, "rel")
    if m == 0:
        return None
    ymax = max((float(v) for v in y_hint), default=0.0)
    if not ymax > 0:
        return None
    support = [i for i in range(m) if float(y_hint[i]) > rel * ymax]
    found = round_certificate(
        [A[i] for i in support],
        [c[i] for i in support],
        E,
        e,
        [y_hint[i] for i in support],
        mu_hint,
    )
    if found is None:
        return None
    ys, mus = found
    y_full = [_ZERO] * m
    for i, v in zip(support, ys):
        y_full[i] = v
    return y_full, mus


def round_certificate(
    rows: Sequence,
    c_rows: Sequence,
    E: Sequence,
    e: Sequence,
    y_hint: Sequence[float],
    mu_hint: Sequence[float],
) -> tuple | None:
    """Round float multipliers to an exact Motzkin certificate of emptiness, or ``None``.

    ``rows`` (exact, ``rows x < c_rows``) are the support of the multipliers ``y_hint``;
    ``E x = e`` carries ``mu_hint`` (missing entries are 0). The hints are rounded to an
    exact vector of the null space of ``[rows; E]^T`` and kept when ``y >= 0``, ``y != 0``
    and ``c_rows.y + e.mu <= 0``. No input checks: the callers pass exact rows.

    Returns:
        ``(y, mu)`` as lists of ``fmpq`` (``y`` on ``rows``), or ``None``.
    """
    cols = [list(a) for a in rows] + [list(r) for r in E]
    hint = (
        [float(v) for v in y_hint] + [float(v) for v in mu_hint] + [0.0] * (len(E) - len(mu_hint))
    )
    free, basis = _null_space_basis(cols, len(cols[0]) if cols else 0)
    if not free:
        return None
    vec = [_ZERO] * len(cols)
    for f, b in zip(free, basis):
        w = to_fmpq(hint[f])
        if w != 0:
            vec = [vi + w * bi for vi, bi in zip(vec, b)]
    ys, mus = vec[: len(rows)], vec[len(rows) :]
    if any(v < 0 for v in ys) or all(v == 0 for v in ys):
        return None
    if dot(ys, list(c_rows)) + dot(mus, list(e)) > 0:
        return None
    return ys, mus


def _pivot(
    T: list[list[flint.fmpq]],
    rhs: list[flint.fmpq],
    obj: list[flint.fmpq],
    objval: list[flint.fmpq],
    r: int,
    col: int,
) -> None:
    """Pivot the tableau on entry (r, col); ``obj`` is the reduced-cost row."""
    row = T[r]
    piv = row[col]
    if piv != 1:
        inv = 1 / piv
        row[:] = [v * inv if v != 0 else v for v in row]
        rhs[r] = rhs[r] * inv
    nz = [j for j, v in enumerate(row) if v != 0]
    for i in range(len(T)):
        if i == r:
            continue
        f = T[i][col]
        if f != 0:
            Ti = T[i]
            for j in nz:
                Ti[j] = Ti[j] - f * row[j]
            rhs[i] = rhs[i] - f * rhs[r]
    f = obj[col]
    if f != 0:
        for j in nz:
            obj[j] = obj[j] - f * row[j]
        objval[0] = objval[0] + f * rhs[r]


def _deadline(time_limit: Any) -> float | None:
    """The ``time.monotonic()`` value at which a ``time_limit`` ends (``None``: none)."""
    if time_limit is None:
        return None
    return time.monotonic() + check_positive_float(time_limit, "time_limit")


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise ComputationLimitError(
            "the exact simplex method stopped at its time limit; raise time_limit (exact "
            "pivots on many-digit rationals are slow)"
        )


def _run_simplex(T, rhs, basis, obj, objval, allowed, deadline: float | None = None) -> str:
    """Maximize with reduced costs ``obj`` (entering columns: positive reduced cost); a
    :class:`ComputationLimitError` when a pivot starts after ``deadline`` (a pivot of a
    tableau of large rationals can take a tenth of a second, and a problem hundreds)."""
    while True:
        _check_deadline(deadline)
        enter = -1
        for j, v in enumerate(obj):
            if v > 0 and allowed[j]:
                enter = j  # Bland: smallest index
                break
        if enter < 0:
            return "optimal"
        best, best_ratio = -1, None
        for i, row in enumerate(T):
            a = row[enter]
            if a > 0:
                ratio = rhs[i] / a
                if (
                    best < 0
                    or ratio < best_ratio
                    or (ratio == best_ratio and basis[i] < basis[best])
                ):
                    best, best_ratio = i, ratio
        if best < 0:
            return "unbounded"
        _pivot(T, rhs, obj, objval, best, enter)
        basis[best] = enter


def _reduced_costs(cost, T, rhs, basis) -> tuple[list[flint.fmpq], list[flint.fmpq]]:
    """Reduced costs ``c_j - c_B B^-1 A_j`` of a tableau in canonical form, and the current
    objective value (in a one-element list, updated in place by :func:`_pivot`)."""
    obj = list(cost)
    objval = [_ZERO]
    for i, bcol in enumerate(basis):
        cb = cost[bcol]
        if cb != 0:
            obj = [o - cb * t for o, t in zip(obj, T[i])]
            objval[0] = objval[0] + cb * rhs[i]
    return obj, objval


def exact_lp_max(
    g: Sequence[Any],
    G: Sequence[Sequence[Any]] = (),
    h: Sequence[Any] = (),
    E: Sequence[Sequence[Any]] = (),
    e: Sequence[Any] = (),
    n: int | None = None,
    *,
    time_limit: float | None = None,
) -> tuple[str, list[flint.fmpq] | None, flint.fmpq | None]:
    """Maximize ``g.v`` subject to ``G v <= h`` and ``E v = e`` over free ``v`` in Q^n, exactly.

    A dense two-phase simplex method on ``v = p - q`` (p, q >= 0) with Bland's rule.
    Meant for the small problems where a floating-point solver's answer is ambiguous.
    ``time_limit`` (seconds): a :class:`~neuromanifold.ComputationLimitError` when it
    passes (checked before every pivot).

    Returns:
        ``(status, v, value)`` with status ``"optimal"``, ``"infeasible"`` or
        ``"unbounded"``; ``v`` and ``value`` are exact (``None`` unless optimal).

    >>> status, v, val = exact_lp_max([1, 1], [[1, 0], [0, 1], [1, 1]], [2, 2, 3])
    >>> status, str(val)
    ('optimal', '3')
    """
    # Whole: the two-phase simplex on one tableau; T, rhs, basis and the columns would all travel
    deadline = _deadline(time_limit)
    g = fmpq_vector(g, "g")
    if n is None:
        n = len(g)
    elif isinstance(n, bool) or not isinstance(n, int) or n != len(g):
        raise InputError(
            f"n must be the number of variables, len(g) = {len(g)}; got {short_repr(n)}"
        )
    Gq, hq, Eq, eq = _system(G, h, E, e, n)
    rows: list[tuple[list[flint.fmpq], flint.fmpq, bool]] = []  # (coeffs on v, rhs, is_eq)
    for row, hi in zip(Gq, hq):
        rows.append((row, hi, False))
    for row, ei in zip(Eq, eq):
        rows.append((row, ei, True))
    m = len(rows)
    n_ineq = sum(1 for r in rows if not r[2])
    # columns: p (n), q (n), slacks (n_ineq), artificials (m at most)
    ncol_base = 2 * n + n_ineq
    T: list[list[flint.fmpq]] = []
    rhs: list[flint.fmpq] = []
    basis: list[int] = []
    art_cols: list[int] = []
    slack_idx = 0
    ncol = ncol_base + m
    for i, (coef, b, is_eq) in enumerate(rows):
        row = [_ZERO] * ncol
        for j, v in enumerate(coef):
            row[j] = v
            row[n + j] = -v
        if not is_eq:
            row[2 * n + slack_idx] = _ONE
        sign = -1 if b < 0 else 1
        if sign < 0:
            row = [-v for v in row]
            b = -b
        if not is_eq and sign > 0:
            basis.append(2 * n + slack_idx)
        else:
            art = ncol_base + i
            row[art] = _ONE
            basis.append(art)
            art_cols.append(art)
        if not is_eq:
            slack_idx += 1
        T.append(row)
        rhs.append(b)
    allowed = [True] * ncol
    for j in range(ncol_base, ncol):
        allowed[j] = j in set(art_cols)
    # phase 1: maximize -sum(artificials)
    if art_cols:
        cost1 = [_ZERO] * ncol
        for j in art_cols:
            cost1[j] = -_ONE
        obj, objval = _reduced_costs(cost1, T, rhs, basis)
        _run_simplex(T, rhs, basis, obj, objval, allowed, deadline)
        if objval[0] < 0:
            return "infeasible", None, None
        # drive zero-level artificials out of the basis, drop redundant rows
        art_set = set(art_cols)
        i = 0
        while i < len(T):
            if basis[i] in art_set:
                col = next((j for j in range(ncol_base) if T[i][j] != 0), -1)
                if col < 0:
                    del T[i], rhs[i], basis[i]
                    continue
                _check_deadline(deadline)
                _pivot(T, rhs, obj, objval, i, col)
                basis[i] = col
            i += 1
        for j in art_cols:
            allowed[j] = False
    # phase 2
    cost = [_ZERO] * ncol
    for j in range(n):
        cost[j] = g[j]
        cost[n + j] = -g[j]
    obj, objval = _reduced_costs(cost, T, rhs, basis)
    status = _run_simplex(T, rhs, basis, obj, objval, allowed, deadline)
    if status == "unbounded":
        return "unbounded", None, None
    val = [_ZERO] * ncol
    for i, bcol in enumerate(basis):
        val[bcol] = rhs[i]
    v = [val[j] - val[n + j] for j in range(n)]
    return "optimal", v, dot(g, v)


def strict_interior_point(
    A: Sequence[Sequence[Any]],
    c: Sequence[Any],
    E: Sequence[Sequence[Any]] = (),
    e: Sequence[Any] = (),
    dim: int | None = None,
    *,
    time_limit: float | None = None,
) -> list[flint.fmpq] | None:
    """A rational point of ``{x : A x < c, E x = e}``, or ``None`` if it is empty (exact).

    Solves ``max s`` subject to ``A x + s <= c``, ``E x = e``, ``s <= 1`` exactly; the set
    is non-empty iff the optimum is positive. ``time_limit`` as in :func:`exact_lp_max`.

    >>> [str(v) for v in strict_interior_point([[1], [-1]], [1, 0])]
    ['1/2']
    >>> strict_interior_point([[1], [-1]], [0, 0]) is None
    True
    """
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 0):
        raise InputError(
            f"dim must be a nonnegative int (the number of variables); got {short_repr(dim)}"
        )
    A, c, E, e = _system(A, c, E, e, dim)
    if dim is None:
        if not A and not E:
            raise InputError("dim is needed when A and E have no rows")
        dim = len(A[0]) if A else len(E[0])
    G = [row + [_ONE] for row in A]
    G.append([_ZERO] * dim + [_ONE])
    h = c + [_ONE]
    Ee = [row + [_ZERO] for row in E]
    g = [_ZERO] * dim + [_ONE]
    status, v, val = exact_lp_max(g, G, h, Ee, e, n=dim + 1, time_limit=time_limit)
    if status != "optimal" or not v[dim] > 0:
        return None
    return v[:dim]
