"""Branch and bound in rounds on processes and on Dask: the same certified interval as the
serial run (both contain the exact supremum and close on it), the parts cover the box."""

import time

import numpy as np
import pytest

from neuromanifold.relu import DifferenceQuery, ReLUNet, distance, verify
from neuromanifold.relu._bounds.branch import branch_and_bound
from neuromanifold.relu._bounds.linear import difference_chain
from neuromanifold.relu._bounds.parallel import parallel_branch_and_bound, split_box
from neuromanifold.relu._equivalence.alignment import DifferenceAt


def test_the_parts_cover_the_box():
    rng = np.random.default_rng(0)
    lo, hi = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 0.0, 3.0])
    boxes = split_box(lo, hi, 7)
    assert len(boxes) >= 7
    X = rng.uniform(lo, hi, (2000, 3))
    inside = sum(np.all((X >= l) & (X <= h), axis=1) for l, h in boxes)
    assert np.all(inside >= 1)
    assert sum(np.prod((h - l)[[0, 2]]) for l, h in boxes) == pytest.approx(2.0)
    assert len(split_box(lo, lo, 4)) == 1  # a point has one part


@pytest.mark.parametrize("scheduler", [None, "local"])
def test_the_parallel_interval_is_the_serial_one(scheduler):
    rng = np.random.default_rng(3)
    p = ReLUNet([3, 8, 8, 2]).random_params(seed=3)
    q = [(W + 0.1 * rng.standard_normal(W.shape), b) for W, b in p]
    lo, hi = -np.ones(3), np.ones(3)
    exact = distance(p, q, (lo, hi), method="regions", gap=0, time_limit=None)
    gap = 1e-3 * exact.upper
    args = (difference_chain(p, q), lo, hi, DifferenceAt(p, q))
    serial = branch_and_bound(*args, gap=gap, deadline=time.monotonic() + 30)
    par = parallel_branch_and_bound(
        *args, workers=2, scheduler=scheduler, gap=gap, deadline=time.monotonic() + 60
    )
    for r in (serial, par):
        assert r.converged and r.upper >= exact.lower and r.lower <= exact.upper
        assert r.upper <= exact.upper + gap * (1 + 1e-9)


def test_distance_and_verify_take_workers():
    p = ReLUNet([4, 10, 10, 1]).random_params(seed=1)
    q = [(W * 1.001, b) for W, b in p]
    box = (-np.ones(4), np.ones(4))
    one = distance(p, q, box, method="bounds", time_limit=6)
    two = distance(p, q, box, method="bounds", time_limit=6, workers=2)
    assert "on 2 processes" in two.note
    assert two.lower <= one.upper and one.lower <= two.upper
    query = DifferenceQuery.within(*box, 10 * one.upper, 1)
    assert verify(p, q, query, workers=2).status == "unsat"
