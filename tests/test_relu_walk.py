"""The compiled float walk across a cell (relu/_walk.py): its outcomes meet their contract
on random and degenerate polyhedra (the engine checks them exactly anyway; here the
walk's own promises are tested, so a wrong kernel shows up as a failure, not as LPs)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from neuromanifold.relu._walk import CROSS, MAX, NONE, ascent_kernel


def _polytope(rng, k, d, parallel=False):
    A = rng.standard_normal((k, d))
    if parallel and k > 2:   # repeated and opposite walls: degenerate vertices
        A[1] = A[0]
        A[2] = -A[0]
    A /= np.linalg.norm(A, axis=1)[:, None]
    c = rng.random(k) + 0.1   # the origin strictly inside
    return A, c


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 8), extra=st.integers(0, 30),
       finite_target=st.booleans(), parallel=st.booleans())
def test_ascent_outcomes_meet_their_contract(seed, d, extra, finite_target, parallel):
    rng = np.random.default_rng(seed)
    A, c = _polytope(rng, d + 1 + extra, d, parallel)
    g = rng.standard_normal(d)
    x0 = np.zeros(d)
    target = float(rng.random()) if finite_target else np.inf
    code, x, last, W, lam = ascent_kernel(A, c, x0, g, target, 3 * d + 6)
    scale = 1e-9 * (1 + np.abs(x).max())
    assert np.all(A @ last <= c + scale)   # the walk stays in the cell
    if code == CROSS:
        assert np.all(np.isfinite(x)) and np.all(A @ x <= c + scale)
        assert g @ x > target if target < np.inf else g @ x > g @ last
    elif code == MAX:
        assert g @ x <= target + 1e-12 and np.all(lam >= 0) and len(W) == len(set(W))
        np.testing.assert_allclose(A[W].T @ lam, g, atol=1e-8 * np.linalg.norm(g))
        np.testing.assert_allclose(A[W] @ x, c[W], atol=scale)   # its walls are active
        # a certificate: no point of the cell beats x on g (LP duality, checked by LP)
        from scipy.optimize import linprog
        res = linprog(-g, A_ub=A, b_ub=c, bounds=[(None, None)] * d, method="highs")
        assert res.status == 0 and -res.fun <= g @ x + 1e-7 * (1 + abs(g @ x))
    else:
        assert code == NONE


def test_ascent_unbounded_direction_crosses_any_target():
    A = np.array([[1.0, 0.0]])   # x <= 1: unbounded along y
    code, x, *_ = ascent_kernel(A, np.ones(1), np.zeros(2), np.array([0.0, 1.0]), 1e6, 10)
    assert code == CROSS and x[1] > 1e6


def test_ascent_reaches_the_vertex_of_a_simplex():
    A = np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]])
    A /= np.linalg.norm(A, axis=1)[:, None]
    c = np.array([0.0, 0.0, 1.0 / np.sqrt(2)])
    code, x, last, W, lam = ascent_kernel(A, c, np.array([0.2, 0.2]), np.array([1.0, 0.1]),
                                          np.inf, 10)
    assert code == MAX and sorted(W) == [1, 2]
    np.testing.assert_allclose(x, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(last, x)


@pytest.mark.parametrize("max_iter", [0, 1])
def test_ascent_gives_up_within_its_step_budget(max_iter):
    A, c = _polytope(np.random.default_rng(0), 30, 6)
    code, x, last, W, lam = ascent_kernel(A, c, np.zeros(6), np.ones(6), np.inf, max_iter)
    assert code == NONE and W.size == 0 and np.all(A @ last <= c + 1e-12)
