"""The fiber of a one-hidden-layer network on the nonnegative orthant
(docs/concepts_relu.md §2, docs/relu_arrangement.md §2).

By the complete invariant of :mod:`._arrangement` (two networks agree on the orthant iff
their weighted arrangements are equal), the fiber is the set of parameters of the same
widths whose arrangement equals the target's. It is the disjoint union of semi-algebraic
*pieces*, one per combinatorial type (and its images under permuting hidden neurons).

A piece of the fiber is fixed by a *type*: how the n hidden neurons are assigned to

* the target's visible hyperplanes H_k, each with p_k neurons of positive and q_k of
  negative orientation (p_k + q_k >= 1),
* "cancel" groups: further hyperplanes through the open orthant shared by p_e + q_e
  neurons of two opposite orientations whose jumps cancel (e.g. relu(u) - relu(-u) = u,
  or one neuron with zero outgoing weights),
* linear neurons (row (a_j, beta_j) >= 0: active on the whole orthant) and dead
  neurons (row <= 0, row != 0).

Pieces are listed up to permuting neurons (canonical representatives, ``copies`` counts
the distinct permuted copies); docs/relu_arrangement.md §2 derives the dimension formula.
Everything is exact: rational linear algebra and polynomials are python-flint's
(:mod:`neuromanifold.exact`), numbers inside are ``flint.fmpq`` and results are
``Fraction``.
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

from ..._errors import DomainError, InputError, ParameterError, short_repr
from ..._progress import progress_iter
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_seed_rng, check_bool, check_finite_result, check_positive_int
from ...exact import (
    fmpq_to_fraction,
    poly_gradient,
    poly_to_sympy,
    poly_value,
    polynomial_ring,
    rational_combination,
    rational_matmul,
    rational_nullspace,
    rational_rank,
    rational_rref,
    rational_solve,
    to_fmpq,
)
from .._core.domain import as_domain
from .._core.live import refuse_conv
from .._core.net import check_params
from .._core.numbers import exact_layers, to_float
from .arrangement import (
    WeightedArrangement,
    canonical_hyperplane,
    one_hidden_layer,
    weighted_arrangement,
)

__all__ = ["FiberPiece", "OrthantFiber", "orthant_fiber", "MAX_TYPES"]

_Q0 = flint.fmpq(0)
_Q1 = flint.fmpq(1)


def _q(x: Any) -> flint.fmpq:
    return x if type(x) is flint.fmpq else to_fmpq(x)


def _fr(x: Any) -> Fraction:
    return fmpq_to_fraction(x) if type(x) is flint.fmpq else Fraction(x)


def _normalized(v: Sequence[flint.fmpq]) -> list[flint.fmpq]:
    """``v`` scaled by a positive rational so that its largest absolute entry is 1."""
    mx = max((abs(x) for x in v), default=_Q0)
    return [x / mx for x in v] if mx else list(v)


# ---------------------------------------------------------------------------------------
# combinatorial types
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Type:
    targets: tuple  # ((p_k, q_k), ...)
    cancels: tuple  # ((p_e, q_e), ...), p_e >= q_e, p_e >= 1, sorted descending
    n_linear: int
    n_dead: int

    @property
    def n(self) -> int:
        return (
            sum(p + q for p, q in self.targets)
            + sum(p + q for p, q in self.cancels)
            + self.n_linear
            + self.n_dead
        )

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
    shapes = sorted(
        (
            (p, s - p)
            for s in range(1, total + 1)
            for p in range(s, -1, -1)
            if p >= s - p and p >= 1
        ),
        key=lambda t: (t[0] + t[1], t[0]),
        reverse=True,
    )
    for sh in shapes:
        if max_shape is not None and (sh[0] + sh[1], sh[0]) > (
            max_shape[0] + max_shape[1],
            max_shape[0],
        ):
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
        return 2**r * (n - r + 1) if r <= n else 0
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
    return sum(T[s] * E[c] * (n - s - c + 1) for s in range(n + 1) for c in range(n - s + 1))


def _enumerate_types(n: int, r: int, degenerate: bool):
    for targets in _compositions(r, n):
        if not degenerate and any(p + q != 1 for p, q in targets):
            continue
        left = n - sum(p + q for p, q in targets)
        for cancels in _cancel_multisets(left) if degenerate else [()]:
            rest = left - sum(p + q for p, q in cancels)
            for n_lin in range(rest, -1, -1):
                yield _Type(targets, cancels, n_lin, rest - n_lin)


# ---------------------------------------------------------------------------------------
# the factorization geometry of a type
# ---------------------------------------------------------------------------------------


class _Geometry:
    """Invariants of the linear factorization problem of one (only-negative, both) choice.

    ``L_T`` is the required linear part, ``NB`` the fixed normals of target hyperplanes

    with both orientations; ``R' = rowspace([L_T; NB])``.
    """

    def __init__(self, LT: list[list[flint.fmpq]], NB: list[tuple], d: int):
        self.LT, self.NB, self.d = LT, list(NB), d
        self.LT_fractions = tuple(tuple(_fr(x) for x in r) for r in LT)  # the public field
        rows = [r for r in LT] + [list(x) for x in NB]
        self.Rp, _ = rational_rref(rows, d)
        self.rho = len(self.Rp)
        self.u = rational_rank([list(x) for x in NB], d)
        self.rho_L = rational_rank(LT, d)
        self.I, self.p, self.certified = _max_support(self.Rp, d)
        J = [i for i in range(d) if i not in self.I]
        # S_c = R' ∩ {x_J = 0}: combinations y of the basis rows with (y^T Rp)_J = 0
        if self.rho:
            Y = rational_nullspace([[self.Rp[k][j] for k in range(self.rho)] for j in J], self.rho)
            self.Sc = [rational_combination(y, self.Rp, d) for y in Y]
        else:
            self.Sc = []
        self.c = len(self.Sc)
        self.a = (
            self.u + self.c - rational_rank([list(x) for x in NB] + self.Sc, d) if self.c else 0
        )
        # nonnegative rank of L_T alone: least k with L_T = C W, W >= 0 of k rows
        if self.rho_L == 0:
            self.nu = 0
        else:
            RL, _ = rational_rref(LT, d)
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


def _max_support(
    basis: list[list[flint.fmpq]], d: int
) -> tuple[tuple[int, ...], list | None, bool]:
    """Coordinates I on which some nonnegative vector of ``span(basis)`` is positive, an
    exact such vector ``p`` (support exactly I) and whether the split was certified.

    By Tucker's theorem there are ``x in S, x >= 0`` and ``lam in S^perp, lam >= 0`` with
    ``x + lam > 0``; one LP finds them, and both are re-derived exactly (certificate).
    """
    rho = len(basis)
    if rho == 0:
        return (), None, True
    if rho == d:
        return tuple(range(d)), [_Q1] * d, True
    from scipy.optimize import linprog  # start-up: a slow import

    perp = rational_nullspace(basis, d)
    B = np.array([[float(x) for x in r] for r in basis])
    N = np.array([[float(x) for x in r] for r in perp])
    B = B / np.linalg.norm(B, axis=1, keepdims=True)
    N = N / np.linalg.norm(N, axis=1, keepdims=True)
    k1, k2 = B.shape[0], N.shape[0]
    # variables (y, z): x = B^T y >= 0, lam = N^T z >= 0, x + lam >= 1
    A_ub = np.vstack(
        [
            np.hstack([-B.T, np.zeros((d, k2))]),
            np.hstack([np.zeros((d, k1)), -N.T]),
            np.hstack([-B.T, -N.T]),
        ]
    )
    b_ub = np.concatenate([np.zeros(2 * d), -np.ones(d)])
    res = linprog(
        np.zeros(k1 + k2), A_ub=A_ub, b_ub=b_ub, bounds=[(-1e6, 1e6)] * (k1 + k2), method="highs"
    )
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
        return [_Q0] * d
    Y = rational_nullspace([[b[j] for b in basis] for j in zero], len(basis))
    if not Y:
        return None
    S = [rational_combination(y, basis, d) for y in Y]
    Sf = np.array([[float(x) for x in s] for s in S])
    coef, *_ = np.linalg.lstsq(Sf.T, np.asarray(approx, dtype=float), rcond=None)
    for attempt in range(3):
        cf = [Fraction(float(c)).limit_denominator(10 ** (6 + 3 * attempt)) for c in coef]
        v = rational_combination(cf, S, d)
        if all(v[i] > 0 for i in pos):
            return _normalized(v)
    return None


# ---------------------------------------------------------------------------------------
# the target, and the equations of a piece (flint polynomials)
# ---------------------------------------------------------------------------------------


class _Context:
    """Target data shared by the pieces of one fiber (not part of any repr); exact
    numbers as ``fmpq``."""

    def __init__(self, arr: WeightedArrangement, n: int):
        self.arr = arr
        self.n, self.d, self.m = n, arr.input_dim, arr.output_dim
        self.H = arr.hyperplanes
        self.r = len(self.H)
        self.normals = [tuple(_q(x) for x in H.normal) for H in self.H]
        self.offsets = [_q(H.offset) for H in self.H]
        self.weights = [tuple(_q(x) for x in H.weight) for H in self.H]
        self.pivots = [next(i for i, x in enumerate(H.normal) if x != 0) for H in self.H]
        self.M = [[_q(x) for x in r] for r in arr.linear]
        self.v = [_q(x) for x in arr.bias]
        self.ring = polynomial_ring(self.nvars)
        self.X = self.ring.gens()
        self.zero = self.ring.constant(0)
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
            import sympy  # start-up: a slow import

            n, d, m = self.n, self.d, self.m
            names = (
                [f"W1[{j + 1},{i + 1}]" for j in range(n) for i in range(d)]
                + [f"b1[{j + 1}]" for j in range(n)]
                + [f"W2[{o + 1},{j + 1}]" for o in range(m) for j in range(n)]
                + [f"b2[{o + 1}]" for o in range(m)]
            )
            self._syms = tuple(sympy.Symbol(s, real=True) for s in names)
        return self._syms

    def geometry(self, only_neg: tuple, both: tuple) -> _Geometry:
        key = (only_neg, both)
        if key not in self._geo:
            # L_T = M + sum_{k only negative} w_k n_k^T
            WN = rational_matmul(
                [[self.weights[k][o] for k in only_neg] for o in range(self.m)],
                [list(self.normals[k]) for k in only_neg],
                len(only_neg),
                self.d,
            )
            LT = [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(self.M, WN)]
            self._geo[key] = _Geometry(LT, [self.normals[k] for k in both], self.d)
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


def _piece_equations(ctx: _Context, t: _Type) -> list:
    """The defining equations of the piece of type ``t`` (``fmpq_mpoly`` in the variables
    of :meth:`ReLUNet.flatten`), the zero polynomials left out."""
    labels = t.labels()
    d, m, X = ctx.d, ctx.m, ctx.X

    def row(j: int, i: int):
        return X[ctx.row_index(j, i)]

    eqs: list = []
    refs = {}
    for j, lab in enumerate(labels):
        if lab[0] == "E" and lab[1] not in refs:
            refs[lab[1]] = j
    aff = [
        j
        for j, lab in enumerate(labels)
        if lab[0] == "linear" or (lab[0] in ("H", "E") and lab[2] < 0)
    ]
    # neurons on a visible hyperplane: (W1[j], b1[j]) parallel to (n_k, t_k)
    for j, lab in enumerate(labels):
        if lab[0] != "H":
            continue
        k, p = lab[1], ctx.pivots[lab[1]]
        for i in range(d + 1):
            if i != p:
                coef = ctx.normals[k][i] if i < d else ctx.offsets[k]
                eqs.append(row(j, i) - coef * X[ctx.iW(j, p)])
    # weights of the visible hyperplanes: sum_j s_j W1[j, p] W2[:, j] = w_k
    for k in range(ctx.r):
        p = ctx.pivots[k]
        on_k = [(j, lab[2]) for j, lab in enumerate(labels) if lab[0] == "H" and lab[1] == k]
        for o in range(m):
            eqs.append(
                sum((s * X[ctx.iW(j, p)] * X[ctx.iC(o, j)] for j, s in on_k), ctx.zero)
                - ctx.weights[k][o]
            )
    # cancel groups: rows parallel to the reference row, weighted jumps summing to zero
    for e, j0 in refs.items():
        members = [(j, lab[2]) for j, lab in enumerate(labels) if lab[0] == "E" and lab[1] == e]
        for j, _ in members:
            if j != j0:
                for i1, i2 in itertools.combinations(range(d + 1), 2):
                    eqs.append(row(j, i1) * row(j0, i2) - row(j, i2) * row(j0, i1))
        for o in range(m):
            eqs.append(
                sum(
                    (
                        s
                        * sum((row(j, i) * row(j0, i) for i in range(d + 1)), ctx.zero)
                        * X[ctx.iC(o, j)]
                        for j, s in members
                    ),
                    ctx.zero,
                )
            )
    # affine part: sum over affine-acting neurons of W2[:, j] (W1[j], b1[j]) = (M, v - b2)
    for o in range(m):
        for i in range(d + 1):
            s = sum((X[ctx.iC(o, j)] * row(j, i) for j in aff), ctx.zero)
            eqs.append(s - ctx.M[o][i] if i < d else s + X[ctx.ig(o)] - ctx.v[o])
    return [e for e in eqs if not e.is_zero()]


def _piece_inequalities(ctx: _Context, t: _Type) -> tuple:
    import sympy  # start-up: a slow import

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
                sympy.Rational(H.offset.numerator, H.offset.denominator)
            ]
            out.append(
                sympy.Or(
                    *[
                        sympy.Ne(sympy.expand(r0[i] - target[i] * r0[p]), 0)
                        for i in range(d + 1)
                        if i != p
                    ]
                )
            )
        for e2, j1 in refs.items():
            if e2 <= e:
                continue
            r1 = row(j1)
            out.append(
                sympy.Or(
                    *[
                        sympy.Ne(sympy.expand(r0[i1] * r1[i2] - r0[i2] * r1[i1]), 0)
                        for i1, i2 in itertools.combinations(range(d + 1), 2)
                    ]
                )
            )
    return tuple(out)


# ---------------------------------------------------------------------------------------
# the pieces
# ---------------------------------------------------------------------------------------


def _context(obj: Any) -> Any:
    """The symbolic context of a fiber or piece; an :class:`InputError` for one loaded with
    ``from_dict`` (the context is not stored in ``to_dict``)."""
    if obj._ctx is None:
        raise InputError(
            f"this {type(obj).__name__} was loaded with from_dict: its symbolic "
            f"context (equations, sampling) is not stored; compute "
            f"orthant_fiber(params) again"
        )
    return obj._ctx


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
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

    ``FiberPiece.from_dict(piece.to_dict())`` restores the fields above but not the
    symbolic context behind :attr:`equations`, :meth:`sample` and the checks (it is not
    stored): on a loaded piece these raise an :class:`InputError`.
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
        """The public fields, plus the defining equations and inequalities as text (left
        out for a piece loaded with ``from_dict``, which has no symbolic context)."""
        out = super().to_dict()
        if self._ctx is None:
            return out
        out["equations"] = [str(e) for e in self.equations]
        out["inequalities"] = [str(e) for e in self.inequalities]
        return out

    # -- description ------------------------------------------------------------------
    @property
    def symbols(self) -> tuple:
        """The parameter symbols, in :meth:`ReLUNet.flatten` order."""
        return _context(self).symbols

    def _polys(self) -> list:
        return _piece_equations(_context(self), self._type)

    @property
    def equations(self) -> tuple:
        """The defining polynomial equations (sympy ``Eq(expr, 0)``)."""
        import sympy  # start-up: a slow import

        syms = self.symbols
        return tuple(sympy.Eq(poly_to_sympy(p, syms), 0) for p in self._polys())

    @property
    def inequalities(self) -> tuple:
        """The defining inequalities (sympy relations, ``Or`` for disjunctions)."""
        return _piece_inequalities(_context(self), self._type)

    def condition(self):
        """The whole piece as one sympy boolean ``And(equations, inequalities)``."""
        import sympy  # start-up: a slow import

        return sympy.And(*self.equations, *self.inequalities)

    def describe(self) -> str:
        """A readable multi-line description (sympy conditions)."""
        lines = [
            f"piece {self.index} [{', '.join(self.labels)}] ({self.kind}, "
            f"dimension {self.dimension}, {self.copies} permuted copies)"
        ]
        lines += ["  " + str(e) for e in self.equations]
        lines += ["  " + str(e) for e in self.inequalities]
        return "\n".join(lines)

    # -- sampling and checks ------------------------------------------------------------
    def sample(self, seed: Any = 0, *, stratum: int | None = None, exact: bool = False):
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
        if (
            isinstance(stratum, (bool, np.bool_))
            or not isinstance(stratum, (int, np.integer))
            or int(stratum) not in qs
        ):
            raise InputError(
                f"stratum must be one of {sorted(qs)} for this piece; got {short_repr(stratum)}"
            )
        x = _sample_piece(_context(self), self._type, self._geo, int(stratum), rng)
        return _to_params(self._ctx, x, exact)

    def local_dimension(self, params: Any) -> int:
        """``#parameters - rank`` of the exact Jacobian of the defining equations at
        ``params`` (canonical neuron order), with the sign constraints that are tight at
        ``params`` (zero entries of linear rows) added as equations. At a generic point of
        the top stratum this equals :attr:`dimension` (the numerical check of the formula)."""
        ctx = _context(self)
        x = _flatten_exact(ctx, params)
        rows = [poly_gradient(p, x) for p in self._polys()]
        for j, lab in enumerate(self._type.labels()):
            if lab[0] == "linear":
                for i in range(ctx.d + 1):
                    k = ctx.row_index(j, i)
                    if x[k] == 0:
                        e = [_Q0] * ctx.nvars
                        e[k] = _Q1
                        rows.append(e)
        return ctx.nvars - rational_rank(rows, ctx.nvars)

    def residual(self, params: Any) -> float:
        """Largest absolute value of the defining equations at ``params`` (exact, as float)."""
        x = _flatten_exact(_context(self), params)
        worst = max((abs(poly_value(p, x)) for p in self._polys()), default=flint.fmpq(0))
        return check_finite_result(to_float(worst), "the fiber's residual")


def _flatten_exact(ctx: _Context, params: Any) -> list[flint.fmpq]:
    layers, exact = exact_layers(params)
    widths = (layers[0][0].shape[1],) + tuple(W.shape[0] for W, _ in layers)
    if widths != (ctx.d, ctx.n, ctx.m):
        raise ParameterError(
            f"parameters must have widths {(ctx.d, ctx.n, ctx.m)}; got widths {widths}"
        )
    (W, b), (C, g) = exact
    return [
        _q(x)
        for x in ([x for row in W for x in row] + list(b) + [x for row in C for x in row] + list(g))
    ]


# ---------------------------------------------------------------------------------------
# exact sampling
# ---------------------------------------------------------------------------------------


def _rnd(rng: np.random.Generator, scale: float = 1.0) -> flint.fmpq:
    return flint.fmpq(int(round(float(rng.standard_normal()) * scale * 256)), 256)


def _rpos(rng: np.random.Generator) -> flint.fmpq:
    return flint.fmpq(int(rng.integers(64, 512)), 256)


def _rpow2(rng: np.random.Generator) -> flint.fmpq:
    # powers of two keep divisions by |lam| exact in binary, so that samples of dyadic
    # targets are often exactly representable as floats
    return flint.fmpq(2) ** int(rng.integers(-2, 3))


def _split_sum(rng, target: list[flint.fmpq], count: int, m: int, signs: list[int]):
    """``count`` pairs (lam_j, C_j) with sign(lam_j) = signs[j] and sum |lam_j| C_j = target."""
    lams = [s * _rpow2(rng) for s in signs]
    Cs = [[_rnd(rng) for _ in range(m)] for _ in range(count)]
    acc = [sum((abs(lams[j]) * Cs[j][o] for j in range(count - 1)), _Q0) for o in range(m)]
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
            p = [_Q1 + abs(_rnd(rng, 0.25)) for _ in range(d)]
            V = [_normalized(r) for r in geo.Rp]
            for cand in [p] + [[_rnd(rng) for _ in range(d)] for _ in range(4 * d)]:
                if len(V) >= q:
                    break
                if rational_rank(V + [cand], d) > len(V):
                    V.append(cand)
            if len(V) != q:
                continue
            cone = V
        WA = []
        for _ in range(kA):
            if not cone or p is None:
                WA.append([_Q0] * d)
                continue
            vv = rational_combination([_rnd(rng) for _ in cone], cone, d)
            sh = max([-vv[i] / p[i] for i in range(d) if p[i] > 0] + [_Q0]) + _rpos(rng)
            WA.append([sh * p[i] + vv[i] for i in range(d)])
        AE = [rational_combination([_rnd(rng) for _ in V], V, d) for _ in range(e2)]
        if any(all(x == 0 for x in a) for a in AE):
            continue
        F = WA + [list(x) for x in geo.NB] + AE
        if rational_rank(F, d) != q:
            continue
        # particular solution through independent rows (the pivot columns of F^T, i.e. the
        # rows independent of the earlier ones), plus the left null space of F
        Ft = [list(col) for col in zip(*F)] if F else []
        _, idx = rational_rref(Ft, K)
        G = [[_Q0] * K for _ in range(m)]
        if idx:
            Fs = [F[i] for i in idx]
            Fst = [list(col) for col in zip(*Fs)]
            X = rational_solve(
                rational_matmul(Fs, Fst, d, len(idx)),
                rational_matmul(Fs, [list(col) for col in zip(*geo.LT)], d, m),
                len(idx),
                m,
            )  # len(idx) x m
            for o in range(m):
                for a, i in enumerate(idx):
                    G[o][i] = X[a][o]
        null = rational_nullspace(Ft, K) if F else []
        for o in range(m):
            extra = rational_combination([_rnd(rng) for _ in null], null, K)
            G[o] = [G[o][i] + extra[i] for i in range(K)]
        check = rational_matmul(G, F, K, d) if F else [[_Q0] * d for _ in range(m)]
        if check != [list(r) for r in geo.LT]:
            continue
        CA = [[G[o][i] for i in range(kA)] for o in range(m)]
        YB = [[-G[o][kA + i] for o in range(m)] for i in range(nB)]
        YE = [[-G[o][kA + nB + i] for o in range(m)] for i in range(e2)]
        return WA, CA, YB, AE, YE
    raise RuntimeError("could not sample the linear factorization (internal error)")


def _sample_piece(ctx: _Context, t: _Type, geo: _Geometry, q: int, rng) -> list[flint.fmpq]:
    d, m, n = ctx.d, ctx.m, ctx.n
    labels = t.labels()
    both = [k for k, (p, qq) in enumerate(t.targets) if p > 0 and qq > 0]
    e2_groups = [e for e, (p, qq) in enumerate(t.cancels) if qq > 0]
    WA, CA, YB, AE, YE = _sample_sigma(geo, t.n_linear, len(both), len(e2_groups), q, m, rng)
    rows: list = [None] * n
    Cs: list = [None] * n
    pos = 0
    for k, (p, qq) in enumerate(t.targets):
        ext = list(ctx.normals[k]) + [ctx.offsets[k]]
        w = list(ctx.weights[k])
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
            y = [_Q0] * m
        if any(x > 0 for x in a) and any(x < 0 for x in a):
            beta = _rnd(rng)
        elif any(x > 0 for x in a):
            beta = -_rpos(rng)
        else:
            beta = _rpos(rng)
        ref = a + [beta]
        # positive members (the reference first, lam = 1): sum |lam| C = -y; negative: y
        lp = [_Q1] + [_rpow2(rng) for _ in range(p - 1)]
        Cp = [None] + [[_rnd(rng) for _ in range(m)] for _ in range(p - 1)]
        acc = [sum((lp[j] * Cp[j][o] for j in range(1, p)), _Q0) for o in range(m)]
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
    return (
        [rows[j][i] for j in range(n) for i in range(d)]
        + [rows[j][d] for j in range(n)]
        + [Cs[j][o] for o in range(m) for j in range(n)]
        + gamma
    )


def _to_params(ctx: _Context, x: Sequence[Any], exact: bool) -> list:
    """The flat parameter vector ``x`` (fmpq, Fractions or floats) as layers: object arrays
    of ``Fraction`` when ``exact``, else float arrays."""
    n, d, m = ctx.n, ctx.d, ctx.m

    def conv(v):
        a = np.empty(np.shape(np.array(v, dtype=object)), dtype=object)
        for idx, y in np.ndenumerate(np.array(v, dtype=object)):
            a[idx] = _fr(y) if exact else float(y)
        return a if exact else a.astype(float)

    W1 = [[x[ctx.iW(j, i)] for i in range(d)] for j in range(n)]
    b1 = [x[ctx.ib(j)] for j in range(n)]
    W2 = [[x[ctx.iC(o, j)] for j in range(n)] for o in range(m)]
    b2 = [x[ctx.ig(o)] for o in range(m)]
    return [(conv(W1), conv(b1)), (conv(W2), conv(b2))]


# ---------------------------------------------------------------------------------------
# the fiber
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
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

    ``OrthantFiber.from_dict(fiber.to_dict())`` restores the fields above; the symbolic
    context behind :meth:`sample`, :meth:`piece_of` and :attr:`symbols` is not stored, and
    on a loaded fiber these raise an :class:`InputError` (:meth:`contains` works).
    """

    arrangement: WeightedArrangement
    widths: tuple
    pieces: tuple[FiberPiece, ...]
    dimension: int
    num_types: int
    certified: bool
    method: str
    _ctx: Any = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def symbols(self) -> tuple:
        """The parameter symbols, in :meth:`ReLUNet.flatten` order."""
        return _context(self).symbols

    @property
    def standard_pieces(self) -> tuple:
        """The pieces of kind ``"standard"`` (no degenerate coincidences)."""
        return tuple(P for P in self.pieces if P.kind == "standard")

    def contains(self, params: Any, *, tol: float = DEFAULT_TOL) -> bool:
        """Whether ``params`` lies in the fiber: it has the widths :attr:`widths` and
        realizes the target on the orthant.

        Args:
            params: ``[(W1, b1), (W2, b2)]`` (floats or exact ``Fraction``/int entries).
            tol: relative tolerance (see :func:`arrangements_equal`): the arrangement of
                ``params`` built at ``tol`` equals the target's up to ``tol`` times the
                larger scale. ``tol = 0``: exact membership.

        Returns:
            ``True`` or ``False``. Parameters of other widths are not in the fiber
            (``False``), even when they realize the same function.
        """
        tol = check_tol(tol)
        A = weighted_arrangement(params, "orthant", tol=tol)
        layers = check_params(params)
        same = tuple(
            [layers[0][0].shape[1], layers[0][0].shape[0], layers[1][0].shape[0]]
        ) == tuple(self.widths)
        return same and A.equals(self.arrangement, tol=tol)

    def sample(
        self, seed: Any = 0, *, piece: int | None = None, exact: bool = False, permute: bool = True
    ):
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
        if (
            isinstance(piece, (bool, np.bool_))
            or not isinstance(piece, (int, np.integer))
            or not 0 <= piece < len(self.pieces)
        ):
            raise InputError(
                f"piece must be an index in [0, {len(self.pieces)}); got {short_repr(piece)}"
            )
        (W1, b1), (W2, b2) = self.pieces[int(piece)].sample(rng, exact=exact)
        if permute:
            perm = rng.permutation(W1.shape[0])
            W1, b1, W2 = W1[perm], b1[perm], W2[:, perm]
        return [(W1, b1), (W2, b2)]

    def piece_of(self, params: Any) -> tuple[FiberPiece, np.ndarray] | None:
        """The piece containing ``params`` and the permutation ``perm`` putting its neurons
        in the piece's canonical order (``W1[perm]``, ``b1[perm]``, ``W2[:, perm]``); or
        ``None`` when ``params`` is not in the fiber (exact test)."""
        if not self.contains(params, tol=0):
            return None
        ctx = _context(self)
        _, exact = exact_layers(params)
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
                normal, offset, lam, _ = canonical_hyperplane(W[j], b[j])
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
        t = _Type(
            tuple((len(P), len(N)) for P, N in tg), tuple(g[0] for g in groups), len(lin), len(dead)
        )
        order = [j for P, N in tg for j in P + N] + [j for g in groups for j in g[1] + g[2]]
        order += lin + dead
        for P in self.pieces:
            if P._type == t:
                return P, np.array(order, dtype=int)
        return None  # pragma: no cover - a point of the fiber lies in some piece

    def describe(self, max_pieces: int = 5) -> str:
        """A readable multi-line description, listing at most ``max_pieces`` pieces."""
        if (
            isinstance(max_pieces, (bool, np.bool_))
            or not isinstance(max_pieces, (int, np.integer))
            or max_pieces < 0
        ):
            raise InputError(f"max_pieces must be an integer >= 0; got {short_repr(max_pieces)}")
        lines = [
            f"fiber of a {self.widths} network on the orthant: dimension {self.dimension}, "
            f"{len(self.pieces)} nonempty piece(s) up to permutation "
            f"({self.num_types} types)"
        ]
        lines.append(self.arrangement.describe())
        for P in self.pieces[:max_pieces]:
            lines.append(P.describe())
        if len(self.pieces) > max_pieces:
            lines.append(f"... {len(self.pieces) - max_pieces} more piece(s)")
        return "\n".join(lines)


