"""What linear convolutional and fully connected networks (and the shallow ReLU models
built on them) share: parameter handling, invariants as one vector and their Jacobian,
Jacobian ranks, and the argument checks of their fiber methods. Subclasses define
``param_shapes``, ``_layer_name``, ``jacobian``, ``invariants``, ``exact_jacobian`` and
``dimension``."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import ParameterError, short_repr
from .._results import Result
from .._validation import as_finite_array, check_bool, check_finite_result, check_positive_float
from ..fibers import invariant_vector

__all__ = ["JacobianRank", "LinearNetBase", "finite_result"]


def finite_result(what: str):
    """Decorator of a method computing from parameters: float over- and underflow are
    not warned about, and a result that is not finite (finite inputs too large in
    magnitude, e.g. filters of size 1e200 multiplied together) is a
    :class:`ParameterError` "overflow: ..." instead of an array of inf/NaN."""

    def deco(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                out = method(self, *args, **kwargs)
            return check_finite_result(out, f"{what} of {self!r}")

        return wrapper

    return deco


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class JacobianRank(Result):
    """Rank of the Jacobian at one parameter, and whether that point is smooth.

    Attributes:
        rank: the rank found.
        dimension: the generic rank (dimension of the neuromanifold).
        is_smooth: ``rank == dimension``.
        certified: True when the rank was computed exactly over the rationals.
        smallest_singular_value: the ``dimension``-th singular value (numerical method).
        tol: the relative tolerance used by the numerical method (None when exact).
    """

    rank: int
    dimension: int
    is_smooth: bool
    certified: bool
    smallest_singular_value: float | None = None
    tol: float | None = None


class LinearNetBase:
    """Parameter lists of fixed array shapes, their flattening, and Jacobian ranks."""

    param_shapes: tuple[tuple[int, ...], ...]

    def _layer_name(self, l: int) -> str:
        raise NotImplementedError

    @property
    def num_layers(self) -> int:
        """Number of layers (parameter arrays)."""
        return len(self.param_shapes)

    @property
    def num_params(self) -> int:
        """Total number of parameters."""
        return sum(math.prod(s) for s in self.param_shapes)

    def check_params(self, params: Any) -> list[np.ndarray]:
        """Validate ``params``: one finite array per layer, in that layer's shape.

        Returns float64 copies; raises :class:`ParameterError` naming the rule otherwise.
        """
        if isinstance(params, np.ndarray) or not isinstance(params, Sequence):
            raise ParameterError(
                f"params must be a list with one array per layer ({self.num_layers}); "
                f"got {short_repr(params)}"
            )
        if len(params) != self.num_layers:
            raise ParameterError(
                f"params must have one array per layer: {self!r} has {self.num_layers} layers, "
                f"got {len(params)} arrays"
            )
        out = []
        for l, (w, shape) in enumerate(zip(params, self.param_shapes), start=1):
            if (
                type(w) is np.ndarray
                and w.dtype == np.float64
                and w.shape == shape
                and np.isfinite(w).all()
            ):
                # the common case, already valid: skip the general conversion's overhead
                # (hot in flows and kernels on small networks)
                out.append(w)
                continue
            name = self._layer_name(l)
            arr = as_finite_array(w, name)
            if arr.shape != shape:
                raise ParameterError(
                    f"{name} must have shape {shape} for {self!r}; got shape {arr.shape}"
                )
            out.append(arr)
        return out

    def flatten(self, params: Any) -> np.ndarray:
        """All parameters as one vector, layer by layer (each array in C order)."""
        return np.concatenate([w.ravel() for w in self.check_params(params)])

    def unflatten(self, theta: Any) -> list[np.ndarray]:
        """Inverse of :meth:`flatten`."""
        theta = as_finite_array(theta, "theta", ndim=1)
        if theta.size != self.num_params:
            raise ParameterError(
                f"theta must have {self.num_params} entries for {self!r}; got {theta.size}"
            )
        out, pos = [], 0
        for shape in self.param_shapes:
            n = math.prod(shape)
            out.append(theta[pos : pos + n].reshape(shape).copy())
            pos += n
        return out

    @finite_result("the invariant Jacobian")
    def invariant_jacobian(self, params: Any) -> np.ndarray:
        """``d delta / d theta``: rows = the flattened invariants (:func:`invariant_vector`),
        columns = the flattened parameters.

        Every conserved quantity here is a quadratic form in theta (docs/concepts_linear.md §2, 1.4,
        1.6), and for a quadratic the central difference with a unit step is the exact
        derivative: ``(f(x + e) - f(x - e)) / 2 = grad f(x) . e``.
        """
        theta = self.flatten(params)
        cols = []
        for i in range(theta.size):
            e = np.zeros_like(theta)
            e[i] = 1.0
            cols.append(
                (
                    invariant_vector(self, self.unflatten(theta + e))
                    - invariant_vector(self, self.unflatten(theta - e))
                )
                / 2.0
            )
        return np.array(cols).T

    def rank(self, params: Any, *, exact: bool = False, tol: float | None = None) -> JacobianRank:
        """Rank of the Jacobian at ``params``.

        Args:
            params: one array per layer.
            exact: compute the rank exactly over the rationals from the exact binary
                values of the floats (certified); otherwise by SVD.
            tol: relative singular-value tolerance of the numerical method (default
                ``max(J.shape) * eps``, relative to the largest singular value).
        """
        exact = check_bool(exact, "exact")
        if tol is not None:
            tol = check_positive_float(tol, "tol")
        dim = self.dimension
        if exact:
            r = self.exact_jacobian(params).rank()
            return JacobianRank(rank=r, dimension=dim, is_smooth=r == dim, certified=True)
        J = self.jacobian(params)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            sv = np.linalg.svd(J, compute_uv=False)
        check_finite_result(sv, f"the singular values of the Jacobian of {self!r}")
        rel = tol if tol is not None else max(J.shape) * np.finfo(float).eps
        r = int(np.sum(sv > rel * sv[0])) if sv.size and sv[0] > 0 else 0
        smallest = float(sv[dim - 1]) if 0 < dim <= sv.size else None
        return JacobianRank(
            rank=r,
            dimension=dim,
            is_smooth=r == dim,
            certified=False,
            smallest_singular_value=smallest,
            tol=rel,
        )

    def is_smooth(self, params: Any, *, exact: bool = False) -> bool:
        """Whether ``params`` is a smooth point: the Jacobian has the generic rank."""
        return self.rank(params, exact=exact).is_smooth
