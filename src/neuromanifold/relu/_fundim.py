"""Functional dimension of a ReLU network: the rank of the stacked parameter Jacobians.

The functional dimension at theta (on a domain) is the rank of the Jacobian of
``theta -> (f_theta(x_1), ..., f_theta(x_N))`` maximized over finite sets of inputs where
the map is differentiable. On a linear region R the parameter gradient of ``f_theta(x)`` is
an affine function of x, so its span over R is spanned by its values at any d+1 affinely
independent points of R, e.g. a point c of R and ``c + rho e_k`` for small ``rho > 0``;
since ``J(c + rho e_k) = J(c) + rho dJ/dx_k`` we use the rows ``J(c)`` and ``dJ/dx_k``
directly, which gives the same rank without choosing rho. Taking every region attains the
maximum.

Each hidden neuron's rescaling symmetry is a null direction of every such Jacobian, so
``P - (number of hidden neurons)`` is an upper bound, and once the rows stacked so far
reach it no region can add anything. So the regions are not all needed: rows are stacked
first for the regions of random points of the domain (seeded), then, only if the bound is
not reached, for every region of the streamed enumeration
(:func:`neuromanifold.relu.iter_regions`); the rank is updated every P/2 rows and the
computation stops at the bound (``docs/relu_arrangement.md`` §5).

**Exactly** (``tol = 0``): a random point is used only if its pre-activations, computed
exactly at its rational value, are all non-zero (it is then inside its region). Its rows
are exact rationals; the rank of the rows reduced modulo the prime ``2**61 - 1`` is a
certified lower bound of their rational rank, so reaching the bound proves the rank.
Below the bound (every region used) the rational rank of all rows (``fmpq_mat``) decides.

**At a tolerance** (``tol > 0``, ``docs/relu.md``, "Tolerances"): a region counts only if it
is thicker than ``tol``, i.e. it contains a ball of radius ``> tol * max(1, ||x||_inf)``
around some point ``x`` (an LP after homogenization for enumerated regions; for a random
point, the ball around the point itself). A region thinner than that, such as the sliver
between two hyperplanes that coincide up to rounding, changes the function only on a set of
relative width ``<= tol``. The rows are computed in floats on the network balanced by
power-of-two neuron rescalings (the function is the same and the column-normalized matrix
too), each row scaled by a power of two; the stack is compressed to its QR factor (same
singular values after normalizing the columns) and the rank is
:func:`neuromanifold._tolerance.numerical_rank`: singular values of the column-normalized
matrix above ``tol`` times the largest, with the smallest one counted and the largest one
dropped reported.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flint
import numpy as np

from .._results import Result
from .._tolerance import DEFAULT_TOL, check_tol, numerical_rank
from .._validation import check_bool
from ._domain import Domain, as_domain
from ._engine import Engine, ExactNet, exact_forward, iter_cells, layer_maps, thickness

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
        num_regions: regions used: the sampled ones, then (unless the bound was reached)
            every region of the enumeration (a sampled region is then counted twice).
        num_points: sample points represented (``(num_regions - num_thin_regions) * (d + 1)``).
        smooth: no neuron has pre-activation identically 0 on a region used; if False,
            theta -> f_theta(x) is not differentiable there and ReLU'(0) = 0 is used.
        certified: the rank is exact rational arithmetic over an exact region list
            (``tol == 0``), or a rank at ``tol`` that reaches the bound (then it is the
            exact rank too); otherwise a rank at ``tol > 0`` is numerical.
        domain: the domain analysed.
        tol: the relative tolerance used (0.0 = exact).
        smallest_counted, largest_dropped: the gap that decided the rank: the smallest
            singular value counted and the largest one dropped, relative to the largest
            (``None`` when there is none, and when ``tol == 0``).
        num_thin_regions: regions left out as thinner than ``tol`` (0 when ``tol == 0``).
        num_sampled_regions: regions reached first through random points of the domain
            (seeded; a point counts when a ball around it of radius above
            ``tol * max(1, ||x||_inf)`` lies in its region; exactly checked when
            ``tol == 0``); included in ``num_regions``.
        enumerated: the regions were enumerated (False: the sampled ones already
            reached the bound, so no region can add to the rank).
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
    num_sampled_regions: int = 0
    enumerated: bool = True


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


#: Prime modulus of the exact lower bound on the rank (tol = 0): the rank of the rows
#: reduced modulo a prime never exceeds their rank over the rationals.
_PRIME = (1 << 61) - 1


def _balanced(params: list) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Float copies of the layers with every hidden neuron rescaled by a power of two (its
    incoming row and bias by ``2**-e``, its outgoing column by ``2**e``) so that its largest
    incoming entry lies in ``[1/2, 1)``. The function is the same; Jacobian columns change
    by exact powers of two only (so the column-normalized matrix is the same), and two
    networks that differ by power-of-two rescalings balance to the same floats."""
    Ws = [np.array(W, dtype=float) for W, _ in params]
    bs = [np.array(b, dtype=float) for _, b in params]
    for l in range(len(Ws) - 1):
        aug = np.hstack([Ws[l], bs[l][:, None]])
        peak = np.max(np.abs(aug), axis=1)
        e = np.where(peak > 0, np.frexp(np.where(peak > 0, peak, 1.0))[1], 0)
        Ws[l] = np.ldexp(Ws[l], -e[:, None])
        bs[l] = np.ldexp(bs[l], -e)
        Ws[l + 1] = np.ldexp(Ws[l + 1], e[None, :])
    return Ws, bs


