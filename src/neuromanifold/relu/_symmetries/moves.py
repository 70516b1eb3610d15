"""The moves through a ReLU parameter of any depth that keep its function on a domain, in
families (the fiber's generators, :func:`~neuromanifold.relu.fiber`), their tangent vectors
and the dimension they generate, proven by an exact rank modulo a prime.

A move is decided on the exact floats and on what :func:`~neuromanifold.relu.neurons`
proved each neuron does on the domain (R^d, or a box), or on certified signs at a finite
set of points (a user's data): a neuron dead there has free
outgoing weights, and, when its pre-activation is certified ``< 0`` on the whole domain
(a strict margin), a free incoming row too near the parameter (the margin persists under
small moves); a neuron active there shifts its bias into the next layer's. Both the fiber
(the dimension is a proven lower bound of its local dimension) and local identifiability
(a dimension above the scaling orbit's proves the fiber near the parameter larger than the
orbit) read it.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..._errors import NeuromanifoldError
from ..._results import Result
from .._bounds.linear import neuron_bounds
from .._core.domain import Domain
from .._core.numbers import forward_error_bounds
from .._core.rows import sign_kinds
from .._fundim.layered_rank import PRIME, rank_seconds, residue_matmul, residue_rank, residues
from .._neurons.neurons import neurons
from .any_depth import layer_signs, parallel_classes, silent_neurons

__all__ = [
    "KINDS",
    "MoveFamily",
    "Layout",
    "domain_statuses",
    "data_statuses",
    "constant_inputs",
    "move_families",
    "families_on",
    "move_tangents",
    "rank_mod_p",
    "generated_dimension",
    "sample_moves",
]

Params = list[tuple[np.ndarray, np.ndarray]]

#: The order in which the moves compose (each stays valid after the ones before it).
KINDS = (
    "silent",
    "dead",
    "dead_with_margin",
    "dead_on_image",
    "parallel",
    "active_bias",
    "active_block",
    "scaling",
    "constant_input",
)


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class MoveFamily(Result):
    """The moves of one kind through the parameter (module docs), each keeping the function
    on the domain the neurons' statuses were proved on.

    Attributes:
        kind: ``"scaling"``, ``"dead"`` (by its signs, on R^d), ``"dead_with_margin"``
            (pre-activation certified ``< 0`` on the whole domain), ``"dead_on_image"``
            (dead on the domain, proved on the image of the layers before),
            ``"silent"``, ``"parallel"``, ``"active_bias"``, ``"active_block"`` or
            ``"constant_input"`` (an input coordinate constant at the data points: the
            first layer's weights on it trade with its biases; valid at any parameter, so
            it composes last).
        layer: the hidden layer (1-based, like ``W_l``).
        neurons: the neurons moved (a pair ``(j, k)`` for ``"parallel"``: row ``k`` is
            ``ratio`` times row ``j``).
        num_directions: the tangent vectors the family contributes (before the rank).
        ratio: ``lam`` of a parallel pair, else ``None``.
        input_index, value: for ``"constant_input"``, the input coordinate and its value
            at every data point, else ``None``.
    """

    kind: str
    layer: int
    neurons: tuple
    num_directions: int
    ratio: float | None = None
    input_index: int | None = None
    value: float | None = None

    def describe(self) -> str:
        """The family in words."""
        who = ", ".join(map(str, self.neurons))
        if self.kind == "constant_input":
            text = (
                f"input {self.input_index} is {self.value:.6g} at every data point: the "
                f"weights on it trade with the biases"
            )
        elif self.kind == "parallel":
            text = (
                f"neurons {who} parallel (ratio {self.ratio:.6g}): outgoing weight moves "
                f"between them"
            )
        else:
            text = {
                "scaling": f"positive scaling of its {len(self.neurons)} neurons",
                "dead": f"neuron {who} dead on every input: outgoing weights free, row in the "
                f"dead cone",
                "dead_with_margin": f"neuron {who} negative throughout (a certified margin): "
                f"outgoing weights free, row free near the parameter",
                "dead_on_image": f"neuron {who} dead on every input of the domain (proved on "
                f"the image of the layers before): outgoing weights free",
                "silent": f"neuron {who} without outgoing weights: row free",
                "active_bias": f"neuron {who} active on every input of the domain: bias "
                f"shifts into the next layer",
                "active_block": f"always-active block {{{who}}}: rows mix by I + E, E >= 0",
            }.get(self.kind)
        plural = "" if self.num_directions == 1 else "s"
        return f"layer {self.layer}: {text} ({self.num_directions} direction{plural})"


def domain_statuses(
    params: Params, dom: Domain, max_regions, time_limit
) -> tuple[tuple | None, tuple | None]:
    """``(status, margin)``: what :func:`~neuromanifold.relu.neurons` proves each hidden
    neuron does on ``dom`` (exact regions when few are expected, else bounds, which
    decide little on R^d; ``None`` when it cannot run), and on a box, per hidden layer,
    which neurons have a pre-activation certified ``< 0`` on the whole box (rigorous
    linear and interval bounds; ``None`` on other domains)."""
    if len(params) == 1:
        return None, None
    try:
        status = neurons(params, dom, max_regions=max_regions, time_limit=time_limit).status
    except NeuromanifoldError:
        status = None
    margin = None
    if dom.kind == "box":
        with np.errstate(all="ignore"):
            margin = tuple(hi < 0 for _, hi in neuron_bounds(params, dom.lower, dom.upper))
    return status, margin


def data_statuses(params: Params, X: np.ndarray) -> tuple[tuple, tuple]:
    """``(status, margin)`` of the hidden neurons at the rows of ``X`` (certified signs:
    the float pass and its rounding-error bound): ``"dead"`` where the pre-activation is
    ``<= 0`` at every point (with ``margin``: ``< 0`` at every one, so its row is free
    near the parameter: finitely many strict inequalities persist), ``"linear"`` where it
    is ``>= 0`` at every point, else ``""``. (:func:`constant_inputs` gives the input
    coordinates the data do not vary.)"""
    status, margin = [], []
    for Z, err in forward_error_bounds(params, X):
        dead = np.all(Z + err <= 0, axis=0)
        linear = np.all(Z - err >= 0, axis=0) & ~dead
        status.append(tuple("dead" if a else "linear" if b else "" for a, b in zip(dead, linear)))
        margin.append(np.all(Z + err < 0, axis=0))
    return tuple(status), tuple(margin)


def constant_inputs(X: np.ndarray) -> tuple:
    """``((i, value), ...)``: the input coordinates equal at every row of ``X`` (a blank
    border pixel), with their value."""
    same = np.flatnonzero(np.all(X == X[:1], axis=0))
    return tuple((int(i), float(X[0, i])) for i in same)


def move_families(
    params: Params, status: tuple | None, margin: tuple | None = None, constant: tuple = ()
) -> list[MoveFamily]:
    """Every move family of ``params``, in the order of :data:`KINDS`: decided on the
    exact floats, and on ``status`` (per hidden layer, what
    :func:`~neuromanifold.relu.neurons` proved each neuron does on the domain) for neurons
    dead or linear on the image of the layers before only; ``margin`` (per hidden layer, a
    boolean per neuron: pre-activation certified ``< 0`` on the whole domain) frees the
    rows of those dead neurons; ``constant`` (:func:`constant_inputs` of data points) adds
    a ``"constant_input"`` family per coordinate."""
    fams: dict[str, list] = {k: [] for k in KINDS}
    for h in range(1, len(params)):
        W, b = params[h - 1]
        n, fan_in = W.shape
        fan_out = params[h][0].shape[0]
        dead, active = sign_kinds(layer_signs(params, h, 0.0), h == 1)
        proved = status[h - 1] if status is not None else ("",) * n
        on_image = [j for j in range(n) if proved[j] == "dead" and j not in dead]
        strict = margin[h - 1] if margin is not None else np.zeros(n, dtype=bool)
        silent = set(silent_neurons(params, h, 0.0))
        sizes = {
            "dead": (1 if h == 1 else fan_in + 1) + fan_out,
            "dead_with_margin": fan_in + 1 + fan_out,
            "dead_on_image": fan_out,
            "silent": fan_in + 1,
        }
        for j in range(n):
            # a free row needs a zero column, a free column a dead neuron: a neuron that
            # is both gets one family, the larger
            kinds = ["dead"] if j in dead else ["dead_on_image"] if j in on_image else []
            kinds += ["dead_with_margin"] if strict[j] else []
            kinds += ["silent"] if j in silent else []
            if kinds:
                kind = max(kinds, key=sizes.get)
                fams[kind].append(
                    MoveFamily(kind=kind, layer=h, neurons=(j,), num_directions=sizes[kind])
                )
        moved = set(dead) | set(on_image) | silent | set(np.flatnonzero(strict).tolist())
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
    n1 = params[0][0].shape[0]
    for i, v in constant if len(params) > 1 else ():
        fams["constant_input"].append(
            MoveFamily(
                kind="constant_input",
                layer=1,
                neurons=tuple(range(n1)),
                num_directions=n1,
                input_index=i,
                value=v,
            )
        )
    return [f for k in KINDS for f in fams[k]]


def _ratio(W: np.ndarray, b: np.ndarray, j: int, k: int) -> float:
    """``lam`` with row ``k`` = ``lam`` row ``j`` (exact multiples: any nonzero entry)."""
    rj, rk = np.append(W[j], b[j]), np.append(W[k], b[k])
    i = int(np.argmax(np.abs(rj)))
    return float(rk[i] / rj[i])


class Layout:
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


def families_on(
    params: Params, dom: Domain | None, X: np.ndarray | None, max_regions, time_limit
) -> list[MoveFamily]:
    """The move families that keep the function on ``dom`` (statuses from
    :func:`domain_statuses`, half of ``time_limit``) or, given ``X``, its values at the
    rows of ``X`` (:func:`data_statuses` and :func:`constant_inputs`)."""
    if X is not None:
        status, margin = data_statuses(params, X)
        return move_families(params, status, margin, constant_inputs(X))
    half = None if time_limit is None else time_limit / 2
    return move_families(params, *domain_statuses(params, dom, max_regions, half))


def move_tangents(params: Params, families: list[MoveFamily]):
    """``(coordinates, rows)``: the coordinate vectors (dead and silent neurons; a set of
    indices) and every other tangent vector as ``(indices, residues)``."""
    lay = Layout(params)
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
        elif f.kind == "dead_with_margin":
            j = f.neurons[0]
            unit.update(lay.row(h, j).tolist() + lay.column(h, j).tolist())
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
        elif f.kind == "constant_input":  # W_1[j, i] += s, b_1[j] -= s value
            for j in f.neurons:
                idx = np.array([lay.row(1, j)[f.input_index], lay.row(1, j)[-1]])
                rows.append((idx, np.append(1, res(-f.value))))
        else:  # scaling
            for j in f.neurons:
                idx = np.concatenate([lay.row(h, j), lay.column(h, j)])
                val = np.concatenate([res(np.append(W[j], b[j])), res(-C[:, j])])
                rows.append((idx, val))
    return unit, rows, lay.P


def rank_mod_p(
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


def generated_dimension(
    params: Params, families: list[MoveFamily], deadline: float | None = None
) -> tuple[int, int, int, bool]:
    """``(dimension, num_coordinate, num_other, complete)``: the dimension the families
    generate at the parameter, a proven lower bound (the coordinate moves count one each,
    the other tangents by their rank modulo :data:`PRIME`); ``complete`` is False when
    that rank would end past ``deadline`` and the coordinate moves alone were counted
    (independent by construction: still a lower bound)."""
    unit, rows, P = move_tangents(params, families)
    generated = rank_mod_p(rows, unit, P, np.random.default_rng(0), deadline)
    return len(unit) + (generated or 0), len(unit), len(rows), generated is not None or not rows


# -- sampling ------------------------------------------------------------------------------


def sample_moves(params: Params, families, rng: np.random.Generator, dyadic: bool) -> Params:
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
        elif f.kind == "dead_with_margin":  # a lower bias keeps it dead at any distance
            j = f.neurons[0]
            b[j] -= abs(num(0, 2))
            C[:, j] = num(-2, 2, C.shape[0])
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
        elif f.kind == "constant_input":
            s = num(-1, 1, W.shape[0])
            W[:, f.input_index] += s
            b -= s * f.value
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
