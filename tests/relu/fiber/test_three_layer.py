"""The fiber of a generic three-layer bottleneck parameter: every sample is equivalent by the
exact engine, and the dimension is P minus the exact functional dimension."""

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from neuromanifold import InputError, relu
from neuromanifold.relu import fiber
from tests.support.symmetry import (
    bottleneck,
    exactly_equivalent,
    ground_truth_equivalent,
    same_orbit,
)

ARCHS = [(1, 1, 1, 1), (2, 1, 2, 1), (2, 2, 2, 1), (2, 2, 3, 1), (3, 2, 2, 2), (3, 3, 2, 1)]


def _kinds(rng, n1, n2):
    opts = (
        (["mixed"] * 3 if n1 > 1 else ["ramp"] * 3)
        + ["dead", "linear"]
        + [("hiding", i) for i in range(n1)]
    )
    return [opts[k] for k in rng.integers(0, len(opts), n2)]


@settings(max_examples=15)
@given(st.integers(0, 2**31), st.sampled_from(ARCHS))
def test_dimension_and_samples(seed, widths):
    rng = np.random.default_rng(seed)
    P = bottleneck(rng, widths, kinds=_kinds(rng, widths[1], widths[2]), dyadic=True)
    F = fiber(P)
    if not F.generic:
        return
    # the fiber need not have one dimension: a family reached through a second-layer flip
    # can be larger than the kernel at P (2-1-2-1, seed 7562: 5 against 4, its points
    # equivalent by the exact engine). Its dimension is the largest local one, at P or at
    # a point of a family.
    local = []
    for point in [P] + [
        fam.sample_one(np.random.default_rng(seed), dyadic=True)
        for fam in sorted(F.families, key=lambda f: -f.dimension)[:3]
    ]:
        fd = relu.functional_dimension(point, tol=0)
        local.append(fd.num_params - fd.rank)
    assert F.dimension == max(local) >= local[0]
    for Q in F.sample(2, seed=seed, dyadic=True):
        assert ground_truth_equivalent(P, Q)


def test_float_samples(rng):
    P = bottleneck(rng, (3, 2, 4, 2), kinds=["mixed", "dead", "linear", "linear"])
    F = fiber(P)
    assert F.generic
    for Q in F.sample(2, seed=3):
        assert ground_truth_equivalent(P, Q) and not same_orbit(P, Q)
    P = bottleneck(rng, (2, 2, 2, 1), kinds=[("hiding", 0), "dead"])
    for Q in fiber(P).sample(3, seed=4):
        assert ground_truth_equivalent(P, Q)


def test_identifiable_fiber_is_the_orbit(rng):
    P = bottleneck(rng, (3, 2, 3, 1), kinds=["mixed"] * 3)
    F = fiber(P)
    assert F.identifiable and len(F.families) == 1
    assert F.dimension == 2 + 3 and F.num_pieces == math.factorial(2) * math.factorial(3)
    assert relu.functional_dimension(P).at_bound


def test_discrete_families(rng):
    # one live row hiding neuron 0 (n1 = 3): 2^(n1-1) flip families, translations on each
    P = bottleneck(rng, (3, 3, 2, 1), kinds=[("hiding", 0), "dead"], dyadic=True)
    F = fiber(P)
    assert len(F.families) == 4
    assert {tuple(f.flipped for f in fam.discrete) for fam in F.families} == {
        (),
        ((1,),),
        ((2,),),
        ((1, 2),),
    }
    assert all(set(fam.translations) == {0} for fam in F.families)
    assert F.num_pieces == 4 * math.factorial(3) * math.factorial(2) // math.factorial(1)
    for fam in F.families:
        assert ground_truth_equivalent(P, fam.base)  # ratios a_k / a_i need not be dyadic
    # n1 = 1 with ramps only: the identity and the ramp-flip family
    P = bottleneck(rng, (2, 1, 2, 1), kinds=["ramp", "ramp"])
    F = fiber(P)
    assert [fam.discrete[0].name for fam in F.families if fam.discrete] == ["ramp_flip"]
    assert ground_truth_equivalent(P, F.families[1].base)
    assert (
        F.dimension == relu.functional_dimension(P).num_params - relu.functional_dimension(P).rank
    )


def test_second_layer_flip_families(rng):
    # two always-active neurons >= n1 = 2: both crossing neurons can turn around, alone or
    # together; and the block can shrink to one neuron when its row space allows
    P = bottleneck(rng, (3, 2, 4, 1), kinds=["mixed", "linear", "linear", "mixed"])
    F = fiber(P)
    assert F.generic
    assert {fam.discrete[0].neurons for fam in F.families if fam.discrete} == {(0,), (3,), (0, 3)}
    fd = relu.functional_dimension(P)
    assert F.dimension == fd.num_params - fd.rank
    assert all(fam.dimension == F.dimension for fam in F.families)
    for fam in F.families[1:]:
        assert ground_truth_equivalent(P, fam.base) and not same_orbit(P, fam.base)
    Q = F.sample(1, seed=5)[0]
    assert ground_truth_equivalent(P, Q)
    assert "second_layer_flip(0, 3)" in F.describe()
    # identifiability lists them as flips
    assert {f.neurons for f in relu.identifiability(P).flips} == {(0,), (3,)}


