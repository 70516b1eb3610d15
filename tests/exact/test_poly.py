"""Exact rational polynomials (python-flint) against sympy: values, gradients and printing of
random polynomials of degree <= 3 at random rational points."""

from fractions import Fraction

import flint
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.exact import poly_gradient, poly_to_sympy, poly_value, polynomial_ring


def random_poly(rng, R, nvars, terms):
    X = R.gens()
    p = R.constant(0)
    for _ in range(terms):
        t = R.constant(flint.fmpq(int(rng.integers(-5, 6)), int(rng.integers(1, 4))))
        for _ in range(int(rng.integers(0, 4))):
            t = t * X[int(rng.integers(nvars))]
        p = p + t
    return p


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), nvars=st.integers(1, 5), terms=st.integers(0, 6))
def test_value_gradient_and_printing_match_sympy(seed, nvars, terms):
    rng = np.random.default_rng(seed)
    R = polynomial_ring(nvars)
    p = random_poly(rng, R, nvars, terms)
    syms = sympy.symbols(f"y0:{nvars}")
    e = poly_to_sympy(p, syms)
    x = [
        Fraction(int(a), int(b))
        for a, b in zip(rng.integers(-4, 5, nvars), rng.integers(1, 5, nvars))
    ]
    sub = {s: sympy.Rational(v.numerator, v.denominator) for s, v in zip(syms, x)}
    val = poly_value(p, x)
    assert sympy.Rational(int(val.p), int(val.q)) == e.subs(sub)
    g = poly_gradient(p, x)
    assert len(g) == nvars
    for s, gi in zip(syms, g):
        assert sympy.Rational(int(gi.p), int(gi.q)) == sympy.diff(e, s).subs(sub)
    # floats are exact binary rationals
    xf = [float(v) for v in x]
    assert float(poly_value(p, xf)) == pytest.approx(
        float(e.subs(dict(zip(syms, xf)))), rel=1e-9, abs=1e-9
    )


def test_errors():
    with pytest.raises(InputError, match="nvars >= 1"):
        polynomial_ring(0)
    with pytest.raises(InputError, match="nvars >= 1"):
        polynomial_ring(True)
    x, y = polynomial_ring(2).gens()
    with pytest.raises(InputError, match="2 coordinates"):
        poly_value(x * y, [1])
    with pytest.raises(InputError, match="2 coordinates"):
        poly_gradient(x * y, [1, 2, 3])
    with pytest.raises(InputError, match="finite real number"):
        poly_value(x * y, ["a", 1])
    assert poly_to_sympy(x - x, sympy.symbols("a b")) == 0
