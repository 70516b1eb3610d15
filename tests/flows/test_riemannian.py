"""Riemannian gradient flow in function space (docs/concepts_linear.md §5): lifting, agreement with
the parameter flow where the NTK is parameter-independent, different flows from different
lifts where it is not."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import (
    ComputationLimitError,
    InputError,
    LinearConvNet,
    LinearFCNet,
    NeuromanifoldError,
    NotInNeuromanifoldError,
    ParameterError,
    QuadraticLoss,
    SingularPointError,
    SquareLoss,
    gradient_flow,
)
from neuromanifold.flows import (
    compare_lifts,
    compare_with_parameter_flow,
    invariant_vector,
    lift_to_fiber,
    riemannian_flow,
)
from neuromanifold.flows._gradient_flow import parameter_velocity
from neuromanifold.linear._base import LinearNetBase
from neuromanifold.linear._flow_paths import Conv1DFastPath


def _loss(net, rng, spread=1.0):
    n = net.end_to_end_size
    A = rng.standard_normal((n + 2, n))
    return QuadraticLoss(A.T @ A / n, spread * rng.standard_normal(n))


def _stride1_lifts():
    """The two fiber points of v0 = (1, -3, 2), delta = 1 for k = (2, 2), stride 1
    (docs/concepts_linear.md §3),
    by hand: pi(v0) = (1 - t)(1 - 2t); layer 1 takes root 1 (lift A) or root 1/2 (lift B),
    and c^2 = ||w_1||^2 / ||root factor||^2 solves the rescaling equation for delta = 1."""
    xa = (-1 + np.sqrt(41)) / 4  # 5 / x - 2 x = 1
    xb = (-1 + np.sqrt(41)) / 10  # 2 / x - 5 x = 1
    A = [np.sqrt(xa) * np.array([1.0, -1.0]), np.array([1.0, -2.0]) / np.sqrt(xa)]
    B = [np.sqrt(xb) * np.array([1.0, -2.0]), np.array([1.0, -1.0]) / np.sqrt(xb)]
    return A, B


# ---------------------------------------------------------------------------- lifting
@given(
    seed=st.integers(0, 10**6),
    arch=st.sampled_from(
        [
            ([2, 2], [2]),
            ([3, 2, 2], [2, 2]),
            ([2, 3], [3]),
            ([(2, 2), (3, 2)], [(1, 1)]),
            ([(2, 1), (2, 2)], [(2, 1)]),
        ]
    ),
)
@settings(max_examples=25)
def test_lift_returns_to_the_nearby_fiber_point(seed, arch):
    """From a perturbed start, Gauss-Newton lands on the isolated fiber point it started near."""
    net = LinearConvNet(*arch)
    rng = np.random.default_rng(seed)
    theta = net.random_params(rng)
    start = [w + 1e-3 * np.linalg.norm(w) * rng.standard_normal(w.shape) for w in theta]
    lift = lift_to_fiber(net, net.end_to_end(theta), net.invariants(theta), start)
    assert lift.converged and lift.residual < 1e-12
    for a, b in zip(lift.params, theta):
        np.testing.assert_allclose(a, b, atol=1e-9 * max(1.0, np.abs(b).max()))


@given(seed=st.integers(0, 10**6))
@settings(max_examples=10)
def test_lift_on_positive_dimensional_fiber(seed):
    """Fully connected: the lift reaches the fiber (same W, same Delta), moving little."""
    net = LinearFCNet([2, 3, 2])
    rng = np.random.default_rng(seed)
    theta = net.random_params(rng)
    start = [W + 1e-4 * rng.standard_normal(W.shape) for W in theta]
    lift = lift_to_fiber(net, net.end_to_end(theta), net.invariants(theta), start)
    assert lift.converged and lift.residual < 1e-12
    np.testing.assert_allclose(net.end_to_end(lift.params), net.end_to_end(theta), atol=1e-11)
    np.testing.assert_allclose(
        invariant_vector(net, lift.params), invariant_vector(net, theta), atol=1e-11
    )


@pytest.mark.parametrize("net", [LinearConvNet([3, 2], [2]), LinearFCNet([2, 3, 2])], ids=repr)
def test_invariant_jacobian_matches_finite_differences(net, rng):
    params = net.random_params(rng)
    theta = net.flatten(params)
    fd = np.array(
        [
            (
                invariant_vector(net, net.unflatten(theta + 1e-6 * e))
                - invariant_vector(net, net.unflatten(theta - 1e-6 * e))
            )
            / 2e-6
            for e in np.eye(theta.size)
        ]
    ).T
    np.testing.assert_allclose(net.invariant_jacobian(params), fd, atol=1e-7)
    # the generic unit-step central difference (exact for quadratics) is the same matrix
    np.testing.assert_allclose(
        LinearNetBase.invariant_jacobian(net, params), net.invariant_jacobian(params), atol=1e-12
    )


# ---------------------------------------------------------------------------- agreement
@pytest.mark.parametrize(
    "net",
    [LinearConvNet([3, 2], strides=[2]), LinearConvNet([(2, 2), (2, 3)], strides=[(1, 1)])],
    ids=repr,
)
@pytest.mark.parametrize("lift_from", ["fiber", "theta0"])
def test_riemannian_flow_reproduces_parameter_flow(net, lift_from, rng):
    """NTK parameter-independent (1D strided; 2D, distinct shapes): same v(t) to 1e-6,
    whether the initial lift is taken from the fiber or is theta0 itself."""
    theta = net.random_params(rng)
    loss = _loss(net, rng)
    cmp = compare_with_parameter_flow(
        net, theta, loss, 1.0, num_times=11, lift=theta if lift_from == "theta0" else None
    )
    assert cmp.max_difference < 1e-6
    # not trivially: the trajectory moved and stayed on the fiber of delta
    assert np.linalg.norm(cmp.parameter.end_to_end[-1] - cmp.parameter.end_to_end[0]) > 1e-2
    assert cmp.riemannian.max_lift_residual < 1e-8
    for p in cmp.riemannian.lifts:
        np.testing.assert_allclose(net.invariants(p), net.invariants(theta), atol=1e-9)
    assert cmp.riemannian.loss[-1] < cmp.riemannian.loss[0] and cmp.riemannian.loss_monotone


def test_two_lifts_give_two_trajectories():
    """1D, stride 1, k = (2, 2), v0 = (1, -3, 2), delta = 1: the two lifts (root 1 or root 1/2
    in layer 1) have different NTK, and the Riemannian flows from them differ. Recomputed:
    each is the parameter flow from its lift."""
    net = LinearConvNet([2, 2])
    A, B = _stride1_lifts()
    for p in (A, B):  # the hand-made lifts are fiber points
        np.testing.assert_allclose(net.end_to_end(p), [1.0, -3.0, 2.0], atol=1e-14)
        np.testing.assert_allclose(net.invariants(p), [1.0], atol=1e-14)
    loss = QuadraticLoss(np.eye(3), [1.0, -2.5, 1.0])
    cmp = compare_lifts(net, [1.0, -3.0, 2.0], [1.0], loss, 1.0, lifts=[A, B], num_times=11)
    assert cmp.initial_ntk_difference > 1e-2
    assert cmp.max_difference > 1e-3
    assert cmp.pair == (0, 1)
    for traj, lift in zip(cmp.trajectories, (A, B)):
        par = gradient_flow(net, lift, loss, 1.0, num_times=11)
        np.testing.assert_allclose(traj, par.end_to_end, atol=1e-7)
    # and the two recomputed parameter flows differ by the reported amount
    pa, pb = (gradient_flow(net, p, loss, 1.0, num_times=11).end_to_end for p in (A, B))
    assert (
        abs(
            np.linalg.norm(pa - pb, axis=1).max() / max(1.0, np.abs(cmp.trajectories).max())
            - cmp.max_difference
        )
        < 1e-6
    )


def test_two_lifts_from_the_fiber():
    """The same comparison with the lifts taken from net.fiber: two points, two flows."""
    net = LinearConvNet([2, 2])
    loss = QuadraticLoss(np.eye(3), [1.0, -2.5, 1.0])
    cmp = compare_lifts(net, [1.0, -3.0, 2.0], [1.0], loss, 1.0, num_times=6)
    assert len(cmp.lifts) == 2
    assert cmp.max_difference > 1e-3
    hand = _stride1_lifts()
    for lift in cmp.lifts:  # each fiber point is one of the hand-made lifts, up to signs
        assert any(
            all(np.allclose(w, sign * h, atol=1e-9) for w, h in zip(lift, hp))
            for hp in hand
            for sign in (1.0, -1.0)
        )


def test_strided_lifts_agree_with_each_other(rng):
    """Strides > 1: every fiber point (there is one modulo signs) gives the same flow."""
    net = LinearConvNet([3, 2], strides=[2])
    theta = net.random_params(rng)
    flipped = [-theta[0], -theta[1]]
    cmp = compare_lifts(
        net,
        net.end_to_end(theta),
        net.invariants(theta),
        _loss(net, rng),
        0.5,
        lifts=[theta, flipped],
        num_times=5,
    )
    assert cmp.max_difference < 1e-9 and cmp.initial_ntk_difference < 1e-12


def test_fully_connected_flow_stays_on_the_fiber(rng):
    net = LinearFCNet([2, 2, 2])
    theta = net.random_params(rng)
    flow = riemannian_flow(
        net,
        net.end_to_end(theta),
        net.invariants(theta),
        _loss(net, rng),
        0.5,
        lift=theta,
        num_times=5,
    )
    assert flow.success and flow.max_lift_residual < 1e-9
    for p, v in zip(flow.lifts, flow.end_to_end):
        np.testing.assert_allclose(net.end_to_end(p), v, atol=1e-9)
        np.testing.assert_allclose(
            invariant_vector(net, p), invariant_vector(net, theta), atol=1e-9
        )


# ---------------------------------------------------------------------------- errors
def test_bad_inputs(rng):
    net = LinearConvNet([2, 2], strides=[2])
    theta = net.random_params(rng)
    v, d = net.end_to_end(theta), net.invariants(theta)
    loss = _loss(net, rng)
    with pytest.raises(InputError, match="t_final"):
        riemannian_flow(net, v, d, loss, -1.0, lift=theta)
    with pytest.raises(InputError, match="solver"):
        riemannian_flow(net, v, d, loss, 1.0, lift=theta, solver="Euler")
    with pytest.raises(InputError, match="entries"):
        riemannian_flow(net, v, d, QuadraticLoss(np.eye(3), np.zeros(3)), 1.0, lift=theta)
    with pytest.raises(InputError, match="v0"):
        riemannian_flow(net, v[:3], d, loss, 1.0, lift=theta)
    with pytest.raises(NotInNeuromanifoldError, match="initial lift"):
        # v0 far from the neuromanifold near this lift (dimension 3 < 4: not filling)
        riemannian_flow(net, [1.0, 0.0, 0.0, 5.0], d, loss, 1.0, lift=theta)
    with pytest.raises(InputError, match="lifts"):
        compare_lifts(net, v, d, loss, 1.0, lifts=[])
    with pytest.raises(InputError, match="rtol"):
        riemannian_flow(net, v, d, loss, 1.0, lift=theta, rtol="a")
    with pytest.raises(InputError, match="tol"):
        lift_to_fiber(net, v, d, theta, tol="a")


# ------------------------------------------------- issue 7.2: staying on the neuromanifold
def _teacher_problem(net, seed):
    """The issue's setting: a square loss from random data whose targets are realized by
    another network of the same architecture, and a random initialization."""
    rng = np.random.default_rng(seed)
    teacher = net.random_params(rng)
    shape = tuple(k + 2 * s for k, s in zip(net.end_to_end_shape, net.end_to_end_stride))
    X = rng.standard_normal((net.end_to_end_size + 2,) + shape)
    return SquareLoss.from_data(net, X, net.apply(teacher, X)), net.random_params(rng)


STRIDED = [
    LinearConvNet([3, 2, 2], strides=[2, 2]),
    LinearConvNet([2, 2], strides=[2]),
    LinearConvNet([2, 3, 2], strides=[3, 2]),
]


@pytest.mark.parametrize("net", STRIDED, ids=repr)
@pytest.mark.parametrize("seed", [0, 3])
def test_strided_flows_stay_on_the_neuromanifold(net, seed):
    """The issue's failing cases (seed 0 of [3, 2, 2] and [2, 3, 2] raised 'lost the fiber'):
    t_final = 1, initial lift from the fiber; the function-space trajectory is the
    parameter flow's to 1e-6, and the checks are at rounding level."""
    loss, theta = _teacher_problem(net, seed)
    cmp = compare_with_parameter_flow(net, theta, loss, 1.0, num_times=11)
    r = cmp.riemannian
    assert r.success and len(r.times) == 11
    assert cmp.max_difference < 1e-6
    assert np.linalg.norm(r.end_to_end[-1] - r.end_to_end[0]) > 1e-2  # it moved
    assert r.max_invariant_drift < 1e-8 and r.max_lift_residual < 1e-10
    assert r.max_kernel_mismatch < 1e-8 and r.lift_restarts == 0
    assert r.min_singular_value > r.singular_tol
    for p, v in zip(r.lifts, r.end_to_end):  # the carried lift realizes v(t) exactly
        np.testing.assert_allclose(net.end_to_end(p), v, rtol=0, atol=1e-14)


