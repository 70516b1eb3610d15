"""The start method of worker processes, one rule for every pool of the ReLU analyses."""

from __future__ import annotations

import multiprocessing
import threading

__all__ = ["process_context"]


def process_context(preload: str):
    """``fork`` when this process runs no other thread (fast, and it works in scripts
    without a ``__main__`` guard), else ``forkserver`` (forking a threaded process can
    deadlock the child) with the module ``preload`` imported in the server, else
    ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload([preload])
    return ctx
