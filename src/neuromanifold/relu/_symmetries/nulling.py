"""The lossless reduction as moves that keep the widths: every neuron the reduction would
remove becomes a *null* neuron (zero row, zero outgoing column), each step a named symmetry
of :mod:`neuromanifold.relu._symmetries.any_depth` that applies exactly on the floats.

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

import time

import numpy as np

from ..._errors import SymmetryError
from ..._tolerance import DEFAULT_TOL
from .._bounds.parameters import function_distance_bound
from .._core.rows import sign_kinds
from .any_depth import (
    ActiveBiasShift,
    DeadNeuronOutgoing,
    ParallelNeuronSplit,
    SilentNeuronIncoming,
    layer_signs,
    parallel_classes,
)
from .three_layer import Permutation, Scaling, Symmetry, apply_sequence

__all__ = ["null_moves", "reduction_symmetry"]

Params = list[tuple[np.ndarray, np.ndarray]]


def _layer_moves(P: Params, h: int, tol: float) -> list[Symmetry]:
    """The moves of one pass over hidden layer ``h`` (module docs), each valid after the
    ones before it: bias shifts, dead columns zeroed and parallel columns handed to the
    first neuron of their class all touch different neurons' entries (a split changes only
    that first neuron's column, which no later split of the pass reads); rows parallel at
    ``tol`` count as parallel, every other decision is exact."""
    W, b = P[h - 1]
    C = P[h][0]
    live_col = np.any(C != 0, axis=0)
    dead, active = sign_kinds(layer_signs(P, h, 0.0), h == 1)
    shifted = [j for j in active if b[j] != 0]
    moves: list[Symmetry] = [ActiveBiasShift(h, j, -float(b[j])) for j in shifted]
    # a constant neuron (zero weights) shifted to bias 0 is dead: its column goes next pass
    moves += [DeadNeuronOutgoing(h, j, (0.0,) * C.shape[0]) for j in dead if live_col[j]]
    # a shifted bias: parallel next pass
    skip = set(dead) | set(shifted) | set(np.flatnonzero(~live_col).tolist())
    moves += [
        ParallelNeuronSplit(h, (j0, k), tuple(float(v) for v in C[:, k]))
        for j0, k in parallel_classes(P, h, tol, skip=skip)
    ]
    return moves


def _silent_moves(P: Params, h: int) -> list[Symmetry]:
    """Zero rows for the neurons of hidden layer ``h`` without outgoing weights."""
    W, b = P[h - 1]
    live_row = np.any(W != 0, axis=1) | (b != 0)
    silent = live_row & ~np.any(P[h][0] != 0, axis=0)
    return [
        SilentNeuronIncoming(h, int(j), (0.0,) * (W.shape[1] + 1)) for j in np.flatnonzero(silent)
    ]


def null_moves(
    params: Params, tol: float = 0.0, deadline: float | None = None
) -> tuple[list[Symmetry], list[Symmetry], Params] | None:
    """``(moves, inverses, nulled)``: the moves that make every removable neuron null
    (module docs), in order, each checked to apply at ``tol`` to the parameters it meets
    (exactly with ``tol = 0``: rows parallel up to ``tol`` are the only decision it
    changes); the inverse of each (taking its image back to what it met); and the
    parameters after the last. Passes over the layers repeat until one makes no move;
    ``None`` when ``time.monotonic()`` passes ``deadline`` first."""
    P = [(W.copy(), b.copy()) for W, b in params]
    moves: list[Symmetry] = []
    inverses: list[Symmetry] = []

    def step(P: Params, move: Symmetry) -> Params:
        ok = move.applies(P, tol=tol)
        if not ok.applies:  # pragma: no cover - each move is built to apply
            raise SymmetryError(f"{move!r} does not apply: {ok.reason}")
        inverses.append(move.inverse(P))
        moves.append(move)
        return move._transform(P, tol)  # in place: no copy per move

    changed = True
    while changed:
        before = len(moves)
        for h in range(1, len(P)):
            if deadline is not None and time.monotonic() > deadline:
                return None
            for move in _layer_moves(P, h, tol):
                P = step(P, move)
            for move in _silent_moves(P, h):  # read after the pass's splits and zeros
                P = step(P, move)
        changed = len(moves) > before
    return moves, inverses, P


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


def reduction_symmetry(
    p: Params, q: Params, tol: float, deadline: float | None = None
) -> tuple[tuple, float] | None:
    """``(symmetry, bound)``: named symmetries taking ``p`` to ``q`` (module docs), the
    removable neurons made null at ``tol`` (exactly at ``tol = 0``), and ``bound``, the
    bound of
    :func:`~neuromanifold.relu._bounds.parameters.function_distance_bound` between the image
    of ``p`` (the whole sequence applied in floats, every step checked at
    ``max(tol, DEFAULT_TOL)``: the other network's moves are undone on rows that match
    its own up to rounding) and ``q``; ``None`` when the nulled networks are not matched
    by a permutation and rescaling, a step does not apply, or ``time.monotonic()``
    passes ``deadline``."""
    if [W.shape for W, _ in p] != [W.shape for W, _ in q]:
        return None
    found_p, found_q = null_moves(p, tol, deadline), null_moves(q, tol, deadline)
    if found_p is None or found_q is None:
        return None
    (mp, _, nulled_p), (_, undo_q, nulled_q) = found_p, found_q
    with np.errstate(over="ignore", invalid="ignore"):  # rows beyond the float range
        found = _match_live(nulled_p, nulled_q)
    if found is None:
        return None
    sym: list[Symmetry] = list(mp)
    for l, (perm, scales) in enumerate(found):
        sym += [Permutation(l + 1, tuple(perm.tolist())), Scaling(l + 1, tuple(scales.tolist()))]
    sym += undo_q[::-1]
    try:
        image = apply_sequence(sym, p, tol=max(tol, DEFAULT_TOL))
    except SymmetryError:
        return None
    return tuple(sym), function_distance_bound(image, q)
