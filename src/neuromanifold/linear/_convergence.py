"""Convergence study of gradient flows from random data and initializations (docs/concepts_linear.md
§5).

Paper A's claim [docs/concepts_linear.md §5]: for 1D linear convolutional networks with all strides
> 1, generic data and generic initialization, the gradient flow converges to a critical point in the
smooth locus of the neuromanifold and avoids the zero function (a saddle). This module
does not assume it: it runs many flows and records, per run, whether the flow converged
(gradient norm), whether the limit is a smooth point (rank of the Jacobian, numerically,
with the smallest relevant singular value as evidence), and how far the limit is from
the zero function; then summarizes per architecture.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import ComputationLimitError, InputError
from .._progress import progress_bar
from .._results import Result
from .._validation import (
    as_seed_rng,
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    renamed_keywords,
)
from ..flows import SquareLoss, gradient_flow
from ..flows._library import DEFAULT_MAX_STEPS, SOLVERS
from ._batched_flows import integrate_flows
from ._conv import LinearConvNet
from ._fc import LinearFCNet

#: continuation rounds of one run at most: the horizon grows by the factor that reaches
#: ``max_time`` in this many rounds when doubling would take more (e.g. ``t_final=1e-300``)
MAX_ROUNDS = 40
#: steps of the batched explicit pair per segment; a run whose step size cannot finish its
#: segment within them (a stiff flow) is handed to the per-run solver
BATCH_MAX_STEPS = 2_000
#: fewest runs integrated together: the batched loop's cost per step pays off across many
#: runs, so the last few unconverged runs continue one by one
MIN_BATCH = 8

__all__ = [
    "convergence_study",
    "ConvergenceStudy",
    "ConvergenceRun",
    "ConvergenceSummary",
    "random_regression_data",
]


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ConvergenceRun(Result):
    """One gradient flow of the study.

    Attributes:
        architecture: ``repr`` of the network.
        run: index of the run within its architecture.
        converged: the final gradient norm is ``<= gradient_tol``.
        gradient_norm: ``||grad_theta l||`` at the end of the flow.
        gradient_tol: the threshold used (``tol * max(1, initial gradient norm)``).
        flow_time: total flow time integrated (extended adaptively up to ``max_time``).
        initial_loss, final_loss: loss at the start and the end.
        loss_monotone: the sampled loss never increased.
        max_invariant_drift: relative drift of the invariants (a solver check).
        smooth: the Jacobian at the final parameters has the generic rank, numerically:
            its ``dimension``-th singular value exceeds ``smooth_tol`` times the largest.
        rank, dimension: numerical rank found and the generic rank.
        relative_smallest_singular_value: ``sigma_dim / sigma_1`` at the final parameters.
        exact_rank: the exact rank over the rationals at the final (float) parameters, or
            None when not requested; it is the rank *at* that point, certified, not at the
            limit.
        distance_from_zero: ``||v||`` at the end.
        relative_distance_from_zero: ``||v|| / ||v*||`` with ``v*`` the unconstrained
            least-squares solution of the data (the scale of the problem).
        min_relative_distance_from_zero: the same, minimized over the sampled trajectory.
        at_zero: ``relative_distance_from_zero <= zero_tol``.
        limit_reached: a flow segment used up its step budget (``max_steps``) before its
            horizon; the run stops there, unconverged unless the gradient is already small.
        solver: what integrated the run: ``"LSODA"`` (or the ``solver`` asked for) alone,
            ``"DOP853 batched"`` (with the other runs), or ``"DOP853 batched + LSODA"``
            (a stiff run handed over to the per-run solver).
    """

    architecture: str
    run: int
    converged: bool
    gradient_norm: float
    gradient_tol: float
    flow_time: float
    initial_loss: float
    final_loss: float
    loss_monotone: bool
    max_invariant_drift: float
    smooth: bool
    rank: int
    dimension: int
    relative_smallest_singular_value: float
    exact_rank: int | None
    distance_from_zero: float
    relative_distance_from_zero: float
    min_relative_distance_from_zero: float
    at_zero: bool
    limit_reached: bool = False
    solver: str = ""


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ConvergenceSummary(Result):
    """Per-architecture summary of a :func:`convergence_study`.

    Attributes:
        architecture: ``repr`` of the network.
        num_runs: number of flows.
        fraction_converged: runs whose gradient norm fell below the tolerance.
        fraction_smooth: converged runs whose limit is a smooth point (over converged runs).
        fraction_at_zero: runs ending at the zero function.
        fraction_smooth_nonzero: runs that converged to a smooth, nonzero critical point.
        claim_applies: the paper's convergence claim is about this architecture (1D
            convolution, all strides s_1..s_{L-1} > 1).
        consistent_with_claim: every run converged to a smooth, nonzero point (only
            meaningful when ``claim_applies``).
    """

    architecture: str
    num_runs: int
    fraction_converged: float
    fraction_smooth: float
    fraction_at_zero: float
    fraction_smooth_nonzero: float
    claim_applies: bool
    consistent_with_claim: bool


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class ConvergenceStudy(Result):
    """Result of :func:`convergence_study`: every run and a summary per architecture
    (``batched``: the runs of convolutional networks were integrated together)."""

    runs: list
    summaries: list
    seed: Any
    tol: float
    smooth_tol: float
    zero_tol: float
    solver: str
    batched: bool = False

    def table(self) -> list[list]:
        """Summary rows ``[architecture, runs, converged, smooth, at zero, claim]``."""
        return [
            [
                s.architecture,
                s.num_runs,
                f"{s.fraction_converged:.0%}",
                f"{s.fraction_smooth:.0%}",
                f"{s.fraction_at_zero:.0%}",
                ("consistent" if s.consistent_with_claim else "NOT consistent")
                if s.claim_applies
                else "n/a",
            ]
            for s in self.summaries
        ]


def _claim_applies(net: Any) -> bool:
    return isinstance(net, LinearConvNet) and net.ndim == 1 and all(s[0] > 1 for s in net.strides)


#: most samples per random data set (each is a full input signal and target)
MAX_NUM_SAMPLES = 1_000_000
#: most gradient flows per network in one convergence study
MAX_NUM_RUNS = 100_000


@renamed_keywords(rng="seed", method="solver")
def random_regression_data(net: Any, seed: Any = 0, *, num_samples: int | None = None):
    """Random inputs and targets for ``net`` with enough samples for a positive definite
    square loss: Gaussian signals (conv: spatial size the end-to-end filter plus
    two strides per axis) or vectors (fully connected), and Gaussian targets.

    Args:
        net: a :class:`LinearConvNet` or :class:`LinearFCNet`.
        seed: int, None or a numpy Generator (the library-wide name).
        num_samples: number of samples (default: just enough for a positive definite
            loss).

    Returns:
        ``(X, Y)`` to pass to :meth:`SquareLoss.from_data`.
    """
    rng = as_seed_rng(seed)
    if num_samples is not None:
        num_samples = check_positive_int(num_samples, "num_samples", maximum=MAX_NUM_SAMPLES)
    if isinstance(net, LinearConvNet):
        shape = tuple(k + 2 * s for k, s in zip(net.end_to_end_shape, net.end_to_end_stride))
        outputs = int(
            np.prod(
                [
                    (n - k) // s + 1
                    for n, k, s in zip(shape, net.end_to_end_shape, net.end_to_end_stride)
                ]
            )
        )
        n = num_samples or -(-(net.end_to_end_size + 2) // outputs)
        X = rng.standard_normal((n,) + shape)
        Y = rng.standard_normal(
            (n,)
            + tuple(
                (a - k) // s + 1
                for a, k, s in zip(shape, net.end_to_end_shape, net.end_to_end_stride)
            )
        )
        return X, Y
    if isinstance(net, LinearFCNet):
        n = num_samples or net.widths[0] + 2
        return (rng.standard_normal((n, net.widths[0])), rng.standard_normal((n, net.widths[-1])))
    raise InputError(f"no random data for {net!r}: expected a LinearConvNet or LinearFCNet")


def convergence_study(
    net: Any,
    num_runs: int,
    *,
    seed: Any = 0,
    t_final: float = 20.0,
    max_time: float = 640.0,
    tol: float = 1e-6,
    smooth_tol: float = 1e-6,
    zero_tol: float = 1e-6,
    num_samples: int | None = None,
    solver: str = "LSODA",
    rtol: float = 1e-9,
    atol: float = 1e-11,
    exact: bool = False,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float | None = None,
    batched: bool = True,
    progress: bool = False,
) -> ConvergenceStudy:
    """Run ``num_runs`` gradient flows per architecture from random data and initializations.

    Each run draws random data (:func:`random_regression_data`), builds the
    :class:`SquareLoss`, draws Gaussian initial parameters and integrates the parameter
    flow for ``t_final``; while the gradient norm is above the tolerance the flow is
    continued from where it stopped with the time horizon doubled, up to ``max_time``
    (in at most 40 continuations: from a tiny ``t_final`` the horizon grows faster).

    With ``batched`` (the default) the runs of a :class:`LinearConvNet` are integrated
    together, segment by segment, by :func:`neuromanifold.linear.gradient_flows` (DOP853,
    step control per run, one loss per run), with the same data, initializations and
    continuation rules; a run whose segment the explicit pair cannot finish within
    :data:`BATCH_MAX_STEPS` steps (a stiff flow) continues alone with ``solver``, and
    so do the last runs when fewer than :data:`MIN_BATCH` are left. Runs
    of other networks, and every run with ``batched=False`` (the reference), are
    integrated one by one with ``solver``. Both paths give the same verdicts up to the
    study's tolerances (the trajectories differ by the solvers' errors).

    Args:
        net: one network or a list of networks (:class:`LinearConvNet`,
            :class:`LinearFCNet`), summarized separately.
        num_runs: flows per network.
        seed: seed of all random draws (data and initializations).
        t_final: the first time horizon.
        max_time: the largest total flow time.
        tol: converged when ``||grad_theta l|| <= tol * max(1, ||grad_theta l(0)||)``.
        smooth_tol: relative singular-value threshold for the rank at the limit.
        zero_tol: the limit is "at zero" when ``||v|| <= zero_tol * ||v*||``.
        num_samples: samples per data set (default: just enough for a positive definite
            loss).
        solver, rtol, atol: solver settings of the per-run path (the default LSODA
            switches to a stiff solver when the flow becomes stiff); the batched path uses
            ``solver`` when it is ``"DOP853"`` or ``"RK45"``, else DOP853, with the same
            tolerances.
        exact: also compute the exact rank of the Jacobian at the final parameters.
        max_steps: step budget of each flow segment; a segment that uses it up ends its
            run there (``limit_reached``), so an absurd ``max_time`` cannot hang.
        time_limit: an optional wall-clock budget in seconds for the whole study;
            reaching it raises a :class:`ComputationLimitError`.
        batched: integrate the runs of a convolutional network together (see above).
        progress: show a progress bar over the runs on stderr.

    Returns:
        A :class:`ConvergenceStudy`.

    >>> from neuromanifold import LinearConvNet
    >>> study = convergence_study(LinearConvNet([2, 2], strides=[2]), 2, seed=0)
    >>> [r.converged for r in study.runs], study.summaries[0].claim_applies
    ([True, True], True)
    """
    # Whole: check every argument, then run each network's flows, batched or one by one
    if isinstance(net, Sequence) and not isinstance(net, (str, bytes)):
        nets = list(net)
    else:
        nets = [net]
    if not nets:
        raise InputError("net must be a network or a non-empty list of networks")
    num_runs = check_positive_int(num_runs, "num_runs", maximum=MAX_NUM_RUNS)
    exact = check_bool(exact, "exact")
    progress = check_bool(progress, "progress")
    batched = check_bool(batched, "batched")
    for name, val in (
        ("t_final", t_final),
        ("max_time", max_time),
        ("tol", tol),
        ("smooth_tol", smooth_tol),
        ("zero_tol", zero_tol),
        ("rtol", rtol),
        ("atol", atol),
    ):
        check_positive_float(val, name)
    max_steps = check_positive_int(max_steps, "max_steps")
    if time_limit is not None:
        time_limit = check_positive_float(time_limit, "time_limit")
    deadline = None if time_limit is None else time.monotonic() + time_limit
    if num_samples is not None:
        num_samples = check_positive_int(num_samples, "num_samples", maximum=MAX_NUM_SAMPLES)
    check_choice(solver, "solver", SOLVERS)
    if max_time < t_final:
        raise InputError(f"max_time ({max_time}) must be >= t_final ({t_final})")
    rng = as_seed_rng(seed)

    bar = None
    if progress:
        bar = progress_bar(total=len(nets) * num_runs, desc="convergence study", unit="flow")
    how = _Integration(
        solver=solver,
        rtol=rtol,
        atol=atol,
        max_time=max_time,
        max_steps=max_steps,
        deadline=deadline,
        time_limit=time_limit,
    )
    runs, summaries = [], []
    try:
        for net in nets:
            if batched and isinstance(net, LinearConvNet):
                # the same draws, in the same order, as the per-run path
                states = [
                    _RunState(net, i, rng, t_final, max_time, tol, num_samples)
                    for i in range(num_runs)
                ]
                _batched_runs(states, how, bar)
            else:
                states = []
                for i in range(num_runs):
                    st = _RunState(net, i, rng, t_final, max_time, tol, num_samples)
                    _continue_run(st, how)
                    states.append(st)
                    if bar is not None:
                        bar.update(1)
            net_runs = [_finish(st, smooth_tol, zero_tol, exact) for st in states]
            runs.extend(net_runs)
            summaries.append(_summarize(net, net_runs))
    finally:
        if bar is not None:
            bar.close()
    return ConvergenceStudy(
        runs=runs,
        summaries=summaries,
        seed=seed if not isinstance(seed, np.random.Generator) else None,
        tol=tol,
        smooth_tol=smooth_tol,
        zero_tol=zero_tol,
        solver=solver,
        batched=batched,
    )


class _RunState:
    """One run of the study between flow segments: its data, where its flow is, the
    evidence gathered so far, and the next segment (``segment`` of the nominal
    ``horizon``; the horizon grows by ``growth`` after each segment)."""

    def __init__(
        self,
        net: Any,
        index: int,
        rng: Any,
        t_final: float,
        max_time: float,
        tol: float,
        num_samples: int | None,
    ):
        self.net, self.index = net, index
        X, Y = random_regression_data(net, rng, num_samples=num_samples)
        self.loss = loss = SquareLoss.from_data(net, X, Y)
        self.params = params = net.random_params(rng)
        self.initial_loss = loss.value(net.end_to_end(params))
        self.gtol = tol * max(1.0, self.grad_norm())
        self.scale = max(float(np.linalg.norm(loss.target)), 1e-300)
        self.horizon = self.segment = float(t_final)
        self.growth = max(2.0, (max_time / t_final) ** (1.0 / MAX_ROUNDS))
        self.elapsed, self.rounds = 0.0, 0
        self.monotone, self.drift, self.min_dist = True, 0.0, np.inf
        self.limit_reached, self.done = False, False
        self.grad, self.final_loss = None, self.initial_loss
        self.solver = ""

    def grad_norm(self) -> float:
        """``||grad_theta l||`` at the current parameters."""
        net, params = self.net, self.params
        return float(
            np.linalg.norm(
                np.concatenate(
                    [a.ravel() for a in net.vjp(params, self.loss.gradient(net.end_to_end(params)))]
                )
            )
        )

    def record(
        self,
        params,
        monotone: bool,
        drift: float,
        end_to_end: np.ndarray,
        grad: float,
        final_loss: float,
        max_time: float,
    ) -> None:
        """A segment reached its end: keep its evidence and plan the next one (or stop
        when converged or at ``max_time``)."""
        self.elapsed += self.segment
        self.params = params
        self.monotone &= bool(monotone)
        self.drift = max(self.drift, float(drift))
        norms = np.linalg.norm(end_to_end.reshape(len(end_to_end), -1), axis=1)
        self.min_dist = min(self.min_dist, float(np.nanmin(norms)) / self.scale)
        self.grad, self.final_loss = float(grad), float(final_loss)
        self.rounds += 1
        if self.grad <= self.gtol or self.elapsed >= max_time * (1 - 1e-12):
            self.done = True
        else:
            self.horizon = self.segment = min(self.growth * self.horizon, max_time - self.elapsed)

    def limit(self) -> None:
        """A segment used up its step budget: the run ends where the solver got to."""
        self.limit_reached, self.done = True, True
        self.final_loss = self.loss.value(self.net.end_to_end(self.params))
        self.grad = self.grad_norm()


def _time_limit_error(time_limit, what, flow_time):
    return ComputationLimitError(
        f"the convergence study reached its time limit time_limit={time_limit:g} s "
        f"({what}, flow time {flow_time:.6g}); raise time_limit or ask for fewer runs"
    )


def _remaining(deadline, time_limit, what, flow_time):
    """Seconds left before ``deadline`` (None without one); raises once it is reached."""
    if deadline is None:
        return None
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _time_limit_error(time_limit, what, flow_time)
    return remaining


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Integration:
    """How every run of a study is integrated: ``solve_ivp``'s ``solver`` and tolerances,
    the flow time ``max_time`` a run may take, a segment's step budget ``max_steps``, and
    the study's ``deadline`` (from ``time_limit`` seconds, both ``None`` without one)."""

    solver: str
    rtol: float
    atol: float
    max_time: float
    max_steps: int
    deadline: float | None
    time_limit: float | None


