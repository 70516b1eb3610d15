"""A compiled weight matching with its certificate, for two networks of one architecture.

:func:`match_kernel` does in one call what ``relu.equivalent``'s matching path does in
numpy (:func:`neuromanifold.relu._equivalence.equivalence.match_hidden_neurons`, then
:func:`neuromanifold.relu._bounds.parameters.path_norm_scale` and
:func:`neuromanifold.relu._bounds.parameters.function_distance_bound`): per hidden layer, the
rows ``(W_j, b_j)`` of p (in q's coordinates of the layer before) and of q normalized, matched by
a linear assignment on their cosines, and the telescoping bound of the image of p against q.
On the networks of a few dozen neurons the matching is meant for, the numpy version is some
hundred small calls whose dispatch is the cost (0.6 ms at 8-6-8-1 against 0.13 ms for the
plain recipe a user would write); compiled, the whole certified match costs a few
microseconds more than the recipe.

The assignment is scipy's algorithm (the shortest augmenting path of Crouse 2016, with the
same order of columns, so ties break alike). The bound is the plain float64 chain of
:func:`neuromanifold.relu._bounds.parameters.telescoping_bound` with the same margin
``1 + 1e-9`` and the same bound on gradual underflow; wherever that bound is not
negligible the kernel reports :data:`FALLBACK` and the exponent-tracked numpy chain
decides. Tests check both against their numpy twins.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._core.net import ReLUNet

#: outcome codes of :func:`match_kernel`
MATCHED, NOT_FINITE, NO_MATCH, FALLBACK = 0, 1, 2, 3

#: half the smallest subnormal, rounded up: what gradual underflow can take from a product
_UNDERFLOW = 2.0**-1074
#: float64 unit roundoff
_U = 2.0**-53


@njit(cache=True)
def lsap_max(S):
    """A permutation ``col`` maximizing ``sum_i S[i, col[i]]`` over a square matrix (the
    algorithm of ``scipy.optimize.linear_sum_assignment``); ``col[0] = -1`` when ``S`` has
    no finite assignment."""
    n = S.shape[0]
    u = np.zeros(n)
    v = np.zeros(n)
    shortest = np.empty(n)
    path = np.full(n, -1, dtype=np.int64)
    col4row = np.full(n, -1, dtype=np.int64)
    row4col = np.full(n, -1, dtype=np.int64)
    in_rows = np.zeros(n, dtype=np.bool_)
    in_cols = np.zeros(n, dtype=np.bool_)
    remaining = np.empty(n, dtype=np.int64)
    for cur in range(n):
        for it in range(n):
            remaining[it] = n - it - 1
        in_rows[:] = False
        in_cols[:] = False
        shortest[:] = np.inf
        min_val = 0.0
        i = cur
        num_remaining = n
        sink = -1
        while sink == -1:
            index = -1
            lowest = np.inf
            in_rows[i] = True
            for it in range(num_remaining):
                j = remaining[it]
                r = min_val - S[i, j] - u[i] - v[j]  # the cost is -S
                if r < shortest[j]:
                    path[j] = i
                    shortest[j] = r
                if shortest[j] < lowest or (shortest[j] == lowest and row4col[j] == -1):
                    lowest = shortest[j]
                    index = it
            min_val = lowest
            if not min_val < np.inf:
                col4row[0] = -1
                return col4row
            j = remaining[index]
            if row4col[j] == -1:
                sink = j
            else:
                i = row4col[j]
            in_cols[j] = True
            num_remaining -= 1
            remaining[index] = remaining[num_remaining]
        u[cur] += min_val
        for i in range(n):
            if in_rows[i] and i != cur:
                u[i] += min_val - shortest[col4row[i]]
        for j in range(n):
            if in_cols[j]:
                v[j] -= min_val - shortest[j]
        j = sink
        while True:
            i = path[j]
            row4col[j] = i
            j, col4row[i] = col4row[i], j
            if i == cur:
                break
    return col4row


@njit(cache=True)
def _layer(flat, dims, offsets, l):
    """Views of layer ``l``'s ``W`` (``dims[l+1] x dims[l]``) and ``b`` in a flat buffer."""
    rows, cols = dims[l + 1], dims[l]
    o = offsets[l]
    return flat[o : o + rows * cols].reshape((rows, cols)), flat[
        o + rows * cols : o + rows * cols + rows
    ]


