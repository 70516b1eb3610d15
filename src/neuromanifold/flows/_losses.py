"""Losses in function space: quadratics in the end-to-end map v (docs/concepts_linear.md §5)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError, short_repr
from .._validation import as_finite_array

__all__ = ["QuadraticLoss", "SquareLoss"]


class QuadraticLoss:
    """``l(v) = 1/2 (v - target)^T A (v - target) + offset`` on the flattened ``v``.

    Args:
        A: symmetric matrix of shape ``(n, n)``, ``n`` the number of entries of v.
        target: array with ``n`` entries (any shape; flattened in C order).
        offset: constant added to the value.

    >>> loss = QuadraticLoss(np.eye(2), [1.0, 0.0])
    >>> loss.value([0.0, 0.0]), loss.gradient([0.0, 0.0])
    (0.5, array([-1.,  0.]))
    """

    def __init__(self, A: Any, target: Any, offset: float = 0.0):
        A = as_finite_array(A, "A", ndim=2, error=InputError)
        if A.shape[0] != A.shape[1]:
            raise InputError(f"A must be a square matrix; got shape {A.shape}")
        scale = max(1.0, float(np.abs(A).max(initial=0.0)))
        if not np.allclose(A, A.T, atol=1e-12 * scale, rtol=0):
            raise InputError(
                f"A must be symmetric; got max |A - A^T| = {np.abs(A - A.T).max():.3g}"
            )
        target = as_finite_array(target, "target", error=InputError)
        if target.size != A.shape[0]:
            raise InputError(
                f"target must have {A.shape[0]} entries (the size of A); got shape {target.shape}"
            )
        if (
            isinstance(offset, (bool, np.bool_))
            or not isinstance(offset, (int, float, np.integer, np.floating))
            or not np.isfinite(offset)
        ):
            raise InputError(f"offset must be a finite number; got {offset!r}")
        self.A = A / 2 + A.T / 2  # (A + A^T) / 2 without overflowing near the float64 limit
        self.target = target.ravel()
        self.offset = float(offset)

    @property
    def size(self) -> int:
        """Number of entries of ``v`` the loss acts on."""
        return self.A.shape[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, offset={self.offset:.4g})"

    def _as_vector(self, v: Any) -> np.ndarray:
        v = as_finite_array(v, "v", error=InputError)
        if v.size != self.size:
            raise InputError(f"v must have {self.size} entries for this loss; got shape {v.shape}")
        return v

    def _overflow(self, what: str, v: np.ndarray) -> InputError:
        return InputError(
            f"overflow: the {what} of {self!r} at v={short_repr(v)} is not a "
            f"finite float64 (v, A or the target are too large; rescale them)"
        )

    def value(self, v: Any) -> float:
        """The loss at ``v`` (any shape with ``n`` entries).

        Raises:
            InputError: ("overflow: ...") when the value exceeds the float64 range.
        """
        v = self._as_vector(v)
        with np.errstate(over="ignore", invalid="ignore"):
            r = v.ravel() - self.target
            out = float(0.5 * r @ self.A @ r + self.offset)
        if not np.isfinite(out):
            raise self._overflow("loss value", v)
        return out

    def gradient(self, v: Any) -> np.ndarray:
        """``A (v - target)``, in the shape of ``v``.

        Raises:
            InputError: ("overflow: ...") when an entry exceeds the float64 range.
        """
        v = self._as_vector(v)
        with np.errstate(over="ignore", invalid="ignore"):
            out = (self.A @ (v.ravel() - self.target)).reshape(v.shape)
        if not np.all(np.isfinite(out)):
            raise self._overflow("loss gradient", v)
        return out


class SquareLoss(QuadraticLoss):
    """The square loss ``1/2 sum_i ||net(x_i) - y_i||^2`` as a quadratic in v
    (docs/concepts_linear.md §5).

    The network output is linear in v, ``net(x_i) = M_i v``, so with ``M`` the stacked
    ``M_i`` and ``y`` the stacked targets, ``l(v) = 1/2 ||M v - y||^2
    = 1/2 (v - t)^T M^T M (v - t) + 1/2 ||M t - y||^2`` with ``t`` a least-squares
    solution (the residual ``M t - y`` is orthogonal to the range of M).
    """

    @classmethod
    def from_data(cls, net: Any, X: Any, Y: Any) -> "SquareLoss":
        """Build the loss of ``net`` on inputs ``X`` with targets ``Y``.

        Args:
            net: a :class:`LinearConvNet` (X: signals, shape ``(N, n_1..n_D)``) or a
                :class:`LinearFCNet` (X: shape ``(N, d_0)``).
            X: the inputs, first axis = samples.
            Y: the targets, shape ``(N,) + output shape`` of the network on one input.
        """
        if isinstance(net, type) or not callable(getattr(net, "end_to_end_operator", None)):
            raise InputError(
                f"net must be a LinearConvNet or LinearFCNet (a network with "
                f"end_to_end_operator); got {short_repr(net)}"
            )
        X = as_finite_array(X, "X", error=InputError)
        Y = as_finite_array(Y, "Y", error=InputError)
        if X.ndim == 0 or Y.ndim == 0 or X.shape[0] != Y.shape[0] or X.shape[0] == 0:
            raise InputError(
                f"X and Y must have the same positive number of samples on axis 0; "
                f"got shapes {X.shape} and {Y.shape}"
            )
        blocks = [net.end_to_end_operator(x) for x in X]
        if blocks[0].shape[0] != Y[0].size:
            raise InputError(
                f"each target must have {blocks[0].shape[0]} entries (the network's output "
                f"on one input); got shape {Y.shape[1:]}"
            )
        M = np.vstack(blocks)
        y = Y.reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            gram = M.T @ M
            if np.all(np.isfinite(gram)):
                t, *_ = np.linalg.lstsq(M, y, rcond=None)
                offset = 0.5 * float(np.sum((M @ t - y) ** 2))
        if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(t)) and np.isfinite(offset)):
            raise InputError(
                f"overflow: the square loss of these data is not a finite float64 quadratic "
                f"(max |X| = {np.abs(X).max():.3g}, max |Y| = {np.abs(Y).max():.3g}; rescale "
                f"the data)"
            )
        loss = cls(gram, t, offset)
        loss.design = M
        loss.targets = y
        return loss
