"""Exact fibers of linear convolutional networks (LinearConvNet.fiber, docs/concepts_linear.md
§1-1.3).

Every point is re-verified here with net.end_to_end / net.invariants, independently of
the fiber's own residual bookkeeping.
"""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError, LinearConvNet, NotInNeuromanifoldError, ParameterError
from neuromanifold.linear import UndecidedFactorizationError


# ----------------------------------------------------------------------------- helpers
def max_rel_residual(net, point, v, deltas):
    rv = np.linalg.norm(net.end_to_end(point) - v) / np.linalg.norm(v)
    norms = [float(np.sum(w * w)) for w in point]
    rd = np.max(np.abs(net.invariants(point) - deltas), initial=0.0) / max(norms)
    return max(rv, rd)


def same_up_to_signs(p, q, tol=1e-8):
    """Equal up to flipping the sign of individual layers (and the flips multiply to +1
    whenever both reproduce the same v)."""
    return all(
        min(np.abs(a - b).max(), np.abs(a + b).max()) <= tol * max(1.0, np.abs(b).max())
        for a, b in zip(p, q)
    )


def check_fiber(net, params, fib, tol=1e-10):
    v, deltas = net.end_to_end(params), net.invariants(params)
    assert fib.num_points >= 1
    for pt in fib.points:
        assert [w.shape for w in pt] == [tuple(k) for k in net.filter_shapes]
        assert max_rel_residual(net, pt, v, deltas) <= tol
    assert any(same_up_to_signs(pt, params) for pt in fib.points), "original theta missing"
    # one point per class modulo sign flips
    for i in range(fib.num_points):
        for j in range(i):
            assert not same_up_to_signs(fib.points[i], fib.points[j], tol=1e-9)
    assert fib.num_sign_patterns == 2 ** (net.num_layers - 1)
    if fib.certified:
        # the exact route builds accurate points directly; the Gauss-Newton safety net
        # (which would mask an error) must not have been needed
        assert not any("polished" in n for n in fib.notes), fib.notes


@st.composite
def small_conv_case(draw, ndim):
    L = draw(st.integers(1, 3))
    if ndim == 1:
        shapes = [draw(st.integers(1, 4)) for _ in range(L)]
        strides = [draw(st.integers(1, 3)) for _ in range(L - 1)]
    else:
        mk = 3 if ndim == 2 else 2
        shapes = [tuple(draw(st.integers(1, mk)) for _ in range(ndim)) for _ in range(L)]
        strides = [tuple(draw(st.integers(1, 2)) for _ in range(ndim)) for _ in range(L - 1)]
    net = LinearConvNet(shapes, strides)
    seed = draw(st.integers(0, 2**31))
    integer = draw(st.booleans())
    rng = np.random.default_rng(seed)
    while True:
        # small integers create roots at 0, repeated roots, degree drops and accidental
        # coincidences; Gaussians are the generic case
        params = (
            [rng.integers(-2, 3, size=k).astype(float) for k in net.filter_shapes]
            if integer
            else net.random_params(rng)
        )
        if all(np.any(w) for w in params):
            return net, params


# ----------------------------------------------------------------------------- laws
@given(small_conv_case(1))
@settings(max_examples=40)
def test_fiber_1d_contains_theta_and_reproduces_v(case):
    net, params = case
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.certified
    check_fiber(net, params, fib)


@given(st.sampled_from([2, 3]).flatmap(small_conv_case))
@settings(max_examples=30)
def test_fiber_nd_contains_theta_and_reproduces_v(case):
    net, params = case
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.certified, fib.notes
    check_fiber(net, params, fib)


@given(st.integers(0, 10**6), st.integers(2, 3))
@settings(max_examples=20)
def test_1d_all_strides_above_one_give_one_point(seed, L):
    rng = np.random.default_rng(seed)
    net = LinearConvNet(
        [int(k) for k in rng.integers(2, 5, size=L)],
        [int(s) for s in rng.integers(2, 4, size=L - 1)],
    )
    params = net.random_params(rng)
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == 1 and fib.certified
    check_fiber(net, params, fib)


