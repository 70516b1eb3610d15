"""The always-active block of a three-layer bottleneck network on the orthant
``O = R^{n1}_{>=0}``: which orientations of the crossing second-layer neurons it can carry,
and canonical rows for it (docs/relu_equivalence.md §2, step 6).

Second-layer neurons with nonnegative rows are active on all of ``O``; together they
compute an affine map whose linear part ``L`` (``n3 x n1``) any set of nonnegative rows
spanning a space that contains ``rowspace(L)`` can carry. Turning crossing neuron ``j``
around (``c relu(y) = c relu(-y) + c y``) adds the rank-one term ``w_j a_j^T`` to ``L``
(``w_j`` its outgoing weights, ``a_j`` its row). With ``m`` neurons for the block, an
orientation is **carried** when ``rank L <= m - 1``, or ``rank L = m`` and the cone
``rowspace(L) ∩ O`` spans ``rowspace(L)`` (:func:`carried`).

Which orientation the canonical form takes (:func:`choose_turned`):

* at most 16 crossing neurons: all ``2^k`` orientations, the carried one with the fewest
  rows against the reference orientation (ties by the rows' order);
* crossing rows ``a_j`` linearly independent: ``L(T) = G + N(T) A`` with ``G`` the part of
  ``L`` orthogonal to ``span(a_j)``, so ``rank L(T) = rank [G | N(T)]`` and each column
  ``N_j`` takes one of two values; this gives the orientation ``T*`` of least rank
  column by column, certified unique when turning any one neuron from it raises the rank.
  From ``T*`` the rows against the reference are turned back one at a time, last row
  first, whenever the orientation stays carried;
* ``(m + 1)``-fold wedge products of the block's rank-one components (those of ``L`` and
  each ``w_j a_j^T``) linearly independent, with a margin that covers the rank threshold:
  by Cauchy-Binet every orientation of rank at most ``m`` then turns at most
  ``m - rank L`` neurons (:func:`_by_independent_wedges`), so those few are listed and the
  first rule picks among them. Dependent crossing rows are no obstacle: a trained
  64-32-64-10 network has 63 crossing rows in ``R^32`` and one neuron for the block, and
  its 1,953 wedge tensors are independent;
* the crossing neurons split into two sides of at most ``(n3 - m - 1) + (n1 - m - 1)``
  each, and ``m + 1 <= 5``: projections that annihilate one side's terms leave
  ``(m + 1) x (m + 1)`` matrices that depend on the other side alone, so every subset of
  each side is tried (``2^31`` at most, by one matrix product of Laplace minors), the
  subsets not proved of full rank are paired, and the pairs left are decided by the rank
  itself (:func:`_by_split_projections`). A trained 64-32-64-10 network with two dead
  rows (61 crossing rows in ``R^32``, three neurons for the block) takes about 20 s;
* otherwise a branch and bound over the orientations lists every carried one (a branch is
  cut when projections that annihilate the undecided neurons' terms leave a matrix of
  rank above ``m``, a lower bound on every completion's rank by Weyl's inequality) and
  the first rule above picks among them; it refuses past :data:`MAX_NODES` branches.

Which orientations are carried is a subset question no method decides in polynomial time
in general unless P = NP: for every ``m >= 1`` it contains SUBSET-SUM. Take
``n1 = n3 = m + 1``, ``L = diag(0, 1, ..., 1)``, outgoing weights ``e_1`` and rows
``a_0 = (-t, -1, 0, ...)``, ``a_j = (s_j, -1, 0, ...)`` (all crossing): turning ``T``
leaves rank ``m`` (carried: the row space is ``span(e_2, ..., e_(m+1))``) exactly when the
first entries of ``a_T`` sum to 0, so some carried orientation turns neuron 0 iff some
subset of the ``s_j`` sums to ``t`` (``tests/relu/canonical/test_block.py`` builds it). The
routes above are the structures that make an input tractable.

Canonical rows (:func:`block_rows`) are a function of ``rowspace(L)`` alone: its cone's
extreme rays when few enough ``(dim - 1)``-subsets of the orthant's facets exist, else
the analytic center of the cone's slice ``{sum = 1}`` and one step from it along each of
``dim - 1`` canonical directions (projections of the coordinate vectors), in coordinates
scaled by the row space's projector. Rows that equivalent networks could get differently
(the row space known to Wedin's bound, amplified by a tiny coordinate or by the rows'
condition number, past ``1e-7``) are refused.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from .._core.clock import check_deadline

__all__ = [
    "BlockNotCovered",
    "MAX_NODES",
    "TurningProblem",
    "block_rows",
    "carried",
    "choose_turned",
]

#: at most this many crossing neurons get every orientation tried
MAX_ENUMERATED = 16
#: ... and the linear parts of all their orientations have at most this many entries
MAX_ENTRIES = 2**25
#: the extreme rays of a block's cone are enumerated from at most this many
#: ``(dim - 1)``-subsets of the orthant's facets (else the analytic-center rows are used)
MAX_SUBSETS = 20000
#: branches the branch and bound over orientations may visit before refusing
MAX_NODES = 500000
#: ... when the choice is not ``thorough`` (``equivalent`` decides without it), and the
#: split route is skipped
QUICK_NODES = 50000
#: the wedge-product route checks at most this many ``(m + 1)``-subsets of components
#: (its Gram matrix has this order) and lists at most this many orientations
MAX_WEDGES = 2500
#: the split route enumerates at most this many subsets of crossing neurons on each side
MAX_SPLIT = 2**31
#: ... keeps at most this many subsets (and joined pairs) whose rank it could not bound
MAX_UNPROVED = 2_000_000
#: ... and takes blocks of at most this many neurons minus one (``m + 1 <= 5``: the Laplace
#: expansion of a ``k x k`` determinant has ``C(2k, k)`` terms)
MAX_SPLIT_ORDER = 5
#: the unit roundoff of float64
_U = 2.0**-53


class BlockNotCovered(Exception):
    """No orientation of the crossing neurons, or no rows for the always-active block, was
    certified canonical (reason in args[0])."""


@dataclass(frozen=True, kw_only=True)
class TurningProblem:
    """Which crossing neurons to turn around, as every route of :func:`choose_turned` reads
    it: ``L0`` the block's linear part now, ``Wc`` (``n3 x nc``) the crossing neurons'
    outgoing weights, ``Ac`` (``nc x n1``) their rows, ``against`` the rows now against the
    reference orientation, ``m`` the neurons for the block (``1 <= m < min(n3 + 1, n1)``),
    ``tol`` and ``ref`` the rank threshold's tolerance and scale."""

    L0: np.ndarray
    Wc: np.ndarray
    Ac: np.ndarray
    against: np.ndarray
    m: int
    tol: float
    ref: float


