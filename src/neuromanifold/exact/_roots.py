"""Certified root isolation of rational univariate polynomials (python-flint / Arb).

Everything here is a *proof*, not a floating-point guess: roots are isolated in disjoint
complex balls by ``arb_fmpz_poly_complex_roots`` (real roots come out with an exactly zero
imaginary part), multiplicities come from an exact square-free factorization, complex
conjugate partners and equalities ``z_i^S = z_j^S`` are decided by a counting argument
against an exact polynomial (see :func:`power_classes`), never by a tolerance.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import flint
import numpy as np

from .._errors import InputError, NeuromanifoldError, short_repr
from .._validation import check_positive_int
from ._rational import fmpq_vector

__all__ = [
    "RootIsolation",
    "certified_roots",
    "power_classes",
    "real_irreducible_factors",
    "working_precision",
    "isolate_factors",
]

#: precisions tried (bits) before giving up on separating balls
_PRECISIONS = (64, 128, 256, 512, 1024, 2048, 4096)


@contextlib.contextmanager
def working_precision(bits: int) -> Iterator[None]:
    """Temporarily set python-flint's global real/complex precision to ``bits``."""
    old = flint.ctx.prec
    flint.ctx.prec = bits
    try:
        yield
    finally:
        flint.ctx.prec = old


@dataclasses.dataclass(frozen=True)
class RootIsolation:
    """The distinct complex roots of a nonzero rational polynomial, isolated and certified.

    Attributes:
        values: one ``flint.acb`` ball per distinct root; the balls are pairwise disjoint
            and each contains exactly one root.
        multiplicities: multiplicity of each root.
        is_real: whether each root is real (proved: its ball has exactly zero imaginary
            part, as returned by Arb for real roots).
        conjugate: index of the complex-conjugate root (itself for real roots).
        prec: the working precision (bits) at which everything was certified.
    """

    values: tuple
    multiplicities: tuple[int, ...]
    is_real: tuple[bool, ...]
    conjugate: tuple[int, ...]
    prec: int

    def __len__(self) -> int:
        return len(self.values)

    def as_complex(self) -> np.ndarray:
        """Midpoints of the balls as complex128 (real roots get imaginary part 0.0).

        Raises:
            InputError: a root lies beyond the float64 range (the balls in ``values``
                still hold it exactly).
        """
        out = np.array(
            [
                complex(float(z.real.mid()), 0.0 if r else float(z.imag.mid()))
                for z, r in zip(self.values, self.is_real)
            ],
            dtype=complex,
        )
        if not np.all(np.isfinite(out)):
            big = self.values[int(np.nonzero(~np.isfinite(out))[0][0])]
            raise InputError(
                f"a root lies beyond the float64 range (|z| > 1.8e308): "
                f"{short_repr(big)}; its certified ball is in .values"
            )
        return out


def _isolate(poly: flint.fmpq_poly, prec: int) -> RootIsolation | None:
    with working_precision(prec):
        found = poly.complex_roots()
    values = tuple(z for z, _ in found)
    mults = tuple(int(m) for _, m in found)
    is_real = tuple(bool(z.imag.is_zero()) for z in values)
    conj = []
    for i, z in enumerate(values):
        if is_real[i]:
            conj.append(i)
            continue
        zc = z.conjugate()
        hits = [j for j, w in enumerate(values) if not is_real[j] and j != i and w.overlaps(zc)]
        # the conjugate of a root is a root with the same multiplicity; with disjoint balls
        # exactly one ball can contain it, so a unique overlap proves the pairing
        if len(hits) != 1 or mults[hits[0]] != mults[i]:
            return None
        conj.append(hits[0])
    if any(conj[conj[i]] != i for i in range(len(values))):
        return None
    return RootIsolation(values, mults, is_real, tuple(conj), prec)


def _as_fmpq_poly(poly: Any) -> flint.fmpq_poly:
    """A ``flint.fmpq_poly`` from itself, an ``fmpz_poly`` or a sequence of exact
    coefficients (constant term first)."""
    if isinstance(poly, flint.fmpq_poly):
        return poly
    if isinstance(poly, flint.fmpz_poly):
        return flint.fmpq_poly(poly)
    if isinstance(poly, (str, bytes)) or not isinstance(poly, (Sequence, np.ndarray)):
        raise InputError(
            f"poly must be a flint.fmpq_poly or a list of rational coefficients "
            f"(constant term first); got {short_repr(poly)}"
        )
    return flint.fmpq_poly(fmpq_vector(poly, "poly coefficients"))


