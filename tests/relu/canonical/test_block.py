"""The always-active block (relu._canonical.block): every route that picks an orientation
of the crossing neurons returns the same orientation from every carried starting one (the
canonical form's invariance), a carried one, and the enumeration's choice where the rule is
the same; the canonical rows from the analytic center agree with the extreme rays on
whether the cone spans, and depend on the subspace alone."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu._canonical import block
from neuromanifold.relu._canonical.block import (
    BlockNotCovered,
    TurningProblem,
    _by_bounds,
    _by_enumeration,
    _by_independent_rows,
    _by_independent_wedges,
    _by_split_projections,
    _center_rows,
    _key,
    _pick,
    _unit_rays,
    carried,
    choose_turned,
)

TOL = 1e-9


def problem(L0, Wc, Ac, against, m, tol, ref):
    return TurningProblem(L0=L0, Wc=Wc, Ac=Ac, against=against, m=m, tol=tol, ref=ref)


def planted(rng, n3, n1, nc, m):
    """A block instance in the reference orientation: outgoing weights, rows, and the
    linear part ``L_ref`` of the reference orientation, built so that a random orientation
    ``T*`` is carried (its linear part has ``r* <= m`` nonnegative rows)."""
    Wc = rng.standard_normal((n3, nc))
    Ac = rng.standard_normal((nc, n1))
    r = int(rng.integers(0, m + 1))
    star = rng.random(nc) < 0.5
    L_star = rng.standard_normal((n3, r)) @ np.abs(rng.standard_normal((r, n1)))
    return Wc, Ac, L_star - Wc[:, star] @ Ac[star]


def linear_part(L_ref, Wc, Ac, bits):
    return L_ref + Wc[:, bits] @ Ac[bits]


def carried_orientations(L_ref, Wc, Ac, m, ref):
    nc = Ac.shape[0]
    out = []
    for c in itertools.product([False, True], repeat=nc):
        bits = np.array(c, dtype=bool)
        if carried(linear_part(L_ref, Wc, Ac, bits), m, TOL, ref):
            out.append(bits)
    return out


def planted_orbit(seed, shape):
    """A planted instance of ``shape = (n3, n1, nc, m)``, its reference scale, every carried
    orientation (the orbit) and the brute force's choice among them."""
    rng = np.random.default_rng(seed)
    n3, n1, nc, m = shape
    Wc, Ac, L_ref = planted(rng, n3, n1, nc, m)
    ref = float(np.sum(np.abs(Wc)) * np.max(np.abs(Ac)))
    orbit = carried_orientations(L_ref, Wc, Ac, m, ref)
    return Wc, Ac, L_ref, m, ref, orbit, tuple(min(orbit, key=_key))


def chosen_from(route, L_ref, Wc, Ac, bits, m, ref):
    """The final orientation (rows against the reference) that ``route`` picks when the
    network is now in orientation ``bits`` (``None`` when the route does not certify)."""
    rows = np.where(bits[:, None], -Ac, Ac)  # the rows as they are now
    flip = route(problem(linear_part(L_ref, Wc, Ac, bits), Wc, rows, bits.copy(), m, TOL, ref))
    return None if flip is None else bits ^ flip


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    shape=st.sampled_from(
        [(4, 8, 5, 2), (3, 6, 6, 2), (4, 3, 7, 2), (8, 6, 10, 1), (6, 5, 9, 2), (7, 4, 9, 1)]
    ),
)
def test_every_route_picks_one_orientation_per_orbit(seed, shape):
    """From every carried orientation (the orbit's points), each route returns the same
    carried orientation; enumeration and branch and bound return the fewest rows against
    the reference (ties by the rows' order), the brute-force ground truth."""
    rng = np.random.default_rng(seed)
    n3, n1, nc, m = shape
    Wc, Ac, L_ref = planted(rng, n3, n1, nc, m)
    ref = float(np.sum(np.abs(Wc)) * np.max(np.abs(Ac)))
    orbit = carried_orientations(L_ref, Wc, Ac, m, ref)
    assert orbit
    best = min(orbit, key=_key)
    routes = [_by_enumeration, _by_bounds]
    if nc <= n1:
        routes.append(_by_independent_rows)
    for route in routes:
        got = set()
        for bits in orbit:
            final = chosen_from(route, L_ref, Wc, Ac, bits, m, ref)
            if final is None:  # not certified here: the branch and bound decides instead
                got.add(None)
                continue
            assert carried(linear_part(L_ref, Wc, Ac, final), m, TOL, ref)
            got.add(tuple(final))
        assert len(got) == 1, (route.__name__, got)
        if route is not _by_independent_rows:
            assert got == {tuple(best)}, route.__name__


