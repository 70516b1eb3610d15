"""Exact arithmetic shared by the linear and ReLU domains (python-flint)."""

from ._factor import absolute_factor_count, line_univariate, real_irreducible, support_line
from ._linalg import (
    qmat,
    qrows,
    rational_combination,
    rational_matmul,
    rational_nullspace,
    rational_rank,
    rational_rref,
    rational_solve,
)
from ._lp import exact_lp_max, motzkin_certificate, strict_interior_point, strictly_satisfies
from ._poly import poly_gradient, poly_to_sympy, poly_value, polynomial_ring
from ._rational import exact_rank, fmpq_array, fmpq_matrix, fmpq_to_fraction, to_fmpq
from ._rescaling import rescaled_norms, rescaled_norms_exact
from ._roots import RootIsolation, certified_roots, power_classes, real_irreducible_factors

__all__ = [
    "to_fmpq",
    "fmpq_to_fraction",
    "fmpq_array",
    "fmpq_matrix",
    "exact_rank",
    "qmat",
    "qrows",
    "rational_rank",
    "rational_rref",
    "rational_nullspace",
    "rational_combination",
    "rational_matmul",
    "rational_solve",
    "polynomial_ring",
    "poly_value",
    "poly_gradient",
    "poly_to_sympy",
    "RootIsolation",
    "certified_roots",
    "power_classes",
    "real_irreducible_factors",
    "rescaled_norms",
    "rescaled_norms_exact",
    "absolute_factor_count",
    "line_univariate",
    "support_line",
    "real_irreducible",
    "exact_lp_max",
    "motzkin_certificate",
    "strict_interior_point",
    "strictly_satisfies",
]
