"""Sweeps: a grid of (analysis, architecture, seed) tasks run as independent jobs, on
local processes or on a Dask distributed cluster, streamed to a JSON Lines file.

The output file is the sweep's memory: one line per finished task, keyed by the task,
written and flushed by the driver alone as each result arrives. A rerun reads it and
skips every task already there, so a crash (of a worker, of the driver, of the machine)
loses at most the tasks that were running. A failing task is recorded with its error and
does not stop the sweep. A task lost with a dead Dask worker is rescheduled by Dask; the
driver writes each key once.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import multiprocessing
import os
import time
import tomllib
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import InputError, InputFileError, short_repr
from .._progress import progress_bar
from .._results import Result
from .._validation import check_bool, check_workers
from ._analyses import architecture_of, run_analysis

__all__ = ["Task", "SweepSummary", "load_config", "tasks_of", "run_sweep"]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Task(Result):
    """One unit of a sweep: an analysis of one architecture at one seed."""

    analysis: str
    architecture: dict
    seed: int

    @property
    def key(self) -> str:
        """A stable, readable identifier (the same in every run of the same grid)."""
        arch = json.dumps(self.architecture, sort_keys=True, separators=(",", ":"))
        return f"{self.analysis} {arch} seed={self.seed}"


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class SweepSummary(Result):
    """What a call of :func:`run_sweep` did.

    Attributes:
        output: the JSON Lines file.
        total: tasks in the grid.
        skipped: tasks already in the output (finished by an earlier run).
        ran: tasks run now; ``failed`` of them raised (recorded with their error).
        seconds: wall time of this call.
    """

    output: str
    total: int
    skipped: int
    ran: int
    failed: int
    seconds: float


#: the most seeds one grid entry may ask for (each is a task and a line of output)
MAX_SEEDS = 100_000
#: seconds to wait for a Dask scheduler to answer before saying it cannot be reached
CONNECT_TIMEOUT = 5.0


def _seeds(value: Any, where: str) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SEEDS:
        return list(range(value))
    if (
        isinstance(value, list)
        and value
        and len(value) <= MAX_SEEDS
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value)
    ):
        return list(value)
    raise InputError(
        f"{where}: seeds must be a count from 1 to {MAX_SEEDS:,} or a list of "
        f"at most {MAX_SEEDS:,} nonnegative ints; got {short_repr(value)}"
    )


def load_config(path: Any) -> dict:
    """Read a sweep configuration (TOML).

    Format::

        seeds = 5                      # a count (0..4) or a list of seeds
        output = "sweep.jsonl"         # optional, relative to the configuration file

        [[grid]]
        analysis = "ntk_dependence"    # see neuromanifold.sweep.ANALYSES
        architectures = [{filters = [2, 2], strides = [1]},
                         {filters = [3, 2, 2], strides = [2, 2]}]
        seeds = 10                     # optional, overrides the top-level seeds

    Returns:
        The configuration as a dict (with ``output`` resolved); an :class:`InputError`
        naming the file and the problem otherwise.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(
            f"a sweep configuration must be a path to a TOML file; got {short_repr(path)}"
        )
    path = Path(path)
    try:
        config = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such sweep configuration") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputFileError(f"{path}: not a readable TOML sweep configuration ({exc})") from None
    if "output" in config:
        if not isinstance(config["output"], str) or not config["output"]:
            raise InputFileError(
                f"{path}: output must be a file name (a string); got {short_repr(config['output'])}"
            )
        config["output"] = str(path.parent / config["output"])
    config["_source"] = str(path)
    try:
        tasks_of(config)  # validate everything before anything runs
    except InputFileError:
        raise
    except InputError as exc:  # a malformed entry: the file is at fault
        raise InputFileError(str(exc)) from None
    return config


