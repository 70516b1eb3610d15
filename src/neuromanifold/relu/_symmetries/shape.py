"""Three-layer bottleneck ReLU networks (docs/concepts_relu.md §1, §4): shape checks, the
sign patterns of the rows of ``[W2 | b2]`` and the hidden first-layer hyperplanes.

A three-layer network ``f(x) = W3 relu(W2 relu(W1 x + b1) + b2) + b3`` with widths
``d -> n1 -> n2 -> n3`` is a *bottleneck* when ``n1 <= d`` and ``W1`` has full row rank;
then ``relu(W1 x + b1)`` ranges over the whole orthant ``O = R^{n1}_{>=0}`` and row ``j``
of ``[W2 | b2]``, ``(a_j, beta_j)``, is a neuron ``relu(<a_j, z> + beta_j)`` on ``O``.
Its sign pattern decides what it does on ``O`` (``docs/relu_symmetries.md``):

* **dead**: no positive entry, so ``<a_j, z> + beta_j <= 0`` on ``O``;
* **linear** (always active): no negative entry, so the ReLU is the identity on ``O``;
* **hiding i**: ``a_ji > 0``, ``a_jk <= 0`` for ``k != i`` and ``beta_j <= 0``: the neuron
  is active only where first-layer neuron ``i`` is;
* **ramp** (only named for ``n1 = 1``): ``a_j < 0 < beta_j``;
* **mixed**: anything else.

First-layer hyperplane ``i`` is **hidden** when every live (not dead) row hides ``i``:
every row has ``b2_j <= 0`` and ``W2[j, k] <= 0`` for ``k != i``.

**Signs under a tolerance.** Entry ``k`` of row ``j`` is weighted by the norm of the
first-layer neuron it multiplies, ``|W2[j, k]| * ||(W1[k], b1[k])||`` (the bias by 1);
an entry counts as zero when its weighted magnitude is at most ``tol`` times the largest
weighted magnitude of its row. The weighted entries are invariant under permutations and
positive rescalings of both hidden layers, so the sign pattern is too. ``tol = 0`` gives
the exact signs of the floats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import ArchitectureError
from ..._tolerance import DEFAULT_TOL, check_tol, numerical_rank
from ..._validation import check_finite_result
from ...exact import to_fmpq
from .._core.net import check_params

__all__ = [
    "three_layer",
    "is_bottleneck",
    "weighted_rows",
    "row_signs",
    "row_kinds",
    "hides",
    "hidden_hyperplanes",
    "live_rows",
]

Params = list[tuple[np.ndarray, np.ndarray]]


def three_layer(params: Any, what: str = "this analysis") -> Params:
    """``params`` checked (float64 copies) and required to have exactly three layers.

    >>> three_layer([(np.eye(1), np.zeros(1))])
    Traceback (most recent call last):
    ...
    neuromanifold.ArchitectureError: this analysis needs a three-layer network [(W1, b1), (W2, b2),
    (W3, b3)]; got 1 layer(s)
    """
    params = check_params(params)
    if len(params) != 3:
        raise ArchitectureError(
            f"{what} needs a three-layer network [(W1, b1), (W2, b2), (W3, b3)]; "
            f"got {len(params)} layer(s)"
        )
    return params


def is_bottleneck(params: Any, *, tol: float = DEFAULT_TOL) -> bool:
    """Whether ``n1 <= d`` and ``W1`` has full row rank (at relative tolerance ``tol``,
    exact rank when ``tol = 0``).

    >>> is_bottleneck([(np.eye(2), np.zeros(2)), (np.ones((1, 2)), np.zeros(1)), (np.eye(1),
    ...                np.zeros(1))])
    True
    """
    params = three_layer(params, "is_bottleneck")
    tol = check_tol(tol)
    W1 = params[0][0]
    n1, d = W1.shape
    if n1 > d:
        return False
    if tol == 0:
        import flint  # start-up: a slow import

        M = flint.fmpq_mat(d, n1, [to_fmpq(float(W1[i, k])) for k in range(d) for i in range(n1)])
        return int(M.rank()) == n1
    return numerical_rank(W1.T, tol)[0] == n1


def weighted_rows(params: Params) -> np.ndarray:
    """The rows of ``[W2 | b2]`` with column ``k < n1`` multiplied by ``||(W1[k], b1[k])||``
    (shape ``(n2, n1 + 1)``): the scale-invariant magnitudes used for signs."""
    (W1, b1), (W2, b2) = params[0], params[1]
    rows = np.hstack([W1, b1[:, None]])
    peak = np.max(np.abs(rows), axis=1)
    safe = np.where(peak > 0, peak, 1.0)
    norms = peak * np.sqrt(np.sum((rows / safe[:, None]) ** 2, axis=1))  # no square overflows
    with np.errstate(over="ignore"):
        R = np.hstack([W2 * norms[None, :], b2[:, None]])
    return check_finite_result(R, "the second-layer rows weighted by the first layer's row norms")


def row_signs(params: Params, tol: float = DEFAULT_TOL) -> np.ndarray:
    """Sign pattern (entries in ``{-1, 0, 1}``) of every row of ``[W2 | b2]`` at relative
    tolerance ``tol`` (module docstring); shape ``(n2, n1 + 1)``, bias last.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0], [0.0, 2.0]]),
    ...      np.array([-1.0, 1e-12])),
    ...      (np.ones((1, 2)), np.zeros(1))]
    >>> row_signs(P).tolist()
    [[1, -1, -1], [0, 1, 0]]
    """
    if tol == 0:  # exact: the floats' own signs (the weighting could underflow to 0)
        W2, b2 = params[1]
        return np.sign(np.hstack([W2, b2[:, None]])).astype(int)
    R = weighted_rows(params)
    scale = np.max(np.abs(R), axis=1, keepdims=True)
    S = np.sign(R).astype(int)
    S[np.abs(R) <= tol * scale] = 0
    return S


def row_kinds(signs: np.ndarray) -> list[str]:
    """The kind of every row from its sign pattern: ``"dead"``, ``"linear"``,
    ``"hiding"`` (one positive weight, every other entry and the bias ``<= 0``),
    ``"ramp"`` (``n1 = 1``, negative weight and positive bias) or ``"mixed"``."""
    kinds = []
    n1 = signs.shape[1] - 1
    for s in signs:
        if not np.any(s > 0):
            kinds.append("dead")
        elif not np.any(s < 0):
            kinds.append("linear")
        elif s[-1] <= 0 and int(np.sum(s[:-1] > 0)) == 1:
            kinds.append("hiding")
        elif n1 == 1 and s[0] < 0 < s[1]:
            kinds.append("ramp")
        else:
            kinds.append("mixed")
    return kinds


def live_rows(signs: np.ndarray) -> list[int]:
    """Second-layer neurons that are not dead on the orthant (a positive entry)."""
    return [j for j in range(signs.shape[0]) if np.any(signs[j] > 0)]


def hides(signs: np.ndarray, i: int) -> bool:
    """Whether first-layer hyperplane ``i`` is hidden: every row has a nonpositive bias and
    nonpositive weights outside column ``i``."""
    others = np.delete(signs, i, axis=1)
    return bool(np.all(others <= 0))


def hidden_hyperplanes(signs: np.ndarray) -> dict[int, tuple[int, ...]]:
    """``{i: rows hiding i}`` for every hidden first-layer hyperplane ``i`` (the rows
    hiding it are the live rows, i.e. those with a positive weight in column ``i``).

    >>> hidden_hyperplanes(np.array([[1, -1, -1], [-1, -1, 0]]))
    {0: (0,)}
    """
    n1 = signs.shape[1] - 1
    return {
        i: tuple(int(j) for j in np.flatnonzero(signs[:, i] > 0))
        for i in range(n1)
        if hides(signs, i)
    }
