"""Linear bound propagation: bounds of a ReLU network's neurons, or of two networks'
difference, by linear relaxations carried back to the input (CROWN, DeepPoly), rigorous in
floating point.

A network is a :class:`Chain` of affine maps ``pre_j = A_j post_(j-1) + c_j`` (``post_(-1)``
the input) and, between them, a ReLU-like map ``post_j = phi(pre_j)`` that a
:class:`Relaxation` encloses by two linear functions of ``pre_j``. An upper bound of a
linear function ``lambda . pre_k`` over a box is found by substituting backwards: the
affine map replaces ``pre_j`` by ``post_(j-1)``, the relaxation replaces ``post_(j-1)``
by ``pre_(j-1)`` (the upper function where the coefficient is positive, the lower one where
it is negative), down to the input, where a linear function's maximum over the box is read
off its signs. Intermediate neurons' bounds, which the relaxations need, are found the
same way, layer by layer.

Three chains share that one engine:

* :func:`network_chain`: one network, the triangle relaxation of every unstable ReLU
  (upper: the chord; lower: ``slope * z`` with ``slope`` 0 or 1, CROWN's adaptive choice,
  or any given slope in [0, 1], the alpha of alpha-CROWN).
* :func:`product_chain`: two networks of one depth side by side, the output their
  difference: what a single-network verifier bounds when given ``f - g``.
* :func:`difference_chain`: two networks of one architecture, neuron paired with neuron
  (align them first: a permuted copy must be permuted back), carrying each neuron's
  pre-activation ``a`` in the first network and its *difference* ``d`` to the second
  (ReluDiff, NeuroDiff): ``delta = relu(a + d) - relu(a)`` lies between ``min(0, d)``
  and ``max(0, d)``, is ``d``, ``0``, ``a + d`` or ``-a`` when both neurons are stable,
  and is at least ``d`` (at most ``d``) when the first (second) neuron is active; when
  one neuron is stable, the other's own triangle relaxation (in ``a`` and ``d``) is
  taken where it is the tighter, and when both are unstable the two triangles' sides
  (``relu(a + d)``'s upper side minus ``relu(a)``'s lower one, and the other way) where
  their gaps together are smaller than ``d``'s, so the bound closes as the box shrinks
  (two nearly equal networks' neurons cross zero in every box around their hyperplanes,
  where ``max(0, d)``'s gap stays of the size of ``d``). Two nearly equal networks get a
  bound of the size of their difference instead of the difference of two large bounds.

:func:`optimize_slopes` chooses the lower slopes of the unstable ReLUs for the chain's
outputs (alpha-CROWN's alpha, the hidden layers' bounds held fixed): projected Adam on the
gradient of the float bound, found by running the back substitution in reverse. Measured
on ACAS Xu against its pruned and perturbed copies (difference chain, VNN-COMP's box): the
root bound moves by under 1 % (the looseness is in the hidden layers' bounds of ``d``) and
the branch and bound, which pays the optimization on every box, reaches a looser upper end
in the same time, so it is off by default (``alpha_steps`` of the branch and bound); on
random networks and their side-by-side product it tightens the bound by 20-25 %.

The hidden layers' rows that a box's known bounds already settle (a stable neuron) keep
those bounds: each box substitutes back only its unsettled rows (padded to the most any box
of the batch has), and the substitution of one relaxation is one compiled pass
(:mod:`~neuromanifold.relu._bounds.kernels`): 7,800 boxes bounded in 20 s on one process
(ACAS Xu 2_2 against its 5 %-pruned copy).

Every bound is rigorous in float64: each matrix product's rounding is bounded a priori
(``gamma_n |A| |B|`` applied to bounds of the variables' magnitudes) and added to the
constant, relaxation slopes are rounded outward, and the final sum is rounded up. Batched:
every array carries a leading axis of boxes, so a branch and bound bounds many boxes in one
pass.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import numpy as np

from .._core.domain import Domain
from .interval import box_bounds

__all__ = [
    "Chain",
    "Relaxation",
    "network_chain",
    "product_chain",
    "difference_chain",
    "bound_linear",
    "propagate",
    "optimize_slopes",
    "optimized_output_bounds",
    "neuron_bounds",
]

#: the unit roundoff of float64
_U = 2.0**-53
#: what gradual underflow can take from one product, with room
_TINY = 2.0**-1060


def _gamma(k: int) -> float:
    """The relative error bound of a k-term float dot product, with a margin."""
    return 1.01 * k * _U / (1 - k * _U)


@dataclasses.dataclass(frozen=True)
class Relaxation:
    """Two linear functions enclosing ``post = phi(pre)`` on a layer's box, per box of the
    batch: ``L pre + l0 <= post <= U pre + u0``.

    The layer's neurons come in ``P`` blocks of one size (one network: 1 block; two
    networks: 2); ``U[i][j]`` is the diagonal (shape ``(B, n)``) by which block ``j`` of
    ``pre`` enters block ``i`` of ``post``, or ``None`` for zero. ``post_abs`` and
    ``pre_abs`` bound the magnitudes of the variables (for the rounding bounds)."""

    U: list
    u0: np.ndarray
    L: list
    l0: np.ndarray
    post_abs: np.ndarray
    pre_abs: np.ndarray
    #: the blocks ``i`` whose ``L[i][i]`` is the lower slope the chain's ``relax`` takes
    #: (in the order of its ``slopes`` argument), for :func:`optimize_slopes`
    slope_blocks: tuple = ()

    @functools.cached_property
    def blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """``U`` and ``L`` as dense ``(P, P, B, n)`` arrays (zeros for ``None``), as the
        compiled substitution reads them."""
        P = len(self.U)
        B, n = self.u0.shape[0], self.u0.shape[1] // P
        U, L = np.zeros((P, P, B, n)), np.zeros((P, P, B, n))
        for i in range(P):
            for j in range(P):
                if self.U[i][j] is not None:
                    U[i, j] = self.U[i][j]
                if self.L[i][j] is not None:
                    L[i, j] = self.L[i][j]
        return U, L

    def substitute(self, M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For coefficients ``M`` (``(B, r, P n)``) on ``post``: the coefficients on
        ``pre`` and the constant of the upper bound of ``M post``, and a bound on the
        rounding error of both (applied to ``|pre|``): each coefficient takes the upper
        relaxation where it is positive, the lower one where it is negative."""
        from .kernels import substitute_kernel  # start-up: numba loads on first use

        P = len(self.U)
        U, L = self.blocks
        return substitute_kernel(
            np.ascontiguousarray(M, dtype=float),
            U,
            L,
            self.u0,
            self.l0,
            self.pre_abs,
            _gamma(2 * P + 1),
            _gamma(M.shape[-1] + 1),
        )

    def forward(self, Up: np.ndarray, Lo: np.ndarray, xa1: np.ndarray) -> tuple:
        """The symbolic bounds of ``post`` (linear functions of the input, ``(B, P n,
        d + 1)``, the constant last) from those of ``pre``: where a relaxation's
        coefficient is negative the other side of ``pre`` enters. ``xa1`` is ``(|x|, 1)``'s
        bound, for the rounding."""
        P = len(self.U)
        n = Up.shape[1] // P
        post_up, post_lo = np.zeros_like(Up), np.zeros_like(Lo)
        size = (np.abs(Up) + np.abs(Lo)) @ xa1[:, :, None]  # (B, P n, 1)
        err = np.zeros(Up.shape[:2])
        for i in range(P):
            rows = slice(i * n, (i + 1) * n)
            for j in range(P):
                cols = slice(j * n, (j + 1) * n)
                for D, hi_side, lo_side, out in (
                    (self.U[i][j], Up, Lo, post_up),
                    (self.L[i][j], Lo, Up, post_lo),
                ):
                    if D is None:
                        continue
                    Dp, Dn = np.maximum(D, 0.0)[:, :, None], np.minimum(D, 0.0)[:, :, None]
                    out[:, rows] += Dp * hi_side[:, cols] + Dn * lo_side[:, cols]
                    err[:, rows] += np.abs(D) * size[:, cols, 0]
        post_up[..., -1] += self.u0
        post_lo[..., -1] += self.l0
        err = _gamma(2 * P + 2) * (err + np.abs(self.u0) + np.abs(self.l0))
        post_up[..., -1] += err
        post_lo[..., -1] -= err
        return post_up, post_lo