@njit(cache=True)
def _chain_slack(peaks, num_layers, n, num_products):
    """:func:`neuromanifold.relu._bounds.parameters.underflow_slack` from the per-layer
    largest entries."""
    growth = 1.0
    for l in range(num_layers):
        growth *= max(1.0, n * peaks[l])
    return num_products * n * _UNDERFLOW * growth


@njit(cache=True)
def path_norm_kernel(flat, dims, offsets):
    """The plain float64 path norm of
    :func:`neuromanifold.relu._bounds.parameters.path_norm_scale`, or ``-1.0`` when
    underflow could matter or a value left the float range."""
    L = dims.size - 1
    x = np.ones(dims[0])
    peaks = np.zeros(L)
    n = 0
    for l in range(L + 1):
        n = max(n, dims[l])
    for l in range(L):
        W, b = _layer(flat, dims, offsets, l)
        y = np.empty(W.shape[0])
        for i in range(W.shape[0]):
            s = 0.0
            for j in range(W.shape[1]):
                a = abs(W[i, j])
                peaks[l] = max(peaks[l], a)
                s += a * x[j]
            y[i] = s + abs(b[i])
        x = y
    peak = x.max()
    slack = _chain_slack(peaks, L, n, L)
    if np.isfinite(peak) and slack <= 1e-6 * peak:
        return peak
    return -1.0


