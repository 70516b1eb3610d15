"""The float kernels of the region engine, compiled (numba).

* :func:`ascent_kernel`, the active-set walk across a cell. The region engine
  (:mod:`neuromanifold.relu._engine.cells`) calls it about three times per region: to decide
  whether a hyperplane crosses a cell, and (as :func:`center_kernel`) to move a region's
  point towards its Chebyshev centre. In numpy each walk is some hundred small array
  operations (about 0.2 ms, most of it call overhead); compiled it takes a few
  microseconds. The walk only *proposes* (a far point, or the multipliers of an emptiness
  certificate): the engine checks every proposal in exact arithmetic, so compiling it
  changes no decision's guarantee.
* :func:`signs_kernel`, the float signs of affine functions where a rounding bound lets
  floating point decide them (the engine's shortcut before an exact check; the bound is
  the one documented at :func:`neuromanifold.relu._engine.cells.float_signs`).
* :func:`best_start` and :func:`ball_radius`: the walk's start point and the radius of a
  point's ball in a cell (float heuristics and margins; no decision rests on them).

On the arrays of a few rows the engine handles, each kernel replaces some ten numpy
calls whose dispatch, not their arithmetic, was the cost.

numba compiles on the first call of a process and caches the machine code next to this
file (``cache=True``), so later processes load it in a fraction of a second.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: outcome codes of :func:`ascent_kernel`
NONE, CROSS, MAX = 0, 1, 2


@njit(cache=True)
def _orthogonalize(Q, m, a, coef):
    """``a`` minus its projection on the first ``m`` rows of ``Q`` (twice, for orthogonality
    in floats), adding the projection coefficients to ``coef``; in place."""
    d = a.size
    for _ in range(2):
        for b in range(m):
            h = 0.0
            for i in range(d):
                h += Q[b, i] * a[i]
            coef[b] += h
            for i in range(d):
                a[i] -= h * Q[b, i]


@njit(cache=True)
def ascent_kernel(A, c, x0, g, target, max_iter):
    """Maximize ``g . x`` over ``{x : A x <= c}`` (rows of unit length) from ``x0`` (strictly
    inside), walking along the active walls in floats, until ``g . x > target``.

    Returns:
        ``(code, x_out, x_last, W, lam)``: ``code`` is :data:`CROSS` (``x_out`` in the
        closed cell with ``g . x_out > target``; for ``target = inf`` on an unbounded
        cell, a point one step along an unbounded ray), :data:`MAX` (a maximizer ``x_out`` with
        ``g . x_out <= target`` at which the rows ``W`` are active and
        ``g = A[W]^T lam``, ``lam >= 0``) or :data:`NONE` (no decision within
        ``max_iter`` steps, or a degenerate wall); ``x_last`` is the last point the walk
        reached (``x0`` if it never moved).
    """
    # Whole: a numba kernel: one walk whose Q, L, W and slack change together at every step
    k, d = A.shape
    x = x0.copy()
    slack = c - A @ x
    W = np.empty(d, np.int64)
    m = 0
    Q = np.zeros((d, d))  # orthonormal basis of the active walls' normals: Q[:m]
    L = np.zeros((d, d))  # A[W] = L[:m, :m] @ Q[:m] (lower triangular)
    gn = math.sqrt(np.dot(g, g))
    gx = np.dot(g, x)
    u = np.empty(d)
    rate = np.empty(k)
    no_w = np.empty(0, np.int64)
    no_lam = np.empty(0)
    for _ in range(max_iter):
        # u: g projected off the active walls
        u[:] = g
        for a in range(m):
            h = np.dot(Q[a], g)
            for i in range(d):
                u[i] -= h * Q[a, i]
        gu = np.dot(u, u)  # = g . u
        if gu <= (1e-11 * gn) ** 2:
            # g is a combination of the active walls, g = Q^T L^T lam: solve L^T lam = Q g
            lam = np.empty(m)
            for a in range(m - 1, -1, -1):
                s = np.dot(Q[a], g)
                for b in range(a + 1, m):
                    s -= L[b, a] * lam[b]
                lam[a] = s / L[a, a]
            worst = -1
            for a in range(m):
                if lam[a] < -1e-12 * gn and (worst < 0 or lam[a] < lam[worst]):
                    worst = a
            if worst < 0:
                if gx > target:  # the walk stops before (kept for safety)
                    return CROSS, x, x, no_w, no_lam
                return MAX, x.copy(), x, W[:m].copy(), np.maximum(lam, 0.0)
            # leave the wall with the most negative multiplier; refactor the others
            for a in range(worst, m - 1):
                W[a] = W[a + 1]
            m -= 1
            for a in range(m):
                v = A[W[a]].copy()
                coef = np.zeros(a)
                _orthogonalize(Q, a, v, coef)
                L[a, :a] = coef
                L[a, a] = math.sqrt(np.dot(v, v))
                Q[a] = v / L[a, a]
            continue
        un = math.sqrt(gu)
        need = (target - gx) / gu
        rate[:] = A @ u
        for a in range(m):
            rate[W[a]] = 0.0
        t = np.inf
        r = -1
        thr = 1e-13 * un
        for j in range(k):
            if rate[j] > thr:
                s = slack[j] / rate[j]
                if s < t:
                    t, r = s, j
        lead = max(need, 0.0)
        if r < 0:  # unbounded along u: past the target (or one step along u for target inf)
            return CROSS, x + (2.0 * lead + 1.0 if lead < np.inf else 1.0) * u, x, no_w, no_lam
        t = max(t, 0.0)
        if need < t:
            return CROSS, x + 0.5 * (lead + t) * u, x, no_w, no_lam
        x += t * u
        slack -= t * rate
        gx += t * gu
        if m == d:  # d independent walls leave no direction
            return NONE, x, x, no_w, no_lam
        v = A[r].copy()
        coef = np.zeros(m)
        _orthogonalize(Q, m, v, coef)
        nv = math.sqrt(np.dot(v, v))
        if not nv > 1e-9:  # a wall dependent on the active ones (degenerate): an LP decides
            return NONE, x, x, no_w, no_lam
        Q[m] = v / nv
        L[m, :m] = coef
        L[m, m] = nv
        W[m] = r
        m += 1
    return NONE, x, x, no_w, no_lam


@njit(cache=True)
def ball_radius(A, c, x, cap):
    """Float radius of the largest ball around ``x`` inside ``{y : A y <= c}``: the least
    ``(c_i - A_i . x) / |A_i|`` (rows with a zero norm are skipped), capped at ``cap`` and
    at least 0 (0 where rounding makes ``x`` look outside)."""
    k, d = A.shape
    r = cap
    for i in range(k):
        nn = 0.0
        ax = 0.0
        for j in range(d):
            nn += A[i, j] * A[i, j]
            ax += A[i, j] * x[j]
        if nn > 0.0:
            s = (c[i] - ax) / math.sqrt(nn)
            if s < r:
                r = s
    return max(r, 0.0)


@njit(cache=True)
def center_kernel(A, c, x0, r0, cap, max_iter):
    """A float walk from ``x0`` (strictly inside ``{x : A x <= c}``, with a ball of radius
    ``r0`` around it) towards the Chebyshev centre: :func:`ascent_kernel` on
    ``max r : A_i . x + |A_i| r <= c_i, r <= cap`` (rows scaled to unit length) for at most
    ``max_iter`` steps, started at ``(x0, r0 (1 - 1e-6))``.

    Returns:
        ``(x, r)``: the last point the walk reached and the radius of its ball in the
        cell (:func:`ball_radius`); ``(x0, r0)``-like values when the walk did not move.
    """
    k, d = A.shape
    A2 = np.zeros((k + 1, d + 1))
    c2 = np.empty(k + 1)
    for i in range(k):
        nn = 0.0
        for j in range(d):
            nn += A[i, j] * A[i, j]
        inv = 1.0 / math.sqrt(nn)
        for j in range(d):
            A2[i, j] = A[i, j] * inv
        A2[i, d] = 1.0
        c2[i] = c[i] * inv
    A2[k, d] = 1.0
    c2[k] = cap
    g = np.zeros(d + 1)
    g[d] = 1.0
    y0 = np.empty(d + 1)
    y0[:d] = x0
    y0[d] = r0 * (1.0 - 1e-6)
    _, _, last, _, _ = ascent_kernel(A2, c2, y0, g, np.inf, max_iter)
    x = last[:d].copy()
    return x, ball_radius(A, c, x, cap)


@njit(cache=True)
def signs_kernel(A, c, X, rel):
    """Float values and trusted signs of the affine functions ``A[i] . x + c[i]`` at every
    row ``x`` of ``X``: the compiled body of
    :func:`neuromanifold.relu._engine.cells.float_signs_at` (see there for the rounding bound
    ``rel * (|A| |x| + |c|) + 2**-1070 (1 + |x|_1)``; a sign is 0 where the value does
    not exceed it, or where ``|A| |x| + |c|`` is not below 1e300).

    Returns:
        ``(signs, values)``, int8 and float arrays of shape ``(len(A), len(X))``.
    """
    m, d = A.shape
    n = X.shape[0]
    S = np.zeros((m, n), np.int8)
    Z = np.empty((m, n))
    for p in range(n):
        ax1 = 0.0
        for j in range(d):
            ax1 += abs(X[p, j])
        floor = 2.0**-1070 * (1.0 + ax1)
        for i in range(m):
            z = 0.0
            s = 0.0
            for j in range(d):
                z += A[i, j] * X[p, j]
                s += abs(A[i, j]) * abs(X[p, j])
            z += c[i]
            s += abs(c[i])
            Z[i, p] = z
            if s < 1e300:
                tau = rel * s + floor
                if z > tau:
                    S[i, p] = 1
                elif z < -tau:
                    S[i, p] = -1
    return S, Z


@njit(cache=True)
def best_start(An, slack, u, dist):
    """The pool point with the most room along ``u`` past its distance ``dist`` to the
    hyperplane: ``argmax_p (reach_p - dist_p)``, where ``reach_p`` is how far point p can
    move along ``u`` inside the cell (``min slack[i, p] / (An[i] . u)`` over the rows
    with ``An[i] . u > 0``, at least 0; ``inf`` when no row blocks it). ``An``: the unit
    rows, ``slack``: rows by points. The first maximum (or the first NaN) wins, like
    ``numpy.argmax``."""
    k, d = An.shape
    n = slack.shape[1]
    rate = np.empty(k)
    for i in range(k):
        t = 0.0
        for j in range(d):
            t += An[i, j] * u[j]
        rate[i] = t
    best = 0
    bv = -np.inf
    for p in range(n):
        reach = np.inf
        for i in range(k):
            if rate[i] > 0.0:
                v = slack[i, p] / rate[i]
                if v < reach:
                    reach = v
        if reach < 0.0:
            reach = 0.0
        val = reach - dist[p]
        if np.isnan(val):
            return p
        if p == 0 or val > bv:
            best, bv = p, val
    return best
