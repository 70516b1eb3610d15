"""LinearConvNet: the map mu, its Jacobian, NTK, invariants, dimension (docs/concepts_linear.md §1,
1.2)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuromanifold import (
    ArchitectureError,
    InputError,
    LinearConvNet,
    NeuromanifoldError,
    ParameterError,
    correlate,
)
from neuromanifold.exact import fmpq_to_fraction, to_fmpq
from neuromanifold.linear import upsample
from tests.support.common import conv_nets, fd_jacobian


def _naive_correlate(x, f, stride):
    """Loop implementation of valid strided correlation (independent of `correlate`)."""
    out_shape = tuple((n - k) // s + 1 for n, k, s in zip(x.shape, f.shape, stride))
    out = np.zeros(out_shape)
    for i in np.ndindex(out_shape):
        sl = tuple(slice(a * s, a * s + k) for a, s, k in zip(i, stride, f.shape))
        out[i] = np.sum(x[sl] * f)
    return out


@given(net=conv_nets(), seed=st.integers(0, 2**31), extra=st.integers(0, 5))
def test_apply_equals_end_to_end_correlation(net, seed, extra):
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    shape = tuple(k + extra + s for k, s in zip(net.end_to_end_shape, net.end_to_end_stride))
    x = rng.standard_normal((2,) + shape)
    out = net.apply(params, x)
    expected = correlate(x, net.end_to_end(params), stride=net.end_to_end_stride)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)


@given(seed=st.integers(0, 2**31))
def test_correlate_matches_loop(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((7, 9))
    f = rng.standard_normal((2, 3))
    np.testing.assert_allclose(correlate(x, f, stride=(2, 3)), _naive_correlate(x, f, (2, 3)))


@given(net=conv_nets(), seed=st.integers(0, 2**31))
def test_end_to_end_is_polynomial_product(net, seed):
    """v from convolutions equals the coefficients of prod_l pi(w_l)(t^{S_{l-1}}) (exact)."""
    params = net.random_params(seed)
    exact = net.coefficients(net.polynomial(params))
    exact = np.vectorize(lambda q: float(fmpq_to_fraction(q)))(exact).astype(float)
    v = net.end_to_end(params)
    assert v.shape == net.end_to_end_shape
    np.testing.assert_allclose(v, exact, rtol=1e-12, atol=1e-12 * max(1, np.abs(v).max()))


def test_end_to_end_shape_formula():
    net = LinearConvNet([3, 4, 2], strides=[2, 3])
    # k = k1 + (k2 - 1) S1 + (k3 - 1) S2 = 3 + 3*2 + 1*6 (docs/concepts_linear.md §1)
    assert net.end_to_end_shape == (15,)
    assert net.cumulative_strides == ((1,), (2,), (6,))


@given(net=conv_nets(max_layers=3), seed=st.integers(0, 2**31))
def test_jacobian_matches_finite_differences_and_multilinearity(net, seed):
    params = net.random_params(seed)
    J = net.jacobian(params)
    assert J.shape == (net.end_to_end_size, net.num_params)
    np.testing.assert_allclose(J, fd_jacobian(net, params), atol=1e-7)
    # multilinear identity: column (l, j) is mu with w_l replaced by the unit filter e_j
    col = 0
    for l, w in enumerate(params):
        for j in np.ndindex(w.shape):
            e = np.zeros_like(w)
            e[j] = 1.0
            column = net.end_to_end(params[:l] + [e] + params[l + 1 :]).ravel()
            np.testing.assert_allclose(J[:, col], column, atol=1e-12)
            col += 1
    # Euler: mu is homogeneous of degree 1 in each layer, so J theta = L v
    np.testing.assert_allclose(
        J @ net.flatten(params), net.num_layers * net.end_to_end(params).ravel(), atol=1e-9
    )


@given(net=conv_nets(), seed=st.integers(0, 2**31))
def test_ntk_equals_gram_and_vjp_equals_transpose(net, seed):
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    J = net.jacobian(params)
    np.testing.assert_allclose(net.ntk(params), J @ J.T, atol=1e-10)
    g = rng.standard_normal(net.end_to_end_shape)
    grads = np.concatenate([a.ravel() for a in net.vjp(params, g)])
    np.testing.assert_allclose(grads, J.T @ g.ravel(), atol=1e-10)


@given(net=conv_nets(), seed=st.integers(0, 2**31))
def test_dimension_is_generic_rank(net, seed):
    params = net.random_params(seed)
    assert net.dimension <= net.dimension_bound
    assert np.linalg.matrix_rank(net.jacobian(params)) == net.dimension
    assert net.is_smooth(params)


@given(net=conv_nets(ndim=1), seed=st.integers(0, 2**31))
def test_dimension_formula_1d(net, seed):
    """docs/concepts_linear.md §1 [checked for 1D]: dim M = sum |w_l| - (L - 1)."""
    assert net.dimension == net.num_params - (net.num_layers - 1)


@pytest.mark.parametrize(
    "ks, strides, full",
    [
        ([3, 3], [1], True),
        ([2, 2], [1], True),
        ([3, 2, 2], [2, 2], False),
        ([(2, 2), (2, 2)], [(1, 1)], False),
    ],
)
def test_full_dimensional(ks, strides, full):
    """M is full-dimensional iff dim M = prod k (docs/concepts_linear.md §1): stride 1 in 1D always
    is."""
    net = LinearConvNet(ks, strides)
    assert (
        net.is_full_dimensional
        == full
        == (np.linalg.matrix_rank(net.jacobian(net.random_params(1))) == net.end_to_end_size)
    )


def test_exact_rank_detects_non_smooth_point():
    net = LinearConvNet([2, 2])
    good = [np.array([1.0, 2.0]), np.array([1.0, -3.0])]
    same_root = [np.array([1.0, 2.0]), np.array([1.0, 2.0])]  # v = (1 + 2t)^2: a double root
    assert net.rank(good, exact=True).is_smooth and net.rank(good, exact=True).certified
    assert not net.rank(same_root, exact=True).is_smooth
    assert net.rank(same_root, exact=True).rank == net.dimension - 1


@given(net=conv_nets(), seed=st.integers(0, 2**31), data=st.data())
def test_sign_flips_and_rescaling(net, seed, data):
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    v, K, delta = net.end_to_end(params), net.ntk(params), net.invariants(params)
    L = net.num_layers
    if L >= 2:
        a, b = data.draw(st.lists(st.integers(0, L - 1), min_size=2, max_size=2, unique=True))
        flipped = [(-w if l in (a, b) else w) for l, w in enumerate(params)]
        np.testing.assert_allclose(net.end_to_end(flipped), v, atol=1e-12)
        np.testing.assert_allclose(net.ntk(flipped), K, atol=1e-12)
        np.testing.assert_allclose(net.invariants(flipped), delta, atol=1e-12)
    c = rng.uniform(0.5, 2.0, size=L)
    c[-1] = 1.0 / np.prod(c[:-1])
    scaled = [ci * w for ci, w in zip(c, params)]
    np.testing.assert_allclose(net.end_to_end(scaled), v, rtol=1e-10, atol=1e-10)


def test_invariants_definition():
    net = LinearConvNet([2, 3, 1])
    params = [np.array([1.0, 2.0]), np.array([0.0, 1.0, 1.0]), np.array([3.0])]
    np.testing.assert_allclose(net.invariants(params), [2.0 - 5.0, 9.0 - 2.0])


def test_strides_with_one_entry_per_layer_ignores_last():
    assert LinearConvNet([2, 2], [3, 5]) == LinearConvNet([2, 2], [3])


def test_polynomial_example():
    net = LinearConvNet([2, 2])
    poly = net.polynomial([[1.0, -1.0], [1.0, -0.5]])
    assert [fmpq_to_fraction(c) for c in net.coefficients(poly)] == [1, -1.5, 0.5]


@pytest.mark.parametrize(
    "shapes, strides, match",
    [
        ([], None, "non-empty"),
        ([0, 2], None, "positive"),
        ([2, -1], None, "positive"),
        ([(2, 2), 3], None, "same number of axes"),
        ([2, 2], [1, 1, 1], "one entry per layer"),
        ([2, 2], [0], "positive"),
        ([2, 2], [(1, 1)], "positive int"),
        ("22", None, "list"),
        ([2.5, 2], None, "list of ints"),
        ([(2, 2), (2, 2)], [3], None),
    ],
)
def test_bad_architectures(shapes, strides, match):
    if match is None:  # an int stride is broadcast to every axis: valid
        assert LinearConvNet(shapes, strides).strides == ((3, 3),)
        return
    with pytest.raises(ArchitectureError, match=match):
        LinearConvNet(shapes, strides)


def test_bad_params_and_signals():
    net = LinearConvNet([2, (3)], [2])
    good = net.random_params(0)
    with pytest.raises(ParameterError, match="one array per layer"):
        net.end_to_end(good[:1])
    with pytest.raises(ParameterError, match=r"shape \(3,\)"):
        net.end_to_end([good[0], np.ones(4)])
    with pytest.raises(ParameterError, match="finite"):
        net.ntk([good[0], np.array([1.0, np.nan, 0.0])])
    with pytest.raises(ParameterError, match="finite"):
        net.invariants([good[0], np.array([1.0, np.inf, 0.0])])
    with pytest.raises(InputError, match="shorter than the filter"):
        net.apply(good, np.ones(3))
    with pytest.raises(InputError, match="end-to-end shape"):
        net.vjp(good, np.ones(2))
    with pytest.raises(NeuromanifoldError):
        net.end_to_end("not params")


def test_repr_round_trip():
    net = LinearConvNet([(2, 3), (2, 2)], [(2, 1)])
    assert eval(repr(net), {"LinearConvNet": LinearConvNet}) == net
    assert math.prod(net.end_to_end_shape) == net.end_to_end_size


def test_bad_filters_rank_tol_and_polynomials():
    net = LinearConvNet([2, 2])
    with pytest.raises(InputError, match="one entry per axis"):
        correlate([1.0, 2.0, 3.0], [])
    with pytest.raises(InputError, match="one entry per axis"):
        correlate([1.0, 2.0, 3.0], 2.0)
    with pytest.raises(InputError, match="stride"):
        upsample(np.ones(2), (0,))
    with pytest.raises(InputError, match="tol must be a positive"):
        net.rank(net.random_params(0), tol=-1.0)
    with pytest.raises(InputError, match="fmpq_mpoly"):
        net.coefficients("t^2")


def test_exact_target_is_the_exact_rational_data(rng):
    net = LinearConvNet([(2, 2), (3, 2)])
    params = net.random_params(rng)
    poly, deltas = net.exact_target(params)
    assert poly == net.polynomial(params)
    exact = [sum(fmpq_to_fraction(to_fmpq(float(c))) ** 2 for c in w.ravel()) for w in params]
    assert [fmpq_to_fraction(d) for d in deltas] == [exact[1] - exact[0]]
    assert float(deltas[0]) == pytest.approx(net.invariants(params)[0], rel=1e-12)


# ------------------------------------------------------------ the structured NTK fast path
def _reference_ntk(net, params):
    """The previous construction: J_l scattered from the D-dimensional P_l, J J^T."""
    J = np.hstack(net._jacobian_blocks(net.check_params(params)))
    return J, J @ J.T


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@given(net=conv_nets(max_k=6), seed=st.integers(0, 2**31), zeros=st.integers(0, 3))
def test_flat_jacobian_and_ntk_equal_the_reference(net, seed, zeros):
    """J^T from flat partial products equals the D-dimensional construction, and the NTK
    its Gram matrix to 1e-12 relative, also with exact zero filter entries."""
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    for _ in range(zeros):  # adversarial: exact zeros anywhere (also a whole filter)
        l = int(rng.integers(len(params)))
        params[l].flat[int(rng.integers(params[l].size))] = 0.0
    J0, K0 = _reference_ntk(net, params)
    J, K = net.jacobian(params), net.ntk(params)
    assert J.flags.c_contiguous and J.shape == J0.shape
    assert _rel(J, J0) <= 1e-12 and _rel(K, K0) <= 1e-12
    assert np.array_equal(K, K.T)


@pytest.mark.parametrize(
    "shapes, strides",
    [
        ([60] * 5, [2, 2, 2, 2]),  # FFT convolutions in the flat form
        ([(7, 7)] * 4, [(2, 2), (1, 1), (1, 1)]),  # long, sparse flat 2D filters
        ([(3, 1, 2), (1, 4, 1), (2, 2, 2)], [(1, 3, 1), (2, 1, 2)]),
        ([1, 1, 1], [5, 7]),  # size-1 filters, strides beyond them
        ([(1, 5), (4, 1)], [(3, 3)]),
    ],
)
def test_flat_ntk_on_larger_and_degenerate_nets(shapes, strides):
    net = LinearConvNet(shapes, strides)
    params = net.random_params(3)
    J0, K0 = _reference_ntk(net, params)
    assert _rel(net.jacobian(params), J0) <= 1e-12
    assert _rel(net.ntk(params), K0) <= 1e-12


def test_ntk_overflow_is_an_error_and_large_finite_kernels_are_not():
    net = LinearConvNet([3, 2], strides=[2])
    params = net.random_params(0)
    with pytest.raises(ParameterError, match="overflow: the NTK"):
        net.ntk([params[0] * 1e160, params[1] * 1e160])  # K ~ 1e320
    big = [params[0] * 1e151, params[1] * 1e151]  # trace ~1e302: the full check runs
    K = net.ntk(big)
    assert np.isfinite(K).all() and np.trace(K) > 1e300
    assert _rel(K, _reference_ntk(net, big)[1]) <= 1e-12


def test_correlation_near_the_float_range_is_exact_or_refused():
    import neuromanifold as nm

    y = nm.correlate(np.array([[1.7e308, -1.7e308, 1.0]]), np.array([1.0, 1.0]), 1)
    assert y.tolist() == [[0.0, -1.7e308]]
    with pytest.raises(nm.ParameterError, match="correlation is not finite"):
        nm.correlate(np.array([[1.7e308, 1.7e308, 1.0]]), np.array([1.0, 1.0]), 1)


def test_an_ntk_too_large_to_allocate_is_refused_with_the_limit():
    import neuromanifold as nm

    net = nm.LinearConvNet([6000, 6000])  # v has 11,999 entries: K would be 1.4e8
    with pytest.raises(nm.ArchitectureError, match="Jacobian and NTK: .* more than the limit"):
        net.ntk(net.random_params(seed=0))
