"""Identifiability at any depth: a verdict only where a proof exists (docs/relu_depth.md).

For three-layer networks :func:`identifiability` is the bottleneck characterization of
:mod:`neuromanifold.relu._identifiability.three_layer`. For every other depth it looks for
symmetries that move the parameter off its permutation-scaling orbit:

* per hidden layer, neurons dead or active on every input, neurons with zero outgoing
  weights and pairs of parallel neurons (:mod:`neuromanifold.relu._symmetries.any_depth`);
  when none of these moves leaves the orbit, neurons dead or active on the image of the
  layers before that the exact region engine proves so on R^d (few regions expected);
* in every window of three consecutive layers, the sign-pattern symmetries of the
  three-layer theory (dead and always-active neurons of the window's second layer,
  hidden hyperplanes of its first, flips), lifted by :class:`WindowSymmetry`.

Each witness is re-checked (``applies`` at ``tol``) and its image measured against the
orbit (:func:`~neuromanifold.relu._symmetries.orbit.orbit_gap`, layer by layer): a witness that
applies and moves the parameter off the orbit makes the verdict ``False``. Otherwise the verdict is
``None``: no complete description of the symmetries is checked outside three layers. Phuong and
Lampert ("Functional vs. parametric equivalence of ReLU networks", ICLR 2020, arXiv
1910.00744) prove that for architectures of non-increasing widths permutation and scaling
are the only symmetries of networks in their general position, and Grillo and Montúfar
(arXiv 2605.03601) that every architecture whose input and hidden widths are at least 2
has an open set of identifiable parameters; neither condition is checked on a given
parameter, so neither gives ``True`` here. A network without hidden layers (``f(x) = W x +
b``) is identifiable: the function is its parameter. With one hidden layer a theorem
decides (:mod:`.shallow`): the kinks of ``f`` and their gradient jumps leave only
permutations, scalings and flips of neurons whose linear terms cancel
(:class:`~neuromanifold.relu._symmetries.flips.NeuronFlip`, a witness at every depth).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..._errors import InputError, ParameterError
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import check_bool
from .._bounds.parameters import function_distance_bound, path_norm_scale
from .._core.domain import domain_or_data
from .._core.live import as_conv_net
from .._core.net import check_params, float64_mismatch, float_params
from .._engine.budget import check_budget
from .._symmetries.any_depth import (
    ActiveBiasShift,
    DeadNeuronOutgoing,
    ParallelNeuronSplit,
    SilentNeuronIncoming,
    WindowSymmetry,
    active_neurons,
    dead_neurons,
    parallel_pairs,
    proved_statuses,
    silent_neurons,
    snapped,
)
from .._symmetries.flips import NeuronFlip, zero_sum_flips
from .._symmetries.orbit import orbit_gap
from .._symmetries.shape import row_signs
from .._symmetries.three_layer import DeadNeuronMove, LinearBlockMixing
from .conv import channel_identifiability
from .local import LocalVerdict, local_identifiability
from .shallow import THEOREM as SHALLOW_THEOREM
from .shallow import shallow_check
from .three_layer import identifiability as three_layer_identifiability
from .three_layer import sign_pattern_symmetries
from .verdict import Identifiability

__all__ = ["DeepIdentifiability", "identifiability", "OFF_ORBIT"]

#: a witness's image counts as off the orbit when its orbit gap exceeds this (the float
#: rounding of a permuted, rescaled copy gives about 1e-15)
OFF_ORBIT = 1e-6

#: The fields of a verdict without witnesses.
_NO_WITNESS = dict(witnesses=(), orbit_gaps=(), function_bounds=())

#: The reason added when a flip applies although the three-layer characterization's
#: conditions, as checked, held.
CHECKED_CONDITIONS_MISSED = (
    "the three-layer characterization's conditions held as checked here, yet this flip "
    "keeps the function exactly: the genericity checks do not exclude second-layer neurons "
    "whose linear terms cancel (the masked product of those rows is then not of maximal "
    "rank), so the exact witness decides"
)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class DeepIdentifiability(Identifiability):
    """Identifiability verdict of a network of any depth but three layers (module docs).

    Attributes:
        identifiable: ``False`` (a witness in ``witnesses``, re-checked at ``tol``, moves
            the parameter off its permutation-scaling orbit), ``True`` without hidden
            layers or, with one, by the theorem of :mod:`.shallow` (exact), else
            ``None``: undecided (``undecided_reason`` says why).
        widths: ``(d, n_1, ..., n_L)``.
        dead_neurons: per hidden layer, the neurons dead on every input (sign patterns).
        active_neurons: per hidden layer, the neurons active on every input.
        silent_neurons: per hidden layer, the neurons with zero outgoing weights.
        parallel_pairs: per hidden layer, pairs of neurons with parallel rows.
        witnesses: symmetries that apply and move the parameter off its orbit.
        orbit_gaps: per witness, the measured gap between its image and the orbit
            (float normal forms, layer by layer; about 1e-15 on the orbit).
        function_bounds: per witness, a bound on the relative change of the function
            its image makes: 0.0 when it applies exactly (at ``tol = 0``); for one that
            applies only at ``tol``, the change from setting what it neglects to zero,
            at most ``tol`` (module docs).
        reasons: what was found, in words.
        certified: a ``False`` verdict with a witness that applies at ``tol = 0`` too
            (proved); ``True`` for a ``True`` verdict (always proved).
        tol: the relative tolerance of the sign decisions.
        method: how the verdict was reached.
        undecided_reason: for ``identifiable=None``, why and what would decide it.
    """

    dead_neurons: tuple
    active_neurons: tuple
    silent_neurons: tuple
    parallel_pairs: tuple
    orbit_gaps: tuple
    function_bounds: tuple

    def describe(self) -> str:
        """The verdict and its reasons, one per line."""
        proof = (
            "; proved: a witness applies at tol = 0"
            if self.certified and self.identifiable is False
            else "; the witnesses apply at this tol only"
            if self.identifiable is False
            else ""
        )
        lines = [f"{self.verdict} (widths {'-'.join(map(str, self.widths))}{proof})"]
        lines += ["  " + r for r in self.reasons]
        if self.undecided_reason:
            lines.append("  undecided: " + self.undecided_reason)
        return "\n".join(lines + self.local_line())


def identifiability(
    params: Any,
    domain: Any = None,
    *,
    data: Any = None,
    tol: float = DEFAULT_TOL,
    exact_genericity: bool = False,
    max_regions: int | None = None,
    time_limit: float | None = None,
    local: bool = False,
) -> Identifiability:
    """Is a ReLU parameter identifiable up to permutation and positive scaling?

    Three-layer networks take the route of the bottleneck characterization (a
    :class:`~neuromanifold.relu.ThreeLayerIdentifiability`); every other depth the search
    for symmetries per layer and per three-layer window (a :class:`DeepIdentifiability`):
    ``False`` with a re-checked witness, or ``None`` with the reason (module docs).

    Args:
        params: the network's ``[(W_1, b_1), ..., (W_L, b_L)]``.
        domain: where the local verdict is asked (implies ``local=True``): ``None``
            (R^d), ``"orthant"``, a box ``(lower, upper)`` or a
            :class:`~neuromanifold.relu.Domain`. "Do my network's values on this box
            determine its parameter near the given one?": more neurons are dead or linear
            on a box, and their moves then prove it not locally identifiable there. The
            global verdict ``identifiable`` stays the one on R^d.
        data: points (an array ``(n, d)``) at which the local verdict is asked instead
            (implies ``local=True``; not with ``domain``): "is my network determined, near
            itself, by its values on my training inputs?" The exact rank of the Jacobian
            at those points (up to 6,000 parameters), or moves their certified signs
            allow (a neuron negative at every point has free weights).
        tol: relative tolerance of the sign decisions (``0`` exact).
        exact_genericity: three layers only: also run the exact genericity test.
        max_regions, time_limit: the budget of that exact test and of the local verdict's
            rank.
        local: also decide local identifiability (the result's ``locally_identifiable``):
            near the parameter, is the fiber the orbit of the neuron scalings? Proved from
            the exact rank of the parameter Jacobian (:mod:`.local`); at trained sizes
            this costs what ``functional_dimension(params, tol=0)`` costs.

    Returns:
        An :class:`~neuromanifold.relu.Identifiability`: a
        :class:`~neuromanifold.relu.ThreeLayerIdentifiability` (three layers), a
        :class:`DeepIdentifiability` (every other depth) or, for a convolutional network,
        a :class:`~neuromanifold.relu.ChannelIdentifiability` (modulo channel
        permutation and scaling: ``False`` with a dead, unread or duplicate channel,
        else undecided): the verdict, its witnesses and reasons, and what would decide
        an open verdict.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0], [1.0, -2.0]]),
    ...      np.array([-0.5, -1.0])),
    ...      (np.array([[1.0, -1.0], [-1.0, 2.0]]), np.array([0.5, 0.25])),
    ...      (np.array([[1.0, 2.0]]), np.zeros(1))]   # layer 2 hides hyperplane 0 of layer 1
    >>> r = identifiability(P)
    >>> r.identifiable, r.certified, r.witnesses[0]
    (False, True, WindowSymmetry(start=1, symmetry=HidingTranslation(...)))
    """
    conv = as_conv_net(params)
    if conv is not None:
        if local or domain is not None or data is not None:
            raise InputError(
                "the local verdict (local=True, a domain or data) is about the parameters "
                "of a fully connected network; got a convolutional network, whose "
                "parameters are its kernels: ask identifiability(network) for its verdict "
                "modulo channel permutation and scaling"
            )
        if check_bool(exact_genericity, "exact_genericity"):
            raise InputError(
                "exact_genericity=True is the genericity test of three-layer fully "
                "connected networks; got a convolutional network"
            )
        check_budget(max_regions, time_limit)
        return channel_identifiability(conv, check_tol(tol))
    raw = params
    params = check_params(params)
    local = check_bool(local, "local")
    dom, X = domain_or_data(domain, data, params[0][0].shape[1], "identifiability")
    local = local or domain is not None or X is not None
    dom = None if dom.kind == "whole" else dom
    start = time.monotonic()
    res = _route(params, tol, exact_genericity, max_regions, time_limit)
    if not local:
        return res
    left = None if time_limit is None else max(time_limit - (time.monotonic() - start), 1e-3)
    mismatch = float64_mismatch(raw, params)
    if res.identifiable is True and dom is None and X is None:
        found = LocalVerdict(
            locally_identifiable=True,
            jacobian_rank=None,
            rank_bound=0,
            reason="identifiable: the whole fiber is the permutation-scaling orbit",
        )
    elif mismatch is not None:
        found = LocalVerdict(
            locally_identifiable=None,
            jacobian_rank=None,
            rank_bound=0,
            reason=f"the local verdict decides on float64 entries (its rank is of the float "
            f"network), and {mismatch}; pass the float64 network to ask it of that one",
        )
    else:
        found = local_identifiability(
            float_params(params),
            res.witnesses,
            domain=dom,
            data=X,
            max_regions=max_regions,
            time_limit=left,
        )
    return dataclasses.replace(
        res,
        locally_identifiable=found.locally_identifiable,
        jacobian_rank=found.jacobian_rank,
        local_reason=found.reason,
        local_domain=dom,
        local_num_data_points=None if X is None else X.shape[0],
    )


def _route(params, tol, exact_genericity, max_regions, time_limit) -> Identifiability:
    """The route by depth: the three-layer characterization, else the any-depth search."""
    # Whole: the dispatch by depth, then the any-depth search and its verdict, each feeding the next
    if len(params) == 3:
        return _three_layer_route(params, tol, exact_genericity, max_regions, time_limit)
    tol = check_tol(tol)
    if check_bool(exact_genericity, "exact_genericity"):
        raise InputError(
            f"exact_genericity=True is the genericity test of three-layer "
            f"networks; this network has {len(params)} layers"
        )
    check_budget(max_regions, time_limit)
    widths = (params[0][0].shape[1],) + tuple(W.shape[0] for W, _ in params)
    if len(params) == 1:
        return DeepIdentifiability(
            identifiable=True,
            widths=widths,
            dead_neurons=(),
            active_neurons=(),
            silent_neurons=(),
            parallel_pairs=(),
            witnesses=(),
            orbit_gaps=(),
            function_bounds=(),
            reasons=("no hidden layer: f(x) = W x + b determines W and b",),
            certified=True,
            tol=tol,
            method="no hidden layer",
        )
    hidden = range(1, len(params))
    status = {
        name: tuple(tuple(fn(params, l, tol)) for l in hidden)
        for name, fn in (
            ("dead", dead_neurons),
            ("active", active_neurons),
            ("silent", silent_neurons),
            ("parallel", parallel_pairs),
        )
    }
    candidates = _layer_moves(params, status) + _window_moves(params, tol)
    scale = path_norm_scale(params)
    reasons, witnesses, distances, bounds = [], [], [], []
    for reason, move in candidates:
        bound = _function_change(params, move, tol, scale)
        if bound is None:
            continue
        dist = orbit_gap(params, move.apply(params, tol=tol))
        if dist > OFF_ORBIT:
            reasons.append(reason)
            witnesses.append(move)
            distances.append(dist)
            bounds.append(bound)
    searches = [zero_sum_flips(params, l) for l in hidden]  # the theorem below reads them
    for reason, move, dist in _flip_witnesses(params, searches):
        reasons.append(reason)
        witnesses.append(move)
        distances.append(dist)
        bounds.append(0.0)
    if not witnesses:  # neurons dead or active on the image of the layers before
        for reason, move in _image_moves(params, status, time_limit):
            dist = orbit_gap(params, move.apply(params, tol=0))
            if dist > OFF_ORBIT:
                reasons.append(reason)
                witnesses.append(move)
                distances.append(dist)
                bounds.append(0.0)
    common = dict(
        widths=widths,
        dead_neurons=status["dead"],
        active_neurons=status["active"],
        silent_neurons=status["silent"],
        parallel_pairs=status["parallel"],
        tol=tol,
        method="sign patterns per layer and per three-layer window",
    )
    if witnesses:
        return DeepIdentifiability(
            identifiable=False,
            witnesses=tuple(witnesses),
            orbit_gaps=tuple(distances),
            function_bounds=tuple(bounds),
            reasons=tuple(reasons),
            certified=0.0 in bounds,
            **common,
        )
    if len(params) == 2:
        return _shallow_result(params, tol, common, searches[0], status["parallel"][0])
    why = (
        "no symmetry beyond permutation and scaling was found (dead, always-active, "
        "silent and parallel neurons of every layer; flips of neurons whose linear terms "
        "cancel; the sign-pattern symmetries of every three-layer window), but no "
        "characterization of the symmetries is checked at "
        f"{len(params)} layers: Phuong and Lampert (2020) prove identifiability for "
        "non-increasing widths in their general position, Grillo and Montufar (2026) an "
        "open set of identifiable parameters for input and hidden widths >= 2, and "
        "neither condition is checked on a given parameter. A verified fiber point off "
        "the orbit would decide 'not identifiable'"
    )
    return DeepIdentifiability(
        identifiable=None,
        certified=False,
        reasons=(
            "no dead, always-active, silent or parallel neuron, no cancelling flip and "
            "no sign-pattern symmetry of a three-layer window",
        ),
        undecided_reason=why,
        **_NO_WITNESS,
        **common,
    )


def _three_layer_route(params, tol, exact_genericity, max_regions, time_limit):
    """The three-layer characterization, overruled by an exact flip of cancelling neurons
    where one applies."""
    res = three_layer_identifiability(
        params,
        tol=tol,
        exact_genericity=exact_genericity,
        max_regions=max_regions,
        time_limit=time_limit,
    )
    if res.identifiable is False:
        return res
    # cancelling neurons prove 'not identifiable' outside the characterization, and
    # where its conditions as checked here hold too (the genericity checks do not
    # exclude second-layer neurons whose linear terms cancel)
    flips = _flip_witnesses(params, [zero_sum_flips(params, l) for l in range(1, len(params))])
    if not flips:
        return res
    extra = () if res.identifiable is None else (CHECKED_CONDITIONS_MISSED,)
    return dataclasses.replace(
        res,
        identifiable=False,
        witnesses=res.witnesses + tuple(move for _, move, _ in flips),
        reasons=res.reasons + tuple(reason for reason, _, _ in flips) + extra,
        certified=True,
        undecided_reason=None,
    )


def _shallow_result(params, tol: float, common: dict, search, near) -> DeepIdentifiability:
    """The verdict of the one-hidden-layer theorem (:mod:`.shallow`) where the symmetry
    search found no witness (``search``: its flip search; ``near``: its parallel pairs)."""
    check = shallow_check(params, tol, search=search, near=near)
    if check.identifiable is False:  # a flip whose image is near the orbit, still off it
        moves = tuple(NeuronFlip(1, S) for S in check.flip_sets)
        return DeepIdentifiability(
            identifiable=False,
            witnesses=moves,
            orbit_gaps=tuple(orbit_gap(params, m.apply(params, tol=0)) for m in moves),
            function_bounds=(0.0,) * len(moves),
            certified=True,
            reasons=(
                f"{check.reason}: flipping them keeps the function, and no two rows "
                f"being multiples of each other, the flipped rows are off the orbit "
                f"(however near it the measured gap)",
            ),
            **common,
        )
    if check.identifiable:
        return DeepIdentifiability(
            identifiable=True,
            certified=True,
            reasons=(check.reason,),
            **_NO_WITNESS,
            **{**common, "method": SHALLOW_THEOREM},
        )
    return DeepIdentifiability(
        identifiable=None,
        certified=False,
        reasons=("no dead, always-active, silent or parallel neuron",),
        undecided_reason=check.reason,
        **_NO_WITNESS,
        **common,
    )


def _flip_witnesses(params, searches: list) -> list[tuple[str, NeuronFlip, float]]:
    """``(reason, move, orbit gap)`` of every flip of neurons whose linear terms cancel
    whose image is off the orbit; ``searches``: :func:`zero_sum_flips` of each hidden
    layer in turn (exact, cheap)."""
    out = []
    for l, search in enumerate(searches, start=1):
        for S in search.sets:
            move = NeuronFlip(l, S)
            dist = orbit_gap(params, move.apply(params, tol=0))
            if dist > OFF_ORBIT:
                reason = (
                    f"the linear terms c_i w_i^T of neurons {list(S)} of hidden layer {l} "
                    f"cancel: flipping them keeps the function"
                )
                out.append((reason, move, dist))
    return out


def _function_change(params, move, tol: float, scale: float) -> float | None:
    """``0.0`` when ``move`` applies exactly; else, when it applies at ``tol``, a bound on
    the relative change of the function between ``params`` and its image: what the move
    neglects set to zero (:func:`snapped`), the move must apply exactly there, and the
    snapping of ``params`` and of the image together move the function by at most
    ``tol`` times the scale; ``None`` when the move does not count."""
    if move.applies(params, tol=0).applies:
        return 0.0
    if tol == 0 or not move.applies(params, tol=tol).applies:
        return None
    near = snapped(params, move, tol)
    if near is None or not move.applies(near, tol=0).applies or not scale > 0:
        return None
    bound = function_distance_bound(params, near) + function_distance_bound(
        move.apply(params, tol=tol), move.apply(near, tol=0)
    )
    return bound / scale if bound <= tol * scale else None


def _layer_moves(params, status: dict) -> list[tuple[str, Any]]:
    """Candidate witnesses of the per-layer moves, with their reasons."""
    out = []
    for l in range(1, len(params)):
        W, b = params[l - 1]
        Wn = params[l][0]
        for j in status["dead"][l - 1]:
            col = Wn[:, j]  # negated (or ones for a zero column): never a positive multiple
            out.append(
                (
                    f"neuron {j} of hidden layer {l} is dead on every input: its "
                    f"outgoing weights are free",
                    DeadNeuronOutgoing(l, j, tuple(-col if np.any(col) else col + 1.0)),
                )
            )
        for j in status["active"][l - 1]:
            shift = max(1.0, abs(float(b[j])))
            out.append(
                (
                    f"neuron {j} of hidden layer {l} is active on every input: its bias "
                    f"shifts into the next layer's",
                    ActiveBiasShift(l, j, shift),
                )
            )
        for j in status["silent"][l - 1]:
            out.append(
                (
                    f"neuron {j} of hidden layer {l} has zero outgoing weights: its "
                    f"incoming row is free",
                    SilentNeuronIncoming(l, j, tuple(-W[j]) + (-float(b[j]),)),
                )
            )
        for j, k in status["parallel"][l - 1]:
            size = max(1.0, float(np.max(np.abs(Wn[:, [j, k]]), initial=0.0)))
            out.append(
                (
                    f"neurons {j} and {k} of hidden layer {l} have parallel rows: "
                    f"outgoing weight moves between them",
                    ParallelNeuronSplit(l, (j, k), (size,) * Wn.shape[0]),
                )
            )
    return out


def _image_moves(params, status: dict, time_limit: float | None) -> list[tuple[str, Any]]:
    """Candidate witnesses for neurons that the exact region engine proves dead or active
    on all of R^d while their sign patterns do not show it (:func:`proved_statuses`: only
    when few regions are expected), with their reasons; each applies exactly."""
    proved = proved_statuses(params, time_limit)
    if proved is None:
        return []
    out = []
    for l in range(1, len(params)):
        b = params[l - 1][1]
        Wn = params[l][0]
        for j, kind in enumerate(proved[0][l - 1]):
            proof = "(proved by the exact region engine, not by its sign pattern)"
            if kind == "dead" and j not in status["dead"][l - 1]:
                col = Wn[:, j]
                out.append(
                    (
                        f"neuron {j} of hidden layer {l} is dead on every input {proof}: "
                        f"its outgoing weights are free",
                        DeadNeuronOutgoing(l, j, tuple(-col if np.any(col) else col + 1.0)),
                    )
                )
            elif kind == "linear" and j not in status["active"][l - 1]:
                out.append(
                    (
                        f"neuron {j} of hidden layer {l} is active on every input "
                        f"{proof}: its bias shifts into the next layer's",
                        ActiveBiasShift(l, j, max(1.0, abs(float(b[j])))),
                    )
                )
    return out


def _window_moves(params, tol: float) -> list[tuple[str, Any]]:
    """Candidate witnesses of every three-layer window, lifted, with their reasons."""
    out = []
    for start in range(1, len(params) - 1):
        window = params[start - 1 : start + 2]
        try:
            found, _, _ = sign_pattern_symmetries(window, row_signs(window, tol), tol)
        except ParameterError:  # products beyond the float range: no window verdict
            continue
        where = (
            f"layers {start}-{start + 2} as a three-layer window (its first and second "
            f"layers are hidden layers {start} and {start + 1}): "
        )
        # dead and always-active neurons are the per-layer moves already
        out += [
            (where + r, WindowSymmetry(start, w))
            for r, ws in found
            for w in ws
            if not isinstance(w, (DeadNeuronMove, LinearBlockMixing))
        ]
    return out
