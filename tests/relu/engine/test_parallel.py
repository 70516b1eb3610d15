"""Region enumeration on worker processes (relu/_parallel.py): the same stream as one
process, budgets that stop the workers, and a clear error when a worker dies."""

import multiprocessing
import os
import time

import numpy as np
import pytest

from neuromanifold import ComputationLimitError, InputError, WorkerError
from neuromanifold._validation import check_workers
from neuromanifold.relu import ReLUNet, iter_regions, regions
from neuromanifold.relu._core.domain import as_domain
from neuromanifold.relu._engine.cells import Engine, ExactNet
from neuromanifold.relu._engine.parallel import iter_leaves
from tests.support.relu import dyadic_net, flat_pattern


def _same(a, b):
    """Two Regions results agree region for region (order, pattern, exact map, point)."""
    assert a.num_regions == b.num_regions and a.counts == b.counts
    assert a.num_thin_regions == b.num_thin_regions and a.certified == b.certified
    for r, s in zip(a, b):
        assert r.index == s.index and flat_pattern(r) == flat_pattern(s)
        assert r.point_exact == s.point_exact and r.margin == s.margin
        assert np.array_equal(r.linear, s.linear) and np.array_equal(r.offset, s.offset)
        assert np.array_equal(r.A, s.A) and np.array_equal(r.c, s.c)


@pytest.mark.parametrize(
    "widths, domain, kw",
    [
        ([3, 6, 5, 1], None, {}),
        ([2, 5, 4, 3, 1], (-1.0, 1.0), {}),  # three stages
        ([3, 6, 5, 2], "orthant", {"certify": False}),
        ([2, 6, 6, 1], None, {"min_thickness": 1e-3}),  # thin regions left out
    ],
)
def test_workers_give_the_serial_stream(widths, domain, kw):
    p = ReLUNet(widths).random_params(3)
    serial = regions(p, domain, **kw)
    parallel = regions(p, domain, workers=2, **kw)
    _same(serial, parallel)
    # the counters are the serial ones: the same decisions, made elsewhere
    assert (parallel.num_walks, parallel.num_lps) == (serial.num_walks, serial.num_lps)


def test_workers_on_adversarial_networks():
    # exact coincidences (dyadic weights): zero pre-activations, dependent walls
    for seed in range(3):
        p = dyadic_net(np.random.default_rng(seed), [2, 6, 6, 1])
        _same(regions(p), regions(p, workers=2))


def test_one_hidden_layer_runs_in_process():
    p = ReLUNet([2, 7, 1]).random_params(0)
    before = set(multiprocessing.active_children())
    it = iter_regions(p, workers=2)
    assert sum(1 for _ in it) == 29 and it.finished
    assert set(multiprocessing.active_children()) == before


def _no_workers_left():
    """No worker process is left (each gets a few seconds to be reaped: a pool that
    broke is cleaned up by its manager thread)."""
    deadline = time.monotonic() + 15
    while multiprocessing.active_children() and time.monotonic() < deadline:
        for proc in multiprocessing.active_children():
            proc.join(timeout=1)
    left = multiprocessing.active_children()
    if left:
        print("left:", [(p.pid, p.exitcode, p.is_alive()) for p in left])
    return not left


def test_budgets_stop_the_workers():
    p = ReLUNet([3, 10, 10, 1]).random_params(0)
    with pytest.raises(ComputationLimitError, match="region limit") as err:
        regions(p, max_regions=50, workers=2)
    assert err.value.partial.num_regions == 50 and not err.value.partial.certified
    assert [flat_pattern(r) for r in err.value.partial] == [
        flat_pattern(r) for r in regions(p)[:50]
    ]
    assert _no_workers_left()
    # 4-16-16-1 has about 30,000 regions: far more than 0.3 s on any machine (3-10-10-1
    # was enumerated within it on a fast one)
    it = iter_regions(ReLUNet([4, 16, 16, 1]).random_params(0), time_limit=0.3, workers=2)
    with pytest.raises(ComputationLimitError, match="time limit"):
        for _ in it:
            pass
    assert not it.finished and _no_workers_left()


def test_closing_a_stream_early_stops_the_workers():
    it = iter_regions(ReLUNet([3, 10, 10, 1]).random_params(0), workers=2)
    first = [next(it) for _ in range(5)]
    assert [r.index for r in first] == list(range(5))
    it.close()
    assert _no_workers_left() and not it.finished
    with pytest.raises(StopIteration):
        next(it)


def _die(cell, nets):
    os._exit(3)


def test_a_dead_worker_is_a_clear_error():
    net = ExactNet(ReLUNet([2, 4, 4, 1]).random_params(0))
    leaves = iter_leaves([net], as_domain(None, 2), Engine(2), [], workers=2, leaf=_die)
    with pytest.raises(WorkerError, match=r"died .*workers=1"):
        list(leaves)
    assert _no_workers_left()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two", True])
def test_bad_workers(bad):
    with pytest.raises(InputError, match="workers"):
        iter_regions(ReLUNet([2, 3, 1]).random_params(0), workers=bad)


def test_workers_none_means_every_core():
    assert check_workers(None) == len(os.sched_getaffinity(0)) and check_workers(3) == 3


def _fail(cell, nets):
    raise ValueError("boom in a worker")


def test_an_error_in_a_worker_is_raised_here():
    net = ExactNet(ReLUNet([2, 4, 4, 1]).random_params(0))
    with pytest.raises(ValueError, match="boom in a worker"):
        list(iter_leaves([net], as_domain(None, 2), Engine(2), [], workers=2, leaf=_fail))
    assert _no_workers_left()


def test_a_time_limit_stops_workers_busy_with_large_tasks():
    # workers killed while sending large results must not leave anything waiting on a
    # half-written message (a former pool hung there)
    p = ReLUNet([8, 16, 16, 1]).random_params(0)
    it = iter_regions(p, (-1.0, 1.0), time_limit=1.0, workers=2)
    t0 = time.monotonic()
    with pytest.raises(ComputationLimitError, match="time limit"):
        for _ in it:
            pass
    assert time.monotonic() - t0 < 30 and _no_workers_left()
