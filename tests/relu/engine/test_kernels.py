"""The compiled float walk across a cell (relu/_walk.py): its outcomes meet their contract
on random and degenerate polyhedra (the engine checks them exactly anyway; here the
walk's own promises are tested, so a wrong kernel shows up as a failure, not as LPs)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu._engine.kernels import CROSS, MAX, NONE, ascent_kernel


def _polytope(rng, k, d, parallel=False):
    A = rng.standard_normal((k, d))
    if parallel and k > 2:  # repeated and opposite walls: degenerate vertices
        A[1] = A[0]
        A[2] = -A[0]
    A /= np.linalg.norm(A, axis=1)[:, None]
    c = rng.random(k) + 0.1  # the origin strictly inside
    return A, c


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 8),
    extra=st.integers(0, 30),
    finite_target=st.booleans(),
    parallel=st.booleans(),
)
def test_ascent_outcomes_meet_their_contract(seed, d, extra, finite_target, parallel):
    rng = np.random.default_rng(seed)
    A, c = _polytope(rng, d + 1 + extra, d, parallel)
    g = rng.standard_normal(d)
    x0 = np.zeros(d)
    target = float(rng.random()) if finite_target else np.inf
    code, x, last, W, lam = ascent_kernel(A, c, x0, g, target, 3 * d + 6)
    scale = 1e-9 * (1 + np.abs(x).max())
    assert np.all(A @ last <= c + scale)  # the walk stays in the cell
    if code == CROSS:
        assert np.all(np.isfinite(x)) and np.all(A @ x <= c + scale)
        assert g @ x > target if target < np.inf else g @ x > g @ last
    elif code == MAX:
        assert g @ x <= target + 1e-12 and np.all(lam >= 0) and len(W) == len(set(W))
        np.testing.assert_allclose(A[W].T @ lam, g, atol=1e-8 * np.linalg.norm(g))
        np.testing.assert_allclose(A[W] @ x, c[W], atol=scale)  # its walls are active
        # a certificate: no point of the cell beats x on g (LP duality, checked by LP)
        from scipy.optimize import linprog

        res = linprog(-g, A_ub=A, b_ub=c, bounds=[(None, None)] * d, method="highs")
        assert res.status == 0 and -res.fun <= g @ x + 1e-7 * (1 + abs(g @ x))
    else:
        assert code == NONE


def test_ascent_unbounded_direction_crosses_any_target():
    A = np.array([[1.0, 0.0]])  # x <= 1: unbounded along y
    code, x, *_ = ascent_kernel(A, np.ones(1), np.zeros(2), np.array([0.0, 1.0]), 1e6, 10)
    assert code == CROSS and x[1] > 1e6


def test_ascent_reaches_the_vertex_of_a_simplex():
    A = np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]])
    A /= np.linalg.norm(A, axis=1)[:, None]
    c = np.array([0.0, 0.0, 1.0 / np.sqrt(2)])
    code, x, last, W, lam = ascent_kernel(
        A, c, np.array([0.2, 0.2]), np.array([1.0, 0.1]), np.inf, 10
    )
    assert code == MAX and sorted(W) == [1, 2]
    np.testing.assert_allclose(x, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(last, x)


@pytest.mark.parametrize("max_iter", [0, 1])
def test_ascent_gives_up_within_its_step_budget(max_iter):
    A, c = _polytope(np.random.default_rng(0), 30, 6)
    code, x, last, W, lam = ascent_kernel(A, c, np.zeros(6), np.ones(6), np.inf, max_iter)
    assert code == NONE and W.size == 0 and np.all(A @ last <= c + 1e-12)


# -- the compiled sign kernel (float_signs, float_signs_at) ---------------------------------


def _exact_values(A, c, X):
    from fractions import Fraction

    return [
        [
            sum((Fraction(a) * Fraction(x) for a, x in zip(A[i], X[p])), Fraction(c[i]))
            for p in range(X.shape[0])
        ]
        for i in range(A.shape[0])
    ]


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 8),
    m=st.integers(0, 12),
    n=st.integers(1, 4),
    scale=st.sampled_from([1e-300, 1e-30, 1.0, 1e30, 1e250]),
    on_plane=st.booleans(),
)
def test_sign_kernel_never_contradicts_the_exact_sign(seed, d, m, n, scale, on_plane):
    from neuromanifold.relu._engine.cells import _sign_rel
    from neuromanifold.relu._engine.kernels import signs_kernel

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, d)) * scale
    X = rng.standard_normal((n, d))
    c = rng.standard_normal(m) * scale
    if on_plane and m:
        # adversarial rows at the first point: value exactly 0 (dyadic data), the rounding
        # error of a float dot product (either sign, tiny), three times the bound
        A = np.round(A / scale * 64) / 64 * scale
        X = np.round(X * 64) / 64
        c[0] = -float(sum(A[0, j] * X[0, j] for j in range(d)))
        if m > 1:
            A[1] = rng.standard_normal(d) * scale
            c[1] = -float(A[1] @ X[0])
        if m > 2:
            b2 = _sign_rel(d) * (np.abs(A[2]) @ np.abs(X[0]) + abs(c[2]))
            c[2] = -float(A[2] @ X[0]) + 3 * b2
    S, Z = signs_kernel(A, c, X, _sign_rel(d))
    assert S.shape == Z.shape == (m, n) and S.dtype == np.int8
    exact = _exact_values(A, c, X)
    for i in range(m):
        for p in range(n):
            e = (exact[i][p] > 0) - (exact[i][p] < 0)
            assert S[i, p] in (0, e)
            # it decides every value far beyond its rounding bound
            bound = _sign_rel(d) * (np.abs(A[i]) @ np.abs(X[p]) + abs(c[i]))
            if abs(float(exact[i][p])) > 2 * bound + 1e-300 and bound < 1e299:
                assert S[i, p] == e
            np.testing.assert_allclose(Z[i, p], float(exact[i][p]), rtol=0, atol=4 * bound + 1e-300)


def test_sign_kernel_never_trusts_clipped_or_non_finite_values():
    from neuromanifold.relu._engine.kernels import signs_kernel

    A = np.array([[1e300, 0.0], [1.0, 1.0], [np.nan, 1.0], [np.inf, 0.0]])
    S, _ = signs_kernel(A, np.array([0.0, 1.0, 0.0, 0.0]), np.array([[1.0, 1.0]]), 1e-13)
    assert S[:, 0].tolist() == [0, 1, 0, 0]


# -- the compiled recentring walk --------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 8),
    extra=st.integers(0, 20),
    parallel=st.booleans(),
)
def test_center_walk_deepens_the_ball_and_reports_its_radius(seed, d, extra, parallel):
    from neuromanifold.relu._engine.kernels import ball_radius, center_kernel

    rng = np.random.default_rng(seed)
    A, c = _polytope(rng, d + 1 + extra, d, parallel)
    A = A * rng.uniform(0.5, 4.0, (A.shape[0], 1))  # rows of any length
    x0 = np.zeros(d)
    r0 = float(np.min(c / np.linalg.norm(A, axis=1)))
    x, r = center_kernel(A, c, x0, r0, 1.0, d + 3)
    ref = float(np.clip(np.min((c - A @ x) / np.linalg.norm(A, axis=1)), 0.0, 1.0))
    assert r == pytest.approx(ref, rel=1e-12, abs=1e-15)
    assert r == pytest.approx(ball_radius(A, c, x, 1.0), rel=0, abs=0)
    assert r >= min(r0, 1.0) * (1 - 1e-6) - 1e-12  # never worse than the start
    assert np.all(A @ x < c)


def test_center_walk_reaches_the_chebyshev_centre_of_a_box():
    from neuromanifold.relu._engine.kernels import center_kernel

    A = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    c = np.array([3.0, 1.0, 2.0, 2.0])  # [-1, 3] x [-1, 1]: the largest ball has radius 1
    x, r = center_kernel(A, c, np.array([2.5, 0.5]), 0.5, 10.0, 5)
    assert r == pytest.approx(1.0) and abs(x[1]) < 1e-12 and -1e-12 <= x[0] - 0.0 <= 2.0 + 1e-12
    # the cap bounds the radius reported
    assert center_kernel(A, c, np.array([2.5, 0.5]), 0.5, 0.75, 5)[1] == pytest.approx(0.75)


# -- the compiled choice of the walk's start and the ball radius ------------------------------


def _reach_reference(An, slack, u):
    rate = An @ u
    up = rate > 0
    if not up.any():
        return np.full(slack.shape[1], np.inf)
    return np.clip((slack[up] / rate[up][:, None]).min(axis=0), 0.0, None)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 6),
    k=st.integers(0, 12),
    m=st.integers(1, 6),
    ties=st.booleans(),
)
def test_best_start_is_the_point_with_the_most_room(seed, d, k, m, ties):
    from neuromanifold.relu._engine.kernels import best_start

    rng = np.random.default_rng(seed)
    An = rng.standard_normal((k, d))
    An /= np.maximum(np.linalg.norm(An, axis=1), 1e-300)[:, None]
    slack = rng.random((k, m)) * (rng.random((k, m)) > 0.2)  # some points on a wall
    u = rng.standard_normal(d)
    dist = rng.random(m)
    if ties:
        slack[:, -1], dist[-1] = slack[:, 0], dist[0]  # the first of equal points wins
    ref = int(np.argmax(_reach_reference(An, slack, u) - dist))
    assert best_start(An, slack, u, dist) == ref


def test_ball_radius_matches_the_slack_formula_and_caps():
    from neuromanifold.relu._engine.kernels import ball_radius

    A = np.array([[2.0, 0.0], [0.0, -1.0], [-1.0, -1.0]])
    c = np.array([4.0, 1.0, 3.0])
    x = np.array([1.0, 0.5])
    ref = float(np.min((c - A @ x) / np.linalg.norm(A, axis=1)))
    assert ball_radius(A, c, x, 10.0) == pytest.approx(ref, rel=1e-15)
    assert ball_radius(A, c, x, 0.25) == 0.25
    assert ball_radius(A, c, np.array([5.0, 0.0]), 10.0) == 0.0  # outside: 0
    assert ball_radius(np.zeros((0, 2)), np.zeros(0), x, 0.5) == 0.5  # no wall: the cap
