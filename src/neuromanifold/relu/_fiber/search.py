"""Numerical search for fiber points of three-layer bottleneck networks that the named
symmetries do not explain (docs/concepts_relu.md §4; findings in docs/relu_equivalence.md).

For a target ``p`` (given, or drawn at random for given widths), many starts minimize the
output difference ``f_q - f_p`` on sample points taken from every linear region of ``p``
(its interior points, points near them, and random points at several scales), by
Levenberg-Marquardt with the exact parameter Jacobian. A start whose fit is at rounding
level is a *candidate*; it is *confirmed* when the relative difference on a fresh dense
sample (including every linear region of the candidate) stays below ``tol``. Each
confirmed point is then classified:

* ``"named"``: :func:`~neuromanifold.relu._canonical.three_layer.equivalent_bottleneck`
  (at the loose tolerance ``classify_tol``, because a fitted point is only close to the
  fiber) finds a list of named symmetries from ``p`` to it;
* ``"unnamed"``: same first layer and same orientation-free weighted arrangement of layers
  2-3 on the orthant, but no named symmetry connects the two (second-layer orientations or
  the always-active block differ); the signature says which second-layer neurons turned;
* ``"unexplained"``: the polynomial test says "not equivalent" although the points agree
  (a first layer outside the named symmetries): a discovery, to be checked by hand;
* ``"n1 = 1"`` (outside the fast path): whether the single first-layer neuron kept its
  orientation or turned around where a ramp flip applies (else ``"unexplained"``);
* ``"not generic"``: the fitted point is outside the fast path (a neuron
  with zero outgoing weights, a degenerate row); the reason is the signature.

Confirmed points with the same class and signature form one cluster. Starts cycle
through Gaussian parameters, the target with one hidden neuron turned around (incoming
weights and bias negated) and the target with a random subset turned around, both with
multiplicative noise: the discrete parts of a fiber differ from the target in neuron
orientations, and these starts reach them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from ..._errors import InputError, ParameterError, short_repr
from ..._results import Result
from ..._tolerance import RESIDUAL_TOL, check_tol
from ..._validation import (
    as_seed_rng,
    check_bool,
    check_nonnegative_int,
    check_positive_int,
    renamed_keywords,
)
from .._bounds.parameters import path_norm_scale
from .._canonical.three_layer import (
    NotCovered,
    analyze_bottleneck,
    canonical_form,
    equivalent_bottleneck,
    fast_path_reason,
)
from .._core.live import refuse_conv
from .._core.net import forward
from .._regions.regions import regions
from .._symmetries.shape import row_kinds, row_signs, three_layer
from .._symmetries.three_layer import HidingTranslation, RampFlip

__all__ = ["search_symmetries", "SymmetrySearch", "SearchCluster"]

Params = list[tuple[np.ndarray, np.ndarray]]

#: the binary orders of magnitude of the target's scale the float fit handles (squared
#: residuals of a network of scale 2**500 overflow)
FIT_RANGE = 200


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class SearchCluster(Result):
    """Confirmed fiber points of one class and signature.

    Attributes:
        kind: ``"named"``, ``"unnamed"``, ``"unexplained"``, ``"n1 = 1"`` or
            ``"not generic"``.
        signature: what distinguishes the points (e.g. the second-layer neurons whose
            orientation differs from the target's, or why the fast path did not apply).
        count: how many confirmed points fell here.
        example: one of them (parameters).
        max_difference: the largest confirmed relative difference among them.
    """

    kind: str
    signature: str
    count: int
    example: list[tuple[np.ndarray, np.ndarray]] | None = dataclasses.field(repr=False)
    max_difference: float


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class SymmetrySearch(Result):
    """Outcome of :func:`search_symmetries`.

    Attributes:
        widths: ``(d, n1, n2, n3)``.
        target: the target parameters.
        target_generic: ``fast_path_reason(target)`` is ``None``.
        starts: number of starts run.
        candidates: starts whose fit reached rounding level.
        confirmed: candidates confirmed on the dense sample.
        clusters: the confirmed points grouped by class and signature.
        beyond_named: whether some confirmed point is not explained by the named
            symmetries (a cluster of kind ``"unnamed"`` or ``"unexplained"``).
        tol: confirmation tolerance (relative to the path-norm scale).
        classify_tol: tolerance of the classification by the polynomial test.
    """

    widths: tuple[int, ...]
    target: list[tuple[np.ndarray, np.ndarray]] | None = dataclasses.field(repr=False)
    target_generic: bool
    starts: int
    candidates: int
    confirmed: int
    clusters: list
    beyond_named: bool
    tol: float
    classify_tol: float


def _flatten(params: Params) -> np.ndarray:
    return np.concatenate([np.concatenate([W.ravel(), b]) for W, b in params])


def _unflatten(theta: np.ndarray, widths: tuple[int, ...]) -> Params:
    out, k = [], 0
    for n, m in zip(widths[:-1], widths[1:]):
        W = theta[k : k + n * m].reshape(m, n)
        k += n * m
        out.append((W.copy(), theta[k : k + m].copy()))
        k += m
    return out


def _residual_and_jacobian(theta, widths, X, Y, weight=None):
    """Residuals ``weight * (f_theta(X) - Y)`` (flattened) and their exact Jacobian."""
    (W1, b1), (W2, b2), (W3, b3) = _unflatten(theta, widths)
    z1 = X @ W1.T + b1
    h1 = np.maximum(z1, 0.0)
    z2 = h1 @ W2.T + b2
    h2 = np.maximum(z2, 0.0)
    F = h2 @ W3.T + b3
    N, d = X.shape
    n1, n2, n3 = widths[1], widths[2], widths[3]
    D1, D2 = (z1 > 0).astype(float), (z2 > 0).astype(float)
    G2 = W3[None, :, :] * D2[:, None, :]  # N x n3 x n2: df/dz2
    G1 = np.einsum("noj,jk->nok", G2, W2) * D1[:, None, :]  # N x n3 x n1: df/dz1
    J = np.concatenate(
        [
            (G1[:, :, :, None] * X[:, None, None, :]).reshape(N, n3, n1 * d),
            G1,
            (G2[:, :, :, None] * h1[:, None, None, :]).reshape(N, n3, n2 * n1),
            G2,
            np.einsum("oq,nj->noqj", np.eye(n3), h2).reshape(N, n3, n3 * n2),
            np.broadcast_to(np.eye(n3), (N, n3, n3)),
        ],
        axis=2,
    )
    if weight is not None:
        F, Y, J = F * weight[:, None], Y * weight[:, None], J * weight[:, None, None]
    return (F - Y).ravel(), J.reshape(N * n3, -1)


def _sample(params: Params, rng, n_random: int, per_region: int) -> np.ndarray:
    d = params[0][0].shape[1]
    pts = [rng.standard_normal((n_random, d)) * s for s in (0.5, 2.0, 8.0)]
    for R in regions(params).regions:
        dirs = rng.standard_normal((per_region, d))
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        r = R.margin * rng.uniform(0.05, 0.9, (per_region, 1))
        pts.append(R.point[None, :] + np.vstack([np.zeros((1, d)), dirs * r]))
    return np.vstack(pts)


def _relative_difference(p, q, X, scale) -> float:
    diff = np.max(np.abs(forward(p, X) - forward(q, X)), axis=1)
    return float(np.max(diff / (scale * np.maximum(1.0, np.max(np.abs(X), axis=1)))))


def _classify_one_neuron(p: Params, q: Params, classify_tol: float) -> tuple[str, str]:
    """``n1 = 1`` (outside the fast path): a hidden neuron translated, a first-layer kink
    cancelled by the second layer, the neuron kept, or turned around by a ramp flip."""
    wp = np.append(p[0][0][0], p[0][1][0])
    wq = np.append(q[0][0][0], q[0][1][0])
    cos = float(wp @ wq / (np.linalg.norm(wp) * np.linalg.norm(wq)))
    cos_w = float(
        p[0][0][0] @ q[0][0][0] / (np.linalg.norm(p[0][0][0]) * np.linalg.norm(q[0][0][0]))
    )
    kinds = row_kinds(row_signs(p, classify_tol))
    rows = {k: kinds.count(k) for k in sorted(set(kinds))}
    (W2, b2), (W3, _) = q[1], q[2]
    on = b2 > 0  # rows active just right of q's first-layer breakpoint
    jump = np.abs(W3[:, on] @ W2[on, 0]) * np.linalg.norm(wq)
    if cos > 1 - 1e-6:
        return "n1 = 1", f"rows {rows}; first-layer neuron kept (up to scale)"
    if HidingTranslation(0, 0.0).applies(p, tol=classify_tol) and cos_w > 1 - 1e-6:
        return "n1 = 1", f"rows {rows}; hidden first-layer neuron translated (hiding translation)"
    if np.max(jump, initial=0.0) <= 1e-6 * path_norm_scale(q):
        return "not generic", (
            f"rows {rows}; the first-layer neuron moved, its kink cancelled by "
            f"the second layer (W3 D2 W2 vanishes at its breakpoint)"
        )
    if any(RampFlip(j).applies(p, tol=classify_tol) for j in range(W2.shape[0])):
        return "n1 = 1", f"rows {rows}; first-layer neuron turned around; a ramp flip applies"
    return "unexplained", (
        f"rows {rows}; first-layer neuron moved (cosine {cos:.3f}) and no named symmetry applies"
    )


def _classify(p: Params, q: Params, classify_tol: float) -> tuple[str, str]:
    if p[0][0].shape[0] == 1:
        return _classify_one_neuron(p, q, classify_tol)
    try:
        analyze_bottleneck(q, classify_tol)
    except NotCovered as exc:
        return "not generic", str(exc.args[0])
    r = equivalent_bottleneck(p, q, tol=classify_tol)
    if not r.applies:
        return "not generic", r.note
    if r.equivalent and r.symmetry is not None:
        names = sorted({s.name for s in r.symmetry} - {"permutation", "scaling"})
        return "named", "permutations, scalings" + "".join(f", {n}" for n in names)
    if r.equivalent:
        kp, kq = row_kinds(row_signs(p, classify_tol)), row_kinds(row_signs(q, classify_tol))
        count = lambda ks: {k: ks.count(k) for k in sorted(set(ks))}  # noqa: E731
        try:
            cp, cq = canonical_form(p, tol=classify_tol), canonical_form(q, tol=classify_tol)
        except InputError:
            return "unnamed", (
                f"rows {count(kp)} -> {count(kq)}; the always-active block has no canonical form"
            )

        def cross(c, ks):
            return np.array(
                [
                    np.append(c[1][0][j], c[1][1][j])
                    for j in range(len(ks))
                    if ks[j] in ("mixed", "hiding")
                ]
            )

        kcp = row_kinds(row_signs(cp, classify_tol))
        kcq = row_kinds(row_signs(cq, classify_tol))
        Rp, Rq = cross(cp, kcp), cross(cq, kcq)
        turned = 0
        if len(Rp) and len(Rq):
            C = (Rp / np.linalg.norm(Rp, axis=1, keepdims=True)) @ (
                Rq / np.linalg.norm(Rq, axis=1, keepdims=True)
            ).T
            turned = int(np.sum(C[np.arange(len(Rp)), np.argmax(np.abs(C), axis=1)] < 0))
        what = (
            f"{turned} crossing second-layer neuron(s) turned around, the linear term "
            f"absorbed by the always-active block"
            if turned
            else "the always-active block changed beyond mixing"
        )
        return "unnamed", f"rows {count(kp)} -> {count(kq)}; {what}"
    return "unexplained", r.note


@renamed_keywords(starts="num_starts")
def search_symmetries(
    params: Any = None,
    *,
    widths: Any = None,
    num_starts: int = 40,
    initial: Any = None,
    tol: float = RESIDUAL_TOL,
    classify_tol: float = 1e-6,
    seed: Any = 0,
    progress: bool = False,
) -> SymmetrySearch:
    """Search the fiber of a three-layer bottleneck network for points not explained by the
    named symmetries (module docs).

    Args:
        params: the target ``[(W1, b1), (W2, b2), (W3, b3)]``; default: Gaussian
            parameters of ``widths``.
        widths: ``(d, n1, n2, n3)`` with ``n1 <= d`` (needed when ``params`` is None).
        num_starts: number of random starts (Gaussian parameters).
        initial: optional extra starting parameters (a list of parameter lists).
        tol: a candidate is confirmed when its relative difference from the target on a
            dense sample is at most ``tol``.
        classify_tol: tolerance of the polynomial equivalence test used to classify.
        seed: int, None or numpy Generator.
        progress: print one line per confirmed point.

    Returns:
        A :class:`SymmetrySearch` with the clusters of confirmed points.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -2.0]]), np.array([0.5])),
    ...      (np.ones((1, 1)), np.zeros(1))]
    >>> S = search_symmetries(P, num_starts=0, initial=[P])
    >>> S.confirmed, S.clusters[0].kind
    (1, 'named')
    """
    # Whole: the target, the starts, the fits and the clusters in order, on one rng and sample
    refuse_conv(params, "search_symmetries")
    progress = check_bool(progress, "progress")
    tol, classify_tol = check_tol(tol), check_tol(classify_tol, "classify_tol")
    rng = as_seed_rng(seed)
    if params is None:
        if widths is None:
            raise InputError("search_symmetries needs params or widths (d, n1, n2, n3)")
        try:
            ws = None if isinstance(widths, (str, bytes)) else list(widths)
        except TypeError:
            ws = None
        if ws is None or len(ws) != 4:
            raise InputError(f"widths must be (d, n1, n2, n3); got {short_repr(widths)}")
        d, n1, n2, n3 = (check_positive_int(w, "every width", maximum=10_000) for w in ws)
        if not (1 <= n1 <= d and n2 >= 1 and n3 >= 1):
            raise InputError(
                f"widths must be a bottleneck d >= n1 >= 1, n2, n3 >= 1; got {short_repr(widths)}"
            )
        params = [
            (rng.standard_normal((n1, d)), rng.standard_normal(n1)),
            (rng.standard_normal((n2, n1)), rng.standard_normal(n2)),
            (rng.standard_normal((n3, n2)), rng.standard_normal(n3)),
        ]
    p = three_layer(params, "search_symmetries")
    w = (p[0][0].shape[1], p[0][0].shape[0], p[1][0].shape[0], p[2][0].shape[0])
    num_starts = check_nonnegative_int(num_starts, "num_starts", maximum=10_000)
    X = _sample(p, rng, 60, 6)
    X = X[np.max(np.abs(X), axis=1) <= 100.0]
    Y = forward(p, X)
    wt = 1.0 / np.maximum(1.0, np.max(np.abs(X), axis=1))
    scale = max(path_norm_scale(p), 1e-300)
    if not 2.0**-FIT_RANGE <= scale <= 2.0**FIT_RANGE:
        raise ParameterError(
            f"search_symmetries fits networks in floats (least squares on squared "
            f"residuals): the target's scale (path norm {scale:.3g}) must lie within "
            f"2**-{FIT_RANGE} .. 2**{FIT_RANGE}; rescale the network first"
        )
    inits = [_flatten(three_layer(q, "initial")) for q in (initial or [])]
    n_hidden = w[1] + w[2]
    for k in range(num_starts):
        if k % 3 == 0:  # a random point
            inits.append(rng.standard_normal(len(_flatten(p))))
            continue
        # the target with hidden neurons turned around (one, or a random subset) and noise
        q = [(W.copy(), b.copy()) for W, b in p]
        turn = (
            (rng.random(n_hidden) < 0.5)
            if k % 3 == 2
            else np.eye(n_hidden)[rng.integers(n_hidden)] > 0
        )
        for l, sl in ((0, slice(0, w[1])), (1, slice(w[1], n_hidden))):
            s = np.where(turn[sl], -1.0, 1.0)
            q[l] = (q[l][0] * s[:, None], q[l][1] * s)
        theta = _flatten(q)
        inits.append(
            theta * np.exp(0.1 * rng.standard_normal(len(theta)))
            + 0.05 * rng.standard_normal(len(theta))
        )
    candidates, confirmed = 0, []
    for theta0 in inits:
        sol = least_squares(
            lambda t: _residual_and_jacobian(t, w, X, Y, wt)[0],
            theta0,
            jac=lambda t: _residual_and_jacobian(t, w, X, Y, wt)[1],
            method="lm",
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
            max_nfev=400,
        )
        q = _unflatten(sol.x, w)
        if _relative_difference(p, q, X, scale) > 1e-9:
            continue
        candidates += 1
        Xd = np.vstack([_sample(p, rng, 300, 12), _sample(q, rng, 100, 12)])
        diff = _relative_difference(p, q, Xd, scale)
        if diff > tol:
            if progress:
                print(
                    f"candidate not confirmed: relative difference {diff:.2e} on the dense sample"
                )
            continue
        kind, sig = _classify(p, q, classify_tol)
        confirmed.append((kind, sig, q, diff))
        if progress:
            print(f"confirmed fiber point ({diff:.2e}): {kind}: {sig}")
    groups: dict[tuple[str, str], list] = {}
    for kind, sig, q, diff in confirmed:
        groups.setdefault((kind, sig), []).append((q, diff))
    clusters = [
        SearchCluster(
            kind=k, signature=s, count=len(v), example=v[0][0], max_difference=max(x[1] for x in v)
        )
        for (k, s), v in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    ]
    beyond = any(c.kind in ("unnamed", "unexplained") for c in clusters)
    return SymmetrySearch(
        widths=w,
        target=p,
        target_generic=fast_path_reason(p, tol=classify_tol) is None,
        starts=len(inits),
        candidates=candidates,
        confirmed=len(confirmed),
        clusters=clusters,
        beyond_named=beyond,
        tol=float(tol),
        classify_tol=float(classify_tol),
    )
