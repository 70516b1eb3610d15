"""Does a two-network query hold on a box? The question of the verification community's
equivalence benchmarks ("is ``|f(x) - g(x)| <= eps`` for every ``x`` of this box?"),
decided as a solver answers a VNN-LIB query.

A :class:`DifferenceQuery` states where to look for a counterexample: an input of the
box where some linear function of the two networks' output *difference*,
``c_k . (f(x) - g(x))``, exceeds its threshold ``t_k`` (strictly or not). The answer
(:class:`Verification`) is

* ``"sat"``: a counterexample, re-checked in exact rational arithmetic (both networks'
  outputs at the float input, the comparison exact);
* ``"unsat"``: no input of the box is one, proven by the bound engine (linear bound
  propagation on the difference of the two networks, aligned by the weight matching, and
  a branch and bound over the box, rigorous in floating point);
* ``"unknown"``: the budget ended first; the certified interval of the largest margin
  ``max_k (c_k . (f - g) - t_k)`` over the box says how far each side got.
"""

from __future__ import annotations

import dataclasses
import math
import time
from fractions import Fraction
from typing import Any

import numpy as np

from ..._errors import InputError, short_repr
from ..._results import Result
from ..._validation import (
    as_finite_array,
    as_seed_rng,
    check_nonnegative_float,
    check_positive_int,
)
from .._bounds.linear import propagate
from .._bounds.parallel import check_parallel, parallel_branch_and_bound
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain
from .._core.net import check_params, float_params, forward_unchecked
from .._distance.distance import difference_bound_chain
from .._engine.budget import check_budget
from .._engine.cells import ExactNet, exact_forward

__all__ = ["DifferenceQuery", "Verification", "verify"]

#: the default budget of a query, as VNN-COMP's per-instance timeout
DEFAULT_TIMEOUT = 100.0
#: the most outputs :meth:`DifferenceQuery.within` builds rows for
_MAX_OUTPUTS = 4096


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class DifferenceQuery(Result):
    """Where a counterexample is sought: an input of ``[lower, upper]`` with
    ``rows[k] . (f(x) - g(x)) > thresholds[k]`` (``>=`` where ``strict[k]`` is False) for
    some ``k``. ``names`` are the two networks' names (as a query file declares them),
    ``text`` the constraints as written (for messages)."""

    lower: np.ndarray
    upper: np.ndarray
    rows: np.ndarray
    thresholds: np.ndarray
    strict: tuple[bool, ...]
    names: tuple[str, str] = ("f", "g")
    text: tuple[str, ...] = ()

    @classmethod
    def within(cls, lower: Any, upper: Any, eps: float, num_outputs: int) -> DifferenceQuery:
        """The equivalence query: a counterexample is an input where some output differs by
        more than ``eps`` (``|f_o - g_o| > eps``)."""
        num_outputs = check_positive_int(num_outputs, "num_outputs")
        if num_outputs > _MAX_OUTPUTS:
            raise InputError(
                f"num_outputs must be at most {_MAX_OUTPUTS:,} (the query's rows are a dense "
                f"2m x m matrix); got {num_outputs:,}"
            )
        eps = check_nonnegative_float(eps, "eps")
        lower = as_finite_array(lower, "lower", ndim=1, error=InputError)
        upper = as_finite_array(upper, "upper", shape=lower.shape, error=InputError)
        if np.any(lower > upper):
            raise InputError(
                f"the box must satisfy lower <= upper in every coordinate; got lower "
                f"{short_repr(lower)}, upper {short_repr(upper)}"
            )
        eye = np.eye(num_outputs)
        return cls(
            lower=lower,
            upper=upper,
            rows=np.vstack([eye, -eye]),
            thresholds=np.full(2 * num_outputs, float(eps)),
            strict=(True,) * (2 * num_outputs),
            text=tuple(
                f"{s}(Y[{o}] - Y2[{o}]) > {eps}" for s in ("", "-") for o in range(num_outputs)
            ),
        )


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Verification(Result):
    """The answer to a :class:`DifferenceQuery` (see the module docs).

    Attributes:
        status: ``"sat"`` (a counterexample), ``"unsat"`` (proven: none) or ``"unknown"``.
        counterexample: the input (floats) when ``"sat"``, else ``None``.
        f_outputs, g_outputs: ``f(x)`` and ``g(x)`` at the counterexample (floats of the
            exact values).
        violated: the index of the constraint it meets.
        margin: the exact ``rows[k] . (f - g) - thresholds[k]`` there (rounded down).
        lower, upper: an interval of ``max_k (rows[k] . (f - g) - thresholds[k])`` over
            the box: ``upper`` rigorous (``"unsat"`` when it is below 0, at most 0 for
            ``>``); ``lower`` the largest margin found (exact at a counterexample, else
            evaluated in floats).
        certified: the status is proven (False only for ``"unknown"``).
        num_boxes: boxes the branch and bound bounded.
        seconds: wall-clock time.
        note: how the answer was reached, in words.
    """

    status: str
    counterexample: np.ndarray | None
    f_outputs: np.ndarray | None
    g_outputs: np.ndarray | None
    violated: int | None
    margin: float | None
    lower: float
    upper: float
    certified: bool
    num_boxes: int
    seconds: float
    note: str