def _threshold(tol: float, largest, ref: float):
    return max(tol, 1e-12) * np.maximum(largest, ref)


def _ranks(sv: np.ndarray, tol: float, ref: float):
    """Ranks from singular values (``(..., k)``, largest first): values up to ``tol`` times
    ``max(ref, largest)`` count as 0 (``ref``: the scale of the terms summed into the
    matrix)."""
    if sv.shape[-1] == 0:
        return np.zeros(sv.shape[:-1], dtype=int)
    return np.sum(sv > _threshold(tol, sv[..., :1], ref), axis=-1)


def _rank_of(L: np.ndarray, tol: float, ref: float = 0.0) -> int:
    """Rank of ``L`` (:func:`_ranks`)."""
    return int(_ranks(np.linalg.svd(L, compute_uv=False), tol, ref)) if L.size else 0


def _unit_rays(B: np.ndarray) -> np.ndarray:
    """The unit extreme rays of the cone ``span(B) ∩ O`` (``B``: orthonormal rows), sorted
    lexicographically, entries below ``1e-10`` of a ray's largest snapped to 0.

    A ray of the pointed cone ``{y : B^T y >= 0}`` is where ``dim - 1`` independent facets
    meet: every ``(dim - 1)``-subset of the ``n1`` facets is tried (at most
    :data:`MAX_SUBSETS`, checked by the caller)."""
    r, n1 = B.shape
    if r == 1:
        cand = np.vstack([B[0], -B[0]])
    else:
        G = B.T  # facet normals in the basis coordinates
        idx = np.array(list(itertools.combinations(range(n1), r - 1)))
        Msub = G[idx]  # (S, r - 1, r)
        _, sv, Vt = np.linalg.svd(Msub)
        ok = sv[:, -1] > 1e-9 * np.maximum(sv[:, 0], 1e-300)
        Y = Vt[ok, -1, :]
        cand = np.vstack([Y @ B, -(Y @ B)])
    cand /= np.max(np.abs(cand), axis=1, keepdims=True)
    cand[np.abs(cand) <= 1e-10] = 0.0
    cand = cand[np.all(cand >= 0, axis=1)]
    if len(cand) == 0:
        return np.zeros((0, n1))
    cand /= np.linalg.norm(cand, axis=1, keepdims=True)
    order = np.lexsort(cand.T[::-1])
    cand = cand[order]
    keep = [0]
    for a in range(1, len(cand)):
        if np.max(np.abs(cand[a] - cand[keep[-1]])) > 1e-8:
            keep.append(a)
    return cand[keep]


def _pick(rays: np.ndarray, k: int) -> np.ndarray:
    """``k`` independent rays, greedily in their (lexicographic) order."""
    out: list[np.ndarray] = []
    for v in rays:
        if np.linalg.matrix_rank(np.array(out + [v]), tol=1e-9) == len(out) + 1:
            out.append(v)
            if len(out) == k:
                break
    return np.array(out).reshape(-1, rays.shape[1])


