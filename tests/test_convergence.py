"""Convergence study (docs/concepts_linear.md §5): per-run records are computed and consistent."""

import math

import numpy as np
import pytest

from neuromanifold import ComputationLimitError, InputError, LinearConvNet, LinearFCNet, SquareLoss
from neuromanifold.linear import convergence_study, random_regression_data

NETS = [LinearConvNet([2, 2], strides=[2]), LinearConvNet([2, 2]), LinearFCNet([2, 2, 2])]


@pytest.fixture(scope="module")
def study():
    return convergence_study(NETS, 3, seed=3)


def test_records_are_sane(study):
    assert len(study.runs) == 9 and len(study.summaries) == 3
    for r in study.runs:
        assert r.converged == (r.gradient_norm <= r.gradient_tol)
        assert r.final_loss <= r.initial_loss + 1e-12 and r.loss_monotone
        assert r.max_invariant_drift < 1e-6
        assert 0 < r.flow_time <= 640
        assert r.smooth == (r.rank == r.dimension)
        assert r.at_zero == (r.relative_distance_from_zero <= study.zero_tol)
        assert r.min_relative_distance_from_zero <= r.relative_distance_from_zero + 1e-12
        assert math.isfinite(r.distance_from_zero) and r.distance_from_zero >= 0
        assert r.exact_rank is None
    d = study.to_dict()
    assert set(d["runs"][0]) >= {"converged", "smooth", "distance_from_zero", "final_loss"}


def test_summary_fractions_match_runs(study):
    for s in study.summaries:
        runs = [r for r in study.runs if r.architecture == s.architecture]
        conv = [r for r in runs if r.converged]
        assert s.num_runs == len(runs) == 3
        assert s.fraction_converged == pytest.approx(len(conv) / 3)
        assert s.fraction_at_zero == pytest.approx(sum(r.at_zero for r in runs) / 3)
        good = sum(r.converged and r.smooth and not r.at_zero for r in runs)
        assert s.fraction_smooth_nonzero == pytest.approx(good / 3)
        assert s.consistent_with_claim == (good == 3)
    # the claim is about 1D convolutions with all strides > 1 only (read from the architecture)
    assert [s.claim_applies for s in study.summaries] == [True, False, False]
    assert len(study.table()) == 3


def test_smoothness_evidence_is_the_singular_value_ratio(study):
    for r in study.runs:
        assert r.smooth == (r.relative_smallest_singular_value > study.smooth_tol)


def test_flows_are_continued_until_converged(study):
    for r in study.runs:
        assert r.converged or r.flow_time >= 640


def test_short_flows_are_not_converged():
    """The converged flag is earned: a flow stopped early is reported unconverged."""
    short = convergence_study(LinearConvNet([2, 2], strides=[2]), 2, seed=5, t_final=1e-3,
                              max_time=1e-3)
    assert not any(r.converged for r in short.runs)
    assert all(r.flow_time == pytest.approx(1e-3) for r in short.runs)
    summary = short.summaries[0]
    assert summary.fraction_converged == 0 and not summary.consistent_with_claim


def test_reproducible_and_exact_rank():
    a = convergence_study(LinearConvNet([2, 2], strides=[2]), 2, seed=11, exact=True)
    b = convergence_study(LinearConvNet([2, 2], strides=[2]), 2, seed=11, exact=True)
    assert a.to_dict() == b.to_dict()
    for r in a.runs:
        assert r.exact_rank is not None and r.exact_rank >= r.rank


def test_random_regression_data_gives_positive_definite_loss(rng):
    for net in NETS + [LinearConvNet([(2, 2), (2, 1)], strides=[(2, 1)])]:
        X, Y = random_regression_data(net, rng)
        loss = SquareLoss.from_data(net, X, Y)
        assert np.linalg.eigvalsh(loss.A).min() > 1e-8


def test_bad_inputs():
    net = LinearConvNet([2, 2], strides=[2])
    with pytest.raises(InputError, match="num_runs"):
        convergence_study(net, 0)
    with pytest.raises(InputError, match="t_final"):
        convergence_study(net, 1, t_final=-1.0)
    with pytest.raises(InputError, match="max_time"):
        convergence_study(net, 1, t_final=10.0, max_time=5.0)
    with pytest.raises(InputError, match="non-empty list"):
        convergence_study([], 1)
    with pytest.raises(InputError, match="num_samples"):
        convergence_study(net, 1, num_samples=-1)
    with pytest.raises(InputError, match="method must be one of"):
        convergence_study(net, 1, method="Euler")
    with pytest.raises(InputError, match="rtol"):
        convergence_study(net, 1, rtol="a")
    with pytest.raises(InputError, match="num_samples"):
        random_regression_data(net, 0, num_samples=0)


def test_absurd_horizons_finish_fast():
    """t_final = 1e-300 used to double ~1000 times (and stall LSODA); max_time = 1e300
    used to run for ever. Both finish, with the runs converged."""
    net = LinearConvNet([2, 2], strides=[2])
    tiny = convergence_study(net, 1, seed=0, t_final=1e-300)
    huge = convergence_study(net, 1, seed=0, max_time=1e300)
    for study in (tiny, huge):
        r = study.runs[0]
        assert r.converged and not r.limit_reached and r.gradient_norm <= r.gradient_tol
    assert tiny.runs[0].final_loss == pytest.approx(huge.runs[0].final_loss, rel=1e-6)


def test_step_budget_ends_a_run_and_time_limit_raises():
    net = LinearConvNet([2, 2], strides=[2])
    study = convergence_study(net, 1, seed=0, max_steps=3)
    r = study.runs[0]
    assert r.limit_reached and not r.converged and 0 < r.flow_time < 20
    assert r.final_loss < r.initial_loss and math.isfinite(r.gradient_norm)
    with pytest.raises(ComputationLimitError, match="time limit"):
        convergence_study(net, 3, seed=0, time_limit=1e-9)
    with pytest.raises(InputError, match="max_steps"):
        convergence_study(net, 1, max_steps=0)


def test_sizes_are_capped_and_classes_refused():
    net = LinearConvNet([2, 2], strides=[2])
    with pytest.raises(InputError, match="at most"):
        convergence_study(net, 10**12)
    with pytest.raises(InputError, match="at most"):
        convergence_study(net, 1, num_samples=10**12)
    with pytest.raises(InputError, match="at most"):
        random_regression_data(net, 0, num_samples=10**12)
    X, Y = random_regression_data(net, 0)
    with pytest.raises(InputError, match="LinearConvNet or LinearFCNet"):
        SquareLoss.from_data(LinearConvNet, X, Y)
    with pytest.raises(InputError):
        convergence_study([net, "net"], 1)
