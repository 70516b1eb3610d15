"""Flips of a set of neurons whose linear terms cancel (any hidden layer, any depth).

``relu(z) = relu(-z) + z``: flipping neuron ``i`` of hidden layer ``l`` (its incoming row
``(w_i, b_i) -> (-w_i, -b_i)``) changes the next layer's pre-activations by the affine
term ``c_i (w_i . a + b_i)``, ``c_i = W_{l+1}[:, i]``, ``a`` the layer's input. Flipping a
set ``S`` at once keeps the function when those terms' linear parts cancel,
``sum_{i in S} c_i w_i^T = 0``, the constant going into the next layer's biases
(``b_{l+1} += sum_S c_i b_i``). The flipped rows are negative multiples of the old ones:
off the permutation-scaling orbit whenever no two rows of the layer are negative
multiples of each other. A discrete symmetry (no continuous family).

:func:`zero_sum_flips` decides whether such a set exists, exactly: with ``u_i`` the
vector of ``c_i w_i^T``, a set is a nonzero 0/1 vector in the kernel of ``U = [u_1 ..
u_n]``. When ``U`` has full column rank (a random sketch of it modulo a prime proves
that) there is none; otherwise the exact kernel (flint, over the rationals) is searched
over its free coordinates, every candidate re-checked in exact arithmetic.

>>> P = [(np.array([[1.0], [1.0]]), np.array([-1.0, -2.0])),
...      (np.array([[1.0, -1.0]]), np.zeros(1))]      # relu(x - 1) - relu(x - 2)
>>> zero_sum_flips(P, 1).sets
((0, 1),)
>>> NeuronFlip(1, (0, 1)).apply(P)[1][1]           # the output bias takes -1 + 2
array([1.])
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from itertools import product

import flint
import numpy as np

from ..._errors import InputError, short_repr
from ..._validation import as_finite_array, check_nonnegative_int
from .._fundim.layered_rank import PRIME, residue_matmul, residue_rank, residues
from .three_layer import Symmetry

__all__ = ["NeuronFlip", "FlipSearch", "zero_sum_flips", "MAX_FREE"]

Params = list[tuple[np.ndarray, np.ndarray]]

#: Free coordinates of the kernel up to which its 0/1 vectors are enumerated (2**16).
MAX_FREE = 16


def _fractions(A: np.ndarray) -> list:
    return [Fraction(float(v)) for v in np.asarray(A, dtype=float).ravel()]


def cancelling_sum(params: Params, layer: int, neurons) -> tuple[bool, float]:
    """``(exactly zero, relative size)`` of ``sum_{i in neurons} c_i w_i^T`` (module
    docs): exact in rationals; the size is its largest entry over the largest entry of
    the terms (floats; 0 when it is exactly zero)."""
    W, _ = params[layer - 1]
    C = params[layer][0]
    terms = [np.outer(C[:, i], W[i]) for i in neurons]
    peak = max((float(np.max(np.abs(t), initial=0.0)) for t in terms), default=0.0)
    cols = [_fractions(C[:, i]) for i in neurons]
    rows = [_fractions(W[i]) for i in neurons]
    zero = all(
        sum(c[p] * r[q] for c, r in zip(cols, rows)) == 0
        for p in range(C.shape[0])
        for q in range(W.shape[1])
    )
    if zero:
        return True, 0.0
    size = float(np.max(np.abs(sum(terms)), initial=0.0))
    return False, size / peak if peak > 0 else np.inf


@dataclasses.dataclass(frozen=True, repr=False)
class NeuronFlip(Symmetry):
    """Flip the neurons ``neurons`` of hidden layer ``layer``: their incoming rows are
    negated and the next layer's biases take ``sum c_i b_i``; applies when the linear
    terms ``c_i w_i^T`` of those neurons sum to zero (exactly at ``tol = 0``; within
    ``tol`` of their largest entry otherwise). Module docs."""

    layer: int
    neurons: tuple[int, ...]
    _name = "neuron_flip"

    def __post_init__(self):
        layer = int(check_nonnegative_int(self.layer, "layer"))
        arr = as_finite_array(self.neurons, "neurons", error=InputError)
        if (
            arr.ndim != 1
            or arr.size == 0
            or np.any(arr != np.round(arr))
            or np.any(arr < 0)
            or np.unique(arr).size != arr.size
        ):
            raise InputError(
                f"neurons must be one or more distinct neuron indices (nonnegative "
                f"integers); got {short_repr(self.neurons)}"
            )
        neurons = tuple(int(v) for v in arr)
        object.__setattr__(self, "layer", layer)
        object.__setattr__(self, "neurons", tuple(sorted(neurons)))

    def _check(self, params, tol):
        if not 1 <= self.layer <= len(params) - 1:
            return (
                False,
                f"layer must be a hidden layer 1..{len(params) - 1} of this "
                f"{len(params)}-layer network; got {self.layer}",
                None,
            )
        n = params[self.layer - 1][0].shape[0]
        if self.neurons[-1] >= n:
            return False, f"hidden layer {self.layer} has neurons 0..{n - 1}", None
        zero, size = cancelling_sum(params, self.layer, self.neurons)
        if zero or size <= tol:
            how = "exactly" if zero else f"to {size:.3g} of their largest entry (tol {tol:g})"
            return (
                True,
                f"the linear terms of neurons {list(self.neurons)} of hidden layer "
                f"{self.layer} cancel {how}",
                None,
            )
        return (
            False,
            f"the linear terms of neurons {list(self.neurons)} of hidden layer {self.layer} "
            f"do not cancel (their sum is {size:.3g} of their largest entry)",
            None,
        )

    def _transform(self, params, tol):
        W, b = params[self.layer - 1]
        C, c = params[self.layer]
        S = list(self.neurons)
        c += C[:, S] @ b[S]
        W[S] *= -1.0
        b[S] *= -1.0
        return params  # at tol > 0 the linear term neglected stays (at most tol of its size)

    def inverse(self, params) -> "NeuronFlip":
        """The flip taking ``self.apply(params)`` back to ``params``: the same one."""
        return NeuronFlip(self.layer, self.neurons)


@dataclasses.dataclass(frozen=True)
class FlipSearch:
    """What :func:`zero_sum_flips` found: ``sets`` (sets of neurons whose flip keeps the
    function, each re-checked exactly; at most ``limit``), ``decided`` (``True`` when the
    search was complete: no other set exists when ``sets`` is empty), ``rank`` (of ``U``,
    when computed) and ``reason`` in words."""

    sets: tuple
    decided: bool
    rank: int | None
    reason: str


def _sketch_rank(C: np.ndarray, W: np.ndarray, live: np.ndarray, rng) -> int:
    """A lower bound of the rank of ``U`` restricted to the ``live`` neurons: rows
    ``(alpha . c_i) (beta . w_i)`` for random ``alpha, beta`` modulo the prime (a row
    ``(alpha (x) beta) U`` of a left multiple of ``U``), whose rank over the field is at
    most ``U``'s over the rationals."""
    k = int(live.size) + 8
    Cr, Wr = residues(C[:, live]), residues(W[live])
    alpha = rng.integers(0, PRIME, (k, C.shape[0]))
    beta = rng.integers(0, PRIME, (k, W.shape[1]))
    A = residue_matmul(alpha, Cr)
    B = residue_matmul(beta, np.ascontiguousarray(Wr.T))
    return residue_rank(A * B % PRIME)