#: default bound on the number of combinatorial types :func:`orthant_fiber` enumerates
#: (about 50 microseconds each; 2 -> 8 -> 1 with 4 visible hyperplanes has about 10^4)
MAX_TYPES = 200_000


def orthant_fiber(
    params: Any,
    domain: Any = "orthant",
    *,
    degenerate: bool = True,
    progress: bool = False,
    max_types: int = MAX_TYPES,
) -> OrthantFiber:
    """The fiber of a one-hidden-layer network on the nonnegative orthant (docs/concepts_relu.md
    §2).

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
    # Whole: check, count, enumerate the types, then build the pieces: one short pipeline
    refuse_conv(params, "orthant_fiber")
    layers, _ = one_hidden_layer(params, "orthant_fiber")
    dom = as_domain(domain, layers[0][0].shape[1])
    if dom.kind != "orthant":
        raise DomainError(
            f"orthant_fiber computes fibers on the nonnegative orthant only; "
            f"got domain {short_repr(domain)}"
        )
    degenerate = check_bool(degenerate, "degenerate")
    progress = check_bool(progress, "progress")
    max_types = check_positive_int(max_types, "max_types")
    arr = weighted_arrangement(params, dom, tol=0)
    n = layers[0][0].shape[0]
    ctx = _Context(arr, n)
    count = _count_types(n, ctx.r, bool(degenerate))
    if count > max_types:
        hint = (
            (
                " or pass degenerate=False (standard pieces only: "
                f"{_count_types(n, ctx.r, False)} types)"
            )
            if degenerate
            else ""
        )
        raise InputError(
            f"the fiber of a {(ctx.d, n, ctx.m)} network with {ctx.r} visible hyperplane(s) "
            f"has {count} combinatorial types to enumerate, more than max_types = "
            f"{max_types}; raise max_types{hint}"
        )
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
        pieces.append(
            FiberPiece(
                index=i,
                labels=labs,
                kind="standard" if std else "degenerate",
                copies=t.copies(),
                dimension=dim,
                strata=strata,
                required_linear_part=geo.LT_fractions,
                linear_rank=geo.rho,
                nonnegative_rank=geo.nu,
                certified=geo.certified,
                _ctx=ctx,
                _type=t,
                _geo=geo,
            )
        )
    return OrthantFiber(
        arrangement=arr,
        widths=(ctx.d, n, ctx.m),
        pieces=tuple(pieces),
        dimension=max((P.dimension for P in pieces), default=-1),
        num_types=len(types),
        certified=all(P.certified for P in pieces) and arr.certified,
        method="exact type enumeration; dimensions by the factorization-strata formula",
        _ctx=ctx,
    )
