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

from ..._errors import InputError, NeuromanifoldError
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import as_seed_rng, check_bool, check_positive_int, renamed_keywords
from ...exact import to_fmpq
from .._core.live import refuse_conv
from .._core.net import check_params, exact_params, float_params
from .._core.rows import sign_kinds
from .._engine.budget import check_budget
from .._fundim.fundim import proven_jacobian_rank
from .._fundim.layered_rank import PRIME, rank_seconds, residue_matmul, residue_rank, residues
from .._neurons.neurons import neurons
from .._symmetries.any_depth import layer_signs, parallel_classes, silent_neurons
from .._symmetries.shape import is_bottleneck
from .result import ReLUFiber
from .three_layer import fiber as bottleneck_fiber

__all__ = ["MoveFamily", "DeepFiber", "fiber"]

Params = list[tuple[np.ndarray, np.ndarray]]

#: The order in which the moves compose (each stays valid after the ones before it).
KINDS = ("silent", "dead", "dead_on_image", "parallel", "active_bias", "active_block", "scaling")


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class MoveFamily(Result):
    """The moves of one kind through the parameter (:class:`DeepFiber`'s module docs).

    Attributes:
        kind: ``"scaling"``, ``"dead"``, ``"dead_on_image"``, ``"silent"``,
            ``"parallel"``, ``"active_bias"`` or ``"active_block"``.
        layer: the hidden layer (1-based, like ``W_l``).
        neurons: the neurons moved (a pair ``(j, k)`` for ``"parallel"``: row ``k`` is
            ``ratio`` times row ``j``).
        num_directions: the tangent vectors the family contributes (before the rank).
        ratio: ``lam`` of a parallel pair, else ``None``.
    """

    kind: str
    layer: int
    neurons: tuple
    num_directions: int
    ratio: float | None = None

    def describe(self) -> str:
        """The family in words."""
        who = ", ".join(map(str, self.neurons))
        if self.kind == "parallel":
            text = (
                f"neurons {who} parallel (ratio {self.ratio:.6g}): outgoing weight moves "
                f"between them"
            )
        else:
            text = {
                "scaling": f"positive scaling of its {len(self.neurons)} neurons",
                "dead": f"neuron {who} dead on every input: outgoing weights free, row in the "
                f"dead cone",
                "dead_on_image": f"neuron {who} dead on every input (proved on the image of "
                f"the layers before): outgoing weights free",
                "silent": f"neuron {who} without outgoing weights: row free",
                "active_bias": f"neuron {who} active on every input: bias shifts into the "
                f"next layer",
                "active_block": f"always-active block {{{who}}}: rows mix by I + E, E >= 0",
            }[self.kind]
        return f"layer {self.layer}: {text} ({self.num_directions} directions)"


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
        tol: 0.0: every move is decided on the exact floats.
        method: ``"moves per layer, bounded by the Jacobian's rank"``.
    """

    jacobian_rank: int | None
    kernel_dimension: int | None
    local_dimension: int | None
    undecided_reason: str | None = None
    tol: float = 0.0
    method: str = DEEP_METHOD

    def describe(self, max_families: int | None = None) -> str:
        """The bounds, the verdict on the local dimension and every family (the first
        ``max_families``, when given), one per line."""
        widths = "-".join(map(str, self.widths))
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
        return [_sample_one(self.params, self.families, rng, dyadic) for _ in range(n)]


# -- the families and their tangent vectors ------------------------------------------------


def _families(params: Params, status: tuple | None) -> list[MoveFamily]:
    """Every move family of ``params``, in the order of :data:`KINDS`: decided on the
    exact floats, and on ``status`` (per hidden layer, what
    :func:`~neuromanifold.relu.neurons` proved each neuron does on R^d) for neurons dead
    or linear on the image of the layers before only."""
    fams: dict[str, list] = {k: [] for k in KINDS}
    for h in range(1, len(params)):
        W, b = params[h - 1]
        n, fan_in = W.shape
        fan_out = params[h][0].shape[0]
        dead, active = sign_kinds(layer_signs(params, h, 0.0), h == 1)
        proved = status[h - 1] if status is not None else ("",) * n
        on_image = [j for j in range(n) if proved[j] == "dead" and j not in dead]
        silent = set(silent_neurons(params, h, 0.0))
        sizes = {
            "dead": (1 if h == 1 else fan_in + 1) + fan_out,
            "dead_on_image": fan_out,
            "silent": fan_in + 1,
        }
        for j in range(n):
            # a free row needs a zero column, a free column a dead neuron: a neuron that
            # is both gets one family, the larger
            kinds = ["dead"] if j in dead else ["dead_on_image"] if j in on_image else []
            kinds += ["silent"] if j in silent else []
            if kinds:
                kind = max(kinds, key=sizes.get)
                fams[kind].append(
                    MoveFamily(kind=kind, layer=h, neurons=(j,), num_directions=sizes[kind])
                )
        moved = set(dead) | set(on_image) | silent
        for j0, k in parallel_classes(params, h, 0.0, skip=moved):
            fams["parallel"].append(
                MoveFamily(
                    kind="parallel",
                    layer=h,
                    neurons=(j0, k),
                    num_directions=fan_out,
                    ratio=_ratio(W, b, j0, k),
                )
            )
        block = [j for j in range(n) if (j in active or proved[j] == "linear") and j not in moved]
        for j in block:
            fams["active_bias"].append(
                MoveFamily(kind="active_bias", layer=h, neurons=(j,), num_directions=1)
            )
        if len(block) >= 2:
            fams["active_block"].append(
                MoveFamily(
                    kind="active_block",
                    layer=h,
                    neurons=tuple(block),
                    num_directions=len(block) * (len(block) - 1),
                )
            )
        fams["scaling"].append(
            MoveFamily(kind="scaling", layer=h, neurons=tuple(range(n)), num_directions=n)
        )
    return [f for k in KINDS for f in fams[k]]


def _ratio(W: np.ndarray, b: np.ndarray, j: int, k: int) -> float:
    """``lam`` with row ``k`` = ``lam`` row ``j`` (exact multiples: any nonzero entry)."""
    rj, rk = np.append(W[j], b[j]), np.append(W[k], b[k])
    i = int(np.argmax(np.abs(rj)))
    return float(rk[i] / rj[i])


class _Layout:
    """Coordinates of the parameter vector: per layer ``W_l`` row-major, then ``b_l``."""

    def __init__(self, params: Params):
        self.params = params
        self.offsets, at = [], 0
        for W, b in params:
            self.offsets.append(at)
            at += W.size + b.size
        self.P = at

    def row(self, h: int, j: int) -> np.ndarray:
        """Coordinates of hidden neuron ``j``'s row ``(W_h[j], b_h[j])`` (``h`` 1-based)."""
        W, _ = self.params[h - 1]
        n, m = W.shape
        o = self.offsets[h - 1]
        return np.append(o + j * m + np.arange(m), o + n * m + j)

    def column(self, h: int, j: int) -> np.ndarray:
        """Coordinates of hidden neuron ``j``'s outgoing column ``W_{h+1}[:, j]``."""
        W, _ = self.params[h]
        n, m = W.shape
        return self.offsets[h] + np.arange(n) * m + j

    def bias(self, l: int) -> np.ndarray:
        """Coordinates of ``b_l`` (``l`` 1-based layer)."""
        W, _ = self.params[l - 1]
        return self.offsets[l - 1] + W.size + np.arange(W.shape[0])


