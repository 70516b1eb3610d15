"""What each hidden neuron does on a domain: dead, linear (always active), hidden or
visible, each proved, never counted on samples.

Two routes, both certified where they decide:

* ``"regions"``: the exact region engine (:func:`~neuromanifold.relu.bent_hyperplanes`):
  a neuron is ``"dead"`` (inactive on every region), ``"linear"`` (active on every
  region), ``"hidden"`` (it switches, but no piece of its bent hyperplane bends the
  function) or ``"visible"``.
* ``"bounds"``, for networks of trained size: linear bound propagation (CROWN)
  intersected with interval arithmetic over the box, with the float rounding of every
  layer bounded (a neuron whose pre-activation has upper bound
  ``<= 0`` is dead on the domain, lower bound ``>= 0`` linear), and points of the domain
  (a sample, and the user's data) whose float forward pass carries a rigorous error
  bound: a pre-activation certified ``> 0`` at one point and ``< 0`` at another makes the
  neuron ``"switching"`` (it is neither dead nor linear; whether it is hidden or visible
  only the region engine says). A neuron neither bound nor witness decides is
  ``"undecided"``, with the reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._errors import ComputationLimitError, InputError
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_finite_array, as_seed_rng, check_choice, check_positive_int
from .._bounds.conv import activated, channel_bounds, channel_values
from .._bounds.linear import neuron_bounds
from .._core.domain import Domain, FixedInputs, as_domain
from .._core.live import as_conv_net
from .._core.net import check_params, float_params
from .._core.numbers import forward_error_bounds
from .._regions.bent import bent_hyperplanes
from .._regions.regions import estimate_regions

__all__ = ["NeuronStatus", "neurons"]

_METHODS = ("auto", "regions", "bounds")
#: ``method="auto"`` runs the region engine when at most this many regions are expected
_REGIONS_FIRST = 5_000
#: the statuses, in the order they are listed
STATUSES = ("dead", "linear", "hidden", "visible", "switching", "undecided")


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class NeuronStatus(Result):
    """What every hidden neuron does on a domain (see the module docs).

    Attributes:
        status: one tuple per hidden layer, one status per neuron: ``"dead"``,
            ``"linear"`` (active on the whole domain), ``"hidden"``, ``"visible"``,
            ``"switching"`` (takes both signs; hidden or visible not decided) or
            ``"undecided"``.
        method: ``"regions"`` (exact region engine) or ``"bounds"``.
        certified: every status but ``"undecided"`` is proved (always True: undecided
            neurons are named as such).
        num_points: domain points whose certified signs were used (``"bounds"``).
        domain: the domain.
        note: how it was decided, and why any neuron is undecided.
        tol: the relative tolerance of ``"hidden"`` against ``"visible"``: a piece of a
            bent hyperplane is visible when the function bends there by more than ``tol``
            times the network's scale (its path norm; ``0``: any bend). Dead and linear
            are decided without it.
        on_data: with ``data``, what every neuron does on the data points themselves
            (one tuple per hidden layer): ``"inactive"`` (pre-activation certified
            ``<= 0`` at every point: it fires on none), ``"active"`` (``>= 0`` at every
            point), ``"both"`` (certified of each sign at some point) or ``"undecided"``
            (within the float rounding of 0 at a point); ``None`` without data. A neuron
            inactive on the data can still fire elsewhere on their bounding box.
        channel_layers: for a convolutional network, the top-level convolutions and dense
            layers whose channels reach a ReLU (their indices in ``net.layers``); ``()``
            otherwise. ``status`` and ``on_data`` are then the dense view's neurons.
        channels: per layer of ``channel_layers``, one status per channel: ``"dead"``
            (pre-activation ``<= 0`` at every position on the whole domain), ``"linear"``
            (``>= 0`` everywhere) or ``"undecided"``, proved by interval bounds carried
            through the layers (on a box; on R^d only zero weights prove a sign).
        channels_on_data: with data, per layer and channel, as ``on_data`` for neurons:
            ``"inactive"``, ``"active"``, ``"both"`` or ``"undecided"`` at the data points
            (every position of the channel counted); ``None`` without data.
    """

    status: tuple
    method: str
    certified: bool
    num_points: int
    domain: Domain
    note: str
    on_data: tuple | None = None
    tol: float = DEFAULT_TOL
    channel_layers: tuple = ()
    channels: tuple = ()
    channels_on_data: tuple | None = None

    def indices(self, status: str) -> list[list[int]]:
        """Per hidden layer, the neurons (0-based) with ``status``."""
        check_choice(status, "status", STATUSES)
        return [[i for i, s in enumerate(layer) if s == status] for layer in self.status]

    def counts(self) -> list[dict[str, int]]:
        """Per hidden layer, how many neurons have each status (zeros left out)."""
        return [
            {s: n for s in STATUSES if (n := sum(v == s for v in layer))} for layer in self.status
        ]

    def describe(self) -> str:
        """A few lines for people: per layer the counts and the dead neurons."""
        lines = [f"hidden neurons on the domain ({self.method}, certified):"]
        for l, (layer, count) in enumerate(zip(self.status, self.counts()), start=1):
            parts = ", ".join(f"{n} {s}" for s, n in count.items())
            dead = [i for i, s in enumerate(layer) if s == "dead"]
            shown = ", ".join(map(str, dead[:12])) + (", ..." if len(dead) > 12 else "")
            lines.append(
                f"  layer {l} ({len(layer)} neurons): {parts}"
                + (f"; dead: {shown}" if dead else "")
            )
        if self.on_data is not None:
            lines.append("on the data points themselves (certified signs):")
            for l, layer in enumerate(self.on_data, start=1):
                kinds = {
                    k: [i for i, v in enumerate(layer) if v == k]
                    for k in ("inactive", "active", "both", "undecided")
                }
                parts = ", ".join(f"{len(ix)} {k}" for k, ix in kinds.items() if ix)
                off = kinds["inactive"]
                shown = ", ".join(map(str, off[:12])) + (", ..." if len(off) > 12 else "")
                lines.append(f"  layer {l}: {parts}" + (f"; never active: {shown}" if off else ""))
        if self.channel_layers:
            lines.append("channels (convolutional network; layer indices as in net.layers):")
            data = self.channels_on_data or (None,) * len(self.channels)
            for k, layer, on in zip(self.channel_layers, self.channels, data):
                dead = [c for c, v in enumerate(layer) if v == "dead"]
                never = [] if on is None else [c for c, v in enumerate(on) if v == "inactive"]
                lines.append(
                    f"  layer {k} ({len(layer)} channels): dead on the domain {dead or 'none'}"
                    + ("" if on is None else f"; never active on the data {never or 'none'}")
                )
        return "\n".join(lines + [self.note])


def _certified_signs(params: list, X: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per hidden layer, which neurons are certified ``> 0`` at some row of ``X`` and which
    certified ``< 0``: the float forward pass with a running bound on its error (each
    dot product's rounding, carried through the 1-Lipschitz ReLUs)."""
    return [
        (np.any(Z - err > 0, axis=0), np.any(Z + err < 0, axis=0))
        for Z, err in forward_error_bounds(params, X)
    ]