def tasks_of(config: dict) -> list[Task]:
    """Every task of the grid, in a fixed order; bad entries raise an :class:`InputError`."""
    if not isinstance(config, dict):
        raise InputError(
            f"a sweep configuration must be a dict (see load_config); got {short_repr(config)}"
        )
    where = config.get("_source", "sweep configuration")
    grid = config.get("grid")
    if not isinstance(grid, list) or not grid:
        raise InputError(f"{where}: needs at least one [[grid]] table")
    tasks, seen = [], set()
    for i, entry in enumerate(grid, start=1):
        here = f"{where}, grid entry {i}"
        if not isinstance(entry, dict) or "analysis" not in entry or "architectures" not in entry:
            raise InputError(
                f"{here}: needs 'analysis' and 'architectures'; got {short_repr(entry)}"
            )
        unknown = sorted(set(entry) - {"analysis", "architectures", "seeds"})
        if unknown:
            raise InputError(f"{here}: unknown keys {unknown}")
        seeds = _seeds(entry.get("seeds", config.get("seeds", 1)), here)
        archs = entry["architectures"]
        if not isinstance(archs, list) or not archs:
            raise InputError(f"{here}: architectures must be a non-empty list")
        for arch in archs:
            try:
                arch = architecture_of(entry["analysis"], arch)
            except InputError as exc:
                raise InputError(f"{here}: {exc}") from None
            except Exception as exc:  # a NeuromanifoldError from the network's constructor
                raise InputError(f"{here}: {exc}") from None
            for seed in seeds:
                task = Task(analysis=entry["analysis"], architecture=arch, seed=seed)
                if task.key not in seen:
                    seen.add(task.key)
                    tasks.append(task)
    return tasks


def _finished_keys(output: Path) -> set[str]:
    """Keys already in ``output``; a torn last line (a crash mid-write) is cut off."""
    if not output.exists():
        return set()
    data = output.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        output.write_bytes(data)
    keys = set()
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise InputError(
            f"{output}: not a sweep's output (not UTF-8 text); refusing to append to it"
        ) from None
    for line in text.splitlines():
        try:
            keys.add(json.loads(line)["task"])
        except (ValueError, KeyError, TypeError):
            raise InputError(
                f"{output}: line {line[:80]!r} is not a sweep record; "
                f"refusing to append to a file that is not a sweep's output"
            ) from None
    return keys


def _execute(task: Task) -> dict:
    """Run a task in a worker; never raises (errors become records)."""
    start = time.perf_counter()
    try:
        result, status, error = (
            run_analysis(task.analysis, task.architecture, task.seed),
            "ok",
            None,
        )
    except Exception as exc:
        result, status = None, "error"
        error = f"{type(exc).__name__}: {exc}\n" + "".join(
            traceback.format_tb(exc.__traceback__)[-3:]
        )
    return {
        "status": status,
        "result": result,
        "error": error,
        "seconds": time.perf_counter() - start,
    }


def _local(tasks: list[Task], workers: int):
    ctx = multiprocessing.get_context("spawn")  # no fork of a threaded parent
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures = {pool.submit(_execute, t): t for t in tasks}
        for fut in concurrent.futures.as_completed(futures):
            try:
                yield futures[fut], fut.result()
            except Exception as exc:  # the worker process died
                yield (
                    futures[fut],
                    {
                        "status": "error",
                        "result": None,
                        "seconds": None,
                        "error": f"worker lost: {type(exc).__name__}: {exc}",
                    },
                )


