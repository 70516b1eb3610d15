"""The lossless reduction as moves that keep the widths: every neuron the reduction would
remove becomes a *null* neuron (zero row, zero outgoing column), each step a named symmetry
of :mod:`neuromanifold.relu._deep.symmetries` that applies exactly on the floats.

Two networks whose reductions are a permutation and rescaling of each other are then related
by a sequence of named symmetries: the moves of the first, a permutation and rescaling that
matches the live neurons (and the null ones among themselves), and the inverses of the
second's moves in reverse order (:func:`reduction_symmetry`). This is what
:func:`~neuromanifold.relu.equivalent` returns as ``symmetry`` when its reduction step
decides.

The moves, per hidden layer and in rounds until none applies (a column zeroed in one layer
can leave a row of the next without a positive entry):

* an always-active neuron's bias moves into the next layer (:class:`ActiveBiasShift` to
  bias 0; a constant neuron, with zero weights, is then dead);
* a dead neuron's outgoing column is set to zero (:class:`DeadNeuronOutgoing`);
* a neuron whose row is a positive multiple of an earlier one's hands its outgoing column
  to it (:class:`ParallelNeuronSplit`);
* a neuron without outgoing weights gets a zero row (:class:`SilentNeuronIncoming`).

Always-active blocks with dependent rows and opposite pairs, which the reduction also
merges, are not turned into null neurons here (their moves are three-layer window symmetries):
pairs that need them get no symmetry, and the verdict stands on the reduction alone.
"""

from __future__ import annotations

import numpy as np

from ..._errors import SymmetryError
from ..._tolerance import DEFAULT_TOL, function_distance_bound
from .._analysis.reduction import sign_kinds
from .._bottleneck.symmetries import Permutation, Scaling, Symmetry, apply_sequence
from .symmetries import (ActiveBiasShift, DeadNeuronOutgoing, ParallelNeuronSplit,
                         SilentNeuronIncoming, layer_signs, parallel_pairs)

__all__ = ["null_moves", "reduction_symmetry"]

Params = list[tuple[np.ndarray, np.ndarray]]

#: rounds of moves at most (each round makes at least one neuron null or zeroes a bias)
_MAX_ROUNDS = 10_000


def _next_move(P: Params, tol: float) -> Symmetry | None:
    """The first move that applies to ``P`` (module docs), or ``None``; rows parallel at
    ``tol`` count as parallel, every other decision is exact."""
    for h in range(1, len(P)):
        W, b = P[h - 1]
        C = P[h][0]
        live_col = np.any(C != 0, axis=0)
        live_row = np.any(W != 0, axis=1) | (b != 0)
        dead, active = sign_kinds(layer_signs(P, h, 0.0), h == 1)
        for j in active:
            if b[j] != 0:   # a constant neuron (zero weights) then is dead, and is nulled
                return ActiveBiasShift(h, j, -float(b[j]))
        for j in dead:
            if live_col[j]:
                return DeadNeuronOutgoing(h, j, (0.0,) * C.shape[0])
        for j, k in parallel_pairs(P, h, tol, limit=W.shape[0] ** 2):
            if live_col[j] and live_col[k]:
                return ParallelNeuronSplit(h, (j, k), tuple(float(v) for v in C[:, k]))
        for j in np.flatnonzero(live_row & ~live_col):
            return SilentNeuronIncoming(h, int(j), (0.0,) * (W.shape[1] + 1))
    return None


def null_moves(params: Params, tol: float = 0.0) -> tuple[list[Symmetry], list[Params]]:
    """``(moves, states)``: the moves that make every removable neuron null (module docs)
    and the parameters before each move, then after the last (``len(moves) + 1`` states);
    each move applies at ``tol`` to the state before it (exactly with ``tol = 0``: rows
    parallel up to ``tol`` are the only decision it changes)."""
    moves: list[Symmetry] = []
    states = [params]
    for _ in range(_MAX_ROUNDS):
        move = _next_move(states[-1], tol)
        if move is None:
            break
        states.append(move.apply(states[-1], tol=tol))
        moves.append(move)
    return moves, states


def _match_live(p: Params, q: Params) -> list[tuple] | None:
    """Per hidden layer, ``(perm, scales)`` with q's neuron ``i`` = ``scales[i]`` times p's
    neuron ``perm[i]``: the live rows (p's in q's coordinates of the layer before) matched
    by one assignment on their cosines, the null ones in order; ``None`` when the counts of
    live neurons differ or a live row has no positive match."""
    from scipy.optimize import linear_sum_assignment  # start-up: a slow import
    found: list[tuple] = []
    perm_prev = s_prev = None
    for l in range(len(p) - 1):
        (Wp, bp), (Wq, bq) = p[l], q[l]
        A = Wp if perm_prev is None else Wp[:, perm_prev] / s_prev[None, :]
        Rp, Rq = np.hstack([A, bp[:, None]]), np.hstack([Wq, bq[:, None]])
        norm_p, norm_q = np.linalg.norm(Rp, axis=1), np.linalg.norm(Rq, axis=1)
        lp, lq = np.flatnonzero(norm_p > 0), np.flatnonzero(norm_q > 0)
        if len(lp) != len(lq) or len(Rp) != len(Rq):
            return None
        perm = np.zeros(len(Rq), dtype=int)
        scales = np.ones(len(Rq))
        if len(lq):
            cos = (Rq[lq] @ Rp[lp].T) / np.outer(norm_q[lq], norm_p[lp])
            if not np.all(np.isfinite(cos)):
                return None
            rows, cols = linear_sum_assignment(cos, maximize=True)
            if np.any(cos[rows, cols] < 0.5):
                return None
            perm[lq[rows]] = lp[cols]
            scales[lq[rows]] = norm_q[lq[rows]] / norm_p[lp[cols]]
        perm[np.flatnonzero(norm_q == 0)] = np.flatnonzero(norm_p == 0)
        found.append((perm, scales))
        perm_prev, s_prev = perm, scales
    return found


def reduction_symmetry(p: Params, q: Params, tol: float) -> tuple[tuple, float] | None:
    """``(symmetry, bound)``: named symmetries taking ``p`` to ``q`` (module docs), each
    applying at ``max(tol, DEFAULT_TOL)`` when the whole sequence is applied to ``p`` in
    floats, and ``bound``, the bound of
    :func:`~neuromanifold._tolerance.function_distance_bound` between that image and
    ``q`` (it includes the rounding of applying the moves); ``None`` when the nulled
    networks are not matched by a permutation and rescaling or a step does not apply."""
    if [W.shape for W, _ in p] != [W.shape for W, _ in q]:
        return None
    at = max(tol, DEFAULT_TOL)
    mp, sp = null_moves(p, at)
    mq, sq = null_moves(q, at)
    found = _match_live(sp[-1], sq[-1])
    if found is None:
        return None
    sym: list[Symmetry] = list(mp)
    for l, (perm, scales) in enumerate(found):
        sym += [Permutation(l + 1, tuple(perm.tolist())),
                Scaling(l + 1, tuple(scales.tolist()))]
    sym += [m.inverse(s) for m, s in zip(reversed(mq), reversed(sq[:-1]))]
    try:
        image = apply_sequence(sym, p, tol=at)
    except SymmetryError:
        return None
    return tuple(sym), function_distance_bound(image, q)
