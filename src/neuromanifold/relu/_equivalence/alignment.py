"""Two networks of one architecture put neuron against neuron, and what that gives: the
weight matching (a permutation and positive rescaling of one network's hidden neurons
onto the other's), the chain the bound engine bounds for their difference (aligned by the
matching where it matches), and equivalence on a box decided by the bound engine.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._bounds.branch import branch_and_bound
from .._bounds.linear import difference_chain, product_chain, propagate
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain
from .._core.net import float_params, forward_unchecked
from .._engine.budget import Budget
from .._engine.joint_regions import Pair, equivalence_result

__all__ = ["match_hidden_neurons", "difference_bound_chain", "by_bounds", "DifferenceAt"]

#: float64's unit roundoff and smallest normal number
_U, _TINY = 2.0**-53, 2.0**-1022
#: the bound engine's share of what is left of equivalent's budget (10 s without one)
_BOUNDS_SHARE, _BOUNDS_SECONDS = 0.5, 10.0


def match_hidden_neurons(p: list, q: list) -> tuple[list, list] | None:
    """Propose a permutation and positive rescaling of p's hidden neurons onto q's: per
    hidden layer, p's rows (in q's coordinates of the previous layer) and q's rows,
    normalized to unit length, matched by one ``linear_sum_assignment`` on their inner
    products. Returns the per-layer ``(perm, scales)`` (q's neuron i ~ scales[i] times p's
    neuron perm[i]) and the image of p (floats), or ``None`` when no positive match exists.
    Nothing is decided here: the caller certifies."""
    from scipy.optimize import linear_sum_assignment  # start-up: a slow import

    perm_prev, s_prev = None, None
    image, found = [], []
    for l, ((Wp, bp), (Wq, bq)) in enumerate(zip(p, q)):
        # p's layer in q's coordinates of the previous layer
        A = Wp if perm_prev is None else Wp[:, perm_prev] / s_prev[None, :]
        if l == len(p) - 1:
            image.append((A, bp.copy()))
            break
        norm_p = np.sqrt(np.einsum("ij,ij->i", A, A) + bp * bp)
        norm_q = np.sqrt(np.einsum("ij,ij->i", Wq, Wq) + bq * bq)
        if not (np.all(norm_p > 0) and np.all(norm_q > 0)):
            return None
        # cosines of the rows (W_j, b_j) of q and of p
        cos = (Wq @ A.T + np.outer(bq, bp)) / np.outer(norm_q, norm_p)
        if not np.all(np.isfinite(cos)):
            return None  # row norms beyond the float range (entries near 2**512)
        rows, perm = linear_sum_assignment(cos, maximize=True)
        if np.any(cos[rows, perm] < 0.5):
            return None  # a neuron of q matched to no positive multiple of one of p
        scales = norm_q / norm_p[perm]
        image.append((scales[:, None] * A[perm], scales * bp[perm]))
        found.append((perm, scales))
        perm_prev, s_prev = perm, scales
    return found, image


def difference_bound_chain(fp: list, fq: list, dom: Domain) -> tuple | None:
    """What the bound engine bounds for two float networks on a box: ``(chain, rounding,
    in words)``, or ``None`` when their depths differ.

    The candidates, the one with the smallest bound over the whole box chosen: the two
    networks side by side (one depth), and for one architecture the difference chain of
    the two as given and of q and the image of p under the weight matching (a permutation
    and positive rescaling of its hidden neurons), whose function differs from p's by its
    float rounding only, at most ``4 u L`` times p's path norm per unit of
    ``max(1, |x|_inf)`` (as ``equivalent`` certifies a match), added as ``rounding``.
    A wrong match is still sound, only loose: the smallest bound decides."""
    if len(fp) != len(fq):
        return None
    candidates = [(product_chain(fp, fq), 0.0, "the two networks side by side")]
    if [W.shape for W, _ in fp] == [W.shape for W, _ in fq]:
        candidates.append((difference_chain(fp, fq), 0.0, "the difference of the two networks"))
        aligned = _aligned(fp, fq, dom)
        if aligned is not None:
            candidates.append(aligned)

    def root(candidate):
        _, up, _ = propagate(candidate[0], dom.lower[None], dom.upper[None])
        return float(np.max(up)) + candidate[1]

    return min(candidates, key=root)


def _aligned(fp: list, fq: list, dom: Domain) -> tuple | None:
    """The difference chain of q and p's image under the weight matching, with the
    rounding term (see :func:`difference_bound_chain`), or ``None`` when nothing matches or the
    match is the identity."""
    reach = max(1.0, float(np.max(np.abs(np.r_[dom.lower, dom.upper]))))
    with np.errstate(all="ignore"):
        match = match_hidden_neurons(fp, fq) if len(fp) > 1 else None
        if match is None:
            return None
        image = match[1]
        rounding = 4 * _U * len(fp) * path_norm_scale(fp) * reach
    normal = all(not np.any((np.abs(a) < _TINY) & (a != 0)) for layer in image for a in layer)
    moved = any(
        not np.array_equal(perm, np.arange(perm.size)) or not np.all(scales == 1)
        for perm, scales in match[0]
    )
    if not (normal and moved and math.isfinite(rounding)):
        return None
    return (
        difference_chain(image, fq),
        math.nextafter(rounding * (1 + 1e-9), math.inf),
        "the difference of the two networks, aligned by the weight matching",
    )


class DifferenceAt:
    """``x -> max_o |f_p(x)_o - f_q(x)_o|`` on rows of points, in floats (a class, not a
    closure: it is sent to worker processes)."""

    def __init__(self, fp: list, fq: list):
        self.fp, self.fq = fp, fq

    def __call__(self, X: np.ndarray) -> np.ndarray:
        D = forward_unchecked(self.fp, X) - forward_unchecked(self.fq, X)
        return np.max(np.abs(D), axis=1)


def by_bounds(pair: Pair, dom: Domain, p, q, budget: Budget):
    """Equivalence on a box by the bound engine: the branch and bound of
    ``max |f_p - f_q|`` over the box, stopped once it decides against ``tol * scale``
    (for a share of the budget). ``equivalent=True`` when the rigorous upper end is within
    the threshold (the relative difference is at most the absolute one on a box); a
    witness when a point it found exceeds the threshold in exact arithmetic; ``None``
    otherwise (or for networks of other depths, or exact entries)."""
    fp, fq = float_params(p), float_params(q)
    if fp is None or fq is None or len(fp) != len(fq) or pair.tol == 0 or pair.scale == 0:
        return None
    engine = difference_bound_chain(fp, fq, dom)
    chain, rounding, how = engine
    thr = pair.tol * pair.scale
    left = budget.remaining()
    seconds = _BOUNDS_SECONDS if left is None else _BOUNDS_SHARE * left
    evaluate = DifferenceAt(fp, fq)
    bb = branch_and_bound(
        chain,
        dom.lower,
        dom.upper,
        evaluate,
        gap=0.0,
        deadline=time.monotonic() + seconds,
        decide=thr - rounding,
    )
    if bb.point is not None and bb.lower > thr and pair.exceeds(bb.point):
        return equivalence_result(
            pair,
            dom,
            equivalent=False,
            witness=bb.point,
            max_difference=pair.rel_value(bb.point),
            method="bounds",
            certified=True,
            note=f"the bound engine's branch and bound ({bb.num_boxes:,} boxes) found a "
            f"difference above tol, confirmed in exact arithmetic",
        )
    upper = bb.upper + rounding
    if upper <= thr:
        return equivalence_result(
            pair,
            dom,
            equivalent=True,
            witness=None,
            max_difference=math.nextafter(upper, math.inf) / pair.scale,
            method="bounds",
            certified=True,
            note=f"linear bound propagation on {how} and a branch and bound over "
            f"{bb.num_boxes:,} boxes bound the difference within tol on the box",
        )
    return None


def lifted(params: list) -> list:
    """The network ``g(y, s) = s f(y / s)`` (``s > 0``) and its limit at ``s = 0``, the
    homogeneous part (``f`` without its biases), as one bias-free ReLU network of the
    input ``(y, s)``, ``s >= 0``: every bias becomes a weight on ``s``, which every hidden
    layer carries through its ReLU (``relu(s) = s``)."""
    out = []
    for k, (W, b) in enumerate(params):
        last = k == len(params) - 1
        A = np.zeros((W.shape[0] + (0 if last else 1), W.shape[1] + 1))
        A[: W.shape[0], : W.shape[1]], A[: W.shape[0], -1] = W, b
        if not last:
            A[-1, -1] = 1.0
        out.append((A, np.zeros(A.shape[0])))
    return out


def _faces(d: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The boxes of ``(y, s)`` that cover the relative contract on R^d: the unit box
    (``s = 1``: ``|x|_inf <= 1``, where the relative difference is at most the absolute
    one) and, for ``|x|_inf = t >= 1``, the faces ``y_i = +-1`` of the unit cube with
    ``s = 1/t`` in [0, 1] (``s = 0``: the homogeneous parts, the limit at infinity)."""
    boxes = [(np.r_[-np.ones(d), 1.0], np.ones(d + 1))]
    for i in range(d):
        for sign in (1.0, -1.0):
            lo, hi = np.r_[-np.ones(d), 0.0], np.ones(d + 1)
            lo[i] = hi[i] = sign
            boxes.append((lo, hi))
    return boxes


