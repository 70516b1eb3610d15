"""One hidden layer on a polyhedral domain: the canonical weighted arrangement, and the
fiber of a one-hidden-layer network on the nonnegative orthant (docs/concepts_relu.md §2).

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
invariant: two networks agree on D iff their arrangements are equal (see ``docs``).

Everything is computed in exact rational arithmetic (floats are exact binary rationals).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from .._errors import ArchitectureError, DomainError, InputError, ParameterError, short_repr
from .._results import Result
from .._validation import as_seed_rng, check_bool, check_nonnegative_float, check_positive_int
from ._domain import Domain, as_domain
from ._engine import progress_iter
from ._net import check_params

__all__ = [
    "ArrangementHyperplane",
    "WeightedArrangement",
    "ArrangementComparison",
    "weighted_arrangement",
    "arrangements_equal",
    "FiberPiece",
    "OrthantFiber",
    "orthant_fiber",
]

_INF = math.inf
_ZERO = Fraction(0)
_ONE = Fraction(1)

Vec = tuple  # tuple of Fractions


# ---------------------------------------------------------------------------------------
# exact helpers (Fractions; python-flint for ranks and row reduction)
# ---------------------------------------------------------------------------------------

def _frac(x: Any) -> Fraction:
    """The exact rational value of a float, int, Fraction, fmpq or sympy Rational."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    if isinstance(x, flint.fmpq):
        return Fraction(int(x.p), int(x.q))
    if hasattr(x, "p") and hasattr(x, "q") and not isinstance(x, float):  # sympy Rational
        return Fraction(int(x.p), int(x.q))
    return Fraction(float(x))


def _exact_layers(params: Any) -> tuple[list, list]:
    """Validated float layers and the exact values of the very entries passed.

    Entries given as ``Fraction``/``fmpq``/ints are kept exact (so exact fiber samples can
    be checked without rounding); floats are converted exactly.
    """
    layers = check_params(params)
    exact = []
    for (W, b), (Wf, bf) in zip(params, layers):
        We = np.asarray(W, dtype=object).reshape(Wf.shape)
        be = np.asarray(b, dtype=object).reshape(bf.shape)
        exact.append(([[_frac(x) for x in row] for row in We.tolist()],
                      [_frac(x) for x in be.tolist()]))
    return layers, exact


def _fmat(rows: Sequence[Sequence[Fraction]], ncols: int) -> flint.fmpq_mat:
    m = flint.fmpq_mat(len(rows), ncols)
    for i, row in enumerate(rows):
        for j, x in enumerate(row):
            if x:
                m[i, j] = flint.fmpq(x.numerator, x.denominator)
    return m


def _unfmat(m: flint.fmpq_mat) -> list[list[Fraction]]:
    return [[Fraction(int(q.p), int(q.q)) for q in row] for row in m.tolist()]


def _rank(rows: Sequence[Sequence[Fraction]], ncols: int) -> int:
    if not rows or ncols == 0:
        return 0
    return int(_fmat(rows, ncols).rank())


def _rref(rows: Sequence[Sequence[Fraction]], ncols: int) -> tuple[list[list[Fraction]], list[int]]:
    """Nonzero rows of the reduced row echelon form and their pivot columns."""
    if not rows:
        return [], []
    R, rank = _fmat(rows, ncols).rref()
    out = _unfmat(R)[: int(rank)]
    pivots = [next(j for j, x in enumerate(row) if x != 0) for row in out]
    return out, pivots


def _nullspace(rows: Sequence[Sequence[Fraction]], ncols: int) -> list[list[Fraction]]:
    """A basis of ``{x : rows @ x = 0}`` (exact)."""
    R, pivots = _rref(rows, ncols)
    free = [j for j in range(ncols) if j not in pivots]
    basis = []
    for f in free:
        x = [_ZERO] * ncols
        x[f] = _ONE
        for i, p in enumerate(pivots):
            x[p] = -R[i][f]
        basis.append(x)
    return basis


def _comb(coefs: Sequence[Fraction], vecs: Sequence[Sequence[Fraction]], n: int) -> list[Fraction]:
    out = [_ZERO] * n
    for c, v in zip(coefs, vecs):
        if c:
            for i, x in enumerate(v):
                if x:
                    out[i] += c * x
    return out


def _matmul(A: Sequence[Sequence[Fraction]], B: Sequence[Sequence[Fraction]], inner: int,
            ncols: int) -> list[list[Fraction]]:
    return [[sum((A[i][k] * B[k][j] for k in range(inner) if A[i][k] and B[k][j]), _ZERO)
             for j in range(ncols)] for i in range(len(A))]


def _normalized(v: Sequence[Fraction]) -> list[Fraction]:
    """``v`` scaled by a positive rational so that its largest absolute entry is 1."""
    mx = max((abs(x) for x in v), default=_ZERO)
    return [x / mx for x in v] if mx else list(v)


def _canonical(a: Sequence[Fraction], beta: Fraction) -> tuple[Vec, Fraction, Fraction, int]:
    """``(normal, offset, lam, pivot)`` with ``(a, beta) = lam (normal, offset)`` and
    ``normal[pivot] = 1`` at the first nonzero entry of ``a`` (``a`` must be nonzero)."""
    p = next(i for i, x in enumerate(a) if x != 0)
    lam = a[p]
    return tuple(x / lam for x in a), beta / lam, lam, p


def _open_range(a: Sequence[Fraction], dom: Domain) -> tuple[Any, Any] | None:
    """Exact ``(inf, sup)`` of ``<a, z>`` over the interior of ``dom`` (``None`` when the
    domain kind has no closed form). For ``a != 0`` the range over the interior is the open
    interval between these values; over the closed domain, its closure."""
    if all(x == 0 for x in a):
        return _ZERO, _ZERO
    if dom.kind == "whole":
        return -_INF, _INF
    if dom.kind == "orthant":
        lo = -_INF if any(x < 0 for x in a) else _ZERO
        hi = _INF if any(x > 0 for x in a) else _ZERO
        return lo, hi
    if dom.kind == "box" and dom.lower is not None and dom.upper is not None:
        lo = hi = _ZERO
        for x, l, u in zip(a, dom.lower, dom.upper):
            p, q = x * _frac(float(l)), x * _frac(float(u))
            lo += min(p, q)
            hi += max(p, q)
        return lo, hi
    return None


def _lp_range(a: Sequence[Fraction], dom: Domain) -> tuple[float, float]:
    """Float ``(inf, sup)`` of ``<a, z>`` over a general polyhedral domain (LP)."""
    from scipy.optimize import linprog

    af = np.array([float(x) for x in a])
    out = []
    for sgn in (1.0, -1.0):
        res = linprog(sgn * af, A_ub=dom.A, b_ub=dom.c, bounds=[(None, None)] * dom.dim,
                      method="highs")
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
    rng = _open_range(a, dom)
    exact = rng is not None
    if rng is None:
        rng = _lp_range(a, dom)
    lo, hi = rng
    if all(x == 0 for x in a):
        return ("active" if beta > 0 else "inactive"), True
    if lo < -beta < hi:
        return "cross", exact
    return ("active" if -beta <= lo else "inactive"), exact


# ---------------------------------------------------------------------------------------
# the weighted arrangement
# ---------------------------------------------------------------------------------------

def _fstr(x: Fraction) -> str:
    return str(x) if x.denominator != 1 else str(x.numerator)


def _vstr(v: Sequence[Fraction]) -> str:
    return "(" + ", ".join(_fstr(x) for x in v) + ")"


