"""Symmetries of three-layer ReLU networks as transformations: inside the validity set the
exact engine says equivalent; just outside (where a boundary exists) it does not."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuromanifold as nm
from neuromanifold import InputError, SymmetryError, relu
from neuromanifold.relu.symmetries import (
    Applicability,
    DeadNeuronMove,
    Flip,
    HidingTranslation,
    LinearBlockMixing,
    Permutation,
    RampFlip,
    Scaling,
    apply_sequence,
    random_orbit_point,
)
from tests.support.symmetry import (
    bottleneck,
    exactly_equivalent,
    ground_truth_equivalent,
    same_orbit,
)


def _net(W1, b1, W2, b2, W3, b3):
    a = lambda v: np.atleast_2d(np.array(v, float))  # noqa: E731
    return [
        (a(W1), np.atleast_1d(np.array(b1, float))),
        (a(W2), np.atleast_1d(np.array(b2, float))),
        (a(W3), np.atleast_1d(np.array(b3, float))),
    ]


def _unchecked(sym, P):
    """The transformation's formula applied without the applicability check."""
    return sym._transform([(W.copy(), b.copy()) for W, b in relu.check_params(P)], 0.0)


# -- the worked examples -------------------------------------------------------------------


def test_translation_example_relu_x_minus_1():
    # theta_t = (1, t, 1, -1 - t, 1, 0) realizes relu(x - 1) for every t >= -1
    P = _net(1, 0, 1, -1, 1, 0)
    app = HidingTranslation(0, 0.0).applies(P, tol=0)
    assert app.applies and app.valid_set == (-1.0, np.inf)
    for t in (-1.0, -0.5, 3.0, 1024.0):
        Q = HidingTranslation(0, t).apply(P, tol=0)
        assert np.allclose(Q[0][1], [t]) and np.allclose(Q[1][1], [-1 - t])
        assert exactly_equivalent(P, Q)
    bad = HidingTranslation(0, -1.5)
    assert not bad.applies(P)
    with pytest.raises(SymmetryError, match="outside the valid interval"):
        bad.apply(P)
    assert not exactly_equivalent(P, _unchecked(bad, P))


def test_ramp_flip_example():
    P = _net([[2, -1]], 0.5, -1.5, 3, 2, 0.7)
    Q = RampFlip(0).apply(P, tol=0)
    # the documented second representative, up to a rescaling by 1.5 of the first layer
    R = _net([[-3, 1.5]], 2.25, -1, 3, -2, 6.7)
    assert np.allclose(Scaling(1, (1.5,)).apply(Q)[0][0], R[0][0])
    assert ground_truth_equivalent(P, Q) and ground_truth_equivalent(P, R)
    assert np.allclose(RampFlip(0).apply(Q)[0][0], P[0][0])  # an involution


# -- inside the validity set: equivalent ---------------------------------------------------


def test_permutation_and_scaling_exact(rng):
    for widths in [(2, 2, 3, 1), (3, 2, 2, 2)]:
        P = bottleneck(rng, widths)
        seq = [
            Permutation(1, tuple(rng.permutation(widths[1]))),
            Scaling(1, tuple(2.0 ** rng.integers(-3, 4, widths[1]))),
            Permutation(2, tuple(rng.permutation(widths[2]))),
            Scaling(2, tuple(2.0 ** rng.integers(-3, 4, widths[2]))),
        ]
        Q = apply_sequence(seq, P, tol=0)
        assert exactly_equivalent(P, Q)
        # with float scalings only up to rounding
        Q2 = Scaling(2, tuple(rng.uniform(0.2, 5, widths[2]))).apply(P)
        assert ground_truth_equivalent(P, Q2)


def test_dead_neuron_move(rng):
    P = bottleneck(rng, (2, 2, 3, 2), kinds=["mixed", "dead", "linear"], dyadic=True)
    move = DeadNeuronMove(1, (-0.5, 0.0, -2.0), (3.0, -7.5))
    assert move.applies(P, tol=0)
    Q = move.apply(P, tol=0)
    assert exactly_equivalent(P, Q)
    # just outside: a new row with a positive entry is not dead and changes the function
    out = DeadNeuronMove(1, (-0.5, 0.25, -2.0), (3.0, -7.5))
    app = out.applies(P)
    assert not app.applies and "positive entry" in app.reason
    assert not exactly_equivalent(P, _unchecked(out, P))
    # a live neuron is not movable
    assert not DeadNeuronMove(0, (-1.0, -1.0, -1.0), (0.0, 0.0)).applies(P)


