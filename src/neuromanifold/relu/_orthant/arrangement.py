"""One hidden layer on a polyhedral domain: the canonical weighted arrangement
(docs/concepts_relu.md §2).

A one-hidden-layer network ``g(z) = sum_j C[:, j] relu(<a_j, z> + beta_j) + gamma`` (two
affine layers ``(W, b) = ([a_j], [beta_j])`` and ``(C, gamma)``) restricted to a
full-dimensional domain D is written canonically as

    g(z) = sum_H w_H relu(<n_H, z> + t_H) + M z + v        for z in D,

where H runs over the *visible* hyperplanes: hyperplanes meeting the interior of D on
which at least one neuron switches and across which the gradient jumps (by the rank-one
matrix ``w_H n_H^T``). Each hyperplane is normalized exactly: the first nonzero entry of
``n_H`` is 1. A neuron on H with ``(a_j, beta_j) = lam_j (n_H, t_H)`` contributes
``|lam_j| C[:, j]`` to ``w_H`` whatever its orientation (sign of ``lam_j``), and a neuron
with ``lam_j < 0`` also contributes the affine function ``C[:, j] (<a_j, z> + beta_j)``
(from ``relu(-u) = relu(u) - u``). Neurons whose hyperplane misses the interior are always
active (affine) or always inactive there. The data ``{(H, w_H)}, M, v`` is a complete
invariant: two networks agree on D iff their arrangements are equal (docs/relu_arrangement.md §1).

Everything is computed in exact rational arithmetic (floats are exact binary rationals);
the tolerance ``tol`` only merges nearly parallel neurons, drops negligible jumps and
compares (see :func:`weighted_arrangement` and :func:`arrangements_equal`). The fiber of a
network on the orthant is in ``_orthant_fiber``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from ..._errors import ArchitectureError, InputError, short_repr
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_finite_array
from ...exact import fmpq_to_fraction, qmat, rational_matmul
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain, as_domain
from .._core.live import refuse_conv
from .._core.numbers import exact_layers, open_range

__all__ = [
    "ArrangementHyperplane",
    "WeightedArrangement",
    "ArrangementComparison",
    "weighted_arrangement",
    "arrangements_equal",
]

_INF = math.inf
_ZERO = Fraction(0)

Vec = tuple  # tuple of Fractions


# ---------------------------------------------------------------------------------------
# exact inputs (also used by the orthant fiber and by genericity)
# ---------------------------------------------------------------------------------------


def canonical_hyperplane(
    a: Sequence[Fraction], beta: Fraction
) -> tuple[Vec, Fraction, Fraction, int]:
    """``(normal, offset, lam, pivot)`` with ``(a, beta) = lam (normal, offset)`` and
    ``normal[pivot] = 1`` at the first nonzero entry of ``a`` (``a`` must be nonzero)."""
    p = next(i for i, x in enumerate(a) if x != 0)
    lam = a[p]
    return tuple(x / lam for x in a), beta / lam, lam, p


def _lp_range(a: Sequence[Fraction], dom: Domain) -> tuple[float, float]:
    """Float ``(inf, sup)`` of ``<a, z>`` over a general polyhedral domain (LP)."""
    from scipy.optimize import linprog  # start-up: a slow import

    af = np.array([float(x) for x in a])
    out = []
    for sgn in (1.0, -1.0):
        res = linprog(
            sgn * af, A_ub=dom.A, b_ub=dom.c, bounds=[(None, None)] * dom.dim, method="highs"
        )
        if res.status == 3:
            out.append(-_INF)
        elif res.status == 0:
            out.append(float(res.fun))
        else:  # pragma: no cover - a domain is never empty
            raise InputError(f"could not bound <a, z> over the domain {dom!r}")
    return out[0], -out[1]


def _side(a: Sequence[Fraction], beta: Fraction, dom: Domain) -> tuple[str, bool]:
    """Where neuron ``relu(<a, z> + beta)`` switches relative to the domain's interior:
    ``"cross"`` (its hyperplane meets the interior), ``"active"`` (pre-activation > 0 on
    the interior) or ``"inactive"``; and whether the decision is exact."""
    rng = open_range(a, dom)
    exact = rng is not None
    if rng is None:
        rng = _lp_range(a, dom)
    lo, hi = rng
    if all(x == 0 for x in a):
        return ("active" if beta > 0 else "inactive"), True
    if lo < -beta < hi:
        return "cross", exact
    return ("active" if -beta <= lo else "inactive"), exact


def one_hidden_layer(params: Any, what: str) -> tuple[list, list]:
    layers, exact = exact_layers(params)
    if len(layers) != 2:
        raise ArchitectureError(
            f"{what} needs a one-hidden-layer network (two affine layers (W, b), (C, gamma)); "
            f"got {len(layers)} affine layers"
        )
    return layers, exact


# ---------------------------------------------------------------------------------------
# float views used by the tolerance (exact data in, floats out, no overflow)
# ---------------------------------------------------------------------------------------


def _direction(v: Sequence[Any]) -> tuple[float, ...]:
    """``v / ||v||_1`` as floats (``v`` nonzero: Fractions or floats), without overflow."""
    mx = max(abs(x) for x in v)
    e = [float(x / mx) for x in v]
    s = sum(abs(x) for x in e)
    return tuple(x / s for x in e)


def _same_direction(e: Sequence[float], f: Sequence[float], tol: float) -> int:
    """+1 when ``e`` and ``f`` agree within ``tol`` (max norm), -1 when ``e`` and ``-f`` do,
    else 0."""
    if max(abs(x - y) for x, y in zip(e, f)) <= tol:
        return 1
    if max(abs(x + y) for x, y in zip(e, f)) <= tol:
        return -1
    return 0


def _jump_norm(weight: Sequence[Fraction], ext: Sequence[Fraction]) -> float:
    """The largest row l1 norm of ``w (n, t)^T``: ``max_o |w_o| * ||(n, t)||_1``."""
    return float(max(abs(x) for x in weight) * sum(abs(x) for x in ext))


def _jump(weight: Sequence[Fraction], ext: Sequence[Fraction]) -> np.ndarray:
    """The extended jump ``w (n, t)^T`` (m x (d+1)) as floats."""
    return np.array([[float(w * x) for x in ext] for w in weight]).reshape(len(weight), len(ext))


def _qopnorm(X: flint.fmpq_mat) -> float:
    """The largest row l1 norm of an exact matrix, as a float (computed exactly)."""
    return float(
        max(
            (sum((abs(x) for x in row), flint.fmpq(0)) for row in X.tolist()), default=flint.fmpq(0)
        )
    )


# ---------------------------------------------------------------------------------------
# the weighted arrangement
# ---------------------------------------------------------------------------------------


def _fstr(x: Fraction) -> str:
    return str(x) if x.denominator != 1 else str(x.numerator)


def _vstr(v: Sequence[Fraction]) -> str:
    return "(" + ", ".join(_fstr(x) for x in v) + ")"


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ArrangementHyperplane(Result):
    """One visible hyperplane ``{z : <normal, z> + offset = 0}`` of a weighted arrangement.

    Attributes:
        normal: exact normal, normalized so that its first nonzero entry is 1.
        offset: exact offset.
        weight: exact ``w`` in R^m: crossing H towards ``<normal, z> + offset > 0`` the
            gradient (Jacobian) of the network jumps by ``w normal^T``. Nonzero.
        neurons: the hidden neurons (0-based) whose hyperplane is H.
        scales: ``lam_j`` with ``(W[j], b[j]) = lam_j (normal, offset)``; its sign is the
            neuron's orientation (positive: active on the positive side). For a neuron
            merged onto H by a tolerance, ``lam_j`` is the exact projection coefficient.
    """

    normal: tuple
    offset: Fraction
    weight: tuple
    neurons: tuple
    scales: tuple

    @property
    def orientations(self) -> tuple[int, ...]:
        """The sign (+1 or -1) of each neuron's scale on this hyperplane."""
        return tuple(1 if s > 0 else -1 for s in self.scales)

    @property
    def jump(self) -> np.ndarray:
        """The extended jump ``weight (normal, offset)^T`` (floats, shape ``(m, d + 1)``):
        the sum of ``C[:, j] (W[j], b[j])`` over the neurons on H (signs by orientation),
        unchanged by permuting and positively rescaling neurons."""
        return _jump(self.weight, tuple(self.normal) + (self.offset,))

    def unit(self) -> tuple[np.ndarray, float, np.ndarray]:
        """Float ``(u, s, omega)`` with unit normal ``u = normal/|normal|``, ``s =
        offset/|normal|`` and ``omega = |normal| weight`` (so ``w relu(<n,z>+t) =
        omega relu(<u,z>+s)``)."""
        n = np.array([float(x) for x in self.normal])
        nn = float(np.linalg.norm(n))
        return n / nn, float(self.offset) / nn, np.array([float(x) for x in self.weight]) * nn

    def __str__(self) -> str:
        return f"H: {_vstr(self.normal)}.z + {_fstr(self.offset)} = 0, weight {_vstr(self.weight)}"


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class WeightedArrangement(Result):
    """The canonical weighted arrangement of a one-hidden-layer network on a domain.

    On the domain, ``g(z) = sum_H H.weight relu(<H.normal, z> + H.offset) + linear @ z +
    bias`` (exactly when :attr:`exact`). Two one-hidden-layer networks are equal on the
    domain iff their arrangements are equal (:meth:`equals`).

    Attributes:
        domain: the domain.
        input_dim, output_dim: d and m.
        hyperplanes: the visible hyperplanes, sorted by ``(normal, offset)``.
        linear: exact ``M`` (tuple of m rows of d Fractions).
        bias: exact ``v`` (m Fractions).
        active_neurons: neurons (0-based) active on the whole interior (they act affinely).
        inactive_neurons: neurons inactive on the whole interior (dead there).
        hidden_neurons: neurons whose hyperplane meets the interior but where the summed
            gradient jump of all neurons on that hyperplane is zero (no bend), or
            negligible at the tolerance.
        scale: the network's scale (l1 path norm with biases), the unit of ``tolerance``.
        tolerance: the relative tolerance used (0: everything exact).
        exact: the canonical form equals the network exactly on the domain (False when
            the tolerance merged nearly parallel neurons or dropped a nonzero jump).
        certified: the classification is exact (closed forms for whole/box/orthant).
        method: how it was computed.
    """

    domain: Domain
    input_dim: int
    output_dim: int
    hyperplanes: tuple
    linear: tuple
    bias: tuple
    active_neurons: tuple
    inactive_neurons: tuple
    hidden_neurons: tuple
    scale: float
    tolerance: float
    exact: bool
    certified: bool
    method: str

    @property
    def num_hyperplanes(self) -> int:
        """Number of visible hyperplanes."""
        return len(self.hyperplanes)

    def evaluate(self, Z: Any) -> np.ndarray:
        """The canonical form evaluated (floats) at inputs ``Z`` of shape ``(N, d)`` (or one
        input of shape ``(d,)``); equals the network on the domain.

        Returns:
            Array of shape ``(N, m)``.
        """
        Z = np.atleast_2d(as_finite_array(Z, "Z", error=InputError))
        if Z.ndim != 2 or Z.shape[1] != self.input_dim:
            raise InputError(f"Z must have shape (N, {self.input_dim}); got shape {Z.shape}")
        M = np.array([[float(x) for x in row] for row in self.linear]).reshape(
            self.output_dim, self.input_dim
        )
        out = Z @ M.T + np.array([float(x) for x in self.bias])
        for H in self.hyperplanes:
            n = np.array([float(x) for x in H.normal])
            w = np.array([float(x) for x in H.weight])
            out = out + np.maximum(Z @ n + float(H.offset), 0.0)[:, None] * w[None, :]
        return out

    def equals(self, other: "WeightedArrangement", *, tol: float = DEFAULT_TOL) -> bool:
        """Whether the two arrangements (hence the two functions on the domain) are equal.

        ``tol = 0``: exact comparison of the rational data. ``tol > 0``: equal up to
        ``tol`` times the larger of the two scales (see :func:`arrangements_equal`).
        """
        return _compare(self, other, tol)[0]

    def describe(self) -> str:
        """A readable multi-line description."""
        lines = [
            f"weighted arrangement on {self.domain.kind} (d={self.input_dim}, "
            f"m={self.output_dim}): {self.num_hyperplanes} visible hyperplane(s)"
        ]
        lines += ["  " + str(H) + f"  [neurons {list(H.neurons)}]" for H in self.hyperplanes]
        lines.append("  linear part M = " + "[" + ", ".join(_vstr(r) for r in self.linear) + "]")
        lines.append("  bias v = " + _vstr(self.bias))
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ArrangementComparison(Result):
    """Outcome of :func:`arrangements_equal`.

    Attributes:
        equal: whether the two networks agree on the domain (per their arrangements).
        reason: what differs first (empty when equal).
        difference: the largest difference found (extended jumps on a hyperplane, or the
            affine parts; largest row l1 norm) relative to :attr:`scale`; 0.0 when the
            arrangements are exactly equal, ``inf`` when dimensions or domains differ.
        scale: the larger of the two networks' scales (l1 path norms with biases).
        tolerance: the relative tolerance used (0: exact).
        certified: the verdict is exact: "equal" because the exact arrangements are equal,
            or "not equal" because they differ (the functions then differ); False for
            "equal within the tolerance" and when a tolerance changed an arrangement (or
            a neuron was classified by floating-point LP).
        method: how it was decided.
        first, second: the two arrangements.
    """

    equal: bool
    reason: str
    difference: float
    scale: float
    tolerance: float
    certified: bool
    method: str
    first: WeightedArrangement = dataclasses.field(repr=False)
    second: WeightedArrangement = dataclasses.field(repr=False)


