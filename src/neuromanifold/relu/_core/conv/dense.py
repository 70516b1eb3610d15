"""A fully connected layer ``x -> W x + b`` on a flat input."""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ...._errors import ArchitectureError
from .layer import AffineLayer, affine, check_array

__all__ = ["Dense"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Dense(AffineLayer):
    """``x -> W x + b`` with ``W`` of shape ``(n_out, n_in)`` on inputs of shape ``(n_in,)``."""

    kind = "dense"

    def __post_init__(self) -> None:
        W = check_array(self.weight, "a dense layer's weight", 2)
        b = check_array(self.bias, "a dense layer's bias", 1)
        if b.shape != (W.shape[0],):
            raise ArchitectureError(
                f"a dense layer's bias must have one entry per row of its weight "
                f"({W.shape[0]}); got shape {b.shape}"
            )
        object.__setattr__(self, "weight", W)
        object.__setattr__(self, "bias", b)

    def describe(self) -> str:
        """See :meth:`Layer.describe`."""
        return f"dense({self.weight.shape[1]}->{self.weight.shape[0]})"

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """See :meth:`Layer.out_shape`."""
        if tuple(in_shape) != (self.weight.shape[1],):
            raise ArchitectureError(
                f"{self.describe()} reads flat inputs of {self.weight.shape[1]} entries; "
                f"got shape {tuple(in_shape)} (a Flatten before it?)"
            )
        return (self.weight.shape[0],)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        self.out_shape(tuple(x.shape[1:]))
        return affine(x, self.weight, self.bias)

    def linear_map(self, in_shape: tuple[int, ...]) -> tuple:
        """See :meth:`Layer.linear_map`."""
        self.out_shape(in_shape)
        return sp.csr_matrix(self.weight), self.bias.copy()
