"""The door of ``relu`` for the library's other packages: names they use and users
do not (so not in ``neuromanifold.relu``'s public surface). Import them from here,
never from ``relu``'s private modules."""

from ._bounds.parameters import path_norm_scale
from ._core.live import live_relu_params, tensor_to_numpy
from ._flow.flow import block_law_terms, rescaling_law_terms
from ._identifiability.three_layer import fast_genericity
from ._nonlocalizability.nonlocalizability import OFF_ORBIT, verify_point
from ._symmetries.shape import is_bottleneck, three_layer

__all__ = [
    "OFF_ORBIT",
    "block_law_terms",
    "fast_genericity",
    "is_bottleneck",
    "live_relu_params",
    "path_norm_scale",
    "rescaling_law_terms",
    "tensor_to_numpy",
    "three_layer",
    "verify_point",
]