def _float_rows(Ws: list, bs: list, patterns, c: np.ndarray) -> np.ndarray:
    """The rows of :func:`_region_rows` in floats (same order: output, then point/direction;
    columns in ``ReLUNet.flatten`` order), for the (balanced) float layers."""
    d = c.size
    L = len(Ws)
    m = Ws[-1].shape[0]
    U = np.zeros((d + 1, d + 1))
    U[:d, 0] = c
    U[:d, 1:] = np.eye(d)
    U[d, 0] = 1.0
    H = np.hstack([np.eye(d), np.zeros((d, 1))])
    masks = [np.asarray(p, dtype=bool) for p in patterns]
    V = []
    for l in range(L):
        V.append(H @ U)
        if l < L - 1:
            Z = Ws[l] @ H
            Z[:, d] += bs[l]
            H = Z * masks[l][:, None]
    G = [None] * L
    G[L - 1] = np.eye(m)
    for l in range(L - 1, 0, -1):
        G[l - 1] = (G[l] @ Ws[l]) * masks[l - 1][None, :]
    blocks = []
    for l in range(L):
        blocks.append(np.einsum("oi,jt->otij", G[l], V[l]).reshape(m * (d + 1), -1))
        blocks.append(np.einsum("oi,t->oti", G[l], U[d]).reshape(m * (d + 1), -1))
    return np.hstack(blocks)


def _row_scaled(rows: np.ndarray) -> np.ndarray:
    """Each row times the power of two that brings its largest entry into ``[1/2, 1)``."""
    peak = np.max(np.abs(rows), axis=1)
    e = np.where(peak > 0, np.frexp(np.where(peak > 0, peak, 1.0))[1], 0)
    return np.ldexp(rows, -e[:, None])


