"""Canonical form and polynomial-time equivalence of generic three-layer bottleneck ReLU
networks, with the symmetry that takes one to the other (docs/concepts_relu.md §5).

``f(x) = W3 relu(W2 relu(W1 x + b1) + b2) + b3`` with ``n1 <= d`` and ``W1`` of full row
rank, so layers 2-3 form a one-hidden-layer network on the orthant ``O = R^{n1}_{>=0}``.
Algorithm, complexity and the cases the fast path covers are in
``docs/relu_equivalence.md``. In short, :func:`canonical_form` walks from the parameters to
one representative of their orbit under the named symmetries of
:mod:`neuromanifold.relu.symmetries`, recording every step:

0. entries of ``[W2 | b2]`` within ``tol`` of zero are set to 0 (only when the function
   moves by at most ``tol``, bounded by ``function_distance_bound``); crossing rows that
   can all hide one first-layer hyperplane once turned around are turned;
1. dead second-layer rows become ``(0, ..., 0, -1)`` with zero outgoing weights;
2. with a hidden first-layer hyperplane ``i`` whose live rows allow it, every flippable
   neuron ``k`` is turned so that the largest entry of ``w_k`` is positive;
3. first-layer rows get unit norm (``||(w_k, b_k)|| = 1``; the hidden one ``||w_i|| = 1``);
4. the hidden hyperplane is translated so that the first live row switches on at
   ``u_i = 1`` (``max_j b2_j / W2[j, i] = -1``);
5. first-layer neurons are sorted (the hidden one first);
6. crossing second-layer rows get unit norm and a canonical orientation (which the
   always-active block can carry: :mod:`neuromanifold.relu._canonical.block`); the block
   is refactored onto canonical nonnegative rows of ``rowspace(L)`` (or of
   ``rowspace(L) + span(1)``) for its linear part ``L``, zero biases, the other
   non-crossing neurons dead;
7. second-layer rows are sorted (crossing, always-active, dead).

For ``n1 = 1`` both directions of the first-layer neuron (``RampFlip``) are tried and the
one with positive ``w`` is kept.

Every step is O(n^2) to O(n^3) arithmetic (a few SVDs, sorts and LPs) except the choice of
orientation when the crossing rows are neither few (at most 16) nor linearly independent:
a branch and bound, bounded by its own budget (docs/relu_equivalence.md §2), against the
exponential region enumeration of the exact engine.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..._errors import ArchitectureError, InputError, SymmetryError
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import check_finite_result
from .._bounds.parameters import SYMMETRY_ROUNDING, function_distance_bound, path_norm_scale
from .._core.live import refuse_conv
from .._core.net import forward
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
    BlockRefactor,
    DeadNeuronMove,
    Flip,
    HidingTranslation,
    LinearBlockMixing,
    Permutation,
    RampFlip,
    Scaling,
    SecondLayerFlip,
    Symmetry,
    apply_sequence,
)
from .block import BlockNotCovered, TurningProblem, block_rows, choose_turned

__all__ = ["canonical_form", "equivalent_bottleneck", "BottleneckEquivalence", "fast_path_reason"]

Params = list[tuple[np.ndarray, np.ndarray]]


class NotCovered(Exception):
    """The parameters are outside the cases the fast path decides (reason in args[0])."""


@dataclasses.dataclass
class BottleneckInfo:
    n1: int
    n3: int
    hidden: int | None
    crossing: list[int]
    linear: list[int]
    dead: list[int]
    flippable: list[int]
    block: str | None = None  # why the always-active block has no canonical form (or None)
    snapped: int = 0  # entries of [W2 | b2] within tol of zero, set to 0
    snap_bound: float = 0.0  # bound on the relative function change that caused


def _snap(params: Params, tol: float) -> tuple[Params, int, float]:
    """``params`` with every entry of ``[W2 | b2]`` that the sign decisions call zero (its
    weighted magnitude at most ``tol`` times its row's largest, docs of
    :mod:`neuromanifold.relu._symmetries.shape`) set to exactly 0, and every live second-layer
    neuron whose path weight ``|W3[:, j]|_1 |R_j|_1`` is at most ``tol`` times the scale made
    dead (row ``(0, ..., 0, -1)``, zero outgoing weights); the number of such entries and
    neurons, and a bound on the relative function change
    (:func:`neuromanifold.relu._bounds.parameters.function_distance_bound`
    over the path-norm scale).
    Training with weight decay leaves many such entries (docs/relu_equivalence.md §1).
    :class:`NotCovered` when the bound exceeds ``tol``."""
    R = weighted_rows(params)
    big = np.max(np.abs(R), axis=1, keepdims=True)
    mask = (np.abs(R) <= tol * big) & (R != 0)
    (W1, b1), (W2, b2), (W3, b3) = params
    # live neurons whose path weight is within tol of zero: made dead
    scale = path_norm_scale(params)
    faint = [
        j
        for j in range(W2.shape[0])
        if np.any(R[j] > tol * big[j])
        and np.any(W3[:, j])
        and np.sum(np.abs(W3[:, j])) * np.sum(np.abs(R[j])) <= tol * scale
    ]
    count = int(np.sum(mask)) + len(faint)
    if count == 0:
        return params, 0, 0.0
    W2, b2, W3 = W2.copy(), b2.copy(), W3.copy()
    W2[mask[:, :-1]] = 0.0
    b2[mask[:, -1]] = 0.0
    for j in faint:
        W2[j], b2[j], W3[:, j] = 0.0, -1.0, 0.0
    new = [(W1, b1), (W2, b2), (W3, b3)]
    bound = function_distance_bound(params, new) / max(path_norm_scale(params), 1e-300)
    if bound + SYMMETRY_ROUNDING > tol:
        raise NotCovered(
            f"{count} entries of [W2 | b2] or second-layer neurons are within "
            f"tol of zero (non-generic: bent hyperplanes meeting faces of the "
            f"orthant non-transversally, invisible neurons), and setting them "
            f"to 0 could move the function by {bound:.3g} "
            f"relative, more than tol = {tol:g}"
        )
    return new, count, bound


def analyze_bottleneck(params: Params, tol: float) -> BottleneckInfo:
    """Classify the second layer and check the fast path's genericity conditions."""
    (W1, b1), (W2, b2), (W3, b3) = params
    n1, d = W1.shape
    n3 = W3.shape[0]
    if tol == 0:
        raise NotCovered(
            "tol = 0 asks for a decision over the exact floats, which a "
            "floating-point canonical form cannot give"
        )
    if n1 > d or not is_bottleneck(params, tol=tol):
        raise NotCovered(
            f"not a bottleneck: needs n1 <= d and W1 of full row rank (n1 = {n1}, d = {d})"
        )
    S = row_signs(params, tol)
    kinds = row_kinds(S)
    live = live_rows(S)
    if not live:
        raise NotCovered(
            "no live second-layer neuron: the function is constant and the first layer is free"
        )
    linear = [j for j in live if kinds[j] == "linear"]
    crossing = [j for j in live if kinds[j] != "linear"]
    dead = [j for j in range(W2.shape[0]) if j not in live]
    if n1 == 1 and np.any(S[:, 1] > 0) and _hiding_orientation(params, S, crossing, tol) is None:
        # the first-layer kink (u = 0) must show: the masked product W3 D2 W2 over the rows
        # active just above u = 0 must not vanish (maximal rank, docs/relu_equivalence.md §1)
        act = [j for j in range(S.shape[0]) if S[j, 1] > 0 or (S[j, 1] == 0 and S[j, 0] > 0)]
        jump = np.abs(W3[:, act] @ W2[act, 0]) * np.sqrt(np.sum(W1**2) + b1[0] ** 2)
        if np.max(jump, initial=0.0) <= tol * path_norm_scale(params):
            raise NotCovered(
                "n1 = 1 and the kink of the first-layer neuron is cancelled by "
                "the second layer (W3 D2 W2 = 0 at its breakpoint): not generic"
            )
    scale = path_norm_scale(params)
    norms1 = np.sqrt(np.sum(W1**2, axis=1) + b1**2)
    R = np.hstack([W2 * norms1[None, :], b2[:, None]])
    for j in crossing:  # (the always-active block is judged by its linear map alone)
        if np.sum(np.abs(W3[:, j])) * np.sum(np.abs(R[j])) <= tol * scale:
            raise NotCovered(
                f"live second-layer neuron {j} has outgoing weights within tol of zero"
            )
    U = R[crossing] / np.linalg.norm(R[crossing], axis=1, keepdims=True)
    if len(crossing) > 1:
        gap = np.minimum(
            np.max(np.abs(U[:, None, :] - U[None, :, :]), axis=2),
            np.max(np.abs(U[:, None, :] + U[None, :, :]), axis=2),
        )
        gap[np.tril_indices(len(crossing))] = np.inf
        if np.min(gap) <= 10 * tol:
            a, b = np.unravel_index(int(np.argmin(gap)), gap.shape)
            raise NotCovered(
                f"second-layer rows {crossing[a]} and {crossing[b]} define "
                f"the same hyperplane of the orthant"
            )
    hid = hidden_hyperplanes(S)
    hidden = next(iter(hid)) if hid else None
    SL = S[live]
    pos = SL > 0
    npos = np.sum(pos, axis=1)
    for k in range(n1):
        if k == hidden:
            continue
        # a live row with a nonzero entry k and a positive entry outside column k
        if not np.any((SL[:, k] != 0) & (npos - pos[:, k] > 0)):
            raise NotCovered(
                f"first-layer neuron {k} is seen by no live second-layer row "
                f"that is active on the face z_{k} = 0"
            )
    flippable: list[int] = []
    if hidden is not None:
        flippable = [
            k
            for k in range(n1)
            if k != hidden and Flip(hidden, (k,)).applies(params, tol=tol).applies
        ]
    return BottleneckInfo(n1, n3, hidden, crossing, linear, dead, flippable)