def _matvec(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``M[b] @ v[b]`` for every box ``b``: ``(B, r, n), (B, n) -> (B, r)``."""
    return (M @ v[:, :, None])[..., 0]


@dataclasses.dataclass(frozen=True)
class Chain:
    """A piecewise-linear network as affine maps and relaxations (see the module docs).

    Attributes:
        affine: ``(A_j, c_j)`` per layer, the output layer last.
        bound_rows: per hidden layer, the rows ``T`` whose bounds ``T pre_j`` the
            relaxation needs.
        relax: ``relax(j, lower, upper, slopes)`` -> the :class:`Relaxation` of hidden
            layer ``j`` from the bounds of its ``bound_rows``; ``slopes`` (or ``None``)
            are the lower relaxations' slopes in [0, 1] (see :func:`network_chain`).
        outputs: rows ``R`` on the output layer's ``pre``: the quantities bounded are
            ``R pre_out`` (both signs are asked for separately).
        settled: ``settled(lower, upper)`` -> per box, the bound rows whose relaxation
            known bounds already make exact (a stable neuron): a box's halves need no new
            bounds of those (``None``: every row is bounded again).
    """

    affine: list
    bound_rows: list
    relax: Callable
    outputs: np.ndarray
    settled: Callable | None = None

    @property
    def depth(self) -> int:
        return len(self.affine)


def bound_linear(
    chain: Chain,
    C: np.ndarray,
    k: int,
    relaxations: Sequence[Relaxation],
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous upper bounds of ``C pre_k`` (``C``: ``(B, r, n_k)``) over the boxes
    ``[lo, hi]`` (``(B, d)``), substituting backwards through ``relaxations`` (those of
    the hidden layers before ``k``). Returns the bounds ``(B, r)`` and the linear
    function of the input they come from (``(B, r, d)``)."""
    lam = C
    B, r = C.shape[:2]
    const = np.zeros((B, r))
    err = np.zeros((B, r))
    x_abs = np.maximum(np.abs(lo), np.abs(hi))
    for j in range(k, -1, -1):
        A, c = chain.affine[j]
        # one product for the coefficients and the constant, as one 2-D matrix product
        Ac = np.hstack([A, c[:, None]])
        prod = (lam.reshape(-1, lam.shape[-1]) @ Ac).reshape(lam.shape[:-1] + (Ac.shape[1],))
        M, add = prod[..., :-1], prod[..., -1]
        post_abs = x_abs if j == 0 else relaxations[j - 1].post_abs
        # gamma_(n+2): the dot product's rounding, and one rounding of A's and c's entries
        # (a difference chain's weight differences are rounded once)
        size = _gamma(c.size + 2) * np.abs(c) + _gamma(A.shape[1] + 2) * (post_abs @ np.abs(A).T)
        err += _matvec(np.abs(lam), size) + _U * (np.abs(const) + np.abs(add))
        const = const + add
        if j == 0:
            break
        lam, add, e = relaxations[j - 1].substitute(M)
        err += e + _U * (np.abs(const) + np.abs(add)) + _TINY * M.shape[-1]
        const = const + add
    Mp, Mn = np.maximum(M, 0.0), np.minimum(M, 0.0)
    val = _matvec(Mp, hi) + _matvec(Mn, lo) + const
    err += _gamma(lo.shape[1] + 2) * (_matvec(np.abs(M), x_abs) + np.abs(const))
    up = val + err * (1 + 1e-9) + _TINY * (M.shape[-1] + 1)
    return up + 4 * _U * np.abs(up), M


def propagate(
    chain: Chain,
    lo: np.ndarray,
    hi: np.ndarray,
    slopes: Sequence | None = None,
    *,
    intermediate: str = "backward",
    prior: Sequence | None = None,
) -> tuple[list, np.ndarray, np.ndarray]:
    """Bound every hidden layer's ``bound_rows`` (layer by layer, each from the
    relaxations of the layers before), then the chain's outputs, over the boxes
    ``[lo, hi]`` (``(B, d)``).

    ``intermediate`` says how the hidden layers are bounded: ``"backward"`` substitutes
    back to the input for every layer (CROWN; its cost grows with the square of the depth),
    ``"forward"`` carries a lower and an upper linear function of the input through the
    layers (symbolic intervals; looser, and far cheaper on a low-dimensional input, where
    a branch and bound wants many small boxes). The outputs are always substituted back.
    ``prior``: bounds already known per hidden layer (a parent box's, which hold on its
    halves), intersected with the new ones before the relaxations are built.

    Returns:
        ``(bounds, upper, M)``: per hidden layer ``(lower, upper)`` of its bound rows
        (``(B, t)`` each); the upper bounds of ``+R pre_out`` and ``-R pre_out`` stacked
        (``(B, 2 m)``); and their linear functions of the input (``(B, 2 m, d)``).
    """
    B, d = lo.shape
    relaxations, bounds = [], []
    if intermediate == "forward":
        xa1 = np.concatenate([np.maximum(np.abs(lo), np.abs(hi)), np.ones((B, 1))], axis=1)
        post_up = np.zeros((B, d, d + 1))
        post_up[:, np.arange(d), np.arange(d)] = 1.0
        post_lo = post_up
    for j, T in enumerate(chain.bound_rows):
        t = T.shape[0]
        if intermediate == "forward":
            A, c = chain.affine[j]
            pre_up, pre_lo = _affine_forward(A, c, post_up, post_lo, xa1)
            rows_up, rows_lo = _affine_forward(T, np.zeros(t), pre_up, pre_lo, xa1)
            upper = _concretize(rows_up, lo, hi, xa1)
            lower = -_concretize(-rows_lo, lo, hi, xa1)
        else:
            if prior is None or chain.settled is None:
                C = np.broadcast_to(np.concatenate([T, -T]), (B, 2 * t, T.shape[1]))
                up, _ = bound_linear(chain, C, j, relaxations, lo, hi)
                upper, lower = up[:, :t], -up[:, t:]
            else:
                lower, upper = _unsettled_bounds(chain, j, T, relaxations, lo, hi, prior[j])
        if prior is not None:
            lower, upper = np.maximum(lower, prior[j][0]), np.minimum(upper, prior[j][1])
        bounds.append((lower, upper))
        relaxations.append(chain.relax(j, lower, upper, None if slopes is None else slopes[j]))
        if intermediate == "forward":
            post_up, post_lo = relaxations[-1].forward(pre_up, pre_lo, xa1)
    R = chain.outputs
    C = np.broadcast_to(np.concatenate([R, -R]), (B, 2 * R.shape[0], R.shape[1]))
    upper, M = bound_linear(chain, C, chain.depth - 1, relaxations, lo, hi)
    return bounds, upper, M


def _unsettled_bounds(chain: Chain, j: int, T: np.ndarray, relaxations, lo, hi, known):
    """Bounds of layer ``j``'s bound rows where rows a box has settled keep their known
    bounds: each box substitutes back only as many rows as the box of the batch with the
    most unsettled ones (its own unsettled rows first, then settled ones, whose fresh bounds
    are as valid), a third of the rows of the union over the batch on ACAS Xu's small
    boxes, where the back substitution is the cost."""
    settled = chain.settled(*known)
    lower, upper = known[0].copy(), known[1].copy()
    R = int(np.max(np.sum(~settled, axis=1), initial=0))
    if R == 0:
        return lower, upper
    # a stable sort puts every box's unsettled rows (False) first
    order = np.argsort(settled, axis=1, kind="stable")[:, :R]
    rows = T[order]
    up, _ = bound_linear(chain, np.concatenate([rows, -rows], axis=1), j, relaxations, lo, hi)
    new_up, new_lo = up[:, :R], -up[:, R:]
    np.put_along_axis(upper, order, np.minimum(np.take_along_axis(upper, order, 1), new_up), 1)
    np.put_along_axis(lower, order, np.maximum(np.take_along_axis(lower, order, 1), new_lo), 1)
    return lower, upper


# -- optimized slopes (alpha) ---------------------------------------------------------------

#: steps of the slopes' optimization, and its Adam step size (slopes live in [0, 1])
ALPHA_STEPS = 20
_ALPHA_RATE = 0.1


def _output_bound(chain: Chain, relaxations: Sequence, lo: np.ndarray, hi: np.ndarray):
    """The float bounds of the chain's outputs (both signs, ``(B, 2 m)``) by back
    substitution, without the rounding terms, and what the gradient needs: the
    coefficients ``M_j`` met at every affine map."""
    R = chain.outputs
    B = lo.shape[0]
    lam = np.broadcast_to(np.concatenate([R, -R]), (B, 2 * R.shape[0], R.shape[1]))
    const = np.zeros(lam.shape[:2])
    Ms = {}
    for j in range(chain.depth - 1, -1, -1):
        A, c = chain.affine[j]
        const = const + lam @ c
        M = lam @ A
        Ms[j] = M
        if j == 0:
            break
        rel = relaxations[j - 1]
        lam, add, _ = rel.substitute(M)
        const = const + add
    M = Ms[0]
    val = _matvec(np.maximum(M, 0.0), hi) + _matvec(np.minimum(M, 0.0), lo) + const
    return val, Ms


def _substitute_gradient(rel: Relaxation, M: np.ndarray, g_lam: np.ndarray, w: np.ndarray):
    """The reverse of :meth:`Relaxation.substitute`: from the gradient on its coefficients
    on ``pre`` (and ``w`` on its constant) the gradient on ``M`` and on its slopes."""
    P = len(rel.U)
    n = M.shape[-1] // P
    pos = M > 0
    Mn = np.where(pos, 0.0, M)
    g_M = np.zeros_like(M)
    g_slope = []
    for i in range(P):
        rows = slice(i * n, (i + 1) * n)
        for j in range(P):
            cols = slice(j * n, (j + 1) * n)
            if rel.U[i][j] is not None:
                g_M[..., rows] += np.where(
                    pos[..., rows], g_lam[..., cols] * rel.U[i][j][:, None], 0
                )
            if rel.L[i][j] is not None:
                g_M[..., rows] += np.where(
                    pos[..., rows], 0, g_lam[..., cols] * rel.L[i][j][:, None]
                )
    for i in rel.slope_blocks:
        rows = slice(i * n, (i + 1) * n)
        g_slope.append(np.sum(Mn[..., rows] * g_lam[..., rows], axis=1))
    g_M += w[..., None] * np.where(pos, rel.u0[:, None, :], rel.l0[:, None, :])
    return g_M, np.concatenate(g_slope, axis=1)


def optimize_slopes(
    chain: Chain, lo: np.ndarray, hi: np.ndarray, bounds: Sequence, *, steps: int = ALPHA_STEPS
) -> list:
    """Lower-relaxation slopes (alpha-CROWN's alpha) that lower the bound of the chain's
    largest output row, per box, the hidden layers' ``bounds`` (from :func:`propagate`)
    held fixed: projected Adam on the float bound's gradient, the best slopes of every box
    kept. Any slopes in [0, 1] give a valid relaxation, so the rigorous bound is the one
    :func:`propagate` then computes with them."""
    slopes = []
    for j, (lower, upper) in enumerate(bounds):
        rel = chain.relax(j, lower, upper, None)
        slopes.append(np.concatenate([rel.L[i][i] for i in rel.slope_blocks], axis=1))
    moment = [np.zeros_like(s) for s in slopes]
    second = [np.zeros_like(s) for s in slopes]
    best = [s.copy() for s in slopes]
    best_val = np.full(lo.shape[0], np.inf)
    for step in range(1, steps + 1):
        rels = [chain.relax(j, l, u, s) for j, ((l, u), s) in enumerate(zip(bounds, slopes))]
        val, Ms = _output_bound(chain, rels, lo, hi)
        top = np.argmax(val, axis=1)
        obj = val[np.arange(len(top)), top]
        better = obj < best_val
        best_val = np.where(better, obj, best_val)
        for b, s in zip(best, slopes):
            b[better] = s[better]
        if step == steps:
            break
        w = np.zeros_like(val)
        w[np.arange(len(top)), top] = 1.0
        M = Ms[0]
        g_M = w[..., None] * np.where(M > 0, hi[:, None, :], lo[:, None, :])
        for j in range(chain.depth):
            A, c = chain.affine[j]
            g_lam = g_M @ A.T + w[..., None] * c
            if j == chain.depth - 1:
                break
            g_M, g = _substitute_gradient(rels[j], Ms[j + 1], g_lam, w)
            # Adam, projected on [0, 1]
            moment[j] = 0.9 * moment[j] + 0.1 * g
            second[j] = 0.999 * second[j] + 0.001 * g * g
            mh = moment[j] / (1 - 0.9**step)
            vh = second[j] / (1 - 0.999**step)
            slopes[j] = np.clip(slopes[j] - _ALPHA_RATE * mh / (np.sqrt(vh) + 1e-12), 0.0, 1.0)
    return best


def optimized_output_bounds(
    chain: Chain, lo: np.ndarray, hi: np.ndarray, bounds: Sequence, *, steps: int = ALPHA_STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous upper bounds of the chain's outputs (both signs, ``(B, 2 m)``) and their
    linear functions of the input, with the slopes of :func:`optimize_slopes` and the
    hidden layers' ``bounds`` as given."""
    slopes = optimize_slopes(chain, lo, hi, bounds, steps=steps)
    rels = [chain.relax(j, l, u, s) for j, ((l, u), s) in enumerate(zip(bounds, slopes))]
    R = chain.outputs
    C = np.broadcast_to(np.concatenate([R, -R]), (lo.shape[0], 2 * R.shape[0], R.shape[1]))
    return bound_linear(chain, C, chain.depth - 1, rels, lo, hi)


def _affine_forward(A, c, up, lo, xa1) -> tuple[np.ndarray, np.ndarray]:
    """Symbolic bounds of ``A v + c`` from those of ``v`` (``(B, m, d + 1)``), the
    rounding of the products bounded and moved into the constants."""
    Ap, An = np.maximum(A, 0.0), np.minimum(A, 0.0)
    new_up, new_lo = Ap @ up + An @ lo, Ap @ lo + An @ up
    size = ((np.abs(up) + np.abs(lo)) @ xa1[:, :, None])[..., 0]  # (B, m)
    err = _gamma(A.shape[1] + 3) * (size @ np.abs(A).T + np.abs(c))
    new_up[..., -1] += c + err
    new_lo[..., -1] += c - err
    return new_up, new_lo


def _concretize(S: np.ndarray, lo: np.ndarray, hi: np.ndarray, xa1: np.ndarray) -> np.ndarray:
    """The rigorous maximum over the boxes of the linear functions ``S`` (``(B, t, d + 1)``,
    the constant last)."""
    coef, const = S[..., :-1], S[..., -1]
    val = _matvec(np.maximum(coef, 0.0), hi) + _matvec(np.minimum(coef, 0.0), lo) + const
    err = _gamma(lo.shape[1] + 2) * _matvec(np.abs(S), xa1)
    up = val + err * (1 + 1e-9) + _TINY * S.shape[-1]
    return up + 4 * _U * np.abs(up)


# -- relaxations ------------------------------------------------------------------------


def _relu_relaxation(lo: np.ndarray, hi: np.ndarray, slope: np.ndarray | None) -> tuple:
    """The triangle relaxation of ``relu`` on ``[lo, hi]`` (per neuron): upper slope and
    intercept (the chord, rounded outward), lower slope (``slope`` where unstable, default
    CROWN's adaptive 1 if ``hi >= -lo`` else 0; 1 where active, 0 where inactive)."""
    on, off = lo >= 0, hi <= 0
    unstable = ~(on | off)
    with np.errstate(all="ignore"):
        s = np.where(unstable, hi / (hi - lo) * (1 + 8 * _U), 0.0)
        t = np.where(unstable, np.nextafter(-s * lo, np.inf), 0.0)
    s = np.where(on, 1.0, s)
    if slope is None:
        slope = (hi >= -lo).astype(float)
    lower = np.where(on, 1.0, np.where(off, 0.0, np.clip(slope, 0.0, 1.0)))
    return s, t, lower


def _stable(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Rows of stable ReLUs (their relaxation is the ReLU itself)."""
    return (lower >= 0) | (upper <= 0)


def _both_stable(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Rows ``(a, d, a + d)`` of neurons stable in both networks (``delta`` is then linear
    in ``(a, d)`` and ``relu(a)`` is ``a`` or 0): all three rows are settled."""
    n = lower.shape[1] // 3
    both = _stable(lower[:, :n], upper[:, :n]) & _stable(lower[:, 2 * n :], upper[:, 2 * n :])
    return np.concatenate([both, both, both], axis=1)


class _NetworkRelax:
    """The relaxations of one network's ReLUs (a class, not a closure: chains are sent to
    worker processes)."""

    def __call__(self, j, lower, upper, slope) -> Relaxation:
        s, t, sl = _relu_relaxation(lower, upper, slope)
        return Relaxation(
            U=[[s]],
            u0=t,
            L=[[sl]],
            l0=np.zeros_like(t),
            post_abs=np.maximum(upper, 0.0),
            pre_abs=np.maximum(np.abs(lower), np.abs(upper)),
            slope_blocks=(0,),
        )


def network_chain(params: Sequence) -> Chain:
    """One ReLU network (float64 ``(W, b)`` pairs): its output rows are the identity."""
    affine = [(np.asarray(W, float), np.asarray(b, float)) for W, b in params]
    rows = [np.eye(W.shape[0]) for W, _ in affine[:-1]]
    return Chain(
        affine=affine,
        bound_rows=rows,
        relax=_NetworkRelax(),
        outputs=np.eye(affine[-1][0].shape[0]),
        settled=_stable,
    )


def _stack(blocks: list) -> np.ndarray:
    return np.block(blocks)


class _ProductRelax:
    """The relaxations of two networks' ReLUs side by side (p's neurons first)."""

    def __call__(self, j, lower, upper, slope) -> Relaxation:
        s, t, sl = _relu_relaxation(lower, upper, slope)
        n = s.shape[1] // 2
        return Relaxation(
            U=[[s[:, :n], None], [None, s[:, n:]]],
            u0=t,
            L=[[sl[:, :n], None], [None, sl[:, n:]]],
            l0=np.zeros_like(t),
            post_abs=np.maximum(upper, 0.0),
            pre_abs=np.maximum(np.abs(lower), np.abs(upper)),
            slope_blocks=(0, 1),
        )


def product_chain(p: Sequence, q: Sequence) -> Chain:
    """Two networks of one depth side by side (hidden layer ``j`` holds both networks'
    neurons, p's first, padded to one width); the outputs are ``f_q - f_p``."""
    P = [(np.asarray(W, float), np.asarray(b, float)) for W, b in p]
    Q = [(np.asarray(W, float), np.asarray(b, float)) for W, b in q]
    widths = [max(Wp.shape[0], Wq.shape[0]) for (Wp, _), (Wq, _) in zip(P, Q)]
    affine = []
    prev = None
    for j, ((Wp, bp), (Wq, bq)) in enumerate(zip(P, Q)):
        n = widths[j]
        if j == len(P) - 1:
            n = Wp.shape[0]
        A = np.zeros((2 * n, Wp.shape[1] if prev is None else 2 * prev))
        c = np.zeros(2 * n)
        if prev is None:
            A[: Wp.shape[0]], A[n : n + Wq.shape[0]] = Wp, Wq
        else:
            A[: Wp.shape[0], : Wp.shape[1]] = Wp
            A[n : n + Wq.shape[0], prev : prev + Wq.shape[1]] = Wq
        c[: Wp.shape[0]], c[n : n + Wq.shape[0]] = bp, bq
        affine.append((A, c))
        prev = n

    m = P[-1][0].shape[0]
    rows = [np.eye(2 * n) for n in widths[:-1]]
    return Chain(
        affine=affine,
        bound_rows=rows,
        relax=_ProductRelax(),
        outputs=np.hstack([-np.eye(m), np.eye(m)]),
        settled=_stable,
    )


def _difference_relaxation(al, au, dl, du, bl, bu, slope) -> Relaxation:
    """The relaxation of ``(r, delta) = (relu(a), relu(a + d) - relu(a))`` from bounds of
    ``a``, ``d`` and ``b = a + d`` (see the module docs for the cases)."""
    s, t, sl = _relu_relaxation(al, au, slope)
    z = np.zeros_like(al)
    one = np.ones_like(al)
    pon, poff, qon, qoff = al >= 0, au <= 0, bl >= 0, bu <= 0
    split = (dl < 0) & (du > 0)
    with np.errstate(all="ignore"):
        lam = np.where(split, du / (du - dl) * (1 + 8 * _U), 0.0)
        lam0 = np.where(split, np.nextafter(-lam * dl, np.inf), 0.0)
        mu = np.where(split, -dl / (du - dl) * (1 + 8 * _U), 0.0)
        mu0 = np.where(split, np.nextafter(-mu * du, -np.inf), 0.0)
    # upper: max(0, d) relaxed over [dl, du]; d where the second neuron is active, 0 where
    # it is inactive
    ud = np.where(dl >= 0, one, np.where(du <= 0, z, lam))
    u0 = np.where(dl >= 0, z, np.where(du <= 0, z, lam0))
    ud, u0 = np.where(qon, one, np.where(qoff, z, ud)), np.where(qon | qoff, z, u0)
    # lower: min(0, d) relaxed; d where the first neuron is active, 0 where it is inactive
    ld = np.where(du <= 0, one, np.where(dl >= 0, z, mu))
    l0 = np.where(du <= 0, z, np.where(dl >= 0, z, mu0))
    ld, l0 = np.where(pon, one, np.where(poff, z, ld)), np.where(pon | poff, z, l0)
    ua = la = z
    # one neuron stable, the other not: delta is the unstable one's relu (or minus it) plus
    # a linear term, and that relu's own triangle relaxation closes on a small box where
    # the bounds of d alone do not (d stays of the size of the two networks' difference);
    # taken where its gap (the chord's largest distance to the relu) is the smaller
    sb, tb, slb = _relu_relaxation(bl, bu, None)
    a_abs = np.maximum(np.abs(al), np.abs(au))
    with np.errstate(all="ignore"):
        gap_a = np.where(pon | poff, np.inf, -al * au / (au - al))
        gap_b = np.where(qon | qoff, np.inf, -bl * bu / (bu - bl))
    gap_d = np.maximum(np.abs(dl), np.abs(du))
    # q active: delta = a + d - relu(a) >= (1 - s) a + d - t
    use = qon & (gap_a < gap_d)
    c = 1.0 - s
    la, ld = np.where(use, c, la), np.where(use, 1.0, ld)
    l0 = np.where(use, np.nextafter(-t - _U * np.abs(c) * a_abs, -np.inf), l0)
    # q inactive: delta = -relu(a) >= -s a - t
    use = qoff & (gap_a < gap_d)
    la, ld, l0 = np.where(use, -s, la), np.where(use, 0.0, ld), np.where(use, -t, l0)
    # p active: delta = relu(b) - a <= (sb - 1) a + sb d + tb
    use = pon & (gap_b < gap_d)
    c = sb - 1.0
    ua, ud = np.where(use, c, ua), np.where(use, sb, ud)
    u0 = np.where(use, np.nextafter(tb + _U * np.abs(c) * a_abs, np.inf), u0)
    # p inactive: delta = relu(b) <= sb (a + d) + tb
    use = poff & (gap_b < gap_d)
    ua, ud, u0 = np.where(use, sb, ua), np.where(use, sb, ud), np.where(use, tb, u0)
    # both unstable: delta = relu(b) - relu(a) between the two triangles' sides, whose gaps
    # shrink with the box where max(0, d)'s stays of the size of d (two nearly equal
    # networks' neurons cross zero in every box around their hyperplanes)
    use = ~(pon | poff | qon | qoff) & (gap_a + gap_b < gap_d)
    c = sb - sl  # delta <= sb (a + d) + tb - sl a
    ua, ud = np.where(use, c, ua), np.where(use, sb, ud)
    u0 = np.where(use, np.nextafter(tb + _U * np.abs(c) * a_abs, np.inf), u0)
    c = slb - s  # delta >= slb (a + d) - (s a + t)
    la, ld = np.where(use, c, la), np.where(use, slb, ld)
    l0 = np.where(use, np.nextafter(-t - _U * np.abs(c) * a_abs, -np.inf), l0)
    # both neurons stable: delta is linear in (a, d)
    for case, ca, cd in (
        (pon & qon, 0.0, 1.0),
        (poff & qoff, 0.0, 0.0),
        (poff & qon, 1.0, 1.0),
        (pon & qoff, -1.0, 0.0),
    ):
        ua, la = np.where(case, ca, ua), np.where(case, ca, la)
        ud, ld = np.where(case, cd, ud), np.where(case, cd, ld)
        u0, l0 = np.where(case, 0.0, u0), np.where(case, 0.0, l0)
    d_abs = np.maximum(np.abs(dl), np.abs(du))
    return Relaxation(
        U=[[s, None], [ua, ud]],
        u0=np.concatenate([t, u0], axis=1),
        L=[[sl, None], [la, ld]],
        l0=np.concatenate([z, l0], axis=1),
        post_abs=np.concatenate([np.maximum(au, 0.0), d_abs], axis=1),
        pre_abs=np.concatenate([np.maximum(np.abs(al), np.abs(au)), d_abs], axis=1),
        slope_blocks=(0,),
    )


class _DifferenceRelax:
    """The relaxations of a difference chain's layers, from the bounds of (a, d, a + d)."""

    def __call__(self, j, lower, upper, slope) -> Relaxation:
        n = lower.shape[1] // 3
        al, dl, bl = lower[:, :n], lower[:, n : 2 * n], lower[:, 2 * n :]
        au, du, bu = upper[:, :n], upper[:, n : 2 * n], upper[:, 2 * n :]
        return _difference_relaxation(al, au, dl, du, bl, bu, slope)


def difference_chain(p: Sequence, q: Sequence) -> Chain:
    """Two networks of one architecture, neuron paired with neuron (see the module docs):
    layer ``j`` holds ``(a_j, d_j)`` with ``a_j`` p's pre-activations and ``d_j`` q's minus
    p's; the outputs are ``d_out = f_q - f_p``."""
    P = [(np.asarray(W, float), np.asarray(b, float)) for W, b in p]
    Q = [(np.asarray(W, float), np.asarray(b, float)) for W, b in q]
    affine = []
    for j, ((Wp, bp), (Wq, bq)) in enumerate(zip(P, Q)):
        dW, db = Wq - Wp, bq - bp
        if j == 0:
            A = np.vstack([Wp, dW])
        else:
            A = _stack([[Wp, np.zeros_like(Wp)], [dW, Wq]])
        affine.append((A, np.concatenate([bp, db])))

    rows = []
    for W, _ in P[:-1]:
        n = W.shape[0]
        eye, zero = np.eye(n), np.zeros((n, n))
        rows.append(_stack([[eye, zero], [zero, eye], [eye, eye]]))
    m = P[-1][0].shape[0]
    outputs = np.hstack([np.zeros((m, m)), np.eye(m)])
    return Chain(
        affine=affine,
        bound_rows=rows,
        relax=_DifferenceRelax(),
        outputs=outputs,
        settled=_both_stable,
    )


def neuron_bounds(params: Sequence, lower: np.ndarray, upper: np.ndarray) -> list:
    """Per hidden layer, rigorous bounds ``(lo, hi)`` of every neuron's pre-activation over
    the box: linear bound propagation (CROWN) intersected with interval arithmetic
    (:func:`~neuromanifold.relu._bounds.interval.box_bounds`), each the tighter on some
    neurons."""
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    with np.errstate(all="ignore"):
        boxed = box_bounds(params, Domain.box(lo, hi))[:-1]
        linear, _, _ = propagate(network_chain(params), lo[None], hi[None])
    return [(np.maximum(a, la[0]), np.minimum(b, ua[0])) for (a, b), (la, ua) in zip(boxed, linear)]
