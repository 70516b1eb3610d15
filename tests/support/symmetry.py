"""Helpers for the symmetry, identifiability and fiber tests of three-layer bottleneck
ReLU networks: the ground-truth equivalence and parameters drawn to hit each sign pattern
of the rows of [W2 | b2] on purpose."""

from __future__ import annotations

import inspect

import numpy as np

from neuromanifold import relu
from neuromanifold.relu._bounds.parameters import path_norm_scale

GT_TOL = 1e-9


def _has_tol() -> bool:
    return "tol" in inspect.signature(relu.equivalent).parameters


def sampled_relative_difference(p, q, domain=None, seed=0, n=3000) -> float:
    """``max |f_p(x) - f_q(x)| / (scale * max(1, |x|_inf))`` over a dense sample: random
    points at several scales and, for every linear region of either network, its interior
    point and points near it inside the region (so thin regions are not missed)."""
    rng = np.random.default_rng(seed)
    d = p[0][0].shape[1]
    pts = [rng.standard_normal((n, d)) * s for s in (0.3, 1.0, 3.0, 30.0)]
    for net in (p, q):
        for R in relu.regions(net, domain).regions:
            dirs = rng.standard_normal((4, d))
            dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
            pts.append(R.point[None, :] + 0.5 * R.margin * np.vstack([np.zeros(d), dirs]))
    X = np.vstack(pts)
    if domain == "orthant":
        X = np.abs(X)
    scale = max(path_norm_scale(p), path_norm_scale(q), 1e-300)
    diff = np.max(np.abs(relu.forward(p, X) - relu.forward(q, X)), axis=1)
    return float(np.max(diff / (scale * np.maximum(1.0, np.max(np.abs(X), axis=1)))))


def ground_truth_equivalent(p, q, domain=None) -> bool:
    """Whether ``p`` and ``q`` compute the same function (relative tolerance 1e-9).

    With a tolerance-aware ``relu.equivalent`` (keyword ``tol``), that decides. Otherwise
    the exact region engine decides over the exact floats: "equivalent" is final; when it
    finds an exact difference, the difference counts only if it exceeds the tolerance at
    the exact witness or anywhere on a dense sample (transformations that are not exact in
    floating point, e.g. a flip with ratio 1/3, leave rounding-level differences)."""
    if _has_tol():
        return relu.equivalent(p, q, domain, method="regions", tol=GT_TOL).equivalent
    res = relu.equivalent(p, q, domain, method="regions")
    if res.equivalent:
        return True
    scale = max(path_norm_scale(p), path_norm_scale(q), 1e-300)
    if res.witness is not None and res.witness_difference > GT_TOL * scale * max(
        1.0, float(np.max(np.abs(res.witness)))
    ):
        return False
    return sampled_relative_difference(p, q, domain) <= GT_TOL


def exactly_equivalent(p, q, domain=None) -> bool:
    """The exact engine over the exact floats (tol = 0 semantics)."""
    kw = {"tol": 0} if _has_tol() else {}
    return relu.equivalent(p, q, domain, method="regions", **kw).equivalent


KINDS = ("mixed", "dead", "linear", "hiding", "ramp")


def draw_row(rng, n1: int, kind: str, i: int | None = None, dyadic: bool = False) -> np.ndarray:
    """A row ``(a, beta)`` of ``[W2 | b2]`` (length n1 + 1) of the given sign kind:
    ``"dead"`` (all negative), ``"linear"`` (all positive), ``"hiding"`` (positive in column
    ``i``, negative elsewhere and in the bias), ``"ramp"`` (n1 = 1: negative weight,
    positive bias) or ``"mixed"`` (a mixed row that is none of the above)."""

    def mag(k):
        if dyadic:
            return rng.integers(1, 8, k) / 4.0
        return rng.uniform(0.3, 2.0, k)

    if kind == "dead":
        return -mag(n1 + 1)
    if kind == "linear":
        return mag(n1 + 1)
    if kind == "hiding":
        r = -mag(n1 + 1)
        r[i] = -r[i]
        return r
    if kind == "ramp":
        assert n1 == 1
        return np.array([-mag(1)[0], mag(1)[0]])
    assert kind == "mixed" and n1 >= 2, "for n1 = 1 every row is dead, linear, hiding or ramp"
    while True:
        s = rng.choice([-1.0, 1.0], n1 + 1)
        npos_w = int(np.sum(s[:-1] > 0))
        if np.all(s > 0) or np.all(s < 0):
            continue
        if s[-1] < 0 and npos_w == 1:  # hiding
            continue
        if n1 == 1 and s[0] < 0 < s[1]:  # ramp
            continue
        return s * mag(n1 + 1)


def bottleneck(rng, widths, kinds=None, dyadic: bool = False):
    """Random three-layer bottleneck parameters ``d -> n1 -> n2 -> n3`` (``n1 <= d``, ``W1``
    of full row rank); ``kinds`` gives each second-layer row's kind (a name from
    :data:`KINDS`, or ``("hiding", i)``); by default Gaussian rows."""
    d, n1, n2, n3 = widths
    assert n1 <= d
    while True:
        W1 = rng.integers(-4, 5, (n1, d)) / 2.0 if dyadic else rng.standard_normal((n1, d))
        if np.linalg.matrix_rank(W1) == n1:
            break
    b1 = rng.integers(-4, 5, n1) / 2.0 if dyadic else rng.standard_normal(n1)
    if kinds is None:
        R = rng.standard_normal((n2, n1 + 1))
    else:
        R = np.array(
            [
                draw_row(rng, n1, k[0], k[1], dyadic)
                if isinstance(k, tuple)
                else draw_row(rng, n1, k, None, dyadic)
                for k in kinds
            ]
        )
    W3 = rng.integers(-4, 5, (n3, n2)) / 2.0 if dyadic else rng.standard_normal((n3, n2))
    if dyadic:
        W3[W3 == 0] = 1.0
    b3 = rng.integers(-4, 5, n3) / 2.0 if dyadic else rng.standard_normal(n3)
    return [(W1, b1), (R[:, :-1].copy(), R[:, -1].copy()), (W3, b3)]


def orbit_normal_form(params, decimals=9):
    """A normal form of ``params`` under permutations and positive rescalings of hidden
    neurons: each hidden neuron's incoming row ``(W_l[j], b_l[j])`` scaled to unit norm
    (the scale pushed into the next layer), neurons sorted by their rounded rows.
    Two parameters are in the same permutation-scaling orbit iff their normal forms are
    equal (up to rounding)."""
    out = [(np.array(W, float), np.array(b, float)) for W, b in params]
    for l in range(len(out) - 1):
        W, b = out[l]
        s = np.sqrt(np.sum(W**2, axis=1) + b**2)
        s[s == 0] = 1.0
        W, b = W / s[:, None], b / s
        Wn, bn = out[l + 1]
        Wn = Wn * s[None, :]
        key = np.round(np.hstack([W, b[:, None]]), decimals)
        order = sorted(range(W.shape[0]), key=lambda j: tuple(key[j]))
        out[l] = (W[order], b[order])
        out[l + 1] = (Wn[:, order], bn)
    return out


def same_orbit(p, q, atol=1e-7) -> bool:
    """Whether ``q`` is a permutation-and-rescaling of ``p`` (numerically)."""
    a, b = orbit_normal_form(p), orbit_normal_form(q)
    return all(
        A.shape == B.shape and np.allclose(A, B, atol=atol) and np.allclose(x, y, atol=atol)
        for (A, x), (B, y) in zip(a, b)
    )
