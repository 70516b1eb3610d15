"""Two ReLU networks side by side: their joint regions and the exact supremum of their
difference, the ground truth of :func:`neuromanifold.relu.equivalent` (its ``"regions"`` and
``"milp"`` methods; the tolerance contract is described there).

* :func:`by_regions`: enumerate the regions of the *joint* network (the activation patterns
  of both networks at once, :mod:`neuromanifold.relu._engine.cells`); on each joint region
  both networks are affine. Where the exact affine maps differ, the supremum of the relative
  difference over the region is a linear program after homogenization (``x = y / s``:
  maximize ``+-(g . y + k s)`` over ``{a_i . y <= c_i s, -1 <= y <= 1, 0 <= s <= 1}``); it
  is bounded exactly (the l1 norm of the difference map, or an exact LP-duality bound built
  from the solver's multipliers, or an exact rational simplex when both are too weak). Both
  verdicts are certified.
* :func:`by_milp`: the same supremum over the whole domain by one mixed-integer program per
  output and sign on the homogenized networks ``G(y, s) = s f(y / s)`` (scipy/HiGHS, big-M
  constants from interval bounds). "Not equivalent" is certified by an exactly checked
  witness; "equivalent" rests on the solver's floating-point bound (``certified=False``).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import time
from typing import Any

import flint
import numpy as np

from ..._errors import ArchitectureError
from ..._progress import progress_bar
from ..._results import Result
from ..._tolerance import check_tol
from ..._validation import check_finite_result
from ...exact import exact_lp_max, to_fmpq
from .._bounds.interval import difference_bounds
from .._bounds.parameters import path_norm_scale
from .._core.domain import Domain, as_domain
from .._core.net import check_params, exact_params
from .._core.numbers import binary_exponent, pow2, to_float
from .budget import Budget
from .cells import Engine, ExactNet, exact_forward, output_map, pow2_floats
from .lp import MILP_FEAS, solve_lp, solve_milp
from .milp import BOUND_PAD, MILPBuilder, encode_network, homogenized_input

__all__ = [
    "Equivalence",
    "Pair",
    "by_regions",
    "by_milp",
    "equivalent_by_regions",
    "Best",
    "clip",
    "sup_by_regions",
    "sup_by_milp",
    "top1_by_regions",
]

_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Equivalence(Result):
    """Verdict on ``f_p == f_q`` (up to ``tol``) on a domain, with its evidence.

    Attributes:
        equivalent: whether the relative difference of the two functions stays within
            ``tol`` on the whole domain (see the module docs).
        witness: an input where the exact relative difference exceeds ``tol`` (``None``
            if equivalent).
        witness_difference: ``max_o |f_p(w)_o - f_q(w)_o|`` at the witness (absolute, in
            output units), computed exactly and rounded (``None`` if equivalent).
        max_difference: the largest relative difference found,
            ``max_o |f_p(x)_o - f_q(x)_o| / (scale * max(1, ||x||_inf))``: the supremum over
            the domain for ``"regions"`` and ``"milp"`` (where it is tiny, an upper bound),
            the largest sampled value for ``"sampling"``.
        method: the method that decided: ``"regions"``, ``"milp"``, ``"sampling"``,
            ``"matching"`` (a float weight matching certified by a parameter bound),
            ``"symmetry"``, ``"reduction"`` (the symmetry check after dead, constant and
            parallel hidden neurons are merged away), ``"bottleneck"`` (the
            polynomial-time test of docs/relu_equivalence.md) or ``"bounds"`` (on a box:
            the bound engine's rigorous bound, or a witness its branch and bound found).
        certified: the verdict is proved (exact arithmetic or an exactly checked witness).
        tol: the relative tolerance used (0.0 = exact).
        scale: the larger path norm of the two networks (``tol * scale`` is the absolute
            threshold per unit of ``max(1, ||x||_inf)``).
        num_regions: joint regions enumerated (regions method), else ``None``.
        num_lps, num_milps: LPs / MILPs solved.
        domain: the domain compared on.
        note: how the verdict was reached, in words.
        symmetry: when a method found one, the named transformations of
            :mod:`neuromanifold.relu.symmetries` taking p to q (up to ``tol``), to apply
            with ``symmetries.apply_sequence(result.symmetry, p)``; else ``None``. The
            ``"matching"`` and ``"symmetry"`` methods give a permutation and a rescaling per
            hidden layer; the ``"reduction"`` method the moves of any depth that make the
            removed neurons null, then a permutation and a rescaling, then the other
            network's moves undone (docs/relu_depth.md §4; ``None`` where the reduction
            merged an always-active block or an opposite pair); the ``"bottleneck"`` method
            (generic three-layer bottleneck networks) any of the symmetries of
            docs/concepts_relu.md §4.
    """

    equivalent: bool
    witness: np.ndarray | None
    witness_difference: float | None
    max_difference: float | None
    method: str
    certified: bool
    tol: float
    scale: float
    num_regions: int | None
    num_lps: int
    num_milps: int
    domain: Domain
    note: str
    symmetry: tuple | None = None


class Pair:
    """The two networks (exact, as given), their scale, and balanced copies for the
    floating-point solvers: every hidden neuron rescaled by a power of two so that its
    incoming row has entries of size about 1 (the function is unchanged, exactly), and
    both output layers divided by the power of two ``2**E`` nearest ``scale``."""

    def __init__(self, p_raw, q_raw, tol: float):
        p, q = check_params(p_raw), check_params(q_raw)
        dp, dq = p[0][0].shape[1], q[0][0].shape[1]
        mp, mq = p[-1][0].shape[0], q[-1][0].shape[0]
        if dp != dq:
            raise ArchitectureError(
                f"networks must have the same input dimension to be compared; got {dp} and {dq}"
            )
        if mp != mq:
            raise ArchitectureError(
                f"networks must have the same output dimension to be compared; got {mp} and {mq}"
            )
        self.p = ExactNet(p, exact_params(p_raw))
        self.q = ExactNet(q, exact_params(q_raw))
        self.d, self.m = dp, mp
        self.tol = tol
        self.scale = check_finite_result(
            max(path_norm_scale(p), path_norm_scale(q)), "the networks' scale (path norm)"
        )
        self.E = int(math.floor(math.log2(self.scale))) if self.scale > 0 else 0
        self.bp, self.bq = balanced(self.p, self.E), balanced(self.q, self.E)
        self.fp, self.fq = self.bp.params, self.bq.params
        # absolute threshold, per unit of max(1, ||x||_inf), in balanced output units
        self._set_tol(tol)

    def _set_tol(self, tol: float) -> None:
        self.tol = tol
        self.thr = tol * math.ldexp(self.scale, -self.E) if self.scale > 0 else 0.0
        self.thr_q = to_fmpq(self.thr)

    def with_tol(self, tol: float) -> "Pair":
        """The same pair at another tolerance (the exact networks shared, not rebuilt)."""
        out = copy.copy(self)
        out._set_tol(tol)
        out.__dict__.pop("_last", None)
        return out

    def relative(self, x) -> tuple[flint.fmpq, flint.fmpq]:
        """Exact ``(max_o |f_p(x)_o - f_q(x)_o|, max(1, ||x||_inf))`` of the balanced nets
        (the last point's kept: a witness is asked for its value several times, and an
        exact pass at 784 inputs takes a quarter of a second)."""
        xq = [v if isinstance(v, flint.fmpq) else to_fmpq(float(v)) for v in x]
        key = tuple(xq)
        if getattr(self, "_last", (None,))[0] != key:
            a, _ = exact_forward(self.bp, xq)
            b, _ = exact_forward(self.bq, xq)
            diff = max(abs(u - v) for u, v in zip(a, b))
            self._last = (key, (diff, max([_ONE] + [abs(v) for v in xq])))
        return self._last[1]

    def exceeds(self, x) -> bool:
        """Whether the exact relative difference at ``x`` exceeds ``tol`` (> 0 if tol = 0)."""
        diff, norm = self.relative(x)
        return diff > self.thr_q * norm

    def rel_value(self, x) -> float:
        diff, norm = self.relative(x)
        if diff == 0:
            return 0.0
        base = math.ldexp(self.scale, -self.E)
        return max(to_float(diff / norm) / base, 5e-324) if base > 0 else math.inf

    def witness_difference(self, x) -> float:
        """``max_o |f_p(x)_o - f_q(x)_o|`` of the networks as given, exactly, rounded (the
        balanced networks compute the functions divided by ``2**E`` exactly)."""
        diff = self.relative([to_fmpq(float(v)) for v in x])[0] * pow2(self.E)
        return 0.0 if diff == 0 else max(to_float(diff), 5e-324)


#: the smallest positive normal float64
_NORMAL = float(np.finfo(float).tiny)


def balanced(net: ExactNet, E: int) -> ExactNet:
    """``net`` with every hidden neuron rescaled by a power of two (incoming row of size
    about 1, outgoing column compensating) and the output layer divided by ``2**E``: the
    same function divided by ``2**E``, exactly."""
    Ws = [flint.fmpq_mat(W) for W in net.Wq]
    bs = [list(b) for b in net.bq]
    fast = _float_exponents(net)
    exps = []  # the power of two dividing each hidden neuron
    for l in range(net.num_layers - 1):
        exps.append([])
        for i in range(Ws[l].nrows()):
            if fast is not None:
                e = fast[l][i]
            else:  # from the row as rescaled so far, as the float route does
                row = [Ws[l][i, j] for j in range(Ws[l].ncols())] + [bs[l][i]]
                e = max((binary_exponent(v) for v in row if v != 0), default=0)
            exps[l].append(e)
            if e == 0:
                continue
            f = pow2(-e)
            for j in range(Ws[l].ncols()):
                Ws[l][i, j] *= f
            bs[l][i] *= f
            g = pow2(e)
            for k in range(Ws[l + 1].nrows()):
                Ws[l + 1][k, i] *= g
    f = pow2(-E)
    L = net.num_layers - 1
    for k in range(Ws[L].nrows()):
        for j in range(Ws[L].ncols()):
            Ws[L][k, j] *= f
        bs[L][k] *= f
    floats = _scaled_floats(net, exps, E)
    if floats is None:
        floats = [
            (
                np.array(
                    [[to_float(W[i, j]) for j in range(W.ncols())] for i in range(W.nrows())]
                ).reshape(W.nrows(), W.ncols()),
                np.array([to_float(v) for v in b]),
            )
            for W, b in zip(Ws, bs)
        ]
    out = ExactNet(floats, list(zip(Ws, bs)))
    out.exps = exps
    return out


def _float_exponents(net: ExactNet) -> list | None:
    """The exponents of :func:`balanced` from the float copies: per hidden neuron, the
    largest binary exponent of its row after the earlier neurons' rescaling (``frexp``
    exponents added, so nothing over- or underflows on the way; any power of two
    balances exactly), or ``None`` when the floats cannot say (an entry not finite, or
    subnormal: its exponent is not the exact entry's)."""
    exps, prev = [], None
    for W, b in net.params[:-1]:
        R = np.hstack([W, b[:, None]])
        if not np.all(np.isfinite(R)) or np.any((R != 0) & (np.abs(R) < _NORMAL)):
            return None
        X = np.frexp(R)[1].astype(np.int64)
        if prev is not None:
            X[:, :-1] += prev[None, :]
        X = np.where(R != 0, X, np.iinfo(np.int64).min)
        e = np.max(X, axis=1, initial=np.iinfo(np.int64).min)
        e = np.where(e == np.iinfo(np.int64).min, 0, e)  # a zero row stays as it is
        exps.append([int(v) for v in e])
        prev = e
    return exps


def _scaled_floats(net: ExactNet, exps: list, E: int) -> list | None:
    """The float copies of the balanced network, scaled by the same powers of two with
    ``ldexp`` (exact on normal floats, so equal to rounding the exact balanced entries:
    the copies are the exact entries correctly rounded), or ``None`` when an entry or its
    image is zero where the exact entry may not be, subnormal or not finite."""
    out, prev = [], None
    for l, (W, b) in enumerate(net.params):
        e = np.array(exps[l]) if l < len(exps) else None
        row = -e if e is not None else np.full(W.shape[0], -E)
        col = prev if prev is not None else np.zeros(W.shape[1], dtype=np.int64)
        with np.errstate(over="ignore", under="ignore"):  # checked just below
            # one ldexp per entry: an intermediate could underflow and come back inexact
            Wn, bn = np.ldexp(W, row[:, None] + col[None, :]), np.ldexp(b, row)
        for A, B, Aq in ((W, Wn, net.Wq[l]), (b, bn, net.bq[l])):
            if (
                not np.all(np.isfinite(B))
                or np.any((A != 0) & (np.abs(A) < _NORMAL))
                or np.any((B != 0) & (np.abs(B) < _NORMAL))
            ):
                return None
            zeros = np.argwhere(A == 0)  # a zero copy of a nonzero (tiny) exact entry?
            if any(
                (Aq[tuple(ix)] if isinstance(Aq, flint.fmpq_mat) else Aq[ix[0]]) != 0
                for ix in zeros
            ):
                return None
        out.append((Wn, bn))
        prev = e
    return out


def clip(x: np.ndarray, dom: Domain) -> np.ndarray:
    if dom.kind == "box":
        return np.clip(x, dom.lower, dom.upper)
    if dom.kind == "orthant":
        return np.maximum(x, 0.0)
    return x


def equivalence_result(
    pair: Pair,
    dom: Domain,
    *,
    equivalent: bool,
    witness=None,
    max_difference=None,
    method: str,
    certified: bool,
    num_regions=None,
    num_lps=0,
    num_milps=0,
    note: str,
) -> Equivalence:
    wdiff = None if witness is None else pair.witness_difference(witness)
    return Equivalence(
        equivalent=bool(equivalent),
        witness=None if witness is None else np.asarray(witness, float),
        witness_difference=wdiff,
        max_difference=None if max_difference is None else float(max_difference),
        method=method,
        certified=bool(certified),
        tol=pair.tol,
        scale=float(pair.scale),
        num_regions=num_regions,
        num_lps=int(num_lps),
        num_milps=int(num_milps),
        domain=dom,
        note=note,
    )


# -- regions of the joint network ---------------------------------------------------------


class _Hom:
    """The homogenized cone of a cell, ``{(y, s) : a_i . y - c_i s <= 0}``, exactly and as
    floats (each row scaled by a power of two, exponent kept)."""

    def __init__(self, cell, d: int):
        self.rows_q = [list(a) + [-c] for a, c in zip(cell.rows_q, cell.offs_q)]
        fl = [pow2_floats(r, d) for r in self.rows_q]
        self.rows_f = np.array([f for f, _ in fl]).reshape(-1, d + 1)
        self.exps = [e for _, e in fl]

    def with_rows(self, rows_q: list, d: int) -> "_Hom":
        """This cone cut by further homogenized rows ``r . (y, s) <= 0`` (exact)."""
        out = object.__new__(_Hom)
        fl = [pow2_floats(r, d) for r in rows_q]
        out.rows_q = self.rows_q + rows_q
        out.rows_f = np.vstack([self.rows_f, np.array([f for f, _ in fl]).reshape(-1, d + 1)])
        out.exps = self.exps + [e for _, e in fl]
        return out


def _box_bound(h: list, d: int) -> flint.fmpq:
    """The maximum of ``h . (y, s)`` over ``-1 <= y <= 1, 0 <= s <= 1`` (exact): a bound
    over any homogenized cell."""
    return sum((abs(v) for v in h[:d]), _ZERO) + max(h[d], _ZERO)


def _cell_sup(hom: _Hom, h_q: list, d: int, engine: Engine):
    """Maximize ``h . (y, s)`` over the homogenized cell with ``-1 <= y <= 1``,
    ``0 <= s <= 1``.

    Returns:
        ``(value, point, bound)``: the LP's value and maximizer (floats; ``None`` when the
        LP failed) and an exact upper bound on the maximum (LP duality with the solver's
        multipliers rounded to rationals; the l1 norm of ``h`` without them).
    """
    h_f, eh = pow2_floats(h_q, d)
    lb = np.append(np.full(d, -1.0), 0.0)
    ub = np.ones(d + 1)
    k = hom.rows_f.shape[0]
    if k:
        sol = solve_lp(-h_f, hom.rows_f, np.zeros(k), lb=lb, ub=ub, counter=engine.counter)
    else:
        sol = None
    if sol is None or sol.status != "optimal":
        # no rows (the whole space and one cell) or LP trouble: the box bound
        l1 = _box_bound(h_q, d)
        if sol is None:
            return float(to_float(l1)), _box_argmax(h_f, d), l1
        return None, None, l1
    val = math.ldexp(-float(sol.fun), eh)
    # exact bound: h = sum_i mu_i A_i + r with mu >= 0, and A v <= 0, so
    # h . v <= r . v <= sum_{j<d} |r_j| + max(r_d, 0)
    r = list(h_q)
    for i, dual in enumerate(sol.dual_ub[:k]):
        mu = -float(dual)
        if not mu > 0:
            continue
        f = to_fmpq(mu) * pow2(eh - hom.exps[i])
        row = hom.rows_q[i]
        for j in range(d + 1):
            if row[j] != 0:
                r[j] -= f * row[j]
    bound = sum((abs(v) for v in r[:d]), _ZERO) + max(r[d], _ZERO)
    return val, np.asarray(sol.x, float), bound


def _box_argmax(h_f: np.ndarray, d: int) -> np.ndarray:
    v = np.sign(h_f).astype(float)
    v[d] = 1.0 if h_f[d] > 0 else 0.0
    return v


def _lp_candidates(pt, cell, dom: Domain, d: int):
    """Float inputs near the maximizer ``pt = (y, s)`` of a cell's homogenized LP."""
    if pt is None:
        return
    y, s = np.asarray(pt[:d], float), float(pt[d])
    if s > 1e-300:
        with np.errstate(all="ignore"):
            x = y / s
        if np.all(np.isfinite(x)):
            yield clip(x, dom)
            for lam in (1e-9, 1e-6, 1e-3):  # pulled towards the cell's interior point
                yield clip(x + lam * (cell.center_f - x), dom)
    # a difference "at infinity" (s = 0), or an optimum far out
    for t in (10.0**-k for k in range(1, 16)):
        yield clip(y / t, dom)


def _cell_candidates(cell, dom: Domain, d: int):
    """Float inputs inside (or next to) a cell, for cells only a few floats wide."""
    yield np.asarray(cell.center_f, float)
    for k in range(d):
        e = np.zeros(d)
        e[k] = cell.radius / 2
        yield clip(cell.center_f + e, dom)
        for to in (np.inf, -np.inf):
            x = np.array(cell.center_f, float)
            x[k] = np.nextafter(x[k], to)
            yield clip(x, dom)


def _exact_sup(hom: _Hom, h_q: list, d: int):
    """The exact maximum of ``h . (y, s)`` over the homogenized cell, and a maximizer."""
    G = [list(r) for r in hom.rows_q]
    rhs = [_ZERO] * len(G)
    for j in range(d + 1):
        for sgn in (1, -1):
            if j == d and sgn == -1:
                row = [_ZERO] * (d + 1)
                row[d] = -_ONE
                G.append(row)
                rhs.append(_ZERO)
                continue
            row = [_ZERO] * (d + 1)
            row[j] = _ONE * sgn
            G.append(row)
            rhs.append(_ONE)
    status, v, val = exact_lp_max(h_q, G, rhs, n=d + 1)
    return (val, v) if status == "optimal" else (None, None)


def _exact_candidates(v, d: int):
    y, s = v[:d], v[d]
    if s > 0:
        yield [yi / s for yi in y]
    for k in range(1, 61, 3):
        t = flint.fmpq(1, 2**k)
        yield [yi / t for yi in y]


def by_regions(pair: Pair, dom: Domain, budget: Budget) -> Equivalence:
    """The regions method, streamed: only the joint regions where the maps differ by more
    than ``tol`` (by their bound) are kept, to look for a witness at the end."""
    # Whole: one pass over the regions, then two over the suspects; sup and the counts run through
    engine = budget.engine
    d, m = pair.d, pair.m
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    sup = 0.0
    suspects = []  # (value, cell, hom, h, lp point)
    differing = 0
    n_cells = 0
    cells = budget.cells([pair.bp, pair.bq], dom)
    for cell in cells:
        n_cells += 1
        Fp = output_map(cell, 0, pair.bp)
        Fq = output_map(cell, 1, pair.bq)
        if Fp == Fq:
            continue
        differing += 1
        Dq = Fp - Fq
        hom = None
        for o in range(m):
            row = [Dq[o, k] for k in range(d + 1)]
            if all(v == 0 for v in row):
                continue
            l1 = sum((abs(v) for v in row), _ZERO)
            if l1 <= pair.thr_q:  # |g . y + k s| <= l1 on the whole box: within tol
                sup = max(sup, to_float(l1) / base)
                continue
            if hom is None:
                hom = _Hom(cell, d)
            for sign in (1, -1):
                h = [sign * v for v in row]
                with budget.guard(stage="the maximum of a difference"):
                    val, pt, bound = _cell_sup(hom, h, d, engine)
                if val is not None:
                    sup = max(sup, min(val, to_float(bound)) / base)
                if bound <= pair.thr_q:
                    continue
                suspects.append((-math.inf if val is None else val, cell, hom, h, pt))
    if not suspects:
        what = (
            "have identical exact affine maps"
            if differing == 0
            else f"differ by at most tol ({differing} of them not identically)"
        )
        return equivalence_result(
            pair,
            dom,
            equivalent=True,
            max_difference=sup,
            method="regions",
            certified=True,
            num_regions=n_cells,
            num_lps=engine.counter.count,
            note=f"all {n_cells} joint regions {what}",
        )
    suspects.sort(key=lambda t: -t[0])
    note = (
        f"{len(suspects)} (region, output, sign) maxima of {n_cells} joint regions "
        f"exceed tol by their bound"
    )
    tried: set = set()
    for _, cell, _, _, pt in suspects:
        cands = list(_lp_candidates(pt, cell, dom, d))
        if id(cell) not in tried:
            tried.add(id(cell))
            cands += list(_cell_candidates(cell, dom, d))
        for x in cands:
            if np.all(np.isfinite(x)) and pair.exceeds(x):
                return equivalence_result(
                    pair,
                    dom,
                    equivalent=False,
                    witness=x,
                    max_difference=max(sup, pair.rel_value(x)),
                    method="regions",
                    certified=True,
                    num_regions=n_cells,
                    num_lps=engine.counter.count,
                    note=note,
                )
    # no float candidate confirmed: decide each suspect with the exact simplex
    fallback = None
    for _, cell, hom, h, _ in suspects:
        budget.check_time(stage="the exact maxima")
        val, v = _exact_sup(hom, h, d)
        if val is None or val <= pair.thr_q:
            continue
        sup = max(sup, to_float(val) / base)
        for xq in _exact_candidates(v, d):
            x = clip(np.array([to_float(t) for t in xq]), dom)
            if np.all(np.isfinite(x)) and pair.exceeds(x):
                return equivalence_result(
                    pair,
                    dom,
                    equivalent=False,
                    witness=x,
                    max_difference=max(sup, pair.rel_value(x)),
                    method="regions",
                    certified=True,
                    num_regions=n_cells,
                    num_lps=engine.counter.count,
                    note=note + "; maximum found by the exact simplex",
                )
        if fallback is None:  # pragma: no cover - a maximum no float input shows
            fallback = np.array([to_float(t) for t in next(_exact_candidates(v, d))])
    if fallback is None:
        return equivalence_result(
            pair,
            dom,
            equivalent=True,
            max_difference=sup,
            method="regions",
            certified=True,
            num_regions=n_cells,
            num_lps=engine.counter.count,
            note=f"all {n_cells} joint regions differ by at most tol (decided by "
            "the exact simplex where the floating-point bound was too weak)",
        )
    return equivalence_result(
        pair,
        dom,
        equivalent=False,
        witness=clip(fallback, dom),  # pragma: no cover
        max_difference=sup,
        method="regions",
        certified=True,
        num_regions=n_cells,
        num_lps=engine.counter.count,
        note=note + "; the exact maximum exceeds tol, but no float input near "
        "the maximizer shows it (the witness is its rounding)",
    )


# -- mixed-integer programming -------------------------------------------------------------

# HiGHS's tolerances: a binary may sit MILP_FEAS off its integer and a row may be violated
# by MILP_FEAS. Through the big-M rows of a ReLU with pre-activation bounds [lo, hi] this
# lets h be off by about _FEAS * (1 + max(|lo|, |hi|)), which later layers carry on.
_FEAS = 2 * MILP_FEAS
#: where the MILP's objective puts the equivalence threshold (module docs of by_milp)
_OBJ_TARGET = 1e-2


def _encode_net(B: MILPBuilder, params: list, ys: list[int], s_var: int):
    """Encode a network on the input variables (:mod:`neuromanifold.relu._engine.milp`);
    return the expressions of its outputs and, per output, a bound on how far the solver's
    tolerances can move it from the true network output."""
    layers, out = encode_network(B, params, B.inputs(ys), s_var)
    errs = np.full(len(ys), _FEAS)
    for (W, _), layer in zip(params, layers):
        pre = np.abs(np.asarray(W, dtype=float)) @ errs
        free = pre + _FEAS * (1.0 + np.maximum(np.abs(layer.lo), np.abs(layer.hi)))
        errs = np.where(layer.state == -1, 0.0, np.where(layer.state == 1, pre, free))
    return out, np.abs(np.asarray(params[-1][0], dtype=float)) @ errs, layers


def by_milp(
    pair: Pair, dom: Domain, budget: Budget, time_limit: float | None = None
) -> Equivalence | None:
    """The MILP method on the homogenized networks; ``None`` when inconclusive (or when
    ``time_limit`` seconds, or the budget's time, ran out)."""
    t_end = _milp_deadline(budget, time_limit)
    m = pair.m
    B, diff, (A, ubs, lbv, ubv, integer), ys, s_var, noise = _milp_encoding(pair, dom)
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    # The objective is the difference of two networks that nearly agree: its optimum is of
    # the size of the threshold (1e-9 relative), far below the solver's reduced-cost
    # tolerance (HiGHS: 1e-7), at which the simplex calls any vertex optimal, so a
    # difference far out (at s = 0) was bounded by 0. Scaling the objective by K puts the
    # threshold at 1e-2, well above that tolerance; values are divided by K again.
    K = max(1.0, _OBJ_TARGET / max(pair.thr, noise, 1e-300))
    # HiGHS reports nothing while it solves: a bar over the 2 m programs says how far it is
    bar = (
        progress_bar(
            total=2 * m,
            desc=f"{budget.what}: MILPs (one per output and sign)",
            unit="MILP",
            leave=False,
        )
        if budget.progress
        else None
    )
    program = _Programs(
        diff=diff,
        arrays=(A, ubs, lbv, ubv, integer),
        ys=ys,
        s_var=s_var,
        K=K,
        base=base,
        noise=noise,
    )
    try:
        return _milp_programs(pair, dom, program, t_end, bar)
    finally:
        if bar is not None:
            bar.close()


def _milp_deadline(budget: Budget, time_limit: float | None) -> float | None:
    t_end = None if time_limit is None else time.monotonic() + time_limit
    if budget.deadline is not None:
        t_end = budget.deadline if t_end is None else min(t_end, budget.deadline)
    return t_end


def _milp_encoding(pair: Pair, dom: Domain, *, difference_cuts: bool = False):
    """Both homogenized networks in one MILP: the builder, the output differences, the
    problem's arrays, the input variables, and the noise (how far the solver's
    tolerances can move a difference; below it the MILP's answer is solver noise).

    ``difference_cuts`` (a box, one architecture): also the rows
    ``lo s <= z^q - z^p <= hi s`` per neuron and output, and the same for ``h^q - h^p``,
    with the bounds of :func:`~neuromanifold.relu._bounds.interval.difference_bounds`
    (padded against rounding). They hold at every point of the box, so the optimum is
    unchanged; they tie the two networks' binaries together, which the separate big-M
    rows do not, and for two nearby checkpoints bound the relaxation by the size of their
    difference instead of the size of the networks."""
    B = MILPBuilder()
    ys, s_var = homogenized_input(B, dom)
    out_p, err_p, layers_p = _encode_net(B, pair.fp, ys, s_var)
    out_q, err_q, layers_q = _encode_net(B, pair.fq, ys, s_var)
    if (
        difference_cuts
        and dom.kind == "box"
        and [W.shape for W, _ in pair.fp] == [W.shape for W, _ in pair.fq]
    ):
        pre, post = difference_bounds(pair.fp, pair.fq, dom)
        exprs = (
            [(lp.Z, lq.Z, b) for lp, lq, b in zip(layers_p, layers_q, pre)]
            + [(lp.H, lq.H, b) for lp, lq, b in zip(layers_p, layers_q, post)]
            + [(out_p, out_q, pre[-1])]
        )
        for Zp, Zq, (lo, hi) in exprs:
            D = B.widen(Zq) - B.widen(Zp)
            pad = BOUND_PAD * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))
            for i in range(D.shape[0]):
                if np.isfinite(lo[i]) and np.isfinite(hi[i]):
                    B.row(D[i], {s_var: -float(hi[i] + pad[i])}, 0.0)
                    B.row(-D[i], {s_var: float(lo[i] - pad[i])}, 0.0)
    problem = B.problem()
    out_lo, out_hi = B.bounds(np.vstack([B.widen(out_p), B.widen(out_q)]), pad=False)
    out_scale = max(1.0, float(np.max(np.abs(out_lo))), float(np.max(np.abs(out_hi))))
    noise = max(4 * MILP_FEAS * out_scale, 2.0 * float(np.max(err_p + err_q)))
    return B, B.widen(out_p) - B.widen(out_q), problem, ys, s_var, noise