def _on_rd(point: np.ndarray, pair: Pair) -> np.ndarray | None:
    """An input ``x`` of R^d for a point ``(y, s)`` of a face box where the lifted
    difference exceeds the threshold, confirmed exactly (``x = y / s``; at ``s = 0``, the
    homogeneous parts differ and ``s`` is moved off 0 until a finite ``x`` shows it)."""
    y, s = point[:-1], float(point[-1])
    for t in [s] + [10.0**-k for k in range(1, 13)] if s == 0 else [s]:
        if t <= 0:
            continue
        x = y / t
        if np.all(np.isfinite(x)) and pair.exceeds(x):
            return x
    return None


def by_bounds_everywhere(pair: Pair, p, q, budget: Budget):
    """Equivalence on all of R^d by the bound engine: the relative contract
    ``|f_p(x) - f_q(x)| <= tol * scale * max(1, |x|_inf)`` holds on R^d exactly when the
    lifted networks (:func:`lifted`) differ by at most ``tol * scale`` on the boxes of
    :func:`_faces` (the unit box, and the cube's faces times ``s`` in [0, 1]); each box's
    branch and bound gets its share of the budget. ``True`` when every box's rigorous
    upper end is within the threshold, a witness of R^d confirmed exactly, else ``None``."""
    fp, fq = float_params(p), float_params(q)
    if fp is None or fq is None or len(fp) != len(fq) or pair.tol == 0 or pair.scale == 0:
        return None
    lp, lq = lifted(fp), lifted(fq)
    d = fp[0][0].shape[1]
    whole = Domain.box(np.r_[-np.ones(d), 0.0], np.ones(d + 1))
    chain, rounding, how = difference_bound_chain(lp, lq, whole)
    thr = pair.tol * pair.scale
    left = budget.remaining()
    seconds = _BOUNDS_SECONDS if left is None else _BOUNDS_SHARE * left
    stop = time.monotonic() + seconds
    boxes = _faces(d)
    evaluate = DifferenceAt(lp, lq)
    num, upper = 0, 0.0
    for k, (lo, hi) in enumerate(boxes):
        now = time.monotonic()
        share = (stop - now) / (len(boxes) - k)
        if share <= 0:
            return None
        bb = branch_and_bound(
            chain, lo, hi, evaluate, gap=0.0, deadline=now + share, decide=thr - rounding
        )
        num += bb.num_boxes
        if bb.point is not None and bb.lower > thr:
            x = _on_rd(bb.point, pair)
            if x is not None:
                return equivalence_result(
                    pair,
                    Domain.whole(d),
                    equivalent=False,
                    witness=x,
                    max_difference=pair.rel_value(x),
                    method="bounds",
                    certified=True,
                    note=f"the bound engine's branch and bound on the unit box and the "
                    f"cube's faces times 1/|x|_inf ({num:,} boxes) found a relative "
                    f"difference above tol, confirmed in exact arithmetic",
                )
        upper = max(upper, bb.upper + rounding)
        if upper > thr:
            return None
    return equivalence_result(
        pair,
        Domain.whole(d),
        equivalent=True,
        witness=None,
        max_difference=math.nextafter(upper, math.inf) / pair.scale,
        method="bounds",
        certified=True,
        note=f"linear bound propagation on {how} of the networks lifted to (x / |x|_inf, "
        f"1 / |x|_inf) and a branch and bound over {num:,} boxes (the unit box and the "
        f"cube's {2 * d} faces) bound the relative difference within tol on R^d",
    )
