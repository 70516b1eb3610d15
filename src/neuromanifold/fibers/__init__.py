"""Fibers, shared by every domain: the :class:`Fiber` result and the invariants that,
with the function, fix a fiber (docs/concepts_linear.md §2, 2.2)."""

from ._fiber import Fiber, invariant_scale, invariant_vector

__all__ = ["Fiber", "invariant_vector", "invariant_scale"]