def _same_domain(a: Domain, b: Domain) -> bool:
    return (
        a.kind == b.kind
        and a.dim == b.dim
        and np.array_equal(a.A, b.A)
        and np.array_equal(a.c, b.c)
    )


def _exact_difference(p: WeightedArrangement, q: WeightedArrangement) -> str:
    """The first difference of the exact data, or ``""`` when equal."""
    kp = {(H.normal, H.offset): H.weight for H in p.hyperplanes}
    kq = {(H.normal, H.offset): H.weight for H in q.hyperplanes}
    for key in sorted(kp.keys() | kq.keys()):
        if key not in kp or key not in kq:
            return f"hyperplane {_vstr(key[0])}.z + {_fstr(key[1])} = 0 is only in one"
        if kp[key] != kq[key]:
            return (
                f"weights on hyperplane {_vstr(key[0])}.z + {_fstr(key[1])} = 0 "
                f"differ: {_vstr(kp[key])} vs {_vstr(kq[key])}"
            )
    if p.linear != q.linear:
        return "the linear parts differ"
    if p.bias != q.bias:
        return "the biases differ"
    return ""


def _tolerant_difference(
    p: WeightedArrangement, q: WeightedArrangement, tol: float
) -> tuple[float, str]:
    """The largest difference (absolute, largest row l1 norm, computed exactly) between
    the extended jumps of matched hyperplanes and between the affine parts, and where.

    Hyperplanes of both arrangements are grouped by direction: the l1-normalized extended
    normals ``(n, t) / ||(n, t)||_1`` agreeing within ``tol`` up to sign. In a group, each
    hyperplane's jump is taken in the group's orientation (``w relu(u) = w relu(-u) + w u``
    moves the jump of a flipped hyperplane to the affine part), and the summed jumps of
    the two arrangements are compared.
    """
    d = p.input_dim
    groups: list[list] = []  # [direction, summed jump of p minus q (exact), label]
    affine = []
    for sign, A in ((1, p), (-1, q)):
        aff = qmat([list(row) + [v] for row, v in zip(A.linear, A.bias)], d + 1)
        for H in A.hyperplanes:
            ext = tuple(H.normal) + (H.offset,)
            e = _direction(ext)
            J = qmat([[x] for x in H.weight], 1) * qmat([list(ext)], d + 1)
            for g in groups:
                same = _same_direction(e, g[0], tol)
                if same > 0:
                    g[1] = g[1] + J if sign > 0 else g[1] - J
                    break
                if same < 0:
                    g[1] = g[1] - J if sign > 0 else g[1] + J
                    aff = aff + J
                    break
            else:
                groups.append(
                    [e, J if sign > 0 else -J, f"{_vstr(H.normal)}.z + {_fstr(H.offset)} = 0"]
                )
        affine.append(aff)
    worst, where = 0.0, ""
    for _, D, label in groups:
        if _qopnorm(D) > worst:
            worst, where = _qopnorm(D), f"the jumps on hyperplane {label}"
    if _qopnorm(affine[0] - affine[1]) > worst:
        worst, where = _qopnorm(affine[0] - affine[1]), "the affine parts"
    return worst, where


