"""Linear networks (paper A, SPEC section 1): convolutional in any dimension, and fully
connected."""

from ._base import JacobianRank
from ._conv import LinearConvNet, correlate, upsample
from ._fc import LinearFCNet, balanced_ntk_operator

__all__ = ["LinearConvNet", "LinearFCNet", "JacobianRank", "correlate", "upsample",
           "balanced_ntk_operator"]
