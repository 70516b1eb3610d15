"""The one interface every layer of a convolutional ReLU network offers.

A layer maps a tensor of shape ``in_shape`` (channels first, no batch axis) to one of
``out_shape(in_shape)``. Every analysis reads a layer through these methods only, so a new
layer kind is one new module:

* ``forward(x)``: the structured forward pass on a batch ``(B, *in_shape)``. Written with
  numpy operations that also run on object arrays of ``Fraction``, so the same code is the
  exact forward pass (:func:`~neuromanifold.relu._core.conv.network.exact_forward`).
* ``linear_map(in_shape)``: for an affine layer, its matrix (scipy sparse) and offset on
  the flattened tensors (C order), the dense view's building block; ``None`` otherwise.
* ``bound_step(r, e, other)``: the propagation of the parameter bound (see
  :func:`~neuromanifold.relu._core.conv.network.difference_bound`): ``r`` bounds
  ``|z|`` of this network and ``e`` bounds the difference to ``other`` (the same layer of
  a second network), both per entry and per unit of ``max(1, ||x||_inf)``.
* the channel symmetry: an affine layer's outputs are channels (``out_rows``,
  ``act_on_outputs``) and it consumes channels (``act_on_inputs``); pooling, flattening
  and ReLU commute with permuting the channels and scaling each by a positive number.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ...._errors import ArchitectureError
from ...._validation import as_finite_array
from ....exact import rational_matmul, to_fmpq

__all__ = [
    "Layer",
    "AffineLayer",
    "check_array",
    "exact_array",
    "affine",
    "int_tuple",
    "pads_tuple",
    "window_taps",
    "same_kind",
]


@dataclasses.dataclass(frozen=True, eq=False)
class Layer:
    """A layer without parameters: a shape map and a forward pass."""

    #: the kind's name in files and messages (``"conv"``, ``"maxpool"``, ...)
    kind = "layer"

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of the output for an input of shape ``in_shape`` (no batch axis); an
        ArchitectureError when the layer cannot read it."""
        return in_shape

    def forward(self, x: np.ndarray) -> np.ndarray:
        """The layer on a batch ``x`` of shape ``(B, *in_shape)`` (floats, or rationals
        in an object array)."""
        return x

    def linear_map(self, in_shape: tuple[int, ...]) -> Any:
        """``(M, t)`` with ``layer(x) = M x + t`` on flattened tensors (M scipy sparse),
        or None for a layer that is not affine."""
        return None

    def bound_step(self, r: np.ndarray, e: np.ndarray, other: Layer) -> tuple:
        """``(r', e')``: from ``|z| <= r`` and ``|z - z'| <= e`` (``z'`` through the
        other network's layer ``other``), bounds after the layer (see the module docs)."""
        return self.forward(r[None])[0], self.forward(e[None])[0]

    def arrays(self) -> dict[str, np.ndarray]:
        """The layer's parameters by their role (``"weight"``, ``"bias"``)."""
        return {}

    def config(self) -> dict[str, Any]:
        """The hyperparameters that, with :meth:`arrays`, rebuild the layer."""
        return {}

    def describe(self) -> str:
        """The layer in one line for people."""
        options = ", ".join(f"{k}={v}" for k, v in self.config().items())
        return f"{self.kind}({options})" if options else self.kind

    def __repr__(self) -> str:
        return self.describe()


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class AffineLayer(Layer):
    """A layer ``x -> A x + b`` whose outputs are channels (a convolution, a dense layer).

    ``weight`` has the output channels on axis 0 and the input channels on axis 1.
    """

    weight: np.ndarray
    bias: np.ndarray
    name: str = ""

    def arrays(self) -> dict[str, np.ndarray]:
        """``{"weight": ..., "bias": ...}``."""
        return {"weight": self.weight, "bias": self.bias}

    @property
    def out_channels(self) -> int:
        """The number of output channels (rows of a dense layer)."""
        return self.weight.shape[0]

    def out_rows(self) -> np.ndarray:
        """Row ``c``: every parameter that computes output channel ``c`` (its weights and
        bias), the vector a channel permutation moves and a positive scaling multiplies."""
        return np.concatenate([self.weight.reshape(self.out_channels, -1), self.bias[:, None]], 1)

    def act_on_outputs(self, perm: np.ndarray, scale: np.ndarray) -> AffineLayer:
        """Output channel ``i`` of the result is ``scale[i]`` times channel ``perm[i]``."""
        shape = (-1,) + (1,) * (self.weight.ndim - 1)
        return dataclasses.replace(
            self,
            weight=self.weight[perm] * scale.reshape(shape),
            bias=self.bias[perm] * scale,
        )

    def act_on_inputs(self, perm: np.ndarray, scale: np.ndarray, block: int) -> AffineLayer:
        """The layer reading inputs whose channel ``i`` is ``scale[i]`` times the old
        channel ``perm[i]`` (``block`` entries per channel on a flattened input)."""
        W = self.weight
        cols = W.reshape(W.shape[0], len(perm), block, *W.shape[2:])
        shape = (1, -1) + (1,) * (cols.ndim - 2)
        new = cols[:, perm] / scale.reshape(shape)
        return dataclasses.replace(self, weight=new.reshape(W.shape))

    def bound_step(self, r: np.ndarray, e: np.ndarray, other: Layer) -> tuple:
        """``r' = |A| r + |b|`` and ``e' = |A'| e + |A - A'| r + |b - b'|`` (``A'``, ``b'``
        the other network's layer): a bound on ``|A z + b - (A' z' + b')|`` from
        ``|z| <= r`` and ``|z - z'| <= e``."""
        absolute = dataclasses.replace(self, weight=np.abs(self.weight), bias=np.abs(self.bias))
        if not isinstance(other, type(self)) or other.weight.shape != self.weight.shape:
            raise ArchitectureError(
                f"the two networks differ at a {self.kind} layer: {self.describe()} against "
                f"{other.describe()}"
            )
        other_abs = dataclasses.replace(other, weight=np.abs(other.weight), bias=0 * other.bias)
        diff = dataclasses.replace(
            self, weight=np.abs(self.weight - other.weight), bias=np.abs(self.bias - other.bias)
        )
        r_new = absolute.forward(r[None])[0]
        e_new = other_abs.forward(e[None])[0] + diff.forward(r[None])[0]
        return r_new, e_new


