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


@pytest.mark.parametrize(
    "kind, A, c, bounds",
    [
        ("whole", np.vstack([np.eye(3), -np.eye(3)]), 0.1 * np.ones(6), {}),  # a box as 'whole'
        ("whole", np.vstack([np.eye(3), -np.eye(3)]), -np.ones(6), {}),  # empty
        ("orthant", np.vstack([np.eye(3), -np.eye(3)]), np.ones(6), {}),
        ("box", np.vstack([np.eye(3), -np.eye(3)]), np.ones(6),
         {"lower": -5 * np.ones(3), "upper": 5 * np.ones(3)}),  # A, c say [-1, 1]
    ],
)  # fmt: skip
def test_a_domain_whose_inequalities_contradict_its_kind_is_refused(kind, A, c, bounds):
    """Analyses read a domain by its kind (distance, equivalent) or by A and c (neurons):
    a Domain built directly must describe one set, else the two would answer about
    different sets (an independent fuzz found a distance 'certified' on another box)."""
    with pytest.raises(nm.DomainError, match="must have A and c that describe that set"):
        Domain(kind, 3, A, c, **bounds)
    built = {"whole": Domain.whole(3), "orthant": Domain.orthant(3)}.get(kind)
    built = built or Domain.box(-5 * np.ones(3), 5 * np.ones(3))
    assert Domain(built.kind, 3, built.A, built.c, built.lower, built.upper).kind == kind


def test_data_outside_the_domain_is_refused():
    from neuromanifold import relu

    p = nm.ReLUNet([3, 4, 2]).random_params(seed=1)
    X = np.random.default_rng(0).uniform(-1, 1, (20, 3))
    assert relu.neurons(p, (-1.0, 1.0), data=X).on_data is not None
    for call in (relu.neurons, relu.reduce):
        with pytest.raises(nm.DomainError, match="row 0 .* is outside it"):
            call(p, (-1.0, 1.0), data=X + 10)
