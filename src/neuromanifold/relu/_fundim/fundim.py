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
first for the regions of random points of the domain (seeded); the rank is updated every
P/2 rows and the computation stops at the bound (``docs/relu_arrangement.md`` §5).

**Layer by layer first** (networks with a hidden layer): the rank of the sampled regions'
rows is computed without forming them (:mod:`~neuromanifold.relu._fundim.layered_rank`:
the first layer's factor, the second layer's per first-layer neuron, the rest directly),
modulo a prime (at ``tol > 0`` a float pass first, checked by one modulo the prime, the
smaller returned). Reaching the bound that way proves it; below it, networks of up to
:data:`_DENSE_LIMIT` parameters (or any, with ``method="regions"``) go on with the stacked
rows below, larger ones return the lower bound with a note.

Below the bound, the rank can still be short because random points miss small regions,
or because the network really has a smaller functional dimension (two neurons never
active together, a dead neuron, ...). Two ways decide:

* ``method="milp"`` (the default when ``tol > 0``): the kernel of the stacked rows,
  modulo the rescaling directions and those already decided, gets a sparse basis; for
  each direction ``delta`` a MILP (:mod:`neuromanifold.relu._fundim.tangent`) asks whether the
  derivative ``d/dt f_{theta + t delta}`` exceeds the threshold anywhere in the domain.
  If it does, the region where it does gets its rows stacked (the rank grows); if not,
  the direction is decided. The threshold is ``tol`` times the direction's scale,
  ``sum_i |delta_i| max_x |d f / d theta_i| / max(1, |x|_inf)`` (over the sampled
  points), or the solver's resolution. The answer rests on the solver's floating-point
  bounds, so it is certified only when it reaches the bound; when a step does not work
  out (a MILP does not finish, a witness region does not add rank) the enumeration takes
  over and ``note`` says why.
* ``method="regions"`` (the default when ``tol == 0``): every region of the streamed
  enumeration (:func:`neuromanifold.relu.iter_regions`), until the bound.

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
import math
import time
from typing import Any

import flint
import numpy as np
import scipy.linalg

from ..._errors import ComputationLimitError, ParameterError
from ..._progress import progress_bar
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol, numerical_rank, svd
from ..._validation import as_real_array, check_bool, check_choice
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain, as_domain
from .._core.live import refuse_conv
from .._core.net import param_list
from .._engine.budget import Budget, check_budget
from .._engine.cells import ExactNet, exact_forward, layer_maps, thickness
from .._regions.regions import sample_domain
from .layered_rank import LayeredRank, certified_pattern, layered_rank, svd_seconds_per_cube
from .tangent import TangentMILP, interior_point

__all__ = [
    "rank_lower_bound",
    "proven_jacobian_rank",
    "FunctionalDimension",
    "functional_dimension",
]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
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
            reached the bound, so no region can add to the rank, or the MILP phase
            decided the rest).
        method: how the rank was decided: ``"sampling"`` (the sampled regions reached the
            bound, or, layered on a large network, stayed below it: a lower bound),
            ``"milp"`` (every direction left in the kernel of the stacked rows was shown
            by a MILP to leave the function unchanged up to ``tol``: a floating-point
            bound, so ``certified`` is False below the bound),
            ``"regions"`` (every region used) or ``"incomplete"`` (a budget ran out; the
            rank is a lower bound).
        num_milps: MILPs solved; num_lps: LPs solved by the region enumeration.
        layered: the rank of the sampled regions was computed layer by layer, without the
            P-column matrix (``docs/relu_arrangement.md`` §5): the first layer's factor
            (``d + 1`` times the rank of the derivatives in its pre-activations), the
            second layer's, once per first-layer neuron, then the rest directly, modulo
            a prime (at ``tol > 0`` in floats first, at ``tol``, checked modulo the prime;
            the smaller is returned, certified when that reaches the bound);
            ``smallest_counted`` and ``largest_dropped`` are then the narrowest gap of the
            float pass over those levels. ``levels`` holds the three ranks (empty when
            not layered).
        note: why a MILP phase handed over to the enumeration, if it did; else, for an
            uncertified rank, what it rests on and why it is not certified (empty only when
            certified).
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
    method: str = "regions"
    num_milps: int = 0
    num_lps: int = 0
    note: str = ""
    layered: bool = False
    levels: tuple[int, ...] = ()


def region_rows(net, patterns, center_q) -> tuple[list[list[flint.fmpq]], bool]:
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
            elif all(v == 0 for v in ent[i * (d + 1) : (i + 1) * (d + 1)]):
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
    incoming entry lies in ``[1/2, 1)``, and the output layer divided by the power of two
    that brings its largest entry into ``[1/2, 1)``. The function is the same up to that
    constant factor, so the rank is: Jacobian columns change by exact powers of two only
    (the column-normalized matrix is the same), and two networks that differ by
    power-of-two rescalings balance to the same floats. Without the last step a network
    scaled by 1e150 put ~1e300 into its output layer and its float rows lost rank."""
    Ws = [np.array(W, dtype=float) for W, _ in params]
    bs = [np.array(b, dtype=float) for _, b in params]
    for l in range(len(Ws) - 1):
        aug = np.hstack([Ws[l], bs[l][:, None]])
        peak = np.max(np.abs(aug), axis=1)
        e = np.where(peak > 0, np.frexp(np.where(peak > 0, peak, 1.0))[1], 0)
        Ws[l] = np.ldexp(Ws[l], -e[:, None])
        bs[l] = np.ldexp(bs[l], -e)
        with np.errstate(over="ignore"):
            Ws[l + 1] = np.ldexp(Ws[l + 1], e[None, :])
    with np.errstate(over="ignore", invalid="ignore"):
        peak = float(np.max(np.abs(np.hstack([Ws[-1], bs[-1][:, None]]))))
        if peak > 0 and math.isfinite(peak):
            E = int(np.frexp(peak)[1])
            Ws[-1], bs[-1] = np.ldexp(Ws[-1], -E), np.ldexp(bs[-1], -E)
    _check_rows_finite(Ws + bs)
    return Ws, bs


def _check_rows_finite(arrays: list) -> None:
    """A :class:`ParameterError` when float arithmetic overflowed on the way to the
    Jacobian's rows (weights near the float maximum): a rank of such rows means nothing."""
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ParameterError(
            "overflow: the Jacobian's rows are not finite in float64 (weights too close to "
            "the float maximum, even after rescaling each neuron by a power of two); "
            "divide the weights by a power of two"
        )


