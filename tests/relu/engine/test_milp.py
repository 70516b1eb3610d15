"""The shared big-M encoding of ReLU networks (relu/_milp_encoding.py): with the input
variables fixed, the MILP has exactly one solution, the homogenized network's values; the
interval bounds contain every pre-activation on the domain; the fixed shortcuts and the
margin rule."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold.relu import ReLUNet, as_domain
from neuromanifold.relu._engine.lp import solve_milp
from neuromanifold.relu._engine.milp import (
    MILPBuilder,
    affine,
    encode_network,
    homogenized_input,
    relu_layer,
)
from tests.support.relu import dyadic_net

_DOMAINS = st.sampled_from(["whole", "orthant", "box"])


def _net(widths, seed, dyadic):
    if dyadic:  # exact zeros, dead neurons, repeated rows, points exactly on kinks
        return dyadic_net(np.random.default_rng(seed), widths)
    return ReLUNet(widths).random_params(seed)


def _domain(kind, d, rng):
    if kind == "box":
        lower = rng.uniform(-2, 1, d)
        return as_domain((lower, lower + rng.uniform(0.5, 3, d)), d)
    return as_domain(None if kind == "whole" else "orthant", d)


def _points(dom, rng, n, grid=False):
    """Points of the domain, at scales from 0.1 to 100 (R^d, orthant); on the integer
    grid (where dyadic networks have their kinks) when ``grid``."""
    d = dom.dim
    if dom.kind == "box":
        X = rng.uniform(dom.lower, dom.upper, (n, d))
        return np.clip(np.round(X), dom.lower, dom.upper) if grid else X
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-1, 2, (n, 1))
    if grid:
        X = np.round(X)
    return np.abs(X) if dom.kind == "orthant" else X


def _forward(params, x):
    """Pre-activations of every hidden layer and the output, in floats."""
    zs, h = [], np.asarray(x, float)
    for W, b in params[:-1]:
        z = W @ h + b
        zs.append(z)
        h = np.maximum(z, 0.0)
    W, b = params[-1]
    return zs, W @ h + b


def _encode(params, dom, margin):
    B = MILPBuilder()
    ys, s = homogenized_input(B, dom)
    layers, out = encode_network(B, params, B.inputs(ys), s, margin=margin)
    return B, ys, s, layers, out


def _solve_at(B, ys, s, x, extra_rows=()):
    """The MILP with ``y = s x``, ``s = 1 / max(1, |x|_inf)`` fixed (and extra rows)."""
    A, rhs, lb, ub, integer = B.problem()
    sv = 1.0 / max(1.0, float(np.max(np.abs(x))))
    lb[ys] = ub[ys] = sv * x
    lb[s] = ub[s] = sv
    for row, r in extra_rows:
        A = np.vstack([A, B.widen(row[None])])
        rhs = np.append(rhs, r)
    return sv, solve_milp(np.zeros(B.num_vars), A, rhs, lb, ub, integer)


@settings(max_examples=100)
@given(
    widths=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    seed=st.integers(0, 10**6),
    kind=_DOMAINS,
    dyadic=st.booleans(),
    margin=st.sampled_from([None, 1e-7]),
)
def test_fixed_inputs_give_back_the_network_exactly(widths, seed, kind, dyadic, margin):
    rng = np.random.default_rng(seed)
    widths[-1] = min(widths[-1], 2)
    params = _net(widths, seed, dyadic and margin is None)
    dom = _domain(kind, widths[0], rng)
    B, ys, s, layers, out = _encode(params, dom, margin)
    x = _points(dom, rng, 1, grid=dyadic and margin is None)[0]
    zs, f = _forward(params, x)
    sv, res = _solve_at(B, ys, s, x)
    assert res.status == "optimal"
    v = res.x
    size = 1.0 + max(float(np.max(np.abs(ly.hi))) for ly in layers) if layers else 1.0
    for layer, z in zip(layers, zs):
        w = layer.Z.shape[1]
        assert np.allclose(layer.Z @ v[:w], sv * z, rtol=0, atol=1e-7 * size)
        assert np.allclose(
            layer.H @ v[: layer.H.shape[1]], sv * np.maximum(z, 0.0), rtol=0, atol=1e-7 * size
        )
        if margin is not None:  # the binaries are the activation pattern
            assert np.array_equal(layer.pattern(v), z > 0)
    assert np.allclose(out @ v[: out.shape[1]], sv * f, rtol=0, atol=1e-6 * size)
    # an output off its value by more than the solver's tolerances: no solution
    o = int(rng.integers(len(f)))
    eps = 1e-4 * size
    target = sv * f[o] + (eps if rng.random() < 0.5 else -eps)
    _, res = _solve_at(B, ys, s, x, [(out[o], target), (-out[o], -target)])
    assert res.status == "infeasible"


@settings(max_examples=60)
@given(
    widths=st.lists(st.integers(1, 5), min_size=2, max_size=4),
    seed=st.integers(0, 10**6),
    kind=_DOMAINS,
    dyadic=st.booleans(),
    margin=st.sampled_from([None, 1e-7]),
)
def test_bounds_contain_the_pre_activations_on_the_domain(widths, seed, kind, dyadic, margin):
    rng = np.random.default_rng(seed)
    params = _net(widths, seed, dyadic)
    dom = _domain(kind, widths[0], rng)
    _, _, _, layers, _ = _encode(params, dom, margin)
    X = _points(dom, rng, 500, grid=dyadic)
    for x in X:
        sv = 1.0 / max(1.0, float(np.max(np.abs(x))))
        zs, _ = _forward(params, x)
        for layer, z in zip(layers, zs):
            assert np.all(layer.lo <= sv * z) and np.all(sv * z <= layer.hi)
            # a fixed neuron is on the side it is fixed to (up to the margin)
            mg = (0.0 if margin is None else margin) * np.maximum(-layer.lo, layer.hi)
            assert np.all(sv * z[layer.state == -1] <= mg[layer.state == -1] + 1e-12)
            assert np.all(sv * z[layer.state == 1] >= -mg[layer.state == 1] - 1e-12)


def test_fixed_shortcuts_and_the_margin_rule():
    dom = as_domain("orthant", 2)
    W1 = np.array([[1.0, 2.0], [-1.0, -1.0], [1.0, -1.0]])
    b1 = np.array([1.0, -1.0, 0.0])
    for margin, states in ((None, [0, 0, 0]), (1e-7, [1, -1, 0])):
        B = MILPBuilder()
        ys, s = homogenized_input(B, dom)
        layer = relu_layer(B, affine(B, W1, b1, B.inputs(ys), s), margin=margin, both_sides=True)
        # on the homogenized orthant every z is 0 at y = s = 0: the padded bounds leave
        # every neuron free in the exact encoding; the margin fixes the sign-definite ones
        assert layer.state.tolist() == states
        free = layer.state == 0
        assert B.num_vars == 3 + 2 * int(free.sum())
        assert np.all(layer.h[~free] == -1) and np.all(layer.a[~free] == -1)
        assert [B.integer[int(a)] for a in layer.a[free]] == [1] * int(free.sum())
        assert len(B.rows) == (5 if margin else 3) * int(free.sum())
        # fixed active: h is z itself; fixed inactive: h is 0
        assert np.array_equal(
            layer.H[layer.state == 1, :3],
            (W1 @ np.eye(2, 3))[layer.state == 1] + np.outer(b1[layer.state == 1], [0, 0, 1]),
        )
        assert not np.any(layer.H[layer.state == -1])
    # a later layer fixes on only with z >= margin (its z can vanish on a region) and
    # forces z <= 0, not z <= -margin, when off
    B = MILPBuilder()
    ys, s = homogenized_input(B, dom)
    first = relu_layer(B, affine(B, W1[:1], b1[:1], B.inputs(ys), s), margin=1e-7, both_sides=True)
    later = relu_layer(
        B, affine(B, np.array([[1.0], [-1.0]]), np.zeros(2), first.H, s), margin=1e-7
    )
    assert first.state.tolist() == [1] and later.state.tolist() == [0, -1]
    # at a point on a first-layer kink no binary fits (|z| >= margin both ways); on a later
    # layer's kink a = 0 fits (z <= 0)
    net = [
        (np.array([[1.0, -1.0]]), np.zeros(1)),
        (np.array([[1.0], [-1.0]]), np.zeros(2)),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    B, ys, s, layers, _ = _encode(net, as_domain(None, 2), 1e-7)
    assert [ly.state.tolist() for ly in layers] == [[0], [0, -1]]
    assert _solve_at(B, ys, s, np.array([0.5, 0.5]))[1].status == "infeasible"
    assert _solve_at(B, ys, s, np.array([0.5, 0.25]))[1].status == "optimal"
    net[0] = (np.array([[1.0, -1.0], [0.0, 1.0]]), np.zeros(2))
    net[1] = (np.array([[1.0, -1.0], [-1.0, 1.0]]), np.zeros(2))
    B, ys, s, layers, _ = _encode(net, as_domain(None, 2), 1e-7)
    sv, res = _solve_at(B, ys, s, np.array([0.75, 0.5]))  # z2 = (-0.25, 0.25)
    assert res.status == "optimal" and layers[1].pattern(res.x).tolist() == [False, True]
    sv, res = _solve_at(B, ys, s, np.array([0.75, 0.75]))  # z1 = (0, 0.75): first kink
    assert res.status == "infeasible"
    sv, res = _solve_at(B, ys, s, np.array([1.0, 0.5]))  # z2 = (0, 0): later kinks
    assert res.status == "optimal" and layers[1].pattern(res.x).tolist() == [False, False]


def test_builder_pads_rows_to_the_final_variables():
    B = MILPBuilder()
    x = B.var(-1.0, 2.0)
    B.row(np.array([3.0]), {}, 1.0)
    a = B.var(0.0, 1.0, integer=True)
    B.row(None, {x: 1.0, a: -2.0}, 0.0)
    A, rhs, lb, ub, integer = B.problem()
    assert A.tolist() == [[3.0, 0.0], [1.0, -2.0]] and rhs.tolist() == [1.0, 0.0]
    assert lb.tolist() == [-1.0, 0.0] and ub.tolist() == [2.0, 1.0]
    assert integer.tolist() == [0, 1]
    lo, hi = B.bounds(np.array([[2.0, -1.0]]), pad=False)
    assert (lo.item(), hi.item()) == (-3.0, 4.0)
    lo, hi = B.bounds(np.array([[2.0, -1.0]]))
    assert lo.item() < -3.0 and hi.item() > 4.0
    assert B.widen(np.ones((1, 1))).tolist() == [[1.0, 0.0]]


@pytest.mark.parametrize("kind", ["whole", "orthant", "box"])
def test_homogenized_input_rows(kind):
    rng = np.random.default_rng(3)
    dom = _domain(kind, 3, rng)
    B = MILPBuilder()
    ys, s = homogenized_input(B, dom)
    A, rhs, lb, ub, _ = B.problem()
    assert ys == [0, 1, 2] and s == 3 and (lb[s], ub[s]) == (0.0, 1.0)
    for x in _points(dom, rng, 50):  # every point of the domain has its (y, s)
        sv = 1.0 / max(1.0, float(np.max(np.abs(x))))
        v = np.append(sv * x, sv)
        assert np.all(lb - 1e-15 <= v) and np.all(v <= ub + 1e-15)
        assert np.all(A @ v <= rhs + 1e-12)
    if kind == "whole":
        return
    for _ in range(40):  # a point outside (one coordinate pushed out) has no (y, s)
        x = _points(dom, rng, 1)[0]
        k = int(rng.integers(3))
        below = kind == "orthant" or rng.random() < 0.5
        if below:
            x[k] = (0.0 if kind == "orthant" else dom.lower[k]) - rng.uniform(0.1, 3)
        else:
            x[k] = dom.upper[k] + rng.uniform(0.1, 3)
        sv = 1.0 / max(1.0, float(np.max(np.abs(x))))
        v = np.append(sv * x, sv)
        assert np.any(v < lb) or np.any(v > ub) or np.any(A @ v > rhs + 1e-12)


@pytest.mark.xfail(
    strict=True,
    reason="HiGHS 1.16's presolve at 1e-9 feasibility "
    "tolerances calls this feasible program infeasible",
)
def test_tiny_big_m_constant():
    # h = relu(z) for z = s >= 0 on the homogenized domain: padded bounds lo = -2e-9,
    # hi = 1 + 2e-9 put a big-M coefficient of 2e-9 on the binary. With s = 1 fixed,
    # h = a = 1 is a solution (HiGHS finds it with presolve off, or at tolerances 1e-8)
    lo, hi = -2e-9, 1.0 + 2e-9
    A = np.array(
        [
            [1.0, -1.0, 0.0],  # z <= h
            [-1.0, 1.0, -lo],  # h <= z - lo (1 - a)
            [0.0, 1.0, -hi],
        ]
    )  # h <= hi a
    res = solve_milp(
        np.zeros(3), A, np.array([0.0, -lo, 0.0]), [1.0, 0.0, 0.0], [1.0, hi, 1.0], [0, 0, 1]
    )
    assert res.status == "optimal"


def test_big_m_constants_are_never_tiny():
    # z = s >= 0 on the homogenized domain: its padded bounds would put ~1e-9 on the
    # binary, which HiGHS's presolve mishandles (test above); the encoder loosens the
    # constant to BIG_M_FLOOR of the neuron's scale, and the program stays feasible
    from neuromanifold.relu._engine.milp import BIG_M_FLOOR

    B = MILPBuilder()
    ys, s = homogenized_input(B, as_domain(None, 1))
    layer = relu_layer(B, affine(B, np.zeros((1, 1)), np.ones(1), B.inputs(ys), s))
    assert layer.state[0] == 0
    A, rhs, lb, ub, integer = B.problem()
    a = layer.a[0]
    assert np.min(np.abs(A[A[:, a] != 0, a])) >= BIG_M_FLOOR * 0.999
    lb[s] = ub[s] = 1.0
    assert solve_milp(np.zeros(len(lb)), A, rhs, lb, ub, integer).status == "optimal"
