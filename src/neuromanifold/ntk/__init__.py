"""The neural tangent kernel along fibers: is it a function of the end-to-end function and
the conserved invariants alone? (docs/concepts_linear.md §3)"""

from ..fibers import Fiber
from ._dependence import NTKDependence, ntk_dependence

__all__ = ["Fiber", "NTKDependence", "ntk_dependence"]
