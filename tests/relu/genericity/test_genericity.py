"""Genericity (docs/concepts_relu.md §3): supertransversality and maximal rank of masked
products."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import DomainError, ParameterError
from neuromanifold.relu import ReLUNet, genericity
from tests.support.relu import dyadic_net, permuted_rescaled


def kinds(report):
    return {(f.condition, f.kind) for f in report.failures}


def on_hyperplane(W, b, j, x):
    return sum(Fraction(float(w)) * xi for w, xi in zip(W[j], x)) + Fraction(float(b[j])) == 0


@pytest.mark.parametrize(
    "widths", [[2, 3, 1], [2, 4, 3, 1], [3, 4, 2, 1], [1, 3, 3, 1], [2, 3, 3, 2, 1]]
)
@pytest.mark.parametrize("domain", [None, "orthant", (-1.0, 1.0)])
def test_random_networks_are_generic(widths, domain):
    for seed in range(2):
        g = genericity(ReLUNet(widths).random_params(seed), domain)
        assert g.generic and g.supertransversal and g.maximal_rank, g.describe()
        assert g.failures == () and g.certified
        assert g.num_regions >= 1 and g.num_products >= 1


def test_parallel_first_layer_hyperplanes_are_flagged():
    W = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    g = genericity([(W, np.array([0.0, -1.0, 0.3])), (np.ones((1, 3)), np.zeros(1))])
    assert not g.generic and not g.supertransversal
    f = next(f for f in g.failures if f.condition == "S1")
    assert f.kind == "dependent normals" and f.certified
    assert set(f.elements) == {"neuron (1, 1)", "neuron (1, 2)"}
    assert (f.measured, f.expected) == (1, 2)


def test_coincident_first_layer_hyperplanes_are_flagged():
    W = np.array([[1.0, 1.0], [2.0, 2.0], [1.0, -1.0]])
    g = genericity([(W, np.array([1.0, 2.0, 0.3])), (np.array([[1.0, -0.5, 1.0]]), np.zeros(1))])
    assert ("S1", "dependent normals") in kinds(g)
    assert not g.generic


def test_three_lines_through_a_point():
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = np.array([-1.0, -1.0, -2.0])
    g = genericity([(W, b), (np.ones((1, 3)), np.zeros(1))])
    f = next(f for f in g.failures if f.kind == "common point")
    assert f.condition == "S1" and f.certified
    assert f.point == (Fraction(1), Fraction(1))
    assert all(on_hyperplane(W, b, j, f.point) for j in range(3))
    # moved off the point: generic again
    assert genericity([(W, b + np.array([0.0, 0.0, 0.1])), (np.ones((1, 3)), np.zeros(1))]).generic
    # outside a box domain the same triple point does not matter
    assert genericity([(W, b), (np.ones((1, 3)), np.zeros(1))], (-0.5, 0.5)).supertransversal


def test_hyperplane_through_a_vertex_of_the_orthant():
    W = np.array([[1.0, -2.0], [1.0, 1.0]])
    g = genericity([(W, np.array([0.0, -1.0])), (np.ones((1, 2)), np.zeros(1))], "orthant")
    f = next(f for f in g.failures if f.kind == "common point")
    assert "neuron (1, 1)" in f.elements and sum(e.startswith("facet") for e in f.elements) == 2
    assert f.point == (0, 0)
    assert genericity([(W, np.array([0.0, -1.0])), (np.ones((1, 2)), np.zeros(1))]).generic


def test_rank_deficient_masked_product():
    p = [
        (np.eye(2), np.array([0.5, 0.5])),
        (np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([0.1, -0.2])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    g = genericity(p)
    assert g.supertransversal and not g.maximal_rank and not g.generic
    fails = [f for f in g.failures if f.condition == "rank"]
    assert fails and all(f.measured < f.expected for f in fails)
    assert any(
        f.layers == (1, 2) and f.elements == ("D2 W2 D1 W1",) and f.pattern == ((1, 1), (1, 1))
        for f in fails
    )
    # the same with a generic second layer passes
    p[1] = (np.array([[1.0, 2.0], [2.0, -1.0]]), np.array([0.1, -0.2]))
    assert genericity(p).generic


def test_deep_piece_through_a_vertex_and_a_zero_row():
    # layer-2 neuron with zero bias: its pieces pass through the vertex of layer 1
    p = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -2.0], [1.0, 1.0]]), np.array([0.0, -1.0])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    g = genericity(p)
    s2 = [f for f in g.failures if f.condition == "S2"]
    assert any(
        f.kind == "common point" and f.point == (0, 0) and "neuron (2, 1)" in f.elements for f in s2
    )
    assert g.supertransversal is False
    p[1] = (p[1][0], np.array([0.5, -1.0]))
    assert genericity(p).generic
    z = [(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([0.5, 1.0])), (np.ones((1, 2)), np.zeros(1))]
    assert ("S0", "zero row") in kinds(genericity(z))


@settings(max_examples=15)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 4),
    scale=st.sampled_from([-4.0, -1.0, -0.5, 0.5, 1.0, 2.0]),
    domain=st.sampled_from([None, "orthant"]),
)
def test_making_two_first_layer_rows_parallel_is_always_flagged(seed, n, scale, domain):
    # powers of two: the multiple is exact in floats (3/8 * w usually is not, and then the
    # rows are, exactly, not parallel)
    p = ReLUNet([2, n, 2, 1]).random_params(seed)
    W, b = p[0]
    W[1] = scale * W[0]
    # keep both hyperplanes inside the domain so that S1 applies to them
    if domain == "orthant":
        W[0] = np.array([1.0, -1.0])
        W[1] = scale * W[0]
    g = genericity(p, domain)
    assert any(
        f.condition == "S1"
        and f.kind == "dependent normals"
        and {"neuron (1, 1)", "neuron (1, 2)"} <= set(f.elements)
        for f in g.failures
    )


def test_report_and_errors():
    g = genericity(ReLUNet([2, 3, 1]).random_params(0))
    assert "generic=True" in g.describe()
    d = g.to_dict()
    assert d["generic"] is True and d["failures"] == []
    with pytest.raises(ParameterError):
        genericity([(np.array([[np.inf, 0.0]]), np.zeros(1)), (np.ones((1, 1)), np.zeros(1))])
    with pytest.raises(DomainError):
        genericity(ReLUNet([2, 3, 1]).random_params(0), (np.zeros(3), np.ones(3)))


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    widths=st.sampled_from([[2, 3, 1], [2, 3, 2, 1], [1, 3, 2, 1], [2, 2, 2, 1]]),
    domain=st.sampled_from([None, "orthant", (-1.0, 1.0)]),
)
def test_verdicts_invariant_under_permutation_and_rescaling(seed, widths, domain):
    """Small dyadic weights: many exact coincidences. The verdicts do not depend on the
    order of neurons or on positive (exact) rescalings; S1 witnesses lie on their
    hyperplanes exactly."""
    rng = np.random.default_rng(seed)
    p = dyadic_net(rng, widths)
    g = genericity(p, domain)
    h = genericity(permuted_rescaled(p, rng, (-2, 2)), domain)
    assert (g.generic, g.supertransversal, g.maximal_rank) == (
        h.generic,
        h.supertransversal,
        h.maximal_rank,
    )
    W1, b1 = p[0]
    for f in g.failures:
        if f.condition == "S1" and f.kind == "common point":
            assert f.certified
            for e in f.elements:
                if e.startswith("neuron"):
                    j = int(e.split(",")[1].strip(" )")) - 1
                    assert on_hyperplane(W1, b1, j, f.point)


def test_network_without_hidden_layer_has_no_hyperplanes():
    # a single affine layer is affine: its rows are outputs, not bent hyperplanes, so S1
    # (parallel to a facet, through the orthant's corner) does not apply; only ranks do
    g = genericity([(np.eye(2), np.zeros(2))], "orthant")
    assert g.generic and g.failures == ()
    g = genericity([(np.ones((2, 2)), np.zeros(2))])
    assert g.supertransversal and not g.maximal_rank
    assert [f.elements for f in g.failures] == [("W1",)]


def test_rank_deficiency_on_a_single_region_is_reported_there():
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
    p = [
        (W1, np.array([0.5, 0.5, -0.25])),
        (np.array([[1.0, 1.0, 5.0], [2.0, 2.0, 1.0]]), np.array([0.1, -0.2])),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    g = genericity(p)
    assert g.supertransversal and not g.maximal_rank
    assert [(f.elements, f.pattern, f.measured, f.expected) for f in g.failures] == [
        (("D2 W2 D1 W1",), ((1, 1, 0), (1, 1)), 1, 2)
    ]


def test_masked_product_rank_at_a_tolerance_reports_its_gap():
    """Second-layer rows parallel up to rounding: W2 D1 W1 has rank 2 exactly (tol=0) but
    rank 1 at the default tol, and the failure says how clear the gap is."""
    rng = np.random.default_rng(3)
    W1, b1 = rng.standard_normal((2, 2)), rng.standard_normal(2)
    W2 = rng.standard_normal((2, 2))
    W2[1] = W2[0] * 0.3
    p = [(W1, b1), (W2, np.array([0.1, 0.03])), (np.ones((1, 2)), np.zeros(1))]
    g0 = genericity(p, tol=0)
    assert g0.maximal_rank and g0.tol == 0.0 and g0.smallest_counted is None
    g = genericity(p)
    assert not g.maximal_rank and g.tol == 1e-9 and g.largest_dropped < 1e-12
    f = next(f for f in g.failures if f.condition == "rank")
    assert f.measured < f.expected and not f.certified and f.largest_dropped < 1e-12
    assert "tol=1e-09" in f.message
    # 2**-1000 magnitudes: the same verdict
    q = [(W1 * 2.0**-1000, b1 * 2.0**-1000), (p[1][0] * 2.0**1000, p[1][1]), p[2]]
    assert genericity(q).maximal_rank == g.maximal_rank
    assert genericity(q, tol=0).generic == g0.generic


@settings(max_examples=20, deadline=None)
@given(d=st.integers(1, 3), orthant=st.booleans())
def test_axis_pairs_are_the_minimal_dependent_facet_families(d, orthant):
    """The shortcut for a box's or orthant's facets against every subset's exact rank."""
    import itertools
    from fractions import Fraction

    from neuromanifold.exact import rational_rank
    from neuromanifold.relu import Domain
    from neuromanifold.relu._genericity import genericity as _g

    dom = Domain.orthant(d) if orthant else Domain.box([-1.0] * d, [2.0] * d)
    elems = [(lab, a, c, 0) for lab, a, c in _g._facets(dom)]
    idx = list(range(len(elems)))
    got = set(_g._axis_pairs(elems, idx))
    minimal = set()
    for k in range(2, len(idx) + 1):
        for S in itertools.combinations(idx, k):
            if any(B <= frozenset(S) for B in minimal):
                continue
            if rational_rank([[Fraction(x) for x in elems[i][1]] for i in S], d) < k:
                minimal.add(frozenset(S))
    assert got == minimal


def test_weights_near_the_float_maximum_are_refused_not_overflowed():
    import neuromanifold as nm

    p = nm.ReLUNet([2, 3, 2, 1]).random_params(seed=0)
    huge = [(W * 1e307, b * 1e307) for W, b in p]
    with pytest.raises(nm.ParameterError, match="beyond the float range"):
        nm.relu.genericity(huge)
