"""Symmetries of three-layer ReLU networks as transformations (docs/concepts_relu.md §4).

Each symmetry is a small frozen object. ``applies(params, tol=...)`` says whether and
where it applies (an :class:`Applicability` with the reason and, for translations, the
exact valid interval); ``apply(params, tol=...)`` returns the transformed parameters or
raises :class:`~neuromanifold.SymmetryError` with the reason; ``inverse(params)`` is the
symmetry that undoes it. Definitions, validity sets and proofs are in
``docs/relu_symmetries.md``. Network: ``f(x) = W3 relu(W2 relu(W1 x + b1) + b2) + b3``;
hidden layers are numbered 1 and 2 (like ``W_l``), neurons 0-based; ``(a_j, beta_j)`` is
row ``j`` of ``[W2 | b2]``.

* :class:`Permutation` and :class:`Scaling` of a hidden layer (any depth).
* :class:`DeadNeuronMove`: a second-layer neuron dead on the orthant (row with no positive
  entry) gets any new row with no positive entry and any outgoing weights.
* :class:`LinearBlockMixing`: always-active second-layer neurons (rows with no negative
  entry) are mixed by an invertible matrix, their biases shifted, compensated in ``b3``.
* :class:`HidingTranslation`: ``b1_i -> b1_i + t``, ``b2 -> b2 - t W2[:, i]`` when
  first-layer hyperplane ``i`` is hidden, for ``t`` in a closed interval computed from the
  parameters.
* :class:`Flip`: with every live second-layer row hiding ``i`` (generically: exactly one
  live row), first-layer neurons ``k != i`` flip, ``(w_k, b_k) -> -(w_k, b_k)`` and
  ``(w_i, b_i) -> (w_i, b_i) + (a_k / a_i) (w_k, b_k)``.
* :class:`SecondLayerFlip`: crossing second-layer neurons turn around,
  ``c relu(y) = c relu(-y) + c y``, their linear parts absorbed by the always-active block
  (a new nonnegative factorization of its linear map).
* :class:`BlockRefactor`: dead and always-active second-layer neurons get new rows, each
  dead or always active, whose always-active part carries the same affine map (the block
  can grow or shrink through zero rows).
* :class:`RampFlip`: ``n1 = 1`` and every live row a ramp (``a < 0 < beta``): the
  first-layer neuron turns around, ``u -> C - u`` at the largest breakpoint ``C``.

The tolerance ``tol`` only enters the sign decisions on rows of ``[W2 | b2]`` (see
:mod:`neuromanifold.relu._symmetries.shape`) and the comparisons of ratios and breakpoints;
``tol = 0`` decides on the exact floats.

>>> P = [(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0])),
...      (np.array([[1.0]]), np.array([0.0]))]
>>> HidingTranslation(0, 0.0).applies(P).valid_set
(-1.0, inf)
>>> apply_sequence([HidingTranslation(0, 2.0), Scaling(2, (0.5,))], P)[1]
(array([[0.5]]), array([-1.5]))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._errors import InputError, SymmetryError, short_repr
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_finite_array, as_seed_rng, check_finite_result, check_nonnegative_int
from .._bounds.parameters import SYMMETRY_ROUNDING, path_norm_scale
from .._core.net import check_params
from .shape import hides, live_rows, row_signs, three_layer

__all__ = [
    "Applicability",
    "Symmetry",
    "Permutation",
    "Scaling",
    "DeadNeuronMove",
    "LinearBlockMixing",
    "HidingTranslation",
    "Flip",
    "RampFlip",
    "SecondLayerFlip",
    "BlockRefactor",
    "apply_sequence",
    "random_orbit_point",
    "ORBIT_MOVES",
]

Params = list[tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True, repr=False)
class Applicability(Result):
    """Whether a symmetry applies to given parameters, and why.

    Attributes:
        symmetry: the symmetry's name.
        applies: whether it applies.
        reason: why (or why not), in words.
        valid_set: where the symmetry's continuous parameter may range at these parameters:
            ``(lo, hi)`` (closed, ``-inf``/``inf`` allowed) for a hiding translation's ``t``;
            ``None`` for symmetries without one or when the symmetry does not apply.
        tol: the relative tolerance used for the sign decisions.
    """

    symmetry: str
    applies: bool
    reason: str
    valid_set: Any
    tol: float

    def __bool__(self) -> bool:
        return self.applies


def _copy(params: Params) -> Params:
    return [(W.copy(), b.copy()) for W, b in params]


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    if type(value) is tuple and all(type(v) is int for v in value):
        return value  # already what is stored (the common case: built by this package)
    arr = as_finite_array(value, what, error=InputError)
    if arr.ndim != 1 or np.any(arr != np.round(arr)) or np.any(np.abs(arr) > 2**53):
        raise InputError(f"{what} must be a sequence of integers; got {short_repr(value)}")
    return tuple(int(v) for v in arr)


def _float_tuple(value: Any, what: str) -> tuple[float, ...]:
    if type(value) is tuple and all(type(v) is float and math.isfinite(v) for v in value):
        return value
    return tuple(float(v) for v in as_finite_array(value, what, error=InputError).ravel())


def _index(value: Any, what: str) -> int:
    """A neuron or layer index: a nonnegative int (not a bool, float or string)."""
    return int(check_nonnegative_int(value, what))


def _finite_matrix(value: Any, what: str) -> np.ndarray:
    return np.array(as_finite_array(value, what, error=InputError), dtype=float)


class Symmetry(Result):
    """Base of the symmetry transformations: ``name``, ``applies``, ``apply``, ``inverse``."""

    _name = "symmetry"

    @property
    def name(self) -> str:
        """The symmetry's name (``"permutation"``, ``"scaling"``, ...)."""
        return self._name

    def _check(self, params: Params, tol: float) -> tuple[bool, str, Any]:
        raise NotImplementedError

    def _transform(self, params: Params, tol: float) -> Params:
        raise NotImplementedError

    def _prepare(self, params: Any) -> Params:
        return check_params(params)

    def applies(self, params: Any, *, tol: float = DEFAULT_TOL) -> Applicability:
        """Whether this symmetry applies to ``params`` (list of ``(W, b)``).

        Args:
            params: the network's parameters.
            tol: relative tolerance of the sign decisions (``0`` exact).

        Returns:
            An :class:`Applicability` (truthy iff it applies) with the reason and, for a
            hiding translation, the valid interval of ``t``.
        """
        tol = check_tol(tol)
        params = self._prepare(params)
        ok, reason, valid = self._check(params, tol)
        return Applicability(self.name, ok, reason, valid, tol)

    def apply(self, params: Any, *, tol: float = DEFAULT_TOL) -> Params:
        """The transformed parameters (new float64 arrays; ``params`` is not modified).

        Raises:
            SymmetryError: when the symmetry does not apply, with the reason.
        """
        tol = check_tol(tol)
        params = self._prepare(params)
        ok, reason, _ = self._check(params, tol)
        if not ok:
            raise SymmetryError(f"{self!r} does not apply: {reason}")
        return check_finite_result(
            self._transform(_copy(params), tol), f"the parameters transformed by {self!r}"
        )

    def inverse(self, params: Any) -> "Symmetry":
        """The symmetry taking ``self.apply(params)`` back to ``params``."""
        raise NotImplementedError


