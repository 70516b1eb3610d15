"""Is the NTK a function of (v, delta) alone? The dependence test of docs/concepts_linear.md §3."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import numpy as np

from .._errors import InputError, short_repr
from .._results import Result
from .._tolerance import DEFAULT_TOL, NTK_TOL
from .._validation import check_bool, check_options, check_positive_float
from ..linear import LinearConvNet
from ..linear._library import classify_branches

__all__ = ["NTKDependence", "ntk_dependence"]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class NTKDependence(Result):
    """Verdict of :func:`ntk_dependence`, with its evidence.

    Attributes:
        independent: every fiber point has the same NTK (up to ``tol``).
        max_relative_difference: ``max_{a != b} ||K_a - K_b||_F / ||K_a||_F`` over the
            fiber points (0.0 for a single point).
        witnesses: ``(theta_a, theta_b)`` realizing the maximum when it exceeds ``tol``:
            same end-to-end function, same invariants, different NTK. None otherwise.
        certified: the fiber enumeration is proven complete (see the function docstring
            for what this does and does not cover).
        num_points: number of fiber points compared.
        tol: the relative tolerance of the verdict.
        method: how the fiber was obtained and compared.
        fiber_max_residual: the fiber's largest relative residual (accuracy of the points).
        notes: the fiber's notes.
        hypotheses: the standing hypotheses of the independence theorems of "The
            Riemannian Geometry Associated to Gradient Flows of Linear Convolutional
            Networks" (arXiv 2507.06367) at this instance, as ``(label, holds, detail)``
            triples, ``holds`` True, False or None (undecided): every filter has more
            than one entry, and ``v`` is a regular point of the neuromanifold
            (:func:`neuromanifold.linear.is_regular_point` on the fiber's branches).
            Empty for models that are not built on a linear convolutional network.
        within_hypotheses: True when every hypothesis holds, False when one fails, None
            when one is undecided or none applies. A witness counts against the
            independence theorems only when this is True (docs/concepts_linear.md §3).
        regular_point: the :class:`~neuromanifold.linear.RegularPoint` verdict behind the
            second hypothesis (None when none applies).
    """

    independent: bool
    max_relative_difference: float
    witnesses: tuple[list[np.ndarray], list[np.ndarray]] | None
    certified: bool
    num_points: int
    tol: float
    method: str
    fiber_max_residual: float = 0.0
    notes: tuple[str, ...] = ()
    hypotheses: tuple = ()
    within_hypotheses: bool | None = None
    regular_point: Any = None


def _pairwise_max(Ks: np.ndarray, exact_limit: int = 1500) -> tuple[float, int, int, bool]:
    """``max_{a != b} ||K_a - K_b|| / ||K_a||`` with its pair; ``exhaustive`` is False when
    only distances from a few reference points were measured (very large fibers)."""
    n = Ks.shape[0]
    norms = np.linalg.norm(Ks, axis=1)
    norms = np.where(norms > 0, norms, 1e-300)
    if n < 2:
        return 0.0, 0, 0, True
    best, pair = -1.0, (0, 0)
    if n <= exact_limit:
        refs = range(n)
        exhaustive = True
    else:
        # distances from K_0, from the farthest point, and from the smallest-norm point
        d0 = np.linalg.norm(Ks - Ks[0], axis=1)
        refs = sorted({0, int(np.argmax(d0)), int(np.argmin(norms))})
        exhaustive = False
    for a in refs:
        # difference computed directly (no Gram-matrix cancellation)
        d = np.linalg.norm(Ks - Ks[a], axis=1)
        # ratio relative to ||K_a|| (row a as the reference) and ||K_b|| (column b)
        ra = d / norms[a]
        rb = d / norms
        i, j = int(np.argmax(ra)), int(np.argmax(rb))
        if ra[i] > best:
            best, pair = float(ra[i]), (a, i)
        if rb[j] > best:
            best, pair = float(rb[j]), (j, a)
    return best, pair[0], pair[1], exhaustive


def _standing_hypotheses(net: Any, params: Any, fib: Any) -> tuple[tuple, bool | None, Any]:
    """Paper A's standing hypotheses at ``params`` for a linear convolutional network or a
    shallow model built on one (``net.linear``); ``((), None, None)`` otherwise."""

    if isinstance(net, LinearConvNet):
        lin, lin_params, strip = net, params, False
    elif isinstance(getattr(net, "linear", None), LinearConvNet):
        lin, lin_params, strip = net.linear, list(params)[:-1], True
    else:
        return (), None, None
    sizes = lin.layer_sizes
    small = [l + 1 for l, n in enumerate(sizes) if n == 1]
    h1 = (
        "every filter has more than one entry",
        not small,
        f"layer(s) {small} have filter size 1" if small else f"filter sizes {list(sizes)}",
    )
    points = [p[:-1] if strip else p for p in fib.points]
    reg = classify_branches(
        lin,
        [lin.check_params(p) for p in points],
        certified=bool(getattr(fib, "certified", False)),
        tol=DEFAULT_TOL,
        target=lin.polynomial(lin_params),
    )
    h2 = ("v is a regular point of the neuromanifold (smooth locus)", reg.regular, reg.reason)
    holds = [h1[1], h2[1]]
    within = False if False in holds else (None if None in holds else True)
    return (h1, h2), within, reg


def ntk_dependence(
    net: Any,
    params: Any,
    *,
    tol: float = NTK_TOL,
    check_hypotheses: bool = True,
    **fiber_options: Any,
) -> NTKDependence:
    """Decide whether the NTK is a function of (end-to-end function, invariants) at ``params``.

    Computes the fiber ``F = {theta : mu(theta) = mu(params), delta(theta) = delta(params)}``,
    the NTK at every point of F, and compares them (docs/concepts_linear.md §3). For linear
    convolutional
    networks the fiber is computed by the exact route: the end-to-end polynomial and the
    invariants are taken as exact rationals from the float filters (floats are exact binary
    rationals), so the factorization is exact and the enumeration complete. For fully
    connected networks (and any model whose ``fiber`` samples) the fiber is sampled
    numerically and the verdict is uncertified.

    What ``certified`` means: the list of fiber points is proven complete (every class
    modulo sign flips is there). The NTKs are then evaluated in floating point at points
    accurate to ``fiber_max_residual``, and compared with the relative tolerance ``tol``:
    a difference of 1e-2 against ``tol=1e-8`` is far outside any rounding error, so a
    dependence verdict with a certified fiber is robust; an independence verdict means
    "equal to within ``tol``", which a certified complete fiber makes a statement about
    *all* points. For a sampled fiber, "independent" only covers the points found, while a
    witness pair is a genuine counterexample whatever the sampling.

    Args:
        net: any model with ``end_to_end(params)``, ``invariants(params)``, ``ntk(params)``
            and ``fiber(end_to_end, invariants, **options)`` (returning an object with
            ``.points`` and ``.certified``), optionally ``exact_target(params)``.
        params: the parameters.
        tol: relative NTK difference above which the NTK counts as parameter-dependent.
        check_hypotheses: also check the standing hypotheses of paper A's independence
            theorems at ``params`` (filter sizes, ``v`` a regular point), for models built
            on a linear convolutional network (fields ``hypotheses``,
            ``within_hypotheses``, ``regular_point``).
        **fiber_options: passed to ``net.fiber`` (e.g. ``num_starts``, ``seed``); a name
            ``net.fiber`` does not accept is an :class:`InputError`. If the model's
            ``fiber`` has a parameter named ``start`` and none is given, ``params`` is
            passed as one extra start of a sampled fiber (the exact route of
            convolutional networks ignores it, except in its numerical fallback). A model
            with a method ``exact_target(params)`` (linear convolutional networks) gets
            the fiber of that exact description instead of the float one.

    Returns:
        :class:`NTKDependence`.

    >>> from neuromanifold.linear import LinearConvNet
    >>> net = LinearConvNet([2, 2])
    >>> params = [np.array([-0.5, 1.0]), np.array([-1.0, 1.0])]   # roots 1/2 and 1
    >>> res = ntk_dependence(net, params)
    >>> res.independent, res.num_points, res.certified
    (False, 2, True)
    >>> res.within_hypotheses, res.regular_point.regular   # a regular point of M
    (True, True)
    """
    tol = check_positive_float(tol, "tol")
    check_hypotheses = check_bool(check_hypotheses, "check_hypotheses")
    if isinstance(net, type):
        raise InputError(
            f"ntk_dependence needs a model instance (e.g. LinearConvNet([2, 2])), "
            f"not the class {short_repr(net)}"
        )
    for name in ("end_to_end", "invariants", "ntk", "fiber"):
        if not callable(getattr(net, name, None)):
            raise InputError(
                f"ntk_dependence needs a model with a method {name}(); {short_repr(net)} has none"
            )
    check_options(net.fiber, fiber_options, f"{type(net).__name__}.fiber")
    if callable(getattr(net, "exact_target", None)):
        # the model describes the fiber exactly (linear convolutional networks: the exact
        # end-to-end polynomial and rational invariants of the float filters)
        target, invariants = net.exact_target(params)
    else:
        target, invariants = net.end_to_end(params), net.invariants(params)
    options = dict(fiber_options)
    try:
        accepts_start = "start" in inspect.signature(net.fiber).parameters
    except (TypeError, ValueError):  # pragma: no cover
        accepts_start = False
    if accepts_start and "start" not in options:
        # sampled fibers: params is one more start; an exact route ignores it (only its
        # numerical fallback, for factors not proven irreducible over R, would use it)
        options["start"] = params
    fib = net.fiber(target, invariants, **options)
    points = list(fib.points)
    Ks = (
        np.stack([np.asarray(net.ntk(p), dtype=float).ravel() for p in points])
        if points
        else np.zeros((0, 1))
    )
    diff, a, b, exhaustive = _pairwise_max(Ks)
    independent = diff <= tol
    witnesses = None if independent else (points[a], points[b])
    hyps, within, reg = (
        _standing_hypotheses(net, params, fib) if check_hypotheses and points else ((), None, None)
    )
    method = (
        f"fiber: {getattr(fib, 'method', type(fib).__name__)}; NTK compared in floating "
        f"point over {'all pairs' if exhaustive else 'pairs with reference points'}"
    )
    return NTKDependence(
        independent=bool(independent),
        max_relative_difference=float(diff),
        witnesses=witnesses,
        certified=bool(getattr(fib, "certified", False)),
        num_points=len(points),
        tol=float(tol),
        method=method,
        fiber_max_residual=float(getattr(fib, "max_residual", float("nan"))),
        notes=tuple(getattr(fib, "notes", ())),
        hypotheses=hyps,
        within_hypotheses=within,
        regular_point=reg,
    )
