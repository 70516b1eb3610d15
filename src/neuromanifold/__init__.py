"""neuromanifold: the geometry of neural-network parameterizations.

The public surface is re-exported here explicitly; implementation modules are private
(leading underscore). Domains: :mod:`neuromanifold.linear` (linear convolutional and
fully connected networks, SPEC section 1) and :mod:`neuromanifold.relu` (ReLU networks,
SPEC section 2). Outer layers (:mod:`neuromanifold.cli`) call the library, never the
other way round.
"""

from ._errors import (
    ArchitectureError,
    DomainError,
    InputError,
    NeuromanifoldError,
    NotInNeuromanifoldError,
    ParameterError,
)
from ._results import Result
from . import exact, flows, linear, relu
from .flows import GradientFlowResult, QuadraticLoss, SquareLoss, gradient_flow
from .linear import JacobianRank, LinearConvNet, LinearFCNet, balanced_ntk_operator, correlate
from .relu import ReLUNet

__version__ = "0.1.0"

__all__ = [
    "NeuromanifoldError",
    "ArchitectureError",
    "ParameterError",
    "InputError",
    "NotInNeuromanifoldError",
    "DomainError",
    "Result",
    "linear",
    "relu",
    "flows",
    "exact",
    "LinearConvNet",
    "LinearFCNet",
    "JacobianRank",
    "correlate",
    "balanced_ntk_operator",
    "QuadraticLoss",
    "SquareLoss",
    "gradient_flow",
    "GradientFlowResult",
    "ReLUNet",
]