def certified_roots(poly: flint.fmpq_poly | Sequence, *, min_prec: int = 64) -> RootIsolation:
    """Isolate all distinct complex roots of a nonzero rational polynomial.

    Args:
        poly: a ``flint.fmpq_poly`` or its coefficients (constant term first; ints,
            Fractions, fmpq, or floats taken as the exact binary rationals they are).
        min_prec: the first working precision tried (bits); it is doubled until complex
            conjugate pairs are certified.

    Returns:
        A :class:`RootIsolation`.

    >>> iso = certified_roots([2, -3, 1])      # (t - 1)(t - 2)
    >>> iso.multiplicities, iso.is_real, sorted(iso.as_complex().real.tolist())
    ((1, 1), (True, True), [1.0, 2.0])
    """
    poly = _as_fmpq_poly(poly)
    min_prec = check_positive_int(min_prec, "min_prec", maximum=_PRECISIONS[-1])
    if poly.is_zero():
        raise InputError(
            "poly must be a nonzero polynomial: the zero polynomial has no isolated roots"
        )
    if poly.degree() == 0:
        return RootIsolation((), (), (), (), min_prec)
    for prec in _PRECISIONS:
        if prec < min_prec:
            continue
        iso = _isolate(poly, prec)
        if iso is not None:
            return iso
    raise NeuromanifoldError(  # pragma: no cover - needs roots closer than 2^-4096
        f"could not certify the conjugate pairs of the roots of {poly} at {_PRECISIONS[-1]} bits"
    )


def _distinct_power_count(poly: flint.fmpq_poly, S: int) -> int:
    """Number of distinct values ``z^S`` over the roots z of ``poly``, computed exactly.

    ``g(u) = Res_t(poly(t), t^S - u)`` has exactly the roots ``z^S`` (with multiplicity),
    so the count is the degree of its square-free part. g (degree ``deg poly`` in u) is
    obtained exactly by evaluating univariate resultants at ``deg poly + 1`` integers and
    interpolating (Newton divided differences over Q), much faster than a bivariate
    resultant for large S.
    """
    n = poly.degree()
    if n <= 0:
        return 0
    xs = list(range(n + 1))
    ys = []
    for u in xs:
        ys.append(poly.resultant(flint.fmpq_poly([-u] + [0] * (S - 1) + [1])))
    # Newton divided differences
    coef = list(ys)
    for j in range(1, n + 1):
        for i in range(n, j - 1, -1):
            coef[i] = (coef[i] - coef[i - 1]) / (xs[i] - xs[i - j])
    g = flint.fmpq_poly([coef[n]])
    for i in range(n - 1, -1, -1):
        g = g * flint.fmpq_poly([-xs[i], 1]) + coef[i]
    if g.degree() <= 0:
        return 0
    sqfree = g / g.gcd(g.derivative())
    return int(sqfree.degree())


def _classes_at(values: Sequence, S: int, target: int, prec: int) -> list[list[int]] | None:
    """Connected components of "the balls of z^S overlap"; None unless their number equals
    the exact number ``target`` of distinct S-th powers (then each is one value)."""
    n = len(values)
    with working_precision(prec):
        powers = [z**S for z in values]
        parent = list(range(n))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for i in range(n):
            for j in range(i + 1, n):
                if powers[i].overlaps(powers[j]):
                    parent[find(i)] = find(j)
    comps: dict[int, list[int]] = {}
    for i in range(n):
        comps.setdefault(find(i), []).append(i)
    classes = sorted(comps.values())
    return classes if len(classes) == target else None


def power_classes(
    poly: flint.fmpq_poly, iso: RootIsolation, S: int
) -> tuple[RootIsolation, list[list[int]]]:
    """Group the distinct roots of ``poly`` by the value of ``z^S`` (certified).

    Roots with the same S-th power form (part of) an orbit under multiplication by the
    S-th roots of unity. The grouping is proved: the balls of ``z^S`` are computed with
    interval arithmetic; groups are the connected components of "balls overlap"; two
    components are certainly different values; and the number of distinct values is
    known exactly (:func:`_distinct_power_count`). When the counts agree, every
    component is a single value. Otherwise the precision is doubled.

    Args:
        poly: the polynomial (a root at 0 forms its own class).
        iso: its root isolation (recomputed at higher precision when needed, in which
            case the returned isolation is a new object whose root order may differ).
        S: a positive integer.

    Returns:
        ``(iso, classes)``: the (possibly refined) isolation and a list of classes, each a
        sorted list of root indices.

    >>> p = flint.fmpq_poly([-1, 0, 0, 0, 1])          # t^4 - 1: roots 1, -1, i, -i
    >>> iso, classes = power_classes(p, certified_roots(p), 2)
    >>> sorted(len(c) for c in classes)                 # {1, -1} and {i, -i}
    [2, 2]
    """
    if isinstance(S, bool) or not isinstance(S, (int, np.integer)) or S < 1:
        raise InputError(f"S must be a positive int; got {short_repr(S)}")
    S = check_positive_int(S, "S", maximum=10_000)
    n = len(iso)
    if S == 1 or n == 0:
        return iso, [[i] for i in range(n)]
    target = _distinct_power_count(poly, S)
    prec = iso.prec
    while True:
        classes = _classes_at(iso.values, S, target, prec)
        if classes is not None:
            return iso, classes
        prec *= 2
        if prec > _PRECISIONS[-1]:  # pragma: no cover
            raise NeuromanifoldError(
                f"could not certify which roots share their {S}-th power at {prec // 2} bits"
            )
        iso = certified_roots(poly, min_prec=prec)


