"""Directional derivatives of a ReLU network in parameter space, bounded over a domain by
mixed-integer programming (used by :func:`neuromanifold.relu.functional_dimension`).

For a parameter direction ``delta = (dW_l, db_l)`` the derivative
``g(x) = d/dt f_{theta + t delta}(x)`` at ``t = 0`` is, by forward-mode differentiation,

    ``z_l = W_l h_l + b_l``,  ``dz_l = dW_l h_l + W_l dh_l + db_l``,
    ``h_{l+1} = a_l * z_l``,  ``dh_{l+1} = a_l * dz_l``,  ``a_l = 1[z_l > 0]``,

with ``h_0 = x``, ``dh_0 = 0`` and ``g = dz_L`` at the output: an affine function of x on
each linear region of ``f_theta`` (``docs/relu_arrangement.md`` §5). Its rows ``J_R delta``
over a region R vanish exactly when ``g`` vanishes on R, so ``delta`` lies in the kernel of
the stacked Jacobians of every region iff ``g`` is zero on the whole domain.

Whether it is, is one MILP: maximize ``|g_o|`` over outputs o and the domain, with one
binary per hidden neuron whose sign is not fixed there, big-M rows from interval bounds
for ``h = a z`` (the shared encoding, :mod:`neuromanifold.relu._engine.milp`, with its
margin rule) and the same for ``dh = a dz``. Unbounded domains are handled by homogenizing,
``x = y / s`` with ``|y_k| <= 1``, ``0 <= s <= 1`` (every expression above is then linear
in ``(y, s)``, biases times ``s``): the MILP bounds ``s g(y / s) = g(x) / max(1, |x|_inf)``
up to the normalization, the relative size used throughout (``docs/relu.md``,
"Tolerances"); a box is ``lower s <= y <= upper s``. An optimum above the threshold
comes with an activation pattern; an LP then finds a point deep inside that pattern's
region, where the caller stacks new rows.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .._core.domain import Domain
from .._engine.lp import MILP_FEAS, solve_lp, solve_milp
from .._engine.milp import MILPBuilder, affine, homogenized_input, relu_layer

__all__ = ["TangentMILP", "TangentWitness", "interior_point", "MARGIN"]

#: how far inside its region (relative to the pre-activation's range over the domain) a
#: MILP point must be: well above the solver's feasibility tolerance, so that the binaries
#: at a solution are the activation pattern of an actual full-dimensional region
MARGIN = 1e-7
#: seconds the first form of a MILP (maximize t) gets before the second (t >= threshold)
_SEARCH_SECONDS = 2.0
#: relative to the interval bounds (of g, and of the pre-activations times the output
#: weights), the size below which an optimum is solver noise
NOISE = 1e-6
#: where the objective is scaled to put the threshold: HiGHS calls a vertex optimal up to
#: a reduced-cost tolerance of about 1e-7, so a threshold far below it must be scaled up
_OBJ_TARGET = 1e-2


@dataclasses.dataclass
class TangentWitness:
    """A point where ``sign * g_o`` exceeds the threshold: its value there and the
    activation pattern (per hidden layer) of its region."""

    value: float
    patterns: list[np.ndarray]


class TangentMILP:
    """The homogenized network on a domain, ready to bound directional derivatives.

    Args:
        Ws, bs: float layers (the last one is the output layer).
        domain: the domain (``"whole"``, ``"orthant"`` or ``"box"``).
    """

    def __init__(self, Ws: list[np.ndarray], bs: list[np.ndarray], domain: Domain):
        self.Ws, self.bs, self.domain = Ws, bs, domain
        self.d = Ws[0].shape[1]
        self.num_milps = 0

    def exceeds(
        self,
        dWs: list[np.ndarray],
        dbs: list[np.ndarray],
        threshold: float,
        time_limit: float | None = None,
    ) -> TangentWitness | bool | None:
        """Is ``|g_o(x)| > threshold`` for some output o and some x in the domain, for the
        direction ``(dWs, dbs)``?

        One MILP for all outputs and both signs: maximize ``t`` subject to
        ``t <= sign * g_o`` for the one (output, sign) that binaries select. Only points at
        least a margin inside their region count (every unfixed neuron's pre-activation at
        least ``MARGIN`` times its range away from 0), so that the pattern of a witness is
        that of a full-dimensional region. The search stops at the first solution above
        the threshold.

        Returns:
            A :class:`TangentWitness`; ``False`` when the solver proves there is none (up
            to its tolerances); ``None`` when it does not finish (time limit, numerical
            trouble).
        """
        # Whole: builds one MILP row by row; its builder and bounds feed the two solves at the end
        Ws, bs = self.Ws, self.bs
        m = Ws[-1].shape[0]
        B = MILPBuilder()
        ys, s = homogenized_input(B, self.domain)
        E = B.inputs(ys)
        dE = np.zeros_like(E)
        layers = []
        big_m = 0.0  # the largest interval bound of a pre-activation or its derivative
        for l in range(len(Ws) - 1):
            Z = affine(B, Ws[l], bs[l], E, s)
            dZ = dWs[l] @ E + Ws[l] @ dE
            dZ[:, s] += dbs[l]
            dlo, dhi = B.bounds(dZ)
            # the active side needs the margin: without room for it the neuron is off.
            # A later layer's neuron is fixed on only when z >= margin everywhere: its z
            # may be identically 0 on a region (lo about 0), where ReLU'(0) = 0 makes it
            # inactive; a first-layer z is affine in x, never 0 on an open set
            dhs: dict[int, int] = {}

            def tangent_rows(i: int, a: int, dZ=dZ, dlo=dlo, dhi=dhi, dhs=dhs) -> None:
                # dh = a dz for a neuron with a binary, by the same big-M rows
                if not np.any(dZ[i]):  # the direction does not reach this neuron: dh = 0
                    return
                dh = dhs[i] = B.var(min(dlo[i], 0.0), max(dhi[i], 0.0))
                B.row(None, {dh: 1.0, a: -dhi[i]}, 0.0)  # dh <= dhi a
                B.row(None, {dh: -1.0, a: dlo[i]}, 0.0)  # dh >= dlo a
                B.row(-dZ[i], {dh: 1.0, a: -dlo[i]}, -dlo[i])  # dh <= dz - dlo (1-a)
                B.row(dZ[i], {dh: -1.0, a: dhi[i]}, dhi[i])  # dh >= dz - dhi (1-a)

            layer = relu_layer(B, Z, margin=MARGIN, both_sides=l == 0, each=tangent_rows)
            layers.append(layer)
            big_m = max(
                big_m,
                float(np.max(np.abs(np.concatenate([layer.lo, layer.hi, dlo, dhi])), initial=0.0)),
            )
            # dh: dz on the fixed active neurons, the variables above on the others
            dE = np.zeros((Z.shape[0], B.num_vars))
            on = layer.state == 1
            dE[on, : dZ.shape[1]] = dZ[on]
            for i, dh in dhs.items():
                dE[i, dh] = 1.0
            E = B.widen(layer.H)
        G = dWs[-1] @ E + Ws[-1] @ dE
        G[:, s] += dbs[-1]
        g_lo, g_hi = B.bounds(G)
        size = np.maximum(np.abs(g_lo), np.abs(g_hi))
        scale = float(np.max(size))
        if scale <= threshold:  # |g| <= threshold on the whole domain by interval bounds
            return False
        # below this the solver's tolerances (MILP_FEAS on every row, through big-M
        # constants up to the interval bounds, then the output weights) can move the
        # optimum
        w_out = max(1.0, float(np.max(np.abs(Ws[-1]), initial=0.0)))
        threshold = max(threshold, NOISE * max(scale, big_m * w_out))
        # t <= sign * g_o where u_(o, sign) = 1; at least one u is 1
        t_var = B.var(0.0, scale)
        us = []
        for o in range(m):
            for sign in (1.0, -1.0):
                u = B.var(0.0, 1.0, integer=True)
                us.append(u)
                big = scale + size[o]
                B.row(-sign * G[o], {t_var: 1.0, u: big}, big)
        B.row(None, {u: -1.0 for u in us}, -1.0)
        A, rhs_a, lb, ub, integer = B.problem()
        K = float(np.clip(_OBJ_TARGET / max(threshold, MILP_FEAS * scale, 1e-300), 1.0, 1e8))
        obj = np.zeros(B.num_vars)
        obj[t_var] = -K
        # Two forms of the same question. First maximize t >= 0, stopping at a solution
        # above the threshold: quick when a witness exists (the search has an incumbent
        # from the start). If that does not settle it within a short time, require
        # t >= threshold: "no witness" is then an infeasible program, which the solver
        # often proves much faster than it bounds the optimum. (HiGHS's objective_bound
        # option would express the same but gave wrong optima with presolve on.)
        for t_lo, cap in ((0.0, _SEARCH_SECONDS), (threshold, None)):
            left = (
                time_limit if cap is None else (cap if time_limit is None else min(cap, time_limit))
            )
            lb[t_var] = t_lo
            self.num_milps += 1
            t0 = time.monotonic()
            res = solve_milp(
                obj, A, rhs_a, lb, ub, integer, time_limit=left, objective_target=-K * threshold
            )
            if time_limit is not None:
                time_limit -= time.monotonic() - t0
            if res.status == "infeasible" and t_lo > 0:
                return False
            if res.status in ("optimal", "target"):
                value = -res.fun / K
                if value > threshold:
                    return TangentWitness(value, [ly.pattern(res.x) for ly in layers])
                if res.status == "optimal":
                    return False
            if time_limit is not None and time_limit <= 0:
                return None
        return None


def interior_point(
    Ws: list[np.ndarray], bs: list[np.ndarray], patterns: list[np.ndarray], domain: Domain
) -> tuple[np.ndarray, float] | None:
    """A point deep inside the region of ``patterns`` in the domain, by one LP.

    Maximizes the radius ``rho`` of a ball around ``x`` inside the region (and the
    domain), after homogenizing (``x = y / s``, ``r = rho s``, ``|y| <= 1``,
    ``r <= s <= 1``). Returns ``(x, r / max(s, |y|_inf))`` (the radius relative to
    ``max(1, |x|_inf)``, the size that a tolerance compares with) or ``None`` when the
    pattern has no full-dimensional region there.
    """
    d = Ws[0].shape[1]
    nv = d + 2  # y, s, r
    s, r = d, d + 1
    A, ub = [], []
    H = np.hstack([np.eye(d), np.zeros((d, 1))])
    for l, mask in enumerate(patterns):
        Z = Ws[l] @ H
        Z[:, d] += bs[l]
        for i, on in enumerate(mask):
            a, c = Z[i, :d], Z[i, d]
            sigma = 1.0 if on else -1.0
            na = float(np.linalg.norm(a))
            if na == 0.0:
                if (on and not c > 0) or (not on and c > 0):
                    return None
                continue
            row = np.zeros(nv)
            row[:d], row[s], row[r] = -sigma * a / na, -sigma * c / na, 1.0
            A.append(row)
            ub.append(0.0)
        H = Z * np.asarray(mask, dtype=float)[:, None]
    dom = domain
    for k in range(d):
        if dom.kind == "box":
            row = np.zeros(nv)
            row[k], row[s], row[r] = -1.0, float(dom.lower[k]), 1.0
            A.append(row)
            ub.append(0.0)
            row = np.zeros(nv)
            row[k], row[s], row[r] = 1.0, -float(dom.upper[k]), 1.0
            A.append(row)
            ub.append(0.0)
        elif dom.kind == "orthant":
            row = np.zeros(nv)
            row[k], row[r] = -1.0, 1.0
            A.append(row)
            ub.append(0.0)
    row = np.zeros(nv)
    row[r], row[s] = 1.0, -1.0  # r <= s
    A.append(row)
    ub.append(0.0)
    lb = np.concatenate([-np.ones(d), [0.0, 0.0]])
    ubv = np.ones(nv)
    obj = np.zeros(nv)
    obj[r] = -1.0
    sol = solve_lp(obj, np.array(A), np.array(ub), lb=lb, ub=ubv)
    if sol.status != "optimal" or not sol.x[r] > 1e-12:
        return None
    y, sv, rv = sol.x[:d], float(sol.x[s]), float(sol.x[r])
    return y / sv, rv / max(sv, float(np.max(np.abs(y), initial=0.0)))