def _resultant(p, q):
    """Sylvester resultant of two polynomials (coefficient lists): zero iff they share a
    root, i.e. iff the Jacobian of (p, q) -> p q drops rank."""
    m, n = len(p) - 1, len(q) - 1
    S = np.zeros((m + n, m + n))
    for i in range(n):
        S[i, i : i + m + 1] = p
    for i in range(m):
        S[n + i, i : i + n + 1] = q
    return np.linalg.det(S)


@pytest.mark.parametrize(
    "arch,seed,t_final", [([2, 2], 5, 0.05), ([2, 2], 0, 0.3), ([3, 2], 3, 0.01), ([2, 2], 1, 0.5)]
)
def test_singular_points_are_where_two_layers_share_a_root(arch, seed, t_final):
    """Stride 1: the flow from each fiber point either finishes or stops with a
    SingularPointError; ground truth from the parameter flow: the resultant of the two
    layers changes sign (they share a root: the Jacobian drops rank) exactly there."""
    net = LinearConvNet(arch)
    loss, theta = _teacher_problem(net, seed)
    v0, delta = net.end_to_end(theta), net.invariants(theta)
    for lift in net.fiber(v0, delta).points:
        par = gradient_flow(net, lift, loss, t_final, num_times=401)
        res = np.array([_resultant(p[0], p[1]) for p in par.params])
        changes = par.times[1:][np.sign(res[1:]) != np.sign(res[:-1])]
        try:
            flow = riemannian_flow(net, v0, delta, loss, t_final, lift=lift, num_times=5)
        except SingularPointError as err:
            assert changes.size and abs(err.t - changes[0]) <= t_final / 400
            assert "singular point" in str(err) and f"t={err.t:.6g}"[:6] in str(err)
            np.testing.assert_allclose(err.v, net.end_to_end(net.unflatten(err.theta)))
            assert err.sigma <= 1e-9 and err.partial.times[-1] <= err.t
            assert isinstance(err, NeuromanifoldError) and not err.partial.success
            continue
        assert changes.size == 0 and flow.success
        np.testing.assert_allclose(flow.end_to_end[-1], par.end_to_end[-1], atol=1e-7)


