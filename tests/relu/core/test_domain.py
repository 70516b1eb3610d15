"""Input domains: every way of building one meets the same rules."""

import numpy as np
import pytest

import neuromanifold as nm
from neuromanifold.relu import Domain, as_domain


@pytest.mark.parametrize(
    "args, match",
    [
        (("sphere", 2, np.zeros((0, 2)), np.zeros(0)), "kind"),
        (("box", 2, np.zeros((4, 2)), np.zeros(4), np.ones(2), np.zeros(2)), "lower <= upper"),
        (("box", 2, np.zeros((4, 2)), np.zeros(4), None, None), "box lower bound"),
        (("whole", 2, np.zeros((3, 3)), np.zeros(3)), "shape"),
        (("whole", 0, np.zeros((0, 0)), np.zeros(0)), "dimension"),
    ],
)
def test_a_domain_built_directly_meets_the_same_rules(args, match):
    with pytest.raises(nm.DomainError, match=match):
        Domain(*args)


@pytest.mark.parametrize("bound", [1e300, 1e308, 1e151])
def test_a_box_wider_than_float64_holds_is_refused(bound):
    with pytest.raises(nm.DomainError, match="within"):
        as_domain((-bound, bound), 2)
    as_domain((-1e150, 1e150), 2)  # the limit itself is a box


def test_distance_and_equivalent_refuse_a_bad_domain_object():
    p = nm.ReLUNet([2, 3, 1]).random_params(seed=0)
    box = Domain.box([0, 0], [1, 1])
    with pytest.raises(nm.DomainError):
        nm.relu.distance(p, p, Domain("sphere", 2, box.A, box.c), top1=True)
    with pytest.raises(nm.DomainError):
        nm.relu.equivalent(p, p, Domain("box", 2, box.A, box.c, np.ones(2), np.zeros(2)))


@pytest.mark.parametrize("kind", ["whole", "orthant", "box"])
def test_round_trip(kind):
    d = {
        "whole": Domain.whole(3),
        "orthant": Domain.orthant(3),
        "box": Domain.box([0, 0, 0], [1, 2, 3]),
    }[kind]
    e = Domain.from_dict(d.to_dict())
    assert e.kind == d.kind and e.A.shape == d.A.shape and np.array_equal(e.c, d.c)
