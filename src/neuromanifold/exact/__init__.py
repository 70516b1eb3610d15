"""Exact arithmetic shared by the linear and ReLU domains (python-flint)."""

from ._rational import exact_rank, fmpq_array, fmpq_matrix, fmpq_to_fraction, to_fmpq

__all__ = ["to_fmpq", "fmpq_to_fraction", "fmpq_array", "fmpq_matrix", "exact_rank"]
