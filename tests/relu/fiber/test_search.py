"""The fiber search (relu._symmetry_search): exact Jacobian, confirmation, classification of
fiber points as named / unnamed / n1 = 1, and its benchmark in quick mode."""

import numpy as np
import pytest

from neuromanifold import InputError
from neuromanifold.relu._fiber.search import _residual_and_jacobian, search_symmetries
from neuromanifold.relu.symmetries import Permutation, RampFlip, Scaling, apply_sequence
from tests.support.canonical import dead_to_linear_pair, linear_block_flip_pair
from tests.support.common import load_benchmark


def test_jacobian_matches_finite_differences():
    rng = np.random.default_rng(0)
    w = (3, 2, 3, 2)
    theta = rng.standard_normal(3 * 2 + 2 + 2 * 3 + 3 + 3 * 2 + 2)
    X, Y, wt = rng.standard_normal((7, 3)), rng.standard_normal((7, 2)), rng.uniform(0.5, 1, 7)
    _, J = _residual_and_jacobian(theta, w, X, Y, wt)
    E = np.eye(len(theta)) * 1e-6
    Jn = np.array(
        [
            (
                _residual_and_jacobian(theta + e, w, X, Y, wt)[0]
                - _residual_and_jacobian(theta - e, w, X, Y, wt)[0]
            )
            / 2e-6
            for e in E
        ]
    ).T
    assert np.max(np.abs(J - Jn)) < 1e-7


def perturbed(params, rng, size=0.05):
    return [
        (W * np.exp(size * rng.standard_normal(W.shape)), b + size * rng.standard_normal(b.shape))
        for W, b in params
    ]


def test_named_points_are_found_and_classified():
    rng = np.random.default_rng(1)
    p = [
        (rng.standard_normal((2, 3)), rng.standard_normal(2)),
        (np.array([[1.0, -0.8], [-0.5, 1.2], [0.7, 0.4]]), np.array([-0.3, 0.6, -1.0])),
        (rng.standard_normal((1, 3)), rng.standard_normal(1)),
    ]
    q = apply_sequence([Permutation(1, (1, 0)), Scaling(2, (2.0, 0.5, 3.0))], p)
    S = search_symmetries(p, num_starts=0, initial=[perturbed(q, rng)], seed=0)
    assert S.confirmed == 1 and not S.beyond_named
    assert S.clusters[0].kind == "named" and S.clusters[0].max_difference <= 1e-8


def test_second_layer_flips_are_classified():
    """Turning a crossing neuron around through the always-active block is named
    (second_layer_flip), also when a dead neuron joins the block for it (block_refactor)."""
    p, q = linear_block_flip_pair()
    S = search_symmetries(p, num_starts=0, initial=[perturbed(q, np.random.default_rng(2), 0.02)])
    assert S.confirmed == 1 and not S.beyond_named
    assert S.clusters[0].kind == "named" and "second_layer_flip" in S.clusters[0].signature
    p, q = dead_to_linear_pair()
    S = search_symmetries(p, num_starts=0, initial=[perturbed(q, np.random.default_rng(2), 0.02)])
    assert S.confirmed == 1 and not S.beyond_named
    assert S.clusters[0].kind == "named" and "block_refactor" in S.clusters[0].signature


def test_one_neuron_ramp_flip_is_recognized():
    p = [
        (np.array([[2.0, -1.0]]), np.array([0.5])),
        (np.array([[-1.5], [-1.0]]), np.array([3.0, 1.0])),
        (np.array([[2.0, -1.0]]), np.array([0.7])),
    ]
    assert RampFlip(0).applies(p).applies
    q = RampFlip(0).apply(p)
    S = search_symmetries(p, num_starts=0, initial=[perturbed(q, np.random.default_rng(3), 0.02)])
    assert S.confirmed == 1
    assert S.clusters[0].kind == "n1 = 1" and "turned around" in S.clusters[0].signature


def test_a_wrong_fit_is_not_confirmed():
    p = [
        (np.eye(2), np.zeros(2)),
        (np.array([[1.0, -2.0]]), np.array([0.5])),
        (np.ones((1, 1)), np.zeros(1)),
    ]
    far = [
        (np.eye(2), np.ones(2)),
        (np.array([[-1.0, -2.0]]), np.array([-0.5])),
        (np.ones((1, 1)), np.ones(1)),
    ]  # dead second layer: a constant, stuck there
    S = search_symmetries(p, num_starts=0, initial=[far])
    assert S.candidates == 0 and S.confirmed == 0 and S.clusters == []


def test_bad_input():
    with pytest.raises(InputError, match="params or widths"):
        search_symmetries()
    with pytest.raises(InputError, match="bottleneck"):
        search_symmetries(widths=(2, 3, 1, 1))


def test_bench_symmetry_search_quick(capsys):
    rows = load_benchmark("bench_symmetry_search").main(["--quick"])
    assert rows and rows[0]["confirmed"] >= 0
    assert "fiber search" in capsys.readouterr().out
