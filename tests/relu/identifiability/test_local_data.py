"""Local identifiability from data points: the exact rank at the points against the float
rank of the dense Jacobian there (an independent computation), a ``False`` re-checked by a
parameter off the orbit with the same values at the points, too few points undecided, and
bad data refused."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError
from neuromanifold.relu import DeepFiber, Identifiability, ReLUNet, fiber, forward, identifiability
from neuromanifold.relu._fundim.points import point_jacobian_rank
from neuromanifold.relu._symmetries.orbit import orbit_gap


def _hidden(P):
    return sum(W.shape[0] for W, _ in P[:-1])


def _num_params(P):
    return sum(W.size + b.size for W, b in P)


def float_rank(P, X):
    widths = [P[0][0].shape[1]] + [W.shape[0] for W, _ in P]
    s = np.linalg.svd(ReLUNet(widths).jacobian(P, X), compute_uv=False)
    return int(np.sum(s > 1e-9 * s[0])) if s.size else 0


@settings(max_examples=20, deadline=None)
@given(
    widths=st.sampled_from([[3, 5, 4, 2], [4, 6, 1], [2, 3, 3, 3, 1], [3, 4, 2]]),
    n=st.integers(1, 120),
    seed=st.integers(0, 10**6),
)
def test_the_rank_at_the_points_is_the_float_rank_of_the_dense_jacobian(widths, n, seed):
    P = ReLUNet(widths).random_params(seed)
    X = np.random.default_rng(seed).standard_normal((n, widths[0])) * 2
    rank, used, _ = point_jacobian_rank(P, X, 10**9)
    assert used == n  # Gaussian points: every pattern proven
    assert rank == float_rank(P, X)


@settings(max_examples=12, deadline=None)
@given(
    widths=st.sampled_from([[3, 5, 4, 2], [2, 4, 3, 1], [3, 4, 2]]),
    seed=st.integers(0, 10**6),
)
def test_the_data_verdict_agrees_with_the_float_rank_and_with_moves(widths, seed):
    P = ReLUNet(widths).random_params(seed)
    X = np.random.default_rng(seed).standard_normal((400, widths[0])) * 3
    r = identifiability(P, data=X, time_limit=30)
    assert r.local_num_data_points == 400 and r.local_domain is None
    bound = _num_params(P) - _hidden(P)
    if r.locally_identifiable is True:
        assert r.jacobian_rank == bound == float_rank(P, X)
    if r.locally_identifiable is None and r.jacobian_rank is not None:
        assert r.jacobian_rank < bound


def test_a_neuron_negative_at_every_data_point_frees_its_weights():
    """The False is re-checked: its outgoing column changed, the values at the points
    stay, and the parameter leaves the orbit (on R^d it is locally identifiable)."""
    P = ReLUNet([3, 5, 4, 2]).random_params(3)
    X = np.random.default_rng(0).standard_normal((300, 3))
    W, b = P[0]
    b[0] = -np.abs(X @ W[0]).max() - 0.5  # negative at every data point, not on R^d
    r = identifiability(P, data=X)
    assert r.locally_identifiable is False
    assert "negative throughout" in r.local_reason and "300 data points" in r.describe()
    Q = [(W.copy(), b.copy()) for W, b in P]
    Q[1][0][:, 0] += 1.0
    assert np.array_equal(forward(Q, X), forward(P, X))
    assert orbit_gap(P, Q) > 1e-6
    assert identifiability(P, local=True).locally_identifiable is True
    back = Identifiability.from_dict(r.to_dict())
    assert back.local_num_data_points == 300 and back.locally_identifiable is False


def test_few_points_do_not_decide_it_and_many_do():
    P = ReLUNet([3, 5, 4, 2]).random_params(3)
    rng = np.random.default_rng(1)
    few = identifiability(P, data=rng.standard_normal((3, 3)))
    assert few.locally_identifiable is not True  # neurons negative at all 3: free weights
    many = identifiability(P, data=rng.standard_normal((500, 3)) * 3)
    assert many.locally_identifiable is True and many.jacobian_rank == 54 - 9
    assert "data points" in many.local_reason


def test_too_many_parameters_for_the_dense_rank_are_said():
    P = ReLUNet([100, 70, 10]).random_params(0)  # P = 7,780
    r = identifiability(P, data=np.random.default_rng(0).standard_normal((20, 100)))
    if r.locally_identifiable is None:
        assert "6,000" in r.local_reason


def test_bad_data_is_refused():
    P = ReLUNet([3, 4, 2]).random_params(0)
    with pytest.raises(InputError, match="3 columns"):
        identifiability(P, data=np.zeros((5, 2)))
    with pytest.raises(InputError, match="at least one row"):
        identifiability(P, data=np.zeros((0, 3)))
    with pytest.raises(InputError, match="not both"):
        identifiability(P, (np.zeros(3), np.ones(3)), data=np.zeros((5, 3)))
    with pytest.raises(InputError):
        identifiability(P, data=np.full((5, 3), np.nan))


@settings(max_examples=10, deadline=None)
@given(
    widths=st.sampled_from([[3, 5, 4, 2], [2, 4, 3, 3, 1], [3, 4, 2]]),
    n=st.integers(1, 60),
    seed=st.integers(0, 10**6),
)
def test_the_data_fiber_keeps_the_values_and_its_bounds_hold(widths, n, seed):
    """Every sample of the fiber at the data points has the same values there; the
    dimension the moves generate never exceeds ``P - rank`` at the points, whose rank is
    the float rank of the dense Jacobian there."""
    P = ReLUNet(widths).random_params(seed)
    X = np.random.default_rng(seed).standard_normal((n, widths[0]))
    F = fiber(P, data=X, time_limit=30)
    assert F.num_data_points == n and F.domain is None
    assert F.jacobian_rank == float_rank(P, X)
    assert F.dimension <= F.kernel_dimension
    for Q in F.sample(3, seed=seed):
        assert np.allclose(forward(Q, X), forward(P, X), rtol=1e-9, atol=1e-9)
    back = fiber(P, data=X, time_limit=30).to_dict()
    assert DeepFiber.from_dict(back).num_data_points == n


def test_the_fiber_refuses_a_domain_and_data_together():
    P = ReLUNet([3, 4, 2]).random_params(0)
    with pytest.raises(InputError, match="not both"):
        fiber(P, (np.zeros(3), np.ones(3)), data=np.zeros((5, 3)))
    with pytest.raises(InputError, match="3 columns"):
        fiber(P, data=np.zeros((5, 4)))


def test_no_hidden_layer_needs_enough_points_to_be_determined():
    """f(x) = W x + b is not determined by its value at one point (found in review)."""
    P = [(np.array([[1.0, 2.0]]), np.array([0.5]))]
    one = identifiability(P, data=np.array([[0.0, 1.0]]))
    assert one.locally_identifiable is not True
    Q = [(np.array([[1.0, 2.0 + 0.25]]), np.array([0.5 - 0.25]))]  # same value at (0, 1)
    assert np.array_equal(forward(Q, np.array([[0.0, 1.0]])), forward(P, np.array([[0.0, 1.0]])))
    three = identifiability(P, data=np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    assert three.locally_identifiable is True
    assert "1 data point:" in one.describe()


def test_an_input_constant_on_the_data_frees_the_weights_on_it():
    """A blank border pixel: the first layer's weights on it trade with the biases. The
    False is re-checked by that move: the same values at the data, off the orbit."""
    P = ReLUNet([3, 5, 4, 2]).random_params(3)
    X = np.random.default_rng(0).standard_normal((400, 3)) * 3
    X[:, 1] = 0.5
    r = identifiability(P, data=X)
    assert r.locally_identifiable is False and "input 1 is 0.5" in r.local_reason
    Q = [(W.copy(), b.copy()) for W, b in P]
    delta = np.linspace(0.25, 1.0, 5)
    Q[0][0][:, 1] += delta
    Q[0][1][:] -= 0.5 * delta
    assert np.allclose(forward(Q, X), forward(P, X), rtol=1e-12, atol=1e-12)
    assert orbit_gap(P, Q) > 1e-6
    F = fiber(P, data=X)
    assert any(f.kind == "constant_input" and f.input_index == 1 for f in F.families)
    for S in F.sample(3, seed=1):
        assert np.allclose(forward(S, X), forward(P, X), rtol=1e-9, atol=1e-9)


def test_points_on_a_line_leave_it_undecided_without_walking_every_point():
    """Data on a line through the input space (no coordinate constant): the rank stalls
    below P - H, and the search stops after batches that add nothing."""
    P = ReLUNet([3, 5, 4, 2]).random_params(3)
    t = np.random.default_rng(0).standard_normal((5000, 1)) * 3
    X = t * np.array([[1.0, 0.5, -0.25]]) + np.array([[0.1, 0.2, 0.3]])
    rank, used, why = point_jacobian_rank(P, X, 45)
    assert rank < 45 and used < 5000 and "did not raise the rank" in why
    r = identifiability(P, data=X)
    assert r.locally_identifiable is not True


def test_a_network_of_fractions_gets_no_local_verdict_from_its_rounding():
    """Found in review: the local verdict ran on the float64 copy of exact entries,
    where two rows parallel in exact arithmetic are not."""
    from fractions import Fraction as F

    r1 = [F(1, 3), F(1, 10), F(-2, 7)]
    r2 = [3 * v for v in r1]  # row 2 = 3 row 1, exactly
    P = [
        (np.array([r1[:2], r2[:2], [1, -1]], dtype=object), np.array([r1[2], r2[2], F(1, 5)])),
        (np.array([[1, 2, -1]], dtype=object), np.array([0], dtype=object)),
    ]
    r = identifiability(P, (-3 * np.ones(2), 3 * np.ones(2)))
    assert r.locally_identifiable is None and "float64" in r.local_reason
    with pytest.raises(InputError, match="float64"):
        fiber(P, data=np.zeros((3, 2)))
