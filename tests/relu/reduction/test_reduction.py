"""Lossless reduction: planted redundancy in every layer of 3- to 5-layer networks is
removed and the reduced network is the same function by the exact engine; the bound and
its rounding; trained-size networks; bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import ReLUNet, equivalent, forward, neurons, reduce


def _plant(p, rng, layer, kind):
    """Add to hidden layer ``layer`` a redundant neuron of ``kind``."""
    q = [(W.copy(), b.copy()) for W, b in p]
    W, b = q[layer]
    Wn, bn = q[layer + 1]
    j = int(rng.integers(W.shape[0]))
    if kind == "dead":  # never active on [-1, 1]^d (hidden layers: inputs >= 0)
        row, bias = -np.abs(rng.standard_normal(W.shape[1])), -50.0 - 0.0
        if layer == 0:
            row, bias = rng.standard_normal(W.shape[1]), -50.0 * (1 + np.abs(W).sum())
    elif kind == "duplicate":  # a positive multiple of neuron j
        c = float(rng.choice([0.5, 2.0, 4.0]))  # powers of two: c W_j is exact in floats
        row, bias = c * W[j], c * b[j]
    elif kind == "no_out":
        row, bias = rng.standard_normal(W.shape[1]), rng.standard_normal()
    else:  # split: neuron j's outgoing weight shared with a copy
        row, bias = W[j].copy(), b[j]
    q[layer] = (np.vstack([W, row]), np.append(b, bias))
    col = (
        np.zeros((Wn.shape[0], 1))
        if kind in ("dead", "no_out")
        else rng.standard_normal((Wn.shape[0], 1))
    )
    if kind == "split":
        half = Wn[:, [j]] / 2
        Wn = Wn.copy()
        Wn[:, [j]] = half
        col = half
    if kind == "dead":
        col = rng.standard_normal((Wn.shape[0], 1))
    q[layer + 1] = (np.hstack([Wn, col]), bn)
    return q


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    depth=st.integers(3, 5),
    kind=st.sampled_from(["dead", "duplicate", "no_out", "split"]),
    data=st.data(),
)
def test_planted_redundancy_is_removed_and_the_function_kept(seed, depth, kind, data):
    rng = np.random.default_rng(seed)
    widths = [2] + [3] * (depth - 1) + [1]
    p = ReLUNet(widths).random_params(seed)
    layer = data.draw(st.integers(0, depth - 2))
    q = _plant(p, rng, layer, kind)
    r = reduce(q, (-1.0, 1.0), tol=0)
    status = neurons(q, (-1.0, 1.0)).status[layer]
    if all(s == "dead" for s in status):  # a layer is never emptied (the rule, docs): the
        assert r.widths_after[layer + 1] >= 1  # dead ones stay, a duplicate still merges
        assert equivalent(q, r.exact_params, (-1.0, 1.0), tol=0, method="regions").equivalent
        return
    assert sum(r.widths_after) < sum(r.widths_before)
    assert sum(r.widths_after) <= sum(widths)  # every planted neuron went
    assert r.moves and r.lossless and r.bound <= 1e-12 * r.scale
    # the exact network is the same function; the float one within its rounding bound
    exact = equivalent(q, r.exact_params, (-1.0, 1.0), tol=0, method="regions")
    assert exact.equivalent, (r.moves, exact.note)
    assert equivalent(
        q, r.params, (-1.0, 1.0), tol=max(r.bound / r.scale, 1e-15), method="regions"
    ).equivalent


def test_linear_block_is_carried_by_a_basis():
    """Three neurons always active on [0, 1]^2 whose rows span a plane: two carry them."""
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    b1 = np.array([1.0, 1.0, 2.0, 0.0])  # the first three: z >= 1 on [0, 1]^2
    W2 = np.array([[1.0, 2.0, 3.0, 1.0], [0.5, -1.0, 1.0, 2.0]])
    p = [(W1, b1), (W2, np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    r = reduce(p, (0.0, 1.0), tol=0)
    assert r.widths_after == (2, 3, 2, 1) and r.lossless
    assert any("linear block [0, 1, 2]" in m for m in r.moves)
    assert equivalent(p, r.exact_params, (0.0, 1.0), tol=0, method="regions").equivalent
    # outside the box the linear neurons switch: not the same function on R^2
    assert not equivalent(p, r.exact_params, tol=0, method="regions").equivalent


def test_trained_size_removes_certified_dead_neurons():
    p = ReLUNet([64, 32, 16, 10]).random_params(0)
    W1, b1 = p[0]
    b1 = b1.copy()
    b1[[1, 4, 9]] = -1e3
    p[0] = (W1, b1)
    r = reduce(p, (0.0, 1.0))
    assert r.widths_after[1] == 29 and "dead neurons [1, 4, 9]" in r.moves[0]
    assert r.exact and r.lossless and "bounds" in r.note


def test_tol_snaps_near_multiples_with_a_bound():
    p = ReLUNet([2, 3, 1]).random_params(0)
    W, b = p[0]
    q = [
        (np.vstack([W, 2 * W[0] + 1e-12]), np.append(b, 2 * b[0])),
        (np.hstack([p[1][0], [[1.0]]]), p[1][1]),
    ]
    assert reduce(q, tol=0).widths_after == (2, 4, 1)
    r = reduce(q, tol=1e-9)
    assert r.widths_after == (2, 3, 1) and 0 < r.snap_bound <= r.bound <= 1e-9 * r.scale
    assert r.within_tol and not r.lossless


def test_reduce_leaves_an_irreducible_network():
    p = ReLUNet([2, 4, 1]).random_params(0)  # on R^2 no first-layer neuron is dead or linear
    r = reduce(p, tol=0)
    assert r.widths_after == r.widths_before and r.moves == () and r.exact
    assert all(np.array_equal(W, V) for (W, _), (V, _) in zip(r.params, p))


def test_bad_input_and_round_trip():
    p = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(InputError, match="tol"):
        reduce(p, tol=-1)
    r = reduce(p, (-1.0, 1.0))
    assert type(r).from_dict(r.to_dict()).to_dict() == r.to_dict()


def test_a_constant_neuron_alone_in_its_layer_is_kept_not_doubled():
    p = [(np.array([[0.0]]), np.array([1.0])), (np.array([[1.0]]), np.array([0.0]))]
    r = reduce(p, (-1.0, 1.0), tol=0)
    assert r.widths_after == (1, 1, 1) and r.moves == ()
    np.testing.assert_array_equal(forward(r.params, [[0.3]]), forward(p, [[0.3]]))


def test_fraction_entries_are_read_as_float64_and_said_so():
    from fractions import Fraction as F

    p = [
        (np.array([[F(1)], [F(1)]], dtype=object), np.array([F(-1, 3), F(2)], dtype=object)),
        (np.array([[F(1), F(1)]], dtype=object), np.array([F(0)], dtype=object)),
    ]
    assert "float64" in reduce(p, (-1.0, 1.0), tol=0).note


def test_opposite_orientations_merge_where_a_linear_block_carries_the_linear_term():
    """relu(-2 z) = 2 relu(z) - 2 z: on [-1, 1]^2 the always-active neurons 0 and 1 span
    every incoming row, so neuron 3 (the opposite of neuron 2) merges into neuron 2; on
    R^2 nothing is linear and the pair stays."""
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-2.0, -2.0]])
    b1 = np.array([10.0, 10.0, 0.3, -0.6])
    W2 = np.array([[1.0, -2.0, 0.5, 1.5], [0.3, 1.0, -1.0, 2.0]])
    p = [(W1, b1), (W2, np.array([0.1, -0.2])), (np.array([[1.0, -1.0]]), np.zeros(1))]
    r = reduce(p, (-1.0, 1.0), tol=0)
    assert r.widths_after[1] == 3, r.moves
    assert any("neuron 3 merged into neuron 2 (a negative multiple" in m for m in r.moves)
    assert equivalent(p, r.exact_params, (-1.0, 1.0), tol=0, method="regions").equivalent
    assert reduce(p, tol=0).widths_after[1] == 4


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), depth=st.integers(3, 5), data=st.data())
def test_planted_opposite_pairs_next_to_a_linear_block_are_merged(seed, depth, data):
    """Every hidden layer of a random network gets an always-active block spanning its
    input (a large bias on [-1, 1]^d) and a neuron opposite to one of its neurons."""
    rng = np.random.default_rng(seed)
    widths = [2] + [3] * (depth - 1) + [1]
    p = ReLUNet(widths).random_params(seed)
    layer = data.draw(st.integers(0, depth - 2))
    q = [(W.copy(), b.copy()) for W, b in p]
    W, b = q[layer]
    Wn, bn = q[layer + 1]
    n_in = W.shape[1]
    big = 10.0 * (1 + np.abs(W).sum()) * (1 + sum(np.abs(V).sum() for V, _ in p[:layer]))
    j = int(rng.integers(W.shape[0]))
    lam = float(rng.choice([0.5, 1.0, 2.0]))  # -lam W_j exact in floats
    block = np.abs(rng.standard_normal((n_in, n_in))) + np.eye(n_in)
    W = np.vstack([W, block, -lam * W[j]])
    b = np.concatenate([b, np.full(n_in, big), [-lam * b[j]]])
    Wn = np.hstack([Wn, rng.standard_normal((Wn.shape[0], n_in + 1))])
    q[layer], q[layer + 1] = (W, b), (Wn, bn)
    r = reduce(q, (-1.0, 1.0), tol=0)
    # one of the pair goes: merged when both change sign on the domain, else the dead one
    # (the other is then linear)
    assert sum(r.widths_after) <= sum(widths) + n_in, r.moves
    assert equivalent(q, r.exact_params, (-1.0, 1.0), tol=0, method="regions").equivalent


def _snap_by_every_pair(net, tol):
    """The snapping rule read literally (every earlier row tried in order): the reference
    of the sorted candidate search, which must make the same moves."""
    from neuromanifold.relu._core.numbers import to_float

    for l in range(len(net.W) - 1):
        rows = [net.W[l][j] + [net.b[l][j]] for j in range(len(net.W[l]))]
        big = [max(abs(v) for v in r) for r in rows]
        U = np.array([[to_float(v / m) if m != 0 else 0.0 for v in r] for r, m in zip(rows, big)])
        for j in range(len(rows)):
            for i in range(j):
                if big[j] != 0 and big[i] != 0 and np.abs(U[j] - U[i]).max() <= tol:
                    new = [big[j] / big[i] * v for v in rows[i]]
                    net.W[l][j], net.b[l][j] = new[:-1], new[-1]
                    break


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6), tol=st.sampled_from([1e-9, 1e-6, 1e-3]), copies=st.integers(1, 6)
)
def test_snapping_finds_the_same_partners_as_every_pair(seed, tol, copies):
    from neuromanifold.relu._core.net import exact_params
    from neuromanifold.relu._reduction.reduction import _Net, _snap

    rng = np.random.default_rng(seed)
    P = ReLUNet([3, 12, 4, 1]).random_params(seed=seed)
    W, b = P[0]
    for _ in range(copies):  # rows near a positive multiple of another, some at tol
        j, i = rng.choice(12, 2, replace=False)
        c = np.exp(rng.uniform(-1, 1))
        noise = rng.choice([0.0, 0.4, 0.99, 1.01, 3.0]) * tol
        W[j], b[j] = c * W[i] * (1 + noise), c * b[i]
    ex = exact_params(P)
    a, r = (
        _Net([m for m, _ in ex], [v for _, v in ex]),
        _Net([m for m, _ in ex], [v for _, v in ex]),
    )
    _snap(a, tol)
    _snap_by_every_pair(r, tol)
    assert a.W == r.W and a.b == r.b


def test_reduce_checks_its_output_against_its_input():
    """The tripwire of reduce: the reduced network is evaluated against the given one at
    points of the domain in exact arithmetic; a changed function (a planted wrong
    reduction) raises instead of being returned."""
    from neuromanifold.relu._core.domain import as_domain
    from neuromanifold.relu._core.net import exact_params
    from neuromanifold.relu._reduction.reduction import _spot_check

    p = ReLUNet([3, 5, 4, 2]).random_params(seed=0)
    dom = as_domain((-1.0, 1.0), 3)
    ex = exact_params(p)
    assert _spot_check(ex, ex, 0.0, dom, None) == 8
    q = [(W.copy(), b.copy()) for W, b in p]
    q[-1][1][0] += 1e-6
    with pytest.raises(RuntimeError, match="internal check failed"):
        _spot_check(ex, exact_params(q), 0.0, dom, None)
    assert _spot_check(ex, exact_params(q), 2e-6, dom, None) == 8  # within the bound: passes
    r = reduce(p, (-1.0, 1.0))
    assert "checked against the given one at 8 points" in r.note
