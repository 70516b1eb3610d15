"""Ground-truth functional equivalence of two ReLU networks on a domain.

Two methods (definitions and soundness in ``docs/relu.md``):

* ``"regions"``: enumerate the regions of the *joint* network (the activation patterns of
  both networks at once, :mod:`neuromanifold.relu._engine`); on each joint region both
  networks are affine and their exact affine maps are compared. Exact on any domain,
  including all of R^d; both verdicts are certified.
* ``"milp"``: maximize ``+-(f_p - f_q)_o`` with a mixed-integer program (scipy ``milp``,
  HiGHS; big-M constants from interval bounds) over a box. On all of R^d or the orthant
  the networks are first homogenized, ``G(x, s) = s f(x / s)`` (each bias ``b`` becomes
  ``b s``), which is a bias-free ReLU network; ``f_p = f_q`` on the cone iff ``G_p = G_q``
  on the box ``[-1, 1]^d x [0, 1]`` (``[0, 1]^{d+1}`` for the orthant), by positive
  homogeneity and continuity. A "not equivalent" verdict is certified by a witness checked
  in exact arithmetic; an "equivalent" verdict rests on the MILP solver's floating-point
  bound and is reported with ``certified=False`` and the tolerance used.
* ``"auto"``: the MILP first (fast at finding witnesses); if it finds none, the regions
  method certifies the answer.

Every "not equivalent" result carries a witness ``x`` in the domain at which the exact
outputs differ (``witness_difference`` is that exact difference, rounded).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flint
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from .._errors import ArchitectureError, InputError, short_repr
from .._results import Result
from .._validation import check_bool
from ..exact._rational import to_fmpq
from ._domain import Domain, as_domain
from ._engine import Engine, ExactNet, enumerate_cells, exact_forward, output_map
from ._lp import solve_lp
from ._net import check_params

__all__ = ["Equivalence", "equivalent"]

_METHODS = ("regions", "milp", "auto")


@dataclasses.dataclass(frozen=True, repr=False)
class Equivalence(Result):
    """Verdict on ``f_p == f_q`` on a domain, with its evidence.

    Attributes:
        equivalent: whether the two networks compute the same function on the domain.
        witness: an input where the outputs differ (``None`` if equivalent, and in the
            pathological case of differing regions too thin to hold a float, see ``note``).
        witness_difference: ``max_o |f_p(w)_o - f_q(w)_o|`` at the witness, computed exactly
            and rounded to float (``None`` if equivalent).
        max_difference: ``sup_x max_o |f_p(x)_o - f_q(x)_o|`` over the domain where known
            (``0.0`` if equivalent, ``inf`` if unbounded, ``None`` if not computed: the MILP
            on an unbounded domain only decides the question).
        method: the method that produced the verdict.
        certified: the verdict is proved (exact arithmetic or an exactly checked witness).
        tolerance: the MILP threshold below which a bound counts as zero (0.0 when exact).
        num_regions: joint regions enumerated (regions method), else ``None``.
        num_lps, num_milps: LPs / MILPs solved.
        domain: the domain compared on.
        note: how the verdict was reached, in words.
    """

    equivalent: bool
    witness: np.ndarray | None
    witness_difference: float | None
    max_difference: float | None
    method: str
    certified: bool
    tolerance: float
    num_regions: int | None
    num_lps: int
    num_milps: int
    domain: Domain
    note: str


def _exact_difference(np_, nq, x) -> float:
    """``max_o |f_p(x)_o - f_q(x)_o|`` computed exactly, as a float (0.0 iff equal)."""
    xq = [to_fmpq(v if isinstance(v, flint.fmpq) else float(v)) for v in x]
    fp, _ = exact_forward(np_, xq)
    fq, _ = exact_forward(nq, xq)
    diff = max(abs(a - b) for a, b in zip(fp, fq))
    if diff == 0:
        return 0.0
    return max(float(diff), 5e-324)


def _clip(x: np.ndarray, dom: Domain) -> np.ndarray:
    if dom.kind == "box":
        return np.clip(x, dom.lower, dom.upper)
    if dom.kind == "orthant":
        return np.maximum(x, 0.0)
    return x


def _check_pair(p, q) -> tuple[list, list]:
    p = check_params(p)
    q = check_params(q)
    dp, dq = p[0][0].shape[1], q[0][0].shape[1]
    mp, mq = p[-1][0].shape[0], q[-1][0].shape[0]
    if dp != dq:
        raise ArchitectureError(
            f"networks must have the same input dimension to be compared; got {dp} and {dq}")
    if mp != mq:
        raise ArchitectureError(
            f"networks must have the same output dimension to be compared; got {mp} and {mq}")
    return p, q


def equivalent(p: Any, q: Any, domain: Any = None, method: str = "auto",
               progress: bool = False) -> Equivalence:
    """Decide whether two ReLU networks compute the same function on a domain.

    Args:
        p, q: parameters (lists of ``(W, b)``) with the same input and output dimensions;
            the architectures may differ otherwise.
        domain: ``None`` (all of R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain.
        method: ``"regions"`` (exact, certified), ``"milp"`` or ``"auto"`` (see module doc).
        progress: show a progress bar on stderr.

    Returns:
        An :class:`Equivalence` result.

    >>> one = [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.zeros(1))]
    >>> two = [(np.array([[2.0]]), np.zeros(1)), (np.array([[0.5]]), np.zeros(1))]
    >>> equivalent(one, two).equivalent
    True
    >>> r = equivalent(one, [(np.array([[1.0]]), np.zeros(1)), (np.array([[1.0]]), np.ones(1))])
    >>> r.equivalent, r.witness_difference
    (False, 1.0)
    """
    p, q = _check_pair(p, q)
    progress = check_bool(progress, "progress")
    if method not in _METHODS:
        raise InputError(f"method must be one of {_METHODS}; got {short_repr(method)}")
    np_, nq = ExactNet(p), ExactNet(q)
    dom = as_domain(domain, np_.d)
    if method == "regions":
        return _by_regions(np_, nq, dom, progress)
    res = _by_milp(np_, nq, dom)
    if method == "milp" and res is not None:
        return res
    if res is not None and not res.equivalent:
        return res
    out = _by_regions(np_, nq, dom, progress)
    n_milps = 2 * np_.widths[-1]
    why = ("the MILP found no confirmed difference" if res is not None
           else "the MILP was inconclusive")
    return dataclasses.replace(out, num_milps=n_milps, note=f"{why}; {out.note}")


# -- regions of the joint network ---------------------------------------------------------

def _by_regions(np_: ExactNet, nq: ExactNet, dom: Domain, progress: bool) -> Equivalence:
    engine = Engine(np_.d)
    cells, _ = enumerate_cells([np_, nq], dom, engine, progress=progress, desc="joint regions")
    d, m = np_.d, np_.widths[-1]
    best = None  # (sup, point, cell)
    sup_all = 0.0
    differing = 0
    diff_cells = []
    for cell in cells:
        Fp, _ = output_map(cell, 0, np_)
        Fq, _ = output_map(cell, 1, nq)
        if Fp == Fq:
            continue
        differing += 1
        diff_cells.append(cell)
        Dq = Fp - Fq  # exact difference of the affine maps, (m, d+1)
        for o in range(m):
            lin = [Dq[o, k] for k in range(d)]
            const = float(Dq[o, d])
            if all(v == 0 for v in lin):
                val, pt = abs(const), None
                sup_all = max(sup_all, val)
                if best is None or val > best[0]:
                    best = (val, pt, cell)
                continue
            g = np.array([float(v) for v in lin])
            sigma = float(np.abs(g).max())  # scale the objective: tiny costs look like 0 to HiGHS
            for sign in (1.0, -1.0):
                sol = solve_lp(-sign * g / sigma, cell.rows_f, cell.offs_f, counter=engine.counter)
                if sol.status == "unbounded":
                    val, pt = np.inf, None
                elif sol.status == "optimal":
                    val, pt = -sol.fun * sigma + sign * const, sol.x
                else:  # pragma: no cover - numerical trouble; the center still witnesses
                    val, pt = abs(float(sign * g @ cell.center_f + sign * const)), None
                sup_all = max(sup_all, val)
                if best is None or val > best[0]:
                    best = (val, pt, cell)
    if best is None:
        return Equivalence(True, None, None, 0.0, "regions", True, 0.0, len(cells),
                           engine.counter.count, 0, dom,
                           f"all {len(cells)} joint regions have identical exact affine maps")
    _, pt, best_cell = best
    wit, wdiff = None, 0.0
    for cell in [best_cell] + diff_cells:
        candidates = []
        if pt is not None and cell is best_cell:
            candidates.append(_clip(np.asarray(pt, float), dom))
        candidates.append(np.asarray(cell.center_f, float))
        for k in range(d):  # the difference is a non-zero affine map on the cell
            e = np.zeros(d)
            e[k] = cell.radius / 2
            candidates.append(_clip(cell.center_f + e, dom))
            for to in (np.inf, -np.inf):  # cells only a few floats wide
                x = np.array(cell.center_f, float)
                x[k] = np.nextafter(x[k], to)
                candidates.append(_clip(x, dom))
        for x in candidates:
            diff = _exact_difference(np_, nq, x)
            if diff > wdiff:
                wit, wdiff = x, diff
        if wit is not None:
            break
    note = f"{differing} of {len(cells)} joint regions have different exact affine maps"
    if wit is None:  # pragma: no cover - differing regions narrower than the float spacing
        # still proven (full-dimensional regions with different exact maps), but no float
        # input shows it: report the exact difference at the exact interior point
        wdiff = max(_exact_difference(np_, nq, best_cell.center_q), 5e-324)
        note += "; no float input lies where they differ, so there is no float witness"
    return Equivalence(False, wit, wdiff, float(sup_all), "regions", True, 0.0, len(cells),
                       engine.counter.count, 0, dom, note)


# -- mixed-integer programming -------------------------------------------------------------

class _MILPBuilder:
    """Variables with bounds/integrality and rows ``coef . v <= ub``."""

    def __init__(self):
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows: list[tuple[dict, float]] = []

    def var(self, lo: float, hi: float, integer: bool = False) -> int:
        self.lb.append(lo)
        self.ub.append(hi)
        self.integer.append(1 if integer else 0)
        return len(self.lb) - 1

    def row(self, coef: dict, ub: float) -> None:
        self.rows.append((coef, ub))


def _expr_bounds(expr, lb, ub) -> tuple[float, float]:
    coef, const = expr
    lo = hi = const
    for v, w in coef.items():
        a, b = w * lb[v], w * ub[v]
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


# HiGHS's defaults: a binary may sit 1e-6 off its integer (mip_feasibility_tolerance) and
# a row may be violated by 1e-7 (primal_feasibility_tolerance). Through the big-M rows of a
# ReLU with pre-activation bounds [lo, hi] this lets h be off by about
# _FEAS * (1 + max(|lo|, |hi|)), which later layers carry on (docs/concepts_relu.md §5 MILP fallback).
_FEAS = 1e-6 + 1e-7


def _encode_net(B: _MILPBuilder, net: ExactNet, inputs: list[int], s_var: int | None):
    """Encode ``net`` on input variables; return the output expressions
    ``(coef dict, const)`` and, per output, a bound on how far the solver's tolerances can
    move it from the true network output."""
    prev = [({v: 1.0}, 0.0) for v in inputs]
    errs = [_FEAS] * len(inputs)
    for l in range(net.num_layers):
        W, b = net.params[l]
        exprs, pre_errs = [], []
        for i in range(W.shape[0]):
            coef: dict[int, float] = {}
            const = 0.0
            err = 0.0
            for j, (pc, pk) in enumerate(prev):
                w = float(W[i, j])
                if w == 0.0:
                    continue
                err += abs(w) * errs[j]
                for v, c in pc.items():
                    coef[v] = coef.get(v, 0.0) + w * c
                const += w * pk
            if s_var is None:
                const += float(b[i])
            elif b[i] != 0:
                coef[s_var] = coef.get(s_var, 0.0) + float(b[i])
            exprs.append((coef, const))
            pre_errs.append(err)
        if l == net.num_layers - 1:
            return exprs, pre_errs
        nxt, errs = [], []
        for (coef, const), err in zip(exprs, pre_errs):
            lo, hi = _expr_bounds((coef, const), B.lb, B.ub)
            pad = 1e-9 * (1.0 + max(abs(lo), abs(hi)))
            lo, hi = lo - pad, hi + pad
            if hi <= 0:
                nxt.append(({}, 0.0))
                errs.append(0.0)
            elif lo >= 0:
                nxt.append((coef, const))
                errs.append(err)
            else:
                h = B.var(0.0, hi)
                a = B.var(0.0, 1.0, integer=True)
                r1 = {v: c for v, c in coef.items()}
                r1[h] = r1.get(h, 0.0) - 1.0
                B.row(r1, -const)                          # z <= h
                r2 = {v: -c for v, c in coef.items()}
                r2[h] = r2.get(h, 0.0) + 1.0
                r2[a] = r2.get(a, 0.0) - lo
                B.row(r2, const - lo)                       # h <= z - lo (1 - a)
                B.row({h: 1.0, a: -hi}, 0.0)                # h <= hi a
                nxt.append(({h: 1.0}, 0.0))
                errs.append(err + _FEAS * (1.0 + max(abs(lo), abs(hi))))
        prev = nxt
    return prev  # pragma: no cover


def _by_milp(np_: ExactNet, nq: ExactNet, dom: Domain) -> Equivalence | None:
    """The MILP method; ``None`` when its answer is inconclusive (then use regions)."""
    d, m = np_.d, np_.widths[-1]
    B = _MILPBuilder()
    homog = dom.kind != "box"
    if dom.kind == "box":
        xs = [B.var(float(lo), float(hi)) for lo, hi in zip(dom.lower, dom.upper)]
        s_var = None
    else:
        lo = 0.0 if dom.kind == "orthant" else -1.0
        xs = [B.var(lo, 1.0) for _ in range(d)]
        s_var = B.var(0.0, 1.0)
    out_p, err_p = _encode_net(B, np_, xs, s_var)
    out_q, err_q = _encode_net(B, nq, xs, s_var)
    nv = len(B.lb)
    A = np.zeros((len(B.rows), nv))
    ubs = np.zeros(len(B.rows))
    for r, (coef, ub) in enumerate(B.rows):
        for v, c in coef.items():
            A[r, v] += c
        ubs[r] = ub
    scale = 1.0
    for e in out_p + out_q:
        lo, hi = _expr_bounds(e, B.lb, B.ub)
        scale = max(scale, abs(lo), abs(hi))
    # below this the MILP's answer is solver noise: its tolerances (``_FEAS``) can move each
    # output by up to err_p + err_q
    tol = max(1e-6 * scale, 2.0 * max(ep + eq for ep, eq in zip(err_p, err_q)))
    cons = [LinearConstraint(A, -np.inf, ubs)] if len(B.rows) else []
    bound = 0.0
    best_val, witness, wdiff = -np.inf, None, 0.0
    for o in range(m):
        cp, kp = out_p[o]
        cq, kq = out_q[o]
        g = np.zeros(nv)
        for v, c in cp.items():
            g[v] += c
        for v, c in cq.items():
            g[v] -= c
        k = kp - kq
        for sign in (1.0, -1.0):
            res = milp(-sign * g, integrality=np.array(B.integer), bounds=Bounds(B.lb, B.ub),
                       constraints=cons, options={"mip_rel_gap": 1e-9})
            if res.status != 0 or res.x is None:
                return None
            val = -res.fun + sign * k
            dual = getattr(res, "mip_dual_bound", None)
            ubound = (-dual + sign * k) if dual is not None and np.isfinite(dual) else val
            bound = max(bound, ubound, val)
            u = np.asarray(res.x)
            if val > best_val or witness is None:
                # the first candidate (x / s at the optimum) that differs exactly
                for x in _milp_points(u, xs, s_var, dom):
                    diff = _exact_difference(np_, nq, x)
                    if diff > 0:
                        witness, wdiff = x, diff
                        break
            best_val = max(best_val, val)
    if witness is not None:
        return Equivalence(False, witness, wdiff, None if homog else float(max(best_val, wdiff)),
                           "milp", True, tol, None, 0, 2 * m, dom,
                           "the MILP optimum is attained at an exactly confirmed witness"
                           + (" (homogenized network on the cone)" if homog else ""))
    if bound <= tol:
        return Equivalence(True, None, None, 0.0 if not homog else None, "milp", False, tol,
                           None, 0, 2 * m, dom,
                           f"the MILP bounds |f_p - f_q| by {bound:.3g} <= tolerance {tol:.3g}"
                           " (floating-point MILP; not certified)")
    return None


def _milp_points(u: np.ndarray, xs: list[int], s_var: int | None, dom: Domain):
    x = u[xs]
    if s_var is None:
        yield _clip(x, dom)
        return
    # G_p - G_q is continuous, so a difference at (x, s) persists at (x, t) for t close to
    # s; at s = 0 (a difference "at infinity") the kink may be arbitrarily far out, hence
    # a geometric sequence of scales down to 1e-15
    s = float(u[s_var])
    for t in ([s] if s > 1e-9 else []) + [10.0 ** -k for k in range(1, 16)]:
        yield _clip(x / t, dom)