def verify(
    f: Any,
    g: Any,
    query: DifferenceQuery,
    *,
    time_limit: float | None = DEFAULT_TIMEOUT,
    seed: Any = 0,
    workers: int = 1,
    scheduler: str | None = None,
) -> Verification:
    """Decide a two-network query on a box (see the module docs).

    Args:
        f, g: the two networks (lists of ``(W, b)``, loaded models, ...), float entries,
            one input and one output dimension, one depth.
        query: a :class:`DifferenceQuery` (:func:`neuromanifold.io.read_vnnlib` reads one
            from a VNN-LIB file; :meth:`DifferenceQuery.within` builds the equivalence
            query).
        time_limit: seconds (``None``: until decided).
        seed: seed of the sampling for counterexamples.
        workers, scheduler: the branch and bound on ``workers`` processes, or on the Dask
            cluster at ``scheduler`` (``"local"``: a ``LocalCluster`` started for the call).

    Returns:
        A :class:`Verification`.

    >>> f = [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.zeros(1))]
    >>> g = [(np.array([[1.0]]), np.array([0.01])), (np.array([[1.0]]), np.zeros(1))]
    >>> verify(f, g, DifferenceQuery.within([-1.0], [1.0], 0.05, 1)).status
    'unsat'
    >>> verify(f, g, DifferenceQuery.within([-1.0], [1.0], 0.001, 1)).status
    'sat'
    """
    # Whole: check, bound coarsely, sample, then branch and bound: the steps in order on one box
    start = time.monotonic()
    if not isinstance(query, DifferenceQuery):
        raise InputError(
            f"query must be a DifferenceQuery (neuromanifold.io.read_vnnlib reads one from "
            f"a VNN-LIB file; DifferenceQuery.within builds the equivalence query); got "
            f"{short_repr(query)}"
        )
    _, time_limit = check_budget(None, time_limit)
    workers, scheduler = check_parallel(workers, scheduler)
    deadline = None if time_limit is None else start + float(time_limit)
    rng = as_seed_rng(seed)
    fp, fq = float_params(f), float_params(g)
    if fp is None or fq is None:
        raise InputError("verify takes float networks (the bound engine bounds floats)")
    fp, fq = check_params(fp), check_params(fq)
    # a scale beyond the float range is refused, as by distance
    scale = path_norm_scale(fp) + path_norm_scale(fq)
    dom = _query_domain(query, fp, fq)
    rows, thr = np.asarray(query.rows, float), np.asarray(query.thresholds, float)
    # the bound from the parameters alone: |f(x)_o| <= scale_f * max(1, |x|_inf), so
    # rows_k . (f - g) <= |rows_k|_1 (scale_f + scale_g) reach; finite, the answer's
    # upper end when the bounds' arithmetic overflows
    reach = max(1.0, float(np.max(np.abs(np.r_[dom.lower, dom.upper]))))
    with np.errstate(over="ignore"):
        coarse = float(np.max(np.abs(rows).sum(axis=1) * scale * reach - thr))
    if not math.isfinite(coarse):
        raise InputError(
            f"the networks' outputs on this box may reach about {scale * reach:.3g}, beyond "
            f"the float range; rescale the inputs or the networks"
        )
    coarse = math.nextafter(coarse * (1 + 1e-9) + 1e-300, math.inf)
    # the chain bounds g - f; the query is about f - g
    chain, rounding, how = difference_bound_chain(fp, fq, dom)
    chain = dataclasses.replace(chain, outputs=-rows @ chain.outputs)
    # the rounding term bounds |f - f'| per output: |rows_k . (f - f')| <= |rows_k|_1 * it
    offsets = thr - rounding * np.abs(rows).sum(axis=1)

    margins = _Margins(fp, fq, rows, thr)

    # a first look for counterexamples: uniform points and the box's vertices
    X = np.vstack(
        [
            rng.uniform(dom.lower, dom.upper, (2048, dom.dim)),
            np.where(rng.random((512, dom.dim)) < 0.5, dom.lower, dom.upper),
        ]
    )
    vals = margins(X)
    k = int(np.argmax(vals))
    if vals[k] >= 0:  # a candidate already: re-checked exactly before any bounding
        witness = _exact_check(fp, fq, query, X[k])
        if witness is not None:
            # the upper end: the bound over the whole box (one pass), or the coarse one
            _, up, _ = propagate(chain, dom.lower[None], dom.upper[None])
            root = float(np.max(np.nextafter(up[0, : len(offsets)] - offsets, np.inf)))
            upper = min(root, coarse) if math.isfinite(root) else coarse
            return _answer(
                witness, X[k], witness["margin"], upper, num_boxes=1, start=start, how="sampling"
            )
    options = dict(
        gap=0.0, deadline=deadline, lower=float(vals[k]), point=X[k], offsets=offsets, decide=0.0
    )
    bb = parallel_branch_and_bound(
        chain, dom.lower, dom.upper, margins, workers=workers, scheduler=scheduler, **options
    )
    witness = _exact_check(fp, fq, query, bb.point) if bb.point is not None else None
    how = f"linear bound propagation on {how}; {bb.num_boxes:,} boxes"
    return _answer(
        witness,
        bb.point,
        float(bb.lower),
        float(bb.upper),
        num_boxes=bb.num_boxes,
        start=start,
        how=how,
        strict=all(query.strict),
    )


