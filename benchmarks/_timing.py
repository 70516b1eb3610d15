"""Timing shared by the benchmark scripts (importable because a script's folder is on
``sys.path`` when it runs, and ``tests/support.load_benchmark`` puts it there too)."""

import time

import numpy as np


def best_time(fn, repeat: int) -> tuple[float, object]:
    """The best wall time of ``repeat`` calls of ``fn`` and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out
