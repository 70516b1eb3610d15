"""What every reproduction table shares (docs/reproduction.md): the four outcomes, the
row of a computed table and the outcome counts.

A row states a claim of a paper (``paper_claim``) for an architecture family and a
condition, the verdict computed over many instances (``computed``) and the **outcome**,
the verdict judged within the claim's hypotheses:

* ``agrees``: the computation confirms the claim on every instance meeting every
  hypothesis;
* ``disagrees``: an instance meeting every hypothesis contradicts the claim with verified
  evidence (``evidence["counterexample"]``);
* ``outside the hypotheses``: the contradicting instances all break a hypothesis and none
  meets them all;
* ``inconclusive``: the evidence within the hypotheses proves nothing either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import InputError, short_repr
from .._results import Result

__all__ = ["AGREES", "DISAGREES", "OUTSIDE", "INCONCLUSIVE", "OUTCOMES", "Row", "summarize"]

AGREES, DISAGREES, OUTSIDE, INCONCLUSIVE = (
    "agrees",
    "disagrees",
    "outside the hypotheses",
    "inconclusive",
)
OUTCOMES = (AGREES, DISAGREES, OUTSIDE, INCONCLUSIVE)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Row(Result):
    """One row of a computed table.

    Attributes:
        architecture: the family.
        condition: the condition (refined rows append the refining condition).
        paper_claim: the paper's answer or statement for this condition.
        computed: the computed verdict over all instances (for the linear table
            ``independent``, ``dependent``, ``mixed`` or ``inconclusive``; for the ReLU
            table the claim's counts, e.g. ``"holds on 40 of 40"``).
        outcome: ``agrees``, ``disagrees``, ``outside the hypotheses`` or
            ``inconclusive`` (module docs): the verdict judged within the claim's
            hypotheses.
        agrees: ``outcome == "agrees"``.
        hypotheses: the labels of the hypotheses checked.
        reason: why this outcome, in words (the failing hypotheses for ``outside``, the
            counterexample for ``disagrees``).
        evidence: the numbers behind the verdict (per table: docs/reproduction.md), with
            the counterexample (``counterexample``) for ``disagrees``.
    """

    architecture: str
    condition: str
    paper_claim: str
    computed: str
    outcome: str
    agrees: bool
    hypotheses: tuple
    reason: str
    evidence: dict
    #: the model of ``evidence["witness"]`` (for pictures; not part of ``to_dict``)
    _witness_model: Any = dataclasses.field(default=None, repr=False, compare=False)
    #: ``summarize(row) -> str`` for the table's evidence column (not part of ``to_dict``)
    _summarizer: Callable[["Row"], str] | None = dataclasses.field(
        default=None, repr=False, compare=False
    )

    def summary(self) -> str:
        """The evidence in one line, for the table."""
        if self._summarizer is not None:
            return self._summarizer(self)
        parts = [str(self.evidence.get("summary", ""))] if self.evidence.get("summary") else []
        if self.reason:
            parts.append(self.reason)
        return "; ".join(parts)


def summarize(rows: Sequence[Row]) -> dict:
    """Counts of the outcomes: every row, and the paper's rows (refined rows left out).

    Args:
        rows: the rows of :func:`reproduce_linear` or :func:`reproduce_relu`.

    Returns:
        ``{"rows": {outcome: count}, "claims": {outcome: count}}`` over the four outcomes;
        only ``disagrees`` counts as a disagreement with the paper.

    >>> summarize([])["rows"]
    {'agrees': 0, 'disagrees': 0, 'outside the hypotheses': 0, 'inconclusive': 0}
    """
    if (
        isinstance(rows, (str, bytes))
        or not isinstance(rows, Sequence)
        or not all(isinstance(r, Row) for r in rows)
    ):
        raise InputError(
            f"rows must be a sequence of reproduction rows (Row); got {short_repr(rows)}"
        )
    out = {"rows": {o: 0 for o in OUTCOMES}, "claims": {o: 0 for o in OUTCOMES}}
    for r in rows:
        out["rows"][r.outcome] += 1
        if "refines" not in r.evidence:
            out["claims"][r.outcome] += 1
    return out
