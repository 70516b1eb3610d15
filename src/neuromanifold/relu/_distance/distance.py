"""The distance between two ReLU networks: the largest difference of their outputs over a
domain, as a certified interval.

``distance(p, q, domain)`` bounds

    ``D = sup_x max_o |f_p(x)_o - f_q(x)_o|``              on a box (absolute), and
    ``D = sup_x max_o |f_p(x)_o - f_q(x)_o| / max(1, ||x||_inf)``   on R^d or the orthant

(on an unbounded domain the difference of two different networks grows linearly, so it is
measured per unit of ``max(1, ||x||_inf)``, as in the tolerance contract) from both sides:

* ``lower``: the exact difference at ``point``, an input of the domain, found by sampling
  (uniform and over several scales), the maximizers of the LPs or MILPs below and the
  exact simplex; re-evaluated in exact rational arithmetic at the returned float point.
* ``upper``: proven by
  - ``"regions"``: the joint regions of both networks (the exact region engine), on each an
    LP with an exact duality bound, and the exact simplex where that bound is weaker than
    ``lower + gap``: an exact bound (``certified=True``);
  - ``"branch_and_bound"`` (on a box): the bound engine, linear bound propagation on
    the two networks' *difference* (neuron paired with neuron after the weight matching
    aligns them, so a permuted copy's bound is its rounding) or on the two side by side,
    and a branch and bound that splits the box where the bound is worst; rigorous in
    floating point (``certified=True``);
  - ``"milp"``: one mixed-integer program per output and sign (HiGHS, big-M constants from
    interval and LP bounds), whose floating-point dual bound plus the drift its
    feasibility tolerances allow is reported with ``certified=False``;
  - ``"parameter_bound"`` / ``"interval"`` when the budget ends first: the bound of
    :func:`neuromanifold.relu._bounds.parameters.function_distance_bound` (two networks of one
    architecture) or interval arithmetic over the box (``certified=True``, with a margin
    for float rounding), whichever is smaller.

With ``top1=True`` (a box only) the result also says whether the two networks rank the same
class first at every point of the box (:class:`Top1`): the classifier property equivalence
verifiers check. A *counterexample* is an input where a class one network ranks first (ties
included) falls more than ``tol * scale`` (absolute, in output units) below the other
network's largest output, checked in exact arithmetic; with ``tol=0``, a point where the
sets of top classes differ. "Same" is proved by the joint regions (per region, network and
class an LP with an exact duality bound, the exact simplex where that is too weak) or,
where they do not run and the networks are their float entries, by the bound engine over
boxes (:mod:`~neuromanifold.relu._distance.top1`: class margins of each network and of
their difference bounded on each box, boxes split where that does not settle them; needs
``tol > 0``); sampling and the middles of unsettled boxes look for a counterexample, and
the answer is otherwise undecided (``same=None``).

A box is mapped onto ``[-1, 1]^d`` by composing the first layer with the affine map, in
exact arithmetic; there ``max(1, ||z||_inf) = 1``, so the region engine's homogenized
supremum is the absolute one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import flint
import numpy as np

from ..._errors import ComputationLimitError, InputError
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import (
    as_seed_rng,
    check_bool,
    check_choice,
    check_nonnegative_float,
)
from ...exact import qrows, to_fmpq
from .._bounds.interval import box_bounds, difference_bounds
from .._bounds.linear import propagate
from .._bounds.parallel import check_parallel, parallel_branch_and_bound
from .._bounds.parameters import function_distance_bound
from .._core.domain import Domain, as_domain
from .._core.net import check_params, float_params, forward_unchecked
from .._core.numbers import pow2, to_float
from .._engine.budget import ANYTIME_TIME_LIMIT, Budget
from .._engine.cells import exact_forward
from .._engine.joint_regions import Best, Pair, sup_by_milp, sup_by_regions, top1_by_regions
from .._equivalence.alignment import DifferenceAt, difference_bound_chain
from .._equivalence.equivalence import (
    ascend_difference,
    expected_joint_regions,
    relative_difference,
    sample_points,
)
from .top1 import top1_by_bounds, top_class_gap

__all__ = ["Distance", "Top1", "distance"]

_METHODS = ("auto", "regions", "bounds", "milp")
#: ``method="auto"`` runs the region engine when at most this many joint regions are
#: expected, else the bound engine (on a box), else the MILP
_REGIONS_FIRST = 20_000
#: ... and, where the bound engine runs, only when at most this many are expected (the
#: exact engine then ends in about a second; beyond, the bound engine reaches the gap
#: first)
_REGIONS_BEFORE_BOUNDS = 300
_NUM_SAMPLES = 4096


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Distance(Result):
    """The distance of two ReLU networks on a domain, as an interval (see the module docs).

    Attributes:
        lower: the exact difference at ``point`` (rounded down): ``D >= lower``.
        upper: a bound with ``D <= upper`` (rounded up), proven by ``upper_method``.
        point: the input of the domain where ``lower`` is attained.
        relative: True on an unbounded domain (the values are per unit of
            ``max(1, ||x||_inf)``), False on a box (absolute output differences).
        upper_method: ``"regions"``, ``"branch_and_bound"``, ``"milp"``,
            ``"parameter_bound"`` or ``"interval"``.
        certified: ``upper`` is proven (exact arithmetic, or float bounds with a margin
            for their rounding); False for the MILP's floating-point bound.
        gap: the width asked for: the search stops once ``upper - lower <= gap``.
        converged: whether it did (else the budget ended first; ``note`` says where).
        scale: the larger path norm of the two networks (``tol * scale`` is the
            equivalence threshold of :func:`~neuromanifold.relu.equivalent`).
        tol: the relative tolerance; ``within_tol`` compares ``upper`` with it.
        num_regions: joint regions enumerated (``None`` when the engine did not run).
        num_lps, num_milps: LPs and MILPs solved.
        domain: the domain.
        note: how the bounds were found, in words.
        top1: with ``top1=True``, whether the two networks rank the same class first on
            the box (a :class:`Top1`); else ``None``.
    """

    lower: float
    upper: float
    point: np.ndarray | None
    relative: bool
    upper_method: str
    certified: bool
    gap: float
    converged: bool
    scale: float
    tol: float
    num_regions: int | None
    num_lps: int
    num_milps: int
    domain: Domain
    note: str
    top1: "Top1 | None" = None

    @property
    def within_tol(self) -> bool | None:
        """Whether the networks are equivalent up to ``tol`` on the domain, as
        :func:`~neuromanifold.relu.equivalent` measures it (per unit of
        ``max(1, ||x||_inf)``, threshold ``tol * scale``): True when ``upper`` is within
        the threshold (on a box ``upper`` is absolute, and the relative difference is at
        most it), False when the difference at ``point`` exceeds it, None when the
        interval does not decide."""
        thr = self.tol * self.scale
        if self.upper <= thr:
            return True
        at_point = (
            self.lower
            if self.relative or self.point is None
            else self.lower / max(1.0, float(np.max(np.abs(self.point))))
        )
        return False if at_point > thr else None


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Top1(Result):
    """Whether two classifiers rank the same class first at every point of a box.

    Attributes:
        same: True (proved: no counterexample anywhere on the box), False (``witness`` is
            one) or ``None`` (undecided: no counterexample found, and the proof did not
            run or did not finish; ``note`` says which).
        witness: an input of the box where the top classes differ (see the module docs),
            or ``None``.
        classes: ``(class A ranks first, class B ranks first)`` at the witness, or ``None``.
        margin: at the witness, how far (output units) the class one network ranks first
            falls below the other network's largest output; ``None`` without a witness.
        certified: the verdict is proved (``False`` only when ``same`` is ``None``).
        method: ``"regions"`` (the joint regions decided), ``"branch_and_bound"`` (the
            bound engine's search over boxes decided: :mod:`.top1`) or ``"search"``
            (sampling found the witness, or nothing decided).
        tol: the relative tolerance; the margin counts above ``tol * scale``.
        note: how the verdict was reached, in words.
    """

    same: bool | None
    witness: np.ndarray | None
    classes: tuple[int, int] | None
    margin: float | None
    certified: bool
    method: str
    tol: float
    note: str


def _unit_box(dom: Domain) -> tuple[Any, Domain, Any]:
    """The map taking a network to the network on ``[-1, 1]^d`` (its first layer composed
    with the affine map of ``[-1, 1]^d`` onto the box, in exact rationals), the unit box,
    and the map ``z -> x`` (floats, clipped to the box)."""
    lo, hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
    c = [(to_fmpq(a) + to_fmpq(b)) / 2 for a, b in zip(lo, hi)]
    r = [(to_fmpq(b) - to_fmpq(a)) / 2 for a, b in zip(lo, hi)]

    def compose(exact):
        (W, b), rest = exact[0], exact[1:]
        W = qrows(W)
        W1 = [[w * rk for w, rk in zip(row, r)] for row in W]
        b1 = [bi + sum((w * ck for w, ck in zip(row, c)), flint.fmpq(0)) for row, bi in zip(W, b)]
        return [(np.array(W1, dtype=object), np.array(b1, dtype=object))] + [
            (np.array(qrows(Wl), dtype=object), np.array(bl, dtype=object)) for Wl, bl in rest
        ]

    d = lo.size
    unit = Domain.box(-np.ones(d), np.ones(d))
    center, half = (lo + hi) / 2, (hi - lo) / 2
    return compose, unit, (lambda z: np.clip(center + half * np.asarray(z, float), lo, hi))


def _interval_bound(p: list, q: list, dom: Domain) -> float:
    """Interval arithmetic over the box (every layer's float rounding bounded): ``max_o``
    of the widest difference of the two networks' output intervals, and for one
    architecture of the difference carried through the layers
    (:func:`~neuromanifold.relu._neurons.neurons.difference_bounds`), rounded up."""
    with np.errstate(all="ignore"):
        lp, hp = box_bounds(p, dom)[-1]
        lq, hq = box_bounds(q, dom)[-1]
        width = float(np.max(np.maximum(hp - lq, hq - lp)))
        if [W.shape for W, _ in p] == [W.shape for W, _ in q]:
            lo, hi = difference_bounds(p, q, dom)[0][-1]
            width = min(width, float(np.max(np.maximum(-lo, hi))))
    # the subtraction's own rounding: one relative ulp, and up
    return math.nextafter(width * (1 + 2**-52), math.inf) if np.isfinite(width) else math.inf


def _engine_for(method: str, fp: list, fq: list, dom: Domain, floats: bool) -> tuple | None:
    """:func:`difference_bound_chain` where it runs (float networks on a box), else ``None``; an
    :class:`InputError` when ``method="bounds"`` asks for it there."""
    engine = difference_bound_chain(fp, fq, dom) if floats and dom.kind == "box" else None
    if method == "bounds" and engine is None:
        raise InputError(
            "method='bounds' bounds two float networks of one depth on a box; got "
            + ("networks of depths %d and %d" % (len(fp), len(fq)) if floats else "exact entries")
            + ("" if dom.kind == "box" else f" on the {dom.kind} domain")
        )
    return engine


def _route(method: str, pair: Pair, dom: Domain, rng, engine, gap: float) -> tuple[str, str]:
    """The upper end's method (``"auto"`` resolved by the joint regions expected) and the
    note's first words."""
    if method != "auto":
        return method, ""
    expected = expected_joint_regions(pair, dom, rng)
    if engine is not None and gap > 0:
        chosen = "regions" if expected <= _REGIONS_BEFORE_BOUNDS else "bounds"
    else:
        chosen = "regions" if expected <= _REGIONS_FIRST else "milp"
    return chosen, f"about {expected:.0f} joint regions expected: {chosen}; "


def _by_bounds(
    engine: tuple,
    fp: list,
    fq: list,
    dom: Domain,
    *,
    budget: Budget,
    gap: float,
    best: Best,
    parallel: tuple[int, str | None],
    decide: float | None = None,
) -> tuple[float, np.ndarray | None, str]:
    """The upper end by the bound engine's branch and bound over the box (its lower end
    starts from ``best``; ``parallel``: workers and scheduler; ``decide``: a threshold the
    interval should not straddle when it stops for the gap): ``(upper, the best point it
    found, what it did in words)``."""
    chain, rounding, how_aligned = engine
    workers, scheduler = parallel
    options = dict(
        gap=gap,
        decide=decide,
        deadline=budget.deadline,
        lower=to_float(best.value * pow2(best.pair.E)) if best.point is not None else 0.0,
    )
    bb = parallel_branch_and_bound(
        chain,
        dom.lower,
        dom.upper,
        DifferenceAt(fp, fq),
        workers=workers,
        scheduler=scheduler,
        **options,
    )
    upper = bb.upper + rounding
    upper = math.nextafter(upper, math.inf) if rounding else upper
    where = (
        ""
        if workers == 1 and scheduler is None
        else (f" on {'the Dask cluster ' + scheduler if scheduler else f'{workers} processes'}")
    )
    note = (
        f"linear bound propagation on {how_aligned}, branch and bound over "
        f"{bb.num_boxes:,} boxes{where} ({bb.num_open:,} left open)"
    )
    return upper, bb.point, note


def _gap_and_threshold(gap: Any, thr: float) -> tuple[float, float | None]:
    """The gap asked for (default the tolerance's resolution ``thr``), and the threshold the
    bound engine's interval should settle a side of: ``thr`` for the default gap (so that
    ``within_tol`` is decided as far as the budget goes), else none."""
    if gap is None:
        return thr, thr
    return check_nonnegative_float(gap, "gap"), None


def _root_decides(chain, dom: Domain, gap: float) -> bool:
    """Whether the bound over the whole box is already within ``gap`` (a permuted or
    rescaled copy): the search for the lower end is then one batch, not a share of the
    budget."""
    _, up, _ = propagate(chain, dom.lower[None], dom.upper[None])
    return bool(np.max(up) <= gap)


def _working_pair(pair0: Pair, dom: Domain, fp: list, fq: list, floats: bool) -> tuple:
    """The pair the engines read (on a box: both networks composed with the map from the
    unit box), the domain they read it on, the map back to the user's inputs, and the
    upper bound from the parameters alone, ``(value, method)``: the answer when the
    budget ends first."""
    same = [W.shape for W, _ in fp] == [W.shape for W, _ in fq]
    fallback = (function_distance_bound(fp, fq) if same and floats else math.inf, "parameter_bound")
    if dom.kind != "box":
        return pair0, dom, (lambda z: np.asarray(z, float)), fallback
    compose, work_dom, to_x = _unit_box(dom)
    # the exact layers pair0 already holds (the same values exact_params gives)
    pair = Pair(
        compose(list(zip(pair0.p.Wq, pair0.p.bq))),
        compose(list(zip(pair0.q.Wq, pair0.q.bq))),
        pair0.tol,
    )
    # |f_p(x) - f_q(x)| <= bound * max(1, |x|_inf) and |x|_inf <= R on the box
    reach = max(1.0, float(np.max(np.abs(np.r_[dom.lower, dom.upper]))))
    fallback = min(
        (fallback[0] * reach, fallback[1]),
        (_interval_bound(fp, fq, dom) if floats else math.inf, "interval"),
    )
    return pair, work_dom, to_x, fallback


def distance(
    p: Any,
    q: Any,
    domain: Any = None,
    *,
    tol: Any = DEFAULT_TOL,
    gap: Any = None,
    method: str = "auto",
    seed: Any = 0,
    time_limit: float | None = ANYTIME_TIME_LIMIT,
    max_regions: int | None = None,
    progress: bool = False,
    top1: bool = False,
    workers: int = 1,
    scheduler: str | None = None,
) -> Distance:
    """The largest output difference of two ReLU networks on a domain, as a certified
    interval ``[lower, upper]`` (see the module docs for what is measured and how).

    Args:
        p, q: parameters (lists of ``(W, b)``, a loaded model, a fitted MLP, ...) with the
            same input and output dimensions.
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        tol: the relative tolerance of :func:`~neuromanifold.relu.equivalent`; the result's
            ``within_tol`` says whether the networks are equivalent up to it.
        gap: stop once ``upper - lower <= gap`` (units of the result); default ``tol * scale``
            (the bound engine then goes on till ``within_tol`` is decided); ``0``: exact.
        method: ``"auto"`` (the region engine when few joint regions are expected, else
            the bound engine on a box when ``gap > 0``, else the MILP; the exact engine
            is tried for fewer regions where the bound engine runs), ``"regions"``,
            ``"bounds"`` (a box, float networks of one depth) or ``"milp"``.
        seed: seed of the sampling (int, None or a numpy Generator).
        time_limit, max_regions: the budget of the whole call (default 60 s, the
            library's one default budget, that of its anytime analyses; ``None``: no
            limit); when it ends, the interval found so far is returned with
            ``converged=False`` and the reason in ``note`` (the upper bound is then the
            MILPs' dual bound or the parameter or interval bound, whichever is smaller).
        progress: a progress bar on stderr.
        top1: also decide whether both networks rank the same class first at every point
            of the box (``top1``, a :class:`Top1`; see the module docs; a box, one budget).
        workers, scheduler: the bound engine's branch and bound on ``workers`` processes,
            or on the Dask cluster at ``scheduler`` (``"local"``: a ``LocalCluster`` of
            ``workers`` processes started for the call).

    Returns:
        A :class:`Distance`.

    >>> one = [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.zeros(1))]
    >>> shifted = [(np.array([[1.0]]), np.array([0.5])), (np.array([[1.0]]), np.zeros(1))]
    >>> r = distance(one, shifted, (-1.0, 1.0))
    >>> r.lower, r.upper, r.upper_method, r.certified
    (0.5, 0.5, 'regions', True)
    """
    # Whole: one budget and one note run through the search, the chosen engine and the fallback
    tol = check_tol(tol)
    progress = check_bool(progress, "progress")
    check_choice(method, "method", _METHODS)
    rng = as_seed_rng(seed)
    top1 = check_bool(top1, "top1")
    workers, scheduler = check_parallel(workers, scheduler)
    # float64 copies, and whether floats are what was given (the float bounds below hold
    # for the networks given only then)
    fp, fq = float_params(p), float_params(q)
    floats = fp is not None and fq is not None
    fp, fq = (check_params(p) if fp is None else fp), (check_params(q) if fq is None else fq)
    # the clock starts before the exact copies are made (2 s for a pair at 784 inputs)
    budget = Budget(
        "distance",
        fp[0][0].shape[1],
        max_regions=max_regions,
        time_limit=time_limit,
        progress=progress,
        unit="joint region",
    )
    pair0 = Pair(p, q, tol)  # the networks as given: exact values, checked shapes
    dom = as_domain(domain, pair0.d)
    if top1 and dom.kind != "box":
        raise InputError(
            f"top1=True compares the top classes on a box: pass domain as "
            f"(lower, upper) or a box Domain; got the {dom.kind} domain"
        )
    gap, decide = _gap_and_threshold(gap, tol * pair0.scale)
    pair, work_dom, to_x, fallback = _working_pair(pair0, dom, fp, fq, floats)
    unit = math.ldexp(1.0, pair.E)  # balanced outputs are the outputs / 2**E
    best = Best(pair)
    gap_q = to_fmpq(gap / unit)
    num_regions, upper, how, bb_point = None, None, None, None
    engine = _engine_for(method, fp, fq, dom, floats)
    chosen, note = _route(method, pair, work_dom, rng, engine, gap)
    # the lower end: one batch when the region engine will find the maximum anyway, else
    # a share of the budget (the MILPs' incumbents come late, if at all)
    search = (
        0.0
        if chosen == "regions" or (chosen == "bounds" and _root_decides(engine[0], dom, gap))
        else (2.0 if time_limit is None else min(0.2 * float(budget.remaining()), 10.0))
    )
    num_points = _search(pair, work_dom, rng, best, search)
    note += f"{num_points:,} points searched; "
    try:
        if chosen == "regions":
            up_q = sup_by_regions(pair, work_dom, budget, best, gap=gap_q) * pow2(pair.E)
            upper, how, certified = to_float(up_q), "regions", True
            if to_fmpq(upper) < up_q:  # rounded outward
                upper = math.nextafter(upper, math.inf)
            num_regions = budget.num_regions
            note += f"the exact maximum over {num_regions} joint regions"
        elif chosen == "bounds":
            upper, bb_point, part = _by_bounds(
                engine,
                fp,
                fq,
                dom,
                budget=budget,
                gap=gap,
                best=best,
                parallel=(workers, scheduler),
                decide=decide,
            )
            how, certified = "branch_and_bound", True
            note += part
        else:
            up, solved = sup_by_milp(pair, work_dom, budget, best, time_limit=budget.remaining())
            if up is not None:
                upper, how, certified = up * unit, "milp", False
                note += (
                    f"the MILPs' floating-point dual bound plus the drift the solver's "
                    f"tolerances allow (not exact); {solved} of {2 * pair.m} MILPs "
                    f"reached their optimum, the others stopped at their time share"
                )
            else:
                note += "a MILP stopped with no bound (time limit)"
    except ComputationLimitError as err:
        num_regions = err.num_regions if chosen == "regions" else None
        note += f"stopped: {err}"
    point = to_x(best.point) if best.point is not None else None
    lower, lower_q = _exact_lower(pair0, point, relative=dom.kind != "box")
    if bb_point is not None:  # the branch and bound's best point, in the user's box
        bb_lower = _exact_lower(pair0, bb_point, relative=False)
        if bb_lower[1] > lower_q:
            point, (lower, lower_q) = bb_point, bb_lower
    if upper is None or fallback[0] < upper:
        if upper is None or how == "milp":
            upper, how, certified = fallback[0], fallback[1], math.isfinite(fallback[0])
            note += f"; upper bound from {how.replace('_', ' ')}"
    if how == "regions":  # exact endpoints: compare them before rounding outward
        converged = up_q - lower_q <= to_fmpq(gap)
    else:
        converged = upper - lower <= gap
    upper = max(upper, lower)
    agreement = (
        _top1(
            pair0,
            pair,
            work_dom,
            to_x,
            budget,
            rng,
            engine=chosen == "regions",
            extra=point,
            bounds=None if not (floats and dom.kind == "box") else (fp, fq, engine, dom),
        )
        if top1
        else None
    )
    return Distance(
        top1=agreement,
        lower=lower,
        upper=upper,
        point=point,
        relative=dom.kind != "box",
        upper_method=how,
        certified=bool(certified),
        gap=gap,
        converged=bool(converged),
        scale=float(pair0.scale),
        tol=tol,
        num_regions=num_regions,
        num_lps=budget.num_lps,
        num_milps=2 * pair.m if how == "milp" else 0,
        domain=dom,
        note=note
        + (
            ""
            if converged
            else f"; not converged: upper - lower = {upper - lower:.3g} > gap {gap:.3g}"
        ),
    )


def _top1(
    pair0: Pair,
    pair: Pair,
    dom: Domain,
    to_x,
    budget: Budget,
    rng: np.random.Generator,
    *,
    engine: bool,
    extra: np.ndarray | None,
    bounds: tuple | None = None,
) -> Top1:
    """The :class:`Top1` verdict: sampled points of the unit box (and ``extra``, an input
    of the user's box) checked exactly, then, when ``engine``, the joint regions, else,
    given ``bounds`` (``(fp, fq, difference chain or None, the user's box)``), the bound
    engine's search over boxes (:mod:`.top1`)."""
    # Whole: verdicts in order (sampling, regions, exact simplex) sharing the witness found
    thr_abs = pair0.thr_q * pow2(pair0.E)  # tol * scale, absolute, as a rational
    tol = pair0.tol
    found: dict = {}

    def counterexample(x: np.ndarray) -> bool:
        """Whether ``x`` (an input of the user's box) is a counterexample, exactly."""
        xq = [to_fmpq(float(v)) for v in x]
        a, _ = exact_forward(pair0.bp, xq)
        b, _ = exact_forward(pair0.bq, xq)
        for first, (u, v) in enumerate(((a, b), (b, a))):
            top, vmax = max(u), max(v)
            for c in (k for k in range(len(u)) if u[k] == top):
                if vmax - v[c] > pair0.thr_q:
                    other = max(range(len(v)), key=lambda k: v[k])
                    found.update(
                        witness=np.asarray(x, float),
                        classes=(c, other) if first == 0 else (other, c),
                        margin=to_float((vmax - v[c]) * pow2(pair0.E)),
                    )
                    return True
        return False

    def result(same, method, note, certified=True):
        return Top1(
            same=same,
            witness=found.get("witness"),
            classes=found.get("classes"),
            margin=found.get("margin"),
            certified=certified,
            method=method,
            tol=tol,
            note=note,
        )

    # sampling: the points where one network's top class is furthest below the other's
    # largest output, in floats, then checked exactly
    thr_f = to_float(thr_abs * pow2(-pair.E))
    Z = np.vstack(
        [
            sample_points(dom, pair.d, rng, 4 * _NUM_SAMPLES),
            np.where(rng.random((_NUM_SAMPLES, pair.d)) < 0.5, -1.0, 1.0),
        ]
    )
    with np.errstate(all="ignore"):
        score = top_class_gap(forward_unchecked(pair.fp, Z), forward_unchecked(pair.fq, Z))
    order = [k for k in np.argsort(-score)[:16] if score[k] > 0.5 * thr_f]
    tried = [to_x(Z[k]) for k in order] + ([extra] if extra is not None else [])
    if any(counterexample(x) for x in tried):
        return result(
            False,
            "search",
            f"a counterexample among {len(Z):,} sampled points "
            f"of the box, checked in exact arithmetic",
        )
    searched = f"no counterexample among {len(Z):,} sampled points"
    if not engine and bounds is not None and thr_abs > 0:
        same, method, note = _top1_by_bounds(bounds, to_float(thr_abs), budget, counterexample)
        return result(same, method, f"{searched}; {note}", certified=same is not None)
    if not engine:
        return result(
            None,
            "search",
            f"{searched}; the joint regions (the proof) were not "
            f"enumerated: the MILPs ran instead (method='milp', "
            f"or more regions expected than the region engine "
            f"takes; method='regions' forces them)",
            certified=False,
        )
    try:
        out = top1_by_regions(
            pair, dom, budget, thr_abs * pow2(-pair.E), lambda z: counterexample(to_x(z))
        )
    except ComputationLimitError as err:
        return result(
            None, "search", f"{searched}; the joint regions stopped: {err}", certified=False
        )
    if out is None:
        return result(
            True,
            "regions",
            f"{searched}; on every joint region each class "
            f"either network ranks first stays within tol of "
            f"the other's largest output (exact LP bounds)",
        )
    z, confirmed = out
    if confirmed:
        return result(
            False,
            "regions",
            "a counterexample from a joint region's LP, checked in exact arithmetic",
        )
    if any(counterexample(to_x(y)) for y in _beside(np.asarray(z, float), dom, rng)):
        return result(
            False,
            "regions",
            "a counterexample beside the rational one the exact "
            "simplex found on a joint region (on a tie of one "
            "network's top classes), checked in exact arithmetic",
        )
    found.update(witness=to_x(z), classes=None, margin=None)
    return result(
        False,
        "regions",
        "the exact simplex found a rational counterexample "
        "on a joint region; the float input given rounds it "
        "(it may sit on a tie)",
    )


def _top1_by_bounds(bounds: tuple, tau: float, budget: Budget, counterexample) -> tuple:
    """``(same, method, note)`` of the bound engine's search over boxes (:mod:`.top1`) on
    ``bounds = (fp, fq, difference chain or None, the user's box)`` within the budget;
    ``tau`` is ``tol * scale`` in output units (rounded to at most it)."""
    fp, fq, difference, box = bounds
    remaining = budget.remaining()
    found = top1_by_bounds(
        fp,
        fq,
        difference,
        box.lower,
        box.upper,
        tau * (1 - 1e-12),
        deadline=None if remaining is None else time.monotonic() + remaining,
        counterexample=counterexample,
    )
    if found.same is True:
        return (
            True,
            "branch_and_bound",
            f"linear bound propagation proved {found.proved:,} boxes covering the box: on "
            f"each, every class either network may rank first stays within tol of the "
            f"other's largest output",
        )
    if found.same is False:
        return (
            False,
            "branch_and_bound",
            f"a counterexample at the middle of a box the bounds did not settle "
            f"({found.proved:,} proved before), checked in exact arithmetic",
        )
    return (
        None,
        "search",
        f"the bound engine proved {found.proved:,} boxes and left {found.open:,} open when "
        f"the budget ended (near a decision boundary a box must be small enough for the "
        f"margins to come within tol)",
    )


def _beside(z: np.ndarray, dom: Domain, rng: np.random.Generator, limit: int = 256):
    """Float points of ``dom`` beside ``z``, nearest first (at most ``limit``): a rational
    counterexample on a tie of one network's top classes has float ones on one side of the
    tie, which rounding ``z`` may miss. Steps of ``2^-52`` to ``2^-16`` times ``|z|`` along
    the coordinates (the first 16) and 8 random directions, both ways."""
    d = z.size
    dirs = [np.eye(d)[i] for i in range(min(d, 16))] + list(rng.standard_normal((8, d)))
    dirs = [u / np.max(np.abs(u)) for u in dirs]
    size = max(float(np.max(np.abs(z), initial=0.0)), 1.0)
    count = 0
    for k in range(0, 37, 4):
        for u in dirs:
            for y in (z + 2.0 ** (k - 52) * size * u, z - 2.0 ** (k - 52) * size * u):
                if dom.kind == "box":
                    y = np.clip(y, dom.lower, dom.upper)
                elif dom.kind == "orthant":
                    y = np.maximum(y, 0.0)
                count += 1
                if count > limit:
                    return
                yield y


def _search(pair: Pair, dom: Domain, rng: np.random.Generator, best: Best, seconds: float) -> int:
    """Look for a large difference for ``seconds``: batches of the domain (uniform, and on
    a box its vertices), then, on a box, a sign-gradient ascent from the best points found
    (the difference is piecewise linear: the gradient of its largest output, stepped to
    the box's faces at shrinking step sizes). The best points are offered to ``best``
    (evaluated exactly). Returns the number of points evaluated."""
    t_end = time.monotonic() + seconds
    top_x, top_v, n = None, None, 0
    while True:
        X = sample_points(dom, pair.d, rng, _NUM_SAMPLES)
        if dom.kind == "box":
            V = np.where(rng.random((_NUM_SAMPLES // 4, pair.d)) < 0.5, dom.lower, dom.upper)
            X = np.vstack([X, V])
        rel = relative_difference(pair, X)
        n += len(X)
        keep = np.argsort(-rel)[:8]
        top_x = X[keep] if top_x is None else np.vstack([top_x, X[keep]])
        top_v = rel[keep] if top_v is None else np.concatenate([top_v, rel[keep]])
        order = np.argsort(-top_v)[:8]
        top_x, top_v = top_x[order], top_v[order]
        if time.monotonic() >= t_end:
            break
    if dom.kind == "box":
        for k in range(len(top_x)):
            if time.monotonic() >= t_end + seconds:  # the ascent gets at most as long again
                break
            top_x[k], top_v[k], m = ascend_difference(pair, dom, top_x[k], top_v[k])
            n += m
    order = np.argsort(-top_v)  # the ascent may have reordered them
    for k, x in enumerate(top_x[order]):
        # each offer is an exact forward pass (a tenth of a second at 784 inputs): the best
        # point always, the others while the search's time lasts
        if k and time.monotonic() >= t_end + seconds:
            break
        best.offer(x)
    return n


def _exact_lower(pair: Pair, x: np.ndarray | None, *, relative: bool) -> tuple:
    """The exact difference of the networks as given at ``x`` (per unit of
    ``max(1, ||x||_inf)`` when ``relative``): rounded down, and exactly."""
    if x is None:
        return 0.0, flint.fmpq(0)
    diff, norm = pair.relative(x)
    value = (diff / norm if relative else diff) * pow2(pair.E)
    f = to_float(value)
    return (max(0.0, math.nextafter(f, -math.inf)) if to_fmpq(f) > value else f), value
