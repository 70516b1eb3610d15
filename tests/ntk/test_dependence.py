"""The NTK dependence test (neuromanifold.ntk.ntk_dependence, docs/concepts_linear.md §3).

Every counterexample the computation reports is re-verified here independently: same
end-to-end function (net.end_to_end), same invariants (net.invariants), NTK difference
(net.ntk) above the tolerance.
"""

import numpy as np
import pytest

from neuromanifold import InputError, LinearConvNet, LinearFCNet, ParameterError
from neuromanifold.ntk import NTKDependence, ntk_dependence


def reverify(net, params, res, *, fc=False):
    a, b = res.witnesses
    v = net.end_to_end(params)
    for w in (a, b):
        assert np.linalg.norm(net.end_to_end(w) - v) <= 1e-9 * np.linalg.norm(v)
        if fc:
            for D, D0 in zip(net.invariants(w), net.invariants(params)):
                assert np.linalg.norm(D - D0) <= 1e-9 * max(1.0, np.linalg.norm(D0))
        else:
            assert np.allclose(net.invariants(w), net.invariants(params), rtol=0, atol=1e-9)
    Ka, Kb = net.ntk(a), net.ntk(b)
    diff = np.linalg.norm(Ka - Kb) / np.linalg.norm(Ka)
    assert diff > res.tol
    assert diff == pytest.approx(res.max_relative_difference, rel=1e-6)


def test_spec_example_1d_k22_is_discovered():
    # docs/concepts_linear.md §3: pi(v) = 1 - 3t + 2t^2, roots 1 and 1/2, delta = 1
    net = LinearConvNet([2, 2])
    fib = net.fiber([1.0, -3.0, 2.0], [1.0])
    res = ntk_dependence(net, fib.points[0])
    assert isinstance(res, NTKDependence)
    assert res.num_points == 2 and res.certified and not res.independent
    reverify(net, fib.points[0], res)


def test_2d_two_layers_same_shape_swap_changes_ntk(rng):
    net = LinearConvNet([(2, 2), (2, 2)])
    params = net.random_params(rng)
    assert abs(net.invariants(params)[0]) > 1e-3
    res = ntk_dependence(net, params)
    assert res.certified and res.num_points == 2 and not res.independent
    reverify(net, params, res)
    a, b = res.witnesses
    # the two points are the swapped filters, rescaled
    assert (
        min(
            np.abs(a[0] / np.linalg.norm(a[0]) - s * b[1] / np.linalg.norm(b[1])).max()
            for s in (1, -1)
        )
        < 1e-8
    )


def test_2d_balanced_swap_keeps_ntk(rng):
    # with delta = 0 the swap is a symmetry of the NTK as well
    net = LinearConvNet([(2, 2), (2, 2)])
    params = net.random_params(rng)
    params[1] *= np.linalg.norm(params[0]) / np.linalg.norm(params[1])
    res = ntk_dependence(net, params)
    assert res.num_points == 2 and res.independent


def test_independent_cases(rng):
    for net in (LinearConvNet([3, 2, 3], [2, 2]), LinearConvNet([(2, 3), (3, 2)])):
        params = net.random_params(rng)
        res = ntk_dependence(net, params)
        assert res.independent and res.certified and res.num_points == 1
        assert res.witnesses is None and res.max_relative_difference == 0.0


def test_1d_stride_one_dependent(rng):
    net = LinearConvNet([3, 3])
    params = [np.poly([-1.2, 0.4])[::-1], 1.7 * np.poly([0.9, 2.1])[::-1]]
    res = ntk_dependence(net, params)
    assert res.num_points == 6 and not res.independent
    reverify(net, params, res)


def test_fc_balanced_independent():
    net = LinearFCNet([2, 2, 2])
    params = net.balanced_params(seed=4)
    res = ntk_dependence(net, params, num_starts=6, seed=0)
    assert res.independent and not res.certified and res.num_points >= 2


def test_fc_generic_dependent_with_witness():
    net = LinearFCNet([2, 2, 2])
    params = net.random_params(seed=4)
    res = ntk_dependence(net, params, num_starts=6, seed=0)
    assert not res.independent and not res.certified
    reverify(net, params, res, fc=True)


def test_generic_model_protocol():
    class Toy:
        """f(a, b) = a * b, invariant a^2 - b^2, fiber {(a, b), (-a, -b)}."""

        def end_to_end(self, p):
            return np.array([p[0] * p[1]])

        def invariants(self, p):
            return np.array([p[0] ** 2 - p[1] ** 2])

        def ntk(self, p):
            return np.array([[p[0] ** 2 + p[1] ** 2]])

        def fiber(self, v, inv):
            class F:
                certified = True
                points = [[2.0, 3.0], [-2.0, -3.0]]

            return F()

    res = ntk_dependence(Toy(), [2.0, 3.0])
    assert res.independent and res.num_points == 2 and res.certified


def test_bad_inputs():
    net = LinearConvNet([2, 2])
    with pytest.raises(InputError, match="tol"):
        ntk_dependence(net, net.random_params(0), tol=-1.0)
    with pytest.raises(InputError, match="end_to_end"):
        ntk_dependence(object(), [1.0])
    with pytest.raises(ParameterError, match="finite"):
        ntk_dependence(net, [[np.nan, 1.0], [1.0, 1.0]])
    with pytest.raises(InputError, match="unknown option"):
        ntk_dependence(net, net.random_params(0), bogus=1)


def test_witnesses_are_classified_within_the_hypotheses_or_not():
    """Paper A's standing hypotheses at the instance: the [2, 2] roots example is a regular
    point (within); the (a, 0, b) stride-2 example is a crossing (outside); a layer of
    filter size 1 breaks the size assumption; fully connected models get no verdict."""
    from neuromanifold import LinearFCNet, ShallowReLUCNN

    net = LinearConvNet([2, 2])
    res = ntk_dependence(net, [np.array([-0.5, 1.0]), np.array([-1.0, 1.0])])
    assert not res.independent and res.within_hypotheses is True
    assert [h[1] for h in res.hypotheses] == [True, True] and res.regular_point.regular

    strided = LinearConvNet([3, 2], [2])
    res = ntk_dependence(strided, [np.array([1.0, 0.0, -4.0]), np.array([1.0, -9.0])])
    assert not res.independent and res.within_hypotheses is False
    assert res.regular_point.regular is False and "crossing" in res.hypotheses[1][2]

    small = LinearConvNet([2, 1, 2], [1, 2])
    res = ntk_dependence(small, small.random_params(0))
    assert res.hypotheses[0][1] is False and res.within_hypotheses is False

    fc = LinearFCNet([2, 2, 2])
    res = ntk_dependence(fc, fc.random_params(0), num_starts=2, seed=0)
    assert res.hypotheses == () and res.within_hypotheses is None

    cnn = ShallowReLUCNN.with_random_inputs([(2, 2), (2, 2)], None, seed=7)
    res = ntk_dependence(cnn, cnn.random_params(0))
    assert res.within_hypotheses is True and not res.independent

    res = ntk_dependence(net, net.random_params(0), check_hypotheses=False)
    assert res.hypotheses == () and res.regular_point is None


def test_a_class_instead_of_a_model_is_refused():
    params = LinearConvNet([2, 2]).random_params(seed=0)
    with pytest.raises(InputError, match="instance"):
        ntk_dependence(LinearConvNet, params)
