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
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flint
import numpy as np  # noqa: F401  (the doctests use it)

from .._results import Result
from ._domain import Domain
from ._engine import layer_maps, progress_iter
from ._regions import _compute

__all__ = ["FunctionalDimension", "functional_dimension"]


@dataclasses.dataclass(frozen=True, repr=False)
class FunctionalDimension(Result):
    """The functional dimension and its evidence.

    Attributes:
        rank: exact rank of the stacked parameter Jacobians (the functional dimension).
        bound: ``num_params - num_hidden`` (generic upper bound).
        at_bound: ``rank == bound``.
        num_params, num_hidden: P and the number of hidden neurons.
        num_regions: regions used (all of them).
        num_points: sample points represented (``num_regions * (d + 1)``).
        smooth: no neuron has pre-activation identically 0 on a region; if False, theta ->
            f_theta(x) is not differentiable there and ReLU'(0) = 0 is used.
        certified: the rank is exact rational arithmetic over an exact region list.
        domain: the domain analysed.
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


def functional_dimension(params: Any, domain: Any = None, progress: bool = False
                         ) -> FunctionalDimension:
    """Functional dimension of a ReLU network on a domain, by exact rank.

    Args:
        params: list of ``(W, b)`` pairs, as for :func:`regions`.
        domain: the sample inputs range over this domain (accepted forms as for
            :func:`regions`); a smaller domain can only lower the rank.
        progress: progress bars on stderr (regions, then Jacobian rows).

    Returns:
        A :class:`FunctionalDimension` result: the exact rank and the bound P - hidden.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); W2 = np.ones((1, 2))
    >>> fd = functional_dimension([(W1, np.zeros(2)), (W2, np.zeros(1))])
    >>> fd.rank, fd.bound
    (7, 7)
    """
    R, cells, net, _ = _compute(params, domain, progress)
    P = sum(W.size + b.size for W, b in net.params)
    hidden = sum(net.widths[1:-1])
    all_rows: list = []
    smooth = True
    for cell in progress_iter(cells, progress, "jacobian rows", "region"):
        rows, sm = _region_rows(net, cell.patterns[0], cell.center_q)
        smooth = smooth and sm
        all_rows.extend(rows)
    rank = 0
    if all_rows:
        M = flint.fmpq_mat(len(all_rows), P, [v for row in all_rows for v in row])
        rank = int(M.rank())
    return FunctionalDimension(rank, P - hidden, rank == P - hidden, P, hidden, len(cells),
                               len(cells) * (net.d + 1), smooth, True, R.domain)
