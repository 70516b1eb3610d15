"""Losses and gradient flows, shared by the linear and ReLU domains (docs/concepts_linear.md §2,
1.5)."""

from ._batched import BatchedFlowResult, gradient_flows
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
    "gradient_flows",
    "BatchedFlowResult",
]