def _check_layer(
    layer: Any, params: Params, per_neuron: tuple | None = None, name: str = ""
) -> str | None:
    """Why ``layer`` is not a hidden layer of ``params`` (or why ``per_neuron``, one value
    per neuron of it, has the wrong length), or ``None``."""
    if not 1 <= layer <= len(params) - 1:
        return (
            f"layer must be a hidden layer 1..{len(params) - 1} of this "
            f"{len(params)}-layer network; got {layer}"
        )
    n = params[layer - 1][0].shape[0]
    if per_neuron is not None and len(per_neuron) != n:
        return f"hidden layer {layer} has {n} neurons, {name} has {len(per_neuron)}"
    return None


@dataclasses.dataclass(frozen=True, repr=False)
class Permutation(Symmetry):
    """Permutation of hidden layer ``layer``: new neuron ``j`` is old neuron ``perm[j]``.

    ``W_l -> W_l[perm]``, ``b_l -> b_l[perm]``, ``W_{l+1} -> W_{l+1}[:, perm]``. Applies
    to every network whose hidden layer ``layer`` has ``len(perm)`` neurons.

    >>> P = [(np.array([[1.0], [2.0]]), np.zeros(2)), (np.array([[3.0, 4.0]]), np.zeros(1))]
    >>> Permutation(1, (1, 0)).apply(P)[1][0]
    array([[4., 3.]])
    """

    layer: int
    perm: tuple[int, ...]
    _name = "permutation"

    def __post_init__(self):
        object.__setattr__(self, "layer", _index(self.layer, "layer"))
        perm = _int_tuple(self.perm, "perm")
        if sorted(perm) != list(range(len(perm))):
            raise InputError(f"perm must be a permutation of 0..n-1; got {short_repr(self.perm)}")
        object.__setattr__(self, "perm", perm)

    def _check(self, params, tol):
        bad = _check_layer(self.layer, params, self.perm, "perm")
        if bad:
            return False, bad, None
        return True, "a permutation of hidden neurons always applies", None

    def _transform(self, params, tol):
        l, p = self.layer - 1, list(self.perm)
        W, b = params[l]
        params[l] = (W[p], b[p])
        Wn, bn = params[l + 1]
        params[l + 1] = (Wn[:, p], bn)
        return params

    def inverse(self, params=None) -> "Permutation":
        """The Permutation taking ``self.apply(params)`` back to ``params`` (``params``
        is not needed)."""
        return Permutation(self.layer, tuple(int(v) for v in np.argsort(self.perm)))


@dataclasses.dataclass(frozen=True, repr=False)
class Scaling(Symmetry):
    """Positive rescaling of hidden layer ``layer``: neuron ``j``'s incoming weights and
    bias are multiplied by ``scales[j] > 0`` and its outgoing weights divided by it."""

    layer: int
    scales: tuple[float, ...]
    _name = "scaling"

    def __post_init__(self):
        object.__setattr__(self, "layer", _index(self.layer, "layer"))
        s = _float_tuple(self.scales, "scales")
        if any(v <= 0 for v in s):
            raise InputError(f"scales must be positive; got {short_repr(self.scales)}")
        object.__setattr__(self, "scales", s)

    def _check(self, params, tol):
        bad = _check_layer(self.layer, params, self.scales, "scales")
        if bad:
            return False, bad, None
        return True, "a positive rescaling of hidden neurons always applies", None

    def _transform(self, params, tol):
        l, s = self.layer - 1, np.array(self.scales)
        W, b = params[l]
        params[l] = (W * s[:, None], b * s)
        Wn, bn = params[l + 1]
        params[l + 1] = (Wn / s[None, :], bn)
        return params

    def inverse(self, params=None) -> "Scaling":
        """The Scaling taking ``self.apply(params)`` back to ``params`` (``params``
        is not needed)."""
        return Scaling(self.layer, tuple(1.0 / v for v in self.scales))


class _ThreeLayer(Symmetry):
    def _prepare(self, params):
        return three_layer(params, f"the {self._name} symmetry")


