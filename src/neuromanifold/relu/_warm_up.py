"""``relu.warm_up``: every room with a compiled kernel warms its own."""

from __future__ import annotations

__all__ = ["warm_up"]


def warm_up() -> None:
    """Compile (or load from numba's cache) every compiled kernel of the ReLU analyses
    with the argument types they pass: the region engine's (by enumerating the regions
    of a small network), the weight matching of ``equivalent`` and the always-active
    block's rank test of the three-layer canonical form, and the bound engine's
    substitution step. Compiling takes several seconds
    in a fresh checkout; ``make install`` and the test session call this first so that no
    timed call pays it.

    Returns:
        ``None``; a second call in one process costs a few milliseconds.

    >>> warm_up()
    """
    from ._bounds import kernels as bound_kernels  # start-up: numba loads here
    from ._canonical import kernels  # start-up: numba loads here, never at import
    from ._equivalence import matching  # start-up: numba loads here
    from ._regions import regions  # start-up: the region engine's kernels

    for room in (regions, matching, kernels, bound_kernels):
        room.warm_up()