def test_singular_at_the_start():
    """A double root shared by both layers: singular at t = 0, said so."""
    net = LinearConvNet([2, 2])
    lift = [np.array([1.0, -1.0]), np.array([1.0, -1.0])]
    with pytest.raises(SingularPointError, match=r"singular point .* at t=0"):
        riemannian_flow(
            net,
            net.end_to_end(lift),
            net.invariants(lift),
            QuadraticLoss(np.eye(3), [1.0, 0.0, 1.0]),
            1.0,
            lift=lift,
        )


@pytest.mark.parametrize(
    "arch,seed,expected",
    [
        (([2, 2],), 5, ["singular point", "singular point"]),
        (([2, 2],), 0, ["singular point", "singular point"]),
        (([3, 2], [1]), 3, ["singular point"] * 3),
        (([2, 2],), 1, ["finished", "finished"]),
        (([3, 2, 2], [2, 2]), 0, ["finished"]),
    ],
)
def test_compare_lifts_reports_each_outcome(arch, seed, expected):
    """Instances of the issue's compare_lifts runs (t = 2) that aborted: each lift's outcome
    is reported, with where its branch ended; trajectories compared where all exist."""
    net = LinearConvNet(*arch)
    loss, theta = _teacher_problem(net, seed)
    cmp = compare_lifts(net, net.end_to_end(theta), net.invariants(theta), loss, 2.0, num_times=11)
    assert [o.status for o in cmp.outcomes] == expected
    assert cmp.all_finished == all(s == "finished" for s in expected)
    for o, f in zip(cmp.outcomes, cmp.flows):
        assert o.t_end <= 2.0 and f.times[-1] <= o.t_end
        if o.status == "finished":
            assert o.t_end == 2.0 and o.message == "" and f.success
            np.testing.assert_allclose(o.v_end, f.end_to_end[-1].ravel())
        else:
            assert o.min_singular_value <= 1e-9 and "singular point" in o.message
        assert o.max_lift_residual < 1e-10 and o.max_invariant_drift < 1e-8
    assert cmp.trajectories.shape[:2] == (len(expected), len(cmp.times))
    assert cmp.to_dict()["outcomes"][0]["status"] == expected[0]