def fast_path_reason(params: Any, *, tol: float = DEFAULT_TOL) -> str | None:
    """Why the polynomial-time path does not decide for ``params`` (``None`` if it does).

    >>> P = [(np.eye(2), np.zeros(2)), (np.array([[1.0, -1.0]]), np.array([-0.5])),
    ...      (np.ones((1, 1)), np.zeros(1))]
    >>> fast_path_reason(P) is None
    True
    >>> fast_path_reason(P, tol=0)
    'tol = 0 asks for a decision over the exact floats, which a floating-point canonical form cannot
    give'
    """
    tol = check_tol(tol)
    params = three_layer(params, "the bottleneck fast path")
    try:
        analyze_bottleneck(_snap(params, tol)[0], tol)
    except NotCovered as exc:
        return str(exc.args[0])
    return None


def _hiding_orientation(params: Params, S: np.ndarray, crossing: list, tol: float):
    """``(i, turned)`` when turning the crossing neurons ``turned`` (through the always-active
    block; possibly none) makes every crossing row hide first-layer hyperplane ``i`` and
    leaves the block with no linear part, so that its neurons can die and every live row
    hides ``i``; else ``None`` (also when there is no always-active neuron)."""
    (W1, b1), (W2, b2), (W3, b3) = params
    n1 = W1.shape[0]
    norms = np.sqrt(np.sum(W1**2, axis=1) + b1**2)
    lin = [j for j in range(S.shape[0]) if j not in crossing and np.any(S[j] > 0)]
    if not lin or not crossing:
        return None
    scale = path_norm_scale(params)
    for i in range(n1):
        turned = []
        for j in crossing:
            rest = np.delete(S[j], i)
            if S[j, i] > 0 and np.all(rest <= 0):
                continue
            if S[j, i] < 0 and np.all(rest >= 0):
                turned.append(j)
                continue
            break
        else:
            Lf = W3[:, lin] @ W2[lin] + sum(np.outer(W3[:, j], W2[j]) for j in turned)
            if np.max(np.abs(Lf * norms)) <= tol * scale:
                return i, tuple(turned)
    return None


def _orientation_key(w: np.ndarray) -> float:
    return float(w[int(np.argmax(np.abs(w)))])


def _step(path: list, before: list, cur: Params, sym: Symmetry, tol: float) -> Params:
    before.append(cur)
    path.append(sym)
    return sym.apply(cur, tol=tol)


