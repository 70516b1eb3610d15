"""The rank of the stacked parameter Jacobians of a set of regions, layer by layer, without
forming the matrix (used by :func:`neuromanifold.relu.functional_dimension`).

On a linear region R the Jacobian row of output k along a homogeneous input direction
``u = (x, t)`` has, in the block of layer l, ``G_l(R)[k, :] (x) a_{l-1}(R, u)``: the
derivative of output k in layer l's pre-activations, times layer l's homogeneous input
(``a_0 = u``). The rows of R span those of every u, so a region contributes ``m (d + 1)``
rows: too many to stack at trained sizes (a 784-256-128-10 network has P = 235,146
columns). Two facts split the rank into small pieces.

1. **The first layer** (``P_1 = n_1 (d + 1)`` columns): its block is ``G_1(R)[k, :] (x) u``,
   so along ``u = e_j`` a combination ``lambda`` of the rows ``(R, k)`` kills it exactly
   when ``lambda`` is in the left null space ``N_1`` of ``Delta``, the ``(R, k) x n_1``
   matrix of the ``G_1(R)`` (the same for every j). Hence, as for any matrix ``[A | B]``,
   ``rank = (d + 1) rank(Delta) + rank of {sum lambda (row along u, later blocks)}``,
   lambda in ``N_1``, u any.
2. **The second layer**: the later blocks depend on u only through ``z = H u``, the
   first layer's homogeneous pre-activation (``H = [[W_1, b_1], [0, 1]]``). When H has full
   row rank, z ranges over all of ``R^(n_1 + 1)``, and along ``z = e_j`` layer 2's input is
   ``e_j`` when neuron j is active in R and 0 otherwise (the bias coordinate always 1). So
   layer 2's block is ``w_j(lambda) (x) e_j``, ``w_j(lambda) = sum_{R: j active} lambda_R
   G_2(R)``, and the same split runs once per j: ``rank(Omega_j)`` for the matrix of the
   ``w_j`` over a basis of ``N_1``, and the combinations in its left null space go on.
3. **The rest** (layers 3 and on, or layers 2 and on when H is rank deficient): those
   combinations are stacked as rows of at most ``P - P_1 - P_2`` columns (``1,290`` at
   784-256-128-10) and their rank taken directly.

Each null space is replaced by a random subspace of it (seeded), sized by a rule of thumb
for what the next step can use: rows in the span of the Jacobian's, so what comes out is a
lower bound of the rank whatever the sizes; it reaches the rank (with probability one) when
they are large enough, which ``slack`` makes more likely.

Two kinds of numbers run the same steps:

* **Floats** (``tol > 0``): each level's rank is its numerical rank at ``tol``
  (:func:`neuromanifold._tolerance.numerical_rank`: columns normalized, singular values
  above ``tol`` times the largest); the null spaces are orthonormal; the gap reported is
  the narrowest over the levels.
* **Residues modulo a prime** (``exact=True``): the weights are exact binary fractions,
  reduced modulo :data:`PRIME`; every level is exact over that field (products by BLAS in
  two 13-bit halves, exact in doubles; ranks and null spaces by flint). The rank of a
  matrix modulo a prime never exceeds its rank over the rationals, so the sum is a
  certified lower bound of the rational rank, as long as each region really is one: the
  patterns are checked by :func:`certified_pattern` (every pre-activation's sign proven
  by a forward pass with rounding-error bounds).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import flint
import numpy as np

from ..._tolerance import numerical_rank, svd
from .._core.numbers import forward_error_bounds

__all__ = [
    "LayeredRank",
    "layered_rank",
    "certified_pattern",
    "residues",
    "residue_matmul",
    "residue_rank",
    "PRIME",
]

#: The prime of the exact route: below 2**26, so a product of two residues is exact in a
#: double (the matrix products split one factor into 13-bit halves).
PRIME = 67108859

#: Columns of the last, direct level beyond which the split does not apply (its rows are
#: factorized densely).
DIRECT_LIMIT = 6000

_HALF = 1 << 13


@dataclasses.dataclass(frozen=True)
class LayeredRank:
    """The rank of the rows of a set of regions and how it splits.

    ``levels`` are the rank of the first layer's factor (times ``d + 1``), the sum over
    the first layer's neurons of the second layer's factors (0 when H is rank deficient)
    and the rank of the rest; ``smallest_counted`` and ``largest_dropped`` (floats only)
    the narrowest gap over the levels, relative to each level's largest singular value.
    """

    rank: int
    levels: tuple[int, int, int]
    smallest_counted: float | None
    largest_dropped: float | None


# -- the two kinds of numbers ----------------------------------------------------------------
class _Floats:
    """Numerical ranks at ``tol``. Each column is divided by an a-priori scale: the norm
    its entries would have without the cancellations the null spaces bring about (a
    column that is 0 by cancellation keeps its rounding noise small instead of being
    normalized up to 1); a singular value counts when it exceeds ``tol`` times the
    largest and :data:`_NOISE` (rounding on that scale)."""

    exact = False

    def __init__(self, tol: float, rng: np.random.Generator):
        self.tol, self.rng = tol, rng
        self.smallest, self.dropped = None, None

    def weights(self, A: np.ndarray) -> np.ndarray:
        return np.asarray(A, dtype=float)

    def matmul(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return A @ B

    def _svd(self, A: np.ndarray, scale: np.ndarray, vectors: bool):
        """``(rank, U or None)`` of ``A`` with its columns divided by ``scale``."""
        keep = scale > 0
        if not np.any(keep) or A.shape[0] == 0:
            return 0, np.zeros((A.shape[0], 0))
        An = A[:, keep] / scale[keep]
        if vectors:
            U, s, _ = svd(An)
        else:
            U, s = None, svd(An, compute_uv=False)
        ok = (s > self.tol * s[0]) & (s > _NOISE)
        r = int(np.count_nonzero(ok))
        # relative to the largest, unless that is rounding too (then on the a-priori scale)
        rel = s / s[0] if s[0] > _NOISE else s
        if r:
            small = float(rel[r - 1])
            self.smallest = small if self.smallest is None else min(self.smallest, small)
        if r < s.size:
            drop = float(rel[r])
            self.dropped = drop if self.dropped is None else max(self.dropped, drop)
        return r, (U[:, :r] if vectors else None)

    def rank(self, A: np.ndarray, scale: np.ndarray | None = None) -> int:
        return self._svd(A, np.linalg.norm(A, axis=0) if scale is None else scale, False)[0]

    def left_null(
        self, A: np.ndarray, count: int, scale: np.ndarray | None = None
    ) -> tuple[int, np.ndarray]:
        """``(rank of A, orthonormal columns spanning a random count-dimensional subspace
        of {lambda: lambda^T A = 0})`` (all of it when it has fewer dimensions)."""
        rows = A.shape[0]
        r, U = self._svd(A, np.linalg.norm(A, axis=0) if scale is None else scale, True)
        k = min(count, rows - r)
        if k <= 0:
            return r, np.zeros((rows, 0))
        Z = self.rng.standard_normal((rows, k))
        Z -= U @ (U.T @ Z)
        Z -= U @ (U.T @ Z)  # twice: one projection leaves rounding in the range of A
        return r, np.linalg.qr(Z)[0]


#: Singular values at or below this, on the a-priori scale of :class:`_Floats`, are
#: rounding.
_NOISE = 2.0**-40


def residues(A: np.ndarray) -> np.ndarray:
    """Finite doubles as residues modulo :data:`PRIME` (exact binary fractions; a
    denominator ``2**k`` is invertible modulo the prime)."""
    A = np.asarray(A, dtype=float)
    mant, ex = np.frexp(A)
    mant = np.ldexp(mant, 53).astype(np.int64)  # A = mant * 2**(ex - 53), exactly
    ex = ex.astype(np.int64) - 53
    out = np.mod(mant, PRIME)
    for e in np.unique(ex):
        sel = ex == e
        out[sel] = out[sel] * pow(2, int(e), PRIME) % PRIME
    return out


def residue_matmul(A, B: np.ndarray) -> np.ndarray:
    """``A @ B`` modulo :data:`PRIME`, exactly, for residues ``A`` (an array, or a scipy
    sparse matrix of fewer than 2**14 columns) and ``B``: residues below 2**26 times
    13-bit halves sum to below 2**53 over fewer than 2**14 terms."""
    n = A.shape[-1]
    if n >= 1 << 14:
        out = np.zeros(A.shape[:-1] + B.shape[-1:], dtype=np.int64)
        for s in range(0, n, 1 << 13):
            out = (
                out + residue_matmul(A[..., s : s + (1 << 13)], B[..., s : s + (1 << 13), :])
            ) % PRIME
        return out
    Af = A.astype(float)
    # the float products are exact integers below 2**53: reduce them as int64 (numpy's
    # float fmod takes some 150 ns an entry, 12 times the integer remainder)
    hi = (Af @ (B >> 13).astype(float)).astype(np.int64) % PRIME
    lo = (Af @ (B & (_HALF - 1)).astype(float)).astype(np.int64)
    return (hi * _HALF + lo) % PRIME


def residue_rank(A: np.ndarray) -> int:
    """Rank modulo :data:`PRIME` of a matrix of residues (flint): at most its rank over
    the rationals."""
    return int(_nmod(A).rank()) if A.size else 0


def _nmod(A: np.ndarray) -> flint.nmod_mat:
    return flint.nmod_mat(A.shape[0], A.shape[1], A.ravel().tolist(), PRIME)


@functools.lru_cache(maxsize=1)
def svd_seconds_per_cube() -> float:
    """Seconds per n**3 of the singular values of an n x n triangular matrix on this
    machine, from n = 256 (the fastest of three, some 20 milliseconds once per process: a
    first call pays for cold caches)."""
    A = np.triu(np.random.default_rng(0).standard_normal((256, 256)))
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        np.linalg.svd(A, compute_uv=False)
        best = min(best, time.perf_counter() - start)
    return best / 256**3


@functools.lru_cache(maxsize=1)
def _matmul_seconds_per_term() -> float:
    """Seconds per multiply-add of a float matrix product on this machine, from 256 x 256
    (the fastest of three, a few milliseconds once per process)."""
    A = np.random.default_rng(0).standard_normal((256, 256))
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        A @ A
        best = min(best, time.perf_counter() - start)
    return best / 256**3


@functools.lru_cache(maxsize=1)
def _remainder_seconds_per_entry() -> float:
    """Seconds per entry of the int64 remainder modulo :data:`PRIME` (from 512 x 512)."""
    A = np.random.default_rng(0).integers(0, 1 << 52, (512, 512))
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        A % PRIME
        best = min(best, time.perf_counter() - start)
    return best / 512**2


def matmul_seconds(rows: int, inner: int, cols: int, exact: bool) -> float:
    """The expected seconds of a ``rows x inner`` by ``inner x cols`` product: of residues
    (:func:`residue_matmul`: two float products and three remainders an entry) or of
    floats."""
    if not exact:
        return _matmul_seconds_per_term() * rows * inner * cols
    return 2 * _matmul_seconds_per_term() * rows * inner * cols + (
        4 * _remainder_seconds_per_entry() * rows * cols
    )


@functools.lru_cache(maxsize=1)
def _residue_seconds() -> tuple[float, float]:
    """Seconds per entry of handing residues to flint and per ``n**3`` of their rank, from
    n = 256 (the fastest of three, some 10 milliseconds once per process)."""
    A = np.random.default_rng(0).integers(0, PRIME, (256, 256))
    entry = cube = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        M = _nmod(A)
        t1 = time.perf_counter()
        M.rank()
        entry, cube = min(entry, t1 - t0), min(cube, time.perf_counter() - t1)
    return entry / 256**2, cube / 256**3


def rank_seconds(shape: tuple[int, int], exact: bool) -> float:
    """The expected seconds of the rank of an ``r x c`` matrix: of residues (``exact``, the
    conversion to flint included) or of floats (their singular values)."""
    r, c = shape
    if not exact:
        return svd_seconds_per_cube() * r * c * min(r, c)
    entry, cube = _residue_seconds()
    return entry * r * c + cube * r * c * min(r, c)


class _Residues:
    exact = True

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.smallest = self.dropped = None

    def weights(self, A: np.ndarray) -> np.ndarray:
        return residues(A)

    def matmul(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return residue_matmul(A, B)

    def rank(self, A: np.ndarray, scale=None) -> int:
        return residue_rank(A)

    def left_null(self, A: np.ndarray, count: int, scale=None) -> tuple[int, np.ndarray]:
        """``(rank of A, count random vectors of {lambda: lambda^T A = 0})`` (as many as
        it has dimensions, if fewer): from the reduced echelon form ``E`` of ``A^T``
        (``r`` rows), random values on the free coordinates and, on the pivots, what
        ``E lambda = 0`` makes them (no basis of the whole null space is formed)."""
        rows = A.shape[0]
        if A.size == 0:
            k = min(count, rows)
            return 0, self.rng.integers(0, PRIME, (rows, k))
        E, r = _nmod(np.ascontiguousarray(A.T)).rref()
        r = int(r)
        k = min(count, rows - r)
        if k <= 0:
            return r, np.zeros((rows, 0), dtype=np.int64)
        Er = np.array([int(v) for v in E.entries()[: r * rows]], dtype=np.int64).reshape(r, rows)
        free = np.ones(rows, dtype=bool)
        piv = np.argmax(Er != 0, axis=1)
        free[piv] = False
        V = np.zeros((rows, k), dtype=np.int64)
        C = self.rng.integers(0, PRIME, (rows - r, k))
        V[free] = C
        V[piv] = (-self.matmul(Er[:, free], C)) % PRIME
        return r, V


# -- the pattern check of the exact route ----------------------------------------------------
def certified_pattern(Ws: list, bs: list, x: np.ndarray, patterns) -> bool:
    """Whether every hidden pre-activation of the network at the float point ``x`` is,
    exactly, non-zero with the sign ``patterns`` gives (so ``x`` is inside that region):
    the float pass clears its rounding-error bound
    (:func:`~neuromanifold.relu._core.numbers.forward_error_bounds`) in every layer."""
    layers = forward_error_bounds(list(zip(Ws, bs)), np.asarray(x, dtype=float)[None, :])
    return all(
        np.all(np.where(np.asarray(p, dtype=bool), Z[0], -Z[0]) > err[0])
        for (Z, err), p in zip(layers, patterns)
    )


# -- the split ------------------------------------------------------------------------------
def _derivatives(num, Ws: list, masks: list) -> list[np.ndarray]:
    """Per layer l, ``G_l`` of every region: ``(regions, m, n_l)``."""
    L = len(Ws)
    R, m = masks[0].shape[0], Ws[-1].shape[0]
    G = [None] * L
    G[L - 1] = np.broadcast_to(np.eye(m, dtype=np.int64 if num.exact else float), (R, m, m))
    for l in range(L - 1, 0, -1):
        G[l - 1] = num.matmul(G[l], Ws[l]) * masks[l - 1][:, None, :]
    return G


def _inputs(num, Ws: list, bs: list, masks: list, M: np.ndarray) -> list[np.ndarray]:
    """``K[l]``, ``(regions, n_(l-1) + 1, c)`` for ``l >= 2``: layer l's homogeneous input
    when layer 1's is the corresponding column of ``M`` (``K[0]``, ``K[1]`` are None)."""
    R = masks[0].shape[0]
    K = [None, None]
    for l in range(1, len(Ws) - 1):
        H = np.zeros((Ws[l].shape[0] + 1, Ws[l].shape[1] + 1), dtype=M.dtype)
        H[:-1, :-1], H[:-1, -1], H[-1, -1] = Ws[l], bs[l], 1
        D = np.concatenate([masks[l], np.ones((R, 1), dtype=bool)], axis=1)
        prev = M if l == 1 else K[l]
        K.append(num.matmul(H, prev) * D[:, :, None])
    return K