def _points(dom: Domain, d: int, rng, n: int, data: np.ndarray | None) -> np.ndarray:
    if dom.kind == "box":
        X = dom.lower + (dom.upper - dom.lower) * rng.random((n, d))
    else:
        X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-2, 4, (n, 1)))
        X = np.abs(X) if dom.kind == "orthant" else X
    if data is not None:
        inside = dom.contains(data)
        X = np.vstack([data[inside], X])
    return X


def neurons(
    params: Any,
    domain: Any = None,
    *,
    data: Any = None,
    method: str = "auto",
    num_samples: int = 4096,
    seed: Any = 0,
    max_regions: int | None = None,
    time_limit: float | None = None,
    tol: float = DEFAULT_TOL,
) -> NeuronStatus:
    """What every hidden neuron does on the domain, each status proved (module docs).

    Args:
        params: the network (a list of ``(W, b)``, a loaded model, a fitted MLP, ...).
        domain: ``None`` (R^d), ``"orthant"``, a ``(lower, upper)`` box or a Domain; with
            ``data`` and no domain, the data's bounding box (:meth:`Domain.from_data`).
        data: points of the domain (an array ``(n, d)``) used as witnesses, next to a
            sample of the domain.
        method: ``"auto"`` (the region engine when at most 5,000 regions are expected,
            else ``"bounds"``), ``"regions"`` or ``"bounds"``.
        num_samples: random points of the domain used as witnesses (``"bounds"``).
        seed: seed of those points.
        max_regions, time_limit: the region engine's budget; when it ends, ``"auto"``
            answers by ``"bounds"`` (the note says so), ``"regions"`` raises a
            :class:`~neuromanifold.ComputationLimitError` whose ``partial`` is that answer.
        tol: relative tolerance of hidden against visible (see
            :attr:`NeuronStatus.tol`; ``0`` = exact).

    Returns:
        A :class:`NeuronStatus`.

    >>> p = [(np.array([[1.0], [-1.0]]), np.array([0.0, -5.0])), (np.ones((1, 2)), np.zeros(1))]
    >>> neurons(p, (-1.0, 1.0)).status       # the second is negative on [-1, 1]
    (('visible', 'dead'),)
    """
    P = check_params(params)
    tol = check_tol(tol)
    rounded = float_params(params) is None  # Fraction entries: the float64 network
    check_choice(method, "method", _METHODS)
    num_samples = check_positive_int(num_samples, "num_samples", InputError, maximum=10**7)
    d = P[0][0].shape[1]
    X = None if data is None else as_finite_array(data, "data", ndim=2)
    if X is not None and X.shape[1] != d:
        raise InputError(f"data must have {d} columns (the input dimension); got shape {X.shape}")
    dom = Domain.from_data(X) if domain is None and X is not None else as_domain(domain, d)
    if X is not None:
        dom.check_contains(X)
    cut = FixedInputs.of(dom)
    note = "entries read as float64 (exact Fraction values not used); " if rounded else ""
    conv = as_conv_net(params)
    hidden = sum(W.shape[0] for W, _ in P[:-1])
    if conv is not None and method == "auto" and hidden > _CONV_REGION_NEURONS:
        # every region's pieces cost an LP per neuron: a convolutional network's dense view
        # (hundreds of neurons at 8 x 8 inputs) would keep the region engine for hours
        method = "bounds"
        note += (
            f"a convolutional network's dense view ({hidden} hidden neurons): the bound "
            f"engine (method='regions' asks for the region engine); "
        )
    if cut is not None:  # a box fixing inputs: the network on the others
        note += (
            f"inputs {cut.fixed.tolist()} fixed by the box, folded into the first layer's "
            f"bias (rounded to float64); "
        )
    result = _decide(
        P if cut is None else check_params(cut.reduce(params)),
        dom if cut is None else cut.domain,
        X if cut is None or X is None else X[:, cut.free],
        method=method,
        num_samples=num_samples,
        seed=seed,
        max_regions=max_regions,
        time_limit=time_limit,
        note=note,
        tol=tol,
    )
    if cut is not None:
        result = dataclasses.replace(result, domain=dom)
    if conv is not None:
        result = dataclasses.replace(result, **_channel_statuses(conv, dom, X))
    if X is None or X.shape[0] == 0:
        return result
    where = "the bounding box of the data" if domain is None else "the given domain"
    return dataclasses.replace(
        result, on_data=_on_data(P, X), note=f"statuses on {where}; " + result.note
    )


