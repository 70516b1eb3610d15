"""The door of ``exact`` for the library's other packages: names they use and users
do not (so not in ``neuromanifold.exact``'s public surface). Import them from here,
never from ``exact``'s private modules."""

from ._factor import mpoly_dense
from ._lp import dot, round_certificate
from ._rescaling import apply_rescaling
from ._roots import isolate_factors, working_precision

__all__ = [
    "apply_rescaling",
    "dot",
    "isolate_factors",
    "mpoly_dense",
    "round_certificate",
    "working_precision",
]