def _rest_rows(
    num, G: list, K: list, start: int, Lam: np.ndarray, cols, check=lambda upcoming=0.0: None
) -> np.ndarray:
    """The blocks of layers ``start`` and on of the combinations ``Lam`` (``(regions, m,
    s)``) of the rows along layer ``start - 1``'s homogeneous directions ``cols``: one row
    per (direction, combination). ``check`` is called between the products (each can take
    a second at trained sizes), so that a budget stops here."""
    R, m, s = Lam.shape
    out = []
    for l in range(start, len(G)):
        check()
        T = num.matmul(np.transpose(G[l], (0, 2, 1)), Lam)  # (R, n_l, s)
        check()
        Kc = K[l][:, :, cols]  # (R, n_in + 1, c)
        # sum over regions of T (x) K column, for each direction and combination
        A = np.transpose(Kc, (2, 1, 0)).reshape(-1, R)  # (c * (n_in + 1), R)
        B = T.reshape(R, -1)  # (R, n_l * s)
        # the largest product of the split (2 s at 8-60-60-1): not started past a budget
        check(upcoming=matmul_seconds(A.shape[0], R, B.shape[1], num.exact))
        Y = num.matmul(A, B).reshape(len(cols), Kc.shape[1], T.shape[1], s)
        out.append(np.transpose(Y, (0, 3, 2, 1)).reshape(len(cols) * s, T.shape[1] * Kc.shape[1]))
    return np.concatenate(out, axis=1)


