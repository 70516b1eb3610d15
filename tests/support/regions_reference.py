"""The region engine's former refinement, kept as a reference for the tests: a binary
space partition per layer where every hyperplane not cut by the cell's inscribed ball is
decided by one Chebyshev LP on its far side, and both sides of every split by LPs (no pool
of interior points, no walks). Same exact certification (``Engine.decide``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from neuromanifold.exact._lp import dot
from neuromanifold.relu._core.domain import as_domain
from neuromanifold.relu._engine.cells import (
    Engine,
    ExactNet,
    _leaf,
    _side_row,
    float_signs,
    initial_cell,
    pow2_floats,
)


def reference_refine_stage(cell, k: int, l: int, net: ExactNet, engine: Engine):
    """The cells of the former ``iter_refine_stage`` (depth first over the binary space
    partition), one LP per undecided hyperplane and split side."""
    d = engine.d
    Zq = net.Wq[l] * cell.maps_q[k] + net.Baugq[l]
    n = Zq.nrows()
    ent = Zq.entries()
    aq = [ent[j * (d + 1) : j * (d + 1) + d] for j in range(n)]
    cq = [ent[j * (d + 1) + d] for j in range(n)]
    # float copies, each row scaled by a power of two (exact data stay exact; the floats
    # only steer the LPs)
    Zf = np.array([pow2_floats(ent[j * (d + 1) : (j + 1) * (d + 1)], d)[0] for j in range(n)])
    bits0: list[bool | None] = [None] * n
    cand0 = []
    zero = cell.zero_preact
    for j in range(n):
        if all(v == 0 for v in aq[j]):
            bits0[j] = bool(cq[j] > 0)  # constant on the cell; exactly 0 counts as inactive
            zero = zero or cq[j] == 0
        else:
            cand0.append(j)
    if zero != cell.zero_preact:
        cell = dataclasses.replace(cell, zero_preact=zero)
    Znorm = np.sqrt(np.einsum("ij,ij->i", Zf[:, :d], Zf[:, :d]))
    stack = [(cell, bits0, cand0)]
    while stack:
        geo, bits, cand = stack.pop()
        crossing = []  # (j, far_result or None when the ball is cut, near side or None)
        if cand:
            ci = np.array(cand)
            signs = float_signs(Zf[ci, :d], Zf[ci, d], geo.center_f)
            dists = np.abs(Zf[ci, :d] @ geo.center_f + Zf[ci, d])
        for t, j in enumerate(cand):
            af, cfl = Zf[j, :d], Zf[j, d]
            if signs[t]:
                near = bool(signs[t] > 0)
            else:
                zc = dot(aq[j], geo.center_q) + cq[j]
                if zc == 0:
                    crossing.append((j, None, None))
                    continue
                near = bool(zc > 0)
            nrm = float(Znorm[j])
            dist = float(dists[t]) / nrm if nrm > 0 else 0.0
            if dist < geo.radius * (1 + 1e-9):
                crossing.append((j, None, near))
                continue
            ra, rc, rfa, rfc = _side_row(aq[j], cq[j], af, cfl, not near)
            res = engine.decide(
                geo.rows_q + [ra],
                geo.offs_q + [rc],
                np.vstack([geo.rows_f, rfa[None, :]]),
                np.append(geo.offs_f, rfc),
            )
            if res is None:
                bits[j] = near
            else:
                crossing.append((j, res, near))
        if not crossing:
            yield _leaf(geo, bits, n, k, Zq)
            continue
        pick = next((c for c in crossing if c[1] is not None), crossing[0])
        j, far_res, near = pick
        rest = [c[0] for c in crossing if c[0] != j]
        af, cfl = Zf[j, :d], Zf[j, d]
        owner = (k, l, j)
        for side in (True, False):
            ra, rc, rfa, rfc = _side_row(aq[j], cq[j], af, cfl, side)
            if far_res is not None:
                if side == near:
                    res = (geo.center_f, geo.center_q, geo.radius)
                else:
                    res = far_res
            else:
                known = None
                nrm = float(np.linalg.norm(af))
                if near is not None and side == near and nrm > 0:
                    dist = abs(float(af @ geo.center_f + cfl)) / nrm
                    known = (geo.center_f, geo.center_q, min(geo.radius, dist))
                res = engine.decide(
                    geo.rows_q + [ra],
                    geo.offs_q + [rc],
                    np.vstack([geo.rows_f, rfa[None, :]]),
                    np.append(geo.offs_f, rfc),
                    known=known,
                )
            if res is None:
                continue
            center_f, center_q, radius = res
            child = geo.with_row(
                ra, rc, rfa, rfc, owner, center_f=center_f, center_q=center_q, radius=radius
            )
            b = list(bits)
            b[j] = side
            stack.append((child, b, rest))


def reference_patterns(params, domain=None) -> set:
    """The regions' flattened patterns by the former refinement (breadth first)."""
    net = ExactNet.from_params(params)
    engine = Engine(net.d)
    cells = [initial_cell(as_domain(domain, net.d), engine, [net])]
    for l in net.hidden_layers:
        cells = [c2 for c in cells for c2 in reference_refine_stage(c, 0, l, net, engine)]
    return {
        tuple(bool(v) for v in np.concatenate(c.patterns[0])) if c.patterns[0] else ()
        for c in cells
    }
