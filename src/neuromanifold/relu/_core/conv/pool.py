"""Pooling: max, average and global average, over one or two spatial axes, per channel.

Max pooling is piecewise linear and kept as it is in the structured forward pass; the
dense view writes it in its exact ReLU form (``max(a, b) = b + relu(a - b)``, see
:mod:`~neuromanifold.relu._core.conv.network`). Both commute with permuting the channels
and scaling each by a positive number.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...._errors import ArchitectureError
from .layer import Layer, int_tuple, pads_tuple, window_taps

__all__ = ["MaxPool", "AvgPool", "GlobalAvgPool"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _Pool(Layer):
    """Windows of ``kernel`` entries, ``stride`` apart, ``padding`` as for :class:`Conv`."""

    kernel: Any = 2
    stride: Any = None
    padding: Any = 0

    def __post_init__(self) -> None:
        for what, value, low in (
            ("a pooling kernel", self.kernel, 1),
            ("a pooling stride", self.stride, 1),
            ("a pooling padding", self.padding, 0),
        ):
            if value is None and what == "a pooling stride":
                continue
            int_tuple(value, None, what, low)  # the rule checked before any input is seen
            if not isinstance(value, (int, np.integer)) and len(value) > 4:
                raise ArchitectureError(f"{what} has 1 or 2 axes (4 pads); got {value!r}")

    def geometry(self, spatial: int) -> tuple[tuple[int, ...], ...]:
        """``(kernel, stride, padding)`` for inputs with ``spatial`` axes (an int for each
        is the same on every axis; padding may give begins then ends as ONNX's ``pads``)."""
        kernel = int_tuple(self.kernel, spatial, f"{self.kind}'s kernel", 1)
        stride = (
            kernel
            if self.stride is None
            else int_tuple(self.stride, spatial, f"{self.kind}'s stride", 1)
        )
        pads = pads_tuple(self.padding, spatial, f"{self.kind}'s padding")
        if any(pads[i] >= kernel[i % spatial] for i in range(2 * spatial)):
            raise ArchitectureError(
                f"a pooling's padding must be smaller than its kernel on each axis; got "
                f"padding {pads} for kernel {kernel}"
            )
        return kernel, stride, pads

    def config(self) -> dict[str, Any]:
        """See :meth:`Layer.config`."""

        def plain(v: Any) -> Any:
            return v if v is None or isinstance(v, (int, np.integer)) else list(v)

        return {
            "kernel": plain(self.kernel),
            "stride": plain(self.stride),
            "padding": plain(self.padding),
        }

    def windows(self, in_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """``(flat, valid)`` of :func:`window_taps` for one channel."""
        if len(in_shape) not in (2, 3):
            raise ArchitectureError(
                f"{self.describe()} reads tensors with 1 or 2 spatial axes; got shape "
                f"{tuple(in_shape)}"
            )
        kernel, stride, pads = self.geometry(len(in_shape) - 1)
        return window_taps(in_shape[1:], kernel, stride, pads, (1,) * len(kernel))

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """See :meth:`Layer.out_shape`."""
        self.windows(in_shape)
        n = len(in_shape) - 1
        kernel, stride, pads = self.geometry(n)
        out = []
        for i in range(n):
            size = in_shape[1 + i] + pads[i] + pads[n + i] - kernel[i]
            if size < 0:
                raise ArchitectureError(
                    f"{self.describe()}: its kernel is larger than the padded axis of "
                    f"{in_shape[1 + i]} entries"
                )
            out.append(size // stride[i] + 1)
        return (in_shape[0], *out)

    def _patches(self, x: np.ndarray, fill: Any) -> tuple[np.ndarray, np.ndarray]:
        B, C = x.shape[:2]
        flat, valid = self.windows(tuple(x.shape[1:]))
        pad = np.full((B, C, 1), fill, dtype=x.dtype)
        padded = np.concatenate([x.reshape(B, C, -1), pad], axis=2)
        return padded[:, :, flat], valid  # (B, C, positions, taps)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class MaxPool(_Pool):
    """The largest entry of each window (padding never wins)."""

    kind = "maxpool"

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        out = self.out_shape(tuple(x.shape[1:]))
        # the padding never wins: -inf in floats, below every entry in exact arithmetic
        fill = -np.inf if x.dtype != object else x.min() - 1
        patches, _ = self._patches(x, fill)
        return patches.max(axis=3).reshape(x.shape[0], *out)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class AvgPool(_Pool):
    """The mean of each window: over its entries inside the input, or over the whole
    kernel when ``count_include_pad`` (padding counted as zeros)."""

    count_include_pad: bool = False
    kind = "avgpool"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.count_include_pad, (bool, np.bool_)):
            raise ArchitectureError(
                f"count_include_pad must be True or False; got {self.count_include_pad!r}"
            )

    def config(self) -> dict[str, Any]:
        """See :meth:`Layer.config`."""
        return {**super().config(), "count_include_pad": bool(self.count_include_pad)}

    def _divisors(self, valid: np.ndarray) -> np.ndarray:
        if self.count_include_pad:
            return np.full(valid.shape[0], valid.shape[1])
        return valid.sum(axis=1)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        out = self.out_shape(tuple(x.shape[1:]))
        patches, valid = self._patches(x, 0)
        total = patches.sum(axis=3)
        div = self._divisors(valid)
        if x.dtype == object:
            total = total / div.astype(object)
        else:
            total = total / div
        return total.reshape(x.shape[0], *out)

    def linear_map(self, in_shape: tuple[int, ...]) -> tuple:
        """See :meth:`Layer.linear_map`."""
        self.out_shape(in_shape)
        flat, valid = self.windows(in_shape)
        div = self._divisors(valid)
        C, P = in_shape[0], flat.shape[0]
        n_in = int(np.prod(in_shape[1:]))
        c, p, t = np.meshgrid(np.arange(C), np.arange(P), np.arange(flat.shape[1]), indexing="ij")
        keep = valid[p, t]
        M = sp.csr_matrix(
            (1.0 / div[p][keep], ((c * P + p)[keep], (c * n_in + flat[p, t])[keep])),
            shape=(C * P, C * n_in),
        )
        return M, np.zeros(C * P)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class GlobalAvgPool(Layer):
    """The mean of each channel over all its positions; the spatial axes kept, of size 1
    (as ONNX's GlobalAveragePool)."""

    kind = "globalavgpool"

    def _pool(self, in_shape: tuple[int, ...]) -> AvgPool:
        if len(in_shape) not in (2, 3):
            raise ArchitectureError(
                f"global average pooling reads tensors with 1 or 2 spatial axes; got shape "
                f"{tuple(in_shape)}"
            )
        return AvgPool(kernel=tuple(in_shape[1:]), stride=1)

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """See :meth:`Layer.out_shape`."""
        return self._pool(in_shape).out_shape(in_shape)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        return self._pool(tuple(x.shape[1:])).forward(x)

    def linear_map(self, in_shape: tuple[int, ...]) -> tuple:
        """See :meth:`Layer.linear_map`."""
        return self._pool(in_shape).linear_map(in_shape)