def _continue_run(st: _RunState, how: _Integration) -> None:
    """Integrate one run alone (``solve_ivp``'s ``solver``), segment after segment, until
    it converges, reaches ``max_time`` or uses up a segment's step budget."""
    solver, rtol, atol, max_time = how.solver, how.rtol, how.atol, how.max_time
    max_steps, deadline, time_limit = how.max_steps, how.deadline, how.time_limit
    net, loss = st.net, st.loss
    what = f"run {st.index} of {net!r}"
    st.solver = f"{st.solver} + {solver}" if st.solver else solver
    while not st.done:
        remaining = _remaining(deadline, time_limit, what, st.elapsed)
        try:
            flow = gradient_flow(
                net,
                st.params,
                loss,
                st.segment,
                num_times=11,
                solver=solver,
                rtol=rtol,
                atol=atol,
                max_steps=max_steps,
                time_limit=remaining,
            )
        except ComputationLimitError as err:
            if err.kind == "time":
                raise _time_limit_error(time_limit, what, st.elapsed + err.t) from err
            st.elapsed += err.t
            st.params = net.unflatten(err.y)
            st.rounds += 1
            if err.kind == "stalled" and st.rounds <= MAX_ROUNDS + 5:
                # a horizon below the solver's resolution (t_final=1e-300): grow it
                st.horizon = st.segment = min(st.growth * st.horizon, max_time - st.elapsed)
                continue
            st.limit()
            break
        st.record(
            flow.final_params,
            flow.loss_monotone,
            flow.max_invariant_drift,
            flow.end_to_end,
            flow.gradient_norm,
            flow.loss[-1],
            max_time,
        )