def test_block_changes_size_through_zero_rows(rng):
    # one linear and two dead neurons (n1 = 3, n3 = 1): the block's linear part has rank 1,
    # so 1, 2 or 3 always-active neurons can carry it
    P = bottleneck(rng, (3, 3, 4, 1), kinds=["mixed", "linear", "dead", "dead"])
    F = fiber(P)
    assert sorted(len(fam.linear) for fam in F.families if not fam.discrete) == [1, 2, 3]
    assert F.num_pieces == sum(
        6 * math.factorial(4) // (math.factorial(len(f.dead)) * math.factorial(len(f.linear)))
        for f in F.families
    )
    for fam in F.families:
        assert fam.dimension == F.dimension
        assert ground_truth_equivalent(P, fam.base)
    # a rank-2 linear part (n3 = 2) needs at least two always-active rows
    P = bottleneck(rng, (3, 2, 4, 2), kinds=["mixed", "linear", "dead", "linear"])
    assert min(len(fam.linear) for fam in fiber(P).families) == 2


def test_all_dead_is_constant(rng):
    P = bottleneck(rng, (2, 2, 2, 1), kinds=["dead", "dead"], dyadic=True)
    F = fiber(P)
    fd = relu.functional_dimension(P)
    assert F.families[0].all_dead and F.dimension == fd.num_params - fd.rank
    assert F.num_pieces == 1
    for Q in F.sample(2, seed=0, dyadic=True):
        assert exactly_equivalent(P, Q)


def _subs(layers, values):
    return [
        (
            np.array(W.subs(values).evalf(), dtype=float),
            np.array(b.subs(values).evalf(), dtype=float).ravel(),
        )
        for W, b in layers
    ]


def test_symbolic_description(rng):
    P = bottleneck(rng, (2, 2, 3, 1), kinds=[("hiding", 1), "dead", "dead"], dyadic=True)
    fam = fiber(P).families[0]
    layers, cons = fam.symbolic()
    names = {str(x) for W, b in layers for M in (W, b) for x in M.free_symbols}
    assert {"s_0", "s_1", "t_1", "u_0", "r_1_0", "rho_2", "c_0_1"} <= names
    lo = fam.translations[1]
    assert any(isinstance(c, sympy.GreaterThan) and str(c.lhs) == "t_1" for c in cons)
    # identity values reproduce the base point
    (W1, b1), (W2, b2), (W3, b3) = P
    ident = {sympy.Symbol("t_1"): 0}
    ident.update({sympy.Symbol(f"s_{k}", positive=True): 1 for k in range(2)})
    ident.update({sympy.Symbol("u_0", positive=True): 1})
    for j in (1, 2):
        ident.update({sympy.Symbol(f"r_{j}_{k}"): W2[j, k] for k in range(2)})
        ident.update({sympy.Symbol(f"rho_{j}"): b2[j], sympy.Symbol(f"c_0_{j}"): W3[0, j]})
    Q = _subs(layers, ident)
    assert all(np.allclose(A, B) and np.allclose(a, b) for (A, a), (B, b) in zip(P, Q))
    # inside the constraints: equivalent; t below its lower end: not
    inside = dict(ident)
    inside[sympy.Symbol("t_1")] = lo + 4
    inside[sympy.Symbol("rho_1")] = -64.0  # dead rows stay dead for this translation
    inside[sympy.Symbol("rho_2")] = -64.0
    assert all(bool(c.subs(inside)) for c in cons)
    assert exactly_equivalent(P, _subs(layers, inside))
    outside = dict(inside)
    outside[sympy.Symbol("t_1")] = lo - 1
    assert not all(bool(c.subs(outside)) for c in cons)
    assert not exactly_equivalent(P, _subs(layers, outside))
    text = fiber(P).describe()
    assert "t_1 >=" in text and "fiber of dimension" in text


def test_linear_block_symbolic(rng):
    P = bottleneck(rng, (2, 2, 3, 2), kinds=["linear", "linear", "mixed"], dyadic=True)
    fam = fiber(P).families[0]
    layers, cons = fam.symbolic()
    eqs = [c for c in cons if isinstance(c, sympy.Equality)]
    assert len(eqs) == 2 * 2  # C A = L, n3 x n1 entries
    F = fiber(P)
    fd = relu.functional_dimension(P)
    assert F.dimension == fd.num_params - fd.rank


def test_errors(rng):
    wide = [
        (rng.standard_normal((3, 2)), rng.standard_normal(3)),
        (rng.standard_normal((2, 3)), rng.standard_normal(2)),
        (np.ones((1, 2)), np.zeros(1)),
    ]
    assert fiber(wide).widths == (2, 3, 2, 1)  # not a bottleneck: the fiber of any depth
    many = bottleneck(rng, (2, 1, 15, 1), kinds=["linear"] + ["ramp"] * 14)
    with pytest.raises(InputError, match="2\\^14 families"):
        fiber(many)
    F = fiber(bottleneck(rng, (2, 2, 2, 1)))
    with pytest.raises(InputError, match="positive integer"):
        F.sample(0)
    assert "BottleneckFiber(widths=(2, 2, 2, 1), num_params=15, families=" in repr(F)
    assert F.to_dict()["dimension"] == F.dimension


def test_describe_is_short_for_trained_sizes_and_honest_when_not_generic():
    import dataclasses

    import neuromanifold as nm
    from neuromanifold.relu import fiber as relu_fiber

    F = relu_fiber(nm.ReLUNet([20, 10, 30, 1]).random_params(seed=3))
    text = F.describe(max_families=0)
    assert text.count("\n") == 1 and "1 more family" in text
    assert len(F.describe().splitlines()) <= 12  # matrices past 64 entries: their shape
    assert "<(10, 20) entries" in F.describe()
    odd = dataclasses.replace(F, generic=False, identifiable=None).describe()
    assert odd.startswith("fiber of dimension at least") and "undecided" in odd