#: hidden neurons of a convolutional network's dense view above which ``method="auto"``
#: answers by the bound engine
_CONV_REGION_NEURONS = 200


def _channel_statuses(net: Any, dom: Domain, X: np.ndarray | None) -> dict:
    """The channel fields of :class:`NeuronStatus` for a convolutional network."""
    layers = activated(net)
    bounds = channel_bounds(net, dom)
    channels = []
    for k in layers:
        lo, hi = (a.reshape(a.shape[0], -1) for a in bounds[k])
        channels.append(
            tuple(
                "dead" if np.all(h <= 0) else "linear" if np.all(lo_c >= 0) else "undecided"
                for lo_c, h in zip(lo, hi)
            )
        )
    on_data = None
    if X is not None and X.shape[0]:
        values = channel_values(net, X)
        on_data = []
        for k in layers:
            Z, err = values[k]
            Z = np.moveaxis(Z, 1, 0).reshape(Z.shape[1], -1)
            err = np.moveaxis(err, 1, 0).reshape(err.shape[1], -1)
            on_data.append(
                tuple(
                    "both"
                    if np.any(z - e > 0) and np.any(z + e < 0)
                    else "inactive"
                    if np.all(z + e <= 0)
                    else "active"
                    if np.all(z - e >= 0)
                    else "undecided"
                    for z, e in zip(Z, err)
                )
            )
        on_data = tuple(on_data)
    return dict(channel_layers=tuple(layers), channels=tuple(channels), channels_on_data=on_data)