@dataclasses.dataclass(frozen=True)
class _Programs:
    """The MILPs of :func:`by_milp`, one per output and sign: the output differences
    ``diff``, the problem's ``arrays`` ``(A, ubs, lbv, ubv, integer)``, the input variables
    ``ys`` and ``s_var``, the objective's factor ``K``, the unit ``base`` and the solver
    ``noise``."""

    diff: Any
    arrays: tuple
    ys: list
    s_var: int
    K: float
    base: float
    noise: float


def _milp_programs(pair, dom, program: _Programs, t_end, bar):
    """The 2 m MILPs of :func:`by_milp` and the verdict they give (``None`` when one of
    them is inconclusive or the time runs out)."""
    diff, (A, ubs, lbv, ubv, integer) = program.diff, program.arrays
    ys, s_var, K, base, noise = program.ys, program.s_var, program.K, program.base, program.noise
    m = pair.m
    bound = 0.0
    best_val, witness = -np.inf, None
    for o in range(m):
        g = diff[o]
        for sign in (1.0, -1.0):
            left = None if t_end is None else t_end - time.monotonic()
            if left is not None and left <= 0:
                return None
            res = solve_milp(-sign * K * g, A, ubs, lbv, ubv, integer, time_limit=left)
            if bar is not None:
                bar.update(1)
            if res.status != "optimal":
                return None
            val = -res.fun / K
            bound = max(bound, -res.dual_bound / K, val)
            if val > best_val or witness is None:
                for x in _milp_points(res.x, ys, s_var, dom):
                    if pair.exceeds(x):
                        if witness is None or pair.rel_value(x) > pair.rel_value(witness):
                            witness = x
                        break
            best_val = max(best_val, val)
    if witness is not None:
        return equivalence_result(
            pair,
            dom,
            equivalent=False,
            witness=witness,
            max_difference=max(best_val / base, pair.rel_value(witness)),
            method="milp",
            certified=True,
            num_milps=2 * m,
            note="the MILP optimum is attained at an exactly confirmed witness "
            "(homogenized networks)",
        )
    if bound <= max(pair.thr, noise):
        res_note = f"; its resolution {noise / base:.2g} exceeds tol" if noise > pair.thr else ""
        return equivalence_result(
            pair,
            dom,
            equivalent=True,
            max_difference=max(bound, 0.0) / base,
            method="milp",
            certified=False,
            num_milps=2 * m,
            note=f"the MILP bounds the relative difference by {bound / base:.3g}"
            f" (floating-point MILP; not certified){res_note}",
        )
    return None


