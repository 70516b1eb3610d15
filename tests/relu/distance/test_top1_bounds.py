"""top1 by the bound engine (``relu/_distance/top1.py``): its verdicts agree with the
exact joint regions on small networks (a proof never where the regions find a
counterexample), every counterexample is checked exactly, and a wrong relaxation slope
(a mutation) makes the proof wrong on these instances."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import relu


def _pair(seed: int, noise: float):
    net = relu.ReLUNet([2, 5, 4, 3])
    p = net.random_params(seed)
    rng = np.random.default_rng(seed + 1)
    q = [(W + noise * rng.standard_normal(W.shape), b.copy()) for W, b in p]
    return p, q


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10**5),
    noise=st.sampled_from([0.0, 1e-13, 1e-4, 3e-2]),
    radius=st.sampled_from([0.05, 1.0]),
)
def test_the_bound_engines_verdict_agrees_with_the_joint_regions(seed, noise, radius):
    p, q = _pair(seed, noise)
    c = np.random.default_rng(seed).uniform(-1, 1, 2)
    box = (c - radius, c + radius)
    by_bounds = relu.distance(p, q, box, method="bounds", top1=True, time_limit=10).top1
    by_regions = relu.distance(p, q, box, method="regions", top1=True, time_limit=30).top1
    if by_bounds.same is not None and by_regions.same is not None:
        assert by_bounds.same == by_regions.same
    if by_bounds.same is False:
        assert by_bounds.witness is not None and by_bounds.margin > 0
    if noise <= 1e-13:  # equal up to rounding: proved at once by the difference chain
        assert by_bounds.same is True and by_bounds.method == "branch_and_bound"


def test_a_box_where_both_rank_one_class_first_is_proved():
    p, q = _pair(3, 1e-2)
    X = np.random.default_rng(0).uniform(-1, 1, (2000, 2))
    P, Q = relu.forward(p, X), relu.forward(q, X)
    margin = np.sort(P, axis=1)[:, -1] - np.sort(P, axis=1)[:, -2]
    x = X[np.argmax(margin)]  # far from p's decision boundaries
    box = (x - 1e-3, x + 1e-3)
    r = relu.distance(p, q, box, method="bounds", top1=True, time_limit=10).top1
    assert P[np.argmax(margin)].argmax() == Q[np.argmax(margin)].argmax()
    assert r.same is True and r.method == "branch_and_bound"


def _blind_search(p, q, box, seconds=1.0):
    """The bound engine's search with its counterexample checks blinded: it can only
    prove or run out of time."""
    import time

    from neuromanifold.relu._distance.top1 import top1_by_bounds

    return top1_by_bounds(
        p,
        q,
        None,
        box[0],
        box[1],
        1e-9,
        deadline=time.monotonic() + seconds,
        counterexample=lambda x: False,
    )


def _different_pairs():
    """Pairs the exact joint regions prove different on [-1, 1]^2."""
    box = (-np.ones(2), np.ones(2))
    for seed in range(40):
        p, q = _pair(seed, 3e-2)
        if relu.distance(p, q, box, method="regions", top1=True, time_limit=30).top1.same is False:
            yield p, q, box


def test_never_a_proof_where_the_exact_engine_finds_a_counterexample():
    """Blinded to counterexamples, the search must never prove 'same' where the exact
    engine proves them different (it can only run out of time there)."""
    pairs = list(_different_pairs())[:2]
    assert pairs
    for p, q, box in pairs:
        assert _blind_search(p, q, box).same is not True


def test_a_wrong_slope_breaks_the_proof():
    """A mutation of the relaxation (the upper relaxation's slope scaled by 0.3, no longer
    a bound) proves 'same' where the exact engine finds a counterexample: the test above
    catches such a mutation."""
    from unittest import mock

    from neuromanifold.relu._bounds import linear

    real = linear._relu_relaxation

    def wrong(lo, hi, slope):
        out = real(lo, hi, slope)
        return (0.3 * out[0],) + tuple(out[1:])

    with mock.patch.object(linear, "_relu_relaxation", wrong):
        assert any(_blind_search(p, q, box).same is True for p, q, box in _different_pairs())