@dataclasses.dataclass(frozen=True, repr=False)
class DeadNeuronMove(_ThreeLayer):
    """Replace a dead second-layer neuron's row and outgoing weights.

    Applies when row ``neuron`` of ``[W2 | b2]`` has no positive entry (the neuron is 0 on
    the orthant, hence on the image of the first layer) and the new ``row`` (length
    ``n1 + 1``, bias last) has none either; ``outgoing`` (length ``n3``) is the new column
    ``neuron`` of ``W3``.
    """

    neuron: int
    row: tuple[float, ...]
    outgoing: tuple[float, ...]
    _name = "dead_neuron_move"

    def __post_init__(self):
        object.__setattr__(self, "neuron", _index(self.neuron, "neuron"))
        object.__setattr__(self, "row", _float_tuple(self.row, "row"))
        object.__setattr__(self, "outgoing", _float_tuple(self.outgoing, "outgoing"))

    def _check(self, params, tol):
        (W1, _), (W2, _), (W3, _) = params
        n1, n2, n3 = W1.shape[0], W2.shape[0], W3.shape[0]
        j = self.neuron
        if not 0 <= j < n2:
            return False, f"neuron must be a second-layer neuron 0..{n2 - 1}; got {j}", None
        if len(self.row) != n1 + 1 or len(self.outgoing) != n3:
            return (
                False,
                (
                    f"row must have n1 + 1 = {n1 + 1} entries and outgoing n3 = {n3}; "
                    f"got {len(self.row)} and {len(self.outgoing)}"
                ),
                None,
            )
        s = row_signs(params, tol)[j]
        if np.any(s > 0):
            return (
                False,
                (
                    f"second-layer neuron {j} is not dead on the orthant: its row of "
                    f"[W2 | b2] has positive entries at {np.flatnonzero(s > 0).tolist()}"
                ),
                None,
            )
        new = self._transform(_copy(params), tol)
        if np.any(row_signs(new, tol)[j] > 0):
            return False, f"the new row {short_repr(self.row)} has a positive entry", None
        return True, f"second-layer neuron {j} is dead on the orthant before and after", None

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        j = self.neuron
        W2[j] = self.row[:-1]
        b2[j] = self.row[-1]
        W3[:, j] = self.outgoing
        return params

    def inverse(self, params) -> "DeadNeuronMove":
        """The DeadNeuronMove taking ``self.apply(params)`` back to ``params``."""
        params = self._prepare(params)
        (_, _), (W2, b2), (W3, _) = params
        j = self.neuron
        return DeadNeuronMove(j, tuple(W2[j]) + (float(b2[j]),), tuple(W3[:, j]))


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class LinearBlockMixing(_ThreeLayer):
    """Mix always-active second-layer neurons by an invertible matrix, with a bias shift.

    With ``J = neurons`` (rows of ``[W2 | b2]`` with no negative entry, so the ReLU is the
    identity on the orthant), ``M = matrix`` (``|J| x |J|``, invertible) and ``s = shift``:
    ``[W2 | b2][J] -> M [W2 | b2][J] + [0 | s]``, ``W3[:, J] -> W3[:, J] M^{-1}``,
    ``b3 -> b3 - W3[:, J] M^{-1} s``. Applies when the new rows have no negative entry.
    """

    neurons: tuple[int, ...]
    matrix: np.ndarray
    shift: tuple[float, ...]
    _name = "linear_block_mixing"

    def __post_init__(self):
        J = _int_tuple(self.neurons, "neurons")
        if len(set(J)) != len(J) or not J:
            raise InputError(
                f"neurons must be distinct and non-empty; got {short_repr(self.neurons)}"
            )
        M = _finite_matrix(self.matrix, "matrix")
        if M.shape != (len(J), len(J)) or not np.all(np.isfinite(M)):
            raise InputError(
                f"matrix must be a finite {len(J)}x{len(J)} array; got {short_repr(self.matrix)}"
            )
        if np.linalg.matrix_rank(M) < len(J):
            raise InputError(f"matrix must be invertible; got {short_repr(M)}")
        M.setflags(write=False)
        s = _float_tuple(self.shift, "shift")
        if len(s) != len(J):
            raise InputError(f"shift must have {len(J)} entries; got {short_repr(self.shift)}")
        object.__setattr__(self, "neurons", J)
        object.__setattr__(self, "matrix", M)
        object.__setattr__(self, "shift", s)

    def _check(self, params, tol):
        n2 = params[1][0].shape[0]
        if not all(0 <= j < n2 for j in self.neurons):
            return (
                False,
                f"neurons must be second-layer neurons 0..{n2 - 1}; got {self.neurons}",
                None,
            )
        S = row_signs(params, tol)
        bad = [j for j in self.neurons if np.any(S[j] < 0)]
        if bad:
            return (
                False,
                (
                    f"second-layer neuron(s) {bad} are not always active on the orthant "
                    f"(their rows of [W2 | b2] have negative entries)"
                ),
                None,
            )
        new = self._transform(_copy(params), tol)
        S2 = row_signs(new, tol)
        bad = [j for j in self.neurons if np.any(S2[j] < 0)]
        if bad:
            return False, f"the mixed rows {bad} would have negative entries", None
        return (
            True,
            f"second-layer neurons {list(self.neurons)} are always active before and after",
            None,
        )

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        J = list(self.neurons)
        M, s = self.matrix, np.array(self.shift)
        rows = np.hstack([W2[J], b2[J, None]])
        new = M @ rows
        new[:, -1] += s
        W3J = np.linalg.solve(M.T, W3[:, J].T).T  # W3[:, J] M^{-1}
        W2[J], b2[J] = new[:, :-1], new[:, -1]
        b3 = b3 - W3J @ s
        W3[:, J] = W3J
        return [(W1, b1), (W2, b2), (W3, b3)]

    def inverse(self, params=None) -> "LinearBlockMixing":
        """The LinearBlockMixing taking ``self.apply(params)`` back to ``params`` (``params``
        is not needed)."""
        Minv = np.linalg.inv(self.matrix)
        return LinearBlockMixing(self.neurons, Minv, tuple(-(Minv @ np.array(self.shift))))


def translation_interval(params: Params, i: int, signs: np.ndarray) -> tuple[float, float]:
    """Closed interval of ``t`` keeping ``b2_j - t W2[j, i] <= 0`` on every row whose
    column-``i`` sign is nonzero (always containing 0)."""
    W2, b2 = params[1]
    lo, hi = -math.inf, math.inf
    for j in range(W2.shape[0]):
        if signs[j, i] > 0:
            lo = max(lo, b2[j] / W2[j, i])
        elif signs[j, i] < 0:
            hi = min(hi, b2[j] / W2[j, i])
    return (float(min(lo, 0.0)), float(max(hi, 0.0)))