def test_fully_connected_flow_follows_the_horizontal_lift(rng):
    """Fully connected, hidden width 3 > 2: the fiber over (W, Delta) is positive-dimensional
    and K varies along it. The carried lift is the parameter flow (no motion along the
    fiber); the function-space check, continued from sample to sample, sees K vary."""
    net = LinearFCNet([2, 3, 2])
    theta = net.random_params(rng)
    cmp = compare_with_parameter_flow(net, theta, _loss(net, rng), 0.5, lift=theta, num_times=5)
    r = cmp.riemannian
    assert cmp.max_difference < 1e-9 and r.max_lift_residual < 1e-12
    assert 1e-6 < r.max_kernel_mismatch < 0.1


# ---------------------------------------------------------------- budgets and overflow
@pytest.mark.parametrize("call", ["gradient_flow", "riemannian_flow"])
def test_absurd_horizons_raise_fast(call, rng):
    net = LinearConvNet([2, 2], strides=[2])
    theta = net.random_params(rng)
    loss = _loss(net, rng)

    def run(t_final, **kw):
        if call == "gradient_flow":
            return gradient_flow(net, theta, loss, t_final, num_times=3, **kw)
        return riemannian_flow(
            net,
            net.end_to_end(theta),
            net.invariants(theta),
            loss,
            t_final,
            lift=theta,
            num_times=3,
            **kw,
        )

    with pytest.raises(ComputationLimitError, match="cannot reach t_final") as info:
        run(1e300)
    assert info.value.kind == "steps" and 0 < info.value.t < 1e300
    with pytest.raises(ComputationLimitError, match="step budget max_steps=5") as info:
        run(1.0, max_steps=5)
    with pytest.raises(ComputationLimitError, match="made no progress"):
        run(1e-300, solver="LSODA")
    with pytest.raises(ComputationLimitError, match="time limit"):
        run(1e6, time_limit=1e-9)
    if call == "riemannian_flow":  # the part computed so far comes with the error
        assert info.value.partial.times[-1] <= info.value.t
    with pytest.raises(InputError, match="max_steps"):
        run(1.0, max_steps=0)
    with pytest.raises(InputError, match="time_limit"):
        run(1.0, time_limit=-1.0)