def _batched_runs(states: list, how: _Integration, bar=None) -> None:
    """Integrate the runs of one :class:`LinearConvNet` together, segment by segment
    (:func:`neuromanifold.linear.gradient_flows`'s explicit pairs, one loss per run); a
    run whose segment the explicit pair cannot finish within :data:`BATCH_MAX_STEPS`
    steps (a stiff flow) is handed, from where it got, to ``solver`` alone, and so are
    the runs left when fewer than :data:`MIN_BATCH` remain."""
    solver, rtol, atol, max_time = how.solver, how.rtol, how.atol, how.max_time
    max_steps, deadline, time_limit = how.max_steps, how.deadline, how.time_limit
    net = states[0].net
    pair = solver if solver in ("DOP853", "RK45") else "DOP853"
    budget = min(max_steps, BATCH_MAX_STEPS)
    handed = []
    active = list(states)
    while len(active) >= MIN_BATCH:
        # runs advance together: every active run has the same horizon (grouped anyway)
        groups: dict = {}
        for st in active:
            groups.setdefault(st.segment, []).append(st)
        active = []
        for segment, group in groups.items():
            what = f"runs {group[0].index}..{group[-1].index} of {net!r}"
            remaining = _remaining(deadline, time_limit, what, group[0].elapsed)
            try:
                res = integrate_flows(
                    net,
                    np.stack([net.flatten(st.params) for st in group]),
                    np.stack([st.loss.A for st in group]),
                    np.stack([st.loss.target for st in group]),
                    np.array([st.loss.offset for st in group]),
                    segment,
                    num_times=11,
                    solver=pair,
                    rtol=rtol,
                    atol=atol,
                    max_steps=budget,
                    time_limit=remaining,
                    give_up=max_steps > budget,
                )
            except ComputationLimitError as err:
                raise _time_limit_error(time_limit, what, group[0].elapsed + err.t) from err
            for j, st in enumerate(group):
                st.solver = f"{pair} batched"
                if res.success[j]:
                    st.record(
                        res.final_params[j],
                        res.loss_monotone[j],
                        res.max_invariant_drift[j],
                        res.end_to_end[j],
                        res.gradient_norm[j],
                        res.loss[j, -1],
                        max_time,
                    )
                    if st.done:
                        if bar is not None:
                            bar.update(1)
                    else:
                        active.append(st)
                    continue
                # the explicit pair stopped early: keep the evidence of the part it did
                st.params = res.final_params[j]
                st.monotone &= bool(res.loss_monotone[j])
                st.drift = max(st.drift, float(res.max_invariant_drift[j]))
                norms = np.linalg.norm(res.end_to_end[j].reshape(11, -1), axis=1)
                st.min_dist = min(st.min_dist, float(np.nanmin(norms)) / st.scale)
                reached = float(res.final_time[j])
                if max_steps <= budget:
                    # the budget of the segment itself: the run ends, as on the per-run path
                    st.elapsed += reached
                    st.rounds += 1
                    st.limit()
                    if bar is not None:
                        bar.update(1)
                else:
                    st.elapsed += reached
                    st.segment -= reached
                    handed.append(st)
    for st in handed + active:
        _continue_run(st, how)
        if bar is not None:
            bar.update(1)


