"""The door of ``flows`` for the library's other packages: names they use and users
do not (so not in ``neuromanifold.flows``'s public surface). Import them from here,
never from ``flows``'s private modules."""

from ._gradient_flow import (
    DEFAULT_MAX_STEPS,
    OUT_OF_REACH,
    SOLVER_ATOL,
    SOLVER_RTOL,
    SOLVERS,
    Stepper,
    check_finite,
    check_num_times,
    fast_path,
    quiet_overflow,
    register_fast_path,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "OUT_OF_REACH",
    "SOLVER_ATOL",
    "SOLVER_RTOL",
    "SOLVERS",
    "Stepper",
    "check_finite",
    "check_num_times",
    "fast_path",
    "quiet_overflow",
    "register_fast_path",
]