@njit(cache=True)
def match_kernel(P, Q, dims, offsets):
    """Match the hidden neurons of p onto q (flat float64 buffers of one architecture,
    layer ``l``'s ``W`` then ``b`` from ``offsets[l]``) and bound the difference.

    Returns:
        ``(code, perms, scales, scale_p, scale_q, bound)``: for :data:`MATCHED`, per hidden
        neuron of q in order, the neuron of p it matches (``perms``, per layer) and the
        factor (``scales``), both networks' path norms and the bound of
        ``|f_p - f_q| / max(1, |x|_inf)`` (telescoping over the image of p, plus ``4 u L``
        times p's path norm for the rounding of forming that image).
        :data:`NOT_FINITE`: an entry is not finite; :data:`NO_MATCH`: a row is zero or a
        neuron of q matches no positive multiple of one of p (cosine below 0.5);
        :data:`FALLBACK`: a plain float chain cannot be trusted (the numpy path decides).
    """
    # Whole: a numba kernel: match layer by layer, then bound the image; both loops share buffers
    L = dims.size - 1
    hidden = 0
    for l in range(1, L):
        hidden += dims[l]
    perms = np.zeros(hidden, dtype=np.int64)
    scales = np.zeros(hidden)
    for k in range(P.size):
        if not (np.isfinite(P[k]) and np.isfinite(Q[k])):
            return NOT_FINITE, perms, scales, 0.0, 0.0, 0.0
    scale_p = path_norm_kernel(P, dims, offsets)
    scale_q = path_norm_kernel(Q, dims, offsets)
    if scale_p < 0 or scale_q < 0:
        return FALLBACK, perms, scales, 0.0, 0.0, 0.0
    image = np.empty_like(P)
    prev_perm = np.arange(dims[0])
    prev_scale = np.ones(dims[0])
    at = 0
    for l in range(L):
        Wp, bp = _layer(P, dims, offsets, l)
        Wq, bq = _layer(Q, dims, offsets, l)
        Wi, bi = _layer(image, dims, offsets, l)
        rows, cols = Wp.shape
        # p's layer in q's coordinates of the layer before
        A = np.empty((rows, cols))
        for i in range(rows):
            for j in range(cols):
                A[i, j] = Wp[i, prev_perm[j]] / prev_scale[j]
        if l == L - 1:
            Wi[:, :] = A
            bi[:] = bp
            break
        norm_p = np.empty(rows)
        norm_q = np.empty(rows)
        for i in range(rows):
            sp = bp[i] * bp[i]
            sq = bq[i] * bq[i]
            for j in range(cols):
                sp += A[i, j] * A[i, j]
                sq += Wq[i, j] * Wq[i, j]
            norm_p[i] = np.sqrt(sp)
            norm_q[i] = np.sqrt(sq)
            if not (norm_p[i] > 0 and norm_q[i] > 0):
                return NO_MATCH, perms, scales, scale_p, scale_q, 0.0
        # the inner products by BLAS (numba calls scipy's): n^2 d of the work at 784 inputs
        cos = np.ascontiguousarray(Wq) @ A.T
        for i in range(rows):
            for k in range(rows):
                cos[i, k] = (cos[i, k] + bq[i] * bp[k]) / (norm_q[i] * norm_p[k])
        col = lsap_max(cos)
        if col[0] < 0:
            return NO_MATCH, perms, scales, scale_p, scale_q, 0.0
        for i in range(rows):
            if cos[i, col[i]] < 0.5:
                return NO_MATCH, perms, scales, scale_p, scale_q, 0.0
        prev_perm = col
        prev_scale = np.empty(rows)
        for i in range(rows):
            s = norm_q[i] / norm_p[col[i]]
            prev_scale[i] = s
            perms[at + i] = col[i]
            scales[at + i] = s
            for j in range(cols):
                Wi[i, j] = s * A[col[i], j]
            bi[i] = s * bp[col[i]]
        at += rows
    # the telescoping bound of |f_image - f_q| (function_distance_bound)
    n = 0
    for l in range(L + 1):
        n = max(n, dims[l])
    peaks = np.zeros(L)
    r = np.ones(dims[0])
    total = np.zeros(dims[L])
    for l in range(L):
        Wa, ba = _layer(image, dims, offsets, l)
        Wb, bb = _layer(Q, dims, offsets, l)
        rows, cols = Wa.shape
        u = np.empty(rows)
        r_next = np.empty(rows)
        for i in range(rows):
            su = 0.0
            sr = 0.0
            for j in range(cols):
                a, b = abs(Wa[i, j]), abs(Wb[i, j])
                d = abs(Wa[i, j] - Wb[i, j])
                peaks[l] = max(peaks[l], max(a, max(b, d)))
                su += d * r[j]
                sr += a * r[j]
            u[i] = su + abs(ba[i] - bb[i])
            r_next[i] = sr + abs(ba[i])
        for k in range(l + 1, L):
            Wk, _ = _layer(Q, dims, offsets, k)
            w = np.zeros(Wk.shape[0])
            for i in range(Wk.shape[0]):
                s = 0.0
                for j in range(Wk.shape[1]):
                    s += abs(Wk[i, j]) * u[j]
                w[i] = s
            u = w
        for i in range(total.size):
            total[i] += u[i]
        r = r_next
    bound = total.max()
    slack = _chain_slack(peaks, L, n, L * L + L)
    rounding = 4 * _U * L * scale_p
    # the sum is a bound whatever the slack; handed back only when the slack is not
    # negligible next to it (a permuted copy has bound 0 and keeps the rounding term)
    if not (np.isfinite(bound) and slack <= 1e-6 * (bound + rounding)):
        return FALLBACK, perms, scales, scale_p, scale_q, 0.0
    bound = bound * (1.0 + 1e-9) + slack + rounding
    return MATCHED, perms, scales, scale_p, scale_q, bound


def warm_up() -> None:
    """Compile (or load from numba's cache) :func:`match_kernel` with the argument types
    ``relu.equivalent`` passes (a 3-4-4-1 network against itself)."""
    p = ReLUNet([3, 4, 4, 1]).random_params(0)
    flat = np.concatenate([a.ravel() for layer in p for a in layer])
    dims = np.array([p[0][0].shape[1]] + [W.shape[0] for W, _ in p], dtype=np.int64)
    offsets = np.cumsum([0] + [W.size + b.size for W, b in p[:-1]]).astype(np.int64)
    match_kernel(flat, flat, dims, offsets)
