"""Exact rational linear algebra on rows (python-flint) against sympy's exact matrices, on
random and adversarial (zero, repeated, dependent, empty) matrices."""

from fractions import Fraction

import flint
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.exact import (
    qmat,
    qrows,
    rational_combination,
    rational_matmul,
    rational_nullspace,
    rational_rank,
    rational_rref,
    rational_solve,
)


def random_rows(rng, r, c):
    """Small rationals with many exact dependencies: zero rows, repeated and combined rows."""
    rows = [
        [Fraction(int(x), int(rng.integers(1, 4))) for x in rng.integers(-2, 3, c)]
        for _ in range(r)
    ]
    for i in range(r):
        kind = rng.integers(4)
        if kind == 0 and i:
            s = Fraction(int(rng.integers(-2, 3)), 3)
            rows[i] = [s * x for x in rows[int(rng.integers(i))]]
        elif kind == 1 and i >= 2:
            a, b = rng.integers(i, size=2)
            rows[i] = [x + y for x, y in zip(rows[a], rows[b])]
        elif kind == 2:
            rows[i] = [Fraction(0)] * c
    return rows


def sym(rows, c):
    return sympy.Matrix(
        len(rows), c, [sympy.Rational(x.numerator, x.denominator) for row in rows for x in row]
    )


def as_fractions(rows):
    return [[Fraction(int(x.p), int(x.q)) for x in row] for row in rows]


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), r=st.integers(0, 6), c=st.integers(1, 6))
def test_rank_rref_nullspace_match_sympy(seed, r, c):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, r, c)
    S = sym(rows, c) if r else sympy.zeros(0, c)
    assert rational_rank(rows, c) == (S.rank() if r else 0)
    R, pivots = rational_rref(rows, c)
    if r:
        SR, spiv = S.rref()
        assert list(pivots) == list(spiv)
        assert sym(as_fractions(R), c) == SR[: len(spiv), :]
    else:
        assert (R, pivots) == ([], [])
    N = rational_nullspace(rows, c)
    assert len(N) == c - len(pivots)
    for v in N:  # a basis of the kernel, with the free coordinates as a unit vector
        assert all(
            sum((a * Fraction(int(x.p), int(x.q)) for a, x in zip(row, v)), Fraction(0)) == 0
            for row in rows
        )
    if N:
        assert rational_rank(N, c) == len(N)


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1), a=st.integers(0, 4), k=st.integers(0, 4), b=st.integers(1, 4)
)
def test_products_combinations_and_solve_match_sympy(seed, a, k, b):
    rng = np.random.default_rng(seed)
    A, B = random_rows(rng, a, k) if k else [[] for _ in range(a)], random_rows(rng, k, b)
    P = rational_matmul(A, B, k, b)
    if a:
        want = (sym(A, k) * sym(B, b)) if k else sympy.zeros(a, b)
        assert sym(as_fractions(P), b) == want
    else:
        assert P == []
    coefs = [Fraction(int(x), 5) for x in rng.integers(-3, 4, k)]
    comb = rational_combination(coefs, B, b)
    want = [sum((c * row[j] for c, row in zip(coefs, B)), Fraction(0)) for j in range(b)]
    assert as_fractions([comb]) == [want]
    # an invertible system: solve and multiply back
    n = b
    M = [[Fraction(int(x)) for x in row] for row in rng.integers(-3, 4, (n, n))]
    for i in range(n):
        M[i][i] += 10  # diagonally dominant: invertible
    X = rational_solve(M, B[:n] if k >= n else [[1] * b] * n, n, b)
    rhs = B[:n] if k >= n else [[Fraction(1)] * b] * n
    assert sym(M, n) * sym(as_fractions(X), b) == sym(rhs, b)


def test_conversions_and_errors():
    m = qmat([[0.5, Fraction(1, 3), 2, flint.fmpq(3, 7)]], 4)
    assert qrows(m) == [[flint.fmpq(1, 2), flint.fmpq(1, 3), flint.fmpq(2), flint.fmpq(3, 7)]]
    assert (qmat([], 3).nrows(), qmat([], 3).ncols()) == (0, 3)
    assert rational_rank([[1, 2]], 0) == 0 and rational_rank([], 3) == 0
    assert rational_nullspace([[0, 0]], 2) == [[1, 0], [0, 1]]
    assert rational_combination([], [], 3) == [0, 0, 0]
    with pytest.raises(InputError, match="every row must have 2 entries"):
        qmat([[1, 2], [3]], 2)
    with pytest.raises(InputError, match="finite real number"):
        qmat([["a", 1]], 2)
    with pytest.raises(InputError, match="finite real number"):
        rational_rank([[float("nan"), 1]], 2)
