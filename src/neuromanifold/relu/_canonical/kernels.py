"""The compiled kernel of the always-active block (:mod:`.block`), with its own warm-up.

:func:`unproved_pairs_kernel`: which sums of two small matrices are not proved of full
rank, over billions of pairs (each test bounds its own rounding). numba compiles it on
the first call of a process and caches the machine code next to this file.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["unproved_pairs_kernel", "warm_up"]


def warm_up() -> None:
    """Compile (or load from numba's cache) :func:`unproved_pairs_kernel` with the
    argument types :mod:`.block` passes."""
    M = np.eye(2)[None]
    unproved_pairs_kernel(
        np.ones((1, 1)),
        M,
        M,
        np.ones(1),
        np.ones(1),
        0,
        1e-12,
        1e-9,
        np.zeros((2, 2), dtype=np.int64),
        0,
    )


@njit(cache=True)
def unproved_pairs_kernel(D, MA, MB, fa, fb, row0, c_det, c, out, count):
    """The pairs ``(row0 + a, b)`` of the block ``D`` (``D[a, b]``: ``det(MA + MB)`` from the
    minors) for which ``sigma_min(MA[row0 + a] + MB[b]) > c`` is not proved: first by
    ``|det| / F^(k-1)`` (``F = fa + fb`` bounds the Frobenius norm, ``c_det F^k`` the
    determinant's rounding), else by a Cholesky factorization of ``M^T M - (c^2 + delta) I``
    with ``delta`` above its rounding. Written to ``out`` while it has room; returns the
    new count."""
    k = MA.shape[1]
    M = np.empty((k, k))
    G = np.empty((k, k))
    for a in range(D.shape[0]):
        f = fa[row0 + a]
        for b in range(D.shape[1]):
            F = f + fb[b]
            Fk = 1.0
            for _ in range(k - 1):
                Fk *= F
            if abs(D[a, b]) > (c_det * F + c) * Fk:
                continue
            for i in range(k):
                for j in range(k):
                    M[i, j] = MA[row0 + a, i, j] + MB[b, i, j]
            cc = c + 2.0 * k * 1.1102230246251565e-16 * F  # the rounding of M's entries
            tr = 0.0
            for i in range(k):
                for j in range(k):
                    s = 0.0
                    for r in range(k):
                        s += M[r, i] * M[r, j]
                    G[i, j] = s
                tr += G[i, i]
            shift = cc * cc + 4.0 * (k + 2) ** 2 * 1.1102230246251565e-16 * tr
            proved = True
            for i in range(k):
                s = G[i, i] - shift
                for r in range(i):
                    s -= G[i, r] * G[i, r]
                if not s > 0.0:
                    proved = False
                    break
                d = math.sqrt(s)
                for j in range(i + 1, k):
                    t = G[j, i]
                    for r in range(i):
                        t -= G[j, r] * G[i, r]
                    G[j, i] = t / d
                G[i, i] = d
            if proved:
                continue
            if count < out.shape[0]:
                out[count, 0] = row0 + a
                out[count, 1] = b
            count += 1
    return count