@dataclasses.dataclass(frozen=True, repr=False)
class ArrangementHyperplane(Result):
    """One visible hyperplane ``{z : <normal, z> + offset = 0}`` of a weighted arrangement.

    Attributes:
        normal: exact normal, normalized so that its first nonzero entry is 1.
        offset: exact offset.
        weight: exact ``w`` in R^m: crossing H towards ``<normal, z> + offset > 0`` the
            gradient (Jacobian) of the network jumps by ``w normal^T``. Nonzero.
        neurons: the hidden neurons (0-based) whose hyperplane is H.
        scales: ``lam_j`` with ``(W[j], b[j]) = lam_j (normal, offset)``; its sign is the
            neuron's orientation (positive: active on the positive side).
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

    def unit(self) -> tuple[np.ndarray, float, np.ndarray]:
        """Float ``(u, s, omega)`` with unit normal ``u = normal/|normal|``, ``s =
        offset/|normal|`` and ``omega = |normal| weight`` (so ``w relu(<n,z>+t) =
        omega relu(<u,z>+s)``)."""
        n = np.array([float(x) for x in self.normal])
        nn = float(np.linalg.norm(n))
        return n / nn, float(self.offset) / nn, np.array([float(x) for x in self.weight]) * nn

    def __str__(self) -> str:
        return f"H: {_vstr(self.normal)}.z + {_fstr(self.offset)} = 0, weight {_vstr(self.weight)}"


@dataclasses.dataclass(frozen=True, repr=False)
class WeightedArrangement(Result):
    """The canonical weighted arrangement of a one-hidden-layer network on a domain.

    On the domain, ``g(z) = sum_H H.weight relu(<H.normal, z> + H.offset) + linear @ z +
    bias`` (exactly). Two one-hidden-layer networks are equal on the domain iff their
    arrangements are equal (:meth:`equals`).

    Attributes:
        domain: the domain.
        input_dim, output_dim: d and m.
        hyperplanes: the visible hyperplanes, sorted by ``(normal, offset)``.
        linear: exact ``M`` (tuple of m rows of d Fractions).
        bias: exact ``v`` (m Fractions).
        active_neurons: neurons (0-based) active on the whole interior (they act affinely).
        inactive_neurons: neurons inactive on the whole interior (dead there).
        hidden_neurons: neurons whose hyperplane meets the interior but where the summed
            gradient jump of all neurons on that hyperplane is zero (no bend).
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
    certified: bool
    method: str

    @property
    def num_hyperplanes(self) -> int:
        """Number of visible hyperplanes."""
        return len(self.hyperplanes)

    def evaluate(self, Z: Any) -> np.ndarray:
        """The canonical form evaluated (floats) at inputs ``Z`` of shape ``(N, d)``; equals
        the network on the domain."""
        Z = np.atleast_2d(np.asarray(Z, dtype=float))
        M = np.array([[float(x) for x in row] for row in self.linear]).reshape(self.output_dim,
                                                                            self.input_dim)
        out = Z @ M.T + np.array([float(x) for x in self.bias])
        for H in self.hyperplanes:
            n = np.array([float(x) for x in H.normal])
            w = np.array([float(x) for x in H.weight])
            out = out + np.maximum(Z @ n + float(H.offset), 0.0)[:, None] * w[None, :]
        return out

    def equals(self, other: "WeightedArrangement", tol: float = 0.0) -> bool:
        """Whether the two arrangements (hence the two functions on the domain) are equal.

        ``tol = 0``: exact comparison. ``tol > 0``: hyperplanes are compared as unit
        normals and offsets up to sign (absolute tolerance), weights as ``|n| w``,
        unmatched hyperplanes must have weight at most ``tol``, and the affine parts
        (re-expressed in the matched orientations) must agree within ``tol``.
        """
        return _compare(self, other, tol)[0]

    def describe(self) -> str:
        """A readable multi-line description."""
        lines = [f"weighted arrangement on {self.domain.kind} (d={self.input_dim}, "
                 f"m={self.output_dim}): {self.num_hyperplanes} visible hyperplane(s)"]
        lines += ["  " + str(H) + f"  [neurons {list(H.neurons)}]" for H in self.hyperplanes]
        lines.append("  linear part M = " + "[" + ", ".join(_vstr(r) for r in self.linear) + "]")
        lines.append("  bias v = " + _vstr(self.bias))
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True, repr=False)
class ArrangementComparison(Result):
    """Outcome of :func:`arrangements_equal`.

    Attributes:
        equal: whether the two networks agree on the domain (per their arrangements).
        reason: what differs first (empty when equal).
        tolerance: the tolerance used (0: exact).
        certified: exact comparison (``tolerance == 0``).
        method: how it was decided.
        first, second: the two arrangements.
    """

    equal: bool
    reason: str
    tolerance: float
    certified: bool
    method: str
    first: WeightedArrangement = dataclasses.field(repr=False)
    second: WeightedArrangement = dataclasses.field(repr=False)


def _same_domain(a: Domain, b: Domain) -> bool:
    return (a.kind == b.kind and a.dim == b.dim and np.array_equal(a.A, b.A)
            and np.array_equal(a.c, b.c))


def _compare(p: WeightedArrangement, q: WeightedArrangement, tol: float) -> tuple[bool, str]:
    if not isinstance(q, WeightedArrangement):
        raise InputError(f"can only compare with a WeightedArrangement; got {short_repr(q)}")
    tol = check_nonnegative_float(tol, "tol")
    if (p.input_dim, p.output_dim) != (q.input_dim, q.output_dim):
        return False, (f"dimensions differ: (d, m) = {(p.input_dim, p.output_dim)} vs "
                       f"{(q.input_dim, q.output_dim)}")
    if not _same_domain(p.domain, q.domain):
        return False, "the domains differ"
    if tol == 0:
        kp = {(H.normal, H.offset): H.weight for H in p.hyperplanes}
        kq = {(H.normal, H.offset): H.weight for H in q.hyperplanes}
        for key in kp.keys() | kq.keys():
            if key not in kp or key not in kq:
                return False, f"hyperplane {_vstr(key[0])}.z + {_fstr(key[1])} = 0 is only in one"
            if kp[key] != kq[key]:
                return False, (f"weights on hyperplane {_vstr(key[0])}.z + {_fstr(key[1])} = 0 "
                               f"differ: {_vstr(kp[key])} vs {_vstr(kq[key])}")
        if p.linear != q.linear:
            return False, "the linear parts differ"
        if p.bias != q.bias:
            return False, "the biases differ"
        return True, ""
    m, d = p.output_dim, p.input_dim

    def affine(A: WeightedArrangement):
        M = np.array([[float(x) for x in r] for r in A.linear]).reshape(m, d)
        v = np.array([float(x) for x in A.bias])
        return M, v

    Mp, vp = affine(p)
    Mq, vq = affine(q)
    up = [H.unit() for H in p.hyperplanes]
    uq = [H.unit() for H in q.hyperplanes]
    used: set[int] = set()
    for i, (u, s, om) in enumerate(up):
        best, best_j, flip = _INF, None, False
        for j, (u2, s2, om2) in enumerate(uq):
            if j in used:
                continue
            dp = max(np.max(np.abs(u - u2)), abs(s - s2))
            dm = max(np.max(np.abs(u + u2)), abs(s + s2))
            if min(dp, dm) < best:
                best, best_j, flip = min(dp, dm), j, dm < dp
        if best_j is None or best > tol:
            if np.max(np.abs(om)) > tol:
                return False, f"hyperplane {i} of the first arrangement has no match"
            continue
        u2, s2, om2 = uq[best_j]
        if np.max(np.abs(om - om2)) > tol:
            return False, f"weights on matched hyperplane {i} differ by {np.max(np.abs(om - om2)):.3g}"
        used.add(best_j)
        if flip:  # om2 relu(u2.z + s2) = om2 relu(-u2.z - s2) + om2 (u2.z + s2)
            Mq = Mq + np.outer(om2, u2)
            vq = vq + om2 * s2
    for j, (u2, s2, om2) in enumerate(uq):
        if j not in used and np.max(np.abs(om2)) > tol:
            return False, f"hyperplane {j} of the second arrangement has no match"
    if np.max(np.abs(Mp - Mq), initial=0.0) > tol:
        return False, f"linear parts differ by {np.max(np.abs(Mp - Mq)):.3g}"
    if np.max(np.abs(vp - vq), initial=0.0) > tol:
        return False, f"biases differ by {np.max(np.abs(vp - vq)):.3g}"
    return True, ""


def _one_hidden(params: Any, what: str) -> tuple[list, list]:
    layers, exact = _exact_layers(params)
    if len(layers) != 2:
        raise ArchitectureError(
            f"{what} needs a one-hidden-layer network (two affine layers (W, b), (C, gamma)); "
            f"got {len(layers)} affine layers")
    return layers, exact


