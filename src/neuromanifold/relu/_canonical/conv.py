"""The canonical form of a convolutional ReLU network modulo its channel symmetries.

Group by group, in the order of :func:`~neuromanifold.relu.channel_spec` (the order of
their first producers): every channel's row in the producers whose inputs are settled (its
kernel and bias, the earlier groups already in canonical form) is divided by its largest
magnitude, and the channels are sorted lexicographically by those rows, as the fully
connected normal form does with neurons. The rescaling is positive, so it commutes with
the ReLUs, poolings and residual sums between producer and consumers; the result computes
the function of the network up to the rounding of the rescaling (certified within
``tol`` times the scale). Two networks related by channel permutations and positive
scalings get the same form up to that rounding; the lexicographic order can differ where
two channels' rows agree to within it.

Not quotiented out: anything beyond the channel groups (dead or duplicate channels, the
mixings of a purely linear link, hidden symmetries).
"""

from __future__ import annotations

import numpy as np

from ..._errors import InputError
from ..._tolerance import check_tol
from .._core.conv.network import ReLUConvNet, path_norm, symmetry_rounding
from .._symmetries.channels import (
    ChannelSymmetry,
    apply_channel_symmetries,
    channel_spec,
    check_in_range,
    ready_producers,
)

__all__ = ["channel_normal_form", "conv_canonical_form"]


def channel_normal_form(net: ReLUConvNet) -> tuple[ReLUConvNet, tuple[ChannelSymmetry, ...]]:
    """``(form, symmetries)``: the network in channel normal form (module docs) and the
    channel symmetries, in order, that take ``net`` to it."""
    spec = channel_spec(net)
    done: set[str] = set()
    current, syms = net, []
    for g in spec.groups:
        rows = np.concatenate(
            [current.layer_at(p).out_rows() for p in ready_producers(spec, g, done)], 1
        )
        s = np.max(np.abs(rows), axis=1, initial=0.0)
        s[s == 0] = 1.0
        order = np.lexsort((rows / s[:, None]).T[::-1])
        sym = ChannelSymmetry(
            group=g.name, perm=tuple(order.tolist()), scale=tuple((1.0 / s[order]).tolist())
        )
        current = apply_channel_symmetries(current, (sym,), spec)
        syms.append(sym)
        done.add(g.name)
    return check_in_range(net, current), tuple(syms)


def conv_canonical_form(net: ReLUConvNet, tol: float) -> ReLUConvNet:
    """The channel normal form, certified to compute ``f_net`` within ``tol`` times the
    scale (the rounding of the rescaling, :func:`symmetry_rounding`); an InputError when it
    cannot be (``tol = 0``, or weights near the float range's ends)."""
    tol = check_tol(tol)
    if tol == 0:
        raise InputError(
            "canonical_form needs tol > 0: the normal form divides by row maxima, which "
            "rounds; got tol = 0"
        )
    form, _ = channel_normal_form(net)
    scale = path_norm(net)
    bound = symmetry_rounding(net)
    if not (np.isfinite(bound) and bound <= tol * scale):
        raise InputError(
            f"canonical_form cannot certify its result within tol = {tol:g} (weights near "
            f"the float range's ends)"
        )
    return form
