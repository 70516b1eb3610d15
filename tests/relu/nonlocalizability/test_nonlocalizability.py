"""Non-localizability (relu._nonlocal): the three identifiability facts of the examples
recomputed by independent paths (float Jacobians sampled inside every linear region, the
exact region engine on the witness, a brute-force search for cancelling orientations), on
the examples, random and adversarial parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import ArchitectureError, InputError, relu
from neuromanifold.relu.symmetries import Permutation, Scaling, apply_sequence
from tests.support.nonlocalizability import cancelling, halves, sampled_rank
from tests.support.symmetry import same_orbit


@pytest.mark.parametrize("kind", ["always-active", "ramp"])
def test_example_facts_recomputed_independently(kind):
    r = relu.nonlocalizable_example(kind=kind)
    p = r.params
    assert r.nonlocalizable and r.certified
    (W1, b1), (W2, b2), (W3, b3) = p
    n1, n2 = W1.shape[0], W2.shape[0]
    N, g = halves(p)
    P12 = W1.size + b1.size + W2.size + b2.size
    # f2 o f1: the Jacobian w.r.t. (W1, b1, W2, b2) has rank P12 - n1
    assert sampled_rank(N, P12) == P12 - n1 == r.first_two.rank
    # f3 o f2 on R^{n1}: rank P23 - n2, and no orientations can be reversed
    P23 = W2.size + b2.size + W3.size + b3.size
    assert sampled_rank(g) == P23 - n2 == r.last_two.rank
    assert cancelling(p) == []
    # the whole: the witness is equivalent (exact region engine, exactly), off the orbit
    q = r.whole.witness
    assert relu.equivalent(p, q, method="regions", tol=0).equivalent
    assert not same_orbit(p, q)
    P = sum(W.size + b.size for W, b in p)
    whole_rank = sampled_rank(p)
    assert whole_rank == r.whole.rank
    if kind == "always-active":  # a continuous fiber direction: the bias shift into b3
        assert whole_rank < P - n1 - n2
        for s in (0.5, 2.0):
            q2 = [(W1, b1), (W2, b2 + s * np.eye(n2)[0]), (W3, b3 - s * W3[:, 0])]
            assert relu.equivalent(p, q2, method="regions", tol=0).equivalent
    else:  # discrete only
        assert whole_rank == P - n1 - n2
    # the witness is not a symmetry of either half: f2 o f1 changes, or its f3 o f2 is
    # another function on R^{n1} (or both)
    Nq, gq = halves(q)
    assert not relu.equivalent(N, Nq, method="regions", tol=0).equivalent
    assert not relu.equivalent(g, gq, method="regions", tol=0).equivalent or not np.allclose(
        W1, q[0][0]
    )


def test_cancelling_orientations_make_f3_f2_non_identifiable():
    # rows (1, 0 | 0.5) and (-1, 0 | 0.25) with equal outgoing weights: their linear parts
    # cancel, so both neurons can be reversed on R^{n1}
    p = [
        (np.array([[1.0, 0.5], [-0.5, 1.0]]), np.array([0.25, -0.5])),
        (np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([0.5, 0.25])),
        (np.array([[1.0, 1.0]]), np.array([0.0])),
    ]
    assert cancelling(p) == [(0, 1)]
    r = relu.nonlocalizability(p, tol=0)
    assert r.last_two.identifiable is False and r.last_two.certified
    assert r.last_two.evidence["cancelling_subsets"] == [[0, 1]]
    g, gq = halves(p)[1], r.last_two.witness
    assert relu.equivalent(g, gq, method="regions", tol=0).equivalent
    assert not same_orbit(g, gq)
    assert not r.nonlocalizable


def test_hidden_hyperplane_or_dead_neuron_breaks_f2_f1():
    # a hiding row: the translation keeps the second layer's output, so f2 o f1 has the
    # same continuous freedom as the whole (not nonlocalizable)
    hid = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0]]), np.array([-0.5])),
        (np.ones((1, 1)), np.zeros(1)),
    ]
    dead = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0], [-1.0, -0.5]]), np.array([0.5, -0.5])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    for p in (hid, dead):
        r = relu.nonlocalizability(p)
        N, _ = halves(p)
        P12 = sum(W.size + b.size for W, b in p[:2])
        assert sampled_rank(N, P12) < P12 - 2
        assert r.first_two.identifiable is False and not r.nonlocalizable
        assert r.whole.identifiable is False


def test_generic_mixed_rows_are_identifiable_everywhere():
    p = [
        (np.array([[1.0, 0.5], [-0.5, 1.0]]), np.array([0.25, -0.5])),
        (np.array([[1.0, -0.5], [-1.0, 1.0]]), np.array([0.25, 0.5])),
        (np.array([[1.0, -0.75]]), np.array([0.5])),
    ]
    r = relu.nonlocalizability(p)
    assert r.first_two.identifiable and r.last_two.identifiable
    assert r.whole.identifiable is None and r.whole.rank == r.whole.bound
    assert not r.nonlocalizable and not r.certified and r.mechanism is None


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**20), widths=st.sampled_from([(2, 2, 2, 1), (2, 1, 2, 1), (3, 2, 2, 1)])
)
def test_random_verdicts_hold_up(seed, widths):
    """For random parameters: every claimed witness of the whole is an equivalent
    parameter off the orbit (exact engine), and every 'identifiable' half has full
    sampled rank."""
    d, n1, n2, n3 = widths
    p = relu.ReLUNet(list(widths)).random_params(seed)
    r = relu.nonlocalizability(p)
    N, g = halves(p)
    P12 = sum(W.size + b.size for W, b in p[:2])
    assert (sampled_rank(N, P12, seed=seed) == P12 - n1) == bool(r.first_two.identifiable)
    if r.last_two.identifiable:
        assert sampled_rank(g, seed=seed) == r.last_two.bound and not cancelling(p)
    if r.whole.identifiable is False:
        q = r.whole.witness
        assert relu.equivalent(p, q, method="regions").equivalent and not same_orbit(p, q)
    assert r.nonlocalizable == bool(
        r.first_two.identifiable and r.last_two.identifiable and r.whole.identifiable is False
    )


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**20))
def test_orbit_distance_vanishes_exactly_on_the_orbit(seed):
    rng = np.random.default_rng(seed)
    p = relu.ReLUNet([3, 3, 2, 2]).random_params(rng)
    moved = apply_sequence(
        [
            Permutation(1, tuple(rng.permutation(3))),
            Scaling(1, tuple(rng.uniform(0.2, 5.0, 3))),
            Permutation(2, tuple(rng.permutation(2))),
            Scaling(2, tuple(rng.uniform(0.2, 5.0, 2))),
        ],
        p,
    )
    assert relu.orbit_distance(p, moved) < 1e-12
    other = [(W.copy(), b.copy()) for W, b in moved]
    other[1][1][0] += 0.1
    assert relu.orbit_distance(p, other) > 1e-3


def test_search_counts_are_consistent():
    s = relu.search_nonlocalizable([(2, 2, 2, 1), (2, 1, 2, 1)], num_samples=6, seed=3)
    assert s.total_samples == 12 and len(s.architectures) == 2
    for a in s.architectures:
        assert a["nonlocalizable"] <= min(
            a["first_two_identifiable"], a["last_two_identifiable"], a["whole_not_identifiable"]
        )
        assert a["rate"] == a["nonlocalizable"] / a["num_samples"]
        assert sum(a["mechanisms"].values()) == a["nonlocalizable"]
        if a["example"] is not None:
            ex = [(np.array(W), np.array(b)) for W, b in a["example"]]
            assert relu.nonlocalizability(ex).nonlocalizable
    assert s.total_nonlocalizable == sum(a["nonlocalizable"] for a in s.architectures)
    assert s.to_dict()["architectures"][0]["widths"] == [2, 2, 2, 1]


def test_input_errors():
    with pytest.raises(InputError, match="kind must be one of"):
        relu.nonlocalizable_example(kind="dead")
    with pytest.raises(ArchitectureError, match="n1 <= d"):
        relu.search_nonlocalizable((1, 2, 1, 1), num_samples=1)
    with pytest.raises(ArchitectureError, match="four widths"):
        relu.search_nonlocalizable([(1, 1, 1)], num_samples=1)
    with pytest.raises(InputError, match="num_samples must be at most"):
        relu.search_nonlocalizable((1, 1, 1, 1), num_samples=10**9)
    with pytest.raises(ArchitectureError, match="three-layer"):
        relu.nonlocalizability([(np.eye(1), np.zeros(1))])
    with pytest.raises(ArchitectureError, match="same widths"):
        relu.orbit_distance([(np.eye(1), np.zeros(1))], [(np.eye(2), np.zeros(2))])


def test_a_permuted_rescaled_copy_is_no_witness():
    from neuromanifold.relu._nonlocalizability.nonlocalizability import verify_point

    p = relu.nonlocalizable_example().params
    q = apply_sequence([Permutation(1, (1, 0)), Scaling(2, (2.0, 0.5))], p)
    check = verify_point(p, q, 0.0)
    assert check["equivalent"] and check["exactly_equal"]
    assert not check["off_orbit"] and not check["verified"]
