"""Timing shared by the benchmark scripts (importable because a script's folder is on
``sys.path`` when it runs, and ``tests/support/common.load_benchmark`` puts it there too).

Every benchmark's ``main(argv)`` returns its own rows and, through :func:`suite_row`,
rows of the suite's common table (``benchmarks/run_all.py`` writes them to
``benchmarks/RESULTS.md`` and ``RESULTS.json``): task, size, ours, baseline, ratio,
spread, peak memory. Both sides are timed in the same run, the median over repeats.
"""

import os
import statistics
import sys
import time
import tracemalloc

import numpy as np

#: the BLAS threads of every side of every row (run_all.py sets the environment before
#: numpy loads; :func:`pin_threads` also limits pools already loaded, and torch's and XLA's)
THREADS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pin_threads() -> int:
    """Pin the thread pools of numpy's BLAS, torch and JAX/XLA to the same number (the
    ``OPENBLAS_NUM_THREADS`` environment variable, default 1), so that both sides of a row
    get the same cores. Call before timing; returns the number."""
    n = int(os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    for var in THREADS_ENV:
        os.environ.setdefault(var, str(n))
    if n == 1:  # XLA reads its flags when JAX first loads (imported lazily by the rows)
        os.environ.setdefault(
            "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        )
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    return n


def best_time(fn, repeat: int) -> tuple[float, object]:
    """The best wall time of ``repeat`` calls of ``fn`` and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def median_time(fn, repeat: int) -> tuple[float, float, object]:
    """``(median, spread, last result)`` of ``repeat`` wall times of ``fn``; the spread is
    ``(max - min) / median`` (0 for one repeat)."""
    times, out = [], None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    return med, (max(times) - min(times)) / med if med > 0 else 0.0, out


def peak_memory_mb(fn) -> float:
    """Peak Python-heap memory (numpy arrays included) of one call of ``fn``, in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def suite_row(
    task: str,
    size: str,
    ours: float,
    baseline_name: str,
    baseline: float | None,
    spread: float = 0.0,
    peak_mb: float | None = None,
    note: str = "",
) -> dict:
    """One row of the suite's table (times in seconds; ``baseline=None`` when skipped,
    with the reason in ``note``)."""
    return {
        "task": task,
        "size": size,
        "ours_s": ours,
        "baseline": baseline_name,
        "baseline_s": baseline,
        "ratio": (baseline / ours) if baseline and ours else None,
        "spread": spread,
        "peak_mb": peak_mb,
        "note": note,
    }


def memory_mb(field: str = "VmHWM") -> float | None:
    """This process's resident memory in MB from ``/proc/self/status``: ``"VmHWM"`` (the
    peak) or ``"VmRSS"`` (now). Unlike ``getrusage``'s ``ru_maxrss``, which a child keeps
    from its parent across fork and exec, these belong to the process's own address space.
    ``None`` where /proc is missing."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:  # pragma: no cover - not Linux
        return None
    return None  # pragma: no cover
