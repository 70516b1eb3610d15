"""Branch and bound on the input box: the largest value of a chain's outputs over a box,
bracketed by an interval that shrinks monotonically.

The box with the largest upper bound is split in two along the coordinate whose width
reaches furthest into the first layer, ``width_i * |column i of the first layer|`` (the
relaxations of the hidden neurons loosen with the pre-activations' widths), a choice that
does not depend on the input's units. Measured on ACAS Xu 2_2 against its 5 %-pruned copy
(distance 0.014), 20 s on one process, each rule in a run of its own, the upper end
reached: this split bounds the distance by 0.020 on the box
and on the box mapped onto the unit box alike; the widest coordinate by 0.027 on the box
and 6.0 on the unit box; bounding the halves of every coordinate and keeping the best
split, by 0.031; splitting where the bound's own linear function varies most
(``|coefficient| * width``) measured 5x looser after 15 s, as it keeps halving one
coordinate. Both halves are bounded by linear bound propagation
(:func:`~neuromanifold.relu._bounds.linear.propagate`, many boxes per pass), and every
bounded box offers points to the lower end (its centre and the vertex that maximizes its
bound's linear function). A box whose bound is at most the best value found is
dropped; the upper end is the largest bound of the boxes left (and at least that
value). Best-first: the boxes are bounded in batches, the worst first, until the
interval is within the gap asked for or the budget ends (an anytime answer: the interval
so far).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import time
from collections.abc import Callable

import numpy as np

from .linear import Chain, optimized_output_bounds, propagate

__all__ = ["BranchAndBound", "branch_and_bound", "input_reach", "settled"]


@dataclasses.dataclass(frozen=True)
class BranchAndBound:
    """The outcome of :func:`branch_and_bound`.

    Attributes:
        upper: a rigorous bound of the largest output over the box.
        lower: the largest value found at ``point`` (as ``evaluate`` computes it).
        point: where, or ``None``.
        converged: ``upper - lower <= gap``.
        num_boxes: boxes bounded.
        num_open: boxes left open (each with a bound above ``lower + gap``).
        open_boxes: those boxes, as ``(bound, lo, hi, neuron bounds)``: a later call
            resumes from them (``start``).
    """

    upper: float
    lower: float
    point: np.ndarray | None
    converged: bool
    num_boxes: int
    num_open: int
    open_boxes: tuple = dataclasses.field(default=(), repr=False)

    @classmethod
    def of(
        cls,
        *,
        upper: float,
        lower: float,
        point: np.ndarray | None,
        gap: float,
        num_boxes: int,
        open_boxes,
    ) -> BranchAndBound:
        """The outcome with ``converged`` and ``num_open`` read off the others."""
        return cls(
            upper=upper,
            lower=lower,
            point=point,
            converged=upper - lower <= gap,
            num_boxes=num_boxes,
            num_open=len(open_boxes),
            open_boxes=tuple(open_boxes),
        )


def input_reach(chain: Chain) -> np.ndarray:
    """Per input coordinate, how far a unit of its width reaches into the first layer (the
    norm of its column): splits weigh widths by it, so that they do not depend on the
    input's units and never fall on an input the networks ignore (a fixed coordinate
    folded into the first layer). All ones when the first layer is zero."""
    reach = np.linalg.norm(chain.affine[0][0], axis=0)
    return reach if np.any(reach > 0) else np.ones_like(reach)


def settled(bound: float, best: float, gap: float, decide: float | None) -> bool:
    """Whether a box with this upper ``bound`` needs no more splitting, the best value found
    being ``best``: within ``gap`` of it, unless (with ``gap > 0``) the box still straddles
    ``decide`` (its bound above it, the best value not), which a query asks to settle."""
    if bound - best > gap:
        return False
    return decide is None or gap == 0 or not best <= decide < bound


def branch_and_bound(
    chain: Chain,
    lo: np.ndarray,
    hi: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    *,
    gap: float,
    deadline: float | None,
    lower: float = -np.inf,
    point: np.ndarray | None = None,
    batch: int = 32,
    max_boxes: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    intermediate: str = "backward",
    offsets: np.ndarray | None = None,
    decide: float | None = None,
    start: list | None = None,
    alpha_steps: int = 0,
) -> BranchAndBound:
    """Bracket ``max_x max_rows (chain outputs)`` over the box ``[lo, hi]`` (see the
    module docs).

    Args:
        chain: what to bound: its outputs with both signs (the quantity is the largest
            absolute output), or with ``offsets``, ``max_k (output_k - offsets[k])``.
        lo, hi: the box (1-D).
        evaluate: the quantity at points (``(n, d)`` -> ``(n,)``), for the lower end.
        gap: stop once ``upper - lower <= gap``.
        deadline: a ``time.monotonic()`` value to stop at (``None``: none).
        lower, point: a value already found, and where.
        batch: boxes split per pass.
        max_boxes: stop after bounding this many boxes.
        should_stop: asked between passes (a shared budget).
        intermediate: how the hidden layers are bounded (see
            :func:`~neuromanifold.relu._bounds.linear.propagate`).
        offsets: see ``chain``.
        decide: also stop once the interval lies on one side of this value (a query:
            ``lower > decide`` or ``upper <= decide``); with ``gap > 0``, boxes within
            ``gap`` whose bound is still above it while the best value is not are split
            on (see :func:`settled`).
        start: open boxes of an earlier call (its ``open_boxes``) to go on from, instead
            of the whole box (``lo``, ``hi`` are then only the box's extent).
        alpha_steps: steps of the lower slopes' optimization per pass
            (:func:`~neuromanifold.relu._bounds.linear.optimized_output_bounds`; 0: CROWN's
            adaptive slopes alone).
    """
    # Whole: offer() and the main loop share the heap and the best value found (nonlocal)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    best, best_x = float(lower), point
    counter = itertools.count()

    def bounds(los, his, prior=None):
        layers, ups, Ms = propagate(chain, los, his, intermediate=intermediate, prior=prior)
        if alpha_steps:
            # the optimized slopes' bound where it is the tighter (both are rigorous)
            ups2, Ms2 = optimized_output_bounds(chain, los, his, layers, steps=alpha_steps)
            better = ups2 < ups
            ups, Ms = np.where(better, ups2, ups), np.where(better[..., None], Ms2, Ms)
        if offsets is not None:
            k = len(offsets)
            ups, Ms = np.nextafter(ups[:, :k] - offsets, np.inf), Ms[:, :k]
        return ups, Ms, layers

    heap: list = []
    num_boxes = 0
    reach = input_reach(chain)

    def offer(los, his, ups, Ms, layers):
        nonlocal best, best_x
        rows = np.argmax(ups, axis=1)
        coef = Ms[np.arange(len(rows)), rows]
        vertices = np.where(coef > 0, his, los)
        X = np.vstack([vertices, (los + his) / 2])
        vals = evaluate(X)
        k = int(np.argmax(vals))
        if vals[k] > best:
            best, best_x = float(vals[k]), X[k]
        for i in range(len(los)):
            bound = float(ups[i, rows[i]])
            # a box whose bound is at most a value found cannot raise the maximum (the
            # upper end stays at least ``best``, so dropping it keeps that end rigorous)
            if bound > best:
                known = [(lo_[i], hi_[i]) for lo_, hi_ in layers]
                heapq.heappush(heap, (-bound, next(counter), los[i], his[i], known))

    if start is None:
        up, M, layers = bounds(lo[None], hi[None])
        num_boxes = 1
        offer(lo[None], hi[None], up, M, layers)
    else:
        for bound, blo, bhi, known in start:
            if bound > best:
                heapq.heappush(heap, (-bound, next(counter), blo, bhi, known))
    while heap:
        top = -heap[0][0]
        if settled(top, best, gap, decide):
            break
        if decide is not None and (best > decide or max(top, best) <= decide):
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
        if max_boxes is not None and num_boxes >= max_boxes:
            break
        if should_stop is not None and should_stop():
            break
        parents = []
        while heap and len(parents) < batch:
            item = heapq.heappop(heap)
            if settled(-item[0], best, gap, decide):
                heapq.heappush(heap, item)
                break
            parents.append(item)
        los, his, parent_bounds, known = [], [], [], []
        for neg, _, blo, bhi, parent_layers in parents:
            width = bhi - blo
            k = int(np.argmax(width * reach))
            mid = blo[k] + width[k] / 2
            left_hi, right_lo = bhi.copy(), blo.copy()
            left_hi[k], right_lo[k] = mid, mid
            los += [blo, right_lo]
            his += [left_hi, bhi]
            parent_bounds += [-neg, -neg]
            known += [parent_layers, parent_layers]
        los, his = np.array(los), np.array(his)
        # the parent's neuron bounds hold on both halves
        prior = [
            (np.array([k[j][0] for k in known]), np.array([k[j][1] for k in known]))
            for j in range(len(known[0]))
        ]
        ups, Ms, layers = bounds(los, his, prior)
        # a child's bound never above its parent's (both hold on the child)
        ups = np.minimum(ups, np.array(parent_bounds)[:, None])
        num_boxes += len(los)
        offer(los, his, ups, Ms, layers)
    upper = max(best, -heap[0][0]) if heap else best
    return BranchAndBound.of(
        upper=upper,
        lower=best,
        point=best_x,
        gap=gap,
        num_boxes=num_boxes,
        open_boxes=[(-item[0], item[2], item[3], item[4]) for item in heap],
    )
