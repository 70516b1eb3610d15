"""The door of ``flows`` for the library's other packages: names they use and users
do not (so not in ``neuromanifold.flows``'s public surface). Import them from here,
never from ``flows``'s private modules."""

from ._batched import integrate_flows
from ._gradient_flow import (
    DEFAULT_MAX_STEPS,
    SOLVERS,
    Stepper,
    check_finite,
    check_num_times,
    quiet_overflow,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "SOLVERS",
    "Stepper",
    "check_finite",
    "check_num_times",
    "integrate_flows",
    "quiet_overflow",
]