def _tangents(params: Params, families: list[MoveFamily]):
    """``(coordinates, rows)``: the coordinate vectors (dead and silent neurons; a set of
    indices) and every other tangent vector as ``(indices, residues)``."""
    lay = _Layout(params)
    unit: set = set()
    rows: list = []

    def res(x):
        return residues(np.atleast_1d(np.asarray(x, dtype=float)))

    for f in families:
        h = f.layer
        W, b = params[h - 1]
        C = params[h][0]
        if f.kind == "silent":
            unit.update(lay.row(h, f.neurons[0]).tolist())
        elif f.kind == "dead":
            j = f.neurons[0]
            row = lay.row(h, j)
            unit.update((row[-1:] if h == 1 else row).tolist())
            unit.update(lay.column(h, j).tolist())
        elif f.kind == "dead_on_image":
            unit.update(lay.column(h, f.neurons[0]).tolist())
        elif f.kind == "parallel":
            j, k = f.neurons
            rj, rk = np.append(W[j], b[j]), np.append(W[k], b[k])
            i = int(np.argmax(np.abs(rj)))
            num, den = int(res(rk[i])[0]), int(res(rj[i])[0])
            if den == 0:
                continue  # the ratio has no residue: leaving the vector out only lowers the rank
            lam = num * pow(den, -1, PRIME) % PRIME
            cj, ck = lay.column(h, j), lay.column(h, k)
            for o in range(len(cj)):
                rows.append((np.array([cj[o], ck[o]]), np.array([lam, PRIME - 1])))
        elif f.kind == "active_bias":
            j = f.neurons[0]
            idx = np.append(lay.row(h, j)[-1], lay.bias(h + 1))
            rows.append((idx, np.append(1, res(-C[:, j]))))
        elif f.kind == "active_block":
            for a in f.neurons:
                for c in f.neurons:
                    if a != c:  # E = e_a e_c^T: row a += row c, column c -= column a
                        idx = np.concatenate([lay.row(h, a), lay.column(h, c)])
                        val = np.concatenate([res(np.append(W[c], b[c])), res(-C[:, a])])
                        rows.append((idx, val))
        else:  # scaling
            for j in f.neurons:
                idx = np.concatenate([lay.row(h, j), lay.column(h, j)])
                val = np.concatenate([res(np.append(W[j], b[j])), res(-C[:, j])])
                rows.append((idx, val))
    return unit, rows, lay.P