def weighted_arrangement(params: Any, domain: Any = "orthant") -> WeightedArrangement:
    """The canonical weighted arrangement of a one-hidden-layer network on a domain.

    Args:
        params: ``[(W, b), (C, gamma)]``, ``W`` of shape ``(n, d)``, ``C`` of shape
            ``(m, n)``. Entries may be floats or exact rationals (``Fraction``).
        domain: ``"orthant"`` (default, docs/concepts_relu.md §2), ``None``/``"whole"``, a
            ``(lower, upper)`` box or a :class:`Domain`.

    Returns:
        A :class:`WeightedArrangement` (exact).

    >>> W = [[1.0, -1.0], [2.0, -2.0], [1.0, 1.0]]; b = [0.0, 0.0, 1.0]
    >>> A = weighted_arrangement([(W, b), ([[1.0, 1.0, 1.0]], [0.0])])
    >>> [str(H) for H in A.hyperplanes], A.active_neurons
    (['H: (1, -1).z + 0 = 0, weight (3)'], (2,))
    """
    layers, exact = _one_hidden(params, "weighted_arrangement")
    (W, b), (C, g) = exact
    n, d, m = len(W), len(W[0]), len(C)
    dom = as_domain(domain, d)
    certified = True
    groups: dict[tuple, list[tuple[int, Fraction]]] = {}
    affine_neurons: list[int] = []
    active, inactive = [], []
    for j in range(n):
        side, ex = _side(W[j], b[j], dom)
        certified &= ex
        if side == "cross":
            normal, offset, lam, _ = _canonical(W[j], b[j])
            groups.setdefault((normal, offset), []).append((j, lam))
            if lam < 0:
                affine_neurons.append(j)
        elif side == "active":
            active.append(j)
            affine_neurons.append(j)
        else:
            inactive.append(j)
    M = [[_ZERO] * d for _ in range(m)]
    v = list(g)
    for j in affine_neurons:
        for o in range(m):
            c = C[o][j]
            if c:
                for i in range(d):
                    M[o][i] += c * W[j][i]
                v[o] += c * b[j]
    hyperplanes, hidden = [], []
    for (normal, offset), members in sorted(groups.items()):
        w = tuple(sum((abs(lam) * C[o][j] for j, lam in members), _ZERO) for o in range(m))
        if all(x == 0 for x in w):
            hidden.extend(j for j, _ in members)
            continue
        hyperplanes.append(ArrangementHyperplane(
            normal, offset, w, tuple(j for j, _ in members), tuple(lam for _, lam in members)))
    return WeightedArrangement(
        domain=dom, input_dim=d, output_dim=m, hyperplanes=tuple(hyperplanes),
        linear=tuple(tuple(r) for r in M), bias=tuple(v), active_neurons=tuple(active),
        inactive_neurons=tuple(inactive), hidden_neurons=tuple(sorted(hidden)),
        certified=certified,
        method="exact rational (closed-form ranges)" if certified else "LP ranges (floats)")


def arrangements_equal(p: Any, q: Any, domain: Any = "orthant", tol: float = 0.0) -> ArrangementComparison:
    """Whether two one-hidden-layer networks are equal on ``domain``, by comparing their
    canonical weighted arrangements (exactly when ``tol == 0``).

    Args:
        p, q: one-hidden-layer networks, lists ``[(W1, b1), (W2, b2)]``.
        domain: the input domain (default the nonnegative orthant; see
            :func:`weighted_arrangement`).
        tol: absolute tolerance of the comparison (>= 0; 0 compares exact rationals).

    Returns:
        An :class:`ArrangementComparison` (``.equal`` and the reason when not equal).

    >>> p = [([[1.0, -1.0]], [0.5]), ([[2.0]], [0.0])]
    >>> q = [([[2.0, -2.0]], [1.0]), ([[1.0]], [0.0])]   # positive rescaling of the neuron
    >>> arrangements_equal(p, q).equal
    True
    """
    A = weighted_arrangement(p, domain)
    B = weighted_arrangement(q, domain)
    eq, reason = _compare(A, B, tol)
    return ArrangementComparison(
        equal=eq, reason=reason, tolerance=float(tol), certified=(tol == 0) and A.certified
        and B.certified, method="canonical weighted arrangements" + (
            " (exact)" if tol == 0 else f" (tolerance {tol:g})"), first=A, second=B)


# ---------------------------------------------------------------------------------------
# the fiber on the orthant
# ---------------------------------------------------------------------------------------
#
# A piece of the fiber is fixed by a *type*: how the n hidden neurons are assigned to
#   - the target's visible hyperplanes H_k, each with p_k neurons of positive and q_k of
#     negative orientation (p_k + q_k >= 1),
#   - "cancel" groups: further hyperplanes through the open orthant shared by p_e + q_e
#     neurons of two opposite orientations whose jumps cancel (e.g. relu(u) - relu(-u) = u,
#     or one neuron with zero outgoing weights),
#   - linear neurons (row (a_j, beta_j) >= 0: active on the whole orthant) and dead
#     neurons (row <= 0, row != 0).
# Pieces are listed up to permuting neurons (canonical representatives, `copies` counts
# the distinct permuted copies). See docs/relu_arrangement.md for the dimension formula.

@dataclasses.dataclass(frozen=True)
class _Type:
    targets: tuple  # ((p_k, q_k), ...)
    cancels: tuple  # ((p_e, q_e), ...), p_e >= q_e, p_e >= 1, sorted descending
    n_linear: int
    n_dead: int

    @property
    def n(self) -> int:
        return (sum(p + q for p, q in self.targets) + sum(p + q for p, q in self.cancels)
                + self.n_linear + self.n_dead)

    def labels(self) -> tuple[tuple, ...]:
        """Per canonical neuron position: ("H", k, s), ("E", e, s), ("linear",), ("dead",)."""
        out = []
        for k, (p, q) in enumerate(self.targets):
            out += [("H", k, 1)] * p + [("H", k, -1)] * q
        for e, (p, q) in enumerate(self.cancels):
            out += [("E", e, 1)] * p + [("E", e, -1)] * q
        out += [("linear",)] * self.n_linear + [("dead",)] * self.n_dead
        return tuple(out)

    def copies(self) -> int:
        stab = math.factorial(self.n_linear) * math.factorial(self.n_dead)
        for p, q in self.targets:
            stab *= math.factorial(p) * math.factorial(q)
        for p, q in self.cancels:
            stab *= math.factorial(p) * math.factorial(q) * (2 if p == q else 1)
        for shape in set(self.cancels):
            stab *= math.factorial(self.cancels.count(shape))
        return math.factorial(self.n) // stab


def _compositions(r: int, total: int):
    """Tuples ((p_k, q_k))_k of length r with p_k + q_k >= 1 and sum <= total."""
    if r == 0:
        yield ()
        return
    for s in range(1, total - (r - 1) + 1):
        for p in range(s, -1, -1):
            for rest in _compositions(r - 1, total - s):
                yield ((p, s - p),) + rest


def _cancel_multisets(total: int, max_shape=None):
    """Non-increasing sequences of shapes (p, q) (p >= q, p >= 1) with sizes summing <= total."""
    yield ()
    shapes = sorted(((p, s - p) for s in range(1, total + 1) for p in range(s, -1, -1)
                     if p >= s - p and p >= 1), key=lambda t: (t[0] + t[1], t[0]), reverse=True)
    for sh in shapes:
        if max_shape is not None and (sh[0] + sh[1], sh[0]) > (max_shape[0] + max_shape[1], max_shape[0]):
            continue
        size = sh[0] + sh[1]
        if size > total:
            continue
        for rest in _cancel_multisets(total - size, sh):
            yield (sh,) + rest