def test_the_branch_and_bound_refuses_past_its_budget(monkeypatch):
    rng = np.random.default_rng(1)
    Wc, Ac, L_ref = planted(rng, 10, 4, 20, 2)
    monkeypatch.setattr(block, "MAX_NODES", 50)
    with pytest.raises(BlockNotCovered, match="not decided within 50 branches"):
        choose_turned(problem(L_ref, Wc, Ac, np.zeros(20, dtype=bool), 2, TOL, 1.0))


def test_a_cut_never_drops_a_carried_orientation():
    """The cuts keep every orientation of rank at most m: the branch and bound's choice is
    the brute force's, on blocks where projections cut from the root."""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        Wc, Ac, L_ref = planted(rng, 8, 6, 10, 1)
        ref = 1.0
        truth = {tuple(b) for b in carried_orientations(L_ref, Wc, Ac, 1, ref)}
        got = tuple(_by_bounds(problem(L_ref, Wc, Ac, np.zeros(10, dtype=bool), 1, TOL, ref)))
        assert got in truth
        assert got == tuple(min((np.array(t) for t in truth), key=_key))


def _orthonormal(rng, V):
    return np.linalg.qr(V.T)[0].T


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n1=st.integers(3, 7),
    k=st.integers(1, 3),
    positive=st.booleans(),
)
def test_center_rows_agree_with_the_extreme_rays_on_whether_the_cone_spans(seed, n1, k, positive):
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((k, n1))
    if positive:
        V = np.abs(V)
        V[:, rng.random(n1) < 0.3] = 0.0  # the cone may lie in a face of the orthant
    if np.linalg.matrix_rank(V) < k:
        return
    B = _orthonormal(rng, V)
    rays = _pick(_unit_rays(B), k)
    rows = _center_rows(B)
    assert (len(rays) == k) == (rows is not None)
    if rows is not None:
        assert rows.shape == (k, n1) and np.all(rows >= 0)
        assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
        assert np.linalg.matrix_rank(rows, tol=1e-9) == k
        assert np.allclose(rows - (rows @ B.T) @ B, 0.0, atol=1e-9)  # inside span(B)


def test_center_rows_depend_on_the_subspace_alone():
    rng = np.random.default_rng(3)
    n1, k = 40, 5  # C(40, 4) > MAX_SUBSETS: the analytic-center route
    V = np.abs(rng.standard_normal((k, n1)))
    B = _orthonormal(rng, V)
    R = np.linalg.qr(rng.standard_normal((k, k)))[0]
    a, b = block.block_rows(V, TOL), block.block_rows(R @ B * 3.0, TOL)
    assert a.shape == (k, n1) and np.allclose(a, b, atol=1e-9)
    assert np.all(a >= 0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    shape=st.sampled_from(
        [(6, 4, 9, 1), (5, 3, 8, 1), (8, 5, 10, 2), (4, 6, 8, 1), (7, 4, 10, 2), (10, 3, 9, 1)]
    ),
)
def test_the_wedge_route_is_the_brute_force_choice(seed, shape):
    """Dependent crossing rows (more than n1 of them): where the wedge products certify, the
    route returns, from every carried orientation, the brute force's choice."""
    Wc, Ac, L_ref, m, ref, orbit, best = planted_orbit(seed, shape)
    for bits in orbit:
        final = chosen_from(_by_independent_wedges, L_ref, Wc, Ac, bits, m, ref)
        assert final is None or tuple(final) == best


def test_the_wedge_route_certifies_dependent_rows():
    """63 crossing rows in R^32 with one neuron for the block (the shape of a trained
    64-32-64-10 network): the branch and bound is never needed."""
    rng = np.random.default_rng(3)
    Wc, Ac = rng.standard_normal((10, 63)), rng.standard_normal((63, 32))
    L0 = np.zeros((10, 32))
    ref = float(np.sum(np.abs(Wc)) * np.max(np.abs(Ac)))
    against = rng.random(63) < 0.5
    flip = _by_independent_wedges(problem(L0, Wc, Ac, against, 1, TOL, ref))
    assert flip is not None and not flip.any()  # no single crossing row is sign-definite
    # a nonnegative row can carry the block alone: turning it is the choice when its row
    # is against the reference
    Ac[5] = np.abs(Ac[5])
    against[:] = False
    against[5] = True
    flip = _by_independent_wedges(problem(L0, Wc, Ac, against, 1, TOL, ref))
    assert np.flatnonzero(flip).tolist() == [5]


