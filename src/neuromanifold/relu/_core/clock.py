"""The deadline of the running analysis, read by long exact loops that no budget object
reaches (converting a network to exact rationals, matching one exactly onto another,
snapping parallel rows): an analysis with a ``time_limit`` sets it for the length of its
call, and :func:`check_deadline` raises :class:`DeadlinePassed` once it has passed, so that
the call stops within one row's work of its limit. The caller turns that into its
:class:`~neuromanifold.ComputationLimitError`.

>>> with deadline_scope(None):
...     check_deadline()   # no deadline set: never raises
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["DeadlinePassed", "check_deadline", "deadline_scope"]

_AT: ContextVar[float | None] = ContextVar("neuromanifold_deadline", default=None)


class DeadlinePassed(BaseException):
    """Internal: the running analysis's deadline passed inside an exact loop (a
    ``BaseException``, as ``asyncio.CancelledError`` is, so that no ``except Exception``
    on the way mistakes it for a failure of the step it stopped)."""


@contextlib.contextmanager
def deadline_scope(at: float | None) -> Iterator[None]:
    """Set the deadline (a ``time.monotonic()`` value, or ``None`` for none) for the
    ``with`` block."""
    token = _AT.set(at)
    try:
        yield
    finally:
        _AT.reset(token)


def check_deadline() -> None:
    """Raise :class:`DeadlinePassed` when the deadline set by :func:`deadline_scope` has passed."""
    at = _AT.get()
    if at is not None and time.monotonic() > at:
        raise DeadlinePassed