def _answer(witness, x, lower, upper, *, num_boxes, start, how, strict=True) -> Verification:
    """The :class:`Verification` from a counterexample (or ``None``) and the interval."""
    if witness is not None:
        status, note = "sat", "a counterexample, re-checked in exact arithmetic"
        lower = witness["margin"]
    elif upper < 0 or (upper <= 0 and strict):
        status, note = "unsat", "no counterexample on the box, proven by the bound engine"
    else:
        status, note = "unknown", "the budget ended before the bounds decided"
    return Verification(
        status=status,
        counterexample=None if witness is None else x,
        f_outputs=None if witness is None else witness["outputs"][0],
        g_outputs=None if witness is None else witness["outputs"][1],
        violated=None if witness is None else witness["k"],
        margin=None if witness is None else witness["margin"],
        lower=lower,
        upper=max(upper, lower),
        certified=status != "unknown",
        num_boxes=num_boxes,
        seconds=time.monotonic() - start,
        note=f"{note} ({how})",
    )


class _Margins:
    """``x -> max_k (rows_k . (f(x) - g(x)) - t_k)`` on rows of points, in floats (a class:
    it is sent to worker processes)."""

    def __init__(self, fp: list, fq: list, rows: np.ndarray, thresholds: np.ndarray):
        self.fp, self.fq, self.rows, self.thresholds = fp, fq, rows, thresholds

    def __call__(self, X: np.ndarray) -> np.ndarray:
        D = forward_unchecked(self.fp, X) - forward_unchecked(self.fq, X)
        return np.max(D @ self.rows.T - self.thresholds, axis=1)


def _query_domain(query: DifferenceQuery, fp: list, fq: list) -> Domain:
    """The query's box as a :class:`Domain`, its shapes checked against both networks."""
    d, m = fp[0][0].shape[1], fp[-1][0].shape[0]
    if (fq[0][0].shape[1], fq[-1][0].shape[0]) != (d, m):
        raise InputError(
            f"the two networks must take and give vectors of one size: "
            f"{d} -> {m} and {fq[0][0].shape[1]} -> {fq[-1][0].shape[0]}"
        )
    if len(fp) != len(fq):
        raise InputError(
            f"verify bounds two networks of one depth; got depths {len(fp)} and {len(fq)}"
        )
    lower = as_finite_array(query.lower, "the query's lower bounds", error=InputError)
    upper = as_finite_array(query.upper, "the query's upper bounds", error=InputError)
    if lower.shape != (d,) or upper.shape != (d,):
        raise InputError(
            f"the query's box has {lower.size} coordinates; the networks take {d} inputs"
        )
    rows = as_finite_array(query.rows, "the query's output rows", ndim=2, error=InputError)
    if rows.shape[1] != m:
        raise InputError(
            f"the query's output constraints are on {rows.shape[1]} outputs; the networks give {m}"
        )
    k = rows.shape[0]
    as_finite_array(query.thresholds, "the query's thresholds", shape=(k,), error=InputError)
    if len(query.strict) != k:
        raise InputError(f"the query has {k} output constraints and {len(query.strict)} flags")
    return Domain.box(lower, upper)


def _exact_check(fp: list, fq: list, query: DifferenceQuery, x: np.ndarray) -> dict | None:
    """The constraint ``x`` meets, in exact arithmetic (the first one), with the exact
    margin and outputs; ``None`` when it meets none."""
    of, _ = exact_forward(ExactNet(fp), x)
    og, _ = exact_forward(ExactNet(fq), x)
    diff = [Fraction(int(a.p), int(a.q)) - Fraction(int(b.p), int(b.q)) for a, b in zip(of, og)]
    for k, (row, t) in enumerate(zip(query.rows, query.thresholds)):
        value = sum((Fraction(float(c)) * v for c, v in zip(row, diff)), Fraction(0))
        excess = value - Fraction(float(t))
        if excess > 0 or (excess == 0 and not query.strict[k]):
            margin = _float(excess)
            if Fraction(margin) > excess:  # rounded down
                margin = math.nextafter(margin, -math.inf)
            outputs = (
                np.array([_float(Fraction(int(a.p), int(a.q))) for a in of]),
                np.array([_float(Fraction(int(b.p), int(b.q))) for b in og]),
            )
            return {"k": k, "margin": margin, "outputs": outputs}
    return None


def _float(x: Fraction) -> float:
    """``x`` as the nearest float (infinite beyond the float range)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf
