"""Lossless reduction: a network with fewer hidden neurons computing the same function on a
domain, every step exact (or, with ``tol > 0``, bounded).

The moves, repeated across layers until none applies:

* a neuron **dead on the domain** (proved by :func:`~neuromanifold.relu.neurons`) outputs 0
  there: removed;
* a neuron with **no outgoing weight** is removed; one with a **zero incoming row** is the
  constant ``relu(b_j)``, folded into the next layer's biases;
* a neuron whose row ``(W_j, b_j)`` is a **positive multiple** ``lam`` of another's merges
  into it (``relu(lam z) = lam relu(z)``: its outgoing column times ``lam`` is added to
  the other's); with ``tol > 0`` rows parallel up to ``tol`` are first moved onto the exact
  multiple, the change bounded by :func:`difference_bound`;
* a block of neurons **linear on the domain** (always active, proved) computes an affine
  map, so only a basis of its rows is kept: a row that is a combination ``sum_i c_i R_i``
  of basis rows has ``relu(z_j) = z_j = sum_i c_i z_i = sum_i c_i relu(z_i)`` there, and its
  outgoing column moves onto the basis neurons with the coefficients ``c_i``.

* a neuron whose row is a **negative multiple** ``-lam`` of another's (opposite
  orientations) merges into it where a linear block of its layer can carry the linear
  term ``relu(-lam z_i) = lam relu(z_i) - lam z_i``: when ``W_i = sum_k c_k W_k`` over the
  block's rows, ``z_i = sum_k c_k relu(z_k) + (b_i - sum_k c_k b_k)`` on the domain, so
  the outgoing column moves onto neuron i (times ``lam``) and onto the block (times
  ``-lam c_k``), and the constant into the next layer's biases. Without such a block
  (on all of R^d, say) the pair stays: no ReLU layer carries a linear term by itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flint
import numpy as np

from ..._errors import InputError
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ...exact import fmpq_to_fraction, qrows, to_fmpq
from .._bounds.parameters import path_norm_scale, telescoping_bound
from .._core.clock import check_deadline
from .._core.conv.layer import AffineLayer
from .._core.conv.network import ReLUConvNet, path_norm
from .._core.domain import Domain, as_data, as_domain, sample_points
from .._core.live import as_conv_net
from .._core.net import check_params, exact_params, float_params
from .._core.numbers import to_float
from .._core.rows import close_pairs, sign_kinds
from .._neurons.neurons import neurons
from .conv import reduce_channels

__all__ = [
    "Reduction",
    "reduce",
    "reduce_exact",
    "reduce_everywhere",
    "sign_statuses",
    "zero_active_biases",
    "abs_floats",
    "difference_bound",
    "rounded_layers",
]

_ZERO = flint.fmpq(0)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Reduction(Result):
    """A smaller network computing the same function on the domain (module docs).

    Attributes:
        params: the reduced network, float64 ``(W, b)`` pairs.
        exact_params: the same network with its exact weights (``Fraction`` object
            arrays): merged weights such as ``w + lam w'`` are rationals a float may not
            hold; with ``tol = 0`` it computes exactly the function given, on the domain.
        widths_before, widths_after: the widths of the network given and of ``params``.
        moves: what was done, one line per move (neuron indices are those of the network
            given, 0-based, layers 1-based as ``W_l``).
        bound: a bound on ``sup_x |f(x) - f_reduced(x)| / max(1, ||x||_inf)`` over the
            domain for ``params``: the moves onto exact multiples (``tol > 0``) plus the
            rounding of the exact reduced weights to float64; 0.0 when ``params`` computes
            exactly the same function there.
        snap_bound: the same for ``exact_params`` (the moves onto exact multiples only).
        exact: ``bound == 0`` (the float network loses nothing).
        lossless: ``snap_bound == 0`` (the exact network loses nothing).
        within_tol: ``bound <= tol * scale``.
        tol, scale: the relative tolerance and the network's path norm.
        domain: the domain on which the function is kept.
        note: how the neurons' statuses were proved.
        network: for a convolutional network, the reduced one (a
            :class:`~neuromanifold.relu.ReLUConvNet`: channels removed and merged; with the
            exact merged weights it keeps the function exactly, its float64 weights within
            ``bound``); ``params`` and ``exact_params`` are then ``[]`` (its
            dense view is ``network.dense_params()``) and the widths are the input's
            channels and each affine layer's output channels (``to_dict`` writes the
            network's layers as dicts; ``io.save(result.network, "f.onnx")`` keeps it as
            a network). ``None`` otherwise.
    """

    params: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(repr=False)
    exact_params: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(repr=False)
    widths_before: tuple
    widths_after: tuple
    moves: tuple
    bound: float
    snap_bound: float
    exact: bool
    lossless: bool
    within_tol: bool
    tol: float
    scale: float
    domain: Domain
    note: str
    network: Any = dataclasses.field(default=None, repr=False)


def abs_floats(W, b) -> tuple[np.ndarray, np.ndarray]:
    """``(|W|, |b|)`` of exact entries (an ``fmpq_mat`` or a list of rows of ``fmpq``, and
    a list of ``fmpq``), rounded to floats."""
    rows = qrows(W) if isinstance(W, flint.fmpq_mat) else W
    Wf = np.array([[abs(to_float(v)) for v in row] for row in rows], dtype=float)
    return Wf.reshape(len(rows), -1), np.array([abs(to_float(v)) for v in b], dtype=float)


def difference_bound(Wa, ba, Wb, bb) -> float:
    """The bound of
    :func:`neuromanifold.relu._bounds.parameters.function_distance_bound` for two exact
    networks of the same widths (lists of rows of fmpq), the differences taken exactly."""
    L = len(Wa)
    return telescoping_bound(
        [abs_floats(Wa[l], ba[l]) for l in range(L)],
        [abs_floats(Wb[l], bb[l]) for l in range(L)],
        [
            abs_floats(
                [[x - y for x, y in zip(ra, rb)] for ra, rb in zip(Wa[l], Wb[l])],
                [x - y for x, y in zip(ba[l], bb[l])],
            )
            for l in range(L)
        ],
    )


class _Net:
    """Exact layers as lists (rows of fmpq), the original index of every neuron, and the
    moves made."""

    def __init__(self, Wq: list, bq: list):
        L = len(Wq)
        self.W = [qrows(m) if isinstance(m, flint.fmpq_mat) else [list(r) for r in m] for m in Wq]
        self.b = [list(bq[l]) for l in range(L)]
        self.ids = [list(range(len(self.b[l]))) for l in range(L)]
        self.moves: list[str] = []

    def drop(self, l: int, drop: set) -> bool:
        """Remove the neurons ``drop`` of hidden layer ``l`` (0-based); False (nothing
        removed) when that would leave the layer empty."""
        if not drop or len(drop) == len(self.W[l]):
            return False
        keep = [j for j in range(len(self.W[l])) if j not in drop]
        self.W[l] = [self.W[l][j] for j in keep]
        self.b[l] = [self.b[l][j] for j in keep]
        self.ids[l] = [self.ids[l][j] for j in keep]
        self.W[l + 1] = [[r[j] for j in keep] for r in self.W[l + 1]]
        return True

    def move_column(self, l: int, j: int, i: int, c) -> None:
        """Add ``c`` times the outgoing column of neuron ``j`` to that of neuron ``i``."""
        for row in self.W[l + 1]:
            row[i] += c * row[j]


def _linear_block(net: _Net, l: int, block: list[int]) -> set:
    """Keep a basis of the rows of the linear neurons ``block`` of layer ``l``; the others'
    outgoing columns move onto it. Returns the neurons to drop."""
    rows = [net.W[l][j] + [net.b[l][j]] for j in block]
    A = flint.fmpq_mat(len(rows), len(rows[0]), [v for r in rows for v in r])
    R, rank = A.transpose().rref()
    pivots = []
    for t in range(rank):
        pivots.append(next(k for k in range(R.ncols()) if R[t, k] != 0))
    drop = set()
    for k, j in enumerate(block):
        if k in pivots:
            continue
        for t, p in enumerate(pivots):
            if R[t, k] != 0:
                net.move_column(l, j, block[p], R[t, k])
        drop.add(j)
    if drop:
        net.moves.append(
            f"layer {l + 1}: linear block {sorted(net.ids[l][j] for j in block)} "
            f"carried by its {rank} independent neurons "
            f"{sorted(net.ids[l][block[p]] for p in pivots)}"
        )
    return drop


def _opposite_pairs(net: _Net, l: int, block: list[int]) -> set:
    """Merge each neuron of layer ``l`` whose row is a negative multiple of another's
    into it, the linear term carried by the linear neurons ``block`` (module docs).
    Returns the neurons to drop."""
    if not block:
        return set()
    d = len(net.W[l][0])
    B = flint.fmpq_mat(d, len(block), [net.W[l][k][t] for t in range(d) for k in block])
    keys: dict = {}
    drop: set = set()
    for j in range(len(net.W[l])):
        if j in block:
            continue
        row = net.W[l][j] + [net.b[l][j]]
        if all(v == 0 for v in row):
            continue
        piv = next(v for v in row if v != 0)
        key = tuple(v / piv for v in row)  # the same for both orientations
        if key not in keys:
            keys[key] = (j, piv)
            continue
        i, piv_i = keys[key]
        lam = piv / piv_i
        if lam > 0 or i in drop:
            continue  # a positive multiple: the exact moves merge it
        lam = -lam  # row_j = -lam row_i
        c = _solve_in_span(B, net.W[l][i])  # W_i = sum_k c_k W_k
        if c is None:
            continue
        coef = [c[k, 0] for k in range(len(block))]
        const = net.b[l][i] - sum((ck * net.b[l][k] for ck, k in zip(coef, block)), _ZERO)
        for r, row_next in enumerate(net.W[l + 1]):
            out = row_next[j]
            if out == 0:
                continue
            row_next[i] += lam * out
            for ck, k in zip(coef, block):
                row_next[k] -= lam * ck * out
            net.b[l + 1][r] -= lam * const * out
        drop.add(j)
        net.moves.append(
            f"layer {l + 1}: neuron {net.ids[l][j]} merged into neuron "
            f"{net.ids[l][i]} (a negative multiple of its row; the linear term "
            f"carried by the linear block "
            f"{sorted(net.ids[l][k] for k in block)})"
        )
    return drop


def _solve_in_span(B: flint.fmpq_mat, w: list):
    """Coefficients ``c`` with ``B c = w`` (exact), or ``None`` when ``w`` is not in the
    column span of ``B``: one solution from the reduced row echelon form."""
    n = B.ncols()
    aug = flint.fmpq_mat(
        B.nrows(),
        n + 1,
        [v for t in range(B.nrows()) for v in [B[t, k] for k in range(n)] + [w[t]]],
    )
    R, rank = aug.rref()
    c = flint.fmpq_mat(n, 1)
    for t in range(rank):
        lead = next(k for k in range(n + 1) if R[t, k] != 0)
        if lead == n:
            return None  # 0 = nonzero: not in the span
        c[lead, 0] = R[t, n] / R[t, lead]
    return c


def _snap(net: _Net, tol: float) -> float:
    """Move rows parallel up to ``tol`` onto exact positive multiples of an earlier row;
    returns the bound on the change of the function (0.0 when nothing moved)."""
    W0, b0 = [[list(r) for r in Wl] for Wl in net.W], [list(bl) for bl in net.b]
    snapped = False
    for l in range(len(net.W) - 1):
        rows = [net.W[l][j] + [net.b[l][j]] for j in range(len(net.W[l]))]
        big = [max((abs(v) for v in r), default=_ZERO) for r in rows]
        U = np.array(
            [[to_float(v / m) if m != 0 else 0.0 for v in r] for r, m in zip(rows, big)]
        ).reshape(len(rows), -1)
        # the pairs that may be within tol, found by one sort (close_pairs; a superset:
        # its slack covers the rounding of U), instead of all n^2 / 2 of them (12.5
        # million at a width of 5,000)
        partners: dict[int, list[int]] = {}
        for i, j in close_pairs(U, 2 * tol):
            partners.setdefault(j, []).append(i)
        for j in sorted(partners):
            check_deadline()
            for i in sorted(partners[j]):
                if not np.abs(U[j] - U[i]).max() <= tol:
                    continue
                lam = big[j] / big[i]
                new = [lam * v for v in rows[i]]
                if new != rows[j]:
                    net.W[l][j], net.b[l][j] = new[:-1], new[-1]
                    snapped = True
                break
    return difference_bound(W0, b0, net.W, net.b) if snapped else 0.0


def _parallel_candidates(W: list, b: list) -> set:
    """Rows (indices) that may be positive multiples of another row (:func:`close_pairs`);
    the rest are not."""
    if len(W) < 2:
        return set()
    R = np.array([[to_float(v) for v in row] + [to_float(c)] for row, c in zip(W, b)])
    return {i for pair in close_pairs(R, 0.0) for i in pair}


def _exact_moves(net: _Net) -> bool:
    """The exact moves valid on all of R^d (no outgoing weight, constant neurons, positive
    multiples), until none applies; whether any was made."""
    changed, reduced = True, False
    while changed:
        changed = False
        for l in range(len(net.W) - 1):
            drop: set = set()
            keys: dict = {}
            folds: list = []  # constant neurons, folded only if the drop happens
            twins = _parallel_candidates(net.W[l], net.b[l])
            for j in range(len(net.W[l])):
                who = net.ids[l][j]
                if all(net.W[l + 1][k][j] == 0 for k in range(len(net.W[l + 1]))):
                    drop.add(j)
                    net.moves.append(f"layer {l + 1}: neuron {who} removed (no outgoing weight)")
                    continue
                if all(v == 0 for v in net.W[l][j]):
                    if net.b[l][j] > 0:
                        folds.append(
                            [net.W[l + 1][k][j] * net.b[l][j] for k in range(len(net.W[l + 1]))]
                        )
                    drop.add(j)
                    net.moves.append(
                        f"layer {l + 1}: neuron {who} is constant, folded into "
                        f"layer {l + 2}'s biases"
                    )
                    continue
                if j not in twins:
                    continue  # no other row is a positive multiple of it (a float test)
                row = net.W[l][j] + [net.b[l][j]]
                piv = abs(next(v for v in row if v != 0))
                key = tuple(v / piv for v in row)
                if key not in keys:
                    keys[key] = (j, piv)
                    continue
                i, piv_i = keys[key]
                net.move_column(l, j, i, piv / piv_i)
                drop.add(j)
                net.moves.append(
                    f"layer {l + 1}: neuron {who} merged into neuron "
                    f"{net.ids[l][i]} (a positive multiple of its row)"
                )
            if drop and len(drop) < len(net.W[l]):
                for fold in folds:
                    for k, v in enumerate(fold):
                        net.b[l + 1][k] += v
                net.drop(l, drop)
                changed = reduced = True
            elif drop:  # every neuron of the layer would go: keep the layer as it is
                del net.moves[-len(drop) :]
    return reduced


def reduce_exact(Wq: list, bq: list, tol: float, *, dead=None, linear=None):
    """The reduction of the exact layers ``(Wq, bq)`` (fmpq matrices and lists): with
    ``dead``/``linear`` (per hidden layer, the neurons proved dead / linear on a domain)
    the domain moves first, then the exact moves of all of R^d, ``tol`` snapping between.

    Returns ``(W, b, moves, delta)``: the layers as lists of rows of fmpq, the moves, and
    the bound on the change of the function made by snapping (0.0 without)."""
    net = _Net(Wq, bq)
    for l in range(len(net.W) - 1):
        gone = set(dead[l]) if dead else set()
        if gone and net.drop(l, gone):
            net.moves.append(f"layer {l + 1}: dead neurons {sorted(gone)} removed")
        lin = [j for j, who in enumerate(net.ids[l]) if linear and who in linear[l]]
        if len(lin) >= 2:
            net.drop(l, _linear_block(net, l, lin))
            lin = [j for j, who in enumerate(net.ids[l]) if who in linear[l]]
        net.drop(l, _opposite_pairs(net, l, lin))
    delta = _snap(net, tol) if tol > 0 else 0.0
    _exact_moves(net)
    return net.W, net.b, tuple(net.moves), delta


def sign_statuses(Wq: list, bq: list) -> tuple[list, list]:
    """Per hidden layer, the sets of neurons dead and active on every input
    (:func:`sign_kinds`), read off the exact signs of the rows (an ``fmpq_mat`` or rows of
    fmpq, and lists of fmpq)."""
    dead, active = [], []
    for l in range(len(Wq) - 1):
        rows = qrows(Wq[l]) if isinstance(Wq[l], flint.fmpq_mat) else Wq[l]
        S = np.array(
            [[(v > 0) - (v < 0) for v in row + [c]] for row, c in zip(rows, bq[l])], dtype=int
        )
        d, a = sign_kinds(S, l == 0)
        dead.append(set(d))
        active.append(set(a))
    return dead, active


def zero_active_biases(W: list, b: list) -> None:
    """In place, exactly: every neuron after the first layer whose row (rows of fmpq) has
    no negative entry and a positive weight gets bias 0, its bias moved into the next
    layer's (it stays active on every input, so ``relu(z + c) = relu(z) + c``)."""
    for l in range(1, len(W) - 1):
        for j, row in enumerate(W[l]):
            if b[l][j] > 0 and all(v >= 0 for v in row) and any(v > 0 for v in row):
                for i, out in enumerate(W[l + 1]):
                    b[l + 1][i] += out[j] * b[l][j]
                b[l][j] = _ZERO


