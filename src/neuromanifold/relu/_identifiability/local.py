"""Local identifiability, proved from the rank of the parameter Jacobian.

**The theorem used.** Let ``theta`` have ``P`` parameters and ``H`` hidden neurons, each
with a nonzero incoming row ``(W_l[j], b_l[j])``, and let ``r`` be a proven lower bound of
the rank at ``theta`` of ``theta' -> (f_theta'(x_1), ..., f_theta'(x_m))`` for points
``x_i`` strictly inside linear regions whose activation patterns are proven (the exact
route of :func:`~neuromanifold.relu.functional_dimension`). Near ``theta`` the patterns
stay, so that map is polynomial; ``r`` of its coordinates have independent gradients at
``theta``, and by the implicit function theorem their common level set is, near
``theta``, a submanifold ``M`` of dimension ``P - r`` containing the fiber. The positive
rescalings of the hidden neurons keep the function, and their orbit ``O`` through
``theta`` has dimension ``H`` (their tangents are independent: layer by layer, a neuron's
nonzero incoming row is moved by its own scaling and by no scaling of a later layer), so
``O`` lies in the fiber and ``r <= P - H``. When ``r = P - H``, ``O`` is a submanifold of
``M`` of the same dimension, hence open in ``M``: near ``theta`` the fiber **is** the
scaling orbit (the permutations are discrete and do not show locally). This is the
rank condition of Bona-Pellissier, Bachoc and Malgouyres ("Local identifiability of deep
ReLU neural networks: the theory", NeurIPS 2022) on a finite set of inputs, decided with
an exact rank instead of a floating-point one, and the equality of the functional
dimension with its bound ``P - H`` that Grigsby, Lindsey and Rolnick relate to hidden
symmetries.

**Not locally identifiable** is proved by a witness of a continuous family (a dead
neuron's free outgoing weights, a silent neuron's free row, an always-active bias shift,
a split between parallel neurons, a hidden hyperplane's translation, a mixing of an
always-active block) that applies at ``tol = 0``: the family is a curve of fiber points
through ``theta`` that leaves the orbit. Otherwise the local verdict is open, with why.

**On a domain** ``D`` (a box, the orthant) the question is whether the values on ``D``
determine the parameter near ``theta``: the same argument with points of ``D`` (a region
meeting ``D`` meets its interior, where the rows of the region are those of an open set).
More neurons are dead or linear on ``D``: the moves those allow (what
:func:`~neuromanifold.relu.neurons` proves there; a neuron certified negative on the whole
box has a free row too) keep the function on ``D``, and when the dimension they generate,
an exact rank modulo a prime, exceeds ``H``, the fiber on ``D`` near ``theta`` contains a
manifold larger than the orbit: not locally identifiable from ``D``, proved.

**From data** (finitely many points ``x_1 .. x_N``, each with a proven pattern): the rank
of the Jacobian at those very points (:mod:`~neuromanifold.relu._fundim.points`), and the
moves their certified signs allow (a neuron negative at every point has a free row and
column near ``theta``; active at every one, a bias shift). "Is my network determined, near
itself, by its values on my training inputs?"
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from .._core.domain import Domain
from .._fundim.fundim import proven_jacobian_rank
from .._fundim.points import point_jacobian_rank
from .._symmetries.moves import families_on, generated_dimension

__all__ = ["LocalVerdict", "local_identifiability", "CONTINUOUS_MOVES"]

#: the symmetries that come in continuous families through the parameter (their amount
#: ranges over an interval containing the identity); a witness of one that applies at
#: tol = 0 proves the fiber larger than the orbit near the parameter
CONTINUOUS_MOVES = (
    "DeadNeuronOutgoing",
    "SilentNeuronIncoming",
    "ActiveBiasShift",
    "ParallelNeuronSplit",
    "DeadNeuronMove",
    "LinearBlockMixing",
    "HidingTranslation",
)


@dataclasses.dataclass(frozen=True)
class LocalVerdict:
    """What :func:`local_identifiability` proved: ``locally_identifiable`` (``True``,
    ``False`` or ``None``), the proven rank ``jacobian_rank`` (``None`` when not
    computed), its bound ``P - H`` and the reason in words."""

    locally_identifiable: bool | None
    jacobian_rank: int | None
    rank_bound: int
    reason: str


def _move_name(witness: Any) -> str:
    inner = getattr(witness, "symmetry", witness)  # a WindowSymmetry wraps its move
    return type(inner).__name__


def local_identifiability(
    params: list,
    witnesses: tuple,
    *,
    domain: Domain | None = None,
    data: np.ndarray | None = None,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> LocalVerdict:
    """Is the fiber near ``params`` the scaling orbit (module docs), on R^d or, given, on
    ``domain`` or at the rows of ``data``? ``witnesses`` are the identifiability search's
    (on R^d, so on any subset too), re-checked here at ``tol = 0``."""
    # Whole: a ladder of verdicts, each an early return; the cases read best as one list
    start = time.monotonic()
    P = sum(W.size + b.size for W, b in params)
    hidden = params[:-1]
    H = sum(W.shape[0] for W, _ in hidden)
    bound = P - H
    continuous = [
        w
        for w in witnesses
        if _move_name(w) in CONTINUOUS_MOVES and w.applies(params, tol=0).applies
    ]
    if continuous:
        return LocalVerdict(
            locally_identifiable=False,
            jacobian_rank=None,
            rank_bound=bound,
            reason=f"{_move_name(continuous[0])} applies at tol = 0: a continuous family "
            f"of fiber points through the parameter leaves the scaling orbit",
        )
    zero_rows = [
        (l + 1, j)
        for l, (W, b) in enumerate(hidden)
        for j in range(W.shape[0])
        if not (W[j].any() or b[j])
    ]
    if zero_rows:
        l, j = zero_rows[0]
        return LocalVerdict(
            locally_identifiable=None,
            jacobian_rank=None,
            rank_bound=bound,
            reason=f"neuron {j} of layer {l} has zero incoming weights and bias, so its "
            f"scaling moves nothing and the rank test does not apply",
        )
    if data is not None:  # finitely many values: even an affine map needs enough of them
        return _from_data(params, data, H, bound, start, time_limit)
    if H == 0:
        return LocalVerdict(
            locally_identifiable=True,
            jacobian_rank=P,
            rank_bound=P,
            reason="no hidden layer: the function is its parameter",
        )
    if domain is not None:
        moved = _moves_on_domain(params, domain, H, max_regions, time_limit)
        if moved is not None:
            return LocalVerdict(
                locally_identifiable=False, jacobian_rank=None, rank_bound=bound, reason=moved
            )
        if time_limit is not None:
            time_limit = max(time_limit - (time.monotonic() - start), 1e-3)
    rank, why, together = proven_jacobian_rank(
        params, bound, max_regions, time_limit, domain=domain
    )
    if rank is None:
        return LocalVerdict(
            locally_identifiable=None, jacobian_rank=None, rank_bound=bound, reason=why
        )
    if rank >= bound:
        return LocalVerdict(
            locally_identifiable=True,
            jacobian_rank=rank,
            rank_bound=bound,
            reason=f"proved: the Jacobian's rank is P - H = {P} - {H} = {bound} (exact, "
            f"over regions with proven patterns), so near the parameter the fiber is "
            f"the orbit of the {H} neuron scalings",
        )
    if rank == 0:
        return LocalVerdict(
            locally_identifiable=None,
            jacobian_rank=0,
            rank_bound=bound,
            reason=f"no rank was proven within the budget (its first pass over sampled "
            f"regions did not end; P - H = {bound}): a larger time_limit decides more",
        )
    return LocalVerdict(
        locally_identifiable=None,
        jacobian_rank=rank,
        rank_bound=bound,
        reason=f"the proven rank {rank} is below P - H = {bound}: the fiber near the "
        f"parameter may be larger than the scaling orbit (a rank lower bound cannot show "
        f"it is; a larger time_limit may prove more), and no continuous symmetry applies "
        f"exactly" + (f"; {together}" if together else ""),
    )


def _from_data(params: list, X, H: int, bound: int, start: float, time_limit) -> LocalVerdict:
    """The local verdict from the values at the rows of ``X`` (module docs)."""
    deadline = None if time_limit is None else start + time_limit
    families = families_on(params, None, X, None, None)
    plural = "s" if len(X) > 1 else ""
    where = f"the values at the {len(X):,} data point{plural}"
    moved = _moves_beyond_orbit(params, families, H, deadline, where)
    if moved is not None:
        return LocalVerdict(
            locally_identifiable=False, jacobian_rank=None, rank_bound=bound, reason=moved
        )
    rank, used, why = point_jacobian_rank(params, X, bound, deadline)
    if rank is not None and rank >= bound:
        return LocalVerdict(
            locally_identifiable=True,
            jacobian_rank=rank,
            rank_bound=bound,
            reason=f"proved: the Jacobian's rank at {used:,} of the data points (those with "
            f"proven patterns) is P - H = {bound} (exact), so near the parameter the "
            f"parameters with the same values there are the orbit of the {H} neuron scalings",
        )
    if rank is None:
        return LocalVerdict(
            locally_identifiable=None, jacobian_rank=None, rank_bound=bound, reason=why
        )
    return LocalVerdict(
        locally_identifiable=None,
        jacobian_rank=rank,
        rank_bound=bound,
        reason=f"the proven rank {rank} at {used:,} data points is below P - H = {bound}: "
        f"the values there may leave the parameter undetermined beyond the scalings (more "
        f"points, or points in other regions, can raise the rank)" + (f"; {why}" if why else ""),
    )


def _moves_on_domain(params: list, dom: Domain, H: int, max_regions, time_limit) -> str | None:
    """The reason the fiber on ``dom`` is larger than the scaling orbit near ``params``
    (the moves its neurons' statuses there allow generate more than ``H`` dimensions),
    or ``None`` when they do not show it."""
    families = families_on(params, dom, None, max_regions, time_limit)
    deadline = None if time_limit is None else time.monotonic() + time_limit / 2
    return _moves_beyond_orbit(params, families, H, deadline, f"the function on the {dom.kind}")


def _moves_beyond_orbit(params, families: list, H: int, deadline, where: str) -> str | None:
    """The reason the move ``families`` generate more than the ``H`` dimensions of the
    scaling orbit, or ``None``."""
    if all(f.kind == "scaling" for f in families):
        return None
    dimension, _, _, _ = generated_dimension(params, families, deadline)
    if dimension <= H:
        return None
    named = [f.describe() for f in families if f.kind != "scaling"]
    return (
        f"moves that keep {where} generate {dimension} "
        f"dimensions at the parameter (an exact rank), more than the {H} of the scaling "
        f"orbit: "
        + "; ".join(named[:4])
        + (f"; and {len(named) - 4} more" if len(named) > 4 else "")
    )