def _count_types(n: int, r: int, degenerate: bool) -> int:
    """Number of types :func:`_enumerate_types` yields, counted without enumerating them.

    Targets: ordered ``r`` parts of sizes ``s_k >= 1``, each with ``s_k + 1`` splits
    ``(p, q)``; cancel groups: multisets of shapes, ``floor(s / 2) + 1`` shapes of size s;
    the rest split between linear and dead neurons (``rest + 1`` ways).
    """
    if not degenerate:
        return 2 ** r * (n - r + 1) if r <= n else 0
    # T[s]: weighted count of the target parts using s neurons in all
    T = [1] + [0] * n
    for _ in range(r):
        T2 = [0] * (n + 1)
        for used, w in enumerate(T):
            if w:
                for s in range(1, n - used + 1):
                    T2[used + s] += w * (s + 1)
        T = T2
    # E[c]: multisets of cancel shapes of total size c (a partition with s // 2 + 1 colours)
    E = [1] + [0] * n
    for s in range(1, n + 1):
        for _ in range(s // 2 + 1):
            for c in range(s, n + 1):
                E[c] += E[c - s]
    return sum(T[s] * E[c] * (n - s - c + 1)
               for s in range(n + 1) for c in range(n - s + 1))


def _enumerate_types(n: int, r: int, degenerate: bool):
    for targets in _compositions(r, n):
        if not degenerate and any(p + q != 1 for p, q in targets):
            continue
        left = n - sum(p + q for p, q in targets)
        for cancels in (_cancel_multisets(left) if degenerate else [()]):
            rest = left - sum(p + q for p, q in cancels)
            for n_lin in range(rest, -1, -1):
                yield _Type(targets, cancels, n_lin, rest - n_lin)


class _Geometry:
    """Invariants of the linear factorization problem of one (only-negative, both) choice.

    ``L_T`` is the required linear part, ``NB`` the fixed normals of target hyperplanes
    with both orientations; ``R' = rowspace([L_T; NB])``.
    """

    def __init__(self, LT: list[list[Fraction]], NB: list[Vec], d: int):
        self.LT, self.NB, self.d = LT, list(NB), d
        rows = [r for r in LT] + [list(x) for x in NB]
        self.Rp, _ = _rref(rows, d)
        self.rho = len(self.Rp)
        self.u = _rank([list(x) for x in NB], d)
        self.rho_L = _rank(LT, d)
        self.I, self.p, self.certified = _max_support(self.Rp, d)
        J = [i for i in range(d) if i not in self.I]
        # S_c = R' ∩ {x_J = 0}: combinations y of the basis rows with (y^T Rp)_J = 0
        if self.rho:
            Y = _nullspace([[self.Rp[k][j] for k in range(self.rho)] for j in J], self.rho)
            self.Sc = [_comb(y, self.Rp, d) for y in Y]
        else:
            self.Sc = []
        self.c = len(self.Sc)
        self.a = self.u + self.c - _rank([list(x) for x in NB] + self.Sc, d) if self.c else 0
        # nonnegative rank of L_T alone: least k with L_T = C W, W >= 0 of k rows
        if self.rho_L == 0:
            self.nu = 0
        else:
            RL, _ = _rref(LT, d)
            IL, _, cert = _max_support(RL, d)
            self.certified = self.certified and cert
            JL = [i for i in range(d) if i not in IL]
            spanned = all(all(row[j] == 0 for j in JL) for row in RL)
            self.nu = self.rho_L if spanned else self.rho_L + 1

    def strata(self, kA: int, nB: int, e2: int, m: int) -> list[tuple[int, int]]:
        """Feasible strata ``q = rank F`` and the dimension of the factorization set Sigma."""
        d, rho, u, c = self.d, self.rho, self.u, self.c
        K = kA + nB + e2
        out = []
        w = min(kA, c)
        span = min(w + u, c + u - self.a) + e2
        if span >= rho and rho <= K and not (e2 > 0 and rho == 0):
            out.append((rho, kA * c + e2 * rho + m * (K - rho)))
        for q in range(rho + 1, min(d, K) + 1):
            if kA + u + e2 >= q:
                out.append((q, (q - rho) * (d - q) + kA * q + e2 * q + m * (K - q)))
        return out


def _max_support(basis: list[list[Fraction]], d: int) -> tuple[tuple[int, ...], list | None, bool]:
    """Coordinates I on which some nonnegative vector of ``span(basis)`` is positive, an
    exact such vector ``p`` (support exactly I) and whether the split was certified.

    By Tucker's theorem there are ``x in S, x >= 0`` and ``lam in S^perp, lam >= 0`` with
    ``x + lam > 0``; one LP finds them, and both are re-derived exactly (certificate).
    """
    rho = len(basis)
    if rho == 0:
        return (), None, True
    if rho == d:
        return tuple(range(d)), [_ONE] * d, True
    from scipy.optimize import linprog

    perp = _nullspace(basis, d)
    B = np.array([[float(x) for x in r] for r in basis])
    N = np.array([[float(x) for x in r] for r in perp])
    B = B / np.linalg.norm(B, axis=1, keepdims=True)
    N = N / np.linalg.norm(N, axis=1, keepdims=True)
    k1, k2 = B.shape[0], N.shape[0]
    # variables (y, z): x = B^T y >= 0, lam = N^T z >= 0, x + lam >= 1
    A_ub = np.vstack([np.hstack([-B.T, np.zeros((d, k2))]),
                      np.hstack([np.zeros((d, k1)), -N.T]),
                      np.hstack([-B.T, -N.T])])
    b_ub = np.concatenate([np.zeros(2 * d), -np.ones(d)])
    res = linprog(np.zeros(k1 + k2), A_ub=A_ub, b_ub=b_ub,
                  bounds=[(-1e6, 1e6)] * (k1 + k2), method="highs")
    if res.status != 0:  # pragma: no cover - Tucker's theorem guarantees feasibility
        return tuple(range(d)), None, False
    x = B.T @ res.x[:k1]
    lam = N.T @ res.x[k1:]
    I = tuple(i for i in range(d) if x[i] > lam[i])
    J = [i for i in range(d) if i not in I]
    px = _exact_support_vector(basis, J, I, d, x)
    pl = _exact_support_vector(perp, list(I), J, d, lam)
    return I, px, (px is not None and pl is not None)


def _exact_support_vector(basis, zero, pos, d, approx) -> list | None:
    """An exact vector of ``span(basis)`` vanishing on ``zero`` and positive on ``pos``,
    found near ``approx``, or None."""
    if not pos:
        return [_ZERO] * d
    Y = _nullspace([[b[j] for b in basis] for j in zero], len(basis))
    if not Y:
        return None
    S = [_comb(y, basis, d) for y in Y]
    Sf = np.array([[float(x) for x in s] for s in S])
    coef, *_ = np.linalg.lstsq(Sf.T, np.asarray(approx, dtype=float), rcond=None)
    for attempt in range(3):
        cf = [Fraction(float(c)).limit_denominator(10 ** (6 + 3 * attempt)) for c in coef]
        v = _comb(cf, S, d)
        if all(v[i] > 0 for i in pos):
            return _normalized(v)
    return None


# ---- polynomials over Fractions: {monomial (sorted var indices): coefficient} -------

def _pvar(i: int, c: Fraction = _ONE) -> dict:
    return {(i,): Fraction(c)} if c else {}


def _pconst(c: Fraction) -> dict:
    return {(): Fraction(c)} if c else {}


def _padd(*ps: dict) -> dict:
    out: dict = {}
    for p in ps:
        for mono, c in p.items():
            out[mono] = out.get(mono, _ZERO) + c
    return {k: v for k, v in out.items() if v}


def _pmul(p: dict, q: dict) -> dict:
    out: dict = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            mono = tuple(sorted(m1 + m2))
            out[mono] = out.get(mono, _ZERO) + c1 * c2
    return {k: v for k, v in out.items() if v}


def _pscale(p: dict, c: Fraction) -> dict:
    return {k: v * c for k, v in p.items()} if c else {}


def _pgrad(p: dict, x: Sequence[Fraction], nvars: int) -> list[Fraction]:
    g = [_ZERO] * nvars
    for mono, c in p.items():
        for pos, i in enumerate(mono):
            val = c
            for pos2, k in enumerate(mono):
                if pos2 != pos:
                    val *= x[k]
                    if not val:
                        break
            if val:
                g[i] += val
    return g


def _pval(p: dict, x: Sequence[Fraction]) -> Fraction:
    s = _ZERO
    for mono, c in p.items():
        t = c
        for k in mono:
            t *= x[k]
        s += t
    return s


def _psym(p: dict, syms: Sequence[Any]):
    import sympy

    terms = []
    for mono, c in sorted(p.items()):
        t = sympy.Rational(c.numerator, c.denominator)
        for k in mono:
            t = t * syms[k]
        terms.append(t)
    return sympy.Add(*terms) if terms else sympy.Integer(0)


class _Context:
    """Target data shared by the pieces of one fiber (not part of any repr)."""

    def __init__(self, arr: WeightedArrangement, n: int):
        self.arr = arr
        self.n, self.d, self.m = n, arr.input_dim, arr.output_dim
        self.H = arr.hyperplanes
        self.r = len(self.H)
        self.pivots = [next(i for i, x in enumerate(H.normal) if x != 0) for H in self.H]
        self.M = [list(r) for r in arr.linear]
        self.v = list(arr.bias)
        self._geo: dict = {}
        self._syms = None

    # variable layout = ReLUNet.flatten order: W1 (row-major), b1, W2 (row-major), b2
    def iW(self, j: int, i: int) -> int:
        return j * self.d + i

    def ib(self, j: int) -> int:
        return self.n * self.d + j

    def iC(self, o: int, j: int) -> int:
        return self.n * (self.d + 1) + o * self.n + j

    def ig(self, o: int) -> int:
        return self.n * (self.d + 1) + self.m * self.n + o

    @property
    def nvars(self) -> int:
        return self.n * (self.d + 1) + self.m * self.n + self.m

    def row_index(self, j: int, i: int) -> int:
        """Variable of entry i of the extended row (W1[j], b1[j])."""
        return self.iW(j, i) if i < self.d else self.ib(j)

    @property
    def symbols(self):
        if self._syms is None:
            import sympy

            n, d, m = self.n, self.d, self.m
            names = ([f"W1[{j + 1},{i + 1}]" for j in range(n) for i in range(d)]
                     + [f"b1[{j + 1}]" for j in range(n)]
                     + [f"W2[{o + 1},{j + 1}]" for o in range(m) for j in range(n)]
                     + [f"b2[{o + 1}]" for o in range(m)])
            self._syms = tuple(sympy.Symbol(s, real=True) for s in names)
        return self._syms

    def geometry(self, only_neg: tuple, both: tuple) -> _Geometry:
        key = (only_neg, both)
        if key not in self._geo:
            LT = [list(r) for r in self.M]
            for k in only_neg:
                H = self.H[k]
                for o in range(self.m):
                    for i in range(self.d):
                        LT[o][i] += H.weight[o] * H.normal[i]
            self._geo[key] = _Geometry(LT, [self.H[k].normal for k in both], self.d)
        return self._geo[key]


def _type_dimension(ctx: _Context, t: _Type):
    d, m = ctx.d, ctx.m
    only_neg = tuple(k for k, (p, q) in enumerate(t.targets) if p == 0)
    both = tuple(k for k, (p, q) in enumerate(t.targets) if p > 0 and q > 0)
    e2 = sum(1 for p, q in t.cancels if q > 0)
    geo = ctx.geometry(only_neg, both)
    strata = geo.strata(t.n_linear, len(both), e2, m)
    if not strata:
        return None
    base = 0
    for p, q in t.targets:
        base += (p + q) * (m + 1) - m - (m if (p > 0 and q > 0) else 0)
    for p, q in t.cancels:
        base += d + (p + q) * (m + 1) - m - ((m + d) if q > 0 else 0)
    base += t.n_linear + t.n_dead * (d + 1 + m)
    return geo, tuple((q, base + s) for q, s in strata)


@dataclasses.dataclass(frozen=True, repr=False)
class FiberPiece(Result):
    """One piece of the fiber (a semi-algebraic set), up to permuting hidden neurons.

    Attributes:
        index: position in :attr:`OrthantFiber.pieces`.
        labels: per hidden neuron (canonical order): ``"H<k>+"``/``"H<k>-"`` (on visible
            hyperplane k with positive/negative orientation), ``"E<e>+"``/``"E<e>-"``
            (on an extra hyperplane e through the open orthant whose jumps cancel),
            ``"linear"`` (row of ``[W1 | b1]`` nonnegative: active on the whole orthant)
            or ``"dead"`` (row nonpositive, nonzero).
        kind: ``"standard"`` (one neuron per visible hyperplane, no cancelling groups:
            the pieces of docs/concepts_relu.md §2) or ``"degenerate"``.
        copies: number of distinct pieces obtained by permuting the neurons.
        dimension: dimension of the piece (semi-algebraic).
        strata: feasible ``(q, dimension)`` pairs, q the rank of the linear factor (see docs).
        required_linear_part: exact ``L`` (m x d) that the linear neurons and the free
            rank-one terms must produce.
        linear_rank: ``dim R'`` (rank of ``L`` together with the fixed normals).
        nonnegative_rank: least number of linear neurons that factor ``L`` alone
            (``L = C W`` with ``W >= 0``; 0, ``rank L`` or ``rank L + 1``).
        certified: the nonnegative-support computations were certified exactly.
    """

    index: int
    labels: tuple
    kind: str
    copies: int
    dimension: int
    strata: tuple
    required_linear_part: tuple
    linear_rank: int
    nonnegative_rank: int
    certified: bool
    _ctx: Any = dataclasses.field(repr=False, compare=False, default=None)
    _type: Any = dataclasses.field(repr=False, compare=False, default=None)
    _geo: Any = dataclasses.field(repr=False, compare=False, default=None)

    def to_dict(self) -> dict:
        """The public fields, plus the defining equations and inequalities as text."""
        out = super().to_dict()
        out["equations"] = [str(e) for e in self.equations]
        out["inequalities"] = [str(e) for e in self.inequalities]
        return out

    # -- description ------------------------------------------------------------------
    @property
    def symbols(self) -> tuple:
        """The parameter symbols, in :meth:`ReLUNet.flatten` order."""
        return self._ctx.symbols

    def _polys(self) -> list[dict]:
        return _piece_equations(self._ctx, self._type)

    @property
    def equations(self) -> tuple:
        """The defining polynomial equations (sympy ``Eq(expr, 0)``)."""
        import sympy

        syms = self.symbols
        return tuple(sympy.Eq(_psym(p, syms), 0) for p in self._polys())

    @property
    def inequalities(self) -> tuple:
        """The defining inequalities (sympy relations, ``Or`` for disjunctions)."""
        return _piece_inequalities(self._ctx, self._type)

    def condition(self):
        """The whole piece as one sympy boolean ``And(equations, inequalities)``."""
        import sympy

        return sympy.And(*self.equations, *self.inequalities)

    def describe(self) -> str:
        """A readable multi-line description (sympy conditions)."""
        lines = [f"piece {self.index} [{', '.join(self.labels)}] ({self.kind}, "
                 f"dimension {self.dimension}, {self.copies} permuted copies)"]
        lines += ["  " + str(e) for e in self.equations]
        lines += ["  " + str(e) for e in self.inequalities]
        return "\n".join(lines)

    # -- sampling and checks ------------------------------------------------------------
    def sample(self, seed: Any = None, *, stratum: int | None = None, exact: bool = False):
        """Parameters in this piece (canonical neuron order).

        Args:
            seed: int, None or a numpy Generator.
            stratum: the rank q of the linear factor (default: the top-dimensional one).
            exact: return exact ``Fraction`` entries (object arrays) instead of floats.

        Returns:
            ``[(W1, b1), (W2, b2)]``; the exact version lies in the fiber exactly, the float
            version up to rounding.
        """
        rng = as_seed_rng(seed)
        exact = check_bool(exact, "exact")
        qs = dict(self.strata)
        if stratum is None:
            stratum = max(self.strata, key=lambda s: (s[1], s[0]))[0]
        if stratum not in qs:
            raise InputError(f"stratum must be one of {sorted(qs)} for this piece; got "
                             f"{short_repr(stratum)}")
        x = _sample_piece(self._ctx, self._type, self._geo, stratum, rng)
        return _to_params(self._ctx, x, exact)

    def local_dimension(self, params: Any) -> int:
        """``#parameters - rank`` of the exact Jacobian of the defining equations at
        ``params`` (canonical neuron order), with the sign constraints that are tight at
        ``params`` (zero entries of linear rows) added as equations. At a generic point of
        the top stratum this equals :attr:`dimension` (the numerical check of the formula)."""
        ctx = self._ctx
        x = _flatten_exact(ctx, params)
        rows = [_pgrad(p, x, ctx.nvars) for p in self._polys()]
        for j, lab in enumerate(self._type.labels()):
            if lab[0] == "linear":
                for i in range(ctx.d + 1):
                    k = ctx.row_index(j, i)
                    if x[k] == 0:
                        e = [_ZERO] * ctx.nvars
                        e[k] = _ONE
                        rows.append(e)
        return ctx.nvars - _rank(rows, ctx.nvars)

    def residual(self, params: Any) -> float:
        """Largest absolute value of the defining equations at ``params`` (exact, as float)."""
        x = _flatten_exact(self._ctx, params)
        return max((abs(float(_pval(p, x))) for p in self._polys()), default=0.0)


def _flatten_exact(ctx: _Context, params: Any) -> list[Fraction]:
    layers, exact = _exact_layers(params)
    widths = (layers[0][0].shape[1],) + tuple(W.shape[0] for W, _ in layers)
    if widths != (ctx.d, ctx.n, ctx.m):
        raise ParameterError(f"parameters must have widths {(ctx.d, ctx.n, ctx.m)}; got "
                             f"widths {widths}")
    (W, b), (C, g) = exact
    return ([x for row in W for x in row] + list(b) + [x for row in C for x in row] + list(g))


def _piece_equations(ctx: _Context, t: _Type) -> list[dict]:
    labels = t.labels()
    d, m = ctx.d, ctx.m
    eqs: list[dict] = []
    refs = {}
    for j, lab in enumerate(labels):
        if lab[0] == "E" and lab[1] not in refs:
            refs[lab[1]] = j
    aff = [j for j, lab in enumerate(labels) if lab[0] == "linear"
           or (lab[0] in ("H", "E") and lab[2] < 0)]
    # neurons on a visible hyperplane: (W1[j], b1[j]) parallel to (n_k, t_k)
    for j, lab in enumerate(labels):
        if lab[0] != "H":
            continue
        H, p = ctx.H[lab[1]], ctx.pivots[lab[1]]
        for i in range(d + 1):
            if i == p:
                continue
            coef = H.normal[i] if i < d else H.offset
            eqs.append(_padd(_pvar(ctx.row_index(j, i)), _pvar(ctx.iW(j, p), -coef)))
    # weights of the visible hyperplanes: sum_j s_j W1[j, p] W2[:, j] = w_k
    for k in range(ctx.r):
        p = ctx.pivots[k]
        for o in range(m):
            terms = [_pmul(_pvar(ctx.iW(j, p), Fraction(lab[2])), _pvar(ctx.iC(o, j)))
                     for j, lab in enumerate(labels) if lab[0] == "H" and lab[1] == k]
            eqs.append(_padd(*terms, _pconst(-ctx.H[k].weight[o])))
    # cancel groups: rows parallel to the reference row, weighted jumps summing to zero
    for e, j0 in refs.items():
        members = [(j, lab[2]) for j, lab in enumerate(labels) if lab[0] == "E" and lab[1] == e]
        for j, _ in members:
            if j == j0:
                continue
            for i1, i2 in itertools.combinations(range(d + 1), 2):
                eqs.append(_padd(
                    _pmul(_pvar(ctx.row_index(j, i1)), _pvar(ctx.row_index(j0, i2))),
                    _pmul(_pvar(ctx.row_index(j, i2)), _pvar(ctx.row_index(j0, i1), -_ONE))))
        for o in range(m):
            terms = []
            for j, s in members:
                inner = _padd(*[_pmul(_pvar(ctx.row_index(j, i)), _pvar(ctx.row_index(j0, i)))
                                for i in range(d + 1)])
                terms.append(_pmul(_pscale(inner, Fraction(s)), _pvar(ctx.iC(o, j))))
            eqs.append(_padd(*terms))
    # affine part: sum over affine-acting neurons of W2[:, j] (W1[j], b1[j]) = (M, v - b2)
    for o in range(m):
        for i in range(d + 1):
            terms = [_pmul(_pvar(ctx.iC(o, j)), _pvar(ctx.row_index(j, i))) for j in aff]
            if i < d:
                eqs.append(_padd(*terms, _pconst(-ctx.M[o][i])))
            else:
                eqs.append(_padd(*terms, _pvar(ctx.ig(o)), _pconst(-ctx.v[o])))
    return [e for e in eqs if e]


def _piece_inequalities(ctx: _Context, t: _Type) -> tuple:
    import sympy

    syms = ctx.symbols
    labels = t.labels()
    d = ctx.d
    out = []

    def row(j):
        return [syms[ctx.row_index(j, i)] for i in range(d + 1)]

    refs = {}
    for j, lab in enumerate(labels):
        if lab[0] == "E" and lab[1] not in refs:
            refs[lab[1]] = j
    for j, lab in enumerate(labels):
        if lab[0] == "H":
            x = syms[ctx.iW(j, ctx.pivots[lab[1]])]
            out.append(x > 0 if lab[2] > 0 else x < 0)
        elif lab[0] == "E":
            j0 = refs[lab[1]]
            if j == j0:
                rj = row(j)
                out.append(sympy.Or(*[v > 0 for v in rj]))
                out.append(sympy.Or(*[v < 0 for v in rj]))
            else:
                inner = sum(a * b for a, b in zip(row(j), row(j0)))
                out.append(inner > 0 if lab[2] > 0 else inner < 0)
        elif lab[0] == "linear":
            out.extend(v >= 0 for v in row(j))
        else:
            rj = row(j)
            out.extend(v <= 0 for v in rj)
            out.append(sympy.Or(*[v < 0 for v in rj]))
    # disjointness: a cancel group's hyperplane is none of the visible ones nor another's
    for e, j0 in refs.items():
        r0 = row(j0)
        for k, H in enumerate(ctx.H):
            p = ctx.pivots[k]
            target = [sympy.Rational(x.numerator, x.denominator) for x in H.normal] + [
                sympy.Rational(H.offset.numerator, H.offset.denominator)]
            out.append(sympy.Or(*[sympy.Ne(sympy.expand(r0[i] - target[i] * r0[p]), 0)
                                  for i in range(d + 1) if i != p]))
        for e2, j1 in refs.items():
            if e2 <= e:
                continue
            r1 = row(j1)
            out.append(sympy.Or(*[sympy.Ne(sympy.expand(r0[i1] * r1[i2] - r0[i2] * r1[i1]), 0)
                                  for i1, i2 in itertools.combinations(range(d + 1), 2)]))
    return tuple(out)


# ---- exact sampling -------------------------------------------------------------------

def _rnd(rng: np.random.Generator, scale: float = 1.0) -> Fraction:
    return Fraction(int(round(float(rng.standard_normal()) * scale * 256)), 256)


def _rpos(rng: np.random.Generator) -> Fraction:
    return Fraction(int(rng.integers(64, 512)), 256)


def _rpow2(rng: np.random.Generator) -> Fraction:
    # powers of two keep divisions by |lam| exact in binary, so that samples of dyadic
    # targets are often exactly representable as floats
    return Fraction(2) ** int(rng.integers(-2, 3))


def _split_sum(rng, target: list[Fraction], count: int, m: int, signs: list[int]):
    """``count`` pairs (lam_j, C_j) with sign(lam_j) = signs[j] and sum |lam_j| C_j = target."""
    lams = [s * _rpow2(rng) for s in signs]
    Cs = [[_rnd(rng) for _ in range(m)] for _ in range(count)]
    acc = [sum((abs(lams[j]) * Cs[j][o] for j in range(count - 1)), _ZERO) for o in range(m)]
    Cs[-1] = [(target[o] - acc[o]) / abs(lams[-1]) for o in range(m)]
    return lams, Cs


def _sample_sigma(geo: _Geometry, kA: int, nB: int, e2: int, q: int, m: int, rng):
    """A point of the factorization set: ``C_A W_A - Y_B N_B - Y_E A_E = L_T`` with
    ``W_A >= 0`` and ``rank [W_A; N_B; A_E] = q`` (generic in that stratum)."""
    d = geo.d
    K = kA + nB + e2
    for _ in range(60):
        if q == geo.rho:
            V = [_normalized(r) for r in geo.Rp]
            cone, p = [_normalized(r) for r in geo.Sc], geo.p
        else:
            p = [_ONE + abs(_rnd(rng, 0.25)) for _ in range(d)]
            V = [_normalized(r) for r in geo.Rp]
            for cand in [p] + [[_rnd(rng) for _ in range(d)] for _ in range(4 * d)]:
                if len(V) >= q:
                    break
                if _rank(V + [cand], d) > len(V):
                    V.append(cand)
            if len(V) != q:
                continue
            cone = V
        WA = []
        for _ in range(kA):
            if not cone or p is None:
                WA.append([_ZERO] * d)
                continue
            vv = _comb([_rnd(rng) for _ in cone], cone, d)
            sh = max([-vv[i] / p[i] for i in range(d) if p[i] > 0] + [_ZERO]) + _rpos(rng)
            WA.append([sh * p[i] + vv[i] for i in range(d)])
        AE = [_comb([_rnd(rng) for _ in V], V, d) for _ in range(e2)]
        if any(all(x == 0 for x in a) for a in AE):
            continue
        F = WA + [list(x) for x in geo.NB] + AE
        if (_rank(F, d) if F else 0) != q:
            continue
        # particular solution through independent rows, plus the left null space of F
        idx: list[int] = []
        for i in range(len(F)):
            if _rank([F[k] for k in idx + [i]], d) > len(idx):
                idx.append(i)
        G = [[_ZERO] * K for _ in range(m)]
        if idx:
            Fs = [F[i] for i in idx]
            FF = _fmat(_matmul(Fs, [list(col) for col in zip(*Fs)], d, len(idx)), len(idx))
            RHS = _fmat(_matmul(Fs, [list(col) for col in zip(*geo.LT)], d, m), m)
            X = _unfmat(FF.solve(RHS))  # len(idx) x m
            for o in range(m):
                for a, i in enumerate(idx):
                    G[o][i] = X[a][o]
        null = _nullspace([list(col) for col in zip(*F)], K) if F else []
        for o in range(m):
            extra = _comb([_rnd(rng) for _ in null], null, K)
            G[o] = [G[o][i] + extra[i] for i in range(K)]
        check = _matmul(G, F, K, d) if F else [[_ZERO] * d for _ in range(m)]
        if check != [list(r) for r in geo.LT]:
            continue
        CA = [[G[o][i] for i in range(kA)] for o in range(m)]
        YB = [[-G[o][kA + i] for o in range(m)] for i in range(nB)]
        YE = [[-G[o][kA + nB + i] for o in range(m)] for i in range(e2)]
        return WA, CA, YB, AE, YE
    raise RuntimeError("could not sample the linear factorization (internal error)")


def _sample_piece(ctx: _Context, t: _Type, geo: _Geometry, q: int, rng) -> list[Fraction]:
    d, m, n = ctx.d, ctx.m, ctx.n
    labels = t.labels()
    both = [k for k, (p, qq) in enumerate(t.targets) if p > 0 and qq > 0]
    e2_groups = [e for e, (p, qq) in enumerate(t.cancels) if qq > 0]
    WA, CA, YB, AE, YE = _sample_sigma(geo, t.n_linear, len(both), len(e2_groups), q, m, rng)
    rows: list = [None] * n
    Cs: list = [None] * n
    pos = 0
    for k, (p, qq) in enumerate(t.targets):
        H = ctx.H[k]
        ext = list(H.normal) + [H.offset]
        w = list(H.weight)
        if p and qq:
            y = YB[both.index(k)]
            tp, tn = [w[o] - y[o] for o in range(m)], y
        elif p:
            tp, tn = w, None
        else:
            tp, tn = None, w
        for cnt, target, s in ((p, tp, 1), (qq, tn, -1)):
            if not cnt:
                continue
            lams, C = _split_sum(rng, target, cnt, m, [s] * cnt)
            for lam, c in zip(lams, C):
                rows[pos] = [lam * x for x in ext]
                Cs[pos] = c
                pos += 1
    for e, (p, qq) in enumerate(t.cancels):
        if qq:
            a = AE[e2_groups.index(e)]
            y = YE[e2_groups.index(e)]
        else:
            a = [_rnd(rng) for _ in range(d)]
            while all(x == 0 for x in a):
                a = [_rnd(rng) for _ in range(d)]
            y = [_ZERO] * m
        if any(x > 0 for x in a) and any(x < 0 for x in a):
            beta = _rnd(rng)
        elif any(x > 0 for x in a):
            beta = -_rpos(rng)
        else:
            beta = _rpos(rng)
        ref = a + [beta]
        # positive members (the reference first, lam = 1): sum |lam| C = -y; negative: y
        lp = [_ONE] + [_rpow2(rng) for _ in range(p - 1)]
        Cp = [None] + [[_rnd(rng) for _ in range(m)] for _ in range(p - 1)]
        acc = [sum((lp[j] * Cp[j][o] for j in range(1, p)), _ZERO) for o in range(m)]
        Cp[0] = [-y[o] - acc[o] for o in range(m)]
        for lam, c in zip(lp, Cp):
            rows[pos] = [lam * x for x in ref]
            Cs[pos] = c
            pos += 1
        if qq:
            ln, Cn = _split_sum(rng, y, qq, m, [-1] * qq)
            for lam, c in zip(ln, Cn):
                rows[pos] = [lam * x for x in ref]
                Cs[pos] = c
                pos += 1
    for i in range(t.n_linear):
        rows[pos] = list(WA[i]) + [_rpos(rng)]
        Cs[pos] = [CA[o][i] for o in range(m)]
        pos += 1
    for _ in range(t.n_dead):
        rows[pos] = [-_rpos(rng) for _ in range(d + 1)]
        Cs[pos] = [_rnd(rng) for _ in range(m)]
        pos += 1
    gamma = list(ctx.v)
    for j, lab in enumerate(labels):
        if lab[0] == "linear" or (lab[0] in ("H", "E") and lab[2] < 0):
            for o in range(m):
                gamma[o] -= Cs[j][o] * rows[j][d]
    return ([rows[j][i] for j in range(n) for i in range(d)] + [rows[j][d] for j in range(n)]
            + [Cs[j][o] for o in range(m) for j in range(n)] + gamma)


def _to_params(ctx: _Context, x: Sequence[Fraction], exact: bool) -> list:
    n, d, m = ctx.n, ctx.d, ctx.m
    conv = (lambda v: np.array(v, dtype=object)) if exact else (
        lambda v: np.array([float(y) for y in np.ravel(np.array(v, dtype=object))]).reshape(
            np.shape(np.array(v, dtype=object))))
    W1 = [[x[ctx.iW(j, i)] for i in range(d)] for j in range(n)]
    b1 = [x[ctx.ib(j)] for j in range(n)]
    W2 = [[x[ctx.iC(o, j)] for j in range(n)] for o in range(m)]
    b2 = [x[ctx.ig(o)] for o in range(m)]
    return [(conv(W1), conv(b1)), (conv(W2), conv(b2))]


# ---- the fiber ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, repr=False)
class OrthantFiber(Result):
    """The fiber of a one-hidden-layer network on the orthant: all parameters of the same
    architecture realizing the same function on ``z >= 0``, as a disjoint union of
    semi-algebraic pieces (and their images under permuting hidden neurons).

    Attributes:
        arrangement: the target's :class:`WeightedArrangement`.
        widths: ``(d, n, m)``.
        pieces: nonempty :class:`FiberPiece` representatives, largest dimension first.
        dimension: the fiber's dimension (largest piece).
        num_types: combinatorial types enumerated (each type is one piece up to
            permutation); ``num_types - len(pieces)`` of them are empty.
        certified: every piece's nonnegativity computations were certified exactly.
        method: how it was computed.
    """

    arrangement: WeightedArrangement
    widths: tuple
    pieces: tuple
    dimension: int
    num_types: int
    certified: bool
    method: str
    _ctx: Any = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def symbols(self) -> tuple:
        """The parameter symbols, in :meth:`ReLUNet.flatten` order."""
        return self._ctx.symbols

    @property
    def standard_pieces(self) -> tuple:
        """The pieces of kind ``"standard"`` (no degenerate coincidences)."""
        return tuple(P for P in self.pieces if P.kind == "standard")

    def contains(self, params: Any, tol: float = 0.0) -> bool:
        """Whether ``params`` lies in the fiber: it has the widths :attr:`widths` and
        realizes the target on the orthant (exact when ``tol = 0``). Parameters of other
        widths are not in the fiber (``False``), even when they realize the same function."""
        A = weighted_arrangement(params, "orthant")
        layers = check_params(params)
        same = tuple([layers[0][0].shape[1], layers[0][0].shape[0], layers[1][0].shape[0]]) \
            == tuple(self.widths)
        return A.equals(self.arrangement, tol) and same

    def sample(self, seed: Any = None, *, piece: int | None = None, exact: bool = False,
               permute: bool = True):
        """Parameters in the fiber.

        Args:
            seed: int, None or a numpy Generator.
            piece: index of the piece to sample from (default: a random piece).
            exact: return exact ``Fraction`` entries (object arrays) instead of floats.
            permute: randomly permute the hidden neurons of the sample.

        Returns:
            ``[(W1, b1), (W2, b2)]`` in the fiber (exactly when ``exact``).
        """
        rng = as_seed_rng(seed)
        exact = check_bool(exact, "exact")
        permute = check_bool(permute, "permute")
        if not self.pieces:  # pragma: no cover - the target itself is always in its fiber
            raise InputError("the fiber has no pieces")
        if piece is None:
            piece = int(rng.integers(len(self.pieces)))
        if not isinstance(piece, (int, np.integer)) or not 0 <= piece < len(self.pieces):
            raise InputError(f"piece must be an index in [0, {len(self.pieces)}); got "
                             f"{short_repr(piece)}")
        (W1, b1), (W2, b2) = self.pieces[piece].sample(rng, exact=exact)
        if permute:
            perm = rng.permutation(W1.shape[0])
            W1, b1, W2 = W1[perm], b1[perm], W2[:, perm]
        return [(W1, b1), (W2, b2)]

    def piece_of(self, params: Any) -> tuple[FiberPiece, np.ndarray] | None:
        """The piece containing ``params`` and the permutation ``perm`` putting its neurons
        in the piece's canonical order (``W1[perm]``, ``b1[perm]``, ``W2[:, perm]``); or
        ``None`` when ``params`` is not in the fiber (exact test)."""
        if not self.contains(params):
            return None
        ctx = self._ctx
        _, exact = _exact_layers(params)
        (W, b), _ = exact
        keys = {(H.normal, H.offset): k for k, H in enumerate(ctx.H)}
        tg: list[list[list[int]]] = [[[], []] for _ in range(ctx.r)]
        cancel: dict[tuple, list] = {}
        lin, dead = [], []
        for j in range(ctx.n):
            row = list(W[j]) + [b[j]]
            if all(x >= 0 for x in row):
                lin.append(j)
            elif all(x <= 0 for x in row):
                dead.append(j)
            else:
                normal, offset, lam, _ = _canonical(W[j], b[j])
                if (normal, offset) in keys:
                    tg[keys[(normal, offset)]][0 if lam > 0 else 1].append(j)
                else:
                    grp = cancel.setdefault((normal, offset), [None, [], []])
                    if grp[0] is None:
                        grp[0] = 1 if lam > 0 else -1
                    grp[1 if (lam > 0) == (grp[0] > 0) else 2].append(j)
        groups = []
        for _, P, N in cancel.values():
            if len(N) > len(P):
                P, N = N, P
            groups.append(((len(P), len(N)), P, N))
        groups.sort(key=lambda g: (g[0][0] + g[0][1], g[0][0]), reverse=True)
        t = _Type(tuple((len(P), len(N)) for P, N in tg), tuple(g[0] for g in groups),
                  len(lin), len(dead))
        order = [j for P, N in tg for j in P + N] + [j for g in groups for j in g[1] + g[2]]
        order += lin + dead
        for P in self.pieces:
            if P._type == t:
                return P, np.array(order, dtype=int)
        return None  # pragma: no cover - a point of the fiber lies in some piece

    def describe(self, max_pieces: int = 5) -> str:
        """A readable multi-line description, listing at most ``max_pieces`` pieces."""
        if isinstance(max_pieces, (bool, np.bool_)) or not isinstance(
                max_pieces, (int, np.integer)) or max_pieces < 0:
            raise InputError(f"max_pieces must be an integer >= 0; got {short_repr(max_pieces)}")
        lines = [f"fiber of a {self.widths} network on the orthant: dimension {self.dimension}, "
                 f"{len(self.pieces)} nonempty piece(s) up to permutation "
                 f"({self.num_types} types)"]
        lines.append(self.arrangement.describe())
        for P in self.pieces[:max_pieces]:
            lines.append(P.describe())
        if len(self.pieces) > max_pieces:
            lines.append(f"... {len(self.pieces) - max_pieces} more piece(s)")
        return "\n".join(lines)


#: default bound on the number of combinatorial types :func:`orthant_fiber` enumerates
#: (about 50 microseconds each; 2 -> 8 -> 1 with 4 visible hyperplanes has about 10^4)
MAX_TYPES = 200_000


def orthant_fiber(params: Any, domain: Any = "orthant", *, degenerate: bool = True,
                  progress: bool = False, max_types: int = MAX_TYPES) -> OrthantFiber:
    """The fiber of a one-hidden-layer network on the nonnegative orthant (docs/concepts_relu.md §2).

    Every parameter of the same widths ``d -> n -> m`` realizing the same function on
    ``z >= 0`` lies in exactly one piece (up to permuting hidden neurons): a choice of
    which neurons sit on which visible hyperplane with which orientation, which neurons
    are linear (always active) or dead, and (when ``degenerate``) which neurons form extra
    hyperplanes whose jumps cancel. Each piece is a semi-algebraic set printable with sympy
    (:attr:`FiberPiece.equations`, :attr:`FiberPiece.inequalities`), with its dimension and
    a sampler.

    Args:
        params: ``[(W1, b1), (W2, b2)]``.
        domain: must be the nonnegative orthant (``"orthant"`` or an orthant
            :class:`Domain`); accepted for the same call signature as the other analyses.
        degenerate: include the pieces with several neurons on one hyperplane or with
            cancelling groups (needed for the whole fiber; False keeps the standard pieces).
        progress: show a progress bar over the enumerated types.
        max_types: refuse (``InputError``) when more combinatorial types than this would be
            enumerated. Their number grows quickly with the width n (with degenerate
            pieces, about 10^6 for n = 12 and 6 visible hyperplanes); it is counted
            exactly before any work, and ``degenerate=False`` needs only
            ``2^r (n - r + 1)`` types.

    Returns:
        An :class:`OrthantFiber`.

    >>> F = orthant_fiber([([[1.0, -1.0]], [0.5]), ([[2.0]], [0.0])])
    >>> F.dimension, [P.labels for P in F.pieces]
    (1, [('H1+',)])
    """
    layers, _ = _one_hidden(params, "orthant_fiber")
    dom = as_domain(domain, layers[0][0].shape[1])
    if dom.kind != "orthant":
        raise DomainError(f"orthant_fiber computes fibers on the nonnegative orthant only; "
                          f"got domain {short_repr(domain)}")
    degenerate = check_bool(degenerate, "degenerate")
    progress = check_bool(progress, "progress")
    max_types = check_positive_int(max_types, "max_types")
    arr = weighted_arrangement(params, dom)
    n = layers[0][0].shape[0]
    ctx = _Context(arr, n)
    count = _count_types(n, ctx.r, bool(degenerate))
    if count > max_types:
        hint = (" or pass degenerate=False (standard pieces only: "
                f"{_count_types(n, ctx.r, False)} types)") if degenerate else ""
        raise InputError(
            f"the fiber of a {(ctx.d, n, ctx.m)} network with {ctx.r} visible hyperplane(s) "
            f"has {count} combinatorial types to enumerate, more than max_types = "
            f"{max_types}; raise max_types{hint}")
    types = list(_enumerate_types(n, ctx.r, bool(degenerate)))
    found = []
    for t in progress_iter(types, progress, "fiber types", "type"):
        res = _type_dimension(ctx, t)
        if res is None:
            continue
        geo, strata = res
        dim = max(s for _, s in strata)
        std = all(p + q == 1 for p, q in t.targets) and not t.cancels
        labs = []
        for lab in t.labels():
            if lab[0] in ("H", "E"):
                labs.append(f"{lab[0]}{lab[1] + 1}{'+' if lab[2] > 0 else '-'}")
            else:
                labs.append(lab[0])
        found.append((dim, std, t, geo, strata, tuple(labs)))
    found.sort(key=lambda f: (-f[0], not f[1], f[5]))
    pieces = []
    for i, (dim, std, t, geo, strata, labs) in enumerate(found):
        pieces.append(FiberPiece(
            index=i, labels=labs, kind="standard" if std else "degenerate", copies=t.copies(),
            dimension=dim, strata=strata,
            required_linear_part=tuple(tuple(r) for r in geo.LT), linear_rank=geo.rho,
            nonnegative_rank=geo.nu, certified=geo.certified, _ctx=ctx, _type=t, _geo=geo))
    return OrthantFiber(
        arrangement=arr, widths=(ctx.d, n, ctx.m), pieces=tuple(pieces),
        dimension=max((P.dimension for P in pieces), default=-1), num_types=len(types),
        certified=all(P.certified for P in pieces) and arr.certified,
        method="exact type enumeration; dimensions by the factorization-strata formula",
        _ctx=ctx)