def _milp_points(u: np.ndarray, ys: list[int], s_var: int, dom: Domain):
    # G_p - G_q is continuous, so a difference at (y, s) persists at (y, t) for t close to
    # s; at s = 0 (a difference "at infinity") the kink may be arbitrarily far out, hence
    # a geometric sequence of scales down to 1e-15
    y = u[ys]
    s = float(u[s_var])
    for t in ([s] if s > 1e-9 else []) + [10.0**-k for k in range(1, 16)]:
        yield clip(y / t, dom)


# -- the supremum of the difference (the distance of two networks) -------------------------


class Best:
    """The largest exact relative difference found so far (balanced units, per unit of
    ``max(1, ||x||_inf)``) and the float input in the domain where it is attained."""

    def __init__(self, pair: Pair):
        self.pair, self.value, self.point = pair, _ZERO, None

    def offer(self, x) -> None:
        """Evaluate ``x`` (a float input, inside the domain) exactly; keep it if larger."""
        x = np.asarray(x, float)
        if not np.all(np.isfinite(x)):
            return
        diff, norm = self.pair.relative(x)
        if self.point is None or diff / norm > self.value:
            self.value, self.point = diff / norm, x


def sup_by_regions(
    pair: Pair, dom: Domain, budget: Budget, best: Best, *, gap: flint.fmpq
) -> flint.fmpq:
    """An exact upper bound on ``sup_x max_o |f_p(x)_o - f_q(x)_o| / max(1, ||x||_inf)``
    over the domain (balanced units) by the joint regions, raising ``best`` along the way.

    Per joint region, output and sign: nothing when the box bound of the difference map
    cannot exceed ``best`` (it cannot raise the supremum above what is attained); else the
    homogenized LP (its maximizer offered to ``best``, its exact duality bound kept); at
    the end each region whose bound still exceeds ``best + gap`` is solved by the exact
    simplex (its exact maximum replaces the bound; a rounding of its maximizer is
    offered). The bound returned is the largest kept, and at least ``best.value``."""
    d, m = pair.d, pair.m
    open_: list = []  # (bound, cell, hom, h)
    for cell in budget.cells([pair.bp, pair.bq], dom):
        Fp, Fq = output_map(cell, 0, pair.bp), output_map(cell, 1, pair.bq)
        if Fp == Fq:
            continue
        Dq = Fp - Fq
        hom = None
        for o in range(m):
            row = [Dq[o, k] for k in range(d + 1)]
            for sign in (1, -1):
                h = [sign * v for v in row]
                box = _box_bound(h, d)
                if box <= best.value:
                    continue
                if hom is None:
                    hom = _Hom(cell, d)
                with budget.guard(stage="the maximum of a difference"):
                    val, pt, bound = _cell_sup(hom, h, d, budget.engine)
                if val is not None and to_fmpq(val) > best.value:
                    for x in _lp_candidates(pt, cell, dom, d):
                        best.offer(x)
                    best.offer(cell.center_f)
                if min(bound, box) > best.value:
                    open_.append((min(bound, box), cell, hom, h))
    upper = best.value
    for bound, cell, hom, h in sorted(open_, key=lambda t: -t[0]):
        if bound <= best.value + gap:
            upper = max(upper, bound)
            continue
        budget.check_time(stage="the exact maxima")
        val, v = _exact_sup(hom, h, d)
        if val is None:  # pragma: no cover - the exact simplex of a non-empty cell
            upper = max(upper, bound)
            continue
        for xq in itertools.islice(_exact_candidates(v, d), 4):
            best.offer(clip(np.array([to_float(t) for t in xq]), dom))
        upper = max(upper, val)
    return max(upper, best.value)


