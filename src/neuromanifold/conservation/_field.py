"""Scalars and truncated Taylor jets for evaluating polynomial vector fields and their
Lie brackets at one point.

Three scalar fields, one code path:

* ``"modular"``: the prime field F_p (``p = 33554393 < 2**25``) on numpy ``int64``. Every
  value is the exact reduction of a rational computed from the rational point (a float
  is its exact binary rational), so a rank found over F_p is a certified *lower bound*
  on the rank over Q (a minor that is nonzero mod p is nonzero).
* ``"rational"``: exact rationals (python-flint ``fmpq`` in object arrays); ranks by
  ``fmpq_mat``. Exact, slower: for small problems and for checking the modular path.
* ``"float"``: float64; ranks by :func:`neuromanifold._tolerance.numerical_rank`.

A *jet* holds a value together with its derivatives along ``m`` nilpotent directions
``eta_1, ..., eta_m`` (``eta_i**2 = 0``): an array whose leading axis has ``2**m``
entries, entry ``S`` (a bit set) being the coefficient of ``prod_{i in S} eta_i``
(hyper-dual numbers). Directional derivatives of a polynomial program are read off
the coefficient of a new ``eta``; nested brackets use one ``eta`` per level.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import flint
import numpy as np

from .._tolerance import numerical_rank

__all__ = ["Field", "PRIME"]

#: relative agreement of two float terms below which their difference is taken as 0
CANCELLATION = 1e-12

#: the prime of the modular field: products of two residues stay below 2**50, so a
#: matrix product of inner size up to 2**13 fits in int64 before it is reduced
PRIME = 33554393
#: fallback primes when a denominator of the point is divisible by PRIME
_PRIMES = (33554393, 33554383, 33554371, 33554341)
#: most terms a modular matrix product may sum before reduction (2**63 / p**2)
MAX_INNER = 8192


class Field:
    """One of the three scalar fields (see the module docs)."""

    def __init__(self, kind: str, prime: int = PRIME):
        if kind not in ("modular", "rational", "float"):  # pragma: no cover - internal
            raise ValueError(kind)
        self.kind = kind
        self.p = prime if kind == "modular" else None

    def __repr__(self) -> str:
        return f"Field({self.kind!r}{'' if self.p is None else f', p={self.p}'})"

    # ------------------------------------------------------------- conversion
    @staticmethod
    def choose_prime(values: list[flint.fmpq]) -> int:
        """The first prime of the list dividing no denominator of ``values``."""
        for p in _PRIMES:
            if all(int(q.q) % p for q in values):
                return p
        raise ArithmeticError("every candidate prime divides a denominator")  # pragma: no cover

    def from_rationals(self, values: list[flint.fmpq]) -> np.ndarray:
        """A 1D array of the field's scalars from exact rationals."""
        if self.kind == "modular":
            p = self.p
            return np.array(
                [int(q.p) % p * pow(int(q.q), -1, p) % p for q in values], dtype=np.int64
            )
        if self.kind == "rational":
            return _objects(list(values), (len(values),))
        return np.array([float(Fraction(int(q.p), int(q.q))) for q in values], dtype=float)

    def const(self, array: Any) -> np.ndarray:
        """Small integers (masks, identity inputs) as the field's scalars."""
        a = np.asarray(array)
        if self.kind == "modular":
            return a.astype(np.int64) % self.p
        if self.kind == "rational":
            return _objects([flint.fmpq(int(x)) for x in a.ravel()], a.shape)
        return a.astype(float)

    def random(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Random scalars: uniform residues (modular), integers in [-2**15, 2**15] without
        0 (rational), or standard normals (float)."""
        if self.kind == "modular":
            return rng.integers(1, self.p, size=shape, dtype=np.int64)
        if self.kind == "rational":
            v = rng.integers(1, 2**15 + 1, size=shape) * rng.choice([-1, 1], size=shape)
            return _objects([flint.fmpq(int(x)) for x in v.ravel()], shape)
        return rng.standard_normal(shape)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        """An array of zeros of the field."""
        if self.kind == "modular":
            return np.zeros(shape, dtype=np.int64)
        if self.kind == "rational":
            out = np.empty(shape, dtype=object)
            out.fill(flint.fmpq(0))
            return out
        return np.zeros(shape)

    def reduce(self, x: np.ndarray) -> np.ndarray:
        """``x`` reduced into the field's representation (mod p for the modular field)."""
        return x % self.p if self.kind == "modular" else x

    # ------------------------------------------------------------- linear algebra
    def rank(self, rows: np.ndarray, tol: float) -> tuple[int, np.ndarray, tuple]:
        """``(rank, basis rows, gap)`` of the row vectors ``rows`` (shape ``(n, D)``).

        The basis rows span the same space (reduced echelon rows for the exact fields,
        the input rows for floats). ``gap`` is ``(smallest counted, largest dropped)``
        relative singular values for floats, ``(None, None)`` otherwise.
        """
        n, D = rows.shape
        if n == 0 or D == 0:
            return 0, rows[:0], (None, None)
        if self.kind == "modular":
            M = flint.nmod_mat(rows.tolist(), self.p)
            R, r = M.rref()
            basis = np.array(
                [[int(x) for x in row] for row in R.tolist()[:r]], dtype=np.int64
            ).reshape(r, D)
            return int(r), basis, (None, None)
        if self.kind == "rational":
            M = flint.fmpq_mat(
                n, D, [x if type(x) is flint.fmpq else flint.fmpq(x) for x in rows.ravel()]
            )
            R, r = M.rref()
            basis = np.empty((r, D), dtype=object)
            for i, row in enumerate(R.tolist()[:r]):
                basis[i, :] = row
            return int(r), basis, (None, None)
        r, smallest, dropped = numerical_rank(rows.T, tol)
        return r, rows, (smallest, dropped)

    def dot_is_zero(self, a: np.ndarray, b: np.ndarray, tol: float) -> bool:
        """Whether ``a . b == 0`` (relative to ``|a| |b|`` for floats)."""
        d = self.reduce(np.sum(self.reduce(a * b)))
        if self.kind == "float":
            scale = float(np.linalg.norm(a) * np.linalg.norm(b))
            return abs(float(d)) <= max(tol, 1e-12) * scale
        return d == 0

    # ------------------------------------------------------------- jets
    def jet_mul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Elementwise product of two jets (leading axis ``2**m``, broadcasting)."""
        return self._jet_product(a, b, np.multiply)

    def jet_matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Matrix product of two jets of matrices (leading axis ``2**m``)."""
        return self._jet_product(a, b, np.matmul)

    def _jet_product(self, a: np.ndarray, b: np.ndarray, op) -> np.ndarray:
        n = a.shape[0]
        if b.shape[0] != n:  # pragma: no cover - internal
            raise ValueError("jets of different orders")
        out = None
        for S in range(n):
            acc = None
            T = S
            while True:  # every subset T of S
                term = self.reduce(op(a[T], b[S ^ T]))
                acc = term if acc is None else acc + term
                if T == 0:
                    break
                T = (T - 1) & S
            acc = self.reduce(acc)
            if out is None:
                out = self.zeros((n,) + acc.shape)
            out[S] = acc
        return out

    def const_mul(self, c: np.ndarray, a: np.ndarray) -> np.ndarray:
        """A constant (no jet axis) times a jet, elementwise."""
        return self.reduce(c[None] * a)

    def const_matmul(self, c: np.ndarray, a: np.ndarray, *, left: bool = True) -> np.ndarray:
        """``c @ a`` (``left``) or ``a @ c`` for a constant matrix ``c`` and a jet ``a``."""
        return self.reduce(np.matmul(c[None], a) if left else np.matmul(a, c[None]))

    @staticmethod
    def lift(a: np.ndarray) -> np.ndarray:
        """A jet in ``m`` directions seen as one in ``m + 1`` (zero new coefficients)."""
        out = np.zeros((2 * a.shape[0],) + a.shape[1:], dtype=a.dtype)
        if a.dtype == object:
            out.fill(flint.fmpq(0))
        out[: a.shape[0]] = a
        return out

    def with_direction(self, z: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``z + eta v`` for a new direction ``eta`` (``z``, ``v`` jets in ``m`` directions)."""
        out = self.lift(z)
        out[z.shape[0] :] = v
        return out

    @staticmethod
    def direction_part(a: np.ndarray) -> np.ndarray:
        """The coefficient of the newest direction ``eta`` (a jet in one direction less)."""
        return a[a.shape[0] // 2 :]

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a - b`` in the field. In floats, an entry where ``a`` and ``b`` agree to
        :data:`CANCELLATION` relative to the larger of them is set to 0: a bracket whose
        two terms cancel is zero, and its rounding residue (about 1e-17 on terms of size
        1) would otherwise count as a new direction once the rank normalizes its columns."""
        if self.kind == "float":
            d = a - b
            return np.where(np.abs(d) <= CANCELLATION * np.maximum(np.abs(a), np.abs(b)), 0.0, d)
        return self.reduce(a - b)


def _objects(values: list, shape: tuple[int, ...]) -> np.ndarray:
    """An object array of ``shape`` holding ``values`` (flat, C order)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)
