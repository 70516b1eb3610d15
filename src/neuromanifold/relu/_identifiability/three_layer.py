"""Identifiability of three-layer bottleneck ReLU networks (docs/concepts_relu.md §5).

A parameter is *identifiable* when its fiber (all parameters computing the same
function) is its orbit under permutations and positive rescalings of hidden neurons.
The fast path decides it from the sign patterns of the rows of ``[W2 | b2]``
(:mod:`neuromanifold.relu._symmetries.shape`): a bottleneck parameter is not identifiable when

* a second-layer neuron is **dead** on the orthant (free weights), or
* a second-layer neuron is **linear** (always active: its bias can be shifted into
  ``b3``, and several can be mixed), or
* a first-layer hyperplane is **hidden** (a hiding translation moves it; flips may apply),
  or
* ``n1 = 1`` and every live row is a **ramp** (the ramp flip reverses the first layer).

Each reason comes with a witness: a symmetry of :mod:`neuromanifold.relu.symmetries`
that moves the parameter off its permutation-scaling orbit, re-checked at ``tol``: then
the verdict is ``False``. Otherwise, for bottleneck parameters that pass every genericity
condition below (each checked exhaustively), the verdict is ``True``; this rests on the
completeness of the symmetry list for generic bottleneck parameters (paper B,
"The Symmetries of Three-Layer ReLU Networks", arXiv 2605.18319) and is tested against
the exact functional dimension and the exact equivalence engine
(``docs/relu_symmetries.md``).

**Genericity conditions of the fast path** (each checked in polynomial time):

* ``"bottleneck"``: ``n1 <= d`` and ``W1`` has full row rank;
* ``"nonzero signs"``: every entry of ``[W2 | b2]`` is nonzero at the tolerance (the sign
  patterns are strict);
* ``"live outputs"``: every live second-layer neuron has a nonzero column of ``W3``;
* ``"distinct hyperplanes"``: no two rows of ``[W2 | b2]`` are parallel (their bent
  hyperplanes in the orthant would coincide);
* ``"visible kinks"``: across every face ``z_k = 0`` of the orthant, the gradient jump
  ``sum_{j in J} W3[:, j] W2[j, k]`` is nonzero on every region of the face where the set
  ``J`` of active second-layer neurons is not empty (the masked products ``W3 D2 W2 e_k``
  have full rank there). When a linear functional is positive on every live row's jump
  ``W3[:, j] W2[j, k]`` (one LP) no subset cancels and nothing more is needed. Otherwise the
  face regions come from the exact region engine in dimension ``n1 - 1`` (a single point
  when ``n1 = 1``) when that arrangement is small (``n1 <= 2``, ``n2 <= 10``, or ``n1 = 3``
  and ``n2 <= 24``), else from a sample of 2000 face points at scales ``1e-3 .. 1e3`` (then
  ``method`` says so: the condition is sampled, not exhaustive).

Everywhere else (not a bottleneck, a genericity condition failing or only sampled) no
symmetry found does not prove identifiability, since the sign-pattern test is only
sufficient there: the verdict is ``None`` (undecided), and ``undecided_reason`` says why
and what would decide it.

``exact_genericity=True`` adds the exact supertransversality and masked-product rank
conditions of :func:`neuromanifold.relu.genericity` (exponential: region enumeration).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol, numerical_rank
from ..._validation import check_bool
from .._engine.budget import check_budget
from .._genericity.genericity import genericity
from .._regions.regions import regions
from .._symmetries.shape import (
    hidden_hyperplanes,
    is_bottleneck,
    live_rows,
    row_kinds,
    row_signs,
    three_layer,
    weighted_rows,
)
from .._symmetries.three_layer import (
    DeadNeuronMove,
    Flip,
    HidingTranslation,
    LinearBlockMixing,
    RampFlip,
    SecondLayerFlip,
    translation_interval,
)
from .verdict import Identifiability

__all__ = ["HiddenHyperplane", "ThreeLayerIdentifiability", "identifiability", "fast_genericity"]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class HiddenHyperplane(Result):
    """A hidden first-layer hyperplane.

    Attributes:
        neuron: the first-layer neuron ``i`` (0-based).
        hiding: the live second-layer neurons hiding it (rows positive only in column ``i``).
        interval: the closed interval ``(lo, hi)`` of valid hiding translations ``t``.
        flippable: first-layer neurons ``k`` that can flip around ``i`` (:class:`Flip`).
    """

    neuron: int
    hiding: tuple
    interval: tuple
    flippable: tuple


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ThreeLayerIdentifiability(Identifiability):
    """Identifiability verdict of a three-layer parameter, with its evidence (the route of
    :func:`~neuromanifold.relu.identifiability` for three layers).

    Attributes:
        identifiable: ``True`` (the fiber is the permutation-scaling orbit: a generic
            bottleneck parameter without any of the reasons below, where the
            characterization applies), ``False`` (a symmetry in ``witnesses``, re-checked
            at ``tol``, moves the parameter off its orbit) or ``None``: undecided, because
            the characterization does not apply and no witness was found
            (``undecided_reason`` says why and what would decide it).
        widths: ``(d, n1, n2, n3)``.
        bottleneck: ``n1 <= d`` and ``W1`` has full row rank.
        generic: every genericity condition checked holds (module docstring).
        genericity_failures: the conditions that failed, in words (empty when generic).
        dead_neurons: second-layer neurons dead on the orthant.
        linear_neurons: second-layer neurons always active on the orthant (nonzero rows).
        hidden_hyperplanes: :class:`HiddenHyperplane` list.
        flips: the discrete symmetries available (a :class:`Flip` per flippable neuron,
            a :class:`RampFlip`, a :class:`SecondLayerFlip` per crossing neuron that can
            turn around through the always-active block).
        witnesses: symmetries that move the parameter off its permutation-scaling orbit
            (one per reason; empty when identifiable).
        row_kinds: the kind of every row of ``[W2 | b2]`` (``"dead"``, ``"linear"``,
            ``"hiding"``, ``"ramp"``, ``"mixed"``).
        sign_patterns: the signs of ``[W2 | b2]`` at the tolerance (bias last).
        reasons: the verdict in plain words.
        certified: a "not identifiable" verdict with a witness that applies at ``tol = 0``
            too is proved; an "identifiable" verdict rests on the completeness of the symmetry
            list for generic parameters, so it is not certified.
        tol: the relative tolerance of the sign decisions.
        method: how the verdict was reached.
        undecided_reason: for ``identifiable=None``, why the verdict is open and what
            would decide it; ``None`` otherwise.
    """

    bottleneck: bool
    generic: bool
    genericity_failures: tuple
    dead_neurons: tuple
    linear_neurons: tuple
    hidden_hyperplanes: tuple
    flips: tuple
    row_kinds: tuple
    sign_patterns: np.ndarray

    def describe(self) -> str:
        """The verdict and its reasons, one per line."""
        head = f"{self.verdict} (bottleneck={self.bottleneck}, generic={self.generic})"
        lines = [head] + ["  " + r for r in self.reasons]
        if self.undecided_reason:
            lines.append("  undecided: " + self.undecided_reason)
        return "\n".join(lines + self.local_line())


def fast_genericity(params: Any, *, tol: float = DEFAULT_TOL) -> tuple[str, ...]:
    """The polynomial-time genericity conditions (module docstring) that fail, in words.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0], [2.0, -2.0]]), np.array([0.5, 1.0])),
    ...      (np.ones((1, 2)), np.zeros(1))]
    >>> fast_genericity(P)
    ('distinct hyperplanes: rows 0 and 1 of [W2 | b2] are parallel',)
    """
    params = three_layer(params, "fast_genericity")
    return tuple(_fast_genericity(params, check_tol(tol))[0])


def _fast_genericity(params, tol: float) -> tuple[list[str], list[int]]:
    """The failing conditions of :func:`fast_genericity`, and the faces whose
    visible-kinks condition was only sampled."""
    # each condition is invariant under a positive rescaling of a layer: rescale every
    # layer to entries of size <= 1, so that products of huge weights cannot overflow
    params = [
        (W / m, b / m)
        if (m := max(np.max(np.abs(W), initial=0.0), np.max(np.abs(b), initial=0.0))) > 0
        else (W, b)
        for W, b in params
    ]
    out = []
    (W1, _), (W2, b2), (W3, _) = params
    n1, d = W1.shape
    if not is_bottleneck(params, tol=tol):
        out.append(
            f"bottleneck: needs n1 <= d and W1 of full row rank; got n1 = {n1}, d = {d}"
            + ("" if n1 > d else ", W1 rank-deficient")
        )
    S = row_signs(params, tol)
    zeros = [(int(j), int(k)) for j, k in zip(*np.nonzero(S == 0))]
    if zeros:
        out.append(
            f"nonzero signs: [W2 | b2] has zero entries (row, column) {zeros[:6]}"
            + (" ..." if len(zeros) > 6 else "")
        )
    R = weighted_rows(params)
    contrib = np.linalg.norm(W3, axis=0) * np.linalg.norm(R, axis=1)
    top = float(np.max(contrib)) if contrib.size else 0.0
    silent = [j for j in live_rows(S) if contrib[j] <= tol * top]
    if silent:
        out.append(f"live outputs: live second-layer neurons {silent} have a zero column of W3")
    n2 = R.shape[0]
    eps = max(tol, 1e-15)
    for j in range(n2):
        for m in range(j + 1, n2):
            if numerical_rank(R[[j, m]].T, eps)[0] < 2:
                out.append(f"distinct hyperplanes: rows {j} and {m} of [W2 | b2] are parallel")
    failed, sampled = _face_jumps(params, S, tol)
    return out + failed, sampled


def _exhaustive(n1: int, n2: int) -> bool:
    """Whether the face arrangements are small enough to enumerate every region."""
    return n1 <= 2 or n2 <= 10 or (n1 == 3 and n2 <= 24)


def _face_patterns(
    W2: np.ndarray, b2: np.ndarray, k: int, exhaustive: bool, sample: tuple | None
) -> np.ndarray:
    """Activation sets (boolean masks, one per row) of the second layer on the face
    ``z_k = 0`` of the orthant: on every region (exact region engine), or on the sample
    ``(Z, Z @ W2.T + b2)`` of orthant points (:func:`_face_sample`) moved onto the face
    when ``exhaustive`` is False."""
    n2, n1 = W2.shape
    if n1 == 1:
        return (b2 > 0)[None, :]
    if exhaustive:
        Wf = np.delete(W2, k, axis=1)
        face = [(Wf, b2), (np.ones((1, n2)), np.zeros(1))]
        return np.array(
            [np.asarray(R.pattern[0], bool) for R in regions(face, "orthant").regions], dtype=bool
        ).reshape(-1, n2)
    Z, base = sample
    term = Z[:, k, None] * W2[None, :, k]
    V = base - term  # the points with z_k set to 0
    # where the subtraction cancels, its sign is rounding: those points are recomputed
    near = np.any(np.abs(V) <= 1e-12 * (np.abs(base) + np.abs(term)), axis=1)
    if near.any():
        Zk = Z[near].copy()
        Zk[:, k] = 0.0
        V[near] = Zk @ W2.T + b2
    A = V > 0
    packed = np.packbits(A, axis=1)  # distinct patterns, by their bytes
    _, first = np.unique(
        packed.view(np.dtype((np.void, packed.shape[1]))).ravel(), return_index=True
    )
    return A[np.sort(first)]


def _face_sample(W2: np.ndarray, b2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthant points at scales ``1e-3 .. 1e3`` (and the origin), 30 % of their
    coordinates 0 (points on lower-dimensional faces too), with their second-layer
    pre-activations."""
    rng = np.random.default_rng(0)
    n1 = W2.shape[1]
    Z = np.vstack(
        [rng.exponential(1.0, (400, n1)) * sc for sc in (1e-3, 1e-1, 1.0, 10.0, 1e3)]
        + [np.zeros((1, n1))]
    )
    Z[rng.random(Z.shape) < 0.3] = 0.0
    return Z, Z @ W2.T + b2


