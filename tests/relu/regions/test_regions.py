"""Region enumeration: counts, completeness against a grid and a brute force, exact maps."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import ParameterError
from neuromanifold.exact import fmpq_to_fraction
from neuromanifold.exact._lp import strictly_satisfies
from neuromanifold.relu import ReLUNet, as_domain, forward, iter_regions, regions
from neuromanifold.relu._engine import lp as relu_lp
from neuromanifold.relu._engine.cells import (
    Engine,
    ExactNet,
    exact_forward,
    initial_cell,
    iter_cells,
    refine_stage,
)
from tests.support.relu import brute_force_patterns, dyadic_net, flat_pattern


@settings(max_examples=20, deadline=None)
@given(d=st.integers(1, 3), n=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_zaslavsky_count_one_hidden_layer(d, n, seed):
    # Gaussian hyperplanes are in general position with probability one
    p = ReLUNet([d, n, 1]).random_params(seed)
    R = regions(p)
    assert R.num_regions == sum(comb(n, i) for i in range(d + 1))
    assert R.certified
    assert len({flat_pattern(r) for r in R}) == R.num_regions


def _grid_patterns(p, lo, hi, k=241):
    g = np.linspace(lo, hi, k)
    X = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    H, pats, clear = X, [], np.ones(len(X), bool)
    for W, b in p[:-1]:
        Z = H @ W.T + b
        pats.append(Z > 0)
        clear &= np.all(np.abs(Z) > 1e-9, axis=1)
        H = np.maximum(Z, 0)
    return X[clear], np.hstack(pats)[clear]


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6), widths=st.sampled_from([[2, 4, 3, 1], [2, 5, 1], [2, 3, 3, 3, 2]])
)
def test_dense_grid_finds_no_missed_pattern_and_maps_match(seed, widths):
    p = ReLUNet(widths).random_params(seed)
    R = regions(p, domain=(-3, 3))
    by_pattern = {flat_pattern(r): r for r in R}
    X, pats = _grid_patterns(p, -3, 3)
    Y = forward(p, X)
    keys, inverse = np.unique(pats, axis=0, return_inverse=True)
    for i, key in enumerate(keys):
        key = tuple(bool(v) for v in key)
        assert key in by_pattern, f"pattern {key} at {X[inverse == i][0]} missed"
        sel = inverse == i
        np.testing.assert_allclose(by_pattern[key].evaluate(X[sel]), Y[sel], atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), domain=st.sampled_from([None, "orthant", (-2, 1)]))
def test_points_are_certified_and_maps_are_exact(seed, domain):
    widths = [2, 3, 3, 2]
    p = ReLUNet(widths).random_params(seed)
    R = regions(p, domain=domain)
    net = ExactNet(p)
    for r in R:
        x = r.point_exact
        # the interior point satisfies the region's inequalities and the domain's strictly
        assert R.domain.contains(r.point[None, :])[0]
        out, pre = exact_forward(net, x)
        for z, mask in zip(pre, r.pattern):  # the pattern holds strictly at the point
            for zi, active in zip(z, mask):
                assert (zi > 0) == bool(active) and (zi != 0 or not active)
        for o in range(widths[-1]):  # exact affine map == exact forward at the point
            val = sum(r.linear[o, j] * x[j] for j in range(2)) + r.offset[o]
            assert isinstance(val, Fraction) and val == fmpq_to_fraction(out[o])
        assert r.margin > 0


def test_matches_brute_force_on_degenerate_dyadic_nets():
    """Integer-like weights produce dead neurons, repeated and parallel hyperplanes and
    constant pre-activations; the enumeration must equal trying all 2^n patterns exactly."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(40):
        d = int(rng.integers(1, 3))
        widths = [d, int(rng.integers(1, 4)), int(rng.integers(1, 3)), 1]
        p = dyadic_net(rng, widths)
        for domain in (None, "orthant", (-1, 1)):
            R = regions(p, domain)
            assert {flat_pattern(r) for r in R} == brute_force_patterns(p, domain)
            checked += 1
    assert checked == 120


def test_duplicated_neurons_give_no_sliver_regions():
    W = np.array([[1.0, 2.0], [1.0, 2.0], [-1.0, -2.0], [2.0, 4.0]])  # one hyperplane 4 times
    b = np.array([0.5, 0.5, -0.5, 1.0])
    p = [(W, b), (np.ones((1, 4)), np.zeros(1))]
    R = regions(p)
    assert R.num_regions == 2
    assert sorted(flat_pattern(r) for r in R) == [
        (False, False, True, False),
        (True, True, False, True),
    ]


