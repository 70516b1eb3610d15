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
    short = convergence_study(
        LinearConvNet([2, 2], strides=[2]), 2, seed=5, t_final=1e-3, max_time=1e-3
    )
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
    with pytest.raises(InputError, match="solver must be one of"):
        convergence_study(net, 1, solver="Euler")
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


# ------------------------------------------------------- batched path against per-run path
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from neuromanifold.linear import _convergence  # noqa: E402

SMALL = [
    ([2, 2], [2]),
    ([2, 2], [1]),
    ([3, 2], [2]),
    ([2, 2, 2], [2, 2]),
    ([(2, 2), (2, 1)], [(2, 1)]),
]


def _agree(a, b, study):
    """Two records of one run (batched, per run) agree within the study's tolerances."""
    assert a.converged == b.converged and a.at_zero == b.at_zero
    assert a.limit_reached == b.limit_reached
    border = min(a.relative_smallest_singular_value, b.relative_smallest_singular_value)
    if not 0.1 * study.smooth_tol < border < 10 * study.smooth_tol:
        assert a.smooth == b.smooth and a.rank == b.rank
    assert a.final_loss == pytest.approx(b.final_loss, rel=1e-6, abs=1e-9)
    assert a.distance_from_zero == pytest.approx(b.distance_from_zero, rel=1e-5, abs=1e-8)
    # the closest approach is a minimum over sample times: the same ones unless a run was
    # handed over mid-segment (its samples are then those of both solvers)
    if "+" in a.solver:
        assert a.min_relative_distance_from_zero <= a.relative_distance_from_zero + 1e-12
    else:
        assert a.min_relative_distance_from_zero == pytest.approx(
            b.min_relative_distance_from_zero, rel=1e-5, abs=1e-8
        )
    assert a.initial_loss == b.initial_loss and a.gradient_tol == b.gradient_tol
    # the same continuation rounds (a gradient within the solvers' error of the threshold
    # at the end of a segment could end one path a round later: measure zero)
    assert a.flow_time == pytest.approx(b.flow_time, rel=1e-9)
    assert a.max_invariant_drift < 1e-6 and a.loss_monotone


@settings(max_examples=5, deadline=None)
@given(arch=st.sampled_from(SMALL), seed=st.integers(0, 10**6))
def test_batched_study_agrees_with_per_run_study(arch, seed):
    net = LinearConvNet(*arch)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_convergence, "MIN_BATCH", 2)  # batch even a small study
        fast = convergence_study(net, 4, seed=seed, max_time=160.0)
    ref = convergence_study(net, 4, seed=seed, max_time=160.0, batched=False)
    assert fast.batched and not ref.batched
    assert all("batched" in r.solver for r in fast.runs)
    assert all(r.solver == "LSODA" for r in ref.runs)
    for a, b in zip(fast.runs, ref.runs):
        _agree(a, b, ref)
    assert [s.fraction_converged for s in fast.summaries] == [
        s.fraction_converged for s in ref.summaries
    ]


def test_stiff_runs_are_handed_to_the_per_run_solver(monkeypatch):
    """With a tiny batch budget every run gives up on the explicit pair mid-segment and
    finishes with LSODA; the records still agree with the per-run path."""
    monkeypatch.setattr(_convergence, "MIN_BATCH", 2)
    monkeypatch.setattr(_convergence, "BATCH_MAX_STEPS", 60)
    net = LinearConvNet([3, 2], strides=[2])
    fast = convergence_study(net, 3, seed=4)
    ref = convergence_study(net, 3, seed=4, batched=False)
    assert all(r.solver == "DOP853 batched + LSODA" for r in fast.runs)
    for a, b in zip(fast.runs, ref.runs):
        _agree(a, b, ref)


def test_batched_step_budget_and_time_limit(monkeypatch):
    monkeypatch.setattr(_convergence, "MIN_BATCH", 1)
    net = LinearConvNet([2, 2], strides=[2])
    study = convergence_study(net, 2, seed=0, max_steps=3)
    for r in study.runs:
        assert r.solver == "DOP853 batched"
        assert r.limit_reached and not r.converged and 0 < r.flow_time < 20
        assert r.final_loss < r.initial_loss and math.isfinite(r.gradient_norm)
    with pytest.raises(ComputationLimitError, match="time limit.*runs 0..2"):
        convergence_study(net, 3, seed=0, time_limit=1e-9)
    tiny = convergence_study(net, 2, seed=0, t_final=1e-300)
    assert all(r.converged and not r.limit_reached for r in tiny.runs)


def test_fully_connected_runs_stay_on_the_per_run_path():
    study = convergence_study(
        [LinearFCNet([2, 2, 2]), LinearConvNet([2, 2], [2])], 8, seed=1, max_time=40.0
    )
    assert {r.solver for r in study.runs[:8]} == {"LSODA"}
    assert all(r.solver.startswith("DOP853 batched") for r in study.runs[8:])
    with pytest.raises(InputError, match="batched"):
        convergence_study(LinearConvNet([2, 2], [2]), 1, batched="yes")