@given(
    exponent=st.integers(-300, 300),
    arch=st.sampled_from([([2, 2], [2]), ([3, 2, 2], [2, 2]), "fc"]),
)
@settings(max_examples=12)
def test_flows_never_return_nan(exponent, arch):
    """Finite input of any magnitude: a finite result or a NeuromanifoldError, never NaN/inf."""
    net = LinearFCNet([2, 2, 2]) if arch == "fc" else LinearConvNet(*arch)
    theta = [w * 10.0**exponent for w in net.random_params(exponent % 97)]
    loss = QuadraticLoss(np.eye(net.end_to_end_size), np.ones(net.end_to_end_size))
    try:
        v0, delta = net.end_to_end(theta), net.invariants(theta)
    except NeuromanifoldError:  # the network's own overflow check
        return
    for run in (
        lambda: gradient_flow(net, theta, loss, 1e-3, num_times=2),
        lambda: riemannian_flow(net, v0, delta, loss, 1e-3, lift=theta, num_times=2),
    ):
        try:
            out = run()
        except NeuromanifoldError:
            continue
        flat = json.dumps(out.to_dict())
        assert "nan" not in flat and "inf" not in flat


def test_losses_raise_on_overflow():
    loss = QuadraticLoss(np.eye(2), [0.0, 0.0])
    with pytest.raises(InputError, match="overflow"):
        loss.value([1e200, 1e200])
    with pytest.raises(InputError, match="overflow"):
        QuadraticLoss(np.eye(2) * 1e300, [0.0, 0.0]).gradient([1e10, 0.0])
    assert np.isfinite(QuadraticLoss(np.eye(2) * 1.7e308, [0.0, 0.0]).A).all()
    net = LinearConvNet([2, 2], strides=[2])
    with pytest.raises(InputError, match="overflow"):
        SquareLoss.from_data(net, np.full((6, 6), 1e200), np.ones((6, 2)))
    with pytest.raises(ParameterError, match="overflow"):
        gradient_flow(
            net, [np.full(2, 1e200), np.full(2, 1e200)], QuadraticLoss(np.eye(4), np.zeros(4)), 1.0
        )