def _compare(
    p: WeightedArrangement, q: WeightedArrangement, tol: float
) -> tuple[bool, str, float, bool]:
    """``(equal, reason, relative difference, exact verdict)``."""
    if not isinstance(q, WeightedArrangement):
        raise InputError(f"can only compare with a WeightedArrangement; got {short_repr(q)}")
    tol = check_tol(tol)
    if (p.input_dim, p.output_dim) != (q.input_dim, q.output_dim):
        return (
            False,
            (
                f"dimensions differ: (d, m) = {(p.input_dim, p.output_dim)} vs "
                f"{(q.input_dim, q.output_dim)}"
            ),
            _INF,
            True,
        )
    if not _same_domain(p.domain, q.domain):
        return False, "the domains differ", _INF, True
    exact = p.exact and q.exact
    reason = _exact_difference(p, q)
    if not reason:
        return True, "", 0.0, exact
    scale = max(p.scale, q.scale)
    diff, where = _tolerant_difference(p, q, tol)
    rel = diff / scale if scale > 0 else (_INF if diff > 0 else 0.0)
    if tol == 0:
        return False, reason, rel, exact
    if rel <= tol:
        return True, "", rel, False
    # the exact arrangements differ, so (when they are exact) the functions differ
    return False, f"{where} differ by {rel:.3g} relative to the scale (> tol = {tol:g})", rel, exact


