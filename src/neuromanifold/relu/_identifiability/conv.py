"""Identifiability of a convolutional ReLU network, modulo its channel symmetries.

A convolutional network's parameters are its kernels and biases; the permutations of the
channels of a hidden layer and a positive scale per channel (tied across residual sums,
:func:`~neuromanifold.relu.channel_spec`) keep its function. The question is whether any
other parameter computes the same function.

**Not identifiable**, proved: a move of :func:`~neuromanifold.relu.reduce` on R^d (exact
rationals) is a continuous family of parameters off the channel orbit with the same
function. A channel dead on every input (zero kernel, bias ``<= 0``) has free outgoing
weights; a channel that nothing reads (zero outgoing weights) has a free kernel; two
channels whose kernels and biases are positive multiples of each other share their
outgoing weights (any split between them keeps the function). Each witness is the move in
words, with the layer and channels, as ``reduce`` found it, segment after segment (a
later segment's kernels are compared after the earlier moves, which keep the function),
and a layer's last channel when it too is dead or unread (``reduce`` keeps it).

**Otherwise undecided**: the neuron theory of fully connected networks does not carry
over to shared weights (the dense view's hidden symmetries are not the kernels'), and no
characterization of the symmetries of convolutional networks is checked here. Never
``True``.
"""

from __future__ import annotations

import dataclasses

from .._core.conv.layer import AffineLayer
from .._core.conv.network import ReLUConvNet
from .._core.domain import Domain
from .._reduction.conv import reduce_channels
from .verdict import Identifiability

__all__ = ["ChannelIdentifiability", "channel_identifiability"]

#: Why no ``True`` is given for a convolutional network.
OPEN = (
    "no dead, unread or duplicate channel (the moves that prove 'not identifiable'), but the "
    "symmetries of convolutional networks beyond channel permutation and positive channel "
    "scaling are not characterized (shared weights: the theory of fully connected networks "
    "does not apply to the kernels), so the verdict stays open; a second parameter of the "
    "same function off the channel orbit would decide 'not identifiable'"
)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ChannelIdentifiability(Identifiability):
    """Identifiability verdict of a convolutional network, modulo channel permutation and
    positive channel scaling (module docs).

    Attributes:
        identifiable: ``False`` (a move in ``witnesses`` keeps the function and leaves the
            channel orbit; exact) or ``None`` (undecided, with ``undecided_reason``);
            never ``True``.
        widths: the output channels of each top-level affine layer (convolution or
            dense), in order.
        witnesses: the moves, in words (the layer, the channels, what keeps the function).
        left: what the moves did not look at (channels tied by a residual sum), in words.
    """

    left: tuple = ()

    def describe(self) -> str:
        """The verdict and its reasons, one per line."""
        proof = "; proved: exact moves" if self.identifiable is False else ""
        lines = [f"{self.verdict} (channels {'-'.join(map(str, self.widths))}{proof})"]
        lines += ["  " + r for r in self.reasons]
        lines += ["  not looked at: " + r for r in self.left]
        if self.undecided_reason:
            lines.append("  undecided: " + self.undecided_reason)
        return "\n".join(lines)


def channel_identifiability(net: ReLUConvNet, tol: float) -> ChannelIdentifiability:
    """The verdict of the module docs for ``net``; ``tol`` is recorded (the moves are
    decided in exact rationals)."""
    done = reduce_channels(net, Domain.whole(net.input_dim))
    widths = tuple(layer.out_channels for layer in net.layers if isinstance(layer, AffineLayer))
    common = dict(
        widths=widths,
        tol=tol,
        method="channel moves of reduce on R^d (dead, unread and duplicate channels)",
        left=tuple(done.left),
    )
    moves = tuple(done.moves) + tuple(done.kept)
    if moves:
        return ChannelIdentifiability(
            identifiable=False,
            witnesses=moves,
            reasons=tuple(
                f"{move}: a family of parameters off the channel orbit keeps the function"
                for move in moves
            ),
            certified=True,
            **common,
        )
    return ChannelIdentifiability(
        identifiable=None,
        witnesses=(),
        reasons=("no dead, unread or duplicate channel on R^d",),
        certified=False,
        undecided_reason=OPEN,
        **common,
    )
