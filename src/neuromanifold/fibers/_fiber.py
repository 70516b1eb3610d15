"""What every fiber computation shares: the :class:`Fiber` result returned by every
model's ``fiber`` method (linear convolutional and fully connected networks, shallow ReLU
models), and the flat vector of conserved invariants that, with the function, fixes a
fiber (docs/concepts_linear.md §2)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._errors import InputError, ParameterError, short_repr
from .._results import Result
from .._validation import as_finite_array, check_finite_result

__all__ = ["Fiber", "invariant_vector", "invariant_scale"]


def invariant_vector(net: Any, params: Any) -> np.ndarray:
    """The invariants of ``net`` at ``params`` as one flat vector (matrices flattened).

    Args:
        net: a network with an ``invariants(params)`` method.
        params: parameters of ``net``.

    Returns:
        1D float array: ``net.invariants(params)`` flattened and concatenated."""
    if isinstance(net, type) or not callable(getattr(net, "invariants", None)):
        raise InputError(
            f"net must be a network instance with an invariants(params) method; "
            f"got {short_repr(net)}"
        )
    inv = net.invariants(params)
    if isinstance(inv, list):
        return np.concatenate([np.ravel(d) for d in inv]) if inv else np.zeros(0)
    return np.asarray(inv, dtype=float).ravel()


def invariant_scale(invariants: Any, params: Any) -> float:
    """The size invariant residuals are measured against:
    ``max(||delta||_inf, max_l ||w_l||^2)`` (never below 1e-300). The parameter norms
    enter because the invariants can vanish (balanced networks) while the parameters
    do not.

    Args:
        invariants: the invariants (any shape; flattened): real and finite, with at
            least one entry per pair of consecutive layers (none for a single layer).
        params: the parameters, a non-empty list of real, finite arrays (one per layer).

    Returns:
        The scale, a positive float. Invalid inputs raise :class:`ParameterError`
        (``params``) or :class:`InputError` (``invariants``); a scale beyond the float64
        range raises :class:`ParameterError`.

    >>> invariant_scale(np.array([0.0]), [np.array([3.0, 4.0]), np.array([1.0])])
    25.0
    """
    if not isinstance(params, (list, tuple)) or len(params) == 0:
        raise ParameterError(
            f"params must be a non-empty list of arrays (one per layer); got {short_repr(params)}"
        )
    layers = [as_finite_array(w, f"params[{l}]") for l, w in enumerate(params)]
    inv = as_finite_array(invariants, "invariants", error=InputError)
    pairs = len(layers) - 1
    if (pairs == 0 and inv.size != 0) or inv.size < pairs:
        raise InputError(
            f"invariants must have at least one entry per pair of consecutive "
            f"layers ({pairs} pair(s) for {len(layers)} layer(s), none for a "
            f"single layer); got {inv.size} entries: {short_repr(invariants)}"
        )
    with np.errstate(over="ignore"):
        scale = max(
            float(np.abs(inv).max(initial=0.0)), max(float(np.sum(w**2)) for w in layers), 1e-300
        )
    return check_finite_result(scale, "the invariant scale (max |delta|, max ||w_l||^2)")


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Fiber(Result):
    """Parameters realizing one function with given conserved invariants.

    Attributes:
        points: list of parameters (each a list of per-layer arrays). For linear
            convolutional networks: *all* of them, one per class modulo the sign flips of
            docs/concepts_linear.md §2; for sampled (positive-dimensional) fibers: the points found.
        num_sign_patterns: number of sign flips acting on each point without changing the
            function, the invariants or the NTK (``2^(L-1)`` for convolutional networks; 1
            when points are raw samples).
        certified: True when the list is proven complete (exact factorization, certified
            root isolation, exhaustive enumeration). Coordinates are floating point; their
            accuracy is ``max_residual``.
        method: how the points were computed.
        dimension: dimension of the fiber (0 for finite fibers; for sampled fibers the
            kernel dimension of the constraint Jacobian at the points found).
        num_assignments: number of candidate assignments / groupings / starts examined.
        max_residual: largest relative residual over the points, of the end-to-end map and
            of the invariants.
        notes: remarks on the computation (degenerate factors, fallbacks, ...).
    """

    points: list[list[np.ndarray]]
    num_sign_patterns: int
    certified: bool
    method: str
    dimension: int = 0
    num_assignments: int = 0
    max_residual: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def num_points(self) -> int:
        """``len(points)``."""
        return len(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Any:
        return iter(self.points)
