"""Big-M encoding of ReLU networks as mixed-integer programs for HiGHS
(:func:`neuromanifold.relu._engine.lp.solve_milp`), shared by ``equivalent(method="milp")``
(:mod:`neuromanifold.relu._equivalence.equivalence`) and the tangent MILPs of
``functional_dimension`` (:mod:`neuromanifold.relu._fundim.tangent`).

The network is encoded on the *homogenized* domain: ``x = y / s`` with ``|y_k| <= 1`` and
``0 <= s <= 1`` (``0 <= y`` on the orthant, ``lower s <= y <= upper s`` on a box), every
bias multiplied by ``s``. Every pre-activation ``z`` is then a linear expression in the
variables, ``s z(y / s)``; the homogenized network bounds ``f(x) / max(1, |x|_inf)`` up
to the normalization, the relative size that tolerances compare with (``docs/relu.md``,
"Tolerances", and the ``"milp"`` method there).

An expression is a dense row of coefficients over the variables that existed when it was
made (a later variable has coefficient 0); a layer of them is a matrix. For
``h = relu(z)`` with interval bounds ``lo <= z <= hi`` over the variables' box
(:meth:`MILPBuilder.bounds`), a neuron is *fixed inactive* (``h = 0``, no variable) when
``hi <= 0``, *fixed active* (``h = z``) when ``lo >= 0``, and otherwise gets a continuous
``0 <= h <= hi`` and a binary ``a`` with the exact big-M rows

    ``z <= h``,  ``h <= z - lo (1 - a)``,  ``h <= hi a``.

With a *margin rule* (:func:`relu_layer`'s ``margin``) the binary is also tied to the
sign of ``z`` with room to spare: ``a = 1`` forces ``z >= mg`` and ``a = 0`` forces
``z <= 0`` (``z <= -mg`` with ``both_sides``), ``mg = margin * max(-lo, hi)``, so that the
binaries of a solution are the activation pattern of a full-dimensional region; a neuron
without room for the margin on its active side is fixed inactive.

Every variable's box contains 0 (``y = s = 0``, where every expression vanishes), so
padded bounds always have ``lo < 0 < hi``: the fixed shortcuts take effect only through
the margin. A neuron with ``z >= 0`` on the whole domain then has ``lo`` of the size of the
padding, a big-M coefficient of about ``1e-9`` on its binary, which HiGHS's presolve at our
feasibility tolerances misjudged (it called feasible programs infeasible;
``tests/relu/engine/test_milp.py``). The big-M constants are bounds, so any looser one
is as exact: :func:`relu_layer` makes each at least :data:`BIG_M_FLOOR` of the neuron's
largest bound.

>>> from neuromanifold.relu._core.domain import Domain
>>> W1, b1 = np.array([[1.0], [-1.0]]), np.array([0.0, 0.5])
>>> B = MILPBuilder()
>>> ys, s = homogenized_input(B, Domain.whole(1))
>>> layer = relu_layer(B, affine(B, W1, b1, B.inputs(ys), s))
>>> layer.state.tolist()  # both neurons change sign on R: a binary each
[0, 0]
>>> B.num_vars, len(B.rows)  # y, s and (h, a) twice; three rows per neuron
(6, 6)
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .._core.domain import Domain

__all__ = [
    "MILPBuilder",
    "ReLULayer",
    "homogenized_input",
    "affine",
    "relu_layer",
    "encode_network",
    "BOUND_PAD",
]

#: the relative padding of interval bounds against rounding
BOUND_PAD = 1e-9


class MILPBuilder:
    """Variables (bounds, integrality) and rows ``expr . v <= ub`` of a MILP.

    ``expr`` is a dense coefficient row over the variables that existed when it was
    made, or ``None``; ``extra`` adds single coefficients (``{variable: coefficient}``).
    :meth:`problem` pads every row to the final number of variables.
    """

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows: list[tuple[np.ndarray | None, dict, float]] = []

    @property
    def num_vars(self) -> int:
        return len(self.lb)

    def var(self, lo: float, hi: float, integer: bool = False) -> int:
        """A new variable with ``lo <= v <= hi``; returns its index."""
        self.lb.append(float(lo))
        self.ub.append(float(hi))
        self.integer.append(1 if integer else 0)
        return len(self.lb) - 1

    def row(self, expr: np.ndarray | None, extra: dict, ub: float) -> None:
        """The row ``expr . v + sum(c * v[j] for j, c in extra) <= ub``."""
        self.rows.append((expr, extra, float(ub)))

    def inputs(self, variables) -> np.ndarray:
        """The expressions of the given variables themselves (one row each)."""
        variables = list(variables)
        E = np.zeros((len(variables), self.num_vars))
        E[np.arange(len(variables)), variables] = 1.0
        return E

    def widen(self, M: np.ndarray) -> np.ndarray:
        """Expressions ``M`` (rows) padded with zero columns to the current variables."""
        n = self.num_vars
        if M.shape[-1] == n:
            return M
        out = np.zeros(M.shape[:-1] + (n,))
        out[..., : M.shape[-1]] = M
        return out

    def bounds(self, Z: np.ndarray, *, pad: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Interval bounds ``(lo, hi)`` of the expressions ``Z`` (rows) over the variables'
        box, padded (unless ``pad`` is false) by a relative :data:`BOUND_PAD` against
        rounding."""
        w = Z.shape[-1]
        lb, ub = np.asarray(self.lb[:w]), np.asarray(self.ub[:w])
        pos, neg = np.maximum(Z, 0.0), np.minimum(Z, 0.0)
        lo = pos @ lb + neg @ ub
        hi = pos @ ub + neg @ lb
        if not pad:
            return lo, hi
        eps = BOUND_PAD * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))
        return lo - eps, hi + eps

    def problem(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(A, rhs, lb, ub, integer)``: the rows as a dense matrix (``A v <= rhs``) and
        fresh copies of the variables' bounds and integrality."""
        n = self.num_vars
        A = np.zeros((len(self.rows), n))
        rhs = np.zeros(len(self.rows))
        for r, (expr, extra, ub) in enumerate(self.rows):
            if expr is not None:
                A[r, : expr.shape[0]] = expr
            for v, c in extra.items():
                A[r, v] += c
            rhs[r] = ub
        return (
            A,
            rhs,
            np.array(self.lb, dtype=float),
            np.array(self.ub, dtype=float),
            np.array(self.integer, dtype=np.int32),
        )


def homogenized_input(B: MILPBuilder, domain: Domain) -> tuple[list[int], int]:
    """The variables ``y`` (one per input) and ``s`` of the homogenized domain
    ``x = y / s``, with the domain's rows; returns ``(ys, s)``."""
    d = domain.dim
    if domain.kind == "box":
        ys = [
            B.var(min(0.0, max(-1.0, float(lo))), max(0.0, min(1.0, float(hi))))
            for lo, hi in zip(domain.lower, domain.upper)
        ]
    else:
        lo = 0.0 if domain.kind == "orthant" else -1.0
        ys = [B.var(lo, 1.0) for _ in range(d)]
    s = B.var(0.0, 1.0)
    if domain.kind == "box":  # lower s <= y <= upper s: x = y / s in the box
        for k, (lo, hi) in enumerate(zip(domain.lower, domain.upper)):
            B.row(None, {s: float(lo), ys[k]: -1.0}, 0.0)
            B.row(None, {ys[k]: 1.0, s: -float(hi)}, 0.0)
    return ys, s


def affine(B: MILPBuilder, W: np.ndarray, b: np.ndarray, H: np.ndarray, s: int) -> np.ndarray:
    """The expressions ``W H + b s`` (the bias times the homogenizing variable)."""
    Z = np.asarray(W, dtype=float) @ B.widen(H)
    Z[:, s] += np.asarray(b, dtype=float)
    return Z


@dataclasses.dataclass
class ReLULayer:
    """One encoded layer ``h = relu(z)``.

    Attributes:
        Z: the pre-activations' expressions (rows).
        lo, hi: their interval bounds over the variables' box.
        state: per neuron ``-1`` (fixed inactive), ``1`` (fixed active) or ``0`` (a binary).
        h, a: per neuron the indices of its variables ``h`` and binary ``a`` (``-1`` when
            fixed).
        H: the expressions of the outputs ``h`` (rows, over the variables after this
            layer).
    """

    Z: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    state: np.ndarray
    h: np.ndarray
    a: np.ndarray
    H: np.ndarray

    def pattern(self, x: np.ndarray | None) -> np.ndarray:
        """The activation pattern (boolean per neuron) of a solution ``x``: the fixed
        states, and the binaries of ``x`` (all off when ``x`` is ``None``)."""
        p = self.state == 1
        if x is not None:
            free = self.state == 0
            p[free] = np.asarray(x)[self.a[free]] > 0.5
        return p


#: smallest big-M constant, relative to the neuron's largest bound (see relu_layer)
BIG_M_FLOOR = 1e-6


def relu_layer(
    B: MILPBuilder,
    Z: np.ndarray,
    *,
    margin: float | None = None,
    both_sides: bool = False,
    each: Callable[[int, int], None] | None = None,
) -> ReLULayer:
    """Encode ``h = relu(Z)`` (module docs): bounds, the fixed neurons, and for each other
    neuron ``h``, a binary ``a`` and its rows.

    Args:
        B: the builder (gets the variables and rows).
        Z: the pre-activations' expressions (rows).
        margin: ``None`` for the exact encoding; else the margin rule with
            ``mg = margin * max(-lo, hi)`` per neuron: ``a = 1`` forces ``z >= mg``,
            ``a = 0`` forces ``z <= 0``, a neuron with ``hi < mg`` is fixed inactive and one
            with ``lo >= mg`` fixed active.
        both_sides: with a margin, ``a = 0`` forces ``z <= -mg`` and a neuron with
            ``lo >= -mg`` is fixed active (for a first layer, whose ``z`` is affine in the
            input and never ``0`` on an open set).
        each: called as ``each(i, a)`` right after the rows of each neuron ``i`` with a
            binary ``a``, to add variables and rows that belong to it (a caller's
            variables then sit next to the neuron's, as the solver has always seen them).
    """
    lo, hi = B.bounds(Z)
    n = Z.shape[0]
    mgs = np.zeros(n) if margin is None else margin * np.maximum(-lo, hi)
    on_at = -mgs if both_sides else mgs
    state = np.zeros(n, dtype=np.int64)
    h_idx = np.full(n, -1, dtype=np.int64)
    a_idx = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        if hi[i] <= 0 or hi[i] < mgs[i]:
            state[i] = -1
        elif lo[i] >= on_at[i]:
            state[i] = 1
        else:
            # the big-M constants are bounds, so any looser value is as exact; one at
            # least BIG_M_FLOOR of the neuron's scale keeps a coefficient of ~1e-9 (a
            # padded bound of a neuron that is >= 0 on the domain) away from HiGHS,
            # whose presolve then declared feasible programs infeasible
            floor = BIG_M_FLOOR * max(-float(lo[i]), float(hi[i]))
            z, l_i, h_i = Z[i], min(float(lo[i]), -floor), max(float(hi[i]), floor)
            h = B.var(0.0, h_i)
            a = B.var(0.0, 1.0, integer=True)
            h_idx[i], a_idx[i] = h, a
            if margin is not None:
                mg = float(mgs[i])
                off = mg if both_sides else 0.0
                B.row(-z, {a: mg - l_i}, -l_i)  # a = 1: z >= mg
                B.row(z, {a: -(h_i + off)}, -off)  # a = 0: z <= -off
            B.row(z, {h: -1.0}, 0.0)  # z <= h
            B.row(-z, {h: 1.0, a: -l_i}, -l_i)  # h <= z - lo (1 - a)
            B.row(None, {h: 1.0, a: -h_i}, 0.0)  # h <= hi a
            if each is not None:
                each(i, a)
    H = np.zeros((n, B.num_vars))
    on = state == 1
    H[on, : Z.shape[1]] = Z[on]
    free = state == 0
    H[free, h_idx[free]] = 1.0
    return ReLULayer(Z, lo, hi, state, h_idx, a_idx, H)


def encode_network(
    B: MILPBuilder, params: list, H: np.ndarray, s: int, *, margin: float | None = None
) -> tuple[list[ReLULayer], np.ndarray]:
    """Encode a network ``[(W, b), ...]`` on the input expressions ``H``: returns its
    hidden layers and the expressions of its outputs (the last layer is affine).
    With ``margin`` the first hidden layer uses the margin rule on both sides, later
    ones on the active side (see :func:`relu_layer`).

    >>> from neuromanifold.relu._core.domain import Domain
    >>> B = MILPBuilder()
    >>> ys, s = homogenized_input(B, Domain.orthant(1))
    >>> net = [(np.array([[1.0]]), np.array([1.0])), (np.array([[2.0]]), np.array([0.0]))]
    >>> layers, out = encode_network(B, net, B.inputs(ys), s)
    >>> layers[0].state.tolist(), out.tolist()  # z = y + s >= 0, but 0 at y = s = 0
    ([0], [[0.0, 0.0, 2.0, 0.0]])
    >>> layers, out = encode_network(B, net, B.inputs(ys), s, margin=1e-7)
    >>> layers[0].state.tolist(), out[:, :2].tolist()  # z >= -margin: fixed active
    ([1], [[2.0, 2.0]])
    """
    layers = []
    for l, (W, b) in enumerate(params[:-1]):
        layer = relu_layer(
            B, affine(B, W, b, H, s), margin=margin, both_sides=margin is not None and l == 0
        )
        layers.append(layer)
        H = layer.H
    W, b = params[-1]
    return layers, affine(B, W, b, H, s)