def layered_rank(
    Ws: list,
    bs: list,
    patterns: list,
    *,
    tol: float = 0.0,
    exact: bool = False,
    slack: int = 16,
    seed: int = 0,
    check=None,
) -> LayeredRank | None:
    """The rank of the Jacobian rows of the regions with these activation ``patterns``
    (one list of per-layer boolean arrays each), split as the module docs say; ``None``
    when the direct level would have more than :data:`DIRECT_LIMIT` columns.

    ``slack`` is how many dimensions the random subspaces get beyond what the next level
    can use (more costs time, and raises the chance that they reach the rank of these
    rows). ``check`` (if given) is called between steps, to let a budget stop the
    computation, and before the last rank with ``upcoming``, its expected seconds
    (:func:`rank_seconds`), so that a budget does not start it past its limit."""
    check = check or (lambda upcoming=0.0: None)
    L, d = len(Ws), Ws[0].shape[1]
    if L < 2:
        raise ValueError("layered_rank needs a hidden layer")
    if not exact and not tol > 0:
        raise ValueError(f"layered_rank in floats needs tol > 0, got tol={tol!r}")
    widths = [d] + [w.shape[0] for w in Ws]
    block = [widths[l + 1] * (widths[l] + 1) for l in range(L)]
    # the first layer's homogeneous pre-activation z = H u; a neuron whose row of H is 0
    # has z_j = 0 for every u (no direction along it), the others must reach every z
    H = np.zeros((widths[1] + 1, d + 1))
    H[:-1, :-1], H[:-1, -1], H[-1, -1] = Ws[0], bs[0], 1.0
    kept = np.nonzero(np.any(H != 0, axis=1))[0]
    two = _full_row_rank(H[kept], exact)
    rest_cols = sum(block[2:]) if two else sum(block[1:])
    if rest_cols > DIRECT_LIMIT:
        return None
    rng = np.random.default_rng(seed)
    num = _Residues(rng) if exact else _Floats(tol, rng)
    return _split(
        num,
        Ws,
        bs,
        patterns=patterns,
        H=H,
        kept=kept,
        two=two,
        rest_cols=rest_cols,
        slack=slack,
        check=check,
    )