def sup_by_milp(
    pair: Pair, dom: Domain, budget: Budget, best: Best, time_limit: float | None = None
) -> tuple[float | None, int]:
    """An upper bound on the same supremum from one MILP per output and sign (HiGHS's
    floating-point dual bound plus the noise its tolerances allow: not exact), raising
    ``best`` with the MILPs' incumbents. The time is shared evenly among the programs
    left; a program stopped by the clock still gives its proven dual bound. Returns the
    bound (``None`` when a program gave none) and how many programs reached their optimum."""
    t_end = _milp_deadline(budget, time_limit)
    B, diff, (A, ubs, lbv, ubv, integer), ys, s_var, noise = _milp_encoding(
        pair, dom, difference_cuts=True
    )
    K = max(1.0, _OBJ_TARGET / max(to_float(best.value), noise, 1e-300))
    upper, solved, total = 0.0, 0, 2 * pair.m
    for k in range(total):
        o, sign = k // 2, (1.0, -1.0)[k % 2]
        share = None if t_end is None else (t_end - time.monotonic()) / (total - k)
        if share is not None and share <= 0:
            return None, solved
        res = solve_milp(-sign * K * diff[o], A, ubs, lbv, ubv, integer, time_limit=share)
        if res.status not in ("optimal", "time_limit"):
            return None, solved
        solved += res.status == "optimal"
        upper = max(upper, -res.dual_bound / K)
        if res.x is not None:
            upper = max(upper, -res.fun / K)
            for x in _milp_points(res.x, ys, s_var, dom):
                best.offer(x)
    return upper + noise, solved