def _rank_mod_p(
    rows: list, skip: set, P: int, rng: np.random.Generator, deadline: float | None = None
) -> int | None:
    """Rank modulo :data:`PRIME` of the sparse ``rows`` with the coordinates ``skip``
    left out, after compression by a random matrix (exact products,
    :func:`residue_matmul`); a lower bound of the rank over the rationals. ``None`` when
    the products and the rank would end past ``deadline`` (a ``time.monotonic()`` value):
    the rank is one flint call that cannot be interrupted (29 s for 5,000 rows)."""
    import scipy.sparse as sp  # start-up: a slow import

    if not rows:
        return 0
    keep = np.ones(P, dtype=bool)
    keep[list(skip)] = False
    idx = np.concatenate([i for i, _ in rows])
    val = np.concatenate([v for _, v in rows]).astype(np.int64) % PRIME
    ptr = np.cumsum([0] + [len(i) for i, _ in rows])
    M = sp.csr_matrix((val.astype(float), idx, ptr), shape=(len(rows), P))
    M.sum_duplicates()
    cols = np.flatnonzero(keep & (np.diff(M.tocsc().indptr) > 0))
    M = M[:, cols]
    k = M.shape[0]

    expected = rank_seconds((k, k), exact=True)

    def late() -> bool:  # a rank of a quarter second or less is always taken
        return deadline is not None and expected > 0.25 and time.monotonic() + expected > deadline

    if late():
        return None
    if M.shape[1] <= max(2 * k, 2000) and k * M.shape[1] <= 4_000_000:
        A = np.mod(M.toarray(), PRIME).astype(np.int64)
    else:
        A = np.zeros((k, k), dtype=np.int64)
        for s in range(0, M.shape[1], 1 << 13):  # sparse slices of 2**13 columns
            if late():
                return None
            part = M[:, s : s + (1 << 13)]
            R = rng.integers(0, PRIME, (part.shape[1], k))
            A = (A + residue_matmul(part, R)) % PRIME
    return residue_rank(A)


# -- sampling ------------------------------------------------------------------------------


def _sample_one(params: Params, families, rng: np.random.Generator, dyadic: bool) -> Params:
    """One point of the generated part (:meth:`DeepFiber.sample`)."""
    p = [(W.copy(), b.copy()) for W, b in params]

    def num(lo, hi, size=None):
        x = rng.uniform(lo, hi, size)
        return np.round(x * 8) / 8 if dyadic else x

    for f in families:
        h = f.layer
        W, b = p[h - 1]
        C = p[h][0]
        if f.kind == "silent":
            j = f.neurons[0]
            W[j], b[j] = num(-2, 2, W.shape[1]), num(-2, 2)
        elif f.kind == "dead":
            j = f.neurons[0]
            if h > 1:
                W[j] = -np.abs(num(0, 2, W.shape[1]))
            b[j] = -abs(num(0, 2))
            C[:, j] = num(-2, 2, C.shape[0])
        elif f.kind == "dead_on_image":
            C[:, f.neurons[0]] = num(-2, 2, C.shape[0])
        elif f.kind == "parallel":
            j, k = f.neurons
            s = num(-1, 1, C.shape[0])
            C[:, j] += f.ratio * s
            C[:, k] -= s
        elif f.kind == "active_bias":
            j = f.neurons[0]
            t = num(0, 1)  # t >= 0: relu(z + t) = z + t wherever z >= 0
            b[j] += t
            p[h] = (C, p[h][1] - t * C[:, j])
        elif f.kind == "active_block" and not dyadic:
            A = list(f.neurons)
            G = np.eye(len(A)) + rng.uniform(0, 0.5, (len(A), len(A)))
            R = G @ np.hstack([W[A], b[A, None]])
            W[A], b[A] = R[:, :-1], R[:, -1]
            C[:, A] = np.linalg.solve(G.T, C[:, A].T).T
        elif f.kind == "scaling":
            u = (
                2.0 ** rng.integers(-2, 3, len(f.neurons))
                if dyadic
                else np.exp(rng.uniform(-1, 1, len(f.neurons)))
            )
            W *= u[:, None]
            b *= u
            C /= u[None, :]
    for h in range(1, len(p)):
        perm = rng.permutation(p[h - 1][0].shape[0])
        W, b = p[h - 1]
        p[h - 1] = (W[perm], b[perm])
        p[h] = (p[h][0][:, perm], p[h][1])
    return p