def _split(num, Ws, bs, *, patterns, H, kept, two, rest_cols, slack, check):
    """:func:`layered_rank` past its checks, with random subspaces of ``slack`` extra
    dimensions."""
    W = [num.weights(w) for w in Ws]
    b = [num.weights(v) for v in bs]
    L, d = len(W), Ws[0].shape[1]
    widths = [d] + [w.shape[0] for w in Ws]
    masks = [np.array([p[l] for p in patterns], dtype=bool) for l in range(L - 1)]
    R, m = len(patterns), widths[-1]
    G = _derivatives(num, W, masks)
    D = np.concatenate([masks[0], np.ones((R, 1), dtype=bool)], axis=1)
    # level 1: the first layer's factor
    Delta = G[0].reshape(R * m, widths[1])
    # per first-layer neuron, the combinations the rest gets: 1.5 times an even share of
    # its columns (Omega_j takes up to n_2 dimensions of N_1's, the rest are left over)
    per = math.ceil(1.5 * rest_cols / kept.size) + slack if rest_cols else 0
    if two:
        want = widths[2] + max(per, slack)
    else:
        want = math.ceil(1.3 * rest_cols / (d + 1)) + slack
    r1, N1 = num.left_null(Delta, want)
    check()
    levels = [r1 * (d + 1), 0, 0]
    N1 = N1.reshape(R, m, -1)
    rows = []
    eye = np.eye(widths[1] + 1, dtype=np.int64 if num.exact else float)
    if two:
        # level 2, per first-layer neuron j with a non-zero row (and the bias coordinate)
        K = _inputs(num, W, b, masks, eye)
        Q = num.matmul(np.transpose(N1, (0, 2, 1)), G[1])  # (R, c, n_2)
        Om = num.matmul(D.T.astype(Q.dtype), Q.reshape(R, -1)).reshape(
            widths[1] + 1, N1.shape[2], widths[2]
        )
        S2 = None if num.exact else np.sqrt(D.T.astype(float) @ np.sum(G[1] ** 2, axis=1))
        # every combination left for the direction of the bias (the only one reaching the
        # next layer's bias coordinate); for the neurons, enough to cover the rest
        for j in kept:
            count = N1.shape[2] if j == widths[1] else per
            r2, N2 = num.left_null(Om[j], count, None if num.exact else S2[j])
            levels[1] += r2
            if rest_cols and N2.shape[1]:
                Lam = num.matmul(N1 * D[:, j, None, None].astype(N1.dtype), N2)
                rows.append(_rest_rows(num, G, K, 2, Lam, [j], check))
            check()
        used = D[:, kept]
    elif rest_cols:
        # the direct level over layers 2 and on, along u = e_j: layer 2's input is D H u
        DH = num.weights(H)[None, :, :] * D[:, :, None].astype(eye.dtype)
        Kz = _inputs(num, W, b, masks, eye)
        check()
        K = [None, DH] + [num.matmul(Kz[l], DH) for l in range(2, L)]
        rows.append(_rest_rows(num, G, K, 1, N1, list(range(d + 1)), check))
        kept, used = slice(None), np.ones((R, d + 1), dtype=bool)
    if rows:
        scale = None if num.exact else _rest_scale(G, K, 2 if two else 1, used, kept)
        rest = np.concatenate(rows, axis=0)
        check(upcoming=rank_seconds(rest.shape, num.exact))  # one call, not interrupted
        levels[2] = num.rank(rest, scale)
    return LayeredRank(
        rank=sum(levels),
        levels=tuple(levels),
        smallest_counted=num.smallest,
        largest_dropped=num.dropped,
    )