def _kinds(cur: Params, tol: float) -> tuple[list, list, list]:
    """(crossing, linear, dead) second-layer neurons of ``cur``."""
    S = row_signs(cur, tol)
    crossing = [j for j in range(S.shape[0]) if np.any(S[j] > 0) and np.any(S[j] < 0)]
    linear = [j for j in range(S.shape[0]) if np.any(S[j] > 0) and not np.any(S[j] < 0)]
    dead = [j for j in range(S.shape[0]) if not np.any(S[j] > 0)]
    return crossing, linear, dead


def _reorient(
    path: list, before: list, cur: Params, turned: tuple, A: np.ndarray, tol: float
) -> Params:
    """Turn the crossing neurons ``turned`` around and put the always-active block on the
    rows ``A`` (zero biases, outgoing ``L A^+`` for its new linear map ``L``), the other
    non-crossing neurons dead ``(0, ..., 0, -1)``: ``BlockRefactor`` (every non-crossing
    neuron always active), ``SecondLayerFlip``, ``BlockRefactor``."""
    crossing, linear, _ = _kinds(cur, tol)
    (W1, b1), (W2, b2), (W3, b3) = cur
    n1, n3 = W1.shape[0], W3.shape[0]
    N = [j for j in range(W2.shape[0]) if j not in crossing]
    L = W3[:, linear] @ W2[linear] + sum(
        (np.outer(W3[:, j], W2[j]) for j in turned), np.zeros((n3, n1))
    )
    k = A.shape[0]
    C = L @ np.linalg.pinv(A) if k else np.zeros((n3, 0))
    if turned:
        if any(j not in linear for j in N):
            rows = [
                np.append(W2[j], b2[j]) if j in linear else np.append(np.ones(n1), 0.0) for j in N
            ]
            out = np.column_stack([W3[:, j] if j in linear else np.zeros(n3) for j in N])
            cur = _step(
                path,
                before,
                cur,
                BlockRefactor(tuple(N), tuple(map(tuple, rows)), tuple(map(tuple, out))),
                tol,
            )
        pad = np.hstack([np.vstack([A, np.ones((len(N) - k, n1))]), np.zeros((len(N), 1))])
        out = np.hstack([C, np.zeros((n3, len(N) - k))])
        cur = _step(
            path,
            before,
            cur,
            SecondLayerFlip(
                tuple(turned), tuple(N), tuple(map(tuple, pad)), tuple(map(tuple, out))
            ),
            tol,
        )
    rows = np.vstack(
        [np.hstack([A, np.zeros((k, 1))]), np.tile(np.append(np.zeros(n1), -1.0), (len(N) - k, 1))]
    )
    out = np.hstack([C, np.zeros((n3, len(N) - k))])
    (_, _), (W2, b2), (W3, _) = cur
    now = np.hstack([W2[N], b2[N, None]])
    # no non-crossing neuron left (a canonical form passed again): nothing to put in place
    if N and (
        now.shape != rows.shape
        or np.max(np.abs(now - rows)) > 0
        or np.max(np.abs(W3[:, N] - out)) > 0
    ):
        cur = _step(
            path,
            before,
            cur,
            BlockRefactor(tuple(N), tuple(map(tuple, rows)), tuple(map(tuple, out))),
            tol,
        )
        (_, _), (W2, b2), (W3, _) = cur  # snap rounding: the rows exactly as chosen
        W2[N], b2[N] = rows[:, :-1], rows[:, -1]
    return cur


def _choose_turned(cur: Params, info: BottleneckInfo, tol: float, thorough: bool = True) -> tuple:
    """The crossing neurons to turn around (canonical first layer and unit crossing rows),
    chosen among the orientations the available neurons can carry by the rules of
    :mod:`neuromanifold.relu._canonical.block` (:class:`BlockNotCovered` when none is
    certified); the reference orientation has the largest weight of ``a_j`` positive."""
    crossing, linear, dead = _kinds(cur, tol)
    (W1, _), (W2, _), (W3, _) = cur
    n1, n3 = W1.shape[0], W3.shape[0]
    m = len(linear) + len(dead)
    against = [j for j in crossing if _orientation_key(W2[j]) < 0]
    if m == 0:  # no neuron can carry a linear part: nothing turns
        return ()
    if m >= min(n3 + 1, n1):  # every orientation is possible: the reference one
        return tuple(against)
    ref = {j: (-W2[j] if j in against else W2[j]) for j in crossing}
    order = sorted(crossing, key=lambda j: tuple(ref[j]))
    problem = TurningProblem(
        L0=W3[:, linear] @ W2[linear],
        Wc=W3[:, order],
        Ac=W2[order],
        against=np.array([j in against for j in order], dtype=bool),
        m=m,
        tol=tol,
        ref=path_norm_scale(cur),
    )
    flip = choose_turned(problem, thorough)
    return tuple(sorted(order[a] for a in np.flatnonzero(flip)))


def _canonical(
    params: Params, tol: float, thorough: bool = True
) -> tuple[Params, list, list, BottleneckInfo]:
    """Canonical representative, the path of symmetries to it, the parameters before each
    step, and the structure (of the canonical parameters' index order).

    For ``n1 = 1`` the first-layer neuron can turn around (``RampFlip``) when the function
    is constant for large ``u``: then the second layer is first put in ramp form (every
    crossing row a ramp, the block dead, through ``SecondLayerFlip``), both directions of
    the first-layer neuron are brought to their canonical forms, and the one whose
    ``w``'s largest entry is positive is kept."""
    if tol > 0:
        cur, snapped, snap_bound = _snap(params, tol)
    else:
        cur, snapped, snap_bound = params, 0, 0.0
    info = analyze_bottleneck(cur, tol)
    if info.n1 == 1:
        path: list[Symmetry] = []
        before: list[Params] = []
        (_, _), (W2, _), (W3, _) = cur
        S = row_signs(cur, tol)
        up = [j for j in range(S.shape[0]) if S[j, 0] > 0]  # active for large u
        slope = W3[:, up] @ W2[up, 0] if up else np.zeros(W3.shape[0])
        scale = path_norm_scale(cur) / max(
            float(np.sqrt(np.sum(cur[0][0] ** 2) + cur[0][1][0] ** 2)), 1e-300
        )
        m = len(info.linear) + len(info.dead)
        flat = np.max(np.abs(slope), initial=0.0) <= tol * scale
        turned = tuple(j for j in info.crossing if S[j, 0] > 0)
        if flat and info.crossing and (m >= 1 or not (turned or info.linear)):
            if turned or info.linear:
                cur = _reorient(path, before, cur, turned, np.zeros((0, 1)), tol)
            S = row_signs(cur, tol)
            ramps = [j for j in range(S.shape[0]) if S[j, 0] < 0 < S[j, 1]]
            W2c, b2c = cur[1]
            j = max(ramps, key=lambda r: b2c[r] / -W2c[r, 0])
            flip = RampFlip(j)
            if flip.applies(cur, tol=tol).applies:
                a = _canonical_one(cur, tol, snapped, snap_bound, thorough)
                b = _canonical_one(flip.apply(cur, tol=tol), tol, snapped, snap_bound, thorough)
                if _orientation_key(a[0][0][0][0]) > 0:
                    return a[0], path + a[1], before + a[2], a[3]
                return b[0], path + [flip] + b[1], before + [cur] + b[2], b[3]
            path, before = [], []  # pragma: no cover - the ramp form always flips
    return _canonical_one(cur, tol, snapped, snap_bound, thorough)