class _FloatRank:
    """Numerical rank at ``tol`` of a growing stack of rows, in memory bounded by the
    number of columns: the stack is compressed to the triangular factor of its QR
    decomposition (same Gram matrix, so the same column norms and the same singular
    values after normalizing the columns, which is what :func:`numerical_rank` does)."""

    def __init__(self, P: int, tol: float):
        self.P, self.tol = P, tol
        self.R = np.zeros((0, P))
        self.buffer: list[np.ndarray] = []
        self.pending = 0
        self.rank, self.smallest, self.dropped = 0, None, None

    def add(self, rows: np.ndarray) -> None:
        self.buffer.append(rows)
        self.pending += rows.shape[0]

    def due(self) -> bool:
        return self.pending >= max(self.P // 2, 8)

    def update(self) -> int:
        """Compress and recompute the rank; returns it."""
        if self.buffer:
            stack = np.vstack([self.R] + self.buffer)
            self.buffer, self.pending = [], 0
            self.R = np.linalg.qr(stack, mode="r") if stack.shape[0] > self.P else stack
        if self.R.shape[0]:
            self.rank, self.smallest, self.dropped = numerical_rank(self.R, self.tol)
        return self.rank


class _ModRank:
    """Rank modulo :data:`_PRIME` of a growing stack of exact rows (a certified lower
    bound of their rational rank), kept as a reduced basis of at most P rows."""

    def __init__(self, P: int):
        self.P = P
        self.basis = None
        self.buffer: list = []
        self.pending = 0
        self.rank = 0

    def add(self, rows: list) -> None:
        self.buffer.extend(rows)
        self.pending += len(rows)

    def due(self) -> bool:
        return self.pending >= max(self.P // 2, 8)

    def update(self) -> int:
        if not self.buffer:
            return self.rank
        M = flint.fmpq_mat(len(self.buffer), self.P, [v for row in self.buffer for v in row])
        num, _ = M.numer_denom()  # the rows times a common denominator: the same rank
        new = flint.nmod_mat(num, _PRIME)
        self.buffer, self.pending = [], 0
        if self.basis is not None:
            ent = self.basis.entries() + new.entries()
            new = flint.nmod_mat(self.basis.nrows() + new.nrows(), self.P,
                                 [int(v) for v in ent], _PRIME)
        E, r = new.rref()
        self.rank = int(r)
        self.basis = flint.nmod_mat(r, self.P, [int(v) for v in E.entries()[:r * self.P]],
                                    _PRIME) if r else None
        return self.rank


#: Random points tried before the regions are enumerated (seeded, so deterministic).
_SAMPLES = 2000
_SAMPLE_BATCH = 250


def _sample_points(Ws, bs, dom, tol: float, rng) -> list:
    """Random points of the domain, one per activation pattern, each with a ball around
    it inside its region (and the domain) of radius ``> tol * max(1, ||x||_inf)`` and with
    every pre-activation's sign clear of rounding; yields ``(x, patterns)`` in batches."""
    from ._regions import _sample_domain
    d = dom.dim
    seen = set()
    dom_norm = np.linalg.norm(dom.A, axis=1) if dom.A.shape[0] else None
    for _ in range(0, _SAMPLES, _SAMPLE_BATCH):
        X = _sample_domain(dom, _SAMPLE_BATCH, rng)
        N = X.shape[0]
        need = tol * np.maximum(1.0, np.max(np.abs(X), axis=1))
        radius = np.full(N, np.inf)
        if dom_norm is not None:
            radius = np.min((dom.c[None, :] - X @ dom.A.T) / dom_norm[None, :], axis=1)
        ok = radius > need
        H = np.broadcast_to(np.hstack([np.eye(d), np.zeros((d, 1))]), (N, d, d + 1))
        pats = []
        for l in range(len(Ws) - 1):
            Z = np.einsum("ij,njk->nik", Ws[l], H)
            Z[:, :, d] += bs[l]
            z = np.einsum("nik,nk->ni", Z[:, :, :d], X) + Z[:, :, d]
            g = np.linalg.norm(Z[:, :, :d], axis=2)
            size = np.einsum("nik,nk->ni", np.abs(Z[:, :, :d]), np.abs(X)) + np.abs(Z[:, :, d])
            live = g > 0
            ok &= ~np.any((~live & (z == 0)) | (live & (np.abs(z) <= 1e-9 * size)), axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(live, np.abs(z) / np.where(live, g, 1.0), np.inf)
            radius = np.minimum(radius, np.min(r, axis=1, initial=np.inf))
            mask = z > 0
            pats.append(mask)
            H = Z * mask[:, :, None]
        ok &= radius > need
        batch = []
        for i in np.nonzero(ok)[0]:
            ps = [m[i] for m in pats]
            key = b"".join(np.packbits(m).tobytes() for m in ps)
            if key in seen:
                continue
            seen.add(key)
            batch.append((X[i], ps))
        yield batch


class _Selector:
    """Float Gram-Schmidt basis of the rows seen so far: tells which new rows add a
    direction (used only to choose which points get exact rows; the exact rank decides)."""

    def __init__(self, P: int):
        self.Q = np.zeros((0, P))

    def adds(self, rows: np.ndarray) -> bool:
        ref = float(np.max(np.linalg.norm(rows, axis=1), initial=0.0))
        if not ref > 0:
            return False
        R = rows - (rows @ self.Q.T) @ self.Q if self.Q.shape[0] else rows
        q, r = np.linalg.qr(R.T)
        new = np.abs(np.diag(r)) > 1e-8 * ref
        if not np.any(new):
            return False
        self.Q = np.vstack([self.Q, q[:, new].T])
        return True


def functional_dimension(params: Any, domain: Any = None, *, tol: Any = DEFAULT_TOL,
                         progress: bool = False) -> FunctionalDimension:
    """Functional dimension of a ReLU network on a domain, by exact or numerical rank.

    The regions are streamed (:func:`~neuromanifold.relu.iter_regions`) and their Jacobian
    rows stacked until the rank reaches the bound ``P - hidden`` (no region can add to it
    then) or the regions run out.

    Args:
        params: list of ``(W, b)`` pairs, as for :func:`regions`.
        domain: the sample inputs range over this domain (accepted forms as for
            :func:`regions`); a smaller domain can only lower the rank.
        tol: relative tolerance (see the module docs); ``0`` = exact rank.
        progress: a progress bar on stderr (regions used, current rank).

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
    progress = check_bool(progress, "progress")
    net = ExactNet.from_params(params)
    dom = as_domain(domain, net.d)
    engine = Engine(net.d)
    P = sum(W.size + b.size for W, b in net.params)
    hidden = sum(net.widths[1:-1])
    bound = P - hidden
    Ws, bs = _balanced(net.params)
    tracker = _FloatRank(P, tol) if tol > 0 else _ModRank(P)
    exact_rows: list = []  # tol == 0: every exact row, for the rational rank if needed
    smooth, thin, used = True, 0, 0
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(desc="functional dimension", unit="region", leave=False)
    # 1. random points: their regions' rows, until the rank reaches the bound
    sampled = 0
    selector = _Selector(P)
    rng = np.random.default_rng(0)
    done = False
    stalled = 0
    for batch in _sample_points(Ws, bs, dom, tol, rng):
        for x, pats in batch:
            rows_f = _float_rows(Ws, bs, pats, x)
            if tol > 0:
                tracker.add(_row_scaled(rows_f))
                sampled += 1
            elif selector.adds(rows_f):
                xq = [flint.fmpq(*float(v).as_integer_ratio()) for v in x]
                _, pre = exact_forward(net, xq)
                if any(z == 0 for layer in pre for z in layer) or not all(
                        (z > 0) == bool(m) for layer, ms in zip(pre, pats)
                        for z, m in zip(layer, ms)):
                    continue
                rows, _ = _region_rows(net, pats, xq)
                tracker.add(rows)
                exact_rows.extend(rows)
                sampled += 1
        if tracker.pending and (tracker.due() or tol == 0):
            before = tracker.rank
            if tracker.update() >= bound:
                done = True
                break
            # the sampled regions stopped adding rank: the enumeration takes over
            stalled = stalled + 1 if tracker.rank == before else 0
            if stalled >= 2:
                break
    if bar is not None:
        bar.set_postfix(rank=tracker.rank, bound=bound, refresh=False)
    # 2. every region (the rows of the sampled ones are among theirs)
    for cell in ([] if done else iter_cells([net], dom, engine)):
        used += 1
        if bar is not None:
            bar.update(1)
        if tol > 0 and thickness(cell, net.d) <= tol:
            thin += 1
            continue
        smooth = smooth and not cell.zero_preact
        if tol > 0:
            tracker.add(_row_scaled(_float_rows(Ws, bs, cell.patterns[0], cell.center_f)))
        else:
            rows, _ = _region_rows(net, cell.patterns[0], cell.center_q)
            tracker.add(rows)
            exact_rows.extend(rows)
        if tracker.due():
            rank = tracker.update()
            if bar is not None:
                bar.set_postfix(rank=rank, bound=bound, refresh=False)
            if rank >= bound:
                break
    if bar is not None:
        bar.close()
    rank = tracker.update()
    smallest = dropped = None
    if tol > 0:
        smallest, dropped = tracker.smallest, tracker.dropped
        # a rank at tol is a lower bound of the exact one (thin regions left out, singular
        # values far above rounding counted), which never exceeds the bound: at the bound
        # it is exact
        certified = rank == bound and smallest is not None and smallest > 1e-12
    else:
        # the rank modulo a prime is a lower bound of the rational one; below the bound
        # (every region used) the rational rank decides
        if rank < bound and exact_rows:
            rank = int(flint.fmpq_mat(len(exact_rows), P,
                                      [v for row in exact_rows for v in row]).rank())
        certified = True
    used += sampled
    return FunctionalDimension(rank, bound, rank == bound, P, hidden, used,
                               (used - thin) * (net.d + 1), smooth, certified, dom, tol,
                               smallest, dropped, thin, sampled, not done)
