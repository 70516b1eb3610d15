"""Reproductions of the papers' tables, computed (never stored): docs/concepts_linear.md §3,
judged within each claim's hypotheses (docs/reproduction.md)."""

from ._linear import (Case, Claim, Hypothesis, Refinement, Row, architecture_hypothesis,
                      default_linear_claims, reproduce_linear, standing_hypothesis, summarize,
                      verify_independence, verify_witness)

__all__ = ["reproduce_linear", "Row", "Claim", "Case", "Refinement", "Hypothesis",
           "default_linear_claims", "verify_witness", "verify_independence", "summarize",
           "architecture_hypothesis", "standing_hypothesis"]
