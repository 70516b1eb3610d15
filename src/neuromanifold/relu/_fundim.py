"""Functional dimension of a ReLU network, certified by exact rational rank.

The functional dimension at theta (on a domain) is the rank of the Jacobian of
``theta -> (f_theta(x_1), ..., f_theta(x_N))`` maximized over finite sets of inputs where
the map is differentiable. On a linear region R the parameter gradient of ``f_theta(x)`` is
an affine function of x, so its span over R is spanned by its values at any d+1 affinely
independent points of R, e.g. the region's interior point c and ``c + rho e_k`` for small
``rho > 0``; since ``J(c + rho e_k) = J(c) + rho dJ/dx_k`` we use the rows ``J(c)`` and
``dJ/dx_k`` directly, which gives the same rank without choosing rho. Taking every region
attains the maximum; the rank is computed exactly (``fmpq_mat``), so it is certified.

Each hidden neuron's rescaling symmetry is a null direction of every such Jacobian, so
``P - (number of hidden neurons)`` is the generic upper bound.

**At a tolerance** (``tol > 0``, ``docs/relu.md``, "Tolerances"): a region counts only if it
is thicker than ``tol``, i.e. it contains a ball of radius ``> tol * max(1, ||x||_inf)``
around some point ``x`` (an LP after homogenization). A region thinner than that, such as
the sliver between two hyperplanes that coincide up to rounding, changes the function
only on a set of relative width ``<= tol``. The stacked rows are scaled exactly by powers
of two (columns, then rows) and the rank is
:func:`neuromanifold._tolerance.numerical_rank`: singular values of the column-normalized
matrix above ``tol`` times the largest, with the smallest one counted and the largest one
dropped reported. ``tol = 0`` keeps every region and the exact rank.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flint
import numpy as np  # noqa: F401  (the doctests use it)

from .._results import Result
from .._tolerance import DEFAULT_TOL, check_tol, numerical_rank
from ._domain import Domain
from ._engine import binary_exponent, layer_maps, pow2_floats, progress_iter
from ._lp import solve_lp
from ._regions import _compute

__all__ = ["FunctionalDimension", "functional_dimension"]


@dataclasses.dataclass(frozen=True, repr=False)
class FunctionalDimension(Result):
    """The functional dimension and its evidence.

    Attributes:
        rank: rank of the stacked parameter Jacobians (the functional dimension): exact
            when ``tol == 0``, else the numerical rank at ``tol``.
        bound: ``num_params - num_hidden`` (generic upper bound).
        at_bound: ``rank == bound``.
        num_params, num_hidden: P and the number of hidden neurons.
        num_regions: regions used (all of them).
        num_points: sample points represented (``(num_regions - num_thin_regions) * (d + 1)``).
        smooth: no neuron has pre-activation identically 0 on a region; if False, theta ->
            f_theta(x) is not differentiable there and ReLU'(0) = 0 is used.
        certified: the rank is exact rational arithmetic over an exact region list
            (``tol == 0``), or a rank at ``tol`` that reaches the bound (then it is the
            exact rank too); otherwise a rank at ``tol > 0`` is numerical.
        domain: the domain analysed.
        tol: the relative tolerance used (0.0 = exact).
        smallest_counted, largest_dropped: the gap that decided the rank: the smallest
            singular value counted and the largest one dropped, relative to the largest
            (``None`` when there is none, and when ``tol == 0``).
        num_thin_regions: regions left out as thinner than ``tol`` (0 when ``tol == 0``).
    """

    rank: int
    bound: int
    at_bound: bool
    num_params: int
    num_hidden: int
    num_regions: int
    num_points: int
    smooth: bool
    certified: bool
    domain: Domain
    tol: float = 0.0
    smallest_counted: float | None = None
    largest_dropped: float | None = None
    num_thin_regions: int = 0


def _region_rows(net, patterns, center_q) -> tuple[list[list[flint.fmpq]], bool]:
    """Rows ``J(c)`` and ``dJ/dx_k`` (one per output and per point/direction), exactly."""
    d = net.d
    L = net.num_layers
    Zs = layer_maps(net, patterns)
    smooth = True
    # augmented output maps of every layer's input: Hin[l] is the input map of layer l
    Hin = [flint.fmpq_mat(d, d + 1, [1 if k == j else 0 for j in range(d) for k in range(d + 1)])]
    for l in range(L - 1):
        n = len(patterns[l])
        ent = Zs[l].entries()
        D = flint.fmpq_mat(n, n)
        for i in range(n):
            if patterns[l][i]:
                D[i, i] = 1
            elif all(v == 0 for v in ent[i * (d + 1):(i + 1) * (d + 1)]):
                smooth = False
        Hin.append(D * Zs[l])
    # U: columns (c, 1), (e_1, 0), ..., (e_d, 0)
    U = flint.fmpq_mat(d + 1, d + 1)
    for k in range(d):
        U[k, 0] = center_q[k]
        U[k, k + 1] = 1
    U[d, 0] = 1
    m = net.widths[-1]
    # G_l = d output / d pre-activation of layer l, backwards
    G = [None] * L
    G[L - 1] = flint.fmpq_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
    for l in range(L - 1, 0, -1):
        n = len(patterns[l - 1])
        D = flint.fmpq_mat(n, n)
        for i in range(n):
            if patterns[l - 1][i]:
                D[i, i] = 1
        G[l - 1] = G[l] * net.Wq[l] * D
    blocks = []  # per layer: (G entries, V = Hin[l] * U entries, sizes)
    for l in range(L):
        V = Hin[l] * U
        blocks.append((G[l], V))
    rows = []
    for o in range(m):
        for t in range(d + 1):
            row = []
            for l in range(L):
                Gl, V = blocks[l]
                n_out, n_in = Gl.ncols(), V.nrows()
                g = [Gl[o, i] for i in range(n_out)]
                v = [V[j, t] for j in range(n_in)]
                for i in range(n_out):
                    gi = g[i]
                    row.extend(gi * vj for vj in v)
                ulast = U[d, t]
                row.extend(gi * ulast for gi in g)
            rows.append(row)
    return rows, smooth


def _thickness(cell, d: int) -> float:
    """Largest ``r`` such that the cell contains a ball of radius ``r * max(1, ||x||_inf)``
    around some ``x`` (homogenized: a ball of radius r around y in ``{a.y <= c s}``,
    ``|y| <= 1``, ``0 <= s <= 1``); 1.0 when the LP cannot tell (the cell is kept)."""
    k = cell.rows_f.shape[0]
    if k == 0:
        return 1.0
    A = np.zeros((k, d + 2))
    A[:, :d] = cell.rows_f
    A[:, d] = -cell.offs_f
    A[:, d + 1] = np.linalg.norm(cell.rows_f, axis=1)
    c = np.zeros(d + 2)
    c[d + 1] = -1.0
    lb = np.concatenate([np.full(d, -1.0), [0.0, 0.0]])
    ub = np.ones(d + 2)
    sol = solve_lp(c, A, np.zeros(k), lb=lb, ub=ub)
    if sol.status != "optimal":  # pragma: no cover - the cell is full-dimensional
        return 1.0
    return float(sol.x[d + 1])


def _scaled_floats(rows: list, P: int) -> np.ndarray:
    """Float matrix of exact rows, columns then rows scaled by powers of two (exactly), so
    that nothing under- or overflows and neuron rescalings by powers of two give the same
    matrix."""
    col_e = [None] * P
    for row in rows:
        for j, v in enumerate(row):
            if v != 0:
                e = binary_exponent(v)
                if col_e[j] is None or e > col_e[j]:
                    col_e[j] = e
    f = [flint.fmpq(1) if e is None else (flint.fmpq(1, 2 ** e) if e >= 0 else flint.fmpq(2 ** -e))
         for e in col_e]
    return np.array([pow2_floats([v * f[j] for j, v in enumerate(row)])[0] for row in rows]
                    ).reshape(len(rows), P)


def functional_dimension(params: Any, domain: Any = None, *, tol: Any = DEFAULT_TOL,
                         progress: bool = False) -> FunctionalDimension:
    """Functional dimension of a ReLU network on a domain, by exact or numerical rank.

    Args:
        params: list of ``(W, b)`` pairs, as for :func:`regions`.
        domain: the sample inputs range over this domain (accepted forms as for
            :func:`regions`); a smaller domain can only lower the rank.
        tol: relative tolerance (see the module docs); ``0`` = exact rank over every region.
        progress: progress bars on stderr (regions, then Jacobian rows).

    Returns:
        A :class:`FunctionalDimension` result: the rank, its gap and the bound P - hidden.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); W2 = np.ones((1, 2))
    >>> fd = functional_dimension([(W1, np.zeros(2)), (W2, np.zeros(1))])
    >>> fd.rank, fd.bound, fd.largest_dropped is not None
    (7, 7, True)
    >>> functional_dimension([(W1, np.zeros(2)), (W2, np.zeros(1))], tol=0).rank
    7
    """
    tol = check_tol(tol)
    R, cells, net, _ = _compute(params, domain, progress)
    P = sum(W.size + b.size for W, b in net.params)
    hidden = sum(net.widths[1:-1])
    all_rows: list = []
    smooth = True
    thin = 0
    for cell in progress_iter(cells, progress, "jacobian rows", "region"):
        if tol > 0 and _thickness(cell, net.d) <= tol:
            thin += 1
            continue
        rows, sm = _region_rows(net, cell.patterns[0], cell.center_q)
        smooth = smooth and sm
        all_rows.extend(rows)
    rank, smallest, dropped = 0, None, None
    if all_rows and tol == 0:
        M = flint.fmpq_mat(len(all_rows), P, [v for row in all_rows for v in row])
        rank = int(M.rank())
    elif all_rows:
        rank, smallest, dropped = numerical_rank(_scaled_floats(all_rows, P), tol)
    # a rank at tol is a lower bound of the exact one (thin regions left out, singular values
    # far above rounding counted), which never exceeds the bound: at the bound it is exact
    certified = tol == 0 or (rank == P - hidden and smallest is not None and smallest > 1e-12)
    return FunctionalDimension(rank, P - hidden, rank == P - hidden, P, hidden, len(cells),
                               (len(cells) - thin) * (net.d + 1), smooth, certified, R.domain, tol,
                               smallest, dropped, thin)
