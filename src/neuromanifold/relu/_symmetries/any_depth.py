"""Symmetries of ReLU networks of any depth, as transformations (docs/relu_depth.md).

Network: ``f(x) = W_L relu(... relu(W_1 x + b_1) ...) + b_L``; hidden layers are numbered
``1 .. L-1`` like ``W_l``, neurons 0-based, and row ``j`` of ``[W_l | b_l]`` is neuron
``j``'s incoming row. Every hidden layer after the first sees inputs in the nonnegative
orthant (outputs of a ReLU), so sign patterns of its rows prove what a neuron does on
every input:

* :class:`WindowSymmetry`: a symmetry of three consecutive layers ``l, l+1, l+2`` (one of
  :mod:`neuromanifold.relu.symmetries`), which keeps the pre-activations of layer ``l+2``
  as functions of the window's input, hence the whole network's function. Each
  three-layer symmetry holds on the whole orthant of its first layer's outputs, so on the
  image of the layers before the window too.
* :class:`DeadNeuronOutgoing`: a neuron dead on every input (first layer: zero incoming
  weights and a bias ``<= 0``; later layers: a row of ``[W_l | b_l]`` with no positive
  entry; or, where its signs do not show it, inactive on every linear region by the exact
  region engine, :func:`dead_on_image`) outputs 0, so its outgoing weights are free.
* :class:`SilentNeuronIncoming`: a neuron with zero outgoing weights has a free incoming
  row.
* :class:`ActiveBiasShift`: a neuron active on every input (first layer: zero incoming
  weights and a bias ``> 0``; later layers: a row with no negative entry and a positive
  one; or, where its signs do not show it, active on every linear region by the exact
  region engine, for a shift ``t >= 0``) acts as the identity, so its bias shifts by ``t``
  into the next layer's biases, ``b_{l+1} -= t W_{l+1}[:, j]``, while it stays active.
* :class:`ParallelNeuronSplit`: two neurons of one layer with rows ``r_k = lam r_j``,
  ``lam > 0``, compute ``relu(z_k) = lam relu(z_j)``: outgoing weight moves between them,
  ``c_j -> c_j + lam s``, ``c_k -> c_k - s``.

The tolerance only enters the sign decisions: an entry of a row whose magnitude, weighted
by the previous layer's row norms as in :func:`neuromanifold.relu._symmetries.shape.weighted_rows`,
is at most ``tol`` times the row's largest counts as zero; ``tol = 0`` decides on the
signs of the exact floats. Such decisions at ``tol > 0`` are not invariant under every
rescaling of the layers before, so :func:`~neuromanifold.relu.identifiability` accepts a
move that applies only at ``tol`` when, with the entries it neglects set to zero, it
applies exactly and the function moves by at most ``tol`` (bounded, :func:`snapped`).

>>> P = [(np.array([[1.0], [0.0]]), np.array([0.0, -1.0])), (np.array([[1.0, 2.0]]), np.zeros(1))]
>>> DeadNeuronOutgoing(1, 1, (5.0,)).apply(P)[1][0]
array([[1., 5.]])
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._errors import InputError, NeuromanifoldError, short_repr
from ..._validation import as_finite_array, check_nonnegative_int
from .._core.rows import close_pairs, exact_multiple, sign_kinds
from .shape import row_signs
from .three_layer import Symmetry

__all__ = [
    "WindowSymmetry",
    "DeadNeuronOutgoing",
    "SilentNeuronIncoming",
    "ActiveBiasShift",
    "ParallelNeuronSplit",
    "layer_signs",
    "dead_neurons",
    "dead_on_image",
    "active_neurons",
    "silent_neurons",
    "parallel_pairs",
    "parallel_classes",
    "proved_statuses",
    "snapped",
]

Params = list[tuple[np.ndarray, np.ndarray]]


def _hidden(layer: Any) -> int:
    return int(check_nonnegative_int(layer, "layer"))


def _floats(value: Any, what: str) -> tuple[float, ...]:
    return tuple(float(v) for v in as_finite_array(value, what, error=InputError).ravel())


def _number(value: Any, what: str) -> float:
    v = as_finite_array(value, what, error=InputError)
    if v.ndim != 0:
        raise InputError(f"{what} must be one number; got {short_repr(value)}")
    return float(v)


def _where(params: Params, layer: int, neuron: int | None = None) -> str | None:
    """Why ``layer`` (and ``neuron``) is not a hidden layer (neuron) of ``params``."""
    if not 1 <= layer <= len(params) - 1:
        return (
            f"layer must be a hidden layer 1..{len(params) - 1} of this "
            f"{len(params)}-layer network; got {layer}"
        )
    n = params[layer - 1][0].shape[0]
    if neuron is not None and not 0 <= neuron < n:
        return f"neuron must be 0..{n - 1} in hidden layer {layer}; got {neuron}"
    return None


def layer_signs(params: Params, layer: int, tol: float) -> np.ndarray:
    """Sign pattern (entries in ``{-1, 0, 1}``) of every row of ``[W_l | b_l]`` for hidden
    layer ``layer`` at relative tolerance ``tol``, bias last; for ``layer >= 2`` column
    ``k`` is weighted by the norm of row ``k`` of the layer before (module docs)."""
    W, b = params[layer - 1]
    if layer == 1 or tol == 0:  # exact: the floats' own signs (a weighting could underflow)
        R = np.hstack([W, b[:, None]])
        if tol == 0:
            return np.sign(R).astype(int)
    else:
        Wp, bp = params[layer - 2]
        prev = np.hstack([Wp, bp[:, None]])
        peak = np.max(np.abs(prev), axis=1, initial=0.0)
        safe = np.where(peak > 0, peak, 1.0)
        norms = peak * np.sqrt(np.sum((prev / safe[:, None]) ** 2, axis=1))
        with np.errstate(over="ignore"):
            R = np.hstack([W * norms[None, :], b[:, None]])
    S = np.sign(R).astype(int)
    top = np.max(np.abs(R), axis=1, keepdims=True, initial=0.0)
    S[np.abs(R) <= tol * top] = 0
    return S


def dead_neurons(params: Params, layer: int, tol: float) -> list[int]:
    """Neurons of hidden layer ``layer`` dead on every input, by their sign patterns
    (:func:`~neuromanifold.relu._core.rows.sign_kinds`)."""
    return sign_kinds(layer_signs(params, layer, tol), layer == 1)[0]


#: regions the exact engine may enumerate to prove a neuron dead on the image of the
#: layers before (when its sign pattern does not show it)
PROOF_REGIONS = 5000


def dead_on_image(params: Params, layer: int, neuron: int) -> str | None:
    """How ``neuron`` of hidden ``layer`` is proved dead on every input of R^d when its
    sign pattern does not show it: inactive on every linear region, by the exact region
    engine (:func:`~neuromanifold.relu.neurons`, at most :data:`PROOF_REGIONS` regions);
    ``None`` when not proved. A dead neuron's outgoing weights are free however its
    deadness is proved."""
    statuses = proved_statuses(params)
    if statuses is None or statuses[0][layer - 1][neuron] != "dead":
        return None
    return f"inactive on all of R^d, proved by the exact region engine ({statuses[1]})"


def proved_statuses(params: Params, time_limit: float | None = None) -> tuple[tuple, str] | None:
    """``(status, note)`` on R^d from the exact region engine's activation patterns (at
    most :data:`PROOF_REGIONS` regions): per hidden layer, per neuron, ``"dead"`` (inactive
    on every region, so its pre-activation is ``<= 0`` everywhere), ``"linear"`` (active
    on every region) or ``"switching"``; ``None`` past the budget (``time_limit``
    seconds, or more regions expected than it allows). Only the patterns are
    needed, not which kinks are visible (what ``neurons`` adds with the bent hyperplanes,
    which took 80 s at 4-8-6-4-2 where the regions take a few)."""
    from .._regions.regions import estimate_regions, regions  # start-up: on demand

    if estimate_regions(params, num_samples=2000).estimate > PROOF_REGIONS:
        return None  # the enumeration would stop at its budget (or run for hours first)
    try:
        found = regions(params, max_regions=PROOF_REGIONS, time_limit=time_limit)
    except NeuromanifoldError:
        return None
    if not found.regions:
        return None
    status = []
    for l in range(len(found.regions[0].pattern)):
        pats = np.array([r.pattern[l] for r in found.regions], dtype=bool)
        on, off = np.all(pats, axis=0), ~np.any(pats, axis=0)
        status.append(
            tuple("dead" if d else "linear" if a else "switching" for d, a in zip(off, on))
        )
    return tuple(status), f"exact, over {len(found.regions)} linear regions"


def active_neurons(params: Params, layer: int, tol: float) -> list[int]:
    """Neurons of hidden layer ``layer`` active on every input (and not dead), by their
    sign patterns."""
    return sign_kinds(layer_signs(params, layer, tol), layer == 1)[1]


def _contributions(params: Params, layer: int) -> np.ndarray:
    """Per neuron of hidden layer ``layer``: largest outgoing weight times largest entry
    of its incoming row (a scale-invariant size of what it adds to the next layer)."""
    W, b = params[layer - 1]
    rows = np.max(np.abs(np.hstack([W, b[:, None]])), axis=1, initial=0.0)
    cols = np.max(np.abs(params[layer][0]), axis=0, initial=0.0)
    with np.errstate(over="ignore"):
        return rows * cols


def silent_neurons(params: Params, layer: int, tol: float) -> list[int]:
    """Neurons of hidden layer ``layer`` with zero outgoing weights (at ``tol``, relative
    to the layer's largest contribution) whose incoming row is not zero."""
    c = _contributions(params, layer)
    top = float(np.max(c, initial=0.0))
    W, b = params[layer - 1]
    nonzero = np.any(np.hstack([W, b[:, None]]) != 0, axis=1)
    cols = np.max(np.abs(params[layer][0]), axis=0, initial=0.0)
    return [j for j in range(len(c)) if nonzero[j] and (cols[j] == 0 or c[j] <= tol * top)]


def _unit_rows(params: Params, layer: int) -> np.ndarray:
    W, b = params[layer - 1]
    R = np.hstack([W, b[:, None]])
    top = np.max(np.abs(R), axis=1, keepdims=True, initial=0.0)
    return R / np.where(top > 0, top, 1.0)


def _ratio(params: Params, layer: int, j: int, k: int) -> float:
    """``lam`` with row ``k`` = ``lam`` row ``j`` (their largest entries' ratio)."""
    W, b = params[layer - 1]
    rj, rk = np.append(W[j], b[j]), np.append(W[k], b[k])
    return float(np.max(np.abs(rk)) / np.max(np.abs(rj)))


def parallel_pairs(params: Params, layer: int, tol: float, limit: int = 64) -> list[tuple]:
    """Pairs ``(j, k)``, ``j < k``, of neurons of hidden layer ``layer`` whose nonzero rows
    are positive multiples of each other (unit rows within ``tol``; ``tol = 0``: exactly
    proportional), at most ``limit`` of them."""
    W, b = params[layer - 1]
    U = _unit_rows(params, layer)
    out = []
    for j, k in close_pairs(np.hstack([W, b[:, None]]), tol):
        if _is_parallel(params, layer, j, k, tol, U):
            out.append((j, k))
            if len(out) >= limit:
                break
    return sorted(out)


def parallel_classes(params: Params, layer: int, tol: float, skip=()) -> list[tuple]:
    """Pairs ``(j0, k)``: every neuron ``k`` of hidden layer ``layer`` whose row is a
    positive multiple (at ``tol``, :func:`parallel_pairs`) of an earlier one's, paired with
    the first neuron ``j0`` of its class; the neurons ``skip`` take no part."""
    skip = set(skip)
    first: dict = {}
    out = []
    for j, k in parallel_pairs(params, layer, tol, limit=params[layer - 1][0].shape[0] ** 2):
        if j in skip or k in skip or k in first:
            continue
        first[k] = first.setdefault(j, j)
        out.append((first[j], k))
    return out


def _is_parallel(
    params: Params, layer: int, j: int, k: int, tol: float, U: np.ndarray | None = None
) -> bool:
    """Whether rows ``j`` and ``k`` of hidden layer ``layer`` are positive multiples (unit
    rows ``U``, computed when not given, within ``tol``; exactly for ``tol = 0``)."""
    if tol > 0:
        U = _unit_rows(params, layer) if U is None else U
        return bool(np.max(np.abs(U[j] - U[k])) <= tol)
    W, b = params[layer - 1]
    lam = exact_multiple(np.append(W[j], b[j]), np.append(W[k], b[k]))
    return lam is not None and lam > 0


@dataclasses.dataclass(frozen=True, repr=False)
class WindowSymmetry(Symmetry):
    """A three-layer symmetry applied to layers ``start, start+1, start+2`` (1-based, as
    ``W_l``) of a network of any depth: ``symmetry`` acts on those three layers as a
    three-layer network whose input is the output of the layers before.

    >>> P = [(np.eye(2), np.zeros(2)), (np.eye(2), np.zeros(2)),
    ...      (np.array([[1.0, -1.0]]), np.array([-0.5])), (np.ones((1, 1)), np.zeros(1))]
    >>> from neuromanifold.relu.symmetries import HidingTranslation
    >>> WindowSymmetry(2, HidingTranslation(0, 1.0)).apply(P)[2][1]
    array([-1.5])
    """

    start: int
    symmetry: Any  # a three-layer Symmetry (Any: from_dict finds its class by its fields)
    _name = "window"

    def __post_init__(self):
        object.__setattr__(self, "start", _hidden(self.start))
        if not isinstance(self.symmetry, Symmetry):
            raise InputError(f"symmetry must be a Symmetry; got {short_repr(self.symmetry)}")

    def _window(self, params: Params) -> Params:
        return params[self.start - 1 : self.start + 2]

    def _check(self, params, tol):
        L = len(params)
        if not 1 <= self.start <= L - 2:
            return (
                False,
                (
                    f"start must be 1..{L - 2} (three layers from there) in this "
                    f"{L}-layer network; got {self.start}"
                ),
                None,
            )
        res = self.symmetry.applies(self._window(params), tol=tol)
        return (
            res.applies,
            f"on layers {self.start}-{self.start + 2}: {res.reason}",
            res.valid_set,
        )

    def _transform(self, params, tol):
        s = self.start - 1
        params[s : s + 3] = self.symmetry.apply(self._window(params), tol=tol)
        return params

    def inverse(self, params) -> "WindowSymmetry":
        """The WindowSymmetry taking ``self.apply(params)`` back to ``params``."""
        params = self._prepare(params)
        return WindowSymmetry(self.start, self.symmetry.inverse(self._window(params)))


@dataclasses.dataclass(frozen=True, repr=False)
class DeadNeuronOutgoing(Symmetry):
    """New outgoing weights ``outgoing`` (column ``neuron`` of ``W_{layer+1}``) for a
    neuron dead on every input (module docs)."""

    layer: int
    neuron: int
    outgoing: tuple[float, ...]
    _name = "dead_neuron_outgoing"

    def __post_init__(self):
        object.__setattr__(self, "layer", _hidden(self.layer))
        object.__setattr__(self, "neuron", int(check_nonnegative_int(self.neuron, "neuron")))
        object.__setattr__(self, "outgoing", _floats(self.outgoing, "outgoing"))

    def _check(self, params, tol):
        bad = _where(params, self.layer, self.neuron)
        if bad:
            return False, bad, None
        n = params[self.layer][0].shape[0]
        if len(self.outgoing) != n:
            return False, f"outgoing must have {n} entries; got {len(self.outgoing)}", None
        if self.neuron in dead_neurons(params, self.layer, tol):
            return (
                True,
                (f"neuron {self.neuron} of hidden layer {self.layer} is dead on every input"),
                None,
            )
        proof = dead_on_image(params, self.layer, self.neuron)
        if proof is None:
            return (
                False,
                (
                    f"neuron {self.neuron} of hidden layer {self.layer} is not dead "
                    f"on every input by its sign pattern, nor by the exact region "
                    f"engine (within {PROOF_REGIONS:,} regions)"
                ),
                None,
            )
        return (
            True,
            (f"neuron {self.neuron} of hidden layer {self.layer} is dead on every input: {proof}"),
            None,
        )

    def _transform(self, params, tol):
        params[self.layer][0][:, self.neuron] = self.outgoing
        return params

    def inverse(self, params) -> "DeadNeuronOutgoing":
        """The move taking ``self.apply(params)`` back to ``params``."""
        params = self._prepare(params)
        return DeadNeuronOutgoing(
            self.layer, self.neuron, tuple(params[self.layer][0][:, self.neuron])
        )


@dataclasses.dataclass(frozen=True, repr=False)
class SilentNeuronIncoming(Symmetry):
    """A new incoming row ``row`` (``W_l[neuron]`` then ``b_l[neuron]``) for a neuron whose
    outgoing weights are zero (module docs)."""

    layer: int
    neuron: int
    row: tuple[float, ...]
    _name = "silent_neuron_incoming"

    def __post_init__(self):
        object.__setattr__(self, "layer", _hidden(self.layer))
        object.__setattr__(self, "neuron", int(check_nonnegative_int(self.neuron, "neuron")))
        object.__setattr__(self, "row", _floats(self.row, "row"))

    def _check(self, params, tol):
        bad = _where(params, self.layer, self.neuron)
        if bad:
            return False, bad, None
        W, _ = params[self.layer - 1]
        if len(self.row) != W.shape[1] + 1:
            return (
                False,
                (
                    f"row must have {W.shape[1] + 1} entries (weights, then the "
                    f"bias); got {len(self.row)}"
                ),
                None,
            )
        col = params[self.layer][0][:, self.neuron]
        if np.any(col != 0):
            # at tol > 0 the column must be negligible after the move as well
            moved = self._transform([(W.copy(), b.copy()) for W, b in params], tol)
            if (
                tol == 0
                or self.neuron not in silent_neurons(moved, self.layer, tol)
                or self.neuron not in silent_neurons(params, self.layer, tol)
            ):
                return (
                    False,
                    (
                        f"neuron {self.neuron} of hidden layer {self.layer} has "
                        f"nonzero outgoing weights"
                    ),
                    None,
                )
        return (
            True,
            (f"neuron {self.neuron} of hidden layer {self.layer} has zero outgoing weights"),
            None,
        )

    def _transform(self, params, tol):
        W, b = params[self.layer - 1]
        W[self.neuron] = self.row[:-1]
        b[self.neuron] = self.row[-1]
        return params

    def inverse(self, params) -> "SilentNeuronIncoming":
        """The move taking ``self.apply(params)`` back to ``params``."""
        params = self._prepare(params)
        W, b = params[self.layer - 1]
        return SilentNeuronIncoming(
            self.layer, self.neuron, tuple(W[self.neuron]) + (float(b[self.neuron]),)
        )


@dataclasses.dataclass(frozen=True, repr=False)
class ActiveBiasShift(Symmetry):
    """``b_l[neuron] += shift``, ``b_{l+1} -= shift * W_{l+1}[:, neuron]`` for a neuron
    active on every input before and after (module docs)."""

    layer: int
    neuron: int
    shift: float
    _name = "active_bias_shift"

    def __post_init__(self):
        object.__setattr__(self, "layer", _hidden(self.layer))
        object.__setattr__(self, "neuron", int(check_nonnegative_int(self.neuron, "neuron")))
        object.__setattr__(self, "shift", _number(self.shift, "shift"))

    def _check(self, params, tol):
        bad = _where(params, self.layer, self.neuron)
        if bad:
            return False, bad, None
        for when, p in (
            ("", params),
            (" after the shift", self._transform([(W.copy(), b.copy()) for W, b in params], tol)),
        ):
            # z >= 0 on every input, a zero row included (relu(0 + t) = t for t >= 0): a
            # constant neuron shifted to bias 0, and back
            S = layer_signs(p, self.layer, tol)[self.neuron]
            if not (np.all(S >= 0) if self.layer > 1 else not np.any(S[:-1]) and S[-1] >= 0):
                # or z >= 0 proved by the exact region engine, and a shift t >= 0 keeps it
                proved = proved_statuses(params) if self.shift >= 0 else None
                if proved is not None and proved[0][self.layer - 1][self.neuron] == "linear":
                    return (
                        True,
                        (
                            f"neuron {self.neuron} of hidden layer {self.layer} is "
                            f"active on every input of R^d, proved by the exact "
                            f"region engine ({proved[1]}), and the shift is >= 0"
                        ),
                        None,
                    )
                return (
                    False,
                    (
                        f"neuron {self.neuron} of hidden layer {self.layer} is not "
                        f"active on every input{when} by its sign pattern"
                    ),
                    None,
                )
        return (
            True,
            (
                f"neuron {self.neuron} of hidden layer {self.layer} is active on every "
                f"input before and after"
            ),
            None,
        )

    def _transform(self, params, tol):
        W, b = params[self.layer - 1]
        b[self.neuron] += self.shift
        Wn, bn = params[self.layer]
        bn -= self.shift * Wn[:, self.neuron]
        return params

    def inverse(self, params=None) -> "ActiveBiasShift":
        """The shift taking ``self.apply(params)`` back to ``params``."""
        return ActiveBiasShift(self.layer, self.neuron, -self.shift)


@dataclasses.dataclass(frozen=True, repr=False)
class ParallelNeuronSplit(Symmetry):
    """For neurons ``(j, k) = neurons`` of hidden layer ``layer`` with row ``k`` = ``lam``
    times row ``j`` (``lam > 0``): their outgoing columns move, ``c_j -> c_j + lam s``,
    ``c_k -> c_k - s`` with ``s = amount`` (one entry per neuron of the next layer)."""

    layer: int
    neurons: tuple[int, int]
    amount: tuple[float, ...]
    _name = "parallel_neuron_split"

    def __post_init__(self):
        object.__setattr__(self, "layer", _hidden(self.layer))
        arr = as_finite_array(self.neurons, "neurons", error=InputError)
        if arr.shape != (2,) or np.any(arr != np.round(arr)) or np.any(arr < 0):
            raise InputError(f"neurons must be two neuron indices; got {short_repr(self.neurons)}")
        pair = (int(arr[0]), int(arr[1]))
        if pair[0] == pair[1]:
            raise InputError(
                f"neurons must be two different neurons; got {short_repr(self.neurons)}"
            )
        object.__setattr__(self, "neurons", pair)
        object.__setattr__(self, "amount", _floats(self.amount, "amount"))

    def _check(self, params, tol):
        j, k = self.neurons
        bad = _where(params, self.layer, j) or _where(params, self.layer, k)
        if bad:
            return False, bad, None
        n = params[self.layer][0].shape[0]
        if len(self.amount) != n:
            return False, f"amount must have {n} entries; got {len(self.amount)}", None
        W, b = params[self.layer - 1]
        if not (np.any(W[j] != 0) or b[j] != 0) or not _is_parallel(params, self.layer, j, k, tol):
            return (
                False,
                (
                    f"rows {j} and {k} of hidden layer {self.layer} are not positive "
                    f"multiples of each other"
                ),
                None,
            )
        return (
            True,
            (
                f"row {k} of hidden layer {self.layer} is "
                f"{_ratio(params, self.layer, j, k):.6g} times row {j}"
            ),
            None,
        )

    def _transform(self, params, tol):
        j, k = self.neurons
        lam = _ratio(params, self.layer, j, k)
        Wn = params[self.layer][0]
        s = np.array(self.amount)
        Wn[:, j] += lam * s
        Wn[:, k] -= s
        return params

    def inverse(self, params=None) -> "ParallelNeuronSplit":
        """The split taking ``self.apply(params)`` back to ``params``."""
        return ParallelNeuronSplit(self.layer, self.neurons, tuple(-v for v in self.amount))


def snapped(params: Params, move: Symmetry, tol: float) -> Params | None:
    """``params`` with the entries that ``move``'s decisions at ``tol`` neglect set to
    exactly what they were read as (zeros; a parallel row made the exact multiple), so
    that the move can be checked at ``tol = 0``; ``None`` for a move with no such
    reading (its decisions compare ratios, say)."""
    P = [(W.copy(), b.copy()) for W, b in params]
    if isinstance(move, (DeadNeuronOutgoing, ActiveBiasShift)):
        l, j = move.layer, move.neuron
        if _where(P, l, j):
            return None
        zero = layer_signs(params, l, tol)[j] == 0
        W, b = P[l - 1]
        W[j, zero[:-1]] = 0.0
        if zero[-1]:
            b[j] = 0.0
    elif isinstance(move, SilentNeuronIncoming):
        if _where(P, move.layer, move.neuron):
            return None
        P[move.layer][0][:, move.neuron] = 0.0
    elif isinstance(move, ParallelNeuronSplit):
        (j, k), l = move.neurons, move.layer
        if _where(P, l, j) or _where(P, l, k):
            return None
        W, b = P[l - 1]
        lam = _ratio(params, l, j, k)
        W[k], b[k] = lam * W[j], lam * b[j]
        if not _is_parallel(P, l, j, k, 0.0):
            return None
    elif isinstance(move, WindowSymmetry):
        s = move.start
        if not 1 <= s <= len(P) - 2:
            return None
        zero = row_signs(params[s - 1 : s + 2], tol) == 0
        W, b = P[s]
        W[zero[:, :-1]] = 0.0
        b[zero[:, -1]] = 0.0
    else:
        return None
    return P