def _row_factors(Ws: list, bs: list, patterns, c: np.ndarray) -> tuple[list, list, np.ndarray]:
    """The factors of the rows of :func:`region_rows` at the point ``c`` of a region:
    per layer ``G_l`` (outputs x neurons of layer l: the derivative of the outputs in its
    pre-activations) and ``V_l`` (inputs of layer l x the d + 1 directions: the value at
    ``c``, then the derivatives along e_1 ... e_d), and ``U`` (the augmented directions).
    Row ``(o, t)`` has ``G_l[o, i] V_l[j, t]`` in the column of ``W_l[i, j]`` and
    ``G_l[o, i] U[d, t]`` in that of ``b_l[i]``."""
    d = c.size
    L = len(Ws)
    m = Ws[-1].shape[0]
    U = np.zeros((d + 1, d + 1))
    U[:d, 0] = c
    U[:d, 1:] = np.eye(d)
    U[d, 0] = 1.0
    masks = [np.asarray(p, dtype=bool) for p in patterns]
    V = [U[:d]]  # the first layer's inputs: H = [I | 0] applied to U
    H = None  # the affine map of the layers so far (neurons x (d + 1)), after layer 1
    for l in range(L - 1):
        if H is None:
            Z = np.hstack([Ws[0], bs[0][:, None]])
        else:
            Z = Ws[l] @ H
            Z[:, d] += bs[l]
        H = Z * masks[l][:, None]
        V.append(H @ U)
    G = [None] * L
    G[L - 1] = np.eye(m)
    for l in range(L - 1, 0, -1):
        G[l - 1] = (G[l] @ Ws[l]) * masks[l - 1][None, :]
    return G, V, U


def _float_rows(Ws: list, bs: list, patterns, c: np.ndarray) -> np.ndarray:
    """The rows of :func:`region_rows` in floats (same order: output, then point/direction;
    columns in ``ReLUNet.flatten`` order), for the (balanced) float layers."""
    G, V, U = _row_factors(Ws, bs, patterns, c)
    m, d = G[-1].shape[0], c.size
    blocks = []
    for Gl, Vl in zip(G, V):
        blocks.append(np.einsum("oi,jt->otij", Gl, Vl).reshape(m * (d + 1), -1))
        blocks.append(np.einsum("oi,t->oti", Gl, U[d]).reshape(m * (d + 1), -1))
    return np.hstack(blocks)


def _row_peaks(G: list, V: list, U: np.ndarray) -> np.ndarray:
    """The largest absolute entry of each row ``(o, t)`` of :func:`_float_rows`, from the
    factors: the entries are single products, and rounding is monotone, so the largest
    is the rounded product of the largest factors."""
    peak = np.zeros((G[0].shape[0], U.shape[0]))
    for Gl, Vl in zip(G, V):
        g = np.max(np.abs(Gl), axis=1)
        peak = np.maximum(peak, g[:, None] * np.max(np.abs(Vl), axis=0, initial=0.0)[None, :])
        peak = np.maximum(peak, g[:, None] * np.abs(U[-1])[None, :])
    return peak.reshape(-1)


def _value_colmax(G: list, V: list, U: np.ndarray) -> np.ndarray:
    """Per column, the largest absolute entry of the value rows ``(o, 0)`` of
    :func:`_float_rows`, from the factors (single products: monotone rounding)."""
    cols = []
    for Gl, Vl in zip(G, V):
        g = np.max(np.abs(Gl), axis=0)
        cols.append(np.outer(g, np.abs(Vl[:, 0])).reshape(-1))
        cols.append(g * abs(U[-1, 0]))
    return np.concatenate(cols)


