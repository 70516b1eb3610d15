"""A box that fixes an input (lower == upper, as VNN-COMP properties fix x4 = -0.45): it
is a domain, and every analysis that takes it answers as on the network whose fixed input
is folded into the first layer's bias, on the box of the other inputs."""

from fractions import Fraction

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold import relu

LO, HI = np.array([-1.0, -0.45, -2.0]), np.array([1.0, -0.45, 0.5])
BOX = relu.Domain.box(LO, HI)  # input 1 fixed at -0.45
FREE = [0, 2]
SMALL = relu.Domain.box(LO[FREE], HI[FREE])


def _folded(params):
    """The network of the free inputs: input 1 folded into the bias, exactly."""
    (W, b), rest = params[0], params[1:]
    v = Fraction(-0.45)
    b1 = np.array([Fraction(bi) + Fraction(W[i, 1]) * v for i, bi in enumerate(b)], dtype=object)
    return [(W[:, FREE], b1)] + list(rest)


def test_a_degenerate_box_is_a_domain_and_a_reversed_one_is_refused():
    assert BOX.dim == 3 and BOX.fixed.tolist() == [1]
    assert BOX.contains([[0.0, -0.45, 0.0]]).all() and not BOX.contains([[0, -0.4, 0]]).any()
    assert relu.as_domain(([0, 1, 2], [0, 1, 3]), 3).fixed.tolist() == [0, 1]
    with pytest.raises(
        nm.DomainError, match=r"lower <= upper.*coordinate 1 has lower=0.5 > upper=0.25"
    ):
        relu.Domain.box([0, 0.5], [1, 0.25])
    with pytest.raises(nm.DomainError, match="fixes every coordinate"):
        relu.regions(relu.ReLUNet([2, 2, 1]).random_params(seed=0), domain=([1, 2], [1, 2]))


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_regions_are_those_of_the_folded_network(seed):
    p = relu.ReLUNet([3, 4, 3, 2]).random_params(seed=seed)
    R, S = relu.regions(p, domain=BOX), relu.regions(_folded(p), domain=SMALL)
    assert R.num_regions == S.num_regions and R.domain == BOX and R.widths == (3, 4, 3, 2)
    key = lambda r: tuple(np.concatenate(r.pattern).tolist())  # noqa: E731
    assert sorted(map(key, R)) == sorted(map(key, S))
    for r in R:
        assert r.point[1] == -0.45 and BOX.contains(r.point)
        assert np.all(r.A @ r.point <= r.c)
        np.testing.assert_allclose(
            r.evaluate(r.point)[0], relu.forward(p, r.point[None])[0], atol=1e-12
        )


@pytest.mark.parametrize("seed", [1, 3])
def test_neurons_are_those_of_the_folded_network(seed):
    p = relu.ReLUNet([3, 6, 4, 1]).random_params(seed=seed)
    # make neuron 0 dead on the slice only: it fires where x1 > -0.2
    W, b = p[0]
    W[0] = [0.0, 1.0, 0.0]
    b[0] = 0.2
    got, want = relu.neurons(p, domain=BOX), relu.neurons(_folded(p), domain=SMALL)
    assert got.status == want.status and got.domain == BOX
    assert got.status[0][0] == "dead"
    assert relu.neurons(p, domain=([-1, -0.1, -2], [1, 0.1, 0.5])).status[0][0] != "dead"


def test_equivalent_and_distance_agree_with_the_folded_networks():
    p = relu.ReLUNet([3, 4, 3, 2]).random_params(seed=4)
    # q moves weight onto the fixed input and back into the bias: the same function on the
    # box, a different one off it
    q = [(W.copy(), b.copy()) for W, b in p]
    q[0][0][:, 1] += 2.0
    q[0][1][:] += 2.0 * 0.45
    r = relu.ReLUNet([3, 4, 3, 2]).random_params(seed=6)
    for method in ("regions", "auto"):
        res = relu.equivalent(p, q, BOX, method=method)  # q is rounded: tol 1e-9
        assert res.equivalent and res.certified and res.domain == BOX
    assert not relu.equivalent(p, q, ([-1, -1, -2], [1, 1, 0.5])).equivalent
    res = relu.equivalent(p, r, BOX, method="regions")
    want = relu.equivalent(_folded(p), _folded(r), SMALL, method="regions")
    assert not res.equivalent and not want.equivalent
    assert res.witness[1] == -0.45 and np.array_equal(res.witness[FREE], want.witness)
    d, e = relu.distance(p, r, BOX), relu.distance(_folded(p), _folded(r), SMALL)
    assert d.certified and e.certified
    assert abs(d.upper - e.upper) <= 1e-9 * e.scale and abs(d.lower - e.lower) <= 1e-9 * e.scale
    assert d.point[1] == -0.45 and not np.isnan([d.lower, d.upper]).any()
    assert relu.distance(p, q, BOX).upper <= 1e-9


def test_an_analysis_that_needs_a_full_dimensional_box_says_so():
    p = relu.ReLUNet([3, 3, 1]).random_params(seed=0)
    with pytest.raises(
        nm.DomainError, match=r"full-dimensional domain; the box fixes inputs \[1\]"
    ):
        relu.bent_hyperplanes(p, BOX)
