"""The door of ``linear`` for the library's other packages: names they use and users
do not (so not in ``neuromanifold.linear``'s public surface). Import them from here,
never from ``linear``'s private modules."""

from ._regular import classify_branches

__all__ = ["classify_branches"]
