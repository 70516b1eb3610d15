"""A residual connection: ``x -> body(x) + skip(x)``, the block of a ResNet.

``body`` is any chain of layers (a ResNet basic block's is conv, ReLU, conv, with its
BatchNorms folded into the convolutions); ``skip`` is the identity (no layers) or a chain
of affine layers (a 1x1 convolution with a stride, the projection of a block that changes
the shape). The ReLU after the sum is the next layer of the network.

The sum ties the channels of the two branches: permuting and scaling the channels of the
block's output must act on the body's last layer and on the skip alike, and with the
identity skip on the block's input too (the residual stream is one channel group across
every block it passes; :mod:`neuromanifold.relu._symmetries.channels`). The dense view
carries the block's input through the body's ReLUs (as ``relu(x)`` where ``x >= 0`` is
known, else ``relu(x) - relu(-x)``) to add it at the end
(:mod:`~neuromanifold.relu._core.conv.network`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...._errors import ArchitectureError, short_repr
from .layer import Layer, same_kind

__all__ = ["Residual"]


def _chain(layers: Any, what: str, *, empty: bool) -> tuple[Layer, ...]:
    if isinstance(layers, Layer) or not isinstance(layers, Sequence) or isinstance(layers, str):
        raise ArchitectureError(f"{what} must be a list of layers; got {short_repr(layers)}")
    if not layers and not empty:
        raise ArchitectureError(f"{what} must hold at least one layer")
    for j, layer in enumerate(layers):
        if not isinstance(layer, Layer):
            raise ArchitectureError(
                f"{what}, layer {j}, must be a layer of neuromanifold.relu.layers; got "
                f"{short_repr(layer)}"
            )
    return tuple(layers)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Residual(Layer):
    """``x -> body(x) + skip(x)``; an empty ``skip`` is the identity.

    Args:
        body: the layers of the main branch, in order.
        skip: the layers of the shortcut: none (identity) or affine layers only
            (convolution, dense, average pooling, flatten), as a ResNet's projection.
    """

    body: Sequence[Layer] = ()
    skip: Sequence[Layer] = ()

    kind = "residual"

    def __post_init__(self) -> None:
        body = _chain(self.body, "a residual block's body", empty=False)
        skip = _chain(self.skip, "a residual block's skip", empty=True)
        for j, layer in enumerate(skip):
            if isinstance(layer, Residual) or type(layer).linear_map is Layer.linear_map:
                raise ArchitectureError(
                    f"a residual block's skip holds affine layers only (a projection: "
                    f"convolution, dense, average pooling, flatten); layer {j} is "
                    f"{layer.describe()}"
                )
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "skip", skip)

    def branches(self) -> tuple[tuple[str, tuple[Layer, ...]], ...]:
        """``(("body", layers), ("skip", layers))``."""
        return (("body", self.body), ("skip", self.skip))

    def branch_shapes(self, in_shape: tuple[int, ...], branch: str) -> list[tuple[int, ...]]:
        """The shapes along one branch: its input's, then after each of its layers."""
        shapes = [tuple(in_shape)]
        for j, layer in enumerate(dict(self.branches())[branch]):
            try:
                shapes.append(tuple(layer.out_shape(shapes[-1])))
            except ArchitectureError as err:
                raise ArchitectureError(f"{branch} layer {j} ({layer.describe()}): {err}") from None
        return shapes

    def out_shape(self, in_shape: tuple[int, ...]) -> tuple[int, ...]:
        """See :meth:`Layer.out_shape`: both branches must give one shape."""
        body = self.branch_shapes(in_shape, "body")[-1]
        skip = self.branch_shapes(in_shape, "skip")[-1]
        if body != skip:
            raise ArchitectureError(
                f"a residual block's body gives shape {body} and its skip {skip}; the sum "
                f"needs one shape (a projection on the skip?)"
            )
        return body

    def forward(self, x: np.ndarray) -> np.ndarray:
        """See :meth:`Layer.forward`."""
        z, s = x, x
        for layer in self.body:
            z = layer.forward(z)
        for layer in self.skip:
            s = layer.forward(s)
        return z + s

    def bound_step(self, r: np.ndarray, e: np.ndarray, other: Layer) -> tuple:
        """See :meth:`Layer.bound_step`: the bounds of the two branches, added."""
        same_kind(self, other)
        out = []
        for (_, mine), (_, theirs) in zip(self.branches(), other.branches()):
            rb, eb = r, e
            for a, b in zip(mine, theirs):
                same_kind(a, b)
                rb, eb = a.bound_step(rb, eb, b)
            out.append((rb, eb))
        return out[0][0] + out[1][0], out[0][1] + out[1][1]

    def config(self) -> dict[str, Any]:
        """The branches' layers, as their one-line descriptions."""
        return {name: [layer.describe() for layer in layers] for name, layers in self.branches()}

    def describe(self) -> str:
        """See :meth:`Layer.describe`."""
        body = " -> ".join(layer.describe() for layer in self.body)
        skip = " -> ".join(layer.describe() for layer in self.skip) or "identity"
        return f"residual(body: {body}; skip: {skip})"

    def replaced(self, branch: str, j: int, layer: Layer) -> Residual:
        """The block with layer ``j`` of ``branch`` replaced."""
        layers = list(dict(self.branches())[branch])
        layers[j] = layer
        return dataclasses.replace(self, **{branch: tuple(layers)})