def weighted_arrangement(
    params: Any, domain: Any = "orthant", *, tol: float = DEFAULT_TOL
) -> WeightedArrangement:
    """The canonical weighted arrangement of a one-hidden-layer network on a domain.

    Args:
        params: ``[(W, b), (C, gamma)]``, ``W`` of shape ``(n, d)``, ``C`` of shape
            ``(m, n)``. Entries may be floats or exact rationals (``Fraction``, ints).
        domain: ``"orthant"`` (default, docs/concepts_relu.md §2), ``None``/``"whole"``, a
            ``(lower, upper)`` box or a :class:`Domain`.
        tol: relative tolerance (docs/relu_arrangement.md §1). Crossing neurons whose
            l1-normalized rows ``(W[j], b[j]) / ||(W[j], b[j])||_1`` agree within ``tol``
            up to sign share one hyperplane (the exact hyperplane of the first), and a
            hyperplane whose extended jump ``w (n, t)^T`` has largest row l1 norm at most
            ``tol`` times the network's scale (l1 path norm with biases) is dropped
            (its neurons are hidden). ``tol = 0``: only exactly parallel neurons share a
            hyperplane and only exactly zero jumps are dropped.

    Returns:
        A :class:`WeightedArrangement` (exact rationals; ``exact`` tells whether the
        tolerance changed anything).

    >>> W = [[1.0, -1.0], [2.0, -2.0], [1.0, 1.0]]; b = [0.0, 0.0, 1.0]
    >>> A = weighted_arrangement([(W, b), ([[1.0, 1.0, 1.0]], [0.0])])
    >>> [str(H) for H in A.hyperplanes], A.active_neurons
    (['H: (1, -1).z + 0 = 0, weight (3)'], (2,))
    """
    # Whole: sort the neurons, merge hyperplanes, weigh them, sum the affine part: one exact pass
    refuse_conv(params, "weighted_arrangement")
    layers, exact_layers = one_hidden_layer(params, "weighted_arrangement")
    tol = check_tol(tol)
    (W, b), (C, g) = exact_layers
    Wf, bf = layers[0]
    n, d, m = len(W), len(W[0]), len(C)
    dom = as_domain(domain, d)
    scale = path_norm_scale(layers)
    certified = exact = True
    groups: dict[tuple, list[int]] = {}
    own_lam: dict[int, Fraction] = {}
    affine_neurons: list[int] = []
    active, inactive = [], []
    for j in range(n):
        side, ex = _side(W[j], b[j], dom)
        certified &= ex
        if side == "cross":
            normal, offset, own_lam[j], _ = canonical_hyperplane(W[j], b[j])
            groups.setdefault((normal, offset), []).append(j)
        elif side == "active":
            active.append(j)
        else:
            inactive.append(j)
    # hyperplanes: exact groups, merged by direction when tol > 0
    merged: list[tuple[tuple, tuple | None, list[int]]] = []
    for key in sorted(groups):
        j0 = groups[key][0]  # the direction of (n, t) is sign(lam) (W[j0], b[j0])
        e = (
            None
            if tol == 0 or len(groups) < 2
            else _direction([x if own_lam[j0] > 0 else -x for x in list(Wf[j0]) + [bf[j0]]])
        )
        for _, e0, members in merged:
            if e is not None and _same_direction(e, e0, tol):
                members.extend(groups[key])
                exact = False
                break
        else:
            merged.append((key, e, list(groups[key])))
    hyperplanes, hidden = [], []
    for (normal, offset), _, members in merged:
        ext = normal + (offset,)
        lams = []
        own = set(groups[(normal, offset)])
        for j in members:  # merged neurons: the exact projection coefficient on (n, t)
            lam = (
                own_lam[j]
                if j in own
                else sum((x * y for x, y in zip(list(W[j]) + [b[j]], ext)), _ZERO)
                / sum((x * x for x in ext), _ZERO)
            )
            lams.append(lam)
            if lam < 0:
                affine_neurons.append(j)
        w = tuple(
            sum((abs(lam) * C[o][j] for j, lam in zip(members, lams)), _ZERO) for o in range(m)
        )
        if all(x == 0 for x in w):
            hidden.extend(members)
            continue
        if tol > 0 and _jump_norm(w, ext) <= tol * scale:
            hidden.extend(members)
            exact = False
            continue
        order = sorted(range(len(members)), key=lambda i: members[i])
        hyperplanes.append(
            ArrangementHyperplane(
                normal=normal,
                offset=offset,
                weight=w,
                neurons=tuple(members[i] for i in order),
                scales=tuple(lams[i] for i in order),
            )
        )
    # affine part (M | v) = (0 | gamma) + sum over affine-acting neurons C[:, j] (W[j] | b[j])
    aff = sorted(active + affine_neurons)
    Mv = rational_matmul(
        [[C[o][j] for j in aff] for o in range(m)],
        [list(W[j]) + [b[j]] for j in aff],
        len(aff),
        d + 1,
    )
    M = tuple(tuple(fmpq_to_fraction(x) for x in row[:d]) for row in Mv)
    v = tuple(g[o] + fmpq_to_fraction(Mv[o][d]) for o in range(m))
    return WeightedArrangement(
        domain=dom,
        input_dim=d,
        output_dim=m,
        hyperplanes=tuple(hyperplanes),
        linear=M,
        bias=v,
        active_neurons=tuple(active),
        inactive_neurons=tuple(inactive),
        hidden_neurons=tuple(sorted(hidden)),
        scale=scale,
        tolerance=tol,
        exact=exact,
        certified=certified,
        method=("exact rational (closed-form ranges)" if certified else "LP ranges (floats)")
        + ("" if exact else f"; tolerance {tol:g} merged or dropped hyperplanes"),
    )