@given(
    seed=st.integers(0, 10**6),
    arch=st.sampled_from(
        [([3, 2, 2], [2, 2]), ([2, 2], [1]), ([4, 3, 2], [1, 3]), ([2], []), ([2, 3, 2], [3, 2])]
    ),
)
@settings(max_examples=20)
def test_fast_path_matches_the_network(seed, arch):
    """The 1D fast path (velocity and Jacobian) against net.vjp and net.jacobian."""
    net = LinearConvNet(*arch)
    rng = np.random.default_rng(seed)
    theta = net.random_params(rng)
    loss = _loss(net, rng)
    fast = Conv1DFastPath(net)
    flat = net.flatten(theta)
    expected = -np.concatenate(
        [a.ravel() for a in net.vjp(theta, loss.gradient(net.end_to_end(theta)))]
    )
    got = parameter_velocity(net, loss)(flat)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * max(1, np.abs(expected).max()))
    np.testing.assert_allclose(fast.jacobian(flat), net.jacobian(theta), rtol=0, atol=1e-13)
    np.testing.assert_allclose(fast.parts(flat)[0], net.end_to_end(theta), rtol=0, atol=1e-13)


# --------------------------------------------------------------------------- bad input
def _conv_setup():
    net = LinearConvNet([2, 2], strides=[2])
    theta = net.random_params(0)
    v, d = net.end_to_end(theta), net.invariants(theta)
    return net, theta, v, d, QuadraticLoss(np.eye(v.size), np.zeros(v.size))


@pytest.mark.parametrize("inv", [np.zeros(0), np.zeros((0, 3)), [[1.0, 2.0], [3.0]], np.zeros(2)])
def test_lift_refuses_invariants_of_the_wrong_size(inv):
    net, theta, v, _, _ = _conv_setup()
    with pytest.raises(InputError, match="invariants must have 1 entries"):
        lift_to_fiber(net, v, inv, theta)


@pytest.mark.parametrize("which", ["v", "start"])
def test_lift_overflow_is_a_parameter_error(which):
    net, theta, v, d, _ = _conv_setup()
    if which == "v":
        v = v * 2.0**1000
    else:
        theta = [w * 2.0**500 for w in theta]
    with pytest.raises(ParameterError, match="overflow"):
        lift_to_fiber(net, v, d, theta)


def test_flow_sizes_are_capped_and_options_named():
    net, theta, v, d, loss = _conv_setup()
    with pytest.raises(InputError, match="at most"):
        gradient_flow(net, theta, loss, 1.0, num_times=10**12)
    with pytest.raises(InputError, match="at most"):
        riemannian_flow(net, v, d, loss, 1.0, lift=theta, num_times=10**12)
    with pytest.raises(InputError, match=r"unknown option\(s\) \['bogus_option'\].*num_starts"):
        riemannian_flow(net, v, d, loss, 1.0, bogus_option=1)


def test_flow_from_a_tiny_v0_is_not_called_singular():
    """A layer of size 1e-300 gives Jacobian columns whose norms underflow when squared:
    the singularity monitor normalizes them by their largest entry first."""
    net, theta, v, d, loss = _conv_setup()
    flow = riemannian_flow(net, v * 2.0**-1000, d, loss, 0.5, num_times=3)
    assert np.all(np.isfinite(flow.end_to_end)) and flow.end_to_end.shape[0] == 3
