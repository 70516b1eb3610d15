"""The result of the identifiability question, shared by its routes: the three-layer
characterization (:mod:`.three_layer`) and the any-depth search for symmetries
(:mod:`.identifiability`) each return a subclass of :class:`Identifiability` that adds its
own evidence."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ..._results import Result
from .._core.domain import Domain

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
        locally_identifiable: with ``local=True``: ``True`` when the fiber near the
            parameter is proved to be the orbit of the neuron scalings (the exact
            Jacobian rank equals ``P - H``), ``False`` with a continuous family of fiber
            points leaving the orbit, ``None`` when open or not asked (``local_reason``).
        jacobian_rank: the proven lower bound of the Jacobian's rank the local verdict
            used (``None`` when none was computed).
        local_reason: the local verdict's reason, in words.
        local_domain: the domain of the local verdict (``None``: R^d): is the parameter
            determined near itself by the function's values there?
        local_num_data_points: with ``data``, the number of data points the local verdict
            is about (its values at those points), else ``None``.
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
    locally_identifiable: bool | None = None
    jacobian_rank: int | None = dataclasses.field(default=None, repr=False)
    local_reason: str | None = dataclasses.field(default=None, repr=False)
    local_domain: Domain | None = dataclasses.field(default=None, repr=False)
    local_num_data_points: int | None = dataclasses.field(default=None, repr=False)

    @property
    def verdict(self) -> str:
        """``"identifiable"``, ``"not identifiable"`` or ``"undecided"``."""
        return verdict_word(self.identifiable)

    def local_line(self) -> list[str]:
        """The local verdict in one line (empty when it was not asked)."""
        if self.local_reason is None:
            return []
        word = {True: "locally identifiable", False: "not locally identifiable"}.get(
            self.locally_identifiable, "local identifiability undecided"
        )
        where = "" if self.local_domain is None else f" on the {self.local_domain.kind}"
        if self.local_num_data_points is not None:
            n = self.local_num_data_points
            where = f" from the values at {n:,} data point{'s' if n != 1 else ''}"
        return [f"  {word}{where}: {self.local_reason}"]
