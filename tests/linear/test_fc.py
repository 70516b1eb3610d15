"""LinearFCNet: end-to-end map, Jacobian, NTK operator, invariants, balanced A_W
(docs/concepts_linear.md §3, 1.4)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuromanifold import (
    ArchitectureError,
    InputError,
    LinearFCNet,
    ParameterError,
    balanced_ntk_operator,
)
from tests.support.common import fc_nets, fd_jacobian


@given(net=fc_nets(), seed=st.integers(0, 2**31))
def test_jacobian_ntk_vjp(net, seed):
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    W = net.end_to_end(params)
    expected = np.eye(net.widths[0])
    for M in params:
        expected = M @ expected
    np.testing.assert_allclose(W, expected)
    J = net.jacobian(params)
    np.testing.assert_allclose(J, fd_jacobian(net, params), atol=1e-7)
    np.testing.assert_allclose(net.ntk(params), J @ J.T, atol=1e-10)
    G = rng.standard_normal(net.end_to_end_shape)
    grads = np.concatenate([a.ravel() for a in net.vjp(params, G)])
    np.testing.assert_allclose(grads, J.T @ G.ravel(), atol=1e-10)
    x = rng.standard_normal((3, net.widths[0]))
    np.testing.assert_allclose(net.apply(params, x), x @ W.T, atol=1e-12)


@given(net=fc_nets(), seed=st.integers(0, 2**31))
def test_dimension_and_exact_rank(net, seed):
    params = net.random_params(seed)
    assert net.rank(params).rank == net.dimension
    assert net.rank(params, exact=True).rank == net.dimension


@given(net=fc_nets(), seed=st.integers(0, 2**31))
def test_balanced_ntk_equals_A_W(net, seed):
    """docs/concepts_linear.md §3 [checked]: balanced parameters have K = A_W, to 1e-10."""
    params = net.balanced_params(seed)
    for D in net.invariants(params):
        assert np.abs(D).max() < 1e-12
    W = net.end_to_end(params)
    K = net.ntk(params)
    A = balanced_ntk_operator(W, net.num_layers)
    assert np.abs(K - A).max() <= 1e-10 * max(1.0, np.abs(K).max())


def test_unbalanced_ntk_differs_from_A_W():
    net = LinearFCNet([2, 2, 2])
    params = net.random_params(3)
    K = net.ntk(params)
    A = balanced_ntk_operator(net.end_to_end(params), 2)
    assert np.abs(K - A).max() > 1e-3


def test_balanced_params_with_given_end_to_end():
    net = LinearFCNet([3, 2, 3])
    rng = np.random.default_rng(0)
    W = rng.standard_normal((3, 2)) @ rng.standard_normal((2, 3))
    params = net.balanced_params(1, end_to_end=W)
    np.testing.assert_allclose(net.end_to_end(params), W, atol=1e-12)
    with pytest.raises(ParameterError, match="rank"):
        net.balanced_params(1, end_to_end=rng.standard_normal((3, 3)))


@given(net=fc_nets(), seed=st.integers(0, 2**31))
def test_symmetries(net, seed):
    """W_l -> G_l W_l G_{l-1}^{-1} keeps W; orthogonal G keep Delta and K (docs/concepts_linear.md
    §4)."""
    rng = np.random.default_rng(seed)
    params = net.random_params(rng)
    W, K = net.end_to_end(params), net.ntk(params)
    inv = net.invariants(params)
    Qs = [np.linalg.qr(rng.standard_normal((d, d)))[0] for d in net.widths[1:-1]]
    moved = []
    for l, M in enumerate(params):
        left = Qs[l] if l < len(Qs) else np.eye(M.shape[0])
        right = Qs[l - 1].T if l >= 1 else np.eye(M.shape[1])
        moved.append(left @ M @ right)
    np.testing.assert_allclose(net.end_to_end(moved), W, atol=1e-10)
    np.testing.assert_allclose(net.ntk(moved), K, atol=1e-10)
    for D0, D1, Q in zip(inv, net.invariants(moved), Qs):
        np.testing.assert_allclose(D1, Q @ D0 @ Q.T, atol=1e-10)


def test_bad_input():
    with pytest.raises(ArchitectureError, match="at least two"):
        LinearFCNet([3])
    with pytest.raises(ArchitectureError, match="positive"):
        LinearFCNet([3, 0, 2])
    net = LinearFCNet([2, 3, 2])
    params = net.random_params(0)
    with pytest.raises(ParameterError, match=r"shape \(3, 2\)"):
        net.end_to_end([params[0].T, params[1]])
    with pytest.raises(ParameterError, match="one array per layer"):
        net.ntk(params[:1])
    with pytest.raises(ParameterError, match="finite"):
        net.invariants([params[0] * np.nan, params[1]])
    with pytest.raises(InputError, match=r"\(\.\.\., 2\)"):
        net.apply(params, np.ones(3))
    with pytest.raises(InputError, match="num_layers"):
        balanced_ntk_operator(np.eye(2), 0)