def _on_data(P: list, X: np.ndarray) -> tuple:
    """Per hidden layer, what each neuron does at the rows of ``X`` (``NeuronStatus.on_data``)."""
    out = []
    for Z, err in forward_error_bounds(P, X):
        pos, neg = np.any(Z - err > 0, axis=0), np.any(Z + err < 0, axis=0)
        never_pos = np.all(Z + err <= 0, axis=0)
        never_neg = np.all(Z - err >= 0, axis=0)
        out.append(
            tuple(
                "both" if p and n else "inactive" if a else "active" if b else "undecided"
                for p, n, a, b in zip(pos, neg, never_pos, never_neg)
            )
        )
    return tuple(out)


def _decide(
    P, dom, X, *, method, num_samples, seed, max_regions, time_limit, note, tol: float
) -> NeuronStatus:
    """The statuses on the domain (:func:`neurons`, its arguments checked)."""
    if method != "bounds" and len(P) > 1:
        expected = (
            estimate_regions(P, dom, num_samples=2000, seed=seed).estimate
            if method == "auto"
            else 0
        )
        if method == "regions" or expected <= _REGIONS_FIRST:
            try:
                B = bent_hyperplanes(
                    P, dom, tol=tol, max_regions=max_regions, time_limit=time_limit
                )
            except ComputationLimitError as err:
                if method == "regions":
                    # the error of this call, not of the engine's caller inside; what the
                    # bounds prove (milliseconds) is the partial result
                    out = ComputationLimitError(f"neurons(method='regions'): {err}")
                    for name in ("num_regions", "num_lps", "elapsed"):
                        setattr(out, name, getattr(err, name, None))
                    out.partial = _by_bounds(
                        P,
                        dom,
                        X,
                        as_seed_rng(seed),
                        num_samples,
                        note + f"the region engine stopped ({err}); ",
                    )
                    raise out from None
                note += f"the region engine stopped ({err}); "
            else:
                status = tuple(
                    tuple(n.status for n in B.neurons if n.layer == l + 1)
                    for l in range(len(P) - 1)
                )
                return NeuronStatus(
                    status=status,
                    method="regions",
                    certified=True,
                    num_points=0,
                    domain=dom,
                    note=note + f"exact, over {B.regions.num_regions} linear regions (hidden: "
                    f"no bend above tol = {tol:g} times the scale {B.scale:.4g})",
                    tol=tol,
                )
        else:
            note += f"about {expected:.0f} regions expected: bounds; "
    return _by_bounds(P, dom, X, as_seed_rng(seed), num_samples, note)


def _by_bounds(P, dom, X, rng, num_samples, note) -> NeuronStatus:
    d = P[0][0].shape[1]
    pts = _points(dom, d, rng, num_samples, X)
    signs = _certified_signs(P, pts)
    bounds = neuron_bounds(P, dom.lower, dom.upper) if dom.kind == "box" else None
    status, undecided = [], 0
    for l, (pos, neg) in enumerate(signs):
        layer = []
        for j in range(len(pos)):
            if bounds is not None and bounds[l][1][j] <= 0:
                layer.append("dead")
            elif bounds is not None and bounds[l][0][j] >= 0:
                layer.append("linear")
            elif pos[j] and neg[j]:
                layer.append("switching")
            else:
                layer.append("undecided")
                undecided += 1
        status.append(tuple(layer))
    why = (
        ""
        if not undecided
        else f"; {undecided} undecided: no bound proves them dead or linear and no point "
        f"shows both signs (method='regions' decides them exactly, at the cost of "
        f"enumerating the regions)"
    )
    return NeuronStatus(
        status=tuple(status),
        method="bounds",
        certified=True,
        num_points=int(pts.shape[0]),
        domain=dom,
        note=note + f"linear and interval bounds over the domain and certified signs at "
        f"{pts.shape[0]} points" + why,
    )
