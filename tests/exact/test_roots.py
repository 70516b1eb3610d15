"""Certified roots, root classes, rescaling lemma and absolute irreducibility
(neuromanifold.exact)."""

import math

import flint
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.exact import (
    absolute_factor_count,
    certified_roots,
    fmpq_matrix,
    power_classes,
    real_irreducible,
    real_irreducible_factors,
    rescaled_norms,
    rescaled_norms_exact,
    support_line,
    to_fmpq,
)
from neuromanifold.exact._roots import isolate_factors


@given(
    st.lists(st.integers(-4, 4), min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 3)), max_size=2),
)
def test_certified_roots_match_construction(real_roots, pairs):
    # prod (t - r) * prod ((t - a)^2 + b^2), with multiplicities from repeated entries
    p = flint.fmpq_poly([1])
    for r in real_roots:
        p *= flint.fmpq_poly([-r, 1])
    for a, b in pairs:
        p *= flint.fmpq_poly([a * a + b * b, -2 * a, 1])
    iso = certified_roots(p)
    assert sum(iso.multiplicities) == p.degree()
    reals = sorted(z.real for z, r in zip(iso.as_complex(), iso.is_real) if r)
    assert reals == pytest.approx(sorted(set(real_roots)))
    assert sum(iso.is_real) == len(set(real_roots))
    for i, j in enumerate(iso.conjugate):
        assert iso.conjugate[j] == i
        assert iso.as_complex()[j] == pytest.approx(np.conj(iso.as_complex()[i]))


def test_power_classes_orbits():
    # (t^3 - 2)(t - 5): the three cube roots of 2 form one class for S = 3
    p = flint.fmpq_poly([-2, 0, 0, 1]) * flint.fmpq_poly([-5, 1])
    iso, classes = power_classes(p, certified_roots(p), 3)
    assert sorted(len(c) for c in classes) == [1, 3]
    iso, classes = power_classes(p, iso, 2)
    assert len(classes) == 4  # no two roots share a square


def test_isolate_factors_tracks_owners():
    g1, g2 = flint.fmpq_poly([-1, 1]), flint.fmpq_poly([1, 1])  # t - 1, t + 1
    iso, owner, classes = isolate_factors([(g1, 2), (g2, 1)], [1, 2])
    assert owner == [0, 1] and iso.multiplicities == (2, 1)
    assert classes[2] == [[0, 1]]  # 1 and -1 have the same square


def test_real_irreducible_factors():
    lc, facs = real_irreducible_factors(flint.fmpq_poly([-6, 0, 2, 0, 3]) * 2)
    prod = np.array([lc])
    for f, m in facs:
        for _ in range(m):
            prod = np.convolve(prod, f)
    assert prod == pytest.approx([-12, 0, 4, 0, 6])
    assert sorted(len(f) for f, _ in facs) == [2, 2, 3]


@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=6), st.data())
def test_rescaled_norms_solve_the_lemma(norms, data):
    L = len(norms)
    deltas = np.array(data.draw(st.lists(st.floats(-50, 50), min_size=L - 1, max_size=L - 1)))
    t = rescaled_norms(np.array([norms]), deltas)[0]
    assert np.all(t > 0)
    assert np.diff(t) == pytest.approx(deltas, abs=1e-9 * max(1.0, t.max()))
    assert math.fsum(np.log(t)) == pytest.approx(math.fsum(np.log(norms)), abs=1e-11 * L)


def test_rescaled_norms_exact_agrees_with_float():
    n, d = [flint.fmpq(1, 3), 2, flint.fmpq(7, 5)], [flint.fmpq(-1, 2), 3]
    exact = rescaled_norms_exact(n, d)
    approx = rescaled_norms(np.array([[float(x) for x in n]]), np.array([float(x) for x in d]))[0]
    assert [float(x) for x in exact] == pytest.approx(approx, rel=1e-14)
    for x, y in zip(exact[1:], exact[:-1]):
        assert (x - y).contains(flint.arb(0)) is False


def test_absolute_factor_count():
    ctx = flint.fmpq_mpoly_ctx.get(("x", "y"), "lex")
    x, y = ctx.gens()
    assert absolute_factor_count(x * y - 3 * x + 1) == 1
    assert absolute_factor_count(x**2 + y**2 + 1) == 1
    assert absolute_factor_count(x**2 + y**2) == 2  # (x + iy)(x - iy)
    assert absolute_factor_count((x + 1) ** 2 - 2 * y**2) == 2  # splits over R
    assert absolute_factor_count(x**3 - 2 * y**3 + x * y + 1) == 1
    assert absolute_factor_count(x + 1) is None  # univariate: use roots


def test_support_line():
    assert support_line([(0, 0), (2, 1), (4, 2)]) == ((0, 0), (2, 1), [0, 1, 2])
    assert support_line([(0, 0), (1, 0), (0, 1)]) is None


def test_three_variables_by_plane_restriction():
    ctx = flint.fmpq_mpoly_ctx.get(("a", "b", "c"), "lex")
    a, b, c = ctx.gens()
    f = a * b + b * c + c * a + 1  # irreducible over C
    assert absolute_factor_count(f) == 1 and real_irreducible(f) is True
    # a restriction can only prove irreducibility: a product is never called irreducible
    g = (a + b + 1) * (a - c + 2)
    assert real_irreducible(g) is None


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: to_fmpq(float("nan")), "finite real number"),
        (lambda: to_fmpq("abc"), "finite real number"),
        (lambda: fmpq_matrix([1.0, 2.0]), "2D array"),
        (lambda: certified_roots([0, 0]), "nonzero polynomial"),
        (lambda: certified_roots(["a", 1]), "real numbers"),
        (lambda: certified_roots("t^2"), "fmpq_poly"),
        (
            lambda: power_classes(flint.fmpq_poly([1, 0, 1]), certified_roots([1, 0, 1]), 0),
            "positive int",
        ),
        (lambda: rescaled_norms([1.0, 2.0], [float("nan")]), "finite"),
        (lambda: rescaled_norms([1.0, -2.0], [1.0]), "positive finite squared norm"),
        (lambda: rescaled_norms("ab", [1.0]), "real numbers"),
        (lambda: support_line([(1,), (1, 2)]), "same length"),
        (lambda: real_irreducible("x"), "fmpq_mpoly"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_rescaled_norms_exact_takes_floats_exactly():
    t = rescaled_norms_exact([0.5, 1.5], [0.25])
    assert abs(float(t[1]) - float(t[0]) - 0.25) < 1e-15
    assert abs(float(t[0]) * float(t[1]) - 0.75) < 1e-15


def test_as_complex_refuses_roots_beyond_the_float_range():
    iso = certified_roots([28.0, 1.50669191e-307])  # the root -28 / 1.5e-307 overflows
    with pytest.raises(InputError, match="beyond the float64 range"):
        iso.as_complex()
    assert iso.values[0].real < -1e308  # the exact ball still holds it
