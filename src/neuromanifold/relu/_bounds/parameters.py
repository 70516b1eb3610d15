"""Bounds read off the parameters alone: the scale of a ReLU network (its l1 path norm with
biases, the scale every relative ``tol`` of the ReLU analyses is measured against; the
tolerance contract in ``neuromanifold._tolerance`` says why) and a rigorous bound of the
distance between two networks' functions from their weights (the telescoping bound),
both with their float rounding and gradual underflow bounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._errors import ParameterError

__all__ = [
    "SYMMETRY_ROUNDING",
    "path_norm_scale",
    "function_distance_bound",
    "telescoping_bound",
    "underflow_slack",
]


def path_norm_scale(params: Sequence[tuple[Any, Any]]) -> float:
    """The scale of a ReLU network: its l1 path norm with biases (see the module docs).

    Args:
        params: list of ``(W, b)`` pairs (floats, integers or Fractions).

    Returns:
        The largest row sum of ``|M_L| ... |M_1|`` (outputs only) with ``M_l = [[W_l, b_l], [0,
        1]]``, as a float (0.0 for the zero network); a :class:`ParameterError` when it exceeds the
        float range. Computed in plain float64 when the products stay far from both ends
        of the float range (a bound on what underflow can take decides), else with the
        exponent factored out layer by layer, so networks scaled by ``2**-1000`` or
        ``2**1000`` neither underflow nor overflow.

    >>> path_norm_scale([(np.array([[2.0, -1.0]]), np.array([0.5])), (np.array([[3.0]]),
    ...                  np.array([1.0]))])
    11.5
    """
    # the row sums of |M_L| ... |M_1| are |M_L| ( ... (|M_1| 1)): one matrix-vector product
    # per layer
    layers = [
        (np.abs(np.asarray(W, dtype=float)), np.abs(np.asarray(b, dtype=float)).reshape(-1))
        for W, b in params
    ]
    x = _plain_path_norms(layers)
    if x is not None:
        return float(np.max(x)) if x.size else 0.0
    # the vector kept as (entries, power of two) apart from the constant coordinate, so
    # that a chain of tiny layers followed by large ones does not underflow
    x, e = None, 0
    for W, b in layers:
        if x is None:
            x = np.ones(W.shape[1])
        x, e = _affine(W, b, x, e)
    if x is None:
        return 0.0
    with np.errstate(over="ignore"):
        scale = float(np.ldexp(float(np.max(x)), e)) if x.size else 0.0
    if not np.isfinite(scale):
        raise ParameterError(
            f"the network's scale (its l1 path norm with biases, about 2**{e}) is beyond "
            f"the float range (1.8e308); the tolerances are relative to it, so it must be "
            f"finite: divide a layer's weights and biases by a power of two (or the "
            f"outputs' scale) to bring it into range"
        )
    return scale


#: the absolute error gradual underflow can add to a float64 product, beyond its relative
#: rounding (half the smallest subnormal, rounded up)
_UNDERFLOW = 2.0**-1074


def underflow_slack(stacks: Sequence[Sequence[np.ndarray]], num_products: int) -> float:
    """A bound on what gradual underflow can take from ``num_products`` matrix-vector
    products of a chain of nonnegative matrices computed in plain float64.

    Each product loses at most ``n * 2**-1074`` per entry (``n`` the widest layer) beyond
    its relative rounding, and a lost amount is carried on by the later layers' matrices,
    whose row sums are at most ``G_k = max(1, n * max entry)`` (over every matrix of
    layer k in ``stacks``); additions of nonnegative floats lose nothing to underflow.
    Overflows to inf when the chain leaves the float range (the caller then falls back).
    """
    n = max(max(W.shape) for stack in stacks for W in stack)
    growth = 1.0
    for layer in zip(*stacks):
        peak = max((float(W.max()) for W in layer if W.size), default=0.0)
        growth *= max(1.0, n * peak)
    return num_products * n * _UNDERFLOW * growth


def _plain_path_norms(layers: list) -> np.ndarray | None:
    """``|M_L| ... |M_1| 1`` (outputs only) in plain float64 products, or ``None`` when
    underflow could matter (more than 1e-6 relative) or a value left the float range;
    the exponent-tracked chain then decides (measured 0.16 ms against 0.06 ms at 8-6-8-1:
    the networks people train stay far from both ends of the float range)."""
    if not layers:
        return None
    with np.errstate(all="ignore"):
        x = np.ones(layers[0][0].shape[1])
        for W, b in layers:
            x = W @ x + b
        peak = float(np.max(x)) if x.size else 0.0
        slack = underflow_slack([[W for W, _ in layers]], len(layers))
    return x if math.isfinite(peak) and slack <= 1e-6 * peak else None


def _normalized(x: np.ndarray, e: int) -> tuple[np.ndarray, int]:
    """``x * 2**e`` with the entries rescaled so that the largest lies in [1, 2)."""
    peak = float(np.max(x)) if x.size else 0.0
    if peak > 0.0 and np.isfinite(peak):
        k = math.frexp(peak)[1] - 1
        return np.ldexp(x, -k), e + k
    return x, e


def _sum(x: np.ndarray, ex: int, y: np.ndarray, ey: int) -> tuple[np.ndarray, int]:
    """``x 2**ex + y 2**ey`` (nonnegative entries), normalized."""
    x, ex = _normalized(x, ex)
    y, ey = _normalized(y, ey)
    if not np.any(x):
        return y, ey
    if not np.any(y):
        return x, ex
    e = max(ex, ey)  # the smaller term loses only what is below the larger's rounding
    return _normalized(np.ldexp(x, ex - e) + np.ldexp(y, ey - e), e)


def _affine(
    W: np.ndarray, b: np.ndarray, x: np.ndarray, ex: int, constant: float = 1.0
) -> tuple[np.ndarray, int]:
    """``W (x 2**ex) + b * constant`` for nonnegative ``W``, ``b`` and ``x``, as
    ``(entries, exponent)``: the augmented product ``M (x, constant)`` without its last
    coordinate, which stays ``constant``."""
    return _sum(W @ x, ex, b * constant, 0)


#: relative float64 rounding allowed when a sequence of symmetries is applied in floats
#: (a few operations per weight, each 1.1e-16 relative; far below any useful tol)
SYMMETRY_ROUNDING = 1e-12


def function_distance_bound(a: Sequence[tuple[Any, Any]], b: Sequence[tuple[Any, Any]]) -> float:
    """A bound on ``sup_x max_o |f_a(x)_o - f_b(x)_o| / max(1, ||x||_inf)`` for two ReLU
    networks of the same architecture, from their parameters alone.

    With augmented layer matrices ``M_l = [[W_l, b_l], [0, 1]]``: the largest row sum of
    ``sum_l |M^b_L| ... |M^b_(l+1)| |M^a_l - M^b_l| |M^a_(l-1)| ... |M^a_1|`` (telescoping
    over the layers; ReLU is 1-Lipschitz and fixes 0), with a margin for its own rounding.
    Divide by :func:`path_norm_scale` for the relative difference ``tol`` is compared to.

    >>> a = [(np.array([[1.0]]), np.array([0.0])), (np.array([[2.0]]), np.array([0.0]))]
    >>> b = [(np.array([[1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    >>> round(function_distance_bound(a, b), 6)   # |2 relu(x + 0.5) - 2 relu(x)| <= 1
    1.0
    """
    A = [(np.asarray(W, dtype=float), np.asarray(v, dtype=float).reshape(-1)) for W, v in a]
    B = [(np.asarray(W, dtype=float), np.asarray(v, dtype=float).reshape(-1)) for W, v in b]
    return telescoping_bound(
        [(np.abs(W), np.abs(v)) for W, v in A],
        [(np.abs(W), np.abs(v)) for W, v in B],
        [(np.abs(Wa - Wb), np.abs(va - vb)) for (Wa, va), (Wb, vb) in zip(A, B)],
    )


def telescoping_bound(abs_a: list, abs_b: list, abs_diff: list) -> float:
    """The bound of :func:`function_distance_bound` from its nonnegative pieces: per layer
    ``(|W^a_l|, |b^a_l|)``, ``(|W^b_l|, |b^b_l|)`` and ``(|W^a_l - W^b_l|, |b^a_l - b^b_l|)``
    (callers holding exact parameters take the differences exactly and round them).

    The largest row sum of the sum over l, computed as matrix-vector products:
    ``r = |M^a_(l-1)| ... |M^a_1| 1`` grows layer by layer, and each term's vector
    ``|D_l| r`` is carried through ``|M^b_(l+1)|, ..., |M^b_L|``; the margin ``1 + 1e-9``
    covers the float rounding of the sums.
    """
    plain = _plain_telescoping(abs_a, abs_b, abs_diff)
    if plain is not None:
        return plain
    r, er = np.ones(abs_a[0][0].shape[1]), 0  # the vector part of r; its constant is 1
    total, et = np.zeros(abs_diff[-1][0].shape[0]), 0
    for l, (Wd, bd) in enumerate(abs_diff):
        u, eu = _affine(Wd, bd, r, er)  # |D_l| (r, 1); its constant is 0
        for Wk, _ in abs_b[l + 1 :]:
            u, eu = _normalized(Wk @ u, eu)
        total, et = _sum(total, et, u, eu)
        r, er = _affine(*abs_a[l], r, er)
    with np.errstate(over="ignore"):
        bound = float(np.ldexp(float(np.max(total)), et)) if total.size else 0.0
    return bound * (1.0 + 1e-9)


def _plain_telescoping(abs_a: list, abs_b: list, abs_diff: list) -> float | None:
    """:func:`telescoping_bound` in plain float64 products, with the underflow slack added,
    or ``None`` when the slack is not negligible (above 1e-6 relative, as for two equal
    networks, whose bound is 0) or a value left the float range."""
    with np.errstate(all="ignore"):
        r = np.ones(abs_a[0][0].shape[1])
        total = np.zeros(abs_diff[-1][0].shape[0])
        for l, (Wd, bd) in enumerate(abs_diff):
            u = Wd @ r + bd
            for Wk, _ in abs_b[l + 1 :]:
                u = Wk @ u
            total = total + u
            r = abs_a[l][0] @ r + abs_a[l][1]
        bound = float(np.max(total)) if total.size else 0.0
        L = len(abs_diff)
        slack = underflow_slack(
            [[W for W, _ in abs_a], [W for W, _ in abs_b], [W for W, _ in abs_diff]], L * L + L
        )
    if not (math.isfinite(bound) and slack <= 1e-6 * bound):
        return None
    return bound * (1.0 + 1e-9) + slack
