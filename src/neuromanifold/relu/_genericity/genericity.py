"""Genericity of ReLU network parameters (docs/concepts_relu.md §3): supertransversality and maximal
rank of masked products, each failure reported with what failed.

The precise definitions (written out in ``docs/relu_arrangement.md``):

* **Supertransversality.** (S0) no hidden neuron has an all-zero weight row. (S1) The
  first-layer hyperplanes that meet the (closed) domain D, together with the facets of D,
  are in general position: any k <= d of them containing at least one neuron hyperplane
  have linearly independent normals, and any d + 1 of them have no common point in D.
  (S2) For layers >= 2 the condition is local: on the closure of every linear region R,
  every hidden neuron's pre-activation is affine, and its zero set there is that neuron's
  *piece* in R. Any k pieces (of any layers, and facets of D) with at least one piece of
  layer >= 2 whose common intersection meets the closed region must have linearly
  independent normals (so they meet in codimension k, and k <= d); in particular d + 1 of
  them never share a point of R's closure, and a piece never coincides with another. A
  deep neuron whose pre-activation is identically zero on a region is a failure too.
* **Maximal rank of masked products.** For every activation pattern (D_1, ..., D_{L-1})
  occurring on a region of D and all 1 <= a <= b <= L, the masked product
  ``D_b W_b D_{b-1} ... D_a W_a`` (``D_L = I``) has rank
  ``min(n_{a-1}, |D_a|, ..., |D_b|)`` (``|D|`` = number of active neurons), the rank of a
  product of generic matrices with those masks.

With ``tol = 0`` all ranks and intersection points are exact (python-flint); regions come
from the exact region engine (:func:`neuromanifold.relu.regions`). With ``tol > 0``
(``docs/relu.md``, "Tolerances") two decisions are made at that relative tolerance:
the masked products' ranks (:func:`neuromanifold._tolerance.numerical_rank` of the product
scaled exactly by powers of two, columns normalized), and whether at most d first-layer
normals (S1) are dependent (numerical rank of the unit normals). Every rank decided at
``tol`` reports its gap (smallest singular value counted, largest dropped); intersection
points (common points, S2) stay exact.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol, numerical_rank
from ..._validation import check_bool
from ...exact import rational_rank
from ...exact._library import dot, round_certificate
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain, as_domain
from .._core.live import refuse_conv
from .._core.net import check_params
from .._core.numbers import (
    binary_exponent,
    exact_layers,
    exact_value,
    fraction_to_fmpq,
    open_range,
    pow2,
)
from .._engine.budget import Budget
from .._engine.cells import ExactNet, pow2_floats
from .._engine.lp import solve_lp

__all__ = ["GenericityFailure", "Genericity", "genericity"]

_ZERO = Fraction(0)
#: smallest singular value (rows normalized) above which a family is independent without
#: an exact check; float errors are ~1e-15 here, so this never misjudges.
_SV_TOL = 1e-7
#: families examined per batch (bounded memory however many there are)
_CHUNK = 1 << 15
#: relative slack above which a piece is tested for missing a region's closure (below
#: it, the piece is kept: it meets the closure or nearly)
_APART = 1e-9


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class GenericityFailure(Result):
    """One violated genericity condition.

    Attributes:
        condition: ``"S0"`` (zero weight row), ``"S1"`` (first-layer general position),
            ``"S2"`` (pieces in a region), or ``"rank"`` (masked product).
        kind: ``"zero row"``, ``"dependent normals"``, ``"common point"``,
            ``"degenerate piece"`` or ``"rank deficient"``.
        elements: labels of the hyperplanes / pieces / facets involved (``"neuron
            (l, j)"`` 1-based), or of the product (``"D2 W2 D1 W1"``).
        pattern: the activation pattern of the region (tuple of 0/1 tuples per hidden
            layer) for region-based failures, else ``None``.
        layers: ``(a, b)`` of a masked product, else ``None``.
        measured: the rank found (or of the normals).
        expected: the rank required.
        point: an exact common point (Fractions), when there is one.
        certified: decided in exact arithmetic.
        message: the failure in words.
        smallest_counted, largest_dropped: for a rank decided at ``tol > 0``, the gap: the
            smallest singular value counted and the largest one dropped (relative to the
            largest); ``None`` otherwise.
    """

    condition: str
    kind: str
    elements: tuple
    pattern: tuple | None
    layers: tuple | None
    measured: int | None
    expected: int | None
    point: tuple | None
    certified: bool
    message: str
    smallest_counted: float | None = None
    largest_dropped: float | None = None


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Genericity(Result):
    """Genericity report of a ReLU network on a domain (see the module docstring).

    Attributes:
        generic: supertransversal and of maximal rank.
        supertransversal: conditions S0, S1, S2 hold.
        maximal_rank: every masked product on every region has maximal rank.
        failures: :class:`GenericityFailure` list (empty when generic).
        num_regions: regions of the domain examined.
        num_subsets: families of hyperplanes/pieces examined.
        num_products: distinct masked products examined.
        domain: the domain.
        certified: the verdict is exact (exact ranks and points, certified regions). A rank
            found full at ``tol`` is full exactly (its smallest singular value is far above
            rounding), so only failures decided at ``tol`` are not certified.
        method: how it was decided.
        tol: the relative tolerance used (0.0 = exact).
        smallest_counted: the smallest singular value counted by any rank decided at
            ``tol`` (relative; ``None`` if none), and ``largest_dropped`` the largest one
            dropped: close to ``tol``, the verdict is fragile.
        complete: everything was examined. False only for the ``partial`` report of a
            :class:`~neuromanifold.ComputationLimitError`: its failures are real, but
            ``generic``, ``supertransversal`` and ``maximal_rank`` then only say that no
            failure was found in what was examined (and ``certified`` is False).
    """

    generic: bool
    supertransversal: bool
    maximal_rank: bool
    failures: tuple
    num_regions: int
    num_subsets: int
    num_products: int
    domain: Domain
    certified: bool
    method: str
    tol: float = 0.0
    smallest_counted: float | None = None
    largest_dropped: float | None = None
    complete: bool = True

    def describe(self) -> str:
        """A readable multi-line description of the verdict and of every failure."""
        head = (
            f"generic={self.generic} (supertransversal={self.supertransversal}, "
            f"maximal_rank={self.maximal_rank}); {self.num_regions} regions, "
            f"{self.num_subsets} families, {self.num_products} masked products"
        )
        if not self.complete:
            head = "INCOMPLETE (stopped by a budget): " + head
        return "\n".join([head] + ["  " + f.message for f in self.failures])


# ---------------------------------------------------------------------------------------


def _facets(dom: Domain) -> list[tuple[str, list[Fraction], Fraction]]:
    out = []
    for i, (row, c) in enumerate(zip(dom.A, dom.c)):
        # a box's rows are unit vectors: their zeros need no conversion (seconds at 784)
        a = [_ZERO if v == 0 else exact_value(v) for v in row.tolist()]
        cc = exact_value(float(c))
        nz = [k for k, v in enumerate(row) if v != 0]
        if dom.kind in ("orthant", "box") and len(nz) == 1:
            k = nz[0]
            lab = (
                f"facet x_{k + 1} <= {float(cc / a[k]):g}"
                if a[k] > 0
                else f"facet x_{k + 1} >= {float(cc / a[k]):g}"
            )
        else:
            lab = f"facet {i + 1} of the domain"
        out.append((lab, a, cc))
    return out


def _in_closed(point: list[Fraction], rows: list, offs: list) -> bool:
    for a, c in zip(rows, offs):
        if sum((x * y for x, y in zip(a, point) if x and y), _ZERO) > c:
            return False
    return True


def _solve_point(N: list[list[Fraction]], c: list[Fraction], d: int) -> list[Fraction] | None:
    """The unique solution of ``N x = c`` when ``rank N = d`` (N has >= d rows), else None."""
    idx: list[int] = []
    for i in range(len(N)):
        if rational_rank([N[k] for k in idx + [i]], d) > len(idx):
            idx.append(i)
        if len(idx) == d:
            break
    if len(idx) < d:
        return None
    A = flint.fmpq_mat(d, d)
    B = flint.fmpq_mat(d, 1)
    for r, i in enumerate(idx):
        for j in range(d):
            A[r, j] = fraction_to_fmpq(N[i][j])
        B[r, 0] = fraction_to_fmpq(c[i])
    X = A.solve(B)
    return [Fraction(int(X[j, 0].p), int(X[j, 0].q)) for j in range(d)]


def _independent_float(rows: np.ndarray) -> bool:
    """True when the rows are certainly independent (normalized smallest singular value
    well above float error); False means "check exactly"."""
    nrm = np.linalg.norm(rows, axis=1, keepdims=True)
    if np.any(nrm == 0):
        return False
    sv = np.linalg.svd(rows / nrm, compute_uv=False)
    return bool(sv[-1] > _SV_TOL) if rows.shape[0] <= rows.shape[1] else False


def _batch_independent(rows: np.ndarray, subsets: np.ndarray, thr: float = _SV_TOL) -> np.ndarray:
    """Vectorized :func:`_independent_float` over index subsets (shape (s, k))."""
    if subsets.size == 0:
        return np.zeros(0, dtype=bool)
    nrm = np.linalg.norm(rows, axis=1, keepdims=True)
    safe = np.where(nrm == 0, 1.0, nrm)
    R = (rows / safe)[subsets]
    if R.shape[1] > R.shape[2]:
        return np.zeros(len(subsets), dtype=bool)
    sv = np.linalg.svd(R, compute_uv=False)
    ok = sv[:, -1] > thr
    ok &= ~np.any(nrm[subsets][..., 0] == 0, axis=1)
    return ok


def _axis_pairs(elems: list, facet_idx: list) -> list | None:
    """The minimal dependent families among the facets ``facet_idx`` when every facet's
    normal lies on a coordinate axis (a box, an orthant): the pairs on one axis, since
    normals on distinct axes are independent. ``None`` for other facets. Enumerating the
    subsets of 1,568 facets at 784 inputs instead did not end."""
    axes = [[j for j, v in enumerate(elems[i][1]) if v != 0] for i in facet_idx]
    if not all(len(a) == 1 for a in axes):
        return None
    on_axis: dict = {}
    for i, a in zip(facet_idx, axes):
        on_axis.setdefault(a[0], []).append(i)
    return [frozenset(S) for idx in on_axis.values() for S in itertools.combinations(idx, 2)]


def _contains_blocked(S: tuple, pairs: set, others: list) -> bool:
    """Whether the family ``S`` contains a blocked family: one of the blocked ``pairs``
    (the opposite facets of a box, 784 of them at MNIST size: looked up among the pairs of
    ``S`` rather than tested one by one) or of the larger ``others``."""
    if pairs and any(frozenset(c) in pairs for c in itertools.combinations(S, 2)):
        return True
    fs = frozenset(S)
    return any(B <= fs for B in others)


def _lp_meets(N: list, c: list, rows: list, offs: list, d: int) -> tuple[bool, list | None]:
    """Whether ``{N x = c}`` meets ``{rows x <= offs}`` (LP with a small slack), and an
    exact point of the intersection if one could be certified."""
    from scipy.optimize import linprog  # start-up: a slow import

    # rows vanishing identically on {N x = c} hold with equality there: leave them out of
    # the slack maximization (else the optimal slack is 0 and the point is not central)
    NA = [list(n) + [cc] for n, cc in zip(N, c)]
    rNA = rational_rank(NA, d + 1)
    keep = [
        i
        for i, (a, o) in enumerate(zip(rows, offs))
        if rational_rank(NA + [list(a) + [o]], d + 1) > rNA
    ]
    rows_all, offs_all = rows, offs
    rows, offs = [rows[i] for i in keep], [offs[i] for i in keep]
    Nf = np.array([[float(v) for v in r] for r in N])
    cf = np.array([float(v) for v in c])
    Af = np.array([[float(v) for v in r] for r in rows]).reshape(-1, d)
    bf = np.array([float(v) for v in offs])
    if len(rows):
        # maximize the smallest slack t (capped at 1) so that the point is deep inside
        nr = np.linalg.norm(Af, axis=1)
        nr[nr == 0] = 1.0
        A_ub = np.hstack([Af, nr[:, None]])
        A_eq = np.hstack([Nf, np.zeros((Nf.shape[0], 1))])
        res = linprog(
            np.append(np.zeros(d), -1.0),
            A_ub=A_ub,
            b_ub=bf,
            A_eq=A_eq,
            b_eq=cf,
            bounds=[(None, None)] * d + [(None, 1.0)],
            method="highs",
        )
        if res.status != 0 or res.x[d] < -1e-9 * (1.0 + np.abs(bf).max(initial=0.0)):
            return False, None
        res_x = res.x[:d]
    else:
        res = linprog(np.zeros(d), A_eq=Nf, b_eq=cf, bounds=[(None, None)] * d, method="highs")
        if res.status != 0:
            return False, None
        res_x = res.x
    x = [exact_value(float(v)) for v in res_x]
    xp = _project(x, N, c, d)
    if _in_closed(xp, rows_all, offs_all):
        return True, xp
    # touching only on the boundary: add the constraints tight at the LP point as
    # equations and project again (exactly)
    if len(rows):
        slack = (bf - Af @ res_x) / np.linalg.norm(Af, axis=1).clip(min=1e-300)
        tight = [i for i in range(len(rows)) if slack[i] < 1e-7]
        N2 = list(N) + [rows[i] for i in tight]
        c2 = list(c) + [offs[i] for i in tight]
        if rational_rank([list(n) + [cc] for n, cc in zip(N2, c2)], d + 1) == rational_rank(N2, d):
            xp = _project(x, N2, c2, d)
            if _in_closed(xp, rows_all, offs_all):
                return True, xp
    return True, None


def _project(x: list, N: list, c: list, d: int) -> list:
    """Exact orthogonal projection of ``x`` onto the (nonempty) ``{N y = c}``."""
    basis_idx: list[int] = []
    for i in range(len(N)):
        if rational_rank([N[k] for k in basis_idx + [i]], d) > len(basis_idx):
            basis_idx.append(i)
    Nb = [N[i] for i in basis_idx]
    k = len(Nb)
    G = flint.fmpq_mat(k, k)
    r = flint.fmpq_mat(k, 1)
    for i in range(k):
        for j in range(k):
            G[i, j] = fraction_to_fmpq(sum((a * b for a, b in zip(Nb[i], Nb[j])), _ZERO))
        r[i, 0] = fraction_to_fmpq(c[basis_idx[i]] - sum((a * b for a, b in zip(Nb[i], x)), _ZERO))
    y = G.solve(r)
    yy = [Fraction(int(y[i, 0].p), int(y[i, 0].q)) for i in range(k)]
    return [x[j] + sum((yy[i] * Nb[i][j] for i in range(k)), _ZERO) for j in range(d)]


class _Checker:
    """Examines families of hyperplanes ``{normal . x = off}`` within a closed polyhedron."""

    def __init__(self, d: int, tol: float = 0.0):
        self.d = d
        self.tol = tol
        self.gaps: list = []  # (smallest counted, largest dropped) of ranks decided at tol
        self.fail_gaps: dict = {}
        self.count = 0
        self.uncertain = False  # some "does not meet" rested on a float LP
        #: called before each chunk of families (the budget's clock)
        self.check = None

    def families(self, elems: list, sizes, must, rows, offs, strong: bool):
        """Minimal failing families among ``elems`` (label, normal, offset, layer) of the
        given sizes containing at least one index for which ``must`` is True.

        ``strong`` (condition S1): any family of size <= d with dependent normals fails,
        whether or not it meets the region. Otherwise (S2) only families whose common
        intersection meets ``{rows x <= offs}`` and whose normals are dependent fail.
        Returns a list of ``(indices, kind, rank, expected, point, certified)``.
        """
        d = self.d
        if not elems:
            return []
        Nf = np.array([[float(v) for v in e[1]] for e in elems])
        Af = np.hstack([Nf, np.array([[float(e[2])] for e in elems])])
        fails: list = []
        blocked: list[frozenset] = []  # failing or facet-only dependent families
        # facet-only dependent families (e.g. opposite facets of a box) never fail
        facet_idx = [i for i, e in enumerate(elems) if e[3] == 0]
        axis_pairs = _axis_pairs(elems, facet_idx)
        if axis_pairs is not None:
            blocked, facet_idx = axis_pairs, []
        for k in range(2, min(d + 1, len(facet_idx)) + 1):
            subs = [
                S
                for S in itertools.combinations(facet_idx, k)
                if not any(B <= frozenset(S) for B in blocked)
            ]
            if self.check is not None:
                self.check()
            # certainly independent in floats: no exact rank needed
            sure = _batch_independent(Nf, np.array(subs, dtype=int).reshape(len(subs), k))
            for S, ok in zip(subs, sure):
                if not ok and rational_rank([elems[i][1] for i in S], d) < k:
                    blocked.append(frozenset(S))
        for k in sizes:
            if k > len(elems):
                continue
            combos = itertools.combinations(range(len(elems)), k)
            while True:
                # in chunks: the families of 48 elements of size 9 alone are 1.7e9
                raw = list(itertools.islice(combos, _CHUNK))
                if not raw:
                    break
                if self.check is not None:
                    self.check()
                pairs = {B for B in blocked if len(B) == 2}
                others = [B for B in blocked if len(B) != 2]
                subs = [
                    S
                    for S in raw
                    if any(must[i] for i in S) and not _contains_blocked(S, pairs, others)
                ]
                if subs:
                    self.count += len(subs)
                    self._chunk(
                        subs,
                        k,
                        elems,
                        Nf,
                        Af=Af,
                        strong=strong,
                        fails=fails,
                        blocked=blocked,
                        rows=rows,
                        offs=offs,
                    )
        return fails

    def _chunk(self, subs, k, elems, Nf, *, Af, strong, fails, blocked, rows, offs):
        """Examine the families ``subs`` of size ``k`` (see :meth:`families`)."""
        d = self.d
        arr = np.array(subs, dtype=int)
        if strong and k <= d:
            ok = _batch_independent(Nf, arr, max(_SV_TOL, 2.0 * k * self.tol))
        else:
            ok = _batch_independent(Af, arr)  # augmented rows independent: fine
        for S, good in zip(subs, ok):
            if good:
                continue
            N = [elems[i][1] for i in S]
            c = [elems[i][2] for i in S]
            rN = rational_rank(N, d)
            if strong and k <= d:
                cert = True
                if rN == k and self.tol > 0:  # independent, but perhaps only by rounding
                    unit = np.array([pow2_floats([fraction_to_fmpq(x) for x in n])[0] for n in N]).T
                    rN, small, dropped = numerical_rank(unit, self.tol)
                    self.gaps.append((small, dropped))
                    self.fail_gaps[frozenset(S)] = (small, dropped)
                    cert = False
                if rN < k:
                    fails.append((S, "dependent normals", rN, k, None, cert))
                    blocked.append(frozenset(S))
                continue
            rA = rational_rank([list(n) + [cc] for n, cc in zip(N, c)], d + 1)
            if rA > rN:
                continue  # no common point
            if rN == k:
                continue  # independent normals: codimension k
            if rN == d:
                x = _solve_point(N, c, d)
                if x is not None and _in_closed(x, rows, offs):
                    fails.append((S, "common point", rN, min(k, d), tuple(x), True))
                    blocked.append(frozenset(S))
                continue
            meets, x = _lp_meets(N, c, rows, offs, d)
            if not meets:
                self.uncertain = True
            if meets:
                fails.append(
                    (S, "dependent normals", rN, k, None if x is None else tuple(x), x is not None)
                )
                blocked.append(frozenset(S))


def _touching(pieces: list, sides: list, cell, d: int, counter) -> list:
    """The pieces ``(label, normal, offset, layer)`` (hyperplanes ``normal . x = offset``)
    that may meet the closure of the region ``cell`` (an engine cell: its rows, exact and
    as floats scaled by powers of two, cut out the region); ``sides[i]`` is the sign ``s``
    with ``s (normal . x - offset) <= 0`` on the region.

    A piece is left out only when an LP finds ``max s (normal . x - offset) < 0`` over the
    closure by a clear margin and the LP's multipliers round to an exact Farkas
    certificate that ``{rows x <= offs, s normal . x >= s offset}`` is empty. Families of
    pieces that meet in the closure consist of pieces that meet it, so leaving out the
    others changes no verdict; for a generic network only the region's facets remain."""
    if not len(cell.rows_q) or not pieces:
        return pieces
    A, b = cell.rows_f, cell.offs_f
    scaled: dict = {}

    def row(i):  # the exact row i scaled like its float copy
        if i not in scaled:
            a, c = cell.rows_q[i], cell.offs_q[i]
            f = pow2(-pow2_floats(list(a) + [c], d)[1])
            scaled[i] = ([v * f for v in a], c * f)
        return scaled[i]

    out = []
    for piece, sign in zip(pieces, sides):
        # g . x <= g0 on the region, with (g, g0) = s (normal, offset), scaled by 2**-e
        g_q = [sign * fraction_to_fmpq(v) for v in piece[1]] + [sign * fraction_to_fmpq(piece[2])]
        gf, e = pow2_floats(g_q, d)
        sol = solve_lp(-gf[:d], A, b, counter=counter)
        if sol.status == "optimal":
            value = -sol.fun - gf[d]  # max g . x - g0 over the closure (scaled)
            size = float(np.abs(gf).sum()) * (1.0 + float(np.abs(sol.x).max(initial=0.0)))
            y = -np.asarray(sol.dual_ub, float)
            ymax = float(y.max(initial=0.0))
            if value < -_APART * size and ymax > 0:
                sup = np.nonzero(y > 1e-9 * ymax)[0]
                f = pow2(-e)
                # Farkas: sum y_i S_i x <= y . s and -g x <= -g0 (multiplier 1) sum to
                # 0 <= y . s - g0 < 0
                c_rows = [row(i)[1] for i in sup] + [-g_q[d] * f]
                cert = round_certificate(
                    [row(i)[0] for i in sup] + [[-v * f for v in g_q[:d]]],
                    c_rows,
                    (),
                    (),
                    list(y[sup]) + [1.0],
                    (),
                )
                if cert is not None and dot(cert[0], c_rows) < 0:
                    continue  # certified: the closure lies strictly on one side
        out.append(piece)
    return out


def _g(v) -> str:
    return "none" if v is None else f"{v:.3g}"


def _scaled_matrix(P: flint.fmpq_mat) -> np.ndarray:
    """Floats of an exact matrix with columns, then rows, scaled by powers of two (exact:
    the same rank, no under- or overflow, invariant under neuron rescalings by powers of
    two)."""
    rows = [[P[i, j] for j in range(P.ncols())] for i in range(P.nrows())]
    col_e = []
    for j in range(P.ncols()):
        ex = [binary_exponent(r[j]) for r in rows if r[j] != 0]
        col_e.append(max(ex) if ex else 0)
    f = [flint.fmpq(1, 2**e) if e >= 0 else flint.fmpq(2**-e) for e in col_e]
    return np.array([pow2_floats([v * f[j] for j, v in enumerate(r)])[0] for r in rows]).reshape(
        P.nrows(), P.ncols()
    )


def _pattern_key(pattern) -> tuple:
    return tuple(tuple(int(v) for v in np.asarray(p, dtype=bool)) for p in pattern)


def _exact_preacts(Wq, bq, pattern, d):
    """Exact ``(alpha, beta)`` of every hidden neuron on the region with ``pattern``:
    list over hidden layers of lists of (alpha (list of d Fractions), beta)."""
    H = flint.fmpq_mat(d, d + 1)
    for i in range(d):
        H[i, i] = 1
    out = []
    for l, mask in enumerate(pattern):
        Z = Wq[l] * H
        rows = []
        for j in range(Z.nrows()):
            alpha = [Fraction(int(Z[j, i].p), int(Z[j, i].q)) for i in range(d)]
            beta = Fraction(int(Z[j, d].p), int(Z[j, d].q)) + bq[l][j]
            rows.append((alpha, beta))
        out.append(rows)
        n = Z.nrows()
        Hn = flint.fmpq_mat(n, d + 1)
        for j in range(n):
            if mask[j]:
                for i in range(d):
                    Hn[j, i] = Z[j, i]
                Hn[j, d] = Z[j, d] + fraction_to_fmpq(bq[l][j])
        H = Hn
    return out


def genericity(
    params: Any,
    domain: Any = None,
    *,
    tol: Any = DEFAULT_TOL,
    progress: bool = False,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> Genericity:
    """Check the genericity conditions of docs/concepts_relu.md §3 (definitions in the module
    docstring).

    Args:
        params: list of ``(W, b)`` pairs (any depth).
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        tol: relative tolerance of the rank decisions (see the module docstring); ``0`` =
            exact.
        progress: a progress bar on stderr counting regions and LPs.
        max_regions: stop with a :class:`~neuromanifold.ComputationLimitError` when the
            domain has more regions than this.
        time_limit: stop with a :class:`~neuromanifold.ComputationLimitError` after this
            many seconds (the whole analysis). The error's ``partial`` is the
            :class:`Genericity` report of what was examined (``complete=False``); its
            ``num_regions``, ``num_lps`` and ``elapsed`` say how far it got.

    The families of condition S1 are examined in batches (memory bounded however many
    there are: ``C(n + 2d, d + 1)`` with n first-layer neurons and a box); for S2 only the
    pieces that meet the region's closure take part (a piece is left out when an exact
    Farkas certificate, rounded from an LP's multipliers, shows it misses the closure).

    Returns:
        A :class:`Genericity` report with ``.generic``, ``.supertransversal``,
        ``.maximal_rank`` and ``.failures``.

    >>> W1 = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    >>> genericity([(W1, [-1.0, -1.0, -2.0]), ([[1.0, 1.0, 1.0]], [0.0])]).failures[0].kind
    'common point'
    """
    # Whole: report() and the budget's partial close over the failures, checker and products
    refuse_conv(params, "genericity")
    tol = check_tol(tol)
    progress = check_bool(progress, "progress")
    layers, exact = exact_layers(params)
    # the tolerance is relative to the network's scale, which must be a float (weights
    # near the float maximum overflowed deep inside, as an OverflowError)
    path_norm_scale(check_params(params))
    d = layers[0][0].shape[1]
    dom = as_domain(domain, d)
    L = len(layers)
    widths = (d,) + tuple(W.shape[0] for W, _ in layers)
    budget = Budget(
        "genericity", d, max_regions=max_regions, time_limit=time_limit, progress=progress
    )
    failures: list[GenericityFailure] = []
    checker = _Checker(d, tol)
    certified = True
    products: dict = {}

    def report(complete: bool) -> Genericity:
        st = not any(f.condition in ("S0", "S1", "S2") for f in failures)
        mr = not any(f.condition == "rank" for f in failures)
        cert = certified and not checker.uncertain and complete
        if failures:
            cert = any(f.certified for f in failures)
        counted = [g[0] for g in checker.gaps if g[0] is not None]
        dropped = [g[1] for g in checker.gaps if g[1] is not None]
        return Genericity(
            generic=st and mr,
            supertransversal=st,
            maximal_rank=mr,
            failures=tuple(failures),
            num_regions=budget.num_regions,
            num_subsets=checker.count,
            num_products=len(products),
            domain=dom,
            certified=bool(cert),
            method=(
                "exact ranks and points (python-flint) over the certified regions"
                if tol == 0
                else f"ranks at tol={tol:g} (numerical, with their gaps), "
                "exact points, over the certified regions"
            )
            + (
                ""
                if complete
                else "; INCOMPLETE: stopped by a budget (only the failures found so far are listed)"
            ),
            tol=tol,
            smallest_counted=min(counted) if counted else None,
            largest_dropped=max(dropped) if dropped else None,
            complete=complete,
        )

    partial = lambda: report(False)  # noqa: E731
    checker.check = lambda: budget.check_time(partial, "the families of hyperplanes")
    # the helpers append to failures: a budget's partial report lists what was found
    failures += _zero_rows(exact)
    facets = _facets(dom)
    elems, certified = _first_layer_elements(exact, dom, facets)
    _first_layer_families(elems, dom, facets, checker, tol, failures)
    # regions (exact engine, streamed): S2 and masked products
    net = ExactNet.from_params(params)
    Wq = [
        flint.fmpq_mat(len(W), len(W[0]), [fraction_to_fmpq(x) for row in W for x in row])
        for W, _ in exact
    ]
    bq = [list(b) for _, b in exact]
    seen: set = set()
    for cell in budget.cells([net], dom, partial=partial):
        pattern = [np.asarray(p, dtype=bool) for p in cell.patterns[0]]
        key = _pattern_key(pattern)
        if L > 2:
            _piece_families(
                exact,
                _exact_preacts(Wq, bq, pattern, d),
                pattern,
                key,
                facets=facets,
                cell=cell,
                d=d,
                checker=checker,
                budget=budget,
                seen=seen,
                out=failures,
            )
        _masked_products(Wq, widths, key, tol, checker, products, failures)
    return report(True)


def _label(l: int, j: int) -> str:
    return f"neuron ({l + 1}, {j + 1})"


def _zero_rows(exact: list) -> list[GenericityFailure]:
    """S0: hidden neurons with an all-zero weight row (no hyperplane)."""
    return [
        GenericityFailure(
            condition="S0",
            kind="zero row",
            elements=(_label(l, j),),
            pattern=None,
            layers=None,
            measured=0,
            expected=1,
            point=None,
            certified=True,
            message=f"S0: {_label(l, j)} has an all-zero weight row (no hyperplane)",
        )
        for l in range(len(exact) - 1)
        for j, row in enumerate(exact[l][0])
        if all(x == 0 for x in row)
    ]


def _first_layer_elements(exact: list, dom: Domain, facets: list) -> tuple[list, bool]:
    """The first-layer hyperplanes meeting the closed domain and the domain's facets (the
    elements of S1), and whether every "meets the domain" was decided exactly (a general
    polyhedral domain decides it by LP). A network without hidden layer is affine: its
    first layer is the output, no hyperplanes."""
    d = dom.dim
    dom_rows, dom_offs = [f[1] for f in facets], [f[2] for f in facets]
    W1, b1 = exact[0] if len(exact) > 1 else ([], [])
    elems, certified = [], True
    for j, (a, beta) in enumerate(zip(W1, b1)):
        if all(x == 0 for x in a):
            continue
        rng = open_range(a, dom)
        if rng is None:  # general polyhedral domain: LP
            meets, _ = _lp_meets([a], [-beta], dom_rows, dom_offs, d)
            certified = False
        else:
            meets = rng[0] <= -beta <= rng[1]
        if meets:
            elems.append((_label(0, j), list(a), -beta, 1))
    elems += [(f[0], f[1], f[2], 0) for f in facets]
    return elems, certified


def _first_layer_families(
    elems: list, dom: Domain, facets: list, checker: "_Checker", tol: float, out: list
) -> None:
    """S1: families of ``elems`` in non-general position, appended to ``out``."""
    d = dom.dim
    dom_rows, dom_offs = [f[1] for f in facets], [f[2] for f in facets]
    must = [e[3] == 1 for e in elems]
    for S, kind, rN, exp, x, cert in checker.families(
        elems, range(2, d + 2), must, dom_rows, dom_offs, strong=True
    ):
        labels = tuple(elems[i][0] for i in S)
        msg = (
            f"S1: {', '.join(labels)} have dependent normals (rank {rN} < {exp})"
            if kind == "dependent normals"
            else f"S1: {', '.join(labels)} ({len(S)} > d = {d}) meet at the point "
            f"{tuple(float(v) for v in x)} of the domain"
        )
        gap = checker.fail_gaps.get(frozenset(S), (None, None))
        if gap[0] is not None or gap[1] is not None:
            msg += (
                f" at tol={tol:g} (smallest singular value counted {_g(gap[0])}, "
                f"largest dropped {_g(gap[1])})"
            )
        out.append(
            GenericityFailure(
                condition="S1",
                kind=kind,
                elements=labels,
                pattern=None,
                layers=None,
                measured=rN,
                expected=exp,
                point=x,
                certified=cert,
                message=msg,
                smallest_counted=gap[0],
                largest_dropped=gap[1],
            )
        )


def _piece_families(
    exact: list,
    pre: list,
    pattern: list,
    key: tuple,
    *,
    facets: list,
    cell,
    d: int,
    checker: "_Checker",
    budget: Budget,
    seen: set,
    out: list,
) -> None:
    """S2 on one region: the pieces of the deeper neurons (and the domain's facets) that
    touch the closed region, in non-general position, appended to ``out``; ``seen`` keeps
    each failure once across regions."""
    # Whole: collect the region's pieces, then test their families; each failure built where found
    rows, offs = [f[1] for f in facets], [f[2] for f in facets]
    pieces, sides = [], []
    for l, layer in enumerate(pre):
        for j, (alpha, beta) in enumerate(layer):
            # closed region: every hidden neuron on its side, and the domain
            if pattern[l][j]:
                rows.append([-x for x in alpha])
                offs.append(beta)
            else:
                rows.append(list(alpha))
                offs.append(-beta)
            if all(x == 0 for x in alpha):
                if l >= 1 and beta == 0 and any(x != 0 for x in exact[l][0][j]):
                    fk = ("degenerate", _label(l, j), key)
                    if fk not in seen:
                        seen.add(fk)
                        out.append(
                            GenericityFailure(
                                condition="S2",
                                kind="degenerate piece",
                                elements=(_label(l, j),),
                                pattern=key,
                                layers=None,
                                measured=0,
                                expected=1,
                                point=None,
                                certified=True,
                                message=f"S2: {_label(l, j)} is identically zero on the region "
                                f"with pattern {key}",
                            )
                        )
                continue
            pieces.append((_label(l, j), alpha, -beta, l + 1))
            sides.append(-1 if pattern[l][j] else 1)
    pieces += [(f[0], f[1], f[2], 0) for f in facets]
    sides += [1] * len(facets)
    pieces = _touching(pieces, sides, cell, d, budget.engine.counter)
    must = [p[3] >= 2 for p in pieces]
    for S, kind, rN, exp, x, cert in checker.families(
        pieces, range(2, d + 2), must, rows, offs, strong=False
    ):
        labels = tuple(pieces[i][0] for i in S)
        fk = (frozenset(labels), x if x is not None else key)
        if fk in seen:
            continue
        seen.add(fk)
        where = (
            f"at the point {tuple(float(v) for v in x)}"
            if x is not None
            else "along a common subspace"
        )
        msg = f"S2: pieces of {', '.join(labels)} in the region with pattern {key} " + (
            f"meet {where} with dependent normals (rank {rN} < {exp})"
            if kind == "dependent normals"
            else f"({len(S)} > d = {d}) share the point {tuple(float(v) for v in x)}"
        )
        out.append(
            GenericityFailure(
                condition="S2",
                kind=kind,
                elements=labels,
                pattern=key,
                layers=None,
                measured=rN,
                expected=exp,
                point=x,
                certified=cert,
                message=msg,
            )
        )


def _masked_products(
    Wq: list, widths: tuple, key: tuple, tol: float, checker: "_Checker", products: dict, out: list
) -> None:
    """Maximal rank of the masked products ``D_b W_b ... D_a W_a`` (``D_L = I``) on the
    region with pattern ``key``, failures appended to ``out``; ``products`` keeps each
    product (by its masks) once."""
    L = len(Wq)
    for a in range(1, L + 1):
        P = None
        for b in range(a, L + 1):
            masks = tuple(key[l - 1] for l in range(a, min(b, L - 1) + 1))
            pk = (a, b, masks)
            W = Wq[b - 1]
            P = W if P is None else W * P
            if b < L:
                mask = key[b - 1]
                Dm = flint.fmpq_mat(len(mask), len(mask))
                for j, v in enumerate(mask):
                    if v:
                        Dm[j, j] = 1
                P = Dm * P
            if pk in products:
                continue
            gap = (None, None)
            if not (P.nrows() and P.ncols()):
                rank = 0
            elif tol == 0:
                rank = int(P.rank())
            else:
                rank, *gap = numerical_rank(_scaled_matrix(P), tol)
                checker.gaps.append(tuple(gap))
            sizes = [widths[a - 1]] + [sum(key[l - 1]) for l in range(a, min(b, L - 1) + 1)]
            if b == L:
                sizes.append(widths[L])
            expected = min(sizes)
            products[pk] = (rank, expected)
            if rank < expected:
                name = " ".join((f"W{l}" if l == L else f"D{l} W{l}") for l in range(b, a - 1, -1))
                at = (
                    ""
                    if tol == 0
                    else f" at tol={tol:g} (smallest singular value counted {_g(gap[0])}, "
                    f"largest dropped {_g(gap[1])})"
                )
                out.append(
                    GenericityFailure(
                        condition="rank",
                        kind="rank deficient",
                        elements=(name,),
                        pattern=key,
                        layers=(a, b),
                        measured=rank,
                        expected=expected,
                        point=None,
                        certified=tol == 0,
                        message=f"rank: {name} has rank {rank} < {expected} on the region "
                        f"with pattern {key}{at}",
                        smallest_counted=gap[0],
                        largest_dropped=gap[1],
                    )
                )
