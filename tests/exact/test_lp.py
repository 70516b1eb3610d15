"""The exact rational LP helpers agree with HiGHS and certify what they claim."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from neuromanifold import ComputationLimitError, InputError
from neuromanifold.exact import to_fmpq
from neuromanifold.exact._lp import (
    dot,
    exact_lp_max,
    motzkin_certificate,
    strict_interior_point,
    strictly_satisfies,
)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 4), m=st.integers(0, 8), k=st.integers(0, 2))
def test_exact_lp_matches_highs(seed, n, m, k):
    rng = np.random.default_rng(seed)
    G = rng.integers(-3, 4, (m, n)).astype(float)
    h = rng.integers(-6, 4, m).astype(float)
    G = np.vstack([G, np.eye(n), -np.eye(n)])  # a box keeps the optimum finite
    h = np.concatenate([h, 5 * np.ones(2 * n)])
    E = rng.integers(-3, 4, (k, n)).astype(float)
    e = rng.integers(-3, 4, k).astype(float)
    g = rng.integers(-2, 3, n).astype(float)
    ref = linprog(
        -g, A_ub=G, b_ub=h, A_eq=E if k else None, b_eq=e if k else None, bounds=[(None, None)] * n
    )
    status, v, val = exact_lp_max(g, G, h, E, e)
    if ref.status == 2:
        assert status == "infeasible"
    else:
        assert status == "optimal"
        assert float(val) == pytest.approx(-ref.fun, abs=1e-9)
        vq = [to_fmpq(x) for x in v]  # the exact optimum is exactly feasible
        assert all(dot([to_fmpq(a) for a in row], vq) <= to_fmpq(b) for row, b in zip(G, h))
        assert all(dot([to_fmpq(a) for a in row], vq) == to_fmpq(b) for row, b in zip(E, e))


def test_exact_lp_unbounded():
    assert exact_lp_max([1.0], [[-1.0]], [0.0])[0] == "unbounded"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 3), m=st.integers(1, 7))
def test_strict_point_or_certificate(seed, n, m):
    rng = np.random.default_rng(seed)
    A = rng.integers(-2, 3, (m, n)).astype(float)
    c = rng.integers(-2, 3, m).astype(float)
    p = strict_interior_point(A, c)
    if p is not None:
        assert strictly_satisfies(A, c, p)
    else:
        # then an exact Motzkin certificate exists; HiGHS duals of max s: A x + s <= c
        # are a usable hint
        res = linprog(
            np.r_[np.zeros(n), -1.0],
            A_ub=np.hstack([A, np.ones((m, 1))]),
            b_ub=c,
            bounds=[(None, None)] * n + [(None, 1.0)],
        )
        y = -res.ineqlin.marginals
        cert = motzkin_certificate(A, c, y)
        assert cert is not None
        yq, _ = cert
        assert all(v >= 0 for v in yq) and any(v > 0 for v in yq)
        for j in range(n):
            assert sum(yq[i] * to_fmpq(A[i, j]) for i in range(m)) == 0
        assert sum(yq[i] * to_fmpq(c[i]) for i in range(m)) <= 0


def test_certificate_rejects_feasible_systems():
    # {x < 1, -x < 0} is non-empty: no multiplier vector may certify emptiness
    assert motzkin_certificate([[1.0], [-1.0]], [1.0, 0.0], [1.0, 1.0]) is None


def test_equations():
    # {x + y = 1, x < 0, y < 0} is empty; {x + y = 1, -x < 0, -y < 0} is not
    assert strict_interior_point([[1, 0], [0, 1]], [0, 0], [[1, 1]], [1]) is None
    p = strict_interior_point([[-1, 0], [0, -1]], [0, 0], [[1, 1]], [1])
    assert strictly_satisfies([[-1, 0], [0, -1]], [0, 0], p, [[1, 1]], [1])
    cert = motzkin_certificate([[1, 0], [0, 1]], [0, 0], [1.0, 1.0], [[1, 1]], [1], [-1.0])
    assert cert is not None


def test_time_limit_stops_the_simplex_before_a_pivot():
    rng = np.random.default_rng(0)
    G = rng.integers(-9, 10, (30, 12)).tolist()
    with pytest.raises(ComputationLimitError, match="exact simplex method stopped"):
        exact_lp_max([1] * 12, G, [1] * 30, time_limit=1e-9)
    with pytest.raises(ComputationLimitError):
        strict_interior_point(G, [1] * 30, time_limit=1e-9)
    # a limit that is not reached changes nothing
    assert exact_lp_max([1] * 12, G, [1] * 30, time_limit=60) == exact_lp_max([1] * 12, G, [1] * 30)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "1", True])
def test_a_bad_time_limit_is_an_input_error(bad):
    with pytest.raises(InputError, match="time_limit"):
        exact_lp_max([1], [[1]], [1], time_limit=bad)
