"""The rows of one layer read as a whole: which neurons are dead or active on every input
by their sign patterns (:func:`sign_kinds`), and which rows may be positive multiples of
each other (:func:`close_pairs`, then :func:`exact_multiple`). Symmetries, reduction,
fibers and canonical forms read rows this way.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["close_pairs", "exact_multiple", "sign_kinds"]


def close_pairs(R: np.ndarray, rel: float) -> list[tuple[int, int]]:
    """Every pair ``(j, k)``, ``j < k``, of nonzero rows of ``R`` (floats) whose unit rows
    (each divided by its largest magnitude) may agree to within ``rel`` in every entry
    (``rel = 0``: rows that may be exact positive multiples of each other), and possibly
    others: the candidates for an exact or tolerance test.

    The unit rows are projected on a fixed random direction ``g``: rows within ``rel``
    project within ``rel * sum |g_i|``, exact multiples within the rounding (a few units
    in the last place of that sum), so every pair closer than ``max(rel, 1e-9)`` times
    the sum in projection is returned, found by one sort."""
    n = len(R)
    piv = np.max(np.abs(R), axis=1, initial=0.0) if n else np.zeros(0)
    live = np.flatnonzero(piv > 0)
    if not np.all(np.isfinite(R)) or np.any((piv[live] < 1e-290) | (piv[live] > 1e290)):
        # near the float range's ends: every pair goes to the test
        return [(int(j), int(k)) for a, j in enumerate(live) for k in live[a + 1 :]]
    U = R[live] / piv[live, None]
    g = np.random.default_rng(0).standard_normal(R.shape[1])
    p = U @ g
    thr = max(rel, 1e-9) * float(np.sum(np.abs(g)))
    order = np.argsort(p)
    out = []
    for a in range(len(order)):
        for c in range(a + 1, len(order)):
            if p[order[c]] - p[order[a]] > thr:
                break
            j, k = sorted((int(live[order[a]]), int(live[order[c]])))
            out.append((j, k))
    return out


def exact_multiple(a: np.ndarray, b: np.ndarray) -> Fraction | None:
    """``lam != 0`` with ``b == lam a`` exactly (the floats as the rationals they are),
    for two nonzero rows; else ``None`` (a zero row, or not a multiple)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    nz = np.flatnonzero(a)
    if nz.size == 0 or not np.array_equal(np.flatnonzero(b), nz):
        return None
    lam = Fraction(float(b[nz[0]])) / Fraction(float(a[nz[0]]))
    if all(Fraction(float(y)) == lam * Fraction(float(x)) for x, y in zip(a[nz], b[nz])):
        return lam
    return None


def sign_kinds(S: np.ndarray, first: bool) -> tuple[list[int], list[int]]:
    """The neurons dead and the neurons active on every input, from the sign patterns
    ``S`` (entries in ``{-1, 0, 1}``, bias last) of one hidden layer's rows: in the first
    layer, zero weights and a bias ``<= 0`` (dead) or ``> 0`` (a constant); after it,
    where inputs are outputs of a ReLU, no positive entry (dead) or no negative and some
    positive one (active)."""
    S = np.asarray(S)
    if S.size == 0:
        return [], []
    if first:
        zero = ~np.any(S[:, :-1] != 0, axis=1)
        dead, active = zero & (S[:, -1] <= 0), zero & (S[:, -1] > 0)
    else:
        dead = ~np.any(S > 0, axis=1)
        active = ~np.any(S < 0, axis=1) & ~dead
    return np.flatnonzero(dead).tolist(), np.flatnonzero(active).tolist()