# -- the entry point -----------------------------------------------------------------------


def fiber(
    params: Any,
    *,
    tol: float = DEFAULT_TOL,
    max_regions: int | None = None,
    time_limit: float | None = None,
) -> ReLUFiber:
    """The fiber of a ReLU parameter, ``{theta' : f_theta' = f_theta}``.

    A three-layer bottleneck parameter (``n1 <= d``, ``W1`` of full row rank) gets its
    explicit semi-algebraic families (:class:`~neuromanifold.relu.BottleneckFiber`); every
    other parameter, of any depth, a :class:`DeepFiber`: the families of moves through it,
    the dimension they generate (a proven lower bound of the fiber's local dimension), the
    proven upper bound ``P - rank`` of the Jacobian, and the local dimension where the two
    meet (module docs).

    Args:
        params: the network's ``[(W_1, b_1), ..., (W_L, b_L)]``.
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
        parameters) or a :class:`DeepFiber` (every other parameter), its route named in
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
    if len(params) == 3 and is_bottleneck(params, tol=tol):
        return bottleneck_fiber(params, tol=tol)
    _check_float_values(raw, params)
    start = time.monotonic()
    status = _statuses(params, max_regions, None if time_limit is None else time_limit / 2)
    families = _families(params, status)
    unit, rows, P = _tangents(params, families)
    deadline = None if time_limit is None else start + time_limit
    generated = _rank_mod_p(rows, unit, P, np.random.default_rng(0), deadline)
    # past the budget the coordinate moves alone count: independent by construction,
    # still a proven lower bound
    dimension = len(unit) + (generated or 0)
    left = None if time_limit is None else max(time_limit - (time.monotonic() - start), 1e-3)
    rank, reason = proven_jacobian_rank(params, P - dimension, max_regions, left)
    if generated is None and rows:
        reason = (
            f"the rank of the {len(rows)} other move tangents was not computed within "
            f"the time limit, so the dimension counts the {len(unit)} coordinate moves "
            f"alone (a lower bound); " + (reason or "a larger time_limit decides more")
        )
    kernel = None if rank is None else P - rank
    local = dimension if kernel == dimension else None
    if local is None and reason is None:
        reason = (
            f"the listed moves generate {dimension} dimensions and the Jacobian's rank "
            f"is proven to be at least {rank} (so at most {kernel}); a move not listed "
            f"(a symmetry of three consecutive layers, a neuron dead on the image of "
            f"the layers before that no bound proves dead on R^d) or a larger proven "
            f"rank would close the gap, which can also be real (a kernel direction no "
            f"curve in the fiber follows)"
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
    )


def _more(families: tuple, shown: int | None) -> list[str]:
    """The line that says how many families :meth:`describe` left out, if any."""
    rest = len(families) - (len(families) if shown is None else shown)
    return (
        [f"  ... {rest} more famil{'y' if rest == 1 else 'ies'} (--show N, or --json PATH for all)"]
        if rest > 0
        else []
    )


def _check_float_values(raw: Any, params: Params) -> None:
    """Refuse entries (``Fraction``, large integers) that float64 does not hold exactly:
    the moves are decided on the float64 network, which would then be another network
    (two rows parallel in exact arithmetic need not be after rounding, nor the reverse)."""
    if float_params(raw) is not None:
        return
    for l, ((We, be), (W, b)) in enumerate(zip(exact_params(raw), params), start=1):
        for (i, k), v in [
            ((i, k), We[i, k]) for i in range(W.shape[0]) for k in range(W.shape[1])
        ] + [((i, None), be[i]) for i in range(len(b))]:
            f = W[i, k] if k is not None else b[i]
            if to_fmpq(float(f)) != v:
                where = f"W_{l}[{i}, {k}]" if k is not None else f"b_{l}[{i}]"
                raise InputError(
                    f"fiber decides its moves on float64 entries, and {where} = {v} is not "
                    f"a float64 number (it would be read as {float(f)!r}, another network "
                    f"whose parallel rows and signs can differ); pass the float64 network "
                    f"to analyse that one"
                )


def _statuses(params: Params, max_regions, time_limit) -> tuple | None:
    """What :func:`~neuromanifold.relu.neurons` proves each hidden neuron does on R^d
    (exact regions when few are expected, else bounds, which decide little on R^d), or
    ``None`` when it cannot run."""
    if len(params) == 1:
        return None
    try:
        return neurons(params, max_regions=max_regions, time_limit=time_limit).status
    except NeuromanifoldError:
        return None