@dataclasses.dataclass(frozen=True, repr=False)
class HidingTranslation(_ThreeLayer):
    """Translate a hidden first-layer hyperplane: ``b1_i -> b1_i + t``,
    ``b2 -> b2 - t W2[:, i]``.

    Applies when first-layer hyperplane ``neuron`` is hidden (every row of ``[W2 | b2]``
    has a nonpositive bias and nonpositive weights outside column ``i``) and ``t`` lies in
    the closed interval ``valid_set = [max_{a_ji > 0} b2_j / a_ji, min_{a_ji < 0} b2_j / a_ji]``,
    i.e. every row still has a nonpositive bias after the move (the live rows bound ``t``
    from below, dead rows with ``a_ji < 0`` from above).
    """

    neuron: int
    t: float
    _name = "hiding_translation"

    def __post_init__(self):
        object.__setattr__(self, "neuron", _index(self.neuron, "neuron"))
        t = float(as_finite_array(self.t, "t", ndim=0, error=InputError))
        object.__setattr__(self, "t", t)

    def _check(self, params, tol):
        n1 = params[0][0].shape[0]
        i = self.neuron
        if not 0 <= i < n1:
            return False, f"neuron must be a first-layer neuron 0..{n1 - 1}; got {i}", None
        S = row_signs(params, tol)
        if not hides(S, i):
            bad = [j for j in range(S.shape[0]) if np.any(np.delete(S[j], i) > 0)]
            return (
                False,
                (
                    f"first-layer hyperplane {i} is not hidden: second-layer rows {bad} "
                    f"have a positive bias or a positive weight outside column {i}"
                ),
                None,
            )
        valid = translation_interval(params, i, S)
        new = self._transform(_copy(params), tol)
        if not hides(row_signs(new, tol), i):
            return (
                False,
                (
                    f"t = {self.t!r} is outside the valid interval {list(valid)}: "
                    f"a second-layer bias would become positive"
                ),
                valid,
            )
        # the move is exact in real numbers, not in floats: b1_i + t and b2 - t W2[:, i]
        # are rounded, by about 2**-52 of their size, which must stay within tol
        (_, _), (W2, b2), (W3, _) = new
        with np.errstate(over="ignore"):  # an infinite loss is refused below
            lost = (
                2.0**-52
                * (abs(new[0][1][i]) * np.max(np.abs(W2[:, i])) + np.max(np.abs(b2)))
                * np.max(np.abs(W3))
            )
        if lost > max(tol, SYMMETRY_ROUNDING) * max(path_norm_scale(params), 1e-300):
            return (
                False,
                (
                    f"t = {self.t!r} is so large that the translated biases lose the "
                    f"function in float64 rounding (by up to {lost:.3g}, beyond tol "
                    f"{tol:g} of the network's scale)"
                ),
                valid,
            )
        return True, f"first-layer hyperplane {i} is hidden and t lies in {list(valid)}", valid

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        i, t = self.neuron, self.t
        b1[i] += t
        b2 = b2 - t * W2[:, i]
        return [(W1, b1), (W2, b2), (W3, b3)]

    def inverse(self, params=None) -> "HidingTranslation":
        """The HidingTranslation taking ``self.apply(params)`` back to ``params`` (``params``
        is not needed)."""
        return HidingTranslation(self.neuron, -self.t)


def _close(x: float, y: float, tol: float, scale: float) -> bool:
    return abs(x - y) <= tol * scale if tol > 0 else x == y


@dataclasses.dataclass(frozen=True, repr=False)
class Flip(_ThreeLayer):
    """Flip first-layer neurons ``k`` in ``flipped`` around the hidden neuron ``hidden = i``.

    ``(w_k, b_k) -> -(w_k, b_k)`` and ``(w_i, b_i) -> (w_i, b_i) + sum_k (a_k / a_i) (w_k, b_k)``
    (first-layer rows), everything else unchanged. Applies when every live second-layer
    row hides ``i`` (generically: exactly one live row, dead rows allowed) and all live
    rows have the same ratio ``a_jk / a_ji`` for every flipped ``k``. Flips commute and each
    is an involution: a group ``(Z/2)^(n1-1)``.
    """

    hidden: int
    flipped: tuple[int, ...]
    _name = "flip"

    def __post_init__(self):
        object.__setattr__(self, "hidden", _index(self.hidden, "hidden"))
        f = tuple(sorted(_int_tuple(self.flipped, "flipped")))
        if len(set(f)) != len(f):
            raise InputError(f"flipped must be distinct neurons; got {short_repr(self.flipped)}")
        if self.hidden in f:
            raise InputError(
                f"flipped must not contain the hidden neuron {self.hidden}; "
                f"got {short_repr(self.flipped)}"
            )
        object.__setattr__(self, "flipped", f)

    def _check(self, params, tol):
        (W1, b1), (W2, _), _ = params
        n1 = W1.shape[0]
        i = self.hidden
        if not 0 <= i < n1 or not all(0 <= k < n1 for k in self.flipped):
            return (
                False,
                (
                    f"hidden and flipped must be first-layer neurons 0..{n1 - 1}; "
                    f"got {i} and {self.flipped}"
                ),
                None,
            )
        S = row_signs(params, tol)
        if not hides(S, i):
            return False, f"first-layer hyperplane {i} is not hidden by the second layer", None
        live = live_rows(S)
        if not live:
            return False, f"no live second-layer neuron hides first-layer neuron {i}", None
        j0 = live[0]
        norms = np.sqrt(np.sum(W1**2, axis=1) + b1**2)
        for k in self.flipped:
            r0 = W2[j0, k] / W2[j0, i]
            for j in live[1:]:
                r = W2[j, k] / W2[j, i]
                scale = max(norms[i], abs(r0) * norms[k]) / max(norms[k], 1e-300)
                if not _close(r, r0, tol, scale):
                    return (
                        False,
                        (
                            f"live second-layer rows {j0} and {j} hide {i} with different "
                            f"ratios a_k/a_i for k = {k} ({r0:.6g} and {r:.6g})"
                        ),
                        None,
                    )
        what = "the single live" if len(live) == 1 else f"all {len(live)} live"
        return (
            True,
            (
                f"{what} second-layer row(s) {live} hide first-layer neuron {i}, "
                f"so neurons {list(self.flipped)} can flip"
            ),
            None,
        )

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        i = self.hidden
        j0 = live_rows(row_signs(params, tol))[0]
        for k in self.flipped:
            c = W2[j0, k] / W2[j0, i]
            W1[i] = W1[i] + c * W1[k]
            b1[i] = b1[i] + c * b1[k]
            W1[k] = -W1[k]
            b1[k] = -b1[k]
        return [(W1, b1), (W2, b2), (W3, b3)]

    def inverse(self, params=None) -> "Flip":
        """The Flip taking ``self.apply(params)`` back to ``params`` (``params``
        is not needed)."""
        return self


