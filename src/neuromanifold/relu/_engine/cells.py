"""The exact region engine shared by regions, bent hyperplanes, equivalence and
functional dimension.

A *cell* is a full-dimensional polyhedron ``{x in domain : a_i . x <= c_i}`` on which the
activation pattern of every neuron processed so far is fixed. Starting from the domain,
the neurons are processed layer by layer (for several networks: all layers of the first,
then of the second, ...). On a cell, the pre-activations of the next layer are affine, so
each cell is split by that layer's hyperplanes with a binary space partition:

* a neuron whose affine function is constant on the cell fixes its bit without an LP
  (exactly zero counts as inactive, the derivative convention of ReLU'(0) = 0);
* every cell carries a pool of points certified strictly inside it: a hyperplane with
  pool points on both sides crosses the cell (no solve); otherwise a float walk across
  the cell (:func:`_ascent`) proposes a far-side point or an emptiness certificate, and
  one LP on the far side decides when the proposal fails its exact check;
* neurons that do not cross a cell are fixed for the whole sub-tree and never tested
  again; crossing ones split the cell (each side inherits the pool points on its side,
  so a split needs no solve) and are re-tested only on the children.

No decision rests on floating point: every cell is certified non-empty by an interior
point that satisfies its strict inequalities in exact rational arithmetic, and every
discarded side is certified empty by an exact Motzkin certificate (from the walk's active
walls, or rounded from the LP duals). When either check fails (ambiguous, nearly
degenerate cases) an exact rational simplex decides (:mod:`neuromanifold.exact._lp`).
See ``docs/relu_arrangement.md`` §5. Affine maps are carried exactly
(``fmpq_mat``, augmented ``[linear | offset]``) next to float copies used for the LPs.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any

import flint
import numpy as np

from ..._errors import ComputationLimitError
from ..._progress import progress_bar
from ...exact import strict_interior_point, to_fmpq
from ...exact._library import dot, round_certificate
from .._core.domain import Domain, full_dimensional
from .._core.net import check_params, exact_params
from .._core.numbers import clipped_float, float_to_fmpq, pow2
from .lp import LPCounter, solve_lp

__all__ = [
    "ExactNet",
    "Cell",
    "Engine",
    "EngineDeadline",
    "enumerate_cells",
    "iter_cells",
    "iter_subtree",
    "stages_of",
    "exact_forward",
    "pow2_floats",
]

#: LP optimum above which a cell is taken as full-dimensional (then checked exactly);
#: below it an exact emptiness certificate is attempted first.
LP_TOL = 1e-7
#: Cap on the Chebyshev radius, so that unbounded cells have a finite LP optimum.
RADIUS_CAP = 1.0
#: Relative size below which an LP multiplier is left out of a Motzkin certificate.
CERT_REL = 1e-9


_WALK = None


def _kernels():
    """:mod:`neuromanifold.relu._engine.kernels`, imported on first use (importing numba takes
    ~0.4 s, which ``import neuromanifold`` need not pay; a function-level import on every
    call cost ~5 us, a few percent of a region)."""
    global _WALK
    if _WALK is None:
        from . import kernels as _walk  # start-up: numba is imported when a cell is refined

        _WALK = _walk
    return _WALK


class EngineDeadline(Exception):
    """Internal: the engine's deadline passed (turned into ComputationLimitError by the
    callers that set one)."""


_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)


class ExactNet:
    """A ReLU network's parameters as exact rationals (augmented form), with float copies.

    ``Baugq[l]`` is the ``(n_l, d+1)`` matrix with ``b_l`` in the last column, so that the
    pre-activation map of layer l on a cell is ``W_l H + Baug[l]`` for the augmented map
    ``H = [linear | offset]`` of the previous layer's output.

    Args:
        params: validated float64 ``(W, b)`` pairs (see ``check_params``).
        exact: the exact values of the entries (see ``exact_params``); by default the
            exact values of the floats. Pass it to keep ``Fraction``/integer inputs exact.
    """

    def __init__(self, params: list[tuple[np.ndarray, np.ndarray]], exact: list | None = None):
        self.params = params
        self.num_layers = len(params)
        self.d = params[0][0].shape[1]
        self.widths = (self.d,) + tuple(W.shape[0] for W, _ in params)
        d = self.d
        if exact is None:
            exact = exact_params(params)
        self._input_map = None  # [I | 0], built by layer_maps when first needed
        self.Wq = [W for W, _ in exact]
        self.bq = [list(b) for _, b in exact]
        self.Baugq = []
        for b in self.bq:
            B = flint.fmpq_mat(len(b), d + 1)
            for i, v in enumerate(b):
                B[i, d] = v
            self.Baugq.append(B)

    @classmethod
    def from_params(cls, params: Any) -> "ExactNet":
        """Validate ``params`` and keep the exact values of the entries passed."""
        layers = check_params(params)
        return cls(layers, exact_params(params))

    @property
    def hidden_layers(self) -> range:
        return range(self.num_layers - 1)


def pow2_floats(entries: Sequence[flint.fmpq], lead: int | None = None) -> tuple[np.ndarray, int]:
    """Float copies of ``entries * 2**-e``, with ``e`` the binary exponent of the largest of
    ``entries[:lead]`` (of all entries when those are zero).

    Scaling an inequality or a row by a power of two changes nothing exact, and keeps
    the floats in range: networks scaled by ``2**-1000`` neither underflow nor overflow.
    Entries too large for a float after the scaling are clipped to ``+-1e300``.

    Returns:
        ``(floats, e)``.
    """
    pq = [(int(v.p), int(v.q)) for v in entries]
    head = pq if lead is None else pq[:lead]
    ex = [abs(p).bit_length() - q.bit_length() for p, q in head if p]
    if not ex:
        ex = [abs(p).bit_length() - q.bit_length() for p, q in pq if p]
    e = max(ex) if ex else 0
    out = np.zeros(len(pq))
    for i, (p, q) in enumerate(pq):
        if p:
            try:
                out[i] = p / (q << e) if e >= 0 else (p << -e) / q
            except OverflowError:
                out[i] = 1e300 if p > 0 else -1e300
    return out, e


def exact_forward(
    net: ExactNet, x: Sequence[Any]
) -> tuple[list[flint.fmpq], list[list[flint.fmpq]]]:
    """Exact forward pass at a rational point.

    Returns:
        ``(outputs, preacts)``: the outputs and the pre-activations of every hidden layer.
    """
    h = [to_fmpq(v) for v in x]
    pre = []
    for l in range(net.num_layers):
        W = net.Wq[l]
        n = W.nrows()
        z = []
        for i in range(n):
            s = net.bq[l][i]
            for j in range(len(h)):
                w = W[i, j]
                if w != 0 and h[j] != 0:
                    s += w * h[j]
            z.append(s)
        if l < net.num_layers - 1:
            pre.append(z)
            h = [v if v > 0 else _ZERO for v in z]
        else:
            h = z
    return h, pre


@dataclasses.dataclass
class Cell:
    """A full-dimensional cell with fixed patterns (internal; see module docstring).

    ``rows_q``/``offs_q``: exact inequalities ``a . x <= c`` (strict in the interior), each
    scaled by a power of two like its float copy (for the domain's and the neurons' rows);
    ``rows_f``/``offs_f``: float copies; ``owners[i]`` is ``(net, layer, neuron)`` for a
    neuron's inequality, ``None`` for a domain inequality. ``center_q`` is an exact point
    verified to satisfy every inequality strictly, ``center_f`` its float value and
    ``radius`` the (capped) radius of a ball around it inside the cell.
    ``maps_q[k]``: exact augmented map of the last processed layer's output of network k;
    ``patterns[k]``: list of boolean arrays, one per processed hidden layer. The float
    rows are the exact ones scaled by a power of two each (see :func:`pow2_floats`).
    """

    rows_q: list
    offs_q: list
    rows_f: np.ndarray
    offs_f: np.ndarray
    owners: list
    center_f: np.ndarray
    center_q: list
    radius: float
    maps_q: list
    patterns: list
    #: some neuron processed so far has pre-activation identically 0 on the cell
    zero_preact: bool = False
    #: points known to be strictly inside (certified like ``center_q`` when certifying):
    #: ``(floats (m, d), exact points, radii (m,))``, the radius of a ball around each
    #: point inside the cell; ``None``: only the center
    points: tuple | None = None

    def with_row(
        self, a_q, c_q, a_f, c_f, owner, *, center_f, center_q, radius, points: tuple | None = None
    ) -> "Cell":
        return Cell(
            self.rows_q + [a_q],
            self.offs_q + [c_q],
            _append_row(self.rows_f, a_f),
            _append_row(self.offs_f, c_f),
            self.owners + [owner],
            center_f,
            center_q,
            radius,
            self.maps_q,
            self.patterns,
            self.zero_preact,
            points,
        )

    def evolve(self, **changes) -> "Cell":
        """A copy with some fields changed (``dataclasses.replace`` without its
        per-call introspection, which cost ~10 us on every leaf)."""
        new = object.__new__(Cell)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def pool(self) -> tuple:
        """The known interior points ``(floats, exact, radii)`` (at least the center)."""
        if self.points is not None:
            return self.points
        return (
            np.asarray(self.center_f, dtype=float)[None, :],
            [self.center_q],
            np.array([float(self.radius)]),
        )


def _append_row(A: np.ndarray, row) -> np.ndarray:
    """``A`` (k rows, or k entries) with ``row`` appended as a new float array (what
    ``np.vstack`` / ``np.append`` give, without their dispatch on tiny arrays)."""
    out = np.empty((A.shape[0] + 1,) + A.shape[1:])
    out[:-1] = A
    out[-1] = row
    return out


class Engine:
    """Decisions about cells, with counters (LPs, exact fallbacks)."""

    def __init__(self, d: int, *, certify: bool = True, deadline: float | None = None):
        self.d = d
        self.counter = LPCounter()
        self.exact_fallbacks = 0
        self.certificates = 0
        #: float active-set walks of the refinement (each in place of an LP), and the
        #: emptiness certificates they gave (checked exactly)
        self.walks = 0
        self.walk_proofs = 0
        #: False: trust the floating-point walks and LPs (an LP: radius above LP_TOL =
        #: non-empty, else empty) without the exact checks; the interior points are then
        #: not verified
        self.certify = certify
        #: a ``time.monotonic()`` value after which :meth:`decide` raises
        #: :class:`EngineDeadline` (None: no limit)
        self.deadline = deadline

    # -- the one primitive: is the strict system non-empty, and where is a deep point --
    def decide(self, rows_q, offs_q, rows_f, offs_f, eq=None, known=None, scaled=False):
        """Decide whether ``{x : rows x < offs}`` (and ``eq``) has a point, exactly.

        Args:
            eq: optional ``(a_q, c_q, a_f, c_f)`` for the equation ``a . x = c``.
            known: optional ``(center_f, center_q, radius)`` of a point already known to
                be strictly inside (then the LP only re-centers, and failure falls back
                to it instead of the exact simplex).
            scaled: the exact rows are already scaled like their float copies (the
                engine's cells store them so): skip rescaling them.

        Returns:
            ``(center_f, center_q, radius)`` with ``center_q`` certified strictly inside,
            or ``None`` when the set is certified empty.
        """
        d = self.d
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise EngineDeadline()
        k = rows_f.shape[0]
        norms = np.sqrt(np.einsum("ij,ij->i", rows_f, rows_f))
        if k and np.all(norms > 0) and np.all(np.isfinite(norms)):
            An = rows_f / norms[:, None]
            cn = offs_f / norms
            A_ub = np.zeros((k + 1, d + 1))
            A_ub[:k, :d] = An
            A_ub[:k, d] = 1.0
            A_ub[k, d] = 1.0
            b_ub = np.append(cn, RADIUS_CAP)
            obj = np.zeros(d + 1)
            obj[d] = -1.0
            A_eq = b_eq = None
            if eq is not None:
                ne = float(np.linalg.norm(eq[2]))
                if not ne > 0:  # pragma: no cover - callers pass a normalized non-zero row
                    raise RuntimeError("internal error: zero equation row")
                A_eq = np.append(eq[2] / ne, 0.0)[None, :]
                b_eq = np.array([eq[3] / ne])
            sol = solve_lp(obj, A_ub, b_ub, A_eq, b_eq, counter=self.counter)
            if sol.status == "optimal":
                r = float(sol.x[d])
                if not self.certify:
                    if r > LP_TOL:
                        xq = [float_to_fmpq(v) for v in sol.x[:d]]
                        if eq is not None:
                            xq = _project(xq, eq[0], eq[1])
                        return np.array([float(v) for v in xq]), xq, min(r, RADIUS_CAP)
                    return known
                if r > 0:
                    xq = [float_to_fmpq(v) for v in sol.x[:d]]
                    if eq is not None:
                        xq = _project(xq, eq[0], eq[1])
                    if self._inside(rows_q, offs_q, xq, rows_f, offs_f):
                        return np.array([float(v) for v in xq]), xq, min(r, RADIUS_CAP)
                if r <= LP_TOL and known is None:
                    # the exact rows scaled like their float copies (powers of two), so
                    # that the LP's multipliers fit them; only the rows in the support of
                    # the multipliers take part (motzkin_certificate keeps the same ones)
                    y = -sol.dual_ub[:k] / norms
                    ymax = float(np.max(y)) if k else 0.0
                    if ymax > 0:
                        sup = np.nonzero(y > CERT_REL * ymax)[0]
                        Sq, sq, E, e = _scaled_system(
                            [rows_q[i] for i in sup], [offs_q[i] for i in sup], eq, d, scaled
                        )
                        mu = () if eq is None else [-float(sol.dual_eq[0]) / ne]
                        if _motzkin(Sq, sq, y[sup], E, e, mu):
                            self.certificates += 1
                            return None
        elif not self.certify and k == 0:  # pragma: no cover - callers pass rows
            return known
        if known is not None:
            return known
        # ambiguous: decide exactly (on rows scaled by powers of two: the same set, and a
        # point of moderate size)
        self.exact_fallbacks += 1
        Sq, sq, E, e = _scaled_system(rows_q, offs_q, eq, d, scaled)
        left = None if self.deadline is None else max(1e-9, self.deadline - time.monotonic())
        try:
            p = strict_interior_point(Sq, sq, E, e, dim=d, time_limit=left)
        except ComputationLimitError:
            raise EngineDeadline() from None
        if p is None:
            return None
        pf = np.array([clipped_float(v) for v in p])
        slack = [clipped_float(c - dot(a, p)) for a, c in zip(Sq, sq)]
        snorms = [
            float(np.linalg.norm(pow2_floats(a)[0])) * 2.0 ** pow2_floats(a)[1]
            if any(v != 0 for v in a)
            else 0.0
            for a in Sq
        ]
        radius = min([sl / nm for sl, nm in zip(slack, snorms) if nm > 0] + [RADIUS_CAP])
        return pf, p, radius

    @staticmethod
    def _inside(rows_q, offs_q, xq, rows_f=None, offs_f=None, xf=None) -> bool:
        """Whether ``xq`` satisfies every row strictly, exactly. With the float copies of
        the rows, a row whose float slack exceeds its rounding bound (see
        :func:`float_signs`) is settled in floats; the others are checked exactly.
        ``xf``: the floats nearest to ``xq`` when the caller has them (else computed)."""
        todo = range(len(rows_q))
        if rows_f is not None and len(rows_q):
            if xf is None:
                xf = np.array([clipped_float(v) for v in xq])
            sign = float_signs(-rows_f, offs_f, xf).tolist()  # lists: a few rows
            if -1 in sign:
                return False
            todo = [i for i, v in enumerate(sign) if v == 0]
        for i in todo:
            if not dot(rows_q[i], xq) < offs_q[i]:
                return False
        return True


#: Relative rounding bound of a float evaluation ``a . x + c`` of an exact affine function
#: whose coefficients and point are the floats nearest to exact values (each within
#: 2**-53 relatively; d + 1 products summed): (2 d + 8) 2**-53 covers it; we use at least
#: 1e-13 (see :func:`float_signs`).
def _sign_rel(d: int) -> float:
    return max(1e-13, (2 * d + 8) * 2.0**-52)


def float_signs(A: np.ndarray, c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Signs of the affine functions ``A[i] . x + c[i]`` where floating point decides them:
    +1 / -1 when the float value exceeds the rounding bound ``_sign_rel(d) * (|A| |x| +
    |c|)`` (plus ``2**-1070 (1 + |x|_1)`` for entries that underflowed), 0 when it does not
    (then the caller decides exactly). Valid when every float is within a relative 2**-53 of the
    exact value it stands for (the pow2-scaled rows and centers of the engine; clipped values, at or
    above 1e300, are never trusted)."""
    return float_signs_at(A, c, np.asarray(x, dtype=float).reshape(1, -1))[0][:, 0]


def _motzkin(Sq, sq, y, E, e, mu) -> bool:
    """Whether the multipliers ``y`` (on rows ``Sq x < sq``, all in the support) and ``mu``
    (on ``E x = e``) round to an exact Motzkin certificate of emptiness: the same test as
    :func:`neuromanifold.exact.motzkin_certificate` on rows that are already exact and
    restricted to the support (so without its input checks)."""
    return round_certificate(Sq, sq, E, e, y, mu) is not None


def _square_certificate(Sq: list, sq: list) -> bool | None:
    """Whether ``d + 1`` exact rows ``Sq x < sq`` in R^d, the first d independent, carry a
    Motzkin certificate of emptiness with multiplier 1 on the last row: the unique ``y``
    with ``sum_i y_i Sq[i] = -Sq[d]`` has ``y >= 0`` and ``sum_i y_i sq[i] + sq[d] <= 0``.
    The same test as :func:`_motzkin` when the first d rows are independent (the null
    space is then one-dimensional); ``None`` when they are dependent.

    One exact integer computation: the rows times a common denominator form the integer
    matrix ``N`` (d by d + 1, one column per row), whose null space (fraction-free, in
    flint) is spanned by ``z = z_d (y, 1)``; the signs of ``z`` and of ``sum_i z_i sq[i]``
    decide (about half the cost of a rational solve)."""
    d = len(Sq) - 1
    N, _ = flint.fmpq_mat(d + 1, d, [v for row in Sq for v in row]).transpose().numer_denom()
    X, nullity = N.nullspace()
    if nullity != 1:  # dependent rows: the general rounding decides
        return None
    z = [X[i, 0] for i in range(d + 1)]
    if z[d] == 0:  # the first d rows are dependent
        return None
    if z[d] < 0:
        z = [-v for v in z]
    if any(v < 0 for v in z):
        return False
    tot = _ZERO
    for v, c in zip(z, sq):
        if v != 0:
            tot += v * c
    return tot <= 0


def _finite(x: np.ndarray) -> bool:
    """Whether every entry of the float vector ``x`` is finite."""
    return all(map(math.isfinite, x.tolist()))


def _scaled_system(rows_q, offs_q, eq, d: int, scaled: bool = False):
    """The inequalities (and the equation) each multiplied by the power of two that
    :func:`pow2_floats` uses for its float copy: exactly the same sets. ``scaled``: the
    inequalities are already scaled like their float copies (kept as they are)."""
    Sq, sq = [], []
    if scaled:
        Sq, sq = [list(a) for a in rows_q], list(offs_q)
    for a, c in zip(() if scaled else rows_q, () if scaled else offs_q):
        f = pow2(-pow2_floats(list(a) + [c], d)[1])
        Sq.append([v * f for v in a])
        sq.append(c * f)
    E, e = (), ()
    if eq is not None:
        f = pow2(-pow2_floats(list(eq[0]) + [eq[1]], d)[1])
        E, e = [[v * f for v in eq[0]]], [eq[1] * f]
    return Sq, sq, E, e


def _project(xq, a, c):
    """Exact orthogonal projection of ``xq`` onto ``{x : a . x = c}``."""
    aa = dot(a, a)
    t = (dot(a, xq) - c) / aa
    return [xi - t * ai for xi, ai in zip(xq, a)]


def input_map(d: int) -> flint.fmpq_mat:
    """``[I | 0]`` (d x (d + 1)), the affine map of the input, built in place (fmpq_mat
    starts at zero) rather than converted from d (d + 1) floats: seconds at 784 inputs."""
    ident = flint.fmpq_mat(d, d + 1)
    for i in range(d):
        ident[i, i] = 1
    return ident


def initial_cell(domain: Domain, engine: Engine, nets: Sequence[ExactNet]) -> Cell:
    d = full_dimensional(domain).dim  # the analyses that take such a box run on the others
    rows_q, offs_q, fl = [], [], []
    zero = flint.fmpq(0)
    for row, off in zip(domain.A, domain.c):
        # a box's rows are unit vectors: 1,568 rows of 784 entries at MNIST size, whose
        # zeros need no conversion (it took seconds)
        a = [zero if v == 0 else to_fmpq(float(v)) for v in row.tolist()] + [to_fmpq(float(off))]
        f, e = pow2_floats(a, d)
        scale = _pow2q(-e)
        a = [v * scale if v != 0 else v for v in a]  # stored scaled like the float copy
        rows_q.append(a[:d])
        offs_q.append(a[d])
        fl.append(f)
    rows_f = np.array([f[:d] for f in fl]).reshape(-1, d)
    offs_f = np.array([f[d] for f in fl])
    maps_q = [input_map(d) for _ in nets]
    if rows_q:
        res = engine.decide(rows_q, offs_q, rows_f, offs_f, scaled=True)
        if res is None:  # pragma: no cover - domains are full-dimensional by construction
            raise RuntimeError("the domain has empty interior")
        cf, cq, r = res
    else:
        cf, cq, r = np.zeros(d), [_ZERO] * d, RADIUS_CAP
    return Cell(
        rows_q, offs_q, rows_f, offs_f, [None] * len(rows_q), cf, cq, r, maps_q, [[] for _ in nets]
    )


def _side_row(aq, cq, af, cf, active: bool):
    """The strict inequality ``row . x < off`` saying ``z = a.x + c`` is > 0 (active) or < 0."""
    if active:
        return [-v for v in aq], cq, -af, cf
    return list(aq), -cq, af.copy(), -cf


#: Float magnitudes inside which scaling by a power of two is exact (normal range, with a
#: margin); outside it :func:`pow2_floats` converts entry by entry.
_SAFE_LO, _SAFE_HI = 2.0**-960, 2.0**960


def _pow2_rows(ent: Sequence[flint.fmpq], n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Float copies of the ``n`` augmented rows ``ent`` (row-major, ``d + 1`` per row), each
    row scaled by ``2**-e`` with ``e`` the binary exponent of its largest linear entry (of
    its largest entry when the linear part is zero).

    Every float is the correctly rounded value of the exact scaled entry (``float`` of an
    ``fmpq`` rounds correctly; scaling a normal float by a power of two that keeps it
    normal is exact). Rows with entries near the float range limits are converted by
    :func:`pow2_floats` instead (the same guarantee, entry by entry).

    Returns:
        ``(floats, e)``: shape ``(n, d + 1)`` and the exponents, shape ``(n,)``.
    """
    out = np.zeros((n, d + 1))
    ex = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out, ex
    try:
        F = np.array([float(v) for v in ent]).reshape(n, d + 1)
    except OverflowError:
        F = None
    if F is None:
        rest = range(n)
    else:  # every row at once; the rows that fail a check go entry by entry below
        A = np.abs(F)
        m = A[:, :d].max(axis=1)
        m = np.where(m == 0.0, A.max(axis=1), m)
        pos = A > 0
        ok = (m > 0) & np.all(~pos | ((A > _SAFE_LO) & (A < _SAFE_HI)), axis=1)
        for j, i in zip(*np.nonzero(~pos & ok[:, None])):  # a float 0 must be an exact 0
            if ent[j * (d + 1) + i] != 0:
                ok[j] = False
        e = np.frexp(m)[1].astype(np.int64) - 1
        with np.errstate(over="ignore"):  # rows out of range are not used
            scaled = np.ldexp(F, -e[:, None])
        sz = np.abs(scaled)
        ok &= np.all((sz == 0) | (sz > _SAFE_LO), axis=1)
        out[ok] = scaled[ok]
        ex[ok] = e[ok]
        rest = [
            j
            for j in np.nonzero(~ok)[0].tolist()
            if not (m[j] == 0 and all(v == 0 for v in ent[j * (d + 1) : (j + 1) * (d + 1)]))
        ]
    for j in rest:
        out[j], ex[j] = pow2_floats(ent[j * (d + 1) : (j + 1) * (d + 1)], d)
    return out, ex


_POW2_CACHE: dict = {}


def _pow2q(e: int) -> flint.fmpq:
    """``2**e`` as an fmpq (cached)."""
    v = _POW2_CACHE.get(e)
    if v is None:
        if len(_POW2_CACHE) > 4096:
            _POW2_CACHE.clear()
        v = _POW2_CACHE[e] = pow2(e)
    return v


def float_signs_at(A: np.ndarray, c: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`float_signs` of the affine functions ``A[i] . x + c[i]`` at every row ``x`` of
    ``X`` at once: ``(signs, values)``, both of shape ``(len(A), len(X))``; a sign is 0
    where floating point does not decide it (then the caller decides exactly)."""
    _walk = _kernels()

    return _walk.signs_kernel(
        np.ascontiguousarray(A, dtype=float),
        np.ascontiguousarray(c, dtype=float),
        np.ascontiguousarray(X, dtype=float),
        _sign_rel(X.shape[1]),
    )


def _radius(cell: "Cell", x: np.ndarray) -> float:
    """Float radius of the largest ball around ``x`` inside the cell (capped at
    :data:`RADIUS_CAP`; 0 where rounding makes the point look outside; compiled:
    :func:`neuromanifold.relu._engine.kernels.ball_radius`)."""
    _walk = _kernels()

    return float(
        _walk.ball_radius(
            np.ascontiguousarray(cell.rows_f, dtype=float),
            np.ascontiguousarray(cell.offs_f, dtype=float),
            np.ascontiguousarray(x, dtype=float),
            RADIUS_CAP,
        )
    )


def _ascent(
    A: np.ndarray,
    c: np.ndarray,
    x0: np.ndarray,
    g: np.ndarray,
    target: float,
    max_iter: int,
    trace: list | None = None,
):
    """Maximize ``g . x`` over ``{x : A x <= c}`` (rows of unit length) by an active-set
    walk in floats from ``x0`` (strictly inside), stopping as soon as ``g . x > target``
    (compiled: :func:`neuromanifold.relu._engine.kernels.ascent_kernel`).

    Returns:
        ``("cross", x)``: ``x`` in the closed cell with ``g . x > target`` (float);
        ``("max", W, lam)``: a maximizer at which the rows ``W`` are active with
        ``g = A[W]^T lam``, ``lam >= 0`` and ``g . x <= target`` (the multipliers of an
        emptiness certificate, checked exactly by the caller);
        ``None``: no decision in ``max_iter`` steps (then an LP decides).
        ``trace``, if given, holds the last point reached (``x0`` if the walk did not
        move), whatever the outcome.
    """
    _walk = _kernels()

    code, x, last, W, lam = _walk.ascent_kernel(
        np.ascontiguousarray(A, dtype=float),
        np.ascontiguousarray(c, dtype=float),
        np.ascontiguousarray(x0, dtype=float),
        np.ascontiguousarray(g, dtype=float),
        float(target),
        int(max_iter),
    )
    if trace is not None:
        trace[:] = [last]
    if code == _walk.CROSS:
        return "cross", x
    if code == _walk.MAX:
        return "max", W.tolist(), lam
    return None


def _unit_rows(cell: "Cell") -> tuple:
    """The cell's float rows and offsets divided by the rows' norms, and ``1 / norms``."""
    nrm = np.sqrt(np.einsum("ij,ij->i", cell.rows_f, cell.rows_f))
    inv = 1.0 / nrm
    return cell.rows_f * inv[:, None], cell.offs_f * inv, inv


def refine_stage(cell: Cell, k: int, l: int, net: ExactNet, engine: Engine) -> list[Cell]:
    """Split ``cell`` by the neurons of hidden layer ``l`` of network ``k``."""
    return list(iter_refine_stage(cell, k, l, net, engine))


class _Stage:
    """The rows of one refinement stage of a cell: layer ``l``'s pre-activations at the
    cell's map (exact, and float copies each row scaled by a power of two: exact data
    stay exact, the floats steer the LPs and decide signs only beyond their rounding
    bound), the neurons constant on the cell, and the checks every node of the stage's
    splitting shares."""

    def __init__(self, cell: Cell, k: int, l: int, net: ExactNet, engine: Engine):
        self.engine, self.k, self.l = engine, k, l
        d = self.d = engine.d
        self.Zq = net.Wq[l] * cell.maps_q[k] + net.Baugq[l]
        n = self.n = self.Zq.nrows()
        ent = self.ent = self.Zq.entries()
        self.aq = [ent[j * (d + 1) : j * (d + 1) + d] for j in range(n)]
        self.cq = [ent[j * (d + 1) + d] for j in range(n)]
        self.Zf, self.Ze = _pow2_rows(ent, n, d)
        self.bits0: list[bool | None] = [None] * n
        self.cand0 = []
        zero = cell.zero_preact
        for j in range(n):
            if all(v == 0 for v in self.aq[j]):
                # constant on the cell; exactly 0 counts as inactive
                self.bits0[j] = bool(self.cq[j] > 0)
                zero = zero or self.cq[j] == 0
            else:
                self.cand0.append(j)
        self.cell = cell if zero == cell.zero_preact else cell.evolve(zero_preact=zero)
        self.Znorm = np.sqrt(np.einsum("ij,ij->i", self.Zf[:, :d], self.Zf[:, :d]))
        self._scaled: dict = {}

    def side_row(self, j: int, active: bool):
        """The exact and float rows of the side ``active`` of neuron j, scaled alike."""
        s = self._scaled.get(j)
        if s is None:
            f = _pow2q(-int(self.Ze[j]))
            s = self._scaled[j] = ([v * f for v in self.aq[j]], self.cq[j] * f)
        return _side_row(s[0], s[1], self.Zf[j, : self.d], self.Zf[j, self.d], active)

    def exact_sign(self, j: int, xq) -> int:
        z = dot(self.aq[j], xq) + self.cq[j]
        return (z > 0) - (z < 0)

    def admit(self, geo: Cell, rows, xf: np.ndarray):
        """``xf`` as an exact point if it is strictly inside ``geo`` and the extra
        ``rows`` (exact check when certifying), else None."""
        if not _finite(xf):
            return None
        xq = [float_to_fmpq(v) for v in xf]
        if not self.engine.certify:
            ok = bool(np.all(geo.rows_f @ xf < geo.offs_f)) and all(
                float(r[2] @ xf) < r[3] for r in rows
            )
            return xq if ok else None
        # one float check of the new rows and the cell's rows (xq is exactly xf); the
        # rows it leaves undecided are checked exactly, the new ones first
        sg = float_signs(
            -np.vstack([np.array([r[2] for r in rows]), geo.rows_f]),
            np.concatenate([[r[3] for r in rows], geo.offs_f]),
            xf,
        )
        sg = sg.tolist()
        if -1 in sg:
            return None
        m = len(rows)
        for i in [i for i, v in enumerate(sg) if v == 0]:
            a, c = (rows[i][0], rows[i][1]) if i < m else (geo.rows_q[i - m], geo.offs_q[i - m])
            if not dot(a, xq) < c:
                return None
        return xq

    def decide_side(self, geo: Cell, ra, rc, rfa, rfc):
        """The engine's LP on the side ``(ra, rc)`` of ``geo``: None (empty, certified) or
        a point strictly inside."""
        return self.engine.decide(
            geo.rows_q + [ra],
            geo.offs_q + [rc],
            np.vstack([geo.rows_f, rfa[None, :]]),
            np.append(geo.offs_f, rfc),
            scaled=True,
        )


class _Node:
    """One node of a stage's splitting: the cell ``geo``, its pool of points and the
    candidates' signs at them, and the points found while its candidates are decided
    (:func:`iter_refine_stage`)."""

    def __init__(self, st: _Stage, geo: Cell, cand: list):
        self.st, self.geo, self.cand = st, geo, cand
        d = st.d
        self.Pf, self.Pq, self.Pr = geo.pool()
        self.newf: list = []  # points found at this node: floats, exact, radius in geo
        self.newq: list = []
        self.newr: list = []
        self.news: list = []  # float signs of every candidate at each new point (0: undecided)
        self.crossing: list[int] = []
        self.geo_n = self.slack_n = None
        if cand:
            ci = np.array(cand)
            S, self.Z = float_signs_at(st.Zf[ci, :d], st.Zf[ci, d], self.Pf)
            S = S.tolist()  # lists: a few candidates by a few points
            for t, row in enumerate(S):
                if 0 in row:
                    S[t] = [
                        v if v else st.exact_sign(cand[t], self.Pq[i]) for i, v in enumerate(row)
                    ]
            self.S = S
            self.has_pos = [1 in row for row in S]
            self.has_neg = [-1 in row for row in S]
            self.has_zero = [0 in row for row in S]
            self.Zc = (st.Zf[ci, :d], st.Zf[ci, d])

    def add(self, xf: np.ndarray, xq) -> None:
        """A new point of the node's cell, with the candidates' float signs there."""
        self.newf.append(xf)
        self.newq.append(xq)
        self.news.append(float_signs(self.Zc[0], self.Zc[1], xf))
        self.newr.append(_radius(self.geo, xf))

    def decide(self, t: int, j: int, bits: list, walk) -> None:
        """Candidate ``j`` (the ``t``-th): crossing the cell (into :attr:`crossing`, with
        points on its sides where found), or on one side of it (its bit set)."""
        st, geo = self.st, self.geo
        pos, neg, through = self.has_pos[t], self.has_neg[t], self.has_zero[t]
        for sg, xq in zip(self.news, self.newq):
            s = int(sg[t]) or st.exact_sign(j, xq)
            pos, neg, through = pos or s > 0, neg or s < 0, through or s == 0
        if pos and neg:
            self.crossing.append(j)
            return
        nrm = float(st.Znorm[j])
        unit = st.Zf[j, : st.d] / nrm
        if through:
            # the hyperplane passes through a point strictly inside: it crosses; a step
            # along the normal each way gives the sides their points
            i = self.S[t].index(0) if self.has_zero[t] else None
            if i is not None:
                step = 0.5 * float(self.Pr[i])
                for sgn, want in ((1.0, pos), (-1.0, neg)):
                    if want:
                        continue
                    xf = self.Pf[i] + sgn * step * unit
                    xq = st.admit(geo, [st.side_row(j, sgn > 0)], xf) if step > 0 else None
                    if xq is not None:
                        self.add(xf, xq)
            self.crossing.append(j)
            return
        if self._walk_across(t, j, pos, nrm, unit, bits, walk):
            return
        ra, rc, rfa, rfc = st.side_row(j, not pos)
        res = st.decide_side(geo, ra, rc, rfa, rfc)
        if res is None:
            bits[j] = pos
        else:
            self.add(res[0], res[1])
            self.crossing.append(j)

    def _walk_across(self, t, j, near: bool, nrm: float, unit, bits: list, walk) -> bool:
        """Walk from the pool point with the most room across candidate ``j``'s hyperplane:
        straight along its normal, then along the cell's walls (an active-set ascent in
        floats). Past the hyperplane: a far point (checked exactly; ``j`` crosses). Stuck
        below it: the active walls' multipliers, checked exactly as an emptiness
        certificate (``j``'s bit set). True when either decided it."""
        st, geo = self.st, self.geo
        d = st.d
        ra, rc, rfa, rfc = st.side_row(j, not near)
        dist = np.abs(self.Z[t]) / nrm
        direc = -unit if near else unit
        if self.geo_n is None:
            self.geo_n = _unit_rows(geo)
            self.slack_n = self.geo_n[1][:, None] - self.geo_n[0] @ self.Pf.T  # (rows, points)
        geo_n = self.geo_n
        i = int(walk.best_start(geo_n[0], self.slack_n, direc, dist))
        st.engine.walks += 1
        out = _ascent(geo_n[0], geo_n[1], self.Pf[i], -rfa / nrm, -rfc / nrm, 3 * d + 6)
        if out is not None and out[0] == "cross":
            xb, x0 = out[1], self.Pf[i]
            fb, f0 = float(rfa @ xb - rfc), float(rfa @ x0 - rfc)
            lam = 0.5 * fb / (fb - f0) if fb < 0 and f0 > fb else 0.0
            xf = xb + lam * (x0 - xb)
            xq = st.admit(geo, [(ra, rc, rfa, rfc)], xf) if lam > 0 else None
            if xq is not None:
                self.add(xf, xq)
                self.crossing.append(j)
                return True
        elif out is not None and st.engine.certify:
            W, lamW = out[1], out[2]
            keep = [w for w, v in zip(W, lamW) if v > 0]
            y = [float(v) * geo_n[2][w] for w, v in zip(W, lamW) if v > 0]
            Sq = [geo.rows_q[w] for w in keep] + [ra]
            sq = [geo.offs_q[w] for w in keep] + [rc]
            ok = _square_certificate(Sq, sq) if len(keep) == d else None
            if ok is None and keep:
                ok = _motzkin(Sq, sq, np.array(y + [1.0 / nrm]), (), (), ())
            if ok:
                st.engine.certificates += 1
                st.engine.walk_proofs += 1
                bits[j] = near
                return True
        elif out is not None:  # certify=False: the float walk decides
            bits[j] = near
            return True
        return False

    def children(self, bits: list) -> list:
        """The node's cell split by its first crossing neuron: each nonempty side with the
        pool points on that side (an LP decides a side without one), the side's bit set,
        the other crossing neurons left to decide."""
        st, geo = self.st, self.geo
        Pf, Pq, Pr = self.Pf, self.Pq, self.Pr
        if self.newq:
            Pf = np.vstack([Pf, np.array(self.newf)])
            Pq = Pq + self.newq
            Pr = np.concatenate([Pr, self.newr])
        j, rest = self.crossing[0], self.crossing[1:]
        sv, zj = float_signs_at(st.Zf[j : j + 1, : st.d], st.Zf[j : j + 1, st.d], Pf)
        sv = [v if v else st.exact_sign(j, Pq[i]) for i, v in enumerate(sv[0].tolist())]
        dj = np.abs(zj[0]) / float(st.Znorm[j])
        owner = (st.k, st.l, j)
        out = []
        for side in (True, False):
            ra, rc, rfa, rfc = st.side_row(j, side)
            sel = [i for i, v in enumerate(sv) if (v > 0 if side else v < 0)]
            if sel:
                pts = (Pf[sel], [Pq[i] for i in sel], np.minimum(Pr[sel], dj[sel]))
            else:  # no point on this side (a step was refused): an LP decides
                res = st.decide_side(geo, ra, rc, rfa, rfc)
                if res is None:
                    continue
                pts = (res[0][None, :], [res[1]], np.array([res[2]]))
            best = int(np.argmax(pts[2]))
            child = geo.with_row(
                ra,
                rc,
                rfa,
                rfc,
                owner,
                center_f=pts[0][best],
                center_q=pts[1][best],
                radius=float(pts[2][best]),
                points=pts,
            )
            b = list(bits)
            b[j] = side
            out.append((child, b, rest))
        return out


def iter_refine_stage(cell: Cell, k: int, l: int, net: ExactNet, engine: Engine) -> Iterator[Cell]:
    """The cells of :func:`refine_stage`, one at a time, in the same order (depth first
    over the binary space partition: at most one pending sibling per split level).

    Each cell carries a pool of points certified strictly inside it (``Cell.points``). A
    hyperplane with pool points strictly on both sides crosses the cell (no LP). A
    one-sided hyperplane that passes within a pool point's ball gets a point on its far
    side by a step across it (checked exactly; no LP). Only the remaining one-sided
    hyperplanes need an LP on the far side: empty (certified) fixes the neuron's bit for
    the sub-tree, non-empty adds the LP's point to the pool. A split hands each side the
    pool points on that side, so a split itself never needs an LP.
    """
    walk = _kernels()
    st = _Stage(cell, k, l, net, engine)
    stack = [(st.cell, st.bits0, st.cand0)]
    while stack:
        if engine.deadline is not None and time.monotonic() > engine.deadline:
            raise EngineDeadline()
        geo, bits, cand = stack.pop()
        node = _Node(st, geo, cand)
        for t, j in enumerate(cand):
            node.decide(t, j, bits, walk)
        if not node.crossing:
            yield _leaf(_recenter(geo, engine), bits, st.n, k, st.Zq, st.ent)
            continue
        stack.extend(node.children(bits))


def _center_walk(
    A: np.ndarray, c: np.ndarray, x0: np.ndarray, r0: float, max_iter: int
) -> tuple[np.ndarray, float]:
    """The float walk of :func:`_recenter` (compiled:
    :func:`neuromanifold.relu._engine.kernels.center_kernel`): the point reached from ``x0`` and the
    float radius of its ball in ``{x : A x <= c}``. A proposal only: the point is kept
    when it passes the exact check."""
    _walk = _kernels()

    x, r = _walk.center_kernel(
        np.ascontiguousarray(A, dtype=float),
        np.ascontiguousarray(c, dtype=float),
        np.ascontiguousarray(x0, dtype=float),
        float(r0),
        RADIUS_CAP,
        int(max_iter),
    )
    return x, float(r)


def _recenter(geo: Cell, engine: Engine) -> Cell:
    """``geo`` with a deeper center: a float walk from its best pool point towards the
    Chebyshev centre (the largest inscribed ball; at most ``d + 3`` steps of
    :func:`_ascent` on ``max r : a_i . x + |a_i| r <= c_i, r <= RADIUS_CAP``, compiled as
    :func:`neuromanifold.relu._engine.kernels.center_kernel`). The point reached is kept (and
    pooled) when its ball is larger and it passes the exact check."""
    d = engine.d
    k = geo.rows_f.shape[0]
    Pf, Pq, Pr = geo.pool()
    i = int(np.argmax(Pr))
    r0 = float(Pr[i])
    if k == 0 or not 0 < r0 < RADIUS_CAP:
        return geo
    x, r = _center_walk(geo.rows_f, geo.offs_f, Pf[i], r0, d + 3)
    if not (r > r0 * (1.0 + 1e-6) and _finite(x)):
        return geo
    xq = [float_to_fmpq(v) for v in x]
    if engine.certify and not engine._inside(
        geo.rows_q, geo.offs_q, xq, geo.rows_f, geo.offs_f, xf=x
    ):
        return geo
    pts = (_append_row(Pf, x), Pq + [xq], _append_row(Pr, r))
    return geo.evolve(center_f=x, center_q=xq, radius=r, points=pts)


def _leaf(geo: Cell, bits: list, n: int, k: int, Zq, ent: list | None = None) -> Cell:
    """The cell ``geo`` with the layer's pattern ``bits`` and its exact map appended: ``Zq``
    with the rows of the inactive neurons set to zero (``ent``: the entries of ``Zq``, row
    major, when the caller has them). The fewer rows are written: the inactive ones to 0
    in a copy of ``Zq``, or the active ones into a zero matrix (setting entries of a flint
    matrix is some three times cheaper than building it from the list of its entries)."""
    mask = np.array(bits, dtype=bool)
    w = Zq.ncols()
    on = [i for i, b in enumerate(bits) if b]
    if ent is not None and 2 * len(on) < n:
        M = flint.fmpq_mat(n, w)
        for i in on:
            for c in range(w):
                M[i, c] = ent[i * w + c]
    else:
        M = flint.fmpq_mat(Zq)
        for i in [i for i, b in enumerate(bits) if not b]:
            for c in range(w):
                M[i, c] = _ZERO
    maps_q = list(geo.maps_q)
    maps_q[k] = M
    patterns = [list(p) for p in geo.patterns]
    patterns[k].append(mask)
    return geo.evolve(maps_q=maps_q, patterns=patterns)


def thickness(cell: Cell, d: int) -> float:
    """Largest ``r`` such that the cell contains a ball of radius ``r * max(1, ||x||_inf)``
    around some ``x`` (homogenized: a ball of radius r around y in ``{a.y <= c s}``,
    ``|y| <= 1``, ``0 <= s <= 1``); 1.0 when the LP cannot tell (the cell is kept)."""
    k = cell.rows_f.shape[0]
    if k == 0:
        return 1.0
    A = np.zeros((k, d + 2))
    A[:, :d] = cell.rows_f
    A[:, d] = -cell.offs_f
    A[:, d + 1] = np.linalg.norm(cell.rows_f, axis=1)
    c = np.zeros(d + 2)
    c[d + 1] = -1.0
    lb = np.concatenate([np.full(d, -1.0), [0.0, 0.0]])
    ub = np.ones(d + 2)
    sol = solve_lp(c, A, np.zeros(k), lb=lb, ub=ub)
    if sol.status != "optimal":  # pragma: no cover - the cell is full-dimensional
        return 1.0
    return float(sol.x[d + 1])


def iter_cells(
    nets: Sequence[ExactNet], domain: Domain, engine: Engine, counts: list[int] | None = None
) -> Iterator[Cell]:
    """The full-dimensional cells of the joint pattern refinement of ``nets`` on ``domain``,
    one at a time, depth first over the layer-by-layer split tree.

    Nothing is kept of a finished sub-tree: the memory is that of one path of the tree (at
    most one pending sibling per split level). The cells come in the order of
    :func:`enumerate_cells` (which refines breadth first: both orders are the
    lexicographic order of (first-stage leaf, second-stage leaf, ...)), with the same
    decisions.

    Args:
        counts: if given, a list that receives the number of cells reached after each
            stage so far (the final counts once the iterator is exhausted).
    """
    stages = stages_of(nets)
    if counts is not None:
        counts[:] = [0] * len(stages)
    root = initial_cell(domain, engine, nets)
    if not stages:
        yield root
        return
    yield from iter_subtree(root, 0, nets, engine, counts)


def stages_of(nets: Sequence[ExactNet]) -> list[tuple[int, int]]:
    """The refinement stages ``(network, hidden layer)``, in the order they are processed."""
    return [(k, l) for k, net in enumerate(nets) for l in net.hidden_layers]


def iter_subtree(
    cell: Cell, s: int, nets: Sequence[ExactNet], engine: Engine, counts: list[int] | None = None
) -> Iterator[Cell]:
    """The final cells below ``cell``, a cell that has gone through the stages before
    stage ``s``: stage ``s`` splits it, then every later stage splits each piece, depth
    first (see :func:`iter_cells`). ``counts[t]`` is incremented for each cell reached
    after stage ``t``."""
    stages = stages_of(nets)

    def walk(cell: Cell, s: int) -> Iterator[Cell]:
        k, l = stages[s]
        for child in iter_refine_stage(cell, k, l, nets[k], engine):
            if counts is not None:
                counts[s] += 1
            if s + 1 == len(stages):
                child.points = None  # the pool only serves the refinement
                yield child
            else:
                yield from walk(child, s + 1)

    yield from walk(cell, s)


def enumerate_cells(
    nets: Sequence[ExactNet],
    domain: Domain,
    engine: Engine,
    progress: bool = False,
    desc: str = "regions",
) -> tuple[list[Cell], list[int]]:
    """All full-dimensional cells of the joint pattern refinement of ``nets`` on ``domain``.

    Returns:
        ``(cells, counts)``: the cells (with every hidden layer of every network processed)
        and the number of cells after each stage.
    """
    counts: list[int] = []
    cells = []
    bar = None
    if progress:
        bar = progress_bar(desc=desc, unit="cell", leave=False)
    for cell in iter_cells(nets, domain, engine, counts):
        cells.append(cell)
        if bar is not None:
            bar.update(1)
            if len(cells) % 64 == 1:
                bar.set_postfix(lps=engine.counter.count, refresh=False)
    if bar is not None:
        bar.close()
    return cells, counts


def output_map(cell: Cell, k: int, net: ExactNet) -> flint.fmpq_mat:
    """Exact augmented output map ``[linear | offset]`` of network k on the cell."""
    L = net.num_layers - 1
    return net.Wq[L] * cell.maps_q[k] + net.Baugq[L]


def layer_maps(net: ExactNet, patterns: Sequence[np.ndarray]) -> list[flint.fmpq_mat]:
    """Exact augmented pre-activation maps ``Z_l = [linear | offset]`` of every layer
    (hidden layers, then the output layer) on a cell with the given patterns. The input
    map ``[I | 0]`` is built once per network (it was a tenth of the time of
    ``bent_hyperplanes``)."""
    H = net._input_map
    if H is None:
        d = net.d
        H = net._input_map = input_map(d)
    out = []
    for l in range(net.num_layers):
        Z = net.Wq[l] * H + net.Baugq[l]
        out.append(Z)
        if l < net.num_layers - 1:
            mask = patterns[l]
            n = len(mask)
            D = flint.fmpq_mat(n, n)
            for i in range(n):
                if mask[i]:
                    D[i, i] = _ONE
            H = D * Z
    return out