def _separated(V: np.ndarray) -> bool:
    """Whether some linear functional is positive on every column of ``V`` (then no
    non-empty subset of the columns sums to zero)."""
    if V.shape[1] == 0:
        return True
    from scipy.optimize import linprog  # start-up: a slow import

    res = linprog(
        np.zeros(V.shape[0]),
        A_ub=-V.T,
        b_ub=-np.ones(V.shape[1]),
        bounds=[(None, None)] * V.shape[0],
        method="highs",
    )
    return res.status == 0


def _face_jumps(params, S, tol) -> tuple[list[str], list[int]]:
    """Failures of the visible-kinks condition, and the faces only sampled."""
    (W1, _), (W2, b2), (W3, _) = params
    n1, n2 = W1.shape[0], W2.shape[0]
    R = weighted_rows(params)
    live = live_rows(S)
    out, sampled = [], []
    sample = None
    for k in range(n1):
        col = W3 * R[:, k][None, :]  # W3[:, j] * (weighted) W2[j, k]
        top = float(np.max(np.abs(col))) if col.size else 0.0
        if top > 0 and np.all(S[live, k] != 0) and _separated(col[:, live]):
            continue  # no subset of the live rows' jumps cancels
        exhaustive = _exhaustive(n1, n2)
        if not exhaustive:
            sampled.append(k)
            sample = sample or _face_sample(W2, b2)
        pats = _face_patterns(W2, b2, k, exhaustive, sample)
        pats = pats[pats.any(axis=1)]
        if not len(pats):
            continue
        # every pattern's jump at once (some 2,000 sampled patterns per hyperplane at
        # 784-64-32-10 took 200,000 small numpy calls one by one)
        jumps = np.abs(col @ pats.T.astype(float)).max(axis=0)
        vanish = (jumps <= max(tol, 1e-15) * top) | (top == 0.0)
        if vanish.any():
            J = pats[int(np.argmax(vanish))]
            out.append(
                f"visible kinks: the gradient jump across first-layer hyperplane {k} "
                f"vanishes where second-layer neurons {np.flatnonzero(J).tolist()} "
                f"are active"
            )
    return out, sampled


