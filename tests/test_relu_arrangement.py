"""Weighted arrangements and fibers of one-hidden-layer networks on the orthant (docs/concepts_relu.md §2).

Ground truths: exact rational evaluation of the networks, ``neuromanifold.relu.equivalent``
(region-based, certified) and the rank of the network's parameter Jacobian.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import ArchitectureError, DomainError, InputError, ParameterError
from neuromanifold.relu import (
    ReLUNet,
    arrangements_equal,
    equivalent,
    forward,
    orthant_fiber,
    regions,
    weighted_arrangement,
)


# ---- helpers ----------------------------------------------------------------------------

def dyadic_one_hidden(rng, d, n, m, pivot_one=False, span=4):
    """Entries k/4: exact in binary, with frequent coincidences. With ``pivot_one`` the
    first entry of every first-layer row is +-1, so canonical normals stay dyadic."""
    W = rng.integers(-span, span + 1, (n, d)) / 4
    if pivot_one:
        W[:, 0] = rng.choice([-1.0, 1.0], n)
    b = rng.integers(-span, span + 1, n) / 4
    C = rng.integers(-span, span + 1, (m, n)) / 4
    g = rng.integers(-span, span + 1, m) / 4
    return [(W, b), (C, g)]


def exact_eval(params, x):
    """The network at a rational point, in exact arithmetic (entries may be Fractions)."""
    (W, b), (C, g) = params
    x = [Fraction(v) for v in x]
    h = []
    for row, bj in zip(np.asarray(W, dtype=object), np.asarray(b, dtype=object)):
        z = sum((Fraction(a) * xi for a, xi in zip(row, x)), Fraction(bj))
        h.append(max(z, Fraction(0)))
    return [sum((Fraction(c) * hj for c, hj in zip(crow, h)), Fraction(go))
            for crow, go in zip(np.asarray(C, dtype=object), np.asarray(g, dtype=object))]


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


def as_float(params):
    return [(np.array(W, dtype=float), np.array(b, dtype=float)) for W, b in params]


def representable(params):
    return all(Fraction(float(x)) == x for W, b in params for A in (W, b) for x in np.ravel(A))


def numerical_rank(J):
    sv = np.linalg.svd(J, compute_uv=False)
    if sv[0] == 0:
        return 0
    # the largest relative gap separates the rank (the float kernel is at ~1e-15)
    rel = sv / sv[0]
    small = rel < 1e-11
    return int(np.argmax(small)) if small.any() else len(sv)


# ---- the weighted arrangement ------------------------------------------------------------

@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 3), n=st.integers(1, 4),
       m=st.integers(1, 2), domain=st.sampled_from(["orthant", None, (-1.0, 1.0)]))
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
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 3), n=st.integers(1, 4),
       m=st.integers(1, 2))
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
        ours = arrangements_equal(p, q, domain)
        assert ours.certified
        assert ours.equal == truth.equivalent, (p, q, domain, ours.reason)
        counts[truth.equivalent] += 1
    assert counts[True] >= 20 and counts[False] >= 20


def test_relu_identity_and_hidden_hyperplanes():
    # relu(u) - relu(-u) = u: no visible hyperplane, a linear function
    p = [(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([0.5, -0.5])),
         (np.array([[2.0, -2.0]]), np.array([0.0]))]
    A = weighted_arrangement(p)
    assert A.hyperplanes == () and A.hidden_neurons == (0, 1)
    assert A.linear == ((Fraction(2), Fraction(-2)),) and A.bias == (Fraction(1),)
    # sign patterns on the orthant: row >= 0 active, row <= 0 inactive
    q = [(np.array([[1.0, 0.0], [-1.0, -2.0], [0.0, 0.0]]), np.array([0.0, 0.0, 3.0])),
         (np.array([[1.0, 1.0, 1.0]]), np.array([0.0]))]
    B = weighted_arrangement(q)
    assert B.active_neurons == (0, 2) and B.inactive_neurons == (1,)
    assert weighted_arrangement(q, None).num_hyperplanes == 2  # on R^2 both cross


def test_tolerant_comparison():
    rng = np.random.default_rng(5)
    p = ReLUNet([2, 3, 2]).random_params(rng)
    q = [(W + 1e-13 * rng.standard_normal(W.shape), b) for W, b in p]
    A, B = weighted_arrangement(p), weighted_arrangement(q)
    assert not A.equals(B)
    assert A.equals(B, tol=1e-9)
    assert not A.equals(weighted_arrangement([p[0], (p[1][0] * 1.01, p[1][1])]), tol=1e-9)
    # nearly the same line written with opposite canonical orientations (tiny pivots):
    # relu(v) = relu(-v) + v, so the affine parts differ until re-oriented
    r = [(np.array([[1e-20, 1.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]
    s = [(np.array([[-1e-20, 1.0]]), np.array([-1.0])), (np.array([[1.0]]), np.array([0.0]))]
    Ar, As = weighted_arrangement(r, None), weighted_arrangement(s, None)
    assert Ar.hyperplanes[0].normal[1] > 0 > As.hyperplanes[0].normal[1]
    assert Ar.linear != As.linear
    assert not Ar.equals(As)
    assert Ar.equals(As, tol=1e-9)
    assert not Ar.equals(weighted_arrangement([r[0], (np.array([[1.5]]), r[1][1])], None),
                         tol=1e-9)


def test_arrangement_errors():
    good = [(np.ones((2, 2)), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    with pytest.raises(ArchitectureError, match="one-hidden-layer"):
        weighted_arrangement(good + [(np.ones((1, 1)), np.zeros(1))])
    with pytest.raises(ParameterError, match="finite"):
        weighted_arrangement([(np.array([[np.nan, 1.0]]), np.zeros(1)), good[1][:1] + (np.zeros(1),)])
    with pytest.raises(DomainError):
        weighted_arrangement(good, (np.zeros(3), np.ones(3)))
    with pytest.raises(InputError, match="tol"):
        weighted_arrangement(good).equals(weighted_arrangement(good), tol=-1)
    with pytest.raises(ArchitectureError):
        orthant_fiber(good + [(np.ones((1, 1)), np.zeros(1))])
    for tol in ("x", None, float("nan"), True):
        with pytest.raises(InputError, match="tol"):
            arrangements_equal(good, good, tol=tol)
    with pytest.raises(DomainError, match="orthant only"):
        orthant_fiber(good, "whole")
    assert orthant_fiber(good, "orthant").dimension == orthant_fiber(good).dimension
    with pytest.raises(InputError, match="max_pieces"):
        orthant_fiber(good).describe("a")


def test_to_dict_and_repr():
    p = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    A = weighted_arrangement(p)
    d = A.to_dict()
    assert d["hyperplanes"][0]["normal"] == ["1", "-1"] and d["bias"] == ["0"]
    assert "WeightedArrangement(" in repr(A)
    F = orthant_fiber(p)
    fd = F.to_dict()
    assert fd["dimension"] == 1 and "_ctx" not in fd
    assert fd["pieces"][0]["equations"]


# ---- the fiber ---------------------------------------------------------------------------

def test_single_neuron_fiber_is_the_scaling_orbit():
    p = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    F = orthant_fiber(p)
    assert F.dimension == 1 and [P.labels for P in F.pieces] == [("H1+",)]
    P = F.pieces[0]
    W11, W12, b11, W2, b2 = (sympy.Symbol(s, real=True) for s in
                             ("W1[1,1]", "W1[1,2]", "b1[1]", "W2[1,1]", "b2[1]"))
    eqs = {sympy.simplify(e.lhs - e.rhs) for e in P.equations}
    assert eqs == {W12 + W11, b11 - W11 / 2, W11 * W2 - 2, b2}
    assert set(P.inequalities) == {W11 > 0}


def fiber_targets():
    rng = np.random.default_rng(11)
    out = []
    for k in range(12):
        d, n, m = [(1, 2, 1), (2, 2, 1), (2, 3, 1), (2, 3, 2), (3, 2, 1), (1, 3, 2)][k % 6]
        p = dyadic_one_hidden(rng, d, n, m, pivot_one=True)
        if k % 3 == 1:  # a linear neuron
            p[0][0][0] = np.abs(p[0][0][0])
            p[0][1][0] = abs(p[0][1][0])
        if k % 3 == 2 and n >= 2:  # two neurons on one hyperplane, opposite orientations
            p[0][0][1] = -2 * p[0][0][0]
            p[0][1][1] = -2 * p[0][1][0]
        out.append(p)
    return out


@pytest.mark.parametrize("target", fiber_targets())
def test_fiber_samples_are_in_the_fiber_with_the_formula_dimension(target):
    F = orthant_fiber(target)
    assert F.certified
    assert F.contains(target)
    own = F.piece_of(target)
    assert own is not None
    assert F.dimension == max(P.dimension for P in F.pieces)
    rng = np.random.default_rng(0)
    d = target[0][0].shape[1]
    for P in F.pieces:
        top = max(P.strata, key=lambda s: (s[1], s[0]))[0]
        for q, dim in P.strata:
            s = P.sample(rng, stratum=q, exact=True)
            assert P.residual(s) == 0
            assert F.contains(s)  # exact arrangement equality
            found = F.piece_of(s)
            assert found is not None and found[0].index == P.index
            assert np.array_equal(found[1], np.arange(len(P.labels)))
            ld = P.local_dimension(s)
            assert ld >= dim
            if q == top:
                assert ld == dim == P.dimension
        # independent exact evaluation at rational points of the orthant
        s = P.sample(rng, exact=True)
        for x in rng.integers(0, 24, (8, d)) / 4:
            assert exact_eval(s, x) == exact_eval(target, x)


def test_fiber_samples_confirmed_by_ground_truth_equivalence():
    rng = np.random.default_rng(1)
    exact_checked = rounded_checked = 0
    for target in fiber_targets()[:6]:
        F = orthant_fiber(target)
        d = target[0][0].shape[1]
        for P in F.pieces[:6]:
            s = F.sample(rng, piece=P.index, exact=True)  # randomly permuted
            sf = as_float(s)
            if representable(s):  # the float parameters are exactly in the fiber
                r = equivalent(target, sf, "orthant", method="regions")
                assert r.equivalent and r.certified
                exact_checked += 1
            else:  # rounded to floats: equal up to rounding on a box of the orthant
                r = equivalent(target, sf, ([0.0] * d, [8.0] * d), method="regions")
                assert r.equivalent or r.max_difference < 1e-9
                rounded_checked += 1
    assert exact_checked >= 5 and rounded_checked >= 5


def test_standard_pieces_match_the_functional_jacobian(rng):
    """Independent check of the dimension formula: P - rank of the parameter Jacobian of
    the network at points of every region equals the piece dimension (standard pieces)."""
    checked = 0
    for trial in range(12):
        d, n, m = [(1, 3, 1), (2, 3, 1), (2, 2, 2), (3, 3, 1)][trial % 4]
        net = ReLUNet([d, n, m])
        p = net.random_params(rng)
        if trial % 2:
            p[0][0][0] = np.abs(p[0][0][0])
            p[0][1][0] = abs(p[0][1][0])
        F = orthant_fiber(p, degenerate=False)
        for P in F.pieces:
            s = P.sample(rng)
            X = np.vstack([r.point + 0.5 * r.margin * rng.uniform(-1, 1, (2 * d + 2, d))
                           for r in regions(s, "orthant")])
            fd = net.num_params - numerical_rank(net.jacobian(s, X))
            assert fd == P.dimension, (P.labels, fd, P.dimension)
            checked += 1
    assert checked >= 20


def test_printed_equations_hold_at_samples():
    target = fiber_targets()[3]
    F = orthant_fiber(target)
    rng = np.random.default_rng(2)
    for P in F.pieces[:6]:
        s = P.sample(rng, exact=True)
        x = [sympy.Rational(v.numerator, v.denominator) for W, b in s for A in (W, b)
             for v in np.ravel(A)]
        sub = dict(zip(P.symbols, x))
        assert all(bool(e.subs(sub)) for e in P.equations)
        assert all(bool(e.subs(sub)) for e in P.inequalities)
        assert P.condition().subs(sub) == sympy.true
        # moving off the fiber violates the description
        sub2 = dict(sub)
        sub2[P.symbols[-1]] += 1  # output bias
        assert P.condition().subs(sub2) == sympy.false
        assert "dimension" in P.describe()


def test_orientation_choices_and_nonnegative_rank():
    # two neurons crossing the orthant, no linear part: flipping a neuron's orientation
    # needs linear neurons to produce w n^T (a mixed-sign row: nonnegative rank 2)
    p = [(np.array([[1.0, -1.0], [1.0, -2.0], [-1.0, -1.0]]), np.array([0.0, 0.5, -1.0])),
         (np.array([[1.0, 1.0, 0.5]]), np.array([0.0]))]
    F = orthant_fiber(p)
    std = {P.labels: P for P in F.standard_pieces}
    assert set(std) == {("H1+", "H2+", "dead"), ("H1+", "H2+", "linear")}
    assert std[("H1+", "H2+", "dead")].nonnegative_rank == 0
    assert F.dimension == max(P.dimension for P in F.pieces)
    # one neuron and a linear neuron: the required linear part for H1- is w n^T + M
    q = [(np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0])),
         (np.array([[1.0, 1.0]]), np.array([0.0]))]
    G = orthant_fiber(q)
    std = {P.labels: P for P in G.standard_pieces}
    assert std[("H1+", "linear")].nonnegative_rank == 1  # M = (1, 1) >= 0
    assert std[("H1-", "linear")].nonnegative_rank == 1  # M + n = (2, 0) >= 0
    # scaling of the visible neuron, the linear neuron's bias, and c w = M (w >= 0): 1
    assert std[("H1+", "linear")].dimension == 3
    assert G.contains(G.sample(3, exact=True))


def test_fiber_pieces_cover_symmetric_copies(rng):
    target = fiber_targets()[4]
    F = orthant_fiber(target)
    (W, b), (C, g) = target
    for _ in range(5):
        perm = rng.permutation(W.shape[0])
        s = 2.0 ** rng.integers(-2, 3, W.shape[0])
        q = [(W[perm] * s[perm, None], b[perm] * s[perm]), (C[:, perm] / s[perm], g)]
        found = F.piece_of(q)
        assert found is not None
        P, order = found
        qq = [(q[0][0][order], q[0][1][order]), (q[1][0][:, order], q[1][1])]
        assert P.residual(qq) == 0
    assert F.piece_of([(W, b), (C, g + 1)]) is None


def test_sampler_errors():
    p = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    F = orthant_fiber(p)
    with pytest.raises(InputError, match="piece"):
        F.sample(0, piece=5)
    with pytest.raises(InputError, match="stratum"):
        F.pieces[0].sample(0, stratum=7)
    with pytest.raises(ParameterError):
        F.pieces[0].local_dimension(ReLUNet([2, 2, 1]).random_params(0))


def _set_partitions(s):
    if not s:
        yield []
        return
    first, rest = s[0], s[1:]
    for p in _set_partitions(rest):
        for i in range(len(p)):
            yield p[:i] + [[first] + p[i]] + p[i + 1:]
        yield [[first]] + p


@pytest.mark.parametrize("n,r", [(1, 0), (2, 1), (3, 1), (3, 2), (4, 2)])
def test_piece_copies_count_every_labelled_assignment(n, r):
    """Sum of `copies` over all types = number of ways to label neurons (brute force):
    each neuron on a visible hyperplane with an orientation, linear, dead, or in a cancel
    group (groups: set partitions, orientations relative within a group)."""
    import itertools

    from neuromanifold.relu._arrangement import _enumerate_types

    labels = [("H", k, s) for k in range(r) for s in (1, -1)] + ["L", "D", "E"]
    brute = 0
    for assign in itertools.product(labels, repeat=n):
        if any(all(a[:2] != ("H", k) for a in assign if isinstance(a, tuple)) for k in range(r)):
            continue
        E = [i for i, a in enumerate(assign) if a == "E"]
        for part in _set_partitions(E):
            brute += int(np.prod([2 ** (len(blk) - 1) for blk in part]))
    assert sum(t.copies() for t in _enumerate_types(n, r, True)) == brute


# ---- review additions: completeness under symmetries, dimension lower bound, size --------

def _mixed_row(rng, d):
    while True:
        r = rng.integers(-3, 4, d + 1) / 2
        if (r > 0).any() and (r < 0).any():
            return r


def structured_one_hidden(rng, d, n, m):
    """Dyadic networks of rich types: neurons sharing a hyperplane with both orientations,
    cancelling pairs, linear rows with zero entries, dead rows, zero outgoing weights."""
    rows, Cs = [], []
    while len(rows) < n:
        kind = rng.choice(["H", "Hmulti", "cancel", "lin", "dead", "zeroC"])
        left = n - len(rows)
        if kind == "H":
            rows.append(_mixed_row(rng, d))
            Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "Hmulti" and left >= 2:
            r = _mixed_row(rng, d)
            for _ in range(int(rng.integers(2, left + 1))):
                rows.append(r * rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]))
                Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "cancel" and left >= 2:
            r, c = _mixed_row(rng, d), rng.integers(-3, 4, m) / 2
            s1, s2 = rng.choice([-2.0, -1.0, 0.5, 1.0], 2)
            rows += [s1 * r, s2 * r]
            Cs += [c / abs(s1), -c / abs(s2)]
        elif kind == "lin":
            rows.append(np.abs(rng.integers(-3, 4, d + 1) / 2) * (rng.random(d + 1) < 0.6))
            Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "dead":
            r = -np.abs(rng.integers(-3, 4, d + 1) / 2)
            r[rng.integers(d + 1)] = -1.0
            rows.append(r)
            Cs.append(rng.integers(-3, 4, m) / 2)
        elif kind == "zeroC":
            rows.append(rng.integers(-3, 4, d + 1) / 2)
            Cs.append(np.zeros(m))
    R, C = np.array(rows[:n]), np.array(Cs[:n]).T
    return [(R[:, :d].copy(), R[:, d].copy()), (C.copy(), rng.integers(-3, 4, m) / 2)]


def symmetric_copy(rng, p):
    """A parameter of the same function on the orthant, by the layer-wise symmetries of
    docs/concepts_relu.md §4: permutation and positive (power-of-two) scaling, free outgoing weights and
    any nonpositive row for dead neurons, any row for neurons with zero outgoing weights,
    mixing of the linear neurons by a nonnegative invertible matrix and nonnegative bias
    shifts compensated in b2, a dead neuron turned into a second copy of a visible one."""
    (W, b), (C, g) = p
    R = np.hstack([W, b[:, None]]).astype(float)
    C, g = C.astype(float).copy(), g.astype(float).copy()
    n, d = W.shape
    lin = [j for j in range(n) if (R[j] >= 0).all() and (R[j] > 0).any()]
    dead = [j for j in range(n) if (R[j] <= 0).all() and (R[j] < 0).any()]
    zero_out = [j for j in range(n) if not C[:, j].any() and j not in dead]
    for j in dead:
        C[:, j] = rng.integers(-3, 4, C.shape[0]) / 2
        R[j] = -np.abs(rng.integers(0, 4, d + 1) / 2)
        R[j, rng.integers(d + 1)] = -0.5
    for j in zero_out:
        R[j] = rng.integers(-3, 4, d + 1) / 2
    if lin:
        G = np.eye(len(lin)) + np.triu(rng.integers(0, 2, (len(lin), len(lin))), 1) / 2
        R[lin] = G @ R[lin]                   # G >= 0 keeps the rows nonnegative
        C[:, lin] = C[:, lin] @ np.linalg.inv(G)  # unit upper triangular: exact in floats
        shift = rng.integers(0, 3, len(lin)) / 2
        R[lin, d] += shift
        g -= C[:, lin] @ shift
    crossing = [j for j in range(n) if (R[j] > 0).any() and (R[j] < 0).any() and C[:, j].any()]
    if dead and crossing:  # split a visible neuron's jump over a former dead neuron
        j, k = crossing[0], dead[0]
        R[k] = 2 * R[j]
        C[:, k] = C[:, j] / 4
        C[:, j] = C[:, j] / 2
    perm = rng.permutation(n)
    s = 2.0 ** rng.integers(-2, 3, n)
    R, C = R[perm] * s[:, None], C[:, perm] / s
    return [(R[:, :d], R[:, d]), (C, g)]


def test_fiber_contains_every_symmetric_copy(rng):
    """Completeness: parameters built from the target by symmetries lie in a piece of the
    fiber (ground truth: `equivalent` on the orthant), the piece's equations vanish there
    and its sympy description holds; and every structured network lies in a piece of its
    own fiber (the type enumeration and the feasibility formula miss no type)."""
    checked = 0
    for trial in range(40):
        d, n, m = [(1, 3, 1), (2, 3, 1), (2, 4, 2), (3, 3, 1), (1, 4, 2)][trial % 5]
        p = structured_one_hidden(rng, d, n, m)
        F = orthant_fiber(p)
        assert F.piece_of(p) is not None
        q = symmetric_copy(rng, p)
        if trial < 8:
            assert equivalent(p, q, "orthant", method="regions").equivalent
        found = F.piece_of(q)
        assert found is not None, (p, q)
        P, order = found
        qq = [(q[0][0][order], q[0][1][order]), (q[1][0][:, order], q[1][1])]
        assert P.residual(qq) == 0
        if trial < 10:
            x = [sympy.Rational(Fraction(float(v))) for W, b in qq for A in (W, b)
                 for v in np.ravel(A)]
            assert P.condition().subs(dict(zip(P.symbols, x))) == sympy.true
        checked += 1
    for trial in range(150):  # own pieces of many structured networks (cheap)
        d, n, m = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 3))
        p = structured_one_hidden(rng, d, n, m)
        assert orthant_fiber(p).piece_of(p) is not None, p
    assert checked == 40


def test_description_is_exactly_the_piece(rng):
    """The sympy condition of a piece holds at a point (canonical order) iff the point is in
    that piece (ground truth: the exact arrangement and the neuron classification), for
    samples and for samples with one entry changed or negated."""
    from neuromanifold.relu._arrangement import _to_params

    truths = {True: 0, False: 0}
    for trial in range(10):
        d, n, m = [(1, 2, 1), (2, 2, 1), (2, 3, 1), (1, 3, 2), (2, 3, 2)][trial % 5]
        F = orthant_fiber(structured_one_hidden(rng, d, n, m))
        for P in F.pieces[:3]:
            x = [v for W, b in P.sample(rng, exact=True) for A in (W, b) for v in np.ravel(A)]
            cond = P.condition()
            for k in range(4):
                y = list(x)
                if k:
                    i = int(rng.integers(len(y)))
                    y[i] = -y[i] if k == 3 else y[i] + Fraction(int(rng.choice([-3, -1, 1, 2])), 4)
                c = cond.subs({s: sympy.Rational(v.numerator, v.denominator)
                               for s, v in zip(P.symbols, y)})
                found = F.piece_of(_to_params(P._ctx, y, True))
                member = found is not None and found[0].index == P.index
                assert c in (sympy.true, sympy.false)
                assert bool(c) == member, (P.labels, k, y)
                truths[member] += 1
    assert truths[True] >= 20 and truths[False] >= 20


def test_piece_dimension_is_attained_by_newton_moves(rng):
    """Lower bound for the dimension formula, independent of the formula: from a sample of
    the top stratum, every direction of the kernel of the equations' Jacobian is followed
    by Gauss-Newton back onto the equations with a second-order correction (so the piece is
    a manifold of that dimension there), and the point reached realizes the target
    (checked by evaluation). `local_dimension` (the upper bound) equals the formula."""
    from neuromanifold.relu._arrangement import _pgrad, _pval, _to_params

    def val(polys, x):
        xf = [Fraction(float(v)) for v in x]
        return np.array([float(_pval(p, xf)) for p in polys])

    def jac(polys, x, nv):
        xf = [Fraction(float(v)) for v in x]
        return np.array([[float(gi) for gi in _pgrad(p, xf, nv)] for p in polys])

    checked = 0
    for target in fiber_targets()[:6]:
        F = orthant_fiber(target)
        for P in F.pieces[:4]:
            ctx, polys = P._ctx, P._polys()
            s = P.sample(rng, exact=True)
            assert P.local_dimension(s) == P.dimension
            x0 = np.array([float(v) for W, b in s for A in (W, b) for v in np.ravel(A)])
            J = jac(polys, x0, ctx.nvars)
            for j, lab in enumerate(P._type.labels()):  # tight signs of linear rows
                if lab[0] == "linear":
                    for i in range(ctx.d + 1):
                        if x0[ctx.row_index(j, i)] == 0:
                            J = np.vstack([J, np.eye(ctx.nvars)[ctx.row_index(j, i)]])
            _, S, Vt = np.linalg.svd(J)
            N = Vt[int((S > 1e-9 * S[0]).sum()):]
            assert N.shape[0] == P.dimension
            v = N.T @ rng.standard_normal(N.shape[0])
            v /= np.linalg.norm(v)
            eps = 1e-4
            x = x0 + eps * v
            for _ in range(20):
                r = val(polys, x)
                if np.max(np.abs(r), initial=0.0) < 1e-13:
                    break
                x = x - np.linalg.lstsq(jac(polys, x, ctx.nvars), r, rcond=None)[0]
            assert np.linalg.norm(x - (x0 + eps * v)) < 1e-2 * eps, P.labels
            Z = rng.uniform(0, 4, (200, ctx.d))
            assert np.max(np.abs(forward(_to_params(ctx, list(x), False), Z)
                                 - forward(target, Z))) < 1e-6
            checked += 1
    assert checked >= 15


def test_type_count_and_size_bound():
    from neuromanifold.relu._arrangement import _count_types, _enumerate_types

    for n in range(7):
        for r in range(n + 1):
            for deg in (True, False):
                assert _count_types(n, r, deg) == sum(1 for _ in _enumerate_types(n, r, deg))
    # 2 -> 12 -> 1 with 6 visible hyperplanes: over a million types; refused at once
    W = np.array([[1.0, -1.0 - k] for k in range(6)] + [[-1.0, -1.0]] * 6)
    b = np.array([0.5] * 6 + [-1.0] * 6)
    p = [(W, b), (np.ones((1, 12)), np.zeros(1))]
    with pytest.raises(InputError, match=r"1148709 combinatorial types.*degenerate=False"):
        orthant_fiber(p)
    assert orthant_fiber(p, degenerate=False).num_types == 2 ** 6 * 7
    small = [(np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0])),
             (np.array([[1.0, 1.0]]), np.array([0.0]))]
    with pytest.raises(InputError, match="max_types"):
        orthant_fiber(small, max_types=3)
    for bad in (0, 2.5, True):
        with pytest.raises(InputError, match="max_types"):
            orthant_fiber(small, max_types=bad)
    with pytest.raises(InputError, match="degenerate"):
        orthant_fiber(small, degenerate="no")


def test_membership_needs_the_same_widths():
    p = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    F = orthant_fiber(p)
    # the same function with an extra dead neuron: not a point of this fiber
    q = [(np.array([[1.0, -1.0], [-1.0, -1.0]]), np.array([0.5, -1.0])),
         (np.array([[2.0, 3.0]]), np.array([0.0]))]
    assert equivalent(p, q, "orthant").equivalent
    assert not F.contains(q) and F.piece_of(q) is None
    with pytest.raises(ParameterError, match="widths"):
        F.pieces[0].residual(q)
    with pytest.raises(ParameterError, match="widths"):
        F.pieces[0].local_dimension(p + [(np.ones((1, 1)), np.zeros(1))])
