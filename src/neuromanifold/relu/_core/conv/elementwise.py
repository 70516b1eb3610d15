"""The layers without parameters that act entry by entry or reshape: ReLU and Flatten."""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from .layer import Layer

__all__ = ["ReLU", "Flatten"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ReLU(Layer):
    """``x -> max(x, 0)`` entry by entry."""

    kind = "relu"

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        return np.where(x > 0, x, 0 * x)

    def bound_step(self, r: np.ndarray, e: np.ndarray, other: Layer) -> tuple:
        """See :meth:`Layer.bound_step`."""
        return r, e  # |relu(u)| <= |u| and relu is 1-Lipschitz


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Flatten(Layer):
    """``(C, *spatial) -> (C * prod(spatial),)`` in C order (channel-major), as torch and
    ONNX flatten."""

    kind = "flatten"

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """See :meth:`Layer.out_shape`."""
        return (int(np.prod(in_shape)),)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        return x.reshape(x.shape[0], -1)

    def linear_map(self, in_shape: tuple[int, ...]) -> tuple:
        """See :meth:`Layer.linear_map`."""
        n = int(np.prod(in_shape))
        return sp.identity(n, format="csr"), np.zeros(n)

    def bound_step(self, r: np.ndarray, e: np.ndarray, other: Layer) -> tuple:
        """See :meth:`Layer.bound_step`."""
        return r.reshape(-1), e.reshape(-1)
