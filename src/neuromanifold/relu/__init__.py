"""ReLU networks (paper B, SPEC section 2): the exact piecewise-linear engine."""

from ._domain import Domain, as_domain
from ._net import ReLUNet, check_params, forward

__all__ = ["ReLUNet", "forward", "check_params", "Domain", "as_domain"]
