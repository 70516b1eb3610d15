"""Branch and bound on several processes, here or on a Dask cluster.

The boxes of a branch and bound are independent. It runs in rounds: the open boxes (at
first the root box split in as many parts as there are workers) are dealt out, worst
bound first, to one task per worker; each task runs the serial
:func:`~neuromanifold.relu._bounds.branch.branch_and_bound` on its share for a slice of the
time (``ROUND`` seconds, or to the deadline) and hands back its open boxes; the next round
deals them out again, so no worker idles on an easy share while another holds the hard
boxes. The answers are joined: the upper end is the largest bound of the open boxes (each
rigorous on its box), the lower end the largest value found. The
tasks run on a process pool (``workers`` processes) or, given a scheduler address, on a
Dask cluster through its ``concurrent.futures`` executor (``"local"``: a ``LocalCluster``
of ``workers`` processes started for the call).
"""

from __future__ import annotations

import concurrent.futures
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import InputError, WorkerError, short_repr
from ..._validation import check_workers
from .._core.processes import process_context
from .branch import BranchAndBound, branch_and_bound, input_reach, settled
from .linear import Chain

__all__ = ["parallel_branch_and_bound", "split_box", "check_parallel"]


def check_parallel(workers: Any, scheduler: Any) -> tuple[int, str | None]:
    """Validated ``(workers, scheduler)``: a positive number of processes, and ``None``, a
    Dask scheduler address or ``"local"``."""
    workers = check_workers(workers)
    if scheduler is not None and not (
        isinstance(scheduler, str)
        and (scheduler == "local" or re.fullmatch(r"(tcp|tls|ucx|ws|wss|inproc)://\S+", scheduler))
    ):
        raise InputError(
            f"scheduler must be a Dask scheduler address (tcp://HOST:8786; tls, ucx, ws "
            f"and wss too) or 'local'; got {short_repr(scheduler)}"
        )
    return workers, scheduler


def split_box(
    lo: np.ndarray, hi: np.ndarray, count: int, reach: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """At least ``count`` sub-boxes covering the box (its widest coordinate halved, box by
    box, the widest first; widths weighed by ``reach``, as the branch and bound splits,
    see :func:`~neuromanifold.relu._bounds.branch.input_reach`); fewer when every
    coordinate is fixed."""
    boxes = [(np.asarray(lo, float), np.asarray(hi, float))]
    weight = np.ones_like(boxes[0][0]) if reach is None else np.asarray(reach, float)
    while len(boxes) < count:
        widths = [float(np.max((h - l) * weight)) for l, h in boxes]
        i = int(np.argmax(widths))
        if widths[i] <= 0:
            break
        l, h = boxes.pop(i)
        k = int(np.argmax((h - l) * weight))
        mid = l[k] + (h[k] - l[k]) / 2
        left_h, right_l = h.copy(), l.copy()
        left_h[k], right_l[k] = mid, mid
        boxes += [(l, left_h), (right_l, h)]
    return boxes


#: seconds per round: long enough that sending the boxes back and forth (milliseconds)
#: is negligible, short enough that the shares are dealt out again often
ROUND = 2.0


def _task(chain, lo, hi, evaluate, kwargs) -> BranchAndBound:
    return branch_and_bound(chain, lo, hi, evaluate, **kwargs)


def parallel_branch_and_bound(
    chain: Chain,
    lo: np.ndarray,
    hi: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    *,
    workers: int,
    scheduler: str | None = None,
    gap: float,
    deadline: float | None,
    lower: float = -np.inf,
    point: np.ndarray | None = None,
    decide: float | None = None,
    **kwargs,
) -> BranchAndBound:
    """:func:`~neuromanifold.relu._bounds.branch.branch_and_bound` in rounds on ``workers``
    processes or a Dask cluster (see the module docs); ``kwargs`` are the serial call's
    other options (``offsets``, ``batch``, ...). ``chain`` and ``evaluate`` must pickle
    (module-level classes, not closures). With one worker and no scheduler it is the
    serial call, in this process."""
    if workers == 1 and scheduler is None:
        return branch_and_bound(
            chain,
            lo,
            hi,
            evaluate,
            gap=gap,
            deadline=deadline,
            lower=lower,
            point=point,
            decide=decide,
            **kwargs,
        )
    best, best_x = float(lower), point
    opened: list | None = None  # None: the first round starts from the parts of the box
    num_boxes = 0
    with _executor(workers, scheduler, deadline) as pool:
        while True:
            now = time.monotonic()
            until = now + ROUND if deadline is None else min(deadline, now + ROUND)
            common = dict(kwargs, gap=gap, deadline=until, lower=best, point=best_x, decide=decide)
            if opened is None:
                shares = [
                    dict(common, start=None, box=b)
                    for b in split_box(lo, hi, workers, input_reach(chain))
                ]
            else:
                opened.sort(key=lambda item: -item[0])
                shares = [dict(common, start=opened[w::workers]) for w in range(workers)]
                shares = [sh for sh in shares if sh["start"]]
            futures = [
                pool.submit(_task, chain, *sh.pop("box", (lo, hi)), evaluate, sh) for sh in shares
            ]
            results = [f.result() for f in futures]
            num_boxes += sum(r.num_boxes for r in results)
            for r in results:
                if r.lower > best:
                    best, best_x = r.lower, r.point
            opened = [item for r in results for item in r.open_boxes if item[0] > best]
            top = max((item[0] for item in opened), default=-np.inf)
            upper = max(top, best)
            if (
                settled(upper, best, gap, decide)
                or (decide is not None and (best > decide or upper <= decide))
                or (deadline is not None and time.monotonic() >= deadline)
            ):
                break
    return BranchAndBound.of(
        upper=upper, lower=best, point=best_x, gap=gap, num_boxes=num_boxes, open_boxes=opened
    )


class _executor:
    """A process pool of ``workers`` processes, or a Dask cluster's executor (a client
    connected to ``scheduler``, or to a ``LocalCluster`` started for ``"local"``)."""

    def __init__(self, workers: int, scheduler: str | None, deadline: float | None = None):
        self.workers, self.scheduler, self.deadline = workers, scheduler, deadline
        self.client = self.cluster = None

    def __enter__(self):
        if self.scheduler is None:
            self.pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=process_context("neuromanifold.relu._bounds.parallel"),
            )
            return self.pool
        from dask.distributed import Client, LocalCluster  # optional extra: dask

        if self.scheduler == "local":
            self.cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.client = Client(self.cluster)
        else:
            # connecting counts against the time limit (Dask waits 30 s by default)
            wait = 30.0 if self.deadline is None else self.deadline - time.monotonic()
            wait = max(1.0, min(30.0, wait))
            try:
                self.client = Client(self.scheduler, timeout=wait)
            except (OSError, TimeoutError) as exc:
                raise WorkerError(
                    f"cannot reach the Dask scheduler at {self.scheduler!r} within {wait:.0f} "
                    f"s ({type(exc).__name__}: {exc}); start it first, or run with "
                    f"scheduler='local' or workers=N processes on this machine"
                ) from None
        return self.client.get_executor()

    def __exit__(self, *exc):
        if self.scheduler is None:
            self.pool.shutdown(cancel_futures=True)
        else:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        return False