def test_unbounded_regions_and_margin_cap():
    p = [(np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    R = regions(p)
    assert R.num_regions == 4
    Rb = regions(p, domain=(-0.5, 2.0))
    assert Rb.num_regions == 4
    for r in list(R) + list(Rb):  # a ball of radius margin around the point is inside
        assert 0 < r.margin <= 1.0
        slack = (r.c - r.A @ r.point) / np.linalg.norm(r.A, axis=1)
        assert np.all(slack >= r.margin * (1 - 1e-9))


def test_orthant_and_box_restrict():
    p = [(np.array([[1.0], [-1.0]]), np.array([-1.0, -1.0])), (np.ones((1, 2)), np.zeros(1))]
    assert regions(p).num_regions == 3
    assert regions(p, "orthant").num_regions == 2  # x >= 0 never activates neuron 2
    assert regions(p, (-0.5, 0.5)).num_regions == 1  # no neuron switches in the box


def test_no_hidden_layer_and_locate():
    p = [(np.array([[1.0, -1.0]]), np.array([0.25]))]
    R = regions(p)
    assert R.num_regions == 1 and R[0].linear[0, 1] == -1
    q = ReLUNet([2, 4, 1]).random_params(3)
    Rq = regions(q)
    for r in Rq:
        assert Rq.locate(r.point) is r


def test_refinement_uses_far_fewer_lps_than_patterns():
    p = ReLUNet([2, 6, 6, 1]).random_params(1)
    R = regions(p)
    assert R.num_lps < 2**12 / 4
    assert R.counts[-1] == R.num_regions


def test_lp_paths_agree():
    """highspy's low-level class and the linprog fallback give the same optimum and the
    same duals (the engine rounds the duals to exact emptiness certificates)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        A = rng.standard_normal((6, 3))
        c = rng.random(6)
        obj = rng.standard_normal(3)
        E, e = rng.standard_normal((1, 3)), rng.random(1) * 0.1
        a = relu_lp.solve_lp(obj, A, c, E, e, lb=-np.ones(3), ub=np.ones(3), use_core=True)
        b = relu_lp.solve_lp(obj, A, c, E, e, lb=-np.ones(3), ub=np.ones(3), use_core=False)
        assert a.status == b.status == "optimal"
        assert a.fun == pytest.approx(b.fun, abs=1e-9)
        np.testing.assert_allclose(a.dual_ub, b.dual_ub, atol=1e-8)
        np.testing.assert_allclose(a.dual_eq, b.dual_eq, atol=1e-8)
    for core in (True, False):  # the other statuses
        assert (
            relu_lp.solve_lp([1.0], [[1.0], [-1.0]], [0.0, -1.0], use_core=core).status
            == "infeasible"
        )
        assert relu_lp.solve_lp([-1.0], [[-1.0]], [0.0], use_core=core).status == "unbounded"


def test_broken_highspy_binding_falls_back_to_linprog(monkeypatch):
    from neuromanifold.relu._engine import cells as _engine

    p = ReLUNet([2, 4, 3, 1]).random_params(2)
    ref = {flat_pattern(r) for r in regions(p)}
    monkeypatch.setattr(_engine, "_ascent", lambda *a, **k: None)  # every decision by LP

    def broken(*args, **kwargs):
        raise AttributeError("highspy API changed")

    monkeypatch.setattr(relu_lp, "_solve_core", broken)
    monkeypatch.setattr(relu_lp, "_USE_CORE", True)
    R = regions(p)
    assert {flat_pattern(r) for r in R} == ref and R.num_exact_fallbacks == 0
    assert relu_lp._USE_CORE is False  # switched off after the first failure


def test_floating_point_decisions_are_certified_not_trusted(monkeypatch):
    """If the LP solver lies (reports every cut side empty), no region may be lost: the
    exact Motzkin check rejects the bogus certificates and the exact simplex decides."""
    p = ReLUNet([2, 4, 3, 1]).random_params(4)
    ref = {flat_pattern(r) for r in regions(p)}
    real = relu_lp.solve_lp

    def lying(c, A_ub, b_ub, A_eq=None, b_eq=None, **kw):
        sol = real(c, A_ub, b_ub, A_eq, b_eq, **kw)
        if sol.status == "optimal":  # radius 0, and nonsense duals
            x = sol.x.copy()
            x[-1] = 0.0
            return relu_lp.LPSolution(
                "optimal",
                x,
                0.0,
                -np.ones(len(b_ub)),
                None if A_eq is None else np.zeros(len(b_eq)),
            )
        return sol

    from neuromanifold.relu._engine import cells as _engine

    monkeypatch.setattr(_engine, "solve_lp", lying)
    monkeypatch.setattr(_engine, "_ascent", lambda *a, **k: None)  # every decision by LP
    R = regions(p)
    assert {flat_pattern(r) for r in R} == ref
    assert R.num_exact_fallbacks > 0 and R.certified


@pytest.mark.parametrize("lie", ["max", "cross", "both"])
def test_lying_walks_are_caught_by_the_exact_checks(monkeypatch, lie):
    """The float walk across a cell only proposes: a bogus emptiness certificate (nonsense
    multipliers) or a bogus far point (outside the cell, or on the near side) must be
    rejected exactly, and an LP then decides; no region may be lost or invented; a bogus
    re-centered point is refused (every point stays strictly inside its region)."""
    from neuromanifold.relu._engine import cells as _engine

    rng = np.random.default_rng(3)
    calls = []

    def lying(A, c, x0, g, target, max_iter, trace=None):
        calls.append(1)
        if trace is not None:
            trace[:] = [x0 + rng.standard_normal(x0.size) * 10.0 ** rng.integers(-12, 2)]
        kind = lie if lie != "both" else ("max", "cross")[len(calls) % 2]
        if kind == "max":
            k = min(len(A), 2)
            return "max", list(range(k)), np.ones(k)
        return "cross", x0 + rng.standard_normal(x0.size) * 10.0 ** rng.integers(-12, 2)

    def lying_center(A, c, x0, r0, max_iter):
        # the re-centering walk: a point anywhere, often outside, with a bogus large ball
        calls.append(2)
        return x0 + rng.standard_normal(x0.size) * 10.0 ** rng.integers(-12, 2), 10.0

    for widths, domain in [
        ([2, 4, 3, 1], None),
        ([3, 5, 4, 1], (-1, 1)),
        ([2, 3, 3, 2], "orthant"),
    ]:
        p = ReLUNet(widths).random_params(4)
        ref = {flat_pattern(r) for r in regions(p, domain)}
        with monkeypatch.context() as m:
            m.setattr(_engine, "_ascent", lying)
            m.setattr(_engine, "_center_walk", lying_center)
            R = regions(p, domain)
        assert {flat_pattern(r) for r in R} == ref and R.certified and R.num_lps > 0
        net = ExactNet(p)
        for r in R:  # every point still has its region's pattern, strictly
            _, pre = exact_forward(net, r.point_exact)
            assert all(
                (z > 0) == bool(a) and z != 0
                for zs, mask in zip(pre, r.pattern)
                for z, a in zip(zs, mask)
            )
    assert 1 in calls and 2 in calls


def test_region_evaluate_rejects_bad_inputs():
    from neuromanifold import InputError

    r = regions(ReLUNet([2, 3, 1]).random_params(0))[0]
    np.testing.assert_allclose(
        r.evaluate(r.point), forward(ReLUNet([2, 3, 1]).random_params(0), r.point[None, :])
    )
    with pytest.raises(InputError, match=r"shape \(N, 2\)"):
        r.evaluate(np.zeros((2, 5)))
    with pytest.raises(InputError, match="real numbers"):
        r.evaluate("abc")


def test_bad_params():
    with pytest.raises(ParameterError):
        regions([(np.ones((2, 2)), np.ones(2)), (np.ones((1, 3)), np.ones(1))])
    with pytest.raises(ParameterError):
        regions([(np.array([[np.nan]]), np.zeros(1))])


def test_to_dict_is_json_ready():
    import json

    R = regions(ReLUNet([2, 2, 1]).random_params(0))
    text = json.dumps(R.to_dict())
    assert '"num_regions": 4' in text
    assert strictly_satisfies(R[0].A, R[0].c, R[0].point_exact)


def test_progress_bar_goes_to_stderr(capsys):
    from neuromanifold.relu import bent_hyperplanes, equivalent, functional_dimension

    p = ReLUNet([2, 3, 2, 1]).random_params(0)
    n = regions(p, progress=True).num_regions
    assert regions(p).num_regions == n
    bent_hyperplanes(p, progress=True)
    functional_dimension(p, progress=True)
    equivalent(p, p, method="regions", progress=True)
    captured = capsys.readouterr()
    assert captured.out == "" and "regions" in captured.err


def test_extreme_but_finite_magnitudes():
    """Hidden neurons rescaled by 2**-1000 (and 2**-600): the same regions, patterns and
    affine maps, never a ZeroDivisionError."""
    p = ReLUNet([2, 3, 2, 1]).random_params(6)
    q = [
        (p[0][0] * 2.0**-1000, p[0][1] * 2.0**-1000),
        (p[1][0] * 2.0**400, p[1][1] * 2.0**-600),
        (p[2][0] * 2.0**600, p[2][1]),
    ]
    for domain in (None, "orthant", (-1.0, 1.0)):
        a, b = regions(p, domain), regions(q, domain)
        assert a.num_regions == b.num_regions and a.certified and b.certified
        key = {tuple(flat_pattern(r)): r for r in a}
        for r in b:
            s = key[tuple(flat_pattern(r))]
            assert (r.linear == s.linear).all() and (r.offset == s.offset).all()


def test_fraction_weights_stay_exact():
    from fractions import Fraction

    third = Fraction(1, 3)
    p = [([[1, 0], [0, 1], [third, third]], [0, 0, Fraction(-1, 3)]), ([[1, 1, 1]], [0])]
    R = regions(p)
    # the third neuron's hyperplane x + y = 1 exactly: through the point (1/2, 1/2)
    assert R.num_regions == 7 and R.certified
    for r in R:
        assert all(isinstance(v, Fraction) for v in r.linear.ravel())
    assert any(r.linear[0, 0] == Fraction(4, 3) for r in R)


# -- streaming, budgets and estimates ---------------------------------------------------


def _bfs_regions(p, domain):
    """The former enumeration, breadth first: every cell of a layer, then the next layer
    (the list version of each split), as exact (pattern, point, map) triples in order."""
    from neuromanifold.relu._core.domain import as_domain
    from neuromanifold.relu._engine.cells import Engine, initial_cell, output_map, refine_stage

    net = ExactNet.from_params(p)
    engine = Engine(net.d)
    cells = [initial_cell(as_domain(domain, net.d), engine, [net])]
    for l in net.hidden_layers:
        cells = [c2 for c in cells for c2 in refine_stage(c, 0, l, net, engine)]
    return [
        (
            tuple(np.concatenate(c.patterns[0]).tolist()) if c.patterns[0] else (),
            tuple(c.center_q),
            output_map(c, 0, net).entries(),
        )
        for c in cells
    ]


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    domain=st.sampled_from([None, "orthant", (-1, 2)]),
    widths=st.sampled_from([[2, 4, 3, 1], [3, 3, 2, 2], [1, 3, 2, 1], [2, 5, 1], [2, 2, 2, 2, 1]]),
    dyadic=st.booleans(),
)
def test_streamed_regions_equal_the_breadth_first_list(seed, domain, widths, dyadic):
    rng = np.random.default_rng(seed)
    p = dyadic_net(rng, widths) if dyadic else ReLUNet(widths).random_params(seed)
    ref = _bfs_regions(p, domain)
    it = iter_regions(p, domain)
    got = [(flat_pattern(r), r.point_exact, r) for r in it]
    assert it.finished and it.num_regions == len(ref) == len(got)
    for (pat, center, F), (gpat, gpoint, r) in zip(ref, got):
        assert pat == gpat
        assert tuple(fmpq_to_fraction(v) for v in center) == gpoint
        exact = [fmpq_to_fraction(v) for v in F]
        d = len(center)
        assert exact == [
            v for o in range(r.linear.shape[0]) for v in list(r.linear[o]) + [r.offset[o]]
        ][: len(exact)] or exact == [
            x for o in range(r.linear.shape[0]) for x in list(r.linear[o]) + [r.offset[o]]
        ]
        assert d == r.linear.shape[1]
    R = regions(p, domain)  # the list is the stream collected
    assert [flat_pattern(r) for r in R] == [g[0] for g in got]
    assert R.certified and R.counts == tuple(it.counts) and R.num_lps == it.num_lps


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10**6), widths=st.sampled_from([[2, 4, 3, 1], [3, 3, 3, 1]]))
def test_uncertified_mode_finds_the_same_regions_on_generic_nets(seed, widths):
    p = ReLUNet(widths).random_params(seed)
    exact, fast = regions(p), regions(p, certify=False)
    assert [flat_pattern(r) for r in exact] == [flat_pattern(r) for r in fast]
    assert exact.certified and not fast.certified and fast.num_exact_fallbacks == 0


def test_max_regions_raises_with_counts_and_the_partial_list():
    from neuromanifold import ComputationLimitError

    p = ReLUNet([2, 5, 4, 1]).random_params(0)
    n = regions(p).num_regions
    assert regions(p, max_regions=n).num_regions == n  # exactly n: no error
    it = iter_regions(p, max_regions=n - 3)
    got = []
    with pytest.raises(
        ComputationLimitError, match=rf"max_regions={n - 3}\) after {n - 3} regions"
    ):
        for r in it:
            got.append(r)
    assert len(got) == n - 3 and not it.finished
    with pytest.raises(ComputationLimitError) as info:
        regions(p, max_regions=5)
    err = info.value
    assert err.num_regions == 5 and err.num_lps + err.num_walks > 0
    assert err.partial.num_regions == 5 and not err.partial.certified
    assert [flat_pattern(r) for r in err.partial] == [flat_pattern(r) for r in regions(p)][:5]


def test_time_limit_raises():
    from neuromanifold import ComputationLimitError

    p = ReLUNet([2, 5, 4, 1]).random_params(0)
    with pytest.raises(ComputationLimitError, match="time limit") as info:
        regions(p, time_limit=1e-9)
    assert info.value.partial is not None and not info.value.partial.certified
    assert regions(p, time_limit=600.0).certified  # a generous limit changes nothing


def test_bad_budget_options():
    from neuromanifold import InputError

    p = ReLUNet([2, 3, 1]).random_params(0)
    for kw, match in [
        ({"max_regions": 0}, "max_regions"),
        ({"time_limit": -1.0}, "time_limit"),
        ({"certify": "yes"}, "certify"),
        ({"min_thickness": 2.0}, "min_thickness"),
    ]:
        with pytest.raises(InputError, match=match):
            iter_regions(p, **kw)


def test_streaming_memory_does_not_grow_with_the_number_of_regions():
    """Python-heap peak while consuming 40 and then 200 regions of one stream (nothing
    kept by the caller): a list of them would grow about 5x; the stream holds only its
    path through the split tree. And no yielded region is kept alive by the stream."""
    import gc
    import itertools
    import tracemalloc
    import weakref

    p = ReLUNet([2, 40, 1]).random_params(3)
    # one untraced stream first: whatever is built once per process (lazy imports, caches)
    # is then not counted in the second measurement only, depending on the test order
    for _ in itertools.islice(iter_regions(p, certify=False), 200):
        pass
    peaks = []
    for n in (40, 200):
        it = iter_regions(p, certify=False)
        tracemalloc.start()
        try:
            for _ in itertools.islice(it, n):
                pass
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert it.num_regions == n
    assert peaks[1] < 2.0 * peaks[0], peaks
    it = iter_regions(p, certify=False)
    refs = [weakref.ref(r) for r in itertools.islice(it, 30)]
    gc.collect()
    assert sum(r() is not None for r in refs) <= 1  # at most the current one


@settings(max_examples=10, deadline=None)
@given(
    d=st.integers(1, 3),
    widths=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    seed=st.integers(0, 10**6),
)
def test_estimate_bounds_the_count(d, widths, seed):
    from neuromanifold.relu import estimate_regions

    p = ReLUNet([d] + widths + [1]).random_params(seed)
    n = regions(p).num_regions
    e = estimate_regions(p, num_samples=2000, seed=seed)
    assert e.sampled_patterns <= n <= e.upper_bound <= e.layer_bound
    if len(widths) == 1:  # Zaslavsky: general position reaches the bound
        assert n == e.upper_bound == sum(comb(widths[0], i) for i in range(d + 1))


def test_thin_regions_are_left_out_at_a_tolerance():
    rng = np.random.default_rng(1)
    W1, b1 = rng.standard_normal((3, 2)), rng.standard_normal(3)
    W1[2], b1[2] = W1[0] * 1.7, b1[0] * 1.7  # parallel up to rounding
    p = [(W1, b1), (rng.standard_normal((1, 3)), np.zeros(1))]
    exact, coarse = regions(p), regions(p, min_thickness=1e-9)
    assert coarse.num_thin_regions > 0 and coarse.tol == 1e-9
    assert coarse.num_regions + coarse.num_thin_regions == exact.num_regions
    assert coarse.num_regions == 4  # two lines through general position


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 6), tiny=st.booleans(), huge=st.booleans())
def test_float_signs_never_contradict_the_exact_sign(seed, d, tiny, huge):
    """The float shortcut of the engine's exact checks: where it decides a sign, the exact
    sign agrees, including entries that underflow, huge points and values at zero."""
    from neuromanifold.exact import to_fmpq
    from neuromanifold.relu._engine.cells import float_signs, pow2_floats

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((8, d))
    if tiny:
        A[:, -1] *= 2.0**-1060  # underflows once the row is scaled
    x = rng.standard_normal(d) * (1e250 if huge else 1.0)
    Ax = A @ x  # rows 0-3 vanish at x up to a few ulps
    c = -Ax + np.spacing(np.abs(Ax)) * np.array([-1.0, 0.0, 1.0, 2.0] * 2)
    c[4:] = rng.standard_normal(4)
    rows_q = [[to_fmpq(float(v)) for v in row] + [to_fmpq(float(ci))] for row, ci in zip(A, c)]
    xq = [to_fmpq(float(v)) for v in x]
    fl = np.array([pow2_floats(r, d)[0] for r in rows_q])
    sign = float_signs(fl[:, :d], fl[:, d], x)
    for r, sg in zip(rows_q, sign):
        z = sum(a * v for a, v in zip(r[:d], xq)) + r[d]
        exact = (z > 0) - (z < 0)
        assert sg == 0 or sg == exact


# -- the refinement with interior-point pools and walks against two references ---------


@st.composite
def _adversarial_net(draw, widths):
    """A network of the given widths: Gaussian, or one of the degenerate families the
    exact engine must survive (dyadic weights: dead, parallel, repeated neurons; every
    first-layer hyperplane through one vertex; a duplicated and a negated neuron; one
    layer rescaled by 2**-900)."""
    kind = draw(st.sampled_from(["gauss", "dyadic", "vertex", "dup", "tiny"]))
    seed = draw(st.integers(0, 10**6))
    rng = np.random.default_rng(seed)
    if kind == "dyadic":
        return kind, dyadic_net(rng, widths)
    p = [(W.copy(), b.copy()) for W, b in ReLUNet(widths).random_params(seed)]
    if kind == "vertex":  # all first-layer hyperplanes through one point
        x0 = rng.integers(-2, 3, widths[0]) / 2.0
        p[0] = (p[0][0], -(p[0][0] @ x0))
    elif kind == "dup" and widths[1] >= 2:
        W, b = p[0]
        W[1], b[1] = -2.0 * W[0], -2.0 * b[0]  # the same hyperplane, other side
        if widths[1] >= 3:
            W[2], b[2] = W[0], b[0]  # repeated
    elif kind == "tiny":
        p[0] = (p[0][0] * 2.0**-900, p[0][1] * 2.0**-900)
    return kind, p


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    domain=st.sampled_from([None, "orthant", (-1, 1)]),
    widths=st.sampled_from([[1, 3, 2, 1], [2, 3, 2, 1], [2, 2, 3, 1], [3, 3, 2, 1]]),
)
def test_regions_equal_the_all_patterns_ground_truth(data, domain, widths):
    """Every activation pattern of a full-dimensional set, by trying all 2^n patterns with
    the exact simplex, is exactly the set of regions found (and certified)."""
    kind, p = data.draw(_adversarial_net(widths))
    R = regions(p, domain)
    assert R.certified
    assert {flat_pattern(r) for r in R} == brute_force_patterns(p, domain), kind
    net = ExactNet(p)
    for r in R:  # each point is strictly inside its region: the exact pre-activations
        # have the pattern's signs (0 only for a neuron constant 0 on the region), and the
        # point satisfies the region's exact inequalities strictly
        _, pre = exact_forward(net, r.point_exact)
        assert all(
            (z > 0) == bool(a) for zs, mask in zip(pre, r.pattern) for z, a in zip(zs, mask)
        ), kind
        assert R.domain.contains(r.point[None, :])[0]
    cells = list(iter_cells([net], as_domain(domain, net.d), Engine(net.d)))
    for c in cells:
        assert strictly_satisfies(c.rows_q, c.offs_q, c.center_q), kind
    # the pools of interior points handed down the first layer's split tree
    engine = Engine(net.d)
    root = initial_cell(as_domain(domain, net.d), engine, [net])
    for c in refine_stage(root, 0, 0, net, engine):
        _, pts, radii = c.pool()
        assert len(pts) == len(radii) >= 1
        for x in pts:
            assert strictly_satisfies(c.rows_q, c.offs_q, x), kind


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    domain=st.sampled_from([None, "orthant", (-1, 1)]),
    widths=st.sampled_from([[2, 5, 4, 1], [3, 4, 4, 1], [4, 4, 3, 2], [2, 3, 3, 3, 1]]),
)
def test_regions_equal_the_former_refinement(data, domain, widths):
    """The same regions as the former refinement (one LP per undecided hyperplane, no
    pools, no walks), on larger random and degenerate networks; and the walks replace
    almost every LP."""
    from tests.support.regions_reference import reference_patterns

    kind, p = data.draw(_adversarial_net(widths))
    R = regions(p, domain)
    assert R.certified
    assert {flat_pattern(r) for r in R} == reference_patterns(p, domain), kind


def _square_reference(S, s):
    """The certificate test of ``_square_certificate`` by a Fraction solve: ``y`` with
    ``sum_i y_i S[i] = -S[d]`` (None when the first d rows are dependent)."""
    from fractions import Fraction

    d = len(S) - 1
    M = [[Fraction(S[k][i]) for k in range(d)] + [-Fraction(S[d][i])] for i in range(d)]
    for col in range(d):
        piv = next((r for r in range(col, d) if M[r][col] != 0), None)
        if piv is None:
            return None
        M[col], M[piv] = M[piv], M[col]
        for r in range(d):
            if r != col and M[r][col] != 0:
                f = M[r][col] / M[col][col]
                M[r] = [a - f * b for a, b in zip(M[r], M[col])]
    y = [M[i][d] / M[i][i] for i in range(d)]
    if any(v < 0 for v in y):
        return False
    return sum(v * Fraction(c) for v, c in zip(y, s)) + Fraction(s[d]) <= 0


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    d=st.integers(1, 8),
    kind=st.sampled_from(["random", "combination", "touching", "dependent", "zero_y"]),
)
def test_square_certificate_equals_a_rational_solve(seed, d, kind):
    """The exact emptiness test of d + 1 rows (the walk's active walls and the far side)
    agrees with a plain rational solve, on random dyadic rows and on the boundary cases:
    the last row a non-negative combination of the others (certificate or not by the
    offsets), the certificate's sum exactly 0 (the strict system is then empty), dependent
    walls, and multipliers exactly 0."""
    from neuromanifold.exact import to_fmpq
    from neuromanifold.relu._engine.cells import _square_certificate

    rng = np.random.default_rng(seed)
    S = rng.integers(-8, 9, (d + 1, d)) / 4.0
    if kind in ("random", "dependent"):  # rows of very different sizes
        S = S * 2.0 ** rng.integers(-40, 40, (d + 1, 1))
    s = rng.integers(-8, 9, d + 1) / 8.0
    if kind in ("combination", "touching", "zero_y"):
        y = rng.integers(0, 4, d) / 2.0
        if kind == "zero_y":
            y[0] = 0.0
        S[d] = -(y @ S[:d])  # exact: small dyadic numbers
        if kind == "touching":
            s[d] = -(y @ s[:d])  # sum y_i s_i + s_d == 0 exactly
    elif kind == "dependent" and d >= 2:
        S[1] = 3.0 * S[0]
    Sq = [[to_fmpq(float(v)) for v in row] for row in S]
    sq = [to_fmpq(float(v)) for v in s]
    got = _square_certificate(Sq, sq)
    assert got == _square_reference(S.tolist(), s.tolist())
    if kind == "touching" and got is not None:
        assert got


@settings(max_examples=100, deadline=None)
@given(p=st.integers(-(10**40), 10**40), q=st.integers(1, 10**40))
def test_region_fractions_equal_the_checked_conversion(p, q):
    """The regions' fast fmpq -> Fraction conversion (no gcd: flint's values are in lowest
    terms) gives the same Fraction as the checked one: value, terms, hash, arithmetic."""
    from fractions import Fraction

    import flint

    from neuromanifold.exact import fmpq_to_fraction
    from neuromanifold.relu._regions.regions import _fraction, _fractions

    v = flint.fmpq(p, q)
    f, ref = _fraction(v), fmpq_to_fraction(v)
    assert (
        (f.numerator, f.denominator)
        == (ref.numerator, ref.denominator)
        == (Fraction(p, q).numerator, Fraction(p, q).denominator)
    )
    assert f == ref and hash(f) == hash(ref) and f + 1 == ref + 1
    M = flint.fmpq_mat(2, 2, [v, 0, -v, 1])
    F = _fractions(M)
    assert F.shape == (2, 2) and F.dtype == object
    assert F.tolist() == [[ref, 0], [-ref, 1]]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(0, 6), d=st.integers(1, 5))
def test_pow2_rows_are_the_rounded_scaled_exact_rows(seed, n, d):
    """The float copies of a layer's exact rows (all rows at once, entry by entry for the
    rows near the float range limits): each float is the correctly rounded exact entry
    times 2**-e, e the binary exponent of the row's largest linear entry (of its largest
    entry when the linear part is 0); exact zero rows stay 0."""
    import flint

    from neuromanifold.relu._engine.cells import _pow2_rows

    rng = np.random.default_rng(seed)
    ent = []
    for _ in range(n):
        scale = flint.fmpq(2) ** int(rng.choice([0, 0, -1000, 1000, -1070, 1060, 500, -500]))
        for _ in range(d + 1):
            r = rng.random()
            v = (
                0
                if r < 0.2
                else (
                    flint.fmpq(int(rng.integers(-9, 10)), 3)
                    if r < 0.4
                    else flint.fmpq(*float(rng.standard_normal()).as_integer_ratio())
                )
            )
            ent.append(flint.fmpq(v) * scale)
        if rng.random() < 0.2:
            ent[-(d + 1) : -1] = [flint.fmpq(0)] * d  # linear part 0: the offset leads
        if rng.random() < 0.3:  # an entry that underflows on its own, not once scaled
            ent[-1 - int(rng.integers(0, d + 1))] = flint.fmpq(1, 3) * flint.fmpq(2) ** -1100
    out, ex = _pow2_rows(ent, n, d)
    assert out.shape == (n, d + 1) and ex.shape == (n,)
    for j in range(n):
        row = ent[j * (d + 1) : (j + 1) * (d + 1)]
        if all(v == 0 for v in row):
            assert not out[j].any()
            continue
        f = flint.fmpq(2) ** -int(ex[j])
        for v, got in zip(row, out[j]):
            x = v * f
            try:
                ref = int(x.p) / int(x.q)  # correctly rounded
            except OverflowError:
                ref = 1e300 if x > 0 else -1e300
            assert got == ref
        lead = [abs(v * f) for v in (row[:d] if any(v != 0 for v in row[:d]) else row)]
        assert flint.fmpq(1, 2) <= max(lead) < 2  # e is the leading exponent (within one)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6), n=st.integers(1, 9), w=st.integers(1, 5), with_entries=st.booleans()
)
def test_leaf_map_is_the_masked_stage_map(seed, n, w, with_entries):
    """A leaf's exact map is diag(pattern) times the stage's map, whichever rows are
    written (few active neurons: into a zero matrix; many: zeros into a copy), and the
    stage's map is left as it was."""
    import flint

    from neuromanifold.relu._engine.cells import Cell, _leaf

    rng = np.random.default_rng(seed)
    Zq = flint.fmpq_mat(
        n,
        w,
        [
            flint.fmpq(int(v), int(q))
            for v, q in zip(rng.integers(-50, 50, n * w), rng.integers(1, 9, n * w))
        ],
    )
    before = flint.fmpq_mat(Zq)
    bits = (rng.random(n) < rng.random()).tolist()
    geo = Cell(
        [], [], np.zeros((0, w - 1)), np.zeros(0), [], np.zeros(w - 1), [], 1.0, [None], [[]]
    )
    leaf = _leaf(geo, bits, n, 0, Zq, Zq.entries() if with_entries else None)
    D = flint.fmpq_mat(n, n)
    for i, b in enumerate(bits):
        if b:
            D[i, i] = 1
    assert leaf.maps_q[0] == D * Zq and Zq == before
    assert leaf.patterns[0][0].tolist() == bits and geo.maps_q == [None]
