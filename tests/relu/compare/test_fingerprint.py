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