def _unit_rows(cur: Params, rows: list) -> Scaling:
    """The scaling that gives the second-layer ``rows`` unit norm ``||(w_j, b_j)|| = 1``."""
    W2, b2 = cur[1]
    s2 = np.ones(W2.shape[0])
    for j in rows:
        s2[j] = 1.0 / np.linalg.norm(np.append(W2[j], b2[j]))
    return Scaling(2, tuple(s2))


def _canonical_one(cur: Params, tol: float, snapped: int, snap_bound: float, thorough: bool = True):
    """:func:`_canonical` with the first-layer direction kept (``cur`` already snapped)."""
    # Whole: the numbered steps of the canonical form in order, each threading path and before
    path: list[Symmetry] = []
    before: list[Params] = []
    info = analyze_bottleneck(cur, tol)
    # 0. a hidden hyperplane reached by turning crossing rows around: turn them
    if info.hidden is None and info.crossing:
        ho = _hiding_orientation(cur, row_signs(cur, tol), info.crossing, tol)
        if ho is not None:
            cur = _reorient(path, before, cur, ho[1], np.zeros((0, info.n1)), tol)
            info = analyze_bottleneck(cur, tol)
    n1, n3 = info.n1, info.n3
    i = info.hidden
    # 1. dead rows
    canon_row = (0.0,) * n1 + (-1.0,)
    for j in info.dead:
        (W2, b2), (W3, _) = cur[1], cur[2]
        if tuple(W2[j]) + (float(b2[j]),) != canon_row or np.any(W3[:, j] != 0):
            cur = _step(path, before, cur, DeadNeuronMove(j, canon_row, (0.0,) * n3), tol)
    # 2. flips around the hidden hyperplane
    if i is not None and info.flippable:
        W1 = cur[0][0]
        turn = tuple(k for k in info.flippable if _orientation_key(W1[k]) < 0)
        if turn:
            cur = _step(path, before, cur, Flip(i, turn), tol)
    # 3. first-layer norms
    W1, b1 = cur[0]
    s = 1.0 / np.sqrt(np.sum(W1**2, axis=1) + b1**2)
    if i is not None:
        s[i] = 1.0 / np.linalg.norm(W1[i])
    cur = _step(path, before, cur, Scaling(1, tuple(s)), tol)
    # 4. translation of the hidden hyperplane
    if i is not None:
        W2, b2 = cur[1]
        live = info.crossing + info.linear
        lo = max(b2[j] / W2[j, i] for j in live)
        cur = _step(path, before, cur, HidingTranslation(i, lo + 1.0), tol)
    # 5. first-layer order (the hidden neuron first)
    W1, b1 = cur[0]
    others = [k for k in range(n1) if k != i]
    others.sort(key=lambda k: tuple(W1[k]) + (b1[k],))
    perm1 = ([i] if i is not None else []) + others
    if perm1 != list(range(n1)):
        cur = _step(path, before, cur, Permutation(1, tuple(perm1)), tol)
    # 6. second-layer norms, orientations and the always-active block
    cur = _step(path, before, cur, _unit_rows(cur, info.crossing), tol)
    block = None
    if info.linear or info.dead:
        try:
            turned = _choose_turned(cur, info, tol, thorough) if i is None else ()
            (_, _), (W2, _), (W3, _) = cur
            crossing, linear, dead = _kinds(cur, tol)
            L = W3[:, linear] @ W2[linear] + sum(
                (np.outer(W3[:, j], W2[j]) for j in turned), np.zeros((n3, n1))
            )
            # L's rounding is that of its own terms, not the network's scale
            summed = list(linear) + list(turned)
            terms = float(
                np.sum(np.linalg.norm(W3[:, summed], axis=0) * np.linalg.norm(W2[summed], axis=1))
            )
            A = block_rows(L, tol, path_norm_scale(cur), terms)
            if A.shape[0] > len(linear) + len(dead):
                raise BlockNotCovered(
                    f"the rows chosen for the always-active block "
                    f"({A.shape[0]}) exceed its {len(linear) + len(dead)} "
                    f"neurons: the cone of its linear part is too "
                    f"ill-conditioned to decide"
                )
        except BlockNotCovered as exc:
            # the form refuses; the verdict still has the block as it is (unit rows)
            block = exc.args[0]
            cur = _step(path, before, cur, _unit_rows(cur, info.linear), tol)
        else:
            cur = _reorient(path, before, cur, turned, A, tol)
    # 7. second-layer order
    W2, b2 = cur[1]
    crossing, linear, dead = _kinds(cur, tol)

    def key(j):
        return tuple(W2[j]) + (b2[j],)

    perm2 = sorted(crossing, key=key) + sorted(linear, key=key) + dead
    if perm2 != list(range(W2.shape[0])):
        cur = _step(path, before, cur, Permutation(2, tuple(perm2)), tol)
    structure = BottleneckInfo(
        n1,
        n3,
        0 if i is not None else None,
        list(range(len(crossing))),
        list(range(len(crossing), len(crossing) + len(linear))),
        list(range(len(crossing) + len(linear), len(perm2))),
        sorted(perm1.index(k) for k in info.flippable),
        block,
        snapped,
        snap_bound,
    )
    return cur, path, before, structure