def _nudge(lo: float, hi: float) -> float:
    """A nonzero t inside [lo, hi] (which contains 0), or 0.0 when the interval is {0}."""
    if hi > 0:
        return hi / 2 if math.isfinite(hi) else 1.0
    if lo < 0:
        return lo / 2 if math.isfinite(lo) else -1.0
    return 0.0


def identifiability(
    params: Any,
    *,
    tol: float = DEFAULT_TOL,
    exact_genericity: bool = False,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> ThreeLayerIdentifiability:
    """Is a three-layer bottleneck parameter identifiable up to permutation and scaling?

    Args:
        params: ``[(W1, b1), (W2, b2), (W3, b3)]``.
        tol: relative tolerance of the sign decisions on ``[W2 | b2]`` (``0`` exact).
        exact_genericity: also run the exact (exponential) genericity test
            :func:`neuromanifold.relu.genericity` on all of R^d.
        max_regions, time_limit: the budget of that exact test (as for
            :func:`~neuromanifold.relu.genericity`; reaching it raises its
            :class:`~neuromanifold.ComputationLimitError`).

    Returns:
        A :class:`ThreeLayerIdentifiability`: the verdict, the dead and linear neurons, the
        hidden hyperplanes with the neurons hiding them, the flips, witnesses, genericity
        and the reasons in words.

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0], [-1.0, 2.0]]),
    ...      np.array([0.5, -1.0])),
    ...      (np.array([[1.0, 2.0]]), np.zeros(1))]
    >>> identifiability(P).identifiable
    True
    >>> r = identifiability([(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0]]), np.array([-0.5])),
    ...                      (np.array([[1.0]]), np.zeros(1))])
    >>> r.identifiable, [h.neuron for h in r.hidden_hyperplanes], r.flips
    (False, [0], (Flip(hidden=0, flipped=(1,)),))
    """
    params = three_layer(params, "identifiability")
    tol = check_tol(tol)
    exact_genericity = check_bool(exact_genericity, "exact_genericity")
    max_regions, time_limit = check_budget(max_regions, time_limit)
    S = row_signs(params, tol)
    kinds = row_kinds(S)
    bottleneck = is_bottleneck(params, tol=tol)
    failures, sampled = _fast_genericity(params, tol)
    method = "sign patterns of [W2 | b2]"
    if sampled:
        method += f"; visible kinks sampled (not every region) on faces {sampled}"
    if exact_genericity:
        g = genericity(params, max_regions=max_regions, time_limit=time_limit)
        failures.extend(f"exact genericity: {f.message}" for f in g.failures)
        method += " + exact genericity"
    dead = tuple(j for j, k in enumerate(kinds) if k == "dead")
    linear = tuple(j for j, k in enumerate(kinds) if k == "linear")
    found, flips, hidden = sign_pattern_symmetries(params, S, tol)
    reasons = [reason for reason, _ in found]
    witnesses = [w for _, ws in found for w in ws]
    identifiable, undecided = _verdict(
        params, reasons, witnesses, bottleneck, failures, bool(sampled), tol
    )
    if not reasons:
        reasons.append(
            "no dead or always-active second-layer neuron, no hidden first-layer "
            "hyperplane and no ramp flip"
            + (": the fiber is the permutation-scaling orbit" if identifiable else "")
        )
    if not bottleneck:
        reasons.append(
            "not a bottleneck (n1 > d or W1 rank-deficient): the first layer does "
            "not cover the orthant"
        )
    certified = identifiable is False and any(w.applies(params, tol=0).applies for w in witnesses)
    return ThreeLayerIdentifiability(
        identifiable=identifiable,
        widths=(params[0][0].shape[1],) + tuple(W.shape[0] for W, _ in params),
        bottleneck=bottleneck,
        generic=not failures,
        genericity_failures=tuple(failures),
        dead_neurons=dead,
        linear_neurons=linear,
        hidden_hyperplanes=tuple(hidden),
        flips=tuple(flips),
        witnesses=tuple(witnesses),
        row_kinds=tuple(kinds),
        sign_patterns=S,
        reasons=tuple(reasons),
        certified=certified,
        tol=tol,
        method=method,
        undecided_reason=undecided,
    )


def sign_pattern_symmetries(params, S: np.ndarray, tol: float) -> tuple[list, list, tuple]:
    """What the sign patterns ``S`` of ``[W2 | b2]`` show, for any three-layer parameter
    (bottleneck or not: each symmetry holds on the whole orthant, so on any image of the
    first layer): ``(found, flips, hidden)``, with ``found`` a list of ``(reason,
    witnesses)`` (the witnesses not yet re-checked; a hidden hyperplane that cannot
    move has none), the flips and the :class:`HiddenHyperplane` records."""
    kinds = row_kinds(S)
    dead = tuple(j for j, k in enumerate(kinds) if k == "dead")
    linear = tuple(j for j, k in enumerate(kinds) if k == "linear")
    *hiding, hidden = _hidden_hyperplanes(params, S, tol)
    found, flips = [], []
    for reasons, witnesses, part_flips in (  # the order of the reasons
        _dead_rows(params, dead),
        _always_active_block(params, kinds, linear, tol),
        hiding,
        _ramp_flip(params, kinds, tol),
    ):
        found += zip(reasons, witnesses)
        flips += part_flips
    return found, flips, hidden


def _dead_rows(params, dead: tuple) -> tuple[list, list, list]:
    """Reasons and witnesses of the dead second-layer neurons (their weights are free)."""
    (_, _), (W2, b2), (W3, _) = params
    reasons, witnesses = [], []
    for j in dead:
        row = tuple(W2[j]) + (float(b2[j]),)
        witnesses.append((DeadNeuronMove(j, row, tuple(W3[:, j] + 1.0)),))
        reasons.append(
            f"second-layer neuron {j} is dead on the orthant (no positive entry in "
            f"its row of [W2 | b2]): its weights are free"
        )
    return reasons, witnesses, []


def _always_active_block(params, kinds: list, linear: tuple, tol: float) -> tuple[list, list, list]:
    """Reasons, witnesses and second-layer flips of the always-active block."""
    if not linear:
        return [], [], []
    W2, b2 = params[1]
    scale = float(np.max(np.abs(np.hstack([W2[list(linear)], b2[list(linear), None]]))))
    witnesses = [LinearBlockMixing((j,), np.eye(1), (max(scale, 1.0),)) for j in linear]
    what = (
        "is always active"
        if len(linear) == 1
        else "are always active and can be mixed by invertible matrices"
    )
    flips, turn = [], []
    for j, kind in enumerate(kinds):
        if kind not in ("dead", "linear"):
            flip = SecondLayerFlip.construct(params, (j,), linear, tol=tol)
            if flip is not None:
                flips.append(flip)
                turn.append(j)
    reason = (
        f"second-layer neuron(s) {list(linear)} {what} (no negative entry): their "
        f"biases shift into b3"
        + (
            f"; crossing neurons {turn} can turn around, the always-active block "
            f"absorbing their linear parts"
            if turn
            else ""
        )
    )
    return [reason], [tuple(witnesses)], flips


def _hidden_hyperplanes(params, S: np.ndarray, tol: float) -> tuple[list, list, list, tuple]:
    """Reasons, witnesses (hiding translations) and flips of the hidden first-layer
    hyperplanes, and their :class:`HiddenHyperplane` records."""
    n1 = params[0][0].shape[0]
    reasons, witnesses, flips, hidden = [], [], [], []
    for i, rows in hidden_hyperplanes(S).items():
        lo, hi = translation_interval(params, i, S)
        flippable = tuple(
            k
            for k in range(n1)
            if k != i and rows and Flip(i, (k,)).applies(params, tol=tol).applies
        )
        hidden.append(
            HiddenHyperplane(neuron=i, hiding=rows, interval=(lo, hi), flippable=flippable)
        )
        flips.extend(Flip(i, (k,)) for k in flippable)
        t = _nudge(lo, hi)
        witnesses.append((HidingTranslation(i, t),) if t != 0.0 else ())
        reasons.append(
            f"first-layer hyperplane {i} is hidden (every second-layer row has a "
            f"nonpositive bias and nonpositive weights outside column {i}"
            + (f"; live rows {list(rows)} hide it" if rows else "; no live row sees it")
            + f"): it translates for t in [{lo:.6g}, {hi:.6g}]"
            + (f"; neurons {list(flippable)} can flip around it" if flippable else "")
        )
    return reasons, witnesses, flips, tuple(hidden)


def _ramp_flip(params, kinds: list, tol: float) -> tuple[list, list, list]:
    """With ``n1 = 1`` and every live row a ramp: the ramp flip (a reason and a witness)."""
    (W1, b1), (W2, b2), _ = params
    ramps = [j for j, k in enumerate(kinds) if k == "ramp"]
    if W1.shape[0] != 1 or not ramps:
        return [], [], []
    top = max(ramps, key=lambda j: b2[j] / -W2[j, 0])
    rf = RampFlip(top)
    if not rf.applies(params, tol=tol).applies:
        return [], [], []
    return (
        [
            f"n1 = 1 and every live second-layer row is a ramp or a constant: the ramp flip "
            f"around row {top} reverses the first layer"
        ],
        [(rf,)],
        [rf],
    )


def _verdict(
    params,
    reasons: list,
    witnesses: list,
    bottleneck: bool,
    failures: list,
    sampled: bool,
    tol: float,
) -> tuple[bool | None, str | None]:
    """``(identifiable, undecided_reason)``: ``False`` only with a witness that applies
    (re-checked at ``tol``), ``True`` only where the characterization applies (a
    bottleneck, every genericity condition checked exhaustively and holding, no reason
    found), else ``None`` with the reason in words."""
    if reasons:
        if any(w.applies(params, tol=tol).applies for w in witnesses):
            return False, None
        return None, (
            "the sign patterns suggest symmetries, but none of their witnesses "
            "applies at this tolerance (re-checked); a verified fiber point off the "
            "orbit (relu.search_symmetries) would decide 'not identifiable'"
        )
    missing = []
    if not bottleneck:
        missing.append("it is not a bottleneck (n1 > d or W1 rank-deficient)")
    failed = [f for f in failures if not f.startswith("bottleneck")]  # said just above
    if failed:
        missing.append("genericity fails (" + "; ".join(failed) + ")")
    if sampled:
        missing.append(
            "the visible-kinks condition was only sampled, not checked on every region of the faces"
        )
    if not missing:
        return True, None
    return None, (
        "no symmetry moves it off its orbit, but the characterization (generic "
        "three-layer bottleneck networks) does not apply: "
        + "; ".join(missing)
        + ". The sign-pattern test is only sufficient here; a verified fiber point "
        "off the orbit (relu.search_symmetries) would decide 'not identifiable', "
        "and nothing in the library proves 'identifiable' outside the "
        "characterization yet"
    )
