"""Fibers of one-hidden-layer networks on the orthant (docs/concepts_relu.md §2,
docs/relu_arrangement.md §2).

Ground truths: exact rational evaluation of the networks, ``neuromanifold.relu.equivalent``
(region-based, certified), the rank of the network's parameter Jacobian, and Newton moves
along the pieces.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy

from neuromanifold import ArchitectureError, DomainError, InputError, ParameterError
from neuromanifold.relu import (
    ReLUNet,
    equivalent,
    forward,
    orthant_fiber,
    regions,
    weighted_arrangement,
)
from tests.support.arrangement import (
    dyadic_one_hidden,
    exact_eval,
    float_rescaled_copy,
    structured_one_hidden,
    symmetric_copy,
)


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


def test_single_neuron_fiber_is_the_scaling_orbit():
    p = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    F = orthant_fiber(p)
    assert F.dimension == 1 and [P.labels for P in F.pieces] == [("H1+",)]
    P = F.pieces[0]
    W11, W12, b11, W2, b2 = (
        sympy.Symbol(s, real=True) for s in ("W1[1,1]", "W1[1,2]", "b1[1]", "W2[1,1]", "b2[1]")
    )
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
            X = np.vstack(
                [
                    r.point + 0.5 * r.margin * rng.uniform(-1, 1, (2 * d + 2, d))
                    for r in regions(s, "orthant")
                ]
            )
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
        x = [
            sympy.Rational(v.numerator, v.denominator)
            for W, b in s
            for A in (W, b)
            for v in np.ravel(A)
        ]
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
    p = [
        (np.array([[1.0, -1.0], [1.0, -2.0], [-1.0, -1.0]]), np.array([0.0, 0.5, -1.0])),
        (np.array([[1.0, 1.0, 0.5]]), np.array([0.0])),
    ]
    F = orthant_fiber(p)
    std = {P.labels: P for P in F.standard_pieces}
    assert set(std) == {("H1+", "H2+", "dead"), ("H1+", "H2+", "linear")}
    assert std[("H1+", "H2+", "dead")].nonnegative_rank == 0
    assert F.dimension == max(P.dimension for P in F.pieces)
    # one neuron and a linear neuron: the required linear part for H1- is w n^T + M
    q = [
        (np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0])),
        (np.array([[1.0, 1.0]]), np.array([0.0])),
    ]
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
            yield p[:i] + [[first] + p[i]] + p[i + 1 :]
        yield [[first]] + p


@pytest.mark.parametrize("n,r", [(1, 0), (2, 1), (3, 1), (3, 2), (4, 2)])
def test_piece_copies_count_every_labelled_assignment(n, r):
    """Sum of `copies` over all types = number of ways to label neurons (brute force):
    each neuron on a visible hyperplane with an orientation, linear, dead, or in a cancel
    group (groups: set partitions, orientations relative within a group)."""
    import itertools

    from neuromanifold.relu._orthant.fiber import _enumerate_types

    labels = [("H", k, s) for k in range(r) for s in (1, -1)] + ["L", "D", "E"]
    brute = 0
    for assign in itertools.product(labels, repeat=n):
        if any(all(a[:2] != ("H", k) for a in assign if isinstance(a, tuple)) for k in range(r)):
            continue
        E = [i for i, a in enumerate(assign) if a == "E"]
        for part in _set_partitions(E):
            brute += int(np.prod([2 ** (len(blk) - 1) for blk in part]))
    assert sum(t.copies() for t in _enumerate_types(n, r, True)) == brute


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
            x = [
                sympy.Rational(Fraction(float(v)))
                for W, b in qq
                for A in (W, b)
                for v in np.ravel(A)
            ]
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
    from neuromanifold.relu._orthant.fiber import _to_params

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
                c = cond.subs(
                    {s: sympy.Rational(v.numerator, v.denominator) for s, v in zip(P.symbols, y)}
                )
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
    from neuromanifold.exact import poly_gradient, poly_value
    from neuromanifold.relu._orthant.fiber import _to_params

    def val(polys, x):
        xf = [Fraction(float(v)) for v in x]
        return np.array([float(poly_value(p, xf)) for p in polys])

    def jac(polys, x, nv):
        xf = [Fraction(float(v)) for v in x]
        return np.array([[float(gi) for gi in poly_gradient(p, xf)] for p in polys])

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
            N = Vt[int((S > 1e-9 * S[0]).sum()) :]
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
            assert (
                np.max(np.abs(forward(_to_params(ctx, list(x), False), Z) - forward(target, Z)))
                < 1e-6
            )
            checked += 1
    assert checked >= 15


def test_type_count_and_size_bound():
    from neuromanifold.relu._orthant.fiber import _count_types, _enumerate_types

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
    assert orthant_fiber(p, degenerate=False).num_types == 2**6 * 7
    small = [
        (np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0])),
        (np.array([[1.0, 1.0]]), np.array([0.0])),
    ]
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
    q = [
        (np.array([[1.0, -1.0], [-1.0, -1.0]]), np.array([0.5, -1.0])),
        (np.array([[2.0, 3.0]]), np.array([0.0])),
    ]
    assert equivalent(p, q, "orthant").equivalent
    assert not F.contains(q) and F.piece_of(q) is None
    with pytest.raises(ParameterError, match="widths"):
        F.pieces[0].residual(q)
    with pytest.raises(ParameterError, match="widths"):
        F.pieces[0].local_dimension(p + [(np.ones((1, 1)), np.zeros(1))])


def test_membership_at_the_default_tolerance():
    """A permuted copy rescaled by arbitrary positive floats is in the fiber at the default
    tol (not exactly: ``piece_of`` is exact); a relative change of 1e-6 in a live weight is
    not."""
    rng = np.random.default_rng(2)
    p = ReLUNet([2, 3, 1]).random_params(rng)
    p[0][0][0] = np.abs(p[0][0][0])  # a linear neuron
    p[0][1][0] = abs(p[0][1][0])
    F = orthant_fiber(p)
    q = float_rescaled_copy(rng, p)
    assert F.contains(q) and F.contains(q, tol=1e-9)
    assert not F.contains(q, tol=0) and F.piece_of(q) is None
    assert F.contains(p, tol=0) and F.piece_of(p) is not None
    for j in range(3):
        (W, b), (C, g) = p
        C2 = C.copy()
        C2[0, j] *= 1 + 1e-6
        assert not F.contains([(W, b), (C2, g)])


def test_fiber_errors_and_bad_inputs():
    good = [(np.ones((2, 2)), np.zeros(2)), (np.ones((1, 2)), np.zeros(1))]
    with pytest.raises(ArchitectureError, match="one-hidden-layer"):
        orthant_fiber(good + [(np.ones((1, 1)), np.zeros(1))])
    with pytest.raises(DomainError, match="orthant only"):
        orthant_fiber(good, "whole")
    assert orthant_fiber(good, "orthant").dimension == orthant_fiber(good).dimension
    p = [(np.array([[1.0, -1.0]]), np.array([0.5])), (np.array([[2.0]]), np.array([0.0]))]
    F = orthant_fiber(p)
    P = F.pieces[0]
    bad_params = [
        ("abc", "list of \\(W, b\\) pairs"),
        ([([["1", "2"]], [0.5]), ([[2.0]], [0.0])], "real numbers"),
        ([(np.array([[1j, 2]]), [0.5]), ([[2.0]], [0.0])], "real numbers"),
        ([([[np.nan, 2.0]], [0.5]), ([[2.0]], [0.0])], "finite"),
        ([([[1.0, 2.0]], [0.5, 1.0]), ([[2.0]], [0.0])], "one entry per row"),
    ]
    for params, rule in bad_params:
        for call in (orthant_fiber, F.contains, F.piece_of, P.residual, P.local_dimension):
            with pytest.raises(ParameterError, match=rule):
                call(params)
    for tol in (-1.0, 1.0, float("nan"), "0", None, True):
        with pytest.raises(InputError, match="tol must be"):
            F.contains(p, tol=tol)
    with pytest.raises(TypeError):  # tol is keyword-only
        F.contains(p, 0.0)
    for bad in (True, "0", -1, 1, 0.0, [0]):
        with pytest.raises(InputError, match="piece"):
            F.sample(0, piece=bad)
    Q = orthant_fiber(
        [
            (np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0])),
            (np.array([[1.0, 1.0]]), np.array([0.0])),
        ]
    ).pieces[0]
    assert dict(Q.strata) == {1: 3} and Q.sample(0, stratum=1)
    for bad in (True, "1", [1], 1.0, 99):
        with pytest.raises(InputError, match="stratum"):
            Q.sample(0, stratum=bad)
    for kw, bad in (("exact", "yes"), ("permute", 1)):
        with pytest.raises(InputError, match=kw):
            F.sample(0, **{kw: bad})
    for bad in ("x", -1, 1.5):
        with pytest.raises(InputError, match="seed"):
            F.sample(bad)
        with pytest.raises(InputError, match="seed"):
            P.sample(bad)
    for bad in ("a", -1, True, 1.5):
        with pytest.raises(InputError, match="max_pieces"):
            F.describe(bad)
    for kw, bad in (("degenerate", "no"), ("progress", 1), ("max_types", 0)):
        with pytest.raises(InputError, match=kw):
            orthant_fiber(p, **{kw: bad})
