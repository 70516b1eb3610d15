"""Losses and gradient flows, shared by the linear and ReLU domains (SPEC 1.2, 1.5)."""

from ._gradient_flow import GradientFlowResult, gradient_flow, invariant_vector
from ._losses import QuadraticLoss, SquareLoss

__all__ = ["QuadraticLoss", "SquareLoss", "gradient_flow", "GradientFlowResult",
           "invariant_vector"]
