"""Identifiability of networks with one hidden layer on R^d, decided by a theorem.

``f(x) = C relu(W x + b) + c`` with ``n`` hidden neurons, rows ``(w_i, b_i)`` of
``[W | b]`` and outgoing columns ``c_i`` of ``C``.

**Theorem.** Suppose every neuron has ``w_i != 0`` and ``c_i != 0``, and no two rows
``(w_i, b_i)``, ``(w_j, b_j)`` are multiples of each other (positive or negative). Then
the parameters with the same function on R^d are exactly the images of the given one
under permutations and positive rescalings of the neurons and flips of sets ``S`` of
neurons whose linear terms cancel, ``sum_{i in S} c_i w_i^T = 0``
(:class:`~neuromanifold.relu._symmetries.flips.NeuronFlip`). Hence the parameter is
identifiable (modulo permutation and positive scaling) iff no nonempty such ``S`` exists.

*Proof.* ``f`` is smooth off the hyperplanes ``H_i = {w_i . x + b_i = 0}``, which are
``n`` distinct hyperplanes; at a point of ``H_i`` on no other ``H_j`` (almost every point
of it) the gradient of ``f`` jumps by ``c_i w_i^T != 0`` across ``H_i``. Let ``theta'``
(same widths) have the same function. The kinks of ``f`` lie on the hyperplanes of the
neurons of ``theta'`` with a nonzero incoming ``w'`` (the others are constant), so each
of the ``n`` distinct ``H_i`` is the hyperplane of one of its ``n`` neurons: a bijection,
neuron ``pi(i)`` with ``(w', b')_{pi(i)} = lam_i (w_i, b_i)``, ``lam_i != 0``. Its jump
across ``H_i`` is ``|lam_i| c'_{pi(i)} w_i^T``, so ``c'_{pi(i)} = c_i / |lam_i|``:
neuron ``pi(i)`` is neuron ``i`` rescaled by ``|lam_i|``, and flipped when ``lam_i <
0``. With ``relu(-z) = relu(z) - z``, ``f_theta' - f_theta = -sum_{i in S} c_i (w_i . x +
b_i) + c' - c`` for the set ``S`` of flipped neurons, which vanishes iff ``sum_S c_i
w_i^T = 0`` and ``c' = c + sum_S c_i b_i``. A flipped parameter is off the orbit (no two
rows are negative multiples of each other). QED.

The hypotheses are checked in exact arithmetic on the float parameter: nonzero rows and
columns and positively parallel rows by the symmetry search (which comes first and
decides ``False`` with a dead, always-active, silent or parallel neuron), rows that are
exact multiples of each other here, of either sign (a pair of them is outside the theorem:
undecided; at ``tol > 0`` so is a pair parallel within ``tol`` that the search could not
turn into a move), and the cancelling
sets by :func:`~neuromanifold.relu._symmetries.flips.zero_sum_flips` (exact: an exact
rank modulo a prime, or the exact kernel enumerated). At ``tol > 0`` a ``True`` also
needs that no set of them cancels to within ``tol`` of its largest term
(:func:`near_cancellation`), the measure at which a flip applies at ``tol``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..._tolerance import svd
from .._core.rows import close_pairs, exact_multiple
from .._symmetries.flips import MAX_FREE, FlipSearch

__all__ = ["ShallowCheck", "shallow_check", "multiple_pairs", "near_cancellation"]

#: The theorem's name in results.
THEOREM = (
    "one hidden layer: the kinks of f and their gradient jumps determine the neurons up to "
    "permutation, positive scaling and flips of sets whose linear terms cancel"
)


def multiple_pairs(R: np.ndarray) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of nonzero rows of ``R`` that are exactly multiples of
    each other, positive or negative (candidates from :func:`close_pairs` of ``[R; -R]``,
    checked in rationals)."""
    n = R.shape[0]
    out = set()
    for p, q in close_pairs(np.vstack([R, -R]), 0.0):
        i, j = min(p % n, q % n), max(p % n, q % n)
        if i != j and (i, j) not in out and exact_multiple(R[i], R[j]) is not None:
            out.add((i, j))
    return sorted(out)


@dataclasses.dataclass(frozen=True)
class ShallowCheck:
    """What :func:`shallow_check` decided: ``identifiable`` (``True``, ``False`` or
    ``None``), ``flip_sets`` (cancelling sets, each a witness), ``reason`` in words."""

    identifiable: bool | None
    flip_sets: tuple
    reason: str


