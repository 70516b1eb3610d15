"""Linear networks (paper A, SPEC section 1): convolutional in any dimension, and fully
connected."""

from ._fiber import Fiber
from ._base import JacobianRank
from ._conv import LinearConvNet, correlate, upsample
from ._fc import LinearFCNet, balanced_ntk_operator
from .._errors import UndecidedFactorizationError
from ._shallow_relu import PathLiftingCheck, ShallowReLUCNN, ShallowReLUMLP, path_lifting_check

__all__ = ["LinearConvNet", "LinearFCNet", "JacobianRank", "correlate", "upsample",
           "balanced_ntk_operator", "Fiber", "ShallowReLUCNN", "ShallowReLUMLP",
           "path_lifting_check", "PathLiftingCheck", "UndecidedFactorizationError"]