def _support(B: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The coordinates positive somewhere on the cone ``span(B) ∩ O`` (one LP maximizing
    how many are, each coordinate measured in units of its column of ``B`` so that the
    LP's answer does not depend on their scales) and a point ``t`` with ``B^T t`` positive
    on them; ``None`` when the cone does not span ``span(B)`` (some basis vector has
    weight on a coordinate the cone never leaves 0)."""
    k, n1 = B.shape
    c = np.linalg.norm(B, axis=0)
    live = c > 1e-12
    Bn = B[:, live] / c[live]
    nl = int(live.sum())
    # variables (t, s): s_i <= (B^T t)_i / |B[:, i]|, 0 <= s <= 1, maximize sum s
    res = linprog(
        np.concatenate([np.zeros(k), -np.ones(nl)]),
        A_ub=np.hstack([-Bn.T, np.eye(nl)]),
        b_ub=np.zeros(nl),
        bounds=[(None, None)] * k + [(0.0, 1.0)] * nl,
        method="highs",
    )
    if res.status != 0:  # pragma: no cover - t = 0, s = 0 is always feasible
        raise BlockNotCovered(f"the LP for the support of the block's cone failed ({res.message})")
    supp = np.zeros(n1, dtype=bool)
    supp[np.flatnonzero(live)[res.x[k:] > 0.5]] = True
    if not np.any(supp) or np.max(np.abs(B[:, ~supp]), initial=0.0) > 1e-9:
        return None
    return supp, res.x[:k]


def _analytic_center(Bs: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The maximizer of ``sum log y`` over ``y = Bs^T t > 0`` with ``sum y = 1`` (unique:
    ``Bs`` has full row rank), by Newton's method with the equality kept, from a feasible
    ``t``; returns ``y``."""
    c = Bs.sum(axis=1)
    t = t / float(c @ t)
    k = Bs.shape[0]
    for _ in range(200):
        y = Bs.T @ t
        g = -Bs @ (1.0 / y)
        H = (Bs / y[None, :] ** 2) @ Bs.T
        K = np.block([[H, c[:, None]], [c[None, :], np.zeros((1, 1))]])
        dt = np.linalg.solve(K, np.concatenate([-g, [0.0]]))[:k]
        dec = float(dt @ H @ dt)
        if dec < 1e-26:
            break
        dy = Bs.T @ dt
        neg = dy < 0
        step = min(1.0, 0.99 * float(np.min(-y[neg] / dy[neg]))) if np.any(neg) else 1.0
        f0 = -float(np.sum(np.log(y)))
        while step > 1e-12 and -float(np.sum(np.log(y + step * dy))) > f0 - 0.25 * step * dec:
            step *= 0.5
        t = t + step * dt
    return Bs.T @ t


def _center_rows(B: np.ndarray, noise: float = 0.0) -> np.ndarray | None:
    """``k`` independent nonnegative unit rows spanning ``span(B)`` (``B``: ``k``
    orthonormal rows), a function of ``span(B)``, or ``None`` when the cone does not span
    it. In the coordinates ``z_i = y_i / |P e_i|`` (``P`` the projector onto ``span(B)``:
    scales that ``span(B)`` fixes, so that coordinates of very different sizes weigh
    alike): the analytic center ``z`` of the slice ``{z >= 0, sum z = 1}`` of the cone and
    ``z + t_i g_i`` for the first ``k - 1`` independent projections ``g_i`` of the
    coordinate vectors onto the subspace's ``{sum z = 0}`` (half the step to the slice's
    boundary); then back to ``y`` and unit norm. ``noise``: how far ``span(B)`` may be from
    the exact subspace; the rows are refused (:class:`BlockNotCovered`) when a coordinate
    is so small that this moves them by more than ``1e-7``."""
    k, n1 = B.shape
    found = _support(B)
    if found is None:
        return None
    supp, t = found
    c = np.linalg.norm(B[:, supp], axis=0)
    if noise > 1e-7 * float(np.min(c)):
        raise BlockNotCovered(
            f"the row space of the always-active block's linear part is "
            f"known to about {noise:.1g} and its cone has coordinates of "
            f"size {float(np.min(c)):.1g}: rows built from it could differ "
            f"between equivalent networks"
        )
    Bz = B[:, supp] / c
    if not np.all(Bz.T @ t > 0):  # the LP's point is positive only within its tolerance
        raise BlockNotCovered(
            "the cone of the always-active block is too ill-conditioned "
            "for its analytic center (no strictly positive point found)"
        )
    z = _analytic_center(Bz, t)
    if not np.all(np.isfinite(z)) or not np.all(z > 0):
        raise BlockNotCovered(
            "the analytic center of the always-active block's cone did "
            "not converge to a positive point"
        )
    rows = [z]
    if k > 1:
        Q = np.linalg.svd(Bz, full_matrices=False)[2]  # orthonormal, the same span
        # an orthonormal basis of the span ∩ {sum z = 0}: the null space of Q 1 in Q's basis
        N = np.linalg.svd(Q.sum(axis=1)[None, :])[2][1:].T
        G = Q.T @ N  # ns x (k - 1), orthonormal columns
        basis = np.zeros((0, k - 1))
        for u in G:
            res_u = u - basis.T @ (basis @ u)
            if (
                np.linalg.norm(res_u) <= 1e-6 * max(np.linalg.norm(u), 1e-300)
                or np.linalg.norm(u) <= 1e-9
            ):
                continue
            g = G @ u  # the projection of e_i
            neg = g < 0
            if not np.any(neg):  # a direction of sum 0 has a negative entry unless ~0
                continue
            basis = np.vstack([basis, res_u / np.linalg.norm(res_u)])
            rows.append(np.maximum(z + 0.5 * float(np.min(z[neg] / -g[neg])) * g, 0.0))
            if len(rows) == k:
                break
        if len(rows) < k:  # pragma: no cover - the projections span the subspace
            raise BlockNotCovered("no canonical rows found for the always-active block")
    A = np.zeros((k, n1))
    A[:, supp] = np.array(rows) * c
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def _by_rays(B: np.ndarray) -> bool:
    """Whether the cone ``span(B) ∩ O`` is few enough facet subsets for its rays."""
    k, n1 = B.shape
    return math.comb(n1, k - 1) <= MAX_SUBSETS


def _cone_rows(B: np.ndarray, noise: float) -> np.ndarray | None:
    """``k = dim span(B)`` canonical nonnegative rows spanning ``span(B)``, or ``None`` when
    the cone ``span(B) ∩ O`` does not span it (``noise``: as in :func:`_center_rows`)."""
    if _by_rays(B):
        A = _pick(_unit_rays(B), B.shape[0])
        return A if len(A) == B.shape[0] else None
    return _center_rows(B, noise)


def _row_space(L: np.ndarray, tol: float, ref: float) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal rows spanning ``rowspace(L)`` at the rank of :func:`_rank_of`, and the
    singular values of ``L``."""
    if L.size == 0 or not np.any(L):
        return np.zeros((0, L.shape[1])), np.zeros(0)
    _, sv, Vt = np.linalg.svd(L)
    return Vt[: int(_ranks(sv, tol, ref))], sv


def block_rows(
    L: np.ndarray, tol: float, ref: float = 0.0, terms: float | None = None
) -> np.ndarray:
    """Canonical nonnegative unit rows ``A`` (``k x n1``, as few as possible) whose span
    contains the rows of the linear map ``L`` (``n3 x n1``): a function of
    ``V = rowspace(L)`` alone. When the cone ``V ∩ O`` spans ``V`` (``k = rank L``): its
    extreme rays (the first independent ones in lexicographic order when it is not
    simplicial; analytic-center rows when the rays are too many to enumerate, module
    docs); else (``k = rank L + 1``) those of ``(V + span(1)) ∩ O``, which spans
    ``V + span(1)`` because it contains ``1``. Ranks as in :func:`_rank_of`; ``terms``
    (default ``ref``): the sum of the norms of the terms summed into ``L``, which bounds
    its rounding."""
    V, sv = _row_space(L, tol, ref)
    r, n1 = V.shape
    if r == 0:
        return V
    # how far the computed row space can be from the exact one (Wedin's bound, with the
    # rounding of the terms summed into L)
    noise = 1e-15 * max(float(sv[0]), ref if terms is None else terms) / float(sv[r - 1])
    A = _cone_rows(V, noise)
    if A is None:
        W = np.linalg.svd(np.vstack([V, np.full((1, n1), n1**-0.5)]))[2][: r + 1]
        A = _cone_rows(W, noise)
    if A is None:  # V + span(1) contains 1: only rounding can say it does not span
        raise BlockNotCovered(
            "the cone of the always-active block's rows was judged not "
            "to span a space that contains 1 (rounding)"
        )
    # the outgoing weights C = L A^+ carry the row space's error times cond(A) (to first
    # order): past 1e-7, equivalent networks could get different forms
    sa = np.linalg.svd(A, compute_uv=False)
    cond = float(sa[0] / sa[-1]) if sa[-1] > 0 else np.inf
    if noise * cond > 1e-7:
        raise BlockNotCovered(
            f"the always-active block's rows are ill-conditioned "
            f"(condition number {cond:.2g}) for a row space known to about "
            f"{noise:.1g}: its form could differ between equivalent "
            f"networks"
        )
    return A


def carried(L: np.ndarray, m: int, tol: float, ref: float) -> bool:
    """Whether ``m`` always-active neurons can carry the linear part ``L`` (the decision
    :func:`block_rows` makes, without building the rows)."""
    V, _ = _row_space(L, tol, ref)
    if len(V) != m or m == 0:
        return len(V) <= m
    if _by_rays(V):
        return len(_pick(_unit_rays(V), m)) == m
    return _support(V) is not None


#: the current orientation is carried in exact arithmetic; when the float decisions say
#: otherwise, nothing is decided
_NOT_CARRIED = (
    "the always-active block's rank or cone decisions, in floating point, do "
    "not carry even the network's own orientation: too ill-conditioned to "
    "decide"
)


def _key(bits: np.ndarray) -> tuple:
    """Fewest rows against the reference first, then the earliest such rows."""
    return int(bits.sum()), tuple(np.flatnonzero(bits))


def _first_carried(found, pb: TurningProblem) -> np.ndarray:
    """Among the orientations ``found`` (every one of rank at most ``m``), the carried one
    with the fewest rows against the reference (:func:`_key`)."""
    L0, Wc, Ac, against, m, tol, ref = pb.L0, pb.Wc, pb.Ac, pb.against, pb.m, pb.tol, pb.ref
    for flips in sorted(found, key=lambda fl: _key(fl ^ against)):
        if carried(L0 + Wc[:, flips] @ Ac[flips], m, tol, ref):
            return flips
    raise BlockNotCovered(_NOT_CARRIED)


def _subsets(n: int) -> np.ndarray:
    """Every subset of ``n`` items as a row of 0/1 integers (bit ``i`` of the row's
    index)."""
    return (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1


def _by_enumeration(pb: TurningProblem) -> np.ndarray:
    L0, Wc, Ac, against, m, tol, ref = pb.L0, pb.Wc, pb.Ac, pb.against, pb.m, pb.tol, pb.ref
    nc = Ac.shape[0]
    n3, n1 = L0.shape
    terms = np.einsum("ij,jk->jik", Wc, Ac).reshape(nc, n3 * n1)
    bits = _subsets(nc)  # 1 = against the reference
    flips = bits ^ against[None, :].astype(int)
    ok = np.zeros(2**nc, dtype=bool)
    for a in range(0, 2**nc, 4096):  # screened at once by rank (at most m is necessary)
        Ls = (L0.ravel()[None, :] + flips[a : a + 4096] @ terms).reshape(-1, n3, n1)
        ok[a : a + 4096] = _ranks(np.linalg.svd(Ls, compute_uv=False), tol, ref) <= m
    for c in sorted(np.flatnonzero(ok), key=lambda c: _key(bits[c])):
        if carried((L0.ravel() + flips[c] @ terms).reshape(n3, n1), m, tol, ref):
            return flips[c].astype(bool)
    raise BlockNotCovered(_NOT_CARRIED)


def _by_independent_rows(pb: TurningProblem) -> np.ndarray | None:
    """The orientation from the least-rank one when the crossing rows are independent
    (module docs), or ``None`` when they are not or the least-rank orientation is not
    certified unique."""
    L0, Wc, Ac, against, m, tol, ref = pb.L0, pb.Wc, pb.Ac, pb.against, pb.m, pb.tol, pb.ref
    nc, n1 = Ac.shape
    if nc > n1:
        return None
    sa = np.linalg.svd(Ac, compute_uv=False)
    if sa[-1] <= 1e-8 * sa[0]:
        return None
    H = L0 @ np.linalg.pinv(Ac)  # L0 = G + H A with G's rows orthogonal to A's
    G = L0 - H @ Ac
    U, sg, _ = np.linalg.svd(G)
    rho = int(_ranks(sg, tol, ref))
    P = np.eye(L0.shape[0]) - U[:, :rho] @ U[:, :rho].T
    flip = np.linalg.norm(P @ (H + Wc), axis=0) < np.linalg.norm(P @ H, axis=0)
    L = L0 + Wc[:, flip] @ Ac[flip]
    if _rank_of(L, tol, ref) != rho:
        return None
    sign = np.where(flip, -1.0, 1.0)
    around = L[None] + sign[:, None, None] * np.einsum("ij,jk->jik", Wc, Ac)
    ranks = _ranks(np.linalg.svd(around, compute_uv=False), tol, ref)
    if np.any(ranks <= rho):  # a neuron that turns at no cost in rank: not unique
        return None
    bits = against ^ flip
    for a in range(nc - 1, -1, -1):  # turn back, last row first, while carried
        if bits[a]:
            s = -1.0 if flip[a] else 1.0
            trial = L + s * np.outer(Wc[:, a], Ac[a])
            if carried(trial, m, tol, ref):
                L, flip[a], bits[a] = trial, not flip[a], False
    return flip


def _compound_gram(G1: np.ndarray, G2: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """``det(G1[S, S']) det(G2[S, S'])`` over pairs of the ``k``-subsets ``subsets``: the
    Gram matrix of the tensors ``(x_S wedge) (x) (y_S wedge)`` when ``G1``, ``G2`` are the
    Gram matrices of the ``x_j`` and the ``y_j`` (Cauchy-Binet)."""
    ns, k = subsets.shape
    out = np.empty((ns, ns))
    for a in range(0, ns, 256):
        rows = subsets[a : a + 256]
        prod = np.ones((len(rows), ns))
        for Gm in (G1, G2):
            sub = Gm[rows[:, None, :, None], subsets[None, :, None, :]]  # (r, ns, k, k)
            if k == 2:
                det = sub[..., 0, 0] * sub[..., 1, 1] - sub[..., 0, 1] * sub[..., 1, 0]
            else:
                det = np.linalg.det(sub)
            prod *= det
        out[a : a + 256] = prod
    return out


def _by_independent_wedges(pb: TurningProblem) -> np.ndarray | None:
    """The orientation when the ``(m + 1)``-fold wedge products of the block's rank-one
    components are linearly independent, with a margin (module docs), or ``None`` when
    they are not (or are too many to check).

    Write ``L0 = U0 V0`` (rank ``rho``, the rest ``E``) and take the ``N = rho + nc``
    components ``(x_i, y_i)``: the columns of ``U0`` with the rows of ``V0``, and each
    crossing neuron's ``(w_j, a_j)``. By Cauchy-Binet the ``(m + 1)``-minors of
    ``L(T) - E`` are ``sum_S (wedge x_S) (x) (wedge y_S)`` over the ``(m + 1)``-subsets
    ``S`` of the components of ``L0`` and of ``T``; when those tensors are independent,
    with the Gram matrix's least eigenvalue ``lam``, the sum has norm at least
    ``sqrt(lam)`` as soon as one such ``S`` exists, i.e. ``|T| >= m + 1 - rho``, while a
    matrix whose ``(m + 1)``-th singular value is at most ``tau`` (the rank threshold plus
    ``|E|``) has minors of norm at most ``B`` below. So when ``sqrt(lam) > B`` every
    orientation of rank at most ``m`` turns at most ``m - rho`` neurons: those are listed
    and the first rule picks among them."""
    L0, Wc, Ac, m, tol, ref = pb.L0, pb.Wc, pb.Ac, pb.m, pb.tol, pb.ref
    nc = Ac.shape[0]
    n3, n1 = L0.shape
    k = m + 1
    if k > min(n3, n1):
        return None
    U, sv, Vt = np.linalg.svd(L0)
    rho = int(_ranks(sv, tol, ref))
    if rho > m:
        return None
    N = rho + nc
    few = sum(math.comb(nc, i) for i in range(m - rho + 1))
    if (
        math.comb(N, k) > MAX_WEDGES
        or math.comb(N, k) > math.comb(n3, k) * math.comb(n1, k)
        or few > MAX_WEDGES
    ):
        return None
    X = np.hstack([U[:, :rho] * sv[:rho], Wc])  # n3 x N
    Y = np.vstack([Vt[:rho], Ac])  # N x n1
    eps_E = float(sv[rho]) if len(sv) > rho else 0.0
    subsets = np.array(list(itertools.combinations(range(N), k)), dtype=int)
    G = _compound_gram(X.T @ X, Y @ Y.T, subsets)
    ev = np.linalg.eigvalsh(G)
    # the rounding of forming G and the eigensolver's backward error, both about
    # n u |G| (u the unit roundoff), with a factor 8 to spare
    lam = float(ev[0]) - 8 * len(ev) * 2.0**-53 * float(ev[-1])
    if not lam > 0:
        return None
    s1 = float(sv[0] if rho else 0.0) + float(np.linalg.norm(Wc, 2) * np.linalg.norm(Ac, 2))
    tau = float(_threshold(tol, s1 + eps_E, ref)) + eps_E
    r = min(n3, n1)
    # (m+1)-minors of a matrix with sigma_1 <= s1 and sigma_i <= tau for i >= m + 1:
    # subsets with k - j of the top m singular values and j of the rest
    top = max(s1, tau)
    bound = math.sqrt(
        sum(
            math.comb(m, k - j) * math.comb(r - m, j) * top ** (2 * (k - j)) * tau ** (2 * j)
            for j in range(1, k + 1)
        )
    )
    if not math.sqrt(lam) > bound * (1 + 1e-6):
        return None
    found = []
    for size in range(m - rho + 1):
        for turn in itertools.combinations(range(nc), size):
            flips = np.zeros(nc, dtype=bool)
            flips[list(turn)] = True
            L = L0 + Wc[:, flips] @ Ac[flips]
            if _rank_of(L, tol, ref) <= m:
                found.append(flips)
    return _first_carried(found, pb)


@functools.lru_cache(maxsize=None)
def _laplace(k: int) -> tuple:
    """The terms of ``det(A + B) = sum sign det A[I, J] det B[I', J']`` (``I', J'`` the
    complements, ``sign = (-1)^(sum I + sum J)``) over index sets ``|I| = |J|`` of a
    ``k x k`` matrix: ``(I, J, I', J', sign)`` each."""
    out = []
    full = range(k)
    for r in range(k + 1):
        for I in itertools.combinations(full, r):
            for J in itertools.combinations(full, r):
                out.append(
                    (
                        I,
                        J,
                        tuple(i for i in full if i not in I),
                        tuple(j for j in full if j not in J),
                        (-1) ** (sum(I) + sum(J)),
                    )
                )
    return tuple(out)


def _minors(Ms: np.ndarray, second: bool) -> np.ndarray:
    """The minors of the ``k x k`` matrices ``Ms`` in :func:`_laplace`'s terms: ``det A[I, J]``
    (``second=False``) or ``sign det B[I', J']``, so that ``det(A + B)`` is the dot product of
    the two vectors."""
    terms = _laplace(Ms.shape[1])
    out = np.empty((Ms.shape[0], len(terms)))
    for p, (I, J, Ic, Jc, sign) in enumerate(terms):
        rows, cols = (Ic, Jc) if second else (I, J)
        out[:, p] = np.linalg.det(Ms[:, list(rows)][:, :, list(cols)]) if rows else 1.0
        if second:
            out[:, p] *= sign
    return out


def _unproved(MA: np.ndarray, MB: np.ndarray, c: float) -> np.ndarray | None:
    """The pairs ``(a, b)`` (rows of an ``(n, 2)`` array) for which
    ``sigma_min(MA[a] + MB[b]) > c`` is not proved
    (:func:`~neuromanifold.relu._canonical.kernels.unproved_pairs_kernel`), ``None`` past
    :data:`MAX_UNPROVED` of them. The determinants of all pairs come from one matrix product
    of the Laplace minors; the rounding of those minors (LU with partial pivoting, growth
    at most ``2^(k-1)``) and of the products is bounded by ``c_det F^k`` with a factor 16 to
    spare."""
    if len(MA) == 0 or len(MB) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    k = MA.shape[1]
    # a power of two brings the sums to size about 1 (exactly): F^k must not underflow
    e = -math.frexp(max(float(np.max(np.abs(MA))), float(np.max(np.abs(MB))), 1e-300))[1]
    MA, MB, c = np.ldexp(MA, e), np.ldexp(MB, e), math.ldexp(c, e)
    c_det = 16 * math.comb(2 * k, k) * (k + 2) * 2**k * _U
    fa = np.linalg.norm(MA.reshape(len(MA), -1), axis=1)
    fb = np.linalg.norm(MB.reshape(len(MB), -1), axis=1)
    CA, CB = _minors(MA, False), _minors(MB, True)
    from .kernels import unproved_pairs_kernel  # start-up: numba loads on first use

    out = np.empty((min(MAX_UNPROVED, len(MA) * len(MB)) + 1, 2), dtype=np.int64)
    count = 0
    # tiles of 512 x 4096 determinants: the product and the scan share the cache
    cols = [(b, np.ascontiguousarray(CB[b : b + 4096].T)) for b in range(0, len(MB), 4096)]
    D = np.empty((min(512, len(MA)), min(4096, len(MB))))
    for a in range(0, len(MA), 512):
        check_deadline()
        for b, CBt in cols:
            shape = (min(512, len(MA) - a), CBt.shape[1])
            Dv = D if shape == D.shape else np.empty(shape)  # contiguous: one compiled type
            np.matmul(CA[a : a + 512], CBt, out=Dv)
            seen = count
            count = unproved_pairs_kernel(Dv, MA, MB[b:], fa, fb[b:], a, c_det, c, out, count)
            out[seen : min(count, len(out)), 1] += b
            if count > MAX_UNPROVED:
                return None
    return out[:count]


def _unproved_subsets(base: np.ndarray, terms: np.ndarray, c: float) -> np.ndarray | None:
    """The subsets ``T`` (boolean rows over the ``k x k`` ``terms``) for which
    ``sigma_min(base + sum_T terms) > c`` is not proved, ``None`` past
    :data:`MAX_UNPROVED`: the two halves' subset sums are paired by :func:`_unproved`."""
    g1 = (len(terms) + 1) // 2
    first, second = _subsets(g1), _subsets(len(terms) - g1)
    pairs = _unproved(
        base + np.einsum("sj,jab->sab", first, terms[:g1]),
        np.einsum("sj,jab->sab", second, terms[g1:]),
        c,
    )
    if pairs is None:
        return None
    return np.hstack([first[pairs[:, 0]], second[pairs[:, 1]]]).astype(bool)


def _complement(M: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the orthogonal complement of ``M``'s columns."""
    if M.shape[1] == 0:
        return np.eye(M.shape[0])
    U, s, _ = np.linalg.svd(M)
    return U[:, int(np.sum(s > 1e-12 * s[0])) :]


def _by_split_projections(pb: TurningProblem) -> np.ndarray | None:
    """Every orientation of rank at most ``m`` when the crossing neurons split into two
    sides ``U``, ``V`` of at most ``(n3 - k) + (n1 - k)`` each (``k = m + 1``, at most
    :data:`MAX_SPLIT_ORDER`), then the first rule's choice among them; ``None`` when the
    route does not apply or leaves too many subsets unresolved.

    For side ``U``: ``P`` (``k x n3``) annihilates the outgoing weights of some neurons of
    ``V`` and ``Q`` (``n1 x k``) the rows of the others, so ``P L(T) Q`` depends on
    ``T ∩ U`` alone, up to the residue ``R`` of the annihilated terms, and
    ``sigma_k(L(T)) >= sigma_min(P L(T) Q) / (|P| |Q|)``. Every subset of ``U`` is tried
    (:func:`_unproved_subsets`, ``2^|U|`` determinants of ``k x k`` matrices): where
    ``sigma_min`` is proved above the rank threshold (doubled, so that the SVD of
    :func:`_rank_of` agrees) plus ``R`` and the sums' rounding, no orientation with that
    ``T ∩ U`` has rank at most ``m``. The same for ``V``; the unresolved subsets of the two
    sides are then paired through random orthonormal ``P``, ``Q`` annihilating nothing,
    and the pairs still unresolved are decided by :func:`_rank_of` itself."""
    L0, Wc, Ac, m, tol, ref = pb.L0, pb.Wc, pb.Ac, pb.m, pb.tol, pb.ref
    nc = Ac.shape[0]
    n3, n1 = L0.shape
    k = m + 1
    cap_left, cap_right = n3 - k, n1 - k
    half = nc // 2
    if (
        k > MAX_SPLIT_ORDER
        or min(cap_left, cap_right) < 0
        or nc - half > cap_left + cap_right
        or 2 ** (nc - half) > MAX_SPLIT
    ):
        return None
    wn, an = np.linalg.norm(Wc, axis=0), np.linalg.norm(Ac, axis=1)
    norms = wn * an
    big = float(np.linalg.norm(L0, 2)) + float(np.sum(norms))  # >= sigma_1 of every L(T)
    thr = 2 * float(_threshold(tol, big, ref)) + 1e-13 * big
    rng = np.random.default_rng(0)

    def bound(P, Q, G, H):
        """The proved-above level for ``sigma_min`` of the projected sums over ``G``."""
        pn, qn = (
            float(np.linalg.norm(P, 2)) * (1 + 1e-12),
            float(np.linalg.norm(Q, 2)) * (1 + 1e-12),
        )
        R = float(
            np.sum(
                (np.linalg.norm(P @ Wc[:, H], axis=0) + n3 * _U * pn * wn[H])
                * (np.linalg.norm(Ac[H] @ Q, axis=1) + n1 * _U * qn * an[H])
            )
        )
        sums = pn * qn * (float(np.linalg.norm(L0)) + float(np.sum(norms[G])))
        return 2 * k * (len(G) + n3 + n1 + 4) * _U * sums + R + thr * pn * qn

    def terms(P, Q, G):
        return np.einsum("aj,jb->jab", P @ Wc[:, G], Ac[G] @ Q)

    sides = (np.arange(half), np.arange(half, nc))
    unresolved = []
    for G, H in (sides, sides[::-1]):
        left = max(len(H) - cap_right, 0)  # annihilated through P, the rest through Q
        cP, cQ = _complement(Wc[:, H[:left]]), _complement(Ac[H[left:]].T)
        # within the complements, the directions where the kept terms are largest
        P = (cP @ np.linalg.svd(cP.T @ Wc[:, G])[0][:, :k]).T
        Q = cQ @ np.linalg.svd(cQ.T @ Ac[G].T)[0][:, :k]
        found = _unproved_subsets(P @ L0 @ Q, terms(P, Q, G), bound(P, Q, G, H))
        if found is None:
            return None
        unresolved.append(found)
    (ZU, ZV), (U, V) = unresolved, sides
    P = np.linalg.qr(rng.standard_normal((n3, k)))[0].T
    Q = np.linalg.qr(rng.standard_normal((n1, k)))[0]
    tU, tV = terms(P, Q, U), terms(P, Q, V)
    pairs = _unproved(
        P @ L0 @ Q + np.einsum("sj,jab->sab", ZU, tU),
        np.einsum("sj,jab->sab", ZV, tV),
        bound(P, Q, np.arange(nc), np.arange(0)),
    )
    if pairs is None:
        return None
    flips = np.hstack([ZU[pairs[:, 0]], ZV[pairs[:, 1]]])
    found = []
    for a in range(0, len(flips), 4096):
        chunk = flips[a : a + 4096]
        Ls = L0[None] + np.einsum("ij,sj,jk->sik", Wc, chunk.astype(float), Ac)
        low = _ranks(np.linalg.svd(Ls, compute_uv=False), tol, ref) <= m
        found.extend(chunk[low])
    return _first_carried(found, pb)


def _cut(M, free, norms, pb: TurningProblem) -> bool:
    """Whether no completion of the branch (``M`` with the neurons ``free`` undecided) has
    rank at most ``m``: projections annihilate the largest undecided terms (rows, then
    columns), the rest is bounded around its midpoint by Weyl's inequality."""
    Wc, Ac, m, tol, ref = pb.Wc, pb.Ac, pb.m, pb.tol, pb.ref
    n3, n1 = M.shape
    f = free[np.argsort(-norms[free], kind="stable")]
    cap_rows, cap_cols = max(n1 - m - 1, 0), max(n3 - m - 1, 0)
    F2, F1, R = f[:cap_rows], f[cap_rows : cap_rows + cap_cols], f[cap_rows + cap_cols :]
    X = M + 0.5 * (Wc[:, R] @ Ac[R])
    slack = 0.5 * float(np.sum(norms[R]))
    if len(F1):
        Pb = np.linalg.qr(Wc[:, F1])[0]
        X = X - Pb @ (Pb.T @ X)
        slack += float(
            np.sum(
                np.linalg.norm(Wc[:, F1] - Pb @ (Pb.T @ Wc[:, F1]), axis=0)
                * np.linalg.norm(Ac[F1], axis=1)
            )
        )
    if len(F2):
        Qb = np.linalg.qr(Ac[F2].T)[0]
        X = X - (X @ Qb) @ Qb.T
        slack += float(
            np.sum(
                np.linalg.norm(Ac[F2] - (Ac[F2] @ Qb) @ Qb.T, axis=1)
                * np.linalg.norm(Wc[:, F2], axis=0)
            )
        )
    sv = np.linalg.svd(X, compute_uv=False)
    if len(sv) <= m:
        return False
    big = float(np.linalg.norm(M, 2)) + float(np.sum(norms[free]))
    slack += 1e-13 * big
    return float(sv[m]) - slack > float(_threshold(tol, big, ref))


def _by_bounds(pb: TurningProblem, max_nodes: int = MAX_NODES) -> np.ndarray:
    L0, Wc, Ac, m, tol, ref = pb.L0, pb.Wc, pb.Ac, pb.m, pb.tol, pb.ref
    nc = Ac.shape[0]
    n3, n1 = L0.shape
    norms = np.linalg.norm(Wc, axis=0) * np.linalg.norm(Ac, axis=1)
    found: list[np.ndarray] = []
    stack = [(0, L0, np.zeros(nc, dtype=bool))]
    nodes = 0
    while stack:
        k, M, flips = stack.pop()
        nodes += 1
        if nodes % 1024 == 0:
            check_deadline()
        if nodes > max_nodes:
            undecided = max(n1 - m - 1, 0) + max(n3 - m - 1, 0)
            raise BlockNotCovered(
                f"which of the {nc} crossing second-layer neurons can turn around into the "
                f"always-active block ({m} neurons) was not decided within {max_nodes} "
                f"branches: their rows are not linearly independent, their wedge products "
                f"are too many to check, the two-sided split needs two sides of at most "
                f"{undecided} neurons (n1 - m - 1 + n3 - m - 1; 2^31 subsets at most) and "
                f"m + 1 <= {MAX_SPLIT_ORDER} (here {nc} neurons, m + 1 = {m + 1}), and the "
                f"rank of the block's linear part cuts a branch only with at most "
                f"{undecided} neurons undecided; the question contains SUBSET-SUM for every "
                f"m >= 1, so no method decides every input in polynomial time unless P = NP"
            )
        if k == nc:
            if _rank_of(M, tol, ref) <= m:
                found.append(flips)
            continue
        if _cut(M, np.arange(k, nc), norms, pb):
            continue
        on = flips.copy()
        on[k] = True
        stack.append((k + 1, M + np.outer(Wc[:, k], Ac[k]), on))
        stack.append((k + 1, M, flips))
    return _first_carried(found, pb)


def choose_turned(pb: TurningProblem, thorough: bool = True) -> np.ndarray:
    """Which crossing neurons of ``pb`` to turn around (a boolean mask over them, in their
    canonical order). Module docs; :class:`BlockNotCovered` when the branch and bound runs
    out. Not ``thorough`` (for ``equivalent``, which decides from the block as it is when
    the choice refuses):
    without the split route (seconds to tens of seconds) and with :data:`QUICK_NODES`
    branches."""
    L0, Ac = pb.L0, pb.Ac
    nc, n1 = Ac.shape
    if nc == 0:
        return np.zeros(0, dtype=bool)
    if nc <= MAX_ENUMERATED and 2**nc * L0.size <= MAX_ENTRIES:
        return _by_enumeration(pb)
    flip = _by_independent_rows(pb)
    if flip is None:
        flip = _by_independent_wedges(pb)
    if flip is None and thorough:
        flip = _by_split_projections(pb)
    if flip is not None:
        return flip
    return _by_bounds(pb, MAX_NODES if thorough else QUICK_NODES)
