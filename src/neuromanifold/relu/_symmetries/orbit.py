"""How far a parameter lies from another's permutation-scaling orbit, layer by layer."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["orbit_gap"]

#: rows of the cost matrix built at once (bounds the memory of 784-wide layers)
_CHUNK = 32


def _unit_rows(layers: list, l: int) -> None:
    """Scale hidden layer ``l``'s rows (0-based) to unit length in place, pushing the
    factor into the next layer's columns."""
    W, c = layers[l]
    R = np.hstack([W, c[:, None]])
    m = np.max(np.abs(R), axis=1, initial=0.0)
    m[m == 0] = 1.0
    s = m * np.sqrt(np.sum((R / m[:, None]) ** 2, axis=1))  # no overflow in the squares
    Wn, cn = layers[l + 1]
    # a zero row's scaling moves only its outgoing column: that column gets unit size
    out = np.max(np.abs(Wn), axis=0, initial=0.0)
    s = np.where(s == 0, np.where(out > 0, 1.0 / np.where(out > 0, out, 1.0), 1.0), s)
    layers[l] = (W / s[:, None], c / s)
    layers[l + 1] = (Wn * s[None, :], cn)


def orbit_gap(p: list, q: list) -> float:
    """The largest difference, layer by layer, between the normal forms of ``p`` and
    ``q`` (checked parameters of the same widths): every hidden row scaled to unit length
    (the factor pushed on), ``q``'s neurons matched to ``p``'s by a minimum-cost
    assignment on max-norm distances, each layer's difference relative to its largest
    entry. About 1e-15 for a permuted, rescaled copy; of the size of the change for a
    move that leaves the orbit, whatever the scale of the later layers (where
    :func:`~neuromanifold.relu.orbit_distance`, relative to the largest entry of all,
    shrinks it)."""
    a = [(W.copy(), c.copy()) for W, c in p]
    b = [(W.copy(), c.copy()) for W, c in q]
    gap = 0.0
    for l in range(len(a)):
        if l < len(a) - 1:
            _unit_rows(a, l)
            _unit_rows(b, l)
        Ra = np.hstack([a[l][0], a[l][1][:, None]])
        Rb = np.hstack([b[l][0], b[l][1][:, None]])
        if not (np.all(np.isfinite(Ra)) and np.all(np.isfinite(Rb))):
            return float("nan")
        if l < len(a) - 1:
            cost = np.vstack(
                [
                    np.max(np.abs(Ra[i : i + _CHUNK, None, :] - Rb[None, :, :]), axis=2)
                    for i in range(0, len(Ra), _CHUNK)
                ]
            )
            _, perm = linear_sum_assignment(cost)
            b[l] = (b[l][0][perm], b[l][1][perm])
            b[l + 1] = (b[l + 1][0][:, perm], b[l + 1][1])
            Rb = Rb[perm]
        top = max(float(np.max(np.abs(Ra), initial=0.0)), float(np.max(np.abs(Rb), initial=0.0)))
        if top > 0:
            gap = max(gap, float(np.max(np.abs(Ra - Rb))) / top)
    return gap
