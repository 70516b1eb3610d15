"""The naive ground truth: symbolic fields and brackets with sympy (small models only).

Every generator ``phi_i`` (each path monomial of a ReLU network, each output on the data,
each entry of a linear network's end-to-end matrix or filter) is a sympy polynomial; its
gradient field and all brackets are symbolic (sympy Jacobians). ``V_{k+1} = V_k +
[V_0, V_k]`` is kept as a basis *of functions* (a bracket linearly dependent on the
fields kept, as polynomials, is dropped), so the Lie algebra is explored exactly; the
rank at ``theta`` of each depth is exact (``fmpq_mat``). The search stops when the rank
stops growing, when no new independent field appears (the algebra is closed), or at
``max_depth``. Used by the tests and the benchmark as the reference the fast path
(:mod:`._lie`) is checked against.
"""

from __future__ import annotations

import itertools
from typing import Any

import flint
import numpy as np

from ..relu import ReLUNet, check_params
from ._laws import data_rows, exact_masks, model_of

__all__ = ["naive_lie_trace", "generator_polynomials"]


def _rat(q: flint.fmpq):
    import sympy  # start-up: a slow import

    return sympy.Rational(int(q.p), int(q.q))


def generator_polynomials(model: Any, params: Any = None, data: Any = None):
    """``(symbols, polynomials, theta)``: the generators ``phi_i`` as sympy expressions in
    the flattened parameters, and the exact point."""
    import sympy  # start-up: a slow import

    m = model_of(model, params, data)
    syms = sympy.symbols(f"t0:{m.D}")
    theta = [_rat(q) for q in m.theta]
    polys = []
    if _is_relu(model):
        p = check_params(model if params is None else params)
        widths = ReLUNet.from_params(p).widths
        Ws, bs, pos = [], [], 0
        for n, k in zip(widths[:-1], widths[1:]):
            Ws.append(sympy.Matrix(k, n, syms[pos : pos + k * n]))
            pos += k * n
            bs.append(sympy.Matrix(syms[pos : pos + k]))
            pos += k
        if data is None:
            polys = _paths(Ws, bs)
        else:
            X, _ = data_rows(data, widths[0])
            masks = exact_masks(p, m.theta, widths, X)
            for k_, x in enumerate(X):
                h = sympy.Matrix([_rat(v) for v in x])
                for l in range(len(Ws)):
                    h = Ws[l] * h + bs[l]
                    if l < len(Ws) - 1:
                        h = sympy.Matrix([h[j] if masks[l][k_][j] else 0 for j in range(len(h))])
                polys += [sympy.expand(v) for v in h]
    elif m.generators in ("end-to-end matrix", "outputs on data"):  # LinearFCNet
        widths = model.widths
        Ws, pos = [], 0
        for n, k in zip(widths[:-1], widths[1:]):
            Ws.append(sympy.Matrix(k, n, syms[pos : pos + k * n]))
            pos += k * n
        W = Ws[0]
        for M in Ws[1:]:
            W = M * W
        if data is None:
            polys = [sympy.expand(v) for v in W]
        else:
            X, _ = data_rows(data, widths[0])
            for x in X:
                polys += [sympy.expand(v) for v in W * sympy.Matrix([_rat(v) for v in x])]
    else:  # end-to-end filter of a LinearConvNet
        net = model
        v: dict = {}
        offsets = np.concatenate([[0], np.cumsum(net.layer_sizes)]).astype(int)
        ranges = [range(s) for s in net.layer_sizes]
        for t in itertools.product(*ranges):
            pos = np.zeros(net.ndim, dtype=int)
            term = 1
            for l, j in enumerate(t):
                pos += np.array(np.unravel_index(j, net.filter_shapes[l])) * np.array(
                    net.cumulative_strides[l]
                )
                term = term * syms[offsets[l] + j]
            key = tuple(int(x) for x in pos)
            v[key] = v.get(key, 0) + term
        polys = [sympy.expand(e) for e in v.values()]
    polys = [q for q in polys if q != 0]
    return syms, polys, theta


