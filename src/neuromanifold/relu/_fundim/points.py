"""The rank of the parameter Jacobian at given input points, modulo a prime: what the
network's values at those points (a user's data) determine near the parameter.

At a point ``x`` whose every hidden pre-activation is exactly nonzero (proven by a forward
pass with rounding-error bounds), ``theta' -> f_theta'(x)`` is polynomial near ``theta``,
and its gradient for output ``k`` has, in layer ``l``'s block, ``G_l[k, :] (x) a_{l-1}``
(weights) and ``G_l[k, :]`` (biases): the derivative of output ``k`` in layer ``l``'s
pre-activations times layer ``l``'s input. Unlike the rows of a whole region
(:mod:`~neuromanifold.relu._fundim.layered_rank`), these are the rows of one ``x`` only, so
they are stacked densely: the floats are exact binary fractions, reduced modulo
:data:`~neuromanifold.relu._fundim.layered_rank.PRIME`, every product exact, and the rank of
the stacked rows modulo the prime is a proven lower bound of their rank over the
rationals. Points are added in batches until the rank reaches its goal or the points run
out, stop raising it, or fill the rows' memory; points whose pattern is not
proven are left out (a subset of the points can only lower the rank).
"""

from __future__ import annotations

import time

import numpy as np

from .._core.numbers import forward_error_bounds
from .layered_rank import DIRECT_LIMIT, PRIME, rank_seconds, residue_matmul, residue_rank, residues

__all__ = ["point_jacobian_rank", "POINT_RANK_LIMIT"]

#: Residues the stacked rows may hold (200 MB) before more points are refused, unless
#: fewer than twice the parameters' rows
_MAX_ENTRIES = 25_000_000

#: Batches in a row that add no rank before the points are no longer taken
_STALLED = 3

#: Parameters up to which the stacked rows at the points are factorized (their rank is one
#: flint call on a matrix of about P x P residues).
POINT_RANK_LIMIT = DIRECT_LIMIT


def point_jacobian_rank(
    params: list, X: np.ndarray, goal: int, deadline: float | None = None
) -> tuple[int | None, int, str | None]:
    """``(rank, num_points, reason)``: a proven lower bound of the rank of the parameter
    Jacobian of ``params`` (float64 layers) at the rows of ``X`` whose activation pattern
    is proven (``num_points`` of them), added in batches until it reaches ``goal``;
    ``rank = None`` with the reason when it is not computed (too many parameters, no
    point with a proven pattern, or a rank that would end past ``deadline``)."""
    P = sum(W.size + b.size for W, b in params)
    if P > POINT_RANK_LIMIT:
        return (
            None,
            0,
            (
                f"the rank at the data points is a dense factorization of about P x P residues, "
                f"done up to P = {POINT_RANK_LIMIT:,} parameters (here {P:,})"
            ),
        )
    layers = forward_error_bounds(params, X)
    proven = np.ones(X.shape[0], dtype=bool)
    for Z, err in layers:
        proven &= np.all(np.abs(Z) > err, axis=1)
    if not proven.any():
        return (
            None,
            0,
            (
                "no data point has a proven activation pattern (every one has a pre-activation "
                "within rounding of 0), so the values there are not a polynomial of the parameter"
            ),
        )
    Xp = X[proven]
    masks = [Z[proven] > 0 for Z, _ in layers]
    m = params[-1][0].shape[0]
    batch = max(1, -(-(goal + 16) // m))  # enough rows for the goal, and a little slack
    rows = np.zeros((0, P), dtype=np.int64)
    rank, used, stalled = 0, 0, 0
    for start in range(0, Xp.shape[0], batch):
        if rows.shape[0] >= max(2 * P, _MAX_ENTRIES // P):  # the dense rows' memory
            return (
                rank,
                used,
                (
                    f"the rank stays below its goal after {rows.shape[0]:,} rows, where more "
                    f"points are not taken (the dense rows' memory)"
                ),
            )
        stop = min(start + batch, Xp.shape[0])
        block = _rows(params, Xp[start:stop], [mk[start:stop] for mk in masks])
        grown = np.vstack([rows, block])
        expected = rank_seconds(grown.shape, exact=True)
        if deadline is not None and expected > 0.25 and time.monotonic() + expected > deadline:
            return (
                (rank if used else None),
                used,
                (
                    f"the rank with more points would end past the time limit (about "
                    f"{expected:.0f} s for {grown.shape[0]:,} rows)"
                ),
            )
        before = rank
        rows, used = grown, stop
        rank = residue_rank(rows)
        if rank >= goal:
            break
        stalled = stalled + 1 if rank == before else 0
        if stalled == _STALLED:  # batches of new points added nothing: more are unlikely to
            return rank, used, f"{_STALLED} batches of more points did not raise the rank"
    return rank, used, None


def _rows(params: list, X: np.ndarray, masks: list) -> np.ndarray:
    """The Jacobian rows modulo the prime at the rows of ``X`` (one per point and output,
    parameters in the order of ``params``: ``W_l`` row-major, then ``b_l``), the hidden
    patterns ``masks`` given."""
    N, L = X.shape[0], len(params)
    Wr = [residues(W) for W, _ in params]
    acts = [residues(X)]
    for l in range(L - 1):
        z = (residue_matmul(acts[-1], Wr[l].T) + residues(params[l][1])[None, :]) % PRIME
        acts.append(np.where(masks[l], z, 0))
    m = params[-1][0].shape[0]
    G = np.broadcast_to(np.eye(m, dtype=np.int64), (N, m, m))  # d f / d z_L
    blocks = []
    for l in range(L - 1, -1, -1):
        a = acts[l]
        W_block = (G[:, :, :, None] * a[:, None, None, :]) % PRIME  # (N, m, n_l, n_{l-1})
        blocks.append(np.concatenate([W_block.reshape(N, m, -1), G], axis=2))
        if l:
            G = residue_matmul(G.reshape(N * m, -1), Wr[l]).reshape(N, m, -1)
            G = np.where(masks[l - 1][:, None, :], G, 0)
    return np.concatenate(blocks[::-1], axis=2).reshape(N * m, -1)