def _dask(tasks: list[Task], scheduler: Any):
    try:
        from distributed import Client, as_completed  # optional extra: only Dask sweeps need it
    except ImportError:
        raise InputError("a Dask scheduler needs dask: pip install 'neuromanifold[dask]'") from None
    if isinstance(scheduler, Client):
        client = scheduler
    elif not isinstance(scheduler, str) or "://" not in scheduler:
        raise InputError(
            f"a Dask scheduler is an address like 'tcp://host:8786' or a "
            f"distributed.Client; got {short_repr(scheduler)}"
        )
    else:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError, TypeError) as exc:  # TimeoutError is an OSError
            raise InputError(
                f"cannot reach the Dask scheduler at {scheduler!r} within "
                f"{CONNECT_TIMEOUT:g} s ({type(exc).__name__}: {exc})"
            ) from None
    try:
        keys = {"nm-" + hashlib.sha1(t.key.encode()).hexdigest(): t for t in tasks}
        futures = [client.submit(_execute, t, key=k, pure=False) for k, t in keys.items()]
        for fut in as_completed(futures):
            try:
                yield keys[fut.key], fut.result()
            except Exception as exc:  # e.g. KilledWorker: the task killed workers repeatedly
                yield (
                    keys[fut.key],
                    {
                        "status": "error",
                        "result": None,
                        "seconds": None,
                        "error": f"{type(exc).__name__}: {exc}",
                    },
                )
    finally:
        if client is not scheduler:
            client.close()


def run_sweep(
    config: Any,
    output: Any = None,
    *,
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool = False,
    on_result: Callable[[dict], None] | None = None,
) -> SweepSummary:
    """Run every task of a sweep that is not already in its output file.

    Args:
        config: a path to a TOML configuration (see :func:`load_config`) or the dict.
        output: the JSON Lines file (default: the configuration's ``output``, else
            ``sweep.jsonl``). One line per task: ``task`` (the key), ``analysis``,
            ``architecture``, ``seed``, ``status`` (``"ok"``/``"error"``), ``result``,
            ``error``, ``seconds``.
        scheduler: None for local processes; a Dask scheduler address
            (``"tcp://HOST:PORT"``) or a ``distributed.Client`` to run on a cluster.
        workers: local processes (default: all cores).
        progress: show a progress bar of tasks done on stderr.
        on_result: called with each record after it is written (e.g. for monitoring).

    Returns:
        A :class:`SweepSummary`.
    """
    progress = check_bool(progress, "progress")
    if not isinstance(config, dict):
        config = load_config(config)
    tasks = tasks_of(config)
    if output is not None and (not isinstance(output, (str, os.PathLike)) or not str(output)):
        raise InputError(f"sweep output must be a path; got {short_repr(output)}")
    out = output or config.get("output") or "sweep.jsonl"
    if not isinstance(out, (str, os.PathLike)):
        raise InputError(f"the configuration's output must be a path; got {short_repr(out)}")
    out = Path(out)
    if not out.parent.is_dir():
        raise InputError(f"sweep output {str(out)!r}: folder does not exist")
    if out.is_dir():
        raise InputError(f"sweep output {str(out)!r} is a directory")
    try:
        open(out, "a").close()  # writable, checked before anything runs
    except OSError as exc:
        raise InputError(f"sweep output {str(out)!r} cannot be written: {exc}") from None
    done = _finished_keys(out)
    todo = [t for t in tasks if t.key not in done]
    workers = check_workers(workers)
    start, failed, ran = time.perf_counter(), 0, 0
    bar = None
    if progress:
        bar = progress_bar(
            total=len(tasks), initial=len(tasks) - len(todo), unit="task", desc="sweep", leave=True
        )
    source = (
        _dask(todo, scheduler)
        if scheduler is not None
        else _local(todo, workers)
        if todo
        else iter(())
    )
    try:
        with open(out, "a") as fh:
            for task, outcome in source:
                if task.key in done:  # a rescheduled duplicate: written once only
                    continue
                done.add(task.key)
                record = {
                    "task": task.key,
                    "analysis": task.analysis,
                    "architecture": task.architecture,
                    "seed": task.seed,
                    **outcome,
                }
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
                ran += 1
                failed += outcome["status"] != "ok"
                if bar is not None:
                    bar.update(1)
                if on_result is not None:
                    on_result(record)
    finally:
        if bar is not None:
            bar.close()
    return SweepSummary(
        output=str(out),
        total=len(tasks),
        skipped=len(tasks) - len(todo),
        ran=ran,
        failed=failed,
        seconds=time.perf_counter() - start,
    )
