"""Losses and gradient flows, shared by the linear and ReLU domains (docs/concepts_linear.md §2,
1.5)."""

import warnings as _warnings

from ._gradient_flow import GradientFlowResult, gradient_flow, invariant_vector
from ._losses import QuadraticLoss, SquareLoss
from ._riemannian import (
    FiberLift,
    FlowComparison,
    LiftComparison,
    LiftOutcome,
    RiemannianFlowResult,
    compare_lifts,
    compare_with_parameter_flow,
    lift_to_fiber,
    riemannian_flow,
)

__all__ = [
    "QuadraticLoss",
    "SquareLoss",
    "gradient_flow",
    "GradientFlowResult",
    "invariant_vector",
    "riemannian_flow",
    "RiemannianFlowResult",
    "lift_to_fiber",
    "FiberLift",
    "compare_lifts",
    "LiftComparison",
    "LiftOutcome",
    "compare_with_parameter_flow",
    "FlowComparison",
]

#: names that moved to a domain, read from there with a DeprecationWarning
_MOVED = {"gradient_flows": "neuromanifold.linear", "BatchedFlowResult": "neuromanifold.linear"}


def __getattr__(name: str):
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # layering: a moved name, read from its domain only when asked

    _warnings.warn(
        f"neuromanifold.flows.{name} moved to {_MOVED[name]}.{name} (the batched flows are "
        f"linear convolutional networks' own); the old name will be removed",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(_MOVED[name]), name)
