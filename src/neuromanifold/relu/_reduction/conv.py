"""The reduction of a convolutional ReLU network by channel: a smaller CNN, the same function.

Between two affine layers ``P`` (producer) and ``Q`` (consumer) of the network's top-level
chain, with only per-channel, positively homogeneous layers between them (``ReLU``, max
and average pooling, global average pooling, ``Flatten``), output channel ``c`` of ``P``
reaches ``Q`` as channel ``c`` of ``Q``'s input (``Flatten`` lays channel ``c`` out as one
block of columns). Three moves keep the function exactly:

* a **zero-output** channel (every weight of ``Q`` reading it is 0) is removed from ``P``'s
  outputs and ``Q``'s inputs: nothing reads it;
* a **dead** channel (a ReLU between, and ``P``'s pre-activation of the channel ``<= 0`` at
  every position and every input of the domain, proved by interval bounds carried
  through the network with outward margins (:mod:`~neuromanifold.relu._bounds.conv`; on
  R^d only a channel of zero weights and a bias ``<= 0``) is removed the same way: it
  reaches ``Q`` as zeros;
* a **duplicate** channel ``c'`` whose weights and bias are ``lam > 0`` times those of
  channel ``c`` reaches ``Q`` as ``lam`` times channel ``c`` (every layer between commutes
  with a positive scale), so ``Q``'s weights reading ``c`` gain ``lam`` times those reading
  ``c'``, and ``c'`` is removed; checked in exact rationals. The merged weights are rounded
  to float64: the exact merged network keeps the function exactly, and the float one
  within :func:`rounding_bound` (0 when every merged weight is a float64 number).

Channels tied by a residual block's sum, and layers inside residual blocks, are left as
they are (the note says so): removing one of them means removing it from every tensor
the sum ties, not done here.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np

from .._bounds.conv import MONOTONE, channel_bounds
from .._core.conv.elementwise import ReLU
from .._core.conv.layer import AffineLayer
from .._core.conv.network import ReLUConvNet
from .._core.domain import Domain
from .._core.rows import exact_multiple

__all__ = ["ChannelReduction", "reduce_channels"]


#: relative widening of every step of :func:`rounding_bound` (the float sums of nonnegative
#: terms there are rounded by at most fan-in times u, far below it)
_WIDEN = 1e-9
#: the smallest positive float64: what one product lost to underflow is below it
_TINY = 2.0**-1074


@dataclasses.dataclass(frozen=True)
class ChannelReduction:
    """What :func:`reduce_channels` did: the reduced network, the moves, what it left, the
    bound on what the merges' float rounding moves (:func:`rounding_bound`), and the
    channels it would have removed but kept because a layer needs one (``kept``)."""

    network: ReLUConvNet
    moves: tuple
    left: tuple
    bound: float
    exact: bool
    kept: tuple = ()


def _segments(net: ReLUConvNet) -> list[tuple[int, int]]:
    """``(i, j)``: top-level affine layers ``i`` and ``j`` with only per-channel monotone
    layers (:data:`~neuromanifold.relu._bounds.conv.MONOTONE`) between them."""
    out = []
    layers = net.layers
    for i, layer in enumerate(layers):
        if not isinstance(layer, AffineLayer):
            continue
        j = i + 1
        while j < len(layers) and isinstance(layers[j], MONOTONE):
            j += 1
        if j < len(layers) and isinstance(layers[j], AffineLayer):
            out.append((i, j))
    return out


def _dead(net: ReLUConvNet, i: int, j: int, upper: dict) -> list[int]:
    """Output channels of layer ``i`` whose pre-activation is proved ``<= 0`` everywhere
    on the domain, when a ReLU is between ``i`` and ``j``."""
    between = net.layers[i + 1 : j]
    if not any(isinstance(layer, ReLU) for layer in between):
        return []
    # pooling before the ReLU keeps a nonpositive channel nonpositive (max and averages
    # of nonpositive numbers and zero padding)
    u = upper[i][1]
    u = u.reshape(u.shape[0], -1)
    return [int(c) for c in np.flatnonzero(np.all(u <= 0, axis=1))]


def _block(net: ReLUConvNet, i: int, j: int) -> int:
    """Entries per channel of ``i``'s output in ``j``'s input (after a Flatten)."""
    layer_j = net.layers[j]
    channels = net.layers[i].out_channels
    return layer_j.weight.shape[1] // channels


def _reading(layer: AffineLayer, channels: int, block: int) -> np.ndarray:
    """``layer``'s weight with its input axis split as ``(channels, block)``:
    ``[out, channel, block, ...]``."""
    W = layer.weight
    return W.reshape(W.shape[0], channels, block, *W.shape[2:])


def _zero_output(net: ReLUConvNet, i: int, j: int) -> list[int]:
    channels, block = net.layers[i].out_channels, _block(net, i, j)
    R = _reading(net.layers[j], channels, block)
    R = np.moveaxis(R, 1, 0).reshape(channels, -1)
    return [int(c) for c in np.flatnonzero(~np.any(R != 0, axis=1))]


def _multiple(a: np.ndarray, b: np.ndarray) -> Fraction | None:
    """``lam > 0`` (below the float range's end) with ``b == lam a`` exactly (as
    rationals), else ``None``."""
    lam = exact_multiple(a, b)
    return lam if lam is not None and 0 < lam < Fraction(2**1023) else None


def _merged(keep: np.ndarray, gone: np.ndarray, lam: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """``keep + lam * gone`` in float64, and a bound on each entry's distance to the exact
    sum (0 where the float is exact), rounded up."""
    out = keep + float(lam) * gone
    err = np.zeros(out.shape)
    flat = err.reshape(-1)
    for k, (x, y, z) in enumerate(zip(keep.ravel(), gone.ravel(), out.ravel())):
        gap = abs(Fraction(float(z)) - (Fraction(float(x)) + lam * Fraction(float(y))))
        if gap:
            flat[k] = np.nextafter(float(gap), np.inf)
    return out, err


def _duplicates(net: ReLUConvNet, i: int, j: int, skip: set) -> dict[int, tuple]:
    """``{c': (c, lam, merged reading of c, its rounding)}``: channels of layer ``i`` that
    are ``lam > 0`` times an earlier kept channel ``c``, with the merged weights of layer
    ``j`` reading ``c`` and the bound of their rounding (:func:`_merged`)."""
    P, Q = net.layers[i], net.layers[j]
    rows = P.out_rows()
    channels, block = P.out_channels, _block(net, i, j)
    R = _reading(Q, channels, block).copy()
    E = np.zeros(R.shape)
    out: dict[int, tuple] = {}
    kept: list[int] = []
    for c2 in range(channels):
        if c2 in skip:
            continue
        for c in kept:
            lam = _multiple(rows[c], rows[c2])
            if lam is None:
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                try:
                    merged, err = _merged(R[:, c], R[:, c2], lam)
                except (OverflowError, ValueError):  # the merged weights leave the floats
                    continue
            # the reading of c so far already carries its earlier merges' rounding
            R[:, c], E[:, c] = merged, E[:, c] + err
            out[c2] = (c, lam, merged, E[:, c].copy())
            break
        else:
            kept.append(c2)
    return out


def _drop(net: ReLUConvNet, i: int, j: int, gone: list, merges: dict) -> tuple:
    """The network with output channels ``gone`` of layer ``i`` removed (and from ``j``'s
    inputs), the ``merges`` (:func:`_duplicates`) written into ``j`` first; and the bound
    on the rounding of ``j``'s new weights (their shape; ``None`` when every one is
    exact)."""
    P, Q = net.layers[i], net.layers[j]
    channels, block = P.out_channels, _block(net, i, j)
    R = _reading(Q, channels, block).copy()
    E = np.zeros(R.shape)
    for c, _, merged, err in merges.values():
        R[:, c], E[:, c] = merged, err
    keep = [c for c in range(channels) if c not in set(gone) | set(merges)]
    newP = dataclasses.replace(P, weight=P.weight[keep], bias=P.bias[keep])
    W = R[:, keep]
    newQ = dataclasses.replace(Q, weight=W.reshape(W.shape[0], -1, *W.shape[3:]))
    layers = list(net.layers)
    layers[i], layers[j] = newP, newQ
    reduced = ReLUConvNet(input_shape=net.input_shape, layers=tuple(layers), notes=net.notes)
    return reduced, (E[:, keep].reshape(newQ.weight.shape) if np.any(E) else None)


def rounding_bound(net: ReLUConvNet, errors: dict) -> float:
    """``bound`` with ``|f_net(x) - f_exact(x)| <= bound * max(1, |x|_inf)``, where the
    exact network's weights differ from ``net``'s by at most ``errors[k]`` at layer ``k``
    (0 without errors): magnitudes ``|z| <= r`` and differences ``|z - z*| <= e`` carried
    through the layers (the exact layer's weights at most ``|W| + E``), each step widened
    for its own float rounding."""
    if not errors:
        return 0.0
    r, e = np.ones(net.input_shape), np.zeros(net.input_shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for k, layer in enumerate(net.layers):
            if k in errors:
                E = errors[k]
                upper = dataclasses.replace(
                    layer, weight=np.abs(layer.weight) + E, bias=np.abs(layer.bias)
                )
                absolute = dataclasses.replace(
                    layer, weight=np.abs(layer.weight), bias=np.zeros_like(layer.bias)
                )
                error = dataclasses.replace(layer, weight=E, bias=np.zeros_like(layer.bias))
                r, e = (
                    upper.forward(r[None])[0],
                    absolute.forward(e[None])[0] + error.forward(r[None])[0],
                )
            else:
                r, e = layer.bound_step(r, e, layer)
            # an absolute floor: products below the float range round to 0, and a difference
            # that is exactly nonzero can then be carried by later large weights
            fan = layer.weight[0].size + 1 if isinstance(layer, AffineLayer) else 1
            r, e = r * (1 + _WIDEN), e * (1 + _WIDEN) + fan * _TINY
    bound = float(np.max(e))
    return bound if np.isfinite(bound) else np.inf


def reduce_channels(net: ReLUConvNet, dom: Domain) -> ChannelReduction:
    """The moves of the module docs on every segment of ``net``'s top-level chain."""
    upper = channel_bounds(net, dom)
    moves: list[str] = []
    left: list[str] = []
    kept: list[str] = []
    bound, exact = 0.0, True
    for i, j in _segments(net):
        P = net.layers[i]
        what = f"layer {i} ({type(P).__name__}{' ' + repr(P.name) if P.name else ''})"
        dead = _dead(net, i, j, upper)
        zero = [c for c in _zero_output(net, i, j) if c not in dead]
        if len(dead) + len(zero) >= P.out_channels:  # keep one: a layer needs a channel
            keep_one = max(dead + zero)
            kind = "dead" if keep_one in dead else "zero-output"
            kept.append(f"{what}: channel {keep_one} is {kind} too, kept (a layer needs one)")
            dead = [c for c in dead if c != keep_one]
            zero = [c for c in zero if c != keep_one]
        merges = _duplicates(net, i, j, set(dead) | set(zero))
        if not (dead or zero or merges):
            continue
        if dead:
            moves.append(
                f"{what}: dead channels {dead} removed (pre-activation <= 0 on the domain)"
            )
        if zero:
            moves.append(f"{what}: zero-output channels {zero} removed (layer {j} reads none)")
        for c2, (c, lam, _, _) in merges.items():
            moves.append(f"{what}: channel {c2} = {float(lam):.6g} x channel {c}, merged into it")
        net, err = _drop(net, i, j, dead + zero, merges)
        if err is not None:
            # this step's network against its exact version (the one before it, exactly):
            # the steps' bounds add up
            bound += rounding_bound(net, {j: err})
            exact = False
    if any(type(layer).__name__ == "Residual" for layer in net.layers):
        left.append(
            "channels inside residual blocks and tied by their sums are not reduced (a "
            "channel of a sum leaves every tensor the sum ties, not done here)"
        )
    return ChannelReduction(
        network=net,
        moves=tuple(moves),
        left=tuple(left),
        bound=bound,
        exact=exact,
        kept=tuple(kept),
    )