def arrangements_equal(
    p: Any, q: Any, domain: Any = "orthant", *, tol: float = DEFAULT_TOL
) -> ArrangementComparison:
    """Whether two one-hidden-layer networks are equal on ``domain``, by comparing their
    canonical weighted arrangements.

    With ``tol = 0`` the exact rational arrangements are compared (today's exact
    semantics). With ``tol > 0`` (docs/relu_arrangement.md §1) both arrangements are built
    at ``tol`` (:func:`weighted_arrangement`), hyperplanes are matched by direction (unit
    extended normals within ``tol`` up to sign), and the networks count as equal when the
    extended jumps ``w (n, t)^T`` of matched hyperplanes (unmatched ones against 0) and
    the affine parts ``(M | v)``, re-expressed in the matched orientations, differ by at
    most ``tol`` times the larger scale (l1 path norm with biases) in the largest row l1
    norm. Since ``|f(z)| <= ||(M | v)|| max(1, ||z||_inf)`` for such pieces, this bounds
    the difference of the two functions relative to their size. The default absorbs
    float64 rounding (a permuted copy rescaled by arbitrary positive floats is equal) and
    still sees a relative change of 1e-6 in one live weight.

    Args:
        p, q: one-hidden-layer networks, lists ``[(W1, b1), (W2, b2)]`` (floats or exact
            ``Fraction``/int entries).
        domain: the input domain (default the nonnegative orthant; see
            :func:`weighted_arrangement`).
        tol: relative tolerance in ``[0, 1)`` (0 compares exact rationals).

    Returns:
        An :class:`ArrangementComparison` (``.equal``, the reason when not equal, and the
        measured ``difference`` relative to the scale).

    >>> p = [([[1.0, -1.0]], [0.5]), ([[2.0]], [0.0])]
    >>> q = [([[2.0, -2.0]], [1.0]), ([[1.0]], [0.0])]   # positive rescaling of the neuron
    >>> arrangements_equal(p, q).equal
    True
    >>> r = [([[0.3, -0.3]], [0.15]), ([[2.0 / 0.3]], [0.0])]  # rescaled by 0.3: rounded
    >>> arrangements_equal(p, r, tol=0).equal, arrangements_equal(p, r).equal
    (False, True)
    """
    tol = check_tol(tol)
    A = weighted_arrangement(p, domain, tol=tol)
    B = weighted_arrangement(q, domain, tol=tol)
    eq, reason, diff, exact_verdict = _compare(A, B, tol)
    return ArrangementComparison(
        equal=eq,
        reason=reason,
        difference=diff,
        scale=max(A.scale, B.scale),
        tolerance=tol,
        certified=exact_verdict and A.certified and B.certified,
        method="canonical weighted arrangements"
        + (" (exact)" if tol == 0 else f" (relative tolerance {tol:g})"),
        first=A,
        second=B,
    )
