"""Reproductions of the papers' tables, computed (never stored): docs/concepts_linear.md §3."""

from ._linear import Case, Claim, Refinement, Row, default_linear_claims, reproduce_linear, \
    verify_witness

__all__ = ["reproduce_linear", "Row", "Claim", "Case", "Refinement", "default_linear_claims",
           "verify_witness"]
