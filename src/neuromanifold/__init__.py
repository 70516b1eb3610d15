"""neuromanifold: the geometry of neural-network parameterizations.

The public surface is re-exported here explicitly; implementation modules are private
(leading underscore). Domains: :mod:`neuromanifold.linear` (linear convolutional and
fully connected networks, docs/concepts_linear.md) and :mod:`neuromanifold.relu` (ReLU networks,
docs/concepts_relu.md). Outer layers (:mod:`neuromanifold.cli`) call the library, never the
other way round.
"""

from ._errors import (
    ArchitectureError,
    DomainError,
    InputError,
    ModelFileError,
    NeuromanifoldError,
    NotInNeuromanifoldError,
    ParameterError,
    SymmetryError,
    UndecidedFactorizationError,
)
from ._results import Result
from ._version import __version__
from . import exact, fibers, flows, io, linear, ntk, relu, reproduce
from . import conservation
from .conservation import ConservationLaws, KnownLaw, conservation_laws
from .flows import (GradientFlowResult, QuadraticLoss, SquareLoss, compare_lifts,
                    gradient_flow, riemannian_flow)
from .linear import (JacobianRank, LinearConvNet, LinearFCNet, ShallowReLUCNN, ShallowReLUMLP,
                     balanced_ntk_operator, convergence_study, correlate)
from .linear import RegularPoint, is_regular_point
from .ntk import Fiber, NTKDependence, ntk_dependence
from .relu import ReLUNet
from .reproduce import reproduce_linear, reproduce_relu
from ._errors import ComputationLimitError, SingularPointError, WorkerError


__all__ = [
    "NeuromanifoldError",
    "ArchitectureError",
    "ParameterError",
    "InputError",
    "NotInNeuromanifoldError",
    "DomainError",
    "ModelFileError",
    "UndecidedFactorizationError",
    "SymmetryError",
    "Result",
    "linear",
    "relu",
    "flows",
    "ntk",
    "fibers",
    "exact",
    "reproduce",
    "io",
    "LinearConvNet",
    "LinearFCNet",
    "JacobianRank",
    "correlate",
    "balanced_ntk_operator",
    "QuadraticLoss",
    "SquareLoss",
    "gradient_flow",
    "GradientFlowResult",
    "riemannian_flow",
    "compare_lifts",
    "convergence_study",
    "ShallowReLUCNN",
    "ShallowReLUMLP",
    "Fiber",
    "ntk_dependence",
    "NTKDependence",
    "reproduce_linear",
    "reproduce_relu",
    "ReLUNet",
    "is_regular_point",
    "RegularPoint",
]
__all__ += ["SingularPointError", "ComputationLimitError", "WorkerError"]
__all__ += ["conservation", "conservation_laws", "ConservationLaws", "KnownLaw"]