@given(st.integers(0, 10**6))
@settings(max_examples=20)
def test_2d_distinct_filter_shapes_give_one_point(seed):
    rng = np.random.default_rng(seed)
    net = LinearConvNet([(2, 3), (3, 2), (2, 2)][: 2 + seed % 2])
    params = net.random_params(rng)
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == 1 and fib.certified
    check_fiber(net, params, fib)


def test_1d_stride_one_k33_four_real_roots_six_points(rng):
    net = LinearConvNet([3, 3])
    roots = rng.permutation(np.array([-2.0, -0.5, 0.75, 1.5]) + rng.uniform(-0.1, 0.1, 4))
    params = [np.poly(roots[:2])[::-1] * 1.3, np.poly(roots[2:])[::-1] * -0.7]
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == 6 and fib.certified
    check_fiber(net, params, fib)
    # each point takes two of the four roots in its first layer: all C(4,2) = 6 subsets
    firsts = {tuple(np.round(np.sort(np.roots(p[0][::-1]).real), 8)) for p in fib.points}
    assert len(firsts) == 6


def test_float_and_exact_routes_agree_stride_one(rng):
    net = LinearConvNet([3, 2, 3])
    params = net.random_params(rng)
    exact = net.fiber(net.polynomial(params), net.invariants(params))
    floating = net.fiber(net.end_to_end(params), net.invariants(params))
    assert exact.num_points == floating.num_points
    for p in exact.points:
        assert any(same_up_to_signs(p, q, 1e-7) for q in floating.points)


# ----------------------------------------------------------------------------- degenerate
@pytest.mark.parametrize(
    "params, expected",
    [
        ([[-1.0, 1.0], [-1.0, 1.0]], 1),  # double root 1
        ([[2.0, -3.0, 1.0], [2.0, -3.0, 1.0]], 3),  # {1,1,2,2} in pairs: 3 multisets
        ([[0.0, 1.0], [-1.0, 1.0]], 2),  # root at 0 goes to either layer
        ([[1.0, 0.0], [1.0, 1.0]], 2),  # degree drop: root at infinity
        ([[1.0, 0.0, 1.0], [-1.0, 1.0]], 1),  # conjugate pair stays together
    ],
)
def test_1d_degenerate_counts(params, expected):
    net = LinearConvNet([len(w) for w in params])
    params = [np.array(w) for w in params]
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == expected and fib.certified
    check_fiber(net, params, fib)


def test_strided_layer_takes_whole_orbits():
    # layer 2 has cumulative stride 2: its polynomial is p(t^2); t^2 - 4 = (t-2)(t+2)
    # cannot be split, so although 1 and 2 are both roots only one assignment exists
    net = LinearConvNet([2, 2], [2])
    params = [np.array([-1.0, 1.0]), np.array([-4.0, 1.0])]
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == 1
    check_fiber(net, params, fib)
    # stride 1 with the same roots: the roots may move between layers
    net1 = LinearConvNet([2, 3])
    p1 = [np.array([-1.0, 1.0]), np.array([-4.0, 0.0, 1.0])]
    assert net1.fiber(net1.polynomial(p1), net1.invariants(p1)).num_points == 3


def test_2d_degenerate_filters_behave_like_1d(rng):
    roots = np.array([-1.5, -0.4, 0.6, 1.7])
    w1 = (np.poly(roots[:2])[::-1]).reshape(3, 1)
    w2 = (np.poly(roots[2:])[::-1]).reshape(3, 1)
    w3 = rng.standard_normal((2, 2))
    net = LinearConvNet([(3, 1), (3, 1), (2, 2)])
    params = [w1, w2, w3]
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == 6 and fib.certified
    assert any("line" in n for n in fib.notes)
    check_fiber(net, params, fib)
    # all filters (k, 1): reduced to 1D
    net2 = LinearConvNet([(3, 1), (3, 1)])
    fib2 = net2.fiber(net2.polynomial([w1, w2]), net2.invariants([w1, w2]))
    assert fib2.num_points == 6 and any("1D" in n for n in fib2.notes)


