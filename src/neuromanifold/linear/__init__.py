"""Linear networks (paper A, docs/concepts_linear.md): convolutional in any dimension and fully
connected; their fibers, convergence studies, and the shallow ReLU extension
(docs/concepts_linear.md §6)."""

from .._errors import UndecidedFactorizationError
from ..fibers import Fiber
from . import _flow_paths  # noqa: F401 - offers the shared flows its fast paths
from ._base import JacobianRank
from ._batched_flows import BatchedFlowResult, gradient_flows
from ._conv import LinearConvNet, correlate, upsample
from ._convergence import (
    ConvergenceRun,
    ConvergenceStudy,
    ConvergenceSummary,
    convergence_study,
    random_regression_data,
)
from ._fc import LinearFCNet, balanced_ntk_operator
from ._shallow_relu import PathLiftingCheck, ShallowReLUCNN, ShallowReLUMLP, path_lifting_check

__all__ = [
    "LinearConvNet",
    "LinearFCNet",
    "JacobianRank",
    "correlate",
    "upsample",
    "balanced_ntk_operator",
    "Fiber",
    "UndecidedFactorizationError",
    "ShallowReLUCNN",
    "ShallowReLUMLP",
    "path_lifting_check",
    "PathLiftingCheck",
    "convergence_study",
    "ConvergenceStudy",
    "ConvergenceRun",
    "ConvergenceSummary",
    "random_regression_data",
    "gradient_flows",
    "BatchedFlowResult",
]
from ._regular import RegularPoint, is_regular_point

__all__ += ["is_regular_point", "RegularPoint"]
