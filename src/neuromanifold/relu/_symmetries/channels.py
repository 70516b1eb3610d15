"""The channel symmetries of a convolutional ReLU network, derived from its layers.

Every hidden tensor that one affine layer (a convolution or a dense layer) produces and
another consumes carries a **channel group**: permuting its channels and scaling each by
a positive number, in the producer's outputs (weights and bias, axis 0) and inversely in
the consumer's inputs (weights, axis 1; blocks of ``H * W`` entries after a flatten),
keeps the function, because everything in between (ReLU, max and average pooling,
flattening) commutes with it. A residual sum ``body(x) + skip(x)`` ties the tensors it
adds: one permutation and scaling for both (and, for an identity skip, for the block's
input too), so a residual stream is one group across the blocks it passes. This is the
permutation spec that weight-matching tools (Git Re-Basin) ask their users to write by
hand; here it is read off the graph.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..._errors import ArchitectureError, short_repr
from ..._results import Result
from .._core.conv.elementwise import Flatten, ReLU
from .._core.conv.layer import AffineLayer
from .._core.conv.network import ReLUConvNet, path_norm
from .._core.conv.residual import Residual
from .._core.live import as_conv_net

__all__ = [
    "ChannelGroup",
    "ChannelSpec",
    "ChannelSymmetry",
    "channel_spec",
    "apply_channel_symmetries",
    "ready_producers",
    "check_in_range",
]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ChannelGroup(Result):
    """One hidden tensor's channels and where a permutation and scaling of them acts.

    Attributes:
        name: ``"P1"``, ``"P2"``, ... in the order of the layers.
        size: the number of channels.
        producers: the paths of the layers whose output channels (weight and bias, axis
            0) it permutes and scales (a layer's index, ``"<block>.body.<j>"`` or
            ``"<block>.skip.<j>"`` inside a residual block; several when a residual sum
            ties tensors).
        consumers: ``(path, block)``: the layers reading the tensor, whose input
            channels (weight axis 1, ``block`` entries per channel after a flatten) it
            permutes and scales inversely.
        through: the layers between producer and consumer (``"relu"``, ``"maxpool"``, ...).
        scaling: ``"positive"`` when a ReLU or a max pooling is in between (a negative
            scale would not commute with it); ``"nonzero"`` for a purely linear link (any
            invertible mixing of the channels keeps the function there; only permutations
            and scalings are used).
    """

    name: str
    size: int
    producers: tuple[str, ...]
    consumers: tuple[tuple[str, int], ...]
    through: tuple[str, ...]
    scaling: str


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ChannelSpec(Result):
    """The channel symmetries of a network (:func:`channel_spec`).

    Attributes:
        groups: the :class:`ChannelGroup` of every hidden tensor between two affine layers.
        axes: for every parameter array (``"<layer name>.weight"``, ``".bias"``), which
            group acts on each of its axes (``None``: none), as Git Re-Basin's
            ``axes_to_perm``.
        note: what the spec leaves out.
    """

    groups: tuple
    axes: dict[str, tuple]
    note: str

    def describe(self) -> str:
        """The groups and the axes, as lines for people."""
        lines = [f"{len(self.groups)} channel group(s)"]
        for g in self.groups:
            lines.append(
                f"  {g.name}: {g.size} channels, produced by layer(s) {list(g.producers)}, "
                f"read by layer(s) {[c for c, _ in g.consumers]}, through "
                f"{'/'.join(g.through) or 'nothing'}, {g.scaling} scaling"
            )
        lines.append("axes (Git Re-Basin's permutation spec):")
        for name, axes in self.axes.items():
            lines.append(f"  {name}: {tuple(axes)}")
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ChannelSymmetry(Result):
    """A permutation and positive scaling of one channel group: new channel ``i`` is
    ``scale[i]`` times old channel ``perm[i]``."""

    group: str
    perm: tuple
    scale: tuple

    def apply(self, net: Any) -> ReLUConvNet:
        """``net`` moved by this symmetry (the same function): the group's producers'
        output channels permuted and scaled, its consumers' input channels the inverse
        (the group named as in :func:`channel_spec` of ``net``)."""
        conv = as_conv_net(net) or net
        if not isinstance(conv, ReLUConvNet):
            raise ArchitectureError(
                f"a channel symmetry moves a ReLUConvNet; got {short_repr(net)}"
            )
        return check_in_range(conv, apply_channel_symmetries(conv, (self,)))


class _Tensors:
    """The hidden tensors' channel spaces, merged where a residual sum ties two."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.info: list[dict] = []

    def new(self, size: int, *, fixed: bool = False, producer: str | None = None) -> int:
        self.parent.append(len(self.parent))
        self.info.append(
            {
                "size": size,
                "producers": [producer] if producer else [],
                "consumers": [],
                "through": [],
                "fixed": fixed,
            }
        )
        return len(self.parent) - 1

    def find(self, k: int) -> int:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def tie(self, a: int, b: int, same_block: bool) -> int:
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        a, b = min(a, b), max(a, b)
        self.parent[b] = a
        ia, ib = self.info[a], self.info[b]
        for key in ("producers", "consumers", "through"):
            ia[key] += ib[key]
        ia["fixed"] = ia["fixed"] or ib["fixed"] or not same_block
        return a


