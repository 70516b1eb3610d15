"""The compiled step of linear bound propagation: one relaxation substituted into the
coefficients of a back substitution.

Written in numpy, :meth:`~neuromanifold.relu._bounds.linear.Relaxation.substitute` made a
dozen passes over the ``(boxes, rows, neurons)`` coefficients (their positive and negative
parts, one product per block of the relaxation, six products with vectors for the constant
and the rounding bound); on the branch and bound's many small boxes those passes were most
of the time. :func:`substitute_kernel` makes one: each coefficient picks the upper or the
lower relaxation by its sign and adds to the new coefficients, the constant and the
rounding bound at once. The sums run in any order, which the a-priori rounding bounds
(``gamma_k``, independent of the order) cover. A test checks it against the definition
written with dense matrices.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["substitute_kernel", "warm_up"]


@njit(cache=True)
def substitute_kernel(M, U, L, u0, l0, pre_abs, gamma_diag, gamma_const):  # pragma: no cover
    """The upper bound of ``M post`` as a function of ``pre`` (see the module docs).

    ``M``: ``(B, r, P n)``; ``U``, ``L``: ``(P, P, B, n)``, block ``[i, j]`` the diagonal by
    which block ``j`` of ``pre`` enters block ``i`` of ``post`` (zeros for none); ``u0``,
    ``l0``, ``pre_abs``: ``(B, P n)``. Returns the coefficients on ``pre`` (``(B, r, P n)``),
    the constant (``(B, r)``) and the rounding bound (``(B, r)``): ``gamma_diag`` times
    ``|M| |relaxation| |pre|`` plus ``gamma_const`` times ``|M| |constant|``."""
    B, r, width = M.shape
    P = U.shape[0]
    n = width // P
    lam = np.zeros((B, r, width))
    const = np.zeros((B, r))
    err = np.zeros((B, r))
    for b in range(B):
        for row in range(r):
            c = 0.0
            e_diag = 0.0
            e_const = 0.0
            for i in range(P):
                for k in range(n):
                    m = M[b, row, i * n + k]
                    if m > 0.0:
                        D = U
                        z = u0[b, i * n + k]
                    elif m < 0.0:
                        D = L
                        z = l0[b, i * n + k]
                    else:
                        continue
                    c += m * z
                    e_const += abs(m) * abs(z)
                    for j in range(P):
                        v = D[i, j, b, k]
                        if v != 0.0:
                            lam[b, row, j * n + k] += m * v
                            e_diag += abs(m) * abs(v) * pre_abs[b, j * n + k]
            const[b, row] = c
            err[b, row] = gamma_diag * e_diag + gamma_const * e_const
    return lam, const, err


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel with the argument types it gets."""
    z = np.zeros((1, 1, 2))
    blocks = np.zeros((1, 1, 1, 2))
    v = np.zeros((1, 2))
    substitute_kernel(z, blocks, blocks, v, v, v, 0.0, 0.0)
