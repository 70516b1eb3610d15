"""The fiber of a ReLU parameter of any depth: the part the listed symmetries generate, and
its local dimension where two proven bounds meet (docs/relu_depth.md §5).

Three-layer bottleneck parameters keep the explicit semi-algebraic families of
:mod:`neuromanifold.relu._fiber.three_layer`. Every other parameter gets a
:class:`DeepFiber`, built from moves decided on the exact floats (``tol = 0``: a move that
holds only up to a tolerance is not in the fiber of the given numbers):

* **scaling** of every hidden neuron (its row times ``u > 0``, its outgoing column over ``u``);
* a **dead** neuron (first layer: zero weights and a bias ``<= 0``; later: no positive
  entry in its row): its outgoing column is free, and its row moves in the dead cone (the
  bias alone in the first layer);
* a **silent** neuron (zero outgoing column): its row is free;
* a pair of **parallel** neurons (row ``k`` = ``lam`` row ``j``, ``lam > 0``): outgoing
  weight moves between them, ``c_j + lam s``, ``c_k - s``;
* an **always-active** neuron (first layer: zero weights and a bias ``> 0``; later: no
  negative entry in its row), neither silent nor dead: its bias shifts into the next
  layer's, and a block ``A`` of them mixes, ``R_A -> G R_A``, ``C_A -> C_A G^-1`` with
  ``G = I + E``, ``E >= 0`` (``G z_A >= 0``, so the block stays active).

Applied in that order (scalings last), each move stays valid after the ones before it (they
keep every neuron's function: a dead neuron's column moving changes rows of the next layer
only where they multiply a zero output), and one-sided parameters (a dead row's zero
entries, ``E >= 0``) still range over a set with interior. So the differential at the
identity of the composed map is the matrix ``D`` of the moves' tangent vectors, and the
part of the fiber they generate contains, in every neighbourhood of the parameter, a
manifold of dimension ``rank D``: **``dimension`` is a lower bound of the fiber's local
dimension**. It is computed modulo a prime (``rank mod p <= rank over Q``, a proven lower
bound): the coordinate vectors of dead and silent neurons count one each, the other rows
are compressed by a random matrix, which can only lower the rank.

**An upper bound.** At points ``x`` strictly inside linear regions (patterns proven),
``theta' -> f_theta'(x)`` is polynomial near ``theta``, so the fiber near ``theta`` lies
in a level set of a map whose Jacobian has rank at least ``r`` there, a manifold of
dimension ``P - r`` (implicit function theorem): the fiber's local dimension is at most
``P - r`` for ``r`` any proven lower bound of the rank of the stacked parameter Jacobians
(:func:`~neuromanifold.relu.functional_dimension`'s exact route at ``tol = 0``).
When the two bounds meet, the fiber's **local dimension** at the parameter is proved, and
the listed moves account for all of it. They need not account for all of the fiber: other
components (through flips, say) and moves that leave the dimension alone stay possible.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from ..._errors import InputError
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_seed_rng, check_bool, check_positive_int, renamed_keywords
from .._core.domain import Domain, domain_or_data
from .._core.live import refuse_conv
from .._core.net import check_params, float64_mismatch
from .._engine.budget import check_budget
from .._fundim.fundim import proven_jacobian_rank
from .._fundim.points import point_jacobian_rank
from .._symmetries.moves import MoveFamily, families_on, generated_dimension, sample_moves
from .._symmetries.shape import is_bottleneck
from .result import ReLUFiber
from .three_layer import fiber as bottleneck_fiber

__all__ = ["MoveFamily", "DeepFiber", "fiber"]

Params = list[tuple[np.ndarray, np.ndarray]]

#: the ``method`` of this route's results
DEEP_METHOD = "moves per layer, bounded by the Jacobian's rank"


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class DeepFiber(ReLUFiber):
    """What is proven of the fiber of a ReLU parameter outside the three-layer bottleneck
    theory (module docs).

    Attributes:
        params: the parameter.
        widths: ``(d, n_1, ..., n_L)``.
        num_params: P.
        families: the :class:`MoveFamily` list, in the order the moves compose.
        dimension: the dimension of the part of the fiber the families generate at the
            parameter (a proven lower bound of the fiber's local dimension); when the
            time limit ends before the rank of the moves' tangents, only the coordinate
            moves are counted, still a lower bound (``undecided_reason`` says so).
        jacobian_rank: a proven lower bound of the rank of the parameter Jacobian at the
            parameter (exact, modulo a prime, over regions with proven patterns), or
            ``None`` when none was computed (budget, or a pre-activation identically zero
            on a region).
        kernel_dimension: ``P - jacobian_rank``: a proven upper bound of the fiber's local
            dimension (``None`` with ``jacobian_rank``).
        local_dimension: the fiber's local dimension at the parameter when the two bounds
            meet (proved; the listed moves then account for all of it), else ``None``.
        undecided_reason: for ``local_dimension=None``, why and what would decide it.
        domain: where the functions agree (R^d unless a smaller domain was asked; the
            moves and the rank are those of the domain); ``None`` with data.
        num_data_points: with data, the number of points whose values agree, else ``None``.
        tol: 0.0: every move is decided on the exact floats.
        method: ``"moves per layer, bounded by the Jacobian's rank"``.
    """

    jacobian_rank: int | None
    kernel_dimension: int | None
    local_dimension: int | None
    undecided_reason: str | None = None
    domain: Domain | None = None
    num_data_points: int | None = None
    tol: float = 0.0
    method: str = DEEP_METHOD

    def describe(self, max_families: int | None = None) -> str:
        """The bounds, the verdict on the local dimension and every family (the first
        ``max_families``, when given), one per line."""
        widths = "-".join(map(str, self.widths))
        if self.domain is not None and self.domain.kind != "whole":
            widths += f", on the {self.domain.kind}"
        if self.num_data_points is not None:
            n = self.num_data_points
            widths += f", at {n:,} data point{'s' if n != 1 else ''}"
        if self.local_dimension is not None:
            head = (
                f"fiber of local dimension {self.local_dimension} at this parameter "
                f"(widths {widths}; proved: the listed moves generate "
                f"{self.dimension} dimensions, and P - rank of the Jacobian = "
                f"{self.num_params} - {self.jacobian_rank})"
            )
        else:
            upper = (
                "unknown" if self.kernel_dimension is None else f"at most {self.kernel_dimension}"
            )
            head = (
                f"fiber of local dimension at least {self.dimension}, {upper} "
                f"(widths {widths}; undecided: {self.undecided_reason})"
            )
        return "\n".join(
            [head]
            + ["  " + f.describe() for f in self.families[:max_families]]
            + _more(self.families, max_families)
        )

    @renamed_keywords(n="num_samples")
    def sample(self, num_samples: int = 1, seed: Any = 0, *, dyadic: bool = False) -> list[Params]:
        """``num_samples`` random points of the part of the fiber the families generate: every move
        with random amounts, in the order they compose, then random permutations of every
        hidden layer.

        Args:
            num_samples: number of samples (``n`` before; the old keyword warns).
            seed: int, None or a numpy Generator.
            dyadic: scalings by powers of two, other amounts multiples of 1/8 and no block
                mixing (``G^-1`` is not dyadic), so that a dyadic parameter gives samples
                exactly in the fiber in floating point (parallel splits with a non-dyadic
                ratio aside).

        Returns:
            A list of ``num_samples`` parameters ``[(W_1, b_1), ..., (W_L, b_L)]``.

        >>> P = [(np.eye(2), np.zeros(2)), (np.ones((2, 2)), np.zeros(2)),
        ...      (np.ones((2, 2)), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
        >>> len(fiber(P).sample(2, seed=1))
        2
        """
        n = check_positive_int(num_samples, "num_samples", maximum=1_000_000)
        rng = as_seed_rng(seed)
        dyadic = check_bool(dyadic, "dyadic")
        return [sample_moves(self.params, self.families, rng, dyadic) for _ in range(n)]


# -- the entry point -----------------------------------------------------------------------


def fiber(
    params: Any,
    domain: Any = None,
    *,
    data: Any = None,
    tol: float = DEFAULT_TOL,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> ReLUFiber:
    """The fiber of a ReLU parameter, ``{theta' : f_theta' = f_theta}`` (on a domain: the
    parameters whose function agrees with ``f_theta`` there; with data: whose values at
    the data points agree).

    A three-layer bottleneck parameter (``n1 <= d``, ``W1`` of full row rank) on R^d gets
    its explicit semi-algebraic families (:class:`~neuromanifold.relu.BottleneckFiber`);
    every other parameter, of any depth, and every parameter on a smaller domain, a
    :class:`DeepFiber`: the families of moves through it, the dimension they generate (a
    proven lower bound of the fiber's local dimension), the proven upper bound
    ``P - rank`` of the Jacobian on the domain, and the local dimension where the two meet
    (module docs).

    Args:
        params: the network's ``[(W_1, b_1), ..., (W_L, b_L)]``.
        domain: where the functions must agree: ``None`` (R^d), ``"orthant"``, a box
            ``(lower, upper)`` or a :class:`~neuromanifold.relu.Domain`. On a box more
            neurons are dead or linear (what :func:`~neuromanifold.relu.neurons` proves
            there), and a neuron certified negative on the whole box has a free row near
            the parameter: the fiber on the box is larger, the moves say by how much.
        data: points (an array ``(n, d)``; not with ``domain``): the parameters whose
            values at them are ``f_theta``'s. The moves their certified signs allow, and
            the upper bound ``P - rank`` from the Jacobian at the points (exact modulo a
            prime, up to 6,000 parameters).
        tol: relative tolerance of the sign decisions of the three-layer bottleneck
            families; a :class:`DeepFiber` decides every move on the exact floats (and
            refuses entries float64 does not hold, such as ``Fraction(1, 3)``).
        max_regions, time_limit: the budget of the neurons' statuses (half of it) and
            of the Jacobian's rank (a :class:`DeepFiber`); past it the rank found so far
            is used, still a proven lower bound. The clock is read between the steps of
            the layered rank, and its last rank (one call, 2 s at 8-60-60-1) is not
            started when its expected time would pass the limit.

    Returns:
        A :class:`~neuromanifold.relu.ReLUFiber`: a
        :class:`~neuromanifold.relu.BottleneckFiber` (the route of three-layer bottleneck
        parameters on R^d) or a :class:`DeepFiber` (every other case), its route named in
        ``method``.

    >>> P = [(np.eye(2), np.zeros(2)),
    ...      (np.array([[1.0, -1.0], [-1.0, -2.0]]), np.array([0.5, -1.0])),  # 1 is dead
    ...      (np.array([[1.0, -1.0], [-2.0, 1.0]]), np.array([0.5, 0.25])),   # 0 is active
    ...      (np.array([[1.0, 2.0]]), np.zeros(1))]
    >>> F = fiber(P)   # 6 scalings + the dead row and column (5, one a scaling) + a bias
    >>> F.dimension, F.local_dimension, F.num_params - F.jacobian_rank
    (11, 11, 11)
    """
    refuse_conv(params, "fiber")
    raw = params
    params = check_params(params)
    tol = check_tol(tol)
    max_regions, time_limit = check_budget(max_regions, time_limit)
    d = params[0][0].shape[1]
    dom, X = domain_or_data(domain, data, d, "fiber")
    if X is None and dom.kind == "whole" and len(params) == 3 and is_bottleneck(params, tol=tol):
        return bottleneck_fiber(params, tol=tol)
    mismatch = float64_mismatch(raw, params)
    if mismatch is not None:
        raise InputError(
            f"fiber decides its moves on float64 entries, and {mismatch}; pass the float64 "
            f"network to analyse that one"
        )
    start = time.monotonic()
    deadline = None if time_limit is None else start + time_limit
    families = families_on(params, dom, X, max_regions, time_limit)
    dimension, num_unit, num_other, complete = generated_dimension(params, families, deadline)
    P = sum(W.size + b.size for W, b in params)
    left = None if time_limit is None else max(time_limit - (time.monotonic() - start), 1e-3)
    if X is None:
        rank, reason, together = proven_jacobian_rank(
            params, P - dimension, max_regions, left, domain=dom
        )
    else:
        rank, _, reason = point_jacobian_rank(params, X, P - dimension, deadline)
        together = ""
    if not complete:
        # past the budget the coordinate moves alone count: independent by construction,
        # still a proven lower bound
        reason = (
            f"the rank of the {num_other} other move tangents was not computed within "
            f"the time limit, so the dimension counts the {num_unit} coordinate moves "
            f"alone (a lower bound); " + (reason or "a larger time_limit decides more")
        )
    kernel = None if rank is None else P - rank
    local = dimension if kernel == dimension else None
    if local is None and reason is None:
        reason = (
            f"the listed moves generate {dimension} dimensions and the Jacobian's rank "
            f"is proven to be at least {rank} (so at most {kernel}); a move not listed "
            f"(a symmetry of three consecutive layers, a neuron dead on the image of "
            f"the layers before that no bound proves dead on the domain) or a larger "
            f"proven rank would close the gap, which can also be real (a kernel "
            f"direction no curve in the fiber follows)" + (f"; {together}" if together else "")
        )
    widths = (params[0][0].shape[1],) + tuple(W.shape[0] for W, _ in params)
    return DeepFiber(
        params=params,
        widths=widths,
        num_params=P,
        families=tuple(families),
        dimension=dimension,
        jacobian_rank=rank,
        kernel_dimension=kernel,
        local_dimension=local,
        undecided_reason=None if local is not None else reason,
        domain=None if X is not None else dom,
        num_data_points=None if X is None else X.shape[0],
    )


def _more(families: tuple, shown: int | None) -> list[str]:
    """The line that says how many families :meth:`describe` left out, if any."""
    rest = len(families) - (len(families) if shown is None else shown)
    return (
        [f"  ... {rest} more famil{'y' if rest == 1 else 'ies'} (--show N, or --json PATH for all)"]
        if rest > 0
        else []
    )