def reduce_everywhere(Wq: list, bq: list, tol: float):
    """The reduction valid on every input: :func:`reduce_exact` with the statuses of
    :func:`sign_statuses`, then :func:`zero_active_biases`, repeated until neither
    changes anything (a move can reveal a status: folding a constant neuron out of a row
    can leave it without a positive entry); returns as :func:`reduce_exact` does, the
    moves of every round, a zeroed bias counted as a move."""
    W, b, moves, delta = Wq, bq, (), 0.0
    while True:
        dead, active = sign_statuses(W, b)
        size = sum(len(bl) for bl in b)
        W, b, more, change = reduce_exact(W, b, tol, dead=dead, linear=active)
        before = [list(bl) for bl in b]
        zero_active_biases(W, b)
        moves += more + (("always-active biases moved into the next layer",) if b != before else ())
        delta += change
        if sum(len(bl) for bl in b) == size and b == before:
            return W, b, moves, delta


def rounded_layers(W: list, b: list) -> tuple[list, float]:
    """Exact layers (lists of rows of fmpq) rounded to float64 ``(W, b)`` pairs, and a bound
    on the function change the rounding makes (:func:`difference_bound`; 0.0 when every
    entry is a float)."""
    floats = [
        (
            np.array([[to_float(v) for v in r] for r in Wl], dtype=float).reshape(len(Wl), -1),
            np.array([to_float(v) for v in bl], dtype=float),
        )
        for Wl, bl in zip(W, b)
    ]
    rounded = [
        ([[to_fmpq(v) for v in r] for r in Wf.tolist()], [to_fmpq(v) for v in bf.tolist()])
        for Wf, bf in floats
    ]
    if all(Wr == Wl and br == bl for (Wr, br), Wl, bl in zip(rounded, W, b)):
        return floats, 0.0
    return floats, difference_bound(W, b, [Wr for Wr, _ in rounded], [br for _, br in rounded])


