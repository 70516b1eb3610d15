"""ReLUNet, forward, the analytic parameter Jacobian, domains, and bad-input errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold import ArchitectureError, DomainError, InputError, ParameterError
from neuromanifold.relu import Domain, ReLUNet, as_domain, check_params, forward

widths_st = st.lists(st.integers(1, 4), min_size=2, max_size=4)


@settings(max_examples=25, deadline=None)
@given(widths=widths_st, seed=st.integers(0, 10**6))
def test_jacobian_matches_finite_differences(widths, seed):
    net = ReLUNet(widths)
    params = net.random_params(seed)
    X = np.random.default_rng(seed).standard_normal((3, widths[0]))
    J = net.jacobian(params, X)
    theta = net.flatten(params)
    eps = 1e-6
    cols = []
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        cols.append(
            (
                net.forward(net.unflatten(theta + e), X) - net.forward(net.unflatten(theta - e), X)
            ).ravel()
            / (2 * eps)
        )
    fd = np.stack(cols, axis=1)
    # a kink within eps of a sample would spoil finite differences: skip those samples
    H, near_kink = X, np.zeros(len(X), bool)
    for W, b in params[:-1]:
        Z = H @ W.T + b
        near_kink |= np.any(np.abs(Z) < 1e-4, axis=1)
        H = np.maximum(Z, 0)
    rows = np.repeat(~near_kink, widths[-1])
    assert J.shape == (len(X) * widths[-1], net.num_params)
    np.testing.assert_allclose(J[rows], fd[rows], atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(widths=widths_st, seed=st.integers(0, 10**6))
def test_flatten_roundtrip_and_forward_shapes(widths, seed):
    net = ReLUNet(widths)
    p = net.random_params(seed)
    q = net.unflatten(net.flatten(p))
    X = np.random.default_rng(seed).standard_normal((5, widths[0]))
    np.testing.assert_array_equal(forward(p, X), forward(q, X))
    assert forward(p, X).shape == (5, widths[-1])
    assert forward(p, X[0]).shape == (widths[-1],)
    assert ReLUNet.from_params(p) == net


def test_forward_is_relu_composition():
    p = [
        (np.array([[1.0], [-1.0]]), np.array([0.0, 1.0])),
        (np.array([[2.0, 3.0]]), np.array([0.5])),
    ]
    x = np.array([[-2.0], [0.5], [3.0]])
    expect = 2 * np.maximum(x, 0) + 3 * np.maximum(1 - x, 0) + 0.5
    np.testing.assert_allclose(forward(p, x), expect)


def test_counts():
    net = ReLUNet([3, 4, 4, 1])
    assert net.num_params == 16 + 20 + 5
    assert net.num_hidden == 8


@pytest.mark.parametrize("bad", [[], [3], "abc", [2, 0, 1], [2, -1], [2.5, 1], None])
def test_bad_widths(bad):
    with pytest.raises(ArchitectureError):
        ReLUNet(bad)


def test_bad_params_messages():
    good = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(ParameterError, match="columns"):
        check_params([good[0], (np.ones((1, 2)), np.zeros(1))])  # shape mismatch
    with pytest.raises(ParameterError, match="finite"):
        check_params([(np.full((3, 2), np.nan), np.zeros(3)), good[1]])
    with pytest.raises(ParameterError, match="at least one row"):
        check_params(
            [(np.zeros((0, 2)), np.zeros(0)), (np.zeros((1, 0)), np.zeros(1))]
        )  # empty layer
    with pytest.raises(ParameterError, match="one entry per row"):
        check_params([(np.ones((3, 2)), np.zeros(2)), good[1]])
    with pytest.raises(ParameterError):
        check_params([])
    with pytest.raises(ParameterError, match="widths"):
        ReLUNet([2, 4, 1]).check_params(good)


def test_bad_inputs():
    p = ReLUNet([2, 3, 1]).random_params(0)
    with pytest.raises(InputError, match=r"shape \(N, 2\)"):
        forward(p, np.ones((4, 3)))
    with pytest.raises(InputError, match="finite"):
        forward(p, [[np.inf, 0.0]])
    with pytest.raises(InputError):
        ReLUNet([2, 3, 1]).jacobian(p, np.ones((4, 3)))


def test_domains():
    assert as_domain(None, 3).kind == "whole"
    o = as_domain("orthant", 2)
    assert o.contains([[1.0, 0.0]])[0] and not o.contains([[-1.0, 0.0]])[0]
    b = as_domain(([-1, 0], [1, 2]), 2)
    assert b.is_bounded and b.contains([[0.0, 1.0]])[0] and not b.contains([[0.0, 3.0]])[0]
    assert as_domain(Domain.box([0.0], [1.0]), 1).kind == "box"
    with pytest.raises(DomainError, match="dimension"):
        as_domain(([-1, -1, -1], [1, 1, 1]), 2)  # box of wrong dimension
    with pytest.raises(DomainError, match="dimension"):
        as_domain(Domain.orthant(3), 2)
    with pytest.raises(DomainError, match="lower <= upper"):
        as_domain((1, 0), 2)
    with pytest.raises(DomainError):
        as_domain("sphere", 2)
    with pytest.raises(DomainError):
        as_domain(((0, np.nan), (1, 1)), 2)
    with pytest.raises(DomainError, match="box bound"):
        as_domain(("a", "b"), 2)  # not numbers
    for bad in (0, -1, "a", 2.0):
        with pytest.raises(DomainError, match="positive integer"):
            Domain.whole(bad)
        with pytest.raises(DomainError, match="positive integer"):
            Domain.orthant(bad)
        with pytest.raises(DomainError, match="positive integer"):
            as_domain(None, bad)


def test_analyses_reject_domain_of_wrong_dimension():
    p = ReLUNet([2, 3, 1]).random_params(0)
    for f in (nm.relu.regions, nm.relu.bent_hyperplanes, nm.relu.functional_dimension):
        with pytest.raises(DomainError):
            f(p, domain=Domain.orthant(3))
    with pytest.raises(DomainError):
        nm.relu.equivalent(p, p, domain=([0, 0, 0], [1, 1, 1]))


def test_non_real_weights_are_rejected():
    from neuromanifold import ParameterError
    from neuromanifold.relu import check_params, regions

    for W in (np.array([[1 + 2j]]), [["1.5"]], [[True]], np.array([[None]], dtype=object)):
        with pytest.raises(ParameterError):
            check_params([(W, [0.0]), ([[1.0]], [0.0])])
        with pytest.raises(ParameterError):
            regions([(W, [0.0]), ([[1.0]], [0.0])])
