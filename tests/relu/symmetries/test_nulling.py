"""The reduction as moves that keep the widths, and the symmetry ``equivalent`` returns when
its reduction step decides: every state of the nulling computes the same function (the exact
region engine decides), the nulled network has no neuron left to remove, and the returned
symmetry, applied to p, lands on q."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import relu
from neuromanifold.relu._symmetries.nulling import null_moves, reduction_symmetry
from neuromanifold.relu.symmetries import ActiveBiasShift, apply_sequence
from tests.relu.symmetries.test_any_depth import WIDTHS, drawn, gaussian, move_for
from tests.support.symmetry import ground_truth_equivalent

KINDS = ["dead", "active", "silent", "parallel"]


def orbit_copy(rng, P):
    """``P`` with every hidden layer permuted and rescaled (scales in [1/4, 4])."""
    Q = [(W.copy(), b.copy()) for W, b in P]
    for l in range(len(Q) - 1):
        n = Q[l][0].shape[0]
        perm, s = rng.permutation(n), np.exp(rng.uniform(np.log(0.25), np.log(4.0), n))
        W, b = Q[l]
        Q[l] = (s[:, None] * W[perm], s * b[perm])
        Wn, bn = Q[l + 1]
        Q[l + 1] = (Wn[:, perm] / s[None, :], bn)
    return Q


def null_count(P):
    return sum(int(np.sum(~np.any(np.hstack([W, b[:, None]]) != 0, axis=1))) for W, b in P[:-1])


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(WIDTHS), st.sampled_from(KINDS), st.data())
def test_every_state_keeps_the_function_and_nothing_is_left(seed, widths, kind, data):
    rng = np.random.default_rng(seed)
    P, layer = drawn(rng, widths, kind, data)
    moves, inverses, nulled = null_moves(P)
    assert len(inverses) == len(moves)
    state = P
    for move, undo in zip(moves, inverses):
        after = move.apply(state, tol=0)  # each applies exactly, in order
        back = undo.apply(after, tol=0)
        assert all(
            np.allclose(A, B, atol=1e-12) and np.allclose(a, c, atol=1e-12)
            for (A, a), (B, c) in zip(back, state)
        )
        state = after
    assert all(
        np.array_equal(A, B) and np.array_equal(a, c) for (A, a), (B, c) in zip(state, nulled)
    )
    assert ground_truth_equivalent(P, nulled)
    assert null_moves(nulled)[0] == []  # nothing left to null
    if kind in ("dead", "silent", "parallel") or layer == 1:
        assert null_count(nulled) >= 1


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(WIDTHS), st.sampled_from(KINDS), st.data())
def test_equivalent_returns_a_symmetry_that_lands_on_q(seed, widths, kind, data):
    rng = np.random.default_rng(seed)
    P, layer = drawn(rng, widths, kind, data)
    Q = orbit_copy(rng, move_for(P, kind, layer).apply(P))
    e = relu.equivalent(P, Q)
    assert e.equivalent and e.certified
    if e.method == "reduction":
        assert e.symmetry, e.note
        image = apply_sequence(e.symmetry, P)
        scale = max(np.max(np.abs(W)) for W, _ in Q)
        for (A, a), (B, b) in zip(image, Q):
            assert np.allclose(A, B, atol=1e-9 * scale) and np.allclose(a, b, atol=1e-9 * scale)
        assert "named moves" in e.note


def test_networks_whose_reductions_differ_get_no_symmetry(rng):
    P = gaussian(rng, (3, 4, 3, 1))
    Q = gaussian(rng, (3, 4, 3, 1))
    assert reduction_symmetry(P, Q, 1e-9) is None
    assert reduction_symmetry(P, gaussian(rng, (3, 4, 2, 1)), 1e-9) is None


def test_a_constant_neuron_shifts_to_a_zero_row_and_back(rng):
    P = gaussian(rng, (2, 3, 2, 1))
    W, b = P[0]
    W[1], b[1] = 0.0, 1.5  # constant: relu(1.5)
    move = ActiveBiasShift(1, 1, -1.5)
    assert move.applies(P, tol=0).applies
    Q = move.apply(P)
    assert not np.any(Q[0][0][1]) and Q[0][1][1] == 0.0
    assert ground_truth_equivalent(P, Q)
    back = move.inverse(P)
    assert back.applies(Q, tol=0).applies
    assert not ActiveBiasShift(1, 1, -2.0).applies(P, tol=0).applies  # z + t < 0


def test_scales_beyond_the_float_range_leave_the_verdict_without_a_symmetry():
    """q is p with a neuron rescaled by 2^1040 (and a dead neuron): no float holds the
    scale, so no symmetry is returned, and the verdict stands (an OverflowError before)."""
    e1, e2 = 2.0**-520, 2.0**520
    p = [
        (np.array([[e1, 0.0], [0.0, 0.0]]), np.array([0.0, -1.0])),
        (np.array([[e2, 1.0]]), np.array([0.0])),
    ]
    q = [
        (np.array([[e2, 0.0], [0.0, 0.0]]), np.array([0.0, -1.0])),
        (np.array([[e1, 5.0]]), np.array([0.0])),
    ]
    with np.errstate(all="ignore"):
        e = relu.equivalent(p, q, tol=0)
    assert e.equivalent and e.certified and not e.symmetry