def reduce(
    params: Any,
    domain: Any = None,
    *,
    tol: Any = DEFAULT_TOL,
    data: Any = None,
    method: str = "auto",
    time_limit: float | None = None,
) -> Reduction:
    """A network with fewer hidden neurons computing the same function on the domain.

    Args:
        params: the network (a list of ``(W, b)``, a loaded model, a fitted MLP, ...);
            a convolutional network (:class:`~neuromanifold.relu.ReLUConvNet`) is reduced
            by channel (dead, zero-output and duplicate channels, moves exact up to the
            merged weights' rounding, in ``bound``; the result's ``network``).
        domain: ``None`` (R^d), ``"orthant"``, a box or a Domain; with ``data`` and no
            domain, the data's bounding box.
        tol: with ``tol > 0`` rows parallel up to ``tol`` are merged too (the change
            bounded in ``bound``); ``0`` makes only exact moves.
        data: points of the domain, used by :func:`~neuromanifold.relu.neurons`.
        method, time_limit: how the dead and linear neurons are proved (see
            :func:`~neuromanifold.relu.neurons`).

    Returns:
        A :class:`Reduction`.

    >>> W1 = np.array([[1.0], [2.0], [1.0]]); b1 = np.array([0.0, 0.0, -9.0])
    >>> r = reduce([(W1, b1), (np.array([[1.0, 1.0, 5.0]]), np.zeros(1))], (-1.0, 1.0))
    >>> r.widths_before, r.widths_after, r.exact, r.moves[0]
    ((1, 3, 1), (1, 1, 1), True, 'layer 1: dead neurons [2] removed')
    """
    tol = check_tol(tol)
    conv = as_conv_net(params)
    if conv is not None:
        return _reduce_conv(conv, domain, tol=tol, data=data)
    P = check_params(params)
    # the statuses are proved for the float64 network, so that is the network reduced
    from_fractions = float_params(params) is None
    ex = exact_params(P)
    st = neurons(P, domain, data=data, method=method, time_limit=time_limit)
    dom = st.domain
    dead = [set(ix) for ix in st.indices("dead")]
    linear = [set(ix) for ix in st.indices("linear")]
    W, b, moves, delta = reduce_exact(
        [m for m, _ in ex], [v for _, v in ex], tol, dead=dead, linear=linear
    )
    floats, rounding = rounded_layers(W, b)
    bound = float(delta + rounding)
    checked = _spot_check(ex, exact_params(floats), bound, dom, data)
    scale = path_norm_scale(P)
    widths = lambda ps: (ps[0][0].shape[1],) + tuple(Wl.shape[0] for Wl, _ in ps)  # noqa: E731
    return Reduction(
        params=floats,
        exact_params=fraction_params(W, b),
        widths_before=widths(P),
        widths_after=widths(floats),
        moves=moves,
        bound=bound,
        snap_bound=float(delta),
        exact=bound == 0.0,
        lossless=delta == 0,
        within_tol=bound <= tol * scale,
        tol=tol,
        scale=float(scale),
        domain=dom,
        note=f"neuron statuses: {st.method} ({st.note}); the reduced network checked against "
        f"the given one at {checked} points of the domain in exact arithmetic (within the "
        f"bound)"
        + ("; entries read as float64 (exact Fraction values not used)" if from_fractions else ""),
    )