@dataclasses.dataclass(frozen=True, repr=False)
class RampFlip(_ThreeLayer):
    """Turn the single first-layer neuron around (``n1 = 1``) at the last ramp breakpoint.

    A ramp is a row ``(a_j, beta_j)`` of ``[W2 | b2]`` with ``a_j < 0 < beta_j``; as a
    function of ``u = W1 x + b1`` it is ``beta_j`` for ``u <= 0``, falls linearly and is
    ``0`` from its breakpoint ``c_j = beta_j / |a_j|`` on. Row ``neuron`` is a ramp with
    the largest breakpoint ``C``. The move is ``(W1, b1) -> (-W1, C - b1)`` (``v = C - u``);
    every other ramp ``j`` gets the breakpoint ``C - c_j`` (``beta_j -> |a_j| (C - c_j)``,
    weight and outgoing column kept), ramp ``neuron`` keeps its row and gets the outgoing
    column ``-sum_j |a_j| W3[:, j] / |a_neuron|`` over all ramps, and
    ``b3 -> b3 - sum_j W3'[:, j] beta'_j`` over the new ramps. It rests on
    ``relu(a_j relu(u) + beta_j) = |a_j| (relu(v - C + c_j) - relu(v - C))``. Applies when
    ``n1 = 1`` and every live row is a ramp or a constant (``a_j = 0 < beta_j``); then the
    function is constant for ``u <= 0`` and for ``u >= C``. It is an involution; with a
    single ramp it is ``(W1, b1, W3, b3) -> (-W1, c - b1, -W3, b3 + W3 beta)``.
    """

    neuron: int
    _name = "ramp_flip"

    def __post_init__(self):
        object.__setattr__(self, "neuron", _index(self.neuron, "neuron"))

    def _check(self, params, tol):
        (W1, b1), (W2, b2), _ = params
        n1, n2 = W2.shape[1], W2.shape[0]
        if n1 != 1:
            return False, f"a ramp flip needs one first-layer neuron (n1 = 1); got n1 = {n1}", None
        j = self.neuron
        if not 0 <= j < n2:
            return False, f"neuron must be a second-layer neuron 0..{n2 - 1}; got {j}", None
        S = row_signs(params, tol)
        if not (S[j, 0] < 0 < S[j, 1]):
            return (
                False,
                (
                    f"second-layer row {j} is not a ramp (negative weight, positive "
                    f"bias): signs {S[j].tolist()}"
                ),
                None,
            )
        c = b2[j] / -W2[j, 0]
        norm = float(np.sqrt(np.sum(W1**2) + b1[0] ** 2))
        for m in live_rows(S):
            if m == j or S[m, 0] == 0:
                continue
            if S[m, 0] > 0:
                return (
                    False,
                    (
                        f"second-layer row {m} has a positive weight: it is not constant "
                        f"for large first-layer pre-activations"
                    ),
                    None,
                )
            cm = b2[m] / -W2[m, 0]
            if cm > c and not _close(cm, c, tol, max(norm, abs(c))):
                return (
                    False,
                    (
                        f"ramp {m} has a larger breakpoint ({cm:.6g}) than ramp {j} "
                        f"({c:.6g}): flip around the largest one"
                    ),
                    None,
                )
        return (
            True,
            (
                f"every live second-layer row is a ramp or a constant, n1 = 1, and ramp "
                f"{j} has the largest breakpoint {c:.6g}"
            ),
            None,
        )

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        S = row_signs(params, tol)
        j = self.neuron
        C = b2[j] / -W2[j, 0]
        ramps = [m for m in range(W2.shape[0]) if S[m, 0] < 0 < S[m, 1]]
        A = -W2[:, 0]
        total = sum(A[m] * W3[:, m] for m in ramps)
        for m in ramps:
            if m != j:
                b2[m] = A[m] * (C - b2[m] / A[m])
        W3[:, j] = -total / A[j]
        b3 = b3 - sum(W3[:, m] * b2[m] for m in ramps)
        return [(-W1, C - b1), (W2, b2), (W3, b3)]

    def inverse(self, params=None) -> "RampFlip":
        """The RampFlip taking ``self.apply(params)`` back to ``params`` (``params``
        is not needed)."""
        return self


def _basis(M: np.ndarray, tol: float) -> np.ndarray:
    """Orthonormal basis (rows) of the row space of ``M``."""
    if M.size == 0 or not np.any(M):
        return np.zeros((0, M.shape[1]))
    _, sv, Vt = np.linalg.svd(M)
    r = int(np.sum(sv > max(tol, 1e-12) * sv[0]))
    return Vt[:r]


