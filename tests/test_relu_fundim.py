"""Functional dimension: exact rank, the bound P - hidden, and where it is reached."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu import ReLUNet, bent_hyperplanes, functional_dimension
from neuromanifold.relu._fundim import _region_rows
from neuromanifold.relu._regions import _compute


@settings(max_examples=20, deadline=None)
@given(widths=st.lists(st.integers(1, 3), min_size=2, max_size=4), seed=st.integers(0, 10**6),
       domain=st.sampled_from([None, "orthant", (-1, 1)]))
def test_never_exceeds_bound_and_dominates_sampled_rank(widths, seed, domain):
    net = ReLUNet(widths)
    p = net.random_params(seed)
    fd = functional_dimension(p, domain=domain)
    assert fd.certified and fd.num_params == net.num_params and fd.num_hidden == net.num_hidden
    assert fd.rank <= fd.bound
    # the float Jacobian at random inputs of the domain spans a subspace of the same space
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (200, widths[0]))
    if domain == "orthant":
        X = np.abs(X) * 3
    elif domain is None:
        X = X * 4
    J = net.jacobian(p, X)
    s = np.linalg.svd(J, compute_uv=False)
    assert int(np.sum(s > 1e-9 * max(1.0, s[0]))) <= fd.rank


def test_exact_rows_match_the_float_jacobian():
    net = ReLUNet([3, 4, 4, 2])
    p = net.random_params(0)
    R, cells, enet, _ = _compute(p, None, False)
    for cell in cells[:8]:
        rows, smooth = _region_rows(enet, cell.patterns[0], cell.center_q)
        assert smooth
        d, m = 3, 2
        J = net.jacobian(p, cell.center_f[None, :])
        exact = np.array([[float(v) for v in rows[o * (d + 1)]] for o in range(m)])
        np.testing.assert_allclose(exact, J, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("widths", [[2, 3, 1], [3, 4, 4, 1]])
def test_reaches_bound_when_every_neuron_bends(widths):
    """Draws where bent_hyperplanes says every neuron bends somewhere reach P - hidden.
    The fraction of such draws is printed (run with -s); it must be positive."""
    draws = 6
    meeting = 0
    for seed in range(draws):
        p = ReLUNet(widths).random_params(seed)
        if not bent_hyperplanes(p).all_visible:
            continue
        meeting += 1
        fd = functional_dimension(p)
        assert fd.rank == fd.bound, (widths, seed, fd)
    print(f"{widths}: {meeting}/{draws} draws have every neuron visible")
    assert meeting > 0


def test_dead_neuron_lowers_the_rank():
    p = ReLUNet([2, 3, 1]).random_params(0)
    fd = functional_dimension(p)
    assert fd.at_bound
    W1, b1 = p[0]
    W1, b1 = W1.copy(), b1.copy()
    W1[1] = 0.0
    b1[1] = -1.0  # neuron 1 is inactive on all of R^2
    dead = [(W1, b1), p[1]]
    assert bent_hyperplanes(dead).neurons[1].status == "dead"
    fd_dead = functional_dimension(dead)
    assert fd_dead.rank < fd_dead.bound
    # its 3 incoming and 1 outgoing coordinates are dead, against 1 for its rescaling
    assert fd_dead.rank <= fd.rank - 3


def test_zero_preactivation_is_flagged_not_smooth():
    # the second neuron's pre-activation is identically 0: theta -> f is not differentiable
    p = [(np.array([[1.0], [0.0]]), np.array([0.0, 0.0])), (np.array([[1.0, 1.0]]), np.zeros(1))]
    fd = functional_dimension(p)
    assert not fd.smooth


def test_domain_matters():
    # both kinks at x < 0: on the orthant the network is affine, so only 2 directions remain
    p = [(np.array([[1.0], [1.0]]), np.array([1.0, 2.0])), (np.array([[1.0, -1.0]]), np.zeros(1))]
    assert functional_dimension(p).rank > functional_dimension(p, "orthant").rank