def near_cancellation(C: np.ndarray, W: np.ndarray) -> float:
    """A lower bound of the relative size (as :func:`~neuromanifold.relu._symmetries.
    flips.cancelling_sum` measures it: the largest entry of the sum over the largest entry
    of its terms) of ``sum_{i in S} c_i w_i^T`` over every nonempty set ``S``: the minimum
    itself for up to :data:`~neuromanifold.relu._symmetries.flips.MAX_FREE` neurons (every
    set enumerated in floats), else ``s_min / sqrt(rows)`` with ``s_min`` the smallest
    singular value of the terms as unit vectors (``||U a||_2 >= s_min ||a||_2``); 0 when
    neither bounds it (more neurons than entries)."""
    n, rows = W.shape[0], C.shape[0] * W.shape[1]
    if n <= MAX_FREE:
        U = np.stack([np.outer(C[:, i], W[i]).ravel() for i in range(n)])
        peak = np.max(np.abs(U), axis=1)
        best = np.inf
        # the sets in chunks of about 4 million sums (a dense 2^n x rows array would
        # take gigabytes at 784 inputs)
        step = max(1, 4_000_000 // max(rows, 1))
        for first in range(1, 2**n, step):
            S = (np.arange(first, min(first + step, 2**n))[:, None] >> np.arange(n)) & 1
            sums = np.max(np.abs(S @ U), axis=1)
            best = min(best, float(np.min(sums / np.max(S * peak, axis=1))))
        return best
    if n > rows:
        return 0.0
    if rows * n <= 20_000_000:
        U = np.stack([np.outer(C[:, i], W[i]).ravel() for i in range(n)], axis=1)
        smallest = float(svd(U / np.linalg.norm(U, axis=0), compute_uv=False)[-1])
    else:  # the Gram matrix of the terms, without forming them
        G = (C.T @ C) * (W @ W.T)
        g = np.sqrt(np.diag(G))
        smallest = float(np.sqrt(max(np.linalg.eigvalsh(G / np.outer(g, g))[0], 0.0)))
    return smallest / np.sqrt(rows)


def shallow_check(params: list, tol: float, *, search: FlipSearch, near: list) -> ShallowCheck:
    """The theorem of the module docs on a network with one hidden layer whose symmetry
    search found no dead, always-active, silent or parallel neuron: ``search`` is that
    search's :func:`~neuromanifold.relu._symmetries.flips.zero_sum_flips` of the hidden
    layer, ``near`` its pairs of rows parallel at ``tol``
    (:func:`~neuromanifold.relu._symmetries.any_depth.parallel_pairs`)."""
    (W, b), (C, _) = params
    R = np.hstack([W, b[:, None]])
    if not (np.all(np.any(W != 0, axis=1)) and np.all(np.any(C != 0, axis=0))):
        return ShallowCheck(
            None,
            (),
            "a neuron has zero incoming weights or zero outgoing weights: outside the "
            "theorem's hypotheses (its own move was not found at this tol)",
        )
    pairs = multiple_pairs(R)
    if pairs:
        i, j = pairs[0]
        return ShallowCheck(
            None,
            (),
            f"neurons {i} and {j} have rows that are multiples of each other (one "
            f"hyperplane): outside the theorem's hypotheses, and no move of theirs applies "
            f"exactly",
        )
    if tol > 0 and near:
        i, j = near[0]
        return ShallowCheck(
            None,
            (),
            f"the rows of neurons {i} and {j} are positive multiples of each other within "
            f"tol = {tol:g} (not exactly, and setting the difference to zero does not give "
            f"a move within tol): the theorem needs distinct hyperplanes; tol = 0 decides on "
            f"the exact floats",
        )
    if search.sets:
        return ShallowCheck(False, search.sets, search.reason)
    if not search.decided:
        return ShallowCheck(None, (), search.reason)
    if tol > 0:
        size = near_cancellation(C, W)
        if size <= tol:
            return ShallowCheck(
                None,
                (),
                f"no set of neurons' linear terms cancels exactly, but one may cancel to "
                f"within tol = {tol:g} of its largest term (a lower bound of how near: "
                f"{size:.3g}); tol = 0 decides on the exact floats",
            )
    return ShallowCheck(
        True,
        (),
        f"proved ({THEOREM}): every neuron has nonzero incoming and outgoing weights, no "
        f"two rows are multiples of each other, and {search.reason}",
    )