def test_linear_block_mixing(rng):
    P = bottleneck(rng, (3, 2, 3, 2), kinds=["linear", "mixed", "linear"], dyadic=True)
    M = np.array([[1.0, 0.5], [0.0, 2.0]])  # inverse exact in binary
    mix = LinearBlockMixing((0, 2), M, (0.5, 0.25))
    assert mix.applies(P, tol=0)
    Q = mix.apply(P, tol=0)
    assert exactly_equivalent(P, Q)
    back = mix.inverse().apply(Q)
    assert all(np.allclose(a, b) for (a, _), (b, _) in zip(P, back))
    # just outside: a mixing that makes a row negative is no longer a symmetry
    neg = LinearBlockMixing((0, 2), np.array([[1.0, -4.0], [0.0, 1.0]]), (0.0, 0.0))
    assert not neg.applies(P)
    assert not ground_truth_equivalent(P, _unchecked(neg, P))
    # a shift that makes a bias negative: outside as well
    down = LinearBlockMixing((0, 2), np.eye(2), (-10.0, 0.0))
    assert not down.applies(P)
    assert not exactly_equivalent(P, _unchecked(down, P))
    # a mixed row is not always active
    assert not LinearBlockMixing((0, 1), np.eye(2), (0.0, 0.0)).applies(P)


def test_hiding_translation_interval_both_ends(rng):
    # row 0 hides 0 (lower end), row 1 is dead with a negative weight on 0 (upper end)
    P = _net(
        [[1.0, 0.5, 0.0], [0.0, 1.0, -1.0]],
        [0.5, -0.25],
        [[2.0, -1.0], [-0.5, -1.0]],
        [-1.0, -0.25],
        [[1.0, -2.0], [0.5, 1.5]],
        [0.0, 1.0],
    )
    lo, hi = HidingTranslation(0, 0.0).applies(P, tol=0).valid_set
    assert (lo, hi) == (-0.5, 0.5)
    for t in (lo, -0.25, 0.125, hi):
        assert exactly_equivalent(P, HidingTranslation(0, t).apply(P, tol=0))
    for t in (lo - 0.125, hi + 0.125):
        sym = HidingTranslation(0, t)
        assert not sym.applies(P).applies
        assert not exactly_equivalent(P, _unchecked(sym, P))
    # hyperplane 1 is not hidden (row 0 has a positive weight on column 0)
    app = HidingTranslation(1, 0.0).applies(P)
    assert not app.applies and "not hidden" in app.reason and app.valid_set is None


@settings(max_examples=8)
@given(st.integers(0, 2**31), st.sampled_from([(2, 2, 2, 1), (3, 3, 2, 1), (2, 1, 2, 2)]))
def test_translation_random_floats(seed, widths):
    rng = np.random.default_rng(seed)
    d, n1, n2, n3 = widths
    kinds = [("hiding", 0)] + ["dead"] * (n2 - 1)
    P = bottleneck(rng, widths, kinds=kinds)
    if n2 > 1 and rng.random() < 0.5:  # a second live row hiding 0
        W2, b2 = P[1]
        W2[1, 0] = abs(W2[1, 0])
    lo, hi = HidingTranslation(0, 0.0).applies(P).valid_set
    assert lo < 0 and hi > 0
    inside = lo + (min(hi, lo + 5) - lo) * rng.uniform(0.05, 0.95)
    assert ground_truth_equivalent(P, HidingTranslation(0, inside).apply(P))
    # the ends themselves apply at the default tolerance (rounding of b2_j - lo a_ji)
    assert HidingTranslation(0, lo).applies(P)
    assert hi == np.inf or HidingTranslation(0, hi).applies(P)
    below = HidingTranslation(0, lo - 0.1 * (1 + abs(lo)))
    assert not below.applies(P) and not ground_truth_equivalent(P, _unchecked(below, P))


def test_flip_group(rng):
    P = bottleneck(rng, (3, 3, 3, 2), kinds=[("hiding", 1), "dead", "dead"], dyadic=True)
    for flipped in [(0,), (2,), (0, 2)]:
        f = Flip(1, flipped)
        assert f.applies(P, tol=0)
        Q = f.apply(P)
        assert exactly_equivalent(P, Q)
        R = f.apply(Q)  # an involution
        assert all(np.allclose(a, b) and np.allclose(c, e) for (a, c), (b, e) in zip(P, R))
    # float ratios (not exact in binary): equivalent up to rounding
    P2 = bottleneck(rng, (3, 3, 2, 1), kinds=[("hiding", 0), "dead"])
    assert ground_truth_equivalent(P2, Flip(0, (1, 2)).apply(P2))


