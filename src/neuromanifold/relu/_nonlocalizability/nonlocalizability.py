"""Non-localizability of identifiability for three-layer ReLU networks
(docs/concepts_relu.md §6).

Write the three-layer network ``f(x) = W3 relu(W2 relu(W1 x + b1) + b2) + b3`` as
``f = f3 o f2 o f1`` with

    f1(x) = relu(W1 x + b1),    f2(z) = relu(W2 z + b2),    f3(y) = W3 y + b3.

The two "halves" are read as follows (both keep every ReLU they contain):

* ``f2 o f1 : R^d -> R^{n2}``, ``x -> relu(W2 relu(W1 x + b1) + b2)``, with parameters
  ``(W1, b1, W2, b2)``: the activations of the second hidden layer, *observed coordinate by
  coordinate*. Its obvious symmetries are the permutations and positive scalings of the
  ``n1`` first-layer neurons; the second-layer neurons are its outputs, so they can be
  neither permuted nor rescaled (``relu(c y) = c relu(y)`` changes the output for
  ``c != 1``). It is *identifiable* when its fiber is that orbit. Equivalently, it is the
  slice ``W3 = I, b3 = 0`` of the fiber of the network ``(W1, b1, W2, b2, I, 0)``: we do
  **not** read it as that network with a trainable last affine layer, because that layer
  would bring in the freedom of ``f3`` (e.g. shifting the bias of an always-active
  neuron into ``b3``), and the statement would again be about three layers.
* ``f3 o f2 : R^{n1} -> R^{n3}``, ``z -> W3 relu(W2 z + b2) + b3``: a one-hidden-layer
  network on all of ``R^{n1}`` (its own input space, not only the orthant that ``f1``
  reaches). Symmetries: permutations and positive scalings of the ``n2`` neurons.
* ``f3 o f2 o f1``: the whole network, symmetries: permutations and scalings of both
  hidden layers (``n1 + n2`` scaling directions).

Evidence, all computed (none stored):

* ``f2 o f1``: the exact rank of the Jacobian of ``(W1, b1, W2, b2) -> f2 o f1`` over every
  linear region of ``R^d`` (rational arithmetic, as in
  :func:`~neuromanifold.relu.functional_dimension`) equals ``P12 - n1``: the fiber is,
  near the parameter, exactly the scaling orbit (local identifiability; ``scope`` says so).
* ``f3 o f2``: the exact functional dimension on ``R^{n1}`` equals ``P23 - n2``, and the
  global argument of the weighted arrangement on ``R^{n1}`` (docs/concepts_relu.md §2):
  when every neuron has a nonzero row ``W2[j]``, a nonzero outgoing column and its own
  hyperplane (no two rows of ``[W2 | b2]`` parallel), any parameter realizing the same
  function puts one neuron on each hyperplane, up to scaling and orientation, and
  reversing the neurons of a set ``S`` keeps the function iff
  ``sum_{j in S} W3[:, j] W2[j] = 0``. No such nonempty ``S`` (checked exactly) means
  the fiber is the orbit (global identifiability).
* ``f3 o f2 o f1``: an explicit fiber point ``q`` that is not a permutation/scaling of the
  parameter: a symmetry of :mod:`neuromanifold.relu.symmetries` applied,
  ``relu.equivalent(p, q, method="regions")`` deciding equality (exact region engine) and
  the orbit distance (module function ``orbit_distance``) above ``1e-6``; plus the exact
  functional dimension of the whole (a rank below ``P - n1 - n2`` is a continuous fiber
  direction).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import flint
import numpy as np

from ..._errors import ArchitectureError, InputError, NeuromanifoldError, short_repr
from ..._progress import progress_bar
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import (
    as_seed_rng,
    check_bool,
    check_choice,
    check_finite_result,
    check_positive_int,
    renamed_keywords,
)
from ...exact import to_fmpq
from .._core.live import refuse_conv
from .._core.net import check_params
from .._engine.joint_regions import equivalent_by_regions
from .._fundim.fundim import functional_dimension, region_rows
from .._identifiability.three_layer import identifiability
from .._regions.regions import compute_regions
from .._symmetries.shape import three_layer

__all__ = [
    "PartIdentifiability",
    "Nonlocalizability",
    "NonlocalizableSearch",
    "nonlocalizability",
    "nonlocalizable_example",
    "search_nonlocalizable",
    "orbit_distance",
]

#: a fiber point counts as off the permutation-scaling orbit above this orbit distance
OFF_ORBIT = 1e-6
#: most random parameters per architecture in one search
MAX_TRIALS = 100_000


# --------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class PartIdentifiability(Result):
    """Identifiability of one part of ``f3 o f2 o f1`` (module docs).

    Attributes:
        part: ``"f2 o f1"``, ``"f3 o f2"`` or ``"f3 o f2 o f1"``.
        formula: the map, in words.
        num_params: its number of parameters.
        num_scalings: the dimension of its permutation-scaling orbit (the neurons that can
            be rescaled: ``n1``, ``n2`` or ``n1 + n2``).
        rank: the exact rank of its parameter Jacobian over every linear region.
        bound: ``num_params - num_scalings``; ``rank == bound`` means no continuous
            symmetry beyond scalings.
        identifiable: ``True`` (the fiber is the orbit, within ``scope``), ``False`` (a
            verified fiber point off the orbit, ``witness``) or ``None`` (undecided).
        scope: what ``identifiable`` covers: ``"local"`` (near the parameter, by exact
            rank), ``"global"`` (the whole fiber).
        certified: the verdict is proved (exact rank; a witness verified by the exact
            engine).
        evidence: how it was decided (ranks, the cancelling subsets checked, the witness's
            symmetry, its equivalence verdict and orbit distance).
        witness: a fiber point off the orbit (``None`` when there is none).
    """

    part: str
    formula: str
    num_params: int
    num_scalings: int
    rank: int
    bound: int
    identifiable: bool | None
    scope: str
    certified: bool
    evidence: dict
    witness: list[tuple[np.ndarray, np.ndarray]] | None = None


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Nonlocalizability(Result):
    """The three identifiability facts of a three-layer parameter (module docs).

    Attributes:
        params: the parameter ``[(W1, b1), (W2, b2), (W3, b3)]``.
        widths: ``(d, n1, n2, n3)``.
        first_two: :class:`PartIdentifiability` of ``f2 o f1``.
        last_two: :class:`PartIdentifiability` of ``f3 o f2``.
        whole: :class:`PartIdentifiability` of ``f3 o f2 o f1``.
        nonlocalizable: both halves identifiable and the whole not.
        certified: every one of the three facts is proved (exact ranks, the exact
            arrangement argument, the witness verified by the exact engine).
        mechanism: the symmetry of the whole's witness (e.g. ``"linear_block_mixing"``,
            ``"ramp_flip"``), ``None`` without a witness.
        tol: the relative tolerance of the sign decisions and of the equivalence check.
        reason: the verdict in words.
    """

    params: list[tuple[np.ndarray, np.ndarray]] = dataclasses.field(repr=False)
    widths: tuple
    first_two: PartIdentifiability
    last_two: PartIdentifiability
    whole: PartIdentifiability
    nonlocalizable: bool
    certified: bool
    mechanism: str | None
    tol: float
    reason: str


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class NonlocalizableSearch(Result):
    """How often non-localizability occurs among random parameters.

    Attributes:
        architectures: one dict per architecture: ``widths``, ``num_samples``, counts
            ``first_two_identifiable``, ``last_two_identifiable``,
            ``whole_not_identifiable`` (verified witness), ``nonlocalizable`` and
            ``certified``, the ``rate`` ``nonlocalizable / num_samples``, ``mechanisms``
            (symmetry name -> count) and ``example`` (the first nonlocalizable parameter
            found, as lists, or ``None``).
        total_samples, total_nonlocalizable: sums over the architectures.
        seed: the seed of the draws.
        tol: the tolerance used.
        draw: how parameters were drawn, in words.
    """

    architectures: tuple
    total_samples: int
    total_nonlocalizable: int
    seed: Any
    tol: float
    draw: str


# --------------------------------------------------------------------------- helpers
def orbit_distance(p: Any, q: Any) -> float:
    """Distance of ``q`` from the permutation-scaling orbit of ``p`` (same widths).

    Layer by layer, every hidden neuron's incoming row ``(W_l[j], b_l[j])`` is scaled to
    unit length (the scale pushed into the next layer's column), the neurons of ``q`` are
    matched to those of ``p`` by a minimum-cost assignment and reordered; the result is the
    largest entry difference of the normal forms relative to ``max(1, largest entry)``.
    Zero (up to rounding) exactly when ``q`` is a permutation and positive rescaling of
    ``p`` with distinct neurons.

    Args:
        p, q: parameters (lists of ``(W, b)``) of the same widths.

    Returns:
        A float ``>= 0``.

    >>> P = [(np.array([[1.0], [2.0]]), np.array([0.0, 1.0])),
    ...      (np.array([[1.0, -1.0]]), np.zeros(1))]
    >>> Q = [(np.array([[4.0], [0.5]]), np.array([2.0, 0.0])),   # swapped and rescaled
    ...      (np.array([[-0.5, 2.0]]), np.zeros(1))]
    >>> orbit_distance(P, Q) < 1e-12
    True
    >>> round(orbit_distance(P, [P[0], (P[1][0], np.ones(1))]), 3)   # b2 moved by 1
    0.447
    """
    from scipy.optimize import linear_sum_assignment  # start-up: a slow import

    a, b = check_params(p), check_params(q)
    if [W.shape for W, _ in a] != [W.shape for W, _ in b]:
        raise ArchitectureError(
            f"p and q must have the same widths; got layer shapes "
            f"{[W.shape for W, _ in a]} and {[W.shape for W, _ in b]}"
        )

    def normalize(layers, l):
        W, c = layers[l]
        R = np.hstack([W, c[:, None]])
        m = np.max(np.abs(R), axis=1)
        m[m == 0] = 1.0
        s = m * np.sqrt(np.sum((R / m[:, None]) ** 2, axis=1))  # no overflow in the squares
        s[s == 0] = 1.0
        Wn, cn = layers[l + 1]
        layers[l] = (W / s[:, None], c / s)
        layers[l + 1] = (Wn * s[None, :], cn)

    a, b = [(W.copy(), c.copy()) for W, c in a], [(W.copy(), c.copy()) for W, c in b]
    for l in range(len(a) - 1):
        normalize(a, l)
        normalize(b, l)
        check_finite_result([a[l + 1], b[l + 1]], "orbit_distance's normalized parameters")
        Ra = np.hstack([a[l][0], a[l][1][:, None]])
        Rb = np.hstack([b[l][0], b[l][1][:, None]])
        cost = np.max(np.abs(Ra[:, None, :] - Rb[None, :, :]), axis=2)
        _, perm = linear_sum_assignment(cost)
        b[l] = (b[l][0][perm], b[l][1][perm])
        b[l + 1] = (b[l + 1][0][:, perm], b[l + 1][1])
    scale = max(1.0, max(float(np.max(np.abs(M))) for W, c in a for M in (W, c)))
    return (
        max(
            float(np.max(np.abs(Wa - Wb), initial=0.0))
            for (Wa, ca), (Wb, cb) in zip(a, b)
            for Wa, Wb in ((Wa, Wb), (ca, cb))
        )
        / scale
    )


def _exact_rank(layers: list, ncols: int | None = None) -> tuple[int, int]:
    """Exact rank of the stacked parameter Jacobian rows of ``layers`` over every linear
    region of ``R^d`` (the rows of :func:`functional_dimension`), restricted to the first
    ``ncols`` columns (all when ``None``); also returns the number of regions."""

    _, cells, net, _ = compute_regions(layers, None, False)
    P = sum(W.size + b.size for W, b in net.params)
    ncols = P if ncols is None else ncols
    rows = []
    for cell in cells:
        r, _ = region_rows(net, cell.patterns[0], cell.center_q)
        rows.extend(row[:ncols] for row in r)
    if not rows:  # pragma: no cover - R^d has at least one region
        return 0, 0
    M = flint.fmpq_mat(len(rows), ncols, [v for row in rows for v in row])
    return int(M.rank()), len(cells)


def _q(x: float) -> flint.fmpq:
    return to_fmpq(float(x))


def verify_point(p: list, q: list, tol: float, exact: bool = True) -> dict:
    """``q`` equivalent to ``p`` by the exact region engine (at ``tol``; with ``exact`` also
    whether it is exactly equal, else ``exactly_equal`` is ``None``) and its orbit
    distance."""
    eq = equivalent_by_regions(p, q, tol=tol)
    if exact:
        exact = eq.equivalent and (tol == 0 or equivalent_by_regions(p, q, tol=0).equivalent)
    else:
        exact = None
    dist = orbit_distance(p, q)
    return {
        "equivalent": bool(eq.equivalent),
        "exactly_equal": None if exact is None else bool(exact),
        "equivalence_certified": bool(eq.certified),
        "num_regions": eq.num_regions,
        "orbit_distance": float(dist),
        "off_orbit": bool(dist > OFF_ORBIT),
        "b3_change": float(np.max(np.abs(np.asarray(p[-1][1]) - np.asarray(q[-1][1])))),
        "verified": bool(eq.equivalent and eq.certified and dist > OFF_ORBIT),
    }


# --------------------------------------------------------------------------- the parts
def _first_two(params: list) -> PartIdentifiability:
    (W1, b1), (W2, b2), _ = params
    n1, d = W1.shape
    n2 = W2.shape[0]
    P12 = n1 * d + n1 + n2 * n1 + n2
    N = [(W1, b1), (W2, b2), (np.eye(n2), np.zeros(n2))]
    rank, nreg = _exact_rank(N, P12)
    bound = P12 - n1
    return PartIdentifiability(
        part="f2 o f1",
        formula="x -> relu(W2 relu(W1 x + b1) + b2) on R^d (outputs observed)",
        num_params=P12,
        num_scalings=n1,
        rank=rank,
        bound=bound,
        identifiable=rank == bound,
        scope="local",
        certified=True,
        evidence={
            "method": "exact rank of the Jacobian of (W1, b1, W2, b2) -> f2 o f1 over all "
            f"{nreg} linear regions of R^d",
            "num_regions": nreg,
            "rank_deficit": bound - rank,
        },
    )


def _cancelling_subsets(W2: np.ndarray, W3: np.ndarray) -> tuple[list, int, int]:
    """Nonempty sets ``S`` of neurons with ``sum_{j in S} W3[:, j] W2[j] = 0`` (exactly),
    the exact rank of the rank-one terms and how many subsets were checked."""
    n2 = W2.shape[0]
    vecs = [[_q(c) * _q(a) for c in W3[:, j] for a in W2[j]] for j in range(n2)]
    m = len(vecs[0])
    rank = int(flint.fmpq_mat(n2, m, [v for row in vecs for v in row]).rank())
    if rank == n2:
        return [], rank, 0
    found, checked = [], 0
    for k in range(1, n2 + 1):
        for S in itertools.combinations(range(n2), k):
            checked += 1
            if all(sum((vecs[j][i] for j in S), flint.fmpq(0)) == 0 for i in range(m)):
                found.append(S)
    return found, rank, checked


def _last_two(params: list, tol: float) -> PartIdentifiability:
    _, (W2, b2), (W3, b3) = params
    n2, n1 = W2.shape
    g = [(W2, b2), (W3, b3)]
    fd = functional_dimension(g, None, tol=0)
    R = np.hstack([W2, b2[:, None]])
    zero_rows = [j for j in range(n2) if not np.any(W2[j] != 0)]
    zero_cols = [j for j in range(n2) if not np.any(W3[:, j] != 0)]
    parallel = []
    Rq = [[_q(v) for v in r] for r in R]
    for i, j in itertools.combinations(range(n2), 2):
        if int(flint.fmpq_mat(2, n1 + 1, Rq[i] + Rq[j]).rank()) < 2:
            parallel.append((i, j))
    ev = {
        "method": "exact functional dimension on R^{n1}; weighted arrangement on R^{n1} "
        "(one neuron per hyperplane, orientations reversible only through "
        "cancelling linear parts)",
        "num_regions": fd.num_regions,
        "rank_deficit": fd.bound - fd.rank,
        "zero_rows": zero_rows,
        "zero_columns": zero_cols,
        "parallel_rows": parallel,
    }
    witness = None
    if zero_rows or zero_cols or parallel:
        ident: bool | None = False if fd.rank < fd.bound else None
        ev["why"] = (
            "a neuron without a hyperplane of its own (zero row or column, or "
            "parallel rows): the arrangement argument does not apply"
        )
    else:
        subsets, rank, checked = _cancelling_subsets(W2, W3)
        ev.update(
            {
                "rank_one_terms_rank": rank,
                "subsets_checked": checked,
                "cancelling_subsets": [list(S) for S in subsets],
            }
        )
        ident = not subsets and fd.rank == fd.bound
        if subsets:
            S = list(subsets[0])
            W2f, b2f = W2.copy(), b2.copy()
            W2f[S], b2f[S] = -W2[S], -b2[S]
            witness = [(W2f, b2f), (W3.copy(), b3 + W3[:, S] @ b2[S])]
            ev["witness_check"] = verify_point(g, witness, tol)
            ident = False if ev["witness_check"]["verified"] else None
    return PartIdentifiability(
        part="f3 o f2",
        formula="z -> W3 relu(W2 z + b2) + b3 on R^{n1}",
        num_params=fd.num_params,
        num_scalings=n2,
        rank=fd.rank,
        bound=fd.bound,
        identifiable=ident,
        scope="global",
        certified=ident is not None,
        evidence=ev,
        witness=witness,
    )


def _whole(params: list, tol: float) -> tuple[PartIdentifiability, str | None]:
    rank, nreg = _exact_rank(params)
    n1, n2 = params[0][0].shape[0], params[1][0].shape[0]
    P = sum(W.size + b.size for W, b in params)
    bound = P - n1 - n2
    ident = identifiability(params, tol=tol)
    tried, witness, mechanism, check = [], None, None, None
    for sym in tuple(ident.witnesses) + tuple(f for f in ident.flips if f not in ident.witnesses):
        try:
            q = sym.apply(params, tol=tol)
        except NeuromanifoldError as exc:  # a witness that does not apply at tol
            tried.append({"symmetry": sym.name, "applies": False, "why": str(exc)})
            continue
        res = verify_point(params, q, tol)
        tried.append({"symmetry": sym.name, "applies": True, **res})
        if res["verified"]:
            witness, mechanism, check = q, sym.name, res
            break
    ev = {
        "method": "witness symmetries of the fast path applied, each checked by the exact "
        "region engine and the orbit distance; exact rank over all "
        f"{nreg} linear regions of R^d",
        "num_regions": nreg,
        "rank_deficit": bound - rank,
        "fast_path": {
            "identifiable": bool(ident.identifiable),
            "generic": bool(ident.generic),
            "bottleneck": bool(ident.bottleneck),
            "reasons": list(ident.reasons),
        },
        "tried": tried,
        "witness_check": check,
    }
    verdict = False if witness is not None else None
    if verdict is None and rank == bound and ident.identifiable:
        ev["why"] = (
            "no witness: locally identifiable (exact rank at the bound) and the fast "
            "path finds no symmetry; global identifiability is not proved here"
        )
    return PartIdentifiability(
        part="f3 o f2 o f1",
        formula="x -> W3 relu(W2 relu(W1 x + b1) + b2) + b3 on R^d",
        num_params=P,
        num_scalings=n1 + n2,
        rank=rank,
        bound=bound,
        identifiable=verdict,
        scope="global",
        certified=witness is not None,
        evidence=ev,
        witness=witness,
    ), mechanism


def nonlocalizability(params: Any, *, tol: Any = DEFAULT_TOL) -> Nonlocalizability:
    """The identifiability of ``f2 o f1``, ``f3 o f2`` and ``f3 o f2 o f1`` (module docs).

    Args:
        params: three-layer parameters ``[(W1, b1), (W2, b2), (W3, b3)]``.
        tol: relative tolerance of the sign decisions and of the equivalence check of the
            witness (``0``: exact). Ranks are always exact.

    Returns:
        A :class:`Nonlocalizability` with the three facts and their evidence.

    >>> r = nonlocalizability(nonlocalizable_example().params)
    >>> r.first_two.identifiable, r.last_two.identifiable, r.whole.identifiable
    (True, True, False)
    """
    refuse_conv(params, "nonlocalizability")
    params = three_layer(params, "nonlocalizability")
    tol = check_tol(tol)
    first, last = _first_two(params), _last_two(params, tol)
    whole, mechanism = _whole(params, tol)
    nonloc = bool(first.identifiable and last.identifiable and whole.identifiable is False)
    certified = nonloc and first.certified and last.certified and whole.certified
    widths = (params[0][0].shape[1],) + tuple(W.shape[0] for W, _ in params)
    if nonloc:
        reason = (
            f"f2 o f1 is identifiable (exact rank {first.rank} = {first.num_params} - "
            f"{first.num_scalings}), f3 o f2 is identifiable (exact rank {last.rank} = "
            f"{last.num_params} - {last.num_scalings}, no cancelling orientations), and "
            f"f3 o f2 o f1 is not: the {mechanism} gives an equivalent parameter off the "
            f"orbit (orbit distance {whole.evidence['witness_check']['orbit_distance']:.3g})"
            + (
                f"; exact rank {whole.rank} < {whole.bound}, a continuous fiber direction"
                if whole.rank < whole.bound
                else "; the extra fiber point is isolated "
                "(exact rank at the bound): a discrete symmetry"
            )
        )
    else:
        bad = [x.part for x in (first, last) if not x.identifiable]
        reason = "not nonlocalizable: " + (
            f"{', '.join(bad)} not identifiable"
            if bad
            else "no fiber point of the whole off the orbit was found"
        )
    return Nonlocalizability(
        params=params,
        widths=widths,
        first_two=first,
        last_two=last,
        whole=whole,
        nonlocalizable=nonloc,
        certified=bool(certified),
        mechanism=mechanism,
        tol=tol,
        reason=reason,
    )


_KINDS = ("always-active", "ramp")


def nonlocalizable_example(*, kind: str = "always-active", tol: Any = 0) -> Nonlocalizability:
    """A three-layer network whose halves ``f2 o f1`` and ``f3 o f2`` are identifiable and
    whose composition is not, with the three facts proved (module docs).

    Args:
        kind: the mechanism.

            * ``"always-active"`` (widths 2-2-2-1): one second-layer neuron is active on the
              whole orthant that ``f1`` reaches, so in the whole network its bias can move
              into ``b3`` (a continuous fiber direction). In ``f2 o f1`` its output is
              observed, and in ``f3 o f2`` on all of ``R^{n1}`` its hyperplane is visible,
              so neither half has that freedom.
            * ``"ramp"`` (widths 2-1-1-1): the ramp flip (docs/concepts_relu.md §4) turns the
              single first-layer neuron around; an isolated extra fiber point. The flip
              changes the second layer's output (not a symmetry of ``f2 o f1``) and needs
              the orthant (not a symmetry of ``f3 o f2`` on ``R``).
        tol: tolerance of the checks (default ``0``: exact; the parameters are dyadic, so
            the witness is exact in floating point).

    Returns:
        A :class:`Nonlocalizability` (``nonlocalizable`` and ``certified`` are True).

    >>> r = nonlocalizable_example()
    >>> r.nonlocalizable, r.certified, r.mechanism, r.whole.rank < r.whole.bound
    (True, True, 'linear_block_mixing', True)
    >>> r = nonlocalizable_example(kind="ramp")
    >>> r.nonlocalizable, r.mechanism, r.whole.rank == r.whole.bound
    (True, 'ramp_flip', True)
    """
    check_choice(kind, "kind", _KINDS)
    if kind == "always-active":
        params = [
            (np.array([[1.0, 0.5], [-0.5, 1.0]]), np.array([0.25, -0.5])),
            (np.array([[1.0, 0.5], [1.0, -1.0]]), np.array([0.25, 0.5])),
            (np.array([[1.0, -0.75]]), np.array([0.5])),
        ]
    else:
        params = [
            (np.array([[2.0, -1.0]]), np.array([0.5])),
            (np.array([[-1.5]]), np.array([3.0])),
            (np.array([[2.0]]), np.array([0.75])),
        ]
    return nonlocalizability(params, tol=tol)


def _widths_list(widths: Any) -> list[tuple[int, ...]]:
    given = widths
    try:
        widths = None if isinstance(widths, (str, bytes)) else list(widths)
    except TypeError:
        widths = None
    if not widths:
        raise InputError(
            f"widths must be (d, n1, n2, n3) or a list of them; got {short_repr(given)}"
        )
    items = (
        [widths]
        if all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in widths)
        else list(widths)
    )
    out = []
    for w in items:
        if isinstance(w, (str, bytes)) or not hasattr(w, "__len__") or len(w) != 4:
            raise ArchitectureError(
                f"every architecture must be four widths (d, n1, n2, n3); got {short_repr(w)}"
            )
        w = tuple(
            check_positive_int(v, "every width", ArchitectureError, maximum=10_000) for v in w
        )
        if w[1] > w[0]:
            raise ArchitectureError(
                f"the search draws bottleneck networks, which need n1 <= d; got widths {w}"
            )
        out.append(w)
    return out


@renamed_keywords(trials="num_samples")
def search_nonlocalizable(
    widths: Any,
    *,
    num_samples: int = 50,
    seed: Any = 0,
    tol: Any = DEFAULT_TOL,
    progress: bool = False,
) -> NonlocalizableSearch:
    """How often ``f2 o f1`` and ``f3 o f2`` are identifiable and ``f3 o f2 o f1`` is not,
    among random bottleneck parameters (every entry standard normal).

    Args:
        widths: one architecture ``(d, n1, n2, n3)`` with ``n1 <= d``, or a list of them.
        num_samples: random parameters per architecture (``trials`` before; the old
            keyword warns).
        seed: int, None or a numpy Generator.
        tol: as for :func:`nonlocalizability`.
        progress: a progress bar on stderr.

    Returns:
        A :class:`NonlocalizableSearch` with the counts and rates per architecture.

    >>> s = search_nonlocalizable((2, 2, 2, 1), num_samples=4, seed=1)
    >>> a = s.architectures[0]
    >>> a["num_samples"], 0 <= a["nonlocalizable"] <= a["whole_not_identifiable"] <= 4
    (4, True)
    """
    archs = _widths_list(widths)
    trials = check_positive_int(num_samples, "num_samples", maximum=MAX_TRIALS)
    tol = check_tol(tol)
    progress = check_bool(progress, "progress")
    rng = as_seed_rng(seed)
    bar = None
    if progress:
        bar = progress_bar(total=trials * len(archs), desc="non-localizability", unit="parameter")
    out = []
    try:
        for w in archs:
            d, n1, n2, n3 = w
            counts = {
                "first_two_identifiable": 0,
                "last_two_identifiable": 0,
                "whole_not_identifiable": 0,
                "nonlocalizable": 0,
                "certified": 0,
            }
            mech: dict[str, int] = {}
            example = None
            for _ in range(trials):
                while True:
                    W1 = rng.standard_normal((n1, d))
                    if np.linalg.matrix_rank(W1) == n1:
                        break
                params = [
                    (W1, rng.standard_normal(n1)),
                    (rng.standard_normal((n2, n1)), rng.standard_normal(n2)),
                    (rng.standard_normal((n3, n2)), rng.standard_normal(n3)),
                ]
                r = nonlocalizability(params, tol=tol)
                counts["first_two_identifiable"] += bool(r.first_two.identifiable)
                counts["last_two_identifiable"] += bool(r.last_two.identifiable)
                counts["whole_not_identifiable"] += r.whole.identifiable is False
                counts["nonlocalizable"] += r.nonlocalizable
                counts["certified"] += r.certified
                if r.nonlocalizable:
                    mech[r.mechanism] = mech.get(r.mechanism, 0) + 1
                    if example is None:
                        example = [[W.tolist(), b.tolist()] for W, b in params]
                if bar is not None:
                    bar.update(1)
            out.append(
                {
                    "widths": list(w),
                    "num_samples": trials,
                    **counts,
                    "rate": counts["nonlocalizable"] / trials,
                    "mechanisms": mech,
                    "example": example,
                }
            )
    finally:
        if bar is not None:
            bar.close()
    return NonlocalizableSearch(
        architectures=tuple(out),
        total_samples=trials * len(archs),
        total_nonlocalizable=sum(a["nonlocalizable"] for a in out),
        seed=seed if not isinstance(seed, np.random.Generator) else "generator",
        tol=tol,
        draw="Gaussian entries (standard normal), W1 of full row rank",
    )