def _rest_scale(G: list, K: list, start: int, used: np.ndarray, cols) -> np.ndarray:
    """The a-priori scale of each column of :func:`_rest_rows` (floats): an entry is a sum
    over regions and outputs of a unit combination times ``G_l[k, i] K_l[q, j]``, at most
    ``sqrt(sum_R |G_l[:, i]|^2 K_l[q, j]^2)`` (Cauchy-Schwarz), summed over the directions
    j a region is used along."""
    out = []
    for l in range(start, len(G)):
        gsq = np.sum(G[l] ** 2, axis=1)  # (R, n_l)
        ksq = np.einsum("Rqj,Rj->Rq", K[l][:, :, cols] ** 2, used.astype(float))
        out.append(np.sqrt(gsq.T @ ksq).reshape(-1))
    return np.concatenate(out)


def _full_row_rank(H: np.ndarray, exact: bool) -> bool:
    """Whether H has full row rank: exactly modulo the prime (which proves it over the
    rationals too), or in floats with every singular value above 1e-12 relative (far
    above rounding, so exactly as well)."""
    if H.shape[0] > H.shape[1]:
        return False
    if exact:
        num = _Residues(None)
        return num.rank(num.weights(H)) == H.shape[0]
    return numerical_rank(H.T, 1e-12)[0] == H.shape[0]
