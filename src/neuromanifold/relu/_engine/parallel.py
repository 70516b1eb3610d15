"""Region enumeration on several processes, in the serial order.

The split tree of the region engine (:mod:`neuromanifold.relu._engine.cells`) has independent
sub-trees: once the first hidden layer has split the domain into cells, the sub-tree of
each such cell (the later layers) is enumerated without looking at any other.
:func:`iter_leaves` enumerates the first stage in the calling process, lazily, and hands
its cells a few at a time to worker processes. A worker enumerates their sub-trees with
the same engine (the same exact checks: a worker's region is certified like a serial
one), applies a function to every final cell (building a :class:`Region`, say) and sends
the results back. They are yielded in task order, so the stream is the serial stream,
item for item. Each worker runs one task at a time; finished tasks wait for their turn,
at most ``_WINDOW`` per worker: memory stays bounded.

Workers are forked when the calling process runs no other thread, and started by the
``forkserver`` method otherwise (forking a threaded process can deadlock the child;
``spawn`` where neither exists). They are stopped as soon as the stream ends, is
closed, or a budget is reached.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing import connection as mp_connection
from typing import Any

import flint

from ..._errors import WorkerError
from .._core.processes import process_context
from .cells import (
    Cell,
    Engine,
    EngineDeadline,
    ExactNet,
    initial_cell,
    iter_refine_stage,
    iter_subtree,
    stages_of,
)

__all__ = ["iter_leaves"]

#: final cells a task should hold, roughly (the first-stage cells per task adapt to it)
_TASK_LEAVES = 64
#: tasks held per worker, finished ones included: a long task at the head of the stream
#: does not stop the other workers, whose results wait (bounded) for their turn
_WINDOW = 32


# -- what crosses the process boundary ---------------------------------------------------


def _pack_net(net: ExactNet) -> tuple:
    return net.params, [(W.nrows(), W.ncols(), W.entries(), b) for W, b in zip(net.Wq, net.bq)]


def _unpack_net(packed: tuple) -> ExactNet:
    params, exact = packed
    return ExactNet(params, [(flint.fmpq_mat(r, c, e), list(b)) for r, c, e, b in exact])


def _pack_cell(cell: Cell) -> Cell:
    """The cell with its exact maps as ``(rows, cols, entries)`` (fmpq_mat does not pickle)."""
    return dataclasses.replace(
        cell, maps_q=[(M.nrows(), M.ncols(), M.entries()) for M in cell.maps_q]
    )


def _unpack_cell(cell: Cell) -> Cell:
    return dataclasses.replace(cell, maps_q=[flint.fmpq_mat(*m) for m in cell.maps_q])


# -- the worker side ---------------------------------------------------------------------

_WORKER: dict = {}


def _init_worker(packed_nets: list, certify: bool, leaf: Callable, leaf_args: tuple) -> None:
    _WORKER.update(
        nets=[_unpack_net(p) for p in packed_nets], certify=certify, leaf=leaf, leaf_args=leaf_args
    )


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
    return (
        out,
        counts,
        (
            engine.counter.count,
            engine.walks,
            engine.walk_proofs,
            engine.exact_fallbacks,
            engine.certificates,
        ),
    )


def _worker_main(conn, init_args: tuple) -> None:
    """A worker's loop: a task in, ``("ok", result)`` or ``("error", exception)`` out,
    until the pipe closes or ``None`` arrives."""
    _init_worker(*init_args)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            reply = ("ok", _run_task(task))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            reply = ("error", exc)
        try:
            conn.send(reply)
        except Exception:  # the exception does not pickle: its text does
            conn.send(("error", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]}")))


def _add_counters(engine: Engine, stats: tuple[int, ...]) -> None:
    lps, walks, proofs, fallbacks, certificates = stats
    engine.counter.count += lps
    engine.walks += walks
    engine.walk_proofs += proofs
    engine.exact_fallbacks += fallbacks
    engine.certificates += certificates


# -- the calling side --------------------------------------------------------------------


def _reply(raw: bytes) -> Any:
    """A worker's result from its pickled reply; a task's exception is raised here."""
    kind, value = pickle.loads(raw)
    if kind == "error":
        raise value
    return value


class _Workers:
    """Worker processes, each with its own pipe and at most one task at a time.

    One pipe per worker and no shared queue or manager thread: a worker can be killed at
    any moment (a budget reached, the stream closed) without leaving a half-written
    message where another process or thread waits for it. A worker is sent a task only
    when it is idle, so the two ends never block each other on full pipes.
    """

    def __init__(self, n: int, init_args: tuple):
        # workers fork from a server that has the engine imported already
        ctx = process_context("neuromanifold.relu._engine.parallel")
        self.procs, self.conns = [], []
        self.task: dict[int, int] = {}  # worker -> id of the task it runs
        for _ in range(n):
            here, there = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, args=(there, init_args), daemon=True)
            proc.start()
            there.close()
            self.procs.append(proc)
            self.conns.append(here)

    def idle(self) -> list[int]:
        return [i for i in range(len(self.procs)) if i not in self.task]

    def send(self, i: int, task_id: int, payload: Any) -> None:
        try:
            self.conns[i].send(payload)
        except OSError:  # the worker is gone (a broken pipe)
            self.procs[i].join(timeout=5)
            raise self._died(i) from None
        self.task[i] = task_id

    def _died(self, i: int) -> WorkerError:
        return WorkerError(
            f"a worker process of the region enumeration died (exit code "
            f"{self.procs[i].exitcode}). Out of memory? Started from a script while "
            f"threads were running, the workers need the script's code under "
            f"`if __name__ == '__main__':`. workers=1 runs in this process."
        )

    def receive(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """``(task id, pickled reply)`` of the tasks finished within ``timeout`` (at least
        one, unless the time ran out); their workers are idle again. The replies are
        left pickled so that the caller can hand the workers new tasks before spending
        time on unpickling (:func:`_reply`). Raises :class:`WorkerError` if a busy worker
        died."""
        busy = list(self.task)
        ready = set(
            mp_connection.wait(
                [self.conns[i] for i in busy] + [self.procs[i].sentinel for i in busy], timeout
            )
        )
        out = []
        for i in busy:
            conn, died = self.conns[i], self.procs[i].sentinel in ready
            if conn in ready or (died and conn.poll()):
                try:
                    out.append((self.task.pop(i), conn.recv_bytes()))
                    continue
                except (EOFError, OSError):
                    died = True
            if died:
                self.procs[i].join(timeout=5)
                raise self._died(i)
        return out

    def stop(self) -> None:
        """Stop every worker now (a running task included) and release the pipes."""
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():  # pragma: no cover - SIGTERM ignored
                proc.kill()
                proc.join(timeout=5)
        for conn in self.conns:
            conn.close()


def iter_leaves(
    nets: Sequence[ExactNet],
    domain,
    engine: Engine,
    counts: list[int],
    *,
    workers: int,
    leaf: Callable,
    leaf_args: tuple = (),
) -> Iterator[Any]:
    """``leaf(cell, nets, *leaf_args)`` for every final cell of the joint refinement of
    ``nets`` on ``domain``, in the order of :func:`~neuromanifold.relu._engine.cells.iter_cells`.

    With ``workers > 1`` (and at least two stages), the sub-trees of the first-stage cells
    are enumerated by that many worker processes; ``leaf`` and ``leaf_args`` must then
    pickle (a module-level function). ``engine`` does the first stage; the workers' counts
    of LPs, walks and certificates are added to it as their results arrive, and
    ``counts`` (cells per stage) likewise. When ``engine.deadline`` passes while waiting
    for a worker, :class:`~neuromanifold.relu._engine.cells.EngineDeadline` is raised (the
    caller may move the deadline between items, as for the serial engine).
    """
    # Whole: a generator; prepare() and dispatch() share its task ids, queues and counters
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
        raise WorkerError(
            "a worker process started to run the calling script again; "
            "with threads running, workers are started by forkserver, "
            "which needs the script's code under "
            "`if __name__ == '__main__':`"
        )
    k0, l0 = stages[0]
    first = iter_refine_stage(root, k0, l0, nets[k0], engine)
    pool = _Workers(workers, ([_pack_net(n) for n in nets], engine.certify, leaf, leaf_args))
    sizes: dict[int, int] = {}  # task id -> first-stage cells in it
    results: dict[int, Any] = {}  # finished tasks waiting for their turn
    next_id = turn = 0
    done_cells = done_leaves = 0
    exhausted = False

    prepared: list = []  # (cells, payload): the next tasks, packed before a worker asks

    def prepare() -> bool:
        nonlocal exhausted
        if exhausted:
            return False
        per_cell = done_leaves / done_cells if done_cells else _TASK_LEAVES
        size = max(1, min(256, round(_TASK_LEAVES / max(per_cell, 1.0))))
        batch = list(itertools.islice(first, size))
        if len(batch) < size:
            exhausted = True
        if not batch:
            return False
        counts[0] += len(batch)
        prepared.append((len(batch), [_pack_cell(c) for c in batch]))
        return True

    def dispatch() -> None:
        nonlocal next_id
        for i in pool.idle():
            if next_id - turn >= _WINDOW * workers or not (prepared or prepare()):
                break
            ncells, payload = prepared.pop(0)
            sizes[next_id] = ncells
            pool.send(i, next_id, payload)
            next_id += 1
        # the first layer's next cells are enumerated while the workers run, not while
        # one of them waits for its next task
        while len(prepared) < workers and prepare():
            pass

    try:
        dispatch()
        while turn < next_id:
            while turn not in results:
                timeout = (
                    None
                    if engine.deadline is None
                    else max(0.0, engine.deadline - time.monotonic())
                )
                replies = pool.receive(timeout)
                dispatch()  # the idle workers get new tasks before the replies are read
                for task_id, raw in replies:
                    results[task_id] = _reply(raw)
                if (
                    turn not in results
                    and engine.deadline is not None
                    and time.monotonic() >= engine.deadline
                ):
                    raise EngineDeadline()
            out, sub_counts, stats = results.pop(turn)
            done_cells += sizes.pop(turn)
            done_leaves += len(out)
            turn += 1
            dispatch()
            for s in range(1, len(stages)):
                counts[s] += sub_counts[s]
            _add_counters(engine, stats)
            yield from out
    finally:
        pool.stop()