def same_kind(a: Layer, b: Layer) -> None:
    """An ArchitectureError unless ``a`` and ``b`` are one layer up to their parameters
    (the same kind and hyperparameters)."""
    if type(a) is not type(b) or a.config() != b.config():
        raise ArchitectureError(
            f"the two networks differ at a layer: {a.describe()} against {b.describe()}"
        )


def check_array(value: Any, what: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    """``value`` as a finite float64 array of ``ndim`` axes, or an ArchitectureError."""
    dims = (ndim,) if isinstance(ndim, int) else ndim
    arr = as_finite_array(value, what, error=ArchitectureError)
    if arr.ndim not in dims:
        raise ArchitectureError(
            f"{what} must have {' or '.join(map(str, dims))} axes; got shape {arr.shape}"
        )
    if 0 in arr.shape:
        raise ArchitectureError(f"{what} must not have an empty axis; got shape {arr.shape}")
    return arr


def exact_array(a: np.ndarray) -> np.ndarray:
    """A float array as an object array of the rationals (flint ``fmpq``) it holds
    exactly."""
    if a.dtype == object:
        return a
    out = np.empty(a.shape, dtype=object)
    out.ravel()[:] = [to_fmpq(float(v)) for v in np.asarray(a, dtype=np.float64).ravel()]
    return out


def affine(x: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x @ W.T + b`` over the last axis of ``x``: in floats, or exactly (flint) when
    ``x`` holds rationals (an object array)."""
    if x.dtype != object:
        return x @ W.T + b
    flat = x.reshape(-1, x.shape[-1])
    rows = rational_matmul(flat.tolist(), exact_array(W).T.tolist(), W.shape[1], W.shape[0])
    out = np.empty((flat.shape[0], W.shape[0]), dtype=object)
    for i, row in enumerate(rows):
        out[i, :] = row
    return out.reshape(*x.shape[:-1], W.shape[0]) + exact_array(b)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def int_tuple(value: Any, n: int | None, what: str, low: int) -> tuple[int, ...]:
    """``value`` (an int, or ``n`` ints; any number of them when ``n`` is None) as a
    tuple of ints, each at least ``low``; an ArchitectureError naming the rule otherwise."""
    if _is_int(value):
        vals: tuple = (value,) * (n or 1)
    elif isinstance(value, (tuple, list)) and value:
        vals = tuple(value)
    else:
        vals = ()
    if (
        not vals
        or (n is not None and len(vals) != n)
        or not all(_is_int(v) and v >= low for v in vals)
    ):
        count = "" if n is None else f" or {n} of them"
        raise ArchitectureError(f"{what} must be an integer >= {low}{count}; got {value!r}")
    return tuple(int(v) for v in vals)


def pads_tuple(value: Any, n: int, what: str) -> tuple[int, ...]:
    """A padding over ``n`` spatial axes as ONNX's ``pads`` ``(begin_1, ..., begin_n,
    end_1, ..., end_n)``: from one int (every side), ``n`` ints (both ends of each axis)
    or ``2 n`` ints."""
    if isinstance(value, (tuple, list)) and len(value) == n:
        value = tuple(value) * 2
    return int_tuple(value, 2 * n, what, 0)


def window_taps(
    in_spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray]:
    """The windows of a convolution or pooling over 1 or 2 spatial axes: ``(flat,
    valid)`` of shape ``(output positions, kernel taps)``, ``flat`` the flat input position
    each tap reads (-1 where it reads the padding)."""
    n = len(in_spatial)
    axes = []
    for i in range(n):
        span = dilation[i] * (kernel[i] - 1) + 1
        size = (in_spatial[i] + padding[i] + padding[n + i] - span) // stride[i] + 1
        o = np.arange(max(size, 0))[:, None]
        u = np.arange(kernel[i])[None, :]
        axes.append(o * stride[i] - padding[i] + u * dilation[i])
    if n == 1:
        pos = axes[0]
        valid = (pos >= 0) & (pos < in_spatial[0])
        return np.where(valid, pos, -1), valid
    rows, cols = axes
    H, W = in_spatial
    r = rows[:, None, :, None]
    c = cols[None, :, None, :]
    valid = (r >= 0) & (r < H) & (c >= 0) & (c < W)
    flat = np.where(valid, r * W + c, -1)
    P, T = rows.shape[0] * cols.shape[0], kernel[0] * kernel[1]
    return flat.reshape(P, T), valid.reshape(P, T)
