"""Functional equivalence of two ReLU networks on a domain, up to a relative tolerance.

The question (``docs/relu.md``, section "Tolerances"): with ``scale`` the larger path norm
of the two networks (:func:`neuromanifold._tolerance.path_norm_scale`), do ``f_p`` and
``f_q`` agree up to ``tol``, i.e. is

    ``sup_x max_o |f_p(x)_o - f_q(x)_o| / max(1, ||x||_inf)  <=  tol * scale``

over the domain? ``tol = 0`` asks for exact equality of the functions defined by the given
numbers (floats are exact binary rationals; ``Fraction``/integer entries stay exact). The
left side divided by ``scale`` is the *relative difference*.

Methods:

* ``"regions"``: enumerate the regions of the *joint* network (the activation patterns of
  both networks at once, :mod:`neuromanifold.relu._engine`); on each joint region both
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
* ``"auto"``: a cheap sampled check first (both networks on a few thousand points of the
  domain; the largest differences are checked exactly), then a symmetry check (is q a
  permutation and positive rescaling of p's hidden neurons up to a parameter difference
  whose effect on the function, bounded exactly, is within ``tol``? then ``method`` says
  ``"symmetry"``, the verdict is certified and ``symmetry`` holds the map), then the same
  check after reducing both networks (``"reduction"``: neurons without outgoing weights
  removed, neurons with a zero incoming row folded into the next bias, positive multiples
  of one row merged, each step exact, rows parallel up to ``tol`` moved onto each other
  with the effect bounded), then the polynomial-time test of generic three-layer bottleneck networks (on R^d), then, ordered
  by their expected cost, the regions method (which certifies) when at most 50,000 joint
  regions are expected (distinct joint activation patterns at 20,000 random points,
  Chao1-corrected), else the MILP first (at most 60 s) and the regions method after it.
  Between two networks that agree the MILP has no bound to prune with: on a trained
  2-16-16-1 pair it ran for more than 300 s where the regions method took 9 s.

``max_regions`` and ``time_limit`` bound the whole call (the same semantics as for :func:`~neuromanifold.relu.regions`).

Every "not equivalent" result carries a witness ``x`` in the domain at which the exact
relative difference exceeds ``tol`` (exceeds 0 when ``tol = 0``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import flint
import numpy as np

from .._errors import (ArchitectureError, ComputationLimitError, InputError,
                       NeuromanifoldError, short_repr)
from .._results import Result
from .._tolerance import DEFAULT_TOL, check_tol, path_norm_scale
from .._validation import as_seed_rng, check_bool, check_finite_result
from ..exact._lp import exact_lp_max
from ..exact._rational import fmpq_to_fraction, to_fmpq
from ._domain import Domain, as_domain
from ._budget import Budget
from ._engine import ExactNet, Engine, binary_exponent, exact_forward, output_map, pow2_floats
from ._lp import MILP_FEAS, solve_lp, solve_milp
from ._milp_encoding import MILPBuilder, encode_network, homogenized_input
from ._net import _forward, check_params, exact_params

__all__ = ["Equivalence", "equivalent"]

_METHODS = ("auto", "regions", "milp")
#: points evaluated by the sampled check of ``method="auto"``
_NUM_SAMPLES = 2048
#: points whose joint activation patterns estimate the number of joint regions (auto)
_NUM_ESTIMATE = 20000
#: ``method="auto"`` runs the regions method before the MILP when at most this many joint
#: regions are expected (about 10-20 ms each; the MILP of two networks that agree has no
#: bound to prune with and took over 300 s on a 2-16-16-1 pair the regions settle in 9 s)
_REGIONS_FIRST = 50_000
#: seconds the MILP may take in ``method="auto"`` before the regions method decides
_MILP_SHARE = 60.0
_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)


@dataclasses.dataclass(frozen=True, repr=False)
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
            ``"symmetry"``, ``"reduction"`` (the symmetry check after dead, constant and
            parallel hidden neurons are merged away) or ``"bottleneck"`` (the
            polynomial-time test of docs/relu_equivalence.md).
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
            ``"symmetry"`` method gives a permutation and a rescaling per hidden layer; the
            ``"bottleneck"`` method (generic three-layer bottleneck networks) any of the
            symmetries of docs/concepts_relu.md §4.
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


class _Pair:
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
                f"networks must have the same input dimension to be compared; got {dp} and {dq}")
        if mp != mq:
            raise ArchitectureError(
                f"networks must have the same output dimension to be compared; got {mp} and {mq}")
        self.p = ExactNet(p, exact_params(p_raw))
        self.q = ExactNet(q, exact_params(q_raw))
        self.d, self.m = dp, mp
        self.tol = tol
        self.scale = check_finite_result(max(path_norm_scale(p), path_norm_scale(q)),
                                         "the networks' scale (path norm)")
        self.E = int(math.floor(math.log2(self.scale))) if self.scale > 0 else 0
        self.bp, self.bq = _balanced(self.p, self.E), _balanced(self.q, self.E)
        self.fp, self.fq = self.bp.params, self.bq.params
        # absolute threshold, per unit of max(1, ||x||_inf), in balanced output units
        self.thr = tol * math.ldexp(self.scale, -self.E) if self.scale > 0 else 0.0
        self.thr_q = to_fmpq(self.thr)

    def relative(self, x) -> tuple[flint.fmpq, flint.fmpq]:
        """Exact ``(max_o |f_p(x)_o - f_q(x)_o|, max(1, ||x||_inf))`` of the balanced nets."""
        xq = [v if isinstance(v, flint.fmpq) else to_fmpq(float(v)) for v in x]
        a, _ = exact_forward(self.bp, xq)
        b, _ = exact_forward(self.bq, xq)
        diff = max(abs(u - v) for u, v in zip(a, b))
        return diff, max([_ONE] + [abs(v) for v in xq])

    def exceeds(self, x) -> bool:
        """Whether the exact relative difference at ``x`` exceeds ``tol`` (> 0 if tol = 0)."""
        diff, norm = self.relative(x)
        return diff > self.thr_q * norm

    def rel_value(self, x) -> float:
        diff, norm = self.relative(x)
        if diff == 0:
            return 0.0
        base = math.ldexp(self.scale, -self.E)
        return max(_float(diff / norm) / base, 5e-324) if base > 0 else math.inf

    def witness_difference(self, x) -> float:
        """``max_o |f_p(x)_o - f_q(x)_o|`` of the networks as given, exactly, rounded."""
        xq = [to_fmpq(float(v)) for v in x]
        a, _ = exact_forward(self.p, xq)
        b, _ = exact_forward(self.q, xq)
        diff = max(abs(u - v) for u, v in zip(a, b))
        return 0.0 if diff == 0 else max(float(diff), 5e-324)


def _float(v: flint.fmpq) -> float:
    try:
        return int(v.p) / int(v.q)
    except OverflowError:  # pragma: no cover - beyond the float range
        return math.inf if v > 0 else -math.inf


def _balanced(net: ExactNet, E: int) -> ExactNet:
    """``net`` with every hidden neuron rescaled by a power of two (incoming row of size
    about 1, outgoing column compensating) and the output layer divided by ``2**E``: the
    same function divided by ``2**E``, exactly."""
    Ws = [flint.fmpq_mat(W) for W in net.Wq]
    bs = [list(b) for b in net.bq]
    exps = []  # the power of two dividing each hidden neuron
    for l in range(net.num_layers - 1):
        exps.append([0] * Ws[l].nrows())
        for i in range(Ws[l].nrows()):
            row = [Ws[l][i, j] for j in range(Ws[l].ncols())] + [bs[l][i]]
            nz = [v for v in row if v != 0]
            if not nz:
                continue
            e = max(binary_exponent(v) for v in nz)
            exps[l][i] = e
            f = _pow2(-e)
            for j in range(Ws[l].ncols()):
                Ws[l][i, j] *= f
            bs[l][i] *= f
            g = _pow2(e)
            for k in range(Ws[l + 1].nrows()):
                Ws[l + 1][k, i] *= g
    f = _pow2(-E)
    L = net.num_layers - 1
    for k in range(Ws[L].nrows()):
        for j in range(Ws[L].ncols()):
            Ws[L][k, j] *= f
        bs[L][k] *= f
    floats = [(np.array([[_float(W[i, j]) for j in range(W.ncols())] for i in range(W.nrows())]),
               np.array([_float(v) for v in b])) for W, b in zip(Ws, bs)]
    out = ExactNet(floats, list(zip(Ws, bs)))
    out.exps = exps
    return out


def _pow2(e: int) -> flint.fmpq:
    return flint.fmpq(2 ** e) if e >= 0 else flint.fmpq(1, 2 ** -e)


def _clip(x: np.ndarray, dom: Domain) -> np.ndarray:
    if dom.kind == "box":
        return np.clip(x, dom.lower, dom.upper)
    if dom.kind == "orthant":
        return np.maximum(x, 0.0)
    return x


def _result(pair: _Pair, dom: Domain, *, equivalent: bool, witness=None, max_difference=None,
            method: str, certified: bool, num_regions=None, num_lps=0, num_milps=0,
            note: str) -> Equivalence:
    wdiff = None if witness is None else pair.witness_difference(witness)
    return Equivalence(bool(equivalent), None if witness is None else np.asarray(witness, float),
                       wdiff, None if max_difference is None else float(max_difference),
                       method, bool(certified), pair.tol, float(pair.scale), num_regions,
                       int(num_lps), int(num_milps), dom, note)


def equivalent(p: Any, q: Any, domain: Any = None, *, tol: Any = DEFAULT_TOL,
               method: str = "auto", seed: Any = 0, progress: bool = False,
               max_regions: int | None = None, time_limit: float | None = None) -> Equivalence:
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
    tol = check_tol(tol)
    progress = check_bool(progress, "progress")
    if not isinstance(method, str) or method not in _METHODS:
        raise InputError(f"method must be one of {_METHODS}; got {short_repr(method)}")
    rng = as_seed_rng(seed)
    pair = _Pair(p, q, tol)
    dom = as_domain(domain, pair.d)
    budget = Budget("equivalent", pair.d, max_regions=max_regions, time_limit=time_limit,
                    progress=progress, unit="joint region")
    if method == "regions":
        return _by_regions(pair, dom, budget)
    if method == "milp":
        res = _by_milp(pair, dom, budget)
        if res is not None:
            return res
        budget.check_time(stage="the MILP")
        out = _by_regions(pair, dom, budget)
        return dataclasses.replace(out, num_milps=2 * pair.m,
                                   note=f"the MILP was inconclusive; {out.note}")
    # auto: the cheap checks first, then regions or the MILP by the expected cost
    res = _by_sampling(pair, dom, rng)
    if res is None:
        res = _by_symmetry(pair, dom)
    if res is None:
        res = _by_reduction(pair, dom)
    if res is None and dom.kind == "whole":
        res = _by_bottleneck(pair, p, q, dom)
    if res is not None:
        return res
    budget.check_time(stage="the sampled and symmetry checks")
    expected = _expected_joint_regions(pair, dom, rng)
    why = "sampling found no difference above tol"
    if expected <= _REGIONS_FIRST:
        out = _by_regions(pair, dom, budget)
        why += f"; about {expected:.0f} joint regions expected: regions first"
        return dataclasses.replace(out, note=f"{why}; {out.note}")
    left = budget.remaining()
    res = _by_milp(pair, dom, budget, time_limit=_MILP_SHARE if left is None
                   else min(_MILP_SHARE, left))
    if res is not None and not res.equivalent:
        return res
    try:
        budget.check_time(stage="the MILP")
        out = _by_regions(pair, dom, budget)
    except ComputationLimitError as err:
        err.partial = res   # the MILP's floating-point "equivalent" (certified=False), if any
        raise
    why += (f"; about {expected:.0f} joint regions expected: the MILP first, which "
            + ("found no confirmed difference" if res is not None else
               "was inconclusive (or reached its time share)"))
    return dataclasses.replace(out, num_milps=2 * pair.m, note=f"{why}; {out.note}")


def _expected_joint_regions(pair: _Pair, dom: Domain, rng) -> float:
    """A rough count of the joint regions (distinct joint activation patterns at random
    points, Chao1-corrected as in :func:`~neuromanifold.relu.estimate_regions`), to order
    the expensive methods; a few milliseconds."""
    from collections import Counter
    X = _sample_points(dom, pair.d, rng, _NUM_ESTIMATE)
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

def _sample_points(dom: Domain, d: int, rng: np.random.Generator, n: int) -> np.ndarray:
    if dom.kind == "box":
        return dom.lower + (dom.upper - dom.lower) * rng.random((n, d))
    # homogeneous sampling x = y / s, the measure of the relative difference; a quarter of
    # the points far out (s down to 1e-6) for differences at infinity
    y = rng.uniform(-1.0, 1.0, (n, d))
    if dom.kind == "orthant":
        y = np.abs(y)
    s = rng.uniform(0.0, 1.0, n)
    s[: n // 4] = 10.0 ** -rng.uniform(0.0, 6.0, n // 4)
    return y / np.maximum(s, 1e-6)[:, None]


def _by_sampling(pair: _Pair, dom: Domain, rng) -> Equivalence | None:
    """Evaluate both (balanced) networks on sample points; confirm the largest relative
    differences exactly. ``None`` when no sample confirms a difference."""
    X = _sample_points(dom, pair.d, rng, _NUM_SAMPLES)
    with np.errstate(all="ignore"):
        diff = np.abs(_forward(pair.fp, X) - _forward(pair.fq, X)).max(axis=1)
        rel = diff / np.maximum(1.0, np.abs(X).max(axis=1))
    rel = np.where(np.isfinite(rel), rel, 0.0)
    order = np.argsort(-rel)[:8]
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    for i in order:
        # float rounding of the forward pass is far below tol; with tol = 0 any sample may
        # show an exact difference
        if pair.tol > 0 and not rel[i] > pair.thr:
            break
        if pair.exceeds(X[i]):
            return _result(pair, dom, equivalent=False, witness=X[i],
                           max_difference=max(float(rel[order[0]]) / base, pair.rel_value(X[i])),
                           method="sampling", certified=True,
                           note=f"sampled check: the largest of {_NUM_SAMPLES} sampled "
                                "differences exceeds tol, confirmed in exact arithmetic")
    return None


# -- a permutation and rescaling of hidden neurons ----------------------------------------

def _by_symmetry(pair: _Pair, dom: Domain) -> Equivalence | None:
    """Match every hidden neuron of q to a positive multiple of one of p (layer by layer,
    an assignment on the directions of the incoming rows), build the exactly equivalent
    copy ``p'`` of p, and bound ``|f_q(x) - f_p'(x)|`` by
    ``B max(1, ||x||_inf)`` with ``B`` the largest output row sum of
    ``sum_l |M^q_L| ... |M^q_{l+1}| |M^q_l - M^p'_l| |M^p'_{l-1}| ... |M^p'_1|`` (augmented
    layer matrices; ReLU is 1-Lipschitz). ``None`` unless a matching exists and
    ``B <= tol * scale`` (with tol = 0: ``B = 0``, an exact symmetry)."""
    from scipy.optimize import linear_sum_assignment

    bp, bq = pair.bp, pair.bq
    if bp.widths != bq.widths:
        return None
    L = bp.num_layers
    perm_prev = list(range(pair.d))
    s_prev = [_ONE] * pair.d
    Wn, bn = [], []  # p' exactly
    found = []
    for l in range(L):
        Wp, bpl = bp.Wq[l], bp.bq[l]
        n, m_in = Wp.nrows(), Wp.ncols()
        # p's layer in q's coordinates of the previous layer (exact)
        A = flint.fmpq_mat(n, m_in)
        for i in range(n):
            for k in range(m_in):
                v = Wp[i, perm_prev[k]]
                if v != 0:
                    A[i, k] = v / s_prev[k]
        if l == L - 1:
            Wn.append(A)
            bn.append(list(bpl))
            break
        Rp = np.array([[_float(A[i, k]) for k in range(m_in)] + [_float(bpl[i])] for i in range(n)])
        Rq = np.hstack([bq.params[l][0], bq.params[l][1][:, None]])
        np_, nq_ = np.abs(Rp).max(axis=1), np.abs(Rq).max(axis=1)
        if np.any(np_ == 0) or np.any(nq_ == 0):
            return None
        Up, Uq = Rp / np_[:, None], Rq / nq_[:, None]
        cost = np.abs(Uq[:, None, :] - Up[None, :, :]).max(axis=2)
        rows, cols = linear_sum_assignment(cost)
        if cost[rows, cols].max() > 1e-6:
            return None
        perm = [int(c) for c in cols]  # q's neuron i ~ s_i * p's neuron perm[i]
        s = [to_fmpq(float(nq_[i] / np_[perm[i]])) for i in range(n)]
        W2 = flint.fmpq_mat(n, m_in)
        b2 = []
        for i in range(n):
            for k in range(m_in):
                W2[i, k] = s[i] * A[perm[i], k]
            b2.append(s[i] * bpl[perm[i]])
        Wn.append(W2)
        bn.append(b2)
        found.append((perm, s))
        perm_prev, s_prev = perm, s
    # the bound, in floats: nonnegative matrices, so float rounding only loses a relative
    # n * 2**-53 per product, covered by the factor (1 + 1e-9)
    def aug(W, b, exact):
        n, m_in = (W.nrows(), W.ncols()) if exact else W.shape
        M = np.zeros((n + 1, m_in + 1))
        if exact:
            M[:n, :m_in] = [[abs(_float(W[i, k])) for k in range(m_in)] for i in range(n)]
            M[:n, m_in] = [abs(_float(v)) for v in b]
        else:
            M[:n, :m_in], M[:n, m_in] = np.abs(W), np.abs(b)
        M[n, m_in] = 1.0
        return M

    Mq = [aug(W, b, False) for W, b in bq.params]
    Mp = [aug(W, b, True) for W, b in zip(Wn, bn)]
    D = []
    for l in range(L):
        W, b = Wn[l], bn[l]
        Wq_, bq_ = bq.Wq[l], bq.bq[l]
        n, m_in = W.nrows(), W.ncols()
        Dl = np.zeros((n + 1, m_in + 1))
        for i in range(n):
            for k in range(m_in):
                Dl[i, k] = abs(_float(Wq_[i, k] - W[i, k]))
            Dl[i, m_in] = abs(_float(bq_[i] - b[i]))
        D.append(Dl)
    total = None
    for l in range(L):
        right = np.eye(pair.d + 1)  # |M^p'_{l-1}| ... |M^p'_1|
        for k in range(l):
            right = Mp[k] @ right
        left = np.eye(D[l].shape[0])   # |M^q_L| ... |M^q_{l+1}|
        for k in range(l + 1, L):
            left = Mq[k] @ left
        term = left @ D[l] @ right
        total = term if total is None else total + term
    B = float(total[:-1].sum(axis=1).max()) * (1.0 + 1e-9)
    if not B <= pair.thr:
        return None
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    from ._symmetries import Permutation, Scaling
    sym = []
    for l, (perm, s) in enumerate(found):
        # named transformations of the networks as given (the balancing powers of two undone)
        sym.append(Permutation(l + 1, tuple(perm)))
        sym.append(Scaling(l + 1, tuple(
            math.ldexp(_float(s[i]), bq.exps[l][i] - bp.exps[l][perm[i]]) for i in range(len(perm)))))
    out = _result(pair, dom, equivalent=True, max_difference=B / base, method="symmetry",
                  certified=True,
                  note="q is a permutation and positive rescaling of p's hidden neurons up to "
                       f"a parameter difference that moves the function by at most "
                       f"{B / base:.3g} relative (Lipschitz bound in the parameters)")
    return dataclasses.replace(out, symmetry=tuple(sym))


# -- a reduced form: dead, constant and parallel neurons merged away ----------------------

def _reduce(net: ExactNet, tol: float):
    """A smaller network computing (up to a bounded difference) the same function.

    First, with ``tol > 0``, every hidden neuron whose row ``(W_j, b_j)`` is, up to ``tol``
    (max-norm of the rows scaled to max-abs 1), a positive multiple of an earlier neuron's
    row of the same layer is moved onto that exact multiple; the effect on the function is
    bounded as in :func:`_by_symmetry` (exact differences, float products with a margin).
    Then, exactly and until nothing changes: a neuron with no outgoing weight is removed;
    a neuron with a zero incoming row computes the constant ``relu(b_j)``, folded into the
    next layer's biases; a neuron whose row is a positive multiple ``lam`` of another's
    (``relu(lam z) = lam relu(z)``) is merged into it (its outgoing column times ``lam``
    added to the other's).

    Returns:
        ``(params, delta)``: the reduced parameters as ``(W, b)`` lists of Fractions and an
        absolute bound ``delta`` on ``|f_net(x) - f_reduced(x)| / max(1, ||x||_inf)``
        (0.0 when only exact steps were taken); ``None`` when nothing can be removed or a
        hidden layer would be left empty.
    """
    L = net.num_layers
    W = [[[net.Wq[l][i, j] for j in range(net.Wq[l].ncols())] for i in range(net.Wq[l].nrows())]
         for l in range(L)]
    b = [list(net.bq[l]) for l in range(L)]
    delta = 0.0
    if tol > 0:
        W0, b0 = [[list(r) for r in Wl] for Wl in W], [list(bl) for bl in b]
        snapped = False
        for l in range(L - 1):
            rows = [W[l][j] + [b[l][j]] for j in range(len(W[l]))]
            big = [max((abs(v) for v in r), default=_ZERO) for r in rows]
            U = np.array([[_float(v / m) if m != 0 else 0.0 for v in r]
                          for r, m in zip(rows, big)]).reshape(len(rows), -1)
            for j in range(len(rows)):
                if big[j] == 0:
                    continue
                for i in range(j):
                    if big[i] == 0 or not np.abs(U[j] - U[i]).max() <= tol:
                        continue
                    lam = big[j] / big[i]
                    new = [lam * v for v in rows[i]]
                    if new != rows[j]:
                        W[l][j], b[l][j] = new[:-1], new[-1]
                        snapped = True
                    break
        if snapped:
            delta = _difference_bound(W0, b0, W, b)
    changed, reduced = True, False
    while changed:
        changed = False
        for l in range(L - 1):
            drop: set = set()
            keys: dict = {}
            for j in range(len(W[l])):
                if all(W[l + 1][k][j] == 0 for k in range(len(W[l + 1]))):
                    drop.add(j)
                    continue
                if all(v == 0 for v in W[l][j]):
                    if b[l][j] > 0:
                        for k in range(len(W[l + 1])):
                            b[l + 1][k] += W[l + 1][k][j] * b[l][j]
                    drop.add(j)
                    continue
                row = W[l][j] + [b[l][j]]
                piv = abs(next(v for v in row if v != 0))
                key = tuple(v / piv for v in row)
                i = keys.get(key)
                if i is None:
                    keys[key] = (j, piv)
                    continue
                i, piv_i = i
                lam = piv / piv_i
                for k in range(len(W[l + 1])):
                    W[l + 1][k][i] += lam * W[l + 1][k][j]
                drop.add(j)
            if drop:
                if len(drop) == len(W[l]):
                    return None   # a constant function on every input: not this route
                keep = [j for j in range(len(W[l])) if j not in drop]
                W[l] = [W[l][j] for j in keep]
                b[l] = [b[l][j] for j in keep]
                W[l + 1] = [[r[j] for j in keep] for r in W[l + 1]]
                changed = reduced = True
    if not reduced:
        return None
    params = [(np.array([[fmpq_to_fraction(v) for v in r] for r in Wl], dtype=object),
               np.array([fmpq_to_fraction(v) for v in bl], dtype=object)) for Wl, bl in zip(W, b)]
    return params, delta


def _difference_bound(Wa, ba, Wb, bb) -> float:
    """The bound of :func:`neuromanifold._tolerance.function_distance_bound` for two exact
    networks of the same widths (lists of fmpq), with the differences taken exactly."""
    def aug(W, bias, fn):
        n, m = len(W), len(W[0]) if W else 0
        M = np.zeros((n + 1, m + 1))
        for i in range(n):
            for k in range(m):
                M[i, k] = fn(W[i][k])
            M[i, m] = fn(bias[i])
        return M

    absf = lambda v: abs(_float(v))  # noqa: E731
    L = len(Wa)
    Ma = [aug(Wa[l], ba[l], absf) for l in range(L)]
    Mb = [aug(Wb[l], bb[l], absf) for l in range(L)]
    for M in Ma + Mb:
        M[-1, -1] = 1.0
    D = [aug([[x - y for x, y in zip(ra, rb)] for ra, rb in zip(Wa[l], Wb[l])],
             [x - y for x, y in zip(ba[l], bb[l])], absf) for l in range(L)]
    total = None
    for l in range(L):
        right = np.eye(Ma[0].shape[1])
        for k in range(l):
            right = Ma[k] @ right
        left = np.eye(D[l].shape[0])
        for k in range(l + 1, L):
            left = Mb[k] @ left
        term = left @ D[l] @ right
        total = term if total is None else total + term
    return float(total[:-1].sum(axis=1).max()) * (1.0 + 1e-9)


def _by_reduction(pair: _Pair, dom: Domain) -> Equivalence | None:
    """Remove dead and constant neurons and merge (nearly) parallel ones in both networks
    (:func:`_reduce`), then the symmetry check on the reduced pair; the three differences
    (p to its reduction, the reductions, q's reduction to q) add up within ``tol``.
    ``None`` when nothing reduces or the reduced pair is not related by a symmetry."""
    rp, rq = _reduce(pair.p, pair.tol), _reduce(pair.q, pair.tol)
    if rp is None and rq is None:
        return None
    (pp, dp), (qq, dq) = (rp or (_fraction_params(pair.p), 0.0)), \
        (rq or (_fraction_params(pair.q), 0.0))
    budget = pair.tol * pair.scale - dp - dq
    if budget < 0 or (pair.tol == 0 and (dp or dq)):
        return None
    try:
        probe = _Pair(pp, qq, 0.0)
    except NeuromanifoldError:
        return None
    sub_tol = 0.0 if pair.tol == 0 else (
        min(budget / probe.scale, 0.5) if probe.scale > 0 else 0.0)
    sub = _Pair(pp, qq, sub_tol)
    res = _by_symmetry(sub, dom)
    if res is None:
        return None
    total = dp + dq + res.max_difference * sub.scale
    rel = total / pair.scale if pair.scale > 0 else (0.0 if total == 0 else math.inf)
    if rel > pair.tol:
        return None
    widths = lambda ps: "-".join(str(W.shape[0]) for W, _ in ps[:-1])  # noqa: E731
    return _result(pair, dom, equivalent=True, max_difference=rel, method="reduction",
                   certified=True,
                   note=f"with dead, constant and parallel hidden neurons merged (hidden widths "
                        f"{widths(pair.p.params)} -> {widths(pp)} and "
                        f"{widths(pair.q.params)} -> {widths(qq)}), q is a permutation and "
                        f"positive rescaling of p; the differences add up to at most "
                        f"{rel:.3g} relative")


def _fraction_params(net: ExactNet) -> list:
    return [(np.array([[fmpq_to_fraction(W[i, j]) for j in range(W.ncols())]
                       for i in range(W.nrows())], dtype=object),
             np.array([fmpq_to_fraction(v) for v in bl], dtype=object))
            for W, bl in zip(net.Wq, net.bq)]


def _by_bottleneck(pair: _Pair, p: Any, q: Any, dom: Domain) -> Equivalence | None:
    """The polynomial-time test of generic three-layer bottleneck networks (canonical forms
    and the named symmetries, docs/relu_equivalence.md); ``None`` when it does not apply or
    cannot certify its verdict (then the exact engine decides)."""
    from ._canonical import equivalent_bottleneck
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
        out = _result(pair, dom, equivalent=True, max_difference=res.max_difference,
                      method="bottleneck", certified=True,
                      note=f"generic bottleneck networks: {res.note}")
        return dataclasses.replace(out, symmetry=tuple(res.symmetry))
    if res.witness is None:
        return None
    out = _result(pair, dom, equivalent=False, witness=res.witness,
                  max_difference=res.max_difference, method="bottleneck", certified=True,
                  note=f"generic bottleneck networks: {res.note}")
    # the witness is confirmed exactly like every other witness
    return out if pair.exceeds(res.witness) else None


# -- regions of the joint network ---------------------------------------------------------

class _Hom:
    """The homogenized cone of a cell, ``{(y, s) : a_i . y - c_i s <= 0}``, exactly and as
    floats (each row scaled by a power of two, exponent kept)."""

    def __init__(self, cell, d: int):
        self.rows_q = [list(a) + [-c] for a, c in zip(cell.rows_q, cell.offs_q)]
        fl = [pow2_floats(r, d) for r in self.rows_q]
        self.rows_f = np.array([f for f, _ in fl]).reshape(-1, d + 1)
        self.exps = [e for _, e in fl]


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
        l1 = sum((abs(v) for v in h_q[:d]), _ZERO) + max(h_q[d], _ZERO)
        if sol is None:
            return float(_float(l1)), _box_argmax(h_f, d), l1
        return None, None, l1
    val = math.ldexp(-float(sol.fun), eh)
    # exact bound: h = sum_i mu_i A_i + r with mu >= 0, and A v <= 0, so
    # h . v <= r . v <= sum_{j<d} |r_j| + max(r_d, 0)
    r = list(h_q)
    for i, dual in enumerate(sol.dual_ub[:k]):
        mu = -float(dual)
        if not mu > 0:
            continue
        f = to_fmpq(mu) * _pow2(eh - hom.exps[i])
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
            yield _clip(x, dom)
            for lam in (1e-9, 1e-6, 1e-3):  # pulled towards the cell's interior point
                yield _clip(x + lam * (cell.center_f - x), dom)
    # a difference "at infinity" (s = 0), or an optimum far out
    for t in (10.0 ** -k for k in range(1, 16)):
        yield _clip(y / t, dom)


def _cell_candidates(cell, dom: Domain, d: int):
    """Float inputs inside (or next to) a cell, for cells only a few floats wide."""
    yield np.asarray(cell.center_f, float)
    for k in range(d):
        e = np.zeros(d)
        e[k] = cell.radius / 2
        yield _clip(cell.center_f + e, dom)
        for to in (np.inf, -np.inf):
            x = np.array(cell.center_f, float)
            x[k] = np.nextafter(x[k], to)
            yield _clip(x, dom)


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
        t = flint.fmpq(1, 2 ** k)
        yield [yi / t for yi in y]


def _by_regions(pair: _Pair, dom: Domain, budget: Budget) -> Equivalence:
    """The regions method, streamed: only the joint regions where the maps differ by more
    than ``tol`` (by their bound) are kept, to look for a witness at the end."""
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
                sup = max(sup, _float(l1) / base)
                continue
            if hom is None:
                hom = _Hom(cell, d)
            for sign in (1, -1):
                h = [sign * v for v in row]
                with budget.guard(stage="the maximum of a difference"):
                    val, pt, bound = _cell_sup(hom, h, d, engine)
                if val is not None:
                    sup = max(sup, min(val, _float(bound)) / base)
                if bound <= pair.thr_q:
                    continue
                suspects.append((-math.inf if val is None else val, cell, hom, h, pt))
    if not suspects:
        what = ("have identical exact affine maps" if differing == 0 else
                f"differ by at most tol ({differing} of them not identically)")
        return _result(pair, dom, equivalent=True, max_difference=sup, method="regions",
                       certified=True, num_regions=n_cells, num_lps=engine.counter.count,
                       note=f"all {n_cells} joint regions {what}")
    suspects.sort(key=lambda t: -t[0])
    note = (f"{len(suspects)} (region, output, sign) maxima of {n_cells} joint regions "
            f"exceed tol by their bound")
    tried: set = set()
    for _, cell, _, _, pt in suspects:
        cands = list(_lp_candidates(pt, cell, dom, d))
        if id(cell) not in tried:
            tried.add(id(cell))
            cands += list(_cell_candidates(cell, dom, d))
        for x in cands:
            if np.all(np.isfinite(x)) and pair.exceeds(x):
                return _result(pair, dom, equivalent=False, witness=x,
                               max_difference=max(sup, pair.rel_value(x)), method="regions",
                               certified=True, num_regions=n_cells,
                               num_lps=engine.counter.count, note=note)
    # no float candidate confirmed: decide each suspect with the exact simplex
    fallback = None
    for _, cell, hom, h, _ in suspects:
        budget.check_time(stage="the exact maxima")
        val, v = _exact_sup(hom, h, d)
        if val is None or val <= pair.thr_q:
            continue
        sup = max(sup, _float(val) / base)
        for xq in _exact_candidates(v, d):
            x = _clip(np.array([_float(t) for t in xq]), dom)
            if np.all(np.isfinite(x)) and pair.exceeds(x):
                return _result(pair, dom, equivalent=False, witness=x,
                               max_difference=max(sup, pair.rel_value(x)), method="regions",
                               certified=True, num_regions=n_cells,
                               num_lps=engine.counter.count,
                               note=note + "; maximum found by the exact simplex")
        if fallback is None:  # pragma: no cover - a maximum no float input shows
            fallback = np.array([_float(t) for t in next(_exact_candidates(v, d))])
    if fallback is None:
        return _result(pair, dom, equivalent=True, max_difference=sup, method="regions",
                       certified=True, num_regions=n_cells, num_lps=engine.counter.count,
                       note=f"all {n_cells} joint regions differ by at most tol (decided by "
                            "the exact simplex where the floating-point bound was too weak)")
    return _result(pair, dom, equivalent=False, witness=_clip(fallback, dom),  # pragma: no cover
                   max_difference=sup, method="regions", certified=True,
                   num_regions=n_cells, num_lps=engine.counter.count,
                   note=note + "; the exact maximum exceeds tol, but no float input near "
                               "the maximizer shows it (the witness is its rounding)")


# -- mixed-integer programming -------------------------------------------------------------

# HiGHS's tolerances: a binary may sit MILP_FEAS off its integer and a row may be violated
# by MILP_FEAS. Through the big-M rows of a ReLU with pre-activation bounds [lo, hi] this
# lets h be off by about _FEAS * (1 + max(|lo|, |hi|)), which later layers carry on.
_FEAS = 2 * MILP_FEAS
#: where the MILP's objective puts the equivalence threshold (module docs of _by_milp)
_OBJ_TARGET = 1e-2


def _encode_net(B: MILPBuilder, params: list, ys: list[int], s_var: int):
    """Encode a network on the input variables (:mod:`neuromanifold.relu._milp_encoding`);
    return the expressions of its outputs and, per output, a bound on how far the solver's
    tolerances can move it from the true network output."""
    layers, out = encode_network(B, params, B.inputs(ys), s_var)
    errs = np.full(len(ys), _FEAS)
    for (W, _), layer in zip(params, layers):
        pre = np.abs(np.asarray(W, dtype=float)) @ errs
        free = pre + _FEAS * (1.0 + np.maximum(np.abs(layer.lo), np.abs(layer.hi)))
        errs = np.where(layer.state == -1, 0.0, np.where(layer.state == 1, pre, free))
    return out, np.abs(np.asarray(params[-1][0], dtype=float)) @ errs


def _by_milp(pair: _Pair, dom: Domain, budget: Budget,
             time_limit: float | None = None) -> Equivalence | None:
    """The MILP method on the homogenized networks; ``None`` when inconclusive (or when
    ``time_limit`` seconds, or the budget's time, ran out)."""
    t_end = None if time_limit is None else time.monotonic() + time_limit
    if budget.deadline is not None:
        t_end = budget.deadline if t_end is None else min(t_end, budget.deadline)
    m = pair.m
    B = MILPBuilder()
    ys, s_var = homogenized_input(B, dom)
    out_p, err_p = _encode_net(B, pair.fp, ys, s_var)
    out_q, err_q = _encode_net(B, pair.fq, ys, s_var)
    A, ubs, lbv, ubv, integer = B.problem()
    out_lo, out_hi = B.bounds(np.vstack([B.widen(out_p), B.widen(out_q)]), pad=False)
    out_scale = max(1.0, float(np.max(np.abs(out_lo))), float(np.max(np.abs(out_hi))))
    # below this the MILP's answer is solver noise: its tolerances can move each output
    # by up to err_p + err_q
    noise = max(4 * MILP_FEAS * out_scale, 2.0 * float(np.max(err_p + err_q)))
    base = math.ldexp(pair.scale, -pair.E) if pair.scale > 0 else 1.0
    # The objective is the difference of two networks that nearly agree: its optimum is of
    # the size of the threshold (1e-9 relative), far below the solver's reduced-cost
    # tolerance (HiGHS: 1e-7), at which the simplex calls any vertex optimal, so a
    # difference far out (at s = 0) was bounded by 0. Scaling the objective by K puts the
    # threshold at 1e-2, well above that tolerance; values are divided by K again.
    K = max(1.0, _OBJ_TARGET / max(pair.thr, noise, 1e-300))
    bound = 0.0
    best_val, witness = -np.inf, None
    diff = B.widen(out_p) - B.widen(out_q)
    for o in range(m):
        g = diff[o]
        for sign in (1.0, -1.0):
            left = None if t_end is None else t_end - time.monotonic()
            if left is not None and left <= 0:
                return None
            res = solve_milp(-sign * K * g, A, ubs, lbv, ubv, integer, time_limit=left)
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
        return _result(pair, dom, equivalent=False, witness=witness,
                       max_difference=max(best_val / base, pair.rel_value(witness)),
                       method="milp", certified=True, num_milps=2 * m,
                       note="the MILP optimum is attained at an exactly confirmed witness "
                            "(homogenized networks)")
    if bound <= max(pair.thr, noise):
        res_note = (f"; its resolution {noise / base:.2g} exceeds tol" if noise > pair.thr
                    else "")
        return _result(pair, dom, equivalent=True, max_difference=max(bound, 0.0) / base,
                       method="milp", certified=False, num_milps=2 * m,
                       note=f"the MILP bounds the relative difference by {bound / base:.3g}"
                            f" (floating-point MILP; not certified){res_note}")
    return None


def _milp_points(u: np.ndarray, ys: list[int], s_var: int, dom: Domain):
    # G_p - G_q is continuous, so a difference at (y, s) persists at (y, t) for t close to
    # s; at s = 0 (a difference "at infinity") the kink may be arbitrarily far out, hence
    # a geometric sequence of scales down to 1e-15
    y = u[ys]
    s = float(u[s_var])
    for t in ([s] if s > 1e-9 else []) + [10.0 ** -k for k in range(1, 16)]:
        yield _clip(y / t, dom)