def test_2d_strided_line_pieces_form_whole_orbits():
    # layer 2 is a + b t1^2 (stride 2 along t1) with real roots +-r; layer 1 is
    # (t1 - q) * (bivariate). Degrees allow layer 2 to take {q, r} or {q, -r}, but only
    # {r, -r} is a polynomial in t1^2: exactly one point, certified.
    bivariate = np.array([[1.0, 2.0], [3.0, -1.0]])  # dyadic: products stay exact
    w1 = np.zeros((3, 2))
    for i, c in enumerate([-0.75, 1.0]):
        w1[i : i + 2] += c * bivariate
    net = LinearConvNet([(3, 2), (2, 1)], [(2, 1)])
    params = [w1, np.array([[-2.0], [1.0]])]
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.num_points == 1 and fib.certified
    check_fiber(net, params, fib)


def test_2d_strided_degenerate_is_certified(rng):
    net = LinearConvNet([(2, 1), (3, 1), (2, 2)], [(2, 1), (1, 2)])
    params = net.random_params(rng)
    fib = net.fiber(net.polynomial(params), net.invariants(params))
    assert fib.certified
    check_fiber(net, params, fib)


def test_factor_irreducible_over_q_but_not_over_r():
    # (1 + t1)^2 - 2 t2^2 = (1 + t1 - sqrt2 t2)(1 + t1 + sqrt2 t2): realizable by two
    # (2, 2) filters, though irreducible over Q. The software must not call it "not in
    # the neuromanifold"; it says the exact route could not decide and uses the fallback.
    net = LinearConvNet([(2, 2), (2, 2)])
    v = np.array([[1, 0, -2], [2, 0, 0], [1, 0, 0]], dtype=object)
    fib = net.fiber(v, [0.5])
    assert fib.num_points == 2 and not fib.certified
    for pt in fib.points:
        assert max_rel_residual(net, pt, v.astype(float), np.array([0.5])) < 1e-10


def test_exact_method_does_not_claim_an_undecided_v_is_outside():
    # the same v with method="exact": the exact route cannot split the factor over R, so
    # it must say it cannot decide, never "v is not in the neuromanifold" (v is in it)
    net = LinearConvNet([(2, 2), (2, 2)])
    v = np.array([[1, 0, -2], [2, 0, 0], [1, 0, 0]], dtype=object)
    with pytest.raises(UndecidedFactorizationError, match="cannot decide") as info:
        net.fiber(v, [0.5], method="exact")
    assert not isinstance(info.value, NotInNeuromanifoldError)


def test_float_v_near_neuromanifold_uses_numerical_route(rng):
    net = LinearConvNet([3, 2], [2])
    params = net.random_params(rng)
    fib = net.fiber(net.end_to_end(params), net.invariants(params), seed=0)
    assert not fib.certified and fib.num_points == 1
    assert same_up_to_signs(fib.points[0], params, 1e-7)
    assert fib.max_residual < 1e-10


def test_rational_v_accepted(rng):
    net = LinearConvNet([2, 2])
    fib = net.fiber([Fraction(1), Fraction(-3), Fraction(2)], [Fraction(1)])
    assert fib.num_points == 2 and fib.certified


# ----------------------------------------------------------------------------- errors
def test_not_in_neuromanifold_exact():
    net = LinearConvNet([2, 2])
    with pytest.raises(NotInNeuromanifoldError, match="conjugate"):
        net.fiber(_poly(net, [1, 0, 1]), [0.0])  # 1 + t^2: one conjugate pair
    with pytest.raises(NotInNeuromanifoldError, match="not within relative distance"):
        net.fiber([1.0, 0.0, 1.0], [0.0])  # float v: fallback also fails
    net2 = LinearConvNet([(2, 2), (2, 2)])
    v = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 10]], dtype=object)
    with pytest.raises(NotInNeuromanifoldError, match="no grouping"):
        net2.fiber(v, [0.0], method="exact")


def _poly(net, coeffs):
    return net.polynomial_context().from_dict({(i,): c for i, c in enumerate(coeffs) if c})


@pytest.mark.parametrize(
    "v, inv, match",
    [
        ([1.0, 2.0], [0.0], "shape"),
        ([1.0, 2.0, float("nan")], [0.0], "finite"),
        ([1.0, 2.0, 3.0], [0.0, 1.0], "L - 1 = 1"),
        ([1.0, 2.0, 3.0], [float("nan")], "finite"),
        ([0.0, 0.0, 0.0], [0.0], "v = 0"),
        ([1.0, 2.0, 3.0], "abc", "list"),
    ],
)
def test_bad_input(v, inv, match):
    with pytest.raises(InputError, match=match):
        LinearConvNet([2, 2]).fiber(v, inv)


