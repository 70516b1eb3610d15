"""The result of the fiber question, shared by its routes: the explicit families of a
three-layer bottleneck parameter (:mod:`.three_layer`) and the moves of any depth bounded
by the Jacobian's rank (:mod:`.fiber`) each return a subclass of :class:`ReLUFiber` that
adds its own evidence."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from ..._results import Result

__all__ = ["ReLUFiber"]

Params = list[tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ReLUFiber(Result):
    """The fiber of a ReLU parameter (the parameters of the same function), as
    :func:`~neuromanifold.relu.fiber` describes it, whatever route described it; each
    route's result (:class:`~neuromanifold.relu.BottleneckFiber`,
    :class:`~neuromanifold.relu.DeepFiber`) adds its evidence. ``ReLUFiber.from_dict``
    reads either back.

    Attributes:
        params: the parameter.
        widths: ``(d, n_1, ..., n_L)``.
        num_params: P, the number of parameters.
        families: the families of fiber points the route lists.
        dimension: the dimension of what the families describe (the route's docs say
            whether it is the fiber's or a proven lower bound of it).
        tol: the tolerance of the sign decisions.
        method: the route, in words.

    Every route has ``describe(max_families=None)`` (the families in words) and
    ``sample(n, seed, dyadic=False)`` (random fiber points).
    """

    _QUESTION: ClassVar[bool] = True

    params: Params = dataclasses.field(repr=False)
    widths: tuple
    num_params: int
    families: tuple
    dimension: int
    tol: float
    method: str

    def describe(self, max_families: int | None = None) -> str:  # pragma: no cover
        """The families in words (every route implements it)."""
        raise NotImplementedError

    def sample(self, num_samples: int = 1, seed: Any = 0, *, dyadic: bool = False) -> list:
        """``num_samples`` random fiber points (every route implements it)."""  # pragma: no cover
        raise NotImplementedError
