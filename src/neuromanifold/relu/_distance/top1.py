"""Whether two classifiers rank the same class first on a box, proved by the bound engine.

A *counterexample* is an input where a class one network ranks first falls more than
``tau`` (``tol * scale``, output units) below the other network's largest output
(:class:`~neuromanifold.relu._distance.distance.Top1`). A box holds none when, for each
network and each class ``c`` it may rank first there, every other class ``j`` of the
other network satisfies one of

* ``g_j - g_c <= tau`` on the whole box (linear bound propagation of the class margins of
  one network, :func:`~neuromanifold.relu._bounds.linear.network_chain`), or
* ``(g_j - g_c) - (f_j - f_c) <= tau`` on the whole box (the same rows on the two
  networks' difference, the chain that ``distance`` bounds): where ``c`` ranks first for
  ``f``, ``f_j - f_c <= 0``, so ``g_j - g_c`` is at most that difference.

A class ``c`` may rank first for ``f`` on the box unless some ``f_j - f_c`` is bounded
below by a positive number there. Boxes that prove neither way are split at the middle of
their widest side (relative to the box given); the middle of each is checked for a
counterexample in exact arithmetic. Every bound is rigorous in floating point
(:func:`~neuromanifold.relu._bounds.linear.bound_linear`); the difference chain's own
rounding (an aligned copy's) is added to its bounds. A proof needs the two networks to be
their float entries and ``tau > 0``: near a decision boundary both conditions ask for a
margin, which the difference chain provides for nearly equal networks.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from .._bounds.linear import network_chain, propagate
from .._core.net import forward_unchecked

__all__ = ["Top1Search", "top1_by_bounds", "top_class_gap"]

#: boxes bounded at once
_BATCH = 64
#: boxes looked at before the search stops (each is a few bound propagations)
MAX_BOXES = 200_000


@dataclasses.dataclass(frozen=True)
class Top1Search:
    """What :func:`top1_by_bounds` decided: ``same`` (``True`` proved, ``False`` with a
    counterexample the caller recorded, ``None`` open), the boxes ``proved`` and ``open``
    when it stopped."""

    same: bool | None
    proved: int
    open: int


def top_class_gap(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Per row of the outputs ``P`` and ``Q`` (floats), how far the class one network ranks
    first falls below the other's largest output, the larger of the two ways (non-finite
    values count as 0): where a counterexample is most likely, to be checked exactly."""
    rows = np.arange(len(P))
    with np.errstate(all="ignore"):
        gap = np.maximum(
            Q.max(axis=1) - Q[rows, P.argmax(axis=1)], P.max(axis=1) - P[rows, Q.argmax(axis=1)]
        )
    return np.where(np.isfinite(gap), gap, 0.0)


def _margin_rows(m: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows ``e_j - e_c`` on ``m`` outputs for every ordered pair ``c != j``."""
    pairs = [(c, j) for c in range(m) for j in range(m) if c != j]
    D = np.zeros((len(pairs), m))
    for r, (c, j) in enumerate(pairs):
        D[r, j], D[r, c] = 1.0, -1.0
    return D, pairs


def _proved(up_p, up_q, up_d, pairs, m: int, tau: float) -> np.ndarray:
    """Per box, whether it holds no counterexample (module docs). ``up_*`` are the
    upper bounds ``(B, 2K)`` of ``+rows`` then ``-rows``; ``up_d`` is ``None`` without a
    difference chain."""
    K = len(pairs)
    B = up_p.shape[0]
    cs = np.array([c for c, _ in pairs])
    diff_ok = (
        np.zeros((B, K), bool)
        if up_d is None
        else np.maximum(up_d[:, :K], up_d[:, K:]) <= tau  # |(g_j-g_c)-(f_j-f_c)| bound
    )
    out = np.ones(B, bool)
    for up_own, up_other in ((up_p, up_q), (up_q, up_p)):
        never_top = np.zeros((B, m), bool)  # some f_j - f_c > 0 on the whole box
        np.logical_or.at(never_top, (slice(None), cs), -up_own[:, K:] > 0)
        fine = (up_other[:, :K] <= tau) | diff_ok  # per (c, j): the other's margin holds
        bad = np.zeros((B, m), bool)
        np.logical_or.at(bad, (slice(None), cs), ~fine)
        out &= ~np.any(bad & ~never_top, axis=1)
    return out


def top1_by_bounds(
    fp: list,
    fq: list,
    difference: tuple | None,
    lower: np.ndarray,
    upper: np.ndarray,
    tau: float,
    *,
    deadline: float | None,
    counterexample: Callable[[np.ndarray], bool],
) -> Top1Search:
    """Prove the box ``[lower, upper]`` free of counterexamples for the float networks
    ``fp``, ``fq`` (module docs), or find one at a box's middle (``counterexample(x)``
    checks it exactly and records it), until ``deadline`` (``time.monotonic()``) or
    :data:`MAX_BOXES`. ``difference``: ``(chain, rounding, how)`` of the two networks'
    difference, or ``None``."""
    # Whole: one loop over batches of boxes; the bounds, the proof and the split share them
    m = fp[-1][0].shape[0]
    D, pairs = _margin_rows(m)
    cp = dataclasses.replace(network_chain(fp), outputs=D)
    cq = dataclasses.replace(network_chain(fq), outputs=D)
    cd, rounding = None, 0.0
    if difference is not None:
        chain, rounding, _ = difference
        cd = dataclasses.replace(chain, outputs=D @ chain.outputs)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    width0 = np.where(upper > lower, upper - lower, 1.0)
    queue = [(lower, upper)]
    proved = looked = 0
    while queue:
        # the first batch (the box itself: milliseconds) runs even past the deadline
        late = looked and deadline is not None and time.monotonic() > deadline
        if late or looked >= MAX_BOXES:
            return Top1Search(same=None, proved=proved, open=len(queue))
        batch, queue = queue[:_BATCH], queue[_BATCH:]
        looked += len(batch)
        LO = np.array([lo for lo, _ in batch])
        HI = np.array([hi for _, hi in batch])
        with np.errstate(all="ignore"):
            _, up_p, _ = propagate(cp, LO, HI)
            _, up_q, _ = propagate(cq, LO, HI)
            up_d = None
            if cd is not None:
                _, up_d, _ = propagate(cd, LO, HI)
                up_d = up_d + 2 * rounding  # two outputs of an aligned copy each
        done = _proved(up_p, up_q, up_d, pairs, m, tau)
        done &= np.all(np.isfinite(up_p), axis=1) & np.all(np.isfinite(up_q), axis=1)
        proved += int(np.count_nonzero(done))
        mids = (LO + HI) / 2
        with np.errstate(all="ignore"):
            score = top_class_gap(forward_unchecked(fp, mids), forward_unchecked(fq, mids))
        for k in np.nonzero(~done)[0]:
            if score[k] > 0.5 * tau and counterexample(mids[k]):
                return Top1Search(same=False, proved=proved, open=len(queue))
            lo, hi = LO[k], HI[k]
            axis = int(np.argmax((hi - lo) / width0))
            if not hi[axis] > lo[axis]:
                return Top1Search(same=None, proved=proved, open=len(queue) + 1)
            mid = lo[axis] + (hi[axis] - lo[axis]) / 2
            left_hi, right_lo = hi.copy(), lo.copy()
            left_hi[axis], right_lo[axis] = mid, mid
            queue += [(lo, left_hi), (right_lo, hi)]
    return Top1Search(same=True, proved=proved, open=0)
