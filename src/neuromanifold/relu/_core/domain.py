"""Input domains of ReLU analyses: all of R^d, a box, or the nonnegative orthant.

A domain is the polyhedron ``{x : A x <= c}`` (no rows for R^d). Every analysis
takes a ``domain`` argument, accepted in any form :func:`as_domain` understands.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np

from ..._errors import DomainError, InputError, short_repr
from ..._results import Result
from ..._validation import MAX_PARAMS, as_finite_array, check_nonnegative_float, check_positive_int
from .net import check_params

__all__ = [
    "Domain",
    "as_domain",
    "as_data",
    "domain_or_data",
    "full_dimensional",
    "FixedInputs",
    "sample_points",
]


@dataclasses.dataclass(frozen=True, repr=False)
class Domain(Result):
    """A polyhedral input domain ``{x in R^dim : A x <= c}``.

    Attributes:
        kind: ``"whole"``, ``"box"`` or ``"orthant"``.
        dim: the input dimension.
        A, c: the inequality description (``A`` of shape ``(m, dim)``).
        lower, upper: the box bounds (``None`` unless ``kind == "box"``).
    """

    kind: str
    dim: int
    A: np.ndarray
    c: np.ndarray
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None

    def __post_init__(self) -> None:
        # A Domain built directly (not by whole/orthant/box) meets the same rules: every
        # analysis trusts kind, shapes and bounds, and a 'sphere' or an empty box would
        # otherwise be analysed as something it is not.
        if self.kind not in ("whole", "orthant", "box"):
            raise DomainError(
                f"a domain's kind is 'whole', 'orthant' or 'box'; got {short_repr(self.kind)}"
            )
        dim = check_positive_int(self.dim, "domain dimension", DomainError, maximum=MAX_PARAMS)
        A = (
            as_finite_array(self.A, "domain A", error=DomainError).reshape(-1, dim)
            if np.size(self.A) % dim == 0
            else None
        )
        c = as_finite_array(self.c, "domain c", ndim=1, error=DomainError)
        if A is None or A.shape[0] != c.shape[0]:
            raise DomainError(
                f"a domain's A must have shape (m, {dim}) and c shape (m,); got "
                f"{np.shape(self.A)} and {c.shape}"
            )
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "c", c)
        if self.kind == "box":
            lo = as_finite_array(self.lower, "box lower bound", ndim=1, error=DomainError)
            hi = as_finite_array(self.upper, "box upper bound", ndim=1, error=DomainError)
            _check_box(lo, hi)
            if lo.shape != (dim,):
                raise DomainError(f"box bounds must have shape ({dim},); got {lo.shape}")
            object.__setattr__(self, "lower", lo)
            object.__setattr__(self, "upper", hi)
        # every analysis reads a domain by its kind (and bounds), some by A and c: they
        # must describe one set
        if self.kind == "whole":
            want_A, want_c = np.zeros((0, dim)), np.zeros(0)
        elif self.kind == "orthant":
            want_A, want_c = -np.eye(dim), np.zeros(dim)
        else:
            want_A = np.vstack([np.eye(dim), -np.eye(dim)])
            want_c = np.concatenate([self.upper, -self.lower])
        if A.shape != want_A.shape or not (np.array_equal(A, want_A) and np.array_equal(c, want_c)):
            raise DomainError(
                f"a domain of kind {self.kind!r} must have A and c that describe that set ("
                + {
                    "whole": "no rows",
                    "orthant": "A = -I, c = 0",
                    "box": "A = [I; -I], c = [upper; -lower]",
                }[self.kind]
                + f"); got A of shape {A.shape}, c = {short_repr(c)}. Build domains with "
                f"Domain.whole, Domain.orthant or Domain.box"
            )

    @classmethod
    def from_dict(cls, data: Any) -> "Domain":
        """The domain whose :meth:`to_dict` is ``data`` (see :meth:`Result.from_dict`);
        ``A`` keeps its shape ``(m, dim)`` also when it has no rows."""
        return super().from_dict(data)

    @classmethod
    def whole(cls, dim: int) -> "Domain":
        """All of R^dim."""
        dim = check_positive_int(dim, "domain dimension", DomainError, maximum=MAX_PARAMS)
        return cls("whole", dim, np.zeros((0, dim)), np.zeros(0))

    @classmethod
    def orthant(cls, dim: int) -> "Domain":
        """The nonnegative orthant ``x >= 0``."""
        dim = check_positive_int(dim, "domain dimension", DomainError, maximum=10_000)
        return cls("orthant", dim, -np.eye(dim), np.zeros(dim))

    @classmethod
    def box(cls, lower: Any, upper: Any) -> "Domain":
        """The box ``lower <= x <= upper`` (each bound a vector, or scalars with ``dim``).

        ``lower[i] == upper[i]`` fixes coordinate ``i`` (a degenerate box, as a
        VNN-COMP property fixing an input has it); the analyses then work on the slice
        of the other coordinates (see :attr:`fixed`)."""
        lo = as_finite_array(lower, "box lower bound", ndim=1, error=DomainError)
        hi = as_finite_array(upper, "box upper bound", ndim=1, error=DomainError)
        _check_box(lo, hi)
        d = lo.size
        return cls("box", d, np.vstack([np.eye(d), -np.eye(d)]), np.concatenate([hi, -lo]), lo, hi)

    @classmethod
    def from_data(cls, X: Any, *, min_width: float = 1e-9) -> "Domain":
        """The bounding box of the rows of ``X`` (an array of shape ``(n, dim)``).

        A domain is full-dimensional, so a coordinate that is constant on the data (a
        border pixel that is always 0) gets the width ``min_width * max(1, |value|)``
        above its value: the box then contains every data point, and what is proved on
        it holds on the data.
        """
        X = as_finite_array(X, "data", ndim=2, error=DomainError)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise DomainError(
                f"data must have at least one row and one column; got shape {X.shape}"
            )
        if not (isinstance(min_width, (int, float)) and 0 < min_width < 1):
            raise DomainError(f"min_width must be a number in (0, 1); got {short_repr(min_width)}")
        lo, hi = X.min(axis=0), X.max(axis=0)
        flat = hi <= lo
        hi = np.where(flat, lo + min_width * np.maximum(1.0, np.abs(lo)), hi)
        return cls.box(lo, hi)

    def check_contains(self, X: np.ndarray, what: str = "data") -> None:
        """A :class:`DomainError` naming the first row of ``X`` outside the domain (``A x
        <= c`` up to the rounding of the comparison)."""
        if self.A.shape[0] == 0 or X.shape[0] == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            slack = X @ self.A.T - self.c
            room = 1e-12 * np.maximum(1.0, np.abs(self.c))
        bad = np.flatnonzero(np.any(~(slack <= room), axis=1))
        if bad.size:
            raise DomainError(
                f"{what} must be points of the domain ({self.kind}); row {int(bad[0])} "
                f"({bad.size} of {X.shape[0]} rows) is outside it: {short_repr(X[bad[0]])}"
            )

    @property
    def fixed(self) -> np.ndarray:
        """The coordinates a box fixes (``lower == upper``), as indices; empty otherwise."""
        if self.kind != "box":
            return np.zeros(0, dtype=int)
        return np.flatnonzero(self.lower == self.upper)

    @property
    def is_bounded(self) -> bool:
        """Whether the domain is bounded (a box)."""
        return self.kind == "box"

    def contains(self, X: Any, *, tol: float = 0.0) -> np.ndarray:
        """Which points lie in the domain.

        Args:
            X: points, shape ``(N, dim)`` (or one point of shape ``(dim,)``).
            tol: absolute slack allowed on every inequality (>= 0; 0 = exact membership
                of the float points).

        Returns:
            Boolean array of shape ``(N,)``.
        """
        tol = check_nonnegative_float(tol, "tol")
        X = np.atleast_2d(as_finite_array(X, "X", error=DomainError))
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise DomainError(
                f"X must have shape (N, {self.dim}) for this domain; got shape {X.shape}"
            )
        return np.all(X @ self.A.T <= self.c + tol, axis=1)


def _check_box(lo: np.ndarray, hi: np.ndarray) -> None:
    """Bounds of a box: one shape, lower <= upper everywhere (lower == upper fixes that
    coordinate: a degenerate box), and a width float64 holds
    (a box of (-1e308, 1e308) has width inf, on which sampling, scaling and LPs fail)."""
    if lo.shape != hi.shape:
        raise DomainError(f"box bounds must have the same shape; got {lo.shape} and {hi.shape}")
    if not np.all(lo <= hi):
        i = int(np.argmax(~(lo <= hi)))
        raise DomainError(
            f"box must satisfy lower <= upper in every coordinate; coordinate {i} has "
            f"lower={float(lo[i])!r} > upper={float(hi[i])!r} (lower={short_repr(lo)}, "
            f"upper={short_repr(hi)})"
        )
    with np.errstate(over="ignore"):
        wide = ~np.isfinite(hi - lo) | (np.maximum(np.abs(lo), np.abs(hi)) > MAX_BOX_BOUND)
    if np.any(wide):
        i = int(np.argmax(wide))
        raise DomainError(
            f"box bounds must lie within +-{MAX_BOX_BOUND:g}; got [{lo[i]:g}, "
            f"{hi[i]:g}] in coordinate {i} (for all of R^d use the domain "
            f"'whole')"
        )


#: the largest |bound| of a box: beyond it, widths, squares and LP scalings of the box
#: leave float64 (1e308 - (-1e308) is inf); every box a network is used on lies within
MAX_BOX_BOUND = 1e150


def as_domain(domain: Any, dim: int) -> Domain:
    """Interpret ``domain`` for input dimension ``dim``.

    Args:
        domain: ``None``, ``"whole"`` or ``"R^d"`` (all of R^dim); ``"orthant"``;
            a pair ``(lower, upper)`` of scalars or vectors (a box); a :class:`Domain`.
        dim: the input dimension the domain must have.

    Returns:
        A :class:`Domain` of dimension ``dim`` (a :class:`DomainError` otherwise).

    >>> as_domain("orthant", 2).kind
    'orthant'
    >>> as_domain((-1, 1), 3).upper
    array([1., 1., 1.])
    """
    dim = check_positive_int(dim, "domain dimension", DomainError)
    if domain is None or (isinstance(domain, str) and domain.lower() in {"whole", "r^d", "rd"}):
        return Domain.whole(dim)
    if isinstance(domain, str):
        if domain.lower() == "orthant":
            return Domain.orthant(dim)
        raise DomainError(
            f"domain must be None, 'whole', 'orthant', a (lower, upper) box or a Domain; "
            f"got {domain!r}"
        )
    if isinstance(domain, Domain):
        if domain.dim != dim:
            raise DomainError(
                f"domain has dimension {domain.dim} but the network's input dimension is {dim}"
            )
        return domain
    if isinstance(domain, (tuple, list)) and len(domain) == 2:
        lo, hi = (
            np.broadcast_to(as_finite_array(v, "box bound", error=DomainError), (dim,))
            if np.ndim(v) == 0
            else v
            for v in domain
        )
        box = Domain.box(lo, hi)
        if box.dim != dim:
            raise DomainError(
                f"box has dimension {box.dim} but the network's input dimension is {dim}"
            )
        return box
    raise DomainError(
        f"domain must be None, 'whole', 'orthant', a (lower, upper) box or a Domain; "
        f"got {short_repr(domain)}"
    )


def as_data(data: Any, dim: int) -> np.ndarray:
    """``data`` as finite points of R^dim (an array ``(n, dim)``, ``n >= 1``), else an
    :class:`~neuromanifold.InputError` that says the rule."""
    X = as_finite_array(data, "data", ndim=2, error=InputError)
    if X.shape[1] != dim or X.shape[0] == 0:
        raise InputError(
            f"data must have at least one row and {dim} columns (the input dimension); "
            f"got shape {X.shape}"
        )
    return X


def domain_or_data(domain: Any, data: Any, dim: int, what: str) -> tuple:
    """``(domain, X)`` of a question asked on a full-dimensional domain or at data points,
    never both: the :class:`Domain` (:func:`as_domain`, :func:`full_dimensional`) and the
    points (:func:`as_data`, or ``None``)."""
    if domain is not None and data is not None:
        raise InputError(
            f"{what} takes a domain or data points, not both; got domain="
            f"{short_repr(domain)} and data of shape {np.shape(data)}"
        )
    X = None if data is None else as_data(data, dim)
    return full_dimensional(as_domain(domain, dim), what), X


def full_dimensional(domain: Domain, what: str = "this analysis") -> Domain:
    """``domain``, refused (:class:`DomainError`) when it is a box fixing some input: the
    analyses whose answer is about the parameter as given (a fiber, a rank) cannot fold
    the fixed inputs into the first layer, which would change the parameter."""
    if domain.fixed.size:
        raise DomainError(
            f"{what} needs a full-dimensional domain; the box fixes inputs "
            f"{domain.fixed.tolist()} (lower == upper): fold them into the first layer's "
            f"bias and analyse the network of the other inputs on their box"
        )
    return domain


@dataclasses.dataclass(frozen=True)
class FixedInputs:
    """A box that fixes some coordinates, as the box of the other ones.

    A network on such a box is the network whose first layer takes the free coordinates
    only, the fixed ones folded into its bias exactly (``b + W[:, fixed] v`` as
    ``Fraction``s): the analyses whose engine needs a full-dimensional domain run on
    that network and the lower-dimensional box, and points come back with the fixed
    values put in (:meth:`lift`).
    """

    domain: Domain  # the box of the free coordinates
    free: np.ndarray
    fixed: np.ndarray
    values: np.ndarray
    dim: int

    @classmethod
    def of(cls, dom: Domain) -> "FixedInputs | None":
        """``None`` unless ``dom`` is a box fixing some coordinate; a
        :class:`DomainError` when it fixes every one (a single point has no regions)."""
        fixed = dom.fixed
        if fixed.size == 0:
            return None
        free = np.flatnonzero(dom.lower != dom.upper)
        if free.size == 0:
            raise DomainError(
                f"the box fixes every coordinate (lower == upper = {short_repr(dom.lower)}): "
                f"a single point; evaluate the network there (relu.forward) instead"
            )
        return cls(
            Domain.box(dom.lower[free], dom.upper[free]), free, fixed, dom.lower[fixed], dom.dim
        )

    def reduce(self, params: list) -> list:
        """``params`` with the fixed inputs folded into the first layer's bias, exactly."""

        def exact(v: Any) -> Any:
            if isinstance(v, Fraction):
                return v
            if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                return Fraction(int(v))
            return Fraction(float(v))

        checked = check_params(params)  # every form the analyses take, validated
        # a list of (W, b) keeps its exact entries (Fractions, integers); other forms
        # (a Model, a torch module) are their float64 values
        raw = params if isinstance(params, (list, tuple)) else checked
        (W, b), rest = raw[0], list(raw[1:])
        W = np.asarray(W)
        v = [Fraction(float(x)) for x in self.values]
        b1 = np.array(
            [
                exact(b[i]) + sum((exact(W[i, j]) * x for j, x in zip(self.fixed, v)), Fraction(0))
                for i in range(W.shape[0])
            ],
            dtype=object,
        )
        return [(W[:, self.free], b1)] + rest

    def lift(self, x: Any) -> np.ndarray | None:
        """A point of the free coordinates as a point of the box (``None`` stays ``None``)."""
        if x is None:
            return None
        x = np.asarray(x)
        out = np.empty(self.dim, dtype=x.dtype if x.dtype == object else float)
        out[self.free] = x
        out[self.fixed] = self.values
        return out


def sample_points(dom: Domain, d: int, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points of the domain: uniform on a box; else homogeneous (see below)."""
    if dom.kind == "box":
        return dom.lower + (dom.upper - dom.lower) * rng.random((n, d))
    # homogeneous sampling x = y / s, the measure of the relative difference; a quarter of
    # the points far out (s down to 1e-6) for differences at infinity
    y = rng.uniform(-1.0, 1.0, (n, d))
    if dom.kind == "orthant":
        y = np.abs(y)
    s = rng.uniform(0.0, 1.0, n)
    s[: n // 4] = 10.0 ** -rng.uniform(0.0, 6.0, n // 4)
    return y / np.maximum(s, 1e-6)[:, None]