def isolate_factors(
    factors: Sequence[tuple[flint.fmpq_poly, int]], powers: Sequence[int]
) -> tuple[RootIsolation, list[int], dict[int, list[list[int]]]]:
    """Isolate the roots of a product of distinct irreducible factors ``prod g_j^{e_j}``,
    keeping track of which factor owns each root, and group them by S-th powers.

    Args:
        factors: ``(g_j, e_j)`` with distinct irreducible ``g_j`` (so their root sets are
            disjoint and each root of g_j has multiplicity e_j in the product).
        powers: the values S for which :func:`power_classes`-style classes are needed.

    Returns:
        ``(iso, owner, classes)``: the isolation of the product's distinct roots (factor
        after factor), ``owner[i]`` = index of the factor of root i, and
        ``classes[S]`` = the certified classes of equal S-th powers.
    """
    product = flint.fmpq_poly([1])
    for g, e in factors:
        product *= g**e
    targets = {S: (_distinct_power_count(product, S) if S > 1 else None) for S in set(powers)}
    prec = _PRECISIONS[0]
    while True:
        values, mults, real, conj, owner = [], [], [], [], []
        for j, (g, e) in enumerate(factors):
            iso_j = certified_roots(g, min_prec=prec)
            off = len(values)
            values.extend(iso_j.values)
            mults.extend(m * e for m in iso_j.multiplicities)
            real.extend(iso_j.is_real)
            conj.extend(c + off for c in iso_j.conjugate)
            owner.extend([j] * len(iso_j))
        iso = RootIsolation(tuple(values), tuple(mults), tuple(real), tuple(conj), prec)
        classes: dict[int, list[list[int]]] = {}
        ok = True
        for S, target in targets.items():
            if S == 1:
                classes[S] = [[i] for i in range(len(values))]
                continue
            cl = _classes_at(values, S, target, prec)
            if cl is None:
                ok = False
                break
            classes[S] = cl
        if ok:
            return iso, owner, classes
        prec *= 2
        if prec > _PRECISIONS[-1]:  # pragma: no cover
            raise NeuromanifoldError("could not certify the grouping of roots by powers")


def real_irreducible_factors(poly: flint.fmpq_poly) -> tuple[float, list[tuple[np.ndarray, int]]]:
    """Split a rational polynomial into its real irreducible factors (certified roots).

    Args:
        poly: a nonzero ``flint.fmpq_poly``.

    Returns:
        ``(leading_coefficient, factors)`` where each factor is ``(coeffs, multiplicity)``
        with monic float coefficients (constant term first): ``t - r`` for a real root and
        ``t^2 - 2 Re(z) t + |z|^2`` for a conjugate pair ``z, conj(z)``. Roots are
        isolated with certified balls, so the factor *structure* is exact; coefficients
        are the balls' midpoints.

    >>> lc, facs = real_irreducible_factors(flint.fmpq_poly([2, 0, 1]))   # t^2 + 2
    >>> lc, [(f.round(6).tolist(), m) for f, m in facs]
    (1.0, [([2.0, 0.0, 1.0], 1)])
    """
    poly = _as_fmpq_poly(poly)
    iso = certified_roots(poly)
    lc = float(poly.coeffs()[-1])
    values = iso.as_complex()
    out = []
    for i in range(len(iso)):
        m = iso.multiplicities[i]
        if iso.is_real[i]:
            out.append((np.array([-values[i].real, 1.0]), m))
        elif i < iso.conjugate[i]:
            z = values[i]
            out.append((np.array([abs(z) ** 2, -2.0 * z.real, 1.0]), m))
    return lc, out