def _finish(st: _RunState, smooth_tol, zero_tol, exact) -> ConvergenceRun:
    """The record of a finished run: convergence, smoothness and distance from zero."""
    net, params = st.net, st.params
    grad, gtol, scale = st.grad, st.gtol, st.scale
    v = net.end_to_end(params)
    r = net.rank(params, tol=smooth_tol)
    sv = np.linalg.svd(net.jacobian(params), compute_uv=False)
    dim = r.dimension
    rel_sv = float(sv[dim - 1] / sv[0]) if 0 < dim <= sv.size and sv[0] > 0 else 0.0
    dist = float(np.linalg.norm(v))
    return ConvergenceRun(
        architecture=repr(net),
        run=st.index,
        converged=bool(grad <= gtol),
        gradient_norm=float(grad),
        gradient_tol=gtol,
        flow_time=st.elapsed,
        initial_loss=float(st.initial_loss),
        final_loss=float(st.final_loss),
        loss_monotone=bool(st.monotone),
        max_invariant_drift=float(st.drift),
        smooth=bool(r.is_smooth),
        rank=int(r.rank),
        dimension=int(dim),
        relative_smallest_singular_value=rel_sv,
        exact_rank=int(net.rank(params, exact=True).rank) if exact else None,
        distance_from_zero=dist,
        relative_distance_from_zero=dist / scale,
        min_relative_distance_from_zero=float(min(st.min_dist, dist / scale)),
        at_zero=bool(dist / scale <= zero_tol),
        limit_reached=st.limit_reached,
        solver=st.solver,
    )


def _summarize(net, runs: list[ConvergenceRun]) -> ConvergenceSummary:
    n = len(runs)
    conv = [r for r in runs if r.converged]
    good = [r for r in conv if r.smooth and not r.at_zero]
    return ConvergenceSummary(
        architecture=repr(net),
        num_runs=n,
        fraction_converged=len(conv) / n,
        fraction_smooth=(sum(r.smooth for r in conv) / len(conv)) if conv else 0.0,
        fraction_at_zero=sum(r.at_zero for r in runs) / n,
        fraction_smooth_nonzero=len(good) / n,
        claim_applies=_claim_applies(net),
        consistent_with_claim=len(good) == n,
    )