def channel_spec(net: ReLUConvNet) -> ChannelSpec:
    """The channel groups of ``net`` (see the module docs), with the axes of every
    parameter array they act on.

    Args:
        net: a :class:`~neuromanifold.relu.ReLUConvNet` (or the model
            :func:`neuromanifold.io.load` read from a convolutional ONNX graph).

    Returns:
        A :class:`ChannelSpec`.

    >>> import numpy as np
    >>> from neuromanifold.relu import ReLUConvNet, layers as nl
    >>> net = ReLUConvNet(input_shape=(1, 4, 4), layers=[
    ...     nl.Conv(np.ones((2, 1, 3, 3)), np.zeros(2)), nl.ReLU(), nl.Flatten(),
    ...     nl.Dense(np.ones((1, 8)), np.zeros(1))])
    >>> spec = channel_spec(net)
    >>> spec.axes["0.weight"], spec.axes["3.weight"]
    (('P1', None, None, None), (None, 'P1'))
    """
    net = as_conv_net(net) or net
    if not isinstance(net, ReLUConvNet):
        raise ArchitectureError(f"channel_spec reads a ReLUConvNet; got {type(net).__name__}")
    tensors = _Tensors()
    order = {path: k for k, (path, _, _) in enumerate(net.leaves())}

    def visit(prefix: str, layers: tuple, shapes: list, at: tuple[int, int]) -> tuple[int, int]:
        # ``at``: the current tensor's channel space and its entries per channel
        for j, (layer, shape) in enumerate(zip(layers, shapes)):
            path = f"{prefix}{j}"
            if isinstance(layer, Residual):
                ends = [
                    visit(f"{path}.{b}.", sub, layer.branch_shapes(shape, b), at)
                    for b, sub in layer.branches()
                ]
                at = (tensors.tie(ends[0][0], ends[1][0], ends[0][1] == ends[1][1]), ends[0][1])
            elif isinstance(layer, AffineLayer):
                tensors.info[tensors.find(at[0])]["consumers"].append((path, at[1]))
                at = (tensors.new(layer.out_channels, producer=path), 1)
            else:
                tensors.info[tensors.find(at[0])]["through"].append(layer.kind)
                if isinstance(layer, Flatten) and len(shape) > 1:
                    at = (at[0], at[1] * int(np.prod(shape[1:])))
        return at

    first = tensors.new(net.input_shape[0], fixed=True)  # the input's channels stay
    last = visit("", net.layers, list(net.shapes), (first, 1))
    tensors.info[tensors.find(last[0])]["fixed"] = True  # and the output's
    roots = sorted(
        (k for k in range(len(tensors.parent)) if tensors.find(k) == k),
        key=lambda k: min((order[p] for p in tensors.info[k]["producers"]), default=-1),
    )
    out = []
    for k in roots:
        g = tensors.info[k]
        if g["fixed"] or not g["producers"] or not g["consumers"]:
            continue
        positive = any(t in (ReLU.kind, "maxpool") for t in g["through"])
        out.append(
            ChannelGroup(
                name=f"P{len(out) + 1}",
                size=g["size"],
                producers=tuple(sorted(g["producers"], key=order.get)),
                consumers=tuple(sorted(g["consumers"], key=lambda c: order[c[0]])),
                through=tuple(dict.fromkeys(g["through"])),
                scaling="positive" if positive else "nonzero",
            )
        )
    axes = {}
    for path, layer, _ in net.leaves():
        if not isinstance(layer, AffineLayer):
            continue
        w_axes: list = [None] * layer.weight.ndim
        for g in out:
            if path in g.producers:
                w_axes[0] = g.name
            if any(c == path for c, _ in g.consumers):
                w_axes[1] = g.name
        name = net.layer_name(path)
        axes[f"{name}.weight"] = tuple(w_axes)
        axes[f"{name}.bias"] = (w_axes[0],)
    return ChannelSpec(
        groups=tuple(out),
        axes=axes,
        note="permutations and positive scalings of the channels of each hidden tensor "
        "between two affine layers, one group for the tensors a residual sum ties; the "
        "input and output channels are fixed (and a group tied to them); axes are of the "
        "weights as (out, in, kernel...). Symmetries beyond these (as a dead channel's "
        "free weights) are not listed",
    )