def _reduce_conv(net: ReLUConvNet, domain: Any, *, tol: float, data: Any) -> Reduction:
    """:func:`reduce` of a convolutional network by channel (:mod:`.conv`): dead,
    zero-output and duplicate channels removed, the function kept on the domain (on the
    data's bounding box with ``data`` and no domain) up to the merges' float rounding."""
    if data is not None:
        X = as_data(data, net.input_dim)
        dom = Domain.from_data(X) if domain is None else as_domain(domain, net.input_dim)
        if not all(dom.contains(x) for x in X):
            raise InputError("data must lie in the domain; a row of data is outside it")
    else:
        X, dom = None, as_domain(domain, net.input_dim)
    done = reduce_channels(net, dom)
    reduced = done.network
    points = sample_points(dom, net.input_dim, np.random.default_rng(0), _SPOT_POINTS)
    if X is not None:
        points = np.vstack([points, X[:_SPOT_POINTS]])
    with np.errstate(all="ignore"):  # an overflowing float pass is left out below
        want, got = net.forward(points), reduced.forward(points)
    # a tripwire: the moves keep the function exactly up to the merges' rounding; the float
    # sums may differ in order
    reach = np.maximum(1.0, np.abs(points).max(axis=1))[:, None]
    with np.errstate(all="ignore"):
        room = done.bound * reach + 1e-9 * (1 + np.abs(want)) * max(1.0, path_norm(net))
        seen = np.isfinite(want) & np.isfinite(got)  # a float pass that overflowed says nothing
        wrong = seen & ~(np.abs(got - want) <= room)
    if np.any(wrong):
        raise RuntimeError(
            "internal check failed: the channel reduction changed the network's outputs "
            "at a point of the domain; please report this network"
        )

    def widths(n: ReLUConvNet) -> tuple:
        return (n.input_shape[0],) + tuple(
            layer.out_channels for _, layer, _ in n.leaves() if isinstance(layer, AffineLayer)
        )

    return Reduction(
        params=[],
        exact_params=[],
        widths_before=widths(net),
        widths_after=widths(reduced),
        moves=done.moves,
        bound=done.bound,
        snap_bound=0.0,
        exact=done.exact,
        lossless=True,
        within_tol=done.bound <= tol * path_norm(net),
        tol=tol,
        scale=float(path_norm(net)),
        domain=dom,
        note="a convolutional network, reduced by channel (the reduced network in "
        "`network`); the outputs checked against the given network's at "
        f"{len(points)} points of the domain" + ("; " + "; ".join(done.left) if done.left else ""),
        network=reduced,
    )


