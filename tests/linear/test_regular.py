"""Regular points of the neuromanifold (linear/_regular.py): crossings of fiber branches
are singular, generic points are regular, and every verdict carries its evidence."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from neuromanifold import InputError, LinearConvNet, LinearFCNet, NotInNeuromanifoldError
from neuromanifold.linear import RegularPoint, is_regular_point


def _float_rank(A, tol=1e-9):
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > tol * s[0]))


def test_crossing_3_2_stride_2_is_singular():
    """(1, 0, -4) and (1, -9) at stride 2: pi(v) = (1 - 4t^2)(1 - 9t^2); the factors trade
    layers. Both branches have full-rank Jacobians with different images (checked here
    independently with float ranks of the stacked Jacobians)."""
    net = LinearConvNet([3, 2], [2])
    p = [np.array([1.0, 0.0, -4.0]), np.array([1.0, -9.0])]
    res = is_regular_point(net, net.polynomial(p))
    assert isinstance(res, RegularPoint)
    assert res.regular is False and res.certified and res.exact
    assert res.num_branches == 2 and res.num_full_rank == 2 and res.num_tangent_spaces == 2
    assert "crossing" in res.reason and res.max_sine > 0.01
    a, b = res.witness
    np.testing.assert_allclose(
        net.end_to_end(a) / np.linalg.norm(net.end_to_end(a)),
        net.end_to_end(b) / np.linalg.norm(net.end_to_end(b)),
        atol=1e-12,
    )
    Ja, Jb = net.jacobian(a), net.jacobian(b)
    assert _float_rank(Ja) == _float_rank(Jb) == net.dimension == 4
    assert _float_rank(np.hstack([Ja, Jb])) > 4
    # small integers: the float end-to-end filter is exact, the verdict too
    assert is_regular_point(net, net.end_to_end(p)).exact
    # a rounded float product is not exactly factorable: same verdict, numerically
    q = [np.array([0.3, 0.0, -1.7]), np.array([0.7, -2.9])]
    num = is_regular_point(net, net.end_to_end(q))
    assert num.regular is False and not num.exact and not num.certified
    # the swapped point is the other branch: also a full-rank Jacobian there
    assert net.is_smooth([np.array([1.0, 0.0, -9.0]), np.array([1.0, -4.0])], exact=True)


@given(st.lists(st.integers(-5, 5), min_size=5, max_size=5))
def test_special_strided_points_are_crossings(c):
    """Every (a, 0, b), (c, d) with abcd != 0 at stride 2 is a crossing."""
    a, b, cc, d, _ = c
    assume(a * b * cc * d != 0 and a * d != b * cc)
    net = LinearConvNet([3, 2], [2])
    res = is_regular_point(net, net.polynomial([[float(a), 0.0, float(b)], [float(cc), float(d)]]))
    assert res.regular is False and res.certified


@given(st.lists(st.integers(-6, 6), min_size=5, max_size=5))
def test_generic_strided_points_are_regular(c):
    """A first filter with a nonzero middle entry is not a polynomial in t^2: the fiber is
    one branch, regular when its Jacobian has full rank; the exact and the numerical
    routes agree."""
    net = LinearConvNet([3, 2], [2])
    p = [np.array(c[:3], dtype=float), np.array(c[3:], dtype=float)]
    assume(c[1] != 0 and c[0] * c[2] * c[3] * c[4] != 0)
    smooth = net.is_smooth(p, exact=True)
    res = is_regular_point(net, net.polynomial(p))
    # exact when the branch's rescaling is rational; otherwise principal angles decide
    assert res.num_branches == 1 and res.certified == res.exact
    assert res.regular is (True if smooth else None)
    if smooth:
        assert is_regular_point(net, net.end_to_end(p)).regular is True


def test_random_points_of_several_architectures_are_regular(rng):
    for shapes, strides in [
        ([2, 2], [1]),
        ([3, 3, 3], [1, 1]),
        ([5, 2, 2], [2, 2]),
        ([(2, 2), (3, 2)], None),
        ([(2, 2), (2, 2)], None),
        ([(3, 2), (2, 2), (2, 2)], [(2, 2), (1, 1)]),
    ]:
        net = LinearConvNet(shapes, strides)
        p = net.random_params(rng)
        res = is_regular_point(net, net.polynomial(p))
        assert res.regular is True, (net, res.reason)
        assert res.num_tangent_spaces == 1 and res.witness is None


def test_interchangeable_layers_one_symmetry_class():
    """Two 2x2 filters at stride 1: the fiber has two branches (the layers swapped), one
    tangent space, one class modulo the swap: regular (not full-dimensional)."""
    net = LinearConvNet([(2, 2), (2, 2)])
    p = [np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[2.0, -1.0], [1.0, 5.0]])]
    res = is_regular_point(net, net.polynomial(p))
    assert net.dimension < net.end_to_end_size
    assert res.regular is True and res.num_branches == 2
    assert res.num_symmetry_classes == 1 and res.num_tangent_spaces == 1 and res.certified


def test_full_dimensional_interior_point():
    """[2, 3], stride 1: three real roots, three branches, no symmetry relates them, but M
    is full-dimensional, so v is an interior point."""
    net = LinearConvNet([2, 3])
    p = [np.array([1.0, -1.0]), np.array([1.0, -5.0, 6.0])]  # roots 1, 1/2, 1/3
    res = is_regular_point(net, net.polynomial(p))
    assert res.num_branches == 3 and res.num_symmetry_classes == 3
    assert res.regular is True and "interior" in res.reason


def test_rank_deficient_branch_is_undecided():
    """(1 - t)^2 with filters [2, 2]: the only branch has a rank-deficient Jacobian; first
    order data decide nothing, and the verdict says so."""
    net = LinearConvNet([2, 2])
    res = is_regular_point(net, [1, -2, 1])
    assert res.regular is None and res.num_full_rank == 0 and "rank-deficient" in res.reason


def test_reuses_a_given_fiber():
    net = LinearConvNet([3, 2], [2])
    p = [np.array([1.0, 0.0, -4.0]), np.array([1.0, -9.0])]
    fib = net.fiber(net.polynomial(p), [2.5])
    res = is_regular_point(net, net.polynomial(p), fiber=fib)
    assert res.regular is False and res.num_branches == fib.num_points


def test_bad_inputs():
    net = LinearConvNet([3, 2], [2])
    with pytest.raises(InputError, match="LinearConvNet"):
        is_regular_point(LinearFCNet([2, 2]), [1.0])
    with pytest.raises(InputError, match="tol"):
        is_regular_point(net, [1.0, 0, 0, 0, 1.0], tol=0)
    with pytest.raises(InputError, match="tol"):
        is_regular_point(net, [1.0, 0, 0, 0, 1.0], tol=-1.0)
    with pytest.raises(InputError, match="v = 0"):
        is_regular_point(net, [0.0] * 5)
    with pytest.raises(NotInNeuromanifoldError):
        is_regular_point(LinearConvNet([2, 2]), [1, 0, 1])  # 1 + t^2: no real roots


def test_result_repr_and_dict():
    net = LinearConvNet([2, 2])
    res = is_regular_point(net, [1.0, -3.0, 2.0])
    d = res.to_dict()
    assert d["regular"] is True and d["tol"] == 1e-9
    assert repr(res).startswith("RegularPoint(") and "\n" not in repr(res)
