"""Budgets of the analyses that enumerate linear regions (exponential in the widths).

Every such analysis (bent hyperplanes, genericity, equivalence by joint regions) takes
``max_regions`` and ``time_limit`` with the semantics of :func:`neuromanifold.relu.regions`:
reaching either raises a :class:`~neuromanifold.ComputationLimitError` whose message states
the budget and how far the analysis got, with attributes ``num_regions``, ``num_lps``,
``elapsed`` and ``partial`` (what was finished, or ``None``). Unlike
:func:`~neuromanifold.relu.iter_regions`, whose time limit counts only the time inside the
iterator, the time limit of an analysis counts its whole running time (the work done on
each region too). :func:`~neuromanifold.relu.estimate_regions` says before starting how
many regions to expect.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..._errors import ComputationLimitError
from ..._progress import progress_bar
from ..._validation import check_bool, check_positive_float, check_positive_int
from .._core.domain import Domain
from .cells import Engine, EngineDeadline, ExactNet, iter_cells

__all__ = ["ANYTIME_TIME_LIMIT", "Budget", "check_budget"]

#: The one default budget of the library. A decision (``equivalent``, ``identifiability``,
#: ``functional_dimension``, ...) has no default limit (``time_limit=None``): past a limit
#: the user sets it raises ComputationLimitError with what it has. An anytime analysis,
#: which returns its best interval when its time is up (``distance``), stops after this
#: many seconds unless told otherwise: its exact finish may never come at trained sizes.
ANYTIME_TIME_LIMIT = 60.0


def check_budget(max_regions: Any, time_limit: Any) -> tuple[int | None, float | None]:
    """Validated ``(max_regions, time_limit)`` (each ``None`` or positive)."""
    if max_regions is not None:
        max_regions = check_positive_int(max_regions, "max_regions")
    if time_limit is not None:
        time_limit = check_positive_float(time_limit, "time_limit")
    return max_regions, time_limit


class Budget:
    """The running budget of one analysis: a clock started at construction, a region count,
    an engine whose LPs stop at the deadline, and an optional progress bar (regions and
    LPs, on stderr).

    Args:
        what: the analysis, for messages (``"bent_hyperplanes"``).
        d: input dimension (for the engine).
        max_regions, time_limit: the budget (validated with :func:`check_budget`).
        progress: show a progress bar.
        unit: what one enumerated cell is called (``"region"``, ``"joint region"``).
        detail: optional callable giving words for the error messages (how far the
            analysis got beyond the regions, e.g. a rank so far).
        start: when the analysis started (``time.monotonic()``; default: now).
    """

    def __init__(
        self,
        what: str,
        d: int,
        *,
        max_regions: int | None,
        time_limit: float | None,
        progress: Any,
        unit: str = "region",
        detail=None,
        start: float | None = None,
    ):
        self.what, self.unit, self.detail = what, unit, detail
        self.max_regions, self.time_limit = check_budget(max_regions, time_limit)
        self.progress = check_bool(progress, "progress")
        self.t0 = time.monotonic() if start is None else start
        self.deadline = None if self.time_limit is None else self.t0 + self.time_limit
        self.engine = Engine(d, deadline=self.deadline)
        self.num_regions = 0
        self.counts: list[int] = []
        self._bar = None

    @property
    def num_lps(self) -> int:
        """LPs solved so far by the engine."""
        return self.engine.counter.count

    @property
    def elapsed(self) -> float:
        """Seconds since the analysis started."""
        return time.monotonic() - self.t0

    def remaining(self) -> float | None:
        """Seconds left (``None`` without a time limit; never below 0)."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def error(self, reason: str, partial: Any = None, stage: str = "") -> ComputationLimitError:
        """The :class:`ComputationLimitError` for reaching ``reason`` (the budget, in words)."""
        where = f" during {stage}" if stage else ""
        extra = f"; {self.detail()}" if self.detail is not None else ""
        # the advice fits the stage: a MILP has no region count to estimate, and
        # estimate_regions counts one network's regions, not joint ones
        advice = (
            "raise the limit"
            if "MILP" in stage or self.unit != "region"
            else "raise the limit, or see estimate_regions for the expected number of regions"
        )
        err = ComputationLimitError(
            f"{self.what} stopped at the {reason}{where} after {self.num_regions} "
            f"{self.unit}s ({self.num_lps} LPs, {self.elapsed:.3g} s){extra}; {advice}"
        )
        err.num_regions, err.num_lps, err.elapsed = self.num_regions, self.num_lps, self.elapsed
        err.partial = partial
        return err

    def time_error(self, partial: Any = None, stage: str = "") -> ComputationLimitError:
        return self.error(f"time limit (time_limit={self.time_limit:g} s)", partial, stage)

    def check_time(self, partial: Any = None, stage: str = "", upcoming: float = 0.0) -> None:
        """Raise the time-limit error when the deadline has passed, or will have passed
        after a step expected to take ``upcoming`` seconds."""
        if self.deadline is not None and time.monotonic() + upcoming > self.deadline:
            raise self.time_error(partial() if callable(partial) else partial, stage)

    def cells(self, nets: Sequence[ExactNet], domain: Domain, partial=None) -> Iterator:
        """The engine's cells (see :func:`~neuromanifold.relu._engine.cells.iter_cells`), counted
        against the budget. ``partial``: a callable building the partial result when a
        budget is reached (called then, with nothing)."""
        bar = None
        if self.progress:
            bar = progress_bar(
                desc=f"{self.what}: {self.unit}s", unit=self.unit.split()[-1], leave=False
            )
        it = iter_cells(nets, domain, self.engine, self.counts)
        try:
            while True:
                try:
                    cell = next(it)
                except StopIteration:
                    return
                except EngineDeadline:
                    raise self.time_error(partial() if partial else None) from None
                if self.max_regions is not None and self.num_regions >= self.max_regions:
                    raise self.error(
                        f"region limit (max_regions={self.max_regions})",
                        partial() if partial else None,
                    )
                self.num_regions += 1
                if bar is not None:
                    bar.update(1)
                    if self.num_regions % 32 == 1:
                        bar.set_postfix(lps=self.num_lps, refresh=False)
                yield cell
                self.check_time(partial)
        finally:
            if bar is not None:
                bar.close()

    @contextlib.contextmanager
    def guard(self, partial=None, stage: str = ""):
        """Turn the engine's internal deadline, reached by an LP solved outside
        :meth:`cells`, into the budget's error."""
        try:
            yield
        except EngineDeadline:
            raise self.time_error(partial() if partial else None, stage) from None
