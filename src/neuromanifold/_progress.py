"""The one progress-bar helper: every long computation of the library reports through it.

Bars go to stderr. In a terminal they redraw as usual; when stderr is not a terminal (a
log file, CI) they redraw at most every 30 s, so a log gets a few lines, not hundreds of
carriage-return updates.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["progress_bar", "progress_iter"]

#: seconds between two redraws when stderr is not a terminal
LOG_INTERVAL = 30.0


def progress_bar(iterable: Iterable | None = None, **kwargs: Any) -> Any:
    """A tqdm bar on stderr (the keywords are tqdm's); redrawn at most every
    :data:`LOG_INTERVAL` seconds when stderr is not a terminal."""
    from tqdm.auto import tqdm  # start-up: tqdm is imported when a bar is shown

    stream = kwargs.setdefault("file", sys.stderr)
    if not getattr(stream, "isatty", lambda: False)():
        kwargs.setdefault("mininterval", LOG_INTERVAL)
    return tqdm(iterable, **kwargs)


def progress_iter(items: Any, progress: bool, desc: str, unit: str = "it") -> Any:
    """``items`` wrapped in a progress bar when ``progress``, else ``items`` as they are."""
    if not progress:
        return items
    return progress_bar(items, total=len(items), desc=desc, unit=unit, leave=False)