def nonnegative_factor(M: np.ndarray, A: np.ndarray, tol: float) -> np.ndarray | None:
    """``k`` rows ``A' >= 0`` whose row space contains the rows of ``M`` (``k = len(A)``),
    or ``None`` when none is found: the current rows when they already do; else, with
    ``r = rank M``, ``V + lam 1`` and ``lam 1`` when ``k >= r + 1``; else, when
    ``k = r``, ``k`` independent positive vectors of ``rowspace(M)`` (an LP)."""
    k, n1 = A.shape
    V = _basis(M, tol)
    r = V.shape[0]
    if r == 0:
        return A.copy()
    if _basis(np.vstack([A, V]), tol).shape[0] == _basis(A, tol).shape[0]:
        return A.copy()
    if k >= r + 1:
        lam = max(0.0, -float(np.min(V))) + 1.0
        rows = [v + lam for v in V] + [np.full(n1, lam)] * (k - r)
        return np.array(rows)
    if k == r:
        from scipy.optimize import linprog  # start-up: a slow import

        res = linprog(
            np.zeros(r), A_ub=-V.T, b_ub=-np.ones(n1), bounds=[(None, None)] * r, method="highs"
        )
        if res.status != 0:
            return None
        y = res.x
        x0 = V.T @ y
        drop = int(np.argmax(np.abs(y)))
        eps = 0.5 * float(np.min(x0)) / max(float(np.max(np.abs(V))), 1e-300)
        rows = [x0] + [x0 + eps * V[i] for i in range(r) if i != drop]
        return np.array(rows)
    return None


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class SecondLayerFlip(_ThreeLayer):
    """Turn crossing second-layer neurons around; the always-active block absorbs their
    linear parts.

    For a crossing neuron ``j`` (a live row with a negative entry) with outgoing column
    ``c_j`` and ``y_j = <a_j, z> + beta_j``: ``c_j relu(y_j) = c_j relu(-y_j) + c_j y_j``. The
    rows ``neurons`` are negated; the always-active neurons ``linear`` (rows with no negative
    entry) get the new rows ``rows`` (``k x (n1 + 1)``, no negative entry, bias last) and
    the new outgoing columns ``outgoing`` (``n3 x k``), which must factor the new linear part:
    ``outgoing @ rows[:, :-1] = W3[:, J] W2[J] + sum_j c_j a_j^T``; the constants go to
    ``b3 -> b3 + sum_j c_j beta_j + W3[:, J] b2[J] - outgoing @ rows[:, -1]``. Use
    :meth:`construct` to find ``rows`` and ``outgoing``; :meth:`inverse` restores the old
    block exactly. This symmetry was found by the equivalence search
    (docs/relu_equivalence.md): it exists on an open set of parameters (e.g. ``>= n1``
    always-active neurons of full column rank).
    """

    neurons: tuple[int, ...]
    linear: tuple[int, ...]
    rows: tuple
    outgoing: tuple
    _name = "second_layer_flip"

    def __post_init__(self):
        Jf = _int_tuple(self.neurons, "neurons")
        J = _int_tuple(self.linear, "linear")
        if not Jf or len(set(Jf)) != len(Jf) or len(set(J)) != len(J) or set(Jf) & set(J):
            raise InputError(
                f"neurons must be distinct, non-empty and disjoint from linear; "
                f"got {short_repr(self.neurons)} and {short_repr(self.linear)}"
            )
        R, C = _finite_matrix(self.rows, "rows"), _finite_matrix(self.outgoing, "outgoing")
        if (R.size % len(J) or C.size % len(J)) if J else R.size:
            raise InputError(
                f"rows and outgoing must have one row/column per linear neuron "
                f"{J}; got {short_repr(self.rows)} and {short_repr(self.outgoing)}"
            )
        R = R.reshape(len(J), -1)
        C = C.reshape(-1, len(J)) if J else np.zeros((C.size, 0))
        object.__setattr__(self, "neurons", Jf)
        object.__setattr__(self, "linear", J)
        object.__setattr__(self, "rows", tuple(tuple(float(v) for v in r) for r in R))
        object.__setattr__(self, "outgoing", tuple(tuple(float(v) for v in r) for r in C))

    @classmethod
    def construct(
        cls,
        params: Any,
        neurons: Sequence[int],
        linear: Sequence[int] | None = None,
        *,
        tol: float = DEFAULT_TOL,
    ) -> "SecondLayerFlip | None":
        """A flip of ``neurons`` with a new factorization of the linear block (the
        always-active neurons ``linear``, by default all of them), or ``None`` when none is
        found (see :func:`nonnegative_factor`: the current rows when they span enough,
        else rows built from the new linear part's row space).

        >>> P = [(np.eye(2), np.zeros(2)),
        ...      (np.array([[1.0, -2.0], [1.0, 0.5], [0.5, 1.0]]), np.array([0.5, 1.0, 2.0])),
        ...      (np.array([[1.5, 1.0, -1.0]]), np.array([0.1]))]
        >>> f = SecondLayerFlip.construct(P, (0,))
        >>> f.linear, bool(f.applies(P))
        ((1, 2), True)
        """
        tol = check_tol(tol)
        params = three_layer(params, "the second_layer_flip symmetry")
        (W1, b1), (W2, b2), (W3, b3) = params
        n2 = W2.shape[0]
        neurons = _int_tuple(neurons, "neurons")
        if linear is not None:
            linear = _int_tuple(linear, "linear")
        if any(not 0 <= j < n2 for j in neurons + (linear or ())):
            raise InputError(
                f"neurons and linear must be second-layer neurons 0..{n2 - 1}; "
                f"got {short_repr(neurons)} and {short_repr(linear)}"
            )
        S = row_signs(params, tol)
        if linear is None:
            linear = [
                j
                for j in range(S.shape[0])
                if not np.any(S[j] < 0) and np.any(S[j] > 0) and j not in neurons
            ]
        J, F = list(linear), list(neurons)
        if not J:
            return None
        M = W3[:, J] @ W2[J] + sum(np.outer(W3[:, j], W2[j]) for j in F)
        A = nonnegative_factor(M, W2[J], tol)
        if A is None:
            return None
        C = M @ np.linalg.pinv(A)
        rows = np.hstack([A, b2[J, None]])
        flip = cls(tuple(F), tuple(J), tuple(map(tuple, rows)), tuple(map(tuple, C)))
        return flip if flip.applies(params, tol=tol).applies else None

    def _check(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        n1, n2, n3 = W1.shape[0], W2.shape[0], W3.shape[0]
        F, J = list(self.neurons), list(self.linear)
        if not all(0 <= j < n2 for j in F + J):
            return False, f"neurons must be second-layer neurons 0..{n2 - 1}", None
        R = np.array(self.rows).reshape(len(J), -1)
        C = np.array(self.outgoing).reshape(n3 if J else 0, -1) if J else np.zeros((n3, 0))
        if R.shape != (len(J), n1 + 1) or C.shape != (n3, len(J)):
            return (
                False,
                (
                    f"rows must be {len(J)} x {n1 + 1} and outgoing {n3} x {len(J)}; "
                    f"got {R.shape} and {C.shape}"
                ),
                None,
            )
        S = row_signs(params, tol)
        bad = [j for j in F if not (np.any(S[j] > 0) and np.any(S[j] < 0))]
        if bad:
            return (
                False,
                (f"second-layer neurons {bad} are not crossing (a live row with a negative entry)"),
                None,
            )
        bad = [j for j in J if np.any(S[j] < 0)]
        if bad:
            return False, f"second-layer neurons {bad} are not always active", None
        new = self._transform(_copy(params), tol)
        S2 = row_signs(new, tol)
        bad = [j for j in J if np.any(S2[j] < 0)]
        if bad:
            return False, f"the new rows of neurons {bad} have negative entries", None
        norms = np.sqrt(np.sum(W1**2, axis=1) + b1**2)
        target = (W3[:, J] @ W2[J] + sum(np.outer(W3[:, j], W2[j]) for j in F)) * norms
        got = (C @ R[:, :-1]) * norms
        # the scale of the terms (their sum may cancel to rounding level)
        terms = (
            np.abs(W3[:, J]) @ np.abs(W2[J])
            + sum((np.abs(np.outer(W3[:, j], W2[j])) for j in F), 0.0)
        ) * norms
        scale = max(
            float(np.max(terms, initial=0.0)),
            float(np.max(np.abs(C) @ np.abs(R[:, :-1] * norms), initial=0.0)),
        )
        err = float(np.max(np.abs(got - target)))
        if err > tol * scale:
            return (
                False,
                (
                    f"outgoing @ rows does not factor the new linear part of the block "
                    f"(difference {err:.3g})"
                ),
                None,
            )
        return (
            True,
            (
                f"crossing neurons {F} turn around; always-active neurons {J} absorb "
                f"their linear parts"
            ),
            None,
        )

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        F, J = list(self.neurons), list(self.linear)
        n3 = W3.shape[0]
        R = np.array(self.rows).reshape(len(J), -1)
        C = np.array(self.outgoing).reshape(n3, len(J)) if J else np.zeros((n3, 0))
        b3 = b3 + sum(W3[:, j] * b2[j] for j in F) + W3[:, J] @ b2[J] - C @ R[:, -1]
        for j in F:
            W2[j], b2[j] = -W2[j], -b2[j]
        if J:
            W2[J], b2[J], W3[:, J] = R[:, :-1], R[:, -1], C
        return [(W1, b1), (W2, b2), (W3, b3)]

    def inverse(self, params) -> "SecondLayerFlip":
        """The SecondLayerFlip taking ``self.apply(params)`` back to ``params``."""
        params = self._prepare(params)
        (_, _), (W2, b2), (W3, _) = params
        J = list(self.linear)
        return SecondLayerFlip(
            self.neurons,
            self.linear,
            tuple(map(tuple, np.hstack([W2[J], b2[J, None]]))),
            tuple(map(tuple, W3[:, J])),
        )


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class BlockRefactor(_ThreeLayer):
    """Refactor the always-active block over dead and always-active second-layer neurons.

    Every neuron of ``neurons`` must be dead (no positive entry) or always active (no
    negative entry) on the orthant. Each gets a new row (``rows``, ``n1 + 1`` entries, bias
    last) and outgoing column (``outgoing``, ``n3 x len(neurons)``). Each new row must again
    have no positive entry (dead: it contributes 0) or no negative entry (always active),
    and the new always-active rows must carry the same linear map as the old ones:
    ``sum_new C_j a_j^T = sum_old W3[:, j] W2[j]``; ``b3`` takes the constants
    (``b3 -> b3 + sum_old W3[:, j] b2_j - sum_new C_j beta_j``). It contains the dead-neuron
    moves and the invertible mixings, and lets a dead neuron join the block or an
    always-active one leave it (through its zero row). :meth:`inverse` restores the old
    rows exactly.
    """

    neurons: tuple[int, ...]
    rows: tuple
    outgoing: tuple
    _name = "block_refactor"

    def __post_init__(self):
        J = _int_tuple(self.neurons, "neurons")
        if not J or len(set(J)) != len(J):
            raise InputError(
                f"neurons must be distinct and non-empty; got {short_repr(self.neurons)}"
            )
        R, C = _finite_matrix(self.rows, "rows"), _finite_matrix(self.outgoing, "outgoing")
        if R.size % len(J) or C.size % len(J):
            raise InputError(
                f"rows and outgoing must have one row/column per neuron {J}; "
                f"got {short_repr(self.rows)} and {short_repr(self.outgoing)}"
            )
        R = R.reshape(len(J), -1)
        C = C.reshape(-1, len(J))
        object.__setattr__(self, "neurons", J)
        object.__setattr__(self, "rows", tuple(tuple(float(v) for v in r) for r in R))
        object.__setattr__(self, "outgoing", tuple(tuple(float(v) for v in r) for r in C))

    def _check(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        n1, n2, n3 = W1.shape[0], W2.shape[0], W3.shape[0]
        J = list(self.neurons)
        if not all(0 <= j < n2 for j in J):
            return False, f"neurons must be second-layer neurons 0..{n2 - 1}; got {J}", None
        R = np.array(self.rows).reshape(len(J), -1)
        C = np.array(self.outgoing).reshape(-1, len(J))
        if R.shape != (len(J), n1 + 1) or C.shape != (n3, len(J)):
            return (
                False,
                (
                    f"rows must be {len(J)} x {n1 + 1} and outgoing {n3} x {len(J)}; "
                    f"got {R.shape} and {C.shape}"
                ),
                None,
            )
        S = row_signs(params, tol)
        bad = [j for j in J if np.any(S[j] > 0) and np.any(S[j] < 0)]
        if bad:
            return False, f"second-layer neurons {bad} are neither dead nor always active", None
        new = self._transform(_copy(params), tol)
        S2 = row_signs(new, tol)
        bad = [j for j in J if np.any(S2[j] > 0) and np.any(S2[j] < 0)]
        if bad:
            return False, f"the new rows of neurons {bad} are neither dead nor always active", None
        old_lin = [j for j in J if np.any(S[j] > 0)]
        new_lin = [a for a, j in enumerate(J) if np.any(S2[j] > 0)]
        norms = np.sqrt(np.sum(W1**2, axis=1) + b1**2)
        target = (W3[:, old_lin] @ W2[old_lin]) * norms
        got = (C[:, new_lin] @ R[new_lin, :-1]) * norms
        scale = max(
            float(np.max((np.abs(W3[:, old_lin]) @ np.abs(W2[old_lin])) * norms, initial=0.0)),
            float(np.max(np.abs(C[:, new_lin]) @ np.abs(R[new_lin, :-1] * norms), initial=0.0)),
        )
        err = float(np.max(np.abs(got - target), initial=0.0))
        if err > tol * scale:
            return (
                False,
                (
                    f"the new always-active rows do not carry the block's linear map "
                    f"(difference {err:.3g})"
                ),
                None,
            )
        return (
            True,
            (f"neurons {J} stay dead or always active and the block carries the same linear map"),
            None,
        )

    def _transform(self, params, tol):
        (W1, b1), (W2, b2), (W3, b3) = params
        J = list(self.neurons)
        R = np.array(self.rows).reshape(len(J), -1)
        C = np.array(self.outgoing).reshape(-1, len(J))
        S = row_signs(params, tol)
        old_lin = [j for j in J if np.any(S[j] > 0)]
        b3 = b3 + W3[:, old_lin] @ b2[old_lin]
        W2[J], b2[J], W3[:, J] = R[:, :-1], R[:, -1], C
        S2 = row_signs([(W1, b1), (W2, b2), (W3, b3)], tol)
        new_lin = [j for j in J if np.any(S2[j] > 0)]
        b3 = b3 - W3[:, new_lin] @ b2[new_lin]
        return [(W1, b1), (W2, b2), (W3, b3)]

    def inverse(self, params) -> "BlockRefactor":
        """The BlockRefactor taking ``self.apply(params)`` back to ``params``."""
        params = self._prepare(params)
        (_, _), (W2, b2), (W3, _) = params
        J = list(self.neurons)
        return BlockRefactor(
            self.neurons,
            tuple(map(tuple, np.hstack([W2[J], b2[J, None]]))),
            tuple(map(tuple, W3[:, J])),
        )


def apply_sequence(
    symmetries: Sequence[Symmetry], params: Any, *, tol: float = DEFAULT_TOL
) -> Params:
    """Apply the symmetries in order (each to the result of the previous one).

    Args:
        symmetries: a sequence of symmetry objects.
        params: the starting parameters.
        tol: relative tolerance passed to every step.

    Returns:
        The final parameters; a :class:`~neuromanifold.SymmetryError` naming the failing
        step when one does not apply.
    """
    out = check_params(params)
    if isinstance(symmetries, (str, bytes, Symmetry)) or not isinstance(symmetries, Sequence):
        raise InputError(
            f"symmetries must be a sequence of symmetry objects; got {short_repr(symmetries)}"
        )
    for n, s in enumerate(symmetries):
        if not isinstance(s, Symmetry):
            raise InputError(f"symmetries must be symmetry objects; item {n} is {short_repr(s)}")
        try:
            out = s.apply(out, tol=tol)
        except SymmetryError as exc:
            raise SymmetryError(f"step {n} of the sequence: {exc}") from exc
    return out


#: the kinds of moves :func:`random_orbit_point` draws from (symmetry names)
ORBIT_MOVES = (
    "scaling",
    "dead_neuron_move",
    "linear_block_mixing",
    "block_refactor",
    "second_layer_flip",
    "hiding_translation",
    "flip",
    "ramp_flip",
    "permutation",
)


def random_orbit_point(
    params: Any, *, seed: Any = 0, moves: Sequence[str] | None = None, tol: float = DEFAULT_TOL
) -> tuple[Params, list[Symmetry]]:
    """A random point of the orbit of ``params`` under the named symmetries, and the chain
    of symmetries that reaches it (each one applies to the result of the previous one).

    In order, each where it applies (``moves`` restricts the kinds, by name; default
    :data:`ORBIT_MOVES`): positive rescalings of both hidden layers (log-uniform in
    ``[1/4, 4]``); every dead second-layer neuron moved to a random dead row with random
    outgoing weights; some dead neurons made always active with random positive rows and
    zero outgoing weights (``block_refactor``, so that the block's row space changes); a random
    mixing ``I + U(0, 0.3)`` of the always-active block with a random bias shift; a random
    crossing neuron turned around through the block (``SecondLayerFlip.construct``); for
    every hidden first-layer hyperplane a translation drawn in its valid interval (at most
    3 past its lower end) and flips of a random subset of the other neurons; a ramp flip
    (``n1 = 1``); random permutations of both hidden layers (the last two steps).

    Args:
        params: ``[(W1, b1), (W2, b2), (W3, b3)]``.
        seed: int, None or a numpy Generator.
        moves: names of the kinds of moves to use (``None``: all).
        tol: relative tolerance of the sign decisions.

    Returns:
        ``(new_params, sequence)`` with ``apply_sequence(sequence, params) == new_params``.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0]]), np.array([-0.5])),
    ...      (np.ones((1, 1)), np.zeros(1))]
    >>> Q, seq = random_orbit_point(P, seed=1)
    >>> [s.name for s in seq]
    ['scaling', 'scaling', 'hiding_translation', 'flip', 'permutation', 'permutation']
    >>> bool(np.allclose(apply_sequence(seq, P)[0][0], Q[0][0]))
    True
    """
    # Whole: the moves in their fixed order, a few lines each; add() threads cur and seq
    tol = check_tol(tol)
    rng = as_seed_rng(seed)
    params = three_layer(params, "random_orbit_point")
    if moves is not None and (
        isinstance(moves, (str, bytes)) or not isinstance(moves, (Sequence, set, frozenset))
    ):
        raise InputError(
            f"moves must be a sequence of names from {ORBIT_MOVES}; got {short_repr(moves)}"
        )
    use = set(ORBIT_MOVES if moves is None else moves)
    unknown = use - set(ORBIT_MOVES)
    if unknown:
        raise InputError(
            f"moves must be names from {ORBIT_MOVES}; got {short_repr(sorted(unknown))}"
        )
    (W1, _), (W2, _), (W3, _) = params
    n1, n2, n3 = W1.shape[0], W2.shape[0], W3.shape[0]
    seq: list[Symmetry] = []
    cur = params

    def add(sym):
        nonlocal cur
        cur = sym.apply(cur, tol=tol)
        seq.append(sym)

    if "scaling" in use:
        for layer, n in ((1, n1), (2, n2)):
            add(Scaling(layer, tuple(np.exp(rng.uniform(-np.log(4), np.log(4), n)))))
    S = row_signs(cur, tol)
    dead = [j for j in range(n2) if not np.any(S[j] > 0)]
    if "dead_neuron_move" in use:
        for j in dead:
            add(
                DeadNeuronMove(
                    j, tuple(-rng.uniform(0.1, 2.0, n1 + 1)), tuple(rng.standard_normal(n3))
                )
            )
    lin = [j for j in range(n2) if np.any(S[j] > 0) and not np.any(S[j] < 0)]
    if "block_refactor" in use and dead and rng.random() < 0.5:
        new = [j for j in dead if rng.random() < 0.7] or dead[:1]
        add(
            BlockRefactor(
                tuple(new),
                tuple(tuple(rng.uniform(0.3, 2.0, n1)) + (0.0,) for _ in new),
                tuple((0.0,) * len(new) for _ in range(n3)),
            )
        )
        lin = sorted(lin + new)
    if "linear_block_mixing" in use and lin:
        M = np.eye(len(lin)) + rng.uniform(0, 0.3, (len(lin), len(lin)))
        add(LinearBlockMixing(tuple(lin), M, tuple(rng.uniform(0, 1, len(lin)))))
    S = row_signs(cur, tol)
    crossing = [j for j in range(n2) if np.any(S[j] > 0) and np.any(S[j] < 0)]
    if "second_layer_flip" in use and crossing and lin and rng.random() < 0.7:
        j = crossing[int(rng.integers(len(crossing)))]
        flip = SecondLayerFlip.construct(cur, (j,), tol=tol)
        if flip is not None:
            add(flip)
    for i in range(n1):
        tr = HidingTranslation(i, 0.0).applies(cur, tol=tol)
        if not tr.applies:
            continue
        if "hiding_translation" in use:
            lo, hi = tr.valid_set
            t = float(rng.uniform(lo, min(hi, lo + 3.0)))
            if HidingTranslation(i, t).applies(cur, tol=tol).applies:
                add(HidingTranslation(i, t))
        ks = tuple(k for k in range(n1) if k != i and rng.random() < 0.6)
        if "flip" in use and ks and Flip(i, ks).applies(cur, tol=tol).applies:
            add(Flip(i, ks))
    if "ramp_flip" in use and n1 == 1 and rng.random() < 0.5:
        (_, _), (W2c, b2c), _ = cur
        S = row_signs(cur, tol)
        ramps = [j for j in range(n2) if S[j, 0] < 0 < S[j, 1]]
        if ramps:
            j = max(ramps, key=lambda m: b2c[m] / -W2c[m, 0])
            if RampFlip(j).applies(cur, tol=tol).applies:
                add(RampFlip(j))
    if "permutation" in use:
        add(Permutation(1, tuple(int(v) for v in rng.permutation(n1))))
        add(Permutation(2, tuple(int(v) for v in rng.permutation(n2))))
    return cur, seq
