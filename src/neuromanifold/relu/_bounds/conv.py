"""Bounds of a convolutional network's channels: the pre-activations of every top-level
affine layer (a convolution or a dense layer), over a box by interval arithmetic through
the structured layers, and at data points with their float rounding bounded.

Intervals are carried as center and radius; an affine layer maps the center and its
absolute weights map the radius, widened by :data:`MARGIN` of the magnitudes involved (the
float rounding of the sums, with room); ReLU, max and average pooling and ``Flatten`` are
monotone, so the ends map to ends. Unbounded entries are a set of their own, carried
through every layer (never a large radius, which a later layer could shrink): the inputs
on R^d and the orthant, where only zero weights prove a sign, and everything after a
residual block, which is not bounded here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._core.conv.elementwise import Flatten, ReLU
from .._core.conv.layer import AffineLayer
from .._core.conv.network import ReLUConvNet
from .._core.conv.pool import AvgPool, GlobalAvgPool, MaxPool
from .._core.domain import Domain

__all__ = ["MONOTONE", "activated", "channel_bounds", "channel_values"]

#: layers that act per channel and are monotone (their ends map to ends)
MONOTONE = (ReLU, MaxPool, AvgPool, GlobalAvgPool, Flatten)

#: relative margin added to every affine step (the float rounding of the sums)
MARGIN = 1e-10


def _absolute(layer: AffineLayer) -> AffineLayer:
    return dataclasses.replace(layer, weight=np.abs(layer.weight), bias=np.zeros_like(layer.bias))


def _affine_step(layer: AffineLayer, center, radius, unbounded) -> tuple:
    """Center, radius and unbounded entries after an affine layer: an output is unbounded
    when a nonzero weight reads an unbounded input (the bounded ones are computed with
    those inputs at 0, which no bounded output reads), and where the sums overflow; the
    radius is widened by the rounding."""
    absolute = _absolute(layer)
    reads = absolute.forward(unbounded.astype(float)) > 0
    center, radius = np.where(unbounded, 0.0, center), np.where(unbounded, 0.0, radius)
    c = layer.forward(center)
    r = absolute.forward(radius)
    bias = np.abs(layer.bias).reshape((1, -1) + (1,) * (c.ndim - 2))
    size = absolute.forward(np.abs(center)) + bias
    r = r + MARGIN * (size + r)
    out = reads | ~np.isfinite(c) | ~np.isfinite(r)
    return np.where(out, 0.0, c), np.where(out, 0.0, r), out


def channel_bounds(net: ReLUConvNet, dom: Domain) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For every top-level affine layer ``k``: ``(lower, upper)`` of its outputs over the
    domain (arrays of its output's shape), ``-inf``/``inf`` where nothing is proved.

    Intervals as center and radius with an explicit set of unbounded entries (every input
    on R^d and the orthant, everything after a residual block), which every layer carries:
    an affine output reading one of them with a nonzero weight, and a pooled value whose
    window holds one, is unbounded too."""
    d = net.input_dim
    if dom.kind == "box":
        lo, hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
        center, radius = (lo + hi) / 2, (hi - lo) / 2
        unbounded = np.zeros(d, dtype=bool)
    else:  # R^d or the orthant: only zero weights prove anything
        center, radius, unbounded = np.zeros(d), np.zeros(d), np.ones(d, dtype=bool)
    shape = (1,) + net.input_shape
    center, radius, unbounded = (a.reshape(shape) for a in (center, radius, unbounded))
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for k, layer in enumerate(net.layers):
            if isinstance(layer, AffineLayer):
                center, radius, unbounded = _affine_step(layer, center, radius, unbounded)
                out[k] = (
                    np.where(unbounded[0], -np.inf, center[0] - radius[0]),
                    np.where(unbounded[0], np.inf, center[0] + radius[0]),
                )
            elif isinstance(layer, MONOTONE):
                # pooling a window that holds an unbounded entry is unbounded
                spread = layer.forward(unbounded.astype(float)) > 0
                a = layer.forward(np.where(unbounded, 0.0, center - radius))
                b = layer.forward(np.where(unbounded, 0.0, center + radius))
                center, radius = (a + b) / 2, np.maximum((b - a) / 2, 0.0)
                unbounded = spread | ~np.isfinite(center) | ~np.isfinite(radius)
            else:  # a residual block: not bounded here
                value = layer.forward(center)
                center, radius = np.zeros_like(value), np.zeros_like(value)
                unbounded = np.ones(value.shape, dtype=bool)
    return out


def channel_values(net: ReLUConvNet, X: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For every top-level affine layer ``k``: its outputs at the rows of ``X`` (flat
    inputs) and a bound on their float rounding, both ``(n,) + its output's shape``."""
    h = np.asarray(X, float).reshape((len(X),) + net.input_shape)
    size = np.abs(h)
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for k, layer in enumerate(net.layers):
            if isinstance(layer, AffineLayer):
                z = layer.forward(h)
                bias = np.abs(layer.bias).reshape((1, -1) + (1,) * (z.ndim - 2))
                size = _absolute(layer).forward(size) + bias
                out[k] = (z, MARGIN * size)
                h = z
            elif isinstance(layer, MONOTONE):
                h, size = layer.forward(h), np.abs(layer.forward(size))
            else:  # a residual block: what follows is not certified here
                h = layer.forward(h)
                size = np.full_like(h, np.inf)
    return out


def activated(net: ReLUConvNet) -> list[int]:
    """The top-level affine layers whose outputs reach a ReLU through per-channel
    monotone layers only (their channels are the network's units)."""
    out = []
    for k, layer in enumerate(net.layers):
        if not isinstance(layer, AffineLayer):
            continue
        for after in net.layers[k + 1 :]:
            if not isinstance(after, MONOTONE):
                break
            if isinstance(after, ReLU):
                out.append(k)
                break
    return out
