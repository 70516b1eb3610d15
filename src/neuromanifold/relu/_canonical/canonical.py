"""The canonical form at any depth (docs/relu_depth.md).

For three-layer networks :func:`canonical_form` is by default the bottleneck canonical form
of :mod:`neuromanifold.relu._canonical.three_layer` (every symmetry of that theory quotiented
out, ``quotient="all"``). For every other depth, and for three layers with
``quotient="permutation-scaling"``, it is the representative modulo permutation and
positive scaling of every hidden layer, after a lossless reduction:

1. **Normal form** (float): layer by layer, every hidden neuron's row ``(W_l[j], b_l[j])``
   is divided by its largest magnitude (the factor pushed into the next layer's column) and
   the neurons are sorted lexicographically by their normalized rows.
2. **Reduction** (exact, in rationals, in rounds, the normal form taken again after each
   step): neurons dead on every input (by their sign patterns,
   :mod:`neuromanifold.relu._symmetries.any_depth`) are dropped, neurons with zero outgoing
   weights too, constant neurons fold into the next layer's biases, parallel rows merge
   (with ``tol > 0``, rows parallel up to ``tol`` are first moved onto the exact multiple);
   then an always-active block keeps a basis of its rows, and every always-active neuron
   after the first layer gets bias 0, its bias moved into the next layer's (its row has no
   negative entry, so it stays active on every input).

The result is certified: the reduction's change (its snapping, and the rounding of its
exact weights) plus a bound on the normal form's rounding (every entry within three units
in the last place of the exact rescaling, carried through
:func:`neuromanifold.relu._bounds.parameters.telescoping_bound`)
stay within ``tol`` times the scale.

What it does not quotient out: the mixings of an always-active block of two or more
neurons, every symmetry of the three-layer windows beyond dead and always-active neurons
(hidden hyperplanes, flips), and a layer whose every neuron is dead (a layer is kept, not
emptied, so the constant network after it is not folded). Two networks with the same form
compute the same function (to ``tol``); networks related by those symmetries can have
different forms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import InputError
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import check_choice
from .._bounds.parameters import path_norm_scale, telescoping_bound
from .._core.conv.network import ReLUConvNet
from .._core.live import as_conv_net
from .._core.net import check_params, exact_params
from .._reduction.reduction import reduce_exact, rounded_layers, sign_statuses, zero_active_biases
from .._symmetries.any_depth import active_neurons, dead_neurons, parallel_pairs, silent_neurons
from .conv import conv_canonical_form
from .three_layer import canonical_form as three_layer_canonical_form

__all__ = ["canonical_form", "permutation_scaling_form"]

Params = list[tuple[np.ndarray, np.ndarray]]
_QUOTIENTS = ("auto", "all", "permutation-scaling")
_U = 2.0**-53
#: the smallest positive normal float64: below it the relative rounding bound fails
_TINY = np.finfo(float).tiny


def canonical_form(
    params: Any, *, tol: float = DEFAULT_TOL, quotient: str = "auto"
) -> Params | ReLUConvNet:
    """One canonical representative of the parameter's fiber, as far as the known
    symmetries reach.

    ``quotient`` says which symmetries are quotiented out:

    * ``"all"`` (three layers only): every symmetry of the three-layer theory, the
      bottleneck canonical form (see its module); it refuses non-generic networks;
    * ``"permutation-scaling"`` (any depth): the lossless reduction, then the normal form
      modulo permutation and positive scaling of every hidden layer (module docs); the
      widths can shrink; never refused but at the float range's ends;
    * ``"auto"``: ``"all"`` for three layers, ``"permutation-scaling"`` otherwise.

    A convolutional network (:class:`~neuromanifold.relu.ReLUConvNet`, or a model read
    from a convolutional ONNX graph) gets its form modulo channel permutation and positive
    scaling, as a convolutional network (:mod:`neuromanifold.relu._canonical.conv`).

    Args:
        params: the network's ``[(W_1, b_1), ..., (W_L, b_L)]``.
        tol: relative tolerance of the sign decisions and of the certified change of the
            function (must be ``> 0``: the normal form rounds).
        quotient: ``"auto"``, ``"all"`` or ``"permutation-scaling"`` (above).

    Returns:
        The canonical parameters, float64 ``(W, b)`` pairs (a ``ReLUConvNet`` for a
        convolutional network), computing the function of ``params`` to within ``tol``
        times its scale.

    Raises:
        InputError: for ``tol = 0``; with ``"all"``, for three-layer networks outside the
            generic cases (the message gives the reason) and for other depths; when the
            certified bound exceeds ``tol``.

    >>> P = [(np.array([[2.0], [-1.0], [0.0]]), np.array([0.0, 1.0, -1.0])),
    ...      (np.array([[1.0, 3.0, 7.0]]), np.zeros(1)), (np.ones((1, 1)), np.zeros(1)),
    ...      (np.ones((1, 1)), np.zeros(1))]
    >>> C = canonical_form(P)   # neuron 2 of layer 1 is dead: dropped
    >>> [W.shape for W, _ in C], C[0][0].ravel().tolist(), C[1][0].ravel().tolist()
    ([(2, 1), (1, 2), (1, 1), (1, 1)], [-1.0, 1.0], [1.0, 0.6666666666666666])
    """
    conv = as_conv_net(params)
    if conv is not None:  # modulo the channel symmetries, as a convolutional network
        check_choice(quotient, "quotient", _QUOTIENTS)
        return conv_canonical_form(conv, tol)
    P = check_params(params)
    quotient = check_choice(quotient, "quotient", _QUOTIENTS)
    if quotient == "all" and len(P) != 3:
        raise InputError(
            f"quotient='all' needs a three-layer network (no complete list of "
            f"the symmetries is known at {len(P)} layers); "
            f"quotient='permutation-scaling' takes every depth"
        )
    if len(P) == 3 and quotient != "permutation-scaling":
        try:
            return three_layer_canonical_form(P, tol=tol)
        except InputError as exc:
            if "generic three-layer bottleneck" not in str(exc):
                raise
            raise InputError(
                f"{exc}; quotient='permutation-scaling' gives the form modulo "
                f"permutation and scaling after a lossless reduction"
            ) from None
    tol = check_tol(tol)
    if tol == 0:
        raise InputError(
            "canonical_form needs tol > 0: the normal form divides by row "
            "norms, which rounds; got tol = 0"
        )
    if len(P) == 1:
        return P
    form, bound = permutation_scaling_form(P, tol)
    scale = path_norm_scale(P)
    if not bound <= tol * scale:
        rel = bound / scale if scale > 0 else float("inf")
        raise InputError(
            f"canonical_form cannot certify its result within tol = {tol:g}: "
            f"the bound on the function change is {rel:.3g} relative (weights "
            f"near the float range's ends, where the normal form's rounding "
            f"has no relative bound)"
        )
    return form


def permutation_scaling_form(P: Params, tol: float) -> tuple[Params, float]:
    """The reduction and normal form of the module docs for checked parameters of any
    depth, and the bound on the function change (absolute, before dividing by the
    scale; ``inf`` when the rounding bound does not hold).

    The normal form is taken first too, so that the reduction meets the neurons in a
    canonical order (which rows of an always-active block it keeps as the basis depends on
    their order)."""
    first, bound = _normal_form(P)
    if not np.isfinite(bound):
        return first, bound
    form, change = _reduced(first, tol)
    return form, bound + change


def _reduced(P: Params, tol: float) -> tuple[Params, float]:
    """The reduction (module docs, step 1) of a network in normal form, and the bound on
    its change; ``P`` itself when no move applies.

    Rounds until nothing changes, each in two steps with the normal form taken after
    each: first the drops and merges (dead, silent, constant and parallel neurons), then
    the always-active blocks and their biases. Parallel rows are identical in the normal
    form, so their order is arbitrary there; merged first, they cannot make the order in
    which a later block meets its rows (and so the basis it keeps) depend on the copy."""
    hidden = range(1, len(P))
    if not any(
        dead_neurons(P, l, 0.0)
        or active_neurons(P, l, 0.0)
        or silent_neurons(P, l, 0.0)
        or parallel_pairs(P, l, tol, limit=1)
        for l in hidden
    ):
        return P, 0.0
    cur, total = P, 0.0
    while True:
        size = sum(b.size for _, b in cur)
        biases = sum(int(np.count_nonzero(b)) for _, b in cur)
        for blocks in (False, True):
            ex = exact_params(cur)
            Wq, bq = [m for m, _ in ex], [v for _, v in ex]
            dead, active = sign_statuses(Wq, bq)
            W, b, _, delta = reduce_exact(Wq, bq, tol, dead=dead, linear=active if blocks else None)
            if blocks:
                zero_active_biases(W, b)
            floats, rounding = rounded_layers(W, b)
            cur, normal = _normal_form(floats)
            total += float(delta + rounding) + normal
        if (
            sum(b.size for _, b in cur) == size
            and sum(int(np.count_nonzero(b)) for _, b in cur) == biases
        ):
            return cur, total


def _normal_form(P: Params) -> tuple[Params, float]:
    """Rows scaled to largest magnitude 1 and sorted, layer by layer (module docs, step
    2), and a bound on ``sup |f_form - f_exact| / max(1, |x|_inf)``, ``f_exact`` the exact
    rescaling: each entry of the form is the exact value times ``1 + e`` with ``|e| <= 3u``
    (a product and a quotient, each correctly rounded); ``inf`` when an entry underflows
    or overflows (the relative bound fails there)."""
    form = [(W.copy(), b.copy()) for W, b in P]
    inf = float("inf")
    for l in range(len(form) - 1):
        W, b = form[l]
        s = np.max(np.abs(np.hstack([W, b[:, None]])), axis=1, initial=0.0)
        s[s == 0] = 1.0
        W, b = W / s[:, None], b / s
        order = np.lexsort(np.hstack([W, b[:, None]]).T[::-1])
        Wn, bn = form[l + 1]
        M = Wn * s[None, :]
        # the product, divided again in the next layer, must hold its relative bound too
        if (
            np.count_nonzero(M) != np.count_nonzero(Wn)
            or not np.all(np.isfinite(M))
            or np.any((M != 0) & (np.abs(M) < _TINY))
        ):
            inf = None
        form[l] = (W[order], b[order])
        form[l + 1] = (M[:, order], bn)
    if inf is None:
        return form, float("inf")
    for (W, b), (V, c) in zip(P, form):
        for A, B in ((W, V), (b, c)):  # same zeros (up to the order), finite, normal
            if (
                np.count_nonzero(A) != np.count_nonzero(B)
                or not np.all(np.isfinite(B))
                or np.any((B != 0) & (np.abs(B) < _TINY))
            ):
                return form, float("inf")
    a = [(np.abs(W) * (1 + 4 * _U), np.abs(b) * (1 + 4 * _U)) for W, b in form]
    f = [(np.abs(W), np.abs(b)) for W, b in form]
    d = [(np.abs(W) * (4 * _U), np.abs(b) * (4 * _U)) for W, b in form]
    return form, telescoping_bound(a, f, d)
