"""The layers of a convolutional ReLU network (:class:`neuromanifold.relu.ReLUConvNet`).

Every layer offers one interface (a structured forward pass, its affine map where it has
one, the channels it produces and reads); BatchNorm in inference mode is folded into the
affine layer before it when a model is read (:func:`neuromanifold.io.load` says so);
:class:`Residual` is a block ``x -> body(x) + skip(x)`` (identity or projection skip).

>>> import numpy as np
>>> from neuromanifold.relu import layers
>>> layers.Conv(np.ones((4, 3, 3, 3)), np.zeros(4), stride=2, padding=1)
conv2d(3->4, 3x3, stride (2, 2), padding (1, 1, 1, 1), dilation (1, 1))
"""

from ._core.conv.convolution import Conv
from ._core.conv.dense import Dense
from ._core.conv.elementwise import Flatten, ReLU
from ._core.conv.layer import AffineLayer, Layer
from ._core.conv.pool import AvgPool, GlobalAvgPool, MaxPool
from ._core.conv.residual import Residual

__all__ = [
    "Layer",
    "AffineLayer",
    "Conv",
    "Dense",
    "ReLU",
    "Flatten",
    "MaxPool",
    "AvgPool",
    "GlobalAvgPool",
    "Residual",
]