def ready_producers(spec: ChannelSpec, group: ChannelGroup, done: set[str]) -> list[str]:
    """The producers of ``group`` whose input channels belong to no group or to a group
    in ``done`` (when groups are taken in order, the first producer always is): the rows
    by which a group can be matched or ordered, its inputs settled."""
    reads = {path: g.name for g in spec.groups for path, _ in g.consumers}
    ready = [path for path in group.producers if reads.get(path, "") in done | {""}]
    return ready or list(group.producers[:1])


def apply_channel_symmetries(
    net: ReLUConvNet, syms: tuple, spec: ChannelSpec | None = None
) -> ReLUConvNet:
    """``net`` moved by each :class:`ChannelSymmetry` of ``syms`` (same function)."""
    spec = channel_spec(net) if spec is None else spec
    by_name = {g.name: g for g in spec.groups}
    layers: dict[str, Any] = {}
    for s in syms:
        g = by_name.get(s.group) if isinstance(s.group, str) else None
        if g is None:
            raise ArchitectureError(
                f"no channel group {short_repr(s.group)} in this network (its groups: "
                f"{', '.join(by_name) or 'none'})"
            )
        perm, scale = _perm_and_scale(s, g.size)
        for path in g.producers:
            layer = layers.get(path) or net.layer_at(path)
            layers[path] = layer.act_on_outputs(perm, scale)
        for path, block in g.consumers:
            layer = layers.get(path) or net.layer_at(path)
            layers[path] = layer.act_on_inputs(perm, scale, block)
    return net.with_leaves(layers)


def check_in_range(net: ReLUConvNet, moved: ReLUConvNet) -> ReLUConvNet:
    """``moved``, or an ArchitectureError when channel scales took it out of the float
    range where ``net`` was in it (its layer-by-layer bound overflows, so its forward
    pass would give inf or NaN). Checked once per result, not per group: the bound is a
    pass over the whole network."""
    if math.isfinite(path_norm(net)) and not math.isfinite(path_norm(moved)):
        raise ArchitectureError(
            "the scales take the network out of the float range (its layer-by-layer bound "
            "overflows, so its forward pass would give inf or NaN); use smaller scales"
        )
    return moved


def _perm_and_scale(s: ChannelSymmetry, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The symmetry's permutation (integers, each channel once) and scales (finite,
    positive) as arrays, or an ArchitectureError stating the rule."""
    perm, scale = s.perm, s.scale
    if (
        not isinstance(perm, (tuple, list, np.ndarray))
        or len(perm) != size
        or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in perm
        )
        or sorted(int(i) for i in perm) != list(range(size))
    ):
        raise ArchitectureError(
            f"{s.group}: perm must hold each of the {size} channels 0..{size - 1} once, as "
            f"integers; got {short_repr(perm)}"
        )  # fmt: skip
    numbers = isinstance(scale, (tuple, list, np.ndarray)) and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        for v in np.asarray(scale, dtype=object).ravel()
    )
    try:
        values = np.asarray(scale, dtype=np.float64) if numbers else None
    except (TypeError, ValueError):
        values = None
    if (
        values is None
        or values.shape != (size,)
        or not np.all(np.isfinite(values) & (values > 0))
        or np.any(values < np.finfo(float).tiny)
    ):
        raise ArchitectureError(
            f"{s.group}: scale must hold {size} finite positive (normal) numbers; got "
            f"{short_repr(scale)}"
        )
    return np.asarray(perm, dtype=np.int64), values
