"""Convolution with bias, stride, padding and dilation, over one or two spatial axes."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...._errors import ArchitectureError
from .layer import AffineLayer, affine, check_array, int_tuple, pads_tuple, window_taps

__all__ = ["Conv"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Conv(AffineLayer):
    """A convolution (cross-correlation, as torch and ONNX compute it) with bias.

    ``weight`` has shape ``(C_out, C_in, k)`` (1-D) or ``(C_out, C_in, kh, kw)`` (2-D);
    ``padding`` is zeros before and after each spatial axis: one int, one per axis, or
    ``(begin_1, ..., begin_n, end_1, ..., end_n)`` as ONNX's ``pads``.
    """

    stride: Any = 1
    padding: Any = 0
    dilation: Any = 1
    kind = "conv"

    def __post_init__(self) -> None:
        W = check_array(self.weight, "a convolution's weight", (3, 4))
        n = W.ndim - 2
        b = check_array(self.bias, "a convolution's bias", 1)
        if b.shape != (W.shape[0],):
            raise ArchitectureError(
                f"a convolution's bias must have one entry per output channel "
                f"({W.shape[0]}); got shape {b.shape}"
            )
        pads = pads_tuple(self.padding, n, "padding")
        object.__setattr__(self, "weight", W)
        object.__setattr__(self, "bias", b)
        object.__setattr__(self, "stride", int_tuple(self.stride, n, "stride", 1))
        object.__setattr__(self, "dilation", int_tuple(self.dilation, n, "dilation", 1))
        object.__setattr__(self, "padding", pads)

    @property
    def spatial(self) -> int:
        """The number of spatial axes (1 or 2)."""
        return self.weight.ndim - 2

    def config(self) -> dict[str, Any]:
        """See :meth:`Layer.config`."""
        return {
            "stride": list(self.stride),
            "padding": list(self.padding),
            "dilation": list(self.dilation),
        }

    def describe(self) -> str:
        """See :meth:`Layer.describe`."""
        k = "x".join(str(s) for s in self.weight.shape[2:])
        return (
            f"conv{self.spatial}d({self.weight.shape[1]}->{self.weight.shape[0]}, {k}, "
            f"stride {self.stride}, padding {self.padding}, dilation {self.dilation})"
        )

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """See :meth:`Layer.out_shape`."""
        n = self.spatial
        if len(in_shape) != n + 1 or in_shape[0] != self.weight.shape[1]:
            raise ArchitectureError(
                f"{self.describe()} reads tensors of shape (C={self.weight.shape[1]}, "
                f"{n} spatial axes); got {tuple(in_shape)}"
            )
        out = []
        for i in range(n):
            span = self.dilation[i] * (self.weight.shape[2 + i] - 1) + 1
            size = in_shape[1 + i] + self.padding[i] + self.padding[n + i] - span
            if size < 0:
                raise ArchitectureError(
                    f"{self.describe()}: the kernel spans {span} entries of an axis of "
                    f"{in_shape[1 + i]} ({size + span} with the padding)"
                )
            out.append(size // self.stride[i] + 1)
        return (self.weight.shape[0], *out)

    def _taps(self, in_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        return window_taps(
            in_shape[1:], self.weight.shape[2:], self.stride, self.padding, self.dilation
        )

    def forward(self, x: np.ndarray) -> np.ndarray:
        """``x`` of shape ``(B, C_in, *spatial)``; float or object (Fraction) entries."""
        B, C = x.shape[0], x.shape[1]
        in_shape = tuple(x.shape[1:])
        out_shape = self.out_shape(in_shape)
        flat, valid = self._taps(in_shape)
        xs = x.reshape(B, C, -1)
        zero = np.zeros((B, C, 1), dtype=x.dtype)
        padded = np.concatenate([xs, zero], axis=2)  # index -1 reads the zero
        patches = padded[:, :, flat]  # (B, C, positions, taps)
        patches = patches.transpose(0, 2, 1, 3).reshape(B, flat.shape[0], -1)
        y = affine(patches, self.weight.reshape(self.weight.shape[0], -1), self.bias)
        return y.transpose(0, 2, 1).reshape(B, *out_shape)

    def linear_map(self, in_shape: tuple[int, ...]) -> tuple[sp.csr_matrix, np.ndarray]:
        """See :meth:`Layer.linear_map`."""
        self.out_shape(in_shape)
        flat, valid = self._taps(in_shape)
        Co, Ci = self.weight.shape[:2]
        P, T = flat.shape
        n_in = int(np.prod(in_shape[1:]))
        kern = self.weight.reshape(Co, Ci, T)
        co, ci, p, t = np.meshgrid(
            np.arange(Co), np.arange(Ci), np.arange(P), np.arange(T), indexing="ij"
        )
        keep = valid[p, t]
        rows = (co * P + p)[keep]
        cols = (ci * n_in + flat[p, t])[keep]
        vals = kern[co, ci, t][keep]
        M = sp.csr_matrix((vals, (rows, cols)), shape=(Co * P, Ci * n_in))
        return M, np.repeat(self.bias, P)