def zero_sum_flips(params: Params, layer: int, *, limit: int = 4, seed: int = 0) -> FlipSearch:
    """Sets of neurons of hidden layer ``layer`` whose flip keeps the function (module
    docs), searched exactly; neurons whose term ``c_i w_i^T`` is zero (a zero row or a
    zero outgoing column) are left out (their own moves say more)."""
    # Whole: the rank certificate, the exact kernel and its enumeration share the live
    # neurons and the kernel's pivots; each step ends the search or feeds the next
    if not 1 <= layer <= len(params) - 1:
        raise ValueError(f"layer must be a hidden layer 1..{len(params) - 1}; got {layer}")
    W, _ = params[layer - 1]
    C = params[layer][0]
    live = np.flatnonzero(np.any(W != 0, axis=1) & np.any(C != 0, axis=0))
    n = int(live.size)
    if n == 0:
        return FlipSearch(sets=(), decided=True, rank=0, reason="no neuron with a linear term")
    if _sketch_rank(C, W, live, np.random.default_rng(seed)) == n:
        return FlipSearch(
            sets=(),
            decided=True,
            rank=n,
            reason=f"the {n} linear terms c_i w_i^T of hidden layer {layer} are linearly "
            f"independent (an exact rank modulo a prime): no set of them cancels",
        )
    rows = C.shape[0] * W.shape[1]
    if rows * n > 400_000:
        return FlipSearch(
            sets=(),
            decided=False,
            rank=None,
            reason=f"the linear terms of hidden layer {layer} may be dependent and their "
            f"exact kernel ({rows:,} x {n} rationals) is too large to search",
        )
    U = flint.fmpq_mat(
        rows,
        n,
        [
            flint.fmpq(*float(C[p, i]).as_integer_ratio())
            * flint.fmpq(*float(W[i, q]).as_integer_ratio())
            for p in range(C.shape[0])
            for q in range(W.shape[1])
            for i in live
        ],
    )
    R, rank = U.rref()
    pivots, free = [], []
    r = 0
    for col in range(n):
        if r < rank and R[r, col] != 0:
            pivots.append(col)
            r += 1
        else:
            free.append(col)
    if len(free) > MAX_FREE:
        return FlipSearch(
            sets=(),
            decided=False,
            rank=rank,
            reason=f"the linear terms of hidden layer {layer} have a kernel of dimension "
            f"{len(free)}: more than {MAX_FREE} free coordinates to enumerate",
        )
    # s_pivot = -R[:, free] s_free: a set is an assignment of the free coordinates in
    # {0, 1} that makes every pivot coordinate 0 or 1 too (screened in floats with a
    # margin far above their rounding, then checked in rationals)
    Rf = [[Fraction(int(R[i, f].p), int(R[i, f].q)) for f in free] for i in range(rank)]
    Rfl = np.array([[float(v) for v in row] for row in Rf]).reshape(rank, len(free))
    margin = 1e-6 * (1.0 + np.sum(np.abs(Rfl), axis=1))
    found = []
    for bits in product((0, 1), repeat=len(free)):
        if not any(bits):
            continue
        t = -Rfl @ np.array(bits, dtype=float)
        if np.any(np.minimum(np.abs(t), np.abs(t - 1.0)) > margin):
            continue
        exact = [-sum(Rf[i][k] * bits[k] for k in range(len(free))) for i in range(rank)]
        if not all(v == 0 or v == 1 for v in exact):
            continue
        chosen = [free[k] for k in range(len(free)) if bits[k]] + [
            pivots[i] for i in range(rank) if exact[i] == 1
        ]
        neurons = tuple(sorted(int(live[c]) for c in chosen))
        if cancelling_sum(params, layer, neurons)[0]:
            found.append(neurons)
            if len(found) >= limit:
                break
    return FlipSearch(
        sets=tuple(found),
        decided=len(found) < limit,
        rank=rank,
        reason=(
            f"{len(found)} set(s) of neurons of hidden layer {layer} whose linear terms "
            f"cancel (the exact kernel of rank {rank} searched over its {len(free)} free "
            f"coordinates)"
            if found
            else f"the linear terms of hidden layer {layer} are dependent (rank {rank} of "
            f"{n}), but no set of them cancels (every 0/1 vector of the exact kernel "
            f"enumerated over its {len(free)} free coordinates)"
        ),
    )
