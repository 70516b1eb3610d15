"""One tolerance semantics for every analysis that compares or ranks.

Users hand us float32/float64 weights. Deciding over the exact rational values of those
bit patterns answers a nearby question ("do these two bit patterns define the same
function?"), not theirs ("do these two trained networks compute the same function?"): a
permuted and rescaled copy of a network differs from it by rounding. So every such
analysis takes a keyword ``tol`` with one meaning:

* ``tol`` is **relative**. Quantities are compared against the *scale* of the networks
  involved, defined below, and two quantities count as equal when they differ by at most
  ``tol * scale``.
* ``tol = 0`` is exact: decisions are made over the rationals, as before. Inputs given as
  integers or :class:`fractions.Fraction` are exact values; with ``tol = 0`` nothing is
  rounded.
* The default :data:`DEFAULT_TOL` ``= 1e-9`` absorbs float64 rounding of products of a few
  layers (unit roundoff 1.1e-16 times the number of layers and the width of the sums
  involved) with a wide margin, and still sees a relative change of 1e-6 in one live
  weight. For weights that went through float32, use ``tol=1e-5``.

**The scale of a ReLU network** (``path_norm_scale``, with the ReLU bounds in
``relu/_bounds/parameters.py``) is its l1 path norm with biases: with the augmented layer
matrices ``M_l = [[W_l, b_l], [0, 1]]``, the largest row sum of
``|M_L| |M_{L-1}| ... |M_1|`` (entrywise absolute values, last row left out). It bounds
the coefficients of the affine map of every linear region (the map of a region is
``M_L D_{L-1} ... D_1 M_1`` with 0/1 diagonal masks ``D``) and ``|f(x)|`` by
``scale * max(1, ||x||_inf)``, and it is invariant under the symmetries that do not
change the function's size: permutations and positive rescalings of hidden neurons. Float
rounding of a coefficient is bounded by roughly ``L * u * scale``, which is why a relative
tolerance against this scale is the right one.

**Ranks** (functional dimension, masked products) are decided on matrices whose columns
are normalized to unit length (column scaling does not change the exact rank, and makes
the singular values invariant under neuron rescaling): a singular value counts when it
exceeds ``tol`` times the largest one. The result reports the smallest singular value
counted and the largest one dropped, so that a fragile decision is visible.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ._errors import InputError, short_repr

__all__ = [
    "DEFAULT_TOL",
    "RESIDUAL_TOL",
    "NTK_TOL",
    "check_tol",
    "numerical_rank",
    "svd",
]

#: Default relative tolerance of every comparing or ranking analysis.
DEFAULT_TOL = 1e-9

#: Default relative residual below which a numerically fitted point counts as on its fiber
#: (the function and the invariants it must match, relative to their size): fibers of
#: linear networks, the symmetry search's confirmation, the reproductions' witnesses.
RESIDUAL_TOL = 1e-8

#: Default relative NTK difference above which the NTK counts as changing along a fiber.
NTK_TOL = 1e-8


def check_tol(tol: Any, name: str = "tol") -> float:
    """``tol`` as a float in ``[0, 1)``, or an :class:`InputError` naming the rule.

    >>> check_tol(1e-9)
    1e-09
    >>> check_tol(-1)
    Traceback (most recent call last):
    ...
    neuromanifold.InputError: tol must be a relative tolerance, a finite number in [0, 1); got -1
    """
    if (
        isinstance(tol, (bool, np.bool_))
        or not isinstance(tol, (int, float, np.integer, np.floating, Fraction))
        or not np.isfinite(float(tol))
        or not 0 <= float(tol) < 1
    ):
        raise InputError(
            f"{name} must be a relative tolerance, a finite number in [0, 1); got {short_repr(tol)}"
        )
    return float(tol)


def svd(A: np.ndarray, compute_uv: bool = True):
    """``numpy.linalg.svd(A, full_matrices=False, compute_uv=compute_uv)``, retried with
    LAPACK's ``gesvd`` where the default divide-and-conquer ``gesdd`` does not converge
    (it fails on some finite, well-scaled matrices: a 784-256-128-10 network's level-2
    factors did)."""
    try:
        return np.linalg.svd(A, full_matrices=False, compute_uv=compute_uv)
    except np.linalg.LinAlgError:
        import scipy.linalg  # start-up: only for the rare matrices gesdd fails on

        return scipy.linalg.svd(
            A, full_matrices=False, compute_uv=compute_uv, lapack_driver="gesvd"
        )


def numerical_rank(matrix: np.ndarray, tol: float) -> tuple[int, float | None, float | None]:
    """The rank of ``matrix`` at relative tolerance ``tol`` (``tol > 0``), with its gap.

    Columns are normalized to unit length first (zero columns dropped); a singular value
    counts when it exceeds ``tol`` times the largest, and never when it lies within the
    float rounding of the factorization, ``max(rows, columns) * 2**-52`` times the largest
    (below that a singular value of an exactly singular matrix is as likely: with
    ``tol = 1e-300`` the rounding was counted, a rank 78 above its proven bound 73).

    Returns:
        ``(rank, smallest_counted, largest_dropped)``: the smallest singular value counted
        and the largest one dropped, relative to the largest (``None`` when there is none).

    >>> numerical_rank(np.array([[1.0, 1.0], [1.0, 1.0 + 1e-14]]), 1e-9)[0]
    1
    >>> numerical_rank(np.array([[1.0, 1.0], [1.0, 1.0 + 1e-14]]), 1e-15)[0]
    2
    """
    A = np.asarray(matrix, dtype=float)
    if A.size == 0:
        return 0, None, None
    norms = np.linalg.norm(A, axis=0)
    A = A[:, norms > 0] / norms[norms > 0]
    if A.shape[1] == 0:
        return 0, None, None
    s = svd(A, compute_uv=False)
    rel = s / s[0]
    threshold = max(tol, max(A.shape) * np.finfo(float).eps)
    kept = rel[rel > threshold]
    dropped = rel[rel <= threshold]
    return (
        int(kept.size),
        float(kept[-1]) if kept.size else None,
        float(dropped[0]) if dropped.size else None,
    )
