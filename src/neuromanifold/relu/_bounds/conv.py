"""Bounds of a convolutional network's channels: the pre-activations of every top-level
affine layer (a convolution or a dense layer), over a box by interval arithmetic through
the structured layers, and at data points with their float rounding bounded.

Intervals are carried as center and radius; an affine layer maps the center and its
absolute weights map the radius, widened by :data:`MARGIN` of the magnitudes involved (the
float rounding of the sums, with room); ReLU, max and average pooling and ``Flatten`` are
monotone, so the ends map to ends. A residual block is not bounded here (what follows it
is unbounded), nor is anything on R^d: there only zero weights prove a sign.
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

#: a radius at or above this is "unbounded" (R^d, or an overflow): nothing is proved
_HUGE = 1e290


def _absolute(layer: AffineLayer) -> AffineLayer:
    return dataclasses.replace(layer, weight=np.abs(layer.weight), bias=np.zeros_like(layer.bias))


def _affine_step(layer: AffineLayer, center: np.ndarray, radius: np.ndarray) -> tuple:
    """Center and radius after an affine layer, the radius widened by the rounding."""
    c = layer.forward(center)
    absolute = _absolute(layer)
    r = absolute.forward(radius)
    bias = np.abs(layer.bias).reshape((1, -1) + (1,) * (c.ndim - 2))
    size = absolute.forward(np.abs(center)) + bias
    r = r + MARGIN * (size + r)
    return c, np.where(np.isfinite(r) & (r < _HUGE), r, _HUGE)


def channel_bounds(net: ReLUConvNet, dom: Domain) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For every top-level affine layer ``k``: ``(lower, upper)`` of its outputs over the
    domain (arrays of its output's shape), ``-inf``/``inf`` where nothing is proved."""
    d = net.input_dim
    if dom.kind == "box":
        lo, hi = np.asarray(dom.lower, float), np.asarray(dom.upper, float)
        center, radius = (lo + hi) / 2, (hi - lo) / 2
    else:  # R^d or the orthant: unbounded
        center, radius = np.zeros(d), np.full(d, _HUGE)
    center = center.reshape((1,) + net.input_shape)
    radius = radius.reshape((1,) + net.input_shape)
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for k, layer in enumerate(net.layers):
            if isinstance(layer, AffineLayer):
                center, radius = _affine_step(layer, center, radius)
                unbounded = radius[0] >= _HUGE
                out[k] = (
                    np.where(unbounded, -np.inf, center[0] - radius[0]),
                    np.where(unbounded, np.inf, center[0] + radius[0]),
                )
            elif isinstance(layer, MONOTONE):
                a = layer.forward(center - radius)
                b = layer.forward(center + radius)
                center, radius = (a + b) / 2, np.maximum((b - a) / 2, 0.0)
                radius = np.where(np.isfinite(radius) & (radius < _HUGE), radius, _HUGE)
            else:  # a residual block: not bounded here
                value = layer.forward(center)
                center, radius = np.zeros_like(value), np.full_like(value, _HUGE)
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
