"""Shallow ReLU models on linear networks (docs/concepts_linear.md §6): NTK, invariants, fibers, the
dependence
test, and the path-lifting reading."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError, NotInNeuromanifoldError, ParameterError
from neuromanifold.flows import invariant_vector
from neuromanifold.linear import ShallowReLUCNN, ShallowReLUMLP, path_lifting_check
from neuromanifold.ntk import ntk_dependence
from neuromanifold.reproduce import verify_witness

CNN_ARCHS = [
    ([2, 2], [2]),
    ([3, 2], [1]),
    ([2, 2, 2], [2, 1]),
    ([(2, 2), (2, 1)], [(1, 2)]),
    ([3], None),
]
MLP_ARCHS = [[2, 3], [2, 2, 2], [3, 2, 2], [2, 3, 2, 2]]


def _model(kind, arch, seed=0):
    if kind == "cnn":
        return ShallowReLUCNN.with_random_inputs(*arch, seed=seed)
    return ShallowReLUMLP.with_random_inputs(arch, seed=seed)


MODELS = st.one_of(
    st.tuples(st.just("cnn"), st.sampled_from(CNN_ARCHS)),
    st.tuples(st.just("mlp"), st.sampled_from(MLP_ARCHS)),
)


def _fd_jacobian(model, params, h=1e-6):
    theta = model.flatten(params)
    f = lambda t: model.apply(model.unflatten(t))  # noqa: E731
    cols = [(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(theta.size)]
    return np.array(cols).T


def _same_up_to_signs(p, q, tol=1e-8):
    """p and q differ by flipping the signs of an even number of linear layers."""
    signs = [np.sign(np.vdot(a, b)) for a, b in zip(p, q)]
    return (
        all(
            np.allclose(a, s * b, atol=tol * max(1.0, np.abs(b).max()))
            for a, b, s in zip(p, q, signs)
        )
        and np.prod(signs) > 0
    )


@given(kind_arch=MODELS, seed=st.integers(0, 10**6))
@settings(max_examples=30)
def test_ntk_jacobian_matches_finite_differences(kind_arch, seed):
    model = _model(*kind_arch, seed=seed % 7)
    params = model.random_params(seed)
    H = model.hidden(params)
    if np.abs(H).min() < 1e-4:  # a kink within the finite-difference step: resample
        params = model.random_params(seed + 1)
    J = model.jacobian(params)
    np.testing.assert_allclose(J, _fd_jacobian(model, params), atol=1e-6 * max(1, np.abs(J).max()))
    K = model.ntk(params)
    np.testing.assert_allclose(K, J @ J.T)
    assert K.shape == (model.num_inputs, model.num_inputs)


@given(kind_arch=MODELS, seed=st.integers(0, 10**6))
@settings(max_examples=30)
def test_invariants_are_conserved_by_every_gradient(kind_arch, seed):
    """d delta / d theta . grad_theta f(x) = 0 for every input: the invariants are conserved
    by gradient flow of any loss of f (rescaling symmetries, relu(c z) = c relu(z))."""
    model = _model(*kind_arch, seed=seed % 5)
    params = model.random_params(seed)
    D = model.invariant_jacobian(params)
    J = model.jacobian(params)
    assert np.abs(D @ J.T).max() <= 1e-9 * max(1.0, np.abs(D).max() * np.abs(J).max())


@given(kind_arch=MODELS, seed=st.integers(0, 10**6), c=st.floats(0.2, 5.0))
@settings(max_examples=30)
def test_representative_is_the_function(kind_arch, seed, c):
    """Rescaling the last linear layer by c > 0 and a by 1/c keeps f and its representative;
    flipping the sign of a changes both."""
    model = _model(*kind_arch, seed=seed % 5)
    params = model.random_params(seed)
    other = [w.copy() for w in params]
    other[-2] = other[-2] * c
    other[-1] = other[-1] / c
    np.testing.assert_allclose(model.apply(other), model.apply(params), atol=1e-10)
    np.testing.assert_allclose(model.end_to_end(other), model.end_to_end(params), atol=1e-10)
    flipped = params[:-1] + [-params[-1]]
    assert not np.allclose(model.end_to_end(flipped), model.end_to_end(params))


@given(arch=st.sampled_from(CNN_ARCHS), seed=st.integers(0, 10**6))
@settings(max_examples=25)
def test_cnn_fiber_contains_theta_and_reproduces_function(arch, seed):
    model = ShallowReLUCNN.with_random_inputs(*arch, seed=seed % 5)
    params = model.random_params(seed)
    rep, inv = model.end_to_end(params), model.invariants(params)
    for fib in (model.fiber(rep, inv), model.fiber(rep, inv, start=params)):
        assert fib.max_residual < 1e-10
        assert any(_same_up_to_signs(p, params) for p in fib.points)
        for p in fib.points:
            np.testing.assert_allclose(model.end_to_end(p), rep, atol=1e-9 * np.abs(rep).max())
            np.testing.assert_allclose(
                model.invariants(p), inv, atol=1e-9 * max(1, np.abs(inv).max())
            )
            np.testing.assert_allclose(
                model.apply(p),
                model.apply(params),
                atol=1e-9 * max(1, np.abs(model.apply(params)).max()),
            )


@given(arch=st.sampled_from(MLP_ARCHS), seed=st.integers(0, 10**6))
@settings(max_examples=15)
def test_mlp_fiber_points_realize_the_function(arch, seed):
    model = ShallowReLUMLP.with_random_inputs(arch, seed=seed % 5)
    params = model.random_params(seed)
    rep, inv = model.end_to_end(params), model.invariants(params)
    fib = model.fiber(rep, inv, num_starts=3, seed=seed)
    assert fib.points and fib.max_residual < 1e-9
    assert fib.certified == (len(arch) == 2)
    for p in fib.points:
        np.testing.assert_allclose(
            model.apply(p),
            model.apply(params),
            atol=1e-8 * max(1, np.abs(model.apply(params)).max()),
        )
        inv0 = invariant_vector(model, params)
        np.testing.assert_allclose(
            invariant_vector(model, p), inv0, atol=1e-8 * max(1, np.abs(inv0).max())
        )
    if len(arch) == 2:  # one point: theta itself (closed form)
        assert len(fib.points) == 1
        for a, b in zip(fib.points[0], params):
            np.testing.assert_allclose(a, b, atol=1e-12 * max(1, np.abs(b).max()))


def _check_mlp_fiber(model, params, fib):
    assert fib.points and fib.max_residual < 1e-9
    f0, inv0 = model.apply(params), invariant_vector(model, params)
    for p in fib.points:
        np.testing.assert_allclose(model.apply(p), f0, atol=1e-8 * max(1, np.abs(f0).max()))
        np.testing.assert_allclose(
            invariant_vector(model, p), inv0, atol=1e-8 * max(1, np.abs(inv0).max())
        )


@given(
    arch=st.sampled_from(MLP_ARCHS[1:]),
    seed=st.integers(0, 10**6),
    tiny=st.floats(0.0, 4.0),
    layer=st.integers(0, 2),
    grow=st.floats(-1.0, 1.0),
)
@settings(max_examples=12)
def test_mlp_fiber_search_finds_realizable_instances(arch, seed, tiny, layer, grow):
    """With the default num_starts, a function and invariants computed from parameters
    always yield fiber points, also when one output weight is up to 1e4 times smaller than
    the others (the unit barely enters an unweighted least-squares cost) and one linear
    layer is up to 10 times larger or smaller (large invariants)."""
    model = ShallowReLUMLP.with_random_inputs(arch, seed=seed % 5)
    params = model.random_params(seed)
    params[-1][seed % params[-1].size] *= 10.0**-tiny
    params[min(layer, len(params) - 2)] *= 10.0**grow
    _check_mlp_fiber(
        model, params, model.fiber(model.end_to_end(params), model.invariants(params), seed=seed)
    )


@pytest.mark.parametrize("num_starts", [1, 20])
def test_mlp_fiber_regression_seed_782(num_starts):
    """hypothesis found it: output weights (-8e-4, 6e-3) next to O(1) invariants. The
    unweighted Levenberg-Marquardt stalled at relative residual ~1e-4 from every start
    (NotInNeuromanifoldError even with 20 starts)."""
    model = ShallowReLUMLP.with_random_inputs([3, 2, 2], seed=782 % 5)
    params = model.random_params(782)
    fib = model.fiber(
        model.end_to_end(params), model.invariants(params), num_starts=num_starts, seed=782
    )
    _check_mlp_fiber(model, params, fib)


def test_mlp_fiber_search_failure_says_what_was_tried():
    """A search that fails says so (starts, iterations, best residual) and what to try;
    it does not blame the function."""
    model = ShallowReLUMLP.with_random_inputs([3, 2, 2], seed=0)
    params = model.random_params(0)
    rep, inv = model.end_to_end(params), model.invariants(params)
    with pytest.raises(NotInNeuromanifoldError) as err:
        model.fiber(rep, inv, num_starts=2, max_iter=1)
    msg = str(err.value)
    for part in (
        "2 random start(s)",
        "at most 1 iterations",
        "best relative residual",
        "num_starts",
        "start=",
    ):
        assert part in msg
    assert "may not be realizable" not in msg
    # the same instance with a start on the fiber: that point, no search needed to succeed
    fib = model.fiber(rep, inv, num_starts=1, max_iter=1, start=params)
    assert len(fib.points) == 1 and fib.max_residual < 1e-12


@given(arch=st.sampled_from(MLP_ARCHS[1:] + [[2, 3, 4, 2]]), seed=st.integers(0, 10**6))
@settings(max_examples=10)
def test_mlp_fiber_constraints_match_the_model(arch, seed):
    """The solver's analytic inner loop against the validated model: the residual of
    ``diag(a) W = P`` and the invariants, and the invariant Jacobian (finite differences of
    a quadratic, exact)."""
    model = ShallowReLUMLP.with_random_inputs(arch, seed=seed % 5)
    p, q = model.random_params(seed), model.random_params(seed + 1)
    rep = model.end_to_end(q)
    P, inv = rep[:, :-1] * rep[:, -1:], invariant_vector(model, q)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, P.shape[0])
    r, F = model._constraints(model.flatten(p), P, inv, (w, 1.7))
    W = model.linear.end_to_end(p[:-1])
    expected = np.concatenate(
        [(w[:, None] * (p[-1][:, None] * W - P)).ravel(), (invariant_vector(model, p) - inv) / 1.7]
    )
    np.testing.assert_allclose(r, expected, atol=1e-12 * max(1, np.abs(expected).max()))
    np.testing.assert_allclose(F[P.size :], model.invariant_jacobian(p) / 1.7, atol=1e-12)
    eps = 1e-6  # the product part: central differences
    theta = model.flatten(p)
    for i in range(0, theta.size, 3):
        e = np.zeros_like(theta)
        e[i] = eps
        col = (
            model._constraints(theta + e, P, inv, (w, 1.7))[0][: P.size]
            - model._constraints(theta - e, P, inv, (w, 1.7))[0][: P.size]
        ) / (2 * eps)
        np.testing.assert_allclose(F[: P.size, i], col, atol=1e-7)


@given(arch=st.sampled_from(MLP_ARCHS[1:]), seed=st.integers(0, 10**6), grow=st.floats(-1, 1))
@settings(max_examples=10)
def test_mlp_fiber_starts_have_the_layer_norms_the_invariants_allow(arch, seed, grow):
    """Squared norms of the random starts: consecutive differences are the traces of the
    invariants (as on the fiber), and a product of Gaussian layers with them has about the
    size of the function."""
    model = ShallowReLUMLP.with_random_inputs(arch, seed=0)
    params = model.random_params(seed)
    params[seed % (len(params) - 1)] *= 10.0**grow
    rep, inv = model.end_to_end(params), model.invariants(params)
    P = rep[:, :-1] * rep[:, -1:]
    n = model._start_norms(P, inv)
    traces = [np.trace(d) for d in inv[:-1]] + [np.sum(inv[-1])]
    np.testing.assert_allclose(np.diff(n), traces, atol=1e-9 * max(1, np.abs(n).max()))
    assert n.min() > 0
    np.testing.assert_allclose(np.prod(n), np.linalg.norm(P) ** 2 * np.prod(arch[1:]), rtol=1e-9)
    theta = model._random_start(np.random.default_rng(seed), n)
    np.testing.assert_allclose([np.sum(w * w) for w in model.unflatten(theta)], n, rtol=1e-12)


# ---------------------------------------------------------------------------- dependence
@pytest.mark.parametrize("arch", [([2, 2], [2]), ([(2, 2), (2, 3)], None)], ids=str)
def test_relu_cnn_independent_when_linear_fiber_is_a_point(arch):
    model = ShallowReLUCNN.with_random_inputs(*arch, seed=1)
    for seed in range(3):
        dep = ntk_dependence(model, model.random_params(seed))
        assert dep.independent and dep.certified and dep.num_points == 1


@pytest.mark.parametrize("arch", [([2, 2], [1]), ([(2, 2), (2, 2)], None)], ids=str)
def test_relu_cnn_dependent_with_reassignable_layers(arch):
    """1D stride 1 / 2D interchangeable layers: a witness, re-verified from scratch."""
    model = ShallowReLUCNN.with_random_inputs(*arch, seed=1)
    found = False
    for seed in range(4):
        dep = ntk_dependence(model, model.random_params(seed))
        if not dep.independent:
            p, q = dep.witnesses
            np.testing.assert_allclose(model.apply(p), model.apply(q), atol=1e-9)
            np.testing.assert_allclose(model.invariants(p), model.invariants(q), atol=1e-9)
            check = verify_witness(model, dep.witnesses)
            assert check["verified"] and check["ntk_relative_difference"] > 1e-3
            found = True
    assert found


def test_relu_mlp_dependent_with_two_linear_layers():
    model = ShallowReLUMLP.with_random_inputs([2, 2, 2], seed=1)
    dep = ntk_dependence(model, model.random_params(3), num_starts=4, seed=0)
    assert not dep.independent and not dep.certified
    p, q = dep.witnesses
    np.testing.assert_allclose(model.apply(p), model.apply(q), atol=1e-9)
    K_p, K_q = model.ntk(p), model.ntk(q)
    assert np.linalg.norm(K_p - K_q) > 1e-3 * np.linalg.norm(K_p)
    assert verify_witness(model, dep.witnesses)["verified"]


def test_relu_mlp_one_layer_is_independent():
    model = ShallowReLUMLP.with_random_inputs([3, 4], seed=1)
    for seed in range(3):
        dep = ntk_dependence(model, model.random_params(seed))
        assert dep.independent and dep.certified


# ---------------------------------------------------------------------------- path lifting
@given(m=st.integers(1, 4), d=st.integers(1, 4), seed=st.integers(0, 10**6))
@settings(max_examples=30)
def test_path_lifting_kernel_depends_on_z_and_delta_only(m, d, seed):
    rng = np.random.default_rng(seed)
    B, a = rng.standard_normal((m, d)), rng.standard_normal(m)
    chk = path_lifting_check([B, a], rng.standard_normal((5, d)))
    assert chk.independent and chk.num_units == m
    assert chk.max_kernel_difference < 1e-10 and chk.max_ntk_difference < 1e-10


def test_path_lifting_is_accurate_when_the_output_weight_is_small():
    """delta_j << 0 (||b_j|| >> |a_j|): recovering a_j^2 from (z_j, delta_j) must not
    cancel catastrophically (it did with the textbook quadratic formula)."""
    B = np.array([[30.0, -40.0], [1.0, 2.0]])
    a = np.array([1e-3, 0.5])
    chk = path_lifting_check([B, a], np.random.default_rng(0).standard_normal((5, 2)))
    assert chk.max_kernel_difference < 1e-12 and chk.independent


# ---------------------------------------------------------------------------- errors
def test_bad_inputs():
    with pytest.raises(InputError, match="inputs are required"):
        ShallowReLUCNN([2, 2], [2])
    with pytest.raises(InputError, match="inputs must have shape"):
        ShallowReLUCNN([2, 2], [2], np.zeros((3, 2)))
    with pytest.raises(InputError, match="inputs must have shape"):
        ShallowReLUMLP([2, 2], np.zeros((3, 3)))
    model = ShallowReLUCNN.with_random_inputs([2, 2], [1], seed=0)
    params = model.random_params(0)
    with pytest.raises(InputError, match="entries"):
        model.fiber(model.end_to_end(params)[:-1], model.invariants(params))
    with pytest.raises(NotInNeuromanifoldError, match="zero function"):
        model.fiber(np.zeros(model.end_to_end(params).size), model.invariants(params))
    mlp = ShallowReLUMLP.with_random_inputs([2, 2, 2], seed=0)
    with pytest.raises(InputError, match="invariants"):
        mlp.fiber(mlp.end_to_end(mlp.random_params(0)), [np.zeros((2, 2))])
    with pytest.raises(InputError, match="rank"):
        mlp.rank(mlp.random_params(0))
    with pytest.raises(InputError, match="max_iter"):
        mlp.fiber(
            mlp.end_to_end(mlp.random_params(0)),
            mlp.invariants(mlp.random_params(0)),
            max_iter="many",
        )
    with pytest.raises(InputError, match="margin"):
        ShallowReLUCNN.with_random_inputs([2, 2], margin=-5)
    with pytest.raises(InputError, match="unknown option"):
        model.fiber(model.end_to_end(params), model.invariants(params), bogus=1)


def test_path_lifting_rejects_a_zero_output_weight():
    # a_j = 0: z_j = 0 and delta_j = -||b_j||^2 leave b_j's direction (hence K_j) free;
    # the check used to divide by zero and report NaN
    rng = np.random.default_rng(0)
    B, a = rng.standard_normal((2, 2)), np.array([1.0, 0.0])
    with pytest.raises(ParameterError, match="a_j != 0"):
        path_lifting_check([B, a], rng.standard_normal((3, 2)))
    with pytest.raises(InputError, match="tol"):
        path_lifting_check([B, np.ones(2)], rng.standard_normal((3, 2)), tol="a")


@pytest.mark.parametrize("scale", [2.0**-1000, 1e-300])
def test_cnn_fiber_of_a_tiny_representative(scale):
    """Layers whose squared norms underflow are rescaled in log space."""
    net = ShallowReLUCNN.with_random_inputs([2, 2], [2], num_inputs=4, seed=0)
    p = net.random_params(seed=1)
    fib = net.fiber(net.end_to_end(p) * scale, net.invariants(p))
    assert fib.points and fib.max_residual < 1e-10
