"""Interval bounds, rigorous in floating point: of every neuron's pre-activation over a box
(:func:`box_bounds`), and of the difference of two networks of one architecture, carried
through the layers (:func:`difference_bounds`). The first layer of the bound engine: the
analyses that need an upper bound or a proof of absence (``distance``, ``neurons``, the
MILP's big-M constants) read it from here.
"""

from __future__ import annotations

import numpy as np

from .._core.domain import Domain

__all__ = ["box_bounds", "difference_bounds"]

#: the unit roundoff of float64
_U = 2.0**-53


def _gamma(k: int) -> float:
    """The relative error bound of a k-term float dot product, with a margin."""
    return 1.01 * k * _U / (1 - k * _U)


def box_bounds(params: list, dom: Domain) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per layer (the output layer last), rigorous bounds ``[lo, hi]`` of every
    pre-activation over the box (interval arithmetic, each layer's float rounding
    bounded)."""
    lo, hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
    out = []
    for W, b in params:
        Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
        zlo, zhi = Wp @ lo + Wn @ hi + b, Wp @ hi + Wn @ lo + b
        slack = _gamma(W.shape[1] + 1) * (
            np.abs(W) @ np.maximum(np.abs(lo), np.abs(hi)) + np.abs(b)
        )
        zlo, zhi = zlo - slack, zhi + slack
        out.append((zlo, zhi))
        lo, hi = np.maximum(zlo, 0), np.maximum(zhi, 0)
    return out


def difference_bounds(p: list, q: list, dom: Domain) -> tuple[list, list]:
    """Rigorous bounds over the box of the difference of two networks of one
    architecture, layer by layer: ``[lo, hi]`` of ``z^q_l - z^p_l`` (every layer, the
    output layer last) and of ``h^q_l - h^p_l`` (the hidden layers).

    The difference is carried through the layers (``z^q - z^p = W^q (h^q - h^p) +
    (W^q - W^p) h^p + (b^q - b^p)``, with ``h^p`` from :func:`box_bounds`): for two nearby
    checkpoints it stays of the size of the weights' difference, where subtracting the two
    networks' own intervals gives the size of the weights. A ReLU maps a difference ``d``
    to one between ``min(d, 0)`` and ``max(d, 0)`` (it is monotone and 1-Lipschitz), to
    ``d`` itself where both neurons are active on the whole box and to 0 where both are
    inactive. Each layer's float rounding is bounded (the weights' differences included).
    """
    bp, bq = box_bounds(p, dom), box_bounds(q, dom)
    hp_lo, hp_hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
    dh_lo = dh_hi = np.zeros(hp_lo.size)
    pre, post = [], []
    for l, ((Wp, b_p), (Wq, b_q)) in enumerate(zip(p, q)):
        dW, db = Wq - Wp, b_q - b_p
        mid = (
            np.maximum(Wq, 0) @ dh_lo
            + np.minimum(Wq, 0) @ dh_hi
            + np.maximum(dW, 0) @ hp_lo
            + np.minimum(dW, 0) @ hp_hi
            + db,
            np.maximum(Wq, 0) @ dh_hi
            + np.minimum(Wq, 0) @ dh_lo
            + np.maximum(dW, 0) @ hp_hi
            + np.minimum(dW, 0) @ hp_lo
            + db,
        )
        slack = _gamma(2 * Wq.shape[1] + 3) * (
            np.abs(Wq) @ np.maximum(np.abs(dh_lo), np.abs(dh_hi))
            + np.abs(dW) @ np.maximum(np.abs(hp_lo), np.abs(hp_hi))
            + np.abs(db)
        )
        (zp_lo, zp_hi), (zq_lo, zq_hi) = bp[l], bq[l]
        # the two networks' own intervals bound it too (rounded outward)
        sep_lo, sep_hi = zq_lo - zp_hi, zq_hi - zp_lo
        sep_lo = sep_lo - 2 * _U * np.abs(sep_lo)
        sep_hi = sep_hi + 2 * _U * np.abs(sep_hi)
        d_lo, d_hi = np.maximum(mid[0] - slack, sep_lo), np.minimum(mid[1] + slack, sep_hi)
        pre.append((d_lo, d_hi))
        if l == len(p) - 1:
            break
        off = (zp_hi <= 0) & (zq_hi <= 0)
        on = (zp_lo >= 0) & (zq_lo >= 0)
        hq_lo, hq_hi = np.maximum(zq_lo, 0), np.maximum(zq_hi, 0)
        hp_lo, hp_hi = np.maximum(zp_lo, 0), np.maximum(zp_hi, 0)
        sep_lo, sep_hi = hq_lo - hp_hi, hq_hi - hp_lo
        dh_lo = np.where(
            off,
            0.0,
            np.where(on, d_lo, np.maximum(np.minimum(d_lo, 0), sep_lo - 2 * _U * np.abs(sep_lo))),
        )
        dh_hi = np.where(
            off,
            0.0,
            np.where(on, d_hi, np.minimum(np.maximum(d_hi, 0), sep_hi + 2 * _U * np.abs(sep_hi))),
        )
        post.append((dh_lo, dh_hi))
    return pre, post