def test_flip_broken_by_second_live_row(rng):
    # two live rows hiding 0 with different ratios a_1/a_0: the flip changes the function
    P = bottleneck(rng, (2, 2, 2, 1), kinds=[("hiding", 0), ("hiding", 0)], dyadic=True)
    W2 = P[1][0]
    W2[1, 1] = 2 * W2[1, 1] if W2[1, 1] / W2[1, 0] == W2[0, 1] / W2[0, 0] else W2[1, 1]
    f = Flip(0, (1,))
    app = f.applies(P)
    assert not app.applies and "different ratios" in app.reason
    assert not exactly_equivalent(P, _unchecked(f, P))
    # equal ratios: the flip applies to both rows at once
    W2[1] = 1.5 * W2[0]
    assert f.applies(P, tol=0)
    assert ground_truth_equivalent(P, f.apply(P))
    # a mixed live row (n2 = 2): not hidden any more, and the move changes the function
    P3 = bottleneck(rng, (2, 2, 2, 1), kinds=[("hiding", 0), "linear"], dyadic=True)
    assert not f.applies(P3)
    assert not exactly_equivalent(P3, _unchecked(f, P3))


def test_ramp_flip_conditions(rng):
    P = bottleneck(rng, (2, 1, 3, 1), kinds=["ramp", "dead", "dead"], dyadic=True)
    assert RampFlip(0).applies(P, tol=0)
    assert ground_truth_equivalent(P, RampFlip(0).apply(P))
    # a second live row that is not a ramp: no longer applies, and the move breaks f
    P2 = bottleneck(rng, (2, 1, 2, 1), kinds=["ramp", "linear"], dyadic=True)
    app = RampFlip(0).applies(P2)
    assert not app.applies and "positive weight" in app.reason
    assert not ground_truth_equivalent(P2, _unchecked(RampFlip(0), P2))
    # two ramps with the same breakpoint flip together
    P3 = bottleneck(rng, (2, 1, 2, 1), kinds=["ramp", "ramp"], dyadic=True)
    P3[1][0][1, 0], P3[1][1][1] = 2 * P3[1][0][0, 0], 2 * P3[1][1][0]
    assert RampFlip(1).applies(P3, tol=0) and RampFlip(0).applies(P3, tol=0)
    assert ground_truth_equivalent(P3, RampFlip(1).apply(P3))
    # different breakpoints: the flip is around the largest one, the other is not a flip
    P3[1][1][1] += 0.75  # ramp 1 now has the larger breakpoint
    assert not RampFlip(0).applies(P3)
    assert not ground_truth_equivalent(P3, _unchecked(RampFlip(0), P3))
    assert RampFlip(1).applies(P3)
    Q3 = RampFlip(1).apply(P3)
    assert ground_truth_equivalent(P3, Q3)
    back = RampFlip(1).apply(Q3)
    assert all(np.allclose(a, b) and np.allclose(c, e) for (a, c), (b, e) in zip(P3, back))


@settings(max_examples=6)
@given(st.integers(0, 2**31), st.integers(1, 3))
def test_ramp_flip_several_ramps(seed, n2):
    # n1 = 1 with only ramps (an open set of parameters): a discrete symmetry that
    # reverses the first-layer neuron
    rng = np.random.default_rng(seed)
    P = bottleneck(rng, (2, 1, n2, 2), kinds=["ramp"] * n2)
    c = P[1][1] / -P[1][0][:, 0]
    top = int(np.argmax(c))
    Q = RampFlip(top).apply(P)
    assert np.allclose(Q[0][0], -P[0][0])
    assert ground_truth_equivalent(P, Q)
    assert not RampFlip(0).applies(bottleneck(rng, (2, 2, 1, 1)))  # n1 = 2


# -- laws and errors -----------------------------------------------------------------------


@settings(max_examples=25)
@given(st.integers(0, 2**31))
def test_inverse_round_trip(seed):
    rng = np.random.default_rng(seed)
    P = bottleneck(rng, (3, 3, 3, 2), kinds=[("hiding", 2), "dead", "dead"])
    lo, hi = HidingTranslation(2, 0.0).applies(P).valid_set
    syms = [
        Permutation(int(rng.integers(1, 3)), tuple(rng.permutation(3))),
        Scaling(int(rng.integers(1, 3)), tuple(rng.uniform(0.1, 10, 3))),
        HidingTranslation(2, float(rng.uniform(lo, hi))),
        Flip(2, (0,)),
        Flip(2, (0, 1)),
        DeadNeuronMove(1, tuple(-rng.uniform(0, 2, 4)), tuple(rng.standard_normal(2))),
    ]
    for s in syms:
        Q = s.apply(P)
        back = s.inverse(P).apply(Q)
        for (A, a), (B, b) in zip(P, back):
            assert np.allclose(A, B, atol=1e-9) and np.allclose(a, b, atol=1e-9)
        # and the sampled outputs agree (cheap check of the formula on every draw)
        X = rng.standard_normal((200, 3)) * 3
        assert np.allclose(relu.forward(P, X), relu.forward(Q, X), atol=1e-9)


