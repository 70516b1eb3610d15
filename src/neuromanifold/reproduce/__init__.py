"""Reproductions of the papers' tables, computed (never stored): docs/concepts_linear.md §3
(paper A, :func:`reproduce_linear`) and paper B's claims on three-layer ReLU networks
(:func:`reproduce_relu`), judged within each claim's hypotheses (docs/reproduction.md)."""

from ._common import OUTCOMES, Row, summarize
from ._linear import (
    Case,
    Claim,
    Hypothesis,
    Refinement,
    architecture_hypothesis,
    default_linear_claims,
    reproduce_linear,
    standing_hypothesis,
    verify_independence,
    verify_witness,
)
from ._relu import (
    ReLUClaim,
    ReLUContext,
    default_relu_claims,
    relu_hypotheses,
    reproduce_relu,
    verdict_row,
)

__all__ = [
    "reproduce_linear",
    "Row",
    "Claim",
    "Case",
    "Refinement",
    "Hypothesis",
    "default_linear_claims",
    "verify_witness",
    "verify_independence",
    "summarize",
    "architecture_hypothesis",
    "standing_hypothesis",
    "OUTCOMES",
    "reproduce_relu",
    "ReLUClaim",
    "ReLUContext",
    "default_relu_claims",
    "relu_hypotheses",
    "verdict_row",
]