def canonical_form(params: Any, *, tol: float = DEFAULT_TOL) -> Params:
    """One canonical representative of the orbit of ``params`` under the named symmetries.

    For a generic three-layer bottleneck network (``fast_path_reason(params) is None``,
    which the verdict needs; the form can still refuse when its always-active block has
    no certified orientation or rows, the reason then given):
    neurons normalized, ordered canonically, dead neurons set to ``(0, ..., 0, -1)`` with
    zero outgoing weights, crossing second-layer neurons turned to a canonical orientation,
    the always-active block refactored onto canonical nonnegative rows of the row space
    of its linear part (any number of neurons), the hidden hyperplane translated to a
    fixed position and flips turned to a fixed orientation (module docs); ``n1 = 1`` included. Two
    such networks related by the symmetries of :mod:`neuromanifold.relu.symmetries` have the
    same canonical form up to rounding. Entries of ``[W2 | b2]`` within ``tol`` of zero
    (weight decay leaves many) are set to 0 first when that moves the function by at most
    ``tol`` (docs/relu_equivalence.md §1); the result is then a point of the fiber of
    that network, within ``tol`` of ``f_params``.

    Args:
        params: ``[(W1, b1), (W2, b2), (W3, b3)]`` with ``n1 <= d``.
        tol: relative tolerance of the sign decisions (must be ``> 0``).

    Returns:
        The canonical parameters (same widths), a point of the fiber of ``params``.

    Raises:
        InputError: when the parameters are outside the generic cases covered (the message
            gives the reason); use :func:`neuromanifold.relu.equivalent` then.

    >>> P = [(np.array([[2.0, 0.0], [0.0, 3.0]]), np.array([0.0, -3.0])),
    ...      (np.array([[1.0, -1.0]]), np.array([-0.5])), (np.ones((1, 1)), np.zeros(1))]
    >>> C = canonical_form(P)   # first-layer neuron 0 is hidden: unit w_0, translated
    >>> C[0][0].round(3).tolist(), C[0][1].round(3).tolist()
    ([[1.0, 0.0], [0.0, 0.707]], [0.75, -0.707])
    """
    tol = check_tol(tol)
    params = three_layer(params, "canonical_form")
    try:
        out, _, _, info = _canonical(params, tol)
    except NotCovered as exc:
        reason = exc.args[0]
    else:
        if info.block is None:
            return out
        reason = info.block
    raise InputError(
        f"canonical_form needs a generic three-layer bottleneck network "
        f"(docs/relu_equivalence.md); here: {reason}"
    )


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class BottleneckEquivalence(Result):
    """Verdict of the polynomial-time equivalence test for bottleneck networks.

    Attributes:
        applies: whether the fast path decided (else ``equivalent`` is ``None`` and
            ``note`` says why; the exact engine must decide).
        equivalent: whether the two networks compute the same function on R^d.
        symmetry: when equivalent and the named symmetries connect them, the list of
            symmetry objects taking ``p`` to ``q`` (apply with ``apply_sequence``); else
            ``None``.
        max_parameter_difference: ``max |apply_sequence(symmetry, p) - q|`` relative to
            the path-norm scale of ``q`` (how exactly the symmetry lands on ``q``).
        witness: for "not equivalent", an input where the outputs differ by more than
            ``tol * scale * max(1, |x|_inf)``, if the search found one.
        witness_difference: ``max_o |f_p - f_q|`` at the witness.
        max_difference: for "not equivalent", the largest relative difference on the
            sample searched for a witness; when a symmetry connects them, a bound on the
            relative function difference between its image of ``p`` and ``q``
            (:func:`neuromanifold.relu._bounds.parameters.function_distance_bound`).
        certified: "equivalent" with a symmetry that applies step by step and whose image
            of ``p`` is within ``tol`` of ``q`` as a function (the bound above, plus a
            float-rounding margin), or "not equivalent" with a witness.
        tol: the relative tolerance used.
        scale: the path-norm scale (the larger of the two networks').
        method: ``"bottleneck"`` (canonical forms) or ``"none"`` when it does not apply.
        note: how the verdict was reached, in words.
    """

    applies: bool
    equivalent: bool | None
    symmetry: list | None
    max_parameter_difference: float | None
    witness: np.ndarray | None
    witness_difference: float | None
    max_difference: float | None
    certified: bool
    tol: float
    scale: float
    method: str
    note: str