def test_tolerance_of_sign_decisions():
    # bias 1e-12 (relative to a row of size ~1): zero at the default tol, positive at tol=0
    P = _net([[1.0, 0.0]], 0.0, 1.0, 1e-12, 1.0, 0.0)
    assert HidingTranslation(0, 0.5).applies(P)
    assert not HidingTranslation(0, 0.5).applies(P, tol=0)
    with pytest.raises(InputError, match="tol"):
        HidingTranslation(0, 0.5).applies(P, tol=-1)


def test_errors_and_results(rng):
    P = bottleneck(rng, (2, 2, 2, 1))
    with pytest.raises(InputError, match="permutation"):
        Permutation(1, (0, 0))
    with pytest.raises(InputError, match="positive"):
        Scaling(1, (1.0, -1.0))
    with pytest.raises(InputError, match="invertible"):
        LinearBlockMixing((0, 1), np.ones((2, 2)), (0, 0))
    with pytest.raises(InputError, match="hidden neuron"):
        Flip(0, (0, 1))
    with pytest.raises(SymmetryError, match="hidden layer 1 has 2 neurons"):
        Permutation(1, (0, 1, 2)).apply(P)
    with pytest.raises(SymmetryError, match="layer must be a hidden layer"):
        Scaling(3, (1.0,)).apply(P)
    with pytest.raises(nm.ArchitectureError, match="three-layer"):
        Flip(0, ()).apply(P[1:])
    with pytest.raises(SymmetryError, match="step 1 of the sequence"):
        apply_sequence(
            [Permutation(1, (1, 0)), Flip(0, (1,))],
            bottleneck(rng, (2, 2, 2, 1), kinds=["linear", "mixed"]),
        )
    assert isinstance(SymmetryError("x"), ValueError)
    app = Scaling(1, (1.0, 2.0)).applies(P)
    assert isinstance(app, Applicability) and bool(app)
    assert set(app.to_dict()) == {"symmetry", "applies", "reason", "valid_set", "tol"}
    assert "Scaling(layer=1" in repr(Scaling(1, (1.0, 2.0)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        Scaling(1, (1.0,)).layer = 2
    names = {
        s.name
        for s in [
            Permutation(1, (0,)),
            Scaling(1, (1.0,)),
            DeadNeuronMove(0, (0,), ()),
            LinearBlockMixing((0,), np.eye(1), (0,)),
            HidingTranslation(0, 0),
            Flip(0, ()),
            RampFlip(0),
        ]
    }
    assert names == {
        "permutation",
        "scaling",
        "dead_neuron_move",
        "linear_block_mixing",
        "hiding_translation",
        "flip",
        "ramp_flip",
    }
    # the input is never modified
    P0 = [(W.copy(), b.copy()) for W, b in P]
    Scaling(2, (2.0, 3.0)).apply(P)
    assert all(np.array_equal(a, b) for (a, _), (b, _) in zip(P, P0))


def test_second_layer_flip_through_the_linear_block(rng):
    from neuromanifold.relu.symmetries import SecondLayerFlip

    # >= n1 always-active neurons: the current block absorbs the linear part (exact example)
    P = _net(
        [[1.0, 0.5, 0.0], [0.25, -1.0, 1.0]],
        [0.5, -0.25],
        [[1.0, -2.0], [1.0, 0.0], [0.0, 1.0]],
        [0.5, 1.0, 2.0],
        [[1.5, 1.0, -1.0]],
        [0.125],
    )
    f = SecondLayerFlip.construct(P, (0,), tol=0)
    assert f is not None and f.linear == (1, 2) and f.applies(P, tol=0)
    Q = f.apply(P, tol=0)
    assert np.array_equal(Q[1][0][0], [-1.0, 2.0])
    assert exactly_equivalent(P, Q) and not same_orbit(P, Q)
    back = f.inverse(P).apply(Q, tol=0)
    assert all(np.array_equal(a, b) and np.array_equal(c, e) for (a, c), (b, e) in zip(P, back))
    # random floats: fewer linear neurons than n1, rank deficit (k >= rank + 1), n1 = 1
    for widths, kinds in [
        ((3, 3, 3, 1), ["mixed", "linear", "linear"]),
        ((2, 1, 2, 1), ["ramp", "linear"]),
        ((2, 1, 3, 2), [("hiding", 0), "linear", "dead"]),
    ]:
        P = bottleneck(rng, widths, kinds=kinds)
        f = SecondLayerFlip.construct(P, (0,))
        assert f is not None
        assert ground_truth_equivalent(P, f.apply(P))
    # just outside: one linear neuron cannot absorb a rank-2 linear part (n3 = 2)
    P = bottleneck(rng, (3, 2, 3, 2), kinds=["mixed", "linear", "mixed"])
    assert SecondLayerFlip.construct(P, (0,)) is None
    naive = SecondLayerFlip(
        (0,), (1,), (tuple(P[1][0][1]) + (P[1][1][1],),), tuple(map(tuple, P[2][0][:, [1]]))
    )
    app = naive.applies(P)
    assert not app.applies and "does not factor" in app.reason
    assert not ground_truth_equivalent(P, _unchecked(naive, P))
    # a linear neuron cannot be flipped, and a mixed one cannot absorb
    assert not SecondLayerFlip((1,), (0,), ((1.0, 1.0, 1.0),), ((1.0,), (1.0,))).applies(P)
    with pytest.raises(InputError, match="disjoint"):
        SecondLayerFlip((0,), (0,), ((1.0, 1.0, 1.0),), ((1.0,),))


def test_block_refactor_grows_and_shrinks_the_block():
    from neuromanifold.relu.symmetries import BlockRefactor

    P = _net(
        [[1.0, 0.5, 0.0], [0.25, -1.0, 1.0]],
        [0.5, -0.25],
        [[1.0, -2.0], [1.0, 0.5], [-1.0, -0.5]],
        [0.5, 1.0, -2.0],
        [[1.5, -2.0, 3.0]],
        [0.125],
    )
    # the dead neuron 2 joins the block: each of 1, 2 carries half of the linear map
    grow = BlockRefactor((1, 2), ((0.5, 0.25, 1.0), (0.5, 0.25, 0.5)), ((-2.0, -2.0),))
    assert grow.applies(P, tol=0)
    Q = grow.apply(P, tol=0)
    assert exactly_equivalent(P, Q) and not same_orbit(P, Q)
    back = grow.inverse(P).apply(Q, tol=0)
    assert all(np.array_equal(a, b) and np.array_equal(c, e) for (a, c), (b, e) in zip(P, back))
    # neuron 1 leaves the block (it becomes dead), neuron 2 carries the map alone
    shrink = BlockRefactor((1, 2), ((-1.0, 0.0, -0.25), (1.0, 0.5, 0.25)), ((7.0, -2.0),))
    assert shrink.applies(Q, tol=0)
    assert exactly_equivalent(P, shrink.apply(Q, tol=0))
    # just outside: the new block carries twice the linear map
    bad = BlockRefactor((1, 2), ((1.0, 0.5, 1.0), (1.0, 0.5, 0.5)), ((-2.0, -2.0),))
    app = bad.applies(P)
    assert not app.applies and "linear map" in app.reason
    assert not exactly_equivalent(P, _unchecked(bad, P))
    # a mixed neuron is not part of the block, nor may a new row be mixed
    assert not BlockRefactor((0,), ((1.0, 1.0, 1.0),), ((1.5,),)).applies(P)
    assert not BlockRefactor((2,), ((1.0, -1.0, 0.0),), ((3.0,),)).applies(P)


@pytest.mark.parametrize("scale", [1e300, 1e150, 0.0])
def test_random_orbit_point_of_extreme_parameters_moves_or_refuses_with_the_limit(scale):
    P = [(W * scale, b * scale) for W, b in nm.ReLUNet([2, 3, 2, 1]).random_params(seed=0)]
    try:
        Q, _ = random_orbit_point(P)
    except nm.ParameterError as exc:
        assert "float" in str(exc)
    else:
        assert all(np.all(np.isfinite(W)) and np.all(np.isfinite(b)) for W, b in Q)


@pytest.mark.parametrize("t", [1e10, 1e300])
def test_a_translation_too_large_for_float64_is_refused(t):
    """A hidden hyperplane translates for every t >= -0.5 here, exactly; but in floats
    b1 + t and b2 - t W2 round away the function (by 2.2 at t = 1e300)."""
    P = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -1.0]]), np.array([-0.5])),
        (np.array([[1.0]]), np.zeros(1)),
    ]
    assert HidingTranslation(0, 1.0).applies(P).applies
    r = HidingTranslation(0, t).applies(P)
    assert not r.applies and "float64 rounding" in r.reason
