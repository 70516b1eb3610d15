"""Region enumeration on several processes, in the serial order.

The split tree of the region engine (:mod:`neuromanifold.relu._engine`) has independent
sub-trees: once the first hidden layer has split the domain into cells, the sub-tree of
each such cell (the later layers) is enumerated without looking at any other.
:func:`iter_leaves` enumerates the first stage in the calling process, lazily, and hands
its cells a few at a time to worker processes. A worker enumerates their sub-trees with
the same engine (the same exact checks: a worker's region is certified like a serial
one), applies a function to every final cell (building a :class:`Region`, say) and sends
the results back. They are yielded in task order, so the stream is the serial stream,
item for item. At most a few tasks per worker are in flight: memory stays bounded.

Workers are forked when the calling process runs no other thread, and started by the
``forkserver`` method otherwise (forking a threaded process can deadlock the child;
``spawn`` where neither exists). They are stopped as soon as the stream ends, is
closed, or a budget is reached.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import flint

from .._errors import WorkerError

from ._engine import (Cell, Engine, EngineDeadline, ExactNet, initial_cell, iter_refine_stage,
                      iter_subtree, stages_of)

__all__ = ["iter_leaves", "resolve_workers"]

#: final cells a task should hold, roughly (the first-stage cells per task adapt to it)
_TASK_LEAVES = 64
#: tasks submitted and not finished, per worker (one running, the others queued)
_IN_FLIGHT = 3
#: tasks held per worker, finished ones included: a long task at the head of the stream
#: does not stop the other workers, whose results wait (bounded) for their turn
_WINDOW = 32


def resolve_workers(workers: Any) -> int:
    """The number of processes ``workers`` asks for: a positive int, or ``None`` for
    every core available to this process."""
    from .._validation import check_positive_int

    if workers is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not on Linux
            return os.cpu_count() or 1
    return check_positive_int(workers, "workers", maximum=4096)


# -- what crosses the process boundary ---------------------------------------------------

def _pack_net(net: ExactNet) -> tuple:
    return net.params, [(W.nrows(), W.ncols(), W.entries(), b) for W, b in zip(net.Wq, net.bq)]


def _unpack_net(packed: tuple) -> ExactNet:
    params, exact = packed
    return ExactNet(params, [(flint.fmpq_mat(r, c, e), list(b)) for r, c, e, b in exact])


def _pack_cell(cell: Cell) -> Cell:
    """The cell with its exact maps as ``(rows, cols, entries)`` (fmpq_mat does not pickle)."""
    return dataclasses.replace(cell, maps_q=[(M.nrows(), M.ncols(), M.entries())
                                             for M in cell.maps_q])


def _unpack_cell(cell: Cell) -> Cell:
    return dataclasses.replace(cell, maps_q=[flint.fmpq_mat(*m) for m in cell.maps_q])


# -- the worker side ---------------------------------------------------------------------

_WORKER: dict = {}


def _init_worker(packed_nets: list, certify: bool, leaf: Callable, leaf_args: tuple) -> None:
    _WORKER.update(nets=[_unpack_net(p) for p in packed_nets], certify=certify, leaf=leaf,
                   leaf_args=leaf_args)


def _run_task(cells: list[Cell]) -> tuple[list, list[int], tuple[int, ...]]:
    """The leaf results of the sub-trees of ``cells`` (first-stage cells), the cells
    reached per stage, and the engine's counters."""
    nets, leaf, args = _WORKER["nets"], _WORKER["leaf"], _WORKER["leaf_args"]
    engine = Engine(nets[0].d, certify=_WORKER["certify"])
    counts = [0] * len(stages_of(nets))
    out = []
    for packed in cells:
        for cell in iter_subtree(_unpack_cell(packed), 1, nets, engine, counts):
            out.append(leaf(cell, nets, *args))
    return out, counts, (engine.counter.count, engine.walks, engine.walk_proofs,
                         engine.exact_fallbacks, engine.certificates)


def _add_counters(engine: Engine, stats: tuple[int, ...]) -> None:
    lps, walks, proofs, fallbacks, certificates = stats
    engine.counter.count += lps
    engine.walks += walks
    engine.walk_proofs += proofs
    engine.exact_fallbacks += fallbacks
    engine.certificates += certificates


# -- the calling side --------------------------------------------------------------------