def _assign(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """perm with ``A[perm]`` closest to ``B`` (rows), by an assignment on max-norm distances."""
    if len(A) == 0:
        return np.zeros(0, dtype=int)
    C = np.max(np.abs(A[None, :, :] - B[:, None, :]), axis=2)
    r, c = linear_sum_assignment(C)
    return c[np.argsort(r)]


def _layer2_invariant(cp: Params, info: BottleneckInfo):
    """Orientation-free data of layers 2-3 on the orthant: unit hyperplanes with positive
    orientation, their weights, and the affine part (the weighted arrangement)."""
    (W2, b2), (W3, b3) = cp[1], cp[2]
    n1, n3 = W2.shape[1], W3.shape[0]
    M, v = np.zeros((n3, n1)), b3.copy()
    H, w = [], []
    for j in info.crossing:
        r = np.append(W2[j], b2[j])
        c = W3[:, j] * np.linalg.norm(r)
        r = r / np.linalg.norm(r)
        if _orientation_key(r[:-1]) < 0:  # c relu(r) = c relu(-r) + c r
            M += np.outer(c, r[:-1])
            v += c * r[-1]
            r = -r
        H.append(r)
        w.append(c)
    for j in info.linear:
        M += np.outer(W3[:, j], W2[j])
        v += W3[:, j] * b2[j]
    return np.array(H).reshape(-1, n1 + 1), np.array(w).reshape(-1, n3), M, v


def _witness(p: Params, q: Params, tol: float, scale: float, seed: int = 0):
    """Search sample points (around both first layers' hyperplanes) for a difference."""
    rng = np.random.default_rng(seed)
    pts = []
    for net in (p, q):
        W1, b1 = net[0]
        pinv = np.linalg.pinv(W1) if W1.shape[0] <= 64 else W1.T @ np.linalg.inv(W1 @ W1.T)
        n1 = W1.shape[0]
        off = np.max(np.abs(b1) / np.linalg.norm(W1, axis=1)) + 1.0
        for s in (0.1, 1.0, 3.0):
            U = rng.uniform(-s * off, s * off, (64, n1)) * np.linalg.norm(W1, axis=1)
            pts.append((U - b1) @ pinv.T)
    d = p[0][0].shape[1]
    pts.append(rng.standard_normal((64, d)))
    X = np.vstack(pts)
    diff = np.max(np.abs(forward(p, X) - forward(q, X)), axis=1)
    rel = diff / (max(scale, 1e-300) * np.maximum(1.0, np.max(np.abs(X), axis=1)))
    k = int(np.argmax(rel))
    if rel[k] > tol:
        return X[k], float(diff[k]), float(rel[k])
    return None, None, float(rel[k])


def _refactor_attempt(
    cur: Params, cq: Params, ip: BottleneckInfo, iq: BottleneckInfo, align: list, land, tol: float
):
    """Connect ``cur`` (p moved, first layer aligned with ``c_q``) to ``c_q`` when the
    crossing rows agree up to sign: permute the crossing rows onto q's, refactor the
    dead and always-active neurons onto q's rows (``BlockRefactor``, carrying p's linear
    map), then turn the crossing rows that differ in sign around onto q's always-active
    block (``SecondLayerFlip``). ``None`` when a step does not apply."""
    (W2q, b2q), (W3q, _) = cq[1], cq[2]
    if cur[1][0].shape != W2q.shape or len(ip.crossing) != len(iq.crossing):
        return None
    Rq = np.hstack([W2q, b2q[:, None]])
    Rc = np.hstack([cur[1][0], cur[1][1][:, None]])
    k = len(ip.crossing)  # crossing rows come first in both canonical orders
    steps = list(align)
    try:
        if k:
            up = lambda R: R / np.linalg.norm(R, axis=1, keepdims=True)  # noqa: E731
            A, B = up(Rc[:k]), up(Rq[:k])
            cost = np.minimum(
                np.max(np.abs(A[None] - B[:, None]), axis=2),
                np.max(np.abs(A[None] + B[:, None]), axis=2),
            )
            r, c = linear_sum_assignment(cost)
            perm2 = np.arange(Rc.shape[0])
            perm2[:k] = c[np.argsort(r)]
            if np.any(perm2 != np.arange(len(perm2))):
                steps.append(Permutation(2, tuple(int(v) for v in perm2)))
                cur = steps[-1].apply(cur, tol=tol)
                Rc = np.hstack([cur[1][0], cur[1][1][:, None]])
        turned = tuple(j for j in range(k) if Rc[j] @ Rq[j] < 0)
        N = list(range(k, Rc.shape[0]))
        qlin = list(iq.linear)
        W3c = cur[2][0]
        plin = [j for j in N if np.all(Rc[j] >= 0) and np.any(Rc[j] > 0)]
        Lp = W3c[:, plin] @ cur[1][0][plin] if plin else np.zeros((W3c.shape[0], Rc.shape[1] - 1))
        out = W3q[:, N].copy()
        if turned:
            if not qlin:
                return None
            X = Lp @ np.linalg.pinv(W2q[qlin])
            for a, j in enumerate(qlin):
                out[:, N.index(j)] = X[:, a]
        if N:
            refactor = BlockRefactor(tuple(N), tuple(map(tuple, Rq[N])), tuple(map(tuple, out)))
            cur = refactor.apply(cur, tol=tol)
            steps.append(refactor)
        if turned:
            flip = SecondLayerFlip(
                turned, tuple(qlin), tuple(map(tuple, Rq[qlin])), tuple(map(tuple, W3q[:, qlin]))
            )
            cur = flip.apply(cur, tol=tol)
            steps.append(flip)
        return land(
            cur,
            steps,
            "equal after refactoring the always-active block"
            + (" and turning second-layer neurons around" if turned else ""),
        )
    except (SymmetryError, InputError):
        return None


def _inverse_path(path: list, before: list) -> list:
    return [s.inverse(b) for s, b in zip(reversed(path), reversed(before))]


def equivalent_bottleneck(p: Any, q: Any, *, tol: float = DEFAULT_TOL) -> BottleneckEquivalence:
    """Decide ``f_p == f_q`` on R^d in polynomial time for generic bottleneck networks, and
    return the symmetry taking ``p`` to ``q``.

    Both canonical forms are computed (module docs) and matched neuron by neuron (an
    assignment, so near-ties in the canonical order do not matter). Equal canonical forms
    give the symmetry ``path(p) + alignment + path(q)^-1``, which is checked by applying it.
    If only the second layers differ, the orientation-free weighted arrangement of layers
    2-3 on the orthant (a complete invariant for a fixed first layer) decides: equal means
    equivalent through a change outside the named symmetries (``symmetry=None``). A
    different first layer means not equivalent (generic first layers are identifiable up
    to the named symmetries); a sampled witness is then searched as evidence.

    Args:
        p, q: three-layer networks with the same input and output dimensions.
        tol: relative tolerance (``> 0`` for the fast path; ``0`` returns ``applies=False``).

    Returns:
        A :class:`BottleneckEquivalence`; ``applies=False`` when either network is outside
        the generic cases covered (``fast_path_reason``), so that the exact engine decides.

    >>> from neuromanifold.relu.symmetries import Scaling, apply_sequence
    >>> P = [(np.array([[2.0, 0.0], [0.0, 3.0]]), np.array([0.0, -3.0])),
    ...      (np.array([[1.0, -1.0]]), np.array([-0.5])), (np.ones((1, 1)), np.zeros(1))]
    >>> Q = apply_sequence([Scaling(1, (4.0, 0.5))], P)
    >>> r = equivalent_bottleneck(P, Q)
    >>> r.equivalent, r.certified, [s.name for s in r.symmetry]
    (True, True, ['scaling', 'hiding_translation', 'scaling', 'scaling', 'hiding_translation',
    'scaling'])
    """
    refuse_conv(p, "equivalent_bottleneck")
    refuse_conv(q, "equivalent_bottleneck")
    tol = check_tol(tol)
    p = three_layer(p, "equivalent_bottleneck")
    q = three_layer(q, "equivalent_bottleneck")
    if p[0][0].shape[1] != q[0][0].shape[1] or p[2][0].shape[0] != q[2][0].shape[0]:
        raise ArchitectureError(
            f"networks must have the same input and output dimensions to be compared; got "
            f"(d, n3) = {(p[0][0].shape[1], p[2][0].shape[0])} and "
            f"{(q[0][0].shape[1], q[2][0].shape[0])}"
        )
    scale = check_finite_result(
        max(path_norm_scale(p), path_norm_scale(q)), "the networks' scale (path norm)"
    )
    try:
        # the block's orientation is chosen quickly: without it the verdict decides from
        # the block as it is
        forms = (_canonical(p, tol, thorough=False), _canonical(q, tol, thorough=False))
    except NotCovered as exc:
        return BottleneckEquivalence(
            applies=False,
            equivalent=None,
            symmetry=None,
            max_parameter_difference=None,
            witness=None,
            witness_difference=None,
            max_difference=None,
            certified=False,
            tol=tol,
            scale=scale,
            method="none",
            note=f"fast path does not apply: {exc.args[0]}",
        )
    return _Matching(p, q, tol, scale, *forms).decide()


class _Matching:
    """The comparison of two canonical forms (:func:`equivalent_bottleneck`), step by step:
    first layers, then second layers as they are, through the always-active block's
    mixing, through turned rows or a refactoring, and last the orientation-free invariant
    of layers 2-3. Each step either lands on q (a checked symmetry) or hands on."""

    def __init__(self, p, q, tol: float, scale: float, form_p, form_q):
        self.p, self.q, self.tol, self.scale = p, q, tol, scale
        self.cp, self.path_p, _, self.ip = form_p
        self.cq, self.path_q, self.before_q, self.iq = form_q
        # a change of a normalized row moves the function's coefficients by at most the
        # change times the path weight through the neuron: compare relative to the scale
        self.atol = tol * max(scale, 1e-300)
        (W2q, b2q), (self.W3q, self.b3q) = self.cq[1], self.cq[2]
        self.Rq = np.hstack([W2q, b2q[:, None]])
        snapped = [
            (n, b)
            for n, b in (
                (self.ip.snapped, self.ip.snap_bound),
                (self.iq.snapped, self.iq.snap_bound),
            )
            if n
        ]
        self.snap_note = (
            ""
            if not snapped
            else f"; not generic: {' and '.join(str(n) for n, _ in snapped)} entries of "
            f"[W2 | b2] or second-layer neurons within tol of zero were set to 0 (moving "
            f"the function by at most "
            f"{max(b for _, b in snapped):.3g} relative)"
        )

    def result(
        self,
        equiv,
        *,
        symmetry=None,
        mpd=None,
        witness=None,
        wd=None,
        md=None,
        certified=False,
        note="",
    ) -> BottleneckEquivalence:
        return BottleneckEquivalence(
            applies=True,
            equivalent=equiv,
            symmetry=symmetry,
            max_parameter_difference=mpd,
            witness=witness,
            witness_difference=wd,
            max_difference=md,
            certified=certified,
            tol=self.tol,
            scale=self.scale,
            method="bottleneck",
            note=note + self.snap_note,
        )

    def not_equivalent(self, why: str) -> BottleneckEquivalence:
        x, wd, md = _witness(self.p, self.q, self.tol, self.scale)
        return self.result(
            False,
            witness=x,
            wd=wd,
            md=md,
            certified=x is not None,
            note=f"{why}; "
            + (
                "witness found on a sample"
                if x is not None
                else "no witness on the sample (decided by the canonical forms)"
            ),
        )

    def decide(self) -> BottleneckEquivalence:
        ip, iq = self.ip, self.iq
        if ip.n1 != iq.n1 or (ip.hidden is None) != (iq.hidden is None):
            return self.not_equivalent(
                "the first layers differ (number of neurons or hidden hyperplane)"
            )
        if ip.flippable != iq.flippable:
            return self.not_equivalent("the first layers differ (flippable neurons)")
        aligned = self.align_first_layers()
        if isinstance(aligned, BottleneckEquivalence):
            return aligned
        cur, align = aligned
        same_counts = (len(ip.crossing), len(ip.linear)) == (len(iq.crossing), len(iq.linear))
        same_shape = same_counts and cur[1][0].shape == self.Rq[:, :-1].shape
        res = None
        if same_shape and not ip.block and not iq.block:
            res = self.land(cur, align, "equal canonical forms")
        elif same_shape and ip.linear:
            res = self.through_block_mixing(cur, align)
        if res is not None:
            return res
        return self.by_layer2_invariant(cur, align, same_shape and not ip.block and not iq.block)

    def align_first_layers(self):
        """``(cur, align)``: p's canonical form with its first layer permuted onto q's (the
        hidden neuron sits at 0 in both), or the verdict when the first layers differ."""
        ip, cp, cq = self.ip, self.cp, self.cq
        (W1p, b1p), (W1q, b1q) = cp[0], cq[0]
        F1p, F1q = np.hstack([W1p, b1p[:, None]]), np.hstack([W1q, b1q[:, None]])
        start = 0 if ip.hidden is None else 1
        perm1 = np.concatenate(
            [np.arange(start), start + _assign(F1p[start:], F1q[start:])]
        ).astype(int)
        pw1 = np.maximum(
            np.max(np.abs(cp[2][0]) @ np.abs(cp[1][0]), axis=0)[perm1],
            np.max(np.abs(cq[2][0]) @ np.abs(cq[1][0]), axis=0),
        )
        d1 = float(np.max(np.max(np.abs(F1p[perm1] - F1q), axis=1) * pw1))
        if d1 > self.atol:
            return self.not_equivalent(
                f"the first layers differ (by {d1 / self.scale:.3g} relative to the "
                f"scale, weighted by the paths through each neuron)"
            )
        align: list[Symmetry] = []
        cur = cp
        if np.any(perm1 != np.arange(ip.n1)):
            align.append(Permutation(1, tuple(int(v) for v in perm1)))
            cur = align[-1].apply(cur, tol=self.tol)
        return cur, align

    def land(self, cur, steps, how):
        """The symmetry p -> q if ``cur`` (p moved by ``path_p + steps``) matches ``c_q`` up
        to a permutation of the second layer, else None."""
        ip, Rq, W3q, tol = self.ip, self.Rq, self.W3q, self.tol
        (W2p, b2p), (W3p, b3p) = cur[1], cur[2]
        Rp = np.hstack([W2p, b2p[:, None]])
        perm2 = np.arange(W2p.shape[0])
        for grp in (ip.crossing, ip.linear):
            g = np.array(grp, dtype=int)
            perm2[g] = g[_assign(Rp[g], Rq[g])]
        pw2 = np.maximum(np.max(np.abs(W3p[:, perm2]), axis=0), np.max(np.abs(W3q), axis=0))
        d2 = float(np.max(np.max(np.abs(Rp[perm2] - Rq), axis=1) * pw2))
        d3 = max(float(np.max(np.abs(W3p[:, perm2] - W3q))), float(np.max(np.abs(b3p - self.b3q))))
        if d2 > self.atol or d3 > self.atol:
            return None
        steps = list(steps)
        if np.any(perm2 != np.arange(len(perm2))):
            steps.append(Permutation(2, tuple(int(v) for v in perm2)))
        sym = self.path_p + steps + _inverse_path(self.path_q, self.before_q)
        try:
            got = apply_sequence(sym, self.p, tol=tol)
        except SymmetryError:  # pragma: no cover - would be a bug
            return None
        qs = max(path_norm_scale(self.q), 1e-300)
        mpd = (
            max(
                float(np.max(np.abs(a - b)))
                for (Wa, ba), (Wb, bb) in zip(got, self.q)
                for a, b in ((Wa, Wb), (ba, bb))
            )
            / qs
        )
        # the image of p computes f_p; how far can its remaining difference from q move
        # the function? (a parameter difference within tol need not be a function one)
        md = function_distance_bound(got, self.q) / max(path_norm_scale(self.p), qs)
        ok = md + SYMMETRY_ROUNDING <= tol
        return self.result(
            True,
            symmetry=sym,
            mpd=mpd,
            md=md,
            certified=ok,
            note=f"{how}; {len(sym)} named symmetries take p to q, up to a "
            f"function difference of at most {md:.3g} relative"
            + ("" if ok else f" (above tol {tol:g}: not certified)"),
        )

    def through_block_mixing(self, cur, align):
        """A block without canonical form: after matching the crossing rows, the mixing
        that takes p's block rows onto q's (least squares, checked by applying it)."""
        ip, Rq, tol = self.ip, self.Rq, self.tol
        Rc = np.hstack([cur[1][0], cur[1][1][:, None]])
        g = np.array(ip.crossing, dtype=int)
        perm2 = np.arange(Rc.shape[0])
        perm2[g] = g[_assign(Rc[g], Rq[g])]
        steps = list(align)
        moved = cur
        if np.any(perm2 != np.arange(len(perm2))):
            steps.append(Permutation(2, tuple(int(v) for v in perm2)))
            moved = steps[-1].apply(moved, tol=tol)
        A = list(ip.linear)
        Wa, ba = moved[1][0][A], moved[1][1][A]
        Mx = Rq[A, :-1] @ np.linalg.pinv(Wa)
        try:
            mix = LinearBlockMixing(tuple(A), Mx, tuple(Rq[A, -1] - Mx @ ba))
            return self.land(
                mix.apply(moved, tol=tol),
                steps + [mix],
                "equal up to the mixing of the always-active block",
            )
        except (SymmetryError, InputError):
            return None

    def by_layer2_invariant(self, cur, align, same_shape: bool) -> BottleneckEquivalence:
        """Same first layer, different second layer: the orientation-free invariant of
        layers 2-3 on the orthant decides; a named symmetry is searched where it holds."""
        ip, iq, atol = self.ip, self.iq, self.atol
        Hp, wp, Mp, vp = _layer2_invariant(cur, ip)
        Hq, wq, Mq, vq = _layer2_invariant(self.cq, iq)
        if len(Hp) != len(Hq):
            return self.not_equivalent(_LAYER2_DIFFER)
        pr = _assign(Hp, Hq)
        rows_agree = len(Hp) == 0 or (
            np.max(
                np.max(np.abs(Hp[pr] - Hq), axis=1)
                * np.maximum(np.max(np.abs(wp[pr]), axis=1), np.max(np.abs(wq), axis=1))
            )
            <= atol
            and np.max(np.abs(wp[pr] - wq)) <= atol
        )
        if not (rows_agree and np.max(np.abs(Mp - Mq)) <= atol and np.max(np.abs(vp - vq)) <= atol):
            return self.not_equivalent(_LAYER2_DIFFER)
        if same_shape and ip.linear:
            res = self.through_turned_rows(cur, align)
            if res is not None:
                return res
        res = _refactor_attempt(cur, self.cq, ip, iq, align, self.land, self.tol)
        if res is not None:
            return res
        return self.result(
            True,
            md=0.0,
            certified=False,
            note="same first layer and same weighted arrangement of layers 2-3 "
            "on the orthant, but the named symmetries do not connect the "
            "two (second-layer orientations or the always-active block "
            "differ, or the widths differ)",
        )

    def through_turned_rows(self, cur, align):
        """Turn the crossing rows that differ in sign around (``SecondLayerFlip``)."""
        ip, iq, Rq = self.ip, self.iq, self.Rq
        Rc = np.hstack([cur[1][0], cur[1][1][:, None]])
        C = Rc[ip.crossing] @ Rq[iq.crossing].T
        turned = tuple(
            int(ip.crossing[a])
            for a in range(len(ip.crossing))
            if C[a, int(np.argmax(np.abs(C[a])))] < 0
        )
        if not turned:
            return None
        flip = SecondLayerFlip(
            turned,
            tuple(ip.linear),
            tuple(map(tuple, Rq[iq.linear])),
            tuple(map(tuple, self.W3q[:, iq.linear])),
        )
        try:
            return self.land(
                flip.apply(cur, tol=self.tol),
                align + [flip],
                "equal canonical forms after turning second-layer neurons around",
            )
        except SymmetryError:
            return None


_LAYER2_DIFFER = (
    "same first layer, but the weighted arrangements of layers 2-3 on the orthant differ"
)
