"""Regular points of the neuromanifold of a linear convolutional network
(docs/concepts_linear.md §1, §3).

The smooth locus of the neuromanifold ``M = mu(parameters)`` is the set of its *regular
points*: points ``v`` near which ``M`` is a manifold of dimension ``dim M``. A full-rank
Jacobian at one preimage is not enough: at a *crossing* two branches of the fiber, each
with a full-rank Jacobian, map onto different tangent spaces, and ``M`` is singular there.
Example: filters of sizes (3, 2) with stride 2 and a first filter ``(a, 0, b)``: both
factors of ``pi(v)`` are polynomials in ``t^2`` and can trade layers.

What :func:`is_regular_point` proves. The fiber of ``v != 0`` is finitely many orbits
of the rescalings ``w_l -> c_l w_l`` (``prod c_l = 1``, signs included); the column space
of the Jacobian is constant along an orbit. Normalizing the layers to equal norms is a
slice of this action on which ``mu`` is proper (``||mu(theta)|| >= c r^(L/2)`` when every
``||w_l||^2 = r``), so near ``v`` the neuromanifold is the union of the images of small
neighbourhoods of the branches (one per orbit). Hence:

* **singular** (``regular=False``) when two full-rank branches have different Jacobian
  images: a manifold through ``v`` would have one tangent space containing both, of
  dimension > ``dim M``. The pair is the witness.
* **regular** (``regular=True``) when ``M`` is full-dimensional and some branch has full
  rank (``mu`` is then open near it: ``v`` is an interior point), or when every branch has
  full rank and all branches form one class modulo the global symmetries of ``mu`` that
  permute layers (two layers of the same filter shape and the same cumulative stride
  can be swapped): the branches then have one common image, an immersed manifold of
  dimension ``dim M`` (constant rank theorem).
* **undecided** (``regular=None``) otherwise: a rank-deficient branch, or branches with
  equal tangent spaces that no symmetry relates (a tangential self-intersection is not
  excluded by first-order data).

Images are compared exactly over Q when every branch is recognized as an exact rational
point (up to its rescaling; recognition is verified by exact polynomial multiplication),
and otherwise numerically: ranks by :func:`neuromanifold._tolerance.numerical_rank`
(normalized columns, relative tolerance ``tol``), images by the sine of the largest
principal angle between the column spaces (differ when it exceeds ``tol``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import flint
import numpy as np

from .._errors import InputError, short_repr
from .._results import Result
from .._tolerance import DEFAULT_TOL, check_tol, numerical_rank
from .._validation import as_real_array
from ..exact import to_fmpq
from ._conv import LinearConvNet

__all__ = ["RegularPoint", "is_regular_point"]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class RegularPoint(Result):
    """Verdict of :func:`is_regular_point`, with its evidence.

    Attributes:
        regular: True (a regular point: ``M`` is a manifold of dimension ``dim M`` near v),
            False (singular: a crossing of branches with different tangent spaces), None
            (undecided; see ``reason``).
        reason: the rule that decided, in words.
        dimension: ``dim M``.
        num_branches: fiber points modulo rescaling and sign flips.
        num_full_rank: branches whose Jacobian has rank ``dim M``.
        num_tangent_spaces: distinct Jacobian images among the full-rank branches.
        num_symmetry_classes: classes of branches modulo swaps of interchangeable layers.
        max_sine: largest sine of the principal angles between the images of two full-rank
            branches (0.0 when they are equal exactly or when there is one branch).
        witness: two branches (parameters) with different images when singular, else None.
        certified: the fiber is proven complete and ranks and images were compared exactly
            over the rationals.
        exact: ranks and images were compared exactly over the rationals.
        tol: the relative tolerance of the numerical comparisons.
    """

    regular: bool | None
    reason: str
    dimension: int
    num_branches: int
    num_full_rank: int
    num_tangent_spaces: int
    num_symmetry_classes: int
    max_sine: float
    witness: tuple[list[np.ndarray], list[np.ndarray]] | None
    certified: bool
    exact: bool
    tol: float


def is_regular_point(
    net: Any, end_to_end: Any, *, tol: float = DEFAULT_TOL, fiber: Any = None
) -> RegularPoint:
    """Is ``end_to_end`` a regular point of the neuromanifold of ``net``?

    Compares the Jacobian images of all branches of the fiber (see the module docs for
    what each verdict proves; docs/concepts_linear.md §1 and §3).

    Args:
        net: a :class:`~neuromanifold.linear.LinearConvNet`.
        end_to_end: a nonzero point of the neuromanifold, in any form
            :meth:`LinearConvNet.fiber` accepts (float or exact array, or the exact
            polynomial ``net.polynomial(params)``).
        tol: relative tolerance of the numerical ranks and image comparisons (used only
            when a branch is not an exact rational point), in ``(0, 1)``.
        fiber: optional, a fiber of ``end_to_end`` already computed (at any invariants):
            its points are the branches.

    Returns:
        :class:`RegularPoint`.

    Raises:
        NotInNeuromanifoldError: ``end_to_end`` is not in the neuromanifold.
        InputError: bad arguments (``end_to_end = 0`` included: its fiber is not finite).

    >>> from neuromanifold.linear import LinearConvNet
    >>> net = LinearConvNet([3, 2], [2])
    >>> # first filter (1, 0, -4): pi(v) = (1 - 4 t^2)(1 - 9 t^2); the layers can trade
    >>> crossing = is_regular_point(net, net.polynomial([[1.0, 0.0, -4.0], [1.0, -9.0]]))
    >>> crossing.regular, crossing.num_branches, crossing.certified
    (False, 2, True)
    >>> is_regular_point(net, net.polynomial([[1.0, 2.0, -4.0], [1.0, -9.0]])).regular
    True
    """

    if not isinstance(net, LinearConvNet):
        raise InputError(f"is_regular_point needs a LinearConvNet; got {short_repr(net)}")
    tol = check_tol(tol)
    if tol == 0:
        raise InputError(
            "tol must be positive for is_regular_point (numerical comparisons "
            "are used when a branch is not an exact rational point); got 0"
        )
    if fiber is None:
        fiber = net.fiber(end_to_end, np.zeros(net.num_layers - 1), method="auto")
    points = [net.check_params(p) for p in fiber.points]
    target = (
        end_to_end
        if isinstance(end_to_end, flint.fmpq_mpoly)
        else _exact_target(
            net, as_real_array(end_to_end, "end_to_end", error=InputError, exact=True)
        )
    )
    return classify_branches(net, points, certified=bool(fiber.certified), tol=tol, target=target)


def _exact_target(net, v: Any) -> flint.fmpq_mpoly | None:
    """pi(v) exactly, from an array of floats or rationals (None when not representable)."""
    try:
        arr = np.asarray(v, dtype=object).reshape(net.end_to_end_shape)
        terms = {tuple(int(i) for i in idx): to_fmpq(c) for idx, c in np.ndenumerate(arr) if c != 0}
    except (TypeError, ValueError):  # pragma: no cover - the fiber validated v already
        return None
    return net.polynomial_context().from_dict(terms)


# ------------------------------------------------------------------------- internals
def _exact_branches(net, points: list, target, max_groupings: int = 20000) -> list[list] | None:
    """Every branch as exact rational layer polynomials, or None.

    The Q-irreducible factors of ``target`` are grouped into layers in every way whose
    products fit the layers (exponents in ``S_{l-1} Z^D``, degrees within the filter
    boxes); each branch must match exactly one grouping (normalized layers equal up to
    rounding) and distinct branches distinct groupings. Then the branches are exact
    rational points up to rescaling (column spaces do not change under rescaling)."""
    if target is None or target == 0:
        return None
    ctx = net.polynomial_context()
    _, factors = target.factor()
    copies = [f for f, e in factors for _ in range(int(e))]
    L = net.num_layers
    if L ** len(copies) > max_groupings:
        return None
    caps = [
        tuple((k - 1) * s for k, s in zip(kk, S))
        for kk, S in zip(net.filter_shapes, net.cumulative_strides)
    ]
    one = ctx.from_dict({(0,) * net.ndim: 1})
    groupings, seen = [], set()
    for assign in itertools.product(range(L), repeat=len(copies)):
        layers = [one] * L
        for f, l in zip(copies, assign):
            layers[l] = layers[l] * f
        key = tuple(str(q) for q in layers)
        if key in seen:
            continue
        seen.add(key)
        ok = True
        for q, cap, S in zip(layers, caps, net.cumulative_strides):
            for exps in q.to_dict():
                if any(int(e) > c or int(e) % s for e, c, s in zip(exps, cap, S)):
                    ok = False
                    break
            if not ok:
                break
        if ok:
            groupings.append(layers)
    if len(groupings) != len(points):
        return None

    def normalized_dense(q, l):
        arr = np.zeros(net.filter_shapes[l])
        for exps, c in q.to_dict().items():
            arr[tuple(int(e) // s for e, s in zip(exps, net.cumulative_strides[l]))] = float(c)
        return _normalized(arr)

    dense = [[normalized_dense(q, l) for l, q in enumerate(g)] for g in groupings]
    out, used = [], set()
    for p in points:
        match = [
            gi
            for gi, g in enumerate(dense)
            if all(np.linalg.norm(_normalized(p[l]) - g[l]) <= 1e-6 for l in range(L))
        ]
        if len(match) != 1 or match[0] in used:
            return None
        used.add(match[0])
        out.append(groupings[match[0]])
    return out


def _exact_jacobian(net, polys: list[flint.fmpq_mpoly]) -> flint.fmpq_mat:
    """The Jacobian at the point with layer polynomials ``polys`` (docs/concepts_linear.md
    §2), exactly."""
    return net._exact_jacobian_at(polys)


def _hstack(A: flint.fmpq_mat, B: flint.fmpq_mat) -> flint.fmpq_mat:
    out = flint.fmpq_mat(A.nrows(), A.ncols() + B.ncols())
    for i in range(A.nrows()):
        for j in range(A.ncols()):
            out[i, j] = A[i, j]
        for j in range(B.ncols()):
            out[i, A.ncols() + j] = B[i, j]
    return out


def _interchangeable_classes(net) -> list[list[int]]:
    """Groups of layers with the same filter shape and the same cumulative stride (more
    than one entry): swapping two of them is a global symmetry of mu."""
    groups: dict[tuple, list[int]] = {}
    for l, (k, S) in enumerate(zip(net.filter_shapes, net.cumulative_strides)):
        if math.prod(k) > 1:
            groups.setdefault((k, S), []).append(l)
    return [g for g in groups.values() if len(g) > 1]


def _normalized(w: np.ndarray) -> np.ndarray:
    """``w / ||w||`` with the sign fixed by the entry of largest magnitude."""
    u = w.ravel() / np.linalg.norm(w)
    return u * np.sign(u[int(np.argmax(np.abs(u)))])


def _related(net, p: list, q: list, classes: list[list[int]], tol: float) -> bool:
    """Whether q is p up to rescaling, signs and a permutation of interchangeable layers."""
    perms = [list(itertools.permutations(g)) for g in classes]
    for choice in itertools.product(*perms) if perms else [()]:
        image = list(range(net.num_layers))
        for g, perm in zip(classes, choice):
            for src, dst in zip(g, perm):
                image[dst] = src
        if all(
            np.linalg.norm(_normalized(p[image[l]]) - _normalized(q[l])) <= math.sqrt(tol)
            for l in range(net.num_layers)
        ):
            return True
    return False


def classify_branches(
    net: Any, points: list, *, certified: bool, tol: float, target: Any = None
) -> RegularPoint:
    """The verdict of :func:`is_regular_point` from the fiber's branches ``points`` (one
    per orbit of rescalings and signs); ``target`` is the exact ``pi(v)`` (enables the
    exact comparison), ``certified`` whether the list of branches is proven complete."""
    # Whole: ranks, tangent-space classes, then one chain of verdicts that reads them all at once
    d = net.dimension
    n = len(points)
    if n == 0:  # pragma: no cover - a fiber of a point of M is never empty
        raise InputError("no branch given")
    exact_polys = _exact_branches(net, points, target)
    exact = exact_polys is not None
    if exact:
        Js = [_exact_jacobian(net, e) for e in exact_polys]
        ranks = [J.rank() for J in Js]
    else:
        Jf = [net.jacobian(p) for p in points]
        ranks = [numerical_rank(J, tol)[0] for J in Jf]
    full = [i for i in range(n) if ranks[i] == d]
    # distinct images among full-rank branches, with the largest principal-angle sine
    reps: list[int] = []
    max_sine, witness_pair = 0.0, None
    bases = {}
    if not exact:
        for i in full:
            J = Jf[i]
            J = J / np.maximum(np.linalg.norm(J, axis=0), 1e-300)
            U = np.linalg.svd(J, full_matrices=False)[0][:, :d]
            bases[i] = U
    for i in full:
        same = False
        for r in reps:
            if exact:
                differ = _hstack(Js[r], Js[i]).rank() > d
                sine = 1.0 if differ else 0.0
                if differ:
                    # report the measured angle too (float, for the reader)
                    A = np.array(
                        [
                            [float(Js[r][a, b]) for b in range(Js[r].ncols())]
                            for a in range(Js[r].nrows())
                        ]
                    )
                    B = np.array(
                        [
                            [float(Js[i][a, b]) for b in range(Js[i].ncols())]
                            for a in range(Js[i].nrows())
                        ]
                    )
                    UA = np.linalg.svd(
                        A / np.maximum(np.linalg.norm(A, axis=0), 1e-300), full_matrices=False
                    )[0][:, :d]
                    UB = np.linalg.svd(
                        B / np.maximum(np.linalg.norm(B, axis=0), 1e-300), full_matrices=False
                    )[0][:, :d]
                    sine = float(np.linalg.norm(UB - UA @ (UA.T @ UB), 2))
            else:
                U, V = bases[r], bases[i]
                sine = float(np.linalg.norm(V - U @ (U.T @ V), 2))
                differ = sine > tol
            if sine > max_sine:
                max_sine = sine
                if differ:
                    witness_pair = (r, i)
            if not differ:
                same = True
                break
        if not same:
            reps.append(i)
    classes = _interchangeable_classes(net)
    sym_reps: list[int] = []
    for i in range(n):
        if not any(_related(net, points[j], points[i], classes, tol) for j in sym_reps):
            sym_reps.append(i)
    full_dim = d == net.end_to_end_size
    how = "exactly over Q" if exact else f"numerically (tol={tol:g})"
    if full_dim and full:
        regular = True
        reason = (
            f"M is full-dimensional (dim {d}) and a branch has a full-rank Jacobian: "
            f"v is an interior point"
        )
    elif witness_pair is not None:
        regular = False
        reason = (
            f"crossing: two branches with full-rank Jacobians have different tangent "
            f"spaces (largest principal-angle sine {max_sine:.3g}, compared {how})"
        )
    elif len(full) == n and len(sym_reps) == 1:
        regular = True
        reason = (
            f"every branch ({n}) has a full-rank Jacobian and they form one class "
            f"modulo rescaling, signs and swaps of interchangeable layers"
        )
    elif len(full) < n:
        regular = None
        reason = (
            f"{n - len(full)} of {n} branch(es) have a rank-deficient Jacobian: "
            f"regularity is not decided by first-order data"
        )
    else:
        regular = None
        reason = (
            f"{len(sym_reps)} classes of branches with one common tangent space that "
            f"no symmetry relates: a tangential self-intersection is not excluded"
        )
    witness = None
    if witness_pair is not None and regular is False:
        witness = (points[witness_pair[0]], points[witness_pair[1]])
    return RegularPoint(
        regular=regular,
        reason=reason,
        dimension=int(d),
        num_branches=n,
        num_full_rank=len(full),
        num_tangent_spaces=len(reps),
        num_symmetry_classes=len(sym_reps),
        max_sine=float(max_sine),
        witness=witness,
        certified=bool(certified and exact),
        exact=exact,
        tol=float(tol),
    )