def test_a_cancellation_is_never_missed():
    """Two crossing neurons with parallel outgoing weights turn together at rank 1: their
    wedge tensor vanishes, so the route does not certify, and the brute force decides."""
    rng = np.random.default_rng(4)
    Wc, Ac = rng.standard_normal((5, 8)), rng.standard_normal((8, 3))
    Wc[:, 1] = 2.0 * Wc[:, 0]
    Ac[1] = np.abs(rng.standard_normal(3)) - 0.5 * Ac[0]  # M_0 + M_1 = w_0 (a_0 + 2 a_1)^T
    L0 = np.zeros((5, 3))
    assert _by_independent_wedges(problem(L0, Wc, Ac, np.zeros(8, dtype=bool), 1, TOL, 1.0)) is None


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    shape=st.sampled_from(
        [(6, 5, 10, 1), (5, 6, 9, 2), (7, 5, 12, 2), (8, 4, 11, 1), (6, 8, 11, 3), (5, 9, 12, 2)]
    ),
)
def test_the_split_route_is_the_brute_force_choice(seed, shape):
    """Dependent crossing rows split into two sides that projections annihilate in turn:
    from every carried orientation, including the planted one far from it, the route
    returns the brute force's choice (it always applies at these shapes)."""
    Wc, Ac, L_ref, m, ref, orbit, best = planted_orbit(seed, shape)
    for bits in orbit:
        assert tuple(chosen_from(_by_split_projections, L_ref, Wc, Ac, bits, m, ref)) == best


def test_the_split_route_finds_a_cancellation_of_many_neurons():
    """Six crossing neurons whose terms cancel down to rank 1 (a SUBSET-SUM-like
    coincidence, m = 1): the route lists that orientation among the carried ones, so a
    reference that prefers it gets it."""
    rng = np.random.default_rng(5)
    n3, n1, nc = 6, 6, 14
    Wc, Ac = rng.standard_normal((n3, nc)), rng.standard_normal((nc, n1))
    far = np.zeros(nc, dtype=bool)
    far[[1, 3, 4, 8, 10, 12]] = True
    # parallel outgoing weights w_j = c_j u: the six terms sum to u (sum c_j a_j)^T, made
    # a nonnegative rank-one matrix through the last row
    c = rng.standard_normal(6)
    Wc[:, far] = rng.standard_normal((n3, 1)) * c
    Ac[12] = (np.abs(rng.standard_normal(n1)) - c[:5] @ Ac[far][:5]) / c[5]
    L_ref = np.zeros((n3, n1))
    ref = float(np.sum(np.abs(Wc)) * np.max(np.abs(Ac)))
    assert carried(linear_part(L_ref, Wc, Ac, far), 1, TOL, ref)
    flip = _by_split_projections(problem(L_ref, Wc, Ac, far.copy(), 1, TOL, ref))
    assert flip is not None and np.array_equal(flip, far)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_the_orientation_question_contains_subset_sum(m):
    """The reduction of the module docs: rows ``a_0 = (-t, -1, 0, ...)`` and
    ``a_j = (s_j, -1, 0, ...)`` with outgoing weights ``e_1`` and ``L = diag(0, 1, ..., 1)``;
    the carried orientations are the empty one and ``{0} + R`` for the subsets ``R`` of the
    ``s_j`` that sum to ``t``."""
    s, t = [3.0, 5.0, 7.0, 11.0, 13.0], 18.0
    n = m + 1
    Ac = np.zeros((len(s) + 1, n))
    Ac[:, 0], Ac[:, 1] = [-t] + s, -1.0
    Wc = np.zeros((n, len(s) + 1))
    Wc[0] = 1.0
    L = np.diag([0.0] + [1.0] * m)
    got = {tuple(np.flatnonzero(b)) for b in carried_orientations(L, Wc, Ac, m, 1.0)}
    subsets = {
        (0,) + tuple(1 + j for j in R)
        for r in range(len(s) + 1)
        for R in itertools.combinations(range(len(s)), r)
        if sum(s[j] for j in R) == t
    }
    assert subsets == {(0, 2, 5), (0, 3, 4)}  # 5 + 13 and 7 + 11
    assert got == {()} | subsets


@pytest.mark.parametrize("scale", [1e-160, 1e-80, 1e150])
def test_the_split_route_holds_at_extreme_scales(scale):
    """The determinants are taken of sums brought to size about 1 by a power of two: at
    1e-160 their k-th powers underflowed to 0 and an exactly singular sum was 'proved'
    of full rank, so orientations were missed (found by review)."""
    for seed in range(3):
        Wc, Ac, L_ref, m, ref, orbit, best = planted_orbit(seed, (10, 10, 14, 3))
        Wc, L_ref, ref = Wc * scale, L_ref * scale, ref * scale
        orbit = carried_orientations(L_ref, Wc, Ac, m, ref)
        best = tuple(min(orbit, key=_key))
        for bits in orbit[:8]:
            assert tuple(chosen_from(_by_split_projections, L_ref, Wc, Ac, bits, m, ref)) == best