def _context():
    """``fork`` when this process runs no other thread (fast, and it works in scripts
    without a ``__main__`` guard), else ``forkserver`` (forking a threaded process can
    deadlock the child), else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        # workers fork from a server that has the engine imported already
        ctx.set_forkserver_preload(["neuromanifold.relu._parallel"])
    return ctx


def _stop(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Stop the workers now (running tasks included): nothing of theirs is wanted."""
    procs = dict(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs.values():
        if proc.is_alive():
            proc.terminate()
    for proc in procs.values():
        proc.join(timeout=5)
    # the pool's manager thread sees its workers gone, releases its queues and exits
    pool.shutdown(wait=True)


def iter_leaves(nets: Sequence[ExactNet], domain, engine: Engine, counts: list[int], *,
                workers: int, leaf: Callable, leaf_args: tuple = ()) -> Iterator[Any]:
    """``leaf(cell, nets, *leaf_args)`` for every final cell of the joint refinement of
    ``nets`` on ``domain``, in the order of :func:`~neuromanifold.relu._engine.iter_cells`.

    With ``workers > 1`` (and at least two stages), the sub-trees of the first-stage cells
    are enumerated by that many worker processes; ``leaf`` and ``leaf_args`` must then
    pickle (a module-level function). ``engine`` does the first stage; the workers' counts
    of LPs, walks and certificates are added to it as their results arrive, and
    ``counts`` (cells per stage) likewise. When ``engine.deadline`` passes while waiting
    for a worker, :class:`~neuromanifold.relu._engine.EngineDeadline` is raised (the
    caller may move the deadline between items, as for the serial engine).
    """
    stages = stages_of(nets)
    counts[:] = [0] * len(stages)
    root = initial_cell(domain, engine, nets)
    if not stages:
        yield leaf(root, nets, *leaf_args)
        return
    if workers <= 1 or len(stages) < 2:
        for cell in iter_subtree(root, 0, nets, engine, counts):
            yield leaf(cell, nets, *leaf_args)
        return
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # a forkserver/spawn worker re-running the caller's script (no main guard): stop
        # here rather than run the script's work once more per worker
        raise WorkerError("a worker process started to run the calling script again; "
                          "with threads running, workers are started by forkserver, "
                          "which needs the script's code under "
                          "`if __name__ == '__main__':`")
    k0, l0 = stages[0]
    first = iter_refine_stage(root, k0, l0, nets[k0], engine)
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=_context(), initializer=_init_worker,
        initargs=([_pack_net(n) for n in nets], engine.certify, leaf, leaf_args))
    window: collections.deque = collections.deque()   # (cells, future), submission order
    done_cells = done_leaves = 0
    exhausted = False

    def submit() -> bool:
        nonlocal exhausted
        if exhausted:
            return False
        per_cell = done_leaves / done_cells if done_cells else _TASK_LEAVES
        size = max(1, min(256, round(_TASK_LEAVES / max(per_cell, 1.0))))
        batch = []
        for cell in first:
            batch.append(cell)
            if len(batch) == size:
                break
        if len(batch) < size:
            exhausted = True
        if not batch:
            return False
        counts[0] += len(batch)
        window.append((len(batch), pool.submit(_run_task, [_pack_cell(c) for c in batch])))
        return True

    def top_up() -> None:
        busy = sum(1 for _, f in window if not f.done())
        while len(window) < _WINDOW * workers and busy < _IN_FLIGHT * workers and submit():
            busy += 1

    try:
        top_up()
        while window:
            ncells, fut = window[0]
            while not fut.done():   # meanwhile, keep the workers fed
                timeout = None if engine.deadline is None else \
                    max(0.0, engine.deadline - time.monotonic())
                concurrent.futures.wait([f for _, f in window if not f.done()], timeout,
                                        return_when=concurrent.futures.FIRST_COMPLETED)
                if engine.deadline is not None and time.monotonic() >= engine.deadline \
                        and not fut.done():
                    raise EngineDeadline()
                top_up()
            window.popleft()
            results, sub_counts, stats = fut.result()
            top_up()
            done_cells += ncells
            done_leaves += len(results)
            for s in range(1, len(stages)):
                counts[s] += sub_counts[s]
            _add_counters(engine, stats)
            yield from results
        pool.shutdown(wait=True)   # every task done: the workers exit by themselves
    except concurrent.futures.process.BrokenProcessPool as exc:
        raise WorkerError(
            f"a worker process of the region enumeration (workers={workers}) died "
            f"({exc}). Out of memory? Started from a script while threads were running, "
            f"the workers need the script's code under `if __name__ == '__main__':`. "
            f"workers=1 runs in this process.") from None
    finally:
        _stop(pool)