def test_bad_method():
    with pytest.raises(InputError, match="method"):
        LinearConvNet([2, 2]).fiber([1.0, 2.0, 1.0], [0.0], method="magic")


@pytest.mark.parametrize(
    "options, error, match",
    [
        ({"tol": "a"}, InputError, "tol must be a positive"),
        ({"tol": -1.0}, InputError, "tol must be a positive"),
        ({"num_starts": "a"}, InputError, "num_starts must be a positive integer"),
        ({"seed": "a"}, InputError, "seed"),
        ({"start": [1.0]}, ParameterError, "one array per layer"),
    ],
)
def test_bad_options(options, error, match):
    with pytest.raises(error, match=match):
        LinearConvNet([2, 2]).fiber([1.0, 0.0, 1.0], [0.0], **options)


def test_boolean_invariants_rejected():
    with pytest.raises(InputError, match="booleans"):
        LinearConvNet([2, 2]).fiber([1.0, -3.0, 2.0], [True])


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("scale", [2.0**-1000, 1e-300, 2.0**-600])
def test_tiny_end_to_end_filter_has_its_fiber(scale):
    """The numerical route projects a rescaled v and the rescaling works in log space:
    a layer whose squared norm underflows float64 is still rescaled correctly."""
    net = LinearConvNet([2, 2], strides=[2])
    p = net.random_params(seed=0)
    v, inv = net.end_to_end(p), net.invariants(p)
    fib = net.fiber(v * scale, inv)
    assert fib.points and fib.max_residual < 1e-10
    for q in fib.points:
        got = net.end_to_end(q)
        assert np.linalg.norm((got - v * scale) / scale) <= 1e-10 * np.linalg.norm(v)
        assert np.allclose(net.invariants(q), inv, rtol=1e-10)


def test_log_space_rescaling_matches_the_float_one():
    from neuromanifold.exact import rescaled_norms
    from neuromanifold.exact._rescaling import apply_rescaling, log_rescaled_norms

    n, d = np.array([[1.0, 4.0], [2.0, 0.5]]), np.array([3.0])
    assert np.allclose(np.exp(log_rescaled_norms(np.log(n), d)), rescaled_norms(n, d))
    # a first layer of size 1e-200 (squared norm 1e-400 underflows) and delta = 1
    layers = [np.array([[1e-200, 0.0]]), np.array([[1.0, 0.0]])]
    apply_rescaling(layers, np.array([1.0]))
    assert layers[0][0, 0] > 0 and np.isclose(layers[0][0, 0] * layers[1][0, 0], 1e-200)
    assert np.isclose(layers[1][0, 0] ** 2, 1.0)


@pytest.mark.parametrize(
    "invariants,params",
    [
        (np.array([1 + 0j]), [np.ones(2), np.ones(2)]),
        (np.array(["1.5"]), [np.ones(2), np.ones(2)]),
        (np.array([np.nan]), [np.ones(2), np.ones(2)]),
        ([[1.0, 2.0], [3.0]], [np.ones(2), np.ones(2)]),
        (np.array([0.5]), [np.array([1.0, np.nan]), np.ones(2)]),
        (np.array([0.5]), [np.ones(2)]),  # one layer: no invariants
        (np.array([0.5]), [np.ones(2)] * 3),  # three layers: two invariants
        (np.array([0.5]), []),
        (np.array([0.5]), None),
        (np.array([0.5]), "params"),
        (np.array([0.5]), [np.array([1e300, 1.0]), np.ones(2)]),  # the scale overflows
    ],
)
def test_invariant_scale_refuses_bad_input(invariants, params):
    from neuromanifold import NeuromanifoldError
    from neuromanifold.fibers import invariant_scale

    with pytest.raises(NeuromanifoldError):
        invariant_scale(invariants, params)


def test_invariant_scale_reads_tensors_and_exact_entries():
    torch = pytest.importorskip("torch")
    from neuromanifold.fibers import invariant_scale

    w = torch.tensor([3.0, 4.0], requires_grad=True)
    assert invariant_scale([Fraction(1, 2)], [w, np.array([1.0])]) == 25.0
    assert invariant_scale(np.zeros(0), [np.array([2.0])]) == 4.0
