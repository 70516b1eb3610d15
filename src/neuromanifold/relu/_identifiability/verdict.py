"""The result of the identifiability question, shared by its routes: the three-layer
characterization (:mod:`.three_layer`) and the any-depth search for symmetries
(:mod:`.identifiability`) each return a subclass of :class:`Identifiability` that adds its
own evidence."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ..._results import Result

__all__ = ["Identifiability", "verdict_word"]


def verdict_word(identifiable: bool | None) -> str:
    """The three-valued verdict in words: ``"identifiable"``, ``"not identifiable"`` or
    ``"undecided"``."""
    return {True: "identifiable", False: "not identifiable", None: "undecided"}[identifiable]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Identifiability(Result):
    """Is a ReLU parameter identifiable up to permutation and positive scaling? The verdict
    of :func:`~neuromanifold.relu.identifiability`, whatever route reached it; each route's
    result (:class:`~neuromanifold.relu.ThreeLayerIdentifiability`,
    :class:`~neuromanifold.relu.DeepIdentifiability`) adds its evidence.
    ``Identifiability.from_dict`` reads either back.

    Attributes:
        identifiable: ``True`` (the fiber is the permutation-scaling orbit, where a
            characterization applies), ``False`` (a symmetry in ``witnesses``, re-checked
            at ``tol``, moves the parameter off its orbit) or ``None``: undecided
            (``undecided_reason`` says why and what would decide it).
        widths: ``(d, n_1, ..., n_L)``.
        witnesses: symmetries that move the parameter off its orbit.
        reasons: what was found, in words.
        certified: ``False`` with a witness that applies at ``tol = 0`` too (proved), or a
            ``True`` that rests on a proof (no hidden layer); the route's docs say which.
        tol: the relative tolerance of the sign decisions.
        method: the route, in words.
        undecided_reason: for ``identifiable=None``, why and what would decide it.
    """

    _QUESTION: ClassVar[bool] = True

    identifiable: bool | None
    widths: tuple
    witnesses: tuple
    reasons: tuple
    certified: bool
    tol: float
    method: str
    undecided_reason: str | None = None

    @property
    def verdict(self) -> str:
        """``"identifiable"``, ``"not identifiable"`` or ``"undecided"``."""
        return verdict_word(self.identifiable)