#: points at which :func:`reduce` re-checks its output (and as many data rows at most)
_SPOT_POINTS = 8


def _spot_check(P: list, R: list, bound: float, dom: Domain, data: Any) -> int:
    """``|f_P(x) - f_R(x)| <= bound * max(1, |x|_inf)`` at sampled points of the domain
    and data rows, in exact rational arithmetic (``P`` and ``R`` as
    :func:`~neuromanifold.relu._core.net.exact_params` gives them): a tripwire for a
    reduction that changed the function (the statuses and moves prove it does not).
    Returns the number of points checked."""
    X = sample_points(dom, P[0][0].ncols(), np.random.default_rng(0), _SPOT_POINTS)
    if data is not None and len(data):
        rows = np.asarray(data, dtype=np.float64).reshape(len(data), -1)  # checked by neurons
        X = np.vstack([X, rows[:_SPOT_POINTS]])
    nets = [[(W, flint.fmpq_mat(len(b), 1, b)) for W, b in n] for n in (P, R)]
    limit = to_fmpq(bound)
    for x in X:
        xq = [to_fmpq(float(v)) for v in x]
        outs = []
        for net in nets:
            h = flint.fmpq_mat(len(xq), 1, xq)
            for k, (Wq, bq) in enumerate(net):
                h = Wq * h + bq
                if k < len(net) - 1:
                    h = flint.fmpq_mat(h.nrows(), 1, [v if v > 0 else 0 for v in h.entries()])
            outs.append(h.entries())
        gap = max((abs(u - v) for u, v in zip(*outs)), default=flint.fmpq(0))
        room = limit * max(flint.fmpq(1), max(abs(v) for v in xq))
        if gap > room:
            raise RuntimeError(
                f"internal check failed: the reduced network differs from the given one by "
                f"{float(gap):.3g} at a point of the domain, above its bound {float(room):.3g}; "
                f"please report this network"
            )
    return int(X.shape[0])


def fraction_params(W: list, b: list) -> list:
    """Exact layers (``fmpq_mat`` or lists of rows of fmpq, and lists of fmpq) as
    ``(W, b)`` object arrays of Fractions."""

    def row(r):
        check_deadline()
        return [fmpq_to_fraction(v) for v in r]

    return [
        (
            np.array(
                [row(r) for r in (qrows(Wl) if isinstance(Wl, flint.fmpq_mat) else Wl)],
                dtype=object,
            ),
            np.array([fmpq_to_fraction(v) for v in bl], dtype=object),
        )
        for Wl, bl in zip(W, b)
    ]