def _sketched_rows(G: list, V: list, U: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``S @ _row_scaled(_float_rows(...))`` from the factors, without the
    ``m (d + 1) x P`` matrix (3.3 GB for one region of a 784-64-32-10 network): the
    weight block of layer l is ``G_l^T S_k V_l^T`` for each row ``S_k`` (as an m x (d + 1)
    matrix), its bias block ``G_l^T S_k U[d]^T``."""
    peak = _row_peaks(G, V, U)
    e = np.where(peak > 0, np.frexp(np.where(peak > 0, peak, 1.0))[1], 0)
    m, k = G[0].shape[0], S.shape[0]
    Sk = np.ldexp(S, -e[None, :]).reshape(k, m, -1)
    blocks = []
    for Gl, Vl in zip(G, V):
        T = np.einsum("kot,jt->koj", Sk, Vl)
        blocks.append(np.einsum("oi,koj->kij", Gl, T).reshape(k, -1))
        blocks.append(np.einsum("oi,ko->ki", Gl, Sk @ U[-1]))
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
        #: seconds per unit of :meth:`_work` of the last update (None before the first)
        self.per_work: float | None = None

    def _work(self) -> float:
        """The size of the next update of a k x P stack, in units of an n x n singular
        value computation's n**3: the singular values of a min(k, P) x P matrix, and for
        k > P first a QR (BLAS-3, about 4x faster per operation, measured: 2.5 s for the
        QR of 4,215 x 2,810 rows, 11.6 s for the singular values of the 2,810 x 2,810
        factor)."""
        k = self.R.shape[0] + self.pending
        n = min(k, self.P)
        return float(n) ** 2 * self.P + (k * n * self.P / 4.0 if k > self.P else 0.0)

    def predicted(self) -> float:
        """Seconds the next :meth:`update` is expected to take (14 s at P = 2,810 on one
        core, the 64-32-16-10 digits classifier), which a time limit must see coming:
        from the last update when there was one, else from a 256 x 256 calibration (it
        predicted 11.6 s for an update of 11.7 s, and 8.8 s for another of 14 s); with a
        margin of 1.2 either way. Stopping early wastes budget; starting what cannot finish
        breaks it."""
        if not self.buffer:
            return 0.0
        per_work = svd_seconds_per_cube() if self.per_work is None else self.per_work
        return 1.2 * per_work * self._work()

    def add(self, rows: np.ndarray) -> None:
        _check_rows_finite([rows])  # every float row of the rank passes here
        self.buffer.append(rows)
        self.pending += rows.shape[0]

    def due(self) -> bool:
        return self.pending >= max(self.P // 2, 8)

    def update(self) -> int:
        """Compress and recompute the rank (only when rows came in since); returns it."""
        if self.buffer:
            start, work = time.perf_counter(), self._work()
            stack = np.vstack([self.R] + self.buffer)
            self.buffer, self.pending = [], 0
            self.R = np.linalg.qr(stack, mode="r") if stack.shape[0] > self.P else stack
            self.rank, self.smallest, self.dropped = numerical_rank(self.R, self.tol)
            self.per_work = (time.perf_counter() - start) / work
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
            new = flint.nmod_mat(
                self.basis.nrows() + new.nrows(), self.P, [int(v) for v in ent], _PRIME
            )
        E, r = new.rref()
        self.rank = int(r)
        self.basis = (
            flint.nmod_mat(r, self.P, [int(v) for v in E.entries()[: r * self.P]], _PRIME)
            if r
            else None
        )
        return self.rank


#: Rows a sampled region contributes at most (random combinations of its ``m (d + 1)``).
_SKETCH_ROWS = 16

#: Random points tried before the regions are enumerated (seeded, so deterministic).
_SAMPLES = 2000
_SAMPLE_BATCH = 250
#: Doubles in one per-point layer map of :func:`_clear_points` (128 MB; a few such arrays
#: exist at once).
_CHUNK = 16_000_000


def _sample_points(Ws, bs, dom, tol: float, rng, seen: set | None = None) -> list:
    """Random points of the domain, one per activation pattern (none of those in
    ``seen``, which gets the new ones), each with a ball around it inside its region (and
    the domain) of radius ``> tol * max(1, ||x||_inf)`` and with every pre-activation's
    sign clear of rounding; yields ``(x, patterns)`` in batches."""
    seen = set() if seen is None else seen
    for _ in range(0, _SAMPLES, _SAMPLE_BATCH):
        yield _clear_points(Ws, bs, dom, tol, sample_domain(dom, _SAMPLE_BATCH, rng), seen)


def _clear_points(Ws, bs, dom, tol: float, X: np.ndarray, seen: set) -> list:
    """The points of ``X`` that pass the tests of :func:`_sample_points`, as ``(x,
    patterns)``, one per pattern not in ``seen`` (which gets the new ones)."""
    d = dom.dim
    width = max((W.shape[0] for W in Ws[:-1]), default=1)
    step = max(1, _CHUNK // (width * (d + 1)))
    if X.shape[0] > step:  # the layers' maps at every point take N * width * (d + 1)
        return [
            pt
            for s in range(0, X.shape[0], step)
            for pt in _clear_points(Ws, bs, dom, tol, X[s : s + step], seen)
        ]
    dom_norm = np.linalg.norm(dom.A, axis=1) if dom.A.shape[0] else None
    N = X.shape[0]
    need = tol * np.maximum(1.0, np.max(np.abs(X), axis=1))
    radius = np.full(N, np.inf)
    if dom_norm is not None:
        radius = np.min((dom.c[None, :] - X @ dom.A.T) / dom_norm[None, :], axis=1)
    ok = radius > need
    H = None
    pats = []
    for l in range(len(Ws) - 1):
        if H is None:  # the first layer's map is the same at every point
            Z = np.broadcast_to(np.hstack([Ws[0], bs[0][:, None]]), (N, Ws[0].shape[0], d + 1))
        else:
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
    return batch


def _never_active(points: list) -> str:
    """The neurons active at none of the sampled ``points`` (a neuron dead on the domain
    takes its weights out of the rank), in words; empty if there are none."""
    off = [
        (l + 1, j)
        for l in range(len(points[0][1]))
        for j in np.nonzero(~np.any([pats[l] for _, pats in points], axis=0))[0]
    ]
    if not off:
        return ""
    named = ", ".join(f"layer {l} neuron {j}" for l, j in off[:8])
    return (
        f"{len(off)} hidden neuron(s) active at none of them ({named}"
        + (", ..." if len(off) > 8 else "")
        + "): if dead on the domain (relu.neurons "
        "decides that on a box), their weights are not in the rank and the bound is "
        "not reached"
    )


def _never_together(points: list, short: set | None) -> str:
    """Pairs (a neuron of a layer after the first whose weights the rank misses, an
    input neuron active at some of ``points`` but never where the first is active), in
    words, or empty: the weight between them is seen by no sampled region; if the two are
    never active together on the domain, lowering it keeps the function (a move the
    fiber search does not prove)."""
    pats = [np.array([p[l] for _, p in points]) for l in range(len(points[0][1]))]
    pairs = []
    for l in range(1, len(pats)):
        if short is not None and l not in short:
            continue
        for j in np.nonzero(np.any(pats[l], axis=0))[0]:
            seen = np.any(pats[l - 1][pats[l][:, j]], axis=0)
            pairs += [(l + 1, int(j), l, int(i)) for i in np.nonzero(~seen & pats[l - 1].any(0))[0]]
    if not pairs:
        return ""
    named = "; ".join(
        f"layer {a} neuron {j} never with layer {b} neuron {i}" for a, j, b, i in pairs[:4]
    )
    return (
        f"{len(pairs)} pair(s) of neurons never active together at the sampled points ({named}"
        + ("; ..." if len(pairs) > 4 else "")
        + "): the weight between each pair is in no sampled region's rows; if they are "
        "never active together on the domain, lowering that weight keeps the function"
    )


def _pre_activations(Ws, bs, X: np.ndarray) -> list[np.ndarray]:
    """Every hidden layer's pre-activations at the rows of ``X``."""
    out, a = [], X
    for W, b in zip(Ws[:-1], bs[:-1]):
        out.append(a @ W.T + b)
        a = np.maximum(out[-1], 0.0)
    return out


def _rare_points(
    Ws, bs, dom, *, tol: float, points: list, rng, seen: set, check, short=None
) -> list:
    """Points (as :func:`_clear_points` gives them) in regions where a neuron takes the
    sign it rarely takes at ``points``: a neuron's incoming weights need regions where it
    is active whose inputs span what its layer's inputs span anywhere, random points may
    never reach a neuron of a deep layer, and a neuron active at every sampled point
    looks linear to the rank (an always-active block mixes freely), though on a box it
    may switch off near one corner only.

    Targets (largest shortfall first, up to :data:`_SAMPLE_BATCH` new regions in all):
    each neuron whose active regions' inputs (:func:`_input_spans`) span less than its
    layer's inputs over all of ``points``, and each neuron inactive at none of them; with
    ``short`` (the hidden layers, 0-based, whose weights the rank still misses:
    :func:`_short_layers`), only neurons of those layers, and for the inactive sign of
    the layers before them. For each, from up to :data:`_STARTS` points (where it is
    nearest the other sign, and random ones): steps on its pre-activation's linear piece
    until it has that sign (Newton steps; on a box towards the corner where the piece is
    extreme, so the point stays in the box), then random points around that one at four
    scales, kept where the neuron has that sign. ``check`` is called once per start (the
    budget)."""
    if not points:
        return []
    X = np.array([x for x, _ in points])
    Z = _pre_activations(Ws, bs, X)
    spans = _input_spans(Ws, bs, Z, rng)
    rare = []
    for l in range(len(Z)):
        aimed = short is None or l in short
        # the first layer's input map is the same on every region: one region spans all
        # (a rank over 4 n regions there is a (d + 1) x 32 (d + 1) SVD for nothing)
        full = _span_rank(spans[l][:1] if l == 0 else spans[l]) if aimed else 0
        for j in range(Z[l].shape[1]):
            on = Z[l][:, j] > 0
            if aimed:
                spanned = (full if on.any() else 0) if l == 0 else _span_rank(spans[l][on])
                if full - spanned > 0:
                    rare.append((spanned - full, l, j, 1))
            if (short is None or l + 1 in short) and not np.any(Z[l][:, j] < 0):
                rare.append((-1, l, j, -1))
    rare.sort()
    out: list = []
    d = X.shape[1]
    box = dom.kind == "box"
    for _, l, j, sign in rare:
        nearest = np.argsort(-sign * Z[l][:, j])[: _STARTS // 2]
        starts = np.concatenate([nearest, rng.choice(len(X), _STARTS - nearest.size)])
        for s in starts:
            if len(out) >= _SAMPLE_BATCH:
                return out
            check()
            x = _reach_sign(Ws, bs, dom, X[s].copy(), l, j, sign)
            if x is None:
                continue
            scales = max(1.0, float(np.linalg.norm(x))) * 10.0 ** rng.integers(-3, 1, (300, 1))
            Y = x + scales * rng.standard_normal((300, d)) / np.sqrt(d)
            if box:  # strictly inside: the points need a ball in the domain
                pad = 1e-9 * (dom.upper - dom.lower)
                Y = np.clip(Y, dom.lower + pad, dom.upper - pad)
            Y = Y[sign * _pre_activations(Ws, bs, Y)[l][:, j] > 0]
            out += _clear_points(Ws, bs, dom, tol, Y, seen)
    return out


#: Passes in a row that add nothing (random and rare batches) before the layered rank
#: stops.
_MISSES = 3

#: Starting points per rare neuron in :func:`_rare_points` (half where it is nearest the
#: other sign, half random): regions reached from one start share their inputs' span.
_STARTS = 6

#: Random homogeneous input directions per region in :func:`_input_spans`.
_SPAN_DIRECTIONS = 8


def _input_spans(Ws, bs, Z: list, rng) -> list[np.ndarray]:
    """Per hidden layer ``l`` (0-based), an array ``(N, n_{l-1} + 1, k)``: the images of
    ``k`` random homogeneous input directions ``u = (x, t)`` under the linear map of each
    point's region to layer ``l``'s homogeneous input (its pre-activations ``Z`` give the
    patterns). Their span over a set of regions is what those regions show of a neuron's
    incoming weights (the rows of a region carry every direction ``u``, not only its
    point)."""
    d = Ws[0].shape[1]
    N = Z[0].shape[0]
    U = rng.standard_normal((d + 1, _SPAN_DIRECTIONS))
    A = np.broadcast_to(U, (N,) + U.shape)
    out = [A]
    for l in range(len(Z)):
        pre = np.einsum("ij,njk->nik", Ws[l], A[:, :d]) + bs[l][None, :, None] * A[:, d:]
        A = np.concatenate([pre * (Z[l] > 0)[:, :, None], A[:, d:]], axis=1)
        d = Ws[l].shape[0]
        out.append(A)
    return out[:-1]


def _span_rank(A: np.ndarray) -> int:
    """The numerical rank (columns normalized, 1e-9 relative) of the directions ``A``
    (``(N, n, k)``) stacked side by side, from at most ``4 n`` of the ``N`` regions (more
    rarely add to the span; this is only a choice of where to look)."""
    if A.shape[0] == 0:
        return 0
    A = A[: 4 * A.shape[1]]
    M = np.transpose(A, (1, 0, 2)).reshape(A.shape[1], -1)
    norms = np.linalg.norm(M, axis=0)
    M = M[:, norms > 0] / norms[norms > 0]
    if M.shape[1] == 0:
        return 0
    s = svd(M, compute_uv=False)
    return int(np.count_nonzero(s > 1e-9 * s[0]))


def _short_layers(levels: tuple, widths: tuple) -> set | None:
    """The hidden layers (0-based) whose incoming weights the layered rank with these
    ``levels`` may still miss (module :mod:`~neuromanifold.relu._fundim.layered_rank`:
    level 1 holds the first layer's weights, level 2 the second's less the first
    layer's scalings, the rest the later layers' less theirs); ``None`` when the levels
    do not split so (the second level empty)."""
    d, n = widths[0], widths[1:]
    P = [n[l] * ((widths[l]) + 1) for l in range(len(n))]
    if levels[1] == 0:
        return None
    short = set()
    if levels[0] < n[0] * (d + 1):
        short.add(0)
    if levels[1] < P[1] - n[0]:
        short.add(1)
    if levels[2] < sum(P[2:]) - sum(n[1:-1]):
        short.update(range(2, len(n)))
    return short


def _reach_sign(Ws, bs, dom, x: np.ndarray, l: int, j: int, sign: int) -> np.ndarray | None:
    """A point where neuron ``j`` of hidden layer ``l`` (0-based) has the ``sign``
    (``+1`` active, ``-1`` inactive), searched from ``x`` along its linear pieces (Newton
    steps; on a box, towards the corner where the piece is extreme, just past the zero),
    or ``None``."""
    box = dom.kind == "box"
    for _ in range(_NEWTON_STEPS):
        z, g = _pre_activation_gradient(Ws, bs, x, l, j)
        if sign * z > 0:
            return x
        if not np.any(g):
            return None
        if box:
            step = np.where(sign * g > 0, dom.upper, dom.lower) - x
            gain = sign * float(g @ step)
            if gain <= 0:
                return None  # the piece's best corner is where x is
            x = x + min(1.0, 1.05 * abs(z) / gain) * step
        else:
            x = x - 1.05 * z / (g @ g) * g  # just past the zero of its linear piece
            if dom.kind == "orthant":  # stay in the domain: its nearest point
                x = np.maximum(x, 0.0)
    return x if sign * _pre_activations(Ws, bs, x[None])[l][0, j] > 0 else None


def _pre_activation_gradient(Ws, bs, x: np.ndarray, l: int, j: int):
    """Neuron ``j`` of hidden layer ``l`` (0-based) at ``x``: its pre-activation and its
    gradient there."""
    zs = _pre_activations(Ws, bs, x[None])
    g = Ws[l][j].copy()
    for k in range(l - 1, -1, -1):
        g = (g * (zs[k][0] > 0)) @ Ws[k]
    return float(zs[l][0, j]), g


#: Steps of :func:`_reach_sign` towards a neuron's other side.
_NEWTON_STEPS = 50


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


def _rescalings(Ws: list, bs: list) -> np.ndarray:
    """The rescaling direction of every hidden neuron (its incoming row and bias times
    +1, its outgoing column times -1), as columns in ``ReLUNet.flatten`` order."""
    P = sum(W.size + b.size for W, b in zip(Ws, bs))
    offsets = np.cumsum([0] + [W.size + b.size for W, b in zip(Ws, bs)])
    cols = []
    for l in range(len(Ws) - 1):
        n, n_in = Ws[l].shape
        for i in range(n):
            v = np.zeros(P)
            o = offsets[l]
            v[o + i * n_in : o + (i + 1) * n_in] = Ws[l][i]
            v[o + Ws[l].size + i] = bs[l][i]
            o2 = offsets[l + 1]
            n_out = Ws[l + 1].shape[0]
            v[o2 + np.arange(n_out) * n + i] = -Ws[l + 1][:, i]
            cols.append(v)
    return np.array(cols).T if cols else np.zeros((P, 0))


def _split(v: np.ndarray, Ws: list, bs: list) -> tuple[list, list]:
    """A flat parameter vector as ``(dWs, dbs)`` shaped like the layers."""
    dWs, dbs, k = [], [], 0
    for W, b in zip(Ws, bs):
        dWs.append(v[k : k + W.size].reshape(W.shape))
        k += W.size
        dbs.append(v[k : k + b.size])
        k += b.size
    return dWs, dbs


def _open_directions(R: np.ndarray, rank: int, known: np.ndarray, count: int) -> np.ndarray | None:
    """A sparse basis (columns) of the kernel of the stacked rows ``R`` modulo the known
    null directions ``known``: the directions whose derivative is still to be decided.

    The kernel is that of the column-normalized rows at their rank (zero columns are in
    it); the known directions are eliminated on pivot coordinates, and the rest is put in
    reduced echelon form on pivot coordinates, so a kernel direction along one parameter
    (a pair of neurons never active together, say) comes out as that parameter alone.
    ``None`` when the numbers do not fit (the known directions are not in the kernel).
    """
    P = R.shape[1]
    norms = np.linalg.norm(R, axis=0)
    nz = norms > 0
    A = R[:, nz] / norms[nz]
    _, _, Vt = np.linalg.svd(A)  # square Vt: its last rows span the kernel
    k_nz = int(nz.sum()) - rank
    if k_nz < 0:
        return None
    K = np.zeros((P, k_nz + int((~nz).sum())))
    K[nz, :k_nz] = (Vt[A.shape[1] - k_nz :].T / norms[nz][:, None]) if k_nz else 0.0
    K[np.nonzero(~nz)[0], k_nz + np.arange(int((~nz).sum()))] = 1.0
    if known.shape[1]:
        _, _, piv = scipy.linalg.qr(known.T, pivoting=True, mode="economic")
        piv = piv[: known.shape[1]]
        M = known[piv, :]
        if np.linalg.cond(M) > 1e12:
            return None
        K = K - known @ np.linalg.solve(M, K[piv, :])
    U, sv, _ = np.linalg.svd(K, full_matrices=False)
    if count <= 0 or U.shape[1] < count or (sv.size > count and sv[count] > 1e-6 * sv[0]):
        return None  # the kernel is not the known directions plus `count` more
    U = U[:, :count]
    _, _, piv = scipy.linalg.qr(U.T, pivoting=True, mode="economic")
    B = U @ np.linalg.inv(U[piv[:count], :])
    B[np.abs(B) < 1e-12 * np.max(np.abs(B), axis=0, keepdims=True)] = 0.0
    order = np.argsort(np.count_nonzero(B, axis=0), kind="stable")
    return B[:, order] / np.max(np.abs(B[:, order]), axis=0, keepdims=True)


_FD_METHODS = ("auto", "milp", "regions")

#: Parameters up to which a layered rank below the bound hands over to the stacked rows
#: (the MILP phase and the enumeration: their factorizations of P columns take about 5 s at 3,000).
_DENSE_LIMIT = 3000


def functional_dimension(
    params: Any,
    domain: Any = None,
    *,
    tol: Any = DEFAULT_TOL,
    method: str = "auto",
    max_regions: int | None = None,
    time_limit: float | None = None,
    progress: bool = False,
) -> FunctionalDimension:
    """Functional dimension of a ReLU network on a domain, by exact or numerical rank.

    Rows of the parameter Jacobian are stacked for the regions of random points first;
    if their rank stays below the bound ``P - hidden``, the directions still in their
    kernel are decided by mixed-integer programs (``method="milp"``: does any region of
    the domain move the function along them?) or by enumerating every region
    (``method="regions"``); see ``docs/relu_arrangement.md`` §5.

    Args:
        params: list of ``(W, b)`` pairs, as for :func:`regions`.
        domain: the sample inputs range over this domain (accepted forms as for
            :func:`regions`); a smaller domain can only lower the rank.
        tol: relative tolerance (see the module docs); ``0`` = exact rank.
        method: ``"auto"`` (``"milp"`` when ``tol > 0``; ``"regions"`` when ``tol == 0``,
            which keeps the exact answer certified), ``"milp"`` or ``"regions"``.
        max_regions: stop with a :class:`~neuromanifold.ComputationLimitError` when the
            enumeration passes this many regions (its ``partial`` holds the rank so far,
            a lower bound).
        time_limit: the same after this many seconds.
        progress: a progress bar on stderr (phase, regions, LPs, MILPs, current rank).

    Returns:
        A :class:`FunctionalDimension` result: the rank, its gap and the bound P - hidden,
        how it was decided (``method``) and whether that is certified.

    >>> W1 = np.array([[1.0, 0.0], [0.0, 1.0]]); W2 = np.ones((1, 2))
    >>> fd = functional_dimension([(W1, np.zeros(2)), (W2, np.zeros(1))])
    >>> fd.rank, fd.bound, fd.method, fd.largest_dropped is not None
    (7, 7, 'sampling', True)
    >>> functional_dimension([(W1, np.zeros(2)), (W2, np.zeros(1))], tol=0).rank
    7
    """
    refuse_conv(params, "functional_dimension")
    tol = check_tol(tol)
    check_choice(method, "method", _FD_METHODS)
    max_regions, time_limit = check_budget(max_regions, time_limit)
    progress = check_bool(progress, "progress")
    net = ExactNet.from_params(params)
    dom = as_domain(domain, net.d)
    if method == "auto":
        method = "milp" if tol > 0 else "regions"
    # the float rows (a shadow of the exact ones with tol=0) and the tolerance are
    # relative to the scale: it must be finite
    path_norm_scale(net.params)
    return _Run(net, dom, tol, max_regions, time_limit, progress, _floats_exact(params)).run(method)


def rank_lower_bound(
    params: Any,
    goal: int,
    *,
    domain: Any = None,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> tuple[int | None, bool, str]:
    """``(r, smooth, together)``: a proven lower bound ``r`` of the rank of the parameter
    Jacobian of ``params`` on ``domain`` (default R^d; exact: modulo a prime over regions
    whose patterns are proven at points of the domain, or over enumerated regions),
    searched until it reaches ``goal`` or the regions run out (at trained sizes: the
    layered rank of sampled regions; ``r = None`` when even that is too wide to
    factorize); ``smooth`` as for :class:`FunctionalDimension`; ``together``
    names the pairs of neurons never active together at the sampled regions where the
    layered rank stays below the goal (:func:`_never_together`, else empty). Past a budget
    a :class:`~neuromanifold.ComputationLimitError` whose ``partial`` holds the rank so
    far, a lower bound too."""
    max_regions, time_limit = check_budget(max_regions, time_limit)
    start = time.monotonic()
    net = ExactNet.from_params(params)
    path_norm_scale(net.params)
    dom = as_domain(domain, net.d)
    floats = _floats_exact(params)
    if floats:
        # the layered rank of sampled regions first (a fraction of a second where it
        # reaches the goal; enumerating the regions of 4-8-6-4-2 took 40 s), searched in
        # floats and checked once modulo the prime over the regions it used: what it
        # returns is at most that exact rank (_layered_result), so a proven lower bound,
        # in half the time of exact passes throughout (54 s at 784-128-64-32-10)
        run = _Run(net, dom, DEFAULT_TOL, max_regions, time_limit, False, floats)
        run.goal = min(goal, run.bound)
        try:
            res = run._layered("milp")
        except ComputationLimitError as exc:
            # stopped before its exact check ended: the ranks so far are float ranks,
            # which may exceed the exact one, so none of them is passed on as proven
            exc.partial = None
            raise
        if res is not None and (res.rank >= run.goal or run.P > _DENSE_LIMIT):
            return res.rank, res.smooth, run.together
        if res is None and run.P > _DENSE_LIMIT:
            return None, True, ""
        if time_limit is not None:
            time_limit = max(time_limit - (time.monotonic() - start), 1e-3)
    run = _Run(net, dom, 0.0, max_regions, time_limit, False, floats)
    run.goal = min(goal, run.bound)
    res = run.run("regions")
    return res.rank, res.smooth, ""


def _floats_exact(params: Any) -> bool:
    """Whether the entries passed are read as float64 arrays (not as exact objects: ints
    or Fractions), so that the floats are the network itself. ``params`` is valid."""
    return all(
        as_real_array(A, "params", exact=True).dtype != object
        for W, b in param_list(params)
        for A in (W, b)
    )


class _Run:
    """The state of one functional-dimension computation: the rows stacked so far (exact
    or float), a float copy for kernel directions, and the counts of the evidence."""

    def __init__(
        self,
        net: ExactNet,
        dom: Domain,
        tol: float,
        max_regions,
        time_limit,
        progress: bool,
        floats: bool,
    ):
        self.net, self.dom, self.tol = net, dom, tol
        # the clock, the region count and the engine (whose LPs stop at the deadline)
        self.budget = Budget(
            "functional_dimension",
            net.d,
            max_regions=max_regions,
            time_limit=time_limit,
            progress=False,
            detail=self._detail,
        )
        self.P = sum(W.size + b.size for W, b in net.params)
        self.hidden = sum(net.widths[1:-1])
        self.bound = self.P - self.hidden
        self.goal = self.bound  # the rank at which the search stops (rank_lower_bound lowers it)
        self.Ws, self.bs = _balanced(net.params)
        self.tracker = _FloatRank(self.P, tol) if tol > 0 else _ModRank(self.P)
        # tol == 0: the float images of the exact rows, for kernel directions
        self.shadow = self.tracker if tol > 0 else _FloatRank(self.P, 1e-9)
        self.exact_rows: list = []
        # largest |d f / d theta_i| / max(1, |x|_inf) seen: the scale of a direction
        self.colmax = np.zeros(self.P)
        self.smooth, self.thin, self.sampled = True, 0, 0
        self.num_milps, self.enumerated, self.note = 0, False, ""
        self.engine = self.budget.engine
        self.layered: LayeredRank | None = None  # the layered rank of the sampled regions
        self.floor = 0  # the largest rank found, a lower bound whichever route found it
        self.checked = False  # the layered rank modulo the prime reached the bound
        # below the bound: the pairs of neurons never active together, in words
        self.together = ""
        self.floats = floats  # every entry passed is a float64 value
        # the floats as given (not balanced): the residues and the pattern proofs read them
        self.Wf, self.bf = [W for W, _ in net.params], [b for _, b in net.params]
        self.rng = np.random.default_rng(1)  # the sketches of sampled regions (seeded)
        self.bar = None
        if progress:
            self.bar = progress_bar(desc="functional dimension", unit="region", leave=False)

    # -- rows ----------------------------------------------------------------------------
    def _add(
        self,
        patterns,
        x: np.ndarray,
        xq=None,
        sketch: bool = False,
        rows_f: np.ndarray | None = None,
    ) -> bool:
        """Stack the rows of the region of ``patterns`` through its interior point ``x``
        (exact point ``xq`` when ``tol == 0``; checked exactly to lie inside). With
        ``sketch`` (sampled regions, ``tol > 0``), a region with more than
        :data:`_SKETCH_ROWS` rows (many outputs or inputs) gives that many random
        combinations of them instead: rows in their span, so the rank stays a lower
        bound, at a fraction of the cost."""
        net, d = self.net, self.net.d
        scale = max(1.0, float(np.max(np.abs(x), initial=0.0)))
        if (
            rows_f is None
            and sketch
            and self.tol > 0
            and self.Ws[-1].shape[0] * (d + 1) > _SKETCH_ROWS
        ):
            # the sketch from the factors of the rows (the same rows, in milliseconds and
            # megabytes where the rows themselves take seconds and gigabytes)
            G, V, U = _row_factors(self.Ws, self.bs, patterns, x)
            self.colmax = np.maximum(self.colmax, _value_colmax(G, V, U) / scale)
            S = self.rng.standard_normal((_SKETCH_ROWS, G[0].shape[0] * (d + 1)))
            self.tracker.add(_row_scaled(_sketched_rows(G, V, U, S)))
            return True
        if rows_f is None:
            rows_f = _float_rows(self.Ws, self.bs, patterns, x)
        self.colmax = np.maximum(self.colmax, np.max(np.abs(rows_f[0 :: d + 1]), axis=0) / scale)
        if self.tol > 0:
            if sketch and rows_f.shape[0] > _SKETCH_ROWS:
                rows_f = self.rng.standard_normal((_SKETCH_ROWS, rows_f.shape[0])) @ _row_scaled(
                    rows_f
                )
            self.tracker.add(_row_scaled(rows_f))
            return True
        if xq is None:
            xq = [flint.fmpq(*float(v).as_integer_ratio()) for v in x]
            _, pre = exact_forward(net, xq)
            if any(z == 0 for layer in pre for z in layer) or not all(
                (z > 0) == bool(m) for layer, ms in zip(pre, patterns) for z, m in zip(layer, ms)
            ):
                return False
        rows, _ = region_rows(net, patterns, xq)
        self.tracker.add(rows)
        self.shadow.add(_row_scaled(rows_f))
        self.exact_rows.extend(rows)
        return True

    def _rank(self) -> int:
        pending = self.tracker.pending or self.shadow.pending
        if self.budget.deadline is not None and pending:
            # a factorization at trained sizes takes seconds: do not start one the budget
            # cannot hold (the partial result keeps the rank of the last one)
            upcoming = self.shadow.predicted() if self.shadow is not self.tracker else 0.0
            if isinstance(self.tracker, _FloatRank):
                upcoming += self.tracker.predicted()
            self.budget.check_time(
                self._partial,
                upcoming=upcoming,
                stage=f"the next rank update (expected to take {upcoming:.1f} s; not started)",
            )
        rank = self.tracker.update()
        if self.shadow is not self.tracker:
            self.shadow.update()
        if self.bar is not None:
            self.bar.set_postfix(
                rank=rank,
                bound=self.bound,
                lps=self.engine.counter.count,
                milps=self.num_milps,
                refresh=False,
            )
        return rank

    # -- budgets -------------------------------------------------------------------------
    def _detail(self) -> str:
        # the rank of the last update (a lower bound; no new factorization past a budget)
        rank = max(self.tracker.rank, self.floor)
        return (
            f"{self.sampled} sampled regions, {self.num_milps} MILPs, rank so far "
            f"{rank} (a lower bound) of the bound {self.bound}"
            + (
                "; method='milp' (with tol > 0) decides the rest without enumerating every region"
                if self.enumerated
                else ""
            )
        )

    def _partial(self) -> FunctionalDimension:
        return self._result(max(self.tracker.rank, self.floor), complete=False)

    def _check_time(self, upcoming: float = 0.0) -> None:
        self.budget.check_time(
            self._partial,
            upcoming=upcoming,
            stage=""
            if not upcoming
            else f"the layered rank (a step expected to take {upcoming:.1f} s; not started)",
        )

    # -- phases --------------------------------------------------------------------------
    def run(self, method: str) -> FunctionalDimension:
        try:
            if len(self.net.params) >= 2:
                done = self._layered(method)
                if done is not None:
                    return done
            rank = self._sample()
            if rank < self.goal and method == "milp":
                outcome = self._milp()
                if outcome == "certified":
                    return self._result(self._rank(), method="milp")
                self.note = (
                    f"the MILP phase was inconclusive ({outcome}); every region was enumerated"
                )
            if self._rank() < self.goal:
                self._enumerate()
            return self._result(self._rank(), method="regions" if self.enumerated else "sampling")
        finally:
            if self.bar is not None:
                self.bar.close()

    def _layered(self, method: str) -> FunctionalDimension | None:
        """The layered rank (:mod:`~neuromanifold.relu._fundim.layered_rank`) of the
        regions of random points, batch by batch, until it reaches the bound or stops
        growing; when it stalls, once more with regions where rarely active neurons are
        active and larger random subspaces. Returns the result (:meth:`_layered_result`)
        when it reached the bound, or when the rank stays below it on a network too
        large for the stacked rows the other routes need (unless ``method="regions"``
        asks for them); else None, and the stacked rows take over."""
        exact = self.tol == 0
        if exact and not self.floats:
            return None  # the residues are those of the floats: other entries are exact
        Wf, bf = self.Wf, self.bf
        rng = np.random.default_rng(0)
        seen: set = set()
        points: list = []
        batches = _sample_points(self.Ws, self.bs, self.dom, self.tol, rng, seen)
        slack, misses, spent, rare = 16, 0, False, False
        last = None  # (seconds, regions) of the last pass
        while True:
            self._check_time()
            # random batches and batches of rare signs take turns (the rare ones aim at
            # what the rank misses); once the random points are spent, rare ones only
            rare = spent or (not rare and self.layered is not None)
            if rare:
                batch = _rare_points(
                    self.Ws,
                    self.bs,
                    self.dom,
                    tol=self.tol,
                    points=points,
                    rng=rng,
                    seen=seen,
                    check=self._check_time,
                    short=None
                    if self.layered is None
                    else _short_layers(self.layered.levels, tuple(self.net.widths)),
                )
            else:
                batch = next(batches, None)
                if batch is None:
                    spent = True
                    continue
            new = [pt for pt in batch if not exact or certified_pattern(Wf, bf, *pt)]
            points += new
            if not new:
                if spent and rare:  # no region at all, or none the rare signs reach
                    break
                continue
            if last is not None:  # a pass over more regions takes longer (its products
                # grow with them; its last rank is checked on its own)
                self._check_time(upcoming=last[0] * len(points) / last[1])
            started = time.perf_counter()
            found = layered_rank(
                Wf if exact else self.Ws,
                bf if exact else self.bs,
                [pats for _, pats in points],
                tol=self.tol,
                exact=exact,
                slack=slack,
                check=self._check_time,
            )
            last = (time.perf_counter() - started, len(points))
            if found is None:
                return None  # the last level would be too wide to factorize
            grew = self.layered is None or found.rank > self.layered.rank
            if grew:  # each pass is a lower bound: the largest is kept
                self.layered, self.floor, misses = found, found.rank, 0
            self.sampled = len(points)
            if self.bar is not None:
                self.bar.update(len(new))
                self.bar.set_postfix(rank=found.rank, bound=self.bound, refresh=False)
            if found.rank >= self.goal:
                return self._layered_result(points, slack)
            if not grew:
                misses += 1
                if misses >= _MISSES:
                    break
                slack = 64  # larger random subspaces, in case theirs fell short
        if self.layered is None or self.P <= _DENSE_LIMIT or method == "regions":
            self.layered, self.sampled = None, 0
            return None
        return self._layered_result(points, slack)

    def _layered_result(self, points: list, slack: int) -> FunctionalDimension:
        """The layered rank as the result. With ``tol > 0`` the float rank is checked by
        the exact one modulo the prime over the same regions (those whose pattern
        :func:`certified_pattern` proves): that one is a certified lower bound of the
        exact rank, the float one is not (a null space computed in floats can leave
        rounding in the next level), so the result is certified only when the exact
        rank reaches the bound too, and the smaller of the two is returned."""
        found, note = self.layered, ""
        if self.tol > 0:
            Wf, bf = self.Wf, self.bf
            pats = [pp for x, pp in points if certified_pattern(Wf, bf, x, pp)]
            check = None
            # the smaller random subspaces first (their products and rank take half the
            # time at 784-128-64-32-10); the float pass's own only where those fall short
            for s in sorted({min(slack, 16), slack}) if pats else ():
                check = layered_rank(Wf, bf, pats, exact=True, slack=s, check=self._check_time)
                if check is None or check.rank >= found.rank:
                    break
            self.checked = check is not None and check.rank >= self.bound
            if check is None or check.rank < found.rank:
                got = 0 if check is None else check.rank
                note = (
                    f"the float rank {found.rank} at tol is above {got}, the exact "
                    f"rank modulo a prime of the same regions ({len(pats)} of "
                    f"{len(points)} with a proven pattern), which is returned: a "
                    f"float null space can carry rounding into the next level"
                )
                self.layered = found = LayeredRank(
                    rank=got,
                    levels=(0, 0, 0) if check is None else check.levels,
                    smallest_counted=found.smallest_counted,
                    largest_dropped=found.largest_dropped,
                )
                self.floor = got
        else:
            self.checked = found.rank >= self.bound
        if found.rank < self.bound:
            short = _short_layers(found.levels, tuple(self.net.widths))
            self.together = _never_together(points, short)
            note = "; ".join(
                filter(
                    None,
                    [
                        note,
                        (
                            f"below the bound: {found.rank} is the rank of the regions of "
                            f"{self.sampled} sampled points (random, and around neurons rarely "
                            f"active at those), computed layer by layer (levels {found.levels}), a "
                            f"lower bound; more regions, the MILP phase or the enumeration could "
                            f"raise it, but at P = {self.P:,} they need the stacked P-column rows "
                            f"(done up to P = {_DENSE_LIMIT:,})"
                        ),
                        _never_active(points),
                        self.together,
                    ],
                )
            )
        return self._result(found.rank, method="sampling", note=note)

    def _sample(self) -> int:
        """Rows for the regions of random points, until the rank reaches the bound or
        stops growing."""
        selector = _Selector(self.P)
        rng = np.random.default_rng(0)
        stalled = 0
        for batch in _sample_points(self.Ws, self.bs, self.dom, self.tol, rng):
            self._check_time()
            for x, pats in batch:
                self._check_time()
                rows_f = _float_rows(self.Ws, self.bs, pats, x) if self.tol == 0 else None
                if self.tol == 0 and not selector.adds(rows_f):
                    continue
                if self._add(pats, x, sketch=True, rows_f=rows_f):
                    self.sampled += 1
                    if self.bar is not None:
                        self.bar.update(1)
            if self.tracker.pending and (self.tracker.due() or self.tol == 0):
                before = self.tracker.rank
                if self._rank() >= self.goal:
                    break
                self._check_time()
                stalled = stalled + 1 if self.tracker.rank == before else 0
                if stalled >= 2:
                    break
        return self._rank()

    def _milp(self) -> str:
        """Decide the directions left in the kernel one by one: a MILP either finds a
        region that moves the function along one (its rows are stacked, the rank grows)
        or shows that none does. Returns ``"certified"`` or why it stopped."""
        milp = TangentMILP(self.Ws, self.bs, self.dom)
        known = _rescalings(self.Ws, self.bs)
        zero: list[np.ndarray] = []  # directions shown to move nothing
        try:
            while True:
                rank = self._rank()
                if rank >= self.bound:
                    return "certified"
                count = self.bound - rank - len(zero)
                if count <= 0:
                    return "certified"
                self._check_time()
                basis = _open_directions(
                    self.shadow.R, rank, np.column_stack([known] + zero) if zero else known, count
                )
                if basis is None:
                    return "the kernel of the sampled rows did not split as expected"
                grew = False
                for k in range(basis.shape[1]):
                    delta = basis[:, k]
                    dWs, dbs = _split(delta, self.Ws, self.bs)
                    thr = self.tol * float(np.abs(delta) @ self.colmax)
                    self._check_time()
                    left = self.budget.remaining()
                    witness = milp.exceeds(dWs, dbs, thr, time_limit=left)
                    self.num_milps = milp.num_milps
                    if witness is None:
                        self._check_time()
                        return "a MILP did not finish"
                    if not witness:
                        zero.append(delta)
                        continue
                    found = interior_point(self.Ws, self.bs, witness.patterns, self.dom)
                    if found is None or not found[1] > self.tol:
                        return "a witness region was too thin to use"
                    before = self.tracker.rank
                    if not self._add(witness.patterns, found[0]) or self._rank() <= before:
                        return "a witness region did not add to the rank"
                    self.sampled += 1
                    grew = True
                    break
                if not grew:
                    return "certified"
        finally:
            self.num_milps = milp.num_milps

    def _enumerate(self) -> None:
        """Every region of the streamed enumeration (within the budgets)."""
        self.enumerated = True
        net = self.net
        for cell in self.budget.cells([net], self.dom, self._partial):
            if self.bar is not None:
                self.bar.update(1)
            if self.tol > 0 and thickness(cell, net.d) <= self.tol:
                self.thin += 1
                continue
            self.smooth = self.smooth and not cell.zero_preact
            if self.tol > 0:
                self.tracker.add(
                    _row_scaled(_float_rows(self.Ws, self.bs, cell.patterns[0], cell.center_f))
                )
            else:
                rows, _ = region_rows(net, cell.patterns[0], cell.center_q)
                self.tracker.add(rows)
                self.exact_rows.extend(rows)
            if self.tracker.due() and self._rank() >= self.goal:
                break

    def _result(
        self, rank: int, *, method: str = "regions", complete: bool = True, note: str = ""
    ) -> FunctionalDimension:
        smallest = dropped = None
        layered = self.layered is not None
        if layered:
            smallest, dropped = self.layered.smallest_counted, self.layered.largest_dropped
            # the exact rank modulo the prime reached the bound: a proof
            certified = complete and rank == self.bound and self.checked
        elif self.tol > 0:
            smallest, dropped = self.tracker.smallest, self.tracker.dropped
            # a rank at tol is a lower bound of the exact one (thin regions left out,
            # singular values far above rounding counted), which never exceeds the bound:
            # at the bound it is exact
            certified = rank == self.bound and smallest is not None and smallest > 1e-12
        else:
            # the rank modulo a prime is a lower bound of the rational one; below the
            # bound with every region used, the rational rank decides
            if (
                complete
                and rank < self.bound
                and self.exact_rows
                and method == "regions"
                and self.enumerated
            ):
                rank = int(
                    flint.fmpq_mat(
                        len(self.exact_rows), self.P, [v for row in self.exact_rows for v in row]
                    ).rank()
                )
            certified = complete and (rank == self.bound or method == "regions")
        if not complete:
            method = "incomplete"
        note = note or self.note or ("" if certified else self._why_uncertified(rank, method))
        used = self.budget.num_regions + self.sampled
        return FunctionalDimension(
            rank=rank,
            bound=self.bound,
            at_bound=rank == self.bound,
            num_params=self.P,
            num_hidden=self.hidden,
            num_regions=used,
            num_points=(used - self.thin) * (self.net.d + 1),
            smooth=self.smooth,
            certified=certified,
            domain=self.dom,
            tol=self.tol,
            smallest_counted=smallest,
            largest_dropped=dropped,
            num_thin_regions=self.thin,
            num_sampled_regions=self.sampled,
            enumerated=self.enumerated,
            method=method,
            num_milps=self.num_milps,
            num_lps=self.engine.counter.count,
            note=note,
            layered=layered,
            levels=self.layered.levels if layered else (),
        )

    def _why_uncertified(self, rank: int, method: str) -> str:
        """What an uncertified rank rests on, in words (never an empty note)."""
        if method == "incomplete":
            return "a budget stopped the computation: the rank is a lower bound"
        if self.tol > 0 and rank == self.bound:
            return (
                "the rank reached the bound, but its smallest counted singular value is "
                "at rounding level: the bound is not certified"
            )
        if self.tol > 0:
            how = (
                "each direction left in the kernel was decided by a MILP whose 'no "
                "witness' rests on HiGHS's floating-point bounds"
                if method == "milp"
                else "the rank is numerical, at tol"
            )
            return (
                f"below the bound: {how}; the rank is certified only at the bound (or "
                f"with tol=0, by the exact enumeration of every region)"
            )
        return "the exact rank over the regions used is a lower bound (not every region used)"


def proven_jacobian_rank(
    params: list, goal: int, max_regions, time_limit, domain: Any = None
) -> tuple:
    """``(r, reason, together)``: a proven lower bound ``r`` of the Jacobian's rank on
    ``domain`` (default R^d; :func:`rank_lower_bound`), run until it reaches ``goal`` (the
    most it can be) or its budget ends (the rank found by then, still a lower bound);
    ``r = None`` with the reason when there is none; ``together``: where the rank stays
    below the goal, the pairs of neurons never active together at the sampled regions, in
    words (else empty). The fiber's upper bound and the local identifiability verdict both
    read it."""
    if len(params) == 1:
        return params[0][0].size + params[0][1].size, None, ""  # f is its parameter
    try:
        r = rank_lower_bound(
            params, goal, domain=domain, max_regions=max_regions, time_limit=time_limit
        )
    except ComputationLimitError as exc:
        part = getattr(exc, "partial", None)
        r = None if part is None else (part.rank, part.smooth, "")
        if r is None:
            return None, f"the Jacobian's rank was not reached within the budget ({exc})", ""
    rank, smooth, together = r
    if rank is None:
        return (
            None,
            (
                "the Jacobian's rank was not computed: the last level of its layered "
                "rank is too wide to factorize at this size"
            ),
            "",
        )
    if not smooth:
        return (
            None,
            (
                "a neuron's pre-activation is identically zero on a region, so "
                "theta -> f_theta(x) is not differentiable there and the Jacobian "
                "bounds nothing"
            ),
            "",
        )
    return rank, None, together
