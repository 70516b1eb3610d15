"""Functional equivalence of two ReLU networks on a domain, up to a relative tolerance.

The question (``docs/relu.md``, section "Tolerances"): with ``scale`` the larger path norm
of the two networks (:func:`neuromanifold.relu._bounds.parameters.path_norm_scale`), do ``f_p`` and
``f_q`` agree up to ``tol``, i.e. is

    ``sup_x max_o |f_p(x)_o - f_q(x)_o| / max(1, ||x||_inf)  <=  tol * scale``

over the domain? ``tol = 0`` asks for exact equality of the functions defined by the given
numbers (floats are exact binary rationals; ``Fraction``/integer entries stay exact). The
left side divided by ``scale`` is the *relative difference*.

Methods:

* ``"regions"``: enumerate the regions of the *joint* network (the activation patterns of
  both networks at once, :mod:`neuromanifold.relu._engine.cells`); on each joint region both
  networks are affine. Where the exact affine maps differ, the supremum of the relative
  difference over the region is a linear program after homogenization (``x = y / s``:
  maximize ``+-(g . y + k s)`` over ``{a_i . y <= c_i s, -1 <= y <= 1, 0 <= s <= 1}``); it
  is bounded exactly (the l1 norm of the difference map, or an exact LP-duality bound
  built from the solver's multipliers, or an exact rational simplex when both are too
  weak). Both verdicts are certified.
* ``"milp"``: the same supremum over the whole domain by one mixed-integer program per
  output and sign on the homogenized networks ``G(y, s) = s f(y / s)`` (scipy/HiGHS,
  big-M constants from interval bounds). "Not equivalent" is certified by an exactly
  checked witness; "equivalent" rests on the solver's floating-point bound
  (``certified=False``), with a resolution limited by its feasibility tolerances.
* ``"auto"``: with ``tol > 0`` and float parameters, first a weight matching in floats
  (``"matching"``: each hidden layer's rows normalized and matched by one assignment,
  the permutation and positive rescaling applied to p, and the certificate: the bound of
  :func:`neuromanifold.relu._bounds.parameters.function_distance_bound`
  between that copy and q, plus
  the float rounding of applying the symmetry, at most ``tol * scale``; a matching that
  does not certify decides nothing); then a cheap sampled check (both networks on a few
  thousand points of the domain; the largest differences are checked exactly), then a
  symmetry check in exact arithmetic (is q a
  permutation and positive rescaling of p's hidden neurons up to a parameter difference
  whose effect on the function, bounded exactly, is within ``tol``? then ``method`` says
  ``"symmetry"``, the verdict is certified and ``symmetry`` holds the map), then the same
  check after reducing both networks (``"reduction"``: neurons without outgoing weights
  removed, neurons with a zero incoming row folded into the next bias, positive multiples
  of one row merged, each step exact, rows parallel up to ``tol`` moved onto each other
  with the effect bounded), then the polynomial-time test of generic three-layer bottleneck networks
  (on R^d), then, ordered by their expected cost, the regions method (which certifies) when at most
  50,000 joint
  regions are expected (distinct joint activation patterns at 20,000 random points,
  Chao1-corrected), else the MILP first (at most 60 s) and the regions method after it.
  Between two networks that agree the MILP has no bound to prune with: on a trained
  2-16-16-1 pair it ran for more than 300 s where the regions method took 9 s.

``max_regions`` and ``time_limit`` bound the whole call (the same semantics as for
:func:`~neuromanifold.relu.regions`).

Every "not equivalent" result carries a witness ``x`` in the domain at which the exact
relative difference exceeds ``tol`` (exceeds 0 when ``tol = 0``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from typing import Any

import flint
import numpy as np

from ..._errors import ComputationLimitError, NeuromanifoldError
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_seed_rng, check_bool, check_choice, check_seed
from ...exact import to_fmpq
from .._bounds.parameters import function_distance_bound, path_norm_scale, telescoping_bound
from .._canonical.three_layer import equivalent_bottleneck
from .._core.clock import DeadlinePassed, check_deadline, deadline_scope
from .._core.domain import Domain, FixedInputs, as_domain, sample_points
from .._core.live import as_conv_net
from .._core.net import check_params, float_params, forward_unchecked, param_list
from .._core.numbers import to_float
from .._engine.budget import Budget, check_budget
from .._engine.cells import ExactNet
from .._engine.joint_regions import (
    Equivalence,
    Pair,
    by_milp,
    by_regions,
    clip,
    equivalence_result,
)
from .._reduction.reduction import abs_floats, fraction_params, reduce_everywhere
from .._symmetries.nulling import reduction_symmetry
from .._symmetries.three_layer import Permutation, Scaling
from .alignment import by_bounds, by_bounds_everywhere, match_hidden_neurons
from .conv import by_channels, conv_witness

__all__ = ["Equivalence", "equivalent"]


_METHODS = ("auto", "regions", "milp")
#: points evaluated by the sampled check of ``method="auto"``
_NUM_SAMPLES = 2048
#: points whose joint activation patterns estimate the number of joint regions (auto)
_NUM_ESTIMATE = 20000
#: ``method="auto"`` runs the regions method before the MILP when at most this many joint
#: regions are expected (about 10-20 ms each; the MILP of two networks that agree has no
#: bound to prune with and took over 300 s on a 2-16-16-1 pair the regions settle in 9 s)
#: on a box, the bound engine runs first when more joint regions than this are expected
_REGIONS_BEFORE_BOUNDS = 300
_REGIONS_FIRST = 50_000
#: seconds the MILP may take in ``method="auto"`` before the regions method decides
_MILP_SHARE = 60.0
_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)


def _fixed_inputs(p: Any, domain: Any) -> tuple | None:
    """``(FixedInputs, the box)`` when ``domain`` is a box fixing some input, else None."""
    if domain is None or isinstance(domain, str):
        return None
    dom = as_domain(domain, check_params(p)[0][0].shape[1])
    cut = FixedInputs.of(dom)
    return None if cut is None else (cut, dom)


def equivalent(
    p: Any,
    q: Any,
    domain: Any = None,
    *,
    tol: Any = DEFAULT_TOL,
    method: str = "auto",
    seed: Any = 0,
    progress: bool = False,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> Equivalence:
    """Decide whether two ReLU networks compute the same function on a domain, up to ``tol``.

    Args:
        p, q: parameters (lists of ``(W, b)``) with the same input and output dimensions;
            the architectures may differ otherwise. Entries may be floats, integers or
            ``Fraction``s (kept exact).
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        tol: relative tolerance (see the module docs and ``docs/relu.md``, "Tolerances");
            ``0`` decides exact equality.
        method: ``"auto"``, ``"regions"`` (certified) or ``"milp"`` (see the module docs).
        seed: seed of the sampled check of ``"auto"`` (int, None or a numpy Generator).
        progress: a progress bar on stderr counting joint regions and LPs.
        max_regions: stop with a :class:`~neuromanifold.ComputationLimitError` when the
            regions method meets more joint regions than this.
        time_limit: stop with a :class:`~neuromanifold.ComputationLimitError` after this
            many seconds (the whole call; the MILP gets what is left). The error's
            ``num_regions``, ``num_lps`` and ``elapsed`` say how far it got; ``partial`` is
            the MILP's uncertified "equivalent" when ``auto`` ran it first and the regions
            method then ran out, else ``None`` (no verdict was reached).

    Returns:
        An :class:`Equivalence` result.

    >>> one = [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.zeros(1))]
    >>> three = [(np.array([[3.0]]), np.zeros(1)), (np.array([[1 / 3]]), np.zeros(1))]
    >>> equivalent(one, three).equivalent, equivalent(one, three, tol=0).equivalent
    (True, False)
    >>> r = equivalent(one, [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.ones(1))])
    >>> r.equivalent, r.witness_difference
    (False, 1.0)
    """
    # Whole: the methods in order of cost, each falling through to the next under one budget
    tol = check_tol(tol)
    progress = check_bool(progress, "progress")
    check_choice(method, "method", _METHODS)
    check_seed(seed)
    _, time_limit = check_budget(max_regions, time_limit)  # refused whichever path decides
    conv_p, conv_q = as_conv_net(p), as_conv_net(q)
    if conv_p is not None or conv_q is not None:
        options = dict(tol=tol, method=method, seed=seed, progress=progress)
        budget = dict(max_regions=max_regions, time_limit=time_limit)
        return _equivalent_conv(p, q, conv_p, conv_q, domain, options, budget)
    fixed = _fixed_inputs(p, domain)
    if fixed is not None:  # a box fixing inputs: the networks on the others, exactly
        cut, dom = fixed
        res = equivalent(
            cut.reduce(p),
            cut.reduce(q),
            cut.domain,
            tol=tol,
            method=method,
            seed=seed,
            progress=progress,
            max_regions=max_regions,
            time_limit=time_limit,
        )
        return dataclasses.replace(
            res,
            witness=cut.lift(res.witness),
            domain=dom,
            note=f"inputs {cut.fixed.tolist()} fixed by the box, folded exactly into the "
            f"first layers' biases; " + res.note,
        )
    start = time.monotonic()
    # the exact steps before the budget's own checks (the exact copies of the networks, the
    # exact matching and reduction) read the deadline row by row
    at = None if time_limit is None else start + time_limit
    try:
        with deadline_scope(at):
            if method == "auto" and tol > 0:
                res = by_matching(p, q, domain, tol)
                if res is not None:
                    return res
            pair = Pair(p, q, tol)
    except DeadlinePassed:
        raise Budget(
            "equivalent",
            1,
            max_regions=max_regions,
            time_limit=time_limit,
            progress=False,
            unit="joint region",
            start=start,
        ).time_error(stage="the exact copies of the networks") from None
    rng = as_seed_rng(seed)
    dom = as_domain(domain, pair.d)
    budget = Budget(
        "equivalent",
        pair.d,
        max_regions=max_regions,
        time_limit=time_limit,
        progress=progress,
        unit="joint region",
        start=start,
    )
    if method == "regions":
        return by_regions(pair, dom, budget)
    if method == "milp":
        res = by_milp(pair, dom, budget)
        if res is not None:
            return res
        budget.check_time(stage="the MILP")
        out = by_regions(pair, dom, budget)
        return dataclasses.replace(
            out, num_milps=2 * pair.m, note=f"the MILP was inconclusive; {out.note}"
        )
    # auto: the cheap checks first, then regions or the MILP by the expected cost
    try:
        with deadline_scope(at):
            res = _by_sampling(pair, dom, rng)
            if res is None:
                res = _by_symmetry(pair, dom)
            if res is None:
                res = _by_reduction(pair, dom, p, q, budget.deadline)
            if res is None:
                res = _by_bottleneck(pair, p, q, dom)
    except DeadlinePassed:
        raise budget.time_error(stage="the sampled and symmetry checks") from None
    if res is not None:
        return res
    budget.check_time(stage="the sampled and symmetry checks")
    expected = expected_joint_regions(pair, dom, rng)
    res = _by_wide_sampling(pair, dom, rng, budget.remaining(), expected)
    if res is not None:
        return res
    why = "sampling found no difference above tol"
    if dom.kind in ("box", "whole") and expected > _REGIONS_BEFORE_BOUNDS:
        if dom.kind == "box":
            res = by_bounds(pair, dom, p, q, budget)
        else:  # the relative contract, reduced to boxes
            res = by_bounds_everywhere(pair, p, q, budget)
        if res is not None:
            return dataclasses.replace(res, note=f"{why}; {res.note}")
        why += "; the bound engine did not decide in its share of the budget"
    if expected <= _REGIONS_FIRST:
        out = by_regions(pair, dom, budget)
        why += f"; about {expected:.0f} joint regions expected: regions first"
        return dataclasses.replace(out, note=f"{why}; {out.note}")
    left = budget.remaining()
    res = by_milp(
        pair, dom, budget, time_limit=_MILP_SHARE if left is None else min(_MILP_SHARE, left)
    )
    if res is not None and not res.equivalent:
        return res
    try:
        budget.check_time(stage="the MILP")
        out = by_regions(pair, dom, budget)
    except ComputationLimitError as err:
        err.partial = res  # the MILP's floating-point "equivalent" (certified=False), if any
        raise
    why += f"; about {expected:.0f} joint regions expected: the MILP first, which " + (
        "found no confirmed difference"
        if res is not None
        else "was inconclusive (or reached its time share)"
    )
    return dataclasses.replace(out, num_milps=2 * pair.m, note=f"{why}; {out.note}")


def _equivalent_conv(
    p: Any, q: Any, conv_p: Any, conv_q: Any, domain: Any, options: dict, budget: dict
) -> Equivalence:
    """:func:`equivalent` when one network is convolutional: by the channels (a matched
    channel symmetry certified by the parameter bound, or an exactly checked witness at
    a sampled input), else on the dense views."""
    if conv_p is not None and conv_q is not None and options["method"] == "auto":
        dom = as_domain(domain, conv_p.input_dim)
        res = by_channels(conv_p, conv_q, dom, options["tol"])
        if res is None:
            res = conv_witness(conv_p, conv_q, dom, options["tol"], as_seed_rng(options["seed"]))
        if res is not None:
            return res
    try:
        dense_p, dense_q = param_list(p), param_list(q)
    except ComputationLimitError as err:
        raise ComputationLimitError(
            f"not decided: the channels of the two networks do not match within tol * "
            f"scale, no sampled input shows a difference above it, and the last resort, "
            f"the dense views, is too large ({err}). With tol=0 any difference at a "
            f"sampled input counts (an exactly checked witness)"
        ) from None
    res = equivalent(dense_p, dense_q, domain, **options, **budget)
    return dataclasses.replace(
        res,
        note="decided on the dense views (the same functions as fully connected ReLU "
        "networks; scale is the dense views' path norm); " + res.note,
    )


def expected_joint_regions(pair: Pair, dom: Domain, rng) -> float:
    """A rough count of the joint regions (distinct joint activation patterns at random
    points, Chao1-corrected as in :func:`~neuromanifold.relu.estimate_regions`), to order
    the expensive methods; a few milliseconds."""
    X = sample_points(dom, pair.d, rng, _NUM_ESTIMATE)
    pats = []
    for net in (pair.fp, pair.fq):
        H = X
        for W, b in net[:-1]:
            with np.errstate(all="ignore"):
                Z = H @ W.T + b
            pats.append(Z > 0)
            H = np.maximum(Z, 0.0)
    if not pats:
        return 1.0
    P = np.packbits(np.hstack(pats), axis=1)
    keys = Counter(P[i].tobytes() for i in range(P.shape[0]))
    f1 = sum(1 for v in keys.values() if v == 1)
    f2 = sum(1 for v in keys.values() if v == 2)
    return len(keys) + (f1 * f1 / (2.0 * f2) if f2 else f1 * (f1 - 1) / 2.0)


# -- sampled check -------------------------------------------------------------------------


def relative_difference(pair: Pair, X: np.ndarray) -> np.ndarray:
    """``max_o |f_p(x)_o - f_q(x)_o| / max(1, ||x||_inf)`` of the balanced networks at the
    rows of ``X``, in floats (0 where the float forward pass is not finite)."""
    with np.errstate(all="ignore"):
        diff = np.abs(forward_unchecked(pair.fp, X) - forward_unchecked(pair.fq, X)).max(axis=1)
        rel = diff / np.maximum(1.0, np.abs(X).max(axis=1))
    return np.where(np.isfinite(rel), rel, 0.0)


#: offsets from a first-layer kink at which :func:`kink_points` looks, relative to
#: ``max(1, ||x||_inf)``: a difference confined to a thin strip along a hyperplane (a hidden
#: hyperplane translated just past its valid interval) shows only there
_KINK_OFFSETS = np.array([0.0] + [s * 10.0**-k for k in (9, 7, 5, 3, 1) for s in (1, -1)])


#: at most this many kink points (a 784-256 first layer pair has 512 hyperplanes: one
#: base point each, 5,632 points, 35 MB of inputs)
_MAX_KINK_POINTS = 8192


def kink_points(
    pair: Pair, dom: Domain, rng: np.random.Generator, per_neuron: int = 4
) -> np.ndarray:
    """Points on and next to every first-layer kink of both networks: sample points of the
    domain projected onto each neuron's hyperplane ``w . x + b = 0``, then moved along
    ``w`` by the offsets :data:`_KINK_OFFSETS` (clipped to the domain). Fewer base points
    per neuron on wide layers, and a random subset of the neurons beyond
    :data:`_MAX_KINK_POINTS`."""
    rows = [np.hstack([W, b[:, None]]) for W, b in (pair.fp[0], pair.fq[0])]
    R = np.vstack(rows)
    R = R[np.any(R[:, :-1] != 0, axis=1)]
    fit = _MAX_KINK_POINTS // _KINK_OFFSETS.size
    if R.shape[0] > fit:
        R = R[rng.choice(R.shape[0], fit, replace=False)]
    per_neuron = max(1, min(per_neuron, fit // max(1, R.shape[0])))
    if R.shape[0] == 0:
        return np.zeros((0, pair.d))
    w, b = R[:, :-1], R[:, -1]
    X0 = sample_points(dom, pair.d, rng, per_neuron * len(R)).reshape(len(R), per_neuron, -1)
    with np.errstate(all="ignore"):
        nw = np.einsum("ij,ij->i", w, w)
        t = (np.einsum("ikj,ij->ik", X0, w) + b[:, None]) / nw[:, None]
        on = X0 - t[:, :, None] * w[:, None, :]  # on the hyperplane
        size = np.maximum(1.0, np.abs(on).max(axis=2))[:, :, None, None]
        unit = (w / np.sqrt(nw)[:, None])[:, None, None, :]
        X = on[:, :, None, :] + _KINK_OFFSETS[None, None, :, None] * size * unit
    X = clip(X.reshape(-1, pair.d), dom)
    return X[np.all(np.isfinite(X), axis=1)]


def _preactivation_and_gradient(
    params: list, l: int, neurons: np.ndarray, X: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``X[k]``: the pre-activation of neuron ``neurons[k]`` of layer ``l`` (0 is
    the first hidden layer) and its gradient in x (on the region of ``X[k]``)."""
    H, masks = X, []
    for W, b in params[:l]:
        Z = H @ W.T + b
        masks.append(Z > 0)
        H = np.where(masks[-1], Z, 0.0)
    W, b = params[l]
    z = np.einsum("kj,kj->k", H, W[neurons]) + b[neurons]
    G = W[neurons]
    for (Wk, _), on in zip(reversed(params[:l]), reversed(masks)):
        G = (G * on) @ Wk
    return z, G


