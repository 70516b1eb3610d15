"""Weighted arrangements of one-hidden-layer networks and their comparison, exact and at
a relative tolerance (docs/concepts_relu.md §2, docs/relu_arrangement.md §1).

Ground truths: exact rational evaluation of the networks and ``neuromanifold.relu.equivalent``
(region-based, certified).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import ArchitectureError, DomainError, InputError, ParameterError
from neuromanifold.relu import (
    ReLUNet,
    arrangements_equal,
    equivalent,
    forward,
    weighted_arrangement,
)
from tests.support.arrangement import dyadic_one_hidden, exact_eval, float_rescaled_copy


def exact_canonical(A, x):
    x = [Fraction(v) for v in x]
    out = []
    for o in range(A.output_dim):
        s = A.bias[o] + sum((A.linear[o][i] * x[i] for i in range(A.input_dim)), Fraction(0))
        for H in A.hyperplanes:
            u = sum((a * b for a, b in zip(H.normal, x)), H.offset)
            s += H.weight[o] * max(u, Fraction(0))
        out.append(s)
    return out


def rational_points(rng, d, k, domain):
    if domain == "orthant":
        X = rng.integers(0, 40, (k, d)) / 8
    elif domain is None:
        X = rng.integers(-40, 40, (k, d)) / 8
    else:
        X = rng.integers(-8, 9, (k, d)) / 8  # inside the box (-1, 1)
    return X


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 3),
    n=st.integers(1, 4),
    m=st.integers(1, 2),
    domain=st.sampled_from(["orthant", None, (-1.0, 1.0)]),
)
def test_canonical_form_equals_the_network_exactly(seed, d, n, m, domain):
    rng = np.random.default_rng(seed)
    p = dyadic_one_hidden(rng, d, n, m)
    A = weighted_arrangement(p, domain)
    assert A.certified
    for x in rational_points(rng, d, 25, domain):
        assert exact_canonical(A, x) == exact_eval(p, x)
    X = rational_points(rng, d, 50, domain)
    assert np.allclose(A.evaluate(X), forward(p, X), atol=1e-12)
    # bookkeeping: every neuron is classified exactly once
    on_h = [j for H in A.hyperplanes for j in H.neurons]
    allj = sorted(on_h + list(A.active_neurons) + list(A.inactive_neurons) + list(A.hidden_neurons))
    assert allj == list(range(n))
    for H in A.hyperplanes:
        assert any(w != 0 for w in H.weight)
        assert next(v for v in H.normal if v != 0) == 1


@settings(max_examples=30)
@given(
    seed=st.integers(0, 2**32 - 1), d=st.integers(1, 3), n=st.integers(1, 4), m=st.integers(1, 2)
)
def test_permuted_and_rescaled_copies_have_equal_arrangements(seed, d, n, m):
    rng = np.random.default_rng(seed)
    (W, b), (C, g) = dyadic_one_hidden(rng, d, n, m)
    perm = rng.permutation(n)
    s = 2.0 ** rng.integers(-3, 4, n)  # exact positive rescaling
    q = [(W[perm] * s[perm, None], b[perm] * s[perm]), (C[:, perm] / s[perm], g)]
    assert arrangements_equal([(W, b), (C, g)], q).equal
    # moving one output weight of a visible neuron changes the arrangement
    A = weighted_arrangement([(W, b), (C, g)])
    if A.hyperplanes:
        j = A.hyperplanes[0].neurons[0]
        C2 = C.copy()
        C2[0, j] += 0.25
        assert not arrangements_equal([(W, b), (C, g)], [(W, b), (C2, g)]).equal


def relative(rng, p):
    """A network equal to p on every domain, of width 2, 3 or 4 (permuted and rescaled,
    a neuron split in two on its hyperplane, or a neuron written with both orientations)."""
    (W, b), (C, g) = p
    kind = rng.integers(3)
    if kind == 0:
        perm = rng.permutation(2)
        s = 2.0 ** rng.integers(-2, 3, 2)
        return [(W[perm] * s[perm, None], b[perm] * s[perm]), (C[:, perm] / s[perm], g)]
    if kind == 1:
        c1 = rng.integers(-2, 3) / 4
        W2 = np.vstack([W[0], 2 * W[0], W[1]])
        b2 = np.array([b[0], 2 * b[0], b[1]])
        return [(W2, b2), (np.array([[c1, (C[0, 0] - c1) / 2, C[0, 1]]]), g)]
    W2 = np.vstack([-W[0], W[0], -W[0], W[1]])
    b2 = np.array([-b[0], b[0], -b[0], b[1]])
    return [(W2, b2), (np.array([[C[0, 0], C[0, 0], -C[0, 0], C[0, 1]]]), g)]


def test_arrangement_equality_agrees_with_ground_truth_equivalence(rng):
    """equal arrangements <=> equal functions, against the certified region method, on
    pairs with many coincidences (tiny dyadic weights, relatives with small changes)."""
    counts = {True: 0, False: 0}
    for trial in range(120):
        d = int(rng.integers(1, 3))
        domain = ["orthant", None, (-1.0, 1.0)][trial % 3]
        p = dyadic_one_hidden(rng, d, 2, 1, span=2)
        if trial % 4 == 3:
            q = dyadic_one_hidden(rng, d, 2, 1, span=2)
        else:
            q = relative(rng, p)
            if trial % 2:  # a small change, which may or may not change the function
                (W, b), (C, g) = q
                C = C.copy()
                C[0, rng.integers(C.shape[1])] += 0.25
                q = [(W, b), (C, g)]
        truth = equivalent(p, q, domain, method="regions")
        assert truth.certified
        ours = arrangements_equal(p, q, domain)  # at the default tolerance
        assert ours.certified
        assert ours.equal == truth.equivalent, (p, q, domain, ours.reason)
        exact = arrangements_equal(p, q, domain, tol=0)
        assert exact.certified and exact.equal == truth.equivalent
        counts[truth.equivalent] += 1
    assert counts[True] >= 20 and counts[False] >= 20


def test_relu_identity_and_hidden_hyperplanes():
    # relu(u) - relu(-u) = u: no visible hyperplane, a linear function
    p = [
        (np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([0.5, -0.5])),
        (np.array([[2.0, -2.0]]), np.array([0.0])),
    ]
    A = weighted_arrangement(p)
    assert A.hyperplanes == () and A.hidden_neurons == (0, 1)
    assert A.linear == ((Fraction(2), Fraction(-2)),) and A.bias == (Fraction(1),)
    # sign patterns on the orthant: row >= 0 active, row <= 0 inactive
    q = [
        (np.array([[1.0, 0.0], [-1.0, -2.0], [0.0, 0.0]]), np.array([0.0, 0.0, 3.0])),
        (np.array([[1.0, 1.0, 1.0]]), np.array([0.0])),
    ]
    B = weighted_arrangement(q)
    assert B.active_neurons == (0, 2) and B.inactive_neurons == (1,)
    assert weighted_arrangement(q, None).num_hyperplanes == 2  # on R^2 both cross


def test_tolerant_comparison():
    rng = np.random.default_rng(5)
    p = ReLUNet([2, 3, 2]).random_params(rng)
    q = [(W + 1e-13 * rng.standard_normal(W.shape), b) for W, b in p]
    A, B = weighted_arrangement(p), weighted_arrangement(q)
    assert not A.equals(B, tol=0)
    assert A.equals(B) and A.equals(B, tol=1e-9)
    assert not A.equals(B, tol=1e-14)
    assert not A.equals(weighted_arrangement([p[0], (p[1][0] * 1.01, p[1][1])]))
    # nearly the same line written with opposite canonical orientations (tiny pivots):
    # relu(v) = relu(-v) + v, so the affine parts differ until re-oriented
    r = [(np.array([[1e-20, 1.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]
    s = [(np.array([[-1e-20, 1.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]
    Ar, As = weighted_arrangement(r, None), weighted_arrangement(s, None)
    assert Ar.hyperplanes[0].normal[1] > 0 > As.hyperplanes[0].normal[1]
    assert Ar.linear != As.linear
    assert not Ar.equals(As, tol=0)
    assert Ar.equals(As)
    assert not Ar.equals(weighted_arrangement([r[0], (np.array([[1.5]]), r[1][1])], None))


def test_arrangement_errors():
    good = [(np.ones((2, 2)), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    with pytest.raises(ArchitectureError, match="one-hidden-layer"):
        weighted_arrangement(good + [(np.ones((1, 1)), np.zeros(1))])
    with pytest.raises(ParameterError, match="finite"):
        weighted_arrangement(
            [(np.array([[np.nan, 1.0]]), np.zeros(1)), good[1][:1] + (np.zeros(1),)]
        )
    with pytest.raises(DomainError):
        weighted_arrangement(good, (np.zeros(3), np.ones(3)))
    with pytest.raises(InputError, match="tol"):
        weighted_arrangement(good).equals(weighted_arrangement(good), tol=-1)
    for tol in ("x", None, float("nan"), True, -1e-9, 1.0):
        with pytest.raises(InputError, match="tol"):
            arrangements_equal(good, good, tol=tol)


# ---- the relative tolerance ----------------------------------------------------------------


def live_perturbation(p, domain, rel):
    """p with one live weight changed by the relative amount ``rel``: the outgoing weight
    with the largest contribution |C[o, j]| ||(W[j], b[j])||_1 among the neurons on visible
    hyperplanes (or acting affinely); None when the network has none."""
    A = weighted_arrangement(p, domain, tol=0)
    live = [j for H in A.hyperplanes for j in H.neurons] or list(A.active_neurons)
    (W, b), (C, g) = p
    rows = np.abs(np.hstack([W, b[:, None]])).sum(axis=1)
    best = max(
        ((abs(C[o, j]) * rows[j], o, j) for j in live for o in range(C.shape[0])),
        default=(0.0, 0, 0),
    )
    if best[0] == 0.0:
        return None, 0.0
    _, o, j = best
    C2 = C.copy()
    C2[o, j] *= 1 + rel
    return [(W, b), (C2, g)], best[0]


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 3),
    n=st.integers(1, 5),
    m=st.integers(1, 2),
    domain=st.sampled_from(["orthant", None, (-1.0, 1.0)]),
    exponent=st.integers(-150, 150),
)
def test_float_rescaled_copies_equal_and_live_perturbations_not(seed, d, n, m, domain, exponent):
    """At the default tol a permuted copy rescaled by arbitrary positive floats is equal,
    at any overall scale of the network (relative tolerance); a relative change of 1e-6 in
    one live weight is not, and the measured difference is the change of that jump."""
    rng = np.random.default_rng(seed)
    p = ReLUNet([d, n, m]).random_params(rng)
    p[1] = (p[1][0] * 10.0**exponent, p[1][1] * 10.0**exponent)
    q = float_rescaled_copy(rng, p)
    r = arrangements_equal(p, q, domain)
    assert r.equal, r.reason
    assert 0.0 <= r.difference <= 1e-12 and r.tolerance == 1e-9
    assert r.certified == (r.difference == 0.0)
    exact = arrangements_equal(p, q, domain, tol=0)
    assert exact.certified and exact.equal == (r.difference == 0.0)
    bad, contribution = live_perturbation(p, domain, 1e-6)
    if bad is None:
        return
    c = arrangements_equal(p, bad, domain)
    # a lone neuron on its hyperplane: the difference is exactly the change of its jump
    # (or of the affine part), relative to the larger scale
    expected = 1e-6 * contribution / c.scale
    assert c.difference == pytest.approx(expected, rel=1e-6)
    # unequal exactly when that exceeds tol (a neuron contributing little to the scale
    # moves the function by less than tol: equal at tol, as it should be)
    assert c.equal == (c.difference <= c.tolerance)
    if not c.equal:
        assert c.certified and c.reason


def test_rescaled_copies_are_generally_unequal_at_tol_zero():
    rng = np.random.default_rng(0)
    unequal = 0
    for _ in range(20):
        p = ReLUNet([2, 4, 2]).random_params(rng)
        unequal += not arrangements_equal(p, float_rescaled_copy(rng, p), tol=0).equal
    assert unequal >= 15


def test_tolerance_merges_nearly_parallel_neurons_and_drops_negligible_jumps():
    W = np.array([[1.0, -2.0], [-3.0 * (1 + 1e-13), 6.0], [1.0, 1.0], [2.0, -1.0]])
    b = np.array([0.5, -1.5, 0.0, -1.0])
    C = np.array([[1.0, 2.0, 1.0, 1e-14]])
    p = [(W, b), (C, np.zeros(1))]
    E, A = weighted_arrangement(p, tol=0), weighted_arrangement(p)
    assert E.exact and E.num_hyperplanes == 3 and E.hidden_neurons == ()
    assert not A.exact and A.num_hyperplanes == 1 and A.hidden_neurons == (3,)
    H = A.hyperplanes[0]
    assert H.neurons == (0, 1) and H.orientations == (1, -1)
    # the merged arrangement is the exact one of the exactly parallel network
    W0 = W.copy()
    W0[1] = [-3.0, 6.0]
    q = [(W0, b), (C * [[1, 1, 1, 0]], np.zeros(1))]
    Q = weighted_arrangement(q, tol=0)
    assert Q.num_hyperplanes == 1 and Q.equals(A) and Q.equals(E)
    assert not Q.equals(E, tol=0)
    # ... and agrees with the network up to the tolerance
    Z = np.random.default_rng(1).uniform(0, 4, (200, 2))
    assert np.max(np.abs(A.evaluate(Z) - forward(p, Z))) <= 1e-9 * A.scale * 5
    assert np.max(np.abs(E.evaluate(Z) - forward(p, Z))) <= 1e-12 * E.scale


def test_exact_inputs_stay_exact():
    third = Fraction(1, 3)
    p = [([[third, -1]], [third]), ([[3]], [Fraction(1, 7)])]
    A = weighted_arrangement(p)
    assert A.exact and A.hyperplanes[0].normal == (1, -3) and A.hyperplanes[0].offset == 1
    assert A.hyperplanes[0].weight == (1,) and A.bias == (Fraction(1, 7),)
    tiny = [([[third, -1]], [third]), ([[3]], [Fraction(1, 7) + Fraction(1, 10**30)])]
    assert arrangements_equal(p, p).certified
    assert not arrangements_equal(p, tiny, tol=0).equal
    r = arrangements_equal(p, tiny)
    assert r.equal and not r.certified and 0 < r.difference < 1e-28


def test_bad_inputs_raise_errors_naming_the_rule():
    good = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    A = weighted_arrangement(good)
    bad_params = [
        ("abc", "list of \\(W, b\\) pairs"),
        ([(np.ones((1, 2)), np.zeros(1))] * 0, "non-empty"),
        ([([["1", "2"]], [0.0]), ([[1.0]], [0.0])], "real numbers"),
        ([(np.array([[1 + 1j, 2]]), [0.0]), ([[1.0]], [0.0])], "real numbers"),
        ([([[True, 2.0]], [0.0]), ([[1.0]], [0.0])], "real numbers"),
        ([([[None, 2.0]], [0.0]), ([[1.0]], [0.0])], "real numbers"),
        ([([[np.inf, 2.0]], [0.0]), ([[1.0]], [0.0])], "finite"),
        ([(np.ones((1, 2)), np.zeros(2)), ([[1.0]], [0.0])], "one entry per row"),
        ([(np.ones((1, 2)), np.zeros(1)), (np.ones((1, 2)), [0.0])], "columns"),
        ([(np.ones(2), np.zeros(1)), ([[1.0]], [0.0])], "dimension"),
    ]
    calls = [
        lambda x: weighted_arrangement(x),
        lambda x: arrangements_equal(good, x),
        lambda x: arrangements_equal(x, good),
    ]
    for params, rule in bad_params:
        for call in calls:
            with pytest.raises(ParameterError, match=rule):
                call(params)
    for tol in (-1.0, 1.0, float("nan"), float("inf"), "1e-9", None, True, 1j):
        for call in (
            lambda t: weighted_arrangement(good, tol=t),
            lambda t: arrangements_equal(good, good, tol=t),
            lambda t: A.equals(A, tol=t),
        ):
            with pytest.raises(InputError, match="tol must be"):
                call(tol)
    for other in ("A", good, None):
        with pytest.raises(InputError, match="WeightedArrangement"):
            A.equals(other)
    for Z, rule in (
        ([[1.0, 2.0, 3.0]], "shape"),
        ([[np.nan, 1.0]], "finite"),
        ([["a", "b"]], "real numbers"),
        (np.ones((2, 2, 2)), "shape"),
    ):
        with pytest.raises(InputError, match=rule):
            A.evaluate(Z)
    for domain in ("nowhere", (np.zeros(3), np.ones(3)), 5):
        with pytest.raises(DomainError):
            weighted_arrangement(good, domain)
    with pytest.raises(TypeError):  # options are keyword-only
        arrangements_equal(good, good, "orthant", 0.0)


def test_tensors_that_require_grad_are_read_detached():
    """The exact layers go through the shared reader: a tensor requiring grad gives the
    same analysis as its numpy values (it is never differentiated through)."""
    torch = pytest.importorskip("torch")
    from neuromanifold import relu

    params = [
        (np.array([[1.0, -0.5], [0.3, 0.8], [-0.7, 0.2]]), np.array([0.1, -0.2, 0.05])),
        (np.array([[1.0, -2.0, 0.5]]), np.array([0.3])),
    ]
    tensors = [
        (torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True))
        for W, b in params
    ]
    assert relu.arrangements_equal(tensors, params)
    assert relu.arrangements_equal(params, tensors)
    assert (
        relu.weighted_arrangement(tensors).to_dict() == relu.weighted_arrangement(params).to_dict()
    )
    assert relu.genericity(tensors).to_dict() == relu.genericity(params).to_dict()
    assert len(relu.orthant_fiber(tensors).to_dict()) > 0
