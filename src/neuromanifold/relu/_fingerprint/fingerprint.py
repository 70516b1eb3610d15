"""A functional fingerprint: a short string equal for networks related by the symmetries,
and grouping of many networks by the function they compute.

``fingerprint(p, tol=tol)`` normalizes the network to a representative of its orbit under
permutations and positive rescalings of the hidden neurons, layer by layer: every hidden
neuron's incoming row ``(W_j, b_j)`` is scaled to max-abs 1 (the factor pushed into the
next layer), and the neurons are sorted by their quantized rows (the columns of a row are
already in the previous layer's order). For a generic three-layer bottleneck network the
canonical form of the whole theory is taken first (``complete=True``: every symmetry,
hidden translations and flips too); otherwise only permutations and rescalings are
quotiented out (``complete=False``).

**The rule for float noise.** Every normalized value ``v`` (and, for the output layer,
its scale) goes to the bucket ``round(v / tol)``, and the digest hashes the buckets. Two
values in one bucket differ by less than ``tol``, so networks whose normalized weights
differ by more than ``tol`` somewhere get different fingerprints. Two symmetric copies
differ only by float rounding (about ``1e-16`` relative), far below ``tol``, and land in the
same buckets unless a value lies within that rounding of a bucket edge: ``near_edge``
says when some value is within ``EDGE * tol`` of one, and two neurons whose quantized
rows coincide leave their order open (``tied``). :func:`group_by_function` compares such
networks with :func:`~neuromanifold.relu.equivalent`, so that two equivalent networks near
an edge are never split silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from typing import Any

import numpy as np

from ..._errors import ComputationLimitError, InputError, NeuromanifoldError, short_repr
from ..._results import Result
from ..._tolerance import DEFAULT_TOL, check_tol
from ..._validation import check_bool
from .._bounds.parameters import path_norm_scale
from .._canonical.three_layer import canonical_form, fast_path_reason
from .._core.net import check_params
from .._core.numbers import forward_error_bounds
from .._engine.budget import check_budget
from .._equivalence.equivalence import equivalent

__all__ = ["Fingerprint", "fingerprint", "FunctionGroups", "group_by_function"]

#: a value within ``EDGE * tol`` of a bucket edge is near it (float rounding of a
#: symmetric copy moves normalized values by about 1e-16, far less)
EDGE = 1e-4


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class Fingerprint(Result):
    """The fingerprint of a network (see the module docs).

    Attributes:
        digest: 16 hexadecimal characters; equal for networks related by the quotiented
            symmetries (up to the rule for float noise).
        complete: True when every symmetry of the theory was quotiented out (a generic
            three-layer bottleneck network); False: permutations and rescalings only.
        widths: the widths, part of the digest.
        tol: the bucket width.
        near_edge: some normalized value lies within ``EDGE * tol`` of a bucket edge (or
            within the float rounding of a copy, ``NOISE`` per layer, when that is larger).
        tied: two neurons of a layer have the same quantized row (their order is open).
        note: what was quotiented, in words.
    """

    digest: str
    complete: bool
    widths: tuple
    tol: float
    near_edge: bool
    tied: bool
    note: str

    @property
    def decisive(self) -> bool:
        """Neither near an edge nor tied: an equivalent copy has the same digest."""
        return not (self.near_edge or self.tied)

    def __str__(self) -> str:
        return self.digest


#: the float rounding a symmetric copy can put on a normalized value (of size <= 1), per
#: layer: a few roundings of about 2**-53 each
NOISE = 64 * 2.0**-53


def _buckets(values: np.ndarray, tol: float, depth: int = 1) -> tuple[np.ndarray, bool]:
    scaled = values / tol
    q = np.round(scaled)
    # near an edge: within EDGE of a bucket, or within the rounding noise when the buckets
    # are so narrow (tol below about 1e-12) that the noise is the larger
    near = bool(np.any(np.abs(np.abs(scaled - q) - 0.5) < max(EDGE, NOISE * depth / tol)))
    # + 0.0: a -0.0 bucket is the 0.0 bucket
    return q.astype(np.int64) if np.all(np.abs(q) < 2**62) else q + 0.0, near


def _normalized(params: list, tol: float):
    """The orbit representative under permutations and positive rescalings, as bucket
    arrays per layer, and whether it is near an edge or tied."""
    near = tied = False
    keys = []
    carry = None  # the previous layer's scales and order, applied to this layer's columns
    for l, (W, b) in enumerate(params):
        W = np.array(W, dtype=float)
        b = np.array(b, dtype=float)
        if carry is not None:
            order, scales = carry
            W = W[:, order] * scales[None, :]
        if l == len(params) - 1:
            m = max(float(np.abs(W).max()), float(np.abs(b).max()))
            if m == 0:
                keys.append(("zero output",))
                break
            e, n1 = _buckets(np.array([math.log(m)]), tol, l + 1)
            q, n2 = _buckets(np.hstack([W.ravel(), b]) / m, tol, l + 1)
            keys.append((e.tolist(), q.tolist()))
            near |= n1 or n2
            break
        R = np.hstack([W, b[:, None]])
        s = np.abs(R).max(axis=1)
        q, n = _buckets(R / np.where(s > 0, s, 1.0)[:, None], tol, l + 1)
        near |= n
        order = sorted(range(len(q)), key=lambda j: tuple(q[j].tolist()))
        tied |= any(np.array_equal(q[i], q[j]) for i, j in zip(order, order[1:]))
        keys.append(q[order].tolist())
        # a neuron with an all-zero row outputs 0 on every input: its outgoing weights do
        # not reach the function, and rescaling it moved them, so they are carried as 0
        carry = (np.array(order), s[order])
    return keys, near, tied


def fingerprint(params: Any, *, tol: Any = DEFAULT_TOL) -> Fingerprint:
    """A short string equal for networks related by the symmetries (module docs).

    Args:
        params: the network (a list of ``(W, b)``, a loaded model, a fitted MLP, ...).
        tol: the bucket width of the normalized values (relative; ``0`` is refused: a
            fingerprint of float weights needs buckets).

    Returns:
        A :class:`Fingerprint`.

    >>> import neuromanifold as nm
    >>> p = nm.ReLUNet([3, 4, 2]).random_params(seed=0)
    >>> (W1, b1), (W2, b2) = p
    >>> perm, c = [2, 0, 3, 1], np.array([0.3, 2.0, 1.7, 5.0])   # permuted, rescaled
    >>> q = [(c[:, None] * W1[perm], c * b1[perm]), (W2[:, perm] / c, b2)]
    >>> fingerprint(p).digest == fingerprint(q).digest
    True
    >>> fingerprint([(W1, b1 + 1e-6), (W2, b2)]).digest == fingerprint(p).digest
    False
    """
    tol = check_tol(tol)
    if tol == 0:
        raise InputError(
            "fingerprint needs tol > 0 (the bucket width of the normalized weights); got 0"
        )
    P = check_params(params)
    widths = (P[0][0].shape[1],) + tuple(W.shape[0] for W, _ in P)
    complete, how = False, "permutations and positive rescalings of the hidden neurons"
    if len(P) == 3 and fast_path_reason(P, tol=tol) is None:
        try:
            P = canonical_form(P, tol=tol)
            complete, how = True, "every symmetry (canonical form of a generic bottleneck)"
        except NeuromanifoldError:
            pass
    keys, near, tied = _normalized(P, tol)
    text = repr((widths, keys)).encode()
    digest = hashlib.sha256(text).hexdigest()[:16]
    return Fingerprint(
        digest=digest,
        complete=complete,
        widths=widths,
        tol=tol,
        near_edge=near,
        tied=tied,
        note=f"quotiented: {how}; buckets of width {tol:g}"
        + ("; a value near a bucket edge" if near else "")
        + ("; two neurons tied" if tied else ""),
    )


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class FunctionGroups(Result):
    """Networks grouped by the function they compute.

    Attributes:
        groups: tuples of indices into the networks given, one per function.
        fingerprints: the digest of each network.
        certified: every network of a group was proved equivalent to the group's first
            by :func:`~neuromanifold.relu.equivalent` (``verify``, every verdict certified).
        num_checks: the equivalence checks made.
        note: how the groups were formed.
    """

    groups: tuple
    fingerprints: tuple
    certified: bool
    num_checks: int
    note: str


class _Probes:
    """The networks' outputs at shared random inputs with rigorous bounds on their float
    rounding: outputs further apart than both bounds plus the tolerance prove two
    functions different (see :func:`group_by_function`)."""

    def __init__(self, nets: list, tol: float):
        self.tol, self.nets, self.out = tol, nets, {}
        self.points: dict[int, np.ndarray] = {}

    def _at(self, i: int) -> tuple:
        if i not in self.out:
            P = check_params(self.nets[i])
            d = P[0][0].shape[1]
            if d not in self.points:
                rng = np.random.default_rng(0)
                self.points[d] = rng.standard_normal((64, d)) * np.exp(
                    rng.uniform(-2.0, 2.0, (64, 1))
                )
            X = self.points[d]
            dummy = (np.zeros((1, P[-1][0].shape[0])), np.zeros(1))
            Y, E = forward_error_bounds(list(P) + [dummy], X)[-1]
            try:
                scale = path_norm_scale(P)
            except NeuromanifoldError:
                scale = np.inf
            self.out[i] = (Y, E, scale, np.maximum(1.0, np.abs(X).max(axis=1)))
        return self.out[i]

    def differ(self, i: int, j: int) -> bool:
        Yi, Ei, si, r = self._at(i)
        Yj, Ej, sj, _ = self._at(j)
        with np.errstate(invalid="ignore", over="ignore"):
            margin = Ei + Ej + self.tol * max(si, sj) * r[:, None]
            return bool(np.any(np.abs(Yi - Yj) > margin))


def group_by_function(
    networks: Any, *, tol: Any = DEFAULT_TOL, verify: bool = True, time_limit: Any = None
) -> FunctionGroups:
    """Group networks by function: equal fingerprints first; with ``verify`` every member is
    checked against its group's first (a certified verdict each).

    Different digests prove different functions only for complete fingerprints (generic
    three-layer bottlenecks): a dead neuron's outgoing weights, an inserted identity layer
    or another depth change the digest and not the function. So a network whose digest
    matches no group is compared with the first of every group of its input and output
    dimensions: where their outputs at 64 shared random inputs differ by more than the
    float rounding of both (bounded rigorously) plus ``tol`` times the scale, the
    functions are proved different at once; otherwise :func:`equivalent` decides.

    Args:
        networks: a sequence of networks (anything :func:`fingerprint` takes).
        tol: the tolerance of the fingerprints and of the equivalence checks.
        verify: check every member against its group's first (milliseconds each for
            permuted and rescaled copies).
        time_limit: seconds for the equivalence checks (``None``: no limit); a check
            that would start past it, or that runs out of it, is left undecided: the
            network then founds a group of its own, ``certified`` is False and the note
            counts the undecided checks (two groups may then hold one function).

    Returns:
        A :class:`FunctionGroups`.
    """
    tol = check_tol(tol)
    verify = check_bool(verify, "verify")
    _, time_limit = check_budget(None, time_limit)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    try:
        if isinstance(networks, (str, bytes, dict, type)):
            raise TypeError
        nets = list(networks)
    except TypeError:
        raise InputError(
            f"networks must be a sequence of networks (lists of (W, b), loaded "
            f"models, ...); got {short_repr(networks)}"
        ) from None
    fps = [fingerprint(p, tol=tol) for p in nets]
    probes = _Probes(nets, tol)
    groups: list[list[int]] = []
    by_digest: dict[str, int] = {}
    checks = undecided = 0
    certified, split = verify, False

    def same(a: int, b: int) -> bool | None:
        """equivalent within what is left of the time limit; None when undecided."""
        nonlocal checks, certified, undecided
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            undecided += 1
            return None
        checks += 1
        try:
            r = equivalent(nets[a], nets[b], tol=tol, time_limit=left)
        except ComputationLimitError:
            undecided += 1
            return None
        certified = certified and r.certified
        return r.equivalent

    for i, fp in enumerate(fps):
        g = by_digest.get(fp.digest)
        if g is None:
            for k, members in enumerate(groups):
                first = fps[members[0]]
                if (first.widths[0], first.widths[-1]) != (fp.widths[0], fp.widths[-1]):
                    continue
                complete = fp.complete and first.complete and fp.widths == first.widths
                if (complete and fp.decisive and first.decisive) or probes.differ(members[0], i):
                    continue  # proved different: complete digests, or outputs apart
                if same(members[0], i):
                    g = k
                    break
        if g is not None and verify and by_digest.get(fp.digest) == g:
            verdict = same(groups[g][0], i)
            if verdict is False:
                g, split = None, True  # one fingerprint, two functions: kept apart
            elif verdict is None:
                g = None  # not proved equivalent within the limit: kept apart
        if undecided:
            certified = False
        if g is None:
            groups.append([i])
            by_digest.setdefault(fp.digest, len(groups) - 1)
        else:
            groups[g].append(i)
    return FunctionGroups(
        groups=tuple(tuple(g) for g in groups),
        fingerprints=tuple(fp.digest for fp in fps),
        certified=certified,
        num_checks=checks,
        note=f"{len(nets)} networks, {len(groups)} functions; {checks} "
        f"equivalence checks"
        + ("; a shared fingerprint held two functions (kept apart)" if split else "")
        + (
            f"; {undecided} comparison(s) undecided at the time limit ({time_limit:g} s): "
            f"some groups may hold one function"
            if undecided
            else ""
        ),
    )