def _preactivation_from_first(
    params: list, l: int, neurons: np.ndarray, Z1: np.ndarray
) -> np.ndarray:
    """The pre-activation of neuron ``neurons[k]`` of layer ``l >= 1`` from the first
    layer's pre-activations ``Z1[k]``."""
    H = np.maximum(Z1, 0.0)
    for W, b in params[1:l]:
        H = np.maximum(H @ W.T + b, 0.0)
    W, b = params[l]
    return np.einsum("kj,kj->k", H, W[neurons]) + b[neurons]


#: sample points whose pairs of opposite signs :func:`bent_points` bisects
_BENT_SAMPLES = 512


def bent_points(
    pair: Pair, dom: Domain, rng: np.random.Generator, per_neuron: int = 4
) -> np.ndarray:
    """Points on and next to the bent hyperplanes of every neuron past the first hidden
    layer of both networks. For each such neuron, pairs of sample points where its
    pre-activation has opposite signs; the pre-activation is continuous along the segment
    between them, so bisection (40 halvings) finds a zero on it; from there the offsets
    :data:`_KINK_OFFSETS` along the pre-activation's gradient (clipped to the domain). A
    difference confined to a strip along such a hyperplane (a deeper neuron split into
    copies with nearby biases, say) shows only there. Fewer pairs per neuron on wide
    networks, and a random subset of the neurons beyond :data:`_MAX_KINK_POINTS`; a neuron
    of one sign on every sample gets none."""
    jobs = [
        (n, l, j)
        for n, net in enumerate((pair.fp, pair.fq))
        for l in range(1, len(net) - 1)
        for j in range(net[l][0].shape[0])
    ]
    fit = _MAX_KINK_POINTS // _KINK_OFFSETS.size
    if len(jobs) > fit:
        jobs = [jobs[i] for i in sorted(rng.choice(len(jobs), fit, replace=False))]
    if not jobs:
        return np.zeros((0, pair.d))
    per_neuron = max(1, min(per_neuron, fit // len(jobs)))
    S = sample_points(dom, pair.d, rng, _BENT_SAMPLES)
    out = [np.zeros((0, pair.d))]
    with np.errstate(all="ignore"):
        for n, net in enumerate((pair.fp, pair.fq)):
            # every pre-activation at the samples, layer by layer
            Z, H = [], S
            for W, b in net[:-1]:
                Z.append(H @ W.T + b)
                H = np.maximum(Z[-1], 0.0)
            a_idx, b_idx, neurons, layers = [], [], [], []
            for m, l, j in jobs:
                if m != n:
                    continue
                pos, neg = np.flatnonzero(Z[l][:, j] > 0), np.flatnonzero(Z[l][:, j] < 0)
                if pos.size and neg.size:
                    a_idx.append(rng.choice(pos, per_neuron))
                    b_idx.append(rng.choice(neg, per_neuron))
                    neurons.append(np.full(per_neuron, j))
                    layers.append(np.full(per_neuron, l))
            if not a_idx:
                continue
            a, b = np.concatenate(a_idx), np.concatenate(b_idx)
            neurons, layers = np.concatenate(neurons), np.concatenate(layers)
            for l in np.unique(layers):
                k = layers == l
                # along A + t (B - A) the first layer's pre-activations are affine in t:
                # the 784-wide first product is not repeated per halving
                ZA, ZB = Z[0][a[k]], Z[0][b[k]]
                lo, hi = np.zeros(k.sum()), np.ones(k.sum())
                for _ in range(40):
                    t = 0.5 * (lo + hi)
                    z = _preactivation_from_first(net, l, neurons[k], ZA + t[:, None] * (ZB - ZA))
                    lo, hi = np.where(z > 0, t, lo), np.where(z > 0, hi, t)
                t = 0.5 * (lo + hi)
                X = S[a[k]] + t[:, None] * (S[b[k]] - S[a[k]])
                _, G = _preactivation_and_gradient(net, l, neurons[k], X)
                norm = np.sqrt(np.einsum("kj,kj->k", G, G))
                keep = np.isfinite(norm) & (norm > 0)
                X, unit = X[keep], G[keep] / norm[keep, None]
                size = np.maximum(1.0, np.abs(X).max(axis=1, initial=0.0))
                P = (
                    X[:, None, :]
                    + _KINK_OFFSETS[None, :, None] * size[:, None, None] * unit[:, None, :]
                )
                out.append(clip(P.reshape(-1, pair.d), dom))
    X = np.vstack(out)
    return X[np.all(np.isfinite(X), axis=1)]


def _output_gradient(params: list, x: np.ndarray, o: int) -> np.ndarray:
    """The gradient of output ``o`` at ``x`` (on the region of ``x``): the last layer's
    pre-activation ``o``."""
    return _preactivation_and_gradient(params, len(params) - 1, np.array([o]), x[None, :])[1][0]


#: the sign-gradient steps of :func:`ascend_difference`, relative to the box's sides (on an
#: unbounded domain, the sides of the box ``|x|_inf <= max(1, |x_start|_inf)``)
_STEPS = np.array([1.0, 0.5, 0.25, 0.1, 0.03, 0.01, 0.003, 0.001])


def ascend_difference(
    pair: Pair, dom: Domain, x: np.ndarray, value: float, steps: int = 40
) -> tuple[np.ndarray, float, int]:
    """Sign-gradient ascent of the relative difference (:func:`relative_difference`) from
    ``x``, whose value is ``value``: the gradient of the largest output difference, stepped
    at shrinking sizes, a step kept only when it raises the value (the difference is
    piecewise linear). On an unbounded domain the steps stay in the box of the start's
    size (``|x|_inf <= max(1, |x|_inf)``, intersected with the orthant), where the
    denominator of the relative difference cannot grow. Returns the point, its value and
    the number of points evaluated."""
    if dom.kind == "box":
        lo, hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
    else:  # the box of the start's size, where |x|_inf (the denominator) stays <= r
        r = max(1.0, float(np.max(np.abs(x))))
        lo, hi = np.full(x.size, 0.0 if dom.kind == "orthant" else -r), np.full(x.size, r)
    n = 0
    for _ in range(steps):
        with np.errstate(all="ignore"):
            delta = (
                forward_unchecked(pair.fp, x[None, :])[0]
                - forward_unchecked(pair.fq, x[None, :])[0]
            )
            o = int(np.argmax(np.abs(delta)))
            g = np.sign(delta[o]) * (
                _output_gradient(pair.fp, x, o) - _output_gradient(pair.fq, x, o)
            )
        if not np.all(np.isfinite(g)) or not np.any(g):
            break
        cands = np.clip(
            x[None, :] + _STEPS[:, None] * np.sign(g)[None, :] * (hi - lo)[None, :], lo, hi
        )
        vals = relative_difference(pair, cands)
        n += len(cands)
        k = int(np.argmax(vals))
        if not vals[k] > value:
            break
        x, value = cands[k], float(vals[k])
    return x, value, n


#: the sampled check ascends from its best points when the largest sampled difference is
#: within this factor of the threshold (a near miss; far below, the networks agree)
_NEAR = 1e-3


def _by_sampling(pair: Pair, dom: Domain, rng) -> Equivalence | None:
    """Evaluate both (balanced) networks on sample points of the domain and on and next to
    every first-layer kink (:func:`kink_points`) and deeper bent hyperplane
    (:func:`bent_points`); confirm the largest relative differences exactly. ``None`` when
    no sample confirms a difference."""
    X = np.vstack(
        [
            sample_points(dom, pair.d, rng, _NUM_SAMPLES),
            kink_points(pair, dom, rng),
            bent_points(pair, dom, rng),
        ]
    )
    rel = relative_difference(pair, X)
    top = np.argsort(-rel)[:8]
    if pair.tol > 0 and _NEAR * pair.thr < rel[top[0]] <= pair.thr:
        # a near miss: climb from the best points
        climbed = [ascend_difference(pair, dom, X[i], float(rel[i]))[:2] for i in top]
        X = np.vstack([X] + [c[0][None, :] for c in climbed])
        rel = np.concatenate([rel, [c[1] for c in climbed]])
    return _confirmed(
        pair,
        dom,
        X,
        rel,
        f"sampled check: the largest of {len(X)} sampled differences (the domain, on and "
        "next to every first-layer kink and every deeper bent hyperplane, and an ascent from "
        "the best when they came close) exceeds tol, confirmed in exact arithmetic",
    )


def _confirmed(pair: Pair, dom: Domain, X: np.ndarray, rel: np.ndarray, note: str):
    """The inequivalence witnessed by the sample of largest relative difference whose
    difference the exact arithmetic confirms above tol (of the 8 largest), else ``None``."""
    order = np.argsort(-rel)[:8]
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    for i in order:
        # float rounding of the forward pass is far below tol; with tol = 0 any sample may
        # show an exact difference
        if pair.tol > 0 and not rel[i] > pair.thr:
            break
        if pair.exceeds(X[i]):
            return equivalence_result(
                pair,
                dom,
                equivalent=False,
                witness=X[i],
                max_difference=max(float(rel[order[0]]) / base, pair.rel_value(X[i])),
                method="sampling",
                certified=True,
                note=note,
            )
    return None


#: the wide sampled check draws this many points at a time ...
_WIDE_CHUNK = 16384
#: ... at most this many in all, within at most this many seconds and this share of the
#: budget left: a difference confined to one input in 100,000 of the domain (a hidden
#: hyperplane translated past its valid interval) shows in it, at a cost the exact
#: engines would spend on a handful of regions
_WIDE_MAX_POINTS = 4_000_000
_WIDE_SECONDS = 2.0
_WIDE_SHARE = 0.1
#: ... and this many seconds per joint region expected: a few percent of what the regions
#: engine spends on one, so that a pair the exact engine settles at once is not delayed
_WIDE_PER_REGION = 0.002


def _by_wide_sampling(
    pair: Pair, dom: Domain, rng, left: float | None, expected: float
) -> Equivalence | None:
    """Uniform points of the domain (its sampling) in chunks, for a few seconds (fewer
    when few joint regions are expected), before the exact engines: an inequivalence
    confirmed in exact arithmetic, else ``None``."""
    seconds = min(_WIDE_SECONDS, _WIDE_PER_REGION * expected)
    if left is not None:
        seconds = min(seconds, _WIDE_SHARE * left)
    stop = time.monotonic() + seconds
    drawn = 0
    while drawn < _WIDE_MAX_POINTS and time.monotonic() < stop:
        X = sample_points(dom, pair.d, rng, _WIDE_CHUNK)
        drawn += len(X)
        rel = relative_difference(pair, X)
        if pair.tol == 0 and not np.any(rel > 0):
            continue
        res = _confirmed(
            pair,
            dom,
            X,
            rel,
            f"wide sampled check: one of {drawn:,} sampled points of the domain shows a "
            f"difference above tol, confirmed in exact arithmetic (the cheap checks before "
            f"found none)",
        )
        if res is not None:
            return res
    return None


# -- a weight matching in floats, certified by a bound ------------------------------------

#: unit roundoff of float64, and the smallest normal float64
_U = 2.0**-53
_TINY = 2.0**-1022


def _flat_layers(raw: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``raw`` as one flat float64 buffer (each layer's ``W`` row by row, then ``b``), its
    widths and the layers' offsets, when it is a list of ``(W, b)`` float64 arrays whose
    shapes chain; else ``None`` (anything else goes through the full validation)."""
    raw = param_list(raw)
    if not isinstance(raw, (list, tuple)) or not raw:
        return None
    parts, dims, offsets, at = [], [], [], 0
    for layer in raw:
        if not isinstance(layer, (list, tuple)) or len(layer) != 2:
            return None
        W, b = layer
        if not (
            type(W) is np.ndarray
            and type(b) is np.ndarray
            and W.dtype == np.float64
            and b.dtype == np.float64
            and W.ndim == 2
            and b.ndim == 1
        ):
            return None
        rows, cols = W.shape
        if not (rows and cols and b.shape[0] == rows and (not dims or dims[-1] == cols)):
            return None
        if not dims:
            dims.append(cols)
        dims.append(rows)
        offsets.append(at)
        at += rows * cols + rows
        parts += (W.ravel(), b)
    return (
        np.concatenate(parts),
        np.array(dims, dtype=np.int64),
        np.array(offsets, dtype=np.int64),
    )


def _compiled_match(p_raw: Any, q_raw: Any) -> tuple | None:
    """:func:`match_kernel` on two float64 networks of one architecture: ``(code, found,
    scale_p, scale_q, bound, d)`` with ``found`` the per-layer ``(perm, scales)`` and ``d``
    the input dimension, or ``None`` when the input is not of that plain form."""
    from .matching import match_kernel  # start-up: numba loads on first use

    fp, fq = _flat_layers(p_raw), _flat_layers(q_raw)
    if fp is None or fq is None or not np.array_equal(fp[1], fq[1]):
        return None
    code, perms, scales, scale_p, scale_q, bound = match_kernel(fp[0], fq[0], fp[1], fp[2])
    found, at = [], 0
    for n in fp[1][1:-1].tolist():
        found.append((perms[at : at + n], scales[at : at + n]))
        at += n
    return code, found, scale_p, scale_q, bound, int(fp[1][0])


def by_matching(p_raw: Any, q_raw: Any, domain: Any, tol: float) -> Equivalence | None:
    """Equivalence proposed by :func:`match_hidden_neurons` and certified by a bound:
    ``|f_p - f_q| <= |f_p - f_p*| + |f_p* - f_q|`` with ``p*`` the float image of p, the
    second term bounded by :func:`function_distance_bound` and the first by the rounding
    of applying the symmetry (each entry of ``p*`` is the exact image rounded twice, within
    ``3u`` of it relative, so that term is at most ``4 u L scale``: positive rescalings and
    permutations keep the path norm). ``None`` (nothing decided) when the networks are not
    floats of one architecture, or the bound exceeds ``tol * scale``.

    Plain float64 networks go through the compiled twin of these steps
    (:func:`~neuromanifold.relu._equivalence.matching.match_kernel`); it hands back to numpy
    where its float chains cannot be trusted, and on non-finite entries, which the
    validation then refuses."""
    from .matching import MATCHED, NO_MATCH  # start-up: with the kernel's module

    compiled = _compiled_match(p_raw, q_raw)
    if compiled is not None and compiled[0] == NO_MATCH:
        return None
    if compiled is not None and compiled[0] == MATCHED:
        _, found, scale_p, scale_q, bound, d = compiled
    else:
        p, q = float_params(p_raw), float_params(q_raw)
        if p is None or q is None or [W.shape for W, _ in p] != [W.shape for W, _ in q]:
            return None
        with np.errstate(all="ignore"):
            try:
                scale_p, scale_q = path_norm_scale(p), path_norm_scale(q)
            except NeuromanifoldError:
                return None
            match = match_hidden_neurons(p, q)
            if match is None:
                return None
            found, image = match
            rounding = 4 * _U * len(p) * scale_p
            # the rounding term holds for entries of the image rounded in the normal range
            # only: a subnormal entry (or a term that itself underflows) loses more
            if not rounding >= _TINY or any(
                np.any((np.abs(a) < _TINY) & (a != 0)) for layer in image for a in layer
            ):
                return None
            bound = function_distance_bound(image, q) + rounding
        d = p[0][0].shape[1]
    scale = max(scale_p, scale_q)
    if not (scale > 0 and tol * scale >= _TINY and bound <= tol * scale):
        return None
    sym = []
    for l, (perm, scales) in enumerate(found):
        sym.append(Permutation(l + 1, tuple(perm.tolist())))
        sym.append(Scaling(l + 1, tuple(scales.tolist())))
    return Equivalence(
        equivalent=True,
        witness=None,
        witness_difference=None,
        max_difference=bound / scale,
        method="matching",
        certified=True,
        tol=tol,
        scale=float(scale),
        num_regions=None,
        num_lps=0,
        num_milps=0,
        domain=as_domain(domain, d),
        symmetry=tuple(sym),
        note=f"q is a permutation and positive rescaling of p's hidden neurons (matched "
        f"in floats) up to a difference of the functions of at most {bound / scale:.3g} "
        f"relative (bound from the parameters, the rounding of the match included)",
    )


# -- a permutation and rescaling of hidden neurons ----------------------------------------


def _by_symmetry(pair: Pair, dom: Domain) -> Equivalence | None:
    """Match every hidden neuron of q to a positive multiple of one of p (layer by layer,
    an assignment on the directions of the incoming rows), build the exactly equivalent
    copy ``p'`` of p, and bound ``|f_q(x) - f_p'(x)|`` by
    ``B max(1, ||x||_inf)`` with ``B`` the largest output row sum of
    ``sum_l |M^q_L| ... |M^q_{l+1}| |M^q_l - M^p'_l| |M^p'_{l-1}| ... |M^p'_1|`` (augmented
    layer matrices; ReLU is 1-Lipschitz). ``None`` unless a matching exists and
    ``B <= tol * scale`` (with tol = 0: ``B = 0``, an exact symmetry)."""
    bp, bq = pair.bp, pair.bq
    if bp.widths != bq.widths:
        return None
    L = bp.num_layers
    image = _exact_image(bp, bq, pair.d)
    if image is None:
        return None
    Wn, bn, found = image
    # the bound, from the exact differences rounded to floats (telescoping_bound's margin
    # covers that rounding)
    B = telescoping_bound(
        [abs_floats(W, b) for W, b in zip(Wn, bn)],
        [(np.abs(W), np.abs(b)) for W, b in bq.params],
        [abs_floats(bq.Wq[l] - Wn[l], [u - v for u, v in zip(bq.bq[l], bn[l])]) for l in range(L)],
    )
    if not B <= pair.thr:
        return None
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    out = equivalence_result(
        pair,
        dom,
        equivalent=True,
        max_difference=B / base,
        method="symmetry",
        certified=True,
        note="q is a permutation and positive rescaling of p's hidden neurons up to "
        f"a parameter difference that moves the function by at most "
        f"{B / base:.3g} relative (Lipschitz bound in the parameters)",
    )
    sym = []
    try:
        for l, (perm, s) in enumerate(found):
            # named transformations of the networks as given (the balancing powers of two
            # undone)
            sym.append(Permutation(l + 1, tuple(perm)))
            sym.append(
                Scaling(
                    l + 1,
                    tuple(
                        math.ldexp(to_float(s[i]), bq.exps[l][i] - bp.exps[l][perm[i]])
                        for i in range(len(perm))
                    ),
                )
            )
    except OverflowError:  # a scale beyond the float range: the verdict stands without it
        return dataclasses.replace(
            out, note=out.note + "; no symmetry returned: a scale is beyond the float64 range"
        )
    return dataclasses.replace(out, symmetry=tuple(sym))


def _float_row(A: flint.fmpq_mat, i: int, m_in: int) -> list[float]:
    """Row ``i`` of ``A`` rounded to floats (the deadline read first)."""
    check_deadline()
    return [to_float(A[i, k]) for k in range(m_in)]


def _exact_image(bp: ExactNet, bq: ExactNet, d: int):
    """The exactly equivalent copy of p matched onto q (layer by layer, an assignment on
    the max-normalized incoming rows, the scales rounded to rationals): its layers
    ``Wn, bn`` (exact) and the per-layer ``(perm, scales)``; ``None`` when some neuron has
    no match within 1e-6."""
    from scipy.optimize import linear_sum_assignment  # start-up: a slow import

    L = bp.num_layers
    perm_prev = list(range(d))
    s_prev = [_ONE] * d
    Wn, bn = [], []  # p' exactly
    found = []
    for l in range(L):
        Wp, bpl = bp.Wq[l], bp.bq[l]
        n, m_in = Wp.nrows(), Wp.ncols()
        # p's layer in q's coordinates of the previous layer (exact)
        A = flint.fmpq_mat(n, m_in)
        for i in range(n):
            check_deadline()
            for k in range(m_in):
                v = Wp[i, perm_prev[k]]
                if v != 0:
                    A[i, k] = v / s_prev[k]
        if l == L - 1:
            Wn.append(A)
            bn.append(list(bpl))
            break
        Rp = np.array([_float_row(A, i, m_in) + [to_float(bpl[i])] for i in range(n)])
        Rq = np.hstack([bq.params[l][0], bq.params[l][1][:, None]])
        np_, nq_ = np.abs(Rp).max(axis=1), np.abs(Rq).max(axis=1)
        if np.any(np_ == 0) or np.any(nq_ == 0):
            return None
        Up, Uq = Rp / np_[:, None], Rq / nq_[:, None]
        cost = np.empty((n, n))
        step = max(1, 2**22 // (n * (m_in + 1)))  # blocks of rows: memory, and the clock
        for a in range(0, n, step):
            check_deadline()
            cost[a : a + step] = np.abs(Uq[a : a + step, None, :] - Up[None, :, :]).max(axis=2)
        rows, cols = linear_sum_assignment(cost)
        if cost[rows, cols].max() > 1e-6:
            return None
        perm = [int(c) for c in cols]  # q's neuron i ~ s_i * p's neuron perm[i]
        s = [to_fmpq(float(nq_[i] / np_[perm[i]])) for i in range(n)]
        W2 = flint.fmpq_mat(n, m_in)
        b2 = []
        for i in range(n):
            check_deadline()
            for k in range(m_in):
                W2[i, k] = s[i] * A[perm[i], k]
            b2.append(s[i] * bpl[perm[i]])
        Wn.append(W2)
        bn.append(b2)
        found.append((perm, s))
        perm_prev, s_prev = perm, s
    return Wn, bn, found


# -- a reduced form: dead, constant and parallel neurons merged away ----------------------


def _reduce(net: ExactNet, tol: float):
    """The exact reduction valid on every input (:func:`reduce_everywhere`: the statuses
    read off the sign patterns, no domain statuses): ``(params, delta)``, the reduced
    parameters as ``(W, b)`` object arrays of Fractions and the bound on the change made
    by snapping; ``None`` when nothing reduces."""
    W, b, moves, delta = reduce_everywhere(net.Wq, net.bq, tol)
    if not moves:
        return None
    return fraction_params(W, b), delta


def _by_reduction(
    pair: Pair, dom: Domain, p: Any = None, q: Any = None, deadline: float | None = None
) -> Equivalence | None:
    """Remove dead and constant neurons and merge (nearly) parallel ones in both networks
    (:func:`_reduce`), then the symmetry check on the reduced pair; the three differences
    (p to its reduction, the reductions, q's reduction to q) add up within ``tol``.
    ``None`` when nothing reduces or the reduced pair is not related by a symmetry.
    When the float networks ``p`` and ``q`` (as given) are related by named moves that make the
    removed neurons null (:func:`~neuromanifold.relu._symmetries.nulling.reduction_symmetry`),
    they are the result's ``symmetry`` (left out when ``time.monotonic()`` passes
    ``deadline`` while they are built)."""
    rp, rq = _reduce(pair.p, pair.tol), _reduce(pair.q, pair.tol)
    if rp is None and rq is None:
        return None
    (pp, dp), (qq, dq) = (
        (rp or (fraction_params(pair.p.Wq, pair.p.bq), 0.0)),
        (rq or (fraction_params(pair.q.Wq, pair.q.bq), 0.0)),
    )
    budget = pair.tol * pair.scale - dp - dq
    if budget < 0 or (pair.tol == 0 and (dp or dq)):
        return None
    try:
        probe = Pair(pp, qq, 0.0)
    except NeuromanifoldError:
        return None
    sub = probe.with_tol(
        0.0 if pair.tol == 0 else (min(budget / probe.scale, 0.5) if probe.scale > 0 else 0.0)
    )
    res = _by_symmetry(sub, dom)
    if res is None:
        return None
    total = dp + dq + res.max_difference * sub.scale
    rel = total / pair.scale if pair.scale > 0 else (0.0 if total == 0 else math.inf)
    if rel > pair.tol:
        return None
    widths = lambda ps: "-".join(str(W.shape[0]) for W, _ in ps[:-1])  # noqa: E731
    out = equivalence_result(
        pair,
        dom,
        equivalent=True,
        max_difference=rel,
        method="reduction",
        certified=True,
        note=f"with dead, constant and parallel hidden neurons merged (hidden widths "
        f"{widths(pair.p.params)} -> {widths(pp)} and "
        f"{widths(pair.q.params)} -> {widths(qq)}), q is a permutation and "
        f"positive rescaling of p; the differences add up to at most "
        f"{rel:.3g} relative",
    )
    fp, fq = (None, None) if p is None else (float_params(p), float_params(q))
    try:  # the verdict stands; its symmetry is left out past the deadline
        found = None if fp is None or fq is None else reduction_symmetry(fp, fq, pair.tol, deadline)
    except DeadlinePassed:
        found = None
    if found is None or not found[1] <= max(pair.tol, DEFAULT_TOL) * pair.scale:
        return out
    sym, bound = found
    # a zero network (scale 0) got here with bound 0: within 0 relative, not a division by 0
    rel = bound / pair.scale if pair.scale > 0 else 0.0
    return dataclasses.replace(
        out,
        symmetry=sym,
        note=(
            f"{out.note}; symmetry: {len(sym)} named moves (the removed neurons made null, a "
            f"permutation and rescaling, the other network's moves undone) whose image of p, "
            f"applied in floats, is within {rel:.3g} relative of q"
        ),
    )


def _by_bottleneck(pair: Pair, p: Any, q: Any, dom: Domain) -> Equivalence | None:
    """The polynomial-time test of generic three-layer bottleneck networks (canonical forms
    and the named symmetries, docs/relu_equivalence.md); ``None`` when it does not apply or
    cannot certify its verdict (then the exact engine decides). Its ``True`` holds on every
    domain (the contract on R^d holds on every part of it), its witness only where it lies
    in the domain."""
    if pair.tol == 0 or len(pair.p.params) != 3 or len(pair.q.params) != 3:
        return None
    try:
        res = equivalent_bottleneck(pair.p.params, pair.q.params, tol=pair.tol)
    except NeuromanifoldError:
        return None
    if not res.applies or not res.certified:
        return None
    if res.equivalent:
        if not res.symmetry:
            return None  # decided by an invariant, not by named symmetries
        out = equivalence_result(
            pair,
            dom,
            equivalent=True,
            max_difference=res.max_difference,
            method="bottleneck",
            certified=True,
            note=f"generic bottleneck networks: {res.note}",
        )
        return dataclasses.replace(out, symmetry=tuple(res.symmetry))
    if res.witness is None or not dom.contains(np.asarray(res.witness, float)[None, :])[0]:
        return None
    out = equivalence_result(
        pair,
        dom,
        equivalent=False,
        witness=res.witness,
        max_difference=res.max_difference,
        method="bottleneck",
        certified=True,
        note=f"generic bottleneck networks: {res.note}",
    )
    # the witness is confirmed exactly like every other witness
    return out if pair.exceeds(res.witness) else None
