"""Fingerprints: one per orbit (every symmetry for generic bottleneck networks, permutations
and rescalings at any depth), another for a near miss, the rule at a bucket edge, and the
grouping of a zoo of models by function."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import ReLUNet, fingerprint, group_by_function
from neuromanifold.relu.symmetries import random_orbit_point
from tests.support.relu import float_permuted_rescaled


def test_every_orbit_point_of_a_bottleneck_shares_the_fingerprint():
    p = ReLUNet([6, 4, 6, 2]).random_params(3)
    f = fingerprint(p)
    assert f.complete
    same = [fingerprint(random_orbit_point(p, seed=s)[0]).digest == f.digest for s in range(100)]
    assert all(same)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[3, 5, 1], [4, 6, 6, 2], [5, 8, 7, 6, 3]]),
    nudge=st.sampled_from([1e-7, 1e-5, 1e-2]),
)
def test_copies_share_it_and_near_misses_do_not(seed, widths, nudge):
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed)
    q = float_permuted_rescaled(p, rng)
    f, g = fingerprint(p), fingerprint(q)
    assert f.digest == g.digest or not (f.decisive and g.decisive)
    miss = [(W.copy(), b.copy()) for W, b in p]
    miss[0][1][0] += nudge * max(1.0, np.abs(np.r_[miss[0][0][0], miss[0][1][0]]).max())
    assert fingerprint(miss).digest != f.digest


def test_a_value_on_a_bucket_edge_is_flagged_and_grouped_by_equivalence():
    tol = 1e-9
    edge = (12345 + 0.5) * tol
    p = [
        (np.array([[1.0, edge], [0.5, -1.0]]), np.array([0.0, 0.25])),
        (np.array([[1.0, 2.0]]), np.array([0.0])),
    ]
    f = fingerprint(p, tol=tol)
    assert f.near_edge and not f.decisive
    # a rescaled copy: float rounding may move the edge value into the next bucket
    c = np.array([3.0, 0.7])
    q = [(c[:, None] * p[0][0], c * p[0][1]), (p[1][0] / c, p[1][1])]
    groups = group_by_function([p, q], tol=tol)
    assert groups.groups == ((0, 1),) and groups.certified


def test_a_zoo_of_50_models_groups_into_its_10_functions():
    rng = np.random.default_rng(0)
    nets, truth = [], []
    for f in range(10):
        p = ReLUNet([8, 12, 10, 3]).random_params(f)
        for c in range(5):
            nets.append(p if c == 0 else float_permuted_rescaled(p, rng))
            truth.append(f)
    groups = group_by_function(nets)
    assert len(groups.groups) == 10 and groups.certified
    assert all(len({truth[i] for i in g}) == 1 and len(g) == 5 for g in groups.groups)


def test_bad_input_and_round_trip():
    p = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(InputError, match="tol > 0"):
        fingerprint(p, tol=0)
    f = fingerprint(p)
    assert type(f).from_dict(f.to_dict()) == f and str(f) == f.digest and len(f.digest) == 16
    g = group_by_function([p, p])
    assert type(g).from_dict(g.to_dict()).to_dict() == g.to_dict() and g.groups == ((0, 1),)


def test_narrow_buckets_flag_the_float_noise_of_a_copy():
    """At tol = 1e-14 the rounding of a rescaled copy is a sizable part of a bucket: the
    fingerprint says it is not decisive rather than splitting two equivalent networks."""
    rng = np.random.default_rng(0)
    p = ReLUNet([3, 8, 8, 2]).random_params(0)
    q = float_permuted_rescaled(p, rng)
    f, g = fingerprint(p, tol=1e-14), fingerprint(q, tol=1e-14)
    assert f.digest == g.digest or not (f.decisive and g.decisive)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([(3, 4, 4, 2), (2, 5, 3, 1), (4, 3, 3, 3, 2)]),
    zero=st.sampled_from([0.0, -0.0]),
    data=st.data(),
)
def test_a_zero_row_does_not_split_a_permuted_rescaled_copy(seed, widths, zero, data):
    """A neuron whose row and bias are all (signed) zeros outputs 0 everywhere; rescaling it
    moved its outgoing weights and changed the digest of a decisive fingerprint (seed 28,
    3-4-4-2), which group_by_function reads as two functions."""
    from neuromanifold.relu import symmetries as S

    rng = np.random.default_rng(seed)
    p = ReLUNet(list(widths)).random_params(seed=seed)
    layer = data.draw(st.integers(0, len(widths) - 3))
    j = data.draw(st.integers(0, widths[layer + 1] - 1))
    p[layer][0][j, :] = zero
    p[layer][1][j] = zero
    moves = []
    for h in range(1, len(widths) - 1):
        moves.append(S.Permutation(h, tuple(rng.permutation(widths[h]).tolist())))
        moves.append(S.Scaling(h, tuple((2.0 ** rng.integers(-3, 4, widths[h])).tolist())))
    q = S.apply_sequence(moves, p)
    fp, fq = fingerprint(p), fingerprint(q)
    if fp.decisive and fq.decisive:
        assert fp.digest == fq.digest


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_function_at_another_depth_or_with_a_free_column_is_one_group(seed):
    """Digests differ where the function does not: an identity ReLU layer inserted (one
    layer deeper, relu(relu(z)) = relu(z)), and a dead neuron's outgoing weights changed
    (the same widths; no permutation or scaling relates the two). Both were split into
    two groups by their decisive fingerprints; distinct functions stay apart."""
    P = ReLUNet([3, 4, 4, 2]).random_params(seed=seed)
    deeper = [P[0], (np.eye(4), np.zeros(4)), P[1], P[2]]
    W1, b1 = P[0][0].copy(), P[0][1].copy()
    W1[0], b1[0] = np.zeros(3), -1.0  # relu(-1) = 0 everywhere: the column is free
    dead = [(W1, b1), P[1], P[2]]
    moved = [(W1, b1), (P[1][0].copy(), P[1][1]), P[2]]
    moved[1][0][:, 0] += 5.0
    other = ReLUNet([3, 4, 4, 2]).random_params(seed=seed + 100)
    r = group_by_function([P, deeper, dead, moved, other])
    assert r.groups == ((0, 1), (2, 3), (4,))
    assert r.certified
    assert fingerprint(dead).digest != fingerprint(moved).digest


def test_grouping_holds_its_time_limit_and_says_what_it_left_undecided():
    P = ReLUNet([3, 4, 4, 2]).random_params(seed=0)
    deeper = [P[0], (np.eye(4), np.zeros(4)), P[1], P[2]]
    r = group_by_function([P, deeper], time_limit=1e-9)  # past before the first check
    assert r.groups == ((0,), (1,)) and not r.certified
    assert "undecided at the time limit" in r.note
    with pytest.raises(InputError, match="verify"):
        group_by_function([P], verify="yes")


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([(3, 4, 4, 2), (4, 3, 5, 2), (2, 5, 3, 1), (4, 3, 3, 3, 2)]),
    places=st.lists(st.sampled_from(["row", "bias", "column", "entry"]), min_size=1, max_size=3),
    tol=st.sampled_from([1e-9, 1e-300]),
    data=st.data(),
)
def test_signed_zeros_do_not_change_a_digest(seed, widths, places, tol, data):
    """-0.0 planted in rows (with their biases), biases, columns and entries: the same
    network with +0.0 has the same digest (the same numbers; at tol = 1e-300 the buckets
    are floats, and a -0.0 bucket hashed as '-0.0'), and so has a permuted copy rescaled by
    powers of two (exact arithmetic) when both are decisive (3-4-4-2 seed 28 split)."""
    from neuromanifold.relu import symmetries as S

    rng = np.random.default_rng(seed)
    p = ReLUNet(list(widths)).random_params(seed=seed)
    for place in places:
        l = data.draw(st.integers(0, len(p) - 1))
        W, b = p[l]
        j, k = data.draw(st.integers(0, W.shape[0] - 1)), data.draw(st.integers(0, W.shape[1] - 1))
        if place == "row":
            W[j, :], b[j] = -0.0, -0.0
        elif place == "bias":
            b[j] = -0.0
        elif place == "column":
            W[:, k] = -0.0
        else:
            W[j, k] = -0.0
    plus = [(W + 0.0, b + 0.0) for W, b in p]
    moves = []
    for h in range(1, len(widths) - 1):
        moves.append(S.Permutation(h, tuple(rng.permutation(widths[h]).tolist())))
        moves.append(S.Scaling(h, tuple((2.0 ** rng.integers(-3, 4, widths[h])).tolist())))
    q = S.apply_sequence(moves, p)
    fp, fq = fingerprint(p, tol=tol), fingerprint(q, tol=tol)
    assert fingerprint(plus, tol=tol).digest == fp.digest
    if fp.decisive and fq.decisive:
        assert fp.digest == fq.digest