def _is_relu(model: Any) -> bool:
    return isinstance(model, (ReLUNet, list, tuple))


def _paths(Ws: list, bs: list) -> list:
    """Every path monomial of a ReLU network (from an input or a bias to an output)."""
    import sympy  # start-up: a slow import

    # paths[l][j]: the monomials of the paths ending at neuron j of layer l
    n0 = Ws[0].shape[1]
    ends = [[sympy.Integer(1)] for _ in range(n0)]  # an input starts a path with factor 1
    for W, b in zip(Ws, bs):
        new = []
        for j in range(W.shape[0]):
            mons = [b[j]]
            for i in range(W.shape[1]):
                mons += [W[j, i] * m for m in ends[i]]
            new.append(mons)
        ends = new
    return [m for mons in ends for m in mons]


def naive_lie_trace(
    model: Any, params: Any = None, *, data: Any = None, max_depth: int = 4
) -> dict:
    """The rank of ``V_k(theta)`` for ``k = 0, 1, ...`` by symbolic brackets.

    Returns:
        A dict with ``trace`` (ranks per depth), ``rank``, ``count`` (``D - rank``),
        ``dimension``, ``reason`` (``"closed"``, ``"stable"`` or ``"max depth"``) and
        ``num_fields`` (functions kept).
    """
    # Whole: its helpers share the symbols, the monomial index and the kept rows of one run
    import sympy  # start-up: a slow import

    syms, polys, theta = generator_polynomials(model, params, data)
    D = len(syms)
    subs = dict(zip(syms, theta))

    def grad(p):
        return [sympy.expand(sympy.diff(p, s)) for s in syms]

    def bracket(X, Y):
        JY = [[sympy.diff(y, s) for s in syms] for y in Y]
        JX = [[sympy.diff(x, s) for s in syms] for x in X]
        return [
            sympy.expand(
                sum(JY[i][j] * X[j] for j in range(D) if JY[i][j] != 0)
                - sum(JX[i][j] * Y[j] for j in range(D) if JX[i][j] != 0)
            )
            for i in range(D)
        ]

    monomials: dict = {}

    def coefficient_row(F):
        row = {}
        for i, comp in enumerate(F):
            if comp == 0:
                continue
            for mono, c in sympy.Poly(comp, *syms).terms():
                key = (i, mono)
                if key not in monomials:
                    monomials[key] = len(monomials)
                row[monomials[key]] = c
        return row

    kept_rows: list = []

    def independent(F) -> bool:
        row = coefficient_row(F)
        if not row:
            return False
        rows = kept_rows + [row]
        n = len(monomials)
        M = flint.fmpq_mat(len(rows), n)
        for a, r in enumerate(rows):
            for j, c in r.items():
                M[a, j] = flint.fmpq(int(sympy.fraction(c)[0]), int(sympy.fraction(c)[1]))
        if M.rank() == len(rows):
            kept_rows.append(row)
            return True
        return False

    def values(fields):
        out = []
        for F in fields:
            out.append(
                [
                    flint.fmpq(int(sympy.fraction(v)[0]), int(sympy.fraction(v)[1]))
                    for v in (sympy.sympify(c).subs(subs) for c in F)
                ]
            )
        return out

    base = [grad(p) for p in polys]
    base = [F for F in base if independent(F)]
    pool = list(base)
    newest = list(base)
    trace, reason = [], "max depth"

    def rank_now():
        vals = values(pool)
        return int(flint.fmpq_mat(vals).rank()) if vals else 0

    trace.append(rank_now())
    for _ in range(max_depth):
        added = []
        for X in base:
            for Y in newest:
                F = bracket(X, Y)
                if independent(F):
                    added.append(F)
        pool += added
        newest = added
        trace.append(rank_now())
        if not added:
            reason = "closed"
            break
        if trace[-1] == trace[-2]:
            reason = "stable"
            break
    return {
        "trace": trace,
        "rank": trace[-1],
        "count": D - trace[-1],
        "dimension": D,
        "reason": reason,
        "num_fields": len(pool),
    }