def top1_by_regions(
    pair: Pair, dom: Domain, budget: Budget, thr: flint.fmpq, check
) -> tuple[np.ndarray, bool] | None:
    """Whether the top-1 classes of the two (balanced) networks can disagree by more than
    ``thr`` on the domain, decided exactly by the joint regions.

    On a joint region both output maps are affine; for each network ``A`` (the other
    ``B``) and class ``c``, the inputs where ``c`` is a top class of ``A`` are a polyhedron
    (``A_k <= A_c`` for every k), and ``max (B_j - B_c)`` over it is an LP per other
    class ``j``, homogenized as in :func:`sup_by_regions` (the domain's rows keep
    ``y / s`` inside it). An LP is skipped when the box bound of its objective is at most
    ``thr``, or its exact duality bound is; its maximizer is offered to ``check`` (a
    float input in, True when it is confirmed a counterexample); what is left is decided
    by the exact simplex.

    Returns:
        ``None`` when no region has a disagreement above ``thr`` (proved exactly); else
        ``(point, confirmed)``: a float input ``check`` confirmed (``confirmed=True``),
        or, when no float near the exact maximizer passed, its rounding
        (``confirmed=False``: the exact rational maximizer is a counterexample; a float
        near it lies on a tie).
    """
    d, m = pair.d, pair.m
    for cell in budget.cells([pair.bp, pair.bq], dom):
        F = (output_map(cell, 0, pair.bp), output_map(cell, 1, pair.bq))
        base = None
        for first in (0, 1):
            A, B = F[first], F[1 - first]
            for c in range(m):
                objectives = []
                for j in range(m):
                    if j == c:
                        continue
                    h = [B[j, t] - B[c, t] for t in range(d + 1)]
                    if _box_bound(h, d) > thr:
                        objectives.append(h)
                if not objectives:
                    continue
                if base is None:
                    base = _Hom(cell, d)
                hom = base.with_rows(
                    [[A[k, t] - A[c, t] for t in range(d + 1)] for k in range(m) if k != c], d
                )
                for h in objectives:
                    with budget.guard(stage="the top-1 classes"):
                        val, pt, bound = _cell_sup(hom, h, d, budget.engine)
                    if bound <= thr:
                        continue
                    if val is not None and to_fmpq(val) > thr:
                        for x in _lp_candidates(pt, cell, dom, d):
                            if check(x):
                                return x, True
                    budget.check_time(stage="the top-1 classes")
                    val, v = _exact_sup(hom, h, d)
                    if val is None or val <= thr:
                        continue
                    rounded = None
                    for xq in itertools.islice(_exact_candidates(v, d), 4):
                        x = clip(np.array([to_float(t) for t in xq]), dom)
                        rounded = x if rounded is None else rounded
                        if check(x):
                            return x, True
                    return rounded, False
    return None


def equivalent_by_regions(p: Any, q: Any, domain: Any = None, *, tol: float) -> Equivalence:
    """The certified verdict of the joint regions alone (``equivalent(p, q, domain, tol=tol,
    method="regions")`` without its budget keywords), for the analyses that check a claim
    against the ground truth."""
    pair = Pair(p, q, check_tol(tol))
    return by_regions(
        pair,
        as_domain(domain, pair.d),
        Budget(
            "equivalent",
            pair.d,
            max_regions=None,
            time_limit=None,
            progress=False,
            unit="joint region",
        ),
    )
