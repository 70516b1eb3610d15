"""Branch and bound on the box: its interval contains the exact supremum (the region
engine's), shrinks to it, and honours its budget."""

import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu import ReLUNet, distance
from neuromanifold.relu._bounds.branch import branch_and_bound
from neuromanifold.relu._bounds.linear import difference_chain, product_chain
from neuromanifold.relu._core.net import forward_unchecked


def _gap_of(p, q):
    def value(X):
        return np.max(np.abs(forward_unchecked(p, X) - forward_unchecked(q, X)), axis=1)

    return value


@settings(max_examples=4, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    widths=st.sampled_from([[2, 4, 1], [2, 5, 4, 2], [3, 4, 3, 1]]),
    size=st.sampled_from([1e-3, 0.1, 1.0]),
)
def test_the_interval_contains_the_exact_supremum_and_closes_on_it(seed, widths, size):
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed=seed)
    q = [
        (W + size * rng.standard_normal(W.shape), b + size * rng.standard_normal(b.shape))
        for W, b in p
    ]
    d = widths[0]
    lo, hi = -np.ones(d), np.ones(d)
    exact = distance(p, q, (lo, hi), method="regions", gap=0, time_limit=None)
    # exact.lower <= sup <= exact.upper, equal up to the float rounding of the maximizer
    for chain in (difference_chain(p, q), product_chain(p, q)):
        r = branch_and_bound(
            chain, lo, hi, _gap_of(p, q), gap=1e-3 * exact.upper, deadline=time.monotonic() + 20
        )
        assert r.upper >= exact.lower  # contains the exact supremum
        assert r.lower <= exact.upper * (1 + 1e-12)
        if r.converged:
            assert r.upper - exact.upper <= 1e-3 * exact.upper * (1 + 1e-9) + 1e-12


def test_a_budget_of_boxes_and_of_time_holds():
    p = ReLUNet([4, 16, 16, 2]).random_params(seed=0)
    q = ReLUNet([4, 16, 16, 2]).random_params(seed=1)
    lo, hi = -np.ones(4), np.ones(4)
    r = branch_and_bound(
        difference_chain(p, q),
        lo,
        hi,
        _gap_of(p, q),
        gap=0.0,
        deadline=None,
        max_boxes=100,
        batch=8,
    )
    assert not r.converged and r.num_boxes <= 100 + 16 and r.upper >= r.lower
    t = time.monotonic()
    r = branch_and_bound(
        difference_chain(p, q), lo, hi, _gap_of(p, q), gap=0.0, deadline=time.monotonic() + 0.5
    )
    assert time.monotonic() - t < 3.0 and not r.converged


def test_the_upper_end_never_grows():
    p = ReLUNet([3, 8, 8, 1]).random_params(seed=2)
    q = ReLUNet([3, 8, 8, 1]).random_params(seed=3)
    lo, hi = -np.ones(3), np.ones(3)
    ups = [
        branch_and_bound(
            difference_chain(p, q),
            lo,
            hi,
            _gap_of(p, q),
            gap=0.0,
            deadline=None,
            max_boxes=n,
            batch=4,
        ).upper
        for n in (1, 20, 80, 320)
    ]
    assert all(a >= b for a, b in zip(ups, ups[1:]))


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10**6), widths=st.sampled_from([[3, 6, 5, 2], [4, 8, 8, 1]]))
def test_the_splits_do_not_depend_on_the_inputs_units(seed, widths):
    """The same networks on a box and on the unit box mapped onto it (the first layer
    composed with the map) are split alike: the same bounds box for box."""
    rng = np.random.default_rng(seed)
    p = ReLUNet(widths).random_params(seed=seed)
    q = [(W + 0.1 * rng.standard_normal(W.shape), b) for W, b in p]
    d = widths[0]
    lo = rng.uniform(-3, 0, d)
    hi = lo + rng.uniform(0.01, 10.0, d) ** 2
    lo[0] = hi[0] = 0.5  # a fixed coordinate, folded in as VNN-COMP's boxes have it

    def unit(net):
        (W, b), rest = net[0], net[1:]
        return [(W * (hi - lo), b + W @ lo)] + rest

    runs = []
    for nets, box in (((p, q), (lo, hi)), ((unit(p), unit(q)), (np.zeros(d), np.ones(d)))):
        bb = branch_and_bound(
            difference_chain(*nets), *box, _gap_of(*nets), gap=0.0, deadline=None, max_boxes=60
        )
        runs.append(bb)
    # the two bound the same boxes (up to the rounding of the composed first layer, which
    # can only tip a tie between a box's bound and the best value once both close)
    assert np.isclose(runs[0].upper, runs[1].upper, rtol=1e-6, atol=1e-9)
    if not (runs[0].converged or runs[1].converged):
        assert runs[0].num_boxes == runs[1].num_boxes
    # the fixed coordinate spans [0, 1] in the unit box, and the networks ignore it there:
    # never split
    for _, blo, bhi, _ in runs[1].open_boxes:
        assert blo[0] == 0.0 and bhi[0] == 1.0


def test_a_box_within_the_gap_that_straddles_the_threshold_is_split_on():
    from neuromanifold.relu._bounds.branch import settled

    assert settled(1.0, 0.5, 0.6, None)
    assert not settled(1.0, 0.5, 0.6, 0.8)  # within the gap, but straddling 0.8
    assert settled(0.7, 0.5, 0.6, 0.8) and settled(1.0, 0.9, 0.6, 0.8)
    assert not settled(1.0, 0.5, 0.4, None)
    assert settled(0.5, 0.5, 0.0, 0.4)  # gap 0: the query's own stop rule decides

    rng = np.random.default_rng(3)
    p = ReLUNet([3, 8, 8, 2]).random_params(seed=3)
    q = [(W + 0.05 * rng.standard_normal(W.shape), b) for W, b in p]
    lo, hi = -np.ones(3), np.ones(3)
    chain, value = difference_chain(p, q), _gap_of(p, q)
    root = branch_and_bound(chain, lo, hi, value, gap=1e9, deadline=None)
    exact = branch_and_bound(chain, lo, hi, value, gap=1e-9, deadline=None)
    assert root.upper > 1.5 * exact.upper  # the root alone straddles the threshold below
    threshold = (root.upper + exact.upper) / 2
    bb = branch_and_bound(chain, lo, hi, value, gap=1e9, deadline=None, decide=threshold)
    assert bb.upper <= threshold and bb.num_boxes > 1
